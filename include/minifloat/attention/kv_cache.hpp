#pragma once
// A KV cache that quantizes tokens as they are appended, and the decode step over it.
//
//   kv_cache c({.kv_heads = 8, .head_dim = 128, .v_dim = 128,
//               .k = parse_operand_scheme("float8_e4m3fn/tensor", "K"), .v = ...});
//   c.append(k_tokens, v_tokens, n);                  // (Hkv, n, d) and (Hkv, n, dv) fp32
//   auto r = decode_step(c, q, Hq, n_q, recipe, opt); // q (Hq, n_q, d) -> out (Hq, n_q, dv)
//
// Storage per KV head, row-major [token][channel] (the layout both products read, see
// x86/amx.hpp), as the scheme says:
//   fp32 / bf16                 4 / 2 bytes an element
//   HiF8 / E4M3 / E5M2 tensor   1 byte; ONE static scale for the whole cache (all heads): the
//                               given k_scale / v_scale, or the scheme's rule applied to the
//                               first append (the prompt) -- later tokens are quantized with it,
//                               saturating
//   MXFP8 K                     1 byte + one E8M0 per 32 along d, per token (blocks along d)
//   MXFP8 V                     1 byte + one E8M0 per 32 tokens and column (blocks along T, as
//                               the P V product needs): the last, incomplete block is
//                               re-quantized on every append from an fp32 copy of its tokens,
//                               so the cache always equals quantize(V, mxfp8/axis=0)
// Merged (layout merged): one cache C (Hkv, T, d) serves as K and as V = C[..., :dv], stored
// once. Per-tensor schemes read the same codes in both products. MX: the P V operand needs blocks
// along T, so it is either a second copy quantized along T from the fp32 tokens as they are
// appended (pv_source::second_copy, ~2.06 bytes an element), or re-quantized from the stored
// codes at every decode step (pv_source::requantize: dequantize C[..., :dv], quantize along T;
// 1.03 bytes an element, one extra pass over the cache per step).
// Decode layouts (storage tiles; kv_tiles.hpp): a separate cache whose K and V are both 8-bit
// codes per tensor or bfloat16 keeps the same codes as K key tiles (16 tokens) and V key pairs,
// the order the AVX-512 decode kernel reads (x86/avx512_tiles.hpp); storage automatic takes them
// where that kernel runs. Kernels that read rows (AMX, AVX2) get a row-major copy per step.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "entry_points.hpp"
#include "../core/page_allocator.hpp"
#include "../quant/quantize_engine.hpp"
#include "../quant/quantized_tensor.hpp"
#include "forward.hpp"

namespace minifloat::attention {

/// The cache's code storage: huge-page backed where large (core/page_allocator.hpp).
using byte_store = std::vector<std::uint8_t, page_allocator<std::uint8_t>>;

enum class kv_layout : std::uint8_t { separate, merged };
enum class pv_source : std::uint8_t { second_copy, requantize };
/// How a separate cache orders its codes: row-major, or the decode layouts (header comment);
/// automatic: the decode layouts where the CPU runs the AVX-512 decode kernel and the schemes allow.
enum class kv_storage : std::uint8_t { automatic, rows, tiles };

struct kv_cache_config {
  std::size_t kv_heads = 1, head_dim = 0, v_dim = 0;
  operand_scheme k, v;                 ///< v: separate layout only (merged: V is C's first dv columns)
  std::optional<float> k_scale, v_scale;  ///< static per-tensor scales (nullopt: from the first append)
  kv_layout layout = kv_layout::separate;
  pv_source pv = pv_source::second_copy;  ///< merged MX caches only
  kv_storage storage = kv_storage::automatic;  ///< separate caches only (merged: rows)
};

/// The query side of a decode step.
struct decode_recipe {
  operand_scheme q;
  static_format p;
};

class kv_cache {
 public:
  explicit kv_cache(const kv_cache_config& c) : cfg_(c), heads_(c.kv_heads) {
    if (c.kv_heads == 0 || c.head_dim == 0 || c.v_dim == 0)
      throw shape_error("kv_cache: kv_heads, head_dim and v_dim must be >= 1, got " + std::to_string(c.kv_heads) + ", " +
                        std::to_string(c.head_dim) + ", " + std::to_string(c.v_dim));
    if (c.layout == kv_layout::merged) {
      if (c.v_dim > c.head_dim)
        throw shape_error("kv_cache: a merged cache reads V = C[..., :dv], so dv = " + std::to_string(c.v_dim) +
                          " must not exceed d = " + std::to_string(c.head_dim));
      cfg_.v = c.k;
      if (c.k && c.k->gran == granularity::mx) cfg_.v->axis = 0;  // the P V copy: blocks along T
      cfg_.v_scale = std::nullopt;
    }
    detail::check_fast_operand(cfg_.k, "K", 1);
    detail::check_fast_operand(cfg_.v, "V", 0);
    check_static_scale(cfg_.k, cfg_.k_scale, "k_scale");
    check_static_scale(cfg_.v, cfg_.v_scale, "v_scale");
    const auto tileable = [](const operand_scheme& x) {
      return x && x->gran == granularity::tensor && (x->format == format_id::bfloat16 || detail::is_code8(x->format));
    };
    tiled_ = !merged() && tileable(cfg_.k) && tileable(cfg_.v) &&
             (c.storage == kv_storage::tiles || (c.storage == kv_storage::automatic && detail::use_avx512(simd::isa::automatic)));
  }

