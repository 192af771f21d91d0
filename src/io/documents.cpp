#include "mlaplan/io/documents.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mlaplan/io/efficiency_json.hpp"
#include "mlaplan/io/hardware_json.hpp"
#include "mlaplan/io/hf_config.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan {

namespace {

std::string name(PathKind k) { return std::string(to_string(k)); }
std::string bound(bool compute_bound) { return compute_bound ? "compute" : "memory"; }

// How a checkpoint's scales are laid out: "128x128 blocks", "g128", "per channel", "per tensor".
std::string scale_layout(const WeightFormat& f) {
  if (f.block_rows <= 0 && f.block_cols <= 0) return "per tensor";
  if (f.block_cols <= 0) return "per channel";
  if (f.block_rows == 1) return fmt::format("g{}", f.block_cols);
  return fmt::format("{}x{} blocks", f.block_rows, f.block_cols);
}

std::string weights_label(const ModelSpec& m) {
  switch (m.quant) {
    case WeightQuant::fp8_block:
      if (m.quant_method == "fp8") return fmt::format("fp8 {}", scale_layout(m.quant_format));
      return fmt::format("{} fp8 {}{}", m.quant_method, scale_layout(m.quant_format), m.quant_skips_attention ? " (attention dense)" : "");
    case WeightQuant::mxfp4: return m.quant_skips_attention ? "mxfp4 (experts)" : "mxfp4";
    case WeightQuant::int4:
    case WeightQuant::int8:
      return fmt::format("{} {} {}{}", m.quant_method, to_string(checkpoint_weight_dtype(m)), scale_layout(m.quant_format),
                         m.quant_skips_attention ? " (attention dense)" : "");
    case WeightQuant::none: break;
  }
  return "bf16";
}

void add_roofline_fields(Document& doc, const RooflineUsed& r) {
  doc.fields.push_back({"gpu", "GPU", r.hw.name, Unit::text});
  doc.fields.push_back({"dtype", "compute dtype", std::string(to_string(r.compute)), Unit::text});
  doc.fields.push_back({"peak_flops_per_s", "dense peak", r.rf.peak.value, Unit::flops_per_s});
  doc.fields.push_back({"bandwidth_bytes_per_s", "memory bandwidth", r.rf.bandwidth.value, Unit::bytes_per_s});
  doc.fields.push_back({"time_model", "time model", std::string(r.rf.calibrated() ? "calibrated" : r.eta.compute == 1 && r.eta.memory == 1 ? "speed of light" : "uniform efficiency"), Unit::text});
  doc.fields.push_back({"eta_compute", r.rf.calibrated() ? "η compute (uncalibrated ops)" : "η compute", r.eta.compute, Unit::fraction});
  doc.fields.push_back({"eta_memory", r.rf.calibrated() ? "η memory (uncalibrated ops)" : "η memory", r.eta.memory, Unit::fraction});
  doc.fields.push_back({"eta_source", "η from", r.eta.source, Unit::text});
  doc.fields.push_back({"launch_s", "launch cost per op", r.rf.launch.value, Unit::seconds});
  doc.fields.push_back({"ridge_flop_per_byte", "ridge point", r.rf.ridge(), Unit::flop_per_byte});
}

// The calibrated families' parameters a document's times used (nothing at speed of light). Not the
// L2 pace: a step's ops are priced from DRAM (op_time), so no time here used it.
void add_efficiency_table(Document& doc, const Roofline& rf) {
  if (!rf.calibrated()) return;
  Table t{.name = "efficiency", .title = "Calibrated kernel families (other ops at speed of light): " + rf.eta_source, .columns = {{"family", "kernel family", Unit::text}}, .rows = {}};
  for (Column& c : efficiency_parameter_columns(false, false)) t.columns.push_back(std::move(c));
  t.columns.emplace_back("split_kv", "split-KV", Unit::text);
  t.columns.emplace_back("rows", "rows fitted", Unit::count);
  for (int i = 0; i < kKernelFamilyCount; ++i)
    if (const auto& k = rf.kernels[static_cast<std::size_t>(i)]) {
      const auto f = static_cast<KernelFamily>(i);
      std::vector<Value> row{std::string(to_string(f))};
      // The fixed costs this GPU pays (a family fitted at the SM clock: through its clock).
      append_efficiency_parameters(row, *k, false, fixed_cost_scale(*k, rf.sm_clock_hz));
      row.emplace_back(std::in_place_type<std::string>, !is_latent_attention(f) ? "-" : k->split_kv ? "yes" : "no");
      row.emplace_back(std::in_place_type<std::int64_t>, k->rows);
      t.rows.push_back(std::move(row));
    }
  doc.tables.push_back(std::move(t));
}

}  // namespace

void add_engine_columns(Table& t, const std::vector<EnginePolicy>& policies, bool expands_column_for_people) {
  for (const auto& e : policies) {
    const std::string k(e.key);
    t.columns.push_back({k + "_expands_from_query", k + " expands from Q", Unit::count, !expands_column_for_people});
    t.columns.push_back({k + "_worst_penalty", k + " worst", Unit::fraction});
    t.columns.push_back({k + "_worst_penalty_query", k + " at Q", Unit::count});
  }
}

void add_engine_cells(std::vector<Value>& row, const CrossoverRow& c) {
  for (const EngineOutcome& o : c.engines) {
    // emplace with the alternative named: GCC 12 -O3 warns maybe-uninitialized on a converting push_back.
    row.push_back(positive_or_null(o.expands_from_query));
    row.emplace_back(std::in_place_type<double>, o.worst_penalty);
    row.push_back(positive_or_null(o.worst_penalty_query));
  }
}

std::string describe(const Workload& w) {
  std::string s;
  for (const SequenceGroup& g : w.groups) {
    s += fmt::format("{}{} x {} tokens after {}", s.empty() ? "" : ", ", g.count, g.query, g.prefix);
    if (w.par.dp > 1) s += fmt::format(" ({} per rank over DP {})", sequences_per_rank(g, w.par), w.par.dp);
  }
  return s;
}

void add_explain_table(Document& doc, const std::vector<ExplainStep>& steps) {
  Table t{.name = "explain", .title = "How each number is derived",
          .columns = {{"quantity", "quantity", Unit::text}, {"formula", "formula", Unit::text}, {"substituted", "values", Unit::text},
                      {"result", "result", Unit::text}, {"value", "value", Unit::decimal, true}, {"unit", "unit", Unit::text, true}},
          .rows = {}};
  for (const ExplainStep& s : steps) {
    // A whole number stays an integer in CSV and JSON; a real one (FLOPs, seconds, Q*) is written as is.
    const double x = s.number();
    const bool whole = !s.real || (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9e15);
    t.rows.push_back({s.quantity, s.formula, s.substituted, s.result,
                      whole ? Value{s.real ? static_cast<std::int64_t>(x) : s.value} : Value{std::in_place_type<double>, x}, s.unit});
  }
  doc.tables.push_back(std::move(t));
}

