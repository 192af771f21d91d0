#pragma once
// The MLA computation paths as op lists (formula reference §2, "The two MLA paths").
//
// A step attends Q new query tokens after a prefix of P cached tokens (S = P + Q keys) for each
// sequence of a batch. Every op carries FLOPs, bytes read, bytes written and workspace bytes, so
// every number can be traced. Weights an op reads are read once per step (amortised over the
// batch); caches are read once per sequence. Query lengths are real numbers so that crossovers
// can be solved exactly; integral inputs give exact integral FLOPs.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "mlaplan/core/dtype.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/parallelism.hpp"
#include "mlaplan/core/units.hpp"

namespace mlaplan {

// split: a batch divided between the absorbed and the expanded kernels (as vLLM runs a mixed batch).
enum class PathKind { absorb, expand, chunked, sparse, standard, split };
std::string_view to_string(PathKind p);

enum class OpKind { gemm, bmm, attention, merge, elementwise, indexer, grouped_gemm };
std::string_view to_string(OpKind k);

// Every op the path engine emits. The same ids name the validation kernels that time them, so a
// prediction and its measurement are joined by id: a renamed or missing op cannot be skipped silently.
// to_string gives the stable names of the JSON/CSV contract (`paths.<path>.ops[].op`).
enum class OpId {
  q_a_proj, q_b_proj, q_proj, kv_a_proj, o_proj,   // MLA projections (layer scope)
  q_absorb_w_uk, latent_attention_mqa, split_kv_merge, out_absorb_w_uv,  // absorb
  kv_up_proj, rope_k_broadcast, attention_mha,     // expand
  kv_up_proj_chunk, attention_mha_chunk, lse_merge,  // chunked expand
  indexer_proj, indexer_scores, sparse_latent_attention,  // DSA
  qkv_proj, attention, attention_sliding,          // standard attention (MHA/GQA/MQA)
  // The rest of the model, for a serving step (core/serving):
  embedding, rms_norm, swiglu, dense_gate_up, dense_down, router, expert_gate_up, expert_down,
  shared_gate_up, shared_down, mtp_eh_proj, lm_head, sampling,
  expert_scatter, expert_gather,  // EP normal mode: tokens to per-expert rows and the weighted rows back
  // The small kernels around them (a serving step's "other kernels", SGLang's DeepSeek forward):
  act_quant,   // bf16 activations to fp8 with one scale per 128 values, before a block-fp8 GEMM
  rope,        // rotary embedding of the queries' and the key's RoPE parts, in place
  kv_store,    // the new tokens' latent rows (MLA) or K and V (GQA) written into the paged cache
  topk_gate,   // the router's logits to each token's top-k experts and weights
  moe_sum,     // shared experts' output plus the routed experts' combined output
  k_nope_copy,  // MLA's expanded keys: each head's K_nope copied from kv_b_proj's output into the 192-wide key buffer
  rope_kv_append,  // GQA: one kernel rotating the new tokens' Q and K and appending K and V to the cache
  mtp_concat,      // the MTP module's normalised embedding and hidden state side by side, eh_proj's input
};
inline constexpr int kOpIdCount = static_cast<int>(OpId::mtp_concat) + 1;
std::string_view to_string(OpId id);
// The kind of kernel an op runs as (the efficiency family it belongs to).
OpKind kind_of(OpId id);

// How an op's kernel occupies the GPU, read by calibrated time (efficiency.hpp); 0 where not modelled.
struct Tiling {
  double launches = 1;           // kernel launches (chunked expand: one per chunk)
  double kernel_launches() const { return std::max(1.0, launches); }  // at least the one
  double sequences = 0;          // sequences one launch walks (its per-sequence cost)
  double ctas = 0;               // thread blocks of one launch (its wave efficiency)
  double split_k = 1;            // the most slices the reduction may split into (GEMMs' split-K, attention's keys) to fill the SMs
  double padded_flops = 0;       // FLOPs computed including tile padding (0: the op's own)
  double longest_cta_flops = 0;  // the longest thread block's FLOPs (a causal prefill's last query tile)
  // A dense GEMM's rows, columns and reduction, M x N x K (gemm_op; 0 for other ops): a block-scaled fp8
  // GEMM tiles them its own way, walks K in steps of kScaledKStep in each CTA and never splits it
  // (launch_tiling, KernelEfficiency::k_step).
  double gemm_m = 0, gemm_n = 0, gemm_k = 0;
  // GQA/MHA attention whose sequences each bring one token (or a speculative step's few): engines
  // launch a decode kernel for it (XQA, FlashInfer's decode, flash-decoding), not the prefill one.
  bool decode_kernel = false;
  bool multi_query = false;  // a decode kernel's speculative step: more than one query token per sequence
  // The query rows one block of a decode kernel holds, the most over the batch: its head group's query
  // heads, times the query tokens of a speculative step (at most one tile's). What its cost per block
  // grows with (KernelEfficiency::block_query_rows). 0: not a decode kernel.
  double decode_block_rows = 0;
  // TensorRT-LLM's decode dispatch (launch_shape in efficiency.hpp): XQA for a head group of 2 to 32
  // query heads per KV head where its blocks (xqa_gain_blocks: KV heads x sequences x max(1, keys /
  // 128)) reach a quarter of the SMs or the cache is fp8 (xqa_fp8_cache), else the masked multi-head
  // attention kernel (MMHA), one block per query head and sequence (mmha_ctas), its keys split into at
  // most mmha_key_tiles tiles.
  bool xqa_group = false;
  double xqa_gain_blocks = 0;
  // Whether the dispatch is TensorRT-LLM's on sm100 (Blackwell: take_decode_dispatch in
  // efficiency.hpp): its XQA dispatcher runs TRTLLM-GEN's generation kernel for every head group up to
  // kTllmGenMaxGroup, a group of one (MHA) included, whatever the grid or cache (no perf-gain test),
  // and MMHA above it (launch_shape). The grid stays XQA's (blocks per KV head and sequence, split as
  // XQA's multi-block count): TRTLLM-GEN's own split of the keys is not modelled.
  bool tllm_gen = false;
  // The decode step's head group (query heads per KV head), for an engine whose XQA kernels take one
  // group only (DecodeKernelRules::xqa_only_group). 0: not a GQA decode kernel.
  double head_group = 0;
  // Whether the decode step reads an fp8 (E4M3) cache: TensorRT-LLM's dispatch then prefers XQA wherever
  // it has a kernel for the head group, however few its blocks (DecoderXQARunner::shouldUse, for
  // 16-bit queries and no fp8 output, which every decode step here has whatever its GEMMs' dtype;
  // its log gives the reason, "MMHA does not support this combination"; a group without an XQA
  // kernel still runs MMHA's fp8-cache instantiation, the unsupported configuration being checked
  // first: cpp/tensorrt_llm/kernels/decoderMaskedMultiheadAttention/decoderXQARunner.cpp:73-78 and
  // :82-89, read in the fork Tushar-ml/TensorRT-LLM@2d678d47 and alike in psa1582/TensorRT-LLM@d8e29dbb;
  // absent from NVIDIA's 1.0.0rc4, 000a01de). H100's table shows it: 16 and 32 sequences of 2 keys at
  // 32 heads over one KV head take 13.5-13.6 µs over a bf16 cache (MMHA, 512 and 1,024 blocks) and
  // 8.9-9.1 µs over an fp8 one, as 1 sequence does (launch_shape).
  bool xqa_fp8_cache = false;
  // A split XQA launch (more blocks than KV heads x sequences): each block writes its head group's
  // normalised partial output, bf16 at the head dim, with an fp32 row sum and max per head, and the
  // sequence's last block reads them all back to merge them (no kernel of its own): these bytes per
  // block, written and read (NVIDIA/TensorRT-LLM cpp/kernels/xqa/mha_sm90.cu@fbbc05dd:498-516
  // ScratchMem, :1256-1280 the write, :1538-1541 and :1680-1713 the last block's reads; mha.cu@d8c5e15a
  // stores the same output and two 128-byte fp32 records for the sum and max, :2392-2413). MMHA's
  // split launches (mmha_key_tiles) also write and merge partial outputs: not counted.
  double xqa_partial_bytes = 0;
  double mmha_ctas = 0;
  double mmha_key_tiles = 1;
  // Latent attention without split-KV (a kernel that walks all of a sequence's keys in each block:
  // TensorRT-LLM's MLA generation on sm80 and sm89, fmha_v2's tiled kernel, latent_decode_splits_keys):
  // that launch's CTAs, its FLOPs, the bytes they read together (each head tile reads its sequence's
  // cache), and the longest CTA's bytes. 0: the op has no such alternative. fmha_v2 gives each
  // sequence and 64-head tile ⌈r / kFmhaV2ValueColumns⌉ blocks (2 for r = 512), one per slice of the
  // value columns, each computing the tile's whole Q·Kᵀ (fused_multihead_attention_v2.h@06255cb7:
  // 345-351): 2·(2·(r + d_r)) + 2·r FLOPs per head, query and key, 1.53x the absorbed op's. The two
  // blocks of a tile start together and read the same keys: the cache is counted once per tile (the
  // second read from the L2). Its blocks share SMs (KernelEfficiency::resident_ctas).
  double unsplit_ctas = 0;
  double unsplit_slices = 1;  // ... blocks per sequence and head tile (the value slices)
  double unsplit_flops = 0;
  double unsplit_bytes = 0;
  double unsplit_longest_bytes = 0;
  // Latent attention's split launch as FlashMLA schedules it (latent_partition in efficiency.hpp):
  // the batch's 64-key blocks and one sequence's 64-row query tiles (the most over the batch).
  // 0: not a latent attention op.
  double latent_key_blocks = 0;
  double latent_m_tiles = 0;
  // ... and over the batch's sequences, the bytes one piece of a split sequence moves beyond the cache:
  // its fp32 partial output and log-sum-exp per query row and head (r·4 + 4), written by the kernel
  // and read back by FlashMLA's combine kernel (flash_fwd_mla_combine). 0: none (an op whose bytes
  // already count its split partials, kv_splits > 1).
  double latent_partial_bytes = 0;
};

// The value columns one block of fmha_v2's tiled MLA generation kernel computes (Tiling::unsplit_ctas).
inline constexpr double kFmhaV2ValueColumns = 256;

// TensorRT-LLM's decode attention (NVIDIA/TensorRT-LLM; the aiconfigurator tables that fit the
// attention_decode family time its op with JIT XQA on, collector/trtllm/collect_attn.py@d2237d72:44-47).
// XQA: a grid of (blocks per sequence, KV heads, sequences), every KV head's query heads in one block
// (decoderXQAImplJIT.cpp@89fd9b74:522-524); the blocks per sequence one per kXqaHistoryPerBlock keys,
// at most round(sqrt(8 x that)) so that the final reduction does not dominate, at least one, then cut
// to about kXqaTargetWaves waves (computeMultiBlockCount, decoderXQAImplCommon.h@b35ac1b6:357-392;
// constants in decoderXQAConstants.h@37e602fd:26-29). XQA runs only for head groups up to
// kXqaMaxGroup (decoderXQAImplJIT/kernelUtils.cpp@602593ac:110-114, 161-165; a group of 1, MHA,
// never: :57) and where kXqaMinBlockFactor x its blocks reach the SMs (mayHavePerfGain,
// decoderXQAImplJIT.cpp@89fd9b74:74-97) or the cache is fp8 (Tiling::xqa_fp8_cache); else the masked multi-head attention kernel (MMHA), one
// block per query head and sequence (decoderMaskedMultiheadAttentionLaunch.h@05316d33:221), its keys
// split into at most one wave of tiles (getMaxNumSeqLenTile in common/attentionOp.cpp@eea41b73) of
// kMmhaKeysPerTile keys (multi_block_grid_setup, the launch header's :98-147). On Blackwell the
// dispatcher runs TRTLLM-GEN instead, for groups up to kTllmGenMaxGroup (Tiling::tllm_gen).
inline constexpr double kXqaHistoryPerBlock = 128;  // kMinHistoryTokensPerBlock
inline constexpr double kXqaTargetWaves = 8;        // kTargetWaveFactor
inline constexpr double kXqaMinBlockFactor = 4;     // kEnableMinBlockFactor
inline constexpr double kXqaMaxGroup = 32;          // head group x beam above 32: no XQA kernel
inline constexpr double kMmhaKeysPerTile = 128;     // MMHA's keys per loop at head size 128 in bf16
// The largest head group TensorRT-LLM's XQA dispatcher gives TRTLLM-GEN on sm100; larger ones run MMHA.
// The dispatcher's code says 16 (xqaDispatcher.cpp@c8b9bfc7:240-242 and @026da036, "Fallback to MMHA
// as num_q_heads per kv_head > 16"); the 1.3.0rc20 tables it is fitted on say 32: B200's rows of 32
// query heads over one KV head take 0.91-1.62x its group-16 rows' time at the same shape (median
// 1.12x; 64 sequences of 4,096 keys: 33.6 µs and 33.4 µs, bf16), its rows of 64 over one 6.1x in the
// median (1,183 µs there), MMHA's CUDA-core time.
inline constexpr double kTllmGenMaxGroup = 32;
double decode_blocks_per_sequence(double keys);

struct Op {
  OpId id = OpId::q_proj;
  Flops flops{0};
  BytesF bytes_read{0};
  BytesF bytes_written{0};
  BytesF workspace_bytes{0};   // transient buffers the op materialises
  BytesF cache_bytes_read{0};  // the part of bytes_read that is KV/indexer cache
  bool fp8 = false;            // runs in fp8 whatever the step's compute dtype (the DSA indexer, fp8 weights)
  // fp8 with one scale per tensor: at the fp8 peak with its family's per-tensor fp8 efficiency
  // (eta_compute_fp8_tensor; the block-scaled kernels rescale every 128 of the reduction).
  bool fp8_per_tensor = false;
  // A block-scaled fp8 GEMM that runs DeepGEMM, not the engine's own block kernel: its family's
  // DeepGEMM efficiency (KernelEfficiency::eta_compute_deepgemm). Set by op_time where the engine runs
  // DeepGEMM on the GPU (Roofline::deepgemm), and by a table row's `library`.
  bool deepgemm = false;
  // A GQA decode kernel over an fp8 KV cache: on Hopper another kernel (TensorRT-LLM's XQA runs its
  // QGMMA kernels there), with its family's fp8-cache launch costs where they were fitted apart
  // (KernelEfficiency::fixed_fp8_cache, gqa_decode_cost_pair). The absorbed path's latent
  // attention over an fp8 cache likewise: where the GPU runs fp8 generation MLA (Roofline::latent_fp8)
  // it computes at the fp8 peak with its family's fp8 efficiency and fp8-cache launch costs.
  bool fp8_cache = false;
  Tiling tiling;
  BytesF bytes() const { return bytes_read + bytes_written; }
  OpKind kind() const { return kind_of(id); }
  std::string_view name() const { return to_string(id); }
};

// A fixed-capacity op list: costing a path allocates nothing.
struct PathPlan {
  static constexpr std::size_t kMaxOps = 20;
  PathKind kind = PathKind::absorb;
  std::array<Op, kMaxOps> ops{};
  std::size_t count = 0;
  void add(const Op& op) { ops[count++] = op; }
  const Op* begin() const { return ops.data(); }
  const Op* end() const { return ops.data() + count; }
  const Op* find(OpId id) const;  // nullptr when the path has no such op
  Flops flops() const;
  BytesF bytes() const;
  BytesF workspace_bytes() const;  // the largest single-op workspace
};

// Sequences sharing one shape: `count` sequences, each with `query` new tokens after `prefix`.
struct SequenceGroup {
  std::int64_t count = 1;
  double query = 1;
  double prefix = 0;
};

struct Workload {
  std::vector<SequenceGroup> groups = std::vector<SequenceGroup>(1);  // one sequence of one token (not an initializer list: GCC 12 -O3 warns maybe-uninitialized on it)
  bool causal = true;
  DType compute = DType::bf16;       // activation dtype and the peak used
  KvDtype kv = KvDtype::bf16;
  WeightDtype weights = WeightDtype::bf16;
  // The dtype the absorbed path's W_UK/W_UV folds read, when an engine keeps its own copies
  // (vLLM and SGLang dequantize them to bf16); none: the checkpoint's, as `weights`.
  std::optional<WeightDtype> fold_weights;
  Parallelism par;                   // TP splits query heads; DP attention splits the batch
  double chunk = 4096;               // chunked expand: keys of the batch expanded per chunk
  // Speculative decoding with this many draft tokens: a request with Q <= 1 + spec_tokens after a
  // prefix is a verification step, which engines run as decode.
  std::int64_t spec_tokens = 0;
  std::int64_t kv_splits = 1;        // absorbed decode: split-KV partitions merged by log-sum-exp
  bool projections = false;          // scope: layer (true) or attention core (false)
  // A context (prefill) phase: GQA/MHA attention runs the prefill kernel even where every request
  // brings one token (a one-token prompt in TensorRT-LLM's context phase, a timing table's row).
  bool context_phase = false;
};

// Sequences of a group on one rank: data-parallel attention gives each rank ⌈count / DP⌉.
double sequences_per_rank(const SequenceGroup& g, const Parallelism& par);

// Attention (query, key) pairs of one sequence: causal Q·P + Q·(Q+1)/2, non-causal Q·(P+Q).
double attention_pairs(double query, double prefix, bool causal);

// Pairs when each query sees at most `cap` keys (a sliding window, or DSA's top-k): causal query i
// (0-based) sees min(cap, P + i + 1) keys; non-causal ones min(cap, P + Q).
double capped_pairs(double query, double prefix, double cap, bool causal);

// Batch totals on one rank, the sums the ops' formulas use.
struct BatchTotals {
  double sequences = 0;   // Σ ⌈B / DP⌉
  double new_tokens = 0;  // Σ ⌈B / DP⌉·Q
  double keys = 0;        // Σ ⌈B / DP⌉·(P + Q)
  double pairs = 0;       // Σ ⌈B / DP⌉·pairs(Q, P)
};
BatchTotals batch_totals(const Workload& w);

// Per-layer, per-rank geometry of MLA attention with h_t = h / TP query heads.
struct MlaGeometry {
  double heads = 0;  // h_t
  double r = 0, d_r = 0, d_n = 0, d_v = 0, r_q = 0, hidden = 0;
  double cache_bytes_per_token = 0;    // the latent row in its cache layout
  double rope_cache_bytes_per_token = 0;  // of which the RoPE key (bf16 in FlashMLA's fp8 layout, else the cache dtype)
  double indexer_bytes_per_token = 0;  // DSA indexer row (0 without DSA)
  double index_heads = 0, index_dim = 0, index_topk = 0;
  double act_bytes = 2;     // bytes per activation element
  double weight_bytes = 2;  // bytes per weight element
  double fold_weight_bytes = 2;  // the same for the W_UK/W_UV folds (an engine's bf16 copies)
  WeightDtype weights = WeightDtype::bf16;  // the projections' and kv_b_proj's (fp8 runs them at the fp8 peak)
};
MlaGeometry mla_geometry(const ModelSpec& m, const Workload& w);
// [tokens, in] × [in, out]: the weight read once, activations in and out once; 128 x 128 output tiles.
Op gemm_op(OpId id, double tokens, double in, double out, double weight_b, double act_b);
// A GEMM on weights of dtype `d` runs at the fp8 peak when they are fp8, block-scaled or per-tensor
// (the efficiency each takes differs); other dtypes leave it at the activations' peak.
void set_weight_precision(Op& op, WeightDtype d);
// A grouped GEMM (MoE experts) over `touched` weight matrices of [in, out] with `pairs` rows in all:
// each touched matrix read once, every group's rows padded to 128-row tiles.
Op grouped_gemm_op(OpId id, double pairs, double touched, double in, double out, double weight_b, double act_b);
// The kernels around a GQA/MHA attention kernel that rotate `tokens` new tokens' Q (`heads` per rank)
// and K (`kv_heads`), `head_dim` wide at `act_b` bytes, and write their K and V into the cache,
// `cache_bytes_per_token` per token (gqa_kv_bytes_per_token_per_layer): `kernels` 1 runs both in one
// (rope_kv_append: Q, K and V read, Q written back rotated, K and V stored; TensorRT-LLM's
// invokeQKVPreprocessing), 2 a rotary kernel in place on Q and K (rope) then a cache write reading
// K and V (kv_store), 3 the rotary kernel then a write of K and one of V (kv_store twice, half the
// bytes each), 0 none. A rotation costs ~3 FLOPs per value.
std::vector<Op> gqa_rope_and_cache_write(int kernels, double tokens, double heads, double kv_heads, double head_dim, double act_b,
                                         double cache_bytes_per_token);
// Bytes per weight element read at dtype `d`, the fp8 block scales at the model's own block shape
// (weight_block_size, 128x128 unless the config says otherwise) amortised over the block.
double weight_bytes_per_element(const ModelSpec& m, WeightDtype d);

// FLOPs to up-project one cached token to every head's K_nope and V: 2·r·h_t·(d_n + d_v).
// DeepSeek-V3, TP=1: 33,554,432.
Flops expand_flops_per_token(const MlaGeometry& g);
// FLOPs per (query, key) pair, expanded: 2·h_t·(d_n + d_r + d_v) (QK width d_n + d_r, V width d_v).
Flops expand_flops_per_pair(const MlaGeometry& g);
// FLOPs per pair, absorbed: 2·h_t·(2r + d_r) (QK width r + d_r, V width r).
Flops absorb_flops_per_pair(const MlaGeometry& g);

// The op list of one path for one layer on one rank (summed over the batch).
PathPlan mla_path(const ModelSpec& m, const Workload& w, PathKind kind);
// The same with the geometry already derived (for solvers that cost many steps of one shape).
PathPlan mla_path(const MlaGeometry& g, const Workload& w, PathKind kind);
// A batch divided between two kernels' paths: the groups marked in `absorbed` run `absorbed_kind`
// (absorb, or sparse for DSA), the others `expanded_kind` (expand or chunked); the layer's
// projections, when in scope, are counted once for the whole batch.
PathPlan split_path(const ModelSpec& m, const Workload& w, const std::vector<bool>& absorbed, PathKind absorbed_kind, PathKind expanded_kind);

// Transient bytes per expanded key: its per-head K (d_n + d_r) and V (d_v) in the activation dtype.
double expanded_workspace_bytes_per_key(const MlaGeometry& g);
// The expanded plan whose workspace fits `budget` (none: any): expand when it fits, else chunked
// with the largest chunk that fits; nullopt when not even one key per chunk does.
std::optional<PathPlan> feasible_expanded(const MlaGeometry& g, const Workload& w, std::optional<Bytes> budget);

// Ordinary attention for MHA/GQA/MQA models, one layer kind (window 0 = full attention).
PathPlan standard_path(const ModelSpec& m, const Workload& w, std::int64_t window = 0);

// The paths a model has: absorb, expand, chunked (+ sparse with a DSA indexer) for MLA;
// standard otherwise.
std::vector<PathKind> paths_for(const ModelSpec& m);

}  // namespace mlaplan
