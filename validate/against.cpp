#include "against.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fit.hpp"
#include "harness.hpp"
#include "results.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/efficiency_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"
#include "mlaplan/io/svg.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan::validate {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDecode = "absorbed_decode";
// The rows an architecture's GPUs must hold of a family for its profile (and a left-out GPU's
// transfer) to be fitted on them alone: ten per parameter of the five fitted at once. Fewer (H800's
// 41 latent decode and 5 prefill rows, without H100's) leave the family to the fit over every
// architecture, which adds the other GPUs' rows; so do rows that miss a dtype (architecture_suffices).
constexpr std::size_t kMinArchitectureRows = 50;
constexpr const char* kPrefill = "expanded_prefill";
constexpr const char* kGemm = "gemm";
constexpr const char* kBmm = "bmm";
constexpr const char* kElementwise = "elementwise";
constexpr const char* kGrouped = "grouped_gemm";
constexpr const char* kAttention = "attention";
constexpr const char* kAttentionDecode = "attention_decode";
constexpr const char* kSparse = "sparse_decode";
constexpr const char* kIndexer = "indexer";
constexpr const char* kAllFamilies = "all";  // the transfer's row of a GPU's families together
// The families a folder's rows may time, in report order.
constexpr std::array<const char*, 10> kKernels{kDecode, kPrefill, kSparse, kIndexer, kAttentionDecode, kAttention, kGemm, kBmm, kGrouped, kElementwise};
// The order the families are fitted in: elementwise first, since a GEMM row's input quantisation is
// timed with its parameters.
constexpr std::array<const char*, 10> kFitOrder{kElementwise, kDecode, kPrefill, kSparse, kIndexer, kAttentionDecode, kAttention, kGemm, kBmm, kGrouped};
// A family's place in kKernels, to put what was made in kFitOrder back in report order.
std::size_t report_place(const std::string& k) {
  return static_cast<std::size_t>(std::find_if(kKernels.begin(), kKernels.end(), [&](const char* x) { return k == x; }) - kKernels.begin());
}
// "a, b or c" over kKernels, for the refusal of an unknown kernel.
std::string kernel_list() {
  std::string s;
  for (std::size_t k = 0; k < kKernels.size(); ++k) s += std::string(k == 0 ? "" : k + 1 == kKernels.size() ? " or " : ", ") + kKernels[k];
  return s;
}

// A folder's provenance: file, source, licence for each of its tables (not a table of timings).
constexpr const char* kSourcesFile = "sources.csv";

struct Row {
  std::string gpu_key, file;
  const HardwareSpec* gpu = nullptr;
  std::string kernel;
  double batch = 1, len = 0, heads = 0, query = 1;
  double kv_heads = 1;  // GQA attention: the KV heads its query heads share (a lookup matches it)
  std::string kv_dtype = "bf16";
  std::string variant;  // bmm: the fold it timed (q_absorb_w_uk or out_absorb_w_uv); a lookup matches it
  double measured_s = 0;
  // GEMM rows: time the measured latency includes beyond the kernel, timed apart (other_us: e.g. the
  // dynamic activation quantisation a per-tensor fp8 Linear runs first); added to every prediction.
  double other_s = 0;
  // The elementwise kernels the row's timed call runs besides its own (a GEMM's input quantisation,
  // act_quant timed; TensorRT-LLM's context RoPE pass and fp8 Q/K/V quantisation, preprocess
  // trtllm), and their time under the elementwise family's parameters in use (set_pass_times).
  std::vector<Op> passes;
  double passes_s = 0;
  double extra_s() const { return other_s + passes_s; }  // the time the row holds beyond its kernel
  Op op;          // the attention op the row timed, with its tiling
  double peak = 0;  // the FLOP/s its kernel runs at
  bool fp8 = false;  // ... the fp8 peak
  // Latent decode, kv_dtype fp8, on a GPU where TensorRT-LLM runs no fp8 generation MLA
  // (latent_decode_reads_fp8_cache): timed reading a bf16 cache.
  bool bf16_reads = false;
  // Latent decode: whether its GPU's kernel splits keys over CTAs, as the fit on that GPU's own rows
  // found; a fit over several GPUs times each row with its own GPU's kernel. Unknown: fitted.
  std::optional<bool> split_kv;
  double sol_s = 0, fit_s = NAN, logo_s = NAN, lookup_s = NAN, default_s = NAN;
  bool train = false;
};

