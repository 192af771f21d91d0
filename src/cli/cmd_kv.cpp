// mlaplan kv: KV-cache bytes per token per layer, per token, per rank and for N tokens.
#include <algorithm>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "common.hpp"
#include "mlaplan/core/kv.hpp"

namespace mlaplan::cli {

namespace {

struct KvFlags {
  ModelFlags model;
  LayoutFlags layout;
  std::string kv_dtype = "bf16";
  std::int64_t tokens = 0;
  bool tokens_given = false;
  std::int64_t sequences = 1;
  std::int64_t block_size = 1;
  std::string format = "table";
};

std::string layer_kind(const LayerSpec& l) {
  return l.sliding ? fmt::format("sliding window {}", l.window) : std::string("full attention");
}

// Layers grouped by kind (full, or sliding with a given window), in order of first appearance.
std::vector<std::pair<LayerSpec, std::int64_t>> layer_groups(const ModelSpec& m) {
  std::vector<std::pair<LayerSpec, std::int64_t>> groups;
  for (const LayerSpec& l : m.layers) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return g.first.sliding == l.sliding && g.first.window == l.window;
    });
    if (it == groups.end()) groups.push_back({l, 1});
    else ++it->second;
  }
  return groups;
}

Document kv_document(const KvFlags& f) {
  const ModelSpec m = f.model.load();
  const Parallelism par = f.layout.resolve(m);
  const KvDtype d = resolve_kv_dtype(f.kv_dtype, m);
  const std::int64_t tokens = f.tokens_given ? positive("--tokens", f.tokens, std::int64_t{1} << 40) : 0;
  const std::int64_t seqs = positive("--sequences", f.sequences, std::int64_t{1} << 30);
  const std::int64_t block = positive("--block-size", f.block_size, 1 << 20);

  const KvBytes layer = kv_bytes_per_token_per_layer(m, d, 1);
  const KvBytes per_token = kv_bytes_per_token(m, d, 1);
  const Bytes indexer = indexer_bytes_per_token(m);
  const bool uniform = layer_groups(m).size() == 1;

  Document doc;
  doc.title = fmt::format("KV cache of {} ({}), {} cache", m.name, to_string(m.attention), to_string(d));
  doc.fields = {
      {"model", "model", m.name, Unit::text},
      {"attention", "attention", std::string(to_string(m.attention)), Unit::text},
      {"layers", "layers", m.num_layers(), Unit::count},
      {"kv_dtype", "KV dtype", std::string(to_string(d)), Unit::text},
  };
  if (m.mla) {
    doc.fields.push_back({"cached_values_per_token_per_layer", "cached values per token per layer (r + d_r)",
                          m.mla->kv_lora_rank + m.mla->qk_rope_head_dim, Unit::count});
  } else {
    doc.fields.push_back({"kv_heads", "KV heads x head dim", fmt::format("{} x {}", m.kv_heads, m.head_dim), Unit::text});
  }
  doc.fields.push_back({"bytes_per_token_per_layer", "bytes per token per layer",
                        uniform ? Value{layer.total().value} : Value{std::monostate{}}, Unit::bytes});
  doc.fields.push_back({"scale_bytes_per_token_per_layer", "  of which quantization scales", layer.scales.value, Unit::bytes});
  doc.fields.push_back({"bytes_per_token", "bytes per token (all layers)", per_token.total().value, Unit::bytes});
  doc.fields.push_back({"indexer_bytes_per_token_per_layer", "DSA indexer bytes per token per layer",
                        m.indexer ? Value{indexer_bytes_per_token_per_layer(*m.indexer).value} : Value{std::int64_t{0}}, Unit::bytes});
  doc.fields.push_back({"indexer_bytes_per_token", "DSA indexer bytes per token", indexer.value, Unit::bytes});
  doc.fields.push_back({"cache_bytes_per_token", "cache bytes per token incl. indexer", (per_token.total() + indexer).value, Unit::bytes});
  doc.fields.push_back({"tp", "tensor parallel", par.tp, Unit::count});
  doc.fields.push_back({"dp", "data-parallel attention", par.dp, Unit::count});
  doc.fields.push_back({"bytes_per_token_per_rank", "bytes per token per rank",
                        (kv_bytes_per_token(m, d, par.tp).total() + indexer).value, Unit::bytes});
  doc.fields.push_back({"block_size", "page block (tokens)", block, Unit::count});
  if (tokens > 0) {
    const Bytes seq = sequence_kv_bytes(m, d, 1, tokens, block);
    const Bytes seq_rank = sequence_kv_bytes(m, d, par.tp, tokens, block);
    const std::int64_t seqs_per_rank = ceil_div(seqs, par.dp);
    doc.fields.push_back({"tokens", "tokens per sequence", tokens, Unit::count});
    doc.fields.push_back({"sequences", "sequences", seqs, Unit::count});
    doc.fields.push_back({"total_bytes", "total bytes (all sequences, one copy)", (seq * seqs).value, Unit::bytes});
    doc.fields.push_back({"total_bytes_per_rank", "bytes per rank", (seq_rank * seqs_per_rank).value, Unit::bytes});
  }

  Table layers{"layer_groups", "Layers by attention kind",
               {{"kind", "layer kind", Unit::text},
                {"layers", "layers", Unit::count},
                {"bytes_per_token_per_layer", "bytes/token/layer", Unit::bytes}},
               {}};
  if (tokens > 0) {
    layers.columns.push_back({"tokens_held", "tokens held", Unit::count});
    layers.columns.push_back({"bytes_per_sequence", "bytes per sequence", Unit::bytes});
  }
  const Bytes per_layer_all = layer.total() + (m.indexer ? indexer_bytes_per_token_per_layer(*m.indexer) : Bytes{0});
  for (const auto& [l, count] : layer_groups(m)) {
    std::vector<Value> row{layer_kind(l), count, per_layer_all.value};
    if (tokens > 0) {
      const std::int64_t held = round_up(tokens_held(l, tokens), block);
      row.push_back(held);
      row.push_back((per_layer_all * held * count).value);
    }
    layers.rows.push_back(std::move(row));
  }
  doc.tables.push_back(std::move(layers));

  Table dtypes{"dtypes", "Cache dtypes compared",
               {{"kv_dtype", "KV dtype", Unit::text},
                {"data_bytes_per_token_per_layer", "data/token/layer", Unit::bytes},
                {"scale_bytes_per_token_per_layer", "scales/token/layer", Unit::bytes},
                {"bytes_per_token", "bytes/token", Unit::bytes},
                {"ratio_to_bf16", "vs bf16", Unit::ratio}},
               {}};
  const double bf16 = static_cast<double>(kv_bytes_per_token(m, KvDtype::bf16).total().value);
  for (KvDtype k : all_kv_dtypes()) {
    if (k == KvDtype::fp8_flashmla && !m.is_mla()) continue;
    const KvBytes b = kv_bytes_per_token_per_layer(m, k, 1);
    const Bytes all = kv_bytes_per_token(m, k, 1).total();
    dtypes.rows.push_back({std::string(to_string(k)), b.data.value, b.scales.value, all.value,
                           static_cast<double>(all.value) / bf16});
  }
  doc.tables.push_back(std::move(dtypes));

  if (m.mla) {
    const MlaDims& a = *m.mla;
    const Bytes mha = mha_equivalent_bytes_per_token_per_layer(m, d);
    const double groups = gqa_equivalent_groups(a);
    Table eq{"equivalents", "What the latent replaces (per-head caches of the same model)",
             {{"cache", "cache", Unit::text},
              {"bytes_per_token_per_layer", "bytes/token/layer", Unit::bytes},
              {"bytes_per_token", "bytes/token", Unit::bytes},
              {"ratio_to_latent", "vs latent", Unit::ratio}},
             {}};
    const double lat = static_cast<double>(layer.total().value);
    eq.rows.push_back({fmt::format("MLA latent: r + d_r = {} + {}", a.kv_lora_rank, a.qk_rope_head_dim), layer.total().value,
                       per_token.total().value, 1.0});
    eq.rows.push_back({fmt::format("MHA equivalent: {} heads x (d_n + d_r + d_v = {} + {} + {})", m.heads, a.qk_nope_head_dim,
                                   a.qk_rope_head_dim, a.v_head_dim),
                       mha.value, (mha * m.num_layers()).value, static_cast<double>(mha.value) / lat});
    const Bytes per_head_kv = gqa_kv_bytes_per_token_per_layer(1, a.qk_nope_head_dim, d).total();
    eq.rows.push_back({fmt::format("GQA with the same cache: {:.2f} KV groups of width {}", groups, a.qk_nope_head_dim),
                       layer.total().value, per_token.total().value, 1.0});
    eq.rows.push_back({fmt::format("GQA-8, width {}", a.qk_nope_head_dim), (per_head_kv * 8).value,
                       (per_head_kv * 8 * m.num_layers()).value, static_cast<double>((per_head_kv * 8).value) / lat});
    doc.tables.push_back(std::move(eq));
    doc.fields.push_back({"mha_equivalent_bytes_per_token_per_layer", "MHA equivalent bytes per token per layer", mha.value, Unit::bytes});
    doc.fields.push_back({"mha_equivalent_ratio", "MHA equivalent / latent", static_cast<double>(mha.value) / lat, Unit::ratio});
    doc.fields.push_back({"gqa_equivalent_groups", "GQA groups with the same cache", groups, Unit::none});
  }

  // The same number of ranks laid out as all-TP and as all-DP attention.
  const std::int64_t ranks = par.ranks();
  Table layouts{"layouts", fmt::format("Per-rank cache on {} ranks: TP replication vs data-parallel attention", ranks),
                {{"layout", "layout", Unit::text},
                 {"tp", "TP", Unit::count},
                 {"dp", "DP", Unit::count},
                 {"bytes_per_token_per_rank", "bytes/token/rank", Unit::bytes}},
                {}};
  if (tokens > 0) layouts.columns.push_back({"bytes_per_rank", "bytes per rank", Unit::bytes});
  std::vector<Parallelism> options{par};
  if (par.tp != ranks && m.heads % ranks == 0) options.push_back({ranks, 1, 1});
  if (par.dp != ranks) options.push_back({1, ranks, 1});
  for (const Parallelism& p : options) {
    std::vector<Value> row{p.tp == par.tp && p.dp == par.dp ? std::string("requested") : p.dp == 1 ? std::string("all TP") : std::string("all DP"),
                           p.tp, p.dp, (kv_bytes_per_token(m, d, p.tp).total() + indexer).value};
    if (tokens > 0) row.push_back((sequence_kv_bytes(m, d, p.tp, tokens, block) * ceil_div(seqs, p.dp)).value);
    layouts.rows.push_back(std::move(row));
  }
  doc.tables.push_back(std::move(layouts));

  doc.notes = m.notes;
  if (m.mla) doc.notes.push_back("Under TP the MLA latent is replicated on every rank: per-rank bytes do not fall with TP; data-parallel attention divides the sequences instead.");
  else doc.notes.push_back("Under TP, KV heads are split across ranks and replicated when there are fewer KV heads than ranks.");
  if (m.indexer) doc.notes.push_back("The DSA indexer cache is fp8 keys with one fp32 scale per 128 values, whatever the main cache dtype.");
  return doc;
}

}  // namespace

void register_kv_command(CLI::App& app) {
  auto f = std::make_shared<KvFlags>();
  CLI::App* kv = app.add_subcommand("kv", "KV-cache bytes per token, per layer, per rank and for N tokens");
  add_model_flags(kv, f->model);
  add_layout_flags(kv, f->layout, false);
  kv->add_option("--kv-dtype", f->kv_dtype, "fp32 | bf16 | fp16 | fp8 | fp8_flashmla | fp4")->capture_default_str();
  kv->add_option("--tokens,-n", f->tokens, "tokens per sequence (sliding layers keep at most their window)");
  kv->add_option("--sequences", f->sequences, "sequences of --tokens each")->capture_default_str();
  kv->add_option("--block-size", f->block_size, "page size in tokens: vLLM 16, FlashMLA 64 (1 = unpaged)")->capture_default_str();
  add_format_flag(kv, f->format);
  kv->callback([f, kv] {
    f->tokens_given = kv->get_option("--tokens")->count() > 0;
    emit(kv_document(*f), f->format);
  });
}

}  // namespace mlaplan::cli
