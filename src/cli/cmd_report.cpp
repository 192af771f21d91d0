// mlaplan report: a sweep turned into a folder a person can read (report.md with SVG plots) and a
// machine can parse (CSV per table, report.json), written atomically; --check DIR recomputes a
// folder from its own spec.json and reports every number that moved.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "mlaplan/core/capacity.hpp"
#include "mlaplan/core/crossover.hpp"
#include "mlaplan/core/engines.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/folder.hpp"
#include "mlaplan/io/hf_config.hpp"
#include "mlaplan/io/registry.hpp"
#include "mlaplan/io/report_spec.hpp"
#include "mlaplan/io/svg.hpp"

namespace mlaplan::cli {

namespace fs = std::filesystem;

namespace {

struct ReportFlags {
  std::string spec_file;
  std::string out = "mlaplan-report";
  std::string check;
  std::vector<std::string> models, gpus, kv_dtypes;
  std::string layouts, contexts, prefixes, tps;
  std::int64_t batch = 0;
};

struct Loaded {
  std::string arg;
  ModelSpec spec;
};

std::string layout_label(const ReportLayout& l) { return fmt::format("TP{} DP{} EP{}", l.tp, l.dp, l.ep); }

// Why a layout cannot run a model, or "" when it can.
std::string layout_problem(const ModelSpec& m, const ReportLayout& l) {
  if (m.heads % l.tp != 0) return fmt::format("{} query heads are not divisible by TP {}", m.heads, l.tp);
  if (!m.is_mla() && m.kv_heads % l.tp != 0 && l.tp % m.kv_heads != 0) return fmt::format("{} KV heads cannot be split across TP {}", m.kv_heads, l.tp);
  if (l.ep > 1 && !m.moe) return "expert parallelism needs routed experts";
  if (l.ep > 1 && ((l.tp * l.dp) % l.ep != 0 || l.ep > m.moe->routed_experts)) return fmt::format("EP {} does not fit {} ranks and {} experts", l.ep, l.tp * l.dp, m.moe->routed_experts);
  return "";
}

// The built report: file name -> contents, in writing order.
struct Built {
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<Table> tables;  // the CSV tables, by name
  std::string summary;        // the summary bullets of report.md
};

class Progress {
 public:
  explicit Progress(std::size_t total) : total_(total), on_(total >= 64 && isatty(STDERR_FILENO)) {}
  void step(const std::string& what) {
    ++done_;
    if (on_ && (done_ % 8 == 0 || done_ == total_)) std::fprintf(stderr, "\r[%zu/%zu] %-40s", done_, total_, what.c_str());
  }
  ~Progress() {
    if (on_) std::fprintf(stderr, "\r%60s\r", "");
  }

 private:
  std::size_t total_, done_ = 0;
  bool on_;
};

std::string csv_of(const Table& t) { return render(Document{"", {}, {t}, {}}, Format::csv); }

// A markdown rendering of some columns of a table, preceded by a marker naming the CSV and the
// columns shown, so that a reader (or a test) can trace every number to the CSV.
std::string md_table(const Table& t, const std::vector<std::string>& keys, const std::vector<std::string>& shown,
                     const std::function<bool(const std::vector<Value>&)>& keep = nullptr) {
  Table p{t.name, "", {}, {}};
  std::vector<std::size_t> idx;
  for (const std::string& k : shown)
    for (std::size_t c = 0; c < t.columns.size(); ++c)
      if (t.columns[c].key == k) {
        idx.push_back(c);
        p.columns.push_back(t.columns[c]);
      }
  for (const auto& row : t.rows) {
    if (keep && !keep(row)) continue;
    std::vector<Value> r;
    for (std::size_t c : idx) r.push_back(row[c]);
    p.rows.push_back(std::move(r));
  }
  std::string keys_s, cols_s;
  for (const auto& k : keys) keys_s += (keys_s.empty() ? "" : ",") + k;
  for (const auto& k : shown) cols_s += (cols_s.empty() ? "" : ",") + k;
  std::string md = render(Document{"", {}, {p}, {}}, Format::md);
  // Drop the empty "### " heading the md writer puts before a table.
  const auto bar = md.find('|');
  if (bar != std::string::npos) md = md.substr(bar);
  return fmt::format("<!-- csv: {}.csv keys: {} columns: {} -->\n{}", t.name, keys_s, cols_s, md);
}

std::size_t col(const Table& t, const std::string& key) {
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c].key == key) return c;
  return t.columns.size();
}

