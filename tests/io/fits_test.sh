#!/bin/sh
# FITS against numpy (tests/io/fits_check.py): tile-compressed images made by
# cfitsio and broken one card at a time, 64-bit and scaled integers. Skips
# (77) without a python3 that has numpy.
# Usage: sh tests/io/fits_test.sh IMGSTAT FITS_TILED GOOD_PNG
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy' 2>/dev/null; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-fits.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    "$p" "$HERE/fits_check.py" "$1" "$2" "$3" "$T"
    exit $?
  fi
done
echo "skipped: no python3 with numpy"
exit 77
