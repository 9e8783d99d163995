# Included from python/CMakeLists.txt: one ctest per test_*.py file of tests/python/, label "python",
# running pytest with the freshly built package first on PYTHONPATH. conftest.py fails a run in
# which no test passed, so a file whose tests are all skipped (or that collects nothing) fails.
file(GLOB MINIFLOAT_PYTHON_TESTS CONFIGURE_DEPENDS "${CMAKE_CURRENT_LIST_DIR}/test_*.py")
list(SORT MINIFLOAT_PYTHON_TESTS)
execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import pytest"
                RESULT_VARIABLE _minifloat_pytest_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT _minifloat_pytest_rc EQUAL 0)
  message(STATUS "minifloat: Python tests not registered: pytest is missing for ${Python3_EXECUTABLE} "
    "(install python3-pytest)")
  return()
endif()
set(_minifloat_python_env
  "PYTHONPATH=${MINIFLOAT_PYTHON_PACKAGE_DIR}/.."
  "PYTHONDONTWRITEBYTECODE=1"
  "MINIFLOAT_TEST_DATA_DIR=${PROJECT_SOURCE_DIR}/tests/data"
  "MINIFLOAT_BUILD_DIR=${PROJECT_BINARY_DIR}")
if(TARGET minifloat_cli)
  # test_metrics_recipes.py compares analyze() with the CLI's JSON.
  list(APPEND _minifloat_python_env "MINIFLOAT_CLI=$<TARGET_FILE:minifloat_cli>")
endif()
if(MINIFLOAT_SANITIZE)
  # The interpreter is not instrumented: the sanitizer runtimes are preloaded for the extension;
  # CPython's and numpy's own allocations are not leaks we can act on.
  set(_minifloat_preload "")
  foreach(_san IN ITEMS address undefined)
    if(_san IN_LIST MINIFLOAT_SANITIZE)
      set(_lib asan)
      if(_san STREQUAL "undefined")
        set(_lib ubsan)
      endif()
      execute_process(COMMAND "${CMAKE_CXX_COMPILER}" "-print-file-name=lib${_lib}.so"
                      OUTPUT_VARIABLE _path OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(EXISTS "${_path}")
        list(APPEND _minifloat_preload "${_path}")
      endif()
    endif()
  endforeach()
  list(JOIN _minifloat_preload ":" _minifloat_preload)
  list(APPEND _minifloat_python_env
    "LD_PRELOAD=${_minifloat_preload}"
    "ASAN_OPTIONS=detect_leaks=0:detect_odr_violation=0"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
    "MINIFLOAT_TEST_SANITIZED=1")
endif()
foreach(_test IN LISTS MINIFLOAT_PYTHON_TESTS)
  get_filename_component(_name "${_test}" NAME_WE)
  add_test(NAME "python: ${_name}"
           COMMAND "${Python3_EXECUTABLE}" -m pytest -q -p no:cacheprovider "${_test}"
           WORKING_DIRECTORY "${CMAKE_CURRENT_LIST_DIR}")
  set_tests_properties("python: ${_name}" PROPERTIES
    LABELS python TIMEOUT 600
    ENVIRONMENT "${_minifloat_python_env}")
endforeach()
