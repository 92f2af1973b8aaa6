#!/bin/bash
# Labelled dataset statistics on the GPU host: N CT-like SIZE x SIZE int16
# slices, each with a label image of 3 labels (an nnU-Net raw folder made by
# bench/nnunet_foreground.py gen), `imgstat --dataset --labels DIR
# --percentiles 0.5,99.5` side by side:
#   gpu          --backend gpu: 8/16-bit valid samples in the fused pass
#                (every label and channel of an image in one launch), image
#                by image (each its own upload, launch, copy back and
#                synchronization: the default)
#   gpu-batch    --backend gpu with IMGSTAT_GPU_VALID_BATCH=64: the images
#                the workers queued together batched (one upload, launch
#                and copy back for them)
#   gpu-compact  --backend gpu with IMGSTAT_GPU_VALID_COMPACT=1: the
#                compaction path (each label and channel compacted by CUB,
#                then reduced and binned: the code before the fused pass)
#   other        OTHER's --backend gpu (another build, e.g. main's), when
#                OTHER is set
#   cpu          --backend cpu
# the runs taking turns, the median of RUNS each; every run's records (the
# images' and the dataset's, "backend" set aside) must equal the CPU's.
# Prints a table; exits 1 when any records differ or a run failed.
#
# Usage (from the top of the tree): bash bench/gpu/labels_dataset.sh [DIR]
#   N=5000 SIZE=512  the slices (3 bytes a pixel on disk: 3.9 GB at full size)
#   RUNS=3           timed runs of each
#   JOBS=nproc       imgstat's -j
#   IMGSTAT          the binary (default build-verify/imgstat, built with CUDA
#                    when missing: bench/lib.sh's bench_build)
#   OTHER            another build's binary, run beside (optional)
# DIR is kept and reused when given (made when it does not hold N cases),
# else made under $TMPDIR and removed at the end. With $OUT set the table
# goes to $OUT/labels-dataset.log as well.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE/.." || exit 1
. bench/lib.sh
N=${N:-5000}
SIZE=${SIZE:-512}
RUNS=${RUNS:-3}
JOBS=${JOBS:-$(nproc)}
OTHER=${OTHER:-}
L=${OUT:+$OUT/labels-dataset.log}
L=${L:-/dev/null}
[ "$L" = /dev/null ] || : >"$L"
bench_build "${IMGSTAT:-}"
if [ $# -ge 1 ]; then
  DIR=$1
  KEEP=1
else
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-labels.XXXXXX") || exit 1
  KEEP=0
fi
R=$(mktemp -d "${TMPDIR:-/tmp}/imgstat-labels-out.XXXXXX") || exit 1
cleanup() {
  rm -rf "$R"
  [ "$KEEP" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT
python3 -c 'import numpy' || {
  log "no numpy in python3"
  exit 1
}
if [ "$(ls "$DIR/imagesTr" 2>/dev/null | wc -l)" -ne "$N" ] ||
  [ "$(ls "$DIR/labelsTr" 2>/dev/null | wc -l)" -ne "$N" ]; then
  rm -rf "$DIR/imagesTr" "$DIR/labelsTr"
  python3 bench/nnunet_foreground.py gen "$DIR" "$N" "$JOBS" "$SIZE" || exit 1
fi
cat "$DIR"/imagesTr/* "$DIR"/labelsTr/* >/dev/null # in the page cache
log "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores, -j $JOBS; $N slices of ${SIZE}x${SIZE} int16, 3 labels; median of $RUNS"
log "binary: $("$BIN" --version 2>&1 | head -1)${OTHER:+; other: $OTHER}"

# shellcheck disable=SC2054
ARGS=(--dataset --json -j "$JOBS" --labels "$DIR/labelsTr" --mask-suffix _0000
  --percentiles 0.5,99.5 "$DIR/imagesTr")
# one timed run: NAME CMD...; its records in $R/NAME.json, its ms appended
# to $R/NAME.ms ("fail" when it failed)
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
names="gpu gpu-batch gpu-compact"
[ -n "$OTHER" ] && names="$names other"
names="$names cpu"
for _ in $(seq "$RUNS"); do
  timed gpu "$BIN" --backend gpu "${ARGS[@]}"
  timed gpu-batch env IMGSTAT_GPU_VALID_BATCH=64 "$BIN" --backend gpu "${ARGS[@]}"
  timed gpu-compact env IMGSTAT_GPU_VALID_COMPACT=1 "$BIN" --backend gpu "${ARGS[@]}"
  [ -n "$OTHER" ] && timed other "$OTHER" --backend gpu "${ARGS[@]}"
  timed cpu "$BIN" --backend cpu "${ARGS[@]}"
done
ms() { if grep -q fail "$R/$1.ms"; then echo fail; else median <"$R/$1.ms"; fi; }
args=()
for n in $names; do args+=("$n" "$(ms "$n")"); done
python3 - "$R" "$N" "${args[@]}" <<'PY' | tee -a "$L"
import re, sys
r, n = sys.argv[1], int(sys.argv[2])
runs = list(zip(sys.argv[3::2], sys.argv[4::2]))
def records(name):
    try:
        text = open(f"{r}/{name}.json").read()
    except OSError:
        return None
    return re.sub(r'"backend":"[a-z]+",?', "", text)
cpu = records("cpu")
t_cpu = dict(runs).get("cpu")
bad = False
print(f"{'run':14}{'median s':>10}{'ms/image':>10}{'cpu / run':>11}  records")
for name, t in runs:
    rec = records(name)
    same = rec is not None and cpu is not None and rec == cpu
    if name != "cpu" and not same:
        bad = True
    if t == "fail":
        bad = True
        print(f"{name:14}{'fail':>10}")
        continue
    s = int(t) / 1000
    ratio = "" if t_cpu in (None, "fail") else "%.2f x" % (int(t_cpu) / int(t))
    lines = rec.count("\n") if rec else 0
    what = "the CPU's" if name == "cpu" else ("= the CPU's" if same else "DIFFER from the CPU's")
    print(f"{name:14}{s:>10.2f}{1000 * s / n:>10.3f}{ratio:>11}  {lines} records, {what}")
print("labels_dataset:", "FAIL" if bad else "PASS")
sys.exit(1 if bad else 0)
PY
