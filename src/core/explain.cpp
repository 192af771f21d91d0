#include "mlaplan/core/explain.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace mlaplan {

std::string grouped(std::int64_t v) {
  const std::string digits = std::to_string(v);
  const std::size_t sign = v < 0 ? 1 : 0;
  std::string out = digits.substr(0, sign);
  for (std::size_t i = sign; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

namespace {

// Concatenation through a stream: GCC 12 -O3 reports a false -Wrestrict on chained std::string +.
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return s.str();
}

std::string bytes(std::int64_t v) { return cat(grouped(v), " B"); }

// How a vector of n values is stored (values and scales), as a formula and with n substituted.
struct VectorFormula {
  std::string formula, substituted;
};
VectorFormula vector_formula(const std::string& n_name, const std::string& n_values, KvDtype d) {
  switch (d) {
    case KvDtype::fp32: return {cat(n_name, " · 4 B"), cat(n_values, " · 4 B")};
    case KvDtype::bf16:
    case KvDtype::fp16: return {cat(n_name, " · 2 B"), cat(n_values, " · 2 B")};
    case KvDtype::fp8:
    case KvDtype::fp8_flashmla: return {cat(n_name, " · 1 B"), cat(n_values, " · 1 B")};
    case KvDtype::fp4:
      return {cat("(⌈", n_name, " / 2⌉ + ⌈", n_name, " / 32⌉) B (e2m1 pairs, one scale per 32)"), cat("(⌈", n_values, " / 2⌉ + ⌈", n_values, " / 32⌉) B")};
  }
  return {};
}

}  // namespace

std::vector<ExplainStep> explain_kv(const ModelSpec& m, KvDtype d, const Parallelism& par, std::int64_t tokens, std::int64_t sequences,
                                    std::int64_t block_size) {
  std::vector<ExplainStep> s;
  const Bytes layer = kv_bytes_per_token_per_layer(m, d, 1).total();
  if (m.mla) {
    const MlaDims& a = *m.mla;
    if (d == KvDtype::fp8_flashmla) {
      s.push_back({"cache bytes per token per layer", "kv_lora_rank · 1 B + qk_rope_head_dim · 2 B + ⌈kv_lora_rank / 128⌉ · 4 B (FlashMLA fp8)",
                   cat(a.kv_lora_rank, " · 1 B + ", a.qk_rope_head_dim, " · 2 B + ", ceil_div(a.kv_lora_rank, 128), " · 4 B"), bytes(layer.value),
                   layer.value, "B"});
    } else {
      const VectorFormula v = vector_formula("(kv_lora_rank + qk_rope_head_dim)", cat("(", a.kv_lora_rank, " + ", a.qk_rope_head_dim, ")"), d);
      s.push_back({"cache bytes per token per layer", v.formula, v.substituted, bytes(layer.value), layer.value, "B"});
    }
  } else {
    const VectorFormula v = vector_formula("head_dim", cat(m.head_dim), d == KvDtype::fp8_flashmla ? KvDtype::fp8 : d);
    s.push_back({"cache bytes per token per layer", cat("2 (K, V) · num_key_value_heads · ", v.formula), cat("2 · ", m.kv_heads, " · ", v.substituted),
                 bytes(layer.value), layer.value, "B"});
  }
  Bytes indexer{0};
  if (m.indexer) {
    indexer = indexer_bytes_per_token_per_layer(*m.indexer);
    s.push_back({"indexer cache bytes per token per layer", "index_head_dim · 1 B + ⌈index_head_dim / 128⌉ · 4 B (fp8 key, fp32 scale)",
                 cat(m.indexer->head_dim, " · 1 B + ", ceil_div(m.indexer->head_dim, 128), " · 4 B"), bytes(indexer.value), indexer.value, "B"});
  }
  const std::int64_t layers = m.num_layers();
  const Bytes per_token = (layer + indexer) * layers;
  s.push_back({"bytes per token, all layers", m.indexer ? "(cache + indexer) per layer · layers" : "per layer · layers",
               m.indexer ? cat("(", bytes(layer.value), " + ", bytes(indexer.value), ") · ", layers) : cat(bytes(layer.value), " · ", layers),
               bytes(per_token.value), per_token.value, "B"});
  const Bytes rank_layer = kv_bytes_per_token_per_layer(m, d, par.tp).total();
  const Bytes per_rank = kv_bytes_per_token(m, d, par.tp).total() + indexer_bytes_per_token(m);
  if (m.mla) {
    s.push_back({"bytes per token on one rank", "all layers (the latent is shared by the heads: every TP rank holds it whole)", cat("TP ", par.tp),
                 bytes(per_rank.value), per_rank.value, "B"});
  } else if (par.tp > 1) {
    const std::int64_t heads = kv_heads_per_rank(m, par.tp);
    s.push_back({"KV heads on one rank", "max(1, num_key_value_heads / TP) (replicated when TP exceeds them)", cat("max(1, ", m.kv_heads, " / ", par.tp, ")"),
                 grouped(heads), heads, "heads"});
    s.push_back({"bytes per token on one rank", "2 · heads on the rank · head_dim · width · layers", cat(bytes(rank_layer.value), " · ", layers),
                 bytes(per_rank.value), per_rank.value, "B"});
  } else {
    s.push_back({"bytes per token on one rank", "all layers (TP 1)", "TP 1", bytes(per_rank.value), per_rank.value, "B"});
  }
  if (tokens <= 0) return s;
  Bytes sequence{0};
  std::string terms, values;
  for (const LayerGroup& g : layer_groups(m)) {
    const std::int64_t held = round_up(tokens_held(g.kind, tokens), block_size);
    const std::string pages = block_size > 1 ? cat(" → pages of ", grouped(block_size)) : std::string();
    s.push_back({g.kind.sliding ? cat("tokens held per layer, window ", grouped(g.kind.window), " layers") : std::string("tokens held per layer"),
                 cat(g.kind.sliding ? "min(tokens, window)" : "tokens", block_size > 1 ? " rounded up to whole pages of block_size" : ""),
                 g.kind.sliding ? cat("min(", grouped(tokens), ", ", grouped(g.kind.window), ")", pages) : cat(grouped(tokens), pages), grouped(held),
                 held, "tokens"});
    sequence += (layer + indexer) * held * g.layers;
    terms = cat(terms, terms.empty() ? "" : " + ", "per layer · held · layers");
    values = cat(values, values.empty() ? "" : " + ", bytes((layer + indexer).value), " · ", grouped(held), " · ", g.layers);
  }
  s.push_back({"bytes per sequence", terms, values, bytes(sequence.value), sequence.value, "B"});
  const Bytes all = sequence * sequences;
  s.push_back({"bytes for all sequences", "per sequence · sequences", cat(bytes(sequence.value), " · ", grouped(sequences)), bytes(all.value), all.value, "B"});
  const Bytes on_rank = sequence_kv_bytes(m, d, par.tp, tokens, block_size);
  const Bytes rank = on_rank * ceil_div(sequences, par.dp);
  s.push_back({"bytes on one rank", "per sequence on the rank · ⌈sequences / DP⌉", cat(bytes(on_rank.value), " · ⌈", grouped(sequences), " / ", par.dp, "⌉"),
               bytes(rank.value), rank.value, "B"});
  return s;
}

std::vector<ExplainStep> explain_capacity(const ModelSpec& m, const HardwareSpec& hw, const CapacityStudy& st, std::int64_t batched_tokens,
                                          bool reserve_given) {
  const CapacityRequest& q = st.request;
  const CapacityResult& r = st.result;
  std::vector<ExplainStep> s;
  s.push_back({"memory of one GPU", "the hardware file's memory_capacity", hw.name, bytes(r.memory_per_rank.value), r.memory_per_rank.value, "B"});
  s.push_back({"usable memory", "⌊memory · mem_util⌋", cat("⌊", bytes(r.memory_per_rank.value), " · ", q.mem_util, "⌋"), bytes(r.usable_per_rank.value),
               r.usable_per_rank.value, "B"});
  std::string terms;
  for (const WeightGroupRow& w : st.weights) {
    s.push_back({cat("weights on one rank: ", to_string(w.group)), "its tensors at their dtypes (block scales included), split by TP and EP",
                 cat(grouped(w.params.value), " parameters, ", bytes(w.bytes.value), " in all"), bytes(w.bytes_per_rank.value), w.bytes_per_rank.value, "B"});
    terms = cat(terms, terms.empty() ? "" : " + ", bytes(w.bytes_per_rank.value));
  }
  s.push_back({"weights on one rank", "the groups' sum", terms, bytes(r.weight_bytes_per_rank.value), r.weight_bytes_per_rank.value, "B"});
  if (reserve_given) {
    s.push_back({"activation reserve", "--reserve-gib", "given", bytes(r.reserve_bytes_per_rank.value), r.reserve_bytes_per_rank.value, "B"});
  } else {
    // The estimate is tokens · 2 B · (2 · hidden + widest), so the widest intermediate is exact.
    const std::int64_t widest = r.reserve_bytes_per_rank.value / (2 * std::max<std::int64_t>(1, batched_tokens)) - 2 * m.hidden;
    s.push_back({"activation reserve", "batched tokens · 2 B · (2 · hidden_size + widest per-rank intermediate: MLP gate+up, active experts or QKV)",
                 cat(grouped(batched_tokens), " · 2 B · (2 · ", grouped(m.hidden), " + ", grouped(widest), ")"), bytes(r.reserve_bytes_per_rank.value),
                 r.reserve_bytes_per_rank.value, "B"});
  }
  s.push_back({"KV pool on one rank", "usable − weights − reserve (0 when negative)",
               cat(bytes(r.usable_per_rank.value), " − ", bytes(r.weight_bytes_per_rank.value), " − ", bytes(r.reserve_bytes_per_rank.value)),
               bytes(r.kv_pool_bytes_per_rank.value), r.kv_pool_bytes_per_rank.value, "B"});
  s.push_back({"cache bytes per token on one rank", "all layers, the indexer's included (kv --explain derives it)", cat("TP ", q.par.tp),
               bytes(r.kv_bytes_per_token_per_rank.value), r.kv_bytes_per_token_per_rank.value, "B"});
  const std::int64_t block = std::max<std::int64_t>(1, q.block_size);
  if (m.has_sliding_layers()) {
    s.push_back({"tokens on one rank", "tokens in whole sequences of the context, then in the longest partial one the rest holds (windows)",
                 cat(grouped(r.sequences_per_rank), " · ", grouped(q.context), " + the partial sequence"), grouped(r.max_tokens_per_rank),
                 r.max_tokens_per_rank, "tokens"});
  } else {
    s.push_back({"tokens on one rank", "⌊pool / (bytes per token · block_size)⌋ · block_size",
                 cat("⌊", bytes(r.kv_pool_bytes_per_rank.value), " / (", bytes(r.kv_bytes_per_token_per_rank.value), " · ", block, ")⌋ · ", block),
                 grouped(r.max_tokens_per_rank), r.max_tokens_per_rank, "tokens"});
  }
  s.push_back({"bytes of one sequence on one rank", "its tokens held per layer (windows cap sliding layers), in whole pages, at the per-layer width",
               cat(grouped(q.context), " tokens"), bytes(r.sequence_bytes_per_rank.value), r.sequence_bytes_per_rank.value, "B"});
  s.push_back({"sequences on one rank", "⌊pool / bytes of one sequence⌋",
               cat("⌊", bytes(r.kv_pool_bytes_per_rank.value), " / ", bytes(r.sequence_bytes_per_rank.value), "⌋"), grouped(r.sequences_per_rank),
               r.sequences_per_rank, "sequences"});
  s.push_back({"sequences in the deployment", "per rank · DP (each data-parallel replica holds its own)", cat(grouped(r.sequences_per_rank), " · ", q.par.dp),
               grouped(r.max_sequences), r.max_sequences, "sequences"});
  return s;
}

std::vector<ExplainStep> explain_engine_capacity(const EngineCapacity& e) {
  std::vector<ExplainStep> s;
  std::int64_t sum = 0;
  for (const BudgetLine& l : e.lines) {
    s.push_back({l.label, l.source, l.key, bytes(l.bytes.value), l.bytes.value, "B"});
    sum += l.bytes.value;
  }
  s.push_back({"the lines' sum", "equals the total the framework sees", bytes(e.total_seen.value), bytes(sum), sum, "B"});
  const std::int64_t block = std::max<std::int64_t>(1, e.block_size);
  s.push_back({"blocks", "⌊KV pool / (bytes per token · block size)⌋ (the engine's own cache layout)",
               cat("⌊", bytes(e.kv_pool.value), " / (", bytes(e.kv_bytes_per_token.value), " · ", block, ")⌋"), grouped(e.blocks), e.blocks, "blocks"});
  s.push_back({"tokens the engine logs", "blocks · block size", cat(grouped(e.blocks), " · ", block), grouped(e.engine_kv_tokens), e.engine_kv_tokens, "tokens"});
  s.push_back({"maximum concurrency", "tokens / max_model_len (as vLLM logs it)", cat(grouped(e.engine_kv_tokens), " / ", grouped(e.max_model_len)),
               cat(e.engine_max_concurrency), 0, "sequences", e.engine_max_concurrency});
  return s;
}

}  // namespace mlaplan

