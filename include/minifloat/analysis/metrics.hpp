#pragma once
// Fidelity metrics of a quantized tensor against its float32 original, accumulated in double in
// one streaming pass (no copy of either tensor is made):
//
//   SQNR       10 log10(sum x^2 / sum (x - q)^2) dB over the finite inputs; +inf when every
//              finite input is reproduced exactly (and -inf when sum x^2 = 0 but q differs);
//              NaN ("n/a") when there is no finite input at all (an empty, all-NaN or all-Inf
//              tensor: nothing was measured, which is not an exact match)
//   MSE        sum (x - q)^2 / (number of finite inputs)
//   max abs    max |x - q|;  max rel = max |x - q| / |x| over finite non-zero x
//   zero-rate  (finite non-zero x with q == 0) / (finite non-zero x)
//   overflow   x / s at or past the format's overflow threshold (format_profile.hpp): the
//              value was clipped to +-max * s (saturation)
//   underflow  finite non-zero x with |x / s| below the format's smallest normal: it lands in the
//              subnormal (HiF8: denormal) range with fewer significand bits, or flushes to 0
//   NaN        outputs q that are NaN (non-finite inputs are counted apart and skipped by the sums)
//   classes    how many finite non-zero x have x / s in each precision class of the format
//   histograms floor(log2 |x|) of the inputs, and floor(log2 |x / s|) (where values land in the
//              format after scaling)
// Here s is the scale of x's group, so that x ~ s * decode(code).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "../formats/mx_scale.hpp"
#include "../core/errors.hpp"
#include "../quant/matrix_view.hpp"
#include "../quant/quantized_tensor.hpp"
#include "format_profile.hpp"

namespace minifloat::analysis {

/// Counts of floor(log2 |v|) over finite non-zero values, for E in [min_exponent, max_exponent]
/// (values beyond are counted at the ends), plus zeros and non-finite values.
class exponent_histogram {
 public:
  static constexpr int min_exponent = -320, max_exponent = 320;  // covers double-scaled fp32 values

  void add(double v) noexcept {
    if (!std::isfinite(v)) {
      ++nonfinite_;
      return;
    }
    if (v == 0) {
      ++zeros_;
      return;
    }
    const int e = std::clamp(std::ilogb(v), min_exponent, max_exponent);
    ++bins_[static_cast<std::size_t>(e - min_exponent)];
  }
  void merge(const exponent_histogram& o) noexcept {
    for (std::size_t i = 0; i < bins_.size(); ++i) bins_[i] += o.bins_[i];
    zeros_ += o.zeros_, nonfinite_ += o.nonfinite_;
  }
  [[nodiscard]] std::uint64_t count(int e) const noexcept {
    return e < min_exponent || e > max_exponent ? 0 : bins_[static_cast<std::size_t>(e - min_exponent)];
  }
  [[nodiscard]] std::uint64_t zeros() const noexcept { return zeros_; }
  [[nodiscard]] std::uint64_t nonfinite() const noexcept { return nonfinite_; }
  /// Finite non-zero values counted.
  [[nodiscard]] std::uint64_t total() const noexcept {
    std::uint64_t t = 0;
    for (auto b : bins_) t += b;
    return t;
  }
  /// The non-empty bins, E -> count, in increasing E.
  [[nodiscard]] std::map<int, std::uint64_t> bins() const {
    std::map<int, std::uint64_t> m;
    for (std::size_t i = 0; i < bins_.size(); ++i)
      if (bins_[i] != 0) m[static_cast<int>(i) + min_exponent] = bins_[i];
    return m;
  }
  friend bool operator==(const exponent_histogram&, const exponent_histogram&) = default;

 private:
  std::array<std::uint64_t, max_exponent - min_exponent + 1> bins_{};
  std::uint64_t zeros_ = 0, nonfinite_ = 0;
};

/// Every metric of one (tensor, scheme) pair; add() streams element pairs into it.
struct fidelity_stats {
  std::uint64_t count = 0;             // elements seen
  std::uint64_t finite_count = 0;      // finite inputs: they enter SQNR, MSE, max errors
  std::uint64_t nonfinite_inputs = 0;  // NaN / Inf inputs
  std::uint64_t nonzero_count = 0;     // finite non-zero inputs (zero-rate denominator)
  std::uint64_t zero_count = 0;        // ... that quantized to 0 (zero-rate numerator)
  std::uint64_t overflow_count = 0;    // clipped at +-max (saturation)
  std::uint64_t underflow_count = 0;   // scaled below the smallest normal (incl. flushed to 0)
  std::uint64_t nan_count = 0;         // NaN outputs
  double signal_energy = 0;            // sum x^2
  double noise_energy = 0;             // sum (x - q)^2
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::vector<std::uint64_t> class_counts;  // per format_profile::classes; empty without a profile
  exponent_histogram scaled_exponents;      // floor(log2 |x / s|) of finite non-zero x

