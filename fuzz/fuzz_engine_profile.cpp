// libFuzzer: any bytes as an engine profile, then its serving parameters and its budget on two bundled models.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include <cmath>

#include "mlaplan/core/engine_memory.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mlaplan;
  static const ModelSpec mla = load_model("deepseek-v2-lite");
  static const ModelSpec moe = load_model("gpt-oss-20b");
  static const HardwareSpec gpu = load_gpu("h100-sxm");
  const auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const EngineProfile p = parse_engine_profile(j, "fuzz.json");
    // The serving step's parameters: the MoE imbalance at any EP size is finite and at least 1,
    // and 1 on a single rank.
    const StepOverheads o = step_overheads(p);
    if (moe_imbalance_at(o, 1) != 1) __builtin_trap();
    for (double ep = 2; ep <= 1024; ep *= 1.5) {
      const double imb = moe_imbalance_at(o, ep);
      if (!std::isfinite(imb) || imb < 1) __builtin_trap();
    }
    for (const ModelSpec* m : {&mla, &moe}) {
      for (std::int64_t dp : {1, 2}) {
        EngineSettings s;
        s.mtp = dp == 2 ? 1 : 0;
        const EngineCapacity e = engine_capacity(*m, gpu, p, default_weight_plan(*m), Parallelism{1, dp, 1}, KvDtype::bf16, s, 4096);
        (void)as_capacity_result(e, *m, Parallelism{1, dp, 1}, KvDtype::bf16, 4096);
        // Whatever the profile's numbers: the budget lines add up to the total, none but the
        // over-budget line is negative, and a result that fits has a pool that holds its tokens.
        if (!e.lines.empty()) {
          Bytes sum{0};
          for (const BudgetLine& l : e.lines) {
            sum += l.bytes;
            if (l.key != "over_budget" && l.bytes.value < 0) __builtin_trap();
          }
          if (sum != e.total_seen) __builtin_trap();
        }
        if (e.fits() && e.kv_pool.value < e.engine_kv_tokens) __builtin_trap();
      }
    }
  } catch (const InputError&) {
  }
  return 0;
}
