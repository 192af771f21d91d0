// Studies and the feasibility verdict: every infeasible point is a row or a note with a reason
// (never a silent fallback), and the typed rows hold what the formulas give.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>


#include <algorithm>

#include "helpers.hpp"
#include "mlaplan/core/feasibility.hpp"
#include "mlaplan/core/study.hpp"
#include "mlaplan/io/registry.hpp"
#include "mlaplan/io/report_spec.hpp"

using namespace mlaplan;
using test::all_models;
using test::model;
using test::policies;
using test::policy;
using test::policy_index;

namespace {
// `count` sequences of `query` new tokens after `prefix` cached ones.
Workload uniform_batch(std::int64_t count, double query, double prefix) {
  Workload x;
  x.groups = {SequenceGroup{count, query, prefix}};
  return x;
}
}  // namespace

TEST_CASE("One layout verdict, with the issue and the reason", "[study][feasibility]") {
  const ModelSpec ds = model("deepseek-v3"), llama = model("llama-3.1-8b");
  CHECK(check_layout(ds, {8, 1, 8}).ok());
  CHECK(check_layout(ds, {1, 8, 8}).ok());
  const LayoutVerdict heads = check_layout(llama, {3, 1, 1});
  CHECK(heads.issue == LayoutIssue::heads_not_divisible);
  CHECK(heads.verdict.reason == "32 query heads are not divisible by TP 3");
  const LayoutVerdict kv = check_layout(model("llama-3.1-70b", {"num_key_value_heads=6", "num_attention_heads=48", "head_dim=128"}), {4, 1, 1});
  CHECK(kv.issue == LayoutIssue::kv_heads_not_splittable);
  CHECK(kv.verdict.reason == "6 KV heads can be neither split across nor replicated over TP 4");
  CHECK(check_layout(llama, {1, 1, 2}).verdict.reason == "expert parallelism needs routed experts; meta-llama/Llama-3.1-8B has none");
  CHECK(check_layout(ds, {8, 1, 3}).verdict.reason == "EP 3 does not divide the 8 ranks of TP 8 x DP 1");
  CHECK(check_layout(ds, {512, 1, 512}).issue == LayoutIssue::heads_not_divisible);
  CHECK(check_layout(model("mixtral-8x7b"), {16, 1, 16}).verdict.reason == "EP 16 exceeds the 8 routed experts");
  // GQA KV heads are replicated when TP is a multiple of them: 8 KV heads over TP 16 is fine.
  CHECK(check_layout(model("llama-3.1-70b"), {16, 1, 1}).ok());
}

TEST_CASE("Capacity of an infeasible layout is a verdict, not a silently different layout", "[study][capacity]") {
  const ModelSpec m = model("llama-3.1-8b");
  CapacityRequest req;
  req.par = {1, 3, 1};
  req.weights = default_weight_plan(m);
  req.context = 4096;
  const auto rows = capacity_layouts(m, load_gpu("h100"), req, [](const Parallelism&) { return Bytes{0}; });
  REQUIRE(rows.size() == 2);  // requested (DP 3) and all-TP (TP 3); all-DP is the request itself
  CHECK(rows[0].requested);
  CHECK(rows[0].result.fits());
  CHECK(rows[1].par == Parallelism{3, 1, 1});
  CHECK_FALSE(rows[1].result.fits());
  CHECK(rows[1].result.verdict.reason == "32 query heads are not divisible by TP 3");
  CHECK(rows[1].result.max_tokens_per_rank == 0);
}

