#include "mlaplan/core/crossover.hpp"

#include <cmath>

namespace mlaplan {

double flop_crossover_query(const MlaGeometry& g, double prefix, bool causal) {
  const double u = expand_flops_per_token(g).value;
  const double delta = (absorb_flops_per_pair(g) - expand_flops_per_pair(g)).value;
  if (delta <= 0) return kNoCrossover;
  const double c = u * prefix / delta;
  if (c <= 0) return 0;
  // Stable roots of ½Q² + bQ − c = 0 (causal, b = P + ½) and Q² + PQ − c = 0 (non-causal).
  if (causal) {
    const double b = prefix + 0.5;
    return 2 * c / (b + std::sqrt(b * b + 2 * c));
  }
  return 2 * c / (prefix + std::sqrt(prefix * prefix + 4 * c));
}

double asymptotic_flop_crossover_query(const MlaGeometry& g) {
  const Flops delta = absorb_flops_per_pair(g) - expand_flops_per_pair(g);
  return delta.value > 0 ? expand_flops_per_token(g) / delta : kNoCrossover;
}

namespace {

template <class PathTime>
double solve(const MlaGeometry& g, const Workload& base, double prefix, std::int64_t batch, PathTime&& path_time,
             const WorkspaceBudgetFn& budget = {}) {
  Workload w = base;
  w.groups.assign(1, SequenceGroup{batch, 1, prefix});
  // f(Q) = T_expand(Q) − T_absorb(Q): positive while absorb is faster.
  auto f = [&](double q) {
    w.groups[0].query = q;
    const double absorb = path_time(mla_path(g, w, PathKind::absorb), q).value;
    if (!budget) return path_time(mla_path(g, w, PathKind::expand), q).value - absorb;
    const std::optional<PathPlan> expanded = feasible_expanded(g, w, budget(w));
    return expanded ? path_time(*expanded, q).value - absorb : INFINITY;
  };
  constexpr double kTiny = 1e-9, kMax = 1e9;
  double lo = kTiny, f_lo = f(lo);
  if (f_lo <= 0) return 0;  // expand is no slower even as Q → 0

  // Bracket the first sign change, starting from the FLOP-only root (the roofline root is near it
  // unless launch costs or bandwidth dominate) and widening geometrically each way.
  const double guess = flop_crossover_query(g, prefix, w.causal);
  double hi = std::isfinite(guess) && guess > kTiny ? std::min(guess, kMax) : 1.0;
  double f_hi = f(hi);
  // The step starts at 1.25x and squares each time, so a near guess gives a tight bracket.
  double step = 1.25;
  if (f_hi > 0) {
    while (f_hi > 0) {
      lo = hi, f_lo = f_hi;
      if (hi >= kMax) return kNoCrossover;
      hi = std::min(hi * step, kMax);
      step *= step;
      f_hi = f(hi);
    }
  } else {
    // Step down towards kTiny until f turns positive: that is the first sign change from the left.
    double probe = hi / step;
    while (probe > kTiny) {
      const double f_probe = f(probe);
      if (f_probe > 0) {
        lo = probe, f_lo = f_probe;
        break;
      }
      hi = probe, f_hi = f_probe;
      step *= step;
      probe /= step;
    }
  }

  // Illinois (modified regula falsi): superlinear on the smooth pieces of f, and, like bisection,
  // it never leaves the bracket; a bisection step is taken whenever the bracket fails to halve.
  for (int i = 0; i < 200 && hi - lo > 1e-10 * hi; ++i) {
    const double width = hi - lo;
    double c = hi - f_hi * (hi - lo) / (f_hi - f_lo);
    if (!(c > lo && c < hi)) c = 0.5 * (lo + hi);
    const double f_c = f(c);
    if (f_c == 0) return c;
    if (f_c > 0) {
      lo = c, f_lo = f_c;
      f_hi *= 0.5;
    } else {
      hi = c, f_hi = f_c;
      f_lo *= 0.5;
    }
    if (hi - lo > 0.5 * width) {  // slow progress: bisect once
      const double mid = 0.5 * (lo + hi);
      const double f_mid = f(mid);
      if (f_mid > 0) lo = mid, f_lo = f_mid;
      else hi = mid, f_hi = f_mid;
    }
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double roofline_crossover_query(const ModelSpec& m, const Workload& base, double prefix, std::int64_t batch,
                                const Roofline& rf, const WorkspaceBudgetFn& budget) {
  return solve(mla_geometry(m, base), base, prefix, batch, [&](const PathPlan& p, double) { return path_cost(p, rf).time; }, budget);
}

double crossover_query(const MlaGeometry& g, const Workload& base, double prefix, std::int64_t batch,
                       const std::function<Seconds(const PathPlan&, double)>& path_time) {
  return solve(g, base, prefix, batch, path_time);
}

}  // namespace mlaplan
