#pragma once
// What an attention call computes: the shapes, the recipe (how each operand is quantized) and the
// options (mask, softmax scale, path, threads). docs/attention.md has the definitions.
//
//   Q (B, Hq, Tq, d), K (B, Hkv, Tk, d), V (B, Hkv, Tk, dv), out (B, Hq, Tq, dv), row-major fp32.
//   Query head h reads KV head h / (Hq / Hkv) (grouped-query attention; Hq a multiple of Hkv).
//   Causal: key j is visible to query i iff j <= i + Tk - Tq.
//
// A recipe names one scheme per operand (the scheme strings of `minifloat analyze`, or "fp32" /
// "none" for unchanged, "bf16" for bfloat16/tensor/scale-rule=none), and the format of P, the
// probabilities entering P.V, with a static scale: P^ = p_scale * decode(encode_F(P~ / p_scale)).
// The backward adds dO's scheme and dS's format with its own static scale (the gradient role).
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../core/checked.hpp"
#include "../core/enum_names.hpp"
#include "../core/errors.hpp"
#include "../formats/convert.hpp"
#include "../formats/format_list.hpp"
#include "../quant/scheme.hpp"
#include "../quant/scheme_string.hpp"
#include "../simd/isa.hpp"

namespace minifloat::attention {

/// The dimensions of one attention call (batch may be 1).
struct attention_shape {
  std::size_t batch = 1;
  std::size_t q_heads = 1, kv_heads = 1;
  std::size_t q_len = 0, kv_len = 0;
  std::size_t head_dim = 0, v_dim = 0;

  [[nodiscard]] std::size_t group() const noexcept { return kv_heads == 0 ? 0 : q_heads / kv_heads; }
  [[nodiscard]] std::size_t q_size() const { return checked_product({batch, q_heads, q_len, head_dim}, "attention: Q"); }
  [[nodiscard]] std::size_t k_size() const { return checked_product({batch, kv_heads, kv_len, head_dim}, "attention: K"); }
  [[nodiscard]] std::size_t v_size() const { return checked_product({batch, kv_heads, kv_len, v_dim}, "attention: V"); }
  [[nodiscard]] std::size_t out_size() const { return checked_product({batch, q_heads, q_len, v_dim}, "attention: out"); }
  [[nodiscard]] std::size_t rows() const { return checked_product({batch, q_heads, q_len}, "attention: rows"); }
  [[nodiscard]] std::string describe() const {
    return "B=" + std::to_string(batch) + " Hq=" + std::to_string(q_heads) + " Hkv=" + std::to_string(kv_heads) +
           " Tq=" + std::to_string(q_len) + " Tk=" + std::to_string(kv_len) + " d=" + std::to_string(head_dim) +
           " dv=" + std::to_string(v_dim);
  }
};

/// An operand's scheme; nullopt: the fp32 values unchanged.
using operand_scheme = std::optional<quant_scheme>;

/// A format with a static scale, for P and dS (quantized as they are produced).
struct static_format {
  std::optional<format_id> format;  ///< nullopt: fp32, unchanged
  float scale = 1.0f;               ///< x^ = scale * decode(encode(float32(x / scale)))
};

/// FlashAttention-3's incoherent processing: Q and K multiplied along d by one random orthogonal
/// Hadamard matrix M = W D / sqrt(d) (W the Sylvester Hadamard matrix, D random signs) before
/// they are quantized. (Q M^T)(K M^T)^T = Q K^T, so only the quantization sees it: outlier
/// channels are spread over all of d. Needs d a power of two.
enum class qk_rotation : std::uint8_t { none, hadamard };

struct attention_recipe {
  operand_scheme q, k, v;
  static_format p;
  qk_rotation rotation = qk_rotation::none;
  std::uint64_t rotation_seed = 0;  ///< the signs of D
  // backward (gradient role)
  operand_scheme d_out;  ///< dO, quantized as the matrix (B*Hq*Tq, dv)
  static_format d_s;     ///< dS = P o (dP - D), quantized element-wise as it is produced
};

enum class mask_kind : std::uint8_t { none, causal };

/// Which implementation runs: the double-precision definition, or the tiled kernel.
enum class attention_path : std::uint8_t { reference, fast };

/// The fast path's block kernel (block_kernels.hpp). automatic: on x86 with AVX-512, AMX tiles
/// for blocks of more than 8 query rows where the CPU has AMX-BF16, the AVX-512 kernels otherwise
/// (blocks of more than 8 rows: the panel kernel, prefill; smaller ones: the register kernel,
/// decode); on x86 without AVX-512, AVX2 FMAs. amx (avx512 where AMX is missing), avx512 and
/// avx2 force one where the CPU has it (the best it has otherwise), for tests and benchmarks;
/// scalar is the scalar twin, as isa scalar. The result differs between kernels only within the
/// bound of docs/attention.md#error-bound. avx512_bf16 is the AVX-512 kernels on bfloat16 pairs
/// (vdpbf16ps), the same bits as avx512 where it applies (docs/attention.md#bfloat16-pairs-kernel);
/// automatic takes it on cores where pairs are faster than fp32 FMAs.
enum class block_kernel : std::uint8_t { automatic, amx, avx512, scalar, avx2, avx512_bf16 };

}  // namespace minifloat::attention

