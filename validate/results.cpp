#include "results.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fit.hpp"
#include "mlaplan/core/crossover.hpp"
#include "mlaplan/io/hardware_json.hpp"
#include "mlaplan/io/svg.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan::validate {

std::string csv_of(const Table& t) { return render(t, Format::csv); }

std::string md_section(const Table& t) {
  const std::string table = render(t, Format::md);
  return "## " + t.title + "\n\n" + table.substr(table.find("\n|") + 1) + "\n";
}

svg::LinePlot prediction_plot(const std::string& title, std::vector<svg::Series> series) {
  svg::LinePlot plot;
  plot.title = title;
  plot.x_label = "measured time (s)";
  plot.y_label = "predicted time (s)";
  plot.log_x = plot.log_y = true;
  double lo = INFINITY, hi = 0;
  for (const svg::Series& s : series)
    for (const auto& [x, y] : s.points) lo = std::min({lo, x, y}), hi = std::max({hi, x, y});
  plot.series.push_back(svg::Series{.name = "predicted = measured", .points = {{lo, lo}, {hi, hi}}, .dashed = true, .color = 9});
  for (svg::Series& s : series) plot.series.push_back(std::move(s));
  return plot;
}

namespace {

Table checks_table(const std::vector<KernelCheck>& checks) {
  Table t{.name = "checks", .title = "Kernels against float64 references (poisoned outputs, fresh random inputs)",
          .columns = {{"kernel", "kernel", Unit::text}, {"max_rel_error", "max rel. error", Unit::none}, {"bound", "bound", Unit::none},
           {"unwritten_outputs", "unwritten outputs", Unit::text}, {"ok", "ok", Unit::text}},
          .rows = {}};
  for (const KernelCheck& c : checks) t.rows.push_back({c.kernel, c.max_rel_error, c.bound, c.poisoned_left, c.ok()});
  return t;
}

// "Quick run (`mlaplan validate --backend cpu --quick --seed 42`)." — the seed replays the inputs.
std::string run_line(const MeasuredRun& mr) {
  return fmt::format("{} run (`{}{} --seed {}`).", mr.quick ? "Quick" : "Full", mr.command, mr.quick ? " --quick" : "", mr.seed);
}

std::string header(const MeasuredRun& mr) { return fmt::format("# {}\n\n{}\n\nMachine: {}.\n\n", mr.title, run_line(mr), mr.machine); }

}  // namespace

double measured_crossover(const CrossoverSweep& sw) {
  std::vector<std::pair<double, double>> curve;  // (Q, log(T_expand / T_absorb))
  for (const auto& [q, ta, te] : sw.points) curve.push_back({q, std::log(te / ta)});
  if (!curve.empty() && curve.front().second <= 0) return 0;
  for (std::size_t i = 1; i < curve.size(); ++i)
    if (curve[i - 1].second > 0 && curve[i].second <= 0) {
      const double a = std::log(curve[i - 1].first), b = std::log(curve[i].first);
      const double t = curve[i - 1].second / (curve[i - 1].second - curve[i].second);
      return std::exp(a + t * (b - a));
    }
  return NAN;
}

