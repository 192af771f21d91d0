#include "mlaplan/core/study.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "mlaplan/core/crossover.hpp"

namespace mlaplan {

namespace {

// One path over the whole model: a plan per layer kind and how many layers have it; for standard
// attention, full-attention layers first, then sliding windows from the narrowest.
std::vector<std::pair<PathPlan, std::int64_t>> model_plans(const ModelSpec& m, const Workload& w, PathKind kind) {
  if (kind != PathKind::standard) return {{mla_path(m, w, kind), m.num_layers()}};
  std::vector<LayerGroup> groups = layer_groups(m);
  std::stable_sort(groups.begin(), groups.end(), [](const LayerGroup& a, const LayerGroup& b) {
    return std::pair{a.kind.sliding, a.kind.window} < std::pair{b.kind.sliding, b.kind.window};
  });
  std::vector<std::pair<PathPlan, std::int64_t>> parts;
  for (const LayerGroup& g : groups) parts.push_back({standard_path(m, w, g.kind.sliding ? g.kind.window : 0), g.layers});
  return parts;
}

}  // namespace

namespace {

PathResult result_of(const std::vector<std::pair<PathPlan, std::int64_t>>& plans, PathKind kind, const Roofline& rf,
                     const std::optional<Bytes>& budget) {
  PathResult r{kind, {}, {}, {}, {}, {}};
  const Roofline sol = speed_of_light(rf);
  for (const auto& [plan, layers] : plans) {
    r.cost += path_cost(plan, rf) * static_cast<double>(layers);
    r.bound += path_cost(plan, sol).time * static_cast<double>(layers);
    for (const Op& op : plan) r.ops.push_back(OpRow{op, layers, op_time(op, rf), op_time(op, sol).time});
  }
  if (budget && r.cost.workspace_bytes.value > static_cast<double>(budget->value)) {
    std::ostringstream why;
    why << "its largest workspace (" << std::llround(r.cost.workspace_bytes.value / static_cast<double>(kMiB))
        << " MiB) exceeds the memory left after weights and KV (" << budget->value / kMiB << " MiB)";
    r.feasible = Verdict::no(why.str());
  }
  return r;
}

std::string describe_groups(const Workload& w, const std::vector<bool>& absorbed, bool which) {
  std::ostringstream s;
  bool first = true;
  for (std::size_t i = 0; i < w.groups.size(); ++i)
    if (absorbed[i] == which) {
      const SequenceGroup& g = w.groups[i];
      s << (first ? "" : ",") << g.count << "x" << std::llround(g.query) << "@" << std::llround(g.prefix);
      first = false;
    }
  return s.str();
}

// A division of the batch between the absorbed kernels (absorb, or sparse with DSA) and the
// expanded ones (`expanded`): the whole-batch path when one side is empty, else split.
PathResult divided(const ModelSpec& m, const Workload& w, const std::vector<bool>& absorbed, PathKind expanded, const Roofline& rf,
                   const std::optional<Bytes>& budget) {
  const PathKind absorbed_kind = m.indexer ? PathKind::sparse : PathKind::absorb;
  const bool all = std::all_of(absorbed.begin(), absorbed.end(), [](bool a) { return a; });
  const bool none = std::none_of(absorbed.begin(), absorbed.end(), [](bool a) { return a; });
  if (all || none) return result_of({{mla_path(m, w, all ? absorbed_kind : expanded), m.num_layers()}}, all ? absorbed_kind : expanded, rf, budget);
  PathResult r = result_of({{split_path(m, w, absorbed, absorbed_kind, expanded), m.num_layers()}}, PathKind::split, rf, budget);
  std::ostringstream d;
  d << to_string(absorbed_kind) << ": " << describe_groups(w, absorbed, true) << "; " << to_string(expanded) << ": " << describe_groups(w, absorbed, false);
  r.detail = d.str();
  return r;
}

}  // namespace

CostStudy cost_study(const ModelSpec& m, const Workload& w, const Roofline& rf, std::optional<Bytes> budget,
                     const std::vector<EnginePolicy>& policies, const std::vector<double>& chunks) {
  CostStudy s;
  s.layers = m.num_layers();
  s.workspace_budget = budget;
  for (PathKind k : paths_for(m)) {
    if (k != PathKind::chunked) {
      s.paths.push_back(result_of(model_plans(m, w, k), k, rf, budget));
      continue;
    }
    for (double c : chunks.empty() ? std::vector<double>{w.chunk} : chunks) {
      Workload wc = w;
      wc.chunk = c;
      s.paths.push_back(result_of(model_plans(m, wc, k), k, rf, budget));
      s.paths.back().chunk = c;
    }
  }
  const bool mla = m.is_mla();
  auto find = [&s](PathKind k) -> const PathResult* {
    for (const PathResult& p : s.paths)
      if (p.kind == k) return &p;
    return nullptr;
  };
  // The fastest feasible chunked path (the first when none fits), and the faster feasible expanded
  // path (chunked bounds the workspace of expand).
  const PathResult* bounded = nullptr;
  for (const PathResult& p : s.paths)
    if (p.kind == PathKind::chunked &&
        (!bounded || (p.feasible.ok() && (!bounded->feasible.ok() || p.cost.time.value < bounded->cost.time.value))))
      bounded = &p;
  Workload w_expanded = w;  // the batch with the chunk the expanded side runs at
  if (bounded) w_expanded.chunk = bounded->chunk;
  PathKind expanded = PathKind::expand;
  if (mla) {
    const PathResult *e = find(PathKind::expand), *c = bounded;
    if (e && c && (!e->feasible.ok() || (c->feasible.ok() && c->cost.time.value < e->cost.time.value))) expanded = PathKind::chunked;
  }
  // Split: the batch's groups ordered by query length; absorb the shortest k, expand the rest (the
  // division vLLM makes at its threshold); the best k, the ends included, so that a mixed batch's
  // split never costs more than its best single path (then it is that path, said in its detail).
  if (mla && w.groups.size() > 1) {
    std::vector<std::size_t> order(w.groups.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&w](std::size_t a, std::size_t b) { return w.groups[a].query < w.groups[b].query; });
    bool mixed = false;
    for (std::size_t k = 1; k < order.size(); ++k) mixed = mixed || w.groups[order[k]].query != w.groups[order[k - 1]].query;
    std::optional<PathResult> best;
    for (std::size_t k = 0; mixed && k <= order.size(); ++k) {
      if (k > 0 && k < order.size() && w.groups[order[k]].query == w.groups[order[k - 1]].query) continue;  // same length: same side
      std::vector<bool> absorbed(w.groups.size(), false);
      for (std::size_t j = 0; j < k; ++j) absorbed[order[j]] = true;
      PathResult r = divided(m, w_expanded, absorbed, expanded, rf, budget);
      if (r.kind != PathKind::split) r.detail = "every group " + std::string(to_string(r.kind));
      r.kind = PathKind::split;
      if (r.feasible.ok() && (!best || r.cost.time.value < best->cost.time.value)) best = std::move(r);
    }
    if (best) {
      if (expanded == PathKind::chunked) best->chunk = w_expanded.chunk;
      s.paths.push_back(std::move(*best));
    }
  }

