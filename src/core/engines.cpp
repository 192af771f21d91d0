#include "mlaplan/core/engines.hpp"

#include <algorithm>
#include <vector>

namespace mlaplan {

namespace {
PathKind vllm(double query, double, double threshold) { return query <= threshold ? PathKind::absorb : PathKind::expand; }

PathKind sglang(double query, double prefix, double threshold) {
  if (query <= 1) return PathKind::absorb;
  return prefix == 0 || prefix >= threshold ? PathKind::expand : PathKind::absorb;
}

PathKind trtllm(double query, double prefix, double threshold) {
  if (query <= 1) return PathKind::absorb;
  return prefix + query <= threshold ? PathKind::expand : PathKind::absorb;
}
}  // namespace

std::string describe(const EnginePolicy& e) {
  const std::string t = std::to_string(static_cast<long long>(e.threshold));
  switch (e.axis) {
    case ThresholdAxis::query: return "absorb if Q <= " + t + ", else expand (reorder_batch_threshold " + t + ")";
    case ThresholdAxis::prefix:
      return "decode (Q = 1) absorbs; an extend (Q > 1, not speculative) expands if P = 0 or P >= " + t + ", else absorbs";
    case ThresholdAxis::context: return "generation (Q = 1) absorbs; a context request expands if P + Q <= " + t + ", else absorbs";
  }
  return {};
}

const std::array<EnginePolicy, 5>& engine_policies() {
  static const std::array<EnginePolicy, 5> policies{{
      {.key = "vllm_triton", .name = "vLLM Triton MLA", .axis = ThresholdAxis::query, .threshold = 1, .choose = vllm},
      {.key = "vllm_flashmla", .name = "vLLM FlashMLA", .axis = ThresholdAxis::query, .threshold = 128, .choose = vllm},
      {.key = "vllm_fa_mla", .name = "vLLM FlashAttention-MLA", .axis = ThresholdAxis::query, .threshold = 512, .choose = vllm},
      {.key = "sglang", .name = "SGLang", .axis = ThresholdAxis::prefix, .threshold = 8192, .choose = sglang},
      {.key = "trtllm", .name = "TensorRT-LLM", .axis = ThresholdAxis::context, .threshold = 10240, .choose = trtllm},
  }};
  return policies;
}

std::array<EngineOutcome, 5> engine_outcomes(const MlaGeometry& g, const Workload& base, double prefix, std::int64_t batch,
                                             const Roofline& rf, std::int64_t max_query) {
  Workload w = base;
  w.groups.assign(1, SequenceGroup{batch, 1, prefix});
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, max_query)) + 1;
  std::vector<Seconds> t_absorb(n), t_expand(n);
  for (std::size_t q = 1; q < n; ++q) {
    w.groups[0].query = static_cast<double>(q);
    t_absorb[q] = path_cost(mla_path(g, w, PathKind::absorb), rf).time;
    t_expand[q] = path_cost(mla_path(g, w, PathKind::expand), rf).time;
  }
  std::array<EngineOutcome, 5> out{};
  const auto& policies = engine_policies();
  for (std::size_t e = 0; e < policies.size(); ++e) {
    EngineOutcome& o = out[e];
    for (std::size_t q = 1; q < n; ++q) {
      const bool absorbs = policies[e].choose(static_cast<double>(q), prefix, policies[e].threshold) == PathKind::absorb;
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
