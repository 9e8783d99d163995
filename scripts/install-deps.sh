#!/usr/bin/env bash
# Install the Debian packages minifloat's build, tests and tools need; does nothing when they are
# all present (so it is cheap to call from every script). Debian 12 (bookworm) package names.
#   scripts/install-deps.sh           build + test deps
#   scripts/install-deps.sh --fuzz    also clang + libFuzzer runtime (for the "fuzz" preset)
#   scripts/install-deps.sh --neon    also the AArch64 cross compiler and qemu-user (the NEON
#                                     path's equivalence tests, tests/simd_equivalence/neon_qemu.sh)
#   scripts/install-deps.sh --kjv     also bible-kjv, the King James Bible text of the full
#                                     examples/lm_training run (CI uses the slice in data/kjv/)
set -euo pipefail

packages=(cmake g++ make catch2 libfmt-dev libbenchmark-dev libopenblas-dev python3-numpy
          python3-dev pybind11-dev python3-pytest python3-hypothesis openmpi-bin libopenmpi-dev ccache
          libcli11-dev nlohmann-json3-dev)
for arg in "$@"; do
  case "$arg" in
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --neon) packages+=(g++-aarch64-linux-gnu qemu-user) ;;
    --kjv) packages+=(bible-kjv) ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps.sh: not a Debian-like system; install these yourself: ${packages[*]}" >&2
  exit 0
fi

missing=()
for pkg in "${packages[@]}"; do
  # dpkg -s also "knows" removed packages whose config files remain, so check the status word.
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all present (${packages[*]})"
  exit 0
fi

echo "install-deps.sh: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "install-deps.sh: not root and no sudo; install as root: ${missing[*]}" >&2
    exit 1
  fi
fi
"${sudo_cmd[@]}" apt-get update </dev/null
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
