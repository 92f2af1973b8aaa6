#!/bin/sh
# The libdeflate PNG decoder against libpng and numpy (png_paths_test.py).
# Skips (77) without a python3 that has numpy.
# Usage: sh tests/io/png_paths_test.sh PATH/TO/png_paths [CORPUS]
set -u
TOOL=${1:?usage: png_paths_test.sh PNG_PATHS [CORPUS]}
HERE=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c "import numpy" 2>/dev/null; then
    exec "$p" "$HERE/png_paths_test.py" "$TOOL" "${2:-}"
  fi
done
echo "skipped: no python3 with numpy"
exit 77
