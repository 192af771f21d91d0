#pragma once
// Fitting efficiency models to measured times: one grid search shared by the microkernel harness and
// by --against, and the error statistics both report.
#include <cstddef>
#include <functional>
#include <vector>

#include "harness.hpp"

namespace mlaplan::validate {

// log²(predicted / measured): the loss every fit minimises, summed over its training points (a
// ratio, so a 2x miss costs the same at 1 µs and at 1 s).
double log_error_sq(Seconds predicted, Seconds measured);

// Grid search: axes[i] lists the values tried for parameter i (ascending); `loss` is evaluated at
// every combination (params has axes.size() values) and the minimising combination is returned (the
// first one on ties). Then `refine` rounds search a finer grid of 9 values per axis between the best
// value's neighbours (geometric where both are positive, linear otherwise), so a parameter is not
// quantised to the coarse grid's steps.
std::vector<double> grid_fit(const std::vector<std::vector<double>>& axes, const std::function<double(const std::vector<double>&)>& loss,
                             int refine = 0);

// A values from `lo` to `hi` in `steps` equal ratios (lo, …, hi: steps + 1 values).
std::vector<double> geometric_axis(double lo, double hi, int steps);

// The microkernel model of one kernel: time = max(F / (peak·η_c), B / (bandwidth·η_m)) + t0 +
// calls · t_call: efficiencies of its inner loop, a fixed cost, and a per-call dispatch cost.
struct KernelFit {
  OpId op = OpId::q_proj;
  double eta_compute = 1, eta_memory = 1;
  Seconds t0{0}, t_call{0};
  int train_points = 0;
};
Seconds predict(const KernelFit& f, Flops flops, BytesF bytes, double calls, const Roofline& rf);
// One fit per op id over the training samples (paths excluded).
std::vector<KernelFit> fit_kernels(const std::vector<Sample>& train, const Roofline& rf);
const KernelFit* fit_for(const std::vector<KernelFit>& fits, OpId op);
// An op of a plan predicted with its kernel's fit; speed of light where the op has no fit.
Seconds predict_op(const Op& op, double calls, const std::vector<KernelFit>& fits, const Roofline& rf);

// |predicted − measured| / measured over a set: median and 90th percentile.
struct ErrorStats {
  std::size_t n = 0;
  double median = 0, p90 = 0;
};
ErrorStats ape_stats(std::vector<double> errors);
double ape(Seconds predicted, Seconds measured);

}  // namespace mlaplan::validate
