#include "mlaplan/io/report_spec.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mlaplan/io/efficiency_json.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hf_config.hpp"
#include "mlaplan/io/lists.hpp"
#include "mlaplan/io/registry.hpp"
#include <set>

namespace mlaplan {

using nlohmann::json;

namespace {

struct SpecReader {
  const json& j;
  const std::string& where;

  [[noreturn]] void bad(const std::string& key, const json& v, const std::string& problem) const {
    fail_key(where, key, show_json(v), problem);
  }
  std::int64_t integer(const std::string& key, const json& v, std::int64_t lo, std::int64_t hi) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() != std::floor(v.get<double>()))
      bad(key, v, "expected an integer");
    const double d = v.get<double>();
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) bad(key, v, fmt::format("expected an integer from {} to {}", lo, hi));
    return static_cast<std::int64_t>(d);
  }
  double number(const std::string& key, const json& v, double lo, double hi) const {
    if (!v.is_number() || !std::isfinite(v.get<double>())) bad(key, v, "expected a number");
    const double d = v.get<double>();
    if (d < lo || d > hi) bad(key, v, fmt::format("expected a number from {} to {}", lo, hi));
    return d;
  }
  std::string string(const std::string& key, const json& v) const {
    if (!v.is_string() || v.get<std::string>().empty()) bad(key, v, "expected a non-empty string");
    return v.get<std::string>();
  }
  const json* find(const char* key) const { return j.contains(key) ? &j.at(key) : nullptr; }
  const json& array(const char* key) const {
    const json& v = j.at(key);
    if (!v.is_array() || v.empty()) bad(key, v, "expected a non-empty array");
    return v;
  }
};

}  // namespace

