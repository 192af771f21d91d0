#include "app.hpp"

#include <exception>

#include <CLI/CLI.hpp>

#include "flags.hpp"
#include "mlaplan/io/error.hpp"

namespace mlaplan::cli {

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
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes arguments last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, ctx.out, ctx.err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, ctx.out, ctx.err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, ctx.out, ctx.err);
  } catch (const ExitCode& e) {
    return e.code;
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
