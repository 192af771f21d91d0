#include "mlaplan/core/roofline.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace mlaplan {

Roofline roofline_for(const HardwareSpec& hw, DType compute, const Efficiency& eta, Seconds launch) {
  Roofline rf;
  rf.peak = hw.peak_flops(compute).value_or(FlopsPerSecond{0});
  rf.bandwidth = hw.memory_bandwidth;
  rf.eta_compute = eta.compute;
  rf.eta_memory = eta.memory;
  rf.launch = launch;
  rf.eta_source = eta.source;
  rf.peak_fp8 = hw.peak_flops(DType::fp8).value_or(FlopsPerSecond{0});
  rf.fp8_compute = compute == DType::fp8 && rf.peak_fp8.value > 0;
  rf.latent_fp8 = latent_decode_reads_fp8_cache(hw).value_or(false);
  rf.decode_pair = gqa_decode_cost_pair(hw);
  return rf;
}

Roofline roofline_for(const HardwareSpec& hw, DType compute, const EfficiencyProfile& profile) {
  Roofline rf = roofline_for(hw, compute, Efficiency{});
  rf.kernels = profile.kernels;
  // The second pair of launch costs where the GPU runs the kernel they were fitted on: the latent
  // family's where fp8 generation MLA runs; GQA decode's (gqa_decode_cost_pair) on Hopper for its
  // fp8-cache launches (XQA's QGMMA), on Blackwell for every launch but MMHA's (TRTLLM-GEN): as_launched
  // says which launches pay it (Op::fp8_cache).
  const DecodeCostPair gqa = rf.decode_pair;
  for (std::size_t f = 0; f < rf.kernels.size(); ++f) {
    auto& k = rf.kernels[f];
    if (!k) continue;
    const auto fam = static_cast<KernelFamily>(f);
    const bool runs = fam == KernelFamily::absorbed_decode   ? rf.latent_fp8
                      : fam == KernelFamily::attention_decode ? gqa != DecodeCostPair::none
                                                              : gqa == DecodeCostPair::fp8_cache;
    if (!runs) k->fixed_fp8_cache.reset(), k->per_sequence_fp8_cache.reset(), k->block_query_rows_fp8_cache.reset();
  }
  rf.sms = static_cast<double>(hw.sm_count);
  rf.sm_clock_hz = hw.sm_clock_hz;
  rf.eta_source = profile.describe();
  // A GQA decode kernel's blocks cost SM time (block_cost_scale), and so does the fixed cost of a family
  // fitted with it at the SM clock (fixed_cost_scale): without the GPU's SMs (blocks) or clock such a
  // family cannot be timed, and its ops take the speed of light instead, as said.
  for (int i = 0; i < kKernelFamilyCount; ++i) {
    auto& k = rf.kernels[static_cast<std::size_t>(i)];
    if (!k) continue;
    const bool blocks = i == static_cast<int>(KernelFamily::attention_decode);
    const char* missing = blocks && !(rf.sms > 0)                                    ? "sm_count"
                          : (blocks || k->fixed_at_sm_clock) && !(rf.sm_clock_hz > 0) ? "sm_boost_clock_mhz"
                                                                                      : nullptr;
    if (!missing) continue;
    k.reset();
    rf.eta_source += fmt::format("; {} at speed of light: {} gives no {}, and its {} SM time", to_string(static_cast<KernelFamily>(i)),
                                 hw.source.empty() ? hw.name : hw.source, missing, blocks ? "blocks' cost is" : "fixed cost is");
  }
  return rf;
}

Roofline default_roofline(const HardwareSpec& hw, DType compute, const std::vector<EfficiencyProfile>& profiles) {
  if (const auto p = efficiency_for(hw, profiles)) return roofline_for(hw, compute, *p);
  Roofline rf = roofline_for(hw, compute, hw.efficiency);
  rf.eta_source = hw.efficiency.source != Efficiency{}.source
                      ? hw.efficiency.source
                      : "speed of light: no efficiency profile for " + hw.name + (hw.architecture.empty() ? "" : " (" + hw.architecture + ")");
  return rf;
}

