#pragma once
// Reader (and a small writer) for .safetensors files, std only, in the spirit of io/npy.hpp.
//
// File layout (huggingface/safetensors, safetensors/src/tensor.rs):
//   bytes 0..7   N, the header length: uint64 little-endian
//   bytes 8..    the header: N bytes of UTF-8 JSON, an object (writers pad it with spaces to a
//                multiple of 8 bytes):
//                  {"__metadata__": {"format": "pt"},              <- optional, string -> string
//                   "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
//   then         the data buffer; data_offsets [begin, end) are relative to its start
//
// Validated as the reference implementation does (SafeTensors::read_metadata, Metadata::validate):
// N <= 100,000,000 and 8 + N <= file size; the header is UTF-8 JSON; sorted by begin, the tensors
// tile the buffer exactly: the first begins at 0, each begins where the previous one ends (no
// gap, no overlap), end >= begin, end - begin = prod(shape) * itemsize without overflow, and the
// last end is the end of the file. In addition (stricter than the reference, which lets a later
// key silently win): a duplicate tensor name or key is an error, and so is a header that does not
// start with '{' (the reference has this check pending for 0.4). Unknown keys inside a tensor
// entry are skipped, as serde does. Every problem is a minifloat::io_error naming the file,
// what was wrong and what was expected.
//
// Dtypes: the 15 of the reference's Dtype enum are known (BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16
// BF16 I32 U32 F32 F64 I64 U64); any other string is an "unknown dtype" error. Converting to
// float32 is offered for F32, F16, BF16, F8_E4M3, F8_E5M2 (exact, through the library's own
// float16, bfloat16, float8_e4m3fn and float8_e5m2: io/elements.hpp) and F64 (rounded to nearest
// even). Files are read only when they are regular files and written all-or-nothing
// (io/files.hpp).
//
// Cost: one pass over the header text, O(log N) name comparisons per tensor for the duplicate
// checks, and an O(N) order check of the offsets (a sort, O(N log N), only when the header does
// not list the tensors in data order). safetensors_reader_work() counts this work so tests can
// bound it without timing anything.

#include "elements.hpp"
#include "error.hpp"
#include "files.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace minifloat {

static_assert(std::endian::native == std::endian::little,
              "minifloat/io/safetensors.hpp supports little-endian hosts only");

enum class safetensors_dtype : std::uint8_t {
  BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64
};

/// The one dtype table of the reader and writer, indexed by the enumerator: the name the file
/// spells, the element size and how the elements become float32.
struct safetensors_dtype_info {
  std::string_view name;
  std::size_t item_size;
  element_decoding decoding;
};

inline constexpr std::array<safetensors_dtype_info, 15> safetensors_dtype_table{{
    {"BOOL", 1, element_decoding::none},
    {"U8", 1, element_decoding::none},
    {"I8", 1, element_decoding::none},
    {"F8_E5M2", 1, element_decoding::float8_e5m2},
    {"F8_E4M3", 1, element_decoding::float8_e4m3fn},
    {"I16", 2, element_decoding::none},
    {"U16", 2, element_decoding::none},
    {"F16", 2, element_decoding::float16},
    {"BF16", 2, element_decoding::bfloat16},
    {"I32", 4, element_decoding::none},
    {"U32", 4, element_decoding::none},
    {"F32", 4, element_decoding::float32},
    {"F64", 8, element_decoding::float64},
    {"I64", 8, element_decoding::none},
    {"U64", 8, element_decoding::none},
}};

