// The `minifloat` command-line tool: format tables, codecs and quantization on .npy files.
// Exit codes: 0 success, 1 bad input file or failed operation, 2 bad command line
// (tools/cli/run_command.cpp, docs/errors.md).
#include <string>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  return minifloat::cli::run_command(std::vector<std::string>(argv + 1, argv + argc));
}
