#include "mlaplan/core/paths.hpp"

#include <algorithm>
#include <cmath>

#include "mlaplan/core/kv.hpp"

namespace mlaplan {

std::string_view to_string(PathKind p) {
  switch (p) {
    case PathKind::absorb: return "absorb";
    case PathKind::expand: return "expand";
    case PathKind::chunked: return "chunked";
    case PathKind::sparse: return "sparse";
    case PathKind::standard: return "standard";
  }
  return "?";
}

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::gemm: return "gemm";
    case OpKind::bmm: return "bmm";
    case OpKind::attention: return "attention";
    case OpKind::merge: return "merge";
    case OpKind::elementwise: return "elementwise";
    case OpKind::indexer: return "indexer";
  }
  return "?";
}

double PathPlan::flops() const {
  double f = 0;
  for (const Op& op : *this) f += op.flops;
  return f;
}
double PathPlan::bytes() const {
  double b = 0;
  for (const Op& op : *this) b += op.bytes();
  return b;
}
double PathPlan::workspace_bytes() const {
  double w = 0;
  for (const Op& op : *this) w = std::max(w, op.workspace_bytes);
  return w;
}

double attention_pairs(double query, double prefix, bool causal) {
  return causal ? query * prefix + query * (query + 1) / 2 : query * (prefix + query);
}