struct Table2 {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

Table2 read_csv(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(p.string(), "cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  auto rows = parse_csv(ss.str());
  if (rows.empty()) fail(p.string(), "is empty");
  Table2 t;
  t.header = rows.front();
  t.rows.assign(rows.begin() + 1, rows.end());
  return t;
}

// The SMs of a row's GPU (at least one).
double sms_of(const Row& r) { return static_cast<double>(std::max<std::int64_t>(1, r.gpu->sm_count)); }
// Whether a GQA decode row's launch runs TensorRT-LLM's MMHA kernel (launch_shape).
bool runs_mmha(const Row& r) { return launch_shape(r.op.tiling, sms_of(r)).mmha; }

// Which families' tables show an L2 term (a fitted parameter where their rows lie on both sides of
// their GPU's L2), and in which form (KernelEfficiency::l2_speedup, l2_bytes_per_sm_cycle): the one
// their in-table fits, each GPU's rows alone, agree on from GPU to GPU, so that a fit carries to a
// GPU left out. The elementwise pass (aiconfigurator's quantise tables of H100 and B200): 17.1 and 17.2 B per
// SM cycle (4.47 TB/s on H100, 5.01 on B200), where as a multiple of the fitted DRAM pace it is 1.46x
// on H100 and 1.00x on B200 (7.7 TB/s at η_m 65%): per SM cycle. The measured rows say the same:
// sets from 16 MiB to 70% of the L2, their fitted launch cost taken off, stream at a median 18.9 B per
// SM cycle on H100 and 17.3 on B200. Left out, the pass's median error fell from 35.2% to 22.5% on
// B200 and from 44.5% to 34.9% on H100. The folds (bmm): 1.14x, 1.74x and 1.41x DRAM's pace on A100,
// H100 and B200, or 9.4, 17.1 and 27.3 B per SM cycle, so a multiple; per SM cycle B200's left-out
// median went from 7.4% to 23.2%.
enum class L2Form { none, dram_multiple, per_sm_cycle };
L2Form l2_form(std::string_view kernel) {
  if (kernel == kElementwise) return L2Form::per_sm_cycle;
  if (kernel == kBmm) return L2Form::dram_multiple;
  return L2Form::none;
}

// Which families' fixed costs are SM time at the SM clock (KernelEfficiency::fixed_at_sm_clock): the
// form their in-table fits, each GPU's rows alone, agree on from GPU to GPU, as for the L2 term. Only
// A100 (1.41 GHz) differs in clock from the others (1.965-1.98 GHz), so the tables decide where A100's
// fit and the others' part by about its clock's ratio. Fitted in seconds (the profiles bundled at
// b69cc19, before any family took SM time), the largest over the smallest of A100's, B200's and
// H100's fixed costs, in seconds and at 1 GHz:
// - TensorRT-LLM's GQA decode (attention_decode): 11.1, 9.0, 7.8 µs (1.43x); 15.7, 17.6, 15.4 (1.15x);
// - its W_UK and W_UV folds (bmm): 5.2, 3.9, 3.5 µs (1.49x); 7.4, 7.7, 7.0 (1.11x);
// - its GQA prompts (attention): 10.0, 10.4, 7.5 µs (1.38x); 14.1, 20.4, 14.9 (1.44x);
// - its latent decode (absorbed_decode): 8.1, 6.3, 7.2 µs (1.29x); 11.4, 12.3, 14.3 (1.26x), a tie
//   across three different kernels (fmha_v2, TRTLLM-GEN, FlashMLA);
// - its MLA prompts (expanded_prefill): 6.0, 10.0, 11.1 µs (1.84x); 8.5, 19.7, 22.1 (2.59x).
// SM time where it agrees clearly better (the spread at least a third narrower), else seconds. The
// families A100 has no rows of (GEMMs, the elementwise pass, DeepSeek's kernels on H800) have no
// evidence either way and stay in seconds. GB200 (2.062 GHz, added later) is within 5% of B200's
// clock, so it cannot tell the forms apart; its folds fit slower than its sibling's in either form
// (10.4 µs at 1 GHz, 5.0 µs, against B200's 7.8 and 4.0 in the profiles of 2026-12-06), a kernel
// difference, not a clock one.
bool fixed_form_is_sm_clock(std::string_view kernel) { return kernel == kAttentionDecode || kernel == kBmm; }

// The row's time under a family's parameters: the core's calibrated time (what `cost` predicts, but
// for the L2 term: a table's repeated passes over one L2-sized tensor stream from the L2, a step's
// ops from DRAM).
// `passes_s`: the time of the row's other kernels (default: the one set_pass_times gave it).
double row_time(const Row& r, const KernelEfficiency& k, std::optional<double> passes_s = std::nullopt) {
  return calibrated_time(r.op, k, FlopsPerSecond{r.peak}, r.gpu->memory_bandwidth, sms_of(r), r.gpu->sm_clock_hz, r.fp8, r.gpu->l2_cache).time().value +
         (r.other_s + passes_s.value_or(r.passes_s));
}
double model_time(const Row& r, const GpuKernelFit& f) { return row_time(r, f.eff); }
// A fit on other GPUs' rows as it times `gpu`'s: a latent decode family with the kernel that GPU runs
// (latent_decode_splits_keys) where it is known, else the one most of those GPUs run.
KernelEfficiency with_kernel_of(const HardwareSpec& gpu, KernelEfficiency k, const std::string& kernel) {
  if (kernel == kDecode) take_gpu_latent_kernel(gpu, k);
  return k;
}

// A row's calibrated time split into what the fit's linear costs (t_fixed, t_seq, t_cta) multiply
// and what they do not: time = held + launches·((own ? t_fixed + sequences·t_seq : 0) + cta_waves·t_cta)
// + streaming + other, which is row_time's value; under sequences_overlap the t_seq term (or the held
// fp8-cache one) is instead a term of the max with the streaming; under cta_overlap the t_cta term is
// added to the compute term inside it. The fits search their efficiencies
// on a grid's outer axes and the costs on its inner ones, so the core's calibrated time runs once per
// row and set of efficiencies.
struct RowParts {
  double launches = 1, sequences = 0, cta_waves = 0;
  double held = 0;         // the fp8-cache kernel's fixed (and, added, per-sequence) costs where the row takes them
  double held_blocks = 0;  // ... its per-sequence costs where they are a term of the max
  bool own = true;         // the row pays the searched t_fixed and t_seq (not the fp8-cache pair)
  bool mmha = false;       // ... t_seq the MMHA kernel's (per_sequence_mmha) where the family has one
  bool overlap = false;    // sequences_overlap
  bool cta_overlap = false;  // cta_overlap: t_cta inside the max, with the compute term
  bool serial = false;     // serial_memory
  double fixed_scale = 1;  // what t_fixed is multiplied by on the row's GPU (CalibratedTime::fixed_scale)
  double compute = 0, memory = 0;  // the compute and memory terms
  double streaming = 0;    // their max (or sum)
  double other = 0;        // the row's time beyond the kernel
};
// A family's parameters without the linear costs: what a row's parts depend on.
KernelEfficiency without_linear_costs(KernelEfficiency k) {
  k.fixed = k.per_sequence = k.per_cta = Seconds{0};
  k.per_sequence_mmha.reset();
  return k;
}
RowParts row_parts(const Row& r, const KernelEfficiency& with_costs) {
  const KernelEfficiency k = without_linear_costs(with_costs);
  const CalibratedTime t = calibrated_time(r.op, k, FlopsPerSecond{r.peak}, r.gpu->memory_bandwidth, sms_of(r), r.gpu->sm_clock_hz, r.fp8, r.gpu->l2_cache);
  const bool own = !launch_costs(k, r.op.fp8_cache).fp8_cache;
  return RowParts{.launches = t.launches, .sequences = t.sequences * t.sequence_scale, .cta_waves = t.cta_waves, .held = t.fixed.value, .held_blocks = t.blocks.value,
                  .own = own, .mmha = own && t.mmha, .overlap = k.sequences_overlap, .cta_overlap = k.cta_overlap, .serial = k.serial_memory,
                  .fixed_scale = t.fixed_scale, .compute = t.compute.value, .memory = t.memory.value, .streaming = t.streaming().value, .other = r.extra_s()};
}
double parts_time(const RowParts& p, const KernelEfficiency& k) {
  const double t_seq = p.mmha && k.per_sequence_mmha ? k.per_sequence_mmha->value : k.per_sequence.value;
  const double ctas = p.launches * p.cta_waves * k.per_cta.value;
  double streaming = p.streaming, fixed_ctas = ctas;
  if (p.cta_overlap) streaming = streaming_time(p.compute, ctas, p.memory, p.serial), fixed_ctas = 0;
  const double t_fixed = k.fixed.value * p.fixed_scale;
  if (!p.overlap) return p.held + p.launches * (p.own ? t_fixed + p.sequences * t_seq : 0) + fixed_ctas + streaming + p.other;
  const double blocks = p.own ? p.launches * p.sequences * t_seq : p.held_blocks;
  return p.held + p.launches * (p.own ? t_fixed : 0) + fixed_ctas + std::max(streaming, blocks) + p.other;
}

// The highest fraction of its peak any bf16 (or fp8) row of `train` computed at under `k`: its compute
// term at η = 1 over its time beyond other kernels.
double highest_compute_share(const std::vector<std::pair<const Row*, double>>& train, KernelEfficiency k, bool fp8_rows) {
  k.eta_compute = 1;
  if (k.eta_compute_fp8) k.eta_compute_fp8 = 1;
  double reached = 0;
  for (const auto& [r, w] : train) {
    if (r->fp8 != fp8_rows) continue;
    KernelEfficiency own = k;
    if (r->split_kv) own.split_kv = *r->split_kv;
    const RowParts p = row_parts(*r, own);
    if (r->measured_s > p.other) reached = std::max(reached, p.compute / (r->measured_s - p.other));
  }
  return reached;
}

// Fits one kernel family on `train`. Each GPU's rows weigh as much in all as another's (a table of
// 41 rows counts as much as one of 2,896), and a GPU's rows are thinned to every k-th past 250 so
// that a fit takes seconds whatever the tables' sizes.
GpuKernelFit fit(const std::string& kernel, const std::vector<const Row*>& rows) {
  std::map<std::string, std::vector<const Row*>> by_gpu;
  for (const Row* r : rows) by_gpu[r->gpu_key].push_back(r);
  std::vector<std::pair<const Row*, double>> train;
  for (const auto& [gpu, part] : by_gpu) {
    const double step = std::max(1.0, static_cast<double>(part.size()) / 250.0);
    std::vector<const Row*> kept;
    for (double i = 0; i < static_cast<double>(part.size()); i += step) kept.push_back(part[static_cast<std::size_t>(i)]);
    for (const Row* r : kept) train.push_back({r, 1.0 / static_cast<double>(kept.size())});
  }
  // The per-sequence cost is fitted only where the rows vary the batch (else it is the fixed cost's
  // double); the grid is finer with one parameter fewer.
  bool batches = false;
  for (const auto& [r, w] : train) batches = batches || r->batch != train.front().first->batch;
  // Five parameters are searched at once (the bandwidth one CTA streams trades against the fixed
  // cost and η_m at small launches, so fitting it alone after the others stalls), six for elementwise
  // rows on both sides of their L2 (l2s below): a coarse grid, then the refinement rounds between each
  // best value's neighbours.
  std::vector<double> t0s = geometric_axis(1e-7, 1e-3, batches ? 16 : 24);  // 0, then 0.18 (0.15) µs .. 1 ms
  t0s[0] = 0;
  std::vector<double> tseqs{0};
  if (batches) {
    // 0, then 0.25 ns .. 1 µs per sequence; latent attention up to 100 µs, as a split launch pays it
    // per sequence its fullest SM part starts (latent_partition), a hundred times fewer than the batch's.
    // A GQA decode kernel's cost per block is one SM's time at 1 GHz (block_cost_scale): 0, then 10 ns
    // .. 100 µs (10 to 100,000 cycles), in 14 steps (at 12 or 13 the refinement from the coarse grid
    // settles elsewhere on the Against tests' rows of XQA's compute and gives η_c 0.22 for 0.065).
    tseqs = kernel == kDecode || kernel == kSparse ? geometric_axis(1e-10, 1e-4, 14)
            : kernel == kAttentionDecode          ? geometric_axis(1e-8, 1e-4, 14)
                                                  : geometric_axis(1e-10, 1e-6, 10);
    tseqs[0] = 0;
  }
  // The flash prefill kernels (expanded MLA and GQA prompts) and the folds: 0, then 10 ns .. 10 µs per
  // CTA the busiest SM runs. A fold's tables show it plainly: W_UK (K = 128, N = 512) and W_UV (K = 512,
  // N = 128) do the same FLOPs and move the same bytes, yet aiconfigurator's A100 rows of 4,096 tokens
  // at 128 heads take 739 µs for W_UK (16,384 output tiles, 152 waves of 108 SMs) and 458 µs for W_UV
  // (4,096 tiles, 38 waves); the two rows alone solve to η_m 0.93 and 2.5 µs a wave: each tile's
  // prologue and the store of its output. Elsewhere none: a latent kernel's
  // per-sequence cost is already per piece the busiest SM starts, a decode kernel's per block, and a
  // GEMM's tables do not separate it from η_c (fitted, H100's in-table error fell 7.1% -> 6.6%, but on
  // rows the model made without one, bf16 and two kinds of fp8, it took 0.2-0.3 µs and moved the
  // per-tensor fp8 η_c 0.70 -> 0.74-0.77, even kept only for a 2% gain in the second round alone).
  std::vector<double> tctas{0};
  if (kernel == kPrefill || kernel == kAttention || kernel == kBmm) {
    tctas = geometric_axis(1e-8, 1e-5, 12);
    tctas[0] = 0;
  }
  const std::vector<double> etas = geometric_axis(0.05, 1, batches ? 12 : 16);
  // 1 (each CTA its SM's share) to 256 SMs' shares, ties to the smallest.
  const std::vector<double> reaches = geometric_axis(1, 256, 8);
  // Each row's parts under the last parameters asked for, the linear costs aside.
  std::optional<KernelEfficiency> cached_for;
  std::vector<RowParts> parts(train.size());
  auto loss_of = [&](const GpuKernelFit& f) {
    const KernelEfficiency shape = without_linear_costs(f.eff);
    if (shape != cached_for) {
      for (std::size_t i = 0; i < train.size(); ++i) {
        KernelEfficiency own = shape;
        if (train[i].first->split_kv) own.split_kv = *train[i].first->split_kv;
        parts[i] = row_parts(*train[i].first, own);
      }
      cached_for = shape;
    }
    double loss = 0;
    for (std::size_t i = 0; i < train.size(); ++i)
      loss += train[i].second * log_error_sq(Seconds{parts_time(parts[i], f.eff)}, Seconds{train[i].first->measured_s});
    return loss;
  };
  // Rows whose GPUs' kernels are known are timed with them; the fit then carries the kernel most of
  // its GPUs run (weighing each GPU once), which a GPU without rows takes where TensorRT-LLM's
  // dispatch does not say which it runs (with_kernel_of, efficiency_for).
  double known = 0, split_weight = 0;
  for (const auto& [r, w] : train)
    if (r->split_kv) known += w, split_weight += *r->split_kv ? w : 0;
  const bool rows_decide = kernel == kDecode && known > 0;
  // Where the rows run at more than one peak or scaling (bf16, fp8 and per-tensor fp8 GEMMs, bf16 and
  // fp8 context kernels), an fp8 efficiency is its own parameter: the five are fitted with it held,
  // then it alone, twice over. The block-scaled one needs bf16 rows beside it (without them it is
  // eta_compute itself, as on DeepGEMM's fp8-only H800 tables); the per-tensor one bf16 or
  // block-scaled rows.
  bool bf16 = false, fp8 = false, tensor = false, deep = false, bf16_cache = false, fp8_cache = false;
  for (const auto& [r, w] : train) {
    (!r->fp8 ? bf16 : r->op.fp8_per_tensor ? tensor : r->op.deepgemm ? deep : fp8) = true;
    (r->op.fp8_cache ? fp8_cache : bf16_cache) = true;
  }
  // DeepGEMM's block-fp8 efficiency likewise, beside any other rows (on DeepGEMM's rows alone it is
  // eta_compute, and the fit says so: eta_compute_deepgemm is set to it).
  const bool own_fp8 = fp8 && bf16, own_tensor = tensor && (bf16 || fp8), own_deep = deep && (bf16 || fp8 || tensor);
  // Where the rows read both caches (TensorRT-LLM's decode tables time each shape over a bf16 and an
  // fp8 cache; its prompt tables run the fp8 context kernel over the fp8 one), the fp8-cache kernel's
  // fixed and per-sequence costs are fitted apart the same way:
  // the five with them held, then the two alone.
  const bool own_cache = fp8_cache && bf16_cache;
  // Where elementwise or fold rows run over sets both within and beyond their GPU's L2 (tables timed
  // over the same tensors again and again: H100's quantise pass copies 32 MiB at 1.17x DRAM's
  // bandwidth, 64 MiB at 0.86x; aiconfigurator's collect_mla_bmm.py@302edbc4 times each fold as 10
  // replays of one CUDA graph after 2 warm-ups, run_mla_gen_pre and run_mla_gen_post, so W_UK's 16.8
  // MB at 128 heads stays in H100's 50 MB L2: one token's fold takes 6.6 µs where reading it from
  // DRAM at the datasheet's 3.35 TB/s alone takes 5.0), the L2's pace is a sixth parameter of the same
  // search, so that η_m is DRAM's: fitted after the others, it stalls where η_m has already taken the
  // L2 rows' pace. Its form is the family's (l2_form).
  bool in_l2 = false, beyond_l2 = false;
  if (l2_form(kernel) != L2Form::none)
    for (const auto& [r, w] : train) {
      const double l2 = static_cast<double>(r->gpu->l2_cache.value);
      if (l2 > 0) (r->op.bytes().value <= l2 ? in_l2 : beyond_l2) = true;
    }
  // Where GQA decode rows run both TensorRT-LLM's XQA and its MMHA kernel (launch_shape) with the
  // searched costs, MMHA's cost per block is fitted apart the same way: the five with it held, then it
  // alone.
  bool mmha_rows = false, xqa_rows = false;
  if (kernel == kAttentionDecode && batches)
    for (const auto& [r, w] : train)
      if (!(own_cache && r->op.fp8_cache))
        (runs_mmha(*r) ? mmha_rows : xqa_rows) = true;
  const bool own_mmha = mmha_rows && xqa_rows;
  // MMHA computes on CUDA cores: where any row runs it (a fixed batch, an fp8 cache too), its FLOPs per
  // SM cycle are fitted apart (mmha_flops_per_sm_cycle), the others held.
  const bool mmha_compute =
      kernel == kAttentionDecode && std::any_of(train.begin(), train.end(), [](const auto& row) { return runs_mmha(*row.first); });
  // Where rows run block-scaled fp8 GEMMs, the time of one step of their reduction (k_step) is fitted
  // apart the same way: the five with it held, then it alone.
  const bool scaled_steps = std::any_of(train.begin(), train.end(), [](const auto& row) { return block_scaled_gemm(row.first->op, row.first->fp8); });
  const bool both = own_fp8 || own_tensor || own_deep || own_cache || own_mmha || mmha_compute || scaled_steps;
  const bool per_cycle = l2_form(kernel) == L2Form::per_sm_cycle;
  const std::vector<double> l2s = !(in_l2 && beyond_l2) ? std::vector<double>{per_cycle ? 0.0 : 1.0}
                                  : per_cycle          ? geometric_axis(4, 64, 13)  // bytes per SM cycle
                                                       : geometric_axis(1, 4, 8);   // multiples of DRAM's pace
  // Latent decode kernels either split a sequence's keys over CTAs or not; the attention families'
  // ops run their memory pass with their compute kernel or apart from it (TensorRT-LLM's
  // preprocessing kernel): each is fitted and the one that explains the rows better is kept.
  std::optional<GpuKernelFit> best;
  double best_loss = INFINITY;
  // Whether some rows run the latent unsplit launch when the fit's kernel is `split` (rows of a GPU
  // whose kernel is known run it).
  auto unsplit_rows = [&](bool split) {
    return kernel == kDecode && std::any_of(train.begin(), train.end(), [&](const auto& row) { return !row.first->split_kv.value_or(split); });
  };
  const std::vector<bool> splits = rows_decide ? std::vector<bool>{split_weight >= known / 2} : kernel == kDecode ? std::vector<bool>{true, false}
                                                                                                           : std::vector<bool>{true};
  const bool attention = kernel == kDecode || kernel == kPrefill || kernel == kAttention || kernel == kAttentionDecode;
  const std::vector<bool> serials = attention ? std::vector<bool>{false, true} : std::vector<bool>{false};
  // A decode kernel's cost per block (GQA) or per sequence its busiest SM starts (latent) either adds
  // to its streaming or overlaps it (a term of the max): each is fitted and the better kept.
  const std::vector<bool> overlaps = (kernel == kAttentionDecode || kernel == kDecode) && batches ? std::vector<bool>{false, true} : std::vector<bool>{false};
  // An MLA prefill's cost per CTA either adds to its streaming or is SM time inside the max with the
  // compute term: each is fitted and the better kept (H100 in-table 5.7% -> 6.0% median but p90 15.2%
  // -> 14.6%, η_m off its ceiling; left out B200 14.0% -> 7.2% with the RoPE pass). Not for the GQA
  // prompts: TensorRT-LLM's context FMHA on Llama-like shapes fits worse with it (B200 in-table 6.2% ->
  // 8.2%, though the loss the fit minimises falls), so their cost per CTA is added.
  const std::vector<bool> cta_overlaps = kernel == kPrefill ? std::vector<bool>{false, true} : std::vector<bool>{false};
  // The query rows a GQA decode block's cost covers (block_query_rows), 1 to 128 (a decode block's
  // most, which leaves every block's cost alone); empty where the rows do not fit it.
  const std::vector<double> rows_axis = kernel == kAttentionDecode && batches ? geometric_axis(1, 128, 14) : std::vector<double>{};
  for (const bool split : splits)
    for (const bool serial : serials)
      for (const bool overlap : overlaps)
      for (const bool cta_overlap : cta_overlaps) {
      std::optional<double> eta_fp8, eta_tensor, eta_deep, mmha_rate, eta_mem_mmha;
      std::optional<Seconds> fixed_cache, seq_cache, seq_mmha;
      std::optional<double> rows_cache;
      Seconds k_step{0};
      double resident = 1, solo = 1, block_rows = 0;
      GpuKernelFit f;
      Seconds cta{0};
      for (int round = 0; round < (both ? 2 : 1); ++round) {
        // The efficiencies on the outer axes, the linear costs on the inner ones (row_parts); the cost
        // per CTA held.
        auto model = [&](const std::vector<double>& p) {
          return GpuKernelFit{.kernel = kernel,
                              .eff = KernelEfficiency{.fixed = Seconds{p[4]}, .per_sequence = Seconds{p[5]}, .eta_compute = p[0], .eta_compute_fp8 = eta_fp8,
                                                      .eta_compute_fp8_tensor = eta_tensor, .eta_compute_deepgemm = eta_deep, .fixed_fp8_cache = fixed_cache,
                                                      .per_sequence_fp8_cache = seq_cache, .per_sequence_mmha = seq_mmha, .mmha_flops_per_sm_cycle = mmha_rate, .per_cta = cta, .k_step = k_step, .serial_memory = serial, .sequences_overlap = overlap, .cta_overlap = cta_overlap, .eta_memory = p[1], .eta_memory_mmha = eta_mem_mmha,
                                                      .memory_reach = p[2], .l2_speedup = per_cycle ? 1 : p[3],
                                                      .l2_bytes_per_sm_cycle = per_cycle ? p[3] : 0, .split_kv = split,
                                                      .resident_ctas = resident, .solo_share = solo, .fixed_at_sm_clock = fixed_form_is_sm_clock(kernel),
                                                      .block_query_rows = block_rows, .block_query_rows_fp8_cache = rows_cache, .rows = static_cast<std::int64_t>(train.size())}};
        };
        auto efficiencies = [&] { f = model(grid_fit({etas, etas, reaches, l2s, t0s, tseqs}, [&](const std::vector<double>& p) { return loss_of(model(p)); }, 2)); };
        efficiencies();
        // A pass: `search` sets some parameters with the others held, then the efficiencies are fitted
        // again; a pass that leaves the rows explained worse than before it (its grid need not hold the
        // values the last search refined) is undone. Whether it was kept.
        // `gain`: the share of the loss before it that the pass must come within (a parameter that must
        // explain the rows better by some margin to be kept, not merely fit their noise).
        auto pass_unless_worse = [&](const auto& search, double gain = 1) {
          const GpuKernelFit before = f;
          const double before_loss = loss_of(f), before_resident = resident, before_solo = solo, before_rows = block_rows;
          const Seconds before_cta = cta;
          search();
          efficiencies();
          if (loss_of(f) <= before_loss * gain) return true;
          f = before, resident = before_resident, solo = before_solo, cta = before_cta, block_rows = before_rows;
          return false;
        };
        // Where rows run the unsplit latent launch, the blocks one SM runs at once (1 to 4) and a lone
        // block's share of its SM, searched with η_c (which trades against both: the full SM's rate
        // against a lone block's), the others held; then the efficiencies again: twice.
        for (int pass = 0; unsplit_rows(split) && pass < 2; ++pass)
          if (!pass_unless_worse([&] {
                double best_occ = loss_of(f);
                for (const double rc : {1.0, 2.0, 3.0, 4.0}) {
                  auto with = [&](const std::vector<double>& p) {
                    GpuKernelFit g = f;
                    g.eff.resident_ctas = rc;
                    g.eff.solo_share = p[0];
                    g.eff.eta_compute = p[1];
                    return g;
                  };
                  const std::vector<double> s = grid_fit({rc == 1 ? std::vector<double>{1} : geometric_axis(1 / rc, 1, 16), etas},
                                                         [&](const std::vector<double>& p) { return loss_of(with(p)); }, 2);
                  if (const double l = loss_of(with(s)); l < best_occ) best_occ = l, resident = rc, solo = s[0];
                }
              }))
            break;
        // The cost per CTA with the other two costs and the efficiency it trades against, the others
        // held: η_c for the prefill kernels (both slow the short prompts' many small CTAs), η_m and
        // η_c for the folds, which stream (A100's fold rows fit η_m 0.84 and 1.5 µs a CTA, 7.5% held
        // out; against η_c alone the pass stalls at η_m 0.64 and 0.02 µs, 11.5%, and against η_m alone
        // rows the model made with 2 µs give back 1.4); then the efficiencies again: twice
        // (a seventh axis in the search would multiply its refinement rounds tenfold). Undone where
        // worse: the cost per CTA never leaves a worse fit than none.
        for (int pass = 0; tctas.size() > 1 && pass < 2; ++pass)
          if (!pass_unless_worse([&] {
                const bool fold = kernel == kBmm;  // a fold has no sequences to cost: its third axis is η_c
                const std::vector<double> c = grid_fit({etas, t0s, fold ? etas : tseqs, tctas}, [&](const std::vector<double>& p) {
                  GpuKernelFit g = f;
                  (fold ? g.eff.eta_memory : g.eff.eta_compute) = p[0];
                  g.eff.fixed = Seconds{p[1]};
                  if (fold) g.eff.eta_compute = p[2];
                  else g.eff.per_sequence = Seconds{p[2]};
                  g.eff.per_cta = Seconds{p[3]};
                  return loss_of(g);
                }, 2);
                cta = Seconds{c[3]};
              }))
            break;
        // A GQA decode block's query rows its cost covers (block_query_rows), with the costs per block it
        // trades against, the others held; then the efficiencies again: once (a second pass gave H100's
        // rows the same fit, in twice the time). Undone where it leaves the rows explained less
        // than 2% better (the fit's loss): on rows whose blocks cost alike at every head group (the
        // Against tests' tables, timed by the model without it) it fits their noise, H100's own rows
        // gain 5-12% over each form of the family.
        if (!rows_axis.empty())
          pass_unless_worse([&] {
                const std::vector<double> c = grid_fit({rows_axis, t0s, tseqs}, [&](const std::vector<double>& p) {
                  GpuKernelFit g = f;
                  g.eff.block_query_rows = p[0];
                  g.eff.fixed = Seconds{p[1]};
                  g.eff.per_sequence = Seconds{p[2]};
                  return loss_of(g);
                }, 2);
                block_rows = c[0];
              }, 0.98);
        if (!both) break;
        // One parameter alone over [lowest, highest], the others held: the fp8 efficiencies (in the first
        // round the per-tensor rows still take the block-scaled one, so both move them until the
        // per-tensor one is fitted), then MMHA's rate and fraction of the bandwidth below.
        auto fit_alone = [&](std::optional<double> KernelEfficiency::*param, double lowest = 0.05, double highest = 1) {
          const std::vector<double> e = grid_fit({geometric_axis(lowest, highest, 60)}, [&](const std::vector<double>& p) {
            GpuKernelFit g = f;
            g.eff.*param = p[0];
            return loss_of(g);
          }, 2);
          f.eff.*param = e[0];
          return e[0];
        };
        if (own_fp8) eta_fp8 = fit_alone(&KernelEfficiency::eta_compute_fp8);
        if (own_tensor) eta_tensor = fit_alone(&KernelEfficiency::eta_compute_fp8_tensor);
        if (own_deep) eta_deep = fit_alone(&KernelEfficiency::eta_compute_deepgemm);
        // Some costs alone, the others held: `set` writes a point of `axes` into a family's parameters.
        auto fit_costs = [&](const std::vector<std::vector<double>>& axes, const auto& set) {
          const std::vector<double> c = grid_fit(axes, [&](const std::vector<double>& p) {
            GpuKernelFit g = f;
            set(g.eff, p);
            return loss_of(g);
          }, 2);
          set(f.eff, c);
        };
        if (own_cache) {
          // GQA decode: with the query rows its blocks' cost covers (rows_axis).
          std::vector<std::vector<double>> cache_axes{t0s, tseqs};
          if (!rows_axis.empty()) cache_axes.push_back(rows_axis);
          fit_costs(cache_axes, [&](KernelEfficiency& e, const std::vector<double>& p) {
            e.fixed_fp8_cache = Seconds{p[0]};
            e.per_sequence_fp8_cache = Seconds{p[1]};
            if (p.size() > 2) e.block_query_rows_fp8_cache = p[2];
          });
          fixed_cache = f.eff.fixed_fp8_cache, seq_cache = f.eff.per_sequence_fp8_cache, rows_cache = f.eff.block_query_rows_fp8_cache;
        }
        if (own_mmha) {
          fit_costs({tseqs}, [](KernelEfficiency& e, const std::vector<double>& p) { e.per_sequence_mmha = Seconds{p[0]}; });
          seq_mmha = f.eff.per_sequence_mmha;
        }
        // 1 to 128 FLOPs per SM cycle (the most A100's 64 FP32 lanes an SM do, the fewest of the GPUs
        // measured; H100's MMHA fits 18.4, 26 on its 64-heads-per-KV-head rows alone). Not 256, Hopper's
        // and Blackwell's most: where MMHA's rows are bound by their bytes the rate is free, and a rate
        // no GPU's rows reach lets a memory pass apart (serial_memory) pass for the kernel's own.
        if (mmha_compute) mmha_rate = fit_alone(&KernelEfficiency::mmha_flops_per_sm_cycle, 1, 128);
        // MMHA streams its cache apart from XQA's tiles: where rows run both, its fraction of the
        // bandwidth alone (A100's MMHA rows of one query head per KV head move 64 sequences of 8,192
        // keys at 0.84 of its bandwidth, where one fraction over both kernels fitted 0.61).
        if (own_mmha) eta_mem_mmha = fit_alone(&KernelEfficiency::eta_memory_mmha);
        // 0, then 10 ns .. 10 µs a step (10 to 10,000 cycles of one SM).
        if (scaled_steps) {
          std::vector<double> steps = geometric_axis(1e-8, 1e-5, 16);
          steps[0] = 0;
          fit_costs({steps}, [](KernelEfficiency& e, const std::vector<double>& p) { e.k_step = Seconds{p[0]}; });
          k_step = f.eff.k_step;
        }
      }
      if (deep && !own_deep) f.eff.eta_compute_deepgemm = f.eff.eta_compute;  // DeepGEMM's rows alone: eta_compute is its
      const double l = loss_of(f);
      if (l < best_loss) best_loss = l, best = f;
    }
  // The latent family's compute efficiencies lowered to the least that explains the rows as well (a
  // loss at most 1% above the fit's, each in turn): its bf16 and fp8 rows run at two peaks (fp8
  // generation MLA, Roofline::latent_fp8), so each efficiency is seen only by its own rows, many of
  // them bound by their bytes, and any value above some least one fits alike; the search leaves it
  // wherever its refinement stopped. H100's bf16 rows, memory-bound under η_m 0.856, fit any η_c from
  // about 0.6: taken at the grid's top, 1.0, they time the compute-bound MTP decode 18% fast; B200's
  // fp8 rows leave η_fp8 at 1.0. Not for the other families, whose compute-bound rows set η_c: there
  // the same 1% moves the in-table median (transfer of 2026-12-05: H100 GEMM 8.3% -> 8.9%, H800 GEMM
  // 7.4% -> 10.1%, B200 and H100 prompt attention 6.2% -> 7.2% and 6.4% -> 7.2%).
  // Never below the highest rate a row reached, though: the compute term bounds a row's time from
  // below, so an efficiency under what a row achieved (its compute term at η = 1 over its time beyond
  // other kernels) would time that row slower than it ran.
  if (kernel == kDecode) {
    auto lower = [&](double& (*at)(KernelEfficiency&), bool fp8_rows) {
      const double tolerated = loss_of(*best) * 1.01 + 1e-12;
      const double reached = highest_compute_share(train, best->eff, fp8_rows);
      double& eta = at(best->eff);
      eta = least_as_good(eta, std::max(0.05, reached), tolerated, [&](double e) {
        GpuKernelFit g = *best;
        at(g.eff) = e;
        return loss_of(g);
      });
    };
    lower([](KernelEfficiency& k) -> double& { return k.eta_compute; }, false);
    if (best->eff.eta_compute_fp8) lower([](KernelEfficiency& k) -> double& { return *k.eta_compute_fp8; }, true);
  }
  return *best;
}

// The attention op of the absorbed (decode) or expanded (prefill) path a published row timed.
double field(const Table2& t, const std::vector<std::string>& row, std::size_t i, const std::string& file, const std::string& col,
             std::optional<double> fallback) {
  const auto it = std::find(t.header.begin(), t.header.end(), col);
  if (it == t.header.end() || static_cast<std::size_t>(it - t.header.begin()) >= row.size() || row[static_cast<std::size_t>(it - t.header.begin())].empty()) {
    if (fallback) return *fallback;
    fail_key(file, col, "(absent)", fmt::format("row {} needs the column", i + 1));
  }
  const std::string& s = row[static_cast<std::size_t>(it - t.header.begin())];
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v) || v <= 0 || v > 1e12) fail_key(file, col, s, fmt::format("row {}: expected a positive number", i + 1));
  return v;
}

