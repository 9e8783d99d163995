#pragma once
// The closed list of formats, for typed tests, tables and run-time dispatch by name (CLI).
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "formats/e8m0.hpp"
#include "formats/float16.hpp"
#include "formats/float8.hpp"
#include "formats/hifloat8.hpp"
#include "formats/mx_elements.hpp"

namespace minifloat {

using all_formats = std::tuple<hifloat8, float8_e4m3fn, float8_e5m2, float6_e3m2fn, float6_e2m3fn,
                               float4_e2m1fn, float8_e8m0fnu, bfloat16, float16>;

template <class T>
inline constexpr std::string_view format_name = T::spec::name;

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

/// Calls f(type_tag<T>{}) for every format, in all_formats order.
template <class F>
constexpr void for_each_format(F&& f) {
  [&]<class... T>(std::tuple<T...>*) { (f(type_tag<T>{}), ...); }(static_cast<all_formats*>(nullptr));
}

}  // namespace minifloat
