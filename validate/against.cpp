#include "against.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fit.hpp"
#include "harness.hpp"
#include "results.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/svg.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan::validate {

namespace fs = std::filesystem;

namespace {

struct Row {
  std::string kernel;  // "absorbed_decode" or "expanded_prefill"
  OpId op = OpId::latent_attention_mqa;  // the cost model's op the kernel runs
  int batch = 1, kv_len = 0;
  double measured_s = 0;
  double flops = 0, bytes = 0, units = 1, longest_flops = 0;
  double sol_s = 0, fit_s = 0;
  bool train = false;
};

std::vector<std::map<std::string, std::string>> read_csv(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(p.string(), "cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto rows = parse_csv(ss.str());
  if (rows.empty()) fail(p.string(), "is empty");
  std::vector<std::map<std::string, std::string>> out;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    std::map<std::string, std::string> m;
    for (std::size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c) m[rows[0][c]] = rows[r][c];
    out.push_back(std::move(m));
  }
  return out;
}

double number(const fs::path& file, std::size_t row, const std::map<std::string, std::string>& m, const std::string& key) {
  const auto it = m.find(key);
  if (it == m.end()) fail_key(file.string(), key, "(absent)", fmt::format("row {} lacks the column", row + 1));
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !std::isfinite(v) || v <= 0)
    fail_key(file.string(), key, it->second, fmt::format("row {}: expected a positive number", row + 1));
  return v;
}

ModelSpec deepseek_attention() {
  ModelSpec m;
  m.name = "DeepSeek-V3 attention";
  m.attention = AttentionKind::mla;
  m.hidden = 7168;
  m.heads = m.kv_heads = 128;
  m.mla = MlaDims{.kv_lora_rank = 512, .qk_rope_head_dim = 64, .qk_nope_head_dim = 128, .v_head_dim = 128, .q_lora_rank = 1536};
  m.layers.resize(1);
  return m;
}

double waves(double units, double sms) { return units / (std::ceil(units / sms) * sms); }

double model_time(const Row& r, const GpuKernelFit& f, const HardwareSpec& gpu) {
  const double peak = gpu.peak_flops(DType::bf16)->value, sms = static_cast<double>(std::max<std::int64_t>(1, gpu.sm_count));
  const double w = waves(r.units, sms);
  double t = std::max(r.flops / (peak * f.eta_compute * w), r.bytes / (gpu.memory_bandwidth.value * f.eta_memory * w));
  t = std::max(t, r.longest_flops / (peak / sms * f.eta_compute));
  return f.t_fixed_s + t;
}

GpuKernelFit fit(const std::string& kernel, const std::vector<Row>& rows, const HardwareSpec& gpu) {
  std::vector<const Row*> train;
  for (const Row& r : rows)
    if (r.kernel == kernel && r.train) train.push_back(&r);
  std::vector<double> t0s = geometric_axis(1e-7, 1e-3, 60);  // 0, then 0.12 µs .. 1 ms
  t0s[0] = 0;
  const std::vector<double> etas = geometric_axis(0.05, 1, 50);
  auto model = [&](const std::vector<double>& p) {
    return GpuKernelFit{.kernel = kernel, .t_fixed_s = p[0], .eta_compute = p[1], .eta_memory = p[2], .train_rows = static_cast<int>(train.size())};
  };
  return model(grid_fit(
      {t0s, etas, etas},
      [&](const std::vector<double>& p) {
        const GpuKernelFit f = model(p);
        double loss = 0;
        for (const Row* r : train) loss += log_error_sq(Seconds{model_time(*r, f, gpu)}, Seconds{r->measured_s});
        return loss;
      },
      2));
}

// The op of the absorbed (decode) or expanded (prefill) path a published row timed.
const Op& op_of(const PathPlan& plan, OpId id) {
  const Op* op = plan.find(id);
  if (!op) throw std::logic_error(fmt::format("--against: the {} path has no {}", to_string(plan.kind), to_string(id)));
  return *op;
}

}  // namespace

