#pragma once
// Writing an output folder atomically.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mlaplan {

// Writes every (name, contents) file into a fresh sibling folder, then swaps it into place of
// `dir` (replacing a folder that is there): a failed run leaves no half-written folder and the
// previous one untouched. InputError naming `flag` on failure.
void write_folder(const std::filesystem::path& dir, const std::vector<std::pair<std::string, std::string>>& files, std::string_view flag = "--out");
// What write_folder checks before it writes: that `dir` is a folder or absent and its parent a folder
// (returned). A command that computes for minutes calls it first, so a mistyped path fails before the
// work.
std::filesystem::path check_output_folder(const std::filesystem::path& dir, std::string_view flag = "--out");

}  // namespace mlaplan
