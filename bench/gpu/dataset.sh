#!/bin/bash
# Dataset statistics on the GPU host: the cost of --dataset over
# the plain per-image run on N generated 12 MP JPEGs, CPU and GPU backends
# (medians of RUNS whole-process runs), and the dataset record of a mixed
# folder (corpus, samples, generated 8/16-bit images) identical from the
# CPU, the GPU and every GPU (--devices all; integer figures exact, float
# ones within the documented rounding). Usage (from the top of the tree):
#   bench/gpu/dataset.sh [IMGSTAT] [N] [RUNS]
set -u
cd "$(dirname "$0")/../.."
. bench/lib.sh
bench_build "${1:-}"
N=${2:-200}
RUNS=${3:-3}
DIR=${BENCH_DIR:-/tmp/imgstat-bench-jpeg}
bench_jpegs "$DIR" "$N"
cat "$DIR"/*.jpg >/dev/null
timeit() {
  local TIMEFORMAT=%R
  for _ in $(seq "$RUNS"); do { time "$@" >/dev/null 2>&1; } 2>&1; done | median
}
echo "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$(nvidia-smi -L | wc -l), $(nproc) cores; $N JPEGs of 12 MP; median of $RUNS"
fail=0
for b in cpu gpu; do
  tp=$(timeit "$BIN" --json --backend $b "$DIR")
  td=$(timeit "$BIN" --json --backend $b --dataset "$DIR")
  r=$(awk -v a="$td" -v p="$tp" 'BEGIN{printf "%.3f", a/p}')
  echo "--backend $b: plain $tp s, --dataset $td s: $r x ($(awk -v n="$N" -v t="$td" 'BEGIN{printf "%.1f", n/t}') images/s with --dataset)"
done
# The dataset record of a mixed folder from every backend and device set.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/in/gen"
[ -d .corpus ] && cp -r .corpus/photos "$T/in/photos"
python3 - "$T/in/gen" <<'PY'
import sys, numpy as np, cv2
rng = np.random.default_rng(10)
for i in range(40):
    h, w = int(rng.integers(100, 900)), int(rng.integers(100, 1300))
    dt = np.uint16 if i % 3 == 0 else np.uint8
    img = rng.integers(0, np.iinfo(dt).max + 1, (h, w, 3), dtype=dt)
    cv2.imwrite(f"{sys.argv[1]}/g{i:02d}.png", img)
PY
for args in "--backend cpu" "--backend gpu" "--backend gpu --devices all"; do
  "$BIN" --json --dataset-only --as rgb --scale unit $args "$T/in" >"$T/d.json" 2>"$T/d.err"
  echo "$args: rc $? $(python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['dataset']; print('images', d['images'], 'mean', [round(s['mean'],6) for s in d['stats']])" "$T/d.json")"
  sed 's/"backend":"[a-z]*",\?//' "$T/d.json" >"$T/d-${args//[ -]/_}.json"
done
for f in "$T"/d-__backend_gpu*.json; do
  cmp -s "$T/d-__backend_cpu.json" "$f" && echo "$(basename "$f"): the CPU's record, byte for byte" ||
    { echo "$(basename "$f"): DIFFERS from the CPU's"; fail=1; }
done
echo "dataset_gpu: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
