// mlaplan cost: the op table of each path for a step, with totals, and the cheaper path.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "common.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/io/error.hpp"

namespace mlaplan::cli {

namespace {

struct CostFlags {
  ModelFlags model;
  LayoutFlags layout;
  RooflineFlags roofline;
  WorkloadFlags workload;
  std::string scope = "core";
  std::string format = "table";
};

// One path over the whole model: a plan per layer kind and how many layers have it.
struct ModelPath {
  PathKind kind;
  std::vector<std::pair<PathPlan, std::int64_t>> parts;
};

ModelPath model_path(const ModelSpec& m, const Workload& w, PathKind kind) {
  ModelPath mp{kind, {}};
  if (kind != PathKind::standard) {
    mp.parts.push_back({mla_path(m, w, kind), m.num_layers()});
    return mp;
  }
  std::int64_t full = 0;
  std::map<std::int64_t, std::int64_t> windows;
  for (const LayerSpec& l : m.layers) (l.sliding ? windows[l.window] : full) += 1;
  if (full > 0) mp.parts.push_back({standard_path(m, w, 0), full});
  for (const auto& [window, count] : windows) mp.parts.push_back({standard_path(m, w, window), count});
  return mp;
}

struct Totals {
  double flops = 0, bytes = 0, time_s = 0, compute_s = 0, memory_s = 0, workspace = 0;
};

Totals totals(const ModelPath& mp, const Roofline& rf) {
  Totals t;
  for (const auto& [plan, layers] : mp.parts) {
    const PathCost c = path_cost(plan, rf);
    const double n = static_cast<double>(layers);
    t.flops += c.flops * n;
    t.bytes += c.bytes * n;
    t.time_s += c.time_s * n;
    t.compute_s += c.compute_s * n;
    t.memory_s += c.memory_s * n;
    t.workspace = std::max(t.workspace, c.workspace_bytes);
  }
  return t;
}

Document cost_document(const CostFlags& f) {
  const ModelSpec m = f.model.load();
  const Parallelism par = f.layout.resolve(m);
  const ResolvedRoofline r = resolve_roofline(f.roofline);
  if (f.scope != "core" && f.scope != "layer") fail_flag("--scope", f.scope, "expected core or layer");
  Workload w = f.workload.resolve(m, par, r.compute);
  w.projections = f.scope == "layer";

  Document doc;
  doc.title = fmt::format("Attention cost of {} on {} ({} scope)", m.name, r.hw.name, f.scope);
  doc.fields = {
      {"model", "model", m.name, Unit::text},
      {"attention", "attention", std::string(to_string(m.attention)), Unit::text},
      {"layers", "layers", m.num_layers(), Unit::count},
      {"workload", "workload", describe(w), Unit::text},
      {"causal", "causal", w.causal, Unit::text},
      {"kv_dtype", "KV dtype", std::string(to_string(w.kv)), Unit::text},
      {"weight_dtype", "weights read as", std::string(to_string(w.weights)), Unit::text},
      {"tp", "tensor parallel", par.tp, Unit::count},
      {"dp", "data-parallel attention", par.dp, Unit::count},
      {"scope", "scope", f.scope, Unit::text},
  };
  add_roofline_fields(doc, r);

  Table summary{"path_summary", "Paths compared (whole model; per layer in the per-layer columns)",
                {{"path", "path", Unit::text},
                 {"flops", "FLOPs", Unit::flops},
                 {"bytes", "bytes", Unit::bytes},
                 {"intensity_flop_per_byte", "intensity", Unit::flop_per_byte},
                 {"bound", "bound", Unit::text},
                 {"workspace_bytes", "workspace", Unit::bytes},
                 {"time_s_per_layer", "time/layer", Unit::seconds},
                 {"time_s", "time", Unit::seconds}},
                {}};
  const double L = static_cast<double>(m.num_layers());
  std::string best_flops, best_time;
  double min_flops = INFINITY, min_time = INFINITY, max_flops = 0, max_time = 0;
  std::vector<Table> op_tables;
  for (PathKind k : paths_for(m)) {
    const ModelPath mp = model_path(m, w, k);
    const Totals t = totals(mp, r.rf);
    const std::string name(to_string(k));
    const std::string key = "paths." + name + ".";
    const double intensity = t.bytes > 0 ? t.flops / t.bytes : 0;
    const std::string bound = t.compute_s >= t.memory_s ? "compute" : "memory";
    for (Field fld : std::initializer_list<Field>{
             {key + "flops", "", t.flops, Unit::flops},
             {key + "flops_per_layer", "", t.flops / L, Unit::flops},
             {key + "bytes", "", t.bytes, Unit::bytes},
             {key + "bytes_per_layer", "", t.bytes / L, Unit::bytes},
             {key + "time_s", "", t.time_s, Unit::seconds},
             {key + "time_s_per_layer", "", t.time_s / L, Unit::seconds},
             {key + "intensity_flop_per_byte", "", intensity, Unit::flop_per_byte},
             {key + "intensity_flop_per_byte_per_layer", "", intensity, Unit::flop_per_byte},
             {key + "bound", "", bound, Unit::text},
             {key + "bound_per_layer", "", bound, Unit::text},
             {key + "workspace_bytes", "", t.workspace, Unit::bytes}}) {
      fld.json_only = true;
      doc.fields.push_back(fld);
    }
    summary.rows.push_back({name, t.flops, t.bytes, intensity, bound, t.workspace, t.time_s / L, t.time_s});
    if (k != PathKind::chunked) {  // chunked is expand with a bounded workspace, not a third choice
      if (t.flops < min_flops) min_flops = t.flops, best_flops = name;
      if (t.time_s < min_time) min_time = t.time_s, best_time = name;
      max_flops = std::max(max_flops, t.flops);
      max_time = std::max(max_time, t.time_s);
    }

    Table ops{key + "ops", fmt::format("{} path: ops per layer", name),
              {{"op", "op", Unit::text},
               {"kind", "kind", Unit::text},
               {"layers", "layers", Unit::count},
               {"flops", "FLOPs", Unit::flops},
               {"bytes_read", "read", Unit::bytes},
               {"bytes_written", "written", Unit::bytes},
               {"workspace_bytes", "workspace", Unit::bytes},
               {"intensity_flop_per_byte", "intensity", Unit::flop_per_byte},
               {"bound", "bound", Unit::text},
               {"time_s", "time", Unit::seconds}},
              {}};
    for (const auto& [plan, layers] : mp.parts) {
      for (const Op& op : plan) {
        const OpTime ot = op_time(op, r.rf);
        ops.rows.push_back({std::string(op.name), std::string(to_string(op.kind)), layers, op.flops, op.bytes_read,
                            op.bytes_written, op.workspace_bytes, ot.intensity,
                            std::string(ot.compute_bound ? "compute" : "memory"), ot.time_s});
      }
    }
    op_tables.push_back(std::move(ops));
  }
  doc.tables.push_back(std::move(summary));
  for (auto& t : op_tables) doc.tables.push_back(std::move(t));
  const bool several = paths_for(m).size() > 1;
  doc.fields.push_back({"cheaper_by_flops", "cheaper by FLOPs", several ? Value{best_flops} : Value{}, Unit::text});
  doc.fields.push_back({"flops_ratio", "  FLOPs of the other / cheaper", several ? Value{max_flops / min_flops} : Value{}, Unit::ratio});
  doc.fields.push_back({"cheaper_by_time", "cheaper by roofline time", several ? Value{best_time} : Value{}, Unit::text});
  doc.fields.push_back({"time_ratio", "  time of the slowest / fastest", several ? Value{max_time / min_time} : Value{}, Unit::ratio});

  doc.notes = m.notes;
  doc.notes.push_back(f.scope == "core" ? "Attention core only (the seeds' per-layer figures); --scope layer adds the q/kv/o projections, the same for every path."
                                        : "Layer scope: the q/kv/o projections are included and are the same for every path.");
  doc.notes.push_back("Weights an op reads are read once per step; caches once per sequence. Times are per rank; FLOPs and bytes are per rank (heads / TP, batch / DP).");
  if (m.is_mla()) doc.notes.push_back("The cheaper path is chosen among absorb, expand (and sparse); chunked is expand with its workspace bounded by --chunk.");
  return doc;
}

}  // namespace

void register_cost_command(CLI::App& app) {
  auto f = std::make_shared<CostFlags>();
  CLI::App* c = app.add_subcommand("cost", "FLOPs, bytes and roofline time of each attention path for one step");
  add_model_flags(c, f->model);
  add_layout_flags(c, f->layout, false);
  add_roofline_flags(c, f->roofline);
  add_workload_flags(c, f->workload);
  c->add_option("--scope", f->scope, "core (attention only) | layer (with projections)")->capture_default_str();
  add_format_flag(c, f->format);
  c->callback([f] { emit(cost_document(*f), f->format); });
}

}  // namespace mlaplan::cli
