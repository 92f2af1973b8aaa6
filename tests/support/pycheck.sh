#!/bin/sh
# Runs a check written in Python (tests/NAME.py IMGSTAT TMPDIR, NAME such
# as io/bmp_tga_check: one that computes what imgstat must give with Pillow
# and numpy) in a private temporary folder. Skips (77), saying why, without
# a python3 that has numpy, PIL and pypng.
# Usage: sh tests/support/pycheck.sh NAME PATH/TO/imgstat
set -u
NAME=${1:?usage: pycheck.sh NAME IMGSTAT}
IMGSTAT=${2:?usage: pycheck.sh NAME IMGSTAT}
HERE=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy, PIL, png' 2>/dev/null; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat_test_${NAME##*/}.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    "$p" "$HERE/../$NAME.py" "$IMGSTAT" "$T"
    exit $?
  fi
done
echo "skipped: no python3 with numpy, PIL and pypng (sh tests/deps-debian.sh --tests installs them)"
exit 77