TEST_CASE("The cost study sums per-layer costs over layer kinds and names the cheaper path", "[study][cost]") {
  const HardwareSpec h = load_gpu("h200");
  const Roofline rf = roofline_for(h, DType::bf16, Efficiency{});
  Workload w;
  w.groups = {SequenceGroup{1, 1, 8191}};
  const ModelSpec ds = model("deepseek-v3");
  const CostStudy st = cost_study(ds, w, rf);
  REQUIRE(st.paths.size() == 3);
  CHECK(st.cheaper_by_flops == PathKind::absorb);
  CHECK(st.cheaper_by_time == PathKind::absorb);
  const PathCost one = path_cost(mla_path(ds, w, PathKind::expand), rf);
  CHECK(st.paths[1].cost.flops.value == Approx(one.flops.value * 61));
  CHECK(st.paths[1].cost.time.value == Approx(one.time.value * 61));
  CHECK(st.time_ratio > 10);
  // Gemma-2 alternates full and sliding layers: one standard path costed per layer kind.
  const ModelSpec g = model("gemma-2-9b");
  w.groups = {SequenceGroup{1, 1, 32767}};
  const CostStudy gs = cost_study(g, w, rf);
  REQUIRE(gs.paths.size() == 1);
  CHECK_FALSE(gs.cheaper_by_time.has_value());
  std::int64_t layers = 0;
  for (const OpRow& r : gs.paths[0].ops) layers += r.layers;
  CHECK(layers == g.num_layers());
  auto find = [&](OpId id) { return std::find_if(gs.paths[0].ops.begin(), gs.paths[0].ops.end(), [&](const OpRow& r) { return r.op.id == id; }); };
  const auto full = find(OpId::attention), sliding = find(OpId::attention_sliding);
  REQUIRE(full != gs.paths[0].ops.end());
  REQUIRE(sliding != gs.paths[0].ops.end());
  CHECK(full->layers + sliding->layers == g.num_layers());
  // 4,096 of the 32,768 keys are in a sliding layer's window.
  CHECK(sliding->op.cache_bytes_read.value * 8 == full->op.cache_bytes_read.value);
}

TEST_CASE("The crossover study skips a TP the model cannot run and says why", "[study][crossover]") {
  const ModelSpec m = model("deepseek-v2-lite");
  CrossoverSweepSpec s;
  s.prefixes = {0, 4096};
  s.tps = {1, 3};
  s.kvs = {KvDtype::bf16};
  const CrossoverStudy st = crossover_study(m, roofline_for(load_gpu("h100"), DType::bf16, Efficiency{}), s);
  CHECK(st.rows.size() == 2);
  REQUIRE(st.skipped.size() == 1);
  CHECK(st.skipped[0].what == "TP 3");
  CHECK(st.skipped[0].why.reason == "16 query heads are not divisible by TP 3");
}

TEST_CASE("A report whose roofline TP does not divide a model's heads says so instead of using TP 1", "[study][report]") {
  ReportSpec spec;
  spec.models = {"deepseek-v2-lite"};  // 16 heads
  spec.compare_models = {};
  spec.prefixes = "0,8192";
  spec.crossover_tps = {1, 32};
  spec.layouts = {{1, 1, 1}, {1, 1, 3}};
  spec.roofline_step.tp = 32;
  const ReportInputs in = resolve_report(spec);
  const ReportStudy st = report_study(in);
  CHECK(st.roofline_ops.empty());
  CHECK(std::count(st.notes.begin(), st.notes.end(),
                   "Roofline step skipped for deepseek-v2-lite: 16 query heads are not divisible by TP 32; set roofline_step.tp in the spec.") == 1);
  CHECK(std::count(st.notes.begin(), st.notes.end(), "TP 32 skipped for deepseek-v2-lite: 16 query heads are not divisible by TP 32.") == 1);
  CHECK(std::count(st.notes.begin(), st.notes.end(), "TP1 DP1 EP3 skipped for deepseek-v2-lite: EP 3 does not divide the 1 ranks of TP 1 x DP 1.") == 1);
  for (const ReportCrossoverRow& r : st.crossover) CHECK(r.row.tp == 1);
  for (const CapacityRow& r : st.capacity) CHECK(r.par == Parallelism{1, 1, 1});
}

TEST_CASE("Engine thresholds live in one place and drive both the rule and its description", "[study][engines]") {
  const ModelSpec v3 = model("deepseek-v3");
  auto batch = [](std::vector<SequenceGroup> groups) {
    Workload w;
    w.groups = std::move(groups);
    return w;
  };
  for (const EnginePolicy& e : policies()) {
    INFO(e.key);
    // The text is built from the threshold: a different threshold gives a different rule.
    if (e.rule == ExtendRule::query_split || e.rule == ExtendRule::prefix_sum) {
      EnginePolicy other = e;
      other.threshold = 77;
      CHECK(describe(other).find("77") != std::string::npos);
      CHECK(describe(other) != describe(e));
      CHECK(describe(e).find(std::to_string(static_cast<long long>(e.threshold))) != std::string::npos);
    }
    CHECK(dispatch(e, v3, batch({{32, 1, 100}})).all_absorbed());  // decode absorbs in every engine
    CHECK(!e.source.empty());
    CHECK(e.source.find("PENDING") == std::string::npos);
  }
  const EnginePolicy& fm = policy("vllm_flashmla");
  // vLLM FlashMLA: per request, Q <= 128 absorbs.
  CHECK(dispatch(fm, v3, batch({{1, 128, 8192}})).all_absorbed());
  CHECK(dispatch(fm, v3, batch({{1, 129, 8192}})).none_absorbed());
  CHECK(dispatch(fm, v3, batch({{64, 1, 8192}, {2, 2048, 0}})).absorbed == std::vector<bool>{true, false});
  CHECK(kDefaultBatchedTokens == 8192);
}

