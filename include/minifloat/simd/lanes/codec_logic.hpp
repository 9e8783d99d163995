// The bulk codecs' format logic, written once for every ISA (docs/simd.md). No include guard on
// purpose: an ISA header includes this file INSIDE its own `detail` namespace, after defining
//   MINIFLOAT_LANES_INLINE   the ISA's always-inline target attribute (MINIFLOAT_INLINE_AVX2, ...)
//   MINIFLOAT_LANES_TARGET   the ISA's target attribute for the out-of-line span functions
// and the ops types the templates below are instantiated with. Each inclusion therefore defines
// distinct templates (simd::avx2::detail::exmy_lanes, simd::avx512::detail::exmy_lanes, ...)
// carrying that ISA's [[gnu::target]], so an intrinsic is never inlined into a function compiled
// for another ISA and TUs built with different -m flags share one definition per ISA (isa.hpp).
//
// An ops type O supplies (all static, always inline):
//   types     v (32-bit integer lanes), m (lane mask), f (float lanes), table16 (a 16-entry byte
//             table ready for lookup16); constexpr `lanes`
//   build     splat(u32), zero(), mask_splat(bool), load_table16(const uint8_t*)
//   integer   add sub and_ or_ xor_ andnot(a, b) = ~a & b; min_s max_s (signed) max_u; abs_s;
//             srl(v, count) / sll(v, count) with vpsrlvd semantics (any count >= 32 gives 0);
//             srli<N> slli<N> srai<N>
//   compare   eq gt_s lt_u -> m
//   masks     select(m, a, b) = m ? a : b; keep(v, m) = m ? v : 0; zero_if(v, m) = m ? 0 : v;
//             inc_if(v, m) = m ? v + 1 : v; mask_or; mask_and; as_vec(m) = m ? ~0 : 0;
//             sign_lanes(v) = the lanes whose bit 31 is set
//   lookup    lookup16(table16, idx): entry idx (0..15) of the table, zero-extended
//   loop      the load/store/tail primitives used by the span functions at the end of this file
// The mask type is free: AVX2 and NEON use all-ones vector lanes, AVX-512 k-registers.
#ifndef MINIFLOAT_LANES_INLINE
#error "simd/lanes/codec_logic.hpp is included inside an ISA namespace that defines MINIFLOAT_LANES_INLINE"
#endif

// ------------------------------------------------------------------------------------------------
// Rounding: kept = sig / 2^d rounded by kind R. Lanes: sig < 2^31 and, for d >= 24, sig < 2^25.
// The nearest and stochastic kinds accept any d (srl/sll give 0 for counts >= 32, which is then
// the exact answer); the directed kind needs d <= 31 so that ulp - 1 is representable. The
// integer adds mirror detail::rounds_up: ties-to-even adds half - 1 plus kept's low bit;
// ties-away adds half; directed adds ulp - 1 on the lanes that round away; stochastic adds 1
// when the dropped fraction F = floor(frac * 2^32) plus the lane's random bits carries out of 32
// bits.

template <class O>
struct round_inputs {
  typename O::v tie_up;  ///< nearest_even with a custom tie rule: 1 where a tie rounds away
  typename O::m away;    ///< directed: the lanes that round away from zero when inexact
  typename O::v random;  ///< stochastic: the lane's random bits
};

template <class O, round_kind R, bool CustomTie = false>
MINIFLOAT_LANES_INLINE typename O::v round_shift(typename O::v sig, typename O::v d, const round_inputs<O>& in) {
  using V = typename O::v;
  if constexpr (R == round_kind::nearest_even) {
    // sig + (half - 1) + tie_up: a tie carries iff tie_up; above half always carries.
    const V half_m1 = O::srl(O::splat(0x7FFFFFFFU), O::sub(O::splat(32), d));
    V tie_up;
    if constexpr (CustomTie) tie_up = in.tie_up;
    else tie_up = O::and_(O::srl(sig, d), O::splat(1));
    return O::srl(O::add(O::add(sig, half_m1), tie_up), d);
  } else if constexpr (R == round_kind::nearest_away) {
    const V half = O::srl(O::splat(0x40000000U), O::sub(O::splat(31), d));
    return O::srl(O::add(sig, half), d);
  } else if constexpr (R == round_kind::directed) {
    const V ulp_m1 = O::srl(O::splat(0xFFFFFFFFU), O::sub(O::splat(32), d));
    return O::srl(O::add(sig, O::keep(ulp_m1, in.away)), d);
  } else {
    // F = floor(dropped * 2^32 / 2^d): sig << (32 - d) for d <= 32, sig >> (d - 32) above.
    const V kept = O::srl(sig, d);
    const V f = O::or_(O::sll(sig, O::sub(O::splat(32), d)), O::srl(sig, O::sub(d, O::splat(32))));
    return O::inc_if(kept, O::lt_u(O::add(f, in.random), f));  // carry out of 32 bits: f + r < f
  }
}

