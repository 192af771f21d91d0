#include "mlaplan/core/explain.hpp"

#include <algorithm>
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
                   layer.value});
    } else {
      const VectorFormula v = vector_formula("(kv_lora_rank + qk_rope_head_dim)", cat("(", a.kv_lora_rank, " + ", a.qk_rope_head_dim, ")"), d);
      s.push_back({"cache bytes per token per layer", v.formula, v.substituted, bytes(layer.value), layer.value});
    }
  } else {
    const VectorFormula v = vector_formula("head_dim", cat(m.head_dim), d == KvDtype::fp8_flashmla ? KvDtype::fp8 : d);
    s.push_back({"cache bytes per token per layer", cat("2 (K, V) · num_key_value_heads · ", v.formula), cat("2 · ", m.kv_heads, " · ", v.substituted),
                 bytes(layer.value), layer.value});
  }
  Bytes indexer{0};
  if (m.indexer) {
    indexer = indexer_bytes_per_token_per_layer(*m.indexer);
    s.push_back({"indexer cache bytes per token per layer", "index_head_dim · 1 B + ⌈index_head_dim / 128⌉ · 4 B (fp8 key, fp32 scale)",
                 cat(m.indexer->head_dim, " · 1 B + ", ceil_div(m.indexer->head_dim, 128), " · 4 B"), bytes(indexer.value), indexer.value});
  }
  const std::int64_t layers = m.num_layers();
  const Bytes per_token = (layer + indexer) * layers;
  s.push_back({"bytes per token, all layers", m.indexer ? "(cache + indexer) per layer · layers" : "per layer · layers",
               m.indexer ? cat("(", bytes(layer.value), " + ", bytes(indexer.value), ") · ", layers) : cat(bytes(layer.value), " · ", layers),
               bytes(per_token.value), per_token.value});
  const Bytes rank_layer = kv_bytes_per_token_per_layer(m, d, par.tp).total();
  const Bytes per_rank = kv_bytes_per_token(m, d, par.tp).total() + indexer_bytes_per_token(m);
  if (m.mla) {
    s.push_back({"bytes per token on one rank", "all layers (the latent is shared by the heads: every TP rank holds it whole)", cat("TP ", par.tp),
                 bytes(per_rank.value), per_rank.value});
  } else if (par.tp > 1) {
    const std::int64_t heads = kv_heads_per_rank(m, par.tp);
    s.push_back({"KV heads on one rank", "max(1, num_key_value_heads / TP) (replicated when TP exceeds them)", cat("max(1, ", m.kv_heads, " / ", par.tp, ")"),
                 grouped(heads), heads});
    s.push_back({"bytes per token on one rank", "2 · heads on the rank · head_dim · width · layers", cat(bytes(rank_layer.value), " · ", layers),
                 bytes(per_rank.value), per_rank.value});
  } else {
    s.push_back({"bytes per token on one rank", "all layers (TP 1)", "TP 1", bytes(per_rank.value), per_rank.value});
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
                 held});
    sequence += (layer + indexer) * held * g.layers;
    terms = cat(terms, terms.empty() ? "" : " + ", "per layer · held · layers");
    values = cat(values, values.empty() ? "" : " + ", bytes((layer + indexer).value), " · ", grouped(held), " · ", g.layers);
  }
  s.push_back({"bytes per sequence", terms, values, bytes(sequence.value), sequence.value});
  const Bytes all = sequence * sequences;
  s.push_back({"bytes for all sequences", "per sequence · sequences", cat(bytes(sequence.value), " · ", grouped(sequences)), bytes(all.value), all.value});
  const Bytes on_rank = sequence_kv_bytes(m, d, par.tp, tokens, block_size);
  const Bytes rank = on_rank * ceil_div(sequences, par.dp);
  s.push_back({"bytes on one rank", "per sequence on the rank · ⌈sequences / DP⌉", cat(bytes(on_rank.value), " · ⌈", grouped(sequences), " / ", par.dp, "⌉"),
               bytes(rank.value), rank.value});
  return s;
}

