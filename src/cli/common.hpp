#pragma once
// Shared flag handling for the subcommands: flags -> specs and workloads, one writer out.
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "mlaplan/core/dtype.hpp"
#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/model.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan::cli {

struct ModelFlags {
  std::string model = "deepseek-v3";
  std::vector<std::string> sets;
  ModelSpec load() const;
};

struct LayoutFlags {
  std::int64_t tp = 1;
  std::int64_t dp = 1;
  std::int64_t ep = 1;
  // Checks the layout against the model: heads divisible by TP, KV heads shardable, EP sane.
  Parallelism resolve(const ModelSpec& m) const;
};

void add_model_flags(CLI::App* app, ModelFlags& f);
void add_layout_flags(CLI::App* app, LayoutFlags& f, bool with_ep);
void add_format_flag(CLI::App* app, std::string& format);

// --kv-dtype against the model (fp8_flashmla is an MLA layout).
KvDtype resolve_kv_dtype(const std::string& s, const ModelSpec& m);
WeightDtype resolve_weight_dtype(const std::string& s);
// A positive integer flag (InputError naming the flag otherwise).
std::int64_t positive(const char* flag, std::int64_t v, std::int64_t max = std::int64_t{1} << 40);

// Writes the whole rendered document to stdout in one piece.
void emit(const Document& doc, const std::string& format);

// Number lists for sweeps: comma-separated items, each a number or a range a:b:xk (geometric,
// 0 first and then from 1 when a is 0), a:b:+k or a:b:k (arithmetic). InputError naming the flag.
std::vector<double> parse_number_list(const char* flag, const std::string& text, double min_value = 0,
                                      std::size_t max_points = 10'000'000);
std::vector<std::int64_t> parse_int_list(const char* flag, const std::string& text);
// "a,b,c" -> {"a", "b", "c"} (empty items kept).
std::vector<std::string> split(const std::string& s, char sep);

// Roofline flags shared by cost and crossover.
struct RooflineFlags {
  std::string gpu = "h200";
  std::string dtype = "bf16";
  double eta_compute = -1;  // < 0: from the hardware file, else 1
  double eta_memory = -1;
  double launch_us = 0;
};
void add_roofline_flags(CLI::App* app, RooflineFlags& f);

struct ResolvedRoofline {
  HardwareSpec hw;
  DType compute = DType::bf16;
  Efficiency eta;
  Roofline rf;
};
ResolvedRoofline resolve_roofline(const RooflineFlags& f);
// Summary fields describing the roofline used (peak, bandwidth, η and where they came from, ridge).
void add_roofline_fields(Document& doc, const ResolvedRoofline& r);

// One step's workload: --batch sequences of --query tokens after --prefix, or a --mix.
struct WorkloadFlags {
  double query = 1;
  double prefix = 8191;
  std::int64_t batch = 1;
  std::string mix;  // "64x1@8192,2x2048@0": count x query @ prefix
  bool non_causal = false;
  std::string kv_dtype = "bf16";
  std::string weight_dtype;  // default: what the config's quantization gives attention weights
  double chunk = 8192;
  Workload resolve(const ModelSpec& m, const Parallelism& par, DType compute) const;
};
void add_workload_flags(CLI::App* app, WorkloadFlags& f);
std::vector<SequenceGroup> parse_mix(const std::string& text);
std::string describe(const Workload& w);
// The weight dtype attention projections are read in, from the config's quantization.
WeightDtype attention_weight_dtype(const ModelSpec& m);

void register_list_commands(CLI::App& app);
void register_kv_command(CLI::App& app);
void register_capacity_command(CLI::App& app);
void register_cost_command(CLI::App& app);
void register_report_command(CLI::App& app);
void register_validate_command(CLI::App& app);

// Thrown by a subcommand that ends with a specific exit code (report --check: 1 on drift).
struct ExitCode {
  int code;
  explicit ExitCode(int c) : code(c) {}
};
void register_crossover_command(CLI::App& app);

}  // namespace mlaplan::cli