TEST_CASE("SGLang decides on the sum of the extend batch's prefixes", "[study][engines]") {
  const ModelSpec v3 = model("deepseek-v3");
  const EnginePolicy& sg = policy("sglang");
  const auto w = uniform_batch;
  // Prefix 1,024, query 2: batch 1 sums to 1,024 < 8,192 (absorbed); batch 32 sums to 32,768 (MHA).
  CHECK(dispatch(sg, v3, w(1, 2, 1024)).all_absorbed());
  CHECK(dispatch(sg, v3, w(32, 2, 1024)).none_absorbed());
  // Exactly at the threshold: 8 x 1,024 = 8,192 expands, 7 x 1,024 does not.
  CHECK(dispatch(sg, v3, w(8, 2, 1024)).none_absorbed());
  CHECK(dispatch(sg, v3, w(7, 2, 1024)).all_absorbed());
  // No prefix at all: the sum is 0, MHA.
  CHECK(dispatch(sg, v3, w(1, 2, 0)).none_absorbed());
  CHECK(dispatch(sg, v3, w(32, 4096, 0)).none_absorbed());
  // Decode requests stay absorbed and do not enter the sum.
  Workload mixed;
  mixed.groups = {SequenceGroup{100, 1, 100000}, SequenceGroup{1, 64, 1024}};
  CHECK(dispatch(sg, v3, mixed).absorbed == std::vector<bool>{true, true});
  // DP attention: each rank judges its own batch (32 sequences over DP 8: 4 x 1,024 per rank).
  Workload dp = w(32, 2, 1024);
  dp.par.dp = 8;
  CHECK(dispatch(sg, v3, dp).all_absorbed());
  // What it costs: DeepSeek-V3 on H200, TP 1, batch 32, prefix 1,024, query 2: SGLang expands,
  // the absorbed path is far faster.
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  const CostStudy st = cost_study(v3, w(32, 2, 1024), rf, std::nullopt, policies());
  const EngineChoice& c = st.engines[policy_index("sglang")];
  CHECK(c.key == "sglang");
  CHECK(c.path.kind == PathKind::expand);
  CHECK(st.cheaper_by_time == PathKind::absorb);
  CHECK(c.penalty > 50);
  const CostStudy one = cost_study(v3, w(1, 2, 1024), rf, std::nullopt, policies());
  CHECK(one.engines[policy_index("sglang")].path.kind == PathKind::absorb);
  CHECK(one.engines[policy_index("sglang")].penalty == 0);
}

TEST_CASE("TensorRT-LLM's short-sequence MHA for DSA: off by default and keyed on the longest request", "[study][engines]") {
  const ModelSpec v32 = model("deepseek-v3.2-exp"), v3 = model("deepseek-v3");
  const EnginePolicy& trt = policy("trtllm");
  const auto w = uniform_batch;
  // As merged (PR #11677): TRTLLM_MLA_SHORT_SEQ_MHA_THRESHOLD defaults to 0, so 8,192 packed context
  // tokens (4 x 2,048) and 16,384 (8 x 2,048) both run sparse.
  REQUIRE(trt.dsa == DsaRule::max_kv);
  REQUIRE(trt.dsa_threshold == 0);
  CHECK(dispatch(trt, v32, w(4, 2048, 0)).all_absorbed());
  CHECK(dispatch(trt, v32, w(8, 2048, 0)).all_absorbed());
  // With the variable at 10,240 (the value under review): the longest request's P + Q decides, so
  // both batches run dense and one request of 10,241 tokens runs sparse.
  EnginePolicy set = trt;
  set.dsa_threshold = 10240;
  CHECK(dispatch(set, v32, w(4, 2048, 0)).none_absorbed());
  CHECK(dispatch(set, v32, w(8, 2048, 0)).none_absorbed());
  CHECK(dispatch(set, v32, w(1, 10240, 0)).none_absorbed());
  CHECK(dispatch(set, v32, w(1, 10241, 0)).all_absorbed());
  CHECK(dispatch(set, v32, w(1, 2, 10239)).all_absorbed());  // the cached prefix counts
  // Keyed on packed tokens instead (as the PR's test text reads): 8,192 dense, 16,384 sparse.
  EnginePolicy packed = set;
  packed.dsa = DsaRule::packed_tokens;
  CHECK(dispatch(packed, v32, w(4, 2048, 0)).none_absorbed());
  CHECK(dispatch(packed, v32, w(8, 2048, 0)).all_absorbed());
  CHECK(dispatch(packed, v32, w(5, 2048, 0)).none_absorbed());  // 10,240: at the threshold
  // A dense MLA model: every context request expands, whatever its length; generation absorbs.
  CHECK(dispatch(trt, v3, w(8, 2048, 0)).none_absorbed());
  CHECK(dispatch(trt, v3, w(1, 100000, 50000)).none_absorbed());
  CHECK(dispatch(trt, v3, w(64, 1, 50000)).all_absorbed());
  // The sparse path is what "absorbed" means for V3.2 in the cost study.
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  CHECK(cost_study(v32, w(8, 2048, 0), rf, std::nullopt, policies()).engines[policy_index("trtllm")].path.kind == PathKind::sparse);
  CHECK(cost_study(v32, w(4, 2048, 0), rf, std::nullopt, {packed}).engines[0].path.kind == PathKind::expand);
}

