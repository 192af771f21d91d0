#include "mlaplan/io/efficiency_json.hpp"

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

void only_keys(const json& j, const std::string& where, const std::string& prefix, const std::vector<std::string>& allowed) {
  if (!j.is_object()) fail_key(where, prefix.empty() ? "(top level)" : prefix, show_json(j), "expected an object");
  for (const auto& [k, v] : j.items())
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      fail_key(where, prefix.empty() ? k : prefix + "." + k, show_json(v), "unknown key" + did_you_mean(k, allowed));
}

std::string text(const json& j, const std::string& where, const std::string& prefix, const char* key, bool required) {
  const std::string name = prefix.empty() ? key : prefix + "." + key;
  if (!j.contains(key)) {
    if (required) fail_key(where, name, "(absent)", "expected a non-empty string");
    return {};
  }
  if (!j[key].is_string() || j[key].get<std::string>().empty()) fail_key(where, name, show_json(j[key]), "expected a non-empty string");
  return j[key].get<std::string>();
}

double number(const json& j, const std::string& where, const std::string& name, double lo, double hi, bool lo_open) {
  if (!j.is_number() || !std::isfinite(j.get<double>()) || (lo_open ? j.get<double>() <= lo : j.get<double>() < lo) || j.get<double>() > hi)
    fail_key(where, name, show_json(j), fmt::format("expected a number in {}{}, {}]", lo_open ? "(" : "[", lo, hi));
  return j.get<double>();
}

std::int64_t count(const json& j, const std::string& where, const std::string& name) {
  const double v = number(j, where, name, 0, 1e12, false);
  if (std::floor(v) != v) fail_key(where, name, show_json(j), "expected a whole number of rows");
  return static_cast<std::int64_t>(v);
}

const std::vector<std::string> kScopes{"gpu", "architecture", "any"};

}  // namespace

