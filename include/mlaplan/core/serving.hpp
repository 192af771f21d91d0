#pragma once
// The whole model for one serving step: every layer's projections, attention (through the path the
// engine or the optimum picks), dense FFN or MoE (router, routed experts as a grouped GEMM under EP,
// shared experts), norms, embedding, lm_head, sampling and the MTP head; the communication between
// ranks (TP all-reduce, EP dispatch and combine over NVLink and the network); the per-step overhead
// of the engine. From it: step time, TTFT or TPOT, tokens per second per GPU, and the memory check.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlaplan/core/capacity.hpp"
#include "mlaplan/core/engine_memory.hpp"
#include "mlaplan/core/engines.hpp"
#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/core/study.hpp"

namespace mlaplan {

enum class Phase { prefill, decode };
std::string_view to_string(Phase p);

// DeepEP's two kinds of all-to-all: normal (deduplicated per node, NVLink forwarding; prefill) and
// low latency (one message per token and expert; decode). auto: normal for prefill, low latency for
// decode, as DeepSeek and SGLang deploy them.
enum class EpMode { automatic, normal, low_latency };
std::string_view to_string(EpMode m);

// What a step is made of. Compute components are sums of ops; communication components are
// transfers over a link; overhead is the engine's per-step cost.
enum class StepComponent {
  embedding,
  attention_projections,  // q/kv down and up projections, o_proj (GEMMs)
  attention_core,         // the attention path's other ops (folds, attention, merges, indexer)
  dense_mlp,              // gate/up and down of the dense layers
  router,                 // the MoE gate
  routed_experts,         // grouped GEMM over the experts on the rank
  shared_experts,
  elementwise,            // RMSNorms, residual adds, the SwiGLU product
  lm_head,
  sampling,
  mtp,                    // the MTP module (one decoder layer and its projection) per draft token
  tp_allreduce,
  dp_gather,              // DP attention: tokens gathered for, and reduced after, an MLP split over every rank
  ep_dispatch,
  ep_combine,
  ep_kernels,             // under overlap: the low-latency all-to-all kernels' own SM time (send, receive hook)
  overhead,               // scheduler and launch, from the engine profile
};
inline constexpr int kStepComponentCount = static_cast<int>(StepComponent::overhead) + 1;
std::string_view to_string(StepComponent c);
// DeepSeek's profile categories: attention, gemm, moe, dispatch, combine, other, overhead (and
// allreduce, comm_kernels).
std::string_view category_of(StepComponent c);

// How an expert-parallel all-to-all kind uses the links.
struct AllToAllLink {
  double eta_scale_up = 1, eta_scale_out = 1;
  Seconds latency_intranode{0}, latency_internode{0};  // per call within one node, and across nodes
  // The kind's time while two-batch overlap computes beside it over its time alone (the normal
  // kind's normal_overlap_slowdown; 1 for the low-latency kind, whose kernels hold no SMs).
  double overlap_slowdown = 1;
};

// One all-reduce algorithm an engine runs for a TP group within one scale-up domain (the engine
// profile's tp_allreduce rows): for a group of `ranks` GPUs and messages of up to `max_bytes` per rank
// (0: any), a call of S bytes per rank takes latency + k·S / (scale_up·eta), where k is the bytes each
// rank moves over its link per byte of the message: ranks − 1 for a one-shot kernel (each rank reads
// every peer's whole buffer and reduces locally), 2(ranks − 1)/ranks for a ring or two-shot one
// (reduce-scatter, then all-gather). NCCL's protocols are rows of the second kind: its low-latency
// protocol starts sooner and streams slower than its bandwidth protocol.
struct AllReduceAlgorithm {
  double ranks = 0, max_bytes = 0;
  Seconds latency{0};
  double eta = 1;
  bool one_shot = false;
};
// The bytes each rank moves over its link per byte of the message under `a` in a group of `ranks`.
double all_reduce_link_factor(const AllReduceAlgorithm& a, double ranks);

// The links between ranks, per GPU and direction, with the efficiency a collective reaches on each.
struct LinkSpec {
  BytesPerSecond scale_up{0};    // NVLink (or the GPU's scale-up fabric) within a domain
  BytesPerSecond scale_out{0};   // the network between domains, per GPU
  double eta_scale_up = 1, eta_scale_out = 1;
  Seconds latency{0};  // per collective call
  // DeepEP's two all-to-all kinds, each with its own efficiencies and a fixed time per call that
  // grows once the call crosses the network.
  AllToAllLink low_latency, normal;
  // The engine's TP all-reduce algorithms within a scale-up domain (empty: a ring at eta_scale_up
  // plus latency, for every group size).
  std::vector<AllReduceAlgorithm> all_reduce;
  std::string source;  // the profile these efficiencies come from
};

// Bytes per value of a block-fp8 dispatch: the fp8 value and its share of one fp32 scale per 128.
inline constexpr double kBlockFp8ValueBytes = 1 + 4.0 / 128;

// bf16 activations (act_b bytes each) to fp8 with one fp32 scale per 128 values: the kernel the
// engines run before every GEMM on 128x128 block-scaled weights whose input is not already fp8, an
// elementwise op of `values` reads and writes (SGLang: sglang_per_token_group_quant_fp8; TensorRT-LLM:
// fp8_quantize_1x128 on Hopper, per_token_quant_and_transform ahead of DeepGEMM on Blackwell).
Op act_quant_op(double values, double act_b);

// One call of an expert-parallel all-to-all (dispatch or combine) as a rank sees it.
struct AllToAll {
  bool low_latency = true;  // DeepEP low-latency kind (one message per token-expert pair) or normal
  double tokens = 0;        // tokens the rank sends
  double ep = 1;            // ranks the experts are spread over
  double gpus_per_node = 8; // of them in one scale-up domain
  double hidden = 0;        // values per token
  double topk = 1;          // experts per token
  double experts = 1;       // routed experts in all
  double value_bytes = 2;   // bytes per value on the wire, scales included
  double imbalance = 1;     // busiest rank's pairs over the mean
};
struct AllToAllTime {
  Seconds time{0}, bound{0};         // with the link efficiencies and latency; at the links' peaks
  double scale_up_bytes = 0, scale_out_bytes = 0;  // each rank sends over NVLink and the network
};
AllToAllTime all_to_all_time(const AllToAll& a, const LinkSpec& l);

// One TP all-reduce of `bytes` per rank over `ranks` GPUs, `gpus_per_node` to a scale-up domain.
// Within one domain: the fastest of the engine's algorithms for a group of that size that take the
// message (LinkSpec::all_reduce), else, where the engine has none for that size, a ring at the link's
// eta_scale_up plus its latency. Across domains: a ring over the network at eta_scale_out plus the
// latency. 0 for fewer than two ranks, no bytes, or no link to carry them.
Seconds all_reduce_time(double bytes, double ranks, double gpus_per_node, const LinkSpec& l);

// What an engine adds to a step, from its profile (every number sourced there).
struct StepOverheads {
  Seconds per_step_decode{0};
  Seconds per_step_prefill{0};
  Seconds per_step_tbo_decode{0};  // added to a decode step that runs two-batch overlap
  // Busiest rank's routed token-expert pairs over the mean: one figure for every EP size, or a
  // curve of (EP, imbalance) points from the profile's moe_imbalance_by_ep.
  double moe_imbalance = 1;
  std::vector<std::pair<double, double>> moe_imbalance_by_ep;  // ascending EP
  double eta_scale_up = 1, eta_scale_out = 1;
  double comm_sms = 0;       // SMs the normal (prefill) all-to-all kernels hold while compute overlaps them
  Seconds ll_sm_per_token{0};  // SM time of the low-latency dispatch and combine kernels per token under overlap
  Seconds comm_latency{0};
  std::vector<AllReduceAlgorithm> all_reduce;  // tp_allreduce rows (LinkSpec::all_reduce)
  AllToAllLink low_latency, normal;  // DeepEP's kinds (ll_*, normal_*; default: comm_eta_*, comm_latency)
  // Non-MLA models: the kernels the engine launches apart from the attention kernel to rotate the new
  // tokens' Q and K and write their K and V into the cache, by phase (gqa_rope_and_cache_write:
  // 0 none, 1 one kernel for both, 2 a rotary kernel and a cache write, 3 a rotary kernel and a write
  // each of K and V), and whether a decode kernel that does both itself
  // (trtllm_decode_fuses_preprocessing) makes the decode ones unneeded.
  int gqa_rope_kernels_prefill = 0, gqa_rope_kernels_decode = 0;
  bool gqa_decode_kernel_fuses_rope = false;
  // Whether block-scaled fp8 dense GEMMs run DeepGEMM on a Hopper and on a Blackwell GPU (the
  // Roofline's deepgemm: its family's DeepGEMM efficiency), else the engine's own block kernels.
  bool deepgemm_hopper = false, deepgemm_blackwell = false;
  // How it launches TensorRT-LLM's GQA decode kernels (gqa_decode_xqa, gqa_decode_xqa_group,
  // gqa_decode_xqa_hopper_kernel, gqa_decode_fp8_forces_xqa, gqa_decode_multi_block): the Roofline's
  // decode, copied whole. TensorRT-LLM 1.x's launches for every engine without the keys.
  DecodeKernelRules gqa_decode;
  std::string source;  // "sglang@0.5.4+ (engines/sglang-0.5.4.json)" or why none applies
};

struct StepRequest {
  Phase phase = Phase::decode;
  Workload w;                    // the whole deployment's batch (DP splits it); dtypes; layout
  WeightPlan weights;            // how the FFN, MoE and lm_head weights are stored (fp8: fp8 GEMMs)
  std::int64_t gpus_per_node = 8;  // ranks one scale-up domain holds in this deployment
  std::int64_t mtp_draft = 0;    // speculative tokens per step from the MTP module (0: off)
  double mtp_accept = 0;         // probability each draft token is accepted
  std::optional<double> moe_imbalance;  // given (flag or measurement row); else the engine's at this EP
  // Two micro-batches per step. Normal all-to-all (prefill): one's compute overlaps the other's
  // dispatch and combine, on the SMs the communication kernels leave (DeepSeek-V3 §3.4.1). Low
  // latency (decode; its kernels hold no SMs): one's attention side overlaps the other's dispatch,
  // experts and combine (InferSim's decode overlap, models/model.py), and a layer takes at least the
  // compute of both micro-batches (they share the SMs) and at least their communication.
  bool two_batch_overlap = false;
  double comm_sms = 0;  // SMs held by the normal all-to-all under overlap (from the engine, or the flag)
  // Under overlap the low-latency kernels return once their messages are issued and a receive hook
  // collects them later (DeepEP's return_recv_hook), so the transfer leaves the SMs, but the send
  // kernel and the hook still run on them: this much per token a rank dispatches, dispatch and
  // combine together, per MoE layer (from the engine, the flag or a measurement row; 0: none).
  Seconds ll_sm_per_token{0};
  // The engine splits dense MLPs (and, without EP, routed experts) over all TP x DP ranks under
  // DP attention: tokens are gathered before and reduce-scattered after (engine profile keys
  // dense_mlp_over_dp and moe_over_dp).
  bool dense_mlp_over_dp = false, moe_over_dp = false;
  EpMode ep_mode = EpMode::automatic;
  // Host time to launch one kernel when the engine runs the step without CUDA graphs (0: launches
  // hidden, as a captured graph hides them). The host enqueues kernels (collectives included) while
  // the GPU runs the ones before; the GPU waits where the host falls behind (step_time).
  Seconds eager_launch{0};
  std::optional<EnginePolicy> policy;  // the attention dispatch rule; none: the fastest feasible path
  std::optional<Bytes> workspace_budget;
  StepOverheads overheads;
  LinkSpec links;
  std::string engine_label;  // for outputs: the engine and its dispatch backend
};

struct StepRow {
  StepComponent component = StepComponent::overhead;
  std::int64_t layers = 0;  // layers that run it (1 for once-per-step parts)
  Flops flops{0};           // per rank, all its layers
  BytesF bytes{0};          // memory traffic per rank, all its layers
  BytesF link_bytes{0};     // bytes each rank sends, all its layers (communication)
  Seconds time{0};          // all its layers
  Seconds bound{0};         // the same at speed of light (links at their nominal bandwidth)
  std::string bound_by;     // compute | memory | nvlink | network | fixed
  std::vector<OpId> ops;    // the ops it sums, in order of first appearance
};

// One kind of layer (dense, moe, mtp) and its time per layer.
struct LayerKindRow {
  std::string kind;
  std::int64_t count = 0;
  Seconds compute{0}, communication{0};
  Seconds time{0};  // per layer, after overlap
  std::array<Seconds, kStepComponentCount> by_component{};  // per layer, before overlap
};

struct StepResult {
  Phase phase = Phase::decode;
  std::vector<StepRow> rows;
  std::vector<LayerKindRow> layer_kinds;
  std::string attention_path;        // absorb, expand, chunked, sparse, split, standard
  std::string attention_detail;
  Seconds compute{0}, communication{0}, overhead{0};  // overhead: the engine's per step and launch_wait
  Seconds launch_wait{0};     // the GPU idle while the host launches kernels (eager_launch)
  Seconds overlap_saving{0};  // communication hidden under compute by two-batch overlap
  Seconds comm_kernels_sm{0};  // the low-latency all-to-all kernels' SM time under overlap (in compute)
  Seconds step_time{0};
  Seconds step_bound{0};      // every part at speed of light, no overhead, no overlap
  double sequences = 0;       // in the whole deployment
  double input_tokens = 0;    // new tokens the step processes, whole deployment
  double output_tokens = 0;   // tokens the step emits (decode: 1 + accepted drafts per sequence)
  double tokens_per_s_per_gpu = 0;
  Seconds ttft{0};            // prefill: the step
  Seconds tpot{0};            // decode: step / tokens each sequence gains
  std::int64_t gpus = 1;
  double moe_imbalance = 1;   // the one the step used (1 without EP)
  CapacityResult memory;      // weights and the batch's KV against the GPU
  double kv_tokens_per_rank = 0;  // what the batch keeps in cache on one rank
  Verdict fits;                // the batch's KV fits in the pool
  std::vector<std::string> notes;
};

// Expected distinct experts of `experts` touched by `pairs` uniformly routed token-expert pairs:
// E · (1 − (1 − 1/E)^pairs).
double experts_touched(double experts, double pairs);
// Probability a token that picks k of E experts reaches a given group of g experts:
// 1 − C(E − g, k) / C(E, k).
double group_hit_probability(double experts, double group, double k);

// One micro-batch's parts of a MoE layer under the normal all-to-all's two-batch overlap: on the
// compute stream the attention (through the router and the dispatch's quantization), the routed
// experts and the shared experts; on the communication stream the dispatch and the combine.
struct OverlapStages {
  Seconds attention{0}, experts{0}, shared{0};
  Seconds dispatch{0}, combine{0};
};
// The time of `layers` MoE layers run as two equal micro-batches a and b in the order SGLang's
// prefill overlap issues them (python/sglang/srt/batch_overlap/operations_strategy.py:104-132 at
// sgl-project/sglang@0e02cef9: yields after the dispatch's launch and after the combine's; stages
// alternate a, b with tbo_delta_stages 0), which is the schedule DeepSeek's prefill profile draws
// (deepseek-ai/profile-data@44960242 assets/prefill.jpg). Per layer l, the compute stream runs
// S_a(l−1) A_a(l) S_b(l−1) A_b(l) M_a(l) M_b(l) and the communication stream D_a(l) D_b(l) C_a(l)
// C_b(l); A_x(l) waits for C_x(l−1), D_x(l) for A_x(l), M_x(l) for D_x(l), C_x(l) for M_x(l). After
// the last layer the shared experts and both combines finish.
Seconds two_batch_pipeline(const OverlapStages& s, std::int64_t layers);

// The batch of a step: decode, `count` sequences each holding `context` keys after the step (its
// 1 + draft new tokens included); prefill, `count` prompts of `context` tokens.
SequenceGroup step_group(Phase phase, std::int64_t count, double context, std::int64_t draft);

// The request's weights: the checkpoint's own storage (none), or every linear weight in d; attention
// read in the same.
void set_step_weights(StepRequest& req, const ModelSpec& m, std::optional<WeightDtype> d);
// The request's batch, and for an MLA model the memory its expanded path's workspace may take
// (memory x mem_util − weights − the batch's cache).
void set_step_batch(StepRequest& req, const ModelSpec& m, const HardwareSpec& hw, std::vector<SequenceGroup> groups, double mem_util = 0.9);

// The parameters an engine profile gives a step; none (zeros, η = 1) for keys it leaves out.
StepOverheads step_overheads(const EngineProfile& p);
// Whether the engine runs block-scaled fp8 GEMMs on DeepGEMM on `hw` (deepgemm_hopper,
// deepgemm_blackwell by its architecture).
bool runs_deepgemm(const StepOverheads& o, const HardwareSpec& hw);
// The busiest EP rank's routed pairs over the mean at `ep` ranks: with a curve, linear in ln EP
// between its points (EP 1, a single rank, is 1), its last value past its last point; without one,
// moe_imbalance. 1 at EP 1.
double moe_imbalance_at(const StepOverheads& o, double ep);
// The request takes an engine's overheads, and the defaults the flags may override from them
// (comm_sms, ll_sm_per_token).
void use_overheads(StepRequest& req, const StepOverheads& o);
// The hardware's links with the overheads' collective efficiency and latency.
LinkSpec links_for(const HardwareSpec& hw, const StepOverheads& o);

StepResult step_time(const ModelSpec& m, const HardwareSpec& hw, const Roofline& rf, const StepRequest& req);

}  // namespace mlaplan