std::vector<ExplainStep> explain_capacity(const ModelSpec& m, const HardwareSpec& hw, const CapacityStudy& st, std::int64_t batched_tokens,
                                          bool reserve_given) {
  const CapacityRequest& q = st.request;
  const CapacityResult& r = st.result;
  std::vector<ExplainStep> s;
  s.push_back({"memory of one GPU", "the hardware file's memory_capacity", hw.name, bytes(r.memory_per_rank.value), r.memory_per_rank.value});
  s.push_back({"usable memory", "⌊memory · mem_util⌋", cat("⌊", bytes(r.memory_per_rank.value), " · ", q.mem_util, "⌋"), bytes(r.usable_per_rank.value),
               r.usable_per_rank.value});
  std::string terms;
  for (const WeightGroupRow& w : st.weights) {
    s.push_back({cat("weights on one rank: ", to_string(w.group)), "its tensors at their dtypes (block scales included), split by TP and EP",
                 cat(grouped(w.params.value), " parameters, ", bytes(w.bytes.value), " in all"), bytes(w.bytes_per_rank.value), w.bytes_per_rank.value});
    terms = cat(terms, terms.empty() ? "" : " + ", bytes(w.bytes_per_rank.value));
  }
  s.push_back({"weights on one rank", "the groups' sum", terms, bytes(r.weight_bytes_per_rank.value), r.weight_bytes_per_rank.value});
  if (reserve_given) {
    s.push_back({"activation reserve", "--reserve-gib", "given", bytes(r.reserve_bytes_per_rank.value), r.reserve_bytes_per_rank.value});
  } else {
    // The estimate is tokens · 2 B · (2 · hidden + widest), so the widest intermediate is exact.
    const std::int64_t widest = r.reserve_bytes_per_rank.value / (2 * std::max<std::int64_t>(1, batched_tokens)) - 2 * m.hidden;
    s.push_back({"activation reserve", "batched tokens · 2 B · (2 · hidden_size + widest per-rank intermediate: MLP gate+up, active experts or QKV)",
                 cat(grouped(batched_tokens), " · 2 B · (2 · ", grouped(m.hidden), " + ", grouped(widest), ")"), bytes(r.reserve_bytes_per_rank.value),
                 r.reserve_bytes_per_rank.value});
  }
  s.push_back({"KV pool on one rank", "usable − weights − reserve (0 when negative)",
               cat(bytes(r.usable_per_rank.value), " − ", bytes(r.weight_bytes_per_rank.value), " − ", bytes(r.reserve_bytes_per_rank.value)),
               bytes(r.kv_pool_bytes_per_rank.value), r.kv_pool_bytes_per_rank.value});
  s.push_back({"cache bytes per token on one rank", "all layers, the indexer's included (kv --explain derives it)", cat("TP ", q.par.tp),
               bytes(r.kv_bytes_per_token_per_rank.value), r.kv_bytes_per_token_per_rank.value});
  const std::int64_t block = std::max<std::int64_t>(1, q.block_size);
  if (m.has_sliding_layers()) {
    s.push_back({"tokens on one rank", "tokens in whole sequences of the context, then in the longest partial one the rest holds (windows)",
                 cat(grouped(r.sequences_per_rank), " · ", grouped(q.context), " + the partial sequence"), grouped(r.max_tokens_per_rank),
                 r.max_tokens_per_rank});
  } else {
    s.push_back({"tokens on one rank", "⌊pool / (bytes per token · block_size)⌋ · block_size",
                 cat("⌊", bytes(r.kv_pool_bytes_per_rank.value), " / (", bytes(r.kv_bytes_per_token_per_rank.value), " · ", block, ")⌋ · ", block),
                 grouped(r.max_tokens_per_rank), r.max_tokens_per_rank});
  }
  s.push_back({"bytes of one sequence on one rank", "its tokens held per layer (windows cap sliding layers), in whole pages, at the per-layer width",
               cat(grouped(q.context), " tokens"), bytes(r.sequence_bytes_per_rank.value), r.sequence_bytes_per_rank.value});
  s.push_back({"sequences on one rank", "⌊pool / bytes of one sequence⌋",
               cat("⌊", bytes(r.kv_pool_bytes_per_rank.value), " / ", bytes(r.sequence_bytes_per_rank.value), "⌋"), grouped(r.sequences_per_rank),
               r.sequences_per_rank});
  s.push_back({"sequences in the deployment", "per rank · DP (each data-parallel replica holds its own)", cat(grouped(r.sequences_per_rank), " · ", q.par.dp),
               grouped(r.max_sequences), r.max_sequences});
  return s;
}

std::vector<ExplainStep> explain_engine_capacity(const EngineCapacity& e) {
  std::vector<ExplainStep> s;
  std::int64_t sum = 0;
  for (const BudgetLine& l : e.lines) {
    s.push_back({l.label, l.source, l.key, bytes(l.bytes.value), l.bytes.value});
    sum += l.bytes.value;
  }
  s.push_back({"the lines' sum", "equals the total the framework sees", bytes(e.total_seen.value), bytes(sum), sum});
  const std::int64_t block = std::max<std::int64_t>(1, e.block_size);
  s.push_back({"blocks", "⌊KV pool / (bytes per token · block size)⌋ (the engine's own cache layout)",
               cat("⌊", bytes(e.kv_pool.value), " / (", bytes(e.kv_bytes_per_token.value), " · ", block, ")⌋"), grouped(e.blocks), e.blocks});
  s.push_back({"tokens the engine logs", "blocks · block size", cat(grouped(e.blocks), " · ", block), grouped(e.engine_kv_tokens), e.engine_kv_tokens});
  s.push_back({"maximum concurrency", "tokens / max_model_len (as vLLM logs it)", cat(grouped(e.engine_kv_tokens), " / ", grouped(e.max_model_len)),
               cat(e.engine_max_concurrency), static_cast<std::int64_t>(e.engine_max_concurrency)});
  return s;
}

}  // namespace mlaplan
