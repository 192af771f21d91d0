// The validation harness: the fits recover known efficiencies, the error statistics are right, the
// join of kernels to the cost model's ops cannot miss, the outputs reproduce byte for byte, the CPU
// kernels agree with float64, published timings are predicted within a bound, and `mlaplan validate`
// reaches mlaplan-validate (or says clearly that it is missing).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "against.hpp"
#include "cpu_backend.hpp"
#include "fit.hpp"
#include "harness.hpp"
#include "helpers.hpp"
#include "kernels_cpu.hpp"
#include "mlaplan/core/efficiency.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/csv_records.hpp"
#include "mlaplan/io/efficiency_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hardware_json.hpp"
#include "mlaplan/io/registry.hpp"
#include "mlaplan/io/table.hpp"
#include "results.hpp"
#include "validate_cli.hpp"

using namespace mlaplan;
using namespace mlaplan::validate;
namespace fs = std::filesystem;

namespace {

Roofline machine() {
  Roofline rf;
  rf.peak = FlopsPerSecond{100e9};
  rf.bandwidth = BytesPerSecond{20e9};
  return rf;
}

// A measured run whose times follow a known model exactly: what a perfect backend would report.
MeasuredRun synthetic_run(std::uint64_t seed) {
  MeasuredRun mr;
  mr.title = "synthetic";
  mr.command = "test";
  mr.machine = "none";
  mr.seed = seed;
  mr.rf = machine();
  mr.checks = {KernelCheck{.kernel = "k", .max_rel_error = 1e-7, .bound = 1e-6, .poisoned_left = false}};
  mr.hardware.name = "synthetic";
  mr.hardware.memory_capacity = Bytes{kGiB};
  mr.hardware.memory_bandwidth = mr.rf.bandwidth;
  mr.hardware.dense_peak[DType::fp32] = mr.rf.peak;
  mr.hardware_file = "calibrated.json";
  // Efficiencies and a fixed cost on the fit's grid, so a correct fit recovers them exactly.
  const KernelFit truth{.op = OpId::latent_attention_mqa, .eta_compute = geometric_axis(0.01, 2, 40)[30],
                        .eta_memory = geometric_axis(0.01, 16, 48)[40], .t0 = Seconds{2e-6}, .t_call = Seconds{0}};
  const Grid g = checkerboard_grid({8, 16}, {1, 4}, {1, 64}, {511, 2047}, 1024);
  for (std::size_t i = 0; i < g.shapes.size(); ++i) {
    const Workload w = workload_for(g.shapes[i], DType::fp32, KvDtype::fp32, WeightDtype::fp32);
    const PathPlan plan = mla_path(model_for(g.shapes[i]), w, PathKind::absorb);
    Seconds path{0};
    for (const Op& op : plan) {
      const Seconds t = predict(truth, op.flops, op.bytes(), {}, mr.rf, mr.rf.bandwidth);
      path += t;
      mr.samples.push_back(Sample{.shape = g.shapes[i], .path = PathKind::absorb, .op = op.id, .flops = op.flops, .bytes = op.bytes(),
                                  .calls = 0, .measured = t, .spread = 0.01, .sol = op_time(op, mr.rf).time, .fit = Seconds{0},
                                  .train = g.train[i]});
    }
    mr.samples.push_back(Sample{.shape = g.shapes[i], .path = PathKind::absorb, .op = std::nullopt, .flops = plan.flops(),
                                .bytes = plan.bytes(), .calls = 0, .measured = path, .spread = 0.01, .sol = path_cost(plan, mr.rf).time,
                                .fit = Seconds{0}, .train = g.train[i]});
  }
  return mr;
}

std::string file_of(const ValidationRun& r, const std::string& name) {
  for (const auto& [n, text] : r.files)
    if (n == name) return text;
  return {};
}

test::Run process(const std::string& command) {
  const fs::path base = fs::temp_directory_path() / ("mlaplan_validate_test_" + std::to_string(getpid()));
  const int status = std::system((command + " >" + base.string() + ".out 2>" + base.string() + ".err").c_str());
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  test::Run r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(base.string() + ".out"), slurp(base.string() + ".err")};
  fs::remove(base.string() + ".out");
  fs::remove(base.string() + ".err");
  return r;
}

}  // namespace

TEST_CASE("The per-kernel fit recovers efficiencies, fixed, per-call and packing costs it was given", "[validate]") {
  const Roofline rf = machine();
  const KernelFit truth{.op = OpId::kv_up_proj, .eta_compute = 0.5, .eta_memory = 0.8, .t0 = Seconds{2e-6}, .t_call = Seconds{1e-6},
                        .train_points = 0, .eta_pack = 0.25};
  std::vector<Sample> train;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 30; ++i) {
    Sample s;
    s.op = OpId::kv_up_proj;
    s.flops = Flops{std::pow(10.0, 6 + 4 * u(rng))};
    s.bytes = BytesF{std::pow(10.0, 5 + 4 * u(rng))};
    s.calls = std::floor(1 + 100 * u(rng));
    s.packed = i % 3 == 0 ? 0 : std::pow(10.0, 4 + 4 * u(rng));  // a third are one-row products: no packing
    s.measured = predict(truth, s.flops, s.bytes, {.calls = s.calls, .packed = s.packed}, rf, rf.bandwidth);
    train.push_back(s);
  }
  const auto fits = fit_kernels(train, rf);
  REQUIRE(fits.size() == 1);
  CHECK(fits[0].op == OpId::kv_up_proj);
  for (const Sample& s : train)
    CHECK(predict(fits[0], s.flops, s.bytes, {.calls = s.calls, .packed = s.packed}, rf, rf.bandwidth).value == Approx(s.measured.value).epsilon(0.1));
  CHECK(fits[0].eta_compute == Approx(0.5).epsilon(0.15));
  CHECK(fits[0].eta_memory == Approx(0.8).epsilon(0.15));
  CHECK(fits[0].eta_pack == Approx(0.25).epsilon(0.15));
  // Packing adds to the arithmetic: 1 MB at a quarter of the 80 GB/s it streams at is 50 us on top of
  // the same op unpacked.
  const Seconds with = predict(truth, Flops{1e6}, BytesF{1e5}, {.calls = 0, .packed = 1e6}, rf, BytesPerSecond{80e9});
  const Seconds without = predict(truth, Flops{1e6}, BytesF{1e5}, {}, rf, BytesPerSecond{80e9});
  CHECK((with - without).value == Approx(50e-6));
}

TEST_CASE("The cache level: from a copy sweep, and the bandwidth an op's working set streams at", "[validate]") {
  const Roofline rf = machine();  // DRAM: rf.bandwidth
  const double mib = 1 << 20, dram = rf.bandwidth.value;
  // A sweep like this machine's: 4 MiB at 2.5x DRAM, falling past 16 MiB.
  const std::vector<std::pair<double, double>> sweep{{1 * mib, 4.0 * dram}, {2 * mib, 2.7 * dram}, {4 * mib, 2.5 * dram}, {8 * mib, 2.6 * dram},
                                                     {16 * mib, 2.6 * dram}, {32 * mib, 1.5 * dram}, {64 * mib, 1.1 * dram}};
  // Shares of hits from 4 MiB: 1 while a size copies at least as fast as at 4 MiB (8 and 16 MiB copy
  // faster, clamped); at 32 MiB time per byte 1/1.5 = h/2.5 + (1 − h): h = (1 − 1/1.5) / (1 − 1/2.5) =
  // 5/9; at 64 MiB (1 − 1/1.1) / 0.6. The capacity: 16 MiB, the last with 3/4 hits.
  const CacheLevel c = cache_level(sweep, rf.bandwidth);
  CHECK(c.bytes == 16 * mib);
  CHECK(c.bandwidth.value == Approx(2.5 * dram));
  REQUIRE(c.hits.size() == 5);
  CHECK(c.hits[0] == std::pair<double, double>{4 * mib, 1.0});
  CHECK(c.hits[2] == std::pair<double, double>{16 * mib, 1.0});
  CHECK(c.hits[3].second == Approx(5.0 / 9));
  CHECK(c.hits[4].second == Approx((1 - 1 / 1.1) / 0.6));
  CHECK(describe(c) == fmt::format("{:.0f} GB/s up to 16 MiB (copy's share of hits: 100% at 4 MiB, 100% at 8 MiB, 100% at 16 MiB, 56% at 32 MiB, 15% at 64 MiB)",
                                   2.5 * dram / 1e9));
  CHECK(describe(CacheLevel{}) == "none");
  // A 32 MiB copy at 1.7x DRAM (h = 0.69) is past the geometric mean of 2.5x and 1x (1.58x) but still
  // short of 3/4 hits: the capacity stays at 16 MiB. At 2x (h = 5/6) it reaches 32 MiB.
  auto with32 = [&](double at32) {
    std::vector<std::pair<double, double>> s = sweep;
    s[5].second = at32 * dram;
    return cache_level(s, rf.bandwidth).bytes;
  };
  CHECK(with32(1.7) == 16 * mib);
  CHECK(with32(2.0) == 32 * mib);
  // A size past a miss does not count, however fast it copies: 64 MiB at 2x after 32 MiB at 1.5x.
  CHECK(cache_level({{4 * mib, 2.5 * dram}, {32 * mib, 1.5 * dram}, {64 * mib, 2.0 * dram}}, rf.bandwidth).bytes == 4 * mib);
  CHECK(stream_bandwidth(16 * mib, c, rf).value == Approx(2.5 * dram));
  CHECK(stream_bandwidth(16 * mib + 1, c, rf).value == dram);
  CHECK(stream_bandwidth(1e12, CacheLevel{}, rf).value == dram);
  CHECK(stream_bandwidth(1, CacheLevel{}, rf).value == dram);
  // No level where the cache is not 30% faster than DRAM.
  CHECK(cache_level({{4 * mib, 1.2 * dram}, {64 * mib, dram}}, rf.bandwidth).bytes == 0);
  // The fit times a resident op at the cache's bandwidth: the same bytes, 2.5x faster.
  const KernelFit f{.op = OpId::rope_k_broadcast, .eta_compute = 1, .eta_memory = 0.5, .t0 = Seconds{0}, .t_call = Seconds{0}};
  const Seconds resident = predict(f, Flops{0}, BytesF{8 * mib}, {}, rf, stream_bandwidth(8 * mib, c, rf));
  const Seconds streamed = predict(f, Flops{0}, BytesF{8 * mib}, {}, rf, rf.bandwidth);
  CHECK(streamed.value / resident.value == Approx(2.5));
  // The CPU backend's working sets: the chunk loop's ops touch one chunk's share of their bytes.
  const MlaShape s{.heads = 16, .batch = 1, .query = 8, .prefix = 8191, .chunk = 1024};  // 8,199 keys: 9 chunks
  CHECK(cpu_working_set(PathKind::chunked, OpId::rope_k_broadcast, s, 9e6) == Approx(1e6));
  CHECK(cpu_working_set(PathKind::chunked, OpId::attention_mha_chunk, s, 9e6) == Approx(1e6));
  CHECK(cpu_working_set(PathKind::expand, OpId::rope_k_broadcast, s, 9e6) == 9e6);
  CHECK(cpu_working_set(PathKind::absorb, OpId::latent_attention_mqa, s, 9e6) == 9e6);
}

TEST_CASE("The CPU backend's packed bytes: Eigen packs the right operand of products of two or more rows", "[validate]") {
  // DeepSeek-V3's head shapes (r 512, d_n 128, d_r 64, d_v 128), 16 heads per rank, fp32.
  const MlaShape decode{.heads = 16, .batch = 1, .query = 1, .prefix = 2047, .chunk = 1024};  // 2,048 keys
  const MlaShape batch4{.heads = 16, .batch = 4, .query = 1, .prefix = 2047, .chunk = 1024};
  const MlaShape prefill{.heads = 16, .batch = 1, .query = 8, .prefix = 8191, .chunk = 1024};  // 8,199 keys
  // One token: each head's fold is a GEMV and packs nothing; four tokens pack W_UK (128 x 512 floats,
  // 256 KiB) per head: 16 x 262,144 bytes.
  CHECK(cpu_packed(PathKind::absorb, OpId::q_absorb_w_uk, decode) == 0);
  CHECK(cpu_packed(PathKind::absorb, OpId::q_absorb_w_uk, batch4) == 4194304);
  CHECK(cpu_packed(PathKind::absorb, OpId::out_absorb_w_uv, batch4) == 4194304);
  // The latent MQA packs every key (576 floats) and value (512) of every sequence: 2,048 x 1,088 x 4.
  CHECK(cpu_packed(PathKind::absorb, OpId::latent_attention_mqa, decode) == 2048.0 * 1088 * 4);
  CHECK(cpu_packed(PathKind::absorb, OpId::latent_attention_mqa, batch4) == 4 * 2048.0 * 1088 * 4);
  // Per-head MHA: a GEMV at one query; eight queries pack 320 floats per key per head.
  CHECK(cpu_packed(PathKind::expand, OpId::attention_mha, decode) == 0);
  CHECK(cpu_packed(PathKind::expand, OpId::attention_mha, prefill) == 16 * 8199.0 * 320 * 4);
  CHECK(cpu_packed(PathKind::chunked, OpId::attention_mha_chunk, prefill) == 16 * 8199.0 * 320 * 4);
  // The up-projections' packing is part of their arithmetic.
  CHECK(cpu_packed(PathKind::expand, OpId::kv_up_proj, prefill) == 0);
  CHECK(cpu_packed(PathKind::expand, OpId::rope_k_broadcast, prefill) == 0);
}

TEST_CASE("The grid fit returns the grid point that minimises the loss, first one on ties", "[validate]") {
  const std::vector<double> best = grid_fit({{1, 2, 3}, {10, 20, 30, 40}}, [](const std::vector<double>& p) {
    return (p[0] - 2) * (p[0] - 2) + (p[1] - 31) * (p[1] - 31);
  });
  CHECK(best == std::vector<double>{2, 30});
  CHECK(grid_fit({{1, 2}, {5, 6}}, [](const std::vector<double>&) { return 0.0; }) == std::vector<double>{1, 5});
  // Refinement searches between the best point's neighbours: an optimum between grid points is found
  // closer than the coarse step (0.96 lies between 0.90 and 1.03 on this axis, 14% apart).
  const std::vector<double> coarse = geometric_axis(0.01, 2, 40);
  auto off_grid = [](const std::vector<double>& p) { return std::log(p[0] / 0.96) * std::log(p[0] / 0.96); };
  CHECK(std::fabs(grid_fit({coarse}, off_grid)[0] / 0.96 - 1) > 0.05);
  CHECK(grid_fit({coarse}, off_grid, 2)[0] == Approx(0.96).epsilon(0.005));
  CHECK(grid_fit({{0, 1e-6, 2e-6}}, [](const std::vector<double>& p) { return std::fabs(p[0] - 0.3e-6); }, 1)[0] == Approx(0.25e-6));
  const std::vector<double> axis = geometric_axis(0.01, 16, 48);
  CHECK(axis.size() == 49);
  CHECK(axis.front() == 0.01);
  CHECK(axis.back() == Approx(16));
}

TEST_CASE("An efficiency the rows leave free is taken at the least value that explains them as well", "[validate]") {
  // A loss that falls slowly all the way up (rows that never bind it, but for a hair) and one that
  // rises steeply below 0.4 (rows bound by it there): within 1% of the loss at 1.0, the first settles
  // at the axis's first value, the second just above 0.4; a loss that rises below the fitted value
  // keeps it.
  auto slow = [](double e) { return 1 + 0.001 * (1 - e); };
  CHECK(least_as_good(1.0, 0.05, slow(1.0) * 1.01, slow) == Approx(0.05));
  auto steep = [](double e) { return e < 0.4 ? 1 + 100 * (0.4 - e) : 1.0; };
  const double v = least_as_good(1.0, 0.05, 1.01, steep);
  CHECK(v >= 0.4 * (1 - 1e-4 / 0.4));
  CHECK(v < 0.4 * 1.04);  // one step of the axis: 20^(1/96)
  auto rising = [](double e) { return 1 + (0.7 - e) * (0.7 - e); };
  CHECK(least_as_good(0.7, 0.05, rising(0.7) * 1.01, rising) > 0.6);
  CHECK(least_as_good(0.7, 0.05, rising(0.7) * 1.01, rising) <= 0.7);
  CHECK(least_as_good(0.02, 0.05, 1, slow) == 0.02);  // below the axis's start: unchanged
}

