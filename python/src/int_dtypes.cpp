// The narrow integer dtypes int2, int4, uint2, uint4: one value per byte in the low N bits (the
// upper bits are written as zero and ignored when read, so `.view(np.uint8)` shows the N-bit
// code), with ml_dtypes' semantics, which users of `import minifloat as ml_dtypes` rely on:
//
//   from a Python int / str        wraps to N bits (int4(9) == -7, int4("0x1f") == -1)
//   from a float (Python or numpy) truncates toward zero; NaN is ValueError for a Python float;
//                                  a value outside [min, max] (or Inf) is OverflowError
//   from a numpy integer scalar    OverflowError outside [min, max]
//   arithmetic                     wraps (int4(7) + int4(1) == -8); // and % by zero raise
//                                  ZeroDivisionError on scalars, give 0 and numpy's divide-by-zero
//                                  FP status (a RuntimeWarning under np.errstate) on arrays
//   array casts (astype)           never raise: integers keep their low N bits; floats truncate
//                                  toward zero, NaN, +-Inf and values outside int32 become 0, then
//                                  wrap; complex takes the real part with numpy's ComplexWarning
//
// Safe casts (np.can_cast) are ml_dtypes' table: int2 -> int4 -> int8 ... int64, float16 ...
// complex; uint2 -> uint4 -> uint8 ... and int8 ...; bool -> every narrow integer; every narrow
// integer -> every minifloat float dtype it has a cast to. numpy's legacy dtype API calls any cast
// between two one-byte user dtypes of the same kind safe, so a narrowing cast between two narrow
// integers (int4 -> int2) is left unregistered as in ml_dtypes, rather than being called safe.
#include <cfenv>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include <minifloat/formats/convert.hpp>

#include "int_dtypes.hpp"

