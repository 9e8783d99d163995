// numpy ufunc loops for every minifloat dtype, with numpy's float64 semantics: a loop widens the
// element values exactly to double, computes what numpy's float64 loop computes (the same
// formulas, so the same special cases and floating-point flags, which numpy turns into its
// RuntimeWarnings), and rounds the result once to the format with its default conversion. So a
// result is the float64 result rounded to the format; computing in float32 first, as ml_dtypes
// does, would round twice (sin, exp, pow, bfloat16 sums and quotients: the float32 result can land
// on a midpoint of the format's grid the exact result is not on).
//
// Comparisons are by value (NaN unordered, -0 == +0; HiF8 code order is not value order);
// isnan / isinf / isfinite / signbit read the code. copysign, nextafter and spacing work on the
// codes: they have no float64 counterpart in the format (ml_dtypes' definitions, see each one).
//
// Element-wise loops decode a chunk of codes with the SIMD bulk decoder, compute in double, and
// encode the chunk with the bulk encoder from float32 values rounded *to odd* from the double
// results (to_float_odd): a float32 has at least two bits more than any format's significand, so
// rounding that float32 to the format gives exactly the double's rounding (the round-to-odd
// property), and the bulk encoder is bit-identical to the scalar one. A loop whose output stride
// is 0 is a reduction (np.add.reduce, np.maximum.reduce): it runs element by element through the
// scalar codec, since each step reads the previous result.
#include <algorithm>
#include <array>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <minifloat/formats/convert.hpp>
#include <minifloat/formats/unpacked.hpp>
#include <minifloat/simd/bulk.hpp>

#include "common.hpp"