[[nodiscard]] constexpr std::string_view safetensors_dtype_name(safetensors_dtype d) noexcept {
  const auto i = static_cast<std::size_t>(d);
  return i < safetensors_dtype_table.size() ? safetensors_dtype_table[i].name : "invalid";
}
[[nodiscard]] constexpr std::size_t safetensors_item_size(safetensors_dtype d) noexcept {
  const auto i = static_cast<std::size_t>(d);
  return i < safetensors_dtype_table.size() ? safetensors_dtype_table[i].item_size : 0;
}
[[nodiscard]] constexpr std::optional<safetensors_dtype> parse_safetensors_dtype(std::string_view s) noexcept {
  for (std::size_t i = 0; i < safetensors_dtype_table.size(); ++i)
    if (safetensors_dtype_table[i].name == s) return static_cast<safetensors_dtype>(i);
  return std::nullopt;
}
/// How safetensors_to_float32 decodes the dtype (none: not floating point).
[[nodiscard]] constexpr element_decoding safetensors_decoding(safetensors_dtype d) noexcept {
  const auto i = static_cast<std::size_t>(d);
  return i < safetensors_dtype_table.size() ? safetensors_dtype_table[i].decoding : element_decoding::none;
}
/// True for the dtypes safetensors_to_float32 converts.
[[nodiscard]] constexpr bool safetensors_is_float(safetensors_dtype d) noexcept {
  return safetensors_decoding(d) != element_decoding::none;
}

struct safetensors_tensor_info {
  std::string name;
  safetensors_dtype dtype = safetensors_dtype::F32;
  std::vector<std::size_t> shape;  // empty: a scalar (one element)
  std::size_t begin = 0, end = 0;  // byte range in the data buffer

  /// prod(shape); validated not to overflow when the header was parsed.
  [[nodiscard]] std::size_t size() const noexcept {
    std::size_t n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
};

struct safetensors_header {
  std::size_t header_size = 0;  // N
  std::size_t data_offset = 0;  // 8 + N: where the data buffer starts in the file
  std::size_t data_size = 0;    // bytes of the data buffer
  std::vector<safetensors_tensor_info> tensors;                // in data order (by begin)
  std::vector<std::pair<std::string, std::string>> metadata;  // "__metadata__", in file order

  /// A linear scan: for one lookup. Code that visits every tensor iterates `tensors` (or keeps
  /// the index) rather than calling find per tensor, which would be quadratic in N.
  [[nodiscard]] const safetensors_tensor_info* find(std::string_view name) const noexcept {
    for (const auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
};

/// The whole file in memory: header plus the data buffer.
struct safetensors_file {
  safetensors_header header;
  std::vector<std::byte> data;

  /// The bytes of one tensor (info must come from this file's header).
  [[nodiscard]] std::span<const std::byte> bytes(const safetensors_tensor_info& t) const {
    return std::span<const std::byte>(data).subspan(t.begin, t.end - t.begin);
  }
};

inline constexpr std::size_t safetensors_max_header_size = 100'000'000;  // the reference's MAX_HEADER_SIZE

/// The reader's work so far in this process (all threads): a wall time on a shared machine proves
/// nothing, so tests bound these instead (one header parse per file however many of its tensors
/// are loaded; comparisons growing as N log N for N tensors, never as N^2).
struct safetensors_reader_counts {
  std::uint64_t headers_parsed = 0;     // parse_safetensors_header calls (every reader goes through it)
  std::uint64_t header_bytes = 0;       // the JSON bytes those calls were given
  std::uint64_t name_comparisons = 0;   // duplicate checks of tensor names and metadata keys
  std::uint64_t order_comparisons = 0;  // offset comparisons ordering the tensors for the layout check
};

namespace detail {

struct st_work_counters {
  std::atomic<std::uint64_t> headers_parsed{0}, header_bytes{0}, name_comparisons{0}, order_comparisons{0};
};
inline st_work_counters st_work;

/// A string order that counts its comparisons and looks up string_views without building a
/// std::string (std::set's transparent find/lower_bound).
struct st_counting_less {
  using is_transparent = void;
  std::uint64_t* count;
  bool operator()(std::string_view a, std::string_view b) const noexcept {
    ++*count;
    return a < b;
  }
};

/// printable_text (io/error.hpp) as safetensors messages quote names: every byte >= 0x7F
/// escaped, 60 bytes unless told.
[[nodiscard]] inline std::string st_printable(std::string_view text, std::size_t max_chars = 60) {
  return printable_text(text, max_chars, escape::non_ascii);
}

[[noreturn]] inline void throw_st_error(std::string_view file, const std::string& message) {
  throw io_error(st_printable(file, 200) + ": " + message);
}

/// Well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF); returns the offset of the first
/// bad byte, or npos.
[[nodiscard]] inline std::size_t st_invalid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0, min = 0;
    if ((b & 0xE0U) == 0xC0U) len = 2, cp = b & 0x1FU, min = 0x80;
    else if ((b & 0xF0U) == 0xE0U) len = 3, cp = b & 0x0FU, min = 0x800;
    else if ((b & 0xF8U) == 0xF0U) len = 4, cp = b & 0x07U, min = 0x10000;
    else return i;
    if (i + len > s.size()) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0U) != 0x80U) return i;
      cp = (cp << 6) | (c & 0x3FU);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

/// A strict JSON reader (RFC 8259) for the header's shape. It never recurses except in
/// skip_value, whose depth is capped, so hostile input cannot exhaust the stack.
class st_json_reader {
 public:
  st_json_reader(std::string_view text, std::string_view file) noexcept : text_(text), file_(file) {}

