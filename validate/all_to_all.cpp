#include "all_to_all.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "fit.hpp"
#include "mlaplan/core/serving.hpp"
#include "mlaplan/io/csv_records.hpp"
#include "mlaplan/io/engine_json.hpp"
#include "mlaplan/io/error.hpp"
#include "mlaplan/io/registry.hpp"

namespace mlaplan::validate {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string>& columns() {
  static const std::vector<std::string> c = {"id",    "gpu",    "engine",  "mode",  "op",          "nodes", "gpus_per_node",
                                             "tokens", "hidden", "topk", "experts", "dtype", "measured_us", "source"};
  return c;
}

std::int64_t whole(const CsvCells& c, const std::string& key, std::int64_t lo, std::int64_t hi) {
  const auto v = c.integer(key, lo, hi);
  if (!v) fail_key(c.where, key, "(empty)", "required");
  return *v;
}

}  // namespace

std::vector<AllToAllMeasurement> parse_all_to_all_csv(const std::string& text, const std::string& where) {
  std::vector<AllToAllMeasurement> out;
  for (const CsvCells& c : csv_records(text, where, columns())) {
    AllToAllMeasurement r;
    r.file = where;
    r.id = c.required("id");
    r.gpu = c.required("gpu");
    r.engine = c.required("engine");
    r.mode = c.one_of("mode", {"low_latency", "normal", "allreduce"});
    r.op = c.one_of("op", {"dispatch", "combine", "allreduce"});
    if ((r.mode == "allreduce") != (r.op == "allreduce"))
      fail_key(c.where, "op", r.op, r.mode == "allreduce" ? "an allreduce row's op is allreduce" : "allreduce is the op of an allreduce row");
    r.dtype = c.one_of("dtype", {"fp8", "bf16"});
    r.nodes = whole(c, "nodes", 1, 4096);
    r.gpus_per_node = whole(c, "gpus_per_node", 1, 1024);
    r.tokens = whole(c, "tokens", 1, 1'000'000'000'000);
    r.hidden = whole(c, "hidden", 1, 1'000'000);
    r.experts = whole(c, "experts", 1, 100'000);
    r.topk = whole(c, "topk", 1, 100'000);
    if (r.topk > r.experts) fail_key(c.where, "topk", c.text("topk"), fmt::format("more than the {} experts", r.experts));
    if (r.mode == "allreduce")
      for (const auto& [key, v] : {std::pair<const char*, std::int64_t>{"topk", r.topk}, {"experts", r.experts}})
        if (v != 1) fail_key(c.where, key, c.text(key), "an all-reduce routes nothing: expected 1");
    if (r.nodes * r.gpus_per_node < 2)
      fail_key(c.where, "nodes", c.text("nodes"), fmt::format("an {} needs at least two ranks (nodes x gpus_per_node)", r.mode == "allreduce" ? "all-reduce" : "all-to-all"));
    const auto us = c.number("measured_us", 0, 1e12);
    if (!us || *us <= 0) fail_key(c.where, "measured_us", c.text("measured_us").empty() ? "(empty)" : c.text("measured_us"), "expected a positive number");
    r.measured_s = *us * 1e-6;
    r.source = c.required("source");
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<AllToAllMeasurement> read_all_to_all_measurements(const fs::path& dir_or_file) { return read_csv_folder(dir_or_file, parse_all_to_all_csv); }

std::vector<AllToAllCheck> check_all_to_all(const std::vector<AllToAllMeasurement>& rows) {
  std::vector<AllToAllCheck> out;
  std::map<std::string, StepOverheads> engines;  // each engine and GPU read once, not per row
  std::map<std::string, HardwareSpec> gpus;
  for (const AllToAllMeasurement& r : rows) {
    const std::string at = fmt::format("{} (row '{}')", r.file, r.id);
    if (!gpus.count(r.gpu)) gpus.emplace(r.gpu, load_gpu(r.gpu, at + " gpu"));
    const HardwareSpec& hw = gpus.at(r.gpu);
    if (!engines.count(r.engine)) {
      StepOverheads o;
      if (r.engine != "none") o = step_overheads(load_engine(r.engine, at + " engine"));
      engines[r.engine] = o;
    }
    if (r.gpus_per_node > 1 && hw.scale_up_bandwidth_per_direction.value <= 0)
      fail_key(at, "gpus_per_node", std::to_string(r.gpus_per_node), hw.name + " has no scale-up bandwidth (scale_up_bandwidth_gb_per_s_per_direction)");
    if (hw.scale_up_domain_gpus > 0 && r.gpus_per_node > hw.scale_up_domain_gpus)
      fail_key(at, "gpus_per_node", std::to_string(r.gpus_per_node), fmt::format("more than {}'s scale-up domain of {}", hw.name, hw.scale_up_domain_gpus));
    if (r.nodes > 1 && hw.scale_out_bandwidth_per_direction.value <= 0)
      fail_key(at, "nodes", std::to_string(r.nodes), hw.name + " has no network bandwidth (scale_out_bandwidth_gb_per_s_per_direction)");
    AllToAllCheck c;
    c.row = r;
    const LinkSpec links = links_for(hw, engines[r.engine]);
    if (r.mode == "allreduce") {
      const double values = static_cast<double>(r.tokens) * static_cast<double>(r.hidden);
      c.predicted_s = all_reduce_time(values * (r.dtype == "fp8" ? 1 : 2), static_cast<double>(r.nodes * r.gpus_per_node),
                                      static_cast<double>(r.gpus_per_node), links).value;
      c.error = c.predicted_s / r.measured_s - 1;
      out.push_back(std::move(c));
      continue;
    }
    const AllToAll a{.low_latency = r.mode == "low_latency",
                     .tokens = static_cast<double>(r.tokens),
                     .ep = static_cast<double>(r.nodes * r.gpus_per_node),
                     .gpus_per_node = static_cast<double>(r.gpus_per_node),
                     .hidden = static_cast<double>(r.hidden),
                     .topk = static_cast<double>(r.topk),
                     .experts = static_cast<double>(r.experts),
                     .value_bytes = r.dtype == "fp8" ? kBlockFp8ValueBytes : 2,
                     .imbalance = 1};
    c.predicted_s = all_to_all_time(a, links).time.value;
    c.error = c.predicted_s / r.measured_s - 1;
    out.push_back(std::move(c));
  }
  return out;
}

Document all_to_all_document(const std::vector<AllToAllCheck>& checks, bool rows) {
  Document doc;
  doc.title = "Collective timings (expert-parallel all-to-all, TP all-reduce) against the serving step's link model";
  Table summary{.name = "summary", .title = "Error by GPU, engine profile, kind and op",
                .columns = {{"gpu", "GPU", Unit::text},
                            {"engine", "engine profile", Unit::text},
                            {"mode", "kind", Unit::text},
                            {"op", "op", Unit::text},
                            {"nodes", "nodes (all-reduce: GPUs)", Unit::text},
                            {"rows", "rows", Unit::count},
                            {"median_abs_error", "median |error|", Unit::fraction},
                            {"p90_abs_error", "p90 |error|", Unit::fraction}},
                .rows = {}};
  // By kind and op over every node count ("all"), then per node count.
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::int64_t>, std::vector<double>> groups;
  std::vector<double> all;
  Table t{.name = "all_to_all", .title = "Per row: measured, predicted, error",
          .columns = {{"id", "row", Unit::text},
                      {"gpu", "GPU", Unit::text},
                      {"engine", "engine profile", Unit::text},
                      {"mode", "kind", Unit::text},
                      {"op", "op", Unit::text},
                      {"nodes", "nodes", Unit::count},
                      {"gpus_per_node", "GPUs per node", Unit::count},
                      {"tokens", "tokens per rank", Unit::count},
                      {"measured_s", "measured", Unit::seconds},
                      {"predicted_s", "predicted", Unit::seconds},
                      {"error", "error", Unit::fraction},
                      {"source", "source", Unit::text, true}},
          .rows = {}};
  for (const AllToAllCheck& c : checks) {
    const AllToAllMeasurement& r = c.row;
    t.rows.push_back({r.id, r.gpu, r.engine, r.mode, r.op, r.nodes, r.gpus_per_node, r.tokens, r.measured_s, c.predicted_s, c.error, r.source});
    groups[{r.gpu, r.engine, r.mode, r.op, 0}].push_back(std::abs(c.error));
    // An all-reduce within a node is told apart by its group size, an all-to-all by its nodes.
    groups[{r.gpu, r.engine, r.mode, r.op, r.mode == "allreduce" ? r.nodes * r.gpus_per_node : r.nodes}].push_back(std::abs(c.error));
    all.push_back(std::abs(c.error));
  }
  for (const auto& [key, errors] : groups) {
    const ErrorStats s = ape_stats(errors);
    const auto& [gpu, engine, mode, op, nodes] = key;
    const std::string size = nodes == 0 ? std::string("all") : mode == "allreduce" ? fmt::format("{} GPUs", nodes) : std::to_string(nodes);
    summary.rows.push_back({gpu, engine, mode, op, size, static_cast<std::int64_t>(s.n), s.median, s.p90});
  }
  const ErrorStats s = ape_stats(all);
  doc.fields = {{"rows", "rows", static_cast<std::int64_t>(s.n), Unit::count},
                {"median_abs_error", "median |error|", s.median, Unit::fraction},
                {"p90_abs_error", "p90 |error|", s.p90, Unit::fraction}};
  doc.tables.push_back(std::move(summary));
  if (rows) doc.tables.push_back(std::move(t));
  else doc.notes.push_back("Every row's prediction: --format csv or json.");
  doc.notes.push_back("Predicted: core/serving's all_to_all_time with the row's engine profile (ll_eta_* and ll_latency_* for low_latency "
                      "rows, normal_* for normal ones, else comm_eta_* and comm_latency_us), the GPU file's NVLink and network bandwidth, "
                      "uniform routing; allreduce rows (tokens x hidden values of dtype per rank): all_reduce_time, the engine's "
                      "tp_allreduce rows for the group size, else comm_latency_us and comm_eta_* over a ring.");
  return doc;
}

}  // namespace mlaplan::validate
