#pragma once
// Rows and the four writers. A Document is a title, summary fields and tables; the CLI builds
// one per command and hands it to render(). table and md humanise (KiB/MiB/GiB, thousands
// separators); csv and json hold raw numbers under snake_case names that carry their unit.
#include <cstdint>
#include <utility>
#include <string>
#include <variant>
#include <vector>

namespace mlaplan {

enum class Unit { none, text, count, bytes, params, ratio, flops, seconds, flop_per_byte, bytes_per_s, flops_per_s, fraction, decimal };

using Value = std::variant<std::monostate, bool, std::int64_t, double, std::string>;

// A summary field: Field(key, label, value, unit[, json_only]).
struct Field {
  std::string key;    // JSON/CSV name, unit-bearing: bytes_per_token; dots nest JSON objects
  std::string label;  // human label: "KV bytes per token"
  Value value;
  Unit unit = Unit::none;
  bool json_only = false;  // shown by the json writer only (the others show it in a table)
  Field(std::string key_, std::string label_, Value value_, Unit unit_, bool json_only_ = false)
      : key(std::move(key_)), label(std::move(label_)), value(std::move(value_)), unit(unit_), json_only(json_only_) {}
};

// A table column: Column(key, label, unit[, machine_only]).
struct Column {
  std::string key;
  std::string label;
  Unit unit = Unit::none;
  bool machine_only = false;  // in csv and json only (keeps text tables narrow)
  Column(std::string key_, std::string label_, Unit unit_, bool machine_only_ = false)
      : key(std::move(key_)), label(std::move(label_)), unit(unit_), machine_only(machine_only_) {}
};

struct Table {
  std::string name;   // JSON key / CSV section name
  std::string title;  // human title
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;
};

struct Document {
  std::string title;
  std::vector<Field> fields;
  std::vector<Table> tables;
  std::vector<std::string> notes;
};

enum class Format { table, csv, md, json };

Format parse_format(const std::string& s);  // InputError on an unknown name
std::string render(const Document& doc, Format f);

// Rows of a CSV text as the csv writer produces it (quoted cells may hold commas and quotes).
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

// Humanised text of one value in a unit (as the table and md writers show it).
std::string humanize(const Value& v, Unit u);

// One table on its own in a format: a CSV file, a markdown table, a JSON array.
std::string render(const Table& t, Format f);

// Cells for quantities that may be absent: null unless finite (a crossover that does not exist is
// +inf), null unless positive (a query length of 0 means "never").
Value finite_or_null(double v);
Value positive_or_null(std::int64_t v);

}  // namespace mlaplan
