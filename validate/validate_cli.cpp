#include "validate_cli.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "against.hpp"
#include "mlaplan/io/efficiency_json.hpp"
#include "cpu_backend.hpp"
#include "mlaplan/io/engine_logs.hpp"
#include "all_to_all.hpp"
#include "mlaplan/io/serving_measurements.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/folder.hpp"
#include "mlaplan/io/registry.hpp"
#include "results.hpp"
#ifdef MLAPLAN_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace mlaplan::validate {

namespace {

struct Flags {
  std::string backend = "cpu";
  bool quick = false;
  std::uint64_t seed = 0;
  std::string out = "validate-results";
  std::string against;
  std::string transfer;
  std::string write_profiles;  // --transfer: the folder the shipped efficiency profiles go to
  std::string gpu = "h800";
  std::string model = "deepseek-v3";
  double max_error = -1;  // < 0: no bound
  std::string engine_logs;
  std::string serving;
  std::string all_to_all;
  std::string format;     // --engine-logs, --serving and --all-to-all only
};

// Renders a reproduction of published rows, then exits 1 when --max-error is given and a row
// (`what` 'id') is off by more.
template <class Check>
int report_checks(const Flags& f, const std::vector<Check>& checks, const Document& doc, const char* what, std::ostream& out, std::ostream& err) {
  out << render(doc, parse_format(f.format.empty() ? "table" : f.format)) << std::flush;
  if (f.max_error < 0) return 0;
  int over = 0;
  for (const Check& c : checks)
    if (std::abs(c.error) > f.max_error) {
      err << fmt::format("mlaplan validate: {} '{}' is off by {:+.1f}%, beyond --max-error {:.1f}%\n", what, c.row.id, 100 * c.error, 100 * f.max_error);
      ++over;
    }
  return over > 0 ? 1 : 0;
}

int run(const Flags& f, const CLI::App& app, std::ostream& out, std::ostream& err, bool tty) {
  if (app.count("--max-error") && !(f.max_error >= 0 && f.max_error < 1e6))
    fail_flag("--max-error", fmt::format("{}", f.max_error), "expected a fraction from 0");
  const std::array<const char*, 3> tables{"--engine-logs", "--serving", "--all-to-all"};
  if (std::count_if(tables.begin(), tables.end(), [&](const char* m) { return app.count(m) > 0; }) > 1)
    fail_flag(app.count("--all-to-all") ? "--all-to-all" : "--serving", app.count("--all-to-all") ? f.all_to_all : f.serving,
              "give one of --engine-logs, --serving and --all-to-all");
  for (const char* mode : tables) {
    if (!app.count(mode)) continue;
    const std::string& dir = std::string(mode) == "--serving" ? f.serving : std::string(mode) == "--all-to-all" ? f.all_to_all : f.engine_logs;
    if (dir.empty()) fail_flag(mode, "", "expected a folder or CSV of measurements");
    for (const char* other : {"--backend", "--quick", "--seed", "--out", "--against", "--transfer", "--gpu", "--model"})
      if (app.count(other) > 0) fail_flag(other, app.get_option(other)->as<std::string>(), std::string("does not apply with ") + mode);
    if (std::string(mode) == "--serving") {
      const std::vector<ServingCheck> checks = check_serving(read_serving_measurements(dir));
      return report_checks(f, checks, serving_document(checks), "measurement", out, err);
    }
    if (std::string(mode) == "--all-to-all") {
      const std::vector<AllToAllCheck> checks = check_all_to_all(read_all_to_all_measurements(dir));
      const bool rows = f.format == "csv" || f.format == "json";  // the tables show the summary
      return report_checks(f, checks, all_to_all_document(checks, rows), "timing", out, err);
    }
    const std::vector<EngineLogCheck> checks = check_engine_logs(read_engine_logs(dir));
    return report_checks(f, checks, engine_logs_document(checks), "log", out, err);
  }
  if (!f.format.empty()) fail_flag("--format", f.format, "applies to --engine-logs, --serving and --all-to-all only");
  if (app.count("--against") && app.count("--transfer")) fail_flag("--transfer", f.transfer, "give --against DIR or --transfer ROOT, not both");
  if (app.count("--transfer") && app.count("--gpu")) fail_flag("--gpu", f.gpu, "--transfer takes each GPU from its folder's name");
  if (!app.count("--against") && !app.count("--transfer") && app.count("--model")) fail_flag("--model", f.model, "applies to --against and --transfer");
  if (!app.count("--transfer") && app.count("--write-profiles")) fail_flag("--write-profiles", f.write_profiles, "applies to --transfer");
  if (app.count("--against") || app.count("--transfer")) {
    const bool transfer = app.count("--transfer") > 0;
    const std::string& dir = transfer ? f.transfer : f.against;
    if (dir.empty()) fail_flag(transfer ? "--transfer" : "--against", dir, "expected a folder");
    check_output_folder(f.out);
    if (app.count("--write-profiles")) {
      if (f.write_profiles.empty()) fail_flag("--write-profiles", f.write_profiles, "expected a folder");
      check_output_folder(f.write_profiles, "--write-profiles");
    }
    const ModelSpec m = load_model(f.model);
    AgainstRun r = transfer ? validate_transfer(dir, m) : validate_against(dir, load_gpu(f.gpu), m);
    std::vector<std::pair<std::string, std::string>> profiles;
    if (app.count("--write-profiles")) {
      if (!r.profile_problem.empty()) fail(r.profile_problem, "a profile names the source and licence of every table it was fitted on");
      for (EfficiencyProfile& p : r.profiles) {
        p.written_by = fmt::format("mlaplan-validate --transfer {} --model {} --write-profiles {}", dir, f.model, f.write_profiles);
        profiles.push_back({p.name + ".json", efficiency_profile_json(p).dump(2) + "\n"});
      }
    }
    write_folder(f.out, r.files);
    if (!profiles.empty()) {
      write_folder(f.write_profiles, profiles, "--write-profiles");
      out << fmt::format("wrote {} efficiency profiles to {}/\n", profiles.size(), f.write_profiles);
    }
    std::string names;
    for (const auto& [name, text] : r.files) names += (names.empty() ? "" : ", ") + name;
    out << r.summary << fmt::format("wrote {}/: {}\n", f.out, names);
    return 0;
  }
  if (f.backend != "cpu" && f.backend != "cuda") fail_flag("--backend", f.backend, "expected cpu or cuda");
  if (f.max_error >= 0 && !(f.max_error < 1e6)) fail_flag("--max-error", fmt::format("{}", f.max_error), "expected a fraction");
  check_output_folder(f.out);  // before minutes of timing
  auto progress = [&](const std::string& what) {
    if (tty) err << fmt::format("\r{:<78.78}", what) << std::flush;
  };
  MeasuredRun measured;
  if (f.backend == "cuda") {
#ifdef MLAPLAN_HAVE_CUDA
    try {
      measured = measure_cuda(CudaOptions{f.quick, f.seed}, progress);
    } catch (const std::runtime_error& e) {
      fail("--backend cuda", e.what());  // no device, no driver, or a failing CUDA call
    }
#else
    fail_flag("--backend", f.backend, "this build has no CUDA backend (nvcc was not found when it was configured)");
#endif
  } else {
    measured = measure_cpu(CpuOptions{f.quick, f.seed}, progress);
  }
  if (tty) err << fmt::format("\r{:78}\r", "") << std::flush;
  const ValidationRun r = finish_validation(std::move(measured));
  write_folder(f.out, r.files);
  out << r.summary << fmt::format("wrote {}/\n", f.out) << std::flush;
  if (!r.checks_passed) {
    err << fmt::format("mlaplan validate: a kernel disagrees with its float64 reference (see {}/report.md)\n", f.out);
    return 1;
  }
  if (f.max_error >= 0 && r.held_out_median_ape > f.max_error) {
    err << fmt::format("mlaplan validate: held-out median error {:.1f}% exceeds --max-error {:.1f}%\n", 100 * r.held_out_median_ape,
                       100 * f.max_error);
    return 1;
  }
  return 0;
}

}  // namespace

