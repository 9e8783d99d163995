#pragma once
// Compiler checks every header relies on.
#include <version>

#if !defined(__cplusplus) || __cplusplus < 202002L
#error "minifloat needs C++20"
#endif
#if !defined(__cpp_lib_bit_cast)
#error "minifloat needs std::bit_cast (<bit>, C++20)"
#endif
