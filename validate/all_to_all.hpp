#pragma once
// Published timings of expert-parallel all-to-all kernels (validate/published/all-to-all/*.csv)
// against the link model a serving step times them with (core/serving all_to_all_time, with the
// row's engine profile: its link efficiencies and latencies), and the error of every row.
//
// CSV columns (header required, any order; every cell required):
//   id, gpu, engine (a profile: sglang, vllm@0.9.0, ...; none: the links at their peaks), mode
//   (low_latency | normal: DeepEP's two kinds; allreduce: a TP all-reduce, op allreduce, topk and
//   experts 1), op (dispatch | combine | allreduce), nodes, gpus_per_node, tokens (each rank sends;
//   an all-reduce's values per rank are tokens x hidden), hidden, topk, experts, dtype (fp8: one fp32
//   scale per 128 values besides, for an all-reduce 1 byte a value | bf16), measured_us, source
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "mlaplan/io/table.hpp"

namespace mlaplan::validate {

struct AllToAllMeasurement {
  std::string file;
  std::string id, gpu, engine, mode, op, dtype, source;
  std::int64_t nodes = 1, gpus_per_node = 1, tokens = 1, hidden = 1, topk = 1, experts = 1;
  double measured_s = 0;
};

std::vector<AllToAllMeasurement> parse_all_to_all_csv(const std::string& text, const std::string& where);
std::vector<AllToAllMeasurement> read_all_to_all_measurements(const std::filesystem::path& dir_or_file);

struct AllToAllCheck {
  AllToAllMeasurement row;
  double predicted_s = 0;
  double error = 0;  // predicted / measured − 1
};

std::vector<AllToAllCheck> check_all_to_all(const std::vector<AllToAllMeasurement>& rows);
// Summary per (gpu, engine, mode, op) and per node count: rows, median and p90 |error|; with
// `rows`, every row after it.
Document all_to_all_document(const std::vector<AllToAllCheck>& checks, bool rows);

}  // namespace mlaplan::validate
