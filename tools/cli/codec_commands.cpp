// minifloat formats | table | encode | decode: the scalar codecs on .npy files.
#include <minifloat/io/exact_decimal.hpp>
#include <minifloat/io/files.hpp>
#include <minifloat/io/npy.hpp>

#include <minifloat/formats/convert.hpp>
#include <minifloat/formats/format_list.hpp>
#include <minifloat/core/random.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "format_args.hpp"
#include "paths.hpp"

namespace minifloat::cli {
namespace {

template <class T>
std::string hex_code(typename T::storage_type c) {
  std::array<char, 16> buf{};
  std::snprintf(buf.data(), buf.size(), "0x%0*x", (T::spec::bits + 3) / 4, static_cast<unsigned>(c));
  return buf.data();
}

/// Input values of `encode` as doubles: every accepted dtype widens to double exactly, so the
/// single rounding happens in narrow().
std::vector<double> read_encode_input(const npy_array& in, encode_input kind, const std::string& path) {
  std::vector<double> v;
  v.reserve(in.size());
  if (kind == encode_input::bfloat16_bits) {
    if (in.dtype != npy_dtype::uint16)
      throw io_error(terminal_text(path) + ": --input bfloat16 expects uint16 ('<u2') bit patterns, got '" +
                     std::string(npy_descr(in.dtype)) + "'");
    for (auto b : in.as<std::uint16_t>()) v.push_back(static_cast<double>(bfloat16::from_bits(b)));
    return v;
  }
  switch (in.dtype) {
    case npy_dtype::float32:
      for (float x : in.as<float>()) v.push_back(x);
      return v;
    case npy_dtype::float64: {
      auto s = in.as<double>();
      v.assign(s.begin(), s.end());
      return v;
    }
    case npy_dtype::float16:
      for (auto b : in.as<std::uint16_t>()) v.push_back(static_cast<double>(float16::from_bits(b)));
      return v;
    default:
      throw io_error(terminal_text(path) + ": unsupported input dtype '" + std::string(npy_descr(in.dtype)) +
                     "'; expected float32, float64 or float16 (or uint16 with --input bfloat16)");
  }
}

}  // namespace

int cmd_formats(const argv_t& argv) {
  args a("minifloat formats", "List the format names, one per line.");
  a.parse(argv);
  a.expect_positional(0);
  for_each_format([](auto t) { std::cout << format_name<typename decltype(t)::type> << '\n'; });
  return 0;
}

table_request parse_table(const argv_t& argv) {
  args a("minifloat table FORMAT", "CSV of every code of FORMAT: code,hex,value,class (exact decimal values).");
  a.parse(argv);
  a.expect_positional(1);
  return {parse_format_name(a.positional()[0])};
}

int cmd_table(const argv_t& argv) {
  const table_request r = parse_table(argv);
  std::string out = "code,hex,value,class\n";
  visit_format(r.format, [&](auto t) {
    using T = typename decltype(t)::type;
    for (unsigned c = 0; c < (1U << T::spec::bits); ++c) {
      const auto x = T::from_bits(static_cast<typename T::storage_type>(c));
      // Every value of every format has a short exact decimal expansion: print all of it.
      out += std::to_string(c) + ',' + hex_code<T>(x.bits()) + ',' + exact_decimal(static_cast<double>(x)) + ',' +
             std::string(to_string(classify(x))) + '\n';
    }
  });
  std::cout << out << std::flush;
  if (!std::cout) throw io_error("<stdout>: write failed; expected the table to be written");
  return 0;
}

encode_request parse_encode(const argv_t& argv) {
  args a("minifloat encode FORMAT IN.npy OUT.npy [--round MODE] [--saturate | --overflow POLICY] [--seed N] "
         "[--input bfloat16]",
         "Round float32/float64/float16 values to codes of FORMAT. OUT: uint8 codes (low bits for 4/6-bit "
         "formats), uint16 for bfloat16/float16; same shape as IN.");
  add_round_option(a, "nearest (default: the format's own)");
  a.flag("saturate", "overflow and +-Inf give +-max instead of Inf/NaN");
  a.option("overflow", "non_saturating (default), saturate, saturate_nan_to_zero", "POLICY");
  a.option("seed", "random stream for --round stochastic (default 0)", "N")->check(integer_in<std::uint64_t>("--seed"));
  a.option("input", "auto (default) or bfloat16: IN holds uint16 bfloat16 bit patterns", "KIND");
  a.parse(argv);
  a.expect_positional(3);
  encode_request r;
  r.format = parse_format_name(a.positional()[0]);
  r.conv = conversion{parse_round_option(a), parse_overflow_option(a)};
  r.seed = parse_integer<std::uint64_t>(a.get_or("seed", "0"), "--seed");
  if (a.get("seed") && r.conv.round != rounding::stochastic)
    throw usage_error("--seed is only used with --round stochastic");
  const std::string input = a.get_or("input", "auto");
  if (input == "bfloat16") r.input = encode_input::bfloat16_bits;
  else if (input != "auto") throw usage_error("--input must be auto or bfloat16, got '" + input + "'");
  r.in = a.positional()[1];
  r.out = a.positional()[2];
  return r;
}

int run_encode(const encode_request& r) {
  check_distinct_paths({{"IN", r.in}}, {{"OUT", r.out}});
  const npy_array in = read_npy(r.in);
  const std::vector<double> x = read_encode_input(in, r.input, r.in);
  visit_format(r.format, [&](auto t) {
    using T = typename decltype(t)::type;
    std::vector<typename T::storage_type> codes(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      codes[i] = encode<T>(x[i], r.conv, r.conv.round == rounding::stochastic ? random_bits(r.seed, i) : 0U);
    write_npy(r.out, std::span<const std::size_t>(in.shape), codes);
  });
  return 0;
}

int cmd_encode(const argv_t& argv) { return run_encode(parse_encode(argv)); }

decode_request parse_decode(const argv_t& argv) {
  args a("minifloat decode FORMAT IN.npy OUT.npy",
         "Codes (uint8, or uint16 for 16-bit formats) of FORMAT -> float32 values, same shape.");
  a.parse(argv);
  a.expect_positional(3);
  return {parse_format_name(a.positional()[0]), a.positional()[1], a.positional()[2]};
}

int run_decode(const decode_request& r) {
  check_distinct_paths({{"IN", r.in}}, {{"OUT", r.out}});
  visit_format(r.format, [&](auto t) {
    using T = typename decltype(t)::type;
    using code_t = typename T::storage_type;
    const npy_array in = read_npy(r.in);
    constexpr auto want = sizeof(code_t) == 1 ? npy_dtype::uint8 : npy_dtype::uint16;
    if (in.dtype != want)
      throw io_error(terminal_text(r.in) + ": codes of " + std::string(format_name<T>) + " must be " +
                     std::string(npy_dtype_name(want)) + " ('" + std::string(npy_descr(want)) + "'), got '" +
                     std::string(npy_descr(in.dtype)) + "'");
    const auto codes = in.as<code_t>();
    std::vector<float> out(codes.size());
    constexpr unsigned limit = 1U << T::spec::bits;
    for (std::size_t i = 0; i < codes.size(); ++i) {
      if (codes[i] >= limit)
        throw io_error(terminal_text(r.in) + ": code " + std::to_string(codes[i]) + " at index " + std::to_string(i) +
                       " does not fit the " + std::to_string(T::spec::bits) + "-bit format " +
                       std::string(format_name<T>) + "; expected codes below " + std::to_string(limit));
      out[i] = static_cast<float>(T::from_bits(codes[i]));
    }
    write_npy(r.out, std::span<const std::size_t>(in.shape), out);
  });
  return 0;
}

int cmd_decode(const argv_t& argv) { return run_decode(parse_decode(argv)); }

}  // namespace minifloat::cli