  double min_flops = INFINITY, min_time = INFINITY, max_flops = 0, max_time = 0;
  std::size_t competing = 0;
  auto compete = [&](const PathResult& r) {
    ++competing;
    if (r.cost.flops.value < min_flops) min_flops = r.cost.flops.value, s.cheaper_by_flops = r.kind;
    if (r.cost.time.value < min_time) min_time = r.cost.time.value, s.cheaper_by_time = r.kind;
    max_flops = std::max(max_flops, r.cost.flops.value);
    max_time = std::max(max_time, r.cost.time.value);
  };
  // Chunked is expand with a bounded workspace: it competes only in expand's place, when expand does not fit.
  for (const PathResult& r : s.paths)
    if (r.kind != PathKind::chunked && r.feasible.ok()) compete(r);
  const PathResult* full = find(PathKind::expand);  // after split's push_back
  for (const PathResult& p : s.paths)
    if (p.kind == PathKind::chunked && p.chunk == w_expanded.chunk) {
      if (full && !full->feasible.ok() && p.feasible.ok()) compete(p);
      break;
    }
  if (paths_for(m).size() > 1 && competing > 0) {
    s.flops_ratio = max_flops / min_flops;
    s.time_ratio = max_time / min_time;
  } else {
    s.cheaper_by_flops.reset();
    s.cheaper_by_time.reset();
  }

