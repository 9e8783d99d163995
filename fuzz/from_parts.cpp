// libFuzzer target: quantized tensors rebuilt from untrusted parts, as a reader of codes and scales
// files would build them: quantized_tensor::from_parts (and a bare quantized_tensor_view) with
// random scheme, shape, code bytes, fp32 scales (NaN, Inf, negative, zero included) and E8M0
// scales, of the right or a wrong size, then dequantized (reference and SIMD paths) into an output
// of the right or a wrong size. Every call must succeed or throw a typed error
// (std::invalid_argument: shape_error, unsupported_error); the two dequantize paths must agree bit
// for bit, NaN payloads aside (a NaN scale from a file reaches the output as a NaN whose payload
// the hardware picks). Any other exception, a crash or a sanitizer report is a bug.
#include <minifloat/quant/quantized_tensor.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "fuzz_input.hpp"

namespace {

using namespace minifloat;

/// n, or (sometimes) a size off by a little, or (rarely) any size.
std::size_t maybe_wrong(fuzz::input& in, std::size_t n) {
  switch (in.byte() % 8) {
    case 0: return n + 1;
    case 1: return n == 0 ? 1 : n - 1;
    case 2: return in.range(0, 300);
    default: return n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input in(data, size);
  const std::size_t rows = in.range(0, 40), cols = in.range(0, 70);
  quant_scheme s = quant_scheme::make(
      static_cast<format_id>(in.range(0, 8)),
      in.pick({granularity::tensor, granularity::channel, granularity::token, granularity::block, granularity::mx}));
  if (s.gran == granularity::block) s.block_rows = in.range(0, 48), s.block_cols = in.range(0, 80);
  if (s.gran == granularity::mx) s.axis = static_cast<int>(in.range(0, 2));  // 2: invalid on purpose
  if (in.byte() % 4 == 0)
    s.rule = in.pick({scale_rule::max, scale_rule::pow2, scale_rule::none, scale_rule::floor, scale_rule::rceil,
                      scale_rule::ceil, scale_rule::even});

  // The sizes a valid tensor of this scheme and shape has (when the scheme is valid at all).
  std::size_t code_bytes = 0, grid = 0;
  try {
    s.validate();
    code_bytes = rows * detail::code_row_bytes(s.format, cols);
    const quantized_tensor_view shape{s, rows, cols, {}, {}, {}};
    grid = shape.scale_grid_rows() * shape.scale_grid_cols();
  } catch (const std::invalid_argument&) {
  }
  const bool mx = s.gran == granularity::mx;
  std::vector<std::uint8_t> codes = in.raw(maybe_wrong(in, code_bytes));
  std::vector<float> scales = in.numbers(mx ? (in.byte() % 8 == 0 ? 1 : 0) : maybe_wrong(in, grid));
  std::vector<std::uint8_t> mx_scales = in.raw(mx ? maybe_wrong(in, grid) : (in.byte() % 8 == 0 ? 1 : 0));
  std::vector<float> out(maybe_wrong(in, rows * cols));

  // 1. a bare view over the untrusted buffers
  const quantized_tensor_view v{s, rows, cols, codes, scales, mx_scales};
  bool view_ok = true;
  try {
    dequantize(v, out, {.path = simd::isa::scalar});
  } catch (const std::invalid_argument&) {
    view_ok = false;
  }
  std::vector<float> out_simd(out.size());
  bool simd_ok = true;
  try {
    dequantize(v, out_simd);
  } catch (const std::invalid_argument&) {
    simd_ok = false;
  }
  if (view_ok != simd_ok) std::abort();
  if (view_ok && !fuzz::same_values(out, out_simd)) std::abort();

  // 2. from_parts owns the buffers and validates once, like a file reader would; unlike a bare
  // view it also refuses fp32 scales that are not finite and positive.
  const bool scales_usable =
      std::all_of(scales.begin(), scales.end(), [](float sc) { return sc > 0.0f && std::isfinite(sc); });
  try {
    const quantized_tensor q =
        quantized_tensor::from_parts(s, rows, cols, std::move(codes), std::move(scales), std::move(mx_scales));
    const std::vector<float> y = dequantize(q);
    if (y.size() != rows * cols) std::abort();
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) (void)q.code(r, c);
  } catch (const std::invalid_argument&) {
    if (view_ok && scales_usable && out.size() == rows * cols) std::abort();  // the view took the same parts
  }
  return 0;
}
