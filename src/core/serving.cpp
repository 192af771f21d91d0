#include "mlaplan/core/serving.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mlaplan/core/study.hpp"

namespace mlaplan {

std::string_view to_string(Phase p) { return p == Phase::prefill ? "prefill" : "decode"; }

std::string_view to_string(EpMode m) {
  switch (m) {
    case EpMode::automatic: return "auto";
    case EpMode::normal: return "normal";
    case EpMode::low_latency: return "low_latency";
  }
  return "?";
}

std::string_view to_string(StepComponent c) {
  switch (c) {
    case StepComponent::embedding: return "embedding";
    case StepComponent::attention_projections: return "attention_projections";
    case StepComponent::attention_core: return "attention_core";
    case StepComponent::dense_mlp: return "dense_mlp";
    case StepComponent::router: return "router";
    case StepComponent::routed_experts: return "routed_experts";
    case StepComponent::shared_experts: return "shared_experts";
    case StepComponent::elementwise: return "elementwise";
    case StepComponent::lm_head: return "lm_head";
    case StepComponent::sampling: return "sampling";
    case StepComponent::mtp: return "mtp";
    case StepComponent::tp_allreduce: return "tp_allreduce";
    case StepComponent::dp_gather: return "dp_gather";
    case StepComponent::ep_dispatch: return "ep_dispatch";
    case StepComponent::ep_combine: return "ep_combine";
    case StepComponent::ep_kernels: return "ep_kernels";
    case StepComponent::overhead: return "overhead";
  }
  return "?";
}

std::string_view category_of(StepComponent c) {
  switch (c) {
    case StepComponent::attention_core: return "attention";
    case StepComponent::attention_projections:
    case StepComponent::dense_mlp:
    case StepComponent::router:
    case StepComponent::shared_experts:
    case StepComponent::lm_head:
    case StepComponent::mtp: return "gemm";
    case StepComponent::routed_experts: return "moe";
    case StepComponent::ep_dispatch: return "dispatch";
    case StepComponent::ep_combine: return "combine";
    case StepComponent::ep_kernels: return "comm_kernels";
    case StepComponent::tp_allreduce:
    case StepComponent::dp_gather: return "allreduce";
    case StepComponent::embedding:
    case StepComponent::elementwise:
    case StepComponent::sampling: return "other";
    case StepComponent::overhead: return "overhead";
  }
  return "?";
}

double experts_touched(double experts, double pairs) {
  if (experts <= 0 || pairs <= 0) return 0;
  return experts * (1 - std::pow(1 - 1 / experts, pairs));
}

Seconds two_batch_pipeline(const OverlapStages& s, std::int64_t layers) {
  double compute = 0, comm = 0;    // when each stream is next free
  double combined[2] = {0, 0};     // when micro-batch x's last combine ends
  double shared = 0;               // the previous layer's shared experts, still to run
  for (std::int64_t l = 0; l < layers; ++l) {
    double attended[2], dispatched[2];
    for (int x = 0; x < 2; ++x) {
      compute += shared;
      compute = std::max(compute, combined[x]) + s.attention.value;
      attended[x] = compute;
    }
    for (int x = 0; x < 2; ++x) dispatched[x] = comm = std::max(comm, attended[x]) + s.dispatch.value;
    for (int x = 0; x < 2; ++x) {
      compute = std::max(compute, dispatched[x]) + s.experts.value;
      combined[x] = comm = std::max(comm, compute) + s.combine.value;
    }
    shared = s.shared.value;
  }
  if (layers > 0) compute += 2 * shared;
  return Seconds{std::max({compute, combined[0], combined[1]})};
}

double group_hit_probability(double experts, double group, double k) {
  if (group >= experts) return 1;
  // C(E − g, k) / C(E, k) = Π_{i<k} (E − g − i) / (E − i)
  double miss = 1;
  for (double i = 0; i < k; ++i) miss *= std::max(0.0, experts - group - i) / (experts - i);
  return 1 - miss;
}

namespace {

// Where a MoE layer's op runs in the normal all-to-all's two-batch overlap (two_batch_pipeline).
enum class Stage { attention, shared, experts };

// One op of the step: what it is part of, and how many times a step runs it on a rank.
struct Part {
  StepComponent component;
  Op op;
  double count = 1;
  bool expert = false;  // a routed expert's GEMM reported under another component (the MTP module's)
  Stage stage = Stage::attention;
};

// A transfer: bytes each rank sends over the scale-up and the scale-out link in one call.
struct Transfer {
  StepComponent component;
  double scale_up_bytes = 0, scale_out_bytes = 0;
  double count = 1;
  // An all-to-all kind has its own link use; a TP all-reduce the time of the engine's fastest
  // algorithm, found when the transfer is made (fastest_all_reduce), and the ring's bytes, its bound.
  enum class Use { collective, low_latency, normal, all_reduce } use = Use::collective;
  Seconds call{0};
  double ring_bytes = 0;
};

struct Timed {
  Seconds time{0}, bound{0};
  std::string bound_by;
};

Timed time_op(const Op& op, const Roofline& rf, const Roofline& sol) {
  const OpTime t = op_time(op, rf);
  return {t.time, op_time(op, sol).time, t.compute_bound ? "compute" : "memory"};
}

}  // namespace

double all_reduce_link_factor(const AllReduceAlgorithm& a, double ranks) { return a.one_shot ? ranks - 1 : 2 * (ranks - 1) / ranks; }

namespace {

// The fastest of the engine's all-reduce algorithms for a call (all_reduce_time): its time and the
// bytes each rank moves over its link (a one-shot kernel's (ranks − 1)·S, a ring's 2(ranks − 1)/ranks·S).
struct AllReduceCall {
  double time = 0, link_bytes = 0;
};

AllReduceCall fastest_all_reduce(double bytes, double ranks, double gpus_per_node, const LinkSpec& l) {
  if (ranks < 2 || bytes <= 0) return {};
  const double ring = 2 * (ranks - 1) / ranks * bytes;
  if (ranks > gpus_per_node)
    return {l.scale_out.value > 0 ? l.latency.value + ring / (l.scale_out.value * l.eta_scale_out) : 0, ring};
  if (l.scale_up.value <= 0) return {0, ring};
  std::optional<AllReduceCall> best;
  for (const AllReduceAlgorithm& a : l.all_reduce)
    if (a.ranks == ranks && (a.max_bytes <= 0 || bytes <= a.max_bytes)) {
      const double moved = all_reduce_link_factor(a, ranks) * bytes;
      const double t = a.latency.value + moved / (l.scale_up.value * a.eta);
      if (!best || t < best->time) best = AllReduceCall{t, moved};
    }
  if (!best) best = AllReduceCall{l.latency.value + ring / (l.scale_up.value * l.eta_scale_up), ring};
  return *best;
}

}  // namespace

Seconds all_reduce_time(double bytes, double ranks, double gpus_per_node, const LinkSpec& l) {
  return Seconds{fastest_all_reduce(bytes, ranks, gpus_per_node, l).time};
}

namespace {

Timed time_transfer(const Transfer& x, const LinkSpec& l) {
  if (x.use == Transfer::Use::all_reduce) {
    // The bound: the ring's bytes at the link's peak, whichever algorithm the engine runs.
    const bool across = x.scale_out_bytes > 0;
    const double link = across ? l.scale_out.value : l.scale_up.value;
    if (link <= 0) return {};
    return {x.call, Seconds{x.ring_bytes / link}, across ? "network" : "nvlink"};
  }
  const AllToAllLink* a = x.use == Transfer::Use::low_latency ? &l.low_latency : x.use == Transfer::Use::normal ? &l.normal : nullptr;
  const double eta_up = a ? a->eta_scale_up : l.eta_scale_up;
  const double eta_out = a ? a->eta_scale_out : l.eta_scale_out;
  const Seconds latency = !a ? l.latency : x.scale_out_bytes > 0 ? a->latency_internode : a->latency_intranode;
  const double up = x.scale_up_bytes > 0 ? x.scale_up_bytes / (l.scale_up.value * eta_up) : 0;
  const double out = x.scale_out_bytes > 0 ? x.scale_out_bytes / (l.scale_out.value * eta_out) : 0;
  const double up_sol = x.scale_up_bytes > 0 ? x.scale_up_bytes / l.scale_up.value : 0;
  const double out_sol = x.scale_out_bytes > 0 ? x.scale_out_bytes / l.scale_out.value : 0;
  if (up <= 0 && out <= 0) return {};
  return {Seconds{std::max(up, out)} + latency, Seconds{std::max(up_sol, out_sol)}, out > up ? "network" : "nvlink"};
}

// The bytes one all-to-all call sends from a rank over each link.
Transfer all_to_all_transfer(StepComponent component, const AllToAll& a) {
  Transfer t{component};
  t.use = a.low_latency ? Transfer::Use::low_latency : Transfer::Use::normal;
  const double g = std::min(a.ep, a.gpus_per_node);
  const double nodes = std::ceil(a.ep / g);
  const double b = a.hidden * a.value_bytes;
  if (a.low_latency) {
    // One message per (token, expert) on another rank; those on other nodes cross the network.
    t.scale_out_bytes = a.tokens * a.topk * a.imbalance * (a.ep - g) / a.ep * b;
    t.scale_up_bytes = a.tokens * a.topk * a.imbalance * (g - 1) / a.ep * b;
  } else {
    // Normal: a token crosses the network once per other node it reaches, then NVLink carries it
    // to every rank of the node that needs it.
    t.scale_out_bytes = nodes > 1 ? a.tokens * (nodes - 1) * group_hit_probability(a.experts, a.experts / nodes, a.topk) * a.imbalance * b : 0;
    t.scale_up_bytes = a.tokens * nodes * (g - 1) * group_hit_probability(a.experts, a.experts / a.ep, a.topk) * a.imbalance * b;
  }
  return t;
}

// An elementwise pass over `values` activations: reads `reads` tensors of them and writes `writes`.
Op elementwise(OpId id, double values, double act_b, double reads = 1, double writes = 1) {
  Op op;
  op.id = id;
  op.flops = Flops{values};
  op.bytes_read = BytesF{reads * values * act_b};
  op.bytes_written = BytesF{writes * values * act_b};
  return op;
}

// The MLP's activation over its up GEMM's output, `values` = rows·width: gated (SwiGLU), it reads the
// gate and up halves, [rows, 2·width], and writes silu(gate)·up, [rows, width] (SGLang's
// SiluAndMul.forward_cuda, sgl_kernel silu_and_mul with d = x.shape[-1] // 2,
// python/sglang/srt/layers/activation.py@eb118d88:60-64; vLLM's SiluAndMul,
// vllm/model_executor/layers/activation.py); ungated, it reads the up projection alone.
Op swiglu(double values, double act_b, bool gated = true) { return elementwise(OpId::swiglu, values, act_b, gated ? 2 : 1); }

// A decoder layer's residual norm: one kernel adds the residual and normalises, reading the hidden
// state and the residual and writing both back (SGLang's RMSNorm.forward_cuda with a residual,
// sgl_kernel fused_add_rmsnorm, python/sglang/srt/layers/layernorm.py@eb118d88:71-77, called as
// `hidden_states, residual = layernorm(hidden_states, residual)` by layers/communicator.py:205, :383
// and the final `self.norm(hidden_states, residual)`, models/deepseek_v2.py:2060; vLLM's
// fused_add_rms_norm, vllm/model_executor/layers/layernorm.py). `values` = tokens·hidden.
Op residual_norm(double values, double act_b) { return elementwise(OpId::rms_norm, values, act_b, 2, 2); }

// A linear layer on weights of dtype `d` (fp8 runs it at the fp8 peak).
Op gemm(OpId id, double tokens, double in, double out, double weight_b, double act_b, WeightDtype d) {
  Op op = gemm_op(id, tokens, in, out, weight_b, act_b);
  set_weight_precision(op, d);
  return op;
}

// The routed experts of one MoE layer on the busiest rank, as one grouped GEMM per projection over
// the `touched` experts it holds: `pairs` token-expert rows, each expert's weights read once.
Op grouped(OpId id, double pairs, double touched, double in, double out, double weight_b, double act_b, WeightDtype d) {
  Op op = grouped_gemm_op(id, pairs, touched, in, out, weight_b, act_b);
  set_weight_precision(op, d);
  return op;
}

// The busier of two micro-batches: each group's sequences on a rank, ⌈B/DP⌉, halved and rounded up
// (the step is timed as two of it).
Workload micro_batch(const Workload& w) {
  Workload h = w;
  const std::int64_t dp = w.par.dp;
  for (SequenceGroup& g : h.groups) {
    const std::int64_t per_rank = (g.count + dp - 1) / dp;
    g.count = (per_rank + 1) / 2 * dp;
  }
  return h;
}

// Two micro-batches need two sequences on a rank.
bool can_split(const Workload& w) {
  double per_rank = 0;
  for (const SequenceGroup& g : w.groups) per_rank += static_cast<double>((g.count + w.par.dp - 1) / w.par.dp);
  return per_rank >= 2;
}

// The attention path one layer kind runs on the workload: the policy's choice, or the fastest
// feasible path.
const PathResult& chosen_path(const CostStudy& st, const std::optional<EnginePolicy>& policy) {
  if (policy && !st.engines.empty()) return st.engines.front().path;
  const PathResult* best = &st.paths.front();
  for (const PathResult& p : st.paths)
    if (p.feasible.ok() && (!best->feasible.ok() || p.cost.time < best->cost.time)) best = &p;
  return *best;
}

struct LayerParts {
  std::vector<Part> ops;
  std::vector<Transfer> transfers;
  Seconds ll_sm{0};  // the low-latency all-to-all kernels' SM time, all micro-batches (counted under overlap)
};

// Everything one step runs on the busiest rank, by layer kind.
struct StepPlan {
  LayerParts dense, moe, mtp, once;
  std::int64_t dense_layers = 0, moe_layers = 0, mtp_runs = 0;
};

struct Ctx {
  const ModelSpec& m;
  const StepRequest& req;
  const Roofline& rf;
  const HardwareSpec& hw;
  double act_b = 2, mlp_wb = 2, dense_wb = 2;
  WeightDtype mlp_weights = WeightDtype::bf16;        // the MLP's (and experts') linear weights
  WeightDtype attention_weights = WeightDtype::bf16;  // the attention projections' (a checkpoint may keep them dense)
  double tp = 1, dp = 1, ep = 1, ranks = 1;
  double imbalance = 1;  // the busiest EP rank's pairs over the mean
};

// The attention of one layer (per layer: the path's whole-model ops over the model's layers). Its
// GEMMs (the projections, MLA's kv_b_proj, DSA's indexer projection: DeepGEMM kernels in DeepSeek's
// and SGLang's prefill) are its projections, the rest its attention kernels. The path engine runs the
// linear layers at the attention weights' precision.
void add_attention(LayerParts& L, const PathResult& path, double layers, double micro) {
  for (const OpRow& r : path.ops)
    L.ops.push_back({r.op.kind() == OpKind::gemm ? StepComponent::attention_projections : StepComponent::attention_core, r.op,
                     micro * static_cast<double>(r.layers) / layers});
}

void add_allreduce(const Ctx& c, LayerParts& L, double tokens, double width, double bytes_per_value, double count) {
  if (c.tp <= 1) return;
  const double payload = tokens * width * bytes_per_value;
  Transfer t{StepComponent::tp_allreduce};
  const double domain = static_cast<double>(c.req.gpus_per_node);
  // The bytes the engine's algorithm moves (a one-shot kernel reads every peer's buffer).
  const AllReduceCall call = fastest_all_reduce(payload, c.tp, domain, c.req.links);
  (c.tp <= domain ? t.scale_up_bytes : t.scale_out_bytes) = call.link_bytes;
  t.use = Transfer::Use::all_reduce;
  t.call = Seconds{call.time};
  t.ring_bytes = 2 * (c.tp - 1) / c.tp * payload;
  t.count = count;
  L.transfers.push_back(t);
}

// The layout the weights are stored in: routed experts over every rank where the engine splits them
// so under DP attention without EP (the same bytes per rank as EP over all ranks).
Parallelism memory_layout(const StepRequest& req, Parallelism par) {
  if (req.moe_over_dp && par.dp > 1 && par.ep == 1) par.ep = par.ranks();
  return par;
}

// Capacity's request for the step's weights and `context` tokens per sequence on a rank, with an
// activation reserve for `tokens` per forward pass and experts stored as the engine shards them.
CapacityRequest capacity_request(const ModelSpec& m, const StepRequest& req, const Parallelism& par, std::int64_t context, std::int64_t tokens,
                                 double mem_util = 0.9) {
  CapacityRequest cr;
  cr.kv_dtype = req.w.kv;
  cr.weights = req.weights;
  cr.par = memory_layout(req, par);
  cr.mem_util = mem_util;
  cr.context = context;
  cr.reserve = activation_reserve_estimate(m, par, tokens);
  return cr;
}

bool low_latency(const StepRequest& req) {
  return req.ep_mode == EpMode::low_latency || (req.ep_mode == EpMode::automatic && req.phase == Phase::decode);
}

// DP attention with an MLP split over every rank: all-gather the ranks' tokens before it and
// reduce-scatter its output after, each (R − 1)/R of the gathered activations per rank.
void add_dp_gather(const Ctx& c, LayerParts& L, double tokens, double width, double count) {
  const double sent = 2 * (c.ranks - 1) / c.ranks * tokens * c.dp * width * c.act_b;
  Transfer t{StepComponent::dp_gather};
  (c.ranks <= static_cast<double>(c.req.gpus_per_node) ? t.scale_up_bytes : t.scale_out_bytes) = sent;
  t.count = count;
  L.transfers.push_back(t);
}

// bf16 activations to fp8 with one fp32 scale per 128 values, the kernel before every GEMM on
// 128x128 block-scaled weights whose input is not already fp8 (SGLang at v0.4.9.post2, commit eb118d88:
// sglang_per_token_group_quant_fp8, python/sglang/srt/layers/quantization/fp8_utils.py:238).
void add_quant(const Ctx& c, LayerParts& L, double values, double micro) {
  L.ops.push_back({StepComponent::elementwise, act_quant_op(values, c.act_b), micro});
}

// MLA's kernels around the attention path, per layer of `tokens` tokens per rank (SGLang's
// DeepseekV2AttentionMLA at v0.4.9.post2, python/sglang/srt/models/deepseek_v2.py): RMSNorms of the
// query latent and the KV latent (:1212-1213), RoPE on every head's query part and the shared key
// part in one in-place kernel (:1261), the latent row stored into the paged cache
// (set_mla_kv_buffer, mem_cache/memory_pool.py:893), and with block-fp8 weights the quantization
// before the fused q_a/kv_a projection, q_b and o_proj.
void add_mla_glue(const Ctx& c, LayerParts& L, double tokens, double micro) {
  const ModelSpec& m = c.m;
  const MlaDims& a = *m.mla;
  const double heads = static_cast<double>(m.heads) / c.tp;
  const double r = static_cast<double>(a.kv_lora_rank), d_r = static_cast<double>(a.qk_rope_head_dim);
  const double r_q = static_cast<double>(a.q_lora_rank);
  if (r_q > 0) L.ops.push_back({StepComponent::elementwise, elementwise(OpId::rms_norm, tokens * r_q, c.act_b), micro});
  L.ops.push_back({StepComponent::elementwise, elementwise(OpId::rms_norm, tokens * r, c.act_b), micro});
  L.ops.push_back({StepComponent::elementwise, elementwise(OpId::rope, tokens * (heads + 1) * d_r, c.act_b), micro});
  Op store;
  store.id = OpId::kv_store;
  store.bytes_read = BytesF{tokens * (r + d_r) * c.act_b};
  store.bytes_written = BytesF{tokens * static_cast<double>(mla_kv_bytes_per_token_per_layer(a, c.req.w.kv).total().value)};
  L.ops.push_back({StepComponent::elementwise, store, micro});
  if (c.attention_weights == WeightDtype::fp8) {
    add_quant(c, L, tokens * static_cast<double>(m.hidden), micro);
    if (r_q > 0) add_quant(c, L, tokens * r_q, micro);
    add_quant(c, L, tokens * heads * static_cast<double>(a.v_head_dim), micro);
  }
}

// The expanded path's keys are assembled before the attention: kv_b_proj writes each head's K_nope
// and V side by side, and the engines copy K_nope into a key buffer of width d_n + d_r whose RoPE part
// the broadcast fills (SGLang at v0.4.9.post2, python/sglang/srt/models/deepseek_v2.py, forward_normal
// and the chunked-prefix loop: k = torch.empty(...); k[..., :qk_nope_head_dim] = k_nope; vLLM's
// concat_and_cast_mha_k; DeepSeek's own inference/model.py: torch.cat([k_nope, k_pe.expand(...)])).
// V stays a strided view of kv_b_proj's output. Per expanded key and head: d_n values read and written.
// One copy for each up-projection among the layer's parts from `first` on, as often as it runs.
void add_key_assembly(const Ctx& c, LayerParts& L, std::size_t first) {
  const MlaDims& a = *c.m.mla;
  const double d_n = static_cast<double>(a.qk_nope_head_dim), d_v = static_cast<double>(a.v_head_dim);
  for (std::size_t i = first, end = L.ops.size(); i < end; ++i) {
    const Part up = L.ops[i];  // a copy: push_back below may reallocate
    if (up.op.id != OpId::kv_up_proj && up.op.id != OpId::kv_up_proj_chunk) continue;
    Op copy;
    copy.id = OpId::k_nope_copy;
    copy.bytes_read = BytesF{up.op.bytes_written.value * d_n / (d_n + d_v)};  // kv_b_proj's output: K_nope and V per head
    copy.bytes_written = copy.bytes_read;
    copy.tiling.launches = up.op.tiling.launches;  // one copy per chunk
    L.ops.push_back({StepComponent::elementwise, copy, up.count});
  }
}

// A GQA/MHA model's RoPE and cache write, where the engine runs them in kernels of their own
// (StepOverheads::gqa_rope_kernels_*): by the step's phase, over its `tokens` new tokens per rank. In
// a decode step, layers whose attention kernel does both itself (TensorRT-LLM's MMHA, or XQA's QGMMA
// over an fp8 cache on Hopper: trtllm_decode_fuses_preprocessing on the path's decode launch for
// those layers; a model of sliding-window and full layers has one launch for each) run none.
void add_gqa_rope(const Ctx& c, LayerParts& L, const PathResult& path, double tokens, double micro) {
  const StepOverheads& o = c.req.overheads;
  const bool decode = c.req.phase == Phase::decode;
  double share = 1;  // of the layers that run the kernels
  if (decode && o.gqa_decode_kernel_fuses_rope) {
    const bool fp8_cache = c.req.w.kv == KvDtype::fp8 || c.req.w.kv == KvDtype::fp8_flashmla;
    double launched = 0, fused = 0;
    for (const OpRow& r : path.ops) {
      if (r.op.kind() != OpKind::attention || !r.op.tiling.decode_kernel) continue;
      launched += static_cast<double>(r.layers);
      const std::optional<Op> as_run = as_launched(r.op, c.rf);  // as the engine's XQA generation launches it
      if (trtllm_decode_fuses_preprocessing(c.hw, (as_run ? *as_run : r.op).tiling, fp8_cache, c.rf.decode.xqa_hopper_kernel)) fused += static_cast<double>(r.layers);
    }
    if (launched > 0) share = 1 - fused / launched;
  }
  if (!(share > 0)) return;
  const ModelSpec& m = c.m;
  const std::int64_t kv_heads = kv_heads_per_rank(m, c.req.w.par.tp);
  const double cache_b = static_cast<double>(gqa_kv_bytes_per_token_per_layer(kv_heads, m.head_dim, c.req.w.kv).total().value);
  for (const Op& op : gqa_rope_and_cache_write(decode ? o.gqa_rope_kernels_decode : o.gqa_rope_kernels_prefill, tokens,
                                               static_cast<double>(m.heads) / c.tp, static_cast<double>(kv_heads), static_cast<double>(m.head_dim),
                                               c.act_b, cache_b))
    L.ops.push_back({StepComponent::elementwise, op, micro * share});
}

// One layer's attention of `tokens` new tokens per rank: the path's ops and the kernels around them
// (MLA's glue; a GQA model's RoPE and cache write where the engine runs them apart; block-fp8 QKV
// and output projections quantise their inputs first, as the MLP's GEMMs do).
void add_attention_layer(const Ctx& c, LayerParts& L, const PathResult& path, double tokens, double layers, double micro) {
  const std::size_t first = L.ops.size();
  add_attention(L, path, layers, micro);
  if (c.m.is_mla()) {
    add_mla_glue(c, L, tokens, micro);
    add_key_assembly(c, L, first);
    return;
  }
  add_gqa_rope(c, L, path, tokens, micro);
  if (c.m.qk_norm) {
    // Qwen3's and Gemma-3's per-head RMSNorm of the queries and of the keys, a kernel each over
    // [tokens · heads, head_dim] (SGLang's Qwen3Attention._apply_qk_norm, models/qwen3.py@eb118d88:125-145;
    // a layout copy an engine makes first, where the heads are a strided view, is not counted).
    const double d = static_cast<double>(c.m.head_dim);
    L.ops.push_back({StepComponent::elementwise, elementwise(OpId::rms_norm, tokens * static_cast<double>(c.m.heads) / c.tp * d, c.act_b), micro});
    L.ops.push_back({StepComponent::elementwise, elementwise(OpId::rms_norm, tokens * static_cast<double>(kv_heads_per_rank(c.m, c.req.w.par.tp)) * d, c.act_b), micro});
  }
  if (c.attention_weights == WeightDtype::fp8) {
    add_quant(c, L, tokens * static_cast<double>(c.m.hidden), micro);
    add_quant(c, L, tokens * static_cast<double>(c.m.heads) / c.tp * static_cast<double>(c.m.head_dim), micro);
  }
}

// Norms, the dense or MoE MLP and its communication for one layer of `tokens` tokens per rank.
void add_mlp(const Ctx& c, LayerParts& L, bool moe, double tokens, double micro) {
  const ModelSpec& m = c.m;
  const double h = static_cast<double>(m.hidden);
  const bool quant = c.mlp_weights == WeightDtype::fp8;  // an fp8 quantization kernel before each GEMM
  // Two residual norms per layer (before attention and before the MLP); Gemma's extra two, after
  // the attention and after the MLP, normalise without a residual. The first layer's input norm has
  // no residual yet: the step's once-only norm stands for it (see step_time).
  const double norms = static_cast<double>(m.norms_per_layer), residual_norms = std::min(2.0, norms);
  L.ops.push_back({StepComponent::elementwise, residual_norm(tokens * h, c.act_b), micro * residual_norms});
  if (norms > residual_norms) L.ops.push_back({StepComponent::elementwise, elementwise(OpId::rms_norm, tokens * h, c.act_b), micro * (norms - residual_norms)});
  add_allreduce(c, L, tokens, h, c.act_b, micro);  // after o_proj
  if (!moe || !m.moe) {
    // Over every rank (DP attention, the engine's rule, without EP): the gathered tokens, 1/R of the width.
    const bool over_dp = c.req.dense_mlp_over_dp && c.dp > 1 && c.ep <= 1;
    const double rows = over_dp ? tokens * c.dp : tokens;
    const double inter = static_cast<double>(m.intermediate) / (over_dp ? c.ranks : c.tp);
    const double up = (m.gated_mlp ? 2 : 1) * inter;
    if (quant) add_quant(c, L, rows * h, micro);
    L.ops.push_back({StepComponent::dense_mlp, gemm(OpId::dense_gate_up, rows, h, up, c.mlp_wb, c.act_b, c.mlp_weights), micro});
    L.ops.push_back({StepComponent::elementwise, swiglu(rows * inter, c.act_b, m.gated_mlp), micro});
    if (quant) add_quant(c, L, rows * inter, micro);
    L.ops.push_back({StepComponent::dense_mlp, gemm(OpId::dense_down, rows, inter, h, c.mlp_wb, c.act_b, c.mlp_weights), micro});
    if (over_dp)
      add_dp_gather(c, L, tokens, h, micro);
    else
      add_allreduce(c, L, tokens, h, c.act_b, micro);
    return;
  }
  const MoeSpec& e = *m.moe;
  const double E = static_cast<double>(e.routed_experts), k = static_cast<double>(e.experts_per_token);
  L.ops.push_back({StepComponent::router, gemm(OpId::router, tokens, h, E, c.dense_wb, c.act_b, WeightDtype::bf16), micro});
  // The logits to each token's top-k experts and their weights (int32 ids, fp32 weights); SGLang's
  // biased grouped top-k is one kernel (moe_fused_gate, layers/moe/topk.py:327 at v0.4.9.post2).
  Op gate;
  gate.id = OpId::topk_gate;
  gate.flops = Flops{tokens * E};
  gate.bytes_read = BytesF{tokens * E * c.act_b};
  gate.bytes_written = BytesF{tokens * k * 8};
  L.ops.push_back({StepComponent::elementwise, gate, micro});
  // Marks the ops pushed since `from` as run in `stage`.
  auto in_stage = [&L](std::size_t from, Stage stage) {
    for (std::size_t i = from; i < L.ops.size(); ++i) L.ops[i].stage = stage;
  };
  if (e.shared_experts > 0) {
    const std::size_t from = L.ops.size();
    const double inter = static_cast<double>(e.shared_experts * e.expert_intermediate) / c.tp;
    if (quant) add_quant(c, L, tokens * h, micro);
    L.ops.push_back({StepComponent::shared_experts, gemm(OpId::shared_gate_up, tokens, h, 2 * inter, c.mlp_wb, c.act_b, c.mlp_weights), micro});
    L.ops.push_back({StepComponent::elementwise, swiglu(tokens * inter, c.act_b), micro});
    if (quant) add_quant(c, L, tokens * inter, micro);
    L.ops.push_back({StepComponent::shared_experts, gemm(OpId::shared_down, tokens, inter, h, c.mlp_wb, c.act_b, c.mlp_weights), micro});
    in_stage(from, Stage::shared);
    // The shared experts' output plus the routed experts' (SGLang: x.add_(routed), deepseek_v2.py:731).
    Op sum;
    sum.id = OpId::moe_sum;
    sum.flops = Flops{tokens * h};
    sum.bytes_read = BytesF{2 * tokens * h * c.act_b};
    sum.bytes_written = BytesF{tokens * h * c.act_b};
    L.ops.push_back({StepComponent::elementwise, sum, micro});
  }
  const double imb = c.imbalance;
  const double width = static_cast<double>(e.expert_intermediate);
  if (c.ep > 1) {
    // EP: the ranks of a TP group each dispatch a 1/TP share of its tokens; every rank holds E/EP
    // whole experts and receives, on average, tokens·DP·k / ranks pairs (× the imbalance).
    const double send = tokens / c.tp;
    const double local = E / c.ep;
    const double pairs = send * k * imb;
    const double touched = experts_touched(local, pairs);
    const bool ll = low_latency(c.req);
    // Normal mode quantizes the tokens before dispatching them in fp8 and the SwiGLU output before
    // the down GEMM, each its own kernel (SGLang: token_dispatcher.py:247, ep_moe/layer.py:1587);
    // the low-latency kernels quantize inside the dispatch and the SwiGLU.
    if (quant && !ll) add_quant(c, L, send * h, micro);
    const std::size_t from = L.ops.size();
    L.ops.push_back({StepComponent::routed_experts, grouped(OpId::expert_gate_up, pairs, touched, h, 2 * width, c.mlp_wb, c.act_b, c.mlp_weights), micro});
    Op act = swiglu(pairs * width, c.act_b);
    // The low-latency path's SwiGLU writes fp8 and its scales itself (SGLang's forward_deepgemm_masked:
    // silu_and_mul_masked_post_quant_fwd, layers/moe/ep_moe/layer.py@eb118d88:1660).
    if (quant && ll) act.bytes_written = BytesF{pairs * width * kBlockFp8ValueBytes};
    L.ops.push_back({StepComponent::elementwise, act, micro});
    if (quant && !ll) add_quant(c, L, pairs * width, micro);
    L.ops.push_back({StepComponent::routed_experts, grouped(OpId::expert_down, pairs, touched, width, h, c.mlp_wb, c.act_b, c.mlp_weights), micro});
    const double dispatch_vb = is_fp8(c.mlp_weights) ? kBlockFp8ValueBytes : c.act_b;
    const double dispatch_b = h * dispatch_vb;
    for (auto [component, vb] : {std::pair{StepComponent::ep_dispatch, dispatch_vb}, std::pair{StepComponent::ep_combine, 2.0}}) {  // combine: bf16
      const AllToAll a{.low_latency = ll, .tokens = send, .ep = c.ep, .gpus_per_node = static_cast<double>(c.req.gpus_per_node),
                       .hidden = h, .topk = k, .experts = E, .value_bytes = vb, .imbalance = imb};
      Transfer t = all_to_all_transfer(component, a);
      t.count = micro;
      L.transfers.push_back(t);
    }
    if (ll) L.ll_sm += c.req.ll_sm_per_token * (send * micro);
    if (!ll) {
      // Normal mode delivers each token once to every rank holding one of its experts; the engine
      // copies it into one row per (token, local expert) before the grouped GEMMs and sums the
      // weighted expert rows back into one row per token after them (SGLang's DeepEPMoE
      // forward_deepgemm_contiguous: ep_scatter, then ep_gather). Low-latency mode receives the
      // per-expert layout itself and its combine sums in the kernel.
      const double recv = send * c.ep * group_hit_probability(E, local, k) * imb;
      Op scatter;
      scatter.id = OpId::expert_scatter;
      scatter.bytes_read = BytesF{recv * dispatch_b};
      scatter.bytes_written = BytesF{pairs * dispatch_b};
      Op gather;
      gather.id = OpId::expert_gather;
      gather.flops = Flops{2 * pairs * h};
      gather.bytes_read = BytesF{pairs * h * c.act_b};
      gather.bytes_written = BytesF{recv * h * c.act_b};
      L.ops.push_back({StepComponent::routed_experts, scatter, micro});
      L.ops.push_back({StepComponent::routed_experts, gather, micro});
    }
    in_stage(from, Stage::experts);
    // TP ranks each dispatched a share of the tokens and hold a slice of the shared experts: one
    // all-reduce puts every token's output back on every TP rank.
    add_allreduce(c, L, tokens, h, c.act_b, micro);
  } else {
    // Experts split by TP (every rank runs all of its DP group's pairs on a 1/TP slice of each
    // expert), or over every rank (the engine's rule under DP attention: the gathered tokens' pairs).
    const bool over_dp = c.req.moe_over_dp && c.dp > 1;
    const double slice = width / (over_dp ? c.ranks : c.tp);
    const double pairs = (over_dp ? tokens * c.dp : tokens) * k;
    const double touched = experts_touched(E, pairs);
    // Block-fp8 experts: the tokens are quantized once before the first grouped GEMM and the
    // SwiGLU output before the second (SGLang's fused MoE runs per_token_group_quant_fp8 ahead of
    // each, layers/moe/fused_moe_triton).
    if (quant) add_quant(c, L, (over_dp ? tokens * c.dp : tokens) * h, micro);
    L.ops.push_back({StepComponent::routed_experts, grouped(OpId::expert_gate_up, pairs, touched, h, 2 * slice, c.mlp_wb, c.act_b, c.mlp_weights), micro});
    L.ops.push_back({StepComponent::elementwise, swiglu(pairs * slice, c.act_b), micro});
    if (quant) add_quant(c, L, pairs * slice, micro);
    L.ops.push_back({StepComponent::routed_experts, grouped(OpId::expert_down, pairs, touched, slice, h, c.mlp_wb, c.act_b, c.mlp_weights), micro});
    if (over_dp)
      add_dp_gather(c, L, tokens, h, micro);
    else
      add_allreduce(c, L, tokens, h, c.act_b, micro);
  }
}

}  // namespace

SequenceGroup step_group(Phase phase, std::int64_t count, double context, std::int64_t draft) {
  const double q = phase == Phase::decode ? std::min(context, 1.0 + static_cast<double>(draft)) : context;
  return SequenceGroup{count, q, context - q};
}

void set_step_weights(StepRequest& req, const ModelSpec& m, std::optional<WeightDtype> d) {
  req.weights = d ? weight_plan_for(m, *d) : default_weight_plan(m);
  req.w.weights = d ? *d : attention_weight_dtype(m);
}

void set_step_batch(StepRequest& req, const ModelSpec& m, const HardwareSpec& hw, std::vector<SequenceGroup> groups, double mem_util) {
  req.w.groups = std::move(groups);
  req.workspace_budget.reset();
  if (m.is_mla()) req.workspace_budget = workspace_budget(m, hw, req.w, mem_util).left;
}

StepOverheads step_overheads(const EngineProfile& p) {
  StepOverheads o;
  auto num = [&](std::string_view key, double fallback) { return p.has(key) ? p.num(key) : fallback; };
  o.per_step_decode = Seconds{num("step_overhead_decode_us", 0) * 1e-6};
  o.per_step_prefill = Seconds{num("step_overhead_prefill_us", 0) * 1e-6};
  o.per_step_tbo_decode = Seconds{num("step_overhead_tbo_decode_us", 0) * 1e-6};
  o.moe_imbalance = num("moe_imbalance", 1);
  if (p.has("moe_imbalance_by_ep"))
    for (const std::vector<double>& row : p.params.at("moe_imbalance_by_ep").rows) o.moe_imbalance_by_ep.emplace_back(row[0], row[1]);
  o.eta_scale_up = num("comm_eta_scale_up", 1);
  o.eta_scale_out = num("comm_eta_scale_out", 1);
  o.comm_latency = Seconds{num("comm_latency_us", 0) * 1e-6};
  if (p.has("tp_allreduce"))
    for (const std::vector<double>& row : p.params.at("tp_allreduce").rows)
      o.all_reduce.push_back({.ranks = row[0], .max_bytes = row[1], .latency = Seconds{row[2] * 1e-6}, .eta = row[3], .one_shot = row[4] != 0});
  for (auto [prefix, kind] : {std::pair{"ll", &o.low_latency}, std::pair{"normal", &o.normal}}) {
    const std::string key = prefix;
    kind->eta_scale_up = num(key + "_eta_scale_up", o.eta_scale_up);
    kind->eta_scale_out = num(key + "_eta_scale_out", o.eta_scale_out);
    kind->latency_intranode = Seconds{num(key + "_latency_intranode_us", o.comm_latency.value * 1e6) * 1e-6};
    kind->latency_internode = Seconds{num(key + "_latency_internode_us", o.comm_latency.value * 1e6) * 1e-6};
  }
  o.normal.overlap_slowdown = num("normal_overlap_slowdown", 1);
  o.comm_sms = num("comm_sms", 0);
  o.ll_sm_per_token = Seconds{num("ll_sm_us_per_token", 0) * 1e-6};
  o.gqa_rope_kernels_prefill = static_cast<int>(num("gqa_rope_kernels_prefill", 0));
  o.gqa_rope_kernels_decode = static_cast<int>(num("gqa_rope_kernels_decode", 0));
  o.gqa_decode_kernel_fuses_rope = num("gqa_decode_kernel_fuses_rope", 0) != 0;
  o.deepgemm_hopper = num("deepgemm_hopper", 0) != 0;
  o.deepgemm_blackwell = num("deepgemm_blackwell", 0) != 0;
  o.gqa_decode = {.xqa = num("gqa_decode_xqa", 1) != 0,
                  .xqa_only_group = num("gqa_decode_xqa_group", 0),
                  .xqa_hopper_kernel = num("gqa_decode_xqa_hopper_kernel", 1) != 0,
                  .xqa_fp8_forced = num("gqa_decode_fp8_forces_xqa", 1) != 0,
                  .multi_block = num("gqa_decode_multi_block", 1) != 0};
  o.source = p.label() + " (" + p.file + ")";
  return o;
}

bool runs_deepgemm(const StepOverheads& o, const HardwareSpec& hw) {
  return (hw.architecture == "hopper" && o.deepgemm_hopper) || (hw.architecture == "blackwell" && o.deepgemm_blackwell);
}

double moe_imbalance_at(const StepOverheads& o, double ep) {
  if (ep <= 1) return 1;
  const auto& pts = o.moe_imbalance_by_ep;
  if (pts.empty()) return o.moe_imbalance;
  double x0 = 1, y0 = 1;
  for (const auto& [x1, y1] : pts) {
    if (ep <= x1) return y0 + (y1 - y0) * std::log(ep / x0) / std::log(x1 / x0);
    x0 = x1;
    y0 = y1;
  }
  return y0;
}

void use_overheads(StepRequest& req, const StepOverheads& o) {
  req.overheads = o;
  req.comm_sms = o.comm_sms;
  req.ll_sm_per_token = o.ll_sm_per_token;
}

LinkSpec links_for(const HardwareSpec& hw, const StepOverheads& o) {
  LinkSpec l;
  l.scale_up = hw.scale_up_bandwidth_per_direction;
  l.scale_out = hw.scale_out_bandwidth_per_direction;
  l.eta_scale_up = o.eta_scale_up;
  l.eta_scale_out = o.eta_scale_out;
  l.latency = o.comm_latency;
  l.low_latency = o.low_latency;
  l.normal = o.normal;
  l.all_reduce = o.all_reduce;
  l.source = o.source;
  return l;
}

Op act_quant_op(double values, double act_b) {
  Op op = elementwise(OpId::act_quant, values, act_b);
  op.bytes_written = BytesF{values * kBlockFp8ValueBytes};
  return op;
}

AllToAllTime all_to_all_time(const AllToAll& a, const LinkSpec& l) {
  const Transfer t = all_to_all_transfer(StepComponent::ep_dispatch, a);
  const Timed x = time_transfer(t, l);
  return {x.time, x.bound, t.scale_up_bytes, t.scale_out_bytes};
}

StepResult step_time(const ModelSpec& m, const HardwareSpec& hw, const Roofline& engine_free, const StepRequest& req) {
  // The engine's block-fp8 GEMM library on this GPU.
  Roofline rf = engine_free;
  rf.deepgemm = runs_deepgemm(req.overheads, hw);
  rf.decode = req.overheads.gqa_decode;
  StepResult out;
  out.phase = req.phase;
  Ctx c{m, req, rf, hw};
  c.tp = static_cast<double>(req.w.par.tp);
  c.dp = static_cast<double>(req.w.par.dp);
  c.ep = static_cast<double>(req.w.par.ep);
  c.ranks = c.tp * c.dp;
  c.imbalance = c.ep > 1 ? req.moe_imbalance.value_or(moe_imbalance_at(req.overheads, c.ep)) : 1;
  out.moe_imbalance = c.imbalance;
  out.gpus = req.w.par.ranks();
  c.act_b = bytes_per_element(req.w.compute);
  c.mlp_weights = req.weights.linear;
  c.attention_weights = req.w.weights;
  c.mlp_wb = bytes_per_element(linear_format(req.weights));
  c.dense_wb = bytes_per_element(weight_format(req.weights.dense));
  const Roofline sol = speed_of_light(rf);
  const double h = static_cast<double>(m.hidden);
  const bool overlap = req.two_batch_overlap && can_split(req.w);
  const double micro = overlap ? 2 : 1;

  // Attention on the main model's workload (the step's batch, or one micro-batch of it).
  Workload w = req.w;
  w.projections = true;
  w.context_phase = req.phase == Phase::prefill;  // a prompt of one token still runs the prefill kernel
  const Workload wm = overlap ? micro_batch(w) : w;
  const std::vector<EnginePolicy> policies = req.policy ? std::vector<EnginePolicy>{*req.policy} : std::vector<EnginePolicy>{};
  const CostStudy st = cost_study(m, wm, rf, req.workspace_budget, policies);
  const PathResult& path = chosen_path(st, req.policy);
  out.attention_path = path.kind == PathKind::chunked ? "chunked" : std::string(to_string(path.kind));
  out.attention_detail = path.detail;
  const BatchTotals t = batch_totals(wm);
  const double layers = static_cast<double>(m.num_layers());

  StepPlan plan;
  for (const LayerSpec& l : m.layers) (l.moe && m.moe ? plan.moe_layers : plan.dense_layers) += 1;
  for (LayerParts* L : {&plan.dense, &plan.moe}) {
    add_attention_layer(c, *L, path, t.new_tokens, layers, micro);
  }
  add_mlp(c, plan.dense, false, t.new_tokens, micro);
  add_mlp(c, plan.moe, true, t.new_tokens, micro);

  // Once per step: embedding, the final norm, lm_head (vocab-parallel over TP, its logits gathered),
  // sampling. Prefill computes logits for each sequence's last token only; decode for every new token.
  const BatchTotals full = batch_totals(w);
  const double logits_tokens = req.phase == Phase::prefill ? full.sequences : full.new_tokens;
  const double vocab = static_cast<double>(m.vocab);
  plan.once.ops.push_back({StepComponent::embedding, elementwise(OpId::embedding, full.new_tokens * h, c.act_b)});
  // The step runs 2·layers + 1 decoder norms (Gemma: 4·layers + 1), of which one takes no residual:
  // the first layer's input norm, whose residual is the embedding itself (SGLang
  // layers/communicator.py@eb118d88:201-203, `if residual is None`), while the final norm adds the
  // last MLP's output. Every layer is counted with its residual norms, so the one plain norm is
  // counted here, for the first layer.
  plan.once.ops.push_back({StepComponent::elementwise, elementwise(OpId::rms_norm, full.new_tokens * h, c.act_b)});
  plan.once.ops.push_back({StepComponent::lm_head, gemm(OpId::lm_head, logits_tokens, h, vocab / c.tp, c.dense_wb, c.act_b, WeightDtype::bf16)});
  Op sample = elementwise(OpId::sampling, logits_tokens * vocab, 4);
  sample.bytes_written = BytesF{logits_tokens * 8};
  plan.once.ops.push_back({StepComponent::sampling, sample});
  if (c.tp > 1) {
    Transfer gather{StepComponent::tp_allreduce};
    const double sent = (c.tp - 1) / c.tp * logits_tokens * vocab * 4;
    (c.tp <= static_cast<double>(req.gpus_per_node) ? gather.scale_up_bytes : gather.scale_out_bytes) = sent;
    plan.once.transfers.push_back(gather);
  }

  // MTP: the module (one MoE decoder layer after a projection of [embedding; hidden] to hidden) runs
  // once per draft token in decode on one token per sequence, and once over the prompt in prefill.
  if (req.mtp_draft > 0 && m.mtp_layers > 0) {
    Workload wd = wm;
    if (req.phase == Phase::decode)
      for (SequenceGroup& g : wd.groups) g.query = 1;
    const CostStudy sd = cost_study(m, wd, rf, req.workspace_budget, policies);
    const BatchTotals td = batch_totals(wd);
    // The module's own kernels before its decoder layer (SGLang's DeepseekModelNextN.forward,
    // models/deepseek_nextn.py@eb118d88:99-120): RMSNorms of the tokens' embeddings (enorm) and of the
    // main model's hidden states (hnorm), the two side by side (torch.cat), eh_proj; the layer's input
    // norm takes no residual (residual None), and its final shared_head.norm does: with the layer's
    // post-attention norm, the two residual norms add_mlp counts.
    plan.mtp.ops.push_back({StepComponent::elementwise, elementwise(OpId::rms_norm, td.new_tokens * h, c.act_b), micro * 3});
    Op concat;
    concat.id = OpId::mtp_concat;
    concat.bytes_read = BytesF{2 * td.new_tokens * h * c.act_b};
    concat.bytes_written = concat.bytes_read;
    plan.mtp.ops.push_back({StepComponent::elementwise, concat, micro});
    add_attention_layer(c, plan.mtp, chosen_path(sd, req.policy), td.new_tokens, layers, micro);
    plan.mtp.ops.push_back({StepComponent::mtp, gemm(OpId::mtp_eh_proj, td.new_tokens, 2 * h, h, c.mlp_wb, c.act_b, c.mlp_weights), micro});
    add_mlp(c, plan.mtp, true, td.new_tokens, micro);
    const double mtp_logits = req.phase == Phase::prefill ? td.sequences : td.new_tokens;  // prefill: the last position's draft only
    plan.mtp.ops.push_back({StepComponent::lm_head, gemm(OpId::lm_head, mtp_logits, h, vocab / c.tp, c.dense_wb, c.act_b, WeightDtype::bf16), micro});
    plan.mtp_runs = req.phase == Phase::decode ? req.mtp_draft : 1;
    // The MTP module's attention and MLP are reported under mtp.
    for (Part& p : plan.mtp.ops) {
      p.expert = p.component == StepComponent::routed_experts;
      p.component = StepComponent::mtp;
    }
  }

  // Time every part, then sum by component and by layer kind.
  std::vector<StepRow> rows(kStepComponentCount);
  for (int i = 0; i < kStepComponentCount; ++i) rows[i].component = static_cast<StepComponent>(i);
  Seconds host_lead{0};  // eager launches: the GPU work the host has queued ahead of the GPU
  auto layer_time = [&](const LayerParts& L, double n, const std::string& kind) {
    LayerKindRow k{kind, static_cast<std::int64_t>(n)};
    Seconds compute_bound{0}, comm_bound{0};
    Seconds relabelled_experts{0};  // the MTP module's expert GEMMs, reported under mtp
    std::array<bool, kStepComponentCount> seen{};
    auto count_layers = [&](StepComponent comp) {
      if (!seen[static_cast<std::size_t>(comp)] && kind != "once") rows[static_cast<int>(comp)].layers += static_cast<std::int64_t>(n);
      seen[static_cast<std::size_t>(comp)] = true;
    };
    const bool overlapped = overlap && kind != "once";
    const bool all_to_all =
        std::any_of(L.transfers.begin(), L.transfers.end(), [](const Transfer& tr) { return tr.component == StepComponent::ep_dispatch; });
    // The normal all-to-all's overlap: the layer runs as two_batch_pipeline, its compute on the SMs
    // the all-to-all kernels leave (each compute op takes SMs / (SMs − comm_sms) of its time).
    const bool pipelined = overlapped && all_to_all && !low_latency(req);
    const double sms = rf.sms > 0 ? rf.sms : static_cast<double>(hw.sm_count);
    const double share = pipelined && req.comm_sms > 0 && sms > req.comm_sms ? sms / (sms - req.comm_sms) : 1;
    OverlapStages stages;  // one micro-batch's
    for (const Part& p : L.ops) {
      Timed x = time_op(p.op, rf, sol);
      x.time = x.time * share;
      if (pipelined) (p.stage == Stage::experts ? stages.experts : p.stage == Stage::shared ? stages.shared : stages.attention) += x.time * (p.count / micro);
      StepRow& r = rows[static_cast<int>(p.component)];
      count_layers(p.component);
      k.by_component[static_cast<std::size_t>(p.component)] += x.time * p.count;
      r.flops += p.op.flops * (p.count * n);
      r.bytes += p.op.bytes() * (p.count * n);
      r.time += x.time * (p.count * n);
      r.bound += x.bound * (p.count * n);
      if (r.bound_by.empty() || x.bound_by == "compute") r.bound_by = x.bound_by;
      if (std::find(r.ops.begin(), r.ops.end(), p.op.id) == r.ops.end()) r.ops.push_back(p.op.id);
      k.compute += x.time * p.count;
      compute_bound += x.bound * p.count;
      if (p.expert) relabelled_experts += x.time * p.count;
    }
    for (const Transfer& tr : L.transfers) {
      Timed x = time_transfer(tr, req.links);
      // The normal all-to-all beside the other micro-batch's compute runs slower than alone.
      if (pipelined && tr.use == Transfer::Use::normal) x.time = x.time * req.links.normal.overlap_slowdown;
      if (pipelined) {
        // The all-to-all on its own stream; a collective (TP all-reduce) blocks the compute stream.
        Seconds& stage = tr.component == StepComponent::ep_dispatch  ? stages.dispatch
                         : tr.component == StepComponent::ep_combine ? stages.combine
                                                                      : stages.attention;
        stage += x.time * (tr.count / micro);
      }
      StepRow& r = rows[static_cast<int>(tr.component)];
      count_layers(tr.component);
      k.by_component[static_cast<std::size_t>(tr.component)] += x.time * tr.count;
      r.link_bytes += BytesF{(tr.scale_up_bytes + tr.scale_out_bytes) * tr.count * n};
      r.time += x.time * (tr.count * n);
      r.bound += x.bound * (tr.count * n);
      if (!x.bound_by.empty() && (r.bound_by.empty() || x.bound_by == "network")) r.bound_by = x.bound_by;
      k.communication += x.time * tr.count;
      comm_bound += x.bound * tr.count;
    }
    k.time = k.compute + k.communication;
    Seconds bound_time = compute_bound + comm_bound;
    if (overlapped && k.communication.value > 0) {
      if (all_to_all && low_latency(req)) {
        // Stage B (dispatch, experts, combine) of one micro-batch beside stage A (the rest) of the
        // other; never below the compute of both micro-batches (one GPU), with the communication
        // kernels' own SM time (send and receive hook), or below their communication.
        Seconds b = relabelled_experts;
        for (StepComponent comp : {StepComponent::ep_dispatch, StepComponent::routed_experts, StepComponent::ep_combine})
          b += k.by_component[static_cast<std::size_t>(comp)];
        const Seconds sm = L.ll_sm;
        k.time = std::max({b, k.compute + k.communication - b, k.compute + sm, k.communication});
        if (sm.value > 0) {
          k.compute += sm;
          k.by_component[static_cast<std::size_t>(StepComponent::ep_kernels)] += sm;
          StepRow& r = rows[static_cast<int>(StepComponent::ep_kernels)];
          count_layers(StepComponent::ep_kernels);
          r.time += sm * n;
          r.bound_by = "fixed";
          out.comm_kernels_sm += sm * n;
        }
      } else if (pipelined) {
        k.time = n > 0 ? two_batch_pipeline(stages, static_cast<std::int64_t>(n)) / n : Seconds{0};
      } else {
        // A collective beside the other micro-batch's compute.
        k.time = std::min(k.compute + k.communication, std::max(k.compute, k.communication));
      }
      bound_time = std::max(compute_bound, comm_bound);
    }
    out.compute += k.compute * n;
    out.communication += k.communication * n;
    out.overlap_saving += (k.compute + k.communication - k.time) * n;
    if (req.eager_launch.value > 0 && n > 0) {
      // Without CUDA graphs the host launches every kernel (a chunked op once per chunk) while the
      // GPU runs the ones before. As a fluid queue over the step's layers in the order they run: a
      // layer the GPU takes longer over than the host puts the host that much ahead; a layer the host
      // launches more slowly than the GPU runs it first drains that lead, and the rest is the GPU's
      // wait, added to the layer's time.
      double launches = 0;
      for (const Part& p : L.ops) launches += p.count * p.op.tiling.kernel_launches();
      for (const Transfer& tr : L.transfers) launches += tr.count;
      const Seconds behind = (req.eager_launch * launches - k.time) * n;  // host minus GPU over the kind's layers
      const Seconds wait = std::max(Seconds{0}, behind - host_lead);
      host_lead = std::max(Seconds{0}, host_lead - behind);
      out.launch_wait += wait;
      k.time += wait / n;
    }
    out.step_time += k.time * n;
    out.step_bound += bound_time * n;
    if (n > 0) out.layer_kinds.push_back(k);
  };
  layer_time(plan.dense, static_cast<double>(plan.dense_layers), "dense");
  layer_time(plan.moe, static_cast<double>(plan.moe_layers), "moe");
  layer_time(plan.mtp, static_cast<double>(plan.mtp_runs), "mtp");
  layer_time(plan.once, 1, "once");

  const Seconds overhead = req.phase == Phase::prefill ? req.overheads.per_step_prefill
                           : overlap                   ? req.overheads.per_step_decode + req.overheads.per_step_tbo_decode
                                                       : req.overheads.per_step_decode;
  StepRow& oh = rows[static_cast<int>(StepComponent::overhead)];
  oh.layers = 1;
  out.overhead = overhead + out.launch_wait;  // the wait is already in its layers' times
  oh.time = out.overhead;
  oh.bound_by = "fixed";
  out.step_time += overhead;
  for (StepRow& r : rows) {
    if (r.layers == 0) r.layers = 1;  // once per step
    if (r.time.value > 0 || r.flops.value > 0 || r.link_bytes.value > 0) out.rows.push_back(r);
  }

  // Throughput and latency.
  out.sequences = 0;
  out.input_tokens = 0;
  for (const SequenceGroup& g : req.w.groups) {
    out.sequences += static_cast<double>(g.count);
    out.input_tokens += static_cast<double>(g.count) * g.query;
  }
  double gained = 1;  // tokens each sequence gains per step
  if (req.phase == Phase::decode && req.mtp_draft > 0 && m.mtp_layers > 0)
    for (std::int64_t i = 1; i <= req.mtp_draft; ++i) gained += std::pow(req.mtp_accept, static_cast<double>(i));
  const double step = out.step_time.value;
  if (req.phase == Phase::decode) {
    out.output_tokens = out.sequences * gained;
    out.tpot = Seconds{step / gained};
    out.tokens_per_s_per_gpu = step > 0 ? out.output_tokens / step / static_cast<double>(out.gpus) : 0;
  } else {
    out.output_tokens = out.sequences;
    out.ttft = out.step_time;
    out.tokens_per_s_per_gpu = step > 0 ? out.input_tokens / step / static_cast<double>(out.gpus) : 0;
  }

  // Memory: the weights (and the MTP module when it runs) and the batch's cache on the busiest rank.
  double longest = 0;
  for (const SequenceGroup& g : req.w.groups) longest = std::max(longest, g.prefix + g.query);
  out.memory = plan_capacity(m, hw, capacity_request(m, req, req.w.par, static_cast<std::int64_t>(std::ceil(longest)),
                                                     static_cast<std::int64_t>(std::ceil(full.new_tokens))));
  out.kv_tokens_per_rank = full.keys;
  if (!out.memory.fits())
    out.fits = out.memory.verdict;
  else if (full.keys > static_cast<double>(out.memory.max_tokens_per_rank))
    out.fits = Verdict::no("the batch keeps " + std::to_string(static_cast<std::int64_t>(full.keys)) + " tokens of cache per GPU; " +
                           std::to_string(out.memory.max_tokens_per_rank) + " fit");
  if (req.two_batch_overlap && !overlap) out.notes.push_back("two-batch overlap off: a rank holds one sequence, nothing to split");
  if (overlap)
    out.notes.push_back(low_latency(req) ? "two-batch overlap (low latency): each layer takes the longer of its dispatch, experts and combine and the rest, over two micro-batches"
                                         : "two-batch overlap (normal): each layer takes the longer of its compute, on the SMs the all-to-all leaves, and its communication");
  if (req.mtp_draft > 0 && m.mtp_layers == 0) out.notes.push_back(m.name + " has no MTP module: no draft tokens");
  if (!rf.decode.xqa && req.phase == Phase::decode && !m.is_mla())
    out.notes.push_back("GQA decode runs MMHA, one block per query head and sequence: the engine has no XQA (gqa_decode_xqa false)");
  else if (rf.decode.xqa)
    // A decode launch as_launched turns into MMHA for its head group (each rank's, on its tiling).
    for (const OpRow& r : path.ops)
      if (r.op.kind() == OpKind::attention && engine_refuses_xqa(rf, r.op.tiling)) {
        out.notes.push_back("GQA decode runs MMHA, one block per query head and sequence: the engine's XQA kernels take " +
                            std::to_string(static_cast<std::int64_t>(rf.decode.xqa_only_group)) + " query heads per KV head only (gqa_decode_xqa_group), each rank here " +
                            std::to_string(static_cast<std::int64_t>(r.op.tiling.head_group)));
        break;
      }
  return out;
}

namespace {

// A step of `count` sequences of `query` tokens after `prefix` on the request's layout.
StepResult run_step(const ModelSpec& m, const HardwareSpec& hw, const Roofline& rf, StepRequest req, Phase phase, std::int64_t count, double query,
                    double prefix) {
  req.phase = phase;
  set_step_batch(req, m, hw, {SequenceGroup{count, query, prefix}});
  return step_time(m, hw, rf, req);
}

std::vector<std::int64_t> powers_of_two(std::int64_t max) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = 1; x <= max; x *= 2) v.push_back(x);
  return v;
}

