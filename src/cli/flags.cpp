#include "flags.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "mlaplan/core/feasibility.hpp"
#include "mlaplan/core/kv.hpp"
#include "mlaplan/io/efficiency_json.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hf_config.hpp"
#include "mlaplan/io/lists.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan::cli {

ModelSpec ModelFlags::load(Context& ctx) const {
  ModelSpec m = load_model(model, sets);
  for (const std::string& w : m.warnings) warn(ctx, w);
  return m;
}

void warn(Context& ctx, std::string line) {
  if (std::find(ctx.warnings.begin(), ctx.warnings.end(), line) == ctx.warnings.end()) ctx.warnings.push_back(std::move(line));
}

void warn_context(Context& ctx, const ModelSpec& m, const char* flag, const std::string& value, double tokens) {
  if (m.max_position_embeddings <= 0 || tokens <= static_cast<double>(m.max_position_embeddings)) return;
  const std::string beyond = fmt::format("beyond max_position_embeddings {} of {}", m.max_position_embeddings, m.source);
  warn(ctx, flag_message(flag, value, fmt::format("{}", tokens) == value ? beyond : fmt::format("{} tokens, {}", tokens, beyond)));
}

namespace {

// Flags that count tokens or sequences, in every subcommand that has them: they take 32k and 1M.
constexpr std::string_view kCountFlags[] = {"--tokens", "--sequences", "--context", "--query", "--prefix",
                                            "--batch", "--block-size", "--max-batched-tokens", "--max-model-len",
                                            "--max-num-seqs", "--max-query", "--spec-tokens", "--mtp"};

// A flag value CLI11 is about to convert, checked first so that a refusal names the flag and the
// value: counts become plain integers, integers must be whole, numbers must be numbers.
CLI::Validator value_check(const std::string& flag, const std::string& type) {
  const bool count = std::find(std::begin(kCountFlags), std::end(kCountFlags), flag) != std::end(kCountFlags);
  return CLI::Validator(
      [flag, type, count](std::string& text) {
        // A list where the command takes one value: say so, and where lists are taken.
        if (text.find(',') != std::string::npos)
          fail_flag(flag, text, "takes one value here, not a list (cost sweeps --chunk; crossover --prefix, --tp and --kv-dtype; report sweeps in its spec)");
        if (count) {
          const std::int64_t limit = std::int64_t{1} << 62;
          text = std::to_string(parse_whole(flag.c_str(), text, flag == "--batch" || flag == "--sequences" || flag == "--max-num-seqs" ? "sequences" : "tokens", -limit, limit));
        } else if (type == "INT") {
          std::int64_t v = 0;
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
          if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) fail_flag(flag, text, "expected a whole number");
        } else {
          // Not finite (nan, inf) passes: the flag's own range check names what it expects.
          std::size_t used = 0;
          try {
            (void)std::stod(text, &used);
          } catch (const std::exception&) {
            used = 0;
          }
          if (text.empty() || used != text.size()) fail_flag(flag, text, "expected a number");
        }
        return std::string{};
      },
      "", "value");
}

}  // namespace

void strict_numbers(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string type = o->get_type_name();
    if (type == "INT" || type == "FLOAT") o->transform(value_check(o->get_name(), type));
  }
  for (CLI::App* sub : app.get_subcommands({})) strict_numbers(*sub);
}

void add_model_flags(CLI::App* app, ModelFlags& f) {
  app->add_option("--model,-m", f.model, "bundled model name, a config.json, or a folder holding one")->capture_default_str();
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
  const Parallelism p{positive("--tp", tp, 1 << 20), positive("--dp", dp, 1 << 20), positive("--ep", ep, 1 << 20)};
  if (const LayoutVerdict v = check_layout(m, p); !v.ok()) fail_layout(m, p, v);
  return p;
}

KvDtype resolve_kv_dtype(Context& ctx, const std::string& s, const ModelSpec& m) {
  const auto d = parse_kv_dtype(s);
  if (!d) fail_flag("--kv-dtype", s, "expected one of fp32, bf16, fp16, fp8, fp8_flashmla, fp4");
  if (*d == KvDtype::fp8_flashmla && !m.is_mla())
    fail_flag("--kv-dtype", s, fmt::format("FlashMLA's layout needs an MLA model; {} is {}", m.name, to_string(m.attention)));
  if (*d == KvDtype::fp8_flashmla && !flashmla_defines_layout(*m.mla))
    warn(ctx, flag_message("--kv-dtype", s,
                           fmt::format("FlashMLA defines this layout for kv_lora_rank 512 and qk_rope_head_dim 64, not {} and {}: its bytes are extrapolated",
                                       m.mla->kv_lora_rank, m.mla->qk_rope_head_dim)));
  return *d;
}

