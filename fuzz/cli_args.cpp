// libFuzzer target: the command-line parser of the `minifloat` tool (tools/cli/args.hpp over CLI11
// and every command's parse_X in tools/cli/, which check the whole command line without touching a
// file).
// The input is split at '\0' into arguments; the first byte picks the command. A parser may
// return a request, throw cli::usage_error (exit code 2) or cli::help_request (--help); anything else (another exception, a
// crash, a sanitizer report) is a bug. A returned request must be consistent: its schemes valid.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<std::string> argv(1);
  for (std::size_t i = 1; i < size; ++i) {
    if (data[i] == 0) argv.emplace_back();
    else argv.back() += static_cast<char>(data[i]);
  }
  if (argv.size() == 1 && argv[0].empty()) argv.clear();
  using namespace minifloat::cli;
  try {
    switch (data[0] % 7) {
      case 0: (void)parse_table(argv); break;
      case 1: (void)parse_encode(argv); break;
      case 2: (void)parse_decode(argv); break;
      case 3: {
        const quantize_request r = parse_quantize(argv);
        r.scheme.validate();
        break;
      }
      case 5: check_gemm_args(argv); break;
      case 6: check_attention_args(argv); break;
      default: {
        const analyze_request r = parse_analyze(argv);
        if (r.paths.empty() || r.schemes.empty()) std::abort();
        for (const auto& s : r.schemes) s.scheme.validate();
        break;
      }
    }
  } catch (const usage_error&) {
    // a bad command line, reported as such
  } catch (const help_request& h) {
    if (h.text.empty()) std::abort();
  }
  return 0;
}
