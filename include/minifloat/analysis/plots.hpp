#pragma once
// What the fidelity plots show, as numbers: the library computes them, a tool draws them (the
// `minifloat analyze --svg` charts are drawn by tools/cli/svg.hpp from exactly these values).
//
//   exponent_plot   x: binary exponents (each point a step [e, e + 1)); bars: a share of values
//                   per exponent (0..1, summing to at most 1); lines: significand bits per format
//   significand_bits_plot(schemes, relative)
//                   every scheme's format aligned at the binade where its group amax lands after
//                   scaling (amax_binade_after_scaling), x relative to that binade; bars: the
//                   analysed values' floor(log2 |x|) - floor(log2 amax) (relative_exponents)
//   landing_plot(profile, pooled)
//                   one format over its own exponents; bars: where the scaled values x / s land
//                   (the end bins also hold what lies beyond the plotted range)
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis.hpp"
#include "format_profile.hpp"
#include "metrics.hpp"

namespace minifloat::analysis {

struct plot_line {
  std::string name;
  std::vector<double> y;  // one per x
};

struct exponent_plot {
  std::vector<int> x;             // exponents, ascending, consecutive
  std::vector<double> bars;       // share of values per x (empty: none)
  std::vector<plot_line> lines;   // significand bits per x
  double y_max = 5;               // a y range that holds every line
};

/// floor(log2 |v|) - floor(log2 amax) of the finite non-zero values (amax: their finite amax; 0
/// when there is none, then the histogram stays empty).
[[nodiscard]] inline exponent_histogram relative_exponents(std::span<const float> values) {
  float amax = 0;
  for (const float v : values)
    if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
  exponent_histogram h;
  if (amax == 0) return h;
  const int amax_e = std::ilogb(amax);
  for (const float v : values)
    if (std::isfinite(v) && v != 0) h.add(std::ldexp(1.0, std::ilogb(v) - amax_e));
  return h;
}

/// Significand bits against the exponent relative to the amax binade, one line per (format,
/// alignment) shared by the schemes named in it; schemes with scale rule none (no fixed
/// alignment) are left out.
[[nodiscard]] inline exponent_plot significand_bits_plot(std::span<const named_scheme> schemes,
                                                         const exponent_histogram& relative) {
  struct curve {
    format_id format;
    int align;
    std::string label;
  };
  std::vector<curve> curves;
  for (const auto& s : schemes) {
    const auto align = amax_binade_after_scaling(s.scheme);
    if (!align) continue;
    auto it = std::find_if(curves.begin(), curves.end(),
                           [&](const curve& cv) { return cv.format == s.scheme.format && cv.align == *align; });
    if (it == curves.end()) curves.push_back({s.scheme.format, *align, s.name});
    else it->label += ", " + s.name;
  }
  int lo = 0, hi = 0;
  for (const auto& cv : curves) {
    const auto& p = profile_of(cv.format);
    lo = std::min(lo, p.min_binade - cv.align - 1), hi = std::max(hi, p.max_binade - cv.align + 1);
  }
  lo = std::max(lo, -40);
  exponent_plot out;
  for (int e = lo; e <= hi; ++e) out.x.push_back(e);
  const double total = static_cast<double>(relative.total());
  for (int e = lo; e <= hi; ++e) out.bars.push_back(total > 0 ? static_cast<double>(relative.count(e)) / total : 0.0);
  for (const auto& cv : curves) {
    const auto& p = profile_of(cv.format);
    plot_line l{cv.label, {}};
    for (int e = lo; e <= hi; ++e) l.y.push_back(p.bits_at(e + cv.align));
    out.lines.push_back(std::move(l));
  }
  out.y_max = 5.0;
  return out;
}

/// One format's significand bits over its own exponents, and the share of the scaled values x / s
/// (pooled over the tensors) landing at each.
[[nodiscard]] inline exponent_plot landing_plot(const format_profile& p, const fidelity_stats& pooled) {
  exponent_plot out;
  const int lo = std::max(p.min_binade - 6, -60), hi = p.max_binade + 3;
  for (int e = lo; e <= hi; ++e) out.x.push_back(e);
  const double total = static_cast<double>(pooled.scaled_exponents.total());
  for (int e = lo; e <= hi; ++e) {
    std::uint64_t n = pooled.scaled_exponents.count(e);
    if (e == lo)
      for (int f = exponent_histogram::min_exponent; f < lo; ++f) n += pooled.scaled_exponents.count(f);
    if (e == hi)
      for (int f = hi + 1; f <= exponent_histogram::max_exponent; ++f) n += pooled.scaled_exponents.count(f);
    out.bars.push_back(total > 0 ? static_cast<double>(n) / total : 0.0);
  }
  plot_line l{p.name + " significand bits", {}};
  for (int e = lo; e <= hi; ++e) l.y.push_back(p.bits_at(e));
  out.lines.push_back(std::move(l));
  out.y_max = std::max(5.0, std::ceil(*std::max_element(p.significand_bits.begin(), p.significand_bits.end())) + 1);
  return out;
}

}  // namespace minifloat::analysis
