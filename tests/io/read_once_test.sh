#!/bin/sh
# Inputs that can be read only once (a pipe, a FIFO, /dev/fd/N) in the passes
# that would read an input twice, and SIGTERM / SIGINT while a run waits for a
# FIFO's writer (tests/io/read_once_check.py). Skips (77) without a python3 that
# has numpy.
# Usage: sh tests/io/read_once_test.sh PATH/TO/imgstat
set -u
IMGSTAT=${1:?usage: read_once_test.sh IMGSTAT}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../support/lib.sh"
lib_python numpy || lib_skip "no python3 with numpy"
lib_tmpdir imgstat-once
"$PY" "$HERE/read_once_check.py" "$IMGSTAT" "$T"
exit $?