namespace minifloat::python {

namespace {

template <int Bits, bool Signed>
struct narrow_int {
  static constexpr int bits = Bits;
  static constexpr bool is_signed = Signed;
  static constexpr unsigned mask = (1U << Bits) - 1U;
  static constexpr long long lowest = Signed ? -(1LL << (Bits - 1)) : 0;
  static constexpr long long highest = Signed ? (1LL << (Bits - 1)) - 1 : static_cast<long long>(mask);
};

// The dtype characters (`np.dtype(x).char`) are ml_dtypes', so code that tests them sees the same
// (numpy does not look user dtypes up by character; ml_dtypes shares 'C' with float8_e5m2fnuz too).
struct int2_t : narrow_int<2, true> {
  static constexpr const char* name = "int2";
  static constexpr char type_char = 'c';
};
struct uint2_t : narrow_int<2, false> {
  static constexpr const char* name = "uint2";
  static constexpr char type_char = 'C';
};
struct int4_t : narrow_int<4, true> {
  static constexpr const char* name = "int4";
  static constexpr char type_char = 'a';
};
struct uint4_t : narrow_int<4, false> {
  static constexpr const char* name = "uint4";
  static constexpr char type_char = 'A';
};

using int_types = std::tuple<int2_t, uint2_t, int4_t, uint4_t>;

template <class F>
void for_each_int(F&& f) {
  [&]<class... I>(std::tuple<I...>*) { (f(type_tag<I>{}), ...); }(static_cast<int_types*>(nullptr));
}

/// What numpy knows about one narrow integer dtype; filled in by register_one().
template <class I>
struct int_slot {
  static inline int typenum = NPY_NOTYPE;
  static inline PyTypeObject* scalar_type = nullptr;
  static inline PyArray_Descr* descr = nullptr;  // kept for the process lifetime
  static inline PyArray_ArrFuncs funcs;
  static inline PyArray_Descr proto;  // numpy 1.x keeps a pointer to it
};

/// The scalar: the layout numpy's PyArray_Scalar writes for a one-byte user dtype.
struct py_int {
  PyObject_HEAD
  std::uint8_t code;
};

PyObject* complex_warning_type = nullptr;  // numpy's ComplexWarning, a strong reference

// --- values ----------------------------------------------------------------------------------------

template <class I>
constexpr std::uint8_t wrap(long long v) noexcept {
  return static_cast<std::uint8_t>(static_cast<unsigned long long>(v) & I::mask);
}

template <class I>
constexpr int value_of(std::uint8_t code) noexcept {
  const int c = static_cast<int>(code & I::mask);
  if constexpr (I::is_signed) return (c & (1 << (I::bits - 1))) != 0 ? c - (1 << I::bits) : c;
  return c;
}

static_assert(value_of<int4_t>(wrap<int4_t>(9)) == -7 && value_of<int4_t>(wrap<int4_t>(-8)) == -8);
static_assert(value_of<uint2_t>(wrap<uint2_t>(-1)) == 3 && value_of<int2_t>(0xFE) == -2);

/// A float as an array cast reads it: truncated toward zero; NaN, +-Inf and values outside the
/// int32 range give 0 (ml_dtypes' rule; converting them would be undefined behaviour in C++).
template <class F>
long long float_to_int(F v) noexcept {
  const auto lo = static_cast<F>(std::numeric_limits<int>::lowest());
  const auto hi = static_cast<F>(std::numeric_limits<int>::max());
  // Quiet comparisons (false for NaN): an ordinary comparison or a conversion of NaN raises
  // FE_INVALID, which numpy reports after the cast as "invalid value encountered". The value is
  // replaced before the conversion so that no vectorised lane converts an out-of-range one.
  const bool in_range = std::isgreaterequal(v, lo) && std::islessequal(v, hi);
  const F w = in_range ? v : F(0);
  return static_cast<long long>(w);
}

template <class I>
std::uint8_t load(const void* p) noexcept {
  std::uint8_t c;
  std::memcpy(&c, p, 1);
  return c;
}

template <class I>
bool is_scalar(PyObject* o) {
  return PyObject_TypeCheck(o, int_slot<I>::scalar_type) != 0;
}

template <class I>
std::uint8_t code_of(PyObject* o) noexcept {
  return reinterpret_cast<py_int*>(o)->code;
}

template <class I>
PyObject* make_scalar(std::uint8_t code) {
  PyTypeObject* t = int_slot<I>::scalar_type;
  PyObject* o = t->tp_alloc(t, 0);
  if (o != nullptr) reinterpret_cast<py_int*>(o)->code = static_cast<std::uint8_t>(code & I::mask);
  return o;
}

/// Any of the narrow integer scalars: its value.
std::optional<long long> any_int_scalar(PyObject* o) {
  std::optional<long long> r;
  for_each_int([&](auto tag) {
    using J = typename decltype(tag)::type;
    if (!r && int_slot<J>::scalar_type != nullptr && is_scalar<J>(o)) r = value_of<J>(code_of<J>(o));
  });
  return r;
}

template <class I>
bool out_of_range(long double v) {  // also NaN; quiet comparisons, as in float_to_int
  return !(std::isgreaterequal(v, static_cast<long double>(I::lowest)) &&
           std::islessequal(v, static_cast<long double>(I::highest)));
}

template <class I>
bool set_out_of_range() {
  PyErr_Format(PyExc_OverflowError, "%s: out of range value; expected a value in [%lld, %lld]", I::name, I::lowest,
               I::highest);
  return false;
}

/// A Python object -> code with ml_dtypes' scalar rules. Returns false with a Python error set.
template <class I>
bool to_code(PyObject* o, std::uint8_t& out) {
  if (is_scalar<I>(o)) {
    out = code_of<I>(o);
    return true;
  }
  if (auto v = any_int_scalar(o)) {
    if (out_of_range<I>(static_cast<long double>(*v))) return set_out_of_range<I>();
    out = wrap<I>(*v);
    return true;
  }
  if (PyLong_Check(o)) {  // also bool; wraps, like ml_dtypes
    const long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred() != nullptr) return false;
    out = wrap<I>(v);
    return true;
  }
  if (PyFloat_Check(o)) {
    const double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred() != nullptr) return false;
    if (std::isnan(d)) {
      PyErr_Format(PyExc_ValueError, "%s: cannot convert float NaN to integer; expected a finite value", I::name);
      return false;
    }
    if (out_of_range<I>(static_cast<long double>(d))) return set_out_of_range<I>();  // also +-Inf
    out = wrap<I>(static_cast<long long>(d));
    return true;
  }
  if (PyArray_Check(o) && PyArray_NDIM(reinterpret_cast<PyArrayObject*>(o)) == 0) {
    auto* a = reinterpret_cast<PyArrayObject*>(o);
    PyObject* s = PyArray_Scalar(PyArray_DATA(a), PyArray_DESCR(a), o);
    if (s == nullptr) return false;
    const bool ok = to_code<I>(s, out);
    Py_DECREF(s);
    return ok;
  }
  if (PyArray_IsScalar(o, Bool)) {
    out = wrap<I>(PyObject_IsTrue(o) == 1 ? 1 : 0);
    return true;
  }
  if (PyArray_IsScalar(o, Integer)) {
    PyObject* l = PyNumber_Long(o);
    if (l == nullptr) return false;
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(l, &overflow);
    Py_DECREF(l);
    if (v == -1 && PyErr_Occurred() != nullptr) return false;
    if (overflow != 0 || out_of_range<I>(static_cast<long double>(v))) return set_out_of_range<I>();
    out = wrap<I>(v);
    return true;
  }
  if (PyArray_IsScalar(o, ComplexFloating) || PyComplex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%s: cannot convert a complex value; expected a real number (take .real first)",
                 I::name);
    return false;
  }
  if (PyArray_IsScalar(o, Generic)) {  // numpy's floats and the minifloat float scalars
    PyObject* f = PyNumber_Float(o);
    if (f == nullptr) return false;
    const double d = PyFloat_AsDouble(f);
    Py_DECREF(f);
    if (out_of_range<I>(static_cast<long double>(d))) return set_out_of_range<I>();  // also NaN, like ml_dtypes
    out = wrap<I>(static_cast<long long>(d));
    return true;
  }
  PyErr_Format(PyExc_TypeError, "%s: expected a number, got %s", I::name, Py_TYPE(o)->tp_name);
  return false;
}

// --- the scalar class ------------------------------------------------------------------------------

/// The string forms int() accepts with base 0 ("7", "-0x3", "0b11"); the value wraps like an int.
template <class I>
bool code_from_text(PyObject* arg, std::uint8_t& out) {
  PyObject* text = PyBytes_Check(arg) ? PyUnicode_FromEncodedObject(arg, "ascii", "strict") : (Py_INCREF(arg), arg);
  if (text == nullptr) return false;
  PyObject* l = PyLong_FromUnicodeObject(text, 0);
  Py_DECREF(text);
  if (l == nullptr) return false;
  const bool ok = to_code<I>(l, out);
  Py_DECREF(l);
  return ok;
}

