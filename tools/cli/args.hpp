#pragma once
// The command line of one `minifloat` subcommand, parsed by CLI11: options and flags declared by
// the command with their help text, typed validators on the numeric options, `--help`/`-h`
// answered with the generated help. CLI11's own errors are turned into the tool's one-line
// messages (usage_error, exit 2): an unknown or misspelt option, a missing value, an option given
// twice, a value given to a flag. Nothing here touches the file system (the fuzz target
// fuzz/cli_args.cpp runs every parse_X through it).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace minifloat::cli {

/// Bad command line: printed as one line, exit code 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `--help` or `-h` was given: `text` is printed on stdout and the command exits 0 without doing
/// anything else. Not a usage_error: the command line is fine.
struct help_request {
  std::string text;
};

template <class Int>
Int parse_integer(std::string_view text, std::string_view what) {
  Int v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size())
    throw usage_error(std::string(what) + " must be an integer from " + std::to_string(std::numeric_limits<Int>::min()) +
                      " to " + std::to_string(std::numeric_limits<Int>::max()) + ", got '" + std::string(text) + "'");
  return v;
}

inline double parse_number(std::string_view text, std::string_view what) {
  double v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size())
    throw usage_error(std::string(what) + " must be a number, got '" + std::string(text) + "'");
  return v;
}

/// An integer option's value as Int, in [lo, hi]; usage_error naming the option and the value.
template <class Int>
Int parse_integer_in(std::string_view text, std::string_view what, Int lo, Int hi) {
  Int v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size() || v < lo || v > hi)
    throw usage_error(std::string(what) + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                      ", got '" + std::string(text) + "'");
  return v;
}

/// A number option that becomes a float32: finite, and neither past float32's range nor a
/// non-zero value that would round to 0 there (the option would then silently mean something else).
inline double parse_float32_number(std::string_view text, std::string_view what) {
  const double v = parse_number(text, what);
  const float f = static_cast<float>(v);
  if (!std::isfinite(v) || !std::isfinite(f) || (v != 0 && f == 0))
    throw usage_error(std::string(what) + " " + std::string(text) +
                      " is not a finite float32 value; expected a finite number of magnitude 1.4e-45 to 3.4e+38 (or 0)");
  return v;
}

/// CLI11 validators that throw the tool's own messages (they run inside CLI::App::parse).
template <class Int>
CLI::Validator integer_in(std::string what, Int lo = std::numeric_limits<Int>::min(),
                          Int hi = std::numeric_limits<Int>::max()) {
  return CLI::Validator(
      [what, lo, hi](std::string& text) {
        (void)parse_integer_in<Int>(text, what, lo, hi);
        return std::string();
      },
      "");
}
inline CLI::Validator float32_number(std::string what) {
  return CLI::Validator(
      [what](std::string& text) {
        (void)parse_float32_number(text, what);
        return std::string();
      },
      "");
}

class args {
 public:
  /// `usage` is the one-line synopsis ("minifloat encode FORMAT IN.npy OUT.npy [...]").
  args(std::string usage, std::string description) : usage_(std::move(usage)), app_(std::move(description)) {
    app_.allow_extras(true);  // unknown options are collected and reported in the tool's words
    app_.set_help_flag("-h,--help", "print this help and exit");
    app_.add_option("positional", positional_)->group("");  // counted by expect_positional
    auto f = std::make_shared<usage_formatter>(usage_);
    f->column_width(34);
    app_.formatter(f);
  }
  args(const args&) = delete;
  args& operator=(const args&) = delete;

  /// An option taking a value; `name` without the leading "--".
  CLI::Option* option(const std::string& name, const std::string& help, const std::string& type = "VALUE") {
    return app_.add_option("--" + name, values_[name], help)->type_name(type);
  }
  void flag(const std::string& name, const std::string& help) {
    app_.add_flag("--" + name, flags_[name], help);
  }
  void footer(const std::string& text) { app_.footer(text); }

