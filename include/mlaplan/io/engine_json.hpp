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

namespace mlaplan {

EngineProfile parse_engine_profile(const nlohmann::json& j, const std::string& where);
EngineProfile load_engine_file(const std::filesystem::path& path, const std::string& shown = {});

// Every bundled profile, by family and then version.
std::vector<EngineProfile> bundled_engines();

// "vllm" (the newest vLLM profile), "vllm@0.7.3" (the newest profile whose `since` is at most 0.7.3),
// or a profile file. Unknown names and versions older than every profile exit 2 naming `flag`.
EngineProfile load_engine(const std::string& arg, const std::string& flag = "--engine");

}  // namespace mlaplan
