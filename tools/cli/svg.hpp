#pragma once
// Self-contained SVG charts (no fonts, scripts or styles from outside the file) for the fidelity
// reports of `minifloat analyze`: line charts over categories (one point per tensor) or over a
// numeric axis (binary exponents, drawn as steps), with an optional bar series on a secondary
// axis (shares, 0..1). Drawing only: what is drawn comes from the library
// (minifloat/analysis/plots.hpp and the metrics).
//
//   cli::svg::chart c;
//   c.title = "SQNR per tensor"; c.y_label = "dB";
//   c.categories = {"layer0", "layer1"};
//   c.series.push_back({"hifloat8/tensor", {31.2, 29.8}});
//   std::string text = c.render();
//
// Non-finite points: +inf is drawn on the top edge with an open marker (SQNR of an exact
// match), -inf on the bottom edge, NaN leaves a gap. With log_y, values <= 0 sit on the bottom
// edge (labelled "0").
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace minifloat::cli::svg {

/// Tableau 10: distinguishable, colour-blind-friendlier than the defaults of most tools.
inline constexpr std::string_view palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                               "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

struct series {
  std::string name;
  std::vector<double> y;  // one per category, or per numeric x
  std::string color;      // "" = palette[index]
  bool dashed = false;
};

struct chart {
  std::string title;
  std::string subtitle;
  std::string x_label, y_label;
  std::vector<std::string> categories;  // category axis (empty: numeric axis x)
  std::vector<double> x;                // numeric axis: one x per point; with steps, the left edges
  bool steps = false;                   // numeric axis: each point is a step [x_i, x_i + 1)
  std::vector<series> lines;
  std::optional<std::pair<double, double>> y_range;  // default: from the data
  bool log_y = false;
  // Optional bars on a secondary (right) axis, numeric axis only: bar i spans [x_i, x_i + 1).
  std::vector<double> bars;
  std::string bar_label;
  std::string bar_color = "#c9c9c9";
  int width = 1100, height = 560;

  [[nodiscard]] std::string render() const;
};

namespace detail {

inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s(buf);
  // Trim trailing zeros: 12.50 -> 12.5, 3.00 -> 3.
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

/// Text content and attribute values: the XML specials as entities, and control characters
/// (not allowed in XML 1.0, and a tensor name from a file may hold any) as a visible "\xNN".
inline std::string escape(std::string_view t) {
  constexpr std::string_view hex = "0123456789abcdef";
  std::string o;
  for (const char c : t) {
    const auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default:
        if (b < 0x20 || b == 0x7F) {
          o += "\\x";
          o += hex[b >> 4];
          o += hex[b & 0xFU];
        } else {
          o += c;
        }
    }
  }
  return o;
}

inline std::string tick_label(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) < 1e-3 || std::fabs(v) >= 1e6)) std::snprintf(buf, sizeof buf, "%.0e", v);
  else std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// Ticks at 1, 2 or 5 times a power of ten, about `count` of them over [lo, hi].
inline std::vector<double> nice_ticks(double lo, double hi, int count) {
  std::vector<double> t;
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

}  // namespace detail

