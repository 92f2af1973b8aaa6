#!/bin/bash
# Whole-process throughput of `imgstat DIR` on the GPU host: a
# folder of N generated 12 MP JPEGs (q90), read from the page cache, with the
# CPU backend, the GPU backend and auto; OpenCV's decode-only rate on every
# core as the reference; and one photo with auto against --backend cpu.
# Medians of RUNS whole-process runs. Usage (from the top of the tree, on the
# GPU machine, .deps carried):
#   bench/gpu/folder.sh [IMGSTAT] [N] [RUNS]
set -u
cd "$(dirname "$0")/../.."
. bench/lib.sh
bench_build "${1:-}"
N=${2:-200}
RUNS=${3:-3}
DIR=${BENCH_DIR:-/tmp/imgstat-bench-jpeg}
bench_jpegs "$DIR" "$N"
cat "$DIR"/*.jpg >/dev/null # into the page cache
MB=$(du -sm "$DIR" | cut -f1)
timeit() { # RUNS of a command: the median wall time in seconds
  local TIMEFORMAT=%R
  for _ in $(seq "$RUNS"); do
    { time "$@" >/dev/null 2>&1; } 2>&1
  done | median
}
echo "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader) $(nproc) cores; $N JPEGs of 12 MP q90, $MB MB; median of $RUNS"
for args in "--backend cpu" "--backend gpu" "--backend gpu --devices all" ""; do
  t=$(timeit "$BIN" --json $args "$DIR")
  echo "imgstat --json ${args:-(auto)} DIR: $t s, $(awk -v n="$N" -v t="$t" 'BEGIN{printf "%.1f", n/t}') images/s"
done
if [ -z "${BENCH_SKIP_J1:-}" ]; then
  t=$(timeit "$BIN" --json -j 1 --backend cpu "$DIR")
  echo "imgstat --json -j 1 --backend cpu DIR: $t s, $(awk -v n="$N" -v t="$t" 'BEGIN{printf "%.1f", n/t}') images/s"
fi
t=$(timeit python3 -c "
import cv2, glob, sys
from concurrent.futures import ThreadPoolExecutor
cv2.setNumThreads(1)
files = sorted(glob.glob('$DIR/*.jpg'))
with ThreadPoolExecutor($(nproc)) as ex:
    assert all(im is not None for im in ex.map(cv2.imread, files))
")
echo "OpenCV cv2.imread, $(nproc) threads, decode only: $t s, $(awk -v n="$N" -v t="$t" 'BEGIN{printf "%.1f", n/t}') images/s"
one=$(ls "$DIR"/*.jpg | head -1)
RUNS=$((RUNS + 2))
tc=$(timeit "$BIN" --backend cpu "$one")
ta=$(timeit "$BIN" "$one")
echo "one photo: --backend cpu $tc s, auto $ta s, ratio $(awk -v a="$ta" -v c="$tc" 'BEGIN{printf "%.2f", a/c}')"