std::string text_field(const Table2& t, const std::vector<std::string>& row, const std::string& col, const std::string& fallback) {
  const auto it = std::find(t.header.begin(), t.header.end(), col);
  if (it == t.header.end()) return fallback;
  const auto c = static_cast<std::size_t>(it - t.header.begin());
  return c < row.size() && !row[c].empty() ? row[c] : fallback;
}

// An op's speed-of-light time on a row's GPU at `peak`.
double sol_of(const Row& r, const Op& op, double peak) { return std::max(op.flops.value / peak, op.bytes().value / r.gpu->memory_bandwidth.value); }
// A row's speed-of-light time: its op's, plus the time the row includes beyond it (other_us, and its
// other kernels' own speed of light).
double sol_time(const Row& r) {
  double t = sol_of(r, r.op, r.peak) + r.other_s;
  for (const Op& p : r.passes) t += sol_of(r, p, r.gpu->peak_flops(DType::bf16)->value);
  return t;
}

// The elementwise parameters a row's other kernels are timed with; none: at speed of light.
using PassEfficiency = std::optional<KernelEfficiency>;
// The time of a row's other kernels (0 where it has none): each one's calibrated time (as `step`
// times act_quant before a block-fp8 GEMM, but for the L2 term: the tables time one input again and
// again).
double passes_time(const Row& r, const PassEfficiency& e) {
  const double bf16 = r.gpu->peak_flops(DType::bf16)->value;
  const double sms = sms_of(r);
  double t = 0;
  for (const Op& p : r.passes)
    t += e ? calibrated_time(p, *e, FlopsPerSecond{bf16}, r.gpu->memory_bandwidth, sms, r.gpu->sm_clock_hz, false, r.gpu->l2_cache).time().value : sol_of(r, p, bf16);
  return t;
}
void set_pass_times(std::vector<Row>& rows, const PassEfficiency& e) {
  for (Row& r : rows) r.passes_s = passes_time(r, e);
}

