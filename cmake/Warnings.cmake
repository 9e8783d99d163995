# minifloat_warnings: private INTERFACE target carrying the project's warning flags.
# Link it PRIVATE from tests, tools, examples, bench and fuzz targets. It is never linked from
# (or exported with) minifloat::minifloat, so consumers never inherit our warning policy.
include_guard(GLOBAL)

add_library(minifloat_warnings INTERFACE)

if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(minifloat_warnings INTERFACE
    -Wall -Wextra -Wpedantic
    -Wconversion -Wsign-conversion
    -Wshadow -Wold-style-cast -Wcast-qual -Wundef)
  if(MINIFLOAT_WERROR)
    target_compile_options(minifloat_warnings INTERFACE -Werror)
  endif()
elseif(MSVC)
  target_compile_options(minifloat_warnings INTERFACE /W4 /permissive-)
  if(MINIFLOAT_WERROR)
    target_compile_options(minifloat_warnings INTERFACE /WX)
  endif()
endif()
