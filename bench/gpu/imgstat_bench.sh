#!/bin/sh
# Builds imgstat with CUDA on the GPU machine and measures it: `imgstat bench`
# (text and --json), the start-up steps of one 12 MP PNG, and whole-process
# times of `imgstat --backend gpu` against `--backend cpu` on that PNG.
#
# Run from the repository root, on the device machine:
#   sh bench/gpu/imgstat_bench.sh            (carry .deps, and .bench-deps if any)
# Logs go to $OUT (default /tmp/imgstat-bench): build.log, bench.txt,
# bench.json, process.txt, and sass.txt / ncu.txt / bench-extra.txt when
# asked for with BENCH_SASS=1 / BENCH_NCU=1 / BENCH_EXTRA="ARGS". At most 8
# files, as the device tool returns.
# Environment: BENCH_ARGS (extra `imgstat bench` options), BENCH_RUNS
# (whole-process runs per command, default 15). Exit status: that of the
# benchmark runs (non-zero when one failed or a check did).
set -u
OUT=${OUT:-/tmp/imgstat-bench}
mkdir -p "$OUT"
ROOT=$PWD
BUILD=$ROOT/build-gpu-bench
PREFIX=$ROOT/.deps/usr
export LD_LIBRARY_PATH="$PREFIX/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BENCH_ARGS=${BENCH_ARGS:-}
RUNS=${BENCH_RUNS:-15}

say() { echo "== $*"; }