template <class I>
PyObject* scalar_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  if (kwds != nullptr && PyDict_Size(kwds) != 0) {
    PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", I::name);
    return nullptr;
  }
  const Py_ssize_t n = PyTuple_Size(args);
  if (n < 0) return nullptr;
  if (n > 1) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most 1 argument (%zd given)", I::name, n);
    return nullptr;
  }
  std::uint8_t c = 0;  // no argument: 0, like numpy's integers
  if (n == 1) {
    PyObject* arg = PyTuple_GetItem(args, 0);  // borrowed
    if (arg == nullptr) return nullptr;
    if (Py_TYPE(arg) == type) {
      Py_INCREF(arg);
      return arg;
    }
    if (PyArray_Check(arg)) {
      // PyArray_CastToType steals a reference to the descriptor: give it one of its own.
      Py_INCREF(int_slot<I>::descr);
      PyObject* r = PyArray_CastToType(reinterpret_cast<PyArrayObject*>(arg), int_slot<I>::descr, 0);
      if (r == nullptr) return nullptr;
      return PyArray_Return(reinterpret_cast<PyArrayObject*>(r));  // steals r; 0-d -> scalar
    }
    const bool ok = PyUnicode_Check(arg) || PyBytes_Check(arg) ? code_from_text<I>(arg, c) : to_code<I>(arg, c);
    if (!ok) return nullptr;
  }
  PyObject* r = type->tp_alloc(type, 0);
  if (r != nullptr) reinterpret_cast<py_int*>(r)->code = c;
  return r;
}

template <class I>
int val(PyObject* self) noexcept {
  return value_of<I>(code_of<I>(self));
}

template <class I>
PyObject* scalar_str(PyObject* self) {
  return PyUnicode_FromFormat("%d", val<I>(self));
}

template <class I>
PyObject* scalar_int(PyObject* self) {
  return PyLong_FromLong(val<I>(self));
}

template <class I>
PyObject* scalar_float(PyObject* self) {
  return PyFloat_FromDouble(val<I>(self));
}

template <class I>
int scalar_bool(PyObject* self) {
  return val<I>(self) != 0 ? 1 : 0;
}

template <class I>
Py_hash_t scalar_hash(PyObject* self) {
  const int v = val<I>(self);
  return v == -1 ? -2 : v;  // hash(int): -1 is reserved for errors
}

template <class I>
PyObject* scalar_neg(PyObject* self) {
  return make_scalar<I>(wrap<I>(-static_cast<long long>(val<I>(self))));
}

template <class I>
PyObject* scalar_pos(PyObject* self) {
  Py_INCREF(self);
  return self;
}

template <class I>
PyObject* scalar_abs(PyObject* self) {
  return make_scalar<I>(wrap<I>(std::abs(static_cast<long long>(val<I>(self)))));
}

/// Python's floor division and modulo, on values that fit in an int.
constexpr long long floor_div(long long x, long long y) noexcept {
  long long q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}
