// The numpy dtypes: one scalar class and one legacy user dtype (PyArray_RegisterDataType with
// an ArrFuncs table) per format of dtype_formats, the way numpy 1.x lets an extension add a
// type. Elements are the format's codes, one per byte (two bytes for bfloat16), so
// `.view(np.uint8)` shows them. Element values are exact floats; conversions from Python
// numbers use the format's default conversion (its own nearest rounding, non-saturating).
#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include <minifloat/core/threads.hpp>
#include <minifloat/formats/convert.hpp>
#include <minifloat/formats/numeric_limits.hpp>
#include <minifloat/formats/packed.hpp>
#include <minifloat/simd/bulk.hpp>

#include "common.hpp"

namespace minifloat::python {

namespace {

template <class T>
code_t<T> load(const void* p) noexcept {
  code_t<T> c;
  std::memcpy(&c, p, sizeof c);
  return c;
}
template <class T>
void store(void* p, code_t<T> c) noexcept {
  std::memcpy(p, &c, sizeof c);
}
template <class T>
float value_of(code_t<T> c) noexcept {
  return static_cast<float>(T::from_bits(c));
}
template <class T>
code_t<T> code_from_double(double v) noexcept {
  return encode<T>(v);
}

template <class T>
bool is_scalar(PyObject* o) {
  return PyObject_TypeCheck(o, dtype_slot<T>::scalar_type) != 0;
}

template <class T>
PyObject* make_scalar(code_t<T> c) {
  PyTypeObject* t = dtype_slot<T>::scalar_type;
  PyObject* o = t->tp_alloc(t, 0);
  if (o != nullptr) reinterpret_cast<py_scalar<T>*>(o)->code = c;
  return o;
}

/// Any of our scalar types: its exact value as a double.
std::optional<double> any_minifloat_scalar(PyObject* o) {
  std::optional<double> r;
  for_each_dtype([&](auto tag) {
    using U = typename decltype(tag)::type;
    if (!r && dtype_slot<U>::scalar_type != nullptr && is_scalar<U>(o))
      r = static_cast<double>(U::from_bits(reinterpret_cast<py_scalar<U>*>(o)->code));
  });
  return r;
}

/// A Python object -> code with the default conversion. Returns false with a Python error set.
template <class T>
bool to_code(PyObject* o, code_t<T>& out) {
  if (is_scalar<T>(o)) {
    out = reinterpret_cast<py_scalar<T>*>(o)->code;
    return true;
  }
  if (auto v = any_minifloat_scalar(o)) {
    out = code_from_double<T>(*v);
    return true;
  }
  if (PyFloat_Check(o)) {
    out = code_from_double<T>(PyFloat_AsDouble(o));
    return true;
  }
  if (PyLong_Check(o)) {
    const double d = PyLong_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
      // Too large for a double: it overflows every format.
      PyErr_Clear();
      PyObject* zero = PyLong_FromLong(0);
      const int negative = zero == nullptr ? -1 : PyObject_RichCompareBool(o, zero, Py_LT);
      Py_XDECREF(zero);
      if (negative < 0) return false;
      out = code_from_double<T>(negative == 1 ? -std::numeric_limits<double>::infinity()
                                         : std::numeric_limits<double>::infinity());
    } else {
      out = code_from_double<T>(d);
    }
    return true;
  }
  if (PyArray_IsScalar(o, Generic) || (PyArray_Check(o) && PyArray_NDIM(reinterpret_cast<PyArrayObject*>(o)) == 0)) {
    if (PyArray_Check(o)) {
      auto* a = reinterpret_cast<PyArrayObject*>(o);
      if (PyArray_TYPE(a) == dtype_slot<T>::typenum) {
        out = load<T>(PyArray_DATA(a));
        return true;
      }
    }
    // numpy's own float(): a complex scalar or 0-d array gives its real part with numpy's
    // ComplexWarning, as when numpy stores it into a float32 array.
    PyObject* f = PyNumber_Float(o);
    if (f == nullptr) return false;
    out = code_from_double<T>(PyFloat_AsDouble(f));
    Py_DECREF(f);
    return true;
  }
  PyErr_Format(PyExc_TypeError, "%s: expected a number, got %s", std::string(format_name<T>).c_str(),
               Py_TYPE(o)->tp_name);
  return false;
}

// --- the scalar class ------------------------------------------------------------------------------

template <class T>
PyObject* scalar_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  if (kwds != nullptr && PyDict_Size(kwds) != 0) {
    PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", std::string(format_name<T>).c_str());
    return nullptr;
  }
  const Py_ssize_t n = PyTuple_Size(args);
  if (n == 0) return make_scalar<T>(code_from_double<T>(0.0));
  if (n != 1) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most 1 argument (%zd given)", std::string(format_name<T>).c_str(), n);
    return nullptr;
  }
  PyObject* arg = PyTuple_GetItem(args, 0);
  if (Py_TYPE(arg) == type) {
    Py_INCREF(arg);
    return arg;
  }
  if (PyArray_Check(arg) && PyArray_NDIM(reinterpret_cast<PyArrayObject*>(arg)) > 0) {
    // PyArray_CastToType steals a reference to the descriptor: give it one of its own, or every
    // call would drain the static descriptor's count until numpy frees it.
    Py_INCREF(dtype_slot<T>::descr);
    return PyArray_CastToType(reinterpret_cast<PyArrayObject*>(arg), dtype_slot<T>::descr, 0);
  }
  if (PyUnicode_Check(arg) || PyBytes_Check(arg)) {
    PyObject* f = PyFloat_FromString(arg);
    if (f == nullptr) return nullptr;
    PyObject* r = make_scalar<T>(code_from_double<T>(PyFloat_AsDouble(f)));
    Py_DECREF(f);
    return r;
  }
  code_t<T> c{};
  if (!to_code<T>(arg, c)) return nullptr;
  PyObject* r = type->tp_alloc(type, 0);
  if (r != nullptr) reinterpret_cast<py_scalar<T>*>(r)->code = c;
  return r;
}

