#include "cuda/cuda_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "cuda/mla_kernels.hpp"
#include "kernels_cpu.hpp"

namespace mlaplan::validate {

namespace {

// ---- errors: one line, naming the call ----
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("CUDA: {}: {}", what, cudaGetErrorString(e)));
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("cuBLAS: {}: status {}", what, static_cast<int>(e)));
}

std::size_t z(long long n) { return static_cast<std::size_t>(n); }

// ---- host bf16 (round to nearest even, as the device's __float2bfloat16) ----
std::uint16_t to_bf16(float f) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}
float from_bf16(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
void round_bf16(MatF& m) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = from_bf16(to_bf16(m.data()[i]));
}

// ---- device buffers ----
template <class T>
struct Device {
  T* p = nullptr;
  std::size_t n = 0;
  Device() = default;
  explicit Device(std::size_t count) : n(count) { check(cudaMalloc(&p, std::max<std::size_t>(1, n) * sizeof(T)), "cudaMalloc"); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  Device(Device&& o) noexcept : p(std::exchange(o.p, nullptr)), n(std::exchange(o.n, 0)) {}
  Device& operator=(Device&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  ~Device() {
    if (p) cudaFree(p);
  }
  std::size_t bytes() const { return n * sizeof(T); }
  void poison() { check(cudaMemset(p, 0xFF, bytes()), "cudaMemset"); }  // NaN in bf16 and fp32
};
using Bf16 = Device<std::uint16_t>;

Bf16 upload_bf16(const MatF& m) {
  std::vector<std::uint16_t> h(z(m.size()));
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = to_bf16(m.data()[i]);
  Bf16 d(h.size());
  check(cudaMemcpy(d.p, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  return d;
}
template <class T>
Device<T> upload(const std::vector<T>& v) {
  Device<T> d(v.size());
  check(cudaMemcpy(d.p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return d;
}
MatF download_bf16(const std::uint16_t* p, Eigen::Index rows, Eigen::Index cols) {
  std::vector<std::uint16_t> h(z(rows * cols));
  check(cudaMemcpy(h.data(), p, h.size() * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
  MatF m(rows, cols);
  for (std::size_t i = 0; i < h.size(); ++i) m.data()[i] = from_bf16(h[i]);
  return m;
}

// ---- one step's buffers, laid out as the kernels expect ----
// The latent cache is paged (64 tokens) with each sequence's pages contiguous, so the expand path
// reads it as [batch · s_pad, 576] rows; the checks also run the decode over a copy whose pages are
// shuffled (`paged`). Chunked expand (batch 1) reuses one chunk's workspace chunk after chunk.
struct Step {
  MlaShape s;
  int pages = 0, s_pad = 0, splits = 1, chunks = 1;
  bool expand = false, chunked = false;
  Bf16 cache, q_nope, q_rope, q_full, o_lat, out, w_uk, w_uv, w_ukv;
  Device<int> table;
  Device<float> part_o, part_lse;       // split-KV partials (splits > 1)
  Bf16 kv, rope;                        // expand: [B·s_pad, h·256], [B·s_pad, h·64]
  Bf16 kv_chunk, rope_chunk, chunk_o;   // chunked: [C, h·256], [C, h·64], [chunks, T·h, 128]
  Device<float> chunk_lse;              // [chunks, T·h]
  Bf16 paged;                           // checks: the cache with its pages shuffled
  Device<int> paged_table;
};

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Splits of absorbed decode: enough CTAs for two waves over the SMs, no split without a page.
int choose_splits(const MlaShape& s, int sms) {
  const int pages = ceil_div(s.keys(), gpu::kPage), tiles = s.batch * ceil_div(s.query * s.heads, 16);
  const int splits = std::clamp(ceil_div(2 * sms, tiles), 1, pages);
  return ceil_div(pages, ceil_div(pages, splits));
}

double expand_bytes(const MlaShape& s, int s_pad) {
  return static_cast<double>(s.batch) * s_pad * s.heads * (s.d_n + s.d_v + s.d_r) * 2.0;
}
double chunk_bytes(const MlaShape& s, int chunks) {
  return static_cast<double>(s.chunk) * s.heads * (s.d_n + s.d_v + s.d_r) * 2.0 + static_cast<double>(chunks) * s.tokens() * s.heads * (s.d_v * 2.0 + 4);
}
std::size_t free_memory() {
  std::size_t free_b = 0, total_b = 0;
  check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return free_b;
}

// Allocates a step; the expand and chunked paths (when wanted) only where their workspace fits in
// half the free memory (the absorb path always must).
Step allocate_step(const MlaShape& s, int splits, bool want_chunked, bool want_expand = true) {
  Step g;
  g.s = s;
  const int S = s.keys(), h = s.heads, T = s.tokens();
  g.pages = ceil_div(S, gpu::kPage);
  g.s_pad = g.pages * gpu::kPage;
  g.splits = splits;
  g.chunks = ceil_div(S, s.chunk);
  const std::size_t rows = z(s.batch) * z(g.s_pad);
  g.cache = Bf16(rows * z(s.r + s.d_r));
  g.q_nope = Bf16(z(T) * z(h) * z(s.d_n));
  g.q_rope = Bf16(z(T) * z(h) * z(s.d_r));
  g.q_full = Bf16(z(T) * z(h) * z(s.r + s.d_r));
  g.o_lat = Bf16(z(T) * z(h) * z(s.r));
  g.out = Bf16(z(T) * z(h) * z(s.d_v));
  g.w_uk = Bf16(z(h) * z(s.d_n) * z(s.r));
  g.w_uv = Bf16(z(h) * z(s.r) * z(s.d_v));
  g.w_ukv = Bf16(z(s.r) * z(h) * z(s.d_n + s.d_v));
  std::vector<int> table(z(s.batch) * z(g.pages));
  std::iota(table.begin(), table.end(), 0);
  g.table = upload(table);
  if (splits > 1) {
    g.part_o = Device<float>(z(s.batch) * z(splits) * z(s.query) * z(h) * z(s.r));
    g.part_lse = Device<float>(z(s.batch) * z(splits) * z(s.query) * z(h));
  }
  const double half_free = static_cast<double>(free_memory()) / 2;
  g.expand = want_expand && expand_bytes(s, g.s_pad) < half_free;
  if (g.expand) {
    g.kv = Bf16(rows * z(h) * z(s.d_n + s.d_v));
    g.rope = Bf16(rows * z(h) * z(s.d_r));
  }
  g.chunked = want_chunked && s.batch == 1 && g.chunks > 1 && chunk_bytes(s, g.chunks) < half_free;
  if (g.chunked) {
    g.kv_chunk = Bf16(z(s.chunk) * z(h) * z(s.d_n + s.d_v));
    g.rope_chunk = Bf16(z(s.chunk) * z(h) * z(s.d_r));
    g.chunk_o = Bf16(z(g.chunks) * z(T) * z(h) * z(s.d_v));
    g.chunk_lse = Device<float>(z(g.chunks) * z(T) * z(h));
  }
  return g;
}

// Timing inputs: bf16 of uniform values with the spread of make_buffers' normal ones (σ√3), made
// on the device. Random, not constant: a GEMM of zeros runs at a lower-power clock (~13% faster on
// H200). Outputs other ops read (q_full, o_lat, kv, rope) are filled too, so that an op timed
// alone reads random data.
void fill_random(Step& g, std::mt19937_64& rng, cudaStream_t stream) {
  const MlaShape& s = g.s;
  const float root3 = std::sqrt(3.0f);
  auto fill = [&](Bf16& d, double sigma) {
    if (d.n) check(gpu::fill_uniform_bf16(d.p, d.n, rng(), static_cast<float>(sigma) * root3, stream), "fill_uniform_bf16");
  };
  fill(g.cache, 1.0);
  fill(g.q_nope, 1.0 / std::sqrt(s.d_n));
  fill(g.q_rope, 1.0 / std::sqrt(s.d_r));
  fill(g.q_full, 1.0);
  fill(g.o_lat, 1.0 / std::sqrt(16.0));
  fill(g.w_uk, 1.0 / std::sqrt(s.r));
  fill(g.w_uv, 1.0 / std::sqrt(s.r));
  fill(g.w_ukv, 1.0 / std::sqrt(s.r));
  fill(g.kv, 1.0);
  fill(g.rope, 1.0);
  fill(g.kv_chunk, 1.0);
  fill(g.rope_chunk, 1.0);
  check(cudaStreamSynchronize(stream), "fill_uniform_bf16");
}

// Check inputs: the buffers' bf16-rounded values, the cache also paged in shuffled order.
void upload_data(Step& g, const MlaBuffers& data, std::mt19937_64& rng) {
  const MlaShape& s = g.s;
  const int S = s.keys(), h = s.heads, T = s.tokens();
  MatF cache = MatF::Zero(static_cast<Eigen::Index>(s.batch) * g.s_pad, s.r + s.d_r);
  for (int bi = 0; bi < s.batch; ++bi)
    cache.middleRows(static_cast<Eigen::Index>(bi) * g.s_pad, S) = data.cache.middleRows(static_cast<Eigen::Index>(bi) * S, S);
  g.cache = upload_bf16(cache);
  // Shuffled pages, with three pages no sequence uses.
  const int physical = s.batch * g.pages + 3;
  std::vector<int> perm(z(physical));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int> table(perm.begin(), perm.begin() + s.batch * g.pages);
  MatF paged = MatF::Constant(static_cast<Eigen::Index>(physical) * gpu::kPage, s.r + s.d_r, 7.0f);
  for (std::size_t i = 0; i < table.size(); ++i)
    paged.middleRows(static_cast<Eigen::Index>(table[i]) * gpu::kPage, gpu::kPage) = cache.middleRows(static_cast<Eigen::Index>(i) * gpu::kPage, gpu::kPage);
  g.paged = upload_bf16(paged);
  g.paged_table = upload(table);
  g.q_nope = upload_bf16(data.q_nope);
  g.q_rope = upload_bf16(data.q_rope);
  MatF q_full = MatF::Zero(T * h, s.r + s.d_r);  // the RoPE part; q_absorb writes the rest
  for (int t = 0; t < T; ++t)
    for (int head = 0; head < h; ++head) q_full.block(t * h + head, s.r, 1, s.d_r) = data.q_rope.block(t, head * s.d_r, 1, s.d_r);
  g.q_full = upload_bf16(q_full);
  MatF w_uk(h * s.d_n, s.r), w_uv(h * s.r, s.d_v);
  for (int head = 0; head < h; ++head) {
    w_uk.middleRows(head * s.d_n, s.d_n) = data.w_uk[z(head)];
    w_uv.middleRows(head * s.r, s.r) = data.w_uv[z(head)];
  }
  g.w_uk = upload_bf16(w_uk);
  g.w_uv = upload_bf16(w_uv);
  g.w_ukv = upload_bf16(data.w_ukv);
}

float softmax_scale(const MlaShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.d_n + s.d_r)); }

// ---- the ops, each as the cost model names it ----
struct Ops {
  cublasHandle_t blas = nullptr;
  cudaStream_t stream = nullptr;

  // q_absorb_w_uk: per head q_nope · W_UK into q_full[:, :512] (row-major views as column-major GEMMs).
  void q_absorb(Step& g) const {
    const MlaShape& s = g.s;
    const float one = 1, zero = 0;
    check(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, s.r, s.tokens(), s.d_n, &one, g.w_uk.p, CUDA_R_16BF, s.r,
                                     static_cast<long long>(s.d_n) * s.r, g.q_nope.p, CUDA_R_16BF, s.heads * s.d_n, s.d_n, &zero, g.q_full.p,
                                     CUDA_R_16BF, s.heads * (s.r + s.d_r), s.r + s.d_r, s.heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx (q_absorb_w_uk)");
  }
  // latent_attention_mqa: the decode kernel alone (one split: the bf16 latent output; several: partials).
  void decode(Step& g, bool shuffled = false) const {
    const MlaShape& s = g.s;
    const gpu::DecodeArgs a{.q = g.q_full.p,
                            .cache = shuffled ? g.paged.p : g.cache.p,
                            .block_table = shuffled ? g.paged_table.p : g.table.p,
                            .batch = s.batch,
                            .query = s.query,
                            .prefix = s.prefix,
                            .heads = s.heads,
                            .max_pages = g.pages,
                            .splits = g.splits,
                            .scale = softmax_scale(s),
                            .causal = s.causal,
                            .part_o = g.splits > 1 ? g.part_o.p : nullptr,
                            .part_lse = g.splits > 1 ? g.part_lse.p : nullptr,
                            .out = g.splits > 1 ? nullptr : g.o_lat.p};
    check(gpu::absorbed_decode(a, stream), "absorbed_decode");
  }
  // split_kv_merge.
  void split_merge(Step& g) const {
    check(gpu::split_kv_merge(g.part_o.p, g.part_lse.p, g.s.batch, g.splits, g.s.query * g.s.heads, g.o_lat.p, stream), "split_kv_merge");
  }
  // out_absorb_w_uv: per head o_lat · W_UV.
  void out_absorb(Step& g) const {
    const MlaShape& s = g.s;
    const float one = 1, zero = 0;
    check(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, s.d_v, s.tokens(), s.r, &one, g.w_uv.p, CUDA_R_16BF, s.d_v,
                                     static_cast<long long>(s.r) * s.d_v, g.o_lat.p, CUDA_R_16BF, s.heads * s.r, s.r, &zero, g.out.p, CUDA_R_16BF,
                                     s.heads * s.d_v, s.d_v, s.heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx (out_absorb_w_uv)");
  }
  // [rows, 512] cache rows (576 apart) · W_UKV → [rows, h·256].
  void up_project(const Step& g, const std::uint16_t* cache_rows, int rows, std::uint16_t* kv) const {
    const MlaShape& s = g.s;
    const float one = 1, zero = 0;
    const int n = s.heads * (s.d_n + s.d_v);
    check(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, rows, s.r, &one, g.w_ukv.p, CUDA_R_16BF, n, cache_rows, CUDA_R_16BF, s.r + s.d_r, &zero, kv,
                       CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx (kv_up_proj)");
  }
  void kv_up_proj(Step& g) const { up_project(g, g.cache.p, g.s.batch * g.s_pad, g.kv.p); }
  void rope(Step& g) const { check(gpu::rope_broadcast(g.cache.p, g.s.batch * g.s_pad, g.s.heads, g.rope.p, stream), "rope_broadcast"); }
  gpu::MhaArgs mha_args(Step& g) const {
    const MlaShape& s = g.s;
    return gpu::MhaArgs{.q_nope = g.q_nope.p,
                        .q_rope = g.q_rope.p,
                        .kv = g.kv.p,
                        .rope = g.rope.p,
                        .batch = s.batch,
                        .query = s.query,
                        .prefix = s.prefix,
                        .heads = s.heads,
                        .kv_rows = g.s_pad,
                        .key_begin = 0,
                        .key_count = s.keys(),
                        .scale = softmax_scale(s),
                        .causal = s.causal,
                        .out = g.out.p,
                        .lse = nullptr};
  }
  void attention(Step& g) const { check(gpu::flash_mha(mha_args(g), stream), "flash_mha"); }
  // Chunked expand, chunk c: keys c·C .. (batch 1, so the cache rows are the sequence's).
  int chunk_rows(const Step& g, int c) const { return std::min(g.s.chunk, g.s.keys() - c * g.s.chunk); }
  const std::uint16_t* chunk_cache(const Step& g, int c) const { return g.cache.p + z(c) * z(g.s.chunk) * z(g.s.r + g.s.d_r); }
  void kv_up_proj_chunk(Step& g, int c) const { up_project(g, chunk_cache(g, c), chunk_rows(g, c), g.kv_chunk.p); }
  void rope_chunk(Step& g, int c) const {
    check(gpu::rope_broadcast(chunk_cache(g, c), chunk_rows(g, c), g.s.heads, g.rope_chunk.p, stream), "rope_broadcast (chunk)");
  }
  void attention_chunk(Step& g, int c) const {
    gpu::MhaArgs a = mha_args(g);
    const std::size_t rows = z(g.s.tokens()) * z(g.s.heads);
    a.kv = g.kv_chunk.p;
    a.rope = g.rope_chunk.p;
    a.kv_rows = g.s.chunk;
    a.key_begin = c * g.s.chunk;
    a.key_count = chunk_rows(g, c);
    a.out = g.chunk_o.p + z(c) * rows * z(g.s.d_v);
    a.lse = g.chunk_lse.p + z(c) * rows;
    check(gpu::flash_mha(a, stream), "flash_mha (chunk)");
  }
  void chunk_merge(Step& g) const {
    check(gpu::chunk_lse_merge(g.chunk_o.p, g.chunk_lse.p, g.chunks, g.s.tokens() * g.s.heads, g.out.p, stream), "chunk_lse_merge");
  }
  // The chunked path as it runs: chunk by chunk through one workspace, then the merge.
  void chunked_path(Step& g) const {
    for (int c = 0; c < g.chunks; ++c) kv_up_proj_chunk(g, c), rope_chunk(g, c), attention_chunk(g, c);
    chunk_merge(g);
  }
  void absorb_path(Step& g, bool shuffled = false) const {
    q_absorb(g), decode(g, shuffled);
    if (g.splits > 1) split_merge(g);
    out_absorb(g);
  }
  void expand_path(Step& g) const { kv_up_proj(g), rope(g), attention(g); }
  void sync() const { check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }
};

// ---- timing ----
// Per timed function: two warm-up calls; the L2 flushed before every timed call when the function's
// working set (the bytes its ops declare, summed as they run) is under twice the L2, and otherwise
// N back-to-back calls per event pair covering ≥ 100 µs (per-call time = elapsed / N); before each
// event pair the stream is held while the host enqueues, so host launch latency is not timed. The
// median and the inter-quartile spread over the repeats.
struct GpuTimer {
  cudaStream_t stream = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  Device<unsigned char> flush_buffer;  // 2 × L2
  double l2_bytes = 0;
  double working_set = 0;  // added to by the timed function's ops as they run
  double budget_s = 0.02;
  int min_reps = 5, max_reps = 50;
  int flushed = 0, timed = 0;
  unsigned char flush_value = 0;

  GpuTimer(cudaStream_t s, std::size_t l2) : stream(s), flush_buffer(2 * l2), l2_bytes(static_cast<double>(l2)) {
    check(cudaEventCreate(&a), "cudaEventCreate");
    check(cudaEventCreate(&b), "cudaEventCreate");
  }
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;
  ~GpuTimer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }

  // Seconds of n back-to-back calls of f between two events.
  double event_pair(const std::function<void()>& f, int n, bool flush, double enqueue_s) {
    if (flush) check(cudaMemsetAsync(flush_buffer.p, ++flush_value, flush_buffer.bytes(), stream), "cudaMemsetAsync (L2 flush)");
    check(gpu::hold_stream(std::min(5e-3, 20e-6 + 1.5 * n * enqueue_s), stream), "hold_stream");
    check(cudaEventRecord(a, stream), "cudaEventRecord");
    for (int i = 0; i < n; ++i) f();
    check(cudaEventRecord(b, stream), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    return ms * 1e-3;
  }

  Timing operator()(const std::function<void()>& f) {
    working_set = 0;
    f();
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const double declared = working_set;
    const auto h0 = std::chrono::steady_clock::now();
    f();  // second warm-up, timing the host's enqueue
    const double enqueue_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const bool flush = declared < 2 * l2_bytes;
    const double one = event_pair(f, 1, flush, enqueue_s);
    const int n = flush ? 1 : static_cast<int>(std::clamp(std::ceil(100e-6 / std::max(one, 1e-7)), 1.0, 256.0));
    const int reps = one > 0.05 ? std::min(3, min_reps) : min_reps;  // calls over 50 ms vary little
    std::vector<double> t;
    double total = 0;
    while (static_cast<int>(t.size()) < reps || (total < budget_s && static_cast<int>(t.size()) < max_reps)) {
      const double s = event_pair(f, n, flush, enqueue_s);
      t.push_back(s / n);
      total += s;
    }
    ++timed;
    flushed += flush;
    return timing_of(std::move(t));
  }
};

// ---- checks ----
double max_rel_error(const MatF& got, const MatD& want, bool& nan) {
  nan = got.array().isNaN().any();
  const MatD g = got.cast<double>().array().isNaN().select(MatD::Zero(got.rows(), got.cols()), got.cast<double>());
  return (g - want).cwiseAbs().maxCoeff() / std::max(1e-30, want.cwiseAbs().maxCoeff());
}

KernelCheck check_of(std::string name, const MatF& got, const MatD& want, double bound) {
  bool nan = false;
  const double e = max_rel_error(got, want, nan);
  return KernelCheck{.kernel = std::move(name), .max_rel_error = e, .bound = bound, .poisoned_left = nan};
}

// Every path against float64 at small shapes: inputs rounded to bf16 before the reference sees
// them, queries scaled ×8 so that the softmax is peaked (a key too many or too few shows), the
// decode over shuffled pages, every output poisoned (NaN) first. The bound, 1e-2 of the
// reference's largest magnitude, is 2–3× the error of the same kernels on the host shim
// (tests/cuda), where an off-by-one causal mask errs by 0.25–0.42.
std::vector<KernelCheck> check_paths(const Ops& ops, const std::vector<MlaShape>& shapes, int sms, std::mt19937_64& rng) {
  constexpr double kBound = 1e-2;
  std::vector<KernelCheck> checks;
  for (const MlaShape& shape : shapes) {
    MlaBuffers b = make_buffers(shape, rng);
    b.q_nope *= 8.0f;
    b.q_rope *= 8.0f;
    round_bf16(b.cache), round_bf16(b.q_nope), round_bf16(b.q_rope), round_bf16(b.w_ukv);
    for (MatF& w : b.w_uk) round_bf16(w);
    for (MatF& w : b.w_uv) round_bf16(w);
    const MatD ref = reference_out(b);
    const int auto_splits = choose_splits(shape, sms);
    Step g = allocate_step(shape, std::max(2, auto_splits), true);
    upload_data(g, b, rng);
    const std::string tag = fmt::format("[h{} B{} Q{} P{}{}]", shape.heads, shape.batch, shape.query, shape.prefix, shape.causal ? "" : " non-causal");
    const auto T = static_cast<Eigen::Index>(shape.tokens()), width = static_cast<Eigen::Index>(shape.heads) * shape.d_v;
    for (int splits : {1, std::max(2, auto_splits)}) {
      g.splits = splits;
      g.out.poison(), g.o_lat.poison();
      if (splits > 1) g.part_o.poison(), g.part_lse.poison();
      ops.absorb_path(g, true);
      ops.sync();
      checks.push_back(check_of(splits == 1 ? fmt::format("absorb: cuBLAS folds, paged decode (1 split, bf16 output) {}", tag)
                                            : fmt::format("absorb: cuBLAS folds, paged decode ({} splits), split_kv_merge {}", splits, tag),
                                download_bf16(g.out.p, T, width), ref, kBound));
    }
    if (g.expand) {
      g.out.poison(), g.kv.poison(), g.rope.poison();
      ops.expand_path(g);
      ops.sync();
      checks.push_back(check_of(fmt::format("expand: cuBLAS kv_up_proj, rope_k_broadcast, flash attention {}", tag), download_bf16(g.out.p, T, width),
                                ref, kBound));
      // The up-projection against its float64 GEMM, on each sequence's first (up to) 64 keys.
      const int n = std::min(64, shape.keys());
      const Eigen::Index cols = static_cast<Eigen::Index>(shape.heads) * (shape.d_n + shape.d_v);
      const MatF kv_got = download_bf16(g.kv.p, static_cast<Eigen::Index>(shape.batch) * g.s_pad, cols);
      MatD kv_want(static_cast<Eigen::Index>(shape.batch) * n, cols);
      MatF kv_rows(kv_want.rows(), cols);
      const MatD w_ukv = b.w_ukv.cast<double>();
      for (int bi = 0; bi < shape.batch; ++bi) {
        kv_want.middleRows(static_cast<Eigen::Index>(bi) * n, n) = b.cache.block(static_cast<Eigen::Index>(bi) * shape.keys(), 0, n, shape.r).cast<double>() * w_ukv;
        kv_rows.middleRows(static_cast<Eigen::Index>(bi) * n, n) = kv_got.middleRows(static_cast<Eigen::Index>(bi) * g.s_pad, n);
      }
      checks.push_back(check_of(fmt::format("kv_up_proj (cuBLAS) {}", tag), kv_rows, kv_want, kBound));
    }
    if (g.chunked) {
      g.out.poison(), g.chunk_o.poison(), g.chunk_lse.poison(), g.kv_chunk.poison(), g.rope_chunk.poison();
      ops.chunked_path(g);
      ops.sync();
      checks.push_back(check_of(fmt::format("chunked: {} chunks of {}: kv_up_proj_chunk, rope_k_broadcast, flash attention, lse_merge {}", g.chunks,
                                            shape.chunk, tag),
                                download_bf16(g.out.p, T, width), ref, kBound));
    }
  }
  return checks;
}

// ---- calibration ----
struct Calibration {
  double copy_bytes_per_s = 0, gemm_flops_per_s = 0;
  std::size_t copy_bytes = 0;
  int gemm_n = 0;
};

Calibration calibrate(const Ops& ops, GpuTimer& timer, const CudaPlan& plan, std::mt19937_64& rng) {
  Calibration c;
  c.copy_bytes = plan.copy_bytes;
  {
    Device<unsigned char> src(c.copy_bytes), dst(c.copy_bytes);
    check(gpu::fill_uniform_bf16(src.p, c.copy_bytes / 2, rng(), 1.0f, ops.stream), "fill_uniform_bf16");
    const Timing t = timer([&] {
      timer.working_set += 2.0 * static_cast<double>(c.copy_bytes);
      check(cudaMemcpyAsync(dst.p, src.p, c.copy_bytes, cudaMemcpyDeviceToDevice, ops.stream), "cudaMemcpyAsync");
    });
    c.copy_bytes_per_s = 2.0 * static_cast<double>(c.copy_bytes) / t.median.value;
  }
  c.gemm_n = plan.gemm_n;
  const int n = c.gemm_n;
  const std::size_t nn = z(n) * z(n);
  Bf16 a(nn), b(nn), out(nn);
  check(gpu::fill_uniform_bf16(a.p, nn, rng(), 1.0f, ops.stream), "fill_uniform_bf16");
  check(gpu::fill_uniform_bf16(b.p, nn, rng(), 1.0f, ops.stream), "fill_uniform_bf16");
  const float one = 1, zero = 0;
  const Timing t = timer([&] {
    timer.working_set += 6.0 * static_cast<double>(nn);
    check(cublasGemmEx(ops.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.p, CUDA_R_16BF, n, b.p, CUDA_R_16BF, n, &zero, out.p, CUDA_R_16BF, n,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx (calibration)");
  });
  c.gemm_flops_per_s = 2.0 * n * static_cast<double>(n) * n / t.median.value;
  return c;
}

// Owns the stream and the cuBLAS handle.
struct Context {
  Ops ops;
  Context() {
    check(cudaStreamCreate(&ops.stream), "cudaStreamCreate");
    check(cublasCreate(&ops.blas), "cublasCreate");
    check(cublasSetStream(ops.blas, ops.stream), "cublasSetStream");
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() {
    if (ops.blas) cublasDestroy(ops.blas);
    if (ops.stream) cudaStreamDestroy(ops.stream);
  }
};

}  // namespace

double cuda_calls(PathKind path, OpId op, const MlaShape& s) {
  const double chunks = std::ceil(static_cast<double>(s.keys()) / s.chunk);
  switch (op) {
    case OpId::kv_up_proj_chunk:
    case OpId::attention_mha_chunk: return chunks;
    case OpId::rope_k_broadcast: return path == PathKind::chunked ? chunks : 0;  // once on expand, per chunk on chunked
    default: return 0;
  }
}

CudaPlan cuda_plan(bool quick) {
  return CudaPlan{
      .checks = {MlaShape{.heads = 16, .batch = 2, .query = 3, .prefix = 100},
                 MlaShape{.heads = 128, .batch = 1, .query = 4, .prefix = 200, .chunk = 96, .causal = false},
                 MlaShape{.heads = 8, .batch = 3, .query = 1, .prefix = 700},
                 MlaShape{.heads = 16, .batch = 1, .query = 20, .prefix = 300, .chunk = 128}},
      // Heads per rank as DeepSeek-V3's 128 under TP 8/4/2/1, batch, query and prefix; chunked
      // expand (batch 1) with chunks of 4096 keys.
      .grid = checkerboard_grid(quick ? std::vector<int>{16, 128} : std::vector<int>{16, 32, 64, 128},
                                quick ? std::vector<int>{1, 32} : std::vector<int>{1, 8, 32, 128},
                                quick ? std::vector<int>{1, 64} : std::vector<int>{1, 2, 16, 128},
                                quick ? std::vector<int>{1023, 8191} : std::vector<int>{1023, 8191, 32767}, 4096),
      // A path over 20 TFLOP a step would take seconds to time.
      .max_path_flops = 2e13,
      // The crossover at TP 8 and TP 1 head counts, batch 32, prefix 8191.
      .sweep_heads = quick ? std::vector<int>{128} : std::vector<int>{16, 128},
      .sweep_queries = {32, 64, 96, 128, 160, 192, 256, 384, 512},
      .sweep_batch = 32,
      .sweep_prefix = 8191,
      .copy_bytes = quick ? (std::size_t{512} << 20) : (std::size_t{4} << 30),
      .gemm_n = quick ? 4096 : 8192,
      .timing_budget_s = quick ? 0.005 : 0.02,
      .min_reps = 5,
      .max_reps = quick ? 20 : 50};
}

MeasuredRun measure_cuda(const CudaOptions& opt, const std::function<void(const std::string&)>& progress) {
  return measure_cuda(opt, cuda_plan(opt.quick), progress);
}

MeasuredRun measure_cuda(const CudaOptions& opt, const CudaPlan& plan, const std::function<void(const std::string&)>& progress) {
  const std::uint64_t seed = opt.seed ? opt.seed : (static_cast<std::uint64_t>(std::random_device{}()) << 32 | std::random_device{}());
  std::mt19937_64 rng(seed);
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0, l2 = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute (L2 cache size)");
  check(gpu::prepare_kernels(), "prepare_kernels");
  Context ctx;
  const Ops& ops = ctx.ops;
  int blas_version = 0;
  check(cublasGetVersion(ops.blas, &blas_version), "cublasGetVersion");
  const int sms = prop.multiProcessorCount;

  MeasuredRun mr;
  mr.title = fmt::format("CUDA validation of the MLA cost model on {}", prop.name);
  mr.command = "mlaplan validate --backend cuda";
  mr.quick = opt.quick;
  mr.seed = seed;
  mr.machine = fmt::format("{}, {} SMs, {:.1f} GiB, L2 {:.0f} MiB, compute capability {}.{}, driver {}, runtime {}, cuBLAS {}", prop.name, sms,
                           static_cast<double>(prop.totalGlobalMem) / static_cast<double>(kGiB), static_cast<double>(l2) / static_cast<double>(kMiB),
                           prop.major, prop.minor, driver, runtime, blas_version);
  mr.compute = DType::bf16;
  mr.kv = KvDtype::bf16;
  mr.weights = WeightDtype::bf16;
  mr.calls = cuda_calls;
  mr.kv_splits = [sms](const MlaShape& s) { return std::int64_t{choose_splits(s, sms)}; };
  mr.hardware_file = "calibrated-gpu.json";

  // 1. Every path against float64; a failure stops the run before any timing.
  progress("checking CUDA kernels against float64 references");
  mr.checks = check_paths(ops, plan.checks, sms, rng);
  if (!std::all_of(mr.checks.begin(), mr.checks.end(), [](const KernelCheck& c) { return c.ok(); })) return mr;

  // 2. Calibration: device-to-device copy bandwidth and cuBLAS bf16 GEMM throughput, random inputs.
  progress("calibrating copy bandwidth and cuBLAS GEMM");
  GpuTimer timer(ops.stream, z(l2));
  timer.budget_s = plan.timing_budget_s;
  timer.min_reps = plan.min_reps;
  timer.max_reps = plan.max_reps;
  const Timer time_fn = [&timer](const std::function<void()>& f) { return timer(f); };
  const Calibration cal = calibrate(ops, timer, plan, rng);
  HardwareSpec& hw = mr.hardware;
  hw.name = std::string(prop.name) + " (calibrated)";
  hw.vendor = "NVIDIA";
  hw.memory_capacity = Bytes{static_cast<std::int64_t>(prop.totalGlobalMem)};
  hw.memory_bandwidth = BytesPerSecond{cal.copy_bytes_per_s};
  hw.dense_peak[DType::bf16] = FlopsPerSecond{cal.gemm_flops_per_s};
  hw.sm_count = sms;
  hw.l2_cache = Bytes{l2};
  hw.sources = {{"memory_capacity", "cudaGetDeviceProperties: totalGlobalMem"},
                {"memory_bandwidth", fmt::format("measured: device-to-device copy of {} MiB, read + write (mlaplan validate)", cal.copy_bytes >> 20)},
                {"peak_bf16", fmt::format("measured: cuBLAS bf16 GEMM {0}x{0}x{0}, fp32 accumulation (mlaplan validate)", cal.gemm_n)},
                {"sm_count", "cudaGetDeviceProperties: multiProcessorCount"},
                {"l2_cache", "cudaDeviceGetAttribute: cudaDevAttrL2CacheSize"}};
  mr.rf = roofline_for(hw, DType::bf16, Efficiency{});
  mr.calibration = fmt::format("device-to-device copy {:.0f} GB/s; cuBLAS bf16 GEMM {:.0f} TFLOP/s; ridge {:.0f} FLOP/B", cal.copy_bytes_per_s / 1e9,
                               cal.gemm_flops_per_s / 1e12, mr.rf.ridge());

  // 3. The grid; a path over the plan's FLOP bound is left out at that shape, and counted.
  const Grid& grid = plan.grid;
  const double max_flops = plan.max_path_flops;
  std::size_t timed = 0, too_long = 0, no_memory = 0;
  double best_decode_bw = 0;
  for (std::size_t gi = 0; gi < grid.shapes.size(); ++gi) {
    const MlaShape& s = grid.shapes[gi];
    const ModelSpec m = model_for(s);
    Workload w = workload_for(s, mr.compute, mr.kv, mr.weights);
    const int splits = choose_splits(s, sms);
    w.kv_splits = splits;  // the plan then has split_kv_merge, and the decode writes fp32 partials
    const PathPlan absorb = mla_path(m, w, PathKind::absorb), expand = mla_path(m, w, PathKind::expand),
                   chunked = mla_path(m, w, PathKind::chunked);
    const bool time_absorb = absorb.flops().value <= max_flops, time_expand = expand.flops().value <= max_flops,
               time_chunked = chunked.flops().value <= max_flops;
    too_long += (time_absorb ? 0u : 1u) + (time_expand ? 0u : 1u);
    if (!time_absorb && !time_expand) continue;
    progress(fmt::format("timing shape {}/{}: {} heads, batch {}, Q {}, P {}", gi + 1, grid.shapes.size(), s.heads, s.batch, s.query, s.prefix));
    Step g = allocate_step(s, splits, time_chunked, time_expand);
    if (time_expand && !g.expand) ++no_memory;
    fill_random(g, rng, ops.stream);
    // Each op declares its bytes to the timer as it runs (for the L2-flush decision).
    auto op = [&timer](const PathPlan& path, OpId id, std::function<void()> f) {
      const double bytes = path.find(id) ? path.find(id)->bytes().value : 0;
      return OpKernel{id, [&timer, bytes, f = std::move(f)] {
                        timer.working_set += bytes;
                        f();
                      }};
    };
    std::vector<PathKernels> paths;
    PathKernels ab{PathKind::absorb, {op(absorb, OpId::q_absorb_w_uk, [&] { ops.q_absorb(g); }), op(absorb, OpId::latent_attention_mqa, [&] { ops.decode(g); })},
                   nullptr};
    if (splits > 1) ab.ops.push_back(op(absorb, OpId::split_kv_merge, [&] { ops.split_merge(g); }));
    ab.ops.push_back(op(absorb, OpId::out_absorb_w_uv, [&] { ops.out_absorb(g); }));
    if (time_absorb) paths.push_back(std::move(ab));
    if (g.expand)
      paths.push_back(PathKernels{PathKind::expand,
                                  {op(expand, OpId::kv_up_proj, [&] { ops.kv_up_proj(g); }), op(expand, OpId::rope_k_broadcast, [&] { ops.rope(g); }),
                                   op(expand, OpId::attention_mha, [&] { ops.attention(g); })},
                                  nullptr});
    if (g.chunked) {
      auto all_chunks = [&g](void (Ops::*f)(Step&, int) const, const Ops& o) {
        return [&g, f, &o] {
          for (int c = 0; c < g.chunks; ++c) (o.*f)(g, c);
        };
      };
      const double chunked_bytes = chunked.bytes().value;
      paths.push_back(PathKernels{PathKind::chunked,
                                  {op(chunked, OpId::kv_up_proj_chunk, all_chunks(&Ops::kv_up_proj_chunk, ops)),
                                   op(chunked, OpId::rope_k_broadcast, all_chunks(&Ops::rope_chunk, ops)),
                                   op(chunked, OpId::attention_mha_chunk, all_chunks(&Ops::attention_chunk, ops)),
                                   op(chunked, OpId::lse_merge, [&] { ops.chunk_merge(g); })},
                                  [&, chunked_bytes] {  // chunk by chunk through one workspace, as it runs
                                    timer.working_set += chunked_bytes;
                                    ops.chunked_path(g);
                                  }});
    }
    if (paths.empty()) continue;
    ++timed;
    for (Sample& x : time_paths(s, w, paths, mr.rf, time_fn, cuda_calls, grid.train[gi])) {
      if (x.op == OpId::latent_attention_mqa && s.query == 1) best_decode_bw = std::max(best_decode_bw, x.bytes.value / x.measured.value);
      mr.samples.push_back(std::move(x));
    }
  }
  mr.extra_summary.push_back(fmt::format("Grid: {} of {} shapes timed; {} absorb or expand paths left out for exceeding {:g} TFLOP a step, {} "
                                         "expand paths whose expanded K/V would not fit in half the free memory.",
                                         timed, grid.shapes.size(), too_long, max_flops / 1e12, no_memory));
  mr.extra_summary.push_back(fmt::format("Absorbed decode kernel: best {:.0f} GB/s at Q = 1, {:.0f}% of the measured copy bandwidth.", best_decode_bw / 1e9,
                                         100 * best_decode_bw / cal.copy_bytes_per_s));

  // 4. The crossover sweeps: both paths timed whole across query lengths.
  int sweep_no_memory = 0;
  for (int h : plan.sweep_heads) {
    CrossoverSweep sw{.heads = h, .batch = plan.sweep_batch, .prefix = plan.sweep_prefix, .points = {}};
    for (int q : plan.sweep_queries) {
      progress(fmt::format("crossover: {} heads, Q {}", h, q));
      const MlaShape s{.heads = h, .batch = plan.sweep_batch, .query = q, .prefix = plan.sweep_prefix, .chunk = 4096};
      const Workload w = workload_for(s, mr.compute, mr.kv, mr.weights);
      const ModelSpec m = model_for(s);
      Step g = allocate_step(s, choose_splits(s, sms), false);
      if (!g.expand) {
        ++sweep_no_memory;
        continue;
      }
      fill_random(g, rng, ops.stream);
      const double ab = mla_path(m, w, PathKind::absorb).bytes().value, ex = mla_path(m, w, PathKind::expand).bytes().value;
      const Timing ta = timer([&] {
        timer.working_set += ab;
        ops.absorb_path(g);
      });
      const Timing te = timer([&] {
        timer.working_set += ex;
        ops.expand_path(g);
      });
      sw.points.push_back({q, ta.median, te.median});
    }
    mr.sweeps.push_back(sw);
  }
  if (sweep_no_memory > 0)
    mr.extra_summary.push_back(fmt::format("Crossover sweeps: {} points left out, their expanded K/V not fitting in half the free memory.",
                                           sweep_no_memory));
  mr.extra_summary.push_back(fmt::format("Timing: {} timed functions, {} of them (working set under twice the {:.0f} MiB L2) with the L2 flushed before "
                                         "every call; the others as back-to-back calls covering at least 100 µs per event pair.",
                                         timer.timed, timer.flushed, static_cast<double>(l2) / static_cast<double>(kMiB)));
  return mr;
}

}  // namespace mlaplan::validate
