#include "mlaplan/core/engine_memory.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>


namespace mlaplan {

std::string_view to_string(EngineFamily f) {
  switch (f) {
    case EngineFamily::vllm: return "vllm";
    case EngineFamily::sglang: return "sglang";
    case EngineFamily::trtllm: return "trtllm";
  }
  return "?";
}

std::optional<EngineFamily> parse_engine_family(std::string_view s) {
  for (EngineFamily f : {EngineFamily::vllm, EngineFamily::sglang, EngineFamily::trtllm})
    if (to_string(f) == s) return f;
  return std::nullopt;
}

std::optional<EngineVersion> parse_engine_version(std::string_view s) {
  EngineVersion v;
  v.text = std::string(s);
  std::int64_t cur = 0;
  int digits = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '.') {
      if (digits == 0) return std::nullopt;
      v.parts.push_back(cur);
      cur = 0;
      digits = 0;
      continue;
    }
    if (s[i] < '0' || s[i] > '9' || digits >= 6) return std::nullopt;
    cur = cur * 10 + (s[i] - '0');
    ++digits;
  }
  if (v.parts.empty() || v.parts.size() > 4) return std::nullopt;
  return v;
}

const std::vector<EngineParamSpec>& engine_param_specs() {
  using K = ParamKind;
  static const std::vector<EngineParamSpec> specs = {
      // key, kind, vllm, sglang, trtllm, meaning
      {"mem_util", K::fraction, true, false, true, "default fraction of the total the engine may use (gpu_memory_utilization, free_gpu_memory_fraction)"},
      {"mem_util_tp1", K::fraction, false, true, false, "default mem_fraction_static at TP 1 (tier rule)", true},
      {"mem_util_tp2", K::fraction, false, true, false, "default mem_fraction_static at TP 2-3 (tier rule)", true},
      {"mem_util_tp4", K::fraction, false, true, false, "default mem_fraction_static at TP 4-7 (tier rule)", true},
      {"mem_util_tp8", K::fraction, false, true, false, "default mem_fraction_static at TP 8-15 (tier rule)", true},
      {"mem_util_tp16", K::fraction, false, true, false, "default mem_fraction_static at TP 16 and more (tier rule)", true},
      {"gpu_tiers", K::table, false, true, false, "reserve rule: rows [below GiB (0: otherwise), chunked_prefill_size, cuda-graph max_bs at TP < 4, at TP >= 4]", true, 4},
      {"reserved_base_mib", K::number, false, true, false, "reserve rule: constant metadata", true},
      {"reserved_per_prefill_token_mib", K::number, false, true, false, "reserve rule: per token of max(chunked_prefill_size, 2048)", true},
      {"reserved_per_graph_bs_mib", K::number, false, true, false, "reserve rule: per decode CUDA-graph batch size", true},
      {"reserved_per_rank_mib", K::number, false, true, false, "reserve rule: per rank of tp x pp", true},
      {"reserved_dp_per_bs_mib", K::number, false, true, false, "reserve rule: DP attention, per max_bs x dp", true},
      {"reserved_dp_large_bs_mib", K::number, false, true, false, "reserve rule: DP attention, per max_bs x dp more when max_bs is large", true},
      {"reserved_dp_large_bs_above", K::count, false, true, false, "reserve rule: 'large' max_bs", true},
      {"reserved_prefill_graph_mib", K::number, false, true, false, "reserve rule: per captured prefill CUDA-graph size (non-MLA)", true},
      {"reserved_mla_prefill_graphs_mib", K::number, false, true, false, "reserve rule: prefill CUDA graphs with an MLA backend", true},
      {"reserved_floor_mib", K::number, false, true, false, "reserve rule: at least this much on large GPUs", true},
      {"reserved_floor_above_gib", K::gib, false, true, false, "reserve rule: 'large' GPU", true},
      {"reserved_spec_mib", K::number, false, true, false, "reserve rule: speculative decoding (EAGLE/MTP draft and its graphs)", true},
      {"block_size", K::count, true, true, true, "default tokens per KV block (vLLM block_size, SGLang page_size, TensorRT-LLM tokens_per_block)", false, 0, true},
      {"mla_block_size", K::count, true, true, false, "block size the MLA attention backend forces (FlashMLA 64); 0 = block_size"},
      {"max_num_seqs", K::count, true, false, true, "default max_num_seqs / max_batch_size: rows the profiling sampler runs over", false, 0, true},
      {"max_batched_tokens", K::count, true, false, true, "default max_num_batched_tokens / max_num_tokens with chunked prefill on", false, 0, true},
      {"chunked_prefill_above", K::count, true, false, false, "chunked prefill is on by default when max_model_len exceeds this (0: always on)"},
      {"mla_chunked_prefill", K::flag, true, false, false, "false when the version forces chunked prefill off for MLA models"},
      {"unchunked_min_tokens", K::count, true, false, false, "with chunked prefill off, max_num_batched_tokens = max(max_model_len, this)", false, 0, true},
      {"mla_latent_cache", K::flag, true, true, true, "MLA models cache the latent (false: per-head K and V, as before MLA support)"},
      {"mla_align_bytes", K::count, true, false, false, "each token's latent entry per layer is padded to a multiple of this many bytes (0: none)"},
      {"mha_head_size_pow2", K::flag, true, false, false, "without a latent cache, the head size is rounded up to a power of two"},
      {"non_torch_gib", K::gib, true, false, true, "memory outside torch's allocator counted against the budget at TP 1"},
      {"non_torch_per_tp_doubling_gib", K::gib, true, false, true, "non-torch memory added per doubling of TP (communication buffers)"},
      {"non_torch_moe_gib", K::gib, true, false, false, "non-torch memory added for MoE models"},
      {"cuda_graph_gib", K::gib, true, false, false, "CUDA-graph memory the version subtracts before sizing the pool (0: not subtracted)"},
      {"hidden_copies", K::number, true, false, true, "tensors of tokens x hidden (2 B) alive at the forward pass's peak"},
      {"mlp_copies", K::number, true, false, true, "tensors of tokens x per-rank MLP intermediate (2 B) alive at the dense MLP's peak"},
      {"moe_chunk_tokens", K::count, true, false, true, "tokens the fused-MoE workspace is sized for at most (VLLM_FUSED_MOE_CHUNK_SIZE)"},
      {"sampler_bytes_per_logit", K::number, true, false, true, "bytes per (sequence x vocabulary entry) alive at the sampler's peak"},
      {"vocab_pad", K::count, true, false, true, "the vocabulary is padded to a multiple of this", false, 0, true},
      {"mla_uk_uv_copy", K::flag, true, true, false, "the version keeps a separate copy of W_UK and W_UV (from kv_b_proj) for the absorbed path"},
      {"mla_uk_uv_copy_bf16", K::flag, true, true, false, "that copy is bf16 (false: the checkpoint's linear dtype)"},
      {"mla_fused_q_o", K::flag, true, false, false, "the version precomputes W_UQ.W_UK and W_UV.W_O per layer, in the checkpoint's linear dtype"},
      {"moe_over_dp", K::flag, true, true, true, "without EP, routed experts are split across all TP x DP ranks"},
      {"dense_mlp_over_dp", K::flag, true, true, true, "dense MLPs and shared experts are split across all TP x DP ranks under DP attention"},
      {"pre_load_gib", K::gib, false, true, false, "memory in use when the free memory is first read (CUDA context, NCCL)"},
      {"large_gpu_gib", K::gib, true, false, false, "GPUs with at least this much memory get max_batched_tokens and max_num_seqs; smaller ones the small_gpu_ defaults", true},
      {"small_gpu_max_batched_tokens", K::count, true, false, false, "default max_num_batched_tokens below large_gpu_gib", true, 0, true},
      {"small_gpu_max_num_seqs", K::count, true, false, false, "default max_num_seqs below large_gpu_gib", true, 0, true},
      {"a100_small_defaults", K::flag, true, false, false, "A100s get the small_gpu_ defaults whatever their memory", true},
      {"loads_mtp", K::flag, true, true, true, "the MTP module is loaded by default (engines load it only with speculative decoding)"},
      // Serving step (core/serving): what the engine adds to a step, each with its source.
      {"step_overhead_decode_us", K::number, true, true, true, "scheduler and launch time per decode step not hidden by CUDA graphs (microseconds)", true},
      {"step_overhead_prefill_us", K::number, true, true, true, "scheduler and launch time per prefill step (microseconds)", true},
      {"step_overhead_tbo_decode_us", K::number, true, true, true, "time a decode step with two-batch overlap adds to step_overhead_decode_us (microseconds)", true},
      {"moe_imbalance", K::number, true, true, true, "routed token-expert pairs on the busiest EP rank over the mean (>= 1), at every EP size", true},
      {"moe_imbalance_by_ep", K::table, true, true, true, "the same by EP size: rows [EP ranks, imbalance], EP ascending; linear in ln EP between rows, EP 1 is 1, the last row's past it", true, 2},
      {"comm_eta_scale_up", K::fraction, true, true, true, "fraction of the NVLink bandwidth per direction its all-to-all and all-reduce kernels reach", true},
      {"comm_eta_scale_out", K::fraction, true, true, true, "fraction of the network bandwidth per GPU its all-to-all kernels reach", true},
      {"comm_latency_us", K::number, true, true, true, "fixed time per collective call (microseconds)", true},
      {"tp_allreduce", K::table, true, true, true,
       "TP all-reduce algorithms within one scale-up domain: rows [ranks, max bytes per rank (0: any), latency (microseconds), fraction of the NVLink bandwidth per direction, one-shot (1: each rank reads every peer's buffer; 0: ring or two-shot)]; a call takes its group size's fastest row that takes the message (other sizes: comm_latency_us and comm_eta_scale_up over a ring)",
       true, 5},
      {"ll_eta_scale_up", K::fraction, true, true, true, "fraction of the NVLink bandwidth its low-latency (decode) all-to-all reaches (default: comm_eta_scale_up)", true},
      {"ll_eta_scale_out", K::fraction, true, true, true, "fraction of the network bandwidth its low-latency all-to-all reaches (default: comm_eta_scale_out)", true},
      {"ll_latency_intranode_us", K::number, true, true, true, "fixed time per low-latency all-to-all call within one node (microseconds; default: comm_latency_us)", true},
      {"ll_latency_internode_us", K::number, true, true, true, "fixed time per low-latency all-to-all call that crosses the network (microseconds; default: comm_latency_us)", true},
      {"normal_eta_scale_up", K::fraction, true, true, true, "fraction of the NVLink bandwidth its normal (prefill) all-to-all reaches (default: comm_eta_scale_up)", true},
      {"normal_eta_scale_out", K::fraction, true, true, true, "fraction of the network bandwidth its normal all-to-all reaches (default: comm_eta_scale_out)", true},
      {"normal_latency_intranode_us", K::number, true, true, true, "fixed time per normal all-to-all call within one node (microseconds; default: comm_latency_us)", true},
      {"normal_latency_internode_us", K::number, true, true, true, "fixed time per normal all-to-all call that crosses the network, its layout exchange included (microseconds; default: comm_latency_us)", true},
      {"ll_sm_us_per_token", K::number, true, true, true, "SM time of the low-latency dispatch and combine kernels (send and receive hook) per token a rank dispatches and MoE layer under two-batch overlap (microseconds)", true},
      {"comm_sms", K::count, true, true, true, "SMs the normal all-to-all kernels hold while two-batch overlap computes beside them", true},
      {"normal_overlap_slowdown", K::factor, true, true, true,
       "the normal all-to-all's time while two-batch overlap computes beside it over its time alone (default 1)", true},
      {"gqa_rope_kernels_prefill", K::count, true, true, true,
       "non-MLA models: kernels of their own around the prefill attention that rotate the new tokens' Q and K and write their K and V into the cache (0: inside the attention op; 1: one kernel for both; 2: a rotary kernel, then a cache write; 3: a rotary kernel, then a write of K and one of V)",
       true, 0, false, 3},
      {"gqa_rope_kernels_decode", K::count, true, true, true, "the same around the decode attention", true, 0, false, 3},
      {"deepgemm_hopper", K::flag, true, true, true,
       "block-scaled fp8 dense GEMMs (DeepSeek's 128 x 128 blocks) run DeepGEMM on Hopper (false: the engine's own block kernels)", true},
      {"deepgemm_blackwell", K::flag, true, true, true, "the same on Blackwell", true},
      {"gqa_decode_kernel_fuses_rope", K::flag, false, false, true,
       "no such decode kernel where TensorRT-LLM's decode kernel rotates and appends itself (MMHA; XQA's QGMMA over an fp8 cache on Hopper)", true},
      {"gqa_decode_xqa", K::flag, false, false, true,
       "GQA decode steps may run TensorRT-LLM's XQA kernels (false: every one runs MMHA, one block per query head, as before XQA; default true)", true},
      {"gqa_decode_xqa_group", K::count, false, false, true,
       "the only head group (query heads per KV head, per rank) the XQA kernels take, other groups' decode steps running MMHA (0: every group from 2 to 32, the default; 1: none)",
       true, 0, false, 32},
      {"gqa_decode_xqa_hopper_kernel", K::flag, false, false, true,
       "XQA has its Hopper kernel for an fp8 cache (QGMMA with TMA, which rotates and appends itself); false: Hopper runs the Ampere-style XQA kernel over an fp8 cache too, after the RoPE + KV-append kernel (default true)",
       true},
      {"gqa_decode_fp8_forces_xqa", K::flag, false, false, true,
       "an fp8 KV cache sends a GQA decode step to XQA however few its blocks (false: XQA's perf-gain test decides, as over a 16-bit cache; default true)", true},
      {"gqa_decode_multi_block", K::flag, false, false, true,
       "the decode kernels (XQA, MMHA) split a sequence's keys over several blocks, multi-block mode (false: one block per sequence and KV head, or query head for MMHA; default true)",
       true},
  };
  return specs;
}

