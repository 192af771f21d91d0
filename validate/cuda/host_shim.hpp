#pragma once
// Runs the CUDA kernels of mla_kernels.cuh on the host, so that tests check them without a GPU or
// nvcc (tests/cuda/). What it models, and how strictly:
//   - ONE HOST THREAD PER CUDA THREAD: a launch starts blockDim threads; each runs the CTAs of the
//     grid in order (x fastest), so a CTA's threads really run concurrently.
//   - __syncthreads() is a real barrier (pthread_barrier_t, which ThreadSanitizer understands). A
//     CTA whose threads do not reach the same __syncthreads() calls aborts.
//   - Dynamic shared memory per CTA, 128-byte aligned, exactly the size launched (AddressSanitizer
//     sees overruns), filled with 0xFF (NaN in bf16 and fp32) before every CTA.
//   - bf16 with round-to-nearest-even conversions; __expf, fmaxf, min, max, int4.
//   - nvcuda::wmma m16n16k16 (bf16 A and B, fp32 accumulator, row or column major) that checks the
//     WMMA rules, aborting with a message naming the rule: pointers 256-bit (32-byte) aligned; ldm
//     a multiple of 8 elements for 16-bit types and of 4 for float; whole warps. Operations are
//     warp-collective without data races: lane L of a warp owns accumulator elements 8L .. 8L + 7
//     (row L/2, columns 8·(L%2) ..) and computes, loads and stores only those; A and B loads read
//     the whole tile.
// Include it only in a file that compiles the kernels for the host, after every other header: it
// defines CUDA's keywords (__global__, __device__, __launch_bounds__, __align__) as macros.
#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
// `extern __shared__ unsigned char name[]` on the device; the CTA's buffer here.
#define MLAPLAN_DYNAMIC_SMEM(name) unsigned char* const name = ::mlaplan::validate::shim::dynamic_shared_memory()

namespace mlaplan::validate::shim {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "host shim: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

// The executing thread's coordinates, set by launch().
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

// One launch: its CTA barrier, shared memory, and what each thread last waited at the barrier for
// (two barriers' worth, so that thread 0 checks one round while the others record the next).
struct Launch {
  pthread_barrier_t barrier{};
  unsigned threads = 0;
  unsigned char* smem = nullptr;
  std::size_t smem_bytes = 0;
  std::vector<unsigned> arrivals;  // [round parity][thread]: the k-th __syncthreads() of the CTA, or kStartOfCta / kEndOfCta
};
inline constexpr unsigned kStartOfCta = ~0u, kEndOfCta = ~0u - 1;
inline thread_local Launch* current = nullptr;
inline thread_local unsigned linear_tid = 0;
inline thread_local std::size_t rounds = 0;          // barrier rounds this thread has passed in the launch
inline thread_local unsigned syncs_in_cta = 0;       // __syncthreads() calls in the current CTA

inline unsigned char* dynamic_shared_memory() {
  if (!current) fail("dynamic shared memory used outside a launch");
  return current->smem;
}

// Every barrier of a CTA: the threads meet, and thread 0 checks that they all came for the same
// reason (the same __syncthreads() of the CTA, or its start or end). A thread that skips a
// __syncthreads() others reach is caught at the first round where they differ, instead of
// silently pairing with another barrier (or hanging).
inline void cta_barrier(Launch& l, unsigned why) {
  const std::size_t row = (rounds % 2) * l.threads;
  l.arrivals[row + linear_tid] = why;
  const int rc = pthread_barrier_wait(&l.barrier);
  if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) fail("pthread_barrier_wait failed");
  ++rounds;
  if (linear_tid == 0)
    for (unsigned u = 0; u < l.threads; ++u)
      if (l.arrivals[row + u] != why) fail("__syncthreads() reached by some threads of a CTA and not by others (or a different number of times)");
}

inline void __syncthreads() {
  if (!current) fail("__syncthreads() outside a launch");
  cta_barrier(*current, ++syncs_in_cta);
}

