#!/bin/bash
# --jpeg-check's cost: images a second of the checks made
# before nvJPEG, none / markers / full (the Huffman scanner of
# src/io/jpeg_scan.c, libjpeg for what it doubts) / libjpeg (libjpeg's
# entropy decoding alone: the former full check), over N generated
# 12 MP q90 JPEGs from the page cache, THREADS files at once, median of 3
# rounds; each round opens every file (reading it) as the pipeline does.
# Then one thread on 20 of them: full against libjpeg. Needs no GPU: a
# CPU-only build (build-jcheck) of tests/jpeg_check_tool. Goal: full at
# least 200 images/s with 16 threads. A PASS/FAIL table last; every step
# under timeout; about 1 minute with the build.
#
# Usage (from the top of the tree, .deps carried):
#   bench/gpu/jpeg_check.sh [N] [THREADS]      (default 200 16)
# The JPEGs: the first N of /tmp/imgstat-bench-jpeg when it holds that many
# (the other benchmarks' folder), else N made in /tmp/imgstat-bench-jcheck.
# JCHECK_BUILD=DIR: an existing build folder instead of build-jcheck.
set -u
cd "$(dirname "$0")/../.."
. tests/support/lib.sh
lib_gpu_prelude
. bench/lib.sh
N=${1:-200}
J=${2:-16}
BD=${JCHECK_BUILD:-$ROOT/build-jcheck}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
say "== jpeg_check_bench $(date -u '+%F %T') $(nproc) cores, $(git log -1 --format=%h 2>/dev/null); $N JPEGs of 12 MP, $J threads"

t=$(date +%s)
[ -f "$BD/CMakeCache.txt" ] ||
  timeout -k 5 120 cmake -S . -B "$BD" -DIMGSTAT_ENABLE_CUDA=OFF \
    -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/jcheck-build.log" 2>&1
timeout -k 5 240 cmake --build "$BD" -j"$(nproc)" --target jpeg_check_tool \
  >>"$OUT/jcheck-build.log" 2>&1
rc=$?
TOOL=$BD/tests/jpeg_check_tool
say "build: rc=$rc ($(($(date +%s) - t)) s)"
if [ $rc -ne 0 ] || [ ! -x "$TOOL" ]; then
  grep -E "error|Error" "$OUT/jcheck-build.log" | head -20 | tee -a "$SUMMARY"
  say "jpeg_check_bench | build | FAIL"
  exit 1
fi

if [ "$(ls /tmp/imgstat-bench-jpeg 2>/dev/null | wc -l)" -ge "$N" ]; then
  DIR=/tmp/imgstat-bench-jpeg
else
  DIR=/tmp/imgstat-bench-jcheck
  t=$(date +%s)
  timeout -k 5 180 bash -c ". bench/lib.sh; bench_jpegs $DIR $N" ||
    { say "jpeg_check_bench | making the JPEGs | FAIL"; exit 1; }
  say "made $N JPEGs in $DIR ($(($(date +%s) - t)) s)"
fi
ls "$DIR"/*.jpg | head -n "$N" >"$T/files"
xargs cat <"$T/files" >/dev/null # into the page cache
fail=0
rows=()
for level in none markers full libjpeg; do
  line=$(timeout -k 5 120 xargs "$TOOL" bench -j "$J" -r 3 "$level" <"$T/files" 2>&1 | tail -1)
  say "$line"
  rate=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) images\/s/\1/p')
  rows+=("$level, $J threads | ${rate:-?} images/s")
  eval "rate_$level=${rate:-0}"
done
head -n 20 "$T/files" >"$T/few"
for level in full libjpeg; do
  line=$(timeout -k 5 120 xargs "$TOOL" bench -j 1 -r 3 "$level" <"$T/few" 2>&1 | tail -1)
  say "$line"
  rate=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) images\/s/\1/p')
  rows+=("$level, 1 thread, $(wc -l <"$T/few") files | ${rate:-?} images/s")
done
ok=$(awk -v r="$rate_full" 'BEGIN{print (r >= 200) ? 1 : 0}')
[ "$ok" = 1 ] || fail=1
echo
say "== jpeg_check_bench summary ($N JPEGs of 12 MP, $(nproc) cores)"
say "check | rate"
for r in "${rows[@]}"; do say "$r"; done
say "full >= 200 images/s with $J threads: $([ "$ok" = 1 ] && echo PASS || echo FAIL) ($rate_full; libjpeg alone $rate_libjpeg)"
exit $fail
