// mlaplan validate …: runs mlaplan-validate from beside the planner with the same arguments. The
// planner links no CUDA and no host-specific code; the validation executable may.
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "flags.hpp"
#include "mlaplan/io/error.hpp"

extern char** environ;

namespace mlaplan::cli {

namespace {

namespace fs = std::filesystem;

// The planner's own path: /proc/self/exe where there is one, else argv[0].
fs::path self_path(const std::string& argv0) {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::absolute(argv0, ec) : p;
}

int forward(const Context& ctx, const std::vector<std::string>& args) {
  const fs::path validate = self_path(ctx.program).parent_path() / "mlaplan-validate";
  std::error_code ec;
  if (!fs::is_regular_file(validate, ec) || access(validate.c_str(), X_OK) != 0)
    fail("validate", fmt::format("needs the validation executable {}, which is missing (build the mlaplan-validate target)", validate.string()));
  std::vector<std::string> all{validate.string()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  ctx.out.flush();
  ctx.err.flush();
  pid_t pid = 0;
  if (const int e = posix_spawn(&pid, validate.c_str(), nullptr, nullptr, argv.data(), environ); e != 0)
    fail("validate", fmt::format("cannot run {}: {}", validate.string(), std::strerror(e)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) fail("validate", fmt::format("lost {}: {}", validate.string(), std::strerror(errno)));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

void register_validate_command(CLI::App& app, Context& ctx) {
  CLI::App* c = app.add_subcommand("validate", "time the microkernels, predict them, and report the measured prediction error (runs mlaplan-validate)");
  c->prefix_command();  // everything after `validate` is mlaplan-validate's, --help included
  c->set_help_flag();
  c->callback([c, &ctx] { throw ExitCode(forward(ctx, c->remaining())); });
}

}  // namespace mlaplan::cli
