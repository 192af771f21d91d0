#pragma once
// What the fuzzers do with an interpreted model: every formula a command could call.
#include <nlohmann/json.hpp>

#include "mlaplan/core/capacity.hpp"
#include "mlaplan/core/crossover.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/core/study.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hf_config.hpp"

namespace mlaplan::fuzz {

inline void exercise(const ModelSpec& m) {
  HardwareSpec h;
  h.name = "fuzz";
  h.memory_capacity = Bytes{std::int64_t{80} << 30};
  h.memory_bandwidth = BytesPerSecond{3e12};
  h.dense_peak[DType::bf16] = FlopsPerSecond{1e15};
  const Roofline rf = roofline_for(h, DType::bf16, Efficiency{});
  for (KvDtype d : all_kv_dtypes()) {
    (void)kv_bytes_per_token(m, d, 1);
    (void)sequence_kv_bytes(m, d, 1, 10'000'000, 64);
    (void)mha_equivalent_bytes_per_token_per_layer(m, d);
  }
  (void)count_params(m);
  for (std::int64_t tp : {1, 2, 8}) {
    if (m.heads % tp != 0) continue;
    const Parallelism par{tp, 2, 1};
    (void)weight_bytes_per_rank(m, default_weight_plan(m), par);
    for (WeightDtype d : all_weight_dtypes()) (void)weight_bytes_per_rank(m, weight_plan_for(m, d), par);
    (void)bytes_per_element(weight_format_for(m, attention_weight_dtype(m)));
    CapacityRequest q;
    q.weights = default_weight_plan(m);
    q.par = par;
    q.context = 32768;
    q.block_size = 16;
    q.reserve = activation_reserve_estimate(m, par, 8192);
    (void)plan_capacity(m, h, q);
    Workload w;
    w.groups = {SequenceGroup{4, 3, 1000}, SequenceGroup{1, 100, 0}};
    w.par.tp = tp;
    for (PathKind k : paths_for(m)) {
      const PathPlan p = k == PathKind::standard ? standard_path(m, w, m.layers.empty() ? 0 : m.layers[0].window) : mla_path(m, w, k);
      (void)path_cost(p, rf);
    }
    if (m.is_mla()) {
      (void)flop_crossover_query(mla_geometry(m, w), 4096, true);
      (void)roofline_crossover_query(m, w, 4096, 8, rf);
    }
    (void)cost_study(m, w, rf);
    (void)kv_study(m, KvDtype::bf16, par, 4096, 3, 16);
  }
}

}  // namespace mlaplan::fuzz
