// libFuzzer target: the file readers through a real file path (read_npy, read_safetensors_header
// + read_safetensors_bytes, read_safetensors, and tensor_files' list/load), against the
// in-memory parsers on the same bytes. Both must agree: the same arrays, or both an io_error.
// Any other exception, a crash, a sanitizer report or a leak is a bug.
// The first byte picks the reader (even: .npy, odd: .safetensors); the rest is the file.
#include <minifloat/io/npy.hpp>
#include <minifloat/io/safetensors.hpp>
#include <minifloat/io/tensor_files.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

// The scratch folder, removed again when the fuzzer exits.
struct scratch {
  fs::path dir;
  ~scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const fs::path& scratch_dir() {
  static const scratch s{[] {
    // /dev/shm when there is one: the target writes a file per input
    std::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path d = base / ("minifloat_fuzz_files_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }()};
  return s.dir;
}

void write_file(const fs::path& p, std::span<const std::uint8_t> bytes) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  if (std::fclose(f) != 0) std::abort();
}

void npy_case(std::span<const std::uint8_t> file) {
  const fs::path p = scratch_dir() / "input.npy";
  write_file(p, file);
  bool mem_ok = true, disk_ok = true;
  minifloat::npy_array mem, disk;
  try {
    mem = minifloat::parse_npy(std::as_bytes(file), "fuzz");
  } catch (const minifloat::io_error&) {
    mem_ok = false;
  }
  try {
    disk = minifloat::read_npy(p);
  } catch (const minifloat::io_error&) {
    disk_ok = false;
  }
  if (mem_ok != disk_ok) std::abort();
  if (!mem_ok) return;
  if (mem.dtype != disk.dtype || mem.shape != disk.shape || mem.data != disk.data) std::abort();
  // The analyze path: list and load through tensor_files (matrix views may be shape errors).
  try {
    const auto sources = minifloat::list_tensor_sources({p});
    if (sources.size() != 1) std::abort();
    const auto t = minifloat::load_tensor(sources[0]);
    if (t.values.size() != disk.size()) std::abort();
  } catch (const minifloat::io_error&) {
    if (minifloat::npy_is_float(disk.dtype)) std::abort();  // a float array must load
  } catch (const minifloat::shape_error&) {
  }
}

void safetensors_case(std::span<const std::uint8_t> file) {
  const fs::path p = scratch_dir() / "input.safetensors";
  write_file(p, file);
  bool mem_ok = true, disk_ok = true, header_ok = true;
  minifloat::safetensors_file mem, disk;
  minifloat::safetensors_header header;
  try {
    mem = minifloat::parse_safetensors(std::as_bytes(file), "fuzz");
  } catch (const minifloat::io_error&) {
    mem_ok = false;
  }
  try {
    disk = minifloat::read_safetensors(p);
  } catch (const minifloat::io_error&) {
    disk_ok = false;
  }
  try {
    header = minifloat::read_safetensors_header(p);
  } catch (const minifloat::io_error&) {
    header_ok = false;
  }
  if (mem_ok != disk_ok || mem_ok != header_ok) std::abort();
  if (!mem_ok) return;
  if (mem.data != disk.data || mem.header.tensors.size() != header.tensors.size()) std::abort();
  for (const auto& t : header.tensors) {
    const auto bytes = minifloat::read_safetensors_bytes(p, header, t);
    const auto from_mem = mem.bytes(*mem.header.find(t.name));
    if (bytes.size() != from_mem.size() || !std::equal(bytes.begin(), bytes.end(), from_mem.begin())) std::abort();
    if (minifloat::safetensors_is_float(t.dtype) &&
        minifloat::safetensors_to_float32(t.dtype, bytes).size() != t.size())
      std::abort();
  }
  try {
    for (const auto& s : minifloat::list_tensor_sources({p})) (void)minifloat::load_tensor(s);
  } catch (const minifloat::shape_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::uint8_t> file(data + 1, size - 1);
  if ((data[0] & 1U) == 0) npy_case(file);
  else safetensors_case(file);
  return 0;
}
