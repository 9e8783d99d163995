#!/usr/bin/env bash
# Cross-compiles the SIMD equivalence tests for AArch64 (the NEON path, include/minifloat/simd/arm/neon_codec.hpp)
# and runs them under qemu-user; a step of scripts/test.sh. Needs Debian's g++-aarch64-linux-gnu
# and qemu-user (scripts/install-deps.sh --neon installs them).
# Usage: bash tests/simd_equivalence/neon_qemu.sh [build dir, default build/neon-qemu] [-DNDEBUG]
# -DNDEBUG runs the full sweeps (every length 0..257, every conversion: about 20 s under qemu),
# without it the reduced ones (a few seconds); compiling the 7 files takes about a minute.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/build/neon-qemu}"
extra="${2:-}"
mkdir -p "$out/include"
# Catch2 v2 is header-only; expose only its directory (not the host's /usr/include) to the cross compiler.
ln -sfn /usr/include/catch2 "$out/include/catch2"
flags=(-std=c++20 -O2 $extra -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wold-style-cast
       -Wcast-qual -Wundef -Werror -I"$root/include" -I"$root/tests" -I"$out/include")
launcher=()
if [ -n "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then launcher=("$CMAKE_CXX_COMPILER_LAUNCHER"); fi
objs=()
pids=()
for src in "$root/tests/main.cpp" "$root"/tests/simd_equivalence/*.cpp; do
  obj="$out/$(basename "$src" .cpp).o"
  "${launcher[@]}" aarch64-linux-gnu-g++ "${flags[@]}" -c "$src" -o "$obj" &
  objs+=("$obj")
  pids+=($!)
  if (( ${#pids[@]} == 2 )); then  # two compilers at a time; a failed compile stops the script
    for p in "${pids[@]}"; do wait "$p"; done
    pids=()
  fi
done
for p in "${pids[@]}"; do wait "$p"; done
aarch64-linux-gnu-g++ "${objs[@]}" -o "$out/simd_equivalence_neon" -lpthread
qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/simd_equivalence_neon"
