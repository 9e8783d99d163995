// libFuzzer target: the scheme-string parser (quant/scheme_string.hpp). Two modes, by the first
// byte:
//   even: the rest is a scheme string. parse_scheme either throws std::invalid_argument
//         (unsupported_error / shape_error) or returns a valid scheme whose long spelling
//         (to_scheme_string) and display name (scheme_name) both parse back to the same scheme.
//   odd:  the rest picks a quant_scheme field by field; when validate() accepts it, its long
//         spelling parses back to it (round trip from the other side).
// Any other exception, a crash or a sanitizer report is a bug.
#include <minifloat/quant/scheme_string.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "fuzz_input.hpp"

namespace {

void round_trip(const minifloat::quant_scheme& s) {
  const auto a = minifloat::parse_scheme(minifloat::to_scheme_string(s));
  const auto b = minifloat::parse_scheme(minifloat::scheme_name(s));
  if (!(a.scheme == s) || !(b.scheme == s) || a.name != b.name) std::abort();
  if (minifloat::to_quantize_options(s).empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if ((data[0] & 1U) == 0) {
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    minifloat::named_scheme n;
    try {
      n = minifloat::parse_scheme(text);
    } catch (const std::invalid_argument&) {
      return 0;  // rejected with a typed error
    }
    n.scheme.validate();  // what parse returns is valid
    round_trip(n.scheme);
    return 0;
  }
  minifloat::fuzz::input in(data + 1, size - 1);
  using namespace minifloat;
  quant_scheme s;
  s.format = static_cast<format_id>(in.range(0, 8));
  s.gran = in.pick({granularity::tensor, granularity::channel, granularity::token, granularity::block, granularity::mx});
  s = quant_scheme::make(s.format, s.gran);
  if (s.gran == granularity::block) s.block_rows = in.range(1, 300), s.block_cols = in.range(1, 300);
  if (s.gran == granularity::mx) s.axis = static_cast<int>(in.range(0, 1));
  if (in.byte() & 1U)
    s.rule = in.pick({scale_rule::max, scale_rule::pow2, scale_rule::none, scale_rule::floor, scale_rule::rceil,
                      scale_rule::ceil, scale_rule::even});
  // The target only means something (and is only spelled) under the pow2 rule.
  const int target = static_cast<int>(in.range(0, 300)) - 150;
  if (s.rule == scale_rule::pow2) s.target = target;
  s.round = in.pick({rounding::nearest, rounding::nearest_even, rounding::nearest_away, rounding::toward_zero,
                     rounding::upward, rounding::downward});
  try {
    s.validate();
  } catch (const std::invalid_argument&) {
    return 0;
  }
  round_trip(s);
  return 0;
}
