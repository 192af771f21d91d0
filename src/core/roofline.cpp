#include "mlaplan/core/roofline.hpp"

#include <algorithm>

namespace mlaplan {

Roofline roofline_for(const HardwareSpec& hw, DType compute, const Efficiency& eta, double launch_s) {
  Roofline rf;
  rf.peak_flops_per_s = hw.peak_flops(compute).value_or(0);
  rf.bandwidth_bytes_per_s = hw.memory_bandwidth_bytes_per_s;
  rf.eta_compute = eta.compute;
  rf.eta_memory = eta.memory;
  rf.launch_s = launch_s;
  return rf;
}

OpTime op_time(const Op& op, const Roofline& rf) {
  OpTime t;
  t.compute_s = op.flops / (rf.peak_flops_per_s * rf.eta_compute);
  t.memory_s = op.bytes() / (rf.bandwidth_bytes_per_s * rf.eta_memory);
  t.time_s = std::max(t.compute_s, t.memory_s) + rf.launch_s;
  t.intensity = op.bytes() > 0 ? op.flops / op.bytes() : 0;
  t.compute_bound = t.compute_s >= t.memory_s;
  return t;
}

PathCost path_cost(const PathPlan& p, const Roofline& rf) {
  // The same arithmetic as op_time, with the two divisions done once per path (a hot loop of the
  // crossover solver).
  const double per_flop = 1 / (rf.peak_flops_per_s * rf.eta_compute);
  const double per_byte = 1 / (rf.bandwidth_bytes_per_s * rf.eta_memory);
  PathCost c;
  for (const Op& op : p) {
    const double compute_s = op.flops * per_flop, memory_s = op.bytes() * per_byte;
    c.flops += op.flops;
    c.bytes += op.bytes();
    c.workspace_bytes = std::max(c.workspace_bytes, op.workspace_bytes);
    c.time_s += std::max(compute_s, memory_s) + rf.launch_s;
    c.compute_s += compute_s;
    c.memory_s += memory_s;
  }
  return c;
}

}  // namespace mlaplan
