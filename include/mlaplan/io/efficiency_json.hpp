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
#include "mlaplan/io/table.hpp"

namespace mlaplan {

EfficiencyProfile parse_efficiency_profile(const nlohmann::json& j, const std::string& where);
nlohmann::ordered_json efficiency_profile_json(const EfficiencyProfile& p);
EfficiencyProfile load_efficiency_file(const std::filesystem::path& path);

// The bundled profiles (data_dir()/hardware/efficiency), sorted by name.
std::vector<EfficiencyProfile> bundled_efficiency();

// The parameter columns of the tables that show a family's fitted parameters, from its fixed cost to
// its block cost, in order: one list for the calibrated families a document's times used
// (documents.cpp) and mlaplan-validate's fit tables (fits.csv), so that a parameter added shows in
// both. `fit_keys`: fits.csv's names (t_fixed_s, t_seq_s, ...), else a profile's (fixed_s,
// per_sequence_s, ...); `l2`: with the L2 terms (a fit's; a document's times stream from DRAM, op_time).
std::vector<Column> efficiency_parameter_columns(bool fit_keys, bool l2);
// ... a family's cells under them; `fixed_scale` multiplies its fixed costs (a document's: what its GPU
// pays, fixed_cost_scale; a fit's own values: 1).
void append_efficiency_parameters(std::vector<Value>& row, const KernelEfficiency& k, bool l2, double fixed_scale);

}  // namespace mlaplan
