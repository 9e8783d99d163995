#pragma once
// The GEMM entry points, declared, with the types they take (gemm_config, gemm_accumulation):
// what gemm.hpp offers. The definitions live with their loops (blocked.hpp, gemv_packed.hpp,
// grouped.hpp, reference.hpp, packed_weights.hpp): included by gemm.hpp in header-only mode,
// compiled once into minifloat::kernels in compiled-kernels mode (core/config.hpp), where this
// header is all a caller compiles. Operands and layouts: operand.hpp; the orders: reference.hpp.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "../formats/float16.hpp"
#include "../quant/quantized_tensor.hpp"
#include "../simd/isa.hpp"
#include "operand.hpp"

namespace minifloat {

enum class gemm_accumulation : std::uint8_t {
  exact,        ///< exact products and sum, one rounding to the output type
  fp32_blocks,  ///< fp32 partial sum per K-block, scaled and accumulated in fp32 (header comment)
};

constexpr std::string_view to_string(gemm_accumulation a) noexcept {
  return a == gemm_accumulation::exact ? "exact" : "fp32_blocks";
}

/// Which loop nest gemm() runs.
enum class gemm_path : std::uint8_t {
  automatic,  ///< gemv when M <= gemv_max_m, else blocked
  blocked,    ///< the cache-blocked GEMM
  gemv,       ///< the weight-streaming path (any M; meant for small M)
};


/// Which micro-kernel the blocked path runs at the AVX-512 level (below it: the AVX2 or scalar
/// 6 x 16 fp32 kernel). Every choice computes the fp32_blocks order bit for bit
/// (docs/gemm.md): this is a speed knob only.
enum class gemm_microkernel : std::uint8_t {
  automatic,  ///< the one measured faster on this CPU (detail::gemm::preferred_microkernel)
  fp32_fma,   ///< 12 x 32 tiles of fp32 vfmadd231ps on zmm (panels of decoded floats)
  bf16_dot,   ///< 12 x 32 tiles of vdpbf16ps (panels of bfloat16 pairs); an odd K-block length
              ///< (block scales of odd extent along K) runs fp32_fma instead
};

constexpr std::string_view to_string(gemm_microkernel k) noexcept {
  return k == gemm_microkernel::fp32_fma ? "fp32_fma" : k == gemm_microkernel::bf16_dot ? "bf16_dot" : "automatic";
}

struct gemm_config {
  unsigned threads = 1;          ///< worker threads (0: std::thread::hardware_concurrency())
  gemm_path path = gemm_path::automatic;
  /// The widest ISA level the fast path may use (simd/isa.hpp): automatic = the CPU's best;
  /// scalar = the portable twins (bit-identical results); avx2 caps the AVX-512 paths.
  simd::isa isa = simd::isa::automatic;
  gemm_microkernel microkernel = gemm_microkernel::automatic;  ///< blocked path, AVX-512 level
  std::size_t gemv_max_m = 8;    ///< automatic path: gemv for M <= this
  /// Blocking of the blocked path, 0 = the micro-kernel's default (6 x 16 kernels: 144, 256,
  /// 3072; AVX-512 fp32: 240, 256, 3072; bf16: 240, 512, 3072). mc is rounded to the tile
  /// rows, nc to the tile columns, kc to a multiple of the K-block (and even for bf16).
  std::size_t mc = 0, kc = 0, nc = 0;
  std::size_t gemv_kc = 1024;    ///< GEMV: K run decoded per 16-row panel (long runs stream better)
};

class packed_weights;  // packed_weights.hpp

/// Fast quantized GEMM: out (M x N, row-major) = A * B [+ bias], computed in the fp32_blocks
/// order of reference.hpp, bit-identical to gemm_reference(..., gemm_accumulation::fp32_blocks)
/// for every shape, thread count, path and ISA. Same operand rules and errors as the reference.
MINIFLOAT_KERNEL_API void gemm(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                               std::span<const float> bias, std::span<float> out, const gemm_config& cfg = {});
MINIFLOAT_KERNEL_API void gemm(const quantized_tensor_view& a, const quantized_tensor_view& b, gemm_layout layout,
                               std::span<const float> bias, std::span<bfloat16> out, const gemm_config& cfg = {});

/// out (M x N) = A * B [+ bias] with B packed once (packed_weights.hpp): the weight-streaming
/// GEMV for small M (decode-phase inference). Bit-identical to gemm(a, b, layout, ...) on the
/// tensor b was packed from (the fp32_blocks order of reference.hpp) for every M, thread count
/// and ISA; cfg.threads and cfg.isa apply, the blocking fields do not. Any M works, but every 8
/// rows of A stream B once: for large M use gemm() on the unpacked tensor.
MINIFLOAT_KERNEL_API void gemm(const quantized_tensor_view& a, const packed_weights& b, std::span<const float> bias,
                               std::span<float> out, const gemm_config& cfg = {});
MINIFLOAT_KERNEL_API void gemm(const quantized_tensor_view& a, const packed_weights& b, std::span<const float> bias,
                               std::span<bfloat16> out, const gemm_config& cfg = {});

/// Reference GEMM: out (M x N, row-major) = A * B [+ bias], A (M, K), B stored per `layout`.
/// bias: empty or N floats. Throws shape_error / unsupported_error (operand.hpp) for operands
/// that do not fit together.
MINIFLOAT_KERNEL_API void gemm_reference(const quantized_tensor_view& a, const quantized_tensor_view& b,
                                         gemm_layout layout, std::span<const float> bias, std::span<float> out,
                                         gemm_accumulation mode = gemm_accumulation::exact);
MINIFLOAT_KERNEL_API void gemm_reference(const quantized_tensor_view& a, const quantized_tensor_view& b,
                                         gemm_layout layout, std::span<const float> bias, std::span<bfloat16> out,
                                         gemm_accumulation mode = gemm_accumulation::exact);

/// The exact value of every output rounded to double (for error analysis; no fp32 range limit).
[[nodiscard]] MINIFLOAT_KERNEL_API std::vector<double> gemm_reference_exact_double(const quantized_tensor_view& a,
                                                                                   const quantized_tensor_view& b,
                                                                                   gemm_layout layout,
                                                                                   std::span<const float> bias = {});

/// Grouped GEMM (MoE, grouped.hpp): out rows [r0_g, r0_g + group_sizes[g]) = A rows [r0_g, ...)
/// * B_g [+ bias_g]. Fast (bit-identical to grouped_gemm_reference with fp32_blocks). out:
/// total_tokens x N.
MINIFLOAT_KERNEL_API void grouped_gemm(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                                       std::span<const quantized_tensor_view> b, gemm_layout layout,
                                       std::span<const std::span<const float>> bias, std::span<float> out,
                                       const gemm_config& cfg = {});
MINIFLOAT_KERNEL_API void grouped_gemm(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                                       std::span<const quantized_tensor_view> b, gemm_layout layout,
                                       std::span<const std::span<const float>> bias, std::span<bfloat16> out,
                                       const gemm_config& cfg = {});
/// Every expert's weights packed (gemv_packed.hpp): the decode phase of a MoE layer, few tokens
/// per expert, each expert's weights streamed once. Bit-identical to grouped_gemm() on the
/// unpacked tensors.
MINIFLOAT_KERNEL_API void grouped_gemm(const quantized_tensor_view& a, std::span<const std::size_t> group_sizes,
                                       std::span<const packed_weights> b,
                                       std::span<const std::span<const float>> bias, std::span<float> out,
                                       const gemm_config& cfg = {});
/// Reference grouped GEMM (either accumulation mode of reference.hpp).
MINIFLOAT_KERNEL_API void grouped_gemm_reference(const quantized_tensor_view& a,
                                                 std::span<const std::size_t> group_sizes,
                                                 std::span<const quantized_tensor_view> b, gemm_layout layout,
                                                 std::span<const std::span<const float>> bias, std::span<float> out,
                                                 gemm_accumulation mode = gemm_accumulation::exact);
MINIFLOAT_KERNEL_API void grouped_gemm_reference(const quantized_tensor_view& a,
                                                 std::span<const std::size_t> group_sizes,
                                                 std::span<const quantized_tensor_view> b, gemm_layout layout,
                                                 std::span<const std::span<const float>> bias,
                                                 std::span<bfloat16> out,
                                                 gemm_accumulation mode = gemm_accumulation::exact);

/// Every check grouped_gemm() and grouped_gemm_reference() make before they touch a code or a
/// scale (group count and sizes, summed in checked arithmetic; each B against A; bias and
/// output sizes). Throws as they do; reads no data. Returns the shape of the whole output
/// (m = A's rows, n = the experts' N, k, k_block of the first group; 0 without groups).
MINIFLOAT_KERNEL_API gemm_shape validate_grouped_gemm(const quantized_tensor_view& a,
                                                      std::span<const std::size_t> group_sizes,
                                                      std::span<const quantized_tensor_view> b, gemm_layout layout,
                                                      std::span<const std::span<const float>> bias,
                                                      std::size_t out_size);
/// Every check gemm(a, packed_weights, ...) makes (as validate_gemm for the unpacked B).
MINIFLOAT_KERNEL_API gemm_shape validate_gemm(const quantized_tensor_view& a, const packed_weights& b,
                                              std::size_t bias_size, std::size_t out_size);
/// Every check grouped_gemm(a, group_sizes, packed experts, ...) makes (as validate_grouped_gemm).
MINIFLOAT_KERNEL_API gemm_shape validate_grouped_gemm(const quantized_tensor_view& a,
                                                      std::span<const std::size_t> group_sizes,
                                                      std::span<const packed_weights> b,
                                                      std::span<const std::span<const float>> bias,
                                                      std::size_t out_size);

}  // namespace minifloat
