// mlaplan capacity: weights per rank, the KV pool, and the tokens and sequences that fit.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "common.hpp"
#include "mlaplan/core/capacity.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan::cli {

namespace {

struct CapacityFlags {
  ModelFlags model;
  LayoutFlags layout;
  std::string gpu = "h200";
  std::string kv_dtype = "bf16";
  std::string weight_dtype;  // empty: what the config's quantization says
  double mem_util = 0.9;
  std::int64_t context = 32768;
  std::int64_t block_size = 1;
  std::int64_t max_batched_tokens = 8192;
  double reserve_gib = -1;  // < 0: estimate from max_batched_tokens
  std::string format = "table";
};

std::string layout_name(const Parallelism& p) { return fmt::format("TP{} DP{} EP{}", p.tp, p.dp, p.ep); }

Document capacity_document(const CapacityFlags& f) {
  const ModelSpec m = f.model.load();
  const HardwareSpec hw = load_gpu(f.gpu);
  const Parallelism par = f.layout.resolve(m);
  if (!(f.mem_util > 0 && f.mem_util <= 1)) fail_flag("--mem-util", fmt::format("{}", f.mem_util), "expected a fraction in (0, 1]");
  if (!std::isfinite(f.reserve_gib) || f.reserve_gib > 1e6) fail_flag("--reserve-gib", fmt::format("{}", f.reserve_gib), "expected a finite number of GiB");
  CapacityRequest req;
  req.kv_dtype = resolve_kv_dtype(f.kv_dtype, m);
  req.weights = f.weight_dtype.empty() ? default_weight_plan(m) : weight_plan_for(m, resolve_weight_dtype(f.weight_dtype));
  req.par = par;
  req.mem_util = f.mem_util;
  req.context = positive("--context", f.context, std::int64_t{1} << 40);
  req.block_size = positive("--block-size", f.block_size, 1 << 20);
  const std::int64_t mbt = positive("--max-batched-tokens", f.max_batched_tokens, std::int64_t{1} << 30);

  auto reserve_for = [&](const Parallelism& p) {
    return f.reserve_gib >= 0 ? Bytes{static_cast<std::int64_t>(f.reserve_gib * static_cast<double>(kGiB))}
                              : activation_reserve_estimate(m, p, mbt);
  };
  req.reserve = reserve_for(par);
  const CapacityResult r = plan_capacity(m, hw, req);

  Document doc;
  doc.title = fmt::format("Capacity of {} on {} x {} ({})", m.name, par.ranks(), hw.name, layout_name(par));
  const std::string wlabel = req.weights.linear == req.weights.dense
                                 ? std::string(to_string(req.weights.linear))
                                 : fmt::format("{} linear{}, {} other", to_string(req.weights.linear),
                                               req.weights.quantize_attention ? "" : " (attention kept dense)",
                                               to_string(req.weights.dense));
  doc.fields = {
      {"model", "model", m.name, Unit::text},
      {"gpu", "GPU", hw.name, Unit::text},
      {"tp", "tensor parallel", par.tp, Unit::count},
      {"dp", "data-parallel attention", par.dp, Unit::count},
      {"ep", "expert parallel", par.ep, Unit::count},
      {"ranks", "GPUs", par.ranks(), Unit::count},
      {"weight_dtype", "weights", wlabel, Unit::text},
      {"kv_dtype", "KV dtype", std::string(to_string(req.kv_dtype)), Unit::text},
      {"mem_util", "memory utilisation", f.mem_util, Unit::fraction},
      {"context_tokens", "context per sequence", req.context, Unit::count},
      {"block_size", "page block (tokens)", req.block_size, Unit::count},
      {"params_total", "parameters (incl. MTP)", r.params.total.value, Unit::params},
      {"params_main", "parameters, main model", r.params.main.value, Unit::params},
      {"params_mtp", "parameters, MTP modules", r.params.mtp.value, Unit::params},
      {"params_active", "parameters active per token", r.params.active.value, Unit::params},
      {"memory_bytes_per_rank", "memory per GPU", r.memory_per_rank.value, Unit::bytes},
      {"usable_bytes_per_rank", "usable (x utilisation)", r.usable_per_rank.value, Unit::bytes},
      {"weight_bytes_per_rank", "weights per GPU", r.weight_bytes_per_rank.value, Unit::bytes},
      {"reserve_bytes_per_rank", "activation reserve per GPU", r.reserve_bytes_per_rank.value, Unit::bytes},
      {"kv_pool_bytes_per_rank", "KV pool per GPU", r.kv_pool_bytes_per_rank.value, Unit::bytes},
      {"kv_bytes_per_token_per_rank", "KV bytes per token per GPU", r.kv_bytes_per_token_per_rank.value, Unit::bytes},
      {"max_tokens_per_rank", "tokens per GPU", r.max_tokens_per_rank, Unit::count},
      {"max_tokens_cluster", "tokens in the deployment", r.max_tokens_cluster, Unit::count},
      {"sequence_bytes_per_rank", "KV bytes per sequence per GPU", r.sequence_bytes_per_rank.value, Unit::bytes},
      {"sequences_per_rank", "sequences per DP replica", r.sequences_per_rank, Unit::count},
      {"max_sequences", "concurrent sequences", r.max_sequences, Unit::count},
      {"fits", "fits", r.fits, Unit::text},
      {"reason", "reason", r.reason.empty() ? std::string("-") : r.reason, Unit::text},
  };

  Table weights{"weights", "Weights by group",
                {{"group", "group", Unit::text},
                 {"params", "params", Unit::params},
                 {"bytes", "bytes (all ranks' share)", Unit::bytes},
                 {"bytes_per_rank", "bytes per GPU", Unit::bytes}},
                {}};
  std::map<WeightGroup, std::pair<Bytes, Bytes>> bytes;
  for (const WeightTensor& t : weight_tensors(m)) {
    bytes[t.group].first += tensor_bytes(t, req.weights);
    bytes[t.group].second += tensor_bytes_per_rank(m, t, req.weights, par);
  }
  for (const auto& [g, p] : r.params.by_group)
    weights.rows.push_back({std::string(to_string(g)), p.value, bytes[g].first.value, bytes[g].second.value});
  doc.tables.push_back(std::move(weights));

  // The same GPUs laid out three ways: attention TP, TP with expert parallelism, and
  // data-parallel attention with expert parallelism.
  const std::int64_t R = par.ranks();
  std::vector<Parallelism> layouts{par};
  auto add_layout = [&](Parallelism p) {
    if (p.tp == par.tp && p.dp == par.dp && p.ep == par.ep) return;
    if (m.heads % p.tp != 0) return;
    if (!m.is_mla() && m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0) return;
    if (p.ep > 1 && (!m.moe || p.ep > m.moe->routed_experts)) return;
    layouts.push_back(p);
  };
  add_layout({R, 1, 1});
  if (m.moe) add_layout({R, 1, R});
  add_layout({1, R, m.moe ? R : 1});
  Table lay{"layouts", fmt::format("The same {} GPUs laid out differently", R),
            {{"layout", "layout", Unit::text},
             {"weight_bytes_per_rank", "weights/GPU", Unit::bytes},
             {"kv_pool_bytes_per_rank", "KV pool/GPU", Unit::bytes},
             {"kv_bytes_per_token_per_rank", "KV/token/GPU", Unit::bytes},
             {"max_tokens_per_rank", "tokens/GPU", Unit::count},
             {"max_tokens_cluster", "tokens in total", Unit::count},
             {"max_sequences", "sequences", Unit::count},
             {"fits", "fits", Unit::text}},
            {}};
  for (const Parallelism& p : layouts) {
    CapacityRequest q = req;
    q.par = p;
    q.reserve = reserve_for(p);
    const CapacityResult x = plan_capacity(m, hw, q);
    lay.rows.push_back({layout_name(p) + (&p == &layouts.front() ? " (requested)" : ""), x.weight_bytes_per_rank.value,
                        x.kv_pool_bytes_per_rank.value, x.kv_bytes_per_token_per_rank.value, x.max_tokens_per_rank,
                        x.max_tokens_cluster, x.max_sequences, x.fits});
  }
  doc.tables.push_back(std::move(lay));

  doc.notes = m.notes;
  doc.notes.push_back(f.reserve_gib >= 0
                          ? fmt::format("Activation reserve set by --reserve-gib {}.", f.reserve_gib)
                          : fmt::format("Activation reserve estimated for a {}-token forward pass (2 B activations); set it with --reserve-gib.", mbt));
  if (m.is_mla())
    doc.notes.push_back("The MLA latent is replicated on every TP rank, so TP adds no KV capacity; data-parallel attention gives each GPU its own sequences.");
  doc.notes.push_back(fmt::format("GPU numbers from {}; memory: {}", hw.source,
                                  hw.sources.count("memory_capacity") ? hw.sources.at("memory_capacity") : "?"));
  return doc;
}

}  // namespace

