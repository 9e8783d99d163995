#pragma once
// AArch64 NEON bulk codecs: the same functions, signatures and bits as simd/scalar/codec.hpp,
// 16 elements per step on 4-lane vectors. NEON is part of the AArch64 baseline, so this path is
// static (no run-time check).
//
// The format logic is simd/lanes/codec_logic.hpp (the one the AVX2 and AVX-512 paths use),
// instantiated here with `ops` (4 x 32-bit lanes, masks as all-ones lanes). NEON specifics:
//   * variable shifts go through srl/sll, which clamp the count so that vshlq behaves like
//     vpsrlvd/vpsllvd (0 for any count >= 32);
//   * HiF8's default mode uses the general path (no gather instruction);
//   * stochastic rounding takes its random bits from the scalar random_bits() (exact, slower);
//   * HiF8 decodes from two 128-entry byte tables of the scalar decode table (vqtbl4q_u8);
//   * MX quantize/dequantize use the scalar twins on this path (simd/mx.hpp).
#include "../isa.hpp"

#if MINIFLOAT_SIMD_NEON

#include <arm_neon.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../core/random.hpp"
#include "../../formats/basic_float.hpp"
#include "../../formats/convert.hpp"
#include "../../formats/e8m0.hpp"
#include "../../formats/float16.hpp"
#include "../../formats/float8.hpp"
#include "../../formats/hifloat8.hpp"
#include "../../formats/mx_elements.hpp"
#include "../decode_tables.hpp"
#include "../lanes/codec_common.hpp"

namespace minifloat::simd::neon {

namespace detail {

using simd::detail::decode_store;
using simd::detail::directed_lanes;
using simd::detail::hif8_table_data;
using simd::detail::is_e8m0_like;
using simd::detail::out_bytes;
using simd::detail::overflow_codes;
using simd::detail::reciprocal_is_exact;
using simd::detail::round_kind;
using simd::detail::scale_kind;
using simd::detail::store_for;
using simd::detail::store_kind;
using simd::detail::subnormal_bits;

using u32 = uint32x4_t;

inline int32x4_t as_s(u32 v) { return vreinterpretq_s32_u32(v); }
inline u32 as_u(int32x4_t v) { return vreinterpretq_u32_s32(v); }

/// 4 inputs as float32 bit patterns.
template <class In>
inline u32 load4(const In* p) {
  if constexpr (std::is_same_v<In, float>) {
    return vld1q_u32(reinterpret_cast<const std::uint32_t*>(p));
  } else if constexpr (std::is_same_v<In, bfloat16>) {
    return vshll_n_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)), 16);
  } else {
    static_assert(std::is_same_v<In, float16>);
    return vreinterpretq_u32_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)))));
  }
}

/// 4 x 4 codes (each < 2^16) -> memory.
template <store_kind St>
inline void store16(void* out, const u32 c[4]) {
  const uint16x8_t w0 = vcombine_u16(vmovn_u32(c[0]), vmovn_u32(c[1]));
  const uint16x8_t w1 = vcombine_u16(vmovn_u32(c[2]), vmovn_u32(c[3]));
  if constexpr (St == store_kind::u16) {
    auto* o = static_cast<std::uint16_t*>(out);
    vst1q_u16(o, w0);
    vst1q_u16(o + 8, w1);
  } else {
    const uint8x16_t b = vcombine_u8(vmovn_u16(w0), vmovn_u16(w1));
    if constexpr (St == store_kind::u8) {
      vst1q_u8(static_cast<std::uint8_t*>(out), b);
    } else {
      const uint8x16_t even = vuzp1q_u8(b, b), odd = vuzp2q_u8(b, b);
      const uint8x16_t packed = vorrq_u8(vandq_u8(even, vdupq_n_u8(0x0F)), vshlq_n_u8(odd, 4));
      vst1_u8(static_cast<std::uint8_t*>(out), vget_low_u8(packed));
    }
  }
}

/// random_bits(seed, index + k), 4 lanes per call, from the scalar generator.
struct random4 {
  std::uint64_t seed, index;
  random4(std::uint64_t s, std::uint64_t i) : seed(s), index(i) {}
  u32 next() {
    const std::uint32_t bits[4] = {random_bits(seed, index), random_bits(seed, index + 1), random_bits(seed, index + 2),
                                   random_bits(seed, index + 3)};
    index += 4;
    return vld1q_u32(bits);
  }
};

