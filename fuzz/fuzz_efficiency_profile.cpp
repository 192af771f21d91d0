// libFuzzer: any bytes as a kernel-efficiency profile; a profile that parses must round-trip through
// its writer, and its calibrated times of every op of a DeepSeek-V3 step (and of each op as a
// per-tensor fp8 kernel, and over an fp8 cache, each latent attention op also without split-KV) must be
// finite and no faster than speed of light.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/io/efficiency_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mlaplan;
  static const ModelSpec m = load_model("deepseek-v3");
  static const HardwareSpec h100 = load_gpu("h100-sxm");
  const auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const EfficiencyProfile p = parse_efficiency_profile(j, "fuzz.json");
    const EfficiencyProfile again = parse_efficiency_profile(nlohmann::json::parse(efficiency_profile_json(p).dump()), "fuzz.json");
    if (again.describe() != p.describe() || again.fitted_on.size() != p.fitted_on.size()) __builtin_trap();
    for (std::size_t f = 0; f < p.kernels.size(); ++f)
      if (p.kernels[f] && (!again.kernels[f] || again.kernels[f]->memory_reach != p.kernels[f]->memory_reach || p.kernels[f]->memory_reach < 1 ||
                           again.kernels[f]->eta_compute_fp8_tensor != p.kernels[f]->eta_compute_fp8_tensor ||
                           again.kernels[f]->mmha_flops_per_sm_cycle != p.kernels[f]->mmha_flops_per_sm_cycle ||
                           (p.kernels[f]->mmha_flops_per_sm_cycle && !(*p.kernels[f]->mmha_flops_per_sm_cycle > 0 && *p.kernels[f]->mmha_flops_per_sm_cycle <= 256)) ||
                           again.kernels[f]->eta_memory_mmha != p.kernels[f]->eta_memory_mmha ||
                           (p.kernels[f]->eta_memory_mmha && !(*p.kernels[f]->eta_memory_mmha > 0 && *p.kernels[f]->eta_memory_mmha <= 1)) ||
                           again.kernels[f]->block_query_rows != p.kernels[f]->block_query_rows ||
                           again.kernels[f]->block_query_rows_fp8_cache != p.kernels[f]->block_query_rows_fp8_cache ||
                           (p.kernels[f]->block_query_rows_fp8_cache && !p.kernels[f]->fixed_fp8_cache) ||
                           again.kernels[f]->resident_ctas != p.kernels[f]->resident_ctas || again.kernels[f]->solo_share != p.kernels[f]->solo_share ||
                           p.kernels[f]->solo_share < 1 / p.kernels[f]->resident_ctas ||
                           again.kernels[f]->fixed_fp8_cache.has_value() != p.kernels[f]->fixed_fp8_cache.has_value() ||
                           again.kernels[f]->fixed_fp8_cache.has_value() != again.kernels[f]->per_sequence_fp8_cache.has_value()))
        __builtin_trap();
    // The profile as written, and with its latent families' split-KV flipped (the unsplit launch, its
    // resident blocks, where the profile splits).
    const EfficiencyProfile flipped = [&p] {
      EfficiencyProfile q = p;
      for (std::size_t f = 0; f < q.kernels.size(); ++f)
        if (q.kernels[f] && is_latent_attention(static_cast<KernelFamily>(f))) q.kernels[f]->split_kv = !q.kernels[f]->split_kv;
      return q;
    }();
    for (const EfficiencyProfile* prof : {&p, &flipped}) {
      const Roofline rf = roofline_for(h100, DType::bf16, *prof);
      const Roofline sol = speed_of_light(rf);
      Workload w;
      w.groups = {SequenceGroup{8, 1, 4096}, SequenceGroup{1, 300, 1000}};
      w.projections = true;
      for (PathKind k : paths_for(m))
        for (const Op& op : mla_path(m, w, k)) {
          Op tensor = op, cache = op;
          tensor.fp8 = tensor.fp8_per_tensor = true;
          cache.fp8_cache = true;
          for (const Op& o : {op, tensor, cache}) {
            const OpTime t = op_time(o, rf);
            if (!std::isfinite(t.time.value) || t.time.value < op_time(o, sol).time.value * (1 - 1e-12)) __builtin_trap();
          }
        }
    }
  } catch (const InputError&) {
  }
  return 0;
}