TEST_CASE("The split path never costs more than the best single path", "[study][engines][property]") {
  std::mt19937_64 rng(test::seed("split property"));
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  for (const ModelSpec& m : all_models()) {
    if (!m.is_mla()) continue;
    for (int trial = 0; trial < 30; ++trial) {
      Workload w;
      w.groups.clear();
      const int groups = 2 + static_cast<int>(rng() % 3);
      for (int g = 0; g < groups; ++g)
        w.groups.push_back(SequenceGroup{1 + static_cast<std::int64_t>(rng() % 64), static_cast<double>(1 + rng() % 4096),
                                         static_cast<double>(rng() % 65536)});
      w.projections = (trial % 2) == 1;
      const CostStudy st = cost_study(m, w, rf);
      INFO(m.name << " trial " << trial);
      double best_single = INFINITY;
      const PathResult* split = nullptr;
      for (const PathResult& p : st.paths) {
        if (p.kind == PathKind::split) split = &p;
        else if (p.kind != PathKind::chunked) best_single = std::min(best_single, p.cost.time.value);
      }
      if (!split) continue;  // every group the same query length
      CHECK(split->cost.time.value <= best_single * (1 + 1e-12));
      // The cheaper path is never slower than the split.
      double cheaper = INFINITY;
      for (const PathResult& p : st.paths)
        if (st.cheaper_by_time && p.kind == *st.cheaper_by_time) cheaper = p.cost.time.value;
      CHECK(cheaper <= split->cost.time.value);
    }
  }
}

TEST_CASE("A path whose workspace does not fit is infeasible and not chosen", "[study][engines]") {
  const ModelSpec v3 = model("deepseek-v3");
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  Workload w;
  w.groups = {SequenceGroup{32, 256, 131072}};
  w.par.tp = 8;
  const CostStudy free_for_all = cost_study(v3, w, rf);
  CHECK(free_for_all.cheaper_by_time == PathKind::expand);  // unbounded: the 40 GiB workspace wins
  const CostStudy bounded = cost_study(v3, w, rf, Bytes{std::int64_t{8} << 30});
  const auto expand = std::find_if(bounded.paths.begin(), bounded.paths.end(), [](const PathResult& p) { return p.kind == PathKind::expand; });
  REQUIRE(expand != bounded.paths.end());
  CHECK(!expand->feasible.ok());
  CHECK(expand->feasible.reason.find("exceeds the memory left after weights and KV (8192 MiB)") != std::string::npos);
  CHECK(bounded.cheaper_by_time != PathKind::expand);
  // The default budget on an H200: this batch's KV alone exceeds the GPU, so nothing with a workspace fits.
  const WorkspaceBudget b = workspace_budget(v3, load_gpu("h200"), w, 0.9);
  CHECK(b.left.value == 0);
  CHECK(b.shortfall.value > 0);
}