TEST_CASE("Error statistics: median and 90th percentile", "[validate]") {
  const ErrorStats s = ape_stats({0.5, 0.1, 0.3, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0});
  CHECK(s.n == 10);
  CHECK(s.median == 0.6);
  CHECK(s.p90 == 0.9);
  CHECK(ape_stats({}).n == 0);
  const Timing t = timing_of({4, 1, 3, 2, 5, 6, 7, 8});
  CHECK(t.median == Seconds{5});
  CHECK(t.spread == Approx((7.0 - 3.0) / 5.0));
}

TEST_CASE("Kernels are joined to the cost model's ops by id: a missing or extra kernel is an error", "[validate]") {
  const MlaShape s{.heads = 4, .batch = 1, .query = 2, .prefix = 100, .chunk = 64};
  const Workload w = workload_for(s, DType::fp32, KvDtype::fp32, WeightDtype::fp32);
  int calls = 0;
  const Timer timer = [&](const std::function<void()>& f) {
    f();
    ++calls;
    return Timing{Seconds{1e-3 * calls}, 0.05};
  };
  auto noop = [] {};
  const PathKernels absorb{PathKind::absorb,
                           {{OpId::q_absorb_w_uk, noop}, {OpId::latent_attention_mqa, noop}, {OpId::out_absorb_w_uv, noop}},
                           nullptr};
  const std::vector<Sample> samples = time_paths(s, w, {absorb}, machine(), timer, nullptr, true);
  REQUIRE(samples.size() == 4);
  CHECK(samples[0].op == OpId::q_absorb_w_uk);
  CHECK(samples[3].is_path());
  CHECK(samples[3].measured == Seconds{4e-3});  // the whole path is timed, not left at zero
  CHECK(samples[3].spread == 0.05);
  CHECK(samples[3].flops == mla_path(model_for(s), w, PathKind::absorb).flops());

  const PathKernels missing{PathKind::absorb, {{OpId::q_absorb_w_uk, noop}, {OpId::out_absorb_w_uv, noop}}, nullptr};
  CHECK_THROWS_WITH(time_paths(s, w, {missing}, machine(), timer, nullptr, true),
                    "validation: no kernel for latent_attention_mqa of the absorb path");
  PathKernels extra = absorb;
  extra.ops.push_back({OpId::split_kv_merge, noop});
  CHECK_THROWS_WITH(time_paths(s, w, {extra}, machine(), timer, nullptr, true),
                    "validation: a kernel times split_kv_merge, which the absorb path's plan does not have");
  // With two split-KV partitions the plan has the merge, and the same kernel list is then complete.
  Workload split = w;
  split.kv_splits = 2;
  CHECK(time_paths(s, split, {extra}, machine(), timer, nullptr, true).size() == 5);
}

TEST_CASE("Validation outputs reproduce byte for byte and carry no date", "[validate]") {
  const ValidationRun a = finish_validation(synthetic_run(42)), b = finish_validation(synthetic_run(42));
  REQUIRE(a.files.size() == b.files.size());
  for (std::size_t i = 0; i < a.files.size(); ++i) {
    INFO(a.files[i].first);
    CHECK(a.files[i] == b.files[i]);
    CHECK_FALSE(std::regex_search(a.files[i].second, std::regex("20[0-9][0-9]-[01][0-9]-[0-3][0-9]")));
  }
  CHECK(a.checks_passed);
  CHECK(a.held_out_median_ape < 1e-9);  // the model that made the times fits them exactly
  CHECK(file_of(a, "report.md").find("--seed 42") != std::string::npos);
  CHECK(file_of(a, "fit.json").find("\"seed\": 42") != std::string::npos);
  // The calibrated machine is written through io and reads back as the same spec.
  const HardwareSpec back = parse_hardware(nlohmann::json::parse(file_of(a, "calibrated.json")), "calibrated.json");
  CHECK(back.memory_bandwidth == BytesPerSecond{20e9});
  CHECK(back.peak_flops(DType::fp32) == FlopsPerSecond{100e9});
}

TEST_CASE("A run whose float64 check failed reports the failures and no timing or fit", "[validate]") {
  MeasuredRun mr = synthetic_run(7);
  mr.checks.push_back(KernelCheck{.kernel = "broken", .max_rel_error = 0.5, .bound = 1e-2, .poisoned_left = false});
  const ValidationRun r = finish_validation(std::move(mr));
  CHECK_FALSE(r.checks_passed);
  REQUIRE(r.files.size() == 2);
  CHECK(r.files[0].first == "report.md");
  CHECK(r.files[1].first == "checks.csv");
  CHECK(r.files[0].second.find("**FAILURES**; nothing was timed") != std::string::npos);
}

TEST_CASE("Hardware specs round-trip through their JSON form", "[validate][io]") {
  for (const BundledEntry& e : bundled_gpus()) {
    INFO(e.short_name);
    const HardwareSpec h = load_gpu(e.short_name);
    const HardwareSpec back = parse_hardware(hardware_to_json(h), "round trip");
    CHECK(back.memory_capacity == h.memory_capacity);
    CHECK(back.memory_bandwidth.value == Approx(h.memory_bandwidth.value).epsilon(1e-12));
    REQUIRE(back.dense_peak.size() == h.dense_peak.size());
    for (const auto& [d, p] : h.dense_peak) CHECK(back.peak_flops(d)->value == Approx(p.value).epsilon(1e-12));
    CHECK(back.sm_count == h.sm_count);
    CHECK(back.l2_cache.value == Approx(static_cast<double>(h.l2_cache.value)).epsilon(1e-9));
    CHECK(back.sources == h.sources);
    CHECK(back.unconfirmed.size() == h.unconfirmed.size());
  }
  HardwareSpec fitted = load_gpu("h100");
  fitted.efficiency = Efficiency{0.62, 0.74, "fitted on published timings"};
  const HardwareSpec back = parse_hardware(hardware_to_json(fitted), "round trip");
  CHECK(back.efficiency.compute == 0.62);
  CHECK(back.efficiency.memory == 0.74);
  CHECK(back.efficiency.source == "fitted on published timings");
}

TEST_CASE("Every CPU kernel agrees with its float64 reference", "[validate]") {
  std::mt19937_64 rng(test::seed("CPU kernels"));
  for (const MlaShape& s : {MlaShape{.heads = 3, .r = 64, .d_r = 16, .d_n = 32, .d_v = 24, .batch = 2, .query = 4, .prefix = 50, .chunk = 16},
                            MlaShape{.heads = 2, .batch = 1, .query = 33, .prefix = 90, .chunk = 32}}) {
    for (const KernelCheck& c : check_kernels(s, rng)) {
      INFO(c.kernel << " error " << c.max_rel_error << " bound " << c.bound);
      CHECK(c.ok());
    }
  }
}

TEST_CASE("Published H800 timings are predicted on held-out rows", "[validate]") {
  const auto dir = fs::path(MLAPLAN_TEST_SOURCE_DIR) / "validate" / "published" / "h800";
  const AgainstRun r = validate_against(dir, load_gpu("h800"), load_model("deepseek-v3"));
  std::string errors;
  for (const auto& [name, text] : r.files)
    if (name == "errors.csv") errors = text;
  const auto rows = parse_csv(errors);
  REQUIRE(rows.size() == 7);  // header, decode, prefill, sparse attention, indexer, GEMM, grouped GEMM
  for (std::size_t i = 1; i < rows.size(); ++i) {
    INFO(rows[i][0]);
    const double sol = std::stod(rows[i][2]), fitted = std::stod(rows[i][6]);
    CHECK(fitted < (rows[i][0] == "gemm" ? 0.15 : 0.10));  // held-out median error of the mechanism model
    CHECK(fitted < sol);   // better than speed of light, which misses launch costs and efficiency
  }
  CHECK_THROWS_WITH(validate_against("/nonexistent", load_gpu("h800"), load_model("deepseek-v3")), "/nonexistent: is not a folder");
}

TEST_CASE("mlaplan-validate's command line refuses bad flags in one line", "[validate][cli]") {
  std::ostringstream out, err;
  CHECK(run_validate_cli({"--backend", "tpu"}, out, err, false) == 2);
  CHECK(err.str() == "mlaplan validate: --backend: value 'tpu': expected cpu or cuda\n");
  CHECK(out.str().empty());
  // An output folder that cannot be written is refused before the minutes of work, named by its flag.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--backend", "cpu", "--out", "/nonexistent/run"},
        std::vector<std::string>{"--transfer", std::string(MLAPLAN_TEST_SOURCE_DIR) + "/validate/published", "--out", "/nonexistent/run"},
        std::vector<std::string>{"--transfer", std::string(MLAPLAN_TEST_SOURCE_DIR) + "/validate/published", "--out",
                                 fs::temp_directory_path().string(), "--write-profiles", "/nonexistent/profiles"}}) {
    std::ostringstream o, e;
    CHECK(run_validate_cli(args, o, e, false) == 2);
    const bool profiles = args.size() == 6;
    CHECK(e.str() == fmt::format("mlaplan validate: {}: value '/nonexistent/{}': its parent folder does not exist\n", profiles ? "--write-profiles" : "--out",
                                 profiles ? "profiles" : "run"));
    CHECK(o.str().empty());
  }
}

