#!/bin/sh
# Installs what imgstat's build, tests and CI need on Debian 12 (bookworm),
# skipping what is already installed. Runs apt-get as root, through sudo when
# not root and sudo exists. Usage: sh tests/deps-debian.sh
set -eu

# Build: compiler, CMake, libpng, stb_image, TurboJPEG, libdeflate (PNG
# output; optional), libtiff, libwebp, cfitsio (TIFF, WebP, FITS input;
# optional). Tests: CUnit, python3 (JSON checks) with numpy, pypng
# and PIL (independent checks of normalized outputs). CI: clang with its
# libFuzzer runtime, clang-format, valgrind. --mpi and its tests (mpirun):
# Open MPI.
packages="build-essential cmake pkg-config libpng-dev libstb-dev \
libtiff-dev libwebp-dev libcfitsio-dev \
libcunit1-dev libturbojpeg0-dev libdeflate-dev python3 python3-numpy python3-png python3-pil clang \
libclang-rt-dev clang-format valgrind libopenmpi-dev openmpi-bin"

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps-debian.sh: not a Debian system; install these yourself: $packages" >&2
  exit 0
fi

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  echo "deps-debian.sh: all dependencies are installed"
  exit 0
fi
echo "deps-debian.sh: installing:$missing"

if [ "$(id -u)" -eq 0 ]; then
  as_root=""
elif command -v sudo >/dev/null 2>&1; then
  as_root="sudo"
else
  echo "deps-debian.sh: not root and no sudo; as root run:" >&2
  echo "  apt-get update && apt-get install -y$missing" >&2
  exit 1
fi

# No prompts: CI has no stdin.
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update
# shellcheck disable=SC2086 # $missing is a list of words on purpose
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
  --no-install-recommends $missing
