#pragma once

// Reader and writer for NumPy .npy files. It exists so tests, examples and tools can exchange
// tensors with numpy/ml_dtypes without a Python dependency at run time. float16 elements are
// decoded by the library's own float16 (io/elements.hpp); files are read only when they are
// regular files and written all-or-nothing (io/files.hpp).
//
// File layout (numpy/lib/format.py, NEP 1):
//   bytes 0..5   magic "\x93NUMPY"
//   bytes 6, 7   major, minor version: 1.0, 2.0 or 3.0
//   then         header length: uint16 little-endian (1.0) or uint32 little-endian (2.0, 3.0)
//   then         header: a Python dict literal, e.g.
//                  {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
//                ASCII in 1.0/2.0, UTF-8 in 3.0, padded with spaces and a final '\n' so the
//                data starts at a multiple of 64 bytes
//   then         data: prod(shape) * itemsize bytes, C order
//
// Supported: little-endian (or byte-order-free) f2, f4, f8, u1, u2, i1, i4 in C order. Everything
// else is rejected with minifloat::io_error rather than read wrongly. Unlike numpy we also reject
// trailing bytes after the data: they mean the header and the data disagree.

#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ios>
#include <limits>
#include <new>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "elements.hpp"
#include "error.hpp"
#include "files.hpp"

