#pragma once
// Turns a libFuzzer input into typed choices: each take_*() consumes bytes from the front and
// returns a default (0, the first choice) once the input is used up, so every input is valid.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace minifloat::fuzz {

class input {
 public:
  input(const std::uint8_t* data, std::size_t size) : bytes_(data, size) {}

  [[nodiscard]] std::size_t remaining() const noexcept { return bytes_.size() - pos_; }
  [[nodiscard]] std::uint8_t byte() noexcept { return pos_ < bytes_.size() ? bytes_[pos_++] : 0; }
  [[nodiscard]] std::uint32_t u32() noexcept {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(byte()) << (8 * i);
    return v;
  }
  /// An integer in [lo, hi].
  [[nodiscard]] std::size_t range(std::size_t lo, std::size_t hi) noexcept {
    const std::size_t span = hi - lo + 1;
    return lo + (span <= 256 ? byte() % span : u32() % span);
  }
  template <class E>
  [[nodiscard]] E pick(std::initializer_list<E> choices) noexcept {
    return choices.begin()[byte() % choices.size()];
  }
  /// Any float bit pattern (NaN, Inf, subnormals included) or, half the time, a tame value.
  [[nodiscard]] float number() noexcept {
    const std::uint8_t kind = byte();
    if (kind & 1U) return std::bit_cast<float>(u32());
    return static_cast<float>(static_cast<std::int8_t>(byte())) * static_cast<float>(1U << (kind >> 4));
  }
  [[nodiscard]] std::vector<float> numbers(std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = number();
    return v;
  }
  [[nodiscard]] std::vector<std::uint8_t> raw(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    for (auto& b : v) b = byte();
    return v;
  }
  /// What is left of the input.
  [[nodiscard]] std::span<const std::uint8_t> rest() noexcept {
    const auto r = bytes_.subspan(pos_);
    pos_ = bytes_.size();
    return r;
  }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

/// Bit-identical floats, except that any two NaNs match: a NaN's payload and sign come from
/// whichever operand the hardware propagates, which differs between scalar and vector code.
[[nodiscard]] inline bool same_values(std::span<const float> a, std::span<const float> b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != a[i] && b[i] != b[i]) continue;  // both NaN
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
  }
  return true;
}

}  // namespace minifloat::fuzz
