#!/bin/sh
# Tile-compressed FITS written by astropy against astropy's pixels
# (tests/io/fits_astropy_check.py). Skips (77), saying so, without a python3
# that has astropy (Debian: python3-astropy).
# Usage: sh tests/io/fits_astropy_test.sh IMGSTAT
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../support/lib.sh"
lib_python 'astropy.io.fits, numpy' || lib_skip "no python3 with astropy (apt-get install python3-astropy)"
lib_tmpdir imgstat-fits-astropy
"$PY" "$HERE/fits_astropy_check.py" "$1" "$T"
exit $?
