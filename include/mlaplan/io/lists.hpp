#pragma once
// Number lists as users write them for sweeps, in flags and in report specs: comma-separated items,
// each a number or a range a:b:xk (geometric; 0 first and then from 1 when a is 0), a:b:+k or a:b:k
// (arithmetic). Errors are InputErrors naming the flag (or spec key) and the whole value.
#include <cstdint>
#include <string>
#include <vector>

namespace mlaplan {

std::vector<double> parse_number_list(const char* flag, const std::string& text, double min_value = 0,
                                      std::size_t max_points = 10'000'000);
// Positive integers (at most 1e9 each, at most 4,096 of them).
std::vector<std::int64_t> parse_int_list(const char* flag, const std::string& text);
// One number of a list item: InputError naming the flag and the whole value unless it is finite.
double parse_number(const char* flag, const std::string& whole, const std::string& item);
// "a,b,c" -> {"a", "b", "c"} (empty items kept).
std::vector<std::string> split(const std::string& s, char sep);

}  // namespace mlaplan
