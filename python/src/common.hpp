#pragma once
// Shared by every TU of the extension: the Python / numpy headers in the one order they need,
// the list of formats that become numpy dtypes, their registry, and the small converters from
// Python arguments (format names, rounding modes, ISA levels) to the library's types.
//
// numpy's C API is a table of function pointers that import_array() fills in; every TU sees the
// same table through PY_ARRAY_UNIQUE_SYMBOL, and only module.cpp (MINIFLOAT_NUMPY_IMPORT) defines it.
#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#define PY_ARRAY_UNIQUE_SYMBOL minifloat_numpy_array_api
#define PY_UFUNC_UNIQUE_SYMBOL minifloat_numpy_ufunc_api
#ifndef MINIFLOAT_NUMPY_IMPORT
#define NO_IMPORT_ARRAY
#define NO_IMPORT_UFUNC
#endif
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
#include <numpy/arrayscalars.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>

#include <minifloat/core/policy.hpp>
#include <minifloat/formats/format_list.hpp>
#include <minifloat/simd/isa.hpp>
#include <minifloat/simd/options.hpp>

namespace minifloat::python {

namespace py = pybind11;

/// The formats that get a numpy dtype of their own (float16 is numpy's own np.float16).
using dtype_formats = std::tuple<hifloat8, float8_e4m3fn, float8_e5m2, float8_e8m0fnu, float6_e3m2fn,
                                 float6_e2m3fn, float4_e2m1fn, bfloat16, float8_e4m3fnuz, float8_e5m2fnuz,
                                 float8_e4m3b11fnuz, float8_e3m4, float8_e4m3>;

template <class T>
using code_t = typename T::storage_type;

/// What numpy knows about one of our dtypes; filled in by register_dtypes().
template <class T>
struct dtype_slot {
  static inline int typenum = NPY_NOTYPE;
  static inline PyTypeObject* scalar_type = nullptr;  // the scalar class, minifloat.<name>
  static inline PyArray_Descr* descr = nullptr;
};

/// The Python-side scalar: a numpy generic holding one code (its layout is what numpy's
/// PyArray_Scalar writes for a user dtype: the element right after the object header).
template <class T>
struct py_scalar {
  PyObject_HEAD
  code_t<T> code;
};

template <class F>
void for_each_dtype(F&& f) {
  [&]<class... T>(std::tuple<T...>*) { (f(type_tag<T>{}), ...); }(static_cast<dtype_formats*>(nullptr));
}

/// A format chosen at run time: one of dtype_formats, or numpy's float16.
struct format_choice {
  format_id id = format_id::hifloat8;
  [[nodiscard]] bool is_float16() const noexcept { return id == format_id::float16; }
};

/// The typenum of format f's dtype (NPY_HALF for float16).
int typenum_of(format_id f);
/// The format whose dtype has this typenum, if any (NPY_HALF -> float16).
std::optional<format_id> format_of_typenum(int typenum);
/// The numpy dtype of format f (new reference).
py::dtype dtype_of(format_id f);

/// A dtype argument: a name ("hifloat8"), a scalar type (minifloat.hifloat8, np.float16), or a
/// numpy dtype. Throws TypeError/ValueError naming the formats it accepts.
format_id parse_format_arg(const py::handle& obj, std::string_view who);

rounding parse_rounding_arg(std::string_view s, std::string_view who);
overflow parse_overflow_arg(std::string_view s, std::string_view who);
simd::isa parse_isa_arg(std::string_view s, std::string_view who);

/// Thread count for bulk kernels on n elements: `requested` (0 = the package default), 1 below
/// the size where splitting pays off.
unsigned bulk_threads(std::size_t n, unsigned requested = 0);
unsigned default_threads();
void set_default_threads(unsigned n);

/// The names every dtype argument accepts, for error messages.
std::string dtype_names();

/// A registration call of numpy's C API (PyArray_RegisterCastFunc, ...) that returned < 0: the
/// Python error it set, as a C++ exception.
inline void check_registration(int rc) {
  if (rc < 0) throw py::error_already_set();
}

/// An owned descriptor of a numpy builtin type (PyArray_DescrFromType returns a new reference;
/// the registration calls borrow it).
struct descr_ref {
  PyArray_Descr* d;
  explicit descr_ref(int typenum) : d(PyArray_DescrFromType(typenum)) {
    if (d == nullptr) throw py::error_already_set();
  }
  ~descr_ref() { Py_XDECREF(d); }
  descr_ref(const descr_ref&) = delete;
  descr_ref& operator=(const descr_ref&) = delete;
};

// Registration steps, called once from module.cpp in this order.
void register_dtypes(py::module_& m);  // dtypes.cpp: scalar types + descriptors
void register_casts();                 // casts.cpp
void register_ufuncs();                // ufuncs.cpp
void bind_cast(py::module_& m);        // casts.cpp: minifloat.cast & co
void bind_quant(py::module_& m);       // quant.cpp: quantize, gemm, metrics
void bind_recipes(py::module_& m);     // recipes.cpp: scaling recipes

}  // namespace minifloat::python
