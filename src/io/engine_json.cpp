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

// The header keys every engine file has: the engine's family and the first version it describes.
EngineFamily family_of(const json& j, const std::string& where) {
  const auto f = parse_engine_family(required_string(j, where, "engine"));
  if (!f) fail_key(where, "engine", show_json(j["engine"]), "expected vllm, sglang or trtllm");
  return *f;
}

EngineVersion since_of(const json& j, const std::string& where) {
  const auto since = parse_engine_version(required_string(j, where, "since"));
  if (!since) fail_key(where, "since", show_json(j["since"]), "expected a version such as 0.7.3");
  return *since;
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
    {
      const double lo = spec.at_least_one ? 1 : 0, hi = spec.most > 0 ? spec.most : 1e12;
      if (x < lo || x > hi || std::floor(x) != x)
        fail_key(where, key, show_json(v), fmt::format("expected a whole number from {} to {}", lo, spec.most > 0 ? fmt::format("{}", spec.most) : "10^12"));
      break;
    }
    case ParamKind::gib:
      if (x < 0 || x > 1e6) fail_key(where, key, show_json(v), "expected GiB from 0 to 10^6");
      break;
    case ParamKind::number:
      if (x < 0 || x > 1e9) fail_key(where, key, show_json(v), "expected a number from 0 to 10^9");
      break;
    case ParamKind::factor:
      if (x < 1 || x > 100) fail_key(where, key, show_json(v), "expected a factor from 1 to 100");
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
  p.family = family_of(j, where);
  const std::string family(to_string(p.family));
  p.name = required_string(j, where, "name");
  p.since = since_of(j, where);
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

namespace {

struct EngineArg {
  EngineFamily family;
  std::string name, version;
  bool has_at = false;
};

EngineArg parse_engine_arg(const std::string& arg, const std::string& flag) {
  EngineArg a;
  a.name = arg;
  if (const auto at = arg.find('@'); at != std::string::npos) {
    a.name = arg.substr(0, at);
    a.version = arg.substr(at + 1);
    a.has_at = true;
  }
  std::transform(a.name.begin(), a.name.end(), a.name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (a.name == "tensorrt-llm" || a.name == "trt-llm") a.name = "trtllm";
  const auto family = parse_engine_family(a.name);
  if (!family) {
    const std::string near = closest_match(a.name, {"vllm", "sglang", "trtllm"});
    fail_flag(flag, arg, fmt::format("expected vllm, sglang or trtllm, optionally @VERSION{}", near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
  }
  a.family = *family;
  if (a.has_at && a.version.empty()) fail_flag(flag, arg, "expected a version such as 0.7.3 after '@'");
  return a;
}

// The newest profile of the family whose `since` is at most `version` (empty: the newest); `all` is
// sorted by family and version. Null when every profile of the family is newer.
template <class Profile>
const Profile* pick(const std::vector<Profile>& all, EngineFamily family, const std::optional<EngineVersion>& version) {
  const Profile* best = nullptr;
  for (const Profile& p : all)
    if (p.family == family && (!version || p.since <= *version)) best = &p;
  return best;
}

template <class Profile>
Profile pick_or_fail(const std::vector<Profile>& all, const std::string& arg, const std::string& flag, const char* what) {
  const EngineArg a = parse_engine_arg(arg, flag);
  std::optional<EngineVersion> v;
  if (!a.version.empty()) {
    v = parse_engine_version(a.version);
    if (!v) fail_flag(flag, arg, "expected a version such as 0.7.3 after '@'");
  }
  const Profile* oldest = nullptr;
  for (const Profile& p : all)
    if (p.family == a.family && !oldest) oldest = &p;
  if (!oldest) fail_flag(flag, arg, fmt::format("no bundled {} {} profile in {}", a.name, what, (data_dir() / "engines").string()));
  const Profile* best = pick(all, a.family, v);
  if (!best) fail_flag(flag, arg, fmt::format("older than every bundled {} {} profile (the oldest describes {} and later)", a.name, what, oldest->since.text));
  return *best;
}

bool is_file_arg(const std::string& arg) { return arg.find(".json") != std::string::npos || arg.find('/') != std::string::npos; }

template <class Profile, class Load>
std::vector<Profile> bundled(const fs::path& dir, Load load) {
  std::vector<Profile> out;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  for (const fs::path& f : files) out.push_back(load(f));
  std::sort(out.begin(), out.end(), [](const Profile& a, const Profile& b) { return a.family != b.family ? a.family < b.family : a.since < b.since; });
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i].family == out[i - 1].family && !(out[i - 1].since < out[i].since))
      fail_key(out[i].file, "since", out[i].since.text, fmt::format("{} also starts at this version; a version needs one profile", out[i - 1].file));
  return out;
}

}  // namespace

std::vector<EngineProfile> bundled_engines() {
  return bundled<EngineProfile>(data_dir() / "engines", [](const fs::path& f) { return load_engine_file(f, shown_path(f)); });
}

EngineProfile load_engine(const std::string& arg, const std::string& flag) {
  std::error_code ec;
  if (is_file_arg(arg)) {
    if (!fs::exists(arg, ec)) fail(arg, "no such file");
    return load_engine_file(arg);
  }
  return pick_or_fail(bundled_engines(), arg, flag, "capacity");
}

std::string DispatchProfile::label() const { return fmt::format("{}@{}+", to_string(family), since.text); }

namespace {

const json& member(const json& j, const std::string& where, const std::string& key, const std::vector<std::string>& allowed) {
  if (!j.is_object()) fail_key(where, key, show_json(j), "expected an object");
  for (const auto& [k, v] : j.items())
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      const std::string near = closest_match(k, allowed);
      fail_key(where, key.empty() ? k : key + "." + k, show_json(v), fmt::format("unknown key{}", near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
    }
  return j;
}

std::string source_of(const json& j, const std::string& where, const std::string& key) {
  if (!j.contains("source") || !j["source"].is_string() || j["source"].get<std::string>().empty())
    fail_key(where, key + ".source", j.contains("source") ? show_json(j["source"]) : "(absent)", "every dispatch rule needs a source");
  return j["source"].get<std::string>();
}

double tokens_value(const json& j, const std::string& where, const std::string& key, bool positive) {
  if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() < (positive ? 1 : 0) || j.get<double>() > 1e12 ||
      std::floor(j.get<double>()) != j.get<double>())
    fail_key(where, key, show_json(j), positive ? "expected a whole number of tokens from 1 to 10^12" : "expected a whole number of tokens from 0 to 10^12");
  return j.get<double>();
}

}  // namespace

DispatchProfile parse_dispatch_profile(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "expected a JSON object");
  member(j, where, "", {"engine", "since", "summary", "fold_weights", "chunk_tokens", "policies", "dsa"});
  DispatchProfile d;
  d.file = where;
  d.family = family_of(j, where);
  const std::string family(to_string(d.family));
  d.since = since_of(j, where);
  d.summary = required_string(j, where, "summary");
  for (const char* k : {"fold_weights", "chunk_tokens", "policies", "dsa"})
    if (!j.contains(k)) fail_key(where, k, "(absent)", "required in a dispatch profile");

  const json& fold = member(j["fold_weights"], where, "fold_weights", {"value", "source"});
  const std::string fold_source = source_of(fold, where, "fold_weights");
  std::optional<WeightDtype> fold_dtype;
  if (!fold.contains("value") || !fold["value"].is_string()) fail_key(where, "fold_weights.value", fold.contains("value") ? show_json(fold["value"]) : "(absent)", "expected a weight dtype or \"checkpoint\"");
  if (const std::string v = fold["value"].get<std::string>(); v != "checkpoint") {
    fold_dtype = parse_weight_dtype(v);
    if (!fold_dtype) fail_key(where, "fold_weights.value", show_json(fold["value"]), "expected bf16, fp16, fp32, fp8, fp8_tensor, mxfp4, int4, int8 or \"checkpoint\"");
  }
  const json& chunk = member(j["chunk_tokens"], where, "chunk_tokens", {"value", "source"});
  const std::string chunk_source = source_of(chunk, where, "chunk_tokens");
  if (!chunk.contains("value")) fail_key(where, "chunk_tokens.value", "(absent)", "expected a whole number of tokens");
  const double chunk_tokens = tokens_value(chunk["value"], where, "chunk_tokens.value", false);

  const json& dsa = member(j["dsa"], where, "dsa", {"rule", "threshold", "source"});
  const std::string dsa_source = source_of(dsa, where, "dsa");
  if (!dsa.contains("rule") || !dsa["rule"].is_string() || !parse_dsa_rule(dsa["rule"].get<std::string>()))
    fail_key(where, "dsa.rule", dsa.contains("rule") ? show_json(dsa["rule"]) : "(absent)", "expected sparse, dense_short, packed_tokens, max_kv or unsupported");
  const DsaRule dsa_rule = *parse_dsa_rule(dsa["rule"].get<std::string>());
  const bool dsa_needs = dsa_rule != DsaRule::sparse && dsa_rule != DsaRule::unsupported;
  if (dsa_needs != dsa.contains("threshold"))
    fail_key(where, "dsa.threshold", dsa.contains("threshold") ? show_json(dsa["threshold"]) : "(absent)",
             dsa_needs ? fmt::format("required by rule {}", to_string(dsa_rule)) : fmt::format("rule {} has no threshold", to_string(dsa_rule)));
  const double dsa_threshold = dsa_needs ? tokens_value(dsa["threshold"], where, "dsa.threshold", false) : 0;

  const json& policies = j["policies"];
  if (!policies.is_object() || policies.empty()) fail_key(where, "policies", show_json(policies), "expected an object of KEY -> rule");
  for (const auto& [key, p] : policies.items()) {
    const std::string at = "policies." + key;
    if (key.rfind(family, 0) != 0 || key.size() > 40 ||
        !std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::islower(c) || std::isdigit(c) || c == '_'; }))
      fail_key(where, at, show_json(p), fmt::format("a policy key is snake_case and starts with '{}'", family));
    member(p, where, at, {"name", "backends", "rule", "threshold", "spec_as_decode", "source"});
    EnginePolicy e;
    e.key = key;
    for (const char* k : {"name", "backends"})
      if (!p.contains(k) || !p[k].is_string() || p[k].get<std::string>().empty())
        fail_key(where, at + "." + k, p.contains(k) ? show_json(p[k]) : "(absent)", "expected a non-empty string");
    e.name = p["name"].get<std::string>();
    e.backends = p["backends"].get<std::string>();
    e.engine = d.label();
    if (!p.contains("rule") || !p["rule"].is_string() || !parse_extend_rule(p["rule"].get<std::string>()))
      fail_key(where, at + ".rule", p.contains("rule") ? show_json(p["rule"]) : "(absent)", "expected query_split, prefix_sum, no_prefix or every_extend");
    e.rule = *parse_extend_rule(p["rule"].get<std::string>());
    const bool needs = e.rule == ExtendRule::query_split || e.rule == ExtendRule::prefix_sum;
    if (needs != p.contains("threshold"))
      fail_key(where, at + ".threshold", p.contains("threshold") ? show_json(p["threshold"]) : "(absent)",
               needs ? fmt::format("required by rule {}", to_string(e.rule)) : fmt::format("rule {} has no threshold", to_string(e.rule)));
    if (needs) e.threshold = tokens_value(p["threshold"], where, at + ".threshold", true);
    if (!p.contains("spec_as_decode") || !p["spec_as_decode"].is_boolean())
      fail_key(where, at + ".spec_as_decode", p.contains("spec_as_decode") ? show_json(p["spec_as_decode"]) : "(absent)", "expected true or false");
    e.spec_as_decode = p["spec_as_decode"].get<bool>();
    e.dsa = dsa_rule;
    e.dsa_threshold = dsa_threshold;
    e.chunk_tokens = chunk_tokens;
    e.fold_weights = fold_dtype;
    e.source = fmt::format("{}; fold: {}; chunk: {}; DSA: {}", source_of(p, where, at), fold_source, chunk_source, dsa_source);
    d.policies.push_back(std::move(e));
  }
  return d;
}

