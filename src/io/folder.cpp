#include "mlaplan/io/folder.hpp"

#include <fstream>
#include <unistd.h>

#include <fmt/format.h>

#include "mlaplan/io/error.hpp"

namespace mlaplan {

namespace fs = std::filesystem;

fs::path check_output_folder(const fs::path& dir, std::string_view flag) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) fail_flag(std::string(flag), dir.string(), "exists and is not a folder");
  fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) fail_flag(std::string(flag), dir.string(), "its parent folder does not exist");
  return parent;
}

// Writes every file into a fresh sibling folder, then swaps it into place: a failed run leaves
// no half-written folder.
void write_folder(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& files, std::string_view flag) {
  std::error_code ec;
  const fs::path parent = check_output_folder(dir, flag);
  const std::string stem = dir.filename().string();
  const fs::path tmp = parent / fmt::format(".{}.tmp-{}", stem, getpid());
  const fs::path old = parent / fmt::format(".{}.old-{}", stem, getpid());
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec)) fail_flag(std::string(flag), dir.string(), "cannot create a folder beside it");
  try {
    for (const auto& [name, text] : files) {
      std::ofstream out(tmp / name, std::ios::binary);
      out << text;
      out.close();
      if (!out) fail_flag(std::string(flag), dir.string(), fmt::format("cannot write {}", name));
    }
    if (fs::exists(dir, ec)) fs::rename(dir, old);
    fs::rename(tmp, dir);
  } catch (...) {
    fs::remove_all(tmp, ec);
    if (!fs::exists(dir, ec) && fs::exists(old, ec)) fs::rename(old, dir, ec);
    throw;
  }
  fs::remove_all(old, ec);
}

}  // namespace mlaplan
