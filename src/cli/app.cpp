#include "app.hpp"

#include <algorithm>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "flags.hpp"
#include "mlaplan/io/error.hpp"

namespace mlaplan::cli {

namespace {

// An argument no flag of the command takes, named with the command and its nearest flag.
std::string unexpected(const CLI::App& app, const CLI::ExtrasError& e) {
  for (const CLI::App* sub : app.get_subcommands()) {
    const std::vector<std::string> extra = sub->remaining();
    if (extra.empty()) continue;
    std::vector<std::string> flags;
    for (const CLI::Option* o : sub->get_options()) flags.push_back(o->get_name());
    try {
      if (extra.front().rfind('-', 0) == 0) fail(extra.front(), fmt::format("not a flag of {}{}", sub->get_name(), did_you_mean(extra.front(), flags)));
      fail(extra.front(), fmt::format("unexpected argument: {} takes flags only (mlaplan {} --help lists them)", sub->get_name(), sub->get_name()));
    } catch (const InputError& line) {
      return line.what();
    }
  }
  return e.what();
}

}  // namespace

int run(const std::vector<std::string>& args, Context& ctx) {
  CLI::App app{"mlaplan: KV-cache, MLA path cost and capacity planner for LLM attention", "mlaplan"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mlaplan 0.1.0");
  register_list_commands(app, ctx);
  register_kv_command(app, ctx);
  register_capacity_command(app, ctx);
  register_cost_command(app, ctx);
  register_crossover_command(app, ctx);
  register_report_command(app, ctx);
  register_validate_command(app, ctx);
  register_step_command(app, ctx);
  register_plan_command(app, ctx);
  strict_numbers(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes arguments last first
  try {
    // The command comes first: a missing or misspelt one is named, with the commands there are.
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
    const std::string one_of = fmt::format("expected one of {} (mlaplan --help says what each does)", fmt::join(commands, ", "));
    if (args.empty()) fail("no command", one_of);
    if (args[0].rfind('-', 0) != 0 && std::find(commands.begin(), commands.end(), args[0]) == commands.end()) {
      const std::string near = closest_match(args[0], commands);
      fail(fmt::format("unknown command '{}'", args[0]), near.empty() ? one_of : fmt::format("did you mean '{}'?", near));
    }
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, ctx.out, ctx.err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, ctx.out, ctx.err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, ctx.out, ctx.err);
  } catch (const ExitCode& e) {
    return e.code;
  } catch (const CLI::ExtrasError& e) {
    ctx.err << "mlaplan: " << unexpected(app, e) << "\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    ctx.err << "mlaplan: " << e.what() << "\n";
    return 2;
  } catch (const InputError& e) {
    ctx.err << "mlaplan: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    ctx.err << "mlaplan: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}

}  // namespace mlaplan::cli