template <class Spec, round_kind R>
struct pick_encoder;  // below, once the encoders exist

/// The lane ops the shared format logic is written in (simd/lanes/codec_logic.hpp lists them).
struct ops {
  using v = u32;
  using m = u32;  // all-ones lanes
  using f = float32x4_t;
  using table16 = uint8x16_t;
  using table8 = uint8x16x2_t;
  using random = random4;
  template <class Spec, round_kind R>
  using encoder = typename pick_encoder<Spec, R>::type;
  static constexpr std::size_t lanes = 4;

  static v splat(std::uint32_t x) { return vdupq_n_u32(x); }
  static v splat_i(int x) { return as_u(vdupq_n_s32(x)); }
  static v zero() { return vdupq_n_u32(0); }
  static m mask_splat(bool b) { return vdupq_n_u32(b ? 0xFFFFFFFFU : 0U); }
  static v add(v a, v b) { return vaddq_u32(a, b); }
  static v sub(v a, v b) { return vsubq_u32(a, b); }
  static v and_(v a, v b) { return vandq_u32(a, b); }
  static v or_(v a, v b) { return vorrq_u32(a, b); }
  static v xor_(v a, v b) { return veorq_u32(a, b); }
  static v andnot(v a, v b) { return vbicq_u32(b, a); }
  static v min_s(v a, v b) { return as_u(vminq_s32(as_s(a), as_s(b))); }
  static v max_s(v a, v b) { return as_u(vmaxq_s32(as_s(a), as_s(b))); }
  static v max_u(v a, v b) { return vmaxq_u32(a, b); }
  static v abs_s(v a) { return as_u(vabsq_s32(as_s(a))); }
  // vshlq takes its count from the low signed byte of each lane and shifts right for negative
  // counts; clamping the (unsigned) count to 64 first gives exactly vpsrlvd/vpsllvd semantics:
  // any count >= 32, "negative" ones included, shifts everything out.
  static v srl(v a, v count) { return vshlq_u32(a, vnegq_s32(as_s(vminq_u32(count, vdupq_n_u32(64))))); }
  static v sll(v a, v count) { return vshlq_u32(a, as_s(vminq_u32(count, vdupq_n_u32(64)))); }
  template <int N>
  static v srli(v a) { return vshrq_n_u32(a, N); }
  template <int N>
  static v slli(v a) { return vshlq_n_u32(a, N); }
  template <int N>
  static v srai(v a) { return as_u(vshrq_n_s32(as_s(a), N)); }
  static m eq(v a, v b) { return vceqq_u32(a, b); }
  static m gt_s(v a, v b) { return vcgtq_s32(as_s(a), as_s(b)); }
  static m lt_u(v a, v b) { return vcltq_u32(a, b); }
  static v select(m k, v a, v b) { return vbslq_u32(k, a, b); }
  static v keep(v a, m k) { return vandq_u32(a, k); }
  static v zero_if(v a, m k) { return vbicq_u32(a, k); }
  static v inc_if(v a, m k) { return vsubq_u32(a, k); }
  static m mask_or(m a, m b) { return vorrq_u32(a, b); }
  static m mask_and(m a, m b) { return vandq_u32(a, b); }
  static v as_vec(m k) { return k; }
  static m sign_lanes(v a) { return srai<31>(a); }
  static table16 load_table16(const std::uint8_t* t) { return vld1q_u8(t); }
  /// Byte lookup for lanes holding 0..15 (the upper index bytes are out of range: 0).
  static v lookup16(table16 t, v idx) {
    return vreinterpretq_u32_u8(vqtbl1q_u8(t, vreinterpretq_u8_u32(vorrq_u32(idx, vdupq_n_u32(0x80808000U)))));
  }
  static table8 load_table8(const std::uint32_t* t) {
    const auto* b = reinterpret_cast<const std::uint8_t*>(t);
    return {vld1q_u8(b), vld1q_u8(b + 16)};
  }
  /// Entry idx (0..7) of 8 32-bit entries: bytes 4 idx .. 4 idx + 3 of the 32-byte table.
  static v lookup8(table8 t, v idx) {
    const u32 bytes = vmlaq_n_u32(vdupq_n_u32(0x03020100U), idx, 0x04040404U);
    return vreinterpretq_u32_u8(vqtbl2q_u8(t, vreinterpretq_u8_u32(bytes)));
  }