namespace minifloat::python {

namespace {

constexpr std::size_t chunk = 1024;

// --- codes <-> values ----------------------------------------------------------------------------

template <class T>
void gather_decode(const char* p, npy_intp stride, std::size_t n, float* out) {
  if (stride == static_cast<npy_intp>(sizeof(code_t<T>))) {
    (void)simd::decode<T>(std::span(reinterpret_cast<const code_t<T>*>(p), n), std::span(out, n));
    return;
  }
  std::array<code_t<T>, chunk> codes;
  for (std::size_t i = 0; i < n; ++i) std::memcpy(&codes[i], p + static_cast<npy_intp>(i) * stride, sizeof(code_t<T>));
  (void)simd::decode<T>(std::span(codes.data(), n), std::span(out, n));
}

template <class T>
void encode_scatter(const float* v, std::size_t n, char* p, npy_intp stride) {
  if (stride == static_cast<npy_intp>(sizeof(code_t<T>))) {
    (void)simd::encode<T>(std::span(v, n), std::span(reinterpret_cast<code_t<T>*>(p), n));
    return;
  }
  std::array<code_t<T>, chunk> codes;
  (void)simd::encode<T>(std::span(v, n), std::span(codes.data(), n));
  for (std::size_t i = 0; i < n; ++i) std::memcpy(p + static_cast<npy_intp>(i) * stride, &codes[i], sizeof(code_t<T>));
}

/// The float32 nearest to d *rounded to odd*: d itself when it is a float32, otherwise the float32
/// just below |d| in magnitude with its last bit forced to 1 (sign kept; beyond the float32 range
/// FLT_MAX, below it the smallest subnormal). Between two consecutive float32 values there is no
/// point of any format's grid or midpoint (all have at most 17 significant bits and lie within
/// float32's range), so the format rounds the odd value as it rounds d. Integer arithmetic only:
/// no floating-point flag is raised here.
inline float to_float_odd(double d) noexcept {
  const auto b = std::bit_cast<std::uint64_t>(d);
  const auto sign = static_cast<std::uint32_t>(b >> 32) & 0x8000'0000U;
  const int biased = static_cast<int>((b >> 52) & 0x7FF);
  const std::uint64_t frac = b & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0x7FF) return static_cast<float>(d);  // Inf, NaN: exact, quiet
  if (biased == 0) return std::bit_cast<float>(sign | (frac != 0 ? 1U : 0U));  // double subnormal: tiny
  const int e = biased - 1023;
  if (e > 127) return std::bit_cast<float>(sign | 0x7F7F'FFFFU);  // FLT_MAX, odd
  const std::uint64_t sig = frac | (std::uint64_t{1} << 52);
  // float32 keeps 24 bits of a normal (drop 29), fewer below 2^-126.
  const int drop = e >= -126 ? 29 : 29 + (-126 - e);
  std::uint32_t bits;
  bool sticky;
  if (drop >= 64) {
    bits = 0;
    sticky = true;
  } else {
    const std::uint64_t kept = sig >> drop;
    sticky = (sig & ((std::uint64_t{1} << drop) - 1)) != 0;
    // A normal's kept part includes the leading one, which the exponent field absorbs.
    bits = e >= -126 ? (static_cast<std::uint32_t>(e + 127) << 23) | static_cast<std::uint32_t>(kept & 0x7F'FFFFU)
                     : static_cast<std::uint32_t>(kept);
  }
  return std::bit_cast<float>(sign | bits | (sticky ? 1U : 0U));
}

/// The element's code; bits above the format's width (a uint8 array viewed as FP4) are dropped, as
/// every decoder does, so a code can index the per-code tables.
template <class T>
code_t<T> load_code(const char* p) noexcept {
  code_t<T> c;
  std::memcpy(&c, p, sizeof c);
  return T::from_bits(c).bits();
}
template <class T>
void store_code(char* p, code_t<T> c) noexcept {
  std::memcpy(p, &c, sizeof c);
}
template <class T>
double value(code_t<T> c) noexcept {
  return static_cast<double>(static_cast<float>(T::from_bits(c)));
}
template <class T>
double load_value(const char* p) noexcept {
  return value<T>(load_code<T>(p));
}
/// One rounding from the double (the scalar reference codec).
template <class T>
code_t<T> round_to(double v) noexcept {
  return encode<T>(v);
}
template <class T>
void store_value(char* p, double v) noexcept {
  store_code<T>(p, round_to<T>(v));
}

// --- loop shapes ---------------------------------------------------------------------------------

/// (T, T) -> T
template <class T, class Op>
void binary_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  const npy_intp n = dims[0];
  char *a = args[0], *b = args[1], *out = args[2];
  if (steps[2] == 0) {  // reduction into one element
    for (npy_intp i = 0; i < n; ++i) store_value<T>(out, Op{}(load_value<T>(a + i * steps[0]), load_value<T>(b + i * steps[1])));
    return;
  }
  std::array<float, chunk> x, y;
  for (npy_intp i = 0; i < n; i += static_cast<npy_intp>(chunk)) {
    const auto m = static_cast<std::size_t>(std::min<npy_intp>(static_cast<npy_intp>(chunk), n - i));
    gather_decode<T>(a + i * steps[0], steps[0], m, x.data());
    gather_decode<T>(b + i * steps[1], steps[1], m, y.data());
    for (std::size_t j = 0; j < m; ++j) x[j] = to_float_odd(Op{}(static_cast<double>(x[j]), static_cast<double>(y[j])));
    encode_scatter<T>(x.data(), m, out + i * steps[2], steps[2]);
  }
}

/// T -> T
template <class T, class Op>
void unary_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  const npy_intp n = dims[0];
  std::array<float, chunk> x;
  for (npy_intp i = 0; i < n; i += static_cast<npy_intp>(chunk)) {
    const auto m = static_cast<std::size_t>(std::min<npy_intp>(static_cast<npy_intp>(chunk), n - i));
    gather_decode<T>(args[0] + i * steps[0], steps[0], m, x.data());
    for (std::size_t j = 0; j < m; ++j) x[j] = to_float_odd(Op{}(static_cast<double>(x[j])));
    encode_scatter<T>(x.data(), m, args[1] + i * steps[1], steps[1]);
  }
}

/// (T, T) -> bool
template <class T, class Op>
void compare_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  const npy_intp n = dims[0];
  std::array<float, chunk> x, y;
  for (npy_intp i = 0; i < n; i += static_cast<npy_intp>(chunk)) {
    const auto m = static_cast<std::size_t>(std::min<npy_intp>(static_cast<npy_intp>(chunk), n - i));
    gather_decode<T>(args[0] + i * steps[0], steps[0], m, x.data());
    gather_decode<T>(args[1] + i * steps[1], steps[1], m, y.data());
    char* out = args[2] + i * steps[2];
    for (std::size_t j = 0; j < m; ++j)
      out[static_cast<npy_intp>(j) * steps[2]] = static_cast<char>(Op{}(x[j], y[j]) ? 1 : 0);
  }
}

