// The `minifloat` command line: help, dispatch, one-line error messages and exit codes
// (0 success, 1 bad input file or failed operation, 2 bad command line; docs/errors.md).
#include <minifloat/core/version.hpp>
#include <minifloat/io/error.hpp>
#include <minifloat/io/files.hpp>

#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "args.hpp"
#include "commands.hpp"

namespace minifloat::cli {
namespace {

constexpr std::string_view help_text = R"(minifloat )" MINIFLOAT_VERSION_STRING R"( - low-precision float formats (HiF8, FP8, MX)

usage: minifloat COMMAND [ARGS]

commands:
  formats                         list the format names, one per line
  table FORMAT                    CSV of every code: code,hex,value,class
  encode FORMAT IN.npy OUT.npy    round float32/float64/float16 values to codes
      [--round MODE]              nearest (default: the format's own), nearest_even, nearest_away,
                                  toward_zero, upward, downward, stochastic
      [--saturate]                overflow and +-Inf give +-max instead of Inf/NaN
      [--overflow POLICY]         non_saturating (default), saturate, saturate_nan_to_zero
      [--seed N]                  random stream for --round stochastic (default 0)
      [--input bfloat16]          IN holds uint16 bfloat16 bit patterns
                                  OUT: uint8 codes (low bits for 4/6-bit formats), uint16 for
                                  bfloat16/float16; same shape as IN
  decode FORMAT IN.npy OUT.npy    codes (uint8, or uint16 for 16-bit formats) -> float32
  quantize IN.npy OUT.npy         scaled quantization; OUT = dequantized float32, IN's shape
      --format F                  element format (see `formats`)
      --granularity G             tensor | channel (one scale per row) | token (same, for
                                  activations) | block | mx (E8M0 scale per 32 along --axis)
      [--block RxC]               block tile (default 128x128)
      [--axis 0|1]                mx: blocks run along axis 1 (rows, default) or axis 0
      [--scale-rule R]            max | pow2 | none (fp32 scales); floor | rceil | ceil | even (mx)
                                  defaults: mx floor; hifloat8 pow2; others max
      [--target T | --n-guard N]  pow2: amax lands in [2^T, 2^(T+1)); T = 15 - N (default T=4);
                                  T must lie in the format's binades (hifloat8: N 0 to 37)
      [--round MODE]              element rounding (default: the format's nearest)
      [--seed N]                  random stream for --round stochastic (element (r,c) draws
                                  random_bits(N, r * cols + c))
      [--codes CODES.npy]         also write the codes (uint8; FP4 packed two per byte along the
                                  last axis, element 2i in the low nibble; uint16 for 16-bit)
      [--scales SCALES.npy]       also write the scales: float32 grid, or uint8 E8M0 codes for mx
                                  (plain layout: one byte per block, row-major over blocks)
      [--flatten last|first]      N-D IN as prod(leading) x last (default) or first x prod(rest)
                                  (conv weights (O,I,kh,kw) -> O x I*kh*kw, as analyze does)
      [--quiet]                   no summary line
      IN may be 1-D (one row) or N-D (flattened as --flatten says).
  analyze PATH...                 fidelity of real tensors under several schemes: a table with
                                  SQNR (dB) and zero-rate per tensor and scheme, median and worst
      PATH                        .npy (float32/64/16) or .safetensors (F32, F16, BF16, F64
                                  tensors) files, or folders (their .npy/.safetensors, by name)
      [--schemes LIST]            comma-separated schemes, each FORMAT/GRANULARITY[/key=value...]
                                  with keys block=RxC, axis=0|1, scale-rule=R, target=T,
                                  n-guard=N, round=MODE (the quantize options above, same
                                  defaults; every rounding but stochastic: analyze measures
                                  deterministic quantizers), granularity blockN =
                                  block/block=NxN, or an alias
                                  mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4
                                  (= float8_e4m3fn/mx, ...). Default: hifloat8/tensor,
                                  hifloat8/channel, float8_e4m3fn/tensor, mxfp8_e4m3,
                                  mxfp8_e5m2, mxfp4, float8_e4m3fn/block128
      [--json FILE]               every metric per tensor and scheme (deterministic)
      [--csv FILE]                one row per tensor and scheme
      [--svg DIR]                 plots: sqnr.svg, zero_rate.svg, significand_bits.svg and
                                  precision_<scheme>.svg (self-contained SVG)
      [--quiet]                   no table
      Tensors are viewed as matrices: 1-D one row, 4-D (O,I,kh,kw) O x I*kh*kw, other N-D
      prod(leading) x last. Metrics: docs/analysis.md.
  attention Q.npy K.npy V.npy OUT.npy   quantized attention (docs/attention.md): float32 Q (Hq, Tq, d),
                                  K (Hkv, Tk, d), V (Hkv, Tk, dv), OUT (Hq, Tq, dv), each with an
                                  optional leading batch dimension; Hq a multiple of Hkv
      [--q-scheme S] [--k-scheme S] [--v-scheme S]   operand schemes (as analyze's, or fp32, bf16);
                                  Q, K quantized as (B*H*T, d), V as one (Tk, dv) matrix per head
                                  (mxfp8_e4m3/axis=0: blocks along T); default fp32
      [--p-format F] [--p-scale X]  P~ = exp(S - m) quantized as X * decode(encode_F(P~ / X))
      [--causal]                  key j visible to query i iff j <= i + Tk - Tq
      [--softmax-scale X]         default 1/sqrt(d)
      [--path reference|fast]     double-precision reference (default) or the tiled kernel
      [--threads N] [--isa L]     fast path only
      [--kernel K]                fast path's block kernel: automatic, amx, avx512, avx512_bf16, avx2, scalar
                                  (one the CPU lacks falls back to the best it has)
      [--stats M_L.npy]           also write (..., Tq, 2): row max m and row sum l
      [--hadamard] [--rotation-seed N]  rotate Q and K along d by a random orthogonal Hadamard
                                  matrix before quantizing (cancels in QK^T; d a power of two)
  gemm A.npy B.npy OUT.npy        quantized GEMM, OUT (M, N) float32
      --a-scheme S --b-scheme S   A (M, K), B (N, K) or (K, N); MX blocks run along K
      [--b-layout nk|kn]          default nk
      [--order exact|fp32_blocks|fast]  exact (default): the exact sum rounded once; fp32_blocks:
                                  the fast path's fp32 order (reference code); fast: the fast GEMM
      [--threads N]

  help, --help, -h                this text
  help COMMAND, COMMAND --help    the command's options (also -h)
  version, --version              the version

Every output is written to a temporary file next to it and renamed into place only when all of
a command's outputs were written completely: on any error no output file is changed. An output
that is the same file as an input is refused. Inputs must be regular files.
Exit codes: 0 success, 1 bad input file or failed operation, 2 bad command line
(docs/errors.md lists every error class).
)";

}  // namespace

int run_command(const argv_t& argv) {
  std::vector<std::string> args = argv;
  // "minifloat help CMD" is "minifloat CMD --help"
  if (args.size() == 2 && args[0] == "help") args = {args[1], "--help"};
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << help_text << std::flush;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  // One line on stderr whatever the message holds (paths and tensor names come from outside).
  auto report = [&](const char* what) {
    std::cerr << "minifloat " << minifloat::detail::printable_text(command, 40)
              << ": error: " << minifloat::detail::printable_text(what) << std::endl;
  };
  try {
    if (command == "version" || command == "--version") {
      std::cout << "minifloat " MINIFLOAT_VERSION_STRING "\n";
      return 0;
    }
    if (command == "formats") return cmd_formats(args);
    if (command == "table") return cmd_table(args);
    if (command == "encode") return cmd_encode(args);
    if (command == "decode") return cmd_decode(args);
    if (command == "quantize") return cmd_quantize(args);
    if (command == "analyze") return cmd_analyze(args);
    if (command == "attention") return cmd_attention(args);
    if (command == "gemm") return cmd_gemm(args);
    throw usage_error("unknown command '" + minifloat::detail::printable_text(command, 40) +
                      "'; run 'minifloat --help' for the list");
  } catch (const help_request& h) {
    std::cout << h.text << std::flush;
    if (!std::cout) {
      report("<stdout>: write failed; expected the help to be written");
      return 1;
    }
    return 0;
  } catch (const usage_error& e) {
    report(e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    report("out of memory; expected an input that fits in memory");
    return 1;
  } catch (const std::exception& e) {
    report(e.what());
    return 1;
  }
}

}  // namespace minifloat::cli
