#include "common.hpp"

#include <cmath>
#include <cstdio>
#include <tuple>

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
  if (!d) fail_flag("--kv-dtype", s, "expected one of fp32, bf16, fp16, fp8, fp8_flashmla, fp4");
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

namespace mlaplan::cli {

namespace {

double parse_number(const char* flag, const std::string& whole, const std::string& s) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    fail_flag(flag, whole, fmt::format("'{}' is not a number", s));
  }
  if (used != s.size() || !std::isfinite(v)) fail_flag(flag, whole, fmt::format("'{}' is not a finite number", s));
  return v;
}

}  // namespace

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::vector<double> parse_number_list(const char* flag, const std::string& text, double min_value, std::size_t max_points) {
  std::vector<double> out;
  if (text.empty()) fail_flag(flag, text, "expected a number, a list a,b,c or a range a:b:x2");
  for (const std::string& item : split(text, ',')) {
    const auto parts = split(item, ':');
    if (parts.size() == 1) {
      out.push_back(parse_number(flag, text, item));
    } else if (parts.size() == 3) {
      const double a = parse_number(flag, text, parts[0]), b = parse_number(flag, text, parts[1]);
      std::string step = parts[2];
      if (b < a) fail_flag(flag, text, "a range a:b:step needs a <= b");
      if (!step.empty() && (step[0] == 'x' || step[0] == '*')) {
        const double k = parse_number(flag, text, step.substr(1));
        if (!(k > 1)) fail_flag(flag, text, "a geometric step xk needs k > 1");
        double v = a;
        if (v <= 0) {
          out.push_back(0);
          v = 1;
        }
        for (; v <= b * (1 + 1e-12); v *= k) {
          out.push_back(v);
          if (out.size() > max_points) break;
        }
      } else {
        if (!step.empty() && step[0] == '+') step = step.substr(1);
        const double k = parse_number(flag, text, step);
        if (!(k > 0)) fail_flag(flag, text, "an arithmetic step needs a positive size");
        if ((b - a) / k > static_cast<double>(max_points)) fail_flag(flag, text, fmt::format("more than {} points", max_points));
        for (double i = 0; a + i * k <= b * (1 + 1e-12); i += 1) out.push_back(a + i * k);
      }
    } else {
      fail_flag(flag, text, fmt::format("'{}' is neither a number nor a range a:b:step", item));
    }
    if (out.size() > max_points) fail_flag(flag, text, fmt::format("more than {} points", max_points));
  }
  for (double v : out)
    if (v < min_value) fail_flag(flag, text, fmt::format("values must be at least {}", min_value));
  return out;
}

std::vector<std::int64_t> parse_int_list(const char* flag, const std::string& text) {
  std::vector<std::int64_t> out;
  for (double v : parse_number_list(flag, text, 1, 4096)) {
    if (v != std::floor(v) || v > 1e9) fail_flag(flag, text, "expected positive integers");
    out.push_back(static_cast<std::int64_t>(v));
  }
  return out;
}

void add_roofline_flags(CLI::App* app, RooflineFlags& f) {
  app->add_option("--gpu,-g", f.gpu, "bundled GPU name or a hardware JSON file")->capture_default_str();
  app->add_option("--dtype", f.dtype, "compute dtype: its dense peak and activation width (bf16 | fp16 | fp8 | fp32 | tf32)")
      ->capture_default_str();
  app->add_option("--eta-compute", f.eta_compute, "fraction of peak FLOP/s reached (default: hardware file, else 1)");
  app->add_option("--eta-memory", f.eta_memory, "fraction of peak bandwidth reached (default: hardware file, else 1)");
  app->add_option("--launch-us", f.launch_us, "fixed cost per op in microseconds")->capture_default_str();
}

ResolvedRoofline resolve_roofline(const RooflineFlags& f) {
  ResolvedRoofline r;
  r.hw = load_gpu(f.gpu);
  const auto d = parse_dtype(f.dtype);
  if (!d) fail_flag("--dtype", f.dtype, "expected one of fp32, tf32, bf16, fp16, fp8, fp4");
  r.compute = *d;
  if (!r.hw.peak_flops(*d))
    fail_key(r.hw.source, "dense_peak_tflops", f.dtype, fmt::format("{} has no {} peak", r.hw.name, f.dtype));
  r.eta = r.hw.efficiency;
  for (auto [flag, value, target] : {std::tuple{"--eta-compute", f.eta_compute, &r.eta.compute},
                                     std::tuple{"--eta-memory", f.eta_memory, &r.eta.memory}}) {
    if (value < 0) continue;
    if (!(value > 0 && value <= 1)) fail_flag(flag, fmt::format("{}", value), "expected a fraction in (0, 1]");
    *target = value;
    r.eta.source = "command line";
  }
  if (!(f.launch_us >= 0 && f.launch_us < 1e6)) fail_flag("--launch-us", fmt::format("{}", f.launch_us), "expected microseconds in [0, 1e6)");
  r.rf = roofline_for(r.hw, r.compute, r.eta, f.launch_us * 1e-6);
  return r;
}

