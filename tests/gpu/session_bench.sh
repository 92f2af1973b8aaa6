#!/bin/bash
# One call on the GPU host for the figures of issues 9-12 that the other
# scripts leave out or take long for: a --verify --jpeg-decoder gpu smoke run
# (with a time limit: it must not hang), nvJPEG's folder timings (nvjpeg_test
# part 6), --dataset's cost (dataset_gpu.sh), folder normalization
# (bench_normalize.sh, N images), and one photo with auto against the CPU
# backend, interleaved, 15 runs each. Usage (top of the tree, .deps carried):
#   tests/gpu/session_bench.sh BUILD_DIR [N_NORMALIZE]
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
BD=${1:?usage: session_bench.sh BUILD_DIR [N_NORMALIZE]}
NN=${2:-60}
export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PATH:/usr/local/cuda/bin
[ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
if [ ! -d "$BD" ]; then
  cmake -S . -B "$BD" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WITH_NVJPEG=ON \
    -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >/dev/null || exit 1
fi
cmake --build "$BD" -j"$(nproc)" >/dev/null || { echo "build failed"; exit 1; }
BIN=$ROOT/$BD/imgstat
"$BIN" --version
. tests/gpu/bench_lib.sh
BIG=/tmp/imgstat-bench-jpeg
bench_jpegs "$BIG" 200
mkdir -p /tmp/v20 && cp "$BIG"/img000*.jpg "$BIG"/img001*.jpg /tmp/v20/ 2>/dev/null
s=$(date +%s.%N)
timeout 60 "$BIN" --verify --jpeg-decoder gpu -q --json /tmp/v20 >/dev/null 2>/tmp/v20.err
rc=$?
echo "--verify --jpeg-decoder gpu over $(ls /tmp/v20 | wc -l) photos: exit $rc in $(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}') s, $(grep -c 'verify ok' /tmp/v20.err) ok, $(grep -c MISMATCH /tmp/v20.err) mismatches"
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
timeit() { local TIMEFORMAT=%R; for _ in 1 2 3; do { time timeout 120 "$@" >/dev/null 2>&1; } 2>&1; done | median; }
SMALL=/tmp/imgstat-bench-jpeg-small
if [ "$(ls "$SMALL" 2>/dev/null | wc -l)" -ne 1000 ]; then
  rm -rf "$SMALL" && mkdir -p "$SMALL"
  python3 - "$SMALL" <<'PY'
import sys, numpy as np, cv2
from concurrent.futures import ProcessPoolExecutor
d = sys.argv[1]
def make(i):
    rng = np.random.default_rng(i)
    img = cv2.resize(rng.integers(0, 256, (15, 20, 3), dtype=np.uint8), (816, 612), interpolation=cv2.INTER_CUBIC)
    img = np.clip(img.astype(np.int16) + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
    cv2.imwrite(f"{d}/s{i:04d}.jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
with ProcessPoolExecutor() as ex: list(ex.map(make, range(1000)))
PY
fi
echo "== nvJPEG folders, whole process, median of 3"
for set in "$BIG 200 12MP" "$SMALL 1000 0.5MP"; do
  read -r dir n label <<<"$set"
  cat "$dir"/* >/dev/null
  for args in "" "--jpeg-decoder gpu" "--jpeg-decoder gpu --jpeg-check markers" "--jpeg-decoder cpu" "--jpeg-decoder gpu --dataset"; do
    t=$(timeit "$BIN" --json $args "$dir")
    printf '%-6s %-50s %6.3f s %8.1f images/s\n' "$label" "imgstat --json ${args:-(auto)}" "$t" "$(awk -v n="$n" -v t="$t" 'BEGIN{print n/t}')"
  done
done
echo "== one photo, interleaved, 15 runs each (ms)"
one=$(ls "$BIG"/*.jpg | head -1)
for r in $(seq 15); do
  for a in cpu auto; do
    s=$(date +%s%N); "$BIN" --backend $a "$one" >/dev/null; e=$(date +%s%N)
    echo "$a $(((e - s) / 1000))"
  done
done | awk '{v[$1]=v[$1]" "$2} END{for (k in v) print k, v[k]}' | while read -r k vals; do
  echo "$k: median $(echo $vals | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END{printf "%.1f", a[int((NR+1)/2)]/1000}') ms ($vals us)"
done
echo "== dataset"
timeout 150 bash tests/gpu/dataset_gpu.sh "$BIN" 200 3
echo "== normalize, $NN images"
BENCH_DIR=/tmp/imgstat-bench-jpeg-n timeout 240 bash tests/gpu/bench_normalize.sh "$BIN" "$NN" 3 20
