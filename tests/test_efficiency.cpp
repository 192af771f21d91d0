// Calibrated time (issue 10): the kernel-efficiency model's arithmetic, the tiles the paths declare,
// the profiles as data (strict, with provenance, never fitted on the held-out H20 and H200), the
// transfer rule that picks a GPU's profile, and the CLI's calibrated default with --sol beside it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "mlaplan/core/efficiency.hpp"
#include "mlaplan/core/explain.hpp"
#include "mlaplan/core/feasibility.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/io/efficiency_json.hpp"
#include "mlaplan/io/hardware_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

using namespace mlaplan;
using nlohmann::json;

namespace {

json minimal_profile() {
  return json::parse(R"({
    "profile": "hopper", "scope": "architecture", "architecture": "hopper", "written_by": "test",
    "fitted_on": [{"gpu": "H100 SXM5 80GB", "file": "a.csv", "kernel": "absorbed_decode", "rows": 10, "source": "somewhere", "licence": "MIT"}],
    "kernels": {"absorbed_decode": {"fixed_s": 1e-5, "per_sequence_s": 5e-8, "eta_compute": 0.5, "eta_memory": 0.8, "rows": 10}}
  })");
}

// The absorb path's latent attention op for a batch of groups on TP ranks.
Op latent_attention(const ModelSpec& m, std::int64_t tp, std::vector<SequenceGroup> groups) {
  Workload w;
  w.par.tp = tp;
  w.groups = std::move(groups);
  const PathPlan p = mla_path(m, w, PathKind::absorb);
  const Op* att = p.find(OpId::latent_attention_mqa);
  REQUIRE(att);
  return *att;
}

// A roofline for `hw` under `p` as if its file (my-gpu.json) gave no SM clock.
Roofline roofline_without_clock(HardwareSpec hw, const EfficiencyProfile& p) {
  hw.sm_clock_hz = 0;
  hw.source = "my-gpu.json";
  return roofline_for(hw, DType::bf16, p);
}

std::string refusal(const json& j) {
  try {
    parse_efficiency_profile(j, "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("calibrated time: fixed costs plus the slower of compute and memory in waves", "[efficiency]") {
  Op op;
  op.id = OpId::latent_attention_mqa;
  op.flops = Flops{1e12};
  op.bytes_read = BytesF{1e9};
  op.tiling.ctas = 200;
  op.tiling.sequences = 32;
  KernelEfficiency k{.fixed = Seconds{10e-6}, .per_sequence = Seconds{50e-9}, .eta_compute = 0.5, .eta_compute_fp8 = std::nullopt, .eta_compute_fp8_tensor = std::nullopt,
                     .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt, .eta_memory = 0.8, .rows = 1};
  // w = 200 / (⌈200 / 132⌉ · 132) = 200 / 264.
  CHECK(wave_efficiency(200, 132) == Approx(200.0 / 264));
  const CalibratedTime t = calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, false, Bytes{0});
  CHECK(t.fixed.value == Approx(10e-6 + 32 * 50e-9));                 // 11.6 µs
  CHECK(t.compute.value == Approx(1e12 * 264 / (1000e12 * 0.5 * 200)));  // 2.64 ms
  CHECK(t.memory.value == Approx(1e9 * 264 / (4.8e12 * 0.8 * 200)));     // 343.75 µs
  CHECK(t.time().value == Approx(2.64e-3 + 11.6e-6));
  // The longest CTA bounds a launch: 2e10 FLOPs on one SM at 1000/132 TFLOP/s · 0.5 = 5.28 ms.
  op.tiling.longest_cta_flops = 2e10;
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, false, Bytes{0}).compute.value == Approx(5.28e-3));
  // Padded tiles count: four times the FLOPs, four times the compute time.
  op.tiling.longest_cta_flops = 0;
  op.tiling.padded_flops = 4e12;
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, false, Bytes{0}).compute.value == Approx(4 * 2.64e-3));
  // Launches repeat the fixed costs (a chunk loop).
  op.tiling.launches = 3;
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, false, Bytes{0}).fixed.value == Approx(3 * 11.6e-6));
  // An fp8 kernel runs at its own fraction of the (fp8) peak it is given, where the family has one.
  op.tiling.padded_flops = 0;
  CHECK(calibrated_time(op, k, FlopsPerSecond{2000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, true, Bytes{0}).compute.value == Approx(1e12 * 264 / (2000e12 * 0.5 * 200)));
  k.eta_compute_fp8 = 0.25;
  CHECK(calibrated_time(op, k, FlopsPerSecond{2000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, true, Bytes{0}).compute.value == Approx(2.64e-3));
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, false, Bytes{0}).compute.value == Approx(2.64e-3));
  // A per-tensor fp8 GEMM: the block-scaled fraction where the family has no per-tensor one, its own
  // where it does (1e12 · 264 / (2000e12 · 0.4 · 200) = 1.65 ms); bf16 and block-scaled ops keep theirs.
  op.fp8_per_tensor = true;
  CHECK(calibrated_time(op, k, FlopsPerSecond{2000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, true, Bytes{0}).compute.value == Approx(2.64e-3));
  k.eta_compute_fp8_tensor = 0.4;
  CHECK(calibrated_time(op, k, FlopsPerSecond{2000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, true, Bytes{0}).compute.value == Approx(1.65e-3));
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, false, Bytes{0}).compute.value == Approx(2.64e-3));
  op.fp8_per_tensor = false;
  CHECK(calibrated_time(op, k, FlopsPerSecond{2000e12}, BytesPerSecond{4.8e12}, 132, 1.98e9, true, Bytes{0}).compute.value == Approx(2.64e-3));
  CHECK(eta_compute_for(k, true, true) == 0.4);
  CHECK(eta_compute_for(k, true, false) == 0.25);
  CHECK(eta_compute_for(k, false, true) == 0.5);
}

namespace {

// A GQA decode launch of 8 XQA blocks (4 sequences x 2 KV heads, 8 query heads each), each
// sequence's keys split in 16, and its MMHA fallback of 64 blocks over `mmha_key_tiles` loops.
Tiling xqa_tiling(double mmha_key_tiles) {
  Tiling t;
  t.decode_kernel = true;
  t.xqa_group = true;
  t.split_k = 16;
  t.ctas = 8;
  t.sequences = 8;
  t.xqa_gain_blocks = 8 * 32;
  t.mmha_ctas = 64;
  t.mmha_key_tiles = mmha_key_tiles;
  return t;
}

// An attention op over xqa_tiling(1) (XQA's 8 blocks, MMHA's 64) streaming `bytes`.
Op xqa_decode_op(double bytes) {
  Op op;
  op.id = OpId::attention;
  op.bytes_read = BytesF{bytes};
  op.tiling = xqa_tiling(1);
  return op;
}

// A decode family: 5 µs fixed, per block one SM's 40 ns (XQA) or 10 ns (MMHA) at 1 GHz, carried over
// H100's 132 SMs at 1,980 MHz (block_cost_scale); η_m 1, and 128 CTAs stream at the full wave's rate
// (memory reach 2: w_m = 1).
KernelEfficiency xqa_mmha_family() {
  constexpr double sm_ghz = 132 * 1.98;
  KernelEfficiency k;
  k.fixed = Seconds{5e-6};
  k.per_sequence = Seconds{40e-9 * sm_ghz};
  k.per_sequence_mmha = Seconds{10e-9 * sm_ghz};
  k.eta_memory = 1;
  k.memory_reach = 2;
  return k;
}

}  // namespace

TEST_CASE("GQA decode runs TensorRT-LLM's dispatch: XQA's multi-block count, else MMHA", "[efficiency][example]") {
  // XQA's blocks per sequence: one per 128 keys, at most round(sqrt(8 x that)), at least one.
  CHECK(decode_blocks_per_sequence(2) == 1);
  CHECK(decode_blocks_per_sequence(127) == 1);
  CHECK(decode_blocks_per_sequence(1024) == 8);     // 8, and round(sqrt(64)) = 8
  CHECK(decode_blocks_per_sequence(4096) == 16);    // 32 cut to round(sqrt(256))
  CHECK(decode_blocks_per_sequence(65536) == 64);   // 512 cut to round(sqrt(4096))
  // 8 blocks (4 sequences x 2 KV heads) x 16 = 128 CTAs, under 8 waves of 132 SMs: all 16 kept.
  Tiling t = xqa_tiling(33);
  CHECK(launched_ctas(t, 132) == 128);
  // Exactly 8 waves: no cut (66 blocks x 16 = 1,056 = 8 x 132).
  t.ctas = 66;
  CHECK(launched_ctas(t, 132) == 66 * 16);
  t.ctas = 8;
  LaunchShape l = launch_shape(t, 132);
  CHECK_FALSE(l.mmha);
  CHECK(l.ctas == 128);
  CHECK(l.sequences == 8);
  // 128 blocks x 16 = 15.5 waves: cut by 15.5 / 8 to floor(16 / 1.94) = 8 blocks per sequence.
  t.ctas = 128;
  CHECK(launched_ctas(t, 132) == 128 * 8);
  // 1,024 blocks: cut to one.
  t.ctas = 1024;
  CHECK(launched_ctas(t, 132) == 1024);
  // Too few blocks for XQA to gain (4 x 2 x 1 x 16 < 132: short keys): MMHA, a block per query head
  // and sequence, its keys split up to one wave, each block paying the per-sequence cost.
  t.ctas = 8;
  t.xqa_gain_blocks = 8;
  t.mmha_key_tiles = 1;
  l = launch_shape(t, 132);
  CHECK(l.mmha);
  CHECK(l.ctas == 64);
  CHECK(l.sequences == 64);
  t.mmha_key_tiles = 33;
  CHECK(launch_shape(t, 132).ctas == 64 * 3);  // ⌈132 / 64⌉ tiles
  t.mmha_key_tiles = 2;
  CHECK(launch_shape(t, 132).ctas == 64 * 2);  // no more tiles than 128-key loops
  // XQA once 4 x its blocks reach the SMs: 33 x 4 = 132.
  t.xqa_gain_blocks = 33;
  CHECK_FALSE(launch_shape(t, 132).mmha);
  t.xqa_gain_blocks = 32.5;
  CHECK(launch_shape(t, 132).mmha);
  // Over an fp8 cache XQA runs however few its blocks (MMHA does not take an E4M3 cache under 16-bit
  // queries): the 8 blocks of 16 CTAs each, not 64 MMHA blocks.
  t.xqa_fp8_cache = true;
  l = launch_shape(t, 132);
  CHECK_FALSE(l.mmha);
  CHECK(l.ctas == 8 * 16);
  CHECK(l.sequences == 8);
  t.xqa_fp8_cache = false;
  // A head group without an XQA kernel (1, or more than 32) runs MMHA however many blocks.
  t.xqa_gain_blocks = 1e6;
  CHECK_FALSE(launch_shape(t, 132).mmha);
  t.xqa_group = false;
  CHECK(launch_shape(t, 132).mmha);
  // Calibrated time pays the per-sequence cost per MMHA block: 5 µs + 64 x 10 ns. A decode block's
  // cost is stated as one SM's time at 1 GHz, and spreads over H100's 132 SMs at 1,980 MHz: 2,613.6
  // ns (cycles) is 10 ns a block there.
  constexpr double sm_ghz = 132 * 1.98;
  CHECK(block_cost_scale(t, 132, 1.98e9) == Approx(1 / sm_ghz));
  Op op;
  op.id = OpId::attention;
  op.bytes_read = BytesF{1e3};
  op.tiling = t;
  KernelEfficiency k{.fixed = Seconds{5e-6}, .per_sequence = Seconds{10e-9 * sm_ghz}, .eta_compute = 0.5, .eta_compute_fp8 = std::nullopt,
                     .eta_compute_fp8_tensor = std::nullopt,
                     .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt, .eta_memory = 0.8, .rows = 1};
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{3e12}, 132, 1.98e9, false, Bytes{0}).fixed.value == Approx(5e-6 + 64 * 10e-9));
  // ... and XQA per block of its grid, one per sequence and KV head: 5 µs + 8 x 10 ns.
  op.tiling.xqa_group = true;
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{3e12}, 132, 1.98e9, false, Bytes{0}).fixed.value == Approx(5e-6 + 8 * 10e-9));
  // Over an fp8 cache the family's fp8-cache kernel costs where it has them: 2 µs + 8 x 4 ns; a
  // bf16-cache op keeps 5 µs + 8 x 10 ns, and a family without them times both alike.
  op.fp8_cache = true;
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{3e12}, 132, 1.98e9, false, Bytes{0}).fixed.value == Approx(5e-6 + 8 * 10e-9));
  k.fixed_fp8_cache = Seconds{2e-6};
  k.per_sequence_fp8_cache = Seconds{4e-9 * sm_ghz};
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{3e12}, 132, 1.98e9, false, Bytes{0}).fixed.value == Approx(2e-6 + 8 * 4e-9));
  op.tiling.xqa_group = false;  // MMHA's fp8-cache instantiation: per block, one per query head and sequence
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{3e12}, 132, 1.98e9, false, Bytes{0}).fixed.value == Approx(2e-6 + 64 * 4e-9));
  op.fp8_cache = false;
  CHECK(calibrated_time(op, k, FlopsPerSecond{1000e12}, BytesPerSecond{3e12}, 132, 1.98e9, false, Bytes{0}).fixed.value == Approx(5e-6 + 64 * 10e-9));
  CHECK(launch_costs(k, true).fixed.value == 2e-6);
  CHECK(launch_costs(k, false).per_sequence.value == 10e-9 * sm_ghz);
  // Hopper runs another kernel over an fp8 cache (QGMMA), Blackwell its TRTLLM-GEN kernel over any
  // cache but MMHA's head groups, with the blocks' costs of the second pair; an Ampere GPU the first
  // kernel everywhere: its roofline drops the pair, and a Blackwell GPU's keeps both.
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  const HardwareSpec h20 = load_gpu("h20"), b200 = load_gpu("b200"), a100 = load_gpu("a100");
  const Roofline hopper = roofline_for(load_gpu("h100"), DType::bf16, prof), blackwell = roofline_for(b200, DType::bf16, prof),
                 ampere = roofline_for(a100, DType::bf16, prof);
  CHECK(gqa_decode_cost_pair(h20) == DecodeCostPair::fp8_cache);
  CHECK(gqa_decode_cost_pair(b200) == DecodeCostPair::every_launch);
  CHECK(gqa_decode_cost_pair(a100) == DecodeCostPair::none);
  CHECK(pays_second_decode_pair(gqa_decode_cost_pair(h20), true, false));
  CHECK_FALSE(pays_second_decode_pair(gqa_decode_cost_pair(h20), false, false));
  CHECK(pays_second_decode_pair(gqa_decode_cost_pair(b200), false, false));
  CHECK(pays_second_decode_pair(gqa_decode_cost_pair(b200), true, false));
  CHECK_FALSE(pays_second_decode_pair(gqa_decode_cost_pair(b200), true, true));  // MMHA: the family's own
  CHECK_FALSE(pays_second_decode_pair(gqa_decode_cost_pair(a100), true, false));
  const auto& on_hopper = *hopper.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)];
  const auto& on_blackwell = *blackwell.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)];
  const auto& on_ampere = *ampere.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)];
  CHECK(on_hopper.fixed_fp8_cache.has_value());
  CHECK(on_hopper.fixed.value == 5e-6);
  CHECK(on_blackwell.fixed_fp8_cache.has_value());
  CHECK(on_blackwell.fixed.value == 5e-6);
  CHECK(on_blackwell.per_sequence.value == 10e-9 * sm_ghz);
  CHECK_FALSE(on_ampere.fixed_fp8_cache.has_value());
  CHECK(on_ampere.fixed.value == 5e-6);
  CHECK(on_ampere.per_sequence.value == 10e-9 * sm_ghz);
  k.per_sequence_fp8_cache.reset();  // half a pair is never used
  CHECK(launch_costs(k, true).fixed.value == 5e-6);
  // Not a decode kernel: the tiles and split-K of any other op, unchanged.
  t = Tiling{};
  t.ctas = 8;
  t.split_k = 16;
  t.sequences = 4;
  CHECK(launched_ctas(t, 132) == 8 * 16);
  CHECK(launch_shape(t, 132).sequences == 4);
  t.split_k = 64;
  CHECK(launched_ctas(t, 132) == 8 * 17);  // up to ⌈132 / 8⌉ slices
}

TEST_CASE("MMHA's own cost per block, and a block cost that overlaps the streaming", "[efficiency][example]") {
  // 4 sequences x 2 KV heads = 8 XQA blocks, each sequence's keys split in 16: 128 CTAs on 132 SMs;
  // MMHA (16 query heads: 64 blocks) where XQA does not gain.
  Op op = xqa_decode_op(3e6);  // 1 µs at 3 TB/s and η_m 1
  KernelEfficiency k = xqa_mmha_family();
  constexpr double sm_ghz = 132 * 1.98;
  const auto at = [&](const Op& o) { return calibrated_time(o, k, FlopsPerSecond{1000e12}, BytesPerSecond{3e12}, 132, 1.98e9, false, Bytes{0}); };
  // Added: XQA pays 5 µs + 8 x 40 ns + 1 µs; MMHA its own 10 ns per block: 5 µs + 64 x 10 ns + 1 µs.
  CHECK(at(op).time().value == Approx(5e-6 + 8 * 40e-9 + 1e-6));
  Op mmha = op;
  mmha.tiling.xqa_gain_blocks = 8;
  REQUIRE(launch_shape(mmha.tiling, 132).mmha);
  CHECK(at(mmha).fixed.value == Approx(5e-6 + 64 * 10e-9));
  CHECK(launch_costs(k, false, true).mmha);
  CHECK_FALSE(launch_costs(k, false, false).mmha);
  // Over an fp8 cache with the family's fp8-cache pair, the pair (MMHA's fp8 instantiation too).
  k.fixed_fp8_cache = Seconds{2e-6};
  k.per_sequence_fp8_cache = Seconds{4e-9 * sm_ghz};
  mmha.fp8_cache = true;
  CHECK(at(mmha).fixed.value == Approx(2e-6 + 64 * 4e-9));
  // In the max: the launch's 128 CTAs (its keys' splits included) are one wave, run within the fixed
  // cost: no block is paid for, 5 µs + max(1 µs, 0) = 6 µs.
  k.sequences_overlap = true;
  const CalibratedTime one_wave = at(op);
  CHECK(one_wave.sequences == 0);
  CHECK(one_wave.blocks.value == 0);
  CHECK(one_wave.time().value == Approx(5e-6 + 1e-6));
  // 40 blocks (20 sequences x 2 KV heads) x 16 = 640 CTAs, under 8 waves of 132: 5 waves, each CTA
  // beyond the first wave's 132 costing 40 ns in whole waves: 4 x 132 = 528 blocks, 21.12 µs that the
  // 1 µs of streaming overlaps: 5 µs + max(1 µs, 21.12 µs) = 26.12 µs.
  op.tiling.ctas = 40;
  op.tiling.sequences = 40;
  const CalibratedTime c = at(op);
  CHECK(c.sequences == 528);
  CHECK(c.fixed.value == Approx(5e-6));
  CHECK(c.blocks.value == Approx(528 * 40e-9));
  CHECK(c.time().value == Approx(5e-6 + 528 * 40e-9));
  // ... and where the streaming is longer the blocks hide under it: 30 µs of bytes, 35 µs in all.
  op.bytes_read = BytesF{90e6};
  CHECK(at(op).time().value == Approx(5e-6 + 30e-6));
  // The planner's op time and its terms say the same.
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  Roofline rf = roofline_for(load_gpu("h100"), DType::bf16, prof);
  op.id = OpId::attention;
  const OpTime ot = op_time(op, rf);
  REQUIRE(ot.calibrated);
  CHECK(ot.time.value == Approx((ot.fixed + std::max({ot.compute, ot.memory, ot.blocks})).value));
  CHECK(ot.blocks.value > 0);
}