  [[nodiscard]] const kv_cache_config& config() const noexcept { return cfg_; }
  [[nodiscard]] std::size_t size() const noexcept { return tokens_; }
  [[nodiscard]] bool merged() const noexcept { return cfg_.layout == kv_layout::merged; }
  [[nodiscard]] bool has_nonfinite() const noexcept { return nonfinite_; }
  /// Whether K and V are stored in the decode layouts (key tiles, key pairs).
  [[nodiscard]] bool tiled() const noexcept { return tiled_; }
  [[nodiscard]] float k_scale() const noexcept { return k_scale_.value_or(1.0f); }
  [[nodiscard]] float v_scale() const noexcept { return merged() && !separate_v() ? k_scale() : v_scale_.value_or(1.0f); }

  /// Bytes held: codes, scales (and the second P V copy of a merged MX cache).
  [[nodiscard]] std::size_t bytes() const noexcept {
    std::size_t b = 0;
    for (const auto& h : heads_) b += (tiled_ ? h.k.size() : tokens_ * (k_row_bytes() + h.kmx_row)) + h.v.size() + h.vmx.size();
    return b;
  }

  /// Appends n tokens: k (Hkv, n, d); v (Hkv, n, dv), ignored (may be empty) for a merged cache.
  void append(std::span<const float> k, std::span<const float> v, std::size_t n) {
    const std::size_t hk = cfg_.kv_heads, d = cfg_.head_dim, dv = cfg_.v_dim;
    if (k.size() != checked_product({hk, n, d}, "kv_cache: K"))
      throw shape_error("kv_cache append: K has " + std::to_string(k.size()) + " values; expected (Hkv, n, d) = (" +
                        std::to_string(hk) + ", " + std::to_string(n) + ", " + std::to_string(d) + ")");
    if (!merged() && v.size() != checked_product({hk, n, dv}, "kv_cache: V"))
      throw shape_error("kv_cache append: V has " + std::to_string(v.size()) + " values; expected (Hkv, n, dv) = (" +
                        std::to_string(hk) + ", " + std::to_string(n) + ", " + std::to_string(dv) + ")");
    if (n == 0) return;
    // The static scales this append quantizes with, checked against its tokens before anything
    // changes: a refused append leaves the cache as it was.
    std::optional<float> ks = k_scale_, vs = v_scale_;
    if (!ks && cfg_.k && cfg_.k->gran == granularity::tensor) ks = cfg_.k_scale ? *cfg_.k_scale : first_scale(k, hk * n, d, *cfg_.k);
    if (!merged() && !vs && cfg_.v && cfg_.v->gran == granularity::tensor) vs = cfg_.v_scale ? *cfg_.v_scale : first_scale(v, hk * n, dv, *cfg_.v);
    if (ks && cfg_.k && cfg_.k->gran == granularity::tensor)
      check_scales_keep_finite(matrix_view<const float>(k, hk * n, d), *cfg_.k, std::span<const float>(&*ks, 1));
    if (!merged() && vs && cfg_.v && cfg_.v->gran == granularity::tensor)
      check_scales_keep_finite(matrix_view<const float>(v, hk * n, dv), *cfg_.v, std::span<const float>(&*vs, 1));
    for (const float x : k) nonfinite_ = nonfinite_ || !std::isfinite(x);
    if (!merged())
      for (const float x : v) nonfinite_ = nonfinite_ || !std::isfinite(x);
    k_scale_ = ks, v_scale_ = vs;
    std::vector<float> vtok;  // the V values of one head (merged: C[..., :dv])
    for (std::size_t h = 0; h < hk; ++h) {
      const auto kh = k.subspan(h * n * d, n * d);
      if (tiled_) {
        append_tiled(heads_[h].k, kv_order::key_tiles, kh, n, d, cfg_.k, k_scale_);
        append_tiled(heads_[h].v, kv_order::key_pairs, v.subspan(h * n * dv, n * dv), n, dv, cfg_.v, v_scale_);
        continue;
      }
      append_rows(heads_[h].k, heads_[h].kmx, heads_[h].kmx_row, heads_[h].kmx_lo, heads_[h].kmx_hi, kh, n, d, cfg_.k, k_scale_);
      if (merged()) {
        if (!separate_v()) continue;
        vtok.resize(n * dv);
        for (std::size_t t = 0; t < n; ++t) std::copy_n(kh.data() + t * d, dv, vtok.data() + t * dv);
        if (cfg_.pv == pv_source::second_copy) append_v_mx(heads_[h], vtok, n);
      } else if (cfg_.v && cfg_.v->gran == granularity::mx) {
        append_v_mx(heads_[h], v.subspan(h * n * dv, n * dv), n);
      } else {
        append_rows(heads_[h].v, heads_[h].vmx, heads_[h].vmx_row, heads_[h].vmx_lo, heads_[h].vmx_hi, v.subspan(h * n * dv, n * dv), n,
                    dv, cfg_.v, v_scale_);
      }
    }
    tokens_ += n;
  }