TEST_CASE("mlaplan validate runs mlaplan-validate from beside it, or says it is missing", "[validate][cli]") {
  // The real binaries: the planner forwards every argument and returns the child's exit code.
  const test::Run help = process(std::string(MLAPLAN_BIN) + " validate --help");
  CHECK(help.code == 0);
  CHECK(help.out.find("--backend") != std::string::npos);
  const test::Run bad = process(std::string(MLAPLAN_BIN) + " validate --backend tpu");
  CHECK(bad.code == 2);
  CHECK(bad.err == "mlaplan validate: --backend: value 'tpu': expected cpu or cuda\n");
  // A planner alone in a folder: one clear line, exit 2.
  const fs::path dir = fs::temp_directory_path() / ("mlaplan_alone_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(MLAPLAN_BIN, dir / "mlaplan", fs::copy_options::overwrite_existing);
  const test::Run alone = process((dir / "mlaplan").string() + " validate --quick");
  CHECK(alone.code == 2);
  CHECK(alone.out.empty());
  CHECK(alone.err == "mlaplan: validate: needs the validation executable " + (dir / "mlaplan-validate").string() +
                         ", which is missing (build the mlaplan-validate target)\n");
  fs::remove_all(dir);
}

namespace {

// A scratch folder removed at the end of the test.
struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name) : dir(fs::temp_directory_path() / ("mlaplan-test-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel) << text;
  }
};

std::string against_error(const fs::path& dir) {
  try {
    (void)validate_against(dir, load_gpu("h800"), load_model("deepseek-v3"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

// A CSV's rows, the header first, and its columns by name.
struct CsvRows : std::vector<std::vector<std::string>> {
  CsvRows() = default;
  explicit CsvRows(const std::string& text) { assign_from(parse_csv(text)); }
  void assign_from(std::vector<std::vector<std::string>> rows) { std::vector<std::vector<std::string>>::operator=(std::move(rows)); }
  std::size_t col(const char* name) const {
    REQUIRE_FALSE(empty());
    const auto it = std::find(front().begin(), front().end(), name);
    REQUIRE(it != front().end());
    return static_cast<std::size_t>(it - front().begin());
  }
};

// against.csv of one table run through --against on `gpu` (DeepSeek-V3's shapes), and its columns.
struct AgainstRows : CsvRows {
  AgainstRows(const std::string& name, const HardwareSpec& gpu, const std::string& table) {
    Scratch s(name);
    s.write("t.csv", table);
    for (const auto& [file, text] : validate_against(s.dir, gpu, load_model("deepseek-v3")).files)
      if (file == "against.csv") assign_from(parse_csv(text));
  }
};

}  // namespace

TEST_CASE("Against reads any CSV names with the kernel columns and refuses bad rows in one line", "[validate][hostile]") {
  Scratch s("against");
  const std::string f = (s.dir / "t.csv").string();
  s.write("t.csv", "kernel,batch,kv_len,latency_us,source\nabsorbed_decode,4,4096,30.5,paper\nexpanded_prefill,1,,100,x\n");
  CHECK(against_error(s.dir) == f + ": key 'seq_len' = (absent): row 2 needs the column");
  s.write("t.csv", "kernel,batch,kv_len,latency_us\nabsorbed_decod,4,4096,30.5\n");
  CHECK(against_error(s.dir) == f + ": key 'kernel' = absorbed_decod: row 1: expected absorbed_decode, expanded_prefill, sparse_decode, indexer, attention_decode, attention, gemm, bmm, grouped_gemm or elementwise");
  s.write("t.csv", "kernel,batch,kv_len,latency_us\nabsorbed_decode,4,4096,-1\n");
  CHECK(against_error(s.dir) == f + ": key 'latency_us' = -1: row 1: expected a positive number");
  s.write("t.csv", "kernel,batch,kv_len,latency_us\nabsorbed_decode,4.5,4096,3\n");
  CHECK(against_error(s.dir) == f + ": key 'batch' = 4.5: row 1: expected a whole number");
  s.write("t.csv", "kernel,batch,kv_len,latency_us,kv_dtype\nabsorbed_decode,4,4096,3,fp4\n");
  CHECK(against_error(s.dir) == f + ": key 'kv_dtype' = fp4: row 1: expected bf16 or fp8");
  s.write("t.csv", "kernel,batch,seq_len,latency_us,query\nexpanded_prefill,1,4096,3,100\n");
  CHECK(against_error(s.dir) == f + ": key 'query' = 100: row 1: a prefill row has no prefix (query = seq_len)");
  s.write("t.csv", "kernel,batch,kv_len,latency_us,query\nabsorbed_decode,1,4,3,5\n");
  CHECK(against_error(s.dir) == f + ": key 'query' = 5: row 1: more new tokens than kv_len");
  // CRLF line ends (a spreadsheet's export) read like LF.
  s.write("t.csv", "kernel,m,n,k,dtype,latency_us\r\ngemm,64,128,7168,bf16,3\r\ngemm,128,128,7168,bf16,4\r\n");
  CHECK(against_error(s.dir) == "(accepted)");
  s.write("t.csv", "kernel,m,n,k,dtype,latency_us\ngemm,64,128,7168,int4,3\n");
  CHECK(against_error(s.dir) == f + ": key 'dtype' = int4: row 1: expected bf16, fp8 or fp8_tensor");
  // The time a GEMM row includes beyond the kernel: positive, below the latency, GEMM rows only.
  s.write("t.csv", "kernel,m,n,k,dtype,latency_us,other_us\ngemm,64,128,7168,fp8_tensor,3,3\n");
  CHECK(against_error(s.dir) == f + ": key 'other_us' = 3: row 1: must be below latency_us, the time that includes it");
  s.write("t.csv", "kernel,m,n,k,dtype,latency_us,other_us\ngemm,64,128,7168,fp8_tensor,3,-1\n");
  CHECK(against_error(s.dir) == f + ": key 'other_us' = -1: row 1: expected a positive number");
  s.write("t.csv", "kernel,op,batch,heads,dtype,latency_us,other_us\nbmm,out_absorb_w_uv,4,128,bf16,6,1\n");
  CHECK(against_error(s.dir) == f + ": key 'other_us' = 1: row 1: only gemm rows carry it");
  s.write("t.csv", "kernel,m,n,k,dtype,latency_us,other_us\ngemm,64,128,7168,fp8_tensor,3,1\ngemm,128,128,7168,bf16,4,\n");
  CHECK(against_error(s.dir) == "(accepted)");
  // A GEMM row that quantises its input first: block fp8 only, `timed` or `none`, GEMM rows only.
  const std::string gemm_header = "kernel,m,n,k,dtype,latency_us,act_quant\n";
  const std::string block_only = ": key 'act_quant' = timed: row 1: only a block-fp8 GEMM (dtype fp8) quantises its input per 128 values";
  for (const auto& [table, message] : std::vector<std::pair<std::string, std::string>>{
           {gemm_header + "gemm,64,128,7168,fp8,3,yes\n", f + ": key 'act_quant' = yes: row 1: expected timed or none"},
           {gemm_header + "gemm,64,128,7168,bf16,3,timed\n", f + block_only},
           {gemm_header + "gemm,64,128,7168,fp8_tensor,3,timed\n", f + block_only},
           {"kernel,batch,kv_len,latency_us,act_quant\nabsorbed_decode,4,4096,30.5,timed\n", f + ": key 'act_quant' = timed: row 1: only gemm rows carry it"},
           {gemm_header + "gemm,64,128,7168,fp8,3,timed\ngemm,128,128,7168,fp8,4,none\ngemm,128,256,7168,bf16,4,\n", "(accepted)"}}) {
    s.write("t.csv", table);
    CHECK(against_error(s.dir) == message);
  }
  // The GEMM's library: `deepgemm` or `default`, block-fp8 GEMM rows only.
  const std::string lib_header = "kernel,m,n,k,dtype,latency_us,library\n";
  for (const auto& [table, message] : std::vector<std::pair<std::string, std::string>>{
           {lib_header + "gemm,64,128,7168,fp8,3,cutlass\n", f + ": key 'library' = cutlass: row 1: expected deepgemm or default"},
           {lib_header + "gemm,64,128,7168,fp8,3,DeepGEMM\n", f + ": key 'library' = DeepGEMM: row 1: expected deepgemm or default"},
           {lib_header + "gemm,64,128,7168,bf16,3,deepgemm\n", f + ": key 'library' = deepgemm: row 1: DeepGEMM runs block-fp8 GEMMs (dtype fp8), not bf16"},
           {lib_header + "gemm,64,128,7168,fp8_tensor,3,deepgemm\n",
            f + ": key 'library' = deepgemm: row 1: DeepGEMM runs block-fp8 GEMMs (dtype fp8), not fp8_tensor"},
           {"kernel,batch,kv_len,latency_us,library\nabsorbed_decode,4,4096,30.5,deepgemm\n", f + ": key 'library' = deepgemm: row 1: only gemm rows carry it"},
           {lib_header + "gemm,64,128,7168,fp8,3,deepgemm\ngemm,128,128,7168,fp8,4,default\ngemm,128,256,7168,bf16,4,\n", "(accepted)"}}) {
    s.write("t.csv", table);
    CHECK(against_error(s.dir) == message);
  }
  // ... and on a GPU with fp8 tensor cores: A100 has no fp8 peak.
  s.write("t.csv", lib_header + "gemm,64,128,7168,fp8,3,deepgemm\n");
  try {
    (void)validate_against(s.dir, load_gpu("a100-80gb"), load_model("deepseek-v3"));
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == f + ": key 'library' = deepgemm: row 1: DeepGEMM runs on fp8 tensor cores, and A100 SXM4 80GB has no fp8 peak");
  }
  // TensorRT-LLM's context passes and GQA preprocessing: `trtllm` or `none`, MLA prefill and GQA attention rows only.
  const std::string prefill_header = "kernel,batch,seq_len,kv_len,heads,kv_dtype,latency_us,preprocess\n";
  for (const auto& [table, message] : std::vector<std::pair<std::string, std::string>>{
           {prefill_header + "expanded_prefill,1,1024,,128,bf16,140,TRTLLM\n", f + ": key 'preprocess' = TRTLLM: row 1: expected trtllm or none"},
           {prefill_header + "absorbed_decode,4,,4096,128,bf16,30,trtllm\n", f + ": key 'preprocess' = trtllm: row 1: only expanded_prefill and GQA attention rows carry it"},
           {"kernel,m,n,k,dtype,latency_us,preprocess\ngemm,64,128,7168,fp8,3,none\n", f + ": key 'preprocess' = none: row 1: only expanded_prefill and GQA attention rows carry it"},
           {"kernel,batch,kv_len,seq_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us,preprocess\nattention_decode,4,4096,,32,8,128,bf16,bf16,25,trtlm\n",
            f + ": key 'preprocess' = trtlm: row 1: expected trtllm or none"},
           {"kernel,batch,kv_len,seq_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us,preprocess\nattention_decode,4,4096,,32,8,128,bf16,bf16,25,trtllm\n"
            "attention,2,,1024,32,8,128,bf16,bf16,30,none\n",
            "(accepted)"},
           {prefill_header + "expanded_prefill,1,1024,,128,bf16,140,trtllm\nexpanded_prefill,1,1024,,128,fp8,150,none\nabsorbed_decode,4,,4096,128,bf16,30,\n", "(accepted)"}}) {
    s.write("t.csv", table);
    CHECK(against_error(s.dir) == message);
  }
  // The pool a GQA table was timed over: `kv` or `k_only`, GQA attention rows only.
  const std::string pool_header = "kernel,batch,kv_len,seq_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us,kv_pool\n";
  for (const auto& [table, message] : std::vector<std::pair<std::string, std::string>>{
           {pool_header + "attention_decode,4,4096,,32,8,128,bf16,bf16,25,K_ONLY\n", f + ": key 'kv_pool' = K_ONLY: row 1: expected kv or k_only"},
           {pool_header + "attention_decode,4,4096,,32,8,128,bf16,bf16,25,v_only\n", f + ": key 'kv_pool' = v_only: row 1: expected kv or k_only"},
           {"kernel,batch,kv_len,latency_us,kv_pool\nabsorbed_decode,4,4096,30.5,k_only\n", f + ": key 'kv_pool' = k_only: row 1: only GQA attention rows (attention, attention_decode) carry it"},
           {"kernel,m,n,k,dtype,latency_us,kv_pool\ngemm,64,128,7168,bf16,3,kv\n", f + ": key 'kv_pool' = kv: row 1: only GQA attention rows (attention, attention_decode) carry it"},
           {pool_header + "attention_decode,4,4096,,32,8,128,bf16,bf16,25,k_only\nattention,2,,1024,32,8,128,bf16,bf16,30,kv\nattention_decode,4,4096,,32,8,128,bf16,bf16,25,\n", "(accepted)"}}) {
    s.write("t.csv", table);
    CHECK(against_error(s.dir) == message);
  }
  // Per-tensor fp8 is a GEMM's kernel only.
  s.write("t.csv", "kernel,op,batch,heads,dtype,latency_us\nbmm,out_absorb_w_uv,4,128,fp8_tensor,6\n");
  CHECK(against_error(s.dir) == f + ": key 'dtype' = fp8_tensor: row 1: expected bf16 or fp8");
  s.write("t.csv", "kernel,m,n,k,latency_us\ngemm,64.5,128,7168,3\n");
  CHECK(against_error(s.dir) == f + ": key 'm' = 64.5: row 1: expected a whole number");
  s.write("t.csv", "kernel,m,n,latency_us\ngemm,64,128,3\n");
  CHECK(against_error(s.dir) == f + ": key 'k' = (absent): row 1 needs the column");
  // The per-head folds and elementwise passes.
  s.write("t.csv", "kernel,op,batch,heads,dtype,latency_us\nbmm,q_absorb_w_ub,4,128,bf16,6\n");
  CHECK(against_error(s.dir) == f + ": key 'op' = q_absorb_w_ub: row 1: expected q_absorb_w_uk or out_absorb_w_uv");
  s.write("t.csv", "kernel,batch,heads,dtype,latency_us\nbmm,4,128,bf16,6\n");
  CHECK(against_error(s.dir) == f + ": key 'op' = (absent): row 1: expected q_absorb_w_uk or out_absorb_w_uv");
  s.write("t.csv", "kernel,op,batch,heads,dtype,latency_us\nbmm,out_absorb_w_uv,4,12.5,bf16,6\n");
  CHECK(against_error(s.dir) == f + ": key 'heads' = 12.5: row 1: expected a whole number");
  s.write("t.csv", "kernel,op,batch,heads,dtype,latency_us\nbmm,out_absorb_w_uv,4,128,fp4,6\n");
  CHECK(against_error(s.dir) == f + ": key 'dtype' = fp4: row 1: expected bf16 or fp8");
  s.write("t.csv", "kernel,m,k,dtype,latency_us\nelementwise,64,0,fp8,2\n");
  CHECK(against_error(s.dir) == f + ": key 'k' = 0: row 1: expected a positive number");
  s.write("t.csv", "kernel,m,k,dtype,latency_us\nelementwise,64,7168,int8,2\n");
  CHECK(against_error(s.dir) == f + ": key 'dtype' = int8: row 1: expected bf16 or fp8");
  s.write("t.csv", "kernel,groups,m,n,k,dtype,latency_us\ngrouped_gemm,4,256.5,4096,7168,fp8,60\n");
  CHECK(against_error(s.dir) == f + ": key 'm' = 256.5: row 1: expected a whole number");
  s.write("t.csv", "kernel,m,n,k,dtype,latency_us\ngrouped_gemm,256,4096,7168,fp8,60\n");
  CHECK(against_error(s.dir) == f + ": key 'groups' = (absent): row 1 needs the column");
  s.write("t.csv", "kernel,groups,m,n,k,dtype,latency_us\ngrouped_gemm,4,256,4096,7168,nvfp4,60\n");
  CHECK(against_error(s.dir) == f + ": key 'dtype' = nvfp4: row 1: expected bf16 or fp8");
  s.write("t.csv", "kernel,m,latency_us\nelementwise,64,2\n");
  CHECK(against_error(s.dir) == f + ": key 'k' = (absent): row 1 needs the column");
  // GQA attention: decode rows give kv_len, prompt rows seq_len, and the heads must share KV heads evenly.
  const std::string gqa = "kernel,batch,kv_len,seq_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us\n";
  s.write("t.csv", gqa + "attention_decode,4,4096,,32,5,128,bf16,bf16,20\n");
  CHECK(against_error(s.dir) == f + ": key 'kv_heads' = 5: row 1: must divide heads (32)");
  s.write("t.csv", gqa + "attention_decode,4,4096,,8,32,128,bf16,bf16,20\n");
  CHECK(against_error(s.dir) == f + ": key 'kv_heads' = 32: row 1: must divide heads (8)");
  s.write("t.csv", gqa + "attention,4,4096,,32,8,128,bf16,bf16,20\n");
  CHECK(against_error(s.dir) == f + ": key 'kv_len' = 4096: row 1: attention rows give seq_len (a prompt, no prefix)");
  s.write("t.csv", gqa + "attention_decode,4,,4096,32,8,128,bf16,bf16,20\n");
  CHECK(against_error(s.dir) == f + ": key 'seq_len' = 4096: row 1: attention_decode rows give kv_len (keys per sequence, the new token included)");
  s.write("t.csv", gqa + "attention,4,,4096,32,8,128,bf16,fp8,20\n");
  CHECK(against_error(s.dir) == f + ": key 'dtype' = fp8: row 1: an fp8 kernel reads an fp8 cache (kv_dtype is bf16)");
  s.write("t.csv", gqa + "attention,4,,4096,4096,8,128,bf16,bf16,20\n");
  CHECK(against_error(s.dir) == f + ": key 'heads' = 4096: row 1: expected at most 1024");
  s.write("t.csv", "kernel,batch,kv_len,heads,kv_heads,latency_us\nattention_decode,4,4096,32,8,20\n");
  CHECK(against_error(s.dir) == f + ": key 'head_dim' = (absent): row 1 needs the column");
  s.write("t.csv", gqa + "attention_decode,4,4096,,32,8,128,fp4,bf16,20\n");
  CHECK(against_error(s.dir) == f + ": key 'kv_dtype' = fp4: row 1: expected bf16 or fp8");
  // DeepSeek-V3.2's indexer and sparse attention: an fp8 index cache, a top-k for the sparse rows.
  s.write("t.csv", "kernel,batch,query,kv_len,heads,head_dim,kv_dtype,latency_us\nindexer,64,1,1024,64,128,bf16,9\n");
  CHECK(against_error(s.dir) == f + ": key 'kv_dtype' = bf16: row 1: expected fp8 (the index cache)");
  s.write("t.csv", "kernel,batch,query,kv_len,heads,head_dim,latency_us\nindexer,64,4,2,64,128,9\n");
  CHECK(against_error(s.dir) == f + ": key 'query' = 4: row 1: more new tokens than kv_len");
  s.write("t.csv", "kernel,batch,query,kv_len,heads,head_dim,latency_us\nindexer,64,1,1024,64,4096,9\n");
  CHECK(against_error(s.dir) == f + ": key 'head_dim' = 4096: row 1: out of range");
  s.write("t.csv", "kernel,batch,query,kv_len,heads,kv_dtype,latency_us\nsparse_decode,64,1,1024,128,fp8_flashmla,90\n");
  CHECK(against_error(s.dir) == f + ": key 'topk' = (absent): row 1 needs the column");
  s.write("t.csv", "kernel,batch,query,kv_len,heads,topk,kv_dtype,latency_us\nsparse_decode,64,1,1024,128,2048,fp4,90\n");
  CHECK(against_error(s.dir) == f + ": key 'kv_dtype' = fp4: row 1: expected bf16, fp8 or fp8_flashmla");
  s.write("t.csv", "kernel,batch,query,kv_len,heads,topk,latency_us\nsparse_decode,64,1.5,1024,128,2048,90\n");
  CHECK(against_error(s.dir) == f + ": key 'query' = 1.5: row 1: expected a whole number");
  fs::remove(s.dir / "t.csv");
  CHECK(against_error(s.dir) == s.dir.string() + ": holds no .csv files");
  // Accepted: any file name, extra columns named in the report as not read.
  s.write("whatever.csv", "kernel,batch,kv_len,latency_us,source\nabsorbed_decode,4,4096,30.5,paper\nabsorbed_decode,8,4096,40.5,paper\n");
  const AgainstRun r = validate_against(s.dir, load_gpu("h100"), load_model("deepseek-v3"));
  CHECK(r.summary.rfind("GPU H100 SXM5 80GB; default profile: h100-sxm profile (fitted on H100 SXM5 80GB): absorbed_decode, expanded_prefill, attention, attention_decode, gemm, bmm, elementwise; sparse_decode, indexer from the any profile; grouped_gemm from the hopper profile; gemm's DeepGEMM η_c from the hopper profile\n", 0) == 0);
  // The folder's provenance file is not a table of timings.
  s.write("sources.csv", "file,source,licence\nwhatever.csv,a paper,CC-BY-4.0\n");
  CHECK(validate_against(s.dir, load_gpu("h100"), load_model("deepseek-v3")).summary == r.summary);
  for (const auto& [name, text] : r.files)
    if (name == "report.md") CHECK(text.find("Columns not read (kept as the sources' own): source.") != std::string::npos);
}

TEST_CASE("Against: a block-fp8 GEMM that quantises its input adds that kernel, worked by hand", "[validate]") {
  const HardwareSpec h100 = load_gpu("h100");
  const AgainstRows rows("against-act-quant", h100, "kernel,m,n,k,dtype,latency_us,act_quant\ngemm,1024,2048,7168,fp8,30,timed\ngemm,1024,2048,7168,fp8,25,\n");
  REQUIRE(rows.size() == 3);
  const auto col = [&](const char* name) { return rows.col(name); };
  const double bw = h100.memory_bandwidth.value;  // 3.35 TB/s
  // The GEMM: 2·1024·2048·7168 = 30,064,771,072 FLOPs at the fp8 peak (1,978.9 TFLOP/s): 15.193 µs,
  // over its bytes (fp8 A 7,340,032 + fp8 W 14,680,064 + bf16 C 4,194,304 = 26,214,400: 7.825 µs).
  // The quantisation: 1024·7168 = 7,340,032 values, 2 bytes read and 1 + 4/128 written each:
  // 22,249,472 bytes, 6.642 µs. At speed of light the row takes 15.193 + 6.642 = 21.834 µs.
  CHECK(std::stod(rows[2][col("predicted_sol_s")]) == Approx(30064771072.0 / 1978.9e12).epsilon(1e-9));
  CHECK(std::stod(rows[1][col("predicted_sol_s")]) == Approx(30064771072.0 / 1978.9e12 + 22249472.0 / bw).epsilon(1e-9));
  CHECK(std::stod(rows[1][col("predicted_sol_s")]) == Approx(21.834e-6).epsilon(1e-4));
  // The default: the GEMM under the shipped gemm parameters, the quantisation under the elementwise
  // ones (its 22 MB input fits H100's 50 MiB L2, which the table's repeated calls read it from).
  const auto profile = efficiency_for(h100, bundled_efficiency());
  REQUIRE(profile);
  const auto& e = profile->kernel(KernelFamily::elementwise);
  REQUIRE(e);
  const double quant = calibrated_time(act_quant_op(7340032, 2), *e, *h100.peak_flops(DType::bf16), h100.memory_bandwidth,
                                       static_cast<double>(h100.sm_count), h100.sm_clock_hz, false, h100.l2_cache).time().value;
  REQUIRE(e->l2_bytes_per_sm_cycle > 0);
  CHECK(quant == Approx(e->fixed.value + 22249472.0 / (132 * 1.98e9 * e->l2_bytes_per_sm_cycle)).epsilon(1e-9));
  CHECK(std::stod(rows[1][col("predicted_default_s")]) - std::stod(rows[2][col("predicted_default_s")]) == Approx(quant).epsilon(1e-9));
}

TEST_CASE("Against: a fold, an elementwise pass and a grouped GEMM, worked by hand at speed of light and under the shipped profile", "[validate]") {
  const HardwareSpec h100 = load_gpu("h100");
  const AgainstRows rows("against-families", h100,
                         "kernel,op,batch,heads,dtype,latency_us,m,k,groups,n\nbmm,q_absorb_w_uk,4,128,bf16,6,,,,\nelementwise,,,,fp8,70,4096,16384,,\n"
                         "grouped_gemm,,,,fp8,60,256,7168,4,4096\n");
  REQUIRE(rows.size() == 4);
  const auto col = [&](const char* name) { return rows.col(name); };
  const double bw = h100.memory_bandwidth.value;  // 3.35 TB/s
  // W_UK on 4 tokens x 128 heads: 2·4·128·128·512 = 67,108,864 FLOPs; bytes = bf16 weights
  // 128·128·512·2 = 16,777,216 + queries 4·128·128·2 = 131,072 + output 4·128·512·2 = 524,288.
  CHECK(rows[1][col("kernel")] == "bmm");
  CHECK(std::stod(rows[1][col("predicted_sol_s")]) == Approx(std::max(67108864.0 / 989.4e12, 17432576.0 / bw)).epsilon(1e-9));
  // bf16 [4096, 16384] to fp8: 4096·16384·(2 + 1) = 201,326,592 bytes.
  CHECK(rows[2][col("kernel")] == "elementwise");
  CHECK(std::stod(rows[2][col("predicted_sol_s")]) == Approx(201326592.0 / bw).epsilon(1e-9));
  // 4 experts' fp8 [7168, 4096] weights for 256 rows: 2·256·7168·4096 = 15,032,385,536 FLOPs at the fp8
  // peak; bytes = 4·7168·4096 + rows in 256·7168·2 + out 256·4096·2 = 123,207,680.
  CHECK(rows[3][col("kernel")] == "grouped_gemm");
  CHECK(std::stod(rows[3][col("predicted_sol_s")]) ==
        Approx(std::max(15032385536.0 / h100.peak_flops(DType::fp8)->value, 123207680.0 / bw)).epsilon(1e-9));
  // The default: the shipped H100 profile's elementwise parameters, t = fixed + B / (bandwidth·η_m).
  const auto profile = efficiency_for(h100, bundled_efficiency());
  REQUIRE(profile);
  const auto& e = profile->kernel(KernelFamily::elementwise);
  REQUIRE(e);
  CHECK(std::stod(rows[2][col("predicted_default_s")]) == Approx(e->fixed.value + 201326592.0 / (bw * e->eta_memory)).epsilon(1e-9));
}

// A refit of the rows of one kernel family (GEMMs unless told) a scratch folder holds: the fitted
// parameters (fit.json's entry of the family) and the error table (errors.csv).
struct GemmRefit {
  nlohmann::json gemm;
  std::string errors;
  GemmRefit(const Scratch& s, const HardwareSpec& gpu, const char* family = "gemm") {
    const AgainstRun r = validate_against(s.dir, gpu, load_model("deepseek-v3"));
    for (const auto& [file, text] : r.files) {
      if (file == "fit.json") gemm = nlohmann::json::parse(text)[family];
      if (file == "errors.csv") errors = text;
    }
  }
  // The held-out median error of the refit, from the one family's errors.csv row.
  double held_out_median() const {
    const auto e = parse_csv(errors);
    REQUIRE(e.size() == 2);
    return std::stod(e[1][6]);
  }
};

// The refit of one family (--against) on a table written to a scratch folder of its own.
GemmRefit refit_of(const char* scratch, const std::string& table, const HardwareSpec& gpu, const char* family = "gemm") {
  Scratch s(scratch);
  s.write("t.csv", table);
  return GemmRefit(s, gpu, family);
}

TEST_CASE("Against: the fit recovers the memory reach, efficiencies and fixed cost its rows were made with", "[validate]") {
  // bf16 GEMMs on an H100 timed by the model itself at a reach of 10 SM shares: skinny shapes of few
  // tiles (where the reach decides the time), square ones (compute), and between.
  const HardwareSpec h100 = load_gpu("h100");
  const KernelEfficiency given{.fixed = Seconds{2e-6}, .per_sequence = Seconds{0}, .eta_compute = 0.8, .eta_compute_fp8 = std::nullopt, .eta_compute_fp8_tensor = std::nullopt,
                               .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt, .eta_memory = 0.75,
                               .memory_reach = 10, .rows = 0};
  std::string table = "kernel,m,n,k,dtype,latency_us\n";
  for (int m : {1, 16, 128, 1024, 8192})
    for (int n : {256, 1024, 4096, 16384})
      for (int k : {512, 1024, 2048, 7168}) {
        Op op = gemm_op(OpId::q_proj, m, k, n, 2, 2);
        const double t = calibrated_time(op, given, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, static_cast<double>(h100.sm_count), h100.sm_clock_hz, false, Bytes{0}).time().value;
        table += fmt::format("gemm,{},{},{},bf16,{:.6f}\n", m, n, k, t * 1e6);
      }
  const GemmRefit refit = refit_of("against-reach", table, h100, "gemm");
  const nlohmann::json& g = refit.gemm;
  CHECK(g["memory_reach"].get<double>() == Approx(10).epsilon(0.1));
  CHECK(g["eta_memory"].get<double>() == Approx(0.75).epsilon(0.05));
  CHECK(g["eta_compute"].get<double>() == Approx(0.8).epsilon(0.05));
  CHECK(g["t_fixed_s"].get<double>() == Approx(2e-6).epsilon(0.1));
  CHECK(refit.held_out_median() < 0.01);  // held-out median error of the refit
}

TEST_CASE("Against: bf16, block-scaled and per-tensor fp8 GEMMs get their own efficiencies, other_us added", "[validate]") {
  // GEMMs on an H100 timed by the model itself at eta_c 0.8 (bf16), 0.4 (block-scaled fp8) and 0.7
  // (per-tensor fp8, each row with a further 5 µs in other_us, as a dynamic quantisation the table
  // times with the GEMM): the fit finds each efficiency, and the per-tensor rows' held-out error stays
  // small only with the other_us added.
  const HardwareSpec h100 = load_gpu("h100");
  const KernelEfficiency given{.fixed = Seconds{2e-6}, .per_sequence = Seconds{0}, .eta_compute = 0.8, .eta_compute_fp8 = 0.4, .eta_compute_fp8_tensor = 0.7,
                               .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt, .eta_memory = 0.75, .memory_reach = 4, .rows = 0};
  std::string table = "kernel,m,n,k,dtype,latency_us,other_us\n";
  for (const char* dtype : {"bf16", "fp8", "fp8_tensor"})
    for (int m : {16, 1024, 8192})
      for (int n : {1024, 4096, 16384})
        for (int k : {1024, 7168}) {
          const bool fp8 = std::string(dtype) != "bf16", tensor = std::string(dtype) == "fp8_tensor";
          Op op = gemm_op(OpId::q_proj, m, k, n, fp8 ? 1 : 2, fp8 ? 1 : 2);
          op.bytes_written = BytesF{static_cast<double>(m) * n * 2};
          op.fp8 = fp8;
          op.fp8_per_tensor = tensor;
          const double t = calibrated_time(op, given, *h100.peak_flops(fp8 ? DType::fp8 : DType::bf16), h100.memory_bandwidth,
                                           static_cast<double>(h100.sm_count), h100.sm_clock_hz, fp8, Bytes{0}).time().value;
          const double other = tensor ? 5e-6 : 0;
          table += fmt::format("gemm,{},{},{},{},{:.6f},{}\n", m, n, k, dtype, (t + other) * 1e6, tensor ? "5" : "");
        }
  const GemmRefit refit = refit_of("against-fp8-kinds", table, h100, "gemm");
  const nlohmann::json& g = refit.gemm;
  CHECK(g["eta_compute"].get<double>() == Approx(0.8).epsilon(0.05));
  CHECK(g["eta_compute_fp8"].get<double>() == Approx(0.4).epsilon(0.05));
  CHECK(g["eta_compute_fp8_tensor"].get<double>() == Approx(0.7).epsilon(0.05));
  CHECK(refit.held_out_median() < 0.02);  // held-out median error of the refit
}

TEST_CASE("Against: the fit times a GEMM's input quantisation with the table's elementwise parameters", "[validate]") {
  // On an H100, elementwise rows made at 1.5 µs + B / (bandwidth·0.9) and block-fp8 GEMMs at η_c 0.45
  // plus the quantisation of their input under those elementwise parameters: the refit finds η_c
  // 0.45 and the held-out rows within 1%; read as if the GEMMs were timed alone, it cannot.
  const HardwareSpec h100 = load_gpu("h100");
  const KernelEfficiency elem{.fixed = Seconds{1.5e-6}, .per_sequence = Seconds{0}, .eta_compute = 0.05, .eta_compute_fp8 = std::nullopt,
                              .eta_compute_fp8_tensor = std::nullopt, .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt,
                              .eta_memory = 0.9, .memory_reach = 1, .rows = 0};
  const KernelEfficiency gemm{.fixed = Seconds{3e-6}, .per_sequence = Seconds{0}, .eta_compute = 0.8, .eta_compute_fp8 = 0.45, .eta_compute_fp8_tensor = std::nullopt,
                              .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt, .eta_memory = 0.75, .memory_reach = 4, .rows = 0};
  const double sms = static_cast<double>(h100.sm_count);
  std::string elementwise = "kernel,m,k,dtype,latency_us\n";
  for (int m : {16, 256, 4096, 32768})
    for (int k : {1024, 4096, 16384}) {
      Op op;
      op.id = OpId::rms_norm;
      op.flops = Flops{static_cast<double>(m) * k};
      op.bytes_read = BytesF{static_cast<double>(m) * k * 2};
      op.bytes_written = BytesF{static_cast<double>(m) * k};
      const double t = calibrated_time(op, elem, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, sms, h100.sm_clock_hz, false, h100.l2_cache).time().value;
      elementwise += fmt::format("elementwise,{},{},fp8,{:.6f}\n", m, k, t * 1e6);
    }
  std::string timed = "kernel,m,n,k,dtype,latency_us,act_quant\n", alone = "kernel,m,n,k,dtype,latency_us\n";
  for (int m : {16, 256, 2048, 16384})
    for (int n : {1024, 4096, 16384})
      for (int k : {1024, 7168}) {
        Op op = gemm_op(OpId::q_proj, m, k, n, 1, 1);
        op.bytes_written = BytesF{static_cast<double>(m) * n * 2};
        op.fp8 = true;
        const double t = calibrated_time(op, gemm, *h100.peak_flops(DType::fp8), h100.memory_bandwidth, sms, h100.sm_clock_hz, true, Bytes{0}).time().value +
                         calibrated_time(act_quant_op(static_cast<double>(m) * k, 2), elem, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, sms, h100.sm_clock_hz,
                                         false, h100.l2_cache).time().value;
        timed += fmt::format("gemm,{},{},{},fp8,{:.6f},timed\n", m, n, k, t * 1e6);
        alone += fmt::format("gemm,{},{},{},fp8,{:.6f}\n", m, n, k, t * 1e6);
      }
  Scratch s("against-act-quant-fit");
  s.write("e.csv", elementwise);
  s.write("g.csv", timed);
  const GemmRefit refit(s, h100);
  CHECK(refit.gemm["eta_compute"].get<double>() == Approx(0.45).epsilon(0.05));  // the only dtype: its η_c is the fp8 one
  const auto e = parse_csv(refit.errors);
  REQUIRE(e.size() == 3);
  CHECK(e[1][0] == "gemm");
  CHECK(std::stod(e[1][6]) < 0.01);  // held-out median error of the refit
  s.write("g.csv", alone);
  const auto e_alone = parse_csv(GemmRefit(s, h100).errors);
  CHECK(std::stod(e_alone[1][6]) > 2 * std::stod(e[1][6]));
}

// One layer of `m` at `heads` heads (as many KV heads), absorbed, for `batch` sequences of one token.
PathPlan one_layer_absorb(ModelSpec m, int heads, int batch) {
  m.heads = m.kv_heads = heads;
  m.layers.resize(1);
  Workload w;
  w.groups = {SequenceGroup{batch, 1, 0}};
  return mla_path(m, w, PathKind::absorb);
}

TEST_CASE("Against: fold rows timed over weights the L2 keeps give back the L2 speed-up and DRAM's efficiency", "[validate]") {
  // W_UK folds on an H100 timed by the model itself with an L2 speed-up of 1.7: at 128 heads the
  // weights are 16.8 MB, within the 50 MB L2, until the batch's queries and outputs push the set past
  // it. Fitted without the speed-up, η_m would take the L2 rows' pace and miss the DRAM ones. The
  // folds' fixed cost is SM time (fixed_form_is_sm_clock): 6 µs at 1 GHz, 3.03 µs at H100's 1,980 MHz,
  // and the fit gives back the 6.
  const HardwareSpec h100 = load_gpu("h100");
  const ModelSpec m = load_model("deepseek-v3");
  const KernelEfficiency given{.fixed = Seconds{6e-6}, .per_sequence = Seconds{0}, .eta_compute = 0.8, .eta_compute_fp8 = std::nullopt,
                               .eta_compute_fp8_tensor = std::nullopt, .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt,
                               .eta_memory = 0.75, .memory_reach = 4, .l2_speedup = 1.7, .fixed_at_sm_clock = true, .rows = 0};
  std::string table = "kernel,op,batch,heads,dtype,latency_us\n";
  int in_l2 = 0, beyond = 0;
  for (int b : {1, 4, 16, 64, 256, 1024, 4096, 8192})
    for (int heads : {16, 32, 64, 128}) {
      const PathPlan plan = one_layer_absorb(m, heads, b);
      const Op* op = plan.find(OpId::q_absorb_w_uk);
      REQUIRE(op);
      ++(fits_l2(*op, given, h100.l2_cache, static_cast<double>(h100.sm_count), h100.sm_clock_hz) ? in_l2 : beyond);
      const double t = calibrated_time(*op, given, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, static_cast<double>(h100.sm_count), h100.sm_clock_hz, false,
                                       h100.l2_cache).time().value;
      table += fmt::format("bmm,q_absorb_w_uk,{},{},bf16,{:.6f}\n", b, heads, t * 1e6);
    }
  REQUIRE(in_l2 > 8);
  REQUIRE(beyond > 8);
  const GemmRefit refit = refit_of("against-bmm-l2", table, h100, "bmm");
  INFO(refit.gemm.dump());
  REQUIRE(refit.gemm.contains("l2_speedup"));
  CHECK(!refit.gemm.contains("l2_bytes_per_sm_cycle"));  // the folds' form: a multiple of DRAM's pace
  CHECK(refit.gemm["l2_speedup"].get<double>() == Approx(1.7).epsilon(0.1));
  CHECK(refit.gemm["eta_memory"].get<double>() == Approx(0.75).epsilon(0.1));
  CHECK(refit.gemm["t_fixed_s"].get<double>() == Approx(6e-6).epsilon(0.15));
  CHECK(refit.held_out_median() < 0.02);  // held-out median error of the refit
}

TEST_CASE("Against: W_UK and W_UV fold rows give back their cost per CTA and DRAM's efficiency", "[validate]") {
  // Both folds on an A100 timed by the model itself with 2 µs per CTA wave: W_UK (K = 128, N = 512)
  // runs four output tiles for each of W_UV's (K = 512, N = 128) at the same FLOPs and about the same
  // bytes, so only a cost per CTA tells them apart, and it trades against η_m (the folds stream), not
  // η_c: fitted against η_c the pass stalls short of both.
  const HardwareSpec a100 = load_gpu("a100-80gb");
  const ModelSpec m = load_model("deepseek-v3");
  const KernelEfficiency given{.fixed = Seconds{6e-6}, .per_sequence = Seconds{0}, .eta_compute = 0.7, .eta_compute_fp8 = std::nullopt,
                               .eta_compute_fp8_tensor = std::nullopt, .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt,
                               .per_cta = Seconds{2e-6}, .eta_memory = 0.85, .memory_reach = 4, .fixed_at_sm_clock = true, .rows = 0};
  std::string table = "kernel,op,batch,heads,dtype,latency_us\n";
  double uk_4096 = 0, uv_4096 = 0;
  for (int b : {1, 8, 64, 256, 1024, 2048, 4096, 8192})
    for (int heads : {2, 16, 64, 128}) {
      const PathPlan plan = one_layer_absorb(m, heads, b);
      for (const OpId id : {OpId::q_absorb_w_uk, OpId::out_absorb_w_uv}) {
        const Op* op = plan.find(id);
        REQUIRE(op);
        const double t = calibrated_time(*op, given, *a100.peak_flops(DType::bf16), a100.memory_bandwidth, static_cast<double>(a100.sm_count), a100.sm_clock_hz,
                                         false, a100.l2_cache).time().value;
        if (b == 4096 && heads == 128) (id == OpId::q_absorb_w_uk ? uk_4096 : uv_4096) = t;
        table += fmt::format("bmm,{},{},{},bf16,{:.6f}\n", id == OpId::q_absorb_w_uk ? "q_absorb_w_uk" : "out_absorb_w_uv", b, heads, t * 1e6);
      }
    }
  // By hand at 4,096 tokens and 128 heads: W_UK's 128·32·4 = 16,384 CTAs, 152 waves of 108 SMs, pay
  // 304 µs; W_UV's 128·32 = 4,096, 38 waves, 76 µs. Bytes: 128·128·512·2 = 16,777,216 of weights and
  // 4,096·128·(128 + 512)·2 = 671,088,640 of activations, both folds, at 0.85 of 2.039 TB/s: 396.89 µs.
  // The fixed cost: 6 µs at 1 GHz, 4.2553 µs at A100's 1,410 MHz.
  const double stream = (16777216.0 + 671088640.0) / (2.039e12 * 0.85), fixed = 6e-6 / 1.41;
  CHECK(uk_4096 == Approx(fixed + 152 * 2e-6 + std::max(stream, 2.0 * 4096 * 128 * 128 * 512 / (312e12 * 0.7 * 16384 / (152 * 108.0)))).epsilon(1e-9));
  CHECK(uv_4096 == Approx(fixed + 38 * 2e-6 + std::max(stream, 2.0 * 4096 * 128 * 128 * 512 / (312e12 * 0.7 * 4096 / (38 * 108.0)))).epsilon(1e-9));
  const GemmRefit refit = refit_of("against-bmm-cta", table, a100, "bmm");
  INFO(refit.gemm.dump());
  REQUIRE(refit.gemm.contains("t_cta_s"));
  CHECK(refit.gemm["t_cta_s"].get<double>() == Approx(2e-6).epsilon(0.15));
  CHECK(refit.gemm["eta_memory"].get<double>() == Approx(0.85).epsilon(0.1));
  CHECK(refit.held_out_median() < 0.03);
}

TEST_CASE("Against: prefill rows whose cost per CTA hides under the streaming give that mode back", "[validate]") {
  // MLA prefill rows on an H100 timed by the model itself with the cost per CTA inside the max
  // (cta_overlap): long prompts (compute-bound, the CTAs' cost adds to the compute term) and many
  // short ones (memory-bound, where it hides). Fitted with the cost added instead, the short rows
  // would run slow by up to their CTA waves x 3 µs; the refit must find the mode and reproduce every row.
  const HardwareSpec h100 = load_gpu("h100");
  const ModelSpec m = load_model("deepseek-v3");
  const KernelEfficiency given{.fixed = Seconds{12e-6}, .per_sequence = Seconds{2e-8}, .eta_compute = 0.6, .eta_compute_fp8 = std::nullopt,
                               .eta_compute_fp8_tensor = std::nullopt, .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt,
                               .per_cta = Seconds{3e-6}, .cta_overlap = true, .eta_memory = 0.7, .memory_reach = 8, .rows = 0};
  std::string table = "kernel,batch,seq_len,heads,latency_us\n";
  int hidden = 0;
  for (int b : {1, 4, 16, 64, 256})
    for (int len : {32, 64, 256, 1024, 4096})
      for (int heads : {32, 128}) {
        ModelSpec mm = m;
        mm.heads = mm.kv_heads = heads;
        mm.layers.resize(1);
        Workload w;
        w.groups = {SequenceGroup{b, static_cast<double>(len), 0}};
        const PathPlan plan = mla_path(mm, w, PathKind::expand);  // the op points into it
        const Op* op = plan.find(OpId::attention_mha);
        REQUIRE(op);
        const CalibratedTime t = calibrated_time(*op, given, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, static_cast<double>(h100.sm_count), h100.sm_clock_hz, false,
                                                 Bytes{0});
        hidden += t.memory > t.compute + t.ctas && t.ctas.value > 0.1 * t.time().value ? 1 : 0;
        table += fmt::format("expanded_prefill,{},{},{},{:.6f}\n", b, len, heads, t.time().value * 1e6);
      }
  REQUIRE(hidden >= 4);  // rows where the mode decides the time
  const GemmRefit refit = refit_of("against-cta-overlap", table, h100, "expanded_prefill");
  INFO(refit.gemm.dump());
  CHECK(refit.gemm.value("per_cta_overlapped", false));
  CHECK(refit.gemm["t_cta_s"].get<double>() == Approx(3e-6).epsilon(0.15));
  CHECK(refit.held_out_median() < 0.02);  // held-out median error of the refit
}

namespace {

// The standard path of one decode step of `batch` sequences of `len` keys (the new one included) on
// test::attention_layer: its attention op is the row's (keep the plan alive while the op is used).
PathPlan gqa_decode_plan(int heads, int kv_heads, int batch, int len, KvDtype kv = KvDtype::bf16) {
  Workload w;
  w.kv = kv;
  w.groups = {SequenceGroup{batch, 1, static_cast<double>(len - 1)}};
  return standard_path(test::attention_layer(heads, kv_heads), w);
}

// Its attention op.
Op gqa_decode_op(int heads, int kv_heads, int batch, int len, KvDtype kv = KvDtype::bf16) {
  const PathPlan plan = gqa_decode_plan(heads, kv_heads, batch, len, kv);
  const Op* op = plan.find(OpId::attention);
  REQUIRE(op);
  return *op;
}

// An op's calibrated time on `gpu` under `given`, at the bf16 peak.
CalibratedTime timed_on(const HardwareSpec& gpu, const Op& op, const KernelEfficiency& given) {
  return calibrated_time(op, given, *gpu.peak_flops(DType::bf16), gpu.memory_bandwidth, static_cast<double>(gpu.sm_count), gpu.sm_clock_hz, false, Bytes{0});
}

// H100's SMs times their clock in GHz: a GQA decode block's cost, one SM's time at 1 GHz
// (block_cost_scale), is this many times what a block costs the launch there (10 ns: 2,613.6 ns).
constexpr double kH100SmGhz = 132 * 1.98;

// A GQA decode row's line in an --against table (head size 128, a bf16 kernel).
std::string gqa_decode_line(int batch, int len, int heads, int kv_heads, std::string_view kv, Seconds t) {
  return fmt::format("attention_decode,{},{},{},{},128,{},bf16,{:.6f}\n", batch, len, heads, kv_heads, kv, t.value * 1e6);
}

}  // namespace

TEST_CASE("Against: decode rows over an fp8 cache get their own fixed and per-block costs", "[validate]") {
  // GQA decode rows on an H100 timed by the model itself: over a bf16 cache 7 µs + 15 ns per block of
  // the grid, over an fp8 cache (another kernel: XQA's QGMMA) 5 µs + 5 ns; η_m 0.85 for both (the
  // costs as stated, one SM's time at 1 GHz: 1.98 times the fixed ones, 132 x 1.98 times those per
  // block). The fit finds both pairs, and without the second pair no single one explains the rows.
  const HardwareSpec h100 = load_gpu("h100");
  const KernelEfficiency given{.fixed = Seconds{7e-6 * 1.98}, .per_sequence = Seconds{15e-9 * kH100SmGhz}, .eta_compute = 1, .eta_compute_fp8 = std::nullopt,
                               .eta_compute_fp8_tensor = std::nullopt, .fixed_fp8_cache = Seconds{5e-6 * 1.98}, .per_sequence_fp8_cache = Seconds{5e-9 * kH100SmGhz},
                               .eta_memory = 0.85, .memory_reach = 1, .fixed_at_sm_clock = true, .rows = 0};
  std::string table = "kernel,batch,kv_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us\n";
  for (const char* kv : {"bf16", "fp8"})
    for (int b : {1, 4, 16, 64, 256})
      for (int len : {64, 512, 2048, 8192, 32768})
        for (auto [heads, kv_heads] : {std::pair{32, 8}, std::pair{64, 8}, std::pair{32, 32}}) {
          const Op op = gqa_decode_op(heads, kv_heads, b, len, std::string(kv) == "fp8" ? KvDtype::fp8 : KvDtype::bf16);
          CHECK(op.fp8_cache == (std::string(kv) == "fp8"));
          table += gqa_decode_line(b, len, heads, kv_heads, kv, timed_on(h100, op, given).time());
        }
  const GemmRefit refit = refit_of("against-fp8-cache", table, h100, "attention_decode");
  const nlohmann::json& g = refit.gemm;
  CHECK(g["t_fixed_s"].get<double>() == Approx(7e-6 * 1.98).epsilon(0.1));
  CHECK(g["t_seq_s"].get<double>() == Approx(15e-9 * kH100SmGhz).epsilon(0.15));
  REQUIRE(g.contains("t_fixed_fp8_cache_s"));
  CHECK(g["t_fixed_fp8_cache_s"].get<double>() == Approx(5e-6 * 1.98).epsilon(0.1));
  CHECK(g["t_seq_fp8_cache_s"].get<double>() == Approx(5e-9 * kH100SmGhz).epsilon(0.15));
  CHECK(g["eta_memory"].get<double>() == Approx(0.85).epsilon(0.05));
  CHECK(refit.held_out_median() < 0.02);  // held-out median error of the refit
}

TEST_CASE("Against: a Blackwell GPU's decode rows pay one pair of costs over either cache, per block in its SM cycles", "[validate]") {
  // On sm100 TensorRT-LLM's XQA dispatcher runs TRTLLM-GEN for every decode launch of a head group up
  // to kTllmGenMaxGroup (gqa_decode_cost_pair, take_decode_dispatch; here groups of 4 and 8):
  // B200's rows over a bf16 and an fp8 cache are one kernel's, and the fit gives one pair of costs,
  // no second one; its costs come back as one SM's time at 1 GHz, the unit a profile carries to
  // other GPUs (B200: 148 SMs at 1,965 MHz). The same rows on an H100 get two pairs (above).
  const HardwareSpec b200 = load_gpu("b200");
  REQUIRE(gqa_decode_cost_pair(b200) == DecodeCostPair::every_launch);
  KernelEfficiency given;
  given.fixed = Seconds{17.7e-6};  // 17,700 cycles: 9.0 µs at 1,965 MHz
  given.fixed_at_sm_clock = true;
  given.per_sequence = Seconds{3.3e-6};  // 3,300 cycles: 11.3 ns a block over B200's 290.8 SM-GHz
  given.eta_memory = 0.9;
  CHECK(given.per_sequence.value * block_cost_scale(gqa_decode_op(32, 8, 4, 512).tiling, 148, b200.sm_clock_hz) == Approx(3.3e-6 / (148 * 1.965)));
  std::string table = "kernel,batch,kv_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us\n";
  for (const char* kv : {"bf16", "fp8"})
    for (int b : {1, 4, 16, 64, 256, 1024})
      for (int len : {64, 512, 2048, 8192, 32768})
        for (auto [heads, kv_heads] : {std::pair{32, 8}, std::pair{64, 8}}) {
          const Op op = gqa_decode_op(heads, kv_heads, b, len, std::string(kv) == "fp8" ? KvDtype::fp8 : KvDtype::bf16);
          table += gqa_decode_line(b, len, heads, kv_heads, kv, timed_on(b200, op, given).time());
        }
  const GemmRefit refit = refit_of("against-blackwell-decode", table, b200, "attention_decode");
  const nlohmann::json& g = refit.gemm;
  CHECK_FALSE(g.contains("t_fixed_fp8_cache_s"));
  CHECK(g["t_fixed_s"].get<double>() == Approx(17.7e-6).epsilon(0.1));
  CHECK(g["t_seq_s"].get<double>() == Approx(3.3e-6).epsilon(0.15));
  CHECK(refit.held_out_median() < 0.02);
}

TEST_CASE("Against: decode rows whose blocks cost more at wider head groups give back the rows a block's cost covers", "[validate]") {
  // B200's rows (TRTLLM-GEN, one pair of costs) timed by the model with a block's cost covering 8
  // query rows: groups of 4 and 8 pay 3,300 cycles a block, 16 twice that, 32 four times. The fit
  // finds the 8 rows and the costs; without them no single cost per block explains the rows.
  const HardwareSpec b200 = load_gpu("b200");
  KernelEfficiency given;
  given.fixed = Seconds{17.7e-6};
  given.fixed_at_sm_clock = true;
  given.per_sequence = Seconds{3.3e-6};
  given.eta_memory = 0.9;
  given.block_query_rows = 8;
  std::string table = "kernel,batch,kv_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us\n";
  for (const char* kv : {"bf16", "fp8"})
    for (int b : {1, 4, 16, 64, 256, 1024})
      for (int len : {64, 512, 2048, 8192})
        for (auto [heads, kv_heads] : {std::pair{32, 8}, std::pair{64, 8}, std::pair{64, 4}, std::pair{64, 2}}) {
          const Op op = gqa_decode_op(heads, kv_heads, b, len, std::string(kv) == "fp8" ? KvDtype::fp8 : KvDtype::bf16);
          REQUIRE(op.tiling.decode_block_rows == heads / kv_heads);
          table += gqa_decode_line(b, len, heads, kv_heads, kv, timed_on(b200, op, given).time());
        }
  const GemmRefit refit = refit_of("against-block-rows", table, b200, "attention_decode");
  const nlohmann::json& g = refit.gemm;
  REQUIRE(g.contains("block_query_rows"));
  CHECK(g["block_query_rows"].get<double>() == Approx(8).epsilon(0.15));
  CHECK(g["t_seq_s"].get<double>() == Approx(3.3e-6).epsilon(0.15));
  CHECK(refit.held_out_median() < 0.02);
}

TEST_CASE("Against: decode rows give back MMHA's own cost per block, and a block cost in the max", "[validate]") {
  // GQA decode rows on an H100 over a bf16 cache timed by the model itself: 7 µs per launch, 35 ns per
  // XQA block and 10 ns per MMHA block, the blocks' cost a term of the max with the streaming (η_m
  // 0.85; the costs per block as stated, one SM's time at 1 GHz: 132 x 1.98 times those), over head groups of 4 and 16 (one group alone cannot tell η_m from a compute term added to
  // the streaming: both scale with its bytes). The fit finds the overlap and both costs.
  const HardwareSpec h100 = load_gpu("h100");
  KernelEfficiency given;
  given.fixed = Seconds{7e-6};
  given.per_sequence = Seconds{35e-9 * kH100SmGhz};
  given.per_sequence_mmha = Seconds{10e-9 * kH100SmGhz};
  given.sequences_overlap = true;
  given.eta_memory = 0.85;
  std::string table = "kernel,batch,kv_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us\n";
  int mmha = 0, xqa = 0;
  for (int b : {1, 4, 16, 64, 256, 1024, 2048})
    for (int len : {2, 64, 512, 2048, 8192, 32768})
      for (auto [heads, kv_heads] : {std::pair{32, 8}, std::pair{64, 4}, std::pair{32, 32}}) {
        const Op op = gqa_decode_op(heads, kv_heads, b, len);
        ++(launch_shape(op.tiling, static_cast<double>(h100.sm_count)).mmha ? mmha : xqa);
        table += gqa_decode_line(b, len, heads, kv_heads, "bf16", timed_on(h100, op, given).time());
      }
  CHECK(mmha > 20);
  CHECK(xqa > 20);
  const GemmRefit refit = refit_of("against-decode-blocks", table, h100, "attention_decode");
  const nlohmann::json& g = refit.gemm;
  CHECK(g.value("per_sequence_overlapped", false));
  CHECK(g["t_seq_s"].get<double>() == Approx(35e-9 * kH100SmGhz).epsilon(0.15));
  REQUIRE(g.contains("t_seq_mmha_s"));
  CHECK(g["t_seq_mmha_s"].get<double>() == Approx(10e-9 * kH100SmGhz).epsilon(0.2));
  CHECK(g["eta_memory"].get<double>() == Approx(0.85).epsilon(0.05));
  CHECK(refit.held_out_median() < 0.02);  // held-out median error of the refit
}

TEST_CASE("Against: decode rows bound by XQA's compute give back its fraction of the tensor peak", "[validate]") {
  // GQA decode rows on an H100 timed by the model itself, XQA computing at 6.5% of the tensor peak (the
  // fraction H100's table gives): a group of 32 over a long cache is bound by it (32 FLOP a byte, 64 TFLOP/s
  // against 2.8 TB/s), a group of 4 by its bytes. The rows are timed by the launch's compute term
  // alone, F / (peak·η_c·w), no longest-block bound: single sequences of up to 131,072 keys are split
  // over XQA's blocks, each computing an equal share of the keys, so the longest block takes no longer
  // than that term. Timed as one block walking all the keys, it would bound them at up to 91 times it,
  // and the fit would not give back η_c.
  const HardwareSpec h100 = load_gpu("h100");
  KernelEfficiency given;
  given.fixed = Seconds{8e-6};
  given.per_sequence = Seconds{35e-9 * kH100SmGhz};
  given.sequences_overlap = true;
  given.eta_compute = 0.065;
  given.eta_memory = 0.85;
  std::string table = "kernel,batch,kv_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us\n";
  for (int b : {1, 4, 16, 64, 256})
    for (int len : {512, 2048, 8192, 32768, 131072})
      for (auto [heads, kv_heads] : {std::pair{32, 8}, std::pair{32, 1}, std::pair{64, 2}}) {
        Op op = gqa_decode_op(heads, kv_heads, b, len);
        op.tiling.longest_cta_flops = 0;
        table += gqa_decode_line(b, len, heads, kv_heads, "bf16", timed_on(h100, op, given).time());
      }
  const GemmRefit refit = refit_of("against-decode-compute", table, h100, "attention_decode");
  const nlohmann::json& g = refit.gemm;
  CHECK(g["eta_compute"].get<double>() == Approx(0.065).epsilon(0.1));
  CHECK(g["eta_memory"].get<double>() == Approx(0.85).epsilon(0.05));
  CHECK(refit.held_out_median() < 0.02);  // held-out median error of the refit
}

TEST_CASE("Against: decode rows that run MMHA and XQA give back each kernel's fraction of the bandwidth", "[validate]") {
  // GQA decode rows on an A100 over a bf16 cache timed by the model itself, MMHA streaming at 0.85 of
  // the bandwidth and XQA at 0.6 (A100's own table, refitted on its even rows, gives 0.85 and 0.55): 8 query heads
  // over 8 KV heads run MMHA (no XQA kernel for a group of one), 32 over 8 and 16 over 2 XQA. Long
  // caches bind both by their bytes. Fitted at one fraction, one kernel's rows or the other's miss by
  // up to 40%.
  const HardwareSpec a100 = load_gpu("a100-80gb");
  KernelEfficiency given;
  given.fixed = Seconds{12e-6};
  given.per_sequence = Seconds{60e-9 * static_cast<double>(a100.sm_count) * a100.sm_clock_hz / 1e9};  // 60 ns a block on its 108 SMs
  given.eta_compute = 0.14;
  given.mmha_flops_per_sm_cycle = 19.2;  // 2.92 TFLOP/s on its 108 SMs at 1,410 MHz, 15% of its FP32 peak
  given.eta_memory = 0.6;
  given.eta_memory_mmha = 0.85;
  std::string table = "kernel,batch,kv_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us\n";
  std::string xqa_only = table;  // the rows XQA runs: no MMHA fraction to fit
  int mmha_bytes = 0, xqa_bytes = 0;
  for (int b : {1, 4, 16, 64, 256})
    for (int len : {512, 2048, 8192, 32768})
      for (auto [heads, kv_heads] : {std::pair{8, 8}, std::pair{32, 8}, std::pair{16, 2}}) {
        const CalibratedTime t = timed_on(a100, gqa_decode_op(heads, kv_heads, b, len), given);
        (t.mmha ? mmha_bytes : xqa_bytes) += t.memory > t.compute && t.memory.value > 2 * given.fixed.value ? 1 : 0;
        table += gqa_decode_line(b, len, heads, kv_heads, "bf16", t.time());
        if (!t.mmha) xqa_only += gqa_decode_line(b, len, heads, kv_heads, "bf16", t.time());
      }
  CHECK(mmha_bytes >= 5);  // rows each kernel's bytes decide
  CHECK(xqa_bytes >= 5);
  const GemmRefit refit = refit_of("against-mmha-memory", table, a100, "attention_decode");
  const nlohmann::json& g = refit.gemm;
  REQUIRE(g.contains("eta_memory_mmha"));
  CHECK(g["eta_memory_mmha"].get<double>() == Approx(0.85).epsilon(0.05));
  CHECK(g["eta_memory"].get<double>() == Approx(0.6).epsilon(0.05));
  CHECK(refit.held_out_median() < 0.03);
  const GemmRefit xqa = refit_of("against-xqa-memory", xqa_only, a100, "attention_decode");
  INFO(xqa.gemm.dump());
  CHECK_FALSE(xqa.gemm.contains("eta_memory_mmha"));
  CHECK(xqa.gemm["eta_memory"].get<double>() == Approx(0.6).epsilon(0.05));
}

TEST_CASE("Against: decode rows of a large head group give back MMHA's FLOPs per SM cycle", "[validate]") {
  // GQA decode rows on an H100 over a bf16 cache timed by the model itself, MMHA computing 25 FLOPs per
  // cycle of each of its 132 SMs at 1,980 MHz (6.5 TFLOP/s, 10% of its FP32 peak): 64 query heads over
  // one KV head (no XQA kernel) are bound by it at long keys, 8 over 8 (MMHA too, one head per KV head)
  // by their bytes, 32 over 8 run XQA on tensor cores. Fitted at the tensor peak, the 64-head rows
  // would run up to 10x too fast.
  const HardwareSpec h100 = load_gpu("h100");
  KernelEfficiency given;
  given.fixed = Seconds{7e-6};
  given.per_sequence = Seconds{35e-9 * kH100SmGhz};
  given.mmha_flops_per_sm_cycle = 25;
  given.eta_memory = 0.85;
  std::string table = "kernel,batch,kv_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us\n";
  int cuda_bound = 0;
  for (int b : {1, 4, 16, 64, 256})
    for (int len : {64, 512, 2048, 8192, 32768})
      for (auto [heads, kv_heads] : {std::pair{64, 1}, std::pair{8, 8}, std::pair{32, 8}}) {
        const CalibratedTime t = timed_on(h100, gqa_decode_op(heads, kv_heads, b, len), given);
        cuda_bound += t.mmha && t.compute > t.memory ? 1 : 0;
        table += gqa_decode_line(b, len, heads, kv_heads, "bf16", t.time());
      }
  CHECK(cuda_bound >= 10);  // rows the CUDA cores' rate decides
  const GemmRefit refit = refit_of("against-mmha-compute", table, h100, "attention_decode");
  const nlohmann::json& g = refit.gemm;
  REQUIRE(g.contains("mmha_flops_per_sm_cycle"));
  CHECK(g["mmha_flops_per_sm_cycle"].get<double>() == Approx(25).epsilon(0.05));
  CHECK(g["eta_memory"].get<double>() == Approx(0.85).epsilon(0.05));
  const auto e = parse_csv(refit.errors);
  REQUIRE(e.size() == 2);
  // Held-out median error of the refit: within 5% (the grid trades the launch and block costs
  // against each other on 38 training rows: 2.8%); at the tensor peak the 64-head rows miss by 10x.
  CHECK(std::stod(e[1][6]) < 0.05);
}

TEST_CASE("Against: expanded prefill rows give back their cost per CTA, and a memory pass apart", "[validate]") {
  // DeepSeek-V3 expanded prefill rows on an H100 timed by the model itself: 15 µs per launch, 2.5 µs
  // per CTA the busiest SM runs, η_c 0.6. With η_m 0.9 the fit finds the cost per CTA; with η_m 0.3 and the memory pass apart from the compute kernel it finds the pass
  // (a pass apart and a cost per CTA both grow with tokens × heads, so the fit may trade one for the
  // other: the times, not the split, are what it must give back).
  const HardwareSpec h100 = load_gpu("h100");
  const ModelSpec m = load_model("deepseek-v3");
  for (const bool serial : {false, true}) {
    INFO("serial " << serial);
    const KernelEfficiency given{.fixed = Seconds{15e-6}, .per_sequence = Seconds{0}, .eta_compute = 0.6, .eta_compute_fp8 = std::nullopt,
                                 .eta_compute_fp8_tensor = std::nullopt, .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt,
                                 .per_cta = Seconds{2.5e-6}, .serial_memory = serial, .eta_memory = serial ? 0.3 : 0.9, .memory_reach = 1, .rows = 0};
    std::string table = "kernel,batch,seq_len,heads,latency_us\n";
    for (int b : {1, 2, 4, 8, 16})
      for (int len : {16, 64, 128, 256, 512, 1024, 2048, 4096, 8192})
        for (int heads : {16, 32, 64, 128}) {
          ModelSpec mm = m;
          mm.heads = mm.kv_heads = heads;
          mm.layers.resize(1);
          Workload w;
          w.groups = {SequenceGroup{b, static_cast<double>(len), 0}};
          const PathPlan plan = mla_path(mm, w, PathKind::expand);
          const Op* op = plan.find(OpId::attention_mha);
          REQUIRE(op);
          const double t = calibrated_time(*op, given, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, static_cast<double>(h100.sm_count), h100.sm_clock_hz, false, Bytes{0})
                               .time().value;
          table += fmt::format("expanded_prefill,{},{},{},{:.6f}\n", b, len, heads, t * 1e6);
        }
    Scratch s(serial ? "against-prefill-serial" : "against-prefill-overlapped");
    s.write("t.csv", table);
    const GemmRefit refit(s, h100, "expanded_prefill");
    const nlohmann::json& g = refit.gemm;
    INFO(g.dump());
    if (!serial) {
      // Within a third: η_m trades against it where the memory term binds (its bytes grow with
      // tokens × heads as the CTAs do); the rows' times are given back all the same.
      REQUIRE(g.contains("t_cta_s"));
      CHECK(g["t_cta_s"].get<double>() == Approx(2.5e-6).epsilon(0.35));
      CHECK(g["eta_compute"].get<double>() == Approx(0.6).epsilon(0.1));
    } else {
      CHECK(g.value("serial_memory", false));
    }
    const auto e = parse_csv(refit.errors);
    REQUIRE(e.size() == 2);
    CHECK(std::stod(e[1][6]) < 0.02);  // held-out median error of the refit
  }
}

TEST_CASE("Against: a GQA row of TensorRT-LLM's attention op adds its RoPE + KV-append kernel where it runs apart, worked by hand", "[validate]") {
  // 32 query heads over 8 KV heads of 128. Decode, 8 sequences: 32,768 query and 8,192 key values;
  // the kernel reads Q, K and V at 2 bytes (98,304) and writes Q back (65,536) and K and V into the
  // cache (32,768 in bf16, 16,384 in fp8); ~3 FLOPs per rotated value (122,880).
  const std::string head = "kernel,batch,kv_len,seq_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us,preprocess\n";
  const std::string table = head +
                            "attention_decode,8,4096,,32,8,128,bf16,bf16,30,\nattention_decode,8,4096,,32,8,128,bf16,bf16,30,trtllm\n"
                            "attention_decode,8,4096,,32,8,128,fp8,bf16,30,\nattention_decode,8,4096,,32,8,128,fp8,bf16,30,trtllm\n"
                            "attention_decode,1,2,,32,8,128,bf16,bf16,10,\nattention_decode,1,2,,32,8,128,bf16,bf16,10,trtllm\n"
                            "attention,2,,1024,32,8,128,bf16,bf16,300,\nattention,2,,1024,32,8,128,bf16,bf16,300,trtllm\n";
  const auto sol = [](const AgainstRows& r, std::size_t i) { return std::stod(r[i][r.col("predicted_sol_s")]); };
  const auto pass = [](const HardwareSpec& g, double flops, double bytes) {
    return std::max(flops / g.peak_flops(DType::bf16)->value, bytes / g.memory_bandwidth.value);
  };
  const HardwareSpec h100 = load_gpu("h100"), b200 = load_gpu("b200");
  const AgainstRows on_h100("against-gqa-pre-h100", h100, table), on_b200("against-gqa-pre-b200", b200, table);
  REQUIRE(on_h100.size() == 9);
  REQUIRE(on_b200.size() == 9);
  // Over a bf16 cache XQA's HMMA kernel (Hopper) and TRTLLM-GEN (Blackwell) leave it to the kernel.
  CHECK(sol(on_h100, 2) == Approx(sol(on_h100, 1) + pass(h100, 122880, 196608)).epsilon(1e-12));
  CHECK(sol(on_b200, 2) == Approx(sol(on_b200, 1) + pass(b200, 122880, 196608)).epsilon(1e-12));
  // Over an fp8 cache Hopper's QGMMA kernel rotates and appends itself; Blackwell's does not.
  CHECK(sol(on_h100, 4) == sol(on_h100, 3));
  CHECK(sol(on_b200, 4) == Approx(sol(on_b200, 3) + pass(b200, 122880, 180224)).epsilon(1e-12));
  // One sequence of 2 keys: 8 XQA blocks, fewer than a quarter of the SMs, so MMHA on H100, which does
  // both; B200's dispatcher runs TRTLLM-GEN whatever the grid (take_decode_dispatch), after the
  // kernel: one token, 15,360 FLOPs and 24,576 bytes.
  CHECK(sol(on_h100, 6) == sol(on_h100, 5));
  CHECK(sol(on_b200, 6) == Approx(sol(on_b200, 5) + pass(b200, 15360, 24576)).epsilon(1e-12));
  // The context op runs it before every FMHA: 2,048 tokens, 8,388,608 query and 2,097,152 key values,
  // 25,165,824 bytes read and as many written.
  CHECK(sol(on_h100, 8) == Approx(sol(on_h100, 7) + pass(h100, 3 * 10485760.0, 50331648)).epsilon(1e-12));
}

TEST_CASE("Against: an MLA prefill row of TensorRT-LLM's context op adds its RoPE pass and fp8 quantisation, worked by hand", "[validate]") {
  // One prompt of 1,024 tokens at 128 heads: Q and K are 192 wide (128 + RoPE 64), V 128, so the
  // quantisation touches 1,024 x 128 x (192 + 192 + 128) = 67,108,864 elements, reading each at 2
  // bytes and writing it at 1 (201,326,592 bytes), and the fp8 kernel then reads each at 1 byte where
  // the bf16 kernel reads it at 2: 67,108,864 bytes fewer than the bf16 op's.
  const ModelSpec m = load_model("deepseek-v3");
  ModelSpec mm = m;
  mm.heads = mm.kv_heads = 128;
  mm.layers.resize(1);
  Workload w;
  w.groups = {SequenceGroup{1, 1024, 0}};
  const PathPlan plan = mla_path(mm, w, PathKind::expand);
  const Op* op = plan.find(OpId::attention_mha);
  REQUIRE(op);
  const double bf16_bytes = op->bytes().value, elements = 67108864.0;
  // Causal: 1,024 x 1,025 / 2 = 524,800 pairs x 128 heads x 2 x (192 + 128) FLOPs = 42,991,616,000.
  REQUIRE(op->flops.value == 42991616000.0);
  // Per token the bf16 kernel moves Q and K (192 each), V and the output (128 each) at 2 bytes:
  // 128 x 640 x 2 = 163,840.
  REQUIRE(bf16_bytes == 1024 * 163840.0);
  const std::string table =
      "kernel,batch,seq_len,heads,kv_dtype,latency_us,preprocess\n"
      "expanded_prefill,1,1024,128,bf16,140,\nexpanded_prefill,1,1024,128,fp8,199,none\n"
      "expanded_prefill,1,1024,128,bf16,155,trtllm\nexpanded_prefill,1,1024,128,fp8,215,trtllm\n";
  const HardwareSpec h100 = load_gpu("h100");
  const AgainstRows rows("against-fp8-prefill", h100, table);
  REQUIRE(rows.size() == 5);
  const auto sol = [&](const AgainstRows& r, std::size_t i) { return std::stod(r[i][r.col("predicted_sol_s")]); };
  const double bw = h100.memory_bandwidth.value, bf16_peak = 989.4e12, fp8_peak = h100.peak_flops(DType::fp8)->value;
  CHECK(sol(rows, 1) == Approx(std::max(42991616000.0 / bf16_peak, bf16_bytes / bw)).epsilon(1e-9));
  // The fp8 kernel alone: its FLOPs at the fp8 peak (21.7 µs) against its bytes.
  const double kernel = std::max(42991616000.0 / fp8_peak, (bf16_bytes - elements) / bw);
  CHECK(sol(rows, 2) == Approx(kernel).epsilon(1e-9));
  // The RoPE pass per token: Q's RoPE part read and written and K's written, 128 x 64 x 2 bytes each
  // (49,152), the shared key's 64 and the latent's 512 read at 2 bytes (1,152), and the row of 576
  // stored in the cache: 1,152 bytes in bf16 (51,456 in all), 576 in fp8 (50,880); ~3 FLOPs per value
  // of Q's RoPE part. Memory-bound: 1,024 tokens take 52,690,944 bytes (bf16 cache) or 52,101,120.
  const double rope_flops = 1024 * 128 * 64 * 3.0;
  const double rope_bf16 = std::max(rope_flops / bf16_peak, 52690944.0 / bw), rope_fp8 = std::max(rope_flops / bf16_peak, 52101120.0 / bw);
  CHECK(rope_bf16 == Approx(15.7e-6).epsilon(2e-3));
  CHECK(sol(rows, 3) == Approx(sol(rows, 1) + rope_bf16).epsilon(1e-9));
  // The fp8 context op: the RoPE pass, the quantisation (one operation per element at the bf16 peak
  // against 3 bytes per element), then the fp8 kernel.
  const double quant = std::max(elements / bf16_peak, 3 * elements / bw);
  CHECK(quant == Approx(60.1e-6).epsilon(1e-3));
  CHECK(sol(rows, 4) == Approx(kernel + rope_fp8 + quant).epsilon(1e-9));
  // A GPU without fp8 tensor cores runs the bf16 kernel over an fp8 cache: no quantisation, the bf16
  // operands (A100's table times its fp8 and bf16 prompts alike), the RoPE pass storing fp8.
  const HardwareSpec a100 = load_gpu("a100-80gb");
  REQUIRE_FALSE(a100.peak_flops(DType::fp8));
  const AgainstRows on_a100("against-fp8-prefill-a100", a100, table);
  REQUIRE(on_a100.size() == 5);
  CHECK(sol(on_a100, 2) == sol(on_a100, 1));
  CHECK(sol(on_a100, 4) == Approx(sol(on_a100, 1) + std::max(rope_flops / a100.peak_flops(DType::bf16)->value, 52101120.0 / a100.memory_bandwidth.value)).epsilon(1e-9));
}

TEST_CASE("Against: GQA decode and prompt attention, worked by hand at speed of light", "[validate]") {
  const HardwareSpec h100 = load_gpu("h100");
  const AgainstRows rows("against-gqa", h100,
                         "kernel,batch,kv_len,seq_len,heads,kv_heads,head_dim,kv_dtype,dtype,latency_us\n"
                         "attention_decode,4,4096,,32,8,128,bf16,bf16,25\nattention,2,,1024,32,8,128,fp8,fp8,30\n");
  REQUIRE(rows.size() == 3);
  const auto col = [&](const char* name) { return rows.col(name); };
  const double bw = h100.memory_bandwidth.value;
  // Decode: 4 sequences x 4,096 keys x 32 heads, QK and PV of width 128: 2·16,384·32·256 =
  // 268,435,456 FLOPs; bytes = the bf16 cache, 16,384 keys x 8 KV heads x (K + V) 256 x 2 =
  // 67,108,864, + queries and outputs 2 x 4·32·128·2 = 65,536. Memory-bound.
  CHECK(rows[1][col("kernel")] == "attention_decode");
  CHECK(std::stod(rows[1][col("predicted_sol_s")]) == Approx(std::max(268435456.0 / 989.4e12, 67174400.0 / bw)).epsilon(1e-9));
  // Prompt: 2 causal sequences of 1,024: 2·(1,024·1,025/2) = 1,049,600 pairs, 2·1,049,600·32·256 =
  // 17,196,646,400 FLOPs at the fp8 peak; bytes = the fp8 cache 2,048 keys x 8 x 256 x 1 = 4,194,304,
  // + bf16 queries and outputs 2 x 2,048·32·128·2 = 33,554,432.
  CHECK(rows[2][col("kernel")] == "attention");
  CHECK(std::stod(rows[2][col("predicted_sol_s")]) ==
        Approx(std::max(17196646400.0 / h100.peak_flops(DType::fp8)->value, 37748736.0 / bw)).epsilon(1e-9));
}

TEST_CASE("Against: decode rows timed over a keys-only pool read their values from L2 where the keys are still there", "[validate]") {
  // aiconfigurator's A100 tables were timed over TensorRT-LLM's keys-only pool (kv_pool k_only),
  // whose value offsets are the key offsets. At speed of light on an A100 (108 SMs, 40 MiB of L2):
  const HardwareSpec a100 = load_gpu("a100-80gb");
  REQUIRE(a100.sm_count == 108);
  REQUIRE(a100.l2_cache.value == 40LL << 20);
  const std::string head = "kernel,batch,kv_len,seq_len,heads,kv_heads,head_dim,kv_dtype,dtype,kv_pool,latency_us\n";
  const std::string shapes[] = {"attention_decode,64,8192,,32,8,128,bf16,bf16,{},400\n", "attention_decode,128,8192,,8,8,128,bf16,bf16,{},2500\n",
                                "attention_decode,2048,256,,8,8,128,bf16,bf16,{},850\n",  "attention,2,,1024,32,8,128,bf16,bf16,{},30\n",
                                "attention_decode,32,512,,8,8,128,bf16,bf16,{},40\n",     "attention_decode,64,512,,8,8,128,bf16,bf16,{},60\n",
                                "attention_decode,8,2048,,64,1,128,bf16,bf16,{},20\n"};
  std::string full = head, k_only = head;
  for (const std::string& row : shapes) full += fmt::format(fmt::runtime(row), "kv"), k_only += fmt::format(fmt::runtime(row), "k_only");
  const AgainstRows kv("against-kv-pool", a100, full), ko("against-k-only-pool", a100, k_only);
  REQUIRE(kv.size() == 8);
  REQUIRE(ko.size() == 8);
  const double bw = a100.memory_bandwidth.value;
  const auto sol = [](const AgainstRows& rows, std::size_t i) { return std::stod(rows[i][rows.col("predicted_sol_s")]); };
  // XQA (a group of 4, 64 sequences): reads a tile's keys, then its values, from L2. Keys and values
  // 64·8,192 x 8 KV heads x 128 x 2 x 2 B = 2,147,483,648, queries and outputs 2 x 64·32·128·2 =
  // 1,048,576; 8.6 GFLOP, memory-bound either way.
  CHECK(sol(kv, 1) == Approx(2148532224.0 / bw).epsilon(1e-9));
  CHECK(sol(ko, 1) == Approx(1074790400.0 / bw).epsilon(1e-9));
  // MMHA (a group of 1) over 8,192 keys: a block per head and sequence reads its 2 MiB of keys before
  // any value; the 432 blocks resident at once (4 an SM) read 864 MiB in between, more than L2 holds:
  // values from DRAM, the same bytes as over a pool of keys and values.
  CHECK(sol(ko, 2) == sol(kv, 2));
  // MMHA over 256 keys: 64 KiB of keys a block, 27 MiB over 432 blocks: values from L2. Keys 2,048·256
  // x 8 KV heads x 128 x 2 B = 1,073,741,824, half of the keys and values; queries and outputs
  // 2 x 2,048·8·128·2 = 8,388,608.
  CHECK(sol(kv, 3) == Approx(2155872256.0 / bw).epsilon(1e-9));
  CHECK(sol(ko, 3) == Approx(1082130432.0 / bw).epsilon(1e-9));
  // A prompt reads its keys and values from its QKV input, not the pool.
  CHECK(sol(ko, 4) == sol(kv, 4));
  // MMHA over 512 keys, 128 KiB of keys a block: 32 sequences launch 256 blocks, 32 MiB, values from L2
  // (keys 32·512 x 8 x 128 x 2 B = 33,554,432 of 67,108,864; queries and outputs 131,072); 64
  // sequences launch 512, of which 432 at once hold 54 MiB: from DRAM.
  CHECK(sol(kv, 5) == Approx(67239936.0 / bw).epsilon(1e-9));
  CHECK(sol(ko, 5) == Approx(33685504.0 / bw).epsilon(1e-9));
  CHECK(sol(ko, 6) == sol(kv, 6));
  // MMHA over a group of 64 (no XQA kernel above 32): the 64 blocks of a sequence read its one KV
  // head's 256 KiB of keys, 3.4 MiB over 432 blocks of shared keys: from L2. Keys 8·2,048 x 128 x 2 B
  // = 4,194,304; queries and outputs 2 x 8·64·128·2 = 262,144; 0.54 GFLOP, memory-bound.
  CHECK(sol(kv, 7) == Approx(8650752.0 / bw).epsilon(1e-9));
  CHECK(sol(ko, 7) == Approx(4456448.0 / bw).epsilon(1e-9));
}

TEST_CASE("Published: the A100 attention tables say they were timed over a keys-only pool, H100's and B200's do not", "[validate]") {
  // aiconfigurator's 1.0.0 tables (A100) predate its collector's keys-and-values pool; 1.3.0rc20's
  // (H100, B200) do not.
  const fs::path published = fs::path(MLAPLAN_TEST_SOURCE_DIR) / "validate" / "published";
  for (const auto& [gpu, pool] : {std::pair{"a100-80gb", "k_only"}, std::pair{"h100-sxm", ""}, std::pair{"b200", ""}}) {
    INFO(gpu);
    CsvRows rows;
    rows.assign_from(parse_csv(read_text(published / gpu / "attention-trtllm.csv")));
    REQUIRE(rows.size() > 1000);
    const auto it = std::find(rows.front().begin(), rows.front().end(), "kv_pool");
    if (std::string(pool).empty()) {
      CHECK(it == rows.front().end());
      continue;
    }
    REQUIRE(it != rows.front().end());
    const std::size_t c = rows.col("kv_pool");
    const std::string want = pool;
    CHECK(std::all_of(rows.begin() + 1, rows.end(), [&](const std::vector<std::string>& r) { return r.at(c) == want; }));
  }
}

TEST_CASE("Against: DeepSeek-V3.2's indexer scores and sparse attention, worked by hand at speed of light", "[validate]") {
  const HardwareSpec h800 = load_gpu("h800");
  const AgainstRows rows("against-dsa", h800,
                         "kernel,batch,query,kv_len,heads,head_dim,topk,kv_dtype,latency_us\n"
                         "indexer,64,1,1024,64,128,,,9.1\nsparse_decode,64,1,2048,128,,2048,fp8_flashmla,93.4\n");
  REQUIRE(rows.size() == 3);
  const auto col = [&](const char* name) { return rows.col(name); };
  const double bw = h800.memory_bandwidth.value;
  // Indexer: 64 sequences x 1,024 keys, 64 heads x (128 + 1 weight): 2·65,536·64·129 = 1,082,130,432
  // FLOPs at the fp8 peak; bytes = the index cache 65,536 x (128 + 4) = 8,650,752, fp8 queries
  // 64·64·128 = 524,288, int32 top-k indices out 64·2,048·4 = 524,288. Memory-bound.
  CHECK(rows[1][col("kernel")] == "indexer");
  CHECK(std::stod(rows[1][col("predicted_sol_s")]) ==
        Approx(std::max(1082130432.0 / h800.peak_flops(DType::fp8)->value, 9699328.0 / bw)).epsilon(1e-9));
  // Sparse: 64 queries x 2,048 selected keys x 128 heads, QK 576 and PV 512 wide: 2·131,072·128·1,088 =
  // 36,507,222,016 FLOPs at the bf16 peak (989 TFLOP/s on H800), compute-bound.
  CHECK(rows[2][col("kernel")] == "sparse_decode");
  CHECK(std::stod(rows[2][col("predicted_sol_s")]) == Approx(36507222016.0 / h800.peak_flops(DType::bf16)->value).epsilon(1e-9));  // 989 TFLOP/s
}

TEST_CASE("Transfer: every GPU predicted from the others and never fitted on H20 or H200", "[validate]") {
  Scratch s("transfer");
  const fs::path h800 = fs::path(MLAPLAN_TEST_SOURCE_DIR) / "validate" / "published" / "h800";
  for (const char* gpu : {"h800", "h20"})
    for (const auto& e : fs::directory_iterator(h800))
      if (e.path().extension() == ".csv") {
        fs::create_directories(s.dir / gpu);
        fs::copy_file(e.path(), s.dir / gpu / e.path().filename());
      }
  s.write("notes/x.csv", "a\n1\n");
  const AgainstRun r = validate_transfer(s.dir, load_model("deepseek-v3"));
  std::string report, transfer, fits, each;
  for (const auto& [name, text] : r.files) {
    if (name == "report.md") report = text;
    if (name == "transfer.csv") transfer = text;
    if (name == "fits.csv") fits = text;
    if (name == "rows.csv") each = text;
  }
  CHECK(report.find("Folders not named as a GPU, not read: notes.") != std::string::npos);
  // Both GPUs are judged; only H800 rows train (H20's own left-out fit comes from H800 alone).
  const auto rows = parse_csv(transfer);
  REQUIRE(rows.size() == 1 + 2 * 7);  // header, two GPUs x (six kernel families and all of them)
  for (std::size_t i = 1; i < rows.size(); ++i) CHECK((rows[i][5].empty()) == (rows[i][0] == "H800 SXM5 80GB"));  // nothing to fit H800 on
  // The last two rows pool each GPU's families; rows.csv holds every row, and H20's pooled left-out
  // median is that of its rows' errors there.
  const CsvRows per_row(each);
  REQUIRE(per_row.size() > 1);
  const auto col = [&](const char* name) { return per_row.col(name); };
  std::map<std::string, std::int64_t> family_rows;
  for (std::size_t i = 1; i < rows.size(); ++i)
    if (rows[i][1] != "all") family_rows[rows[i][0]] += std::stoll(rows[i][2]);
  std::vector<double> h20_errors;
  std::map<std::string, std::int64_t> listed;
  for (std::size_t i = 1; i < per_row.size(); ++i) {
    ++listed[per_row[i][col("gpu")]];
    if (per_row[i][col("gpu")] == "H20 96GB")
      h20_errors.push_back(std::fabs(std::stod(per_row[i][col("predicted_left_out_s")]) / std::stod(per_row[i][col("measured_s")]) - 1));
  }
  CHECK(listed == family_rows);
  REQUIRE(h20_errors.size() > 2);
  for (std::size_t i = rows.size() - 2; i < rows.size(); ++i) {
    INFO(rows[i][0]);
    CHECK(rows[i][1] == "all");
    CHECK(std::stoll(rows[i][2]) == family_rows[rows[i][0]]);
    if (rows[i][0] == "H20 96GB") CHECK(std::stod(rows[i][5]) == Approx(ape_stats(h20_errors).median).epsilon(1e-6));
  }
  const auto fit_rows = parse_csv(fits);
  for (std::size_t i = 1; i < fit_rows.size(); ++i) {
    INFO(fit_rows[i][0]);
    CHECK(fit_rows[i][0].find("H20 ") != 0);
    CHECK(fit_rows[i][0].rfind("H800 SXM5 80GB (for H20", 0) == 0);
  }
  CHECK_THROWS_WITH(validate_transfer(s.dir / "h800", load_model("deepseek-v3")), (s.dir / "h800").string() + ": needs folders of timings for at least two GPUs");
}

namespace {

// One layer's latent decode op of `b` sequences of `keys` keys at `heads` heads over a `kv` cache.
Op latent_decode_op(const ModelSpec& m, int b, int keys, int heads, KvDtype kv = KvDtype::bf16) {
  ModelSpec mm = m;
  mm.heads = mm.kv_heads = heads;
  mm.layers.resize(1);
  Workload w;
  w.kv = kv;
  w.groups = {SequenceGroup{b, 1, static_cast<double>(keys - 1)}};
  const PathPlan plan = mla_path(mm, w, PathKind::absorb);
  const Op* op = plan.find(OpId::latent_attention_mqa);
  if (!op) throw std::logic_error("the absorbed path lacks its latent attention");
  return *op;
}

// The time `law` gives one layer's latent decode of `b` sequences of `keys` keys at `heads` heads on
// `hw` (bf16): a row of a model-timed table.
double latent_decode_time(const ModelSpec& m, const HardwareSpec& hw, const KernelEfficiency& law, int b, int keys, int heads) {
  return calibrated_time(latent_decode_op(m, b, keys, heads), law, *hw.peak_flops(DType::bf16), hw.memory_bandwidth, static_cast<double>(hw.sm_count), hw.sm_clock_hz, false,
                         hw.l2_cache)
      .time()
      .value;
}

}  // namespace

TEST_CASE("Transfer: a left-out GPU's latent decode is timed with the kernel TensorRT-LLM runs on it", "[validate]") {
  // DeepSeek-V3 latent decode rows timed by the model itself under one law: H100's and B200's with a
  // kernel that splits keys (FlashMLA, TRTLLM-GEN), A100's with one that does not (fmha_v2), its blocks
  // two to an SM and a lone one at half of it. Left out, A100 is predicted from the other two with its
  // own kernel (latent_decode_splits_keys, take_gpu_latent_kernel), not theirs.
  const ModelSpec m = load_model("deepseek-v3");
  Scratch s("transfer-latent-kernel");
  for (const char* gpu : {"h100-sxm", "b200", "a100-80gb"}) {
    const HardwareSpec hw = load_gpu(gpu);
    KernelEfficiency law{.fixed = Seconds{5e-6}, .per_sequence = Seconds{1e-6}, .eta_compute = 0.5, .eta_compute_fp8 = std::nullopt,
                         .eta_compute_fp8_tensor = std::nullopt, .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt,
                         .eta_memory = 0.8, .memory_reach = 1, .split_kv = *latent_decode_splits_keys(hw), .rows = 0};
    if (!law.split_kv) law.resident_ctas = kUnsplitLatentCtasPerSm, law.solo_share = 1 / kUnsplitLatentCtasPerSm;
    std::string table = "kernel,batch,kv_len,heads,latency_us\n";
    for (int b : {1, 4, 16, 64, 256})
      for (int keys : {256, 2048, 16384})
        for (int heads : {16, 128})
          table += fmt::format("absorbed_decode,{},{},{},{:.6f}\n", b, keys, heads, latent_decode_time(m, hw, law, b, keys, heads) * 1e6);
    s.write(std::string(gpu) + "/decode.csv", table);
  }
  const AgainstRun r = validate_transfer(s.dir, m);
  std::string transfer, fits;
  for (const auto& [name, text] : r.files) {
    if (name == "transfer.csv") transfer = text;
    if (name == "fits.csv") fits = text;
  }
  INFO(transfer);
  INFO(fits);
  const auto rows = parse_csv(transfer);
  bool a100 = false;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i][0] != "A100 SXM4 80GB") continue;
    a100 = true;
    // Timed with the others' split kernel, the long rows of few sequences would come out many times
    // too fast.
    CHECK(std::stod(rows[i][5]) < 0.05);
  }
  CHECK(a100);
  // The fit on the other two is shown with their kernel, which splits; A100's own fit finds its own.
  const auto fit_rows = parse_csv(fits);
  REQUIRE_FALSE(fit_rows.empty());
  const auto& header = fit_rows.front();
  const auto split = static_cast<std::size_t>(std::find(header.begin(), header.end(), "split_kv") - header.begin());
  REQUIRE(split < header.size());
  int shown = 0;
  for (const auto& row : fit_rows)
    if (row[0] == "B200 180GB + H100 SXM5 80GB (for A100 SXM4 80GB)" && row[1] == "absorbed_decode") {
      CHECK(row[split] == "yes");
      ++shown;
    }
  CHECK(shown == 1);
}