  st_json_reader(const st_json_reader&) = delete;
  st_json_reader& operator=(const st_json_reader&) = delete;
  /// Adds this parse's comparisons to the process-wide counters, also when it failed.
  ~st_json_reader() {
    st_work.name_comparisons.fetch_add(name_comparisons_, std::memory_order_relaxed);
    st_work.order_comparisons.fetch_add(order_comparisons_, std::memory_order_relaxed);
  }

  [[nodiscard]] safetensors_header parse(std::size_t data_size) {
    safetensors_header h;
    h.data_size = data_size;
    // The names seen so far, ordered: a duplicate is found in O(log N) comparisons, where a scan
    // of the earlier entries made the parse quadratic in the number of tensors.
    std::set<std::string, st_counting_less> names(st_counting_less{&name_comparisons_});
    skip_space();
    if (pos_ != 0 || !peek('{'))
      fail("the header does not start with '{'; expected a JSON object");
    ++pos_;
    skip_space();
    bool seen_metadata = false;
    if (!consume('}')) {
      while (true) {
        const std::size_t key_pos = pos_;
        std::string key = parse_string("a quoted tensor name");
        skip_space();
        expect(':', "':' after a key");
        skip_space();
        if (key == "__metadata__") {
          if (seen_metadata) fail_at(key_pos, "duplicate key \"__metadata__\"; expected it at most once");
          seen_metadata = true;
          parse_metadata(h.metadata);
        } else {
          const auto at = names.lower_bound(std::string_view(key));
          if (at != names.end() && *at == key)
            fail_at(key_pos, "duplicate tensor name \"" + st_printable(key) + "\"; expected unique names");
          names.emplace_hint(at, key);
          h.tensors.push_back(parse_tensor(std::move(key)));
        }
        skip_space();
        if (consume(',')) {
          skip_space();
          continue;
        }
        expect('}', "',' or '}' after a value");
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the closing '}'; expected only spaces (padding)");
    check_layout(h);
    return h;
  }

 private:
  std::string_view text_, file_;
  std::size_t pos_ = 0;
  std::uint64_t name_comparisons_ = 0, order_comparisons_ = 0;

  [[noreturn]] void fail_at(std::size_t at, const std::string& what) const {
    throw_st_error(file_, "bad header at byte " + std::to_string(8 + at) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  [[nodiscard]] bool peek(char c) const noexcept { return pos_ < text_.size() && text_[pos_] == c; }
  [[nodiscard]] bool consume(char c) noexcept {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c, std::string_view what) {
    if (!consume(c)) {
      const std::string found = pos_ < text_.size() ? "'" + st_printable(text_.substr(pos_, 1)) + "'" : "the end";
      fail("found " + found + "; expected " + std::string(what));
    }
  }
  void skip_space() noexcept {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  static void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0U | (cp >> 6));
      out += static_cast<char>(0x80U | (cp & 0x3FU));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0U | (cp >> 12));
      out += static_cast<char>(0x80U | ((cp >> 6) & 0x3FU));
      out += static_cast<char>(0x80U | (cp & 0x3FU));
    } else {
      out += static_cast<char>(0xF0U | (cp >> 18));
      out += static_cast<char>(0x80U | ((cp >> 12) & 0x3FU));
      out += static_cast<char>(0x80U | ((cp >> 6) & 0x3FU));
      out += static_cast<char>(0x80U | (cp & 0x3FU));
    }
  }

  std::uint32_t hex4() {
    if (text_.size() - pos_ < 4) fail("a truncated \\u escape; expected 4 hex digits");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else fail("a bad \\u escape; expected 4 hex digits");
    }
    return v;
  }