Document models_document() {
  Document doc;
  doc.title = "Bundled models";
  Table t{.name = "models", .title = "Models (KV bytes per token at bf16, all layers, windows not applied)",
          .columns = {{"name", "name", Unit::text},
           {"model", "model", Unit::text},
           {"attention", "attention", Unit::text},
           {"layers", "layers", Unit::count},
           {"hidden_size", "hidden", Unit::count},
           {"query_heads", "q heads", Unit::count},
           {"kv_heads", "kv heads", Unit::count},
           {"sliding_layers", "sliding", Unit::count},
           {"params_total", "params", Unit::params},
           {"params_active", "active", Unit::params},
           {"kv_bytes_per_token", "KV/token", Unit::bytes},
           {"weights", "weights", Unit::text},
           {"max_position_embeddings", "max ctx", Unit::count}},
          .rows = {}};
  for (const BundledEntry& e : bundled_models()) {
    const ModelSpec m = load_model_file(e.path, e.display, {}, shown_path(e.path));
    const ModelSummary s = summarize(m);
    t.rows.push_back({e.short_name, e.display, std::string(to_string(m.attention)), m.num_layers(), m.hidden, m.heads,
                      m.is_mla() ? std::int64_t{1} : m.kv_heads, s.sliding_layers, s.params.total.value, s.params.active.value,
                      s.cache_bytes_per_token_bf16.value, weights_label(m), m.max_position_embeddings});
  }
  doc.tables.push_back(std::move(t));
  doc.notes.push_back("MLA models store one shared latent per token per layer, so their KV heads read 1.");
  doc.notes.push_back("Use a name with --model (case-insensitive), or pass any config.json or folder holding one.");
  return doc;
}

Document gpus_document() {
  auto peak = [](const HardwareSpec& hw, DType d) -> Value {
    if (auto p = hw.peak_flops(d)) return p->value;
    return std::monostate{};
  };
  Document doc;
  doc.title = "Bundled GPUs";
  Table t{.name = "gpus", .title = "GPUs (dense peaks; * marks a row with unconfirmed numbers)",
          .columns = {{"name", "name", Unit::text},
           {"gpu", "gpu", Unit::text},
           {"memory_bytes", "memory", Unit::bytes},
           {"memory_bandwidth_bytes_per_s", "bandwidth", Unit::bytes_per_s},
           {"bf16_flops_per_s", "bf16", Unit::flops_per_s},
           {"fp8_flops_per_s", "fp8", Unit::flops_per_s},
           {"fp4_flops_per_s", "fp4", Unit::flops_per_s},
           {"ridge_bf16_flop_per_byte", "bf16 ridge", Unit::flop_per_byte},
           {"sm_count", "SMs/CUs", Unit::count},
           {"sm_boost_clock_mhz", "SM MHz", Unit::count},
           {"unconfirmed_fields", "unconfirmed", Unit::text}},
          .rows = {}};
  for (const BundledEntry& e : bundled_gpus()) {
    const HardwareSpec hw = load_hardware_file(e.path, shown_path(e.path));
    std::string unconfirmed;
    for (const auto& u : hw.unconfirmed) unconfirmed += (unconfirmed.empty() ? "" : " ") + u;
    Value ridge = std::monostate{};
    if (auto r = hw.ridge_flop_per_byte(DType::bf16)) ridge = *r;
    t.rows.push_back({e.short_name, hw.name + (hw.unconfirmed.empty() ? "" : " *"), hw.memory_capacity.value, hw.memory_bandwidth.value,
                      peak(hw, DType::bf16), peak(hw, DType::fp8), peak(hw, DType::fp4), ridge, hw.sm_count,
                      hw.sm_clock_hz > 0 ? Value{static_cast<std::int64_t>(std::llround(hw.sm_clock_hz / 1e6))} : Value{},
                      unconfirmed.empty() ? std::string("-") : unconfirmed});
  }
  doc.tables.push_back(std::move(t));
  doc.notes.push_back("Every number has a source in its hardware/*.json file; the last column names the fields whose numbers are not confirmed.");
  return doc;
}