TEST_CASE("Engines' absorbed folds read their own copies of W_UK and W_UV", "[study][engines]") {
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  // DeepSeek-V3's fp8 checkpoint: vLLM and SGLang fold with bf16 copies (2 B per weight), TensorRT-LLM
  // on Hopper with the fp8 block-scaled ones; the rest of the absorbed path is the same.
  Workload w = uniform_batch(8, 1, 4096);
  w.weights = WeightDtype::fp8;
  const CostStudy st = cost_study(model("deepseek-v3"), w, rf, std::nullopt, policies());
  const EngineChoice& vllm = st.engines[policy_index("vllm_flashmla")];
  const EngineChoice& trt = st.engines[policy_index("trtllm")];
  REQUIRE(vllm.path.kind == PathKind::absorb);
  REQUIRE(trt.path.kind == PathKind::absorb);
  auto fold_read = [](const PathResult& p) {
    for (const OpRow& o : p.ops)
      if (o.op.id == OpId::q_absorb_w_uk) return o.op.bytes_read.value;
    return 0.0;
  };
  // W_UK per rank: 128 heads x 128 x 512 weights; activations 8 x 128 x 128 x 2 B.
  const double acts = 8.0 * 128 * 128 * 2;
  CHECK(fold_read(vllm.path) == Approx(128.0 * 128 * 512 * 2 + acts));
  CHECK(fold_read(trt.path) == Approx(128.0 * 128 * 512 * weight_bytes_per_element(model("deepseek-v3"), WeightDtype::fp8) + acts));
  CHECK(vllm.path.cost.time.value > trt.path.cost.time.value);
}

TEST_CASE("DSA: the prompt length from which sparse beats dense", "[study][dsa]") {
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  const ModelSpec v32 = model("deepseek-v3.2-exp");
  Workload w = uniform_batch(1, 1, 0);
  const std::int64_t s = sparse_crossover_tokens(v32, w, rf, std::int64_t{1} << 20);
  // Past index_topk (below it sparse and dense attend to the same keys and sparse adds the indexer).
  CHECK(s > v32.indexer->topk);
  auto times = [&](std::int64_t tokens) {
    Workload x = uniform_batch(1, static_cast<double>(tokens), 0);
    const double sparse = path_cost(mla_path(v32, x, PathKind::sparse), rf).time.value;
    const double dense = std::min(path_cost(mla_path(v32, x, PathKind::absorb), rf).time.value, path_cost(mla_path(v32, x, PathKind::expand), rf).time.value);
    return std::pair{sparse, dense};
  };
  CHECK(times(s).first < times(s).second);
  CHECK(times(s - 1).first >= times(s - 1).second);
  CHECK(sparse_crossover_tokens(model("deepseek-v3"), w, rf, 1 << 20) == 0);  // no indexer
  // The crossover study carries it for DSA models, one row per TP and cache dtype.
  CrossoverSweepSpec spec;
  spec.prefixes = {0};
  spec.tps = {1, 8};
  spec.kvs = {KvDtype::bf16};
  spec.max_query = 8;
  const CrossoverStudy st = crossover_study(v32, rf, spec);
  REQUIRE(st.sparse.size() == 2);
  CHECK(st.sparse[0].sparse_faster_from_tokens == s);
}

TEST_CASE("Speculative verification runs as decode in every engine that says so", "[study][engines]") {
  const ModelSpec v3 = model("deepseek-v3");
  // 32 requests verifying 1 draft token (Q = 2) after 1,024 cached: an extend batch without
  // speculative decoding (SGLang: Σ prefix 32,768 >= 8,192, MHA), a verification step with it.
  Workload w = uniform_batch(32, 2, 1024);
  CHECK(dispatch(policy("sglang"), v3, w).none_absorbed());
  CHECK(dispatch(policy("trtllm"), v3, w).none_absorbed());
  CHECK(dispatch(policy("vllm_triton"), v3, w).none_absorbed());  // threshold 1
  w.spec_tokens = 1;
  for (const EnginePolicy& e : policies()) {
    INFO(e.key);
    CHECK(dispatch(e, v3, w).all_absorbed() == e.spec_as_decode);
  }
  // vLLM raises its threshold to 1 + draft tokens where the backend takes longer queries as decode:
  // FlashInfer-MLA absorbs Q = 4 with 3 drafts, not Q = 5; Triton MLA (single-token decode) never.
  Workload v = uniform_batch(1, 4, 1000);
  v.spec_tokens = 3;
  CHECK(dispatch(policy("vllm_flashinfer_mla"), v3, v).all_absorbed());
  CHECK(dispatch(policy("vllm_triton"), v3, v).none_absorbed());
  v.groups[0].query = 5;
  CHECK(dispatch(policy("vllm_flashinfer_mla"), v3, v).none_absorbed());
  // A threshold above 1 + drafts stays: FlashMLA absorbs Q = 5 anyway.
  CHECK(dispatch(policy("vllm_flashmla"), v3, v).all_absorbed());
  // SGLang: a prompt (no prefix) is an extend even with speculative decoding on.
  Workload p = uniform_batch(4, 2, 0);
  p.spec_tokens = 1;
  CHECK(dispatch(policy("sglang"), v3, p).none_absorbed());
}

