#pragma once
// The validation harness: calibrate, time every op and path of both MLA paths over a grid of
// shapes, predict each with the cost model (speed of light, and with efficiencies fitted on one
// half of the grid), report the error on the other half and the measured crossover.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <tuple>

#include <nlohmann/json.hpp>

#include "kernels_cpu.hpp"
#include "mlaplan/core/paths.hpp"
#include "mlaplan/core/roofline.hpp"

namespace mlaplan::validate {

// One timed op or path, with its predictions.
struct Sample {
  int heads = 0, batch = 0, query = 0, prefix = 0;
  std::string path, op, kind;  // op "(path)" for a whole path
  double flops = 0, bytes = 0;
  double calls = 0;                   // inner calls the kernel makes (a backend's dispatch cost)
  double measured_s = 0, spread = 0;  // median; (p75 − p25) / median
  double sol_s = 0, fit_s = 0;
  bool train = false;
};

// Per kernel (op): time = max(F / (peak·η_c), B / (bandwidth·η_m)) + t0 + calls · t_call.
struct KindFit {
  std::string kind;  // the op name the fit belongs to
  double eta_compute = 1, eta_memory = 1, t0_s = 0, t_call_s = 0;
  int train_points = 0;
};

// Fits η_c, η_m and t0 of each kernel by grid search, minimising Σ log²(predicted / measured).
std::vector<KindFit> fit_kinds(const std::vector<Sample>& train, const Roofline& rf);
double predict(const Sample& s, const KindFit& f, const Roofline& rf);
double predict_op(const Op& op, double calls, const std::vector<KindFit>& fits, const Roofline& rf);

// The inner calls a backend's kernel for `op` makes at a shape (0 where it launches once).
using CallCount = std::function<double(std::string_view op, const MlaShape& s)>;
// The CPU kernels' calls: one small product per head and key block of 256, and so on.
double cpu_calls(std::string_view op, const MlaShape& s);

// |predicted − measured| / measured: median and 90th percentile.
struct ErrorStats {
  std::size_t n = 0;
  double median = 0, p90 = 0;
};
ErrorStats ape_stats(std::vector<double> errors);

// Shapes and the cost model's view of them.
ModelSpec model_for(const MlaShape& s);
Workload workload_for(const MlaShape& s, DType compute, KvDtype kv, WeightDtype weights);
std::string read_first(const char* file, const char* key);
std::string today();

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
  std::vector<std::tuple<int, double, double>> points;
};

struct CpuOptions {
  bool quick = false;
  std::uint64_t seed = 0;  // 0: fresh from the random device
};

struct ValidationRun {
  std::vector<std::pair<std::string, std::string>> files;  // the output folder
  std::string summary;                                     // printed to stdout
  double held_out_median_ape = 0;                          // fitted, ops, test half
  bool checks_passed = false;
};

// Everything a backend measured; finish_validation fits, judges and writes the folder.
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
  CallCount calls;                  // the backend's dispatch count (null: none)
  std::string hardware_file;        // "calibrated-cpu.json"
  nlohmann::ordered_json hardware;  // the calibrated machine as a hardware spec
};
ValidationRun finish_validation(MeasuredRun&& m);

ValidationRun run_cpu_validation(const CpuOptions& opt, const std::function<void(const std::string&)>& progress);

}  // namespace mlaplan::validate
