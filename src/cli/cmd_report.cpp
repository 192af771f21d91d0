// mlaplan report: a sweep turned into a folder a person can read (report.md with SVG plots) and a
// machine can parse (CSV per table, report.json), written atomically; --check DIR recomputes a
// folder from its own spec.json and reports every number that moved.
#include <memory>

#include <fmt/format.h>

#include "flags.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/folder.hpp"
#include "mlaplan/io/hf_config.hpp"
#include "mlaplan/io/lists.hpp"
#include "mlaplan/io/report.hpp"

namespace mlaplan::cli {

namespace {

struct ReportFlags {
  std::string spec_file;
  std::string out = "mlaplan-report";
  std::string check;
  std::vector<std::string> models, gpus, kv_dtypes;
  std::string layouts, contexts, prefixes, tps;
  std::int64_t batch = 0;
  std::string engine;
};

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
      s.layouts.push_back({parse_int_list("--layouts", parts[0]).at(0), parse_int_list("--layouts", parts[1]).at(0),
                           parse_int_list("--layouts", parts[2]).at(0)});
    }
  }
  if (!f.contexts.empty()) {
    s.contexts.clear();
    for (double v : parse_number_list("--context", f.contexts, 1, 1000)) s.contexts.push_back(static_cast<std::int64_t>(v));
  }
  if (!f.prefixes.empty()) s.prefixes = f.prefixes;
  if (!f.tps.empty()) s.crossover_tps = parse_int_list("--tp", f.tps);
  if (f.batch != 0) s.batch = positive("--batch", f.batch, 10'000'000);
  if (!f.engine.empty()) {
    (void)load_engine(f.engine, "--engine");  // refused here under the flag's name
    s.engine = f.engine;
  }
  if (!f.models.empty() && f.spec_file.empty()) {
    s.title = f.models.front();
    if (!f.gpus.empty()) s.title += " on " + f.gpus.front();
  }
  return s;
}

// Progress on stderr when it is a terminal and the sweep is long.
Progress progress_to(Context& ctx) {
  if (!ctx.err_is_terminal) return {};
  return [&ctx](std::size_t done, std::size_t total) {
    if (total < 64 || (done % 8 != 0 && done != total)) return;
    ctx.err << fmt::format("\r[{}/{}] crossover", done, total) << (done == total ? fmt::format("\r{:40}\r", "") : "") << std::flush;
  };
}

ReportFolder build(const ReportSpec& spec, Context& ctx) {
  const ReportInputs in = resolve_report(spec);
  return render_report(spec, report_study(in, progress_to(ctx)));
}

}  // namespace

void register_report_command(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* c = app.add_subcommand("report", "a sizing report folder: report.md with plots, CSVs, report.json; --check for CI");
  c->add_option("--spec", f->spec_file, "JSON spec of the sweep (flags below override its fields)");
  c->add_option("--out,-o", f->out, "folder to write (replaced atomically)")->capture_default_str();
  c->add_option("--check", f->check, "recompute DIR from its spec.json and compare with its CSVs and report.md; exit 1 on drift");
  // The sweep's axes take a comma list as well as repeats: --model deepseek-v3,deepseek-r1.
  c->add_option("--model,-m", f->models, "models (repeatable, or a comma list)")->delimiter(',');
  c->add_option("--gpu,-g", f->gpus, "GPUs (repeatable, or a comma list)")->delimiter(',');
  c->add_option("--kv-dtype", f->kv_dtypes, "cache dtypes (repeatable, or a comma list)")->delimiter(',');
  c->add_option("--layouts", f->layouts, "TPxDPxEP,... e.g. 8x1x1,1x8x8");
  c->add_option("--context", f->contexts, "contexts for the capacity table, e.g. 4096,32768");
  c->add_option("--prefix", f->prefixes, "crossover prefixes, e.g. 0:131072:x2");
  c->add_option("--engine", f->engine, "capacity as vllm | sglang | trtllm[@VERSION] allocates it (engines/)");
  c->add_option("--tp", f->tps, "crossover and intensity TP sizes, e.g. 1,2,4,8");
  c->add_option("--batch", f->batch, "sequences per step for intensity and crossover");
  c->callback([f, c, &ctx] {
    if (c->count("--engine") && f->engine.empty()) fail_flag("--engine", "", "expected vllm, sglang or trtllm, optionally @VERSION");
    if (!f->check.empty()) {
      const std::string spec_path = f->check + "/spec.json";
      const ReportSpec spec = parse_report_spec(load_json_file(spec_path), spec_path);
      const ReportCheck r = check_report(f->check, spec, build(spec, ctx));
      ctx.out << r.log << std::flush;
      throw ExitCode(r.ok() ? 0 : 1);
    }
    const ReportFolder b = build(spec_from(*f), ctx);
    write_folder(f->out, b.files);
    ctx.out << b.summary << fmt::format("wrote {}/: report.md, {} CSVs, report.json, 4 SVG plots\n", f->out, b.tables.size()) << std::flush;
  });
}

}  // namespace mlaplan::cli
