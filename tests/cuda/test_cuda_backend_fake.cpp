// The CUDA backend (validate/cuda/cuda_backend.cpp) run whole on a fake device (fake_cuda.hpp): its
// kernels on the host shim, its cuBLAS calls as Eigen products. What the fake cannot tell (speed)
// is left to a GPU; what it can is checked here, before any GPU time is spent: the cuBLAS argument
// layouts, paging, splits and chunking against float64, the early stop on a failed check, and the
// join of every timed kernel to the cost model's op — path rows measured, spreads from the
// inter-quartile range, split_kv_merge exactly where the plan has more than one split.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "cuda/cuda_backend.hpp"
#include "fake_cuda.hpp"
#include "results.hpp"

namespace mlaplan::validate {
namespace {

void quiet(const std::string&) {}

// A plan small enough for the host shim: tiny calibration, the given checks, grid and sweep.
CudaPlan small_plan(std::vector<MlaShape> checks, Grid grid, std::vector<int> sweep_heads) {
  return CudaPlan{.checks = std::move(checks),
                  .grid = std::move(grid),
                  .max_path_flops = 1e12,
                  .sweep_heads = std::move(sweep_heads),
                  .sweep_queries = {2, 24},
                  .sweep_batch = 1,
                  .sweep_prefix = 100,
                  .copy_bytes = std::size_t{1} << 20,
                  .gemm_n = 64,
                  .timing_budget_s = 0,
                  .min_reps = 3,
                  .max_reps = 3};
}

}  // namespace

TEST_CASE("the CUDA backend's float64 checks pass on a fake device running the kernels on the host shim", "[cuda_fake]") {
  fake_cuda::use_mutant_kernels(false);
  CudaPlan plan = cuda_plan(false);  // the checks a real run makes, nothing timed
  plan = small_plan(plan.checks, Grid{}, {});
  const MeasuredRun mr = measure_cuda(CudaOptions{.quick = false, .seed = 2024}, plan, quiet);
  std::set<std::string> kinds;
  for (const KernelCheck& c : mr.checks) {
    std::printf("[cuda fake] %-120s max rel. error %.3e (bound %.0e)%s\n", c.kernel.c_str(), c.max_rel_error, c.bound, c.poisoned_left ? ", UNWRITTEN" : "");
    INFO(c.kernel << ": " << c.max_rel_error);
    CHECK(c.ok());
    kinds.insert(c.kernel.substr(0, c.kernel.find_first_of(": ")));
  }
  CHECK(mr.checks.size() == 4 * 4 + 2);  // per shape: two absorb runs, expand, kv_up_proj; two shapes chunked
  CHECK(kinds == std::set<std::string>{"absorb", "expand", "kv_up_proj", "chunked"});
  CHECK(mr.samples.empty());
}

TEST_CASE("a failed float64 check stops the CUDA run before any timing", "[cuda_fake]") {
  fake_cuda::use_mutant_kernels(true);  // causal mask off by one
  const MeasuredRun mr = measure_cuda(CudaOptions{.quick = true, .seed = 7},
                                      small_plan({MlaShape{.heads = 4, .batch = 1, .query = 6, .prefix = 40, .chunk = 32}},
                                                 checkerboard_grid({2}, {1}, {1}, {100}, 64), {2}),
                                      quiet);
  fake_cuda::use_mutant_kernels(false);
  REQUIRE(!mr.checks.empty());
  CHECK(std::any_of(mr.checks.begin(), mr.checks.end(), [](const KernelCheck& c) { return !c.ok(); }));
  CHECK(mr.samples.empty());
  CHECK(mr.sweeps.empty());
  CHECK(mr.calibration.empty());
  CHECK(!finish_validation(MeasuredRun(mr)).checks_passed);
}

TEST_CASE("a small CUDA run on the fake device times every op and path, joined to the cost model", "[cuda_fake]") {
  fake_cuda::use_mutant_kernels(false);
  // Heads 2, batch 1 or 2, Q 3, prefix 150 (3 pages, chunks of 64): on the one-SM fake device
  // batch 1 gets 2 splits (split_kv_merge in the plan) and batch 2 one; batch 1 runs chunked
  // expand in 3 chunks. The checkerboard puts one shape in each half.
  const CudaPlan plan = small_plan({MlaShape{.heads = 4, .batch = 2, .query = 3, .prefix = 60},
                                    MlaShape{.heads = 4, .batch = 1, .query = 5, .prefix = 70, .chunk = 32}},
                                   checkerboard_grid({2}, {1, 2}, {3}, {150}, 64), {2});
  const long gemms_before = fake_cuda::gemm_calls();
  MeasuredRun mr = measure_cuda(CudaOptions{.quick = true, .seed = 11}, plan, quiet);
  CHECK(fake_cuda::gemm_calls() > gemms_before);
  for (const KernelCheck& c : mr.checks) {
    INFO(c.kernel << ": " << c.max_rel_error);
    CHECK(c.ok());
  }
  REQUIRE(!mr.samples.empty());

  // Every row measured (the old backend left every path row at 0 s), a spread from the quartiles.
  bool any_spread = false;
  for (const Sample& s : mr.samples) {
    INFO(s.op_name() << " of " << to_string(s.path) << " at B" << s.shape.batch << " Q" << s.shape.query);
    CHECK(s.measured.value > 0);
    CHECK(s.spread >= 0);
    CHECK(s.sol.value > 0);
    any_spread = any_spread || s.spread > 0;
  }
  CHECK(any_spread);

  // Per shape: the paths and ops the plan has, split_kv_merge only with several splits.
  for (std::size_t i = 0; i < plan.grid.shapes.size(); ++i) {
    const MlaShape& s = plan.grid.shapes[i];
    std::set<std::string> absorb, chunked;
    int paths = 0;
    for (const Sample& x : mr.samples) {
      if (x.shape.batch != s.batch || x.shape.query != s.query) continue;
      CHECK(x.train == plan.grid.train[i]);
      if (x.is_path()) ++paths;
      if (x.path == PathKind::absorb && x.op) absorb.insert(x.op_name());
      if (x.path == PathKind::chunked && x.op) {
        chunked.insert(x.op_name());
        CHECK(x.calls == (x.op == OpId::lse_merge ? 0 : 3));  // launched once per chunk; the merge once
      }
    }
    INFO("B" << s.batch << " Q" << s.query);
    if (s.batch == 1) {
      CHECK(absorb == std::set<std::string>{"q_absorb_w_uk", "latent_attention_mqa", "split_kv_merge", "out_absorb_w_uv"});
      CHECK(chunked.size() == 4);
      CHECK(paths == 3);
    } else {
      CHECK(absorb == std::set<std::string>{"q_absorb_w_uk", "latent_attention_mqa", "out_absorb_w_uv"});
      CHECK(chunked.empty());
      CHECK(paths == 2);
    }
  }

  // The calibrated device as a hardware spec, every number sourced, no dates.
  const HardwareSpec& hw = mr.hardware;
  CHECK(hw.sm_count == fake_cuda::kSms);
  CHECK(hw.l2_cache.value == fake_cuda::kL2Bytes);
  CHECK(hw.memory_bandwidth.value > 0);
  CHECK(hw.dense_peak.at(DType::bf16).value > 0);
  for (const char* key : {"memory_capacity", "memory_bandwidth", "peak_bf16", "sm_count", "l2_cache"}) {
    INFO(key);
    REQUIRE(hw.sources.count(key) == 1);
    CHECK(hw.sources.at(key).find("202") == std::string::npos);
  }
  REQUIRE(mr.sweeps.size() == 1);
  CHECK(mr.sweeps[0].points.size() == 2);

  // Fitted, judged and rendered like any run.
  const ValidationRun run = finish_validation(std::move(mr));
  CHECK(run.checks_passed);
  std::set<std::string> files;
  for (const auto& [name, text] : run.files) files.insert(name);
  CHECK(files.count("calibrated-gpu.json") == 1);
  CHECK(files.count("ops.csv") == 1);
}

}  // namespace mlaplan::validate