Document kv_document(const ModelSpec& m, const KvStudy& st) {
  const bool with_tokens = st.tokens > 0;
  Document doc;
  doc.title = fmt::format("KV cache of {} ({}), {} cache", m.name, to_string(m.attention), to_string(st.kv));
  doc.fields = {
      {"model", "model", m.name, Unit::text},
      {"attention", "attention", std::string(to_string(m.attention)), Unit::text},
      {"layers", "layers", m.num_layers(), Unit::count},
      {"kv_dtype", "KV dtype", std::string(to_string(st.kv)), Unit::text},
  };
  if (m.mla)
    doc.fields.push_back({"cached_values_per_token_per_layer", "cached values per token per layer (r + d_r)",
                          m.mla->kv_lora_rank + m.mla->qk_rope_head_dim, Unit::count});
  else
    doc.fields.push_back({"kv_heads", "KV heads x head dim", fmt::format("{} x {}", m.kv_heads, m.head_dim), Unit::text});
  doc.fields.push_back({"bytes_per_token_per_layer", "bytes per token per layer",
                        st.uniform ? Value{st.per_token_per_layer.total().value} : Value{std::monostate{}}, Unit::bytes});
  doc.fields.push_back({"scale_bytes_per_token_per_layer", "  of which quantization scales", st.per_token_per_layer.scales.value, Unit::bytes});
  doc.fields.push_back({"bytes_per_token", "bytes per token (all layers)", st.per_token.total().value, Unit::bytes});
  doc.fields.push_back({"indexer_bytes_per_token_per_layer", "DSA indexer bytes per token per layer", st.indexer_per_token_per_layer.value, Unit::bytes});
  doc.fields.push_back({"indexer_bytes_per_token", "DSA indexer bytes per token", st.indexer_per_token.value, Unit::bytes});
  doc.fields.push_back({"cache_bytes_per_token", "cache bytes per token incl. indexer", (st.per_token.total() + st.indexer_per_token).value, Unit::bytes});
  doc.fields.push_back({"tp", "tensor parallel", st.par.tp, Unit::count});
  doc.fields.push_back({"dp", "data-parallel attention", st.par.dp, Unit::count});
  doc.fields.push_back({"bytes_per_token_per_rank", "bytes per token per rank", st.per_token_per_rank.value, Unit::bytes});
  doc.fields.push_back({"block_size", "page block (tokens)", st.block_size, Unit::count});
  if (with_tokens) {
    doc.fields.push_back({"tokens", "tokens per sequence", st.tokens, Unit::count});
    doc.fields.push_back({"sequences", "sequences", st.sequences, Unit::count});
    doc.fields.push_back({"total_bytes", "total bytes (all sequences, one copy)", st.total_bytes->value, Unit::bytes});
    doc.fields.push_back({"total_bytes_per_rank", "bytes per rank", st.total_bytes_per_rank->value, Unit::bytes});
  }

  Table layers{.name = "layer_groups", .title = "Layers by attention kind",
               .columns = {{"kind", "layer kind", Unit::text}, {"layers", "layers", Unit::count}, {"bytes_per_token_per_layer", "bytes/token/layer", Unit::bytes}},
               .rows = {}};
  if (with_tokens) {
    layers.columns.push_back({"tokens_held", "tokens held", Unit::count});
    layers.columns.push_back({"bytes_per_sequence", "bytes per sequence", Unit::bytes});
  }
  for (const KvLayerGroupRow& g : st.groups) {
    std::vector<Value> row{g.group.kind.sliding ? fmt::format("sliding window {}", g.group.kind.window) : std::string("full attention"),
                           g.group.layers, g.bytes_per_token_per_layer.value};
    if (with_tokens) {
      row.push_back(g.tokens_held);
      row.push_back(g.bytes_per_sequence.value);
    }
    layers.rows.push_back(std::move(row));
  }
  doc.tables.push_back(std::move(layers));

  Table dtypes{.name = "dtypes", .title = "Cache dtypes compared",
               .columns = {{"kv_dtype", "KV dtype", Unit::text},
                {"data_bytes_per_token_per_layer", "data/token/layer", Unit::bytes},
                {"scale_bytes_per_token_per_layer", "scales/token/layer", Unit::bytes},
                {"bytes_per_token", "bytes/token", Unit::bytes},
                {"ratio_to_bf16", "vs bf16", Unit::ratio}},
               .rows = {}};
  for (const KvDtypeRow& r : st.dtypes)
    dtypes.rows.push_back({std::string(to_string(r.kv)), r.per_token_per_layer.data.value, r.per_token_per_layer.scales.value, r.per_token.value,
                           r.ratio_to_bf16});
  doc.tables.push_back(std::move(dtypes));

  if (m.mla && st.equivalents) {
    const MlaDims& a = *m.mla;
    const MlaEquivalents& e = *st.equivalents;
    const Bytes latent = st.per_token_per_layer.total();
    const double lat = static_cast<double>(latent.value);
    Table eq{.name = "equivalents", .title = "What the latent replaces (per-head caches of the same model)",
             .columns = {{"cache", "cache", Unit::text},
              {"bytes_per_token_per_layer", "bytes/token/layer", Unit::bytes},
              {"bytes_per_token", "bytes/token", Unit::bytes},
              {"ratio_to_latent", "vs latent", Unit::ratio}},
             .rows = {}};
    eq.rows.push_back({fmt::format("MLA latent: r + d_r = {} + {}", a.kv_lora_rank, a.qk_rope_head_dim), latent.value, st.per_token.total().value, 1.0});
    eq.rows.push_back({fmt::format("MHA equivalent: {} heads x (d_n + d_r + d_v = {} + {} + {})", m.heads, a.qk_nope_head_dim, a.qk_rope_head_dim,
                                   a.v_head_dim),
                       e.mha_bytes_per_token_per_layer.value, (e.mha_bytes_per_token_per_layer * m.num_layers()).value, e.mha_ratio});
    eq.rows.push_back({fmt::format("GQA with the same cache: {:.2f} KV groups of width {}", e.gqa_groups, a.qk_nope_head_dim), latent.value,
                       st.per_token.total().value, 1.0});
    eq.rows.push_back({fmt::format("GQA-8, width {}", a.qk_nope_head_dim), e.gqa8_bytes_per_token_per_layer.value,
                       (e.gqa8_bytes_per_token_per_layer * m.num_layers()).value, static_cast<double>(e.gqa8_bytes_per_token_per_layer.value) / lat});
    doc.tables.push_back(std::move(eq));
    doc.fields.push_back({"mha_equivalent_bytes_per_token_per_layer", "MHA equivalent bytes per token per layer", e.mha_bytes_per_token_per_layer.value,
                          Unit::bytes});
    doc.fields.push_back({"mha_equivalent_ratio", "MHA equivalent / latent", e.mha_ratio, Unit::ratio});
    doc.fields.push_back({"gqa_equivalent_groups", "GQA groups with the same cache", e.gqa_groups, Unit::none});
  }

  Table layouts{.name = "layouts", .title = fmt::format("Per-rank cache on {} ranks: TP replication vs data-parallel attention", st.par.ranks()),
                .columns = {{"layout", "layout", Unit::text},
                 {"tp", "TP", Unit::count},
                 {"dp", "DP", Unit::count},
                 {"bytes_per_token_per_rank", "bytes/token/rank", Unit::bytes}},
                .rows = {}};
  if (with_tokens) layouts.columns.push_back({"bytes_per_rank", "bytes per rank", Unit::bytes});
  layouts.columns.push_back({"feasible", "feasible", Unit::text, true});
  layouts.columns.push_back({"reason", "reason", Unit::text, true});
  for (const KvLayoutRow& r : st.layouts) {
    const bool ok = r.verdict.ok();
    std::vector<Value> row{r.label, r.par.tp, r.par.dp, ok ? Value{r.bytes_per_token_per_rank.value} : Value{}};
    if (with_tokens) row.push_back(r.bytes_per_rank ? Value{r.bytes_per_rank->value} : Value{});
    row.push_back(ok);
    row.push_back(ok ? std::string("-") : r.verdict.verdict.reason);
    layouts.rows.push_back(std::move(row));
  }
  doc.tables.push_back(std::move(layouts));

  doc.notes = m.notes;
  for (const KvLayoutRow& r : st.layouts)
    if (!r.verdict.ok()) doc.notes.push_back(fmt::format("{} ({}): {}.", r.label, to_string(r.par), r.verdict.verdict.reason));
  if (m.mla) doc.notes.push_back("Under TP the MLA latent is replicated on every rank: per-rank bytes do not fall with TP; data-parallel attention divides the sequences instead.");
  else doc.notes.push_back("Under TP, KV heads are split across ranks and replicated when there are fewer KV heads than ranks.");
  if (m.indexer) doc.notes.push_back("The DSA indexer cache is fp8 keys with one fp32 scale per 128 values, whatever the main cache dtype.");
  return doc;
}

namespace {
// The head of every per-deployment document: model, GPU and layout.
std::vector<Field> deployment_fields(const ModelSpec& m, const HardwareSpec& hw, const Parallelism& par) {
  return {{"model", "model", m.name, Unit::text},        {"gpu", "GPU", hw.name, Unit::text},
          {"tp", "tensor parallel", par.tp, Unit::count}, {"dp", "data-parallel attention", par.dp, Unit::count},
          {"ep", "expert parallel", par.ep, Unit::count}, {"ranks", "GPUs", par.ranks(), Unit::count}};
}
}  // namespace

