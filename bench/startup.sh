#!/bin/sh
# Whole-process start-up against /bin/true (docs/benchmarks.md,
# "Start-up"): `imgstat tiny.png` (a 37 x 23 PNG), `imgstat --version`
# (which loads every library loaded when needed, to say whether each
# loads) and, given OLD, the same runs of another build, each RUNS times in
# turn with the others (bench_startup: posix_spawn to reap, the median),
# then the objects a tiny run maps (the dynamic loader's trace).
# Usage: sh bench/startup.sh [BUILD [RUNS [OLD]]]   (BUILD default: build)
set -eu
BUILD=${1:-build}
RUNS=${2:-400}
OLD=${3:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$BUILD/imgstat
TINY=$ROOT/tests/data/formats/rgb.png
cmake --build "$BUILD" --target imgstat bench_startup >/dev/null
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(git -C "$ROOT" rev-parse --short HEAD)"
set -- /bin/true "$BIN $TINY" "$BIN --version"
[ -n "$OLD" ] && set -- "$@" "$OLD $TINY" "$OLD --version"
"$BUILD/bench/bench_startup" "$RUNS" "$@"
echo "objects mapped by '$BIN tiny.png':"
LD_DEBUG=files "$BIN" "$TINY" 2>&1 >/dev/null |
  sed -n 's/.*file=\([^ ]*\) *\[[0-9]*\]; *\(needed\|dynamically loaded\).*/  \1/p' | sort -u