  if (mla) {
    for (const EnginePolicy& e : policies) {
      const EngineDispatch d = dispatch(e, m, w);
      Workload we = w;
      if (e.fold_weights) we.fold_weights = e.fold_weights;  // the engine's own copies of W_UK/W_UV
      const PathKind kind = engine_expanded_kind(e, w, d.absorbed);
      if (kind == PathKind::chunked) we.chunk = e.chunk_tokens;
      EngineChoice c{e.key, e.name, e.engine, divided(m, we, d.absorbed, kind, rf, budget), 0};
      // An engine whose path does not fit cannot run the batch this way: no penalty, a reason.
      c.penalty = !c.path.feasible.ok() ? INFINITY : std::isfinite(min_time) ? c.path.cost.time.value / min_time - 1 : 0;
      s.engines.push_back(std::move(c));
    }
  }
  return s;
}

namespace {

WorkspaceBudget budget_with(const ModelSpec& m, const HardwareSpec& hw, const Workload& w, double mem_util, Bytes weights) {
  const Bytes total = hw.memory_torch_total.value > 0 ? hw.memory_torch_total : hw.memory_capacity;
  const double usable = static_cast<double>(total.value) * mem_util;
  Bytes kv{0};
  for (const SequenceGroup& g : w.groups) {
    const auto tokens = static_cast<std::int64_t>(std::ceil(g.prefix + g.query));
    kv += sequence_kv_bytes(m, w.kv, w.par.tp, tokens, 1) * static_cast<std::int64_t>(sequences_per_rank(g, w.par));
  }
  const double left = usable - static_cast<double>(weights.value) - static_cast<double>(kv.value);
  return WorkspaceBudget{Bytes{static_cast<std::int64_t>(std::max(0.0, left))}, Bytes{static_cast<std::int64_t>(std::max(0.0, -left))}};
}

}  // namespace

WorkspaceBudget workspace_budget(const ModelSpec& m, const HardwareSpec& hw, const Workload& w, double mem_util) {
  return budget_with(m, hw, w, mem_util, weight_bytes_per_rank(m, default_weight_plan(m), w.par));
}

WorkspaceBudgetFn step_workspace_budget(const ModelSpec& m, const HardwareSpec& hw, double mem_util) {
  // The weights per layout, computed once (the solvers ask for many steps of one layout).
  auto weights = std::make_shared<std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, Bytes>>();
  return [&m, hw, mem_util, weights](const Workload& w) -> std::optional<Bytes> {
    const auto key = std::tuple{w.par.tp, w.par.dp, w.par.ep};
    auto it = weights->find(key);
    if (it == weights->end()) it = weights->emplace(key, weight_bytes_per_rank(m, default_weight_plan(m), w.par)).first;
    const WorkspaceBudget b = budget_with(m, hw, w, mem_util, it->second);
    if (b.shortfall.value > 0) return std::nullopt;
    return b.left;
  };
}

std::int64_t sparse_crossover_tokens(const ModelSpec& m, const Workload& base, const Roofline& rf, std::int64_t max_tokens) {
  if (!m.indexer) return 0;
  Workload w = base;
  const std::int64_t batch = w.groups.empty() ? 1 : w.groups.front().count;
  auto sparse_faster = [&](std::int64_t tokens) {
    w.groups.assign(1, SequenceGroup{batch, static_cast<double>(tokens), 0});
    const double sparse = path_cost(mla_path(m, w, PathKind::sparse), rf).time.value;
    const double dense = std::min(path_cost(mla_path(m, w, PathKind::absorb), rf).time.value, path_cost(mla_path(m, w, PathKind::expand), rf).time.value);
    return sparse < dense;
  };
  // Doubling to bracket the first length where sparse wins, then bisection (the dense paths' cost
  // grows as S², the sparse one's as S·k past k, so the comparison changes sign once).
  std::int64_t hi = 1;
  while (hi <= max_tokens && !sparse_faster(hi)) hi *= 2;
  if (hi > max_tokens) return sparse_faster(max_tokens) ? max_tokens : 0;
  std::int64_t lo = hi / 2;  // dense at lo (or lo == 0)
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (sparse_faster(mid) ? hi : lo) = mid;
  }
  return hi;
}