AgainstRun validate_against(const fs::path& dir, const HardwareSpec& gpu) {
  if (!gpu.peak_flops(DType::bf16)) fail(gpu.source, "has no bf16 peak");
  const ModelSpec m = deepseek_attention();
  const Roofline rf = roofline_for(gpu, DType::bf16, Efficiency{});
  std::vector<Row> rows;

  const fs::path decode = dir / "h800-mla-absorbed-decode.csv", prefill = dir / "h800-mla-expanded-prefill-attention.csv";
  const auto d = read_csv(decode);
  for (std::size_t i = 0; i < d.size(); ++i) {
    Row r;
    r.kernel = "absorbed_decode";
    r.batch = static_cast<int>(number(decode, i, d[i], "batch_size"));
    r.kv_len = static_cast<int>(number(decode, i, d[i], "kv_len"));
    r.measured_s = number(decode, i, d[i], "latency_us") * 1e-6;
    Workload w;
    w.groups = {SequenceGroup{r.batch, 1, static_cast<double>(r.kv_len - 1)}};
    const PathPlan plan = mla_path(m, w, PathKind::absorb);
    const Op& op = op_of(plan, r.op);
    r.flops = op.flops.value, r.bytes = op.bytes().value, r.sol_s = op_time(op, rf).time.value;
    r.units = r.batch * std::ceil(128.0 / 64) * std::ceil(r.kv_len / 256.0);
    r.train = i % 2 == 0;
    rows.push_back(r);
  }
  const auto p = read_csv(prefill);
  for (std::size_t i = 0; i < p.size(); ++i) {
    Row r;
    r.kernel = "expanded_prefill";
    r.op = OpId::attention_mha;
    r.kv_len = static_cast<int>(number(prefill, i, p[i], "seq_len"));
    r.measured_s = number(prefill, i, p[i], "latency_us") * 1e-6;
    Workload w;
    w.groups = {SequenceGroup{1, static_cast<double>(r.kv_len), 0}};
    const PathPlan plan = mla_path(m, w, PathKind::expand);
    const Op& op = op_of(plan, r.op);
    r.flops = op.flops.value, r.bytes = op.bytes().value, r.sol_s = op_time(op, rf).time.value;
    r.units = std::ceil(r.kv_len / 128.0) * 128;
    r.longest_flops = 128.0 * r.kv_len * 2 * (128 + 64 + 128);  // the last query tile sees every key
    r.train = i % 2 == 0;
    rows.push_back(r);
  }

  std::vector<GpuKernelFit> fits{fit("absorbed_decode", rows, gpu), fit("expanded_prefill", rows, gpu)};
  for (Row& r : rows) r.fit_s = model_time(r, r.kernel == fits[0].kernel ? fits[0] : fits[1], gpu);

  Table t{.name = "against", .title = "Published H800 timings, predicted",
          .columns = {{"kernel", "kernel", Unit::text}, {"batch", "batch", Unit::count}, {"kv_len", "kv/seq len", Unit::count},
           {"measured_s", "measured", Unit::seconds}, {"predicted_sol_s", "SOL", Unit::seconds}, {"predicted_fit_s", "fitted", Unit::seconds},
           {"sol_ape", "SOL error", Unit::fraction}, {"fit_ape", "fitted error", Unit::fraction}, {"split", "split", Unit::text}},
          .rows = {}};
  std::map<std::string, std::vector<double>> e_sol, e_fit;
  for (const Row& r : rows) {
    const double es = std::fabs(r.sol_s - r.measured_s) / r.measured_s, ef = std::fabs(r.fit_s - r.measured_s) / r.measured_s;
    t.rows.push_back({r.kernel, std::int64_t{r.batch}, std::int64_t{r.kv_len}, r.measured_s, r.sol_s, r.fit_s, es, ef,
                      std::string(r.train ? "train" : "test")});
    if (!r.train) e_sol[r.kernel].push_back(es), e_fit[r.kernel].push_back(ef);
  }
  Table err{.name = "errors", .title = "Held-out error (odd rows)",
            .columns = {{"kernel", "kernel", Unit::text}, {"points", "points", Unit::count}, {"sol_median_ape", "SOL median", Unit::fraction},
             {"sol_p90_ape", "SOL p90", Unit::fraction}, {"fit_median_ape", "fitted median", Unit::fraction}, {"fit_p90_ape", "fitted p90", Unit::fraction}},
            .rows = {}};
  for (const auto& [k, e] : e_fit) {
    const ErrorStats f = ape_stats(e), s = ape_stats(e_sol[k]);
    err.rows.push_back({k, static_cast<std::int64_t>(f.n), s.median, s.p90, f.median, f.p90});
  }
  Table ft{.name = "fit", .title = "Fitted efficiency model (even rows)",
           .columns = {{"kernel", "kernel", Unit::text}, {"t_fixed_s", "fixed cost", Unit::seconds}, {"eta_compute", "η compute", Unit::fraction},
            {"eta_memory", "η memory", Unit::fraction}, {"train_rows", "rows", Unit::count}},
           .rows = {}};
  for (const auto& f : fits) ft.rows.push_back({f.kernel, f.t_fixed_s, f.eta_compute, f.eta_memory, std::int64_t{f.train_rows}});

  std::vector<svg::Series> series;
  int c = 0;
  for (const char* k : {"absorbed_decode", "expanded_prefill"}) {
    svg::Series fitted{.name = std::string(k) + ", fitted (held out)", .line = false, .markers = true, .color = c, .marker = c};
    svg::Series sol{.name = std::string(k) + ", speed of light", .line = false, .markers = true, .color = c + 2, .marker = c};
    for (const Row& r : rows)
      if (r.kernel == k && !r.train) fitted.points.push_back({r.measured_s, r.fit_s}), sol.points.push_back({r.measured_s, r.sol_s});
    series.push_back(fitted);
    series.push_back(sol);
    ++c;
  }
  const svg::LinePlot plot = prediction_plot(fmt::format("{}: published timings against predictions", gpu.name), std::move(series));

  std::string md = fmt::format("# Published measurements against mlaplan ({})\n\nSource: `{}` (see its README: InferSim's FlashInfer MLA decode "
                               "and FlashAttention-3 prefill on H800). Predictions use `{}`. The efficiency model is fitted on the even rows of "
                               "each file and judged on the odd rows:\n\n"
                               "time = t_fixed + max(F / (peak·η_c·w), B / (bandwidth·η_m·w)), w = CTAs / (⌈CTAs / SMs⌉·SMs); decode CTAs = "
                               "batch × ⌈heads/64⌉ × ⌈kv_len/256⌉ (split-KV); prefill CTAs = ⌈S/128⌉ × heads, and a causal prefill lasts at least "
                               "as long as its longest CTA.\n\n",
                               gpu.name, dir.string(), gpu.source);
  md += md_section(err);
  md += "![predicted against measured](against.svg)\n\n";
  md += md_section(ft);
  md += md_section(t);
  nlohmann::ordered_json fj;
  for (const auto& f : fits) fj[f.kernel] = {{"t_fixed_s", f.t_fixed_s}, {"eta_compute", f.eta_compute}, {"eta_memory", f.eta_memory}};
  AgainstRun out;
  out.files = {{"report.md", md},
               {"against.csv", csv_of(t)},
               {"errors.csv", csv_of(err)},
               {"fit.json", fj.dump(2) + "\n"},
               {"against.svg", svg::render(plot)}};
  out.summary = md_section(err);
  return out;
}

}  // namespace mlaplan::validate