TEST_CASE("A GQA decode block of more query rows than its cost covers costs more, in proportion", "[efficiency][example]") {
  // 4 sequences x 2 KV heads = 8 XQA blocks (128 CTAs with the keys' splits), 32 query heads per KV
  // head; MMHA's 64 blocks where XQA does not gain.
  Tiling t = xqa_tiling(1);
  t.decode_block_rows = 32;
  Op op;
  op.id = OpId::attention;
  op.bytes_read = BytesF{3e6};  // 1 µs at 3 TB/s
  op.tiling = t;
  KernelEfficiency k;
  k.fixed = Seconds{5e-6};
  constexpr double sm_ghz = 132 * 1.98;  // H100's SMs at 1,980 MHz (block_cost_scale)
  k.per_sequence = Seconds{40e-9 * sm_ghz};
  k.per_sequence_mmha = Seconds{10e-9 * sm_ghz};
  k.eta_memory = 1;
  k.memory_reach = 2;
  const auto at = [&](const Op& o) { return calibrated_time(o, k, FlopsPerSecond{1000e12}, BytesPerSecond{3e12}, 132, 1.98e9, false, Bytes{0}); };
  // None fitted: 40 ns a block whatever its rows, 5 µs + 8 x 40 ns + 1 µs.
  CHECK(at(op).time().value == Approx(5e-6 + 8 * 40e-9 + 1e-6));
  // A block's cost covers 8 rows: a block of 32 costs 4 x 40 ns, 5 µs + 8 x 160 ns + 1 µs = 7.28 µs.
  k.block_query_rows = 8;
  CHECK(block_rows_scale(8, op.tiling, false) == 4);
  CHECK(at(op).sequence_scale == Approx(4 / sm_ghz));
  CHECK(at(op).time().value == Approx(7.28e-6));
  // A block of no more rows than its cost covers costs it: 8 or 4 rows alike.
  for (const double rows : {8.0, 4.0}) {
    Op narrow = op;
    narrow.tiling.decode_block_rows = rows;
    CHECK(at(narrow).time().value == Approx(5e-6 + 8 * 40e-9 + 1e-6));
  }
  // MMHA's blocks (one per query head) and prompt kernels are not scaled.
  Op mmha = op;
  mmha.tiling.xqa_gain_blocks = 8;
  REQUIRE(launch_shape(mmha.tiling, 132).mmha);
  CHECK(at(mmha).fixed.value == Approx(5e-6 + 64 * 10e-9));
  CHECK(block_rows_scale(8, mmha.tiling, true) == 1);
  Tiling prompt = t;
  prompt.decode_kernel = false;
  CHECK(block_rows_scale(8, prompt, false) == 1);
  // Over an fp8 cache the pair's own rows where fitted (16: twice 4 ns), else the family's (8: 4x).
  k.fixed_fp8_cache = Seconds{2e-6};
  k.per_sequence_fp8_cache = Seconds{4e-9 * sm_ghz};
  Op fp8 = op;
  fp8.fp8_cache = true;
  CHECK(launch_costs(k, true).block_rows == 8);
  CHECK(at(fp8).fixed.value == Approx(2e-6 + 8 * 4 * 4e-9));
  k.block_query_rows_fp8_cache = 16;
  CHECK(launch_costs(k, true).block_rows == 16);
  CHECK(launch_costs(k, false).block_rows == 8);
  CHECK(at(fp8).fixed.value == Approx(2e-6 + 8 * 2 * 4e-9));
  // The planner's rooflines: Hopper and Blackwell keep both (QGMMA over an fp8 cache; TRTLLM-GEN over
  // any), and Ampere has no pair.
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  const auto decode_of = [&](const char* gpu) { return *roofline_for(load_gpu(gpu), DType::bf16, prof).kernels[static_cast<std::size_t>(KernelFamily::attention_decode)]; };
  CHECK(decode_of("h100").block_query_rows == 8);
  CHECK(decode_of("h100").block_query_rows_fp8_cache == 16);
  CHECK(decode_of("b200").block_query_rows == 8);
  CHECK(decode_of("b200").block_query_rows_fp8_cache == 16);
  CHECK(decode_of("a100").block_query_rows == 8);
  CHECK_FALSE(decode_of("a100").block_query_rows_fp8_cache.has_value());
  // The planner's op time pays it too.
  Roofline rf = roofline_for(load_gpu("h100"), DType::bf16, prof);
  const OpTime ot = op_time(op, rf);
  REQUIRE(ot.calibrated);
  CHECK(ot.fixed.value == Approx(5e-6 + 8 * 4 * 40e-9));
  // ... and its explanation says the scale and gives the same number.
  const ExplainStep e = explain_op_time("attention", op, rf, ot);
  CHECK(e.number() == Approx(ot.time.value));
  CHECK(e.formula.find(" · 32 / 8 (its block's query rows over the rows a block's cost covers)") != std::string::npos);
}

TEST_CASE("An engine without XQA (TensorRT-LLM 0.5) times a GQA decode launch as MMHA's", "[efficiency][example]") {
  // 4 sequences x 2 KV heads: XQA's 8 blocks (its gain blocks reach a quarter of H100's 132 SMs), or
  // MMHA's 64, one per query head and sequence (group 8). Per block 40 ns (XQA) and 10 ns (MMHA) of
  // one SM at 1 GHz, carried to H100's 132 SMs at 1,980 MHz; 1 µs of streaming at η_m 1 for XQA's 128 CTAs.
  const Op op = xqa_decode_op(3.35e6);  // 1 µs at H100's 3.35 TB/s
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = xqa_mmha_family();
  Roofline rf = roofline_for(load_gpu("h100"), DType::bf16, prof);
  REQUIRE(rf.decode.xqa);  // every engine but those that say otherwise
  CHECK_FALSE(as_launched(op, rf).has_value());
  const OpTime xqa = op_time(op, rf);
  CHECK(xqa.time.value == Approx(5e-6 + 8 * 40e-9 + 1e-6));
  // Without XQA: 5 µs + 64 x 10 ns, and MMHA's 64 CTAs, under half the SMs, stream at 64 / 66 of the
  // full rate (reach 2: w_m = 64 / max(64, 132 / 2)): 1.03125 µs.
  rf.decode.xqa = false;
  const std::optional<Op> launched = as_launched(op, rf);
  REQUIRE(launched.has_value());
  CHECK_FALSE(launched->tiling.xqa_group);
  CHECK(launch_shape(launched->tiling, 132).mmha);
  const OpTime mmha = op_time(op, rf);
  CHECK(mmha.time.value == Approx(5e-6 + 64 * 10e-9 + 1.03125e-6));
  // Over an fp8 cache XQA's QGMMA takes any batch, however few its blocks; 0.5 had MMHA alone.
  Op fp8 = op;
  fp8.fp8_cache = true;
  fp8.tiling.xqa_fp8_cache = true;
  fp8.tiling.xqa_gain_blocks = 8;
  rf.decode.xqa = true;
  CHECK_FALSE(launch_shape(fp8.tiling, 132).mmha);
  rf.decode.xqa = false;
  CHECK(op_time(fp8, rf).time.value == Approx(5e-6 + 64 * 10e-9 + 1.03125e-6));
  // The explanation times the same launch.
  const ExplainStep e = explain_op_time("attention", op, rf, mmha);
  CHECK(e.number() == Approx(mmha.time.value));
  CHECK(e.formula.find("MMHA (the engine has no XQA)") != std::string::npos);
  // A speculative step's XQA kernels and a prompt are no XQA-or-MMHA choice: as they are.
  Op spec = op;
  spec.tiling.multi_query = true;
  CHECK_FALSE(as_launched(spec, rf).has_value());
  Op prompt = op;
  prompt.tiling.decode_kernel = false;
  CHECK_FALSE(as_launched(prompt, rf).has_value());
  // The speed-of-light bound keeps the engine's kernels, and the head group its XQA takes.
  CHECK_FALSE(speed_of_light(rf).decode.xqa);
  rf.decode.xqa_only_group = 8;
  CHECK(speed_of_light(rf).decode.xqa_only_group == 8);
}

TEST_CASE("A GQA decode block costs SM cycles: one fitted cost carries between GPUs by SMs and clock", "[efficiency][example]") {
  // 4 sequences x 2 KV heads over 2 keys: XQA's 8 blocks.
  Tiling t = xqa_tiling(1);
  t.xqa_group = true;
  t.xqa_gain_blocks = 1e6;
  const HardwareSpec h100 = load_gpu("h100"), a100 = load_gpu("a100");
  // One SM's time at 1 GHz over the GPU's SMs and clock: H100 132 x 1.98 GHz, A100 108 x 1.41 GHz.
  CHECK(block_cost_scale(t, 132, h100.sm_clock_hz) == Approx(1 / 261.36));
  CHECK(block_cost_scale(t, 108, a100.sm_clock_hz) == Approx(1 / 152.28));
  // Unknown SMs or clock: no block cost at all (roofline_for keeps such a GPU off the family).
  CHECK(block_cost_scale(t, 132, 0) == 0);
  CHECK(block_cost_scale(t, 0, 1.98e9) == 0);
  // Not a decode kernel: costs per sequence as fitted.
  Tiling prompt = t;
  prompt.decode_kernel = false;
  CHECK(block_cost_scale(prompt, 132, 1.98e9) == 1);
  // The fitted costs per block these were read from: H100's 37.58 ns a block (hopper profile before
  // the clock, bf16 cache) is 9,822 cycles; A100's 61.31 ns 9,336. A cost of 9,822 cycles predicts
  // A100's block at 64.5 ns, 5% above its own fit, where the same time per block (37.58 ns) would be
  // 39% below it.
  Op op;
  op.id = OpId::attention;
  op.bytes_read = BytesF{1e3};
  op.tiling = t;
  KernelEfficiency k;
  k.fixed = Seconds{8e-6};
  k.per_sequence = Seconds{37.58e-9 * 261.36};
  k.eta_compute = 0.5;
  k.eta_memory = 0.8;
  const CalibratedTime on_h100 = calibrated_time(op, k, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, 132, h100.sm_clock_hz, false, Bytes{0});
  const CalibratedTime on_a100 = calibrated_time(op, k, *a100.peak_flops(DType::bf16), a100.memory_bandwidth, 108, a100.sm_clock_hz, false, Bytes{0});
  CHECK(on_h100.sequences == 8);
  CHECK(on_h100.fixed.value == Approx(8e-6 + 8 * 37.58e-9));
  CHECK(on_a100.fixed.value == Approx(8e-6 + 8 * 37.58e-9 * 261.36 / 152.28));
  CHECK(37.58e-9 * 261.36 / 152.28 == Approx(64.50e-9).epsilon(1e-3));
  // A roofline for a GPU whose file gives no clock cannot time the family's blocks: the family is
  // dropped (speed of light for its ops), and the profile's description says why.
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  prof.kernels[static_cast<std::size_t>(KernelFamily::gemm)] = k;
  const Roofline rf = roofline_without_clock(h100, prof);
  CHECK_FALSE(rf.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)].has_value());
  CHECK(rf.kernels[static_cast<std::size_t>(KernelFamily::gemm)].has_value());
  CHECK_THAT(rf.eta_source, Catch::Contains("attention_decode at speed of light: my-gpu.json gives no sm_boost_clock_mhz"));
  CHECK(roofline_for(h100, DType::bf16, prof).kernels[static_cast<std::size_t>(KernelFamily::attention_decode)].has_value());
}

namespace {

// A GQA decode attention op of `flops` and `bytes` whose launch no head group's XQA kernel takes:
// `ctas` (sequence, KV head) blocks split `split_k` ways for XQA, `mmha_ctas` MMHA blocks of 32 key tiles.
Op mmha_decode_op(double flops, double bytes, double ctas, double split_k, double mmha_ctas) {
  Op op;
  op.id = OpId::attention;
  op.flops = Flops{flops};
  op.bytes_read = BytesF{bytes};
  op.tiling.decode_kernel = true;
  op.tiling.xqa_group = false;
  op.tiling.ctas = ctas;
  op.tiling.sequences = ctas;
  op.tiling.split_k = split_k;
  op.tiling.mmha_ctas = mmha_ctas;
  op.tiling.mmha_key_tiles = 32;
  return op;
}

// Each bundled GQA/MHA model's decode attention at TP 1, 1 and 64 sequences of 2 to 131,071 keys:
// fn(model, keys, sequences, workload, attention op).
template <class Fn>
void for_each_gqa_decode(Fn fn) {
  for (const ModelSpec& m : test::all_models()) {
    if (m.is_mla()) continue;
    for (std::int64_t keys : {2, 512, 8191, 131071})
      for (std::int64_t b : {1, 64}) {
        Workload w;
        w.par.tp = 1;
        w.groups = {SequenceGroup{b, 1, static_cast<double>(keys - 1)}};
        for (const Op& op : standard_path(m, w))
          if (op.id == OpId::attention) fn(m, keys, b, w, op);
      }
  }
}

}  // namespace

TEST_CASE("MMHA computes on CUDA cores at its own FLOPs per SM cycle", "[efficiency][example]") {
  // H100's TP1 row of 64 query heads over one KV head (no XQA kernel above a group of 32), 64
  // sequences of 4,096 keys, head size 128 in bf16: F = 64 x 4,096 x 64 x 4 x 128 = 8,589,934,592 FLOP,
  // B = 64 x 4,096 x 2 x 128 x 2 = 134,217,728 bytes. MMHA: one block per query head and sequence,
  // 4,096 CTAs (more than the SMs: no key tiles), w = 4,096 / (32 x 132) = 0.969697.
  Op op = mmha_decode_op(8589934592.0, 134217728.0, 64, 16, 4096);
  op.tiling.xqa_gain_blocks = 64 * 32;
  REQUIRE(launch_shape(op.tiling, 132).mmha);
  REQUIRE(launch_shape(op.tiling, 132).ctas == 4096);
  KernelEfficiency k;
  k.eta_compute = 1;
  k.eta_memory = 0.8;
  k.mmha_flops_per_sm_cycle = 25;
  const FlopsPerSecond tensor{989.4e12};
  const BytesPerSecond bw{3.35e12};
  // On CUDA cores: 8,589,934,592 / (132 SMs x 1.98 GHz x 25 FLOP/cycle x 0.969697) = 1.35573 ms,
  // against the bytes' 134,217,728 / (3.35 TB/s x 0.8 x 0.969697) = 51.65 µs (w_m = w at a reach of
  // 1); the row measured 1,261 µs (1,265 over an fp8 cache).
  const CalibratedTime c = calibrated_time(op, k, tensor, bw, 132, 1.98e9, false, Bytes{0});
  CHECK(c.compute.value == Approx(8589934592.0 / (132 * 1.98e9 * 25 * (4096.0 / 4224.0))));
  CHECK(c.compute.value == Approx(1.35573e-3).epsilon(1e-5));
  CHECK(c.memory.value == Approx(134217728.0 / (3.35e12 * 0.8 * (4096.0 / 4224.0))));
  CHECK(c.time().value == Approx(c.compute.value));
  // The rate carries by SMs and clock, not by the FP32 peak: on A100's 108 SMs at 1,410 MHz (half
  // H100's FP32 lanes per SM) the same launch, 4,096 / (38 x 108) = 0.998051 of its waves, computes in
  // 8,589,934,592 / (108 x 1.41 GHz x 25 x 0.998051) = 2.26076 ms.
  CHECK(calibrated_time(op, k, tensor, bw, 108, 1.41e9, false, Bytes{0}).compute.value == Approx(2.26076e-3).epsilon(1e-5));
  // Without the SM clock, or without the family's rate: the tensor peak at η_c, 8.95 µs, memory-bound.
  CHECK(calibrated_time(op, k, tensor, bw, 132, 0, false, Bytes{0}).compute.value == Approx(8589934592.0 / (989.4e12 * (4096.0 / 4224.0))));
  KernelEfficiency plain = k;
  plain.mmha_flops_per_sm_cycle.reset();
  CHECK(calibrated_time(op, plain, tensor, bw, 132, 1.98e9, false, Bytes{0}).compute.value == Approx(8589934592.0 / (989.4e12 * (4096.0 / 4224.0))));
  CHECK_FALSE(computes_on_cuda_cores(plain, true, 132, 1.98e9));
  CHECK_FALSE(computes_on_cuda_cores(k, true, 132, 0));
  CHECK_FALSE(computes_on_cuda_cores(k, true, 0, 1.98e9));
  // An XQA launch keeps its tensor cores: a group of 32 over 2 KV heads, same FLOPs.
  Op xqa = op;
  xqa.tiling.xqa_group = true;
  REQUIRE_FALSE(launch_shape(xqa.tiling, 132).mmha);
  CHECK_FALSE(computes_on_cuda_cores(k, false, 132, 1.98e9));
  CHECK(calibrated_time(xqa, k, tensor, bw, 132, 1.98e9, false, Bytes{0}).compute.value < 1e-4);
  // The planner takes the GPU's SMs and SM clock from its hardware file (H100 SXM: 132 at 1,980 MHz)
  // and prices the op the same way; its explanation says where the FLOPs ran.
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  const Roofline rf = roofline_for(load_gpu("h100"), DType::bf16, prof);
  const OpTime ot = op_time(op, rf);
  REQUIRE(ot.calibrated);
  CHECK(ot.compute.value == Approx(8589934592.0 / (132 * 1.98e9 * 25 * (4096.0 / 4224.0))));
  CHECK(ot.compute_bound);
  const ExplainStep e = explain_op_time("attention", op, rf, ot);
  CHECK(e.number() == Approx(ot.time.value));
  CHECK(e.formula.find("F / (SMs · clock · r_mmha · w)") != std::string::npos);
  CHECK(e.formula.find("its FLOPs on CUDA cores at r_mmha FLOPs per SM cycle") != std::string::npos);
}

TEST_CASE("MMHA streams its cache at its own fraction of the bandwidth", "[efficiency][example]") {
  // A100's TP1 row of 8 query heads over 8 KV heads (MMHA: no XQA kernel for a group of one), 64
  // sequences of 8,192 keys, head size 128 in bf16: B = 64 x 8,192 x 8 x 2 x 128 x 2 = 2,147,483,648
  // bytes. MMHA: one block per query head and sequence, 512 CTAs over 108 SMs (more than the SMs: no
  // key tiles), w_m = 512 / (4 x 108 + max(80, 108 / 1)) = 0.948148 at a reach of 1.
  Op op = mmha_decode_op(64.0 * 8192 * 8 * 4 * 128, 2147483648.0, 512, 32, 512);
  REQUIRE(launch_shape(op.tiling, 108).mmha);
  REQUIRE(launch_shape(op.tiling, 108).ctas == 512);
  KernelEfficiency k;
  k.eta_compute = 0.14;
  k.eta_memory = 0.6;
  k.eta_memory_mmha = 0.85;
  const FlopsPerSecond tensor{312e12};
  const BytesPerSecond bw{2.039e12};
  // 2,147,483,648 / (2.039 TB/s x 0.85 x 0.948148) = 1.30682 ms; the row measured 1,256 µs. At the
  // family's η_m, XQA's 0.6: 1.85133 ms.
  const CalibratedTime c = calibrated_time(op, k, tensor, bw, 108, 1.41e9, false, Bytes{0});
  CHECK(c.memory.value == Approx(2147483648.0 / (2.039e12 * 0.85 * (512.0 / 540.0))));
  CHECK(c.memory.value == Approx(1.30682e-3).epsilon(1e-5));
  CHECK(eta_memory_for(k, true) == 0.85);
  CHECK(eta_memory_for(k, false) == 0.6);
  KernelEfficiency plain = k;
  plain.eta_memory_mmha.reset();
  CHECK(eta_memory_for(plain, true) == 0.6);
  CHECK(calibrated_time(op, plain, tensor, bw, 108, 1.41e9, false, Bytes{0}).memory.value == Approx(1.85133e-3).epsilon(1e-5));
  // An XQA launch of the same bytes streams at the family's η_m.
  Op xqa = op;
  xqa.tiling.xqa_group = true;
  xqa.tiling.xqa_gain_blocks = 512 * 32;
  REQUIRE_FALSE(launch_shape(xqa.tiling, 108).mmha);
  CHECK(calibrated_time(xqa, k, tensor, bw, 108, 1.41e9, false, Bytes{0}).memory.value >= 2147483648.0 / (2.039e12 * 0.6));
  // The planner prices it the same way and its explanation names MMHA's fraction.
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  const Roofline rf = roofline_for(load_gpu("a100"), DType::bf16, prof);
  const OpTime ot = op_time(op, rf);
  REQUIRE(ot.calibrated);
  CHECK(ot.memory.value == Approx(c.memory.value));
  const ExplainStep e = explain_op_time("attention", op, rf, ot);
  CHECK(e.number() == Approx(ot.time.value));
  CHECK(e.formula.find("B / (bandwidth · η_m,mmha · w_m)") != std::string::npos);
  CHECK(e.substituted.find(" · 0.85 · ") != std::string::npos);
}