/// T -> bool, from the value
template <class T, class Op>
void predicate_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  const npy_intp n = dims[0];
  std::array<float, chunk> x;
  for (npy_intp i = 0; i < n; i += static_cast<npy_intp>(chunk)) {
    const auto m = static_cast<std::size_t>(std::min<npy_intp>(static_cast<npy_intp>(chunk), n - i));
    gather_decode<T>(args[0] + i * steps[0], steps[0], m, x.data());
    char* out = args[1] + i * steps[1];
    for (std::size_t j = 0; j < m; ++j) out[static_cast<npy_intp>(j) * steps[1]] = static_cast<char>(Op{}(x[j]) ? 1 : 0);
  }
}

/// T -> bool, from the code (classification: the format's own NaN / Inf codes)
template <class T, bool (*Pred)(T)>
void code_predicate_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i)
    args[1][i * steps[1]] = static_cast<char>(Pred(T::from_bits(load_code<T>(args[0] + i * steps[0]))) ? 1 : 0);
}

/// (T, T) -> T on the codes, one element at a time (reductions included: each input is read
/// before the output is written).
template <class T, code_t<T> (*Fn)(code_t<T>, code_t<T>)>
void code_binary_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i)
    store_code<T>(args[2] + i * steps[2], Fn(load_code<T>(args[0] + i * steps[0]), load_code<T>(args[1] + i * steps[1])));
}

/// T -> T on the codes
template <class T, code_t<T> (*Fn)(code_t<T>)>
void code_unary_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i) store_code<T>(args[1] + i * steps[1], Fn(load_code<T>(args[0] + i * steps[0])));
}

template <class T>
bool is_nan_code(T x) { return minifloat::isnan(x); }
template <class T>
bool is_inf_code(T x) { return minifloat::isinf(x); }
template <class T>
bool is_finite_code(T x) { return minifloat::isfinite(x); }
template <class T>
bool sign_bit_code(T x) {
  // numpy's signbit of the element's float value: -0 and negative values, and the NaN codes that
  // decode to -NaN (E4M3FN's 0xFF; the fnuz formats' only NaN 0x80, as ml_dtypes reports it);
  // HiF8's single NaN 0x80 decodes to +NaN.
  return std::signbit(static_cast<float>(x));
}

// --- float operations, in double -----------------------------------------------------------------

