#!/usr/bin/env bash
# Full local/CI check (what .ci/run calls):
#   1. asan-ubsan preset (Debug, ASan+UBSan): library, tests and CLI; ctest (no exhaustive label)
#   2. release preset (-O3): build everything, ctest everything (unit, exhaustive, cli, examples,
#      lm, python, mpi, install)
#   3. fuzz preset (clang, libFuzzer + ASan + UBSan): every fuzz/ target (file readers in memory
#      and through real paths, scheme strings, CLI parsers, quantize paths, from_parts, GEMM
#      arguments), each for at most MINIFLOAT_FUZZ_SECONDS (18 s: 8 targets, under 3 minutes in all) from
#      the seeds in fuzz/corpus/
#   4. tsan preset (RelWithDebInfo, ThreadSanitizer): the concurrency tests only
#      (tests/unit/core/test_threads.cpp, tests/simd_equivalence/test_bulk_threads.cpp)
#   5. the NEON path: tests/simd_equivalence cross-compiled for AArch64 (-O2 -DNDEBUG: the full
#      sweeps) and run under qemu-user (tests/simd_equivalence/neon_qemu.sh, about 1.5 min on an
#      idle machine, mostly compiling; its test cases count into the summary)
# Every step runs even after a failure; the script exits non-zero if any step failed.
# The last line is the summed ctest result, "ctest: N passed, N failed".
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
JOBS="${JOBS:-2}"
LOG_DIR="build/logs"

bash scripts/install-deps.sh --fuzz --neon || { echo "test.sh: installing dependencies failed" >&2; exit 1; }
# ccache (installed above) keeps compiled objects between runs; CCACHE_BASEDIR makes its keys
# independent of where the clone lives, so a fresh clone of an unchanged tree compiles nothing.
if command -v ccache >/dev/null 2>&1 && [ -z "${MINIFLOAT_NO_CCACHE:-}" ]; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
fi
mkdir -p "$LOG_DIR"

failed_steps=()
recap=()
passed_total=0
failed_total=0

# step <label> <command...>: run, record pass/fail
step() {
  local label="$1"; shift
  echo
  echo "=== ${label}: $*"
  local start=$SECONDS
  if "$@"; then
    recap+=("PASS  ${label} ($((SECONDS - start)) s)")
    return 0
  else
    recap+=("FAIL  ${label} ($((SECONDS - start)) s)")
    failed_steps+=("$label")
    return 1
  fi
}

# run_ctest <preset> [extra ctest args...]: ctest with its output kept in build/logs/
run_ctest() {
  local preset="$1"; shift
  local log="${LOG_DIR}/ctest-${preset}.log"
  ctest --preset "$preset" -j"$JOBS" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  # "100% tests passed, 0 tests failed out of 12"
  local line
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [ -n "$line" ]; then
    local nfail ntotal
    nfail=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    ntotal=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
    passed_total=$((passed_total + ntotal - nfail))
    failed_total=$((failed_total + nfail))
  elif [ "$rc" -ne 0 ]; then
    failed_total=$((failed_total + 1))   # ctest died before its summary
  fi
  return "$rc"
}

preset_run() {
  local preset="$1"; shift
  step "configure ${preset}" cmake --preset "$preset" || return 1
  step "build ${preset}" cmake --build --preset "$preset" -j"$JOBS" || return 1
  step "ctest ${preset}" run_ctest "$preset" "$@"
}

# run_neon: the NEON equivalence tests under qemu, their Catch summary added to the totals
run_neon() {
  local log="${LOG_DIR}/neon-qemu.log"
  bash tests/simd_equivalence/neon_qemu.sh build/neon-qemu -DNDEBUG 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  # "All tests passed (N assertions in M test cases)" or "test cases: M | P passed | F failed"
  local line
  line=$(grep -E '^(All tests passed|test cases:)' "$log" | tail -n 1 || true)
  if [[ "$line" =~ in\ ([0-9]+)\ test\ cases ]]; then
    passed_total=$((passed_total + BASH_REMATCH[1]))
  elif [[ "$line" =~ test\ cases:\ *([0-9]+)\ \|\ *([0-9]+)\ passed\ \|\ *([0-9]+)\ failed ]]; then
    passed_total=$((passed_total + BASH_REMATCH[2]))
    failed_total=$((failed_total + BASH_REMATCH[3]))
  elif [ "$rc" -ne 0 ]; then
    failed_total=$((failed_total + 1))   # did not build, or died before its summary
  fi
  return "$rc"
}

preset_run asan-ubsan
preset_run release
preset_run fuzz
preset_run tsan
step "neon (qemu-user)" run_neon

echo
echo "=== summary"
printf '  %s\n' "${recap[@]}"
echo "  ctest logs: ${LOG_DIR}/"
echo "ctest: ${passed_total} passed, ${failed_total} failed"
if [ ${#failed_steps[@]} -ne 0 ]; then
  echo "test.sh: FAILED: ${failed_steps[*]}" >&2
  exit 1
fi
