// mlaplan models / mlaplan gpus: what is bundled, with the key figures.
#include <memory>

#include "flags.hpp"
#include "mlaplan/io/documents.hpp"

namespace mlaplan::cli {

void register_list_commands(CLI::App& app, Context& ctx) {
  auto format = std::make_shared<std::string>("table");
  CLI::App* models = app.add_subcommand("models", "list the bundled model configs with their key figures");
  add_format_flag(models, *format);
  models->callback([format, &ctx] { emit(ctx, models_document(), *format); });

  auto gformat = std::make_shared<std::string>("table");
  CLI::App* gpus = app.add_subcommand("gpus", "list the bundled GPU specs with their key figures");
  add_format_flag(gpus, *gformat);
  gpus->callback([gformat, &ctx] { emit(ctx, gpus_document(), *gformat); });
}

}  // namespace mlaplan::cli
