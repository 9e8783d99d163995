#pragma once
// An independent reference for OCP MX block quantization, written from the spec steps only
// (docs/formats/mx.md#emax_elem), never from include/minifloat/formats/.
// It shares with the library only the element types, their scalar rounding
// (minifloat::narrow with RNE + saturation, itself checked against tests/oracle) and their exact
// decoding (float(Elem)), plus the scale_rule enum as a name for the rule.
//
// Deliberately plain and slow:
//   * amax is max |V_i| in double with std::fabs; NaN/Inf are found with std::isnan/std::isinf.
//   * Exponents come from std::ilogb / std::ldexp on doubles (every float, subnormals included,
//     is a normal double, so these are exact), not from bit fields.
//   * Every rule is its textbook definition:
//       floor  k = floor(log2 amax) - emax
//       ceil   k = ceil(log2 amax) - emax
//       even   k = floor(log2 R) - emax, R = amax rounded half-up to the element's mantissa width
//       rceil  k = the smallest integer with amax / 2^k <= max_elem  (= ceil(log2(amax / max_elem)))
//     then clamp(k, -127, 127) + 127; NaN/Inf in the block -> 0xFF; amax == 0 -> 0x00.
//     Finite stays finite (the library's documented deviation for the rounded-up rules): if the
//     rule's 2^k makes RNE+saturate(amax / 2^k) * 2^k overflow float32, the floor rule's k is used.
//   * Tiles: 1 x 32 (axis 1), 32 x 1 (axis 0) and 32 x 32 (tile_rows = tile_cols = 32).
//   * Elements: P_i = RNE+saturate(V_i / 2^k), the division done in double (exact); a NaN
//     scale leaves every element code 0 (Ascend golden: NaN -> 0).
//   * Tensors are cut into blocks by explicit index arithmetic, FP4 codes are packed with
//     "element 2i low nibble" written out, and the CANN layout is built by the literal
//     pad / reshape / transpose steps of docs/formats/mx.md#scale-layouts.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <minifloat/formats/mx_scale.hpp>  // only for the scale_rule enum and the element types
#include <minifloat/formats/convert.hpp>

