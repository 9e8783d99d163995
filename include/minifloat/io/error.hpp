#pragma once

// The one exception type of minifloat/io. It derives from std::runtime_error so callers that
// do not care where a failure came from can catch it with everything else, while callers
// loading user files can catch exactly the "this file is bad" case.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace minifloat {

// what() is a single line: the file path (or "<memory>") when known, what was wrong, and what
// was expected instead.
class io_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

/// Which bytes printable_text escapes besides the control bytes (< 0x20 and 0x7F).
enum class escape : bool { control, non_ascii };

/// Text taken from a file or a caller, made safe for a one-line message: control bytes (and, with
/// escape::non_ascii, every byte >= 0x7F) as \xNN, cut after max_chars input bytes ("..." marks
/// the cut), so a corrupt file cannot break the line or the terminal.
[[nodiscard]] inline std::string printable_text(std::string_view text, std::size_t max_chars = std::string_view::npos,
                                                escape what = escape::control) {
  constexpr std::string_view hex = "0123456789abcdef";
  std::string out;
  const std::size_t n = text.size() < max_chars ? text.size() : max_chars;
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x20 || b == 0x7F || (what == escape::non_ascii && b > 0x7F)) {
      out += "\\x";
      out += hex[b >> 4];
      out += hex[b & 0xFU];
    } else {
      out += text[i];
    }
  }
  if (n < text.size()) out += "...";
  return out;
}

}  // namespace detail

}  // namespace minifloat