namespace minifloat {

// Data is copied between files and memory without byte swapping, which is only right when the
// host byte order matches the '<' order we read and write.
static_assert(std::endian::native == std::endian::little,
              "minifloat/io/npy.hpp supports little-endian hosts only: it copies '<' .npy data "
              "without byte swapping");

// Element types a .npy file may hold here. float16 has no C++20 type, so its elements travel as
// std::uint16_t bit patterns (IEEE 754 binary16, minifloat::float16 decodes them).
// GCC's -Wshadow flags npy_dtype::float16 against minifloat::float16 although a scoped
// enumerator cannot shadow anything.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
enum class npy_dtype : std::uint8_t { float32, float64, float16, uint8, uint16, int8, int32 };
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

// The one dtype table of the reader and writer: what each npy_dtype is called, how numpy spells
// it (the descr written; '|' marks types without a byte order), its size and how it becomes
// float32. Indexed by the enumerator.
struct npy_dtype_info {
  npy_dtype dtype;
  std::string_view name;   // the enumerator's own name
  std::string_view descr;  // as np.save writes it
  std::size_t item_size;
  element_decoding decoding;
};

inline constexpr std::array<npy_dtype_info, 7> npy_dtype_table{{
    {npy_dtype::float32, "float32", "<f4", 4, element_decoding::float32},
    {npy_dtype::float64, "float64", "<f8", 8, element_decoding::float64},
    {npy_dtype::float16, "float16", "<f2", 2, element_decoding::float16},
    {npy_dtype::uint8, "uint8", "|u1", 1, element_decoding::none},
    {npy_dtype::uint16, "uint16", "<u2", 2, element_decoding::none},
    {npy_dtype::int8, "int8", "|i1", 1, element_decoding::none},
    {npy_dtype::int32, "int32", "<i4", 4, element_decoding::none},
}};

namespace detail {
[[nodiscard]] constexpr bool npy_known(npy_dtype dtype) noexcept {
  return static_cast<std::size_t>(dtype) < npy_dtype_table.size();
}
// The table row of a known dtype (check npy_known first).
[[nodiscard]] constexpr const npy_dtype_info& npy_row(npy_dtype dtype) noexcept {
  return npy_dtype_table[static_cast<std::size_t>(dtype)];
}
}  // namespace detail

// C++ element types that map onto an npy_dtype (std::uint16_t also carries float16 bits).
template <class T>
concept npy_element = std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, std::uint8_t> ||
    std::same_as<T, std::uint16_t> || std::same_as<T, std::int8_t> || std::same_as<T, std::int32_t>;

// The dtype written for T by the typed write_npy (std::uint16_t means uint16, not float16).
template <npy_element T>
inline constexpr npy_dtype npy_dtype_of = [] {
  if constexpr (std::same_as<T, float>)
    return npy_dtype::float32;
  else if constexpr (std::same_as<T, double>)
    return npy_dtype::float64;
  else if constexpr (std::same_as<T, std::uint8_t>)
    return npy_dtype::uint8;
  else if constexpr (std::same_as<T, std::uint16_t>)
    return npy_dtype::uint16;
  else if constexpr (std::same_as<T, std::int8_t>)
    return npy_dtype::int8;
  else
    return npy_dtype::int32;
}();

// Bytes per element; 0 for a value outside the enum (so callers can reject it).
[[nodiscard]] constexpr std::size_t npy_item_size(npy_dtype dtype) noexcept {
  return detail::npy_known(dtype) ? detail::npy_row(dtype).item_size : 0;
}

// The descr numpy writes for the dtype ('|' marks types without a byte order); "" if invalid.
[[nodiscard]] constexpr std::string_view npy_descr(npy_dtype dtype) noexcept {
  return detail::npy_known(dtype) ? detail::npy_row(dtype).descr : "";
}

// The enumerator's own name ("float32", ...); "invalid" for a value outside the enum.
[[nodiscard]] constexpr std::string_view npy_dtype_name(npy_dtype dtype) noexcept {
  return detail::npy_known(dtype) ? detail::npy_row(dtype).name : "invalid";
}

// True for the dtypes to_float32 converts (float32, float64, float16).
[[nodiscard]] constexpr bool npy_is_float(npy_dtype dtype) noexcept {
  return detail::npy_known(dtype) && detail::npy_row(dtype).decoding != element_decoding::none;
}

namespace detail {

inline constexpr std::array<std::byte, 6> npy_magic{std::byte{0x93}, std::byte{'N'}, std::byte{'U'},
                                                    std::byte{'M'},  std::byte{'P'}, std::byte{'Y'}};
inline constexpr std::size_t npy_alignment = 64;           // numpy's ARRAY_ALIGN
inline constexpr std::size_t npy_growth_axis_digits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS
// numpy 2 accepts up to 64 dimensions; more is a corrupt header, not a real array.
inline constexpr std::size_t npy_max_dimensions = 64;

// True when a T view of a dtype's data is meaningful; uint16 also reads float16 as raw bits.
template <npy_element T>
[[nodiscard]] constexpr bool npy_dtype_holds(npy_dtype dtype) noexcept {
  if constexpr (std::same_as<T, std::uint16_t>) {
    return dtype == npy_dtype::uint16 || dtype == npy_dtype::float16;
  } else {
    return dtype == npy_dtype_of<T>;
  }
}

template <npy_element T>
[[nodiscard]] constexpr std::string_view npy_element_name() noexcept {
  if constexpr (std::same_as<T, float>)
    return "float";
  else if constexpr (std::same_as<T, double>)
    return "double";
  else if constexpr (std::same_as<T, std::uint8_t>)
    return "std::uint8_t";
  else if constexpr (std::same_as<T, std::uint16_t>)
    return "std::uint16_t";
  else if constexpr (std::same_as<T, std::int8_t>)
    return "std::int8_t";
  else
    return "std::int32_t";
}

/// printable_text (io/error.hpp) with npy's arguments: non-ASCII bytes escaped on request.
[[nodiscard]] inline std::string npy_printable(std::string_view text, bool escape_non_ascii,
                                               std::size_t max_chars = std::string_view::npos) {
  return printable_text(text, max_chars, escape_non_ascii ? escape::non_ascii : escape::control);
}

// Python's repr of a shape tuple, as in the header: "()", "(5,)", "(2, 3)".
[[nodiscard]] inline std::string npy_shape_repr(std::span<const std::size_t> shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ',';
  out += ')';
  return out;
}

// prod(shape) * item_size, or false when that does not fit in std::size_t. A zero extent makes
// the product zero whatever the other extents are, so it is checked before multiplying.
[[nodiscard]] inline bool npy_byte_count(std::span<const std::size_t> shape, std::size_t item_size,
                                         std::size_t& bytes) noexcept {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  for (const std::size_t extent : shape) {
    if (extent == 0) {
      bytes = 0;
      return true;
    }
  }
  std::size_t product = item_size;
  for (const std::size_t extent : shape) {
    if (product > max / extent) return false;
    product *= extent;
  }
  bytes = product;
  return true;
}

[[noreturn]] inline void throw_npy_error(std::string_view name, std::string_view message) {
  std::string text = npy_printable(name, false);
  text += ": ";
  text += message;
  throw io_error(text);
}

struct npy_preamble {
  std::size_t header_offset = 0;  // where the dict text starts
  std::size_t header_size = 0;    // dict text bytes, padding included
};

// Reads magic, version and header length from the first bytes of a file (12 suffice).
[[nodiscard]] inline npy_preamble parse_npy_preamble(std::span<const std::byte> bytes, std::string_view name) {
  const std::size_t magic_seen = bytes.size() < npy_magic.size() ? bytes.size() : npy_magic.size();
  for (std::size_t i = 0; i < magic_seen; ++i) {
    if (bytes[i] != npy_magic[i]) {
      std::string found;
      for (std::size_t j = 0; j < magic_seen; ++j) found += static_cast<char>(bytes[j]);
      throw_npy_error(name, "bad magic '" + npy_printable(found, true) +
                                "': not a .npy file; expected the first 6 bytes to be '\\x93NUMPY'");
    }
  }
  if (bytes.size() < 8) {
    throw_npy_error(name, "truncated preamble: the file has only " + std::to_string(bytes.size()) +
                              " bytes; expected at least 10 (magic, version, header length)");
  }
  const auto major = std::to_integer<unsigned>(bytes[6]);
  const auto minor = std::to_integer<unsigned>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    throw_npy_error(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                              "; expected 1.0, 2.0 or 3.0");
  }
  // Version 1.0 has a 16-bit header length; 2.0 widened it to 32 bits for huge structured
  // dtypes, and 3.0 only changed the header encoding to UTF-8.
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + length_bytes) {
    throw_npy_error(name, "truncated preamble: the file has only " + std::to_string(bytes.size()) +
                              " bytes; expected at least " + std::to_string(8 + length_bytes) + " for a version " +
                              std::to_string(major) + ".0 preamble");
  }
  std::size_t header_size = 0;
  for (std::size_t i = 0; i < length_bytes; ++i) {
    header_size |= std::to_integer<std::size_t>(bytes[8 + i]) << (8 * i);
  }
  return {8 + length_bytes, header_size};
}