template <>
struct minifloat::enum_names<minifloat::attention::block_kernel> {
  using k = minifloat::attention::block_kernel;
  static constexpr std::array table{name_of(k::automatic, "automatic"), name_of(k::amx, "amx"), name_of(k::avx512, "avx512"),
                                    name_of(k::avx512_bf16, "avx512_bf16"), name_of(k::avx2, "avx2"), name_of(k::scalar, "scalar")};
};

namespace minifloat::attention {

struct attention_options {
  mask_kind mask = mask_kind::none;
  std::optional<double> softmax_scale;  ///< default 1 / sqrt(d)
  simd::isa isa = simd::isa::automatic; ///< fast path: scalar forces the scalar twin
  block_kernel kernel = block_kernel::automatic;  ///< fast path: which block kernel (above)
  unsigned threads = 1;                 ///< fast path worker threads (0: hardware concurrency)
};

/// Forward output and the state the backward needs, per query row (B, Hq, Tq):
/// row_max m = max_j S_ij over the visible keys (S = scale * Q^K^T; -inf if none) and row_sum
/// l = sum_j exp(S_ij - m) (unquantized; 0 if none). logsumexp = m + log l.
struct attention_result {
  std::vector<float> out;
  std::vector<float> row_max, row_sum;
};

struct attention_grads {
  std::vector<float> dq, dk, dv;
  float ds_amax = 0.0f;   ///< max |dS| over the finite values (the delayed scale of the next step)
};

// --- parsing ------------------------------------------------------------------------------------

/// "fp32" / "none" / "float32" -> nullopt; "bf16" / "bfloat16" -> bfloat16/tensor/scale-rule=none;
/// otherwise parse_scheme (quant/scheme_string.hpp). Throws unsupported_error naming `operand`.
[[nodiscard]] inline operand_scheme parse_operand_scheme(std::string_view text, std::string_view operand) {
  if (text == "fp32" || text == "none" || text == "float32") return std::nullopt;
  if (text == "bf16" || text == "bfloat16") {
    quant_scheme s = quant_scheme::make(format_id::bfloat16, granularity::tensor);
    s.rule = scale_rule::none;
    return s;
  }
  try {
    return parse_scheme(text).scheme;
  } catch (const std::invalid_argument& e) {
    throw unsupported_error(std::string(operand) + " scheme: " + e.what());
  }
}

/// "fp32"/"none" -> nullopt, else a format name (not the E8M0 scale format).
[[nodiscard]] inline std::optional<format_id> parse_static_format(std::string_view text, std::string_view operand) {
  if (text == "fp32" || text == "none" || text == "float32") return std::nullopt;
  if (text == "bf16") return format_id::bfloat16;
  const auto f = parse_format(text);
  if (!f || *f == format_id::float8_e8m0fnu)
    throw unsupported_error(std::string(operand) + " format '" + std::string(text) +
                            "': expected fp32, hifloat8, float8_e4m3fn, float8_e5m2, bfloat16, float16 or another element format");
  return f;
}

[[nodiscard]] inline std::string operand_scheme_name(const operand_scheme& s) {
  if (!s) return "fp32";
  if (s->format == format_id::bfloat16 && s->gran == granularity::tensor && s->rule == scale_rule::none) return "bf16";
  return scheme_name(*s);
}

// --- the static-scale rounding of P and dS --------------------------------------------------------

/// x^ = scale * decode(encode_F(float32(x / scale))), F's default rounding, saturating (double in,
/// double out: the reference's definition).
[[nodiscard]] inline double round_static(double x, const static_format& f) {
  if (!f.format) return x;
  const float y = static_cast<float>(x / static_cast<double>(f.scale));
  const double v = visit_format(*f.format, [&](auto t) {
    using E = typename decltype(t)::type;
    return static_cast<double>(static_cast<float>(narrow<E>(y, saturating)));
  });
  return v * static_cast<double>(f.scale);
}

/// decode(encode_F(y)), F's default rounding, saturating.
[[nodiscard]] inline float round_to_format(float y, format_id f) {
  return visit_format(f, [&](auto t) {
    using E = typename decltype(t)::type;
    return static_cast<float>(narrow<E>(y, saturating));
  });
}

/// The same on float32 without the final multiply by the scale (the fast path keeps the scale
/// apart and applies it to the accumulated product): decode(encode_F(x / scale)), x / scale in fp32.
[[nodiscard]] inline float round_static_unscaled(float x, const static_format& f) {
  if (!f.format) return x;
  return round_to_format(x / f.scale, *f.format);
}

// --- the Hadamard rotation ----------------------------------------------------------------------------

namespace detail {

/// The random signs of D (splitmix64 of seed, one bit per channel).
inline std::vector<double> rotation_signs(std::size_t d, std::uint64_t seed) {
  std::vector<double> s(d);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  for (std::size_t i = 0; i < d; ++i) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    s[i] = ((z ^ (z >> 31)) & 1U) != 0 ? -1.0 : 1.0;
  }
  return s;
}

/// In place on every d-row of x: x <- M x (forward) or M^T x (transpose), in double, rounded to float.
inline void rotate_rows(std::span<float> x, std::size_t d, std::uint64_t seed, bool transpose) {
  if (d == 0 || (d & (d - 1)) != 0)
    throw shape_error("attention: the Hadamard rotation needs d a power of two, got d = " + std::to_string(d));
  const auto sign = rotation_signs(d, seed);
  const double norm = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> row(d);
  for (std::size_t r = 0; r < x.size() / d; ++r) {
    for (std::size_t i = 0; i < d; ++i) row[i] = static_cast<double>(x[r * d + i]) * (transpose ? 1.0 : sign[i]);
    for (std::size_t h = 1; h < d; h *= 2)  // fast Walsh-Hadamard transform (W is symmetric)
      for (std::size_t i = 0; i < d; i += 2 * h)
        for (std::size_t j = i; j < i + h; ++j) {
          const double a = row[j], b = row[j + h];
          row[j] = a + b, row[j + h] = a - b;
        }
    for (std::size_t i = 0; i < d; ++i) x[r * d + i] = static_cast<float>(row[i] * norm * (transpose ? sign[i] : 1.0));
  }
}

}  // namespace detail

