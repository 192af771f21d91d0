#include "mlaplan/core/capacity.hpp"

#include <algorithm>
#include <cmath>

namespace mlaplan {

Bytes activation_reserve_estimate(const ModelSpec& m, const Parallelism& par, std::int64_t max_batched_tokens) {
  // Widest per-rank intermediate of a layer: gate+up of the dense MLP, of the active experts,
  // or the per-rank query/key/value projections.
  std::int64_t widest = 2 * ceil_div(m.intermediate, par.tp);
  if (m.moe) widest = std::max(widest, sat_mul(2 * m.moe->experts_per_token, m.moe->expert_intermediate) / par.tp);
  std::int64_t q_width = m.mla ? sat_mul(m.heads, m.mla->kv_lora_rank + m.mla->qk_rope_head_dim)
                               : sat_mul(m.heads + 2 * m.kv_heads, m.head_dim);
  widest = std::max(widest, ceil_div(q_width, par.tp));
  return Bytes{sat_mul(sat_mul(max_batched_tokens, 2), sat_add(2 * m.hidden, widest))};
}

CapacityResult plan_capacity(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& req) {
  CapacityResult r;
  if (const LayoutVerdict lv = check_layout(m, req.par); !lv.ok()) {
    r.verdict = lv.verdict;
    return r;
  }
  r.params = count_params(m);
  r.memory_per_rank = hw.memory_capacity;
  r.usable_per_rank = Bytes{static_cast<std::int64_t>(std::floor(static_cast<double>(hw.memory_capacity.value) * req.mem_util))};
  r.weight_bytes_per_rank = weight_bytes_per_rank(m, req.weights, req.par);
  r.reserve_bytes_per_rank = req.reserve;
  const Bytes left = r.usable_per_rank - r.weight_bytes_per_rank - r.reserve_bytes_per_rank;
  r.kv_pool_bytes_per_rank = left.value > 0 ? left : Bytes{0};

  r.kv_bytes_per_token_per_rank = kv_bytes_per_token(m, req.kv_dtype, req.par.tp).total() + indexer_bytes_per_token(m);
  const std::int64_t block = std::max<std::int64_t>(1, req.block_size);
  const std::int64_t block_bytes = sat_mul(r.kv_bytes_per_token_per_rank.value, block);
  r.max_tokens_per_rank = block_bytes > 0 ? sat_mul(r.kv_pool_bytes_per_rank.value / block_bytes, block) : 0;
  r.max_tokens_cluster = sat_mul(r.max_tokens_per_rank, req.par.dp);

  r.sequence_bytes_per_rank = sequence_kv_bytes(m, req.kv_dtype, req.par.tp, req.context, block);
  r.sequences_per_rank = r.sequence_bytes_per_rank.value > 0
                             ? r.kv_pool_bytes_per_rank.value / r.sequence_bytes_per_rank.value
                             : 0;
  r.max_sequences = sat_mul(r.sequences_per_rank, req.par.dp);
  if (m.has_sliding_layers() && r.sequence_bytes_per_rank.value > 0) {
    // With windows a token's cost depends on the sequence it is in, so "tokens" are the tokens of
    // context held in sequences of `context` tokens: the whole sequences, then the longest partial
    // one the rest of the pool holds. Tokens and sequences x context then agree.
    const Bytes rest = r.kv_pool_bytes_per_rank - r.sequence_bytes_per_rank * r.sequences_per_rank;
    std::int64_t lo = 0, hi = req.context - 1;  // the partial sequence is shorter than a whole one
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      if (sequence_kv_bytes(m, req.kv_dtype, req.par.tp, mid, block) <= rest) lo = mid;
      else hi = mid - 1;
    }
    r.max_tokens_per_rank = sat_add(sat_mul(r.sequences_per_rank, req.context), lo);
    r.max_tokens_cluster = sat_mul(r.max_tokens_per_rank, req.par.dp);
  }

  if (left.value <= 0) {
    r.verdict = Verdict::no("weights and reserve exceed the usable memory per rank");
  } else if (r.sequences_per_rank < 1) {
    r.verdict = Verdict::no("the KV pool per rank cannot hold one sequence of the requested context");
  }
  return r;
}

}  // namespace mlaplan
