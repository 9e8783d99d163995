#pragma once
// The examples' command lines: one checked parser for every example program, so that each of them
// keeps the CLI's contract (docs/errors.md): a bad argument is a usage_error that main() turns into
// one line on stderr naming the option, the value and what was expected, and exit status 2; a
// number is whole (no "1e3" read as 1), inside its range (no wrap of a huge integer, no NaN or Inf
// where a finite value is needed); a list has no empty item.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include <minifloat/io/files.hpp>

namespace minifloat_examples {

/// A bad command line: exit status 2, nothing read or written.
class usage_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// `text` quoted for a one-line message (control bytes as \xNN).
inline std::string quote_arg(std::string_view text) { return "'" + minifloat::detail::printable_text(text, 200) + "'"; }

/// `text` as a whole integer in [lo, hi], else usage_error naming `option`.
template <class T>
T parse_integer(std::string_view text, std::string_view option, T lo, T hi) {
  static_assert(std::is_integral_v<T>);
  T v{};
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const bool whole = ec == std::errc() && p == text.data() + text.size();
  if (!whole || v < lo || v > hi)
    throw usage_error(std::string(option) + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "], got " + quote_arg(text) +
                      (ec == std::errc::result_out_of_range ? " (out of range)" : !whole ? " (not an integer)" : ""));
  return v;
}

/// `text` as a whole, finite number in [lo, hi] (in (lo, hi] when `lo_open`), else usage_error.
inline double parse_real(std::string_view text, std::string_view option, double lo, double hi, bool lo_open = false) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const bool whole = ec == std::errc() && p == text.data() + text.size();
  if (!whole || !std::isfinite(v) || (lo_open ? !(v > lo) : !(v >= lo)) || !(v <= hi)) {
    char range[96];
    std::snprintf(range, sizeof range, "%s%g, %g]", lo_open ? "(" : "[", lo, hi);
    throw usage_error(std::string(option) + " expects a finite number in " + range + ", got " + quote_arg(text));
  }
  return v;
}

/// The comma-separated items of `text`; an empty item (",", "a,,b", "") is a usage_error.
inline std::vector<std::string> parse_list(std::string_view text, std::string_view option, std::string_view expected) {
  std::vector<std::string> out;
  for (std::size_t b = 0;;) {
    const std::size_t e = std::min(text.find(',', b), text.size());
    if (e == b)
      throw usage_error(std::string(option) + " expects a comma list of " + std::string(expected) + " with no empty item, got " +
                        quote_arg(text));
    out.emplace_back(text.substr(b, e - b));
    if (e == text.size()) return out;
    b = e + 1;
  }
}

/// A comma list of whole integers, each in [lo, hi].
template <class T>
std::vector<T> parse_integer_list(std::string_view text, std::string_view option, T lo, T hi) {
  std::vector<T> out;
  const std::string what = "integers in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  for (const std::string& item : parse_list(text, option, what)) {
    try {
      out.push_back(parse_integer<T>(item, option, lo, hi));
    } catch (const usage_error&) {
      throw usage_error(std::string(option) + " expects a comma list of " + what + ", got " + quote_arg(text) + " (item " +
                        quote_arg(item) + ")");
    }
  }
  return out;
}

/// Walks argv: `next()` moves to the next argument, `name()` is it, `value()` takes the argument
/// after it as the option's value; the typed getters parse that value through the functions above.
class arg_cursor {
 public:
  arg_cursor(int argc, char** argv) : argc_(argc), argv_(argv) {}
  bool next() { return ++i_ < argc_; }
  [[nodiscard]] std::string_view name() const { return argv_[i_]; }
  std::string_view value() {
    if (i_ + 1 >= argc_) throw usage_error(std::string(name()) + " needs a value");
    return argv_[++i_];
  }
  template <class T>
  T integer(T lo, T hi) {
    const std::string option(name());
    return parse_integer<T>(value(), option, lo, hi);
  }
  double real(double lo, double hi, bool lo_open = false) {
    const std::string option(name());
    return parse_real(value(), option, lo, hi, lo_open);
  }
  template <class T>
  std::vector<T> integer_list(T lo, T hi) {
    const std::string option(name());
    return parse_integer_list<T>(value(), option, lo, hi);
  }
  std::vector<std::string> list(std::string_view expected) {
    const std::string option(name());
    return parse_list(value(), option, expected);
  }
  [[noreturn]] void unknown() const {
    throw usage_error("unknown option " + quote_arg(name()) + "; expected one of the options --help lists");
  }

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
};

/// An output folder the program will create at its end: refused now (exit 2) when it cannot be one
/// (an existing non-folder, or a non-folder on the way to it), so that a long run does not fail
/// only when it is about to write.
inline void check_output_folder(const std::filesystem::path& dir, std::string_view option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::path p = fs::absolute(dir, ec).lexically_normal(); !ec && !p.empty(); p = p.parent_path()) {
    const fs::file_status st = fs::status(p, ec);
    if (ec && st.type() != fs::file_type::not_found) break;
    ec.clear();
    if (st.type() == fs::file_type::not_found) {
      if (p == p.parent_path()) break;
      continue;
    }
    if (st.type() != fs::file_type::directory)
      throw usage_error(std::string(option) + " " + quote_arg(dir.string()) + ": " + quote_arg(p.string()) +
                        " exists and is not a folder; expected a folder or a path where one can be created");
    return;
  }
}

/// The program's exit status for the exception `e` (2 for a usage_error, else 1), with its
/// one-line message "PROGRAM: error: WHAT" on stderr.
inline int report(std::string_view program, const std::exception& e) {
  const bool usage = dynamic_cast<const usage_error*>(&e) != nullptr;
  const bool oom = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
  std::cerr << program << ": error: " << (oom ? std::string("out of memory") : minifloat::detail::printable_text(e.what()))
            << "\n";
  return usage ? 2 : 1;
}

/// Runs `body` (returning the exit status) with every exception reported as above.
template <class F>
int guarded_main(std::string_view program, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return report(program, e);
  }
}

}  // namespace minifloat_examples
