#!/bin/bash
# Folder normalization on the GPU host, whole-process times:
#  - N generated 12 MP JPEGs (q90) -> PNG, minmax, every core, default
#    level: CPU backend, GPU backend, auto; against OpenCV's encode-only rate
#    (cv2.imwrite of the same decoded images, same zlib level, one thread
#    per core: no decoding, no normalizing) -- the target is 0.85 x it;
#  - the first N_NPY of them -> float32 .npy (--depth 32), against the disk's
#    write rate measured with dd (conv=fsync, as imgstat syncs each file) in
#    the same run -- the target is 0.9 x it;
#  - the CPU and GPU backends write identical files over a folder;
#  - --skip-existing over the finished folder.
# Medians of RUNS runs. Outputs go under $WORK (default /tmp) and are removed.
# Usage (from the top of the tree, on the GPU machine, .deps carried):
#   bench/gpu/normalize.sh [IMGSTAT] [N] [RUNS] [N_NPY]
set -u
cd "$(dirname "$0")/../.."
. bench/lib.sh
bench_build "${1:-}"
N=${2:-200}
RUNS=${3:-3}
N_NPY=${4:-60}
WORK=${WORK:-/tmp}
DIR=${BENCH_DIR:-$WORK/imgstat-bench-jpeg}
OUTD=$WORK/imgstat-bench-out
bench_jpegs "$DIR" "$N"
cat "$DIR"/*.jpg >/dev/null # into the page cache
MB=$(du -sm "$DIR" | cut -f1)
LEVEL=$("$BIN" normalize --help | sed -n 's/.*default \([0-9]\) (.*/\1/p' | head -1)
rate() { awk -v n="$1" -v t="$2" 'BEGIN{printf "%.2f", n/t}'; }
# timeit CMD...: RUNS runs, OUTD emptied before each; the median wall time
timeit() {
  local TIMEFORMAT=%R
  for _ in $(seq "$RUNS"); do
    rm -rf "$OUTD"
    sync
    { time "$@" >/dev/null 2>"$WORK/bench-normalize.err"; } 2>&1
  done | median
}
echo "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) $(nproc) cores; $N JPEGs of 12 MP q90, $MB MB; PNG level $LEVEL; median of $RUNS; $("$BIN" --version)"

for args in "--backend cpu" "--backend gpu" ""; do
  # shellcheck disable=SC2086
  t=$(timeit "$BIN" normalize $args "$DIR" -o "$OUTD")
  echo "imgstat normalize ${args:-(auto)} DIR -o OUT (PNG): $t s, $(rate "$N" "$t") images/s"
  tail -2 "$WORK/bench-normalize.err"
done
PNGMB=$(du -sm "$OUTD" | cut -f1)
echo "PNG outputs: $PNGMB MB"

# --skip-existing over the finished folder (OUTD holds the last run's)
TIMEFORMAT=%R
ts=$( { time "$BIN" normalize --skip-existing -q "$DIR" -o "$OUTD" >/dev/null 2>&1; } 2>&1)
echo "imgstat normalize --skip-existing over the finished folder: $ts s"

# the backends write the same files (first 20 inputs)
mkdir -p "$WORK/bn-sub" && rm -f "$WORK/bn-sub"/*
ls "$DIR"/*.jpg | head -20 | xargs -I{} ln -sf {} "$WORK/bn-sub/"
rm -rf "$WORK/bn-cpu" "$WORK/bn-gpu"
"$BIN" normalize --backend cpu "$WORK/bn-sub" -o "$WORK/bn-cpu" 2>/dev/null
"$BIN" normalize --backend gpu "$WORK/bn-sub" -o "$WORK/bn-gpu" 2>/dev/null
if diff -r "$WORK/bn-cpu" "$WORK/bn-gpu" >/dev/null && [ "$(ls "$WORK/bn-cpu" | wc -l)" -eq 20 ]; then
  echo "CPU and GPU backends: 20 PNG outputs identical"
else echo "CPU and GPU backends: outputs DIFFER or missing"; fi
rm -rf "$WORK/bn-cpu" "$WORK/bn-gpu"

# OpenCV: encode only, the same images decoded beforehand, every core
rm -rf "$OUTD" && mkdir -p "$OUTD"
t=$(python3 - "$DIR" "$OUTD" "$LEVEL" "$RUNS" <<'PY'
import cv2, glob, os, sys, time, statistics
from concurrent.futures import ThreadPoolExecutor
d, out, level, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
cv2.setNumThreads(1)
files = sorted(glob.glob(d + "/*.jpg"))
with ThreadPoolExecutor(os.cpu_count()) as ex:
    imgs = list(ex.map(cv2.imread, files))
def enc(k):
    assert cv2.imwrite(f"{out}/o{k:04d}.png", imgs[k], [cv2.IMWRITE_PNG_COMPRESSION, level])
ts = []
for _ in range(runs):
    t0 = time.perf_counter()
    with ThreadPoolExecutor(os.cpu_count()) as ex:
        list(ex.map(enc, range(len(imgs))))
    os.sync()
    ts.append(time.perf_counter() - t0)
print(statistics.median(ts))
PY
)
echo "OpenCV cv2.imwrite PNG level $LEVEL, $(nproc) threads, encode only: $t s, $(rate "$N" "$t") images/s (target 0.85 x: $(awk -v n="$N" -v t="$t" 'BEGIN{printf "%.2f", 0.85*n/t}') images/s)"
rm -rf "$OUTD"

# .npy: float32, 144 MB each, against dd's rate on the same disk
rm -rf "$WORK/bn-npy" && mkdir -p "$WORK/bn-npy"
ls "$DIR"/*.jpg | head -"$N_NPY" | xargs -I{} ln -sf {} "$WORK/bn-npy/"
GB=$((N_NPY * 144 / 1000))
ddr=$(dd if=/dev/zero of="$WORK/bench-dd.bin" bs=16M count=$((N_NPY * 9)) conv=fsync 2>&1 | tail -1)
rm -f "$WORK/bench-dd.bin"
echo "dd of $((N_NPY * 144)) MB (conv=fsync): $ddr"
t=$(timeit "$BIN" normalize --depth 32 "$WORK/bn-npy" -o "$OUTD")
echo "imgstat normalize --depth 32 (.npy, $N_NPY x 144 MB): $t s, $(rate "$N_NPY" "$t") images/s, $(awk -v n="$N_NPY" -v t="$t" 'BEGIN{printf "%.2f", n*0.144/t}') GB/s"
rm -rf "$OUTD" "$WORK/bn-npy" "$WORK/bn-sub"
