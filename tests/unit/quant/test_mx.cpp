// MX blocks (include/minifloat/formats/): the library against the independent reference in
// mx_reference.hpp, bit for bit, for every element format x every scale rule, on random, wide-range,
// tie-grid, fp32-subnormal, all-zero and NaN/Inf blocks, short blocks, both axes and odd shapes;
// the scale-rule claims of mx_scale.hpp (torchao formulations, docs/formats/mx.md#clipping, rceil never
// clips); the CANN doc vector and paired-scale layout; idempotence; FP4 nibble order; errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <minifloat/formats/mx_block.hpp>
#include <minifloat/formats/mx_scale.hpp>
#include <minifloat/quant/mx_tensor.hpp>

#include "unit/quant/mx_reference.hpp"

using namespace minifloat;

namespace {

using mx_formats = std::tuple<float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn>;
constexpr std::array<scale_rule, 4> kRules = {scale_rule::floor, scale_rule::rceil, scale_rule::ceil,
                                                 scale_rule::even};

float from_bits32(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint32_t bits32(float f) { return std::bit_cast<std::uint32_t>(f); }
bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits32(a) == bits32(b); }

template <class F>
std::string shape_error_message(F&& f) {
  try {
    f();
  } catch (const shape_error& e) {
    return e.what();
  }
  return "<no shape_error thrown>";
}

// --- inputs: sequences of 32-value blocks -------------------------------------------------------

std::vector<float> random_normal(std::mt19937& rng, std::size_t blocks) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::uniform_int_distribution<int> e(-12, 12);
  std::vector<float> v;
  for (std::size_t b = 0; b < blocks; ++b) {
    const int k = e(rng);
    for (std::size_t i = 0; i < 32; ++i) v.push_back(std::ldexp(n(rng), k));
  }
  return v;
}

/// Magnitudes 2^-149 .. 2^121 (fp32 subnormals included): half the blocks span the whole range,
/// half a window of 24 binades at a random place.
std::vector<float> wide_range(std::mt19937& rng, std::size_t blocks) {
  std::uniform_real_distribution<float> m(1.0f, 2.0f);
  std::uniform_int_distribution<int> whole(-149, 120), center(-140, 110), sign(0, 1);
  std::vector<float> v;
  for (std::size_t b = 0; b < blocks; ++b) {
    const int c = center(rng);
    std::uniform_int_distribution<int> window(c - 22, c + 2);
    for (std::size_t i = 0; i < 32; ++i) {
      const int e = b % 2 == 0 ? whole(rng) : window(rng);
      v.push_back((sign(rng) != 0 ? -1.0f : 1.0f) * std::ldexp(m(rng), e));
    }
  }
  return v;
}

/// Every value of Elem and every midpoint between neighbours (plus the midpoint above max and a
/// point beyond it), both signs, times X = 2^k, in increasing magnitude. Each block starts with
/// 2^emax * X, which gives every rule the scale 2^k when the rest of the block is not larger,
/// so the midpoints land exactly on ties after scaling. (Blocks with values above 2^emax * X
/// get another scale under some rules: still ties for floor, saturation tests for the others.)
template <class Elem>
std::vector<float> tie_grid(int k) {
  const auto inf = mx_ref::info<Elem>();
  std::vector<double> pos;
  for (unsigned c = 0; c < (1U << (inf.bits - 1)); ++c) {
    const double p = static_cast<double>(static_cast<float>(Elem::from_bits(static_cast<std::uint8_t>(c))));
    if (!std::isnan(p) && !std::isinf(p)) pos.push_back(p);
  }
  std::sort(pos.begin(), pos.end());
  std::vector<double> vals = pos;
  for (std::size_t i = 0; i + 1 < pos.size(); ++i) vals.push_back((pos[i] + pos[i + 1]) / 2);
  const double top_gap = pos.back() - pos[pos.size() - 2];
  vals.push_back(pos.back() + top_gap / 2);  // e.g. E4M3 464 (ties down to 448), E2M1 7 (saturates)
  vals.push_back(pos.back() + top_gap);
  std::sort(vals.begin(), vals.end());
  // Blocks of values <= 2^emax first, then the rest in blocks of their own; +x and -x together.
  std::vector<float> v;
  const float anchor = static_cast<float>(std::ldexp(1.0, inf.emax + k));
  const auto emit = [&](auto first, auto last) {
    for (auto it = first; it != last; ++it)
      for (double sgn : {1.0, -1.0}) {
        if (v.size() % 32 == 0) v.push_back(anchor);
        v.push_back(static_cast<float>(sgn * std::ldexp(*it, k)));
      }
    while (v.size() % 32 != 0) v.push_back(0.0f);
  };
  const auto split = std::upper_bound(vals.begin(), vals.end(), std::ldexp(1.0, inf.emax));
  emit(vals.begin(), split);
  emit(split, vals.end());
  return v;
}

/// All-subnormal blocks, and blocks of tiny normals mixed with subnormals.
std::vector<float> subnormal_blocks(std::mt19937& rng, std::size_t blocks) {
  std::uniform_int_distribution<std::uint32_t> sub(1, 0x7FFFFF), tiny(0x00800000, 0x0B000000), sign(0, 1);
  std::vector<float> v;
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t i = 0; i < 32; ++i) {
      const std::uint32_t mag = (b % 2 == 0 || i % 3 != 0) ? sub(rng) : tiny(rng);
      v.push_back(from_bits32(mag | (sign(rng) << 31)));
    }
  // Edges: the smallest subnormal, the largest, the smallest normal.
  for (std::uint32_t b : {0x00000001U, 0x007FFFFFU, 0x00800000U, 0x80000001U, 0x00400000U, 0x00400001U})
    v.push_back(from_bits32(b));
  while (v.size() % 32 != 0) v.push_back(0.0f);
  return v;
}

std::vector<float> zero_blocks() {
  std::vector<float> v(32, 0.0f);
  for (int i = 0; i < 32; ++i) v.push_back(-0.0f);
  for (int i = 0; i < 32; ++i) v.push_back(i % 2 == 0 ? 0.0f : -0.0f);
  return v;
}

