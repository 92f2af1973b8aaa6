#!/bin/sh
# Installs what imgstat needs on Debian 12 (bookworm), skipping what is
# already installed. Runs apt-get as root, through sudo when not root and
# sudo exists.
# Usage: sh tests/deps-debian.sh            build and run imgstat
#        sh tests/deps-debian.sh --tests    also run its tests and CI
set -eu

with_tests=0
case ${1:-} in
--tests) with_tests=1 ;;
"") ;;
*)
  echo "usage: sh tests/deps-debian.sh [--tests]" >&2
  exit 2
  ;;
esac

# Build and run: compiler, CMake, libpng, stb_image, TurboJPEG, libdeflate
# (PNG output; optional), libtiff, libwebp, cfitsio, giflib (TIFF, WebP, FITS,
# GIF input; optional); zlib (FITS's GZIP tiles checked); libarchive (tar and
# zip archives read in place; optional).
packages="build-essential cmake pkg-config libpng-dev libstb-dev \
libtiff-dev libwebp-dev libcfitsio-dev zlib1g-dev libgif-dev libturbojpeg0-dev libdeflate-dev \
libarchive-dev"
# Tests: CUnit, python3 (JSON checks) with numpy, pypng, PIL and astropy
# (independent checks; astropy writes and reads tile-compressed FITS); GDAL
# (gdal-bin, python3-gdal: writes GeoTIFFs with nodata and is the reference for
# their per-band statistics); the Python package's build and tests (python/):
# python3-dev, python3-venv, pytest; CI: clang with its libFuzzer runtime,
# clang-format, valgrind, groff (the man page's lint); --mpi and its tests
# (mpirun): Open MPI; locales (the de_DE source that tests make a
# decimal-comma locale from with localedef); the report page's browser test:
# headless Chromium through Selenium (chromium, chromium-driver,
# python3-selenium).
if [ "$with_tests" = 1 ]; then
  packages="$packages libcunit1-dev python3 python3-numpy python3-png \
python3-pil python3-astropy python3-dev python3-venv python3-pytest clang libclang-rt-dev \
clang-format valgrind groff-base libopenmpi-dev openmpi-bin locales \
gdal-bin python3-gdal chromium chromium-driver python3-selenium"
fi

# nvJPEG (JPEG decoded on the GPU): where nvcc is present and its toolkit has
# no nvjpeg.h, the header and library of the PyPI wheel nvidia-nvjpeg (the
# version that goes with CUDA 13.0) are unpacked into $nvjpeg_dir, where
# CMake looks; pip (python3-pip) only downloads the wheel, nothing is
# installed into Python.
nvjpeg_wheel="nvidia-nvjpeg==13.0.4.44"
nvjpeg_dir=/opt/imgstat-deps/nvjpeg
nvcc_bin=$(command -v nvcc 2>/dev/null || true)
if [ -z "$nvcc_bin" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc_bin=/usr/local/cuda/bin/nvcc
fi
need_nvjpeg=0
if [ -n "$nvcc_bin" ] &&
  [ ! -f "$(dirname "$nvcc_bin")/../include/nvjpeg.h" ] &&
  [ ! -f "$nvjpeg_dir/include/nvjpeg.h" ]; then
  need_nvjpeg=1
  if ! python3 -m pip --version >/dev/null 2>&1; then
    packages="$packages python3-pip"
  fi
fi

# Unpacks the wheel (as root: $1 is the command prefix).
install_nvjpeg() {
  [ "$need_nvjpeg" = 1 ] || return 0
  echo "deps-debian.sh: unpacking $nvjpeg_wheel into $nvjpeg_dir"
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --dest "$tmp" "$nvjpeg_wheel"
  $1 python3 - "$tmp" "$nvjpeg_dir" <<'EOPY'
import glob, os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(glob.glob(os.path.join(src, "*.whl"))[0]) as z:
    for name in z.namelist():
        for part in ("include", "lib"):
            prefix = "nvidia/cu13/%s/" % part
            if name.startswith(prefix) and not name.endswith("/"):
                out = os.path.join(dst, part, name[len(prefix):])
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with open(out, "wb") as f:
                    f.write(z.read(name))
EOPY
  rm -rf "$tmp"
}

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

if [ "$(id -u)" -eq 0 ]; then
  as_root=""
elif command -v sudo >/dev/null 2>&1; then
  as_root="sudo"
elif [ -z "$missing" ] && [ "$need_nvjpeg" = 0 ]; then
  as_root=""
else
  echo "deps-debian.sh: not root and no sudo; as root run:" >&2
  echo "  apt-get update && apt-get install -y$missing" >&2
  exit 1
fi

if [ -z "$missing" ]; then
  echo "deps-debian.sh: all dependencies are installed"
  install_nvjpeg "$as_root"
  exit 0
fi
echo "deps-debian.sh: installing:$missing"

# No prompts: CI has no stdin.
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update
# shellcheck disable=SC2086 # $missing is a list of words on purpose
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y \
  --no-install-recommends $missing
install_nvjpeg "$as_root"
