// minifloat._minifloat: numpy's C API is imported here (once for all TUs), then the dtypes, their
// casts and ufunc loops are registered, then the functions are bound. The package's __init__.py
// re-exports everything.
#define MINIFLOAT_NUMPY_IMPORT
#include "common.hpp"
#include "int_dtypes.hpp"

#include <minifloat/core/version.hpp>

namespace {

// import_array() / import_umath() are macros that `return` on failure; wrap them.
bool import_numpy() {
  if (_import_array() < 0) return false;
  if (_import_umath() < 0) return false;
  return true;
}

}  // namespace

PYBIND11_MODULE(_minifloat, m) {
  namespace mp = minifloat::python;
  if (!import_numpy()) throw pybind11::error_already_set();
  m.doc() = "minifloat: numpy dtypes, exact casts, scaled and MX quantization, the quantized GEMM and "
            "fidelity metrics for HiF8, OCP FP8 and the MX formats (C++ core: include/minifloat/).";
  m.attr("__version__") = std::to_string(MINIFLOAT_VERSION_MAJOR) + "." + std::to_string(MINIFLOAT_VERSION_MINOR) + "." +
                          std::to_string(MINIFLOAT_VERSION_PATCH);
  mp::register_dtypes(m);
  mp::register_casts();
  mp::register_ufuncs();
  mp::register_int_dtypes(m);
  mp::bind_cast(m);
  mp::bind_quant(m);
  mp::bind_recipes(m);
}
