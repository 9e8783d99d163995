#pragma once
// Which ISA path a bulk call takes.
//
//   static path   The translation unit is compiled with AVX2, FMA and F16C enabled (-mavx2 -mfma
//                 -mf16c, -march=haswell or later, -march=native on such a CPU): isa::automatic
//                 is the AVX2 path, decided at compile time, with no CPU check and no indirection.
//   dynamic path  Otherwise (x86-64, GCC or Clang) the AVX2 kernels are still compiled, inside
//                 the headers, as functions marked [[gnu::target("avx2,fma,f16c")]]; the CPU is
//                 queried once per process (__builtin_cpu_supports, cpuid for F16C under Clang)
//                 and the answer is cached in a function-local static.
//   AArch64       kernels/arm_neon: NEON is part of the baseline ISA, so isa::automatic is the
//                 NEON path, statically (GCC or Clang with __ARM_NEON).
//   scalar        kernels/reference, always available, the ground truth every path is tested
//                 against. Other architectures (and MSVC) get only this one.
// bulk_options::path forces a path per call; asking for one the CPU lacks gives
// kernel_status::unsupported_isa rather than an illegal instruction.
//
// ODR note: the AVX2 kernels live in namespace minifloat::simd::avx2 and always carry
// the target attribute, so a program whose TUs are compiled with different -m flags still has
// one definition of each. (The scalar reference functions are ordinary inline functions: if some
// TUs are compiled with -mavx2 and others are not, the linker may keep the AVX2-compiled copy,
// as for any inline function; build every TU for the oldest CPU you support.)
#include "options.hpp"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MINIFLOAT_SIMD_X86 1
#include <cpuid.h>
#else
#define MINIFLOAT_SIMD_X86 0
#endif

#if defined(__aarch64__) && defined(__ARM_NEON) && (defined(__GNUC__) || defined(__clang__))
#define MINIFLOAT_SIMD_NEON 1
#else
#define MINIFLOAT_SIMD_NEON 0
#endif

#if MINIFLOAT_SIMD_X86 && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define MINIFLOAT_SIMD_STATIC_AVX2 1
#else
#define MINIFLOAT_SIMD_STATIC_AVX2 0
#endif

namespace minifloat::simd {

namespace detail {

inline bool cpu_has_avx2_fma_f16c() noexcept {
#if MINIFLOAT_SIMD_STATIC_AVX2
  return true;
#elif MINIFLOAT_SIMD_X86
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves YMM state (XCR0).
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  return (c & bit_F16C) != 0;
#else
  return false;
#endif
}

}  // namespace detail

/// Whether this process can run `i` (automatic and scalar: always).
[[nodiscard]] inline bool isa_available(isa i) noexcept {
  switch (i) {
    case isa::automatic:
    case isa::scalar: return true;
    case isa::avx2: {
      static const bool has = detail::cpu_has_avx2_fma_f16c();
      return has;
    }
    case isa::neon: return MINIFLOAT_SIMD_NEON != 0;
  }
  return false;
}

/// The path isa::automatic resolves to in this process.
[[nodiscard]] inline isa detected_isa() noexcept {
#if MINIFLOAT_SIMD_STATIC_AVX2
  return isa::avx2;
#elif MINIFLOAT_SIMD_NEON
  return isa::neon;
#else
  return isa_available(isa::avx2) ? isa::avx2 : isa::scalar;
#endif
}

/// Every path this process can run, best first (for tests: run each kernel on each of these).
[[nodiscard]] inline std::string_view available_isas_string() noexcept {
  if (isa_available(isa::neon)) return "neon scalar";
  return isa_available(isa::avx2) ? "avx2 scalar" : "scalar";
}

namespace detail {

/// The path a call with `requested` takes, or isa::automatic if it cannot run here (the caller
/// then returns kernel_status::unsupported_isa).
[[nodiscard]] inline isa resolve(isa requested) noexcept {
  if (requested == isa::automatic) return detected_isa();
  return isa_available(requested) ? requested : isa::automatic;
}

}  // namespace detail

}  // namespace minifloat::simd
