// mlaplan crossover: the query length Q* where expand becomes cheaper than absorb, against
// prefix, TP and cache dtype, beside what serving engines hard-code.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "flags.hpp"
#include "mlaplan/core/study.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/hf_config.hpp"
#include "mlaplan/io/lists.hpp"

namespace mlaplan::cli {

namespace {

struct CrossoverFlags {
  ModelFlags model;
  RooflineFlags roofline;
  std::string prefixes = "0:131072:x2";
  std::string tps = "1,2,4,8";
  std::string kv_dtypes = "bf16";
  std::int64_t batch = 1;
  std::int64_t dp = 1;
  bool non_causal = false;
  std::string weight_dtype;
  std::int64_t max_query = 4096;
  std::int64_t spec_tokens = 0;
  double workspace_gib = -1;  // < 0: what the GPU leaves after weights and each step's KV
  std::string engine;
  bool explain = false;
  std::string format = "table";
};

Document crossover(const CrossoverFlags& f, Context& ctx) {
  const ModelSpec m = f.model.load(ctx);
  if (!m.is_mla()) fail_flag("--model", f.model.model, fmt::format("{} is {}: the expand/absorb crossover needs an MLA model", m.name, to_string(m.attention)));
  const RooflineUsed r = f.roofline.resolve();
  CrossoverSweepSpec s;
  s.prefixes = parse_number_list("--prefix", f.prefixes, 0);
  s.tps = parse_int_list("--tp", f.tps);
  for (const std::string& k : split(f.kv_dtypes, ',')) s.kvs.push_back(resolve_kv_dtype(ctx, k, m));
  s.batch = positive("--batch", f.batch, 10'000'000);
  s.max_query = positive("--max-query", f.max_query, 1 << 20);
  for (double p : s.prefixes)
    if (p > 1e12) fail_flag("--prefix", f.prefixes, "prefixes must be at most 1e12");
  warn_context(ctx, m, "--prefix", f.prefixes, *std::max_element(s.prefixes.begin(), s.prefixes.end()) + 1);
  s.base.causal = !f.non_causal;
  s.base.compute = r.compute;
  s.base.weights = f.weight_dtype.empty() ? attention_weight_dtype(m) : resolve_weight_dtype(f.weight_dtype);
  s.base.par.dp = positive("--dp", f.dp, 1 << 20);
  // Every TP asked for must be one the model can run: a flag the user typed is not skipped silently.
  for (std::int64_t tp : s.tps)
    if (const LayoutVerdict v = check_layout(m, {tp, s.base.par.dp, 1}); !v.ok()) fail_layout(m, {tp, s.base.par.dp, 1}, v);
  s.base.spec_tokens = resolve_spec_tokens(f.spec_tokens);
  s.policies = resolve_policies(f.engine, m);
  if (const std::optional<Bytes> fixed = resolve_workspace_gib(f.workspace_gib)) {
    s.budget = [fixed](const Workload&) { return fixed; };
  } else {
    s.budget = step_workspace_budget(m, r.hw, 0.9);
  }
  const CrossoverStudy st = crossover_study(m, r.rf, s);
  Document doc = crossover_document(m, r, s, st);
  if (f.explain) add_explain_table(doc, explain_crossover(m, r.rf, s, st));
  return doc;
}

}  // namespace

void register_crossover_command(CLI::App& app, Context& ctx) {
  auto f = std::make_shared<CrossoverFlags>();
  CLI::App* c = app.add_subcommand("crossover", "the query length where expanding beats absorbing, against prefix, TP and dtype");
  add_model_flags(c, f->model);
  add_roofline_flags(c, f->roofline);
  c->add_option("--prefix,-p", f->prefixes, "prefix lengths: a list or range, e.g. 0:131072:x2 or 1024,8192")->capture_default_str();
  c->add_option("--tp", f->tps, "tensor-parallel sizes, e.g. 1,2,4,8")->capture_default_str();
  c->add_option("--dp", f->dp, "data-parallel attention replicas (split the batch)")->capture_default_str();
  c->add_option("--kv-dtype", f->kv_dtypes, "cache dtypes, e.g. bf16,fp8_flashmla")->capture_default_str();
  c->add_option("--batch,-b", f->batch, "sequences per step")->capture_default_str();
  c->add_flag("--non-causal", f->non_causal, "every query sees every key");
  c->add_option("--weight-dtype", f->weight_dtype, "dtype W_UK/W_UV are read in (default: the config's quantization)");
  c->add_option("--max-query", f->max_query, "engine penalties are searched over Q = 1 .. this")->capture_default_str();
  c->add_option("--spec-tokens", f->spec_tokens, "speculative decoding's draft tokens (engines run Q <= 1 + this as decode)")->capture_default_str();
  c->add_option("--workspace-gib", f->workspace_gib,
                "memory one op's workspace may take per GPU (default: 0.9 x the GPU's memory - weights - the step's KV; unbounded where "
                "those exceed it)");
  add_dispatch_flag(c, f->engine);
  c->add_flag("--explain", f->explain, "the Q* derivation: the closed form, the equation solved and both paths' times at Q*");
  add_format_flag(c, f->format);
  c->callback([f, &ctx] { emit(ctx, crossover(*f, ctx), f->format); });
}

}  // namespace mlaplan::cli
