#pragma once
// The whole planner as a function: arguments in, output on the given streams, the exit code out
// (0 ok, 1 report --check drift or a failed validation, 2 bad input, 3 internal error). main.cpp
// and the tests call it; nothing it does depends on being a process of its own.
#include <ostream>
#include <string>
#include <vector>

namespace mlaplan::cli {

struct Context {
  std::ostream& out;
  std::ostream& err;
  bool err_is_terminal = false;  // progress lines only on a terminal
  std::string program;           // argv[0]: where to look for mlaplan-validate when /proc/self/exe is unreadable
  // Lines a run that still answers must say (a context past the model's, an undefined layout):
  // printed on `err` just before the output, dropped when the run ends in an error.
  std::vector<std::string> warnings;
};

// `args` without the program name.
int run(const std::vector<std::string>& args, Context& ctx);

}  // namespace mlaplan::cli