/// The directed kind's per-call constants in lanes.
template <class O>
struct directed_consts {
  typename O::v away_xor;
  typename O::m away_enable;
  MINIFLOAT_LANES_INLINE explicit directed_consts(rounding r) {
    const auto dl = directed_lanes::from(r);
    away_xor = O::splat(dl.away_xor);
    away_enable = O::mask_splat(dl.away_enable);
  }
  /// The lanes of x that round away from zero.
  MINIFLOAT_LANES_INLINE typename O::m away(typename O::v x) const {
    return O::mask_and(O::sign_lanes(O::xor_(x, away_xor)), away_enable);
  }
};

// ------------------------------------------------------------------------------------------------
// Encoders: operator()(x as float32 bits, random bits) -> one code per 32-bit lane.

/// IEEE-like formats with a zero (E4M3, E5M2, FP6, FP4, bf16, fp16).
///
/// Instead of building the significand and repacking, round the float32 pattern itself after
/// moving its exponent field to the target bias: P = |x| bits + (below << 23) - ((emin - 1) << 23),
/// where emin is the float32 biased exponent of the target's min normal and below = max(emin -
/// eb, 0). For inputs in the target's normal range P = (target biased E << 23) | fraction, so
/// P >> (23 - M) is already the code magnitude, and a rounding carry walks into the next binade
/// (spec.hpp step 4). For inputs below it P = 1.fraction (the hidden bit, biased E = 1) and the
/// shift grows by `below`: the subnormal code. d = 23 - M + below. Overflow is `min(mag, ovf)`;
/// directed lanes that truncate stop at max. Then the sign, then NaN.
/// Float32 subnormal inputs get a wrong hidden bit this way; that matters only where such inputs
/// can round to a non-zero code: bf16 (emin = 1, handled as plain a >> 16 rounding) and the
/// directed modes, where a zero must not round away (those lanes are masked).
template <class O, class Spec, round_kind R>
struct exmy_lanes {
  using V = typename O::v;
  static constexpr int M = Spec::mantissa_bits;
  static constexpr int emin_biased = 128 - Spec::bias;  // float32 biased exponent of the min normal
  static_assert(emin_biased >= 1);
  static constexpr int sign_shift = 32 - Spec::bits;

  V ovf, max, nan_out;
  directed_consts<O> dir;

  MINIFLOAT_LANES_INLINE exmy_lanes(conversion c) : dir(c.round) {
    const auto k = overflow_codes<Spec>::from(c);
    ovf = O::splat(k.ovf), max = O::splat(k.max), nan_out = O::splat(k.nan_out);
  }

  MINIFLOAT_LANES_INLINE V operator()(V x, V random) const {
    const V a = O::and_(x, O::splat(0x7FFFFFFFU));
    V p, d;
    if constexpr (emin_biased == 1) {
      // bf16: every float32 binade, subnormals included, drops a fixed 23 - M bits.
      p = a;
      d = O::splat(23 - M);
    } else {
      const V below = O::max_s(O::sub(O::splat(emin_biased), O::template srli<23>(a)), O::zero());
      p = O::sub(O::add(a, O::template slli<23>(below)), O::splat(static_cast<std::uint32_t>(emin_biased - 1) << 23));
      d = O::add(below, O::splat(23 - M));
      if constexpr (R == round_kind::directed) d = O::min_s(d, O::splat(31));
    }
    round_inputs<O> in{};
    if constexpr (R == round_kind::directed) in.away = dir.away(x);
    if constexpr (R == round_kind::stochastic) in.random = random;
    V mag = round_shift<O, R>(p, d, in);
    V code;
    if constexpr (R == round_kind::directed) {
      if constexpr (emin_biased != 1) mag = O::zero_if(mag, O::eq(a, O::zero()));
      code = O::min_s(mag, O::select(in.away, ovf, max));                // truncating lanes stop at max
      code = O::select(O::eq(a, O::splat(0x7F800000U)), ovf, code);     // +-Inf -> overflow code
    } else {
      code = O::min_s(mag, ovf);
    }
    V sign = O::template srli<sign_shift>(O::and_(x, O::splat(0x80000000U)));
    if constexpr (Spec::layout.specials == nan_inf::fnuz) sign = O::zero_if(sign, O::eq(code, O::zero()));  // no -0
    code = O::or_(code, sign);
    return O::select(O::gt_s(a, O::splat(0x7F800000U)), nan_out, code);
  }
};