TEST_CASE("MMHA's own fraction of the bandwidth moves only MMHA's launches, on every bundled GQA/MHA model", "[efficiency][property]") {
  // Each bundled GQA/MHA model's decode attention at 1 and 64 sequences of 2 to 131,071 keys on an
  // A100's 108 SMs: an MMHA launch streams at eta_memory_mmha (its memory term scales by η_m / η_m,mmha
  // exactly), an XQA launch at eta_memory whatever eta_memory_mmha is; a family without it times both alike.
  KernelEfficiency k;
  k.eta_compute = 0.14;
  k.eta_memory = 0.6;
  KernelEfficiency mm = k;
  mm.eta_memory_mmha = 0.85;
  const FlopsPerSecond peak{312e12};
  const BytesPerSecond bw{2.039e12};
  int mmha = 0, xqa = 0;
  for_each_gqa_decode([&](const ModelSpec& m, std::int64_t keys, std::int64_t b, const Workload&, const Op& op) {
    INFO(m.name << " keys " << keys << " batch " << b);
    const CalibratedTime plain = calibrated_time(op, k, peak, bw, 108, 1.41e9, false, Bytes{0});
    const CalibratedTime own = calibrated_time(op, mm, peak, bw, 108, 1.41e9, false, Bytes{0});
    CHECK(own.mmha == plain.mmha);
    CHECK(own.compute.value == plain.compute.value);
    if (plain.mmha) {
      ++mmha;
      CHECK(own.memory.value == Approx(plain.memory.value * 0.6 / 0.85));
      CHECK(own.time().value <= plain.time().value);
    } else {
      ++xqa;
      CHECK(own.memory.value == plain.memory.value);
      CHECK(own.time().value == plain.time().value);
    }
  });
  CHECK(mmha > 0);
  CHECK(xqa > 0);
}

TEST_CASE("Blackwell's dispatch runs TRTLLM-GEN for head groups up to 32 whatever the grid and MMHA above", "[efficiency][example]") {
  // XQA's rule sends 8 blocks of a group of 8 over a bf16 cache to MMHA (8 x 4 < 148 SMs); sm100's
  // dispatcher gives them TRTLLM-GEN, on XQA's grid: the 8 blocks split 16 ways, 128 CTAs.
  Tiling t = xqa_tiling(1);
  t.head_group = 8;
  t.xqa_gain_blocks = 8;
  REQUIRE(launch_shape(t, 148).mmha);
  Tiling hopper = t;
  CHECK_FALSE(take_decode_dispatch(DecodeCostPair::fp8_cache, hopper));
  CHECK_FALSE(take_decode_dispatch(DecodeCostPair::none, hopper));
  CHECK_FALSE(hopper.tllm_gen);
  CHECK(take_decode_dispatch(DecodeCostPair::every_launch, t));
  CHECK_FALSE(take_decode_dispatch(DecodeCostPair::every_launch, t));  // already
  LaunchShape l = launch_shape(t, 148);
  CHECK_FALSE(l.mmha);
  CHECK(l.ctas == 128);
  CHECK(l.sequences == 8);
  // A group of one (no XQA kernel) and of 32 take it too; above 32, MMHA: 64 blocks, one per query
  // head and sequence.
  t.xqa_group = false;
  t.head_group = 1;
  CHECK_FALSE(launch_shape(t, 148).mmha);
  t.head_group = 32;
  CHECK_FALSE(launch_shape(t, 148).mmha);
  t.head_group = 33;
  CHECK(launch_shape(t, 148).mmha);
  CHECK(launch_shape(t, 148).ctas == 64);
  // A speculative step keeps XQA's speculative kernels.
  Tiling spec = xqa_tiling(1);
  spec.head_group = 8;
  spec.multi_query = true;
  CHECK_FALSE(take_decode_dispatch(DecodeCostPair::every_launch, spec));
  // The planner on B200 (148 SMs at 1,965 MHz): a family whose blocks cost, per block there, 40 ns
  // (the own kernel), 10 ns (MMHA) and 4 ns (the TMA-fed pair, 2 µs fixed against 5 µs).
  constexpr double b200_sm_ghz = 148 * 1.965;
  KernelEfficiency k;
  k.fixed = Seconds{5e-6};
  k.per_sequence = Seconds{40e-9 * b200_sm_ghz};
  k.per_sequence_mmha = Seconds{10e-9 * b200_sm_ghz};
  k.fixed_fp8_cache = Seconds{2e-6};
  k.per_sequence_fp8_cache = Seconds{4e-9 * b200_sm_ghz};
  k.eta_memory = 1;
  k.memory_reach = 2;
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  const Roofline b200 = roofline_for(load_gpu("b200"), DType::bf16, prof), h100 = roofline_for(load_gpu("h100"), DType::bf16, prof);
  REQUIRE(b200.decode_pair == DecodeCostPair::every_launch);
  // 4 sequences of 2 keys, one decode token each, of a layer of `heads` query heads over `kv_heads`.
  const auto decode_op = [](std::int64_t heads, std::int64_t kv_heads, KvDtype kv) {
    Workload w;
    w.kv = kv;
    w.groups = {SequenceGroup{4, 1, 1}};
    const PathPlan plan = standard_path(test::attention_layer(heads, kv_heads), w);
    const Op* op = plan.find(OpId::attention);
    REQUIRE(op);
    return *op;
  };
  // MHA, 32 heads: XQA's grid of 4 x 32 = 128 blocks (one key each: no split), on TRTLLM-GEN with the
  // pair over a bf16 cache too: 2 µs + 128 x 4 ns. H100 runs it on MMHA.
  for (const KvDtype kv : {KvDtype::bf16, KvDtype::fp8}) {
    const Op mha = decode_op(32, 32, kv);
    const std::optional<Op> launched = as_launched(mha, b200);
    REQUIRE(launched);
    CHECK(launched->tiling.tllm_gen);
    CHECK(launched->fp8_cache);
    CHECK(op_time(mha, b200).fixed.value == Approx(2e-6 + 128 * 4e-9));
    CHECK(explain_op_time("attention", mha, b200, op_time(mha, b200)).formula.find(", TRTLLM-GEN (sm100's dispatch, any head group up to 32, on XQA's grid)") != std::string::npos);
    CHECK(launch_shape(mha.tiling, 132).mmha);
    const std::optional<Op> on_h100 = as_launched(mha, h100);
    CHECK_FALSE((on_h100 && on_h100->tiling.tllm_gen));
  }
  // 64 query heads over one KV head: MMHA, 4 x 64 = 256 blocks at the family's own costs over either
  // cache: 5 µs + 256 x 10 ns.
  for (const KvDtype kv : {KvDtype::bf16, KvDtype::fp8}) {
    const Op mqa = decode_op(64, 1, kv);
    const std::optional<Op> launched = as_launched(mqa, b200);
    REQUIRE(launched);
    CHECK(launched->tiling.tllm_gen);
    CHECK_FALSE(launched->fp8_cache);
    CHECK(launch_shape(launched->tiling, 148).mmha);
    CHECK(op_time(mqa, b200).fixed.value == Approx(5e-6 + 256 * 10e-9));
    CHECK(explain_op_time("attention", mqa, b200, op_time(mqa, b200)).formula.find("MMHA (a head group above 32, past what sm100's dispatcher gives TRTLLM-GEN)") != std::string::npos);
  }
  // A speculative step (2 tokens a sequence) keeps XQA's spec kernels' grid, one block per sequence
  // and KV head, and pays the pair over a bf16 cache too: 2 µs + 128 x 4 ns, said as TRTLLM-GEN's.
  Workload spec_step;
  spec_step.groups = {SequenceGroup{4, 2, 1}};
  spec_step.spec_tokens = 1;
  const PathPlan spec_plan = standard_path(test::attention_layer(32, 32), spec_step);
  const Op* spec_op = spec_plan.find(OpId::attention);
  REQUIRE(spec_op);
  REQUIRE(spec_op->tiling.multi_query);
  REQUIRE_FALSE(spec_op->fp8_cache);
  const std::optional<Op> spec_launched = as_launched(*spec_op, b200);
  REQUIRE(spec_launched);
  CHECK_FALSE(spec_launched->tiling.tllm_gen);
  CHECK(spec_launched->fp8_cache);
  CHECK(op_time(*spec_op, b200).fixed.value == Approx(2e-6 + 128 * 4e-9));
  CHECK(explain_op_time("attention", *spec_op, b200, op_time(*spec_op, b200)).formula.find(", TRTLLM-GEN's t_fixed and t_seq (the family's second pair)") != std::string::npos);
  // An engine without XQA keeps MMHA on Blackwell too.
  Roofline no_xqa = b200;
  no_xqa.decode.xqa = false;
  const Op mha = decode_op(32, 32, KvDtype::bf16);
  CHECK(op_time(mha, no_xqa).fixed.value == Approx(5e-6 + 128 * 10e-9));
}

TEST_CASE("Every bundled GQA and MHA model's decode on B200 runs TRTLLM-GEN on XQA's grid, paying the pair", "[efficiency][property]") {
  EfficiencyProfile prof;
  prof.name = "test";
  KernelEfficiency k = xqa_mmha_family();
  k.fixed_fp8_cache = Seconds{2e-6};
  k.per_sequence_fp8_cache = Seconds{4e-9};
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  const Roofline b200 = roofline_for(load_gpu("b200"), DType::bf16, prof), h100 = roofline_for(load_gpu("h100"), DType::bf16, prof);
  int ops = 0;
  for_each_gqa_decode([&](const ModelSpec& m, std::int64_t keys, std::int64_t b, const Workload&, const Op& op) {
    INFO(m.name << " keys " << keys << " batch " << b);
    const double group = static_cast<double>(m.heads / m.kv_heads);
    const std::optional<Op> launched = as_launched(op, b200);
    REQUIRE(launched);
    CHECK(launched->tiling.tllm_gen);
    const LaunchShape l = launch_shape(launched->tiling, 148);
    CHECK(l.mmha == (group > kTllmGenMaxGroup));
    CHECK(launched->fp8_cache == !l.mmha);
    if (!l.mmha) {
      CHECK(l.ctas == launched_ctas(op.tiling, 148));
      CHECK(l.sequences == static_cast<double>(b * m.kv_heads));
    }
    // Hopper keeps XQA's rule.
    const std::optional<Op> on_h100 = as_launched(op, h100);
    CHECK_FALSE((on_h100 && on_h100->tiling.tllm_gen));
    ++ops;
  });
  CHECK(ops > 0);
}

TEST_CASE("A split XQA launch writes its blocks' partial outputs and reads them back", "[efficiency][example]") {
  // Llama-3.1-70B at TP 1: 64 query heads over 8 KV heads (a group of 8), head size 128, bf16. One
  // sequence of 4,096 keys: 8 XQA blocks (4 x 8 x 32 >= 132 SMs), each split 16 ways (32 cut to
  // round(sqrt(256))), 128 CTAs. Each writes 8 heads' bf16 partial output and fp32 sum and max,
  // 8 x (128 x 2 + 8) = 2,112 bytes, which the last block reads back: 4,224 per block, 540,672 in all.
  const ModelSpec l = test::model("llama-3.1-70b");
  Workload w;
  w.par.tp = 1;
  w.groups = {SequenceGroup{1, 1, 4095}};
  const auto attention = [](const PathPlan& p) {
    for (const Op& op : p)
      if (op.id == OpId::attention) return op;
    return Op{};
  };
  const Op att = attention(standard_path(l, w));
  CHECK(att.tiling.xqa_partial_bytes == 4224);
  const LaunchShape shape = launch_shape(att.tiling, 132);
  REQUIRE_FALSE(shape.mmha);
  REQUIRE(shape.ctas == 128);
  // The op's own bytes: 4,096 keys x 8 KV heads x 2 x 128 x 2 = 16,777,216 of cache, 16,384 of queries
  // and 16,384 of output.
  CHECK(att.bytes().value == 16809984);
  KernelEfficiency k;
  k.eta_compute = 1;
  k.eta_memory = 0.8;
  const FlopsPerSecond peak{989.4e12};
  const BytesPerSecond bw{3.35e12};
  const CalibratedTime t = calibrated_time(att, k, peak, bw, 132, 1.98e9, false, Bytes{0});
  CHECK(t.bytes == 16809984 + 540672);
  CHECK(t.memory.value == Approx(17350656.0 / (3.35e12 * 0.8 * memory_wave_efficiency(128, 132, 1))));
  // Its explanation shows the same bytes.
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  const Roofline rf = roofline_for(load_gpu("h100"), DType::bf16, prof);
  const ExplainStep e = explain_op_time("attention", att, rf, op_time(att, rf));
  CHECK(e.formula.find("with the splits' partial outputs") != std::string::npos);
  CHECK(e.substituted.find("17,350,656") != std::string::npos);
  // Nothing to merge: one block per sequence (64 sequences of 127 keys), or an MMHA launch (one
  // sequence of 256 keys: 4 x 8 x 2 < 132).
  w.groups = {SequenceGroup{64, 1, 126}};
  Op one = attention(standard_path(l, w));
  REQUIRE(launch_shape(one.tiling, 132).ctas == one.tiling.ctas);
  CHECK(calibrated_time(one, k, peak, bw, 132, 1.98e9, false, Bytes{0}).bytes == one.bytes().value);
  w.groups = {SequenceGroup{1, 1, 255}};
  one = attention(standard_path(l, w));
  REQUIRE(launch_shape(one.tiling, 132).mmha);
  CHECK(calibrated_time(one, k, peak, bw, 132, 1.98e9, false, Bytes{0}).bytes == one.bytes().value);
  // The partials are 16-bit whatever the compute dtype: the same bytes under fp8 compute.
  w.groups = {SequenceGroup{1, 1, 4095}};
  w.compute = DType::fp8;
  CHECK(attention(standard_path(l, w)).tiling.xqa_partial_bytes == 4224);
}

TEST_CASE("A split XQA launch's longest block walks its share of the keys", "[efficiency][example]") {
  // Llama-3.1-70B at TP 8: 8 query heads over one KV head. One sequence of 131,072 keys: XQA (1 x 1 x
  // 1,024 x 4 >= 132 SMs), 1,024 blocks of 128 keys cut to round(sqrt(8,192)) = 91, one wave. The
  // tile's FLOPs, 8 x 131,072 x 2 x (128 + 128) = 536,870,912, are the whole sequence's; each of the
  // 91 blocks computes 5,899,680.4 of them. At 6.5% of H100's 989.4 TFLOP/s over 132 SMs the longest
  // block takes 12.1 µs, exactly the launch's own compute term, F / (peak·η_c·w) with
  // w = 91 / 132: before the blocks' split was counted it took 91 times that, 1.10 ms, where TensorRT-
  // LLM's XQA decodes one sequence of 131,072 keys in 46 µs on H100 (aiconfigurator's table).
  const ModelSpec l = test::model("llama-3.1-70b");
  Workload w;
  w.par.tp = 8;
  w.groups = {SequenceGroup{1, 1, 131071}};
  const PathPlan plan = standard_path(l, w);
  const Op* att = plan.find(OpId::attention);
  REQUIRE(att);
  REQUIRE(att->tiling.decode_kernel);
  CHECK(att->tiling.longest_cta_flops == 536870912.0);
  const LaunchShape shape = launch_shape(att->tiling, 132);
  REQUIRE_FALSE(shape.mmha);
  REQUIRE(shape.ctas == 91);
  CHECK(longest_cta_flops(att->tiling, shape) == Approx(536870912.0 / 91));
  KernelEfficiency k;
  k.eta_compute = 0.065;
  k.eta_memory = 0.8;
  const FlopsPerSecond peak{989.4e12};
  const CalibratedTime t = calibrated_time(*att, k, peak, BytesPerSecond{3.35e12}, 132, 1.98e9, false, Bytes{0});
  CHECK(t.compute.value == Approx(536870912.0 / 91 / (989.4e12 / 132 * 0.065)));  // 12.1 µs
  CHECK(t.compute.value == Approx(att->flops.value / (989.4e12 * 0.065 * wave_efficiency(91, 132))));
  // Its explanation says so and shows the block's share.
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  const Roofline rf = roofline_for(load_gpu("h100"), DType::bf16, prof);
  const ExplainStep e = explain_op_time("attention", *att, rf, op_time(*att, rf));
  CHECK(e.formula.find("F_cta (its share of the split keys)") != std::string::npos);
  // Mixed lengths and the wave cut: the long sequence beside 63 of 128 keys. XQA takes one block count
  // for the grid, the longest sequence's 91, cut to about 8 waves: 64 x 91 = 5,824 CTAs against 1,056
  // is 5.52 times, so ⌊91 / 5.52⌋ = 16 blocks a sequence, 1,024 CTAs. The long sequence's blocks each
  // hold 8,192 keys, 33,554,432 FLOPs, 68.9 µs at 6.5%: the bound, above the launch's compute term
  // (569,901,056 FLOPs at w = 1,024 / 1,056: 9.1 µs).
  w.groups = {SequenceGroup{1, 1, 131071}, SequenceGroup{63, 1, 127}};
  const PathPlan mixed_plan = standard_path(l, w);
  const Op* mixed = mixed_plan.find(OpId::attention);
  REQUIRE(mixed);
  const LaunchShape mixed_shape = launch_shape(mixed->tiling, 132);
  REQUIRE_FALSE(mixed_shape.mmha);
  CHECK(mixed_shape.ctas == 1024);
  CHECK(longest_cta_flops(mixed->tiling, mixed_shape) == 536870912.0 / 16);
  CHECK(mixed->flops.value == 569901056.0);
  CHECK(calibrated_time(*mixed, k, peak, BytesPerSecond{3.35e12}, 132, 1.98e9, false, Bytes{0}).compute.value == Approx(33554432.0 / (989.4e12 / 132 * 0.065)));
  // A speculative step's three tokens: one block per sequence and KV head, the tile's FLOPs.
  w.spec_tokens = 2;
  w.groups = {SequenceGroup{1, 3, 131069}};
  const PathPlan spec_plan = standard_path(l, w);
  const Op* spec = spec_plan.find(OpId::attention);
  REQUIRE(spec);
  CHECK(launch_shape(spec->tiling, 132).ctas == spec->tiling.ctas);
  CHECK(longest_cta_flops(spec->tiling, launch_shape(spec->tiling, 132)) == spec->tiling.longest_cta_flops);
  w.spec_tokens = 0;
  // One block per sequence (127 keys): the tile's FLOPs, unchanged; an MMHA launch and a prompt's
  // flash kernel keep theirs too.
  w.groups = {SequenceGroup{64, 1, 126}};
  const PathPlan short_plan = standard_path(l, w);
  const Op* one = short_plan.find(OpId::attention);
  REQUIRE(one);
  CHECK(longest_cta_flops(one->tiling, launch_shape(one->tiling, 132)) == one->tiling.longest_cta_flops);
  Tiling mmha = att->tiling;
  mmha.xqa_group = false;
  CHECK(longest_cta_flops(mmha, launch_shape(mmha, 132)) == mmha.longest_cta_flops);
  Tiling prompt = att->tiling;
  prompt.decode_kernel = false;
  CHECK(longest_cta_flops(prompt, launch_shape(prompt, 132)) == prompt.longest_cta_flops);
}

TEST_CASE("A decode launch of one length shares its FLOPs evenly over its blocks", "[efficiency][property]") {
  // Every bundled GQA/MHA model, TP 1 and 8, batches and lengths where XQA splits and where it
  // does not: the longest block's FLOPs are at most the tile's, and an XQA launch's blocks times the
  // longest block's FLOPs are the op's FLOPs (each block an equal share: counted as one block walking
  // every key, they would be the blocks per sequence times more).
  for (const ModelSpec& m : test::all_models()) {
    if (m.is_mla()) continue;
    for (const std::int64_t tp : {1, 8}) {
      if (m.kv_heads % tp != 0 && tp % m.kv_heads != 0) continue;
      for (const std::int64_t batch : {1, 4, 64, 512})
        for (const double keys : {2.0, 127.0, 4096.0, 131072.0}) {
          Workload w;
          w.par.tp = tp;
          w.groups = {SequenceGroup{batch, 1, keys - 1}};
          const PathPlan plan = standard_path(m, w);
          const Op* att = plan.find(OpId::attention);
          REQUIRE(att);
          if (!att->tiling.decode_kernel) continue;
          for (const double sms : {78.0, 132.0, 148.0}) {
            const LaunchShape shape = launch_shape(att->tiling, sms);
            const double longest = longest_cta_flops(att->tiling, shape);
            INFO(m.name << " tp " << tp << " batch " << batch << " keys " << keys << " SMs " << sms);
            CHECK(longest <= att->tiling.longest_cta_flops);
            if (!shape.mmha) CHECK(longest * shape.ctas == Approx(att->flops.value));
          }
        }
    }
  }
}

