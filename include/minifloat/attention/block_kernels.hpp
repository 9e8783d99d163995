#pragma once
// Which block kernel runs a block (kernel.hpp has what a block is and the order of operations
// every kernel follows): on x86 with AVX-512, AMX tiles (x86/amx.hpp) for blocks of more than
// avx512_kernel_max_rows query rows where the CPU has AMX-BF16, else the AVX-512 kernels: the
// panel kernel (x86/avx512_panels.hpp) for those blocks (prefill), the register kernel
// (x86/avx512.hpp) for decode-sized ones; the AVX2 kernel (x86/avx2.hpp) on x86 without AVX-512,
// at isa avx2, or for MX scales that take a value out of bfloat16's normal range (the AVX-512
// kernels read bfloat16); the scalar twin at isa scalar and elsewhere. A block whose operands
// are bfloat16 pairs exactly (pairs_apply) takes its AVX-512 kernel's vdpbf16ps form, the same
// bits, on cores where pairs beat fp32 FMAs (simd/x86/avx512_dot_rate.hpp); block_kernel::avx512 and
// avx512_bf16 name the two forms.
// A cache stored in the decode layouts (kv_tiles.hpp) is read by the AVX-512 kernel over tiles
// (x86/avx512_tiles.hpp: avx512 and avx512_bf16 are its two forms) or by the scalar twin;
// decode_step hands the other kernels row-major copies (reads_tiles).
#include "../simd/x86/avx512_dot_rate.hpp"
#include "x86/amx.hpp"
#include "x86/avx2.hpp"
#include "x86/avx512.hpp"
#include "x86/avx512_panels.hpp"
#include "x86/avx512_tiles.hpp"

namespace minifloat::attention::detail {

/// The largest block the AVX-512 register kernel takes: a decode block (the query heads of one
/// KV group at one or two positions). Larger blocks fill AMX tiles' 16 rows, or without AMX
/// take the panel kernel, whose per-chunk decode into panels pays off over many rows.
inline constexpr std::size_t avx512_kernel_max_rows = 8;

/// Whether a call at `level` can take the AVX-512 kernels.
[[nodiscard]] inline bool use_avx512(simd::isa level) noexcept {
  const simd::isa r = simd::detail::resolve(level);
  return MINIFLOAT_ATTENTION_X86 && r != simd::isa::automatic && simd::detail::allows(r, simd::isa::avx512);
}

/// Whether a call at `level` can take the AMX kernel.
[[nodiscard]] inline bool use_amx(simd::isa level) noexcept { return use_avx512(level) && x86::amx_available(); }

/// Whether the bfloat16 kernels read this operand exactly (8-bit codes with MX scales that keep
/// every value a normal bfloat16, bfloat16 rows, fp32 rows).
[[nodiscard]] inline bool bf16_reads_exactly(const kv_view& x) noexcept {
  return x.mx == nullptr || (x.kind == element_kind::code8 && x.mx_bf16_exact);
}

/// Whether a call at `level` can take the AVX2 kernel.
[[nodiscard]] inline bool use_avx2(simd::isa level) noexcept {
  const simd::isa r = simd::detail::resolve(level);
  return MINIFLOAT_ATTENTION_X86 && r != simd::isa::automatic && simd::detail::allows(r, simd::isa::avx2);
}

/// The kernel a block of `rows` rows takes (bf16_exact: both operands pass bf16_reads_exactly;
/// pairs: x86::pairs_apply holds).
[[nodiscard]] inline block_kernel kernel_for(std::size_t rows, bool bf16_exact, bool pairs, simd::isa level, block_kernel want) noexcept {
  if (want == block_kernel::scalar) return block_kernel::scalar;
  const bool avx2 = use_avx2(level);
  if (want == block_kernel::avx2 || !use_avx512(level) || !bf16_exact) return avx2 ? block_kernel::avx2 : block_kernel::scalar;
  const bool amx = use_amx(level);
  if (want == block_kernel::amx) return amx ? block_kernel::amx : block_kernel::avx512;
  if (want == block_kernel::avx512_bf16) return pairs ? block_kernel::avx512_bf16 : block_kernel::avx512;
  if (want == block_kernel::avx512) return block_kernel::avx512;
  if (amx && rows > avx512_kernel_max_rows) return block_kernel::amx;
  return pairs && simd::avx512::bf16_pairs_beat_fma() ? block_kernel::avx512_bf16 : block_kernel::avx512;
}

/// Whether the kernel a call at `level` asking for `want` runs on blocks in the decode layouts
/// reads them as stored: the AVX-512 kernel over tiles, or the scalar twin (which reads any
/// layout through kv_view::value). The AMX and AVX2 kernels read row-major rows only.
[[nodiscard]] inline bool reads_tiles(simd::isa level, block_kernel want) noexcept {
  if (want == block_kernel::scalar || !use_avx2(level)) return true;
  return use_avx512(level) && (want == block_kernel::automatic || want == block_kernel::avx512 || want == block_kernel::avx512_bf16);
}

[[nodiscard]] inline block_kernel kernel_for(const block_args& a, simd::isa level, block_kernel want) noexcept {
  const bool exact = bf16_reads_exactly(a.k) && bf16_reads_exactly(a.v);
  if (x86::tiles_apply(a)) {  // 8-bit codes without MX scales or bfloat16: always bfloat16-exact
    if (!reads_tiles(level, want) || want == block_kernel::scalar || !use_avx512(level)) return block_kernel::scalar;
    if (want == block_kernel::avx512 || !x86::pairs_apply(a)) return block_kernel::avx512;
    return want == block_kernel::avx512_bf16 || simd::avx512::bf16_pairs_beat_fma() ? block_kernel::avx512_bf16 : block_kernel::avx512;
  }
  const bool pairs = a.rows > avx512_kernel_max_rows ? x86::panel_pairs_apply(a) : x86::pairs_apply(a);
  return kernel_for(a.rows, exact, exact && pairs, level, want);
}

inline void run_block(const block_args& a, simd::isa level, block_kernel want) {
  const bool tiled = x86::tiles_apply(a), panels = a.rows > avx512_kernel_max_rows;
  switch (kernel_for(a, level, want)) {
    case block_kernel::amx: x86::run_block_amx(a); break;
    case block_kernel::avx512:
      if (tiled) x86::run_block_tiles(a, false);
      else if (panels) x86::run_block_panels(a, false);
      else x86::run_block_avx512(a);
      break;
    case block_kernel::avx512_bf16:
      if (tiled) x86::run_block_tiles(a, true);
      else if (panels) x86::run_block_panels(a, true);
      else x86::run_block_avx512(a, true);
      break;
    case block_kernel::avx2: x86::run_block_avx2(a); break;
    default: run_block_scalar(a); break;
  }
}

}  // namespace minifloat::attention::detail
