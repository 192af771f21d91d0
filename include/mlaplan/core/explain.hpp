#pragma once
// --explain: each quantity of a study with its formula, the values substituted and the result, in
// the order of the derivation, so that a reader can check every number by hand. The steps are built
// from the same functions the study uses, and the tests hold their results to the study's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/core/engine_memory.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/parallelism.hpp"
#include "mlaplan/core/study.hpp"

namespace mlaplan {

struct ExplainStep {
  std::string quantity;     // "cache bytes per token per layer"
  std::string formula;      // "(kv_lora_rank + qk_rope_head_dim) · 2 B"
  std::string substituted;  // "(512 + 64) · 2 B"
  std::string result;       // "1,152 B"
  std::int64_t value = 0;   // the result as an integer (bytes, tokens, heads); 0 when `real` holds it
  std::string unit;         // of the value: "B", "tokens", "FLOP", "s", "" for a pure number
  std::optional<double> real = std::nullopt;  // the result when it is a real number (FLOPs, traffic, seconds, Q*)
  double number() const { return real ? *real : static_cast<double>(value); }
};

// `kv`: bytes per token per layer, the indexer's, per token, per rank, and for `sequences` of
// `tokens` (0: none) in pages of `block_size`.
std::vector<ExplainStep> explain_kv(const ModelSpec& m, KvDtype d, const Parallelism& par, std::int64_t tokens, std::int64_t sequences,
                                    std::int64_t block_size);

// `capacity` (mlaplan's own budget): usable memory, weights by group, the activation reserve (its
// estimate for `batched_tokens`, or given), the KV pool, bytes per token, tokens and sequences.
std::vector<ExplainStep> explain_capacity(const ModelSpec& m, const HardwareSpec& hw, const CapacityStudy& st, std::int64_t batched_tokens,
                                          bool reserve_given);
// `capacity --engine`: the engine's budget lines as it computes them, then its tokens and sequences.
std::vector<ExplainStep> explain_engine_capacity(const EngineCapacity& e);

// `cost`: the step's workload on one rank, the geometry, the attention pairs, then per path and per op
// its FLOPs and bytes (formula, values, result) and its roofline time, the path totals over the
// layers, the cheaper path, and each engine's choice and penalty. `st` is cost_study's answer for
// the same (m, w, rf); every result is the study's own number or the function it calls.
std::vector<ExplainStep> explain_cost(const ModelSpec& m, const Workload& w, const Roofline& rf, const CostStudy& st);

// One op's roofline time, from op_time's parts: the one place the time model is spelled out.
ExplainStep explain_op_time(const std::string& quantity, const Op& op, const Roofline& rf, const OpTime& t);

// `crossover` (MLA models): the FLOP-only closed form and its limit, then for each row the equation
// solved, the times of both paths at the Q* found (one layer, one rank) and Q*; for DSA models the
// prompt length from which the sparse path wins.
std::vector<ExplainStep> explain_crossover(const ModelSpec& m, const Roofline& rf, const CrossoverSweepSpec& s, const CrossoverStudy& st);

// 1234567 -> "1,234,567".
std::string grouped(std::int64_t v);

}  // namespace mlaplan