TEST_CASE("GQA decode's kernel by head group, on every bundled GQA/MHA model", "[efficiency][property]") {
  for_each_gqa_decode([](const ModelSpec& m, std::int64_t keys, std::int64_t b, const Workload& w, const Op& att) {
    INFO(m.name << " keys " << keys << " batch " << b);
    const double group = static_cast<double>(m.heads / m.kv_heads);
    CHECK(att.tiling.decode_kernel);
    CHECK_FALSE(att.fp8_cache);
    CHECK(att.tiling.mmha_ctas == static_cast<double>(b * m.heads));
    CHECK(att.tiling.xqa_group == (group > 1 && group <= 32));
    // A block holds the head group's query heads, one query token each: its rows.
    CHECK(att.tiling.decode_block_rows == std::min(group, 128.0));
    const LaunchShape l = launch_shape(att.tiling, 132);
    CHECK(l.sequences == (l.mmha ? static_cast<double>(b * m.heads) : static_cast<double>(b * m.kv_heads)));
    if (group == 1 || group > 32) CHECK(l.mmha);
    // The dispatch and the grid, derived here from the rules themselves.
    const double kv = static_cast<double>(b * m.kv_heads);
    const double per_seq = std::max(1.0, std::floor(static_cast<double>(keys) / 128));
    const bool xqa = group > 1 && group <= 32 && 4 * kv * per_seq >= 132;
    CHECK(l.mmha == !xqa);
    if (xqa) {
      double blocks = std::max(1.0, std::min(std::floor(static_cast<double>(keys) / 128), std::round(std::sqrt(8 * std::floor(static_cast<double>(keys) / 128)))));
      if (kv * blocks / 132 > 8) blocks = std::max(1.0, std::floor(blocks / (kv * blocks / 132 / 8)));
      CHECK(l.ctas == kv * blocks);
      // Split, every block's partial output and sum and max are written and read back.
      KernelEfficiency k;
      k.eta_compute = 1;
      k.eta_memory = 1;
      const double partials = blocks > 1 ? kv * blocks * 2 * group * (static_cast<double>(m.head_dim) * 2 + 8) : 0;
      CHECK(calibrated_time(att, k, FlopsPerSecond{1e15}, BytesPerSecond{3e12}, 132, 1.98e9, false, Bytes{0}).bytes == Approx(att.bytes().value + partials));
    } else {
      const double heads = static_cast<double>(b * m.heads);
      CHECK(l.ctas == heads * std::min(std::max(1.0, std::ceil(static_cast<double>(keys) / 128)), std::max(1.0, std::ceil(132 / heads))));
    }
    // An fp8 cache flags the op for its family's fp8-cache kernel costs and runs XQA wherever the
    // head group has a kernel, however few its blocks (else MMHA as over a bf16 cache); the cache
    // bytes halve.
    Workload w8 = w;
    w8.kv = KvDtype::fp8;
    for (const Op& op : standard_path(m, w8))
      if (op.id == OpId::attention) {
        CHECK(op.fp8_cache);
        CHECK(op.tiling.ctas == att.tiling.ctas);
        const LaunchShape l8 = launch_shape(op.tiling, 132);
        CHECK(l8.mmha == !(group > 1 && group <= 32));
        if (!l.mmha || l8.mmha) CHECK(l8.ctas == l.ctas);
        else CHECK(l8.ctas == launched_ctas(op.tiling, 132));
        CHECK(op.cache_bytes_read.value == Approx(att.cache_bytes_read.value / 2));
      }
    // A prompt over an fp8 cache runs the context kernel, whose fp8 form is its fp8 efficiency.
    w8.context_phase = true;
    for (const Op& op : standard_path(m, w8))
      if (op.id == OpId::attention) CHECK_FALSE(op.fp8_cache);
  });
}

TEST_CASE("latent decode without split-KV: fmha_v2's blocks per sequence and head tile walk every key", "[efficiency]") {
  // DeepSeek-V3 at 128 heads, bf16 cache (1,152 B per token), one sequence of 8,192 keys, on 108 SMs.
  const Op att = latent_attention(load_model("deepseek-v3"), 1, {SequenceGroup{1, 1, 8191}});
  const Tiling& tl = att.tiling;
  // Split: ⌈128 / 64⌉ tiles · ⌈8192 / 64⌉ key blocks (FlashMLA's 64-token blocks).
  CHECK(tl.ctas == 2 * 128);
  // Unsplit: 2 tiles of ⌈512 / 256⌉ = 2 blocks each; each tile reads 8,192 · 1,152 B of cache +
  // 64 rows · (576 + 512) · 2 B once (its two blocks together).
  const double cta_bytes = 8192.0 * 1152 + 64.0 * 1088 * 2;
  CHECK(tl.unsplit_ctas == 4);
  CHECK(tl.unsplit_longest_bytes == Approx(cta_bytes));
  CHECK(tl.unsplit_bytes == Approx(2 * cta_bytes));
  // FLOPs: each block computes the tile's Q·Kᵀ over 576 columns and half of P·V over 512: per head and
  // key 2 · (2 · 576) + 2 · 512 = 3,328, against the absorbed op's 2 · (2 · 512 + 64) = 2,176.
  // 128 heads · 8,192 keys · 3,328 = 3,489,660,928.
  CHECK(tl.unsplit_flops == Approx(3489660928.0));
  CHECK(tl.unsplit_flops == Approx(att.flops.value * 3328 / 2176));
  KernelEfficiency k{.fixed = Seconds{0}, .per_sequence = Seconds{0}, .eta_compute = 1, .eta_compute_fp8 = std::nullopt, .eta_compute_fp8_tensor = std::nullopt,
                     .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt, .eta_memory = 0.5, .rows = 1};
  const BytesPerSecond bw{2.039e12};
  // Unsplit: w = 2 / 108, so B_total / (bw · η · w) = 2 · cta_bytes · 54 / (bw · 0.5), the same as the
  // longest CTA at one SM's share: cta_bytes · 108 / (bw · 0.5) = 1.01 ms.
  k.split_kv = false;
  const CalibratedTime un = calibrated_time(att, k, FlopsPerSecond{312e12}, bw, 108, 1.41e9, false, Bytes{0});
  CHECK(un.waves == Approx(4.0 / 108));
  CHECK(un.memory.value == Approx(cta_bytes * 108 / (2.039e12 * 0.5)));
  CHECK(un.memory.value == Approx(1.0145e-3).epsilon(0.001));
  // Split: 256 CTAs on 108 SMs, w = 256 / 324; the cache once, and the partial outputs of its pieces:
  // 54 parts, a payload of max(⌈133 / 54⌉ + 5, 10) = 10, 26 pieces of 5 blocks (and the overhead),
  // each writing 128 rows of 2,052 bytes for the combine kernel to read back, 26 · 2 · 128 · 2,052 =
  // 13,658,112 bytes, more than the 9.4 MB of cache: still 35x faster.
  k.split_kv = true;
  const CalibratedTime sp = calibrated_time(att, k, FlopsPerSecond{312e12}, bw, 108, 1.41e9, false, Bytes{0});
  CHECK(sp.waves == Approx(256.0 / 324));
  CHECK(latent_partition(tl, 108, true)->split_pieces == 26);
  CHECK(sp.memory.value == Approx((att.bytes().value + 13658112.0) * 324 / 256 / (2.039e12 * 0.5)));
  CHECK(sp.memory.value < un.memory.value / 30);
}

TEST_CASE("latent decode under split-KV: FlashMLA's partition sets the per-sequence cost", "[efficiency][example]") {
  // DeepSeek-V3 at TP8 (16 heads: one 64-row tile), 512 sequences of 8,192 keys (128 blocks of 64)
  // on 132 SMs: 132 parts; 512 · (128 + 5) = 68,096 blocks with the overheads, a payload of
  // ⌈68,096 / 132⌉ + 5 = 521. The first part takes 3 whole sequences (399) and 521 − 399 − 5 = 117
  // blocks of a fourth; the second finishes the fourth (11 + 5), takes 3 whole (399) and 101 blocks of
  // a seventh sequence: 5 started, the most of any part (FlashMLA's loop, get_mla_metadata.cu:36-62).
  const ModelSpec m = load_model("deepseek-v3");
  const Op att = latent_attention(m, 8, {SequenceGroup{512, 1, 8191}});
  CHECK(att.tiling.latent_key_blocks == 512 * 128);
  CHECK(att.tiling.latent_m_tiles == 1);
  std::optional<LatentPartition> p = latent_partition(att.tiling, 132, true);
  REQUIRE(p);
  CHECK(p->parts == 132);
  CHECK(p->ctas == 132);
  CHECK(p->payload == 521);
  CHECK(p->pieces == 5);
  // H20's 78 SMs: a payload of ⌈68,096 / 78⌉ + 5 = 879; the first part 6 whole sequences (798) and 76
  // blocks of a seventh, the second its rest (52 + 5), 6 whole (798) and 19 blocks of another: 8.
  p = latent_partition(att.tiling, 78, true);
  REQUIRE(p);
  CHECK(p->payload == 879);
  CHECK(p->pieces == 8);
  // The per-sequence cost is paid for those, not for the batch: 10 µs + 5 · 7 µs on 132 SMs, 10 µs +
  // 8 · 7 µs on 78.
  KernelEfficiency k{.fixed = Seconds{10e-6}, .per_sequence = Seconds{7e-6}, .eta_compute = 0.5, .eta_compute_fp8 = std::nullopt, .eta_compute_fp8_tensor = std::nullopt,
                     .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt, .eta_memory = 0.8, .rows = 1};
  CHECK(calibrated_time(att, k, FlopsPerSecond{989.4e12}, BytesPerSecond{3.35e12}, 132, 1.98e9, false, Bytes{0}).fixed.value == Approx(45e-6));
  CHECK(calibrated_time(att, k, FlopsPerSecond{148e12}, BytesPerSecond{4.0e12}, 78, 1.98e9, false, Bytes{0}).fixed.value == Approx(66e-6));
  // The pieces of split sequences write fp32 partial outputs (r·4 + 4 = 2,052 bytes per query row and
  // head) that the combine kernel reads back: on 132 SMs 126 sequences split in two, 252 pieces of 2 ·
  // 16 · 2,052 = 65,664 bytes, 16,547,328 bytes beside the op's own (at the launch's memory wave
  // efficiency w_m).
  CHECK(att.tiling.latent_partial_bytes == Approx(512 * 65664.0));
  CHECK(latent_partition(att.tiling, 132, true)->split_pieces == 252);
  const CalibratedTime split = calibrated_time(att, k, FlopsPerSecond{989.4e12}, BytesPerSecond{3.35e12}, 132, 1.98e9, false, Bytes{0});
  CHECK(split.memory.value == Approx((att.bytes().value + 16547328.0) / (3.35e12 * 0.8 * split.memory_waves)));
  // One sequence of 131,072 keys at 128 heads: 2,048 + 5 blocks over 66 parts, a payload of 37; the
  // first 63 parts take 32 blocks each, the 64th the last 32 and the overhead: 64 pieces of 2 · 128 ·
  // 2,052 = 525,312 bytes, 33,619,968 in all: 22% of its 151 MB cache read, 20 µs at 1.675 TB/s in a
  // full wave.
  const Op one = latent_attention(m, 1, {SequenceGroup{1, 1, 131071}});
  p = latent_partition(one.tiling, 132, true);
  REQUIRE(p);
  CHECK(p->payload == 37);
  CHECK(p->split_pieces == 64);
  k.eta_memory = 0.5;
  const CalibratedTime single = calibrated_time(one, k, FlopsPerSecond{989.4e12}, BytesPerSecond{3.35e12}, 132, 1.98e9, false, Bytes{0});
  CHECK(single.memory.value == Approx((one.bytes().value + 33619968.0) / (1.675e12 * single.memory_waves)));
  k.eta_memory = 0.8;
  // A kernel that does not split keys (fmha_v2): two blocks per sequence (one tile each, two value
  // slices), 1,024 CTAs in waves over 132 SMs, the busiest starting ⌈1,024 / 132⌉ = 8; on 78 SMs
  // ⌈1,024 / 78⌉ = 14.
  k.split_kv = false;
  p = latent_partition(att.tiling, 132, false);
  REQUIRE(p);
  CHECK(p->parts == 0);
  CHECK(p->ctas == 1024);
  CHECK(p->pieces == 8);
  CHECK(calibrated_time(att, k, FlopsPerSecond{989.4e12}, BytesPerSecond{3.35e12}, 132, 1.98e9, false, Bytes{0}).fixed.value == Approx(66e-6));
  CHECK(calibrated_time(att, k, FlopsPerSecond{148e12}, BytesPerSecond{4.0e12}, 78, 1.98e9, false, Bytes{0}).fixed.value == Approx(108e-6));
  // With the cost per sequence in the max, the same 8 blocks the busiest SM starts:
  // 10 µs + max(streaming, 8 · 7 µs).
  k.sequences_overlap = true;
  const CalibratedTime over = calibrated_time(att, k, FlopsPerSecond{989.4e12}, BytesPerSecond{3.35e12}, 132, 1.98e9, false, Bytes{0});
  CHECK(over.sequences == 8);
  CHECK(over.fixed.value == Approx(10e-6));
  CHECK(over.blocks.value == Approx(56e-6));
  CHECK(over.time().value == Approx(10e-6 + std::max(56e-6, over.streaming().value)));
  k.sequences_overlap = false;
  CHECK_FALSE(latent_partition(att.tiling, 0, true));  // SMs unknown
  // 128 heads (two tiles): 66 parts, a payload of ⌈68,096 / 66⌉ + 5 = 1,037: the first part 7 whole
  // sequences (931) and 101 blocks of an eighth, the second its rest (27 + 5), 7 whole and 69 blocks: 9.
  p = latent_partition(latent_attention(m, 1, {SequenceGroup{512, 1, 8191}}).tiling, 132, true);
  REQUIRE(p);
  CHECK(p->parts == 66);
  CHECK(p->ctas == 132);
  CHECK(p->payload == 1037);
  CHECK(p->pieces == 9);
  // One sequence: of 128 keys, 2 + 5 blocks within the floor payload of 10; of 65,536 keys, 1,029
  // blocks over 132 parts, a payload of 13: each of the first 128 parts takes 8 blocks of it, one piece.
  p = latent_partition(latent_attention(m, 1, {SequenceGroup{1, 1, 127}}).tiling, 132, true);
  REQUIRE(p);
  CHECK(p->payload == 10);
  CHECK(p->pieces == 1);
  p = latent_partition(latent_attention(m, 8, {SequenceGroup{1, 1, 65535}}).tiling, 132, true);
  REQUIRE(p);
  CHECK(p->payload == 13);
  CHECK(p->pieces == 1);
  // A batch absorbed whole with two 2,048-token prompts beside 64 decodes (16 heads): a prompt's
  // 2,048 · 16 / 64 = 512 query tiles outnumber the SMs, FlashMLA has no part; the 64 + 2 · 512 =
  // 1,088 sequence tiles are CTAs of their own, the busiest SM starting ⌈1,088 / 132⌉ = 9.
  p = latent_partition(latent_attention(m, 8, {SequenceGroup{64, 1, 8191}, SequenceGroup{2, 2048, 0}}).tiling, 132, true);
  REQUIRE(p);
  CHECK(p->parts == 0);
  CHECK(p->ctas == 1088);
  CHECK(p->pieces == 9);
}

TEST_CASE("FlashMLA's partition on every bundled MLA model deals every block and starts no more sequences than the batch", "[efficiency][property]") {
  for (const BundledEntry& e : bundled_models()) {
    const ModelSpec m = load_model(e.short_name);
    if (!m.is_mla()) continue;
    for (std::int64_t tp : {1, 8})
      for (double batch : {1.0, 3.0, 64.0, 500.0, 4096.0})
        for (double keys : {1.0, 64.0, 65.0, 4096.0, 131072.0}) {
          Workload w;
          w.par.tp = tp;
          w.groups = {SequenceGroup{static_cast<std::int64_t>(batch), 1, keys - 1}};
          if (!check_layout(m, w.par).ok()) continue;
          for (PathKind kind : paths_for(m)) {
            if (kind != PathKind::absorb && kind != PathKind::sparse) continue;
            const PathPlan plan = mla_path(m, w, kind);
            for (const Op& op : plan) {
              if (!(op.tiling.latent_key_blocks > 0)) continue;
              for (double sms : {148.0, 132.0, 108.0, 78.0}) {
                INFO(e.short_name << " TP" << tp << " batch " << batch << " keys " << keys << " " << op.name() << " on " << sms << " SMs");
                const std::optional<LatentPartition> p = latent_partition(op.tiling, sms, true);
                REQUIRE(p);
                const double total = op.tiling.latent_key_blocks + kLatentOverheadBlocks * op.tiling.sequences;
                REQUIRE(p->parts >= 1);  // a decode step's query tiles never outnumber the SMs
                CHECK(p->ctas <= sms);
                CHECK(p->parts * p->payload >= total);  // every block is dealt
                CHECK(p->pieces >= 1);
                CHECK(p->pieces <= op.tiling.sequences);
                CHECK(p->pieces * kLatentOverheadBlocks <= p->payload);  // the fullest part holds its payload
                // A part writes at most two pieces of split sequences (the rest of one, a piece of the
                // next); a split sequence has two pieces or more.
                CHECK(p->split_pieces <= 2 * p->parts);
                CHECK((p->split_pieces == 0 || p->split_pieces >= 2));
                // A part starts at most the rest of a split sequence, the whole ones its payload holds
                // and a piece of the next. (Not monotone in the SMs: 64 sequences of 64 blocks start 2
                // on a part of 148 SMs' 35-block payloads, 1 on 132's 39.)
                const double n = op.tiling.latent_key_blocks / op.tiling.sequences;
                CHECK(p->pieces <= std::floor(p->payload / (n + kLatentOverheadBlocks)) + 2);
                // The fullest part starts at most its even share of the sequences and two pieces.
                CHECK(p->pieces <= op.tiling.sequences / p->parts + 2);
                // Without split-KV the busiest SM starts its wave share of the sequences' tiles.
                const std::optional<LatentPartition> u = latent_partition(op.tiling, sms, false);
                REQUIRE(u);
                CHECK(u->parts == 0);
                CHECK(u->ctas == op.tiling.unsplit_ctas);
                CHECK(u->pieces == std::ceil(op.tiling.unsplit_ctas / sms));
              }
            }
          }
        }
  }
}

TEST_CASE("resident blocks: an SM runs several of the unsplit launch's blocks at once, a lone one faster", "[efficiency]") {
  // A100's 108 SMs, 2 blocks an SM, a lone block at 0.7 of its SM: Σ 1/f over the waves.
  // 1 to 108 blocks: one each, 1/0.7 = 1.43 each: w = c / (108 · 1.4286).
  CHECK(resident_wave_efficiency(1, 108, 2, 0.7) == Approx(0.7 / 108));
  CHECK(resident_wave_efficiency(108, 108, 2, 0.7) == Approx(0.7));
  // 128 blocks: 20 SMs run two, each at half its SM: w = 128 / (108 · 2).
  CHECK(resident_wave_efficiency(128, 108, 2, 0.7) == Approx(128.0 / 216));
  // 512: two full waves of 216 (2 each), then 80 alone (1/0.7): 512 / (108 · (4 + 1.4286)).
  CHECK(resident_wave_efficiency(512, 108, 2, 0.7) == Approx(512.0 / (108 * (4 + 1 / 0.7))));
  // 4,096: 18 full waves, then 208 (two on the busiest SM): 4,096 / (108 · 38).
  CHECK(resident_wave_efficiency(4096, 108, 2, 0.7) == Approx(4096.0 / (108 * 38)));
  // In multiples of one block's time (F ∝ blocks, time ∝ blocks / w): A100's 8,192-key table at 128
  // heads reads 1.42, 2.45, 3.83 and 26.7 at these counts; the model 1.40, 2.40, 3.80, 26.6.
  auto rel = [](double c) { return (c / resident_wave_efficiency(c, 108, 2, 0.7)) / (64 / resident_wave_efficiency(64, 108, 2, 0.7)); };
  CHECK(rel(128) == Approx(1.4));
  CHECK(rel(256) == Approx(2.4));
  CHECK(rel(512) == Approx(3.8));
  CHECK(rel(4096) == Approx(26.6));
  // Properties: resident 1 and solo 1 are the plain waves; a launch of at most one block per SM runs
  // each at solo of its SM; at solo = 1/resident an SM's blocks share it evenly, so w is the plain
  // waves of resident·SMs slots; a lone block's share only speeds the launch up; never above 1;
  // values outside a profile's ranges are clamped to them.
  for (double sms : {78.0, 108.0, 132.0})
    for (double c = 1; c <= 5 * sms; ++c) {
      INFO(sms << " SMs, " << c << " CTAs");
      CHECK(resident_wave_efficiency(c, sms, 1, 1) == Approx(wave_efficiency(c, sms)));
      for (double rc : {2.0, 3.0, 4.0}) {
        const double solo = 0.6 + 0.4 / rc;
        if (c <= sms) CHECK(resident_wave_efficiency(c, sms, rc, solo) == Approx(c * solo / sms));
        CHECK(resident_wave_efficiency(c, sms, rc, 1 / rc) == Approx(wave_efficiency(c, rc * sms)));
        const double lo = resident_wave_efficiency(c, sms, rc, 1 / rc), mid = resident_wave_efficiency(c, sms, rc, solo),
                     hi = resident_wave_efficiency(c, sms, rc, 1);
        CHECK(lo <= mid + 1e-12);
        CHECK(mid <= hi + 1e-12);
        CHECK(hi <= 1 + 1e-12);
        CHECK(resident_wave_efficiency(c, sms, rc, 5) == Approx(hi));
        CHECK(resident_wave_efficiency(c, sms, rc, 0) == Approx(lo));
      }
      CHECK(resident_wave_efficiency(c, sms, 0, 0.5) == Approx(wave_efficiency(c, sms)));
    }
  // In calibrated time: DeepSeek-V3 at 128 heads, 64 sequences of 8,192 keys on 108 SMs, the unsplit
  // launch: 64 · 2 tiles · 2 blocks = 256; at 2 resident and 0.7 a full wave of 216 (2 on every SM),
  // then 40 alone: w = 256 / (108 · (2 + 1/0.7)) = 0.6914.
  const Op att = latent_attention(load_model("deepseek-v3"), 1, {SequenceGroup{64, 1, 8191}});
  REQUIRE(att.tiling.unsplit_ctas == 256);
  KernelEfficiency k{.fixed = Seconds{0}, .per_sequence = Seconds{0}, .eta_compute = 0.45, .eta_compute_fp8 = std::nullopt, .eta_compute_fp8_tensor = std::nullopt,
                     .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt, .eta_memory = 0.5, .split_kv = false, .resident_ctas = 2,
                     .solo_share = 0.7, .rows = 1};
  const CalibratedTime t = calibrated_time(att, k, FlopsPerSecond{312e12}, BytesPerSecond{2.039e12}, 108, 1.41e9, false, Bytes{0});
  CHECK(t.waves == Approx(256.0 / (108 * (2 + 1 / 0.7))));
  CHECK(t.compute.value == Approx(att.tiling.unsplit_flops / (312e12 * 0.45 * t.waves)));
  // 64 · 3,489,660,928 FLOPs / (312 TFLOP/s · 0.45 · 0.6914) = 2.301 ms.
  CHECK(t.compute.value == Approx(2.3009e-3).epsilon(1e-3));
  // A family that splits keys ignores both.
  k.split_kv = true;
  CHECK(calibrated_time(att, k, FlopsPerSecond{312e12}, BytesPerSecond{2.039e12}, 108, 1.41e9, false, Bytes{0}).waves == Approx(wave_efficiency(att.tiling.ctas, 108)));
}

