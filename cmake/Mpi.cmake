# MINIFLOAT_WITH_MPI (default ON): the quantized collectives over MPI (include/minifloat/comm/mpi.hpp).
#
#   found      INTERFACE target minifloat::mpi = minifloat::minifloat + MPI::MPI_CXX (the C API;
#              the deprecated C++ bindings are skipped); MINIFLOAT_MPI_FOUND = ON;
#              minifloat_add_mpi_test() registers mpirun tests (label "mpi").
#   not found  ONE configure message; minifloat::mpi, tests/mpi, bench/mpi and
#              examples/moe_all_to_all (and the data-parallel training example) are skipped.
#              Debian: openmpi-bin libopenmpi-dev (scripts/install-deps.sh installs them).
# The MPI-free parts of comm/ (recipe, codec, bucket, reference) need no target of their own.
include_guard(GLOBAL)

set(MINIFLOAT_MPI_FOUND OFF)
if(NOT MINIFLOAT_WITH_MPI)
  message(STATUS "minifloat: MINIFLOAT_WITH_MPI=OFF: minifloat::mpi and its tests, bench and examples are skipped")
  return()
endif()

set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI QUIET COMPONENTS CXX)
if(NOT MPI_CXX_FOUND OR NOT MPIEXEC_EXECUTABLE)
  message(STATUS "minifloat: MPI not found (Debian: openmpi-bin libopenmpi-dev, see scripts/install-deps.sh): "
    "minifloat::mpi and its tests, bench and examples are skipped")
  return()
endif()

add_library(minifloat_mpi INTERFACE)
add_library(minifloat::mpi ALIAS minifloat_mpi)
target_link_libraries(minifloat_mpi INTERFACE minifloat MPI::MPI_CXX)
set(MINIFLOAT_MPI_FOUND ON)
message(STATUS "minifloat: MPI ${MPI_CXX_VERSION} (${MPIEXEC_EXECUTABLE}) -> minifloat::mpi")

set(MINIFLOAT_MPI_TEST_TIMEOUT 300 CACHE STRING "ctest TIMEOUT (s) of one mpirun test (a deadlock fails, never hangs)")
mark_as_advanced(MINIFLOAT_MPI_TEST_TIMEOUT)

# minifloat_add_mpi_test(<name> <ranks> <command> [args...])
#   ctest "mpi: <name> np=<ranks>" = mpirun -n <ranks> <command> [args...], label "mpi", bounded by
#   MINIFLOAT_MPI_TEST_TIMEOUT. Open MPI is told through its environment (ignored by other MPIs)
#   that running as root (CI) and more ranks than cores (4 ranks on 2 cores) are intended, and
#   that idle ranks should yield their core when ranks outnumber cores (busy polling would starve
#   the oversubscribed ranks).
#   LeakSanitizer is off for these: Open MPI keeps allocations alive past MPI_Finalize.
cmake_host_system_information(RESULT MINIFLOAT_HOST_CORES QUERY NUMBER_OF_LOGICAL_CORES)
function(minifloat_add_mpi_test name ranks)
  set(_test "mpi: ${name} np=${ranks}")
  # Yielding only pays when ranks outnumber the cores; otherwise it hands the core to other jobs.
  set(_yield "")
  if(ranks GREATER MINIFLOAT_HOST_CORES)
    set(_yield "OMPI_MCA_mpi_yield_when_idle=1;")
  endif()
  add_test(NAME "${_test}"
           COMMAND "${MPIEXEC_EXECUTABLE}" ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${MPIEXEC_PREFLAGS} ${ARGN} ${MPIEXEC_POSTFLAGS})
  set_tests_properties("${_test}" PROPERTIES
    LABELS mpi
    TIMEOUT ${MINIFLOAT_MPI_TEST_TIMEOUT}
    PROCESSORS ${ranks}
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;${_yield}OMPI_MCA_btl_vader_single_copy_mechanism=none;ASAN_OPTIONS=detect_leaks=0")
endfunction()