WeightDtype resolve_weight_dtype(const std::string& s) {
  const auto d = parse_weight_dtype(s);
  if (!d) fail_flag("--weight-dtype", s, "expected one of fp32, bf16, fp16, fp8, fp8_tensor, mxfp4, int4, int8");
  return *d;
}

void emit(Context& ctx, const Document& doc, const std::string& format) {
  const std::string text = render(doc, parse_format(format));
  for (const std::string& w : ctx.warnings) ctx.err << "mlaplan: warning: " << w << "\n";
  ctx.warnings.clear();
  ctx.err << std::flush;
  ctx.out << text << std::flush;
}

void add_roofline_flags(CLI::App* app, RooflineFlags& f) {
  app->add_option("--gpu,-g", f.gpu, "bundled GPU name or a hardware JSON file")->capture_default_str();
  app->add_option("--dtype", f.dtype, "compute dtype: its dense peak and activation width (bf16 | fp16 | fp8 | fp32 | tf32)")->capture_default_str();
  app->add_option("--eta-compute", f.eta_compute, "one fraction of peak FLOP/s for every op instead of the calibrated profile");
  app->add_option("--eta-memory", f.eta_memory, "one fraction of peak bandwidth for every op instead of the calibrated profile");
  app->add_flag("--sol", f.sol, "speed of light: every op at peak, no fixed costs (default: the GPU's calibrated efficiency profile)");
  app->add_option("--launch-us", f.launch_us, "fixed cost per op in microseconds")->capture_default_str();
}

RooflineUsed RooflineFlags::resolve() const {
  RooflineUsed r;
  r.hw = load_gpu(gpu);
  const auto d = parse_dtype(dtype);
  if (!d) fail_flag("--dtype", dtype, "expected one of fp32, tf32, bf16, fp16, fp8, fp4");
  r.compute = *d;
  if (!r.hw.peak_flops(*d)) fail_key(r.hw.source, "dense_peak_tflops", dtype, fmt::format("{} has no {} peak", r.hw.name, dtype));
  r.eta = r.hw.efficiency;
  bool uniform = false;
  for (auto [flag, value, target] : {std::tuple{"--eta-compute", eta_compute, &r.eta.compute}, std::tuple{"--eta-memory", eta_memory, &r.eta.memory}}) {
    if (value < 0) continue;
    if (!(value > 0 && value <= 1)) fail_flag(flag, fmt::format("{}", value), "expected a fraction in (0, 1]");
    if (sol) fail_flag(flag, fmt::format("{}", value), "--sol is every op at peak; give one or the other");
    *target = value;
    r.eta.source = "command line";
    uniform = true;
  }
  if (!(launch_us >= 0 && launch_us < 1e6)) fail_flag("--launch-us", fmt::format("{}", launch_us), "expected microseconds in [0, 1e6)");
  const Seconds launch{launch_us * 1e-6};
  if (sol) {
    r.eta = Efficiency{};
    r.eta.source = "speed of light (--sol)";
    r.rf = roofline_for(r.hw, r.compute, r.eta, launch);
  } else if (uniform) {
    r.rf = roofline_for(r.hw, r.compute, r.eta, launch);
  } else {
    r.rf = default_roofline(r.hw, r.compute, bundled_efficiency());
    r.rf.launch = launch;  // the ops no family of the profile calibrates
    r.eta.compute = r.rf.eta_compute, r.eta.memory = r.rf.eta_memory, r.eta.source = r.rf.eta_source;
  }
  return r;
}

void add_workload_flags(CLI::App* app, WorkloadFlags& f) {
  app->add_option("--query,-q", f.query, "new query tokens per sequence (Q > 1 after a prefix: MTP or speculative decoding)")->capture_default_str();
  app->add_option("--prefix,-p", f.prefix, "cached tokens before the new ones (P)")->capture_default_str();
  app->add_option("--batch,-b", f.batch, "sequences in the step")->capture_default_str();
  app->add_option("--mix", f.mix, "a mixed batch: COUNTxQUERY@PREFIX,... e.g. 64x1@8192,2x2048@0");
  app->add_flag("--non-causal", f.non_causal, "every query sees every key");
  app->add_option("--kv-dtype", f.kv_dtype, "fp32 | bf16 | fp16 | fp8 | fp8_flashmla | fp4")->capture_default_str();
  app->add_option("--weight-dtype", f.weight_dtype, "dtype weights are read in (default: the config's quantization)");
  app->add_option("--chunk", f.chunk, "chunked expand: keys of the batch expanded per chunk; a list or range (1024,4096 or 1k:64k:x4) costs each")
      ->capture_default_str();
  app->add_option("--spec-tokens", f.spec_tokens,
                  "speculative decoding with this many draft tokens: a request with Q <= 1 + this after a prefix is a verification "
                  "step, which engines run as decode")
      ->capture_default_str();
}

