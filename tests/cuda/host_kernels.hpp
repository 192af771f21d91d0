#pragma once
// The CUDA kernels of validate/cuda/mla_kernels.cuh compiled for the host through
// validate/cuda/host_shim.hpp (one host thread per CUDA thread), launched with the same geometry as
// mla_kernels.cu's wrappers: the kernels as written, and a mutant whose causal mask lets every row
// see one key too many (MLAPLAN_INJECT_MASK_BUG), which the checks must catch. Buffers are host
// memory laid out as on the device; bf16 values are uint16 bit patterns.
#include <cstddef>
#include <cstdint>

#include "cuda/mla_kernel_args.hpp"

namespace mlaplan::validate::host_gpu {

struct KernelSet {
  const char* name = "";
  void (*absorbed_decode)(const gpu::DecodeArgs& a) = nullptr;
  void (*split_kv_merge)(const float* part_o, const float* part_lse, int batch, int splits, int rows, void* out) = nullptr;
  void (*chunk_lse_merge)(const void* part_o, const float* part_lse, int chunks, int rows, void* out) = nullptr;
  void (*rope_broadcast)(const void* cache, int rows, int heads, void* rope) = nullptr;
  void (*flash_mha)(const gpu::MhaArgs& a) = nullptr;
  void (*fill_uniform_bf16)(void* p, std::size_t n, std::uint64_t seed, float scale) = nullptr;
};

const KernelSet& kernels();         // as written (host_kernels.cpp)
const KernelSet& mutant_kernels();  // causal off-by-one injected (host_kernels_mutant.cpp)

// The shim's bf16 conversions (round to nearest even).
std::uint16_t to_bf16(float f);
float from_bf16(std::uint16_t h);

}  // namespace mlaplan::validate::host_gpu
