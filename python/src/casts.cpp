// Casts: the legacy cast functions numpy calls for `astype` (each format's default conversion, the
// SIMD bulk codecs underneath, split over threads for large arrays) and minifloat.cast() with every
// rounding mode and overflow policy.
//
// Which input goes which way:
//   float32, float16, bfloat16 -> T   simd::encode<T> (the dispatching bulk codec; threads above 256 Ki)
//   T -> float32                      simd::decode<T>
//   float64 -> T                      narrow<T>(double): one rounding from the double (never via float32)
//   integers, bool -> T               through double (exact below 2^53), then as float64
//   T -> float64 / float16 / ints     decode to float32 (exact), then numpy's rule for float32
//                                     except: float -> integer is NaN -> 0 and saturates at the
//                                     integer's range (C++ leaves both undefined)
//   T -> U (two minifloat dtypes)     decode to float32 (exact), encode U
//   complex64/128/256 -> T            the real part as float64 / long double above, with numpy's
//                                     ComplexWarning once per cast (numpy's complex -> float32 rule)
//   T -> complex                      (value, 0)
// Large bulk casts run without the GIL, so astype calls of several Python threads overlap.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#include <minifloat/core/random.hpp>
#include <minifloat/formats/convert.hpp>
#include <minifloat/formats/numeric_limits.hpp>
#include <minifloat/formats/packed.hpp>
#include <minifloat/simd/bulk.hpp>
#include <minifloat/simd/threads.hpp>

#include "common.hpp"

