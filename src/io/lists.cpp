#include "mlaplan/io/lists.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "mlaplan/io/error.hpp"

namespace mlaplan {

double parse_number(const char* flag, const std::string& whole, const std::string& s) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    fail_flag(flag, whole, fmt::format("'{}' is not a number", s));
  }
  if (used != s.size() || !std::isfinite(v)) fail_flag(flag, whole, fmt::format("'{}' is not a finite number", s));
  return v;
}

double parse_count(const char* flag, const std::string& whole, const std::string& item) {
  double scale = 1;
  switch (item.empty() ? '\0' : item.back()) {
    case 'k': case 'K': scale = 1024.0; break;
    case 'm': case 'M': scale = 1024.0 * 1024.0; break;
    case 'g': case 'G': scale = 1024.0 * 1024.0 * 1024.0; break;
    default: break;
  }
  const std::string digits = scale == 1 ? item : item.substr(0, item.size() - 1);
  if (digits.empty()) fail_flag(flag, whole, fmt::format("'{}' is not a number", item));
  return parse_number(flag, whole, digits) * scale;
}

std::int64_t parse_whole(const char* flag, const std::string& text, const char* noun, std::int64_t lo, std::int64_t hi) {
  const std::string expected = fmt::format("expected a whole number of {} (e.g. 4096, 32k, 1M)", noun);
  double v = 0;
  try {
    v = parse_count(flag, text, text);
  } catch (const InputError&) {
    fail_flag(flag, text, expected);
  }
  if (v != std::floor(v)) fail_flag(flag, text, expected);
  if (v < static_cast<double>(lo)) fail_flag(flag, text, lo == 1 ? "must be a positive integer" : fmt::format("must be at least {}", lo));
  if (v > static_cast<double>(hi)) fail_flag(flag, text, fmt::format("must be at most {}", hi));
  return static_cast<std::int64_t>(v);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::vector<double> parse_number_list(const char* flag, const std::string& text, double min_value, std::size_t max_points) {
  std::vector<double> out;
  if (text.empty()) fail_flag(flag, text, "expected a number, a list a,b,c or a range a:b:x2");
  for (const std::string& item : split(text, ',')) {
    const auto parts = split(item, ':');
    if (parts.size() == 1) {
      out.push_back(parse_count(flag, text, item));
    } else if (parts.size() == 3) {
      const double a = parse_count(flag, text, parts[0]), b = parse_count(flag, text, parts[1]);
      std::string step = parts[2];
      if (b < a) fail_flag(flag, text, "a range a:b:step needs a <= b");
      if (!step.empty() && (step[0] == 'x' || step[0] == '*')) {
        const double k = parse_number(flag, text, step.substr(1));
        if (!(k > 1)) fail_flag(flag, text, "a geometric step xk needs k > 1");
        double v = a;
        if (v <= 0) {
          out.push_back(0);
          v = 1;
        }
        for (; v <= b * (1 + 1e-12); v *= k) {
          out.push_back(v);
          if (out.size() > max_points) break;
        }
      } else {
        if (!step.empty() && step[0] == '+') step = step.substr(1);
        const double k = parse_count(flag, text, step);
        if (!(k > 0)) fail_flag(flag, text, "an arithmetic step needs a positive size");
        if ((b - a) / k > static_cast<double>(max_points)) fail_flag(flag, text, fmt::format("more than {} points", max_points));
        for (double i = 0; a + i * k <= b * (1 + 1e-12); i += 1) out.push_back(a + i * k);
      }
    } else {
      fail_flag(flag, text, fmt::format("'{}' is neither a number nor a range a:b:step", item));
    }
    if (out.size() > max_points) fail_flag(flag, text, fmt::format("more than {} points", max_points));
  }
  for (double v : out)
    if (v < min_value) fail_flag(flag, text, fmt::format("values must be at least {}", min_value));
  return out;
}

std::vector<std::int64_t> parse_int_list(const char* flag, const std::string& text) {
  std::vector<std::int64_t> out;
  for (double v : parse_number_list(flag, text, 1, 4096)) {
    if (v != std::floor(v) || v > 1e9) fail_flag(flag, text, "expected positive integers");
    out.push_back(static_cast<std::int64_t>(v));
  }
  return out;
}

}  // namespace mlaplan
