#include "mlaplan/io/hardware_json.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hf_config.hpp"

namespace mlaplan {

using nlohmann::json;

namespace {

struct Sourced {
  double value = 0;
  std::string source;
  bool unconfirmed = false;
};

// Reads {"value": positive finite number, "source": non-empty string}.
Sourced sourced(const json& j, const std::string& where, const std::string& key) {
  if (!j.is_object() || !j.contains("value"))
    fail_key(where, key, show_json(j), "expected an object {\"value\": number, \"source\": \"...\"}");
  const json& v = j["value"];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    fail_key(where, key + ".value", show_json(v), "expected a positive number");
  if (!j.contains("source") || !j["source"].is_string() || j["source"].get<std::string>().empty())
    fail_key(where, key + ".source", j.contains("source") ? show_json(j["source"]) : "(absent)",
             "every hardware number needs a source");
  Sourced s{v.get<double>(), j["source"].get<std::string>(), false};
  if (j.contains("unconfirmed")) {
    if (!j["unconfirmed"].is_boolean()) fail_key(where, key + ".unconfirmed", show_json(j["unconfirmed"]), "expected true or false");
    s.unconfirmed = j["unconfirmed"].get<bool>();
  }
  return s;
}

struct UnitKey {
  const char* key;
  double scale;  // to SI base units
};

// Exactly one of the unit-bearing spellings of a quantity.
std::optional<std::pair<std::string, double>> one_of(const json& j, const std::string& where,
                                                     std::initializer_list<UnitKey> keys, bool required,
                                                     HardwareSpec& hw, const std::string& field) {
  const UnitKey* found = nullptr;
  std::string names;
  for (const UnitKey& k : keys) {
    names += (names.empty() ? "" : ", ") + std::string(k.key);
    if (!j.contains(k.key)) continue;
    if (found) fail_key(where, k.key, show_json(j[k.key]), fmt::format("give only one of {}", names));
    found = &k;
  }
  if (!found) {
    if (required) fail_key(where, keys.begin()->key, "(absent)", fmt::format("required: one of {}", names));
    return std::nullopt;
  }
  const Sourced s = sourced(j[found->key], where, found->key);
  hw.sources[field] = s.source;
  if (s.unconfirmed) hw.unconfirmed.push_back(field);
  return std::make_pair(std::string(found->key), s.value * found->scale);
}

}  // namespace

HardwareSpec parse_hardware(const json& j, const std::string& where) {
  HardwareSpec hw;
  hw.source = where;
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    fail_key(where, "name", j.contains("name") ? show_json(j["name"]) : "(absent)", "expected a non-empty string");
  hw.name = j["name"].get<std::string>();
  hw.vendor = j.contains("vendor") && j["vendor"].is_string() ? j["vendor"].get<std::string>() : std::string{};
  if (j.contains("architecture")) {
    static const std::vector<std::string> known{"ampere", "ada", "hopper", "blackwell", "cdna3", "cdna4"};
    if (!j["architecture"].is_string() || std::find(known.begin(), known.end(), j["architecture"].get<std::string>()) == known.end())
      fail_key(where, "architecture", show_json(j["architecture"]), "expected ampere, ada, hopper, blackwell, cdna3 or cdna4");
    hw.architecture = j["architecture"].get<std::string>();
  }
  if (j.contains("aliases")) {
    if (!j["aliases"].is_array()) fail_key(where, "aliases", show_json(j["aliases"]), "expected an array of strings");
    for (const json& a : j["aliases"]) {
      if (!a.is_string()) fail_key(where, "aliases", show_json(a), "expected a string");
      hw.aliases.push_back(a.get<std::string>());
    }
  }

  const auto mem = one_of(j, where,
                          {{"memory_capacity_gib", static_cast<double>(kGiB)},
                           {"memory_capacity_gb", kGB},
                           {"memory_capacity_mib", static_cast<double>(kMiB)},
                           {"memory_capacity_bytes", 1.0}},
                          true, hw, "memory_capacity");
  // Numbers past these are not hardware (1 PiB of memory, 1 PB/s, 1 EFLOP/s, a million SMs).
  if (mem->second > 1125899906842624.0) fail_key(where, mem->first, show_json(j[mem->first]["value"]), "exceeds 1 PiB");
  hw.memory_capacity = Bytes{static_cast<std::int64_t>(std::llround(mem->second))};
  // The totals software reports cannot exceed the physical memory.
  auto seen_total = [&](std::initializer_list<UnitKey> keys, const std::string& field) {
    const auto t = one_of(j, where, keys, false, hw, field);
    if (!t) return Bytes{0};
    if (t->second > mem->second) fail_key(where, t->first, show_json(j[t->first]["value"]), fmt::format("exceeds the memory capacity {} ({})", mem->first, show_json(j[mem->first]["value"])));
    return Bytes{static_cast<std::int64_t>(std::llround(t->second))};
  };
  hw.memory_torch_total = seen_total({{"memory_torch_total_bytes", 1.0}, {"memory_torch_total_gib", static_cast<double>(kGiB)}}, "memory_torch_total");
  hw.memory_smi_total = seen_total({{"memory_smi_total_bytes", 1.0}, {"memory_smi_total_mib", static_cast<double>(kMiB)}}, "memory_smi_total");

  const auto bw = one_of(j, where, {{"memory_bandwidth_tb_per_s", kTB}, {"memory_bandwidth_gb_per_s", kGB}}, true, hw,
                         "memory_bandwidth");
  if (bw->second > 1e15) fail_key(where, bw->first, show_json(j[bw->first]["value"]), "exceeds 1 PB/s");
  hw.memory_bandwidth = BytesPerSecond{bw->second};

  if (!j.contains("dense_peak_tflops") || !j["dense_peak_tflops"].is_object() || j["dense_peak_tflops"].empty())
    fail_key(where, "dense_peak_tflops", j.contains("dense_peak_tflops") ? show_json(j["dense_peak_tflops"]) : "(absent)",
             "expected an object of dtype -> {value, source}");
  for (const auto& [dtype, entry] : j["dense_peak_tflops"].items()) {
    const auto d = parse_dtype(dtype);
    if (!d) fail_key(where, "dense_peak_tflops." + dtype, show_json(entry), "unknown dtype (fp32, tf32, bf16, fp16, fp8, fp4)");
    const Sourced s = sourced(entry, where, "dense_peak_tflops." + dtype);
    if (s.value > 1e6) fail_key(where, "dense_peak_tflops." + dtype + ".value", show_json(entry["value"]), "exceeds 1e6 TFLOP/s");
    hw.dense_peak[*d] = FlopsPerSecond{s.value * kTB};
    hw.sources["peak_" + dtype] = s.source;
    if (s.unconfirmed) hw.unconfirmed.push_back("peak_" + dtype);
  }

  if (const auto sm = one_of(j, where, {{"sm_count", 1.0}, {"cu_count", 1.0}}, false, hw, "sm_count")) {
    if (sm->second > 1e6) fail_key(where, sm->first, show_json(j[sm->first]["value"]), "exceeds a million");
    hw.sm_count = static_cast<std::int64_t>(std::llround(sm->second));
  }
  if (const auto clock = one_of(j, where, {{"sm_boost_clock_mhz", 1e6}}, false, hw, "sm_clock")) {
    if (clock->second < 1e8 || clock->second > 1e10) fail_key(where, clock->first, show_json(j[clock->first]["value"]), "expected 100 to 10,000 MHz");
    hw.sm_clock_hz = clock->second;
  }
  if (const auto l2 = one_of(j, where, {{"l2_cache_mib", static_cast<double>(kMiB)}, {"l2_cache_mb", 1e6}}, false, hw, "l2_cache")) {
    if (l2->second > 1e12) fail_key(where, l2->first, show_json(j[l2->first]["value"]), "exceeds 1 TB");
    hw.l2_cache = Bytes{static_cast<std::int64_t>(std::llround(l2->second))};
  }
  if (const auto link = one_of(j, where, {{"scale_up_bandwidth_gb_per_s_per_direction", kGB}}, false, hw, "scale_up_bandwidth"))
    hw.scale_up_bandwidth_per_direction = BytesPerSecond{link->second};
  if (const auto link = one_of(j, where, {{"scale_out_bandwidth_gb_per_s_per_direction", kGB}}, false, hw, "scale_out_bandwidth"))
    hw.scale_out_bandwidth_per_direction = BytesPerSecond{link->second};
  if (const auto domain = one_of(j, where, {{"scale_up_domain_gpus", 1.0}}, false, hw, "scale_up_domain_gpus")) {
    if (domain->second < 1 || domain->second > 1e6 || domain->second != std::floor(domain->second))
      fail_key(where, domain->first, show_json(j[domain->first]["value"]), "expected a whole number of GPUs from 1 to 10^6");
    hw.scale_up_domain_gpus = static_cast<std::int64_t>(domain->second);
  }

  if (j.contains("efficiency")) {
    const json& e = j["efficiency"];
    if (!e.is_object()) fail_key(where, "efficiency", show_json(e), "expected an object {compute, memory, source}");
    for (const char* k : {"compute", "memory"}) {
      if (!e.contains(k)) continue;
      const json& v = e[k];
      if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1)
        fail_key(where, std::string("efficiency.") + k, show_json(v), "expected a number in (0, 1]");
      (std::string(k) == "compute" ? hw.efficiency.compute : hw.efficiency.memory) = v.get<double>();
    }
    if (!e.contains("source") || !e["source"].is_string())
      fail_key(where, "efficiency.source", e.contains("source") ? show_json(e["source"]) : "(absent)", "every hardware number needs a source");
    hw.efficiency.source = e["source"].get<std::string>();
  }
  return hw;
}

