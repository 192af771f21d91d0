#include "mlaplan/io/table.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mlaplan/core/units.hpp"
#include "mlaplan/io/error.hpp"

namespace mlaplan {

namespace {

std::string thousands(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (n && n % 3 == 0) out.push_back(',');
    out.push_back(*it);
    ++n;
  }
  if (v < 0) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

double as_double(const Value& v) {
  if (auto i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (auto d = std::get_if<double>(&v)) return *d;
  return 0;
}

// v with a binary prefix: "68.62 KiB"; exact byte counts below 1 MiB are shown in full.
std::string iec_bytes(double v) {
  if (std::fabs(v) < static_cast<double>(kMiB)) return thousands(static_cast<std::int64_t>(std::llround(v))) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double x = v / static_cast<double>(kKiB);
  int i = 0;
  while (std::fabs(x) >= 1024 && i < 5) {
    x /= 1024;
    ++i;
  }
  return fmt::format("{:.2f} {}", x, units[i]);
}

// v with a decimal prefix: "1.23 T" + unit.
std::string si(double v, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  double x = v;
  while (std::fabs(x) >= 1000 && i < 6) {
    x /= 1000;
    ++i;
  }
  return fmt::format("{:.{}f} {}{}", x, i == 0 && x == std::floor(x) ? 0 : 2, prefixes[i], unit);
}

std::string seconds(double s) {
  if (s == 0) return "0 s";
  if (std::fabs(s) < 1e-6) return fmt::format("{:.2f} ns", s * 1e9);
  if (std::fabs(s) < 1e-3) return fmt::format("{:.2f} µs", s * 1e6);
  if (std::fabs(s) < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.3f} s", s);
}

std::string raw(const Value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "";
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{}", x);
        else return x;
      },
      v);
}

nlohmann::json to_json(const Value& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return nullptr;
        else if constexpr (std::is_same_v<T, double>) {
          if (!std::isfinite(x)) return nullptr;
          return x;
        } else return x;
      },
      v);
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string md_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

bool right_aligned(Unit u) { return u != Unit::text && u != Unit::none; }

// Display width in code points (UTF-8 continuation bytes do not count).
std::size_t width(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad(const std::string& s, std::size_t w, bool right) {
  const std::size_t n = width(s);
  const std::string fill(w > n ? w - n : 0, ' ');
  return right ? fill + s : s + fill;
}

// The table without its machine-only columns.
Table for_people(const Table& t) {
  Table out{.name = t.name, .title = t.title, .columns = {}, .rows = {}};
  std::vector<std::size_t> keep;
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    if (!t.columns[c].machine_only) {
      keep.push_back(c);
      out.columns.push_back(t.columns[c]);
    }
  for (const auto& row : t.rows) {
    std::vector<Value> r;
    for (std::size_t c : keep) r.push_back(c < row.size() ? row[c] : Value{});
    out.rows.push_back(std::move(r));
  }
  return out;
}

std::string rtrim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string render_table(const Document& doc) {
  std::string out;
  if (!doc.title.empty()) out += doc.title + "\n" + std::string(width(doc.title), '=') + "\n";
  std::size_t lw = 0;
  for (const Field& f : doc.fields)
    if (!f.json_only) lw = std::max(lw, width(f.label));
  for (const Field& f : doc.fields)
    if (!f.json_only) out += pad(f.label, lw, false) + "  " + humanize(f.value, f.unit) + "\n";
  for (const Table& full : doc.tables) {
    const Table t = for_people(full);
    out += "\n" + t.title + "\n";
    std::vector<std::vector<std::string>> cells;
    std::vector<std::size_t> w(t.columns.size());
    for (std::size_t c = 0; c < t.columns.size(); ++c) w[c] = width(t.columns[c].label);
    for (const auto& row : t.rows) {
      std::vector<std::string> line;
      for (std::size_t c = 0; c < t.columns.size(); ++c) {
        line.push_back(c < row.size() ? humanize(row[c], t.columns[c].unit) : "");
        w[c] = std::max(w[c], width(line.back()));
      }
      cells.push_back(std::move(line));
    }
    std::string header, rule;
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      header += (c ? "  " : "  ") + pad(t.columns[c].label, w[c], right_aligned(t.columns[c].unit));
      rule += (c ? "  " : "  ") + std::string(w[c], '-');
    }
    out += rtrim(header) + "\n" + rule + "\n";
    for (const auto& line : cells) {
      std::string s;
      for (std::size_t c = 0; c < line.size(); ++c) s += "  " + pad(line[c], w[c], right_aligned(t.columns[c].unit));
      out += rtrim(s) + "\n";
    }
  }
  if (!doc.notes.empty()) {
    out += "\nNotes\n";
    for (const auto& n : doc.notes) out += "  - " + n + "\n";
  }
  return out;
}

std::string render_md(const Document& doc) {
  std::string out;
  if (!doc.title.empty()) out += "## " + doc.title + "\n\n";
  if (!doc.fields.empty()) {
    out += "| quantity | value |\n|---|---:|\n";
    for (const Field& f : doc.fields)
      if (!f.json_only) out += "| " + md_cell(f.label) + " | " + md_cell(humanize(f.value, f.unit)) + " |\n";
  }
  for (const Table& full : doc.tables) {
    const Table t = for_people(full);
    out += "\n### " + t.title + "\n\n|";
    for (const auto& c : t.columns) out.append(" ").append(md_cell(c.label)).append(" |");
    out += "\n|";
    for (const auto& c : t.columns) out += right_aligned(c.unit) ? "---:|" : "---|";
    out += "\n";
    for (const auto& row : t.rows) {
      out += "|";
      for (std::size_t c = 0; c < t.columns.size(); ++c)
        out.append(" ").append(md_cell(c < row.size() ? humanize(row[c], t.columns[c].unit) : "")).append(" |");
      out += "\n";
    }
  }
  if (!doc.notes.empty()) {
    out += "\n";
    for (const auto& n : doc.notes) out += "- " + md_cell(n) + "\n";
  }
  return out;
}

