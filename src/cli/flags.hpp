#pragma once
// Flags shared by the subcommands and their resolution into specs, layouts and workloads: every
// refusal is one InputError naming the flag (or the config key) and the value.
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app.hpp"
#include "mlaplan/core/engines.hpp"
#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/documents.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan::cli {

struct ModelFlags {
  std::string model = "deepseek-v3";
  std::vector<std::string> sets;
  // The model with its --set overrides; what the reader warns of goes to ctx.warnings.
  ModelSpec load(Context& ctx) const;
};
void add_model_flags(CLI::App* app, ModelFlags& f);

struct LayoutFlags {
  std::int64_t tp = 1;
  std::int64_t dp = 1;
  std::int64_t ep = 1;
  // The layout, checked against the model (core check_layout): an error names the key or flag.
  Parallelism resolve(const ModelSpec& m) const;
};
void add_layout_flags(CLI::App* app, LayoutFlags& f, bool with_ep);

void add_format_flag(CLI::App* app, std::string& format);
// Renders the whole document, then writes it to ctx.out in one piece (nothing partial on error).
void emit(Context& ctx, const Document& doc, const std::string& format);

// Every integer and number flag of `app` and its subcommands refuses what it cannot hold in one
// line naming the flag and the value (instead of CLI11's "Could not convert"); flags that count
// tokens or sequences take sizes as people write them: 4096, 32k, 1M (powers of two), and refuse
// fractions. Ranges are checked where the flags are resolved.
void strict_numbers(CLI::App& app);

// A warning (one line, no prefix) printed on stderr before the output.
void warn(Context& ctx, std::string line);
// A warning when `tokens` (what `flag` = `value` asks for) go beyond max_position_embeddings.
void warn_context(Context& ctx, const ModelSpec& m, const char* flag, const std::string& value, double tokens);

// --kv-dtype against the model (fp8_flashmla is an MLA layout; a warning where FlashMLA does not
// define it for the model's shape).
KvDtype resolve_kv_dtype(Context& ctx, const std::string& s, const ModelSpec& m);
WeightDtype resolve_weight_dtype(const std::string& s);
// A positive integer flag (InputError naming the flag otherwise).
std::int64_t positive(const char* flag, std::int64_t v, std::int64_t max = std::int64_t{1} << 40);

// Roofline flags shared by cost and crossover.
struct RooflineFlags {
  std::string gpu = "h200";
  std::string dtype = "bf16";
  double eta_compute = -1;  // < 0: from the hardware file, else 1
  double eta_memory = -1;
  double launch_us = 0;
  bool sol = false;  // --sol: the speed-of-light bound instead of the calibrated default
  RooflineUsed resolve() const;
};
void add_roofline_flags(CLI::App* app, RooflineFlags& f);

// One step's workload: --batch sequences of --query tokens after --prefix, or a --mix.
struct WorkloadFlags {
  double query = 1;
  double prefix = 8191;
  std::int64_t batch = 1;
  std::string mix;  // "64x1@8192,2x2048@0": count x query @ prefix
  bool non_causal = false;
  std::string kv_dtype = "bf16";
  std::string weight_dtype;  // default: what the config's quantization gives attention weights
  std::string chunk = "8192";    // a list: the chunked path once per value
  std::int64_t spec_tokens = 0;  // speculative decoding's draft tokens per step
  // The workload, with the first --chunk value as its chunk.
  Workload resolve(Context& ctx, const ModelSpec& m, const Parallelism& par, DType compute) const;
  // Every --chunk value: whole numbers of tokens in [1, 1e12].
  std::vector<double> chunks() const;
};
void add_workload_flags(CLI::App* app, WorkloadFlags& f);
std::vector<SequenceGroup> parse_mix(const std::string& text);

// --engine for the dispatch rules: every engine's newest rules (empty), or one engine's at a version.
void add_dispatch_flag(CLI::App* app, std::string& engine);
std::vector<EnginePolicy> resolve_policies(const std::string& engine, const ModelSpec& m);
// --workspace-gib: GiB from 0 to 10^6 as bytes; none when not given (negative).
std::optional<Bytes> resolve_workspace_gib(double gib);
// --spec-tokens: draft tokens from 0 to 64.
std::int64_t resolve_spec_tokens(std::int64_t n);

// Serving flags shared by step and plan: the engine (dispatch rule and overheads), GPUs and nodes,
// MTP, MoE imbalance, two-batch overlap and the EP all-to-all kind.
struct ServingFlags {
  std::string engine = "sglang";
  std::int64_t gpus = 0, nodes = 0;
  std::int64_t mtp = 0;
  double mtp_accept = 0.8;
  double moe_imbalance = 1;
  bool tbo = false;
  std::int64_t comm_sms = 0;
  double ll_sm_us_per_token = 0;
  double eager_launch_us = 0;
  std::string ep_mode = "auto";
  std::string links_from;  // empty: --engine's link efficiencies
  // Everything of a step but its workload's batch and phase (the layout, dtypes left to the caller).
  // layout_searched (plan): the layout-dependent checks (GPUs, nodes, links, EP flags) are the search's.
  StepRequest resolve(const ModelSpec& m, const HardwareSpec& hw, const Parallelism& par, CLI::App* app, bool layout_searched) const;
};
// layout_searched: no --gpus or --nodes (plan derives them per layout).
void add_serving_flags(CLI::App* app, ServingFlags& f, bool layout_searched);

// Thrown by a subcommand that ends with a specific exit code (report --check: 1 on drift).
struct ExitCode {
  int code;
  explicit ExitCode(int c) : code(c) {}
};

void register_list_commands(CLI::App& app, Context& ctx);
void register_kv_command(CLI::App& app, Context& ctx);
void register_capacity_command(CLI::App& app, Context& ctx);
void register_cost_command(CLI::App& app, Context& ctx);
void register_crossover_command(CLI::App& app, Context& ctx);
void register_report_command(CLI::App& app, Context& ctx);
void register_validate_command(CLI::App& app, Context& ctx);
void register_step_command(CLI::App& app, Context& ctx);
void register_plan_command(CLI::App& app, Context& ctx);

}  // namespace mlaplan::cli