// --- checks ---------------------------------------------------------------------------------------

namespace detail {

/// A number for a message in %g form, so 1e-45 does not print as 0.000000.
inline std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

inline std::string dims(std::size_t a, std::size_t b, std::size_t c, std::size_t d) {
  return "(" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + ", " + std::to_string(d) + ")";
}

}  // namespace detail

/// Throws shape_error naming the operand and the expected shape, or unsupported_error.
inline void check_attention_call(const attention_shape& s, std::size_t q_size, std::size_t k_size, std::size_t v_size,
                                 const attention_recipe& r) {
  if (s.kv_heads == 0 || s.q_heads == 0)
    throw shape_error("attention: Hq = " + std::to_string(s.q_heads) + ", Hkv = " + std::to_string(s.kv_heads) +
                      "; expected at least one head of each");
  if (s.q_heads % s.kv_heads != 0)
    throw shape_error("attention: Hq = " + std::to_string(s.q_heads) + " is not a multiple of Hkv = " +
                      std::to_string(s.kv_heads) + " (query head h reads KV head h / (Hq / Hkv))");
  if (s.head_dim == 0 || s.v_dim == 0)
    throw shape_error("attention: d = " + std::to_string(s.head_dim) + ", dv = " + std::to_string(s.v_dim) +
                      "; expected both >= 1");
  if (q_size != s.q_size())
    throw shape_error("attention: Q has " + std::to_string(q_size) + " values; expected (B, Hq, Tq, d) = " +
                      detail::dims(s.batch, s.q_heads, s.q_len, s.head_dim) + " = " + std::to_string(s.q_size()));
  if (k_size != s.k_size())
    throw shape_error("attention: K has " + std::to_string(k_size) + " values; expected (B, Hkv, Tk, d) = " +
                      detail::dims(s.batch, s.kv_heads, s.kv_len, s.head_dim) + " = " + std::to_string(s.k_size()));
  if (v_size != s.v_size())
    throw shape_error("attention: V has " + std::to_string(v_size) + " values; expected (B, Hkv, Tk, dv) = " +
                      detail::dims(s.batch, s.kv_heads, s.kv_len, s.v_dim) + " = " + std::to_string(s.v_size()));
  for (const auto* op : {&r.q, &r.k, &r.v, &r.d_out})
    if (*op) op->value().validate();
  for (const auto* f : {&r.p, &r.d_s})
    if (f->format && !(f->scale > 0.0f && std::isfinite(f->scale)))
      throw std::invalid_argument(std::string("attention: the static ") + (f == &r.p ? "P" : "dS") + " scale is " +
                                  detail::number_text(f->scale) +
                                  " as a float32 (a tiny scale such as 1e-50 rounds to 0); expected a finite float32 scale "
                                  "> 0 (at most 3.40282347e+38)");
}