Document capacity_document(const ModelSpec& m, const HardwareSpec& hw, const CapacityStudy& st, const std::string& reserve_note) {
  const CapacityRequest& req = st.request;
  const CapacityResult& r = st.result;
  const Parallelism& par = req.par;
  Document doc;
  doc.title = fmt::format("Capacity of {} on {} x {} ({})", m.name, par.ranks(), hw.name, to_string(par));
  const std::string wlabel = req.weights.linear == req.weights.dense
                                 ? std::string(to_string(req.weights.linear))
                                 : fmt::format("{} linear{}, {} other", to_string(req.weights.linear),
                                               req.weights.quantize_attention ? "" : " (attention kept dense)", to_string(req.weights.dense));
  doc.fields = deployment_fields(m, hw, par);
  doc.fields.insert(doc.fields.end(), {
      {"weight_dtype", "weights", wlabel, Unit::text},
      {"kv_dtype", "KV dtype", std::string(to_string(req.kv_dtype)), Unit::text},
      {"mem_util", "memory utilisation", req.mem_util, Unit::fraction},
      {"context_tokens", "context per sequence", req.context, Unit::count},
      {"block_size", "page block (tokens)", req.block_size, Unit::count},
      {"params_total", "parameters (incl. MTP)", r.params.total.value, Unit::params},
      {"params_main", "parameters, main model", r.params.main.value, Unit::params},
      {"params_mtp", "parameters, MTP modules", r.params.mtp.value, Unit::params},
      {"params_active", "parameters active per token", r.params.active.value, Unit::params},
      {"memory_bytes_per_rank", "memory per GPU", r.memory_per_rank.value, Unit::bytes},
      {"usable_bytes_per_rank", "usable (x utilisation)", r.usable_per_rank.value, Unit::bytes},
      {"weight_bytes_per_rank", "weights per GPU", r.weight_bytes_per_rank.value, Unit::bytes},
      {"reserve_bytes_per_rank", "activation reserve per GPU", r.reserve_bytes_per_rank.value, Unit::bytes},
      {"kv_pool_bytes_per_rank", "KV pool per GPU", r.kv_pool_bytes_per_rank.value, Unit::bytes},
      {"kv_bytes_per_token_per_rank", "KV bytes per token per GPU", r.kv_bytes_per_token_per_rank.value, Unit::bytes},
      {"max_tokens_per_rank", "tokens per GPU", r.max_tokens_per_rank, Unit::count},
      {"max_tokens_cluster", "tokens in the deployment", r.max_tokens_cluster, Unit::count},
      {"sequence_bytes_per_rank", "KV bytes per sequence per GPU", r.sequence_bytes_per_rank.value, Unit::bytes},
      {"sequences_per_rank", "sequences per DP replica", r.sequences_per_rank, Unit::count},
      {"max_sequences", "concurrent sequences", r.max_sequences, Unit::count},
      {"fits", "fits", r.fits(), Unit::text},
      {"reason", "reason", r.fits() ? std::string("-") : r.verdict.reason, Unit::text},
  });

  Table weights{.name = "weights", .title = "Weights by group",
                .columns = {{"group", "group", Unit::text},
                 {"params", "params", Unit::params},
                 {"bytes", "bytes (all ranks' share)", Unit::bytes},
                 {"bytes_per_rank", "bytes per GPU", Unit::bytes}},
                .rows = {}};
  for (const WeightGroupRow& g : st.weights)
    weights.rows.push_back({std::string(to_string(g.group)), g.params.value, g.bytes.value, g.bytes_per_rank.value});
  doc.tables.push_back(std::move(weights));

  Table lay{.name = "layouts", .title = fmt::format("The same {} GPUs laid out differently", par.ranks()),
            .columns = {{"layout", "layout", Unit::text},
             {"weight_bytes_per_rank", "weights/GPU", Unit::bytes},
             {"kv_pool_bytes_per_rank", "KV pool/GPU", Unit::bytes},
             {"kv_bytes_per_token_per_rank", "KV/token/GPU", Unit::bytes},
             {"max_tokens_per_rank", "tokens/GPU", Unit::count},
             {"max_tokens_cluster", "tokens in total", Unit::count},
             {"max_sequences", "sequences", Unit::count},
             {"fits", "fits", Unit::text},
             {"reason", "reason", Unit::text, true}},
            .rows = {}};
  for (const LayoutCapacity& l : st.layouts) {
    const CapacityResult& x = l.result;
    lay.rows.push_back({to_string(l.par) + (l.requested ? " (requested)" : ""), x.weight_bytes_per_rank.value, x.kv_pool_bytes_per_rank.value,
                        x.kv_bytes_per_token_per_rank.value, x.max_tokens_per_rank, x.max_tokens_cluster, x.max_sequences, x.fits(),
                        x.fits() ? std::string("-") : x.verdict.reason});
  }
  doc.tables.push_back(std::move(lay));

  doc.notes = m.notes;
  doc.notes.push_back(reserve_note);
  if (m.has_sliding_layers())
    doc.notes.push_back(fmt::format("Sliding-window layers keep only their window, so a token's cost depends on its sequence: tokens are the tokens of "
                                    "context held in sequences of {} tokens (whole ones, then the longest partial one).",
                                    req.context));
  if (m.is_mla())
    doc.notes.push_back("The MLA latent is replicated on every TP rank, so TP adds no KV capacity; data-parallel attention gives each GPU its own sequences.");
  for (const LayoutCapacity& l : st.layouts)
    if (!l.requested && !l.result.fits()) doc.notes.push_back(fmt::format("{}: {}.", to_string(l.par), l.result.verdict.reason));
  doc.notes.push_back(fmt::format("GPU numbers from {}; memory: {}", hw.source, hw.sources.count("memory_capacity") ? hw.sources.at("memory_capacity") : "?"));
  return doc;
}

Document engine_capacity_document(const ModelSpec& m, const HardwareSpec& hw, const Parallelism& par, KvDtype kv, const EngineCapacity& e,
                                  std::int64_t context) {
  const EngineProfile& p = *e.profile;
  Document doc;
  doc.title = fmt::format("KV pool {} would allocate for {} on {} x {} ({})", p.name, m.name, par.ranks(), hw.name, to_string(par));
  const std::int64_t ctx = context > 0 ? context : e.max_model_len;
  doc.fields = deployment_fields(m, hw, par);
  doc.fields.insert(doc.fields.end(), {
      {"engine", "engine", p.name, Unit::text},
      {"engine_profile", "profile", fmt::format("{} ({})", p.label(), p.file), Unit::text},
      {"kv_dtype", "KV dtype", std::string(to_string(kv)), Unit::text},
      {"mem_util", "memory fraction", e.mem_util, Unit::fraction},
      {"max_model_len_tokens", "max model length (tokens)", e.max_model_len, Unit::count},
      // SGLang's rule reads neither (0.4.3) or only the chunked-prefill size (its reserve rule).
      {"max_num_seqs", "max sequences (profiling sampler rows)", e.max_num_seqs > 0 ? Value{e.max_num_seqs} : Value{}, Unit::count},
      {"max_batched_tokens", p.family == EngineFamily::sglang ? "chunked prefill size (reserve rule)" : "max batched tokens (profiling pass)",
       e.max_batched_tokens > 0 ? Value{e.max_batched_tokens} : Value{}, Unit::count},
      {"block_size_tokens", "KV block (tokens)", e.block_size, Unit::count},
      {"cuda_graphs", "CUDA graphs", e.cuda_graphs, Unit::text},
      {"mtp_layers", "MTP layers loaded", e.mtp, Unit::count},
      {"total_seen_bytes_per_rank", "GPU total as torch sees it", e.total_seen.value, Unit::bytes},
      {"weight_bytes_per_rank", "weights per GPU", e.weights.value, Unit::bytes},
      {"activation_bytes_per_rank", "profiling activation per GPU", e.activation.value, Unit::bytes},
      {"non_torch_bytes_per_rank", "non-torch memory per GPU", e.non_torch.value, Unit::bytes},
      {"cuda_graph_bytes_per_rank", "CUDA graphs subtracted per GPU", e.cuda_graph.value, Unit::bytes},
      {"kv_pool_bytes_per_rank", "KV pool per GPU", e.kv_pool.value, Unit::bytes},
      {"kv_bytes_per_token_per_rank", "KV bytes per token per GPU (engine layout)", e.kv_bytes_per_token.value, Unit::bytes},
      {"engine_blocks_per_rank", "KV blocks per GPU", e.blocks, Unit::count},
      {"engine_kv_tokens", "KV tokens the engine logs (per GPU)", e.engine_kv_tokens, Unit::count},
      {"engine_max_concurrency", fmt::format("max concurrency at {} tokens (engine's figure)", e.max_model_len), e.engine_max_concurrency, Unit::decimal},
      {"context_tokens", "context per sequence", ctx, Unit::count},
      {"sequences_at_context_per_replica", fmt::format("whole sequences of {} tokens per DP replica", ctx), e.sequences_at_context, Unit::count},
      {"max_sequences", "concurrent sequences in the deployment", sat_mul(e.sequences_at_context, par.dp), Unit::count},
      {"fits", "fits", e.fits(), Unit::text},
      {"reason", "reason", e.fits() ? std::string("-") : e.verdict.reason, Unit::text},
  });
  Table budget{.name = "budget", .title = "Memory budget per GPU (the lines add up to the total torch sees)",
               .columns = {{"line", "line", Unit::text}, {"item", "item", Unit::text}, {"bytes", "bytes", Unit::bytes}, {"source", "source", Unit::text, true}},
               .rows = {}};
  Bytes sum{0};
  for (const BudgetLine& l : e.lines) {
    budget.rows.push_back({l.key, l.label, l.bytes.value, l.source.empty() ? std::string("-") : l.source});
    sum += l.bytes;
  }
  budget.rows.push_back({std::string("total"), std::string("total (torch.cuda.mem_get_info)"), sum.value, hw.sources.count("memory_torch_total") ? hw.sources.at("memory_torch_total") : std::string("datasheet capacity")});
  doc.tables.push_back(std::move(budget));
  doc.notes = m.notes;
  doc.notes.insert(doc.notes.end(), e.notes.begin(), e.notes.end());
  doc.notes.push_back(fmt::format("Profile {}: {}.", p.file, p.summary));
  doc.notes.push_back("engine_kv_tokens is per GPU: the MLA latent is replicated on every TP rank; with data-parallel attention each replica holds its own.");
  return doc;
}