void add_dispatch_flag(CLI::App* app, std::string& engine) {
  app->add_option("--engine", engine,
                  "judge one engine's dispatch rules: vllm | sglang | trtllm[@VERSION] or a rules file (default: every engine's newest, "
                  "engines/dispatch/)");
}

std::optional<Bytes> resolve_workspace_gib(double gib) {
  if (gib < 0) return std::nullopt;
  if (!(gib <= 1e6)) fail_flag("--workspace-gib", fmt::format("{}", gib), "expected GiB from 0 to 10^6");
  return Bytes{static_cast<std::int64_t>(gib * static_cast<double>(kGiB))};
}

std::int64_t resolve_spec_tokens(std::int64_t n) {
  if (n < 0 || n > 64) fail_flag("--spec-tokens", std::to_string(n), "expected draft tokens from 0 to 64");
  return n;
}

std::vector<EnginePolicy> resolve_policies(const std::string& engine, const ModelSpec& m) {
  std::vector<EnginePolicy> p = engine.empty() ? default_policies() : load_dispatch(engine, "--engine").policies;
  if (const std::string problem = dispatch_problem(p, m); !problem.empty()) fail_flag("--engine", engine, problem);
  return p;
}

std::vector<SequenceGroup> parse_mix(const std::string& text) {
  std::vector<SequenceGroup> groups;
  for (const std::string& item : split(text, ',')) {
    const auto x = item.find('x'), at = item.find('@');
    if (x == std::string::npos || at == std::string::npos || at < x) fail_flag("--mix", text, fmt::format("'{}' is not COUNTxQUERY@PREFIX", item));
    SequenceGroup g;
    const double count = parse_count("--mix", text, item.substr(0, x));
    g.query = parse_count("--mix", text, item.substr(x + 1, at - x - 1));
    g.prefix = parse_count("--mix", text, item.substr(at + 1));
    if (count < 1 || count != std::floor(count) || count > 1e7)
      fail_flag("--mix", text, fmt::format("count in '{}' must be a whole number from 1 to 1e7", item));
    if (g.query < 1 || g.prefix < 0) fail_flag("--mix", text, fmt::format("'{}' needs query >= 1 and prefix >= 0", item));
    if (g.query > 1e9 || g.prefix > 1e12) fail_flag("--mix", text, fmt::format("'{}' is out of range (query <= 1e9, prefix <= 1e12)", item));
    g.count = static_cast<std::int64_t>(count);
    groups.push_back(g);
  }
  return groups;
}

std::vector<double> WorkloadFlags::chunks() const {
  const std::vector<double> v = parse_number_list("--chunk", chunk, 0, 64);
  for (double c : v)
    if (!(c >= 1 && c <= 1e12 && c == std::floor(c))) fail_flag("--chunk", chunk, "expected whole numbers of tokens in [1, 1e12]");
  return v;
}

Workload WorkloadFlags::resolve(Context& ctx, const ModelSpec& m, const Parallelism& par, DType compute) const {
  Workload w;
  if (!mix.empty()) {
    w.groups = parse_mix(mix);
    double longest = 0;
    for (const SequenceGroup& g : w.groups) longest = std::max(longest, g.prefix + g.query);
    warn_context(ctx, m, "--mix", mix, longest);
  } else {
    if (!(query >= 1 && query <= 1e9)) fail_flag("--query", fmt::format("{}", query), "expected a number of tokens in [1, 1e9]");
    if (!(prefix >= 0 && prefix <= 1e12)) fail_flag("--prefix", fmt::format("{}", prefix), "expected a number of tokens in [0, 1e12]");
    w.groups = {SequenceGroup{positive("--batch", batch, 10'000'000), query, prefix}};
    warn_context(ctx, m, "--prefix", fmt::format("{}", prefix), prefix + query);
  }
  w.causal = !non_causal;
  w.compute = compute;
  w.kv = resolve_kv_dtype(ctx, kv_dtype, m);
  w.weights = weight_dtype.empty() ? attention_weight_dtype(m) : resolve_weight_dtype(weight_dtype);
  w.par = par;
  w.chunk = chunks().front();
  w.spec_tokens = resolve_spec_tokens(spec_tokens);
  return w;
}

}  // namespace mlaplan::cli
