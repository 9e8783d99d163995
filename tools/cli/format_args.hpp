#pragma once
// Format names, rounding and overflow options as the CLI spells them.
#include <minifloat/all.hpp>

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

/// Runs f(type_tag<T>{}) for the named format or throws usage_error listing the valid names.
template <class F>
void with_format(std::string_view name, F&& f) {
  if (!visit_format(name, f))
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

}  // namespace minifloat::cli
