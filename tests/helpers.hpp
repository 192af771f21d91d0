#pragma once
// Shared test helpers: every bundled model, loaded once.
#include <string>
#include <vector>

#include "mlaplan/core/model.hpp"
#include "mlaplan/io/registry.hpp"
#include "mlaplan/io/hf_config.hpp"

namespace mlaplan::test {

inline const std::vector<ModelSpec>& all_models() {
  static const std::vector<ModelSpec> models = [] {
    std::vector<ModelSpec> v;
    for (const auto& e : bundled_models()) v.push_back(load_model_file(e.path, e.display, {}, shown_path(e.path)));
    return v;
  }();
  return models;
}

inline ModelSpec model(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_model(name, sets);
}

}  // namespace mlaplan::test
