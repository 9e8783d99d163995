// Bulk encode (simd/bulk.hpp) on every ISA path against the scalar reference codec, bit for
// bit: every format, every rounding mode and overflow policy, inputs float32 / bfloat16 /
// float16; every length 0..257 at shifting misalignments with guard bytes around the output;
// random and exhaustive (all bf16/fp16 patterns) inputs; FP4 nibble packing.
// The expected codes are computed here with minifloat::encode<T>(x, c, random_bits(seed, i)),
// independently of the kernels' own scalar twins.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <minifloat/simd/bulk.hpp>
#include "support/all_but_attention.hpp"

#include "simd_equivalence/simd_support.hpp"

using namespace minifloat;
namespace k = minifloat::simd;
using simd_test::kFull;

namespace {

constexpr std::uint64_t kSeed = 0x5EED5EED12345678ULL;

template <class T, class In>
std::vector<k::code_t<T>> expected_codes(const std::vector<In>& x, conversion c, std::uint64_t first_index) {
  std::vector<k::code_t<T>> e(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    e[i] = encode<T>(static_cast<float>(x[i]), c,
                     c.round == rounding::stochastic ? random_bits(kSeed, first_index + i) : 0U);
  return e;
}

template <class T>
std::string mismatch(std::size_t i, float x, unsigned want, unsigned got) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s element %zu: x = %a (0x%08x): expected 0x%x, got 0x%x",
                std::string(format_name<T>).c_str(), i, static_cast<double>(x), simd_test::bits(x), want, got);
  return buf;
}

/// Runs encode<T> on slices of `x` of every length at shifting offsets; compares with `e` and
/// checks that nothing outside the output slice is written.
template <class T, class In>
void check_lengths(const std::vector<In>& x, const std::vector<k::code_t<T>>& e, conversion c, k::isa path) {
  using code = k::code_t<T>;
  const auto lens = path == k::isa::scalar && !kFull ? std::vector<std::size_t>{0, 1, 31, 33, 257} : simd_test::lengths();
  constexpr code guard = static_cast<code>(0xA5A5);
  for (const std::size_t n : lens) {
    const std::size_t in_off = n % 8, out_off = (n / 8) % 4;
    std::vector<code> out(n + out_off + 8, guard);
    const k::bulk_options o{.path = path, .seed = kSeed, .first_index = in_off};
    REQUIRE(k::encode<T>(std::span<const In>(x.data() + in_off, n), std::span<code>(out.data() + out_off, n), c, o) ==
            k::kernel_status::ok);
    for (std::size_t i = 0; i < out.size(); ++i)
      if ((i < out_off || i >= n + out_off) && out[i] != guard) FAIL("guard element " << i << " overwritten, n = " << n);
    for (std::size_t i = 0; i < n; ++i)
      if (out[out_off + i] != e[in_off + i])
        FAIL(mismatch<T>(in_off + i, static_cast<float>(x[in_off + i]), e[in_off + i], out[out_off + i])
             << " (n = " << n << ", " << simd_test::describe(c) << ", " << simd_test::name(path) << ")");
  }
}

template <class T, class In>
void check_inputs(const std::vector<In>& x, conversion c, k::isa path, const std::vector<k::code_t<T>>& e) {
  std::vector<k::code_t<T>> out(x.size());
  const k::bulk_options o{.path = path, .seed = kSeed, .first_index = 0};
  REQUIRE(k::encode<T>(std::span<const In>(x), std::span<k::code_t<T>>(out), c, o) == k::kernel_status::ok);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (out[i] != e[i] && ++bad <= 8)
      FAIL_CHECK(mismatch<T>(i, static_cast<float>(x[i]), e[i], out[i])
                 << " (" << simd_test::describe(c) << ", " << simd_test::name(path) << ")");
  REQUIRE(bad == 0);
}

std::vector<conversion> conversions_to_test() {
  if (kFull) return simd_test::all_conversions();
  return {conversion{}, saturating, {rounding::toward_zero, overflow::non_saturating},
          {rounding::upward, overflow::saturate_nan_to_zero}, {rounding::stochastic, overflow::non_saturating}};
}