double num(const Value& v) {
  if (auto i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (auto d = std::get_if<double>(&v)) return *d;
  return NAN;
}
std::string str(const Value& v) {
  if (auto s = std::get_if<std::string>(&v)) return *s;
  return {};
}

Built build_report(const ReportSpec& spec) {
  std::vector<Loaded> models, compare;
  for (const auto& a : spec.models) models.push_back({a, load_model(a)});
  std::set<std::string> seen;
  for (const auto& l : models) seen.insert(l.spec.name);
  for (const auto& a : spec.compare_models) {
    ModelSpec m = load_model(a);
    if (seen.insert(m.name).second) compare.push_back({a, std::move(m)});
  }
  std::vector<HardwareSpec> gpus;
  for (const auto& g : spec.gpus) gpus.push_back(load_gpu(g));
  const auto compute = parse_dtype(spec.dtype);
  if (!compute) fail_key("spec", "dtype", spec.dtype, "expected one of fp32, tf32, bf16, fp16, fp8, fp4");
  for (const HardwareSpec& g : gpus)
    if (!g.peak_flops(*compute)) fail_key(g.source, "dense_peak_tflops", spec.dtype, fmt::format("{} has no {} peak", g.name, spec.dtype));
  std::vector<KvDtype> kvs;
  for (const auto& k : spec.kv_dtypes) {
    const auto d = parse_kv_dtype(k);
    if (!d) fail_key("spec", "kv_dtypes", k, "expected fp32, bf16, fp16, fp8, fp8_flashmla or fp4");
    kvs.push_back(*d);
  }
  const std::vector<double> prefixes = parse_number_list("prefixes", spec.prefixes, 0, 4096);
  const std::vector<double> seq_contexts = parse_number_list("sequence_contexts", spec.sequence_contexts, 1, 4096);
  std::vector<std::string> notes;

  std::size_t work = 0;
  for (const auto& l : models) work += l.spec.is_mla() ? spec.crossover_tps.size() * kvs.size() * prefixes.size() * gpus.size() : 0;
  Progress progress(work);

  Built b;
  // KV bytes per token, per model and cache dtype.
  Table kv{"kv", "KV cache per token (all layers)",
           {{"model", "model", Unit::text},
            {"attention", "attention", Unit::text},
            {"kv_dtype", "KV dtype", Unit::text},
            {"bytes_per_token_per_layer", "bytes/token/layer", Unit::bytes},
            {"bytes_per_token", "bytes/token", Unit::bytes},
            {"indexer_bytes_per_token", "indexer bytes/token", Unit::bytes},
            {"cache_bytes_per_token", "cache bytes/token", Unit::bytes},
            {"mha_equivalent_bytes_per_token", "per-head MHA equivalent", Unit::bytes},
            {"mha_equivalent_ratio", "MHA eq. / cache", Unit::ratio}},
           {}};
  std::vector<const Loaded*> kv_models;
  for (const auto& l : models) kv_models.push_back(&l);
  for (const auto& l : compare) kv_models.push_back(&l);
  for (const Loaded* l : kv_models) {
    const ModelSpec& m = l->spec;
    for (KvDtype d : kvs) {
      if (d == KvDtype::fp8_flashmla && !m.is_mla()) continue;
      const Bytes per = kv_bytes_per_token(m, d).total(), ix = indexer_bytes_per_token(m);
      const Bytes mha = mha_equivalent_bytes_per_token_per_layer(m, d) * m.num_layers();
      kv.rows.push_back({l->arg, std::string(to_string(m.attention)), std::string(to_string(d)),
                         m.uniform_layers() ? Value{kv_bytes_per_token_per_layer(m, d).total().value} : Value{}, per.value, ix.value,
                         (per + ix).value, m.is_mla() ? Value{mha.value} : Value{},
                         m.is_mla() ? Value{static_cast<double>(mha.value) / static_cast<double>(per.value)} : Value{}});
    }
  }

  // Capacity per layout, dtype and context; and the denser context sweep for the plot.
  Table cap{"capacity", "Capacity per layout",
            {{"model", "model", Unit::text},
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
            {}};
  Table seqs{"sequences", "Concurrent sequences against context",
             {{"model", "model", Unit::text},
              {"gpu", "GPU", Unit::text},
              {"layout", "layout", Unit::text},
              {"kv_dtype", "KV dtype", Unit::text},
              {"context_tokens", "context", Unit::count},
              {"max_sequences", "sequences", Unit::count}},
             {}};
  for (const auto& l : models) {
    const ModelSpec& m = l.spec;
    for (const HardwareSpec& g : gpus) {
      for (const ReportLayout& lay : spec.layouts) {
        if (const std::string why = layout_problem(m, lay); !why.empty()) {
          notes.push_back(fmt::format("{} skipped for {}: {}.", layout_label(lay), l.arg, why));
          continue;
        }
        for (KvDtype d : kvs) {
          if (d == KvDtype::fp8_flashmla && !m.is_mla()) continue;
          CapacityRequest req;
          req.kv_dtype = d;
          req.weights = default_weight_plan(m);
          req.par = Parallelism{lay.tp, lay.dp, lay.ep};
          req.mem_util = spec.mem_util;
          req.block_size = spec.block_size;
          req.reserve = activation_reserve_estimate(m, req.par, 8192);
          for (std::int64_t ctx : spec.contexts) {
            req.context = ctx;
            const CapacityResult r = plan_capacity(m, g, req);
            cap.rows.push_back({l.arg, g.name, layout_label(lay), std::string(to_string(d)), ctx, r.weight_bytes_per_rank.value,
                                r.kv_pool_bytes_per_rank.value, r.kv_bytes_per_token_per_rank.value, r.max_tokens_per_rank,
                                r.max_tokens_cluster, r.max_sequences, r.fits, r.reason.empty() ? std::string("-") : r.reason});
          }
          for (double ctx : seq_contexts) {
            req.context = static_cast<std::int64_t>(ctx);
            seqs.rows.push_back({l.arg, g.name, layout_label(lay), std::string(to_string(d)), req.context, plan_capacity(m, g, req).max_sequences});
          }
        }
      }
    }
  }

  // Decode intensity per TP and dtype against the ridge point.
  Table inten{"intensity", "Decode arithmetic intensity (attention core)",
              {{"model", "model", Unit::text},
               {"gpu", "GPU", Unit::text},
               {"tp", "TP", Unit::count},
               {"kv_dtype", "KV dtype", Unit::text},
               {"path", "path", Unit::text},
               {"intensity_flop_per_byte", "intensity", Unit::flop_per_byte},
               {"ridge_flop_per_byte", "ridge", Unit::flop_per_byte},
               {"bound", "bound", Unit::text},
               {"time_s_per_layer", "time/layer", Unit::seconds}},
              {}};
  Table cross{"crossover", "Expand/absorb crossover",
              {{"model", "model", Unit::text},
               {"gpu", "GPU", Unit::text},
               {"kv_dtype", "KV dtype", Unit::text},
               {"tp", "TP", Unit::count},
               {"prefix", "prefix", Unit::count},
               {"flop_crossover_query", "Q* FLOPs", Unit::decimal},
               {"roofline_crossover_query", "Q* roofline", Unit::decimal}},
              {}};
  const auto& engines = engine_policies();
  for (const auto& e : engines) {
    cross.columns.push_back({std::string(e.key) + "_expands_from_query", std::string(e.key) + " expands from Q", Unit::count});
    cross.columns.push_back({std::string(e.key) + "_worst_penalty", std::string(e.key) + " worst", Unit::fraction});
    cross.columns.push_back({std::string(e.key) + "_worst_penalty_query", std::string(e.key) + " at Q", Unit::count});
  }
  Table ops{"roofline_ops", "Ops of each path on the roofline",
            {{"model", "model", Unit::text},
             {"gpu", "GPU", Unit::text},
             {"path", "path", Unit::text},
             {"op", "op", Unit::text},
             {"flops", "FLOPs", Unit::flops},
             {"bytes", "bytes", Unit::bytes},
             {"intensity_flop_per_byte", "intensity", Unit::flop_per_byte},
             {"time_s", "time", Unit::seconds},
             {"attained_flops_per_s", "attained", Unit::flops_per_s}},
            {}};
  for (const auto& l : models) {
    const ModelSpec& m = l.spec;
    for (const HardwareSpec& g : gpus) {
      const Roofline rf = roofline_for(g, *compute, g.efficiency);
      for (std::int64_t tp : spec.crossover_tps) {
        if (m.heads % tp != 0 || (!m.is_mla() && m.kv_heads % tp != 0 && tp % m.kv_heads != 0)) {
          notes.push_back(fmt::format("TP {} skipped for {}: {} query heads, {} KV heads.", tp, l.arg, m.heads, m.kv_heads));
          continue;
        }
        for (KvDtype d : kvs) {
          if (d == KvDtype::fp8_flashmla && !m.is_mla()) continue;
          Workload w;
          w.groups = {SequenceGroup{spec.batch, 1, static_cast<double>(spec.decode_context - 1)}};
          w.compute = *compute;
          w.kv = d;
          w.weights = attention_weight_dtype(m);
          w.tp = tp;
          for (PathKind k : paths_for(m)) {
            if (k == PathKind::chunked || k == PathKind::sparse) continue;
            const PathCost c = path_cost(k == PathKind::standard ? standard_path(m, w) : mla_path(m, w, k), rf);
            inten.rows.push_back({l.arg, g.name, tp, std::string(to_string(d)), std::string(to_string(k)), c.intensity(), rf.ridge(),
                                  std::string(c.compute_bound() ? "compute" : "memory"), c.time_s});
          }
          if (!m.is_mla()) continue;
          const MlaGeometry geo = mla_geometry(m, w);
          for (double p : prefixes) {
            progress.step(fmt::format("crossover {} TP{} P={}", l.arg, tp, p));
            std::vector<Value> row{l.arg, g.name, std::string(to_string(d)), tp, static_cast<std::int64_t>(p)};
            const double fq = flop_crossover_query(geo, p, w.causal), rq = roofline_crossover_query(m, w, p, spec.batch, rf);
            row.push_back(std::isfinite(fq) ? Value{fq} : Value{});
            row.push_back(std::isfinite(rq) ? Value{rq} : Value{});
            for (const EngineOutcome& o : engine_outcomes(geo, w, p, spec.batch, rf, spec.max_query)) {
              row.push_back(o.expands_from_query > 0 ? Value{o.expands_from_query} : Value{});
              row.push_back(o.worst_penalty);
              row.push_back(o.worst_penalty_query > 0 ? Value{o.worst_penalty_query} : Value{});
            }
            cross.rows.push_back(std::move(row));
          }
        }
      }
      // The roofline step's ops.
      Workload w;
      const std::int64_t tp = m.heads % spec.roofline_step.tp == 0 ? spec.roofline_step.tp : 1;
      w.groups = {SequenceGroup{spec.roofline_step.batch, spec.roofline_step.query, spec.roofline_step.prefix}};
      w.compute = *compute;
      w.kv = kvs.front() == KvDtype::fp8_flashmla && !m.is_mla() ? KvDtype::bf16 : kvs.front();
      w.weights = attention_weight_dtype(m);
      w.tp = tp;
      for (PathKind k : paths_for(m)) {
        const PathPlan plan = k == PathKind::standard ? standard_path(m, w) : mla_path(m, w, k);
        for (const Op& op : plan) {
          const OpTime t = op_time(op, rf);
          ops.rows.push_back({l.arg, g.name, std::string(to_string(k)), std::string(op.name), op.flops, op.bytes(), t.intensity, t.time_s,
                              t.time_s > 0 ? op.flops / t.time_s : 0.0});
        }
      }
    }
  }
  b.tables = {kv, cap, seqs, inten, cross, ops};

  // ---- plots (first model and GPU where one is needed) ----
  const ModelSpec& m0 = models.front().spec;
  const std::string a0 = models.front().arg;
  const HardwareSpec& g0 = gpus.front();
  const Roofline rf0 = roofline_for(g0, *compute, g0.efficiency);

  svg::LinePlot roof;
  roof.title = fmt::format("Roofline of {} ({}), ops of {}", g0.name, spec.dtype, a0);
  roof.x_label = "arithmetic intensity (FLOP/byte)";
  roof.y_label = "attainable throughput (FLOP/s)";
  roof.log_x = roof.log_y = true;
  svg::Series roofline_line{"roof: min(peak, I x bandwidth)", {}, true, false, false, 8};
  for (double e = -1; e <= 5.0001; e += 0.05) {
    const double i = std::pow(10.0, e);
    roofline_line.points.push_back({i, std::min(rf0.peak_flops_per_s * rf0.eta_compute, i * rf0.bandwidth_bytes_per_s * rf0.eta_memory)});
  }
  roof.series.push_back(roofline_line);
  int colour = 0;
  for (PathKind k : paths_for(m0)) {
    if (k == PathKind::chunked) continue;  // the expand ops again, chunk by chunk
    svg::Series s{fmt::format("{} path ops", to_string(k)), {}, false, true, false, colour, colour};
    ++colour;
    for (const auto& row : ops.rows)
      if (str(row[0]) == a0 && str(row[1]) == g0.name && str(row[2]) == to_string(k) && num(row[6]) > 0)
        s.points.push_back({num(row[6]), num(row[8])});
    roof.series.push_back(s);
  }
  roof.refs.push_back({true, rf0.ridge(), fmt::format("ridge {:.0f} FLOP/B", rf0.ridge())});

  // The crossover plot shows the first MLA model of the report.
  const Loaded* mla = nullptr;
  for (const auto& l : models)
    if (!mla && l.spec.is_mla()) mla = &l;
  svg::LinePlot xo;
  xo.title = fmt::format("Expand/absorb crossover Q* of {} on {}", mla ? mla->arg : a0, g0.name);
  xo.empty_message = fmt::format("No expand/absorb crossover: {} has no MLA latent to expand ({} attention).", a0, to_string(m0.attention));
  xo.x_label = "prefix P (tokens)";
  xo.y_label = "crossover query length Q* (tokens)";
  xo.log_x = xo.log_y = true;
  if (mla) {
    const std::string xa = mla->arg;
    const std::string kv0(to_string(kvs.front()));
    int c = 0;
    for (std::int64_t tp : spec.crossover_tps) {
      svg::Series s{fmt::format("TP {}", tp), {}, true, true, false, c++};
      for (const auto& row : cross.rows)
        if (str(row[0]) == xa && str(row[1]) == g0.name && str(row[2]) == kv0 && num(row[3]) == static_cast<double>(tp))
          s.points.push_back({num(row[4]), num(row[6])});
      if (!s.points.empty()) xo.series.push_back(s);
    }
    // Curves within 10% of each other are drawn as one line: "TP 1 ≈ TP 2 ≈ ..." (the CSV has each).
    svg::merge_identical(xo.series, 0.1, " ≈ ");
    for (svg::Series& s : xo.series) s.name = "roofline Q*, " + s.name;
    svg::Series f{"FLOP-only Q* (any TP)", {}, true, false, true, 8};
    for (const auto& row : cross.rows)
      if (str(row[0]) == xa && str(row[1]) == g0.name && str(row[2]) == kv0 && num(row[3]) == static_cast<double>(spec.crossover_tps.front()))
        f.points.push_back({num(row[4]), num(row[5])});
    xo.series.push_back(f);
    xo.refs = {{false, 1, "vLLM Triton threshold 1", false}, {false, 128, "vLLM FlashMLA threshold 128", true},
               {false, 512, "vLLM FA-MLA threshold 512", true}, {true, 8192, "SGLang: expand if P >= 8,192", false},
               {true, 10240, "TRT-LLM: expand if P + Q <= 10,240", false}};
  }

  svg::BarChart bars;
  bars.title = "KV cache bytes per token by model and cache dtype";
  bars.y_label = "bytes per token, all layers (B)";
  bars.log_y = true;
  for (KvDtype d : kvs) bars.bar_names.push_back(std::string(to_string(d)));
  bars.bar_names.push_back("per-head MHA equivalent, bf16");
  for (const Loaded* l : kv_models) {
    std::vector<double> v;
    for (KvDtype d : kvs)
      v.push_back(d == KvDtype::fp8_flashmla && !l->spec.is_mla() ? 0.0
                                                                   : static_cast<double>((kv_bytes_per_token(l->spec, d).total() + indexer_bytes_per_token(l->spec)).value));
    v.push_back(l->spec.is_mla() ? static_cast<double>((mha_equivalent_bytes_per_token_per_layer(l->spec, KvDtype::bf16) * l->spec.num_layers()).value) : 0.0);
    bars.groups.push_back({l->arg, v});
  }

  svg::LinePlot sq;
  sq.title = fmt::format("Concurrent sequences of {} on {} GPUs", a0, g0.name);
  sq.x_label = "context per sequence (tokens)";
  sq.y_label = "concurrent sequences (all GPUs)";
  sq.log_x = sq.log_y = true;
  {
    int c = 0;
    for (const ReportLayout& lay : spec.layouts) {
      if (!layout_problem(m0, lay).empty()) continue;
      for (KvDtype d : kvs) {
        if (d == KvDtype::fp8_flashmla && !m0.is_mla()) continue;
        svg::Series s{fmt::format("{}, {}", layout_label(lay), to_string(d)), {}, true, true, d != kvs.front(), c};
        for (const auto& row : seqs.rows)
          if (str(row[0]) == a0 && str(row[1]) == g0.name && str(row[2]) == layout_label(lay) && str(row[3]) == to_string(d) && num(row[5]) > 0)
            s.points.push_back({num(row[4]), num(row[5])});
        if (s.points.empty()) s.name += " (does not fit)";
        sq.series.push_back(s);
      }
      ++c;
    }
    svg::merge_identical(sq.series, 1e-12);
  }

  // ---- report.md ----
  std::string md = fmt::format("# {}\n\n", spec.title);
  md += fmt::format("Generated by `mlaplan report` from [`spec.json`](spec.json). Every table below is a view of a CSV in this "
                    "folder (named in the comment above it); `report.json` has everything. Compute dtype {}, KV dtypes {}, "
                    "η = speed of light unless the hardware file gives efficiencies.\n\n",
                    spec.dtype, [&] {
                      std::string s;
                      for (const auto& k : spec.kv_dtypes) s += (s.empty() ? "" : ", ") + k;
                      return s;
                    }());
  // Summary: the headline numbers of the first model on the first GPU.
  const std::size_t summary_start = md.size();
  {
    const Bytes per = kv_bytes_per_token(m0, KvDtype::bf16).total();
    md += "## Summary\n\n";
    md += fmt::format("- **{}** ({}, {} layers) caches {} per token in bf16", m0.name, to_string(m0.attention), m0.num_layers(), humanize(per.value, Unit::bytes));
    if (m0.is_mla())
      md += fmt::format("; the per-head MHA cache it replaces would be {} ({}).\n",
                        humanize((mha_equivalent_bytes_per_token_per_layer(m0, KvDtype::bf16) * m0.num_layers()).value, Unit::bytes),
                        humanize(static_cast<double>(mha_equivalent_bytes_per_token_per_layer(m0, KvDtype::bf16).value) /
                                     static_cast<double>(kv_bytes_per_token_per_layer(m0, KvDtype::bf16).total().value), Unit::ratio));
    else
      md += ".\n";
    const std::size_t ci = col(cap, "max_tokens_cluster"), si = col(cap, "max_sequences");
    const std::vector<Value>* best = nullptr;
    for (const auto& row : cap.rows)
      if (str(row[0]) == a0 && str(row[1]) == g0.name && (!best || num(row[si]) > num((*best)[si]))) best = &row;
    if (best)
      md += fmt::format("- Most concurrent sequences on {}: **{}** with {} and a {} cache at {} tokens ({} tokens in all).\n", g0.name,
                        humanize((*best)[si], Unit::count), str((*best)[2]), str((*best)[3]), humanize((*best)[4], Unit::count),
                        humanize((*best)[ci], Unit::count));
    if (m0.is_mla()) {
      double lo = INFINITY, hi = 0;
      for (const auto& row : cross.rows)
        if (str(row[0]) == a0 && str(row[1]) == g0.name && num(row[4]) >= 8192 && std::isfinite(num(row[6])))
          lo = std::min(lo, num(row[6])), hi = std::max(hi, num(row[6]));
      if (hi > 0)
        md += fmt::format("- Expanding beats absorbing for query blocks longer than **{:.0f}–{:.0f} tokens** once the prefix passes 8K "
                          "(roofline, batch {}); FLOP-only, the limit is {:.1f}.\n", lo, hi, spec.batch,
                          asymptotic_flop_crossover_query(mla_geometry(m0, Workload{})));
    }
    md += "\n";
  }
  b.summary = md.substr(summary_start);
  md += "## KV cache per token\n\n";
  md += "Bytes per token summed over layers (sliding windows not applied). For MLA the per-head MHA equivalent counts keys "
        "d_n + d_r wide and values d_v wide for every head.\n\n";
  md += md_table(kv, {"model", "kv_dtype"}, {"model", "attention", "kv_dtype", "bytes_per_token_per_layer", "bytes_per_token",
                                              "indexer_bytes_per_token", "mha_equivalent_bytes_per_token", "mha_equivalent_ratio"});
  md += "\n![KV bytes per token](kv_bytes.svg)\n\n";
  md += "## Capacity\n\n";
  md += fmt::format("Per GPU: memory × {} − weights − an activation reserve for an 8,192-token forward pass = KV pool; pages of {} tokens. "
                    "Under tensor parallelism the MLA latent is replicated on every GPU, so TP adds no KV capacity; data-parallel "
                    "attention gives every GPU its own sequences.\n\n",
                    spec.mem_util, spec.block_size);
  md += md_table(cap, {"model", "gpu", "layout", "kv_dtype", "context_tokens"},
                 {"model", "gpu", "layout", "kv_dtype", "context_tokens", "weight_bytes_per_rank", "kv_pool_bytes_per_rank",
                  "kv_bytes_per_token_per_rank", "max_tokens_cluster", "max_sequences", "fits"});
  md += "\n![Concurrent sequences against context](sequences.svg)\n\n";
  md += "## Decode arithmetic intensity\n\n";
  md += fmt::format("One decode step: {} sequences, one new token each after {} cached tokens; attention core per GPU. Intensity below "
                    "the ridge point is memory-bound.\n\n",
                    spec.batch, spec.decode_context - 1);
  md += md_table(inten, {"model", "gpu", "tp", "kv_dtype", "path"},
                 {"model", "gpu", "tp", "kv_dtype", "path", "intensity_flop_per_byte", "ridge_flop_per_byte", "bound", "time_s_per_layer"});
  md += fmt::format("\n![Roofline](roofline.svg)\n\nThe roofline places each op of each path for {} sequences of {} token(s) after {} "
                    "cached, TP {} (`roofline_ops.csv`).\n\n",
                    spec.roofline_step.batch, spec.roofline_step.query, spec.roofline_step.prefix, spec.roofline_step.tp);
  if (!cross.rows.empty()) {
    md += "## Expand/absorb crossover\n\n";
    md += fmt::format("Q*: the query-block length above which expanding the cache is cheaper than absorbing the up-projections, for {} "
                      "sequences per step. Beside it, the worst slowdown of each engine's fixed rule over query lengths 1 to {}. "
                      "Shown for the {} cache; `crossover.csv` has every dtype and the query length of each worst case.\n\n",
                      spec.batch, spec.max_query, spec.kv_dtypes.front());
    std::vector<std::string> shown{"model", "gpu", "tp", "prefix", "flop_crossover_query", "roofline_crossover_query"};
    for (const auto& e : engines) shown.push_back(std::string(e.key) + "_worst_penalty");
    const std::string kv0 = spec.kv_dtypes.front();
    md += md_table(cross, {"model", "gpu", "kv_dtype", "tp", "prefix"}, shown, [&](const std::vector<Value>& row) { return str(row[2]) == kv0; });
    md += "\n![Crossover against prefix](crossover.svg)\n\nEngine rules as modelled:\n\n";
    for (const auto& e : engines) md += fmt::format("- `{}` ({}): {}\n", e.key, e.name, e.rule);
    md += "\n";
  }
  md += "## Assumptions and sources\n\n";
  md += fmt::format("- Compute dtype {}; weights as the config's quantization says; activation reserve estimated for 8,192 tokens per forward pass.\n", spec.dtype);
  md += fmt::format("- Memory utilisation {}; page block {} tokens; decode context {}; batch {}.\n", spec.mem_util, spec.block_size, spec.decode_context, spec.batch);
  for (const HardwareSpec& g : gpus) {
    md += fmt::format("- {}: η compute {}, η memory {} ({}). Numbers from `{}`:\n", g.name, g.efficiency.compute, g.efficiency.memory, g.efficiency.source, g.source);
    for (const auto& [field, source] : g.sources) {
      const bool u = std::find(g.unconfirmed.begin(), g.unconfirmed.end(), field) != g.unconfirmed.end();
      md += fmt::format("  - {}{}: {}\n", field, u ? " (unconfirmed)" : "", source);
    }
  }
  for (const auto& n : notes) md += "- " + n + "\n";

  nlohmann::ordered_json j;
  j["spec"] = to_json(spec);
  j["tables"] = nlohmann::json::parse(render(Document{"", {}, b.tables, {}}, Format::json));
  j["notes"] = notes;

  b.files.push_back({"spec.json", to_json(spec).dump(2) + "\n"});
  b.files.push_back({"report.md", md});
  b.files.push_back({"report.json", j.dump(2) + "\n"});
  for (const Table& t : b.tables) b.files.push_back({t.name + ".csv", csv_of(t)});
  b.files.push_back({"roofline.svg", svg::render(roof)});
  b.files.push_back({"crossover.svg", svg::render(xo)});
  b.files.push_back({"kv_bytes.svg", svg::render(bars)});
  b.files.push_back({"sequences.svg", svg::render(sq)});
  return b;
}

bool as_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// Compares DIR's CSVs with a fresh computation of DIR's spec; prints what moved.
int check_folder(const fs::path& dir) {
  const fs::path spec_path = dir / "spec.json";
  const ReportSpec spec = parse_report_spec(load_json_file(spec_path), spec_path.string());
  const Built b = build_report(spec);
  std::size_t moved = 0, compared = 0;
  std::string out;
  for (const Table& t : b.tables) {
    const std::string file = t.name + ".csv";
    std::ifstream in(dir / file, std::ios::binary);
    if (!in) {
      out += fmt::format("{}: missing from {}\n", file, dir.string());
      ++moved;
      continue;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const auto old_rows = parse_csv(ss.str());
    const auto new_rows = parse_csv(csv_of(t));
    if (old_rows.empty() || old_rows[0] != new_rows[0]) {
      out += fmt::format("{}: header changed\n", file);
      ++moved;
      continue;
    }
    if (old_rows.size() != new_rows.size())
      out += fmt::format("{}: {} rows, now {}\n", file, old_rows.size() - 1, new_rows.size() - 1), ++moved;
    const auto& header = new_rows[0];
    for (std::size_t r = 1; r < std::min(old_rows.size(), new_rows.size()); ++r) {
      std::string key;
      for (std::size_t c = 0; c < header.size() && c < t.columns.size(); ++c)
        if (t.columns[c].unit == Unit::text && c < 4) key += (key.empty() ? "" : ", ") + header[c] + "=" + new_rows[r][c];
      for (std::size_t c = 0; c < header.size(); ++c) {
        ++compared;
        const std::string& o = c < old_rows[r].size() ? old_rows[r][c] : std::string{};
        const std::string& n = c < new_rows[r].size() ? new_rows[r][c] : std::string{};
        double ov = 0, nv = 0;
        bool same = o == n;
        if (!same && as_number(o, ov) && as_number(n, nv)) {
          const auto it = spec.column_tolerances.find(header[c]);
          const double tol = it != spec.column_tolerances.end() ? it->second : spec.tolerance;
          same = std::fabs(ov - nv) <= tol * std::max(std::fabs(ov), std::fabs(nv));
        }
        if (!same) {
          ++moved;
          out += fmt::format("{} row {} ({}): {}: {} -> {}\n", file, r, key, header[c], o, n);
        }
      }
    }
  }
  out += fmt::format("report --check {}: {} cells compared, {} moved\n", dir.string(), compared, moved);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return moved == 0 ? 0 : 1;
}

ReportSpec spec_from(const ReportFlags& f) {
  ReportSpec s;
  if (!f.spec_file.empty()) s = parse_report_spec(load_json_file(f.spec_file), f.spec_file);
  if (!f.models.empty()) s.models = f.models;
  if (!f.gpus.empty()) s.gpus = f.gpus;
  if (!f.kv_dtypes.empty()) s.kv_dtypes = f.kv_dtypes;
  if (!f.layouts.empty()) {
    s.layouts.clear();
    for (const std::string& item : split(f.layouts, ',')) {
      const auto parts = split(item, 'x');
      if (parts.size() != 3) fail_flag("--layouts", f.layouts, fmt::format("'{}' is not TPxDPxEP", item));
      ReportLayout l;
      l.tp = parse_int_list("--layouts", parts[0]).at(0);
      l.dp = parse_int_list("--layouts", parts[1]).at(0);
      l.ep = parse_int_list("--layouts", parts[2]).at(0);
      s.layouts.push_back(l);
    }
  }
  if (!f.contexts.empty()) {
    s.contexts.clear();
    for (double v : parse_number_list("--context", f.contexts, 1, 1000)) s.contexts.push_back(static_cast<std::int64_t>(v));
  }
  if (!f.prefixes.empty()) s.prefixes = f.prefixes;
  if (!f.tps.empty()) s.crossover_tps = parse_int_list("--tp", f.tps);
  if (f.batch != 0) s.batch = positive("--batch", f.batch, 10'000'000);
  if (!f.models.empty() && f.spec_file.empty()) {
    s.title = f.models.front();
    if (!f.gpus.empty()) s.title += " on " + f.gpus.front();
  }
  return s;
}

}  // namespace

void register_report_command(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* c = app.add_subcommand("report", "a sizing report folder: report.md with plots, CSVs, report.json; --check for CI");
  c->add_option("--spec", f->spec_file, "JSON spec of the sweep (flags below override its fields)");
  c->add_option("--out,-o", f->out, "folder to write (replaced atomically)")->capture_default_str();
  c->add_option("--check", f->check, "recompute DIR from its spec.json and compare with its CSVs; exit 1 on drift");
  c->add_option("--model,-m", f->models, "models (repeatable)");
  c->add_option("--gpu,-g", f->gpus, "GPUs (repeatable)");
  c->add_option("--kv-dtype", f->kv_dtypes, "cache dtypes (repeatable)");
  c->add_option("--layouts", f->layouts, "TPxDPxEP,... e.g. 8x1x1,1x8x8");
  c->add_option("--context", f->contexts, "contexts for the capacity table, e.g. 4096,32768");
  c->add_option("--prefix", f->prefixes, "crossover prefixes, e.g. 0:131072:x2");
  c->add_option("--tp", f->tps, "crossover and intensity TP sizes, e.g. 1,2,4,8");
  c->add_option("--batch", f->batch, "sequences per step for intensity and crossover");
  c->callback([f] {
    if (!f->check.empty()) throw ExitCode(check_folder(f->check));
    const Built b = build_report(spec_from(*f));
    write_folder(f->out, b.files);
    const std::string text = fmt::format("{}wrote {}/: report.md, {} CSVs, report.json, 4 SVG plots\n", b.summary, f->out, b.tables.size());
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace mlaplan::cli
