# minifloat_probe_python(): can the Python extension (python/) be built here?
#
# Sets, in the caller's scope:
#   MINIFLOAT_PYTHON_USABLE   TRUE / FALSE
#   MINIFLOAT_PYTHON_REASON   why not (one sentence), when FALSE
#   MINIFLOAT_PYTHON_EXE      the interpreter (with numpy) the extension is built for
#   MINIFLOAT_NUMPY_INCLUDE   numpy's C headers of that interpreter
#   MINIFLOAT_NUMPY_VERSION   e.g. 1.24.2
#
# The interpreter: -DPython3_EXECUTABLE=... if given (and then only that one); otherwise the first
# of `python3` on PATH and /usr/bin/python3 that imports numpy. (On machines where the first
# python3 is a pyenv shim without numpy this picks Debian's /usr/bin/python3.) pybind11 is used as
# headers only: its CMake package (if any) is loaded with PYBIND11_NOPYTHON, so that pybind11's own
# interpreter search can never abort the configure. Nothing here is fatal.
include_guard(GLOBAL)

function(minifloat_probe_python)
  set(MINIFLOAT_PYTHON_USABLE FALSE PARENT_SCOPE)
  if(DEFINED Python3_EXECUTABLE AND NOT Python3_EXECUTABLE STREQUAL "")
    set(_candidates "${Python3_EXECUTABLE}")
  else()
    find_program(_minifloat_path_python3 NAMES python3 NO_CACHE)
    set(_candidates)
    if(_minifloat_path_python3)
      list(APPEND _candidates "${_minifloat_path_python3}")
    endif()
    if(EXISTS /usr/bin/python3)
      list(APPEND _candidates /usr/bin/python3)
    endif()
    list(REMOVE_DUPLICATES _candidates)
  endif()
  if(NOT _candidates)
    set(MINIFLOAT_PYTHON_REASON "no python3 interpreter found (set -DPython3_EXECUTABLE=...)" PARENT_SCOPE)
    return()
  endif()

  set(_exe "")
  foreach(_cand IN LISTS _candidates)
    execute_process(
      COMMAND "${_cand}" -c "import numpy, sys; print(numpy.get_include()); print(numpy.__version__); print(sys.prefix)"
      RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 60)
    if(_rc EQUAL 0)
      string(REPLACE "\n" ";" _lines "${_out}")
      list(GET _lines 0 _numpy_include)
      list(GET _lines 1 _numpy_version)
      set(_exe "${_cand}")
      break()
    endif()
  endforeach()
  if(_exe STREQUAL "")
    string(REPLACE ";" ", " _tried "${_candidates}")
    set(MINIFLOAT_PYTHON_REASON
      "no interpreter with numpy (tried ${_tried}; install python3-numpy or pass -DPython3_EXECUTABLE=...)" PARENT_SCOPE)
    return()
  endif()
  if(_numpy_version VERSION_LESS 1.21 OR NOT _numpy_version VERSION_LESS 2.0)
    set(MINIFLOAT_PYTHON_REASON
      "${_exe} has numpy ${_numpy_version}; the extension uses numpy 1.x's user-dtype API (>= 1.21, < 2.0)" PARENT_SCOPE)
    return()
  endif()

  # Development headers of exactly that interpreter.
  set(Python3_EXECUTABLE "${_exe}")
  find_package(Python3 QUIET COMPONENTS Interpreter Development.Module)
  if(NOT Python3_Development.Module_FOUND)
    set(MINIFLOAT_PYTHON_REASON "no Python development headers for ${_exe} (install python3-dev)" PARENT_SCOPE)
    return()
  endif()

  # pybind11, headers only.
  set(_pybind11_include "")
  if(NOT TARGET pybind11::headers)
    set(PYBIND11_NOPYTHON ON)
    find_package(pybind11 2.6 CONFIG QUIET)
  endif()
  if(TARGET pybind11::headers)
    set(_pybind11_target pybind11::headers)
  else()
    execute_process(COMMAND "${_exe}" -c "import pybind11; print(pybind11.get_include())"
      RESULT_VARIABLE _rc OUTPUT_VARIABLE _hint ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 60)
    find_path(MINIFLOAT_PYBIND11_INCLUDE pybind11/pybind11.h HINTS ${_hint})
    if(NOT MINIFLOAT_PYBIND11_INCLUDE)
      set(MINIFLOAT_PYTHON_REASON "pybind11 headers not found (install pybind11-dev)" PARENT_SCOPE)
      return()
    endif()
    set(_pybind11_include "${MINIFLOAT_PYBIND11_INCLUDE}")
    set(_pybind11_target "")
  endif()

  set(MINIFLOAT_PYTHON_USABLE TRUE PARENT_SCOPE)
  set(MINIFLOAT_PYTHON_EXE "${_exe}" PARENT_SCOPE)
  set(MINIFLOAT_NUMPY_INCLUDE "${_numpy_include}" PARENT_SCOPE)
  set(MINIFLOAT_NUMPY_VERSION "${_numpy_version}" PARENT_SCOPE)
  set(MINIFLOAT_PYBIND11_TARGET "${_pybind11_target}" PARENT_SCOPE)
  set(MINIFLOAT_PYBIND11_INCLUDE_DIR "${_pybind11_include}" PARENT_SCOPE)
  set(Python3_EXECUTABLE "${_exe}" PARENT_SCOPE)
endfunction()
