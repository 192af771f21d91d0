#pragma once
// Judging a measured run: efficiencies fitted on the training half, errors on the held-out half,
// the measured crossover against the predicted one, and the output folder (report.md, CSVs, fit.json,
// the calibrated machine as a hardware file, a plot). Deterministic: no dates, the seed recorded.
#include <string>
#include <vector>

#include "harness.hpp"
#include "mlaplan/io/svg.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan::validate {

ValidationRun finish_validation(MeasuredRun&& m);

// The measured Q*: where log(T_expand / T_absorb) changes sign, interpolated in log Q; 0 when expand
// is already faster at the first point; NaN when it never becomes faster.
double measured_crossover(const CrossoverSweep& sweep);

// Predicted against measured time, log-log: the given series (x measured, y predicted) after the
// line predicted = measured drawn over their whole range.
svg::LinePlot prediction_plot(const std::string& title, std::vector<svg::Series> series);

// One table as a report section ("## title" and the markdown table) and as CSV.
std::string md_section(const Table& t);
std::string csv_of(const Table& t);

}  // namespace mlaplan::validate
