// Launch wrappers of the MLA kernels; the bodies are in mla_kernels.cuh, which the host-shim tests
// compile too.
#include "mla_kernels.hpp"

#include "mla_kernels.cuh"

namespace mlaplan::validate::gpu {

namespace {

namespace k = kernels;

// Spins until `ns` nanoseconds of the global timer have passed.
__global__ void hold_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

cudaError_t prepare_kernels() {
  cudaError_t e = cudaFuncSetAttribute(k::absorbed_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, k::kDecodeSmem);
  if (e != cudaSuccess) return e;
  return cudaFuncSetAttribute(k::flash_mha_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, k::kMhaSmem);
}

cudaError_t absorbed_decode(const DecodeArgs& a, cudaStream_t stream) {
  k::absorbed_decode_kernel<<<k::decode_grid(a), k::kThreads, k::kDecodeSmem, stream>>>(a);
  return cudaGetLastError();
}

cudaError_t split_kv_merge(const float* part_o, const float* part_lse, int batch, int splits, int rows, void* out, cudaStream_t stream) {
  k::lse_merge_kernel<float><<<k::merge_grid(batch, rows), k::kMergeThreads, 0, stream>>>(part_o, part_lse, splits, rows, kLatent,
                                                                                             static_cast<k::bf16*>(out));
  return cudaGetLastError();
}

cudaError_t chunk_lse_merge(const void* part_o, const float* part_lse, int chunks, int rows, void* out, cudaStream_t stream) {
  k::lse_merge_kernel<k::bf16><<<k::merge_grid(1, rows), k::kMergeThreads, 0, stream>>>(static_cast<const k::bf16*>(part_o), part_lse, chunks,
                                                                                           rows, kValue, static_cast<k::bf16*>(out));
  return cudaGetLastError();
}

cudaError_t rope_broadcast(const void* cache, int rows, int heads, void* rope, cudaStream_t stream) {
  k::rope_broadcast_kernel<<<k::rope_grid(rows, heads), k::kRopeThreads, 0, stream>>>(static_cast<const k::bf16*>(cache), rows, heads,
                                                                                      static_cast<k::bf16*>(rope));
  return cudaGetLastError();
}

cudaError_t flash_mha(const MhaArgs& a, cudaStream_t stream) {
  k::flash_mha_kernel<<<k::mha_grid(a), k::kThreads, k::kMhaSmem, stream>>>(a);
  return cudaGetLastError();
}

cudaError_t fill_uniform_bf16(void* p, std::size_t n, std::uint64_t seed, float scale, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  k::fill_uniform_kernel<<<k::fill_grid(n), k::kFillThreads, 0, stream>>>(static_cast<k::bf16*>(p), n, seed, scale);
  return cudaGetLastError();
}

cudaError_t hold_stream(double seconds, cudaStream_t stream) {
  hold_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(seconds > 0 ? seconds * 1e9 : 0));
  return cudaGetLastError();
}

}  // namespace mlaplan::validate::gpu
