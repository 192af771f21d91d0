#include "mlaplan/core/engines.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

namespace mlaplan {

std::string_view to_string(ExtendRule r) {
  switch (r) {
    case ExtendRule::query_split: return "query_split";
    case ExtendRule::prefix_sum: return "prefix_sum";
    case ExtendRule::no_prefix: return "no_prefix";
    case ExtendRule::every_extend: return "every_extend";
  }
  return "?";
}

std::optional<ExtendRule> parse_extend_rule(std::string_view s) {
  for (ExtendRule r : {ExtendRule::query_split, ExtendRule::prefix_sum, ExtendRule::no_prefix, ExtendRule::every_extend})
    if (s == to_string(r)) return r;
  return std::nullopt;
}

std::string_view to_string(DsaRule r) {
  switch (r) {
    case DsaRule::sparse: return "sparse";
    case DsaRule::dense_short: return "dense_short";
    case DsaRule::packed_tokens: return "packed_tokens";
    case DsaRule::max_kv: return "max_kv";
    case DsaRule::unsupported: return "unsupported";
  }
  return "?";
}

std::optional<DsaRule> parse_dsa_rule(std::string_view s) {
  for (DsaRule r : {DsaRule::sparse, DsaRule::dense_short, DsaRule::packed_tokens, DsaRule::max_kv, DsaRule::unsupported})
    if (s == to_string(r)) return r;
  return std::nullopt;
}

bool EngineDispatch::all_absorbed() const { return std::all_of(absorbed.begin(), absorbed.end(), [](bool a) { return a; }); }
bool EngineDispatch::none_absorbed() const { return std::none_of(absorbed.begin(), absorbed.end(), [](bool a) { return a; }); }

namespace {

std::string tokens(double x) {
  std::ostringstream s;
  s << static_cast<long long>(x);
  return s.str();
}

}  // namespace

std::string describe(const EnginePolicy& e) {
  std::ostringstream s;
  const std::string t = tokens(e.threshold);
  switch (e.rule) {
    case ExtendRule::query_split:
      s << "splits the batch: requests with Q <= " << t << " absorb (decode kernels), the rest expand (reorder_batch_threshold " << t << ")";
      break;
    case ExtendRule::prefix_sum: s << "decode absorbs; an extend batch expands if the sum of its prefixes is 0 or >= " << t << ", else absorbs"; break;
    case ExtendRule::no_prefix: s << "decode absorbs; an extend batch expands only if none of its requests has a prefix"; break;
    case ExtendRule::every_extend: s << "decode absorbs; every extend (context) request expands"; break;
  }
  if (e.spec_as_decode) s << "; speculative verification (Q <= 1 + draft tokens) runs as decode";
  if (e.chunk_tokens > 0) s << "; the expanded keys are chunked " << tokens(e.chunk_tokens) << " at a time";
  s << ". DSA: ";
  switch (e.dsa) {
    case DsaRule::sparse: s << "every token runs the sparse kernels"; break;
    case DsaRule::dense_short:
      s << "dense MHA while every request's P + Q <= index_topk and their sum <= " << tokens(e.dsa_threshold) << ", else sparse";
      break;
    case DsaRule::packed_tokens: s << "dense MHA while the extend requests' packed tokens are <= " << tokens(e.dsa_threshold) << ", else sparse"; break;
    case DsaRule::max_kv:
      if (e.dsa_threshold > 0) s << "dense MHA while the longest extend request's P + Q is <= " << tokens(e.dsa_threshold) << ", else sparse";
      else s << "sparse (the dense short-sequence MHA threshold defaults to 0)";
      break;
    case DsaRule::unsupported: s << "not served (the version predates DeepSeek-V3.2)"; break;
  }
  return s.str();
}

EngineDispatch dispatch(const EnginePolicy& e, const ModelSpec& m, const Workload& w) {
  EngineDispatch d;
  d.absorbed.assign(w.groups.size(), true);
  const double spec_max = 1.0 + static_cast<double>(std::max<std::int64_t>(0, w.spec_tokens));
  // An extend request: more than one new token, and not a verification step run as decode.
  auto extend = [&](const SequenceGroup& g) {
    if (g.query <= 1) return false;
    return !(e.spec_as_decode && w.spec_tokens > 0 && g.prefix > 0 && g.query <= spec_max);
  };
  const bool dsa = m.indexer.has_value();
  if (!dsa && e.rule == ExtendRule::query_split) {
    // vLLM: per request; speculative decoding raises the threshold to 1 + draft tokens.
    const double threshold = e.spec_as_decode && w.spec_tokens > 0 ? std::max(e.threshold, spec_max) : e.threshold;
    for (std::size_t i = 0; i < w.groups.size(); ++i) d.absorbed[i] = w.groups[i].query <= threshold;
    return d;
  }
  // Sums over the extend requests of one rank's batch: data-parallel attention gives each rank its own batch.
  double prefix_sum = 0, kv_sum = 0, kv_max = 0;
  for (const SequenceGroup& g : w.groups) {
    if (!extend(g)) continue;
    const double b = sequences_per_rank(g, w.par);
    prefix_sum += b * g.prefix;
    kv_sum += b * (g.prefix + g.query);
    kv_max = std::max(kv_max, g.prefix + g.query);
  }
  bool expands = false;
  if (dsa) {
    switch (e.dsa) {
      case DsaRule::sparse:
      case DsaRule::unsupported: expands = false; break;  // unsupported: refused before costing (io)
      case DsaRule::dense_short: expands = kv_max <= static_cast<double>(m.indexer->topk) && kv_sum <= e.dsa_threshold; break;
      case DsaRule::packed_tokens: expands = kv_sum <= e.dsa_threshold; break;
      case DsaRule::max_kv: expands = kv_max <= e.dsa_threshold; break;
    }
  } else {
    switch (e.rule) {
      case ExtendRule::query_split: break;  // handled above
      case ExtendRule::prefix_sum: expands = prefix_sum == 0 || prefix_sum >= e.threshold; break;
      case ExtendRule::no_prefix: expands = prefix_sum == 0; break;
      case ExtendRule::every_extend: expands = true; break;
    }
  }
  for (std::size_t i = 0; i < w.groups.size(); ++i) d.absorbed[i] = !(expands && extend(w.groups[i]));
  return d;
}

PathKind engine_expanded_kind(const EnginePolicy& e, const Workload& w, const std::vector<bool>& absorbed) {
  if (e.chunk_tokens <= 0) return PathKind::expand;
  double keys = 0;
  for (std::size_t i = 0; i < w.groups.size(); ++i)
    if (!absorbed[i]) keys += sequences_per_rank(w.groups[i], w.par) * (w.groups[i].prefix + w.groups[i].query);
  return keys > e.chunk_tokens ? PathKind::chunked : PathKind::expand;
}

std::vector<EngineOutcome> engine_outcomes(const std::vector<EnginePolicy>& policies, const ModelSpec& m, const MlaGeometry& g,
                                           const Workload& base, double prefix, std::int64_t batch, const Roofline& rf,
                                           std::int64_t max_query, const WorkspaceBudgetFn& budget) {
  Workload w = base;
  w.groups.assign(1, SequenceGroup{batch, 1, prefix});
  std::vector<EngineOutcome> out(policies.size());
  const auto n = std::max<std::int64_t>(0, max_query);
  for (std::int64_t q = 1; q <= n; ++q) {
    w.groups[0].query = static_cast<double>(q);
    const Seconds t_absorb = path_cost(mla_path(g, w, PathKind::absorb), rf).time;
    const std::optional<PathPlan> best_expanded = feasible_expanded(g, w, budget ? budget(w) : std::nullopt);
    const double t_best = std::min(t_absorb.value, best_expanded ? path_cost(*best_expanded, rf).time.value : INFINITY);
    for (std::size_t e = 0; e < policies.size(); ++e) {
      const EngineDispatch d = dispatch(policies[e], m, w);
      EngineOutcome& o = out[e];
      double t = t_absorb.value;
      if (!d.all_absorbed()) {
        if (o.expands_from_query == 0) o.expands_from_query = q;
        Workload we = w;
        we.chunk = policies[e].chunk_tokens;
        t = path_cost(mla_path(g, we, engine_expanded_kind(policies[e], w, d.absorbed)), rf).time.value;
      }
      const double penalty = t / t_best - 1;
      if (penalty > o.worst_penalty) {
        o.worst_penalty = penalty;
        o.worst_penalty_query = q;
      }
    }
  }
  return out;
}

}  // namespace mlaplan
