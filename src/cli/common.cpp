#include "common.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan::cli {

ModelSpec ModelFlags::load() const { return load_model(model, sets); }

void add_model_flags(CLI::App* app, ModelFlags& f) {
  app->add_option("--model,-m", f.model, "bundled model name, a config.json, or a folder holding one")
      ->capture_default_str();
  app->add_option("--set", f.sets, "override a config field before interpretation: key=value (repeatable)");
}

void add_layout_flags(CLI::App* app, LayoutFlags& f, bool with_ep) {
  app->add_option("--tp", f.tp, "tensor-parallel ranks (split query heads, MLP, vocab)")->capture_default_str();
  app->add_option("--dp", f.dp, "data-parallel attention replicas (each stores its own sequences)")->capture_default_str();
  if (with_ep) app->add_option("--ep", f.ep, "expert-parallel ranks for routed experts (1: experts split by TP)")->capture_default_str();
}

void add_format_flag(CLI::App* app, std::string& format) {
  app->add_option("--format,-f", format, "table | csv | md | json")->capture_default_str();
}

std::int64_t positive(const char* flag, std::int64_t v, std::int64_t max) {
  if (v < 1) fail_flag(flag, std::to_string(v), "must be a positive integer");
  if (v > max) fail_flag(flag, std::to_string(v), fmt::format("must be at most {}", max));
  return v;
}

Parallelism LayoutFlags::resolve(const ModelSpec& m) const {
  Parallelism p{positive("--tp", tp, 1 << 20), positive("--dp", dp, 1 << 20), positive("--ep", ep, 1 << 20)};
  if (m.heads % p.tp != 0)
    fail_key(m.source, "num_attention_heads", std::to_string(m.heads), fmt::format("not divisible by --tp {}", p.tp));
  if (!m.is_mla() && m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0)
    fail_key(m.source, "num_key_value_heads", std::to_string(m.kv_heads),
             fmt::format("cannot be split or replicated evenly across --tp {}", p.tp));
  if (p.ep > 1) {
    if (!m.moe) fail_flag("--ep", std::to_string(p.ep), fmt::format("{} has no routed experts", m.name));
    if (p.ranks() % p.ep != 0)
      fail_flag("--ep", std::to_string(p.ep), fmt::format("does not divide the {} ranks of --tp {} x --dp {}", p.ranks(), p.tp, p.dp));
    if (p.ep > m.moe->routed_experts)
      fail_flag("--ep", std::to_string(p.ep), fmt::format("exceeds the {} routed experts", m.moe->routed_experts));
  }
  return p;
}

KvDtype resolve_kv_dtype(const std::string& s, const ModelSpec& m) {
  const auto d = parse_kv_dtype(s);
  if (!d) fail_flag("--kv-dtype", s, "expected one of bf16, fp16, fp8, fp8_flashmla, fp4");
  if (*d == KvDtype::fp8_flashmla && !m.is_mla())
    fail_flag("--kv-dtype", s, fmt::format("FlashMLA's layout needs an MLA model; {} is {}", m.name, to_string(m.attention)));
  return *d;
}

WeightDtype resolve_weight_dtype(const std::string& s) {
  const auto d = parse_weight_dtype(s);
  if (!d) fail_flag("--weight-dtype", s, "expected one of fp32, bf16, fp16, fp8, mxfp4");
  return *d;
}

void emit(const Document& doc, const std::string& format) {
  const std::string text = render(doc, parse_format(format));
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace mlaplan::cli
