#include "mlaplan/io/svg.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace mlaplan::svg {

namespace {

constexpr double kWidth = 920, kHeight = 540;
constexpr double kLeft = 90, kRight = 290, kTop = 56, kBottom = 76;
constexpr double kX0 = kLeft, kX1 = kWidth - kRight, kY0 = kTop, kY1 = kHeight - kBottom;

const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string color(int i) { return kPalette[static_cast<std::size_t>(std::max(0, i)) % 10]; }

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string shorten(const std::string& s, std::size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "…"; }

struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // in data units
  std::vector<double> ticks;

  double t(double v) const {
    if (log) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return (v - lo) / (hi - lo);
  }
  bool contains(double v) const { return (!log || v > 0) && std::isfinite(v); }
};

double nice_step(double raw) {
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

Axis make_axis(bool log, double lo, double hi, bool from_zero) {
  Axis a;
  a.log = log;
  if (!(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi)) lo = log ? 1 : 0, hi = log ? 10 : 1;
  if (log) {
    double dlo = std::floor(std::log10(lo)), dhi = std::ceil(std::log10(hi));
    if (dhi <= dlo) dhi = dlo + 1;
    a.lo = std::pow(10.0, dlo);
    a.hi = std::pow(10.0, dhi);
    const double decades = dhi - dlo;
    const int every = decades > 12 ? 3 : decades > 7 ? 2 : 1;
    for (double d = dlo; d <= dhi + 1e-9; d += 1) {
      if (static_cast<long>(d - dlo) % every == 0) a.ticks.push_back(std::pow(10.0, d));
      if (decades <= 2 && d < dhi)
        for (double m : {2.0, 5.0}) a.ticks.push_back(m * std::pow(10.0, d));
    }
    std::sort(a.ticks.begin(), a.ticks.end());
    return a;
  }
  if (from_zero) lo = std::min(lo, 0.0);
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) hi = lo + (lo == 0 ? 1 : std::fabs(lo));
  const double step = nice_step((hi - lo) / 6);
  a.lo = std::floor(lo / step) * step;
  a.hi = std::ceil(hi / step) * step;
  for (double v = a.lo; v <= a.hi + step * 1e-9; v += step) a.ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return a;
}

double px_x(const Axis& a, double v) { return kX0 + a.t(v) * (kX1 - kX0); }
double px_y(const Axis& a, double v) { return kY1 - a.t(v) * (kY1 - kY0); }

std::string header(const std::string& title) {
  std::string s = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<title>{2}</title>\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<defs><clipPath id=\"plot\"><rect x=\"{3}\" y=\"{4}\" width=\"{5}\" height=\"{6}\"/></clipPath></defs>\n"
      "<text x=\"{7}\" y=\"30\" font-size=\"17\" text-anchor=\"middle\" font-weight=\"bold\">{2}</text>\n",
      kWidth, kHeight, esc(title), kX0, kY0, kX1 - kX0, kY1 - kY0, (kX0 + kX1) / 2);
  return s;
}

std::string axes(const Axis& x, const Axis& y, const std::string& x_label, const std::string& y_label, bool x_ticks) {
  std::string s;
  for (double v : y.ticks) {
    const double py = px_y(y, v);
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>\n", kX0, py, kX1, py);
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"end\">{}</text>\n", kX0 - 6, py + 4, tick_label(v));
  }
  if (x_ticks) {
    for (double v : x.ticks) {
      const double px = px_x(x, v);
      s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#e4e4e4\"/>\n", px, kY0, px, kY1);
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n", px, kY1 + 18, tick_label(v));
    }
  }
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n", kX0, kY0, kX1 - kX0, kY1 - kY0);
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"14\" text-anchor=\"middle\">{}</text>\n", (kX0 + kX1) / 2, kHeight - 22, esc(x_label));
  s += fmt::format("<text x=\"24\" y=\"{}\" font-size=\"14\" text-anchor=\"middle\" transform=\"rotate(-90 24 {})\">{}</text>\n",
                   (kY0 + kY1) / 2, (kY0 + kY1) / 2, esc(y_label));
  return s;
}

