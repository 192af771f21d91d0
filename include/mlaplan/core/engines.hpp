#pragma once
// What serving engines hard-code for the expand/absorb choice, as policies of (Q, P).
// Sources: shared/reference/facts.md §4.
#include <array>
#include <string_view>

#include "mlaplan/core/paths.hpp"

namespace mlaplan {

struct EnginePolicy {
  std::string_view key;   // snake_case name for JSON/CSV columns
  std::string_view name;  // human name
  std::string_view rule;  // the rule as modelled
  // The path the engine runs for a sequence of `query` new tokens after `prefix` cached ones.
  PathKind (*choose)(double query, double prefix);
};

// vLLM's reorder_batch_threshold (Triton MLA 1, FlashMLA 128, FlashAttention-MLA 512): requests
// with at most that many query tokens take the decode (absorbed) pathway. SGLang (fa3, flashinfer,
// flashmla backends): decode absorbs; an extend runs MHA (expanded, chunked) when its prefix is 0
// or at least SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD = 8,192, else absorbed MLA. TensorRT-LLM:
// context requests of at most TRTLLM_MLA_SHORT_SEQ_MHA_THRESHOLD = 10,240 tokens run dense MHA.
const std::array<EnginePolicy, 5>& engine_policies();

}  // namespace mlaplan