// What the header dict says, before it is checked against what we support.
struct npy_header_fields {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::size_t> shape;
};

// Parses the header dict: the subset of Python literal syntax numpy writes (and older numpy and
// Python 2 wrote), in any key order, with optional trailing commas, either quote style and free
// whitespace. Exactly the keys 'descr', 'fortran_order' and 'shape' must appear, once each.
class npy_header_parser {
 public:
  npy_header_parser(std::string_view text, std::size_t file_offset, std::string_view name) noexcept
      : text_(text), file_offset_(file_offset), name_(name) {}

  [[nodiscard]] npy_header_fields parse() {
    npy_header_fields fields;
    bool seen_descr = false;
    bool seen_fortran_order = false;
    bool seen_shape = false;

    skip_space();
    expect('{', "'{' opening the header dict");
    skip_space();
    while (!consume('}')) {
      const std::size_t key_pos = pos_;
      const std::string_view key = parse_string("a quoted key or '}'");
      skip_space();
      expect(':', "':' after a key");
      skip_space();
      bool* seen = nullptr;
      if (key == "descr") {
        seen = &seen_descr;
        fields.descr = parse_descr();
      } else if (key == "fortran_order") {
        seen = &seen_fortran_order;
        fields.fortran_order = parse_bool();
      } else if (key == "shape") {
        seen = &seen_shape;
        fields.shape = parse_shape();
      } else {
        pos_ = key_pos;
        fail_semantic("unexpected key '" + npy_printable(key, true, 40) +
                      "' in the header; expected only 'descr', 'fortran_order' and 'shape'");
      }
      if (*seen) {
        pos_ = key_pos;
        fail_semantic("duplicate key '" + std::string(key) + "' in the header; expected each key once");
      }
      *seen = true;
      skip_space();
      if (consume(',')) {
        skip_space();
      } else if (consume('}')) {
        break;
      } else {
        fail("',' or '}' after a value");
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail("only spaces and '\\n' after the closing '}'");
    if (!seen_descr || !seen_fortran_order || !seen_shape) {
      std::string missing;
      for (const auto& [present, key] :
           {std::pair{seen_descr, "'descr'"}, std::pair{seen_fortran_order, "'fortran_order'"},
            std::pair{seen_shape, "'shape'"}}) {
        if (present) continue;
        if (!missing.empty()) missing += ", ";
        missing += key;
      }
      throw_npy_error(name_,
                      "the header lacks " + missing + "; expected the keys 'descr', 'fortran_order' and 'shape'");
    }
    return fields;
  }

 private:
  std::string_view text_;
  std::size_t file_offset_;
  std::string_view name_;
  std::size_t pos_ = 0;

  // Whitespace as Python's tokenizer sees it inside brackets (newlines included).
  void skip_space() noexcept {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\f' || text_[pos_] == '\v')) {
      ++pos_;
    }
  }

  [[nodiscard]] bool consume(char c) noexcept {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c, std::string_view expected) {
    if (!consume(c)) fail(expected);
  }

  [[nodiscard]] bool at_identifier_char() const noexcept {
    if (pos_ >= text_.size()) return false;
    const char c = text_[pos_];
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  // A syntax error: says where (as a file offset, for hexdump) and what came instead.
  [[noreturn]] void fail(std::string_view expected) const {
    std::string found = pos_ < text_.size() ? "'" + npy_printable(text_.substr(pos_), true, 12) + "'"
                                            : std::string("the end of the header");
    throw_npy_error(name_, "malformed header at file offset " + std::to_string(file_offset_ + pos_) + ": expected " +
                               std::string(expected) + ", found " + found);
  }

  // Well-formed text that we still reject: the message carries the whole explanation.
  [[noreturn]] void fail_semantic(const std::string& message) const {
    throw_npy_error(name_, "header at file offset " + std::to_string(file_offset_ + pos_) + ": " + message);
  }

  // Quoted text without escapes: no key or descr we accept needs them.
  [[nodiscard]] std::string_view parse_string(std::string_view expected) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) fail(expected);
    const char quote = text_[pos_];
    const std::size_t start = pos_ + 1;
    for (std::size_t i = start; i < text_.size(); ++i) {
      if (text_[i] == quote) {
        pos_ = i + 1;
        return text_.substr(start, i - start);
      }
      if (text_[i] == '\\' || text_[i] == '\n') {
        pos_ = i;
        fail(std::string("a closing ") + quote + " (escapes and line breaks are not supported)");
      }
    }
    pos_ = text_.size();
    fail(std::string("a closing ") + quote);
  }