TEST_CASE("Against: the unsplit latent kernel's resident blocks are fitted from the rows", "[validate]") {
  // A100-like latent decode rows timed by the model itself with fmha_v2's unsplit launch, 2 blocks an SM
  // and a lone block at 0.7 of it: the refit finds both and holds the rows. The fp8-cache rows of a GPU
  // where TensorRT-LLM runs no fp8 generation MLA are timed reading bf16, and the report says so.
  const ModelSpec m = load_model("deepseek-v3");
  const HardwareSpec hw = load_gpu("a100-80gb");
  REQUIRE(latent_decode_reads_fp8_cache(hw) == false);
  Scratch s("against-resident");
  const KernelEfficiency law{.fixed = Seconds{8e-6}, .per_sequence = Seconds{0}, .eta_compute = 0.45, .eta_compute_fp8 = std::nullopt,
                             .eta_compute_fp8_tensor = std::nullopt, .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt,
                             .eta_memory = 0.5, .memory_reach = 4, .split_kv = false, .resident_ctas = 2, .solo_share = 0.7, .rows = 0};
  // Every shape over a bf16 cache, then each again over an "fp8" one (TensorRT-LLM on sm80 reads
  // bf16: the same time). 40 shapes, so a shape's two rows fall on the same side of the even/odd
  // split, and the held-out rows are shapes no training row has.
  std::string table = "kernel,batch,kv_len,heads,kv_dtype,latency_us\n";
  for (const char* kv : {"bf16", "fp8"})
    for (int b : {1, 2, 8, 32, 48, 64, 96, 128, 256, 512})
      for (int keys : {1024, 8192})
        for (int heads : {64, 128})
          table += fmt::format("absorbed_decode,{},{},{},{},{:.6f}\n", b, keys, heads, kv, latent_decode_time(m, hw, law, b, keys, heads) * 1e6);
  s.write("a100/decode.csv", table);
  const AgainstRun r = validate_against(s.dir / "a100", hw, m);
  std::string report, fit, errors;
  for (const auto& [name, text] : r.files) {
    if (name == "report.md") report = text;
    if (name == "fit.json") fit = text;
    if (name == "errors.csv") errors = text;
  }
  INFO(fit);
  INFO(errors);
  CHECK(report.find("Latent decode rows with kv_dtype fp8 timed reading a bf16 cache, as TensorRT-LLM runs no fp8 generation MLA on their GPU "
                    "(sm80: common/attentionOp.cpp@eea41b73:2572-2578): 40 on A100 SXM4 80GB.") != std::string::npos);
  const auto j = nlohmann::json::parse(fit)["absorbed_decode"];
  CHECK_FALSE(j["split_kv"].get<bool>());
  CHECK(j["resident_ctas"].get<double>() == 2);
  CHECK(j["solo_share"].get<double>() == Approx(0.7).epsilon(0.05));
  const auto e = parse_csv(errors);
  REQUIRE(e.size() == 2);
  CHECK(std::stod(e[1][6]) < 0.02);  // the refit's held-out median
}

