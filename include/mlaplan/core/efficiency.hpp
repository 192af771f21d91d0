#pragma once
// Calibrated kernel time (issue 10): per kernel family, a fixed latency per launch, a cost per
// sequence the kernel walks, and efficiencies of compute and memory reached in a full wave:
//
//   t = launches·(t_fixed + sequences·t_seq + ⌈CTAs / SMs⌉·t_cta) + max(F / (peak·η_c·w), B / (bandwidth·η_m·w_m), F_cta / (peak/SMs·η_c))
//
// (a family whose op runs its memory-bound pass apart from its compute kernel, serial_memory: the
// sum of the two terms instead of their max; a family whose blocks' cost overlaps the streaming,
// sequences_overlap: launches·sequences·t_seq a term of the max instead of the fixed cost; a family
// whose cost per CTA is SM time the streaming hides, cta_overlap: launches·⌈CTAs / SMs⌉·t_cta added to
// the compute term inside the max instead of to the fixed cost),
// w = CTAs / (⌈CTAs / SMs⌉·SMs) is the wave efficiency of the op's launch on the GPU (a last wave
// that leaves SMs idle; a GEMM with fewer tiles than SMs splits its reduction to fill them, but for a
// block-scaled fp8 GEMM, which runs DeepGEMM's tiles unsplit: launch_tiling), F counts the FLOPs of padded tiles (64-head tiles of the latent decode
// kernel), and F_cta is the op's longest CTA (a causal prefill's last query tile): no launch ends
// before it, nor a block-scaled fp8 GEMM before its CTAs' ⌈K / 128⌉ reduction steps
// (KernelEfficiency::k_step). Memory is not bound to an SM the way compute is: one CTA streams up to `reach` times its
// SM's share of the bandwidth (bandwidth/SMs), so a last wave of r CTAs moves its bytes at
// min(1, r·reach/SMs) of a full wave's rate, w_m = CTAs / (⌊CTAs/SMs⌋·SMs + max(r, SMs/reach))
// (1 for whole waves; reach 1 gives w). The parameters are dimensionless fractions and seconds: a profile fitted on one GPU
// predicts another through that GPU's own peak, bandwidth and SM count (the transfer rule), and a GQA
// decode kernel's cost per block through its SMs and clock too (block_cost_scale: one SM's time at 1 GHz),
// and a family whose fixed cost is SM time its t_fixed through the clock (fixed_cost_scale).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/units.hpp"