namespace mx_ref {

using minifloat::scale_rule;

/// Hand-copied from docs/formats/mx.md#fp6-and-fp4-codes (not derived from the library's specs).
struct element_info {
  int emax;           // exponent of the largest finite value
  double max_value;   // largest finite value
  int mantissa_bits;  // explicit mantissa bits
  int bits;           // code width
};

template <class Elem>
element_info info();
template <> inline element_info info<minifloat::float8_e4m3fn>() { return {8, 448.0, 3, 8}; }
template <> inline element_info info<minifloat::float8_e5m2>() { return {15, 57344.0, 2, 8}; }
template <> inline element_info info<minifloat::float6_e3m2fn>() { return {4, 28.0, 2, 6}; }
template <> inline element_info info<minifloat::float6_e2m3fn>() { return {2, 7.5, 3, 6}; }
template <> inline element_info info<minifloat::float4_e2m1fn>() { return {2, 6.0, 1, 4}; }

inline constexpr std::size_t block = 32;

/// Shared exponent k before clamping, for a finite amax > 0.
template <class Elem>
int unclamped_exponent(double amax, scale_rule rule) {
  const element_info e = info<Elem>();
  const int fl = std::ilogb(amax);  // floor(log2 amax), exact
  switch (rule) {
    case scale_rule::floor: return fl - e.emax;
    case scale_rule::ceil: {
      int c = fl;
      if (std::ldexp(1.0, c) < amax) ++c;  // ceil(log2 amax)
      return c - e.emax;
    }
    case scale_rule::even: {
      const double ulp = std::ldexp(1.0, fl - e.mantissa_bits);  // element ulp in amax's binade
      const double rounded = std::floor(amax / ulp + 0.5) * ulp;  // round half up (exact in double)
      return std::ilogb(rounded) - e.emax;
    }
    case scale_rule::rceil: {
      int k = fl - e.emax - 2;  // below the answer; walk up
      while (amax / std::ldexp(1.0, k) > e.max_value) ++k;
      return k;
    }
    default: break;  // not an MX rule
  }
  return 0;
}

template <class Elem>
std::uint8_t scale_code_for_amax(double amax, scale_rule rule) {
  if (std::isnan(amax) || std::isinf(amax)) return 0xFF;
  amax = std::fabs(amax);
  if (amax == 0) return 0x00;
  int k = unclamped_exponent<Elem>(amax, rule);
  const double p = static_cast<double>(static_cast<float>(minifloat::narrow<Elem>(
      amax / std::ldexp(1.0, k), {minifloat::rounding::nearest_even, minifloat::overflow::saturate})));
  if (std::isinf(static_cast<float>(p * std::ldexp(1.0, k)))) k = unclamped_exponent<Elem>(amax, scale_rule::floor);
  k = std::clamp(k, -127, 127);
  return static_cast<std::uint8_t>(k + 127);
}

struct block_result {
  std::uint8_t scale = 0;
  std::vector<std::uint8_t> codes;  // one code per element, unpacked
};

template <class Elem>
block_result quantize_block(const std::vector<float>& v, scale_rule rule) {
  // 1. amax, with NaN/Inf detection.
  bool non_finite = false;
  double amax = 0;
  for (float x : v) {
    if (std::isnan(x) || std::isinf(x)) non_finite = true;
    else amax = std::max(amax, std::fabs(static_cast<double>(x)));
  }
  block_result r;
  r.codes.assign(v.size(), 0);
  // 2. scale.
  r.scale = non_finite ? std::uint8_t{0xFF} : scale_code_for_amax<Elem>(amax, rule);
  if (r.scale == 0xFF) return r;  // 4. NaN scale: element codes 0
  const double x_scale = std::ldexp(1.0, static_cast<int>(r.scale) - 127);
  // 3. elements.
  for (std::size_t i = 0; i < v.size(); ++i)
    r.codes[i] = minifloat::narrow<Elem>(static_cast<double>(v[i]) / x_scale,
                                         {minifloat::rounding::nearest_even, minifloat::overflow::saturate})
                     .bits();
  return r;
}

template <class Elem>
float dequantize_element(std::uint8_t code, std::uint8_t scale) {
  if (scale == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  const double p = static_cast<double>(static_cast<float>(Elem::from_bits(code)));
  return static_cast<float>(p * std::ldexp(1.0, static_cast<int>(scale) - 127));
}

struct tensor_result {
  std::vector<std::uint8_t> codes;   // row-major, FP4 packed per row (element 2i low nibble)
  std::vector<std::uint8_t> scales;  // plain grid
};

inline std::size_t blocks_of(std::size_t n) { return (n + block - 1) / block; }

/// FP4: element 2i in the low nibble, 2i + 1 in the high nibble, ceil(cols / 2) bytes a row.
template <class Elem>
std::vector<std::uint8_t> pack_rows(const std::vector<std::uint8_t>& unpacked, std::size_t rows, std::size_t cols) {
  if (info<Elem>().bits != 4) return unpacked;
  const std::size_t row_bytes = (cols + 1) / 2;
  std::vector<std::uint8_t> out(rows * row_bytes, 0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const unsigned shift = c % 2 == 0 ? 0U : 4U;
      out[r * row_bytes + c / 2] = static_cast<std::uint8_t>(out[r * row_bytes + c / 2] | ((unpacked[r * cols + c] & 0xFU) << shift));
    }
  return out;
}

/// 32 x 32 tiles: scales over the grid ceil(rows / 32) x ceil(cols / 32), row-major.
template <class Elem>
tensor_result quantize_tensor_2d(const std::vector<float>& x, std::size_t rows, std::size_t cols, scale_rule rule) {
  std::vector<std::uint8_t> unpacked(rows * cols, 0);
  tensor_result t;
  const std::size_t gr = blocks_of(rows), gc = blocks_of(cols);
  t.scales.assign(gr * gc, 0);
  for (std::size_t bi = 0; bi < gr; ++bi)
    for (std::size_t bj = 0; bj < gc; ++bj) {
      std::vector<float> v;
      std::vector<std::size_t> at;
      for (std::size_t r = bi * block; r < std::min(rows, (bi + 1) * block); ++r)
        for (std::size_t c = bj * block; c < std::min(cols, (bj + 1) * block); ++c) v.push_back(x[r * cols + c]), at.push_back(r * cols + c);
      const block_result q = quantize_block<Elem>(v, rule);
      t.scales[bi * gc + bj] = q.scale;
      for (std::size_t i = 0; i < v.size(); ++i) unpacked[at[i]] = q.codes[i];
    }
  t.codes = pack_rows<Elem>(unpacked, rows, cols);
  return t;
}

template <class Elem>
std::vector<float> dequantize_tensor_2d(const tensor_result& t, std::size_t rows, std::size_t cols) {
  std::vector<float> out(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      std::uint8_t code;
      if (info<Elem>().bits == 4) {
        const std::uint8_t byte = t.codes[r * ((cols + 1) / 2) + c / 2];
        code = static_cast<std::uint8_t>(c % 2 == 0 ? byte & 0xFU : byte >> 4);
      } else {
        code = t.codes[r * cols + c];
      }
      out[r * cols + c] = dequantize_element<Elem>(code, t.scales[(r / block) * blocks_of(cols) + c / block]);
    }
  return out;
}

template <class Elem>
tensor_result quantize_tensor(const std::vector<float>& x, std::size_t rows, std::size_t cols, int axis,
                              scale_rule rule) {
  std::vector<std::uint8_t> unpacked(rows * cols, 0);
  tensor_result t;
  if (axis == 1) {
    const std::size_t kb = blocks_of(cols);
    t.scales.assign(rows * kb, 0);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t b = 0; b < kb; ++b) {
        std::vector<float> v;
        for (std::size_t c = b * block; c < std::min(cols, (b + 1) * block); ++c) v.push_back(x[r * cols + c]);
        const block_result q = quantize_block<Elem>(v, rule);
        t.scales[r * kb + b] = q.scale;
        for (std::size_t i = 0; i < v.size(); ++i) unpacked[r * cols + b * block + i] = q.codes[i];
      }
  } else {
    const std::size_t mb = blocks_of(rows);
    t.scales.assign(mb * cols, 0);
    for (std::size_t b = 0; b < mb; ++b)
      for (std::size_t c = 0; c < cols; ++c) {
        std::vector<float> v;
        for (std::size_t r = b * block; r < std::min(rows, (b + 1) * block); ++r) v.push_back(x[r * cols + c]);
        const block_result q = quantize_block<Elem>(v, rule);
        t.scales[b * cols + c] = q.scale;
        for (std::size_t i = 0; i < v.size(); ++i) unpacked[(b * block + i) * cols + c] = q.codes[i];
      }
  }
  if (info<Elem>().bits == 4) {
    const std::size_t row_bytes = (cols + 1) / 2;
    t.codes.assign(rows * row_bytes, 0);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        const unsigned shift = c % 2 == 0 ? 0U : 4U;  // element 2i low nibble, 2i+1 high nibble
        t.codes[r * row_bytes + c / 2] =
            static_cast<std::uint8_t>(t.codes[r * row_bytes + c / 2] | ((unpacked[r * cols + c] & 0xFU) << shift));
      }
  } else {
    t.codes = unpacked;
  }
  return t;
}

