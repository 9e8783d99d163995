#pragma once
// Quantization schemes spelled field by field, for the backend tests and the fake CANN: they need
// schemes the scheme strings cannot say (scale rule none with any block, stochastic rounding).
#include <cstddef>

#include <minifloat/quant/scheme.hpp>

namespace test_support {

/// FORMAT/GRAN with a block of br x bc (used by block granularity), rounding r and scale rule
/// `rule` (none: the scales are given, or are outputs the backend is told how to make).
inline minifloat::quant_scheme scheme_of(minifloat::format_id f, minifloat::granularity g, std::size_t br = 1,
                                         std::size_t bc = 128, minifloat::rounding r = minifloat::rounding::nearest,
                                         minifloat::scale_rule rule = minifloat::scale_rule::none) {
  minifloat::quant_scheme s;
  s.format = f, s.gran = g, s.block_rows = br, s.block_cols = bc, s.round = r, s.rule = rule;
  return s;
}

/// MX blocks of 32 along `axis` with E8M0 scales by `rule`.
inline minifloat::quant_scheme mx_scheme(minifloat::format_id f, int axis,
                                         minifloat::scale_rule rule = minifloat::scale_rule::floor) {
  minifloat::quant_scheme s = minifloat::quant_scheme::make(f, minifloat::granularity::mx);
  s.axis = axis, s.rule = rule;
  return s;
}

}  // namespace test_support