ReportSpec parse_report_spec(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "expected a JSON object");
  static const char* known[] = {"title", "models", "gpus", "layouts", "kv_dtypes", "contexts", "sequence_contexts", "prefixes",
                                "crossover_tps", "batch", "decode_context", "dtype", "mem_util", "block_size", "max_query",
                                "serving_isl", "serving_osl", "serving_max_gpus", "serving_tpot_ms",
                                "compare_models", "roofline_step", "tolerance", "column_tolerances", "engine"};
  for (const auto& [key, value] : j.items()) {
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      fail_key(where, key, show_json(value), "unknown report spec key");
  }
  SpecReader r{j, where};
  ReportSpec s;
  if (auto v = r.find("title")) s.title = r.string("title", *v);
  auto strings = [&](const char* key, std::vector<std::string>& out, bool allow_empty) {
    if (!r.find(key)) return;
    const json& v = j.at(key);
    if (!v.is_array() || (!allow_empty && v.empty())) r.bad(key, v, allow_empty ? "expected an array" : "expected a non-empty array");
    out.clear();
    for (const json& e : v) out.push_back(r.string(key, e));
  };
  auto integers = [&](const char* key, std::vector<std::int64_t>& out, std::int64_t lo, std::int64_t hi) {
    if (!r.find(key)) return;
    out.clear();
    for (const json& e : r.array(key)) out.push_back(r.integer(key, e, lo, hi));
  };
  strings("models", s.models, false);
  strings("gpus", s.gpus, false);
  strings("kv_dtypes", s.kv_dtypes, false);
  strings("compare_models", s.compare_models, true);
  integers("contexts", s.contexts, 1, std::int64_t{1} << 40);
  integers("crossover_tps", s.crossover_tps, 1, 4096);
  if (r.find("layouts")) {
    s.layouts.clear();
    for (const json& e : r.array("layouts")) {
      if (!e.is_object()) r.bad("layouts", e, "expected objects {\"tp\": n, \"dp\": n, \"ep\": n}");
      Parallelism l;
      if (e.contains("tp")) l.tp = r.integer("layouts.tp", e["tp"], 1, 4096);
      if (e.contains("dp")) l.dp = r.integer("layouts.dp", e["dp"], 1, 4096);
      if (e.contains("ep")) l.ep = r.integer("layouts.ep", e["ep"], 1, 4096);
      s.layouts.push_back(l);
    }
  }
  if (auto v = r.find("sequence_contexts")) s.sequence_contexts = r.string("sequence_contexts", *v);
  if (auto v = r.find("prefixes")) s.prefixes = r.string("prefixes", *v);
  if (auto v = r.find("batch")) s.batch = r.integer("batch", *v, 1, 10'000'000);
  if (auto v = r.find("decode_context")) s.decode_context = r.integer("decode_context", *v, 1, std::int64_t{1} << 40);
  if (auto v = r.find("dtype")) s.dtype = r.string("dtype", *v);
  if (auto v = r.find("mem_util")) {
    s.mem_util = r.number("mem_util", *v, 1e-6, 1);
    s.mem_util_set = true;
  }
  if (auto v = r.find("block_size")) {
    s.block_size = r.integer("block_size", *v, 1, 1 << 20);
    s.block_size_set = true;
  }
  if (auto v = r.find("engine")) s.engine = r.string("engine", *v);
  if (auto v = r.find("max_query")) s.max_query = r.integer("max_query", *v, 1, 1 << 16);
  if (auto v = r.find("serving_isl")) s.serving_isl = r.integer("serving_isl", *v, 1, 1 << 24);
  if (auto v = r.find("serving_osl")) s.serving_osl = r.integer("serving_osl", *v, 1, 1 << 24);
  if (auto v = r.find("serving_max_gpus")) s.serving_max_gpus = r.integer("serving_max_gpus", *v, 1, 1024);
  if (auto v = r.find("serving_tpot_ms")) s.serving_tpot_ms = r.number("serving_tpot_ms", *v, 1e-3, 1e7);
  if (auto v = r.find("roofline_step")) {
    if (!v->is_object()) r.bad("roofline_step", *v, "expected an object {batch, query, prefix, tp}");
    if (v->contains("batch")) s.roofline_step.batch = r.integer("roofline_step.batch", (*v)["batch"], 1, 10'000'000);
    if (v->contains("tp")) s.roofline_step.tp = r.integer("roofline_step.tp", (*v)["tp"], 1, 4096);
    if (v->contains("query")) s.roofline_step.query = r.number("roofline_step.query", (*v)["query"], 1, 1e9);
    if (v->contains("prefix")) s.roofline_step.prefix = r.number("roofline_step.prefix", (*v)["prefix"], 0, 1e12);
  }
  if (auto v = r.find("tolerance")) s.tolerance = r.number("tolerance", *v, 0, 1);
  if (auto v = r.find("column_tolerances")) {
    if (!v->is_object()) r.bad("column_tolerances", *v, "expected an object column -> relative tolerance");
    for (const auto& [col, tol] : v->items()) s.column_tolerances[col] = r.number("column_tolerances." + col, tol, 0, 1);
  }
  return s;
}

nlohmann::ordered_json to_json(const ReportSpec& s) {
  nlohmann::ordered_json j;
  j["title"] = s.title;
  j["models"] = s.models;
  j["gpus"] = s.gpus;
  j["layouts"] = nlohmann::ordered_json::array();
  for (const auto& l : s.layouts) j["layouts"].push_back({{"tp", l.tp}, {"dp", l.dp}, {"ep", l.ep}});
  j["kv_dtypes"] = s.kv_dtypes;
  j["contexts"] = s.contexts;
  j["sequence_contexts"] = s.sequence_contexts;
  j["prefixes"] = s.prefixes;
  j["crossover_tps"] = s.crossover_tps;
  j["batch"] = s.batch;
  j["decode_context"] = s.decode_context;
  j["dtype"] = s.dtype;
  // With an engine, the profile's defaults stand unless the spec set them.
  if (s.engine.empty() || s.mem_util_set) j["mem_util"] = s.mem_util;
  if (s.engine.empty() || s.block_size_set) j["block_size"] = s.block_size;
  if (!s.engine.empty()) j["engine"] = s.engine;
  j["max_query"] = s.max_query;
  j["serving_isl"] = s.serving_isl;
  j["serving_osl"] = s.serving_osl;
  j["serving_max_gpus"] = s.serving_max_gpus;
  j["serving_tpot_ms"] = s.serving_tpot_ms;
  j["compare_models"] = s.compare_models;
  j["roofline_step"] = {{"batch", s.roofline_step.batch}, {"query", s.roofline_step.query},
                        {"prefix", s.roofline_step.prefix}, {"tp", s.roofline_step.tp}};
  j["tolerance"] = s.tolerance;
  j["column_tolerances"] = s.column_tolerances;
  return j;
}