namespace {
nlohmann::ordered_json sourced_json(double value, const HardwareSpec& hw, const std::string& field) {
  nlohmann::ordered_json o{{"value", value}};
  const auto it = hw.sources.find(field);
  o["source"] = it != hw.sources.end() ? it->second : std::string("unknown");
  if (std::find(hw.unconfirmed.begin(), hw.unconfirmed.end(), field) != hw.unconfirmed.end()) o["unconfirmed"] = true;
  return o;
}
}  // namespace

nlohmann::ordered_json hardware_to_json(const HardwareSpec& hw) {
  nlohmann::ordered_json j;
  j["name"] = hw.name;
  j["vendor"] = hw.vendor;
  if (!hw.architecture.empty()) j["architecture"] = hw.architecture;
  if (!hw.aliases.empty()) j["aliases"] = hw.aliases;
  j["memory_capacity_bytes"] = sourced_json(static_cast<double>(hw.memory_capacity.value), hw, "memory_capacity");
  if (hw.memory_torch_total.value > 0) j["memory_torch_total_bytes"] = sourced_json(static_cast<double>(hw.memory_torch_total.value), hw, "memory_torch_total");
  if (hw.memory_smi_total.value > 0) j["memory_smi_total_bytes"] = sourced_json(static_cast<double>(hw.memory_smi_total.value), hw, "memory_smi_total");
  j["memory_bandwidth_gb_per_s"] = sourced_json(hw.memory_bandwidth.value / kGB, hw, "memory_bandwidth");
  for (const auto& [d, peak] : hw.dense_peak)
    j["dense_peak_tflops"][std::string(to_string(d))] = sourced_json(peak.value / kTB, hw, "peak_" + std::string(to_string(d)));
  if (hw.sm_count > 0) j["sm_count"] = sourced_json(static_cast<double>(hw.sm_count), hw, "sm_count");
  if (hw.sm_clock_hz > 0) j["sm_boost_clock_mhz"] = sourced_json(hw.sm_clock_hz / 1e6, hw, "sm_clock");
  if (hw.l2_cache.value > 0) j["l2_cache_mib"] = sourced_json(static_cast<double>(hw.l2_cache.value) / static_cast<double>(kMiB), hw, "l2_cache");
  if (hw.scale_up_bandwidth_per_direction.value > 0)
    j["scale_up_bandwidth_gb_per_s_per_direction"] = sourced_json(hw.scale_up_bandwidth_per_direction.value / kGB, hw, "scale_up_bandwidth");
  if (hw.scale_out_bandwidth_per_direction.value > 0)
    j["scale_out_bandwidth_gb_per_s_per_direction"] = sourced_json(hw.scale_out_bandwidth_per_direction.value / kGB, hw, "scale_out_bandwidth");
  if (hw.scale_up_domain_gpus > 0) j["scale_up_domain_gpus"] = sourced_json(static_cast<double>(hw.scale_up_domain_gpus), hw, "scale_up_domain_gpus");
  if (hw.efficiency.source != Efficiency{}.source)
    j["efficiency"] = {{"compute", hw.efficiency.compute}, {"memory", hw.efficiency.memory}, {"source", hw.efficiency.source}};
  return j;
}

HardwareSpec load_hardware_file(const std::filesystem::path& path, const std::string& shown) {
  const std::string where = shown.empty() ? path.string() : shown;
  return parse_hardware(load_json_file(path, where), where);
}

}  // namespace mlaplan