TEST_CASE("memory waves: a CTA streams up to reach times its SM's share of the bandwidth", "[efficiency]") {
  // 2 CTAs on 132 SMs: each its share, 2/132 of the bandwidth; at reach 4, 2 · 4/132 = 2/33.
  CHECK(memory_wave_efficiency(2, 132, 1) == Approx(2.0 / 132));
  CHECK(memory_wave_efficiency(2, 132, 4) == Approx(2.0 / 33));
  // Reach past the SM count: one CTA draws the whole bandwidth.
  CHECK(memory_wave_efficiency(1, 132, 500) == 1);
  // 200 CTAs: a full wave of 132, then 68; at reach 4 the 68 need only 33 SMs' shares, so w_m = 1;
  // at reach 1 the last wave streams at 68/132, w_m = w = 200 / 264.
  CHECK(memory_wave_efficiency(200, 132, 4) == 1);
  CHECK(memory_wave_efficiency(200, 132, 1) == Approx(200.0 / 264));
  // 140 CTAs at reach 2: the last 8 stream at 16/132: 140 / (132 + 66).
  CHECK(memory_wave_efficiency(140, 132, 2) == Approx(140.0 / 198));
  CHECK(memory_wave_efficiency(264, 132, 1) == 1);  // whole waves
  // Properties over counts and reaches: reach 1 is the compute wave; w_m in [w, 1]; never falls as
  // the reach grows.
  for (double sms : {78.0, 108.0, 132.0, 148.0})
    for (double c = 1; c <= 3 * sms; ++c) {
      INFO(sms << " SMs, " << c << " CTAs");
      CHECK(memory_wave_efficiency(c, sms, 1) == Approx(wave_efficiency(c, sms)));
      double prev = 0;
      for (double reach : {1.0, 1.5, 2.0, 4.0, 16.0, 256.0}) {
        const double wm = memory_wave_efficiency(c, sms, reach);
        CHECK(wm >= wave_efficiency(c, sms) - 1e-12);
        CHECK(wm <= 1);
        CHECK(wm >= prev);
        prev = wm;
      }
    }
  // In calibrated time: a GEMM of 2 tiles reading 1 MB on 132 SMs at 3.35 TB/s and η_m 0.8 streams in
  // 1e6 / (3.35e12 · 0.8 · 2/33) = 6.156 µs at reach 4 (24.6 µs at reach 1); the unsplit latent launch's
  // longest CTA reads at min(1, reach/SMs) of the bandwidth.
  Op gemm = gemm_op(OpId::o_proj, 1, 256, 256, 2, 2);
  gemm.bytes_read = BytesF{1e6};
  gemm.bytes_written = BytesF{0};
  gemm.tiling.split_k = 1;
  REQUIRE(gemm.tiling.ctas == 2);
  KernelEfficiency k{.fixed = Seconds{0}, .per_sequence = Seconds{0}, .eta_compute = 1, .eta_compute_fp8 = std::nullopt, .eta_compute_fp8_tensor = std::nullopt,
                     .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt, .eta_memory = 0.8,
                     .memory_reach = 4, .rows = 1};
  const CalibratedTime t4 = calibrated_time(gemm, k, FlopsPerSecond{989.4e12}, BytesPerSecond{3.35e12}, 132, 1.98e9, false, Bytes{0});
  CHECK(t4.memory_waves == Approx(2.0 / 33));
  CHECK(t4.memory.value == Approx(1e6 * 33 / (2 * 3.35e12 * 0.8)));
  CHECK(t4.memory.value == Approx(6.1567e-6).epsilon(1e-4));
  CHECK(t4.waves == Approx(2.0 / 132));  // compute still waves per SM
  k.memory_reach = 1;
  CHECK(calibrated_time(gemm, k, FlopsPerSecond{989.4e12}, BytesPerSecond{3.35e12}, 132, 1.98e9, false, Bytes{0}).memory.value == Approx(4 * t4.memory.value));
  Op un;
  un.id = OpId::latent_attention_mqa;
  un.bytes_read = BytesF{1e6};
  un.tiling.unsplit_ctas = 1;
  un.tiling.unsplit_bytes = 1e6;
  un.tiling.unsplit_longest_bytes = 1e6;
  k.split_kv = false;
  k.memory_reach = 8;  // 8/108 of 2.039 TB/s at η_m 0.8: 1e6 / (2.039e12 · 8/108 · 0.8) = 8.276 µs
  CHECK(calibrated_time(un, k, FlopsPerSecond{312e12}, BytesPerSecond{2.039e12}, 108, 1.41e9, false, Bytes{0}).memory.value == Approx(1e6 * 108 / (2.039e12 * 8 * 0.8)));
}

TEST_CASE("An elementwise pass whose bytes fit the L2 streams them at the family's L2 pace per SM cycle, in the fit", "[efficiency]") {
  // H100's quantise pass, [m, k] bf16 in, fp8 out: m·k·3 bytes. 10 Mi values are 30 MiB, within the
  // 50 MiB L2: at 16 B per SM cycle over 132 SMs at 1.98 GHz the L2 serves 4.182 TB/s, so
  // 31,457,280 / 4.18176e12 = 7.522 µs; 20 Mi values (60 MiB) spill to DRAM: 62,914,560 / (3.35e12 ·
  // 0.9) = 20.87 µs.
  const HardwareSpec h100 = load_gpu("h100-sxm");
  REQUIRE(h100.l2_cache.value == 50 * kMiB);
  REQUIRE(h100.sm_count == 132);
  REQUIRE(h100.sm_clock_hz == 1.98e9);
  KernelEfficiency k;
  k.fixed = Seconds{1.4e-6};
  k.eta_compute = 0.05;
  k.eta_memory = 0.9;
  k.l2_bytes_per_sm_cycle = 16;
  auto pass = [](double values) {
    Op op;
    op.id = OpId::rms_norm;
    op.flops = Flops{values};
    op.bytes_read = BytesF{2 * values};
    op.bytes_written = BytesF{values};
    return op;
  };
  const Op small = pass(10 * 1048576.0), large = pass(20 * 1048576.0);
  const CalibratedTime in_l2 = calibrated_time(small, k, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, 132, 1.98e9, false, h100.l2_cache);
  CHECK(in_l2.l2_resident);
  CHECK(in_l2.memory.value == Approx(31457280 / (132 * 1.98e9 * 16)));
  CHECK(in_l2.memory.value == Approx(7.522e-6).epsilon(1e-3));
  CHECK(in_l2.time().value == Approx(1.4e-6 + 7.522e-6).epsilon(1e-3));
  const CalibratedTime beyond = calibrated_time(large, k, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, 132, 1.98e9, false, h100.l2_cache);
  CHECK(!beyond.l2_resident);
  CHECK(beyond.memory.value == Approx(62914560 / (3.35e12 * 0.9)));
  CHECK(beyond.memory.value == Approx(20.87e-6).epsilon(1e-3));
  // The same pace per SM cycle on B200 (148 SMs at 1.965 GHz): 4.653 TB/s, below its DRAM pace at η_m
  // 0.9 (7.2 TB/s), so its L2-resident pass is the slower one, as its table shows.
  const HardwareSpec b200 = load_gpu("b200");
  const CalibratedTime b_in = calibrated_time(small, k, *b200.peak_flops(DType::bf16), b200.memory_bandwidth, 148, 1.965e9, false, b200.l2_cache);
  CHECK(b_in.l2_resident);
  CHECK(b_in.memory.value == Approx(31457280 / (148 * 1.965e9 * 16)));
  CHECK(b_in.memory.value > 31457280 / (b200.memory_bandwidth.value * 0.9));
  // An unknown L2, SM count or clock, or a family without an L2 pace, streams from DRAM.
  const double dram = 31457280 / (3.35e12 * 0.9);
  CHECK(calibrated_time(small, k, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, 132, 1.98e9, false, Bytes{0}).memory.value == Approx(dram));
  CHECK(calibrated_time(small, k, *h100.peak_flops(DType::bf16), h100.memory_bandwidth, 132, 0, false, h100.l2_cache).memory.value == Approx(dram));
  CHECK(!fits_l2(small, k, h100.l2_cache, 0, 1.98e9));
  k.l2_bytes_per_sm_cycle = 0;
  CHECK(!fits_l2(small, k, h100.l2_cache, 132, 1.98e9));
  // The planner prices a step's passes from DRAM: the same 30 MiB pass through the roofline takes
  // DRAM's pace, never less than speed of light.
  k.l2_bytes_per_sm_cycle = 16;
  EfficiencyProfile p;
  p.name = "test";
  p.kernels[static_cast<std::size_t>(KernelFamily::elementwise)] = k;
  const Roofline rf = roofline_for(h100, DType::bf16, p);
  CHECK(op_time(small, rf).memory.value == Approx(dram));
  CHECK(op_time(small, rf).time.value >= op_time(small, speed_of_light(rf)).time.value);
}

TEST_CASE("Every bundled GPU with a known L2, SM count and clock: a pass of exactly its L2 takes the L2's pace, one byte more does not", "[efficiency][property]") {
  KernelEfficiency k;
  k.eta_memory = 0.8;
  k.l2_bytes_per_sm_cycle = 12;
  int known = 0;
  for (const auto& e : bundled_gpus()) {
    const HardwareSpec g = load_hardware_file(e.path);
    INFO(g.name);
    Op op;
    op.id = OpId::rms_norm;
    op.bytes_read = BytesF{static_cast<double>(g.l2_cache.value)};
    const double sms = static_cast<double>(g.sm_count);
    const bool fits = fits_l2(op, k, g.l2_cache, sms, g.sm_clock_hz);
    CHECK(fits == (g.l2_cache.value > 0 && g.sm_count > 0 && g.sm_clock_hz > 0));
    if (!fits) continue;
    ++known;
    const double at = calibrated_time(op, k, *g.peak_flops(DType::bf16), g.memory_bandwidth, sms, g.sm_clock_hz, false, g.l2_cache).memory.value;
    CHECK(at == Approx(op.bytes_read.value / (sms * g.sm_clock_hz * 12)));
    op.bytes_read = BytesF{op.bytes_read.value + 1};
    const double past = calibrated_time(op, k, *g.peak_flops(DType::bf16), g.memory_bandwidth, sms, g.sm_clock_hz, false, g.l2_cache).memory.value;
    CHECK(past == Approx(op.bytes_read.value / (g.memory_bandwidth.value * 0.8)));
  }
  CHECK(known >= 10);
}

TEST_CASE("the paths declare their kernels' tiles", "[efficiency]") {
  const ModelSpec m = load_model("deepseek-v3");
  const Op att = latent_attention(m, 8, {SequenceGroup{32, 1, 8191}});
  // 16 heads per rank in a 64-row tile (4x padded), 8,192 keys in 128 blocks of 64 (FlashMLA's
  // block_size_n, csrc/api/dense_decode.h:103), 32 sequences.
  CHECK(att.tiling.ctas == 32 * 1 * 128);
  CHECK(att.tiling.sequences == 32);
  CHECK(att.tiling.padded_flops == Approx(4 * att.flops.value));
  Workload p;
  p.groups = {SequenceGroup{1, 4096, 0}};
  const PathPlan expand = mla_path(m, p, PathKind::expand);
  const Op* mha = expand.find(OpId::attention_mha);
  REQUIRE(mha);
  CHECK(mha->tiling.ctas == 32 * 128);                                     // ⌈4096 / 128⌉ query tiles × 128 heads
  CHECK(mha->tiling.longest_cta_flops == 128.0 * 4096 * 2 * (192 + 128));  // the last tile sees every key
  p.chunk = 1024;
  const PathPlan chunked = mla_path(m, p, PathKind::chunked);
  CHECK(chunked.find(OpId::attention_mha_chunk)->tiling.launches == 4);
  CHECK(chunked.find(OpId::kv_up_proj_chunk)->tiling.launches == 4);
}

TEST_CASE("a flash prefill pays its cost per CTA wave, and a memory pass apart adds to its compute", "[efficiency][example]") {
  // DeepSeek-V3 expanded prefill, one prompt of 4,096 tokens at 128 heads on 132 SMs: 32 query tiles ×
  // 128 heads = 4,096 CTAs, the busiest SM running ⌈4,096 / 132⌉ = 32 of them.
  const ModelSpec m = load_model("deepseek-v3");
  Workload p;
  p.groups = {SequenceGroup{1, 4096, 0}};
  const PathPlan expand = mla_path(m, p, PathKind::expand);
  const Op* mha = expand.find(OpId::attention_mha);
  REQUIRE(mha);
  KernelEfficiency k{.fixed = Seconds{15e-6}, .per_sequence = Seconds{2e-8}, .eta_compute = 0.6, .eta_compute_fp8 = std::nullopt,
                     .eta_compute_fp8_tensor = std::nullopt, .fixed_fp8_cache = std::nullopt, .per_sequence_fp8_cache = std::nullopt,
                     .per_cta = Seconds{2.5e-6}, .serial_memory = false, .eta_memory = 0.7, .rows = 1};
  const FlopsPerSecond peak{989.4e12};
  const BytesPerSecond bw{3.35e12};
  const CalibratedTime over = calibrated_time(*mha, k, peak, bw, 132, 1.98e9, false, Bytes{0});
  CHECK(over.launches == 1);
  CHECK(over.sequences == 1);
  CHECK(over.cta_waves == 32);
  // 15 µs + 1 · 20 ns + 32 · 2.5 µs = 95.02 µs.
  CHECK(over.fixed.value == Approx(95.02e-6));
  // Compute: F = 128 heads · 4,096 · 4,097 / 2 causal pairs · 2 · (192 + 128) FLOPs = 687.3 GFLOP at
  // 989.4 TFLOP/s · 0.6 · w, w = 4,096 / (32 · 132); no longer than the last tile's F_cta / (peak / 132 · 0.6).
  const double flops = 128.0 * 4096 * 4097 / 2 * 2 * (192 + 128);
  CHECK(mha->flops.value == Approx(flops));
  const double w = 4096.0 / (32 * 132);
  CHECK(over.waves == Approx(w));
  CHECK(over.compute.value == Approx(std::max(flops / (989.4e12 * 0.6 * w), 128.0 * 4096 * 640 / (989.4e12 / 132 * 0.6))));
  // A last wave of 4 CTAs streams at one SM's share each (reach 1): w_m = 4,096 / (31 · 132 + 132).
  const double wm = 4096.0 / (31 * 132 + 132);
  CHECK(over.memory_waves == Approx(wm));
  const double memory = mha->bytes().value / (3.35e12 * 0.7 * wm);
  CHECK(over.memory.value == Approx(memory));
  CHECK(over.time().value == Approx(95.02e-6 + std::max(over.compute.value, memory)));
  // The same op with its memory pass apart: the two terms add.
  k.serial_memory = true;
  const CalibratedTime apart = calibrated_time(*mha, k, peak, bw, 132, 1.98e9, false, Bytes{0});
  CHECK(apart.serial);
  CHECK(apart.time().value == Approx(95.02e-6 + over.compute.value + memory));
  CHECK(apart.time().value > over.time().value);
  // op_time reports the same, and so does its explanation.
  Roofline rf;
  rf.peak = peak;
  rf.bandwidth = bw;
  rf.sms = 132;
  rf.kernels[static_cast<std::size_t>(KernelFamily::expanded_prefill)] = k;
  const OpTime t = op_time(*mha, rf);
  CHECK(t.serial);
  CHECK(t.time.value == Approx(apart.time().value));
  const ExplainStep e = explain_op_time("attention", *mha, rf, t);
  CHECK(e.formula.find("⌈CTAs / SMs⌉ · t_cta") != std::string::npos);
  CHECK(e.formula.find("the memory pass apart from the compute kernel") != std::string::npos);
  CHECK(e.substituted.find(" + 32 · 2.5 µs") != std::string::npos);
  // With the cost per CTA SM time the streaming hides (cta_overlap): 15.02 µs fixed, and the 80 µs of
  // CTAs added to the compute term inside the max.
  k.serial_memory = false;
  k.cta_overlap = true;
  const CalibratedTime inside = calibrated_time(*mha, k, peak, bw, 132, 1.98e9, false, Bytes{0});
  CHECK(inside.fixed.value == Approx(15.02e-6));
  CHECK(inside.ctas.value == Approx(80e-6));
  CHECK(inside.time().value == Approx(15.02e-6 + std::max(over.compute.value + 80e-6, memory)));
  // Short prompts are memory-bound: 256 prompts of 64 tokens, 32,768 CTAs (249 waves of 132), whose
  // 622.5 µs of CTA cost hide under the 2.68 GB the kernel streams (1,148 µs at 0.7 of 3.35 TB/s).
  Workload shorts;
  shorts.groups = {SequenceGroup{256, 64, 0}};
  const PathPlan short_plan = mla_path(m, shorts, PathKind::expand);  // the op points into it
  const Op* short_mha = short_plan.find(OpId::attention_mha);
  REQUIRE(short_mha);
  const CalibratedTime hidden = calibrated_time(*short_mha, k, peak, bw, 132, 1.98e9, false, Bytes{0});
  CHECK(hidden.cta_waves == 249);
  CHECK(hidden.ctas.value == Approx(249 * 2.5e-6));
  // A last wave of 32 CTAs at one SM's share each: w_m = 32,768 / (248 · 132 + 132).
  CHECK(hidden.memory.value == Approx(256 * 64 * 163840.0 / (3.35e12 * 0.7 * 32768 / 32868)));
  CHECK(hidden.time().value == Approx(15e-6 + 256 * 2e-8 + hidden.memory.value));
  k.cta_overlap = false;
  CHECK(calibrated_time(*short_mha, k, peak, bw, 132, 1.98e9, false, Bytes{0}).time().value == Approx(hidden.time().value + 249 * 2.5e-6));
  k.cta_overlap = true;
  rf.kernels[static_cast<std::size_t>(KernelFamily::expanded_prefill)] = k;
  const OpTime ti = op_time(*mha, rf);
  CHECK(ti.ctas.value == Approx(80e-6));
  CHECK(ti.time.value == Approx(inside.time().value));
  // A path's compute time counts it as the op's SM time.
  PathPlan one;
  one.add(*mha);
  CHECK(path_cost(one, rf).compute.value == Approx(ti.compute.value + 80e-6));
  CHECK(ti.compute_bound);
  const ExplainStep ei = explain_op_time("attention", *mha, rf, ti);
  CHECK(ei.formula.find("launches · (t_fixed + sequences · t_seq) + max(") != std::string::npos);
  CHECK(ei.formula.find(" + launches · ⌈CTAs / SMs⌉ · t_cta, B") != std::string::npos);
  CHECK(ei.substituted.find(" + 1 · 32 · 2.5 µs, ") != std::string::npos);
  CHECK(ei.number() == Approx(inside.time().value));
  // With the memory pass apart too, the CTAs' cost adds with both terms; with the blocks' cost in the
  // max as well, the t_seq term leaves the fixed cost for the max.
  k.serial_memory = true;
  const CalibratedTime both = calibrated_time(*mha, k, peak, bw, 132, 1.98e9, false, Bytes{0});
  CHECK(both.time().value == Approx(15.02e-6 + over.compute.value + 80e-6 + memory));
  k.serial_memory = false;
  k.sequences_overlap = true;
  const CalibratedTime blocks = calibrated_time(*mha, k, peak, bw, 132, 1.98e9, false, Bytes{0});
  CHECK(blocks.fixed.value == Approx(15e-6));
  CHECK(blocks.time().value == Approx(15e-6 + std::max({over.compute.value + 80e-6, memory, blocks.blocks.value})));
  rf.kernels[static_cast<std::size_t>(KernelFamily::expanded_prefill)] = k;
  const OpTime tb = op_time(*mha, rf);
  CHECK(explain_op_time("attention", *mha, rf, tb).number() == Approx(blocks.time().value));
}

