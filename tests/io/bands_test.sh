#!/bin/sh
# Images of more than four bands (13, 200 and 1024; 1025 refused) in .npy (channels
# last and first), TIFF written by GDAL (pixel and band interleaved) and a
# FITS cube (astropy, when present), per band against numpy and GDAL's
# ComputeStatistics; the dataset pool and normalize of 13-band images
# against numpy (tests/io/bands_check.py). Skips (77), saying so, without a
# python3 that has numpy and GDAL's bindings (Debian: python3-gdal).
# Usage: sh tests/io/bands_test.sh IMGSTAT
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../support/lib.sh"
lib_python 'numpy; from osgeo import gdal' || lib_skip "no python3 with numpy and GDAL (apt-get install python3-gdal)"
lib_tmpdir imgstat-bands
"$PY" "$HERE/bands_check.py" "$1" "$T"
exit $?