namespace {

// Pairs when each query sees at most `cap` keys (sliding window, or DSA's top-k):
// causal query i (0-based) sees min(cap, P + i + 1) keys; non-causal ones min(cap, P + Q).
double capped_pairs(double query, double prefix, double cap, bool causal) {
  if (!causal) return query * std::min(cap, prefix + query);
  if (prefix + query <= cap) return attention_pairs(query, prefix, true);
  if (prefix + 1 >= cap) return query * cap;
  const double below = cap - prefix - 1;  // queries that see fewer than cap keys
  return attention_pairs(below, prefix, true) + (query - below) * cap;
}

double bytes_per_element(DType d) { return dtype_bits(d) / 8.0; }

double bytes_per_element(WeightDtype d) {
  switch (d) {
    case WeightDtype::fp32: return 4;
    case WeightDtype::fp8: return 1;
    case WeightDtype::mxfp4: return 0.5;
    default: return 2;
  }
}

// Batch totals after data-parallel attention gives each rank ⌈count / DP⌉ of each group.
struct Totals {
  double sequences = 0;  // Σ B
  double new_tokens = 0; // Σ B·Q
  double keys = 0;       // Σ B·S
  double pairs = 0;      // Σ B·pairs
};

Totals totals(const Workload& w) {
  Totals t;
  for (const SequenceGroup& g : w.groups) {
    const double b = static_cast<double>(ceil_div(g.count, std::max<std::int64_t>(1, w.dp)));
    t.sequences += b;
    t.new_tokens += b * g.query;
    t.keys += b * (g.prefix + g.query);
    t.pairs += b * attention_pairs(g.query, g.prefix, w.causal);
  }
  return t;
}

Op gemm(const char* name, OpKind kind, double tokens, double in, double out, double weight_b, double act_b) {
  Op op;
  op.name = name;
  op.kind = kind;
  op.flops = 2 * tokens * in * out;
  op.bytes_read = in * out * weight_b + tokens * in * act_b;
  op.bytes_written = tokens * out * act_b;
  return op;
}

void add_mla_projections_in(PathPlan& p, const MlaGeometry& g, const Totals& t) {
  const double T = t.new_tokens, ba = g.act_bytes, bw = g.weight_bytes;
  const double qk = g.d_n + g.d_r;
  if (g.r_q > 0) {
    p.add(gemm("q_a_proj", OpKind::gemm, T, g.hidden, g.r_q, bw, ba));
    p.add(gemm("q_b_proj", OpKind::gemm, T, g.r_q, g.heads * qk, bw, ba));
  } else {
    p.add(gemm("q_proj", OpKind::gemm, T, g.hidden, g.heads * qk, bw, ba));
  }
  Op kv = gemm("kv_a_proj", OpKind::gemm, T, g.hidden, g.r + g.d_r, bw, ba);
  kv.bytes_written += T * g.cache_bytes_per_token;  // the new tokens' cache rows
  p.add(kv);
}

void add_o_proj(PathPlan& p, const MlaGeometry& g, const Totals& t) {
  p.add(gemm("o_proj", OpKind::gemm, t.new_tokens, g.heads * g.d_v, g.hidden, g.weight_bytes, g.act_bytes));
}

// A per-head fold, [h_t, T, in] × [h_t, in, out]: W_UK into the query (in d_n, out r) and W_UV
// into the output (in r, out d_v). The weights are read once, the activations once per token.
Op fold(const char* name, const MlaGeometry& g, const Totals& t, double in, double out) {
  Op op;
  op.name = name;
  op.kind = OpKind::bmm;
  op.flops = 2 * t.new_tokens * g.heads * in * out;
  op.bytes_read = g.heads * in * out * g.weight_bytes + t.new_tokens * g.heads * in * g.act_bytes;
  op.bytes_written = t.new_tokens * g.heads * out * g.act_bytes;
  return op;
}
Op q_absorb(const MlaGeometry& g, const Totals& t) { return fold("q_absorb_w_uk", g, t, g.d_n, g.r); }
Op v_absorb(const MlaGeometry& g, const Totals& t) { return fold("out_absorb_w_uv", g, t, g.r, g.d_v); }

// MQA over the latent: key width r + d_r, value width r, one cache read per sequence.
Op latent_attention(const MlaGeometry& g, const Totals& t, double pairs, double cached_tokens, const char* name) {
  Op op;
  op.name = name;
  op.kind = OpKind::attention;
  op.flops = pairs * absorb_flops_per_pair(g);
  op.cache_bytes_read = cached_tokens * g.cache_bytes_per_token;
  op.bytes_read = op.cache_bytes_read + t.new_tokens * g.heads * (g.r + g.d_r) * g.act_bytes;
  op.bytes_written = t.new_tokens * g.heads * g.r * g.act_bytes;
  return op;
}

// Up-projection of `keys` cached latents to per-head K_nope and V.
Op kv_up_proj(const MlaGeometry& g, double keys, double weight_reads, double workspace_keys, const char* name) {
  Op op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.flops = keys * expand_flops_per_token(g);
  op.cache_bytes_read = keys * g.cache_bytes_per_token;
  op.bytes_read = op.cache_bytes_read + weight_reads * g.heads * g.r * (g.d_n + g.d_v) * g.weight_bytes;
  op.bytes_written = keys * g.heads * (g.d_n + g.d_v) * g.act_bytes;
  op.workspace_bytes = workspace_keys * g.heads * (g.d_n + g.d_r + g.d_v) * g.act_bytes;
  return op;
}

// The RoPE key, shared by all heads, copied onto every head to form 192-wide keys.
Op rope_broadcast(const MlaGeometry& g, double keys) {
  Op op;
  op.name = "rope_k_broadcast";
  op.kind = OpKind::elementwise;
  op.bytes_read = keys * g.d_r * g.act_bytes;
  op.bytes_written = keys * g.heads * g.d_r * g.act_bytes;
  return op;
}

// Ordinary attention over expanded keys (width d_n + d_r) and values (width d_v).
Op expanded_attention(const MlaGeometry& g, const Totals& t, double query_reads, double partial_outputs, const char* name) {
  Op op;
  op.name = name;
  op.kind = OpKind::attention;
  op.flops = t.pairs * expand_flops_per_pair(g);
  op.bytes_read = t.keys * g.heads * (g.d_n + g.d_r + g.d_v) * g.act_bytes +
                  query_reads * t.new_tokens * g.heads * (g.d_n + g.d_r) * g.act_bytes;
  // Each partial output carries an fp32 log-sum-exp per head and query.
  op.bytes_written = partial_outputs * t.new_tokens * g.heads * (g.d_v * g.act_bytes + (partial_outputs > 1 ? 4 : 0));
  return op;
}

}  // namespace

