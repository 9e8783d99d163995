#pragma once
// A small command-line parser for the minifloat tool: positional arguments, "--name value"
// options and "--flag" switches, each declared by the command that uses it, so an unknown or
// misspelt option is an error rather than silently ignored.
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace minifloat::cli {

/// Bad command line: printed as one line, exit code 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class args {
 public:
  /// `options` take a value, `flags` do not. Names are given without the leading "--".
  args(const std::vector<std::string>& argv, std::set<std::string> options, std::set<std::string> flags = {})
      : options_(std::move(options)), flags_(std::move(flags)) {
    for (std::size_t i = 0; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a.size() > 2 && a.starts_with("--")) {
        std::string name = a.substr(2), value;
        bool has_inline_value = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
          value = name.substr(eq + 1), name = name.substr(0, eq), has_inline_value = true;
        }
        if (flags_.count(name)) {
          if (has_inline_value) throw usage_error("option --" + name + " takes no value");
          set_flags_.insert(name);
        } else if (options_.count(name)) {
          if (!has_inline_value) {
            if (i + 1 >= argv.size()) throw usage_error("option --" + name + " needs a value");
            value = argv[++i];
          }
          if (values_.count(name)) throw usage_error("option --" + name + " given twice");
          values_[name] = value;
        } else {
          throw usage_error("unknown option --" + name);
        }
      } else {
        positional_.push_back(a);
      }
    }
  }

  [[nodiscard]] const std::vector<std::string>& positional() const noexcept { return positional_; }
  [[nodiscard]] bool flag(const std::string& name) const { return set_flags_.count(name) != 0; }
  [[nodiscard]] std::optional<std::string> get(const std::string& name) const {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    return std::nullopt;
  }
  [[nodiscard]] std::string get_or(const std::string& name, std::string fallback) const {
    return get(name).value_or(std::move(fallback));
  }

  void expect_positional(std::size_t n, std::string_view usage) const {
    if (positional_.size() != n)
      throw usage_error("expected " + std::to_string(n) + " argument(s), got " + std::to_string(positional_.size()) +
                        "; usage: " + std::string(usage));
  }

 private:
  std::set<std::string> options_, flags_, set_flags_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

template <class Int>
Int parse_integer(std::string_view text, std::string_view what) {
  Int v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size())
    throw usage_error(std::string(what) + " must be an integer, got '" + std::string(text) + "'");
  return v;
}

inline double parse_number(std::string_view text, std::string_view what) {
  double v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size())
    throw usage_error(std::string(what) + " must be a number, got '" + std::string(text) + "'");
  return v;
}

}  // namespace minifloat::cli