/// float8_e8m0fnu: unsigned, no zero, M = 0: code = biased exponent of the rounded power of two.
template <class O, class Spec, round_kind R>
struct e8m0_lanes {
  using V = typename O::v;
  V ovf, max, nan_out, zero_or_negative;
  directed_consts<O> dir;

  MINIFLOAT_LANES_INLINE e8m0_lanes(conversion c) : dir(c.round) {
    const auto k = overflow_codes<Spec>::from(c);
    const bool sat = c.on_overflow != overflow::non_saturating;
    ovf = O::splat(k.ovf), max = O::splat(k.max), nan_out = O::splat(k.nan_out);
    zero_or_negative = O::splat(sat ? 0U : Spec::nan_code);
  }

  MINIFLOAT_LANES_INLINE V operator()(V x, V random) const {
    const V a = O::and_(x, O::splat(0x7FFFFFFFU));
    const V eb = O::template srli<23>(a);
    const auto normal = O::gt_s(eb, O::zero());
    // Normal input: sig = 1.f (24 bits), d = 23, code = eb - 1 + kept. Subnormal input in
    // [2^-127, 2^-126): its leading one is bit 22, so sig = f, d = 22, code = -1 + kept.
    const V sig = O::or_(O::and_(a, O::splat(0x7FFFFFU)), O::keep(O::splat(0x800000U), normal));
    const V d = O::inc_if(O::splat(22), normal);
    round_inputs<O> in{};
    if constexpr (R == round_kind::directed) in.away = dir.away(x);
    if constexpr (R == round_kind::stochastic) in.random = random;
    const V mag = O::add(O::sub(eb, O::splat(1)), round_shift<O, R>(sig, d, in));
    V code;
    if constexpr (R == round_kind::directed) {
      code = O::min_s(mag, O::select(in.away, ovf, max));
      code = O::select(O::eq(a, O::splat(0x7F800000U)), ovf, code);
    } else {
      code = O::min_s(mag, ovf);
    }
    code = O::zero_if(code, O::gt_s(O::splat(0x00400000U), a));  // below 2^-127 -> 0x00
    code = O::select(O::mask_or(O::eq(a, O::zero()), O::sign_lanes(x)), zero_or_negative, code);
    return O::select(O::gt_s(a, O::splat(0x7F800000U)), nan_out, code);
  }
};

/// HiF8, every rounding kind (codec_common.hpp has the binade structure): kept = sig >> d rounded
/// (round_shift) at the binade's width, then base(E') + m from 16-entry tables.
template <class O, round_kind R>
struct hif8_lanes {
  using V = typename O::v;
  static constexpr bool exact_tiny_inputs = R == round_kind::directed;
  V ovf, max, nan_out;
  directed_consts<O> dir;
  typename O::table16 width, base, negbit;

  MINIFLOAT_LANES_INLINE hif8_lanes(conversion c) : dir(c.round) {
    const auto k = overflow_codes<hifloat8_spec>::from(c);
    ovf = O::splat(k.ovf), max = O::splat(k.max), nan_out = O::splat(k.nan_out);
    width = O::load_table16(hif8_table_data.width.data());
    base = O::load_table16(hif8_table_data.base.data());
    negbit = O::load_table16(hif8_table_data.negbit.data());
  }

  /// The code of 2^E (E = e2, -23 <= E <= 15 meaningful): the table for |E| <= 15 plus the
  /// exponent-sign bit, E + 23 in the denormal binades.
  MINIFLOAT_LANES_INLINE V binade_code(V e2) const {
    const V idx = O::min_s(O::abs_s(e2), O::splat(15));
    const V code = O::or_(O::lookup16(base, idx), O::keep(O::lookup16(negbit, idx), O::sign_lanes(e2)));
    return O::select(O::gt_s(O::splat_i(-15), e2), O::add(e2, O::splat(23)), code);
  }

