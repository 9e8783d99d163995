#pragma once
// Static calibration: fixed fp32 scales chosen once from a calibration set of tensors, per
// tensor (one scale) or per channel (one scale per row; every tensor of the set then needs the
// same number of rows). Three methods, each returning the scales and the error they achieve:
//
//   amax        the group's amax a lands at 2^T, T in [2, 4]       (AMCT HiF8: scale = max / 16)
//                 exact: s = a / 2^T (a maps exactly to 2^T)
//                 pow2:  s = 2^(floor(log2 a) - T) (a lands in binade [2^T, 2^(T+1)))
//   percentile  the p-th percentile P of |x|, p in [97, 99], lands at 2^T (default T = 2), with
//                 the same two forms. P is numpy's default ("linear"): sort the n finite |x|
//                 ascending into v, h = (p / 100) * (n - 1), P = v[floor h] + (h - floor h) *
//                 (v[floor h + 1] - v[floor h]). Values above P * s saturate.
//   mse         a discrete search: every candidate s = 2^(m / G) (G = steps_per_octave; G = 1 is
//                 powers of two only, G > 1 adds a finer grid that contains them) whose
//                 log2(a / s) lies in [log2 max - search_binades, log2 max + clip_binades]
//                 (max = the format's max finite) is tried; the one with the smallest MSE wins,
//                 ties going to the larger scale (more headroom).
//
// Error ("the metric it achieved"): for each finite calibration element x,
//   y = decode(encode(x / s)) * s        (exactly what quantize_with_scales + dequantize give)
// MSE = mean((x - y)^2) in double, SQNR = 10 log10(sum x^2 / sum (x - y)^2) dB (+inf if exact).
// Inf/NaN calibration elements are ignored (counted in `nonfinite`). A group with no finite
// nonzero element gets s = 1; a group with no finite element at all has SQNR NaN (nothing was
// measured). A set with no finite element anywhere cannot be calibrated: std::domain_error.
//
// The MSE here is computed directly (a double loop); include/minifloat/analysis/ has the
// general metrics.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../core/errors.hpp"
#include "../formats/format_list.hpp"
#include "../quant/matrix_view.hpp"
#include "../quant/scales.hpp"
#include "../quant/scheme.hpp"
#include "../simd/bulk.hpp"
#include "scaling_rule.hpp"

namespace minifloat {

enum class calibration_method : std::uint8_t { amax, percentile, mse };
/// amax / percentile: scale the statistic exactly to 2^T, or to the binade of 2^T (pow2 scale).
enum class calibration_scale : std::uint8_t { exact, pow2 };

constexpr std::string_view to_string(calibration_method m) noexcept {
  switch (m) {
    case calibration_method::amax: return "amax";
    case calibration_method::percentile: return "percentile";
    case calibration_method::mse: return "mse";
  }
  return "?";
}

struct calibration_config {
  format_id format = format_id::hifloat8;
  granularity gran = granularity::tensor;  ///< tensor, or channel (one scale per row)
  calibration_method method = calibration_method::amax;
  int target = 4;                          ///< amax / percentile: T, the statistic lands at 2^T
  double percentile = 99.0;                ///< percentile: p in [97, 99]
  calibration_scale form = calibration_scale::exact;
  int steps_per_octave = 4;                ///< mse: G, candidates 2^(m / G)
  int search_binades = 24;                 ///< mse: how far below the format max the amax may land
  int clip_binades = 4;                    ///< mse: how far above the format max the amax may land
  rounding round = rounding::nearest;

  static calibration_config amax(format_id f, granularity g = granularity::tensor, int t = 4) {
    calibration_config c;
    c.format = f, c.gran = g, c.method = calibration_method::amax, c.target = t;
    c.validate();
    return c;
  }
  static calibration_config percentile_of(format_id f, granularity g = granularity::tensor, double p = 99.0, int t = 2) {
    calibration_config c;
    c.format = f, c.gran = g, c.method = calibration_method::percentile, c.percentile = p, c.target = t;
    c.validate();
    return c;
  }
  static calibration_config mse(format_id f, granularity g = granularity::tensor, int steps_per_octave = 4) {
    calibration_config c;
    c.format = f, c.gran = g, c.method = calibration_method::mse, c.steps_per_octave = steps_per_octave;
    c.validate();
    return c;
  }

  /// The scheme the calibrated scales go with (quantize_with_scales(x, scheme(), scales)).
  [[nodiscard]] quant_scheme scheme() const {
    quant_scheme s = quant_scheme::make(format, gran);
    s.round = round;
    s.rule = scale_rule::none;  // the scales are given, not derived from a rule
    return s;
  }

