#include "harness.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels_cpu.hpp"
#include "mlaplan/core/crossover.hpp"
#include "mlaplan/core/units.hpp"
#include "mlaplan/io/svg.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan::validate {

namespace {

struct Timed {
  double median = 0, spread = 0;
};

// Median of repeated runs after one warm-up: at least min_reps, until budget_s has passed.
Timed time_fn(const std::function<void()>& f, double budget_s, int min_reps, int max_reps) {
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
  std::sort(t.begin(), t.end());
  const double med = t[t.size() / 2];
  return {med, (t[(t.size() * 3) / 4] - t[t.size() / 4]) / med};
}

}  // namespace

ModelSpec model_for(const MlaShape& s) {
  ModelSpec m;
  m.name = "validation shape";
  m.attention = AttentionKind::mla;
  m.hidden = 7168;
  m.heads = s.heads;
  m.kv_heads = s.heads;
  m.mla = MlaDims{s.r, s.d_r, s.d_n, s.d_v, 0};
  m.layers.resize(1);
  return m;
}

Workload workload_for(const MlaShape& s, DType compute, KvDtype kv, WeightDtype weights) {
  Workload w;
  w.groups = {SequenceGroup{s.batch, static_cast<double>(s.query), static_cast<double>(s.prefix)}};
  w.causal = s.causal;
  w.compute = compute;
  w.kv = kv;
  w.weights = weights;
  w.chunk = s.chunk;
  return w;
}

namespace {

const KindFit* fit_for(const std::vector<KindFit>& fits, std::string_view kind) {
  for (const KindFit& f : fits)
    if (f.kind == kind) return &f;
  return nullptr;
}

double roof_time(double flops, double bytes, double calls, const KindFit& f, const Roofline& rf) {
  return std::max(flops / (rf.peak_flops_per_s * f.eta_compute), bytes / (rf.bandwidth_bytes_per_s * f.eta_memory)) + f.t0_s +
         calls * f.t_call_s;
}

}  // namespace

std::string read_first(const char* file, const char* key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      std::string v = colon == std::string::npos ? line : line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      return v;
    }
  return "unknown";
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

double predict(const Sample& s, const KindFit& f, const Roofline& rf) { return roof_time(s.flops, s.bytes, s.calls, f, rf); }

double predict_op(const Op& op, double calls, const std::vector<KindFit>& fits, const Roofline& rf) {
  const KindFit* f = fit_for(fits, op.name);
  return f ? roof_time(op.flops, op.bytes(), calls, *f, rf) : op_time(op, rf).time_s;
}

double cpu_calls(std::string_view op, const MlaShape& s) {
  const double blocks = std::ceil(s.keys() / 256.0), b = s.batch, h = s.heads;
  const double chunks = std::ceil(static_cast<double>(s.keys()) / s.chunk), chunk_blocks = std::ceil(std::min(s.chunk, s.keys()) / 256.0);
  if (op == "attention_mha") return b * h * blocks;               // per head and key block: two score products, one PV
  if (op == "attention_mha_chunk") return h * chunks * chunk_blocks;
  if (op == "latent_attention_mqa") return b * blocks;            // per sequence and key block
  if (op == "q_absorb_w_uk" || op == "out_absorb_w_uv") return h;  // one product per head
  if (op == "rope_k_broadcast") return h * (s.chunk < s.keys() ? chunks : 1);
  if (op == "kv_up_proj_chunk") return chunks;
  if (op == "lse_merge") return s.tokens() * h;                   // per output row
  return 1;
}

