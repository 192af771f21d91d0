// Parameter counts against the model cards, and weight bytes with block scales.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "mlaplan/core/params.hpp"

using namespace mlaplan;
using test::all_models;
using test::model;

namespace {
double billions(Params p) { return static_cast<double>(p.value) / 1e9; }
}  // namespace

TEST_CASE("DeepSeek-V3: 671B main model, MTP module beside it, 37B active", "[params][example]") {
  const ModelSpec m = model("deepseek-v3");
  const ParamCounts c = count_params(m);
  CHECK(billions(c.main) == Approx(671).epsilon(0.005));
  // The HF checkpoint's 685B is main + MTP with the MTP module's own copies of embedding and head.
  const Params embed_and_head{2 * m.vocab * m.hidden};
  CHECK(billions(c.total + embed_and_head) == Approx(685).epsilon(0.005));
  CHECK(billions(c.mtp) == Approx(11.6).epsilon(0.01));
  // "37B activated" has two significant digits: our count must round to it. It is 36.63B:
  // attention 11.41B + 3 dense MLPs 1.19B + 58 × (9 experts + router) 23.10B + lm_head 0.93B,
  // with the input embedding (a row lookup) not counted, as gpt-oss's card counts it below.
  CHECK(std::llround(billions(c.active)) == 37);
  CHECK(c.active == Params{36625618432});
  // Exact per-layer attention of MLA: q_a + q_a_norm + q_b + kv_a + kv_a_norm + kv_b + o.
  CHECK(c.by_group.at(WeightGroup::attention) ==
        Params{61 * (7168LL * 1536 + 1536 + 1536LL * 128 * 192 + 7168LL * 576 + 512 + 512LL * 128 * 256 + 128LL * 128 * 7168)});
}

TEST_CASE("Dense and MoE models match their model cards within 0.5%", "[params][example]") {
  struct Card {
    const char* name;
    double total_b;
    double active_b;  // 0: not published separately
  };
  const Card cards[] = {
      {"llama-3.1-70b", 70.6, 0},  {"llama-3.1-8b", 8.03, 0},  {"mistral-7b", 7.24, 0},
      {"mixtral-8x7b", 46.7, 0},   {"qwen2.5-72b", 72.7, 0},   {"qwen2.5-7b", 7.61, 0},
      {"qwen3-32b", 32.8, 0},      {"qwen3-8b", 8.19, 0},      {"gemma-2-9b", 9.24, 0},
      {"gemma-2-27b", 27.2, 0},    {"gpt-oss-20b", 20.91, 3.61}, {"deepseek-v2", 236, 0},
      {"deepseek-v2-lite", 15.7, 0},
  };
  for (const Card& card : cards) {
    INFO(card.name);
    const ParamCounts c = count_params(model(card.name));
    CHECK(billions(c.total) == Approx(card.total_b).epsilon(0.005));
    if (card.active_b > 0) CHECK(billions(c.active) == Approx(card.active_b).epsilon(0.005));
  }
  // Published with two significant digits: DeepSeek-V2 21B of 236B, V2-Lite 2.4B of 15.7B.
  CHECK(std::llround(billions(count_params(model("deepseek-v2")).active)) == 21);
  CHECK(billions(count_params(model("deepseek-v2-lite")).active) == Approx(2.4).margin(0.06));
}

TEST_CASE("fp8 block scales and MXFP4 scales are counted exactly", "[params][example]") {
  WeightTensor t;
  t.rows = 1536;
  t.cols = 7168;
  t.linear = true;
  WeightPlan fp8;
  fp8.linear = WeightDtype::fp8;
  CHECK(tensor_bytes(t, fp8) == Bytes{1536LL * 7168 + 12 * 56 * 4});
  WeightPlan fp4;
  fp4.linear = WeightDtype::mxfp4;
  CHECK(tensor_bytes(t, fp4) == Bytes{1536LL * 7168 / 2 + 1536LL * 224});
  WeightPlan bf16;
  CHECK(tensor_bytes(t, bf16) == Bytes{1536LL * 7168 * 2});
  t.linear = false;  // norms, embeddings and routers keep the dense dtype
  CHECK(tensor_bytes(t, fp8) == Bytes{1536LL * 7168 * 2});
}

TEST_CASE("Weight bytes per rank: TP splits, replicated parts stay, EP splits experts", "[params]") {
  const ModelSpec m = model("deepseek-v3");
  const WeightPlan plan = default_weight_plan(m);
  const Bytes one = weight_bytes_per_rank(m, plan, {1, 1, 1});
  const Bytes tp8 = weight_bytes_per_rank(m, plan, {8, 1, 1});
  CHECK(tp8 < one);
  CHECK(tp8.value * 8 > one.value);  // q_a/kv_a projections, routers and norms are replicated
  const Bytes dp8ep8 = weight_bytes_per_rank(m, plan, {1, 8, 8});
  CHECK(dp8ep8 > tp8);  // attention is whole on every DP rank
  // Llama under TP16: 8 KV heads are replicated, so k/v projections no longer shrink.
  const ModelSpec l = model("llama-3.1-70b");
  const WeightPlan lp = default_weight_plan(l);
  for (const WeightTensor& t : weight_tensors(l)) {
    if (t.name != "k_proj") continue;
    CHECK(tensor_bytes_per_rank(l, t, lp, {8, 1, 1}) == tensor_bytes_per_rank(l, t, lp, {16, 1, 1}));
  }
}

TEST_CASE("Active parameters, bf16 bytes and per-rank weights for every model", "[params][property]") {
  for (const ModelSpec& m : all_models()) {
    INFO(m.name);
    const ParamCounts c = count_params(m);
    CHECK(c.active <= c.main);
    CHECK(c.active.value > 0);
    // Weight bytes at bf16 are exactly two bytes per parameter.
    WeightPlan bf16;
    Bytes b{0};
    for (const WeightTensor& t : weight_tensors(m)) b += tensor_bytes(t, bf16);
    CHECK(b == Bytes{2 * c.total.value});
    // Per-rank bytes never exceed the whole model and shrink (weakly) with TP.
    const WeightPlan plan = default_weight_plan(m);
    const Bytes whole = weight_bytes_per_rank(m, plan, {1, 1, 1});
    for (std::int64_t tp : {2, 4, 8}) {
      if (m.heads % tp != 0) continue;
      CHECK(weight_bytes_per_rank(m, plan, {tp, 1, 1}) <= whole);
    }
  }
}