std::string marker_at(double x, double y, int shape, const std::string& col) {
  switch (shape) {
    case 1: return fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"8\" height=\"8\" fill=\"{}\"/>\n", x - 4, y - 4, col);
    case 2:
      return fmt::format("<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"{}\"/>\n", x, y - 5.5, x - 5, y + 4, x + 5, y + 4, col);
    case 3:
      return fmt::format("<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"{}\"/>\n", x, y - 5.5, x + 5.5, y, x,
                         y + 5.5, x - 5.5, y, col);
    default: return fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", x, y, col);
  }
}

// Splits legend text into lines of at most `width` characters at spaces.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto sp = text.find(' ', start);
    const std::string word = text.substr(start, sp == std::string::npos ? std::string::npos : sp - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) lines.push_back(line), line.clear();
    line += (line.empty() ? "" : " ") + word;
    if (sp == std::string::npos) break;
    start = sp + 1;
  }
  if (!line.empty()) lines.push_back(line);
  for (auto& l : lines) l = shorten(l, width + 4);
  return lines;
}

// One legend entry at height *y (advanced past it): a swatch and the wrapped name.
std::string legend_entry(double* y, const std::string& name, const std::string& col, bool line, bool dashed, bool marker,
                         bool bar, int shape = 0) {
  const double x = kX1 + 16;
  std::string s;
  if (bar) {
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"24\" height=\"12\" fill=\"{}\"/>\n", x, *y - 6, col);
  } else {
    if (line)
      s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", x, *y, x + 24, *y, col,
                       dashed ? " stroke-dasharray=\"6 4\"" : "");
    if (marker) s += marker_at(x + 12, *y, shape, col);
  }
  for (const std::string& l : wrap(name, 34)) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", x + 30, *y + 4, esc(l));
    *y += 14;
  }
  *y += 6;
  return s;
}

}  // namespace

void merge_identical(std::vector<Series>& series, double tol, const std::string& join) {
  std::vector<Series> out;
  for (Series& s : series) {
    Series* same = nullptr;
    for (Series& o : out) {
      if (o.points.size() != s.points.size() || o.points.empty()) continue;
      bool close = true;
      for (std::size_t i = 0; i < s.points.size() && close; ++i) {
        const auto [ax, ay] = o.points[i];
        const auto [bx, by] = s.points[i];
        close = std::fabs(ax - bx) <= tol * std::max(std::fabs(ax), std::fabs(bx)) &&
                std::fabs(ay - by) <= tol * std::max(std::fabs(ay), std::fabs(by));
      }
      if (close && o.dashed == s.dashed) same = &o;
      if (same) break;
    }
    if (same) same->name += join + s.name;
    else out.push_back(std::move(s));
  }
  series = std::move(out);
}

std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  const char* suffix[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  double x = v;
  while (std::fabs(x) >= 1000 && i < 6) {
    x /= 1000;
    ++i;
  }
  if (i == 0 && a < 1e-2) return fmt::format("{:.0e}", v);
  std::string s = fmt::format("{:.3g}", x);
  return s + suffix[i];
}

