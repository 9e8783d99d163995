#pragma once
// The closed list of formats, for typed tests, tables and run-time dispatch by name (CLI), and
// the format traits that are not part of a spec: which formats are OCP MX element types.
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "e8m0.hpp"
#include "float16.hpp"
#include "float8.hpp"
#include "float8_variants.hpp"
#include "hifloat8.hpp"
#include "mx_elements.hpp"

namespace minifloat {

// New formats are appended: a format_id is its index here, and ids are written into files.
using all_formats = std::tuple<hifloat8, float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn,
                               float4_e2m1fn, float8_e8m0fnu, bfloat16, float16, float8_e4m3fnuz,
                               float8_e5m2fnuz, float8_e4m3b11fnuz, float8_e3m4, float8_e4m3>;

template <class T>
inline constexpr std::string_view format_name = T::spec::name;

/// Whether T is an element format of OCP MX v1.0 (MXFP8 E4M3/E5M2, MXFP6 E3M2/E2M3, MXFP4 E2M1;
/// MXINT8 is not provided): the one definition of the MX element set.
template <class T>
inline constexpr bool is_mx_element_v = std::is_same_v<T, float8_e4m3fn> || std::is_same_v<T, float8_e5m2> ||
                                        std::is_same_v<T, float6_e3m2fn> || std::is_same_v<T, float6_e2m3fn> ||
                                        std::is_same_v<T, float4_e2m1fn>;

/// The element types MX blocks, tensors and kernels accept.
template <class T>
concept mx_element = is_mx_element_v<T>;

template <class T>
struct type_tag {
  using type = T;
};

/// Calls f(type_tag<T>{}) for the format named `name`; returns false if no format has that name.
template <class F>
constexpr bool visit_format(std::string_view name, F&& f) {
  return [&]<class... T>(std::tuple<T...>*) {
    return ((format_name<T> == name ? (f(type_tag<T>{}), true) : false) || ...);
  }(static_cast<all_formats*>(nullptr));
}

/// Run-time name of a format, in all_formats order (scheme descriptors, CLI, file headers).
// The enumerators deliberately share the type names (format_id::hifloat8 names hifloat8); GCC's
// -Wshadow flags that although scoped enumerators cannot shadow anything.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
enum class format_id : std::uint8_t {
  hifloat8, float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn, float4_e2m1fn, float8_e8m0fnu,
  bfloat16, float16, float8_e4m3fnuz, float8_e5m2fnuz, float8_e4m3b11fnuz, float8_e3m4, float8_e4m3
};
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

template <class T>
inline constexpr format_id format_id_of = [] {
  std::uint8_t i = 0, found = 0;
  [&]<class... U>(std::tuple<U...>*) { ((std::is_same_v<T, U> ? (found = i, ++i) : ++i), ...); }(
      static_cast<all_formats*>(nullptr));
  return static_cast<format_id>(found);
}();

/// Calls f(type_tag<T>{}) for the format with that id.
template <class F>
constexpr decltype(auto) visit_format(format_id id, F&& f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    using R = decltype(f(type_tag<std::tuple_element_t<0, all_formats>>{}));
    if constexpr (std::is_void_v<R>) {
      (void)((static_cast<std::size_t>(id) == I ? (f(type_tag<std::tuple_element_t<I, all_formats>>{}), true) : false) || ...);
    } else {
      R r{};
      (void)((static_cast<std::size_t>(id) == I ? (r = f(type_tag<std::tuple_element_t<I, all_formats>>{}), true) : false) || ...);
      return r;
    }
  }(std::make_index_sequence<std::tuple_size_v<all_formats>>{});
}

constexpr std::string_view to_string(format_id id) noexcept {
  std::string_view n;
  visit_format(id, [&](auto t) { n = format_name<typename decltype(t)::type>; });
  return n;
}

constexpr std::optional<format_id> parse_format(std::string_view name) noexcept {
  std::optional<format_id> r;
  visit_format(name, [&](auto t) { r = format_id_of<typename decltype(t)::type>; });
  return r;
}

/// is_mx_element_v by run-time id.
constexpr bool is_mx_element(format_id id) noexcept {
  return visit_format(id, [](auto t) { return is_mx_element_v<typename decltype(t)::type>; });
}

/// Bits of one code (4 for FP4, 16 for bfloat16) by run-time id.
constexpr int format_bits(format_id id) noexcept {
  return visit_format(id, [](auto t) { return decltype(t)::type::spec::bits; });
}

/// Calls f(type_tag<T>{}) for every format, in all_formats order.
template <class F>
constexpr void for_each_format(F&& f) {
  [&]<class... T>(std::tuple<T...>*) { (f(type_tag<T>{}), ...); }(static_cast<all_formats*>(nullptr));
}

}  // namespace minifloat