// Orderings are compared as integers: the relational operators raise FE_INVALID on NaN, and GCC
// if-converts even NaN-guarded float comparisons into vector compares over every lane, which
// numpy would report as a RuntimeWarning where float64 gives none. key() orders the non-NaN
// doubles like their values, -0 equal to +0.
inline std::int64_t key(double v) noexcept {
  std::int64_t b = std::bit_cast<std::int64_t>(v);
  if ((b & 0x7FFF'FFFF'FFFF'FFFF) == 0) b = 0;
  return b < 0 ? (b ^ 0x7FFF'FFFF'FFFF'FFFF) : b;
}

/// numpy's float64 divmod for b != 0 (npy_divmod): the quotient rounded to an integer value and
/// the remainder with the divisor's sign, so that floor_divide(1, -inf) is -1 and
/// remainder(1, -inf) is -inf. std::isless / isgreater are quiet on NaN, as numpy's.
inline std::pair<double, double> divmod_nonzero(double a, double b) noexcept {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0) {
    if (std::isless(b, 0.0) != std::isless(mod, 0.0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (std::isgreater(div - floordiv, 0.5)) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
  return {floordiv, mod};
}

struct add_op { double operator()(double a, double b) const { return a + b; } };
struct subtract_op { double operator()(double a, double b) const { return a - b; } };
struct multiply_op { double operator()(double a, double b) const { return a * b; } };
struct divide_op { double operator()(double a, double b) const { return a / b; } };
struct power_op { double operator()(double a, double b) const { return std::pow(a, b); } };
struct fmod_op { double operator()(double a, double b) const { return std::fmod(a, b); } };
struct remainder_op {  // Python's %: the result takes the sign of the divisor
  double operator()(double a, double b) const { return b == 0.0 ? std::fmod(a, b) : divmod_nonzero(a, b).second; }
};
struct floor_divide_op {
  double operator()(double a, double b) const {
    if (b != 0.0) return divmod_nonzero(a, b).first;
    // numpy reports NaN // 0 as invalid and Inf // 0 as a division by zero, though the quotients
    // themselves raise nothing.
    if (std::isnan(a)) std::feraiseexcept(FE_INVALID);
    if (std::isinf(a)) std::feraiseexcept(FE_DIVBYZERO);
    return a / b;
  }
};

struct maximum_op {  // NaN propagates
  double operator()(double a, double b) const {
    return std::isnan(a) ? a : std::isnan(b) ? b : key(a) >= key(b) ? a : b;
  }
};
struct minimum_op {
  double operator()(double a, double b) const {
    return std::isnan(a) ? a : std::isnan(b) ? b : key(a) <= key(b) ? a : b;
  }
};
struct fmax_op {  // NaN ignored
  double operator()(double a, double b) const {
    return std::isnan(b) ? a : std::isnan(a) ? b : key(a) >= key(b) ? a : b;
  }
};
struct fmin_op {
  double operator()(double a, double b) const {
    return std::isnan(b) ? a : std::isnan(a) ? b : key(a) <= key(b) ? a : b;
  }
};
struct arctan2_op { double operator()(double a, double b) const { return std::atan2(a, b); } };
struct hypot_op { double operator()(double a, double b) const { return std::hypot(a, b); } };
/// numpy's logaddexp compares a NaN difference with 0 by the signalling `>`, which numpy reports as
/// an invalid value: the same warning here, where the comparisons are quiet.
inline double nan_operand(double d) noexcept {
  std::feraiseexcept(FE_INVALID);
  return d;
}
struct logaddexp_op {  // numpy's npy_logaddexp
  double operator()(double a, double b) const {
    if (a == b) return a + std::numbers::ln2;  // also +-inf
    const double d = a - b;
    if (std::isgreater(d, 0.0)) return a + std::log1p(std::exp(-d));
    if (std::islessequal(d, 0.0)) return b + std::log1p(std::exp(d));
    return nan_operand(d);
  }
};
struct logaddexp2_op {  // numpy's npy_logaddexp2
  double operator()(double a, double b) const {
    if (a == b) return a + 1.0;
    const double d = a - b;
    if (std::isgreater(d, 0.0)) return a + std::numbers::log2e * std::log1p(std::exp2(-d));
    if (std::islessequal(d, 0.0)) return b + std::numbers::log2e * std::log1p(std::exp2(d));
    return nan_operand(d);
  }
};
struct heaviside_op {
  double operator()(double a, double b) const {
    if (std::isnan(a)) return a;
    return key(a) < 0 ? 0.0 : key(a) > 0 ? 1.0 : b;
  }
};

struct negative_op { double operator()(double a) const { return -a; } };
struct positive_op { double operator()(double a) const { return a; } };
struct absolute_op { double operator()(double a) const { return std::fabs(a); } };
struct sign_op {  // numpy: sign(-0) is +0
  double operator()(double a) const {
    return std::isnan(a) ? a : key(a) > 0 ? 1.0 : key(a) < 0 ? -1.0 : 0.0;
  }
};
struct rint_op { double operator()(double a) const { return std::nearbyint(a); } };
struct floor_op { double operator()(double a) const { return std::floor(a); } };
struct ceil_op { double operator()(double a) const { return std::ceil(a); } };
struct trunc_op { double operator()(double a) const { return std::trunc(a); } };
struct sqrt_op { double operator()(double a) const { return std::sqrt(a); } };
struct cbrt_op { double operator()(double a) const { return std::cbrt(a); } };
struct square_op { double operator()(double a) const { return a * a; } };
struct reciprocal_op { double operator()(double a) const { return 1.0 / a; } };
struct exp_op { double operator()(double a) const { return std::exp(a); } };
struct exp2_op { double operator()(double a) const { return std::exp2(a); } };
struct expm1_op { double operator()(double a) const { return std::expm1(a); } };
struct log_op { double operator()(double a) const { return std::log(a); } };
struct log2_op { double operator()(double a) const { return std::log2(a); } };
struct log10_op { double operator()(double a) const { return std::log10(a); } };
struct log1p_op { double operator()(double a) const { return std::log1p(a); } };
struct sin_op { double operator()(double a) const { return std::sin(a); } };
struct cos_op { double operator()(double a) const { return std::cos(a); } };
struct tan_op { double operator()(double a) const { return std::tan(a); } };
struct arcsin_op { double operator()(double a) const { return std::asin(a); } };
struct arccos_op { double operator()(double a) const { return std::acos(a); } };
struct arctan_op { double operator()(double a) const { return std::atan(a); } };
struct sinh_op { double operator()(double a) const { return std::sinh(a); } };
struct cosh_op { double operator()(double a) const { return std::cosh(a); } };
struct tanh_op { double operator()(double a) const { return std::tanh(a); } };
struct arcsinh_op { double operator()(double a) const { return std::asinh(a); } };
struct arccosh_op { double operator()(double a) const { return std::acosh(a); } };
struct arctanh_op { double operator()(double a) const { return std::atanh(a); } };
// numpy's constants: x * (pi / 180) and x * (180 / pi), each a double.
struct deg2rad_op { double operator()(double a) const { return a * (std::numbers::pi / 180.0); } };
struct rad2deg_op { double operator()(double a) const { return a * (180.0 / std::numbers::pi); } };

struct equal_op { bool operator()(float a, float b) const { return a == b; } };
struct not_equal_op { bool operator()(float a, float b) const { return a != b; } };
inline bool ordered(double a, double b) noexcept { return !std::isnan(a) && !std::isnan(b); }
struct less_op { bool operator()(double a, double b) const { return ordered(a, b) && key(a) < key(b); } };
struct less_equal_op { bool operator()(double a, double b) const { return ordered(a, b) && key(a) <= key(b); } };
struct greater_op { bool operator()(double a, double b) const { return ordered(a, b) && key(a) > key(b); } };
struct greater_equal_op { bool operator()(double a, double b) const { return ordered(a, b) && key(a) >= key(b); } };
struct logical_and_op { bool operator()(float a, float b) const { return a != 0.0f && b != 0.0f; } };
struct logical_or_op { bool operator()(float a, float b) const { return a != 0.0f || b != 0.0f; } };
struct logical_xor_op { bool operator()(float a, float b) const { return (a != 0.0f) != (b != 0.0f); } };
struct logical_not_op { bool operator()(float a) const { return a == 0.0f; } };

// --- operations on codes -------------------------------------------------------------------------

/// The neighbours of every code in value order: up[c] is the code of the smallest value above c's,
/// down[c] the code of the largest value below it (a zero reached from below keeps the sign it
/// came with where the format has -0, as numpy's nextafter does; otherwise +0). Built from the
/// decoded values, so tapered HiF8 (code order is not value order), the fnuz formats (no -0) and
/// E8M0 (no zero) need no case of their own. Filled at registration, before any loop runs.
template <class T>
struct neighbours {
  std::vector<code_t<T>> up, down;
};
template <class T>
inline neighbours<T> neighbour_table;

template <class T>
void build_neighbours() {
  using S = typename T::spec;
  constexpr std::size_t n = std::size_t{1} << S::bits;
  std::vector<std::pair<double, code_t<T>>> order;  // each non-NaN value once (+0 for the zeros)
  std::optional<code_t<T>> negative_zero;
  for (std::size_t c = 0; c < n; ++c) {
    const auto code = static_cast<code_t<T>>(c);
    if (S::is_nan(code)) continue;
    const double v = value<T>(code);
    if (v == 0.0 && std::signbit(v)) {
      negative_zero = code;
      continue;
    }
    order.emplace_back(v, code);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  auto& t = neighbour_table<T>;
  t.up.assign(n, 0);
  t.down.assign(n, 0);
  const auto below = [&](double v) { return v < 0.0; };
  for (std::size_t c = 0; c < n; ++c) {
    const auto code = static_cast<code_t<T>>(c);
    t.up[c] = t.down[c] = code;  // NaN, and the ends of the order: never asked
    if (S::is_nan(code)) continue;
    const double v = value<T>(code);
    const auto hi = std::upper_bound(order.begin(), order.end(), v,
                                     [](double x, const auto& e) { return x < e.first; });
    if (hi != order.end())
      t.up[c] = hi->first == 0.0 && below(v) && negative_zero ? *negative_zero : hi->second;
    const auto lo = std::lower_bound(order.begin(), order.end(), v,
                                     [](const auto& e, double x) { return e.first < x; });
    if (lo != order.begin()) t.down[c] = std::prev(lo)->second;
  }
}

/// copysign as a sign-bit operation (ml_dtypes' definition), NaN included: copysign(NaN, -1) is
/// the NaN code with the sign bit where that is a NaN too (E4M3FN 0xFF, E5M2). Where the sign bit
/// over a zero magnitude is the NaN (HiF8 0x80, the fnuz formats) a zero stays +0 and the NaN stays
/// NaN. The sign taken is np.signbit's of the second operand. Unsigned E8M0 has only + values, so
/// the result is the first operand (as in ml_dtypes).
template <class T>
code_t<T> copysign_code(code_t<T> a, code_t<T> b) {
  using S = typename T::spec;
  if constexpr (S::sign_mask == 0) {
    return a;
  } else {
    const bool negative = sign_bit_code(T::from_bits(b));
    const auto c = static_cast<code_t<T>>((a & static_cast<code_t<T>>(~S::sign_mask)) | (negative ? S::sign_mask : 0U));
    return S::is_nan(a) != S::is_nan(c) ? a : c;
  }
}

/// nextafter(x, y): the format's next value after x toward y. NaN in either gives the NaN;
/// x == y (by value, -0 == +0) gives y; from zero, the smallest value of y's sign.
template <class T>
code_t<T> nextafter_code(code_t<T> x, code_t<T> y) {
  using S = typename T::spec;
  if (S::is_nan(x) || S::is_nan(y)) return S::nan_code;
  const double vx = value<T>(x), vy = value<T>(y);
  if (vx == vy) return y;
  return vx < vy ? neighbour_table<T>.up[x] : neighbour_table<T>.down[x];
}

/// spacing(x) = nextafter(x, away from zero) - x, rounded to the format, with x's sign (so
/// spacing(-0) = -denorm_min, as ml_dtypes; numpy's float64 gives +denorm_min there). NaN and Inf
/// give NaN; at the largest finite magnitude Inf where the format has Inf (Inf - max), else a NaN
/// of x's sign, or 0 in the formats without NaN (ml_dtypes' answers).
template <class T>
code_t<T> spacing_code(code_t<T> x) {
  using S = typename T::spec;
  if constexpr (S::has_nan) {
    if (S::is_nan(x) || S::is_inf(x)) return S::nan_code;
  }
  const bool negative = sign_bit_code(T::from_bits(x));
  if constexpr (!S::has_inf) {
    if (std::fabs(value<T>(x)) == value<T>(S::max_code)) {
      if constexpr (S::has_nan) return copysign_code<T>(S::nan_code, x);
      else return S::zero_code;
    }
  }
  const code_t<T> next = negative ? neighbour_table<T>.down[x] : neighbour_table<T>.up[x];
  return round_to<T>(value<T>(next) - value<T>(x));  // exact: adjacent values (or Inf - max)
}

// --- loops with other operand types --------------------------------------------------------------

/// ldexp(x, n) for (T, I) -> T: x * 2^n exactly, rounded once (the exponent is added to the
/// unpacked value, so no intermediate double can overflow or lose subnormal bits).
template <class T, class I>
void ldexp_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  constexpr I limit = 1 << 20;  // far beyond every format's range, far from int overflow
  for (npy_intp i = 0; i < dims[0]; ++i) {
    I n;
    std::memcpy(&n, args[1] + i * steps[1], sizeof n);
    auto u = detail::unpack(load_value<T>(args[0] + i * steps[0]));
    if (u.kind == detail::value_kind::finite) u.exp += static_cast<int>(std::clamp<I>(n, -limit, limit));
    store_code<T>(args[2] + i * steps[2], T::spec::encode(u, conversion{}, 0));
  }
}

/// frexp: T -> (T mantissa in [0.5, 1) rounded to the format, int32 exponent); zero, Inf and NaN
/// give themselves and exponent 0, as numpy.
template <class T>
void frexp_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i) {
    const double v = load_value<T>(args[0] + i * steps[0]);
    int e = 0;
    const double m = std::isfinite(v) && v != 0.0 ? std::frexp(v, &e) : v;
    const auto e32 = static_cast<npy_int>(e);
    store_value<T>(args[1] + i * steps[1], m);
    std::memcpy(args[2] + i * steps[2], &e32, sizeof e32);
  }
}

/// modf: T -> (fractional part, integral part), each rounded to the format.
template <class T>
void modf_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i) {
    double integral = 0.0;
    const double fractional = std::modf(load_value<T>(args[0] + i * steps[0]), &integral);
    store_value<T>(args[1] + i * steps[1], fractional);
    store_value<T>(args[2] + i * steps[2], integral);
  }
}

/// divmod: (T, T) -> (floor_divide, remainder), the two loops' results.
template <class T>
void divmod_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i) {
    const double a = load_value<T>(args[0] + i * steps[0]), b = load_value<T>(args[1] + i * steps[1]);
    // b == 0: numpy's a / b and fmod(a, 0) (NaN, invalid).
    const auto [q, r] = b != 0.0 ? divmod_nonzero(a, b) : std::pair{a / b, std::fmod(a, b)};
    store_value<T>(args[2] + i * steps[2], q);
    store_value<T>(args[3] + i * steps[3], r);
  }
}

