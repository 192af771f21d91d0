#pragma once
// Number lists as users write them for sweeps, in flags and in report specs: comma-separated items,
// each a number or a range a:b:xk (geometric; 0 first and then from 1 when a is 0), a:b:+k or a:b:k
// (arithmetic). Numbers and arithmetic steps may carry a binary size suffix: 32k = 32,768,
// 1M = 1,048,576, 1G = 2^30 (either case), as context lengths are quoted. Errors are InputErrors
// naming the flag (or spec key) and the whole value.
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
// One count of a list item: a number with an optional k, M or G suffix (powers of two).
double parse_count(const char* flag, const std::string& whole, const std::string& item);
// A count flag's value as people write it (4096, 32k, 1M): a whole number of `noun` in [lo, hi],
// else an InputError naming the flag and the value.
std::int64_t parse_whole(const char* flag, const std::string& text, const char* noun, std::int64_t lo, std::int64_t hi);
// "a,b,c" -> {"a", "b", "c"} (empty items kept).
std::vector<std::string> split(const std::string& s, char sep);

}  // namespace mlaplan