// Layouts of g GPUs: TP a power of two, DP the rest; EP 1 or every rank for a MoE model.
std::vector<Parallelism> layouts_of(const ModelSpec& m, std::int64_t g) {
  std::vector<Parallelism> out;
  for (std::int64_t tp : powers_of_two(g)) {
    for (std::int64_t ep : {std::int64_t{1}, g}) {
      if (ep > 1 && !m.moe) continue;
      Parallelism p{tp, g / tp, ep};
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    }
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> batch_ladder(std::int64_t most) {
  std::vector<std::int64_t> out;
  for (std::int64_t b = 1; b < most; b *= 2) out.push_back(b);
  if (most >= 1) out.push_back(most);
  return out;
}

std::vector<std::int64_t> plan_batches(const std::vector<std::int64_t>& tried, std::int64_t fit) {
  std::vector<std::int64_t> out;
  for (std::int64_t b : tried)
    if (b <= fit) out.push_back(b);
  // The largest batch memory holds, where memory cuts the tried batches short: a static batch sized
  // to the cache (TensorRT-LLM's benchmarks) or a server at its memory limit runs there, not at the
  // tried batch below it.
  if (fit >= 1 && std::find(out.begin(), out.end(), fit) == out.end() && std::any_of(tried.begin(), tried.end(), [&](std::int64_t b) { return b > fit; }))
    out.push_back(fit);
  return out;
}

bool holds_layout(const PlanRequest& req, const Parallelism& par) {
  return (req.tp == 0 || par.tp == req.tp) && (req.dp == 0 || par.dp == req.dp) && (req.ep == 0 || par.ep == req.ep);
}

PlanResult plan_layouts(const ModelSpec& m, const HardwareSpec& hw, const Roofline& rf, const PlanRequest& req) {
  PlanResult out;
  const double isl = static_cast<double>(req.isl), osl = static_cast<double>(req.osl);
  const double q = 1 + static_cast<double>(req.base.mtp_draft);
  for (std::int64_t g : powers_of_two(req.max_gpus)) {
    for (const Parallelism& par : layouts_of(m, g)) {
      if (!holds_layout(req, par)) continue;
      const LayoutVerdict lv = check_layout(m, par);
      if (!lv.ok()) {
        out.skipped.push_back({to_string(par), lv.verdict});
        continue;
      }
      const std::int64_t domain = hw.scale_up_domain_gpus > 0 ? hw.scale_up_domain_gpus : 1;
      // A layout whose GPUs need a link the hardware file does not give is not timed.
      const char* missing = g <= 1                                                     ? nullptr
                            : hw.scale_up_domain_gpus <= 0                             ? "scale_up_domain_gpus"
                            : hw.scale_up_bandwidth_per_direction.value <= 0           ? "scale_up_bandwidth_gb_per_s_per_direction"
                            : g > domain && hw.scale_out_bandwidth_per_direction.value <= 0 ? "scale_out_bandwidth_gb_per_s_per_direction"
                                                                                       : nullptr;
      if (missing) {
        out.skipped.push_back({to_string(par), Verdict::no(hw.name + " has no " + missing + " in " + hw.source)});
        continue;
      }
      StepRequest base = req.base;
      base.w.par = par;
      base.gpus_per_node = std::min(domain, g);
      const CapacityResult cap = plan_capacity(m, hw, capacity_request(m, base, par, req.isl + req.osl, kDefaultBatchedTokens));
      if (!cap.fits()) {
        out.skipped.push_back({to_string(par), cap.verdict});
        continue;
      }
      const StepResult first = run_step(m, hw, rf, base, Phase::prefill, par.dp, isl, 0);
      for (std::int64_t per_replica : plan_batches(req.batches, cap.max_sequences / par.dp)) {
        const std::int64_t batch = per_replica * par.dp;
        PlanRow r;
        r.par = par;
        r.gpus = g;
        r.batch = batch;
        r.max_sequences = cap.max_sequences;
        r.memory_limited = std::find(req.batches.begin(), req.batches.end(), per_replica) == req.batches.end();
        r.ttft = first.step_time;
        const StepResult d = run_step(m, hw, rf, base, Phase::decode, batch, q, std::max(0.0, isl + osl / 2 - q));
        r.tpot = d.tpot;
        r.decode_tokens_per_s_per_gpu = d.tokens_per_s_per_gpu;
        r.prefill_batch = run_step(m, hw, rf, base, Phase::prefill, batch, isl, 0).step_time;
        const Seconds cycle = r.prefill_batch + d.tpot * osl;
        r.requests_per_s = static_cast<double>(batch) / cycle.value;
        r.tokens_per_s_per_gpu = r.requests_per_s * osl / static_cast<double>(g);
        if (req.rate > 0) r.gpus_for_rate = static_cast<std::int64_t>(std::ceil(req.rate / r.requests_per_s)) * g;
        r.meets = true;
        if (req.tpot_limit.value > 0 && r.tpot > req.tpot_limit) r.meets = false, r.why = "TPOT over the target";
        if (req.ttft_limit.value > 0 && r.ttft > req.ttft_limit) r.meets = false, r.why += std::string(r.why.empty() ? "" : "; ") + "TTFT over the target";
        out.rows.push_back(r);
      }
    }
  }
  // Pareto: no other row has a lower (or equal) TPOT and a higher (or equal) throughput, one strictly.
  // Of rows equal in both, the one on the fewest GPUs (then the first) stands for them.
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    const PlanRow& a = out.rows[i];
    bool dominated = false;
    for (std::size_t j = 0; j < out.rows.size() && !dominated; ++j) {
      const PlanRow& b = out.rows[j];
      const bool no_worse = b.tpot <= a.tpot && b.tokens_per_s_per_gpu >= a.tokens_per_s_per_gpu;
      const bool better = b.tpot < a.tpot || b.tokens_per_s_per_gpu > a.tokens_per_s_per_gpu;
      dominated = no_worse && (better || b.gpus < a.gpus || (b.gpus == a.gpus && j < i));
    }
    out.rows[i].pareto = !dominated;
  }
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    const PlanRow& r = out.rows[i];
    if (!r.meets) continue;
    if (!out.best || r.tokens_per_s_per_gpu > out.rows[*out.best].tokens_per_s_per_gpu) out.best = i;
    if (req.rate > 0 && (!out.fewest_for_rate || r.gpus_for_rate < out.rows[*out.fewest_for_rate].gpus_for_rate)) out.fewest_for_rate = i;
  }
  return out;
}