template <class T>
code_t<T> code_of(PyObject* self) noexcept {
  return reinterpret_cast<py_scalar<T>*>(self)->code;
}

/// str() and repr() of a scalar, as ml_dtypes prints them: the float value in C++'s default stream
/// format (printf's %g, 6 significant digits: bfloat16(0.1) is "0.100098", 1.0 is "1"), a NaN
/// without its sign ("nan"), infinities "inf" / "-inf". Array printing goes through the same
/// text ("[[1 2 4]]"). std::to_chars is locale-independent, as ml_dtypes' classic-locale stream.
template <class T>
PyObject* scalar_repr(PyObject* self) {
  const float f = value_of<T>(code_of<T>(self));
  if (std::isnan(f)) return PyUnicode_FromString("nan");
  std::array<char, 32> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), static_cast<double>(f),
                               std::chars_format::general, 6);
  if (r.ec != std::errc{}) {
    PyErr_SetString(PyExc_SystemError, "minifloat: a float did not fit its 32-character text buffer");
    return nullptr;
  }
  return PyUnicode_FromStringAndSize(buf.data(), r.ptr - buf.data());
}

template <class T>
PyObject* scalar_float(PyObject* self) {
  return PyFloat_FromDouble(static_cast<double>(T::from_bits(code_of<T>(self))));
}

template <class T>
PyObject* scalar_int(PyObject* self) {
  return PyLong_FromDouble(static_cast<double>(T::from_bits(code_of<T>(self))));  // raises for NaN / Inf
}

template <class T>
int scalar_bool(PyObject* self) {
  return value_of<T>(code_of<T>(self)) != 0.0f ? 1 : 0;  // NaN is true, like float('nan')
}