namespace mlaplan {

// ---- plan: the layouts and batch sizes that fit and meet latency targets ----

struct PlanRequest {
  StepRequest base;        // engine, dtypes, MTP, overlap; layout and batch are searched
  std::int64_t isl = 4096, osl = 1024;  // input and output tokens per request
  Seconds ttft_limit{0}, tpot_limit{0};  // 0: no target
  std::int64_t max_gpus = 64;            // the GPU budget (powers of two up to it are tried)
  // Held parts of the layout (0: searched): only layouts with this TP, DP or EP are tried.
  std::int64_t tp = 0, dp = 0, ep = 0;
  double rate = 0;                       // requests per second to serve (0: not asked)
  std::vector<std::int64_t> batches;     // sequences per DP replica to try
};

struct PlanRow {
  Parallelism par;
  std::int64_t gpus = 1;
  std::int64_t batch = 0;         // sequences in the deployment
  Seconds tpot{0};                // decode step at the mean context isl + osl/2, per token emitted
  Seconds ttft{0};                // prefill of one prompt per DP replica
  Seconds prefill_batch{0};       // prefill of the whole batch's prompts
  double tokens_per_s_per_gpu = 0;  // output tokens over prefill + decode of the batch, per GPU
  double decode_tokens_per_s_per_gpu = 0;
  double requests_per_s = 0;      // whole deployment
  std::int64_t gpus_for_rate = 0; // replicas of this deployment that serve `rate`, in GPUs (0: not asked)
  std::int64_t max_sequences = 0; // at isl + osl tokens each
  bool memory_limited = false;    // the batch is the most that fit in memory, not one of the tried batches
  bool meets = false;             // fits and meets both targets
  bool pareto = false;            // no other fitting row is both faster per token and higher in throughput
  std::string why;                // why it does not meet the targets
};

struct PlanResult {
  std::vector<PlanRow> rows;           // every layout and batch that fits in memory
  std::vector<Skip> skipped;           // layouts the model cannot run, or where no batch fits
  std::optional<std::size_t> best;     // highest throughput per GPU among rows that meet the targets
  std::optional<std::size_t> fewest_for_rate;  // fewest GPUs that serve the rate among those rows
};

// The batches per DP replica plan tries up to `most`: the powers of two below it, and `most` itself
// (a benchmark's static batch, 120 or 896, need not be one). Empty for `most` < 1.
std::vector<std::int64_t> batch_ladder(std::int64_t most);
// The batches per DP replica a layout is timed at: those of `tried` that fit (at most `fit`
// sequences per replica), and `fit` itself where a tried batch is larger and `fit` is not tried.
std::vector<std::int64_t> plan_batches(const std::vector<std::int64_t>& tried, std::int64_t fit);

// Whether a layout keeps the request's held TP, DP and EP.
bool holds_layout(const PlanRequest& req, const Parallelism& par);
PlanResult plan_layouts(const ModelSpec& m, const HardwareSpec& hw, const Roofline& rf, const PlanRequest& req);

// The fewest GPUs (powers of two up to max_gpus; the smallest layout of that count that holds them)
// that hold `sequences` sequences of `context` tokens; none when even max_gpus do not.
struct MemoryPlanRow {
  Parallelism par;
  CapacityResult result;
};
std::vector<MemoryPlanRow> plan_memory(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& base, std::int64_t sequences,
                                       std::int64_t max_gpus);

// ---- the report's serving section: the first model on the first GPU ----

struct ServingReport {
  const NamedModel* model = nullptr;
  const HardwareSpec* gpu = nullptr;
  StepRequest step_request;  // a decode step at the report's batch, decode context and roofline TP
  StepResult step;
  PlanRequest plan_request;  // the spec's request lengths, TPOT target and GPU budget
  PlanResult plan;
};
// None when the first GPU cannot join the step's GPUs (no link bandwidths in its file); `why` says so.
std::optional<ServingReport> serving_report(const ReportInputs& in, std::string& why);

}  // namespace mlaplan
