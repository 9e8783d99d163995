// libFuzzer target: quantization over random shapes, schemes and values (NaN, Inf, subnormals
// included): the reference path against the SIMD path, which must agree bit for bit on codes,
// scales and dequantized values, or both throw the same typed error.
// The reference is the engine's scalar path (quantize(..., {.path = simd::isa::scalar})), the SIMD
// path its automatic one (the widest ISA of this CPU).
#include <minifloat/quant/quantized_tensor.hpp>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_input.hpp"

namespace {

using namespace minifloat;

/// Which typed error a call threw (0: none).
template <class F>
int outcome(F&& f, std::string& what) {
  try {
    f();
    return 0;
  } catch (const shape_error& e) {
    what = e.what();
    return 1;
  } catch (const unsupported_error& e) {
    what = e.what();
    return 2;
  } catch (const std::invalid_argument& e) {
    what = e.what();
    return 3;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::input in(data, size);
  const std::size_t rows = in.range(0, 40), cols = in.range(0, 70);
  quant_scheme s = quant_scheme::make(
      static_cast<format_id>(in.range(0, 8)),
      in.pick({granularity::tensor, granularity::channel, granularity::token, granularity::block, granularity::mx}));
  if (s.gran == granularity::block) s.block_rows = in.range(1, 48), s.block_cols = in.range(1, 80);
  if (s.gran == granularity::mx) s.axis = static_cast<int>(in.range(0, 1));
  if (in.byte() % 4 == 0)
    s.rule = in.pick({scale_rule::max, scale_rule::pow2, scale_rule::none, scale_rule::floor, scale_rule::rceil,
                      scale_rule::ceil, scale_rule::even});
  if (s.rule == scale_rule::pow2) s.target = static_cast<int>(in.range(0, 40)) - 20;
  s.round = in.pick({rounding::nearest, rounding::nearest, rounding::nearest_even, rounding::nearest_away,
                     rounding::toward_zero, rounding::upward, rounding::downward, rounding::stochastic});
  s.seed = in.u32();
  const std::vector<float> x = in.numbers(rows * cols);

  quantized_tensor ref, fast;
  std::string ref_what, fast_what;
  const quantize_options scalar_path{.path = simd::isa::scalar};
  const int ref_rc = outcome([&] { ref = quantize(std::span<const float>(x), rows, cols, s, scalar_path); }, ref_what);
  const int fast_rc = outcome([&] { fast = quantize(std::span<const float>(x), rows, cols, s); }, fast_what);
  if (ref_rc != fast_rc) std::abort();  // one path refused what the other accepted
  if (ref_rc != 0) return 0;
  if (!std::equal(ref.codes().begin(), ref.codes().end(), fast.codes().begin(), fast.codes().end())) std::abort();
  if (!fuzz::same_values(ref.scales(), fast.scales())) std::abort();
  if (!std::equal(ref.mx_scales().begin(), ref.mx_scales().end(), fast.mx_scales().begin(), fast.mx_scales().end()))
    std::abort();
  const std::vector<float> y_ref = dequantize(ref, scalar_path), y_fast = dequantize(fast);
  if (y_ref.size() != rows * cols || !fuzz::same_values(y_ref, y_fast)) std::abort();
  // The scales the engine picked are usable ones: finite and positive.
  for (const float sc : ref.scales())
    if (!(sc > 0.0f) || !std::isfinite(sc)) std::abort();
  return 0;
}