  [[nodiscard]] std::string parse_descr() {
    // A list descr describes a structured (record) dtype, valid numpy but not supported here;
    // say so instead of reporting a syntax error.
    if (pos_ < text_.size() && text_[pos_] == '[') {
      fail_semantic("unsupported dtype: a structured (record) descr; expected a simple descr such as '<f4'");
    }
    return std::string(parse_string("a quoted descr such as '<f4' for 'descr'"));
  }

  [[nodiscard]] bool parse_bool() {
    bool value = false;
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      value = true;
    } else if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
    } else {
      fail("True or False for 'fortran_order'");
    }
    if (at_identifier_char()) fail("True or False for 'fortran_order'");
    return value;
  }

  [[nodiscard]] std::vector<std::size_t> parse_shape() {
    expect('(', "a tuple such as (2, 3) for 'shape'");
    std::vector<std::size_t> shape;
    skip_space();
    if (consume(')')) return shape;
    for (;;) {
      if (shape.size() == npy_max_dimensions) {
        fail_semantic("'shape' has more than " + std::to_string(npy_max_dimensions) + " dimensions; expected at most " +
                      std::to_string(npy_max_dimensions));
      }
      shape.push_back(parse_dimension());
      skip_space();
      if (consume(',')) {
        skip_space();
        if (consume(')')) break;
      } else if (shape.size() > 1 && consume(')')) {
        break;
      } else {
        // In Python "(5)" is the int 5, not a tuple, and numpy rejects it too.
        fail(shape.size() == 1 ? "',' after the first dimension ((n,) is a 1-D shape, (n) is not)"
                               : "',' or ')' in 'shape'");
      }
    }
    return shape;
  }

  [[nodiscard]] std::size_t parse_dimension() {
    if (pos_ < text_.size() && text_[pos_] == '-') {
      fail_semantic("negative dimension in 'shape'; expected non-negative integers");
    }
    constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
    const std::size_t start = pos_;
    std::size_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto digit = static_cast<std::size_t>(text_[pos_] - '0');
      if (value > (max - digit) / 10) {
        pos_ = start;
        fail_semantic("dimension in 'shape' does not fit in std::size_t; expected at most " + std::to_string(max));
      }
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) fail("a non-negative integer dimension in 'shape'");
    // Python 2 wrote long integers as "3L"; numpy still strips that suffix, so do we.
    (void)consume('L');
    if (at_identifier_char()) fail("',' or ')' after a dimension in 'shape'");
    return value;
  }
};

[[noreturn]] inline void throw_npy_unsupported_dtype(std::string_view descr, std::string_view name) {
  throw_npy_error(name, "unsupported dtype '" + npy_printable(descr, true, 40) +
                            "'; expected one of '<f2', '<f4', '<f8', '|u1', '<u2', '|i1' or '<i4'");
}

