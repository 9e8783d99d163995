#pragma once
// Input and output paths of a command, checked before anything is read or written: an output
// that is the same file as an input (device and inode, or the same path when it does not exist
// yet), or as another output, is a bad command line (exit 2), since writing it would destroy the
// input or one of the results.
#include <minifloat/io/files.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "args.hpp"

namespace minifloat::cli {

/// A path with the name the command line gives it ("IN", "OUT", "--codes").
struct role_path {
  std::string role;
  std::filesystem::path path;
};

/// Control characters as \xNN: for names from files or the command line printed on a terminal.
[[nodiscard]] inline std::string terminal_text(std::string_view s) { return minifloat::detail::printable_text(s); }

inline void check_distinct_paths(const std::vector<role_path>& inputs, const std::vector<role_path>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& o = outputs[i];
    for (const auto& in : inputs)
      if (same_file(in.path, o.path))
        throw usage_error(o.role + " '" + terminal_text(o.path.string()) + "' is the same file as " + in.role + " '" +
                          terminal_text(in.path.string()) + "'; writing it would destroy the input: expected a different " +
                          "output path");
    for (std::size_t j = 0; j < i; ++j)
      if (same_file(outputs[j].path, o.path))
        throw usage_error(o.role + " '" + terminal_text(o.path.string()) + "' is the same file as " + outputs[j].role +
                          "; expected a different path for each output");
  }
}

}  // namespace minifloat::cli
