#pragma once
// Hugging Face config.json -> ModelSpec. This is the only code that knows HF key names.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlaplan/core/feasibility.hpp"
#include "mlaplan/core/model.hpp"

namespace mlaplan {

// A JSON value as an error message shows it: compact, invalid UTF-8 replaced, at most 60 characters.
std::string show_json(const nlohmann::json& v);

// Reads and parses a JSON file; InputError naming the file when it cannot.
nlohmann::json load_json_file(const std::filesystem::path& path, const std::string& shown = {});

// Applies one "key=value" override (dotted keys reach nested objects; the value is read as
// JSON when it parses, otherwise as a string) before interpretation. The key must be one the
// config has or one the reader understands: anything else is refused with "did you mean" from
// both (`where` names the config in that message).
void apply_override(nlohmann::json& config, const std::string& assignment, const std::string& where = "the config");

// Interprets a config. `source` names the file in error messages; `name` is the display name.
ModelSpec parse_hf_config(const nlohmann::json& config, const std::string& source, const std::string& name);

// A layout the model cannot run, as the one-line error naming the config key (num_attention_heads,
// num_key_value_heads) or the flag (--ep) at fault.
[[noreturn]] void fail_layout(const ModelSpec& m, const Parallelism& p, const LayoutVerdict& v);

// Loads a model from a config file (or a folder holding config.json) with overrides applied.
// `shown` is how the file is named in messages (default: the path as given).
ModelSpec load_model_file(const std::filesystem::path& path, const std::string& name,
                          const std::vector<std::string>& overrides = {}, const std::string& shown = {});

}  // namespace mlaplan
