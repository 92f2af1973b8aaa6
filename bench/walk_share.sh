#!/bin/sh
# The folder walk's share of a tiny-image run: FILES tiny 4 x 4 PGMs in
# FOLDERS folders (generated with Python under a temporary folder, removed
# at the end), then `IMGSTAT_STAGE_TIMES=1 imgstat -q --json DIR` RUNS times
# with the walk reading folders ahead (the default, 8 walkers) and one
# folder at a time (IMGSTAT_WALKERS=1), in turns; prints each run's walk
# seconds (the feeding thread's), the whole run's wall seconds and the share,
# then the medians.
#   sh bench/walk_share.sh IMGSTAT [FILES] [FOLDERS] [RUNS]
# Defaults: 200000 files in 2000 folders, 3 runs.
set -eu
IMG=$1
FILES=${2:-200000}
FOLDERS=${3:-2000}
RUNS=${4:-3}
D=$(mktemp -d "${TMPDIR:-/tmp}/imgstat_walk.XXXXXX")
trap 'rm -rf "$D"' EXIT
python3 - "$D/t" "$FILES" "$FOLDERS" <<'PY'
import os, sys
root, files, folders = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per = (files + folders - 1) // folders
n = 0
for d in range(folders):
    p = os.path.join(root, "d%05d" % d)
    os.makedirs(p)
    for i in range(per):
        if n == files:
            break
        with open(os.path.join(p, "f%04d.pgm" % i), "wb") as f:
            f.write(b"P5\n4 4\n255\n" + bytes((n + k) % 256 for k in range(16)))
        n += 1
PY
echo "walk share: $FILES files in $FOLDERS folders, $(nproc) cores, $RUNS runs"
# warm the page cache and the dentries once
"$IMG" -q --json "$D/t" >/dev/null
for r in $(seq 1 "$RUNS"); do
  for w in 8 1; do
    t0=$(date +%s.%N)
    IMGSTAT_WALKERS=$w IMGSTAT_STAGE_TIMES=1 "$IMG" -q --json "$D/t" 2>"$D/err" >/dev/null
    t1=$(date +%s.%N)
    walk=$(sed -n 's/.*stage times: walk \([0-9.]*\).*/\1/p' "$D/err")
    echo "$w $walk $t0 $t1" | awk '{ printf "walkers %d: walk %.3f s of %.3f s = %.1f %%\n", $1, $2, $4 - $3, 100 * $2 / ($4 - $3) }' | tee -a "$D/rows"
  done
done
for w in 8 1; do
  grep "^walkers $w:" "$D/rows" | awk '{ print $(NF-1) }' | sort -n | awk -v w=$w '{ a[NR] = $1 } END { printf "median share, %d walkers: %.1f %%\n", w, a[int((NR + 1) / 2)] }'
done
