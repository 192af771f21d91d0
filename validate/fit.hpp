#pragma once
// Fitting efficiency models to measured times: one grid search shared by the microkernel harness and
// by --against, and the error statistics both report.
#include <cstddef>
#include <functional>
#include <string>
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

// The least value on a geometric axis from min(lo, fitted) up to `fitted` (96 steps) whose loss is at
// most `tolerated`; `fitted` where none below it is. An efficiency the rows leave free above some
// value (none of them bound by it) is taken at the least that explains them as well, not wherever a
// search stopped.
double least_as_good(double fitted, double lo, double tolerated, const std::function<double(double)>& loss);

// A values from `lo` to `hi` in `steps` equal ratios (lo, …, hi: steps + 1 values).
std::vector<double> geometric_axis(double lo, double hi, int steps);

// The microkernel model of one kernel: time = max(F / (peak·η_c), B / (bandwidth·η_m)) + t0 +
// calls · t_call + packed / (bandwidth·η_pack): efficiencies of its inner loop, a fixed cost, a
// per-call dispatch cost, and the time to copy operands into the blocked layout a GEMM multiplies
// from: a copy that does not overlap the arithmetic (it runs before each block is multiplied) and
// reads from where the operand lives, so at a fraction of the same cache-or-DRAM bandwidth.
// The bandwidth an op's traffic streams at: the cache's where its working set fits, else DRAM's.
BytesPerSecond stream_bandwidth(double working_set, const CacheLevel& cache, const Roofline& rf);
// The level from a copy sweep (working set, bytes per second, ascending in size) against DRAM's copy
// bandwidth: the bandwidth at 4 MiB (past a core's L2, within a last-level cache); at each swept size
// from 4 MiB, the share h of hits that puts its copy time per byte, h / (the level's) + (1 − h) /
// (DRAM's), where it was measured (clamped to [0, 1]); as capacity the largest size up to which every
// swept size has at least 3/4 hits. None where the cache is not 30% faster than DRAM.
CacheLevel cache_level(const std::vector<std::pair<double, double>>& sweep, BytesPerSecond dram_copy);
// One line for a report: the level's bandwidth and capacity, and the swept shares of hits.
std::string describe(const CacheLevel& c);

struct KernelFit {
  OpId op = OpId::q_proj;
  double eta_compute = 1, eta_memory = 1;
  Seconds t0{0}, t_call{0};
  int train_points = 0;
  double eta_pack = 0;  // packing's share of the op's stream bandwidth; 0: no packing cost of its own
};
// What one run of an op asks of the machine, beside its FLOPs and bytes: the backend's inner calls and
// packed bytes (Sample::calls, Sample::packed).
struct KernelWork {
  double calls = 0, packed = 0;
};
// `bandwidth`: what the op's bytes stream at (stream_bandwidth; DRAM's without a cache level).
Seconds predict(const KernelFit& f, Flops flops, BytesF bytes, KernelWork work, const Roofline& rf, BytesPerSecond bandwidth);
// One fit per op id over the training samples (paths excluded), each sample's bytes at the bandwidth
// its working set streams at.
std::vector<KernelFit> fit_kernels(const std::vector<Sample>& train, const Roofline& rf, const CacheLevel& cache = {});
const KernelFit* fit_for(const std::vector<KernelFit>& fits, OpId op);

// |predicted − measured| / measured over a set: median and 90th percentile.
struct ErrorStats {
  std::size_t n = 0;
  double median = 0, p90 = 0;
};
ErrorStats ape_stats(std::vector<double> errors);
double ape(Seconds predicted, Seconds measured);

}  // namespace mlaplan::validate
