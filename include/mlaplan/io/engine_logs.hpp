#pragma once
// Public engine logs of KV-cache capacity (validate/published/engine-logs/*.csv), reproduced with each
// log's own settings through the engine profiles, and the error of every row.
//
// CSV columns (header required, any order; empty cell = the engine's default):
//   id, engine (vllm@0.7.3), model, gpu, tp, dp, ep, weight_dtype, kv_dtype, mem_util, max_model_len,
//   max_num_seqs, max_batched_tokens, block_size, enforce_eager (true|false), mtp,
//   logged_kv_tokens, logged_kv_gib, logged_weights_gib, logged_activation_gib, logged_non_torch_gib,
//   kind (logged|derived), source
// A row needs logged_kv_tokens or logged_kv_gib; its error is on tokens when the log gives tokens,
// else on the KV pool's bytes.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/core/engine_memory.hpp"
#include "mlaplan/core/parallelism.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan {

struct EngineLogRow {
  std::string file;  // where it was read, for messages
  std::string id, engine, model, gpu, weight_dtype, kv_dtype, kind, source;
  Parallelism par;
  EngineSettings settings;
  std::optional<std::int64_t> logged_kv_tokens;
  std::optional<double> logged_kv_gib, logged_weights_gib, logged_activation_gib, logged_non_torch_gib;
};

// Every row of every *.csv in `dir` (or of one CSV file), in file and row order.
std::vector<EngineLogRow> read_engine_logs(const std::filesystem::path& dir);
// One CSV text (`where` names it in messages).
std::vector<EngineLogRow> parse_engine_log_csv(const std::string& text, const std::string& where);

struct EngineLogCheck {
  EngineLogRow row;
  std::string profile;  // label of the profile used
  std::int64_t predicted_kv_tokens = 0;
  double predicted_kv_gib = 0, predicted_weights_gib = 0, predicted_activation_gib = 0, predicted_non_torch_gib = 0;
  bool budget_has_activation = true;  // SGLang's rule leaves activations outside its static pool
  std::string metric;   // "tokens" or "kv_bytes"
  double error = 0;     // predicted / logged − 1
  // mlaplan's plain model (no --engine) with the row's utilisation, block size and batched tokens,
  // for comparison: what `capacity` said before engine profiles.
  std::int64_t plain_kv_tokens = 0;
  double plain_kv_gib = 0;
  double plain_error = 0;
};

std::vector<EngineLogCheck> check_engine_logs(const std::vector<EngineLogRow>& rows);
Document engine_logs_document(const std::vector<EngineLogCheck>& checks);

}  // namespace mlaplan
