#pragma once
// Format names, rounding and overflow options as the CLI spells them.
#include <minifloat/analysis/format_profile.hpp>
#include <minifloat/quant/quantized_tensor.hpp>
#include <minifloat/quant/scheme.hpp>

#include <stdexcept>
#include <string>

#include "args.hpp"

namespace minifloat::cli {

inline std::string format_names(std::string_view sep = ", ") {
  std::string s;
  for_each_format([&](auto t) {
    if (!s.empty()) s += sep;
    s += format_name<typename decltype(t)::type>;
  });
  return s;
}

/// The named format, or a usage_error listing the valid names.
inline format_id parse_format_name(std::string_view name) {
  if (auto f = parse_format(name)) return *f;
  throw usage_error("unknown format '" + std::string(name) + "'; expected one of: " + format_names());
}

inline rounding parse_round_option(const args& a) {
  const auto text = a.get("round");
  if (!text) return rounding::nearest;
  if (auto r = parse_rounding(*text)) return *r;
  throw usage_error("unknown rounding mode '" + *text +
                    "'; expected nearest, nearest_even, nearest_away, toward_zero, upward, downward or stochastic");
}

/// --saturate (saturate), or --overflow non_saturating|saturate|saturate_nan_to_zero.
inline overflow parse_overflow_option(const args& a) {
  const auto text = a.get("overflow");
  if (text && a.flag("saturate")) throw usage_error("give --saturate or --overflow, not both");
  if (a.flag("saturate")) return overflow::saturate;
  if (!text) return overflow::non_saturating;
  if (auto o = parse_overflow(*text)) return *o;
  throw usage_error("unknown overflow policy '" + *text +
                    "'; expected non_saturating, saturate or saturate_nan_to_zero");
}

/// Everything about a quantization scheme that can be checked before reading any data, as a
/// usage_error prefixed by `who` ("" for options, "scheme 'x': " for scheme strings):
/// quant_scheme::validate() (enum ranges, MX elements round to nearest even), and a pow2
/// target T inside the format's binades (outside them every value would flush to zero or
/// saturate: a silent garbage result).
inline void check_scheme(const quant_scheme& s, const std::string& who) {
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    throw usage_error(who + e.what());
  }
  if (s.rule != scale_rule::pow2) return;
  const auto& p = analysis::profile_of(s.format);
  if (s.target >= p.min_binade && s.target <= p.max_binade) return;
  const bool below = s.target < p.min_binade;
  const std::string range = "2^" + std::to_string(p.min_binade) + " .. 2^" + std::to_string(p.max_binade);
  std::string what = "pow2 target T = " + std::to_string(s.target);
  if (s.format == format_id::hifloat8)
    what += " (N_guard " + std::to_string(15 - s.target) + ")";
  std::string expected = "expected T from " + std::to_string(p.min_binade) + " to " + std::to_string(p.max_binade);
  if (s.format == format_id::hifloat8)
    expected += " (N_guard from " + std::to_string(15 - p.max_binade) + " to " + std::to_string(15 - p.min_binade) + ")";
  throw usage_error(who + what + " puts the amax at 2^" + std::to_string(s.target) + ", outside the binades of " +
                    std::string(to_string(s.format)) + " (" + range + "): " + (below ? "every value" : "values near the amax") + " would " +
                    (below ? "flush to zero" : "be clipped to its max") + "; " + expected);
}

}  // namespace minifloat::cli