std::vector<KindFit> fit_kinds(const std::vector<Sample>& train, const Roofline& rf) {
  // One fit per kernel (op name): the latent MQA and the per-head MHA are both "attention" but
  // are different kernels with different efficiencies.
  std::map<std::string, std::vector<const Sample*>> by_kind;
  for (const Sample& s : train)
    if (s.kind != "path") by_kind[s.op].push_back(&s);
  std::vector<double> etas_c, etas_m;
  for (int i = 0; i <= 40; ++i) etas_c.push_back(0.01 * std::pow(200.0, i / 40.0));   // 0.01 .. 2
  for (int i = 0; i <= 48; ++i) etas_m.push_back(0.01 * std::pow(1600.0, i / 48.0));  // 0.01 .. 16 (caches beat DRAM)
  // A fixed cost beyond 20 µs would be no kernel launch, only a fit bending to few points.
  const double t0s[] = {0, 0.5e-6, 1e-6, 2e-6, 5e-6, 10e-6, 20e-6};
  std::vector<double> t_calls{0};
  for (int i = 0; i <= 24; ++i) t_calls.push_back(2e-8 * std::pow(1000.0, i / 24.0));  // 20 ns .. 20 µs per call
  std::vector<KindFit> fits;
  for (const auto& [kind, samples] : by_kind) {
    const bool has_calls = std::any_of(samples.begin(), samples.end(), [](const Sample* x) { return x->calls > 0; });
    KindFit best{kind, 1, 1, 0, 0, static_cast<int>(samples.size())};
    double best_loss = INFINITY;
    for (double ec : etas_c)
      for (double em : etas_m)
        for (double t0 : t0s)
          for (double tc : t_calls) {
            if (!has_calls && tc > 0) break;
            const KindFit f{kind, ec, em, t0, tc, static_cast<int>(samples.size())};
            double loss = 0;
            for (const Sample* x : samples) {
              const double e = std::log(roof_time(x->flops, x->bytes, x->calls, f, rf) / x->measured_s);
              loss += e * e;
            }
            if (loss < best_loss) best_loss = loss, best = f;
          }
    fits.push_back(best);
  }
  return fits;
}

Grid checkerboard_grid(const std::vector<int>& heads, const std::vector<int>& batches, const std::vector<int>& queries,
                       const std::vector<int>& prefixes, int chunk) {
  Grid g;
  for (std::size_t hi = 0; hi < heads.size(); ++hi)
    for (std::size_t bi = 0; bi < batches.size(); ++bi)
      for (std::size_t qi = 0; qi < queries.size(); ++qi)
        for (std::size_t pi = 0; pi < prefixes.size(); ++pi) {
          g.shapes.push_back(MlaShape{heads[hi], 512, 64, 128, 128, batches[bi], queries[qi], prefixes[pi], chunk, true});
          g.train.push_back((hi + bi + qi + pi) % 2 == 0);
        }
  return g;
}

ErrorStats ape_stats(std::vector<double> e) {
  ErrorStats s;
  s.n = e.size();
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  s.median = e[e.size() / 2];
  s.p90 = e[std::min(e.size() - 1, static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(e.size())) - 1))];
  return s;
}