// ---- cost and crossover ----

namespace mlaplan {

namespace {

// A number as a reader checks it: whole numbers grouped and exact, others in the shortest form that
// reads back as the same double.
std::string num(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15) return grouped(static_cast<std::int64_t>(v));
  char buf[32];
  const std::string text(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  const std::size_t point = text.find('.');
  if (point == std::string::npos || text.find('e') != std::string::npos || std::fabs(v) < 1000) return text;
  return cat(grouped(static_cast<std::int64_t>(std::trunc(v))), text.substr(point));  // 1,398,101.3333333333
}

// To 4 significant digits with a decimal prefix: "989.4 TFLOP/s".
std::string si(double v, const char* unit) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  double x = v;
  while (std::fabs(x) >= 1000 && i < 6) {
    x /= 1000;
    ++i;
  }
  std::ostringstream o;
  o << std::setprecision(4) << x << " " << prefixes[i] << unit;
  return o.str();
}

std::string secs(double s) {
  std::ostringstream o;
  o << std::setprecision(4);
  if (s == 0) o << "0 s";
  else if (std::fabs(s) < 1e-6) o << s * 1e9 << " ns";
  else if (std::fabs(s) < 1e-3) o << s * 1e6 << " µs";
  else if (std::fabs(s) < 1) o << s * 1e3 << " ms";
  else o << s << " s";
  return o.str();
}

// "275,515,097,088 FLOP (275.5 GFLOP)": exact, and as people say it when large.
std::string amount(double v, const char* unit) {
  return std::fabs(v) >= 1e6 ? cat(num(v), " ", unit, " (", si(v, unit), ")") : cat(num(v), " ", unit);
}

std::string plain(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

// A step whose result is a real number.
ExplainStep real_step(std::string quantity, std::string formula, std::string substituted, std::string result, double v, std::string unit) {
  return ExplainStep{std::move(quantity), std::move(formula), std::move(substituted), std::move(result), 0, std::move(unit), v};
}

// "12x1@8192" for a group of a mixed batch.
std::string group_name(const SequenceGroup& g) { return cat(g.count, "x", num(g.query), "@", num(g.prefix)); }

// Σ over the groups of `term(group, sequences on the rank)`, as values: "8 · 1 + 2 · 2,048".
template <class Term>
std::string group_sum(const Workload& w, Term&& term) {
  std::string out;
  for (const SequenceGroup& g : w.groups) out = cat(out, out.empty() ? "" : " + ", num(sequences_per_rank(g, w.par)), " · ", term(g));
  return out;
}

std::string pairs_values(double q, double p, bool causal) {
  return causal ? cat(num(q), " · ", num(p), " + ", num(q), " · (", num(q), " + 1) / 2") : cat(num(q), " · (", num(p), " + ", num(q), ")");
}
const char* pairs_formula(bool causal) { return causal ? "Q · P + Q · (Q + 1) / 2" : "Q · (P + Q)"; }

// One op's FLOPs and bytes: the formula in symbols and the same with the values.
struct OpFormula {
  std::string flops, flops_values, bytes, bytes_values;
};

// Symbols and their values for the formulas of one step on one rank.
struct Symbols {
  const MlaGeometry* g = nullptr;  // MLA only
  BatchTotals t;
  double chunks = 1;         // chunked expand: ⌈K / C⌉
  double splits = 1;         // absorbed split-KV partitions
  double pairs = 0, keys = 0;  // the pairs and keys the op's attention sees (capped by top-k or a window)
  bool two_indexer_gemms = false;
  // standard attention
  double heads = 0, kv_heads = 0, head_dim = 0, hidden = 0, act = 2, weight = 2, cache = 0;
};

// [T, in] × [in, out]: 2·T·in·out FLOPs; the weight once, activations in and out once.
OpFormula gemm_formula(const std::string& in, const std::string& in_v, const std::string& out, const std::string& out_v, double T, double bw, double ba,
                       const std::string& extra = "", const std::string& extra_v = "") {
  const std::string t = num(T), w = num(bw), a = num(ba);
  return {cat("2 · T · ", in, " · ", out), cat("2 · ", t, " · ", in_v, " · ", out_v),
          cat(in, " · ", out, " · b_w + T · ", in, " · b_a + T · ", out, " · b_a", extra),
          cat(in_v, " · ", out_v, " · ", w, " + ", t, " · ", in_v, " · ", a, " + ", t, " · ", out_v, " · ", a, extra_v)};
}

OpFormula mla_op_formula(OpId id, const Symbols& y) {
  const MlaGeometry& g = *y.g;
  const BatchTotals& t = y.t;
  const std::string T = num(t.new_tokens), K = num(y.keys), P = num(y.pairs), h = num(g.heads), r = num(g.r), dr = num(g.d_r), dn = num(g.d_n),
                    dv = num(g.d_v), ba = num(g.act_bytes), bw = num(g.weight_bytes), bf = num(g.fold_weight_bytes), c = num(g.cache_bytes_per_token),
                    cr = num(g.rope_cache_bytes_per_token), n = num(y.chunks), s = num(y.splits), H = num(g.hidden), rq = num(g.r_q),
                    ni = num(g.index_heads), di = num(g.index_dim), k = num(g.index_topk), cix = num(g.indexer_bytes_per_token);
  auto fold = [&](const char* in, const std::string& in_v, const char* out, const std::string& out_v) {
    return OpFormula{cat("2 · T · h_t · ", in, " · ", out), cat("2 · ", T, " · ", h, " · ", in_v, " · ", out_v),
                     cat("h_t · ", in, " · ", out, " · b_f + T · h_t · ", in, " · b_a + T · h_t · ", out, " · b_a"),
                     cat(h, " · ", in_v, " · ", out_v, " · ", bf, " + ", T, " · ", h, " · ", in_v, " · ", ba, " + ", T, " · ", h, " · ", out_v, " · ", ba)};
  };
  switch (id) {
    case OpId::q_a_proj: return gemm_formula("hidden", H, "r_q", rq, t.new_tokens, g.weight_bytes, g.act_bytes);
    case OpId::q_b_proj: return gemm_formula("r_q", rq, "h_t · (d_n + d_r)", cat(h, " · (", dn, " + ", dr, ")"), t.new_tokens, g.weight_bytes, g.act_bytes);
    case OpId::q_proj: return gemm_formula("hidden", H, "h_t · (d_n + d_r)", cat(h, " · (", dn, " + ", dr, ")"), t.new_tokens, g.weight_bytes, g.act_bytes);
    case OpId::kv_a_proj:
      return gemm_formula("hidden", H, "(r + d_r)", cat("(", r, " + ", dr, ")"), t.new_tokens, g.weight_bytes, g.act_bytes, " + T · c (the cache rows)",
                          cat(" + ", T, " · ", c));
    case OpId::o_proj: return gemm_formula("h_t · d_v", cat(h, " · ", dv), "hidden", H, t.new_tokens, g.weight_bytes, g.act_bytes);
    case OpId::q_absorb_w_uk: return fold("d_n", dn, "r", r);
    case OpId::out_absorb_w_uv: return fold("r", r, "d_v", dv);
    case OpId::latent_attention_mqa:
    case OpId::sparse_latent_attention: {
      const bool split = y.splits > 1;
      return {"pairs · 2 · h_t · (2 · r + d_r)", cat(P, " · 2 · ", h, " · (2 · ", r, " + ", dr, ")"),
              cat("keys · c + T · h_t · (r + d_r) · b_a + ", split ? "splits · T · h_t · (r · 4 + 4) (fp32 partials and LSE)" : "T · h_t · r · b_a"),
              cat(K, " · ", c, " + ", T, " · ", h, " · (", r, " + ", dr, ") · ", ba, " + ",
                  split ? cat(s, " · ", T, " · ", h, " · (", r, " · 4 + 4)") : cat(T, " · ", h, " · ", r, " · ", ba))};
    }
    case OpId::split_kv_merge:
      return {"splits · T · h_t · (2 · r + 4)", cat(s, " · ", T, " · ", h, " · (2 · ", r, " + 4)"), "splits · T · h_t · (r · 4 + 4) + T · h_t · r · b_a",
              cat(s, " · ", T, " · ", h, " · (", r, " · 4 + 4) + ", T, " · ", h, " · ", r, " · ", ba)};
    case OpId::kv_up_proj:
    case OpId::kv_up_proj_chunk: {
      const bool chunked = id == OpId::kv_up_proj_chunk;
      return {"K · 2 · r · h_t · (d_n + d_v)", cat(K, " · 2 · ", r, " · ", h, " · (", dn, " + ", dv, ")"),
              cat("K · (c − c_r) + ", chunked ? "chunks · " : "", "h_t · r · (d_n + d_v) · b_w + K · h_t · (d_n + d_v) · b_a"),
              cat(K, " · (", c, " − ", cr, ") + ", chunked ? cat(n, " · ") : "", h, " · ", r, " · (", dn, " + ", dv, ") · ", bw, " + ", K, " · ", h, " · (", dn,
                  " + ", dv, ") · ", ba)};
    }
    case OpId::rope_k_broadcast:
      return {"0 (a copy)", "0", "K · c_r + K · h_t · d_r · b_a", cat(K, " · ", cr, " + ", K, " · ", h, " · ", dr, " · ", ba)};
    case OpId::attention_mha:
      return {"pairs · 2 · h_t · (d_n + d_r + d_v)", cat(P, " · 2 · ", h, " · (", dn, " + ", dr, " + ", dv, ")"),
              "K · h_t · (d_n + d_r + d_v) · b_a + T · h_t · (d_n + d_r) · b_a + T · h_t · d_v · b_a",
              cat(K, " · ", h, " · (", dn, " + ", dr, " + ", dv, ") · ", ba, " + ", T, " · ", h, " · (", dn, " + ", dr, ") · ", ba, " + ", T, " · ", h, " · ", dv,
                  " · ", ba)};
    case OpId::attention_mha_chunk: {
      const std::string lse = y.chunks > 1 ? " + 4" : " + 0";
      return {"pairs · 2 · h_t · (d_n + d_r + d_v)", cat(P, " · 2 · ", h, " · (", dn, " + ", dr, " + ", dv, ")"),
              "K · h_t · (d_n + d_r + d_v) · b_a + chunks · T · h_t · (d_n + d_r) · b_a + chunks · T · h_t · (d_v · b_a + 4 B of LSE when chunks > 1)",
              cat(K, " · ", h, " · (", dn, " + ", dr, " + ", dv, ") · ", ba, " + ", n, " · ", T, " · ", h, " · (", dn, " + ", dr, ") · ", ba, " + ", n, " · ", T,
                  " · ", h, " · (", dv, " · ", ba, lse, ")")};
    }
    case OpId::lse_merge:
      return {"(chunks − 1) · T · h_t · (2 · d_v + 4)", cat("(", n, " − 1) · ", T, " · ", h, " · (2 · ", dv, " + 4)"),
              "chunks · T · h_t · (d_v · b_a + 4) + T · h_t · d_v · b_a (0 with one chunk)",
              y.chunks > 1 ? cat(n, " · ", T, " · ", h, " · (", dv, " · ", ba, " + 4) + ", T, " · ", h, " · ", dv, " · ", ba) : std::string("0")};
    case OpId::indexer_scores:
      return {"pairs · 2 · n_i · (d_i + 1) (fp8)", cat(num(t.pairs), " · 2 · ", ni, " · (", di, " + 1)"),
              "K · c_ix + T · n_i · d_i (fp8 queries) + T · top_k · 4 (int32 indices)",
              cat(num(t.keys), " · ", cix, " + ", T, " · ", ni, " · ", di, " + ", T, " · ", k, " · 4")};
    case OpId::indexer_proj: {
      if (!y.two_indexer_gemms)
        return gemm_formula("hidden", H, "d_i", di, t.new_tokens, g.weight_bytes, g.act_bytes, " + T · c_ix (its cache rows)", cat(" + ", T, " · ", cix));
      const bool lora = g.r_q > 0;
      const std::string in = lora ? "r_q" : "hidden", in_v = lora ? rq : H;
      const OpFormula q = gemm_formula(in, in_v, "n_i · d_i", cat(ni, " · ", di), t.new_tokens, g.weight_bytes, g.act_bytes);
      const OpFormula kw = gemm_formula("hidden", H, "(d_i + n_i)", cat("(", di, " + ", ni, ")"), t.new_tokens, g.weight_bytes, g.act_bytes,
                                        " + T · c_ix (its cache rows)", cat(" + ", T, " · ", cix));
      return {cat(q.flops, " + ", kw.flops), cat(q.flops_values, " + ", kw.flops_values), cat(q.bytes, " + ", kw.bytes),
              cat(q.bytes_values, " + ", kw.bytes_values)};
    }
    default: break;
  }
  return {};
}

OpFormula standard_op_formula(OpId id, const Symbols& y) {
  const std::string T = num(y.t.new_tokens), h = num(y.heads), d = num(y.head_dim), ba = num(y.act), c = num(y.cache);
  switch (id) {
    case OpId::qkv_proj:
      return gemm_formula("hidden", num(y.hidden), "(h_t + 2 · kv_t) · d", cat("(", h, " + 2 · ", num(y.kv_heads), ") · ", d), y.t.new_tokens, y.weight, y.act,
                          " + T · c (the cache rows)", cat(" + ", T, " · ", c));
    case OpId::o_proj: return gemm_formula("h_t · d", cat(h, " · ", d), "hidden", num(y.hidden), y.t.new_tokens, y.weight, y.act);
    case OpId::attention:
    case OpId::attention_sliding:
      return {"pairs · 2 · h_t · (d + d)", cat(num(y.pairs), " · 2 · ", h, " · (", d, " + ", d, ")"), "keys · c + T · h_t · d · b_a + T · h_t · d · b_a",
              cat(num(y.keys), " · ", c, " + ", T, " · ", h, " · ", d, " · ", ba, " + ", T, " · ", h, " · ", d, " · ", ba)};
    default: break;
  }
  return {};
}

// The FLOPs, bytes and time steps of one op row of a path.
void add_op_steps(std::vector<ExplainStep>& s, const std::string& path, const OpRow& o, const OpFormula& f, const Roofline& rf) {
  const std::string op(o.op.name());
  s.push_back(real_step(cat(path, " ", op, ": FLOPs per layer"), f.flops, f.flops_values, amount(o.op.flops.value, "FLOP"), o.op.flops.value, "FLOP"));
  s.push_back(real_step(cat(path, " ", op, ": bytes per layer"), f.bytes, f.bytes_values, amount(o.op.bytes().value, "B"), o.op.bytes().value, "B"));
  s.push_back(explain_op_time(cat(path, " ", op, ": time per layer"), o.op, rf, o.time));
}

// "(a + b) · 61" over a path's op rows, grouped by the layers that run them: FLOPs, bytes or time.
template <class Part>
std::string over_layers(const PathResult& p, Part&& part) {
  std::string out, terms;
  std::int64_t layers = -1;
  std::size_t n = 0;
  auto close = [&] {
    if (layers < 0) return;
    out = cat(out, out.empty() ? "" : " + ", n > 1 ? cat("(", terms, ")") : terms, " · ", layers);
  };
  for (const OpRow& o : p.ops) {
    if (o.layers != layers) {
      close();
      layers = o.layers, terms.clear(), n = 0;
    }
    terms = cat(terms, terms.empty() ? "" : " + ", part(o));
    ++n;
  }
  close();
  return out;
}

std::string path_label(const PathResult& p) {
  return p.kind == PathKind::chunked ? cat("chunked (C = ", num(p.chunk), ")") : std::string(to_string(p.kind));
}

}  // namespace

ExplainStep explain_op_time(const std::string& quantity, const Op& op, const Roofline& rf, const OpTime& t) {
  // As op_time: the op as the engine launches it (as_launched: DeepGEMM; MMHA without XQA; its XQA generation).
  if (const std::optional<Op> launched = as_launched(op, rf)) return explain_op_time(quantity, *launched, rf, t);
  const bool fp8 = runs_at_fp8_peak(op, rf);
  const FlopsPerSecond peak = fp8 ? rf.peak_fp8 : rf.peak;
  if (t.calibrated) {
    // The family's calibrated time (efficiency.hpp), every term substituted.
    const KernelFamily fam = *rf.fit_family(family_of(op));
    const KernelEfficiency& k = *rf.kernels[static_cast<std::size_t>(fam)];
    // The same choices calibrated_time makes: the launch without split-K for a block-scaled fp8 GEMM,
    // the unsplit launch where the family's kernel does not split keys, the fp8 efficiency for fp8
    // kernels where the family has one.
    const Tiling tl = launch_tiling(op, takes_fp8_efficiency(op, rf), rf.sms);
    const bool unsplit = runs_unsplit(k, tl);
    const bool at_fp8 = fp8 || rf.fp8_compute;
    const double eta_c = eta_compute_for(k, takes_fp8_efficiency(op, rf), op.fp8_per_tensor, op.deepgemm);
    const ComputeEta eta_kind = compute_eta_kind(k, takes_fp8_efficiency(op, rf), op.fp8_per_tensor, op.deepgemm);
    const LaunchShape launch = launch_shape(tl, rf.sms);
    const std::optional<LatentPartition> part = latent_partition(tl, rf.sms, k.split_kv);
    // The counts the fixed term was paid for, as calibrated_time counted them.
    const CalibratedTime counted = calibrated_time(op, k, peak, rf.bandwidth, rf.sms, rf.sm_clock_hz, takes_fp8_efficiency(op, rf), Bytes{0});
    const bool cuda_cores = computes_on_cuda_cores(k, launch.mmha, rf.sms, rf.sm_clock_hz);
    const double sequences = counted.sequences;
    std::string partition;  // how the sequences a latent split launch pays t_seq for were counted
    if (part) {
      const LatentPartition& lp = *part;
      partition = lp.parts > 0 ? cat(", t_seq per sequence the fullest of FlashMLA's ", num(lp.parts), " SM parts starts (a payload of ", num(lp.payload),
                                     " blocks: 64 keys each, ", num(kLatentOverheadBlocks), " of overhead per sequence counted)")
                               : cat(", t_seq per ", unsplit ? cat("block (fmha_v2's: ", num(tl.unsplit_slices), " per sequence and 64-row query tile)") : std::string("sequence and 64-row query tile"),
                                     " the busiest SM starts: ⌈", num(lp.ctas), " / ", num(rf.sms), "⌉",
                                     k.split_kv ? " (more query tiles than SMs: no FlashMLA part, each sequence's tiles CTAs of their own)" : " (a kernel that does not split keys)");
    }
    const LaunchCosts costs = launch_costs(k, op.fp8_cache, launch.mmha);
    const double ctas = unsplit ? tl.unsplit_ctas : launch.ctas, w = counted.waves, wm = counted.memory_waves;
    const double flops = counted.flops;
    const double bytes = counted.bytes;
    // The compute and memory terms, each with its longest-CTA bound where it has one: their max, or
    // (serial_memory) the max of each, added.
    // The unsplit launch's w counts the blocks one SM runs at once (resident_wave_efficiency).
    const bool resident = unsplit && k.shares_sms();
    std::vector<std::string> cf{cat("F", unsplit ? " (padded tiles, Q·Kᵀ once per block's value columns)" : tl.padded_flops > 0 ? " (padded tiles)" : "", " / (",
                                    at_fp8 ? "peak_fp8" : "peak", " · η_c · w",
                                    resident ? cat(" at ", plain(k.resident_ctas), " blocks an SM, one alone at ", plain(k.solo_share), " of it") : "", ")")};
    std::vector<std::string> cv{cat(num(flops), " / (", si(peak.value, "FLOP/s"), " · ", plain(eta_c), " · ", plain(w), ")")};
    const bool partials = !unsplit && bytes > op.bytes().value;
    std::vector<std::string> mf{cat("B", unsplit ? " (every head tile's cache read, no split-KV)" : partials ? " (with the splits' partial outputs, written and read back)" : "",
                                    " / (bandwidth · ", streams_at_mmha_fraction(k, launch.mmha) ? "η_m,mmha" : "η_m", " · w_m)")};
    std::vector<std::string> mv{cat(num(bytes), " / (", si(rf.bandwidth.value, "B/s"), " · ", plain(eta_memory_for(k, launch.mmha)), " · ", plain(wm), ")")};
    if (cuda_cores) {
      // MMHA on CUDA cores: the FLOPs at the family's rate per SM cycle, unpadded, no longest-CTA bound.
      cf = {"F / (SMs · clock · r_mmha · w)"};
      cv = {cat(num(counted.flops), " / (", num(rf.sms), " · ", num(rf.sm_clock_hz / 1e6), " MHz · ", plain(*k.mmha_flops_per_sm_cycle), " FLOP/cycle · ", plain(w), ")")};
    } else if (const double longest = longest_cta_flops(tl, launch); longest > 0 && rf.sms > 0) {
      cf.push_back(cat("F_cta", longest < tl.longest_cta_flops ? " (its share of the split keys)" : "", " / (", at_fp8 ? "peak_fp8" : "peak", " / SMs · η_c)"));
      cv.push_back(cat(num(longest), " / (", si(peak.value, "FLOP/s"), " / ", num(rf.sms), " · ", plain(eta_c), ")"));
    }
    if (!cuda_cores && counted.k_step_time.value > 0) {
      cf.push_back("⌈K / 128⌉ · t_k · 1 GHz / clock (a block-scaled fp8 GEMM's reduction steps in one CTA, never split over CTAs)");
      cv.push_back(cat(num(counted.k_steps), " · ", secs(k.k_step.value), " · 1 GHz / ", num(rf.sm_clock_hz / 1e6), " MHz"));
    }
    if (unsplit && rf.sms > 0) {
      mf.push_back("B_cta / (min(1, reach / SMs) · bandwidth · η_m)");
      mv.push_back(cat(num(tl.unsplit_longest_bytes), " / (min(1, ", plain(k.memory_reach), " / ", num(rf.sms), ") · ", si(rf.bandwidth.value, "B/s"), " · ",
                       plain(k.eta_memory), ")"));
    }
    // max(the terms), or the one term alone.
    auto bound = [](const std::vector<std::string>& terms) {
      std::string s;
      for (const std::string& x : terms) s = cat(s, s.empty() ? "" : ", ", x);
      return terms.size() > 1 ? cat("max(", s, ")") : s;
    };
    // (cta_overlap) the CTAs' cost is SM time, added to the compute term inside the max.
    const bool per_cta = k.per_cta.value > 0, cta_inside = per_cta && k.cta_overlap;
    if (cta_inside) {
      cf = {cat(bound(cf), " + launches · ⌈CTAs / SMs⌉ · t_cta")};
      cv = {cat(bound(cv), " + ", num(counted.launches), " · ", num(counted.cta_waves), " · ", secs(k.per_cta.value))};
    }
    auto both = [](std::vector<std::string> a, const std::vector<std::string>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    std::string terms_f = k.serial_memory ? cat(bound(cf), " + ", bound(mf)) : bound(both(cf, mf));
    std::string terms_v = k.serial_memory ? cat(bound(cv), " + ", bound(mv)) : bound(both(cv, mv));
    // (sequences_overlap) the blocks' cost a term of the max: max(that, launches · sequences · t_seq).
    const bool overlap = k.sequences_overlap;
    // A GQA decode block's cost: one SM's time at 1 GHz, over the GPU's SMs and clock (block_cost_scale).
    const double t_seq = costs.per_sequence.value * counted.sequence_scale;
    const std::string rows_text = counted.rows_scale > 1 ? cat(" · ", num(tl.decode_block_rows), " / ", plain(costs.block_rows),
                                                       " (its block's query rows over the rows a block's cost covers)")
                                                 : std::string();
    const std::string block_scale = tl.decode_kernel ? cat(", t_seq = ", secs(costs.per_sequence.value), " · 1 GHz / (", num(rf.sms), " SMs · ",
                                                           num(rf.sm_clock_hz / 1e6), " MHz)", rows_text, ", one SM's time per block at 1 GHz over the GPU's SMs")
                                                     : std::string();
    // A family whose fixed cost is SM time: one SM's time at 1 GHz, over the GPU's clock (fixed_cost_scale).
    const double t_fixed = costs.fixed.value * counted.fixed_scale;
    const std::string fixed_scale = k.fixed_at_sm_clock ? cat(", t_fixed = ", secs(costs.fixed.value), " · 1 GHz / ", num(rf.sm_clock_hz / 1e6),
                                                              " MHz, the kernel's start and tail in SM time at 1 GHz")
                                                        : std::string();
    if (overlap) {
      terms_f = cat("max(", terms_f, ", launches · sequences · t_seq)");
      terms_v = cat("max(", terms_v, ", ", num(counted.launches), " · ", num(sequences), " · ", secs(t_seq), ")");
    }
    const bool cta_fixed = per_cta && !cta_inside;
    const Seconds compute = t.compute + t.ctas;
    return real_step(quantity,
                     cat("launches · (t_fixed", overlap ? "" : " + sequences · t_seq", cta_fixed ? " + ⌈CTAs / SMs⌉ · t_cta" : "", ") + ", terms_f,
                         k.serial_memory ? " (the memory pass apart from the compute kernel)" : "",
                         overlap ? " (the blocks' cost overlapping the streaming)" : "",
                         resident ? ", w = CTAs / (SMs · ((waves − 1) · resident + max(1 / solo, ⌈c / SMs⌉))) over waves of resident · SMs blocks, c the last wave's"
                                  : ", w = CTAs / (⌈CTAs / SMs⌉ · SMs)",
                         ", w_m = CTAs / (⌊CTAs / SMs⌋ · SMs + max(r, SMs / reach)) (1 for whole waves); ", to_string(fam),
                         " family", cuda_cores                         ? ""
                         : eta_kind == ComputeEta::fp8_tensor ? ", per-tensor fp8 η_c"
                         : eta_kind == ComputeEta::deepgemm   ? ", DeepGEMM's fp8 η_c"
                         : eta_kind == ComputeEta::fp8        ? ", fp8 η_c"
                                                              : "", costs.fp8_cache ? (rf.decode_pair == DecodeCostPair::every_launch && tl.decode_kernel ? ", TRTLLM-GEN's t_fixed and t_seq (the family's second pair)" : ", its fp8-cache kernel's t_fixed and t_seq") : "",
                         launch.mmha         ? cat(", MMHA (", tl.tllm_gen  ? cat("a head group above ", num(kTllmGenMaxGroup), ", past what sm100's dispatcher gives TRTLLM-GEN")
                                                           : rf.decode.xqa ? "no XQA kernel for this head group, or too few blocks"
                                                                           : "the engine has no XQA",
                                                   "): t_seq", costs.mmha ? " (MMHA's own)" : "",
                                                   " per block, one per query head and sequence", overlap ? " and each split of its keys, beyond the first wave, in whole waves" : "",
                                                   cuda_cores ? ", its FLOPs on CUDA cores at r_mmha FLOPs per SM cycle" : "")
                         : tl.decode_kernel ? cat(tl.tllm_gen ? ", TRTLLM-GEN (sm100's dispatch, any head group up to " + num(kTllmGenMaxGroup) + ", on XQA's grid)" : ", XQA",
                                                  overlap ? ": t_seq per block of its launch (one per KV head and sequence and each split of its keys) beyond its first wave, in whole waves: (⌈CTAs / SMs⌉ − 1) · SMs"
                                                          : ": t_seq per block, one per KV head and sequence")
                                            : partition,
                         block_scale, fixed_scale),
                     cat(num(counted.launches), " · (", secs(t_fixed), overlap ? std::string() : cat(" + ", num(sequences), " · ", secs(t_seq)),
                         cta_fixed ? cat(" + ", num(counted.cta_waves), " · ", secs(k.per_cta.value)) : std::string(), ") + ", terms_v, "; w = ",
                         resident ? cat(plain(w), " (", num(ctas), " blocks on ", num(rf.sms), " SMs, ", plain(k.resident_ctas), " at once each)")
                                  : cat(num(ctas), " / (⌈", num(ctas), " / ", num(rf.sms), "⌉ · ", num(rf.sms), ")"),
                         ", w_m = ", plain(wm), " (reach ", plain(k.memory_reach), ")"),
                     cat(secs(t.time.value), " = ", secs(t.fixed.value), " + ",
                         overlap ? cat("max(", t.serial ? cat(secs(compute.value), " + ", secs(t.memory.value)) : secs(std::max(compute, t.memory).value), ", ",
                                       secs(t.blocks.value), ")")
                         : t.serial ? cat(secs(compute.value), " + ", secs(t.memory.value))
                                    : secs(std::max(compute, t.memory).value),
                         t.compute_bound ? " (compute-bound)" : " (memory-bound)"),
                     t.time.value, "s");
  }
  return real_step(quantity, cat("max(F / (", fp8 ? "peak_fp8" : "peak", " · η_c), B / (bandwidth · η_m)) + launch"),
                   cat("max(", num(op.flops.value), " / (", si(peak.value, "FLOP/s"), " · ", plain(rf.eta_compute), ") = ", secs(t.compute.value), ", ",
                       num(op.bytes().value), " / (", si(rf.bandwidth.value, "B/s"), " · ", plain(rf.eta_memory), ") = ", secs(t.memory.value), ") + ",
                       secs(rf.launch.value)),
                   cat(secs(t.time.value), t.compute_bound ? " (compute-bound)" : " (memory-bound)"), t.time.value, "s");
}

std::vector<ExplainStep> explain_cost(const ModelSpec& m, const Workload& w, const Roofline& rf, const CostStudy& st) {
  std::vector<ExplainStep> s;
  const bool several = w.groups.size() > 1;
  for (const SequenceGroup& g : w.groups) {
    const double b = sequences_per_rank(g, w.par);
    s.push_back(real_step(cat("sequences on one rank", several ? cat(", group ", group_name(g)) : ""), "⌈batch / DP⌉", cat("⌈", g.count, " / ", w.par.dp, "⌉"),
                          num(b), b, "sequences"));
  }
  Symbols y;
  y.t = batch_totals(w);
  std::optional<MlaGeometry> geometry;
  const std::int64_t tp = w.par.tp;
  auto given = [&s](const char* quantity, const char* key, double v, const char* unit) { s.push_back(real_step(quantity, key, num(v), num(v), v, unit)); };
  if (m.is_mla()) {
    geometry = mla_geometry(m, w);
    const MlaGeometry& g = *geometry;
    y.g = &g;
    s.push_back(real_step("query heads on one rank h_t", "num_attention_heads / TP", cat(m.heads, " / ", tp), num(g.heads), g.heads, "heads"));
    given("latent rank r", "kv_lora_rank", g.r, "values");
    given("RoPE key width d_r", "qk_rope_head_dim", g.d_r, "values");
    given("no-RoPE key width d_n", "qk_nope_head_dim", g.d_n, "values");
    given("value width d_v", "v_head_dim", g.d_v, "values");
    if (w.projections) {
      given("hidden size", "hidden_size", g.hidden, "values");
      if (g.r_q > 0) given("query latent rank r_q", "q_lora_rank", g.r_q, "values");
    }
    s.push_back(real_step("activation bytes per element b_a", "the compute dtype's width", std::string(to_string(w.compute)), num(g.act_bytes), g.act_bytes, "B"));
    s.push_back(real_step("weight bytes per element b_w", "the weight dtype's width, block scales amortised over the block", std::string(to_string(w.weights)),
                          num(g.weight_bytes), g.weight_bytes, "B"));
    s.push_back(real_step("W_UK/W_UV bytes per element b_f", "the folds' weight dtype (an engine's own copies, else b_w)",
                          std::string(to_string(w.fold_weights.value_or(w.weights))), num(g.fold_weight_bytes), g.fold_weight_bytes, "B"));
    s.push_back(real_step("cache bytes per token per layer c", "the latent row in its cache layout (kv --explain derives it)", std::string(to_string(w.kv)),
                          num(g.cache_bytes_per_token), g.cache_bytes_per_token, "B"));
    const KvBytes row = mla_kv_bytes_per_token_per_layer(*m.mla, w.kv);
    if (w.kv == KvDtype::fp8_flashmla)
      s.push_back(real_step("of which the RoPE key c_r", "d_r · 2 B (bf16 in FlashMLA's fp8 layout)", cat(num(g.d_r), " · 2"), num(g.rope_cache_bytes_per_token),
                            g.rope_cache_bytes_per_token, "B"));
    else
      s.push_back(real_step("of which the RoPE key c_r", "the row's data bytes · d_r / (r + d_r) (scales stay with the latent)",
                            cat(grouped(row.data.value), " · ", num(g.d_r), " / (", num(g.r), " + ", num(g.d_r), ")"), num(g.rope_cache_bytes_per_token),
                            g.rope_cache_bytes_per_token, "B"));
    if (m.indexer) {
      given("indexer heads n_i", "index_n_heads", g.index_heads, "heads");
      given("indexer head width d_i", "index_head_dim", g.index_dim, "values");
      given("indexer keys per query top_k", "index_topk", g.index_topk, "tokens");
      s.push_back(real_step("indexer cache bytes per token per layer c_ix", "index_head_dim · 1 B + ⌈index_head_dim / 128⌉ · 4 B",
                            cat(num(g.index_dim), " · 1 + ", ceil_div(m.indexer->head_dim, 128), " · 4"),
                            num(g.indexer_bytes_per_token), g.indexer_bytes_per_token, "B"));
    }
  } else {
    y.heads = static_cast<double>(m.heads) / static_cast<double>(tp);
    y.kv_heads = static_cast<double>(kv_heads_per_rank(m, tp));
    y.head_dim = static_cast<double>(m.head_dim);
    y.hidden = static_cast<double>(m.hidden);
    y.act = bytes_per_element(w.compute);
    y.weight = weight_bytes_per_element(m, w.weights);
    y.cache = static_cast<double>(kv_bytes_per_token_per_layer(m, w.kv, tp).total().value);
    s.push_back(real_step("query heads on one rank h_t", "num_attention_heads / TP", cat(m.heads, " / ", tp), num(y.heads), y.heads, "heads"));
    s.push_back(real_step("KV heads on one rank kv_t", "max(1, num_key_value_heads / TP)", cat("max(1, ", m.kv_heads, " / ", tp, ")"), num(y.kv_heads),
                          y.kv_heads, "heads"));
    given("head width d", "head_dim", y.head_dim, "values");
    if (w.projections) given("hidden size", "hidden_size", y.hidden, "values");
    s.push_back(real_step("activation bytes per element b_a", "the compute dtype's width", std::string(to_string(w.compute)), num(y.act), y.act, "B"));
    if (w.projections)
      s.push_back(real_step("weight bytes per element b_w", "the weight dtype's width", std::string(to_string(w.weights)), num(y.weight), y.weight, "B"));
    const bool plain_width = w.kv == KvDtype::fp32 || w.kv == KvDtype::bf16 || w.kv == KvDtype::fp16 || w.kv == KvDtype::fp8;
    s.push_back(real_step("cache bytes per token per layer on one rank c", "2 (K, V) · kv_t · d · the cache dtype's width (kv --explain derives it)",
                          plain_width ? cat("2 · ", num(y.kv_heads), " · ", num(y.head_dim), " · ", (w.kv == KvDtype::fp32 ? 4 : w.kv == KvDtype::fp8 ? 1 : 2))
                                      : std::string(to_string(w.kv)),
                          num(y.cache), y.cache, "B"));
  }
  for (const SequenceGroup& g : w.groups) {
    const double pairs = attention_pairs(g.query, g.prefix, w.causal);
    s.push_back(real_step(cat("attention pairs per sequence", several ? cat(", group ", group_name(g)) : ""), pairs_formula(w.causal),
                          pairs_values(g.query, g.prefix, w.causal), num(pairs), pairs, "pairs"));
  }
  s.push_back(real_step("new tokens on one rank T", "Σ sequences · Q", group_sum(w, [](const SequenceGroup& g) { return num(g.query); }), num(y.t.new_tokens),
                        y.t.new_tokens, "tokens"));
  s.push_back(real_step("keys on one rank K", "Σ sequences · (P + Q)", group_sum(w, [](const SequenceGroup& g) { return cat("(", num(g.prefix), " + ", num(g.query), ")"); }),
                        num(y.t.keys), y.t.keys, "tokens"));
  s.push_back(real_step("attention pairs on one rank", "Σ sequences · pairs per sequence",
                        group_sum(w, [&w](const SequenceGroup& g) { return num(attention_pairs(g.query, g.prefix, w.causal)); }), num(y.t.pairs), y.t.pairs,
                        "pairs"));
  if (geometry) {
    const MlaGeometry& g = *geometry;
    const double u = expand_flops_per_token(g).value, pe = expand_flops_per_pair(g).value, pa = absorb_flops_per_pair(g).value;
    s.push_back(real_step("expand FLOPs per cached token", "2 · r · h_t · (d_n + d_v)", cat("2 · ", num(g.r), " · ", num(g.heads), " · (", num(g.d_n), " + ", num(g.d_v), ")"),
                          amount(u, "FLOP"), u, "FLOP"));
    s.push_back(real_step("expanded FLOPs per pair", "2 · h_t · (d_n + d_r + d_v)",
                          cat("2 · ", num(g.heads), " · (", num(g.d_n), " + ", num(g.d_r), " + ", num(g.d_v), ")"), amount(pe, "FLOP"), pe, "FLOP"));
    s.push_back(real_step("absorbed FLOPs per pair", "2 · h_t · (2r + d_r)", cat("2 · ", num(g.heads), " · (2 · ", num(g.r), " + ", num(g.d_r), ")"),
                          amount(pa, "FLOP"), pa, "FLOP"));
  }

  for (const PathResult& p : st.paths) {
    const std::string label = path_label(p);
    if (p.kind == PathKind::split) {
      s.push_back(ExplainStep{"split: batch division", "the groups absorbed and expanded (the best division by query length)", p.detail, "split", 0, "", {}});
    } else if (p.kind == PathKind::standard) {
      // The plans of model_plans: full attention first, then the windows from the narrowest.
      std::vector<LayerGroup> groups = layer_groups(m);
      std::stable_sort(groups.begin(), groups.end(), [](const LayerGroup& a, const LayerGroup& b) {
        return std::pair{a.kind.sliding, a.kind.window} < std::pair{b.kind.sliding, b.kind.window};
      });
      std::size_t at = 0;
      for (const LayerGroup& lg : groups) {
        const std::int64_t window = lg.kind.sliding ? lg.kind.window : 0;
        y.pairs = 0, y.keys = 0;
        for (const SequenceGroup& sg : w.groups) {
          const double b = sequences_per_rank(sg, w.par), cap = window > 0 ? static_cast<double>(window) : sg.prefix + sg.query;
          y.pairs += b * capped_pairs(sg.query, sg.prefix, cap, w.causal);
          y.keys += b * std::min(cap, sg.prefix + sg.query);
        }
        if (window > 0) {
          s.push_back(real_step(cat("pairs on one rank, window ", window), "Σ sequences · pairs with at most window keys per query",
                                group_sum(w, [&](const SequenceGroup& sg) { return num(capped_pairs(sg.query, sg.prefix, static_cast<double>(window), w.causal)); }),
                                num(y.pairs), y.pairs, "pairs"));
          s.push_back(real_step(cat("keys read on one rank, window ", window), "Σ sequences · min(window, P + Q)",
                                group_sum(w, [&](const SequenceGroup& sg) { return cat("min(", window, ", ", num(sg.prefix + sg.query), ")"); }), num(y.keys), y.keys,
                                "tokens"));
        }
        const std::size_t count = standard_path(m, w, window).count;
        for (std::size_t i = 0; i < count && at < p.ops.size(); ++i, ++at) add_op_steps(s, label, p.ops[at], standard_op_formula(p.ops[at].op.id, y), rf);
      }
    } else {
      const MlaGeometry& g = *geometry;
      y.pairs = y.t.pairs, y.keys = y.t.keys;
      y.splits = static_cast<double>(std::max<std::int64_t>(1, w.kv_splits));
      y.chunks = 1;
      bool beyond = false;
      for (const SequenceGroup& sg : w.groups) beyond = beyond || sg.prefix + sg.query > g.index_topk;
      y.two_indexer_gemms = p.kind == PathKind::sparse || beyond;
      if (p.kind == PathKind::chunked) {
        const double chunk = std::max(1.0, p.chunk);
        y.chunks = std::max(1.0, std::ceil(y.t.keys / chunk));
        s.push_back(real_step(cat(label, ": chunks"), "max(1, ⌈K / C⌉)", cat("⌈", num(y.t.keys), " / ", num(chunk), "⌉"), num(y.chunks), y.chunks, "chunks"));
      }
      if (p.kind == PathKind::sparse) {
        double pairs = 0, retrieved = 0;
        for (const SequenceGroup& sg : w.groups) {
          const double b = sequences_per_rank(sg, w.par);
          pairs += b * capped_pairs(sg.query, sg.prefix, g.index_topk, w.causal);
          retrieved += b * std::min(sg.prefix + sg.query, sg.query * g.index_topk);
        }
        s.push_back(real_step("sparse: pairs on one rank", "Σ sequences · pairs with at most top_k keys per query",
                              group_sum(w, [&](const SequenceGroup& sg) { return num(capped_pairs(sg.query, sg.prefix, g.index_topk, w.causal)); }), num(pairs),
                              pairs, "pairs"));
        s.push_back(real_step("sparse: cache rows read on one rank", "Σ sequences · min(P + Q, Q · top_k)",
                              group_sum(w, [&](const SequenceGroup& sg) { return cat("min(", num(sg.prefix + sg.query), ", ", num(sg.query), " · ", num(g.index_topk), ")"); }),
                              num(retrieved), retrieved, "tokens"));
        y.pairs = pairs, y.keys = retrieved;
      }
      for (const OpRow& o : p.ops) {
        Symbols z = y;
        if (p.kind == PathKind::sparse && o.op.id != OpId::sparse_latent_attention) z.pairs = y.t.pairs, z.keys = y.t.keys;
        if (o.op.id == OpId::sparse_latent_attention) z.splits = 1;  // the sparse kernel does not split the cache
        add_op_steps(s, label, o, mla_op_formula(o.op.id, z), rf);
      }
    }
    const PathCost& c = p.cost;
    s.push_back(real_step(cat(label, ": FLOPs, all layers"), "Σ ops' FLOPs per layer · layers", over_layers(p, [](const OpRow& o) { return num(o.op.flops.value); }),
                          amount(c.flops.value, "FLOP"), c.flops.value, "FLOP"));
    s.push_back(real_step(cat(label, ": bytes, all layers"), "Σ ops' bytes per layer · layers", over_layers(p, [](const OpRow& o) { return num(o.op.bytes().value); }),
                          amount(c.bytes.value, "B"), c.bytes.value, "B"));
    s.push_back(real_step(cat(label, ": time, all layers"), "Σ ops' times per layer · layers", over_layers(p, [](const OpRow& o) { return secs(o.time.time.value); }),
                          secs(c.time.value), c.time.value, "s"));
    if (st.workspace_budget && !p.feasible.ok())
      s.push_back(ExplainStep{cat(label, ": fits the workspace budget"), "largest op workspace ≤ the memory left for it",
                              cat(amount(c.workspace_bytes.value, "B"), " ≤ ", amount(static_cast<double>(st.workspace_budget->value), "B")),
                              cat("no: ", p.feasible.reason), 0, "", {}});
  }

  if (st.cheaper_by_time) {
    std::string times;
    double fastest = INFINITY;
    for (const PathResult& p : st.paths)
      if (p.feasible.ok()) {
        times = cat(times, times.empty() ? "" : ", ", path_label(p), " ", secs(p.cost.time.value));
        if (p.kind == *st.cheaper_by_time) fastest = std::min(fastest, p.cost.time.value);
      }
    s.push_back(ExplainStep{"cheaper by roofline time", "the fastest feasible of absorb, expand, split, sparse (chunked in expand's place when expand does not fit)",
                            times, std::string(to_string(*st.cheaper_by_time)), 0, "", {}});
    s.push_back(real_step("time of the slowest / the fastest", "max time / min time over the competing paths", "", plain(st.time_ratio), st.time_ratio, ""));
    for (const EngineChoice& e : st.engines) {
      const PathResult& p = e.path;
      s.push_back(real_step(cat(e.name, ": path and time"), cat("its rule over the batch (", e.engine, "), with its own fold dtype and chunk"),
                            p.detail.empty() ? std::string(to_string(p.kind)) : p.detail, cat(to_string(p.kind), ", ", secs(p.cost.time.value)), p.cost.time.value,
                            "s"));
      s.push_back(real_step(cat(e.name, ": penalty"), "its time / the fastest feasible path's − 1",
                            p.feasible.ok() ? cat(secs(p.cost.time.value), " / ", secs(fastest), " − 1") : cat("does not fit: ", p.feasible.reason),
                            p.feasible.ok() ? cat(plain(e.penalty * 100), " %") : std::string("none (infeasible)"), e.penalty, ""));
    }
  }
  return s;
}

std::vector<ExplainStep> explain_crossover(const ModelSpec& m, const Roofline& rf, const CrossoverSweepSpec& sp, const CrossoverStudy& st) {
  std::vector<ExplainStep> s;
  const MlaGeometry g1 = mla_geometry(m, sp.base);
  s.push_back(real_step("FLOP-only Q* as P grows", "U / Δ = r · (d_n + d_v) / (2r − d_n − d_v) (h_t cancels: the same at every TP)",
                        cat(num(g1.r), " · (", num(g1.d_n), " + ", num(g1.d_v), ") / (2 · ", num(g1.r), " − ", num(g1.d_n), " − ", num(g1.d_v), ")"),
                        cat(plain(st.asymptotic_flop_crossover_query), " tokens"), st.asymptotic_flop_crossover_query, "tokens"));
  std::int64_t last_tp = -1;
  for (const CrossoverRow& r : st.rows) {
    Workload w = sp.base;
    w.par.tp = r.tp;
    w.kv = r.kv;
    const MlaGeometry g = mla_geometry(m, w);
    const double u = expand_flops_per_token(g).value, delta = (absorb_flops_per_pair(g) - expand_flops_per_pair(g)).value;
    const std::string at = cat("TP ", r.tp, ", ", to_string(r.kv), ", P ", num(r.prefix));
    if (r.tp != last_tp) {
      last_tp = r.tp;
      s.push_back(real_step(cat("TP ", r.tp, ": expand FLOPs per cached token U"), "2 · r · h_t · (d_n + d_v)",
                            cat("2 · ", num(g.r), " · ", num(g.heads), " · (", num(g.d_n), " + ", num(g.d_v), ")"), amount(u, "FLOP"), u, "FLOP"));
      s.push_back(real_step(cat("TP ", r.tp, ": extra FLOPs of an absorbed pair Δ"), "2 · h_t · (2r + d_r) − 2 · h_t · (d_n + d_r + d_v)",
                            cat("2 · ", num(g.heads), " · (2 · ", num(g.r), " + ", num(g.d_r), ") − 2 · ", num(g.heads), " · (", num(g.d_n), " + ", num(g.d_r), " + ",
                                num(g.d_v), ")"),
                            amount(delta, "FLOP"), delta, "FLOP"));
    }
    // FLOP-only: F_expand − F_absorb = U·P − pairs(Q)·Δ = 0.
    const double c = u * r.prefix / delta;
    if (w.causal) {
      const double b = r.prefix + 0.5;
      s.push_back(real_step(cat(at, ": FLOP-only Q*"), "U · P = Δ · (Q · P + Q · (Q + 1) / 2): ½Q² + bQ − c = 0, b = P + ½, c = U · P / Δ; Q* = 2c / (b + √(b² + 2c))",
                            cat("b = ", num(b), ", c = ", num(u), " · ", num(r.prefix), " / ", num(delta), " = ", num(c), "; Q* = 2 · ", num(c), " / (", num(b), " + √(",
                                num(b), "² + 2 · ", num(c), "))"),
                            cat(plain(r.flop_crossover_query), " tokens"), r.flop_crossover_query, "tokens"));
    } else {
      s.push_back(real_step(cat(at, ": FLOP-only Q*"), "U · P = Δ · Q · (P + Q): Q² + PQ − c = 0, c = U · P / Δ; Q* = 2c / (P + √(P² + 4c))",
                            cat("c = ", num(u), " · ", num(r.prefix), " / ", num(delta), " = ", num(c), "; Q* = 2 · ", num(c), " / (", num(r.prefix), " + √(",
                                num(r.prefix), "² + 4 · ", num(c), "))"),
                            cat(plain(r.flop_crossover_query), " tokens"), r.flop_crossover_query, "tokens"));
    }
    // Roofline: the times of both paths where the solver stopped (one layer, one rank).
    const double q = r.roofline_crossover_query;
    const std::string eq = cat("the first Q > 0 where T_expand(Q) = T_absorb(Q) for ", sp.batch,
                               " sequences, one layer on one rank (expanded side: expand, else chunked at the largest chunk whose workspace fits)");
    if (!std::isfinite(q)) {
      s.push_back(real_step(cat(at, ": roofline Q*"), eq, "T_expand(Q) > T_absorb(Q) up to Q = 1e9", "none: absorb stays faster", q, "tokens"));
      continue;
    }
    Workload wq = w;
    wq.groups.assign(1, SequenceGroup{sp.batch, q > 0 ? q : 1e-9, r.prefix});
    const PathPlan absorbed = mla_path(g, wq, PathKind::absorb);
    const std::optional<PathPlan> expanded = sp.budget ? feasible_expanded(g, wq, sp.budget(wq)) : std::optional<PathPlan>(mla_path(g, wq, PathKind::expand));
    const double ta = path_cost(absorbed, rf).time.value;
    const std::string te = expanded ? cat("T_", to_string(expanded->kind), " = ", secs(path_cost(*expanded, rf).time.value)) : std::string("no expanded plan fits");
    s.push_back(real_step(cat(at, ": roofline Q*"), eq,
                          cat(q > 0 ? cat("at Q = ", num(q)) : std::string("as Q → 0 (1e-9)"), ": T_absorb = ", secs(ta), ", ", te),
                          q > 0 ? cat(plain(q), " tokens") : std::string("0: expand no slower even for one token"), q, "tokens"));
  }
  for (const SparseCrossoverRow& x : st.sparse)
    s.push_back(ExplainStep{cat("TP ", x.tp, ", ", to_string(x.kv), ": sparse faster from"),
                            cat("the smallest prompt S (no prefix, ", sp.batch, " prompts) with T_sparse(S) < min(T_absorb(S), T_expand(S)); doubling, then bisection"),
                            "searched up to 1,048,576 tokens", x.sparse_faster_from_tokens > 0 ? cat(grouped(x.sparse_faster_from_tokens), " tokens") : "never",
                            x.sparse_faster_from_tokens, "tokens", {}});
  return s;
}

}  // namespace mlaplan
