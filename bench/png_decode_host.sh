#!/bin/bash
# PNG decoding on a many-core host (docs/benchmarks.md, "PNG decoding"):
# imgstat's loader (the libdeflate decoder) against libpng alone and OpenCV's
# cv2.imdecode, decode only, from memory, on every core; then one thread on
# each 12 MP type. Needs python3 with numpy, Pillow and OpenCV, cmake, a C
# compiler, libpng, and libdeflate (system-wide, or the .deps bundle of
# tests/deps-debian.sh in the checkout); no network.
#
#   bench/png_decode_host.sh [THREADS]     (from anywhere)
#
# About 2 to 3 minutes on 16 cores: the build of one benchmark (CPU only,
# into build-pngbench/), the 14 test PNGs made in parallel into
# $TMPDIR/imgstat-png-bench (kept for the next run), the folder runs and
# the single-thread runs. Prints the tables that docs/benchmarks.md quotes.
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
THREADS=${1:-$(nproc)}
export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
B=$ROOT/build-pngbench
t0=$(date +%s)
cmake -S . -B "$B" -DIMGSTAT_ENABLE_CUDA=OFF -DIMGSTAT_WITH_LIBDEFLATE=ON \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" \
  >"$B.log" 2>&1 &&
  cmake --build "$B" -j"$(nproc)" --target bench_png_decode >>"$B.log" 2>&1 ||
  { tail -20 "$B.log"; exit 1; }
echo "== built in $(($(date +%s) - t0)) s; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
PY=${PYTHON:-python3}
"$PY" -c 'import numpy, PIL, cv2; print("OpenCV", cv2.__version__, "numpy", numpy.__version__)'
# the folder: every type of a size together, on THREADS threads
"$PY" bench/png_decode.py --tool "$B/bench/bench_png_decode" \
  --threads "$THREADS" --rounds 5 --seconds 0.5 --mixed-only
# one large PNG at a time: each 12 MP type on one thread
"$PY" bench/png_decode.py --tool "$B/bench/bench_png_decode" \
  --threads 1 --rounds 3 --seconds 0.3 --sizes 12
echo "== done in $(($(date +%s) - t0)) s"