  fidelity_stats() = default;
  explicit fidelity_stats(const format_profile& p) : class_counts(p.classes.size(), 0), profile_(&p) {}

  /// One element: input x, its quantized value q. Error metrics only (no scale known).
  void add(float x, float q) noexcept {
    ++count;
    if (std::isnan(q)) ++nan_count;
    if (!std::isfinite(x)) {
      ++nonfinite_inputs;
      return;
    }
    ++finite_count;
    const double xd = x;
    // A NaN output for a finite input is an infinite error (NaN would poison the sums).
    const double err = std::isnan(q) ? std::numeric_limits<double>::infinity() : std::fabs(xd - static_cast<double>(q));
    signal_energy += xd * xd;
    noise_energy += err * err;
    max_abs_error = std::max(max_abs_error, err);
    if (x != 0) {
      ++nonzero_count;
      if (q == 0) ++zero_count;
      max_rel_error = std::max(max_rel_error, err / std::fabs(xd));
    }
  }

  /// One element with its scaled value x / s (s: the scale of x's group): also the precision
  /// class, overflow, underflow and the scaled exponent. Needs a profile (constructor).
  void add(float x, float q, double scaled) noexcept {
    add(x, q);
    if (!std::isfinite(x) || x == 0 || profile_ == nullptr || std::isnan(scaled)) return;
    const double a = std::fabs(scaled);
    const std::size_t k = profile_->class_of(a);
    ++class_counts[k];
    if (k == profile_->overflow_class) ++overflow_count;
    if (a < profile_->min_normal) ++underflow_count;
    scaled_exponents.add(a);
  }

  /// Adds another tensor's counts (pooled statistics); both must use the same profile or none.
  void merge(const fidelity_stats& o) {
    if (class_counts.size() != o.class_counts.size())
      throw shape_error("fidelity_stats::merge: class counts of different formats (" +
                        std::to_string(class_counts.size()) + " vs " + std::to_string(o.class_counts.size()) + ")");
    count += o.count, finite_count += o.finite_count, nonfinite_inputs += o.nonfinite_inputs;
    nonzero_count += o.nonzero_count, zero_count += o.zero_count, overflow_count += o.overflow_count;
    underflow_count += o.underflow_count, nan_count += o.nan_count;
    signal_energy += o.signal_energy, noise_energy += o.noise_energy;
    max_abs_error = std::max(max_abs_error, o.max_abs_error);
    max_rel_error = std::max(max_rel_error, o.max_rel_error);
    for (std::size_t i = 0; i < class_counts.size(); ++i) class_counts[i] += o.class_counts[i];
    scaled_exponents.merge(o.scaled_exponents);
  }

  /// 10 log10(signal / noise) dB: +inf for an exact match, -inf for noise over zero signal, NaN
  /// (not applicable) without a single finite input.
  [[nodiscard]] double sqnr_db() const noexcept {
    if (finite_count == 0) return std::numeric_limits<double>::quiet_NaN();
    if (noise_energy == 0) return std::numeric_limits<double>::infinity();
    if (signal_energy == 0) return -std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(signal_energy / noise_energy);
  }
  [[nodiscard]] double mse() const noexcept {
    return finite_count == 0 ? 0.0 : noise_energy / static_cast<double>(finite_count);
  }
  [[nodiscard]] double zero_rate() const noexcept {
    return nonzero_count == 0 ? 0.0 : static_cast<double>(zero_count) / static_cast<double>(nonzero_count);
  }
  /// Share of the finite non-zero inputs in class k (0 if there are none).
  [[nodiscard]] double class_share(std::size_t k) const noexcept {
    std::uint64_t total = 0;
    for (auto c : class_counts) total += c;
    return total == 0 || k >= class_counts.size() ? 0.0
                                                  : static_cast<double>(class_counts[k]) / static_cast<double>(total);
  }
  [[nodiscard]] const format_profile* profile() const noexcept { return profile_; }

