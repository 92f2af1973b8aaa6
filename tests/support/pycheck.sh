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
. "$HERE/../support/lib.sh"
lib_python 'numpy, PIL, png' || lib_skip "no python3 with numpy, PIL and pypng (sh tests/deps-debian.sh --tests installs them)"
lib_tmpdir imgstat_test_${NAME##*/}
"$PY" "$HERE/../$NAME.py" "$IMGSTAT" "$T"
exit $?