CrossoverStudy crossover_study(const ModelSpec& m, const Roofline& rf, const CrossoverSweepSpec& s, const Progress& progress) {
  CrossoverStudy st;
  const Roofline sol = speed_of_light(rf);
  st.asymptotic_flop_crossover_query = asymptotic_flop_crossover_query(mla_geometry(m, s.base));
  const std::size_t total = s.tps.size() * s.kvs.size() * s.prefixes.size();
  std::size_t done = 0;
  for (std::int64_t tp : s.tps) {
    const Parallelism par{tp, s.base.par.dp, 1};
    if (const LayoutVerdict v = check_layout(m, par); !v.ok()) {
      st.skipped.push_back({"TP " + std::to_string(tp), v.verdict});
      done += s.kvs.size() * s.prefixes.size();
      continue;
    }
    for (KvDtype kv : s.kvs) {
      Workload w = s.base;
      w.par = par;
      w.kv = kv;
      const MlaGeometry g = mla_geometry(m, w);
      for (double p : s.prefixes) {
        const double q = roofline_crossover_query(m, w, p, s.batch, rf, s.budget);
        st.rows.push_back(CrossoverRow{.tp = tp,
                                       .kv = kv,
                                       .prefix = p,
                                       .flop_crossover_query = flop_crossover_query(g, p, w.causal),
                                       .roofline_crossover_query = q,
                                       .sol_crossover_query = rf.calibrated() ? roofline_crossover_query(m, w, p, s.batch, sol, s.budget) : q,
                                       .engines = engine_outcomes(s.policies, m, g, w, p, s.batch, rf, s.max_query, s.budget)});
        if (progress) progress(++done, total);
      }
      if (m.indexer) {
        Workload sw = w;
        sw.groups.assign(1, SequenceGroup{s.batch, 1, 0});
        st.sparse.push_back(SparseCrossoverRow{tp, kv, sparse_crossover_tokens(m, sw, rf, std::int64_t{1} << 20)});
      }
    }
  }
  return st;
}

std::vector<LayoutCapacity> capacity_layouts(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& req,
                                             const std::function<Bytes(const Parallelism&)>& reserve) {
  const std::int64_t R = req.par.ranks();
  std::vector<Parallelism> layouts{req.par};
  auto add = [&](Parallelism p) {
    if (std::find(layouts.begin(), layouts.end(), p) == layouts.end()) layouts.push_back(p);
  };
  add({R, 1, 1});
  if (m.moe) add({R, 1, R});
  add({1, R, m.moe ? R : 1});
  std::vector<LayoutCapacity> out;
  for (const Parallelism& p : layouts) {
    CapacityRequest q = req;
    q.par = p;
    q.reserve = reserve(p);
    out.push_back({p, out.empty(), plan_capacity(m, hw, q)});
  }
  return out;
}

std::vector<WeightGroupRow> weight_groups(const ModelSpec& m, const WeightPlan& plan, const Parallelism& par) {
  std::vector<WeightGroupRow> rows;
  for (const auto& [g, params] : count_params(m).by_group)
    rows.push_back(WeightGroupRow{.group = g, .params = params, .bytes = Bytes{0}, .bytes_per_rank = Bytes{0}});
  for (const WeightTensor& t : weight_tensors(m))
    for (WeightGroupRow& r : rows)
      if (r.group == t.group) {
        r.bytes += tensor_bytes(t, plan);
        r.bytes_per_rank += tensor_bytes_per_rank(m, t, plan, par);
      }
  return rows;
}

