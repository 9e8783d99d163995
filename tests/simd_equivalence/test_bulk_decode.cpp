// Bulk decode (simd/bulk.hpp) on every ISA path: every code of every format bit for bit
// against float(T::from_bits(c)) (NaN payloads and -0 included), every length 0..257 at
// shifting misalignments with guard floats, FP4 packed decode, scaled decode.
#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <minifloat/simd/bulk.hpp>
#include "support/all_but_attention.hpp"

#include "simd_equivalence/simd_support.hpp"

using namespace minifloat;
namespace k = minifloat::simd;
using simd_test::bits;

namespace {

constexpr float kGuard = -12345.5f;

template <class T>
std::vector<k::code_t<T>> all_codes_repeated(std::size_t n) {
  constexpr std::uint32_t count = std::uint32_t{1} << T::spec::bits;
  std::vector<k::code_t<T>> c(n);
  std::mt19937 rng(3);
  for (std::size_t i = 0; i < n; ++i)
    c[i] = static_cast<k::code_t<T>>(i < count ? i : rng());  // stray high bits of FP4/FP6 bytes too
  return c;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("bulk decode of every code equals the scalar decode bit for bit", "[simd][decode]", all_formats) {
  using T = TestType;
  constexpr std::size_t count = std::size_t{1} << T::spec::bits;
  const auto codes = all_codes_repeated<T>(count + 300);
  for (const k::isa path : simd_test::paths()) {
    std::vector<float> out(codes.size());
    REQUIRE(k::decode<T>(std::span<const k::code_t<T>>(codes), std::span<float>(out), {.path = path}) ==
            k::kernel_status::ok);
    for (std::size_t i = 0; i < codes.size(); ++i) {
      const float want = static_cast<float>(T::from_bits(codes[i]));
      if (bits(out[i]) != bits(want))
        FAIL(format_name<T> << " code 0x" << std::hex << static_cast<unsigned>(codes[i]) << " on "
                            << simd_test::name(path) << ": expected bits 0x" << bits(want) << ", got 0x" << bits(out[i]));
    }
  }
}

TEMPLATE_LIST_TEST_CASE("bulk decode, every length and alignment, plain and scaled", "[simd][decode]", all_formats) {
  using T = TestType;
  const auto codes = all_codes_repeated<T>(300);
  const float scales[] = {1.0f, 0.375f, 1024.0f, 3.0e-39f};  // the last is a float32 subnormal
  for (const k::isa path : simd_test::paths())
    for (const std::size_t n : simd_test::lengths()) {
      const std::size_t in_off = n % 8, out_off = (n / 8) % 4;
      for (int variant = 0; variant < 5; ++variant) {
        std::vector<float> out(n + out_off + 8, kGuard);
        const std::span<const k::code_t<T>> in(codes.data() + in_off, n);
        const std::span<float> o(out.data() + out_off, n);
        const float s = variant == 0 ? 1.0f : scales[variant - 1];
        if (variant == 0) REQUIRE(k::decode<T>(in, o, {.path = path}) == k::kernel_status::ok);
        else REQUIRE(k::dequantize_scaled<T>(in, o, s, {.path = path}) == k::kernel_status::ok);
        for (std::size_t i = 0; i < out_off; ++i) REQUIRE(bits(out[i]) == bits(kGuard));
        for (std::size_t i = n + out_off; i < out.size(); ++i) REQUIRE(bits(out[i]) == bits(kGuard));
        for (std::size_t i = 0; i < n; ++i) {
          const float v = static_cast<float>(T::from_bits(codes[in_off + i]));
          const float want = variant == 0 ? v : v * s;
          // NaN * s: payload and sign as the multiply gives them, so only "is NaN" is compared
          if (want != want ? o[i] == o[i] : bits(o[i]) != bits(want))
            FAIL(format_name<T> << " n = " << n << " i = " << i << " scale " << s << " " << simd_test::name(path)
                                << ": expected " << want << ", got " << o[i]);
        }
      }
    }
}

TEST_CASE("bulk FP4 packed decode equals decoding the unpacked codes", "[simd][decode][fp4]") {
  std::mt19937 rng(11);
  std::vector<std::uint8_t> packed(160);
  for (auto& b : packed) b = static_cast<std::uint8_t>(rng());
  for (const k::isa path : simd_test::paths())
    for (const std::size_t n : simd_test::lengths()) {
      const std::size_t bytes = (n + 1) / 2, in_off = n % 8, out_off = (n / 8) % 4;
      if (in_off + bytes > packed.size()) continue;
      for (const bool scaled : {false, true}) {
        std::vector<float> out(n + out_off + 4, kGuard);
        const std::span<const std::uint8_t> in(packed.data() + in_off, bytes);
        const std::span<float> o(out.data() + out_off, n);
        if (scaled) REQUIRE(k::dequantize_scaled_fp4_packed(in, o, 0.75f, {.path = path}) == k::kernel_status::ok);
        else REQUIRE(k::decode_fp4_packed(in, o, {.path = path}) == k::kernel_status::ok);
        for (std::size_t i = 0; i < out_off; ++i) REQUIRE(bits(out[i]) == bits(kGuard));
        for (std::size_t i = n + out_off; i < out.size(); ++i) REQUIRE(bits(out[i]) == bits(kGuard));
        for (std::size_t i = 0; i < n; ++i) {
          const float v = static_cast<float>(float4_e2m1fn::from_bits(nibble_at(in, i)));
          if (bits(o[i]) != bits(scaled ? v * 0.75f : v))
            FAIL("n = " << n << " i = " << i << " " << simd_test::name(path));
        }
      }
    }
}
