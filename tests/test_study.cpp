// Studies and the feasibility verdict: every infeasible point is a row or a note with a reason
// (never a silent fallback), and the typed rows hold what the formulas give.
#include <catch2/catch.hpp>

#include <algorithm>

#include "helpers.hpp"
#include "mlaplan/core/feasibility.hpp"
#include "mlaplan/core/study.hpp"
#include "mlaplan/io/registry.hpp"
#include "mlaplan/io/report_spec.hpp"

using namespace mlaplan;
using test::model;

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
  for (const EnginePolicy& e : engine_policies()) {
    INFO(e.key);
    // The text is built from the threshold: a different threshold gives a different rule.
    EnginePolicy other = e;
    other.threshold = 77;
    CHECK(describe(other).find("77") != std::string::npos);
    CHECK(describe(other).find(std::to_string(static_cast<long long>(e.threshold))) == std::string::npos);
    CHECK(describe(e).find(std::to_string(static_cast<long long>(e.threshold))) != std::string::npos);
    CHECK(e.choose(1, 100, e.threshold) == PathKind::absorb);  // decode absorbs in every engine
  }
  const auto& p = engine_policies();
  CHECK(p[1].choose(128, 8192, p[1].threshold) == PathKind::absorb);
  CHECK(p[1].choose(129, 8192, p[1].threshold) == PathKind::expand);
  CHECK(p[3].choose(2, 8191, p[3].threshold) == PathKind::absorb);
  CHECK(p[3].choose(2, 8192, p[3].threshold) == PathKind::expand);
  CHECK(p[4].choose(240, 10000, p[4].threshold) == PathKind::expand);
  CHECK(p[4].choose(241, 10000, p[4].threshold) == PathKind::absorb);
  CHECK(kDefaultBatchedTokens == 8192);
}