std::vector<float> nan_inf_blocks(std::mt19937& rng) {
  const float specials[] = {NAN, INFINITY, -INFINITY, from_bits32(0xFFC00000U), from_bits32(0x7F800001U)};
  std::vector<float> v;
  std::uniform_int_distribution<std::size_t> pos(0, 31);
  for (float s : specials) {
    auto b = random_normal(rng, 1);
    b[pos(rng)] = s;
    v.insert(v.end(), b.begin(), b.end());
  }
  auto b = random_normal(rng, 1);  // NaN and Inf together
  b[3] = NAN, b[17] = -INFINITY;
  v.insert(v.end(), b.begin(), b.end());
  return v;
}

/// Places a sequence of 32-value blocks so that block q is the q-th block of the tensor:
/// axis 1 -> rows of `cols` (a multiple of 32); axis 0 -> band q / cols, column q % cols.
std::vector<float> arrange(const std::vector<float>& seq, std::size_t cols, int axis) {
  if (axis == 1) return seq;
  const std::size_t blocks = seq.size() / 32, bands = (blocks + cols - 1) / cols;
  std::vector<float> x(bands * 32 * cols, 0.0f);
  for (std::size_t i = 0; i < seq.size(); ++i) {
    const std::size_t q = i / 32, o = i % 32;
    x[((q / cols) * 32 + o) * cols + q % cols] = seq[i];
  }
  return x;
}

// --- comparison against the reference -----------------------------------------------------------

template <class Elem>
void check_tensor(const std::vector<float>& x, std::size_t rows, std::size_t cols, int axis, scale_rule rule) {
  INFO(Elem::spec::name << " " << to_string(rule) << " " << rows << "x" << cols << " axis " << axis);
  const auto lib = mx_quantize<Elem>(x, rows, cols, axis, rule);
  const auto ref = mx_ref::quantize_tensor<Elem>(x, rows, cols, axis, rule);
  REQUIRE(lib.codes().size() == ref.codes.size());
  REQUIRE(lib.scales().size() == ref.scales.size());
  std::size_t bad_codes = 0, bad_scales = 0, bad_values = 0, first = SIZE_MAX;
  for (std::size_t i = 0; i < ref.codes.size(); ++i)
    if (lib.codes()[i] != ref.codes[i]) ++bad_codes, first = std::min(first, i);
  for (std::size_t i = 0; i < ref.scales.size(); ++i)
    if (lib.scales()[i] != ref.scales[i]) ++bad_scales;
  const auto dl = lib.dequantize();
  const auto dr = mx_ref::dequantize_tensor<Elem>(ref, rows, cols, axis);
  for (std::size_t i = 0; i < dl.size(); ++i)
    if (!same_float(dl[i], dr[i])) ++bad_values;
  if (first != SIZE_MAX)
    INFO("first code mismatch at byte " << first << ": lib " << unsigned{lib.codes()[first]} << " ref "
                                        << unsigned{ref.codes[first]});
  CHECK(bad_codes == 0);
  CHECK(bad_scales == 0);
  CHECK(bad_values == 0);
}

/// mx_block<Elem> on each 32-value chunk against the reference block quantizer.
template <class Elem>
void check_blocks(const std::vector<float>& seq, scale_rule rule) {
  std::size_t bad = 0;
  for (std::size_t b = 0; b * 32 < seq.size(); ++b) {
    const std::vector<float> v(seq.begin() + static_cast<std::ptrdiff_t>(b * 32),
                               seq.begin() + static_cast<std::ptrdiff_t>(std::min(seq.size(), b * 32 + 32)));
    const auto lib = mx_block<Elem>::quantize(v, rule);
    const auto ref = mx_ref::quantize_block<Elem>(v, rule);
    bool ok = lib.scale.bits() == ref.scale;
    for (std::size_t i = 0; i < v.size(); ++i) ok = ok && lib.elements[i].bits() == ref.codes[i];
    for (std::size_t i = v.size(); i < 32; ++i) ok = ok && lib.elements[i].bits() == 0;
    std::array<float, 32> out{};
    lib.dequantize(std::span<float>(out).first(v.size()));
    for (std::size_t i = 0; i < v.size(); ++i)
      ok = ok && same_float(out[i], mx_ref::dequantize_element<Elem>(ref.codes[i], ref.scale));
    if (!ok) ++bad;
  }
  INFO(Elem::spec::name << " " << to_string(rule));
  CHECK(bad == 0);
}

std::vector<float> pad_to(std::vector<float> v, std::size_t multiple) {
  while (v.size() % multiple != 0) v.push_back(0.0f);
  return v;
}

/// The blocks of `seq` through mx_block, as rows of a 64-column tensor (axis 1) and as column
/// blocks of a 3-column tensor (axis 0).
template <class Elem>
void check_everywhere(const std::vector<float>& seq, scale_rule rule) {
  check_blocks<Elem>(seq, rule);
  const auto x1 = pad_to(seq, 64);
  check_tensor<Elem>(x1, x1.size() / 64, 64, 1, rule);
  const auto x0 = arrange(seq, 3, 0);
  check_tensor<Elem>(x0, x0.size() / 3, 3, 0, rule);
}

}  // namespace

// --- scale rules --------------------------------------------------------------------------------

TEST_CASE("MX scale rule names, one scale_rule vocabulary", "[mx][mx_scale]") {
  for (auto r : kRules) {
    CHECK(parse_scale_rule(to_string(r)) == r);
    CHECK(is_mx_rule(r));
  }
  CHECK(to_string(scale_rule::floor) == "floor");
  CHECK(to_string(scale_rule::rceil) == "rceil");
  CHECK(!parse_scale_rule("Floor").has_value());
  CHECK(!parse_scale_rule("").has_value());
  for (auto r : {scale_rule::max, scale_rule::pow2, scale_rule::none}) CHECK(!is_mx_rule(r));
}

