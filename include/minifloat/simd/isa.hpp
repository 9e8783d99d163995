#pragma once
// The one instruction-set layer: the ISA enum every kernel takes (codecs, MX, quantize, GEMM),
// the one cached CPU probe, and the one set of target macros. docs/simd.md says how to add an ISA.
//
// Levels. An isa value names a level, and a kernel asked for a level runs its widest path that
// does not exceed it: x86-64 scalar < avx2 < avx512, AArch64 scalar < neon. So isa::avx512 on a
// kernel that has no AVX-512 path yet runs its AVX2 path, and isa::avx2 caps a kernel that has an
// AVX-512 path (to test it, or to compare the two). A level the CPU cannot run gives
// kernel_status::unsupported_isa (or unsupported_error), never an illegal instruction.
//
//   scalar   simd/scalar/: the reference twins, ground truth of every path, always available
//   avx2     AVX2 + FMA + F16C (Haswell, Zen 1 and later)
//   avx512   AVX-512 F, BW, VL, DQ, VBMI, VBMI2 and BF16 with the OS saving ZMM state (Zen 4,
//            Sapphire Rapids and later): one level, so a kernel may use any of those
//   neon     AArch64 Advanced SIMD, part of the baseline ISA (static, no probe)
// Extensions within a level are features, not levels: cpu().amx_bf16 says whether the AVX-512
// level may also use AMX-TILE + AMX-BF16 tiles (Sapphire Rapids and later; on Linux the process
// asks the kernel for the tile state once, with arch_prctl(ARCH_REQ_XCOMP_PERM)).
//
// How the x86 paths are compiled. Every SIMD function carries MINIFLOAT_TARGET_AVX2 or
// MINIFLOAT_TARGET_AVX512 ([[gnu::target]]), so the headers compile in any x86-64 TU and the
// path is chosen at run time from the probe below (cpuid + xgetbv, once per process). A TU
// compiled with -mavx2 -mfma -mf16c (or a -march implying them) takes the AVX2 path statically:
// MINIFLOAT_SIMD_STATIC_AVX2 is 1 and no probe is needed for it.
// ODR: ISA code lives in namespaces that name the ISA (simd::avx2, simd::avx512, simd::neon) and
// always carries its target attribute, so TUs built with different -m flags share one definition.
//
// The environment variable MINIFLOAT_MAX_ISA (scalar, avx2, avx512, neon), read once, caps what
// isa::automatic resolves to in this process: to measure or test a narrower path without
// recompiling.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "../core/enum_names.hpp"

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

#if MINIFLOAT_SIMD_X86
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#define MINIFLOAT_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define MINIFLOAT_TARGET_AVX512 \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512vbmi2,avx512bf16")))
/// The avx512 level plus AMX-TILE and AMX-BF16 (only where cpu().amx_bf16).
#define MINIFLOAT_TARGET_AMX                                                                                     \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512vbmi2,avx512bf16," \
                        "amx-tile,amx-bf16")))
#define MINIFLOAT_INLINE_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) inline
#define MINIFLOAT_INLINE_AVX512                                                                          \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512vbmi2,avx512bf16"), \
                 always_inline)) inline
#endif

namespace minifloat::simd {

enum class isa : std::uint8_t {
  automatic,  ///< the widest level this process can run (capped by MINIFLOAT_MAX_ISA)
  scalar,     ///< simd/scalar/: the reference twins (always available)
  avx2,       ///< AVX2 + FMA + F16C
  avx512,     ///< AVX-512 F/BW/VL/DQ/VBMI/VBMI2/BF16 (implies avx2)
  neon,       ///< AArch64 Advanced SIMD
};

}  // namespace minifloat::simd

template <>
struct minifloat::enum_names<minifloat::simd::isa> {
  using isa = minifloat::simd::isa;
  static constexpr std::array table{name_of(isa::automatic, "automatic"), name_of(isa::scalar, "scalar"),
                                    name_of(isa::avx2, "avx2"), name_of(isa::avx512, "avx512"),
                                    name_of(isa::neon, "neon")};
};

