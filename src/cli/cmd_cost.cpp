// mlaplan cost: the op table of each path for a step, with totals, and the cheaper path.
#include <memory>
#include <optional>

#include <fmt/format.h>

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
  double workspace_gib = -1;  // < 0: the memory left after weights and the batch's KV
  std::string engine;         // dispatch rules judged (empty: every engine's newest)
  bool explain = false;
  std::string format = "table";
};

Document cost(const CostFlags& f, Context& ctx, bool chunk_given) {
  const ModelSpec m = f.model.load(ctx);
  if (chunk_given && !m.is_mla())
    fail_flag("--chunk", f.workload.chunk, fmt::format("{} is {}: it has no latent to expand in chunks", m.name, to_string(m.attention)));
  const Parallelism par = f.layout.resolve(m);
  const RooflineUsed r = f.roofline.resolve();
  if (f.scope != "core" && f.scope != "layer") fail_flag("--scope", f.scope, "expected core or layer");
  Workload w = f.workload.resolve(ctx, m, par, r.compute);
  w.projections = f.scope == "layer";
  std::optional<Bytes> budget;
  Bytes shortfall{0};
  if (const std::optional<Bytes> given = resolve_workspace_gib(f.workspace_gib)) {
    budget = given;
  } else if (m.is_mla()) {
    const WorkspaceBudget b = workspace_budget(m, r.hw, w, 0.9);
    budget = b.left;
    shortfall = b.shortfall;
  }
  const std::vector<double> chunks = f.workload.chunks();
  CostStudy st = cost_study(m, w, r.rf, budget, m.is_mla() ? resolve_policies(f.engine, m) : std::vector<EnginePolicy>{}, chunks);
  st.memory_shortfall = shortfall;
  Document doc = cost_document(m, r, w, st);
  if (f.explain) add_explain_table(doc, explain_cost(m, w, r.rf, st));
  return doc;
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
  c->add_option("--workspace-gib", f->workspace_gib,
                "memory a path's transient buffers may take per GPU (default: 0.9 x the GPU's memory - weights - the batch's KV cache)");
  add_dispatch_flag(c, f->engine);
  c->add_flag("--explain", f->explain, "each number with its formula and the values substituted");
  add_format_flag(c, f->format);
  c->callback([f, c, &ctx] { emit(ctx, cost(*f, ctx, c->count("--chunk") > 0), f->format); });
}

}  // namespace mlaplan::cli
