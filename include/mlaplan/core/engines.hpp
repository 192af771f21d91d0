#pragma once
// What serving engines hard-code for the expand/absorb choice, as policies of (Q, P).
// Sources: shared/reference/facts.md §4.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"

namespace mlaplan {

// The quantity an engine's fixed threshold is compared with.
enum class ThresholdAxis {
  query,    // new tokens of the request (vLLM's reorder_batch_threshold)
  prefix,   // cached tokens before them (SGLang's chunked-prefix-cache threshold)
  context,  // prefix + query (TensorRT-LLM's short-sequence MHA threshold)
};

struct EnginePolicy {
  std::string_view key;   // snake_case name for JSON/CSV columns
  std::string_view name;  // human name
  ThresholdAxis axis = ThresholdAxis::query;
  double threshold = 0;   // the engine's constant: the rule's text and the plots derive from it
  // The path the engine runs for a sequence of `query` new tokens after `prefix` cached ones.
  PathKind (*choose)(double query, double prefix, double threshold);
};

// vLLM's reorder_batch_threshold (Triton MLA 1, FlashMLA 128, FlashAttention-MLA 512): requests
// with at most that many query tokens take the decode (absorbed) pathway. SGLang (fa3, flashinfer,
// flashmla backends): decode absorbs; an extend runs MHA (expanded, chunked) when its prefix is 0
// or at least SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD = 8,192, else absorbed MLA. TensorRT-LLM:
// context requests of at most TRTLLM_MLA_SHORT_SEQ_MHA_THRESHOLD = 10,240 tokens run dense MHA.
const std::array<EnginePolicy, 5>& engine_policies();

// The rule as modelled, in words, with the policy's own threshold.
std::string describe(const EnginePolicy& e);

// How one engine's rule fares at a prefix, over query lengths 1 .. max_query.
struct EngineOutcome {
  std::int64_t expands_from_query = 0;   // the first Q the engine expands at (0: never)
  double worst_penalty = 0;              // max of T_chosen / min(T_absorb, T_expand) − 1
  std::int64_t worst_penalty_query = 0;  // where (0: the rule is never slower)
};

// Outcomes of every policy for `batch` sequences after `prefix` (attention core, per rank).
std::array<EngineOutcome, 5> engine_outcomes(const MlaGeometry& g, const Workload& base, double prefix, std::int64_t batch,
                                             const Roofline& rf, std::int64_t max_query);

}  // namespace mlaplan