const EngineParamSpec* find_engine_param(std::string_view key) {
  for (const EngineParamSpec& s : engine_param_specs())
    if (s.key == key) return &s;
  return nullptr;
}

std::vector<std::string_view> engine_params_of(EngineFamily f) {
  std::vector<std::string_view> out;
  for (const EngineParamSpec& s : engine_param_specs())
    if ((f == EngineFamily::vllm && s.vllm) || (f == EngineFamily::sglang && s.sglang) || (f == EngineFamily::trtllm && s.trtllm))
      out.push_back(s.key);
  return out;
}

double EngineProfile::num(std::string_view key) const {
  const auto it = params.find(std::string(key));
  return it == params.end() ? 0.0 : it->second.value;
}

std::string EngineProfile::source(std::string_view key) const {
  const auto it = params.find(std::string(key));
  return it == params.end() ? std::string() : it->second.source;
}

std::string engine_profile_problem(const EngineProfile& p) {
  if (p.has("moe_imbalance") && p.num("moe_imbalance") < 1)
    return "moe_imbalance: the busiest rank holds at least the mean (expected a number >= 1)";
  if (p.has("moe_imbalance_by_ep")) {
    if (p.has("moe_imbalance")) return "moe_imbalance_by_ep: give it or moe_imbalance, not both";
    double last_ep = 1;
    for (const std::vector<double>& row : p.params.at("moe_imbalance_by_ep").rows) {
      std::ostringstream at;
      at << "moe_imbalance_by_ep: [" << row[0] << ", " << row[1] << "] ";
      if (row[0] <= last_ep || row[0] != std::floor(row[0])) return at.str() + "(expected whole EP sizes from 2, ascending)";
      if (row[1] < 1) return at.str() + "(the busiest rank holds at least the mean: expected an imbalance >= 1)";
      last_ep = row[0];
    }
  }
  if (p.has("tp_allreduce")) {
    const auto& rows = p.params.at("tp_allreduce").rows;
    for (const std::vector<double>& row : rows) {
      std::ostringstream at;
      at << "tp_allreduce: [" << row[0] << ", " << row[1] << ", " << row[2] << ", " << row[3] << ", " << row[4] << "] ";
      if (row[0] < 2 || row[0] != std::floor(row[0])) return at.str() + "(expected a whole group of at least 2 ranks)";
      if (row[1] != std::floor(row[1])) return at.str() + "(expected whole bytes, 0 for any message)";
      if (row[3] <= 0 || row[3] > 1) return at.str() + "(expected a fraction of the NVLink bandwidth above 0, at most 1)";
      if (row[4] != 0 && row[4] != 1) return at.str() + "(expected one-shot 0 or 1)";
    }
    // Every group size needs a row that takes any message: else a message past every row's limit
    // would fall back to the generic ring, which may be faster than the rows that stopped it.
    for (const std::vector<double>& row : rows)
      if (std::none_of(rows.begin(), rows.end(), [&](const std::vector<double>& r) { return r[0] == row[0] && r[1] == 0; })) {
        std::ostringstream at;
        at << "tp_allreduce: no row for " << row[0] << " ranks takes any message (expected one with max bytes 0)";
        return at.str();
      }
  }
  if (p.family != EngineFamily::sglang) return {};
  const std::vector<std::string_view> tiers = {"mem_util_tp1", "mem_util_tp2", "mem_util_tp4", "mem_util_tp8", "mem_util_tp16"};
  std::vector<std::string_view> reserve;
  for (const EngineParamSpec& s : engine_param_specs())
    if (s.sglang && (s.key.rfind("reserved_", 0) == 0 || s.key == "gpu_tiers")) reserve.push_back(s.key);
  auto count_of = [&](const std::vector<std::string_view>& keys) {
    return std::count_if(keys.begin(), keys.end(), [&](std::string_view k) { return p.has(k); });
  };
  const auto nt = count_of(tiers), nr = count_of(reserve);
  auto missing = [&](const std::vector<std::string_view>& keys) {
    for (std::string_view k : keys)
      if (!p.has(k)) return std::string(k);
    return std::string();
  };
  if (nt == 0 && nr == 0) return "needs a default-fraction rule: the mem_util_tp* tiers or the reserved_* rule with gpu_tiers";
  if (nt > 0 && nr > 0) return "give one default-fraction rule: the mem_util_tp* tiers or the reserved_* rule, not both";
  std::ostringstream lacks;
  if (nt > 0 && nt < static_cast<long>(tiers.size())) lacks << "the tier rule lacks parameters." << missing(tiers);
  if (nr > 0 && nr < static_cast<long>(reserve.size())) lacks << "the reserve rule lacks parameters." << missing(reserve);
  if (!lacks.str().empty()) return lacks.str();
  if (nr > 0) {
    const auto& rows = p.params.at("gpu_tiers").rows;
    if (rows.empty() || rows.back()[0] != 0) return "parameters.gpu_tiers: the last row's bound must be 0 (every larger GPU)";
    for (std::size_t i = 0; i + 1 < rows.size(); ++i)
      if (rows[i][0] <= 0 || (i > 0 && rows[i][0] <= rows[i - 1][0])) return "parameters.gpu_tiers: bounds must rise, the last being 0";
  }
  return {};
}

