#pragma once
// Standalone SVG plots: titled axes with units, legends outside the plot area, readable ticks
// (decades on log axes, 1-2-5 steps on linear ones), reference lines with labels.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlaplan::svg {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points{};  // (x, y); non-positive values are skipped on log axes
  bool line = true;
  bool markers = false;
  bool dashed = false;
  int color = -1;  // palette index; -1: the series' position
  int marker = 0;  // 0 circle, 1 square, 2 triangle, 3 diamond
};

// Merges series whose points agree within `tol` (relative) into the first of them, so that
// coinciding curves are not drawn over each other; their names are joined with `join`.
void merge_identical(std::vector<Series>& series, double tol, const std::string& join = " = ");

struct RefLine {
  bool vertical = false;
  double value = 0;
  std::string label;
  bool label_left = false;  // horizontal lines: label at the left end instead of the right
};

struct LinePlot {
  std::string title;
  std::string x_label;  // with its unit, e.g. "prefix P (tokens)"
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  std::vector<Series> series;
  std::vector<RefLine> refs;
  std::string empty_message;  // shown in place of the axes when there is nothing to plot
};

struct BarChart {
  std::string title;
  std::string y_label;
  bool log_y = false;
  std::vector<std::string> bar_names;  // one per bar in a group (the legend)
  std::vector<std::pair<std::string, std::vector<double>>> groups;  // label, one value per bar (≤ 0: no bar)
};

std::string render(const LinePlot& plot);
std::string render(const BarChart& chart);

// Compact tick text: 1k, 128k, 1M, 2.5G; small numbers with up to 3 significant digits.
std::string tick_label(double v);

}  // namespace mlaplan::svg
