#!/bin/sh
# Inputs that can be read only once (a pipe, a FIFO, /dev/fd/N) in the passes
# that would read an input twice, and SIGTERM / SIGINT while a run waits for a
# FIFO's writer (tests/io/read_once_check.py). Skips (77) without a python3 that
# has numpy.
# Usage: sh tests/io/read_once_test.sh PATH/TO/imgstat
set -u
IMGSTAT=${1:?usage: read_once_test.sh IMGSTAT}
HERE=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy' 2>/dev/null; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-once.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    "$p" "$HERE/read_once_check.py" "$IMGSTAT" "$T"
    exit $?
  fi
done
echo "skipped: no python3 with numpy"
exit 77
