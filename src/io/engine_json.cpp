#include "mlaplan/io/engine_json.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hf_config.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string required_string(const json& j, const std::string& where, const char* key) {
  if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
    fail_key(where, key, j.contains(key) ? show_json(j[key]) : "(absent)", "expected a non-empty string");
  return j[key].get<std::string>();
}

double param_value(const json& v, const EngineParamSpec& spec, const std::string& where, const std::string& key) {
  if (spec.kind == ParamKind::table) fail_key(where, key, show_json(v), "expected rows");  // handled by param_rows
  if (spec.kind == ParamKind::flag) {
    if (!v.is_boolean()) fail_key(where, key, show_json(v), "expected true or false");
    return v.get<bool>() ? 1.0 : 0.0;
  }
  if (!v.is_number() || !std::isfinite(v.get<double>())) fail_key(where, key, show_json(v), "expected a number");
  const double x = v.get<double>();
  switch (spec.kind) {
    case ParamKind::fraction:
      if (!(x > 0 && x <= 1)) fail_key(where, key, show_json(v), "expected a fraction in (0, 1]");
      break;
    case ParamKind::count:
      if (spec.at_least_one && (x < 1 || x > 1e12 || std::floor(x) != x)) fail_key(where, key, show_json(v), "expected a whole number from 1 to 10^12");
      if (x < 0 || x > 1e12 || std::floor(x) != x) fail_key(where, key, show_json(v), "expected a whole number from 0 to 10^12");
      break;
    case ParamKind::gib:
      if (x < 0 || x > 1e6) fail_key(where, key, show_json(v), "expected GiB from 0 to 10^6");
      break;
    case ParamKind::number:
      if (x < 0 || x > 1e9) fail_key(where, key, show_json(v), "expected a number from 0 to 10^9");
      break;
    case ParamKind::flag:
    case ParamKind::table: break;
  }
  return x;
}