  /// K of KV head h as the kernel reads it.
  [[nodiscard]] kv_view k_view(std::size_t h) const {
    const auto& hd = heads_.at(h);
    kv_view v = view_of(hd.k, hd.kmx, cfg_.k, cfg_.head_dim, 1, k_scale());
    if (v.mx != nullptr) v.mx_bf16_exact = detail::mx_bf16_exact(v.format, hd.kmx_lo, hd.kmx_hi), v.mx_lo = hd.kmx_lo;
    return v;
  }
  /// V of KV head h; for a merged MX cache with pv_source::requantize, `tmp` receives the codes
  /// re-quantized along T from the stored ones and the view points into it.
  [[nodiscard]] kv_view v_view(std::size_t h, std::optional<quantized_tensor>& tmp) const {
    const auto& hd = heads_.at(h);
    if (merged() && !separate_v()) {
      kv_view v = k_view(h);
      v.cols = cfg_.v_dim;
      return v;
    }
    if (merged() && cfg_.pv == pv_source::requantize) {
      const auto c = dequantized_k(h);
      std::vector<float> cv(tokens_ * cfg_.v_dim);
      for (std::size_t t = 0; t < tokens_; ++t) std::copy_n(c.data() + t * cfg_.head_dim, cfg_.v_dim, cv.data() + t * cfg_.v_dim);
      tmp = quantize(cv, tokens_, cfg_.v_dim, *cfg_.v);
      return detail::make_view({}, &*tmp, 0, tokens_, cfg_.v_dim);
    }
    kv_view v = view_of(hd.v, hd.vmx, cfg_.v, cfg_.v_dim, 0, v_scale());
    if (v.mx != nullptr) v.mx_bf16_exact = detail::mx_bf16_exact(v.format, hd.vmx_lo, hd.vmx_hi), v.mx_lo = hd.vmx_lo;
    return v;
  }

  /// K^ and V^ of head h as fp32 (code value x every scale): what the reference reads.
  [[nodiscard]] std::vector<float> dequantized_k(std::size_t h) const { return values(k_view(h), k_scale_ ? k_scale() : 1.0f); }
  [[nodiscard]] std::vector<float> dequantized_v(std::size_t h) const {
    std::optional<quantized_tensor> tmp;
    const kv_view v = v_view(h, tmp);
    return values(v, v.scale);
  }

