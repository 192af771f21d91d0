#include "mlaplan/core/kv.hpp"

#include <algorithm>

namespace mlaplan {

KvBytes mla_kv_bytes_per_token_per_layer(const MlaDims& m, KvDtype d) {
  if (d == KvDtype::fp8_flashmla) {
    // 512 × e4m3 + 4 × fp32 (one per 128 latent values) + 64 × bf16 RoPE key.
    return KvBytes{Bytes{m.kv_lora_rank} + Bytes{m.qk_rope_head_dim} * 2, Bytes{ceil_div(m.kv_lora_rank, 128)} * 4};
  }
  return kv_vector_bytes(m.kv_lora_rank + m.qk_rope_head_dim, d);
}

bool flashmla_defines_layout(const MlaDims& m) { return m.kv_lora_rank == 512 && m.qk_rope_head_dim == 64; }

KvBytes gqa_kv_bytes_per_token_per_layer(std::int64_t kv_heads, std::int64_t head_dim, KvDtype d) {
  // fp8_flashmla is an MLA layout; for per-head caches it degrades to plain fp8.
  const KvDtype plain = d == KvDtype::fp8_flashmla ? KvDtype::fp8 : d;
  return kv_vector_bytes(head_dim, plain) * (2 * kv_heads);
}

Bytes indexer_bytes_per_token_per_layer(const IndexerDims& ix) {
  return Bytes{ix.head_dim + ceil_div(ix.head_dim, 128) * 4};
}

std::int64_t kv_heads_per_rank(const ModelSpec& m, std::int64_t tp) {
  if (m.is_mla()) return 1;
  return std::max<std::int64_t>(1, m.kv_heads / tp);
}

KvBytes kv_bytes_per_token_per_layer(const ModelSpec& m, KvDtype d, std::int64_t tp) {
  if (m.mla) return mla_kv_bytes_per_token_per_layer(*m.mla, d);
  return gqa_kv_bytes_per_token_per_layer(kv_heads_per_rank(m, tp), m.head_dim, d);
}

KvBytes kv_bytes_per_token(const ModelSpec& m, KvDtype d, std::int64_t tp) {
  return kv_bytes_per_token_per_layer(m, d, tp) * m.num_layers();
}

Bytes indexer_bytes_per_token(const ModelSpec& m) {
  if (!m.indexer) return Bytes{0};
  return indexer_bytes_per_token_per_layer(*m.indexer) * m.num_layers();
}

std::vector<LayerGroup> layer_groups(const ModelSpec& m) {
  std::vector<LayerGroup> groups;
  for (const LayerSpec& l : m.layers) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const LayerGroup& g) {
      return g.kind.sliding == l.sliding && g.kind.window == l.window;
    });
    if (it == groups.end()) groups.push_back({l, 1});
    else ++it->layers;
  }
  return groups;
}

std::int64_t tokens_held(const LayerSpec& layer, std::int64_t tokens) {
  return layer.sliding ? std::min(tokens, layer.window) : tokens;
}

Bytes sequence_kv_bytes(const ModelSpec& m, KvDtype d, std::int64_t tp, std::int64_t tokens,
                        std::int64_t block_size) {
  const Bytes per_layer = kv_bytes_per_token_per_layer(m, d, tp).total();
  const Bytes indexer = m.indexer ? indexer_bytes_per_token_per_layer(*m.indexer) : Bytes{0};
  Bytes total{0};
  for (const LayerSpec& layer : m.layers) {
    const std::int64_t held = round_up(tokens_held(layer, tokens), block_size);
    total += (per_layer + indexer) * held;
  }
  return total;
}

Bytes mha_equivalent_bytes_per_token_per_layer(const ModelSpec& m, KvDtype d) {
  const KvDtype plain = d == KvDtype::fp8_flashmla ? KvDtype::fp8 : d;
  if (!m.mla) return gqa_kv_bytes_per_token_per_layer(m.heads, m.head_dim, plain).total();
  const MlaDims& a = *m.mla;
  return kv_vector_bytes(sat_mul(m.heads, a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim), plain).total();
}

double gqa_equivalent_groups(const MlaDims& m) {
  return static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim) / static_cast<double>(2 * m.qk_nope_head_dim);
}

}  // namespace mlaplan
