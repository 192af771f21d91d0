// --explain: every number with its formula and values, checked against the studies and kept as
// reviewed golden text for DeepSeek-V3 and Llama-3.1-70B.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "helpers.hpp"
#include "mlaplan/core/explain.hpp"
#include "mlaplan/core/study.hpp"

using namespace mlaplan;
using test::all_models;

namespace {

std::string golden(const std::string& name) {
  std::ifstream in(std::filesystem::path(MLAPLAN_TEST_SOURCE_DIR) / "tests" / "explain-golden" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const ExplainStep& step(const std::vector<ExplainStep>& steps, const std::string& quantity) {
  for (const ExplainStep& s : steps)
    if (s.quantity == quantity) return s;
  throw std::runtime_error("no step " + quantity);
}

}  // namespace

TEST_CASE("kv --explain: DeepSeek-V3 worked by hand", "[explain][example]") {
  const auto s = explain_kv(test::model("deepseek-v3"), KvDtype::bf16, {8, 1, 1}, 32768, 8, 64);
  CHECK(s[0].formula == "(kv_lora_rank + qk_rope_head_dim) · 2 B");
  CHECK(s[0].substituted == "(512 + 64) · 2 B");
  CHECK(s[0].result == "1,152 B");
  CHECK(s[1].substituted == "1,152 B · 61");
  CHECK(s[1].result == "70,272 B");
  CHECK(step(s, "bytes per sequence").result == "2,302,672,896 B");  // 1,152 · 32,768 · 61
  const auto f = explain_kv(test::model("deepseek-v3"), KvDtype::fp8_flashmla, {1, 1, 1}, 0, 1, 1);
  CHECK(f[0].substituted == "512 · 1 B + 64 · 2 B + 4 · 4 B");
  CHECK(f[0].result == "656 B");
  const auto ix = explain_kv(test::model("deepseek-v3.2-exp"), KvDtype::bf16, {1, 1, 1}, 0, 1, 1);
  CHECK(step(ix, "indexer cache bytes per token per layer").result == "132 B");
  CHECK(step(ix, "bytes per token, all layers").substituted == "(1,152 B + 132 B) · 61");
  CHECK(grouped(-1234567) == "-1,234,567");
  CHECK(grouped(999) == "999");
}

TEST_CASE("kv --explain agrees with the study on every bundled model and dtype", "[explain][property]") {
  for (const ModelSpec& m : all_models())
    for (KvDtype d : all_kv_dtypes()) {
      if (d == KvDtype::fp8_flashmla && !m.is_mla()) continue;
      for (const Parallelism par : {Parallelism{1, 1, 1}, Parallelism{8, 2, 1}}) {
        if (!check_layout(m, par).ok()) continue;
        INFO(m.name << " " << to_string(d) << " TP " << par.tp);
        const KvStudy st = kv_study(m, d, par, 5000, 3, 16);
        const auto s = explain_kv(m, d, par, 5000, 3, 16);
        CHECK(s[0].value == st.per_token_per_layer.total().value);
        CHECK(step(s, "bytes per token, all layers").value == (st.per_token.total() + st.indexer_per_token).value);
        CHECK(step(s, "bytes per token on one rank").value == st.per_token_per_rank.value);
        CHECK(step(s, "bytes for all sequences").value == st.total_bytes->value);
        CHECK(step(s, "bytes on one rank").value == st.total_bytes_per_rank->value);
      }
    }
}

TEST_CASE("kv --explain golden text for DeepSeek-V3 and Llama-3.1-70B", "[explain][golden]") {
  CHECK(test::run("kv --model deepseek-v3 --tokens 32768 --sequences 8 --block-size 64 --tp 8 --explain").out == golden("kv-deepseek-v3.txt"));
  CHECK(test::run("kv --model llama-3.1-70b --tokens 32768 --sequences 8 --block-size 16 --tp 8 --dp 2 --explain").out == golden("kv-llama-3.1-70b.txt"));
}

TEST_CASE("capacity --explain agrees with the study on every bundled model", "[explain][property]") {
  const HardwareSpec h200 = load_gpu("h200");
  for (const ModelSpec& m : all_models()) {
    const Parallelism par{8, 1, 1};
    if (!check_layout(m, par).ok()) continue;
    INFO(m.name);
    CapacityRequest req;
    req.par = par;
    req.weights = default_weight_plan(m);
    req.context = 4096;
    req.block_size = 16;
    const CapacityStudy st = capacity_study(m, h200, req, [&](const Parallelism& p) { return activation_reserve_estimate(m, p, 8192); });
    const auto s = explain_capacity(m, h200, st, 8192, false);
    CHECK(step(s, "weights on one rank").value == st.result.weight_bytes_per_rank.value);
    CHECK(step(s, "activation reserve").value == st.result.reserve_bytes_per_rank.value);
    CHECK(step(s, "activation reserve").substituted.rfind("8,192 · 2 B · (2 · ", 0) == 0);
    CHECK(step(s, "KV pool on one rank").value == st.result.kv_pool_bytes_per_rank.value);
    CHECK(step(s, "tokens on one rank").value == st.result.max_tokens_per_rank);
    CHECK(step(s, "sequences in the deployment").value == st.result.max_sequences);
    std::int64_t groups = 0;
    for (const ExplainStep& x : s)
      if (x.quantity.rfind("weights on one rank: ", 0) == 0) groups += x.value;
    CHECK(groups == st.result.weight_bytes_per_rank.value);
  }
}

TEST_CASE("capacity --engine --explain: the budget lines add up and the blocks follow", "[explain][property]") {
  const HardwareSpec h200 = load_gpu("h200");
  for (const EngineProfile& p : bundled_engines())
    for (const char* name : {"deepseek-r1", "llama-3.1-8b"}) {
      const ModelSpec m = test::model(name);
      INFO(p.label() << " " << name);
      const EngineCapacity e = engine_capacity(m, h200, p, default_weight_plan(m), {8, 1, 1}, KvDtype::bf16, EngineSettings{}, 0);
      if (!e.fits()) continue;
      const auto s = explain_engine_capacity(e);
      CHECK(step(s, "the lines' sum").value == e.total_seen.value);
      const std::int64_t block = std::max<std::int64_t>(1, e.block_size);
      CHECK(step(s, "blocks").value == e.kv_pool.value / (e.kv_bytes_per_token.value * block));
      CHECK(step(s, "tokens the engine logs").value == e.engine_kv_tokens);
    }
}

TEST_CASE("capacity --explain golden text for DeepSeek-V3 and Llama-3.1-70B", "[explain][golden]") {
  CHECK(test::run("capacity --model deepseek-v3 --gpu h200 --tp 8 --context 32768 --block-size 64 --explain").out == golden("capacity-deepseek-v3.txt"));
  CHECK(test::run("capacity --model llama-3.1-70b --gpu h100 --tp 4 --dp 2 --context 8192 --block-size 16 --explain").out ==
        golden("capacity-llama-3.1-70b.txt"));
  CHECK(test::run("capacity --model deepseek-r1 --gpu h200 --tp 8 --engine vllm@0.7.3 --explain").out == golden("capacity-engine-deepseek-r1.txt"));
}