 private:
  struct head {
    byte_store k, kmx, v, vmx;
    std::size_t kmx_row = 0, vmx_row = 0;
    std::uint8_t kmx_lo = 0xFF, kmx_hi = 0, vmx_lo = 0xFF, vmx_hi = 0;  // range of the E8M0 scales
    std::vector<float> vstage;  // fp32 tokens of the incomplete MX block along T
  };

  [[nodiscard]] bool separate_v() const noexcept { return cfg_.k && cfg_.k->gran == granularity::mx; }
  [[nodiscard]] std::size_t k_row_bytes() const noexcept { return cfg_.head_dim * elem_bytes(cfg_.k); }
  static std::size_t elem_bytes(const operand_scheme& s) noexcept {
    if (!s) return 4;
    return s->format == format_id::bfloat16 ? 2 : 1;
  }

  /// A caller's static scale is used for every later token, whatever its value: it must be finite,
  /// positive, and keep the format's largest code finite (scale x max <= FLT_MAX), else no append
  /// could promise finite values.
  static void check_static_scale(const operand_scheme& s, const std::optional<float>& scale, const char* name) {
    if (!scale || !s || s->gran != granularity::tensor) return;
    const float sc = *scale;
    const float fmax = static_cast<float>(minifloat::detail::format_max_finite(s->format));
    if (sc > 0.0f && std::isfinite(sc) && std::isfinite(sc * fmax)) return;
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "kv_cache: %s %.9g times the largest %s value %.9g is not a finite float32; expected a finite scale "
                  "> 0 of at most 2^%d",
                  name, static_cast<double>(sc), std::string(to_string(s->format)).c_str(), static_cast<double>(fmax),
                  127 - std::ilogb(fmax));
    throw std::invalid_argument(buf);
  }

  static float first_scale(std::span<const float> x, std::size_t rows, std::size_t cols, const quant_scheme& s) {
    if (s.gran != granularity::tensor) return 1.0f;
    const auto q = quantize(x, rows, cols, s);
    return q.scales().empty() ? 1.0f : q.scales()[0];
  }

  static void append_rows(byte_store& codes, byte_store& mx, std::size_t& mx_row,
                          std::uint8_t& lo, std::uint8_t& hi, std::span<const float> x, std::size_t n, std::size_t cols,
                          const operand_scheme& s, const std::optional<float>& scale) {
    if (!s) {
      const auto* b = reinterpret_cast<const std::uint8_t*>(x.data());  // NOLINT: stored as bytes
      codes.insert(codes.end(), b, b + n * cols * 4);
      return;
    }
    if (s->gran == granularity::mx) {
      const auto q = quantize(x, n, cols, *s);
      codes.insert(codes.end(), q.codes().begin(), q.codes().end());
      mx.insert(mx.end(), q.mx_scales().begin(), q.mx_scales().end());
      for (const std::uint8_t e : q.mx_scales()) lo = std::min(lo, e), hi = std::max(hi, e);
      mx_row = (cols + 31) / 32;
      return;
    }
    const float sc = scale.value_or(1.0f);
    const auto q = quantize_with_scales(matrix_view<const float>(x, n, cols), *s, std::span<const float>(&sc, 1));
    codes.insert(codes.end(), q.codes().begin(), q.codes().end());
  }

  /// MX along T: re-quantize the last (incomplete) 32-token block from its fp32 tokens.
  void append_v_mx(head& h, std::span<const float> v, std::size_t n) {
    const std::size_t dv = cfg_.v_dim;
    std::size_t t = tokens_;
    for (std::size_t i = 0; i < n;) {
      const std::size_t in_block = t % 32, take = std::min(n - i, 32 - in_block);
      h.vstage.insert(h.vstage.end(), v.begin() + static_cast<std::ptrdiff_t>(i * dv),
                      v.begin() + static_cast<std::ptrdiff_t>((i + take) * dv));
      const std::size_t block = t / 32, rows = in_block + take;
      const auto q = quantize(h.vstage, rows, dv, *cfg_.v);
      h.v.resize((block * 32 + rows) * dv);
      std::copy(q.codes().begin(), q.codes().end(), h.v.begin() + static_cast<std::ptrdiff_t>(block * 32 * dv));
      h.vmx.resize((block + 1) * dv);
      std::copy(q.mx_scales().begin(), q.mx_scales().end(), h.vmx.begin() + static_cast<std::ptrdiff_t>(block * dv));
      // (a rewritten tail block only narrows what it held before, so the running range stays a bound)
      for (const std::uint8_t e : q.mx_scales()) h.vmx_lo = std::min(h.vmx_lo, e), h.vmx_hi = std::max(h.vmx_hi, e);
      h.vmx_row = dv;
      if (rows == 32) h.vstage.clear();
      i += take, t += take;
    }
  }

