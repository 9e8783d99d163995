// minifloat formats | table | encode | decode: the scalar codecs on .npy files.
#include <minifloat/io/npy.hpp>
#include <minifloat/all.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "format_args.hpp"

namespace minifloat::cli {
namespace {

/// Shortest decimal that reads back as the same float ("nan", "inf", "-inf" for specials).
std::string shortest(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::array<char, 64> buf{};
  auto [p, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), p);
}

template <class T>
std::string hex_code(typename T::storage_type c) {
  std::array<char, 16> buf{};
  std::snprintf(buf.data(), buf.size(), "0x%0*x", (T::spec::bits + 3) / 4, static_cast<unsigned>(c));
  return buf.data();
}

/// Input values of `encode` as doubles: every accepted dtype widens to double exactly, so the
/// single rounding happens in narrow().
std::vector<double> read_encode_input(const npy_array& in, const std::string& input_kind, const std::string& path) {
  std::vector<double> v;
  v.reserve(in.size());
  if (input_kind == "bfloat16") {
    if (in.dtype != npy_dtype::uint16)
      throw io_error(path + ": --input bfloat16 expects uint16 ('<u2') bit patterns, got '" +
                     std::string(npy_descr(in.dtype)) + "'");
    for (auto b : in.as<std::uint16_t>()) v.push_back(static_cast<double>(bfloat16::from_bits(b)));
    return v;
  }
  if (input_kind != "auto") throw usage_error("--input must be auto or bfloat16, got '" + input_kind + "'");
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
      throw io_error(path + ": unsupported input dtype '" + std::string(npy_descr(in.dtype)) +
                     "'; expected float32, float64 or float16 (or uint16 with --input bfloat16)");
  }
}

}  // namespace

int cmd_formats(const argv_t& argv) {
  args a(argv, {});
  a.expect_positional(0, "minifloat formats");
  for_each_format([](auto t) { std::cout << format_name<typename decltype(t)::type> << '\n'; });
  return 0;
}

int cmd_table(const argv_t& argv) {
  args a(argv, {});
  a.expect_positional(1, "minifloat table FORMAT");
  with_format(a.positional()[0], [](auto t) {
    using T = typename decltype(t)::type;
    std::cout << "code,hex,value,class\n";
    for (unsigned c = 0; c < (1U << T::spec::bits); ++c) {
      const auto x = T::from_bits(static_cast<typename T::storage_type>(c));
      std::cout << c << ',' << hex_code<T>(x.bits()) << ',' << shortest(static_cast<float>(x)) << ','
                << to_string(classify(x)) << '\n';
    }
  });
  return 0;
}

int cmd_encode(const argv_t& argv) {
  args a(argv, {"round", "seed", "input", "overflow"}, {"saturate"});
  constexpr auto usage =
      "minifloat encode FORMAT IN.npy OUT.npy [--round MODE] [--saturate | --overflow POLICY] [--seed N] "
      "[--input bfloat16]";
  a.expect_positional(3, usage);
  const conversion conv{parse_round_option(a), parse_overflow_option(a)};
  const std::uint64_t seed = parse_integer<std::uint64_t>(a.get_or("seed", "0"), "--seed");
  if (a.get("seed") && conv.round != rounding::stochastic)
    throw usage_error("--seed is only used with --round stochastic");
  const auto& in_path = a.positional()[1];
  const auto& out_path = a.positional()[2];
  with_format(a.positional()[0], [&](auto t) {
    using T = typename decltype(t)::type;
    const npy_array in = read_npy(in_path);
    const std::vector<double> x = read_encode_input(in, a.get_or("input", "auto"), in_path);
    std::vector<typename T::storage_type> codes(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      codes[i] = encode<T>(x[i], conv, conv.round == rounding::stochastic ? random_bits(seed, i) : 0U);
    write_npy(out_path, std::span<const std::size_t>(in.shape), codes);
  });
  return 0;
}

int cmd_decode(const argv_t& argv) {
  args a(argv, {});
  a.expect_positional(3, "minifloat decode FORMAT IN.npy OUT.npy");
  const auto& in_path = a.positional()[1];
  const auto& out_path = a.positional()[2];
  with_format(a.positional()[0], [&](auto t) {
    using T = typename decltype(t)::type;
    using code_t = typename T::storage_type;
    const npy_array in = read_npy(in_path);
    constexpr auto want = sizeof(code_t) == 1 ? npy_dtype::uint8 : npy_dtype::uint16;
    if (in.dtype != want)
      throw io_error(in_path + ": codes of " + std::string(format_name<T>) + " must be " +
                     std::string(npy_dtype_name(want)) + " ('" + std::string(npy_descr(want)) + "'), got '" +
                     std::string(npy_descr(in.dtype)) + "'");
    const auto codes = in.as<code_t>();
    std::vector<float> out(codes.size());
    constexpr unsigned limit = 1U << T::spec::bits;
    for (std::size_t i = 0; i < codes.size(); ++i) {
      if (codes[i] >= limit)
        throw io_error(in_path + ": code " + std::to_string(codes[i]) + " at index " + std::to_string(i) +
                       " does not fit the " + std::to_string(T::spec::bits) + "-bit format " +
                       std::string(format_name<T>) + "; expected codes below " + std::to_string(limit));
      out[i] = static_cast<float>(T::from_bits(codes[i]));
    }
    write_npy(out_path, std::span<const std::size_t>(in.shape), out);
  });
  return 0;
}

}  // namespace minifloat::cli
