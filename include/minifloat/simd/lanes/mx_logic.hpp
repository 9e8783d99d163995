// The MX kernels' per-tile scale logic, written once for every ISA. Like codec_logic.hpp (whose
// header comment describes the mechanism and the ops types O) this file has no include guard:
// an ISA's mx.hpp includes it INSIDE its own `detail` namespace, after codec_logic.hpp, with
// MINIFLOAT_LANES_INLINE defined. The includer has included formats/mx_scale.hpp.
#ifndef MINIFLOAT_LANES_INLINE
#error "simd/lanes/mx_logic.hpp is included inside an ISA namespace that defines MINIFLOAT_LANES_INLINE"
#endif

/// The E8M0 codes of O::lanes tiles from their amax |bit patterns| (lanes <= 0x7FFFFFFF), by
/// `Rule`, as formats/mx_scale.hpp mx_scale_code_from_abs_bits computes them one at a time. With
/// eb the biased exponent field and f the fraction, code = clamp(eb - emax + adj, 0, 254) with
/// adj = 0 (floor), [f != 0] (ceil), [f + 2^(22-M) >= 2^23] (even), [f > f_max] (rceil), and
/// NaN/Inf -> 0xFF. A float32-subnormal or zero amax has eb = 0, so eb - emax + adj <= 1 - emax
/// < 0 and the code is 0, as the scalar function's clamped normalised exponent gives. Its finite
/// guard (step 3): eb = 254 with f + 2^(22-M) >= 2^23 takes the floor code under the rules that
/// round up (they would dequantize the block max to 2^128); under floor it is the floor code
/// anyway, and whenever the guard holds ceil and even did round up, so the guard may replace k
/// unconditionally.
template <class O, mx_element Elem, scale_rule Rule>
MINIFLOAT_LANES_INLINE typename O::v mx_scale_codes(typename O::v a) {
  using V = typename O::v;
  constexpr std::uint32_t half = 1U << (22 - Elem::spec::mantissa_bits);
  const V frac = O::and_(a, O::splat(0x7FFFFFU));
  const V eb = O::template srli<23>(a);
  const V floor_k = O::sub(eb, O::splat(static_cast<std::uint32_t>(mx_emax<Elem>)));
  V k = floor_k;
  if constexpr (Rule == scale_rule::ceil) {
    k = O::add(k, O::template srli<23>(O::add(frac, O::splat(0x7FFFFFU))));  // + [f != 0]
  } else if constexpr (Rule == scale_rule::even) {
    k = O::add(k, O::template srli<23>(O::add(frac, O::splat(half))));
  } else if constexpr (Rule == scale_rule::rceil) {
    constexpr std::uint32_t fmax = minifloat::detail::mx_max_significand<Elem> - 0x800000U;
    k = O::inc_if(k, O::gt_s(frac, O::splat(fmax)));
  }
  if constexpr (Rule != scale_rule::floor) {
    const auto guard = O::mask_and(O::eq(eb, O::splat(254)), O::gt_s(O::add(frac, O::splat(half)), O::splat(0x7FFFFFU)));
    k = O::select(guard, floor_k, k);
  }
  const V code = O::min_s(O::max_s(k, O::zero()), O::splat(254));
  return O::select(O::gt_s(a, O::splat(0x7F7FFFFFU)), O::splat(mx_nan_scale_code), code);
}

/// 2^(127 - code) as float32 bits, the element multiplier of a tile: a normal power of two for
/// every code a finite amax gives (0 .. 253, since emax >= 2). Lanes of the NaN scale get
/// 0xFF800000 (-Inf); callers discard or mask those tiles' codes.
template <class O>
MINIFLOAT_LANES_INLINE typename O::v mx_multipliers(typename O::v code) {
  return O::template slli<23>(O::sub(O::splat(254), code));
}