  // loop primitives
  static f fsplat(float x) { return vdupq_n_f32(x); }
  static f mulf(f a, f b) { return vmulq_f32(a, b); }
  static f divf(f a, f b) { return vdivq_f32(a, b); }
  static f as_f(v a) { return vreinterpretq_f32_u32(a); }
  static v as_v(f a) { return vreinterpretq_u32_f32(a); }
  static float hmax(v a) { return std::bit_cast<float>(vmaxvq_u32(a)); }
  template <class In>
  static v load(const In* p) { return load4(p); }
  template <class In>
  static v load_partial(const In* p, std::size_t r) {
    In buf[lanes] = {};
    std::memcpy(buf, p, r * sizeof(In));
    return load4(buf);
  }
  template <store_kind St>
  static void store_step(void* out, const v c[4]) { store16<St>(out, c); }
  template <store_kind St>
  static void store_step_partial(void* out, std::size_t r, const v c[4]) {
    std::uint8_t buf[32];
    store16<St>(buf, c);
    if constexpr (St == store_kind::nibbles) {
      if (r % 2 != 0) buf[r / 2] = static_cast<std::uint8_t>(buf[r / 2] & 0x0FU);
    }
    std::memcpy(out, buf, out_bytes<St>(r));
  }
  static v load_u8(const std::uint8_t* p) {
    std::uint32_t w = 0;
    std::memcpy(&w, p, sizeof w);
    return vmovl_u16(vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w)))));
  }
  static void unpack_step(const std::uint8_t* p, std::uint8_t* out) {
    const uint8x8_t b = vld1_u8(p);
    const uint8x8x2_t z = vzip_u8(vand_u8(b, vdup_n_u8(0x0F)), vshr_n_u8(b, 4));
    vst1q_u8(out, vcombine_u8(z.val[0], z.val[1]));
  }
  static void copy_partial(void* dst, const void* src, std::size_t bytes, std::size_t capacity) {
    std::memset(dst, 0, capacity);
    std::memcpy(dst, src, bytes);
  }
  template <decode_store D>
  static void store_f(float* out, v bits, f scale) {
    f x = vreinterpretq_f32_u32(bits);
    if constexpr (D == decode_store::scaled) x = vmulq_f32(x, scale);
    vst1q_f32(out, x);
  }
  template <decode_store D>
  static void store_f_partial(float* out, std::size_t r, v bits, f scale) {
    float buf[lanes];
    store_f<D>(buf, bits, scale);
    std::memcpy(out, buf, r * sizeof(float));
  }
  template <class Spec>
  static v widen16(const std::uint16_t* p, v& c) {
    const uint16x4_t codes = vld1_u16(p);
    c = vmovl_u16(codes);
    if constexpr (Spec::exponent_bits == 8) return vshlq_n_u32(c, 16);
    else return vreinterpretq_u32_f32(vcvt_f32_f16(vreinterpret_f16_u16(codes)));
  }
};

#define MINIFLOAT_LANES_INLINE inline
#define MINIFLOAT_LANES_TARGET
#include "../lanes/codec_logic.hpp"
#undef MINIFLOAT_LANES_INLINE
#undef MINIFLOAT_LANES_TARGET

template <class Spec, round_kind R>
struct pick_encoder {
  using type = std::conditional_t<std::is_same_v<Spec, hifloat8_spec>, hif8_lanes<ops, R>,
                                  std::conditional_t<is_e8m0_like<Spec>, e8m0_lanes<ops, Spec, R>, exmy_lanes<ops, Spec, R>>>;
};

// --- decoding -----------------------------------------------------------------------------------

/// Signed 8-bit formats decoded by table (HiF8, tapered; E3M4, 16 subnormals): bf16 patterns of
/// the 128 magnitudes as two byte tables (simd/decode_tables.hpp; vqtbl4q_u8 takes 64 entries),
/// the sign ORed in, code 0x80 (-0, or HiF8's NaN) by its own select.
inline uint8x16x4_t table64(const std::uint8_t* p) { return {vld1q_u8(p), vld1q_u8(p + 16), vld1q_u8(p + 32), vld1q_u8(p + 48)}; }

