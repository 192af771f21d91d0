#pragma once
// Roofline time (formula reference §2): per op, time = max(F / (peak·η_c), B / (bandwidth·η_m))
// plus a launch cost; a path's time is the sum over its ops.
#include <optional>
#include <vector>

#include "mlaplan/core/efficiency.hpp"
#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/paths.hpp"

namespace mlaplan {

// How an engine launches TensorRT-LLM's GQA decode kernels, from its profile's gqa_decode_* keys
// (StepOverheads::gqa_decode, the Roofline's decode): every field as TensorRT-LLM 1.x launches them
// for an engine without the keys.
struct DecodeKernelRules {
  // The engine has TensorRT-LLM's XQA decode kernels (gqa_decode_xqa): false, a GQA decode step that
  // XQA would take runs the masked multi-head attention kernel (MMHA) instead, one block per query
  // head (op_time gives such ops Tiling::xqa_group false), as TensorRT-LLM did before XQA.
  bool xqa = true;
  // ... and the only head group its XQA kernels take (gqa_decode_xqa_group; 0: every group XQA's
  // dispatch takes, 2 to 32): a GQA decode step of another group runs MMHA, as where xqa is false.
  double xqa_only_group = 0;
  // ... whether its XQA has the Hopper kernel for an E4M3 cache (gqa_decode_xqa_hopper_kernel: QGMMA
  // fed by TMA, mha_sm90, from 0.10.0): false, a Hopper XQA launch over an fp8 cache runs the
  // Ampere-style kernel instead, at the family's costs (not its fp8-cache pair: op_time gives such ops
  // Op::fp8_cache false) and after the RoPE + KV-append kernel (trtllm_decode_fuses_preprocessing).
  bool xqa_hopper_kernel = true;
  // ... whether an fp8 cache sends a GQA decode step to XQA however few its blocks
  // (gqa_decode_fp8_forces_xqa, Tiling::xqa_fp8_cache): false, its blocks must reach a quarter of the
  // SMs as over a 16-bit cache.
  bool xqa_fp8_forced = true;
  // ... whether its decode kernels split a sequence's keys over several blocks (gqa_decode_multi_block,
  // TensorRT-LLM's multi-block mode): false, XQA runs one block per sequence and KV head and MMHA one
  // per sequence and query head (Tiling::split_k and mmha_key_tiles 1), and XQA's perf-gain test
  // counts those blocks alone (xqa_gain_blocks).
  bool multi_block = true;
  bool operator==(const DecodeKernelRules&) const = default;
};

struct Roofline {
  FlopsPerSecond peak{0};
  BytesPerSecond bandwidth{0};
  double eta_compute = 1;
  double eta_memory = 1;
  Seconds launch{0};  // per op
  // The fp8 tensor peak, for ops that run in fp8 whatever the compute dtype (DeepSeek-V3.2's
  // indexer); 0: the GPU has none, and they run at `peak`.
  FlopsPerSecond peak_fp8{0};
  bool fp8_compute = false;  // `peak` is the fp8 peak (the compute dtype is fp8)
  // The GPU runs fp8 generation MLA over an fp8 cache (latent_decode_reads_fp8_cache): TensorRT-LLM
  // quantises the query to E4M3 (attentionOp.cpp@eea41b73:985-1005, mlaKernels.cu@2423fe2a:529-552)
  // and runs QK and PV on fp8 tensor cores (sm90: FlashMLA's E4M3 instantiation, :1175-1176 and
  // :1224-1226, flash_fwd_mla_kernel.h@08f1ea31:101-110; sm100: TRTLLM-GEN with E4M3 Q, :2768-2775).
  bool latent_fp8 = false;
  // The engine runs block-scaled fp8 GEMMs on DeepGEMM on this GPU (its profile's deepgemm_hopper or
  // deepgemm_blackwell): op_time gives such ops Op::deepgemm. False: the engine's own kernels, or no
  // engine.
  bool deepgemm = false;
  // How the engine launches TensorRT-LLM's GQA decode kernels (its profile's gqa_decode_* keys, held
  // by StepOverheads::gqa_decode and copied whole; TensorRT-LLM 1.x's launches without an engine).
  DecodeKernelRules decode;
  // Which GQA decode launches run TensorRT-LLM's TMA-fed kernels on this GPU, with the family's second
  // pair of launch costs (gqa_decode_cost_pair): on Blackwell also its dispatch (take_decode_dispatch).
  DecodeCostPair decode_pair = DecodeCostPair::none;
  // Calibrated families (efficiency.hpp): an op of a family the profile has takes its calibrated
  // time on `sms` SMs; the others take the uniform efficiencies above and `launch`.
  std::array<std::optional<KernelEfficiency>, kKernelFamilyCount> kernels{};
  double sms = 0;
  double sm_clock_hz = 0;  // HardwareSpec::sm_clock_hz, at which a GQA decode kernel's blocks cost their SM time and MMHA computes
  std::string eta_source = "speed of light";  // what the times assume, as outputs name it
  bool calibrated() const;
  // The family whose fitted parameters time an op of family f: its own; for a grouped GEMM without
  // its own fit, the GEMM fit (the same tensor-core tiles, one launch over every expert); none when
  // neither is fitted (the op then runs at eta_compute / eta_memory).
  std::optional<KernelFamily> fit_family(KernelFamily f) const;
  FlopsPerSecond attainable_compute() const { return peak * eta_compute; }
  BytesPerSecond attainable_bandwidth() const { return bandwidth * eta_memory; }
  // Ridge point of the effective machine: peak·η_c / (bandwidth·η_m), FLOP per byte.
  double ridge() const { return attainable_compute() / attainable_bandwidth(); }
};

// The roofline of a GPU at a compute dtype with the given efficiencies.
Roofline roofline_for(const HardwareSpec& hw, DType compute, const Efficiency& eta, Seconds launch = Seconds{0});
// The speed-of-light bound of the same GPU and dtype: η = 1, no fixed costs, nothing calibrated.
Roofline speed_of_light(const Roofline& rf);
// The same under a calibrated profile: its families calibrated, every other op at speed of light.
Roofline roofline_for(const HardwareSpec& hw, DType compute, const EfficiencyProfile& profile);
// The default: the GPU's profile among `profiles` (efficiency_for), else the hardware file's
// efficiency, else speed of light; `eta_source` says which.
Roofline default_roofline(const HardwareSpec& hw, DType compute, const std::vector<EfficiencyProfile>& profiles);

struct OpTime {
  Seconds compute{0};    // F / (peak·η_c), calibrated: F / (peak·η_c·w) or the longest CTA
  Seconds memory{0};     // B / (bandwidth·η_m), calibrated: B / (bandwidth·η_m·w)
  Seconds fixed{0};      // launch, calibrated: launches·(t_fixed + sequences·t_seq + CTA waves·t_cta)
  Seconds blocks{0};     // calibrated under a family with sequences_overlap: launches·sequences·t_seq (not in fixed)
  Seconds ctas{0};       // calibrated under a family with cta_overlap: launches·CTA waves·t_cta, added to compute (not in fixed)
  Seconds time{0};       // max of the two (their sum where the family's memory pass runs apart; and blocks), plus fixed
  bool serial = false;   // calibrated under a family with serial_memory: compute and memory add
  bool calibrated = false;  // its family's fitted parameters were used
  double intensity = 0;  // F / B, FLOP per byte
  bool compute_bound = false;
};
OpTime op_time(const Op& op, const Roofline& rf);
// Whether an op's calibrated time takes its family's fp8 efficiency: it runs at the fp8 peak (an fp8
// op, or fp8 compute); a per-tensor-scaled fp8 GEMM its per-tensor one where the family has it.
bool takes_fp8_efficiency(const Op& op, const Roofline& rf);
// The op as the Roofline's engine launches it, where op_time (and --explain) time it otherwise than
// the op says: a block-scaled fp8 GEMM as DeepGEMM's where the engine runs DeepGEMM
// (Roofline::deepgemm); a GQA decode kernel through MMHA where the engine has no XQA (DecodeKernelRules::xqa)
// or no XQA kernel for its head group (xqa_takes_group); as the engine's XQA generation dispatches and
// launches it (DecodeKernelRules::xqa_fp8_forced, multi_block, xqa_hopper_kernel). nullopt: as the op says.
std::optional<Op> as_launched(const Op& op, const Roofline& rf);
// Whether the engine's XQA kernels take a decode op's head group (Tiling::head_group): every group
// but where the engine's take one only (DecodeKernelRules::xqa_only_group).
bool xqa_takes_group(const Roofline& rf, const Tiling& t);
// Whether a GQA decode launch that XQA's dispatch would take runs MMHA because of the engine: it has
// no XQA (DecodeKernelRules::xqa) or no XQA kernel for the op's head group (xqa_takes_group). Not a
// speculative step's (XQA's multi-query kernels), nor a head group XQA never takes (MHA, above 32).
bool engine_refuses_xqa(const Roofline& rf, const Tiling& t);
// Whether an op computes at the fp8 peak: an fp8 op, or the absorbed path's latent attention over an
// fp8 cache where the GPU runs fp8 generation MLA; never where the GPU has no fp8 peak.
bool runs_at_fp8_peak(const Op& op, const Roofline& rf);

struct PathCost {
  Flops flops{0};
  BytesF bytes{0};
  BytesF workspace_bytes{0};
  Seconds time{0};
  Seconds compute{0};  // Σ compute time of the ops
  Seconds memory{0};   // Σ memory time of the ops
  double intensity() const { return bytes.value > 0 ? flops / bytes : 0; }
  // The bound that takes most of the path's time.
  bool compute_bound() const { return compute >= memory; }
  PathCost& operator+=(const PathCost& o);  // workspace: the larger of the two
  PathCost operator*(double layers) const;  // the same cost repeated over layers (workspace unchanged)
};
PathCost path_cost(const PathPlan& p, const Roofline& rf);

}  // namespace mlaplan
