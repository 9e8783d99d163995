// Hand-checked vectors from the format definitions (docs/formats/hifloat8.md#hifloat8-hif8): each line is a
// fact someone could look up, so a failure names the rule that broke.
#include <catch2/catch.hpp>

#include <cmath>

#include <minifloat/minifloat.hpp>

using namespace minifloat;

namespace {
constexpr conversion sat{rounding::nearest, overflow::saturate};
constexpr conversion sat0{rounding::nearest, overflow::saturate_nan_to_zero};
constexpr conversion to_zero{rounding::toward_zero, overflow::non_saturating};
constexpr conversion even{rounding::nearest_even, overflow::non_saturating};
constexpr conversion up{rounding::upward, overflow::non_saturating};
constexpr conversion down{rounding::downward, overflow::non_saturating};
template <class T>
unsigned code(double x, conversion c = {}) { return narrow<T>(x, c).bits(); }
}  // namespace

TEST_CASE("hifloat8 layout and special codes (docs/formats/hifloat8.md#bit-layout)", "[hifloat8][spec]") {
  CHECK(float(hifloat8::from_bits(0x08)) == 1.0f);
  CHECK(float(hifloat8::from_bits(0x6E)) == 32768.0f);
  CHECK(float(hifloat8::from_bits(0x7E)) == std::ldexp(1.0f, -15));
  CHECK(float(hifloat8::from_bits(0x07)) == std::ldexp(1.0f, -16));
  CHECK(float(hifloat8::from_bits(0x01)) == std::ldexp(1.0f, -22));
  CHECK(float(hifloat8::from_bits(0x70)) == std::ldexp(1.0f, -8));
  CHECK(std::isinf(float(hifloat8::from_bits(0x6F))));
  CHECK(float(hifloat8::from_bits(0xEF)) == -INFINITY);
  CHECK(std::isnan(float(hifloat8::from_bits(0x80))));
  CHECK(float(hifloat8::from_bits(0x00)) == 0.0f);
  // 256 codes = 252 non-zero finite + zero + NaN + 2 Inf; 253 distinct finite values.
  int finite_nonzero = 0;
  for (unsigned c = 0; c < 256; ++c) {
    const float v = float(hifloat8::from_bits(static_cast<std::uint8_t>(c)));
    if (std::isfinite(v) && v != 0) ++finite_nonzero;
  }
  CHECK(finite_nonzero == 252);
  // Precision classes: 1.125 exists (3-bit mantissa at E=0), 16 * 1.25 exists (2-bit at E=4),
  // 256 * 1.5 exists (1-bit at E=8), 256 * 1.25 does not.
  CHECK(float(hifloat8(1.125f)) == 1.125f);
  CHECK(float(hifloat8(20.0f)) == 20.0f);
  CHECK(float(hifloat8(384.0f)) == 384.0f);
  CHECK(float(hifloat8(320.0f)) == 384.0f);  // tie 320 between 256 and 384: away
}

TEST_CASE("hifloat8 rounding and overflow (docs/formats/hifloat8.md#conversion-to-hif8)", "[hifloat8][spec]") {
  CHECK(code<hifloat8>(32768) == 0x6E);
  CHECK(code<hifloat8>(40959.99) == 0x6E);
  CHECK(code<hifloat8>(40960) == 0x6F);  // overflow starts at 1.25 * 2^15
  CHECK(code<hifloat8>(-40960) == 0xEF);
  CHECK(code<hifloat8>(45000, sat) == 0x6E);  // saturating: max, also in [40960, 49152)
  CHECK(code<hifloat8>(INFINITY, sat) == 0x6E);
  CHECK(code<hifloat8>(-INFINITY, sat) == 0xEE);
  CHECK(code<hifloat8>(INFINITY) == 0x6F);
  CHECK(code<hifloat8>(NAN) == 0x80);
  CHECK(code<hifloat8>(NAN, sat) == 0x80);
  CHECK(code<hifloat8>(NAN, sat0) == 0x00);  // the hardware's _sat mode
  CHECK(code<hifloat8>(1e9, to_zero) == 0x6E);  // truncation never makes Inf
  CHECK(code<hifloat8>(32769, up) == 0x6F);
  CHECK(code<hifloat8>(-32769, up) == 0xEE);
  CHECK(code<hifloat8>(-32769, down) == 0xEF);
  // Underflow: |x| < 2^-23 -> 0; the midpoint 2^-23 ties away to 2^-22.
  CHECK(code<hifloat8>(std::ldexp(1.0, -23)) == 0x01);
  CHECK(code<hifloat8>(std::ldexp(0.999, -23)) == 0x00);
  CHECK(code<hifloat8>(-std::ldexp(0.999, -23)) == 0x00);
  CHECK(code<hifloat8>(std::ldexp(1.0, -23), even) == 0x00);  // 4.5: tie to code LSB 0
  CHECK(code<hifloat8>(40960, even) == 0x6E);
  // DML grid: powers of two; TA picks 2^(e+1) iff |x| >= 1.5 * 2^e.
  CHECK(code<hifloat8>(std::ldexp(1.5, -20)) == 0x04);
  CHECK(code<hifloat8>(std::ldexp(1.49, -20)) == 0x03);
  // fp32 subnormals give 0 (CANN's CPU code returns Inf here: a bug we do not copy).
  CHECK(code<hifloat8>(1e-40f) == 0x00);
  CHECK(code<hifloat8>(-1e-45f) == 0x00);
  CHECK(code<hifloat8>(1e-40f, up) == 0x01);
}