// ---- bf16: the bit pattern of a float's upper half, rounded to nearest even ----
struct __nv_bfloat16 {
  std::uint16_t bits;
};
inline __nv_bfloat16 __float2bfloat16(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x40u)};  // NaN stays a (quiet) NaN
  u += 0x7FFFu + ((u >> 16) & 1u);
  return {static_cast<std::uint16_t>(u >> 16)};
}
inline float __bfloat162float(__nv_bfloat16 h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h.bits) << 16;
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float __expf(float x) { return std::exp(x); }
template <class T>
constexpr T min(T a, T b) { return b < a ? b : a; }
template <class T>
constexpr T max(T a, T b) { return a < b ? b : a; }

// 16-byte vector; may_alias: the kernels copy bf16 and fp32 buffers through it, as CUDA code does.
struct __attribute__((may_alias, aligned(16))) int4 {
  int x, y, z, w;
};

// Runs kernel(args...) over grid × block: one host thread per CUDA thread, every thread running
// the CTAs in order. Per CTA: with shared memory, the threads poison it (a slice each) and meet at
// a barrier; after the kernel, all meet again. Kernels without shared memory need only the second.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem_bytes, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "launch: argument count differs from the kernel's");
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > 1024) fail("launch: a CTA needs 1 to 1024 threads");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) fail("launch: empty grid");
  Launch l;
  l.threads = threads;
  l.smem_bytes = smem_bytes;
  l.arrivals.assign(2 * static_cast<std::size_t>(threads), 0);
  struct Free {
    void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t{128}); }
  };
  std::unique_ptr<unsigned char, Free> smem(static_cast<unsigned char*>(::operator new(smem_bytes ? smem_bytes : 1, std::align_val_t{128})));
  l.smem = smem.get();
  if (pthread_barrier_init(&l.barrier, nullptr, threads) != 0) fail("pthread_barrier_init failed");
  const std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
  const std::size_t slice = (smem_bytes + threads - 1) / threads;
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&l, &params, kernel, grid, block, t, slice] {
      current = &l;
      linear_tid = t;
      rounds = 0;
      threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
      blockDim = block;
      gridDim = grid;
      for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
          for (unsigned x = 0; x < grid.x; ++x) {
            syncs_in_cta = 0;
            if (l.smem_bytes > 0) {  // NaN: reading unwritten shared memory shows
              const std::size_t begin = std::min(l.smem_bytes, t * slice), end = std::min(l.smem_bytes, begin + slice);
              std::memset(l.smem + begin, 0xFF, end - begin);
              cta_barrier(l, kStartOfCta);
            }
            blockIdx = uint3{x, y, z};
            std::apply(kernel, params);
            cta_barrier(l, kEndOfCta);
          }
      current = nullptr;
    });
  for (std::thread& th : pool) th.join();
  pthread_barrier_destroy(&l.barrier);
}

}  // namespace mlaplan::validate::shim

// ---- WMMA, m16n16k16, bf16 × bf16 → fp32 ----
namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

// The whole 16 x 16 tile, in canonical order: A (row, k), B (k, col), accumulator (row, col), each
// at index 16·first + second. An accumulator's lane uses only the 8 elements it owns.
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "host shim: WMMA shape m16n16k16 only");
  static_assert(std::is_same_v<Use, accumulator> ? std::is_same_v<T, float> && std::is_void_v<Layout>
                                                 : std::is_same_v<T, ::mlaplan::validate::shim::__nv_bfloat16> &&
                                                       (std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>),
                "host shim: WMMA bf16 A/B (row or column major) with an fp32 accumulator only");
  T x[256];
};

