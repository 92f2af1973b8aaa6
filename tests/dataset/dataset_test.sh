#!/bin/sh
# imgstat --dataset: the pooled record against numpy over the
# pixels decoded with PIL (tests/dataset/dataset_check.py). Skips (77) without a
# python3 that has numpy, PIL and pypng.
# Usage: sh tests/dataset/dataset_test.sh PATH/TO/imgstat CORPUS_DIR
set -u
IMGSTAT=${1:?usage: dataset_test.sh IMGSTAT CORPUS}
CORPUS=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy, PIL, png' 2>/dev/null; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-dataset.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    "$p" "$HERE/dataset_check.py" "$IMGSTAT" "$CORPUS" "$T"
    exit $?
  fi
done
echo "skipped: no python3 with numpy, PIL and pypng"
exit 77