Document cost_document(const ModelSpec& m, const RooflineUsed& r, const Workload& w, const CostStudy& st) {
  const std::string scope = w.projections ? "layer" : "core";
  Document doc;
  doc.title = fmt::format("Attention cost of {} on {} ({} scope)", m.name, r.hw.name, scope);
  doc.fields = {
      {"model", "model", m.name, Unit::text},
      {"attention", "attention", std::string(to_string(m.attention)), Unit::text},
      {"layers", "layers", m.num_layers(), Unit::count},
      {"workload", "workload", describe(w), Unit::text},
      {"causal", "causal", w.causal, Unit::text},
      {"kv_dtype", "KV dtype", std::string(to_string(w.kv)), Unit::text},
      {"weight_dtype", "weights read as", std::string(to_string(w.weights)), Unit::text},
      {"tp", "tensor parallel", w.par.tp, Unit::count},
      {"dp", "data-parallel attention", w.par.dp, Unit::count},
      {"scope", "scope", scope, Unit::text},
  };
  add_roofline_fields(doc, r);

  Table summary{.name = "path_summary", .title = "Paths compared (all layers, one rank; per layer in the per-layer column)",
                .columns = {{"path", "path", Unit::text},
                 {"flops_all_layers", "FLOPs (all layers)", Unit::flops},
                 {"bytes_all_layers", "bytes (all layers)", Unit::bytes},
                 {"intensity_flop_per_byte", "intensity", Unit::flop_per_byte},
                 {"bound", "bound", Unit::text},
                 {"workspace_bytes", "workspace (largest op)", Unit::bytes},
                 {"time_s_per_layer", "time/layer", Unit::seconds},
                 {"time_s_all_layers", "time (all layers)", Unit::seconds},
                 {"sol_time_s_all_layers", "at speed of light", Unit::seconds},
                 {"feasible", "fits", Unit::text},
                 {"detail", "batch division / reason", Unit::text, true}},
                .rows = {}};
  if (m.is_mla()) summary.columns.insert(summary.columns.begin() + 1, Column{"chunk_tokens", "chunk (tokens)", Unit::count});
  const double L = static_cast<double>(st.layers);
  std::vector<Table> op_tables;
  // With several chunk sizes (--chunk 1024,4096) each chunked path is keyed by its chunk.
  const auto chunked = std::count_if(st.paths.begin(), st.paths.end(), [](const PathResult& p) { return p.kind == PathKind::chunked; });
  for (const PathResult& p : st.paths) {
    const PathCost& c = p.cost;
    const std::string pname = p.kind == PathKind::chunked && chunked > 1 ? fmt::format("chunked_{}", p.chunk) : name(p.kind);
    const std::string key = "paths." + pname + ".";
    if (p.kind == PathKind::chunked) doc.fields.push_back({key + "chunk_tokens", "", p.chunk, Unit::count, true});
    for (Field fld : std::initializer_list<Field>{{key + "flops_all_layers", "", c.flops.value, Unit::flops},
                                                  {key + "flops_per_layer", "", c.flops.value / L, Unit::flops},
                                                  {key + "bytes_all_layers", "", c.bytes.value, Unit::bytes},
                                                  {key + "bytes_per_layer", "", c.bytes.value / L, Unit::bytes},
                                                  {key + "time_s_all_layers", "", c.time.value, Unit::seconds},
                                                  {key + "time_s_per_layer", "", c.time.value / L, Unit::seconds},
                                                  {key + "sol_time_s_all_layers", "", p.bound.value, Unit::seconds},
                                                  {key + "intensity_flop_per_byte", "", c.intensity(), Unit::flop_per_byte},
                                                  {key + "intensity_flop_per_byte_per_layer", "", c.intensity(), Unit::flop_per_byte},
                                                  {key + "bound", "", bound(c.compute_bound()), Unit::text},
                                                  {key + "bound_per_layer", "", bound(c.compute_bound()), Unit::text},
                                                  {key + "workspace_bytes", "", c.workspace_bytes.value, Unit::bytes}}) {
      fld.json_only = true;
      doc.fields.push_back(fld);
    }
    summary.rows.push_back({name(p.kind), c.flops.value, c.bytes.value, c.intensity(), bound(c.compute_bound()), c.workspace_bytes.value,
                            c.time.value / L, c.time.value, p.bound.value, p.feasible.ok(),
                            !p.feasible.ok() ? p.feasible.reason : p.detail.empty() ? std::string("-") : p.detail});
    if (m.is_mla()) summary.rows.back().insert(summary.rows.back().begin() + 1, p.kind == PathKind::chunked ? Value{p.chunk} : Value{});
    Table ops{.name = key + "ops",
              .title = p.kind == PathKind::chunked ? fmt::format("chunked path (chunks of {} keys): ops per layer", p.chunk)
                                                   : fmt::format("{} path: ops per layer", name(p.kind)),
              .columns = {{"path", "path", Unit::text, true},
               {"op", "op", Unit::text},
               {"kind", "kind", Unit::text},
               {"layers", "layers", Unit::count},
               {"flops_per_layer", "FLOPs/layer", Unit::flops},
               {"bytes_read_per_layer", "read/layer", Unit::bytes},
               {"bytes_written_per_layer", "written/layer", Unit::bytes},
               {"workspace_bytes", "workspace", Unit::bytes},
               {"intensity_flop_per_byte", "intensity", Unit::flop_per_byte},
               {"bound", "bound", Unit::text},
               {"time_s_per_layer", "time/layer", Unit::seconds},
               {"sol_time_s_per_layer", "at speed of light", Unit::seconds},
               {"calibrated", "calibrated", Unit::text}},
              .rows = {}};
    for (const OpRow& o : p.ops)
      ops.rows.push_back({name(p.kind), std::string(o.op.name()), std::string(to_string(o.op.kind())), o.layers, o.op.flops.value, o.op.bytes_read.value,
                          o.op.bytes_written.value, o.op.workspace_bytes.value, o.time.intensity, bound(o.time.compute_bound), o.time.time.value,
                          o.bound.value, o.time.calibrated});
    op_tables.push_back(std::move(ops));
  }
  doc.tables.push_back(std::move(summary));
  if (!st.engines.empty()) {
    // Named apart from the JSON object engines.<key> the fields below build.
    Table eng{.name = "engine_choices", .title = "What each engine runs for this batch (its rule over the whole batch)",
              .columns = {{"engine", "engine", Unit::text},
                          {"rules", "rules of", Unit::text},
                          {"path", "path", Unit::text},
                          {"time_s_all_layers", "time (all layers)", Unit::seconds},
                          {"penalty", "over the fastest feasible", Unit::fraction},
                          {"feasible", "fits", Unit::text},
                          {"detail", "batch division / reason", Unit::text, true}},
              .rows = {}};
    for (const EngineChoice& e : st.engines) {
      const PathResult& p = e.path;
      const std::string key = "engines." + std::string(e.key) + ".";
      for (Field fld : std::initializer_list<Field>{{key + "rules_of", "", e.engine, Unit::text},
                                                    {key + "path", "", name(p.kind), Unit::text},
                                                    {key + "time_s_all_layers", "", p.cost.time.value, Unit::seconds},
                                                    {key + "penalty", "", finite_or_null(e.penalty), Unit::fraction},
                                                    {key + "feasible", "", p.feasible.ok(), Unit::text}}) {
        fld.json_only = true;
        doc.fields.push_back(fld);
      }
      eng.rows.push_back({e.name, e.engine, name(p.kind), p.cost.time.value, finite_or_null(e.penalty), p.feasible.ok(),
                          !p.feasible.ok() ? p.feasible.reason : p.detail.empty() ? std::string("-") : p.detail});
    }
    doc.tables.push_back(std::move(eng));
  }
  for (auto& t : op_tables) doc.tables.push_back(std::move(t));
  const bool several = st.cheaper_by_time.has_value();
  doc.fields.push_back({"cheaper_by_flops", "cheaper by FLOPs", several ? Value{name(*st.cheaper_by_flops)} : Value{}, Unit::text});
  doc.fields.push_back({"flops_ratio", "  FLOPs of the other / cheaper", several ? Value{st.flops_ratio} : Value{}, Unit::ratio});
  doc.fields.push_back({"cheaper_by_time", "cheaper by roofline time", several ? Value{name(*st.cheaper_by_time)} : Value{}, Unit::text});
  doc.fields.push_back({"time_ratio", "  time of the slowest / fastest", several ? Value{st.time_ratio} : Value{}, Unit::ratio});

  doc.notes = m.notes;
  doc.notes.push_back(!w.projections ? "Attention core only (the seeds' per-layer figures); --scope layer adds the q/kv/o projections, the same for every path."
                                     : "Layer scope: the q/kv/o projections are included and are the same for every path.");
  doc.notes.push_back("Weights an op reads are read once per step; caches once per sequence. Times are per rank; FLOPs and bytes are per rank (heads / TP, batch / DP).");
  if (m.is_mla()) {
    doc.notes.push_back("The cheaper path is chosen among the feasible absorb, expand, split (and sparse); chunked is expand with its workspace bounded by --chunk, and competes when expand does not fit.");
    if (st.workspace_budget)
      doc.notes.push_back(fmt::format("Workspace budget per GPU: {} (--workspace-gib; by default 0.9 x the GPU's memory - weights - the batch's KV cache).",
                                      humanize(st.workspace_budget->value, Unit::bytes)));
    if (st.memory_shortfall.value > 0)
      doc.notes.push_back(fmt::format("The weights and this batch's KV cache exceed 0.9 x the GPU's memory by {} at TP {}: no path with a workspace fits "
                                      "(spread the model with --tp, or give --workspace-gib to compare the paths regardless).",
                                      humanize(st.memory_shortfall.value, Unit::bytes), w.par.tp));
  }
  add_efficiency_table(doc, r.rf);
  return doc;
}