int run_validate_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool err_is_terminal) {
  CLI::App app{"mlaplan validate: time the microkernels, predict them, and report the measured prediction error", "mlaplan validate"};
  Flags f;
  app.add_option("--backend", f.backend, "cpu | cuda")->capture_default_str();
  app.add_flag("--quick", f.quick, "a small grid (CI)");
  app.add_option("--seed", f.seed, "random seed for the inputs (default: fresh; the run reports the one it used)");
  app.add_option("--out,-o", f.out, "folder to write (replaced atomically)")->capture_default_str();
  app.add_option("--against", f.against, "a folder of timing CSVs to predict: kernel, latency_us and the family's shape (absorbed_decode | expanded_prefill: batch, kv_len | seq_len[, heads, query, kv_dtype]; indexer: batch, query, kv_len, heads, head_dim; sparse_decode: batch, query, kv_len, heads, topk, kv_dtype; attention_decode | attention: batch, kv_len | seq_len, heads, kv_heads, head_dim[, kv_dtype, kv_pool]; gemm: m, n, k; bmm: op, batch, heads; grouped_gemm: groups, m, n, k; elementwise: m, k; [dtype])");
  app.add_option("--gpu,-g", f.gpu, "the GPU those timings came from (with --against)")->capture_default_str();
  app.add_option("--transfer", f.transfer, "a folder of per-GPU timing folders (validate/published): leave-one-GPU-out errors");
  app.add_option("--write-profiles", f.write_profiles, "with --transfer: write the efficiency profiles cost uses by default (hardware/efficiency)");
  app.add_option("--model,-m", f.model, "the MLA model whose dimensions the kernels ran (with --against, --transfer)")->capture_default_str();
  app.add_option("--max-error", f.max_error, "exit 1 when the held-out median error (with --engine-logs, --serving, --all-to-all: any row's error) exceeds this fraction");
  app.add_option("--engine-logs", f.engine_logs, "a folder (or CSV) of engine KV-cache logs to reproduce (validate/published/engine-logs)");
  app.add_option("--serving", f.serving, "a folder (or CSV) of whole-system serving measurements to reproduce (validate/published/serving)");
  app.add_option("--all-to-all", f.all_to_all, "a folder (or CSV) of expert-parallel all-to-all timings to predict with each row's engine profile (validate/published/all-to-all)");
  app.add_option("--format", f.format, "with --engine-logs, --serving or --all-to-all: table | csv | md | json");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
    return run(f, app, out, err, err_is_terminal);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << "mlaplan validate: " << e.what() << "\n";
    return 2;
  } catch (const InputError& e) {
    err << "mlaplan validate: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "mlaplan validate: internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace mlaplan::validate