  /// Sign (none on the one zero: a negative input that rounds to 0 gives 0x00), then NaN.
  MINIFLOAT_LANES_INLINE V finish(V code, V x, V a) const {
    const V sign = O::and_(O::template srli<24>(x), O::splat(0x80U));
    code = O::or_(code, O::zero_if(sign, O::eq(code, O::zero())));
    return O::select(O::gt_s(a, O::splat(0x7F800000U)), nan_out, code);
  }

  MINIFLOAT_LANES_INLINE V operator()(V x, V random) const {
    const V a = O::and_(x, O::splat(0x7FFFFFFFU));
    const V eb = O::template srli<23>(a);
    const V ec = O::max_s(O::sub(eb, O::splat(127)), O::splat_i(-23));  // binade, clamped: tiny lanes share -23
    const V fifteen = O::splat(15);
    const auto below_normal = O::gt_s(O::splat_i(-15), ec);  // denormal binades and -23
    // w: table for |E| <= 15 (larger |E| overflow whatever w is), 0 in the denormal binades, -1 at -23.
    const V w = O::select(below_normal, O::as_vec(O::eq(ec, O::splat_i(-23))),
                          O::lookup16(width, O::min_s(O::abs_s(ec), fifteen)));
    V sig = O::and_(a, O::splat(0x7FFFFFU));
    if constexpr (exact_tiny_inputs) sig = O::or_(sig, O::template slli<23>(O::min_s(eb, O::splat(1))));
    else sig = O::or_(sig, O::splat(0x800000U));
    // d = (ec - w) - (max(eb, 1) - 150): the LSB exponent minus the exponent of sig's bit 0.
    V d = O::add(O::sub(ec, w), O::sub(O::splat(150), O::max_s(eb, O::splat(1))));
    if constexpr (R != round_kind::stochastic) d = O::min_s(d, O::splat(31));
    round_inputs<O> in{};
    if constexpr (R == round_kind::directed) in.away = dir.away(x);
    if constexpr (R == round_kind::stochastic) in.random = random;
    V kept;
    if constexpr (R == round_kind::nearest_even) {
      // HiF8 ties go to the neighbour whose code is even. Off the denormal grid that is the even
      // multiple of the LSB (kept & 1 == 0); in the denormal binades (kept = 1, the neighbours
      // 2^E and 2^(E+1) have codes E + 23 and E + 24) the lower is even iff E is odd, so a tie
      // rounds up iff E is even. Lanes at -23 have kept = 0 and tie down either way.
      const V kept0_odd = O::and_(O::srl(sig, d), O::splat(1));
      const V e_even = O::andnot(ec, O::splat(1));
      in.tie_up = O::select(below_normal, e_even, kept0_odd);
      kept = round_shift<O, R, true>(sig, d, in);
    } else {
      kept = round_shift<O, R>(sig, d, in);
    }
    // Carry into the next binade: kept reached 2^(w+1) (w = -1: kept = 1 is 2^-22 = base(-22)).
    const V carry = O::srl(kept, O::add(w, O::splat(1)));
    const V e2 = O::add(ec, carry);
    const V m = O::andnot(O::sub(O::zero(), carry), O::sub(kept, O::sll(O::splat(1), w)));
    V code = O::add(binade_code(e2), m);
    const auto overflowed = O::mask_or(O::gt_s(e2, fifteen), O::eq(code, O::splat(hifloat8_spec::inf_code)));
    if constexpr (R == round_kind::directed) {
      code = O::select(overflowed, O::select(in.away, ovf, max), code);
      code = O::select(O::eq(a, O::splat(0x7F800000U)), ovf, code);
    } else {
      code = O::select(overflowed, ovf, code);
    }
    return finish(code, x, a);
  }
};

// ------------------------------------------------------------------------------------------------
// Arithmetic decoders: codes widened to 32-bit lanes -> float32 bit patterns.

/// E8M0: 2^(c - 127) = c << 23, except 0x00 (2^-127, a float32 subnormal) and 0xFF (NaN).
template <class O>
MINIFLOAT_LANES_INLINE typename O::v decode_e8m0_lanes(typename O::v c) {
  typename O::v b = O::template slli<23>(c);
  b = O::select(O::eq(c, O::zero()), O::splat(0x00400000U), b);
  return O::select(O::eq(c, O::splat(0xFFU)), O::splat(0x7FC00000U), b);
}