Document crossover_document(const ModelSpec& m, const RooflineUsed& r, const CrossoverSweepSpec& spec, const CrossoverStudy& st) {
  Document doc;
  doc.title = fmt::format("Expand/absorb crossover of {} on {}", m.name, r.hw.name);
  doc.fields = {{"model", "model", m.name, Unit::text}, {"batch", "sequences per step", spec.batch, Unit::count},
                {"causal", "causal", spec.base.causal, Unit::text}};
  add_roofline_fields(doc, r);
  doc.fields.push_back({"asymptotic_flop_crossover_query", "FLOP-only Q* as P grows", finite_or_null(st.asymptotic_flop_crossover_query), Unit::decimal});
  doc.fields.push_back({"max_query", "penalties searched over Q = 1 ..", spec.max_query, Unit::count});

  const auto& engines = spec.policies;
  Table rows{.name = "rows", .title = "Q*: expand is cheaper for query blocks longer than this",
             .columns = {{"prefix", "prefix P", Unit::count},
              {"tp", "TP", Unit::count},
              {"kv_dtype", "KV", Unit::text},
              {"flop_crossover_query", "Q* by FLOPs (tokens)", Unit::decimal},
              {"roofline_crossover_query", r.rf.calibrated() ? "Q* calibrated (tokens)" : "Q* by roofline (tokens)", Unit::decimal},
              {"sol_crossover_query", "Q* at speed of light (tokens)", Unit::decimal}},
             .rows = {}};
  add_engine_columns(rows, engines, false);
  for (const CrossoverRow& c : st.rows) {
    std::vector<Value> row{static_cast<std::int64_t>(c.prefix), c.tp, std::string(to_string(c.kv)), finite_or_null(c.flop_crossover_query),
                           finite_or_null(c.roofline_crossover_query), finite_or_null(c.sol_crossover_query)};
    add_engine_cells(row, c);
    rows.rows.push_back(std::move(row));
  }
  doc.tables.push_back(std::move(rows));

  Table rules{.name = "engines", .title = "Engine policies as modelled (penalty: worst slowdown of the engine's choice over the faster path)",
              .columns = {{"engine", "engine", Unit::text}, {"name", "name", Unit::text}, {"rules_of", "rules of", Unit::text},
                          {"backends", "backends", Unit::text}, {"rule", "rule", Unit::text}, {"source", "source", Unit::text, true}},
              .rows = {}};
  for (const auto& e : engines) rules.rows.push_back({e.key, e.name, e.engine, e.backends, describe(e), e.source});
  doc.tables.push_back(std::move(rules));

  doc.notes = m.notes;
  doc.notes.push_back("FLOP-only Q* is closed form and the same at every TP; the roofline Q* solves T_expand(Q) = T_absorb(Q) by bracketed regula falsi to 1e-10 relative (attention core, per rank).");
  doc.notes.push_back("Q* = 0: expanding is no slower even for one query token (no prefix to expand); an empty Q*: absorb stays cheaper.");
  if (!st.sparse.empty()) {
    Table sp{.name = "sparse_crossover", .title = "DSA: the prompt length from which the sparse path beats the dense ones",
             .columns = {{"tp", "TP", Unit::count}, {"kv_dtype", "KV dtype", Unit::text}, {"sparse_faster_from_tokens", "sparse faster from (tokens)", Unit::count}},
             .rows = {}};
    for (const SparseCrossoverRow& x : st.sparse)
      sp.rows.push_back({x.tp, std::string(to_string(x.kv)), positive_or_null(x.sparse_faster_from_tokens)});
    doc.tables.push_back(std::move(sp));
    doc.notes.push_back(fmt::format("Sparse against dense: {} prompts with no prefix; the engines' dense-MHA limits are in the rules table "
                                    "(SGLang: while every request's keys are at most index_topk, {}).",
                                    spec.batch, m.indexer ? m.indexer->topk : 0));
  }
  add_efficiency_table(doc, r.rf);
  return doc;
}

Table step_components_table(const StepResult& st) {
  Table comp{.name = "components", .title = "Step time by component (per GPU, all layers)",
             .columns = {{"component", "component", Unit::text}, {"category", "category", Unit::text}, {"layers", "layers", Unit::count},
                         {"flops", "FLOPs", Unit::flops}, {"bytes", "memory bytes", Unit::bytes}, {"link_bytes", "bytes sent", Unit::bytes},
                         {"time_s", "time", Unit::seconds}, {"time_s_per_layer", "per layer", Unit::seconds}, {"sol_time_s", "speed of light", Unit::seconds},
                         {"share", "share", Unit::fraction}, {"bound", "bound", Unit::text}},
             .rows = {}};
  const double total = st.compute.value + st.communication.value + st.overhead.value;
  for (const StepRow& row : st.rows)
    comp.rows.push_back({std::string(to_string(row.component)), std::string(category_of(row.component)), row.layers, row.flops.value, row.bytes.value,
                         row.link_bytes.value, row.time.value, row.layers > 0 ? row.time.value / static_cast<double>(row.layers) : 0.0, row.bound.value,
                         total > 0 ? row.time.value / total : 0.0, row.bound_by});
  return comp;
}