// A positive whole number from column `col`.
double whole(const Table2& t, const std::vector<std::string>& row, std::size_t i, const std::string& file, const std::string& col) {
  const double v = field(t, row, i, file, col, std::nullopt);
  if (v != std::floor(v)) fail_key(file, col, fmt::format("{}", v), fmt::format("row {}: expected a whole number", i + 1));
  return v;
}

// A row's `dtype` (bf16 or fp8, and for a GEMM fp8_tensor, fp8 with one scale per tensor; else its
// `a_dtype`; bf16 when absent; fp8_e4m3 read as fp8) into r.kv_dtype, and its measured latency into
// r.measured_s.
void read_dtype_and_latency(const Table2& t, const std::vector<std::string>& row, std::size_t i, const std::string& file, Row& r,
                            bool per_tensor = false) {
  std::string d = text_field(t, row, "dtype", text_field(t, row, "a_dtype", "bf16"));
  if (d == "fp8_e4m3") d = "fp8";
  if (d != "bf16" && d != "fp8" && !(per_tensor && d == "fp8_tensor"))
    fail_key(file, "dtype", d, fmt::format("row {}: expected bf16{}", i + 1, per_tensor ? ", fp8 or fp8_tensor" : " or fp8"));
  r.kv_dtype = d;
  r.measured_s = field(t, row, i, file, "latency_us", std::nullopt) * 1e-6;
}

// The peak a row's kernel runs at: fp8 where it runs in fp8 and the GPU has an fp8 peak.
void set_peak(Row& r, bool fp8) {
  r.fp8 = fp8 && r.gpu->peak_flops(DType::fp8).has_value();
  r.peak = r.gpu->peak_flops(r.fp8 ? DType::fp8 : DType::bf16)->value;
}

// An fp8 context attention kernel (a GPU with fp8 tensor cores and an fp8 cache) reads Q, K and V
// at 1 byte per element where the bf16 kernel reads them at 2.
void read_fp8_operands(Row& r, const MlaGeometry& g, double tokens) {
  // A prompt without a prefix: as many keys as queries.
  r.op.bytes_read -= BytesF{tokens * g.heads * (2 * (g.d_n + g.d_r) + g.d_v) * (g.act_bytes - 1)};
}

// The kernels TensorRT-LLM's context MLA runs before its attention kernel (mFmhaDispatcher->run,
// cpp/tensorrt_llm/common/attentionOp.cpp@eea41b73 :1850), over `tokens` prompt tokens:
// - invokeMLARopeContext (:1727; kernels/mlaKernels.cu@2423fe2a :924-933, a grid of heads + 8 blocks
//   per token tile) runs applyMLARopeAndAssignQKVKernelOptContext (:186-330): each head's block loads
//   the token's RoPE part of Q and the shared RoPE key (:245-246), rotates both, writes Q's part back
//   and the key's into that head's 192-wide K (:280-281), and head 0 stores the key in the cache
//   (:262-275); the 8 blocks past the heads copy the latent part into the cache (:285-329). Per token:
//   h·d_r values of Q read and written, h·d_r of K written, the shared key's d_r and the latent's r
//   read once (the other heads' reads of the key hit the L2), r + d_r stored in the cache's dtype (fp8:
//   quantCopy). At 128 heads in bf16, 51,456 bytes per token: a third of the 163,840 the attention
//   kernel moves.
// - with fp8 context MLA (a GPU with fp8 tensor cores and an fp8 cache), invokeMLAContextFp8Quantize
//   (:1731), then the FMHA's q/k/v point at the fp8 buffers (:1799-1801); quantizeCopyInputToFp8Kernel
//   (kernels/mlaKernels.cu@2423fe2a :822-922, launched :936) reads tokens x heads x 192 of Q and of K
//   and x 128 of V in bf16 and writes each in fp8 with one scale for the tensor. The tables show it:
//   on H100 at 128 heads, 8,192 prompt tokens (16 x 512) take 474 µs longer in fp8 than in bf16, this
//   pass's 1.6 GB at 3.35 TB/s 481 µs; 1,024 tokens, 59 µs against 60.
// Each is an elementwise pass (the row's `passes`, timed under the elementwise family's parameters).
void add_trtllm_context_passes(Row& r, const MlaGeometry& g, double tokens, KvDtype kv) {
  Op rope;
  rope.id = OpId::rope;
  const double cache_b = kv == KvDtype::fp8 ? 1 : g.act_bytes;
  rope.flops = Flops{tokens * g.heads * g.d_r * 3};  // a rotation: ~3 FLOPs per value of Q (and K's for free)
  rope.bytes_read = BytesF{tokens * (g.heads * g.d_r + g.d_r + g.r) * g.act_bytes};
  rope.bytes_written = BytesF{tokens * (2 * g.heads * g.d_r * g.act_bytes + (g.r + g.d_r) * cache_b)};
  r.passes.push_back(rope);
  if (!r.fp8) return;
  const double elements = tokens * g.heads * (2 * (g.d_n + g.d_r) + g.d_v);
  Op q = act_quant_op(elements, g.act_bytes);
  q.bytes_written = BytesF{elements};  // per-tensor fp8: no per-block scales
  r.passes.push_back(q);
}

// A GQA row also times TensorRT-LLM's invokeQKVPreprocessing, the one RoPE + KV-append kernel it
// launches before the attention kernel (gqa_rope_and_cache_write, kernels 1), as an elementwise pass
// (the row's `passes`), wherever that kernel runs apart: before every context FMHA
// (cpp/tensorrt_llm/common/attentionOp.cpp@eea41b73:1736, the FMHA at :1850), and before a decode
// kernel that does not rotate and append the new token itself (trtllm_decode_fuses_preprocessing).
// On B200 it is most of what the short decode rows take beyond H100's QGMMA ones (10.8 µs at the
// 5th percentile against 5.9).
void add_trtllm_preprocessing(Row& r, const Tiling& t, double head_dim, KvDtype kv, bool decode) {
  if (decode && trtllm_decode_fuses_preprocessing(*r.gpu, t, kv == KvDtype::fp8, /*xqa_hopper_kernel=*/true)) return;
  const auto cache = gqa_kv_bytes_per_token_per_layer(static_cast<std::int64_t>(r.kv_heads), static_cast<std::int64_t>(head_dim), kv).total();
  for (const Op& p : gqa_rope_and_cache_write(1, r.batch * r.query, r.heads, r.kv_heads, head_dim, 2, static_cast<double>(cache.value)))
    r.passes.push_back(p);
}

// A row's `preprocess` cell: `trtllm` where the row times TensorRT-LLM's op with the kernels it runs
// before the attention kernel (add_trtllm_context_passes, add_trtllm_preprocessing); `none` or absent
// where it times the attention kernel alone.
bool times_trtllm_preprocessing(const Table2& t, const std::vector<std::string>& row, std::size_t i, const std::string& file) {
  const std::string v = text_field(t, row, "preprocess", "none");
  if (v != "none" && v != "trtllm") fail_key(file, "preprocess", v, fmt::format("row {}: expected trtllm or none", i + 1));
  return v == "trtllm";
}

// The model with `heads` query heads and one layer: the shapes a kernel row timed.
ModelSpec one_layer(const ModelSpec& m, double heads) {
  ModelSpec mm = m;
  mm.heads = mm.kv_heads = static_cast<std::int64_t>(heads);
  mm.layers.resize(1);
  return mm;
}

// MMHA blocks resident on an SM at once: 4 blocks of 256 threads. TensorRT-LLM's launcher says so
// (decoderMaskedMultiheadAttentionLaunch.h@3585984b, mmha_launch_kernel_ex: "The max number of warps
// we can launch per SM is 32 limited by registers", above its test batch x heads >= 4 x SMs, past which
// it launches its 256-thread blocks untuned), and A100's keys-only table agrees. Its MMHA rows (8
// query heads over 8 KV heads) read their values from L2 where the keys of the blocks resident
// between a block's keys and its values fit the 40 MiB L2, seen where the A100 moves more of its
// bandwidth than H100 does on a real pool. 256 keys (64 KiB a block) at 64 to 2,048 sequences:
// 0.94-1.23 of the bandwidth against H100's 0.59-0.88, so 108 SMs x R x 64 KiB <= 40 MiB, R <= 5.9;
// 512 keys (128 KiB) at 64 sequences (512 blocks): 0.68 against 0.72, so min(512, 108 R) x 128 KiB >
// 40 MiB, R > 2.96. With R = 4 the rule sorts 70 of the 77 such rows bound by their bytes (a third of
// the bandwidth or more on both GPUs) as the A100-to-H100 ratio does (above 1.1: values from L2; below
// 1.05: from DRAM), e.g. 512 keys at 32 sequences (256 blocks, 32 MiB) 0.89 against 0.65 and 1,024 at
// 32 (256 blocks of 256 KiB, 64 MiB) 0.68 against 0.77; the other seven are within 11% of H100's
// fraction.
constexpr double kMmhaResidentBlocksPerSm = 4;

// Whether a decode row timed over a keys-only pool (kv_pool k_only) reads its values from L2: the
// values are the keys it read before, still in L2 if the keys the launch reads meanwhile fit there.
// XQA reads a tile's keys, then the same tile's values: yes. MMHA reads all of a block's keys before
// any value, so the resident blocks read their whole key ranges in between: yes only where those fit
// the GPU's L2. A KV head's keys are read once by the blocks of its query heads (they share them), so
// a wave holds its blocks' keys over the head group.
bool k_only_values_in_l2(const Row& r) {
  const LaunchShape l = launch_shape(r.op.tiling, sms_of(r));
  if (!l.mmha) return true;
  if (!(l.ctas > 0)) return false;
  const double distinct_keys_per_block = r.op.cache_bytes_read.value / 2 / l.ctas;
  const double wave = std::min(l.ctas, kMmhaResidentBlocksPerSm * sms_of(r));
  return wave * distinct_keys_per_block <= static_cast<double>(r.gpu->l2_cache.value);
}

