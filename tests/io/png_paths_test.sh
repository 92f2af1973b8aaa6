#!/bin/sh
# The libdeflate PNG decoder against libpng and numpy (png_paths_test.py).
# Skips (77) without a python3 that has numpy.
# Usage: sh tests/io/png_paths_test.sh PATH/TO/png_paths [CORPUS]
set -u
TOOL=${1:?usage: png_paths_test.sh PNG_PATHS [CORPUS]}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../support/lib.sh"
lib_python numpy || lib_skip "no python3 with numpy"
exec "$PY" "$HERE/png_paths_test.py" "$TOOL" "${2:-}"
