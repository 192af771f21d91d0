// mlaplan: a cost model and capacity planner for LLM attention. Thin: flags in, one writer out.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "common.hpp"
#include "mlaplan/io/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"mlaplan: KV-cache, MLA path cost and capacity planner for LLM attention"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mlaplan 0.1.0");
  mlaplan::cli::register_list_commands(app);
  mlaplan::cli::register_kv_command(app);
  mlaplan::cli::register_capacity_command(app);
  mlaplan::cli::register_cost_command(app);
  mlaplan::cli::register_crossover_command(app);
  mlaplan::cli::register_report_command(app);
  mlaplan::cli::register_validate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const mlaplan::cli::ExitCode& e) {
    return e.code;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "mlaplan: %s\n", e.what());
    return 2;
  } catch (const mlaplan::InputError& e) {
    std::fprintf(stderr, "mlaplan: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlaplan: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