// A GQA/MHA/MQA attention row: `batch` sequences of `heads` query heads sharing `kv_heads` KV heads
// of width `head_dim`, decoding one token after `kv_len` − 1 cached keys (attention_decode) or
// filling a causal prompt of `seq_len` tokens (attention); the cache in `kv_dtype`, the kernel in
// `dtype` (an fp8 context kernel runs at the fp8 peak).
void read_gqa_attention(const Table2& t, const std::vector<std::string>& row, std::size_t i, const std::string& file, Row& r) {
  const bool decode = r.kernel == kAttentionDecode;
  const std::string other = decode ? "seq_len" : "kv_len";
  if (const std::string v = text_field(t, row, other, ""); !v.empty())
    fail_key(file, other, v, fmt::format("row {}: {} rows give {}", i + 1, r.kernel, decode ? "kv_len (keys per sequence, the new token included)" : "seq_len (a prompt, no prefix)"));
  r.batch = whole(t, row, i, file, "batch");
  r.len = whole(t, row, i, file, decode ? "kv_len" : "seq_len");
  r.heads = whole(t, row, i, file, "heads");
  r.kv_heads = whole(t, row, i, file, "kv_heads");
  const double head_dim = whole(t, row, i, file, "head_dim");
  if (r.kv_heads > r.heads || std::fmod(r.heads, r.kv_heads) != 0)
    fail_key(file, "kv_heads", fmt::format("{}", r.kv_heads), fmt::format("row {}: must divide heads ({})", i + 1, r.heads));
  if (r.heads > 1024 || head_dim > 1024)
    fail_key(file, r.heads > 1024 ? "heads" : "head_dim", fmt::format("{}", std::max(r.heads, head_dim)), fmt::format("row {}: expected at most 1024", i + 1));
  r.query = decode ? 1 : r.len;
  const std::string kv = text_field(t, row, "kv_dtype", "bf16");
  if (kv != "bf16" && kv != "fp8") fail_key(file, "kv_dtype", kv, fmt::format("row {}: expected bf16 or fp8", i + 1));
  read_dtype_and_latency(t, row, i, file, r);  // the kernel's dtype, in kv_dtype until the cache's replaces it
  const bool fp8_kernel = r.kv_dtype == "fp8";
  r.kv_dtype = kv;
  if (fp8_kernel && kv != "fp8") fail_key(file, "dtype", "fp8", fmt::format("row {}: an fp8 kernel reads an fp8 cache (kv_dtype is {})", i + 1, kv));
  ModelSpec m;
  m.name = "attention row";
  m.attention = r.kv_heads == r.heads ? AttentionKind::mha : r.kv_heads == 1 ? AttentionKind::mqa : AttentionKind::gqa;
  m.heads = static_cast<std::int64_t>(r.heads);
  m.kv_heads = static_cast<std::int64_t>(r.kv_heads);
  m.head_dim = static_cast<std::int64_t>(head_dim);
  m.hidden = m.heads * m.head_dim;
  m.layers.resize(1);
  Workload w;
  w.kv = kv == "fp8" ? KvDtype::fp8 : KvDtype::bf16;
  w.groups = {SequenceGroup{static_cast<std::int64_t>(r.batch), r.query, r.len - r.query}};
  w.context_phase = !decode;  // a one-token prompt is still timed on the context kernel
  const PathPlan plan = standard_path(m, w);
  const Op* op = plan.find(OpId::attention);
  if (!op) throw std::logic_error("--against: the standard path lacks its attention op");
  r.op = *op;
  // The GPU's decode dispatch (take_decode_dispatch: on Blackwell TRTLLM-GEN's, which runs a group of
  // one, MHA, on its tensor-core kernel, and MMHA only above kTllmGenMaxGroup). A decode row on
  // TMA-fed kernels (a Hopper GPU's over an fp8 cache: XQA's QGMMA; a Blackwell GPU's but MMHA's:
  // TRTLLM-GEN) pays the family's second pair of launch costs (gqa_decode_cost_pair); the others the
  // Ampere-style kernel's or MMHA's.
  take_decode_launch(gqa_decode_cost_pair(*r.gpu), r.op, sms_of(r), true);
  set_peak(r, fp8_kernel);
  // preprocess `trtllm`: the row times TensorRT-LLM's attention op, its RoPE + KV-append kernel
  // included where it runs apart (add_trtllm_preprocessing).
  if (times_trtllm_preprocessing(t, row, i, file)) add_trtllm_preprocessing(r, r.op.tiling, head_dim, w.kv, decode);
  // A prompt row on the fp8 context kernel starts at costs of its own: fitted apart where the rows
  // time both kernels.
  if (!decode) r.op.fp8_cache = r.fp8;
  // kv_pool `k_only`: the table was timed over a pool that holds keys only (TensorRT-LLM's
  // CacheType::kSELFKONLY, which aiconfigurator's collector gave GQA attention until its 1.3.0rc20
  // tables: collector/trtllm/collect_attn.py@efcae124:98, CacheType.SELF from dec5f4cd). There a
  // block's value offset is its key offset (WindowBlockManager::setOffsets, fieldIdx 0 for
  // kSELFKONLY: cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp@b35ac1b6), so a decode kernel
  // reads its values from the keys it read before, from L2 where they are still there
  // (k_only_values_in_l2). A prompt's kernel reads K and V from its QKV input, not the pool: its
  // bytes do not change. `kv` or absent: a pool of keys and values.
  const std::string pool = text_field(t, row, "kv_pool", "kv");
  if (pool != "kv" && pool != "k_only") fail_key(file, "kv_pool", pool, fmt::format("row {}: expected kv or k_only", i + 1));
  if (pool == "k_only" && decode && k_only_values_in_l2(r)) {
    const double values = r.op.cache_bytes_read.value / 2;
    r.op.cache_bytes_read = BytesF{values};
    r.op.bytes_read = BytesF{r.op.bytes_read.value - values};
  }
}

// A DeepSeek-V3.2 (DSA) row on the MLA shapes of `m`: `batch` sequences of `query` new tokens after
// kv_len − query cached ones, either the lightning indexer's fp8 scores of every visible key
// (indexer: `heads` index heads of width `head_dim`) or the sparse latent attention over the `topk`
// selected keys (sparse_decode: `heads` query heads, the cache in `kv_dtype`: bf16, fp8 or FlashMLA's
// fp8 layout fp8_flashmla).
void read_dsa(const Table2& t, const std::vector<std::string>& row, std::size_t i, const std::string& file, const ModelSpec& m, Row& r) {
  const bool indexer = r.kernel == kIndexer;
  r.batch = whole(t, row, i, file, "batch");
  r.len = whole(t, row, i, file, "kv_len");
  r.query = field(t, row, i, file, "query", 1.0);
  if (r.query != std::floor(r.query)) fail_key(file, "query", fmt::format("{}", r.query), fmt::format("row {}: expected a whole number", i + 1));
  if (r.query > r.len) fail_key(file, "query", fmt::format("{}", r.query), fmt::format("row {}: more new tokens than kv_len", i + 1));
  r.heads = whole(t, row, i, file, "heads");
  const double width = indexer ? whole(t, row, i, file, "head_dim") : 128;
  const double topk = indexer ? field(t, row, i, file, "topk", 2048.0) : whole(t, row, i, file, "topk");
  for (auto [col, v] : {std::pair{"heads", r.heads}, std::pair{"head_dim", width}, std::pair{"topk", topk}})
    if (v > (std::string(col) == "topk" ? 1e7 : 1024.0)) fail_key(file, col, fmt::format("{}", v), fmt::format("row {}: out of range", i + 1));
  r.kv_dtype = text_field(t, row, "kv_dtype", indexer ? "fp8" : "bf16");
  const auto kv = r.kv_dtype == "bf16" ? std::optional{KvDtype::bf16} : r.kv_dtype == "fp8" ? std::optional{KvDtype::fp8}
                  : r.kv_dtype == "fp8_flashmla" ? std::optional{KvDtype::fp8_flashmla} : std::nullopt;
  if (!kv || (indexer && r.kv_dtype != "fp8"))
    fail_key(file, "kv_dtype", r.kv_dtype, fmt::format("row {}: expected {}", i + 1, indexer ? "fp8 (the index cache)" : "bf16, fp8 or fp8_flashmla"));
  r.measured_s = field(t, row, i, file, "latency_us", std::nullopt) * 1e-6;
  ModelSpec mm = one_layer(m, indexer ? static_cast<double>(m.heads) : r.heads);
  mm.indexer = IndexerDims{.n_heads = static_cast<std::int64_t>(indexer ? r.heads : 64), .head_dim = static_cast<std::int64_t>(width),
                           .topk = static_cast<std::int64_t>(topk)};
  Workload w;
  w.kv = *kv;
  w.groups = {SequenceGroup{static_cast<std::int64_t>(r.batch), r.query, r.len - r.query}};
  const PathPlan plan = mla_path(mm, w, PathKind::sparse);
  const Op* op = plan.find(indexer ? OpId::indexer_scores : OpId::sparse_latent_attention);
  if (!op) throw std::logic_error("--against: the sparse path lacks its DSA op");
  r.op = *op;
  set_peak(r, r.op.fp8);
}