/// IEEE-like formats of at most 8 bits: normal codes by moving the fields into place and
/// rebiasing, the (at most 8) subnormal magnitudes from `subnormals` (O::lookup8 of the format's
/// subnormal_bits), specials by selects, then the sign.
template <class O, class Spec>
MINIFLOAT_LANES_INLINE typename O::v decode_exmy_lanes(typename O::v c, const typename O::table8& subnormals) {
  using V = typename O::v;
  constexpr int M = Spec::mantissa_bits;
  const V mag = O::and_(c, O::splat(Spec::magnitude_mask));
  V b = O::add(O::template slli<23 - M>(mag), O::splat(static_cast<std::uint32_t>(127 - Spec::bias) << 23));
  b = O::select(O::gt_s(O::splat(1U << M), mag), O::lookup8(subnormals, mag), b);
  if constexpr (Spec::layout.specials == nan_inf::ieee) {
    b = O::select(O::eq(mag, O::splat(Spec::inf_code)), O::splat(0x7F800000U), b);
    b = O::select(O::gt_s(mag, O::splat(Spec::inf_code)), O::splat(0x7FC00000U), b);
  } else if constexpr (Spec::layout.specials == nan_inf::nan_only) {
    b = O::select(O::eq(mag, O::splat(Spec::magnitude_mask)), O::splat(0x7FC00000U), b);
  } else if constexpr (Spec::layout.specials == nan_inf::fnuz) {
    b = O::select(O::eq(c, O::splat(Spec::nan_code)), O::splat(0x7FC00000U), b);  // the sign is ORed below
  }
  return O::or_(b, O::template slli<32 - Spec::bits>(O::and_(c, O::splat(Spec::sign_mask))));
}

/// 16-bit codes widened to lanes, and the format's own widening of them (bf16: << 16; fp16: the
/// ISA's exact conversion): NaN payloads canonicalised to +-0x7FC00000 as the scalar decode (via
/// double) does.
template <class O, class Spec>
MINIFLOAT_LANES_INLINE typename O::v decode16_lanes(typename O::v c, typename O::v widened) {
  const auto nan = O::gt_s(O::and_(c, O::splat(Spec::magnitude_mask)), O::splat(Spec::inf_code));
  return O::select(nan, O::or_(O::and_(widened, O::splat(0x80000000U)), O::splat(0x7FC00000U)), widened);
}

// ------------------------------------------------------------------------------------------------
// The loops. A step is 4 vectors (4 * O::lanes elements). Full steps load and store directly;
// the tail goes through O's partial load/store (zero-padded buffers, or masks where the ISA has
// them): padding zeros do not change the amax and their codes are not stored.
//
// O also supplies: load<In>(p) / load_partial<In>(p, r) (float32 bits of In, r < lanes);
// store_step<St>(out, c[4]) / store_step_partial<St>(out, r, c[4]) (r < step, FP4: the last high
// nibble of an odd r stays 0); random (counter-based random_bits(seed, index + k) per vector:
// random(seed, index), next()); f, fsplat, mulf, divf, as_f, as_v; hmax(m); optionally
// prefetch_in(x, i) (called before each full step i of the encode loop).

/// m = max(m, |v|) over the finite lanes of v (float32 bits; unsigned order = value order).
template <class O>
MINIFLOAT_LANES_INLINE typename O::v finite_max_step(typename O::v v, typename O::v m) {
  const typename O::v a = O::and_(v, O::splat(0x7FFFFFFFU));
  return O::max_u(m, O::keep(a, O::gt_s(O::splat(0x7F800000U), a)));
}

/// Encoders may encode a whole step at once to one byte per code (`bytes_step`, used for u8
/// stores when present); otherwise every vector goes through operator().
template <class Enc, class O>
concept has_bytes_step = requires(const Enc& e, const typename O::v* v) { e.bytes_step(v); };

