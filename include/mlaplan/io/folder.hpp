#pragma once
// Writing an output folder atomically.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace mlaplan {

// Writes every (name, contents) file into a fresh sibling folder, then swaps it into place of
// `dir` (replacing a folder that is there): a failed run leaves no half-written folder and the
// previous one untouched. InputError naming --out on failure.
void write_folder(const std::filesystem::path& dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace mlaplan