// Every row of every CSV in `dir`, with its ops costed on `gpu`. Columns not read are collected.
std::vector<Row> read_folder(const fs::path& dir, const std::string& gpu_key, const HardwareSpec& gpu, const ModelSpec& m,
                             std::set<std::string>& unread) {
  if (!gpu.peak_flops(DType::bf16)) fail(gpu.source, "has no bf16 peak");
  if (!m.is_mla()) fail(m.name, "is not an MLA model: --against times MLA kernels");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(dir.string(), "is not a folder");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".csv" && e.path().filename() != kSourcesFile) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) fail(dir.string(), "holds no .csv files");
  const std::set<std::string> known{"kernel", "batch", "kv_len", "seq_len", "latency_us", "heads", "query", "kv_dtype", "m", "n", "k", "dtype", "a_dtype", "op", "groups",
                                    "kv_heads", "head_dim", "topk", "other_us", "act_quant", "preprocess", "kv_pool", "library"};
  std::vector<Row> rows;
  // A parsed row, with its speed-of-light time, joins the table.
  auto keep = [&rows](Row& r) {
    r.sol_s = sol_time(r);
    rows.push_back(std::move(r));
  };
  for (const fs::path& p : files) {
    const std::string file = p.string();
    const Table2 t = read_csv(p);
    for (const std::string& h : t.header)
      if (!known.count(h)) unread.insert(h);
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
      const auto& cells = t.rows[i];
      Row r;
      r.gpu_key = gpu_key, r.file = p.filename().string(), r.gpu = &gpu;
      r.kernel = text_field(t, cells, "kernel", "");
      if (std::find_if(kKernels.begin(), kKernels.end(), [&](const char* k) { return r.kernel == k; }) == kKernels.end())
        fail_key(file, "kernel", r.kernel.empty() ? "(absent)" : r.kernel,
                 fmt::format("row {}: expected {}", i + 1, kernel_list()));
      // Columns only some kernels read: a value on another kernel's row is refused.
      const bool gemm = r.kernel == kGemm, gqa = r.kernel == kAttention || r.kernel == kAttentionDecode;
      for (const auto& [col, carries, rows_that] : {std::tuple{"other_us", gemm, "gemm rows"}, std::tuple{"act_quant", gemm, "gemm rows"},
                                                    std::tuple{"library", gemm, "gemm rows"},
                                                    std::tuple{"kv_pool", gqa, "GQA attention rows (attention, attention_decode)"},
                                                    std::tuple{"preprocess", r.kernel == kPrefill || gqa, "expanded_prefill and GQA attention rows"}})
        if (!carries && !text_field(t, cells, col, "").empty())
          fail_key(file, col, text_field(t, cells, col, ""), fmt::format("row {}: only {} carry it", i + 1, rows_that));
      if (r.kernel == kGrouped) {
        // MoE experts: `groups` [k, n] weight matrices each read once, `m` rows in all (bf16 rows in
        // and out, the serving step's convention), fp8 rows at the fp8 peak.
        r.batch = whole(t, cells, i, file, "groups");
        r.len = whole(t, cells, i, file, "m");
        r.heads = whole(t, cells, i, file, "n");
        r.query = whole(t, cells, i, file, "k");
        read_dtype_and_latency(t, cells, i, file, r);
        set_peak(r, r.kv_dtype == "fp8");
        r.op = grouped_gemm_op(OpId::expert_gate_up, r.len, r.batch, r.query, r.heads, r.fp8 ? 1 : 2, 2);
        r.op.fp8 = r.fp8;
        keep(r);
        continue;
      }
      if (r.kernel == kSparse || r.kernel == kIndexer) {
        read_dsa(t, cells, i, file, m, r);
        keep(r);
        continue;
      }
      if (r.kernel == kAttention || r.kernel == kAttentionDecode) {
        read_gqa_attention(t, cells, i, file, r);
        keep(r);
        continue;
      }
      if (r.kernel == kElementwise) {
        // One pass over an [m, k] bf16 matrix writing it in `dtype` (fp8: a quantisation with one
        // scale per tensor; bf16: a copy): m·k·2 bytes read, m·k·(1 or 2) written, no FLOPs to speak of.
        r.len = whole(t, cells, i, file, "m");
        r.heads = whole(t, cells, i, file, "k");
        read_dtype_and_latency(t, cells, i, file, r);
        const double values = r.len * r.heads;
        r.op.id = OpId::rms_norm;
        r.op.flops = Flops{values};
        r.op.bytes_read = BytesF{values * 2};
        r.op.bytes_written = BytesF{values * (r.kv_dtype == "fp8" ? 1 : 2)};
        set_peak(r, false);
        keep(r);
        continue;
      }
      if (r.kernel == kGemm) {
        // [m, k] x [k, n] in bf16, or fp8 inputs (with their block scales) and a bf16 output at the
        // fp8 peak. The row's shape fields hold m (len), n (heads) and k (query), for the lookup.
        r.len = whole(t, cells, i, file, "m");
        r.heads = whole(t, cells, i, file, "n");
        r.query = whole(t, cells, i, file, "k");
        read_dtype_and_latency(t, cells, i, file, r, true);
        set_peak(r, r.kv_dtype != "bf16");
        r.op = gemm_op(OpId::q_proj, r.len, r.query, r.heads, r.fp8 ? 1 : 2, r.fp8 ? 1 : 2);
        r.op.bytes_written = BytesF{r.len * r.heads * 2};  // the output in bf16 either way
        r.op.fp8 = r.fp8;
        r.op.fp8_per_tensor = r.kv_dtype == "fp8_tensor";
        r.other_s = field(t, cells, i, file, "other_us", 0.0) * 1e-6;
        if (r.other_s >= r.measured_s)
          fail_key(file, "other_us", text_field(t, cells, "other_us", ""), fmt::format("row {}: must be below latency_us, the time that includes it", i + 1));
        // act_quant `timed`: the call quantises its bf16 [m, k] input per 1x128 group first, a kernel
        // of its own inside the latency (TensorRT-LLM's and SGLang's block-fp8 Linear); `none` or
        // absent: the row times the GEMM alone.
        const std::string aq = text_field(t, cells, "act_quant", "none");
        if (aq != "none" && aq != "timed") fail_key(file, "act_quant", aq, fmt::format("row {}: expected timed or none", i + 1));
        if (aq == "timed" && r.kv_dtype != "fp8")
          fail_key(file, "act_quant", aq, fmt::format("row {}: only a block-fp8 GEMM (dtype fp8) quantises its input per 128 values", i + 1));
        if (aq == "timed") r.passes.push_back(act_quant_op(r.len * r.query, 2));
        // library `deepgemm`: a block-fp8 GEMM timed on DeepGEMM (its own efficiency, eta_compute_deepgemm);
        // `default` or absent: the table's engine's own kernels.
        const std::string lib = text_field(t, cells, "library", "default");
        if (lib != "default" && lib != "deepgemm") fail_key(file, "library", lib, fmt::format("row {}: expected deepgemm or default", i + 1));
        if (lib == "deepgemm" && r.kv_dtype != "fp8")
          fail_key(file, "library", lib, fmt::format("row {}: DeepGEMM runs block-fp8 GEMMs (dtype fp8), not {}", i + 1, r.kv_dtype));
        if (lib == "deepgemm" && !r.fp8)
          fail_key(file, "library", lib, fmt::format("row {}: DeepGEMM runs on fp8 tensor cores, and {} has no fp8 peak", i + 1, r.gpu->name));
        r.op.deepgemm = lib == "deepgemm";
        keep(r);
        continue;
      }
      if (r.kernel == kBmm) {
        // The absorbed path's per-head fold for `batch` tokens of one step: W_UK on the queries
        // (q_absorb_w_uk) or W_UV on the latent output (out_absorb_w_uv), weights in `dtype` (fp8:
        // dequantised to bf16 in the kernel, so at the bf16 peak), activations in bf16.
        r.batch = whole(t, cells, i, file, "batch");
        r.heads = whole(t, cells, i, file, "heads");
        r.variant = text_field(t, cells, "op", "");
        if (r.variant != "q_absorb_w_uk" && r.variant != "out_absorb_w_uv")
          fail_key(file, "op", r.variant.empty() ? "(absent)" : r.variant, fmt::format("row {}: expected q_absorb_w_uk or out_absorb_w_uv", i + 1));
        read_dtype_and_latency(t, cells, i, file, r);
        r.len = 1;
        Workload w;
        w.fold_weights = r.kv_dtype == "fp8" ? WeightDtype::fp8 : WeightDtype::bf16;
        w.groups = {SequenceGroup{static_cast<std::int64_t>(r.batch), 1, 0}};
        const PathPlan plan = mla_path(one_layer(m, r.heads), w, PathKind::absorb);
        const Op* op = plan.find(r.variant == "q_absorb_w_uk" ? OpId::q_absorb_w_uk : OpId::out_absorb_w_uv);
        if (!op) throw std::logic_error("--against: the absorbed path lacks its fold");
        r.op = *op;
        set_peak(r, false);
        keep(r);
        continue;
      }
      const bool decode = r.kernel == kDecode;
      r.batch = field(t, cells, i, file, "batch", std::nullopt);
      r.len = field(t, cells, i, file, decode ? "kv_len" : "seq_len", std::nullopt);
      r.heads = field(t, cells, i, file, "heads", static_cast<double>(m.heads));
      r.query = field(t, cells, i, file, "query", decode ? 1.0 : r.len);
      r.kv_dtype = text_field(t, cells, "kv_dtype", "bf16");
      if (r.kv_dtype != "bf16" && r.kv_dtype != "fp8") fail_key(file, "kv_dtype", r.kv_dtype, fmt::format("row {}: expected bf16 or fp8", i + 1));
      r.measured_s = field(t, cells, i, file, "latency_us", std::nullopt) * 1e-6;
      // preprocess `trtllm`: the row times TensorRT-LLM's context MLA op, its RoPE pass (and fp8
      // quantisation) before the attention kernel (add_trtllm_context_passes).
      const bool preprocess = times_trtllm_preprocessing(t, cells, i, file);
      for (auto [col, v] : {std::pair{"batch", r.batch}, std::pair{"heads", r.heads}})
        if (v != std::floor(v)) fail_key(file, col, fmt::format("{}", v), fmt::format("row {}: expected a whole number", i + 1));
      if (decode && r.query > r.len) fail_key(file, "query", fmt::format("{}", r.query), fmt::format("row {}: more new tokens than kv_len", i + 1));
      if (!decode && r.query != r.len)
        fail_key(file, "query", fmt::format("{}", r.query), fmt::format("row {}: a prefill row has no prefix (query = seq_len)", i + 1));
      Workload w;
      // A latent decode row over an fp8 cache reads it as fp8 where TensorRT-LLM runs fp8 generation
      // MLA (latent_decode_reads_fp8_cache); on a GPU where it does not (A100), the row times its
      // bf16 kernel over a bf16 cache (r.bf16_reads, said in the text).
      r.bf16_reads = decode && r.kv_dtype == "fp8" && latent_decode_reads_fp8_cache(gpu) == false;
      w.kv = r.kv_dtype == "fp8" && !r.bf16_reads ? KvDtype::fp8 : KvDtype::bf16;
      w.groups = {SequenceGroup{static_cast<std::int64_t>(r.batch), r.query, decode ? r.len - r.query : 0}};
      const PathPlan plan = mla_path(one_layer(m, r.heads), w, decode ? PathKind::absorb : PathKind::expand);
      const Op* op = plan.find(decode ? OpId::latent_attention_mqa : OpId::attention_mha);
      if (!op) throw std::logic_error("--against: the path lacks its attention op");
      // An fp8 prefill runs the fp8 attention kernel, and an fp8 decode the fp8 generation MLA kernel
      // where the GPU runs one (Roofline::latent_fp8, as the planner does): the fp8 peak where the GPU
      // has one.
      set_peak(r, r.kv_dtype == "fp8" && (!decode || latent_decode_reads_fp8_cache(gpu).value_or(false)));
      r.op = *op;
      const MlaGeometry g = mla_geometry(one_layer(m, r.heads), w);
      // The fp8 context and generation kernels (over an fp8 cache) start at costs of their own: fitted
      // apart where the rows time both kernels.
      r.op.fp8_cache = r.fp8;
      // The generation kernel's path already reads the fp8 cache; the context kernel's Q, K and V are
      // read at a byte each here.
      if (r.fp8 && !decode) read_fp8_operands(r, g, r.batch * r.len);
      if (preprocess) add_trtllm_context_passes(r, g, r.batch * r.len, w.kv);
      keep(r);
    }
  }
  return rows;
}

// Even rows of each kernel train, odd rows test (in file order).
void split_even_odd(std::vector<Row>& rows) {
  std::map<std::string, int> seen;
  for (Row& r : rows) r.train = seen[r.kernel]++ % 2 == 0;
}

std::vector<const Row*> select(const std::vector<Row>& rows, const std::string& kernel, bool (*keep)(const Row&)) {
  std::vector<const Row*> out;
  for (const Row& r : rows)
    if (r.kernel == kernel && keep(r)) out.push_back(&r);
  return out;
}

// Every row of one kernel family.
std::vector<const Row*> of_kernel(const std::vector<Row>& rows, const std::string& kernel) {
  return select(rows, kernel, [](const Row&) { return true; });
}

// The dtypes rows time (a GEMM's bf16, block fp8 or per-tensor fp8, block fp8 on DeepGEMM apart; an
// attention's cache dtype).
std::set<std::string> dtypes_of(const std::vector<const Row*>& rows) {
  std::set<std::string> out;
  for (const Row* r : rows) out.insert(r->op.deepgemm ? r->kv_dtype + " on DeepGEMM" : r->kv_dtype);
  return out;
}

// Whether one architecture's rows may be fitted alone for a family: enough of them
// (kMinArchitectureRows), and of every dtype the family's rows on all GPUs time that the
// architecture runs (fp8 only where it has an fp8 peak), since a fit can only find the efficiency of
// a dtype it has rows of (H800's GEMM tables are DeepGEMM's block fp8 alone; A100's attention bf16).
bool architecture_suffices(const std::vector<const Row*>& arch_rows, const std::vector<const Row*>& all_rows, const HardwareSpec& arch_gpu) {
  if (arch_rows.size() < kMinArchitectureRows) return false;
  const std::set<std::string> have = dtypes_of(arch_rows);
  const bool fp8 = arch_gpu.peak_flops(DType::fp8).has_value();
  for (const std::string& d : dtypes_of(all_rows))
    if ((fp8 || d.rfind("fp8", 0) != 0) && !have.count(d)) return false;
  return true;
}

double ape_of(double predicted, double measured) { return std::fabs(predicted - measured) / measured; }

// Errors of the rows that have the prediction (a GPU left out with no other GPU to fit on has none).
std::vector<double> errors(const std::vector<const Row*>& rows, double Row::*predicted) {
  std::vector<double> e;
  for (const Row* r : rows)
    if (std::isfinite(r->*predicted)) e.push_back(ape_of(r->*predicted, r->measured_s));
  return e;
}

Value stat_or_null(const ErrorStats& s, double ErrorStats::*field) { return s.n > 0 ? Value{s.*field} : Value{}; }

// The fits table's fixed-cost column, naming the families whose fixed cost is SM time.
std::string fixed_cost_header() {
  std::string clocked;
  for (const char* k : kKernels)
    if (fixed_form_is_sm_clock(k)) clocked += (clocked.empty() ? "" : ", ") + std::string(k);
  return clocked.empty() ? "fixed cost" : "fixed cost (" + clocked + ": one SM at 1 GHz)";
}

// A latent decode fit's kernel: whether it splits keys, and for the unsplit launch the blocks an SM
// runs at once and a lone block's share of it where fitted.
std::string split_text(const GpuKernelFit& f) {
  if (f.kernel != kDecode) return "-";
  if (f.eff.split_kv) return "yes";
  if (!f.eff.shares_sms()) return "no";
  return fmt::format("no ({} blocks an SM, one alone at {:.2f} of it)", f.eff.resident_ctas, f.eff.solo_share);
}

Table fit_table(const std::string& title, const std::vector<std::pair<std::string, GpuKernelFit>>& fits) {
  Table ft{.name = "fit", .title = title, .columns = {{"fitted_on", "fitted on", Unit::text}, {"kernel", "kernel", Unit::text}}, .rows = {}};
  for (Column& c : efficiency_parameter_columns(true, true)) ft.columns.push_back(std::move(c));
  ft.columns[2].label = fixed_cost_header();  // the fitted values, some at the SM clock: which
  ft.columns.emplace_back("split_kv", "split-KV", Unit::text);
  ft.columns.emplace_back("train_rows", "rows", Unit::count);
  for (const auto& [on, f] : fits) {
    std::vector<Value> row{on, f.kernel};
    append_efficiency_parameters(row, f.eff, true, 1);
    row.emplace_back(std::in_place_type<std::string>, split_text(f));
    row.emplace_back(std::in_place_type<std::int64_t>, f.eff.rows);
    ft.rows.push_back(std::move(row));
  }
  return ft;
}

// A fit's parameters as fit.json writes them.
nlohmann::ordered_json fit_json(const GpuKernelFit& f) {
  nlohmann::ordered_json j{{"t_fixed_s", f.eff.fixed.value}, {"t_seq_s", f.eff.per_sequence.value}};
  if (f.eff.fixed_fp8_cache && f.eff.per_sequence_fp8_cache) {
    j["t_fixed_fp8_cache_s"] = f.eff.fixed_fp8_cache->value;
    j["t_seq_fp8_cache_s"] = f.eff.per_sequence_fp8_cache->value;
  }
  if (f.eff.per_sequence_mmha) j["t_seq_mmha_s"] = f.eff.per_sequence_mmha->value;
  j["eta_compute"] = f.eff.eta_compute;
  if (f.eff.eta_compute_fp8) j["eta_compute_fp8"] = *f.eff.eta_compute_fp8;
  if (f.eff.eta_compute_fp8_tensor) j["eta_compute_fp8_tensor"] = *f.eff.eta_compute_fp8_tensor;
  if (f.eff.eta_compute_deepgemm) j["eta_compute_deepgemm"] = *f.eff.eta_compute_deepgemm;
  if (f.eff.mmha_flops_per_sm_cycle) j["mmha_flops_per_sm_cycle"] = *f.eff.mmha_flops_per_sm_cycle;
  j["eta_memory"] = f.eff.eta_memory;
  if (f.eff.eta_memory_mmha) j["eta_memory_mmha"] = *f.eff.eta_memory_mmha;
  j["memory_reach"] = f.eff.memory_reach;
  if (f.eff.l2_speedup != 1) j["l2_speedup"] = f.eff.l2_speedup;
  if (f.eff.l2_bytes_per_sm_cycle > 0) j["l2_bytes_per_sm_cycle"] = f.eff.l2_bytes_per_sm_cycle;
  if (f.eff.per_cta.value != 0) j["t_cta_s"] = f.eff.per_cta.value;
  if (f.eff.k_step.value != 0) j["t_k_step_s"] = f.eff.k_step.value;
  if (f.eff.block_query_rows > 0) j["block_query_rows"] = f.eff.block_query_rows;
  if (f.eff.block_query_rows_fp8_cache) j["block_query_rows_fp8_cache"] = *f.eff.block_query_rows_fp8_cache;
  if (f.eff.serial_memory) j["serial_memory"] = true;
  if (f.eff.sequences_overlap) j["per_sequence_overlapped"] = true;
  if (f.eff.cta_overlap) j["per_cta_overlapped"] = true;
  if (f.kernel == kDecode) j["split_kv"] = f.eff.split_kv;
  if (f.eff.shares_sms()) j["resident_ctas"] = f.eff.resident_ctas, j["solo_share"] = f.eff.solo_share;
  j["rows"] = f.eff.rows;
  return j;
}

