#pragma once
// Enum names from one table per enum: to_string, parsing, validity and the list of names for
// error messages all read the same `enum_names<E>::table`, so a new enumerator is one line.
//
//   enum class rounding : std::uint8_t { nearest, ... };
//   template <> struct enum_names<rounding> {
//     static constexpr std::array table{name_of(rounding::nearest, "nearest"), ...};
//   };
//   to_string(rounding::nearest) == "nearest"; parse_enum<rounding>("nearest") == rounding::nearest;
//   is_valid(static_cast<rounding>(9)) == false; enum_list<rounding>() == "nearest, ...".
// An enum of another namespace gets to_string by ADL with `using minifloat::to_string;` there.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace minifloat {

template <class E>
struct enum_names;  // specialised per enum: static constexpr std::array<enum_name<E>, N> table

template <class E>
struct enum_name {
  E value;
  std::string_view name;
};

template <class E>
constexpr enum_name<E> name_of(E value, std::string_view name) noexcept {
  return {value, name};
}

template <class E>
concept named_enum = std::is_enum_v<E> && requires { enum_names<E>::table.size(); };

template <named_enum E>
[[nodiscard]] constexpr std::string_view to_string(E e) noexcept {
  for (const auto& n : enum_names<E>::table)
    if (n.value == e) return n.name;
  return "?";
}

template <named_enum E>
[[nodiscard]] constexpr std::optional<E> parse_enum(std::string_view s) noexcept {
  for (const auto& n : enum_names<E>::table)
    if (n.name == s) return n.value;
  return std::nullopt;
}

/// Whether e is one of the named enumerators (false for values cast from out-of-range integers).
template <named_enum E>
[[nodiscard]] constexpr bool is_valid(E e) noexcept {
  for (const auto& n : enum_names<E>::table)
    if (n.value == e) return true;
  return false;
}

/// "a, b or c": every name, for messages that say what was expected.
template <named_enum E>
[[nodiscard]] std::string enum_list(std::string_view last_sep = " or ") {
  std::string out;
  const auto& t = enum_names<E>::table;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i != 0) out += i + 1 == t.size() ? std::string(last_sep) : std::string(", ");
    out += t[i].name;
  }
  return out;
}

}  // namespace minifloat
