// mlaplan-validate: the validation executable (microkernels, harness, fitter). The planner runs it
// for `mlaplan validate …`; it may use host-specific code, the planner may not.
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "validate_cli.hpp"

int main(int argc, char** argv) {
  return mlaplan::validate::run_validate_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr, isatty(STDERR_FILENO));
}