constexpr long long floor_mod(long long x, long long y) noexcept {
  long long r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
static_assert(floor_div(-7, 2) == -4 && floor_mod(-7, 2) == 1 && floor_div(7, -2) == -4 && floor_mod(7, -2) == -1);

enum class op { add, sub, mul, floordiv, mod };

template <class I, op O>
PyObject* scalar_binary(PyObject* a, PyObject* b) {
  if (!is_scalar<I>(a) || !is_scalar<I>(b)) {
    // numpy's promotion: any other operand goes through the ufuncs
    PyNumberMethods* n = PyArray_Type.tp_as_number;
    switch (O) {
      case op::add: return n->nb_add(a, b);
      case op::sub: return n->nb_subtract(a, b);
      case op::mul: return n->nb_multiply(a, b);
      case op::floordiv: return n->nb_floor_divide(a, b);
      case op::mod: return n->nb_remainder(a, b);
    }
  }
  const long long x = val<I>(a), y = val<I>(b);
  long long r = 0;
  switch (O) {
    case op::add: r = x + y; break;
    case op::sub: r = x - y; break;
    case op::mul: r = x * y; break;
    case op::floordiv:
    case op::mod:
      if (y == 0) {
        PyErr_Format(PyExc_ZeroDivisionError, "%s: integer division or modulo by zero", I::name);
        return nullptr;
      }
      r = O == op::floordiv ? floor_div(x, y) : floor_mod(x, y);
      break;
  }
  return make_scalar<I>(wrap<I>(r));
}

template <class I>
PyObject* scalar_richcompare(PyObject* a, PyObject* b, int cmp) {
  if (!is_scalar<I>(a) || !is_scalar<I>(b)) {
    // Equality with a non-number is False (a dict key lookup must not raise), as in ml_dtypes.
    if ((cmp == Py_EQ || cmp == Py_NE) &&
        (PyUnicode_Check(b) || PyBytes_Check(b) ||
         (PyNumber_Check(b) == 0 && !PyArray_Check(b) && PySequence_Check(b) == 0)))
      Py_RETURN_NOTIMPLEMENTED;
    return PyGenericArrType_Type.tp_richcompare(a, b, cmp);
  }
  const int x = val<I>(a), y = val<I>(b);
  bool r = false;
  switch (cmp) {
    case Py_LT: r = x < y; break;
    case Py_LE: r = x <= y; break;
    case Py_EQ: r = x == y; break;
    case Py_NE: r = x != y; break;
    case Py_GT: r = x > y; break;
    case Py_GE: r = x >= y; break;
    default: Py_RETURN_NOTIMPLEMENTED;
  }
  PyArrayScalar_RETURN_BOOL_FROM_LONG(r ? 1 : 0);
}

template <class I>
PyObject* scalar_format(PyObject* self, PyObject* spec) {
  PyObject* i = scalar_int<I>(self);
  if (i == nullptr) return nullptr;
  PyObject* r = PyObject_Format(i, spec);
  Py_DECREF(i);
  return r;
}

template <class I>
PyObject* scalar_reduce(PyObject* self, PyObject*) {
  PyObject* i = scalar_int<I>(self);
  if (i == nullptr) return nullptr;
  return Py_BuildValue("(O(N))", reinterpret_cast<PyObject*>(Py_TYPE(self)), i);  // N: steals i
}

template <class I>
struct scalar_type_def {
  static inline std::string qualified_name = std::string("minifloat.") + I::name;
  static inline std::string doc =
      std::string(I::name) + "(x=0): a " + std::to_string(I::bits) + "-bit " + (I::is_signed ? "signed" : "unsigned") +
      " integer in [" + std::to_string(I::lowest) + ", " + std::to_string(I::highest) +
      "], one per byte (ml_dtypes' semantics: Python ints wrap, floats out of range raise OverflowError).";
  static inline PyMethodDef methods[] = {
      {"__format__", reinterpret_cast<PyCFunction>(scalar_format<I>), METH_O, "Formats the value as an int."},
      {"__reduce__", reinterpret_cast<PyCFunction>(scalar_reduce<I>), METH_NOARGS, "Pickle support."},
      {nullptr, nullptr, 0, nullptr}};
  static inline PyType_Slot slots[] = {
      {Py_tp_new, reinterpret_cast<void*>(scalar_new<I>)},
      {Py_tp_repr, reinterpret_cast<void*>(scalar_str<I>)},
      {Py_tp_str, reinterpret_cast<void*>(scalar_str<I>)},
      {Py_tp_hash, reinterpret_cast<void*>(scalar_hash<I>)},
      {Py_tp_richcompare, reinterpret_cast<void*>(scalar_richcompare<I>)},
      {Py_tp_methods, methods},
      {Py_tp_doc, const_cast<char*>(doc.c_str())},
      {Py_nb_add, reinterpret_cast<void*>(scalar_binary<I, op::add>)},
      {Py_nb_subtract, reinterpret_cast<void*>(scalar_binary<I, op::sub>)},
      {Py_nb_multiply, reinterpret_cast<void*>(scalar_binary<I, op::mul>)},
      {Py_nb_floor_divide, reinterpret_cast<void*>(scalar_binary<I, op::floordiv>)},
      {Py_nb_remainder, reinterpret_cast<void*>(scalar_binary<I, op::mod>)},
      {Py_nb_negative, reinterpret_cast<void*>(scalar_neg<I>)},
      {Py_nb_positive, reinterpret_cast<void*>(scalar_pos<I>)},
      {Py_nb_absolute, reinterpret_cast<void*>(scalar_abs<I>)},
      {Py_nb_bool, reinterpret_cast<void*>(scalar_bool<I>)},
      {Py_nb_int, reinterpret_cast<void*>(scalar_int<I>)},
      {Py_nb_index, reinterpret_cast<void*>(scalar_int<I>)},
      {Py_nb_float, reinterpret_cast<void*>(scalar_float<I>)},
      {0, nullptr}};
  static inline PyType_Spec spec = {qualified_name.c_str(), static_cast<int>(sizeof(py_int)), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
};

// --- ArrFuncs ----------------------------------------------------------------------------------------

template <class I>
PyObject* arr_getitem(void* data, void*) {
  return PyLong_FromLong(value_of<I>(load<I>(data)));
}

template <class I>
int arr_setitem(PyObject* item, void* data, void*) {
  std::uint8_t c = 0;
  if (!to_code<I>(item, c)) return -1;
  std::memcpy(data, &c, 1);
  return 0;
}

void arr_copyswapn(void* dst, npy_intp dstride, void* src, npy_intp sstride, npy_intp n, int, void*) {
  if (src == nullptr) return;  // one byte: nothing to swap
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  if (dstride == 1 && sstride == 1) {
    std::memmove(d, s, static_cast<std::size_t>(n));
    return;
  }
  for (npy_intp i = 0; i < n; ++i) d[i * dstride] = s[i * sstride];
}

void arr_copyswap(void* dst, void* src, int, void*) {
  if (src != nullptr) std::memcpy(dst, src, 1);
}

template <class I>
npy_bool arr_nonzero(void* data, void*) {
  return value_of<I>(load<I>(data)) != 0 ? NPY_TRUE : NPY_FALSE;
}

template <class I>
int arr_fill(void* buffer, npy_intp length, void*) {
  // np.arange: elements 0 and 1 are set, the rest follows the step (wrapping).
  // Unsigned arithmetic: modular like the wrap, and no overflow for any length.
  auto* b = static_cast<std::uint8_t*>(buffer);
  const auto start = static_cast<unsigned long long>(value_of<I>(b[0]));
  const auto delta = static_cast<unsigned long long>(value_of<I>(b[1])) - start;
  for (npy_intp i = 2; i < length; ++i)
    b[i] = wrap<I>(static_cast<long long>((start + static_cast<unsigned long long>(i) * delta) & I::mask));
  return 0;
}

template <class I>
void arr_dot(void* a, npy_intp as, void* b, npy_intp bs, void* out, npy_intp n, void*) {
  const auto* pa = static_cast<const char*>(a);
  const auto* pb = static_cast<const char*>(b);
  unsigned long long acc = 0;  // modular: only the low N bits are kept
  for (npy_intp i = 0; i < n; ++i)
    acc += static_cast<unsigned long long>(static_cast<long long>(value_of<I>(load<I>(pa + i * as))) *
                                           value_of<I>(load<I>(pb + i * bs)));
  const std::uint8_t c = wrap<I>(static_cast<long long>(acc & I::mask));
  std::memcpy(out, &c, 1);
}

template <class I>
int arr_compare(const void* a, const void* b, void*) {
  const int x = value_of<I>(load<I>(a)), y = value_of<I>(load<I>(b));
  return x < y ? -1 : x > y ? 1 : 0;
}

template <class I, bool Max>
int arr_arg(void* data, npy_intp n, npy_intp* index, void*) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  if (n <= 0) return 0;
  int best = value_of<I>(p[0]);
  *index = 0;
  for (npy_intp i = 1; i < n; ++i) {
    const int v = value_of<I>(p[i]);
    if (Max ? v > best : v < best) best = v, *index = i;
  }
  return 0;
}

// --- casts -------------------------------------------------------------------------------------------

/// numpy's bool and the complex types, distinct from the C types that share their layout.
struct bool_tag {};
template <class R>
struct complex_tag {
  using real = R;
};
struct half_tag {};

template <class C>
constexpr bool is_complex_tag = false;
template <class R>
constexpr bool is_complex_tag<complex_tag<R>> = true;

template <class C>
constexpr std::size_t size_of() {
  if constexpr (std::is_same_v<C, bool_tag>) return sizeof(npy_bool);
  else if constexpr (std::is_same_v<C, half_tag>) return sizeof(npy_half);
  else if constexpr (is_complex_tag<C>) return 2 * sizeof(typename C::real);
  else return sizeof(C);
}

void give_complex_warning() {
  // numpy 1.x neither checks for an exception after a legacy cast nor lets it fail, so a warning
  // turned into an error (warnings.simplefilter("error")) is reported as unraisable, never left
  // set. PyGILState_Ensure also covers a cast called without the GIL.
  const PyGILState_STATE g = PyGILState_Ensure();
  if (PyErr_WarnEx(complex_warning_type, "Casting complex values to real discards the imaginary part", 1) < 0)
    PyErr_WriteUnraisable(nullptr);
  PyGILState_Release(g);
}

/// One element of numpy type C -> an integer, before wrapping.
template <class C>
long long read_number(const char* p) noexcept {
  if constexpr (std::is_same_v<C, bool_tag>) {
    npy_bool b;
    std::memcpy(&b, p, sizeof b);
    return b != 0 ? 1 : 0;
  } else if constexpr (std::is_same_v<C, half_tag>) {
    std::uint16_t h;
    std::memcpy(&h, p, sizeof h);
    return float_to_int(static_cast<double>(float16::from_bits(h)));
  } else if constexpr (is_complex_tag<C>) {
    typename C::real r;  // the real part comes first
    std::memcpy(&r, p, sizeof r);
    return float_to_int(r);
  } else {
    C x;
    std::memcpy(&x, p, sizeof x);
    if constexpr (std::is_floating_point_v<C>) return float_to_int(x);
    else return static_cast<long long>(x);  // unsigned long long: modular, the low bits are kept
  }
}

/// An integer value -> one element of numpy type C.
template <class C>
void write_number(char* p, int v) noexcept {
  if constexpr (std::is_same_v<C, bool_tag>) {
    const npy_bool b = v != 0 ? NPY_TRUE : NPY_FALSE;
    std::memcpy(p, &b, sizeof b);
  } else if constexpr (std::is_same_v<C, half_tag>) {
    const std::uint16_t h = encode<float16>(static_cast<double>(v));
    std::memcpy(p, &h, sizeof h);
  } else if constexpr (is_complex_tag<C>) {
    const typename C::real parts[2] = {static_cast<typename C::real>(v), 0};
    std::memcpy(p, parts, sizeof parts);
  } else {
    const auto x = static_cast<C>(v);  // to unsigned: modular (uint8(int4(-1)) == 255, as numpy)
    std::memcpy(p, &x, sizeof x);
  }
}

template <class C, class I>
void from_number(void* from, void* to, npy_intp n, void*, void*) {
  if constexpr (is_complex_tag<C>)
    if (n > 0) give_complex_warning();
  const auto* src = static_cast<const char*>(from);
  auto* dst = static_cast<std::uint8_t*>(to);
  for (npy_intp i = 0; i < n; ++i) dst[i] = wrap<I>(read_number<C>(src + i * static_cast<npy_intp>(size_of<C>())));
}

template <class I, class C>
void to_number(void* from, void* to, npy_intp n, void*, void*) {
  const auto* src = static_cast<const std::uint8_t*>(from);
  auto* dst = static_cast<char*>(to);
  for (npy_intp i = 0; i < n; ++i) write_number<C>(dst + i * static_cast<npy_intp>(size_of<C>()), value_of<I>(src[i]));
}

/// Narrow integer -> minifloat float dtype U: the value with U's default conversion.
template <class I, class U>
void to_minifloat(void* from, void* to, npy_intp n, void*, void*) {
  const auto* src = static_cast<const std::uint8_t*>(from);
  auto* dst = static_cast<char*>(to);
  for (npy_intp i = 0; i < n; ++i) {
    const code_t<U> c = encode<U>(static_cast<double>(value_of<I>(src[i])));
    std::memcpy(dst + i * static_cast<npy_intp>(sizeof c), &c, sizeof c);
  }
}

/// Minifloat float dtype U -> narrow integer: its exact value as a float array cast reads it.
template <class U, class I>
void from_minifloat(void* from, void* to, npy_intp n, void*, void*) {
  const auto* src = static_cast<const char*>(from);
  auto* dst = static_cast<std::uint8_t*>(to);
  for (npy_intp i = 0; i < n; ++i) {
    code_t<U> c;
    std::memcpy(&c, src + i * static_cast<npy_intp>(sizeof c), sizeof c);
    dst[i] = wrap<I>(float_to_int(static_cast<double>(U::from_bits(c))));
  }
}

/// int2 -> int4, uint2 -> uint4: every value fits.
template <class I, class J>
void widen(void* from, void* to, npy_intp n, void*, void*) {
  const auto* src = static_cast<const std::uint8_t*>(from);
  auto* dst = static_cast<std::uint8_t*>(to);
  for (npy_intp i = 0; i < n; ++i) dst[i] = wrap<J>(value_of<I>(src[i]));
}

template <class I, class C>
void register_number_casts(int typenum) {
  const descr_ref other(typenum);
  check_registration(PyArray_RegisterCastFunc(other.d, int_slot<I>::typenum, from_number<C, I>));
  check_registration(PyArray_RegisterCastFunc(int_slot<I>::descr, typenum, to_number<I, C>));
}

/// The minifloat float dtypes a narrow integer casts to and from: ml_dtypes' list (no cast to the
/// scale format E8M0, which has no zero; none between the 4-bit integers and FP6 E2M3, whose
/// range +-7.5 misses -8 and 8..15).
template <class I, class U>
constexpr bool has_float_cast() {
  if constexpr (format_id_of<U> == format_id::float8_e8m0fnu) return false;
  else if constexpr (format_id_of<U> == format_id::float6_e2m3fn) return I::bits < 4;
  else return true;
}

template <class I>
void register_casts_of() {
  register_number_casts<I, bool_tag>(NPY_BOOL);
  register_number_casts<I, npy_byte>(NPY_BYTE);
  register_number_casts<I, npy_ubyte>(NPY_UBYTE);
  register_number_casts<I, npy_short>(NPY_SHORT);
  register_number_casts<I, npy_ushort>(NPY_USHORT);
  register_number_casts<I, npy_int>(NPY_INT);
  register_number_casts<I, npy_uint>(NPY_UINT);
  register_number_casts<I, npy_long>(NPY_LONG);
  register_number_casts<I, npy_ulong>(NPY_ULONG);
  register_number_casts<I, npy_longlong>(NPY_LONGLONG);
  register_number_casts<I, npy_ulonglong>(NPY_ULONGLONG);
  register_number_casts<I, half_tag>(NPY_HALF);
  register_number_casts<I, float>(NPY_FLOAT);
  register_number_casts<I, double>(NPY_DOUBLE);
  register_number_casts<I, long double>(NPY_LONGDOUBLE);
  register_number_casts<I, complex_tag<float>>(NPY_CFLOAT);
  register_number_casts<I, complex_tag<double>>(NPY_CDOUBLE);
  register_number_casts<I, complex_tag<long double>>(NPY_CLONGDOUBLE);

  PyArray_Descr* self = int_slot<I>::descr;
  for_each_dtype([&](auto tag) {
    using U = typename decltype(tag)::type;
    if constexpr (has_float_cast<I, U>()) {
      check_registration(PyArray_RegisterCastFunc(self, dtype_slot<U>::typenum, to_minifloat<I, U>));
      check_registration(PyArray_RegisterCastFunc(dtype_slot<U>::descr, int_slot<I>::typenum, from_minifloat<U, I>));
      check_registration(PyArray_RegisterCanCast(self, dtype_slot<U>::typenum, NPY_NOSCALAR));
    }
  });

  // Safe casts: ml_dtypes' table (the sized integer typenums, as there).
  for (int t : {NPY_INT8, NPY_INT16, NPY_INT32, NPY_INT64, NPY_HALF, NPY_FLOAT, NPY_DOUBLE, NPY_LONGDOUBLE, NPY_CFLOAT,
                NPY_CDOUBLE, NPY_CLONGDOUBLE})
    check_registration(PyArray_RegisterCanCast(self, t, NPY_NOSCALAR));
  if constexpr (!I::is_signed)
    for (int t : {NPY_UINT8, NPY_UINT16, NPY_UINT32, NPY_UINT64}) check_registration(PyArray_RegisterCanCast(self, t, NPY_NOSCALAR));
  const descr_ref b(NPY_BOOL);
  check_registration(PyArray_RegisterCanCast(b.d, int_slot<I>::typenum, NPY_NOSCALAR));
}

template <class I, class J>
void register_widening() {
  check_registration(PyArray_RegisterCastFunc(int_slot<I>::descr, int_slot<J>::typenum, widen<I, J>));
  check_registration(PyArray_RegisterCanCast(int_slot<I>::descr, int_slot<J>::typenum, NPY_NOSCALAR));
}

// --- ufunc loops -------------------------------------------------------------------------------------

void divide_by_zero() noexcept {
  // numpy's integer loops report x // 0 and x % 0 through the FP status it checks after every
  // loop, so np.errstate(divide=...) decides between ignore, a RuntimeWarning and an error.
  std::feraiseexcept(FE_DIVBYZERO);
}

struct add_f { long long operator()(long long a, long long b) const { return a + b; } };
struct sub_f { long long operator()(long long a, long long b) const { return a - b; } };
struct mul_f { long long operator()(long long a, long long b) const { return a * b; } };
struct floordiv_f {
  long long operator()(long long a, long long b) const {
    if (b == 0) return divide_by_zero(), 0;
    return floor_div(a, b);
  }
};
struct mod_f {
  long long operator()(long long a, long long b) const {
    if (b == 0) return divide_by_zero(), 0;
    return floor_mod(a, b);
  }
};
struct max_f { long long operator()(long long a, long long b) const { return a < b ? b : a; } };
struct min_f { long long operator()(long long a, long long b) const { return b < a ? b : a; } };
// Bitwise operations act on the N-bit two's complement code; wrap() keeps its low N bits.
struct and_f { long long operator()(long long a, long long b) const { return a & b; } };
struct or_f { long long operator()(long long a, long long b) const { return a | b; } };
struct xor_f { long long operator()(long long a, long long b) const { return a ^ b; } };
template <int Bits>
struct lshift_f {  // numpy: a shift by the width or more (or a negative count) gives 0
  long long operator()(long long a, long long b) const {
    return b >= 0 && b < Bits ? static_cast<long long>(static_cast<unsigned long long>(a) << b) : 0;
  }
};
template <int Bits>
struct rshift_f {  // arithmetic for the signed types; past the width: the sign
  long long operator()(long long a, long long b) const { return b >= 0 && b < Bits ? (a >> b) : (a < 0 ? -1 : 0); }
};

struct neg_f { long long operator()(long long a) const { return -a; } };
struct pos_f { long long operator()(long long a) const { return a; } };
struct abs_f { long long operator()(long long a) const { return a < 0 ? -a : a; } };
struct sign_f { long long operator()(long long a) const { return (a > 0) - (a < 0); } };
struct invert_f { long long operator()(long long a) const { return ~a; } };
struct square_f { long long operator()(long long a) const { return a * a; } };

struct eq_f { bool operator()(long long a, long long b) const { return a == b; } };
struct ne_f { bool operator()(long long a, long long b) const { return a != b; } };
struct lt_f { bool operator()(long long a, long long b) const { return a < b; } };
struct le_f { bool operator()(long long a, long long b) const { return a <= b; } };
struct gt_f { bool operator()(long long a, long long b) const { return a > b; } };
struct ge_f { bool operator()(long long a, long long b) const { return a >= b; } };
struct land_f { bool operator()(long long a, long long b) const { return a != 0 && b != 0; } };
struct lor_f { bool operator()(long long a, long long b) const { return a != 0 || b != 0; } };
struct lxor_f { bool operator()(long long a, long long b) const { return (a != 0) != (b != 0); } };
struct lnot_f { bool operator()(long long a) const { return a == 0; } };

/// (I, I) -> I. Element by element: a reduction (output stride 0) reads its own last result.
template <class I, class Op>
void binary_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  char *a = args[0], *b = args[1], *out = args[2];
  for (npy_intp i = 0; i < dims[0]; ++i) {
    const long long r = Op{}(value_of<I>(load<I>(a + i * steps[0])), value_of<I>(load<I>(b + i * steps[1])));
    out[i * steps[2]] = static_cast<char>(wrap<I>(r));
  }
}

