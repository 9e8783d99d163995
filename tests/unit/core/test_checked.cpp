// core/checked.hpp: sizes that do not fit throw shape_error naming the computation.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include <minifloat/core/checked.hpp>

using namespace minifloat;

TEST_CASE("checked size arithmetic: exact results, overflow is a shape_error", "[core][checked]") {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  CHECK(checked_mul(3, 5, "t") == 15);
  CHECK(checked_mul(0, max, "t") == 0);
  CHECK(checked_add(max - 1, 1, "t") == max);
  CHECK_THROWS_AS(checked_mul((std::size_t{1} << 63) + 2, 2, "quantize: rows x cols"), shape_error);
  CHECK_THROWS_WITH(checked_mul((std::size_t{1} << 63) + 2, 2, "quantize: rows x cols"),
                    Catch::Contains("quantize: rows x cols") && Catch::Contains("9223372036854775810 x 2"));
  CHECK_THROWS_AS(checked_add(max, 5, "grouped_gemm: group sizes"), shape_error);
  CHECK(!checked_mul_or(std::size_t{1} << 32, std::size_t{1} << 32));
  CHECK(checked_add_or(2, 3) == std::size_t{5});
  CHECK(checked_product({2, 3, 4}, "t") == 24);
  CHECK(checked_product({std::size_t{1} << 40, 0, std::size_t{1} << 40}, "t") == 0);  // empty wins
  CHECK_THROWS_AS(checked_product({std::size_t{1} << 40, std::size_t{1} << 40}, "attention: Q"), shape_error);
}
