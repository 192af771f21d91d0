#include "mlaplan/io/error.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace mlaplan {

namespace {
// Messages are one line: control characters from user input are shown as \xNN.
std::string one_line(std::string s) {
  std::string out;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out;
}
}  // namespace

std::string key_message(std::string_view where, std::string_view key, std::string_view value, std::string_view problem) {
  return one_line(fmt::format("{}: key '{}' = {}: {}", where, key, value, problem));
}

std::string flag_message(std::string_view flag, std::string_view value, std::string_view problem) {
  return one_line(fmt::format("{}: value '{}': {}", flag, value, problem));
}

void fail_key(std::string_view where, std::string_view key, std::string_view value, std::string_view problem) {
  throw InputError(key_message(where, key, value, problem));
}

void fail_flag(std::string_view flag, std::string_view value, std::string_view problem) {
  throw InputError(flag_message(flag, value, problem));
}

void fail(std::string_view where, std::string_view problem) { throw InputError(one_line(fmt::format("{}: {}", where, problem))); }

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string closest_match(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(3, name.size() / 2) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string near = closest_match(name, candidates);
  return near.empty() ? std::string{} : fmt::format("; did you mean '{}'?", near);
}

}  // namespace mlaplan
