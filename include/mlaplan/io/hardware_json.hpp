#pragma once
// hardware/*.json -> HardwareSpec. The only code that converts hardware units: keys carry their
// unit (memory_capacity_gib, memory_bandwidth_tb_per_s, dense_peak_tflops, ...) and every number
// is an object {"value": ..., "source": "...", "unconfirmed": true|false}.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "mlaplan/core/hardware.hpp"

namespace mlaplan {

HardwareSpec parse_hardware(const nlohmann::json& j, const std::string& source);
// The inverse of parse_hardware: a spec as a hardware file (memory in bytes, bandwidth in GB/s, peaks
// in TFLOP/s), each number with the source recorded for its field. The only code that writes one.
nlohmann::ordered_json hardware_to_json(const HardwareSpec& hw);

HardwareSpec load_hardware_file(const std::filesystem::path& path, const std::string& shown = {});

}  // namespace mlaplan