namespace mlaplan {

// The kernel families a profile may calibrate; `to_string` gives the names of the measurement
// CSVs' `kernel` column and of the profile files' keys.
enum class KernelFamily {
  absorbed_decode,   // latent (absorbed) MLA attention: FlashMLA, FlashInfer-MLA, TRT-LLM generation MLA
  expanded_prefill,  // flash attention over expanded keys, causal (FA3, TRT-LLM context MLA)
  sparse_decode,     // DSA's sparse latent attention over the top-k keys
  attention,         // ordinary MHA/GQA attention of non-MLA models: prompts and mixed batches (flash attention, causal)
  attention_decode,  // ... its decode kernel, one query per sequence (XQA, FlashInfer decode, flash-decoding)
  gemm,              // projections and the latent up-projection
  bmm,               // per-head batched GEMMs (the W_UK / W_UV folds)
  grouped_gemm,      // MoE experts
  merge,             // split-KV and chunk merges by log-sum-exp
  elementwise,       // copies (the RoPE key broadcast)
  indexer,           // DSA's lightning-indexer scores
};
inline constexpr int kKernelFamilyCount = static_cast<int>(KernelFamily::indexer) + 1;
std::string_view to_string(KernelFamily f);
std::optional<KernelFamily> parse_kernel_family(std::string_view s);
// The family of the kernel an op runs as.
KernelFamily family_of(OpId id);
// The family of the kernel an op runs as, given its launch (GQA attention: decode or prefill kernel).
KernelFamily family_of(const Op& op);

// One family's fitted parameters.
struct KernelEfficiency {
  Seconds fixed{0};         // per launch
  // Per sequence the kernel walks; a GQA decode kernel: per block of its grid (launch_shape; where
  // the cost overlaps the streaming, per block beyond the launch's first wave, in whole waves); latent
  // attention: per sequence the busiest SM starts (latent_partition).
  Seconds per_sequence{0};
  double eta_compute = 1;   // of the dense peak, in a full wave
  // Of the fp8 peak, for the family's fp8 kernels (fp8 GEMMs, the fp8 context attention), where it was
  // fitted apart: an fp8 kernel seldom reaches the same fraction of twice the peak (quantisation,
  // scales, a bf16 output). Absent: eta_compute.
  std::optional<double> eta_compute_fp8;
  // Of the fp8 peak, for fp8 GEMMs with one scale per tensor (Model Optimizer's FP8 checkpoints:
  // cuBLASLt-style kernels, not the block-scaled ones), where it was fitted apart. Absent:
  // eta_compute_fp8, else eta_compute.
  std::optional<double> eta_compute_fp8_tensor;
  // Of the fp8 peak, for block-scaled fp8 GEMMs that run DeepGEMM (Op::deepgemm: an engine that runs it
  // on the GPU's architecture, a table row of `library` deepgemm), where it was fitted apart from the
  // engine's own block kernels (eta_compute_fp8). The same silicon runs them at different fractions of
  // its peak: DeepGEMM's H800 tables (InferSim, its README) reach about 73% of the fp8 peak at large
  // M, aiconfigurator's H100 rows of TensorRT-LLM's fp8_block_scaling_gemm about 48%; H800 and H100
  // share SMs, clocks and memory. Absent: eta_compute_fp8, else eta_compute (a profile fitted on
  // DeepGEMM rows alone writes its eta_compute here too). A block-scaled GEMM of the engine's own
  // kernels whose family has no eta_compute_fp8 takes this one before eta_compute: the same scaling.
  // So on a GPU whose tables time DeepGEMM alone (H800, B200) every engine's block-fp8 GEMMs run at
  // DeepGEMM's efficiency: no table there times another kernel. Read for the gemm family only (a
  // profile gives it nowhere else).
  std::optional<double> eta_compute_deepgemm{};
  // The fixed and per-sequence costs of the family's decode kernel over an fp8 KV cache
  // (Op::fp8_cache), where they were fitted apart (mlaplan-validate also fits them for TensorRT-LLM's
  // fp8 context kernels, MLA and GQA prompts, whose table rows set Op::fp8_cache; the planner's
  // prefill ops never do, so a step's prefill takes the bf16 kernel's costs): on Hopper TensorRT-LLM's XQA reads fp8 keys with
  // its QGMMA kernels, whose blocks start and walk their keys at another cost than the bf16 kernel's,
  // and MMHA with its fp8-cache instantiation where the head group has no XQA kernel
  // (gqa_decode_cost_pair, which also gives Blackwell's TRTLLM-GEN launches this pair, over any cache,
  // and its MMHA launches the family's own costs;
  // when MMHA also took small fp8 batches, keeping it on the bf16
  // kernel's costs fit H100's decode rows worse in-table, 16.6% against 15.4%). Both or neither;
  // absent: fixed and per_sequence.
  std::optional<Seconds> fixed_fp8_cache;
  std::optional<Seconds> per_sequence_fp8_cache;
  // The cost per block of TensorRT-LLM's MMHA decode kernel over a bf16 cache (on Blackwell over either
  // cache, its launches not paying the second pair: pays_second_decode_pair) (launch_shape's mmha:
  // one block per query head and sequence, on CUDA cores), where it was fitted apart from XQA's (one
  // block per KV head and sequence, its head group on tensor cores): H100's TP1 rows of 2,048
  // sequences of 2 keys take 167 µs through MMHA at 8 heads (16,384 blocks, 10 ns each) and 578 µs
  // through XQA at 8 KV heads of 16 (16,384 blocks, 35 ns each). Absent: per_sequence.
  std::optional<Seconds> per_sequence_mmha{};
  // The FLOPs one SM does per cycle of its boost clock in TensorRT-LLM's MMHA decode kernel, where it
  // was fitted apart: MMHA computes each query head's dot products and weighted sum on CUDA cores, one
  // block per query head and sequence, so a large head group over one KV head is bound by them, not by
  // the tensor cores or the cache it reads. H100's TP1 rows of 64 query heads over one KV head (no XQA
  // kernel above a group of 32) take 1,261 µs for 64 sequences of 4,096 keys in bf16 and 1,265 µs over
  // an fp8 cache: the same time for half the bytes, 6.8 TFLOP/s, 26 FLOPs per cycle of each of its 132
  // SMs at 1,980 MHz. A rate per SM cycle, not a fraction of the FP32 peak, because that is what
  // carries between GPUs: each GPU's own rows fit 18.8 (A100), 18.4 (H100), 23.8 (B200) and 24.0
  // (GB200) FLOPs per SM cycle, where A100's SMs have half the FP32 lanes of the others (14.7%, 7.2%,
  // 9.2% and 9.4% of the FP32 peak). Absent: the tensor peak at eta_compute.
  std::optional<double> mmha_flops_per_sm_cycle{};
  // Per CTA the busiest SM runs, ⌈CTAs / SMs⌉ per launch: what a thread block costs beyond its share
  // of the FLOPs and bytes (loading its query tile, the softmax's final rescale, storing its output).
  // Fitted for the flash-attention prefill families, whose tables show it: the fraction of the peak a
  // causal prefill reaches grows with the prompt at a fixed count of CTAs per key (TensorRT-LLM's
  // context MLA on H100 at 128 heads, bf16: 31% of the dense peak at 1,024 tokens, 55% at 4,096).
  // And for the W_UK / W_UV folds (bmm), an output tile's prologue and store: at the same FLOPs and
  // bytes, aiconfigurator's A100 rows take 739 µs for W_UK at 4,096 tokens and 128 heads (16,384
  // tiles of 128 x 128) and 458 µs for W_UV (4,096 tiles). Each GPU's own rows
  // fit 1.6 µs a CTA on A100 and 0.32 on H100, B200 and GB200; the pooled fits (blackwell, any) near 0.
  Seconds per_cta{0};
  // The time of one step of a block-scaled fp8 GEMM's reduction in one CTA, one SM's time at 1 GHz
  // (kBlockCostClockHz; a GPU pays k_step·1 GHz / its SM clock): the kernels that run DeepSeek's
  // 128 x 128-block fp8 weights issue one kScaledKStep slice of the reduction's tensor-core MMAs, wait
  // for them, then scale the partial sums on CUDA cores and add them to the output's (the promotion),
  // slice after slice, and never split the reduction over CTAs (launch_tiling), so a CTA takes at least
  // ⌈K / 128⌉ such steps whatever its tile. DeepGEMM's sm90 kernel: the loop over K slices, the
  // warpgroup_wait<0>() and the promotion at deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh
  // @54e22612:283, :321 and :331-347; TensorRT-LLM's fp8_block_scaling_gemm on sm90 likewise, in its
  // cooperative kernel (cutlass_kernels/fp8_blockscale_gemm/fp8_blockscale_gemm_kernel.cuh@02499765:534,
  // :565, :594-630) and in the copy of DeepGEMM it bundles (cpp/include/tensorrt_llm/deep_gemm/
  // fp8_gemm_impl.cuh@0a79ec28:348, :396 and :401-413), which it may take where DeepGEMM's JIT is usable
  // (TRTLLM_DG_ENABLED); which of the two aiconfigurator's H100 table timed is not known, and it reaches
  // 48% of the fp8 peak where DeepGEMM's own tables reach 66%, so it is fitted as a kernel of its own
  // (eta_compute_fp8, the engine profile's deepgemm_hopper false). The tables show
  // it where a GEMM has few tiles: aiconfigurator's H100 block-fp8 rows of 16 x 256 take 8.9, 13.5 and
  // 22.4 µs at K = 4,096, 8,192 and 16,384 (139 ns a step), where its bf16 ones, split over the SMs,
  // take 5.9, 6.2 and 7.8; InferSim's H800 DeepGEMM rows of 16 x 128 x 65,536 take 61 µs. 0: no such
  // bound (profiles fitted before it, families other than gemm).
  Seconds k_step{0};
  // Whether the op's bytes move in a pass of their own before its compute kernel, so that the two
  // terms add instead of overlapping: TensorRT-LLM's attention op launches its preprocessing kernel
  // (RoPE, the Q/K/V assignment and fp8 quantisation, the cache write) before the attention kernel
  // (cpp/tensorrt_llm/common/attentionOp.cpp@00dbe288: enqueueContext's invokeMLARopeContext :1537 or
  // invokeQKVPreprocessing :1541, then mFmhaDispatcher->run :1618; mlaGeneration's
  // invokeMLARopeGeneration :932, then FlashMLA :1131), while its GQA decode (XQA, MMHA) does the
  // RoPE and cache write in the attention kernel itself. Fitted: the better of the two on the rows,
  // for the attention families. (The MLA context rows now time TensorRT-LLM's RoPE pass and fp8
  // quantisation as elementwise kernels of their own, with their own bytes: mlaplan-validate's
  // `preprocess` column.)
  bool serial_memory = false;
  // Whether the cost per sequence (per block of a GQA decode grid) is SM time that the other blocks'
  // streaming hides, a third term of the max instead of a cost added to it: TensorRT-LLM's XQA decode
  // on H100 (TP1, bf16 cache, 4 KV heads of 16 query heads) takes 293 µs for 2,048 sequences of 2 keys
  // and as long for 64 (one block of 8,192 each, 36 ns per block), yet 414 µs for 256 keys, where its
  // 1.07 GB alone take 320 µs at the datasheet bandwidth: the block cost and the streaming overlap.
  // A latent decode kernel's cost per sequence its busiest SM starts likewise. Fitted: the better of
  // the two on the rows, for the decode families (GQA and latent).
  bool sequences_overlap = false;
  // Whether the cost per CTA is SM time that the streaming hides: added to the compute term inside
  // the max, launches·⌈CTAs / SMs⌉·t_cta, instead of to the fixed cost. A flash prefill of short
  // prompts runs many small CTAs and streams its bytes meanwhile: TensorRT-LLM's context MLA on H100,
  // bf16 at 128 heads, 256 prompts of 64 tokens take 1,335 µs, where the cost per CTA added (2.8 µs
  // for each of the 249 CTAs the busiest SM runs) would give 1,800. Fitted: the better of the two on
  // the rows, for MLA's expanded prefill (GQA prompts fit better with the cost added).
  bool cta_overlap = false;
  double eta_memory = 1;    // of the memory bandwidth, in a full wave
  // Of the memory bandwidth, the fraction TensorRT-LLM's MMHA decode kernel streams its cache at, where
  // it was fitted apart from XQA's (eta_memory): MMHA's blocks each read one query head's keys, all of
  // them, then its values, a long unbroken stream, where XQA's read a tile of keys and its values in
  // turn and split long sequences over more blocks (multi-block). A100's TP1 rows of 8 query heads
  // over 8 KV heads (MMHA: no XQA kernel for a group of one) move 64 sequences of 8,192 keys from DRAM
  // in 1,256 µs, 0.84 of its 2.04 TB/s, where one η_m over both kernels' rows fitted 0.61 (now fitted
  // apart: 0.99, XQA's 0.64). On Blackwell MMHA runs the head groups above kTllmGenMaxGroup
  // (take_decode_dispatch). Absent: eta_memory.
  std::optional<double> eta_memory_mmha{};
  // The bandwidth one CTA streams, in multiples of its SM's share (bandwidth/SMs), ≥ 1: how far a
  // launch of fewer CTAs than SMs still reaches the full wave's bandwidth (memory_wave_efficiency).
  // 1: each CTA only its share (the memory term waves like the compute term).
  double memory_reach = 1;
  // How an op streams its bytes when they fit the GPU's L2 (HardwareSpec::l2_cache) and stay there: a
  // table timed over the same tensor again and again (the elementwise pass, the W_UK and W_UV folds'
  // weights). Fitted so that eta_memory is DRAM's; the planner prices from DRAM (op_time). A family
  // has one of two forms, or neither (1 and 0: no L2 term, its rows show none):
  // - l2_speedup: a multiple of its DRAM pace, bandwidth·eta_memory·l2_speedup (the folds);
  // - l2_bytes_per_sm_cycle: a pace set by the SMs and their clock, SMs·sm_clock_hz·l2_bytes_per_sm_cycle
  //   bytes/s, whatever DRAM's (the elementwise pass).
  // Which form a family takes is the one its in-table fits agree on from GPU to GPU (mlaplan-validate,
  // against.cpp's l2_form): the elementwise pass within the L2 runs at 17.1 B per SM cycle on
  // H100 and 17.2 on B200 (1.46x and 1.00x their fitted DRAM paces; B200 streams its largest sets
  // beyond the L2 at up to 6.7 TB/s, faster than within it); the folds at 1.14x, 1.74x and 1.41x
  // DRAM's pace on A100, H100 and B200, or 9.4, 17.1 and 27.3 B per SM cycle.
  double l2_speedup = 1;
  double l2_bytes_per_sm_cycle = 0;
  // Latent attention only: whether the kernel splits a sequence's keys over thread blocks to fill the
  // SMs (FlashMLA, FlashInfer, TensorRT-LLM on Hopper and Blackwell) or gives each sequence and head
  // tile blocks that walk all its keys (fmha_v2's two, one per half of the value columns:
  // Tiling::unsplit_ctas; TensorRT-LLM 1.0's generation MLA on the A100, whose
  // table's batch-1 time grows with the keys at 0.12 µs each whatever the heads). Fitted: the better
  // of the two on a GPU's own rows; a profile fitted on other GPUs takes the kernel of the GPU it
  // times where TensorRT-LLM's dispatch says which (latent_decode_splits_keys).
  bool split_kv = true;
  // Latent attention's unsplit launch only (split_kv false): how many of its thread blocks one SM runs
  // at once, and the share of a full SM's rate (at eta_compute) a block alone on its SM reaches, from
  // 1/resident_ctas (no faster alone than beside the others) to 1. fmha_v2's tiled kernel on sm80 runs
  // four warps a block, each holding its 64 x 256 fp32 output tile in registers (128 a thread;
  // fused_multihead_attention_v2 kernel traits for 576/512, fmha_v2 setup.py@010669f8
  // enumerate_hmma_flash_kernels_base), so about two blocks share an SM, and one warp per scheduler
  // hides latency poorly alone. A100's table shows both: the time over blocks is flat to 108 blocks
  // (the SMs), then at 128 heads and 8,192 keys 1.42x at 128 blocks, 2.45x at 256, 3.83x at 512 and
  // 26.7x at 4,096 (batch 32, 64, 128 and 1,024). Fitted on a GPU's own rows
  // (A100: 2 and 0.7); 1 and 1 (resident_wave_efficiency is wave_efficiency) where the rows do not
  // show it or the family's kernel splits.
  double resident_ctas = 1;
  double solo_share = 1;
  // Whether the fixed costs (fixed, fixed_fp8_cache) are one SM's time at 1 GHz (kBlockCostClockHz), so
  // that a GPU pays fixed·1 GHz / its SM clock (fixed_cost_scale), rather than seconds on every GPU.
  // A table timed under CUDA graphs (aiconfigurator's collectors) leaves no host launch in a kernel's
  // fixed cost: what is left is the kernel's own start and tail on the SMs (its prologue, the last
  // block's reduction and epilogue). Which families take it is the form their in-table fits agree on
  // from GPU to GPU (mlaplan-validate, against.cpp's fixed_form), as for the L2 term: TensorRT-LLM's
  // GQA decode kernels fit 11.1, 9.0 and 7.8 µs on A100, B200 and H100 (1.41, 1.965 and 1.98 GHz), or
  // 15.7, 17.6 and 15.4 µs at 1 GHz; its W_UK and W_UV folds 5.2, 3.9 and 3.5 µs, or 7.4, 7.7 and 7.0.
  bool fixed_at_sm_clock = false;
  // GQA decode only: the query rows a block's cost per block covers (Tiling::decode_block_rows), beyond
  // which it grows in proportion, per_sequence·max(1, rows / block_query_rows): a block of a wider head
  // group loads, rescales and stores more query heads. TensorRT-LLM's decode tables at 2,048 sequences of
  // 2 keys, 8 to 64 query heads, the fixed cost taken off, per block of their grids: H100's XQA over a bf16 cache 35,
  // 35, 36, 39 and 56 ns at 2, 4, 8, 16 and 32 query heads per KV head, its QGMMA over an fp8 cache 11,
  // 11, 13, 22 and 43 ns; B200's TRTLLM-GEN over an fp8 cache 9, 9, 9, 13 and 24 ns. Not for MMHA's
  // launches (a block per query head). Fitted on a family's rows; 0: a block costs the same whatever
  // its rows (profiles fitted before it, families other than attention_decode).
  double block_query_rows = 0;
  // ... for the launches that take the fp8-cache pair of costs (fixed_fp8_cache, per_sequence_fp8_cache),
  // where fitted apart: H100's QGMMA grows from about 8 rows, its XQA over a bf16 cache from about 20.
  // Absent: block_query_rows.
  std::optional<double> block_query_rows_fp8_cache{};
  // Whether the unsplit launch's blocks share SMs as fitted (either value off its default).
  bool shares_sms() const { return resident_ctas != 1 || solo_share != 1; }
  std::int64_t rows = 0;    // measurements it was fitted on
  bool operator==(const KernelEfficiency&) const = default;
};

// A measurement table a profile was fitted on.
struct FittedTable {
  std::string gpu, file, kernel, source, licence;
  std::int64_t rows = 0;
};

// A set of families' parameters for one GPU (fitted on its own measurements) or one architecture
// (fitted on its GPUs', the default of every GPU of that architecture without its own).
struct EfficiencyProfile {
  std::string name;          // "hopper", "h800"
  std::string scope;         // "gpu" | "architecture" | "any"
  std::string architecture;  // the architecture it serves (empty for "any")
  std::string gpu;           // scope gpu: the GPU's bundled name
  std::string source;        // the file it came from
  std::string written_by;    // the command that wrote it
  std::vector<FittedTable> fitted_on;
  std::array<std::optional<KernelEfficiency>, kKernelFamilyCount> kernels{};
  // Families taken from a less specific profile (efficiency_for): the name of the profile each came
  // from; empty where the family is the profile's own.
  std::array<std::string, kKernelFamilyCount> borrowed_from{};
  // A family's DeepGEMM efficiency (KernelEfficiency::eta_compute_deepgemm) its own profile lacks,
  // taken by efficiency_for from the next profile whose same family has it: the name of that profile,
  // empty where none was taken.
  std::array<std::string, kKernelFamilyCount> deepgemm_from{};
  // Whether efficiency_for gave the latent decode family the kernel of the GPU it times, unlike the
  // one its profile was fitted on (latent_decode_splits_keys): said in describe().
  bool latent_kernel_of_gpu = false;
  const std::optional<KernelEfficiency>& kernel(KernelFamily f) const { return kernels[static_cast<std::size_t>(f)]; }
  // "hopper profile (fitted on H100 SXM5 80GB + H800 SXM5 80GB): absorbed_decode, expanded_prefill",
  // then "; bmm, elementwise from the hopper profile" for borrowed families.
  std::string describe() const;
};

// The profile a GPU's calibrated times use (the transfer rule): the profile fitted on the GPU's own
// measurements, else its architecture's, else the one fitted over every architecture; a family the
// chosen profile lacks is taken from the next of these that has it (and named in borrowed_from), and
// so is a family's DeepGEMM efficiency (deepgemm_from): a GPU whose tables time only its engine's own
// block-fp8 kernels (H100's) takes DeepGEMM's fraction of the peak from its architecture's tables.
// nullopt when `profiles` has none of these.
std::optional<EfficiencyProfile> efficiency_for(const HardwareSpec& hw, const std::vector<EfficiencyProfile>& profiles);

// Whether the kernel TensorRT-LLM runs for MLA generation (the absorbed_decode family) on a GPU splits
// one sequence's keys over several thread blocks (NVIDIA/TensorRT-LLM cpp/tensorrt_llm/common/
// attentionOp.cpp@eea41b73, mlaGeneration): on sm90 FlashMLA, over its SM parts (:1116-1160); on
// sm100 TRTLLM-GEN's generation kernel in its multi-CTA KV mode (:1031-1043); on sm80 and sm89 fmha_v2's
// tiled kernel, which does not (:1268-1301; Tiling::unsplit_ctas). nullopt where TensorRT-LLM
// does not run (AMD). A profile fitted on other GPUs (an architecture's, or the one over all) takes
// this GPU's kernel in efficiency_for, and the transfer predicts a left-out GPU with it.
std::optional<bool> latent_decode_splits_keys(const HardwareSpec& hw);
// Whether TensorRT-LLM's MLA generation kernel reads an fp8 latent cache as fp8 on a GPU. An fp8 cache
// under MLA turns on its fp8 generation MLA (NVIDIA/TensorRT-LLM cpp/tensorrt_llm/thop/attentionOp.cpp
// @eea41b73:706), which initialize() allows on sm89, 90, 100, 103, 120 and 121 only (cpp/tensorrt_llm/
// common/attentionOp.cpp@eea41b73:2572-2578), the GPUs with fp8 tensor cores. On sm80 it runs no fp8
// MLA generation: A100's table (validate/published/a100-80gb) times its "fp8" rows within 5% of the
// bf16 ones on 98% of 1,448 pairs, up to 131,072 keys, where an fp8 read would take half the time, so
// they are timed reading bf16. nullopt where TensorRT-LLM does not run (AMD).
std::optional<bool> latent_decode_reads_fp8_cache(const HardwareSpec& hw);
// The thread blocks of fmha_v2's tiled latent decode kernel (bf16, 576/512, the unsplit launch of
// sm80 and sm89) that one SM holds at once: each block is four warps (setup.py
// enumerate_hmma_flash_kernels_base, 576: STEP_Q 64 and STEP_KV 64, warps_m 4, warps_n 1, at
// NVIDIA/TensorRT-LLM@03dd9bb8) of 128 threads; compiled for sm_80 with the fmha_v2 Makefile's flags
// (no maxrregcount, no __launch_bounds__) it takes 255 registers a thread, so 128 x 256 = 32,768 of
// the SM's 65,536 (sm80 and sm89): two blocks. Shared memory (48 KiB a block: Q, K and V tiles of 16
// KiB, two buffers each) would allow three on the A100 and two on sm89. A helper compiled FlashInfer's
// copy of the source (flashinfer/jit/attention/fmha_v2/generator_utils.py@fb28d724); the cubin
// TensorRT-LLM ships was built by NVIDIA and its register count is not published.
inline constexpr double kUnsplitLatentCtasPerSm = 2;

// A latent decode family fitted on other GPUs, as it times `hw`'s launches: with the kernel `hw` runs
// (latent_decode_splits_keys) where that is known. Whether that changed it. A family fitted on split
// kernels that takes the unsplit one gets its blocks' residency (kUnsplitLatentCtasPerSm) and a lone
// block at 1/kUnsplitLatentCtasPerSm of its SM, the lower end of solo_share: four warps alone leave
// each of the SM's four schedulers one warp, which waits on every load (A100's own fit, resident 2,
// finds 0.7).
bool take_gpu_latent_kernel(const HardwareSpec& hw, KernelEfficiency& k);
// The latent attention families, whose kernels may or may not split keys (split_kv).
bool is_latent_attention(KernelFamily f);
// The compute efficiency a family's kernel runs at: for an fp8 kernel its fp8 one where it has one
// (per-tensor scales: its per-tensor one first; a DeepGEMM kernel, `deepgemm`: its DeepGEMM one
// first; a block-scaled one of the engine's own: eta_compute_fp8, else the DeepGEMM one).
double eta_compute_for(const KernelEfficiency& k, bool fp8, bool per_tensor = false, bool deepgemm = false);
// Which of a family's compute efficiencies eta_compute_for takes (what `--explain` names).
enum class ComputeEta { dense, fp8, fp8_tensor, deepgemm };
ComputeEta compute_eta_kind(const KernelEfficiency& k, bool fp8, bool per_tensor = false, bool deepgemm = false);
// Which of a GQA decode family's launches pay its second pair of launch costs (fixed_fp8_cache,
// per_sequence_fp8_cache) on a GPU: those of TensorRT-LLM's TMA-fed, warp-specialised decode kernels,
// whose blocks cost about a third of the SM cycles the Ampere-style XQA kernel's do (fitted per block,
// one SM's time at 1 GHz: H100's QGMMA 2.99 µs and B200's TRTLLM-GEN 3.35 µs, against 10.0 µs for
// H100's HMMA kernel over a bf16 cache and 9.44 µs for A100's).
//  - fp8_cache (Hopper): XQA takes its QGMMA kernel (mha_sm90) for an E4M3 cache on sm90 only
//    (NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/decoderXQAImplJIT/
//    kernelUtils.cpp@602593ac:90-98), so the pair times the fp8-cache launches;
//  - every_launch (Blackwell): on sm100 TensorRT-LLM's XQA dispatcher runs TRTLLM-GEN's generation
//    kernels instead of XQA's (cpp/tensorrt_llm/kernels/xqaDispatcher.cpp@c8b9bfc7:129-144,
//    mUseTllmGen = isSM100Family()), with no perf-gain test, for a group of one too, and MMHA above
//    kTllmGenMaxGroup (take_decode_dispatch, Tiling::tllm_gen), so the pair times every decode launch
//    but MMHA's, whose blocks pay the family's own costs (pays_second_decode_pair);
//  - none (the rest): every launch runs the Ampere-style kernel, and roofline_for drops the pair.
enum class DecodeCostPair { none, fp8_cache, every_launch };
DecodeCostPair gqa_decode_cost_pair(const HardwareSpec& hw);
// TensorRT-LLM's GQA decode dispatch on a GPU whose pair is `pair`, written into a decode op's tiling:
// on Blackwell (every_launch) the XQA dispatcher's TRTLLM-GEN rule (Tiling::tllm_gen; launch_shape),
// elsewhere XQA's, left as it is. Not a speculative step's (Tiling::multi_query: XQA's spec-decoding
// kernels, as before). Whether it changed `t`.
bool take_decode_dispatch(DecodeCostPair pair, Tiling& t);
// Whether a GQA decode launch over an `fp8_cache` pays the family's second pair (above) on a GPU whose
// pair is `pair`: on Hopper the fp8-cache launches; on Blackwell every launch but MMHA's (`mmha`,
// launch_shape: its head groups above kTllmGenMaxGroup), which pays the family's own costs.
bool pays_second_decode_pair(DecodeCostPair pair, bool fp8_cache, bool mmha);
// A GQA decode op (Tiling::decode_kernel) as TensorRT-LLM launches it on a GPU of `sms` SMs whose pair
// is `pair`: with `dispatch` (an engine whose XQA dispatch takes the op's head group), the GPU's rule
// (take_decode_dispatch); then Op::fp8_cache set to whether the launch pays the pair
// (pays_second_decode_pair). The one place the planner (as_launched) and mlaplan-validate's rows set
// both. Other ops: unchanged.
void take_decode_launch(DecodeCostPair pair, Op& op, double sms, bool dispatch);
// Whether TensorRT-LLM's GQA decode launch rotates the new token's Q and K and appends its K and V
// to the cache itself (true), or leaves both to invokeQKVPreprocessing, one RoPE + KV-append kernel
// (invokeApplyBiasRopeUpdateKVCacheDispatch) launched before it (false):
//  - MMHA (launch_shape's mmha) does both in its own kernel;
//  - XQA's QGMMA kernel over an E4M3 cache on Hopper does both for one query token per sequence
//    (applyRoPEInXqaKernel true and the preprocessing skipped: cpp/tensorrt_llm/kernels/
//    decoderMaskedMultiheadAttention/decoderXQAImplJIT/decoderXQAImplJIT.cpp@89fd9b74:268;
//    kernelUtils.cpp@602593ac:84-101), not for a speculative step's several (Tiling::multi_query:
//    applyRoPEInXqaKernel requires !multi_query_tokens, :238);
//  - XQA's HMMA kernel (Ampere; Hopper over a bf16 cache) does not: applyRoPEInXqaKernel is false
//    (decoderXQAImplJIT.cpp@89fd9b74:238), the preprocessing runs at :350, XQA at :526;
//  - Blackwell's TRTLLM-GEN kernels do not: the dispatcher runs the preprocessing, "applies RoPE and
//    updates kv cache", before every launch (cpp/tensorrt_llm/kernels/xqaDispatcher.cpp@c8b9bfc7:393,
//    the FMHA at :489).
//  - before that kernel (xqa_hopper_kernel false: TensorRT-LLM before 0.10.0, whose sm90 XQA cubins
//    are the Ampere-style kernel's), XQA never does: invokeApplyBiasRopeUpdateKVCache runs first
//    (decoderXQAImplPrecompiled.cpp@5955b8af:280-290, v0.8.0).
// `t` is the decode op's tiling (on Blackwell with its dispatch, take_decode_dispatch: MMHA only
// above kTllmGenMaxGroup), `fp8_cache` whether its cache is E4M3.
bool trtllm_decode_fuses_preprocessing(const HardwareSpec& hw, const Tiling& t, bool fp8_cache, bool xqa_hopper_kernel);
// The fixed cost per launch and the cost per sequence an op pays under a family: its fp8-cache
// ones for an op over an fp8 cache where the family has them.
struct LaunchCosts {
  Seconds fixed{0};
  Seconds per_sequence{0};
  bool fp8_cache = false;  // the family's fp8-cache pair, not fixed and per_sequence
  bool mmha = false;       // per_sequence is the family's per_sequence_mmha
  double block_rows = 0;   // the query rows a block's cost covers (block_query_rows, or its fp8-cache pair's)
};
// `mmha`: the launch runs TensorRT-LLM's MMHA decode kernel (launch_shape).
LaunchCosts launch_costs(const KernelEfficiency& k, bool fp8_cache, bool mmha = false);
// Whether an op runs its unsplit launch under a family (split_kv false, and the op has one).
bool runs_unsplit(const KernelEfficiency& k, const Tiling& t);

// The reduction step of a block-scaled fp8 GEMM: its activations' 1 x 128 and weights' 128 x 128 scales
// (DeepSeek-V3's `weight_block_size`) change every 128 of K.
inline constexpr double kScaledKStep = 128;
// Whether an op runs as a block-scaled fp8 GEMM: a dense GEMM of some rows, columns and reduction
// (Tiling::gemm_m, gemm_n, gemm_k; an empty one runs nothing) on fp8 weights with block scales, at the
// fp8 peak (`fp8` as calibrated_time takes it).
bool block_scaled_gemm(const Op& op, bool fp8);
// The output tile DeepGEMM's normal fp8 GEMM picks for an m x n output on `sms` SMs (get_best_configs,
// deep_gemm/jit_kernels/gemm.py@03d0be3d:70-103; bf16 output): of block_m in {64, 128, 256} and
// block_n in 16, 24, .. 128, 144, 160 (one of the two at most 128), the fewest waves of
// ⌈m / block_m⌉·⌈n / block_n⌉ tiles over the SMs, then the fullest last wave, then on a tie the
// smaller block_n at the same block_m, the smaller block_m at the same block_n, or the larger
// block_n. Its grid is persistent, one CTA per SM walking the tiles (deep_gemm/jit_kernels/
// runtime.py@03d0be3d:201), so the tiles are the launch's CTAs in waves. Every block-scaled GEMM is
// tiled so: TensorRT-LLM's sm90 kernel (its own tiles, not modelled apart), DeepGEMM's later C++
// heuristics (block_n in steps of 16 at most 128, then a cost model with block_m 16 and 32 for small M:
// csrc/jit_kernels/heuristics/sm90.hpp@54e22612) and its sm100 one (sm100.hpp) pick other tiles for
// some shapes, not modelled.
struct GemmTile {
  double m = 0, n = 0;
};
GemmTile deepgemm_tile(double m, double n, double sms);
// The tiling an op launches with on `sms` SMs: a block-scaled fp8 GEMM's DeepGEMM tiles (deepgemm_tile;
// CTAs the tiles, FLOPs the padded tiles') without split-K (split_k 1: no kernel splits the reduction,
// DeepGEMM's grid is the SMs over ⌈m / block_m⌉·⌈n / block_n⌉ tiles, csrc/jit_kernels/heuristics/
// sm90.hpp@54e22612:189-206), else its own.
Tiling launch_tiling(const Op& op, bool fp8, double sms);

// The wave efficiency of `ctas` thread blocks on `sms` SMs (1 when either is unknown).
double wave_efficiency(double ctas, double sms);
// The memory wave efficiency w_m of `ctas` thread blocks on `sms` SMs when one block streams `reach`
// times an SM's share of the bandwidth: ctas / (⌊ctas/sms⌋·sms + max(r, sms/reach)), r the last
// wave's blocks (1 when the waves are whole or either count is unknown; reach 1 gives wave_efficiency).
double memory_wave_efficiency(double ctas, double sms, double reach);
// The wave efficiency of `ctas` thread blocks on `sms` SMs when each SM runs up to `resident` of them
// at once, together at a full SM's rate, and a block alone on its SM at `solo` of it
// (KernelEfficiency::resident_ctas, solo_share): ctas / (sms·Σ 1/f(n)), over the waves of
// resident·sms blocks, n the blocks the wave's busiest SM runs and f(n) = min(solo, 1/n) each one's
// share of its SM. resident 1 and solo 1 give wave_efficiency; values outside a profile's ranges are
// clamped to them (resident a whole number from 1, solo within [1/resident, 1]), so w ≤ 1. A100's 8,192-key table, in multiples of
// one sequence's 4 blocks' compute time at 128 heads, at 2 and 0.7: 128 blocks 1.40 (measured 1.42), 256
// 2.40 (2.45), 512 3.80 (3.83), 4,096 26.6 (26.7); at the fitted 0.68 1.35, 2.35, 3.71 and 25.7.
double resident_wave_efficiency(double ctas, double sms, double resident, double solo);
// The thread blocks an op's launch runs on `sms` SMs: its tiles, times the split-K slices a GEMM
// with fewer tiles than SMs splits its reduction into (at most tiling.split_k); a GQA decode kernel
// (tiling.decode_kernel) splits each sequence into tiling.split_k blocks cut to about
// kXqaTargetWaves waves, as TensorRT-LLM's XQA does.
double launched_ctas(const Tiling& t, double sms);
// The launch an op runs on `sms` SMs: its thread blocks and the blocks its per-sequence cost is
// paid for (tiling.sequences; a GQA decode kernel's per block of its grid). A GQA decode op runs
// TensorRT-LLM's dispatch: XQA where the head group has a kernel and its blocks reach a quarter of
// the SMs (mayHavePerfGain) or the cache is fp8 (Tiling::xqa_fp8_cache: TensorRT-LLM prefers XQA over
// an E4M3 cache wherever it has a kernel), else MMHA, one block per query head and sequence, its keys split into
// up to one wave (getMaxNumSeqLenTile); on Blackwell (Tiling::tllm_gen) TRTLLM-GEN on XQA's grid for
// every head group up to kTllmGenMaxGroup, MMHA above it. MMHA's blocks of one KV head read the same cache: counted
// once, as L2 serves the repeats.
struct LaunchShape {
  double ctas = 0;
  double sequences = 0;
  bool mmha = false;
};
LaunchShape launch_shape(const Tiling& t, double sms);
// The FLOPs of the longest thread block of a launch: Tiling::longest_cta_flops, over the blocks a
// decode kernel splits each sequence's keys into (XQA's multi-block mode gives each of a sequence's
// blocks a share of its keys, decoderXQAImplCommon.h@b35ac1b6:357-392, launched_ctas), so that a long
// sequence decoded by 45 blocks is not timed as one block walking all 32,768 keys. The longest
// sequence's share, taken even: XQA rounds each block's share up to whole key tiles, so its longest
// block may hold up to one tile of keys more than that. A batch of one length gets exactly the launch's compute term, F / (peak·η_c·w), in
// one wave; mixed lengths a bound above it.
// MMHA launches and prompt kernels keep the tile's FLOPs.
double longest_cta_flops(const Tiling& t, const LaunchShape& l);

// How FlashMLA deals a latent attention launch over the SMs (get_mla_metadata, deepseek-ai/FlashMLA
// csrc/flash_api.cpp@287061ec:38 and csrc/kernels/get_mla_metadata.cu@287061ec:22-62, constants in
// csrc/kernels/config.h@287061ec:5-11): the SMs are cut into ⌊SMs / m-tiles⌋ parts, one CTA per
// 64-row query tile in each; a sequence counts its 64-key blocks plus kLatentOverheadBlocks, and
// every part is dealt a payload of max(⌈total / parts⌉ + 5, 10) of these in batch order, a sequence
// split across parts where it does not fit (each piece counting the overhead again). A sequence's
// fixed cost is paid by the part that starts it, alongside the other parts: the launch pays it for
// the sequences (or pieces of one) its fullest part starts, FlashMLA's loop run part by part (a part
// that begins with the rest of a split sequence starts one more than the first part). The batch's
// sequences are taken as equal (the mean key blocks per sequence), so a batch of unequal sequences
// is dealt as if each held the mean. With more query tiles than SMs FlashMLA at 287061ec has no part
// (its metadata kernel would divide by zero; later versions clamp to one part, every CTA walking every
// sequence, a case no engine sends it: a prompt absorbed whole); the model takes such a launch, and
// one of a kernel that does not split keys (split_kv false), as each sequence's tiles being CTAs of
// their own (fmha_v2's: each tile's value slices, Tiling::unsplit_slices), in waves, the busiest SM
// starting ⌈CTAs / SMs⌉ of them. So t_seq is paid per piece a split kernel's fullest part starts and
// per block an unsplit kernel's busiest SM starts (two per head tile for fmha_v2): one fit over both
// kinds of rows (the profile over every architecture) holds one cost per thing an SM starts.
inline constexpr double kLatentOverheadBlocks = 5;  // FIXED_OVERHEAD_NUM_BLOCKS
struct LatentPartition {
  double parts = 0;    // ⌊SMs / m-tiles⌋ (0: no part)
  double ctas = 0;     // parts · m-tiles (no part: every sequence's own tiles, or fmha_v2's blocks)
  double payload = 0;  // blocks (overheads counted) dealt to a part
  double pieces = 0;   // sequences or pieces of one the fullest part (or the busiest SM) starts
  double split_pieces = 0;  // pieces of split sequences over all parts: each a partial output to combine
};
// nullopt where the op is not latent attention (latent_key_blocks 0) or the SMs are unknown.
std::optional<LatentPartition> latent_partition(const Tiling& t, double sms, bool split_kv);

// Time of an op under a family's parameters on a GPU of `peak` FLOP/s (the op's own: fp8 for fp8
// ops), `bandwidth` and `sms` SMs. A latent attention op under a family with split_kv false runs its
// unsplit launch: its FLOPs (Tiling::unsplit_flops), w from its CTAs and the blocks an SM runs at once
// (resident_wave_efficiency), the bytes every head tile reads, and no faster than its longest CTA at
// what one CTA streams, B_cta / (min(1, reach/SMs)·bandwidth·η_m). A latent attention op pays t_seq
// for the sequences the busiest SM starts (latent_partition), not for the batch's.
// The compute and memory terms combined: their max with the CTAs' SM time on the compute side, or
// all three added where the memory pass runs apart (serial).
inline double streaming_time(double compute, double ctas, double memory, bool serial) {
  return serial ? compute + ctas + memory : compute + ctas > memory ? compute + ctas : memory;
}
struct CalibratedTime {
  Seconds fixed{0};    // launches·(t_fixed + sequences·t_seq + cta_waves·t_cta); sequences_overlap: without the t_seq term; cta_overlap: without the t_cta term
  Seconds blocks{0};   // sequences_overlap: launches·sequences·t_seq, a term of the max (else 0)
  Seconds compute{0};  // F / (peak·η_c·w), or the longest CTA where that is longer
  Seconds memory{0};   // B / (bandwidth·η_m·w_m); where the op's own bytes fit the L2 (fits_l2), over l2_speedup or B / (SMs·clock·l2_bytes_per_sm_cycle·w_m)
  double flops = 0;    // F: the op's FLOPs, its padded tiles', or its unsplit launch's (MMHA: the op's, unpadded)
  double bytes = 0;    // B: the op's bytes, or its unsplit launch's, with a split launch's partial outputs
  Seconds ctas{0};     // cta_overlap: launches·cta_waves·t_cta, added to compute inside the max (else 0)
  double waves = 1;    // w
  double memory_waves = 1;  // w_m
  bool l2_resident = false;  // the op's bytes fit the L2 and the family has an L2 pace (fits_l2)
  bool serial = false;        // the family's serial_memory: compute and memory add
  // What the fixed term counts (the fits solve its costs from these): the launches, the sequences
  // (or blocks, or pieces) each pays t_seq for, and the CTAs the busiest SM runs in each, ⌈CTAs / SMs⌉.
  double launches = 1, sequences = 0, cta_waves = 0;
  double sequence_scale = 1;  // what each sequence's t_seq is multiplied by (block_cost_scale, times rows_scale)
  double rows_scale = 1;      // ... the block_rows_scale part of it
  double fixed_scale = 1;     // what t_fixed is multiplied by (fixed_cost_scale)
  bool mmha = false;  // the launch runs TensorRT-LLM's MMHA decode kernel (launch_shape)
  // A block-scaled fp8 GEMM: its CTAs' reduction steps, ⌈K / 128⌉ (else 0), and their time at the
  // family's k_step over the GPU's clock, a bound on the compute term (0 where the family has none).
  double k_steps = 0;
  Seconds k_step_time{0};
  Seconds streaming() const { return Seconds{streaming_time(compute.value, ctas.value, memory.value, serial)}; }
  Seconds time() const { return fixed + (blocks > streaming() ? blocks : streaming()); }
};
// Whether an op streams its bytes from the L2 at the family's L2 pace: the family has one (l2_speedup,
// or l2_bytes_per_sm_cycle where the GPU's SM count and SM clock are known), the GPU's L2 is known
// (l2 > 0), and the op's bytes fit it.
// Unsplit latent launches never do (each CTA rereads its sequence's cache, which the bytes term
// already counts).
bool fits_l2(const Op& op, const KernelEfficiency& k, Bytes l2, double sms, double sm_clock_hz);
// `fp8`: the op runs at the fp8 peak (eta_compute_fp8 where the family has it). `l2`: the GPU's L2
// (0: unknown, no L2 term). `sm_clock_hz`: the GPU's SM boost clock (HardwareSpec::sm_clock_hz), at
// which a GQA decode kernel's blocks cost their SM time (block_cost_scale; 0: unknown, the blocks cost
// nothing, see roofline_for) and an MMHA launch computes at the family's mmha_flops_per_sm_cycle on
// each of `sms` SMs (computes_on_cuda_cores).
CalibratedTime calibrated_time(const Op& op, const KernelEfficiency& k, FlopsPerSecond peak, BytesPerSecond bandwidth, double sms, double sm_clock_hz,
                               bool fp8, Bytes l2);
// The clock at which a GQA decode family's costs per block are stated: one SM's time per block at
// 1 GHz, so a cost of 1 µs is 1,000 cycles of one SM.
inline constexpr double kBlockCostClockHz = 1e9;
// What a family's cost per sequence is multiplied by for an op on a GPU of `sms` SMs at `sm_clock_hz`:
// 1, but for a GQA decode kernel (Tiling::decode_kernel), whose cost per block is one SM's time at
// kBlockCostClockHz and whose blocks spread over all the SMs: kBlockCostClockHz / (sms·sm_clock_hz)
// (0 where either is unknown). H100's fitted XQA block, 37.6 ns over its 132 SMs at 1,980 MHz, is
// 9,830 cycles; A100's, 61.3 ns over 108 SMs at 1,410 MHz, 9,330.
double block_cost_scale(const Tiling& t, double sms, double sm_clock_hz);
// What a GQA decode family's cost per block is multiplied by for the rows its blocks hold
// (KernelEfficiency::block_query_rows, LaunchCosts::block_rows): max(1, Tiling::decode_block_rows /
// block_rows) for a decode kernel's XQA or TMA launch where block_rows > 0, else 1 (MMHA's
// launches: `mmha`).
double block_rows_scale(double block_rows, const Tiling& t, bool mmha);
// What a family's fixed costs are multiplied by on a GPU at `sm_clock_hz`: kBlockCostClockHz /
// sm_clock_hz where they are SM time (KernelEfficiency::fixed_at_sm_clock), else 1. 0 where they are
// SM time and the GPU gives no clock (the family cannot time it: roofline_for).
double fixed_cost_scale(const KernelEfficiency& k, double sm_clock_hz);
// Whether a launch computes on CUDA cores at the family's mmha_flops_per_sm_cycle (an MMHA launch of a
// family that has one, on a GPU whose SM count and SM clock are known).
bool computes_on_cuda_cores(const KernelEfficiency& k, bool mmha, double sms, double sm_clock_hz);
// Whether a launch streams at the family's own MMHA fraction (an MMHA launch, `mmha`, of a family that
// has eta_memory_mmha).
bool streams_at_mmha_fraction(const KernelEfficiency& k, bool mmha);
// The fraction of the memory bandwidth a launch streams at: eta_memory_mmha where
// streams_at_mmha_fraction, else the family's eta_memory.
double eta_memory_for(const KernelEfficiency& k, bool mmha);

}  // namespace mlaplan
