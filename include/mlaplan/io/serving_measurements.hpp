#pragma once
// Public whole-system measurements (validate/published/serving/*.csv) reproduced with each row's own
// settings through the serving step (core/serving) or the plan, and the error of every row.
//
// CSV columns (header required, any order; empty cell = the default):
//   id, kind (step | plan), role (total | part), model, gpu, engine (vllm | sglang | trtllm[@V] |
//   none), phase (prefill | decode), tp, dp, ep, nodes, batch (step: sequences in the deployment;
//   plan: the largest batch per replica tried), context (step: decode keys per sequence, prefill
//   prompt tokens), isl, osl (plan), mtp, mtp_accept, tbo (true | false), comm_sms (empty: the engine's),
//   moe_imbalance (empty: the engine's), weight_dtype, kv_dtype, metric, measured, confidence (H | M | L), source;
//   optional: ll_sm_us_per_token (with tbo, decode: the low-latency kernels' SM time per token a rank
//   dispatches and MoE layer, microseconds; empty or absent: the engine's), links_from (an engine
//   whose link efficiencies time the communication), eager_launch_us (the host's time per kernel
//   launch when the engine runs without CUDA graphs, microseconds; empty or absent: 0)
// Metrics: step_time_s, tpot_s, ttft_s, tokens_per_s_per_gpu, moe_layer_s (one MoE layer after
// overlap), layer_<category>_s (attention, gemm, moe, dispatch, combine, other: one MoE layer's
// kernels of that category, before overlap); plan: best_tokens_per_s_per_gpu.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mlaplan/core/parallelism.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan {

struct ServingMeasurement {
  std::string file;
  std::string id, kind, role, model, gpu, engine, phase, weight_dtype, kv_dtype, metric, confidence, source;
  Parallelism par;
  bool ep_given = false;  // the row names its EP (a plan holds it; else a plan searches it)
  std::int64_t nodes = 1, batch = 1, context = 0, isl = 0, osl = 0, mtp = 0;
  double mtp_accept = 0;
  bool tbo = false;
  std::optional<double> moe_imbalance;
  std::optional<std::int64_t> comm_sms;
  std::string links_from;  // optional column: the engine profile whose link efficiencies time the communication (empty: the row's engine's)
  std::optional<double> ll_sm_us_per_token;  // optional column: the low-latency kernels' SM time per token and layer
  std::optional<double> eager_launch_us;     // optional column: host time per kernel launch without CUDA graphs
  double measured = 0;
};

std::vector<ServingMeasurement> parse_serving_csv(const std::string& text, const std::string& where);
std::vector<ServingMeasurement> read_serving_measurements(const std::filesystem::path& dir);

struct ServingCheck {
  ServingMeasurement row;
  double predicted = 0;
  double error = 0;      // predicted / measured − 1
  std::string command;   // the mlaplan command that prints the prediction
};

std::vector<ServingCheck> check_serving(const std::vector<ServingMeasurement>& rows);
Document serving_document(const std::vector<ServingCheck>& checks);

}  // namespace mlaplan