std::vector<std::vector<double>> param_rows(const json& v, const EngineParamSpec& spec, const std::string& where, const std::string& key) {
  if (!v.is_array() || v.empty() || v.size() > 64)
    fail_key(where, key, show_json(v), fmt::format("expected 1 to 64 rows of {} numbers", spec.columns));
  std::vector<std::vector<double>> rows;
  for (const json& row : v) {
    if (!row.is_array() || row.size() != static_cast<std::size_t>(spec.columns))
      fail_key(where, key, show_json(row), fmt::format("expected a row of {} numbers", spec.columns));
    std::vector<double> r;
    for (const json& x : row) {
      if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 0 || x.get<double>() > 1e9)
        fail_key(where, key, show_json(row), "expected numbers from 0 to 10^9");
      r.push_back(x.get<double>());
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace

EngineProfile parse_engine_profile(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "expected a JSON object");
  for (const auto& [k, v] : j.items())
    if (k != "engine" && k != "name" && k != "since" && k != "summary" && k != "parameters")
      fail_key(where, k, show_json(v), "unknown key (engine, name, since, summary, parameters)");
  EngineProfile p;
  p.file = where;
  const std::string family = required_string(j, where, "engine");
  const auto f = parse_engine_family(family);
  if (!f) fail_key(where, "engine", show_json(j["engine"]), "expected vllm, sglang or trtllm");
  p.family = *f;
  p.name = required_string(j, where, "name");
  const auto since = parse_engine_version(required_string(j, where, "since"));
  if (!since) fail_key(where, "since", show_json(j["since"]), "expected a version such as 0.7.3");
  p.since = *since;
  p.summary = required_string(j, where, "summary");
  if (!j.contains("parameters") || !j["parameters"].is_object())
    fail_key(where, "parameters", j.contains("parameters") ? show_json(j["parameters"]) : "(absent)", "expected an object of key -> {value, source}");
  const std::vector<std::string_view> wanted = engine_params_of(p.family);
  std::vector<std::string> names(wanted.begin(), wanted.end());
  for (const auto& [key, entry] : j["parameters"].items()) {
    const std::string full = "parameters." + key;
    const EngineParamSpec* spec = find_engine_param(key);
    if (!spec || std::find(wanted.begin(), wanted.end(), key) == wanted.end()) {
      const std::string near = closest_match(key, names);
      fail_key(where, full, show_json(entry),
               fmt::format("not a {} parameter{}", family, near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
    }
    if (!entry.is_object() || !entry.contains("value"))
      fail_key(where, full, show_json(entry), "expected an object {\"value\": ..., \"source\": \"...\"}");
    for (const auto& [k, v] : entry.items())
      if (k != "value" && k != "source") fail_key(where, full + "." + k, show_json(v), "unknown key (value, source)");
    if (!entry.contains("source") || !entry["source"].is_string() || entry["source"].get<std::string>().empty())
      fail_key(where, full + ".source", entry.contains("source") ? show_json(entry["source"]) : "(absent)", "every engine number needs a source");
    SourcedValue sv;
    sv.source = entry["source"].get<std::string>();
    if (spec->kind == ParamKind::table) sv.rows = param_rows(entry["value"], *spec, where, full + ".value");
    else sv.value = param_value(entry["value"], *spec, where, full + ".value");
    p.params[key] = std::move(sv);
  }
  for (std::string_view k : wanted)
    if (!p.has(k) && !find_engine_param(k)->optional) fail_key(where, "parameters." + std::string(k), "(absent)", fmt::format("required for {}", family));
  if (const std::string problem = engine_profile_problem(p); !problem.empty()) fail(where, problem);
  return p;
}

EngineProfile load_engine_file(const fs::path& path, const std::string& shown) {
  const std::string where = shown.empty() ? path.string() : shown;
  return parse_engine_profile(load_json_file(path, where), where);
}

std::vector<EngineProfile> bundled_engines() {
  std::vector<EngineProfile> out;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(data_dir() / "engines", ec))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  for (const fs::path& f : files) out.push_back(load_engine_file(f, shown_path(f)));
  std::sort(out.begin(), out.end(), [](const EngineProfile& a, const EngineProfile& b) {
    return a.family != b.family ? a.family < b.family : a.since < b.since;
  });
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i].family == out[i - 1].family && !(out[i - 1].since < out[i].since))
      fail_key(out[i].file, "since", out[i].since.text, fmt::format("{} also starts at this version; a version needs one profile", out[i - 1].file));
  return out;
}

EngineProfile load_engine(const std::string& arg, const std::string& flag) {
  std::error_code ec;
  if (arg.find(".json") != std::string::npos || arg.find('/') != std::string::npos) {
    if (!fs::exists(arg, ec)) fail(arg, "no such file");
    return load_engine_file(arg);
  }
  std::string name = arg, version;
  if (const auto at = arg.find('@'); at != std::string::npos) {
    name = arg.substr(0, at);
    version = arg.substr(at + 1);
  }
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "tensorrt-llm" || name == "trt-llm") name = "trtllm";
  const auto family = parse_engine_family(name);
  if (!family) {
    const std::string near = closest_match(name, {"vllm", "sglang", "trtllm"});
    fail_flag(flag, arg, fmt::format("expected vllm, sglang or trtllm, optionally @VERSION{}", near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
  }
  std::vector<EngineProfile> all = bundled_engines();
  std::vector<EngineProfile> mine;
  for (EngineProfile& p : all)
    if (p.family == *family) mine.push_back(std::move(p));
  if (mine.empty()) fail_flag(flag, arg, fmt::format("no bundled {} profile in {}", name, (data_dir() / "engines").string()));
  if (arg.find('@') != std::string::npos && version.empty()) fail_flag(flag, arg, "expected a version such as 0.7.3 after '@'");
  if (version.empty()) return mine.back();
  const auto v = parse_engine_version(version);
  if (!v) fail_flag(flag, arg, "expected a version such as 0.7.3 after '@'");
  const EngineProfile* best = nullptr;
  for (const EngineProfile& p : mine)
    if (p.since <= *v) best = &p;
  if (!best) fail_flag(flag, arg, fmt::format("older than every bundled {} profile (the oldest describes {} and later)", name, mine.front().since.text));
  return *best;
}

}  // namespace mlaplan
