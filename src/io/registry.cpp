#include "mlaplan/io/registry.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hardware_json.hpp"
#include "mlaplan/io/hf_config.hpp"

#ifndef MLAPLAN_SOURCE_DIR
#define MLAPLAN_SOURCE_DIR "."
#endif

namespace mlaplan {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}


bool has_data(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p / "models", ec) && fs::is_directory(p / "hardware", ec);
}

// Resolves a name against entries: exact short name or alias, then a unique prefix.
const BundledEntry* find_entry(const std::vector<BundledEntry>& entries, const std::string& arg) {
  const std::string key = lower(arg);
  for (const auto& e : entries) {
    if (e.short_name == key || lower(e.display) == key) return &e;
    if (std::find(e.aliases.begin(), e.aliases.end(), key) != e.aliases.end()) return &e;
  }
  const BundledEntry* hit = nullptr;
  for (const auto& e : entries) {
    if (e.short_name.rfind(key, 0) == 0) {
      if (hit) return nullptr;  // ambiguous prefix
      hit = &e;
    }
  }
  return hit;
}

[[noreturn]] void unknown(const std::string& flag, const char* what, const std::string& arg, const std::vector<BundledEntry>& entries) {
  std::vector<std::string> names;
  for (const auto& e : entries) {
    names.push_back(e.short_name);
    names.insert(names.end(), e.aliases.begin(), e.aliases.end());
  }
  const std::string near = closest_match(lower(arg), names);
  std::string hint = near.empty() ? fmt::format("run 'mlaplan {}s' to list them", what)
                                  : fmt::format("did you mean '{}'?", near);
  fail_flag(flag, arg, fmt::format("no bundled {} or file by that name; {}", what, hint));
}

bool looks_like_path(const std::string& arg) {
  return arg.find('/') != std::string::npos || arg.find(".json") != std::string::npos || arg == "." || arg == "..";
}

}  // namespace

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string shown_path(const fs::path& bundled) {
  return (bundled.parent_path().filename() / bundled.filename()).string();
}

fs::path data_dir() {
  if (const char* env = std::getenv("MLAPLAN_DATA_DIR"); env && *env) return fs::path(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& cand : {exe.parent_path() / ".." / "share" / "mlaplan", exe.parent_path() / "..", exe.parent_path()})
      if (has_data(cand)) return fs::weakly_canonical(cand, ec);
  }
  return fs::path(MLAPLAN_SOURCE_DIR);
}

std::vector<BundledEntry> bundled_models() {
  std::vector<BundledEntry> out;
  for (const fs::path& p : json_files(data_dir() / "models")) {
    const std::string stem = p.stem().string();
    BundledEntry e;
    e.path = p;
    const auto sep = stem.find("--");
    e.display = sep == std::string::npos ? stem : stem.substr(0, sep) + "/" + stem.substr(sep + 2);
    e.short_name = lower(sep == std::string::npos ? stem : stem.substr(sep + 2));
    // "Llama-3.1-8B" is also reached as "meta-llama-3.1-8b", "Qwen2.5-7B-Instruct" as "qwen2.5-7b".
    for (const char* suffix : {"-instruct", "-v0.1"}) {
      const std::string s = suffix;
      if (e.short_name.size() > s.size() && e.short_name.compare(e.short_name.size() - s.size(), s.size(), s) == 0)
        e.aliases.push_back(e.short_name.substr(0, e.short_name.size() - s.size()));
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<BundledEntry> bundled_gpus() {
  std::vector<BundledEntry> out;
  for (const fs::path& p : json_files(data_dir() / "hardware")) {
    const HardwareSpec hw = load_hardware_file(p, shown_path(p));
    BundledEntry e;
    e.path = p;
    e.display = hw.name;
    std::string stem = p.stem().string();
    for (const char* vendor : {"nvidia-", "amd-"})
      if (stem.rfind(vendor, 0) == 0) stem = stem.substr(std::string(vendor).size());
    e.short_name = lower(stem);
    for (const auto& a : hw.aliases)
      if (lower(a) != e.short_name) e.aliases.push_back(lower(a));
    out.push_back(std::move(e));
  }
  return out;
}

ModelSpec load_model(const std::string& arg, const std::vector<std::string>& overrides, const std::string& flag) {
  if (arg.empty()) fail_flag(flag, arg, "expected a bundled model name, a config.json or a folder holding one");
  std::error_code ec;
  const auto entries = bundled_models();
  const bool exists = fs::exists(arg, ec);
  if (exists || (looks_like_path(arg) && !find_entry(entries, arg))) {
    if (!exists) fail(arg, "no such file or folder");
    const fs::path p(arg);
    const std::string name = fs::is_directory(p, ec) ? fs::absolute(p).lexically_normal().filename().string()
                                                    : p.stem().string();
    return load_model_file(p, name.empty() ? arg : name, overrides);
  }
  const BundledEntry* e = find_entry(entries, arg);
  if (!e) unknown(flag, "model", arg, entries);
  return load_model_file(e->path, e->display, overrides, shown_path(e->path));
}

HardwareSpec load_gpu(const std::string& arg, const std::string& flag) {
  if (arg.empty()) fail_flag(flag, arg, "expected a bundled GPU name or a hardware JSON file");
  std::error_code ec;
  if (fs::exists(arg, ec) || looks_like_path(arg)) {
    if (!fs::exists(arg, ec)) fail(arg, "no such file");
    return load_hardware_file(arg);
  }
  const auto entries = bundled_gpus();
  const BundledEntry* e = find_entry(entries, arg);
  if (!e) unknown(flag, "gpu", arg, entries);
  return load_hardware_file(e->path, shown_path(e->path));
}

}  // namespace mlaplan