template <class Elem>
std::vector<float> dequantize_tensor(const tensor_result& t, std::size_t rows, std::size_t cols, int axis) {
  std::vector<float> out(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      std::uint8_t code;
      if (info<Elem>().bits == 4) {
        const std::uint8_t byte = t.codes[r * ((cols + 1) / 2) + c / 2];
        code = static_cast<std::uint8_t>(c % 2 == 0 ? byte & 0xFU : byte >> 4);
      } else {
        code = t.codes[r * cols + c];
      }
      const std::uint8_t scale = axis == 1 ? t.scales[r * blocks_of(cols) + c / block] : t.scales[(r / block) * cols + c];
      out[r * cols + c] = dequantize_element<Elem>(code, scale);
    }
  return out;
}

/// docs/formats/mx.md#scale-layouts, literally. axis 1: each row's block scales padded with 0 to an even count,
/// (m, kb_pad) = (m, kb_pad / 2, 2). axis 0: (mb, n) grid padded with zero rows to (mb_pad, n),
/// reshaped to (mb_pad / 2, 2, n), transposed to (mb_pad / 2, n, 2).
inline std::vector<std::uint8_t> to_cann(const std::vector<std::uint8_t>& plain, std::size_t rows, std::size_t cols,
                                         int axis) {
  std::vector<std::uint8_t> out;
  if (axis == 1) {
    const std::size_t kb = blocks_of(cols);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t b = 0; b < kb; ++b) out.push_back(plain[r * kb + b]);
      if (kb % 2 == 1) out.push_back(0);
    }
    return out;
  }
  const std::size_t mb = blocks_of(rows);
  std::vector<std::vector<std::uint8_t>> grid(mb, std::vector<std::uint8_t>(cols));
  for (std::size_t b = 0; b < mb; ++b)
    for (std::size_t c = 0; c < cols; ++c) grid[b][c] = plain[b * cols + c];
  if (mb % 2 == 1) grid.emplace_back(cols, std::uint8_t{0});  // pad to even
  // reshape (mb_pad/2, 2, n): pair p = rows 2p, 2p+1; transpose the last two axes.
  for (std::size_t p = 0; p < grid.size() / 2; ++p)
    for (std::size_t c = 0; c < cols; ++c)
      for (std::size_t t = 0; t < 2; ++t) out.push_back(grid[2 * p + t][c]);
  return out;
}

}  // namespace mx_ref
