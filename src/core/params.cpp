#include "mlaplan/core/params.hpp"

#include "mlaplan/core/kv.hpp"

namespace mlaplan {

std::string_view to_string(WeightGroup g) {
  switch (g) {
    case WeightGroup::embedding: return "embedding";
    case WeightGroup::attention: return "attention";
    case WeightGroup::indexer: return "indexer";
    case WeightGroup::dense_mlp: return "dense_mlp";
    case WeightGroup::routed_experts: return "routed_experts";
    case WeightGroup::shared_experts: return "shared_experts";
    case WeightGroup::router: return "router";
    case WeightGroup::norms: return "norms";
    case WeightGroup::lm_head: return "lm_head";
    case WeightGroup::mtp: return "mtp";
  }
  return "?";
}

namespace {

// Collects tensors of one block (a decoder layer set or an MTP module) with a shared count.
struct Builder {
  std::vector<WeightTensor>& out;
  std::int64_t count;   // copies of the block in the model
  bool active;          // whether the main model touches it per token
  bool mtp;             // file the tensors under the mtp group

  void add(std::string name, WeightGroup g, std::int64_t rows, std::int64_t cols, bool linear, Shard shard,
           std::int64_t per_block = 1, std::int64_t active_per_block = -1, std::int64_t experts = 1) {
    if (rows <= 0 || cols <= 0 || count <= 0 || per_block <= 0) return;
    WeightTensor t;
    t.name = std::move(name);
    t.group = mtp ? WeightGroup::mtp : g;
    t.rows = rows;
    t.cols = cols;
    t.count = sat_mul(count, per_block);
    t.active_count = active ? sat_mul(count, active_per_block < 0 ? per_block : active_per_block) : 0;
    t.linear = linear;
    t.shard = shard;
    t.experts_per_layer = experts;
    out.push_back(std::move(t));
  }
};

void add_attention(Builder& b, const ModelSpec& m) {
  const std::int64_t H = m.hidden, h = m.heads;
  constexpr auto A = WeightGroup::attention;
  if (m.mla) {
    const MlaDims& a = *m.mla;
    const std::int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      b.add("q_a_proj", A, a.q_lora_rank, H, true, Shard::replicated);
      b.add("q_a_layernorm", A, a.q_lora_rank, 1, false, Shard::replicated);
      b.add("q_b_proj", A, h * qk, a.q_lora_rank, true, Shard::tensor);
    } else {
      b.add("q_proj", A, h * qk, H, true, Shard::tensor);
    }
    b.add("kv_a_proj_with_mqa", A, a.kv_lora_rank + a.qk_rope_head_dim, H, true, Shard::replicated);
    b.add("kv_a_layernorm", A, a.kv_lora_rank, 1, false, Shard::replicated);
    b.add("kv_b_proj", A, h * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, true, Shard::tensor);
    b.add("o_proj", A, H, h * a.v_head_dim, true, Shard::tensor);
    if (m.indexer) {
      const IndexerDims& ix = *m.indexer;
      constexpr auto I = WeightGroup::indexer;
      b.add("indexer.wq_b", I, ix.n_heads * ix.head_dim, a.q_lora_rank > 0 ? a.q_lora_rank : H, true, Shard::replicated);
      b.add("indexer.wk", I, ix.head_dim, H, true, Shard::replicated);
      b.add("indexer.k_norm", I, 2 * ix.head_dim, 1, false, Shard::replicated);  // LayerNorm weight + bias
      b.add("indexer.weights_proj", I, ix.n_heads, H, false, Shard::replicated);
    }
  } else {
    const std::int64_t d = m.head_dim, kv = m.kv_heads;
    b.add("q_proj", A, h * d, H, true, Shard::tensor);
    b.add("k_proj", A, kv * d, H, true, Shard::kv_heads);
    b.add("v_proj", A, kv * d, H, true, Shard::kv_heads);
    b.add("o_proj", A, H, h * d, true, Shard::tensor);
    if (m.qkv_bias) {
      b.add("q_proj.bias", A, h * d, 1, false, Shard::tensor);
      b.add("k_proj.bias", A, kv * d, 1, false, Shard::kv_heads);
      b.add("v_proj.bias", A, kv * d, 1, false, Shard::kv_heads);
    }
    if (m.o_bias) b.add("o_proj.bias", A, H, 1, false, Shard::replicated);
    if (m.qk_norm) {
      b.add("q_norm", A, d, 1, false, Shard::replicated);
      b.add("k_norm", A, d, 1, false, Shard::replicated);
    }
  }
  if (m.attention_sinks) b.add("sinks", A, h, 1, false, Shard::tensor);
}

void add_dense_mlp(Builder& b, const ModelSpec& m) {
  constexpr auto D = WeightGroup::dense_mlp;
  const std::int64_t H = m.hidden, I = m.intermediate;
  if (m.gated_mlp) b.add("mlp.gate_proj", D, I, H, true, Shard::tensor);
  b.add("mlp.up_proj", D, I, H, true, Shard::tensor);
  b.add("mlp.down_proj", D, H, I, true, Shard::tensor);
}

void add_moe_mlp(Builder& b, const ModelSpec& m) {
  const MoeSpec& e = *m.moe;
  const std::int64_t H = m.hidden, I = e.expert_intermediate, E = e.routed_experts, k = e.experts_per_token;
  constexpr auto R = WeightGroup::routed_experts;
  if (m.gated_mlp) b.add("experts.gate_proj", R, I, H, true, Shard::expert, E, k, E);
  b.add("experts.up_proj", R, I, H, true, Shard::expert, E, k, E);
  b.add("experts.down_proj", R, H, I, true, Shard::expert, E, k, E);
  if (e.expert_bias) {
    b.add("experts.gate_up_proj.bias", R, (m.gated_mlp ? 2 : 1) * I, 1, false, Shard::expert, E, k, E);
    b.add("experts.down_proj.bias", R, H, 1, false, Shard::expert, E, k, E);
  }
  constexpr auto S = WeightGroup::shared_experts;
  const std::int64_t n = e.shared_experts;
  if (n > 0) {
    if (m.gated_mlp) b.add("shared_experts.gate_proj", S, I, H, true, Shard::tensor, n);
    b.add("shared_experts.up_proj", S, I, H, true, Shard::tensor, n);
    b.add("shared_experts.down_proj", S, H, I, true, Shard::tensor, n);
  }
  b.add("router", WeightGroup::router, E, H, false, Shard::replicated);
  if (e.router_bias) b.add("router.bias", WeightGroup::router, E, 1, false, Shard::replicated);
}

void add_layer_norms(Builder& b, const ModelSpec& m) {
  b.add("layer_norms", WeightGroup::norms, m.norms_per_layer * m.hidden, 1, false, Shard::replicated);
}

}  // namespace