std::string unread_note(const std::set<std::string>& unread) {
  if (unread.empty()) return {};
  std::string s;
  for (const std::string& c : unread) s += (s.empty() ? "" : ", ") + c;
  return fmt::format("Columns not read (kept as the sources' own): {}.\n\n", s);
}

// The latent decode rows over an fp8 cache timed reading bf16 (Row::bf16_reads), per GPU; empty
// when there are none.
std::string bf16_reads_note(const std::vector<const std::vector<Row>*>& per_gpu) {
  std::string s;
  for (const std::vector<Row>* rows : per_gpu) {
    const auto n = std::count_if(rows->begin(), rows->end(), [](const Row& r) { return r.bf16_reads; });
    if (n > 0) s += fmt::format("{}{} on {}", s.empty() ? "" : ", ", n, rows->front().gpu->name);
  }
  if (s.empty()) return {};
  return fmt::format("Latent decode rows with kv_dtype fp8 timed reading a bf16 cache, as TensorRT-LLM runs no fp8 generation MLA on "
                     "their GPU (sm80: common/attentionOp.cpp@eea41b73:2572-2578): {}.\n\n", s);
}

// A folder's sources.csv: file -> (source, licence); empty when the folder has none.
std::map<std::string, std::pair<std::string, std::string>> read_sources(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  std::error_code ec;
  if (!fs::exists(dir / kSourcesFile, ec)) return out;
  const Table2 t = read_csv(dir / kSourcesFile);
  const std::string where = (dir / kSourcesFile).string();
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const std::string file = text_field(t, t.rows[i], "file", ""), source = text_field(t, t.rows[i], "source", ""),
                      licence = text_field(t, t.rows[i], "licence", "");
    if (file.empty() || source.empty() || licence.empty())
      fail_key(where, file.empty() ? "file" : source.empty() ? "source" : "licence", "(empty)", fmt::format("row {}: every table needs a file, a source and a licence", i + 1));
    out[file] = {source, licence};
  }
  return out;
}

}  // namespace

AgainstRun validate_against(const fs::path& dir, const HardwareSpec& gpu, const ModelSpec& m) {
  std::set<std::string> unread;
  std::vector<Row> rows = read_folder(dir, gpu.name, gpu, m, unread);
  split_even_odd(rows);
  // What a user gets: the shipped profile `cost` picks for this GPU (its own, its architecture's, or
  // the one over every architecture).
  const std::optional<EfficiencyProfile> shipped = efficiency_for(gpu, bundled_efficiency());
  // A row's other kernels (a GEMM's input quantisation, TensorRT-LLM's context passes): under the
  // shipped elementwise parameters, and for the refit under those refitted on the folder's own
  // elementwise rows where it has them.
  const PassEfficiency shipped_passes = shipped ? shipped->kernel(KernelFamily::elementwise) : std::nullopt;
  set_pass_times(rows, shipped_passes);
  for (Row& r : rows)
    if (shipped)
      if (const auto& k = shipped->kernel(*parse_kernel_family(r.kernel)))
        r.default_s = row_time(r, *k);
  std::vector<GpuKernelFit> fits;
  for (const char* k : kFitOrder) {
    const auto train = select(rows, k, [](const Row& r) { return r.train; });
    if (train.empty()) continue;
    fits.push_back(fit(k, train));
    for (Row& r : rows)
      if (r.kernel == k) r.fit_s = model_time(r, fits.back());
    if (std::string(k) == kElementwise) set_pass_times(rows, fits.back().eff);
  }
  std::stable_sort(fits.begin(), fits.end(), [](const GpuKernelFit& a, const GpuKernelFit& b) { return report_place(a.kernel) < report_place(b.kernel); });

  Table t{.name = "against", .title = fmt::format("Published timings on {}, predicted", gpu.name),
          .columns = {{"file", "file", Unit::text}, {"kernel", "kernel", Unit::text}, {"batch", "batch", Unit::count}, {"len", "kv/seq len", Unit::count},
           {"heads", "heads", Unit::count}, {"kv_dtype", "KV", Unit::text}, {"measured_s", "measured", Unit::seconds},
           {"predicted_sol_s", "SOL", Unit::seconds}, {"predicted_default_s", "default", Unit::seconds}, {"predicted_fit_s", "fitted", Unit::seconds},
           {"sol_ape", "SOL error", Unit::fraction}, {"default_ape", "default error", Unit::fraction}, {"fit_ape", "fitted error", Unit::fraction},
           {"split", "split", Unit::text}},
          .rows = {}};
  for (const Row& r : rows)
    t.rows.push_back({r.file, r.kernel, static_cast<std::int64_t>(r.batch), static_cast<std::int64_t>(r.len), static_cast<std::int64_t>(r.heads), r.kv_dtype,
                      r.measured_s, r.sol_s, finite_or_null(r.default_s), r.fit_s, ape_of(r.sol_s, r.measured_s),
                      std::isfinite(r.default_s) ? Value{ape_of(r.default_s, r.measured_s)} : Value{}, ape_of(r.fit_s, r.measured_s),
                      std::string(r.train ? "train" : "test")});
  Table err{.name = "errors", .title = "Error on every row (speed of light; the shipped default profile, what cost gives) and on the held-out odd rows (refit)",
            .columns = {{"kernel", "kernel", Unit::text}, {"points", "rows", Unit::count}, {"sol_median_ape", "SOL median", Unit::fraction},
             {"sol_p90_ape", "SOL p90", Unit::fraction}, {"default_median_ape", "default median", Unit::fraction}, {"default_p90_ape", "default p90", Unit::fraction},
             {"fit_median_ape", "refit median (held out)", Unit::fraction},
             {"fit_p90_ape", "refit p90 (held out)", Unit::fraction}},
            .rows = {}};
  for (const char* k : kKernels) {
    const auto all = of_kernel(rows, k);
    if (all.empty()) continue;
    const ErrorStats s = ape_stats(errors(all, &Row::sol_s)), d = ape_stats(errors(all, &Row::default_s)),
                     f = ape_stats(errors(select(rows, k, [](const Row& r) { return !r.train; }), &Row::fit_s));
    err.rows.push_back({std::string(k), static_cast<std::int64_t>(all.size()), s.median, s.p90, stat_or_null(d, &ErrorStats::median),
                        stat_or_null(d, &ErrorStats::p90), f.median, f.p90});
  }
  std::vector<std::pair<std::string, GpuKernelFit>> named;
  for (const GpuKernelFit& f : fits) named.push_back({gpu.name + " (even rows)", f});
  const Table ft = fit_table("Efficiency model refitted on the even rows", named);

  std::vector<svg::Series> series;
  int c = 0;
  for (const char* k : kKernels) {
    svg::Series fitted{.name = std::string(k) + ", refit (held out)", .line = false, .markers = true, .color = c, .marker = c};
    svg::Series sol{.name = std::string(k) + ", speed of light", .line = false, .markers = true, .color = c + static_cast<int>(kKernels.size()), .marker = c};
    for (const Row& r : rows)
      if (r.kernel == k && !r.train) fitted.points.push_back({r.measured_s, r.fit_s}), sol.points.push_back({r.measured_s, r.sol_s});
    if (!fitted.points.empty()) series.push_back(fitted), series.push_back(sol);
    ++c;
  }
  const svg::LinePlot plot = prediction_plot(fmt::format("{}: published timings against predictions", gpu.name), std::move(series));

  std::string md = fmt::format("# Published measurements against mlaplan on {}\n\nFolder `{}`; GPU `{}`; MLA dimensions of {}. Every row is "
                               "predicted at speed of light (`cost --sol`), with the shipped profile `cost` uses by default for this GPU ({}), "
                               "and with the efficiency model refitted on the even rows of each kernel and judged on the odd rows:\n\n"
                               "time = t_fixed + batch·t_seq + max(F / (peak·η_c·w), B / (bandwidth·η_m·w)), w = CTAs / (⌈CTAs / SMs⌉·SMs) (fp8 rows: the fp8 "
                               "peak and, where the rows hold both dtypes, their own η_c); decode CTAs = "
                               "batch × ⌈heads/64⌉ × ⌈kv_len/64⌉ (split-KV; without split-KV fmha_v2's batch × ⌈heads/64⌉ × 2, one per half of the value columns, each computing its tile's Q·Kᵀ and "
                               "reading its sequence's cache (once per tile from DRAM), no faster than one CTA at bandwidth/SMs, and w counting the blocks an SM runs at once "
                               "and a lone block's share of it, both fitted); prefill CTAs = batch × ⌈S/128⌉ × heads, and a causal prefill lasts "
                               "at least as long as its longest CTA. A GEMM row whose call quantises its bf16 input first (`act_quant` timed: m·k values, "
                               "2 bytes read and 1 + 4/128 written each) adds that kernel's time under the elementwise parameters: the shipped "
                               "profile's for the default, the refit's where the folder times elementwise rows; so does an MLA prefill row of TensorRT-LLM's "
                               "context op (`preprocess` trtllm) for its RoPE pass (per token h·d_r values of Q read and written, h·d_r of K written, "
                               "the latent row read and stored in the cache) and, on a GPU with an fp8 peak and an fp8 cache, its quantisation of "
                               "Q, K and V (2 bytes read and 1 written per element). An fp8 prefill kernel reads Q, K and V at 1 byte.\n\n",
                               gpu.name, dir.string(), gpu.source, m.name, shipped ? shipped->describe() : std::string("none bundled"));
  md += unread_note(unread);
  md += bf16_reads_note({&rows});
  md += md_section(err);
  md += "![predicted against measured](against.svg)\n\n";
  md += md_section(ft);
  nlohmann::ordered_json fj;
  for (const auto& f : fits) fj[f.kernel] = fit_json(f);
  AgainstRun out;
  out.files = {{"report.md", md}, {"against.csv", csv_of(t)}, {"errors.csv", csv_of(err)}, {"fit.json", fj.dump(2) + "\n"}, {"against.svg", svg::render(plot)}};
  out.summary = fmt::format("GPU {}; default profile: {}\n", gpu.name, shipped ? shipped->describe() : std::string("none bundled")) + md_section(err);
  return out;
}

