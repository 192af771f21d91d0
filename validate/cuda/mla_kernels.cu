#include "mla_kernels.hpp"

#include <cuda_bf16.h>
#include <mma.h>

#include <cmath>

namespace mlaplan::validate::gpu {

namespace {

using bf16 = __nv_bfloat16;
using namespace nvcuda;

constexpr int kRows = 16;     // query rows per CTA (one m16 tile)
constexpr int kThreads = 128; // four warps
constexpr int kKeys = 64;     // keys per step (one page)

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Copies `bytes` (a multiple of 16) with 16-byte vector loads.
__device__ void copy16(void* dst, const void* src, int bytes, int tid) {
  for (int i = tid * 16; i < bytes; i += kThreads * 16)
    *reinterpret_cast<int4*>(static_cast<char*>(dst) + i) = *reinterpret_cast<const int4*>(static_cast<const char*>(src) + i);
}

// Scores of the 16 query rows against 16 keys: q [16 x width] · keys[16 x width]ᵀ, stored as
// columns col0 .. col0 + 15 of s [16 x 64]. Keys are read as Kᵀ (column-major).
__device__ void score_tile(float* s, int col0, const bf16* q, const bf16* keys, int width) {
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
__device__ void pv_tile(float* o_tile, int ldo, const bf16* p, const bf16* v_tile, int ldv) {
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
// last_key(r) is the last key row r may see (−1: the row is padding).
template <class LastKey>
__device__ void softmax_step(float* s, bf16* p, float* m, float* l, float* corr, int key0, float scale, LastKey last_key, int tid) {
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
// o [16][512] f32 | m, l, corr [16] f32.
constexpr int kDecodeSmem = kRows * kLatentRow * 2 + kKeys * kLatentRow * 2 + kRows * kKeys * 4 + kRows * kKeys * 2 +
                            kRows * kLatent * 4 + 3 * kRows * 4;

__global__ void __launch_bounds__(kThreads) absorbed_decode_kernel(DecodeArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
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

  const bf16* q = static_cast<const bf16*>(a.q) + (static_cast<size_t>(b) * rows + row0) * kLatentRow;
  const int valid_rows = min(kRows, rows - row0);
  copy16(sq, q, valid_rows * kLatentRow * 2, tid);
  for (int i = valid_rows * kLatentRow + tid; i < kRows * kLatentRow; i += kThreads) sq[i] = __float2bfloat16(0.f);
  for (int i = tid; i < kRows * kLatent; i += kThreads) so[i] = 0.f;
  if (tid < kRows) sm[tid] = -INFINITY, sl[tid] = 0.f;
  __syncthreads();

  // A row (token t, head) sees the keys up to prefix + t.
  auto last_key = [&](int r) { return row0 + r < rows ? min(keys - 1, a.prefix + (row0 + r) / a.heads) : -1; };

  for (int pg = p_begin; pg < p_end; ++pg) {
    const int page = a.block_table[b * a.max_pages + pg];
    copy16(sk, static_cast<const bf16*>(a.cache) + static_cast<size_t>(page) * kPage * kLatentRow, kKeys * kLatentRow * 2, tid);
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

  const size_t part = (static_cast<size_t>(b) * a.splits + split) * rows;
  for (int i = tid; i < valid_rows * kLatent; i += kThreads) {
    const int r = i / kLatent;
    a.part_o[(part + row0 + r) * kLatent + i % kLatent] = sl[r] > 0 ? so[i] / sl[r] : 0.f;
  }
  if (tid < valid_rows) a.part_lse[part + row0 + tid] = sl[tid] > 0 ? sm[tid] + logf(sl[tid]) : -INFINITY;
}

__global__ void lse_merge_kernel(const float* part_o, const float* part_lse, int splits, int rows, int width, bf16* out) {
  const int row = blockIdx.x, b = blockIdx.y;
  float m = -INFINITY;
  for (int s = 0; s < splits; ++s) m = fmaxf(m, part_lse[(static_cast<size_t>(b) * splits + s) * rows + row]);
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    float num = 0, den = 0;
    for (int s = 0; s < splits; ++s) {
      const size_t base = (static_cast<size_t>(b) * splits + s) * rows + row;
      const float w = m == -INFINITY ? 0.f : __expf(part_lse[base] - m);
      num += w * part_o[base * width + c];
      den += w;
    }
    out[(static_cast<size_t>(b) * rows + row) * width + c] = __float2bfloat16(den > 0 ? num / den : 0.f);
  }
}

__global__ void rope_broadcast_kernel(const bf16* cache, int rows, int heads, bf16* rope) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t total = static_cast<size_t>(rows) * heads * kRope;
  if (i >= total) return;
  const size_t row = i / (static_cast<size_t>(heads) * kRope);
  rope[i] = cache[row * kLatentRow + kLatent + i % kRope];
}

// ---- flash attention, expand path ----
// Shared memory: q [16][192] bf16 | k [64][192] bf16 | v [64][128] bf16 | s [16][64] f32 |
// p [16][64] bf16 | o [16][128] f32 | m, l, corr [16] f32.
constexpr int kQK = kNope + kRope;
constexpr int kMhaSmem = kRows * kQK * 2 + kKeys * kQK * 2 + kKeys * kValue * 2 + kRows * kKeys * 4 + kRows * kKeys * 2 +
                         kRows * kValue * 4 + 3 * kRows * 4;

__global__ void __launch_bounds__(kThreads) flash_mha_kernel(MhaArgs a) {
  extern __shared__ __align__(128) unsigned char smem[];
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
  const bf16* qn = static_cast<const bf16*>(a.q_nope);
  const bf16* qr = static_cast<const bf16*>(a.q_rope);
  const bf16* kv = static_cast<const bf16*>(a.kv);
  const bf16* rope = static_cast<const bf16*>(a.rope);

  for (int i = tid; i < kRows * kQK; i += kThreads) {
    const int r = i / kQK, c = i % kQK, t = t0 + r;
    bf16 v = __float2bfloat16(0.f);
    if (t < a.query) {
      const size_t row = static_cast<size_t>(b) * a.query + t;
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
    return a.causal ? a.prefix + t : keys - 1;
  };
  const int last_tile_key = a.causal ? min(keys - 1, a.prefix + min(a.query - 1, t0 + kRows - 1)) : keys - 1;

  for (int key0 = 0; key0 <= last_tile_key; key0 += kKeys) {
    for (int i = tid; i < kKeys * kQK; i += kThreads) {
      const int j = i / kQK, c = i % kQK, key = key0 + j;
      bf16 v = __float2bfloat16(0.f);
      if (key < keys) {
        const size_t row = static_cast<size_t>(b) * a.s_pad + key;
        v = c < kNope ? kv[row * h * (kNope + kValue) + head * (kNope + kValue) + c] : rope[row * h * kRope + head * kRope + c - kNope];
      }
      sk[i] = v;
    }
    for (int i = tid; i < kKeys * kValue; i += kThreads) {
      const int j = i / kValue, c = i % kValue, key = key0 + j;
      sv[i] = key < keys ? kv[(static_cast<size_t>(b) * a.s_pad + key) * h * (kNope + kValue) + head * (kNope + kValue) + kNope + c]
                         : __float2bfloat16(0.f);
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
      out[(static_cast<size_t>(b) * a.query + t) * h * kValue + head * kValue + i % kValue] =
          __float2bfloat16(sl[r] > 0 ? so[i] / sl[r] : 0.f);
  }
}

}  // namespace

cudaError_t absorbed_decode(const DecodeArgs& a, cudaStream_t stream) {
  cudaError_t e = cudaFuncSetAttribute(absorbed_decode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kDecodeSmem);
  if (e != cudaSuccess) return e;
  const dim3 grid((a.query * a.heads + kRows - 1) / kRows, a.splits, a.batch);
  absorbed_decode_kernel<<<grid, kThreads, kDecodeSmem, stream>>>(a);
  return cudaGetLastError();
}

cudaError_t lse_merge(const float* part_o, const float* part_lse, int batch, int splits, int rows, int width, void* out, cudaStream_t stream) {
  lse_merge_kernel<<<dim3(rows, batch), 128, 0, stream>>>(part_o, part_lse, splits, rows, width, static_cast<bf16*>(out));
  return cudaGetLastError();
}

cudaError_t rope_broadcast(const void* cache, int rows, int heads, void* rope, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(rows) * heads * kRope;
  rope_broadcast_kernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(static_cast<const bf16*>(cache), rows, heads,
                                                                                         static_cast<bf16*>(rope));
  return cudaGetLastError();
}

cudaError_t flash_mha(const MhaArgs& a, cudaStream_t stream) {
  cudaError_t e = cudaFuncSetAttribute(flash_mha_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMhaSmem);
  if (e != cudaSuccess) return e;
  const dim3 grid((a.query + kRows - 1) / kRows, a.heads, a.batch);
  flash_mha_kernel<<<grid, kThreads, kMhaSmem, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace mlaplan::validate::gpu
