// Header-only use of the comm codec (comm/codec.hpp): the wire round trip gives quantize() then
// dequantize()'s bits (comm/reference.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <minifloat/comm/codec.hpp>
#include <minifloat/comm/reference.hpp>

TEST_CASE("header-only comm codec: encode_flat then decode_flat is the reference's fake quantize", "[header_only]") {
  namespace mc = minifloat::comm;
  std::vector<float> x(3000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.05f) * 3.0f;
  for (const auto f : mc::all_wire_formats) {
    const auto r = mc::recipe::of(f, 1024);
    INFO(r.describe());
    std::vector<std::uint8_t> body(mc::flat_body_bytes(x.size(), r));
    CHECK_FALSE(mc::encode_flat(x, r, body));
    std::vector<float> out(x.size());
    mc::decode_flat(body, r, out);
    CHECK(out == mc::reference::detail::fake_flat(x, r));
  }
}