namespace minifloat::python {

namespace {

constexpr std::size_t chunk = 2048;

template <class T, class In>
simd::kernel_status bulk_encode(const In* x, code_t<T>* out, std::size_t n, conversion c, const simd::bulk_options& o,
                                unsigned threads) {
  const std::span<const In> in(x, n);
  const std::span<code_t<T>> codes(out, n);
  if (threads > 1) return simd::encode_parallel<T, In>(in, codes, c, threads, o);
  return simd::encode<T>(in, codes, c, o);
}

template <class T>
simd::kernel_status bulk_decode(const code_t<T>* codes, float* out, std::size_t n, unsigned threads) {
  const std::span<const code_t<T>> in(codes, n);
  const std::span<float> values(out, n);
  if (threads > 1) return simd::decode_parallel<T>(in, values, threads);
  return simd::decode<T>(in, values);
}

/// Runs f() without the GIL when the calling thread holds it (numpy calls legacy cast functions
/// with it held) and n is large enough for another Python thread's work to be worth the switch.
/// f touches no Python object.
template <class F>
void without_gil(std::size_t n, F&& f) {
  constexpr std::size_t min_release = std::size_t{1} << 14;
  if (n < min_release || PyGILState_Check() != 1) {
    f();
    return;
  }
  struct released {
    PyThreadState* state = PyEval_SaveThread();
    released() = default;
    released(const released&) = delete;
    released& operator=(const released&) = delete;
    ~released() { PyEval_RestoreThread(state); }
  } guard;
  f();
}

/// npy_half and minifloat::float16 share their bits.
const float16* as_float16(const void* p) noexcept { return static_cast<const float16*>(p); }

// --- legacy cast functions (signature PyArray_VectorUnaryFunc) -------------------------------------

template <class T>
void from_f32(void* from, void* to, npy_intp n, void*, void*) {
  const auto count = static_cast<std::size_t>(n);
  without_gil(count, [&] {
    (void)bulk_encode<T>(static_cast<const float*>(from), static_cast<code_t<T>*>(to), count, conversion{}, {},
                         bulk_threads(count));
  });
}

template <class T>
void from_f16(void* from, void* to, npy_intp n, void*, void*) {
  const auto count = static_cast<std::size_t>(n);
  without_gil(count, [&] {
    (void)bulk_encode<T>(as_float16(from), static_cast<code_t<T>*>(to), count, conversion{}, {},
                         bulk_threads(count));
  });
}

template <class T>
void to_f32(void* from, void* to, npy_intp n, void*, void*) {
  const auto count = static_cast<std::size_t>(n);
  without_gil(count, [&] {
    (void)bulk_decode<T>(static_cast<const code_t<T>*>(from), static_cast<float*>(to), count, bulk_threads(count));
  });
}

/// Calls body(float* values, std::size_t offset, std::size_t count) over chunks of T's codes decoded.
template <class T, class Body>
void decoded_chunks(const void* from, std::size_t n, Body&& body) {
  without_gil(n, [&] {
    std::array<float, chunk> buf;
    const auto* codes = static_cast<const code_t<T>*>(from);
    for (std::size_t i = 0; i < n; i += chunk) {
      const std::size_t m = std::min(chunk, n - i);
      (void)simd::decode<T>(std::span(codes + i, m), std::span(buf.data(), m));
      body(buf.data(), i, m);
    }
  });
}

/// T -> U, both minifloat dtypes.
template <class T, class U>
void minifloat_to_minifloat(void* from, void* to, npy_intp n, void*, void*) {
  const auto count = static_cast<std::size_t>(n);
  auto* out = static_cast<code_t<U>*>(to);
  if constexpr (std::is_same_v<T, bfloat16>) {
    without_gil(count, [&] {
      (void)bulk_encode<U>(static_cast<const bfloat16*>(from), out, count, conversion{}, {}, bulk_threads(count));
    });
  } else {
    decoded_chunks<T>(from, count, [&](const float* v, std::size_t off, std::size_t m) {
      (void)simd::encode<U>(std::span(v, m), std::span(out + off, m));
    });
  }
}

/// numpy's bool, distinct from npy_ubyte (both are unsigned char).
struct bool_tag {};

template <class From, class T>
void from_number(void* from, void* to, npy_intp n, void*, void*) {
  using C = std::conditional_t<std::is_same_v<From, bool_tag>, npy_bool, From>;
  const auto* x = static_cast<const C*>(from);
  auto* out = static_cast<code_t<T>*>(to);
  without_gil(static_cast<std::size_t>(n), [&] {
    for (npy_intp i = 0; i < n; ++i) {
      double d;
      if constexpr (std::is_same_v<From, bool_tag>) d = x[i] != 0 ? 1.0 : 0.0;
      else d = static_cast<double>(x[i]);
      out[i] = encode<T>(d);
    }
  });
}

// --- complex ------------------------------------------------------------------------------------
//
// numpy warns (ComplexWarning) once per complex -> float32 cast, however many calls of the cast
// function the cast takes (one per row, or one per element when strided). A legacy cast function
// sees only the calls; what identifies the cast is the 1-element source array numpy makes for it
// and passes to every call. Its address is remembered until it dies (a weak reference's
// callback forgets it), so a later cast reusing the address warns again. Without that array
// (a caller passing none, or one that takes no weak reference) every call warns.

PyObject* complex_warning_category = nullptr;  // numpy's ComplexWarning, set by register_casts()

struct warned_cast {
  PyObject* array;  // borrowed: only compared, never dereferenced
  PyObject* ref;    // owned weak reference whose callback erases this entry
};
std::vector<warned_cast> warned_casts;  // guarded by the GIL

PyObject* forget_warned_cast(PyObject*, PyObject* ref) {
  for (auto it = warned_casts.begin(); it != warned_casts.end(); ++it) {
    if (it->ref == ref) {
      PyObject* owned = it->ref;
      warned_casts.erase(it);
      Py_DECREF(owned);
      break;
    }
  }
  Py_RETURN_NONE;
}

PyMethodDef forget_warned_cast_def = {"_forget_warned_cast", forget_warned_cast, METH_O, nullptr};
PyObject* forget_warned_cast_callback = nullptr;  // set by register_casts()

/// With the GIL held: true if this cast already warned, else remembers it (when it can).
bool already_warned(PyObject* array) {
  if (array == nullptr) return false;
  for (const auto& w : warned_casts)
    if (w.array == array) return true;
  PyObject* ref = PyWeakref_NewRef(array, forget_warned_cast_callback);
  if (ref == nullptr) {
    PyErr_Clear();
    return false;
  }
  try {
    warned_casts.push_back({array, ref});
  } catch (const std::bad_alloc&) {
    Py_DECREF(ref);
  }
  return false;
}

/// Issues the ComplexWarning for the cast whose source array is `fromarr`. Returns false when the
/// warning was turned into an error (the exception is then set for numpy to raise).
bool complex_warning(void* fromarr) {
  const PyGILState_STATE gil = PyGILState_Ensure();  // numpy may call casts without the GIL
  bool ok = true;
  if (PyErr_Occurred() != nullptr) {
    ok = false;  // an earlier call of this cast already failed: leave its error
  } else if (!already_warned(static_cast<PyObject*>(fromarr))) {
    ok = PyErr_WarnEx(complex_warning_category, "Casting complex values to real discards the imaginary part", 1) == 0;
  }
  PyGILState_Release(gil);
  return ok;
}

template <class C, class T>
void from_complex(void* from, void* to, npy_intp n, void* fromarr, void*) {
  if (!complex_warning(fromarr)) return;
  const auto* x = static_cast<const C*>(from);
  auto* out = static_cast<code_t<T>*>(to);
  without_gil(static_cast<std::size_t>(n), [&] {
    for (npy_intp i = 0; i < n; ++i) out[i] = encode<T>(static_cast<double>(x[i].real));
  });
}

template <class To>
auto float_to(float v) noexcept {
  if constexpr (std::is_same_v<To, bool_tag>) {
    return static_cast<npy_bool>(v != 0.0f ? NPY_TRUE : NPY_FALSE);
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(v);
  } else {
    // Saturating truncation; NaN -> 0. The bounds are powers of two, exact in float. Out-of-range
    // values are replaced before the conversion so that no lane of a vectorised loop converts
    // one (that would raise FE_INVALID, which numpy reports as a RuntimeWarning).
    constexpr int digits = std::numeric_limits<To>::digits;
    const float hi = std::ldexp(1.0f, digits);
    const float lo = std::is_signed_v<To> ? -hi : 0.0f;
    // NaN is replaced before the comparisons: relational operators raise FE_INVALID on it.
    const bool nan = std::isnan(v);
    const float w = nan ? 0.0f : v;
    const bool high = w >= hi, low = w <= lo;
    const To r = static_cast<To>(nan || high || low ? 0.0f : w);
    return high ? std::numeric_limits<To>::max() : low ? std::numeric_limits<To>::min() : nan ? To{0} : r;
  }
}

template <class T, class To>
void to_number(void* from, void* to, npy_intp n, void*, void*) {
  auto* out = static_cast<std::conditional_t<std::is_same_v<To, bool_tag>, npy_bool, To>*>(to);
  decoded_chunks<T>(from, static_cast<std::size_t>(n), [&](const float* v, std::size_t off, std::size_t m) {
    for (std::size_t j = 0; j < m; ++j) out[off + j] = float_to<To>(v[j]);
  });
}

template <class T, class C>
void to_complex(void* from, void* to, npy_intp n, void*, void*) {
  auto* out = static_cast<C*>(to);
  decoded_chunks<T>(from, static_cast<std::size_t>(n), [&](const float* v, std::size_t off, std::size_t m) {
    for (std::size_t j = 0; j < m; ++j) {
      out[off + j].real = v[j];
      out[off + j].imag = 0;
    }
  });
}

template <class T>
void to_f16(void* from, void* to, npy_intp n, void*, void*) {
  auto* out = static_cast<std::uint16_t*>(to);
  decoded_chunks<T>(from, static_cast<std::size_t>(n), [&](const float* v, std::size_t off, std::size_t m) {
    (void)simd::encode<float16>(std::span(v, m), std::span(out + off, m));
  });
}

template <class T, class C>
void register_number_casts(int typenum) {
  const descr_ref other(typenum);
  check_registration(PyArray_RegisterCastFunc(other.d, dtype_slot<T>::typenum, from_number<C, T>));
  check_registration(PyArray_RegisterCastFunc(dtype_slot<T>::descr, typenum, to_number<T, C>));
}

template <class T, class C>
void register_complex_casts(int typenum) {
  const descr_ref other(typenum);
  check_registration(PyArray_RegisterCastFunc(other.d, dtype_slot<T>::typenum, from_complex<C, T>));
  check_registration(PyArray_RegisterCastFunc(dtype_slot<T>::descr, typenum, to_complex<T, C>));
}

template <class T>
void register_casts_of() {
  const int me = dtype_slot<T>::typenum;
  PyArray_Descr* self = dtype_slot<T>::descr;
  {
    const descr_ref f32(NPY_FLOAT), f16(NPY_HALF);
    check_registration(PyArray_RegisterCastFunc(f32.d, me, from_f32<T>));
    check_registration(PyArray_RegisterCastFunc(self, NPY_FLOAT, to_f32<T>));
    check_registration(PyArray_RegisterCastFunc(f16.d, me, from_f16<T>));
    check_registration(PyArray_RegisterCastFunc(self, NPY_HALF, to_f16<T>));
  }
  register_number_casts<T, double>(NPY_DOUBLE);
  register_number_casts<T, long double>(NPY_LONGDOUBLE);
  register_number_casts<T, bool_tag>(NPY_BOOL);
  register_number_casts<T, npy_byte>(NPY_BYTE);
  register_number_casts<T, npy_ubyte>(NPY_UBYTE);
  register_number_casts<T, npy_short>(NPY_SHORT);
  register_number_casts<T, npy_ushort>(NPY_USHORT);
  register_number_casts<T, npy_int>(NPY_INT);
  register_number_casts<T, npy_uint>(NPY_UINT);
  register_number_casts<T, npy_long>(NPY_LONG);
  register_number_casts<T, npy_ulong>(NPY_ULONG);
  register_number_casts<T, npy_longlong>(NPY_LONGLONG);
  register_number_casts<T, npy_ulonglong>(NPY_ULONGLONG);
  for_each_dtype([&](auto tag) {
    using U = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, U>)
      check_registration(PyArray_RegisterCastFunc(self, dtype_slot<U>::typenum, minifloat_to_minifloat<T, U>));
  });
  register_complex_casts<T, npy_cfloat>(NPY_CFLOAT);
  register_complex_casts<T, npy_cdouble>(NPY_CDOUBLE);
  register_complex_casts<T, npy_clongdouble>(NPY_CLONGDOUBLE);
  // Safe casts (np.can_cast, numpy's promotion): ml_dtypes' table for every float dtype, so that
  // promotion picks the same loops: every value is a float32, so float32 and the wider floats
  // and complex types hold it; bool, int8 and uint8 cast safely to the dtype (ml_dtypes' rule,
  // not an exactness claim: 255 is no float4_e2m1fn). No safe cast to float16 or between two
  // minifloat dtypes, again as ml_dtypes (docs/python.md lists this among the dtype contracts).
  for (int wider : {NPY_FLOAT, NPY_DOUBLE, NPY_LONGDOUBLE, NPY_CFLOAT, NPY_CDOUBLE, NPY_CLONGDOUBLE})
    check_registration(PyArray_RegisterCanCast(self, wider, NPY_NOSCALAR));
  for (int narrow : {NPY_BOOL, NPY_BYTE, NPY_UBYTE}) {
    const descr_ref from(narrow);
    check_registration(PyArray_RegisterCanCast(from.d, me, NPY_NOSCALAR));
  }
}

// --- minifloat.cast ------------------------------------------------------------------------------

void throw_status(simd::kernel_status s, const char* who) {
  try {
    simd::check(s, who);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
}

/// x as a C-contiguous aligned array of one of the dtypes cast() reads directly (float32, float64,
/// float16, bfloat16); other minifloat dtypes widen to float32 and integers to float64, exactly.
py::array cast_input(const py::handle& x) {
  PyObject* arr = PyArray_FROM_OF(x.ptr(), NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
  if (arr == nullptr) throw py::error_already_set();
  auto a = py::reinterpret_steal<py::array>(arr);
  const int t = PyArray_TYPE(reinterpret_cast<PyArrayObject*>(arr));
  if (t == NPY_FLOAT || t == NPY_DOUBLE || t == NPY_HALF || t == dtype_slot<bfloat16>::typenum) return a;
  int to = NPY_NOTYPE;
  if (format_of_typenum(t)) to = NPY_FLOAT;
  else if (PyTypeNum_ISINTEGER(t) || PyTypeNum_ISBOOL(t)) to = NPY_DOUBLE;
  if (to == NPY_NOTYPE) {
    const std::string name = py::str(a.dtype());
    if (t == NPY_LONGDOUBLE)
      throw py::type_error("cast: long double input is not supported (no exact path); convert it to float64 first");
    throw py::type_error("cast: expected a float32, float64, float16 or bfloat16 array (or integers, or another "
                         "minifloat dtype), got dtype " + name);
  }
  PyObject* c = PyArray_CastToType(reinterpret_cast<PyArrayObject*>(arr), PyArray_DescrFromType(to), 0);
  if (c == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::array>(c);
}

template <class T>
void cast_run(const py::array& in, py::array& out, conversion c, const simd::bulk_options& o, unsigned threads) {
  const int t = PyArray_TYPE(reinterpret_cast<PyArrayObject*>(in.ptr()));
  const auto n = static_cast<std::size_t>(in.size());
  const void* src = PyArray_DATA(reinterpret_cast<PyArrayObject*>(in.ptr()));
  auto* dst = static_cast<code_t<T>*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(out.ptr())));
  const unsigned th = bulk_threads(n, threads);
  simd::kernel_status s = simd::kernel_status::ok;
  {
    py::gil_scoped_release release;
    if (t == NPY_FLOAT) {
      s = bulk_encode<T>(static_cast<const float*>(src), dst, n, c, o, th);
    } else if (t == NPY_HALF) {
      s = bulk_encode<T>(as_float16(src), dst, n, c, o, th);
    } else if (t == dtype_slot<bfloat16>::typenum) {
      s = bulk_encode<T>(static_cast<const bfloat16*>(src), dst, n, c, o, th);
    } else {  // float64: the scalar codec, one rounding from the double
      const auto* x = static_cast<const double*>(src);
      const bool stochastic = c.round == rounding::stochastic;
      simd::parallel_for(n, th, 4096, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i)
          dst[i] = encode<T>(x[i], c, stochastic ? random_bits(o.seed, o.first_index + i) : 0U);
      });
    }
  }
  throw_status(s, "cast");
}