/// 16 codes -> 4 x 4 float32 bit patterns.
template <class Spec>
struct table_decoder {
  // Every value a bfloat16 and decode(c | 0x80) = -decode(c) bitwise: the table holds 128 codes.
  static_assert(simd::detail::bf16_bytes<Spec>.low_half_zero && simd::detail::bf16_bytes<Spec>.sign_symmetric);
  void operator()(const std::uint8_t* p, u32 out[4]) const {
    const uint8x16_t c = vld1q_u8(p);
    const uint8x16_t idx = vandq_u8(c, vdupq_n_u8(0x7F));
    const uint8x16_t idx2 = vsubq_u8(idx, vdupq_n_u8(64));  // < 64 wraps to >= 192: out of range, 0
    const auto& t = simd::detail::bf16_bytes<Spec>;
    uint8x16_t h = vorrq_u8(vqtbl4q_u8(table64(t.hi.data()), idx), vqtbl4q_u8(table64(t.hi.data() + 64), idx2));
    uint8x16_t l = vorrq_u8(vqtbl4q_u8(table64(t.lo.data()), idx), vqtbl4q_u8(table64(t.lo.data() + 64), idx2));
    h = vorrq_u8(h, vandq_u8(c, vdupq_n_u8(0x80)));
    const uint8x16_t is80 = vceqq_u8(c, vdupq_n_u8(0x80));
    h = vbslq_u8(is80, vdupq_n_u8(static_cast<std::uint8_t>(t.code80 >> 24)), h);
    l = vbslq_u8(is80, vdupq_n_u8(static_cast<std::uint8_t>((t.code80 >> 16) & 0xFFU)), l);
    const uint8x16x2_t z = vzipq_u8(l, h);  // 16-bit bf16 patterns, in order
    const uint16x8_t w0 = vreinterpretq_u16_u8(z.val[0]), w1 = vreinterpretq_u16_u8(z.val[1]);
    out[0] = vshll_n_u16(vget_low_u16(w0), 16);
    out[1] = vshll_n_u16(vget_high_u16(w0), 16);
    out[2] = vshll_n_u16(vget_low_u16(w1), 16);
    out[3] = vshll_n_u16(vget_high_u16(w1), 16);
  }
};

template <class Spec>
inline constexpr bool decodes_by_table = std::is_same_v<Spec, hifloat8_spec> || Spec::digits > 4;
template <class Spec>
using decoder8_for =
    std::conditional_t<decodes_by_table<Spec>, table_decoder<Spec>,
                       std::conditional_t<is_e8m0_like<Spec>, e8m0_decoder_lanes<ops>, exmy_decoder_lanes<ops, Spec>>>;

}  // namespace detail

// The kernel set (signatures as in simd/scalar/codec.hpp), written once for every ISA namespace.
#include "../lanes/kernel_set.inc"  // IWYU pragma: keep

inline void pack_nibbles(const std::uint8_t* codes, std::size_t n, std::uint8_t* packed) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const uint8x16_t b = vld1q_u8(codes + i);
    const uint8x16_t even = vuzp1q_u8(b, b), odd = vuzp2q_u8(b, b);
    vst1_u8(packed + i / 2, vget_low_u8(vorrq_u8(vandq_u8(even, vdupq_n_u8(0x0F)), vshlq_n_u8(odd, 4))));
  }
  for (; i < n; i += 2) {
    const unsigned lo = codes[i] & 0xFU;
    const unsigned hi = i + 1 < n ? codes[i + 1] & 0xFU : 0U;
    packed[i / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
  }
}

inline void unpack_nibbles(const std::uint8_t* packed, std::size_t n, std::uint8_t* codes) noexcept {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const uint8x8_t b = vld1_u8(packed + i / 2);
    const uint8x8x2_t z = vzip_u8(vand_u8(b, vdup_n_u8(0x0F)), vshr_n_u8(b, 4));
    vst1q_u8(codes + i, vcombine_u8(z.val[0], z.val[1]));
  }
  for (; i < n; ++i) codes[i] = static_cast<std::uint8_t>((static_cast<unsigned>(packed[i / 2]) >> (4 * (i & 1))) & 0xFU);
}

}  // namespace minifloat::simd::neon

#endif  // MINIFLOAT_SIMD_NEON
