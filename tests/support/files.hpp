#pragma once
// Scratch folders and whole-file reads and writes for the tests that touch the file system (io/,
// analysis/ tensor files). One copy, so a fix (say, to the cleanup) reaches every test.
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <catch2/catch.hpp>

#include <minifloat/io/error.hpp>

namespace test_support {

/// A fresh folder under the system temp dir, removed with its contents at scope exit. The random
/// suffix keeps parallel ctest processes (and repeated runs after a crash) apart, which a fixed
/// name does not.
class temp_directory {
 public:
  temp_directory() {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("minifloat_test_" + std::to_string(random()) + std::to_string(random()));
    std::filesystem::create_directories(path_);
  }
  temp_directory(const temp_directory&) = delete;
  temp_directory& operator=(const temp_directory&) = delete;
  ~temp_directory() {
    std::error_code ignored;  // a destructor must not throw; a leftover folder is harmless
    std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] std::filesystem::path operator/(std::string_view name) const { return path_ / name; }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  /// Every entry of the folder (temporary files included), by name.
  [[nodiscard]] std::vector<std::string> listing() const {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(path_)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }

 private:
  std::filesystem::path path_;
};

/// The whole file as text; "" for a file that cannot be opened (the tests compare contents).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

/// The whole file as bytes; the test fails if it cannot be opened.
inline std::vector<std::byte> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::transform(chars.begin(), chars.end(), bytes.begin(), [](char c) { return static_cast<std::byte>(c); });
  return bytes;
}

inline void write_bytes(const std::filesystem::path& p, std::span<const std::byte> b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  REQUIRE(out.good());
}

/// The io_error message thrown by f; fails the test if f returns or throws something else.
template <class F>
std::string io_error_message(F&& f) {
  try {
    f();
  } catch (const minifloat::io_error& e) {
    return e.what();
  }
  FAIL("expected minifloat::io_error");
  return {};
}

}  // namespace test_support
