# Helpers for the project's own (non-installed-library) targets.
include_guard(GLOBAL)

# minifloat_dev_target(<target> [HEADER_ONLY])
#   Everything a test/tool/example/bench executable of this repo gets: the library, the warning
#   flags, and the sanitizer flags (if MINIFLOAT_SANITIZE is set). Also applies the per-TU ISA
#   flags of minifloat_set_isa_flags() to its sources. The library is minifloat::kernels when it
#   is built (every kernel compiled once, core/config.hpp), unless HEADER_ONLY: the targets that
#   exist to check header-only use, and those whose TUs are compiled for one ISA.
function(minifloat_dev_target target)
  cmake_parse_arguments(PARSE_ARGV 1 _dev "HEADER_ONLY" "" "")
  if(TARGET minifloat::kernels AND NOT _dev_HEADER_ONLY)
    target_link_libraries(${target} PRIVATE minifloat::kernels)
  endif()
  target_link_libraries(${target} PRIVATE minifloat::minifloat minifloat_warnings minifloat_sanitizers)
  get_target_property(_sources ${target} SOURCES)
  if(_sources)
    minifloat_set_isa_flags(${_sources})
  endif()
endfunction()

# minifloat_set_isa_flags(<source>...)
#   Per-TU ISA flags by file name (docs/formats/README.md#project-conventions: never -march=native on a target):
#     *avx2*.cpp   -> -mavx2 -mfma -mf16c
#   Only on x86-64 with GCC/Clang; elsewhere the files compile without them (guard their bodies
#   with #if defined(__AVX2__) etc.). Code in such a TU must check the CPU at run time
#   (__builtin_cpu_supports) before executing ISA code.
function(minifloat_set_isa_flags)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang"
     OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    return()
  endif()
  foreach(_src IN LISTS ARGN)
    get_filename_component(_name "${_src}" NAME)
    if(_name MATCHES "avx2.*\\.cpp$")
      set_source_files_properties("${_src}" PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    endif()
  endforeach()
endfunction()

# minifloat_glob_sources(<out-var> <glob>...)
#   file(GLOB ... CONFIGURE_DEPENDS) sorted; empty result is fine (directories fill up later).
function(minifloat_glob_sources out)
  file(GLOB _found LIST_DIRECTORIES false CONFIGURE_DEPENDS ${ARGN})
  list(SORT _found)
  set(${out} "${_found}" PARENT_SCOPE)
endfunction()
