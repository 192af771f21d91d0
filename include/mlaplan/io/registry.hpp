#pragma once
// Bundled models (models/*.json) and GPUs (hardware/*.json), and name resolution:
// a path, or a short name matched case-insensitively, with "did you mean" on a miss.
#include <filesystem>
#include <string>
#include <vector>

#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/model.hpp"

namespace mlaplan {

struct BundledEntry {
  std::string short_name;            // "deepseek-v3", "h200"
  std::string display;               // "deepseek-ai/DeepSeek-V3", "H200 SXM 141GB"
  std::vector<std::string> aliases;  // other accepted names, lower case
  std::filesystem::path path;
};

// The folder that holds models/ and hardware/: $MLAPLAN_DATA_DIR, the source tree, or
// <prefix>/share/mlaplan beside the executable.
std::filesystem::path data_dir();

// The *.json files of a folder, sorted (none when it does not exist).
std::vector<std::filesystem::path> json_files(const std::filesystem::path& dir);

// How messages name a bundled file: "models/deepseek-ai--DeepSeek-V3.json".
std::string shown_path(const std::filesystem::path& bundled);

std::vector<BundledEntry> bundled_models();
std::vector<BundledEntry> bundled_gpus();

// A model argument (name, config file or folder) -> ModelSpec with overrides applied.
ModelSpec load_model(const std::string& arg, const std::vector<std::string>& overrides = {}, const std::string& flag = "--model");
// A GPU argument (name or file) -> HardwareSpec.
HardwareSpec load_gpu(const std::string& arg, const std::string& flag = "--gpu");

}  // namespace mlaplan
