// libFuzzer target: the .npy reader (io/npy.hpp). Any input must either parse into an array whose
// data matches its shape, or throw minifloat::io_error; crashes, sanitizer reports, other
// exceptions and leaks are bugs. Run: build/fuzz/fuzz/npy_reader -max_total_time=600 CORPUS...
#include <minifloat/io/npy.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span<const std::uint8_t>(data, size));
  try {
    const minifloat::npy_array a = minifloat::parse_npy(bytes, "fuzz");
    if (a.data.size() != a.size() * minifloat::npy_item_size(a.dtype)) std::abort();
    if (a.dtype == minifloat::npy_dtype::float32 || a.dtype == minifloat::npy_dtype::float64 ||
        a.dtype == minifloat::npy_dtype::float16) {
      if (minifloat::to_float32(a).size() != a.size()) std::abort();
    }
  } catch (const minifloat::io_error&) {
    // rejected cleanly
  }
  return 0;
}