std::vector<WeightTensor> weight_tensors(const ModelSpec& m) {
  std::vector<WeightTensor> out;
  std::int64_t moe_layers = 0;
  for (const LayerSpec& l : m.layers) moe_layers += l.moe ? 1 : 0;
  const std::int64_t dense_layers = m.num_layers() - moe_layers;

  Builder once{out, 1, true, false};
  // The input embedding is a row lookup, not a matmul: model cards leave it out of the active
  // count (gpt-oss-20b: 3.61B active of 20.91B), while the output head is counted.
  // A tied embedding is also the output head, so then it counts once as active.
  once.add("embed_tokens", WeightGroup::embedding, m.vocab, m.hidden, false, Shard::tensor, 1,
           m.tie_word_embeddings ? 1 : 0);
  if (!m.tie_word_embeddings) once.add("lm_head", WeightGroup::lm_head, m.vocab, m.hidden, false, Shard::tensor);
  once.add("final_norm", WeightGroup::norms, m.hidden, 1, false, Shard::replicated);

  Builder all{out, m.num_layers(), true, false};
  add_attention(all, m);
  add_layer_norms(all, m);
  Builder dense{out, dense_layers, true, false};
  add_dense_mlp(dense, m);
  if (m.moe) {
    Builder sparse{out, moe_layers, true, false};
    add_moe_mlp(sparse, m);
  }

  // DeepSeek MTP module (DeepSeek-V3 §2.2): enorm, hnorm, eh_proj [H, 2H], one decoder layer
  // (MoE like the deep layers), and the shared head's norm; embedding and head are shared.
  if (m.mtp_layers > 0) {
    Builder mtp{out, m.mtp_layers, false, true};
    mtp.add("mtp.enorm_hnorm", WeightGroup::mtp, 2 * m.hidden, 1, false, Shard::replicated);
    mtp.add("mtp.eh_proj", WeightGroup::mtp, m.hidden, 2 * m.hidden, true, Shard::replicated);
    add_attention(mtp, m);
    add_layer_norms(mtp, m);
    if (m.moe) add_moe_mlp(mtp, m);
    else add_dense_mlp(mtp, m);
    mtp.add("mtp.shared_head.norm", WeightGroup::mtp, m.hidden, 1, false, Shard::replicated);
  }
  return out;
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  for (const WeightTensor& t : weight_tensors(m)) {
    c.total += t.params();
    c.active += t.active_params();
    c.by_group[t.group] += t.params();
    if (t.group == WeightGroup::mtp) c.mtp += t.params();
  }
  c.main = c.total - c.mtp;
  return c;
}