/// (I, I) -> (I, I): divmod
template <class I>
void divmod_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i) {
    const long long x = value_of<I>(load<I>(args[0] + i * steps[0]));
    const long long y = value_of<I>(load<I>(args[1] + i * steps[1]));
    args[2][i * steps[2]] = static_cast<char>(wrap<I>(floordiv_f{}(x, y)));
    args[3][i * steps[3]] = static_cast<char>(wrap<I>(y == 0 ? 0 : floor_mod(x, y)));
  }
}

/// I -> I
template <class I, class Op>
void unary_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i)
    args[1][i * steps[1]] = static_cast<char>(wrap<I>(Op{}(value_of<I>(load<I>(args[0] + i * steps[0])))));
}

/// (I, I) -> bool
template <class I, class Op>
void compare_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i) {
    const bool r = Op{}(value_of<I>(load<I>(args[0] + i * steps[0])), value_of<I>(load<I>(args[1] + i * steps[1])));
    args[2][i * steps[2]] = static_cast<char>(r ? 1 : 0);
  }
}

/// I -> bool
template <class I, class Op>
void predicate_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
  for (npy_intp i = 0; i < dims[0]; ++i)
    args[1][i * steps[1]] = static_cast<char>(Op{}(value_of<I>(load<I>(args[0] + i * steps[0]))) ? 1 : 0);
}

