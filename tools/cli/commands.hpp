#pragma once
// One function per `minifloat` subcommand; each returns the process exit code.
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

}  // namespace minifloat::cli
