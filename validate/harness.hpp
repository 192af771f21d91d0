#pragma once
// The validation harness, shared by every backend: the shapes timed, the samples they give, the
// join of measured kernels to the cost model's ops (by OpId), and the run a backend hands over for
// fitting and reporting (results.hpp). Measuring lives in the backends (cpu_backend, cuda/), fitting
// in fit.hpp, judging and rendering in results.hpp.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mla_shape.hpp"
#include "mlaplan/core/hardware.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"

namespace mlaplan::validate {

// A memory level above DRAM that an op's repeated runs stay in when their working set fits: a CPU's
// last-level cache, calibrated by a copy sweep (`bytes` 0: none, every op streams from DRAM; GPU runs
// flush L2 or time past it). `hits`: the share of each swept size's copy that the level served, which
// `bytes` is read from (kept for the report).
struct CacheLevel {
  double bytes = 0;
  BytesPerSecond bandwidth{0};
  std::vector<std::pair<double, double>> hits;  // (working set in bytes, share of its bytes that hit)
};

// One timed op (or whole path) at one shape, with its predictions.
struct Sample {
  MlaShape shape;
  PathKind path = PathKind::absorb;
  std::optional<OpId> op;   // the op timed; empty: the whole path
  Flops flops{0};
  BytesF bytes{0};
  double calls = 0;         // inner calls the backend's kernel makes (its dispatch cost)
  double working_set = 0;   // bytes its repeated runs keep touching (MeasuredRun::working_set; 0: none)
  double packed = 0;        // bytes its library copies into blocked panels before multiplying (MeasuredRun::packed)
  Seconds measured{0};      // median
  double spread = 0;        // (p75 − p25) / median
  Seconds sol{0};           // speed of light
  Seconds fit{0};           // fitted efficiencies
  bool train = false;
  bool is_path() const { return !op.has_value(); }
  std::string op_name() const;    // the op's stable name, or "(path)"
  std::string kind_name() const;  // the op's kernel kind, or "path"
};

// A timing: the median of repeated runs and its spread, (p75 − p25) / median.
struct Timing {
  Seconds median{0};
  double spread = 0;
};
// From the runs' times in seconds (at least one).
Timing timing_of(std::vector<double> seconds);
using Timer = std::function<Timing(const std::function<void()>&)>;

// A backend's kernels for one path at one shape: one per op of the path's plan, and optionally the
// path run whole (default: the ops in plan order).
struct OpKernel {
  OpId op;
  std::function<void()> run;
};
struct PathKernels {
  PathKind path = PathKind::absorb;
  std::vector<OpKernel> ops;
  std::function<void()> whole;
};

// The inner calls (dispatches) a backend's kernel for `op` of `path` makes at a shape, as that backend
// counts them: the fit's per-call cost t_call is per call so counted. The path matters: the RoPE
// broadcast runs once on the expand path and once per chunk on chunked.
using CallCount = std::function<double(PathKind path, OpId op, const MlaShape& s)>;

// Times every op of each path's plan at `w` with the backend's kernel for that op id, then the path
// whole. A plan op without a kernel, or a kernel for an op the plan does not have, throws
// std::logic_error: the join of prediction and measurement cannot silently miss.
std::vector<Sample> time_paths(const MlaShape& s, const Workload& w, const std::vector<PathKernels>& paths, const Roofline& rf,
                               const Timer& timer, const CallCount& calls, bool train);

// The cost model's view of a validation shape: DeepSeek-V3 attention dims with `heads` per rank, one
// layer, and a workload of `batch` sequences of `query` tokens after `prefix`.
ModelSpec model_for(const MlaShape& s);
Workload workload_for(const MlaShape& s, DType compute, KvDtype kv, WeightDtype weights);

// The grid of shapes (DeepSeek dims) over heads × batch × query × prefix, split into training and
// held-out halves like a checkerboard over the axes' indices, so that every value of every axis
// (and every kernel) is in both halves.
struct Grid {
  std::vector<MlaShape> shapes;
  std::vector<bool> train;
};
Grid checkerboard_grid(const std::vector<int>& heads, const std::vector<int>& batches, const std::vector<int>& queries,
                       const std::vector<int>& prefixes, int chunk);

// Both paths timed whole across query lengths at one prefix: (Q, T_absorb, T_expand).
struct CrossoverSweep {
  int heads = 16, batch = 1, prefix = 0;
  std::vector<std::tuple<int, Seconds, Seconds>> points;
};

// A kernel against its float64 reference: the largest error relative to the reference's largest
// magnitude, and whether any output was left unwritten (outputs are poisoned with NaN first).
struct KernelCheck {
  std::string kernel;
  double max_rel_error = 0;
  double bound = 0;
  bool poisoned_left = false;
  bool ok() const { return !poisoned_left && max_rel_error <= bound; }
};

// Everything a backend measured; finish_validation (results.hpp) fits, judges and renders it.
struct MeasuredRun {
  std::string title, command, machine, calibration;
  bool quick = false;
  std::uint64_t seed = 0;
  std::vector<KernelCheck> checks;
  Roofline rf;  // the calibrated machine at speed of light
  DType compute = DType::fp32;
  KvDtype kv = KvDtype::fp32;
  WeightDtype weights = WeightDtype::fp32;
  std::vector<Sample> samples;
  std::vector<CrossoverSweep> sweeps;
  std::vector<std::string> extra_summary;
  CallCount calls;             // the backend's dispatch count (null: none)
  // The bytes an op's repeated runs keep touching (a chunk loop reuses its workspace per chunk), from
  // the op's bytes; null: all of them. Against `cache`, whether they stream from a cache or DRAM.
  std::function<double(PathKind path, OpId op, const MlaShape& s, double bytes)> working_set;
  CacheLevel cache;
  // The bytes an op's kernel packs (copies into the blocked layout its GEMM multiplies from) in one run,
  // at a shape; null: none. A cost beside the arithmetic, fitted per kernel as a packing bandwidth.
  std::function<double(PathKind path, OpId op, const MlaShape& s)> packed;
  // The split-KV partitions the backend's absorbed decode uses at a shape (null: one), so that a
  // prediction costs the split path that was timed.
  std::function<std::int64_t(const MlaShape&)> kv_splits;
  std::string hardware_file;   // "calibrated-cpu.json"
  HardwareSpec hardware;       // the calibrated machine as a hardware spec (written through io)
};

struct ValidationRun {
  std::vector<std::pair<std::string, std::string>> files;  // the output folder
  std::string summary;                                     // printed to stdout
  double held_out_median_ape = 0;                          // fitted, ops, test half
  bool checks_passed = false;
};

// The first line of `file` starting with `key`, after its colon ("unknown" when absent).
std::string read_first(const char* file, const char* key);

}  // namespace mlaplan::validate
