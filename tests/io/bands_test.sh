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
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy; from osgeo import gdal' 2>/dev/null; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-bands.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    "$p" "$HERE/bands_check.py" "$1" "$T"
    exit $?
  fi
done
echo "skipped: no python3 with numpy and GDAL (apt-get install python3-gdal)"
exit 77