TEST_CASE("mx_scale_code: hand-computed values", "[mx][mx_scale]") {
  using E4 = float8_e4m3fn;
  using F4 = float4_e2m1fn;
  using enum scale_rule;
  // E4M3: emax 8, max 448 = 1.75 * 2^8, 3 mantissa bits (even threshold 1.9375).
  CHECK(mx_scale_code<E4>(448.0f, floor) == 127);
  CHECK(mx_scale_code<E4>(449.0f, floor) == 127);
  CHECK(mx_scale_code<E4>(511.0f, floor) == 127);
  CHECK(mx_scale_code<E4>(512.0f, floor) == 128);  // CANN doc vector amax
  CHECK(mx_scale_code<E4>(448.0f, rceil) == 127);
  CHECK(mx_scale_code<E4>(std::nextafter(448.0f, 1000.0f), rceil) == 128);
  CHECK(mx_scale_code<E4>(256.0f, ceil) == 127);
  CHECK(mx_scale_code<E4>(std::nextafter(256.0f, 1000.0f), ceil) == 128);
  CHECK(mx_scale_code<E4>(496.0f, even) == 128);                                  // 1.9375 * 2^8
  CHECK(mx_scale_code<E4>(std::nextafter(496.0f, 0.0f), even) == 127);
  CHECK(mx_scale_code<E4>(-448.0f, floor) == 127);  // sign ignored
  // E2M1: emax 2, max 6 = 1.5 * 2^2, 1 mantissa bit (even threshold 1.75).
  CHECK(mx_scale_code<F4>(6.0f, floor) == 127);
  CHECK(mx_scale_code<F4>(7.9f, floor) == 127);
  CHECK(mx_scale_code<F4>(6.0f, rceil) == 127);
  CHECK(mx_scale_code<F4>(std::nextafter(6.0f, 7.0f), rceil) == 128);
  CHECK(mx_scale_code<F4>(7.0f, even) == 128);
  CHECK(mx_scale_code<F4>(std::nextafter(7.0f, 0.0f), even) == 127);
  // Specials and range ends.
  for (auto r : kRules) {
    CHECK(mx_scale_code<E4>(0.0f, r) == 0x00);
    CHECK(mx_scale_code<E4>(-0.0f, r) == 0x00);
    CHECK(mx_scale_code<E4>(NAN, r) == 0xFF);
    CHECK(mx_scale_code<E4>(INFINITY, r) == 0xFF);
    CHECK(mx_scale_code<E4>(-INFINITY, r) == 0xFF);
    CHECK(mx_scale_code<F4>(from_bits32(1), r) == 0x00);           // 2^-149
    CHECK(mx_scale_code<F4>(from_bits32(0x007FFFFF), r) == 0x00);  // largest subnormal
    CHECK(mx_scale_code<F4>(FLT_MIN, r) == 0x00);                  // 2^-126 - 2 < -127
  }
  CHECK(mx_scale_code<E4>(FLT_MAX, floor) == 127 + 127 - 8);
  CHECK(mx_scale_code<float8_e5m2>(FLT_MAX, floor) == 127 + 127 - 15);
  // rceil would give 127 + 128 - 2, whose block max dequantizes to 2^128: the finite guard takes
  // floor's code (docs/formats/mx.md#scale-rules).
  CHECK(mx_scale_code<F4>(FLT_MAX, rceil) == 127 + 127 - 2);
  CHECK(mx_scale_code<F4>(std::ldexp(1.0f, -125), floor) == 0x00);  // -125 - 2 = -127
  CHECK(mx_scale_code<F4>(std::ldexp(1.0f, -124), floor) == 0x01);
  // X = 2^(code - 127), exactly, including the fp32-subnormal code 0.
  CHECK(mx_scale_value(0) == std::ldexp(1.0f, -127));
  CHECK(mx_scale_value(1) == std::ldexp(1.0f, -126));
  CHECK(mx_scale_value(127) == 1.0f);
  CHECK(mx_scale_value(254) == std::ldexp(1.0f, 127));
  CHECK(std::isnan(mx_scale_value(255)));
  for (unsigned c = 0; c < 256; ++c)
    CHECK(same_float(mx_scale_value(static_cast<std::uint8_t>(c)),
                     static_cast<float>(float8_e8m0fnu::from_bits(static_cast<std::uint8_t>(c)))));
  STATIC_REQUIRE(mx_scale_code<E4>(512.0f) == 128);
  STATIC_REQUIRE(mx_emax<float8_e5m2> == 15 && mx_emax<float6_e3m2fn> == 4 && mx_emax<float6_e2m3fn> == 2);
}

