#pragma once
// GCC 12's unmasked AVX-512 intrinsics pass a deliberately undefined operand
// (_mm512_undefined_*(), a self-initialised local; GCC bug 105593) that -Wuninitialized and
// -Wmaybe-uninitialized report wherever they are inlined. The warnings are about the compiler's
// headers, not ours, so every header built on these intrinsics brackets its code in this pair.
#if defined(__GNUC__) && !defined(__clang__)
#define MINIFLOAT_AVX512_WARNINGS_PUSH                                                   \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define MINIFLOAT_AVX512_WARNINGS_POP _Pragma("GCC diagnostic pop")
#else
#define MINIFLOAT_AVX512_WARNINGS_PUSH
#define MINIFLOAT_AVX512_WARNINGS_POP
#endif
