#pragma once
// ModelSpec: the interpreted architecture of a decoder-only transformer, independent of how a
// Hugging Face config spells it (io/hf_config is the only code that knows the key names).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/core/dtype.hpp"

namespace mlaplan {

enum class AttentionKind { mla, mha, gqa, mqa };
std::string_view to_string(AttentionKind k);

// Multi-head Latent Attention dimensions (DeepSeek-V2 §2.1).
struct MlaDims {
  std::int64_t kv_lora_rank = 0;       // r: width of the cached latent c_KV
  std::int64_t qk_rope_head_dim = 0;   // d_r: decoupled RoPE key width, shared by all heads
  std::int64_t qk_nope_head_dim = 0;   // d_n: per-head key width without RoPE
  std::int64_t v_head_dim = 0;         // d_v: per-head value width
  std::int64_t q_lora_rank = 0;        // r_q: query compression rank, 0 when queries are not compressed
};

// DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2).
struct IndexerDims {
  std::int64_t n_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t topk = 0;
};

struct MoeSpec {
  std::int64_t routed_experts = 0;
  std::int64_t shared_experts = 0;
  std::int64_t experts_per_token = 0;
  std::int64_t expert_intermediate = 0;   // width of one routed (and one shared) expert
  bool router_bias = false;               // e_score_correction_bias or a router bias vector
  bool expert_bias = false;               // gpt-oss experts carry biases
};

struct LayerSpec {
  bool sliding = false;        // sliding-window attention layer
  std::int64_t window = 0;     // tokens kept by a sliding layer
  bool moe = false;            // MLP is a mixture of experts
};

// A checkpoint's weight quantization: fp8 (block or channel scales), mxfp4, or integer groups.
enum class WeightQuant { none, fp8_block, mxfp4, int4, int8 };

struct ModelSpec {
  std::string name;          // display name, e.g. "deepseek-ai/DeepSeek-V3"
  std::string source;        // file it came from
  std::string model_type;    // informational only

  AttentionKind attention = AttentionKind::mha;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;         // query heads
  std::int64_t kv_heads = 0;      // key/value heads (MLA: equals heads, unused by the cache)
  std::int64_t head_dim = 0;      // per-head width for MHA/GQA/MQA
  bool head_dim_derived = false;  // true when head_dim was hidden / heads

  std::optional<MlaDims> mla;
  std::optional<IndexerDims> indexer;

  std::vector<LayerSpec> layers;  // one entry per decoder layer
  std::int64_t vocab = 0;
  std::int64_t intermediate = 0;  // dense MLP width
  bool gated_mlp = true;          // gate, up and down projections (SwiGLU/GeGLU)
  std::optional<MoeSpec> moe;
  std::int64_t mtp_layers = 0;    // DeepSeek multi-token-prediction modules
  bool tie_word_embeddings = false;
  bool qkv_bias = false;
  bool o_bias = false;
  bool qk_norm = false;           // per-head RMSNorm on q and k (Qwen3)
  bool attention_sinks = false;   // one learned logit per head (gpt-oss)
  std::int64_t norms_per_layer = 2;
  std::int64_t max_position_embeddings = 0;

  WeightQuant quant = WeightQuant::none;
  std::string quant_method;  // the config's quant_method (fp8, mxfp4, awq, gptq, compressed-tensors)
  // The checkpoint's exact storage of its quantized linear weights (block or group shape, scale
  // width, zero points, g_idx), and the dtype it keeps everything else in (its torch_dtype).
  WeightFormat quant_format = fp8_block_format(128, 128);
  WeightDtype quant_dense = WeightDtype::bf16;
  // Module groups that a quantized checkpoint keeps in the dense dtype, already interpreted:
  bool quant_skips_attention = false;

  std::string torch_dtype = "bfloat16";
  std::vector<std::string> notes;  // how fields were interpreted (derived values, ignored windows)
  // What a user must hear about even when the answer is printed (an unknown model_type, a
  // quantization read as bf16): one line each, shown on stderr.
  std::vector<std::string> warnings;

  std::int64_t num_layers() const { return static_cast<std::int64_t>(layers.size()); }
  bool is_mla() const { return mla.has_value(); }
  bool has_sliding_layers() const;
  // True when every layer costs the same KV bytes per token at any length (no sliding windows).
  bool uniform_layers() const { return !has_sliding_layers(); }
};

}  // namespace mlaplan
