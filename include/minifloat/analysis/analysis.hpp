#pragma once
// Fidelity analysis of real tensors: which format keeps a tensor best, measured per tensor and
// per quantization scheme. Umbrella for analysis/ plus the default scheme set of
// `minifloat analyze` (docs/analysis.md explains every metric and the scheme syntax).
//
//   auto schemes = minifloat::analysis::default_schemes();
//   auto stats = minifloat::analysis::analyze_matrix(x, rows, cols, schemes);
//   stats[0].sqnr_db(), stats[0].zero_rate(), stats[0].class_share(0) ...
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "../quant/matrix_view.hpp"
#include "../quant/scheme_string.hpp"
#include "format_profile.hpp"
#include "metrics.hpp"

namespace minifloat::analysis {

/// The schemes `minifloat analyze` compares when none are given:
///   hifloat8/tensor          HiF8, one pow2 scale per tensor, N_guard 11 (amax -> [16, 32))
///   hifloat8/channel         HiF8, one pow2 scale per row
///   float8_e4m3fn/tensor     OCP E4M3, one fp32 scale per tensor, amax -> 448
///   mxfp8_e4m3, mxfp8_e5m2   OCP MX: E8M0 scale per 32 elements along a row, floor rule
///   mxfp4                    OCP MX FP4 (E2M1)
///   float8_e4m3fn/block128   E4M3 with one fp32 scale per 128x128 tile (DeepSeek-V3 weights)
inline constexpr std::string_view default_scheme_strings[] = {
    "hifloat8/tensor", "hifloat8/channel", "float8_e4m3fn/tensor", "mxfp8_e4m3",
    "mxfp8_e5m2",      "mxfp4",            "float8_e4m3fn/block128",
};

[[nodiscard]] inline std::vector<named_scheme> default_schemes() {
  std::vector<named_scheme> v;
  for (auto s : default_scheme_strings) v.push_back(parse_scheme(s));
  return v;
}

/// Measures a rows x cols float32 matrix under every scheme (in order).
[[nodiscard]] inline std::vector<fidelity_stats> analyze_matrix(std::span<const float> x, std::size_t rows,
                                                                std::size_t cols,
                                                                std::span<const named_scheme> schemes) {
  const matrix_view<const float> m(x, rows, cols);
  std::vector<fidelity_stats> out;
  out.reserve(schemes.size());
  for (const auto& s : schemes) out.push_back(measure(m, s.scheme, profile_of(s.scheme.format)));
  return out;
}

/// The binary exponent at which a group's amax lands after scaling under `s` (its alignment in
/// the format): T for pow2; the top binade of the format for the max and MX rules (amax / s
/// becomes max, or lies within a factor 2 of it); nullopt for `none` (it depends on the data).
[[nodiscard]] inline std::optional<int> amax_binade_after_scaling(const quant_scheme& s) {
  if (s.rule == scale_rule::none) return std::nullopt;
  if (s.rule == scale_rule::pow2) return s.target;
  return profile_of(s.format).max_binade;
}

}  // namespace minifloat::analysis

#include "plots.hpp"  // what the plots of a report show (needs amax_binade_after_scaling above)
