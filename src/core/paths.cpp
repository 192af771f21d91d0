#include "mlaplan/core/paths.hpp"

#include <algorithm>
#include <cmath>

#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/params.hpp"

namespace mlaplan {

std::string_view to_string(PathKind p) {
  switch (p) {
    case PathKind::absorb: return "absorb";
    case PathKind::expand: return "expand";
    case PathKind::chunked: return "chunked";
    case PathKind::sparse: return "sparse";
    case PathKind::standard: return "standard";
    case PathKind::split: return "split";
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
    case OpKind::grouped_gemm: return "grouped_gemm";
  }
  return "?";
}

std::string_view to_string(OpId id) {
  switch (id) {
    case OpId::q_a_proj: return "q_a_proj";
    case OpId::q_b_proj: return "q_b_proj";
    case OpId::q_proj: return "q_proj";
    case OpId::kv_a_proj: return "kv_a_proj";
    case OpId::o_proj: return "o_proj";
    case OpId::q_absorb_w_uk: return "q_absorb_w_uk";
    case OpId::latent_attention_mqa: return "latent_attention_mqa";
    case OpId::split_kv_merge: return "split_kv_merge";
    case OpId::out_absorb_w_uv: return "out_absorb_w_uv";
    case OpId::kv_up_proj: return "kv_up_proj";
    case OpId::rope_k_broadcast: return "rope_k_broadcast";
    case OpId::attention_mha: return "attention_mha";
    case OpId::kv_up_proj_chunk: return "kv_up_proj_chunk";
    case OpId::attention_mha_chunk: return "attention_mha_chunk";
    case OpId::lse_merge: return "lse_merge";
    case OpId::indexer_proj: return "indexer_proj";
    case OpId::indexer_scores: return "indexer_scores";
    case OpId::sparse_latent_attention: return "sparse_latent_attention";
    case OpId::qkv_proj: return "qkv_proj";
    case OpId::attention: return "attention";
    case OpId::attention_sliding: return "attention_sliding";
    case OpId::embedding: return "embedding";
    case OpId::rms_norm: return "rms_norm";
    case OpId::swiglu: return "swiglu";
    case OpId::dense_gate_up: return "dense_gate_up";
    case OpId::dense_down: return "dense_down";
    case OpId::router: return "router";
    case OpId::expert_gate_up: return "expert_gate_up";
    case OpId::expert_down: return "expert_down";
    case OpId::shared_gate_up: return "shared_gate_up";
    case OpId::shared_down: return "shared_down";
    case OpId::mtp_eh_proj: return "mtp_eh_proj";
    case OpId::lm_head: return "lm_head";
    case OpId::sampling: return "sampling";
    case OpId::expert_scatter: return "expert_scatter";
    case OpId::expert_gather: return "expert_gather";
    case OpId::act_quant: return "act_quant";
    case OpId::rope: return "rope";
    case OpId::kv_store: return "kv_store";
    case OpId::topk_gate: return "topk_gate";
    case OpId::moe_sum: return "moe_sum";
    case OpId::k_nope_copy: return "k_nope_copy";
    case OpId::rope_kv_append: return "rope_kv_append";
    case OpId::mtp_concat: return "mtp_concat";
  }
  return "?";
}

OpKind kind_of(OpId id) {
  switch (id) {
    case OpId::q_absorb_w_uk:
    case OpId::out_absorb_w_uv: return OpKind::bmm;
    case OpId::latent_attention_mqa:
    case OpId::attention_mha:
    case OpId::attention_mha_chunk:
    case OpId::sparse_latent_attention:
    case OpId::attention:
    case OpId::attention_sliding: return OpKind::attention;
    case OpId::split_kv_merge:
    case OpId::lse_merge: return OpKind::merge;
    case OpId::rope_k_broadcast:
    case OpId::embedding:
    case OpId::rms_norm:
    case OpId::swiglu:
    case OpId::sampling:
    case OpId::expert_scatter:
    case OpId::expert_gather:
    case OpId::act_quant:
    case OpId::rope:
    case OpId::kv_store:
    case OpId::topk_gate:
    case OpId::moe_sum:
    case OpId::k_nope_copy:
    case OpId::rope_kv_append:
    case OpId::mtp_concat: return OpKind::elementwise;
    case OpId::expert_gate_up:
    case OpId::expert_down: return OpKind::grouped_gemm;
    case OpId::indexer_scores: return OpKind::indexer;
    case OpId::q_a_proj:
    case OpId::q_b_proj:
    case OpId::q_proj:
    case OpId::kv_a_proj:
    case OpId::o_proj:
    case OpId::kv_up_proj:
    case OpId::kv_up_proj_chunk:
    case OpId::indexer_proj:
    case OpId::qkv_proj:
    case OpId::dense_gate_up:
    case OpId::dense_down:
    case OpId::router:
    case OpId::shared_gate_up:
    case OpId::shared_down:
    case OpId::mtp_eh_proj:
    case OpId::lm_head: return OpKind::gemm;
  }
  return OpKind::gemm;
}

const Op* PathPlan::find(OpId id) const {
  for (const Op& op : *this)
    if (op.id == id) return &op;
  return nullptr;
}
Flops PathPlan::flops() const {
  Flops f{0};
  for (const Op& op : *this) f += op.flops;
  return f;
}
BytesF PathPlan::bytes() const {
  BytesF b{0};
  for (const Op& op : *this) b += op.bytes();
  return b;
}
BytesF PathPlan::workspace_bytes() const {
  BytesF w{0};
  for (const Op& op : *this) w = std::max(w, op.workspace_bytes);
  return w;
}

double sequences_per_rank(const SequenceGroup& g, const Parallelism& par) {
  return static_cast<double>(ceil_div(g.count, std::max<std::int64_t>(1, par.dp)));
}

double attention_pairs(double query, double prefix, bool causal) {
  return causal ? query * prefix + query * (query + 1) / 2 : query * (prefix + query);
}

double capped_pairs(double query, double prefix, double cap, bool causal) {
  if (!causal) return query * std::min(cap, prefix + query);
  if (prefix + query <= cap) return attention_pairs(query, prefix, true);
  if (prefix + 1 >= cap) return query * cap;
  const double below = cap - prefix - 1;  // queries that see fewer than cap keys
  return attention_pairs(below, prefix, true) + (query - below) * cap;
}

// Kernel tiles, for calibrated time (efficiency.hpp): GEMMs in 128 x 128 output tiles (split-K below); the latent
// kernel packs a sequence's Q·h_t query rows into tiles of 64 (FlashMLA's block of heads, padded)
// and splits its keys into blocks of 64 (FlashMLA's scheduler, block_size_n 64 in
// csrc/api/dense_decode.h:103 @9241ae3) spread over the SMs; flash attention runs one thread block per 128 queries and
// head, and the block of a causal prefill's last queries sees every key.
constexpr double kGemmTile = 128, kLatentRows = 64, kLatentKeys = 64, kFlashQueries = 128;
// A GEMM with fewer output tiles than SMs splits its reduction (split-K, as cuBLAS and DeepGEMM do
// for skinny shapes) into slices of at least 512.
constexpr double kSplitKMin = 512, kFoldSplitKMin = 128;

BatchTotals batch_totals(const Workload& w) {
  BatchTotals t;
  for (const SequenceGroup& g : w.groups) {
    const double b = sequences_per_rank(g, w.par);
    t.sequences += b;
    t.new_tokens += b * g.query;
    t.keys += b * (g.prefix + g.query);
    t.pairs += b * attention_pairs(g.query, g.prefix, w.causal);
  }
  return t;
}

namespace {

// One of MLA's linear layers on the checkpoint's attention weights.
Op mla_linear(OpId id, const MlaGeometry& g, double tokens, double in, double out) {
  Op op = gemm_op(id, tokens, in, out, g.weight_bytes, g.act_bytes);
  set_weight_precision(op, g.weights);
  return op;
}

void add_mla_projections_in(PathPlan& p, const MlaGeometry& g, const BatchTotals& t) {
  const double T = t.new_tokens;
  const double qk = g.d_n + g.d_r;
  if (g.r_q > 0) {
    p.add(mla_linear(OpId::q_a_proj, g, T, g.hidden, g.r_q));
    p.add(mla_linear(OpId::q_b_proj, g, T, g.r_q, g.heads * qk));
  } else {
    p.add(mla_linear(OpId::q_proj, g, T, g.hidden, g.heads * qk));
  }
  Op kv = mla_linear(OpId::kv_a_proj, g, T, g.hidden, g.r + g.d_r);
  kv.bytes_written += BytesF{T * g.cache_bytes_per_token};  // the new tokens' cache rows
  p.add(kv);
}

void add_o_proj(PathPlan& p, const MlaGeometry& g, const BatchTotals& t) { p.add(mla_linear(OpId::o_proj, g, t.new_tokens, g.heads * g.d_v, g.hidden)); }

// A per-head fold, [h_t, T, in] × [h_t, in, out]: W_UK into the query (in d_n, out r) and W_UV
// into the output (in r, out d_v). The weights are read once, the activations once per token. A
// launch of fewer tiles than SMs splits the reduction in slices of at least kFoldSplitKMin (W_UV's 512
// in four): aiconfigurator's A100 rows of W_UV at 2 heads take 8.7-8.9 µs from 256 to 2,048 tokens,
// where 2,048 tokens' 32 whole 128 x 128 x 512 tiles, one to an SM, take 5.8 µs of tensor-core time
// each at the dense peak beside the launch's 4.4 µs fixed cost. The folds' rows fit 7.3% held out
// in-table split, 10.0% unsplit (their cost per CTA fitted against η_m alone then; W_UK, K = 128,
// never splits). The slices are launched_ctas' ⌈SMs / tiles⌉ at most, as a GEMM's: 32 tiles on 108
// SMs take four, 128 CTAs in two waves, which times those very rows 20-32% slow (1,024 tokens at 4
// heads, 2,048 at 2). ⌊SMs / tiles⌋, one wave, fits the folds' rows better in-table (A100 7.5% ->
// 6.4%, H100 5.6% -> 5.0%) but H100's GEMMs worse (7.2% -> 7.6%): a rule of the folds' own, not yet made.
Op fold(OpId id, const MlaGeometry& g, const BatchTotals& t, double in, double out) {
  Op op;
  op.id = id;
  op.flops = Flops{2 * t.new_tokens * g.heads * in * out};
  op.bytes_read = BytesF{g.heads * in * out * g.fold_weight_bytes + t.new_tokens * g.heads * in * g.act_bytes};
  op.bytes_written = BytesF{t.new_tokens * g.heads * out * g.act_bytes};
  op.tiling.ctas = g.heads * std::ceil(t.new_tokens / kGemmTile) * std::ceil(out / kGemmTile);
  op.tiling.split_k = std::max(1.0, std::floor(in / kFoldSplitKMin));
  return op;
}
Op q_absorb(const MlaGeometry& g, const BatchTotals& t) { return fold(OpId::q_absorb_w_uk, g, t, g.d_n, g.r); }
Op v_absorb(const MlaGeometry& g, const BatchTotals& t) { return fold(OpId::out_absorb_w_uv, g, t, g.r, g.d_v); }

// MQA over the latent: key width r + d_r, value width r, one cache read per sequence. With split-KV
// (splits > 1) each split writes an fp32 partial output and its fp32 log-sum-exp per row.
Op latent_attention(OpId id, const MlaGeometry& g, const BatchTotals& t, double pairs, double cached_tokens, double splits, const Tiling& tiling) {
  Op op;
  op.id = id;
  op.tiling = tiling;
  op.flops = Flops{pairs * absorb_flops_per_pair(g).value};
  op.cache_bytes_read = BytesF{cached_tokens * g.cache_bytes_per_token};
  op.bytes_read = op.cache_bytes_read + BytesF{t.new_tokens * g.heads * (g.r + g.d_r) * g.act_bytes};
  const double rows = t.new_tokens * g.heads;
  op.bytes_written = BytesF{splits > 1 ? splits * rows * (g.r * 4 + 4) : rows * g.r * g.act_bytes};
  if (splits > 1) op.tiling.latent_partial_bytes = 0;  // counted in its bytes, merged by split_kv_merge
  return op;
}

// Combines split-KV partials: reads every split's fp32 partial and log-sum-exp, rescales by
// exp(lse_i − lse) and sums (≈ 2r + 4 FLOPs per row and split), writes the latent output.
// The latent kernel's tiles over the batch; `topk` > 0: each query sees at most topk keys (DSA).
Tiling latent_tiling(const MlaGeometry& g, const Workload& w, double topk) {
  Tiling t;
  for (const SequenceGroup& sg : w.groups) {
    const double b = sequences_per_rank(sg, w.par);
    const double rows = sg.query * g.heads, tiles = std::ceil(rows / kLatentRows);
    const double keys = topk > 0 ? std::min(sg.prefix + sg.query, sg.query * topk) : sg.prefix + sg.query;
    const double pairs = topk > 0 ? capped_pairs(sg.query, sg.prefix, topk, w.causal) : attention_pairs(sg.query, sg.prefix, w.causal);
    t.sequences += b;
    t.ctas += b * tiles * std::ceil(keys / kLatentKeys);
    t.padded_flops += b * pairs * absorb_flops_per_pair(g).value * tiles * kLatentRows / rows;
    // One CTA per sequence and head tile: it reads the sequence's cached keys and its tile's queries
    // and writes its tile's latent output (no partials to merge).
    const double tile_rows = std::min(rows, kLatentRows);
    const double cta_bytes = keys * g.cache_bytes_per_token + tile_rows * ((g.r + g.d_r) + g.r) * g.act_bytes;
    const double slices = std::ceil(g.r / kFmhaV2ValueColumns);
    t.unsplit_ctas += b * tiles * slices;
    t.unsplit_slices = slices;
    t.unsplit_flops += b * pairs * g.heads * tiles * kLatentRows / rows * (slices * 2 * (g.r + g.d_r) + 2 * g.r);
    t.unsplit_bytes += b * tiles * cta_bytes;
    t.unsplit_longest_bytes = std::max(t.unsplit_longest_bytes, cta_bytes);
    // The split launch: this group's key blocks; FlashMLA pads every sequence to the most query tiles.
    t.latent_key_blocks += b * std::ceil(keys / kLatentKeys);
    t.latent_partial_bytes += b * 2 * rows * (g.r * 4 + 4);
    if (b > 0) t.latent_m_tiles = std::max(t.latent_m_tiles, tiles);
  }
  return t;
}

// Flash attention's tiles over the batch: `head_pair_flops` per (query, key) pair and head, keys
// per sequence capped at `key_cap` (a chunk or a window; 0: none), `launches` launches.
Tiling flash_tiling(const Workload& w, double heads, double head_pair_flops, double key_cap, double launches) {
  Tiling t;
  t.launches = launches;
  for (const SequenceGroup& sg : w.groups) {
    const double b = sequences_per_rank(sg, w.par);
    const double keys = key_cap > 0 ? std::min(key_cap, sg.prefix + sg.query) : sg.prefix + sg.query;
    t.sequences += b;
    t.ctas += b * std::ceil(sg.query / kFlashQueries) * heads;
    t.longest_cta_flops = std::max(t.longest_cta_flops, kFlashQueries * keys * head_pair_flops);
  }
  return t;
}

// A GQA/MQA attention kernel's grid: the `group` query heads sharing a KV head are packed into one
// CTA's query rows (FlashAttention-3's pack-GQA, FlashInfer's and TensorRT-LLM XQA's decode
// kernels), so a decode step's single query fills `group` rows of a tile, not one. Where the tiles
// are too few to fill the SMs, the kernels split each sequence's keys over more CTAs (flash-decoding),
// in slices of at least kSplitKeys keys. A decode kernel splits by XQA's multi-block rule instead
// (decode_blocks_per_sequence here, the wave cap in launched_ctas).
constexpr double kSplitKeys = 256;
Tiling packed_gqa_tiling(const Workload& w, double kv_heads, double group, double head_pair_flops, double partial_bytes, double key_cap, bool decode) {
  Tiling t;
  t.launches = 1;
  t.decode_kernel = decode;
  double most_keys = 0, blocks = 0;  // the longest sequence's keys; sequences x KV heads
  bool spec = false;                 // a speculative step: more than one query token per sequence
  for (const SequenceGroup& sg : w.groups) {
    const double b = sequences_per_rank(sg, w.par);
    const double keys = key_cap > 0 ? std::min(key_cap, sg.prefix + sg.query) : sg.prefix + sg.query;
    const double rows = sg.query * group;
    t.sequences += b;
    t.ctas += b * std::ceil(rows / kFlashQueries) * kv_heads;
    t.longest_cta_flops = std::max(t.longest_cta_flops, std::min(rows, kFlashQueries) * keys * head_pair_flops);
    t.split_k = std::max(t.split_k, decode ? decode_blocks_per_sequence(keys) : std::ceil(keys / kSplitKeys));
    most_keys = std::max(most_keys, keys);
    if (decode) t.decode_block_rows = std::max(t.decode_block_rows, std::min(rows, kFlashQueries));
    blocks += b * kv_heads;
    spec = spec || sg.query > 1;
  }
  if (!decode) return t;
  // A decode kernel's fixed cost per sequence is per block of its grid: XQA gives every (sequence,
  // KV head) a block of its own (its query heads together), which sets up its pages and queries.
  t.sequences = blocks;
  if (spec) {
    // Several query tokens per sequence: XQA's speculative kernels for any head group, never MMHA,
    // one block per sequence and KV head (mayHavePerfGain is true for multi_query_tokens; the
    // multi-block count is 1 but for Hopper's small-batch tuning, computeMultiBlockCountSpecDecGMMA,
    // not modelled).
    t.split_k = 1;
    t.xqa_group = true;
    t.multi_query = true;
    return t;
  }
  // XQA's test counts every block at the longest sequence's multi-block count (mayHavePerfGain).
  t.xqa_group = group > 1 && group <= kXqaMaxGroup;
  t.head_group = group;
  t.xqa_fp8_cache = w.kv == KvDtype::fp8;
  t.xqa_partial_bytes = partial_bytes;
  t.xqa_gain_blocks = blocks * std::max(1.0, std::floor(most_keys / kXqaHistoryPerBlock));
  t.mmha_ctas = blocks * group;
  t.mmha_key_tiles = std::max(1.0, std::ceil(most_keys / kMmhaKeysPerTile));
  return t;
}

Op split_kv_merge(const MlaGeometry& g, const BatchTotals& t, double splits) {
  const double rows = t.new_tokens * g.heads;
  Op op;
  op.id = OpId::split_kv_merge;
  op.flops = Flops{splits * rows * (2 * g.r + 4)};
  op.bytes_read = BytesF{splits * rows * (g.r * 4 + 4)};
  op.bytes_written = BytesF{rows * g.r * g.act_bytes};
  return op;
}

}  // namespace

double expanded_workspace_bytes_per_key(const MlaGeometry& g) { return g.heads * (g.d_n + g.d_r + g.d_v) * g.act_bytes; }

namespace {

// Up-projection of `keys` cached latents to per-head K_nope and V.
Op kv_up_proj(OpId id, const MlaGeometry& g, double keys, double weight_reads, double workspace_keys) {
  Op op;
  op.id = id;
  op.tiling.launches = weight_reads;
  op.tiling.ctas = std::ceil(workspace_keys / kGemmTile) * std::ceil(g.heads * (g.d_n + g.d_v) / kGemmTile);
  op.flops = Flops{keys * expand_flops_per_token(g).value};
  // The latent part of each cached row (the RoPE key is read by rope_broadcast: the row once in all).
  op.cache_bytes_read = BytesF{keys * (g.cache_bytes_per_token - g.rope_cache_bytes_per_token)};
  op.bytes_read = op.cache_bytes_read + BytesF{weight_reads * g.heads * g.r * (g.d_n + g.d_v) * g.weight_bytes};
  op.bytes_written = BytesF{keys * g.heads * (g.d_n + g.d_v) * g.act_bytes};
  op.workspace_bytes = BytesF{workspace_keys * expanded_workspace_bytes_per_key(g)};
  set_weight_precision(op, g.weights);  // kv_b_proj, a linear layer on the checkpoint's weights
  return op;
}

// The RoPE key, shared by all heads, read from the cache at its own width and copied onto every
// head to form 192-wide keys.
Op rope_broadcast(const MlaGeometry& g, double keys) {
  Op op;
  op.id = OpId::rope_k_broadcast;
  op.cache_bytes_read = BytesF{keys * g.rope_cache_bytes_per_token};
  op.bytes_read = op.cache_bytes_read;
  op.bytes_written = BytesF{keys * g.heads * g.d_r * g.act_bytes};
  return op;
}

// Ordinary attention over expanded keys (width d_n + d_r) and values (width d_v).
Op expanded_attention(OpId id, const MlaGeometry& g, const Workload& w, const BatchTotals& t, double query_reads, double partial_outputs, double key_cap) {
  Op op;
  op.id = id;
  op.tiling = flash_tiling(w, g.heads, expand_flops_per_pair(g).value / g.heads, key_cap, partial_outputs);
  op.flops = Flops{t.pairs * expand_flops_per_pair(g).value};
  op.bytes_read = BytesF{t.keys * g.heads * (g.d_n + g.d_r + g.d_v) * g.act_bytes +
                         query_reads * t.new_tokens * g.heads * (g.d_n + g.d_r) * g.act_bytes};
  // Each partial output carries an fp32 log-sum-exp per head and query.
  op.bytes_written = BytesF{partial_outputs * t.new_tokens * g.heads * (g.d_v * g.act_bytes + (partial_outputs > 1 ? 4 : 0))};
  return op;
}

// Chunked expand's merge: per chunk after the first, rescale both partials by exp(lse − max) and
// add (≈ 2·d_v + 4 FLOPs per row); reads every chunk's partial with its lse, writes the output.
Op lse_merge(const MlaGeometry& g, const BatchTotals& t, double chunks) {
  Op op;
  op.id = OpId::lse_merge;
  op.flops = Flops{(chunks - 1) * t.new_tokens * g.heads * (2 * g.d_v + 4)};
  op.bytes_read = BytesF{chunks > 1 ? chunks * t.new_tokens * g.heads * (g.d_v * g.act_bytes + 4) : 0};
  op.bytes_written = BytesF{chunks > 1 ? t.new_tokens * g.heads * g.d_v * g.act_bytes : 0};
  op.tiling.launches = std::max(1.0, chunks - 1);
  return op;
}

// DeepSeek-V3.2's lightning indexer for one step: its projections when in scope (wq_b from the query
// latent, wk and the head weights from the hidden state), then fp8 scores of every visible key for
// every query (DeepSeek-V3.2-Exp inference/model.py: act_quant, fp8_index), and the top-k indices.
void add_indexer(PathPlan& p, const MlaGeometry& g, const BatchTotals& t, bool projections) {
  if (projections) {
    Op ix = gemm_op(OpId::indexer_proj, t.new_tokens, g.r_q > 0 ? g.r_q : g.hidden, g.index_heads * g.index_dim, g.weight_bytes, g.act_bytes);
    const Op wk = gemm_op(OpId::indexer_proj, t.new_tokens, g.hidden, g.index_dim + g.index_heads, g.weight_bytes, g.act_bytes);
    ix.flops += wk.flops;
    ix.bytes_read += wk.bytes_read;
    ix.bytes_written += wk.bytes_written + BytesF{t.new_tokens * g.indexer_bytes_per_token};
    p.add(ix);
  }
  Op ix;
  ix.id = OpId::indexer_scores;
  ix.fp8 = true;
  ix.flops = Flops{t.pairs * 2 * g.index_heads * (g.index_dim + 1)};
  ix.cache_bytes_read = BytesF{t.keys * g.indexer_bytes_per_token};
  ix.bytes_read = ix.cache_bytes_read + BytesF{t.new_tokens * g.index_heads * g.index_dim};  // fp8 index queries
  ix.bytes_written = BytesF{t.new_tokens * g.index_topk * 4};                                // int32 top-k indices
  ix.tiling.sequences = t.sequences;
  p.add(ix);
}

}  // namespace

Op gemm_op(OpId id, double tokens, double in, double out, double weight_b, double act_b) {
  Op op;
  op.id = id;
  op.flops = Flops{2 * tokens * in * out};
  op.bytes_read = BytesF{in * out * weight_b + tokens * in * act_b};
  op.bytes_written = BytesF{tokens * out * act_b};
  op.tiling.ctas = std::ceil(tokens / kGemmTile) * std::ceil(out / kGemmTile);
  op.tiling.split_k = std::max(1.0, std::floor(in / kSplitKMin));
  op.tiling.gemm_m = tokens, op.tiling.gemm_n = out, op.tiling.gemm_k = in;
  return op;
}

void set_weight_precision(Op& op, WeightDtype d) {
  op.fp8 = is_fp8(d);
  op.fp8_per_tensor = d == WeightDtype::fp8_tensor;
}

std::vector<Op> gqa_rope_and_cache_write(int kernels, double tokens, double heads, double kv_heads, double head_dim, double act_b,
                                         double cache_bytes_per_token) {
  if (kernels <= 0) return {};
  const double q = tokens * heads * head_dim, k = tokens * kv_heads * head_dim;
  const BytesF stored{tokens * cache_bytes_per_token};
  Op rope;
  rope.flops = Flops{3 * (q + k)};
  if (kernels == 1) {
    rope.id = OpId::rope_kv_append;
    rope.bytes_read = BytesF{(q + 2 * k) * act_b};
    rope.bytes_written = BytesF{q * act_b} + stored;
    return {rope};
  }
  rope.id = OpId::rope;
  rope.bytes_read = BytesF{(q + k) * act_b};
  rope.bytes_written = rope.bytes_read;
  Op store;
  store.id = OpId::kv_store;
  store.bytes_read = BytesF{2 * k * act_b};
  store.bytes_written = stored;
  if (kernels == 2) return {rope, store};
  store.bytes_read = BytesF{k * act_b};  // 3: K and V stored by a kernel each
  store.bytes_written = BytesF{stored.value / 2};
  return {rope, store, store};
}

Op grouped_gemm_op(OpId id, double pairs, double touched, double in, double out, double weight_b, double act_b) {
  Op op;
  op.id = id;
  op.flops = Flops{2 * pairs * in * out};
  op.bytes_read = BytesF{touched * in * out * weight_b + pairs * in * act_b};
  op.bytes_written = BytesF{pairs * out * act_b};
  const double rows = touched > 0 ? pairs / touched : 0;
  const double row_tiles = touched * std::ceil(rows / kGemmTile);
  op.tiling.ctas = row_tiles * std::ceil(out / kGemmTile);
  op.tiling.padded_flops = 2 * row_tiles * kGemmTile * in * out;
  return op;
}

double weight_bytes_per_element(const ModelSpec& m, WeightDtype d) {
  return bytes_per_element(weight_format_for(m, d));
}

MlaGeometry mla_geometry(const ModelSpec& m, const Workload& w) {
  MlaGeometry g;
  const MlaDims& a = *m.mla;
  g.heads = static_cast<double>(m.heads) / static_cast<double>(w.par.tp);
  g.r = static_cast<double>(a.kv_lora_rank);
  g.d_r = static_cast<double>(a.qk_rope_head_dim);
  g.d_n = static_cast<double>(a.qk_nope_head_dim);
  g.d_v = static_cast<double>(a.v_head_dim);
  g.r_q = static_cast<double>(a.q_lora_rank);
  g.hidden = static_cast<double>(m.hidden);
  const KvBytes row = mla_kv_bytes_per_token_per_layer(a, w.kv);
  g.cache_bytes_per_token = static_cast<double>(row.total().value);
  // The RoPE key's share of the row: 64 bf16 values in FlashMLA's fp8 layout, else its part of the
  // data at the cache dtype's width (scales stay with the latent).
  g.rope_cache_bytes_per_token = w.kv == KvDtype::fp8_flashmla
                                     ? g.d_r * 2
                                     : static_cast<double>(row.data.value) * g.d_r / (g.r + g.d_r);
  if (m.indexer) {
    g.indexer_bytes_per_token = static_cast<double>(indexer_bytes_per_token_per_layer(*m.indexer).value);
    g.index_heads = static_cast<double>(m.indexer->n_heads);
    g.index_dim = static_cast<double>(m.indexer->head_dim);
    g.index_topk = static_cast<double>(m.indexer->topk);
  }
  g.act_bytes = bytes_per_element(w.compute);
  g.weight_bytes = weight_bytes_per_element(m, w.weights);
  g.fold_weight_bytes = weight_bytes_per_element(m, w.fold_weights.value_or(w.weights));
  g.weights = w.weights;
  return g;
}

Flops expand_flops_per_token(const MlaGeometry& g) { return Flops{2 * g.r * g.heads * (g.d_n + g.d_v)}; }
Flops expand_flops_per_pair(const MlaGeometry& g) { return Flops{2 * g.heads * (g.d_n + g.d_r + g.d_v)}; }
Flops absorb_flops_per_pair(const MlaGeometry& g) { return Flops{2 * g.heads * (2 * g.r + g.d_r)}; }

PathPlan mla_path(const ModelSpec& m, const Workload& w, PathKind kind) { return mla_path(mla_geometry(m, w), w, kind); }

PathPlan mla_path(const MlaGeometry& g, const Workload& w, PathKind kind) {
  const BatchTotals t = batch_totals(w);
  PathPlan p;
  p.kind = kind;
  if (w.projections) add_mla_projections_in(p, g, t);
  switch (kind) {
    case PathKind::absorb: {
      const double splits = static_cast<double>(std::max<std::int64_t>(1, w.kv_splits));
      p.add(q_absorb(g, t));
      Op latent = latent_attention(OpId::latent_attention_mqa, g, t, t.pairs, t.keys, splits, latent_tiling(g, w, 0));
      // Over an fp8 cache, the fp8 generation kernel where the GPU runs one (Roofline::latent_fp8):
      // the fp8 peak and the family's fp8-cache launch costs.
      latent.fp8_cache = w.kv == KvDtype::fp8;
      p.add(latent);
      if (splits > 1) p.add(split_kv_merge(g, t, splits));
      p.add(v_absorb(g, t));
      break;
    }
    case PathKind::expand:
      p.add(kv_up_proj(OpId::kv_up_proj, g, t.keys, 1, t.keys));
      p.add(rope_broadcast(g, t.keys));
      p.add(expanded_attention(OpId::attention_mha, g, w, t, 1, 1, 0));
      break;
    case PathKind::chunked: {
      // The batch's keys are expanded C at a time; each chunk's partial output is merged by
      // its log-sum-exp. Weights and queries are read once per chunk.
      const double chunk = std::max(1.0, w.chunk);
      const double chunks = std::max(1.0, std::ceil(t.keys / chunk));
      p.add(kv_up_proj(OpId::kv_up_proj_chunk, g, t.keys, chunks, std::min(chunk, t.keys)));
      p.add(rope_broadcast(g, t.keys));
      p.add(expanded_attention(OpId::attention_mha_chunk, g, w, t, chunks, chunks, chunk));
      p.add(lse_merge(g, t, chunks));
      break;
    }
    case PathKind::sparse: {
      // DSA: the indexer scores every visible key for every query (n_i heads of width d_i, then a
      // head-weighted sum), then absorbed attention runs over the top-k keys per query.
      double sparse_pairs = 0, retrieved = 0;
      for (const SequenceGroup& sg : w.groups) {
        const double b = sequences_per_rank(sg, w.par);
        sparse_pairs += b * capped_pairs(sg.query, sg.prefix, g.index_topk, w.causal);
        retrieved += b * std::min(sg.prefix + sg.query, sg.query * g.index_topk);
      }
      add_indexer(p, g, t, w.projections);
      p.add(q_absorb(g, t));
      p.add(latent_attention(OpId::sparse_latent_attention, g, t, sparse_pairs, retrieved, 1, latent_tiling(g, w, g.index_topk)));
      p.add(v_absorb(g, t));
      break;
    }
    case PathKind::standard:
    case PathKind::split: break;
  }
  if (kind != PathKind::sparse && g.index_topk > 0) {
    // A dense path reproduces DSA's output only with the indexer's top-k as a mask once a query
    // sees more than index_topk keys: the indexer then runs as in the sparse path.
    bool beyond = false;
    for (const SequenceGroup& sg : w.groups) beyond = beyond || sg.prefix + sg.query > g.index_topk;
    if (beyond) {
      add_indexer(p, g, t, w.projections);
    } else if (w.projections) {
      // Below index_topk nothing is masked, but the indexer's keys still go into its cache for the
      // steps that will see more: wk over the new tokens and the cache write.
      Op keys = gemm_op(OpId::indexer_proj, t.new_tokens, g.hidden, g.index_dim, g.weight_bytes, g.act_bytes);
      keys.bytes_written += BytesF{t.new_tokens * g.indexer_bytes_per_token};
      p.add(keys);
    }
  }
  if (w.projections) add_o_proj(p, g, t);
  return p;
}

std::optional<PathPlan> feasible_expanded(const MlaGeometry& g, const Workload& w, std::optional<Bytes> budget) {
  PathPlan full = mla_path(g, w, PathKind::expand);
  if (!budget || full.workspace_bytes().value <= static_cast<double>(budget->value)) return full;
  const double chunk = std::floor(static_cast<double>(budget->value) / expanded_workspace_bytes_per_key(g));
  if (chunk < 1) return std::nullopt;
  Workload c = w;
  c.chunk = chunk;
  return mla_path(g, c, PathKind::chunked);
}

PathPlan split_path(const ModelSpec& m, const Workload& w, const std::vector<bool>& absorbed, PathKind absorbed_kind, PathKind expanded_kind) {
  Workload wa = w, we = w;
  wa.groups.clear();
  we.groups.clear();
  wa.projections = we.projections = false;
  for (std::size_t i = 0; i < w.groups.size(); ++i) (i < absorbed.size() && absorbed[i] ? wa : we).groups.push_back(w.groups[i]);
  PathPlan p;
  p.kind = PathKind::split;
  auto append = [&p](const PathPlan& part, bool projections_only) {
    for (const Op& op : part) {
      const bool projection = op.id == OpId::q_a_proj || op.id == OpId::q_b_proj || op.id == OpId::q_proj || op.id == OpId::kv_a_proj ||
                              op.id == OpId::o_proj || op.id == OpId::indexer_proj;
      if (projection == projections_only) p.add(op);
    }
  };
  if (w.projections) {
    // Projections run once over every new token of the batch (their weights read once).
    Workload all = w;
    append(mla_path(m, all, absorbed_kind), true);
  }
  if (!wa.groups.empty()) append(mla_path(m, wa, absorbed_kind), false);
  if (!we.groups.empty()) append(mla_path(m, we, expanded_kind), false);
  return p;
}

PathPlan standard_path(const ModelSpec& m, const Workload& w, std::int64_t window) {
  PathPlan p;
  p.kind = PathKind::standard;
  const double ht = static_cast<double>(m.heads) / static_cast<double>(w.par.tp);
  const double kvt = static_cast<double>(kv_heads_per_rank(m, w.par.tp));
  const double d = static_cast<double>(m.head_dim), H = static_cast<double>(m.hidden);
  const double ba = bytes_per_element(w.compute), bw = weight_bytes_per_element(m, w.weights);
  const double cache = static_cast<double>(kv_bytes_per_token_per_layer(m, w.kv, w.par.tp).total().value);
  double T = 0, pairs = 0, keys = 0;
  for (const SequenceGroup& g : w.groups) {
    const double b = sequences_per_rank(g, w.par);
    const double cap = window > 0 ? static_cast<double>(window) : g.prefix + g.query;
    T += b * g.query;
    pairs += b * capped_pairs(g.query, g.prefix, cap, w.causal);
    keys += b * std::min(cap, g.prefix + g.query);
  }
  if (w.projections) {
    Op qkv = gemm_op(OpId::qkv_proj, T, H, (ht + 2 * kvt) * d, bw, ba);
    set_weight_precision(qkv, w.weights);
    qkv.bytes_written += BytesF{T * cache};
    p.add(qkv);
  }
  Op att;
  att.id = window > 0 ? OpId::attention_sliding : OpId::attention;
  att.flops = Flops{pairs * 2 * ht * (d + d)};  // QK width d, PV width d
  att.cache_bytes_read = BytesF{keys * cache};
  att.bytes_read = att.cache_bytes_read + BytesF{T * ht * d * ba};
  att.bytes_written = BytesF{T * ht * d * ba};
  const bool decode = !w.context_phase && std::all_of(w.groups.begin(), w.groups.end(), [&](const SequenceGroup& g) {
    return g.query <= 1 + static_cast<double>(w.spec_tokens);
  });
  att.fp8_cache = decode && w.kv == KvDtype::fp8;
  const double group = std::max(1.0, ht / kvt);
  // A split XQA block's 16-bit partial output and fp32 row sum and max per query head, written and
  // read back (XQA's input element, fp16 or bf16, whatever the compute dtype).
  att.tiling = packed_gqa_tiling(w, kvt, group, 2 * (d + d), 2 * group * (d * 2 + 8), static_cast<double>(window), decode);
  p.add(att);
  if (w.projections) {
    Op o = gemm_op(OpId::o_proj, T, ht * d, H, bw, ba);
    set_weight_precision(o, w.weights);
    p.add(o);
  }
  return p;
}

double decode_blocks_per_sequence(double keys) {
  double blocks = std::floor(keys / kXqaHistoryPerBlock);
  blocks = std::min(blocks, std::round(std::sqrt(blocks * 8)));
  return std::max(blocks, 1.0);
}

std::vector<PathKind> paths_for(const ModelSpec& m) {
  if (!m.is_mla()) return {PathKind::standard};
  if (m.indexer) return {PathKind::absorb, PathKind::expand, PathKind::chunked, PathKind::sparse};
  return {PathKind::absorb, PathKind::expand, PathKind::chunked};
}

}  // namespace mlaplan
