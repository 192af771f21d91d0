// mlaplan cost: the op table of each path for a step, with totals, and the cheaper path.
#include <memory>

#include "flags.hpp"
#include "mlaplan/core/study.hpp"
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

Document cost(const CostFlags& f) {
  const ModelSpec m = f.model.load();
  const Parallelism par = f.layout.resolve(m);
  const RooflineUsed r = f.roofline.resolve();
  if (f.scope != "core" && f.scope != "layer") fail_flag("--scope", f.scope, "expected core or layer");
  Workload w = f.workload.resolve(m, par, r.compute);
  w.projections = f.scope == "layer";
  return cost_document(m, r, w, cost_study(m, w, r.rf));
}

}  // namespace

void register_cost_command(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<CostFlags>();
  CLI::App* c = app.add_subcommand("cost", "FLOPs, bytes and roofline time of each attention path for one step");
  add_model_flags(c, f->model);
  add_layout_flags(c, f->layout, false);
  add_roofline_flags(c, f->roofline);
  add_workload_flags(c, f->workload);
  c->add_option("--scope", f->scope, "core (attention only) | layer (with projections)")->capture_default_str();
  add_format_flag(c, f->format);
  c->callback([f, &ctx] { emit(ctx, cost(*f), f->format); });
}

}  // namespace mlaplan::cli