WeightDtype checkpoint_weight_dtype(const ModelSpec& m) {
  switch (m.quant) {
    case WeightQuant::none: break;
    case WeightQuant::fp8_block: return WeightDtype::fp8;
    case WeightQuant::mxfp4: return WeightDtype::mxfp4;
    case WeightQuant::int4: return WeightDtype::int4;
    case WeightQuant::int8: return WeightDtype::int8;
  }
  return WeightDtype::bf16;
}

WeightFormat weight_format_for(const ModelSpec& m, WeightDtype d) {
  return m.quant != WeightQuant::none && d == checkpoint_weight_dtype(m) ? m.quant_format : weight_format(d);
}

WeightPlan default_weight_plan(const ModelSpec& m) {
  WeightPlan p;
  p.linear = checkpoint_weight_dtype(m);
  if (m.quant != WeightQuant::none) {
    p.format = m.quant_format;
    p.dense = m.quant_dense;
  }
  p.quantize_attention = !m.quant_skips_attention;
  return p;
}

WeightDtype attention_weight_dtype(const ModelSpec& m) {
  if (m.quant == WeightQuant::fp8_block) return WeightDtype::fp8;
  if (m.quant != WeightQuant::none && !m.quant_skips_attention) return checkpoint_weight_dtype(m);
  return WeightDtype::bf16;
}

WeightPlan weight_plan_for(const ModelSpec& m, WeightDtype d) {
  const WeightPlan base = default_weight_plan(m);
  if (d == base.linear) return base;  // the checkpoint's own format and exclusions
  WeightPlan p;
  p.linear = d;
  p.dense = (d == WeightDtype::fp32 || d == WeightDtype::fp16) ? d : WeightDtype::bf16;
  p.quantize_attention = true;
  return p;
}

WeightFormat linear_format(const WeightPlan& plan) { return plan.format.value_or(weight_format(plan.linear)); }

namespace {

// Bytes of one copy of a tensor in the given storage.
std::int64_t copy_bytes(const WeightTensor& t, WeightDtype d, const WeightPlan& plan) {
  return weight_matrix_bytes(t.rows, t.cols, d == plan.linear ? linear_format(plan) : weight_format(d)).value;
}

bool quantized(const WeightTensor& t, const WeightPlan& plan) {
  if (!t.linear) return false;
  if (!plan.quantize_attention && (t.group == WeightGroup::attention || t.group == WeightGroup::indexer)) return false;
  return true;
}

}  // namespace

Bytes tensor_bytes(const WeightTensor& t, const WeightPlan& plan) {
  const WeightDtype d = quantized(t, plan) ? plan.linear : plan.dense;
  return Bytes{sat_mul(copy_bytes(t, d, plan), t.count)};
}

Bytes tensor_bytes_per_rank(const ModelSpec& m, const WeightTensor& t, const WeightPlan& plan, const Parallelism& par) {
  const Bytes all = tensor_bytes(t, plan);
  switch (t.shard) {
    case Shard::replicated: return all;
    case Shard::tensor: return Bytes{ceil_div(all.value, par.tp)};
    case Shard::kv_heads: {
      if (m.kv_heads <= 0) return all;
      return Bytes{ceil_div(all.value, m.kv_heads) * kv_heads_per_rank(m, par.tp)};
    }
    case Shard::expert: {
      if (par.ep <= 1) return Bytes{ceil_div(all.value, par.tp)};
      const std::int64_t per_rank = ceil_div(t.experts_per_layer, par.ep);
      return Bytes{ceil_div(all.value, t.experts_per_layer)} * per_rank;
    }
  }
  return all;
}

Bytes weight_bytes_per_rank(const ModelSpec& m, const WeightPlan& plan, const Parallelism& par) {
  Bytes total{0};
  for (const WeightTensor& t : weight_tensors(m)) total += tensor_bytes_per_rank(m, t, plan, par);
  return total;
}

}  // namespace mlaplan