ReportInputs resolve_report(const ReportSpec& spec) {
  ReportInputs in;
  for (const auto& a : spec.models) in.models.push_back({a, load_model(a)});
  std::set<std::string> seen;
  for (const auto& l : in.models) seen.insert(l.spec.name);
  for (const auto& a : spec.compare_models) {
    ModelSpec m = load_model(a);
    if (seen.insert(m.name).second) in.compare_models.push_back({a, std::move(m)});
  }
  for (const auto& g : spec.gpus) in.gpus.push_back(load_gpu(g));
  const auto compute = parse_dtype(spec.dtype);
  if (!compute) fail_key("spec", "dtype", spec.dtype, "expected one of fp32, tf32, bf16, fp16, fp8, fp4");
  in.compute = *compute;
  for (const HardwareSpec& g : in.gpus)
    if (!g.peak_flops(in.compute)) fail_key(g.source, "dense_peak_tflops", spec.dtype, fmt::format("{} has no {} peak", g.name, spec.dtype));
  for (const auto& k : spec.kv_dtypes) {
    const auto d = parse_kv_dtype(k);
    if (!d) fail_key("spec", "kv_dtypes", k, "expected fp32, bf16, fp16, fp8, fp8_flashmla or fp4");
    in.kvs.push_back(*d);
  }
  in.layouts = spec.layouts;
  in.contexts = spec.contexts;
  in.sequence_contexts = parse_number_list("sequence_contexts", spec.sequence_contexts, 1, 4096);
  in.prefixes = parse_number_list("prefixes", spec.prefixes, 0, 4096);
  for (double p : in.prefixes)
    if (p > 1e12) fail_key("spec", "prefixes", spec.prefixes, "prefixes must be at most 1e12");
  in.crossover_tps = spec.crossover_tps;
  in.batch = spec.batch;
  in.decode_context = spec.decode_context;
  in.mem_util = spec.mem_util;
  in.block_size = spec.block_size;
  if (!spec.engine.empty()) {
    in.engine = load_engine(spec.engine, "engine");
    if (spec.mem_util_set) in.engine_settings.mem_util = spec.mem_util;
    if (spec.block_size_set) in.engine_settings.block_size = spec.block_size;
    // The engine's own dispatch rules at its version (none where it had no absorbed path to choose).
    if (const auto d = dispatch_for(*in.engine)) in.policies = d->policies;
    for (const NamedModel& l : in.models)
      if (const std::string problem = dispatch_problem(in.policies, l.spec); !problem.empty()) fail_key("spec", "engine", spec.engine, problem);
  } else {
    in.policies = default_policies();
  }
  in.max_query = spec.max_query;
  in.roofline_step = spec.roofline_step;
  in.serving_isl = spec.serving_isl;
  in.serving_osl = spec.serving_osl;
  in.serving_max_gpus = spec.serving_max_gpus;
  in.serving_tpot = Seconds{spec.serving_tpot_ms * 1e-3};
  in.profiles = bundled_efficiency();
  return in;
}

}  // namespace mlaplan
