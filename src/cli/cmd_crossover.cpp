// mlaplan crossover: the query length Q* where expand becomes cheaper than absorb, against
// prefix, TP and cache dtype, beside what serving engines hard-code.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "common.hpp"
#include "mlaplan/core/crossover.hpp"
#include "mlaplan/core/engines.hpp"
#include "mlaplan/io/error.hpp"

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
  std::string format = "table";
};

Value finite_or_null(double v) { return std::isfinite(v) ? Value{v} : Value{}; }

Document crossover_document(const CrossoverFlags& f) {
  const ModelSpec m = f.model.load();
  if (!m.is_mla()) fail_flag("--model", f.model.model, fmt::format("{} is {}: the expand/absorb crossover needs an MLA model", m.name, to_string(m.attention)));
  const ResolvedRoofline r = resolve_roofline(f.roofline);
  const std::vector<double> prefixes = parse_number_list("--prefix", f.prefixes, 0);
  const std::vector<std::int64_t> tps = parse_int_list("--tp", f.tps);
  std::vector<KvDtype> kvs;
  for (const std::string& k : split(f.kv_dtypes, ',')) kvs.push_back(resolve_kv_dtype(k, m));
  const std::int64_t batch = positive("--batch", f.batch, 10'000'000);
  const std::int64_t max_query = positive("--max-query", f.max_query, 1 << 20);
  for (double p : prefixes)
    if (p > 1e12) fail_flag("--prefix", f.prefixes, "prefixes must be at most 1e12");

  Workload base;
  base.causal = !f.non_causal;
  base.compute = r.compute;
  base.weights = f.weight_dtype.empty() ? attention_weight_dtype(m) : resolve_weight_dtype(f.weight_dtype);

  Document doc;
  doc.title = fmt::format("Expand/absorb crossover of {} on {}", m.name, r.hw.name);
  doc.fields = {{"model", "model", m.name, Unit::text},
                {"batch", "sequences per step", batch, Unit::count},
                {"causal", "causal", base.causal, Unit::text}};
  add_roofline_fields(doc, r);
  const double asym = asymptotic_flop_crossover_query(mla_geometry(m, base));
  doc.fields.push_back({"asymptotic_flop_crossover_query", "FLOP-only Q* as P grows", finite_or_null(asym), Unit::decimal});
  doc.fields.push_back({"max_query", "penalties searched over Q = 1 ..", max_query, Unit::count});

  const auto& engines = engine_policies();
  Table rows{"rows", "Q*: expand is cheaper for query blocks longer than this",
             {{"prefix", "prefix P", Unit::count},
              {"tp", "TP", Unit::count},
              {"kv_dtype", "KV", Unit::text},
              {"flop_crossover_query", "Q* FLOPs", Unit::decimal},
              {"roofline_crossover_query", "Q* roofline", Unit::decimal}},
             {}};
  for (const auto& e : engines) {
    rows.columns.push_back({std::string(e.key) + "_expands_from_query", "", Unit::count, true});
    rows.columns.push_back({std::string(e.key) + "_worst_penalty", std::string(e.key) + " worst", Unit::fraction});
    rows.columns.push_back({std::string(e.key) + "_worst_penalty_query", "at Q", Unit::count});
  }
  for (std::int64_t tp : tps) {
    if (m.heads % tp != 0)
      fail_key(m.source, "num_attention_heads", std::to_string(m.heads), fmt::format("not divisible by --tp {}", tp));
    for (KvDtype kv : kvs) {
      Workload w = base;
      w.tp = tp;
      w.dp = positive("--dp", f.dp, 1 << 20);
      w.kv = kv;
      const MlaGeometry g = mla_geometry(m, w);
      for (double p : prefixes) {
        std::vector<Value> row{static_cast<std::int64_t>(p), tp, std::string(to_string(kv)),
                               finite_or_null(flop_crossover_query(g, p, w.causal)),
                               finite_or_null(roofline_crossover_query(m, w, p, batch, r.rf))};
        for (const EngineOutcome& o : engine_outcomes(g, w, p, batch, r.rf, max_query)) {
          row.push_back(o.expands_from_query > 0 ? Value{o.expands_from_query} : Value{});
          row.push_back(o.worst_penalty);
          row.push_back(o.worst_penalty_query > 0 ? Value{o.worst_penalty_query} : Value{});
        }
        rows.rows.push_back(std::move(row));
      }
    }
  }
  doc.tables.push_back(std::move(rows));

  Table rules{"engines", "Engine policies as modelled (penalty: worst slowdown of the engine's choice over the faster path)",
              {{"engine", "engine", Unit::text}, {"name", "name", Unit::text}, {"rule", "rule", Unit::text}},
              {}};
  for (const auto& e : engines) rules.rows.push_back({std::string(e.key), std::string(e.name), std::string(e.rule)});
  doc.tables.push_back(std::move(rules));

  doc.notes = m.notes;
  doc.notes.push_back("FLOP-only Q* is closed form and the same at every TP; the roofline Q* solves T_expand(Q) = T_absorb(Q) by bracketed regula falsi to 1e-10 relative (attention core, per rank).");
  doc.notes.push_back("Q* = 0: expanding is no slower even for one query token (no prefix to expand); an empty Q*: absorb stays cheaper.");
  return doc;
}

}  // namespace

void register_crossover_command(CLI::App& app) {
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
  add_format_flag(c, f->format);
  c->callback([f] { emit(crossover_document(*f), f->format); });
}

}  // namespace mlaplan::cli