  std::string parse_string(std::string_view what) {
    if (!consume('"')) expect('"', what);
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("an unterminated string; expected a closing '\"'");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string; expected it escaped");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("an unterminated escape; expected a character after '\\'");
      switch (text_[pos_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("a lone low surrogate in a \\u escape; expected a valid pair");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!(consume('\\') && consume('u'))) fail("a lone high surrogate in a \\u escape; expected a pair");
            const std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("a high surrogate not followed by a low one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: fail("an unknown escape; expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u");
      }
    }
  }

  /// A JSON number that must be a non-negative integer fitting in size_t (what serde's usize accepts).
  std::size_t parse_size(std::string_view what) {
    const std::size_t start = pos_;
    if (peek('-')) fail(std::string(what) + " is negative; expected a non-negative integer");
    std::size_t v = 0;
    bool any = false;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto d = static_cast<std::size_t>(text_[pos_] - '0');
      if (any && v == 0) fail_at(start, std::string(what) + " has a leading zero; expected a JSON integer");
      if (v > (std::numeric_limits<std::size_t>::max() - d) / 10)
        fail_at(start, std::string(what) + " overflows 64 bits; expected a valid size");
      v = v * 10 + d;
      any = true;
      ++pos_;
    }
    if (!any) fail("found no digits for " + std::string(what) + "; expected a non-negative integer");
    if (peek('.') || peek('e') || peek('E'))
      fail_at(start, std::string(what) + " is not an integer; expected a non-negative integer");
    return v;
  }

  void parse_metadata(std::vector<std::pair<std::string, std::string>>& out) {
    expect('{', "'{' opening \"__metadata__\" (an object of strings)");
    skip_space();
    if (consume('}')) return;
    std::set<std::string, st_counting_less> keys(st_counting_less{&name_comparisons_});
    while (true) {
      const std::size_t key_pos = pos_;
      std::string key = parse_string("a quoted metadata key");
      const auto at = keys.lower_bound(std::string_view(key));
      if (at != keys.end() && *at == key) fail_at(key_pos, "duplicate metadata key \"" + st_printable(key) + "\"");
      keys.emplace_hint(at, key);
      skip_space();
      expect(':', "':' after a metadata key");
      skip_space();
      if (!peek('"')) fail("a metadata value that is not a string; expected \"__metadata__\" to map strings to strings");
      out.emplace_back(std::move(key), parse_string("a quoted metadata value"));
      skip_space();
      if (consume(',')) {
        skip_space();
        continue;
      }
      expect('}', "',' or '}' in \"__metadata__\"");
      return;
    }
  }

  /// Skips any JSON value (unknown keys); nesting is capped at 64 levels.
  void skip_value(int depth) {
    if (depth > 64) fail("nesting deeper than 64 levels; expected a flat header");
    skip_space();
    if (peek('"')) {
      (void)parse_string("a string");
    } else if (consume('{') || consume('[')) {
      const char close = text_[pos_ - 1] == '{' ? '}' : ']';
      skip_space();
      if (consume(close)) return;
      while (true) {
        if (close == '}') {
          (void)parse_string("a quoted key");
          skip_space();
          expect(':', "':' after a key");
        }
        skip_value(depth + 1);
        skip_space();
        if (consume(',')) continue;
        expect(close, close == '}' ? "',' or '}'" : "',' or ']'");
        return;
      }
    } else if (text_.substr(pos_, 4) == "true" || text_.substr(pos_, 4) == "null") {
      pos_ += 4;
    } else if (text_.substr(pos_, 5) == "false") {
      pos_ += 5;
    } else {
      // A number: -? int frac? exp?
      const std::size_t start = pos_;
      (void)consume('-');
      auto digits = [&] {
        const std::size_t d0 = pos_;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
        return pos_ > d0;
      };
      if (!digits()) fail_at(start, "an invalid value; expected a JSON value");
      if (consume('.') && !digits()) fail("a number with no digits after '.'");
      if (consume('e') || consume('E')) {
        if (!consume('+')) (void)consume('-');
        if (!digits()) fail("a number with no exponent digits");
      }
    }
  }