TEST_CASE("fp8 generation MLA: latent attention over an fp8 cache at the fp8 peak, with its own efficiency and costs", "[efficiency][example]") {
  // DeepSeek-V3, 64 sequences of 4,096 keys: the latent op over an fp8 cache is the bf16 one's FLOPs.
  const ModelSpec m = load_model("deepseek-v3");
  Workload w;
  w.groups = {SequenceGroup{64, 1, 4095}};
  w.kv = KvDtype::fp8;
  const PathPlan fp8_plan = mla_path(m, w, PathKind::absorb);
  const Op fp8 = *fp8_plan.find(OpId::latent_attention_mqa);
  w.kv = KvDtype::bf16;
  const Op bf16 = *mla_path(m, w, PathKind::absorb).find(OpId::latent_attention_mqa);
  CHECK(fp8.fp8_cache);
  CHECK_FALSE(fp8.fp8);
  CHECK_FALSE(bf16.fp8_cache);
  CHECK(fp8.flops.value == bf16.flops.value);
  KernelEfficiency k{.fixed = Seconds{8e-6}, .per_sequence = Seconds{50e-9}, .eta_compute = 0.5, .eta_compute_fp8 = 0.4, .eta_compute_fp8_tensor = std::nullopt,
                     .fixed_fp8_cache = Seconds{3e-6}, .per_sequence_fp8_cache = Seconds{20e-9}, .eta_memory = 0.8, .rows = 1};
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::absorbed_decode)] = k;
  prof.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)] = k;
  // H100 runs fp8 generation MLA: the fp8 op's compute term is the bf16 one's times
  // (989.4 · 0.5) / (1978.9 · 0.4) = 0.6250, and it pays the fp8 kernel's launch costs.
  const Roofline h100 = roofline_for(load_gpu("h100"), DType::bf16, prof);
  CHECK(h100.latent_fp8);
  CHECK(runs_at_fp8_peak(fp8, h100));
  CHECK(takes_fp8_efficiency(fp8, h100));
  CHECK_FALSE(runs_at_fp8_peak(bf16, h100));
  const OpTime a = op_time(fp8, h100), b = op_time(bf16, h100);
  CHECK(a.compute.value / b.compute.value == Approx(989.4 * 0.5 / (1978.9 * 0.4)));
  CHECK(a.compute.value / b.compute.value == Approx(0.6250).epsilon(1e-4));
  CHECK(a.fixed.value < b.fixed.value);
  // The path's other ops (the folds) are bf16 kernels whatever the cache.
  for (const Op& op : fp8_plan)
    if (op.id != OpId::latent_attention_mqa) CHECK_FALSE(runs_at_fp8_peak(op, h100));
  // Speed of light too: F / peak_fp8.
  const Roofline sol = speed_of_light(h100);
  CHECK(op_time(fp8, sol).compute.value == Approx(fp8.flops.value / 1978.9e12));
  CHECK(op_time(bf16, sol).compute.value == Approx(bf16.flops.value / 989.4e12));
  // B200 runs it (TRTLLM-GEN): the latent family keeps its fp8-cache costs, and so does GQA's, for
  // its TRTLLM-GEN launches over any cache.
  const Roofline b200 = roofline_for(load_gpu("b200"), DType::bf16, prof);
  CHECK(runs_at_fp8_peak(fp8, b200));
  CHECK(b200.kernels[static_cast<std::size_t>(KernelFamily::absorbed_decode)]->fixed_fp8_cache.has_value());
  CHECK(b200.kernels[static_cast<std::size_t>(KernelFamily::attention_decode)]->fixed_fp8_cache.has_value());
  // A100 does not (sm80): the bf16 kernel's peak, efficiency and costs for both.
  const Roofline a100 = roofline_for(load_gpu("a100"), DType::bf16, prof);
  CHECK_FALSE(a100.latent_fp8);
  CHECK_FALSE(runs_at_fp8_peak(fp8, a100));
  CHECK_FALSE(a100.kernels[static_cast<std::size_t>(KernelFamily::absorbed_decode)]->fixed_fp8_cache.has_value());
  CHECK(op_time(fp8, a100).compute.value == Approx(op_time(bf16, a100).compute.value));
  CHECK(op_time(fp8, a100).fixed.value == Approx(op_time(bf16, a100).fixed.value));
}

TEST_CASE("fp8 generation MLA on every bundled MLA model and GPU: only the latent op over an fp8 cache moves to the fp8 peak", "[efficiency][property]") {
  const std::vector<EfficiencyProfile> profiles = bundled_efficiency();
  for (const BundledEntry& g : bundled_gpus()) {
    const HardwareSpec hw = load_gpu(g.short_name);
    if (!hw.peak_flops(DType::bf16)) continue;
    const Roofline rf = default_roofline(hw, DType::bf16, profiles);
    const bool runs = latent_decode_reads_fp8_cache(hw).value_or(false) && hw.peak_flops(DType::fp8).has_value();
    for (const BundledEntry& e : bundled_models()) {
      const ModelSpec m = load_model(e.short_name);
      if (!m.is_mla()) continue;
      for (const KvDtype kv : {KvDtype::bf16, KvDtype::fp8}) {
        Workload w;
        w.kv = kv;
        w.groups = {SequenceGroup{8, 1, 2047}};
        w.projections = true;
        w.weights = attention_weight_dtype(m);
        for (const PathKind kind : paths_for(m))
          for (const Op& op : mla_path(m, w, kind)) {
            INFO(g.short_name << " " << e.short_name << " " << op.name() << " kv " << (kv == KvDtype::fp8 ? "fp8" : "bf16"));
            const bool latent = op.id == OpId::latent_attention_mqa && kv == KvDtype::fp8;
            CHECK(runs_at_fp8_peak(op, rf) == ((op.fp8 && hw.peak_flops(DType::fp8).has_value()) || (latent && runs)));
            // At the fp8 peak the compute term is never slower than the same op at the bf16 one.
            if (latent && runs) {
              Op as_bf16 = op;
              as_bf16.fp8_cache = false;
              CHECK(op_time(op, speed_of_light(rf)).compute.value < op_time(as_bf16, speed_of_light(rf)).compute.value);
            }
          }
      }
    }
  }
}

TEST_CASE("calibrated times are never faster than speed of light on any bundled model and profile", "[efficiency][property]") {
  const std::vector<EfficiencyProfile> profiles = bundled_efficiency();
  REQUIRE(profiles.size() >= 4);
  for (const BundledEntry& g : bundled_gpus()) {
    const HardwareSpec hw = load_gpu(g.short_name);
    if (!hw.peak_flops(DType::bf16)) continue;
    const Roofline rf = default_roofline(hw, DType::bf16, profiles);
    const Roofline sol = speed_of_light(rf);
    for (const BundledEntry& e : bundled_models()) {
      const ModelSpec m = load_model(e.short_name);
      for (const KvDtype kv : {KvDtype::bf16, KvDtype::fp8}) {
      Workload w;
      w.kv = kv;
      w.groups = {SequenceGroup{16, 1, 4095}, SequenceGroup{2, 700, 3000}};
      w.projections = true;
      w.weights = attention_weight_dtype(m);
      std::vector<PathPlan> plans;
      if (m.is_mla())
        for (PathKind k : paths_for(m)) plans.push_back(mla_path(m, w, k));
      else
        plans.push_back(standard_path(m, w));
      for (const PathPlan& plan : plans)
        for (const Op& op : plan) {
          INFO(g.short_name << " " << e.short_name << " " << op.name() << " kv " << (kv == KvDtype::fp8 ? "fp8" : "bf16"));
          const OpTime t = op_time(op, rf), s = op_time(op, sol);
          CHECK(std::isfinite(t.time.value));
          CHECK(t.time.value >= s.time.value * (1 - 1e-12));
          CHECK(t.calibrated == rf.kernels[static_cast<std::size_t>(family_of(op))].has_value());
        }
      }
    }
  }
}

TEST_CASE("the transfer rule: a GPU's own profile then its architecture's then the one over all", "[efficiency]") {
  const std::vector<EfficiencyProfile> profiles = bundled_efficiency();
  auto pick = [&](const char* gpu) {
    const auto p = efficiency_for(load_gpu(gpu), profiles);
    return p ? p->name : std::string("(none)");
  };
  CHECK(pick("h100-sxm") == "h100-sxm");
  CHECK(pick("h800") == "h800");
  CHECK(pick("b200") == "b200");
  CHECK(pick("a100-80gb") == "a100-80gb");
  // The held-out Hopper GPUs and the other Hopper part take the Hopper profile.
  CHECK(pick("h200") == "hopper");
  CHECK(pick("h20") == "hopper");
  CHECK(pick("h100-pcie") == "hopper");
  CHECK(pick("gb200") == "gb200");
  CHECK(pick("a100-40gb") == "ampere");
  // No Ada or CDNA measurements: the profile fitted over every architecture.
  CHECK(pick("l40s") == "any");
  CHECK(pick("mi300x") == "any");
}

TEST_CASE("the transfer rule per family: a family the chosen profile lacks comes from the next that has it", "[efficiency]") {
  // Hand-made profiles: the GPU's own (decode only), its architecture's (decode and GEMM), and the
  // one over all (GEMM and elementwise).
  auto make = [](const char* name, const char* scope, std::initializer_list<std::pair<KernelFamily, double>> fams) {
    EfficiencyProfile p;
    p.name = name, p.scope = scope, p.architecture = std::string(scope) == "any" ? "" : "hopper", p.gpu = std::string(scope) == "gpu" ? "H800 SXM5 80GB" : "";
    for (auto [f, eta] : fams) {
      KernelEfficiency k;
      k.eta_memory = eta;
      p.kernels[static_cast<std::size_t>(f)] = k;
    }
    return p;
  };
  const std::vector<EfficiencyProfile> profiles{make("any", "any", {{KernelFamily::gemm, 0.3}, {KernelFamily::elementwise, 0.4}}),
                                                make("hopper", "architecture", {{KernelFamily::absorbed_decode, 0.5}, {KernelFamily::gemm, 0.6}}),
                                                make("h800", "gpu", {{KernelFamily::absorbed_decode, 0.7}})};
  const auto p = efficiency_for(load_gpu("h800"), profiles);
  REQUIRE(p);
  CHECK(p->name == "h800");
  CHECK(p->kernel(KernelFamily::absorbed_decode)->eta_memory == 0.7);  // its own, not the architecture's
  CHECK(p->kernel(KernelFamily::gemm)->eta_memory == 0.6);             // the architecture's, not the one over all
  CHECK(p->kernel(KernelFamily::elementwise)->eta_memory == 0.4);
  CHECK_FALSE(p->kernel(KernelFamily::bmm).has_value());
  CHECK(p->describe() == "h800 profile (no tables): absorbed_decode; gemm from the hopper profile; elementwise from the any profile");
  // The bundled profiles: H800's own tables time no fold or elementwise pass; Hopper's (H100's) do.
  const auto h800 = efficiency_for(load_gpu("h800"), bundled_efficiency());
  REQUIRE(h800);
  CHECK(h800->describe().find("; attention, attention_decode, bmm, elementwise from the hopper profile") != std::string::npos);
}

TEST_CASE("bundled profiles name every table with its source and never fit on H20 or H200", "[efficiency]") {
  for (const EfficiencyProfile& p : bundled_efficiency()) {
    INFO(p.source);
    CHECK_FALSE(p.fitted_on.empty());
    CHECK(p.written_by.rfind("mlaplan-validate --transfer", 0) == 0);
    for (const FittedTable& t : p.fitted_on) {
      CHECK(t.gpu.rfind("H20", 0) != 0);
      CHECK_FALSE(t.source.empty());
      CHECK_FALSE(t.licence.empty());
      CHECK(std::filesystem::exists(data_dir() / t.file));
    }
    CHECK(p.kernel(KernelFamily::absorbed_decode).has_value());
  }
}

TEST_CASE("efficiency profiles: hostile input is one line naming the file and key", "[efficiency][hostile]") {
  CHECK(refusal(minimal_profile()) == "(accepted)");
  json j = minimal_profile();
  j["kernelz"] = 1;
  CHECK(refusal(j) == "p.json: key 'kernelz' = 1: unknown key; did you mean 'kernels'?");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["eta_compute"] = 0;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.eta_compute' = 0: expected a number in (0, 1]");
  j["kernels"]["absorbed_decode"]["eta_compute"] = 1.5;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.eta_compute' = 1.5: expected a number in (0, 1]");
  j = minimal_profile();
  j["kernels"]["absorbed_decod"] = 1;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decod' = 1: unknown kernel family; did you mean 'absorbed_decode'?");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"].erase("fixed_s");
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.fixed_s' = (absent): required for every kernel family");
  j = minimal_profile();
  j["fitted_on"][0].erase("source");
  CHECK(refusal(j) == "p.json: key 'fitted_on[0].source' = (absent): expected a non-empty string");
  j = minimal_profile();
  j["fitted_on"][0]["gpu"] = "H200 SXM 141GB";
  CHECK(refusal(j) == "p.json: key 'fitted_on[0].gpu' = \"H200 SXM 141GB\": H20 and H200 measurements are held out and never fitted on");
  j = minimal_profile();
  j["fitted_on"] = json::array();
  CHECK(refusal(j) == "p.json: key 'fitted_on' = []: expected a non-empty list of the tables fitted on");
  j = minimal_profile();
  j["scope"] = "cluster";
  CHECK(refusal(j) == "p.json: key 'scope' = \"cluster\": expected gpu, architecture or any");
  j = minimal_profile();
  j["fitted_on"][0]["rows"] = 2.5;
  CHECK(refusal(j) == "p.json: key 'fitted_on[0].rows' = 2.5: expected a whole number of rows");
  j = minimal_profile();
  j["gpu"] = "H100 SXM5 80GB";
  CHECK(refusal(j) == "p.json: key 'gpu' = \"H100 SXM5 80GB\": only a profile of scope gpu names a GPU (scope is architecture)");
  CHECK(refusal(json::array()) == "p.json: key '(top level)' = []: expected an object");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["split_kv"] = "no";
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.split_kv' = \"no\": expected true or false");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["eta_compute_fp8"] = 1.5;
  CHECK(refusal(j).rfind("p.json: key 'kernels.absorbed_decode.eta_compute_fp8' = 1.5", 0) == 0);
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["eta_compute_fp8"] = 0;
  CHECK(refusal(j).rfind("p.json: key 'kernels.absorbed_decode.eta_compute_fp8' = 0", 0) == 0);
  j = minimal_profile();
  j["kernels"]["gemm"] = j["kernels"]["absorbed_decode"];
  j["kernels"]["gemm"].erase("split_kv");
  j["kernels"]["gemm"]["eta_compute_fp8_tensor"] = -0.1;
  CHECK(refusal(j).rfind("p.json: key 'kernels.gemm.eta_compute_fp8_tensor' = -0.1", 0) == 0);
  j["kernels"]["gemm"]["eta_compute_fp8_tensor"] = "0.5";
  CHECK(refusal(j).rfind("p.json: key 'kernels.gemm.eta_compute_fp8_tensor' = \"0.5\"", 0) == 0);
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["memory_reach"] = 0.5;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.memory_reach' = 0.5: expected a number in [1, 10000]");
  j["kernels"]["absorbed_decode"]["memory_reach"] = "4";
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.memory_reach' = \"4\": expected a number in [1, 10000]");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["serial_memory"] = "yes";
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.serial_memory' = \"yes\": expected true or false");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["per_cta_s"] = -1e-6;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.per_cta_s' = -1e-06: expected a number in [0, 1]");
  j["kernels"]["absorbed_decode"]["per_cta_s"] = "2e-6";
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.per_cta_s' = \"2e-6\": expected a number in [0, 1]");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["per_sequence_overlapped"] = 1;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.per_sequence_overlapped' = 1: expected true or false");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["per_cta_overlapped"] = "true";
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.per_cta_overlapped' = \"true\": expected true or false");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["per_sequence_mmha_s"] = -1e-9;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.per_sequence_mmha_s' = -1e-09: expected a number in [0, 1]");
  j["kernels"]["absorbed_decode"]["per_sequence_mmha_s"] = nullptr;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.per_sequence_mmha_s' = null: expected a number in [0, 1]");
  // The fraction of the FP32 peak MMHA's rate replaced: refused by name, not ignored.
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["eta_compute_mmha"] = 0.1;
  CHECK(refusal(j).rfind("p.json: key 'kernels.absorbed_decode.eta_compute_mmha' = 0.1", 0) == 0);
  // MMHA's rate and bandwidth fraction and the two forms of the L2 term, each outside its range (a
  // value below, one above, one not a number).
  for (const auto& [key, low, high, other, range] :
       {std::tuple{"mmha_flops_per_sm_cycle", "0", "257", "\"20\"", "(0, 256]"}, std::tuple{"eta_memory_mmha", "0", "1.5", "\"0.85\"", "(0, 1]"},
        std::tuple{"l2_bytes_per_sm_cycle", "0.9", "257", "null", "[1, 256]"}, std::tuple{"l2_speedup", "0.9", "17", "null", "[1, 16]"}})
    for (const char* bad : {low, high, other}) {
      j = minimal_profile();
      j["kernels"]["absorbed_decode"][key] = json::parse(bad);
      CHECK(refusal(j) == fmt::format("p.json: key 'kernels.absorbed_decode.{}' = {}: expected a number in {}", key, bad, range));
    }
  // A family's L2 term takes one form: both given is refused, not one silently preferred.
  j["kernels"]["absorbed_decode"]["l2_speedup"] = 1.4;
  j["kernels"]["absorbed_decode"]["l2_bytes_per_sm_cycle"] = 16;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.l2_bytes_per_sm_cycle' = 16: a family's L2 term is l2_speedup or l2_bytes_per_sm_cycle, not both");
  // The fp8-cache kernel's costs: a pair, each in seconds.
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["fixed_fp8_cache_s"] = 2e-6;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.fixed_fp8_cache_s' = 2e-06: needs per_sequence_fp8_cache_s beside it (the fp8-cache kernel's costs come as a pair)");
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["per_sequence_fp8_cache_s"] = 1e-9;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.per_sequence_fp8_cache_s' = 1e-09: needs fixed_fp8_cache_s beside it (the fp8-cache kernel's costs come as a pair)");
  j["kernels"]["absorbed_decode"]["fixed_fp8_cache_s"] = -1e-6;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.fixed_fp8_cache_s' = -1e-06: expected a number in [0, 1]");
  j["kernels"]["absorbed_decode"]["fixed_fp8_cache_s"] = 2e-6;
  j["kernels"]["absorbed_decode"]["per_sequence_fp8_cache_s"] = "1e-9";
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.per_sequence_fp8_cache_s' = \"1e-9\": expected a number in [0, 1]");
  j["kernels"]["absorbed_decode"]["per_sequence_fp8_cache_s"] = 2.0;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.per_sequence_fp8_cache_s' = 2.0: expected a number in [0, 1]");
  j["kernels"]["absorbed_decode"]["fixed_fp8_cache_z"] = 1;
  CHECK(refusal(j).rfind("p.json: key 'kernels.absorbed_decode.fixed_fp8_cache_z' = 1: unknown key", 0) == 0);
  // The unsplit launch's resident blocks: a whole number from 1, a lone block's share from 1/resident to
  // 1, latent attention only.
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["resident_ctas"] = 0;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.resident_ctas' = 0: expected a number in [1, 64]");
  j["kernels"]["absorbed_decode"]["resident_ctas"] = 2.5;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.resident_ctas' = 2.5: expected a whole number of blocks per SM");
  j["kernels"]["absorbed_decode"]["resident_ctas"] = "2";
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.resident_ctas' = \"2\": expected a number in [1, 64]");
  j["kernels"]["absorbed_decode"]["resident_ctas"] = 2;
  j["kernels"]["absorbed_decode"]["solo_share"] = 0.4;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.solo_share' = 0.4: expected a number in [0.5, 1]");
  j["kernels"]["absorbed_decode"]["solo_share"] = 1.2;
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.solo_share' = 1.2: expected a number in [0.5, 1]");
  j["kernels"]["absorbed_decode"].erase("resident_ctas");
  j["kernels"]["absorbed_decode"]["solo_share"] = 0.7;  // absent resident_ctas: 1, so a share below 1 is refused
  CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.solo_share' = 0.7: expected a number in [1, 1]");
  j = minimal_profile();
  j["kernels"]["gemm"] = j["kernels"]["absorbed_decode"];
  j["kernels"]["gemm"]["resident_ctas"] = 2;
  CHECK(refusal(j) == "p.json: key 'kernels.gemm.resident_ctas' = 2: only the latent attention families (absorbed_decode, sparse_decode) have an unsplit launch");
  // A profile round-trips through its writer, the optional keys with it.
  j = minimal_profile();
  j["kernels"]["absorbed_decode"]["split_kv"] = false;
  j["kernels"]["absorbed_decode"]["resident_ctas"] = 2;
  j["kernels"]["absorbed_decode"]["solo_share"] = 0.68;
  j["kernels"]["absorbed_decode"]["eta_compute_fp8"] = 0.3;
  j["kernels"]["absorbed_decode"]["memory_reach"] = 6.5;
  j["kernels"]["absorbed_decode"]["l2_bytes_per_sm_cycle"] = 14.5;
  j["kernels"]["absorbed_decode"]["eta_compute_fp8_tensor"] = 0.55;
  j["kernels"]["absorbed_decode"]["fixed_fp8_cache_s"] = 2.5e-6;
  j["kernels"]["absorbed_decode"]["per_sequence_fp8_cache_s"] = 3e-9;
  j["kernels"]["absorbed_decode"]["per_cta_s"] = 2.5e-6;
  j["kernels"]["absorbed_decode"]["serial_memory"] = true;
  j["kernels"]["absorbed_decode"]["per_sequence_overlapped"] = true;
  j["kernels"]["absorbed_decode"]["per_cta_overlapped"] = true;
  j["kernels"]["absorbed_decode"]["per_sequence_mmha_s"] = 1.25e-8;
  j["kernels"]["absorbed_decode"]["mmha_flops_per_sm_cycle"] = 18.5;
  j["kernels"]["absorbed_decode"]["eta_memory_mmha"] = 0.85;
  j["kernels"]["bmm"] = j["kernels"]["absorbed_decode"];
  j["kernels"]["bmm"].erase("l2_bytes_per_sm_cycle");
  for (const char* key : {"resident_ctas", "solo_share"}) j["kernels"]["bmm"].erase(key);
  j["kernels"]["bmm"]["l2_speedup"] = 1.4;
  const EfficiencyProfile p = parse_efficiency_profile(j, "p.json");
  const EfficiencyProfile q = parse_efficiency_profile(json::parse(efficiency_profile_json(p).dump()), "p.json");
  CHECK(q.describe() == p.describe());
  CHECK(q.kernel(KernelFamily::absorbed_decode)->eta_memory == 0.8);
  const KernelEfficiency& qk = *q.kernel(KernelFamily::absorbed_decode);
  const bool q_split = qk.split_kv;
  CHECK(!q_split);
  CHECK(qk.eta_compute_fp8.value_or(0) == 0.3);
  CHECK(qk.memory_reach == 6.5);
  CHECK(qk.resident_ctas == 2);
  CHECK(qk.solo_share == 0.68);
  CHECK(qk.l2_bytes_per_sm_cycle == 14.5);
  CHECK(qk.l2_speedup == 1);
  CHECK(q.kernel(KernelFamily::bmm)->l2_speedup == 1.4);
  CHECK(q.kernel(KernelFamily::bmm)->l2_bytes_per_sm_cycle == 0);
  CHECK(qk.eta_compute_fp8_tensor.value_or(0) == 0.55);
  CHECK(qk.fixed_fp8_cache.value_or(Seconds{0}).value == 2.5e-6);
  CHECK(qk.per_sequence_fp8_cache.value_or(Seconds{0}).value == 3e-9);
  CHECK(qk.per_cta.value == 2.5e-6);
  const bool q_serial = qk.serial_memory, q_overlap = qk.sequences_overlap;
  CHECK(q_serial);
  CHECK(q_overlap);
  const bool q_cta = qk.cta_overlap;
  CHECK(q_cta);
  CHECK(qk.per_sequence_mmha.value_or(Seconds{0}).value == 1.25e-8);
  CHECK(qk.mmha_flops_per_sm_cycle.value_or(0) == 18.5);
  CHECK(qk.eta_memory_mmha.value_or(0) == 0.85);
  const EfficiencyProfile d = parse_efficiency_profile(minimal_profile(), "p.json");
  const KernelEfficiency& dk = *d.kernel(KernelFamily::absorbed_decode);
  const bool d_split = dk.split_kv, d_fp8 = dk.eta_compute_fp8.has_value(), d_tensor = dk.eta_compute_fp8_tensor.has_value();
  CHECK(d_split);
  CHECK(dk.memory_reach == 1);  // absent: one SM's share per CTA
  CHECK(dk.resident_ctas == 1);  // absent: one block per SM at a time, at the SM's rate
  CHECK(dk.solo_share == 1);
  CHECK(dk.l2_bytes_per_sm_cycle == 0);  // absent: no L2 term
  CHECK(dk.l2_speedup == 1);
  CHECK(dk.per_cta.value == 0);  // absent: no cost per CTA
  const bool d_serial = dk.serial_memory, d_overlap = dk.sequences_overlap, d_mmha = dk.per_sequence_mmha.has_value();
  CHECK(!d_serial);              // absent: compute and memory overlap
  CHECK(!d_overlap);             // absent: the cost per sequence is added
  const bool d_cta = dk.cta_overlap;
  CHECK(!d_cta);                 // absent: the cost per CTA is added
  CHECK(!d_mmha);                // absent: MMHA's blocks cost per_sequence_s
  CHECK_FALSE(dk.mmha_flops_per_sm_cycle.has_value());  // absent: MMHA computes at the tensor peak like XQA
  CHECK(!d_fp8);
  CHECK(!d_tensor);
  const bool d_cache = dk.fixed_fp8_cache.has_value() || dk.per_sequence_fp8_cache.has_value();
  CHECK(!d_cache);
}

