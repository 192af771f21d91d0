#include "mlaplan/io/serving_measurements.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mlaplan/core/serving.hpp"
#include "mlaplan/core/study.hpp"
#include "mlaplan/io/csv_records.hpp"
#include "mlaplan/io/efficiency_json.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& columns() {
  static const std::vector<std::string> c = {"id",  "kind",    "role",  "model",  "gpu",        "engine", "phase",         "tp",
                                             "dp",  "ep",      "nodes", "batch",  "context",    "isl",    "osl",           "mtp",
                                             "mtp_accept", "tbo", "comm_sms", "moe_imbalance", "weight_dtype", "kv_dtype", "metric", "measured",
                                             "confidence", "source"};
  return c;
}

const std::vector<std::string>& step_metrics() {
  static const std::vector<std::string> m = {"step_time_s",         "tpot_s",          "ttft_s",          "tokens_per_s_per_gpu",
                                             "moe_layer_s",         "layer_attention_s", "layer_gemm_s",  "layer_moe_s",
                                             "layer_dispatch_s",    "layer_combine_s", "layer_other_s"};
  return m;
}

}  // namespace

std::vector<ServingMeasurement> parse_serving_csv(const std::string& text, const std::string& where) {
  std::vector<ServingMeasurement> out;
  for (const CsvCells& c : csv_records(text, where, columns(), {"ll_sm_us_per_token", "links_from", "eager_launch_us"})) {
    ServingMeasurement r;
    r.file = where;
    r.id = c.required("id");
    r.kind = c.one_of("kind", {"step", "plan"});
    r.role = c.one_of("role", {"total", "part"}, "total");
    r.model = c.required("model");
    r.gpu = c.required("gpu");
    r.engine = c.text("engine").empty() ? std::string("none") : c.text("engine");
    r.par.tp = c.integer("tp", 1, 4096).value_or(1);
    r.par.dp = c.integer("dp", 1, 4096).value_or(1);
    r.par.ep = c.integer("ep", 1, 4096).value_or(1);
    r.ep_given = !c.text("ep").empty();
    r.nodes = c.integer("nodes", 1, 4096).value_or(1);
    if (r.par.ranks() % r.nodes != 0) fail_key(c.where, "nodes", c.text("nodes"), fmt::format("expected a divisor of the {} GPUs (TP x DP)", r.par.ranks()));
    r.batch = c.integer("batch", 1, 10'000'000).value_or(1);
    r.mtp = c.integer("mtp", 0, 16).value_or(0);
    r.mtp_accept = c.number("mtp_accept", 0, 1).value_or(0);
    if (r.mtp == 0 && !c.text("mtp_accept").empty()) fail_key(c.where, "mtp_accept", c.text("mtp_accept"), "no draft tokens to accept (mtp is 0)");
    r.tbo = c.flag("tbo").value_or(false);
    r.moe_imbalance = c.number("moe_imbalance", 1, 1000);
    r.comm_sms = c.integer("comm_sms", 0, 1024);
    if (r.comm_sms && !r.tbo) fail_key(c.where, "comm_sms", c.text("comm_sms"), "applies with tbo true");
    r.ll_sm_us_per_token = c.number("ll_sm_us_per_token", 0, 1e6);
    if (r.ll_sm_us_per_token && !r.tbo) fail_key(c.where, "ll_sm_us_per_token", c.text("ll_sm_us_per_token"), "applies with tbo true");
    r.links_from = c.text("links_from");
    r.eager_launch_us = c.number("eager_launch_us", 0, 1e6);
    r.weight_dtype = c.text("weight_dtype");
    r.kv_dtype = c.text("kv_dtype").empty() ? std::string("bf16") : c.text("kv_dtype");
    r.confidence = c.one_of("confidence", {"H", "M", "L"});
    r.source = c.required("source");
    r.measured = *c.number("measured", 0, 1e12);
    if (c.text("measured").empty() || r.measured <= 0) fail_key(c.where, "measured", c.text("measured"), "expected a positive number");
    if (r.kind == "step") {
      r.phase = c.one_of("phase", {"prefill", "decode"});
      r.metric = c.one_of("metric", step_metrics());
      if ((r.metric == "tpot_s" && r.phase != "decode") || (r.metric == "ttft_s" && r.phase != "prefill"))
        fail_key(c.where, "metric", r.metric, "belongs to the other phase (tpot_s: decode, ttft_s: prefill)");
      if (r.batch < r.par.dp) fail_key(c.where, "batch", c.text("batch"), fmt::format("every one of the {} DP replicas needs a sequence", r.par.dp));
      r.context = c.integer("context", 1, std::int64_t{1} << 30).value_or(0);
      if (r.context <= 0) fail_key(c.where, "context", "(empty)", "a step needs its context");
      if (!c.text("isl").empty() || !c.text("osl").empty()) fail_key(c.where, "isl", c.text("isl"), "isl and osl belong to plan rows");
    } else {
      r.metric = c.one_of("metric", {"best_tokens_per_s_per_gpu"});
      r.isl = c.integer("isl", 1, std::int64_t{1} << 30).value_or(0);
      r.osl = c.integer("osl", 1, std::int64_t{1} << 30).value_or(0);
      if (r.isl <= 0 || r.osl <= 0) fail_key(c.where, r.isl <= 0 ? "isl" : "osl", "(empty)", "a plan needs isl and osl");
      if (!c.text("context").empty() || !c.text("phase").empty()) fail_key(c.where, "context", c.text("context"), "context and phase belong to step rows");
      // A plan holds the row's TP and DP (and EP where given: 1 or every rank); the nodes follow.
      for (auto [k, v] : {std::pair{"tp", r.par.tp}, std::pair{"dp", r.par.dp}})
        if ((v & (v - 1)) != 0) fail_key(c.where, k, c.text(k), "a plan holds a power of two (the layouts plan tries)");
      if (r.ep_given && r.par.ep != 1 && r.par.ep != r.par.ranks())
        fail_key(c.where, "ep", c.text("ep"), fmt::format("a plan holds EP 1 or every rank ({}), or searches it when empty", r.par.ranks()));
      if (!c.text("nodes").empty() && c.text("nodes") != "1") fail_key(c.where, "nodes", c.text("nodes"), "a plan derives its nodes; leave it empty");
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<ServingMeasurement> read_serving_measurements(const fs::path& dir) { return read_csv_folder(dir, parse_serving_csv); }

namespace {

double layer_metric(const StepResult& st, const std::string& metric) {
  const auto moe = std::find_if(st.layer_kinds.begin(), st.layer_kinds.end(), [](const LayerKindRow& k) { return k.kind == "moe"; });
  if (moe == st.layer_kinds.end()) return 0;
  if (metric == "moe_layer_s") return moe->time.value;
  const std::string category = metric.substr(6, metric.size() - 8);  // layer_<category>_s
  double sum = 0;
  for (int i = 0; i < kStepComponentCount; ++i)
    if (category_of(static_cast<StepComponent>(i)) == category) sum += moe->by_component[static_cast<std::size_t>(i)].value;
  return sum;
}

std::string command_of(const ServingMeasurement& r) {
  std::string cmd = fmt::format("{} --model {} --gpu {} --engine {}", r.kind, r.model, r.gpu, r.engine);
  if (r.kind == "step")
    cmd += fmt::format(" --phase {} --tp {} --dp {} --ep {} --nodes {} --batch {} --context {}", r.phase, r.par.tp, r.par.dp, r.par.ep, r.nodes, r.batch, r.context);
  else
    cmd += fmt::format(" --isl {} --osl {} --max-gpus {} --tp {} --dp {}{} --max-batch {}", r.isl, r.osl, r.par.ranks(), r.par.tp, r.par.dp,
                       r.ep_given ? fmt::format(" --ep {}", r.par.ep) : "", r.batch);
  if (r.mtp > 0) cmd += fmt::format(" --mtp {} --mtp-accept {}", r.mtp, r.mtp_accept);
  if (r.tbo) cmd += " --tbo";
  if (r.comm_sms) cmd += fmt::format(" --comm-sms {}", *r.comm_sms);
  if (r.ll_sm_us_per_token) cmd += fmt::format(" --ll-sm-us-per-token {}", *r.ll_sm_us_per_token);
  if (r.moe_imbalance) cmd += fmt::format(" --moe-imbalance {}", *r.moe_imbalance);
  if (!r.links_from.empty()) cmd += " --links-from " + r.links_from;
  if (r.eager_launch_us) cmd += fmt::format(" --eager-launch-us {}", *r.eager_launch_us);
  if (!r.weight_dtype.empty()) cmd += " --weight-dtype " + r.weight_dtype;
  if (r.kv_dtype != "bf16") cmd += " --kv-dtype " + r.kv_dtype;
  return cmd;
}

}  // namespace

std::vector<ServingCheck> check_serving(const std::vector<ServingMeasurement>& rows) {
  std::vector<ServingCheck> out;
  const std::vector<EfficiencyProfile> profiles = bundled_efficiency();
  for (const ServingMeasurement& r : rows) {
    const std::string at = fmt::format("{} (row '{}')", r.file, r.id);
    const ModelSpec m = load_model(r.model, {}, at + " model");
    const HardwareSpec hw = load_gpu(r.gpu, at + " gpu");
    const Roofline rf = default_roofline(hw, DType::bf16, profiles);
    if (!check_layout(m, r.par).ok()) fail(at, check_layout(m, r.par).verdict.reason);
    if (r.mtp > 0 && m.mtp_layers <= 0) fail_key(at, "mtp", std::to_string(r.mtp), m.name + " has no MTP module");
    StepRequest req;
    apply_step_engine(req, load_step_engine(r.engine, m, at + " engine"));
    if (r.moe_imbalance) {
      if (!m.moe) fail_key(at, "moe_imbalance", fmt::format("{}", *r.moe_imbalance), m.name + " has no routed experts");
      req.moe_imbalance = *r.moe_imbalance;
    }
    if (r.comm_sms && (*r.comm_sms >= hw.sm_count || (r.kind == "step" && r.phase == "decode")))
      fail_key(at, "comm_sms", std::to_string(*r.comm_sms),
               fmt::format("the normal (prefill) all-to-all's SMs, fewer than {}'s {}", hw.name, hw.sm_count));
    if (r.ll_sm_us_per_token && r.kind == "step" && r.phase == "prefill")
      fail_key(at, "ll_sm_us_per_token", fmt::format("{}", *r.ll_sm_us_per_token), "the low-latency (decode) all-to-all's kernels; prefill uses the normal kind");
    if (r.ll_sm_us_per_token && (!m.moe || r.par.ep <= 1))
      fail_key(at, "ll_sm_us_per_token", fmt::format("{}", *r.ll_sm_us_per_token), "the expert-parallel all-to-all's kernels: needs a MoE model and ep > 1");
    req.w.par = r.par;
    req.gpus_per_node = r.par.ranks() / r.nodes;
    if (hw.scale_up_domain_gpus > 0 && req.gpus_per_node > hw.scale_up_domain_gpus)
      fail_key(at, "nodes", std::to_string(r.nodes), fmt::format("{} GPUs per node exceed {}'s scale-up domain", req.gpus_per_node, hw.name));
    req.links = links_for(hw, r.links_from.empty() ? req.overheads : load_step_engine(r.links_from, m, at + " links_from").overheads);
    const auto kv = parse_kv_dtype(r.kv_dtype);
    if (!kv) fail_key(at, "kv_dtype", r.kv_dtype, "expected one of fp32, bf16, fp16, fp8, fp8_flashmla, fp4");
    req.w.kv = *kv;
    std::optional<WeightDtype> wd;
    if (!r.weight_dtype.empty()) {
      wd = parse_weight_dtype(r.weight_dtype);
      if (!wd) fail_key(at, "weight_dtype", r.weight_dtype, "expected one of fp32, bf16, fp16, fp8, mxfp4, int4, int8");
    }
    set_step_weights(req, m, wd);
    req.mtp_draft = r.mtp;
    req.mtp_accept = r.mtp_accept;
    req.w.spec_tokens = r.mtp;
    req.two_batch_overlap = r.tbo;
    if (r.comm_sms) req.comm_sms = static_cast<double>(*r.comm_sms);
    if (r.ll_sm_us_per_token) req.ll_sm_per_token = Seconds{*r.ll_sm_us_per_token * 1e-6};
    if (r.eager_launch_us) req.eager_launch = Seconds{*r.eager_launch_us * 1e-6};
    ServingCheck c;
    c.row = r;
    c.command = command_of(r);
    if (r.kind == "step") {
      req.phase = r.phase == "prefill" ? Phase::prefill : Phase::decode;
      set_step_batch(req, m, hw, {step_group(req.phase, r.batch, static_cast<double>(r.context), r.mtp)});
      const StepResult st = step_time(m, hw, rf, req);
      if (r.metric == "step_time_s") c.predicted = st.step_time.value;
      else if (r.metric == "tpot_s") c.predicted = st.tpot.value;
      else if (r.metric == "ttft_s") c.predicted = st.ttft.value;
      else if (r.metric == "tokens_per_s_per_gpu") c.predicted = st.tokens_per_s_per_gpu;
      else c.predicted = layer_metric(st, r.metric);
      if (!(c.predicted > 0)) fail_key(at, "metric", r.metric, m.name + " has no MoE layer to measure");
    } else {
      PlanRequest p;
      p.base = req;
      p.isl = r.isl;
      p.osl = r.osl;
      p.max_gpus = r.par.ranks();
      p.tp = r.par.tp, p.dp = r.par.dp;  // the measured layout; its batch searched
      if (r.ep_given) p.ep = r.par.ep;
      p.batches = batch_ladder(r.batch);
      const PlanResult pr = plan_layouts(m, hw, rf, p);
      if (!pr.best) fail(at, "no layout within the GPUs fits");
      c.predicted = pr.rows[*pr.best].tokens_per_s_per_gpu;
    }
    c.error = c.predicted / r.measured - 1;
    out.push_back(std::move(c));
  }
  return out;
}

Document serving_document(const std::vector<ServingCheck>& checks) {
  Document doc;
  doc.title = "Whole-system serving measurements reproduced with their own settings";
  Table t{.name = "serving", .title = "Per measurement: measured, predicted, error",
          .columns = {{"id", "measurement", Unit::text},
                      {"role", "role", Unit::text},
                      {"model", "model", Unit::text, true},
                      {"gpu", "GPU", Unit::text},
                      {"layout", "layout", Unit::text},
                      {"metric", "metric", Unit::text},
                      {"measured", "measured", Unit::none},
                      {"predicted", "predicted", Unit::none},
                      {"error", "error", Unit::fraction},
                      {"confidence", "confidence", Unit::text},
                      {"command", "mlaplan command", Unit::text, true},
                      {"source", "source", Unit::text, true}},
          .rows = {}};
  std::vector<double> totals;
  std::int64_t within = 0;
  bool hidden_all_to_all = false;  // a decode dispatch or combine part under two-batch overlap
  for (const ServingCheck& c : checks) {
    const ServingMeasurement& r = c.row;
    if (r.role == "part" && r.tbo && r.phase == "decode" && (r.metric == "layer_dispatch_s" || r.metric == "layer_combine_s")) hidden_all_to_all = true;
    t.rows.push_back({r.id, r.role, r.model, r.gpu, to_string(r.par), r.metric, r.measured, c.predicted, c.error, r.confidence, c.command, r.source});
    if (r.role == "total") {
      totals.push_back(std::abs(c.error));
      within += std::abs(c.error) <= 0.2 ? 1 : 0;
    }
  }
  doc.tables.push_back(std::move(t));
  std::sort(totals.begin(), totals.end());
  const double median = totals.empty() ? 0 : totals.size() % 2 ? totals[totals.size() / 2] : (totals[totals.size() / 2 - 1] + totals[totals.size() / 2]) / 2;
  doc.fields = {{"rows", "measurements (totals)", static_cast<std::int64_t>(totals.size()), Unit::count},
                {"median_abs_error", "median |error| of the totals", median, Unit::fraction},
                {"within_20_percent", "totals within 20%", within, Unit::count},
                {"worst_abs_error", "worst |error| of the totals", totals.empty() ? 0.0 : totals.back(), Unit::fraction}};
  doc.notes.push_back("Each row's command prints its prediction (run it as `mlaplan <command> --format json`); role 'part' rows are one MoE layer's "
                      "components beside the published breakdown and are not in the summary.");
  if (hidden_all_to_all)
    doc.notes.push_back("A decode profile under two-batch overlap times its low-latency dispatch and combine kernels on the compute stream (they issue "
                        "the messages and take them in); the dispatch and combine predicted beside them are the transfers, which the other "
                        "micro-batch's compute hides. Those parts are not like for like; the layer total is.");
  return doc;
}

}  // namespace mlaplan