std::string EngineProfile::label() const { return std::string(to_string(family)) + "@" + since.text + "+"; }

namespace {

constexpr double kGiBf = static_cast<double>(kGiB);
// Bytes from a real number, saturated to ±2^62 (so sums of a few lines cannot overflow either) and
// 0 for NaN: profile numbers are bounded by the parser, but their products need not be.
Bytes to_bytes(double x) {
  constexpr double kMax = 4611686018427387904.0;  // 2^62
  if (std::isnan(x)) return Bytes{0};
  return Bytes{static_cast<std::int64_t>(std::clamp(x, -kMax, kMax))};
}
Bytes gib(double g) { return to_bytes(std::round(g * kGiBf)); }
std::int64_t count(const EngineProfile& p, std::string_view key) { return static_cast<std::int64_t>(std::llround(p.num(key))); }

std::int64_t next_pow2(std::int64_t x) {
  std::int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

// A tensor's bytes on one rank under the engine's layout rules: under DP attention, the engine may
// split routed experts (without EP) and dense MLPs over all TP x DP ranks instead of TP alone.
Bytes engine_tensor_bytes(const ModelSpec& m, const EngineProfile& p, const WeightTensor& t, const WeightPlan& plan, const Parallelism& par) {
  const bool mlp = t.group == WeightGroup::dense_mlp || t.group == WeightGroup::shared_experts;
  const bool over_dp = par.dp > 1 && ((t.shard == Shard::expert && par.ep <= 1 && p.flag("moe_over_dp")) || (mlp && p.flag("dense_mlp_over_dp")));
  if (over_dp) return Bytes{ceil_div(tensor_bytes(t, plan).value, par.ranks())};
  return tensor_bytes_per_rank(m, t, plan, par);
}

// One rows × cols matrix in bf16, or in the checkpoint's linear format (block scales included).
Bytes matrix_bytes(std::int64_t rows, std::int64_t cols, const WeightPlan& plan, bool bf16) {
  return weight_matrix_bytes(rows, cols, bf16 ? weight_format(WeightDtype::bf16) : linear_format(plan));
}

}  // namespace

Bytes engine_weight_bytes(const ModelSpec& m, const EngineProfile& p, const WeightPlan& weights, const Parallelism& par, bool mtp) {
  Bytes total{0};
  for (const WeightTensor& t : weight_tensors(m)) {
    if (t.group == WeightGroup::mtp && !mtp) continue;
    total += engine_tensor_bytes(m, p, t, weights, par);
  }
  if (m.mla) {
    const MlaDims& a = *m.mla;
    const std::int64_t layers = m.num_layers() + (mtp ? m.mtp_layers : 0);
    const std::int64_t heads = ceil_div(m.heads, par.tp);
    if (p.flag("mla_uk_uv_copy")) {
      // W_UK (heads·d_nope × r) and W_UV (heads·d_v × r), split from kv_b_proj.
      const bool bf16 = p.flag("mla_uk_uv_copy_bf16");
      total += (matrix_bytes(heads * a.qk_nope_head_dim, a.kv_lora_rank, weights, bf16) +
                matrix_bytes(heads * a.v_head_dim, a.kv_lora_rank, weights, bf16)) * layers;
    }
    if (p.flag("mla_fused_q_o")) {
      // W_UQ·W_UK (heads·r × q_lora_rank, or × hidden) and W_UV·W_O (hidden × heads·r).
      const std::int64_t q_in = a.q_lora_rank > 0 ? a.q_lora_rank : m.hidden;
      total += (matrix_bytes(heads * a.kv_lora_rank, q_in, weights, false) + matrix_bytes(m.hidden, heads * a.kv_lora_rank, weights, false)) * layers;
    }
  }
  return total;
}

Bytes engine_kv_bytes_per_token(const ModelSpec& m, const EngineProfile& p, KvDtype kv, const Parallelism& par, std::int64_t mtp_layers) {
  const std::int64_t layers = m.num_layers() + mtp_layers;
  if (m.mla && !p.flag("mla_latent_cache")) {
    // Before MLA support: per-head K and V of the expanded model, head size padded.
    const MlaDims& a = *m.mla;
    std::int64_t head = std::max(a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim);
    if (p.flag("mha_head_size_pow2")) head = next_pow2(head);
    const std::int64_t per_layer = kv_vector_bytes(sat_mul(sat_mul(ceil_div(m.heads, par.tp), head), 2), kv).total().value;
    return Bytes{sat_mul(per_layer, layers)};
  }
  Bytes per_layer = kv_bytes_per_token_per_layer(m, kv, par.tp).total();
  if (m.indexer) per_layer += indexer_bytes_per_token_per_layer(*m.indexer);
  if (m.mla && p.has("mla_align_bytes") && count(p, "mla_align_bytes") > 1) per_layer = Bytes{round_up(per_layer.value, count(p, "mla_align_bytes"))};
  return per_layer * layers;
}

Bytes profiling_activation(const ModelSpec& m, const EngineProfile& p, const Parallelism& par, std::int64_t tokens, std::int64_t seqs) {
  const double T = static_cast<double>(tokens), h = static_cast<double>(m.hidden);
  const double hidden = 2.0 * T * p.num("hidden_copies") * h;
  // Dense MLP: gate+up, the activation's output, and the hidden tensors.
  bool dense = false;
  for (const LayerSpec& l : m.layers) dense = dense || !l.moe;
  const double mlp = dense ? 2.0 * T * p.num("mlp_copies") * static_cast<double>(ceil_div(m.intermediate, par.tp)) : 0.0;
  double moe = 0;
  if (m.moe) {
    // Fused MoE workspace over M = min(T, chunk) tokens: cache1 M·k·N, cache2 M·k·N/2, cache3 M·k·h
    // (2 B each), N = 2·I_e per rank; plus the quantized input (1 B) for fp8 weights.
    const double M = std::min(T, p.num("moe_chunk_tokens") > 0 ? p.num("moe_chunk_tokens") : T);
    const double k = static_cast<double>(m.moe->experts_per_token);
    const double ranks = static_cast<double>(par.ep > 1 ? 1 : (p.flag("moe_over_dp") ? par.ranks() : par.tp));
    const double N = 2.0 * static_cast<double>(m.moe->expert_intermediate) / ranks;
    moe = 2.0 * M * k * (N + N / 2 + h) + M * h;
  }
  const double vocab = static_cast<double>(round_up(m.vocab, std::max<std::int64_t>(1, count(p, "vocab_pad"))));
  const double n = static_cast<double>(std::min(seqs, tokens));
  const double sampler = p.num("sampler_bytes_per_logit") * n * vocab + 2.0 * T * h + 2.0 * n * h;
  const double peak = std::max({hidden + mlp, hidden + moe, sampler});
  return to_bytes(std::round(peak));
}

namespace {

double sglang_tier_fraction(const EngineProfile& p, std::int64_t tp, std::string& source) {
  const char* key = tp >= 16 ? "mem_util_tp16" : tp >= 8 ? "mem_util_tp8" : tp >= 4 ? "mem_util_tp4" : tp >= 2 ? "mem_util_tp2" : "mem_util_tp1";
  source = p.source(key);
  return p.num(key);
}

// Prefill CUDA-graph capture sizes up to max_bs (sgl-project/sglang server_args.py:1861-1878 @2a51479a,
// _generate_prefill_cuda_graph_batch_sizes): 4..32 step 4, 48..256 step 16, 288..512 step 32,
// 576..1024 step 64, 1280..4096 step 256, then 4608.. step 512.
std::int64_t prefill_graph_sizes(std::int64_t max_bs) {
  std::int64_t n = 0;
  const std::int64_t spans[][3] = {{4, 32, 4}, {48, 256, 16}, {288, 512, 32}, {576, 1024, 64}, {1280, 4096, 256}, {4608, max_bs, 512}};
  for (const auto& sp : spans)
    for (std::int64_t v = sp[0]; v <= sp[1] && v <= max_bs; v += sp[2]) ++n;
  return n;
}

void add_line(EngineCapacity& r, std::string key, std::string label, Bytes b, std::string source) {
  r.lines.push_back(BudgetLine{std::move(key), std::move(label), b, std::move(source)});
}

}  // namespace

SglangFraction sglang_reserved_fraction(const EngineProfile& p, const HardwareSpec& hw, const ModelSpec& m, const Parallelism& par,
                                        const EngineSettings& s) {
  SglangFraction f;
  const Bytes mem = hw.memory_smi_total.value > 0 ? hw.memory_smi_total : hw.memory_torch_total.value > 0 ? hw.memory_torch_total : hw.memory_capacity;
  f.gpu_mem_mib = static_cast<double>(mem.value) / static_cast<double>(kMiB);
  // SGLang's --tp counts every GPU of the deployment; DP attention divides it into dp groups.
  const std::int64_t ranks = par.ranks();
  const auto& tiers = p.params.at("gpu_tiers").rows;
  std::vector<double> row = tiers.back();
  for (const auto& t : tiers)
    if (t[0] > 0 && f.gpu_mem_mib < t[0] * 1024.0) {
      row = t;
      break;
    }
  f.chunked_prefill_size = s.max_batched_tokens.value_or(static_cast<std::int64_t>(row[1]));
  f.cuda_graph_max_bs = static_cast<std::int64_t>(ranks < 4 ? row[2] : row[3]);
  const double bs = static_cast<double>(f.cuda_graph_max_bs);
  double r = p.num("reserved_base_mib") + static_cast<double>(std::max<std::int64_t>(f.chunked_prefill_size, 2048)) * p.num("reserved_per_prefill_token_mib") +
             bs * p.num("reserved_per_graph_bs_mib") + static_cast<double>(ranks) * p.num("reserved_per_rank_mib");
  if (par.dp > 1) {
    r += bs * static_cast<double>(par.dp) * p.num("reserved_dp_per_bs_mib");
    if (bs > p.num("reserved_dp_large_bs_above")) r += bs * static_cast<double>(par.dp) * p.num("reserved_dp_large_bs_mib");
  }
  const bool graphs = !s.enforce_eager.value_or(false);
  if (graphs)
    r += m.is_mla() ? p.num("reserved_mla_prefill_graphs_mib")
                    : static_cast<double>(prefill_graph_sizes(f.chunked_prefill_size)) * p.num("reserved_prefill_graph_mib");
  if (f.gpu_mem_mib > p.num("reserved_floor_above_gib") * 1024.0) r = std::max(r, p.num("reserved_floor_mib"));
  if (s.mtp.value_or(0) > 0) r += p.num("reserved_spec_mib");
  f.reserved_mib = r;
  f.fraction = f.gpu_mem_mib > 0 ? std::round((f.gpu_mem_mib - r) / f.gpu_mem_mib * 1000.0) / 1000.0 : 0.0;
  std::ostringstream why;
  why << "(" << static_cast<std::int64_t>(f.gpu_mem_mib) << " MiB "
      << (hw.memory_smi_total.value > 0 ? "as nvidia-smi reports it" : "(no nvidia-smi figure in the GPU file: torch's total)") << " - "
      << std::llround(r) << " MiB reserved) / total, rounded to 3 places; chunked_prefill_size " << f.chunked_prefill_size
      << ", cuda-graph max_bs " << f.cuda_graph_max_bs << " (" << p.source("reserved_base_mib") << ")";
  f.explanation = why.str();
  return f;
}

EngineCapacity engine_capacity(const ModelSpec& m, const HardwareSpec& hw, const EngineProfile& p, const WeightPlan& weights,
                               const Parallelism& par, KvDtype kv, const EngineSettings& s, std::int64_t context) {
  EngineCapacity r;
  r.profile = &p;
  if (const LayoutVerdict lv = check_layout(m, par); !lv.ok()) {
    r.verdict = lv.verdict;
    return r;
  }
  r.total_seen = hw.memory_torch_total.value > 0 ? hw.memory_torch_total : hw.memory_capacity;
  if (hw.memory_torch_total.value <= 0)
    r.notes.push_back("The GPU file gives no total as torch reports it (memory_torch_total_bytes); the datasheet capacity stands in, which overstates the pool by the memory the driver reserves.");
  r.max_model_len = s.max_model_len.value_or(m.max_position_embeddings > 0 ? m.max_position_embeddings : 4096);
  r.cuda_graphs = !s.enforce_eager.value_or(false);
  const bool mtp_on = s.mtp ? *s.mtp > 0 : p.flag("loads_mtp");
  r.mtp = mtp_on ? m.mtp_layers : 0;
  const std::int64_t default_block = m.mla && p.has("mla_block_size") && count(p, "mla_block_size") > 0 ? count(p, "mla_block_size") : count(p, "block_size");
  r.block_size = std::max<std::int64_t>(1, s.block_size.value_or(default_block));
  r.weights = engine_weight_bytes(m, p, weights, par, mtp_on);
  r.kv_bytes_per_token = engine_kv_bytes_per_token(m, p, kv, par, r.mtp);

  const double total = static_cast<double>(r.total_seen.value);
  Bytes kv_budget{0};
  switch (p.family) {
    case EngineFamily::vllm:
    case EngineFamily::trtllm: {
      r.mem_util = s.mem_util.value_or(p.num("mem_util"));
      r.mem_util_source = s.mem_util ? "--mem-util" : p.source("mem_util");
      // Some versions default smaller batches on smaller GPUs (vLLM V1: below 70 GiB, or an A100).
      const bool small_gpu = (p.has("large_gpu_gib") && static_cast<double>(r.total_seen.value) < p.num("large_gpu_gib") * kGiBf) ||
                             (p.flag("a100_small_defaults") && hw.name.find("A100") != std::string::npos);
      const std::int64_t default_tokens = count(p, small_gpu && p.has("small_gpu_max_batched_tokens") ? "small_gpu_max_batched_tokens" : "max_batched_tokens");
      r.max_num_seqs = s.max_num_seqs.value_or(count(p, small_gpu && p.has("small_gpu_max_num_seqs") ? "small_gpu_max_num_seqs" : "max_num_seqs"));
      if (s.max_batched_tokens) {
        r.max_batched_tokens = *s.max_batched_tokens;
      } else if (p.family == EngineFamily::vllm) {
        const std::int64_t above = count(p, "chunked_prefill_above");
        bool chunked = above == 0 || r.max_model_len > above;
        if (m.mla && !p.flag("mla_chunked_prefill")) chunked = false;
        r.max_batched_tokens = chunked ? default_tokens : std::max(r.max_model_len, count(p, "unchunked_min_tokens"));
        r.notes.push_back(chunked ? "Chunked prefill on: the profiling pass runs max_num_batched_tokens = " + std::to_string(r.max_batched_tokens) + " tokens."
                                  : "Chunked prefill off for this model and version: the profiling pass runs max(max_model_len, " +
                                        std::to_string(count(p, "unchunked_min_tokens")) + ") = " + std::to_string(r.max_batched_tokens) + " tokens.");
      } else {
        r.max_batched_tokens = default_tokens;
      }
      r.activation = profiling_activation(m, p, par, r.max_batched_tokens, r.max_num_seqs);
      const double doublings = std::log2(static_cast<double>(std::max<std::int64_t>(1, par.tp)));
      r.non_torch = gib(p.num("non_torch_gib") + p.num("non_torch_per_tp_doubling_gib") * doublings +
                        (m.moe && p.has("non_torch_moe_gib") ? p.num("non_torch_moe_gib") : 0.0));
      r.cuda_graph = r.cuda_graphs && p.has("cuda_graph_gib") ? gib(p.num("cuda_graph_gib")) : Bytes{0};
      if (p.family == EngineFamily::vllm) {
        const Bytes usable = to_bytes(std::floor(total * r.mem_util));
        add_line(r, "held_back", "held back (1 - gpu_memory_utilization)", r.total_seen - usable, r.mem_util_source);
        add_line(r, "weights", "weights", r.weights, "weights of the layout" + std::string(mtp_on ? " (MTP loaded)" : ""));
        add_line(r, "activation", "profiling peak activation", r.activation, "profile_run over max_num_batched_tokens and max_num_seqs");
        add_line(r, "non_torch", "non-torch memory", r.non_torch, p.source("non_torch_gib"));
        if (r.cuda_graph.value > 0) add_line(r, "cuda_graphs", "CUDA graphs", r.cuda_graph, p.source("cuda_graph_gib"));
        kv_budget = usable - r.weights - r.activation - r.non_torch - r.cuda_graph;
      } else {
        const Bytes free_after = r.total_seen - r.weights - r.activation - r.non_torch;
        const Bytes kept = to_bytes(std::floor(static_cast<double>(std::max<std::int64_t>(0, free_after.value)) * (1.0 - r.mem_util)));
        add_line(r, "weights", "weights", r.weights, "weights of the layout" + std::string(mtp_on ? " (MTP loaded)" : ""));
        add_line(r, "activation", "warm-up peak activation", r.activation, "warm-up forward over max_num_tokens");
        add_line(r, "non_torch", "non-torch memory", r.non_torch, p.source("non_torch_gib"));
        add_line(r, "held_back", "held back (1 - free_gpu_memory_fraction) of the free memory", kept, r.mem_util_source);
        kv_budget = free_after - kept;
      }
      break;
    }
    case EngineFamily::sglang: {
      std::string src;
      double fraction = 0;
      if (p.has("gpu_tiers")) {
        const SglangFraction f = sglang_reserved_fraction(p, hw, m, par, s);
        fraction = f.fraction;
        src = f.explanation;
        r.max_batched_tokens = f.chunked_prefill_size;
      } else {
        fraction = sglang_tier_fraction(p, par.ranks(), src);
        r.max_batched_tokens = s.max_batched_tokens.value_or(0);
      }
      r.mem_util = s.mem_util.value_or(fraction);
      r.mem_util_source = s.mem_util ? "--mem-util" : src;
      if (!(r.mem_util > 0 && r.mem_util <= 1)) {
        std::ostringstream why;
        why << "the profile's default mem_fraction_static is " << r.mem_util << ", not a fraction in (0, 1]: " << src;
        r.verdict = Verdict::no(why.str());
        return r;
      }
      if (!s.mem_util) {
        std::ostringstream note;
        note << "Default mem_fraction_static " << fraction << ": " << src << ".";
        r.notes.push_back(note.str());
      }
      const Bytes pre = gib(p.num("pre_load_gib"));
      const Bytes f0 = r.total_seen - pre;
      const Bytes outside = to_bytes(std::ceil(static_cast<double>(f0.value) * (1.0 - r.mem_util)));
      add_line(r, "pre_load", "CUDA context and NCCL before the first reading", pre, p.source("pre_load_gib"));
      add_line(r, "held_back", "outside the static pool (1 - mem_fraction_static), for activations and CUDA graphs", outside, r.mem_util_source);
      add_line(r, "weights", "weights", r.weights, "weights of the layout" + std::string(mtp_on ? " (MTP loaded)" : ""));
      kv_budget = f0 - outside - r.weights;
      break;
    }
  }

  if (kv_budget.value <= 0) {
    r.kv_pool = Bytes{0};
    add_line(r, "kv_pool", "KV pool", Bytes{0}, "what is left");
    add_line(r, "over_budget", "over budget (negative: the lines above exceed the total)", kv_budget, "");
    r.verdict = Verdict::no("weights, activation and reserved memory exceed the engine's budget");
    return r;
  }
  const std::int64_t block_bytes = sat_mul(r.kv_bytes_per_token.value, r.block_size);
  r.blocks = block_bytes > 0 ? kv_budget.value / block_bytes : 0;
  r.engine_kv_tokens = sat_mul(r.blocks, r.block_size);
  r.kv_pool = Bytes{sat_mul(r.blocks, block_bytes)};
  add_line(r, "kv_pool", "KV pool (whole blocks)", r.kv_pool, "what is left, in whole blocks");
  add_line(r, "block_rounding", "left over by block rounding", kv_budget - r.kv_pool, "");
  r.engine_max_concurrency = r.max_model_len > 0 ? static_cast<double>(r.engine_kv_tokens) / static_cast<double>(r.max_model_len) : 0.0;
  const std::int64_t ctx = context > 0 ? context : r.max_model_len;
  const Bytes seq = sequence_kv_bytes(m, kv, par.tp, ctx, r.block_size);
  // The engine's own per-token layout (padding, MTP layer) scales the sequence like the token.
  const Bytes plain = kv_bytes_per_token(m, kv, par.tp).total() + indexer_bytes_per_token(m);
  const double scale = plain.value > 0 ? static_cast<double>(r.kv_bytes_per_token.value) / static_cast<double>(plain.value) : 1.0;
  const double seq_bytes = static_cast<double>(seq.value) * scale;
  r.sequences_at_context = seq_bytes > 0 ? static_cast<std::int64_t>(std::floor(static_cast<double>(r.kv_pool.value) / seq_bytes)) : 0;
  if (r.sequences_at_context < 1) r.verdict = Verdict::no("the engine's KV pool cannot hold one sequence of the requested context");
  return r;
}

CapacityResult as_capacity_result(const EngineCapacity& e, const ModelSpec& m, const Parallelism& par, KvDtype kv, std::int64_t context) {
  CapacityResult r;
  r.verdict = e.verdict;
  if (e.lines.empty()) return r;  // the layout cannot run the model
  r.params = count_params(m);
  r.memory_per_rank = e.total_seen;
  Bytes outside{0}, budget{0};
  for (const BudgetLine& l : e.lines) {
    if (l.key == "held_back" || l.key == "pre_load") outside += l.bytes;
    if (l.key == "kv_pool" || l.key == "block_rounding" || l.key == "over_budget") budget += l.bytes;
  }
  r.usable_per_rank = e.total_seen - outside;
  r.weight_bytes_per_rank = e.weights;
  r.reserve_bytes_per_rank = r.usable_per_rank - e.weights - budget;
  r.kv_pool_bytes_per_rank = e.kv_pool;
  r.kv_bytes_per_token_per_rank = e.kv_bytes_per_token;
  r.max_tokens_per_rank = e.engine_kv_tokens;
  r.max_tokens_cluster = sat_mul(e.engine_kv_tokens, par.dp);
  r.sequence_bytes_per_rank = sequence_kv_bytes(m, kv, par.tp, context > 0 ? context : e.max_model_len, e.block_size);
  r.sequences_per_rank = e.sequences_at_context;
  r.max_sequences = sat_mul(e.sequences_at_context, par.dp);
  return r;
}

}  // namespace mlaplan
