// mlaplan models / mlaplan gpus: what is bundled, with the key figures.
#include <memory>

#include <fmt/format.h>

#include "common.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/io/hardware_json.hpp"
#include "mlaplan/io/hf_config.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan::cli {

namespace {

std::string weights_label(const ModelSpec& m) {
  switch (m.quant) {
    case WeightQuant::fp8_block: return fmt::format("fp8 {}x{} blocks", m.quant_block_rows, m.quant_block_cols);
    case WeightQuant::mxfp4: return m.quant_skips_attention ? "mxfp4 (experts)" : "mxfp4";
    case WeightQuant::none: break;
  }
  return "bf16";
}

Document models_document() {
  Document doc;
  doc.title = "Bundled models";
  Table t{"models", "Models (KV bytes per token at bf16, all layers, windows not applied)",
          {{"name", "name", Unit::text},
           {"model", "model", Unit::text},
           {"attention", "attention", Unit::text},
           {"layers", "layers", Unit::count},
           {"hidden_size", "hidden", Unit::count},
           {"query_heads", "q heads", Unit::count},
           {"kv_heads", "kv heads", Unit::count},
           {"sliding_layers", "sliding", Unit::count},
           {"params_total", "params", Unit::params},
           {"params_active", "active", Unit::params},
           {"kv_bytes_per_token", "KV/token", Unit::bytes},
           {"weights", "weights", Unit::text},
           {"max_position_embeddings", "max ctx", Unit::count}},
          {}};
  for (const BundledEntry& e : bundled_models()) {
    const ModelSpec m = load_model_file(e.path, e.display, {}, shown_path(e.path));
    const ParamCounts p = count_params(m);
    std::int64_t sliding = 0;
    for (const auto& l : m.layers) sliding += l.sliding ? 1 : 0;
    t.rows.push_back({e.short_name, e.display, std::string(to_string(m.attention)), m.num_layers(), m.hidden, m.heads,
                      m.is_mla() ? std::int64_t{1} : m.kv_heads, sliding, p.total.value, p.active.value,
                      (kv_bytes_per_token(m, KvDtype::bf16).total() + indexer_bytes_per_token(m)).value,
                      weights_label(m), m.max_position_embeddings});
  }
  doc.tables.push_back(std::move(t));
  doc.notes.push_back("MLA models store one shared latent per token per layer, so their KV heads read 1.");
  doc.notes.push_back("Use a name with --model (case-insensitive), or pass any config.json or folder holding one.");
  return doc;
}

Value peak(const HardwareSpec& hw, DType d) {
  if (auto p = hw.peak_flops(d)) return *p;
  return std::monostate{};
}

Document gpus_document() {
  Document doc;
  doc.title = "Bundled GPUs";
  Table t{"gpus", "GPUs (dense peaks; * marks a row with unconfirmed numbers)",
          {{"name", "name", Unit::text},
           {"gpu", "gpu", Unit::text},
           {"memory_bytes", "memory", Unit::bytes},
           {"memory_bandwidth_bytes_per_s", "bandwidth", Unit::bytes_per_s},
           {"bf16_flops_per_s", "bf16", Unit::flops_per_s},
           {"fp8_flops_per_s", "fp8", Unit::flops_per_s},
           {"fp4_flops_per_s", "fp4", Unit::flops_per_s},
           {"ridge_bf16_flop_per_byte", "bf16 ridge", Unit::flop_per_byte},
           {"sm_count", "SMs/CUs", Unit::count},
           {"unconfirmed_fields", "unconfirmed", Unit::text}},
          {}};
  for (const BundledEntry& e : bundled_gpus()) {
    const HardwareSpec hw = load_hardware_file(e.path, shown_path(e.path));
    std::string unconfirmed;
    for (const auto& u : hw.unconfirmed) unconfirmed += (unconfirmed.empty() ? "" : " ") + u;
    Value ridge = std::monostate{};
    if (auto r = hw.ridge_flop_per_byte(DType::bf16)) ridge = *r;
    t.rows.push_back({e.short_name, hw.name + (hw.unconfirmed.empty() ? "" : " *"), hw.memory_capacity.value,
                      hw.memory_bandwidth_bytes_per_s, peak(hw, DType::bf16), peak(hw, DType::fp8), peak(hw, DType::fp4),
                      ridge, hw.sm_count, unconfirmed.empty() ? std::string("-") : unconfirmed});
  }
  doc.tables.push_back(std::move(t));
  doc.notes.push_back("Every number has a source in its hardware/*.json file; the last column names the fields whose numbers are not confirmed.");
  return doc;
}

}  // namespace

void register_list_commands(CLI::App& app) {
  auto format = std::make_shared<std::string>("table");
  CLI::App* models = app.add_subcommand("models", "list the bundled model configs with their key figures");
  add_format_flag(models, *format);
  models->callback([format] { emit(models_document(), *format); });

  auto gformat = std::make_shared<std::string>("table");
  CLI::App* gpus = app.add_subcommand("gpus", "list the bundled GPU specs with their key figures");
  add_format_flag(gpus, *gformat);
  gpus->callback([gformat] { emit(gpus_document(), *gformat); });
}

}  // namespace mlaplan::cli