TEST_CASE("Transfer: an architecture's rows alone predict a left-out GPU only where they hold every dtype of the family", "[validate]") {
  // Four GPUs time GEMMs on the same made-up law; H800 only in block fp8 (as DeepGEMM's tables), A100
  // only in bf16 (it has no fp8 peak), the others in both. H800 then cannot speak for Hopper's bf16:
  // H100 left out is fitted on every other GPU, while H800 left out is fitted on H100, its
  // architecture's, alone; A100's bf16 is all Ampere runs, so its rows make the Ampere profile.
  Scratch s("transfer-dtypes");
  const auto table = [](std::vector<std::string> dtypes) {
    std::string t = "kernel,m,n,k,dtype,latency_us\n";
    for (const std::string& dtype : dtypes) {
      for (int m : {1, 16, 128, 1024, 8192})
        for (int n : {1024, 4096, 16384})
          for (int k : {1024, 7168, 16384, 2048}) {
            const double flops = 2.0 * m * n * k, bytes = (static_cast<double>(m) * k + static_cast<double>(n) * k) * (dtype == "bf16" ? 2 : 1);
            t += fmt::format("gemm,{},{},{},{},{:.4f}\n", m, n, k, dtype, 4 + std::max(flops / 6e8, bytes / 2.5e6));
          }
    }
    return t;
  };
  s.write("h100-sxm/gemm.csv", table({"bf16", "fp8"}));
  s.write("b200/gemm.csv", table({"bf16", "fp8"}));
  s.write("h800/gemm.csv", table({"fp8"}));
  s.write("a100-80gb/gemm.csv", table({"bf16"}));
  const AgainstRun r = validate_transfer(s.dir, load_model("deepseek-v3"));
  std::string fits, report;
  for (const auto& [name, text] : r.files) {
    if (name == "fits.csv") fits = text;
    if (name == "report.md") report = text;
  }
  std::set<std::string> fitted_on;
  for (const auto& row : parse_csv(fits)) fitted_on.insert(row[0]);
  INFO(fits);
  CHECK(fitted_on.count("A100 SXM4 80GB + B200 180GB + H800 SXM5 80GB (for H100 SXM5 80GB)") == 1);
  CHECK(fitted_on.count("H100 SXM5 80GB (for H800 SXM5 80GB)") == 1);
  CHECK(fitted_on.count("A100 SXM4 80GB + H100 SXM5 80GB + H800 SXM5 80GB (for B200 180GB)") == 1);
  // The profiles a default ships: Hopper's GEMM over both Hopper GPUs (H100 holds every dtype),
  // Ampere's over A100's bf16.
  CHECK(report.find("hopper: H100 SXM5 80GB + H800 SXM5 80GB") != std::string::npos);
  CHECK(report.find("ampere: A100 SXM4 80GB") != std::string::npos);
}

