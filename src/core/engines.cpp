#include "mlaplan/core/engines.hpp"

#include <algorithm>
#include <vector>

namespace mlaplan {

namespace {
template <int Threshold>
PathKind vllm(double query, double) { return query <= Threshold ? PathKind::absorb : PathKind::expand; }

PathKind sglang(double query, double prefix) {
  if (query <= 1) return PathKind::absorb;
  return prefix == 0 || prefix >= 8192 ? PathKind::expand : PathKind::absorb;
}

PathKind trtllm(double query, double prefix) {
  if (query <= 1) return PathKind::absorb;
  return prefix + query <= 10240 ? PathKind::expand : PathKind::absorb;
}
}  // namespace

const std::array<EnginePolicy, 5>& engine_policies() {
  static const std::array<EnginePolicy, 5> policies{{
      {"vllm_triton", "vLLM Triton MLA", "absorb if Q <= 1, else expand (reorder_batch_threshold 1)", vllm<1>},
      {"vllm_flashmla", "vLLM FlashMLA", "absorb if Q <= 128, else expand (reorder_batch_threshold 128)", vllm<128>},
      {"vllm_fa_mla", "vLLM FlashAttention-MLA", "absorb if Q <= 512, else expand (reorder_batch_threshold 512)", vllm<512>},
      {"sglang", "SGLang", "decode (Q = 1) absorbs; an extend (Q > 1, not speculative) expands if P = 0 or P >= 8192, else absorbs", sglang},
      {"trtllm", "TensorRT-LLM", "generation (Q = 1) absorbs; a context request expands if P + Q <= 10240, else absorbs", trtllm},
  }};
  return policies;
}

std::array<EngineOutcome, 5> engine_outcomes(const MlaGeometry& g, const Workload& base, double prefix, std::int64_t batch,
                                             const Roofline& rf, std::int64_t max_query) {
  Workload w = base;
  w.groups.assign(1, SequenceGroup{batch, 1, prefix});
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, max_query)) + 1;
  std::vector<double> t_absorb(n), t_expand(n);
  for (std::size_t q = 1; q < n; ++q) {
    w.groups[0].query = static_cast<double>(q);
    t_absorb[q] = path_cost(mla_path(g, w, PathKind::absorb), rf).time_s;
    t_expand[q] = path_cost(mla_path(g, w, PathKind::expand), rf).time_s;
  }
  std::array<EngineOutcome, 5> out{};
  const auto& policies = engine_policies();
  for (std::size_t e = 0; e < policies.size(); ++e) {
    EngineOutcome& o = out[e];
    for (std::size_t q = 1; q < n; ++q) {
      const bool absorbs = policies[e].choose(static_cast<double>(q), prefix) == PathKind::absorb;
      if (!absorbs && o.expands_from_query == 0) o.expands_from_query = static_cast<std::int64_t>(q);
      const double penalty = (absorbs ? t_absorb[q] : t_expand[q]) / std::min(t_absorb[q], t_expand[q]) - 1;
      if (penalty > o.worst_penalty) {
        o.worst_penalty = penalty;
        o.worst_penalty_query = static_cast<std::int64_t>(q);
      }
    }
  }
  return out;
}

}  // namespace mlaplan
