// Numeric range: contexts up to 10 million tokens, batches up to a million, 1,000 layers, every
// bundled model: finite results, and integral ones exact (checked against 128-bit arithmetic).
#include <catch2/catch.hpp>

#include <cmath>

#include "helpers.hpp"
#include "mlaplan/core/capacity.hpp"
#include "mlaplan/core/crossover.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"

using namespace mlaplan;
using test::all_models;

namespace {

// 128-bit integers are a GCC/clang extension; `__extension__` says so to -Wpedantic.
__extension__ using i128 = __int128;

// The model with its layer pattern repeated to `n` layers.
ModelSpec with_layers(const ModelSpec& m, std::size_t n) {
  ModelSpec out = m;
  out.layers.clear();
  for (std::size_t i = 0; i < n; ++i) out.layers.push_back(m.layers[i % m.layers.size()]);
  return out;
}

i128 exact_sequence_bytes(const ModelSpec& m, KvDtype d, std::int64_t tokens, std::int64_t block) {
  const i128 per_layer = kv_bytes_per_token_per_layer(m, d).total().value +
                             (m.indexer ? indexer_bytes_per_token_per_layer(*m.indexer).value : 0);
  i128 total = 0;
  for (const LayerSpec& l : m.layers) {
    const i128 held = l.sliding ? std::min<std::int64_t>(tokens, l.window) : tokens;
    total += per_layer * ((held + block - 1) / block * block);
  }
  return total;
}

}  // namespace

TEST_CASE("KV bytes stay exact at 10M tokens, 1M sequences and 1,000 layers", "[range][property]") {
  for (const ModelSpec& base : all_models()) {
    for (std::size_t layers : {base.layers.size(), std::size_t{1000}}) {
      const ModelSpec m = with_layers(base, layers);
      for (KvDtype d : {KvDtype::fp32, KvDtype::bf16, KvDtype::fp4}) {
        INFO(m.name << " layers " << layers << " " << to_string(d));
        const std::int64_t tokens = 10'000'000;
        const Bytes seq = sequence_kv_bytes(m, d, 1, tokens, 64);
        const i128 want = exact_sequence_bytes(m, d, tokens, 64);
        CHECK(static_cast<i128>(seq.value) == want);
        // A million such sequences: exact while the product fits 63 bits, saturated (never wrapped) beyond.
        const Bytes million = seq * 1'000'000;
        const i128 want_m = want * 1'000'000;
        if (want_m < static_cast<i128>(kSaturated)) CHECK(static_cast<i128>(million.value) == want_m);
        else CHECK(million.value == kSaturated);
      }
    }
  }
}

TEST_CASE("Capacity, costs and crossovers stay finite at the extremes", "[range][property]") {
  const HardwareSpec h = load_gpu("b200");
  const Roofline rf = roofline_for(h, DType::bf16, Efficiency{});
  for (const ModelSpec& base : all_models()) {
    const ModelSpec m = with_layers(base, 1000);
    INFO(m.name);
    CapacityRequest q;
    q.weights = default_weight_plan(m);
    q.par = {8, 8, 1};
    if (m.heads % 8 != 0) q.par.tp = 4;
    q.context = 10'000'000;
    q.block_size = 64;
    const CapacityResult r = plan_capacity(m, h, q);
    CHECK(r.kv_bytes_per_token_per_rank.value > 0);
    CHECK(r.kv_bytes_per_token_per_rank.value < kSaturated);
    CHECK(r.sequence_bytes_per_rank.value < kSaturated);
    CHECK(r.max_sequences >= 0);

    Workload w;
    w.groups = {SequenceGroup{1'000'000, 1, 9'999'999}, SequenceGroup{1, 10'000'000, 0}};
    w.par.tp = q.par.tp;
    for (PathKind k : paths_for(m)) {
      const PathPlan p = k == PathKind::standard ? standard_path(m, w) : mla_path(m, w, k);
      const PathCost c = path_cost(p, rf);
      CHECK(std::isfinite(c.flops.value));
      CHECK(std::isfinite(c.bytes.value));
      CHECK(std::isfinite(c.time.value));
      CHECK(c.time.value > 0);
    }
    if (m.is_mla()) {
      const double q_star = roofline_crossover_query(m, w, 10'000'000, 1'000'000, rf);
      CHECK((std::isfinite(q_star) || q_star == kNoCrossover));
      CHECK(std::isfinite(flop_crossover_query(mla_geometry(m, w), 1e12, true)));
    }
  }
}

TEST_CASE("Saturating arithmetic clamps instead of wrapping", "[range]") {
  CHECK(sat_mul(kSaturated, 2) == kSaturated);
  CHECK(sat_mul(-kSaturated, 2) == std::numeric_limits<std::int64_t>::min());
  CHECK(sat_add(kSaturated, 1) == kSaturated);
  CHECK(sat_sub(std::numeric_limits<std::int64_t>::min(), 1) == std::numeric_limits<std::int64_t>::min());
  CHECK((Bytes{std::int64_t{1} << 62} * 4).value == kSaturated);
  CHECK((Bytes{1} * 4).value == 4);
  CHECK(round_up(kSaturated - 1, 64) == kSaturated);
}
