#pragma once
// Capacity planning (formula reference §2, "Capacity"): per rank,
//   KV pool = memory · utilisation − weights on that rank − activation reserve,
//   tokens = pool / per-rank bytes per token (block-rounded), sequences = pool / sequence bytes.
#include <cstdint>
#include <string>

#include "mlaplan/core/feasibility.hpp"
#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/params.hpp"

namespace mlaplan {

struct CapacityRequest {
  KvDtype kv_dtype = KvDtype::bf16;
  WeightPlan weights;
  Parallelism par;
  double mem_util = 0.9;
  std::int64_t context = 0;       // tokens per sequence for the sequence count
  std::int64_t block_size = 1;    // page size in tokens (1 = unpaged)
  Bytes reserve{0};               // activations and workspace per rank
};

struct CapacityResult {
  ParamCounts params;
  Bytes memory_per_rank{0};
  Bytes usable_per_rank{0};            // memory · utilisation
  Bytes weight_bytes_per_rank{0};
  Bytes reserve_bytes_per_rank{0};
  Bytes kv_pool_bytes_per_rank{0};     // 0 when nothing is left
  Bytes kv_bytes_per_token_per_rank{0};  // all layers, indexer included, windows not applied
  Bytes sequence_bytes_per_rank{0};    // one sequence of `context` tokens, block-rounded
  // Tokens of context the pool holds: pool / bytes per token, block-rounded; with sliding windows,
  // the tokens in sequences of `context` tokens (whole ones, then the longest partial one).
  std::int64_t max_tokens_per_rank = 0;
  std::int64_t max_tokens_cluster = 0;  // distinct tokens: per rank × DP replicas
  std::int64_t sequences_per_rank = 0;
  std::int64_t max_sequences = 0;       // whole deployment: per DP replica × DP
  Verdict verdict;                      // fits, or why not (the layout, the weights, one sequence)
  bool fits() const { return verdict.ok(); }
};

// Tokens per forward pass the activation reserve is estimated for unless told otherwise (vLLM V1's
// default max_num_batched_tokens for online serving, 8,192).
inline constexpr std::int64_t kDefaultBatchedTokens = 8192;

// First-order activation reserve for one forward pass of `max_batched_tokens` tokens on one
// rank, 2-byte activations: tokens · 2 B · (2·hidden + widest per-rank MLP/attention intermediate).
Bytes activation_reserve_estimate(const ModelSpec& m, const Parallelism& par, std::int64_t max_batched_tokens);

// An infeasible layout (check_layout) gives an empty result whose verdict says why.
CapacityResult plan_capacity(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& req);

}  // namespace mlaplan
