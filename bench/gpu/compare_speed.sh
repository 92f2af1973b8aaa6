#!/bin/bash
# Whole-process speed of two imgstat builds side by side (a restructuring
# keeps the speed as it was; tests/tools/compare_builds.sh checks the bytes), on the GPU
# host, in one call:
#
#   bench/gpu/compare_speed.sh OLD_IMGSTAT NEW_IMGSTAT [RUNS]
#
# Over generated data in $TMPDIR (N_JPEG 12 MP q90 JPEGs, N_PNG 2 MP PNGs,
# from the page cache; bench/lib.sh makes them), each case is run RUNS times
# (default 7) with the old and the new build in turn, old new old new ...,
# after one warm-up each, so that a drift of the machine falls on both:
#   stats-gpu      imgstat --backend gpu JPEGS  (nvJPEG when compiled in)
#   stats-cpu      imgstat --backend cpu JPEGS
#   stats-png      imgstat PNGS                 (auto)
#   dataset-gpu    imgstat --dataset --backend gpu JPEGS
#   dataset-cpu    imgstat --dataset --backend cpu PNGS
#   normalize-gpu  imgstat normalize --backend gpu PNGS -o DIR
#   normalize-cpu  imgstat normalize --backend cpu PNGS -o DIR
#   one-photo      imgstat ONE_JPEG             (auto: the start-up path)
# and prints, a case a line, the median wall seconds of each build and
# new/old (the median of the pair ratios). Every run's stdout must be the same
# for both builds (a run whose output differs is an error). Then
# `imgstat bench` of each build (the kernels), side by side, when it runs.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
[ $# -ge 2 ] || { echo "usage: $0 OLD_IMGSTAT NEW_IMGSTAT [RUNS]" >&2; exit 2; }
OLD=$(realpath "$1") && NEW=$(realpath "$2") || exit 2
RUNS=${3:-7}
N_JPEG=${N_JPEG:-100}
N_PNG=${N_PNG:-100}
. bench/lib.sh
export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
W=${TMPDIR:-/tmp}/imgstat-compare-speed
mkdir -p "$W"
bench_jpegs "$W/jpeg" "$N_JPEG"
if [ "$(ls "$W/png" 2>/dev/null | wc -l)" -ne "$N_PNG" ]; then
  rm -rf "$W/png" && mkdir -p "$W/png"
  python3 - "$W/jpeg" "$W/png" "$N_PNG" <<'PY'
import sys, os, cv2
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = sorted(os.listdir(src))
for i in range(n):
    img = cv2.imread(os.path.join(src, names[i % len(names)]))
    img = cv2.resize(img, (1632, 1224), interpolation=cv2.INTER_AREA)
    cv2.imwrite(f"{dst}/p{i:04d}.png", img)
PY
fi
cat "$W"/jpeg/* "$W"/png/* >/dev/null
ONE=$(ls "$W"/jpeg/* | head -1)

# now_ns: a monotonic clock in nanoseconds.
now_ns() { date +%s%N; }

# run_case NAME ARGS...: ARGS with the program first as @; prints the line.
run_case() {
  local name=$1
  shift
  local told=() tnew=() ratios=() i a b t0 t1 prog
  for prog in "$OLD" "$NEW"; do # warm-up
    "${@/#@/$prog}" >/dev/null 2>&1
  done
  for ((i = 0; i < RUNS; i++)); do
    t0=$(now_ns)
    "${@/#@/$OLD}" >"$W/o.old" 2>/dev/null
    t1=$(now_ns)
    a=$((t1 - t0))
    rm -rf "$W/out"
    t0=$(now_ns)
    "${@/#@/$NEW}" >"$W/o.new" 2>/dev/null
    t1=$(now_ns)
    b=$((t1 - t0))
    rm -rf "$W/out"
    if ! cmp -s "$W/o.old" "$W/o.new"; then
      echo "$name: the two builds printed different output" >&2
      diff "$W/o.old" "$W/o.new" | head -5 >&2
      FAILED=1
    fi
    told+=("$a")
    tnew+=("$b")
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')")
  done
  local mo mn mr
  mo=$(printf '%s\n' "${told[@]}" | median | awk '{ printf "%.3f", $1 / 1e9 }')
  mn=$(printf '%s\n' "${tnew[@]}" | median | awk '{ printf "%.3f", $1 / 1e9 }')
  mr=$(printf '%s\n' "${ratios[@]}" | median)
  printf '%-14s old %8s s  new %8s s  new/old %s\n' "$name" "$mo" "$mn" "$mr"
}

FAILED=0
echo "compare_speed: $RUNS runs each, $N_JPEG JPEGs (12 MP), $N_PNG PNGs (2 MP), $(nproc) cores"
run_case stats-gpu @ --backend gpu "$W/jpeg"
run_case stats-cpu @ --backend cpu "$W/jpeg"
run_case stats-png @ "$W/png"
run_case dataset-gpu @ --dataset --backend gpu "$W/jpeg"
run_case dataset-cpu @ --dataset --backend cpu "$W/png"
run_case normalize-gpu @ normalize --backend gpu "$W/png" -o "$W/out"
run_case normalize-cpu @ normalize --backend cpu "$W/png" -o "$W/out"
run_case one-photo @ "$ONE"
for prog in "$OLD" "$NEW"; do
  echo "== $prog bench"
  timeout 120 "$prog" bench 2>&1 | tail -40
done
rm -rf "$W/out" "$W/o.old" "$W/o.new"
[ "${KEEP_DATA:-0}" = 1 ] || rm -rf "$W"
exit $FAILED
