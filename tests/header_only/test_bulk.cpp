// Header-only use of the bulk codecs (simd/bulk.hpp): every ISA path gives the scalar codec's bits.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <minifloat/formats/convert.hpp>
#include <minifloat/formats/format_list.hpp>
#include <minifloat/simd/bulk.hpp>

TEMPLATE_TEST_CASE("header-only bulk codecs: the dispatched paths equal the scalar codec", "[header_only]",
                   minifloat::hifloat8, minifloat::float8_e4m3fn, minifloat::float4_e2m1fn, minifloat::float8_e4m3fnuz) {
  using namespace minifloat;
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 500.0f) * 0.37f;
  std::vector<simd::code_t<TestType>> fast(x.size()), scalar(x.size());
  REQUIRE(simd::encode<TestType>(x, fast) == simd::kernel_status::ok);
  REQUIRE(simd::encode<TestType>(x, scalar, {}, {.path = simd::isa::scalar}) == simd::kernel_status::ok);
  CHECK(fast == scalar);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(fast[i] == narrow<TestType>(x[i]).bits());
  std::vector<float> back(x.size());
  REQUIRE(simd::decode<TestType>(std::span<const simd::code_t<TestType>>(fast), back) == simd::kernel_status::ok);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(back[i] == static_cast<float>(TestType::from_bits(fast[i])));
}