inline std::string chart::render() const {
  using detail::num;
  const bool categorical = !categories.empty();
  const std::size_t n = categorical ? categories.size() : x.size();
  const double left = 78, right = 230 + (bars.empty() ? 0 : 40), top = subtitle.empty() ? 48 : 66;
  std::size_t longest = 0;
  for (const auto& c : categories) longest = std::max(longest, c.size());
  const double bottom = categorical ? 30 + 5.6 * static_cast<double>(std::min<std::size_t>(longest, 40)) : 58;
  const double W = width, H = height + (categorical ? bottom - 100 : 0);
  const double pw = W - left - right, ph = H - top - bottom;

  // --- y range -----------------------------------------------------------------------------
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : lines)
    for (double v : s.y)
      if (std::isfinite(v) && (!log_y || v > 0)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (y_range) lo = y_range->first, hi = y_range->second;
  if (!std::isfinite(lo)) lo = log_y ? 1e-6 : 0, hi = log_y ? 1 : 1;
  if (log_y) {
    lo = std::pow(10.0, std::floor(std::log10(lo)));
    hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (hi <= lo) hi = lo * 10;
  } else if (!y_range) {
    const double pad = hi > lo ? (hi - lo) * 0.06 : std::max(1.0, std::fabs(hi) * 0.1);
    lo -= pad, hi += pad;
  }
  auto ymap = [&](double v) {
    double f;
    if (log_y) f = v <= 0 ? 0.0 : (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    else f = (v - lo) / (hi - lo);
    return top + ph * (1.0 - std::clamp(f, 0.0, 1.0));
  };
  // --- x mapping -----------------------------------------------------------------------------
  double xlo = 0, xhi = 1;
  if (!categorical && n > 0) {
    xlo = *std::min_element(x.begin(), x.end());
    xhi = *std::max_element(x.begin(), x.end()) + (steps ? 1 : 0);
    if (xhi <= xlo) xhi = xlo + 1;
  }
  auto xmap = [&](double i) {
    if (categorical) return left + pw * (i + 0.5) / static_cast<double>(std::max<std::size_t>(n, 1));
    return left + pw * (i - xlo) / (xhi - xlo);
  };

  std::string o;
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" viewBox=\"0 0 " +
       num(W) + " " + num(H) + "\" font-family=\"DejaVu Sans, Arial, Helvetica, sans-serif\" font-size=\"12\">\n";
  o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += "<text x=\"" + num(left) + "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" + detail::escape(title) + "</text>\n";
  if (!subtitle.empty())
    o += "<text x=\"" + num(left) + "\" y=\"44\" fill=\"#555\">" + detail::escape(subtitle) + "</text>\n";

  // --- bars (secondary axis) -----------------------------------------------------------------
  if (!categorical && !bars.empty()) {
    double bmax = 0;
    for (double b : bars) bmax = std::max(bmax, std::isfinite(b) ? b : 0.0);
    const double btop = bmax > 0 ? std::max(0.05, std::ceil(bmax * 20) / 20) : 1.0;
    for (std::size_t i = 0; i < bars.size() && i < n; ++i) {
      if (!(bars[i] > 0)) continue;
      const double x0 = xmap(x[i]), x1 = xmap(x[i] + 1), h = ph * bars[i] / btop;
      o += "<rect x=\"" + num(x0 + 0.5) + "\" y=\"" + num(top + ph - h) + "\" width=\"" + num(std::max(0.5, x1 - x0 - 1)) +
           "\" height=\"" + num(h) + "\" fill=\"" + bar_color + "\"/>\n";
    }
    const double ax = left + pw;
    o += "<line x1=\"" + num(ax) + "\" y1=\"" + num(top) + "\" x2=\"" + num(ax) + "\" y2=\"" + num(top + ph) +
         "\" stroke=\"#999\"/>\n";
    for (double t : detail::nice_ticks(0, btop, 4)) {
      const double y = top + ph * (1 - t / btop);
      o += "<line x1=\"" + num(ax) + "\" y1=\"" + num(y) + "\" x2=\"" + num(ax + 4) + "\" y2=\"" + num(y) + "\" stroke=\"#999\"/>";
      o += "<text x=\"" + num(ax + 7) + "\" y=\"" + num(y + 4) + "\" fill=\"#777\">" + num(t * 100) + "%</text>\n";
    }
    o += "<text transform=\"translate(" + num(ax + 48) + "," + num(top + ph / 2) +
         ") rotate(90)\" text-anchor=\"middle\" fill=\"#777\">" + detail::escape(bar_label) + "</text>\n";
  }

  // --- grid and y axis -----------------------------------------------------------------------
  std::vector<double> yt;
  if (log_y) {
    for (double v = lo; v <= hi * 1.0001; v *= 10) yt.push_back(v);
  } else {
    yt = detail::nice_ticks(lo, hi, 6);
  }
  for (double t : yt) {
    const double y = ymap(t);
    o += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + pw) + "\" y2=\"" + num(y) +
         "\" stroke=\"#e6e6e6\"/>";
    o += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" + detail::tick_label(t) +
         "</text>\n";
  }
  if (log_y)
    o += "<text x=\"" + num(left - 6) + "\" y=\"" + num(top + ph + 14) + "\" text-anchor=\"end\" fill=\"#777\">0</text>\n";
  o += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(pw) + "\" height=\"" + num(ph) +
       "\" fill=\"none\" stroke=\"#999\"/>\n";
  o += "<text transform=\"translate(20," + num(top + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       detail::escape(y_label) + "</text>\n";

  // --- x axis ------------------------------------------------------------------------------
  if (categorical) {
    for (std::size_t i = 0; i < n; ++i) {
      const double xx = xmap(static_cast<double>(i));
      o += "<line x1=\"" + num(xx) + "\" y1=\"" + num(top + ph) + "\" x2=\"" + num(xx) + "\" y2=\"" + num(top + ph + 4) +
           "\" stroke=\"#999\"/>";
      std::string label = categories[i].size() > 40 ? categories[i].substr(0, 39) + "~" : categories[i];
      o += "<text transform=\"translate(" + num(xx + 4) + "," + num(top + ph + 10) +
           ") rotate(-55)\" text-anchor=\"end\" font-size=\"11\">" + detail::escape(label) + "</text>\n";
    }
  } else {
    for (double t : detail::nice_ticks(xlo, xhi, 12)) {
      const double xx = xmap(t);
      o += "<line x1=\"" + num(xx) + "\" y1=\"" + num(top) + "\" x2=\"" + num(xx) + "\" y2=\"" + num(top + ph) +
           "\" stroke=\"#f0f0f0\"/>";
      o += "<text x=\"" + num(xx) + "\" y=\"" + num(top + ph + 16) + "\" text-anchor=\"middle\">" + detail::tick_label(t) +
           "</text>\n";
    }
  }
  o += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(H - 10) + "\" text-anchor=\"middle\">" + detail::escape(x_label) +
       "</text>\n";

  // --- lines ---------------------------------------------------------------------------------
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const auto& s = lines[k];
    const std::string color = s.color.empty() ? std::string(palette[k % std::size(palette)]) : s.color;
    const std::string dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
    std::string path;
    bool pen = false;
    std::string markers;
    for (std::size_t i = 0; i < s.y.size() && i < n; ++i) {
      const double v = s.y[i];
      if (std::isnan(v)) {
        pen = false;
        continue;
      }
      const double yy = std::isinf(v) ? (v > 0 ? top : top + ph) : ymap(v);
      if (categorical) {
        const double xx = xmap(static_cast<double>(i));
        path += pen ? " L" : " M";
        path += num(xx) + " " + num(yy);
        markers += "<circle cx=\"" + num(xx) + "\" cy=\"" + num(yy) + "\" r=\"3\" fill=\"" +
                   (std::isinf(v) ? std::string("white") : color) + "\" stroke=\"" + color + "\"/>";
      } else if (steps) {
        const double x0 = xmap(x[i]), x1 = xmap(x[i] + 1);
        path += pen ? " L" : " M";
        path += num(x0) + " " + num(yy) + " L" + num(x1) + " " + num(yy);
      } else {
        path += pen ? " L" : " M";
        path += num(xmap(x[i])) + " " + num(yy);
      }
      pen = true;
    }
    if (!path.empty())
      o += "<path d=\"" + path.substr(1) + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"" +
           (steps ? "2.5" : "1.8") + "\"" + dash + " stroke-linejoin=\"round\"/>\n";
    o += markers + (markers.empty() ? "" : "\n");
  }

  // --- legend --------------------------------------------------------------------------------
  const double lx = W - right + (bars.empty() ? 16 : 66);
  double ly = top + 6;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const std::string color =
        lines[k].color.empty() ? std::string(palette[k % std::size(palette)]) : lines[k].color;
    o += "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(lx + 22) + "\" y2=\"" + num(ly) + "\" stroke=\"" +
         color + "\" stroke-width=\"3\"" + (lines[k].dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>";
    // Long names (several schemes sharing one curve) wrap after ", " at about 30 characters.
    std::vector<std::string> rows{""};
    std::string_view rest = lines[k].name;
    while (!rest.empty()) {
      const auto comma = rest.find(", ");
      const std::string_view piece = rest.substr(0, comma == std::string_view::npos ? rest.size() : comma + 1);
      if (!rows.back().empty() && rows.back().size() + piece.size() > 30) rows.emplace_back();
      if (!rows.back().empty()) rows.back() += ' ';
      rows.back() += piece;
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 2);
    }
    for (std::size_t r = 0; r < rows.size(); ++r)
      o += "<text x=\"" + num(lx + 28) + "\" y=\"" + num(ly + 4 + 15 * static_cast<double>(r)) + "\">" +
           detail::escape(rows[r]) + "</text>\n";
    ly += 20 + 15 * static_cast<double>(rows.size() - 1);
  }
  if (!bars.empty()) {
    o += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 6) + "\" width=\"22\" height=\"12\" fill=\"" + bar_color + "\"/>";
    o += "<text x=\"" + num(lx + 28) + "\" y=\"" + num(ly + 4) + "\">" + detail::escape(bar_label) + "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

}  // namespace minifloat::cli::svg