template <class T>
Py_hash_t scalar_hash(PyObject* self) {
  // Python hashes a NaN float by the identity of the object holding it; hashing a temporary float
  // would give a different hash on every call. Hash a NaN scalar by its own identity, as numpy's
  // floating scalars do, so it stays usable as a dict key or set member.
  if (std::isnan(value_of<T>(code_of<T>(self)))) {
    const auto p = reinterpret_cast<std::uintptr_t>(self);
    auto h = static_cast<Py_hash_t>((p >> 4) | (p << (8 * sizeof(p) - 4)));  // low bits are alignment
    return h == -1 ? -2 : h;
  }
  PyObject* f = scalar_float<T>(self);
  if (f == nullptr) return -1;
  const Py_hash_t h = PyObject_Hash(f);
  Py_DECREF(f);
  return h;
}

template <class T, class Op>
PyObject* scalar_binary(PyObject* a, PyObject* b, Op op, binaryfunc fallback) {
  if (is_scalar<T>(a) && is_scalar<T>(b)) {
    const float r = op(value_of<T>(code_of<T>(a)), value_of<T>(code_of<T>(b)));
    return make_scalar<T>(encode<T>(r));
  }
  return fallback(a, b);  // numpy's promotion: other types go through the ufuncs
}

template <class T>
PyObject* scalar_add(PyObject* a, PyObject* b) {
  return scalar_binary<T>(a, b, [](float x, float y) { return x + y; }, PyArray_Type.tp_as_number->nb_add);
}
template <class T>
PyObject* scalar_sub(PyObject* a, PyObject* b) {
  return scalar_binary<T>(a, b, [](float x, float y) { return x - y; }, PyArray_Type.tp_as_number->nb_subtract);
}
template <class T>
PyObject* scalar_mul(PyObject* a, PyObject* b) {
  return scalar_binary<T>(a, b, [](float x, float y) { return x * y; }, PyArray_Type.tp_as_number->nb_multiply);
}
template <class T>
PyObject* scalar_div(PyObject* a, PyObject* b) {
  return scalar_binary<T>(a, b, [](float x, float y) { return x / y; }, PyArray_Type.tp_as_number->nb_true_divide);
}
template <class T>
PyObject* scalar_neg(PyObject* self) {
  return make_scalar<T>(encode<T>(-value_of<T>(code_of<T>(self))));
}
template <class T>
PyObject* scalar_pos(PyObject* self) {
  Py_INCREF(self);
  return self;
}
template <class T>
PyObject* scalar_abs(PyObject* self) {
  return make_scalar<T>(encode<T>(std::fabs(value_of<T>(code_of<T>(self)))));
}

template <class T>
PyObject* scalar_richcompare(PyObject* a, PyObject* b, int op) {
  if (!is_scalar<T>(a) || !is_scalar<T>(b)) return PyGenericArrType_Type.tp_richcompare(a, b, op);
  const float x = value_of<T>(code_of<T>(a)), y = value_of<T>(code_of<T>(b));
  bool r = false;
  switch (op) {
    case Py_LT: r = std::isless(x, y); break;
    case Py_LE: r = std::islessequal(x, y); break;
    case Py_EQ: r = x == y; break;
    case Py_NE: r = x != y; break;
    case Py_GT: r = std::isgreater(x, y); break;
    case Py_GE: r = std::isgreaterequal(x, y); break;
    default: Py_RETURN_NOTIMPLEMENTED;
  }
  PyArrayScalar_RETURN_BOOL_FROM_LONG(r ? 1 : 0);
}

template <class T>
PyObject* scalar_format(PyObject* self, PyObject* spec) {
  PyObject* f = scalar_float<T>(self);
  if (f == nullptr) return nullptr;
  PyObject* r = PyObject_Format(f, spec);
  Py_DECREF(f);
  return r;
}

template <class T>
PyObject* scalar_reduce(PyObject* self, PyObject*) {
  // Every value (NaN included) comes back from its float with the default conversion.
  PyObject* f = scalar_float<T>(self);
  if (f == nullptr) return nullptr;
  return Py_BuildValue("(O(N))", reinterpret_cast<PyObject*>(Py_TYPE(self)), f);
}

template <class T>
PyObject* scalar_get_code(PyObject* self, void*) {
  return PyLong_FromUnsignedLong(code_of<T>(self));
}

