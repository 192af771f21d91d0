#pragma once
// Launch wrappers of the CUDA kernels of the MLA paths (bodies in mla_kernels.cuh, arguments in
// mla_kernel_args.hpp). Plain C++ interface (no CUDA types beyond the runtime's), so the backend
// compiles with the ordinary C++ compiler. Every wrapper returns the launch's error.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/mla_kernel_args.hpp"

namespace mlaplan::validate::gpu {

// Sets the kernels' attributes (dynamic shared memory beyond 48 KiB) on the current device: once,
// before any launch.
cudaError_t prepare_kernels();

// Absorbed decode (see DecodeArgs): one split writes the bf16 latent output, several write partials.
cudaError_t absorbed_decode(const DecodeArgs& a, cudaStream_t stream);

// Split-KV merge: out[b, row] (bf16, 512 wide) from fp32 partials [batch, splits, rows, 512] and
// their log-sum-exp [batch, splits, rows].
cudaError_t split_kv_merge(const float* part_o, const float* part_lse, int batch, int splits, int rows, void* out, cudaStream_t stream);

// Chunked expand's merge: out [rows, 128] (bf16) from bf16 partials [chunks, rows, 128] and their
// log-sum-exp [chunks, rows].
cudaError_t chunk_lse_merge(const void* part_o, const float* part_lse, int chunks, int rows, void* out, cudaStream_t stream);

// rope[row, head·64 + c] = cache[row, 512 + c] for every head (cache rows contiguous, 576 wide).
cudaError_t rope_broadcast(const void* cache, int rows, int heads, void* rope, cudaStream_t stream);

// Flash attention of the expand path, or of one chunk of chunked expand (see MhaArgs).
cudaError_t flash_mha(const MhaArgs& a, cudaStream_t stream);

// n bf16 values uniform in [−scale, scale), a function of (seed, index) only.
cudaError_t fill_uniform_bf16(void* p, std::size_t n, std::uint64_t seed, float scale, cudaStream_t stream);

// Holds the stream for `seconds` (a spinning single-thread kernel), so that the host can enqueue
// the calls a timing covers before the GPU reaches them.
cudaError_t hold_stream(double seconds, cudaStream_t stream);

}  // namespace mlaplan::validate::gpu
