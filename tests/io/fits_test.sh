#!/bin/sh
# FITS against numpy (tests/io/fits_check.py): tile-compressed images made by
# cfitsio and broken one card at a time, 64-bit and scaled integers. Skips
# (77) without a python3 that has numpy.
# Usage: sh tests/io/fits_test.sh IMGSTAT FITS_TILED GOOD_PNG
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../support/lib.sh"
lib_python numpy || lib_skip "no python3 with numpy"
lib_tmpdir imgstat-fits
"$PY" "$HERE/fits_check.py" "$1" "$2" "$3" "$T"
exit $?
