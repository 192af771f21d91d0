// mlaplan validate: time the shipped microkernels on this machine's CPU (or a CUDA GPU), predict
// them with the cost model, and report the measured prediction error; or predict timings that
// others published (--against).
#include <cstdio>
#include <stdexcept>
#include <memory>
#include <unistd.h>

#include <fmt/format.h>

#include "against.hpp"
#include "common.hpp"
#include "harness.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/folder.hpp"
#include "mlaplan/io/registry.hpp"

#ifdef MLAPLAN_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace mlaplan::cli {

namespace {

struct ValidateFlags {
  std::string backend = "cpu";
  bool quick = false;
  std::uint64_t seed = 0;
  std::string out = "validate-results";
  std::string against;
  std::string gpu = "h800";
  double max_error = -1;  // < 0: no bound
};

void progress_line(const std::string& what) {
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%-78.78s", what.c_str());
}

void run(const ValidateFlags& f) {
  if (!f.against.empty()) {
    const validate::AgainstRun r = validate::validate_against(f.against, load_gpu(f.gpu));
    write_folder(f.out, r.files);
    const std::string text = fmt::format("{}wrote {}/: report.md, against.csv, errors.csv, fit.json, against.svg\n", r.summary, f.out);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  if (f.backend != "cpu" && f.backend != "cuda") fail_flag("--backend", f.backend, "expected cpu or cuda");
  validate::ValidationRun r;
  if (f.backend == "cuda") {
#ifdef MLAPLAN_HAVE_CUDA
    try {
      r = validate::run_cuda_validation(validate::CudaOptions{f.quick, f.seed}, progress_line);
    } catch (const std::runtime_error& e) {
      fail("--backend cuda", e.what());  // no device, no driver, or a failing CUDA call
    }
#else
    fail_flag("--backend", f.backend, "this build has no CUDA backend (nvcc was not found when it was configured)");
#endif
  } else {
    r = validate::run_cpu_validation(validate::CpuOptions{f.quick, f.seed}, progress_line);
  }
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%78s\r", "");
  write_folder(f.out, r.files);
  std::string text = fmt::format("{}wrote {}/\n", r.summary, f.out);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  if (!r.checks_passed) {
    std::fprintf(stderr, "mlaplan: validate: a kernel disagrees with its float64 reference (see %s/report.md)\n", f.out.c_str());
    throw ExitCode(1);
  }
  if (f.max_error >= 0 && r.held_out_median_ape > f.max_error) {
    std::fprintf(stderr, "mlaplan: validate: held-out median error %.1f%% exceeds --max-error %.1f%%\n", 100 * r.held_out_median_ape,
                 100 * f.max_error);
    throw ExitCode(1);
  }
}

}  // namespace

void register_validate_command(CLI::App& app) {
  auto f = std::make_shared<ValidateFlags>();
  CLI::App* c = app.add_subcommand("validate", "time the microkernels, predict them, and report the measured prediction error");
  c->add_option("--backend", f->backend, "cpu | cuda")->capture_default_str();
  c->add_flag("--quick", f->quick, "a small grid (CI)");
  c->add_option("--seed", f->seed, "random seed for the inputs (default: fresh)");
  c->add_option("--out,-o", f->out, "folder to write (replaced atomically)")->capture_default_str();
  c->add_option("--against", f->against, "a folder of published timings to predict (shared/reference/measured)");
  c->add_option("--gpu,-g", f->gpu, "the GPU those timings came from (with --against)")->capture_default_str();
  c->add_option("--max-error", f->max_error, "exit 1 when the held-out median error exceeds this fraction");
  c->callback([f] { run(*f); });
}

}  // namespace mlaplan::cli