TEST_CASE("the shipped profiles: A100's decode kernel does not split keys and Hopper's does", "[efficiency]") {
  // Fitted, not typed: each GPU's own rows chose the kernel that explains them better.
  const auto profiles = bundled_efficiency();
  auto profile = [&](const std::string& name) {
    for (const EfficiencyProfile& p : profiles)
      if (p.name == name) return p;
    FAIL("no bundled profile " << name);
    return EfficiencyProfile{};
  };
  auto splits = [&](const std::string& name) {
    const EfficiencyProfile p = profile(name);
    return p.kernel(KernelFamily::absorbed_decode)->split_kv;
  };
  CHECK(!splits("a100-80gb"));
  CHECK(!splits("ampere"));
  for (const char* n : {"h100-sxm", "h800", "hopper", "b200", "gb200", "blackwell", "any"}) {
    INFO(n);
    CHECK(splits(n));
  }
  // ... as TensorRT-LLM's dispatch has it: fmha_v2's unsplit kernel on sm80 and sm89, FlashMLA on
  // sm90, TRTLLM-GEN's multi-CTA mode on sm100; nothing known where it does not run.
  for (const auto& [gpu, name] : {std::pair{"a100-80gb", "a100-80gb"}, {"h100-sxm", "h100-sxm"}, {"h800", "h800"}, {"b200", "b200"}, {"gb200", "gb200"}}) {
    INFO(gpu);
    REQUIRE(latent_decode_splits_keys(load_gpu(gpu)));
    CHECK(*latent_decode_splits_keys(load_gpu(gpu)) == splits(name));
  }
  CHECK(latent_decode_splits_keys(load_gpu("l40s")) == false);
  CHECK(latent_decode_splits_keys(load_gpu("gb200")) == true);
  CHECK_FALSE(latent_decode_splits_keys(load_gpu("mi300x")));
  // TensorRT-LLM's fp8 generation MLA: sm89 and later, not sm80 (whose "fp8" rows time bf16 reads).
  for (const char* gpu : {"a100-80gb", "a100-40gb"}) CHECK(latent_decode_reads_fp8_cache(load_gpu(gpu)) == false);
  for (const char* gpu : {"l40s", "rtx-4090", "h100-sxm", "h800", "h200", "h20", "b200", "gb200"}) CHECK(latent_decode_reads_fp8_cache(load_gpu(gpu)) == true);
  CHECK_FALSE(latent_decode_reads_fp8_cache(load_gpu("mi300x")));
  // A100's own fit finds fmha_v2's blocks sharing its SMs (resident_ctas), a lone one faster than its
  // share beside another; the split kernels' fits have no unsplit launch to show it.
  const KernelEfficiency a100 = *profile("a100-80gb").kernel(KernelFamily::absorbed_decode);
  CHECK(a100.resident_ctas == 2);
  CHECK(a100.solo_share > 0.5);
  CHECK(a100.solo_share < 1);
  for (const char* n : {"h100-sxm", "h800", "b200", "gb200"}) {
    INFO(n);
    CHECK(profile(n).kernel(KernelFamily::absorbed_decode)->resident_ctas == 1);
  }
  // A profile fitted on other GPUs times a GPU's latent decode with the kernel that GPU runs: the Ada
  // GPUs take the one over all (which splits) without splitting, an AMD GPU as fitted, and a GPU's own
  // fit stands.
  auto chosen = [&](const char* gpu) { return efficiency_for(load_gpu(gpu), profiles)->kernel(KernelFamily::absorbed_decode)->split_kv; };
  CHECK_FALSE(chosen("l40s"));
  CHECK(efficiency_for(load_gpu("l40s"), profiles)->describe().ends_with("; absorbed_decode with this GPU's kernel, which does not split keys, 2 blocks to an SM"));
  // The profile over all fits A100's unsplit rows too, so its residency is fitted (two blocks, as the
  // kernel's launch resources give) and the Ada GPUs take it as it is; A100 keeps its own.
  for (const char* gpu : {"l40s", "rtx-4090"}) {
    INFO(gpu);
    const KernelEfficiency k = *efficiency_for(load_gpu(gpu), profiles)->kernel(KernelFamily::absorbed_decode);
    CHECK(k.resident_ctas == kUnsplitLatentCtasPerSm);
    CHECK(k.solo_share == profile("any").kernel(KernelFamily::absorbed_decode)->solo_share);
  }
  CHECK(efficiency_for(load_gpu("a100-80gb"), profiles)->kernel(KernelFamily::absorbed_decode)->solo_share == a100.solo_share);
  CHECK(efficiency_for(load_gpu("h200"), profiles)->describe().find("absorbed_decode with") == std::string::npos);
  CHECK_FALSE(chosen("rtx-4090"));
  CHECK(chosen("mi300x"));
  CHECK(chosen("h200"));
  CHECK(chosen("gb200"));
  CHECK_FALSE(chosen("a100-40gb"));
  std::vector<EfficiencyProfile> own{profile("a100-80gb")};
  own.front().kernels[static_cast<std::size_t>(KernelFamily::absorbed_decode)]->split_kv = true;
  CHECK(efficiency_for(load_gpu("a100-80gb"), own)->kernel(KernelFamily::absorbed_decode)->split_kv);
  own.front().scope = "any";
  CHECK_FALSE(efficiency_for(load_gpu("a100-80gb"), own)->kernel(KernelFamily::absorbed_decode)->split_kv);
  // Block-scaled fp8 GEMMs in TensorRT-LLM's H100 table reach a smaller fraction of the fp8 peak
  // than its bf16 GEMMs of the bf16 peak.
  const KernelEfficiency g = *profile("h100-sxm").kernel(KernelFamily::gemm);
  REQUIRE(g.eta_compute_fp8);
  CHECK(*g.eta_compute_fp8 < g.eta_compute);
  // Its per-tensor fp8 GEMMs (their dynamic quantisation timed apart) reach more of the fp8 peak than
  // the block-scaled ones, which rescale every 128 of the reduction; so do B200's, whose block-scaled
  // rows are DeepGEMM's (their own efficiency, and no other block-scaled one).
  // (GB200's two fit within 1% of each other, 60.3% and 60.9%: not checked.)
  for (const char* n : {"h100-sxm", "b200"}) {
    INFO(n);
    const KernelEfficiency e = *profile(n).kernel(KernelFamily::gemm);
    REQUIRE(e.eta_compute_fp8_tensor);
    CHECK(*e.eta_compute_fp8_tensor > e.eta_compute_fp8.value_or(e.eta_compute_deepgemm.value_or(1)));
  }
  CHECK_FALSE(profile("h100-sxm").kernel(KernelFamily::gemm)->eta_compute_deepgemm.has_value());
  for (const char* n : {"b200", "gb200"}) {
    INFO(n);
    CHECK(profile(n).kernel(KernelFamily::gemm)->eta_compute_deepgemm.has_value());
    CHECK_FALSE(profile(n).kernel(KernelFamily::gemm)->eta_compute_fp8.has_value());
  }
  // H800's tables are DeepGEMM's alone: its efficiency is both the dense one and DeepGEMM's.
  const KernelEfficiency h800 = *profile("h800").kernel(KernelFamily::gemm);
  CHECK(h800.eta_compute_deepgemm.value_or(0) == h800.eta_compute);
}

TEST_CASE("cost uses the calibrated profile by default and says which, --sol gives the bound", "[efficiency][cli]") {
  using test::run;
  for (const char* gpu : {"h200", "h20"}) {
    INFO(gpu);
    const json j = json::parse(run(std::string("cost --model deepseek-v3 --batch 32 --format json --gpu ") + gpu).out);
    CHECK(j["time_model"] == "calibrated");
    CHECK(j["eta_source"] == "hopper profile (fitted on H100 SXM5 80GB + H800 SXM5 80GB): absorbed_decode, expanded_prefill, attention, "
                             "attention_decode, gemm, bmm, grouped_gemm, elementwise; sparse_decode, indexer from the any profile");
    CHECK(j["paths"]["absorb"]["time_s_all_layers"].get<double>() > j["paths"]["absorb"]["sol_time_s_all_layers"].get<double>());
  }
  const json s = json::parse(run("cost --model deepseek-v3 --batch 32 --format json --gpu h200 --sol").out);
  CHECK(s["time_model"] == "speed of light");
  CHECK(s["eta_source"] == "speed of light (--sol)");
  CHECK(s["paths"]["absorb"]["time_s_all_layers"].get<double>() == s["paths"]["absorb"]["sol_time_s_all_layers"].get<double>());
  const json u = json::parse(run("cost --model deepseek-v3 --format json --gpu h200 --eta-memory 0.5").out);
  CHECK(u["time_model"] == "uniform efficiency");
  CHECK(u["eta_source"] == "command line");
  test::expect_refusal("cost --model deepseek-v3 --sol --eta-compute 0.5", "--eta-compute: value '0.5': --sol is every op at peak; give one or the other");
  // The crossover reports both Q*.
  const json x = json::parse(run("crossover --model deepseek-v3 --gpu h200 --prefix 8192 --tp 1 --format json").out);
  const json& row = x["rows"][0];
  CHECK(row["roofline_crossover_query"].get<double>() != row["sol_crossover_query"].get<double>());
  const json b = json::parse(run("crossover --model deepseek-v3 --gpu h200 --prefix 8192 --tp 1 --format json --sol").out);
  CHECK(row["sol_crossover_query"].get<double>() == b["rows"][0]["roofline_crossover_query"].get<double>());
}

TEST_CASE("DeepGEMM's tile choice: the fewest waves, then the fullest last wave", "[efficiency][example]") {
  // Expected values from DeepGEMM's own get_best_configs (deep_gemm/jit_kernels/gemm.py@03d0be3d:70-103),
  // run on these shapes: (block_m, block_n) and the tiles they make.
  struct Case {
    double m, n, sms, bm, bn, tiles;
  };
  for (const Case& c : {Case{16, 128, 132, 64, 16, 8}, Case{16, 256, 132, 64, 16, 16}, Case{128, 128, 132, 64, 16, 16}, Case{4096, 7168, 132, 256, 128, 896},
                        Case{4096, 2112, 132, 256, 88, 384}, Case{64, 24576, 132, 64, 96, 256}, Case{512, 1536, 132, 64, 96, 128},
                        Case{16384, 7168, 148, 256, 128, 3584}, Case{1, 4096, 148, 64, 32, 128}}) {
    INFO(c.m << " x " << c.n << " on " << c.sms << " SMs");
    const GemmTile t = deepgemm_tile(c.m, c.n, c.sms);
    CHECK(t.m == c.bm);
    CHECK(t.n == c.bn);
    CHECK(std::ceil(c.m / t.m) * std::ceil(c.n / t.n) == c.tiles);
  }
  CHECK(deepgemm_tile(16, 128, 0).m == 0);  // no SMs: no tile
}

TEST_CASE("a block-scaled fp8 GEMM: DeepGEMM's tiles, no split-K, and at least its reduction steps", "[efficiency][example]") {
  // 16 x 256 output over K = 16,384 on 132 SMs at 1.98 GHz: DeepGEMM's 64 x 16 tiles, 16 CTAs.
  Op op = gemm_op(OpId::q_proj, 16, 16384, 256, 1, 1);
  set_weight_precision(op, WeightDtype::fp8);
  KernelEfficiency k;
  k.fixed = Seconds{3e-6};
  k.eta_compute = 0.8;
  k.eta_compute_fp8 = 0.5;
  k.k_step = Seconds{300e-9};
  k.eta_memory = 0.8;
  const FlopsPerSecond fp8_peak{1979e12};
  const BytesPerSecond bw{3.35e12};
  CHECK(block_scaled_gemm(op, true));
  CHECK_FALSE(block_scaled_gemm(op, false));  // a GPU without an fp8 peak runs it otherwise
  const Tiling tl = launch_tiling(op, true, 132);
  CHECK(tl.split_k == 1);
  CHECK(tl.ctas == 16);
  CHECK(tl.padded_flops == 2.0 * 16 * 64 * 16 * 16384);  // 536,870,912: four times the 16 rows'
  CHECK(op.tiling.split_k == 32);                        // a bf16 GEMM may split K = 16,384 in 512s
  const CalibratedTime t = calibrated_time(op, k, fp8_peak, bw, 132, 1.98e9, true, Bytes{0});
  CHECK(t.k_steps == 128);
  // 128 steps of 300 ns at 1 GHz on a 1.98 GHz SM: 19.39 µs, above the compute term
  // (536.9 MFLOP / (1,979 TFLOP/s · 0.5 · 16/132) = 4.48 µs) and the memory term (fp8 weights
  // 4,194,304 B, input 262,144 and output 4,096 at 1 byte a value: 4,460,544 B / (3.35 TB/s · 0.8 ·
  // 16/132) = 13.73 µs).
  CHECK(t.k_step_time.value == Approx(128 * 300e-9 / 1.98).epsilon(1e-12));
  CHECK(t.compute.value == Approx(19.3939e-6).epsilon(1e-5));
  CHECK(t.memory.value == Approx(4460544.0 / (3.35e12 * 0.8 * 16 / 132)).epsilon(1e-9));
  CHECK(t.time().value == Approx(3e-6 + 19.3939e-6).epsilon(1e-5));
  // Without the step cost the compute term is the padded tiles' at their wave.
  KernelEfficiency no_step = k;
  no_step.k_step = Seconds{0};
  CHECK(calibrated_time(op, no_step, fp8_peak, bw, 132, 1.98e9, true, Bytes{0}).compute.value ==
        Approx(536870912.0 / (1979e12 * 0.5 * 16 / 132)).epsilon(1e-9));
  // Per-tensor fp8 and bf16 GEMMs keep their own tiling and no step bound.
  Op tensor = op;
  tensor.fp8_per_tensor = true;
  CHECK(calibrated_time(tensor, k, fp8_peak, bw, 132, 1.98e9, true, Bytes{0}).k_steps == 0);
  CHECK(launch_tiling(tensor, true, 132).split_k == 32);
  // On DeepGEMM: its own efficiency where the family has one.
  KernelEfficiency deep = no_step;
  deep.eta_compute_deepgemm = 0.75;
  op.deepgemm = true;
  CHECK(calibrated_time(op, deep, fp8_peak, bw, 132, 1.98e9, true, Bytes{0}).compute.value ==
        Approx(536870912.0 / (1979e12 * 0.75 * 16 / 132)).epsilon(1e-9));
}

