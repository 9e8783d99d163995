# minifloat_sanitizers: private INTERFACE target that applies MINIFLOAT_SANITIZE
# (a list such as "address;undefined") to compile and link of the targets that link it
# (tests, tools, examples, bench; see minifloat_dev_target() in DevTargets.cmake).
# Debug builds with sanitizers also get -D_GLIBCXX_ASSERTIONS (bounds-checked libstdc++).
include_guard(GLOBAL)

add_library(minifloat_sanitizers INTERFACE)

if(MINIFLOAT_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "MINIFLOAT_SANITIZE needs GCC or Clang (have ${CMAKE_CXX_COMPILER_ID})")
  endif()
  set(_minifloat_known_sanitizers address undefined leak thread memory)
  foreach(_san IN LISTS MINIFLOAT_SANITIZE)
    if(NOT _san IN_LIST _minifloat_known_sanitizers)
      message(FATAL_ERROR "MINIFLOAT_SANITIZE: unknown sanitizer '${_san}' "
        "(known: ${_minifloat_known_sanitizers}; separate with ';', e.g. \"address;undefined\")")
    endif()
  endforeach()
  if("thread" IN_LIST MINIFLOAT_SANITIZE AND "address" IN_LIST MINIFLOAT_SANITIZE)
    message(FATAL_ERROR "MINIFLOAT_SANITIZE: 'thread' and 'address' cannot be combined")
  endif()
  if("memory" IN_LIST MINIFLOAT_SANITIZE AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MINIFLOAT_SANITIZE: 'memory' needs Clang")
  endif()

  list(JOIN MINIFLOAT_SANITIZE "," _minifloat_san_joined)
  set(_minifloat_san_flags
    -fsanitize=${_minifloat_san_joined}
    -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
  target_compile_options(minifloat_sanitizers INTERFACE ${_minifloat_san_flags})
  target_link_options(minifloat_sanitizers INTERFACE ${_minifloat_san_flags})
  target_compile_definitions(minifloat_sanitizers INTERFACE
    $<$<CONFIG:Debug>:_GLIBCXX_ASSERTIONS>)
endif()