AgainstRun validate_transfer(const fs::path& root, const ModelSpec& m) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) fail(root.string(), "is not a folder");
  // A folder named as a bundled GPU holds its timings; others (engine logs) are named in the report.
  std::set<std::string> names;
  for (const BundledEntry& e : bundled_gpus()) {
    names.insert(e.short_name);
    names.insert(e.aliases.begin(), e.aliases.end());
  }
  std::vector<fs::path> dirs;
  std::vector<std::string> skipped;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory()) (names.count(e.path().filename().string()) ? dirs.push_back(e.path()) : skipped.push_back(e.path().filename().string()));
  std::sort(dirs.begin(), dirs.end());
  std::sort(skipped.begin(), skipped.end());
  if (dirs.size() < 2) fail(root.string(), "needs folders of timings for at least two GPUs");
  std::vector<HardwareSpec> gpus;
  gpus.reserve(dirs.size());
  for (const fs::path& d : dirs) gpus.push_back(load_gpu(d.filename().string()));
  std::set<std::string> unread;
  std::vector<std::vector<Row>> per_gpu;
  std::vector<std::map<std::string, std::pair<std::string, std::string>>> sources;
  for (const fs::path& d : dirs) sources.push_back(read_sources(d));
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    std::set<std::string> u;
    per_gpu.push_back(read_folder(dirs[i], dirs[i].filename().string(), gpus[i], m, u));
    split_even_odd(per_gpu.back());
    unread.insert(u.begin(), u.end());
  }
  // H20 and H200 are where the default is judged against measurements kept outside the project:
  // their rows never train a fit.
  auto fittable = [&](std::size_t g) { return gpus[g].name.rfind("H20", 0) != 0; };

  Table err{.name = "transfer", .title = "Median and p90 error by GPU and kernel family",
            .columns = {{"gpu", "GPU", Unit::text}, {"kernel", "kernel", Unit::text}, {"rows", "rows", Unit::count},
             {"sol_median_ape", "SOL median", Unit::fraction}, {"sol_p90_ape", "SOL p90", Unit::fraction},
             {"logo_median_ape", "leave-GPU-out median", Unit::fraction}, {"logo_p90_ape", "leave-GPU-out p90", Unit::fraction},
             {"lookup_median_ape", "lookup median", Unit::fraction}, {"lookup_p90_ape", "lookup p90", Unit::fraction},
             {"in_table_median_ape", "in-table median (held out)", Unit::fraction}, {"in_table_p90_ape", "in-table p90", Unit::fraction}},
            .rows = {}};
  // A row of `err`: the errors over `all`, the in-table refit's over those of them held out.
  auto add_error_row = [&](const std::string& gpu_name, const char* kernel, const std::vector<const Row*>& all) {
    std::vector<const Row*> held;
    for (const Row* r : all)
      if (!r->train) held.push_back(r);
    const ErrorStats s = ape_stats(errors(all, &Row::sol_s)), l = ape_stats(errors(all, &Row::logo_s)), u = ape_stats(errors(all, &Row::lookup_s)),
                     t = ape_stats(errors(held, &Row::fit_s));
    using E = ErrorStats;
    err.rows.push_back({gpu_name, std::string(kernel), static_cast<std::int64_t>(all.size()), s.median, s.p90, stat_or_null(l, &E::median),
                        stat_or_null(l, &E::p90), stat_or_null(u, &E::median), stat_or_null(u, &E::p90), t.median, t.p90});
  };
  std::vector<std::pair<std::string, GpuKernelFit>> logo_fits, all_fits;
  // The profiles to ship (--write-profiles): one per GPU with its own rows, one per architecture,
  // one over every architecture; each names the tables it was fitted on.
  std::map<std::string, EfficiencyProfile> profiles;
  std::string provenance_problem;
  auto add_to_profile = [&](const std::string& name, const std::string& scope, const std::vector<std::size_t>& on, const char* k, const GpuKernelFit& f) {
    const std::size_t g0 = on.front();
    EfficiencyProfile& p = profiles[name];
    p.name = name, p.scope = scope;
    if (scope == "gpu") p.gpu = gpus[g0].name;
    if (scope != "any") p.architecture = gpus[g0].architecture;
    p.kernels[static_cast<std::size_t>(*parse_kernel_family(k))] = f.eff;
    for (std::size_t g : on) {
      std::map<std::string, std::int64_t> rows_of;
      for (const Row* r : of_kernel(per_gpu[g], k)) ++rows_of[r->file];
      for (const auto& [file, n] : rows_of) {
        const auto it = sources[g].find(file);
        const std::string path = (dirs[g] / file).string();
        if (it == sources[g].end()) {
          if (provenance_problem.empty()) provenance_problem = key_message((dirs[g] / kSourcesFile).string(), "file", file, "no source and licence given for this table");
          continue;
        }
        p.fitted_on.push_back(FittedTable{.gpu = gpus[g].name, .file = path, .kernel = k, .source = it->second.first, .licence = it->second.second, .rows = n});
      }
    }
  };
  // Each GPU's elementwise parameters its rows' other kernels are timed with: in a fit, its
  // own (even rows), else those over every GPU; predicting it left out, those fitted without it.
  std::vector<PassEfficiency> passes_own(gpus.size()), passes_left_out(gpus.size());
  PassEfficiency passes_all;
  for (const char* k : kFitOrder) {
    // Each GPU's own fit (even rows) first: it also finds whether the GPU's decode kernel splits keys,
    // and the fits over several GPUs then time each GPU's rows with its own kernel.
    std::vector<std::optional<GpuKernelFit>> in_tables(gpus.size());
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      if (of_kernel(per_gpu[g], k).empty()) continue;
      in_tables[g] = fit(k, select(per_gpu[g], k, [](const Row& r) { return r.train; }));
      if (std::string(k) == kDecode)
        for (Row& r : per_gpu[g])
          if (r.kernel == k) r.split_kv = in_tables[g]->eff.split_kv;
    }
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      std::vector<Row>& mine = per_gpu[g];
      if (of_kernel(mine, k).empty()) continue;
      // Transfer: from the other GPUs of the same architecture where they hold enough of the family's
      // rows (kMinArchitectureRows), else from all, as the profiles a default ships are chosen.
      auto has_rows = [&](std::size_t o) { return o != g && fittable(o) && !of_kernel(per_gpu[o], k).empty(); };
      std::vector<const Row*> same_rows, other_rows;
      for (std::size_t o = 0; o < gpus.size(); ++o) {
        if (!has_rows(o)) continue;
        const auto part = of_kernel(per_gpu[o], k);
        other_rows.insert(other_rows.end(), part.begin(), part.end());
        if (!gpus[g].architecture.empty() && gpus[o].architecture == gpus[g].architecture) same_rows.insert(same_rows.end(), part.begin(), part.end());
      }
      const bool same_arch = architecture_suffices(same_rows, other_rows, gpus[g]);
      const std::vector<const Row*>& others = same_arch ? same_rows : other_rows;
      std::string on;
      for (std::size_t o = 0; o < gpus.size(); ++o)
        if (has_rows(o) && (!same_arch || gpus[o].architecture == gpus[g].architecture)) on += (on.empty() ? "" : " + ") + gpus[o].name;
      std::optional<GpuKernelFit> logo;
      if (!others.empty()) {
        logo = fit(k, others);
        logo_fits.push_back({fmt::format("{} (for {})", on, gpus[g].name), *logo});
      }
      const GpuKernelFit& in_table = *in_tables[g];
      if (std::string(k) == kElementwise) passes_own[g] = in_tables[g]->eff, passes_left_out[g] = logo ? PassEfficiency{logo->eff} : std::nullopt;
      for (Row& r : mine) {
        if (r.kernel != k) continue;
        if (logo) r.logo_s = row_time(r, with_kernel_of(gpus[g], logo->eff, k), passes_time(r, passes_left_out[g]));
        r.fit_s = model_time(r, in_table);
        // The nearest row of another GPU (same kernel and cache dtype) in log shape, scaled by the
        // two rows' speed-of-light ratio.
        double best = INFINITY;
        for (const Row* o : others) {
          if (o->kv_dtype != r.kv_dtype || o->variant != r.variant) continue;
          const double d = std::fabs(std::log(o->batch / r.batch)) + std::fabs(std::log(o->len / r.len)) + std::fabs(std::log(o->heads / r.heads)) +
                           std::fabs(std::log(o->query / r.query)) + std::fabs(std::log(o->kv_heads / r.kv_heads));
          if (d < best) best = d, r.lookup_s = o->measured_s * r.sol_s / o->sol_s;
        }
      }
      add_error_row(gpus[g].name, k, of_kernel(mine, k));
    }
    // The profiles a default would ship: one per architecture with measurements, and one over all
    // for architectures without.
    std::set<std::string> archs{""};
    std::vector<const Row*> family;  // every fittable GPU's rows of it
    for (std::size_t g = 0; g < gpus.size(); ++g)
      if (fittable(g)) {
        archs.insert(gpus[g].architecture);
        const auto part = of_kernel(per_gpu[g], k);
        family.insert(family.end(), part.begin(), part.end());
      }
    for (const std::string& arch : archs) {
      std::vector<const Row*> every;
      std::vector<std::size_t> members;
      std::string on;
      for (std::size_t g = 0; g < gpus.size(); ++g)
        if (fittable(g) && (arch.empty() || gpus[g].architecture == arch)) {
          const auto part = of_kernel(per_gpu[g], k);
          if (part.empty()) continue;
          on += (on.empty() ? "" : " + ") + gpus[g].name;
          members.push_back(g);
          every.insert(every.end(), part.begin(), part.end());
        }
      if (every.empty()) continue;
      // An architecture whose GPUs time the family on too few rows, or not in every dtype, leaves it to
      // the profile over all.
      if (!arch.empty() && !architecture_suffices(every, family, gpus[members.front()])) continue;
      all_fits.push_back({fmt::format("{}: {}", arch.empty() ? "any architecture" : arch, on), fit(k, every)});
      if (arch.empty() && std::string(k) == kElementwise) passes_all = all_fits.back().second.eff;
      add_to_profile(arch.empty() ? "any" : arch, arch.empty() ? "any" : "architecture", members, k, all_fits.back().second);
    }
    for (std::size_t g = 0; g < gpus.size(); ++g)
      if (fittable(g) && !of_kernel(per_gpu[g], k).empty()) add_to_profile(dirs[g].filename().string(), "gpu", {g}, k, fit(k, of_kernel(per_gpu[g], k)));
    if (std::string(k) == kElementwise)
      for (std::size_t g = 0; g < gpus.size(); ++g) {
        if (!passes_own[g]) passes_own[g] = passes_all;
        if (!passes_left_out[g]) passes_left_out[g] = passes_all;
        set_pass_times(per_gpu[g], passes_own[g]);
      }
  }
  // Each GPU's rows of every family together: the issue's bound is per GPU.
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    std::vector<const Row*> all;
    for (const Row& r : per_gpu[g]) all.push_back(&r);
    if (!all.empty()) add_error_row(gpus[g].name, kAllFamilies, all);
  }
  // Every row's predictions, for a look at where the errors lie.
  Table each{.name = "rows", .title = "Every row: measured and predicted",
             .columns = {{"gpu", "GPU", Unit::text}, {"file", "file", Unit::text}, {"kernel", "kernel", Unit::text}, {"batch", "batch", Unit::count},
              {"len", "kv_len / seq_len / m", Unit::count}, {"heads", "heads / n", Unit::count}, {"kv_heads", "KV heads", Unit::count},
              {"query", "query / k", Unit::count}, {"variant", "op", Unit::text}, {"kv_dtype", "dtype", Unit::text}, {"measured_s", "measured", Unit::seconds},
              {"predicted_sol_s", "SOL", Unit::seconds}, {"predicted_left_out_s", "left out", Unit::seconds}, {"predicted_lookup_s", "lookup", Unit::seconds},
              {"predicted_fit_s", "in-table refit", Unit::seconds}, {"split", "split", Unit::text}},
             .rows = {}};
  for (std::size_t g = 0; g < gpus.size(); ++g)
    for (const Row& r : per_gpu[g])
      each.rows.push_back({gpus[g].name, r.file, r.kernel, static_cast<std::int64_t>(r.batch), static_cast<std::int64_t>(r.len), static_cast<std::int64_t>(r.heads),
                           static_cast<std::int64_t>(r.kv_heads), static_cast<std::int64_t>(r.query), r.variant, r.kv_dtype, r.measured_s, r.sol_s,
                           finite_or_null(r.logo_s), finite_or_null(r.lookup_s), finite_or_null(r.fit_s), std::string(r.train ? "train" : "test")});
  auto in_report_order = [](std::vector<std::pair<std::string, GpuKernelFit>>& v) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return report_place(a.second.kernel) < report_place(b.second.kernel); });
  };
  in_report_order(logo_fits);
  in_report_order(all_fits);
  std::stable_sort(err.rows.begin(), err.rows.end(), [](const auto& a, const auto& b) {
    return report_place(std::get<std::string>(a[1])) < report_place(std::get<std::string>(b[1]));
  });
  const Table logo_t = fit_table("Fits for each left-out GPU (on the others' rows)", logo_fits);
  Table all_t = fit_table("Fits per architecture and over all GPUs that may be fitted (the profiles a default would ship)", all_fits);
  all_t.name = "fit_all";

  std::string md = fmt::format("# Leave one GPU out: published MLA kernel timings against mlaplan\n\nFolders under `{}`, one per GPU; MLA "
                               "dimensions of {}. For each GPU the efficiency model (see `mlaplan-validate --against`) is fitted on the other "
                               "GPUs' rows (those of its architecture where they hold {} rows of the kernel family or more in every dtype the family is timed in, else all) and "
                               "predicts this GPU's through its own datasheet peak, bandwidth, SM count and L2. Beside it: speed of light; lookup, "
                               "the nearest row of those same GPUs (same kernel and cache dtype, nearest in log batch, length, heads and query) "
                               "scaled by the two rows' speed-of-light ratio; and the refit on this GPU's own even rows, judged on its "
                               "odd rows. A GEMM row whose call quantises its input first (`act_quant` timed), or an MLA prefill row of TensorRT-LLM's "
                               "context op (`preprocess` trtllm: its RoPE pass, and on a GPU with an fp8 peak over an fp8 cache its Q/K/V "
                               "quantisation), adds those kernels' time under its GPU's "
                               "own elementwise fit (over every GPU's where it has no elementwise rows; left out, the fit without it). "
                               "H20 and H200 rows are never fitted on. A GPU's `{}` row pools its families' rows; `rows.csv` holds every row's "
                               "predictions.\n\n",
                               root.string(), m.name, kMinArchitectureRows, kAllFamilies);
  md += unread_note(unread);
  std::vector<const std::vector<Row>*> all_rows;
  for (const auto& rows : per_gpu) all_rows.push_back(&rows);
  md += bf16_reads_note(all_rows);
  if (!skipped.empty()) {
    std::string s;
    for (const std::string& n : skipped) s += (s.empty() ? "" : ", ") + n;
    md += fmt::format("Folders not named as a GPU, not read: {}.\n\n", s);
  }
  md += md_section(err);
  md += md_section(logo_t);
  md += md_section(all_t);
  nlohmann::ordered_json fj;
  for (const auto& [on, f] : all_fits)
    fj[on][f.kernel] = fit_json(f);
  AgainstRun out;
  out.files = {{"report.md", md}, {"transfer.csv", csv_of(err)}, {"fits.csv", csv_of(logo_t)}, {"fit.json", fj.dump(2) + "\n"}, {"rows.csv", csv_of(each)}};
  out.summary = md_section(err);
  for (auto& [name, p] : profiles) {
    std::stable_sort(p.fitted_on.begin(), p.fitted_on.end(), [](const FittedTable& a, const FittedTable& b) { return report_place(a.kernel) < report_place(b.kernel); });
    out.profiles.push_back(std::move(p));
  }
  out.profile_problem = provenance_problem;
  return out;
}

}  // namespace mlaplan::validate