// Maps a descr onto a supported dtype (through npy_dtype_table) or explains why it is not
// supported.
[[nodiscard]] inline npy_dtype npy_dtype_from_descr(std::string_view descr, std::string_view name) {
  if (descr.size() != 3) throw_npy_unsupported_dtype(descr, name);
  const std::string_view type = descr.substr(1);
  const npy_dtype_info* info = nullptr;
  for (const auto& e : npy_dtype_table)
    if (e.descr.substr(1) == type) info = &e;
  if (info == nullptr) throw_npy_unsupported_dtype(descr, name);

  const char order = descr[0];
  // Byte order means nothing for one-byte types, so any order mark reads the same bytes.
  if (info->item_size == 1 && (order == '<' || order == '>' || order == '|' || order == '=')) return info->dtype;
  // numpy writes '<' on little-endian machines; '|' ("not applicable") is accepted for
  // hand-written files, and numpy itself reads it as native order, which is ours.
  if (order == '<' || order == '|') return info->dtype;
  if (order == '>') {
    throw_npy_error(name, "big-endian not supported (descr '" + std::string(descr) + "'); expected '<" +
                              std::string(type) + "' (convert with arr.astype(arr.dtype.newbyteorder('<')))");
  }
  throw_npy_unsupported_dtype(descr, name);
}

struct npy_layout {
  npy_dtype dtype{};
  std::vector<std::size_t> shape;
  std::size_t data_size = 0;  // bytes
};

// Parses and validates the header text; everything but the data itself.
[[nodiscard]] inline npy_layout parse_npy_header(std::string_view text, std::size_t file_offset,
                                                 std::string_view name) {
  npy_header_fields fields = npy_header_parser(text, file_offset, name).parse();
  npy_layout layout;
  layout.dtype = npy_dtype_from_descr(fields.descr, name);
  if (fields.fortran_order) {
    throw_npy_error(name,
                    "Fortran order not supported (fortran_order: True); expected C order "
                    "(save np.ascontiguousarray(arr))");
  }
  if (!npy_byte_count(fields.shape, npy_item_size(layout.dtype), layout.data_size)) {
    throw_npy_error(name, "shape " + npy_shape_repr(fields.shape) + " of '" + fields.descr +
                              "' overflows std::size_t; expected a byte size that fits in memory");
  }
  layout.shape = std::move(fields.shape);
  return layout;
}

// Data after the header must be exactly what the shape announces: less is a cut-off file, more
// means header and data disagree (or two files were concatenated).
inline void check_npy_data_size(const npy_layout& layout, std::size_t available, std::string_view name) {
  if (available == layout.data_size) return;
  const std::string expected = "; expected " + std::to_string(layout.data_size) + " for shape " +
                               npy_shape_repr(layout.shape) + " of '" + std::string(npy_descr(layout.dtype)) + "'";
  if (available < layout.data_size) {
    throw_npy_error(name, "truncated data: only " + std::to_string(available) + " bytes follow the header" + expected);
  }
  throw_npy_error(name, std::to_string(available - layout.data_size) + " unexpected trailing bytes: " +
                            std::to_string(available) + " bytes follow the header" + expected);
}