EfficiencyProfile parse_efficiency_profile(const json& j, const std::string& where) {
  only_keys(j, where, "", {"profile", "scope", "architecture", "gpu", "written_by", "transfer_rule", "fitted_on", "kernels"});
  EfficiencyProfile p;
  p.source = where;
  p.name = text(j, where, "", "profile", true);
  p.scope = text(j, where, "", "scope", true);
  if (std::find(kScopes.begin(), kScopes.end(), p.scope) == kScopes.end()) fail_key(where, "scope", show_json(j["scope"]), "expected gpu, architecture or any");
  p.architecture = text(j, where, "", "architecture", p.scope == "architecture");
  p.gpu = text(j, where, "", "gpu", p.scope == "gpu");
  if (p.scope != "gpu" && j.contains("gpu")) fail_key(where, "gpu", show_json(j["gpu"]), fmt::format("only a profile of scope gpu names a GPU (scope is {})", p.scope));
  p.written_by = text(j, where, "", "written_by", true);
  text(j, where, "", "transfer_rule", false);
  if (!j.contains("fitted_on") || !j["fitted_on"].is_array() || j["fitted_on"].empty())
    fail_key(where, "fitted_on", j.contains("fitted_on") ? show_json(j["fitted_on"]) : "(absent)", "expected a non-empty list of the tables fitted on");
  for (std::size_t i = 0; i < j["fitted_on"].size(); ++i) {
    const json& t = j["fitted_on"][i];
    const std::string prefix = fmt::format("fitted_on[{}]", i);
    only_keys(t, where, prefix, {"gpu", "file", "kernel", "rows", "source", "licence"});
    FittedTable ft;
    ft.gpu = text(t, where, prefix, "gpu", true);
    ft.file = text(t, where, prefix, "file", true);
    ft.source = text(t, where, prefix, "source", true);
    ft.licence = text(t, where, prefix, "licence", true);
    ft.kernel = text(t, where, prefix, "kernel", true);
    if (!parse_kernel_family(ft.kernel))
      fail_key(where, prefix + ".kernel", show_json(t["kernel"]), "expected a kernel family such as absorbed_decode");
    if (!t.contains("rows")) fail_key(where, prefix + ".rows", "(absent)", "expected the number of rows fitted on");
    ft.rows = count(t["rows"], where, prefix + ".rows");
    // Held-out GPUs: predictions there are judged against measurements kept outside the project.
    if (ft.gpu.rfind("H20", 0) == 0) fail_key(where, prefix + ".gpu", show_json(t["gpu"]), "H20 and H200 measurements are held out and never fitted on");
    p.fitted_on.push_back(ft);
  }
  if (!j.contains("kernels")) fail_key(where, "kernels", "(absent)", "expected an object of kernel families");
  const json& ks = j["kernels"];
  if (!ks.is_object() || ks.empty()) fail_key(where, "kernels", show_json(ks), "expected an object of kernel families");
  for (const auto& [name, k] : ks.items()) {
    const auto f = parse_kernel_family(name);
    if (!f) {
      std::vector<std::string> all;
      for (int i = 0; i < kKernelFamilyCount; ++i) all.emplace_back(to_string(static_cast<KernelFamily>(i)));
      fail_key(where, "kernels." + name, show_json(k), "unknown kernel family" + did_you_mean(name, all));
    }
    const std::string prefix = "kernels." + name;
    only_keys(k, where, prefix,
              {"fixed_s", "per_sequence_s", "fixed_fp8_cache_s", "per_sequence_fp8_cache_s", "per_sequence_mmha_s", "eta_compute", "eta_compute_fp8", "eta_compute_fp8_tensor", "eta_compute_deepgemm",
               "mmha_flops_per_sm_cycle", "eta_memory", "eta_memory_mmha", "memory_reach", "l2_speedup", "l2_bytes_per_sm_cycle", "per_cta_s", "k_step_s", "block_query_rows", "block_query_rows_fp8_cache", "serial_memory", "per_sequence_overlapped", "per_cta_overlapped", "fixed_at_sm_clock", "split_kv", "resident_ctas", "solo_share", "rows"});
    for (const char* key : {"fixed_s", "per_sequence_s", "eta_compute", "eta_memory", "rows"})
      if (!k.contains(key)) fail_key(where, prefix + "." + key, "(absent)", "required for every kernel family");
    KernelEfficiency e;
    e.fixed = Seconds{number(k["fixed_s"], where, prefix + ".fixed_s", 0, 1, false)};
    e.per_sequence = Seconds{number(k["per_sequence_s"], where, prefix + ".per_sequence_s", 0, 1, false)};
    // The fp8-cache kernel's costs come as a pair: one without the other would time its launches
    // half with one kernel's costs and half with another's.
    if (k.contains("fixed_fp8_cache_s") != k.contains("per_sequence_fp8_cache_s")) {
      const char* given = k.contains("fixed_fp8_cache_s") ? "fixed_fp8_cache_s" : "per_sequence_fp8_cache_s";
      fail_key(where, prefix + "." + given, show_json(k[given]),
               fmt::format("needs {} beside it (the fp8-cache kernel's costs come as a pair)",
                           k.contains("fixed_fp8_cache_s") ? "per_sequence_fp8_cache_s" : "fixed_fp8_cache_s"));
    }
    if (k.contains("fixed_fp8_cache_s")) {
      e.fixed_fp8_cache = Seconds{number(k["fixed_fp8_cache_s"], where, prefix + ".fixed_fp8_cache_s", 0, 1, false)};
      e.per_sequence_fp8_cache = Seconds{number(k["per_sequence_fp8_cache_s"], where, prefix + ".per_sequence_fp8_cache_s", 0, 1, false)};
    }
    if (k.contains("per_sequence_mmha_s")) e.per_sequence_mmha = Seconds{number(k["per_sequence_mmha_s"], where, prefix + ".per_sequence_mmha_s", 0, 1, false)};
    e.eta_compute = number(k["eta_compute"], where, prefix + ".eta_compute", 0, 1, true);
    if (k.contains("eta_compute_fp8")) e.eta_compute_fp8 = number(k["eta_compute_fp8"], where, prefix + ".eta_compute_fp8", 0, 1, true);
    if (k.contains("eta_compute_fp8_tensor"))
      e.eta_compute_fp8_tensor = number(k["eta_compute_fp8_tensor"], where, prefix + ".eta_compute_fp8_tensor", 0, 1, true);
    // A dense GEMM's alone: no other family's ops run DeepGEMM's block-scaled kernel or its steps.
    for (const char* key : {"eta_compute_deepgemm", "k_step_s"})
      if (k.contains(key) && *f != KernelFamily::gemm)
        fail_key(where, prefix + "." + key, show_json(k[key]), "only the gemm family has it (block-scaled fp8 dense GEMMs)");
    if (k.contains("eta_compute_deepgemm"))
      e.eta_compute_deepgemm = number(k["eta_compute_deepgemm"], where, prefix + ".eta_compute_deepgemm", 0, 1, true);
    // At most 256: 128 FP32 lanes' fused multiply-adds, the most an SM of any GPU bundled issues a cycle.
    if (k.contains("mmha_flops_per_sm_cycle"))
      e.mmha_flops_per_sm_cycle = number(k["mmha_flops_per_sm_cycle"], where, prefix + ".mmha_flops_per_sm_cycle", 0, 256, true);
    e.eta_memory = number(k["eta_memory"], where, prefix + ".eta_memory", 0, 1, true);
    if (k.contains("eta_memory_mmha")) e.eta_memory_mmha = number(k["eta_memory_mmha"], where, prefix + ".eta_memory_mmha", 0, 1, true);
    // Optional: profiles written before it streamed one SM's share per CTA.
    if (k.contains("memory_reach")) e.memory_reach = number(k["memory_reach"], where, prefix + ".memory_reach", 1, 1e4, false);
    // Optional: absent (no L2 term) for the families whose rows show none; one form or the other.
    if (k.contains("l2_speedup") && k.contains("l2_bytes_per_sm_cycle"))
      fail_key(where, prefix + ".l2_bytes_per_sm_cycle", show_json(k["l2_bytes_per_sm_cycle"]),
               "a family's L2 term is l2_speedup or l2_bytes_per_sm_cycle, not both");
    if (k.contains("l2_speedup")) e.l2_speedup = number(k["l2_speedup"], where, prefix + ".l2_speedup", 1, 16, false);
    if (k.contains("l2_bytes_per_sm_cycle"))
      e.l2_bytes_per_sm_cycle = number(k["l2_bytes_per_sm_cycle"], where, prefix + ".l2_bytes_per_sm_cycle", 1, 256, false);
    // Optional: 0 (no cost per CTA) and false (compute and memory overlap) for the families that do not
    // fit them.
    if (k.contains("per_cta_s")) e.per_cta = Seconds{number(k["per_cta_s"], where, prefix + ".per_cta_s", 0, 1, false)};
    // Optional: 0 (no bound from a block-scaled GEMM's reduction steps) where not fitted.
    if (k.contains("k_step_s")) e.k_step = Seconds{number(k["k_step_s"], where, prefix + ".k_step_s", 0, 1e-3, false)};
    // Optional, GQA decode only: 0 (a block costs the same whatever its query rows) where absent.
    for (const char* key : {"block_query_rows", "block_query_rows_fp8_cache"})
      if (k.contains(key) && *f != KernelFamily::attention_decode)
        fail_key(where, prefix + "." + key, show_json(k[key]), "only the attention_decode family has it (a decode block's query rows)");
    if (k.contains("block_query_rows")) e.block_query_rows = number(k["block_query_rows"], where, prefix + ".block_query_rows", 0, 1024, true);
    if (k.contains("block_query_rows_fp8_cache")) {
      if (!e.fixed_fp8_cache)
        fail_key(where, prefix + ".block_query_rows_fp8_cache", show_json(k["block_query_rows_fp8_cache"]),
                 "needs fixed_fp8_cache_s and per_sequence_fp8_cache_s beside it (the fp8-cache kernel's costs)");
      e.block_query_rows_fp8_cache = number(k["block_query_rows_fp8_cache"], where, prefix + ".block_query_rows_fp8_cache", 0, 1024, true);
    }
    // Optional flags, true or false where given (a named reference: clang 14 captures no structured binding).
    const auto& entry = k;
    auto flag = [&](const char* key, bool& out) {
      if (!entry.contains(key)) return;
      if (!entry[key].is_boolean()) fail_key(where, prefix + "." + key, show_json(entry[key]), "expected true or false");
      out = entry[key].get<bool>();
    };
    flag("serial_memory", e.serial_memory);
    // Optional: false (the cost per sequence, per CTA, added to the max) for the families that do not fit it.
    flag("per_sequence_overlapped", e.sequences_overlap);
    flag("per_cta_overlapped", e.cta_overlap);
    // Optional: false (fixed_s and fixed_fp8_cache_s in seconds) where not fitted at the SM clock.
    flag("fixed_at_sm_clock", e.fixed_at_sm_clock);
    e.rows = count(k["rows"], where, prefix + ".rows");
    flag("split_kv", e.split_kv);
    // Optional, latent attention's unsplit launch: 1 and 1 where absent. A whole number of blocks per
    // SM, and a lone block's share from 1/resident_ctas (no slower than its share beside the others) to 1.
    if (k.contains("resident_ctas") || k.contains("solo_share")) {
      if (!is_latent_attention(*f)) {
        const char* given = k.contains("resident_ctas") ? "resident_ctas" : "solo_share";
        fail_key(where, prefix + "." + given, show_json(k[given]), "only the latent attention families (absorbed_decode, sparse_decode) have an unsplit launch");
      }
      if (k.contains("resident_ctas")) {
        e.resident_ctas = number(k["resident_ctas"], where, prefix + ".resident_ctas", 1, 64, false);
        if (std::floor(e.resident_ctas) != e.resident_ctas) fail_key(where, prefix + ".resident_ctas", show_json(k["resident_ctas"]), "expected a whole number of blocks per SM");
      }
      if (k.contains("solo_share")) e.solo_share = number(k["solo_share"], where, prefix + ".solo_share", 1 / e.resident_ctas, 1, false);
    }
    p.kernels[static_cast<std::size_t>(*f)] = e;
  }
  return p;
}

