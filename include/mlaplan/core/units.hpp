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
struct FlopRateTag {};
struct ByteRateTag {};

using Bytes = Quantity<BytesTag, std::int64_t>;    // exact byte counts (caches, weights, capacity)
using BytesF = Quantity<BytesTag, double>;         // byte volumes of the cost model: traffic and workspace at
                                                   // real-valued query lengths (fractional bytes per element)
using Params = Quantity<ParamsTag, std::int64_t>;  // exact parameter (element) counts
using Flops = Quantity<FlopsTag, double>;
using Seconds = Quantity<SecondsTag, double>;
using FlopsPerSecond = Quantity<FlopRateTag, double>;
using BytesPerSecond = Quantity<ByteRateTag, double>;

constexpr BytesF to_real(Bytes b) { return BytesF{static_cast<double>(b.value)}; }

// The only ways units combine: work over rate is time; work over time is rate; FLOPs over bytes is
// arithmetic intensity (FLOP per byte); a compute rate over a byte rate is a ridge point (FLOP per byte).
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds{f.value / r.value}; }
constexpr Seconds operator/(BytesF b, BytesPerSecond r) { return Seconds{b.value / r.value}; }
constexpr FlopsPerSecond operator/(Flops f, Seconds t) { return FlopsPerSecond{f.value / t.value}; }
constexpr BytesPerSecond operator/(BytesF b, Seconds t) { return BytesPerSecond{b.value / t.value}; }
constexpr double operator/(Flops f, BytesF b) { return f.value / b.value; }
constexpr double operator/(FlopsPerSecond f, BytesPerSecond b) { return f.value / b.value; }

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
