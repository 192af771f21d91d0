#pragma once
// Arguments of the CUDA kernels of the MLA paths (mla_kernels.cuh), shared by the device code, the
// launch wrappers (mla_kernels.hpp) and the host-shim tests (tests/cuda/). No CUDA header: bf16
// buffers are passed as void pointers (2-byte elements, round-to-nearest-even bf16 bit patterns).
// DeepSeek shapes only: latent 512, RoPE 64, nope 128, value 128, pages of 64 tokens.
// C++17: nvcc compiles it too.
namespace mlaplan::validate::gpu {

constexpr int kLatent = 512, kRope = 64, kLatentRow = 576, kNope = 128, kValue = 128, kPage = 64;
constexpr int kQK = kNope + kRope;  // key width of the expand path

// Absorbed decode: MQA of the folded queries over a paged latent cache, split-KV. With one split
// the kernel writes the bf16 latent output itself; with several, each split writes its normalised
// fp32 partial output and log-sum-exp, and split_kv_merge combines them.
struct DecodeArgs {
  const void* q = nullptr;           // bf16 [batch · query · heads, 576]; row (b·query + t)·heads + head
  const void* cache = nullptr;       // bf16 [pages, 64, 576] (rows past a sequence's end: any finite values)
  const int* block_table = nullptr;  // [batch, max_pages]: the physical page of each sequence's i-th 64 tokens
  int batch = 1, query = 1, prefix = 0, heads = 1, max_pages = 1, splits = 1;
  float scale = 1;
  bool causal = true;                // causal: token t sees keys 0 .. prefix + t; otherwise all prefix + query keys
  float* part_o = nullptr;           // splits > 1: fp32 [batch, splits, query · heads, 512]
  float* part_lse = nullptr;         // splits > 1: fp32 [batch, splits, query · heads] (−inf: the split saw no key)
  void* out = nullptr;               // splits = 1: bf16 [batch · query · heads, 512]
};

// Flash-style attention of the expand path over the keys key_begin .. key_begin + key_count − 1 of
// each sequence (all keys: the expand path; one chunk: chunked expand). QK width 192 (K_nope from
// kv, the broadcast RoPE key), V width 128.
struct MhaArgs {
  const void* q_nope = nullptr;  // bf16 [batch · query, heads · 128]
  const void* q_rope = nullptr;  // bf16 [batch · query, heads · 64]
  const void* kv = nullptr;      // bf16 [batch · kv_rows, heads · 256]: per head K_nope then V; row i is key key_begin + i
  const void* rope = nullptr;    // bf16 [batch · kv_rows, heads · 64]
  int batch = 1, query = 1, prefix = 0, heads = 1;
  int kv_rows = 64;              // rows of kv and rope per sequence (at least key_count)
  int key_begin = 0, key_count = 1;
  float scale = 1;
  bool causal = true;
  void* out = nullptr;           // bf16 [batch · query, heads · 128]: the output, or with lse this chunk's normalised partial
  float* lse = nullptr;          // optional fp32 [batch · query · heads]: the chunk's log-sum-exp (−inf: no visible key)
};

}  // namespace mlaplan::validate::gpu