nlohmann::ordered_json efficiency_profile_json(const EfficiencyProfile& p) {
  nlohmann::ordered_json j;
  j["profile"] = p.name;
  j["scope"] = p.scope;
  if (!p.architecture.empty()) j["architecture"] = p.architecture;
  if (!p.gpu.empty()) j["gpu"] = p.gpu;
  j["written_by"] = p.written_by;
  j["transfer_rule"] =
      "t = launches·(fixed_s + sequences·per_sequence_s + ceil(CTAs / SMs)·per_cta_s) (fixed_at_sm_clock true: fixed_s and fixed_fp8_cache_s one SM's time at 1 GHz, so a launch costs fixed_s·1 GHz / sm_boost_clock_mhz on a GPU; GQA decode: sequences = blocks of its launch (per_sequence_overlapped true: those beyond its first wave, in whole waves, (ceil(CTAs / SMs) − 1)·SMs), and per_sequence_s (with per_sequence_fp8_cache_s and per_sequence_mmha_s) one SM's time per block at 1 GHz, so a block costs per_sequence_s·1 GHz / (SMs·sm_boost_clock_mhz) on a GPU, times max(1, R / block_query_rows) for a block of R query rows (its head group's query heads, times a speculative step's tokens; not MMHA's blocks) where block_query_rows is given (the fp8-cache pair's launches: block_query_rows_fp8_cache where given); its launches on TMA-fed kernels, TensorRT-LLM's QGMMA over an fp8 KV cache on a Hopper GPU and TRTLLM-GEN over any cache on a Blackwell GPU (not its MMHA launches, head groups above 32): fixed_fp8_cache_s and per_sequence_fp8_cache_s where given; the prefill families' pair, TensorRT-LLM's fp8 context kernels, times only the measurement rows that ran them; TensorRT-LLM's MMHA decode kernel over a bf16 cache (on Blackwell over either): per_sequence_mmha_s where given) + max(F / (peak·eta_compute·w) (fp8 kernels: the fp8 peak·eta_compute_fp8 where given, per-tensor-scaled fp8 GEMMs eta_compute_fp8_tensor where given, block-scaled fp8 GEMMs on DeepGEMM eta_compute_deepgemm where given (the engine's own block kernels eta_compute_fp8, else eta_compute_deepgemm; a GPU's profile without eta_compute_deepgemm takes its architecture's); TensorRT-LLM's MMHA decode kernel, on CUDA cores: F / (SMs·sm_boost_clock_mhz·mmha_flops_per_sm_cycle·w) where given, without the F_cta term), B / (bandwidth·eta_memory·w_m) (TensorRT-LLM's MMHA decode kernel: eta_memory_mmha where given; where B fits the GPU's L2 in a table timed over one tensor again and again: ·l2_speedup, or with l2_bytes_per_sm_cycle B / (SMs·sm_boost_clock_mhz·l2_bytes_per_sm_cycle·w_m) instead; a step's ops stream from DRAM), F_cta / (peak/SMs·eta_compute), block-scaled fp8 GEMMs ceil(K / 128)·k_step_s·1 GHz / sm_boost_clock_mhz, their reduction never split over CTAs) (GQA decode: B adds, for a split XQA launch, each block's bf16 partial output and fp32 sum and max per query head, 2·group·(head_dim·2 + 8) bytes written and read back; serial_memory true: the F and B terms add, the op's memory pass apart from its compute kernel; per_sequence_overlapped true: launches·sequences·per_sequence_s is a term of that max, not of the fixed cost; per_cta_overlapped true: launches·ceil(CTAs / SMs)·per_cta_s is added to the F term inside the max, not to the fixed cost), "
      "w = CTAs / (ceil(CTAs / SMs)·SMs), w_m = CTAs / (floor(CTAs / SMs)·SMs + max(r, SMs / memory_reach)) with r the last wave's CTAs (1 for whole waves); "
      "latent attention: sequences = those the busiest SM starts, with split_kv true FlashMLA's partition (the SMs cut into floor(SMs / 64-row query tiles) parts, a sequence's 64-key blocks plus 5 dealt over them; B adds each piece of a split sequence's fp32 partial output, written and read back by the combine kernel), "
      "with split_kv false ceil(CTAs / SMs), fmha_v2's blocks: ceil(512 / 256) = 2 per sequence and 64-head tile, one per half of the value columns, each walking all its keys and computing the tile's whole Q·Kᵀ "
      "(F = 2·(2·(r + d_r)) + 2·r per head, query and key), B counts every tile's cache read once, "
      "w = CTAs / (SMs·((waves − 1)·resident_ctas + max(1 / solo_share, ceil(c / SMs)))) over waves of resident_ctas·SMs blocks, c the last wave's (resident_ctas and solo_share 1 where absent: w as above), and the time is at least the longest CTA's bytes / (min(1, memory_reach / SMs)·bandwidth·eta_memory); a GPU without its own profile takes its architecture's (else the one over every architecture) "
      "with its own datasheet peak, bandwidth and SM count, and for latent decode the split_kv of the kernel TensorRT-LLM runs on its "
      "architecture (Hopper and Blackwell true, Ampere and Ada false) where that profile's differs";
  j["fitted_on"] = nlohmann::ordered_json::array();
  for (const FittedTable& t : p.fitted_on) {
    nlohmann::ordered_json r;
    r["gpu"] = t.gpu;
    r["file"] = t.file;
    r["kernel"] = t.kernel;
    r["rows"] = t.rows;
    r["source"] = t.source;
    r["licence"] = t.licence;
    j["fitted_on"].push_back(r);
  }
  for (int i = 0; i < kKernelFamilyCount; ++i)
    if (const auto& k = p.kernels[static_cast<std::size_t>(i)]) {
      nlohmann::ordered_json& e = j["kernels"][std::string(to_string(static_cast<KernelFamily>(i)))];
      e = {{"fixed_s", k->fixed.value}, {"per_sequence_s", k->per_sequence.value}};
      if (k->fixed_fp8_cache && k->per_sequence_fp8_cache) {
        e["fixed_fp8_cache_s"] = k->fixed_fp8_cache->value;
        e["per_sequence_fp8_cache_s"] = k->per_sequence_fp8_cache->value;
      }
      if (k->per_sequence_mmha) e["per_sequence_mmha_s"] = k->per_sequence_mmha->value;
      e["eta_compute"] = k->eta_compute;
      if (k->eta_compute_fp8) e["eta_compute_fp8"] = *k->eta_compute_fp8;
      if (k->eta_compute_fp8_tensor) e["eta_compute_fp8_tensor"] = *k->eta_compute_fp8_tensor;
      if (k->eta_compute_deepgemm) e["eta_compute_deepgemm"] = *k->eta_compute_deepgemm;
      if (k->mmha_flops_per_sm_cycle) e["mmha_flops_per_sm_cycle"] = *k->mmha_flops_per_sm_cycle;
      e["eta_memory"] = k->eta_memory;
      if (k->eta_memory_mmha) e["eta_memory_mmha"] = *k->eta_memory_mmha;
      e["memory_reach"] = k->memory_reach;
      if (k->l2_speedup != 1) e["l2_speedup"] = k->l2_speedup;
      if (k->l2_bytes_per_sm_cycle > 0) e["l2_bytes_per_sm_cycle"] = k->l2_bytes_per_sm_cycle;
      if (k->per_cta.value != 0) e["per_cta_s"] = k->per_cta.value;
      if (k->k_step.value != 0) e["k_step_s"] = k->k_step.value;
      if (k->block_query_rows > 0) e["block_query_rows"] = k->block_query_rows;
      if (k->block_query_rows_fp8_cache) e["block_query_rows_fp8_cache"] = *k->block_query_rows_fp8_cache;
      if (k->serial_memory) e["serial_memory"] = true;
      if (k->sequences_overlap) e["per_sequence_overlapped"] = true;
      if (k->cta_overlap) e["per_cta_overlapped"] = true;
      if (k->fixed_at_sm_clock) e["fixed_at_sm_clock"] = true;
      // Written for the latent attention families, where it changes the time.
      if (is_latent_attention(static_cast<KernelFamily>(i))) e["split_kv"] = k->split_kv;
      if (k->shares_sms()) {
        e["resident_ctas"] = k->resident_ctas;
        e["solo_share"] = k->solo_share;
      }
      e["rows"] = k->rows;
    }
  return j;
}

