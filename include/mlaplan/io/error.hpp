#pragma once
// Bad input is an InputError: one line naming the file (or flag), the key and the value.
// The CLI prints it and exits with code 2.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mlaplan {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The lines fail_key and fail_flag throw, for warnings that name a key or flag without refusing it.
std::string key_message(std::string_view where, std::string_view key, std::string_view value, std::string_view problem);
std::string flag_message(std::string_view flag, std::string_view value, std::string_view problem);

// "<where>: key '<key>' = <value>: <problem>"
[[noreturn]] void fail_key(std::string_view where, std::string_view key, std::string_view value,
                           std::string_view problem);
// "<flag>: value '<value>': <problem>"
[[noreturn]] void fail_flag(std::string_view flag, std::string_view value, std::string_view problem);
// "<where>: <problem>"
[[noreturn]] void fail(std::string_view where, std::string_view problem);

// The closest candidate to `name` by edit distance, or "" when none is close.
std::string closest_match(std::string_view name, const std::vector<std::string>& candidates);
// "; did you mean '<closest>'?", or "" when no candidate is close: the tail of a refusal.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace mlaplan