std::string render_csv(const Document& doc) {
  std::string out;
  bool first = true;
  if (!doc.fields.empty()) {
    out += "key,value\n";
    for (const Field& f : doc.fields)
      if (!f.json_only) out += csv_cell(f.key) + "," + csv_cell(raw(f.value)) + "\n";
    first = false;
  }
  for (const Table& t : doc.tables) {
    if (!first) out += "\n";
    first = false;
    for (std::size_t c = 0; c < t.columns.size(); ++c) out.append(c ? "," : "").append(csv_cell(t.columns[c].key));
    out += "\n";
    for (const auto& row : t.rows) {
      for (std::size_t c = 0; c < t.columns.size(); ++c) out.append(c ? "," : "").append(csv_cell(c < row.size() ? raw(row[c]) : ""));
      out += "\n";
    }
  }
  return out;
}

// A dotted key ("paths.absorb.flops") addresses nested objects.
nlohmann::ordered_json& at_path(nlohmann::ordered_json& root, const std::string& key) {
  nlohmann::ordered_json* node = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = key.find('.', start);
    node = &(*node)[key.substr(start, dot == std::string::npos ? std::string::npos : dot - start)];
    if (dot == std::string::npos) return *node;
    start = dot + 1;
  }
}

std::string render_json(const Document& doc) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Field& f : doc.fields) at_path(j, f.key) = to_json(f.value);
  for (const Table& t : doc.tables) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& row : t.rows) {
      nlohmann::ordered_json r;
      for (std::size_t c = 0; c < t.columns.size(); ++c) r[t.columns[c].key] = c < row.size() ? to_json(row[c]) : nullptr;
      rows.push_back(std::move(r));
    }
    at_path(j, t.name) = std::move(rows);
  }
  if (!doc.notes.empty()) j["notes"] = doc.notes;
  return j.dump(2) + "\n";
}

}  // namespace

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') cell += '"', ++i;
      else if (c == '"') quoted = false;
      else cell += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(cell), cell.clear();
    } else if (c == '\n' || (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      // A CRLF line end (a spreadsheet's export) ends the row like LF.
      if (c == '\r') ++i;
      row.push_back(cell), cell.clear();
      rows.push_back(std::move(row)), row.clear();
    } else {
      cell += c;
    }
  }
  if (!cell.empty() || !row.empty()) row.push_back(cell), rows.push_back(row);
  return rows;
}

Format parse_format(const std::string& s) {
  if (s == "table") return Format::table;
  if (s == "csv") return Format::csv;
  if (s == "md" || s == "markdown") return Format::md;
  if (s == "json") return Format::json;
  fail_flag("--format", s, "expected one of table, csv, md, json");
}

std::string humanize(const Value& v, Unit u) {
  if (std::holds_alternative<std::monostate>(v)) return "-";
  if (std::holds_alternative<std::string>(v) || std::holds_alternative<bool>(v)) {
    if (auto b = std::get_if<bool>(&v)) return *b ? "yes" : "no";
    return std::get<std::string>(v);
  }
  const double x = as_double(v);
  switch (u) {
    case Unit::bytes: return iec_bytes(x);
    case Unit::params: {
      if (std::fabs(x) >= 1e9) return fmt::format("{:.2f} billion", x / 1e9);
      if (std::fabs(x) >= 1e6) return fmt::format("{:.2f} million", x / 1e6);
      return thousands(static_cast<std::int64_t>(std::llround(x)));
    }
    case Unit::ratio: return fmt::format("{:.1f}×", x);
    case Unit::flops: return si(x, "FLOP");
    case Unit::seconds: return seconds(x);
    case Unit::flop_per_byte: return fmt::format("{:.1f} FLOP/B", x);
    case Unit::bytes_per_s: return si(x, "B/s");
    case Unit::flops_per_s: return si(x, "FLOP/s");
    case Unit::fraction: return fmt::format("{:.1f}%", x * 100);
    case Unit::decimal: return fmt::format("{:.1f}", x);
    case Unit::count:
      if (std::holds_alternative<std::int64_t>(v)) return thousands(std::get<std::int64_t>(v));
      return x == std::floor(x) && std::fabs(x) < 9e15 ? thousands(static_cast<std::int64_t>(x)) : fmt::format("{:.4g}", x);
    default:
      if (std::holds_alternative<std::int64_t>(v)) return std::to_string(std::get<std::int64_t>(v));
      return fmt::format("{:.4g}", x);
  }
}

std::string render(const Table& t, Format f) { return render(Document{.title = "", .fields = {}, .tables = {t}, .notes = {}}, f); }

Value finite_or_null(double v) { return std::isfinite(v) ? Value{v} : Value{}; }
Value positive_or_null(std::int64_t v) { return v > 0 ? Value{v} : Value{}; }

std::string render(const Document& doc, Format f) {
  switch (f) {
    case Format::table: return render_table(doc);
    case Format::csv: return render_csv(doc);
    case Format::md: return render_md(doc);
    case Format::json: return render_json(doc);
  }
  return {};
}

}  // namespace mlaplan