template <class T>
PyObject* scalar_from_code(PyObject* cls, PyObject* arg) {
  const unsigned long c = PyLong_AsUnsignedLong(arg);
  if (c == static_cast<unsigned long>(-1) && PyErr_Occurred()) return nullptr;
  constexpr unsigned long limit = 1UL << sizeof_bits<T>;
  if (c >= limit) {
    PyErr_Format(PyExc_ValueError, "%s.from_code: a %d-bit code lies in [0, %lu), got %lu",
                 std::string(format_name<T>).c_str(), sizeof_bits<T>, limit, c);
    return nullptr;
  }
  auto* t = reinterpret_cast<PyTypeObject*>(cls);
  PyObject* o = t->tp_alloc(t, 0);
  if (o != nullptr) reinterpret_cast<py_scalar<T>*>(o)->code = static_cast<code_t<T>>(c);
  return o;
}

template <class T>
struct scalar_type_def {
  static inline std::string qualified_name = "minifloat." + std::string(format_name<T>);
  static inline std::string doc = std::string(format_name<T>) +
                                  "(x=0): a scalar of the minifloat format " + std::string(format_name<T>) +
                                  ", rounded from x with the format's default conversion. numpy dtype: "
                                  "np.dtype('" + std::string(format_name<T>) + "').";
  static inline PyMethodDef methods[] = {
      {"__format__", reinterpret_cast<PyCFunction>(scalar_format<T>), METH_O, "Formats the value as a float."},
      {"__reduce__", reinterpret_cast<PyCFunction>(scalar_reduce<T>), METH_NOARGS, "Pickle support."},
      {"from_code", reinterpret_cast<PyCFunction>(scalar_from_code<T>), METH_O | METH_CLASS,
       "The scalar whose code (bit pattern) is the given integer."},
      {nullptr, nullptr, 0, nullptr}};
  static inline PyGetSetDef getset[] = {
      {"code", scalar_get_code<T>, nullptr, "The code (bit pattern) as an int.", nullptr},
      {nullptr, nullptr, nullptr, nullptr, nullptr}};
  static inline PyType_Slot slots[] = {
      {Py_tp_new, reinterpret_cast<void*>(scalar_new<T>)},
      {Py_tp_repr, reinterpret_cast<void*>(scalar_repr<T>)},
      {Py_tp_str, reinterpret_cast<void*>(scalar_repr<T>)},
      {Py_tp_hash, reinterpret_cast<void*>(scalar_hash<T>)},
      {Py_tp_richcompare, reinterpret_cast<void*>(scalar_richcompare<T>)},
      {Py_tp_methods, methods},
      {Py_tp_getset, getset},
      {Py_tp_doc, const_cast<char*>(doc.c_str())},
      {Py_nb_add, reinterpret_cast<void*>(scalar_add<T>)},
      {Py_nb_subtract, reinterpret_cast<void*>(scalar_sub<T>)},
      {Py_nb_multiply, reinterpret_cast<void*>(scalar_mul<T>)},
      {Py_nb_true_divide, reinterpret_cast<void*>(scalar_div<T>)},
      {Py_nb_negative, reinterpret_cast<void*>(scalar_neg<T>)},
      {Py_nb_positive, reinterpret_cast<void*>(scalar_pos<T>)},
      {Py_nb_absolute, reinterpret_cast<void*>(scalar_abs<T>)},
      {Py_nb_bool, reinterpret_cast<void*>(scalar_bool<T>)},
      {Py_nb_int, reinterpret_cast<void*>(scalar_int<T>)},
      {Py_nb_float, reinterpret_cast<void*>(scalar_float<T>)},
      {0, nullptr}};
  static inline PyType_Spec spec = {qualified_name.c_str(), static_cast<int>(sizeof(py_scalar<T>)), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
};

// --- ArrFuncs ----------------------------------------------------------------------------------------

template <class T>
PyObject* arr_getitem(void* data, void*) {
  return PyFloat_FromDouble(static_cast<double>(T::from_bits(load<T>(data))));
}

template <class T>
int arr_setitem(PyObject* item, void* data, void*) {
  code_t<T> c{};
  if (!to_code<T>(item, c)) return -1;
  store<T>(data, c);
  return 0;
}

template <class T>
void swap_bytes(char* p) noexcept {
  if constexpr (sizeof(code_t<T>) == 2) std::swap(p[0], p[1]);
}

template <class T>
void arr_copyswapn(void* dst, npy_intp dstride, void* src, npy_intp sstride, npy_intp n, int swap, void*) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  constexpr npy_intp size = sizeof(code_t<T>);
  if (s != nullptr) {
    if (dstride == size && sstride == size) {
      std::memcpy(d, s, static_cast<std::size_t>(n * size));
    } else {
      for (npy_intp i = 0; i < n; ++i) std::memcpy(d + i * dstride, s + i * sstride, size);
    }
  }
  if (swap != 0)
    for (npy_intp i = 0; i < n; ++i) swap_bytes<T>(d + i * dstride);
}