TEST_CASE("Against: fp8-cache latent decode rows run at the fp8 peak and give back their own efficiency and costs", "[validate]") {
  // DeepSeek-V3 latent decode rows on an H100 timed by the planner itself (op_time under a profile):
  // over a bf16 cache at η_c 0.5, over an fp8 cache by the fp8 generation kernel at 0.3 of the fp8
  // peak with launch costs of its own (3 µs + 20 ns a sequence against 8 µs + 50 ns). Both dtypes'
  // 128-head rows are compute-bound, so each efficiency is seen; the fit gives back both, and the
  // rows, as the validator builds them, time exactly as the planner's op.
  const ModelSpec m = load_model("deepseek-v3");
  const HardwareSpec h100 = load_gpu("h100");
  REQUIRE(latent_decode_reads_fp8_cache(h100) == true);
  KernelEfficiency law;
  law.fixed = Seconds{8e-6};
  law.per_sequence = Seconds{50e-9};
  law.eta_compute = 0.5;
  law.eta_compute_fp8 = 0.3;
  law.fixed_fp8_cache = Seconds{3e-6};
  law.per_sequence_fp8_cache = Seconds{20e-9};
  law.eta_memory = 0.8;
  law.split_kv = true;
  EfficiencyProfile prof;
  prof.name = "law";
  prof.kernels[static_cast<std::size_t>(KernelFamily::absorbed_decode)] = law;
  const Roofline rf = roofline_for(h100, DType::bf16, prof);
  std::string table = "kernel,batch,kv_len,heads,kv_dtype,latency_us\n";
  // Batches innermost, seven of them, so that the even/odd split trains on every series.
  for (const KvDtype kv : {KvDtype::bf16, KvDtype::fp8})
    for (int heads : {32, 128})
      for (int keys : {1024, 4096, 16384})
        for (int b : {1, 4, 16, 64, 128, 256, 512}) {
          const Op op = latent_decode_op(m, b, keys, heads, kv);
          CHECK(runs_at_fp8_peak(op, rf) == (kv == KvDtype::fp8));
          table += fmt::format("absorbed_decode,{},{},{},{},{:.6f}\n", b, keys, heads, kv == KvDtype::fp8 ? "fp8" : "bf16", op_time(op, rf).time.value * 1e6);
        }
  const GemmRefit refit = refit_of("against-fp8-latent", table, h100, "absorbed_decode");
  const nlohmann::json& g = refit.gemm;
  CHECK(g["eta_compute"].get<double>() == Approx(0.5).epsilon(0.05));
  REQUIRE(g.contains("eta_compute_fp8"));
  CHECK(g["eta_compute_fp8"].get<double>() == Approx(0.3).epsilon(0.05));
  REQUIRE(g.contains("t_fixed_fp8_cache_s"));
  CHECK(g["t_fixed_fp8_cache_s"].get<double>() == Approx(3e-6).epsilon(0.15));
  CHECK(g["eta_memory"].get<double>() == Approx(0.8).epsilon(0.05));
  CHECK(refit.held_out_median() < 0.02);  // held-out median error of the refit
}