ValidationRun finish_validation(MeasuredRun&& mr) {
  ValidationRun run;
  run.checks_passed = std::all_of(mr.checks.begin(), mr.checks.end(), [](const KernelCheck& c) { return c.ok(); });
  const Table check_t = checks_table(mr.checks);
  if (!run.checks_passed) {
    // A kernel that disagrees with float64 is not timed: its times would describe a wrong kernel.
    std::string md = header(mr) + "## Summary\n\n- Kernels against float64 references: **FAILURES**; nothing was timed.\n\n";
    md += md_section(check_t);
    run.files = {{"report.md", md}, {"checks.csv", csv_of(check_t)}};
    run.summary = run_line(mr) + "\n\n" + md.substr(md.find("## Summary"));
    return run;
  }
  const Roofline& rf = mr.rf;
  std::vector<Sample>& samples = mr.samples;

  // Efficiencies fitted on the training half; errors judged on the held-out half.
  // The bytes each op's repeated runs keep touching: against the cache level, where they stream from.
  auto working_set = [&](PathKind path, OpId op, const MlaShape& at, double bytes) { return mr.working_set ? mr.working_set(path, op, at, bytes) : bytes; };
  auto packed = [&](PathKind path, OpId op, const MlaShape& at) { return mr.packed ? mr.packed(path, op, at) : 0.0; };
  for (Sample& s : samples)
    if (s.op) {
      s.working_set = working_set(s.path, *s.op, s.shape, s.bytes.value);
      s.packed = packed(s.path, *s.op, s.shape);
    }
  std::vector<Sample> train;
  for (const Sample& s : samples)
    if (s.train) train.push_back(s);
  const std::vector<KernelFit> fits = fit_kernels(train, rf, mr.cache);
  // An op timed only in the held-out half has no fit: it is predicted at speed of light, and said so.
  std::vector<std::string> notes;
  std::map<std::string, int> unfitted_ops;
  for (Sample& s : samples)
    if (s.op) {
      const KernelFit* f = fit_for(fits, *s.op);
      s.fit = f ? predict(*f, s.flops, s.bytes, {.calls = s.calls, .packed = s.packed}, rf, stream_bandwidth(s.working_set, mr.cache, rf)) : s.sol;
      if (!f) ++unfitted_ops[s.op_name()];
    }
  for (const auto& [op, n] : unfitted_ops)
    notes.push_back(fmt::format("{} has no fit (no training sample): its {} held-out rows are predicted at speed of light.", op, n));
  // A path's fitted prediction is the sum of its ops' at the same shape.
  for (Sample& p : samples) {
    if (!p.is_path()) continue;
    for (const Sample& o : samples)
      if (o.op && o.path == p.path && o.shape.heads == p.shape.heads && o.shape.batch == p.shape.batch && o.shape.query == p.shape.query &&
          o.shape.prefix == p.shape.prefix)
        p.fit += o.fit;
  }
  std::map<std::string, std::vector<double>> err_sol, err_fit;
  std::vector<double> all_fit, all_sol, path_fit, spreads;
  for (const Sample& s : samples) {
    spreads.push_back(s.spread);
    if (s.train) continue;
    const double es = ape(s.sol, s.measured), ef = ape(s.fit, s.measured);
    err_sol[s.kind_name()].push_back(es);
    err_fit[s.kind_name()].push_back(ef);
    if (s.is_path()) {
      path_fit.push_back(ef);
    } else {
      all_fit.push_back(ef);
      all_sol.push_back(es);
    }
  }
  run.held_out_median_ape = ape_stats(all_fit).median;

  // The measured crossover against the predicted one.
  Table cross{.name = "crossover", .title = "Crossover Q*: measured against predicted",
              .columns = {{"heads", "heads/rank", Unit::count},
               {"batch", "batch", Unit::count},
               {"prefix", "prefix", Unit::count},
               {"measured_crossover_query", "measured Q*", Unit::decimal},
               {"predicted_fitted_crossover_query", "predicted (fitted)", Unit::decimal},
               {"predicted_sol_crossover_query", "predicted (speed of light)", Unit::decimal},
               {"flop_crossover_query", "FLOP-only", Unit::decimal},
               {"fitted_error", "fitted error", Unit::fraction}},
              .rows = {}};
  Table sweep{.name = "crossover_sweep", .title = "Path times across the crossover",
              .columns = {{"heads", "heads", Unit::count}, {"batch", "batch", Unit::count}, {"prefix", "prefix", Unit::count}, {"query", "Q", Unit::count},
               {"absorb_s", "absorb", Unit::seconds}, {"expand_s", "expand", Unit::seconds}},
              .rows = {}};
  for (const CrossoverSweep& sw : mr.sweeps) {
    for (const auto& [q, ta, te] : sw.points)
      sweep.rows.push_back({std::int64_t{sw.heads}, std::int64_t{sw.batch}, std::int64_t{sw.prefix}, std::int64_t{q}, ta.value, te.value});
    const double measured = measured_crossover(sw);
    const MlaShape s{.heads = sw.heads, .batch = sw.batch, .query = 1, .prefix = sw.prefix, .chunk = 1024};
    const ModelSpec m = model_for(s);
    const Workload w = workload_for(s, mr.compute, mr.kv, mr.weights);
    const MlaGeometry g = mla_geometry(m, w);
    // Each query length is costed as it was timed: the backend's split-KV partitions at that shape.
    auto plan_at = [&](const PathPlan& plan, double q, MlaShape& at) {
      at = s;
      at.query = static_cast<int>(std::lround(std::max(1.0, q)));
      Workload wq = w;
      wq.groups[0].query = q;
      wq.kv_splits = mr.kv_splits ? mr.kv_splits(at) : 1;
      return wq.kv_splits == 1 ? plan : mla_path(g, wq, plan.kind);
    };
    bool unfitted = false;
    const double fitted = crossover_query(g, w, sw.prefix, sw.batch, [&](const PathPlan& plan, double q) {
      MlaShape at;
      Seconds t{0};
      for (const Op& op : plan_at(plan, q, at)) {
        const KernelFit* f = fit_for(fits, op.id);
        unfitted = unfitted || !f;
        t += f ? predict(*f, op.flops, op.bytes(), {.calls = mr.calls ? mr.calls(plan.kind, op.id, at) : 0, .packed = packed(plan.kind, op.id, at)}, rf,
                         stream_bandwidth(working_set(plan.kind, op.id, at, op.bytes().value), mr.cache, rf))
               : op_time(op, rf).time;
      }
      return t;
    });
    if (unfitted) notes.push_back(fmt::format("The fitted crossover at {} heads, prefix {} is left empty: an op of its paths has no fit.", sw.heads, sw.prefix));
    const double sol = crossover_query(g, w, sw.prefix, sw.batch, [&](const PathPlan& plan, double q) {
      MlaShape at;
      return path_cost(plan_at(plan, q, at), rf).time;
    });
    const double flop = flop_crossover_query(g, sw.prefix, true);
    const bool known = !std::isnan(measured) && !unfitted;
    cross.rows.push_back({std::int64_t{sw.heads}, std::int64_t{sw.batch}, std::int64_t{sw.prefix}, std::isnan(measured) ? Value{} : Value{measured},
                          unfitted ? Value{} : finite_or_null(fitted), finite_or_null(sol), finite_or_null(flop),
                          known ? Value{std::fabs(fitted - measured) / measured} : Value{}});
  }

  Table ops{.name = "ops", .title = "Predicted and measured time per op and per path",
            .columns = {{"heads", "heads", Unit::count}, {"batch", "B", Unit::count}, {"query", "Q", Unit::count}, {"prefix", "P", Unit::count},
             {"path", "path", Unit::text}, {"op", "op", Unit::text}, {"kind", "kind", Unit::text}, {"flops", "FLOPs", Unit::flops},
             {"bytes", "bytes", Unit::bytes}, {"measured_s", "measured", Unit::seconds}, {"spread", "spread", Unit::fraction},
             {"predicted_sol_s", "SOL", Unit::seconds}, {"predicted_fit_s", "fitted", Unit::seconds}, {"split", "split", Unit::text}},
            .rows = {}};
  for (const Sample& s : samples)
    ops.rows.push_back({std::int64_t{s.shape.heads}, std::int64_t{s.shape.batch}, std::int64_t{s.shape.query}, std::int64_t{s.shape.prefix},
                        std::string(to_string(s.path)), s.op_name(), s.kind_name(), s.flops.value, s.bytes.value, s.measured.value, s.spread,
                        s.sol.value, s.fit.value, std::string(s.train ? "train" : "test")});
  Table errors{.name = "errors", .title = "Held-out error (test half): |predicted − measured| / measured",
               .columns = {{"kind", "op kind", Unit::text}, {"points", "points", Unit::count}, {"sol_median_ape", "SOL median", Unit::fraction},
                {"sol_p90_ape", "SOL p90", Unit::fraction}, {"fit_median_ape", "fitted median", Unit::fraction},
                {"fit_p90_ape", "fitted p90", Unit::fraction}},
               .rows = {}};
  for (const auto& [kind, e] : err_fit) {
    const ErrorStats sf = ape_stats(e), ss = ape_stats(err_sol[kind]);
    errors.rows.push_back({kind, static_cast<std::int64_t>(sf.n), ss.median, ss.p90, sf.median, sf.p90});
  }
  const ErrorStats all_f = ape_stats(all_fit), all_s = ape_stats(all_sol);
  errors.rows.push_back({std::string("all ops"), static_cast<std::int64_t>(all_f.n), all_s.median, all_s.p90, all_f.median, all_f.p90});
  Table fit_t{.name = "fit", .title = "Fitted efficiencies per kernel (training half)",
              .columns = {{"kind", "kernel", Unit::text}, {"eta_compute", "η compute", Unit::fraction}, {"eta_memory", "η memory", Unit::fraction},
               {"t0_s", "fixed cost", Unit::seconds}, {"t_call_s", "per call", Unit::seconds},
               {"eta_pack", "η packing", Unit::fraction}, {"train_points", "points", Unit::count}},
              .rows = {}};
  for (const KernelFit& f : fits)
    fit_t.rows.push_back({std::string(to_string(f.op)), f.eta_compute, f.eta_memory, f.t0.value, f.t_call.value,
                          f.eta_pack > 0 ? Value{f.eta_pack} : Value{}, std::int64_t{f.train_points}});

  // Predicted against measured on the held-out half: fitted per kernel kind, and speed of light.
  std::map<std::string, svg::Series> by_kind;
  int colour = 0;
  for (const Sample& s : samples) {
    if (s.train) continue;
    auto [it, fresh] = by_kind.try_emplace(
        s.kind_name(), svg::Series{.name = s.kind_name() + " (fitted)", .line = false, .markers = true, .color = colour, .marker = colour % 4});
    if (fresh) ++colour;
    it->second.points.push_back({s.measured.value, s.fit.value});
  }
  svg::Series sol{.name = "all ops, speed of light", .line = false, .markers = true, .color = 8, .marker = 0};
  for (const Sample& s : samples)
    if (!s.train && !s.is_path()) sol.points.push_back({s.measured.value, s.sol.value});
  std::vector<svg::Series> series;
  for (auto& [k, ser] : by_kind) series.push_back(ser);
  series.push_back(sol);
  const svg::LinePlot plot = prediction_plot(fmt::format("{}: predicted against measured time (held-out half)", mr.title), std::move(series));

  const ErrorStats spread_stats = ape_stats(spreads);
  std::string md = header(mr);
  md += "## Summary\n\n";
  md += "- Kernels against float64 references: all pass.\n";
  md += fmt::format("- Calibration: {}.\n", mr.calibration);
  for (const std::string& line : mr.extra_summary) md += "- " + line + "\n";
  md += fmt::format("- Held-out error over {} ops: median {:.1f}% (p90 {:.1f}%) with fitted efficiencies; {:.1f}% (p90 {:.1f}%) at speed of light.\n",
                    all_f.n, 100 * all_f.median, 100 * all_f.p90, 100 * all_s.median, 100 * all_s.p90);
  md += fmt::format("- Paths (sum of fitted ops against the path run whole): median {:.1f}% over {} held-out paths.\n",
                    100 * ape_stats(path_fit).median, path_fit.size());
  md += fmt::format("- Timing noise: median spread (IQR / median) {:.1f}%, p90 {:.1f}%.\n", 100 * spread_stats.median, 100 * spread_stats.p90);
  for (const std::string& n : notes) md += "- " + n + "\n";
  md += "\n";
  const std::size_t summary_end = md.size();
  md += md_section(errors);
  md += "![predicted against measured](predicted_vs_measured.svg)\n\n";
  md += md_section(fit_t);
  md += md_section(cross);
  md += md_section(sweep);
  md += md_section(check_t);
  md += fmt::format("Per-op rows are in `ops.csv` (train and test halves marked); the calibrated machine is `{}`, usable as `--gpu`.\n",
                    mr.hardware_file);

  nlohmann::ordered_json fitj;
  fitj["seed"] = mr.seed;
  fitj["machine"] = mr.machine;
  for (const KernelFit& f : fits)
    fitj["kernels"][std::string(to_string(f.op))] = {
        {"eta_compute", f.eta_compute}, {"eta_memory", f.eta_memory}, {"t0_s", f.t0.value}, {"t_call_s", f.t_call.value},
        {"eta_pack", f.eta_pack}};
  fitj["held_out_median_ape"] = all_f.median;
  fitj["held_out_p90_ape"] = all_f.p90;
  fitj["timing_spread_median"] = spread_stats.median;

  run.files = {{"report.md", md},
               {"ops.csv", csv_of(ops)},
               {"errors.csv", csv_of(errors)},
               {"crossover.csv", csv_of(cross)},
               {"crossover_sweep.csv", csv_of(sweep)},
               {"fit.csv", csv_of(fit_t)},
               {"checks.csv", csv_of(check_t)},
               {"fit.json", fitj.dump(2) + "\n"},
               {mr.hardware_file, hardware_to_json(mr.hardware).dump(2) + "\n"},
               {"predicted_vs_measured.svg", svg::render(plot)}};
  run.summary = run_line(mr) + "\n\n" + md.substr(md.find("## Summary"), summary_end - md.find("## Summary"));
  return run;
}

}  // namespace mlaplan::validate
