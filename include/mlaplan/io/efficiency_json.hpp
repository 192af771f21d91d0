#pragma once
// Kernel-efficiency profiles as data (hardware/efficiency/*.json): written by
// `mlaplan-validate --transfer ROOT --write-profiles DIR`, every one naming the measurement tables it
// was fitted on with their sources and licences. Read strictly: an unknown key, a missing source or
// a parameter out of range is one line naming the file, key and value.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlaplan/core/efficiency.hpp"
#include "mlaplan/core/hardware.hpp"

namespace mlaplan {

EfficiencyProfile parse_efficiency_profile(const nlohmann::json& j, const std::string& where);
nlohmann::ordered_json efficiency_profile_json(const EfficiencyProfile& p);
EfficiencyProfile load_efficiency_file(const std::filesystem::path& path);

// The bundled profiles (data_dir()/hardware/efficiency), sorted by name.
std::vector<EfficiencyProfile> bundled_efficiency();

}  // namespace mlaplan
