// mlaplan capacity: weights per rank, the KV pool, and the tokens and sequences that fit.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "flags.hpp"
#include "mlaplan/core/study.hpp"
#include "mlaplan/io/documents.hpp"
#include "mlaplan/io/engine_json.hpp"
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
  double mem_util = -1;               // < 0: 0.9, or the engine profile's default
  std::int64_t context = 32768;
  std::int64_t block_size = 0;         // 0: unpaged, or the engine profile's default
  std::int64_t max_batched_tokens = 0; // 0: kDefaultBatchedTokens, or the engine's default
  double reserve_gib = -1;  // < 0: estimate from max_batched_tokens
  std::string engine;       // empty: mlaplan's plain model
  std::int64_t max_model_len = 0, max_num_seqs = 0, mtp = -1;
  bool enforce_eager = false, no_mtp = false;
  bool explain = false;
  std::string format = "table";
};

// `--engine`: the pool that engine's own accounting gives.
Document engine_capacity_for(const CapacityFlags& f, CLI::App* app, Context& ctx) {
  if (app->count("--reserve-gib")) fail_flag("--reserve-gib", fmt::format("{}", f.reserve_gib), "the engine's profile sizes activations; leave --reserve-gib out with --engine");
  const ModelSpec m = f.model.load(ctx);
  const HardwareSpec hw = load_gpu(f.gpu);
  const EngineProfile prof = load_engine(f.engine);
  const Parallelism par = f.layout.resolve(m);
  // Settings the engine's rule does not read are refused rather than ignored.
  const bool sglang = prof.family == EngineFamily::sglang, reserve_rule = prof.has("gpu_tiers");
  auto unread = [&](const char* flag, bool reads) {
    if (app->count(flag) && !reads)
      fail_flag(flag, app->get_option(flag)->as<std::string>(), fmt::format("the {} profile's rule does not read it", prof.label()));
  };
  unread("--max-num-seqs", !sglang);
  unread("--max-batched-tokens", !sglang || reserve_rule);
  unread("--enforce-eager", prof.family == EngineFamily::vllm || reserve_rule);
  EngineSettings s;
  if (app->count("--mem-util")) {
    if (!(f.mem_util > 0 && f.mem_util <= 1)) fail_flag("--mem-util", fmt::format("{}", f.mem_util), "expected a fraction in (0, 1]");
    s.mem_util = f.mem_util;
  }
  if (app->count("--max-model-len")) {
    s.max_model_len = positive("--max-model-len", f.max_model_len, std::int64_t{1} << 40);
    warn_context(ctx, m, "--max-model-len", std::to_string(f.max_model_len), static_cast<double>(f.max_model_len));
  }
  if (app->count("--max-num-seqs")) s.max_num_seqs = positive("--max-num-seqs", f.max_num_seqs, std::int64_t{1} << 30);
  if (app->count("--max-batched-tokens")) s.max_batched_tokens = positive("--max-batched-tokens", f.max_batched_tokens, std::int64_t{1} << 30);
  if (app->count("--block-size")) s.block_size = positive("--block-size", f.block_size, 1 << 20);
  if (f.enforce_eager) s.enforce_eager = true;
  if (f.no_mtp) s.mtp = 0;
  if (app->count("--mtp")) {
    if (f.mtp < 1 || f.mtp > 64) fail_flag("--mtp", fmt::format("{}", f.mtp), "expected speculative tokens from 1 to 64");
    if (m.mtp_layers <= 0) fail_flag("--mtp", fmt::format("{}", f.mtp), fmt::format("{} has no MTP module (num_nextn_predict_layers is 0)", m.name));
    s.mtp = f.mtp;
  }
  const KvDtype kv = resolve_kv_dtype(ctx, f.kv_dtype, m);
  const WeightPlan w = f.weight_dtype.empty() ? default_weight_plan(m) : weight_plan_for(m, resolve_weight_dtype(f.weight_dtype));
  const std::int64_t context = app->count("--context") ? positive("--context", f.context, std::int64_t{1} << 40) : 0;
  warn_context(ctx, m, "--context", std::to_string(context), static_cast<double>(context));
  const EngineCapacity e = engine_capacity(m, hw, prof, w, par, kv, s, context);
  Document doc = engine_capacity_document(m, hw, par, kv, e, context);
  if (f.explain) add_explain_table(doc, explain_engine_capacity(e));
  return doc;
}

