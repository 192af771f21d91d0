#pragma once
// Studies: the sweeps behind `cost`, `crossover`, `capacity`, `kv` and `report`, computed in the core
// and returned as typed rows. io renders rows (tables, markdown, CSV, JSON, SVG); nothing reads a
// row by position. Infeasible points are rows (or skips) with a verdict, never silent fallbacks.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/core/capacity.hpp"
#include "mlaplan/core/crossover.hpp"
#include "mlaplan/core/engine_memory.hpp"
#include "mlaplan/core/engines.hpp"
#include "mlaplan/core/feasibility.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/efficiency.hpp"
#include "mlaplan/core/roofline.hpp"

namespace mlaplan {

// A point of a sweep that was not evaluated, and why.
struct Skip {
  std::string what;  // "TP 3", "TP1 DP8 EP8"
  Verdict why;
};

// Reports progress of a long sweep: (points done, points in all).
using Progress = std::function<void(std::size_t, std::size_t)>;

// ---- cost: every path of one step over the whole model ----

struct OpRow {
  Op op;
  std::int64_t layers = 0;  // layers of the model that run this op (a layer kind)
  OpTime time;
  Seconds bound{0};  // at speed of light (the lower bound the time is judged against)
};

struct PathResult {
  PathKind kind = PathKind::absorb;
  PathCost cost;  // the whole model: Σ over layer kinds of (per-layer cost × layers)
  std::vector<OpRow> ops;
  Seconds bound{0};    // the whole model's time at speed of light
  Verdict feasible;    // no: its largest workspace exceeds the memory left for one
  std::string detail;  // split: which groups run which path
  double chunk = 0;    // chunked: keys of the batch expanded per chunk (0: not chunked)
};

// What an engine runs for the workload (its rule over the whole batch) and what it costs.
struct EngineChoice {
  std::string key, name, engine;  // the policy's key and name, and the engine profile it comes from
  PathResult path;      // absorb, expand, chunked, sparse, or split
  double penalty = 0;   // its time over the fastest feasible path's, − 1 (+inf when its own path does not fit)
};

struct CostStudy {
  std::vector<PathResult> paths;  // split (for a mixed batch) after the model's own paths
  std::vector<EngineChoice> engines;  // MLA models: every engine policy's choice
  std::optional<Bytes> workspace_budget;  // memory one op's transient buffers may take, when known
  Bytes memory_shortfall{0};              // weights and the batch's KV beyond the memory (the budget is then 0)
  std::int64_t layers = 0;
  // Among the competing paths (chunked is expand with a bounded workspace, not a third choice);
  // absent when the model has one path.
  std::optional<PathKind> cheaper_by_flops, cheaper_by_time;
  double flops_ratio = 0;  // FLOPs of the dearest competing path over the cheapest
  double time_ratio = 0;   // time of the slowest over the fastest
};
// Per-layer plans for each layer kind of `m` (sliding windows for standard attention), costed on `rf`.
// With a workspace budget, a path whose largest op workspace exceeds it is infeasible and the
// comparisons (cheaper_by_*, the engines' penalties) are among feasible paths only. For an MLA
// model and a batch of several shapes, `split` is the best division of the batch by query length
// between the absorbed and the expanded kernels.
// Each engine policy runs its own division of the batch (dispatch) with its own expanded path
// (chunked past its chunk_tokens) and fold dtype.
// `chunks`: the chunked path once per value, in order (none: once, at w.chunk); where expand does
// not fit, the fastest feasible of them competes in its place.
CostStudy cost_study(const ModelSpec& m, const Workload& w, const Roofline& rf, std::optional<Bytes> workspace_budget = std::nullopt,
                     const std::vector<EnginePolicy>& policies = {}, const std::vector<double>& chunks = {});

// The memory one op's workspace may use on a rank: the memory torch sees (or the datasheet's) ×
// mem_util − the weights on the rank − the KV cache of the workload's sequences on the rank; and
// by how much weights and KV exceed that memory when they do (the budget is then 0).
struct WorkspaceBudget {
  Bytes left{0};
  Bytes shortfall{0};
};
WorkspaceBudget workspace_budget(const ModelSpec& m, const HardwareSpec& hw, const Workload& w, double mem_util);
// The same as a function of the step, for the crossover's solvers: none (paths compared regardless)
// where weights and KV alone exceed the memory. `m` must outlive the function.
WorkspaceBudgetFn step_workspace_budget(const ModelSpec& m, const HardwareSpec& hw, double mem_util);

// ---- crossover: Q* against prefix, TP and cache dtype, beside the engines' rules ----

struct CrossoverRow {
  std::int64_t tp = 1;
  KvDtype kv = KvDtype::bf16;
  double prefix = 0;
  double flop_crossover_query = 0;      // +inf: absorb always cheaper
  double roofline_crossover_query = 0;  // +inf: absorb faster up to 1e9 query tokens (under the sweep's roofline)
  double sol_crossover_query = 0;       // the same at speed of light (= roofline_crossover_query when that is speed of light)
  std::vector<EngineOutcome> engines;  // in the sweep's policies' order
};

struct CrossoverSweepSpec {
  std::vector<double> prefixes;
  std::vector<std::int64_t> tps;
  std::vector<KvDtype> kvs;
  std::int64_t batch = 1;
  std::int64_t max_query = 4096;
  Workload base;  // causal, dtypes, DP (base.par.dp); TP and kv are set per row
  std::vector<EnginePolicy> policies;  // the engines' rules judged beside Q*
  // The workspace one op may use for a step (none: unbounded); Q* and the penalties then compare
  // feasible paths only.
  WorkspaceBudgetFn budget;
};

// DSA models: the prompt length (no prefix, `batch` prompts) from which the sparse path is faster
// than the faster dense one, beside the engines' dense-MHA limits (SGLang: index_topk keys).
struct SparseCrossoverRow {
  std::int64_t tp = 1;
  KvDtype kv = KvDtype::bf16;
  std::int64_t sparse_faster_from_tokens = 0;  // 0: not up to the search bound
};

struct CrossoverStudy {
  std::vector<CrossoverRow> rows;
  std::vector<Skip> skipped;  // TPs the model cannot run
  double asymptotic_flop_crossover_query = 0;
  std::vector<SparseCrossoverRow> sparse;  // DSA models only
};

// The smallest prompt length S (prefix 0, w's batch and layout) at which the sparse path is faster
// than both dense paths (absorb, expand), searched up to `max_tokens`; 0 when it never is.
std::int64_t sparse_crossover_tokens(const ModelSpec& m, const Workload& w, const Roofline& rf, std::int64_t max_tokens);
CrossoverStudy crossover_study(const ModelSpec& m, const Roofline& rf, const CrossoverSweepSpec& s, const Progress& progress = {});

// ---- capacity: one request, and the same GPUs laid out differently ----

struct LayoutCapacity {
  Parallelism par;
  bool requested = false;
  CapacityResult result;  // its verdict says when the layout cannot run the model
};
// The requested layout first, then the same number of GPUs as all-TP, TP with EP (MoE models) and
// all-DP attention (with EP for MoE models), each distinct, each with the reserve `reserve(par)`.
std::vector<LayoutCapacity> capacity_layouts(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& req,
                                             const std::function<Bytes(const Parallelism&)>& reserve);

struct WeightGroupRow {
  WeightGroup group = WeightGroup::attention;
  Params params{0};
  Bytes bytes{0};           // all copies
  Bytes bytes_per_rank{0};  // the rank's share
};
std::vector<WeightGroupRow> weight_groups(const ModelSpec& m, const WeightPlan& plan, const Parallelism& par);

// ---- kv: per-rank cache of the same ranks as all-TP and as all-DP attention ----

struct KvLayoutRow {
  std::string label;  // "requested", "all TP", "all DP"
  Parallelism par;
  Bytes bytes_per_token_per_rank{0};     // attention cache and indexer
  std::optional<Bytes> bytes_per_rank;   // `sequences` of `tokens` tokens, when tokens > 0
  LayoutVerdict verdict;
};
std::vector<KvLayoutRow> kv_layouts(const ModelSpec& m, KvDtype d, const Parallelism& par, std::int64_t tokens, std::int64_t sequences,
                                    std::int64_t block_size);

struct KvLayerGroupRow {
  LayerGroup group;
  Bytes bytes_per_token_per_layer{0};  // attention cache and indexer
  std::int64_t tokens_held = 0;        // of one sequence of `tokens`, block-rounded (0 without tokens)
  Bytes bytes_per_sequence{0};         // over the group's layers
};

struct KvDtypeRow {
  KvDtype kv = KvDtype::bf16;
  KvBytes per_token_per_layer;
  Bytes per_token{0};
  double ratio_to_bf16 = 0;
};

// What an MLA latent replaces: the per-head caches of the same model.
struct MlaEquivalents {
  Bytes mha_bytes_per_token_per_layer{0};  // h · (d_n + d_r + d_v) · b
  double mha_ratio = 0;                    // over the latent
  double gqa_groups = 0;                   // (r + d_r) / (2 · d_n)
  Bytes gqa8_bytes_per_token_per_layer{0};  // GQA-8 of width d_n
};

struct KvStudy {
  KvDtype kv = KvDtype::bf16;
  Parallelism par;
  std::int64_t tokens = 0, sequences = 1, block_size = 1;
  bool uniform = true;                   // every layer the same kind
  KvBytes per_token_per_layer;           // one layer, one copy (TP 1)
  KvBytes per_token;                     // all layers
  Bytes indexer_per_token_per_layer{0};
  Bytes indexer_per_token{0};
  Bytes per_token_per_rank{0};           // cache and indexer on one rank under par
  std::optional<Bytes> total_bytes;      // `sequences` of `tokens`, one copy
  std::optional<Bytes> total_bytes_per_rank;
  std::vector<KvLayerGroupRow> groups;
  std::vector<KvDtypeRow> dtypes;
  std::optional<MlaEquivalents> equivalents;
  std::vector<KvLayoutRow> layouts;
};
KvStudy kv_study(const ModelSpec& m, KvDtype d, const Parallelism& par, std::int64_t tokens, std::int64_t sequences, std::int64_t block_size);

struct CapacityStudy {
  CapacityRequest request;
  CapacityResult result;
  std::vector<WeightGroupRow> weights;
  std::vector<LayoutCapacity> layouts;
};
CapacityStudy capacity_study(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& req,
                             const std::function<Bytes(const Parallelism&)>& reserve);

// The key figures of a bundled model.
struct ModelSummary {
  ParamCounts params;
  std::int64_t sliding_layers = 0;
  Bytes cache_bytes_per_token_bf16{0};  // all layers, indexer included, windows not applied
};
ModelSummary summarize(const ModelSpec& m);

// ---- report: the whole sweep ----

struct NamedModel {
  std::string arg;  // how the user named it
  ModelSpec spec;
};

struct ReportStep {
  std::int64_t batch = 32;
  double query = 1, prefix = 32768;
  std::int64_t tp = 8;
};

struct ReportInputs {
  std::vector<NamedModel> models;
  std::vector<NamedModel> compare_models;  // KV table only
  std::vector<HardwareSpec> gpus;
  std::vector<Parallelism> layouts;
  std::vector<KvDtype> kvs;
  DType compute = DType::bf16;
  std::vector<std::int64_t> contexts;       // capacity table
  std::vector<double> sequence_contexts;    // sequences-against-context plot
  std::vector<double> prefixes;             // crossover
  std::vector<std::int64_t> crossover_tps;  // crossover and intensity
  std::int64_t batch = 32;                  // sequences per step for intensity and the crossover
  std::int64_t decode_context = 32768;
  double mem_util = 0.9;
  std::int64_t block_size = 64;
  std::int64_t batched_tokens = kDefaultBatchedTokens;  // the activation reserve's forward pass
  std::int64_t max_query = 4096;
  ReportStep roofline_step;
  std::int64_t serving_isl = 4096, serving_osl = 1024, serving_max_gpus = 64;  // the serving plan
  Seconds serving_tpot{0.05};
  // Capacity as an engine allocates it (its profile's rule and defaults; mem_util and block_size
  // passed on only when the spec sets them); none: the plain model above.
  std::optional<EngineProfile> engine;
  EngineSettings engine_settings;
  std::vector<EnginePolicy> policies;  // the dispatch rules judged beside the crossover
  std::vector<EfficiencyProfile> profiles;  // calibrated kernel efficiencies (each GPU takes its own, efficiency_for)
};

struct KvRow {
  const NamedModel* model = nullptr;
  KvDtype kv = KvDtype::bf16;
  std::optional<Bytes> bytes_per_token_per_layer;  // absent when layers differ (windows)
  Bytes bytes_per_token{0};
  Bytes indexer_bytes_per_token{0};
  Bytes cache_bytes_per_token{0};
  std::optional<Bytes> mha_equivalent_bytes_per_token;  // MLA only
  std::optional<double> mha_equivalent_ratio;
};

struct CapacityRow {
  const NamedModel* model = nullptr;
  const HardwareSpec* gpu = nullptr;
  Parallelism par;
  KvDtype kv = KvDtype::bf16;
  std::int64_t context = 0;
  CapacityResult result;
};

struct IntensityRow {
  const NamedModel* model = nullptr;
  const HardwareSpec* gpu = nullptr;
  std::int64_t tp = 1;
  KvDtype kv = KvDtype::bf16;
  PathKind path = PathKind::absorb;
  PathCost cost;  // one layer
  double ridge = 0;
};

struct ReportCrossoverRow {
  const NamedModel* model = nullptr;
  const HardwareSpec* gpu = nullptr;
  CrossoverRow row;
};

struct RooflineOpRow {
  const NamedModel* model = nullptr;
  const HardwareSpec* gpu = nullptr;
  PathKind path = PathKind::absorb;
  Op op;
  OpTime time;
};

struct ReportStudy {
  const ReportInputs* in = nullptr;
  std::vector<KvRow> kv;
  std::vector<CapacityRow> capacity;
  std::vector<CapacityRow> sequences;  // the denser context sweep of the sequences plot
  std::vector<IntensityRow> intensity;
  std::vector<ReportCrossoverRow> crossover;
  std::vector<RooflineOpRow> roofline_ops;
  std::vector<std::string> notes;  // skipped layouts and TPs, with their reasons
};
// Rows refer to `in` (models, GPUs), which must outlive the study.
ReportStudy report_study(const ReportInputs& in, const Progress& progress = {});

// The roofline a report costs a GPU with: its dense peak at the compute dtype and the hardware
// file's efficiencies.
// A report's roofline of one GPU: the calibrated default (default_roofline over in.profiles).
Roofline report_roofline(const HardwareSpec& gpu, DType compute, const std::vector<EfficiencyProfile>& profiles);

}  // namespace mlaplan
