#pragma once
// quantization_config -> the weight storage of a ModelSpec (io-internal: hf_config calls it).
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mlaplan/core/model.hpp"

namespace mlaplan {

// True when the config reader reads `key` (dotted for nested keys; a config group's name is `*`).
bool reads_config_key(std::string_view key);

// An integer (a JSON integer, or a float with an integral value) within [lo, hi]; null means
// absent. Refusals name the file, the key and the value.
std::int64_t config_integer(const nlohmann::json* v, std::string_view source, std::string_view key, std::int64_t lo, std::int64_t hi);

// Interprets `quantization_config` (an object): fp8 blocks, mxfp4, AWQ, GPTQ and compressed-tensors
// int4/int8/fp8. What the checkpoint stores that mlaplan does not model is a warning on
// m.warnings; a value that makes no sense is refused.
void read_quantization_config(const nlohmann::json& q, const std::string& source, ModelSpec& m);

}  // namespace mlaplan