py::array cast_array(const py::handle& x, const py::handle& dtype, const std::string& round,
                     const std::string& on_overflow, std::uint64_t seed, const std::string& isa, unsigned threads) {
  const format_id target = parse_format_arg(dtype, "cast");
  const conversion c{parse_rounding_arg(round, "cast"), parse_overflow_arg(on_overflow, "cast")};
  simd::bulk_options o;
  o.path = parse_isa_arg(isa, "cast");
  o.seed = seed;
  const py::array in = cast_input(x);
  auto* ia = reinterpret_cast<PyArrayObject*>(in.ptr());
  PyObject* out_obj = PyArray_Empty(PyArray_NDIM(ia), PyArray_DIMS(ia), PyArray_DescrFromType(typenum_of(target)), 0);
  if (out_obj == nullptr) throw py::error_already_set();
  auto out = py::reinterpret_steal<py::array>(out_obj);
  visit_format(target, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cast_run<T>(in, out, c, o, threads);
  });
  return out;
}

py::array c_contiguous_u8(const py::handle& x, const char* who, int also_typenum) {
  PyObject* arr = PyArray_FROM_OF(x.ptr(), NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
  if (arr == nullptr) throw py::error_already_set();
  auto a = py::reinterpret_steal<py::array>(arr);
  const int t = PyArray_TYPE(reinterpret_cast<PyArrayObject*>(arr));
  if (t != NPY_UBYTE && t != also_typenum)
    throw py::type_error(std::string(who) + ": expected a uint8 array" +
                         (also_typenum == NPY_NOTYPE ? std::string() : std::string(" or float4_e2m1fn array")) +
                         ", got dtype " + std::string(py::str(a.dtype())));
  if (a.ndim() == 0) throw py::value_error(std::string(who) + ": expected at least one dimension, got a 0-d array");
  return a;
}

/// FP4 codes (..., n) -> nibble pairs (..., ceil(n / 2)), element 2i in the low nibble.
py::array pack_fp4(const py::handle& x) {
  const py::array a = c_contiguous_u8(x, "pack_fp4", dtype_slot<float4_e2m1fn>::typenum);
  const auto nd = static_cast<std::size_t>(a.ndim());
  std::vector<npy_intp> shape(a.shape(), a.shape() + nd);
  const auto n = static_cast<std::size_t>(shape.back());
  const std::size_t rows = n == 0 ? 0 : static_cast<std::size_t>(a.size()) / n;
  const std::size_t pb = (n + 1) / 2;
  shape.back() = static_cast<npy_intp>(pb);
  py::array out(py::dtype("uint8"), std::vector<py::ssize_t>(shape.begin(), shape.end()));
  const auto* src = static_cast<const std::uint8_t*>(a.data());
  auto* dst = static_cast<std::uint8_t*>(out.mutable_data());
  {
    py::gil_scoped_release release;
    for (std::size_t r = 0; r < rows; ++r)
      (void)simd::pack_nibbles(std::span(src + r * n, n), std::span(dst + r * pb, pb));
  }
  return out;
}

/// Nibble pairs (..., ceil(n / 2)) -> FP4 codes (..., n) as a float4_e2m1fn array.
py::array unpack_fp4(const py::handle& x, std::size_t n) {
  const py::array a = c_contiguous_u8(x, "unpack_fp4", NPY_NOTYPE);
  const auto nd = static_cast<std::size_t>(a.ndim());
  std::vector<npy_intp> shape(a.shape(), a.shape() + nd);
  const auto pb = static_cast<std::size_t>(shape.back());
  if (pb != (n + 1) / 2)
    throw py::value_error("unpack_fp4: " + std::to_string(n) + " codes per row need " + std::to_string((n + 1) / 2) +
                          " bytes, the last axis has " + std::to_string(pb));
  const std::size_t rows = pb == 0 ? 0 : static_cast<std::size_t>(a.size()) / pb;
  shape.back() = static_cast<npy_intp>(n);
  PyObject* o = PyArray_Empty(static_cast<int>(nd), shape.data(), PyArray_DescrFromType(dtype_slot<float4_e2m1fn>::typenum), 0);
  if (o == nullptr) throw py::error_already_set();
  auto out = py::reinterpret_steal<py::array>(o);
  const auto* src = static_cast<const std::uint8_t*>(a.data());
  auto* dst = static_cast<std::uint8_t*>(out.mutable_data());
  {
    py::gil_scoped_release release;
    for (std::size_t r = 0; r < rows; ++r)
      (void)simd::unpack_nibbles(std::span(src + r * pb, pb), std::span(dst + r * n, n));
  }
  return out;
}

template <class T>
py::dict limits_of() {
  using S = typename T::spec;
  using L = std::numeric_limits<T>;
  py::dict d;
  d["name"] = std::string(format_name<T>);
  d["bits"] = sizeof_bits<T>;
  d["itemsize"] = static_cast<int>(sizeof(code_t<T>));
  d["digits"] = L::digits;
  d["is_signed"] = L::is_signed;
  d["has_inf"] = L::has_infinity;
  d["has_nan"] = L::has_quiet_NaN;
  d["has_subnormals"] = S::has_subnormals;
  d["max"] = static_cast<double>(L::max());
  d["lowest"] = static_cast<double>(L::lowest());
  d["min_normal"] = static_cast<double>(L::min());
  d["denorm_min"] = static_cast<double>(L::denorm_min());
  d["epsilon"] = static_cast<double>(L::epsilon());
  d["min_exponent"] = L::min_exponent;
  d["max_exponent"] = L::max_exponent;
  d["max_code"] = static_cast<unsigned>(S::max_code);
  d["min_normal_code"] = static_cast<unsigned>(S::min_normal_code);
  d["denorm_min_code"] = static_cast<unsigned>(S::denorm_min_code);
  d["nan_code"] = L::has_quiet_NaN ? py::object(py::int_(static_cast<unsigned>(S::nan_code))) : py::object(py::none());
  d["inf_code"] = L::has_infinity ? py::object(py::int_(static_cast<unsigned>(S::inf_code))) : py::object(py::none());
  d["nearest_rule"] = std::string(to_string(S::nearest_rule));
  return d;
}

}  // namespace

