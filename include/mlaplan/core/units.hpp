#pragma once
// Unit-bearing quantities. Each quantity is a thin wrapper over its representation so that
// bytes, FLOPs, seconds and parameter counts cannot be mixed by accident. Conversions to and
// from human units happen once, at the io boundary; GB = 1e9 and GiB = 2^30, always.
#include <compare>
#include <cstdint>

namespace mlaplan {

template <class Tag, class Rep>
struct Quantity {
  Rep value{};

  constexpr Quantity() = default;
  constexpr explicit Quantity(Rep v) : value(v) {}

  constexpr auto operator<=>(const Quantity&) const = default;
  constexpr Quantity& operator+=(Quantity o) { value += o.value; return *this; }
  constexpr Quantity& operator-=(Quantity o) { value -= o.value; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity{a.value + b.value}; }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity{a.value - b.value}; }
  friend constexpr Quantity operator*(Quantity a, Rep k) { return Quantity{a.value * k}; }
  friend constexpr Quantity operator*(Rep k, Quantity a) { return Quantity{a.value * k}; }
  friend constexpr Quantity operator/(Quantity a, Rep k) { return Quantity{a.value / k}; }
  // The ratio of two quantities of one unit is a plain number.
  friend constexpr double operator/(Quantity a, Quantity b) {
    return static_cast<double>(a.value) / static_cast<double>(b.value);
  }
};

struct BytesTag {};
struct ParamsTag {};
struct FlopsTag {};
struct SecondsTag {};

using Bytes = Quantity<BytesTag, std::int64_t>;    // exact byte counts
using Params = Quantity<ParamsTag, std::int64_t>;  // exact parameter (element) counts
using Flops = Quantity<FlopsTag, double>;
using Seconds = Quantity<SecondsTag, double>;

inline constexpr std::int64_t kKiB = 1024;
inline constexpr std::int64_t kMiB = 1024 * kKiB;
inline constexpr std::int64_t kGiB = 1024 * kMiB;
inline constexpr double kGB = 1e9;
inline constexpr double kTB = 1e12;

// Integer ceiling division for non-negative operands.
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
// Round a up to a whole number of b-sized blocks.
constexpr std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }

}  // namespace mlaplan
