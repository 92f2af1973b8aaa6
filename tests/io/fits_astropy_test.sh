#!/bin/sh
# Tile-compressed FITS written by astropy against astropy's pixels
# (tests/io/fits_astropy_check.py). Skips (77), saying so, without a python3
# that has astropy (Debian: python3-astropy).
# Usage: sh tests/io/fits_astropy_test.sh IMGSTAT
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import astropy.io.fits, numpy' 2>/dev/null; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-fits-astropy.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    "$p" "$HERE/fits_astropy_check.py" "$1" "$T"
    exit $?
  fi
done
echo "skipped: no python3 with astropy (apt-get install python3-astropy)"
exit 77