template <class T>
void arr_copyswap(void* dst, void* src, int swap, void*) {
  if (src != nullptr) std::memcpy(dst, src, sizeof(code_t<T>));
  if (swap != 0) swap_bytes<T>(static_cast<char*>(dst));
}

template <class T>
npy_bool arr_nonzero(void* data, void*) {
  return value_of<T>(load<T>(data)) != 0.0f ? NPY_TRUE : NPY_FALSE;
}

template <class T>
int arr_fill(void* buffer, npy_intp length, void*) {
  // np.arange: buffer[0] and buffer[1] are set, the rest follows the step.
  auto* b = static_cast<char*>(buffer);
  constexpr npy_intp size = sizeof(code_t<T>);
  const float start = value_of<T>(load<T>(b)), delta = value_of<T>(load<T>(b + size)) - start;
  for (npy_intp i = 2; i < length; ++i)
    store<T>(b + i * size, encode<T>(start + static_cast<float>(i) * delta));
  return 0;
}

template <class T>
void arr_dot(void* a, npy_intp as, void* b, npy_intp bs, void* out, npy_intp n, void*) {
  const auto* pa = static_cast<const char*>(a);
  const auto* pb = static_cast<const char*>(b);
  float acc = 0.0f;
  for (npy_intp i = 0; i < n; ++i) acc += value_of<T>(load<T>(pa + i * as)) * value_of<T>(load<T>(pb + i * bs));
  store<T>(out, encode<T>(acc));
}

template <class T>
int arr_compare(const void* a, const void* b, void*) {
  const float x = value_of<T>(load<T>(a)), y = value_of<T>(load<T>(b));
  if (std::isless(x, y)) return -1;
  if (std::isless(y, x)) return 1;
  const bool nx = std::isnan(x), ny = std::isnan(y);  // NaN sorts last, as numpy's floats do
  if (!nx && ny) return -1;
  if (nx && !ny) return 1;
  return 0;
}

template <class T, bool Max>
int arr_arg(void* data, npy_intp n, npy_intp* index, void*) {
  const auto* p = static_cast<const char*>(data);
  constexpr npy_intp size = sizeof(code_t<T>);
  if (n <= 0) return 0;
  float best = value_of<T>(load<T>(p));
  *index = 0;
  if (std::isnan(best)) return 0;  // the first NaN wins, as in numpy
  for (npy_intp i = 1; i < n; ++i) {
    const float v = value_of<T>(load<T>(p + i * size));
    if (std::isnan(v)) {
      *index = i;
      return 0;
    }
    if (Max ? std::isgreater(v, best) : std::isless(v, best)) best = v, *index = i;
  }
  return 0;
}

template <class T>
struct descr_storage {
  static inline PyArray_ArrFuncs funcs;
  static inline PyArray_Descr descr;
};