TEST_CASE("float8_e4m3fn (docs/formats/ocp_fp8.md#limits)", "[float8][spec]") {
  CHECK(code<float8_e4m3fn>(448) == 0x7E);
  CHECK(code<float8_e4m3fn>(464) == 0x7E);
  CHECK(code<float8_e4m3fn>(464.01) == 0x7F);
  CHECK(code<float8_e4m3fn>(465, sat) == 0x7E);
  CHECK(code<float8_e4m3fn>(-465, sat) == 0xFE);
  CHECK(code<float8_e4m3fn>(INFINITY) == 0x7F);
  CHECK(code<float8_e4m3fn>(-INFINITY) == 0xFF);
  CHECK(code<float8_e4m3fn>(-INFINITY, sat) == 0xFE);
  CHECK(code<float8_e4m3fn>(470, to_zero) == 0x7E);
  CHECK(code<float8_e4m3fn>(480, to_zero) == 0x7E);  // IEEE: toward zero stops at max
  CHECK(code<float8_e4m3fn>(std::ldexp(1.0, -10)) == 0x00);
  CHECK(code<float8_e4m3fn>(-std::ldexp(1.0, -10)) == 0x80);  // signed zero kept
  CHECK(code<float8_e4m3fn>(3 * std::ldexp(1.0, -11)) == 0x01);  // 0.75 * 2^-9 -> 2^-9
  CHECK(float(float8_e4m3fn(0.0146484375f)) == 0.015625f);
  CHECK(float(float8_e4m3fn::from_bits(0x01)) == std::ldexp(1.0f, -9));
}

TEST_CASE("float8_e5m2 (docs/formats/ocp_fp8.md#limits)", "[float8][spec]") {
  CHECK(code<float8_e5m2>(57344) == 0x7B);
  CHECK(code<float8_e5m2>(61439) == 0x7B);
  CHECK(code<float8_e5m2>(61440) == 0x7C);  // tie to even goes up to Inf
  CHECK(code<float8_e5m2>(61440, sat) == 0x7B);
  CHECK(code<float8_e5m2>(-INFINITY) == 0xFC);
  CHECK(code<float8_e5m2>(INFINITY, sat) == 0x7B);
  CHECK(std::isnan(float(float8_e5m2::from_bits(0x7D))));
  CHECK(float(float8_e5m2::from_bits(0x01)) == std::ldexp(1.0f, -16));
}

