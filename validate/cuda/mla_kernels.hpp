#pragma once
// CUDA kernels of the MLA paths for DeepSeek shapes (latent 512, RoPE 64, nope 128, value 128), bf16
// storage with fp32 accumulation on tensor cores. Plain C++ interface (no CUDA types beyond the
// runtime's), so the host harness compiles with the ordinary C++ compiler.
#include <cuda_runtime.h>

namespace mlaplan::validate::gpu {

constexpr int kLatent = 512, kRope = 64, kLatentRow = 576, kNope = 128, kValue = 128, kPage = 64;

// Absorbed decode: MQA of the folded queries over a paged latent cache, split-KV. Each split
// writes normalised partial outputs and their log-sum-exp; lse_merge combines them.
struct DecodeArgs {
  const void* q = nullptr;          // bf16 [batch · query · heads, 576]; row (b·query + t)·heads + head
  const void* cache = nullptr;      // bf16 [pages, 64, 576]
  const int* block_table = nullptr; // [batch, max_pages]: page of each sequence's i-th 64 tokens
  int batch = 1, query = 1, prefix = 0, heads = 1, max_pages = 1, splits = 1;
  float scale = 1;
  float* part_o = nullptr;          // [batch, splits, query · heads, 512]
  float* part_lse = nullptr;        // [batch, splits, query · heads]
};
cudaError_t absorbed_decode(const DecodeArgs& a, cudaStream_t stream);

// out[b, row] = Σ_s exp(lse_s − lse) · part_o[b, s, row], as bf16 rows of `width` values.
cudaError_t lse_merge(const float* part_o, const float* part_lse, int batch, int splits, int rows, int width, void* out,
                      cudaStream_t stream);

// rope[row, head·64 + c] = cache[row, 512 + c] for every head (cache rows contiguous, 576 wide).
cudaError_t rope_broadcast(const void* cache, int rows, int heads, void* rope, cudaStream_t stream);

// Flash-style attention of the expand path: QK width 192 (K_nope from kv, the broadcast RoPE key),
// V width 128, causal after `prefix`. kv rows per sequence: s_pad (a multiple of 64).
struct MhaArgs {
  const void* q_nope = nullptr;  // bf16 [batch · query, heads · 128]
  const void* q_rope = nullptr;  // bf16 [batch · query, heads · 64]
  const void* kv = nullptr;      // bf16 [batch · s_pad, heads · 256]: per head K_nope then V
  const void* rope = nullptr;    // bf16 [batch · s_pad, heads · 64]
  int batch = 1, query = 1, prefix = 0, heads = 1, s_pad = 64;
  float scale = 1;
  bool causal = true;
  void* out = nullptr;           // bf16 [batch · query, heads · 128]
};
cudaError_t flash_mha(const MhaArgs& a, cudaStream_t stream);

}  // namespace mlaplan::validate::gpu
