#pragma once
// Command-line numbers of the LM example's programs (lm_training, lm_training_dp).
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <type_traits>

namespace lm {

/// s as a T, whole; otherwise a message naming the option and exit status 2.
template <class T>
T parse_num(std::string_view s, const char* what, const char* program = "lm_training") {
  T v{};
  if constexpr (std::is_floating_point_v<T>) {
    try {
      std::size_t pos = 0;
      v = static_cast<T>(std::stod(std::string(s), &pos));
      if (pos == s.size()) return v;
    } catch (const std::exception&) {
    }
  } else {
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size()) return v;
  }
  std::cerr << program << ": " << what << " expects a number, got '" << s << "'\n";
  std::exit(2);
}

}  // namespace lm