void add_roofline_fields(Document& doc, const ResolvedRoofline& r) {
  doc.fields.push_back({"gpu", "GPU", r.hw.name, Unit::text});
  doc.fields.push_back({"dtype", "compute dtype", std::string(to_string(r.compute)), Unit::text});
  doc.fields.push_back({"peak_flops_per_s", "dense peak", r.rf.peak_flops_per_s, Unit::flops_per_s});
  doc.fields.push_back({"bandwidth_bytes_per_s", "memory bandwidth", r.rf.bandwidth_bytes_per_s, Unit::bytes_per_s});
  doc.fields.push_back({"eta_compute", "η compute", r.eta.compute, Unit::fraction});
  doc.fields.push_back({"eta_memory", "η memory", r.eta.memory, Unit::fraction});
  doc.fields.push_back({"eta_source", "η from", r.eta.source, Unit::text});
  doc.fields.push_back({"launch_s", "launch cost per op", r.rf.launch_s, Unit::seconds});
  doc.fields.push_back({"ridge_flop_per_byte", "ridge point", r.rf.ridge(), Unit::flop_per_byte});
}

}  // namespace mlaplan::cli

namespace mlaplan::cli {

void add_workload_flags(CLI::App* app, WorkloadFlags& f) {
  app->add_option("--query,-q", f.query, "new query tokens per sequence (Q > 1 after a prefix: MTP or speculative decoding)")
      ->capture_default_str();
  app->add_option("--prefix,-p", f.prefix, "cached tokens before the new ones (P)")->capture_default_str();
  app->add_option("--batch,-b", f.batch, "sequences in the step")->capture_default_str();
  app->add_option("--mix", f.mix, "a mixed batch: COUNTxQUERY@PREFIX,... e.g. 64x1@8192,2x2048@0");
  app->add_flag("--non-causal", f.non_causal, "every query sees every key");
  app->add_option("--kv-dtype", f.kv_dtype, "fp32 | bf16 | fp16 | fp8 | fp8_flashmla | fp4")->capture_default_str();
  app->add_option("--weight-dtype", f.weight_dtype, "dtype weights are read in (default: the config's quantization)");
  app->add_option("--chunk", f.chunk, "chunked expand: tokens expanded per chunk")->capture_default_str();
}

std::vector<SequenceGroup> parse_mix(const std::string& text) {
  std::vector<SequenceGroup> groups;
  for (const std::string& item : split(text, ',')) {
    const auto x = item.find('x'), at = item.find('@');
    if (x == std::string::npos || at == std::string::npos || at < x)
      fail_flag("--mix", text, fmt::format("'{}' is not COUNTxQUERY@PREFIX", item));
    SequenceGroup g;
    const double count = parse_number("--mix", text, item.substr(0, x));
    g.query = parse_number("--mix", text, item.substr(x + 1, at - x - 1));
    g.prefix = parse_number("--mix", text, item.substr(at + 1));
    if (count < 1 || count != std::floor(count) || count > 1e7)
      fail_flag("--mix", text, fmt::format("count in '{}' must be a whole number from 1 to 1e7", item));
    if (g.query < 1 || g.prefix < 0) fail_flag("--mix", text, fmt::format("'{}' needs query >= 1 and prefix >= 0", item));
    if (g.query > 1e9 || g.prefix > 1e12) fail_flag("--mix", text, fmt::format("'{}' is out of range (query <= 1e9, prefix <= 1e12)", item));
    g.count = static_cast<std::int64_t>(count);
    groups.push_back(g);
  }
  return groups;
}

WeightDtype attention_weight_dtype(const ModelSpec& m) {
  if (m.quant == WeightQuant::fp8_block) return WeightDtype::fp8;
  if (m.quant == WeightQuant::mxfp4 && !m.quant_skips_attention) return WeightDtype::mxfp4;
  return WeightDtype::bf16;
}

Workload WorkloadFlags::resolve(const ModelSpec& m, const Parallelism& par, DType compute) const {
  Workload w;
  if (!mix.empty()) {
    w.groups = parse_mix(mix);
  } else {
    if (!(query >= 1 && query <= 1e9)) fail_flag("--query", fmt::format("{}", query), "expected a number of tokens in [1, 1e9]");
    if (!(prefix >= 0 && prefix <= 1e12)) fail_flag("--prefix", fmt::format("{}", prefix), "expected a number of tokens in [0, 1e12]");
    w.groups = {SequenceGroup{positive("--batch", batch, 10'000'000), query, prefix}};
  }
  w.causal = !non_causal;
  w.compute = compute;
  w.kv = resolve_kv_dtype(kv_dtype, m);
  w.weights = weight_dtype.empty() ? attention_weight_dtype(m) : resolve_weight_dtype(weight_dtype);
  w.tp = par.tp;
  w.dp = par.dp;
  if (!(chunk >= 1 && chunk <= 1e12)) fail_flag("--chunk", fmt::format("{}", chunk), "expected a number of tokens in [1, 1e12]");
  w.chunk = chunk;
  return w;
}

std::string describe(const Workload& w) {
  std::string s;
  for (const SequenceGroup& g : w.groups)
    s += fmt::format("{}{} x {} tokens after {}", s.empty() ? "" : ", ", g.count, g.query, g.prefix);
  return s;
}

}  // namespace mlaplan::cli