MlaGeometry mla_geometry(const ModelSpec& m, const Workload& w) {
  MlaGeometry g;
  const MlaDims& a = *m.mla;
  g.heads = static_cast<double>(m.heads) / static_cast<double>(w.tp);
  g.r = static_cast<double>(a.kv_lora_rank);
  g.d_r = static_cast<double>(a.qk_rope_head_dim);
  g.d_n = static_cast<double>(a.qk_nope_head_dim);
  g.d_v = static_cast<double>(a.v_head_dim);
  g.r_q = static_cast<double>(a.q_lora_rank);
  g.hidden = static_cast<double>(m.hidden);
  g.cache_bytes_per_token = static_cast<double>(mla_kv_bytes_per_token_per_layer(a, w.kv).total().value);
  if (m.indexer) {
    g.indexer_bytes_per_token = static_cast<double>(indexer_bytes_per_token_per_layer(*m.indexer).value);
    g.index_heads = static_cast<double>(m.indexer->n_heads);
    g.index_dim = static_cast<double>(m.indexer->head_dim);
    g.index_topk = static_cast<double>(m.indexer->topk);
  }
  g.act_bytes = bytes_per_element(w.compute);
  g.weight_bytes = bytes_per_element(w.weights);
  return g;
}

double expand_flops_per_token(const MlaGeometry& g) { return 2 * g.r * g.heads * (g.d_n + g.d_v); }
double expand_flops_per_pair(const MlaGeometry& g) { return 2 * g.heads * (g.d_n + g.d_r + g.d_v); }
double absorb_flops_per_pair(const MlaGeometry& g) { return 2 * g.heads * (2 * g.r + g.d_r); }

PathPlan mla_path(const ModelSpec& m, const Workload& w, PathKind kind) { return mla_path(mla_geometry(m, w), w, kind); }

PathPlan mla_path(const MlaGeometry& g, const Workload& w, PathKind kind) {
  const Totals t = totals(w);
  PathPlan p;
  p.kind = kind;
  if (w.projections) add_mla_projections_in(p, g, t);
  switch (kind) {
    case PathKind::absorb:
      p.add(q_absorb(g, t));
      p.add(latent_attention(g, t, t.pairs, t.keys, "latent_attention_mqa"));
      p.add(v_absorb(g, t));
      break;
    case PathKind::expand:
      p.add(kv_up_proj(g, t.keys, 1, t.keys, "kv_up_proj"));
      p.add(rope_broadcast(g, t.keys));
      p.add(expanded_attention(g, t, 1, 1, "attention_mha"));
      break;
    case PathKind::chunked: {
      // The batch's keys are expanded C at a time; each chunk's partial output is merged by
      // its log-sum-exp. Weights and queries are read once per chunk.
      const double chunk = std::max(1.0, w.chunk);
      const double chunks = std::max(1.0, std::ceil(t.keys / chunk));
      p.add(kv_up_proj(g, t.keys, chunks, std::min(chunk, t.keys), "kv_up_proj_chunk"));
      p.add(rope_broadcast(g, t.keys));
      p.add(expanded_attention(g, t, chunks, chunks, "attention_mha_chunk"));
      Op merge;
      merge.name = "lse_merge";
      merge.kind = OpKind::merge;
      // Per chunk after the first: rescale both partials by exp(lse - max) and add (≈ 2·d_v + 4).
      merge.flops = (chunks - 1) * t.new_tokens * g.heads * (2 * g.d_v + 4);
      merge.bytes_read = chunks > 1 ? chunks * t.new_tokens * g.heads * (g.d_v * g.act_bytes + 4) : 0;
      merge.bytes_written = chunks > 1 ? t.new_tokens * g.heads * g.d_v * g.act_bytes : 0;
      p.add(merge);
      break;
    }
    case PathKind::sparse: {
      // DSA: the indexer scores every visible key for every query (n_i heads of width d_i, then a
      // head-weighted sum), then absorbed attention runs over the top-k keys per query.
      double sparse_pairs = 0, retrieved = 0;
      for (const SequenceGroup& sg : w.groups) {
        const double b = static_cast<double>(ceil_div(sg.count, std::max<std::int64_t>(1, w.dp)));
        sparse_pairs += b * capped_pairs(sg.query, sg.prefix, g.index_topk, w.causal);
        retrieved += b * std::min(sg.prefix + sg.query, sg.query * g.index_topk);
      }
      if (w.projections) {
        // Indexer projections: wq_b from the query latent, wk and the head weights from the hidden state.
        Op ix = gemm("indexer_proj", OpKind::gemm, t.new_tokens, g.r_q > 0 ? g.r_q : g.hidden, g.index_heads * g.index_dim,
                     g.weight_bytes, g.act_bytes);
        const Op wk = gemm("", OpKind::gemm, t.new_tokens, g.hidden, g.index_dim + g.index_heads, g.weight_bytes, g.act_bytes);
        ix.flops += wk.flops;
        ix.bytes_read += wk.bytes_read;
        ix.bytes_written += wk.bytes_written + t.new_tokens * g.indexer_bytes_per_token;
        p.add(ix);
      }
      Op ix;
      ix.name = "indexer_scores";
      ix.kind = OpKind::indexer;
      ix.flops = t.pairs * 2 * g.index_heads * (g.index_dim + 1);
      ix.cache_bytes_read = t.keys * g.indexer_bytes_per_token;
      ix.bytes_read = ix.cache_bytes_read + t.new_tokens * g.index_heads * g.index_dim;  // fp8 index queries
      ix.bytes_written = t.new_tokens * g.index_topk * 4;                               // int32 top-k indices
      p.add(ix);
      p.add(q_absorb(g, t));
      p.add(latent_attention(g, t, sparse_pairs, retrieved, "sparse_latent_attention"));
      p.add(v_absorb(g, t));
      break;
    }
    case PathKind::standard: break;
  }
  if (w.projections) add_o_proj(p, g, t);
  return p;
}

