#!/bin/bash
# Whole-process throughput of `imgstat DIR` on the GPU host (issue 9): a
# folder of N generated 12 MP JPEGs (q90), read from the page cache, with the
# CPU backend, the GPU backend and auto; OpenCV's decode-only rate on every
# core as the reference; and one photo with auto against --backend cpu.
# Medians of RUNS whole-process runs. Usage (from the top of the tree, on the
# GPU machine, .deps carried):
#   tests/gpu/bench_batch.sh [IMGSTAT] [N] [RUNS]
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PATH:/usr/local/cuda/bin
BIN=${1:-$ROOT/build-verify/imgstat}
N=${2:-200}
RUNS=${3:-3}
if [ ! -x "$BIN" ]; then
  cmake -S . -B build-verify -DIMGSTAT_ENABLE_CUDA=ON -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >/dev/null &&
    cmake --build build-verify -j"$(nproc)" >/dev/null || exit 1
  BIN=$ROOT/build-verify/imgstat
fi
DIR=${BENCH_DIR:-/tmp/imgstat-bench-jpeg}
if [ "$(ls "$DIR" 2>/dev/null | wc -l)" -ne "$N" ]; then
  rm -rf "$DIR" && mkdir -p "$DIR"
  python3 - "$DIR" "$N" <<'PY'
import sys, numpy as np, cv2
from concurrent.futures import ProcessPoolExecutor
d, n = sys.argv[1], int(sys.argv[2])
def make(i):
    rng = np.random.default_rng(i)
    # smooth content (a photo's low frequencies) plus sensor noise
    small = rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    img = cv2.resize(small, (4000, 3000), interpolation=cv2.INTER_CUBIC)
    img = np.clip(img.astype(np.int16) + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
    cv2.imwrite(f"{d}/img{i:04d}.jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
with ProcessPoolExecutor() as ex:
    list(ex.map(make, range(n)))
PY
fi
cat "$DIR"/*.jpg >/dev/null # into the page cache
MB=$(du -sm "$DIR" | cut -f1)
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
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
