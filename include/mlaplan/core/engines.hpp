#pragma once
// What serving engines do for the expand/absorb choice, as rules over the whole batch. The rules'
// shapes are here; their numbers (thresholds, chunk sizes, fold dtypes) and the sources that justify
// them live in engines/dispatch/*.json, one file per engine version range.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlaplan/core/crossover.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"

namespace mlaplan {

// How an engine runs the extend requests (Q > 1 that are not speculative verification) of a dense
// MLA model; decode (Q = 1) always runs the absorbed kernels.
enum class ExtendRule {
  query_split,    // per request: Q <= threshold absorbs, the rest expand (vLLM's reorder_batch_threshold)
  prefix_sum,     // the whole extend batch expands iff Σ prefix == 0 or Σ prefix >= threshold (SGLang fa3 & co)
  no_prefix,      // the whole extend batch expands iff Σ prefix == 0 (SGLang triton)
  every_extend,   // every extend request expands (TensorRT-LLM context phase, SGLang trtllm_mla)
};
std::string_view to_string(ExtendRule r);
std::optional<ExtendRule> parse_extend_rule(std::string_view s);

// The same for a DSA model (an indexer): absorbed means the sparse kernels.
enum class DsaRule {
  sparse,          // every token through the sparse MQA kernels (vLLM's sparse MLA backends)
  dense_short,     // extend expands (dense MHA) iff every request's P + Q <= index_topk and Σ (P + Q) <= dsa_threshold (SGLang)
  packed_tokens,   // extend expands iff Σ (P + Q) over the extend requests <= dsa_threshold (TensorRT-LLM)
  max_kv,          // extend expands iff max (P + Q) over the extend requests <= dsa_threshold (TensorRT-LLM later)
  unsupported,     // the version predates DeepSeek-V3.2's sparse attention: it cannot serve a DSA model
};
std::string_view to_string(DsaRule r);
std::optional<DsaRule> parse_dsa_rule(std::string_view s);

struct EnginePolicy {
  std::string key;       // snake_case column name: "vllm_flashmla"
  std::string name;      // "vLLM FlashMLA"
  std::string engine;    // the profile it comes from: "vllm@0.8.0+"
  std::string backends;  // the attention backends that share the rule, for people: "flashmla"
  ExtendRule rule = ExtendRule::query_split;
  double threshold = 0;  // query tokens (query_split) or Σ prefix tokens (prefix_sum)
  // Speculative verification (Q <= 1 + draft tokens after a prefix) runs as decode, absorbed, and
  // does not enter the extend batch (vLLM raises reorder_batch_threshold to 1 + num_spec_tokens;
  // SGLang's TARGET_VERIFY is not an extend mode; TensorRT-LLM verifies in the generation phase).
  bool spec_as_decode = false;
  DsaRule dsa = DsaRule::sparse;
  double dsa_threshold = 0;
  // The expanded path chunks the batch's keys this many at a time when they exceed it (the engine's
  // preallocated context workspace); 0: expanded at once.
  double chunk_tokens = 0;
  std::optional<WeightDtype> fold_weights;  // the dtype of its W_UK/W_UV copies; none: the checkpoint's
  std::string source;                       // file:line of the engine's code for every number above
};

// The rule as modelled, in words, with the policy's own numbers.
std::string describe(const EnginePolicy& e);

// How an engine runs a batch: per sequence group, absorbed (decode kernels over the latent; sparse
// for a DSA model) or expanded (up-projected K/V, chunked over the keys past chunk_tokens).
struct EngineDispatch {
  std::vector<bool> absorbed;  // per group of the workload
  bool all_absorbed() const;
  bool none_absorbed() const;
};
EngineDispatch dispatch(const EnginePolicy& e, const ModelSpec& m, const Workload& w);

// The expanded path the engine runs for the expanded groups `absorbed[i] == false` of w: expand, or
// chunked with w.chunk = chunk_tokens when those groups' keys on a rank exceed it.
PathKind engine_expanded_kind(const EnginePolicy& e, const Workload& w, const std::vector<bool>& absorbed);

// How one engine's rule fares at a prefix for `batch` equal sequences, over query lengths
// 1 .. max_query (the batch sums of SGLang's and TensorRT-LLM's rules grow with the batch).
struct EngineOutcome {
  std::int64_t expands_from_query = 0;   // the first Q the engine expands at (0: never)
  double worst_penalty = 0;              // max of T_chosen / T_best − 1 (T_best over the feasible paths)
  std::int64_t worst_penalty_query = 0;  // where (0: the rule is never slower)
};

// Outcomes of every policy for `batch` sequences after `prefix` (attention core, per rank), in the
// policies' order. With a workspace budget, the best time is over the paths whose workspace fits
// (expand, else chunked at the largest chunk that fits).
std::vector<EngineOutcome> engine_outcomes(const std::vector<EnginePolicy>& policies, const ModelSpec& m, const MlaGeometry& g,
                                           const Workload& base, double prefix, std::int64_t batch, const Roofline& rf,
                                           std::int64_t max_query, const WorkspaceBudgetFn& budget = {});

}  // namespace mlaplan