template <class O, class Enc, class In, round_kind R, scale_kind S, store_kind St, bool Partial>
MINIFLOAT_LANES_INLINE void encode_step(const In* x, std::size_t r, void* out, const Enc& enc, typename O::f scale,
                                        typename O::v& amax, typename O::random& rng) {
  using V = typename O::v;
  V v[4];
  for (std::size_t k = 0; k < 4; ++k) {
    if constexpr (Partial) {
      const std::size_t done = k * O::lanes;
      v[k] = r > done ? O::template load_partial<In>(x + done, r - done < O::lanes ? r - done : O::lanes) : O::zero();
    } else {
      v[k] = O::template load<In>(x + k * O::lanes);
    }
    if constexpr (S != scale_kind::none) {
      amax = finite_max_step<O>(v[k], amax);
      v[k] = O::as_v(S == scale_kind::multiply ? O::mulf(O::as_f(v[k]), scale) : O::divf(O::as_f(v[k]), scale));
    }
  }
  if constexpr (St == store_kind::u8 && has_bytes_step<Enc, O>) {
    (void)rng;
    if constexpr (Partial) O::store_bytes_partial(out, r, enc.bytes_step(v));
    else O::store_bytes(out, enc.bytes_step(v));
  } else {
    V c[4];
    for (std::size_t k = 0; k < 4; ++k) {
      V rv{};
      if constexpr (R == round_kind::stochastic) rv = rng.next();
      c[k] = enc(v[k], rv);
    }
    if constexpr (Partial) O::template store_step_partial<St>(out, r, c);
    else O::template store_step<St>(out, c);
  }
}

template <class O, class Enc, class In, round_kind R, scale_kind S, store_kind St>
MINIFLOAT_LANES_TARGET float encode_span(const In* x, std::size_t n, void* out, conversion c, float scale,
                                         std::uint64_t seed, std::uint64_t first_index) noexcept {
  constexpr std::size_t step = 4 * O::lanes;
  const Enc enc(c);
  const typename O::f sv = O::fsplat(scale);
  typename O::v amax = O::zero();
  typename O::random rng(seed, first_index);
  auto* o = static_cast<std::uint8_t*>(out);
  std::size_t i = 0;
  for (; i + step <= n; i += step) {
    if constexpr (requires { O::prefetch_in(x, i); }) O::prefetch_in(x, i);
    encode_step<O, Enc, In, R, S, St, false>(x + i, step, o + out_bytes<St>(i), enc, sv, amax, rng);
  }
  if (i < n) encode_step<O, Enc, In, R, S, St, true>(x + i, n - i, o + out_bytes<St>(i), enc, sv, amax, rng);
  return O::hmax(amax);
}

/// encode_span for the rounding kind of c (O::template encoder<Spec, R> picks the encoder).
template <class O, class Spec, class In, scale_kind S, store_kind St>
float encode_any(const In* x, std::size_t n, void* out, conversion c, float scale, std::uint64_t seed,
                 std::uint64_t first_index) noexcept {
  switch (simd::detail::kind_of(c.round, Spec::nearest_rule)) {
    case round_kind::nearest_even:
      return encode_span<O, typename O::template encoder<Spec, round_kind::nearest_even>, In, round_kind::nearest_even,
                         S, St>(x, n, out, c, scale, seed, first_index);
    case round_kind::nearest_away:
      return encode_span<O, typename O::template encoder<Spec, round_kind::nearest_away>, In, round_kind::nearest_away,
                         S, St>(x, n, out, c, scale, seed, first_index);
    case round_kind::directed:
      return encode_span<O, typename O::template encoder<Spec, round_kind::directed>, In, round_kind::directed, S, St>(
          x, n, out, c, scale, seed, first_index);
    case round_kind::stochastic:
      return encode_span<O, typename O::template encoder<Spec, round_kind::stochastic>, In, round_kind::stochastic, S,
                         St>(x, n, out, c, scale, seed, first_index);
  }
  return 0.0f;
}

template <class O, class In>
MINIFLOAT_LANES_TARGET float finite_amax_span(const In* x, std::size_t n) noexcept {
  typename O::v m0 = O::zero(), m1 = O::zero();
  std::size_t i = 0;
  for (; i + 2 * O::lanes <= n; i += 2 * O::lanes) {
    m0 = finite_max_step<O>(O::template load<In>(x + i), m0);
    m1 = finite_max_step<O>(O::template load<In>(x + i + O::lanes), m1);
  }
  for (; i < n; i += O::lanes) {
    const std::size_t r = n - i < O::lanes ? n - i : O::lanes;
    m0 = finite_max_step<O>(O::template load_partial<In>(x + i, r), m0);
  }
  return O::hmax(O::max_u(m0, m1));
}

