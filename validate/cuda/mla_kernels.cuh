#pragma once
// The CUDA kernels of the MLA paths: bf16 storage, fp32 accumulation on tensor cores (WMMA
// m16n16k16), DeepSeek shapes (mla_kernel_args.hpp). Bodies and launch geometry only. nvcc compiles
// them through mla_kernels.cu, which holds the launch wrappers; the host C++ compiler compiles them
// through host_shim.hpp, so that tests run every kernel without a GPU (tests/cuda/).
//
// MLAPLAN_KERNELS_NS names the namespace (default `kernels`), so that a second build of this header
// links into the same binary: the tests' mutant, MLAPLAN_INJECT_MASK_BUG, in which every causal row
// sees one key too many (the checks must fail it). C++17: nvcc compiles it.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "mla_kernel_args.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <mma.h>
#define MLAPLAN_DYNAMIC_SMEM(name) extern __shared__ __align__(128) unsigned char name[]
#else
#include "host_shim.hpp"
#endif

#ifndef MLAPLAN_KERNELS_NS
#define MLAPLAN_KERNELS_NS kernels
#endif

namespace mlaplan::validate::gpu::MLAPLAN_KERNELS_NS {

#if !defined(__CUDACC__)
// The shim's CUDA names, declared here so that they win over glibc's internal __expf.
using ::mlaplan::validate::shim::__bfloat162float;
using ::mlaplan::validate::shim::__expf;
using ::mlaplan::validate::shim::__float2bfloat16;
using ::mlaplan::validate::shim::__nv_bfloat16;
using ::mlaplan::validate::shim::__syncthreads;
using ::mlaplan::validate::shim::blockDim;
using ::mlaplan::validate::shim::blockIdx;
using ::mlaplan::validate::shim::dim3;
using ::mlaplan::validate::shim::gridDim;
using ::mlaplan::validate::shim::int4;
using ::mlaplan::validate::shim::max;
using ::mlaplan::validate::shim::min;
using ::mlaplan::validate::shim::threadIdx;
#endif
using bf16 = __nv_bfloat16;
using namespace nvcuda;

constexpr int kRows = 16;      // query rows per CTA (one m16 tile)
constexpr int kThreads = 128;  // four warps
constexpr int kKeys = 64;      // keys per step (one page)
constexpr int kMergeThreads = 128, kRopeThreads = 256, kFillThreads = 256, kFillMaxBlocks = 8192;

#ifdef MLAPLAN_INJECT_MASK_BUG
constexpr int kMaskShift = 1;  // the tests' mutant only
#else
constexpr int kMaskShift = 0;
#endif

// The last key causal query token t (0-based) sees: prefix + t, within the sequence's keys.
__device__ inline int causal_last_key(int prefix, int t, int keys) { return min(keys - 1, prefix + t + kMaskShift); }

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Copies `bytes` (a multiple of 16; both pointers 16-byte aligned) with 16-byte vector loads.
__device__ inline void copy16(void* dst, const void* src, int bytes, int tid) {
  for (int i = tid * 16; i < bytes; i += kThreads * 16)
    *reinterpret_cast<int4*>(static_cast<char*>(dst) + i) = *reinterpret_cast<const int4*>(static_cast<const char*>(src) + i);
}

// Scores of the 16 query rows against 16 keys: q [16 x width] · keys[16 x width]ᵀ, stored as
// columns col0 .. col0 + 15 of s [16 x 64]. Keys are read as Kᵀ (column-major).
__device__ inline void score_tile(float* s, int col0, const bf16* q, const bf16* keys, int width) {
  FragC acc;
  wmma::fill_fragment(acc, 0.f);
  for (int k = 0; k < width / 16; ++k) {
    FragA fa;
    FragBCol fb;
    wmma::load_matrix_sync(fa, q + k * 16, width);
    wmma::load_matrix_sync(fb, keys + k * 16, width);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(s + col0, acc, kKeys, wmma::mem_row_major);
}

// o_tile [16 x 16] (row stride ldo) += p [16 x 64] · v_tile [64 x 16] (row stride ldv).
__device__ inline void pv_tile(float* o_tile, int ldo, const bf16* p, const bf16* v_tile, int ldv) {
  FragC acc;
  wmma::load_matrix_sync(acc, o_tile, ldo, wmma::mem_row_major);
  for (int k = 0; k < kKeys / 16; ++k) {
    FragA fa;
    FragBRow fb;
    wmma::load_matrix_sync(fa, p + k * 16, kKeys);
    wmma::load_matrix_sync(fb, v_tile + k * 16 * ldv, ldv);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(o_tile, acc, ldo, wmma::mem_row_major);
}

// One online-softmax step over a 16 x 64 score tile: masks keys, updates the running max m and sum
// l, writes the probabilities as bf16 and each row's correction factor for the accumulator.
// last_key(r) is the last key row r may see (−1: the row is padding); key0 is the tile's first key.
template <class LastKey>
__device__ inline void softmax_step(float* s, bf16* p, float* m, float* l, float* corr, int key0, float scale, LastKey last_key, int tid) {
  if (tid < kRows) {
    const int r = tid, last = last_key(r);
    float m_new = m[r];
    for (int j = 0; j < kKeys; ++j) {
      const bool ok = key0 + j <= last;
      const float v = ok ? s[r * kKeys + j] * scale : -INFINITY;
      s[r * kKeys + j] = v;
      m_new = fmaxf(m_new, v);
    }
    const float c = m_new == -INFINITY ? 1.f : __expf(m[r] - m_new);
    float sum = 0;
    for (int j = 0; j < kKeys; ++j) {
      const float e = s[r * kKeys + j] == -INFINITY ? 0.f : __expf(s[r * kKeys + j] - m_new);
      p[r * kKeys + j] = __float2bfloat16(e);
      sum += e;
    }
    m[r] = m_new;
    l[r] = l[r] * c + sum;
    corr[r] = c;
  }
}

// ---- absorbed decode ----
// Shared memory: q [16][576] bf16 | page [64][576] bf16 | s [16][64] f32 | p [16][64] bf16 |
// o [16][512] f32 | m, l, corr [16] f32. Every part starts 32-byte aligned (WMMA).
constexpr int kDecodeSmem = kRows * kLatentRow * 2 + kKeys * kLatentRow * 2 + kRows * kKeys * 4 + kRows * kKeys * 2 +
                            kRows * kLatent * 4 + 3 * kRows * 4;

// CTA (row tile, split, sequence): 16 query rows (token, head) against the split's pages.
__global__ void __launch_bounds__(kThreads) absorbed_decode_kernel(DecodeArgs a) {
  MLAPLAN_DYNAMIC_SMEM(smem);
  bf16* sq = reinterpret_cast<bf16*>(smem);
  bf16* sk = sq + kRows * kLatentRow;
  float* ss = reinterpret_cast<float*>(sk + kKeys * kLatentRow);
  bf16* sp = reinterpret_cast<bf16*>(ss + kRows * kKeys);
  float* so = reinterpret_cast<float*>(sp + kRows * kKeys);
  float* sm = so + kRows * kLatent;
  float* sl = sm + kRows;
  float* sc = sl + kRows;

  const int tid = threadIdx.x, warp = tid / 32;
  const int b = blockIdx.z, split = blockIdx.y, row0 = blockIdx.x * kRows;
  const int rows = a.query * a.heads, keys = a.prefix + a.query;
  const int pages = (keys + kPage - 1) / kPage, per_split = (pages + a.splits - 1) / a.splits;
  const int p_begin = split * per_split, p_end = min(pages, p_begin + per_split);

  const bf16* q = static_cast<const bf16*>(a.q) + (static_cast<std::size_t>(b) * rows + row0) * kLatentRow;
  const int valid_rows = min(kRows, rows - row0);
  copy16(sq, q, valid_rows * kLatentRow * 2, tid);
  for (int i = valid_rows * kLatentRow + tid; i < kRows * kLatentRow; i += kThreads) sq[i] = __float2bfloat16(0.f);
  for (int i = tid; i < kRows * kLatent; i += kThreads) so[i] = 0.f;
  if (tid < kRows) sm[tid] = -INFINITY, sl[tid] = 0.f;
  __syncthreads();

  // Row r of the tile is (token t, head) = ((row0 + r) / heads, (row0 + r) % heads).
  auto last_key = [&](int r) {
    if (row0 + r >= rows) return -1;
    return a.causal ? causal_last_key(a.prefix, (row0 + r) / a.heads, keys) : keys - 1;
  };

  for (int pg = p_begin; pg < p_end; ++pg) {
    const int page = a.block_table[b * a.max_pages + pg];
    copy16(sk, static_cast<const bf16*>(a.cache) + static_cast<std::size_t>(page) * kPage * kLatentRow, kKeys * kLatentRow * 2, tid);
    __syncthreads();
    score_tile(ss, warp * 16, sq, sk + warp * 16 * kLatentRow, kLatentRow);  // warp w: keys 16w .. 16w + 15
    __syncthreads();
    softmax_step(ss, sp, sm, sl, sc, pg * kPage, a.scale, last_key, tid);
    __syncthreads();
    for (int i = tid; i < kRows * kLatent; i += kThreads) so[i] *= sc[i / kLatent];
    __syncthreads();
    // o [16 x 512] += p [16 x 64] · page[:, :512]: warp w takes columns 128w .. 128w + 127.
    for (int nt = 0; nt < 8; ++nt) pv_tile(so + warp * 128 + nt * 16, kLatent, sp, sk + warp * 128 + nt * 16, kLatentRow);
    __syncthreads();
  }

  if (a.splits == 1) {  // the latent output itself
    bf16* out = static_cast<bf16*>(a.out) + (static_cast<std::size_t>(b) * rows + row0) * kLatent;
    for (int i = tid; i < valid_rows * kLatent; i += kThreads) {
      const int r = i / kLatent;
      out[i] = __float2bfloat16(sl[r] > 0 ? so[i] / sl[r] : 0.f);
    }
    return;
  }
  const std::size_t part = (static_cast<std::size_t>(b) * a.splits + split) * rows;
  for (int i = tid; i < valid_rows * kLatent; i += kThreads) {
    const int r = i / kLatent;
    a.part_o[(part + row0 + r) * kLatent + i % kLatent] = sl[r] > 0 ? so[i] / sl[r] : 0.f;
  }
  if (tid < valid_rows) a.part_lse[part + row0 + tid] = sl[tid] > 0 ? sm[tid] + logf(sl[tid]) : -INFINITY;
}

// ---- merge of normalised partial outputs by their log-sum-exp ----
__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(bf16 x) { return __bfloat162float(x); }

// out[b, row] = Σ_i exp(lse_i − max) · part_i[b, row] / Σ_i exp(lse_i − max), as bf16 rows of
// `width` values. part_o [batch, parts, rows, width], part_lse [batch, parts, rows]. Split-KV
// partials are fp32 (width 512), chunked expand's bf16 (width 128). CTA (row, sequence).
template <class Part>
__global__ void lse_merge_kernel(const Part* part_o, const float* part_lse, int parts, int rows, int width, bf16* out) {
  const int row = blockIdx.x, b = blockIdx.y;
  float m = -INFINITY;
  for (int s = 0; s < parts; ++s) m = fmaxf(m, part_lse[(static_cast<std::size_t>(b) * parts + s) * rows + row]);
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    float num = 0, den = 0;
    for (int s = 0; s < parts; ++s) {
      const std::size_t base = (static_cast<std::size_t>(b) * parts + s) * rows + row;
      const float w = m == -INFINITY ? 0.f : __expf(part_lse[base] - m);
      num += w * to_float(part_o[base * width + c]);
      den += w;
    }
    out[(static_cast<std::size_t>(b) * rows + row) * width + c] = __float2bfloat16(den > 0 ? num / den : 0.f);
  }
}

// rope[row, head·64 + c] = cache[row, 512 + c] for every head (cache rows 576 wide): one thread
// per 16 bytes (8 values) of the output.
constexpr int kRopeVec = 8;
__global__ void rope_broadcast_kernel(const bf16* cache, int rows, int heads, bf16* rope) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // output vector
  const std::size_t per_row = static_cast<std::size_t>(heads) * (kRope / kRopeVec);
  if (i >= static_cast<std::size_t>(rows) * per_row) return;
  const std::size_t row = i / per_row, part = i % (kRope / kRopeVec);
  *reinterpret_cast<int4*>(rope + i * kRopeVec) = *reinterpret_cast<const int4*>(cache + row * kLatentRow + kLatent + part * kRopeVec);
}

// ---- flash attention, expand path (all keys) and chunked expand (one chunk) ----
// Shared memory: q [16][192] bf16 | k [64][192] bf16 | v [64][128] bf16 | s [16][64] f32 |
// p [16][64] bf16 | o [16][128] f32 | m, l, corr [16] f32.
constexpr int kMhaSmem = kRows * kQK * 2 + kKeys * kQK * 2 + kKeys * kValue * 2 + kRows * kKeys * 4 + kRows * kKeys * 2 +
                         kRows * kValue * 4 + 3 * kRows * 4;

// CTA (token tile, head, sequence).
__global__ void __launch_bounds__(kThreads) flash_mha_kernel(MhaArgs a) {
  MLAPLAN_DYNAMIC_SMEM(smem);
  bf16* sq = reinterpret_cast<bf16*>(smem);
  bf16* sk = sq + kRows * kQK;
  bf16* sv = sk + kKeys * kQK;
  float* ss = reinterpret_cast<float*>(sv + kKeys * kValue);
  bf16* sp = reinterpret_cast<bf16*>(ss + kRows * kKeys);
  float* so = reinterpret_cast<float*>(sp + kRows * kKeys);
  float* sm = so + kRows * kValue;
  float* sl = sm + kRows;
  float* sc = sl + kRows;

  const int tid = threadIdx.x, warp = tid / 32;
  const int t0 = blockIdx.x * kRows, head = blockIdx.y, b = blockIdx.z;
  const int keys = a.prefix + a.query, h = a.heads;
  const int key_end = a.key_begin + a.key_count;  // this call's keys: key_begin .. key_end − 1
  const bf16* qn = static_cast<const bf16*>(a.q_nope);
  const bf16* qr = static_cast<const bf16*>(a.q_rope);
  const bf16* kv = static_cast<const bf16*>(a.kv);
  const bf16* rope = static_cast<const bf16*>(a.rope);

  for (int i = tid; i < kRows * kQK; i += kThreads) {
    const int r = i / kQK, c = i % kQK, t = t0 + r;
    bf16 v = __float2bfloat16(0.f);
    if (t < a.query) {
      const std::size_t row = static_cast<std::size_t>(b) * a.query + t;
      v = c < kNope ? qn[row * h * kNope + head * kNope + c] : qr[row * h * kRope + head * kRope + c - kNope];
    }
    sq[i] = v;
  }
  for (int i = tid; i < kRows * kValue; i += kThreads) so[i] = 0.f;
  if (tid < kRows) sm[tid] = -INFINITY, sl[tid] = 0.f;
  __syncthreads();

  auto last_key = [&](int r) {
    const int t = t0 + r;
    if (t >= a.query) return -1;
    return min(key_end - 1, a.causal ? causal_last_key(a.prefix, t, keys) : keys - 1);
  };
  const int last_row = min(a.query - 1, t0 + kRows - 1);
  const int last_tile_key = min(key_end - 1, a.causal ? causal_last_key(a.prefix, last_row, keys) : keys - 1);

  for (int key0 = a.key_begin; key0 <= last_tile_key; key0 += kKeys) {
    for (int i = tid; i < kKeys * kQK; i += kThreads) {
      const int j = i / kQK, c = i % kQK, key = key0 + j;
      bf16 v = __float2bfloat16(0.f);
      if (key < key_end) {
        const std::size_t row = static_cast<std::size_t>(b) * a.kv_rows + (key - a.key_begin);
        v = c < kNope ? kv[row * h * (kNope + kValue) + head * (kNope + kValue) + c] : rope[row * h * kRope + head * kRope + c - kNope];
      }
      sk[i] = v;
    }
    for (int i = tid; i < kKeys * kValue; i += kThreads) {
      const int j = i / kValue, c = i % kValue, key = key0 + j;
      bf16 v = __float2bfloat16(0.f);
      if (key < key_end) {
        const std::size_t row = static_cast<std::size_t>(b) * a.kv_rows + (key - a.key_begin);
        v = kv[row * h * (kNope + kValue) + head * (kNope + kValue) + kNope + c];
      }
      sv[i] = v;
    }
    __syncthreads();
    score_tile(ss, warp * 16, sq, sk + warp * 16 * kQK, kQK);
    __syncthreads();
    softmax_step(ss, sp, sm, sl, sc, key0, a.scale, last_key, tid);
    __syncthreads();
    for (int i = tid; i < kRows * kValue; i += kThreads) so[i] *= sc[i / kValue];
    __syncthreads();
    for (int nt = warp * 2; nt < warp * 2 + 2; ++nt) pv_tile(so + nt * 16, kValue, sp, sv + nt * 16, kValue);  // two of 8 tiles per warp
    __syncthreads();
  }
  bf16* out = static_cast<bf16*>(a.out);
  for (int i = tid; i < kRows * kValue; i += kThreads) {
    const int r = i / kValue, t = t0 + r;
    if (t < a.query)
      out[(static_cast<std::size_t>(b) * a.query + t) * h * kValue + head * kValue + i % kValue] =
          __float2bfloat16(sl[r] > 0 ? so[i] / sl[r] : 0.f);
  }
  if (a.lse && tid < kRows && t0 + tid < a.query)
    a.lse[(static_cast<std::size_t>(b) * a.query + t0 + tid) * h + head] = sl[tid] > 0 ? sm[tid] + logf(sl[tid]) : -INFINITY;
}

// ---- random inputs ----
// splitmix64's finaliser: a counter-based hash, so a value depends only on (seed, index).
__device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// p[i] = bf16 of a uniform value in [−scale, scale) for i < n (grid-stride).
__global__ void fill_uniform_kernel(bf16* p, std::size_t n, std::uint64_t seed, float scale) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t bits = mix64(seed ^ mix64(i));
    const float u = static_cast<float>(static_cast<std::uint32_t>(bits >> 40)) * (1.0f / 16777216.0f);  // [0, 1)
    p[i] = __float2bfloat16((2.0f * u - 1.0f) * scale);
  }
}

// ---- launch geometry, shared by the CUDA wrappers and the host shim ----
inline dim3 decode_grid(const DecodeArgs& a) { return dim3((a.query * a.heads + kRows - 1) / kRows, a.splits, a.batch); }
inline dim3 mha_grid(const MhaArgs& a) { return dim3((a.query + kRows - 1) / kRows, a.heads, a.batch); }
inline dim3 merge_grid(int batch, int rows) { return dim3(rows, batch); }
inline dim3 rope_grid(int rows, int heads) {
  const std::size_t vectors = static_cast<std::size_t>(rows) * heads * (kRope / kRopeVec);
  return dim3(static_cast<unsigned>((vectors + kRopeThreads - 1) / kRopeThreads));
}
inline dim3 fill_grid(std::size_t n) {
  const std::size_t blocks = (n + kFillThreads - 1) / kFillThreads;
  return dim3(static_cast<unsigned>(blocks < 1 ? 1 : blocks > kFillMaxBlocks ? kFillMaxBlocks : blocks));
}

}  // namespace mlaplan::validate::gpu::MLAPLAN_KERNELS_NS
