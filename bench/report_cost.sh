#!/bin/sh
# What --report costs, and that a run without it pays nothing: a dataset
# run of a generated folder timed with and without --report (and with
# --histogram, which --report implies, for reference), runs interleaved,
# the median of each. Times a whole process (wall clock, date +%s%N).
# Usage: sh bench/report_cost.sh [IMGSTAT [IMAGES [RUNS]]]
#   IMGSTAT  default build/imgstat
#   IMAGES   generated 512 x 512 RGB PNGs (default 2000)
#   RUNS     runs of each command (default 7)
# Compare two builds' runs without --report (the cost of the option being
# there at all) with bench/gpu/compare_speed.sh OLD NEW.
set -eu
BIN=${1:-build/imgstat}
N=${2:-2000}
RUNS=${3:-7}
T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat_report_cost.XXXXXX")
trap 'rm -rf "$T"' EXIT
PY=python3
"$PY" -c 'import numpy, PIL' 2>/dev/null || PY=/usr/bin/python3
"$PY" - "$T/imgs" "$N" <<'PY'
import os, sys
import numpy as np
from PIL import Image
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d)
rng = np.random.default_rng(0)
for i in range(n):
    small = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    img = Image.fromarray(small).resize((512, 512), Image.BILINEAR)
    img.save(os.path.join(d, "img%05d.png" % i), compress_level=1)
PY
ms() { # ms CMD...: the command's wall time in milliseconds
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
: >"$T/plain" && : >"$T/report" && : >"$T/hist"
ms "$BIN" --dataset-only "$T/imgs" >/dev/null # warm the page cache
for r in $(seq "$RUNS"); do
  ms "$BIN" --dataset-only "$T/imgs" >>"$T/plain"
  ms "$BIN" --dataset-only --report "$T/page.html" "$T/imgs" >>"$T/report"
  ms "$BIN" --dataset-only --histogram "$T/imgs" >>"$T/hist"
done
echo "imgstat --dataset-only, $N PNGs of 512 x 512 RGB, median of $RUNS runs ($(nproc) cores):"
printf '  %-32s %8s ms\n' "without --report" "$(median <"$T/plain")"
printf '  %-32s %8s ms\n' "with --report" "$(median <"$T/report")"
printf '  %-32s %8s ms\n' "with --histogram (no page)" "$(median <"$T/hist")"
printf '  %-32s %8s bytes\n' "the page" "$(wc -c <"$T/page.html")"