  /// Parses argv (the arguments after the command name). Throws help_request or usage_error.
  void parse(const std::vector<std::string>& argv) {
    std::vector<std::string> a;
    for (const std::string& s : argv) {
      // "--name=value": a flag takes no value; an option's value is split off here so that an
      // empty one reaches the command ("--json=" is an empty path) rather than CLI11's "missing".
      if (s.size() > 2 && s.starts_with("--")) {
        const auto eq = s.find('=');
        if (eq != std::string::npos) {
          const std::string name = s.substr(2, eq - 2);
          if (flags_.count(name)) throw usage_error("option --" + name + " takes no value");
          if (values_.count(name)) {
            a.push_back("--" + name), a.push_back(s.substr(eq + 1));
            continue;
          }
        }
      }
      a.push_back(s);
    }
    std::reverse(a.begin(), a.end());  // CLI11 consumes the vector from its back
    try {
      app_.parse(a);
    } catch (const CLI::CallForHelp&) {
      throw help_request{app_.help()};
    } catch (const CLI::ArgumentMismatch& e) {
      throw usage_error(mismatch_message(e.what()));
    } catch (const CLI::Error& e) {
      throw usage_error(std::string(e.what()) + "; usage: " + usage_);
    }
    for (const auto& [name, set] : flags_)  // CLI11 counts a repeated flag; the tool's rule is once
      if (const CLI::Option* o = app_.get_option_no_throw("--" + name); o != nullptr && o->count() > 1)
        throw usage_error("option --" + name + " given twice");
    for (const std::string& r : app_.remaining())
      if (r.size() > 1 && r[0] == '-') throw usage_error("unknown option " + r);
    if (!app_.remaining().empty()) throw usage_error("unexpected argument '" + app_.remaining().front() + "'; usage: " + usage_);
  }

  [[nodiscard]] const std::vector<std::string>& positional() const noexcept { return positional_; }
  [[nodiscard]] bool flag(const std::string& name) const {
    const auto it = flags_.find(name);
    return it != flags_.end() && it->second;
  }
  [[nodiscard]] std::optional<std::string> get(const std::string& name) const {
    const CLI::Option* o = app_.get_option_no_throw("--" + name);
    if (o == nullptr || o->count() == 0) return std::nullopt;
    return values_.at(name);
  }
  [[nodiscard]] std::string get_or(const std::string& name, std::string fallback) const {
    return get(name).value_or(std::move(fallback));
  }
  [[nodiscard]] const std::string& usage() const noexcept { return usage_; }

  void expect_positional(std::size_t n) const {
    if (positional_.size() != n)
      throw usage_error("expected " + std::to_string(n) + " argument(s), got " + std::to_string(positional_.size()) +
                        "; usage: " + usage_);
  }

 private:
  // The help's first line is the command's own synopsis, not CLI11's "[OPTIONS] [positional...]".
  struct usage_formatter : CLI::Formatter {
    explicit usage_formatter(std::string u) : usage(std::move(u)) {}
    std::string make_usage(const CLI::App* app, std::string) const override {
      return "usage: " + usage + "\n\n" + app->get_description() + "\n";
    }
    std::string make_description(const CLI::App*) const override { return ""; }
    std::string usage;
  };

  // CLI11 names the option first ("--round: 1 required TEXT missing", "--round: At Most 1 ...").
  [[nodiscard]] std::string mismatch_message(const std::string& what) const {
    const std::string name = what.substr(0, what.find(':'));
    if (const CLI::Option* o = app_.get_option_no_throw(name); o != nullptr && name.starts_with("--")) {
      if (o->count() > 1) return "option " + name + " given twice";
      return "option " + name + " needs a value";
    }
    return what + "; usage: " + usage_;
  }

  std::string usage_;
  CLI::App app_;
  std::map<std::string, std::string> values_;  // node-based: CLI11 keeps pointers into it
  std::map<std::string, bool> flags_;
  std::vector<std::string> positional_;
};

}  // namespace minifloat::cli