  safetensors_tensor_info parse_tensor(std::string name) {
    safetensors_tensor_info t;
    t.name = std::move(name);
    const std::string quoted = "tensor \"" + st_printable(t.name) + "\"";
    expect('{', "'{' opening the entry of " + quoted);
    skip_space();
    bool seen_dtype = false, seen_shape = false, seen_offsets = false;
    if (!consume('}')) {
      while (true) {
        const std::size_t key_pos = pos_;
        const std::string key = parse_string("a quoted key");
        skip_space();
        expect(':', "':' after a key");
        skip_space();
        auto once = [&](bool& seen) {
          if (seen) fail_at(key_pos, "duplicate key \"" + key + "\" in " + quoted);
          seen = true;
        };
        if (key == "dtype") {
          once(seen_dtype);
          const std::size_t at = pos_;
          const std::string d = parse_string("a quoted dtype");
          const auto dt = parse_safetensors_dtype(d);
          if (!dt)
            fail_at(at, "unknown dtype \"" + st_printable(d) + "\" for " + quoted +
                            "; expected one of BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, "
                            "F64, I64, U64");
          t.dtype = *dt;
        } else if (key == "shape") {
          once(seen_shape);
          expect('[', "'[' opening the shape of " + quoted);
          skip_space();
          if (!consume(']')) {
            while (true) {
              if (t.shape.size() >= 1024) fail("a shape with more than 1024 dimensions in " + quoted);
              t.shape.push_back(parse_size("a shape extent"));
              skip_space();
              if (consume(',')) {
                skip_space();
                continue;
              }
              expect(']', "',' or ']' in the shape");
              break;
            }
          }
        } else if (key == "data_offsets") {
          once(seen_offsets);
          expect('[', "'[' opening data_offsets [begin, end] of " + quoted);
          skip_space();
          t.begin = parse_size("data_offsets begin");
          skip_space();
          expect(',', "',' between the two data_offsets");
          skip_space();
          t.end = parse_size("data_offsets end");
          skip_space();
          expect(']', "']' after the two data_offsets");
        } else {
          skip_value(0);
        }
        skip_space();
        if (consume(',')) {
          skip_space();
          continue;
        }
        expect('}', "',' or '}' in the entry of " + quoted);
        break;
      }
    }
    if (!seen_dtype || !seen_shape || !seen_offsets)
      throw_st_error(file_, "bad header: " + quoted + " lacks " +
                                std::string(!seen_dtype ? "\"dtype\"" : !seen_shape ? "\"shape\"" : "\"data_offsets\"") +
                                "; expected \"dtype\", \"shape\" and \"data_offsets\"");
    return t;
  }