std::vector<MemoryPlanRow> plan_memory(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& base, std::int64_t sequences,
                                       std::int64_t max_gpus) {
  std::vector<MemoryPlanRow> rows;
  for (std::int64_t g : powers_of_two(max_gpus)) {
    bool found = false;
    for (const Parallelism& par : layouts_of(m, g)) {
      if (!check_layout(m, par).ok()) continue;
      CapacityRequest cr = base;
      cr.par = par;
      cr.reserve = activation_reserve_estimate(m, par, kDefaultBatchedTokens);
      MemoryPlanRow r{par, plan_capacity(m, hw, cr)};
      found = found || (r.result.fits() && r.result.max_sequences >= sequences);
      rows.push_back(std::move(r));
    }
    if (found) break;
  }
  return rows;
}

std::optional<ServingReport> serving_report(const ReportInputs& in, std::string& why) {
  ServingReport r;
  r.model = &in.models.front();
  r.gpu = &in.gpus.front();
  const ModelSpec& m = r.model->spec;
  const HardwareSpec& hw = *r.gpu;
  const Roofline rf = report_roofline(hw, in.compute, in.profiles);
  StepRequest& req = r.step_request;
  if (in.engine) use_overheads(req, step_overheads(*in.engine));
  else req.overheads.source = "none (the spec names no engine)";
  req.links = links_for(hw, req.overheads);
  req.w.compute = in.compute;
  req.w.kv = in.kvs.front();
  set_step_weights(req, m, std::nullopt);
  req.w.par = Parallelism{in.roofline_step.tp, 1, 1};
  const std::int64_t domain = hw.scale_up_domain_gpus;
  if (in.roofline_step.tp > 1 && (domain <= 0 || hw.scale_up_bandwidth_per_direction.value <= 0)) {
    why = hw.name + " has no scale-up domain or bandwidth in " + hw.source;
    return std::nullopt;
  }
  if (!check_layout(m, req.w.par).ok()) {
    why = check_layout(m, req.w.par).verdict.reason;
    return std::nullopt;
  }
  req.gpus_per_node = std::min<std::int64_t>(std::max<std::int64_t>(domain, 1), req.w.par.ranks());
  r.plan_request.base = req;
  req.phase = Phase::decode;
  // The report's batch, or as many sequences as fit at the decode context when fewer do.
  const CapacityResult cap = plan_capacity(m, hw, capacity_request(m, req, req.w.par, in.decode_context, in.batched_tokens, in.mem_util));
  const std::int64_t batch = cap.fits() ? std::max<std::int64_t>(1, std::min(in.batch, cap.max_sequences)) : in.batch;
  set_step_batch(req, m, hw, {step_group(Phase::decode, batch, static_cast<double>(in.decode_context), 0)}, in.mem_util);
  r.step = step_time(m, hw, rf, req);
  PlanRequest& p = r.plan_request;
  p.isl = in.serving_isl;
  p.osl = in.serving_osl;
  p.tpot_limit = in.serving_tpot;
  p.max_gpus = domain > 0 ? in.serving_max_gpus : 1;
  for (std::int64_t b = 1; b <= 1024; b *= 2) p.batches.push_back(b);
  r.plan = plan_layouts(m, hw, rf, p);
  return r;
}

}  // namespace mlaplan
