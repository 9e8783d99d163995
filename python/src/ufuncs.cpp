// numpy ufunc loops for every minifloat dtype. Arithmetic is computed in float32 from the exact
// element values and rounded once back to the format with its default conversion, as ml_dtypes
// does; comparisons are by value (NaN unordered, -0 == +0; HiF8 code order is not value order);
// isnan / isinf / isfinite / signbit read the code.
//
// Loops decode a chunk of codes with the SIMD bulk decoder, apply the float operation, and
// encode the chunk with the bulk encoder. A loop whose output stride is 0 is a reduction
// (np.add.reduce, np.maximum.reduce): it runs element by element, since each step reads the
// previous result.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>

#include <minifloat/formats/convert.hpp>
#include <minifloat/simd/bulk.hpp>

#include "common.hpp"

namespace minifloat::python {

namespace {

constexpr std::size_t chunk = 1024;

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

template <class T>
float load_value(const char* p) noexcept {
  code_t<T> c;
  std::memcpy(&c, p, sizeof c);
  return static_cast<float>(T::from_bits(c));
}
template <class T>
void store_value(char* p, float v) noexcept {
  const code_t<T> c = encode<T>(v);
  std::memcpy(p, &c, sizeof c);
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
    for (std::size_t j = 0; j < m; ++j) x[j] = Op{}(x[j], y[j]);
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
    for (std::size_t j = 0; j < m; ++j) x[j] = Op{}(x[j]);
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
  for (npy_intp i = 0; i < dims[0]; ++i) {
    code_t<T> c;
    std::memcpy(&c, args[0] + i * steps[0], sizeof c);
    args[1][i * steps[1]] = static_cast<char>(Pred(T::from_bits(c)) ? 1 : 0);
  }
}

template <class T>
bool is_nan_code(T x) { return minifloat::isnan(x); }
template <class T>
bool is_inf_code(T x) { return minifloat::isinf(x); }
template <class T>
bool is_finite_code(T x) { return minifloat::isfinite(x); }
template <class T>
bool sign_bit_code(T x) {
  // numpy's signbit of the element's float32 value: -0 and negative values (and E4M3's 0xFF,
  // which decodes to -NaN); HiF8's single NaN 0x80 decodes to +NaN.
  return std::signbit(static_cast<float>(x));
}

// --- float operations ----------------------------------------------------------------------------

// Orderings are compared as integers: the relational operators raise FE_INVALID on NaN, and GCC
// if-converts even NaN-guarded float comparisons into vector compares over every lane, which
// numpy would report as a RuntimeWarning where float32 gives none. key() orders the non-NaN
// floats like their values, -0 equal to +0.
inline std::int32_t key(float v) noexcept {
  std::int32_t b = std::bit_cast<std::int32_t>(v);
  if ((b & 0x7FFFFFFF) == 0) b = 0;
  return b < 0 ? (b ^ 0x7FFFFFFF) : b;
}


struct add_op { float operator()(float a, float b) const { return a + b; } };
struct subtract_op { float operator()(float a, float b) const { return a - b; } };
struct multiply_op { float operator()(float a, float b) const { return a * b; } };
struct divide_op { float operator()(float a, float b) const { return a / b; } };
struct power_op { float operator()(float a, float b) const { return std::pow(a, b); } };
struct fmod_op { float operator()(float a, float b) const { return std::fmod(a, b); } };
struct remainder_op {  // Python's %: the result takes the sign of the divisor
  float operator()(float a, float b) const {
    if (b == 0.0f) return std::fmod(a, b);
    float r = std::fmod(a, b);
    if (r != 0.0f && ((key(r) < 0) != (key(b) < 0))) r += b;
    return r == 0.0f ? std::copysign(0.0f, b) : r;
  }
};
struct floor_divide_op {
  float operator()(float a, float b) const {
    if (b == 0.0f) return a / b;
    const float r = remainder_op{}(a, b);
    return std::round((a - r) / b);
  }
};

struct maximum_op {  // NaN propagates
  float operator()(float a, float b) const {
    return std::isnan(a) ? a : std::isnan(b) ? b : key(a) >= key(b) ? a : b;
  }
};
struct minimum_op {
  float operator()(float a, float b) const {
    return std::isnan(a) ? a : std::isnan(b) ? b : key(a) <= key(b) ? a : b;
  }
};
struct fmax_op {  // NaN ignored
  float operator()(float a, float b) const {
    return std::isnan(b) ? a : std::isnan(a) ? b : key(a) >= key(b) ? a : b;
  }
};
struct fmin_op {
  float operator()(float a, float b) const {
    return std::isnan(b) ? a : std::isnan(a) ? b : key(a) <= key(b) ? a : b;
  }
};
struct copysign_op { float operator()(float a, float b) const { return std::copysign(a, b); } };
struct arctan2_op { float operator()(float a, float b) const { return std::atan2(a, b); } };
struct hypot_op { float operator()(float a, float b) const { return std::hypot(a, b); } };
struct logaddexp_op {
  float operator()(float a, float b) const {
    if (a == b) return a + std::log(2.0f);  // also +-inf
    const float m = key(a) > key(b) ? a : b, d = -std::fabs(a - b);
    return std::isnan(d) ? a + b : m + std::log1p(std::exp(d));
  }
};
struct logaddexp2_op {
  float operator()(float a, float b) const {
    if (a == b) return a + 1.0f;
    const float m = key(a) > key(b) ? a : b, d = -std::fabs(a - b);
    return std::isnan(d) ? a + b : m + std::log1p(std::exp2(d)) / std::numbers::ln2_v<float>;
  }
};
struct heaviside_op {
  float operator()(float a, float b) const {
    if (std::isnan(a)) return a;
    return key(a) < 0 ? 0.0f : key(a) > 0 ? 1.0f : b;
  }
};

struct negative_op { float operator()(float a) const { return -a; } };
struct positive_op { float operator()(float a) const { return a; } };
struct absolute_op { float operator()(float a) const { return std::fabs(a); } };
struct sign_op {
  float operator()(float a) const {
    return std::isnan(a) ? a : key(a) > 0 ? 1.0f : key(a) < 0 ? -1.0f : 0.0f;
  }
};
struct rint_op { float operator()(float a) const { return std::nearbyint(a); } };
struct floor_op { float operator()(float a) const { return std::floor(a); } };
struct ceil_op { float operator()(float a) const { return std::ceil(a); } };
struct trunc_op { float operator()(float a) const { return std::trunc(a); } };
struct sqrt_op { float operator()(float a) const { return std::sqrt(a); } };
struct cbrt_op { float operator()(float a) const { return std::cbrt(a); } };
struct square_op { float operator()(float a) const { return a * a; } };
struct reciprocal_op { float operator()(float a) const { return 1.0f / a; } };
struct exp_op { float operator()(float a) const { return std::exp(a); } };
struct exp2_op { float operator()(float a) const { return std::exp2(a); } };
struct expm1_op { float operator()(float a) const { return std::expm1(a); } };
struct log_op { float operator()(float a) const { return std::log(a); } };
struct log2_op { float operator()(float a) const { return std::log2(a); } };
struct log10_op { float operator()(float a) const { return std::log10(a); } };
struct log1p_op { float operator()(float a) const { return std::log1p(a); } };
struct sin_op { float operator()(float a) const { return std::sin(a); } };
struct cos_op { float operator()(float a) const { return std::cos(a); } };
struct tan_op { float operator()(float a) const { return std::tan(a); } };
struct arcsin_op { float operator()(float a) const { return std::asin(a); } };
struct arccos_op { float operator()(float a) const { return std::acos(a); } };
struct arctan_op { float operator()(float a) const { return std::atan(a); } };
struct sinh_op { float operator()(float a) const { return std::sinh(a); } };
struct cosh_op { float operator()(float a) const { return std::cosh(a); } };
struct tanh_op { float operator()(float a) const { return std::tanh(a); } };
struct arcsinh_op { float operator()(float a) const { return std::asinh(a); } };
struct arccosh_op { float operator()(float a) const { return std::acosh(a); } };
struct arctanh_op { float operator()(float a) const { return std::atanh(a); } };
struct deg2rad_op { float operator()(float a) const { return a * (std::numbers::pi_v<float> / 180.0f); } };
struct rad2deg_op { float operator()(float a) const { return a * (180.0f / std::numbers::pi_v<float>); } };

struct equal_op { bool operator()(float a, float b) const { return a == b; } };
struct not_equal_op { bool operator()(float a, float b) const { return a != b; } };
inline bool ordered(float a, float b) noexcept { return !std::isnan(a) && !std::isnan(b); }
struct less_op { bool operator()(float a, float b) const { return ordered(a, b) && key(a) < key(b); } };
struct less_equal_op { bool operator()(float a, float b) const { return ordered(a, b) && key(a) <= key(b); } };
struct greater_op { bool operator()(float a, float b) const { return ordered(a, b) && key(a) > key(b); } };
struct greater_equal_op { bool operator()(float a, float b) const { return ordered(a, b) && key(a) >= key(b); } };
struct logical_and_op { bool operator()(float a, float b) const { return a != 0.0f && b != 0.0f; } };
struct logical_or_op { bool operator()(float a, float b) const { return a != 0.0f || b != 0.0f; } };
struct logical_xor_op { bool operator()(float a, float b) const { return (a != 0.0f) != (b != 0.0f); } };
struct logical_not_op { bool operator()(float a) const { return a == 0.0f; } };

// --- registration --------------------------------------------------------------------------------

void add_loop(PyObject* numpy, const char* name, int typenum, PyUFuncGenericFunction f, std::initializer_list<int> types) {
  PyObject* u = PyObject_GetAttrString(numpy, name);
  if (u == nullptr) throw py::error_already_set();
  std::array<int, 3> t{};
  std::copy(types.begin(), types.end(), t.begin());
  const int rc = PyUFunc_RegisterLoopForType(reinterpret_cast<PyUFuncObject*>(u), typenum, f, t.data(), nullptr);
  Py_DECREF(u);
  if (rc < 0) throw py::error_already_set();
}

template <class T>
void register_ufuncs_of(PyObject* np) {
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
  bin("copysign", binary_loop<T, copysign_op>);
  bin("arctan2", binary_loop<T, arctan2_op>);
  bin("hypot", binary_loop<T, hypot_op>);
  bin("logaddexp", binary_loop<T, logaddexp_op>);
  bin("logaddexp2", binary_loop<T, logaddexp2_op>);
  bin("heaviside", binary_loop<T, heaviside_op>);
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