  /// Quantizes n tokens as append_rows does and writes their codes at their places in a decode layout.
  void append_tiled(byte_store& store, kv_order o, std::span<const float> x, std::size_t n, std::size_t cols,
                    const operand_scheme& s, const std::optional<float>& scale) const {
    byte_store rows, mx;
    std::size_t mx_row = 0;
    std::uint8_t lo = 0, hi = 0;
    append_rows(rows, mx, mx_row, lo, hi, x, n, cols, s, scale);
    const std::size_t eb = elem_bytes(s), rb = layout_row_bytes(o, cols, eb);
    store.resize(checked_product({tiles::stored_keys(o, tokens_ + n), rb}, "kv_cache: decode layout"), 0);
    kv_view at;
    at.kind = eb == 2 ? element_kind::bf16 : element_kind::code8, at.order = o, at.row_bytes = rb;
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t c = 0; c < cols; ++c) std::memcpy(store.data() + at.offset(tokens_ + t, c), rows.data() + (t * cols + c) * eb, eb);
  }

  static std::size_t layout_row_bytes(kv_order o, std::size_t cols, std::size_t eb) noexcept {
    return o == kv_order::key_tiles ? tiles::key_tile_row_bytes(cols, eb) : tiles::key_pair_row_bytes(cols, eb);
  }

  [[nodiscard]] kv_view view_of(const byte_store& codes, const byte_store& mx,
                                const operand_scheme& s, std::size_t cols, int mx_axis, float scale) const {
    kv_view v;
    v.rows = tokens_, v.cols = cols;
    v.data = codes.data();
    v.row_bytes = cols * elem_bytes(s);
    if (tiled_) {
      v.order = mx_axis == 1 ? kv_order::key_tiles : kv_order::key_pairs;
      v.row_bytes = layout_row_bytes(v.order, cols, elem_bytes(s));
    }
    if (!s) return v.kind = element_kind::f32, v;
    v.format = s->format;
    v.kind = s->format == format_id::bfloat16 ? element_kind::bf16 : element_kind::code8;
    if (s->gran == granularity::mx) {
      v.mx = mx.data(), v.mx_axis = mx_axis, v.mx_stride = mx_axis == 1 ? (cols + 31) / 32 : cols;
    } else {
      v.scale = scale;
    }
    return v;
  }

  static std::vector<float> values(const kv_view& v, float scale) {
    std::vector<float> out(v.rows * v.cols);
    for (std::size_t r = 0; r < v.rows; ++r)
      for (std::size_t c = 0; c < v.cols; ++c) out[r * v.cols + c] = v.value(r, c) * scale;
    return out;
  }

  kv_cache_config cfg_;
  std::vector<head> heads_;
  std::size_t tokens_ = 0;
  std::optional<float> k_scale_, v_scale_;
  bool nonfinite_ = false;
  bool tiled_ = false;
};

