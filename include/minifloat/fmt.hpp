#pragma once
// fmt::formatter for every format (link minifloat::fmt). The value formats like a float and
// takes float specs ("{:.3f}", "{:g}"); the code is shown with "{:x}" (0x6e, zero-padded to
// the format's width) or "{:b}" (0b01101110).
#include <fmt/format.h>

#include "formats/basic_float.hpp"

template <class S>
struct fmt::formatter<minifloat::basic_float<S>> : fmt::formatter<float> {
  char code_style_ = 0;

  constexpr auto parse(fmt::format_parse_context& ctx) -> decltype(ctx.begin()) {
    auto it = ctx.begin();
    if (it != ctx.end() && (*it == 'x' || *it == 'b')) {
      auto next = it + 1;
      if (next == ctx.end() || *next == '}') {
        code_style_ = *it;
        return next;
      }
    }
    return fmt::formatter<float>::parse(ctx);
  }

  template <class FormatContext>
  auto format(minifloat::basic_float<S> x, FormatContext& ctx) const -> decltype(ctx.out()) {
    if (code_style_ == 'x') return fmt::format_to(ctx.out(), "0x{:0{}x}", unsigned{x.bits()}, (S::bits + 3) / 4);
    if (code_style_ == 'b') return fmt::format_to(ctx.out(), "0b{:0{}b}", unsigned{x.bits()}, S::bits);
    return fmt::formatter<float>::format(static_cast<float>(x), ctx);
  }
};