TEST_CASE("MX sub-byte elements (docs/formats/mx.md#fp6-and-fp4-codes)", "[mx][spec]") {
  const float e2m1[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (unsigned c = 0; c < 8; ++c) {
    CHECK(float(float4_e2m1fn::from_bits(static_cast<std::uint8_t>(c))) == e2m1[c]);
    CHECK(float(float4_e2m1fn::from_bits(static_cast<std::uint8_t>(c | 8))) == -e2m1[c]);
  }
  CHECK(float(float4_e2m1fn(0.25f)) == 0.0f);
  CHECK(float(float4_e2m1fn(0.75f)) == 1.0f);
  CHECK(float(float4_e2m1fn(1.25f)) == 1.0f);
  CHECK(float(float4_e2m1fn(1.75f)) == 2.0f);
  CHECK(float(float4_e2m1fn(2.5f)) == 2.0f);
  CHECK(float(float4_e2m1fn(3.5f)) == 4.0f);
  CHECK(float(float4_e2m1fn(5.0f)) == 4.0f);
  CHECK(float(float4_e2m1fn(0.2500001f)) == 0.5f);
  CHECK(float(float4_e2m1fn(100.0f)) == 6.0f);  // always saturates
  CHECK(float(float4_e2m1fn(-INFINITY)) == -6.0f);
  CHECK(code<float4_e2m1fn>(NAN) == 0x0);
  CHECK(float(float6_e3m2fn(0.03125f)) == 0.0f);
  CHECK(float(float6_e3m2fn(0.09375f)) == 0.125f);
  CHECK(float(float6_e3m2fn(1000.0f)) == 28.0f);
  CHECK(float(float6_e2m3fn(0.0625f)) == 0.0f);
  CHECK(float(float6_e2m3fn(0.1875f)) == 0.25f);
  CHECK(float(float6_e2m3fn(8.0f)) == 7.5f);
}

TEST_CASE("float8_e8m0fnu scalar conversion (docs/formats/mx.md#e8m0-scale-format)", "[e8m0][spec]") {
  CHECK(code<float8_e8m0fnu>(1.0) == 127);
  CHECK(code<float8_e8m0fnu>(1.4999) == 127);
  CHECK(code<float8_e8m0fnu>(1.5) == 128);  // ties go up (the kept significand 1 is odd)
  CHECK(code<float8_e8m0fnu>(3.0) == 129);
  CHECK(code<float8_e8m0fnu>(0.75) == 127);
  CHECK(code<float8_e8m0fnu>(0.0) == 0xFF);
  CHECK(code<float8_e8m0fnu>(-1.0) == 0xFF);
  CHECK(code<float8_e8m0fnu>(0.0, sat) == 0x00);
  CHECK(code<float8_e8m0fnu>(-1.0, sat) == 0x00);
  CHECK(code<float8_e8m0fnu>(1e-39) == 0x00);
  CHECK(code<float8_e8m0fnu>(std::ldexp(1.5, 127)) == 0xFF);
  CHECK(code<float8_e8m0fnu>(std::ldexp(1.5, 127), sat) == 0xFE);
  CHECK(code<float8_e8m0fnu>(INFINITY) == 0xFF);
  CHECK(code<float8_e8m0fnu>(NAN) == 0xFF);
  // 0x00 is 2^-127, a float32 subnormal: decoders that build floats by shifting get 0.
  CHECK(float(float8_e8m0fnu::from_bits(0x00)) == std::ldexp(1.0f, -127));
  CHECK(float(float8_e8m0fnu::from_bits(0xFE)) == std::ldexp(1.0f, 127));
  CHECK(std::isnan(float(float8_e8m0fnu::from_bits(0xFF))));
}

TEST_CASE("double inputs are rounded once", "[convert][spec]") {
  // x lies just above the E4M3 midpoint between 1.0 and 1.125, but rounds to the midpoint in
  // float; through float it would tie to even (1.0), directly it must go up.
  const double x = 1.0625 + std::ldexp(1.0, -40);
  REQUIRE(static_cast<float>(x) == 1.0625f);
  CHECK(float(narrow<float8_e4m3fn>(x)) == 1.125f);
  CHECK(float(narrow<float8_e4m3fn>(static_cast<float>(x))) == 1.0f);
  // Same for HiF8 ties-away from just below a midpoint.
  const double y = 1.0625 - std::ldexp(1.0, -40);
  REQUIRE(static_cast<float>(y) == 1.0625f);
  CHECK(float(narrow<hifloat8>(y)) == 1.0f);
  CHECK(float(narrow<hifloat8>(static_cast<float>(y))) == 1.125f);
}

TEST_CASE("bfloat16 and float16 inputs and outputs share the codec", "[convert][ieee16]") {
  CHECK(narrow<bfloat16>(1.00390625f).bits() == 0x3F80);  // tie -> even
  CHECK(narrow<bfloat16>(1.01171875f).bits() == 0x3F82);
  CHECK(narrow<float16>(65520.0f).bits() == 0x7C00);      // IEEE overflow threshold
  CHECK(narrow<float16>(65519.99f).bits() == 0x7BFF);
  CHECK(narrow<float16>(std::ldexp(1.0f, -25)).bits() == 0x0000);
  CHECK(narrow<float16>(std::ldexp(1.5f, -25)).bits() == 0x0001);
  // minifloat -> minifloat
  CHECK(narrow<hifloat8>(bfloat16(3.0f)).bits() == narrow<hifloat8>(3.0f).bits());
  CHECK(isnan(narrow<float8_e4m3fn>(float16::from_bits(0x5FFF))));  // 511.75 > 464: overflow -> NaN
  CHECK(float(narrow<float8_e4m3fn>(float16::from_bits(0x5B40))) == 224.0f);
}
