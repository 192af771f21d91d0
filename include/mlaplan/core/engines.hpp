#pragma once
// What serving engines do for the expand/absorb choice, as rules over the whole batch.
// Sources: shared/reference/facts.md §4 and the engines' code (cited per rule below).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"

namespace mlaplan {

// The quantity an engine's fixed threshold is compared with.
enum class ThresholdAxis {
  query,          // new tokens of each request (vLLM's reorder_batch_threshold): the batch is split
  prefix_sum,     // Σ cached prefix tokens over the extend requests of the batch (SGLang)
  packed_tokens,  // Σ tokens of the context requests of the batch (TensorRT-LLM's DSA short-sequence MHA)
};

struct EnginePolicy {
  std::string_view key;   // snake_case name for JSON/CSV columns
  std::string_view name;  // human name
  ThresholdAxis axis = ThresholdAxis::query;
  double threshold = 0;   // the engine's constant: the rule's text and the plots derive from it
  // The dtype of its W_UK/W_UV copies for the absorbed folds; none: the checkpoint's.
  std::optional<WeightDtype> fold_weights;
};

// vLLM V1 (vllm/v1/attention/backends/utils.py split_decodes_and_prefills; reorder_batch_threshold of
// the MLA backend: Triton MLA 1, FlashMLA 128, FlashAttention-MLA 512): requests with at most that
// many query tokens run the absorbed decode kernels, the others expanded with chunked context.
// SGLang (models/deepseek_common/attention_backend_handler.py; fa3, flashinfer, flashmla, cutlass_mla):
// decode absorbs; an extend batch runs MHA (expanded, chunked over the prefix) when the sum of its
// prefix lengths is 0 or at least SGLANG_CHUNKED_PREFIX_CACHE_THRESHOLD = 8,192, else absorbed MLA.
// TensorRT-LLM: generation absorbs; context requests of a DSA model run dense MHA when the batch's
// packed context tokens are at most TRTLLM_MLA_SHORT_SEQ_MHA_THRESHOLD = 10,240, else sparse MLA;
// other MLA models run their context requests expanded.
// Folds: vLLM keeps bf16 W_UK/W_UV (mla_attention.py process_weights_after_loading,
// get_and_maybe_dequant_weights), SGLang too on CUDA with 128x128 fp8 blocks
// (deepseek_weight_loader.py L524-530 @2a51479a); TensorRT-LLM on Hopper keeps them in fp8 with block
// scales (modules/attention.py MLA.create_weights).
const std::array<EnginePolicy, 5>& engine_policies();

// The rule as modelled, in words, with the policy's own threshold.
std::string describe(const EnginePolicy& e);

// How an engine runs a batch: per sequence group, absorbed (decode kernels over the latent; sparse
// for a DSA model) or expanded (up-projected K/V, chunked over a cached prefix).
struct EngineDispatch {
  std::vector<bool> absorbed;  // per group of the workload
  bool all_absorbed() const;
  bool none_absorbed() const;
};
EngineDispatch dispatch(const EnginePolicy& e, const ModelSpec& m, const Workload& w);

// How one engine's rule fares at a prefix for `batch` equal sequences, over query lengths
// 1 .. max_query (the batch sums of SGLang's and TensorRT-LLM's rules grow with the batch).
struct EngineOutcome {
  std::int64_t expands_from_query = 0;   // the first Q the engine expands at (0: never)
  double worst_penalty = 0;              // max of T_chosen / min(T_absorb, T_expand) − 1
  std::int64_t worst_penalty_query = 0;  // where (0: the rule is never slower)
};

// Outcomes of every policy for `batch` sequences after `prefix` (attention core, per rank).
std::array<EngineOutcome, 5> engine_outcomes(const ModelSpec& m, const MlaGeometry& g, const Workload& base, double prefix,
                                             std::int64_t batch, const Roofline& rf, std::int64_t max_query);

}  // namespace mlaplan
