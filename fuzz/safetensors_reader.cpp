// libFuzzer target: the .safetensors reader (io/safetensors.hpp). Any input must either parse
// into tensors that tile the data buffer exactly, or throw minifloat::io_error; crashes,
// sanitizer reports, other exceptions and leaks are bugs.
//
// Two modes, chosen by the first byte, so that the fuzzer reaches the JSON parser without first
// having to guess a consistent 8-byte header length:
//   first byte even: the rest is a whole file image, as on disk;
//   first byte odd:  the rest is the JSON header text; the image is built around it with
//                    (first byte >> 1) * 3 bytes of data.
// Run: build/fuzz/fuzz/safetensors_reader -max_total_time=600 CORPUS tests/data/safetensors
#include <minifloat/io/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<std::byte> image;
  const auto rest = std::as_bytes(std::span<const std::uint8_t>(data + 1, size - 1));
  if ((data[0] & 1U) == 0) {
    image.assign(rest.begin(), rest.end());
  } else {
    const std::uint64_t n = rest.size();
    const std::size_t data_size = static_cast<std::size_t>(data[0] >> 1) * 3;
    image.resize(8 + rest.size() + data_size, std::byte{0});
    for (std::size_t i = 0; i < 8; ++i) image[i] = static_cast<std::byte>((n >> (8 * i)) & 0xFFU);
    if (!rest.empty()) std::memcpy(image.data() + 8, rest.data(), rest.size());
  }
  try {
    const minifloat::safetensors_file f = minifloat::parse_safetensors(image, "fuzz");
    std::size_t covered = 0;
    for (const auto& t : f.header.tensors) {
      if (t.begin != covered || t.end < t.begin || t.end > f.data.size()) std::abort();
      if (t.end - t.begin != t.size() * minifloat::safetensors_item_size(t.dtype)) std::abort();
      covered = t.end;
      if (minifloat::safetensors_is_float(t.dtype)) {
        if (minifloat::safetensors_to_float32(t.dtype, f.bytes(t)).size() != t.size()) std::abort();
      }
    }
    if (covered != f.data.size()) std::abort();
  } catch (const minifloat::io_error&) {
    // rejected cleanly
  }
  return 0;
}
