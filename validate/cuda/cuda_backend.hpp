#pragma once
// The CUDA backend of `mlaplan validate`: the MLA paths in bf16 on the GPU (cuBLAS for the GEMMs
// and the per-head folds; our kernels, mla_kernels.cuh, for absorbed decode, the split-KV merge,
// flash attention of the expand and chunked paths, chunked expand's LSE merge and the RoPE
// broadcast), checked against float64, calibrated, and timed through the harness (time_paths), so
// that every sample is joined to the cost model's op by id.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace mlaplan::validate {

struct CudaOptions {
  bool quick = false;
  std::uint64_t seed = 0;  // 0: fresh from the random device (the run reports the seed it used)
};

// What a run checks and times.
struct CudaPlan {
  std::vector<MlaShape> checks;  // float64 checks of every path (chunked where batch 1 and several chunks)
  Grid grid;                     // timed shapes with their training/held-out halves
  double max_path_flops = 0;     // a path over this many FLOPs a step is left out at that shape
  std::vector<int> sweep_heads, sweep_queries;  // crossover sweeps: both paths timed whole
  int sweep_batch = 32, sweep_prefix = 8191;
  std::size_t copy_bytes = 0;    // calibration: device-to-device copy size
  int gemm_n = 0;                // calibration: n × n × n bf16 GEMM
  double timing_budget_s = 0;    // per timed function, beyond its minimum repeats
  int min_reps = 5, max_reps = 50;
};
// The plan of `mlaplan validate --backend cuda [--quick]`.
CudaPlan cuda_plan(bool quick);

// The kernel launches an op makes, counted where there are several: chunked expand launches its
// up-projection, RoPE broadcast and attention once per chunk (the chunk count); every other op
// launches once, counted as 0 (its launch is part of the fit's fixed cost t0).
double cuda_calls(PathKind path, OpId op, const MlaShape& s);

// Measures on the current CUDA device. A failed float64 check stops the run before any timing (the
// run then has checks only). Throws std::runtime_error when a CUDA or cuBLAS call fails (no device,
// no driver, out of memory), with a one-line message.
MeasuredRun measure_cuda(const CudaOptions& opt, const std::function<void(const std::string&)>& progress);
// The same with a given plan (tests run a small one against a fake device).
MeasuredRun measure_cuda(const CudaOptions& opt, const CudaPlan& plan, const std::function<void(const std::string&)>& progress);

}  // namespace mlaplan::validate
