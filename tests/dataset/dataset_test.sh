#!/bin/sh
# imgstat --dataset: the pooled record against numpy over the
# pixels decoded with PIL (tests/dataset/dataset_check.py). Skips (77) without a
# python3 that has numpy, PIL and pypng.
# Usage: sh tests/dataset/dataset_test.sh PATH/TO/imgstat CORPUS_DIR
set -u
IMGSTAT=${1:?usage: dataset_test.sh IMGSTAT CORPUS}
CORPUS=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../support/lib.sh"
lib_python 'numpy, PIL, png' || lib_skip "no python3 with numpy, PIL and pypng"
lib_tmpdir imgstat-dataset
"$PY" "$HERE/dataset_check.py" "$IMGSTAT" "$CORPUS" "$T"
exit $?