// --- registration --------------------------------------------------------------------------------

void add_loop(PyObject* numpy, const char* name, int typenum, PyUFuncGenericFunction f, std::initializer_list<int> types) {
  PyObject* u = PyObject_GetAttrString(numpy, name);
  if (u == nullptr) throw py::error_already_set();
  auto* uf = reinterpret_cast<PyUFuncObject*>(u);
  if (!PyObject_TypeCheck(u, &PyUFunc_Type) || uf->nargs != static_cast<int>(types.size())) {
    Py_DECREF(u);
    throw py::type_error(std::string("minifloat: numpy.") + name + " is not a ufunc of " +
                         std::to_string(types.size()) + " operands; expected numpy's own");
  }
  std::array<int, 4> t{};
  std::copy(types.begin(), types.end(), t.begin());
  const int rc = PyUFunc_RegisterLoopForType(uf, typenum, f, t.data(), nullptr);
  Py_DECREF(u);
  if (rc < 0) throw py::error_already_set();
}

template <class T>
void register_ufuncs_of(PyObject* np) {
  build_neighbours<T>();
  const int t = dtype_slot<T>::typenum;
  const int b = NPY_BOOL;
  const auto bin = [&](const char* name, PyUFuncGenericFunction f) { add_loop(np, name, t, f, {t, t, t}); };
  const auto un = [&](const char* name, PyUFuncGenericFunction f) { add_loop(np, name, t, f, {t, t}); };
  const auto cmp = [&](const char* name, PyUFuncGenericFunction f) { add_loop(np, name, t, f, {t, t, b}); };
  const auto pred = [&](const char* name, PyUFuncGenericFunction f) { add_loop(np, name, t, f, {t, b}); };
  bin("add", binary_loop<T, add_op>);
  bin("subtract", binary_loop<T, subtract_op>);
  bin("multiply", binary_loop<T, multiply_op>);
  bin("true_divide", binary_loop<T, divide_op>);
  bin("floor_divide", binary_loop<T, floor_divide_op>);
  bin("power", binary_loop<T, power_op>);
  bin("remainder", binary_loop<T, remainder_op>);
  bin("fmod", binary_loop<T, fmod_op>);
  bin("maximum", binary_loop<T, maximum_op>);
  bin("minimum", binary_loop<T, minimum_op>);
  bin("fmax", binary_loop<T, fmax_op>);
  bin("fmin", binary_loop<T, fmin_op>);
  bin("copysign", code_binary_loop<T, copysign_code<T>>);
  bin("nextafter", code_binary_loop<T, nextafter_code<T>>);
  bin("arctan2", binary_loop<T, arctan2_op>);
  bin("hypot", binary_loop<T, hypot_op>);
  bin("logaddexp", binary_loop<T, logaddexp_op>);
  bin("logaddexp2", binary_loop<T, logaddexp2_op>);
  bin("heaviside", binary_loop<T, heaviside_op>);
  add_loop(np, "divmod", t, divmod_loop<T>, {t, t, t, t});
  // Both integer widths numpy's own ldexp takes ('i' and 'l'); numpy picks the loop an integer
  // operand casts to safely, so an int64 exponent is never narrowed.
  add_loop(np, "ldexp", t, ldexp_loop<T, npy_int>, {t, NPY_INT, t});
  add_loop(np, "ldexp", t, ldexp_loop<T, npy_long>, {t, NPY_LONG, t});
  add_loop(np, "frexp", t, frexp_loop<T>, {t, t, NPY_INT});
  add_loop(np, "modf", t, modf_loop<T>, {t, t, t});
  un("spacing", code_unary_loop<T, spacing_code<T>>);
  un("negative", unary_loop<T, negative_op>);
  un("positive", unary_loop<T, positive_op>);
  un("absolute", unary_loop<T, absolute_op>);
  un("fabs", unary_loop<T, absolute_op>);
  un("sign", unary_loop<T, sign_op>);
  un("rint", unary_loop<T, rint_op>);
  un("floor", unary_loop<T, floor_op>);
  un("ceil", unary_loop<T, ceil_op>);
  un("trunc", unary_loop<T, trunc_op>);
  un("sqrt", unary_loop<T, sqrt_op>);
  un("cbrt", unary_loop<T, cbrt_op>);
  un("square", unary_loop<T, square_op>);
  un("reciprocal", unary_loop<T, reciprocal_op>);
  un("conjugate", unary_loop<T, positive_op>);
  un("exp", unary_loop<T, exp_op>);
  un("exp2", unary_loop<T, exp2_op>);
  un("expm1", unary_loop<T, expm1_op>);
  un("log", unary_loop<T, log_op>);
  un("log2", unary_loop<T, log2_op>);
  un("log10", unary_loop<T, log10_op>);
  un("log1p", unary_loop<T, log1p_op>);
  un("sin", unary_loop<T, sin_op>);
  un("cos", unary_loop<T, cos_op>);
  un("tan", unary_loop<T, tan_op>);
  un("arcsin", unary_loop<T, arcsin_op>);
  un("arccos", unary_loop<T, arccos_op>);
  un("arctan", unary_loop<T, arctan_op>);
  un("sinh", unary_loop<T, sinh_op>);
  un("cosh", unary_loop<T, cosh_op>);
  un("tanh", unary_loop<T, tanh_op>);
  un("arcsinh", unary_loop<T, arcsinh_op>);
  un("arccosh", unary_loop<T, arccosh_op>);
  un("arctanh", unary_loop<T, arctanh_op>);
  un("deg2rad", unary_loop<T, deg2rad_op>);
  un("radians", unary_loop<T, deg2rad_op>);
  un("rad2deg", unary_loop<T, rad2deg_op>);
  un("degrees", unary_loop<T, rad2deg_op>);
  cmp("equal", compare_loop<T, equal_op>);
  cmp("not_equal", compare_loop<T, not_equal_op>);
  cmp("less", compare_loop<T, less_op>);
  cmp("less_equal", compare_loop<T, less_equal_op>);
  cmp("greater", compare_loop<T, greater_op>);
  cmp("greater_equal", compare_loop<T, greater_equal_op>);
  cmp("logical_and", compare_loop<T, logical_and_op>);
  cmp("logical_or", compare_loop<T, logical_or_op>);
  cmp("logical_xor", compare_loop<T, logical_xor_op>);
  pred("logical_not", predicate_loop<T, logical_not_op>);
  pred("isnan", code_predicate_loop<T, is_nan_code<T>>);
  pred("isinf", code_predicate_loop<T, is_inf_code<T>>);
  pred("isfinite", code_predicate_loop<T, is_finite_code<T>>);
  pred("signbit", code_predicate_loop<T, sign_bit_code<T>>);
}

}  // namespace

void register_ufuncs() {
  py::module_ numpy = py::module_::import("numpy");
  for_each_dtype([&](auto tag) { register_ufuncs_of<typename decltype(tag)::type>(numpy.ptr()); });
}

}  // namespace minifloat::python