Document step_document(const ModelSpec& m, const RooflineUsed& r, const StepRequest& req, const StepResult& st, const std::string& engine) {
  const Parallelism& par = req.w.par;
  Document doc;
  doc.title = fmt::format("{} step of {} on {} x {} ({})", st.phase == Phase::prefill ? "Prefill" : "Decode", m.name, st.gpus, r.hw.name, to_string(par));
  doc.fields = deployment_fields(m, r.hw, par);
  doc.fields.erase(doc.fields.begin() + 1);  // the GPU comes with the roofline fields
  add_roofline_fields(doc, r);
  const bool decode = st.phase == Phase::decode;
  doc.fields.insert(doc.fields.end(), {
      {"phase", "phase", std::string(to_string(st.phase)), Unit::text},
      {"workload", "batch", describe(req.w), Unit::text},
      {"engine", "engine", engine, Unit::text},
      {"overhead_source", "overheads from", req.overheads.source, Unit::text},
      {"links_source", "link efficiencies from", req.links.source.empty() ? std::string("none (datasheet rates)") : req.links.source, Unit::text},
      {"normal_overlap_slowdown", "normal all-to-all in TBO, of alone", req.links.normal.overlap_slowdown, Unit::fraction},
      {"nodes", "nodes", static_cast<std::int64_t>((st.gpus + req.gpus_per_node - 1) / req.gpus_per_node), Unit::count},
      {"gpus_per_node", "GPUs per node (scale-up domain)", req.gpus_per_node, Unit::count},
      {"attention_path", "attention path", st.attention_detail.empty() ? st.attention_path : fmt::format("{} ({})", st.attention_path, st.attention_detail), Unit::text},
      {"mtp_draft_tokens", "MTP draft tokens", req.mtp_draft, Unit::count},
      {"mtp_accept", "MTP acceptance", req.mtp_draft > 0 ? Value{req.mtp_accept} : Value{}, Unit::fraction},
      {"moe_imbalance", "MoE imbalance (busiest rank / mean)", st.moe_imbalance, Unit::decimal},
      {"two_batch_overlap", "two-batch overlap", req.two_batch_overlap, Unit::text},
      {"ep_mode", "EP all-to-all", std::string(to_string(req.ep_mode)), Unit::text},
      {"compute_s", "compute", st.compute.value, Unit::seconds},
      {"communication_s", "communication", st.communication.value, Unit::seconds},
      {"overlap_saving_s", "hidden by overlap", st.overlap_saving.value, Unit::seconds},
      {"comm_kernels_sm_s", "all-to-all SM time (in compute)", st.comm_kernels_sm.value, Unit::seconds},
      {"eager_launch_s", "host launch per kernel (eager)", req.eager_launch.value, Unit::seconds},
      {"launch_wait_s", "GPU waiting on launches", st.launch_wait.value, Unit::seconds},
      {"overhead_s", "engine overhead", st.overhead.value, Unit::seconds},
      {"step_time_s", "step time", st.step_time.value, Unit::seconds},
      {"sol_step_time_s", "step time at speed of light", st.step_bound.value, Unit::seconds},
      {"sequences", "sequences", st.sequences, Unit::decimal},
      {"input_tokens", "new tokens in the step", st.input_tokens, Unit::decimal},
      {"output_tokens", "tokens emitted", st.output_tokens, Unit::decimal},
      {decode ? "tpot_s" : "ttft_s", decode ? "TPOT" : "TTFT", (decode ? st.tpot : st.ttft).value, Unit::seconds},
      {"tokens_per_s_per_gpu", decode ? "output tokens/s per GPU" : "input tokens/s per GPU", st.tokens_per_s_per_gpu, Unit::decimal},
      {"input_tokens_per_s_per_gpu", "input tokens/s per GPU", st.input_tokens / st.step_time.value / static_cast<double>(st.gpus), Unit::decimal, true},
      {"output_tokens_per_s_per_gpu", "output tokens/s per GPU", st.output_tokens / st.step_time.value / static_cast<double>(st.gpus), Unit::decimal, true},
      {"weight_bytes_per_rank", "weights per GPU", st.memory.weight_bytes_per_rank.value, Unit::bytes},
      {"kv_pool_bytes_per_rank", "KV pool per GPU", st.memory.kv_pool_bytes_per_rank.value, Unit::bytes},
      {"max_tokens_per_rank", "KV tokens that fit per GPU", st.memory.max_tokens_per_rank, Unit::count},
      {"kv_tokens_per_rank", "KV tokens the batch keeps per GPU", st.kv_tokens_per_rank, Unit::decimal},
      {"fits", "fits in memory", st.fits.ok(), Unit::text},
      {"reason", "reason", st.fits.ok() ? Value{} : Value{st.fits.reason}, Unit::text},
  });
  doc.tables.push_back(step_components_table(st));
  Table layers{.name = "layers", .title = "Time per layer, by layer kind",
               .columns = {{"kind", "layer kind", Unit::text}, {"count", "count", Unit::count}, {"compute_s_per_layer", "compute", Unit::seconds},
                           {"communication_s_per_layer", "communication", Unit::seconds}, {"time_s_per_layer", "time per layer", Unit::seconds}},
               .rows = {}};
  for (const LayerKindRow& k : st.layer_kinds)
    layers.rows.push_back({k.kind, k.count, k.compute.value, k.communication.value, k.time.value});
  doc.tables.push_back(std::move(layers));
  add_efficiency_table(doc, r.rf);
  doc.notes = st.notes;
  doc.notes.push_back("Times are per GPU on the busiest rank; the batch is the whole deployment's, split over DP replicas. 'once' is the embedding, final norm, lm_head and sampling.");
  return doc;
}

namespace {
std::vector<Column> plan_columns() {
  return {{"layout", "layout", Unit::text},
          {"gpus", "GPUs", Unit::count},
          {"batch", "batch", Unit::count},
          {"tpot_s", "TPOT", Unit::seconds},
          {"ttft_s", "TTFT", Unit::seconds},
          {"prefill_batch_s", "prefill of the batch", Unit::seconds, true},
          {"tokens_per_s_per_gpu", "tok/s/GPU", Unit::decimal},
          {"decode_tokens_per_s_per_gpu", "decode tok/s/GPU", Unit::decimal, true},
          {"requests_per_s", "req/s", Unit::decimal},
          {"gpus_for_rate", "GPUs for the rate", Unit::count, true},
          {"max_sequences", "max sequences", Unit::count, true},
          {"memory_limited", "batch: most that fit", Unit::text, true},
          {"meets", "meets targets", Unit::text},
          {"pareto", "Pareto", Unit::text, true},
          {"why", "why not", Unit::text, true}};
}
std::vector<Value> plan_cells(const PlanRow& r) {
  return {to_string(r.par), r.gpus, r.batch, r.tpot.value, r.ttft.value, r.prefill_batch.value, r.tokens_per_s_per_gpu, r.decode_tokens_per_s_per_gpu,
          r.requests_per_s, r.gpus_for_rate > 0 ? Value{r.gpus_for_rate} : Value{}, r.max_sequences, r.memory_limited, r.meets, r.pareto, r.why.empty() ? Value{} : Value{r.why}};
}
}  // namespace

Table plan_rows_table(const std::string& name, const std::string& title, const std::vector<const PlanRow*>& rows) {
  Table t{.name = name, .title = title, .columns = plan_columns(), .rows = {}};
  for (const PlanRow* r : rows) t.rows.push_back(plan_cells(*r));
  return t;
}

