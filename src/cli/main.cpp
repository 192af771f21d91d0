// mlaplan: a cost model and capacity planner for LLM attention. Thin: the program is cli::run.
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "app.hpp"

int main(int argc, char** argv) {
  mlaplan::cli::Context ctx{std::cout, std::cerr, isatty(STDERR_FILENO) != 0, argc > 0 ? argv[0] : "mlaplan", {}};
  return mlaplan::cli::run(std::vector<std::string>(argv + 1, argv + argc), ctx);
}