  void check_layout(safetensors_header& h) {
    const auto by_offsets = [this](const safetensors_tensor_info& a, const safetensors_tensor_info& b) {
      ++order_comparisons_;
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    };
    // Writers list the tensors in data order more often than not; then this is one linear pass
    // (a stable sort of sorted input would leave it as it is anyway).
    if (!std::is_sorted(h.tensors.begin(), h.tensors.end(), by_offsets))
      std::stable_sort(h.tensors.begin(), h.tensors.end(), by_offsets);
    std::size_t expected_begin = 0;
    for (const auto& t : h.tensors) {
      // Built only for a message, not for every valid tensor.
      const auto quoted = [&t] { return "tensor \"" + st_printable(t.name) + "\""; };
      const auto range = [&t] { return "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ")"; };
      if (t.end < t.begin)
        throw_st_error(file_, quoted() + " has data_offsets " + range() + " with end before begin; expected begin <= end");
      if (t.begin < expected_begin)
        throw_st_error(file_, quoted() + " data_offsets " + range() + " overlap the previous tensor, which ends at " +
                                  std::to_string(expected_begin) + "; expected tensors to tile the data buffer");
      if (t.begin > expected_begin)
        throw_st_error(file_, quoted() + " data_offsets " + range() + " leave a gap after byte " +
                                  std::to_string(expected_begin) + "; expected tensors to tile the data buffer");
      std::size_t n = safetensors_item_size(t.dtype);
      for (auto e : t.shape) {
        if (e != 0 && n > std::numeric_limits<std::size_t>::max() / e)
          throw_st_error(file_, quoted() + " shape overflows 64 bits; expected a valid shape");
        n *= e;
      }
      if (t.end - t.begin != n)
        throw_st_error(file_, quoted() + " data_offsets " + range() + " hold " + std::to_string(t.end - t.begin) +
                                  " bytes, but its shape and dtype " + std::string(safetensors_dtype_name(t.dtype)) +
                                  " need " + std::to_string(n) + "; expected them to match");
      if (t.end > h.data_size)
        throw_st_error(file_, quoted() + " data_offsets " + range() + " run past the data buffer of " +
                                  std::to_string(h.data_size) + " bytes; expected offsets inside the file (truncated?)");
      expected_begin = t.end;
    }
    if (expected_begin != h.data_size)
      throw_st_error(file_, "the tensors cover " + std::to_string(expected_begin) + " bytes of a " +
                                std::to_string(h.data_size) +
                                "-byte data buffer; expected them to end exactly at the end of the file");
  }
};

/// N from the first 8 bytes, checked against the file size.
[[nodiscard]] inline std::size_t st_header_size(std::span<const std::byte> first8, std::size_t file_size,
                                                std::string_view file) {
  if (file_size < 8)
    throw_st_error(file, "the file has only " + std::to_string(file_size) +
                             " bytes; expected at least 8 (the header length)");
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(std::to_integer<unsigned>(first8[i])) << (8 * i);
  if (n > safetensors_max_header_size)
    throw_st_error(file, "header length " + std::to_string(n) + " exceeds 100000000 bytes; expected a safetensors file");
  if (n > file_size - 8)
    throw_st_error(file, "header length " + std::to_string(n) + " runs past the end of the " +
                             std::to_string(file_size) + "-byte file; expected a complete header (truncated file?)");
  return static_cast<std::size_t>(n);
}

}  // namespace detail

/// Parses the N header bytes (the JSON text) of a file whose data buffer has data_size bytes.
[[nodiscard]] inline safetensors_header parse_safetensors_header(std::string_view json, std::size_t data_size,
                                                                 std::string_view file = "<memory>") {
  detail::st_work.headers_parsed.fetch_add(1, std::memory_order_relaxed);
  detail::st_work.header_bytes.fetch_add(json.size(), std::memory_order_relaxed);
  if (const auto bad = detail::st_invalid_utf8(json); bad != std::string_view::npos)
    detail::throw_st_error(file, "bad header at byte " + std::to_string(8 + bad) + ": invalid UTF-8; expected UTF-8 JSON");
  safetensors_header h = detail::st_json_reader(json, file).parse(data_size);
  h.header_size = json.size();
  h.data_offset = 8 + json.size();
  return h;
}

/// The counters of the reader's work so far (see safetensors_reader_counts).
[[nodiscard]] inline safetensors_reader_counts safetensors_reader_work() noexcept {
  return {detail::st_work.headers_parsed.load(std::memory_order_relaxed),
          detail::st_work.header_bytes.load(std::memory_order_relaxed),
          detail::st_work.name_comparisons.load(std::memory_order_relaxed),
          detail::st_work.order_comparisons.load(std::memory_order_relaxed)};
}

