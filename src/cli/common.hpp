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

void register_list_commands(CLI::App& app);
void register_kv_command(CLI::App& app);
void register_capacity_command(CLI::App& app);

}  // namespace mlaplan::cli
