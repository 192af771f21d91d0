#pragma once
// The KV pool a serving engine allocates, computed the way the engine's own code computes it.
//
// An engine profile (engines/*.json) holds one engine version range's numbers, each with its source;
// the rules that combine them are here, one per engine family:
//   vLLM:     KV = total_torch · gpu_memory_utilization − weights − profiling peak activation
//                  − non-torch memory [− CUDA-graph estimate]; whole blocks of block_size tokens.
//   SGLang:   F0 = free memory before weights load (total_torch − CUDA context and NCCL);
//             KV = F0 · mem_fraction_static − weights (what loads between the two readings);
//             tokens = KV / cell size (rounded down to whole pages).
//   TensorRT-LLM: KV = (total_torch − weights − peak activation − non-torch) · free_gpu_memory_fraction;
//             whole blocks of tokens_per_block.
// Every budget line is reported, and the lines add up to the total the framework sees.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mlaplan/core/capacity.hpp"
#include "mlaplan/core/feasibility.hpp"
#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/core/units.hpp"

namespace mlaplan {

enum class EngineFamily { vllm, sglang, trtllm };
std::string_view to_string(EngineFamily f);
std::optional<EngineFamily> parse_engine_family(std::string_view s);

// "0.7.3" as numbers, compared component-wise ("0.10.0" > "0.9.2").
struct EngineVersion {
  std::vector<std::int64_t> parts;
  std::string text;
  // Missing components are zeros: 0.8 == 0.8.0.
  friend bool operator<(const EngineVersion& a, const EngineVersion& b) {
    const std::size_t n = std::max(a.parts.size(), b.parts.size());
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t x = i < a.parts.size() ? a.parts[i] : 0, y = i < b.parts.size() ? b.parts[i] : 0;
      if (x != y) return x < y;
    }
    return false;
  }
  friend bool operator<=(const EngineVersion& a, const EngineVersion& b) { return !(b < a); }
};
// Digits separated by dots (1 to 4 components); nullopt otherwise.
std::optional<EngineVersion> parse_engine_version(std::string_view s);

enum class ParamKind {
  fraction,  // (0, 1]
  count,     // a non-negative integer
  gib,       // a non-negative number of GiB
  number,    // a non-negative real
  factor,    // a multiplier from 1 to 100
  flag,      // true or false
  table,     // rows of non-negative numbers (tiers), each row as wide as the parameter says
};

// What a profile parameter means; the parser accepts exactly these keys for a family.
struct EngineParamSpec {
  std::string_view key;
  ParamKind kind = ParamKind::number;
  bool vllm = false, sglang = false, trtllm = false;  // which families read it
  std::string_view meaning;
  bool optional = false;  // a profile may leave it out
  int columns = 0;        // for tables: numbers per row
  bool at_least_one = false;  // a count where 0 means nothing sensible (block sizes, batch sizes)
  double most = 0;            // a count's largest value (0: 10^12)
};
const std::vector<EngineParamSpec>& engine_param_specs();
const EngineParamSpec* find_engine_param(std::string_view key);

struct SourcedValue {
  double value = 0;
  std::string source;
  std::vector<std::vector<double>> rows;  // for tables
};

struct EngineProfile {
  EngineFamily family = EngineFamily::vllm;
  std::string name;       // "vLLM"
  EngineVersion since;    // the first version this profile describes; it holds until the next profile's
  std::string summary;    // what distinguishes this version range
  std::string file;       // where it was read from
  std::map<std::string, SourcedValue> params;

  bool has(std::string_view key) const { return params.count(std::string(key)) > 0; }
  // The value of a parameter the family requires (the parser guarantees presence).
  double num(std::string_view key) const;
  bool flag(std::string_view key) const { return num(key) != 0; }
  std::string source(std::string_view key) const;
  // "vllm@0.7.3+" style label: the engine and the first version it covers.
  std::string label() const;
};

// Keys a family reads; the parser refuses a profile that lacks a required one or has any other.
std::vector<std::string_view> engine_params_of(EngineFamily f);
// What is incoherent in a parsed profile beyond single keys (a rule with only some of its keys, tiers
// out of order); empty when nothing is.
std::string engine_profile_problem(const EngineProfile& p);