  void validate() const {
    if (gran != granularity::tensor && gran != granularity::channel)
      throw unsupported_error("calibration: granularity must be tensor or channel, got " + std::string(to_string(gran)));
    if (round == rounding::stochastic)
      throw unsupported_error("calibration: the error of a scale is measured with a deterministic rounding; got "
                              "stochastic (calibrate with nearest, quantize stochastically afterwards)");
    scheme().validate();  // rejects float8_e8m0fnu
    if (method == calibration_method::amax || method == calibration_method::percentile) {
      if (target < 2 || target > 4)
        throw shape_error("calibration: target T (statistic at 2^T) must lie in [2, 4], got " + std::to_string(target));
    }
    if (method == calibration_method::percentile && !(percentile >= 97.0 && percentile <= 99.0))
      throw shape_error("calibration: percentile must lie in [97, 99], got " + std::to_string(percentile));
    if (method == calibration_method::mse) {
      if (steps_per_octave < 1 || steps_per_octave > 64)
        throw shape_error("calibration: steps_per_octave must lie in [1, 64], got " + std::to_string(steps_per_octave));
      if (search_binades < 1 || search_binades > 64)
        throw shape_error("calibration: search_binades must lie in [1, 64], got " + std::to_string(search_binades));
      if (clip_binades < 0 || clip_binades > 16)
        throw shape_error("calibration: clip_binades must lie in [0, 16], got " + std::to_string(clip_binades));
    }
  }
};

struct calibration_result {
  quant_scheme scheme;              ///< with `scales`: quantize_with_scales(x, scheme, scales)
  std::vector<float> scales;        ///< 1 (tensor) or rows (channel)
  std::vector<float> statistic;     ///< per group: amax (amax, mse) or the percentile value
  std::vector<double> mse;          ///< per group: mean squared error at its scale
  std::vector<double> sqnr_db;      ///< per group
  double total_mse = 0.0;           ///< over every finite element of the set
  double total_sqnr_db = 0.0;
  std::size_t elements = 0;         ///< finite elements used
  std::size_t nonfinite = 0;        ///< Inf/NaN elements ignored
  std::size_t candidates = 0;       ///< mse: candidate scales tried (summed over groups)
};

namespace detail {

/// Error sums of one group at scale s.
struct calib_error {
  double sum_sq_err = 0.0, sum_sq = 0.0;
  std::size_t n = 0;
  [[nodiscard]] double mse() const noexcept { return n == 0 ? 0.0 : sum_sq_err / static_cast<double>(n); }
  [[nodiscard]] double sqnr_db() const noexcept {
    if (n == 0) return std::numeric_limits<double>::quiet_NaN();
    if (sum_sq_err == 0.0) return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(sum_sq / sum_sq_err);
  }
};

/// The rows of group g (one row for channel, all rows for tensor) of every tensor in the set.
template <class F>
void for_each_group_row(std::span<const matrix_view<const float>> set, granularity gran, std::size_t g, F&& f) {
  for (const auto& x : set) {
    if (gran == granularity::channel) {
      f(std::span<const float>(x.row(g), x.cols));
    } else {
      for (std::size_t r = 0; r < x.rows; ++r) f(std::span<const float>(x.row(r), x.cols));
    }
  }
}

/// y = dequantize(quantize_with_scales(x, s)) per row, on the bulk kernels (the quantize engine's
/// own calls), then the error sums over the finite x.
template <class Elem>
calib_error group_error(std::span<const matrix_view<const float>> set, granularity gran, std::size_t g, float s,
                        rounding round) {
  calib_error e;
  const conversion c{round, overflow::saturate};
  std::vector<simd::code_t<Elem>> codes;
  std::vector<float> y;
  for_each_group_row(set, gran, g, [&](std::span<const float> row) {
    codes.resize(row.size());
    y.resize(row.size());
    float unused = 0.0f;
    simd::check(simd::quantize_scaled<Elem>(row, std::span(codes), s, unused, c), "calibrate");
    simd::check(simd::dequantize_scaled<Elem>(std::span<const simd::code_t<Elem>>(codes), std::span(y), s), "calibrate");
    for (std::size_t i = 0; i < row.size(); ++i) {
      const float x = row[i];
      if (!std::isfinite(x)) continue;
      const double d = static_cast<double>(x) - static_cast<double>(y[i]);
      e.sum_sq_err += d * d;
      e.sum_sq += static_cast<double>(x) * static_cast<double>(x);
      ++e.n;
    }
  });
  return e;
}

/// numpy-"linear" percentile of |x| over the finite values (v sorted ascending, h = p/100 (n-1)).
inline float abs_percentile(std::vector<float> v, double p) {
  if (v.empty()) return 0.0f;
  const double h = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const auto lo_it = v.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(v.begin(), lo_it, v.end());
  const float a = *lo_it;
  if (lo + 1 >= v.size()) return a;
  const float b = *std::min_element(lo_it + 1, v.end());
  return static_cast<float>(static_cast<double>(a) + (h - static_cast<double>(lo)) * (static_cast<double>(b) - a));
}

}  // namespace detail

/// Calibrates fixed scales over `set` (see the file comment).
[[nodiscard]] inline calibration_result calibrate(std::span<const matrix_view<const float>> set,
                                                  const calibration_config& cfg) {
  cfg.validate();
  if (set.empty()) throw shape_error("calibrate: the calibration set is empty; expected at least one tensor");
  for (const auto& x : set) x.validate();
  std::size_t groups = 1;
  if (cfg.gran == granularity::channel) {
    groups = set[0].rows;
    for (std::size_t i = 1; i < set.size(); ++i)
      if (set[i].rows != groups)
        throw shape_error("calibrate: per-channel calibration needs the same number of rows in every tensor; tensor 0 has " +
                          std::to_string(groups) + ", tensor " + std::to_string(i) + " has " + std::to_string(set[i].rows));
  }

  calibration_result res;
  res.scheme = cfg.scheme();
  res.scales.assign(groups, 1.0f);
  res.statistic.assign(groups, 0.0f);
  res.mse.assign(groups, 0.0);
  res.sqnr_db.assign(groups, std::numeric_limits<double>::infinity());
  double tot_err = 0.0, tot_sq = 0.0;

  visit_format(cfg.format, [&](auto t) {
    using Elem = typename decltype(t)::type;
    const double log2_max = std::log2(static_cast<double>(std::numeric_limits<Elem>::max()));
    for (std::size_t g = 0; g < groups; ++g) {
      // 1. statistics: finite amax (and |x| for the percentile)
      float amax = 0.0f;
      std::vector<float> mags;
      detail::for_each_group_row(set, cfg.gran, g, [&](std::span<const float> row) {
        for (const float x : row) {
          if (!std::isfinite(x)) {
            ++res.nonfinite;
            continue;
          }
          amax = std::max(amax, std::fabs(x));
          if (cfg.method == calibration_method::percentile) mags.push_back(std::fabs(x));
        }
      });
      // 2. the scale
      float s = 1.0f;
      float stat = amax;
      if (cfg.method == calibration_method::percentile) stat = detail::abs_percentile(std::move(mags), cfg.percentile);
      if (cfg.method != calibration_method::mse) {
        if (stat > 0.0f) {
          s = cfg.form == calibration_scale::pow2 ? group_scale<Elem>(stat, scale_rule::pow2, cfg.target)
                                                  : std::ldexp(stat, -cfg.target);
          if (!(s > 0.0f)) s = std::numeric_limits<float>::denorm_min();
        }
      } else if (amax > 0.0f) {
        // candidates 2^(m / G) with log2(amax / s) in [log2_max - search, log2_max + clip]
        const int G = cfg.steps_per_octave;
        const double la = std::log2(static_cast<double>(amax));
        auto m_lo = static_cast<long>(std::ceil(G * (la - log2_max - cfg.clip_binades)));
        auto m_hi = static_cast<long>(std::floor(G * (la - log2_max + cfg.search_binades)));
        m_lo = std::max(m_lo, -126L * G);  // keep s a normal float
        m_hi = std::min(m_hi, 127L * G);
        double best = std::numeric_limits<double>::infinity();
        for (long m = m_hi; m >= m_lo; --m) {  // descending scale: ties keep the larger one
          const auto cand = static_cast<float>(std::exp2(static_cast<double>(m) / G));
          const double e = detail::group_error<Elem>(set, cfg.gran, g, cand, cfg.round).mse();
          ++res.candidates;
          if (e < best) best = e, s = cand;
        }
      }
      // 3. the error it achieves
      const auto err = detail::group_error<Elem>(set, cfg.gran, g, s, cfg.round);
      res.scales[g] = s;
      res.statistic[g] = stat;
      res.mse[g] = err.mse();
      res.sqnr_db[g] = err.sqnr_db();
      res.elements += err.n;
      tot_err += err.sum_sq_err;
      tot_sq += err.sum_sq;
    }
  });
  if (res.elements == 0)
    throw std::domain_error("calibrate: the calibration set holds no finite value (" +
                            (res.nonfinite == 0 ? std::string("it is empty")
                                                : "all " + std::to_string(res.nonfinite) + " elements are NaN or Inf") +
                            "); expected at least one finite element to choose a scale from");
  res.total_mse = tot_err / static_cast<double>(res.elements);
  res.total_sqnr_db = tot_err == 0.0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(tot_sq / tot_err);
  return res;
}

/// One tensor as the whole calibration set.
[[nodiscard]] inline calibration_result calibrate(matrix_view<const float> x, const calibration_config& cfg) {
  return calibrate(std::span<const matrix_view<const float>>(&x, 1), cfg);
}

}  // namespace minifloat