/// A caller's softmax scale must be finite and within float32's range: the fast paths multiply
/// it into an fp32 factor, and a NaN or Inf scale would give NaN rows on one path and zeros on
/// the other. Throws std::invalid_argument naming the value.
inline void check_softmax_scale(const attention_options& o) {
  if (!o.softmax_scale) return;
  const double v = *o.softmax_scale;
  if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max()))
    throw std::invalid_argument("attention: softmax scale " + detail::number_text(v) +
                                " is not a finite float32; expected a finite scale with |scale| <= 3.40282347e+38 "
                                "(default 1 / sqrt(d))");
}

[[nodiscard]] inline double softmax_scale_of(const attention_shape& s, const attention_options& o) {
  check_softmax_scale(o);
  return o.softmax_scale ? *o.softmax_scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
}

/// Number of keys query i (0-based in Tq) sees: Tk without a mask; min(Tk, i + Tk - Tq + 1) causal.
[[nodiscard]] inline std::size_t visible_keys(std::size_t i, std::size_t tq, std::size_t tk, mask_kind m) noexcept {
  if (m == mask_kind::none) return tk;
  // j <= i + Tk - Tq  <=>  j < i + 1 + Tk - Tq (computed without going negative)
  const std::size_t hi = i + 1 + tk;
  return hi <= tq ? 0 : std::min(tk, hi - tq);
}

}  // namespace minifloat::attention