/// Parses a whole .safetensors image held in memory (copies the data buffer).
[[nodiscard]] inline safetensors_file parse_safetensors(std::span<const std::byte> bytes,
                                                        std::string_view file = "<memory>") {
  const std::size_t n = detail::st_header_size(bytes.first(std::min<std::size_t>(bytes.size(), 8)), bytes.size(), file);
  const std::string_view json(reinterpret_cast<const char*>(bytes.data() + 8), n);
  safetensors_file f;
  f.header = parse_safetensors_header(json, bytes.size() - 8 - n, file);
  f.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(8 + n), bytes.end());
  return f;
}

/// Reads and validates the header of a file on disk (the data is not read).
[[nodiscard]] inline safetensors_header read_safetensors_header(const std::filesystem::path& path) {
  const std::string file = path.string();
  auto [in, file_size] = open_input(path, "a .safetensors file", "; expected a readable .safetensors file",
                                    [&](const std::string& m) { detail::throw_st_error(file, m); });
  std::array<std::byte, 8> head{};
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(std::min<std::size_t>(8, file_size)));
  const std::size_t n = detail::st_header_size(head, file_size, file);
  std::string json(n, '\0');
  in.read(json.data(), static_cast<std::streamsize>(n));
  if (static_cast<std::size_t>(in.gcount()) != n)
    detail::throw_st_error(file, "read error in the header" + detail::errno_text(errno));
  return parse_safetensors_header(json, file_size - 8 - n, file);
}

/// Reads the bytes of one tensor of a file whose header is h (from read_safetensors_header).
[[nodiscard]] inline std::vector<std::byte> read_safetensors_bytes(const std::filesystem::path& path,
                                                                   const safetensors_header& h,
                                                                   const safetensors_tensor_info& t) {
  const std::string file = path.string();
  if (t.end < t.begin || t.end > h.data_size)
    detail::throw_st_error(file, "tensor \"" + detail::st_printable(t.name) + "\" is not inside the data buffer");
  auto [in, end] = open_input(path, "a .safetensors file", "",
                              [&](const std::string& m) { detail::throw_st_error(file, m); });
  // The header must describe this file as it is now, or the offsets mean nothing.
  if (static_cast<std::uintmax_t>(end) != h.data_offset + h.data_size)
    detail::throw_st_error(file, "the file has " + std::to_string(end) + " bytes but its header describes " +
                                     std::to_string(h.data_offset + h.data_size) +
                                     "; expected the header read from this file (file changed?)");
  std::vector<std::byte> out(t.end - t.begin);
  in.seekg(static_cast<std::streamoff>(h.data_offset + t.begin), std::ios::beg);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  if (static_cast<std::size_t>(in.gcount()) != out.size())
    detail::throw_st_error(file, "tensor \"" + detail::st_printable(t.name) + "\": only " + std::to_string(in.gcount()) +
                                     " of " + std::to_string(out.size()) + " bytes could be read (file changed?)");
  return out;
}

/// Reads a whole file into memory and parses it.
[[nodiscard]] inline safetensors_file read_safetensors(const std::filesystem::path& path) {
  const std::string file = path.string();
  auto [in, size] = open_input(path, "a .safetensors file", "; expected a readable .safetensors file",
                               [&](const std::string& m) { detail::throw_st_error(file, m); });
  (void)size;
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_safetensors(std::as_bytes(std::span<const char>(chars)), file);
}

/// The elements of a floating-point tensor as float: F32 as is, F16, BF16, F8_E4M3 and F8_E5M2
/// exactly (the library's own types), F64 rounded to nearest even (overflow to infinity). Other
/// dtypes are an io_error.
[[nodiscard]] inline std::vector<float> safetensors_to_float32(safetensors_dtype dtype, std::span<const std::byte> bytes,
                                                               std::string_view what = "<tensor>",
                                                               std::size_t* overflows = nullptr) {
  if (!safetensors_is_float(dtype))
    detail::throw_st_error(what, "dtype " + std::string(safetensors_dtype_name(dtype)) +
                                     " is not a floating-point type; expected F32, F16, BF16, F8_E4M3, F8_E5M2 or F64");
  if (bytes.size() % safetensors_item_size(dtype) != 0)
    detail::throw_st_error(what, std::to_string(bytes.size()) + " bytes are not a whole number of " +
                                     std::string(safetensors_dtype_name(dtype)) + " elements");
  return decode_elements(safetensors_decoding(dtype), bytes, detail::st_printable(what, 200), overflows);
}