TEST_CASE("Against: an η_c that no row's compute bound reaches is the least that explains the rows", "[validate]") {
  // Latent decode rows on an H100 timed at η_c 1: at 16 and 32 heads and a bf16 cache every row is
  // bound by its bytes, so any η_c above some value explains them alike. The fit takes the least such
  // value, what the rows show the kernel reaches: there every row still times as given, and 5% lower
  // some row turns compute-bound and slower.
  const ModelSpec m = load_model("deepseek-v3");
  const HardwareSpec h100 = load_gpu("h100");
  KernelEfficiency law;
  law.fixed = Seconds{8e-6};
  law.per_sequence = Seconds{50e-9};
  law.eta_compute = 1;
  law.eta_memory = 0.8;
  law.split_kv = true;
  std::string table = "kernel,batch,kv_len,heads,latency_us\n";
  std::vector<std::pair<Op, double>> rows;
  for (int b : {1, 4, 16, 64, 128, 256, 512})
    for (int keys : {1024, 4096, 16384})
      for (int heads : {16, 32}) {
        const Op op = latent_decode_op(m, b, keys, heads);
        const double t = calibrated_time(op, law, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, static_cast<double>(h100.sm_count), h100.sm_clock_hz, false, Bytes{0}).time().value;
        rows.push_back({op, t});
        table += fmt::format("absorbed_decode,{},{},{},{:.6f}\n", b, keys, heads, t * 1e6);
      }
  const GemmRefit refit = refit_of("against-least-eta", table, h100, "absorbed_decode");
  const double eta = refit.gemm["eta_compute"].get<double>();
  INFO(refit.gemm.dump());
  CHECK(eta < 0.9);
  // The largest slowdown over the rows with the law's parameters at a given η_c.
  auto slowest = [&](double eta_c) {
    KernelEfficiency k = law;
    k.eta_compute = eta_c;
    double worst = 0;
    for (const auto& [op, t] : rows)
      worst = std::max(worst, calibrated_time(op, k, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, static_cast<double>(h100.sm_count), h100.sm_clock_hz, false, Bytes{0}).time().value / t - 1);
    return worst;
  };
  CHECK(slowest(eta) < 0.01);
  CHECK(slowest(0.95 * eta) > 0.01);
}