EfficiencyProfile load_efficiency_file(const fs::path& path) {
  const std::string where = shown_path(path);
  return parse_efficiency_profile(load_json_file(path, where), where);
}

std::vector<EfficiencyProfile> bundled_efficiency() {
  std::vector<EfficiencyProfile> out;
  for (const fs::path& f : json_files(data_dir() / "hardware" / "efficiency")) out.push_back(load_efficiency_file(f));
  return out;
}

namespace {

// One parameter column: its key in a profile's terms and in fits.csv's, its header and unit, whether
// it is an L2 term, and its cell (the family, the factor on its fixed costs).
struct ParameterColumn {
  const char* key;
  const char* fit_key;
  const char* header;
  Unit unit;
  bool l2;
  Value (*cell)(const KernelEfficiency&, double);
};

Value optional_seconds(const std::optional<Seconds>& s, double scale = 1) { return s ? Value{s->value * scale} : Value{}; }
Value optional_number(const std::optional<double>& v) { return v ? Value{*v} : Value{}; }

const std::vector<ParameterColumn>& parameter_columns() {
  static const std::vector<ParameterColumn> columns{
      {"fixed_s", "t_fixed_s", "fixed per launch", Unit::seconds, false, [](const KernelEfficiency& k, double s) { return Value{k.fixed.value * s}; }},
      {"per_sequence_s", "t_seq_s", "per sequence or block (block: one SM at 1 GHz)", Unit::seconds, false,
       [](const KernelEfficiency& k, double) { return Value{k.per_sequence.value}; }},
      {"fixed_fp8_cache_s", "t_fixed_fp8_cache_s", "fixed, fp8 cache or TMA decode", Unit::seconds, false,
       [](const KernelEfficiency& k, double s) { return optional_seconds(k.fixed_fp8_cache, s); }},
      {"per_sequence_fp8_cache_s", "t_seq_fp8_cache_s", "per sequence or block, fp8 cache or TMA decode", Unit::seconds, false,
       [](const KernelEfficiency& k, double) { return optional_seconds(k.per_sequence_fp8_cache); }},
      {"per_sequence_mmha_s", "t_seq_mmha_s", "per block, MMHA (one SM at 1 GHz)", Unit::seconds, false,
       [](const KernelEfficiency& k, double) { return optional_seconds(k.per_sequence_mmha); }},
      {"block_query_rows", "block_query_rows", "query rows a decode block's cost covers", Unit::decimal, false,
       [](const KernelEfficiency& k, double) { return k.block_query_rows > 0 ? Value{k.block_query_rows} : Value{}; }},
      {"block_query_rows_fp8_cache", "block_query_rows_fp8_cache", "... fp8 cache or TMA decode", Unit::decimal, false,
       [](const KernelEfficiency& k, double) { return optional_number(k.block_query_rows_fp8_cache); }},
      {"eta_compute", "eta_compute", "η compute", Unit::fraction, false, [](const KernelEfficiency& k, double) { return Value{k.eta_compute}; }},
      {"eta_compute_fp8", "eta_compute_fp8", "η compute fp8", Unit::fraction, false, [](const KernelEfficiency& k, double) { return optional_number(k.eta_compute_fp8); }},
      {"eta_compute_fp8_tensor", "eta_compute_fp8_tensor", "η compute fp8 per tensor", Unit::fraction, false,
       [](const KernelEfficiency& k, double) { return optional_number(k.eta_compute_fp8_tensor); }},
      {"eta_compute_deepgemm", "eta_compute_deepgemm", "η compute fp8, DeepGEMM", Unit::fraction, false,
       [](const KernelEfficiency& k, double) { return optional_number(k.eta_compute_deepgemm); }},
      {"mmha_flops_per_sm_cycle", "mmha_flops_per_sm_cycle", "MMHA FLOPs per SM cycle", Unit::decimal, false,
       [](const KernelEfficiency& k, double) { return optional_number(k.mmha_flops_per_sm_cycle); }},
      {"eta_memory", "eta_memory", "η memory", Unit::fraction, false, [](const KernelEfficiency& k, double) { return Value{k.eta_memory}; }},
      {"eta_memory_mmha", "eta_memory_mmha", "η memory MMHA", Unit::fraction, false, [](const KernelEfficiency& k, double) { return optional_number(k.eta_memory_mmha); }},
      {"memory_reach", "memory_reach", "memory reach (SM shares)", Unit::decimal, false, [](const KernelEfficiency& k, double) { return Value{k.memory_reach}; }},
      {"l2_speedup", "l2_speedup", "L2 speed-up", Unit::decimal, true, [](const KernelEfficiency& k, double) { return k.l2_speedup != 1 ? Value{k.l2_speedup} : Value{}; }},
      {"l2_bytes_per_sm_cycle", "l2_bytes_per_sm_cycle", "L2 pace (B per SM cycle)", Unit::decimal, true,
       [](const KernelEfficiency& k, double) { return k.l2_bytes_per_sm_cycle > 0 ? Value{k.l2_bytes_per_sm_cycle} : Value{}; }},
      {"per_cta_s", "t_cta_s", "per CTA the busiest SM runs", Unit::seconds, false, [](const KernelEfficiency& k, double) { return Value{k.per_cta.value}; }},
      {"cta_cost", "cta_cost", "CTA cost", Unit::text, false,
       [](const KernelEfficiency& k, double) { return Value{std::string(k.per_cta.value > 0 ? (k.cta_overlap ? "with compute" : "added") : "-")}; }},
      {"k_step_s", "t_k_step_s", "per reduction step, block-fp8 GEMM (one SM at 1 GHz)", Unit::seconds, false,
       [](const KernelEfficiency& k, double) { return k.k_step.value > 0 ? Value{k.k_step.value} : Value{}; }},
      {"memory_pass", "memory_pass", "memory pass", Unit::text, false, [](const KernelEfficiency& k, double) { return Value{std::string(k.serial_memory ? "apart" : "overlapped")}; }},
      {"sequence_cost", "sequence_cost", "block cost", Unit::text, false,
       [](const KernelEfficiency& k, double) { return Value{std::string(k.sequences_overlap ? "in the max" : "added")}; }},
  };
  return columns;
}

}  // namespace

std::vector<Column> efficiency_parameter_columns(bool fit_keys, bool l2) {
  std::vector<Column> out;
  for (const ParameterColumn& c : parameter_columns())
    if (l2 || !c.l2) out.emplace_back(fit_keys ? c.fit_key : c.key, c.header, c.unit);
  return out;
}

void append_efficiency_parameters(std::vector<Value>& row, const KernelEfficiency& k, bool l2, double fixed_scale) {
  for (const ParameterColumn& c : parameter_columns())
    if (l2 || !c.l2) row.push_back(c.cell(k, fixed_scale));
}

}  // namespace mlaplan