ValidationRun run_cpu_validation(const CpuOptions& opt, const std::function<void(const std::string&)>& progress) {
  const std::uint64_t seed = opt.seed ? opt.seed : (static_cast<std::uint64_t>(std::random_device{}()) << 32 | std::random_device{}());
  std::mt19937_64 rng(seed);
  ValidationRun run;

  // 1. Every kernel against its float64 reference, on fresh random inputs.
  progress("checking kernels against float64 references");
  std::vector<KernelCheck> checks;
  for (const MlaShape& s : {MlaShape{4, 64, 16, 32, 24, 2, 5, 37, 16, true}, MlaShape{2, 512, 64, 128, 128, 1, 7, 300, 128, true},
                            MlaShape{3, 64, 16, 32, 32, 1, 9, 20, 8, false}, MlaShape{4, 64, 16, 32, 32, 1, 40, 100, 32, true}}) {
    for (KernelCheck& c : check_kernels(s, rng)) {
      c.kernel += fmt::format(" [h{} r{} B{} Q{} P{}{}]", s.heads, s.r, s.batch, s.query, s.prefix, s.causal ? "" : " non-causal");
      checks.push_back(c);
    }
  }
  run.checks_passed = std::all_of(checks.begin(), checks.end(), [](const KernelCheck& c) { return c.ok(); });

  // 2. Calibration: streaming bandwidth and GEMM throughput at the sizes the grid uses.
  progress("calibrating bandwidth and GEMM throughput");
  const StreamResult stream = measure_stream(opt.quick ? (64u << 20) : (256u << 20));
  const double gemm = std::max({measure_gemm(1024, 512, 16 * 256), measure_gemm(2048, 512, 32 * 256), measure_gemm(512, 512, 512)});
  HardwareSpec cpu;
  cpu.name = "CPU core: " + read_first("/proc/cpuinfo", "model name");
  cpu.memory_bandwidth_bytes_per_s = stream.triad_bytes_per_s;
  cpu.dense_peak_flops_per_s[DType::fp32] = gemm;
  const Roofline rf = roofline_for(cpu, DType::fp32, Efficiency{});

  // 3. The grid: heads per rank as DeepSeek-V3's 128 under TP 16/8/4, batch, query and prefix.
  Grid g = checkerboard_grid(opt.quick ? std::vector<int>{8, 16} : std::vector<int>{8, 16, 32},
                             opt.quick ? std::vector<int>{1} : std::vector<int>{1, 4},
                             opt.quick ? std::vector<int>{1, 16, 128} : std::vector<int>{1, 8, 64, 256},
                             opt.quick ? std::vector<int>{511, 2047} : std::vector<int>{511, 2047, 8191}, 1024);
  std::vector<MlaShape>& grid = g.shapes;
  std::vector<bool>& in_train = g.train;
  const double budget = opt.quick ? 0.02 : 0.15;
  const int min_reps = opt.quick ? 3 : 5;

  // Shapes whose two paths together exceed 60 GFLOP take over half a second a run on one core:
  // they are left out of the grid (and counted) to keep a full run within minutes.
  std::size_t skipped = 0;
  for (std::size_t gi = 0; gi < grid.size();) {
    const ModelSpec m = model_for(grid[gi]);
    const Workload w = workload_for(grid[gi], DType::fp32, KvDtype::fp32, WeightDtype::fp32);
    if (mla_path(m, w, PathKind::absorb).flops() + mla_path(m, w, PathKind::expand).flops() > 60e9) {
      grid.erase(grid.begin() + static_cast<std::ptrdiff_t>(gi));
      in_train.erase(in_train.begin() + static_cast<std::ptrdiff_t>(gi));
      ++skipped;
    } else {
      ++gi;
    }
  }
  std::vector<Sample> samples;
  for (std::size_t gi = 0; gi < grid.size(); ++gi) {
    const MlaShape& s = grid[gi];
    progress(fmt::format("timing shape {}/{}: {} heads, batch {}, Q {}, P {}", gi + 1, grid.size(), s.heads, s.batch, s.query, s.prefix));
    const bool train = in_train[gi];
    MlaBuffers b = make_buffers(s, rng);
    const ModelSpec m = model_for(s);
    const Workload w = workload_for(s, DType::fp32, KvDtype::fp32, WeightDtype::fp32);
    struct PathKernels {
      PathKind kind;
      std::vector<std::pair<std::string, std::function<void()>>> ops;
      std::function<void()> whole;
    };
    const int n_chunks = chunk_count(s);
    auto all_chunks = [&b, n_chunks](void (*f)(MlaBuffers&, int)) {
      return [&b, n_chunks, f] {
        for (int c = 0; c < n_chunks; ++c) f(b, c);
      };
    };
    std::vector<PathKernels> paths{
        {PathKind::absorb,
         {{"q_absorb_w_uk", [&] { q_absorb_w_uk(b); }}, {"latent_attention_mqa", [&] { latent_attention_mqa(b); }},
          {"out_absorb_w_uv", [&] { out_absorb_w_uv(b); }}},
         [&] { q_absorb_w_uk(b), latent_attention_mqa(b), out_absorb_w_uv(b); }},
        {PathKind::expand,
         {{"kv_up_proj", [&] { kv_up_proj(b); }}, {"rope_k_broadcast", [&] { rope_k_broadcast(b); }}, {"attention_mha", [&] { attention_mha(b); }}},
         [&] { kv_up_proj(b), rope_k_broadcast(b), attention_mha(b); }},
    };
    if (s.batch == 1 && n_chunks > 1)  // one chunk is the expand path, with nothing to merge
      paths.push_back({PathKind::chunked,
                       {{"kv_up_proj_chunk", all_chunks(kv_up_proj_chunk)}, {"rope_k_broadcast", all_chunks(rope_k_broadcast_chunk)},
                        {"attention_mha_chunk", all_chunks(attention_mha_chunk)}, {"lse_merge", [&] { lse_merge(b); }}},
                       [&] { chunked_expand(b), lse_merge(b); }});
    for (const PathKernels& pk : paths) {
      const PathPlan plan = mla_path(m, w, pk.kind);
      for (const auto& [name, fn] : pk.ops) {
        const Op* op = nullptr;
        for (const Op& o : plan)
          if (name == o.name) op = &o;
        if (!op) continue;
        const Timed t = time_fn(fn, budget, min_reps, 50);
        samples.push_back(Sample{s.heads, s.batch, s.query, s.prefix, std::string(to_string(pk.kind)), name,
                                 std::string(to_string(op->kind)), op->flops, op->bytes(), cpu_calls(name, s), t.median, t.spread,
                                 op_time(*op, rf).time_s, 0, train});
      }
      const Timed t = time_fn(pk.whole, budget, min_reps, 50);
      samples.push_back(Sample{s.heads, s.batch, s.query, s.prefix, std::string(to_string(pk.kind)), "(path)", "path", plan.flops(),
                               plan.bytes(), 0, t.median, t.spread, path_cost(plan, rf).time_s, 0, train});
    }
  }

  // 4. The crossover: both paths timed whole across query lengths.
  progress("measuring the crossover");
  std::vector<CrossoverSweep> sweeps;
  const std::vector<int> cross_prefixes = opt.quick ? std::vector<int>{1024} : std::vector<int>{1024, 4096};
  const std::vector<int> cross_queries = opt.quick ? std::vector<int>{32, 64, 128, 256, 512} : std::vector<int>{16, 32, 64, 128, 192, 256, 384, 512};
  for (int p : cross_prefixes) {
    CrossoverSweep sw{16, 1, p, {}};
    for (int q : cross_queries) {
      MlaShape s{16, 512, 64, 128, 128, 1, q, p, 1024, true};
      progress(fmt::format("crossover: prefix {}, Q {}", p, q));
      MlaBuffers b = make_buffers(s, rng);
      const Timed ta = time_fn([&] { q_absorb_w_uk(b), latent_attention_mqa(b), out_absorb_w_uv(b); }, budget, min_reps, 20);
      const Timed te = time_fn([&] { kv_up_proj(b), rope_k_broadcast(b), attention_mha(b); }, budget, min_reps, 20);
      sw.points.push_back({q, ta.median, te.median});
    }
    sweeps.push_back(sw);
  }

  MeasuredRun mr;
  mr.title = "CPU validation of the MLA cost model";
  mr.command = "mlaplan validate --backend cpu";
  mr.quick = opt.quick;
  mr.seed = seed;
  mr.machine = fmt::format("{}, {} logical CPUs, {} memory; one core used; compiler {}; Eigen {}.{}.{} ({})",
                           read_first("/proc/cpuinfo", "model name"), std::thread::hardware_concurrency(),
                           read_first("/proc/meminfo", "MemTotal"), __VERSION__, EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
                           EIGEN_MINOR_VERSION, Eigen::SimdInstructionSetsInUse());
  mr.checks = std::move(checks);
  mr.extra_summary.push_back(fmt::format("Grid: {} shapes timed ({} left out for taking over 60 GFLOP a step on one core).", grid.size(), skipped));
  mr.calibration = fmt::format("triad {:.1f} GB/s (read {:.1f}, copy {:.1f}); fp32 GEMM {:.1f} GFLOP/s; ridge {:.1f} FLOP/B",
                               stream.triad_bytes_per_s / 1e9, stream.read_bytes_per_s / 1e9, stream.copy_bytes_per_s / 1e9,
                               gemm / 1e9, rf.ridge());
  mr.rf = rf;
  mr.compute = DType::fp32;
  mr.kv = KvDtype::fp32;
  mr.weights = WeightDtype::fp32;
  mr.samples = std::move(samples);
  mr.sweeps = std::move(sweeps);
  mr.hardware_file = "calibrated-cpu.json";
  mr.calls = cpu_calls;
  mr.hardware["name"] = cpu.name + " (one core, calibrated)";
  mr.hardware["vendor"] = "CPU";
  mr.hardware["memory_capacity_gib"] = {{"value", std::max(1.0, std::atof(read_first("/proc/meminfo", "MemTotal").c_str()) / 1048576.0)},
                                        {"source", "/proc/meminfo MemTotal"}};
  mr.hardware["memory_bandwidth_tb_per_s"] = {{"value", stream.triad_bytes_per_s / 1e12},
                                              {"source", "measured: STREAM triad, mlaplan validate " + today()}};
  mr.hardware["dense_peak_tflops"] = {{"fp32", {{"value", gemm / 1e12}, {"source", "measured: Eigen fp32 GEMM, mlaplan validate " + today()}}}};
  mr.hardware["sm_count"] = {{"value", 1}, {"source", "one core used"}};
  return finish_validation(std::move(mr));
}

