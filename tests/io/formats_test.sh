#!/bin/sh
# The optional formats (TIFF, WebP, FITS, plain PNM, .npy, PFM) against
# numpy over the pixels an independent writer was given
# (tests/io/formats_check.py). Skips (77) without a python3 that has numpy and
# PIL. A second argument names another check of tests/ run the same way
# (readers_check.py: the GIF, HDR and PNG tRNS readers).
# Usage: sh tests/io/formats_test.sh PATH/TO/imgstat [CHECK.py]
set -u
IMGSTAT=${1:?usage: formats_test.sh IMGSTAT [CHECK.py]}
CHECK=${2:-formats_check.py}
HERE=$(cd "$(dirname "$0")" && pwd)
# readers_check.py reads HDR through tools/make_reference.py, which needs
# pypng too.
need=numpy,PIL
[ "$CHECK" = readers_check.py ] && need=numpy,PIL,png
. "$HERE/../support/lib.sh"
lib_python "$need" || lib_skip "no python3 with $need"
lib_tmpdir imgstat-formats
"$PY" "$HERE/$CHECK" "$IMGSTAT" "$T"
exit $?
