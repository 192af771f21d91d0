#include "cpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "fit.hpp"
#include "kernels_cpu.hpp"

namespace mlaplan::validate {

namespace {

// Median of repeated runs after one warm-up: at least min_reps, until budget_s has passed.
Timing time_fn(const std::function<void()>& f, double budget_s, int min_reps, int max_reps) {
  const auto w0 = std::chrono::steady_clock::now();
  f();
  // Runs of over half a second vary little: three repeats give the median.
  if (std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() > 0.5) min_reps = std::min(min_reps, 3);
  std::vector<double> t;
  double total = 0;
  while (static_cast<int>(t.size()) < min_reps || (total < budget_s && static_cast<int>(t.size()) < max_reps)) {
    const auto a = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    t.push_back(s);
    total += s;
  }
  return timing_of(std::move(t));
}

}  // namespace

double cpu_calls(PathKind path, OpId op, const MlaShape& s) {
  const double blocks = std::ceil(s.keys() / 256.0), b = s.batch, h = s.heads;
  const double chunks = chunk_count(s), chunk_blocks = std::ceil(std::min(s.chunk, s.keys()) / 256.0);
  switch (op) {
    case OpId::attention_mha: return b * h * blocks;  // per head and key block: two score products, one PV
    case OpId::attention_mha_chunk: return h * chunks * chunk_blocks;
    case OpId::latent_attention_mqa: return b * blocks;  // per sequence and key block
    case OpId::q_absorb_w_uk:
    case OpId::out_absorb_w_uv: return h;  // one product per head
    case OpId::rope_k_broadcast: return path == PathKind::chunked ? chunks : 1;  // one contiguous pass per chunk
    case OpId::kv_up_proj_chunk: return chunks;
    case OpId::lse_merge: return s.tokens() * h;  // per output row
    default: return 1;
  }
}

double cpu_working_set(PathKind path, OpId op, const MlaShape& s, double bytes) {
  // The chunk loop's ops reuse one chunk's workspace: a chunk's share of their bytes stays touched.
  const double chunks = chunk_count(s);
  switch (op) {
    case OpId::kv_up_proj_chunk:
    case OpId::attention_mha_chunk: return bytes / chunks;
    case OpId::rope_k_broadcast: return path == PathKind::chunked ? bytes / chunks : bytes;
    default: return bytes;
  }
}

double cpu_packed(PathKind, OpId op, const MlaShape& s) {
  // Eigen's GEMM copies the right operand of a product of two or more rows into a blocked panel before
  // multiplying (Eigen 3.4, Eigen/src/Core/products/GeneralMatrixMatrix.h:194-195: once per product
  // where the rows fit one row block, as here); a product of one row falls back to a GEMV
  // (GeneralMatrixMatrix.h:474-486), which reads the operand where it lies and packs nothing.
  constexpr double f32 = sizeof(float);
  const double b = s.batch, h = s.heads, keys = s.keys(), per_key = s.d_n + s.d_r + s.d_v;
  switch (op) {
    // One product per head: tokens x d_n times W_UK (d_n x r); tokens x r times W_UV (r x d_v).
    case OpId::q_absorb_w_uk: return s.tokens() > 1 ? h * s.d_n * s.r * f32 : 0;
    case OpId::out_absorb_w_uv: return s.tokens() > 1 ? h * s.r * s.d_v * f32 : 0;
    // Per sequence and key block: query rows x (r + d_r) times the block's keys, then the scores times
    // its r-wide values; the query rows are heads x Q, never one.
    case OpId::latent_attention_mqa: return b * keys * ((s.r + s.d_r) + s.r) * f32;
    // Per sequence, head and key block: Q x d_n and Q x d_r times the block's keys, the scores times its
    // values.
    case OpId::attention_mha: return s.query > 1 ? b * h * keys * per_key * f32 : 0;
    case OpId::attention_mha_chunk: return s.query > 1 ? h * keys * per_key * f32 : 0;
    // The up-projections multiply thousands of rows per packed block: their packing is part of the
    // arithmetic's efficiency, not a cost of its own.
    default: return 0;
  }
}

MeasuredRun measure_cpu(const CpuOptions& opt, const std::function<void(const std::string&)>& progress) {
  const std::uint64_t seed = opt.seed ? opt.seed : (static_cast<std::uint64_t>(std::random_device{}()) << 32 | std::random_device{}());
  std::mt19937_64 rng(seed);
  MeasuredRun mr;
  mr.title = "CPU validation of the MLA cost model";
  mr.command = "mlaplan validate --backend cpu";
  mr.quick = opt.quick;
  mr.seed = seed;
  mr.machine = fmt::format("{}, {} logical CPUs, {} memory; one core used; compiler {}; Eigen {}.{}.{} ({})",
                           read_first("/proc/cpuinfo", "model name"), std::thread::hardware_concurrency(),
                           read_first("/proc/meminfo", "MemTotal"), __VERSION__, EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
                           EIGEN_MINOR_VERSION, Eigen::SimdInstructionSetsInUse());
  mr.compute = DType::fp32;
  mr.kv = KvDtype::fp32;
  mr.weights = WeightDtype::fp32;
  mr.calls = cpu_calls;
  mr.working_set = cpu_working_set;
  mr.packed = cpu_packed;
  mr.hardware_file = "calibrated-cpu.json";

  // 1. Every kernel against its float64 reference, on fresh random inputs.
  progress("checking kernels against float64 references");
  for (const MlaShape& s : {MlaShape{.heads = 4, .r = 64, .d_r = 16, .d_n = 32, .d_v = 24, .batch = 2, .query = 5, .prefix = 37, .chunk = 16},
                            MlaShape{.heads = 2, .batch = 1, .query = 7, .prefix = 300, .chunk = 128},
                            MlaShape{.heads = 3, .r = 64, .d_r = 16, .d_n = 32, .d_v = 32, .batch = 1, .query = 9, .prefix = 20, .chunk = 8, .causal = false},
                            MlaShape{.heads = 4, .r = 64, .d_r = 16, .d_n = 32, .d_v = 32, .batch = 1, .query = 40, .prefix = 100, .chunk = 32}}) {
    for (KernelCheck& c : check_kernels(s, rng)) {
      c.kernel += fmt::format(" [h{} r{} B{} Q{} P{}{}]", s.heads, s.r, s.batch, s.query, s.prefix, s.causal ? "" : " non-causal");
      mr.checks.push_back(c);
    }
  }
  if (!std::all_of(mr.checks.begin(), mr.checks.end(), [](const KernelCheck& c) { return c.ok(); })) return mr;

  // 2. Calibration: streaming bandwidth and GEMM throughput at the sizes the grid uses.
  progress("calibrating bandwidth and GEMM throughput");
  const StreamResult stream = measure_stream(opt.quick ? (64u << 20) : (256u << 20));
  const double gemm = std::max({measure_gemm(1024, 512, 16 * 256), measure_gemm(2048, 512, 32 * 256), measure_gemm(512, 512, 512)});
  HardwareSpec& cpu = mr.hardware;
  cpu.name = "CPU core: " + read_first("/proc/cpuinfo", "model name") + " (one core, calibrated)";
  cpu.vendor = "CPU";
  cpu.memory_capacity = Bytes{std::max<std::int64_t>(kGiB, std::atoll(read_first("/proc/meminfo", "MemTotal").c_str()) * 1024)};
  cpu.memory_bandwidth = BytesPerSecond{stream.triad_bytes_per_s};
  cpu.dense_peak[DType::fp32] = FlopsPerSecond{gemm};
  cpu.sm_count = 1;
  cpu.sources = {{"memory_capacity", "/proc/meminfo MemTotal"},
                 {"memory_bandwidth", "measured: STREAM triad (mlaplan validate)"},
                 {"peak_fp32", "measured: Eigen fp32 GEMM (mlaplan validate)"},
                 {"sm_count", "one core used"}};
  mr.rf = roofline_for(cpu, DType::fp32, Efficiency{});
  // The cache level: copy bandwidth from 1 MiB to 64 MiB working sets.
  std::vector<std::pair<double, double>> sweep;
  for (std::size_t mib = 1; mib <= 64; mib *= 2) sweep.push_back({static_cast<double>(mib << 20), measure_copy(mib << 20)});
  mr.cache = cache_level(sweep, BytesPerSecond{stream.copy_bytes_per_s});
  std::string swept;
  for (const auto& [bytes, bw] : sweep) swept += fmt::format("{}{:.0f} MiB {:.0f}", swept.empty() ? "" : ", ", bytes / (1 << 20), bw / 1e9);
  mr.calibration = fmt::format("triad {:.1f} GB/s (read {:.1f}, copy {:.1f}); fp32 GEMM {:.1f} GFLOP/s; ridge {:.1f} FLOP/B; copy by working set "
                               "(GB/s): {}; cache level: {}",
                               stream.triad_bytes_per_s / 1e9, stream.read_bytes_per_s / 1e9, stream.copy_bytes_per_s / 1e9,
                               gemm / 1e9, mr.rf.ridge(), swept,
                               describe(mr.cache));

  // 3. The grid: heads per rank as DeepSeek-V3's 128 under TP 16/8/4, batch, query and prefix.
  Grid grid = checkerboard_grid(opt.quick ? std::vector<int>{8, 16} : std::vector<int>{8, 16, 32},
                                opt.quick ? std::vector<int>{1} : std::vector<int>{1, 4},
                                opt.quick ? std::vector<int>{1, 16, 128} : std::vector<int>{1, 8, 64, 256},
                                opt.quick ? std::vector<int>{511, 2047} : std::vector<int>{511, 2047, 8191}, 1024);
  const double budget = opt.quick ? 0.02 : 0.15;
  const int min_reps = opt.quick ? 3 : 5;
  const Timer timer = [&](const std::function<void()>& f) { return time_fn(f, budget, min_reps, 50); };

  // Shapes whose two paths together exceed 60 GFLOP take over half a second a run on one core:
  // they are left out of the grid (and counted) to keep a full run within minutes.
  std::size_t skipped = 0, timed = 0;
  for (std::size_t gi = 0; gi < grid.shapes.size(); ++gi) {
    const MlaShape& s = grid.shapes[gi];
    const ModelSpec m = model_for(s);
    const Workload w = workload_for(s, mr.compute, mr.kv, mr.weights);
    if ((mla_path(m, w, PathKind::absorb).flops() + mla_path(m, w, PathKind::expand).flops()).value > 60e9) {
      ++skipped;
      continue;
    }
    ++timed;
    progress(fmt::format("timing shape {}/{}: {} heads, batch {}, Q {}, P {}", gi + 1, grid.shapes.size(), s.heads, s.batch, s.query, s.prefix));
    MlaBuffers b = make_buffers(s, rng);
    const int n_chunks = chunk_count(s);
    auto all_chunks = [&b, n_chunks](void (*f)(MlaBuffers&, int)) {
      return [&b, n_chunks, f] {
        for (int c = 0; c < n_chunks; ++c) f(b, c);
      };
    };
    std::vector<PathKernels> paths{
        {PathKind::absorb,
         {{OpId::q_absorb_w_uk, [&] { q_absorb_w_uk(b); }},
          {OpId::latent_attention_mqa, [&] { latent_attention_mqa(b); }},
          {OpId::out_absorb_w_uv, [&] { out_absorb_w_uv(b); }}},
         nullptr},
        {PathKind::expand,
         {{OpId::kv_up_proj, [&] { kv_up_proj(b); }}, {OpId::rope_k_broadcast, [&] { rope_k_broadcast(b); }},
          {OpId::attention_mha, [&] { attention_mha(b); }}},
         nullptr},
    };
    if (s.batch == 1 && n_chunks > 1)  // one chunk is the expand path, with nothing to merge
      paths.push_back({PathKind::chunked,
                       {{OpId::kv_up_proj_chunk, all_chunks(kv_up_proj_chunk)},
                        {OpId::rope_k_broadcast, all_chunks(rope_k_broadcast_chunk)},
                        {OpId::attention_mha_chunk, all_chunks(attention_mha_chunk)},
                        {OpId::lse_merge, [&] { lse_merge(b); }}},
                       [&] { chunked_expand(b), lse_merge(b); }});  // chunk by chunk, as it runs
    for (Sample& x : time_paths(s, workload_for(s, mr.compute, mr.kv, mr.weights), paths, mr.rf, timer, cpu_calls, grid.train[gi]))
      mr.samples.push_back(std::move(x));
  }
  mr.extra_summary.push_back(fmt::format("Grid: {} shapes timed ({} left out for taking over 60 GFLOP a step on one core).", timed, skipped));

  // 4. The crossover: both paths timed whole across query lengths.
  progress("measuring the crossover");
  const std::vector<int> cross_prefixes = opt.quick ? std::vector<int>{1024} : std::vector<int>{1024, 4096};
  const std::vector<int> cross_queries = opt.quick ? std::vector<int>{32, 64, 128, 256, 512} : std::vector<int>{16, 32, 64, 128, 192, 256, 384, 512};
  for (int p : cross_prefixes) {
    CrossoverSweep sw{.heads = 16, .batch = 1, .prefix = p, .points = {}};
    for (int q : cross_queries) {
      const MlaShape s{.heads = 16, .batch = 1, .query = q, .prefix = p, .chunk = 1024};
      progress(fmt::format("crossover: prefix {}, Q {}", p, q));
      MlaBuffers b = make_buffers(s, rng);
      const Timing ta = time_fn([&] { q_absorb_w_uk(b), latent_attention_mqa(b), out_absorb_w_uv(b); }, budget, min_reps, 20);
      const Timing te = time_fn([&] { kv_up_proj(b), rope_k_broadcast(b), attention_mha(b); }, budget, min_reps, 20);
      sw.points.push_back({q, ta.median, te.median});
    }
    mr.sweeps.push_back(sw);
  }
  return mr;
}

}  // namespace mlaplan::validate
