#!/bin/sh
# imgstat normalize --dataset and the float range pass of
# imgstat --dataset --histogram against numpy
# (tests/norm/normalize_dataset_check.py). Skips (77) without a python3 that has
# numpy, PIL and pypng.
# Usage: sh tests/norm/normalize_dataset_test.sh PATH/TO/imgstat
set -u
IMGSTAT=${1:?usage: normalize_dataset_test.sh IMGSTAT}
HERE=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy, PIL, png' 2>/dev/null; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-normds.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    "$p" "$HERE/normalize_dataset_check.py" "$IMGSTAT" "$T"
    exit $?
  fi
done
echo "skipped: no python3 with numpy, PIL and pypng"
exit 77
