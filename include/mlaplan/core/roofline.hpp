#pragma once
// Roofline time (formula reference §2): per op, time = max(F / (peak·η_c), B / (bandwidth·η_m))
// plus a launch cost; a path's time is the sum over its ops.
#include <vector>

#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/paths.hpp"

namespace mlaplan {

struct Roofline {
  double peak_flops_per_s = 0;
  double bandwidth_bytes_per_s = 0;
  double eta_compute = 1;
  double eta_memory = 1;
  double launch_s = 0;  // per op
  // Ridge point of the effective machine: peak·η_c / (bandwidth·η_m), FLOP per byte.
  double ridge() const { return peak_flops_per_s * eta_compute / (bandwidth_bytes_per_s * eta_memory); }
};

// The roofline of a GPU at a compute dtype with the given efficiencies.
Roofline roofline_for(const HardwareSpec& hw, DType compute, const Efficiency& eta, double launch_s = 0);

struct OpTime {
  double compute_s = 0;  // F / (peak·η_c)
  double memory_s = 0;   // B / (bandwidth·η_m)
  double time_s = 0;     // max of the two, plus launch
  double intensity = 0;  // F / B
  bool compute_bound = false;
};
OpTime op_time(const Op& op, const Roofline& rf);

struct PathCost {
  double flops = 0;
  double bytes = 0;
  double workspace_bytes = 0;
  double time_s = 0;
  double compute_s = 0;  // Σ compute time of the ops
  double memory_s = 0;   // Σ memory time of the ops
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }
  // The bound that takes most of the path's time.
  bool compute_bound() const { return compute_s >= memory_s; }
};
PathCost path_cost(const PathPlan& p, const Roofline& rf);

}  // namespace mlaplan
