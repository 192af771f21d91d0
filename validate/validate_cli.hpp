#pragma once
// mlaplan-validate as a function: flags in, the run, the folder written; the exit code out: 0 ok,
// 1 a float64 check failed or --max-error was exceeded, 2 bad input or a CUDA backend that cannot run
// (no device or driver, a failing CUDA call), 3 an internal error. main.cpp and the tests call it.
#include <ostream>
#include <string>
#include <vector>

namespace mlaplan::validate {

// `args` without the program name. Progress goes to `err` when `err_is_terminal`.
int run_validate_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool err_is_terminal);

}  // namespace mlaplan::validate
