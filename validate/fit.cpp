#include "fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace mlaplan::validate {

double log_error_sq(Seconds predicted, Seconds measured) {
  const double e = std::log(predicted / measured);
  return e * e;
}

namespace {

// The minimising combination of one grid and its loss.
std::pair<std::vector<double>, double> search(const std::vector<std::vector<double>>& axes,
                                              const std::function<double(const std::vector<double>&)>& loss) {
  std::vector<std::size_t> at(axes.size(), 0);
  std::vector<double> params(axes.size()), best;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (axes[i].empty()) return {{}, INFINITY};
    params[i] = axes[i][0];
  }
  double best_loss = INFINITY;
  while (true) {
    const double l = loss(params);
    if (l < best_loss) best_loss = l, best = params;
    // The next combination, the last axis fastest; done when the first axis wraps.
    std::size_t i = axes.size();
    while (true) {
      if (i == 0) return {best, best_loss};
      --i;
      if (++at[i] < axes[i].size()) {
        params[i] = axes[i][at[i]];
        break;
      }
      at[i] = 0;
      params[i] = axes[i][0];
    }
  }
}

// 9 values between the neighbours of `value` on `axis` (the value itself among them).
std::vector<double> finer(const std::vector<double>& axis, double value) {
  if (axis.size() < 2) return axis;
  const std::size_t k = static_cast<std::size_t>(std::lower_bound(axis.begin(), axis.end(), value) - axis.begin());
  const double lo = axis[k == 0 ? 0 : k - 1], hi = axis[std::min(k + 1, axis.size() - 1)];
  std::vector<double> v;
  for (int i = 0; i <= 8; ++i) {
    const double t = i / 8.0;
    v.push_back(lo > 0 ? lo * std::pow(hi / lo, t) : lo + (hi - lo) * t);
  }
  v.push_back(value);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

std::vector<double> grid_fit(const std::vector<std::vector<double>>& axes, const std::function<double(const std::vector<double>&)>& loss,
                             int refine) {
  auto [best, best_loss] = search(axes, loss);
  std::vector<std::vector<double>> grid = axes;
  for (int round = 0; round < refine && !best.empty(); ++round) {
    for (std::size_t i = 0; i < grid.size(); ++i) grid[i] = finer(grid[i], best[i]);
    auto [b, l] = search(grid, loss);
    if (l < best_loss) best = b, best_loss = l;
  }
  return best;
}

double least_as_good(double fitted, double lo, double tolerated, const std::function<double(double)>& loss) {
  for (const double v : geometric_axis(std::min(lo, fitted), fitted, 96))
    if (v >= fitted || loss(v) <= tolerated) return v;
  return fitted;
}

std::vector<double> geometric_axis(double lo, double hi, int steps) {
  std::vector<double> v;
  for (int i = 0; i <= steps; ++i) v.push_back(lo * std::pow(hi / lo, static_cast<double>(i) / steps));
  return v;
}

BytesPerSecond stream_bandwidth(double working_set, const CacheLevel& cache, const Roofline& rf) {
  return cache.bytes > 0 && working_set <= cache.bytes ? cache.bandwidth : rf.bandwidth;
}

CacheLevel cache_level(const std::vector<std::pair<double, double>>& sweep, BytesPerSecond dram_copy) {
  constexpr double probe = 4.0 * (1 << 20);  // past a core's L2, within a last-level cache
  double at4 = 0;
  for (const auto& [bytes, bw] : sweep)
    if (bytes <= probe) at4 = bw;
  if (!(at4 > 1.3 * dram_copy.value)) return {};
  CacheLevel c{.bytes = 0, .bandwidth = BytesPerSecond{at4}, .hits = {}};
  // Each swept size's share of hits: its copy time per byte is h / (the level's) + (1 − h) / (DRAM's).
  bool resident = true;
  for (const auto& [bytes, bw] : sweep) {
    if (bytes < probe) continue;
    const double h = std::clamp((1 / bw - 1 / dram_copy.value) / (1 / at4 - 1 / dram_copy.value), 0.0, 1.0);
    c.hits.push_back({bytes, h});
    resident = resident && h >= 0.75;
    if (resident) c.bytes = bytes;
  }
  return c;
}

std::string describe(const CacheLevel& c) {
  if (c.bytes <= 0) return "none";
  std::string shares;
  for (const auto& [bytes, h] : c.hits) shares += fmt::format("{}{:.0f}% at {:.0f} MiB", shares.empty() ? "" : ", ", 100 * h, bytes / (1 << 20));
  return fmt::format("{:.0f} GB/s up to {:.0f} MiB (copy's share of hits: {})", c.bandwidth.value / 1e9, c.bytes / (1 << 20), shares);
}

Seconds predict(const KernelFit& f, Flops flops, BytesF bytes, KernelWork work, const Roofline& rf, BytesPerSecond bandwidth) {
  const Seconds packing{f.eta_pack > 0 ? work.packed / (bandwidth.value * f.eta_pack) : 0.0};
  return std::max(flops / (rf.peak * f.eta_compute), bytes / (bandwidth * f.eta_memory)) + f.t0 + f.t_call * work.calls + packing;
}

std::vector<KernelFit> fit_kernels(const std::vector<Sample>& train, const Roofline& rf, const CacheLevel& cache) {
  // One fit per kernel (op id): the latent MQA and the per-head MHA are both attention but are
  // different kernels with different efficiencies.
  std::map<OpId, std::vector<const Sample*>> by_op;
  for (const Sample& s : train)
    if (s.op) by_op[*s.op].push_back(&s);
  const std::vector<double> etas_c = geometric_axis(0.01, 2, 40);
  const std::vector<double> etas_m = geometric_axis(0.01, 16, 48);  // caches beat DRAM on a CPU
  // A fixed cost beyond 20 µs would be no kernel launch, only a fit bending to few points.
  const std::vector<double> t0s{0, 0.5e-6, 1e-6, 2e-6, 5e-6, 10e-6, 20e-6};
  std::vector<KernelFit> fits;
  for (const auto& entry : by_op) {
    const OpId id = entry.first;
    const std::vector<const Sample*>& samples = entry.second;  // a named reference: lambdas capture it (clang 14 cannot capture bindings)
    auto any = [&samples](double Sample::*field) { return std::any_of(samples.begin(), samples.end(), [field](const Sample* x) { return x->*field > 0; }); };
    std::vector<double> t_calls{0}, packs{0};
    if (any(&Sample::calls))
      for (double t : geometric_axis(2e-8, 2e-5, 24)) t_calls.push_back(t);  // 20 ns .. 20 µs per call
    // Packing is a copy out of where the operand lives: 1% to 16x of that level's streaming bandwidth
    // (strided rows that miss, to panels a cache beyond the level holds); 0 where it cannot be told
    // from the arithmetic.
    if (any(&Sample::packed))
      for (double eta : geometric_axis(0.01, 16, 24)) packs.push_back(eta);
    auto model = [&](const std::vector<double>& p) {
      return KernelFit{.op = id, .eta_compute = p[0], .eta_memory = p[1], .t0 = Seconds{p[2]}, .t_call = Seconds{p[3]},
                       .train_points = static_cast<int>(samples.size()), .eta_pack = p[4]};
    };
    const std::vector<double> best = grid_fit(
        {etas_c, etas_m, t0s, t_calls, packs},
        [&](const std::vector<double>& p) {
          const KernelFit f = model(p);
          double loss = 0;
          for (const Sample* x : samples)
            loss += log_error_sq(predict(f, x->flops, x->bytes, {.calls = x->calls, .packed = x->packed}, rf, stream_bandwidth(x->working_set, cache, rf)),
                                 x->measured);
          return loss;
        },
        2);
    fits.push_back(model(best));
  }
  return fits;
}

const KernelFit* fit_for(const std::vector<KernelFit>& fits, OpId op) {
  for (const KernelFit& f : fits)
    if (f.op == op) return &f;
  return nullptr;
}

ErrorStats ape_stats(std::vector<double> e) {
  ErrorStats s;
  s.n = e.size();
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  s.median = e[e.size() / 2];
  s.p90 = e[std::min(e.size() - 1, static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(e.size())) - 1))];
  return s;
}

double ape(Seconds predicted, Seconds measured) { return std::fabs((predicted - measured) / measured); }

}  // namespace mlaplan::validate