TEST_CASE("DeepGEMM's efficiency: the kernel's own, else the family's fp8 one, and the other way round", "[efficiency][example]") {
  KernelEfficiency k;
  k.eta_compute = 0.8;
  CHECK(eta_compute_for(k, true, false, true) == 0.8);  // nothing fp8: the dense one
  k.eta_compute_deepgemm = 0.7;
  CHECK(eta_compute_for(k, true, false, true) == 0.7);
  CHECK(eta_compute_for(k, true, false, false) == 0.7);  // the engine's own block kernel, without its own: DeepGEMM's
  CHECK(eta_compute_for(k, true, true, false) == 0.8);   // per tensor: not a block-scaled kernel
  CHECK(eta_compute_for(k, false, false, true) == 0.8);  // bf16
  k.eta_compute_fp8 = 0.5;
  CHECK(eta_compute_for(k, true, false, true) == 0.7);
  CHECK(eta_compute_for(k, true, false, false) == 0.5);
  CHECK(eta_compute_for(k, true, true, true) == 0.5);  // per tensor without its own: the fp8 one
  k.eta_compute_fp8_tensor = 0.6;
  CHECK(eta_compute_for(k, true, true, true) == 0.6);
  k.eta_compute_deepgemm.reset();
  CHECK(eta_compute_for(k, true, false, true) == 0.5);  // DeepGEMM without its own: the fp8 one
}

TEST_CASE("the transfer rule: a GPU profile without DeepGEMM's efficiency takes its architecture's", "[efficiency]") {
  auto make = [](const char* name, const char* scope, std::optional<double> deep) {
    EfficiencyProfile p;
    p.name = name, p.scope = scope, p.architecture = std::string(scope) == "any" ? "" : "hopper", p.gpu = std::string(scope) == "gpu" ? "H100 SXM5 80GB" : "";
    KernelEfficiency k;
    k.eta_compute_fp8 = 0.48;
    k.eta_compute_deepgemm = deep;
    p.kernels[static_cast<std::size_t>(KernelFamily::gemm)] = k;
    return p;
  };
  const std::vector<EfficiencyProfile> profiles{make("any", "any", 0.6), make("hopper", "architecture", 0.73), make("h100-sxm", "gpu", std::nullopt)};
  const auto p = efficiency_for(load_gpu("h100"), profiles);
  REQUIRE(p);
  CHECK(p->kernel(KernelFamily::gemm)->eta_compute_deepgemm.value_or(0) == 0.73);
  CHECK(p->kernel(KernelFamily::gemm)->eta_compute_fp8.value_or(0) == 0.48);  // its own block kernel's stays
  CHECK(p->describe() == "h100-sxm profile (no tables): gemm; gemm's DeepGEMM η_c from the hopper profile");
  // Its own, where it has one.
  const auto own = efficiency_for(load_gpu("h100"), {make("hopper", "architecture", 0.73), make("h100-sxm", "gpu", 0.7)});
  REQUIRE(own);
  CHECK(own->kernel(KernelFamily::gemm)->eta_compute_deepgemm.value_or(0) == 0.7);
  CHECK(own->describe() == "h100-sxm profile (no tables): gemm");
}

TEST_CASE("a step's block-fp8 GEMMs run DeepGEMM where the engine says so, and nothing else moves", "[efficiency][property]") {
  // Every bundled model with fp8 weights, its layer's ops (the projections in scope), on every bundled
  // Hopper and Blackwell GPU: a Roofline that runs DeepGEMM times a block-scaled GEMM with the
  // family's DeepGEMM efficiency, and every other op exactly as before; a block-scaled GEMM is never
  // faster than its reduction steps or its speed of light.
  for (const char* gpu : {"h100", "h800", "b200"}) {
    const HardwareSpec hw = load_gpu(gpu);
    const Roofline own = default_roofline(hw, DType::bf16, bundled_efficiency());
    Roofline deep = own;
    deep.deepgemm = true;
    const KernelEfficiency& g = *own.kernels[static_cast<std::size_t>(KernelFamily::gemm)];
    const double ratio = eta_compute_for(g, true, false, false) / eta_compute_for(g, true, false, true);
    int scaled = 0, compared = 0;
    for (const ModelSpec& m : test::all_models()) {
      Workload w;
      w.weights = WeightDtype::fp8;
      w.projections = true;
      w.groups = {SequenceGroup{4, 1024, 0}};
      for (const PathKind kind : {PathKind::absorb, PathKind::expand}) {
        if (!m.is_mla() && kind == PathKind::expand) continue;
        const PathPlan plan = m.is_mla() ? mla_path(m, w, kind) : standard_path(m, w);
        for (const Op& op : plan) {
          INFO(gpu << " " << m.name << " " << op.name());
          const OpTime a = op_time(op, own), b = op_time(op, deep);
          if (!block_scaled_gemm(op, takes_fp8_efficiency(op, own))) {
            CHECK(a.time.value == b.time.value);
            continue;
          }
          ++scaled;
          const double steps = std::ceil(op.tiling.gemm_k / kScaledKStep) * g.k_step.value * kBlockCostClockHz / hw.sm_clock_hz;
          CHECK(a.compute.value >= steps * (1 - 1e-12));
          CHECK(b.compute.value >= steps * (1 - 1e-12));
          CHECK(b.time.value >= op_time(op, speed_of_light(own)).time.value);
          // Compute-bound above the step bound: the two differ by the efficiencies alone.
          if (b.compute.value > b.memory.value && a.compute.value > a.memory.value && b.compute.value > 1.01 * steps) {
            ++compared;
            CHECK(b.compute.value == Approx(a.compute.value * ratio).epsilon(1e-9));
          }
        }
      }
    }
    INFO(gpu);
    CHECK(scaled > 0);
    CHECK(compared > 0);
  }
  // H100's own block kernel (TensorRT-LLM's) is slower than DeepGEMM; H800 and B200 time only DeepGEMM.
  const Roofline h100 = default_roofline(load_gpu("h100"), DType::bf16, bundled_efficiency());
  const KernelEfficiency& g = *h100.kernels[static_cast<std::size_t>(KernelFamily::gemm)];
  CHECK(eta_compute_for(g, true, false, true) > 1.2 * eta_compute_for(g, true, false, false));
}

TEST_CASE("efficiency profiles: DeepGEMM's efficiency and the reduction step, hostile and round-tripped", "[efficiency][hostile]") {
  json j = minimal_profile();
  j["kernels"]["gemm"] = j["kernels"]["absorbed_decode"];
  j["kernels"]["gemm"].erase("split_kv");
  for (const json& bad : {json(0), json(1.5), json("0.7"), json(nullptr)}) {
    j["kernels"]["gemm"]["eta_compute_deepgemm"] = bad;
    CHECK(refusal(j).rfind("p.json: key 'kernels.gemm.eta_compute_deepgemm' = " + bad.dump(), 0) == 0);
  }
  j["kernels"]["gemm"]["eta_compute_deepgemm"] = 0.73;
  for (const json& bad : {json(-1e-9), json(2e-3), json("3e-7"), json(true)}) {
    j["kernels"]["gemm"]["k_step_s"] = bad;
    CHECK(refusal(j) == "p.json: key 'kernels.gemm.k_step_s' = " + bad.dump() + ": expected a number in [0, 0.001]");
  }
  j["kernels"]["gemm"]["k_step_s"] = 2.75e-7;
  // The gemm family's alone.
  for (const char* key : {"eta_compute_deepgemm", "k_step_s"}) {
    json other = minimal_profile();
    other["kernels"]["absorbed_decode"][key] = 0.5e-6;
    CHECK(refusal(other) == std::string("p.json: key 'kernels.absorbed_decode.") + key + "' = 5e-07: only the gemm family has it (block-scaled fp8 dense GEMMs)");
  }
  const EfficiencyProfile p = parse_efficiency_profile(j, "p.json");
  const EfficiencyProfile q = parse_efficiency_profile(json::parse(efficiency_profile_json(p).dump()), "p.json");
  CHECK(q.kernel(KernelFamily::gemm)->eta_compute_deepgemm.value_or(0) == 0.73);
  CHECK(q.kernel(KernelFamily::gemm)->k_step.value == 2.75e-7);
  CHECK(q.kernel(KernelFamily::gemm) == p.kernel(KernelFamily::gemm));
  // Absent: no step bound, no DeepGEMM efficiency of its own.
  const EfficiencyProfile d = parse_efficiency_profile(minimal_profile(), "p.json");
  CHECK(d.kernel(KernelFamily::absorbed_decode)->k_step.value == 0);
  CHECK_FALSE(d.kernel(KernelFamily::absorbed_decode)->eta_compute_deepgemm.has_value());
}

TEST_CASE("explain: a block-fp8 GEMM's reduction steps and DeepGEMM's efficiency", "[efficiency][explain]") {
  // 16 x 256 over K = 16,384 on H100, bound by its 128 reduction steps under the shipped profile.
  const HardwareSpec h100 = load_gpu("h100");
  Roofline rf = default_roofline(h100, DType::bf16, bundled_efficiency());
  Op op = gemm_op(OpId::q_proj, 16, 16384, 256, 1, 2);
  set_weight_precision(op, WeightDtype::fp8);
  const ExplainStep own = explain_op_time("time", op, rf, op_time(op, rf));
  CHECK(own.formula.find("⌈K / 128⌉ · t_k · 1 GHz / clock") != std::string::npos);
  CHECK(own.substituted.find("128 · ") != std::string::npos);
  CHECK(own.formula.find(", fp8 η_c") != std::string::npos);
  CHECK(own.formula.find("DeepGEMM") == std::string::npos);
  rf.deepgemm = true;
  const ExplainStep deep = explain_op_time("time", op, rf, op_time(op, rf));
  CHECK(deep.formula.find("DeepGEMM's fp8 η_c") != std::string::npos);
  CHECK(deep.number() == Approx(op_time(op, rf).time.value).epsilon(1e-9));
}

TEST_CASE("A latent decode family fitted on split kernels takes the unsplit kernel's residency on the GPUs that run it", "[efficiency]") {
  KernelEfficiency split;
  split.split_kv = true;
  // A100 runs fmha_v2's tiled kernel: unsplit, two blocks to an SM, a lone one at half of it.
  KernelEfficiency k = split;
  CHECK(take_gpu_latent_kernel(load_gpu("a100-80gb"), k));
  CHECK_FALSE(k.split_kv);
  CHECK(k.resident_ctas == 2);
  CHECK(k.solo_share == 0.5);
  // Two blocks on 108 SMs, each alone on its SM at half of it: 2 / (108 · max(1/solo, ⌈2/108⌉)) =
  // 2 / 216 of the GPU's rate.
  CHECK(resident_wave_efficiency(2, 108, k.resident_ctas, k.solo_share) == Approx(2.0 / (108 * 2)));
  // 432 blocks: two full waves of 216, every SM holding two.
  CHECK(resident_wave_efficiency(432, 108, k.resident_ctas, k.solo_share) == Approx(432.0 / (108 * 4)));
  // A residency the family's own rows fitted stands.
  KernelEfficiency fitted = split;
  fitted.resident_ctas = 3, fitted.solo_share = 0.8;
  CHECK(take_gpu_latent_kernel(load_gpu("a100-80gb"), fitted));
  CHECK(fitted.resident_ctas == 3);
  CHECK(fitted.solo_share == 0.8);
  // A GPU whose kernel splits keeps the split kernel as it is; an unsplit fit taken there splits and
  // keeps its residency (which a split launch does not read).
  KernelEfficiency h = split;
  CHECK_FALSE(take_gpu_latent_kernel(load_gpu("h100-sxm"), h));
  CHECK(h.resident_ctas == 1);
  KernelEfficiency unsplit = fitted;
  unsplit.split_kv = false;
  CHECK(take_gpu_latent_kernel(load_gpu("h100-sxm"), unsplit));
  CHECK(unsplit.split_kv);
  CHECK(unsplit.resident_ctas == 3);
  // AMD: TensorRT-LLM does not run there; the fit's kernel stands.
  KernelEfficiency amd = split;
  CHECK_FALSE(take_gpu_latent_kernel(load_gpu("mi300x"), amd));
  CHECK(amd.resident_ctas == 1);
}

TEST_CASE("A family's fixed cost at the SM clock: one SM's time at 1 GHz carries between GPUs by clock", "[efficiency][example]") {
  // TensorRT-LLM's W_UK fold: A100, B200 and H100 fit 5.2, 3.9 and 3.5 µs in seconds, 7.4, 7.7 and 7.0
  // µs at 1 GHz. A fixed cost of 15 µs at 1 GHz is 15 / 1.98 = 7.5758 µs on H100 (1,980 MHz) and
  // 15 / 1.41 = 10.6383 µs on A100 (1,410 MHz); the fp8-cache kernel's 12 µs likewise.
  const HardwareSpec h100 = load_gpu("h100"), a100 = load_gpu("a100-80gb");
  REQUIRE(h100.sm_clock_hz == 1.98e9);
  REQUIRE(a100.sm_clock_hz == 1.41e9);
  Op op;
  op.id = OpId::q_absorb_w_uk;
  op.bytes_read = BytesF{1e3};
  KernelEfficiency k;
  k.fixed = Seconds{15e-6};
  k.fixed_fp8_cache = Seconds{12e-6};
  k.per_sequence_fp8_cache = Seconds{0};
  k.eta_compute = 0.5;
  k.eta_memory = 0.8;
  auto fixed_on = [&](const HardwareSpec& hw, const KernelEfficiency& e, const Op& o) {
    return calibrated_time(o, e, *hw.peak_flops(DType::bf16), hw.memory_bandwidth, static_cast<double>(hw.sm_count), hw.sm_clock_hz, false, Bytes{0}).fixed.value;
  };
  // In seconds (the default): the same on every GPU.
  CHECK(fixed_on(h100, k, op) == Approx(15e-6));
  CHECK(fixed_on(a100, k, op) == Approx(15e-6));
  CHECK(fixed_cost_scale(k, 1.98e9) == 1);
  k.fixed_at_sm_clock = true;
  CHECK(fixed_on(h100, k, op) == Approx(7.5758e-6).epsilon(1e-4));
  CHECK(fixed_on(a100, k, op) == Approx(10.6383e-6).epsilon(1e-4));
  CHECK(fixed_cost_scale(k, 1.98e9) == Approx(1 / 1.98));
  CHECK(fixed_cost_scale(k, 0) == 0);
  Op cached = op;
  cached.fp8_cache = true;
  CHECK(fixed_on(h100, k, cached) == Approx(12e-6 / 1.98));
  // The planner's time and its explanation pay it through the clock.
  EfficiencyProfile prof;
  prof.name = "test";
  prof.kernels[static_cast<std::size_t>(KernelFamily::bmm)] = k;
  KernelEfficiency plain = k;
  plain.fixed_at_sm_clock = false;
  prof.kernels[static_cast<std::size_t>(KernelFamily::gemm)] = plain;
  const Roofline rf = roofline_for(h100, DType::bf16, prof);
  REQUIRE(family_of(op) == KernelFamily::bmm);
  const OpTime t = op_time(op, rf);
  CHECK(t.time.value == Approx(15e-6 / 1.98 + 1e3 / (3.35e12 * 0.8)));
  const ExplainStep e = explain_op_time("time", op, rf, t);
  CHECK_THAT(e.formula, Catch::Contains("t_fixed = 15 µs · 1 GHz / 1,980 MHz, the kernel's start and tail in SM time at 1 GHz"));
  CHECK(e.number() == Approx(t.time.value).epsilon(1e-9));
  // A GPU whose file gives no clock cannot time such a family: dropped, and said; the family in
  // seconds stays.
  const Roofline nr = roofline_without_clock(h100, prof);
  CHECK_FALSE(nr.kernels[static_cast<std::size_t>(KernelFamily::bmm)].has_value());
  CHECK(nr.kernels[static_cast<std::size_t>(KernelFamily::gemm)].has_value());
  CHECK_THAT(nr.eta_source, Catch::Contains("bmm at speed of light: my-gpu.json gives no sm_boost_clock_mhz, and its fixed cost is SM time"));
}

TEST_CASE("efficiency profiles: a decode block's query rows, hostile and round-tripped", "[efficiency][hostile]") {
  json j = minimal_profile();
  // Another family than GQA decode: refused, either key.
  for (const char* key : {"block_query_rows", "block_query_rows_fp8_cache"}) {
    json other = j;
    other["kernels"]["absorbed_decode"][key] = 8;
    CHECK(refusal(other) == std::string("p.json: key 'kernels.absorbed_decode.") + key + "' = 8: only the attention_decode family has it (a decode block's query rows)");
  }
  j["kernels"]["attention_decode"] = {{"fixed_s", 1e-5}, {"per_sequence_s", 5e-8}, {"eta_compute", 0.5}, {"eta_memory", 0.8}, {"rows", 10}};
  for (const json& bad : {json(0), json(-1), json(2000), json("8"), json(nullptr)}) {
    j["kernels"]["attention_decode"]["block_query_rows"] = bad;
    CHECK(refusal(j) == "p.json: key 'kernels.attention_decode.block_query_rows' = " + bad.dump() + ": expected a number in (0, 1024]");
  }
  j["kernels"]["attention_decode"]["block_query_rows"] = 12.5;
  // The fp8-cache pair's rows need the pair.
  j["kernels"]["attention_decode"]["block_query_rows_fp8_cache"] = 8;
  CHECK(refusal(j) == "p.json: key 'kernels.attention_decode.block_query_rows_fp8_cache' = 8: needs fixed_fp8_cache_s and per_sequence_fp8_cache_s beside it (the fp8-cache kernel's costs)");
  j["kernels"]["attention_decode"]["fixed_fp8_cache_s"] = 6e-6;
  j["kernels"]["attention_decode"]["per_sequence_fp8_cache_s"] = 3e-8;
  const EfficiencyProfile p = parse_efficiency_profile(j, "p.json");
  const KernelEfficiency& k = *p.kernel(KernelFamily::attention_decode);
  CHECK(k.block_query_rows == 12.5);
  CHECK(k.block_query_rows_fp8_cache == 8);
  const json written = efficiency_profile_json(p);
  CHECK(written["kernels"]["attention_decode"]["block_query_rows"] == 12.5);
  const EfficiencyProfile q = parse_efficiency_profile(json::parse(written.dump()), "p.json");
  CHECK(q.kernel(KernelFamily::attention_decode) == p.kernel(KernelFamily::attention_decode));
  // Absent: 0 (a block costs the same whatever its rows), and not written.
  j["kernels"]["attention_decode"].erase("block_query_rows");
  j["kernels"]["attention_decode"].erase("block_query_rows_fp8_cache");
  const EfficiencyProfile d = parse_efficiency_profile(j, "p.json");
  CHECK(d.kernel(KernelFamily::attention_decode)->block_query_rows == 0);
  CHECK_FALSE(efficiency_profile_json(d)["kernels"]["attention_decode"].contains("block_query_rows"));
}

TEST_CASE("efficiency profiles: a fixed cost at the SM clock, hostile and round-tripped", "[efficiency][hostile]") {
  json j = minimal_profile();
  for (const json& bad : {json("true"), json(1), json(nullptr)}) {
    j["kernels"]["absorbed_decode"]["fixed_at_sm_clock"] = bad;
    CHECK(refusal(j) == "p.json: key 'kernels.absorbed_decode.fixed_at_sm_clock' = " + bad.dump() + ": expected true or false");
  }
  j["kernels"]["absorbed_decode"]["fixed_at_sm_clock"] = true;
  const EfficiencyProfile p = parse_efficiency_profile(j, "p.json");
  CHECK(p.kernel(KernelFamily::absorbed_decode)->fixed_at_sm_clock);
  const json written = efficiency_profile_json(p);
  CHECK(written["kernels"]["absorbed_decode"]["fixed_at_sm_clock"] == true);
  const EfficiencyProfile q = parse_efficiency_profile(json::parse(written.dump()), "p.json");
  CHECK(q.kernel(KernelFamily::absorbed_decode) == p.kernel(KernelFamily::absorbed_decode));
  // Absent: seconds, and not written.
  const EfficiencyProfile d = parse_efficiency_profile(minimal_profile(), "p.json");
  CHECK_FALSE(d.kernel(KernelFamily::absorbed_decode)->fixed_at_sm_clock);
  CHECK_FALSE(efficiency_profile_json(d)["kernels"]["absorbed_decode"].contains("fixed_at_sm_clock"));
}