std::string render(const LinePlot& plot) {
  const bool empty = std::none_of(plot.series.begin(), plot.series.end(), [](const Series& s) { return !s.points.empty(); });
  if (empty && !plot.empty_message.empty())
    return header(plot.title) +
           fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"15\" text-anchor=\"middle\" fill=\"#444444\">{}</text>\n</svg>\n",
                       kWidth / 2, kHeight / 2, esc(plot.empty_message));
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  auto take = [&](double x, double y) {
    if (std::isfinite(x) && (!plot.log_x || x > 0)) xlo = std::min(xlo, x), xhi = std::max(xhi, x);
    if (std::isfinite(y) && (!plot.log_y || y > 0)) ylo = std::min(ylo, y), yhi = std::max(yhi, y);
  };
  for (const Series& s : plot.series)
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y) && (!plot.log_x || x > 0) && (!plot.log_y || y > 0)) take(x, y);
  for (const RefLine& r : plot.refs) {
    if (r.vertical) take(r.value, std::numeric_limits<double>::quiet_NaN());
    else take(std::numeric_limits<double>::quiet_NaN(), r.value);
  }
  const Axis x = make_axis(plot.log_x, xlo, xhi, false);
  const Axis y = make_axis(plot.log_y, ylo, yhi, true);

  std::string s = header(plot.title);
  s += axes(x, y, plot.x_label, plot.y_label, true);
  s += "<g clip-path=\"url(#plot)\">\n";
  for (std::size_t i = 0; i < plot.refs.size(); ++i) {
    const RefLine& r = plot.refs[i];
    if (!x.contains(r.value) && r.vertical) continue;
    if (!y.contains(r.value) && !r.vertical) continue;
    if (r.vertical) {
      const double px = px_x(x, r.value);
      s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#555555\" stroke-dasharray=\"2 3\"/>\n", px, kY0, px, kY1);
      // Right of the line, or left of it when the label would run past the plot's edge.
      const bool right = px + 4 + 6.2 * static_cast<double>(r.label.size()) < kX1;
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" fill=\"#333333\" text-anchor=\"{}\">{}</text>\n",
                       right ? px + 4 : px - 4, kY1 - 8 - 14 * static_cast<double>(i % 4), right ? "start" : "end", esc(r.label));
    } else {
      const double py = px_y(y, r.value);
      s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#555555\" stroke-dasharray=\"2 3\"/>\n", kX0, py, kX1, py);
      s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#333333\" text-anchor=\"{}\">{}</text>\n",
                       r.label_left ? kX0 + 6 : kX1 - 6, py - 4, r.label_left ? "start" : "end", esc(r.label));
    }
  }
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const Series& ser = plot.series[i];
    const std::string col = color(ser.color >= 0 ? ser.color : static_cast<int>(i));
    std::string pts;
    for (const auto& [px, py] : ser.points) {
      if (!x.contains(px) || !y.contains(py)) continue;
      pts += fmt::format("{:.1f},{:.1f} ", px_x(x, px), px_y(y, py));
      if (ser.markers) s += marker_at(px_x(x, px), px_y(y, py), ser.marker, col);
    }
    if (ser.line && !pts.empty())
      s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", pts, col,
                       ser.dashed ? " stroke-dasharray=\"6 4\"" : "");
  }
  s += "</g>\n";
  double ly = kY0 + 10;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const Series& ser = plot.series[i];
    s += legend_entry(&ly, ser.name, color(ser.color >= 0 ? ser.color : static_cast<int>(i)), ser.line, ser.dashed, ser.markers, false, ser.marker);
  }
  return s + "</svg>\n";
}

std::string render(const BarChart& chart) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& [label, values] : chart.groups)
    for (double v : values)
      if (v > 0 && std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  const Axis y = make_axis(chart.log_y, lo, hi, true);
  const Axis x;  // no numeric x axis
  std::string s = header(chart.title);
  s += axes(x, y, "", chart.y_label, false);
  const double groups = static_cast<double>(std::max<std::size_t>(1, chart.groups.size()));
  const double gw = (kX1 - kX0) / groups;
  const double bars = static_cast<double>(std::max<std::size_t>(1, chart.bar_names.size()));
  const double bw = 0.8 * gw / bars;
  const bool tilt = std::any_of(chart.groups.begin(), chart.groups.end(),
                                [&](const auto& g) { return static_cast<double>(g.first.size()) * 6.5 > gw; });
  for (std::size_t gi = 0; gi < chart.groups.size(); ++gi) {
    const auto& [label, values] = chart.groups[gi];
    const double gx = kX0 + gw * static_cast<double>(gi) + 0.1 * gw;
    for (std::size_t bi = 0; bi < values.size(); ++bi) {
      const double v = values[bi];
      if (!(v > 0) || !std::isfinite(v)) continue;
      const double top = px_y(y, v), base = chart.log_y ? kY1 : px_y(y, 0);
      s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {}</title></rect>\n",
                       gx + bw * static_cast<double>(bi), top, std::max(1.0, bw - 1), std::max(0.0, base - top),
                       color(static_cast<int>(bi)), esc(label), tick_label(v));
    }
    const double cx = kX0 + gw * (static_cast<double>(gi) + 0.5);
    if (tilt)
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\" transform=\"rotate(-25 {:.1f} {})\">{}</text>\n", cx,
                       kY1 + 14, cx, kY1 + 14, esc(shorten(label, 22)));
    else
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n", cx, kY1 + 18, esc(label));
  }
  double ly = kY0 + 10;
  for (std::size_t i = 0; i < chart.bar_names.size(); ++i) s += legend_entry(&ly, chart.bar_names[i], color(static_cast<int>(i)), false, false, false, true);
  return s + "</svg>\n";
}

}  // namespace mlaplan::svg