template <class T, class In>
void encode_suite() {
  simd_test::input_source src(1234);
  const auto xf = src.floats(kFull ? 100000 : 3000);
  const auto x = simd_test::convert_inputs<In>(xf);
  const std::vector<In> head(x.begin(), x.begin() + 300);
  for (const conversion c : conversions_to_test()) {
    const auto e = expected_codes<T>(x, c, 0);
    const std::vector<k::code_t<T>> e_head(e.begin(), e.begin() + 300);
    for (const k::isa path : simd_test::paths()) {
      check_lengths<T>(head, e_head, c, path);
      check_inputs<T>(x, c, path, e);
    }
  }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("bulk encode from float32 equals the scalar codec", "[simd][encode]", all_formats) {
  encode_suite<TestType, float>();
}
TEMPLATE_LIST_TEST_CASE("bulk encode from bfloat16 equals the scalar codec", "[simd][encode]", all_formats) {
  encode_suite<TestType, bfloat16>();
}
TEMPLATE_LIST_TEST_CASE("bulk encode from float16 equals the scalar codec", "[simd][encode]", all_formats) {
  encode_suite<TestType, float16>();
}

TEMPLATE_LIST_TEST_CASE("bulk encode of every bfloat16 and float16 input", "[simd][encode]", all_formats) {
  using T = TestType;
  std::vector<bfloat16> xb(65536);
  std::vector<float16> xh(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) {
    xb[i] = bfloat16::from_bits(static_cast<std::uint16_t>(i));
    xh[i] = float16::from_bits(static_cast<std::uint16_t>(i));
  }
  const auto convs = kFull ? simd_test::all_conversions() : std::vector<conversion>{conversion{}, saturating};
  for (const conversion c : convs) {
    const auto eb = expected_codes<T>(xb, c, 0);
    const auto eh = expected_codes<T>(xh, c, 0);
    for (const k::isa path : simd_test::paths()) {
      if (path == k::isa::scalar && !kFull) continue;
      check_inputs<T>(xb, c, path, eb);
      check_inputs<T>(xh, c, path, eh);
    }
  }
}

TEST_CASE("bulk FP4 packed encode equals packing the scalar codes", "[simd][encode][fp4]") {
  simd_test::input_source src(99);
  const auto x = src.floats(400);
  for (const conversion c : conversions_to_test()) {
    const auto e = expected_codes<float4_e2m1fn>(x, c, 0);
    for (const k::isa path : simd_test::paths()) {
      for (const std::size_t n : simd_test::lengths()) {
        const std::size_t in_off = n % 8, out_off = (n / 8) % 4, bytes = (n + 1) / 2;
        std::vector<std::uint8_t> out(bytes + out_off + 4, 0xA5);
        const k::bulk_options o{.path = path, .seed = kSeed, .first_index = in_off};
        REQUIRE(k::encode_fp4_packed(std::span<const float>(x.data() + in_off, n),
                                     std::span<std::uint8_t>(out.data() + out_off, bytes), c, o) == k::kernel_status::ok);
        for (std::size_t i = 0; i < out.size(); ++i)
          if ((i < out_off || i >= bytes + out_off) && out[i] != 0xA5) FAIL("guard byte " << i << " overwritten, n = " << n);
        for (std::size_t i = 0; i < bytes; ++i) {
          const unsigned lo = e[in_off + 2 * i];
          const unsigned hi = 2 * i + 1 < n ? e[in_off + 2 * i + 1] : 0U;
          if (out[out_off + i] != (lo | (hi << 4)))
            FAIL("n = " << n << " byte " << i << " " << simd_test::describe(c) << " " << simd_test::name(path));
        }
      }
    }
  }
}

TEST_CASE("bulk nibble pack and unpack equal the scalar helpers", "[simd][fp4]") {
  std::mt19937 rng(5);
  std::vector<std::uint8_t> codes(300);
  for (auto& c : codes) c = static_cast<std::uint8_t>(rng());
  for (const k::isa path : simd_test::paths())
    for (const std::size_t n : simd_test::lengths()) {
      const std::size_t off = n % 8, bytes = (n + 1) / 2;
      std::vector<std::uint8_t> packed(bytes + 2, 0xA5), want(bytes);
      pack_nibbles(std::span<const std::uint8_t>(codes.data() + off, n), want);
      REQUIRE(k::pack_nibbles(std::span<const std::uint8_t>(codes.data() + off, n),
                              std::span<std::uint8_t>(packed.data() + 1, bytes), {.path = path}) == k::kernel_status::ok);
      REQUIRE(packed[0] == 0xA5);
      REQUIRE(packed[bytes + 1] == 0xA5);
      REQUIRE(std::equal(want.begin(), want.end(), packed.begin() + 1));
      std::vector<std::uint8_t> back(n + 2, 0xA5), want_back(n);
      unpack_nibbles(want, want_back);
      REQUIRE(k::unpack_nibbles(std::span<const std::uint8_t>(packed.data() + 1, bytes),
                                std::span<std::uint8_t>(back.data() + 1, n), {.path = path}) == k::kernel_status::ok);
      REQUIRE(back[0] == 0xA5);
      REQUIRE(back[n + 1] == 0xA5);
      REQUIRE(std::equal(want_back.begin(), want_back.end(), back.begin() + 1));
    }
}

TEST_CASE("bulk kernels report bad arguments instead of touching memory", "[simd][errors]") {
  std::vector<float> x(10, 1.0f);
  std::vector<std::uint8_t> out(10, 0xA5), short_out(9, 0xA5);
  for (const k::isa path : simd_test::paths()) {
    const k::bulk_options o{.path = path};
    CHECK(k::encode<float8_e4m3fn>(std::span<const float>(x), std::span<std::uint8_t>(short_out), {}, o) ==
          k::kernel_status::size_mismatch);
    CHECK(k::encode<float8_e4m3fn>(std::span<const float>(static_cast<const float*>(nullptr), 3),
                                   std::span<std::uint8_t>(out.data(), 3), {}, o) == k::kernel_status::null_pointer);
    CHECK(k::encode<float8_e4m3fn>(std::span<const float>(static_cast<const float*>(nullptr), 0),
                                   std::span<std::uint8_t>(static_cast<std::uint8_t*>(nullptr), 0), {}, o) ==
          k::kernel_status::ok);
    CHECK(k::encode_fp4_packed(std::span<const float>(x), std::span<std::uint8_t>(out.data(), 6), {}, o) ==
          k::kernel_status::size_mismatch);
    std::vector<float> y(9);
    CHECK(k::decode<float8_e4m3fn>(std::span<const std::uint8_t>(out), std::span<float>(y), o) ==
          k::kernel_status::size_mismatch);
    float amax = -1.0f;
    CHECK(k::quantize_scaled<float8_e4m3fn>(std::span<const float>(x), std::span<std::uint8_t>(short_out), 2.0f, amax,
                                            saturating, o) == k::kernel_status::size_mismatch);
    CHECK(amax == -1.0f);
  }
  for (const auto b : short_out) CHECK(b == 0xA5);
  CHECK_THROWS_AS(k::check(k::kernel_status::size_mismatch, "test"), shape_error);
  CHECK_THROWS_AS(k::check(k::kernel_status::unsupported_isa, "test"), unsupported_error);
  CHECK_NOTHROW(k::check(k::kernel_status::ok, "test"));
  for (const k::isa level : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (k::isa_available(level)) continue;
    std::vector<std::uint8_t> o2(10, 0xA5);
    CHECK(k::encode<float8_e4m3fn>(std::span<const float>(x), std::span<std::uint8_t>(o2), {}, {.path = level}) ==
          k::kernel_status::unsupported_isa);
    CHECK(o2 == std::vector<std::uint8_t>(10, 0xA5));
  }
  CHECK(k::isa_available(k::isa::scalar));
  CHECK(k::detected_isa() != k::isa::automatic);
}

TEMPLATE_LIST_TEST_CASE("bulk stochastic encode with several seeds and start indices", "[simd][encode][stochastic]",
                        all_formats) {
  using T = TestType;
  simd_test::input_source src(77);
  const auto x = src.floats(300);
  const std::uint64_t seeds[] = {0, 1, 0xDEADBEEFCAFEF00DULL, ~std::uint64_t{0}};
  const std::uint64_t starts[] = {0, 1, 63, (std::uint64_t{1} << 40) + 5, ~std::uint64_t{0} - 100};
  for (const overflow o : simd_test::kOverflows)
    for (const std::uint64_t seed : seeds)
      for (const std::uint64_t first : starts) {
        const conversion c{rounding::stochastic, o};
        std::vector<k::code_t<T>> want(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) want[i] = encode<T>(x[i], c, random_bits(seed, first + i));
        for (const k::isa path : simd_test::paths()) {
          for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{17}, std::size_t{64}, std::size_t{65},
                                      std::size_t{200}, std::size_t{300}}) {
            std::vector<k::code_t<T>> out(n);
            REQUIRE(k::encode<T>(std::span<const float>(x.data(), n), std::span<k::code_t<T>>(out), c,
                                 {.path = path, .seed = seed, .first_index = first}) == k::kernel_status::ok);
            for (std::size_t i = 0; i < n; ++i)
              if (out[i] != want[i])
                FAIL(format_name<T> << " seed " << seed << " first " << first << " n = " << n << " i = " << i << " on "
                                    << simd_test::name(path) << ": expected " << static_cast<unsigned>(want[i]) << ", got "
                                    << static_cast<unsigned>(out[i]));
          }
        }
      }
}
