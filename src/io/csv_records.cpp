#include "mlaplan/io/csv_records.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "mlaplan/io/error.hpp"
#include "mlaplan/io/table.hpp"

namespace mlaplan {

namespace fs = std::filesystem;

std::string CsvCells::required(const std::string& key) const {
  if (text(key).empty()) fail_key(where, key, "(empty)", "required");
  return text(key);
}

std::optional<double> CsvCells::number(const std::string& key, double lo, double hi) const {
  const std::string& t = text(key);
  if (t.empty()) return std::nullopt;
  std::size_t used = 0;
  double v = 0;
  if (t.find_first_not_of("0123456789.eE+-") != std::string::npos) fail_key(where, key, t, "expected a number");
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != t.size() || !std::isfinite(v)) fail_key(where, key, t, "expected a number");
  if (v < lo || v > hi) fail_key(where, key, t, fmt::format("expected a number from {} to {}", lo, hi));
  return v;
}

std::optional<std::int64_t> CsvCells::integer(const std::string& key, std::int64_t lo, std::int64_t hi) const {
  const auto v = number(key, static_cast<double>(lo), static_cast<double>(hi));
  if (!v) return std::nullopt;
  if (std::floor(*v) != *v) fail_key(where, key, text(key), "expected a whole number");
  return static_cast<std::int64_t>(*v);
}

std::optional<bool> CsvCells::flag(const std::string& key) const {
  const std::string& t = text(key);
  if (t.empty()) return std::nullopt;
  if (t != "true" && t != "false") fail_key(where, key, t, "expected true or false");
  return t == "true";
}

std::string CsvCells::one_of(const std::string& key, const std::vector<std::string>& allowed, const std::string& fallback) const {
  const std::string v = text(key).empty() ? fallback : text(key);
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail_key(where, key, v.empty() ? "(empty)" : v, "expected one of " + list + did_you_mean(v, allowed));
  }
  return v;
}

std::vector<CsvCells> csv_records(const std::string& text, const std::string& where, const std::vector<std::string>& columns,
                                  const std::vector<std::string>& optional) {
  const std::vector<std::vector<std::string>> rows = parse_csv(text);
  if (rows.empty()) fail(where, "empty file: expected a header row and data rows");
  const std::vector<std::string>& header = rows.front();
  std::vector<std::string> known = columns;
  known.insert(known.end(), optional.begin(), optional.end());
  for (const std::string& h : header) {
    if (std::find(known.begin(), known.end(), h) == known.end()) fail_key(where, "header", h, "unknown column" + did_you_mean(h, known));
    if (std::count(header.begin(), header.end(), h) > 1) fail_key(where, "header", h, "column given twice");
  }
  for (const std::string& c : columns)
    if (std::find(header.begin(), header.end(), c) == header.end()) fail_key(where, "header", c, "missing column");
  std::vector<CsvCells> out;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].size() == 1 && rows[i][0].empty()) continue;  // a blank line
    CsvCells c;
    c.where = fmt::format("{}, row {}", where, i + 1);
    if (rows[i].size() != header.size()) fail(c.where, fmt::format("{} cells where the header has {}", rows[i].size(), header.size()));
    for (std::size_t k = 0; k < header.size(); ++k) c.cells[header[k]] = rows[i][k];
    for (const std::string& o : optional) c.cells.try_emplace(o);  // absent from the header: empty
    out.push_back(std::move(c));
  }
  if (out.empty()) fail(where, "no data rows under the header");
  return out;
}

std::vector<fs::path> csv_files(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_regular_file(dir, ec)) {
    files.push_back(dir);
  } else if (fs::is_directory(dir, ec)) {
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file() && e.path().extension() == ".csv") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) fail(dir.string(), "no .csv files in this folder");
  } else {
    fail(dir.string(), "no such file or folder");
  }
  return files;
}

std::string read_text(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  if (!in) fail(f.string(), "cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace mlaplan