std::vector<DispatchProfile> bundled_dispatch() {
  return bundled<DispatchProfile>(data_dir() / "engines" / "dispatch",
                                  [](const fs::path& f) { return parse_dispatch_profile(load_json_file(f, shown_path(f)), shown_path(f)); });
}

DispatchProfile load_dispatch(const std::string& arg, const std::string& flag) {
  std::error_code ec;
  if (is_file_arg(arg)) {
    if (!fs::exists(arg, ec)) fail(arg, "no such file");
    return parse_dispatch_profile(load_json_file(arg, arg), arg);
  }
  return pick_or_fail(bundled_dispatch(), arg, flag, "dispatch");
}

std::optional<DispatchProfile> dispatch_for(const EngineProfile& p) {
  const std::vector<DispatchProfile> all = bundled_dispatch();
  if (const DispatchProfile* d = pick(all, p.family, p.since)) return *d;
  return std::nullopt;
}

std::string dispatch_problem(const std::vector<EnginePolicy>& policies, const ModelSpec& m) {
  if (!m.indexer) return {};
  for (const EnginePolicy& e : policies)
    if (e.dsa == DsaRule::unsupported)
      return fmt::format("{} predates DeepSeek-V3.2's sparse attention and cannot serve {} (dsa.rule unsupported)", e.engine, m.name);
  return {};
}