// An answer that a default decides: one line when flipping the weight dtype back to the
// checkpoint's own, or the default bf16 cache to fp8, turns "does not fit" into "fits" or back.
void warn_flipped_defaults(Context& ctx, const CapacityFlags& f, CLI::App* app, const ModelSpec& m, const HardwareSpec& hw, const CapacityStudy& st) {
  const CapacityResult& r = st.result;
  auto verdict = [](const CapacityResult& x) {
    return x.fits() ? fmt::format("fits {} sequence{}", x.max_sequences, x.max_sequences == 1 ? "" : "s")
                    : fmt::format("does not fit ({})", x.verdict.reason);
  };
  if (!f.weight_dtype.empty()) {
    CapacityRequest own = st.request;
    own.weights = default_weight_plan(m);
    if (own.weights.linear != st.request.weights.linear) {
      const CapacityResult alt = plan_capacity(m, hw, own);
      if (alt.fits() != r.fits())
        warn(ctx, flag_message("--weight-dtype", f.weight_dtype,
                               fmt::format("{}; with the checkpoint's own {} weights it {}", verdict(r), to_string(own.weights.linear), verdict(alt))));
    }
  }
  if (!app->count("--kv-dtype") && !r.fits() && r.kv_pool_bytes_per_rank.value > 0) {
    CapacityRequest fp8 = st.request;
    fp8.kv_dtype = KvDtype::fp8;
    const CapacityResult alt = plan_capacity(m, hw, fp8);
    if (alt.fits())
      warn(ctx, flag_message("--kv-dtype", f.kv_dtype, fmt::format("the default {}; --kv-dtype fp8 {}", verdict(r), verdict(alt))));
  }
}

Document capacity(const CapacityFlags& f, CLI::App* app, Context& ctx) {
  if (!f.engine.empty()) return engine_capacity_for(f, app, ctx);
  for (const char* flag : {"--max-model-len", "--max-num-seqs", "--enforce-eager", "--mtp", "--no-mtp"})
    if (app->count(flag)) fail_flag(flag, app->get_option(flag)->as<std::string>(), "an engine setting: give --engine vllm|sglang|trtllm[@VERSION] with it");
  const ModelSpec m = f.model.load(ctx);
  const HardwareSpec hw = load_gpu(f.gpu);
  CapacityRequest req;
  req.par = f.layout.resolve(m);
  const double mem_util = app->count("--mem-util") ? f.mem_util : 0.9;
  if (!(mem_util > 0 && mem_util <= 1)) fail_flag("--mem-util", fmt::format("{}", f.mem_util), "expected a fraction in (0, 1]");
  if (app->count("--reserve-gib") && !(f.reserve_gib >= 0 && f.reserve_gib <= 1e6))
    fail_flag("--reserve-gib", fmt::format("{}", f.reserve_gib), "expected GiB from 0 to 10^6");
  req.kv_dtype = resolve_kv_dtype(ctx, f.kv_dtype, m);
  req.weights = f.weight_dtype.empty() ? default_weight_plan(m) : weight_plan_for(m, resolve_weight_dtype(f.weight_dtype));
  req.mem_util = mem_util;
  req.context = positive("--context", f.context, std::int64_t{1} << 40);
  warn_context(ctx, m, "--context", std::to_string(req.context), static_cast<double>(req.context));
  req.block_size = app->count("--block-size") ? positive("--block-size", f.block_size, 1 << 20) : 1;
  const std::int64_t mbt = app->count("--max-batched-tokens") ? positive("--max-batched-tokens", f.max_batched_tokens, std::int64_t{1} << 30) : kDefaultBatchedTokens;
  auto reserve = [&](const Parallelism& p) {
    return f.reserve_gib >= 0 ? Bytes{static_cast<std::int64_t>(f.reserve_gib * static_cast<double>(kGiB))} : activation_reserve_estimate(m, p, mbt);
  };
  const std::string note = f.reserve_gib >= 0
                               ? fmt::format("Activation reserve set by --reserve-gib {}.", f.reserve_gib)
                               : fmt::format("Activation reserve estimated for a {}-token forward pass (2 B activations); set it with --reserve-gib.", mbt);
  const CapacityStudy st = capacity_study(m, hw, req, reserve);
  warn_flipped_defaults(ctx, f, app, m, hw, st);
  Document doc = capacity_document(m, hw, st, note);
  if (f.explain) add_explain_table(doc, explain_capacity(m, hw, st, mbt, f.reserve_gib >= 0));
  return doc;
}

}  // namespace

