#include "mlaplan/io/engine_logs.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "mlaplan/core/capacity.hpp"
#include "mlaplan/core/params.hpp"
#include "mlaplan/io/csv_records.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& columns() {
  static const std::vector<std::string> c = {
      "id", "engine", "model", "gpu", "tp", "dp", "ep", "weight_dtype", "kv_dtype", "mem_util", "max_model_len", "max_num_seqs",
      "max_batched_tokens", "block_size", "enforce_eager", "mtp", "logged_kv_tokens", "logged_kv_gib", "logged_weights_gib",
      "logged_activation_gib", "logged_non_torch_gib", "kind", "source"};
  return c;
}

}  // namespace

std::vector<EngineLogRow> parse_engine_log_csv(const std::string& text, const std::string& where) {
  std::vector<EngineLogRow> out;
  for (const CsvCells& c : csv_records(text, where, columns())) {
    const std::string& at = c.where;
    EngineLogRow r;
    r.file = where;
    r.id = c.required("id");
    r.engine = c.required("engine");
    r.model = c.required("model");
    r.gpu = c.required("gpu");
    r.weight_dtype = c.text("weight_dtype");
    r.kv_dtype = c.text("kv_dtype").empty() ? std::string("bf16") : c.text("kv_dtype");
    r.kind = c.required("kind");
    if (r.kind != "logged" && r.kind != "derived") fail_key(at, "kind", r.kind, "expected logged or derived");
    r.source = c.required("source");
    r.par.tp = c.integer("tp", 1, 4096).value_or(1);
    r.par.dp = c.integer("dp", 1, 4096).value_or(1);
    r.par.ep = c.integer("ep", 1, 4096).value_or(1);
    EngineSettings& s = r.settings;
    if (const auto v = c.number("mem_util", 0, 1); v) {
      if (*v <= 0) fail_key(at, "mem_util", c.text("mem_util"), "expected a fraction in (0, 1]");
      s.mem_util = *v;
    }
    s.max_model_len = c.integer("max_model_len", 1, std::int64_t{1} << 40);
    s.max_num_seqs = c.integer("max_num_seqs", 1, std::int64_t{1} << 30);
    s.max_batched_tokens = c.integer("max_batched_tokens", 1, std::int64_t{1} << 30);
    s.block_size = c.integer("block_size", 1, 1 << 20);
    if (const auto e = c.flag("enforce_eager")) s.enforce_eager = *e;
    s.mtp = c.integer("mtp", 0, 64);
    r.logged_kv_tokens = c.integer("logged_kv_tokens", 1, std::int64_t{1} << 50);
    r.logged_kv_gib = c.number("logged_kv_gib", 0, 1e6);
    r.logged_weights_gib = c.number("logged_weights_gib", 0, 1e6);
    r.logged_activation_gib = c.number("logged_activation_gib", 0, 1e6);
    r.logged_non_torch_gib = c.number("logged_non_torch_gib", 0, 1e6);
    if (!r.logged_kv_tokens && !(r.logged_kv_gib && *r.logged_kv_gib > 0))
      fail_key(at, "logged_kv_tokens", "(empty)", "a row needs logged_kv_tokens or a positive logged_kv_gib");
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<EngineLogRow> read_engine_logs(const fs::path& dir) { return read_csv_folder(dir, parse_engine_log_csv); }

std::vector<EngineLogCheck> check_engine_logs(const std::vector<EngineLogRow>& rows) {
  std::vector<EngineLogCheck> out;
  constexpr double G = static_cast<double>(kGiB);
  for (const EngineLogRow& r : rows) {
    const std::string at = fmt::format("{} (row '{}')", r.file, r.id);
    const ModelSpec m = load_model(r.model, {}, at + " model");
    const HardwareSpec hw = load_gpu(r.gpu, at + " gpu");
    const EngineProfile p = load_engine(r.engine, at + " engine");
    const auto kv = parse_kv_dtype(r.kv_dtype);
    if (!kv) fail_key(at, "kv_dtype", r.kv_dtype, "expected one of fp32, bf16, fp16, fp8, fp8_flashmla, fp4");
    WeightPlan w = default_weight_plan(m);
    if (!r.weight_dtype.empty()) {
      const auto d = parse_weight_dtype(r.weight_dtype);
      if (!d) fail_key(at, "weight_dtype", r.weight_dtype, "expected one of fp32, bf16, fp16, fp8, fp8_tensor, mxfp4, int4, int8");
      w = weight_plan_for(m, *d);
    }
    if (r.settings.mtp.value_or(0) > 0 && m.mtp_layers <= 0)
      fail_key(at, "mtp", std::to_string(*r.settings.mtp), m.name + " has no MTP module (num_nextn_predict_layers is 0)");
    const EngineCapacity e = engine_capacity(m, hw, p, w, r.par, *kv, r.settings, 0);
    if (!e.fits() && e.kv_pool.value <= 0) fail(at, "the profile leaves no KV pool: " + e.verdict.reason);
    EngineLogCheck c;
    c.row = r;
    c.profile = p.label();
    c.predicted_kv_tokens = e.engine_kv_tokens;
    c.predicted_kv_gib = static_cast<double>(e.kv_pool.value) / G;
    c.predicted_weights_gib = static_cast<double>(e.weights.value) / G;
    c.predicted_activation_gib = static_cast<double>(e.activation.value) / G;
    c.predicted_non_torch_gib = static_cast<double>(e.non_torch.value) / G;
    c.budget_has_activation = p.family != EngineFamily::sglang;
    CapacityRequest plain;
    plain.kv_dtype = *kv;
    plain.weights = w;
    plain.par = r.par;
    plain.mem_util = r.settings.mem_util.value_or(0.9);
    plain.context = e.max_model_len;
    plain.block_size = e.block_size;
    plain.reserve = activation_reserve_estimate(m, r.par, r.settings.max_batched_tokens.value_or(kDefaultBatchedTokens));
    const CapacityResult pr = plan_capacity(m, hw, plain);
    c.plain_kv_tokens = pr.max_tokens_per_rank;
    c.plain_kv_gib = static_cast<double>(pr.kv_pool_bytes_per_rank.value) / G;
    if (r.logged_kv_tokens) {
      c.metric = "tokens";
      c.error = static_cast<double>(c.predicted_kv_tokens) / static_cast<double>(*r.logged_kv_tokens) - 1.0;
      c.plain_error = static_cast<double>(c.plain_kv_tokens) / static_cast<double>(*r.logged_kv_tokens) - 1.0;
    } else {
      c.metric = "kv_bytes";
      c.error = c.predicted_kv_gib / *r.logged_kv_gib - 1.0;
      c.plain_error = c.plain_kv_gib / *r.logged_kv_gib - 1.0;
    }
    out.push_back(std::move(c));
  }
  return out;
}

Document engine_logs_document(const std::vector<EngineLogCheck>& checks) {
  Document doc;
  doc.title = "Engine KV-cache logs reproduced with their own settings";
  constexpr double G = static_cast<double>(kGiB);
  auto bytes = [&](double gib) -> Value { return static_cast<std::int64_t>(std::llround(gib * G)); };
  auto opt = [&](const std::optional<double>& v) -> Value { return v ? bytes(*v) : Value{}; };
  Table t{.name = "engine_logs", .title = "Per log: logged, predicted, error",
          .columns = {{"id", "log", Unit::text},
                      {"engine", "engine", Unit::text},
                      {"profile", "profile", Unit::text},
                      {"model", "model", Unit::text},
                      {"gpu", "GPU", Unit::text},
                      {"layout", "layout", Unit::text},
                      {"kind", "kind", Unit::text},
                      {"logged_kv_tokens", "logged tokens", Unit::count},
                      {"predicted_kv_tokens", "predicted tokens", Unit::count},
                      {"logged_kv_bytes", "logged KV", Unit::bytes},
                      {"predicted_kv_bytes", "predicted KV", Unit::bytes},
                      {"logged_weight_bytes", "logged weights", Unit::bytes},
                      {"predicted_weight_bytes", "predicted weights", Unit::bytes},
                      {"logged_activation_bytes", "logged activation", Unit::bytes},
                      {"predicted_activation_bytes", "predicted activation", Unit::bytes},
                      {"logged_non_torch_bytes", "logged non-torch", Unit::bytes},
                      {"predicted_non_torch_bytes", "predicted non-torch", Unit::bytes},
                      {"metric", "error on", Unit::text},
                      {"error", "error", Unit::fraction},
                      {"plain_error", "plain model's error", Unit::fraction},
                      {"source", "source", Unit::text, true}},
          .rows = {}};
  double worst = 0;
  for (const EngineLogCheck& c : checks) {
    const EngineLogRow& r = c.row;
    t.rows.push_back({r.id, r.engine, c.profile, r.model, r.gpu, to_string(r.par), r.kind,
                      r.logged_kv_tokens ? Value{*r.logged_kv_tokens} : Value{}, c.predicted_kv_tokens, opt(r.logged_kv_gib),
                      bytes(c.predicted_kv_gib), opt(r.logged_weights_gib), bytes(c.predicted_weights_gib), opt(r.logged_activation_gib),
                      c.budget_has_activation ? bytes(c.predicted_activation_gib) : Value{}, opt(r.logged_non_torch_gib),
                      c.budget_has_activation ? bytes(c.predicted_non_torch_gib) : Value{}, c.metric, c.error, c.plain_error, r.source});
    worst = std::max(worst, std::abs(c.error));
  }
  std::vector<double> abs_err;
  for (const EngineLogCheck& c : checks) abs_err.push_back(std::abs(c.error));
  std::sort(abs_err.begin(), abs_err.end());
  const double median = abs_err.empty() ? 0.0
                                        : (abs_err.size() % 2 ? abs_err[abs_err.size() / 2]
                                                              : 0.5 * (abs_err[abs_err.size() / 2 - 1] + abs_err[abs_err.size() / 2]));
  std::vector<double> plain_abs;
  for (const EngineLogCheck& c : checks) plain_abs.push_back(std::abs(c.plain_error));
  std::sort(plain_abs.begin(), plain_abs.end());
  doc.fields = {{"rows", "logs", static_cast<std::int64_t>(checks.size()), Unit::count},
                {"median_abs_error", "median |error|", median, Unit::fraction},
                {"max_abs_error", "largest |error|", worst, Unit::fraction},
                {"plain_max_abs_error", "largest |error| of the plain model (no --engine)", plain_abs.empty() ? 0.0 : plain_abs.back(), Unit::fraction}};
  doc.tables.push_back(std::move(t));
  doc.notes.push_back("error = predicted / logged - 1, on the KV tokens the engine logs, or on the KV pool's GiB where the log gives no token count.");
  doc.notes.push_back("Rows whose settings or numbers also fixed profile parameters are in-sample for those parameters; each profile parameter names the rows it comes from.");
  return doc;
}

}  // namespace mlaplan
