#pragma once
// A fake CUDA device for testing the CUDA backend (validate/cuda/cuda_backend.cpp) without a GPU:
// fake_cuda_runtime.cpp defines the CUDA runtime and cuBLAS functions the backend calls, on host
// memory (streams run synchronously, events read the host clock, GEMMs are Eigen products rounded to
// bf16 as cuBLAS writes them), and the backend's kernel wrappers (mla_kernels.hpp) on the host
// shim. Linked instead of libcudart and libcublas; needs only the CUDA toolkit's headers.
namespace mlaplan::validate::fake_cuda {

// The fake device: one SM, 256 KiB of L2, 4 GiB of memory of which 2 GiB free.
inline constexpr int kSms = 1;
inline constexpr int kL2Bytes = 256 * 1024;

// Launch the mutant kernels (causal mask off by one) instead of the kernels as written.
void use_mutant_kernels(bool on);

// cuBLAS GEMM calls made so far.
long gemm_calls();

}  // namespace mlaplan::validate::fake_cuda
