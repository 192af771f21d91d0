#include "mlaplan/core/engines.hpp"

#include <algorithm>
#include <vector>

namespace mlaplan {

bool EngineDispatch::all_absorbed() const { return std::all_of(absorbed.begin(), absorbed.end(), [](bool a) { return a; }); }
bool EngineDispatch::none_absorbed() const { return std::none_of(absorbed.begin(), absorbed.end(), [](bool a) { return a; }); }

std::string describe(const EnginePolicy& e) {
  const std::string t = std::to_string(static_cast<long long>(e.threshold));
  switch (e.axis) {
    case ThresholdAxis::query:
      return "splits the batch: requests with Q <= " + t + " absorb (decode kernels), the rest expand (reorder_batch_threshold " + t + ")";
    case ThresholdAxis::prefix_sum:
      return "decode (Q = 1) absorbs; an extend batch expands if the sum of its prefixes is 0 or >= " + t + ", else absorbs";
    case ThresholdAxis::packed_tokens:
      return "generation (Q = 1) absorbs; context requests expand, except for a DSA model when the batch's packed context tokens exceed " + t +
             " (then sparse; the threshold is TRTLLM_MLA_SHORT_SEQ_MHA_THRESHOLD of PR #11677)";
  }
  return {};
}

const std::array<EnginePolicy, 5>& engine_policies() {
  static const std::array<EnginePolicy, 5> policies{{
      {.key = "vllm_triton", .name = "vLLM Triton MLA", .axis = ThresholdAxis::query, .threshold = 1, .fold_weights = WeightDtype::bf16},
      {.key = "vllm_flashmla", .name = "vLLM FlashMLA", .axis = ThresholdAxis::query, .threshold = 128, .fold_weights = WeightDtype::bf16},
      {.key = "vllm_fa_mla", .name = "vLLM FlashAttention-MLA", .axis = ThresholdAxis::query, .threshold = 512, .fold_weights = WeightDtype::bf16},
      {.key = "sglang", .name = "SGLang", .axis = ThresholdAxis::prefix_sum, .threshold = 8192, .fold_weights = WeightDtype::bf16},
      {.key = "trtllm", .name = "TensorRT-LLM", .axis = ThresholdAxis::packed_tokens, .threshold = 10240, .fold_weights = std::nullopt},
  }};
  return policies;
}

EngineDispatch dispatch(const EnginePolicy& e, const ModelSpec& m, const Workload& w) {
  EngineDispatch d;
  d.absorbed.assign(w.groups.size(), false);
  const bool dsa = m.indexer.has_value();
  // Sums over the extend (Q > 1) requests of one rank's batch: data-parallel attention gives each
  // rank its own batch.
  double prefix_sum = 0, kv_sum = 0, kv_max = 0;
  for (const SequenceGroup& g : w.groups) {
    if (g.query <= 1) continue;
    const double b = sequences_per_rank(g, w.par);
    prefix_sum += b * g.prefix;
    kv_sum += b * (g.prefix + g.query);
    kv_max = std::max(kv_max, g.prefix + g.query);
  }
  bool extend_expands = false;
  switch (e.axis) {
    case ThresholdAxis::query:
      // vLLM: per request. A DSA model's sparse backend runs every token through the MQA kernels
      // (SparseMLAAttentionImpl: num_mha_tokens = 0).
      for (std::size_t i = 0; i < w.groups.size(); ++i) d.absorbed[i] = dsa || w.groups[i].query <= e.threshold;
      return d;
    case ThresholdAxis::prefix_sum:
      // SGLang, fa3/flashinfer/flashmla/cutlass_mla (attention_backend_handler.py L76-106 @2a51479a):
      // MHA iff Σ prefix == 0 or >= threshold. DSA (dsa_backend.py L2251-2287): dense MHA iff every
      // request's P + Q <= index_topk and Σ (P + Q) <= 128K (SGLANG_MAX_KV_CHUNK_CAPACITY).
      extend_expands = dsa ? (kv_max <= static_cast<double>(m.indexer->topk) && kv_sum <= 131072.0)
                           : (prefix_sum == 0 || prefix_sum >= e.threshold);
      break;
    case ThresholdAxis::packed_tokens:
      // TensorRT-LLM (modules/attention.py, MLA.forward_context): context requests of a dense MLA
      // model always run MHA; a DSA model's run dense MHA when the packed context tokens are at most
      // TRTLLM_MLA_SHORT_SEQ_MHA_THRESHOLD (PR #11677), else sparse MLA.
      extend_expands = !dsa || kv_sum <= e.threshold;
      break;
  }
  for (std::size_t i = 0; i < w.groups.size(); ++i) d.absorbed[i] = w.groups[i].query <= 1 || !extend_expands;
  return d;
}

std::array<EngineOutcome, 5> engine_outcomes(const ModelSpec& m, const MlaGeometry& g, const Workload& base, double prefix,
                                             std::int64_t batch, const Roofline& rf, std::int64_t max_query) {
  Workload w = base;
  w.groups.assign(1, SequenceGroup{batch, 1, prefix});
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, max_query)) + 1;
  std::vector<Seconds> t_absorb(n), t_expand(n);
  std::array<std::vector<bool>, 5> absorbs;
  const auto& policies = engine_policies();
  for (auto& a : absorbs) a.assign(n, true);
  for (std::size_t q = 1; q < n; ++q) {
    w.groups[0].query = static_cast<double>(q);
    t_absorb[q] = path_cost(mla_path(g, w, PathKind::absorb), rf).time;
    t_expand[q] = path_cost(mla_path(g, w, PathKind::expand), rf).time;
    for (std::size_t e = 0; e < policies.size(); ++e) absorbs[e][q] = dispatch(policies[e], m, w).all_absorbed();
  }
  std::array<EngineOutcome, 5> out{};
  for (std::size_t e = 0; e < policies.size(); ++e) {
    EngineOutcome& o = out[e];
    for (std::size_t q = 1; q < n; ++q) {
      const bool a = absorbs[e][q];
      if (!a && o.expands_from_query == 0) o.expands_from_query = static_cast<std::int64_t>(q);
      const double penalty = (a ? t_absorb[q] : t_expand[q]) / std::min(t_absorb[q], t_expand[q]) - 1;
      if (penalty > o.worst_penalty) {
        o.worst_penalty = penalty;
        o.worst_penalty_query = static_cast<std::int64_t>(q);
      }
    }
  }
  return out;
}

}  // namespace mlaplan