// The flags that map to the engines' own settings; unset = the profile's default.
struct EngineSettings {
  std::optional<double> mem_util;                 // gpu_memory_utilization / mem_fraction_static / free_gpu_memory_fraction
  std::optional<std::int64_t> max_model_len;      // default: the config's max_position_embeddings
  std::optional<std::int64_t> max_num_seqs;       // vLLM max_num_seqs, TensorRT-LLM max_batch_size
  std::optional<std::int64_t> max_batched_tokens; // vLLM max_num_batched_tokens, SGLang chunked_prefill_size, TRT max_num_tokens
  std::optional<bool> enforce_eager;              // no CUDA graphs
  std::optional<std::int64_t> block_size;         // tokens per KV block / page
  std::optional<std::int64_t> mtp;                // speculative tokens from the MTP module (0 = off)
};

// SGLang's default mem_fraction_static from its reserved-memory rule (server_args.py
// _handle_gpu_memory_settings, PR #10975): GPU memory as nvidia-smi reports it, less what the rule
// reserves for activations, CUDA graphs, the parallel size, DP attention and speculative decoding.
struct SglangFraction {
  double fraction = 0;
  double gpu_mem_mib = 0, reserved_mib = 0;
  std::int64_t chunked_prefill_size = 0, cuda_graph_max_bs = 0;
  std::string explanation;
};
SglangFraction sglang_reserved_fraction(const EngineProfile& p, const HardwareSpec& hw, const ModelSpec& m, const Parallelism& par,
                                        const EngineSettings& s);

// One line of the memory budget of a rank; the lines add up to total_seen.
struct BudgetLine {
  std::string key;    // snake_case, for CSV/JSON
  std::string label;  // for people
  Bytes bytes{0};
  std::string source; // where the rule or the number comes from
};

struct EngineCapacity {
  const EngineProfile* profile = nullptr;
  // Settings as resolved (flag, or the profile's default).
  double mem_util = 0;
  std::string mem_util_source;
  std::int64_t max_model_len = 0, max_num_seqs = 0, max_batched_tokens = 0, block_size = 0;
  bool cuda_graphs = true;
  std::int64_t mtp = 0;                  // MTP layers loaded (0: none)
  Bytes total_seen{0};                   // what torch reports as the GPU's total
  std::vector<BudgetLine> lines;         // sum == total_seen
  Bytes weights{0}, activation{0}, non_torch{0}, cuda_graph{0}, kv_pool{0};
  Bytes kv_bytes_per_token{0};           // per rank, as the engine lays the cache out (padding included)
  std::int64_t blocks = 0;               // KV blocks (pages) the engine allocates
  std::int64_t engine_kv_tokens = 0;     // what the engine logs: blocks · block size (SGLang: max_total_num_tokens)
  double engine_max_concurrency = 0;     // engine_kv_tokens / max_model_len, as vLLM logs it
  std::int64_t sequences_at_context = 0; // whole sequences of `context` tokens (block-rounded)
  std::vector<std::string> notes;        // how settings were resolved
  Verdict verdict;
  bool fits() const { return verdict.ok(); }
};

// Per rank: the profile's rule on the model, GPU, layout and settings. `context` is the sequence
// length for sequences_at_context (0: max_model_len). Weights follow the engine's layout rules (MTP
// only when on; MLA fold copies the version keeps).
EngineCapacity engine_capacity(const ModelSpec& m, const HardwareSpec& hw, const EngineProfile& p, const WeightPlan& weights,
                               const Parallelism& par, KvDtype kv, const EngineSettings& s, std::int64_t context);

// Peak activation of vLLM's / TensorRT-LLM's profiling pass on one rank: the larger of the forward
// pass over `tokens` tokens (dense MLP, fused-MoE workspace) and the sampler over `seqs` rows.
Bytes profiling_activation(const ModelSpec& m, const EngineProfile& p, const Parallelism& par, std::int64_t tokens, std::int64_t seqs);

// The engine's pool in the plain capacity result's terms (reserve = what the engine takes besides
// weights and the pool from the memory it may use), so tables and plots read either the same way.
CapacityResult as_capacity_result(const EngineCapacity& e, const ModelSpec& m, const Parallelism& par, KvDtype kv, std::int64_t context);

// Weight bytes per rank as the engine holds them (see engine_capacity).
Bytes engine_weight_bytes(const ModelSpec& m, const EngineProfile& p, const WeightPlan& plan, const Parallelism& par, bool mtp);

// KV bytes per token per rank in the engine's layout.
Bytes engine_kv_bytes_per_token(const ModelSpec& m, const EngineProfile& p, KvDtype kv, const Parallelism& par, std::int64_t mtp_layers);

}  // namespace mlaplan