// Header bytes numpy's np.save would write, after checking that data_size matches the shape.
// Always version 1.0: with at most npy_max_dimensions extents of at most 20 digits the dict
// stays far below the 65535 bytes a 1.0 header can hold (numpy switches to 2.0 only beyond).
[[nodiscard]] inline std::string make_npy_header(npy_dtype dtype, std::span<const std::size_t> shape,
                                                 std::size_t data_size, std::string_view name) {
  const std::size_t item_size = npy_item_size(dtype);
  if (item_size == 0) {
    throw_npy_error(name, "invalid npy_dtype value " + std::to_string(static_cast<unsigned>(dtype)) +
                              "; expected an npy_dtype enumerator");
  }
  if (shape.size() > npy_max_dimensions) {
    throw_npy_error(name, "shape has " + std::to_string(shape.size()) + " dimensions; expected at most " +
                              std::to_string(npy_max_dimensions));
  }
  std::size_t expected = 0;
  if (!npy_byte_count(shape, item_size, expected)) {
    throw_npy_error(name, "shape " + npy_shape_repr(shape) + " of '" + std::string(npy_descr(dtype)) +
                              "' overflows std::size_t; expected a byte size that fits in memory");
  }
  if (data_size != expected) {
    throw_npy_error(name, "data has " + std::to_string(data_size) + " bytes but shape " + npy_shape_repr(shape) +
                              " of '" + std::string(npy_descr(dtype)) + "' needs " + std::to_string(expected) +
                              "; expected them to match");
  }

  std::string dict = "{'descr': '";
  dict += npy_descr(dtype);
  dict += "', 'fortran_order': False, 'shape': ";
  dict += npy_shape_repr(shape);
  dict += ", }";
  // numpy leaves room to rewrite the first extent in place when appending along it; copying
  // that keeps our files byte-identical to np.save's.
  if (!shape.empty()) dict.append(npy_growth_axis_digits - std::to_string(shape[0]).size(), ' ');

  // Pad with spaces, then '\n', so the data starts on a 64-byte boundary. numpy pads a whole
  // extra 64 bytes when the dict happens to end aligned; so do we, to stay byte-identical.
  constexpr std::size_t preamble = 10;
  const std::size_t padding = npy_alignment - (preamble + dict.size() + 1) % npy_alignment;
  const std::size_t header_size = dict.size() + padding + 1;

  std::string out;
  out.reserve(preamble + header_size);
  for (const std::byte b : npy_magic) out += static_cast<char>(b);
  out += '\x01';  // version 1.0
  out += '\x00';
  out += static_cast<char>(header_size & 0xFFu);  // uint16 little-endian
  out += static_cast<char>(header_size >> 8);
  out += dict;
  out.append(padding, ' ');
  out += '\n';
  return out;
}

// Reads exactly size bytes or reports how many came.
[[nodiscard]] inline std::size_t npy_read_some(std::ifstream& in, char* out, std::size_t size) {
  in.read(out, static_cast<std::streamsize>(size));
  return static_cast<std::size_t>(in.gcount());
}

}  // namespace detail

// A .npy array in memory: C order, little-endian, dtype as in the file.
struct npy_array {
  npy_dtype dtype = npy_dtype::float32;
  std::vector<std::size_t> shape;  // empty for a 0-d (scalar) array
  std::vector<std::byte> data;     // size() * npy_item_size(dtype) bytes

  // Element count: the product of the extents (1 for a scalar, 0 if any extent is 0).
  [[nodiscard]] std::size_t size() const {
    std::size_t count = 0;
    if (!detail::npy_byte_count(shape, 1, count)) {
      detail::throw_npy_error("npy_array::size", "shape " + detail::npy_shape_repr(shape) +
                                                     " overflows std::size_t; expected a valid shape");
    }
    return count;
  }

  // The elements as T. T must match dtype (std::uint16_t also views float16 as raw bits),
  // and data must hold exactly size() elements; otherwise io_error.
  template <npy_element T>
  [[nodiscard]] std::span<const T> as() const {
    if (!detail::npy_dtype_holds<T>(dtype)) {
      std::string expected =
          "'" + std::string(npy_descr(npy_dtype_of<T>)) + "' (" + std::string(npy_dtype_name(npy_dtype_of<T>)) + ")";
      if constexpr (std::same_as<T, std::uint16_t>) expected += " or '<f2' (float16)";
      detail::throw_npy_error("npy_array::as<" + std::string(detail::npy_element_name<T>()) + ">",
                              "the array holds '" + std::string(npy_descr(dtype)) + "' (" +
                                  std::string(npy_dtype_name(dtype)) + "); expected " + expected);
    }
    const std::size_t count = size();
    if (data.size() / sizeof(T) != count || data.size() % sizeof(T) != 0) {
      detail::throw_npy_error("npy_array::as<" + std::string(detail::npy_element_name<T>()) + ">",
                              "data has " + std::to_string(data.size()) + " bytes but shape " +
                                  detail::npy_shape_repr(shape) + " needs " + std::to_string(count * sizeof(T)) +
                                  "; expected them to match");
    }
    if (count == 0) return {};
    // C++23 would spell this std::start_lifetime_as_array. In C++20 it rests on: the storage
    // comes from operator new, which aligns it for any fundamental type and implicitly creates
    // objects in it ([intro.object]), and it is only ever written through memcpy, std::byte
    // or char, which may alias any type, so these T loads see those writes.
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    return {std::launder(reinterpret_cast<const T*>(data.data())), count};
  }
};