Roofline speed_of_light(const Roofline& rf) {
  Roofline s;
  s.peak = rf.peak;
  s.bandwidth = rf.bandwidth;
  s.peak_fp8 = rf.peak_fp8;
  s.fp8_compute = rf.fp8_compute;
  s.latent_fp8 = rf.latent_fp8;
  s.deepgemm = rf.deepgemm;
  s.decode = rf.decode;
  s.decode_pair = rf.decode_pair;
  return s;
}

std::optional<KernelFamily> Roofline::fit_family(KernelFamily f) const {
  if (kernels[static_cast<std::size_t>(f)]) return f;
  if (f == KernelFamily::grouped_gemm && kernels[static_cast<std::size_t>(KernelFamily::gemm)]) return KernelFamily::gemm;
  return std::nullopt;
}

bool Roofline::calibrated() const {
  return std::any_of(kernels.begin(), kernels.end(), [](const auto& k) { return k.has_value(); });
}

namespace {

// The peak an op runs at: fp8 ops at the fp8 peak where the GPU has one.
FlopsPerSecond op_peak(const Op& op, const Roofline& rf) { return runs_at_fp8_peak(op, rf) ? rf.peak_fp8 : rf.peak; }

}  // namespace

bool runs_at_fp8_peak(const Op& op, const Roofline& rf) {
  return rf.peak_fp8.value > 0 && (op.fp8 || (op.fp8_cache && rf.latent_fp8 && family_of(op) == KernelFamily::absorbed_decode));
}

bool takes_fp8_efficiency(const Op& op, const Roofline& rf) { return runs_at_fp8_peak(op, rf) || rf.fp8_compute; }

bool xqa_takes_group(const Roofline& rf, const Tiling& t) { return !(rf.decode.xqa_only_group > 0) || t.head_group == rf.decode.xqa_only_group; }

bool engine_refuses_xqa(const Roofline& rf, const Tiling& t) {
  return (!rf.decode.xqa || !xqa_takes_group(rf, t)) && t.decode_kernel && !t.multi_query && t.xqa_group;
}

std::optional<Op> as_launched(const Op& op, const Roofline& rf) {
  const bool deepgemm = rf.deepgemm && !op.deepgemm && block_scaled_gemm(op, takes_fp8_efficiency(op, rf));
  const bool decode = op.tiling.decode_kernel && !op.tiling.multi_query;
  const bool mmha = engine_refuses_xqa(rf, op.tiling);
  Op o = op;
  o.deepgemm = o.deepgemm || deepgemm;
  if (mmha) o.tiling.xqa_group = false;
  Tiling& t = o.tiling;
  if (decode && !rf.decode.xqa_fp8_forced) t.xqa_fp8_cache = false;
  if (decode && !rf.decode.multi_block) {
    // One block per (sequence, KV head) for XQA, (sequence, query head) for MMHA; XQA's test counts
    // the former (Tiling::sequences, its blocks).
    t.split_k = 1;
    t.mmha_key_tiles = 1;
    t.xqa_gain_blocks = std::min(t.xqa_gain_blocks, t.sequences);
  }
  // An XQA launch over an fp8 cache without the Hopper kernel: the Ampere-style kernel's costs.
  if (decode && !rf.decode.xqa_hopper_kernel && o.fp8_cache && t.xqa_group && !launch_shape(t, rf.sms).mmha) o.fp8_cache = false;
  // On Blackwell an engine with XQA's dispatch for this head group runs TRTLLM-GEN's rule
  // (take_decode_dispatch), and every decode launch but MMHA's pays the pair, over any cache: a
  // speculative step's too (XQA's spec kernels, never MMHA).
  take_decode_launch(rf.decode_pair, o, rf.sms, decode && !mmha && rf.decode.xqa && xqa_takes_group(rf, t));
  const bool same = !deepgemm && !mmha && o.fp8_cache == op.fp8_cache && t.xqa_fp8_cache == op.tiling.xqa_fp8_cache && t.split_k == op.tiling.split_k &&
                    t.mmha_key_tiles == op.tiling.mmha_key_tiles && t.xqa_gain_blocks == op.tiling.xqa_gain_blocks && t.tllm_gen == op.tiling.tllm_gen;
  if (same) return std::nullopt;
  return o;
}