TEST_CASE("Against: the latent efficiency is never lowered below the highest rate a row reached", "[validate]") {
  // Latent decode rows on an H100 timed at η_c 0.5: four 128-head rows exactly (compute-bound), the
  // 16- and 32-head rows (bound by their bytes) 30% slower or faster by turns, noise that makes 1% of
  // the fit's loss worth more than the compute-bound rows timed 15% slow. Lowering η_c within that 1%
  // would time the fastest rows slower than they ran; the floor keeps η_c where they put it.
  const ModelSpec m = load_model("deepseek-v3");
  const HardwareSpec h100 = load_gpu("h100");
  KernelEfficiency law;
  law.fixed = Seconds{8e-6};
  law.eta_compute = 0.5;
  law.eta_memory = 0.8;
  law.split_kv = true;
  std::string table = "kernel,batch,kv_len,heads,latency_us\n";
  int i = 0;
  for (int heads : {16, 32})
    for (int keys : {1024, 2048, 4096, 8192, 16384, 32768})
      for (int b : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}) {
        const double noise = i++ % 4 < 2 ? 1.3 : 1 / 1.3;
        table += fmt::format("absorbed_decode,{},{},{},{:.6f}\n", b, keys, heads, latent_decode_time(m, h100, law, b, keys, heads) * noise * 1e6);
      }
  for (int keys : {16384, 32768})
    for (int b : {512, 1024})
      table += fmt::format("absorbed_decode,{},{},128,{:.6f}\n", b, keys, latent_decode_time(m, h100, law, b, keys, 128) * 1e6);
  const GemmRefit refit = refit_of("against-eta-floor", table, h100, "absorbed_decode");
  INFO(refit.gemm.dump());
  CHECK(refit.gemm["eta_compute"].get<double>() == Approx(0.5).epsilon(0.03));
}

TEST_CASE("Against: a DeepGEMM row times with the family's DeepGEMM efficiency and DeepGEMM's tiles, worked by hand", "[validate]") {
  // 4096 x 7168 x 16,384 in block fp8 on H100: DeepGEMM's 256 x 128 tiles, 896 CTAs in 7 waves
  // (w = 896 / 924), 2·4096·7168·16384 = 962,072,674,304 FLOPs (no padding) at the fp8 peak.
  const HardwareSpec h100 = load_gpu("h100");
  const AgainstRows rows("against-deepgemm", h100, "kernel,m,n,k,dtype,latency_us,library\ngemm,4096,7168,16384,fp8,700,deepgemm\ngemm,4096,7168,16384,fp8,900,\n");
  REQUIRE(rows.size() == 3);
  const auto col = [&](const char* name) { return rows.col(name); };
  const auto profile = efficiency_for(h100, bundled_efficiency());
  REQUIRE(profile);
  const KernelEfficiency& g = *profile->kernel(KernelFamily::gemm);
  REQUIRE(g.eta_compute_deepgemm);
  REQUIRE(g.eta_compute_fp8);
  const double fp8 = h100.peak_flops(DType::fp8)->value, w = 896.0 / 924;
  const double deep = std::stod(rows[1][col("predicted_default_s")]), own = std::stod(rows[2][col("predicted_default_s")]);
  // Both compute-bound: the two differ by their efficiencies alone.
  CHECK(deep - g.fixed.value == Approx(962072674304.0 / (fp8 * *g.eta_compute_deepgemm * w)).epsilon(1e-9));
  CHECK(own - g.fixed.value == Approx(962072674304.0 / (fp8 * *g.eta_compute_fp8 * w)).epsilon(1e-9));
}