// Parses a whole .npy file held in memory. name is used in error messages.
[[nodiscard]] inline npy_array parse_npy(std::span<const std::byte> bytes, std::string_view name = "<memory>") {
  const detail::npy_preamble preamble = detail::parse_npy_preamble(bytes, name);
  const std::size_t after_preamble = bytes.size() - preamble.header_offset;
  if (preamble.header_size > after_preamble) {
    detail::throw_npy_error(name, "truncated header: only " + std::to_string(after_preamble) +
                                      " bytes follow the preamble; expected the " +
                                      std::to_string(preamble.header_size) + " header bytes it announces");
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + preamble.header_offset),
                              preamble.header_size);
  detail::npy_layout layout = detail::parse_npy_header(text, preamble.header_offset, name);
  const std::size_t data_offset = preamble.header_offset + preamble.header_size;
  detail::check_npy_data_size(layout, bytes.size() - data_offset, name);

  npy_array array;
  array.dtype = layout.dtype;
  array.shape = std::move(layout.shape);
  array.data.resize(layout.data_size);
  // memcpy (not a byte loop) so the element objects npy_array::as reads exist ([cstring.syn]).
  if (layout.data_size != 0) std::memcpy(array.data.data(), bytes.data() + data_offset, layout.data_size);
  return array;
}

// Reads a .npy file. Only a regular file is opened (a FIFO or device would never end); the
// header is validated against the file size before the data buffer is allocated, so a corrupt
// shape cannot trigger a huge allocation.
[[nodiscard]] inline npy_array read_npy(const std::filesystem::path& path) {
  const std::string name = path.string();
  auto [in, file_size] = open_input(path, "a .npy file", "; expected a readable .npy file",
                                    [&](const std::string& m) { detail::throw_npy_error(name, m); });

  std::array<char, 12> head{};
  const std::size_t head_size = detail::npy_read_some(in, head.data(), file_size < 12 ? file_size : 12);
  const detail::npy_preamble preamble =
      detail::parse_npy_preamble(std::as_bytes(std::span(head.data(), head_size)), name);
  const std::size_t after_preamble = file_size - preamble.header_offset;
  if (preamble.header_size > after_preamble) {
    detail::throw_npy_error(name, "truncated header: only " + std::to_string(after_preamble) +
                                      " bytes follow the preamble; expected the " +
                                      std::to_string(preamble.header_size) + " header bytes it announces");
  }

  in.clear();
  in.seekg(static_cast<std::streamoff>(preamble.header_offset), std::ios::beg);
  std::string text(preamble.header_size, '\0');
  if (detail::npy_read_some(in, text.data(), text.size()) != text.size()) {
    detail::throw_npy_error(name, "read error in the header" + detail::errno_text(errno) + "; expected " +
                                      std::to_string(text.size()) + " header bytes");
  }
  detail::npy_layout layout = detail::parse_npy_header(text, preamble.header_offset, name);
  const std::size_t data_offset = preamble.header_offset + preamble.header_size;
  detail::check_npy_data_size(layout, file_size - data_offset, name);

  npy_array array;
  array.dtype = layout.dtype;
  array.shape = std::move(layout.shape);
  array.data.resize(layout.data_size);
  const std::size_t got = detail::npy_read_some(in, reinterpret_cast<char*>(array.data.data()), layout.data_size);
  // The size was checked above, so a short read or extra bytes mean the file changed under us.
  if (got != layout.data_size) {
    detail::check_npy_data_size(layout, got, name);
  }
  if (in.peek() != std::ifstream::traits_type::eof()) {
    detail::throw_npy_error(name, "unexpected trailing bytes: the file grew while being read; expected " +
                                      std::to_string(data_offset + layout.data_size) + " bytes");
  }
  return array;
}

// The bytes of a .npy file, version 1.0, as np.save writes them.
// data must be exactly prod(shape) * npy_item_size(dtype) little-endian bytes in C order.
[[nodiscard]] inline std::vector<std::byte> serialize_npy(npy_dtype dtype, std::span<const std::size_t> shape,
                                                          std::span<const std::byte> data) {
  const std::string header = detail::make_npy_header(dtype, shape, data.size(), "serialize_npy");
  std::vector<std::byte> out(header.size() + data.size());
  std::memcpy(out.data(), header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + header.size(), data.data(), data.size());
  return out;
}

// Stages a .npy file, byte-identical to np.save for the same array, in an output batch
// (io/files.hpp): nothing appears at `path` until the batch is committed.
inline void write_npy(output_batch& batch, const std::filesystem::path& path, npy_dtype dtype,
                      std::span<const std::size_t> shape, std::span<const std::byte> data) {
  const std::string header = detail::make_npy_header(dtype, shape, data.size(), path.string());
  batch.stage(path, {std::as_bytes(std::span<const char>(header.data(), header.size())), data});
}

