#pragma once
// A report study rendered as a folder a person can read (report.md with SVG plots) and a machine can
// parse (a CSV per table, report.json, spec.json); and the comparison behind `report --check`.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "mlaplan/core/study.hpp"
#include "mlaplan/io/report_spec.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan {

struct ReportFolder {
  std::vector<std::pair<std::string, std::string>> files;  // name -> contents, in writing order
  std::vector<Table> tables;                               // the CSV tables
  std::string summary;                                     // the summary bullets of report.md
};
ReportFolder render_report(const ReportSpec& spec, const ReportStudy& st);

// `dir` against a fresh rendering of its own spec: every CSV cell (numbers within the spec's relative
// tolerances), report.md line by line; a missing CSV or report.md is a difference too. `log` names every
// difference, one per line, then a count line.
struct ReportCheck {
  std::size_t compared = 0;
  std::size_t moved = 0;
  std::string log;
  bool ok() const { return moved == 0; }
};
ReportCheck check_report(const std::filesystem::path& dir, const ReportSpec& spec, const ReportFolder& fresh);

}  // namespace mlaplan
