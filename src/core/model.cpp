#include "mlaplan/core/model.hpp"

#include <algorithm>

namespace mlaplan {

std::string_view to_string(AttentionKind k) {
  switch (k) {
    case AttentionKind::mla: return "mla";
    case AttentionKind::mha: return "mha";
    case AttentionKind::gqa: return "gqa";
    case AttentionKind::mqa: return "mqa";
  }
  return "?";
}

bool ModelSpec::has_sliding_layers() const {
  return std::any_of(layers.begin(), layers.end(), [](const LayerSpec& l) { return l.sliding; });
}

}  // namespace mlaplan
