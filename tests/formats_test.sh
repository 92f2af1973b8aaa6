#!/bin/sh
# The formats of issue 13 (TIFF, WebP, FITS, plain PNM, .npy, PFM) against
# numpy over the pixels an independent writer was given
# (tests/formats_check.py). Skips (77) without a python3 that has numpy and
# PIL.
# Usage: sh tests/formats_test.sh PATH/TO/imgstat
set -u
IMGSTAT=${1:?usage: formats_test.sh IMGSTAT}
HERE=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy, PIL' 2>/dev/null; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-formats.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    "$p" "$HERE/formats_check.py" "$IMGSTAT" "$T"
    exit $?
  fi
done
echo "skipped: no python3 with numpy and PIL"
exit 77