namespace detail {

inline void check_decode(const kv_cache& c, std::span<const float> q, std::size_t q_heads, std::size_t n) {
  const auto& cfg = c.config();
  if (q_heads == 0 || q_heads % cfg.kv_heads != 0)
    throw shape_error("decode_step: Hq = " + std::to_string(q_heads) + " is not a multiple of the cache's Hkv = " +
                      std::to_string(cfg.kv_heads));
  if (q.size() != checked_product({q_heads, n, cfg.head_dim}, "decode_step: q"))
    throw shape_error("decode_step: q has " + std::to_string(q.size()) + " values; expected (Hq, n, d) = (" +
                      std::to_string(q_heads) + ", " + std::to_string(n) + ", " + std::to_string(cfg.head_dim) + ")");
}

/// A row-major copy of a view in a decode layout (its bytes in `store`), for the kernels that
/// read rows.
inline kv_view row_major(const kv_view& x, byte_store& store) {
  kv_view r = x;
  const std::size_t eb = x.element_bytes();
  r.order = kv_order::rows, r.row_bytes = x.cols * eb;
  store.resize(checked_product({x.rows, x.cols, eb}, "kv_cache: row-major copy"));
  for (std::size_t t = 0; t < x.rows; ++t)
    for (std::size_t c = 0; c < x.cols; ++c) std::memcpy(store.data() + (t * x.cols + c) * eb, x.data + x.offset(t, c), eb);
  r.data = store.data();
  return r;
}

inline attention_shape decode_shape(const kv_cache& c, std::size_t q_heads, std::size_t n) {
  const auto& cfg = c.config();
  return {1, q_heads, cfg.kv_heads, n, c.size(), cfg.head_dim, cfg.v_dim};
}

}  // namespace detail

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_ATTENTION)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API attention_result decode_reference(const kv_cache& c, std::span<const float> q, std::size_t q_heads,
                                                       std::size_t n, const decode_recipe& r, const attention_options& opt) {
  detail::check_decode(c, q, q_heads, n);
  const attention_shape s = detail::decode_shape(c, q_heads, n);
  std::vector<float> k, v;
  for (std::size_t h = 0; h < s.kv_heads; ++h) {
    const auto kh = c.dequantized_k(h), vh = c.dequantized_v(h);
    k.insert(k.end(), kh.begin(), kh.end()), v.insert(v.end(), vh.begin(), vh.end());
  }
  attention_recipe ar;
  ar.q = r.q, ar.p = r.p;
  return attention_reference(q, k, v, s, ar, opt);
}
#endif

#if MINIFLOAT_DEFINE_KERNELS(MINIFLOAT_KERNELS_ATTENTION)  // declared and documented in entry_points.hpp
MINIFLOAT_KERNEL_API attention_result decode_step(const kv_cache& c, std::span<const float> q, std::size_t q_heads,
                                                  std::size_t n, const decode_recipe& r, const attention_options& opt) {
  detail::check_decode(c, q, q_heads, n);
  const attention_shape s = detail::decode_shape(c, q_heads, n);
  if (opt.mask == mask_kind::causal && n > c.size())
    throw shape_error("decode_step: " + std::to_string(n) + " causal query tokens but only " + std::to_string(c.size()) +
                      " cached tokens (the queries are the last n tokens of the cache)");
  const detail::query_source qv(q, q_heads * n, s.head_dim, r.q);
  if (c.has_nonfinite() || qv.has_nonfinite()) return decode_reference(c, q, q_heads, n, r, opt);
  std::vector<std::pair<kv_view, kv_view>> views(s.kv_heads);
  std::vector<std::optional<quantized_tensor>> tmp(s.kv_heads);
  for (std::size_t h = 0; h < s.kv_heads; ++h) views[h] = {c.k_view(h), c.v_view(h, tmp[h])};
  std::vector<byte_store> copies;  // row-major K and V for kernels that read rows
  if (c.tiled() && !detail::reads_tiles(opt.isa, opt.kernel)) {
    copies.resize(2 * s.kv_heads);
    for (std::size_t h = 0; h < s.kv_heads; ++h)
      views[h] = {detail::row_major(views[h].first, copies[2 * h]), detail::row_major(views[h].second, copies[2 * h + 1])};
  }
  const float s_factor = static_cast<float>(softmax_scale_of(s, opt)) * qv.factor() * (views.empty() ? 1.0f : views[0].first.scale);
  const float v_factor = (views.empty() ? 1.0f : views[0].second.scale) * (r.p.format ? r.p.scale : 1.0f);
  attention_result res;
  detail::run_blocks(s, qv, views, s_factor, v_factor, r.p, opt, res);
  // fp32 overflow on finite contents (as attention_forward): the reference's double result.
  if (detail::has_nonfinite_result(res)) return decode_reference(c, q, q_heads, n, r, opt);
  return res;
}
#endif

}  // namespace minifloat::attention
