#include "mlaplan/core/engines.hpp"

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

}  // namespace mlaplan
