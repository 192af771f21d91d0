#include "cuda/cuda_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "cuda/mla_kernels.hpp"

namespace mlaplan::validate {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("CUDA: {}: {}", what, cudaGetErrorString(e)));
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("cuBLAS: {}: status {}", what, static_cast<int>(e)));
}
#define CK(call) check((call), #call)

std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even
  return static_cast<std::uint16_t>(bits >> 16);
}
float from_bf16(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class T>
struct Device {
  T* p = nullptr;
  std::size_t n = 0;
  Device() = default;
  explicit Device(std::size_t count) : n(count) { CK(cudaMalloc(&p, std::max<std::size_t>(1, n) * sizeof(T))); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  Device(Device&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr; }
  Device& operator=(Device&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  ~Device() {
    if (p) cudaFree(p);
  }
  void poison() { CK(cudaMemset(p, 0xFF, n * sizeof(T))); }  // NaN in bf16 and fp32
};

Device<std::uint16_t> upload_bf16(const MatF& m) {
  std::vector<std::uint16_t> h(static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.size(); ++i) h[static_cast<std::size_t>(i)] = to_bf16(m.data()[i]);
  Device<std::uint16_t> d(h.size());
  CK(cudaMemcpy(d.p, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  return d;
}

MatF download_bf16(const Device<std::uint16_t>& d, int rows, int cols) {
  std::vector<std::uint16_t> h(static_cast<std::size_t>(rows) * cols);
  CK(cudaMemcpy(h.data(), d.p, h.size() * 2, cudaMemcpyDeviceToHost));
  MatF m(rows, cols);
  for (std::size_t i = 0; i < h.size(); ++i) m.data()[i] = from_bf16(h[i]);
  return m;
}

void round_to_bf16(MatF& m) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = from_bf16(to_bf16(m.data()[i]));
}

// One step's device buffers, laid out as the kernels expect; the cache is paged (64 tokens) with
// each sequence's pages contiguous, so the expand path reads it as [batch · s_pad, 576] rows.
struct GpuStep {
  MlaShape s;
  int s_pad = 0, max_pages = 0, splits = 1;
  bool expand = true;  // the expanded K/V fits in memory
  Device<std::uint16_t> cache, q_nope, q_rope, q_full, o_lat, out, w_uk, w_uv, w_ukv, kv, rope;
  Device<int> block_table;
  Device<float> part_o, part_lse;
};

// With `data`, the buffers hold its (bf16-rounded) values; without, timing-only buffers are filled
// with one constant on the device (the kernels do not branch on values, and generating gigabytes
// of random numbers on the host would dominate the run).
GpuStep make_step(const MlaShape& s, int sms, std::size_t free_bytes, const MlaBuffers* data) {
  GpuStep g;
  g.s = s;
  const int S = s.keys(), h = s.heads, T = s.tokens();
  g.max_pages = (S + gpu::kPage - 1) / gpu::kPage;
  g.s_pad = g.max_pages * gpu::kPage;
  auto filled = [](std::size_t n) {
    Device<std::uint16_t> d(n);
    CK(cudaMemset(d.p, 0x3F, n * 2));  // bf16 0x3F3F ≈ 0.75
    return d;
  };
  const std::size_t cache_rows = static_cast<std::size_t>(s.batch) * g.s_pad;
  if (data) {
    MatF cache = MatF::Zero(static_cast<Eigen::Index>(cache_rows), s.r + s.d_r);
    for (int bi = 0; bi < s.batch; ++bi)
      cache.middleRows(static_cast<Eigen::Index>(bi) * g.s_pad, S) = data->cache.middleRows(static_cast<Eigen::Index>(bi) * S, S);
    g.cache = upload_bf16(cache);
    g.q_nope = upload_bf16(data->q_nope);
    g.q_rope = upload_bf16(data->q_rope);
    g.q_full = upload_bf16(data->q_full);
    MatF w_uk(h * s.d_n, s.r), w_uv(h * s.r, s.d_v);
    for (int head = 0; head < h; ++head) {
      w_uk.middleRows(head * s.d_n, s.d_n) = data->w_uk[static_cast<std::size_t>(head)];
      w_uv.middleRows(head * s.r, s.r) = data->w_uv[static_cast<std::size_t>(head)];
    }
    g.w_uk = upload_bf16(w_uk);
    g.w_uv = upload_bf16(w_uv);
    g.w_ukv = upload_bf16(data->w_ukv);
  } else {
    g.cache = filled(cache_rows * (s.r + s.d_r));
    g.q_nope = filled(static_cast<std::size_t>(T) * h * s.d_n);
    g.q_rope = filled(static_cast<std::size_t>(T) * h * s.d_r);
    g.q_full = filled(static_cast<std::size_t>(T) * h * (s.r + s.d_r));
    g.w_uk = filled(static_cast<std::size_t>(h) * s.d_n * s.r);
    g.w_uv = filled(static_cast<std::size_t>(h) * s.r * s.d_v);
    g.w_ukv = filled(static_cast<std::size_t>(s.r) * h * (s.d_n + s.d_v));
  }
  std::vector<int> table(static_cast<std::size_t>(s.batch) * g.max_pages);
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int>(i);
  g.block_table = Device<int>(table.size());
  CK(cudaMemcpy(g.block_table.p, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice));
  g.o_lat = Device<std::uint16_t>(static_cast<std::size_t>(T) * h * s.r);
  g.out = Device<std::uint16_t>(static_cast<std::size_t>(T) * h * s.d_v);
  const int row_tiles = (s.query * h + 15) / 16;
  g.splits = std::clamp((2 * sms + s.batch * row_tiles - 1) / (s.batch * row_tiles), 1, g.max_pages);
  g.part_o = Device<float>(static_cast<std::size_t>(s.batch) * g.splits * s.query * h * s.r);
  g.part_lse = Device<float>(static_cast<std::size_t>(s.batch) * g.splits * s.query * h);
  const std::size_t kv_bytes = cache_rows * h * (s.d_n + s.d_v + s.d_r) * 2;
  g.expand = kv_bytes < free_bytes / 2;
  if (g.expand) {
    g.kv = Device<std::uint16_t>(cache_rows * h * (s.d_n + s.d_v));
    g.rope = Device<std::uint16_t>(cache_rows * h * s.d_r);
  }
  return g;
}

size_t free_memory() {
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

struct Ops {
  cublasHandle_t blas;
  cudaStream_t stream;

  // Per head q_nope · W_UK written into q_full[:, :512] (row-major views as column-major GEMMs).
  void q_absorb(GpuStep& g) {
    const MlaShape& s = g.s;
    const float one = 1, zero = 0;
    CK(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, s.r, s.tokens(), s.d_n, &one, g.w_uk.p, CUDA_R_16BF, s.r,
                                  static_cast<long long>(s.d_n) * s.r, g.q_nope.p, CUDA_R_16BF, s.heads * s.d_n, s.d_n, &zero,
                                  g.q_full.p, CUDA_R_16BF, s.heads * (s.r + s.d_r), s.r + s.d_r, s.heads, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
  }
  void latent_attention(GpuStep& g) {
    const MlaShape& s = g.s;
    gpu::DecodeArgs a;
    a.q = g.q_full.p;
    a.cache = g.cache.p;
    a.block_table = g.block_table.p;
    a.batch = s.batch, a.query = s.query, a.prefix = s.prefix, a.heads = s.heads, a.max_pages = g.max_pages, a.splits = g.splits;
    a.scale = 1.0f / std::sqrt(static_cast<float>(s.d_n + s.d_r));
    a.part_o = g.part_o.p;
    a.part_lse = g.part_lse.p;
    CK(gpu::absorbed_decode(a, stream));
    CK(gpu::lse_merge(g.part_o.p, g.part_lse.p, s.batch, g.splits, s.query * s.heads, s.r, g.o_lat.p, stream));
  }
  // Per head o_lat · W_UV.
  void out_absorb(GpuStep& g) {
    const MlaShape& s = g.s;
    const float one = 1, zero = 0;
    CK(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, s.d_v, s.tokens(), s.r, &one, g.w_uv.p, CUDA_R_16BF, s.d_v,
                                  static_cast<long long>(s.r) * s.d_v, g.o_lat.p, CUDA_R_16BF, s.heads * s.r, s.r, &zero, g.out.p,
                                  CUDA_R_16BF, s.heads * s.d_v, s.d_v, s.heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  void kv_up_proj(GpuStep& g) {
    const MlaShape& s = g.s;
    const float one = 1, zero = 0;
    const int n = s.heads * (s.d_n + s.d_v), rows = s.batch * g.s_pad;
    CK(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, rows, s.r, &one, g.w_ukv.p, CUDA_R_16BF, n, g.cache.p, CUDA_R_16BF, s.r + s.d_r,
                    &zero, g.kv.p, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  void rope(GpuStep& g) { CK(gpu::rope_broadcast(g.cache.p, g.s.batch * g.s_pad, g.s.heads, g.rope.p, stream)); }
  void attention(GpuStep& g) {
    const MlaShape& s = g.s;
    gpu::MhaArgs a;
    a.q_nope = g.q_nope.p, a.q_rope = g.q_rope.p, a.kv = g.kv.p, a.rope = g.rope.p;
    a.batch = s.batch, a.query = s.query, a.prefix = s.prefix, a.heads = s.heads, a.s_pad = g.s_pad;
    a.scale = 1.0f / std::sqrt(static_cast<float>(s.d_n + s.d_r));
    a.causal = s.causal;
    a.out = g.out.p;
    CK(gpu::flash_mha(a, stream));
  }
};

// Median GPU time of f over repeats after warm-up, from CUDA events.
double time_gpu(const std::function<void()>& f, cudaStream_t stream, double budget_s, int min_reps) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  f();
  f();
  CK(cudaStreamSynchronize(stream));
  std::vector<double> t;
  double total = 0;
  while (static_cast<int>(t.size()) < min_reps || (total < budget_s && t.size() < 50)) {
    CK(cudaEventRecord(a, stream));
    f();
    CK(cudaEventRecord(b, stream));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e-3);
    total += ms * 1e-3;
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double rel_error(const MatF& got, const MatD& want) {
  const double scale = std::max(1e-30, want.cwiseAbs().maxCoeff());
  if (got.array().isNaN().any()) return INFINITY;
  return (got.cast<double>() - want).cwiseAbs().maxCoeff() / scale;
}

}  // namespace

ValidationRun run_cuda_validation(const CudaOptions& opt, const std::function<void(const std::string&)>& progress) {
  const std::uint64_t seed = opt.seed ? opt.seed : (static_cast<std::uint64_t>(std::random_device{}()) << 32 | std::random_device{}());
  std::mt19937_64 rng(seed);
  int device = 0;
  CK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  CK(cudaDriverGetVersion(&driver));
  CK(cudaRuntimeGetVersion(&runtime));
  Ops ops{};
  CK(cudaStreamCreate(&ops.stream));
  CK(cublasCreate(&ops.blas));
  CK(cublasSetStream(ops.blas, ops.stream));
  const int sms = prop.multiProcessorCount;

  // 1. Kernels against float64 on fresh random inputs, outputs poisoned first. bf16 storage
  // bounds the agreement: inputs are rounded to bf16 before the reference sees them.
  progress("checking CUDA kernels against float64 references");
  std::vector<KernelCheck> checks;
  for (const MlaShape& shape : {MlaShape{4, 512, 64, 128, 128, 2, 3, 100, 1024, true}, MlaShape{16, 512, 64, 128, 128, 1, 20, 300, 1024, true},
                                MlaShape{8, 512, 64, 128, 128, 3, 1, 700, 1024, true}}) {
    MlaBuffers b = make_buffers(shape, rng);
    round_to_bf16(b.cache), round_to_bf16(b.q_nope), round_to_bf16(b.q_rope), round_to_bf16(b.w_ukv);
    for (auto& w : b.w_uk) round_to_bf16(w);
    for (auto& w : b.w_uv) round_to_bf16(w);
    const MatD ref = reference_out(b);
    GpuStep g = make_step(shape, sms, free_memory(), &b);
    const std::string tag = fmt::format(" [h{} B{} Q{} P{} splits {}]", shape.heads, shape.batch, shape.query, shape.prefix, g.splits);
    g.out.poison(), g.o_lat.poison(), g.part_o.poison();
    ops.q_absorb(g), ops.latent_attention(g), ops.out_absorb(g);
    CK(cudaStreamSynchronize(ops.stream));
    checks.push_back({"absorb path (cuBLAS folds, paged split-KV decode, merge)" + tag,
                      rel_error(download_bf16(g.out, shape.tokens(), shape.heads * shape.d_v), ref), 3e-2, false});
    g.out.poison(), g.kv.poison(), g.rope.poison();
    ops.kv_up_proj(g), ops.rope(g), ops.attention(g);
    CK(cudaStreamSynchronize(ops.stream));
    checks.push_back({"expand path (cuBLAS up-projection, RoPE broadcast, flash attention)" + tag,
                      rel_error(download_bf16(g.out, shape.tokens(), shape.heads * shape.d_v), ref), 3e-2, false});
    MatF cache_rows = MatF::Zero(static_cast<Eigen::Index>(shape.batch) * g.s_pad, shape.r);
    for (int bi = 0; bi < shape.batch; ++bi)
      cache_rows.middleRows(static_cast<Eigen::Index>(bi) * g.s_pad, shape.keys()) = b.cache.block(static_cast<Eigen::Index>(bi) * shape.keys(), 0, shape.keys(), shape.r);
    const MatD kv_ref = cache_rows.cast<double>() * b.w_ukv.cast<double>();
    checks.push_back({"kv_up_proj (cuBLAS)" + tag, rel_error(download_bf16(g.kv, shape.batch * g.s_pad, shape.heads * (shape.d_n + shape.d_v)), kv_ref),
                      1e-2, false});
  }

  // 2. Calibration: device-to-device copy bandwidth and cuBLAS bf16 GEMM throughput.
  progress("calibrating copy bandwidth and cuBLAS GEMM");
  const std::size_t copy_bytes = opt.quick ? (512ull << 20) : (4ull << 30);
  double copy_bw = 0, gemm_flops = 0;
  {
    Device<char> src(copy_bytes), dst(copy_bytes);
    CK(cudaMemset(src.p, 1, copy_bytes));
    const double t = time_gpu([&] { CK(cudaMemcpyAsync(dst.p, src.p, copy_bytes, cudaMemcpyDeviceToDevice, ops.stream)); }, ops.stream, 0.2, 5);
    copy_bw = 2.0 * static_cast<double>(copy_bytes) / t;
    const int n = opt.quick ? 4096 : 8192;
    Device<std::uint16_t> a(static_cast<std::size_t>(n) * n), bb(static_cast<std::size_t>(n) * n), c(static_cast<std::size_t>(n) * n);
    CK(cudaMemset(a.p, 0, a.n * 2));
    CK(cudaMemset(bb.p, 0, bb.n * 2));
    const float one = 1, zero = 0;
    const double tg = time_gpu([&] {
      CK(cublasGemmEx(ops.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.p, CUDA_R_16BF, n, bb.p, CUDA_R_16BF, n, &zero, c.p, CUDA_R_16BF, n,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }, ops.stream, 0.3, 5);
    gemm_flops = 2.0 * n * n * static_cast<double>(n) / tg;
  }
  HardwareSpec gpu_spec;
  gpu_spec.name = prop.name;
  gpu_spec.memory_bandwidth_bytes_per_s = copy_bw;
  gpu_spec.dense_peak_flops_per_s[DType::bf16] = gemm_flops;
  const Roofline rf = roofline_for(gpu_spec, DType::bf16, Efficiency{});

  // 3. The grid: heads per rank as DeepSeek-V3 under TP 8/4/2/1, batch, query and prefix.
  const Grid grid_split = checkerboard_grid(opt.quick ? std::vector<int>{16, 128} : std::vector<int>{16, 32, 64, 128},
                                           opt.quick ? std::vector<int>{1, 32} : std::vector<int>{1, 8, 32, 128},
                                           opt.quick ? std::vector<int>{1, 64} : std::vector<int>{1, 2, 16, 128},
                                           opt.quick ? std::vector<int>{1023, 8191} : std::vector<int>{1023, 8191, 32767}, 1 << 30);
  const std::vector<MlaShape>& grid = grid_split.shapes;
  const std::vector<bool>& in_train = grid_split.train;
  std::vector<Sample> samples;
  double best_decode_bw = 0;
  for (std::size_t gi = 0; gi < grid.size(); ++gi) {
    const MlaShape& s = grid[gi];
    progress(fmt::format("timing shape {}/{}: {} heads, batch {}, Q {}, P {}", gi + 1, grid.size(), s.heads, s.batch, s.query, s.prefix));
    GpuStep g = make_step(s, sms, free_memory(), nullptr);
    const ModelSpec m = model_for(s);
    const Workload w = workload_for(s, DType::bf16, KvDtype::bf16, WeightDtype::bf16);
    struct Timed {
      PathKind path;
      const char* op;
      std::function<void()> f;
    };
    std::vector<Timed> list{{PathKind::absorb, "q_absorb_w_uk", [&] { ops.q_absorb(g); }},
                            {PathKind::absorb, "latent_attention_mqa", [&] { ops.latent_attention(g); }},
                            {PathKind::absorb, "out_absorb_w_uv", [&] { ops.out_absorb(g); }}};
    if (g.expand) {
      list.push_back({PathKind::expand, "kv_up_proj", [&] { ops.kv_up_proj(g); }});
      list.push_back({PathKind::expand, "rope_k_broadcast", [&] { ops.rope(g); }});
      list.push_back({PathKind::expand, "attention_mha", [&] { ops.attention(g); }});
    }
    for (PathKind k : {PathKind::absorb, PathKind::expand}) {
      if (k == PathKind::expand && !g.expand) continue;
      const PathPlan plan = mla_path(m, w, k);
      for (const Timed& t : list) {
        if (t.path != k) continue;
        const Op* op = nullptr;
        for (const Op& o : plan)
          if (std::string_view(o.name) == t.op) op = &o;
        if (!op) continue;
        const double med = time_gpu(t.f, ops.stream, opt.quick ? 0.01 : 0.05, 5);
        samples.push_back(Sample{s.heads, s.batch, s.query, s.prefix, std::string(to_string(k)), t.op, std::string(to_string(op->kind)),
                                 op->flops, op->bytes(), 0, med, 0, op_time(*op, rf).time_s, 0, in_train[gi]});
        if (std::string_view(t.op) == "latent_attention_mqa" && s.query == 1) best_decode_bw = std::max(best_decode_bw, op->bytes() / med);
      }
      const double med = time_gpu(
          [&] {
            for (const Timed& t : list)
              if (t.path == k) t.f();
          },
          ops.stream, opt.quick ? 0.01 : 0.05, 5);
      samples.push_back(Sample{s.heads, s.batch, s.query, s.prefix, std::string(to_string(k)), "(path)", "path", plan.flops(), plan.bytes(),
                               med, 0, path_cost(plan, rf).time_s, 0, in_train[gi]});
    }
  }

  // 4. The crossover at TP 1 and TP 8 shapes, batch 32, prefix 8191.
  std::vector<CrossoverSweep> sweeps;
  for (int h : opt.quick ? std::vector<int>{128} : std::vector<int>{16, 128}) {
    CrossoverSweep sw{h, 32, 8191, {}};
    for (int q : {32, 64, 96, 128, 160, 192, 256, 384, 512}) {
      progress(fmt::format("crossover: {} heads, Q {}", h, q));
      GpuStep g = make_step(MlaShape{h, 512, 64, 128, 128, 32, q, 8191, 1 << 30, true}, sms, free_memory(), nullptr);
      if (!g.expand) continue;
      const double ta = time_gpu([&] { ops.q_absorb(g), ops.latent_attention(g), ops.out_absorb(g); }, ops.stream, 0.02, 5);
      const double te = time_gpu([&] { ops.kv_up_proj(g), ops.rope(g), ops.attention(g); }, ops.stream, 0.02, 5);
      sw.points.push_back({q, ta, te});
    }
    sweeps.push_back(sw);
  }
  CK(cublasDestroy(ops.blas));
  CK(cudaStreamDestroy(ops.stream));

  MeasuredRun mr;
  mr.title = fmt::format("CUDA validation of the MLA cost model on {}", prop.name);
  mr.command = "mlaplan validate --backend cuda";
  mr.quick = opt.quick;
  mr.seed = seed;
  mr.machine = fmt::format("{}, {} SMs, {:.1f} GiB, compute capability {}.{}, driver {}, runtime {}", prop.name, sms,
                           static_cast<double>(prop.totalGlobalMem) / (1 << 30), prop.major, prop.minor, driver, runtime);
  mr.checks = std::move(checks);
  mr.calibration = fmt::format("device-to-device copy {:.0f} GB/s; cuBLAS bf16 GEMM {:.0f} TFLOP/s; ridge {:.0f} FLOP/B", copy_bw / 1e9,
                               gemm_flops / 1e12, rf.ridge());
  mr.extra_summary.push_back(fmt::format("Absorbed decode kernel: best {:.0f} GB/s at Q = 1, {:.0f}% of the measured copy bandwidth.",
                                         best_decode_bw / 1e9, 100 * best_decode_bw / copy_bw));
  mr.rf = rf;
  mr.compute = DType::bf16;
  mr.kv = KvDtype::bf16;
  mr.weights = WeightDtype::bf16;
  mr.samples = std::move(samples);
  mr.sweeps = std::move(sweeps);
  mr.hardware_file = "calibrated-gpu.json";
  mr.hardware["name"] = std::string(prop.name) + " (calibrated)";
  mr.hardware["vendor"] = "NVIDIA";
  mr.hardware["memory_capacity_bytes"] = {{"value", static_cast<double>(prop.totalGlobalMem)}, {"source", "cudaGetDeviceProperties"}};
  mr.hardware["memory_bandwidth_tb_per_s"] = {{"value", copy_bw / 1e12}, {"source", "measured: device-to-device copy, mlaplan validate " + today()}};
  mr.hardware["dense_peak_tflops"] = {{"bf16", {{"value", gemm_flops / 1e12}, {"source", "measured: cuBLAS bf16 GEMM, mlaplan validate " + today()}}}};
  mr.hardware["sm_count"] = {{"value", sms}, {"source", "cudaGetDeviceProperties"}};
  return finish_validation(std::move(mr));
}

}  // namespace mlaplan::validate