std::vector<KvLayoutRow> kv_layouts(const ModelSpec& m, KvDtype d, const Parallelism& par, std::int64_t tokens, std::int64_t sequences,
                                    std::int64_t block_size) {
  const std::int64_t ranks = par.ranks();
  std::vector<std::pair<std::string, Parallelism>> options{{"requested", par}};
  if (par.tp != ranks) options.push_back({"all TP", {ranks, 1, 1}});
  if (par.dp != ranks) options.push_back({"all DP", {1, ranks, 1}});
  std::vector<KvLayoutRow> rows;
  for (const auto& [label, p] : options) {
    KvLayoutRow r{.label = label, .par = p, .bytes_per_token_per_rank = Bytes{0}, .bytes_per_rank = std::nullopt, .verdict = check_layout(m, p)};
    if (r.verdict.ok()) {
      r.bytes_per_token_per_rank = kv_bytes_per_token(m, d, p.tp).total() + indexer_bytes_per_token(m);
      if (tokens > 0) r.bytes_per_rank = sequence_kv_bytes(m, d, p.tp, tokens, block_size) * ceil_div(sequences, p.dp);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

KvStudy kv_study(const ModelSpec& m, KvDtype d, const Parallelism& par, std::int64_t tokens, std::int64_t sequences, std::int64_t block_size) {
  KvStudy st;
  st.kv = d;
  st.par = par;
  st.tokens = tokens;
  st.sequences = sequences;
  st.block_size = block_size;
  const std::vector<LayerGroup> groups = layer_groups(m);
  st.uniform = groups.size() == 1;
  st.per_token_per_layer = kv_bytes_per_token_per_layer(m, d, 1);
  st.per_token = kv_bytes_per_token(m, d, 1);
  st.indexer_per_token_per_layer = m.indexer ? indexer_bytes_per_token_per_layer(*m.indexer) : Bytes{0};
  st.indexer_per_token = indexer_bytes_per_token(m);
  st.per_token_per_rank = kv_bytes_per_token(m, d, par.tp).total() + st.indexer_per_token;
  if (tokens > 0) {
    st.total_bytes = sequence_kv_bytes(m, d, 1, tokens, block_size) * sequences;
    st.total_bytes_per_rank = sequence_kv_bytes(m, d, par.tp, tokens, block_size) * ceil_div(sequences, par.dp);
  }
  const Bytes per_layer_all = st.per_token_per_layer.total() + st.indexer_per_token_per_layer;
  for (const LayerGroup& g : groups) {
    KvLayerGroupRow r{.group = g, .bytes_per_token_per_layer = per_layer_all, .tokens_held = 0, .bytes_per_sequence = Bytes{0}};
    if (tokens > 0) {
      r.tokens_held = round_up(tokens_held(g.kind, tokens), block_size);
      r.bytes_per_sequence = per_layer_all * r.tokens_held * g.layers;
    }
    st.groups.push_back(r);
  }
  const double bf16 = static_cast<double>(kv_bytes_per_token(m, KvDtype::bf16).total().value);
  for (KvDtype k : all_kv_dtypes()) {
    if (k == KvDtype::fp8_flashmla && !m.is_mla()) continue;
    const Bytes all = kv_bytes_per_token(m, k, 1).total();
    st.dtypes.push_back(KvDtypeRow{.kv = k, .per_token_per_layer = kv_bytes_per_token_per_layer(m, k, 1), .per_token = all,
                                   .ratio_to_bf16 = static_cast<double>(all.value) / bf16});
  }
  if (m.mla) {
    MlaEquivalents e;
    e.mha_bytes_per_token_per_layer = mha_equivalent_bytes_per_token_per_layer(m, d);
    e.mha_ratio = e.mha_bytes_per_token_per_layer / st.per_token_per_layer.total();
    e.gqa_groups = gqa_equivalent_groups(*m.mla);
    e.gqa8_bytes_per_token_per_layer = gqa_kv_bytes_per_token_per_layer(1, m.mla->qk_nope_head_dim, d).total() * 8;
    st.equivalents = e;
  }
  st.layouts = kv_layouts(m, d, par, tokens, sequences, block_size);
  return st;
}

CapacityStudy capacity_study(const ModelSpec& m, const HardwareSpec& hw, const CapacityRequest& req,
                             const std::function<Bytes(const Parallelism&)>& reserve) {
  CapacityStudy st;
  st.request = req;
  st.request.reserve = reserve(req.par);
  st.result = plan_capacity(m, hw, st.request);
  st.weights = weight_groups(m, req.weights, req.par);
  st.layouts = capacity_layouts(m, hw, req, reserve);
  return st;
}

ModelSummary summarize(const ModelSpec& m) {
  ModelSummary s;
  s.params = count_params(m);
  for (const LayerSpec& l : m.layers) s.sliding_layers += l.sliding ? 1 : 0;
  s.cache_bytes_per_token_bf16 = kv_bytes_per_token(m, KvDtype::bf16).total() + indexer_bytes_per_token(m);
  return s;
}

Roofline report_roofline(const HardwareSpec& gpu, DType compute, const std::vector<EfficiencyProfile>& profiles) {
  return default_roofline(gpu, compute, profiles);
}

ReportStudy report_study(const ReportInputs& in, const Progress& progress) {
  ReportStudy st;
  st.in = &in;

  // KV bytes per token, per model (compared ones included) and cache dtype.
  std::vector<const NamedModel*> kv_models;
  for (const NamedModel& l : in.models) kv_models.push_back(&l);
  for (const NamedModel& l : in.compare_models) kv_models.push_back(&l);
  for (const NamedModel* l : kv_models) {
    const ModelSpec& m = l->spec;
    for (KvDtype d : in.kvs) {
      if (d == KvDtype::fp8_flashmla && !m.is_mla()) continue;
      KvRow r;
      r.model = l;
      r.kv = d;
      if (m.uniform_layers()) r.bytes_per_token_per_layer = kv_bytes_per_token_per_layer(m, d).total();
      r.bytes_per_token = kv_bytes_per_token(m, d).total();
      r.indexer_bytes_per_token = indexer_bytes_per_token(m);
      r.cache_bytes_per_token = r.bytes_per_token + r.indexer_bytes_per_token;
      if (m.is_mla()) {
        r.mha_equivalent_bytes_per_token = mha_equivalent_bytes_per_token_per_layer(m, d) * m.num_layers();
        r.mha_equivalent_ratio = *r.mha_equivalent_bytes_per_token / r.bytes_per_token;
      }
      st.kv.push_back(r);
    }
  }

  // Capacity per layout, dtype and context; and the denser context sweep for the plot.
  for (const NamedModel& l : in.models) {
    const ModelSpec& m = l.spec;
    for (const Parallelism& lay : in.layouts)
      if (const LayoutVerdict v = check_layout(m, lay); !v.ok())
        st.notes.push_back(to_string(lay) + " skipped for " + l.arg + ": " + v.verdict.reason + ".");
    for (const HardwareSpec& g : in.gpus) {
      for (const Parallelism& lay : in.layouts) {
        if (!check_layout(m, lay).ok()) continue;
        for (KvDtype d : in.kvs) {
          if (d == KvDtype::fp8_flashmla && !m.is_mla()) continue;
          CapacityRequest req;
          req.kv_dtype = d;
          req.weights = default_weight_plan(m);
          req.par = lay;
          req.mem_util = in.mem_util;
          req.block_size = in.block_size;
          req.reserve = activation_reserve_estimate(m, lay, in.batched_tokens);
          auto result = [&](std::int64_t ctx) {
            if (in.engine)
              return as_capacity_result(engine_capacity(m, g, *in.engine, req.weights, lay, d, in.engine_settings, ctx), m, lay, d, ctx);
            req.context = ctx;
            return plan_capacity(m, g, req);
          };
          for (std::int64_t ctx : in.contexts)
            st.capacity.push_back(CapacityRow{.model = &l, .gpu = &g, .par = lay, .kv = d, .context = ctx, .result = result(ctx)});
          for (double c : in.sequence_contexts) {
            const auto ctx = static_cast<std::int64_t>(c);
            st.sequences.push_back(CapacityRow{.model = &l, .gpu = &g, .par = lay, .kv = d, .context = ctx, .result = result(ctx)});
          }
        }
      }
    }
  }

  // Decode intensity per TP and dtype against the ridge point; the crossover for MLA models.
  std::size_t total = 0, done = 0;
  for (const NamedModel& l : in.models)
    if (l.spec.is_mla()) total += in.crossover_tps.size() * in.kvs.size() * in.prefixes.size() * in.gpus.size();
  for (const NamedModel& l : in.models) {
    const ModelSpec& m = l.spec;
    for (std::int64_t tp : in.crossover_tps)
      if (const LayoutVerdict v = check_layout(m, {tp, 1, 1}); !v.ok()) st.notes.push_back("TP " + std::to_string(tp) + " skipped for " + l.arg + ": " + v.verdict.reason + ".");
    for (const HardwareSpec& g : in.gpus) {
      const Roofline rf = report_roofline(g, in.compute, in.profiles);
      for (std::int64_t tp : in.crossover_tps) {
        if (!check_layout(m, {tp, 1, 1}).ok()) continue;
        for (KvDtype d : in.kvs) {
          if (d == KvDtype::fp8_flashmla && !m.is_mla()) continue;
          Workload w;
          w.groups = {SequenceGroup{in.batch, 1, static_cast<double>(in.decode_context - 1)}};
          w.compute = in.compute;
          w.kv = d;
          w.weights = attention_weight_dtype(m);
          w.par.tp = tp;
          for (PathKind k : paths_for(m)) {
            if (k == PathKind::chunked || k == PathKind::sparse) continue;
            const PathCost c = path_cost(k == PathKind::standard ? standard_path(m, w) : mla_path(m, w, k), rf);
            st.intensity.push_back(IntensityRow{.model = &l, .gpu = &g, .tp = tp, .kv = d, .path = k, .cost = c, .ridge = rf.ridge()});
          }
        }
      }
      if (m.is_mla()) {
        CrossoverSweepSpec sweep;
        sweep.prefixes = in.prefixes;
        sweep.tps = in.crossover_tps;
        sweep.kvs = in.kvs;
        sweep.batch = in.batch;
        sweep.max_query = in.max_query;
        sweep.base.compute = in.compute;
        sweep.base.weights = attention_weight_dtype(m);
        sweep.policies = in.policies;
        sweep.budget = step_workspace_budget(m, g, in.mem_util);
        const std::size_t before = done;
        const CrossoverStudy cs = crossover_study(m, rf, sweep, [&](std::size_t d, std::size_t) {
          done = before + d;
          if (progress) progress(done, total);
        });
        for (const CrossoverRow& r : cs.rows) st.crossover.push_back({&l, &g, r});
        for (const SparseCrossoverRow& r : cs.sparse) {
          std::ostringstream note;
          note << l.arg << " on " << g.name << ", TP " << r.tp << ", " << to_string(r.kv) << ": the sparse (DSA) path is faster than the dense ones "
               << (r.sparse_faster_from_tokens > 0 ? "from prompts of " + std::to_string(r.sparse_faster_from_tokens) + " tokens" : std::string("for no prompt length searched"))
               << " (" << in.batch << " per step, no prefix); SGLang runs dense MHA up to index_topk = " << m.indexer->topk << " keys.";
          st.notes.push_back(note.str());
        }
      }
      // The roofline step's ops, at the first of the report's cache dtypes the model can use.
      const Parallelism step_par{in.roofline_step.tp, 1, 1};
      if (const LayoutVerdict v = check_layout(m, step_par); !v.ok()) {
        if (&g == &in.gpus.front())
          st.notes.push_back("Roofline step skipped for " + l.arg + ": " + v.verdict.reason + "; set roofline_step.tp in the spec.");
        continue;
      }
      const auto step_kv = std::find_if(in.kvs.begin(), in.kvs.end(), [&](KvDtype d) { return d != KvDtype::fp8_flashmla || m.is_mla(); });
      if (step_kv == in.kvs.end()) {
        if (&g == &in.gpus.front())
          st.notes.push_back("Roofline step skipped for " + l.arg + ": none of the report's cache dtypes applies to its " +
                             std::string(to_string(m.attention)) + " attention.");
        continue;
      }
      Workload w;
      w.groups = {SequenceGroup{in.roofline_step.batch, in.roofline_step.query, in.roofline_step.prefix}};
      w.compute = in.compute;
      w.kv = *step_kv;
      w.weights = attention_weight_dtype(m);
      w.par = step_par;
      for (PathKind k : paths_for(m))
        for (const Op& op : k == PathKind::standard ? standard_path(m, w) : mla_path(m, w, k))
          st.roofline_ops.push_back(RooflineOpRow{.model = &l, .gpu = &g, .path = k, .op = op, .time = op_time(op, rf)});
    }
  }
  return st;
}

}  // namespace mlaplan
