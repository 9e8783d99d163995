// Scheme strings: the grammar, the aliases, the 1:1 mapping onto `minifloat quantize` options and
// round trips through both spellings.
#include <minifloat/analysis/analysis.hpp>
#include <minifloat/quant/scheme_string.hpp>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace minifloat;

TEST_CASE("scheme strings: defaults follow quant_scheme::make and quantize's block default", "[analysis][scheme]") {
  const auto h = parse_scheme("hifloat8/tensor");
  CHECK(h.scheme == quant_scheme::make(format_id::hifloat8, granularity::tensor));
  CHECK(h.scheme.rule == scale_rule::pow2);
  CHECK(h.scheme.target == 4);  // N_guard 11
  CHECK(h.name == "hifloat8/tensor");

  CHECK(parse_scheme("hifloat8/channel").scheme == quant_scheme::make(format_id::hifloat8, granularity::channel));
  CHECK(parse_scheme("float8_e4m3fn/tensor").scheme.rule == scale_rule::max);

  auto blk = parse_scheme("float8_e4m3fn/block");
  CHECK(blk.scheme.block_rows == 128);
  CHECK(blk.scheme.block_cols == 128);
  CHECK(blk.name == "float8_e4m3fn/block128");
  CHECK(parse_scheme("float8_e4m3fn/block128").scheme == blk.scheme);
  CHECK(parse_scheme("float8_e4m3fn/block/block=128x128").scheme == blk.scheme);
  const auto b1 = parse_scheme("float8_e4m3fn/block1x128");
  CHECK(b1.scheme.block_rows == 1);
  CHECK(b1.scheme.block_cols == 128);
  CHECK(b1.name == "float8_e4m3fn/block1x128");
}

TEST_CASE("scheme strings: MX aliases", "[analysis][scheme]") {
  const std::pair<const char*, format_id> aliases[] = {
      {"mxfp8_e4m3", format_id::float8_e4m3fn}, {"mxfp8_e5m2", format_id::float8_e5m2},
      {"mxfp6_e3m2", format_id::float6_e3m2fn}, {"mxfp6_e2m3", format_id::float6_e2m3fn},
      {"mxfp4", format_id::float4_e2m1fn}};
  for (const auto& [alias, f] : aliases) {
    INFO(alias);
    const auto s = parse_scheme(alias);
    CHECK(s.scheme == quant_scheme::make(f, granularity::mx));
    CHECK(s.scheme.rule == scale_rule::floor);
    CHECK(s.scheme.axis == 1);
    CHECK(s.name == alias);
    CHECK(parse_scheme(std::string(to_string(f)) + "/mx").scheme == s.scheme);
  }
  const auto a0 = parse_scheme("mxfp8_e4m3/axis=0/scale-rule=rceil");
  CHECK(a0.scheme.axis == 0);
  CHECK(a0.scheme.rule == scale_rule::rceil);
  CHECK(a0.name == "mxfp8_e4m3/axis=0/scale-rule=rceil");
  CHECK(to_scheme_string(a0.scheme) == "float8_e4m3fn/mx/axis=0/scale-rule=rceil");
}

TEST_CASE("scheme strings: options", "[analysis][scheme]") {
  const auto g = parse_scheme("hifloat8/tensor/n-guard=9");
  CHECK(g.scheme.target == 6);
  CHECK(g.name == "hifloat8/tensor/n-guard=9");
  CHECK(parse_scheme("hifloat8/tensor/target=6").scheme == g.scheme);
  const auto e = parse_scheme("float8_e5m2/token/scale-rule=pow2/target=10/round=toward_zero");
  CHECK(e.scheme.gran == granularity::token);
  CHECK(e.scheme.rule == scale_rule::pow2);
  CHECK(e.scheme.target == 10);
  CHECK(e.scheme.round == rounding::toward_zero);
  CHECK(e.name == "float8_e5m2/token/scale-rule=pow2/target=10/round=toward_zero");
  CHECK(to_quantize_options(e.scheme) ==
        "--format float8_e5m2 --granularity token --scale-rule pow2 --target 10 --round toward_zero");
  CHECK(to_quantize_options(parse_scheme("float8_e4m3fn/block128").scheme) ==
        "--format float8_e4m3fn --granularity block --block 128x128");
  CHECK(to_quantize_options(parse_scheme("hifloat8/tensor/n-guard=12").scheme) ==
        "--format hifloat8 --granularity tensor --n-guard 12");
}

TEST_CASE("scheme strings: both spellings parse back to the same scheme", "[analysis][scheme]") {
  std::vector<std::string> all;
  for (auto s : analysis::default_scheme_strings) all.emplace_back(s);
  for (auto s : {"bfloat16/tensor/scale-rule=none", "float16/channel", "float6_e3m2fn/block/block=3x5",
                 "float8_e4m3fn/mx/axis=0/scale-rule=even", "float4_e2m1fn/mx/scale-rule=ceil",
                 "hifloat8/block64/n-guard=12/round=nearest_even", "float8_e5m2/tensor/round=upward",
                 "float8_e4m3fn/channel/scale-rule=pow2"})
    all.emplace_back(s);
  for (const auto& text : all) {
    INFO(text);
    const auto s = parse_scheme(text);
    CHECK(parse_scheme(to_scheme_string(s.scheme)).scheme == s.scheme);
    CHECK(parse_scheme(scheme_name(s.scheme)).scheme == s.scheme);
    CHECK(s.name == scheme_name(s.scheme));
  }
}

TEST_CASE("scheme strings: errors say what is wrong and what is expected", "[analysis][scheme]") {
  const std::pair<const char*, const char*> bad[] = {
      {"hifloat8", "a granularity must follow"},
      {"", "unknown format"},
      {"foo/tensor", "unknown format or alias 'foo'"},
      {"hifloat8/row", "unknown granularity 'row'"},
      {"hifloat8/mx", "needs an MX element format"},
      {"float8_e8m0fnu/tensor", "scale format"},
      {"hifloat8/tensor/zzz", "is not key=value"},
      {"hifloat8/tensor/colour=red", "unknown option 'colour'"},
      {"hifloat8/tensor/axis=0", "axis= applies to granularity mx only"},
      {"mxfp4/block=2x2", "mx tiles are 1x32, 32x1 or 32x32"},
      {"float8_e4m3fn/block/block=0x4", "at least 1"},
      {"float8_e4m3fn/block/block=12", "RxC"},
      {"float8_e4m3fn/block0", "at least 1"},
      {"mxfp8_e4m3/axis=2", "axis must be 0 or 1"},
      {"mxfp8_e4m3/scale-rule=max", "granularity mx takes scale rule"},
      {"hifloat8/tensor/scale-rule=floor", "MX (E8M0) rule"},
      {"hifloat8/tensor/scale-rule=max/target=3", "pow2 only"},
      {"hifloat8/tensor/target=3/n-guard=4", "given twice"},
      {"hifloat8/tensor/round=stochastic", "unknown round"},
      {"hifloat8/tensor/target=x", "must be an integer"},
      {"hifloat8/tensor/target=999", "[-126, 127]"},
  };
  for (const auto& [text, message] : bad) {
    INFO(text);
    std::string what;
    try {
      (void)parse_scheme(text);
    } catch (const std::invalid_argument& e) {
      what = e.what();
    }
    CHECK_THAT(what, Catch::Contains(message));
  }
}