PathPlan standard_path(const ModelSpec& m, const Workload& w, std::int64_t window) {
  PathPlan p;
  p.kind = PathKind::standard;
  const double ht = static_cast<double>(m.heads) / static_cast<double>(w.tp);
  const double kvt = static_cast<double>(kv_heads_per_rank(m, w.tp));
  const double d = static_cast<double>(m.head_dim), H = static_cast<double>(m.hidden);
  const double ba = bytes_per_element(w.compute), bw = bytes_per_element(w.weights);
  const double cache = static_cast<double>(kv_bytes_per_token_per_layer(m, w.kv, w.tp).total().value);
  double T = 0, pairs = 0, keys = 0;
  for (const SequenceGroup& g : w.groups) {
    const double b = static_cast<double>(ceil_div(g.count, std::max<std::int64_t>(1, w.dp)));
    const double cap = window > 0 ? static_cast<double>(window) : g.prefix + g.query;
    T += b * g.query;
    pairs += b * capped_pairs(g.query, g.prefix, cap, w.causal);
    keys += b * std::min(cap, g.prefix + g.query);
  }
  if (w.projections) {
    Op qkv = gemm("qkv_proj", OpKind::gemm, T, H, (ht + 2 * kvt) * d, bw, ba);
    qkv.bytes_written += T * cache;
    p.add(qkv);
  }
  Op att;
  att.name = window > 0 ? "attention_sliding" : "attention";
  att.kind = OpKind::attention;
  att.flops = pairs * 2 * ht * (d + d);  // QK width d, PV width d
  att.cache_bytes_read = keys * cache;
  att.bytes_read = att.cache_bytes_read + T * ht * d * ba;
  att.bytes_written = T * ht * d * ba;
  p.add(att);
  if (w.projections) p.add(gemm("o_proj", OpKind::gemm, T, ht * d, H, bw, ba));
  return p;
}

std::vector<PathKind> paths_for(const ModelSpec& m) {
  if (!m.is_mla()) return {PathKind::standard};
  if (m.indexer) return {PathKind::absorb, PathKind::expand, PathKind::chunked, PathKind::sparse};
  return {PathKind::absorb, PathKind::expand, PathKind::chunked};
}

}  // namespace mlaplan
