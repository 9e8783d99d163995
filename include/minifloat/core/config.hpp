#pragma once
// Compiler checks and the few macros every header may use.
#include <version>

#if !defined(__cplusplus) || __cplusplus < 202002L
#error "minifloat needs C++20"
#endif
#if !defined(__cpp_lib_bit_cast)
#error "minifloat needs std::bit_cast (<bit>, C++20)"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MINIFLOAT_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define MINIFLOAT_ALWAYS_INLINE inline
#endif