void add_loop(PyObject* numpy, const char* name, int typenum, PyUFuncGenericFunction f, std::initializer_list<int> types) {
  PyObject* u = PyObject_GetAttrString(numpy, name);
  if (u == nullptr) throw py::error_already_set();
  int t[4] = {};
  int k = 0;
  for (int x : types) t[k++] = x;
  const int rc = PyUFunc_RegisterLoopForType(reinterpret_cast<PyUFuncObject*>(u), typenum, f, t, nullptr);
  Py_DECREF(u);
  if (rc < 0) throw py::error_already_set();
}

template <class I>
void register_ufuncs_of(PyObject* np) {
  const int t = int_slot<I>::typenum, b = NPY_BOOL;
  const auto bin = [&](const char* name, PyUFuncGenericFunction f) { add_loop(np, name, t, f, {t, t, t}); };
  const auto cmp = [&](const char* name, PyUFuncGenericFunction f) { add_loop(np, name, t, f, {t, t, b}); };
  // ml_dtypes' five
  bin("add", binary_loop<I, add_f>);
  bin("subtract", binary_loop<I, sub_f>);
  bin("multiply", binary_loop<I, mul_f>);
  bin("floor_divide", binary_loop<I, floordiv_f>);
  bin("remainder", binary_loop<I, mod_f>);
  // Every other integer ufunc (maximum, bitwise ops, shifts, negative, divmod...) is left to numpy's
  // promotion, as ml_dtypes leaves it: the safe cast to int8 (uint8 for uint2/uint4 where int8 comes
  // later in the loop list) runs it and the result has that dtype, bit for bit what ml_dtypes gives.
  // comparisons and logic: the same bool results as through int8, without the cast
  cmp("equal", compare_loop<I, eq_f>);
  cmp("not_equal", compare_loop<I, ne_f>);
  cmp("less", compare_loop<I, lt_f>);
  cmp("less_equal", compare_loop<I, le_f>);
  cmp("greater", compare_loop<I, gt_f>);
  cmp("greater_equal", compare_loop<I, ge_f>);
  cmp("logical_and", compare_loop<I, land_f>);
  cmp("logical_or", compare_loop<I, lor_f>);
  cmp("logical_xor", compare_loop<I, lxor_f>);
  add_loop(np, "logical_not", t, predicate_loop<I, lnot_f>, {t, b});
}