void register_capacity_command(CLI::App& app) {
  auto f = std::make_shared<CapacityFlags>();
  CLI::App* c = app.add_subcommand("capacity", "weights per GPU, the KV pool, and the tokens and sequences that fit");
  add_model_flags(c, f->model);
  c->add_option("--gpu,-g", f->gpu, "bundled GPU name or a hardware JSON file")->capture_default_str();
  add_layout_flags(c, f->layout, true);
  c->add_option("--kv-dtype", f->kv_dtype, "fp32 | bf16 | fp16 | fp8 | fp8_flashmla | fp4")->capture_default_str();
  c->add_option("--weight-dtype", f->weight_dtype, "fp32 | bf16 | fp16 | fp8 | mxfp4 (default: the config's quantization, else bf16)");
  c->add_option("--mem-util", f->mem_util, "fraction of GPU memory the engine may use")->capture_default_str();
  c->add_option("--context", f->context, "tokens per sequence for the sequence count")->capture_default_str();
  c->add_option("--block-size", f->block_size, "page size in tokens: vLLM 16, FlashMLA 64 (1 = unpaged)")->capture_default_str();
  c->add_option("--max-batched-tokens", f->max_batched_tokens, "tokens per forward pass for the activation estimate")->capture_default_str();
  c->add_option("--reserve-gib", f->reserve_gib, "activation/workspace reserve per GPU in GiB (default: estimated)");
  add_format_flag(c, f->format);
  c->callback([f] { emit(capacity_document(*f), f->format); });
}

}  // namespace mlaplan::cli
