// simd::mx_quantize / mx_dequantize (simd/mx.hpp) on every ISA path against the scalar reference
// path, and that reference against the independent MX reference of tests/unit/quant/
// mx_reference.hpp: identical code and scale bytes, identical values, for every MX element
// format, every tile (1x32, 32x1, 32x32), every scale rule, float32 / bf16 / fp16 inputs, ragged
// shapes (short last blocks, odd FP4 rows, partial vector steps and band chunks) and blocks
// holding NaN, Inf, zeros, float32 subnormals and values near FLT_MAX; the scale rules at every
// exponent and rule boundary (the finite guard included) on every tile.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include <minifloat/quant/mx_tensor.hpp>
#include <minifloat/simd/mx.hpp>
#include "support/all_but_attention.hpp"

#include "simd_equivalence/simd_support.hpp"
#include "unit/quant/mx_reference.hpp"

using namespace minifloat;
namespace k = minifloat::simd;
using simd_test::bits;
using simd_test::kFull;

namespace {

using mx_elements = std::tuple<float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn>;

/// Blocks of very different scales: each 8-element run shares a random binade, with specials
/// sprinkled in (so some blocks get NaN scales, some are all zero, some subnormal).
std::vector<float> mx_data(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  float base = 1.0f;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) base = std::ldexp(1.0f, static_cast<int>(rng() % 290) - 160);  // 2^-160 (0) .. 2^129 (Inf)
    const auto r = static_cast<std::uint32_t>(rng() % 200);
    float x = base * std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
    if (r == 0) x = std::nanf("");
    if (r == 1) x = (rng() & 1) ? INFINITY : -INFINITY;
    if (r == 2) x = 0.0f;
    if (r == 3) x = std::numeric_limits<float>::max() * ((rng() & 1) ? 1.0f : -1.0f);
    if (r == 4) x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x807FFFFFU);  // subnormal
    v[i] = x;
  }
  return v;
}

