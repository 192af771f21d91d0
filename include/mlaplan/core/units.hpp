#pragma once
// Unit-bearing quantities. Each quantity is a thin wrapper over its representation so that
// bytes, FLOPs, seconds and parameter counts cannot be mixed by accident. Conversions to and
// from human units happen once, at the io boundary; GB = 1e9 and GiB = 2^30, always.
#include <compare>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace mlaplan {

// Saturating int64 arithmetic: a result beyond ±2^63 clamps to the limit instead of overflowing
// (undefined behaviour). The io layer rejects inputs whose results would come near the limits,
// so a saturated value never reaches a user; it only keeps hostile input from becoming UB.
inline constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kSaturated : std::numeric_limits<std::int64_t>::min();
  return r;
}
constexpr std::int64_t sat_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kSaturated : std::numeric_limits<std::int64_t>::min();
  return r;
}
constexpr std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? std::numeric_limits<std::int64_t>::min() : kSaturated;
  return r;
}

template <class Rep>
constexpr Rep q_add(Rep a, Rep b) { if constexpr (std::is_integral_v<Rep>) return sat_add(a, b); else return a + b; }
template <class Rep>
constexpr Rep q_sub(Rep a, Rep b) { if constexpr (std::is_integral_v<Rep>) return sat_sub(a, b); else return a - b; }
template <class Rep>
constexpr Rep q_mul(Rep a, Rep b) { if constexpr (std::is_integral_v<Rep>) return sat_mul(a, b); else return a * b; }

template <class Tag, class Rep>
struct Quantity {
  Rep value{};

  constexpr Quantity() = default;
  constexpr explicit Quantity(Rep v) : value(v) {}

  constexpr auto operator<=>(const Quantity&) const = default;
  constexpr Quantity& operator+=(Quantity o) { value = q_add(value, o.value); return *this; }
  constexpr Quantity& operator-=(Quantity o) { value = q_sub(value, o.value); return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity{q_add(a.value, b.value)}; }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity{q_sub(a.value, b.value)}; }
  friend constexpr Quantity operator*(Quantity a, Rep k) { return Quantity{q_mul(a.value, k)}; }
  friend constexpr Quantity operator*(Rep k, Quantity a) { return Quantity{q_mul(a.value, k)}; }
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

// Integer ceiling division for non-negative operands (b > 0).
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
// Round a up to a whole number of b-sized blocks.
constexpr std::int64_t round_up(std::int64_t a, std::int64_t b) { return sat_mul(ceil_div(a, b), b); }

}  // namespace mlaplan
