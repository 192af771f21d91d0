// mlaplan plan: the layouts and batches that fit and meet latency targets, the Pareto front, the best
// layout and the fewest GPUs for a request rate; or, with --sequences, the fewest GPUs that hold them.
#include <memory>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "flags.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/error.hpp"

namespace mlaplan::cli {

namespace {

struct PlanFlags {
  ModelFlags model;
  RooflineFlags roofline;
  ServingFlags serving;
  std::int64_t isl = 4096, osl = 1024;
  double ttft_ms = 0, tpot_ms = 0;
  std::int64_t max_gpus = 64;
  std::int64_t tp = 0, dp = 0, ep = 0;  // 0: searched
  double rate = 0;
  std::int64_t sequences = 0, context = 0;
  std::int64_t max_batch = 1024;
  std::string kv_dtype = "bf16";
  std::string weight_dtype;
  std::string format = "table";
};

Document plan(const PlanFlags& f, CLI::App* app, Context& ctx) {
  const ModelSpec m = f.model.load(ctx);
  const RooflineUsed r = f.roofline.resolve();
  const std::int64_t max_gpus = positive("--max-gpus", f.max_gpus, 4096);
  if ((max_gpus & (max_gpus - 1)) != 0) fail_flag("--max-gpus", std::to_string(max_gpus), "expected a power of two (layouts of 1, 2, 4, ... GPUs are tried)");
  const KvDtype kv = resolve_kv_dtype(ctx, f.kv_dtype, m);
  const std::optional<WeightDtype> wd = f.weight_dtype.empty() ? std::nullopt : std::optional<WeightDtype>(resolve_weight_dtype(f.weight_dtype));
  if (app->count("--sequences")) {
    for (const char* flag : {"--ttft-ms", "--tpot-ms", "--rate", "--isl", "--osl", "--engine", "--mtp", "--mtp-accept", "--moe-imbalance", "--tbo",
                             "--comm-sms", "--ll-sm-us-per-token", "--eager-launch-us", "--links-from", "--ep-mode", "--max-batch", "--dtype", "--eta-compute", "--eta-memory", "--sol", "--launch-us",
                             "--tp", "--dp", "--ep"})
      if (app->count(flag)) fail_flag(flag, app->get_option(flag)->as<std::string>(), "--sequences asks the memory-only question; it takes no serving flags");
    if (!app->count("--context")) fail_flag("--sequences", std::to_string(f.sequences), "give --context, the tokens each sequence holds");
    CapacityRequest base;
    base.kv_dtype = kv;
    base.weights = wd ? weight_plan_for(m, *wd) : default_weight_plan(m);
    base.context = positive("--context", f.context, std::int64_t{1} << 40);
    warn_context(ctx, m, "--context", std::to_string(f.context), static_cast<double>(f.context));
    const std::int64_t n = positive("--sequences", f.sequences, std::int64_t{1} << 40);
    return memory_plan_document(m, r.hw, base, n, plan_memory(m, r.hw, base, n, max_gpus));
  }
  if (app->count("--context")) fail_flag("--context", std::to_string(f.context), "goes with --sequences; a serving plan takes --isl and --osl");
  PlanRequest req;
  // The layout is searched: resolve the serving flags against one GPU, then let the search set it.
  req.base = f.serving.resolve(m, r.hw, Parallelism{}, app, true);
  req.base.w.compute = r.compute;
  req.base.w.kv = kv;
  set_step_weights(req.base, m, wd);
  req.base.w.spec_tokens = req.base.mtp_draft;
  req.isl = positive("--isl", f.isl, std::int64_t{1} << 30);
  req.osl = positive("--osl", f.osl, std::int64_t{1} << 30);
  warn_context(ctx, m, "--isl", std::to_string(f.isl), static_cast<double>(f.isl + f.osl));
  for (auto [flag, v, target] : {std::tuple{"--ttft-ms", f.ttft_ms, &req.ttft_limit}, std::tuple{"--tpot-ms", f.tpot_ms, &req.tpot_limit}}) {
    if (!app->count(flag)) continue;
    if (!(v > 0 && v <= 1e7)) fail_flag(flag, fmt::format("{}", v), "expected milliseconds in (0, 1e7]");
    *target = Seconds{v * 1e-3};
  }
  if (app->count("--rate") && !(f.rate > 0 && f.rate <= 1e9)) fail_flag("--rate", fmt::format("{}", f.rate), "expected requests per second in (0, 1e9]");
  req.rate = f.rate;
  req.max_gpus = max_gpus;
  // A held TP or DP is a power of two within the budget; a held EP 1, or every rank of a MoE model.
  for (auto [flag, v, target] : {std::tuple{"--tp", f.tp, &req.tp}, std::tuple{"--dp", f.dp, &req.dp}, std::tuple{"--ep", f.ep, &req.ep}}) {
    if (!app->count(flag)) continue;
    *target = positive(flag, v, max_gpus);
    if (std::string_view(flag) != "--ep" && (v & (v - 1)) != 0) fail_flag(flag, std::to_string(v), "expected a power of two (the layouts plan tries)");
  }
  if (req.ep > 1 && !m.moe) fail_flag("--ep", std::to_string(req.ep), m.name + " has no routed experts to split");
  const std::int64_t max_batch = positive("--max-batch", f.max_batch, 1 << 20);
  req.batches = batch_ladder(max_batch);
  const PlanResult st = plan_layouts(m, r.hw, r.rf, req);
  if (st.rows.empty() && st.skipped.empty()) {
    // Every layout the budget allows was left out by the held parts.
    const std::string held = fmt::format("{}{}{}", req.tp ? fmt::format(" --tp {}", req.tp) : "", req.dp ? fmt::format(" --dp {}", req.dp) : "",
                                         req.ep ? fmt::format(" --ep {}", req.ep) : "");
    const char* flag = req.ep ? "--ep" : req.dp ? "--dp" : "--tp";
    fail_flag(flag, std::to_string(req.ep ? req.ep : req.dp ? req.dp : req.tp),
              fmt::format("no layout of at most {} GPUs has{} (TP x DP GPUs; EP 1 or every rank)", max_gpus, held));
  }
  return plan_document(m, r, req, st, req.base.engine_label);
}

}  // namespace

void register_plan_command(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<PlanFlags>();
  CLI::App* c = app.add_subcommand("plan", "layouts and batches that fit and meet TTFT/TPOT targets: Pareto front, best layout, GPUs for a rate");
  add_model_flags(c, f->model);
  add_roofline_flags(c, f->roofline);
  add_serving_flags(c, f->serving, true);
  c->add_option("--isl", f->isl, "input tokens per request")->capture_default_str();
  c->add_option("--osl", f->osl, "output tokens per request")->capture_default_str();
  c->add_option("--ttft-ms", f->ttft_ms, "time-to-first-token target in ms (default: none)");
  c->add_option("--tpot-ms", f->tpot_ms, "time-per-output-token target in ms (default: none)");
  c->add_option("--max-gpus", f->max_gpus, "GPU budget: layouts of 1, 2, 4, ... up to it")->capture_default_str();
  c->add_option("--tp", f->tp, "hold the tensor-parallel size (default: searched)");
  c->add_option("--dp", f->dp, "hold the data-parallel attention replicas (default: searched)");
  c->add_option("--ep", f->ep, "hold the expert-parallel size: 1 or every rank (default: searched)");
  c->add_option("--max-batch", f->max_batch, "largest batch per DP replica tried (the powers of two below it, and it)")->capture_default_str();
  c->add_option("--rate", f->rate, "requests per second to serve: the fewest GPUs that do");
  c->add_option("--sequences", f->sequences, "memory only: the fewest GPUs that hold this many sequences of --context tokens");
  c->add_option("--context", f->context, "with --sequences: tokens per sequence");
  c->add_option("--kv-dtype", f->kv_dtype, "fp32 | bf16 | fp16 | fp8 | fp8_flashmla | fp4")->capture_default_str();
  c->add_option("--weight-dtype", f->weight_dtype, "dtype of every linear weight (default: the config's quantization)");
  add_format_flag(c, f->format);
  c->callback([f, c, &ctx] { emit(ctx, plan(*f, c, ctx), f->format); });
}

}  // namespace mlaplan::cli
