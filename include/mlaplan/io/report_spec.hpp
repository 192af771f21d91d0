#pragma once
// The sweep a report covers, as a JSON spec file (`mlaplan report --spec FILE`). Every report
// folder carries its resolved spec.json so that `report --check DIR` can recompute it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlaplan/core/study.hpp"

namespace mlaplan {


struct ReportSpec {
  std::string title = "DeepSeek-V3 on H200";
  std::vector<std::string> models{"deepseek-v3"};
  std::vector<std::string> gpus{"h200"};
  std::vector<Parallelism> layouts{{8, 1, 1}, {8, 1, 8}, {1, 8, 8}};
  std::vector<std::string> kv_dtypes{"bf16", "fp8_flashmla"};
  std::vector<std::int64_t> contexts{4096, 32768, 131072};
  std::string sequence_contexts = "1024:262144:x2";  // the sequences-against-context plot
  std::string prefixes = "0:131072:x2";
  std::vector<std::int64_t> crossover_tps{1, 2, 4, 8};
  std::int64_t batch = 32;            // sequences per step for intensity and the crossover
  std::int64_t decode_context = 32768;
  std::string dtype = "bf16";
  double mem_util = 0.9;
  std::int64_t block_size = 64;
  std::string engine;             // vllm|sglang|trtllm[@VERSION]: capacity as that engine allocates it
  bool mem_util_set = false;      // given in the spec (passed to the engine; else the profile's default)
  bool block_size_set = false;
  std::int64_t max_query = 4096;
  std::vector<std::string> compare_models{"llama-3.1-70b", "qwen2.5-72b", "mixtral-8x7b", "gpt-oss-20b"};
  ReportStep roofline_step;
  // The serving section: a plan for these request lengths and TPOT target within the GPU budget.
  std::int64_t serving_isl = 4096, serving_osl = 1024, serving_max_gpus = 64;
  double serving_tpot_ms = 50;
  double tolerance = 1e-9;                      // relative, for --check
  std::map<std::string, double> column_tolerances;  // per CSV column, relative
};

// Reads a spec; absent keys keep their defaults. InputError naming file, key and value.
ReportSpec parse_report_spec(const nlohmann::json& j, const std::string& source);
nlohmann::ordered_json to_json(const ReportSpec& s);

// The spec's names and lists resolved: models and GPUs loaded, dtypes and number lists parsed.
// InputError naming the spec key (or the file a model or GPU came from).
ReportInputs resolve_report(const ReportSpec& s);

}  // namespace mlaplan
