# MINIFLOAT_WITH_CANN: the Ascend 950 backend shim (include/minifloat/backend/ascend/, opt-in).
#
#   OFF (default)  nothing happens; the shim headers #error if included. CI still builds and runs
#                  the shim against the test-only fake CANN (tests/fake_cann/, label ascend-fake).
#   ON             the CANN toolkit must be found, or configuration stops with FATAL_ERROR. Found:
#                  INTERFACE target minifloat::ascend = minifloat::minifloat + the toolkit's include
#                  dirs + MINIFLOAT_WITH_CANN=1 + ascendcl, nnopbase, opapi_nn, opapi_math (or the
#                  monolithic opapi when the per-repo op libraries are absent; never both, docs/formats/ascend.md#build-and-environment).
#
# Search roots, first hit wins (docs/formats/ascend.md#build-and-environment):
#   -DMINIFLOAT_CANN_ROOT=<dir>, $ENV{ASCEND_HOME_PATH}, $ENV{ASCEND_TOOLKIT_HOME}, $ENV{ASCEND_CUSTOM_PATH},
#   /usr/local/Ascend/cann, /usr/local/Ascend/ascend-toolkit/latest,
#   $ENV{HOME}/Ascend/ascend-toolkit/latest, $ENV{HOME}/Ascend/latest.
# Under a root: headers in include/ (acl/acl.h, aclnnop/aclnn_*.h; aclnn/ for the tensor API),
# libraries in lib64/ (or lib/). Source `<root>/set_env.sh` first on a real install.
#
# Nothing here has been run against a real toolkit (none exists on the development machines).
include_guard(GLOBAL)

if(NOT MINIFLOAT_WITH_CANN)
  return()
endif()

set(MINIFLOAT_CANN_ROOT "" CACHE PATH "CANN toolkit root (overrides the environment variables)")

set(_mf_cann_roots)
foreach(_root IN ITEMS "${MINIFLOAT_CANN_ROOT}" "$ENV{ASCEND_HOME_PATH}" "$ENV{ASCEND_TOOLKIT_HOME}"
                       "$ENV{ASCEND_CUSTOM_PATH}" "/usr/local/Ascend/cann" "/usr/local/Ascend/ascend-toolkit/latest"
                       "$ENV{HOME}/Ascend/ascend-toolkit/latest" "$ENV{HOME}/Ascend/latest")
  if(_root AND IS_DIRECTORY "${_root}")
    list(APPEND _mf_cann_roots "${_root}")
  endif()
endforeach()

find_path(MINIFLOAT_CANN_INCLUDE_DIR NAMES acl/acl.h
          HINTS ${_mf_cann_roots} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_path(MINIFLOAT_CANN_ACLNNOP_DIR NAMES aclnnop/aclnn_quant_matmul_v5.h
          HINTS ${_mf_cann_roots} PATH_SUFFIXES include NO_DEFAULT_PATH)
foreach(_lib IN ITEMS ascendcl nnopbase opapi_nn opapi_math opapi)
  string(TOUPPER "${_lib}" _LIB)
  find_library(MINIFLOAT_CANN_${_LIB}_LIBRARY NAMES ${_lib}
               HINTS ${_mf_cann_roots} PATH_SUFFIXES lib64 lib NO_DEFAULT_PATH)
endforeach()

set(_mf_cann_missing)
foreach(_var IN ITEMS MINIFLOAT_CANN_INCLUDE_DIR MINIFLOAT_CANN_ACLNNOP_DIR MINIFLOAT_CANN_ASCENDCL_LIBRARY
                      MINIFLOAT_CANN_NNOPBASE_LIBRARY)
  if(NOT ${_var})
    list(APPEND _mf_cann_missing "${_var}")
  endif()
endforeach()
# Every operator header the shim includes must sit next to aclnn_quant_matmul_v5.h.
if(MINIFLOAT_CANN_ACLNNOP_DIR)
  foreach(_hdr IN ITEMS aclnn_ascend_quant_v3.h aclnn_cast.h aclnn_copy.h aclnn_dynamic_mx_quant_v3.h
                        aclnn_dynamic_quant_v4.h aclnn_grouped_matmul_v4.h aclnn_mul.h aclnn_quant_max.h)
    if(NOT EXISTS "${MINIFLOAT_CANN_ACLNNOP_DIR}/aclnnop/${_hdr}")
      list(APPEND _mf_cann_missing "${MINIFLOAT_CANN_ACLNNOP_DIR}/aclnnop/${_hdr}")
    endif()
  endforeach()
endif()
# Per-repo op libraries (opapi_nn + opapi_math) preferred; the deprecated monolithic opapi otherwise.
if(MINIFLOAT_CANN_OPAPI_NN_LIBRARY AND MINIFLOAT_CANN_OPAPI_MATH_LIBRARY)
  set(_mf_cann_op_libs "${MINIFLOAT_CANN_OPAPI_NN_LIBRARY}" "${MINIFLOAT_CANN_OPAPI_MATH_LIBRARY}")
elseif(MINIFLOAT_CANN_OPAPI_LIBRARY)
  set(_mf_cann_op_libs "${MINIFLOAT_CANN_OPAPI_LIBRARY}")
else()
  list(APPEND _mf_cann_missing "MINIFLOAT_CANN_OPAPI_NN_LIBRARY + MINIFLOAT_CANN_OPAPI_MATH_LIBRARY (or MINIFLOAT_CANN_OPAPI_LIBRARY)")
endif()

if(_mf_cann_missing)
  list(JOIN _mf_cann_missing "\n    " _mf_missing_text)
  if(_mf_cann_roots)
    list(JOIN _mf_cann_roots "\n    " _mf_roots_text)
  else()
    set(_mf_roots_text "(none of the candidate directories exists)")
  endif()
  message(FATAL_ERROR
    "MINIFLOAT_WITH_CANN=ON but the CANN toolkit was not found.\n"
    "  Missing:\n    ${_mf_missing_text}\n"
    "  Roots searched:\n    ${_mf_roots_text}\n"
    "  Expected <root>/include/acl/acl.h, <root>/include/aclnnop/aclnn_*.h and <root>/lib64/lib{ascendcl,nnopbase,"
    "opapi_nn,opapi_math}.so. Source <root>/set_env.sh (sets ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME), pass "
    "-DMINIFLOAT_CANN_ROOT=<root>, or configure with -DMINIFLOAT_WITH_CANN=OFF.")
endif()

add_library(minifloat_ascend INTERFACE)
add_library(minifloat::ascend ALIAS minifloat_ascend)
target_link_libraries(minifloat_ascend INTERFACE
  minifloat "${MINIFLOAT_CANN_ASCENDCL_LIBRARY}" "${MINIFLOAT_CANN_NNOPBASE_LIBRARY}" ${_mf_cann_op_libs})
target_include_directories(minifloat_ascend SYSTEM INTERFACE
  "${MINIFLOAT_CANN_INCLUDE_DIR}" "${MINIFLOAT_CANN_INCLUDE_DIR}/aclnn" "${MINIFLOAT_CANN_ACLNNOP_DIR}")
target_compile_definitions(minifloat_ascend INTERFACE MINIFLOAT_WITH_CANN=1)
message(STATUS "minifloat: CANN toolkit at ${MINIFLOAT_CANN_INCLUDE_DIR}/.. -> minifloat::ascend "
  "(the Ascend shim is UNTESTED ON HARDWARE; see docs/backends.md)")
