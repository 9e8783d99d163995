# Script mode, run by minifloat_catch_tests() after each build (see CatchTests.cmake).
#   MODE unset:  list the cases of TEST_EXECUTABLE and write CTEST_FILE
#   MODE=check:  the inventory entry; fails unless the listing still has EXPECTED_COUNT cases
#                with the digest EXPECTED_DIGEST
# Names are walked line by line as strings and never stored in a CMake list: a list would
# re-split them at ';' and merge elements across an unbalanced '['.
cmake_minimum_required(VERSION 3.21)

function(_list_cases out_text)
  set(_spec_args "")
  if(NOT "${TEST_SPEC}" STREQUAL "")
    set(_spec_args "${TEST_SPEC}")
  endif()
  execute_process(
    COMMAND "${TEST_EXECUTABLE}" ${_spec_args} --list-test-names-only
    OUTPUT_VARIABLE _out
    ERROR_VARIABLE _err
    RESULT_VARIABLE _rc
    WORKING_DIRECTORY "${TEST_WORKING_DIR}")
  # --list-test-names-only exits with the number of cases (capped at 255), so only a signal or
  # a failure to start is an error.
  if(NOT _rc MATCHES "^[0-9]+$")
    message(FATAL_ERROR "listing the test cases of ${TEST_EXECUTABLE} failed: ${_rc}\n${_err}")
  endif()
  string(REPLACE "\r" "" _out "${_out}")
  set(${out_text} "${_out}" PARENT_SCOPE)
endfunction()

# Calls the macro _on_case(name) for each non-empty line of text.
macro(_for_each_case text)
  set(_rest "${text}")
  while(NOT "${_rest}" STREQUAL "")
    string(FIND "${_rest}" "\n" _nl)
    if(_nl EQUAL -1)
      set(_line "${_rest}")
      set(_rest "")
    else()
      string(SUBSTRING "${_rest}" 0 ${_nl} _line)
      math(EXPR _next "${_nl} + 1")
      string(SUBSTRING "${_rest}" ${_next} -1 _rest)
    endif()
    if(NOT "${_line}" STREQUAL "")
      _on_case("${_line}")
    endif()
  endwhile()
endmacro()

_list_cases(_listing)

if("${MODE}" STREQUAL "check")
  set(_count 0)
  macro(_on_case name)
    math(EXPR _count "${_count} + 1")
  endmacro()
  _for_each_case("${_listing}")
  string(SHA256 _digest "${_listing}")
  if(NOT _count EQUAL EXPECTED_COUNT OR NOT _digest STREQUAL EXPECTED_DIGEST)
    message(FATAL_ERROR "${TEST_EXECUTABLE} lists ${_count} test cases (digest ${_digest}), but "
      "${EXPECTED_COUNT} were registered (digest ${EXPECTED_DIGEST}): rebuild to re-register")
  endif()
  message(STATUS "${_count} test cases listed, ${EXPECTED_COUNT} registered as ctest entries")
  return()
endif()

set(_script "")
set(_count 0)
set(_fail_regex [=[No test cases matched;No tests ran;in [0-9]+ test cases\);test cases: +([02-9]|[1-9][0-9])]=])
macro(_on_case name)
  set(_name "${name}")
  if(_name MATCHES "^\\*|\\*$|;|]==]")
    message(FATAL_ERROR "test case name '${_name}' of ${TEST_EXECUTABLE}: a leading or trailing '*', "
      "a ';' or ']==]' cannot be registered exactly; rename the case")
  endif()
  # Catch2's spec parser takes the character after a backslash literally, so escaping every
  # punctuation character turns the name into a filter for exactly this name.
  string(REGEX REPLACE "([^A-Za-z0-9 _])" "\\\\\\1" _filter "${_name}")
  string(APPEND _script
    "add_test([==[${TEST_PREFIX}${_name}]==] [==[${TEST_EXECUTABLE}]==] [==[${_filter}]==] -w NoTests)\n"
    "set_tests_properties([==[${TEST_PREFIX}${_name}]==] PROPERTIES"
    " WORKING_DIRECTORY [==[${TEST_WORKING_DIR}]==]"
    " LABELS [==[${TEST_LABELS}]==] TIMEOUT ${TEST_TIMEOUT}"
    " FAIL_REGULAR_EXPRESSION [==[${_fail_regex}]==])\n")
  math(EXPR _count "${_count} + 1")
endmacro()
_for_each_case("${_listing}")

if(_count EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} (spec '${TEST_SPEC}') lists no test cases")
endif()
string(SHA256 _digest "${_listing}")
get_filename_component(_exe_name "${TEST_EXECUTABLE}" NAME)
string(APPEND _script
  "add_test([==[${TEST_PREFIX}inventory: ${_exe_name}]==] [==[${CMAKE_COMMAND}]==]"
  " -D [==[TEST_EXECUTABLE=${TEST_EXECUTABLE}]==] -D [==[TEST_SPEC=${TEST_SPEC}]==]"
  " -D [==[TEST_WORKING_DIR=${TEST_WORKING_DIR}]==] -D MODE=check"
  " -D EXPECTED_COUNT=${_count} -D EXPECTED_DIGEST=${_digest}"
  " -P [==[${CMAKE_CURRENT_LIST_FILE}]==])\n"
  "set_tests_properties([==[${TEST_PREFIX}inventory: ${_exe_name}]==] PROPERTIES"
  " LABELS [==[${TEST_LABELS}]==] TIMEOUT 120)\n")
file(WRITE "${CTEST_FILE}" "${_script}")
