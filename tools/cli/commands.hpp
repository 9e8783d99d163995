#pragma once
// One function per `minifloat` subcommand; each returns the process exit code (docs/errors.md).
// Commands that read or write files are split in two: parse_X() checks the whole command line
// without touching the file system (usage_error, exit 2, for anything wrong with it; help_request
// for --help/-h; the fuzz target fuzz/cli_args.cpp runs exactly these), run_X() does the work.
#include <minifloat/core/policy.hpp>
#include <minifloat/quant/scheme_string.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace minifloat::cli {

using argv_t = std::vector<std::string>;

int cmd_formats(const argv_t&);
int cmd_table(const argv_t&);
int cmd_encode(const argv_t&);
int cmd_decode(const argv_t&);
int cmd_quantize(const argv_t&);
int cmd_analyze(const argv_t&);
int cmd_attention(const argv_t&);
int cmd_gemm(const argv_t&);

/// The parsed command lines (what run_X needs).
struct table_request {
  format_id format = format_id::hifloat8;
};
enum class encode_input : std::uint8_t { automatic, bfloat16_bits };
struct encode_request {
  format_id format = format_id::hifloat8;
  std::string in, out;
  conversion conv;
  std::uint64_t seed = 0;
  encode_input input = encode_input::automatic;
};
struct decode_request {
  format_id format = format_id::hifloat8;
  std::string in, out;
};
enum class flatten_choice : std::uint8_t { last, first };
struct quantize_request {
  quant_scheme scheme;
  std::string in, out;
  std::optional<std::string> codes, scales;
  flatten_choice flatten = flatten_choice::last;
  bool quiet = false;
};
struct analyze_request {
  std::vector<std::string> paths;
  std::vector<named_scheme> schemes;
  std::optional<std::string> json, csv, svg;
  bool quiet = false;
};

table_request parse_table(const argv_t&);
encode_request parse_encode(const argv_t&);
decode_request parse_decode(const argv_t&);
quantize_request parse_quantize(const argv_t&);
analyze_request parse_analyze(const argv_t&);

/// parse_X of gemm and attention (their requests stay private to their files): throw as parse_X does.
void check_gemm_args(const argv_t&);
void check_attention_args(const argv_t&);

int run_encode(const encode_request&);
int run_decode(const decode_request&);
int run_quantize(const quantize_request&);
int run_analyze(const analyze_request&);

/// The whole command line (argv without the program name): dispatch, error messages and exit
/// codes, as main() runs it.
int run_command(const argv_t& args);

}  // namespace minifloat::cli