template <class A, class B>
bool same_bytes(const A& a, const B& b) {
  return a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

struct mx_buffers {
  std::vector<std::uint8_t> codes, scales;
};

template <class Elem>
mx_buffers mx_alloc(std::size_t rows, std::size_t cols, mx_tile tile, std::uint8_t fill = 0) {
  return {std::vector<std::uint8_t>(*k::mx_code_count<Elem>(rows, cols), fill),
          std::vector<std::uint8_t>(*k::mx_scale_count(rows, cols, tile), fill)};
}

template <class Elem, class In>
mx_buffers mx_run(const std::vector<In>& x, std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule, k::isa path,
                  std::uint8_t fill = 0) {
  mx_buffers b = mx_alloc<Elem>(rows, cols, tile, fill);
  REQUIRE(k::mx_quantize<Elem>(std::span<const In>(x), rows, cols, tile, rule, b.codes, b.scales, {.path = path}) ==
          k::kernel_status::ok);
  return b;
}

template <class Elem>
std::vector<float> mx_values(const mx_buffers& b, std::size_t rows, std::size_t cols, mx_tile tile, k::isa path) {
  std::vector<float> out(rows * cols, -1.0f);
  REQUIRE(k::mx_dequantize<Elem>(b.codes, b.scales, rows, cols, tile, std::span<float>(out), {.path = path}) ==
          k::kernel_status::ok);
  return out;
}

void check_same_values(const std::vector<float>& want, const std::vector<float>& got) {
  REQUIRE(want.size() == got.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (want[i] != want[i] ? got[i] == got[i] : bits(got[i]) != bits(want[i]))
      FAIL("value " << i << ": expected " << want[i] << ", got " << got[i]);
}

template <class Elem, class In>
void check_mx(std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule, std::uint32_t seed) {
  const auto xf = mx_data(rows * cols, seed);
  const auto x = simd_test::convert_inputs<In>(xf);
  INFO(format_name<Elem> << " " << rows << "x" << cols << " tile " << to_string(tile) << " " << to_string(rule));
  const mx_buffers want = mx_run<Elem>(x, rows, cols, tile, rule, k::isa::scalar);
  if constexpr (std::is_same_v<In, float>) {
    const mx_ref::tensor_result ref =
        tile == mx_tile::square32 ? mx_ref::quantize_tensor_2d<Elem>(xf, rows, cols, rule)
                                  : mx_ref::quantize_tensor<Elem>(xf, rows, cols, tile == mx_tile::row32 ? 1 : 0, rule);
    REQUIRE(same_bytes(std::span<const std::uint8_t>(want.codes), std::span<const std::uint8_t>(ref.codes)));
    REQUIRE(same_bytes(std::span<const std::uint8_t>(want.scales), std::span<const std::uint8_t>(ref.scales)));
  }
  const auto want_values = mx_values<Elem>(want, rows, cols, tile, k::isa::scalar);
  for (const k::isa path : simd_test::paths()) {
    INFO("on " << simd_test::name(path));
    // Dirty the buffers first: the kernel must write every byte.
    const mx_buffers got = mx_run<Elem>(x, rows, cols, tile, rule, path, 0xA5);
    REQUIRE(got.codes == want.codes);
    REQUIRE(got.scales == want.scales);
    check_same_values(want_values, mx_values<Elem>(want, rows, cols, tile, path));
  }
}

constexpr mx_tile kTiles[] = {mx_tile::row32, mx_tile::col32, mx_tile::square32};
constexpr scale_rule kRules[] = {scale_rule::floor, scale_rule::rceil, scale_rule::ceil, scale_rule::even};

// Ragged tiles on every edge, and shapes that reach the wide steps: 1 x 32 spans of 16 blocks
// (512 elements, whole rows of blocks run as one span: {17, 32}, {33, 64}, {2, 544}), 256-column
// band chunks for 32 x 1 and 32 x 32 ({64, 256}, {33, 520}).
const std::pair<std::size_t, std::size_t> kShapes[] = {{0, 0},   {0, 7},   {5, 0},   {1, 1},    {1, 31},
                                                       {2, 33},  {3, 64},  {33, 5},  {31, 65},  {40, 300},
                                                       {65, 17}, {17, 32}, {33, 64}, {2, 544}, {64, 256},
                                                       {33, 520}};

}  // namespace

TEMPLATE_LIST_TEST_CASE("simd::mx_quantize equals the reference path on every tile", "[simd][mx]", mx_elements) {
  using Elem = TestType;
  std::uint32_t seed = 1;
  for (const mx_tile tile : kTiles)
    for (const scale_rule rule : kRules)
      for (const auto& [rows, cols] : kShapes) {
        check_mx<Elem, float>(rows, cols, tile, rule, ++seed);
        if (kFull || rows * cols < 200) {
          check_mx<Elem, bfloat16>(rows, cols, tile, rule, ++seed);
          check_mx<Elem, float16>(rows, cols, tile, rule, ++seed);
        }
      }
}

TEMPLATE_LIST_TEST_CASE("simd::mx_dequantize decodes arbitrary code and scale bytes like the reference path",
                        "[simd][mx]", mx_elements) {
  using Elem = TestType;
  std::mt19937 rng(17);
  for (const mx_tile tile : kTiles)
    for (const auto& [rows, cols] : kShapes) {
      mx_buffers t = mx_alloc<Elem>(rows, cols, tile);
      for (auto& b : t.codes) b = static_cast<std::uint8_t>(rng());
      for (auto& b : t.scales) b = static_cast<std::uint8_t>(rng() % 4 == 0 ? 0xFF : rng() % 3 == 0 ? 0 : rng());
      const auto want = mx_values<Elem>(t, rows, cols, tile, k::isa::scalar);
      for (const k::isa path : simd_test::paths()) {
        INFO(format_name<Elem> << " " << rows << "x" << cols << " tile " << to_string(tile) << " on " << simd_test::name(path));
        check_same_values(want, mx_values<Elem>(t, rows, cols, tile, path));
      }
    }
}

TEST_CASE("simd::mx_quantize checks sizes, rules and overflowing shapes", "[simd][mx][errors]") {
  mx_buffers t = mx_alloc<float8_e4m3fn>(2, 40, mx_tile::row32);
  std::vector<float> x(79);
  CHECK(k::mx_quantize<float8_e4m3fn>(std::span<const float>(x), 2, 40, mx_tile::row32, scale_rule::floor, t.codes,
                                      t.scales) == k::kernel_status::size_mismatch);
  x.resize(80);
  CHECK(k::mx_quantize<float8_e4m3fn>(std::span<const float>(x), 2, 40, mx_tile::row32, scale_rule::pow2, t.codes,
                                      t.scales) == k::kernel_status::bad_argument);
  CHECK(k::mx_quantize<float8_e4m3fn>(std::span<const float>(x), 2, 40, mx_tile::square32, scale_rule::floor, t.codes,
                                      t.scales) == k::kernel_status::size_mismatch);  // 1 scale, not 4
  std::vector<float> out(81);
  CHECK(k::mx_dequantize<float8_e4m3fn>(t.codes, t.scales, 2, 40, mx_tile::row32, std::span<float>(out)) ==
        k::kernel_status::size_mismatch);
  const std::size_t huge = (std::size_t{1} << 63) + 2;  // rows * cols wraps to 4
  std::vector<float> four(4);
  std::vector<std::uint8_t> c4(4), s4(4);
  CHECK(k::mx_quantize<float8_e4m3fn>(std::span<const float>(four), huge, 2, mx_tile::row32, scale_rule::floor, c4, s4) ==
        k::kernel_status::size_mismatch);
  CHECK(!k::mx_scale_count(std::size_t{1} << 40, std::size_t{1} << 40, mx_tile::col32));
}

namespace {

/// amax bit patterns at every biased exponent 0..255 (or, when !all, the ends and the middle of
/// the range) with the fractions where the rules switch (ceil: 0 / 1; even: the half-ulp carry;
/// rceil: the element max's significand), padded with zeros to a multiple of `multiple`. At
/// exponent 254 the half-ulp fractions are the blocks of the finite guard (formats/mx_scale.hpp
/// step 3: amax within half an element ulp of 2^128).
template <class Elem>
std::vector<std::uint32_t> boundary_patterns(bool all, std::size_t multiple) {
  constexpr std::uint32_t mbits = Elem::spec::mantissa_bits;
  const std::uint32_t fmax = minifloat::detail::mx_max_significand<Elem> - 0x800000U;
  const std::uint32_t half = 0x800000U - (1U << (22 - mbits));
  const std::vector<std::uint32_t> fracs = {0U, 1U, 0x400000U, 0x7FFFFFU, fmax - 1, fmax, fmax + 1, half - 1, half, half + 1};
  std::vector<std::uint32_t> patterns;
  for (std::uint32_t eb = 0; eb < 256; ++eb)
    if (all || eb < 4 || (eb >= 120 && eb < 136) || eb >= 250)
      for (const std::uint32_t f : fracs) patterns.push_back((eb << 23) | (f & 0x7FFFFFU));
  while (patterns.size() % multiple != 0) patterns.push_back(0);
  return patterns;
}

/// A matrix of grid_rows x grid_cols tiles whose tile t (row-major over the grid) has amax bits
/// patterns[t]: that element at a varying position with a random sign, the others below it.
std::vector<float> boundary_matrix(const std::vector<std::uint32_t>& patterns, mx_tile tile, std::size_t grid_cols,
                                   std::size_t& rows, std::size_t& cols) {
  const std::size_t tr = mx_tile_rows(tile), tc = mx_tile_cols(tile), per_tile = tr * tc;
  rows = patterns.size() / grid_cols * tr;
  cols = grid_cols * tc;
  std::vector<float> x(rows * cols);
  std::mt19937 rng(9);
  for (std::size_t t = 0; t < patterns.size(); ++t) {
    const float amax = std::bit_cast<float>(patterns[t]);
    const std::size_t r0 = t / grid_cols * tr, c0 = t % grid_cols * tc, at = (t * 7) % per_tile;
    for (std::size_t i = 0; i < per_tile; ++i) {
      const float small = std::isfinite(amax) ? amax * std::uniform_real_distribution<float>(0.0f, 1.0f)(rng) : 1.0f;
      x[(r0 + i / tc) * cols + c0 + i % tc] = i == at ? ((rng() & 1) ? -amax : amax) : small;
    }
  }
  return x;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("simd::mx_quantize scales match the reference at every exponent and rule boundary",
                        "[simd][mx]", mx_elements) {
  // One tile per amax pattern, on every tile shape: 1 x 32 in rows of 8 blocks (one vector step
  // of the AVX2 path, half of the AVX-512 one, and the whole tensor is one span of blocks);
  // 32 x 1 on 272 columns (a full 256-column band chunk and a short one); 32 x 32 on 9 tile
  // columns (8 in the full chunk, 1 in the short one).
  using Elem = TestType;
  for (const mx_tile tile : kTiles) {
    const std::size_t grid_cols = tile == mx_tile::row32 ? 8 : tile == mx_tile::col32 ? 272 : 9;
    const auto patterns = boundary_patterns<Elem>(kFull || tile != mx_tile::square32, grid_cols);
    std::size_t rows = 0, cols = 0;
    const std::vector<float> x = boundary_matrix(patterns, tile, grid_cols, rows, cols);
    for (const scale_rule rule : kRules) {
      const mx_buffers want = mx_run<Elem>(x, rows, cols, tile, rule, k::isa::scalar);
      if (tile == mx_tile::row32) {
        for (std::size_t b = 0; b < patterns.size(); ++b) {  // the reference path against mx_ref
          const std::vector<float> block(x.begin() + static_cast<std::ptrdiff_t>(32 * b),
                                         x.begin() + static_cast<std::ptrdiff_t>(32 * b + 32));
          if (want.scales[b] != mx_ref::quantize_block<Elem>(block, rule).scale)
            FAIL("amax bits 0x" << std::hex << patterns[b] << ": reference path scale 0x" << unsigned{want.scales[b]});
        }
      }
      REQUIRE(want.scales.size() == patterns.size());
      for (const k::isa path : simd_test::paths()) {
        INFO(format_name<Elem> << " tile " << to_string(tile) << " " << to_string(rule) << " on " << simd_test::name(path));
        const mx_buffers got = mx_run<Elem>(x, rows, cols, tile, rule, path, 0xA5);
        for (std::size_t b = 0; b < patterns.size(); ++b)
          if (got.scales[b] != want.scales[b])
            FAIL("amax bits 0x" << std::hex << patterns[b] << ": scale 0x" << unsigned{want.scales[b]} << " expected, got 0x"
                                << unsigned{got.scales[b]});
        REQUIRE(got.codes == want.codes);
      }
    }
  }
}

namespace {

/// An adversarial tile: every element from `kind` (see the cases), at tile-local index i of n.
/// `s` is the tile's binade shift, `t` the tile's index (it rotates the code pattern).
template <class Elem>
float adversarial_value(std::size_t kind, std::size_t i, std::size_t n, int s, std::size_t t, std::mt19937& rng) {
  constexpr std::size_t codes = std::size_t{1} << Elem::spec::bits;
  const float max_elem = static_cast<float>(Elem::from_bits(static_cast<typename Elem::storage_type>(Elem::spec::max_code)));
  const auto sign = [&](float v) { return (rng() & 1) ? -v : v; };
  const auto element = [&](std::size_t c) {  // the decoded value of code c (NaN and Inf codes: 0)
    const float v = static_cast<float>(Elem::from_bits(static_cast<typename Elem::storage_type>(c % codes)));
    return std::isfinite(v) ? v : 0.0f;
  };
  switch (kind) {
    case 0: return 0.0f;                                    // amax 0
    case 1: return (rng() & 1) ? -0.0f : 0.0f;              // amax 0, signed zeros
    case 2: return std::nanf("");                           // all NaN
    case 3: return i == n / 2 ? -std::nanf("") : sign(1.5f);  // one NaN
    case 4: return i == n - 1 ? INFINITY : sign(3.0f);      // one +Inf, at the tile's end
    case 5: return i == 0 ? -INFINITY : 1e-40f;             // one -Inf, the rest subnormal
    case 6: return std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x807FFFFFU);  // float32 subnormals
    case 7: return i == t % n ? std::bit_cast<float>(0x00000001U) : 0.0f;  // amax 2^-149 (scale 0x00)
    case 8: return sign(std::numeric_limits<float>::max());  // every element FLT_MAX (scale 254 - emax)
    case 9: return i == 0 ? std::numeric_limits<float>::max() : sign(1e-30f);  // huge range: most codes 0
    case 10: return sign(std::ldexp(std::uniform_real_distribution<float>(0.5f, 1.0f)(rng), s));  // random binade
    case 11: {  // every code of the element format, with its ties (odd i): amax = max_elem * 2^s
      if (i == 0) return std::ldexp(max_elem, s);
      const std::size_t c = (i / 2 + 15 * t) % codes;  // even i: block t has codes 15t + 1 .. 15t + 15
      const float v = element(c), w = element(c + 1);
      return std::ldexp(i % 2 == 0 ? v : (std::fabs(w) > std::fabs(v) && std::signbit(v) == std::signbit(w) ? (v + w) / 2 : v), s);
    }
    case 12: return sign(std::ldexp(std::uniform_real_distribution<float>(0.0f, 1.0f)(rng), -128));  // scale 0x00 region
    default: return sign(std::numeric_limits<float>::max() * std::uniform_real_distribution<float>(0.5f, 1.0f)(rng));
  }
}
constexpr std::size_t kAdversarialKinds = 14;

/// A rows x cols matrix whose tiles (of `tile`, ragged at the edges) cycle through the
/// adversarial kinds, with binade shifts from 2^-140 to 2^127.
template <class Elem>
std::vector<float> adversarial_matrix(std::size_t rows, std::size_t cols, mx_tile tile, std::uint32_t seed) {
  const std::size_t tr = mx_tile_rows(tile), tc = mx_tile_cols(tile);
  std::vector<float> x(rows * cols);
  std::mt19937 rng(seed);
  std::size_t t = 0;
  for (std::size_t r0 = 0; r0 < rows; r0 += tr)
    for (std::size_t c0 = 0; c0 < cols; c0 += tc, ++t) {
      const std::size_t h = std::min(tr, rows - r0), w = std::min(tc, cols - c0);
      const int s = static_cast<int>(rng() % 268) - 140;
      for (std::size_t i = 0; i < h * w; ++i)
        x[(r0 + i / w) * cols + c0 + i % w] = adversarial_value<Elem>((t + seed) % kAdversarialKinds, i, h * w, s, t, rng);
    }
  return x;
}

/// Every SIMD path against the scalar reference path on x: codes, scales (into dirtied
/// buffers), and the dequantized values of the reference codes on every path.
template <class Elem>
void check_paths(const std::vector<float>& x, std::size_t rows, std::size_t cols, mx_tile tile, scale_rule rule) {
  const mx_buffers want = mx_run<Elem>(x, rows, cols, tile, rule, k::isa::scalar);
  const auto want_values = mx_values<Elem>(want, rows, cols, tile, k::isa::scalar);
  for (const k::isa path : simd_test::paths()) {
    if (path == k::isa::scalar) continue;
    INFO(format_name<Elem> << " " << rows << "x" << cols << " tile " << to_string(tile) << " " << to_string(rule) << " on "
                           << simd_test::name(path));
    const mx_buffers got = mx_run<Elem>(x, rows, cols, tile, rule, path, 0xA5);
    REQUIRE(got.codes == want.codes);
    REQUIRE(got.scales == want.scales);
    check_same_values(want_values, mx_values<Elem>(want, rows, cols, tile, path));
  }
}

/// 0 .. 70 (Release), else the sizes around the vector and tile edges.
std::vector<std::size_t> edge_sizes() {
  std::vector<std::size_t> v;
  if (kFull) {
    for (std::size_t i = 0; i <= 70; ++i) v.push_back(i);
  } else {
    v = {0, 1, 2, 7, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 70};
  }
  return v;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("simd::mx_quantize equals the reference path on every shape across tile edges",
                        "[simd][mx]", mx_elements) {
  // rows and cols 0..70 (every remainder mod 32 and mod 16 on both axes, one, two and three
  // tiles), every tile, the rules in turn; random blocks with specials.
  using Elem = TestType;
  std::uint32_t seed = 100;
  std::size_t shapes = 0;
  for (const std::size_t rows : edge_sizes())
    for (const std::size_t cols : edge_sizes()) {
      const auto x = mx_data(rows * cols, ++seed);
      for (const mx_tile tile : kTiles) check_paths<Elem>(x, rows, cols, tile, kRules[(rows + cols + seed) % 4]);
      ++shapes;
    }
  CHECK(shapes == edge_sizes().size() * edge_sizes().size());
}

TEMPLATE_LIST_TEST_CASE("simd::mx_quantize equals the reference path on adversarial tiles", "[simd][mx]", mx_elements) {
  // Tiles of zeros, signed zeros, NaN, one NaN, one Inf, float32 subnormals, a lone 2^-149
  // (scale 0x00), FLT_MAX everywhere, FLT_MAX among tiny values, random binades from 2^-140 to
  // 2^127, every element code with its ties, and amax near 2^-128 and 2^128; every rule and
  // tile, on shapes with ragged edges.
  using Elem = TestType;
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 512}, {33, 70}, {70, 33}, {96, 288}, {65, 1030}};
  std::uint32_t seed = 0;
  for (const auto& [rows, cols] : shapes)
    for (const mx_tile tile : kTiles)
      for (const scale_rule rule : kRules)
        for (std::uint32_t rep = 0; rep < (kFull ? 4U : 1U); ++rep)
          check_paths<Elem>(adversarial_matrix<Elem>(rows, cols, tile, ++seed), rows, cols, tile, rule);
}

TEMPLATE_LIST_TEST_CASE("simd::mx_quantize reaches every finite element code on every path", "[simd][mx]", mx_elements) {
  // Blocks of 1 x 32 whose amax is the element max times 2^s (so the scale is 2^s under floor):
  // every code and the tie above it, in both signs; the reference's codes must cover every
  // finite code of the format, and every path must write the same bytes.
  using Elem = TestType;
  constexpr std::size_t ncodes = std::size_t{1} << Elem::spec::bits;
  const std::size_t rows = ncodes / 15 + 2, cols = 32;
  std::vector<float> x(rows * cols);
  std::mt19937 rng(5);
  for (std::size_t b = 0; b < rows; ++b)
    for (std::size_t i = 0; i < 32; ++i) x[b * 32 + i] = adversarial_value<Elem>(11, i, 32, static_cast<int>(b % 7) - 3, b, rng);
  for (const scale_rule rule : kRules) {
    check_paths<Elem>(x, rows, cols, mx_tile::row32, rule);
    if (rule != scale_rule::floor) continue;
    const mx_buffers want = mx_run<Elem>(x, rows, cols, mx_tile::row32, rule, k::isa::scalar);
    std::vector<bool> seen(ncodes, false);
    for (std::size_t e = 0; e < rows * cols; ++e)
      seen[sizeof_bits<Elem> == 4 ? nibble_at(std::span<const std::uint8_t>(want.codes), e) : want.codes[e]] = true;
    for (std::size_t c = 0; c < ncodes; ++c) {
      const bool finite = !std::isnan(static_cast<float>(Elem::from_bits(static_cast<typename Elem::storage_type>(c)))) &&
                          !std::isinf(static_cast<float>(Elem::from_bits(static_cast<typename Elem::storage_type>(c))));
      if (finite && !seen[c]) FAIL(format_name<Elem> << ": code 0x" << std::hex << c << " never produced");
    }
  }
}

TEMPLATE_LIST_TEST_CASE("simd::mx_dequantize decodes every code under every scale byte on every path", "[simd][mx]",
                        mx_elements) {
  // Row r holds every code byte (FP4: every byte of two nibbles) under the scale byte r, in
  // 1 x 32 and 32 x 32 tiles; then 32 x 1 with every scale byte across the columns.
  using Elem = TestType;
  constexpr bool packed = sizeof_bits<Elem> == 4;
  constexpr std::size_t ncodes = std::size_t{1} << Elem::spec::bits;
  const std::size_t cols = packed ? 512 : 256;
  for (const mx_tile tile : kTiles) {
    const std::size_t rows = tile == mx_tile::col32 ? 32 : 256 * mx_tile_rows(tile);
    mx_buffers t = mx_alloc<Elem>(rows, cols, tile);
    const std::size_t row_bytes = t.codes.size() / rows;
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < row_bytes; ++j)
        t.codes[r * row_bytes + j] = static_cast<std::uint8_t>(packed ? (j + r) % 256 : (j + r) % ncodes);
    const std::size_t grid_cols = (cols + 31) / 32;
    for (std::size_t s = 0; s < t.scales.size(); ++s)
      t.scales[s] = static_cast<std::uint8_t>(tile == mx_tile::col32 ? s % 256 : (s / grid_cols) % 256);
    const auto want = mx_values<Elem>(t, rows, cols, tile, k::isa::scalar);
    for (const k::isa path : simd_test::paths()) {
      INFO(format_name<Elem> << " tile " << to_string(tile) << " on " << simd_test::name(path));
      check_same_values(want, mx_values<Elem>(t, rows, cols, tile, path));
    }
  }
}

TEMPLATE_LIST_TEST_CASE("simd::mx_dequantize writes exactly its output at every alignment", "[simd][mx]", mx_elements) {
  // The output at every float offset from a 64-byte boundary, with guard floats on both sides
  // that must stay untouched: the AVX-512 path stores whole aligned vectors, masked at the ends.
  using Elem = TestType;
  std::mt19937 rng(23);
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {1, 15}, {1, 17}, {2, 32}, {3, 64}, {5, 70}, {33, 96}};
  for (const mx_tile tile : kTiles)
    for (const auto& [rows, cols] : shapes) {
      mx_buffers t = mx_alloc<Elem>(rows, cols, tile);
      for (auto& b : t.codes) b = static_cast<std::uint8_t>(rng());
      for (auto& b : t.scales) b = static_cast<std::uint8_t>(rng() % 8 == 0 ? 0xFF : 100 + rng() % 50);
      const std::size_t n = rows * cols;
      const auto want = mx_values<Elem>(t, rows, cols, tile, k::isa::scalar);
      for (const k::isa path : simd_test::paths())
        for (std::size_t offset = 0; offset < 16; ++offset) {
          INFO(format_name<Elem> << " " << rows << "x" << cols << " tile " << to_string(tile) << " offset " << offset
                                 << " on " << simd_test::name(path));
          constexpr float guard = -1234.5f;
          std::vector<float> buf(n + 64, guard);
          auto* const aligned = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(buf.data()) + 63) & ~std::uintptr_t{63});
          float* const out = aligned + offset;
          const auto before = static_cast<std::size_t>(out - buf.data());
          REQUIRE(before + n <= buf.size());
          REQUIRE(k::mx_dequantize<Elem>(t.codes, t.scales, rows, cols, tile, std::span<float>(out, n), {.path = path}) ==
                  k::kernel_status::ok);
          check_same_values(want, std::vector<float>(out, out + n));
          for (std::size_t i = 0; i < buf.size(); ++i)
            if ((i < before || i >= before + n) && bits(buf[i]) != bits(guard)) FAIL("float " << i << " outside the output written");
        }
    }
}
