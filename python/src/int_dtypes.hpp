#pragma once
// The narrow integer dtypes int2, int4, uint2, uint4 (int_dtypes.cpp).
#include "common.hpp"

namespace minifloat::python {

/// Registers the scalar types, numpy dtypes, casts (numpy's numeric types and every minifloat
/// float dtype) and ufunc loops of the narrow integers and adds them to module m. Called from
/// module.cpp after register_ufuncs(): the float dtypes' typenums must exist.
void register_int_dtypes(py::module_& m);

}  // namespace minifloat::python
