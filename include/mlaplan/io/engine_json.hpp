#pragma once
// engines/*.json -> EngineProfile, and `--engine NAME[@VERSION]` resolution.
//
// A profile is {"engine": "vllm"|"sglang"|"trtllm", "name": "...", "since": "0.7.0", "summary": "...",
// "parameters": {key: {"value": number|bool|rows, "source": "..."}}}: every key one the family reads
// (engine_param_specs() in core/engine_memory.hpp), every value with its source; unknown keys are
// refused with "did you mean".
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlaplan/core/engine_memory.hpp"
#include "mlaplan/core/engines.hpp"
#include "mlaplan/core/serving.hpp"

namespace mlaplan {

EngineProfile parse_engine_profile(const nlohmann::json& j, const std::string& where);
EngineProfile load_engine_file(const std::filesystem::path& path, const std::string& shown = {});

// Every bundled profile, by family and then version.
std::vector<EngineProfile> bundled_engines();

// "vllm" (the newest vLLM profile), "vllm@0.7.3" (the newest profile whose `since` is at most 0.7.3),
// or a profile file. Unknown names and versions older than every profile exit 2 naming `flag`.
EngineProfile load_engine(const std::string& arg, const std::string& flag = "--engine");

// engines/dispatch/*.json: how one engine version range chooses between the absorbed and expanded
// kernels. {"engine", "since", "summary",
//  "fold_weights": {"value": "bf16"|"checkpoint", "source"},
//  "chunk_tokens": {"value": N, "source"},            (0: the expanded path is not chunked)
//  "policies": {KEY: {"name", "backends", "rule", "threshold"?, "spec_as_decode", "source"}},
//  "dsa": {"rule", "threshold"?, "source"}}
// KEY is the policy's column name and starts with the engine's name ("vllm_flashmla").
struct DispatchProfile {
  EngineFamily family = EngineFamily::vllm;
  EngineVersion since;
  std::string summary, file;
  std::vector<EnginePolicy> policies;
  std::string label() const;  // "vllm@0.9.0+"
};
DispatchProfile parse_dispatch_profile(const nlohmann::json& j, const std::string& where);
std::vector<DispatchProfile> bundled_dispatch();
// As load_engine: "sglang", "sglang@0.4.3" or a dispatch file.
DispatchProfile load_dispatch(const std::string& arg, const std::string& flag = "--engine");
// The newest dispatch profile of the capacity profile's engine at or below its version; none when
// the engine's MLA serving then had no absorbed path to choose (vLLM before 0.7.2).
std::optional<DispatchProfile> dispatch_for(const EngineProfile& p);
// Why these rules cannot serve the model (a version before DSA asked about a DSA model); empty if they can.
std::string dispatch_problem(const std::vector<EnginePolicy>& policies, const ModelSpec& m);
// The policies judged by default: every backend rule of the newest profile of each engine.
std::vector<EnginePolicy> default_policies();

// What an engine brings to a serving step: its per-step overheads, link efficiencies, MoE imbalance
// and DP-attention rules (capacity profile), and its first backend's dispatch rule (MLA models).
// "none": the fastest attention path, no overhead. Errors name `flag`.
struct StepEngine {
  StepOverheads overheads;
  bool dense_mlp_over_dp = false, moe_over_dp = false;
  std::optional<EnginePolicy> policy;
  std::string label;  // "sglang (SGLang fa3)", "none (fastest attention path, no overhead)"
};
StepEngine load_step_engine(const std::string& arg, const ModelSpec& m, const std::string& flag = "--engine");
// The request's engine parts set from e.
void apply_step_engine(StepRequest& req, const StepEngine& e);

}  // namespace mlaplan