 private:
  const format_profile* profile_ = nullptr;
};

/// 10 log10(sum x^2 / sum (x - q)^2) of two double vectors (+inf if equal), e.g. attention
/// outputs against their reference.
[[nodiscard]] inline double sqnr_db(std::span<const double> x, std::span<const double> q) {
  if (x.size() != q.size())
    throw shape_error("sqnr_db: " + std::to_string(x.size()) + " reference values but " + std::to_string(q.size()) +
                      " to compare");
  double signal = 0, noise = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = x[i] - q[i];
    signal += x[i] * x[i], noise += e * e;
  }
  if (noise == 0) return std::numeric_limits<double>::infinity();
  if (signal == 0) return -std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

/// Error metrics of q against x (same length), without scales: SQNR, MSE, max errors, zero-rate,
/// NaN count.
[[nodiscard]] inline fidelity_stats measure_error(std::span<const float> x, std::span<const float> q) {
  if (x.size() != q.size())
    throw shape_error("measure_error: " + std::to_string(x.size()) + " inputs but " + std::to_string(q.size()) +
                      " quantized values");
  fidelity_stats s;
  for (std::size_t i = 0; i < x.size(); ++i) s.add(x[i], q[i]);
  return s;
}

/// Every metric of the quantized tensor q against its source x (q.rows x q.cols), streaming over
/// the codes: each element's value is decode(code) * scale exactly as dequantize() computes it
/// (float multiply), its scaled value x / s as quantize() computed it (fp32 scales: a float
/// division; MX: x * 2^-k in double).
[[nodiscard]] inline fidelity_stats measure(matrix_view<const float> x, const quantized_tensor_view& q,
                                            const format_profile& profile) {
  q.validate();
  x.validate();
  if (x.rows != q.rows || x.cols != q.cols)
    throw shape_error("measure: input is " + std::to_string(x.rows) + "x" + std::to_string(x.cols) +
                      ", quantized tensor " + std::to_string(q.rows) + "x" + std::to_string(q.cols));
  if (profile.format != q.scheme.format)
    throw shape_error("measure: profile of " + profile.name + " for a tensor of " + std::string(to_string(q.scheme.format)));
  fidelity_stats s(profile);
  if (q.rows == 0 || q.cols == 0) return s;  // nothing to measure, however large the other extent
  visit_format(q.scheme.format, [&](auto t) {
    using Elem = typename decltype(t)::type;
    constexpr int bits = sizeof_bits<Elem>;
    const std::size_t rb = minifloat::detail::code_row_bytes(q.scheme.format, q.cols);
    const bool mx = q.scheme.gran == granularity::mx;
    const auto [tr, tc] = minifloat::detail::scale_tile(q.scheme, q.rows, q.cols);
    const std::size_t gc = q.scale_grid_cols();
    for (std::size_t r = 0; r < q.rows; ++r) {
      const auto row = q.codes.subspan(r * rb, rb);
      for (std::size_t c = 0; c < q.cols; ++c) {
        const auto code = static_cast<typename Elem::storage_type>(minifloat::detail::get_code(row, bits, c));
        const float v = static_cast<float>(Elem::from_bits(code));
        const float xv = x(r, c);
        if (mx) {
          // scale_tile gives the MX tile in every orientation (1x32, 32x1, 32x32)
          const std::uint8_t sc = q.mx_scales[(r / tr) * gc + c / tc];
          const float scale = mx_scale_value(sc);
          s.add(xv, v * scale, static_cast<double>(xv) / static_cast<double>(scale));
        } else {
          const float scale = q.scales[(r / tr) * gc + c / tc];
          s.add(xv, v * scale, static_cast<double>(xv / scale));
        }
      }
    }
  });
  return s;
}

/// Quantizes x under `scheme` and measures the result. An empty matrix (a zero extent, however
/// large the other) measures nothing and returns at once.
[[nodiscard]] inline fidelity_stats measure(matrix_view<const float> x, const quant_scheme& scheme,
                                            const format_profile& profile) {
  if (x.rows == 0 || x.cols == 0) {
    scheme.validate();
    if (profile.format != scheme.format)
      throw shape_error("measure: profile of " + profile.name + " for a scheme of " + std::string(to_string(scheme.format)));
    return fidelity_stats(profile);
  }
  return measure(x, quantize(x, scheme).view(), profile);
}

}  // namespace minifloat::analysis