/// The dtype character (`np.dtype(x).char`): ml_dtypes' character for the dtypes the two
/// packages share, so code that tests it sees the same; hifloat8, which ml_dtypes lacks, takes
/// 'X', used by neither package nor numpy. Chosen by name, so a format added to dtype_formats
/// needs no case here unless ml_dtypes has a character for it.
template <class T>
constexpr char type_char() {
  constexpr std::string_view name = format_name<T>;
  constexpr std::pair<std::string_view, char> table[] = {
      {"bfloat16", 'E'},           {"float8_e3m4", '3'},     {"float8_e4m3", '7'},
      {"float8_e4m3b11fnuz", 'L'}, {"float8_e4m3fn", '4'},   {"float8_e4m3fnuz", 'G'},
      {"float8_e5m2", '5'},        {"float8_e5m2fnuz", 'C'}, {"float6_e2m3fn", '8'},
      {"float6_e3m2fn", '9'},      {"float4_e2m1fn", '0'},   {"float8_e8m0fnu", 'W'}};
  for (const auto& [n, c] : table)
    if (n == name) return c;
  return 'X';
}

template <class T>
void register_one(py::module_& m, PyObject* numpy_type_dict) {
  using def = scalar_type_def<T>;
  py::object bases = py::make_tuple(py::handle(reinterpret_cast<PyObject*>(&PyGenericArrType_Type)));
  PyObject* type = PyType_FromSpecWithBases(&def::spec, bases.ptr());
  if (type == nullptr) throw py::error_already_set();
  dtype_slot<T>::scalar_type = reinterpret_cast<PyTypeObject*>(type);

  PyArray_ArrFuncs& f = descr_storage<T>::funcs;
  PyArray_InitArrFuncs(&f);
  f.getitem = arr_getitem<T>;
  f.setitem = arr_setitem<T>;
  f.copyswapn = arr_copyswapn<T>;
  f.copyswap = arr_copyswap<T>;
  f.nonzero = arr_nonzero<T>;
  f.fill = arr_fill<T>;
  f.dotfunc = arr_dot<T>;
  f.compare = arr_compare<T>;
  f.argmax = arr_arg<T, true>;
  f.argmin = arr_arg<T, false>;

  // numpy 1.x keeps a pointer to this descriptor for the lifetime of the process.
  PyArray_Descr& d = descr_storage<T>::descr;
  std::memset(static_cast<void*>(&d), 0, sizeof d);
  Py_SET_REFCNT(reinterpret_cast<PyObject*>(&d), 1);
  Py_SET_TYPE(reinterpret_cast<PyObject*>(&d), &PyArrayDescr_Type);
  d.typeobj = reinterpret_cast<PyTypeObject*>(type);
  d.kind = 'V';  // as ml_dtypes: 'f' would make numpy treat the dtype as one of its own floats
  d.type = type_char<T>();
  d.byteorder = '=';
  // NPY_NEEDS_PYAPI: numpy then holds the GIL around our cast and ufunc loops and checks for a
  // Python error after each call. Without it an error set inside a loop (the ComplexWarning of a
  // complex -> minifloat cast under a warnings-as-errors filter) surfaces as a SystemError; the
  // bulk casts release the GIL themselves while the SIMD codecs run (casts.cpp, without_gil).
  d.flags = NPY_USE_SETITEM | NPY_NEEDS_PYAPI;
  d.elsize = static_cast<int>(sizeof(code_t<T>));
  d.alignment = static_cast<int>(alignof(code_t<T>));
  d.f = &f;
  d.hash = -1;
  const int typenum = PyArray_RegisterDataType(&d);
  if (typenum < 0) throw py::error_already_set();
  dtype_slot<T>::typenum = typenum;
  dtype_slot<T>::descr = PyArray_DescrFromType(typenum);  // kept for the process lifetime

  // np.dtype("hifloat8") looks names up in numpy.sctypeDict.
  if (PyDict_SetItemString(numpy_type_dict, std::string(format_name<T>).c_str(), type) < 0)
    throw py::error_already_set();
  if (PyObject_SetAttrString(type, "dtype", reinterpret_cast<PyObject*>(dtype_slot<T>::descr)) < 0)
    throw py::error_already_set();
  m.add_object(std::string(format_name<T>).c_str(), py::handle(type));
}

std::atomic<unsigned> package_threads{0};

}  // namespace