// --- registration ------------------------------------------------------------------------------------

template <class I>
void register_one(py::module_& m, PyObject* numpy_type_dict) {
  using def = scalar_type_def<I>;
  py::object bases = py::make_tuple(py::handle(reinterpret_cast<PyObject*>(&PyGenericArrType_Type)));
  PyObject* type = PyType_FromSpecWithBases(&def::spec, bases.ptr());  // new reference, kept for the process
  if (type == nullptr) throw py::error_already_set();
  int_slot<I>::scalar_type = reinterpret_cast<PyTypeObject*>(type);

  PyArray_ArrFuncs& f = int_slot<I>::funcs;
  PyArray_InitArrFuncs(&f);
  f.getitem = arr_getitem<I>;
  f.setitem = arr_setitem<I>;
  f.copyswapn = arr_copyswapn;
  f.copyswap = arr_copyswap;
  f.nonzero = arr_nonzero<I>;
  f.fill = arr_fill<I>;
  f.dotfunc = arr_dot<I>;
  f.compare = arr_compare<I>;
  f.argmax = arr_arg<I, true>;
  f.argmin = arr_arg<I, false>;

  PyArray_Descr& d = int_slot<I>::proto;
  std::memset(static_cast<void*>(&d), 0, sizeof d);
  Py_SET_REFCNT(reinterpret_cast<PyObject*>(&d), 1);
  Py_SET_TYPE(reinterpret_cast<PyObject*>(&d), &PyArrayDescr_Type);
  d.typeobj = reinterpret_cast<PyTypeObject*>(type);
  d.kind = 'V';  // as ml_dtypes: 'i' / 'u' would make numpy treat it as one of its own integers
  d.type = I::type_char;
  d.byteorder = '=';
  d.flags = NPY_USE_SETITEM;
  d.elsize = 1;
  d.alignment = 1;
  d.f = &f;
  d.hash = -1;
  const int typenum = PyArray_RegisterDataType(&d);
  if (typenum < 0) throw py::error_already_set();
  int_slot<I>::typenum = typenum;
  int_slot<I>::descr = PyArray_DescrFromType(typenum);  // new reference, kept for the process
  if (int_slot<I>::descr == nullptr) throw py::error_already_set();

  // np.dtype("int4") looks names up in numpy.sctypeDict.
  if (PyDict_SetItemString(numpy_type_dict, I::name, type) < 0) throw py::error_already_set();
  if (PyObject_SetAttrString(type, "dtype", reinterpret_cast<PyObject*>(int_slot<I>::descr)) < 0)
    throw py::error_already_set();
  m.add_object(I::name, py::handle(type));  // add_object takes its own reference
}

}  // namespace

void register_int_dtypes(py::module_& m) {
  py::module_ numpy = py::module_::import("numpy");
  // numpy >= 1.25 keeps its warnings in numpy.exceptions; 1.24 at the top level.
  py::object warning_home = py::hasattr(numpy, "exceptions") ? numpy.attr("exceptions") : py::object(numpy);
  complex_warning_type = py::object(warning_home.attr("ComplexWarning")).release().ptr();

  py::object type_dict = numpy.attr("sctypeDict");
  for_each_int([&](auto tag) { register_one<typename decltype(tag)::type>(m, type_dict.ptr()); });
  for_each_int([&](auto tag) { register_casts_of<typename decltype(tag)::type>(); });
  register_widening<int2_t, int4_t>();
  register_widening<uint2_t, uint4_t>();
  for_each_int([&](auto tag) { register_ufuncs_of<typename decltype(tag)::type>(numpy.ptr()); });
}

}  // namespace minifloat::python