// Writes a .npy file, byte-identical to np.save for the same array, all-or-nothing: the bytes go
// to a temporary file next to `path` that replaces it only once completely written, so a failed
// write (full disk, unwritable folder) leaves whatever was at `path` as it was.
inline void write_npy(const std::filesystem::path& path, npy_dtype dtype, std::span<const std::size_t> shape,
                      std::span<const std::byte> data) {
  output_batch batch;
  write_npy(batch, path, dtype, shape, data);
  batch.commit();
}

inline void write_npy(const std::filesystem::path& path, const npy_array& array) {
  write_npy(path, array.dtype, array.shape, array.data);
}

// Typed convenience: the dtype follows the element type (npy_dtype_of). Values is any
// contiguous range: std::vector, std::array, std::span, C array.
template <std::ranges::contiguous_range Values>
requires std::ranges::sized_range<Values> && npy_element<std::ranges::range_value_t<Values>>
void write_npy(const std::filesystem::path& path, std::span<const std::size_t> shape, const Values& values) {
  using value_type = std::ranges::range_value_t<Values>;
  write_npy(path, npy_dtype_of<value_type>, shape,
            std::as_bytes(std::span(std::ranges::data(values), std::ranges::size(values))));
}
template <std::ranges::contiguous_range Values>
requires std::ranges::sized_range<Values> && npy_element<std::ranges::range_value_t<Values>>
void write_npy(output_batch& batch, const std::filesystem::path& path, std::span<const std::size_t> shape,
               const Values& values) {
  using value_type = std::ranges::range_value_t<Values>;
  write_npy(batch, path, npy_dtype_of<value_type>, shape,
            std::as_bytes(std::span(std::ranges::data(values), std::ranges::size(values))));
}

// Typed with an explicit dtype, which must match the element type as in npy_array::as; its use
// is std::uint16_t values written as npy_dtype::float16 bit patterns.
template <std::ranges::contiguous_range Values>
requires std::ranges::sized_range<Values> && npy_element<std::ranges::range_value_t<Values>>
void write_npy(const std::filesystem::path& path, npy_dtype dtype, std::span<const std::size_t> shape,
               const Values& values) {
  using value_type = std::ranges::range_value_t<Values>;
  if (!detail::npy_dtype_holds<value_type>(dtype)) {
    std::string expected = "'" + std::string(npy_descr(npy_dtype_of<value_type>)) + "'";
    if constexpr (std::same_as<value_type, std::uint16_t>) expected += " or '<f2'";
    detail::throw_npy_error(path.string(), "cannot write " + std::string(detail::npy_element_name<value_type>()) +
                                               " values as '" + std::string(npy_descr(dtype)) + "' (" +
                                               std::string(npy_dtype_name(dtype)) + "); expected dtype " + expected);
  }
  write_npy(path, dtype, shape, std::as_bytes(std::span(std::ranges::data(values), std::ranges::size(values))));
}

// The elements of a floating-point array as float: float32 as is, float16 exactly (through
// minifloat::float16), float64 rounded to nearest even (overflow to infinity). Integer dtypes
// throw io_error naming `name` (the file): they are not float inputs, and int32 would not even
// convert exactly. `overflows` (optional) receives the count of finite float64 elements that
// became +-Inf.
[[nodiscard]] inline std::vector<float> to_float32(const npy_array& array, std::string_view name = "to_float32",
                                                   std::size_t* overflows = nullptr) {
  if (!npy_is_float(array.dtype))
    detail::throw_npy_error(name, "the array holds '" + std::string(npy_descr(array.dtype)) + "' (" +
                                      std::string(npy_dtype_name(array.dtype)) +
                                      "); expected a floating-point dtype '<f2', '<f4' or '<f8'");
  const npy_dtype_info& info = detail::npy_row(array.dtype);
  const std::size_t count = array.size();
  if (array.data.size() / info.item_size != count || array.data.size() % info.item_size != 0)
    detail::throw_npy_error(name, "data has " + std::to_string(array.data.size()) + " bytes but shape " +
                                      detail::npy_shape_repr(array.shape) + " needs " +
                                      std::to_string(count * info.item_size) + "; expected them to match");
  return decode_elements(info.decoding, array.data, detail::npy_printable(name, false), overflows);
}

}  // namespace minifloat