void register_capacity_command(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<CapacityFlags>();
  CLI::App* c = app.add_subcommand("capacity", "weights per GPU, the KV pool, and the tokens and sequences that fit");
  add_model_flags(c, f->model);
  c->add_option("--gpu,-g", f->gpu, "bundled GPU name or a hardware JSON file")->capture_default_str();
  add_layout_flags(c, f->layout, true);
  c->add_option("--kv-dtype", f->kv_dtype, "fp32 | bf16 | fp16 | fp8 | fp8_flashmla | fp4")->capture_default_str();
  c->add_option("--weight-dtype", f->weight_dtype, "fp32 | bf16 | fp16 | fp8 | mxfp4 | int4 | int8 (default: the config's quantization, else bf16)");
  c->add_option("--mem-util", f->mem_util, "fraction of GPU memory the engine may use (default 0.9; with --engine: gpu_memory_utilization / mem_fraction_static / free_gpu_memory_fraction, default the profile's)");
  c->add_option("--context", f->context, "tokens per sequence for the sequence count (default 32768; with --engine, max_model_len)");
  c->add_option("--block-size", f->block_size, "page size in tokens: vLLM 16, FlashMLA 64 (default: unpaged; with --engine the profile's)");
  c->add_option("--max-batched-tokens", f->max_batched_tokens, "tokens per forward pass for the activation estimate (default 8192; with --engine: max_num_batched_tokens / chunked_prefill_size / max_num_tokens)");
  c->add_option("--engine", f->engine, "vllm | sglang | trtllm[@VERSION] or a profile file: the pool that engine allocates (engines/)");
  c->add_option("--max-model-len", f->max_model_len, "with --engine: max_model_len (default: the config's max_position_embeddings)");
  c->add_option("--max-num-seqs", f->max_num_seqs, "with --engine: max_num_seqs / max_batch_size (the profiling sampler's rows)");
  c->add_flag("--enforce-eager", f->enforce_eager, "with --engine: no CUDA graphs");
  c->add_option("--mtp", f->mtp, "with --engine: speculative decoding with the MTP module, N draft tokens (loads its weights and KV layer)");
  c->add_flag("--no-mtp", f->no_mtp, "with --engine: no MTP module (the engines' default)");
  c->add_option("--reserve-gib", f->reserve_gib, "activation/workspace reserve per GPU in GiB (default: estimated)");
  c->add_flag("--explain", f->explain, "each number with its formula and the values substituted");
  add_format_flag(c, f->format);
  c->callback([f, c, &ctx] {
    if (c->count("--mtp") && f->no_mtp) fail_flag("--no-mtp", "true", "give --mtp N or --no-mtp, not both");
    emit(ctx, capacity(*f, c, ctx), f->format);
  });
}

}  // namespace mlaplan::cli
