// Benchmarks of path costing and crossover solving (not timed tests). Run:
//   ./build/bench/mlaplan_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "mlaplan/core/crossover.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/io/registry.hpp"

using namespace mlaplan;

namespace {

const ModelSpec& v3() {
  static const ModelSpec m = load_model("deepseek-v3");
  return m;
}

Roofline h200() {
  static const Roofline rf = roofline_for(load_gpu("h200"), DType::bf16, Efficiency{});
  return rf;
}

Workload base() {
  Workload w;
  w.groups = {SequenceGroup{32, 1, 8192}};
  return w;
}

// One path evaluation: build the op list of a path and sum its roofline time.
void BM_PathEvaluation(benchmark::State& state) {
  const ModelSpec& m = v3();
  const Roofline rf = h200();
  Workload w = base();
  const auto kind = static_cast<PathKind>(state.range(0));
  double q = 1;
  for (auto _ : state) {
    w.groups[0].query = q;
    benchmark::DoNotOptimize(path_cost(mla_path(m, w, kind), rf).time);
    q = q < 4096 ? q + 1 : 1;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(to_string(kind)));
}
BENCHMARK(BM_PathEvaluation)->Arg(static_cast<int>(PathKind::absorb))->Arg(static_cast<int>(PathKind::expand))->Arg(static_cast<int>(PathKind::chunked));

// A sweep of FLOP-only crossovers: one closed-form root per (prefix, TP) point.
void BM_FlopCrossoverSweep(benchmark::State& state) {
  const ModelSpec& m = v3();
  const std::int64_t points = state.range(0);
  std::vector<MlaGeometry> geometries;
  for (std::int64_t tp : {1, 2, 4, 8}) {
    Workload w = base();
    w.par.tp = tp;
    geometries.push_back(mla_geometry(m, w));
  }
  for (auto _ : state) {
    double sum = 0;
    for (std::int64_t i = 0; i < points; ++i)
      sum += flop_crossover_query(geometries[static_cast<std::size_t>(i & 3)], static_cast<double>(i >> 2), true);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * points);
}
BENCHMARK(BM_FlopCrossoverSweep)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// A sweep of roofline crossovers, each solved by bracketing and bisection.
void BM_RooflineCrossoverSweep(benchmark::State& state) {
  const ModelSpec& m = v3();
  const Roofline rf = h200();
  const std::int64_t points = state.range(0);
  Workload w = base();
  for (auto _ : state) {
    double sum = 0;
    for (std::int64_t i = 0; i < points; ++i) {
      w.par.tp = std::int64_t{1} << (i & 3);
      sum += roofline_crossover_query(m, w, static_cast<double>(i >> 2), 32, rf);
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * points);
}
BENCHMARK(BM_RooflineCrossoverSweep)->Arg(1'000'000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
