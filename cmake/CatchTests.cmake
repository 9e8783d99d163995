# One ctest entry per Catch2 v2 test case, registered in a way that cannot lose cases.
#
# Catch2 2.13's catch_discover_tests reads the case list as a CMake list, so a name with an
# unbalanced '[' (e.g. "amax in the binade [2^T, 2^(T+1))") swallows every later name into one
# entry whose filter matches nothing -- and ctest counted that as passed. This module replaces it:
#
#   minifloat_catch_tests(<target> [SPEC <catch test spec>] [PREFIX <name prefix>]
#                         [LABELS <label>...] [TIMEOUT <seconds>])
#
# After each build of <target>, cmake/CatchDiscover.cmake lists the cases (names are never held
# in a CMake list) and writes one add_test per case. Each entry:
#   * names its case with every punctuation character backslash-escaped, so the filter matches
#     that case and nothing else;
#   * runs with "-w NoTests" (Catch exits 2 when nothing ran) and fails on Catch's "No test cases
#     matched" / "No tests ran" and on a summary that counts more than one case;
# and one more entry per target, "<prefix>inventory", fails unless the binary's own listing
# has exactly as many cases as were registered, and every registered name is listed.
include_guard(GLOBAL)

set(_MINIFLOAT_CATCH_DISCOVER_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/CatchDiscover.cmake")

function(minifloat_catch_tests target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SPEC;PREFIX;TIMEOUT" "LABELS")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  set(_ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_catch_tests.cmake")
  string(REPLACE ";" "\\;" _labels "${arg_LABELS}")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}"
            -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
            -D "TEST_SPEC=${arg_SPEC}"
            -D "TEST_PREFIX=${arg_PREFIX}"
            -D "TEST_LABELS=${_labels}"
            -D "TEST_TIMEOUT=${arg_TIMEOUT}"
            -D "TEST_WORKING_DIR=${CMAKE_CURRENT_BINARY_DIR}"
            -D "CTEST_FILE=${_ctest_file}"
            -P "${_MINIFLOAT_CATCH_DISCOVER_SCRIPT}"
    VERBATIM)
  # Before the first build the include file does not exist yet: ctest then just skips it.
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${_ctest_file}")
endfunction()
