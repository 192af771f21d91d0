#include "mlaplan/io/report.hpp"

#include <algorithm>
#include <optional>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mlaplan/core/crossover.hpp"
#include "mlaplan/io/documents.hpp"
#include "mlaplan/io/svg.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/documents.hpp"

namespace mlaplan {

namespace fs = std::filesystem;

namespace {

std::string csv_of(const Table& t) { return render(t, Format::csv); }
std::string str(KvDtype d) { return std::string(to_string(d)); }
std::string str(PathKind k) { return std::string(to_string(k)); }

// A markdown rendering of some columns of a table, preceded by a marker naming the CSV and the
// columns shown, so that a reader (or a test) can trace every number to the CSV.
std::string md_table(const Table& t, const std::vector<std::string>& keys, const std::vector<std::string>& shown) {
  Table p{.name = t.name, .title = "", .columns = {}, .rows = {}};
  std::vector<std::size_t> idx;
  for (const std::string& k : shown)
    for (std::size_t c = 0; c < t.columns.size(); ++c)
      if (t.columns[c].key == k) {
        idx.push_back(c);
        p.columns.push_back(t.columns[c]);
      }
  for (const auto& row : t.rows) {
    std::vector<Value> r;
    for (std::size_t c : idx) r.push_back(row[c]);
    p.rows.push_back(std::move(r));
  }
  std::string keys_s, cols_s;
  for (const auto& k : keys) keys_s += (keys_s.empty() ? "" : ",") + k;
  for (const auto& k : shown) cols_s += (cols_s.empty() ? "" : ",") + k;
  std::string md = render(p, Format::md);
  // Drop the empty "### " heading the md writer puts before a table.
  const auto bar = md.find('|');
  if (bar != std::string::npos) md = md.substr(bar);
  return fmt::format("<!-- csv: {}.csv keys: {} columns: {} -->\n{}", t.name, keys_s, cols_s, md);
}

Table kv_table(const ReportStudy& st) {
  Table t{.name = "kv", .title = "KV cache per token (all layers)",
          .columns = {{"model", "model", Unit::text},
           {"attention", "attention", Unit::text},
           {"kv_dtype", "KV dtype", Unit::text},
           {"bytes_per_token_per_layer", "bytes/token/layer", Unit::bytes},
           {"bytes_per_token", "bytes/token", Unit::bytes},
           {"indexer_bytes_per_token", "indexer bytes/token", Unit::bytes},
           {"cache_bytes_per_token", "cache bytes/token", Unit::bytes},
           {"mha_equivalent_bytes_per_token", "per-head MHA equivalent", Unit::bytes},
           {"mha_equivalent_ratio", "MHA eq. / cache", Unit::ratio}},
          .rows = {}};
  for (const KvRow& r : st.kv)
    t.rows.push_back({r.model->arg, std::string(to_string(r.model->spec.attention)), str(r.kv),
                      r.bytes_per_token_per_layer ? Value{r.bytes_per_token_per_layer->value} : Value{}, r.bytes_per_token.value,
                      r.indexer_bytes_per_token.value, r.cache_bytes_per_token.value,
                      r.mha_equivalent_bytes_per_token ? Value{r.mha_equivalent_bytes_per_token->value} : Value{},
                      r.mha_equivalent_ratio ? Value{*r.mha_equivalent_ratio} : Value{}});
  return t;
}

Table capacity_table(const ReportStudy& st) {
  Table t{.name = "capacity", .title = "Capacity per layout",
          .columns = {{"model", "model", Unit::text},
           {"gpu", "GPU", Unit::text},
           {"layout", "layout", Unit::text},
           {"kv_dtype", "KV dtype", Unit::text},
           {"context_tokens", "context", Unit::count},
           {"weight_bytes_per_rank", "weights/GPU", Unit::bytes},
           {"kv_pool_bytes_per_rank", "KV pool/GPU", Unit::bytes},
           {"kv_bytes_per_token_per_rank", "KV/token/GPU", Unit::bytes},
           {"max_tokens_per_rank", "tokens/GPU", Unit::count},
           {"max_tokens_cluster", "tokens (all GPUs)", Unit::count},
           {"max_sequences", "sequences", Unit::count},
           {"fits", "fits", Unit::text},
           {"reason", "reason", Unit::text}},
          .rows = {}};
  for (const CapacityRow& c : st.capacity) {
    const CapacityResult& r = c.result;
    t.rows.push_back({c.model->arg, c.gpu->name, to_string(c.par), str(c.kv), c.context, r.weight_bytes_per_rank.value,
                      r.kv_pool_bytes_per_rank.value, r.kv_bytes_per_token_per_rank.value, r.max_tokens_per_rank, r.max_tokens_cluster,
                      r.max_sequences, r.fits(), r.fits() ? std::string("-") : r.verdict.reason});
  }
  return t;
}

Table sequences_table(const ReportStudy& st) {
  Table t{.name = "sequences", .title = "Concurrent sequences against context",
          .columns = {{"model", "model", Unit::text},
           {"gpu", "GPU", Unit::text},
           {"layout", "layout", Unit::text},
           {"kv_dtype", "KV dtype", Unit::text},
           {"context_tokens", "context", Unit::count},
           {"max_sequences", "sequences", Unit::count}},
          .rows = {}};
  for (const CapacityRow& s : st.sequences)
    t.rows.push_back({s.model->arg, s.gpu->name, to_string(s.par), str(s.kv), s.context, s.result.max_sequences});
  return t;
}

Table intensity_table(const ReportStudy& st) {
  Table t{.name = "intensity", .title = "Decode arithmetic intensity (attention core)",
          .columns = {{"model", "model", Unit::text},
           {"gpu", "GPU", Unit::text},
           {"tp", "TP", Unit::count},
           {"kv_dtype", "KV dtype", Unit::text},
           {"path", "path", Unit::text},
           {"intensity_flop_per_byte", "intensity", Unit::flop_per_byte},
           {"ridge_flop_per_byte", "ridge", Unit::flop_per_byte},
           {"bound", "bound", Unit::text},
           {"time_s_per_layer", "time/layer", Unit::seconds}},
          .rows = {}};
  for (const IntensityRow& r : st.intensity)
    t.rows.push_back({r.model->arg, r.gpu->name, r.tp, str(r.kv), str(r.path), r.cost.intensity(), r.ridge,
                      std::string(r.cost.compute_bound() ? "compute" : "memory"), r.cost.time.value});
  return t;
}

Table crossover_table(const std::vector<const ReportCrossoverRow*>& rows, const std::vector<EnginePolicy>& policies) {
  Table t{.name = "crossover", .title = "Expand/absorb crossover",
          .columns = {{"model", "model", Unit::text},
           {"gpu", "GPU", Unit::text},
           {"kv_dtype", "KV dtype", Unit::text},
           {"tp", "TP", Unit::count},
           {"prefix", "prefix", Unit::count},
           {"flop_crossover_query", "Q* by FLOPs (tokens)", Unit::decimal},
           {"roofline_crossover_query", "Q* calibrated (tokens)", Unit::decimal},
           {"sol_crossover_query", "Q* at speed of light (tokens)", Unit::decimal}},
          .rows = {}};
  add_engine_columns(t, policies, true);
  for (const ReportCrossoverRow* x : rows) {
    const CrossoverRow& c = x->row;
    std::vector<Value> row{x->model->arg, x->gpu->name, str(c.kv), c.tp, static_cast<std::int64_t>(c.prefix),
                           finite_or_null(c.flop_crossover_query), finite_or_null(c.roofline_crossover_query), finite_or_null(c.sol_crossover_query)};
    add_engine_cells(row, c);
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table roofline_ops_table(const ReportStudy& st) {
  Table t{.name = "roofline_ops", .title = "Ops of each path on the roofline (one layer, one rank)",
          .columns = {{"model", "model", Unit::text},
           {"gpu", "GPU", Unit::text},
           {"path", "path", Unit::text},
           {"op", "op", Unit::text},
           {"flops_per_layer", "FLOPs/layer", Unit::flops},
           {"bytes_per_layer", "bytes/layer", Unit::bytes},
           {"intensity_flop_per_byte", "intensity", Unit::flop_per_byte},
           {"time_s_per_layer", "time/layer", Unit::seconds},
           {"attained_flops_per_s", "attained", Unit::flops_per_s}},
          .rows = {}};
  for (const RooflineOpRow& r : st.roofline_ops)
    t.rows.push_back({r.model->arg, r.gpu->name, str(r.path), std::string(r.op.name()), r.op.flops.value, r.op.bytes().value, r.time.intensity,
                      r.time.time.value, r.time.time.value > 0 ? (r.op.flops / r.time.time).value : 0.0});
  return t;
}

// The plot of an engine threshold for `batch` equal sequences per rank: query thresholds are
// horizontal lines (Q* axis); SGLang's prefix-sum threshold is a vertical line at threshold / batch;
// the DSA rules on packed or longest tokens apply to DSA models only (P + Q at threshold / batch, or
// at threshold). Rules with no constant draw nothing.
std::optional<svg::RefLine> threshold_line(const EnginePolicy& e, double batch, bool dsa) {
  const std::string t = humanize(e.threshold, Unit::count);
  if (dsa) {
    const std::string d = humanize(e.dsa_threshold, Unit::count);
    switch (e.dsa) {
      case DsaRule::packed_tokens:
        return svg::RefLine{.vertical = true, .value = e.dsa_threshold / batch,
                            .label = fmt::format("{}: dense if {} x (P + Q) <= {}", e.name, humanize(batch, Unit::count), d), .label_left = false};
      case DsaRule::max_kv:
        if (e.dsa_threshold <= 0) break;
        return svg::RefLine{.vertical = true, .value = e.dsa_threshold, .label = fmt::format("{}: dense if P + Q <= {}", e.name, d), .label_left = false};
      case DsaRule::sparse:
      case DsaRule::dense_short:
      case DsaRule::unsupported: break;
    }
  }
  switch (e.rule) {
    case ExtendRule::query_split:
      return svg::RefLine{.vertical = false, .value = e.threshold, .label = fmt::format("{} threshold {}", e.name, t), .label_left = e.threshold > 1};
    case ExtendRule::prefix_sum:
      return svg::RefLine{.vertical = true, .value = e.threshold / batch,
                          .label = fmt::format("{}: expand if {} x P >= {}", e.name, humanize(batch, Unit::count), t), .label_left = false};
    case ExtendRule::no_prefix:
    case ExtendRule::every_extend: break;
  }
  return std::nullopt;
}

}  // namespace

ReportFolder render_report(const ReportSpec& spec, const ReportStudy& st) {
  const ReportInputs& in = *st.in;
  ReportFolder b;
  std::vector<const ReportCrossoverRow*> all_cross, shown_cross;
  for (const ReportCrossoverRow& r : st.crossover) {
    all_cross.push_back(&r);
    if (r.row.kv == in.kvs.front()) shown_cross.push_back(&r);
  }
  const Table kv = kv_table(st), cap = capacity_table(st), seqs = sequences_table(st), inten = intensity_table(st),
              cross = crossover_table(all_cross, in.policies), ops = roofline_ops_table(st);
  b.tables = {kv, cap, seqs, inten, cross, ops};
  // The serving section: the first model on the first GPU.
  std::string serving_why;
  const std::optional<ServingReport> sv = serving_report(in, serving_why);
  if (sv) {
    Table step = step_components_table(sv->step);
    step.name = "serving_step";
    Table pareto = plan_rows_table("serving_pareto", "Pareto front of the serving plan", pareto_rows(sv->plan));
    b.tables.push_back(step);
    b.tables.push_back(pareto);
  }

  // ---- plots (first model and GPU where one is needed) ----
  const NamedModel& first = in.models.front();
  const ModelSpec& m0 = first.spec;
  const HardwareSpec& g0 = in.gpus.front();
  const Roofline rf0 = report_roofline(g0, in.compute, in.profiles);

  svg::LinePlot roof;
  roof.title = fmt::format("Roofline of {} ({}), ops of {}", g0.name, spec.dtype, first.arg);
  roof.x_label = "arithmetic intensity (FLOP/byte)";
  roof.y_label = "attainable throughput (FLOP/s)";
  roof.log_x = roof.log_y = true;
  svg::Series roofline_line{.name = "roof: min(peak, I x bandwidth)", .color = 8};
  for (double e = -1; e <= 5.0001; e += 0.05) {
    const double i = std::pow(10.0, e);
    roofline_line.points.push_back({i, std::min(rf0.attainable_compute().value, i * rf0.attainable_bandwidth().value)});
  }
  roof.series.push_back(roofline_line);
  int colour = 0;
  for (PathKind k : paths_for(m0)) {
    if (k == PathKind::chunked) continue;  // the expand ops again, chunk by chunk
    svg::Series s{.name = fmt::format("{} path ops", to_string(k)), .line = false, .markers = true, .color = colour, .marker = colour};
    ++colour;
    for (const RooflineOpRow& r : st.roofline_ops)
      if (r.model == &first && r.gpu == &g0 && r.path == k && r.time.intensity > 0)
        s.points.push_back({r.time.intensity, (r.op.flops / r.time.time).value});
    roof.series.push_back(s);
  }
  roof.refs.push_back({.vertical = true, .value = rf0.ridge(), .label = fmt::format("ridge {:.0f} FLOP/B", rf0.ridge()), .label_left = false});

  // The crossover plot shows the first MLA model of the report.
  const NamedModel* mla = nullptr;
  for (const NamedModel& l : in.models)
    if (!mla && l.spec.is_mla()) mla = &l;
  svg::LinePlot xo;
  xo.title = fmt::format("Expand/absorb crossover Q* of {} on {}", mla ? mla->arg : first.arg, g0.name);
  xo.empty_message = fmt::format("No expand/absorb crossover: {} has no MLA latent to expand ({} attention).", first.arg, to_string(m0.attention));
  xo.x_label = "prefix P (tokens)";
  xo.y_label = "crossover query length Q* (tokens)";
  xo.log_x = xo.log_y = true;
  if (mla) {
    auto on_plot = [&](const ReportCrossoverRow& r, std::int64_t tp) {
      return r.model == mla && r.gpu == &g0 && r.row.kv == in.kvs.front() && r.row.tp == tp;
    };
    int c = 0;
    for (std::int64_t tp : in.crossover_tps) {
      svg::Series s{.name = fmt::format("TP {}", tp), .line = true, .markers = true, .color = c++};
      for (const ReportCrossoverRow& r : st.crossover)
        if (on_plot(r, tp) && std::isfinite(r.row.roofline_crossover_query)) s.points.push_back({r.row.prefix, r.row.roofline_crossover_query});
      if (!s.points.empty()) xo.series.push_back(s);
    }
    // Curves within 10% of each other are drawn as one line: "TP 1 ≈ TP 2 ≈ ..." (the CSV has each).
    svg::merge_identical(xo.series, 0.1, " ≈ ");
    for (svg::Series& s : xo.series) s.name = (rf0.calibrated() ? "calibrated Q*, " : "roofline Q*, ") + s.name;
    if (rf0.calibrated()) {
      svg::Series sol{.name = fmt::format("speed-of-light Q*, TP {}", in.crossover_tps.front()), .dashed = true, .color = 7};
      for (const ReportCrossoverRow& r : st.crossover)
        if (on_plot(r, in.crossover_tps.front()) && std::isfinite(r.row.sol_crossover_query)) sol.points.push_back({r.row.prefix, r.row.sol_crossover_query});
      if (!sol.points.empty()) xo.series.push_back(sol);
    }
    svg::Series f{.name = "FLOP-only Q* (any TP)", .dashed = true, .color = 8};
    for (const ReportCrossoverRow& r : st.crossover)
      if (on_plot(r, in.crossover_tps.front()) && std::isfinite(r.row.flop_crossover_query)) f.points.push_back({r.row.prefix, r.row.flop_crossover_query});
    xo.series.push_back(f);
    const bool dsa = std::any_of(in.models.begin(), in.models.end(), [](const NamedModel& l) { return l.spec.indexer.has_value(); });
    for (const EnginePolicy& e : in.policies)
      if (const auto line = threshold_line(e, static_cast<double>(in.batch), dsa)) xo.refs.push_back(*line);
  }

  svg::BarChart bars;
  bars.title = "KV cache bytes per token by model and cache dtype";
  bars.y_label = "bytes per token, all layers (B)";
  bars.log_y = true;
  for (KvDtype d : in.kvs) bars.bar_names.push_back(str(d));
  bars.bar_names.push_back("per-head MHA equivalent, bf16");
  std::vector<const NamedModel*> kv_models;
  for (const NamedModel& l : in.models) kv_models.push_back(&l);
  for (const NamedModel& l : in.compare_models) kv_models.push_back(&l);
  for (const NamedModel* l : kv_models) {
    std::vector<double> v;
    for (KvDtype d : in.kvs) {
      double bytes = 0;
      for (const KvRow& r : st.kv)
        if (r.model == l && r.kv == d) bytes = static_cast<double>(r.cache_bytes_per_token.value);
      v.push_back(bytes);
    }
    v.push_back(l->spec.is_mla() ? static_cast<double>((mha_equivalent_bytes_per_token_per_layer(l->spec, KvDtype::bf16) * l->spec.num_layers()).value) : 0.0);
    bars.groups.push_back({l->arg, v});
  }

  svg::LinePlot sq;
  sq.title = fmt::format("Concurrent sequences of {} on {} GPUs", first.arg, g0.name);
  sq.x_label = "context per sequence (tokens)";
  sq.y_label = "concurrent sequences (all GPUs)";
  sq.log_x = sq.log_y = true;
  {
    int c = 0;
    for (const Parallelism& lay : in.layouts) {
      if (!check_layout(m0, lay).ok()) continue;
      for (KvDtype d : in.kvs) {
        if (d == KvDtype::fp8_flashmla && !m0.is_mla()) continue;
        svg::Series s{.name = fmt::format("{}, {}", to_string(lay), to_string(d)), .line = true, .markers = true, .dashed = d != in.kvs.front(), .color = c};
        for (const CapacityRow& r : st.sequences)
          if (r.model == &first && r.gpu == &g0 && r.par == lay && r.kv == d && r.result.max_sequences > 0)
            s.points.push_back({static_cast<double>(r.context), static_cast<double>(r.result.max_sequences)});
        if (s.points.empty()) s.name += " (does not fit)";
        sq.series.push_back(s);
      }
      ++c;
    }
    svg::merge_identical(sq.series, 1e-12);
  }

  // ---- report.md ----
  std::string kv_list;
  for (const auto& k : spec.kv_dtypes) kv_list += (kv_list.empty() ? "" : ", ") + k;
  std::string md = fmt::format("# {}\n\n", spec.title);
  md += fmt::format("Generated by `mlaplan report` from [`spec.json`](spec.json). Every table below is a view of a CSV in this "
                    "folder (named in the comment above it); `report.json` has everything. Compute dtype {}, KV dtypes {}, "
                    "η = speed of light unless the hardware file gives efficiencies.\n\n",
                    spec.dtype, kv_list);
  // Summary: the headline numbers of the first model on the first GPU.
  const std::size_t summary_start = md.size();
  {
    const Bytes per = kv_bytes_per_token(m0, KvDtype::bf16).total();
    md += "## Summary\n\n";
    md += fmt::format("- **{}** ({}, {} layers) caches {} per token in bf16", m0.name, to_string(m0.attention), m0.num_layers(), humanize(per.value, Unit::bytes));
    if (m0.is_mla()) {
      const Bytes mha = mha_equivalent_bytes_per_token_per_layer(m0, KvDtype::bf16);
      md += fmt::format("; the per-head MHA cache it replaces would be {} ({}).\n", humanize((mha * m0.num_layers()).value, Unit::bytes),
                        humanize(mha / kv_bytes_per_token_per_layer(m0, KvDtype::bf16).total(), Unit::ratio));
    } else {
      md += ".\n";
    }
    const CapacityRow* best = nullptr;
    for (const CapacityRow& r : st.capacity)
      if (r.model == &first && r.gpu == &g0 && (!best || r.result.max_sequences > best->result.max_sequences)) best = &r;
    if (best)
      md += fmt::format("- Most concurrent sequences on {}: **{}** with {} and a {} cache at {} tokens ({} tokens in all).\n", g0.name,
                        humanize(best->result.max_sequences, Unit::count), to_string(best->par), str(best->kv),
                        humanize(best->context, Unit::count), humanize(best->result.max_tokens_cluster, Unit::count));
    if (m0.is_mla()) {
      double lo = INFINITY, hi = 0;
      for (const ReportCrossoverRow& r : st.crossover)
        if (r.model == &first && r.gpu == &g0 && r.row.prefix >= 8192 && std::isfinite(r.row.roofline_crossover_query))
          lo = std::min(lo, r.row.roofline_crossover_query), hi = std::max(hi, r.row.roofline_crossover_query);
      if (hi > 0)
        md += fmt::format("- Expanding beats absorbing for query blocks longer than **{:.0f}–{:.0f} tokens** once the prefix passes 8K "
                          "({}, batch {}); FLOP-only, the limit is {:.1f}.\n",
                          lo, hi, rf0.calibrated() ? "calibrated" : "roofline", in.batch, asymptotic_flop_crossover_query(mla_geometry(m0, Workload{})));
    }
    md += "\n";
  }
  b.summary = md.substr(summary_start);
  md += "## KV cache per token\n\n";
  md += "Bytes per token summed over layers (sliding windows not applied). For MLA the per-head MHA equivalent counts keys "
        "d_n + d_r wide and values d_v wide for every head.\n\n";
  md += md_table(kv, {"model", "kv_dtype"},
                 {"model", "attention", "kv_dtype", "bytes_per_token_per_layer", "bytes_per_token", "indexer_bytes_per_token",
                  "mha_equivalent_bytes_per_token", "mha_equivalent_ratio"});
  md += "\n![KV bytes per token](kv_bytes.svg)\n\n";
  md += "## Capacity\n\n";
  if (in.engine)
    md += fmt::format("Per GPU, as {} allocates it (profile `{}`, {}): {}. `mlaplan capacity --engine {}` shows one layout's budget "
                      "line by line. Tokens are what the engine logs; sequences are whole sequences of the context.\n\n",
                      in.engine->name, in.engine->file, in.engine->label(), in.engine->summary, spec.engine);
  else
    md += fmt::format("Per GPU: memory × {} − weights − an activation reserve for a forward pass of {} tokens = KV pool; pages of {} tokens. "
                      "Under tensor parallelism the MLA latent is replicated on every GPU, so TP adds no KV capacity; data-parallel "
                      "attention gives every GPU its own sequences.\n\n",
                      in.mem_util, humanize(in.batched_tokens, Unit::count), in.block_size);
  md += md_table(cap, {"model", "gpu", "layout", "kv_dtype", "context_tokens"},
                 {"model", "gpu", "layout", "kv_dtype", "context_tokens", "weight_bytes_per_rank", "kv_pool_bytes_per_rank",
                  "kv_bytes_per_token_per_rank", "max_tokens_cluster", "max_sequences", "fits"});
  md += "\n![Concurrent sequences against context](sequences.svg)\n\n";
  md += "## Decode arithmetic intensity\n\n";
  md += fmt::format("One decode step: {} sequences, one new token each after {} cached tokens; attention core per GPU. Intensity below "
                    "the ridge point is memory-bound.\n\n",
                    in.batch, in.decode_context - 1);
  md += md_table(inten, {"model", "gpu", "tp", "kv_dtype", "path"},
                 {"model", "gpu", "tp", "kv_dtype", "path", "intensity_flop_per_byte", "ridge_flop_per_byte", "bound", "time_s_per_layer"});
  md += fmt::format("\n![Roofline](roofline.svg)\n\nThe roofline places each op of each path for {} sequences of {} token(s) after {} "
                    "cached, TP {} (`roofline_ops.csv`).\n\n",
                    in.roofline_step.batch, in.roofline_step.query, in.roofline_step.prefix, in.roofline_step.tp);
  if (!st.crossover.empty()) {
    md += "## Expand/absorb crossover\n\n";
    md += fmt::format("Q*: the query-block length above which expanding the cache is cheaper than absorbing the up-projections, for {} "
                      "sequences per step. Beside it, the worst slowdown of each engine's fixed rule over query lengths 1 to {}. "
                      "Shown for the {} cache; `crossover.csv` has every dtype and the query length of each worst case.\n\n",
                      in.batch, in.max_query, spec.kv_dtypes.front());
    md += fmt::format("Times on {} use the {}; the speed-of-light Q* is beside it.\n\n", g0.name, rf0.eta_source);
    std::vector<std::string> shown{"model", "gpu", "tp", "prefix", "flop_crossover_query", "roofline_crossover_query", "sol_crossover_query"};
    for (const auto& e : in.policies) shown.push_back(e.key + "_worst_penalty");
    md += md_table(crossover_table(shown_cross, in.policies), {"model", "gpu", "kv_dtype", "tp", "prefix"}, shown);
    md += "\n![Crossover against prefix](crossover.svg)\n\nEngine rules as modelled:\n\n";
    for (const auto& e : in.policies) md += fmt::format("- `{}` ({}, {}; backends {}): {}\n", e.key, e.name, e.engine, e.backends, describe(e));
    md += "\n";
  }
  svg::LinePlot pp;
  if (sv) {
    const PlanRequest& pr = sv->plan_request;
    const StepResult& d = sv->step;
    md += "## Serving\n\n";
    md += fmt::format("The whole model of {} on {} x {} ({}): a decode step of {} sequences at {} keys each (engine overheads: {}). "
                      "Step time {}, TPOT {}, {:.0f} output tokens/s per GPU; the batch's cache {} in memory. `mlaplan step` gives any "
                      "step; `serving_step.csv` has every component.\n\n",
                      sv->model->arg, d.gpus, sv->gpu->name, to_string(sv->step_request.w.par),
                      d.sequences < static_cast<double>(in.batch) ? fmt::format("{:.0f} (as many as fit; the spec's batch is {})", d.sequences, in.batch)
                                                                  : fmt::format("{}", in.batch),
                      in.decode_context, sv->step_request.overheads.source,
                      humanize(d.step_time.value, Unit::seconds), humanize(d.tpot.value, Unit::seconds), d.tokens_per_s_per_gpu,
                      d.fits.ok() ? "fits" : "does not fit (" + d.fits.reason + ")");
    md += md_table(b.tables[b.tables.size() - 2], {"component"}, {"component", "category", "layers", "time_s", "time_s_per_layer", "sol_time_s", "share", "bound"});
    const auto best = sv->plan.best;
    md += fmt::format("\nThe plan for {} in / {} out within {} GPUs and TPOT ≤ {}: {}. Its Pareto front (`serving_pareto.csv`; `mlaplan plan` "
                      "prints every layout):\n\n",
                      pr.isl, pr.osl, pr.max_gpus, humanize(pr.tpot_limit.value, Unit::seconds),
                      best ? fmt::format("best **{}** at batch {}, {:.0f} output tokens/s per GPU, TPOT {}", to_string(sv->plan.rows[*best].par),
                                         sv->plan.rows[*best].batch, sv->plan.rows[*best].tokens_per_s_per_gpu,
                                         humanize(sv->plan.rows[*best].tpot.value, Unit::seconds))
                           : std::string("no layout meets the target"));
    md += md_table(b.tables.back(), {"layout", "batch"}, {"layout", "gpus", "batch", "tpot_s", "ttft_s", "tokens_per_s_per_gpu", "meets"});
    md += "\n![Serving Pareto front](pareto.svg)\n\n";
    pp.title = fmt::format("Serving {} on {}: {} in / {} out", sv->model->arg, sv->gpu->name, pr.isl, pr.osl);
    pp.x_label = "TPOT (ms)";
    pp.y_label = "output tokens/s per GPU";
    pp.log_x = pp.log_y = true;
    svg::Series all{.name = "layouts x batches that fit", .line = false, .markers = true, .color = 8};
    for (const PlanRow& row : sv->plan.rows) all.points.push_back({row.tpot.value * 1e3, row.tokens_per_s_per_gpu});
    svg::Series front{.name = "Pareto front", .line = true, .markers = true, .color = 0, .marker = 1};
    for (const PlanRow* row : pareto_rows(sv->plan)) front.points.push_back({row->tpot.value * 1e3, row->tokens_per_s_per_gpu});
    pp.series = {all, front};
    pp.refs.push_back({.vertical = true, .value = pr.tpot_limit.value * 1e3, .label = fmt::format("TPOT target {} ms", pr.tpot_limit.value * 1e3)});
  } else {
    md += "## Serving\n\nNot evaluated: " + serving_why + ".\n\n";
  }
  md += "## Assumptions and sources\n\n";
  md += fmt::format("- Compute dtype {}; weights as the config's quantization says; activation reserve estimated for {} tokens per forward pass.\n",
                    spec.dtype, humanize(in.batched_tokens, Unit::count));
  if (in.engine)
    md += fmt::format("- Capacity by the {} profile `{}`; decode context {}; batch {}.\n", in.engine->name, in.engine->file, in.decode_context, in.batch);
  else
    md += fmt::format("- Memory utilisation {}; page block {} tokens; decode context {}; batch {}.\n", in.mem_util, in.block_size, in.decode_context, in.batch);
  for (const HardwareSpec& g : in.gpus) {
    md += fmt::format("- {}: η compute {}, η memory {} ({}). Numbers from `{}`:\n", g.name, g.efficiency.compute, g.efficiency.memory, g.efficiency.source, g.source);
    for (const auto& [field, source] : g.sources) {
      const bool u = std::find(g.unconfirmed.begin(), g.unconfirmed.end(), field) != g.unconfirmed.end();
      md += fmt::format("  - {}{}: {}\n", field, u ? " (unconfirmed)" : "", source);
    }
  }
  for (const auto& n : st.notes) md += "- " + n + "\n";

  nlohmann::ordered_json j;
  j["spec"] = to_json(spec);
  j["tables"] = nlohmann::json::parse(render(Document{.title = "", .fields = {}, .tables = b.tables, .notes = {}}, Format::json));
  j["notes"] = st.notes;

  b.files.push_back({"spec.json", to_json(spec).dump(2) + "\n"});
  b.files.push_back({"report.md", md});
  b.files.push_back({"report.json", j.dump(2) + "\n"});
  for (const Table& t : b.tables) b.files.push_back({t.name + ".csv", csv_of(t)});
  b.files.push_back({"roofline.svg", svg::render(roof)});
  b.files.push_back({"crossover.svg", svg::render(xo)});
  b.files.push_back({"kv_bytes.svg", svg::render(bars)});
  b.files.push_back({"sequences.svg", svg::render(sq)});
  if (sv) b.files.push_back({"pareto.svg", svg::render(pp)});
  return b;
}

namespace {

bool as_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

bool read_file(const fs::path& p, std::string& text) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

ReportCheck check_report(const fs::path& dir, const ReportSpec& spec, const ReportFolder& fresh) {
  ReportCheck c;
  auto moved = [&](const std::string& line) {
    ++c.moved;
    c.log += line + "\n";
  };
  // What --check reads must all be there: every table's CSV and report.md (plots and report.json are
  // renderings of the same numbers; golden folders may leave them out).
  std::vector<std::string> required{"report.md"};
  for (const Table& t : fresh.tables) required.push_back(t.name + ".csv");
  for (const std::string& name : required)
    if (std::error_code ec; !fs::is_regular_file(dir / name, ec)) moved(fmt::format("{}: missing from {}", name, dir.string()));

  for (const Table& t : fresh.tables) {
    const std::string file = t.name + ".csv";
    std::string old_text;
    if (!read_file(dir / file, old_text)) continue;  // reported as missing above
    const auto old_rows = parse_csv(old_text);
    const auto new_rows = parse_csv(csv_of(t));
    if (old_rows.empty() || old_rows[0] != new_rows[0]) {
      moved(fmt::format("{}: header changed", file));
      continue;
    }
    if (old_rows.size() != new_rows.size()) moved(fmt::format("{}: {} rows, now {}", file, old_rows.size() - 1, new_rows.size() - 1));
    const auto& header = new_rows[0];
    for (std::size_t r = 1; r < std::min(old_rows.size(), new_rows.size()); ++r) {
      std::string key;
      for (std::size_t col = 0; col < header.size() && col < t.columns.size(); ++col)
        if (t.columns[col].unit == Unit::text && col < 4) key += (key.empty() ? "" : ", ") + header[col] + "=" + new_rows[r][col];
      for (std::size_t col = 0; col < header.size(); ++col) {
        ++c.compared;
        const std::string& o = col < old_rows[r].size() ? old_rows[r][col] : std::string{};
        const std::string& n = col < new_rows[r].size() ? new_rows[r][col] : std::string{};
        double ov = 0, nv = 0;
        bool same = o == n;
        if (!same && as_number(o, ov) && as_number(n, nv)) {
          const auto it = spec.column_tolerances.find(header[col]);
          const double tol = it != spec.column_tolerances.end() ? it->second : spec.tolerance;
          same = std::fabs(ov - nv) <= tol * std::max(std::fabs(ov), std::fabs(nv));
        }
        if (!same) moved(fmt::format("{} row {} ({}): {}: {} -> {}", file, r, key, header[col], o, n));
      }
    }
  }

  // report.md has no timestamp: all of it must match, line by line.
  std::string old_md;
  for (const auto& [name, text] : fresh.files) {
    if (name != "report.md" || !read_file(dir / name, old_md)) continue;
    const auto a = lines_of(old_md), b = lines_of(text);
    for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      ++c.compared;
      const std::string o = i < a.size() ? a[i] : "(none)", n = i < b.size() ? b[i] : "(none)";
      if (o != n) moved(fmt::format("report.md line {}: {} -> {}", i + 1, o, n));
    }
  }
  c.log += fmt::format("report --check {}: {} cells and lines compared, {} moved\n", dir.string(), c.compared, c.moved);
  return c;
}

}  // namespace mlaplan
