#pragma once
// The expand/absorb crossover (formula reference §2, "Crossover"): the query-block length Q* at
// which expanding the cache becomes cheaper than absorbing the up-projections, for a prefix P.
#include <functional>
#include <limits>
#include <optional>

#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"

namespace mlaplan {

// FLOP-only, closed form. F_expand − F_absorb = U·P − pairs(Q)·Δ with U = 2·r·h_t·(d_n + d_v)
// (expanding one token) and Δ = 2·h_t·(2r + d_r) − 2·h_t·(d_n + d_r + d_v) (the extra cost of an
// absorbed pair). Causal pairs Q·P + Q(Q+1)/2 give ½Q² + (P + ½)Q − U·P/Δ = 0; non-causal
// Q·(P + Q) give Q² + P·Q − U·P/Δ = 0. Both scale with h_t, so Q* does not depend on TP.
// Returns +inf when an absorbed pair is not dearer than an expanded one (absorb always wins).
double flop_crossover_query(const MlaGeometry& g, double prefix, bool causal);

// The limit of the FLOP crossover as P grows: U / Δ = r·(d_n + d_v) / (2r − d_n − d_v).
// DeepSeek-V3: 512·256 / 768 = 170.7.
double asymptotic_flop_crossover_query(const MlaGeometry& g);

// Roofline crossover: the Q* > 0 where T_expand(Q) = T_absorb(Q) for `batch` sequences of
// prefix P, bracketed from the FLOP-only root and solved by safeguarded regula falsi to 1e-10
// relative. 0 when expand is already no
// slower as Q → 0; +inf when absorb stays faster up to 1e9 query tokens.
// With `budget` (the workspace one op may use for a step), the expanded side is the fastest plan that
// fits (expand, else chunked at the largest chunk that fits; never when not even that fits).
using WorkspaceBudgetFn = std::function<std::optional<Bytes>(const Workload&)>;
double roofline_crossover_query(const ModelSpec& m, const Workload& base, double prefix, std::int64_t batch,
                                const Roofline& rf, const WorkspaceBudgetFn& budget = {});

inline constexpr double kNoCrossover = std::numeric_limits<double>::infinity();

// The same solve under any time model: `path_time(plan, query)` gives a path's seconds for a step
// of `query` tokens.
double crossover_query(const MlaGeometry& g, const Workload& base, double prefix, std::int64_t batch,
                       const std::function<Seconds(const PathPlan&, double)>& path_time);

}  // namespace mlaplan
