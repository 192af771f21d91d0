// mlaplan capacity: weights per rank, the KV pool, and the tokens and sequences that fit.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "flags.hpp"
#include "mlaplan/core/study.hpp"
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
  std::int64_t max_batched_tokens = kDefaultBatchedTokens;
  double reserve_gib = -1;  // < 0: estimate from max_batched_tokens
  std::string format = "table";
};

Document capacity(const CapacityFlags& f) {
  const ModelSpec m = f.model.load();
  const HardwareSpec hw = load_gpu(f.gpu);
  CapacityRequest req;
  req.par = f.layout.resolve(m);
  if (!(f.mem_util > 0 && f.mem_util <= 1)) fail_flag("--mem-util", fmt::format("{}", f.mem_util), "expected a fraction in (0, 1]");
  if (!std::isfinite(f.reserve_gib) || f.reserve_gib > 1e6) fail_flag("--reserve-gib", fmt::format("{}", f.reserve_gib), "expected a finite number of GiB");
  req.kv_dtype = resolve_kv_dtype(f.kv_dtype, m);
  req.weights = f.weight_dtype.empty() ? default_weight_plan(m) : weight_plan_for(m, resolve_weight_dtype(f.weight_dtype));
  req.mem_util = f.mem_util;
  req.context = positive("--context", f.context, std::int64_t{1} << 40);
  req.block_size = positive("--block-size", f.block_size, 1 << 20);
  const std::int64_t mbt = positive("--max-batched-tokens", f.max_batched_tokens, std::int64_t{1} << 30);
  auto reserve = [&](const Parallelism& p) {
    return f.reserve_gib >= 0 ? Bytes{static_cast<std::int64_t>(f.reserve_gib * static_cast<double>(kGiB))} : activation_reserve_estimate(m, p, mbt);
  };
  const std::string note = f.reserve_gib >= 0
                               ? fmt::format("Activation reserve set by --reserve-gib {}.", f.reserve_gib)
                               : fmt::format("Activation reserve estimated for a {}-token forward pass (2 B activations); set it with --reserve-gib.", mbt);
  return capacity_document(m, hw, capacity_study(m, hw, req, reserve), note);
}

}  // namespace

void register_capacity_command(CLI::App& app, Context& ctx) {
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
  c->callback([f, &ctx] { emit(ctx, capacity(*f), f->format); });
}

}  // namespace mlaplan::cli
