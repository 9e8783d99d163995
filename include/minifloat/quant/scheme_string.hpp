#pragma once
// Quantization schemes as short strings, for command lines, tables and file names:
//
//   SCHEME  := FORMAT "/" GRAN ("/" KEY "=" VALUE)*  |  ALIAS ("/" KEY "=" VALUE)*
//   GRAN    := tensor | channel | token | mx | block | block<N> | block<R>x<C>
//   KEY     := block | axis | scale-rule | target | n-guard | round
//
// Each piece is one option of `minifloat quantize`, spelled the same way:
//
//   scheme piece            quantize option             quant_scheme field
//   FORMAT                  --format FORMAT             format
//   GRAN                    --granularity GRAN          gran
//   block<N>, block<R>x<C>  --granularity block --block NxN / RxC
//   block=RxC               --block RxC                 block_rows, block_cols (block: default 128x128;
//                                                       mx: 32x32 for 2-D tiles, 1x32 / 32x1 = axis 1 / 0)
//   axis=0|1                --axis A                    axis (mx only; 1 = blocks along a row)
//   scale-rule=R            --scale-rule R              rule (max|pow2|none; mx: floor|rceil|ceil|even)
//   target=T                --target T                  target (pow2 only: amax lands in [2^T, 2^(T+1)))
//   n-guard=N               --n-guard N                 target = 15 - N (the HiF8 recipe's guard)
//   round=MODE              --round MODE                round
//
// Aliases: mxfp8_e4m3 = float8_e4m3fn/mx, mxfp8_e5m2 = float8_e5m2/mx, mxfp6_e3m2 =
// float6_e3m2fn/mx, mxfp6_e2m3 = float6_e2m3fn/mx, mxfp4 = float4_e2m1fn/mx. Unnamed options take
// the defaults of quant_scheme::make (hifloat8: pow2 with N_guard 11, i.e. T = 4; mx: floor;
// otherwise max) exactly as `minifloat quantize` does, so `hifloat8/tensor` here and
// `--format hifloat8 --granularity tensor` there are the same scheme.
//
// scheme_name(s) is the short spelling (alias, block<N>), to_scheme_string(s) the long one
// (always FORMAT/GRAN, block=RxC spelled out); both parse back to s. Errors are
// unsupported_error (unknown names, options that do not apply) or shape_error (bad block sizes).
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/errors.hpp"
#include "../formats/format_list.hpp"
#include "../core/policy.hpp"
#include "scheme.hpp"