OpTime op_time(const Op& op, const Roofline& rf) {
  // A step's ops are priced from DRAM (no L2 term): whether a pass finds its tensor still in the L2
  // after the kernel that wrote it is not modelled, and a time below the DRAM speed of light would be
  // no bound at all. The L2 pace is fitted (mlaplan-validate) only so that the tables' repeated
  // passes over one L2-sized tensor do not lift η_m above DRAM's.
  if (const std::optional<Op> launched = as_launched(op, rf)) return op_time(*launched, rf);
  OpTime t;
  t.intensity = op.bytes().value > 0 ? op.flops / op.bytes() : 0;
  if (const auto fam = rf.fit_family(family_of(op))) {
    const CalibratedTime c =
        calibrated_time(op, *rf.kernels[static_cast<std::size_t>(*fam)], op_peak(op, rf), rf.bandwidth, rf.sms, rf.sm_clock_hz, takes_fp8_efficiency(op, rf), Bytes{0});
    t.compute = c.compute, t.memory = c.memory, t.fixed = c.fixed, t.blocks = c.blocks, t.ctas = c.ctas, t.time = c.time(), t.serial = c.serial;
    t.compute_bound = t.compute + t.ctas >= t.memory;
    t.calibrated = true;
    return t;
  }
  t.fixed = rf.launch;
  t.compute = runs_at_fp8_peak(op, rf) ? op.flops / (rf.peak_fp8 * rf.eta_compute) : op.flops / rf.attainable_compute();
  t.memory = op.bytes() / rf.attainable_bandwidth();
  t.time = std::max(t.compute, t.memory) + rf.launch;
  t.compute_bound = t.compute >= t.memory;
  return t;
}

PathCost& PathCost::operator+=(const PathCost& o) {
  flops += o.flops;
  bytes += o.bytes;
  workspace_bytes = std::max(workspace_bytes, o.workspace_bytes);
  time += o.time;
  compute += o.compute;
  memory += o.memory;
  return *this;
}

PathCost PathCost::operator*(double layers) const {
  PathCost c = *this;
  c.flops = flops * layers;
  c.bytes = bytes * layers;
  c.time = time * layers;
  c.compute = compute * layers;
  c.memory = memory * layers;
  return c;
}

PathCost path_cost(const PathPlan& p, const Roofline& rf) {
  if (rf.calibrated()) {
    PathCost c;
    for (const Op& op : p) {
      const OpTime t = op_time(op, rf);
      c.flops += op.flops;
      c.bytes += op.bytes();
      c.workspace_bytes = std::max(c.workspace_bytes, op.workspace_bytes);
      c.time += t.time;
      c.compute += t.compute + t.ctas;  // a cost per CTA inside the max is SM time (cta_overlap)
      c.memory += t.memory;
    }
    return c;
  }
  // The same arithmetic as op_time, with the two divisions done once per path (a hot loop of the
  // crossover solver).
  const double per_flop = 1 / rf.attainable_compute().value;
  const double per_fp8_flop = rf.peak_fp8.value > 0 ? 1 / (rf.peak_fp8 * rf.eta_compute).value : per_flop;
  const double per_byte = 1 / rf.attainable_bandwidth().value;
  PathCost c;
  for (const Op& op : p) {
    const Seconds compute{op.flops.value * (runs_at_fp8_peak(op, rf) ? per_fp8_flop : per_flop)}, memory{op.bytes().value * per_byte};
    c.flops += op.flops;
    c.bytes += op.bytes();
    c.workspace_bytes = std::max(c.workspace_bytes, op.workspace_bytes);
    c.time += std::max(compute, memory) + rf.launch;
    c.compute += compute;
    c.memory += memory;
  }
  return c;
}

}  // namespace mlaplan