std::vector<EnginePolicy> default_policies() {
  const std::vector<DispatchProfile> all = bundled_dispatch();
  std::vector<EnginePolicy> out;
  for (EngineFamily f : {EngineFamily::vllm, EngineFamily::sglang, EngineFamily::trtllm})
    if (const DispatchProfile* d = pick(all, f, std::nullopt)) out.insert(out.end(), d->policies.begin(), d->policies.end());
  return out;
}

StepEngine load_step_engine(const std::string& arg, const ModelSpec& m, const std::string& flag) {
  StepEngine e;
  if (arg == "none") {
    e.overheads.source = flag.rfind("--", 0) == 0 ? "none (" + flag + " none)" : "none";
    e.label = "none (fastest attention path, no overhead)";
    return e;
  }
  const EngineProfile prof = load_engine(arg, flag);
  e.overheads = step_overheads(prof);
  e.dense_mlp_over_dp = prof.has("dense_mlp_over_dp") && prof.flag("dense_mlp_over_dp");
  e.moe_over_dp = prof.has("moe_over_dp") && prof.flag("moe_over_dp");
  e.label = arg;
  if (m.is_mla()) {
    const std::vector<EnginePolicy> policies = load_dispatch(arg, flag).policies;
    if (const std::string problem = dispatch_problem(policies, m); !problem.empty()) fail_flag(flag, arg, problem);
    if (!policies.empty()) {
      e.policy = policies.front();
      e.label = arg + " (" + policies.front().name + ")";
    }
  }
  return e;
}

void apply_step_engine(StepRequest& req, const StepEngine& e) {
  use_overheads(req, e.overheads);
  req.dense_mlp_over_dp = e.dense_mlp_over_dp;
  req.moe_over_dp = e.moe_over_dp;
  req.policy = e.policy;
}

}  // namespace mlaplan
