#pragma once
// KV-cache accounting: bytes per token per layer, per rank, per sequence (formula reference §2).
#include <cstdint>
#include <vector>

#include "mlaplan/core/dtype.hpp"
#include "mlaplan/core/model.hpp"

namespace mlaplan {

// MLA: (r + d_r) · b — one latent plus one shared RoPE key (DeepSeek-V2 §2.1.3).
// fp8_flashmla: r fp8 values + r/128 fp32 scales + d_r bf16 values (FlashMLA README: 656 B).
KvBytes mla_kv_bytes_per_token_per_layer(const MlaDims& m, KvDtype d);

// FlashMLA defines its fp8 layout for DeepSeek's shapes only: r = 512 (four 128-value scale
// groups) and d_r = 64. Other shapes get the same rule extrapolated, which no kernel implements.
bool flashmla_defines_layout(const MlaDims& m);

// MHA/GQA/MQA: 2 · h_kv · d · b (one key and one value vector per KV head).
KvBytes gqa_kv_bytes_per_token_per_layer(std::int64_t kv_heads, std::int64_t head_dim, KvDtype d);

// DSA indexer key cache (DeepSeek-V3.2): fp8 keys plus one fp32 scale per 128 values,
// index_head_dim + index_head_dim/128 · 4 = 132 B, independent of the main cache dtype.
Bytes indexer_bytes_per_token_per_layer(const IndexerDims& ix);

// KV heads one rank stores under tensor parallelism: GQA/MHA split KV heads across ranks and
// replicate them when there are fewer KV heads than ranks (h_kv / TP, at least 1).
std::int64_t kv_heads_per_rank(const ModelSpec& m, std::int64_t tp);

// Attention-cache bytes per token for one layer on one rank (the MLA latent is replicated on
// every TP rank, so TP does not change it). Excludes the indexer cache.
KvBytes kv_bytes_per_token_per_layer(const ModelSpec& m, KvDtype d, std::int64_t tp = 1);

// Sum over layers of kv_bytes_per_token_per_layer (windows not applied: the cost of one more
// token in a sequence longer than every window is smaller; see sequence_kv_bytes).
KvBytes kv_bytes_per_token(const ModelSpec& m, KvDtype d, std::int64_t tp = 1);

// Indexer bytes per token over all layers; 0 for models without DSA.
Bytes indexer_bytes_per_token(const ModelSpec& m);

// Layers grouped by attention kind (full, or sliding with one window), in order of first appearance.
struct LayerGroup {
  LayerSpec kind;
  std::int64_t layers = 0;
};
std::vector<LayerGroup> layer_groups(const ModelSpec& m);

// Tokens a layer holds for a sequence of `tokens`: sliding layers keep at most their window.
std::int64_t tokens_held(const LayerSpec& layer, std::int64_t tokens);

// Cache bytes of one sequence of `tokens` tokens on one rank, every layer's token count rounded
// up to whole pages of `block_size` tokens (1 = unpaged). Includes the indexer cache.
Bytes sequence_kv_bytes(const ModelSpec& m, KvDtype d, std::int64_t tp, std::int64_t tokens,
                        std::int64_t block_size = 1);

// Per-head equivalent of an MLA layer: the MHA whose cache the latent replaces, keys d_n + d_r
// wide and values d_v wide: h · (d_n + d_r + d_v) · b. DeepSeek-V3 bf16: 81,920 B = 71.1× 1,152.
Bytes mha_equivalent_bytes_per_token_per_layer(const ModelSpec& m, KvDtype d);

// The number of GQA groups (KV heads of width d_n) whose cache equals the MLA latent:
// (r + d_r) / (2 · d_n). DeepSeek-V2/V3: 576 / 256 = 2.25 (DeepSeek-V2 Table 1 caption).
double gqa_equivalent_groups(const MlaDims& m);

}  // namespace mlaplan
