#!/bin/bash
# nnU-Net's foreground intensity properties of a CT-like dataset, three
# ways over the same files in one run: imgstat's exact pooled figures, the
# sampled recipe of nnU-Net's dataset fingerprint (numpy, 10^8 voxels
# drawn), and the exact figures computed by numpy (the reference).
# The int16 slices are int16 images (docs/formats.md, "int16"): imgstat
# reads each file once, its percentiles exact from the pooled 65536-bin
# histograms (no histogram pass and second read of a float pool).
#
# Usage (from the top of the tree): bash bench/nnunet_foreground.sh [DIR]
#   N=5000      slices, each SIZE x SIZE int16 (SIZE=512) with a uint8
#               label mask (labels 1..3), written as an nnU-Net raw folder
#               DIR/imagesTr/case_XXXX_0000.npy + DIR/labelsTr/case_XXXX.npy
#               (bench/nnunet_foreground.py gen); DIR is kept and reused
#               when given, else made under $TMPDIR and removed at the end.
#               Disk: 3 bytes a pixel, 5000 x 768 KiB = 3.9 GB at full size.
#   RUNS=3      timed runs of each, interleaved; the median is reported
#   JOBS=nproc  imgstat's -j and the numpy recipes' process pool
#   IMGSTAT     the binary (default build-verify/imgstat, built with CUDA
#               when missing: bench/lib.sh's bench_build)
#   PYTHON      a python3 with numpy (default python3)
# Prints the figures side by side (imgstat must equal the exact numpy ones:
# count, min, max, median and the percentiles exactly, mean and std to
# 1e-12 relative; the sampled column shows nnU-Net's sampling error and
# linear interpolation), PASS/FAIL, and the times; with $OUT set the log
# goes to $OUT/nnunet-foreground.log as well.
# shellcheck disable=SC2155
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
N=${N:-5000}
RUNS=${RUNS:-3}
JOBS=${JOBS:-$(nproc)}
SIZE=${SIZE:-512}
PY=${PYTHON:-python3}
L=${OUT:+$OUT/nnunet-foreground.log}
L=${L:-/dev/null}
[ "$L" = /dev/null ] || : >"$L"
bench_build "${IMGSTAT:-}"
if [ $# -ge 1 ]; then
  DIR=$1
  KEEP=1
else
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-nnunet.XXXXXX") || exit 1
  KEEP=0
fi
R=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-nnunet-out.XXXXXX") || exit 1
cleanup() {
  rm -rf "$R"
  [ "$KEEP" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT
"$PY" -c 'import numpy' || {
  log "no numpy in $PY: set PYTHON"
  exit 1
}

# the folder: made unless it holds N cases already
if [ "$(ls "$DIR/imagesTr" 2>/dev/null | wc -l)" -ne "$N" ] ||
  [ "$(ls "$DIR/labelsTr" 2>/dev/null | wc -l)" -ne "$N" ]; then
  need=$((N * SIZE * SIZE * 3 / 1000000 + 100))
  avail=$(df -Pm "$(dirname "$DIR")" | awk 'NR==2{print $4}')
  if [ "$avail" -lt "$need" ]; then
    log "need $need MB in $(dirname "$DIR"), $avail MB free: stop"
    exit 1
  fi
  rm -rf "$DIR/imagesTr" "$DIR/labelsTr"
  t=$(date +%s%N)
  "$PY" "$HERE/nnunet_foreground.py" gen "$DIR" "$N" "$JOBS" "$SIZE" || exit 1
  log "made $N cases of ${SIZE}x${SIZE} int16 + uint8 labels in $DIR ($(du -sm "$DIR" | cut -f1) MB, $((($(date +%s%N) - t) / 1000000)) ms)"
fi
cat "$DIR"/imagesTr/* "$DIR"/labelsTr/* >/dev/null # in the page cache for every run
log "binary: $("$BIN" --version 2>&1 | head -1); $(nproc) cores, JOBS=$JOBS, RUNS=$RUNS"

# one timed run: NAME CMD...; its stdout in $R/NAME.json, its ms appended
# to $R/NAME.ms ("fail" and the log's line when it failed)
timed() {
  local name=$1 s rc
  shift
  s=$(date +%s%N)
  "$@" >"$R/$name.json" 2>"$R/$name.err"
  rc=$?
  if [ $rc -ne 0 ]; then
    log "$name failed (exit $rc): $(head -c 300 "$R/$name.err" | tr '\n' ' ')"
    echo fail >>"$R/$name.ms"
  else
    echo $((($(date +%s%N) - s) / 1000000)) >>"$R/$name.ms"
  fi
}
for _ in $(seq "$RUNS"); do
  timed imgstat "$BIN" --dataset-only --json -j "$JOBS" --mask "$DIR/labelsTr" --mask-suffix _0000 \
    --percentiles 0.5,99.5 "$DIR/imagesTr"
  timed sampled "$PY" "$HERE/nnunet_foreground.py" sampled "$DIR" "$JOBS"
  timed exact "$PY" "$HERE/nnunet_foreground.py" exact "$DIR" "$JOBS"
done
ms() { if grep -q fail "$R/$1.ms"; then echo fail; else median <"$R/$1.ms"; fi; }

"$PY" - "$R" "$(ms imgstat)" "$(ms sampled)" "$(ms exact)" "$N" "$SIZE" <<'PY' | tee -a "$L"
import json, sys
r, t_i, t_s, t_e, n, size = sys.argv[1:]
def load(name):
    try:
        return json.load(open(f"{r}/{name}.json"))
    except (OSError, ValueError):
        return None
im, sa, ex = load("imgstat"), load("sampled"), load("exact")
if im is not None:
    s = im["dataset"]["stats"][0]
    im = {"count": s["count"], "mean": s["mean"], "std": s["std"], "min": s["min"],
          "max": s["max"], "median": s["median"], "p0.5": s["percentiles"]["0.5"],
          "p99.5": s["percentiles"]["99.5"]}
print(f"nnU-Net foreground intensity properties: {n} cases of {size}x{size} int16")
print(f"{'':8}{'imgstat (exact)':>22}{'numpy exact':>22}{'nnU-Net sampled':>22}{'sampled - exact':>18}")
bad = []
for k in ("count", "mean", "std", "min", "max", "median", "p0.5", "p99.5"):
    cols = [("%.10g" % c[k]) if c is not None else "-" for c in (im, ex, sa)]
    diff = "%.4g" % (sa[k] - ex[k]) if sa is not None and ex is not None else "-"
    print(f"{k:8}{cols[0]:>22}{cols[1]:>22}{cols[2]:>22}{diff:>18}")
    if im is None or ex is None:
        continue
    if k in ("mean", "std"):
        if abs(im[k] - ex[k]) > 1e-12 * abs(ex[k]):
            bad.append(k)
    elif im[k] != ex[k]:
        bad.append(k)
print("check imgstat == numpy exact:", "FAIL " + ",".join(bad) if bad or im is None or ex is None
      else "PASS (count, min, max, median, percentiles equal; mean, std within 1e-12)")
def sec(t):
    return t if t == "fail" else "%.2f s" % (int(t) / 1000)
print(f"time (median): imgstat {sec(t_i)}, nnU-Net sampled {sec(t_s)}, numpy exact {sec(t_e)}", end="")
if "fail" not in (t_i, t_s):
    print(f"; sampled / imgstat = {int(t_s) / int(t_i):.2f}x")
else:
    print()
sys.exit(1 if bad or im is None or ex is None else 0)
PY