namespace detail {

inline unsigned lane(const char* op) {
  namespace s = ::mlaplan::validate::shim;
  if ((s::blockDim.x * s::blockDim.y * s::blockDim.z) % 32 != 0) {
    std::fprintf(stderr, "host shim: WMMA rule broken in %s: warp-collective operations need whole warps (a CTA of a multiple of 32 threads)\n", op);
    std::abort();
  }
  return s::linear_tid % 32;
}

template <class T>
void check_rules(const char* op, const T* p, unsigned ldm) {
  if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0) {
    std::fprintf(stderr, "host shim: WMMA rule broken in %s: the pointer must be 256-bit (32-byte) aligned (pointer %p, ldm %u)\n", op,
                 static_cast<const void*>(p), ldm);
    std::abort();
  }
  if (sizeof(T) == 2 && ldm % 8 != 0) {
    std::fprintf(stderr, "host shim: WMMA rule broken in %s: ldm must be a multiple of 8 elements for 16-bit types (ldm %u)\n", op, ldm);
    std::abort();
  }
  if (sizeof(T) == 4 && ldm % 4 != 0) {
    std::fprintf(stderr, "host shim: WMMA rule broken in %s: ldm must be a multiple of 4 elements for float (ldm %u)\n", op, ldm);
    std::abort();
  }
}

// Offset of element (first, second) of a tile stored with leading dimension ldm.
inline std::size_t offset(bool row_major_storage, int first, int second, unsigned ldm) {
  return row_major_storage ? static_cast<std::size_t>(first) * ldm + static_cast<std::size_t>(second)
                           : static_cast<std::size_t>(second) * ldm + static_cast<std::size_t>(first);
}

}  // namespace detail

template <class Use, class T, class Layout>
void fill_fragment(fragment<Use, 16, 16, 16, T, Layout>& f, const T& v) {
  if constexpr (std::is_same_v<Use, accumulator>) {
    const unsigned l = detail::lane("fill_fragment");
    for (unsigned e = l * 8; e < l * 8 + 8; ++e) f.x[e] = v;
  } else {
    for (T& e : f.x) e = v;
  }
}

// A or B: every lane reads the whole tile (reads do not race).
template <class Use, class T, class Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, const T* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>, "host shim: an accumulator load takes a layout_t");
  detail::lane("load_matrix_sync");
  detail::check_rules("load_matrix_sync", p, ldm);
  // A row major: (row, k) at row·ldm + k; B row major: (k, col) at k·ldm + col; column major swaps.
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) f.x[i * 16 + j] = p[detail::offset(std::is_same_v<Layout, row_major>, i, j, ldm)];
}

// Accumulator: each lane loads its own 8 elements.
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float>& f, const float* p, unsigned ldm, layout_t layout) {
  const unsigned l = detail::lane("load_matrix_sync");
  detail::check_rules("load_matrix_sync", p, ldm);
  for (unsigned e = l * 8; e < l * 8 + 8; ++e)
    f.x[e] = p[detail::offset(layout == mem_row_major, static_cast<int>(e / 16), static_cast<int>(e % 16), ldm)];
}

// d = a · b + c on the lane's own 8 elements (fp32 accumulation of exact bf16 products).
template <class LayoutA, class LayoutB>
void mma_sync(fragment<accumulator, 16, 16, 16, float>& d, const fragment<matrix_a, 16, 16, 16, ::mlaplan::validate::shim::__nv_bfloat16, LayoutA>& a,
              const fragment<matrix_b, 16, 16, 16, ::mlaplan::validate::shim::__nv_bfloat16, LayoutB>& b,
              const fragment<accumulator, 16, 16, 16, float>& c) {
  namespace s = ::mlaplan::validate::shim;
  const unsigned l = detail::lane("mma_sync");
  for (unsigned e = l * 8; e < l * 8 + 8; ++e) {
    const unsigned i = e / 16, j = e % 16;
    float acc = c.x[e];
    for (unsigned k = 0; k < 16; ++k) acc += s::__bfloat162float(a.x[i * 16 + k]) * s::__bfloat162float(b.x[k * 16 + j]);
    d.x[e] = acc;
  }
}

// Each lane stores its own 8 elements: the lanes of a warp never write the same address.
inline void store_matrix_sync(float* p, const fragment<accumulator, 16, 16, 16, float>& f, unsigned ldm, layout_t layout) {
  const unsigned l = detail::lane("store_matrix_sync");
  detail::check_rules("store_matrix_sync", p, ldm);
  for (unsigned e = l * 8; e < l * 8 + 8; ++e)
    p[detail::offset(layout == mem_row_major, static_cast<int>(e / 16), static_cast<int>(e % 16), ldm)] = f.x[e];
}

}  // namespace nvcuda::wmma
