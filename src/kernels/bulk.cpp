// minifloat::kernels: the bulk codecs of simd/bulk.hpp compiled once, for every format of
// all_formats and every bulk input type (compiled-kernels mode, core/config.hpp).
#define MINIFLOAT_BUILDING_KERNELS MINIFLOAT_KERNELS_BULK
#include <tuple>

#include <minifloat/formats/format_list.hpp>
#include <minifloat/simd/bulk.hpp>

namespace minifloat::simd::detail {

#define MINIFLOAT_BULK_INPUT(T, In)                                                                     \
  template kernel_status encode_impl<T, In>(std::span<const In>, std::span<code_t<T>>, conversion,     \
                                            const bulk_options&) noexcept;                             \
  template kernel_status quantize_scaled_impl<T, In>(std::span<const In>, std::span<code_t<T>>, float, \
                                                     float&, conversion, const bulk_options&) noexcept;
#define MINIFLOAT_BULK_FORMAT(T)                                                                        \
  MINIFLOAT_BULK_INPUT(T, float)                                                                        \
  MINIFLOAT_BULK_INPUT(T, bfloat16)                                                                     \
  MINIFLOAT_BULK_INPUT(T, float16)                                                                      \
  template kernel_status decode_impl<T>(std::span<const code_t<T>>, std::span<float>,                  \
                                        const bulk_options&) noexcept;                                 \
  template kernel_status dequantize_scaled_impl<T>(std::span<const code_t<T>>, std::span<float>, float, \
                                                   const bulk_options&) noexcept;

MINIFLOAT_BULK_FORMAT(hifloat8)
MINIFLOAT_BULK_FORMAT(float8_e4m3fn)
MINIFLOAT_BULK_FORMAT(float8_e5m2)
MINIFLOAT_BULK_FORMAT(float6_e3m2fn)
MINIFLOAT_BULK_FORMAT(float6_e2m3fn)
MINIFLOAT_BULK_FORMAT(float4_e2m1fn)
MINIFLOAT_BULK_FORMAT(float8_e8m0fnu)
MINIFLOAT_BULK_FORMAT(bfloat16)
MINIFLOAT_BULK_FORMAT(float16)
MINIFLOAT_BULK_FORMAT(float8_e4m3fnuz)
MINIFLOAT_BULK_FORMAT(float8_e5m2fnuz)
MINIFLOAT_BULK_FORMAT(float8_e4m3b11fnuz)
MINIFLOAT_BULK_FORMAT(float8_e3m4)
MINIFLOAT_BULK_FORMAT(float8_e4m3)
static_assert(std::tuple_size_v<all_formats> == 14,
              "a format was added to all_formats: instantiate its bulk codecs above");

template kernel_status encode_fp4_packed_impl<float>(std::span<const float>, std::span<std::uint8_t>, conversion,
                                                     const bulk_options&) noexcept;
template kernel_status encode_fp4_packed_impl<bfloat16>(std::span<const bfloat16>, std::span<std::uint8_t>,
                                                        conversion, const bulk_options&) noexcept;
template kernel_status encode_fp4_packed_impl<float16>(std::span<const float16>, std::span<std::uint8_t>,
                                                       conversion, const bulk_options&) noexcept;
template kernel_status quantize_scaled_fp4_packed_impl<float>(std::span<const float>, std::span<std::uint8_t>, float,
                                                              float&, conversion, const bulk_options&) noexcept;
template kernel_status quantize_scaled_fp4_packed_impl<bfloat16>(std::span<const bfloat16>, std::span<std::uint8_t>,
                                                                 float, float&, conversion,
                                                                 const bulk_options&) noexcept;
template kernel_status quantize_scaled_fp4_packed_impl<float16>(std::span<const float16>, std::span<std::uint8_t>,
                                                                float, float&, conversion,
                                                                const bulk_options&) noexcept;
template kernel_status finite_amax_impl<float>(std::span<const float>, float&, const bulk_options&) noexcept;
template kernel_status finite_amax_impl<bfloat16>(std::span<const bfloat16>, float&, const bulk_options&) noexcept;
template kernel_status finite_amax_impl<float16>(std::span<const float16>, float&, const bulk_options&) noexcept;

}  // namespace minifloat::simd::detail