std::vector<const PlanRow*> pareto_rows(const PlanResult& st) {
  std::vector<const PlanRow*> front;
  for (const PlanRow& row : st.rows)
    if (row.pareto) front.push_back(&row);
  std::sort(front.begin(), front.end(), [](const PlanRow* a, const PlanRow* b) { return a->tpot < b->tpot; });
  return front;
}

namespace {

// The parts of the layout a plan holds, as "TP4 EP1" (none: "-", every part searched).
std::string held_layout(const PlanRequest& req) {
  std::string out;
  for (auto [name, v] : {std::pair{"TP", req.tp}, std::pair{"DP", req.dp}, std::pair{"EP", req.ep}})
    if (v > 0) out += fmt::format("{}{}{}", out.empty() ? "" : " ", name, v);
  return out.empty() ? "-" : out;
}

}  // namespace

Document plan_document(const ModelSpec& m, const RooflineUsed& r, const PlanRequest& req, const PlanResult& st, const std::string& engine) {
  Document doc;
  doc.title = fmt::format("Serving plan for {} on {}: {} in / {} out", m.name, r.hw.name, req.isl, req.osl);
  doc.fields = {{"model", "model", m.name, Unit::text}};
  add_roofline_fields(doc, r);
  auto opt = [](Seconds s) { return s.value > 0 ? Value{s.value} : Value{}; };
  doc.fields.insert(doc.fields.end(), {
      {"engine", "engine", engine, Unit::text},
      {"isl_tokens", "input tokens per request", req.isl, Unit::count},
      {"osl_tokens", "output tokens per request", req.osl, Unit::count},
      {"ttft_limit_s", "TTFT target", opt(req.ttft_limit), Unit::seconds},
      {"tpot_limit_s", "TPOT target", opt(req.tpot_limit), Unit::seconds},
      {"max_gpus", "GPU budget", req.max_gpus, Unit::count},
      {"held_layout", "layout held (the rest searched)", held_layout(req), Unit::text},
      {"rate_requests_per_s", "request rate", req.rate > 0 ? Value{req.rate} : Value{}, Unit::decimal},
      {"mtp_draft_tokens", "MTP draft tokens", req.base.mtp_draft, Unit::count},
      {"candidates", "layouts x batches that fit", static_cast<std::int64_t>(st.rows.size()), Unit::count},
      {"best_layout", "best layout (none: no layout meets the targets)", st.best ? Value{to_string(st.rows[*st.best].par)} : Value{}, Unit::text},
      {"best_batch", "its batch", st.best ? Value{st.rows[*st.best].batch} : Value{}, Unit::count},
      {"best_tokens_per_s_per_gpu", "its output tok/s per GPU", st.best ? Value{st.rows[*st.best].tokens_per_s_per_gpu} : Value{}, Unit::decimal},
      {"best_tpot_s", "its TPOT", st.best ? Value{st.rows[*st.best].tpot.value} : Value{}, Unit::seconds},
      {"best_ttft_s", "its TTFT", st.best ? Value{st.rows[*st.best].ttft.value} : Value{}, Unit::seconds},
      {"fewest_gpus_for_rate", "fewest GPUs for the rate", st.fewest_for_rate ? Value{st.rows[*st.fewest_for_rate].gpus_for_rate} : Value{}, Unit::count},
      {"fewest_gpus_layout", "as", st.fewest_for_rate ? fmt::format("{} x {} ({} per replica, batch {})", st.rows[*st.fewest_for_rate].gpus_for_rate / st.rows[*st.fewest_for_rate].gpus,
                                                                   to_string(st.rows[*st.fewest_for_rate].par), st.rows[*st.fewest_for_rate].gpus, st.rows[*st.fewest_for_rate].batch)
                                                       : Value{}, Unit::text},
  });
  doc.tables.push_back(plan_rows_table("pareto", "Pareto front: output tokens/s per GPU against TPOT", pareto_rows(st)));
  // Each layout's best batch under the targets (its smallest when none meets them).
  Table lay{.name = "layouts", .title = "Each layout at its best batch under the targets", .columns = plan_columns(), .rows = {}};
  for (std::size_t i = 0; i < st.rows.size();) {
    std::size_t j = i, pick = i;
    bool any = false;
    for (; j < st.rows.size() && st.rows[j].par == st.rows[i].par; ++j)
      if (st.rows[j].meets && (!any || st.rows[j].tokens_per_s_per_gpu > st.rows[pick].tokens_per_s_per_gpu)) pick = j, any = true;
    lay.rows.push_back(plan_cells(st.rows[pick]));
    i = j;
  }
  doc.tables.push_back(std::move(lay));
  if (!st.skipped.empty()) {
    Table sk{.name = "skipped", .title = "Layouts not evaluated", .columns = {{"layout", "layout", Unit::text}, {"reason", "reason", Unit::text}}, .rows = {}};
    for (const Skip& s : st.skipped) sk.rows.push_back({s.what, s.why.reason});
    doc.tables.push_back(std::move(sk));
  }
  doc.notes.push_back(fmt::format("TPOT: decode step at the mean context {} + {}/2 per token emitted; TTFT: prefill of one prompt per DP replica; "
                                  "tok/s/GPU: the batch's output tokens over its prefill and {} decode steps.", req.isl, req.osl, req.osl));
  doc.notes.push_back("Batches tried per DP replica: the powers of two below the largest asked for and it, and where memory cuts them short the most that fit at the input plus output length.");
  return doc;
}

Document memory_plan_document(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& base, std::int64_t sequences,
                              const std::vector<MemoryPlanRow>& rows) {
  Document doc;
  doc.title = fmt::format("Fewest {} GPUs that hold {} sequences of {} tokens of {}", hw.name, sequences, base.context, m.name);
  const MemoryPlanRow* answer = nullptr;
  for (const MemoryPlanRow& r : rows)
    if (r.result.fits() && r.result.max_sequences >= sequences && (!answer || r.result.max_sequences > answer->result.max_sequences)) answer = &r;
  doc.fields = {{"model", "model", m.name, Unit::text},
                {"gpu", "GPU", hw.name, Unit::text},
                {"sequences", "sequences", sequences, Unit::count},
                {"context_tokens", "tokens per sequence", base.context, Unit::count},
                {"kv_dtype", "KV dtype", std::string(to_string(base.kv_dtype)), Unit::text},
                {"fewest_gpus", "fewest GPUs", answer ? Value{answer->par.ranks()} : Value{}, Unit::count},
                {"layout", "layout (none: not within the budget)", answer ? Value{to_string(answer->par)} : Value{}, Unit::text}};
  Table t{.name = "layouts", .title = "Layouts tried, fewest GPUs first",
          .columns = {{"layout", "layout", Unit::text}, {"gpus", "GPUs", Unit::count}, {"weight_bytes_per_rank", "weights/GPU", Unit::bytes},
                      {"kv_pool_bytes_per_rank", "KV pool/GPU", Unit::bytes}, {"max_sequences", "sequences", Unit::count}, {"holds", "holds them", Unit::text},
                      {"reason", "reason", Unit::text, true}},
          .rows = {}};
  for (const MemoryPlanRow& r : rows)
    t.rows.push_back({to_string(r.par), r.par.ranks(), r.result.weight_bytes_per_rank.value, r.result.kv_pool_bytes_per_rank.value, r.result.max_sequences,
                      r.result.fits() && r.result.max_sequences >= sequences, r.result.fits() ? Value{} : Value{r.result.verdict.reason}});
  doc.tables.push_back(std::move(t));
  return doc;
}

}  // namespace mlaplan
