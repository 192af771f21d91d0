#include "mlaplan/core/efficiency.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>

namespace mlaplan {

std::string_view to_string(KernelFamily f) {
  switch (f) {
    case KernelFamily::absorbed_decode: return "absorbed_decode";
    case KernelFamily::expanded_prefill: return "expanded_prefill";
    case KernelFamily::sparse_decode: return "sparse_decode";
    case KernelFamily::attention: return "attention";
    case KernelFamily::attention_decode: return "attention_decode";
    case KernelFamily::gemm: return "gemm";
    case KernelFamily::bmm: return "bmm";
    case KernelFamily::grouped_gemm: return "grouped_gemm";
    case KernelFamily::merge: return "merge";
    case KernelFamily::elementwise: return "elementwise";
    case KernelFamily::indexer: return "indexer";
  }
  return "?";
}

std::optional<KernelFamily> parse_kernel_family(std::string_view s) {
  for (int i = 0; i < kKernelFamilyCount; ++i)
    if (to_string(static_cast<KernelFamily>(i)) == s) return static_cast<KernelFamily>(i);
  return std::nullopt;
}

KernelFamily family_of(OpId id) {
  switch (id) {
    case OpId::latent_attention_mqa: return KernelFamily::absorbed_decode;
    case OpId::attention_mha:
    case OpId::attention_mha_chunk: return KernelFamily::expanded_prefill;
    case OpId::sparse_latent_attention: return KernelFamily::sparse_decode;
    case OpId::attention:
    case OpId::attention_sliding: return KernelFamily::attention;
    default: break;
  }
  // Every other op runs as the kind of kernel kind_of names.
  switch (kind_of(id)) {
    case OpKind::bmm: return KernelFamily::bmm;
    case OpKind::merge: return KernelFamily::merge;
    case OpKind::elementwise: return KernelFamily::elementwise;
    case OpKind::indexer: return KernelFamily::indexer;
    case OpKind::grouped_gemm: return KernelFamily::grouped_gemm;
    case OpKind::attention:
    case OpKind::gemm: break;
  }
  return KernelFamily::gemm;
}

KernelFamily family_of(const Op& op) {
  const KernelFamily f = family_of(op.id);
  return f == KernelFamily::attention && op.tiling.decode_kernel ? KernelFamily::attention_decode : f;
}

std::string EfficiencyProfile::describe() const {
  std::string on, families;
  for (const FittedTable& t : fitted_on)
    if (on.find(t.gpu) == std::string::npos) on += (on.empty() ? "" : " + ") + t.gpu;
  // Borrowed families, grouped by the profile they came from, in family order.
  std::vector<std::pair<std::string, std::string>> borrowed;
  for (int i = 0; i < kKernelFamilyCount; ++i) {
    const auto f = static_cast<std::size_t>(i);
    if (!kernels[f]) continue;
    const std::string fam(to_string(static_cast<KernelFamily>(i)));
    if (borrowed_from[f].empty()) {
      families += (families.empty() ? "" : ", ") + fam;
      continue;
    }
    auto it = std::find_if(borrowed.begin(), borrowed.end(), [&](const auto& b) { return b.first == borrowed_from[f]; });
    if (it == borrowed.end()) borrowed.push_back({borrowed_from[f], fam});
    else it->second += ", " + fam;
  }
  std::string s = name;
  s += " profile (";
  s += on.empty() ? std::string("no tables") : "fitted on " + on;
  s += "): ";
  s += families.empty() ? std::string("no families") : families;
  for (const auto& [from, fams] : borrowed) s += "; " + fams + " from the " + from + " profile";
  for (int i = 0; i < kKernelFamilyCount; ++i)
    if (!deepgemm_from[static_cast<std::size_t>(i)].empty())
      s += "; " + std::string(to_string(static_cast<KernelFamily>(i))) + "'s DeepGEMM η_c from the " + deepgemm_from[static_cast<std::size_t>(i)] + " profile";
  if (latent_kernel_of_gpu) {
    const KernelEfficiency& k = *kernels[static_cast<std::size_t>(KernelFamily::absorbed_decode)];
    s += std::string("; absorbed_decode with this GPU's kernel, which ") + (k.split_kv ? "splits keys" : "does not split keys");
    if (!k.split_kv && k.shares_sms()) s += ", " + std::to_string(static_cast<int>(k.resident_ctas)) + " blocks to an SM";
  }
  return s;
}

std::optional<EfficiencyProfile> efficiency_for(const HardwareSpec& hw, const std::vector<EfficiencyProfile>& profiles) {
  std::optional<EfficiencyProfile> out;
  for (const std::string_view scope : {"gpu", "architecture", "any"})
    for (const EfficiencyProfile& p : profiles) {
      if (p.scope != scope) continue;
      if (scope == "gpu" && p.gpu != hw.name) continue;
      if (scope == "architecture" && (hw.architecture.empty() || p.architecture != hw.architecture)) continue;
      if (!out) {
        out = p;
        continue;
      }
      for (std::size_t f = 0; f < out->kernels.size(); ++f) {
        if (!out->kernels[f] && p.kernels[f]) out->kernels[f] = p.kernels[f], out->borrowed_from[f] = p.name;
        else if (out->kernels[f] && !out->kernels[f]->eta_compute_deepgemm && p.kernels[f] && p.kernels[f]->eta_compute_deepgemm)
          out->kernels[f]->eta_compute_deepgemm = p.kernels[f]->eta_compute_deepgemm, out->deepgemm_from[f] = p.name;
      }
    }
  // A latent decode family fitted on other GPUs times this GPU's launches with the kernel it runs.
  const auto latent = static_cast<std::size_t>(KernelFamily::absorbed_decode);
  if (out && out->kernels[latent] && (out->scope != "gpu" || !out->borrowed_from[latent].empty()))
    out->latent_kernel_of_gpu = take_gpu_latent_kernel(hw, *out->kernels[latent]);
  return out;
}

bool take_gpu_latent_kernel(const HardwareSpec& hw, KernelEfficiency& k) {
  const std::optional<bool> splits = latent_decode_splits_keys(hw);
  if (!splits || k.split_kv == *splits) return false;
  k.split_kv = *splits;
  // The unsplit kernel's blocks share SMs however the profile's split kernels ran: where the family
  // was fitted without a launch that shows it, it takes the kernel's residency from its launch
  // resources, and a lone block no more than its share of the SM (the kernel latency-bound).
  if (!k.split_kv && !k.shares_sms()) k.resident_ctas = kUnsplitLatentCtasPerSm, k.solo_share = 1 / kUnsplitLatentCtasPerSm;
  return true;
}

std::optional<bool> latent_decode_splits_keys(const HardwareSpec& hw) {
  if (hw.architecture == "hopper" || hw.architecture == "blackwell") return true;
  if (hw.architecture == "ampere" || hw.architecture == "ada") return false;
  return std::nullopt;
}

std::optional<bool> latent_decode_reads_fp8_cache(const HardwareSpec& hw) {
  if (hw.architecture == "ada" || hw.architecture == "hopper" || hw.architecture == "blackwell") return true;
  if (hw.architecture == "ampere") return false;
  return std::nullopt;
}

bool is_latent_attention(KernelFamily f) { return f == KernelFamily::absorbed_decode || f == KernelFamily::sparse_decode; }

ComputeEta compute_eta_kind(const KernelEfficiency& k, bool fp8, bool per_tensor, bool deepgemm) {
  if (!fp8) return ComputeEta::dense;
  if (per_tensor && k.eta_compute_fp8_tensor) return ComputeEta::fp8_tensor;
  if (deepgemm && !per_tensor && k.eta_compute_deepgemm) return ComputeEta::deepgemm;
  if (k.eta_compute_fp8) return ComputeEta::fp8;
  if (!per_tensor && k.eta_compute_deepgemm) return ComputeEta::deepgemm;
  return ComputeEta::dense;
}

double eta_compute_for(const KernelEfficiency& k, bool fp8, bool per_tensor, bool deepgemm) {
  switch (compute_eta_kind(k, fp8, per_tensor, deepgemm)) {
    case ComputeEta::fp8: return *k.eta_compute_fp8;
    case ComputeEta::fp8_tensor: return *k.eta_compute_fp8_tensor;
    case ComputeEta::deepgemm: return *k.eta_compute_deepgemm;
    case ComputeEta::dense: break;
  }
  return k.eta_compute;
}

DecodeCostPair gqa_decode_cost_pair(const HardwareSpec& hw) {
  if (hw.architecture == "hopper") return DecodeCostPair::fp8_cache;
  if (hw.architecture == "blackwell") return DecodeCostPair::every_launch;
  return DecodeCostPair::none;
}

bool take_decode_dispatch(DecodeCostPair pair, Tiling& t) {
  if (pair != DecodeCostPair::every_launch || !t.decode_kernel || t.multi_query || !(t.head_group > 0) || t.tllm_gen) return false;
  t.tllm_gen = true;
  return true;
}

bool pays_second_decode_pair(DecodeCostPair pair, bool fp8_cache, bool mmha) {
  return (pair == DecodeCostPair::every_launch && !mmha) || (pair == DecodeCostPair::fp8_cache && fp8_cache);
}

void take_decode_launch(DecodeCostPair pair, Op& op, double sms, bool dispatch) {
  if (!op.tiling.decode_kernel) return;
  if (dispatch) take_decode_dispatch(pair, op.tiling);
  op.fp8_cache = pays_second_decode_pair(pair, op.fp8_cache, launch_shape(op.tiling, sms).mmha);
}

LaunchCosts launch_costs(const KernelEfficiency& k, bool fp8_cache, bool mmha) {
  if (fp8_cache && k.fixed_fp8_cache && k.per_sequence_fp8_cache)
    return {*k.fixed_fp8_cache, *k.per_sequence_fp8_cache, true, false, k.block_query_rows_fp8_cache.value_or(k.block_query_rows)};
  if (mmha && k.per_sequence_mmha) return {k.fixed, *k.per_sequence_mmha, false, true, k.block_query_rows};
  return {k.fixed, k.per_sequence, false, false, k.block_query_rows};
}

bool runs_unsplit(const KernelEfficiency& k, const Tiling& t) { return !k.split_kv && t.unsplit_ctas > 0; }

double wave_efficiency(double ctas, double sms) {
  if (!(ctas > 0) || !(sms > 0)) return 1;
  return ctas / (std::ceil(ctas / sms) * sms);
}

double resident_wave_efficiency(double ctas, double sms, double resident, double solo) {
  if (!(ctas > 0) || !(sms > 0)) return 1;
  // A whole number of blocks from 1, a lone block's share within [1/resident, 1] (as profiles are read).
  resident = std::max(1.0, std::floor(resident));
  solo = std::clamp(solo, 1 / resident, 1.0);
  const double slots = resident * sms, waves = std::ceil(ctas / slots), last = ctas - (waves - 1) * slots;
  // Each full wave: `resident` blocks on every SM, each at 1/resident of it; the last wave's busiest SM
  // runs n of them, each at min(solo, 1/n).
  return ctas / (sms * ((waves - 1) * resident + std::max(1 / solo, std::ceil(last / sms))));
}

double memory_wave_efficiency(double ctas, double sms, double reach) {
  if (!(ctas > 0) || !(sms > 0) || !(reach >= 1)) return 1;
  const double full = std::floor(ctas / sms), last = ctas - full * sms;
  if (!(last > 0)) return 1;
  return ctas / (full * sms + std::max(last, sms / reach));
}

double launched_ctas(const Tiling& t, double sms) {
  if (!(t.ctas > 0) || !(sms > 0)) return t.ctas;
  if (t.decode_kernel) {
    // XQA's multi-block count: its blocks per sequence (split_k), cut to about kXqaTargetWaves waves
    // of CTAs (computeMultiBlockCount; its cap of 6,000 sub-sequences over the batch never binds
    // below 8 waves of 750 SMs).
    double blocks = t.split_k;
    const double over = t.ctas * blocks / sms / kXqaTargetWaves;
    if (over > 1) blocks = std::floor(blocks / over);
    return t.ctas * std::max(blocks, 1.0);
  }
  return t.ctas * std::min(t.split_k, std::max(1.0, std::ceil(sms / t.ctas)));
}

LaunchShape launch_shape(const Tiling& t, double sms) {
  LaunchShape l{launched_ctas(t, sms), t.sequences, false};
  if (!t.decode_kernel || !(t.mmha_ctas > 0) || !(sms > 0)) return l;
  if (t.tllm_gen ? t.head_group <= kTllmGenMaxGroup : t.xqa_group && (t.xqa_fp8_cache || kXqaMinBlockFactor * t.xqa_gain_blocks >= sms)) return l;
  l.mmha = true;
  l.sequences = t.mmha_ctas;
  l.ctas = t.mmha_ctas * std::min(t.mmha_key_tiles, std::max(1.0, std::ceil(sms / t.mmha_ctas)));
  return l;
}

bool trtllm_decode_fuses_preprocessing(const HardwareSpec& hw, const Tiling& t, bool fp8_cache, bool xqa_hopper_kernel) {
  if (t.multi_query) return false;
  if (launch_shape(t, static_cast<double>(std::max<std::int64_t>(1, hw.sm_count))).mmha) return true;
  return hw.architecture == "hopper" && fp8_cache && xqa_hopper_kernel;
}

double longest_cta_flops(const Tiling& t, const LaunchShape& l) {
  if (!t.decode_kernel || l.mmha || !(t.ctas > 0) || !(l.ctas > t.ctas)) return t.longest_cta_flops;
  return t.longest_cta_flops * t.ctas / l.ctas;
}

namespace {

// FlashMLA's loop (get_mla_metadata.cu@287061ec:36-62), part by part over `sequences` sequences of n
// blocks each: a part finishes the sequence the previous one split (its rest and the overhead again),
// takes the whole sequences that fit, then a piece of the next where more than the overhead is left.
// The most sequences (or pieces of one) any part starts: a part that begins mid-sequence starts one
// more than the first; and the pieces of split sequences over all parts (each writes a partial output
// the combine kernel merges). The fits time each row thousands of times, so the last few thousand
// answers are kept per thread (a pure function of its four arguments).
struct PartPieces {
  double most = 0, split = 0;
};
PartPieces fullest_part_pieces(double n, double sequences, double parts, double payload) {
  struct Entry {
    double n = -1, sequences = -1, parts = -1, payload = -1;
    PartPieces pieces;
  };
  constexpr std::size_t kSlots = 4096;
  thread_local std::array<Entry, kSlots> memo{};
  const std::size_t slot = (std::hash<double>{}(n) ^ (std::hash<double>{}(sequences) * 31) ^ (std::hash<double>{}(parts) * 131) ^
                            (std::hash<double>{}(payload) * 1031)) % kSlots;
  Entry& e = memo[slot];
  if (e.n == n && e.sequences == sequences && e.parts == parts && e.payload == payload) return e.pieces;
  constexpr double o = kLatentOverheadBlocks;
  double most = 0, split = 0, done = 0, cur = 0;  // sequences dealt; blocks dealt of the next one
  for (double part = 0; part < parts && done < sequences; ++part) {
    double remain = payload, pieces = 0;
    if (cur > 0 && remain >= n - cur + o) remain -= n - cur + o, pieces = 1, split += 1, done += 1, cur = 0;  // a split one's last piece
    if (cur == 0) {
      const double whole = std::min(sequences - done, std::floor(remain / (n + o)));
      remain -= whole * (n + o), pieces += whole, done += whole;
    }
    if (done < sequences && remain - o > 0) cur += remain - o, pieces += 1, split += 1;  // a piece of one that does not fit
    most = std::max(most, pieces);
  }
  e = Entry{n, sequences, parts, payload, {most, split}};
  return e.pieces;
}

}  // namespace

std::optional<LatentPartition> latent_partition(const Tiling& t, double sms, bool split_kv) {
  if (!(t.latent_key_blocks > 0) || !(t.sequences > 0) || !(sms > 0)) return std::nullopt;
  constexpr double o = kLatentOverheadBlocks;
  LatentPartition p;
  const double tiles = std::max(1.0, t.latent_m_tiles);
  p.parts = split_kv ? std::floor(sms / tiles) : 0;
  if (!(p.parts >= 1)) {
    // Every sequence's own tiles are CTAs, in waves over the SMs (fmha_v2's unsplit kernel: each
    // tile's value slices).
    p.parts = 0;
    p.ctas = t.unsplit_ctas > 0 ? t.unsplit_ctas / (split_kv ? t.unsplit_slices : 1) : t.sequences * tiles;
    p.pieces = std::ceil(p.ctas / sms);
    return p;
  }
  p.ctas = p.parts * tiles;
  const double total = t.latent_key_blocks + o * t.sequences;
  p.payload = std::max(std::ceil(total / p.parts) + o, 2 * o);
  const PartPieces pp = fullest_part_pieces(t.latent_key_blocks / t.sequences, t.sequences, p.parts, p.payload);
  p.pieces = pp.most;
  p.split_pieces = pp.split;
  return p;
}

namespace {
// The pace (bytes/s) at which the family streams a set its GPU's L2 keeps, in the family's form
// (KernelEfficiency::l2_speedup over `dram`, or l2_bytes_per_sm_cycle over the SMs and clock); none
// where the family has no L2 term or the GPU lacks what its form needs.
std::optional<double> l2_pace(const KernelEfficiency& k, double dram, double sms, double sm_clock_hz) {
  if (k.l2_bytes_per_sm_cycle > 0)
    return sms > 0 && sm_clock_hz > 0 ? std::optional<double>{sms * sm_clock_hz * k.l2_bytes_per_sm_cycle} : std::nullopt;
  return k.l2_speedup != 1 ? std::optional<double>{dram * k.l2_speedup} : std::nullopt;
}
}  // namespace

bool fits_l2(const Op& op, const KernelEfficiency& k, Bytes l2, double sms, double sm_clock_hz) {
  return l2_pace(k, 1, sms, sm_clock_hz) && l2.value > 0 && !runs_unsplit(k, op.tiling) && op.bytes().value <= static_cast<double>(l2.value);
}

bool streams_at_mmha_fraction(const KernelEfficiency& k, bool mmha) { return mmha && k.eta_memory_mmha.has_value(); }

double eta_memory_for(const KernelEfficiency& k, bool mmha) { return streams_at_mmha_fraction(k, mmha) ? *k.eta_memory_mmha : k.eta_memory; }

bool computes_on_cuda_cores(const KernelEfficiency& k, bool mmha, double sms, double sm_clock_hz) {
  return mmha && k.mmha_flops_per_sm_cycle && sms > 0 && sm_clock_hz > 0;
}

double block_cost_scale(const Tiling& t, double sms, double sm_clock_hz) {
  if (!t.decode_kernel) return 1;
  return sms > 0 && sm_clock_hz > 0 ? kBlockCostClockHz / (sms * sm_clock_hz) : 0;
}

double block_rows_scale(double block_rows, const Tiling& t, bool mmha) {
  if (!t.decode_kernel || mmha || !(block_rows > 0)) return 1;
  return std::max(1.0, t.decode_block_rows / block_rows);
}

double fixed_cost_scale(const KernelEfficiency& k, double sm_clock_hz) {
  if (!k.fixed_at_sm_clock) return 1;
  return sm_clock_hz > 0 ? kBlockCostClockHz / sm_clock_hz : 0;
}

bool block_scaled_gemm(const Op& op, bool fp8) {
  const Tiling& t = op.tiling;
  return fp8 && op.fp8 && !op.fp8_per_tensor && t.gemm_m > 0 && t.gemm_n > 0 && t.gemm_k > 0;
}

GemmTile deepgemm_tile(double m, double n, double sms) {
  if (!(m > 0) || !(n > 0) || !(sms > 0)) return {};
  static constexpr std::array<double, 17> block_ns{16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 144, 160};
  auto tiles = [&](const GemmTile& b) { return std::ceil(m / b.m) * std::ceil(n / b.n); };
  auto waves = [&](const GemmTile& b) { return std::ceil(tiles(b) / sms); };
  auto last_wave = [&](const GemmTile& b) {
    const double r = std::fmod(tiles(b), sms);
    return r == 0 ? sms : r;
  };
  GemmTile best;
  for (const double bm : {64.0, 128.0, 256.0})
    for (const double bn : block_ns) {
      if (bm > 128 && bn > 128) continue;  // at least one side at most 128
      const GemmTile b{bm, bn};
      bool better = best.m == 0 || waves(b) < waves(best);
      if (best.m > 0 && waves(b) == waves(best)) {
        const double util = last_wave(b), best_util = last_wave(best);
        better = util > best_util;
        if (util == best_util)
          better = better || (bm == best.m && bn < best.n) || (bn == best.n && bm < best.m) || (bm != best.m && bn > best.n);
      }
      if (better) best = b;
    }
  return best;
}

Tiling launch_tiling(const Op& op, bool fp8, double sms) {
  Tiling t = op.tiling;
  if (!block_scaled_gemm(op, fp8)) return t;
  t.split_k = 1;
  if (const GemmTile b = deepgemm_tile(t.gemm_m, t.gemm_n, sms); b.m > 0) {
    t.ctas = std::ceil(t.gemm_m / b.m) * std::ceil(t.gemm_n / b.n);
    t.padded_flops = 2 * t.ctas * b.m * b.n * t.gemm_k;
  }
  return t;
}

CalibratedTime calibrated_time(const Op& op, const KernelEfficiency& k, FlopsPerSecond peak, BytesPerSecond bandwidth, double sms, double sm_clock_hz,
                               bool fp8, Bytes l2) {
  CalibratedTime t;
  const Tiling tl = launch_tiling(op, fp8, sms);
  const LaunchShape launch = launch_shape(tl, sms);
  const LaunchCosts costs = launch_costs(k, op.fp8_cache, launch.mmha);
  const double eta_c = eta_compute_for(k, fp8, op.fp8_per_tensor, op.deepgemm);
  const bool unsplit = runs_unsplit(k, tl);
  const double flops = unsplit ? tl.unsplit_flops : tl.padded_flops > 0 ? tl.padded_flops : op.flops.value;
  const double ctas = unsplit ? tl.unsplit_ctas : launch.ctas;
  t.waves = unsplit ? resident_wave_efficiency(ctas, sms, k.resident_ctas, k.solo_share) : wave_efficiency(ctas, sms);
  t.memory_waves = memory_wave_efficiency(ctas, sms, k.memory_reach);
  double compute = 0;
  if (computes_on_cuda_cores(k, launch.mmha, sms, sm_clock_hz)) {
    // MMHA: every query head's FLOPs on CUDA cores (no tensor-core tiles, so no padding).
    t.flops = op.flops.value;
    compute = t.flops / (sms * sm_clock_hz * *k.mmha_flops_per_sm_cycle * t.waves);
  } else {
    t.flops = flops;
    compute = flops / (peak.value * eta_c * t.waves);
    const double longest = longest_cta_flops(tl, launch);
    if (longest > 0 && sms > 0) compute = std::max(compute, longest / (peak.value / sms * eta_c));
    if (block_scaled_gemm(op, fp8)) {
      t.k_steps = std::ceil(tl.gemm_k / kScaledKStep);
      if (sm_clock_hz > 0) t.k_step_time = Seconds{t.k_steps * k.k_step.value * kBlockCostClockHz / sm_clock_hz};
      compute = std::max(compute, t.k_step_time.value);
    }
  }
  t.compute = Seconds{compute};
  if (unsplit) {
    // Every head tile's CTA reads its sequence's cache.
    t.bytes = tl.unsplit_bytes;
    double memory = tl.unsplit_bytes / (bandwidth.value * k.eta_memory * t.memory_waves);
    if (sms > 0) memory = std::max(memory, tl.unsplit_longest_bytes / (bandwidth.value * std::min(1.0, k.memory_reach / sms) * k.eta_memory));
    t.memory = Seconds{memory};
  }
  const std::optional<LatentPartition> part = latent_partition(tl, sms, k.split_kv);
  if (!unsplit) {
    // A split latent launch also writes each split sequence's pieces' partial outputs and its combine
    // kernel reads them back: at batch 1, 128 heads and 66 parts of H100's SMs, 35 MB, 11 µs.
    // A split XQA launch's blocks likewise write and read back their partial outputs.
    const double partials = part ? part->split_pieces * tl.latent_partial_bytes / tl.sequences : 0;  // no part: no split piece
    const double xqa_partials = tl.decode_kernel && !launch.mmha && launch.ctas > tl.ctas ? launch.ctas * tl.xqa_partial_bytes : 0;
    t.bytes = op.bytes().value + partials + xqa_partials;
    t.l2_resident = fits_l2(op, k, l2, sms, sm_clock_hz);
    const double dram = bandwidth.value * eta_memory_for(k, launch.mmha);
    const double pace = t.l2_resident ? *l2_pace(k, dram, sms, sm_clock_hz) : dram;
    t.memory = Seconds{t.bytes / (pace * t.memory_waves)};
  }
  t.serial = k.serial_memory;
  t.launches = tl.kernel_launches();
  t.mmha = launch.mmha;
  t.cta_waves = ctas > 0 && sms > 0 ? std::ceil(ctas / sms) : 0;
  // A GQA decode family whose block cost overlaps the streaming pays it per CTA of the launch (its
  // keys' splits included) beyond its first wave, in whole waves: the first wave's blocks run side by
  // side within the launch's fixed cost (H100's XQA over 2-16 keys: 8.4 µs for 8 blocks, 10.6 µs for
  // 128, then 4.8 µs more per wave of 132 to 83 µs for 2,048), so a launch of one wave or less pays
  // none; latent attention per sequence its busiest SM starts either way.
  if (part)
    t.sequences = part->pieces;
  else if (!k.sequences_overlap)
    t.sequences = launch.sequences;
  else
    t.sequences = tl.decode_kernel ? std::max(0.0, t.cta_waves - 1) * sms : ctas;
  const double cta_cost = t.cta_waves * k.per_cta.value;
  if (k.cta_overlap) t.ctas = Seconds{t.launches * cta_cost};
  const double fixed_ctas = k.cta_overlap ? 0 : cta_cost;
  t.rows_scale = block_rows_scale(costs.block_rows, tl, launch.mmha);
  t.sequence_scale = block_cost_scale(tl, sms, sm_clock_hz) * t.rows_scale;
  const double per_sequence = costs.per_sequence.value * t.sequence_scale;
  t.fixed_scale = fixed_cost_scale(k, sm_clock_hz);
  const double fixed = costs.fixed.value * t.fixed_scale;
  if (k.sequences_overlap) {
    t.fixed = Seconds{t.launches * (fixed + fixed_ctas)};
    t.blocks = Seconds{t.launches * t.sequences * per_sequence};
  } else {
    t.fixed = Seconds{t.launches * (fixed + t.sequences * per_sequence + fixed_ctas)};
  }
  return t;
}

}  // namespace mlaplan