namespace minifloat {

/// A parsed scheme string: the scheme, and its short display name (scheme_name).
struct named_scheme {
  quant_scheme scheme;
  std::string name;
};

namespace detail {

struct scheme_alias {
  std::string_view alias;
  format_id format;
};
inline constexpr scheme_alias scheme_aliases[] = {
    {"mxfp8_e4m3", format_id::float8_e4m3fn}, {"mxfp8_e5m2", format_id::float8_e5m2},
    {"mxfp6_e3m2", format_id::float6_e3m2fn}, {"mxfp6_e2m3", format_id::float6_e2m3fn},
    {"mxfp4", format_id::float4_e2m1fn},
};

inline constexpr std::string_view scheme_grammar =
    "expected FORMAT/GRANULARITY[/key=value...] (granularity tensor, channel, token, mx, block, blockN or "
    "blockRxC; keys block, axis, scale-rule, target, n-guard, round) or an alias (mxfp8_e4m3, mxfp8_e5m2, "
    "mxfp6_e3m2, mxfp6_e2m3, mxfp4)";

[[noreturn]] inline void scheme_fail(std::string_view text, const std::string& why) {
  throw unsupported_error("scheme '" + std::string(text) + "': " + why);
}

template <class Int>
Int scheme_int(std::string_view text, std::string_view whole, std::string_view what) {
  Int v{};
  const char* first = text.data();
  if (!text.empty() && text.front() == '+') ++first;  // from_chars takes no '+'
  auto [p, ec] = std::from_chars(first, text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size())
    scheme_fail(whole, std::string(what) + " must be an integer, got '" + std::string(text) + "'");
  return v;
}

/// "RxC" (or "N" when square_ok) -> (R, C), both >= 1.
inline std::pair<std::size_t, std::size_t> scheme_block(std::string_view text, std::string_view whole, bool square_ok) {
  const auto x = text.find_first_of("xX");
  if (x == std::string_view::npos) {
    if (!square_ok) scheme_fail(whole, "block must look like RxC (e.g. 1x128, 128x128), got '" + std::string(text) + "'");
    const auto n = scheme_int<std::size_t>(text, whole, "block size");
    if (n == 0) throw shape_error("scheme '" + std::string(whole) + "': block size must be at least 1");
    return {n, n};
  }
  const auto r = scheme_int<std::size_t>(text.substr(0, x), whole, "block rows");
  const auto c = scheme_int<std::size_t>(text.substr(x + 1), whole, "block cols");
  if (r == 0 || c == 0)
    throw shape_error("scheme '" + std::string(whole) + "': block sizes must be at least 1, got '" + std::string(text) + "'");
  return {r, c};
}

inline std::vector<std::string_view> split_scheme(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const auto slash = text.find('/', start);
    parts.push_back(text.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

}  // namespace detail

/// The long spelling: FORMAT/GRAN plus every option that differs from what FORMAT/GRAN alone
/// would give, in the order block, axis, scale-rule, target (n-guard for hifloat8), round.
[[nodiscard]] inline std::string to_scheme_string(const quant_scheme& s) {
  std::string out = std::string(to_string(s.format)) + "/" + std::string(to_string(s.gran));
  const quant_scheme d = quant_scheme::make(s.format, s.gran);
  if (s.gran == granularity::block)
    out += "/block=" + std::to_string(s.block_rows) + "x" + std::to_string(s.block_cols);
  if (s.gran == granularity::mx && s.tile() == mx_tile::square32) out += "/block=32x32";
  else if (s.gran == granularity::mx && s.axis != d.axis) out += "/axis=" + std::to_string(s.axis);
  if (s.rule != d.rule) out += "/scale-rule=" + std::string(to_string(s.rule));
  // HiF8 recipes speak of N_guard (docs/formats/hifloat8.md#recipe-numbers-and-n_guard); other formats of the target T.
  if (s.rule == scale_rule::pow2 && s.target != d.target)
    out += s.format == format_id::hifloat8 ? "/n-guard=" + std::to_string(15 - s.target) : "/target=" + std::to_string(s.target);
  if (s.round != d.round) out += "/round=" + std::string(to_string(s.round));
  return out;
}

/// The short spelling used as a display name: an alias for MX schemes (mxfp8_e4m3), block<N>
/// for square blocks (float8_e4m3fn/block128); the remaining options as in to_scheme_string.
[[nodiscard]] inline std::string scheme_name(const quant_scheme& s) {
  std::string head;
  if (s.gran == granularity::mx) {
    for (const auto& a : detail::scheme_aliases)
      if (a.format == s.format) head = std::string(a.alias);
  }
  if (head.empty()) {
    head = std::string(to_string(s.format)) + "/" + std::string(to_string(s.gran));
    if (s.gran == granularity::block)
      head += s.block_rows == s.block_cols ? std::to_string(s.block_rows)
                                           : std::to_string(s.block_rows) + "x" + std::to_string(s.block_cols);
  }
  std::string tail = to_scheme_string(s);
  // Drop FORMAT/GRAN and the block option from the long form: head already says them.
  const auto parts = detail::split_scheme(tail);
  for (std::size_t i = 2; i < parts.size(); ++i)
    if (s.gran != granularity::block || !parts[i].starts_with("block=")) head.append("/").append(parts[i]);
  return head;
}

/// Parses a scheme string (grammar at the top of this file) and validates the scheme.
[[nodiscard]] inline named_scheme parse_scheme(std::string_view text) {
  const auto parts = detail::split_scheme(text);
  std::size_t next = 0;
  std::optional<quant_scheme> s;
  for (const auto& a : detail::scheme_aliases)
    if (parts[0] == a.alias) s = quant_scheme::make(a.format, granularity::mx), next = 1;
  if (!s) {
    const auto fmt = parse_format(parts[0]);
    if (!fmt) {
      std::string names;
      for_each_format([&](auto t) {
        if (!names.empty()) names += ", ";
        names += format_name<typename decltype(t)::type>;
      });
      detail::scheme_fail(text, "unknown format or alias '" + std::string(parts[0]) + "' (formats: " + names + "); " +
                                    std::string(detail::scheme_grammar));
    }
    if (parts.size() < 2 || parts[1].empty() || parts[1].find('=') != std::string_view::npos)
      detail::scheme_fail(text, "a granularity must follow the format; " + std::string(detail::scheme_grammar));
    std::string_view g = parts[1];
    std::optional<std::pair<std::size_t, std::size_t>> block;
    if (g.starts_with("block") && g.size() > 5) {
      block = detail::scheme_block(g.substr(5), text, true);
      g = "block";
    }
    const auto gran = parse_granularity(g);
    if (!gran)
      detail::scheme_fail(text, "unknown granularity '" + std::string(parts[1]) +
                                    "'; expected tensor, channel, token, mx, block, blockN or blockRxC");
    s = quant_scheme::make(*fmt, *gran);
    if (s->gran == granularity::block) {
      // As `minifloat quantize`: a block without --block is the DeepSeek-V3 128x128 weight tile.
      s->block_rows = s->block_cols = 128;
      if (block) std::tie(s->block_rows, s->block_cols) = *block;
    }
    next = 2;
  }

  std::vector<std::string_view> seen;
  bool target_given = false;
  for (std::size_t i = next; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    if (eq == std::string_view::npos)
      detail::scheme_fail(text, "'" + std::string(parts[i]) + "' is not key=value; " + std::string(detail::scheme_grammar));
    const std::string_view key = parts[i].substr(0, eq), value = parts[i].substr(eq + 1);
    for (auto k : seen)
      if (k == key || ((k == "target" || k == "n-guard") && (key == "target" || key == "n-guard")))
        detail::scheme_fail(text, "option '" + std::string(key) + "' given twice (target and n-guard set the same value)");
    seen.push_back(key);
    if (key == "block") {
      if (s->gran == granularity::mx) {
        const auto [br, bc] = detail::scheme_block(value, text, false);
        if (br == 32 && bc == 32) s->block_rows = s->block_cols = 32;
        else if (br == 1 && bc == 32) s->axis = 1;
        else if (br == 32 && bc == 1) s->axis = 0;
        else detail::scheme_fail(text, "mx tiles are 1x32, 32x1 or 32x32, got block=" + std::string(value));
        continue;
      }
      if (s->gran != granularity::block) detail::scheme_fail(text, "block= applies to granularity block and mx only");
      std::tie(s->block_rows, s->block_cols) = detail::scheme_block(value, text, false);
    } else if (key == "axis") {
      if (s->gran != granularity::mx) detail::scheme_fail(text, "axis= applies to granularity mx only");
      s->axis = detail::scheme_int<int>(value, text, "axis");
      if (s->axis != 0 && s->axis != 1) detail::scheme_fail(text, "axis must be 0 or 1, got " + std::string(value));
    } else if (key == "scale-rule") {
      const auto r = parse_scale_rule(value);
      if (!r)
        detail::scheme_fail(text, "unknown scale-rule '" + std::string(value) +
                                      "'; expected max, pow2, none, floor, rceil, ceil or even");
      s->rule = *r;
    } else if (key == "target") {
      s->target = detail::scheme_int<int>(value, text, "target"), target_given = true;
    } else if (key == "n-guard") {
      s->target = pow2_target_from_guard(detail::scheme_int<int>(value, text, "n-guard")), target_given = true;
    } else if (key == "round") {
      const auto r = parse_rounding(value);
      if (!r || *r == rounding::stochastic)
        detail::scheme_fail(text, "unknown round '" + std::string(value) +
                                      "'; expected nearest, nearest_even, nearest_away, toward_zero, upward or downward");
      s->round = *r;
    } else {
      detail::scheme_fail(text, "unknown option '" + std::string(key) +
                                    "'; expected block, axis, scale-rule, target, n-guard or round");
    }
  }
  const auto given = [&](std::string_view k) { return std::find(seen.begin(), seen.end(), k) != seen.end(); };
  if (s->gran == granularity::mx && given("axis") && given("block"))
    detail::scheme_fail(text, "axis= and block= both set the MX tile; give one (block=1x32 is axis=1, 32x1 is axis=0)");
  if (target_given && s->rule != scale_rule::pow2)
    detail::scheme_fail(text, "target/n-guard apply to scale-rule pow2 only");
  try {
    s->validate();
  } catch (const std::invalid_argument& e) {
    detail::scheme_fail(text, e.what());
  }
  return {*s, scheme_name(*s)};
}

/// The same scheme as `minifloat quantize` options, e.g. "--format hifloat8 --granularity tensor".
[[nodiscard]] inline std::string to_quantize_options(const quant_scheme& s) {
  std::string out = "--format " + std::string(to_string(s.format)) + " --granularity " + std::string(to_string(s.gran));
  const std::string long_form = to_scheme_string(s);  // parts view into it
  const auto parts = detail::split_scheme(long_form);
  for (std::size_t i = 2; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    out += " --" + std::string(parts[i].substr(0, eq)) + " " + std::string(parts[i].substr(eq + 1));
  }
  return out;
}

}  // namespace minifloat