ValidationRun finish_validation(MeasuredRun&& mr) {
  ValidationRun run;
  run.checks_passed = std::all_of(mr.checks.begin(), mr.checks.end(), [](const KernelCheck& c) { return c.ok(); });
  const Roofline& rf = mr.rf;
  std::vector<Sample>& samples = mr.samples;
  const std::vector<KernelCheck>& checks = mr.checks;
  // 4. Efficiencies fitted on the training half; errors judged on the held-out half.
  std::vector<Sample> train;
  for (const Sample& s : samples)
    if (s.train) train.push_back(s);
  const std::vector<KindFit> fits = fit_kinds(train, rf);
  for (Sample& s : samples) {
    if (s.kind != "path") {
      const KindFit* f = fit_for(fits, s.op);
      s.fit_s = f ? predict(s, *f, rf) : s.sol_s;
    }
  }
  // A path's fitted prediction is the sum of its ops' (the same shape, just measured above).
  for (Sample& p : samples) {
    if (p.kind != "path") continue;
    for (const Sample& o : samples)
      if (o.kind != "path" && o.path == p.path && o.heads == p.heads && o.batch == p.batch && o.query == p.query && o.prefix == p.prefix)
        p.fit_s += o.fit_s;
  }
  std::map<std::string, std::vector<double>> err_sol, err_fit;
  std::vector<double> all_fit, all_sol, path_fit, spreads;
  for (const Sample& s : samples) {
    spreads.push_back(s.spread);
    if (s.train) continue;
    const double es = std::fabs(s.sol_s - s.measured_s) / s.measured_s, ef = std::fabs(s.fit_s - s.measured_s) / s.measured_s;
    err_sol[s.kind].push_back(es);
    err_fit[s.kind].push_back(ef);
    if (s.kind == "path") {
      path_fit.push_back(ef);
    } else {
      all_fit.push_back(ef);
      all_sol.push_back(es);
    }
  }
  run.held_out_median_ape = ape_stats(all_fit).median;

  // 5. The measured crossover against the predicted one.
  Table cross{"crossover", "Crossover Q*: measured against predicted",
              {{"heads", "heads/rank", Unit::count},
               {"batch", "batch", Unit::count},
               {"prefix", "prefix", Unit::count},
               {"measured_crossover_query", "measured Q*", Unit::decimal},
               {"predicted_fitted_crossover_query", "predicted (fitted)", Unit::decimal},
               {"predicted_sol_crossover_query", "predicted (speed of light)", Unit::decimal},
               {"flop_crossover_query", "FLOP-only", Unit::decimal},
               {"fitted_error", "fitted error", Unit::fraction}},
              {}};
  Table sweep{"crossover_sweep", "Path times across the crossover",
              {{"heads", "heads", Unit::count}, {"batch", "batch", Unit::count}, {"prefix", "prefix", Unit::count}, {"query", "Q", Unit::count},
               {"absorb_s", "absorb", Unit::seconds}, {"expand_s", "expand", Unit::seconds}},
              {}};
  for (const CrossoverSweep& sw : mr.sweeps) {
    std::vector<std::pair<double, double>> curve;  // (Q, log(T_expand / T_absorb))
    for (const auto& [q, ta, te] : sw.points) {
      curve.push_back({q, std::log(te / ta)});
      sweep.rows.push_back({std::int64_t{sw.heads}, std::int64_t{sw.batch}, std::int64_t{sw.prefix}, std::int64_t{q}, ta, te});
    }
    double measured = NAN;
    if (!curve.empty() && curve.front().second <= 0) measured = 0;
    for (std::size_t i = 1; i < curve.size() && std::isnan(measured); ++i)
      if (curve[i - 1].second > 0 && curve[i].second <= 0) {
        const double a = std::log(curve[i - 1].first), bq = std::log(curve[i].first);
        const double t = curve[i - 1].second / (curve[i - 1].second - curve[i].second);
        measured = std::exp(a + t * (bq - a));
      }
    MlaShape s{sw.heads, 512, 64, 128, 128, sw.batch, 1, sw.prefix, 1024, true};
    const ModelSpec m = model_for(s);
    const Workload w = workload_for(s, mr.compute, mr.kv, mr.weights);
    const MlaGeometry g = mla_geometry(m, w);
    const double fitted = crossover_query(g, w, sw.prefix, sw.batch, [&](const PathPlan& plan, double q) {
      MlaShape at = s;
      at.query = static_cast<int>(std::lround(std::max(1.0, q)));
      double t = 0;
      for (const Op& op : plan) t += predict_op(op, mr.calls ? mr.calls(op.name, at) : 0, fits, rf);
      return t;
    });
    const double sol = roofline_crossover_query(m, w, sw.prefix, sw.batch, rf);
    const double flop = flop_crossover_query(g, sw.prefix, true);
    cross.rows.push_back({std::int64_t{sw.heads}, std::int64_t{sw.batch}, std::int64_t{sw.prefix}, std::isnan(measured) ? Value{} : Value{measured},
                          fitted, sol, flop, std::isnan(measured) ? Value{} : Value{std::fabs(fitted - measured) / measured}});
  }

  // 6. The folder.
  Table ops{"ops", "Predicted and measured time per op and per path",
            {{"heads", "heads", Unit::count}, {"batch", "B", Unit::count}, {"query", "Q", Unit::count}, {"prefix", "P", Unit::count},
             {"path", "path", Unit::text}, {"op", "op", Unit::text}, {"kind", "kind", Unit::text}, {"flops", "FLOPs", Unit::flops},
             {"bytes", "bytes", Unit::bytes}, {"measured_s", "measured", Unit::seconds}, {"spread", "spread", Unit::fraction},
             {"predicted_sol_s", "SOL", Unit::seconds}, {"predicted_fit_s", "fitted", Unit::seconds}, {"split", "split", Unit::text}},
            {}};
  for (const Sample& s : samples)
    ops.rows.push_back({std::int64_t{s.heads}, std::int64_t{s.batch}, std::int64_t{s.query}, std::int64_t{s.prefix}, s.path, s.op, s.kind,
                        s.flops, s.bytes, s.measured_s, s.spread, s.sol_s, s.fit_s, std::string(s.train ? "train" : "test")});
  Table errors{"errors", "Held-out error (test half): |predicted − measured| / measured",
               {{"kind", "op kind", Unit::text}, {"points", "points", Unit::count}, {"sol_median_ape", "SOL median", Unit::fraction},
                {"sol_p90_ape", "SOL p90", Unit::fraction}, {"fit_median_ape", "fitted median", Unit::fraction},
                {"fit_p90_ape", "fitted p90", Unit::fraction}},
               {}};
  for (const auto& [kind, e] : err_fit) {
    const ErrorStats sf = ape_stats(e), ss = ape_stats(err_sol[kind]);
    errors.rows.push_back({kind, static_cast<std::int64_t>(sf.n), ss.median, ss.p90, sf.median, sf.p90});
  }
  const ErrorStats all_f = ape_stats(all_fit), all_s = ape_stats(all_sol);
  errors.rows.push_back({std::string("all ops"), static_cast<std::int64_t>(all_f.n), all_s.median, all_s.p90, all_f.median, all_f.p90});
  Table fit_t{"fit", "Fitted efficiencies per kernel (training half)",
              {{"kind", "kernel", Unit::text}, {"eta_compute", "η compute", Unit::fraction}, {"eta_memory", "η memory", Unit::fraction},
               {"t0_s", "fixed cost", Unit::seconds}, {"t_call_s", "per call", Unit::seconds}, {"train_points", "points", Unit::count}},
              {}};
  for (const KindFit& f : fits) fit_t.rows.push_back({f.kind, f.eta_compute, f.eta_memory, f.t0_s, f.t_call_s, std::int64_t{f.train_points}});
  Table check_t{"checks", "Kernels against float64 references (poisoned outputs, fresh random inputs)",
                {{"kernel", "kernel", Unit::text}, {"max_rel_error", "max rel. error", Unit::none}, {"bound", "bound", Unit::none},
                 {"unwritten_outputs", "unwritten outputs", Unit::text}, {"ok", "ok", Unit::text}},
                {}};
  for (const KernelCheck& c : checks) check_t.rows.push_back({c.kernel, c.max_rel_error, c.bound, c.poisoned_left, c.ok()});

  // Predicted against measured, log-log, with y = x.
  svg::LinePlot plot;
  plot.title = "CPU validation: predicted against measured time (held-out half)";
  plot.x_label = "measured time (s)";
  plot.y_label = "predicted time (s)";
  plot.log_x = plot.log_y = true;
  double lo = INFINITY, hi = 0;
  std::map<std::string, svg::Series> by_kind;
  int colour = 0;
  for (const Sample& s : samples) {
    if (s.train) continue;
    lo = std::min({lo, s.measured_s, s.fit_s});
    hi = std::max({hi, s.measured_s, s.fit_s});
    auto [it, fresh] = by_kind.try_emplace(s.kind, svg::Series{s.kind + " (fitted)", {}, false, true, false, colour, colour % 4});
    if (fresh) ++colour;
    it->second.points.push_back({s.measured_s, s.fit_s});
  }
  svg::Series sol{"all ops, speed of light", {}, false, true, false, 8, 0};
  for (const Sample& s : samples)
    if (!s.train && s.kind != "path") sol.points.push_back({s.measured_s, s.sol_s});
  plot.series.push_back({"predicted = measured", {{lo, lo}, {hi, hi}}, true, false, true, 9});
  for (auto& [k, ser] : by_kind) plot.series.push_back(ser);
  plot.series.push_back(sol);

  const std::string& machine = mr.machine;
  const ErrorStats spread_stats = ape_stats(spreads);
  std::string md = fmt::format("# {}\n\n{} run on {} (`{}{}`), seed {}.\n\nMachine: {}.\n\n", mr.title, mr.quick ? "Quick" : "Full",
                               today(), mr.command, mr.quick ? " --quick" : "", mr.seed, machine);
  md += "## Summary\n\n";
  md += fmt::format("- Kernels against float64 references: {}.\n", run.checks_passed ? "all pass" : "**FAILURES**");
  md += fmt::format("- Calibration: {}.\n", mr.calibration);
  for (const std::string& line : mr.extra_summary) md += "- " + line + "\n";
  md += fmt::format("- Held-out error over {} ops: median {:.1f}% (p90 {:.1f}%) with fitted efficiencies; {:.1f}% (p90 {:.1f}%) at speed of light.\n",
                    all_f.n, 100 * all_f.median, 100 * all_f.p90, 100 * all_s.median, 100 * all_s.p90);
  md += fmt::format("- Paths (sum of fitted ops against the path run whole): median {:.1f}% over {} held-out paths.\n",
                    100 * ape_stats(path_fit).median, path_fit.size());
  md += fmt::format("- Timing noise: median spread (IQR / median) {:.1f}%, p90 {:.1f}%.\n\n", 100 * spread_stats.median, 100 * spread_stats.p90);
  auto section = [&](const Table& t) {
    const std::string table = render(Document{"", {}, {t}, {}}, Format::md);
    md += "## " + t.title + "\n\n" + table.substr(table.find("\n|") + 1) + "\n";
  };
  section(errors);
  md += "![predicted against measured](predicted_vs_measured.svg)\n\n";
  section(fit_t);
  section(cross);
  section(sweep);
  section(check_t);
  md += fmt::format("Per-op rows are in `ops.csv` (train and test halves marked); the calibrated machine is `{}`, usable as `--gpu`.\n",
                    mr.hardware_file);

  nlohmann::ordered_json fitj;
  fitj["seed"] = mr.seed;
  fitj["machine"] = machine;
  for (const KindFit& f : fits)
    fitj["kernels"][f.kind] = {{"eta_compute", f.eta_compute}, {"eta_memory", f.eta_memory}, {"t0_s", f.t0_s}, {"t_call_s", f.t_call_s}};
  fitj["held_out_median_ape"] = all_f.median;
  fitj["held_out_p90_ape"] = all_f.p90;
  fitj["timing_spread_median"] = spread_stats.median;

  auto csv = [](const Table& t) { return render(Document{"", {}, {t}, {}}, Format::csv); };
  run.files = {{"report.md", md},
               {"ops.csv", csv(ops)},
               {"errors.csv", csv(errors)},
               {"crossover.csv", csv(cross)},
               {"crossover_sweep.csv", csv(sweep)},
               {"fit.csv", csv(fit_t)},
               {"checks.csv", csv(check_t)},
               {"fit.json", fitj.dump(2) + "\n"},
               {mr.hardware_file, mr.hardware.dump(2) + "\n"},
               {"predicted_vs_measured.svg", svg::render(plot)}};
  run.summary = md.substr(md.find("## Summary"), md.find("## Held-out") - md.find("## Summary"));
  return run;
}

}  // namespace mlaplan::validate
