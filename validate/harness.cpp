#include "harness.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace mlaplan::validate {

std::string Sample::op_name() const { return op ? std::string(to_string(*op)) : std::string("(path)"); }
std::string Sample::kind_name() const { return op ? std::string(to_string(kind_of(*op))) : std::string("path"); }

Timing timing_of(std::vector<double> t) {
  if (t.empty()) throw std::logic_error("timing_of: no runs");
  std::sort(t.begin(), t.end());
  const double med = t[t.size() / 2];
  return {Seconds{med}, med > 0 ? (t[(t.size() * 3) / 4] - t[t.size() / 4]) / med : 0};
}

ModelSpec model_for(const MlaShape& s) {
  ModelSpec m;
  m.name = "validation shape";
  m.attention = AttentionKind::mla;
  m.hidden = 7168;
  m.heads = s.heads;
  m.kv_heads = s.heads;
  m.mla = MlaDims{.kv_lora_rank = s.r, .qk_rope_head_dim = s.d_r, .qk_nope_head_dim = s.d_n, .v_head_dim = s.d_v, .q_lora_rank = 0};
  m.layers.resize(1);
  return m;
}

Workload workload_for(const MlaShape& s, DType compute, KvDtype kv, WeightDtype weights) {
  Workload w;
  w.groups = {SequenceGroup{s.batch, static_cast<double>(s.query), static_cast<double>(s.prefix)}};
  w.causal = s.causal;
  w.compute = compute;
  w.kv = kv;
  w.weights = weights;
  w.chunk = s.chunk;
  return w;
}

std::vector<Sample> time_paths(const MlaShape& s, const Workload& w, const std::vector<PathKernels>& paths, const Roofline& rf,
                               const Timer& timer, const CallCount& calls, bool train) {
  const ModelSpec m = model_for(s);
  std::vector<Sample> samples;
  for (const PathKernels& pk : paths) {
    const PathPlan plan = mla_path(m, w, pk.path);
    for (const OpKernel& k : pk.ops)
      if (!plan.find(k.op))
        throw std::logic_error(fmt::format("validation: a kernel times {}, which the {} path's plan does not have", to_string(k.op), to_string(pk.path)));
    std::vector<const OpKernel*> in_order;
    for (const Op& op : plan) {
      const auto k = std::find_if(pk.ops.begin(), pk.ops.end(), [&](const OpKernel& x) { return x.op == op.id; });
      if (k == pk.ops.end())
        throw std::logic_error(fmt::format("validation: no kernel for {} of the {} path", op.name(), to_string(pk.path)));
      in_order.push_back(&*k);
      const Timing t = timer(k->run);
      samples.push_back(Sample{.shape = s, .path = pk.path, .op = op.id, .flops = op.flops, .bytes = op.bytes(),
                               .calls = calls ? calls(pk.path, op.id, s) : 0, .measured = t.median, .spread = t.spread,
                               .sol = op_time(op, rf).time, .fit = Seconds{0}, .train = train});
    }
    const Timing t = timer(pk.whole ? pk.whole : [&] {
      for (const OpKernel* k : in_order) k->run();
    });
    samples.push_back(Sample{.shape = s, .path = pk.path, .op = std::nullopt, .flops = plan.flops(), .bytes = plan.bytes(), .calls = 0,
                             .measured = t.median, .spread = t.spread, .sol = path_cost(plan, rf).time, .fit = Seconds{0}, .train = train});
  }
  return samples;
}

Grid checkerboard_grid(const std::vector<int>& heads, const std::vector<int>& batches, const std::vector<int>& queries,
                       const std::vector<int>& prefixes, int chunk) {
  Grid g;
  for (std::size_t hi = 0; hi < heads.size(); ++hi)
    for (std::size_t bi = 0; bi < batches.size(); ++bi)
      for (std::size_t qi = 0; qi < queries.size(); ++qi)
        for (std::size_t pi = 0; pi < prefixes.size(); ++pi) {
          g.shapes.push_back(MlaShape{.heads = heads[hi], .batch = batches[bi], .query = queries[qi], .prefix = prefixes[pi], .chunk = chunk});
          g.train.push_back((hi + bi + qi + pi) % 2 == 0);
        }
  return g;
}

std::string read_first(const char* file, const char* key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      std::string v = colon == std::string::npos ? line : line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      return v;
    }
  return "unknown";
}

}  // namespace mlaplan::validate
