#pragma once
// Format names, rounding and overflow options as the CLI spells them.
#include <minifloat/analysis/format_profile.hpp>
#include <minifloat/quant/quantized_tensor.hpp>
#include <minifloat/quant/scheme.hpp>
#include <minifloat/quant/scheme_string.hpp>
#include <minifloat/io/files.hpp>

#include <optional>
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

/// --round MODE, declared with its help; `first` describes "nearest" for this command.
inline void add_round_option(args& a, const std::string& first) {
  a.option("round", first + ", nearest_even, nearest_away, toward_zero, upward, downward or stochastic", "MODE");
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
/// quant_scheme::validate(), the one check every entry point shares (enum ranges, MX elements
/// round to nearest even, a pow2 target T inside the format's binades).
inline void check_scheme(const quant_scheme& s, const std::string& who) {
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    throw usage_error(who + e.what());
  }
}

/// A scheme string given to `option` (gemm --a-scheme, attention --k-scheme): parsed by the one
/// scheme parser and checked by check_scheme, like quantize's options and analyze's --schemes.
inline quant_scheme parse_scheme_option(const std::string& text, const std::string& option) {
  quant_scheme s;
  try {
    s = parse_scheme(text).scheme;
  } catch (const std::invalid_argument& e) {
    throw usage_error(option + ": " + minifloat::detail::printable_text(e.what()));
  }
  check_scheme(s, option + " '" + minifloat::detail::printable_text(text) + "': ");
  return s;
}

}  // namespace minifloat::cli
