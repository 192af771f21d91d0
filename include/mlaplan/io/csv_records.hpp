#pragma once
// Measurement CSVs with a header of known columns (engine logs, serving measurements): every row as
// named cells, each read strictly. Errors name the file, the row and the column.
#include <cstdint>
#include <filesystem>
#include <iterator>
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
  // One of `allowed` (empty: `fallback`), else refused with the list.
  std::string one_of(const std::string& key, const std::vector<std::string>& allowed, const std::string& fallback = {}) const;
};

// The rows of a CSV text whose header holds exactly `columns` (any order; unknown, missing and
// repeated columns refused) and any of `optional` (read as empty cells where the header lacks
// them), blank lines skipped; at least one row.
std::vector<CsvCells> csv_records(const std::string& text, const std::string& where, const std::vector<std::string>& columns,
                                  const std::vector<std::string>& optional = {});

// The *.csv files of a folder in name order, or the one file given.
std::vector<std::filesystem::path> csv_files(const std::filesystem::path& dir_or_file);
// A file's text (InputError when it cannot be read).
std::string read_text(const std::filesystem::path& file);

// Every row of the CSVs of a folder (or the one file) as `parse(text, where)` reads them, in file order.
template <class Parse>
auto read_csv_folder(const std::filesystem::path& dir_or_file, Parse parse) {
  decltype(parse(std::string{}, std::string{})) all;
  for (const std::filesystem::path& f : csv_files(dir_or_file)) {
    auto rows = parse(read_text(f), f.string());
    all.insert(all.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  }
  return all;
}

}  // namespace mlaplan
