#pragma once
// Measurement CSVs with a header of known columns (engine logs, serving measurements): every row as
// named cells, each read strictly. Errors name the file, the row and the column.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlaplan {

// One row's cells by column name, and where it is ("file, row N") for messages.
struct CsvCells {
  std::map<std::string, std::string> cells;
  std::string where;

  const std::string& text(const std::string& key) const { return cells.at(key); }
  std::string required(const std::string& key) const;  // non-empty
  // Empty: none. Else a finite number in [lo, hi].
  std::optional<double> number(const std::string& key, double lo, double hi) const;
  std::optional<std::int64_t> integer(const std::string& key, std::int64_t lo, std::int64_t hi) const;
  // Empty: none. Else true or false.
  std::optional<bool> flag(const std::string& key) const;
};

// The rows of a CSV text whose header holds exactly `columns` (any order; unknown, missing and
// repeated columns refused), blank lines skipped; at least one row.
std::vector<CsvCells> csv_records(const std::string& text, const std::string& where, const std::vector<std::string>& columns);

// The *.csv files of a folder in name order, or the one file given.
std::vector<std::filesystem::path> csv_files(const std::filesystem::path& dir_or_file);
// A file's text (InputError when it cannot be read).
std::string read_text(const std::filesystem::path& file);

}  // namespace mlaplan
