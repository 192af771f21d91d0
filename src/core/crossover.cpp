#include "mlaplan/core/crossover.hpp"

#include <cmath>

namespace mlaplan {

double flop_crossover_query(const MlaGeometry& g, double prefix, bool causal) {
  const double u = expand_flops_per_token(g);
  const double delta = absorb_flops_per_pair(g) - expand_flops_per_pair(g);
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
  const double delta = absorb_flops_per_pair(g) - expand_flops_per_pair(g);
  return delta > 0 ? expand_flops_per_token(g) / delta : kNoCrossover;
}

double roofline_crossover_query(const ModelSpec& m, const Workload& base, double prefix, std::int64_t batch,
                                const Roofline& rf) {
  Workload w = base;
  w.groups.assign(1, SequenceGroup{batch, 1, prefix});
  // f(Q) = T_expand(Q) − T_absorb(Q): positive while absorb is faster.
  auto f = [&](double q) {
    w.groups[0].query = q;
    return path_cost(mla_path(m, w, PathKind::expand), rf).time_s - path_cost(mla_path(m, w, PathKind::absorb), rf).time_s;
  };
  double lo = 1e-9;
  if (f(lo) <= 0) return 0;
  double hi = 1;
  while (f(hi) > 0) {
    lo = hi;
    hi *= 2;
    if (hi > 1e9) return kNoCrossover;
  }
  // Bisection keeps f(lo) > 0 ≥ f(hi) and halves the bracket until it is one ulp wide.
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (f(mid) > 0) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace mlaplan
