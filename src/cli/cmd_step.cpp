// mlaplan step: one prefill or decode step of the whole model, by component, with TTFT or TPOT,
// tokens per second per GPU and the memory check.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "flags.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"

namespace mlaplan::cli {

void add_serving_flags(CLI::App* app, ServingFlags& f, bool layout_searched) {
  app->add_option("--engine", f.engine,
                  "vllm | sglang | trtllm[@VERSION]: its attention dispatch rule and its per-step overheads (engines/); none: the fastest "
                  "attention path and no overhead")
      ->capture_default_str();
  if (!layout_searched) {
    app->add_option("--gpus", f.gpus, "GPUs in the deployment (default TP x DP; must equal it)");
    app->add_option("--nodes", f.nodes, "nodes the GPUs span (default: as few as the GPU's scale-up domain allows)");
  }
  app->add_option("--mtp", f.mtp, "speculative decoding with the MTP module: draft tokens per step (default 0; 1 with --mtp-accept)");
  app->add_option("--mtp-accept", f.mtp_accept, "probability each MTP draft token is accepted (default 0.8 when --mtp is given)");
  app->add_option("--moe-imbalance", f.moe_imbalance, "routed pairs on the busiest EP rank over the mean (default: the engine profile's at this EP size, else 1)");
  app->add_flag("--tbo", f.tbo, "two-batch overlap: communication of one micro-batch hidden under the other's compute");
  app->add_option("--comm-sms", f.comm_sms, "with --tbo: SMs the normal all-to-all holds while compute overlaps it (default: the engine profile's, else 0)");
  app->add_option("--ll-sm-us-per-token", f.ll_sm_us_per_token,
                  "with --tbo: SM time of the low-latency dispatch and combine kernels per token a rank dispatches and MoE layer, microseconds (default: the "
                  "engine profile's, else 0)");
  app->add_option("--ep-mode", f.ep_mode, "auto | normal | low-latency: DeepEP's all-to-all kind (auto: normal for prefill, low latency for decode)")
      ->capture_default_str();
  app->add_option("--eager-launch-us", f.eager_launch_us,
                  "host time to launch one kernel when the engine runs steps without CUDA graphs, microseconds: the GPU waits where the "
                  "host launches kernels more slowly than it runs them (default 0: launches hidden, as under CUDA graphs; --launch-us is "
                  "a GPU cost per op instead)");
  app->add_option("--links-from", f.links_from,
                  "ENGINE[@VERSION] | none: time the communication with that engine profile's link and all-to-all efficiencies and latencies "
                  "(sglang: its DeepEP fit), not its overheads (default: --engine's)");
}

StepRequest ServingFlags::resolve(const ModelSpec& m, const HardwareSpec& hw, const Parallelism& par, CLI::App* app, bool layout_searched) const {
  StepRequest req;
  req.w.par = par;
  const std::int64_t ranks = par.ranks();
  auto given = [&](const char* flag) { return app->get_option_no_throw(flag) != nullptr && app->count(flag) > 0; };
  if (!layout_searched) {
    if (given("--gpus") && gpus != ranks)
      fail_flag("--gpus", std::to_string(gpus), fmt::format("the layout {} runs on {} GPUs (TP x DP)", to_string(par), ranks));
    if (ranks > 1 && hw.scale_up_domain_gpus <= 0 && !given("--nodes"))
      fail_key(hw.source, "scale_up_domain_gpus", "(absent)", fmt::format("{} GPUs need the GPUs per scale-up domain; give --nodes", ranks));
    std::int64_t per_node = hw.scale_up_domain_gpus > 0 ? std::min(hw.scale_up_domain_gpus, ranks) : ranks;
    if (given("--nodes")) {
      if (nodes < 1 || nodes > ranks || ranks % nodes != 0)
        fail_flag("--nodes", std::to_string(nodes), fmt::format("expected a divisor of the {} GPUs", ranks));
      per_node = ranks / nodes;
      if (hw.scale_up_domain_gpus > 0 && per_node > hw.scale_up_domain_gpus)
        fail_flag("--nodes", std::to_string(nodes), fmt::format("{} GPUs per node exceed {}'s scale-up domain of {}", per_node, hw.name, hw.scale_up_domain_gpus));
    }
    req.gpus_per_node = per_node;
    if (ranks > per_node && hw.scale_out_bandwidth_per_direction.value <= 0)
      fail_key(hw.source, "scale_out_bandwidth_gb_per_s_per_direction", "(absent)", fmt::format("{} GPUs span more than one node", ranks));
    if (ranks > 1 && hw.scale_up_bandwidth_per_direction.value <= 0)
      fail_key(hw.source, "scale_up_bandwidth_gb_per_s_per_direction", "(absent)", fmt::format("{} GPUs communicate", ranks));
  }

  const StepEngine e = load_step_engine(engine, m);
  apply_step_engine(req, e);
  req.engine_label = e.label;
  if (app->count("--moe-imbalance")) {
    if (!(moe_imbalance >= 1 && moe_imbalance <= 1000)) fail_flag("--moe-imbalance", fmt::format("{}", moe_imbalance), "expected a ratio from 1 to 1000");
    if (!m.moe) fail_flag("--moe-imbalance", fmt::format("{}", moe_imbalance), fmt::format("{} has no routed experts", m.name));
    if (!layout_searched && par.ep <= 1) fail_flag("--moe-imbalance", fmt::format("{}", moe_imbalance), "the busiest EP rank: give --ep > 1");
    req.moe_imbalance = moe_imbalance;
  }
  req.links = links_for(hw, app->count("--links-from") ? load_step_engine(links_from, m, "--links-from").overheads : req.overheads);
  const bool accept_given = app->count("--mtp-accept") > 0;
  if (app->count("--mtp") || accept_given) {
    const std::int64_t n = app->count("--mtp") ? mtp : 1;
    if (n < 0 || n > 16) fail_flag("--mtp", std::to_string(mtp), "expected draft tokens from 0 to 16");
    if (n > 0 && m.mtp_layers <= 0) fail_flag(app->count("--mtp") ? "--mtp" : "--mtp-accept", app->count("--mtp") ? std::to_string(mtp) : fmt::format("{}", mtp_accept),
                                              fmt::format("{} has no MTP module (num_nextn_predict_layers is 0)", m.name));
    if (accept_given && !(mtp_accept >= 0 && mtp_accept <= 1)) fail_flag("--mtp-accept", fmt::format("{}", mtp_accept), "expected a probability in [0, 1]");
    if (accept_given && n == 0) fail_flag("--mtp-accept", fmt::format("{}", mtp_accept), "--mtp 0 has no draft tokens to accept");
    req.mtp_draft = n;
    req.mtp_accept = accept_given ? mtp_accept : 0.8;
  }
  req.two_batch_overlap = tbo;
  if (ep_mode == "auto") req.ep_mode = EpMode::automatic;
  else if (ep_mode == "normal") req.ep_mode = EpMode::normal;
  else if (ep_mode == "low-latency" || ep_mode == "low_latency") req.ep_mode = EpMode::low_latency;
  else fail_flag("--ep-mode", ep_mode, "expected auto, normal or low-latency");
  if (!layout_searched && app->count("--ep-mode") && par.ep <= 1) fail_flag("--ep-mode", ep_mode, "no all-to-all without --ep > 1");
  if (!layout_searched && tbo && par.ranks() <= 1) fail_flag("--tbo", "true", "one GPU has no communication to overlap");
  if (app->count("--comm-sms")) {
    if (!tbo) fail_flag("--comm-sms", std::to_string(comm_sms), "applies with --tbo");
    if (comm_sms < 0 || comm_sms >= hw.sm_count) fail_flag("--comm-sms", std::to_string(comm_sms), fmt::format("expected SMs from 0 to {} (the GPU's)", hw.sm_count - 1));
    if (req.ep_mode == EpMode::low_latency) fail_flag("--comm-sms", std::to_string(comm_sms), "low-latency all-to-all holds no SMs; --comm-sms is for the normal kind");
    req.comm_sms = static_cast<double>(comm_sms);
  }
  if (app->count("--ll-sm-us-per-token")) {
    const std::string v = fmt::format("{}", ll_sm_us_per_token);
    if (!tbo) fail_flag("--ll-sm-us-per-token", v, "applies with --tbo");
    if (!(ll_sm_us_per_token >= 0 && ll_sm_us_per_token <= 1e6)) fail_flag("--ll-sm-us-per-token", v, "expected microseconds per token from 0 to 1000000");
    if (req.ep_mode == EpMode::normal) fail_flag("--ll-sm-us-per-token", v, "the normal all-to-all holds SMs for its whole transfer; --ll-sm-us-per-token is for the low-latency kind");
    if (!m.moe) fail_flag("--ll-sm-us-per-token", v, fmt::format("{} has no routed experts to dispatch", m.name));
    if (!layout_searched && par.ep <= 1) fail_flag("--ll-sm-us-per-token", v, "no all-to-all without --ep > 1");
    req.ll_sm_per_token = Seconds{ll_sm_us_per_token * 1e-6};
  }
  if (app->count("--eager-launch-us")) {
    if (!(eager_launch_us >= 0 && eager_launch_us <= 1e6))
      fail_flag("--eager-launch-us", fmt::format("{}", eager_launch_us), "expected microseconds per kernel from 0 to 1000000");
    req.eager_launch = Seconds{eager_launch_us * 1e-6};
  }
  return req;
}

namespace {

struct StepFlags {
  ModelFlags model;
  LayoutFlags layout;
  RooflineFlags roofline;
  ServingFlags serving;
  std::string phase = "decode";
  std::int64_t batch = 1;
  std::int64_t context = 4096;
  double query = 1, prefix = 0;
  std::string mix;
  std::string kv_dtype = "bf16";
  std::string weight_dtype;
  std::string format = "table";
};

Document step(const StepFlags& f, CLI::App* app, Context& ctx) {
  const ModelSpec m = f.model.load(ctx);
  const Parallelism par = f.layout.resolve(m);
  const RooflineUsed r = f.roofline.resolve();
  StepRequest req = f.serving.resolve(m, r.hw, par, app, false);
  if (f.phase == "prefill") req.phase = Phase::prefill;
  else if (f.phase != "decode") fail_flag("--phase", f.phase, "expected prefill or decode");
  const bool shaped = app->count("--query") || app->count("--prefix") || app->count("--mix");
  if (shaped && app->count("--context"))
    fail_flag("--context", std::to_string(f.context), "give --context, or --query/--prefix/--mix, not both");
  if (!f.mix.empty() && (app->count("--query") || app->count("--prefix") || app->count("--batch")))
    fail_flag("--mix", f.mix, "a mix gives its own counts, queries and prefixes; leave --batch, --query and --prefix out");
  if (!f.mix.empty()) {
    req.w.groups = parse_mix(f.mix);
  } else {
    SequenceGroup g;
    g.count = positive("--batch", f.batch, 10'000'000);
    if (shaped) {
      if (!(f.query >= 1 && f.query <= 1e9)) fail_flag("--query", fmt::format("{}", f.query), "expected a number of tokens in [1, 1e9]");
      if (!(f.prefix >= 0 && f.prefix <= 1e12)) fail_flag("--prefix", fmt::format("{}", f.prefix), "expected a number of tokens in [0, 1e12]");
      g.query = f.query, g.prefix = f.prefix;
    } else {
      const double c = static_cast<double>(positive("--context", f.context, std::int64_t{1} << 40));
      if (req.phase == Phase::decode && c < 1.0 + static_cast<double>(req.mtp_draft))
        fail_flag("--context", std::to_string(f.context), fmt::format("a decode step holds at least its {} new tokens", 1 + req.mtp_draft));
      g = step_group(req.phase, g.count, c, req.mtp_draft);
    }
    req.w.groups = {g};
  }
  // Every DP replica holds a sequence (a rank without one would be timed as if it had one), and a
  // decode step with MTP verifies 1 + draft tokens per sequence.
  std::int64_t sequences = 0;
  for (const SequenceGroup& g : req.w.groups) sequences += g.count;
  if (sequences < par.dp)
    fail_flag(f.mix.empty() ? "--batch" : "--mix", f.mix.empty() ? std::to_string(f.batch) : f.mix,
              fmt::format("{} sequence{} for DP {}: every replica needs one", sequences, sequences == 1 ? "" : "s", par.dp));
  if (req.phase == Phase::decode && req.mtp_draft > 0)
    for (const SequenceGroup& g : req.w.groups)
      if (g.query != 1.0 + static_cast<double>(req.mtp_draft))
        fail_flag(f.mix.empty() ? "--query" : "--mix", f.mix.empty() ? fmt::format("{}", f.query) : f.mix,
                  fmt::format("a decode step with --mtp {} verifies {} tokens per sequence", req.mtp_draft, 1 + req.mtp_draft));
  if (app->count("--ll-sm-us-per-token") && req.phase == Phase::prefill && req.ep_mode == EpMode::automatic)
    fail_flag("--ll-sm-us-per-token", fmt::format("{}", f.serving.ll_sm_us_per_token), "prefill uses the normal all-to-all, which holds SMs for its whole transfer; --ll-sm-us-per-token is for the low-latency kind");
  if (app->count("--comm-sms") && req.phase == Phase::decode && req.ep_mode == EpMode::automatic)
    fail_flag("--comm-sms", std::to_string(f.serving.comm_sms), "decode uses the low-latency all-to-all, which holds no SMs; --comm-sms is for the normal kind");
  double longest = 0;
  for (const SequenceGroup& g : req.w.groups) longest = std::max(longest, g.prefix + g.query);
  warn_context(ctx, m, "--context", fmt::format("{}", longest), longest);
  req.w.compute = r.compute;
  req.w.kv = resolve_kv_dtype(ctx, f.kv_dtype, m);
  set_step_weights(req, m, f.weight_dtype.empty() ? std::nullopt : std::optional<WeightDtype>(resolve_weight_dtype(f.weight_dtype)));
  req.w.spec_tokens = req.mtp_draft;
  set_step_batch(req, m, r.hw, req.w.groups);
  const StepResult st = step_time(m, r.hw, r.rf, req);
  return step_document(m, r, req, st, req.engine_label);
}

}  // namespace

void register_step_command(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<StepFlags>();
  CLI::App* c = app.add_subcommand("step", "time of one prefill or decode step of the whole model: components, TTFT/TPOT, tokens/s per GPU");
  add_model_flags(c, f->model);
  add_layout_flags(c, f->layout, true);
  add_roofline_flags(c, f->roofline);
  add_serving_flags(c, f->serving, false);
  c->add_option("--phase", f->phase, "prefill | decode")->capture_default_str();
  c->add_option("--batch,-b", f->batch, "sequences in the step, whole deployment (DP replicas split them)")->capture_default_str();
  c->add_option("--context", f->context, "decode: keys per sequence; prefill: prompt tokens per sequence")->capture_default_str();
  c->add_option("--query,-q", f->query, "new tokens per sequence, as in cost (instead of --context)");
  c->add_option("--prefix,-p", f->prefix, "cached tokens before them (instead of --context)");
  c->add_option("--mix", f->mix, "a mixed batch: COUNTxQUERY@PREFIX,... e.g. 64x1@8192,2x2048@0");
  c->add_option("--kv-dtype", f->kv_dtype, "fp32 | bf16 | fp16 | fp8 | fp8_flashmla | fp4")->capture_default_str();
  c->add_option("--weight-dtype", f->weight_dtype, "dtype of every linear weight (default: the config's quantization; fp8 runs fp8 GEMMs)");
  add_format_flag(c, f->format);
  c->callback([f, c, &ctx] { emit(ctx, step(*f, c, ctx), f->format); });
}

}  // namespace mlaplan::cli