TEST_CASE("Engines chunk the expanded keys at their workspace size", "[study][engines]") {
  const ModelSpec v3 = model("deepseek-v3");
  const EnginePolicy& sg = policy("sglang");
  REQUIRE(sg.chunk_tokens == 131072);
  // One prompt of 8,192 after 8,192 cached: 16,384 keys, one chunk (expand); 32 of them: 524,288 keys,
  // chunked 131,072 at a time.
  CHECK(engine_expanded_kind(sg, uniform_batch(1, 8192, 8192), {false}) == PathKind::expand);
  CHECK(engine_expanded_kind(sg, uniform_batch(32, 8192, 8192), {false}) == PathKind::chunked);
  CHECK(engine_expanded_kind(sg, uniform_batch(8, 8192, 8192), {false}) == PathKind::expand);  // exactly 131,072
  // Absorbed groups do not count.
  Workload mixed;
  mixed.groups = {SequenceGroup{1000, 1, 100000}, SequenceGroup{1, 8192, 8192}};
  CHECK(engine_expanded_kind(sg, mixed, {true, false}) == PathKind::expand);
  // What the cost study runs: SGLang's own chunking, not the faster of expand and chunked.
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  Workload big = uniform_batch(32, 8192, 8192);
  big.par.tp = 8;
  const CostStudy st = cost_study(v3, big, rf, std::nullopt, policies());
  const EngineChoice& c = st.engines[policy_index("sglang")];
  CHECK(c.path.kind == PathKind::chunked);
  // 524,288 keys on the rank in 4 chunks of 131,072: each chunk's K and V over 16 heads, 2 B.
  bool chunk_op = false;
  for (const OpRow& o : c.path.ops)
    if (o.op.id == OpId::kv_up_proj_chunk) {
      chunk_op = true;
      CHECK(o.op.workspace_bytes.value == Approx(131072.0 * 16 * (128 + 64 + 128) * 2));
    }
  CHECK(chunk_op);
}

TEST_CASE("The crossover compares only paths whose workspace fits", "[study][crossover]") {
  const ModelSpec v3 = model("deepseek-v3");
  const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  Workload base;
  base.par.tp = 8;
  const double free_q = roofline_crossover_query(v3, base, 32768, 32, rf);
  REQUIRE(std::isfinite(free_q));
  // A budget too small for one key per chunk: no expanded path runs, absorb stays.
  auto none = [](const Workload&) -> std::optional<Bytes> { return Bytes{0}; };
  CHECK(roofline_crossover_query(v3, base, 32768, 32, rf, none) == kNoCrossover);
  // Plenty: the same Q* as without a budget.
  auto plenty = [](const Workload&) -> std::optional<Bytes> { return Bytes{std::int64_t{1} << 50}; };
  CHECK(roofline_crossover_query(v3, base, 32768, 32, rf, plenty) == Approx(free_q).epsilon(1e-9));
  // 1 GiB: expand's workspace at Q* (32 x (32,768 + Q*) keys x 16 heads x 320 x 2 B, over 10 GiB)
  // does not fit; chunked does, later.
  auto tight = [](const Workload&) -> std::optional<Bytes> { return Bytes{std::int64_t{1} << 30}; };
  const double tight_q = roofline_crossover_query(v3, base, 32768, 32, rf, tight);
  CHECK(tight_q > free_q);
  // The feasible expanded plan at 1 GiB: chunks of floor(2^30 / (16 x 320 x 2)) keys.
  Workload at = base;
  at.groups = {SequenceGroup{32, 512, 32768}};
  const MlaGeometry g = mla_geometry(v3, at);
  const std::optional<PathPlan> plan = feasible_expanded(g, at, Bytes{std::int64_t{1} << 30});
  REQUIRE(plan);
  CHECK(plan->workspace_bytes().value <= static_cast<double>(std::int64_t{1} << 30));
  CHECK(plan->workspace_bytes().value == Approx(std::floor(1073741824.0 / (16 * 320 * 2)) * 16 * 320 * 2));
  CHECK(!feasible_expanded(g, at, Bytes{100}));
}