# libpng's headers, when the machine has none: unpack carried Debian packages
# (.bench-deps/*.deb) into a private prefix.
if [ ! -f /usr/include/png.h ] && [ -d "$ROOT/.bench-deps" ]; then
  for deb in "$ROOT"/.bench-deps/*.deb; do dpkg -x "$deb" "$ROOT/.bench-deps/root"; done
  PREFIX="$PREFIX;$ROOT/.bench-deps/root/usr"
  export LD_LIBRARY_PATH="$ROOT/.bench-deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH"
fi

{
  say environment
  date -u
  git log -1 --format='commit %H %s' 2>/dev/null || echo "commit: not a git checkout"
  git status --short 2>/dev/null | head -40
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1
  nvcc --version 2>&1 | tail -2
  echo "NPP libraries found: $(find /usr/local/cuda/lib64/ -name 'libnpp*' 2>/dev/null | wc -l)"
  command -v hyperfine || echo "hyperfine: not installed"
  say configure
  cmake -S "$ROOT" -B "$BUILD" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_BUILD_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CUDA_FLAGS=-Xptxas=-v -lineinfo"
} > "$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
say build
if ! cmake --build "$BUILD" -j16 --target imgstat >> "$OUT/build.log" 2>&1; then
  # A failure inside the NPP comparison must not cost the rest: build again
  # without NPP and say so.
  echo "== build failed; trying again without NPP" >> "$OUT/build.log"
  cmake "$BUILD" -DIMGSTAT_NPPIST=OFF >> "$OUT/build.log" 2>&1
  if ! cmake --build "$BUILD" -j16 --target imgstat >> "$OUT/build.log" 2>&1; then
    tail -60 "$OUT/build.log"
    exit 1
  fi
fi
grep -E "error|warning" "$OUT/build.log" | grep -v "^ptxas info" | head -20
IMGSTAT=$BUILD/imgstat

if [ "${BENCH_SASS:-0}" = 1 ]; then
  cuobjdump -sass "$BUILD/CMakeFiles/imgstat_lib.dir/cuda/fast.cu.o" > "$OUT/sass.txt" 2>&1 ||
    cuobjdump -sass "$BUILD/libimgstat.a" > "$OUT/sass.txt" 2>&1
fi

say "imgstat bench $BENCH_ARGS"
# shellcheck disable=SC2086
"$IMGSTAT" bench $BENCH_ARGS > "$OUT/bench.txt" 2>&1
rc=$?
echo "exit status $rc" >> "$OUT/bench.txt"
STATUS=$rc
say "imgstat bench --json $BENCH_ARGS"
# shellcheck disable=SC2086
"$IMGSTAT" bench --json $BENCH_ARGS > "$OUT/bench.json" 2> "$OUT/bench-json.err"
rc=$?
echo "exit status $rc (stderr: $(cat "$OUT/bench-json.err"))" >> "$OUT/bench.txt"
[ $rc -eq 0 ] || STATUS=$rc
rm -f "$OUT/bench-json.err"
# --quick must work too (a smoke test of the small sizes).
"$IMGSTAT" bench --quick > /tmp/imgstat-quick.txt 2>&1
rc=$?
echo "imgstat bench --quick: exit status $rc, $(grep 'checks against' /tmp/imgstat-quick.txt)" >> "$OUT/bench.txt"
[ $rc -eq 0 ] || STATUS=$rc

# A second configuration (e.g. BENCH_EXTRA="--size 16384 --no-npp"): how the
# fused/CUB ratio moves with the image size shows fixed costs.
if [ -n "${BENCH_EXTRA:-}" ]; then
  say "imgstat bench $BENCH_EXTRA"
  # shellcheck disable=SC2086
  "$IMGSTAT" bench $BENCH_EXTRA > "$OUT/bench-extra.txt" 2>&1
  echo "exit status $?" >> "$OUT/bench-extra.txt"
fi

# Nsight Compute on the fused kernels and CUB's: with --runs 1 --warmup 1
# each row launches 3 times; the first 24 matching launches are the u8 plane's
# fast row (fast + fold), then RGB8's CUB u8, CUB words and fused rows.
if [ "${BENCH_NCU:-0}" = 1 ] && command -v ncu > /dev/null; then
  say ncu
  ncu --clock-control none \
    --kernel-name regex:'fast_stats_kernel|fold_stats_kernel|DeviceReduce' \
    --launch-count 24 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section SchedulerStats \
    "$IMGSTAT" bench --runs 1 --warmup 1 --no-npp > "$OUT/ncu.txt" 2>&1
fi

# ---- whole process on a 12 MP photo-like PNG --------------------------------
P=$OUT/process.txt
PHOTO=/tmp/imgstat-photo.png
python3 - "$PHOTO" > "$P" 2>&1 <<'PY'
# A photo-like 4000x3000 RGB8 image: smooth light, soft shapes, fine texture
# and sensor noise (not uniform noise, which compresses like no photo does).
import sys, time
import numpy as np
from PIL import Image, ImageFilter
t = time.time()
h, w = 3000, 4000
rng = np.random.default_rng(7)
y = np.linspace(0, 1, h, dtype=np.float32)[:, None]
x = np.linspace(0, 1, w, dtype=np.float32)[None, :]
img = np.empty((h, w, 3), np.float32)
for c, (a, b) in enumerate([(90, 120), (120, 90), (200, -110)]):
    img[..., c] = a + b * y + 25 * np.sin(6.0 * x + c) * np.cos(3.0 * y)
def field(shape, size, blur):
    f = Image.fromarray((rng.random(shape) * 255).astype(np.uint8))
    f = f.resize(size, Image.BICUBIC).filter(ImageFilter.GaussianBlur(blur))
    return np.asarray(f, np.float32)
img = 0.55 * img + 0.45 * field((24, 32, 3), (w, h), 8)
img = 0.85 * img + 0.15 * field((375, 500, 3), (w, h), 1.5)
img += rng.normal(0, 2.0, img.shape).astype(np.float32)
Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(sys.argv[1])
print("photo: %s, 4000x3000 RGB8, made in %.1f s" % (sys.argv[1], time.time() - t))
PY
ls -l "$PHOTO" >> "$P" 2>&1

median_ms() { sort -n | awk '{v[NR]=$1} END {if (NR == 0) {print "n/a"; exit}
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
  printf "median %.1f ms  (min %.1f, max %.1f, %d runs)\n", m / 1000, v[1] / 1000, v[NR] / 1000, NR}'; }

time_loop() { # label, command...
  label=$1
  shift
  "$@" > /dev/null 2>> "$P" || echo "$label: exit status $?" >> "$P"
  "$@" > /dev/null 2>&1
  i=0
  : > /tmp/imgstat-times
  while [ $i -lt "$RUNS" ]; do
    s=$(date +%s%N)
    "$@" > /dev/null 2>&1
    e=$(date +%s%N)
    echo $(((e - s) / 1000)) >> /tmp/imgstat-times
    i=$((i + 1))
  done
  printf '%-28s %s\n' "$label" "$(median_ms < /tmp/imgstat-times)" >> "$P"
}

{
  say "one run of each, output"
  "$IMGSTAT" --backend cpu "$PHOTO"
  echo "exit status $?"
  "$IMGSTAT" --backend gpu "$PHOTO"
  echo "exit status $?"
  say "where the time goes (one process each)"
  "$IMGSTAT" bench --startup "$PHOTO"
  "$IMGSTAT" bench --startup "$PHOTO" --parallel
  say "whole process, $RUNS runs after 2 untimed (date +%s%N)"
} >> "$P" 2>&1
time_loop "imgstat --backend cpu" "$IMGSTAT" --backend cpu "$PHOTO"
time_loop "imgstat --backend gpu" "$IMGSTAT" --backend gpu "$PHOTO"
time_loop "imgstat --backend auto" "$IMGSTAT" "$PHOTO"
time_loop "imgstat --version" "$IMGSTAT" --version
# The same steps as `--backend gpu` inside one process; what the whole process
# takes beyond the sum printed inside is process start and exit (CUDA's
# teardown).
time_loop "bench --startup --parallel" "$IMGSTAT" bench --startup "$PHOTO" --parallel
time_loop "  the same, then _exit" "$IMGSTAT" bench --startup "$PHOTO" --parallel --quick-exit
if command -v hyperfine > /dev/null; then
  hyperfine -N -w 2 -r "$RUNS" "$IMGSTAT --backend cpu $PHOTO" \
    "$IMGSTAT --backend gpu $PHOTO" >> "$P" 2>&1
fi

cat "$OUT/bench.txt" "$P"
# Non-zero when a benchmark run failed or one of its checks did.
exit "$STATUS"