namespace minifloat::simd {

using minifloat::to_string;

constexpr bool parse_isa(std::string_view s, isa& out) noexcept {
  if (const auto i = parse_enum<isa>(s)) return out = *i, true;
  return false;
}

/// What the probe found (all false off x86-64 / AArch64).
struct cpu_features {
  bool avx2 = false;    ///< AVX2 + FMA + F16C, YMM state enabled by the OS
  bool avx512 = false;  ///< the avx512 level above, ZMM and opmask state enabled by the OS
  bool amx_bf16 = false;  ///< avx512 plus AMX-TILE and AMX-BF16, tile state granted by the OS
  bool neon = false;
};

namespace detail {

#if MINIFLOAT_SIMD_X86
inline std::uint64_t xcr0() noexcept {
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (std::uint64_t{hi} << 32) | lo;
}
#endif

inline cpu_features probe_cpu() noexcept {
  cpu_features f;
#if MINIFLOAT_SIMD_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  const bool fma = (c >> 12) & 1U, osxsave = (c >> 27) & 1U, avx = (c >> 28) & 1U, f16c = (c >> 29) & 1U;
  if (!osxsave || !avx) return f;
  const std::uint64_t xcr = xcr0();
  const bool ymm_state = (xcr & 0x6U) == 0x6U;         // SSE + AVX state
  const bool zmm_state = (xcr & 0xE6U) == 0xE6U;       // + opmask, ZMM_Hi256, Hi16_ZMM
  unsigned b7 = 0, c7 = 0, d7 = 0, a7 = 0;
  if (__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7) == 0) return f;
  unsigned a71 = 0, b71 = 0, c71 = 0, d71 = 0;
  const unsigned max_sub = a7;
  if (max_sub >= 1) __get_cpuid_count(7, 1, &a71, &b71, &c71, &d71);
  const bool avx2 = (b7 >> 5) & 1U;
  const bool avx512f = (b7 >> 16) & 1U, avx512dq = (b7 >> 17) & 1U, avx512bw = (b7 >> 30) & 1U,
             avx512vl = (b7 >> 31) & 1U;
  const bool vbmi = (c7 >> 1) & 1U, vbmi2 = (c7 >> 6) & 1U;
  const bool bf16 = (a71 >> 5) & 1U;
  f.avx2 = ymm_state && avx2 && fma && f16c;
  f.avx512 = f.avx2 && zmm_state && avx512f && avx512dq && avx512bw && avx512vl && vbmi && vbmi2 && bf16;
  const bool amx_bf16 = (d7 >> 22) & 1U, amx_tile = (d7 >> 24) & 1U;
  const bool tile_state = ((xcr >> 17) & 3U) == 3U;  // XTILECFG + XTILEDATA
  f.amx_bf16 = f.avx512 && amx_bf16 && amx_tile && tile_state;
#if defined(__linux__)
  if (f.amx_bf16) {  // Linux hands out the tile data state only on request
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    f.amx_bf16 = syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
  }
#else
  f.amx_bf16 = false;
#endif
#elif MINIFLOAT_SIMD_NEON
  f.neon = true;
#endif
  return f;
}

/// MINIFLOAT_MAX_ISA, or automatic (no cap) when unset or not an ISA name.
inline isa env_cap() noexcept {
  const char* s = std::getenv("MINIFLOAT_MAX_ISA");  // NOLINT(concurrency-mt-unsafe): read once
  isa i = isa::automatic;
  if (s != nullptr && !parse_isa(s, i)) i = isa::automatic;
  return i;
}

/// Whether a call that resolved to `level` may run a path of level `path` (x86 levels nest).
[[nodiscard]] constexpr bool allows(isa level, isa path) noexcept {
  if (path == isa::scalar) return true;
  if (level == isa::neon || path == isa::neon) return level == path;
  return level != isa::automatic && level >= path;
}

}  // namespace detail

/// The CPU's features, probed once per process.
[[nodiscard]] inline const cpu_features& cpu() noexcept {
  static const cpu_features f = detail::probe_cpu();
  return f;
}

/// Whether this CPU can run level `i` (automatic and scalar: always).
[[nodiscard]] inline bool isa_available(isa i) noexcept {
  switch (i) {
    case isa::automatic:
    case isa::scalar: return true;
    case isa::avx2: return MINIFLOAT_SIMD_STATIC_AVX2 != 0 || cpu().avx2;
    case isa::avx512: return cpu().avx512;
    case isa::neon: return cpu().neon;
  }
  return false;
}

/// The level isa::automatic resolves to in this process: the widest available, capped by
/// MINIFLOAT_MAX_ISA.
[[nodiscard]] inline isa detected_isa() noexcept {
  static const isa best = [] {
    const isa cap = detail::env_cap();
    const auto allowed = [&](isa i) { return isa_available(i) && (cap == isa::automatic || detail::allows(cap, i)); };
    for (const isa i : {isa::avx512, isa::avx2, isa::neon})
      if (allowed(i)) return i;
    return isa::scalar;
  }();
  return best;
}

/// Every level this process can run, widest first (tests run each kernel on each of these).
[[nodiscard]] inline std::string_view available_isas_string() noexcept {
  if (isa_available(isa::neon)) return "neon scalar";
  if (isa_available(isa::avx512)) return "avx512 avx2 scalar";
  return isa_available(isa::avx2) ? "avx2 scalar" : "scalar";
}

namespace detail {

/// The level a call with `requested` runs at, or isa::automatic when the CPU cannot run it (the
/// caller then reports unsupported_isa).
[[nodiscard]] inline isa resolve(isa requested) noexcept {
  if (requested == isa::automatic) return detected_isa();
  return isa_available(requested) ? requested : isa::automatic;
}

}  // namespace detail

}  // namespace minifloat::simd