// ------------------------------------------------------------------------------------------------
// Decoding loops. A decoder Dec turns 4 * O::lanes one-per-byte codes at a pointer into 4
// vectors of float32 bits (operator()(const uint8_t*, v out[4])); FP4 nibble pairs are unpacked
// to one code per byte first (O::unpack_step). O also supplies copy_partial(dst, src, bytes,
// capacity) (zero-filled to capacity), store_f<D>(out, bits, scale) and store_f_partial<D>(out,
// r, bits, scale) (r <= lanes; D == decode_store::scaled multiplies by scale in float32).

/// IEEE-like formats of at most 8 bits, one code per byte.
template <class O, class Spec>
struct exmy_decoder_lanes {
  typename O::table8 subnormals;
  MINIFLOAT_LANES_INLINE exmy_decoder_lanes() : subnormals(O::load_table8(subnormal_bits<Spec>.data())) {}
  MINIFLOAT_LANES_INLINE void operator()(const std::uint8_t* p, typename O::v out[4]) const {
    for (std::size_t k = 0; k < 4; ++k) out[k] = decode_exmy_lanes<O, Spec>(O::load_u8(p + k * O::lanes), subnormals);
  }
};

template <class O>
struct e8m0_decoder_lanes {
  MINIFLOAT_LANES_INLINE void operator()(const std::uint8_t* p, typename O::v out[4]) const {
    for (std::size_t k = 0; k < 4; ++k) out[k] = decode_e8m0_lanes<O>(O::load_u8(p + k * O::lanes));
  }
};

/// The codes of one step: `p` itself, or (Packed) its nibble pairs unpacked into `buf`.
template <class O, bool Packed>
MINIFLOAT_LANES_INLINE const std::uint8_t* step_codes(const std::uint8_t* p, std::uint8_t* buf) {
  if constexpr (Packed) {
    O::unpack_step(p, buf);
    return buf;
  } else {
    (void)buf;
    return p;
  }
}

/// Codes one per byte (Packed = false) or FP4 nibble pairs (Packed = true) -> floats.
template <class O, class Dec, bool Packed, decode_store D>
MINIFLOAT_LANES_TARGET void decode8_span(const std::uint8_t* codes, std::size_t n, float* out, float scale) noexcept {
  constexpr std::size_t step = 4 * O::lanes, in_step = Packed ? step / 2 : step;
  const Dec dec{};
  const typename O::f sv = O::fsplat(scale);
  alignas(64) std::uint8_t unpacked[step];
  typename O::v v[4];
  std::size_t i = 0;
  for (; i + step <= n; i += step) {
    dec(step_codes<O, Packed>(codes + (Packed ? i / 2 : i), unpacked), v);
    for (std::size_t k = 0; k < 4; ++k) O::template store_f<D>(out + i + k * O::lanes, v[k], sv);
  }
  if (i < n) {
    const std::size_t r = n - i;
    alignas(64) std::uint8_t cin[in_step];
    O::copy_partial(cin, codes + (Packed ? i / 2 : i), Packed ? (r + 1) / 2 : r, in_step);
    dec(step_codes<O, Packed>(cin, unpacked), v);
    for (std::size_t k = 0; k < 4 && k * O::lanes < r; ++k) {
      const std::size_t left = r - k * O::lanes;
      O::template store_f_partial<D>(out + i + k * O::lanes, left < O::lanes ? left : O::lanes, v[k], sv);
    }
  }
}

/// bfloat16 / float16 codes -> floats (O::widen16<Spec>(p, c) loads O::lanes codes, returns
/// their exact float32 bits and sets c to the zero-extended codes).
template <class O, class Spec, decode_store D>
MINIFLOAT_LANES_TARGET void decode16_span(const std::uint16_t* codes, std::size_t n, float* out, float scale) noexcept {
  const typename O::f sv = O::fsplat(scale);
  typename O::v c;
  std::size_t i = 0;
  for (; i + O::lanes <= n; i += O::lanes) {
    const typename O::v w = O::template widen16<Spec>(codes + i, c);
    O::template store_f<D>(out + i, decode16_lanes<O, Spec>(c, w), sv);
  }
  if (i < n) {
    alignas(64) std::uint16_t cin[O::lanes];
    O::copy_partial(cin, codes + i, (n - i) * sizeof(std::uint16_t), sizeof cin);
    const typename O::v w = O::template widen16<Spec>(cin, c);
    O::template store_f_partial<D>(out + i, n - i, decode16_lanes<O, Spec>(c, w), sv);
  }
}