namespace {

/// amax values around every threshold of every rule, in every fp32 binade, plus subnormals.
template <class Elem>
std::vector<float> threshold_amaxes() {
  const auto inf = mx_ref::info<Elem>();
  const std::uint32_t s_max = static_cast<std::uint32_t>(std::ldexp(inf.max_value, -inf.emax) * 0x800000) & 0x7FFFFF;
  const std::uint32_t even_thr = 0x800000U - (1U << (22 - inf.mantissa_bits));
  std::vector<std::uint32_t> mants = {0, 1, 2, 0x7FFFFF, 0x7FFFFE, 0x400000, s_max - 1, s_max, s_max + 1,
                                      even_thr - 1, even_thr, even_thr + 1};
  std::mt19937 rng(11);
  std::vector<float> out;
  for (std::uint32_t field = 0; field < 255; ++field) {
    for (auto m : mants) out.push_back(from_bits32((field << 23) | (m & 0x7FFFFF)));
    for (int i = 0; i < 4; ++i) out.push_back(from_bits32((field << 23) | (rng() & 0x7FFFFF)));
  }
  for (std::uint32_t b = 1; b < 0x800000; b += 4093) out.push_back(from_bits32(b));
  return out;
}

/// torchao's formulations (pytorch/ao mx_tensor.py to_mx / _to_mx_rceil) for a finite amax >= 0:
/// floor/ceil/even read the exponent field of fp32 bits (even after adding half an element ulp
/// to the bits); rceil rounds amax / max_pos to fp32 first, then ceil(log2), clamped to +-127.
template <class Elem>
std::uint8_t torchao_scale_code(float amax, scale_rule rule) {
  const auto inf = mx_ref::info<Elem>();
  if (rule == scale_rule::rceil) {
    const float q = amax / static_cast<float>(inf.max_value);
    int k = -127;
    if (q != 0) {
      k = std::ilogb(q);
      if (std::ldexp(1.0f, k) != q) ++k;  // ceil(log2 q) of the fp32 quotient
    }
    return static_cast<std::uint8_t>(std::clamp(k, -127, 127) + 127);
  }
  std::uint32_t b = bits32(amax);
  if (rule == scale_rule::even) b = (b + (1U << (23 - inf.mantissa_bits - 1))) & 0xFF800000U;
  int e = static_cast<int>((b >> 23) & 0xFF) - 127;
  if (rule == scale_rule::ceil && (b & 0x7FFFFF) != 0) ++e;
  return static_cast<std::uint8_t>(std::clamp(e - inf.emax, -127, 128) + 127);
}

/// The amaxes the finite guard moves to floor's code: exponent field 254 (e = 127) whose
/// significand rounds to 2 at the element's mantissa width.
template <class Elem>
bool finite_guarded(float amax) {
  const std::uint32_t b = bits32(amax) & 0x7FFFFFFFU;
  const int m = mx_ref::info<Elem>().mantissa_bits;
  return (b >> 23) == 254 && (b & 0x7FFFFFU) + (1U << (22 - m)) >= 0x800000U;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("mx_scale_code agrees with the reference at every threshold", "[mx][mx_scale]", mx_formats) {
  using Elem = TestType;
  const auto amaxes = threshold_amaxes<Elem>();
  for (auto rule : kRules) {
    std::size_t bad = 0;
    float first = 0;
    for (float a : amaxes)
      for (float s : {a, -a})
        if (mx_scale_code<Elem>(s, rule) != mx_ref::scale_code_for_amax<Elem>(s, rule)) {
          if (bad++ == 0) first = s;
        }
    INFO(Elem::spec::name << " " << to_string(rule) << " first mismatch amax bits " << bits32(first));
    CHECK(bad == 0);
  }
}

TEMPLATE_LIST_TEST_CASE("scale rules vs torchao's formulations (mx_scale.hpp claims)", "[mx][mx_scale]", mx_formats) {
  using Elem = TestType;
  const auto inf = mx_ref::info<Elem>();
  const auto amaxes = threshold_amaxes<Elem>();
  // floor, ceil, even: identical on every sampled amax, fp32 subnormals included (docs/formats/mx.md#comparison-with-torchao-and-te:
  // exponent-field extraction and the true floor(log2) clamp to the same scale).
  for (auto rule : {scale_rule::floor, scale_rule::ceil, scale_rule::even}) {
    std::size_t bad = 0;
    std::size_t guarded = 0;
    for (float a : amaxes) {
      // torchao keeps the rounded-up code where it dequantizes the block max to Inf; we take floor's.
      const bool g = rule != scale_rule::floor && finite_guarded<Elem>(a);
      guarded += g ? 1U : 0U;
      const std::uint8_t want = g ? torchao_scale_code<Elem>(a, scale_rule::floor) : torchao_scale_code<Elem>(a, rule);
      bad += mx_scale_code<Elem>(a, rule) != want ? 1U : 0U;
    }
    INFO(Elem::spec::name << " " << to_string(rule));
    CHECK(bad == 0);
    if (rule != scale_rule::floor) CHECK(guarded > 0);
  }
  // rceil: fp32 division differs from the exact rule only at amax = max_elem * 2^-127 + 1 ulp.
  const float special = std::nextafter(static_cast<float>(std::ldexp(inf.max_value, -127)), 1.0f);
  std::vector<float> diffs;
  auto sweep = amaxes;
  const float centre = static_cast<float>(std::ldexp(inf.max_value, -127));
  float a = centre;
  for (int i = 0; i < 2000; ++i) a = std::nextafter(a, 0.0f);
  for (int i = 0; i < 4000; ++i, a = std::nextafter(a, 1.0f)) sweep.push_back(a);
  for (float x : sweep)
    if (!finite_guarded<Elem>(x) && mx_scale_code<Elem>(x, scale_rule::rceil) != torchao_scale_code<Elem>(x, scale_rule::rceil))
      diffs.push_back(x);
  std::sort(diffs.begin(), diffs.end());
  diffs.erase(std::unique(diffs.begin(), diffs.end()), diffs.end());
  REQUIRE(diffs.size() == 1);
  CHECK(diffs[0] == special);
  CHECK(mx_scale_code<Elem>(special, scale_rule::rceil) == 1);
  CHECK(torchao_scale_code<Elem>(special, scale_rule::rceil) == 0);
}

TEMPLATE_LIST_TEST_CASE("docs/formats/mx.md#clipping: floor clips, rceil never does", "[mx][mx_scale]", mx_formats) {
  using Elem = TestType;
  const auto inf = mx_ref::info<Elem>();
  for (int e : {-100, -20, -3, 0, 5, 60, 100}) {
    const float amax = static_cast<float>(std::ldexp(1.9, e));
    const std::array<float, 2> v = {amax, 0.5f * amax};
    const auto b = mx_block<Elem>::quantize(v);
    // floor: X = 2^(e - emax), amax / X = 1.9 * 2^emax > max_elem: clipped to max.
    CHECK(b.scale.bits() == e - inf.emax + 127);
    CHECK(static_cast<double>(static_cast<float>(b.elements[0])) == inf.max_value);
  }
  // The two clipping cases of docs/formats/mx.md: E4M3 1.9 * 2^e -> 486.4 -> 448; E2M1 1.9 * 2^e -> 7.6 -> 6.
  if constexpr (std::is_same_v<Elem, float8_e4m3fn>) CHECK(mx_block<Elem>::quantize(std::array{1.9f}).dequantize()[0] == 448.0f / 256.0f);
  if constexpr (std::is_same_v<Elem, float4_e2m1fn>) CHECK(mx_block<Elem>::quantize(std::array{1.9f}).dequantize()[0] == 1.5f);
  // rceil: amax / X <= max_elem for every threshold amax (exact double arithmetic), except the
  // amaxes within half an element ulp of 2^128, where the finite guard prefers clipping to Inf.
  std::size_t clipped = 0;
  for (float a : threshold_amaxes<Elem>()) {
    const std::uint8_t code = mx_scale_code<Elem>(a, scale_rule::rceil);
    if (!finite_guarded<Elem>(a) && static_cast<double>(a) / std::ldexp(1.0, code - 127) > inf.max_value) ++clipped;
    for (auto rule : kRules) {  // finite in, finite out, for every rule
      const std::array<float, 1> v = {a};
      CHECK(std::isfinite(mx_block<Elem>::quantize(v, rule).dequantize()[0]));
    }
  }
  CHECK(clipped == 0);
}

// --- quantization against the reference ---------------------------------------------------------

TEMPLATE_LIST_TEST_CASE("MX quantize matches the reference: random and wide-range blocks", "[mx][mx_reference]", mx_formats) {
  using Elem = TestType;
  std::mt19937 rng(1234);
  const auto normal = random_normal(rng, 256);
  const auto wide = wide_range(rng, 256);
  for (auto rule : kRules) {
    check_everywhere<Elem>(normal, rule);
    check_everywhere<Elem>(wide, rule);
  }
}

TEMPLATE_LIST_TEST_CASE("MX quantize matches the reference: tie grids", "[mx][mx_reference]", mx_formats) {
  using Elem = TestType;
  for (auto rule : kRules)
    for (int k : {-127, -60, -3, 0, 7, 100}) {
      INFO("X = 2^" << k);
      const auto seq = tie_grid<Elem>(k);
      check_everywhere<Elem>(seq, rule);
      // The anchor 2^emax * X fixes the scale at 2^k for every rule in blocks not above it.
      std::size_t anchored = 0;
      for (std::size_t i = 0; i < seq.size(); i += 32) {
        const auto blk = std::span<const float>(seq).subspan(i, 32);
        if (std::all_of(blk.begin(), blk.end(), [&](float f) { return std::fabs(f) <= blk[0]; })) {
          ++anchored;
          CHECK(mx_block<Elem>::quantize(blk, rule).scale.bits() == k + 127);
        }
      }
      CHECK(anchored >= 1);
    }
}

TEST_CASE("docs/formats/mx.md#worked-examples: -4.25 in an E4M3 block with amax 7.625", "[mx]") {
  // X = 2^(2 - 8) = 2^-6; -4.25 / X = -272, the tie between -256 (even) and -288: RNE gives -4.0.
  const auto b = mx_block<float8_e4m3fn>::quantize(std::array{7.625f, -4.25f});
  CHECK(b.scale.bits() == 127 - 6);
  CHECK(b.dequantize()[1] == -4.0f);
}

TEMPLATE_LIST_TEST_CASE("MX quantize matches the reference: subnormal, zero, NaN/Inf blocks", "[mx][mx_reference]", mx_formats) {
  using Elem = TestType;
  std::mt19937 rng(99);
  const auto sub = subnormal_blocks(rng, 8);
  const auto zeros = zero_blocks();
  const auto specials = nan_inf_blocks(rng);
  for (auto rule : kRules) {
    check_everywhere<Elem>(sub, rule);
    check_everywhere<Elem>(zeros, rule);
    check_everywhere<Elem>(specials, rule);
  }
  // All-zero: scale 0x00 and zero codes (signs kept); NaN/Inf: scale 0xFF, codes 0, values NaN.
  for (auto rule : kRules) {
    const auto z = mx_block<Elem>::quantize(std::span<const float>(zeros).subspan(32, 32), rule);
    CHECK(z.scale.bits() == 0x00);
    for (auto p : z.elements) CHECK(static_cast<float>(p) == 0.0f);
    for (std::size_t i = 0; i < specials.size() / 32; ++i) {
      const auto b = mx_block<Elem>::quantize(std::span<const float>(specials).subspan(i * 32, 32), rule);
      CHECK(b.scale.bits() == 0xFF);
      for (auto p : b.elements) CHECK(p.bits() == 0);
      for (float f : b.dequantize()) CHECK(std::isnan(f));
    }
  }
}

TEMPLATE_LIST_TEST_CASE("MX short blocks, odd shapes, 1x1 and empty tensors", "[mx][mx_reference]", mx_formats) {
  using Elem = TestType;
  std::mt19937 rng(5);
  std::vector<std::size_t> lengths;
  for (std::size_t n = 1; n <= 33; ++n) lengths.push_back(n);
  for (std::size_t n : {63U, 64U, 65U, 95U, 97U}) lengths.push_back(n);
  for (auto rule : kRules) {
    for (std::size_t n : lengths) {
      // 3 rows of n (axis 1) and n rows of 3 (axis 0): the last block of each is n % 32 long.
      auto x = random_normal(rng, (3 * n + 31) / 32);
      x.resize(3 * n);
      check_tensor<Elem>(x, 3, n, 1, rule);
      check_tensor<Elem>(x, n, 3, 0, rule);
      auto w = wide_range(rng, (3 * n + 31) / 32);
      w.resize(3 * n);
      check_tensor<Elem>(w, 3, n, 1, rule);
      check_tensor<Elem>(w, n, 3, 0, rule);
      if (n <= 32) {  // a short mx_block: its scale comes from its own n values
        const std::vector<float> v(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n));
        check_blocks<Elem>(v, rule);
      }
    }
    std::vector<std::pair<std::size_t, std::size_t>> shapes = {{1, 1}, {2, 3}, {31, 7}, {33, 5}, {7, 97},
                                                               {65, 2}, {100, 1}, {1, 100}};
    std::uniform_int_distribution<std::size_t> extent(1, 80);
    for (int i = 0; i < 6; ++i) shapes.emplace_back(extent(rng), extent(rng));
    for (auto [r, c] : shapes) {
      auto x = wide_range(rng, (r * c + 31) / 32);
      x.resize(r * c);
      for (int axis : {0, 1}) check_tensor<Elem>(x, r, c, axis, rule);
    }
  }
  // Empty tensors: valid, with empty buffers.
  for (int axis : {0, 1})
    for (auto [r, c] : {std::pair<std::size_t, std::size_t>{0, 0}, {0, 5}, {5, 0}, {0, 40}, {40, 0}}) {
      const auto t = mx_quantize<Elem>(std::span<const float>(), r, c, axis);
      CHECK(t.codes().empty());
      CHECK(t.scales().empty());
      CHECK(t.dequantize().empty());
      CHECK(t.cann_scales().empty());
      CHECK(mx_tensor<Elem>::from_buffers(r, c, axis, scale_rule::floor, {}, {}) == t);
    }
  const auto one = mx_quantize<Elem>(std::vector<float>{-3.0f}, 1, 1);
  CHECK(one.dequantize() == std::vector<float>{-3.0f});
  CHECK(one.scales().size() == 1);
}

TEST_CASE("MX: bfloat16 and float16 inputs equal their exact float widening", "[mx]") {
  std::mt19937 rng(77);
  auto x = wide_range(rng, 8);
  std::vector<bfloat16> xb;
  std::vector<float16> xh;
  for (float f : x) xb.push_back(narrow<bfloat16>(f)), xh.push_back(narrow<float16>(f));
  std::vector<float> wb, wh;
  for (auto b : xb) wb.push_back(static_cast<float>(b));
  for (auto h : xh) wh.push_back(static_cast<float>(h));
  for (int axis : {0, 1}) {
    CHECK(mx_quantize<float8_e4m3fn>(std::span<const bfloat16>(xb), 8, 32, axis) == mx_quantize<float8_e4m3fn>(wb, 8, 32, axis));
    CHECK(mx_quantize<float4_e2m1fn>(std::span<const float16>(xh), 16, 16, axis, scale_rule::rceil) ==
          mx_quantize<float4_e2m1fn>(wh, 16, 16, axis, scale_rule::rceil));
  }
  const auto b = mx_block<float6_e2m3fn>::quantize(std::span<const bfloat16>(xb).first(32));
  CHECK(b == mx_block<float6_e2m3fn>::quantize(std::span<const float>(wb).first(32)));
}

// --- spec vectors, layouts, properties ----------------------------------------------------------

TEST_CASE("CANN aclnnDynamicMxQuant doc vector (docs/formats/ascend.md#mx-scale-layout)", "[mx][cann]") {
  // BF16 x = [0, 8, 64, 512], axis -1, FLOAT8_E4M3FN, "rint", block 32 -> y [0, 72, 96, 120],
  // mxscale [128, 0] (2^1, then the padding to an even block count).
  const std::vector<bfloat16> x = {narrow<bfloat16>(0.0f), narrow<bfloat16>(8.0f), narrow<bfloat16>(64.0f),
                                   narrow<bfloat16>(512.0f)};
  const auto t = mx_quantize<float8_e4m3fn>(std::span<const bfloat16>(x), 1, 4, 1, scale_rule::floor);
  CHECK(std::vector<std::uint8_t>(t.codes().begin(), t.codes().end()) == std::vector<std::uint8_t>{0, 72, 96, 120});
  CHECK(std::vector<std::uint8_t>(t.scales().begin(), t.scales().end()) == std::vector<std::uint8_t>{128});
  CHECK(t.cann_scales() == std::vector<std::uint8_t>{128, 0});
  CHECK(mx_cann_scale_shape(1, 4, 1) == std::array<std::size_t, 3>{1, 1, 2});
  CHECK(t.dequantize() == std::vector<float>{0, 8, 64, 512});
  // The same from fp32, as a compile-time block.
  constexpr auto b = mx_block<float8_e4m3fn>::quantize(std::array{0.0f, 8.0f, 64.0f, 512.0f});
  STATIC_REQUIRE(b.scale.bits() == 128);
  STATIC_REQUIRE(b.elements[1].bits() == 72 && b.elements[2].bits() == 96 && b.elements[3].bits() == 120);
}

TEST_CASE("FP4 codes: element 2i in the low nibble (docs/formats/mx.md#fp4-nibble-packing)", "[mx][fp4]") {
  // amax 6 -> X = 1; codes 1 -> 0x2, 2 -> 0x4, 3 -> 0x5, 4 -> 0x6, -6 -> 0xF.
  const std::vector<float> x = {1, 2, 3, 4, -6, 0.5f, -0.5f, 0, 1.5f, 6};
  const auto t = mx_quantize<float4_e2m1fn>(x, 2, 5);
  CHECK(std::vector<std::uint8_t>(t.codes().begin(), t.codes().end()) ==
        std::vector<std::uint8_t>{0x42, 0x65, 0x0F, 0x91, 0x30, 0x07});
  CHECK(t.element(0, 4).bits() == 0xF);
  CHECK(t.element(1, 1).bits() == 0x9);
  CHECK(t.value(1, 4) == 6.0f);
  CHECK(t.dequantize() == x);
  // Same along axis 0 (each column its own block): the packing is still per row.
  const auto t0 = mx_quantize<float4_e2m1fn>(x, 2, 5, 0);
  CHECK(t0.codes().size() == 6);
  CHECK(t0.scales().size() == 5);
  CHECK(t0.dequantize() == x);
}

TEST_CASE("CANN paired scale layout: round trips and the literal reshape", "[mx][cann]") {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::size_t> sizes = {0, 1, 2, 31, 32, 33, 63, 64, 65, 96, 97, 128, 129, 200};
  for (int axis : {0, 1})
    for (std::size_t r : sizes)
      for (std::size_t c : sizes) {
        INFO(r << "x" << c << " axis " << axis);
        const auto grid = mx_scale_shape(r, c, axis);
        const auto cs = mx_cann_scale_shape(r, c, axis);
        std::vector<std::uint8_t> plain(grid[0] * grid[1]);
        for (auto& b : plain) b = static_cast<std::uint8_t>(byte(rng));
        const auto cann = mx_scales_to_cann(plain, r, c, axis);
        REQUIRE(cann.size() == cs[0] * cs[1] * cs[2]);
        CHECK(cs[axis == 1 ? 1 : 0] == (((axis == 1 ? c : r) + 31) / 32 + 1) / 2);
        CHECK(cann == mx_ref::to_cann(plain, r, c, axis));
        CHECK(mx_scales_from_cann(cann, r, c, axis) == plain);
        // Another pad byte (CATLASS pads with 127 = 1.0) round-trips too.
        CHECK(mx_scales_from_cann(mx_scales_to_cann(plain, r, c, axis, 127), r, c, axis, 127) == plain);
      }
}

TEST_CASE("CANN layout: non-zero padding and wrong sizes are rejected", "[mx][cann][errors]") {
  // 1 x 40 axis 1: kb = 2 (no padding); 1 x 33: kb = 2; 1 x 20: kb = 1 -> byte 1 is padding.
  std::vector<std::uint8_t> cann = {120, 7};
  CHECK(mx_scales_from_cann(cann, 1, 40, 1) == std::vector<std::uint8_t>{120, 7});
  const auto msg = shape_error_message([&] { (void)mx_scales_from_cann(cann, 1, 20, 1); });
  CHECK_THAT(msg, Catch::Contains("padding byte 1") && Catch::Contains("is 7") && Catch::Contains("expected"));
  // axis 0, 40 x 3: mb = 2 -> no padding; 20 x 3: mb = 1 -> odd positions are padding.
  const std::vector<std::uint8_t> c0 = {1, 0, 2, 0, 3, 9};
  CHECK(mx_scales_from_cann(std::vector<std::uint8_t>{1, 0, 2, 0, 3, 0}, 20, 3, 0) == std::vector<std::uint8_t>{1, 2, 3});
  CHECK_THAT(shape_error_message([&] { (void)mx_scales_from_cann(c0, 20, 3, 0); }), Catch::Contains("padding byte 5"));
  CHECK_THAT(shape_error_message([&] { (void)mx_scales_from_cann(c0, 20, 4, 0); }),
             Catch::Contains("needs 8") && Catch::Contains("got 6"));
  CHECK_THAT(shape_error_message([&] { (void)mx_scales_to_cann(c0, 20, 4, 0); }),
             Catch::Contains("needs 4") && Catch::Contains("got 6"));
  CHECK_THAT(shape_error_message([&] { (void)mx_scales_to_cann(c0, 20, 4, 2); }), Catch::Contains("axis"));
}

TEMPLATE_LIST_TEST_CASE("MX round trips: quantize -> dequantize -> quantize", "[mx][idempotent]", mx_formats) {
  using Elem = TestType;
  std::mt19937 rng(21);
  std::vector<std::vector<float>> inputs = {random_normal(rng, 12), wide_range(rng, 12), tie_grid<Elem>(-3),
                                            subnormal_blocks(rng, 4), zero_blocks(), nan_inf_blocks(rng)};
  for (auto rule : kRules)
    for (int axis : {0, 1})
      for (const auto& seq : inputs) {
        INFO(Elem::spec::name << " " << to_string(rule) << " axis " << axis);
        const std::size_t cols = axis == 1 ? 32 : 1;
        const auto x = pad_to(seq, 32);
        const auto t1 = mx_quantize<Elem>(x, x.size() / cols, cols, axis, rule);
        const auto d1 = t1.dequantize();
        const auto t2 = mx_quantize<Elem>(d1, x.size() / cols, cols, axis, rule);
        if (rule == scale_rule::floor || rule == scale_rule::even) {
          CHECK(t2 == t1);  // bit-identical codes and scales after one round
        } else {
          // ceil / rceil: a block whose amax rounded down to max_elem / 2 (rceil) or 2^(emax-1)
          // (ceil) gets a scale one smaller on the second pass; the values are the same, and
          // from then on the codes are fixed.
          const auto d2 = t2.dequantize();
          std::size_t bad = 0;
          for (std::size_t i = 0; i < d1.size(); ++i) bad += same_float(d1[i], d2[i]) ? 0U : 1U;
          CHECK(bad == 0);
          CHECK(mx_quantize<Elem>(d2, x.size() / cols, cols, axis, rule) == t2);
        }
      }
}

TEST_CASE("MX: ceil/rceil re-quantization lowers the scale but keeps the values", "[mx][idempotent]") {
  // E2M1 rceil: amax 3.2 -> X = 1, P = 3 (3.2 rounds down); 3 = max / 2 -> X = 1/2, P = 6.
  const auto t1 = mx_quantize<float4_e2m1fn>(std::vector<float>{3.2f, 1.0f}, 1, 2, 1, scale_rule::rceil);
  CHECK(t1.scales()[0] == 127);
  const auto t2 = mx_quantize<float4_e2m1fn>(t1.dequantize(), 1, 2, 1, scale_rule::rceil);
  CHECK(t2.scales()[0] == 126);
  CHECK(t2.dequantize() == t1.dequantize());
}

TEST_CASE("MX dequantize: exact products, overflow only past FLT_MAX", "[mx]") {
  // Code 0 (X = 2^-127, an fp32 subnormal) times the smallest E5M2 subnormal 2^-16 = 2^-143.
  mx_block<float8_e5m2> b;
  b.scale = float8_e8m0fnu::from_bits(0);
  b.elements[0] = float8_e5m2::from_bits(0x01);
  b.elements[1] = float8_e5m2::from_bits(0x83);
  const auto v = b.dequantize();
  CHECK(v[0] == std::ldexp(1.0f, -143));
  CHECK(v[1] == -3 * std::ldexp(1.0f, -143));
  // floor keeps FLT_MAX finite (448 * 2^119); rceil would round it up to 256 * 2^120 = 2^128 = Inf,
  // so the finite guard gives it floor's scale (docs/formats/mx.md#scale-rules).
  const std::array<float, 1> big = {FLT_MAX};
  CHECK(mx_block<float8_e4m3fn>::quantize(big, scale_rule::floor).dequantize()[0] == 448.0f * std::ldexp(1.0f, 119));
  for (auto rule : {scale_rule::rceil, scale_rule::ceil, scale_rule::even}) {
    const auto r = mx_block<float8_e4m3fn>::quantize(big, rule);
    CHECK(r.scale.bits() == 127 + 119);
    CHECK(r.dequantize()[0] == 448.0f * std::ldexp(1.0f, 119));
  }
  // Just below the guard (s = 2 - 2^-4 - ulp, E4M3 M = 3) rceil keeps its own scale, finite.
  const std::array<float, 1> below = {from_bits32(0x7F700000U - 1U)};
  const auto rb = mx_block<float8_e4m3fn>::quantize(below, scale_rule::rceil);
  CHECK(rb.scale.bits() == 127 + 120);
  CHECK(std::isfinite(rb.dequantize()[0]));
}

TEST_CASE("MX views, from_buffers and errors", "[mx][errors]") {
  std::mt19937 rng(8);
  const auto x = random_normal(rng, 5);  // 160 values
  const auto t = mx_quantize<float6_e3m2fn>(std::span<const float>(x).first(150), 10, 15, 0, scale_rule::even);
  CHECK(t.rows() == 10);
  CHECK(t.cols() == 15);
  CHECK(t.axis() == 0);
  CHECK(t.rule() == scale_rule::even);
  CHECK(mx_scale_shape(10, 15, 0) == std::array<std::size_t, 2>{1, 15});
  // from_buffers copies and validates; the view and the mutable view see the same bytes.
  const auto u = mx_tensor<float6_e3m2fn>::from_buffers(10, 15, 0, scale_rule::even, t.codes(), t.scales());
  CHECK(u == t);
  const mx_tensor_view<float6_e3m2fn> v = t.view();
  std::vector<float> out(150);
  mx_dequantize(v, std::span<float>(out));
  CHECK(out == t.dequantize());
  auto w = t;
  mx_tensor_view<float6_e3m2fn> cv = w.mutable_view();  // mutable -> const
  CHECK(cv.value(3, 4) == t.value(3, 4));
  // mx_quantize_into a caller's buffers.
  std::vector<std::uint8_t> codes(150, 0xAA), scales(15, 0xAA);
  mx_quantize_into(std::span<const float>(x).first(150),
                   mx_tensor_mutable_view<float6_e3m2fn>(10, 15, 0, scale_rule::even, codes, scales));
  CHECK(mx_tensor<float6_e3m2fn>::from_buffers(10, 15, 0, scale_rule::even, codes, scales) == t);
  // FP4 into a dirty buffer: every byte is written, odd rows end with a zero high nibble.
  std::vector<std::uint8_t> c4(3 * 3, 0xFF), s4(3, 0xFF);
  mx_quantize_into(std::span<const float>(x).first(15),
                   mx_tensor_mutable_view<float4_e2m1fn>(3, 5, 1, scale_rule::floor, c4, s4));
  CHECK(mx_tensor<float4_e2m1fn>::from_buffers(3, 5, 1, scale_rule::floor, c4, s4) ==
        mx_quantize<float4_e2m1fn>(std::span<const float>(x).first(15), 3, 5));
  for (std::size_t r = 0; r < 3; ++r) CHECK((c4[r * 3 + 2] >> 4) == 0);

  // Errors name what was expected and what was given.
  CHECK_THAT(shape_error_message([&] { (void)mx_quantize<float8_e4m3fn>(std::span<const float>(x).first(11), 3, 4); }),
             Catch::Contains("needs 12") && Catch::Contains("got 11") && Catch::Contains("3 x 4"));
  CHECK_THAT(shape_error_message([&] { (void)mx_quantize<float8_e4m3fn>(std::span<const float>(x).first(12), 3, 4, 2); }),
             Catch::Contains("axis") && Catch::Contains("got 2"));
  CHECK_THAT(shape_error_message([&] { (void)mx_quantize<float8_e4m3fn>(std::span<const float>(x).first(12), 3, 4, -1); }),
             Catch::Contains("got -1"));
  CHECK_THAT(shape_error_message([&] {
               (void)mx_tensor<float4_e2m1fn>::from_buffers(3, 5, 1, scale_rule::floor,
                                                            std::vector<std::uint8_t>(8), std::vector<std::uint8_t>(3));
             }),
             Catch::Contains("codes") && Catch::Contains("needs 9") && Catch::Contains("got 8") &&
                 Catch::Contains("float4_e2m1fn"));
  CHECK_THAT(shape_error_message([&] {
               (void)mx_tensor<float8_e5m2>::from_buffers(40, 5, 0, scale_rule::floor,
                                                          std::vector<std::uint8_t>(200), std::vector<std::uint8_t>(5));
             }),
             Catch::Contains("scales") && Catch::Contains("needs 10") && Catch::Contains("got 5"));
  CHECK_THAT(shape_error_message([&] {
               std::vector<float> o(149);
               mx_dequantize(t, std::span<float>(o));
             }),
             Catch::Contains("needs 150") && Catch::Contains("got 149"));
  CHECK_THAT(shape_error_message([&] { (void)mx_block<float8_e4m3fn>::quantize(std::span<const float>(x).first(33)); }),
             Catch::Contains("at most 32") && Catch::Contains("got 33"));
  CHECK_THAT(shape_error_message([&] {
               std::array<float, 33> o{};
               mx_block<float8_e4m3fn>{}.dequantize(o);
             }),
             Catch::Contains("got 33"));
  CHECK_THAT(shape_error_message([&] { (void)mx_tensor<float8_e4m3fn>(SIZE_MAX / 2, 3); }), Catch::Contains("overflow"));
}
