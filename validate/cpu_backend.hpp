#pragma once
// The CPU backend of mlaplan-validate: the Eigen fp32 microkernels checked against float64,
// calibrated (STREAM triad, GEMM), and timed over the grid and across the crossover.
#include <cstdint>
#include <functional>
#include <string>

#include "harness.hpp"

namespace mlaplan::validate {

struct CpuOptions {
  bool quick = false;
  std::uint64_t seed = 0;  // 0: fresh from the random device (the run reports the seed it used)
};

// The inner calls a CPU kernel makes: one small product per head and key block of 256, and so on.
double cpu_calls(PathKind path, OpId op, const MlaShape& s);
// The bytes Eigen packs into blocked panels in one run of a CPU kernel (its products of two or more
// rows; one-row products are GEMVs and pack nothing).
double cpu_packed(PathKind path, OpId op, const MlaShape& s);
// The bytes of `op` (of `bytes` in all) its repeated runs keep touching: a chunk's share for the ops
// of the chunk loop, all of them otherwise.
double cpu_working_set(PathKind path, OpId op, const MlaShape& s, double bytes);

// Measures; a failed float64 check stops the run before any timing (the run then has checks only).
MeasuredRun measure_cpu(const CpuOptions& opt, const std::function<void(const std::string&)>& progress);

}  // namespace mlaplan::validate