/// One tensor to write: name, dtype, shape and exactly prod(shape) * itemsize little-endian bytes.
struct safetensors_entry {
  std::string name;
  safetensors_dtype dtype = safetensors_dtype::F32;
  std::vector<std::size_t> shape;
  std::vector<std::byte> data;
};

namespace detail {
inline void st_json_string(std::string& out, std::string_view s) {
  constexpr std::string_view hex = "0123456789abcdef";
  out += '"';
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (b < 0x20) {
      out += "\\u00";
      out += hex[b >> 4];
      out += hex[b & 0xFU];
    } else {
      out += c;
    }
  }
  out += '"';
}
}  // namespace detail

/// The bytes of a .safetensors file laid out as the reference writer does: tensors ordered by
/// descending item size, then name; header padded with spaces to a multiple of 8.
[[nodiscard]] inline std::vector<std::byte> serialize_safetensors(
    std::vector<safetensors_entry> tensors, const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  std::stable_sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
    const auto sa = safetensors_item_size(a.dtype), sb = safetensors_item_size(b.dtype);
    return sa != sb ? sa > sb : a.name < b.name;
  });
  std::string json = "{";
  bool first = true;
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    for (std::size_t i = 0; i < metadata.size(); ++i) {
      if (i) json += ',';
      detail::st_json_string(json, metadata[i].first);
      json += ':';
      detail::st_json_string(json, metadata[i].second);
    }
    json += '}';
    first = false;
  }
  std::size_t offset = 0;
  for (const auto& t : tensors) {
    std::size_t n = safetensors_item_size(t.dtype);
    for (auto e : t.shape) n *= e;
    if (n != t.data.size())
      detail::throw_st_error("serialize_safetensors", "tensor \"" + detail::st_printable(t.name) + "\" has " +
                                                          std::to_string(t.data.size()) + " bytes; its shape needs " +
                                                          std::to_string(n));
    if (!first) json += ',';
    first = false;
    detail::st_json_string(json, t.name);
    json += ":{\"dtype\":\"" + std::string(safetensors_dtype_name(t.dtype)) + "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i) json += ',';
      json += std::to_string(t.shape[i]);
    }
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + n) + "]}";
    offset += n;
  }
  json += '}';
  json.append((8 - json.size() % 8) % 8, ' ');
  std::vector<std::byte> out(8 + json.size() + offset);
  const std::uint64_t len = json.size();
  for (std::size_t i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((len >> (8 * i)) & 0xFFU);
  std::memcpy(out.data() + 8, json.data(), json.size());
  std::size_t at = 8 + json.size();
  for (const auto& t : tensors) {
    if (!t.data.empty()) std::memcpy(out.data() + at, t.data.data(), t.data.size());
    at += t.data.size();
  }
  return out;
}

/// Stages serialize_safetensors(...) in an output batch (io/files.hpp).
inline void write_safetensors(output_batch& batch, const std::filesystem::path& path,
                              std::vector<safetensors_entry> tensors,
                              const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  const auto bytes = serialize_safetensors(std::move(tensors), metadata);
  batch.stage(path, {std::span<const std::byte>(bytes)});
}

/// Writes serialize_safetensors(...) to a file, all-or-nothing: a failed write leaves whatever
/// was at `path` as it was.
inline void write_safetensors(const std::filesystem::path& path, std::vector<safetensors_entry> tensors,
                              const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  output_batch batch;
  write_safetensors(batch, path, std::move(tensors), metadata);
  batch.commit();
}

}  // namespace minifloat