void register_dtypes(py::module_& m) {
  py::module_ numpy = py::module_::import("numpy");
  py::object type_dict = numpy.attr("sctypeDict");
  for_each_dtype([&](auto tag) { register_one<typename decltype(tag)::type>(m, type_dict.ptr()); });
}

int typenum_of(format_id f) {
  if (f == format_id::float16) return NPY_HALF;
  int t = NPY_NOTYPE;
  for_each_dtype([&](auto tag) {
    using T = typename decltype(tag)::type;
    if (format_id_of<T> == f) t = dtype_slot<T>::typenum;
  });
  return t;
}

std::optional<format_id> format_of_typenum(int typenum) {
  if (typenum == NPY_HALF) return format_id::float16;
  std::optional<format_id> r;
  for_each_dtype([&](auto tag) {
    using T = typename decltype(tag)::type;
    if (dtype_slot<T>::typenum == typenum) r = format_id_of<T>;
  });
  return r;
}

py::dtype dtype_of(format_id f) {
  return py::reinterpret_steal<py::dtype>(reinterpret_cast<PyObject*>(PyArray_DescrFromType(typenum_of(f))));
}

std::string dtype_names() {
  std::string s;
  for_each_dtype([&](auto tag) {
    s += std::string(format_name<typename decltype(tag)::type>) + ", ";
  });
  return s + "float16";
}

format_id parse_format_arg(const py::handle& obj, std::string_view who) {
  if (py::isinstance<py::str>(obj)) {
    const auto name = obj.cast<std::string>();
    if (auto f = parse_format(name)) return *f;
    throw py::value_error(std::string(who) + ": unknown format '" + name + "'; expected one of " + dtype_names());
  }
  PyArray_Descr* d = nullptr;
  if (PyArray_DescrConverter2(obj.ptr(), &d) == 0 || d == nullptr) {
    PyErr_Clear();
    throw py::type_error(std::string(who) + ": expected a dtype (" + dtype_names() + "), got " +
                         std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  }
  const int t = d->type_num;
  Py_DECREF(d);
  if (auto f = format_of_typenum(t)) return *f;
  throw py::type_error(std::string(who) + ": dtype " + std::string(py::str(obj)) + " is not a minifloat format; expected one of " +
                       dtype_names());
}

rounding parse_rounding_arg(std::string_view s, std::string_view who) {
  if (auto r = parse_rounding(s)) return *r;
  throw py::value_error(std::string(who) + ": unknown rounding '" + std::string(s) +
                        "'; expected nearest, nearest_even, nearest_away, toward_zero, upward, downward or stochastic");
}

overflow parse_overflow_arg(std::string_view s, std::string_view who) {
  if (auto o = parse_overflow(s)) return *o;
  throw py::value_error(std::string(who) + ": unknown overflow '" + std::string(s) +
                        "'; expected non_saturating, saturate or saturate_nan_to_zero");
}

simd::isa parse_isa_arg(std::string_view s, std::string_view who) {
  simd::isa i{};
  if (!simd::parse_isa(s, i))
    throw py::value_error(std::string(who) + ": unknown isa '" + std::string(s) +
                          "'; expected automatic, scalar, avx2, avx512 or neon");
  if (!simd::isa_available(i))
    throw py::value_error(std::string(who) + ": isa '" + std::string(s) + "' is not available on this CPU (available: " +
                          std::string(simd::available_isas_string()) + ")");
  return i;
}

unsigned default_threads() {
  const unsigned t = package_threads.load();
  if (t != 0) return t;
  // thread_count(0) asks the OS once: a strided astype calls the cast function once per element.
  return minifloat::thread_count(0);
}

void set_default_threads(unsigned n) { package_threads.store(n); }

unsigned bulk_threads(std::size_t n, unsigned requested) {
  // Below ~256 Ki elements a split costs more than it saves (the chunks fit in L2 anyway).
  constexpr std::size_t min_parallel = std::size_t{1} << 18;
  if (n < min_parallel) return 1;
  const unsigned t = requested != 0 ? requested : default_threads();
  return std::max(1U, t);
}

}  // namespace minifloat::python
