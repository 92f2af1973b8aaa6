#!/bin/sh
# imgstat normalize --dataset and the float range pass of
# imgstat --dataset --histogram against numpy
# (tests/norm/normalize_dataset_check.py). Skips (77) without a python3 that has
# numpy, PIL and pypng.
# Usage: sh tests/norm/normalize_dataset_test.sh PATH/TO/imgstat
set -u
IMGSTAT=${1:?usage: normalize_dataset_test.sh IMGSTAT}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../support/lib.sh"
lib_python 'numpy, PIL, png' || lib_skip "no python3 with numpy, PIL and pypng"
lib_tmpdir imgstat-normds
"$PY" "$HERE/normalize_dataset_check.py" "$IMGSTAT" "$T"
exit $?
