# cmake -P driver for the "install_consumer" / "build_tree_consumer" ctests (tests/CMakeLists.txt).
#   MODE=install     cmake --install <MINIFLOAT_BINARY_DIR> into <WORK_DIR>/prefix, then build
#                    tests/install_consumer with CMAKE_PREFIX_PATH=<WORK_DIR>/prefix
#   MODE=build-tree  build tests/install_consumer with minifloat_DIR=<MINIFLOAT_BINARY_DIR>
# and run the consumer, which must print "1" (float8_e4m3fn 0x38 == 1.0) on its first line and a
# checksum of its results.
# Inputs: MINIFLOAT_BINARY_DIR CONSUMER_SOURCE_DIR WORK_DIR MODE CONFIG GENERATOR MAKE_PROGRAM
#         CXX_COMPILER WITH_FMT FMT_DIR EXPECT_KERNELS (the package has minifloat::kernels: run
#         the compiled-kernels consumer too and compare its checksum with the header-only one)

foreach(_var MINIFLOAT_BINARY_DIR CONSUMER_SOURCE_DIR WORK_DIR MODE GENERATOR)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "RunInstallConsumer.cmake: -D${_var}=... is required")
  endif()
endforeach()

set(_build_type "${CONFIG}")
if(_build_type STREQUAL "")
  set(_build_type Release)
endif()

function(_run step)
  string(REPLACE ";" " " _pretty "${ARGN}")
  message(STATUS "[${step}] ${_pretty}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message("${_out}")
    message(FATAL_ERROR "[${step}] failed (exit ${_rc})")
  endif()
  set(_last_output "${_out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(_consumer_build "${WORK_DIR}/consumer-build")

set(_find_args -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
if(MODE STREQUAL "install")
  set(_prefix "${WORK_DIR}/prefix")
  _run(install "${CMAKE_COMMAND}" --install "${MINIFLOAT_BINARY_DIR}" --prefix "${_prefix}"
       --config "${_build_type}")
  foreach(_f include/minifloat/minifloat.hpp)
    if(NOT EXISTS "${_prefix}/${_f}")
      message(FATAL_ERROR "install: ${_prefix}/${_f} is missing")
    endif()
  endforeach()
  list(APPEND _find_args "-DCMAKE_PREFIX_PATH=${_prefix}" "-DMINIFLOAT_EXPECT_DIR=${_prefix}")
elseif(MODE STREQUAL "build-tree")
  list(APPEND _find_args "-Dminifloat_DIR=${MINIFLOAT_BINARY_DIR}"
                         "-DMINIFLOAT_EXPECT_DIR=${MINIFLOAT_BINARY_DIR}")
else()
  message(FATAL_ERROR "RunInstallConsumer.cmake: unknown MODE '${MODE}'")
endif()

set(_configure "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${_consumer_build}"
    -G "${GENERATOR}" "-DCMAKE_BUILD_TYPE=${_build_type}" ${_find_args})
if(MAKE_PROGRAM)
  list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER)
  list(APPEND _configure "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(WITH_FMT)
  list(APPEND _configure -DCONSUMER_WITH_FMT=ON)
  if(FMT_DIR)
    list(APPEND _configure "-Dfmt_DIR=${FMT_DIR}")
  endif()
endif()
_run(configure ${_configure})
_run(build "${CMAKE_COMMAND}" --build "${_consumer_build}" --config "${_build_type}")

set(_exe "${_consumer_build}/bin/minifloat_consumer${CMAKE_EXECUTABLE_SUFFIX}")
_run(run "${_exe}")
message(STATUS "[run] output:\n${_last_output}")
string(REGEX MATCH "^[^\n]*" _first_line "${_last_output}")
if(NOT _first_line STREQUAL "1")
  message(FATAL_ERROR "[run] expected first line '1', got '${_first_line}'")
endif()
string(REGEX MATCH "checksum [0-9a-f]+" _header_only_sum "${_last_output}")
if(_header_only_sum STREQUAL "")
  message(FATAL_ERROR "[run] the header-only consumer printed no checksum line")
endif()

# The compiled-kernels consumer (when the package was built with minifloat::kernels): the same
# first line and the same checksum, i.e. the same bits from the kernels compiled once.
if(EXPECT_KERNELS)
  set(_kexe "${_consumer_build}/bin/minifloat_consumer_kernels${CMAKE_EXECUTABLE_SUFFIX}")
  if(NOT EXISTS "${_kexe}")
    message(FATAL_ERROR "[run] ${_kexe} was not built although the package has minifloat::kernels")
  endif()
  _run(run-kernels "${_kexe}")
  message(STATUS "[run-kernels] output:\n${_last_output}")
  string(REGEX MATCH "^[^\n]*" _first_line "${_last_output}")
  string(REGEX MATCH "checksum [0-9a-f]+" _kernels_sum "${_last_output}")
  if(NOT _first_line STREQUAL "1" OR NOT _kernels_sum STREQUAL _header_only_sum)
    message(FATAL_ERROR "[run-kernels] expected '1' and '${_header_only_sum}', got '${_first_line}' and '${_kernels_sum}'")
  endif()
endif()
message(STATUS "${MODE} consumer: OK")
