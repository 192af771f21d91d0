#pragma once
// Shared test helpers: every bundled model loaded once; the planner run in-process; seeds logged.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "app.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/engines.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/hf_config.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan::test {

inline const std::vector<ModelSpec>& all_models() {
  static const std::vector<ModelSpec> models = [] {
    std::vector<ModelSpec> v;
    for (const auto& e : bundled_models()) v.push_back(load_model_file(e.path, e.display, {}, shown_path(e.path)));
    return v;
  }();
  return models;
}

inline ModelSpec model(const std::string& name, const std::vector<std::string>& sets = {}) { return load_model(name, sets); }

// A one-layer model of `heads` query heads over `kv_heads` KV heads of size 128 (MHA where they are
// equal, MQA over one), the shapes of a kernel table's attention rows.
inline ModelSpec attention_layer(std::int64_t heads, std::int64_t kv_heads) {
  ModelSpec m;
  m.name = "rows";
  m.attention = kv_heads == heads ? AttentionKind::mha : kv_heads == 1 ? AttentionKind::mqa : AttentionKind::gqa;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = 128;
  m.hidden = heads * 128;
  m.layers.resize(1);
  return m;
}

// The bundled dispatch rules judged by default, and one of them by key ("sglang", "vllm_flashmla").
inline const std::vector<EnginePolicy>& policies() {
  static const std::vector<EnginePolicy> p = default_policies();
  return p;
}
inline const EnginePolicy& policy(const std::string& key) {
  for (const EnginePolicy& e : policies())
    if (e.key == key) return e;
  throw std::runtime_error("no bundled dispatch policy " + key);
}
// The index of a policy in a cost study's engines (their order is the policies').
inline std::size_t policy_index(const std::string& key) {
  for (std::size_t i = 0; i < policies().size(); ++i)
    if (policies()[i].key == key) return i;
  throw std::runtime_error("no bundled dispatch policy " + key);
}

// The planner, called in-process with its arguments split at spaces: exit code, stdout, stderr.
struct Run {
  int code = -1;
  std::string out, err;
};
inline Run run(const std::string& args) {
  std::vector<std::string> argv;
  std::istringstream in(args);
  for (std::string a; in >> a;) argv.push_back(a);
  std::ostringstream out, err;
  cli::Context ctx{out, err, false, MLAPLAN_BIN, {}};
  Run r;
  r.code = cli::run(argv, ctx);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// A run that answers (exit 0, output on stdout) and says exactly `warnings` on stderr.
inline void expect_warnings(const std::string& args, const std::vector<std::string>& warnings) {
  INFO(args);
  const Run r = run(args);
  CHECK(r.code == 0);
  CHECK_FALSE(r.out.empty());
  std::string expected;
  for (const std::string& w : warnings) expected += "mlaplan: warning: " + w + "\n";
  CHECK(r.err == expected);
}

// Bad input: exit code 2, nothing on stdout, and exactly one line on stderr, "mlaplan: <message>".
inline void expect_refusal(const std::string& args, const std::string& message) {
  INFO(args);
  const Run r = run(args);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "mlaplan: " + message + "\n");
}

// A seed for a randomised test: $MLAPLAN_TEST_SEED when set (to replay a failure), else fresh.
// Printed, so every run's seed is in the log.
inline std::uint64_t seed(const char* test) {
  std::uint64_t s = 0;
  if (const char* env = std::getenv("MLAPLAN_TEST_SEED")) s = std::strtoull(env, nullptr, 10);
  if (s == 0) s = (static_cast<std::uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  std::cerr << test << ": seed " << s << " (replay with MLAPLAN_TEST_SEED=" << s << ")\n";
  return s;
}

}  // namespace mlaplan::test
