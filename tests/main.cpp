// The one Catch2 v2 main, compiled once (object library minifloat_catch_main in
// tests/CMakeLists.txt) and linked into minifloat_tests and minifloat_exhaustive.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