void register_casts() {
  // numpy 1.24 has ComplexWarning at the top level; numpy.exceptions holds it from 1.25 on.
  py::module_ numpy = py::module_::import("numpy");
  py::object category = py::hasattr(numpy, "exceptions") && py::hasattr(numpy.attr("exceptions"), "ComplexWarning")
                            ? numpy.attr("exceptions").attr("ComplexWarning")
                            : numpy.attr("ComplexWarning");
  complex_warning_category = category.release().ptr();  // kept for the process lifetime
  forget_warned_cast_callback = PyCFunction_New(&forget_warned_cast_def, nullptr);  // likewise
  if (forget_warned_cast_callback == nullptr) throw py::error_already_set();
  for_each_dtype([](auto tag) { register_casts_of<typename decltype(tag)::type>(); });
}

void bind_cast(py::module_& m) {
  m.def("cast", &cast_array, py::arg("x"), py::arg("dtype"), py::arg("round") = "nearest",
        py::arg("overflow") = "non_saturating", py::arg("seed") = 0, py::kw_only(), py::arg("isa") = "automatic",
        py::arg("threads") = 0,
        R"doc(Rounds x to a minifloat dtype under an explicit policy; returns an array of that dtype.

x: float32, float64, float16 or bfloat16 (read as they are, one rounding each; other minifloat
dtypes widen to float32 and integers to float64 first, exactly). Any shape; C-contiguous float32 /
float16 / bfloat16 input is read in place (no copy).
dtype: hifloat8, float8_e4m3fn, float8_e5m2, float8_e8m0fnu, float6_e3m2fn, float6_e2m3fn,
float4_e2m1fn, bfloat16 or float16 (a name, the scalar type or a numpy dtype).
round: nearest (the format's own: ties-away for hifloat8, ties-to-even otherwise), nearest_even,
nearest_away, toward_zero, upward, downward, stochastic.
overflow: non_saturating (Inf, or NaN where the format has no Inf), saturate (+-max; NaN stays
NaN), saturate_nan_to_zero (also NaN -> 0).
seed: stochastic rounding only: element i (C order) uses random_bits(seed, i), so the result does
not depend on the ISA path or the thread count.
isa: force a kernel level (automatic, scalar, avx2, avx512); threads: 0 = the package default
(minifloat.set_num_threads), used for arrays of 256 Ki elements and more.
The GIL is released while the kernel runs.)doc");
  m.def("pack_fp4", &pack_fp4, py::arg("codes"),
        "Packs float4_e2m1fn codes (uint8 or float4_e2m1fn array, last axis n) two per byte: element 2i "
        "in the low nibble, 2i+1 in the high nibble; the last axis becomes ceil(n / 2).");
  m.def("unpack_fp4", &unpack_fp4, py::arg("packed"), py::arg("n"),
        "Unpacks nibble pairs (uint8, last axis ceil(n / 2)) into n float4_e2m1fn codes per row.");
  m.def("set_num_threads", [](unsigned n) { set_default_threads(n); }, py::arg("n"),
        "Threads the bulk kernels (astype, cast) use for arrays of 256 Ki elements and more; 0 = all "
        "hardware threads (the default).");
  m.def("get_num_threads", &default_threads, "Threads the bulk kernels use for large arrays.");
  m.def("simd_isa", [] { return std::string(simd::to_string(simd::detected_isa())); },
        "The ISA level the kernels run at on this CPU (MINIFLOAT_MAX_ISA caps it).");
  m.def("available_isas", [] {
    std::vector<std::string> v;
    for (auto i : {simd::isa::avx512, simd::isa::avx2, simd::isa::neon, simd::isa::scalar})
      if (simd::isa_available(i)) v.emplace_back(simd::to_string(i));
    return v;
  }, "Every ISA level this CPU can run, widest first.");
  m.def("_limits", [](const py::handle& dtype) {
    py::dict d;
    visit_format(parse_format_arg(dtype, "finfo"), [&](auto tag) { d = limits_of<typename decltype(tag)::type>(); });
    return d;
  }, py::arg("dtype"));
}

}  // namespace minifloat::python
