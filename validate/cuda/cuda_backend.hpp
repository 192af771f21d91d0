#pragma once
// The CUDA backend of `mlaplan validate`: the MLA paths in bf16 on the GPU (cuBLAS for the GEMMs
// and the per-head folds, our own kernels for absorbed decode, expanded attention, the merge and
// the RoPE broadcast), checked against float64, calibrated, timed and predicted.
#include <cstdint>
#include <functional>
#include <string>

#include "harness.hpp"

namespace mlaplan::validate {

struct CudaOptions {
  bool quick = false;
  std::uint64_t seed = 0;
};

ValidationRun run_cuda_validation(const CudaOptions& opt, const std::function<void(const std::string&)>& progress);

}  // namespace mlaplan::validate
