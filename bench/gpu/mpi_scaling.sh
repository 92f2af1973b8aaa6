#!/bin/bash
# --mpi on one node: `imgstat --dataset --json DIR` as one process
# against `mpirun -np 2` and `-np 4` with the options docs/scaling.md
# documents (--bind-to none; --map-by ppr:K:node:PE=cores/K), CPU decoders,
# median of RUNS each, on N generated 12 MP JPEGs from the page cache; every
# run's records byte-identical to the one process's. Goal: every MPI rate at
# least 0.9 x one process's. With 2 GPUs or more: one rank per GPU
# (--jpeg-decoder gpu --jpeg-check markers) against one GPU, goal 1.8 x.
# Lines as they come, a PASS/FAIL table last; every step under timeout.
# Open MPI runs as root here (OMPI_ALLOW_RUN_AS_ROOT*); the build asks CMake
# for MPI (IMGSTAT_WITH_MPI=ON, with mpicc's help when it is not found).
#
# Usage (from the top of the tree, .deps carried):
#   bench/gpu/mpi_scaling.sh [N] [RUNS]       (default 600 3; about 3-4 min
#                                              with the build, fewer with a
#                                              smaller N)
# IMGSTAT_BIN=PATH skips the build (a binary built with MPI).
set -u
cd "$(dirname "$0")/../.."
. tests/support/lib.sh
lib_gpu_prelude
. bench/lib.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
N=${1:-600}
RUNS=${2:-3}
BD=$ROOT/build-mpi
DIR=${BENCH_DIR:-/tmp/imgstat-bench-jpeg}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ROWS=$T/rows
: >"$ROWS"
CORES=$(nproc)
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
say "== mpi_scaling $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) x$NGPU, $CORES cores, $(mpirun --version 2>/dev/null | head -1); $N JPEGs of 12 MP, median of $RUNS"

# ---- build (with MPI) ---------------------------------------------------------
t=$(date +%s)
rc=0
if [ -n "${IMGSTAT_BIN:-}" ]; then
  : >"$OUT/mpi-build.log"
elif [ ! -f "$BD/CMakeCache.txt" ]; then
  timeout -k 5 120 cmake -S . -B "$BD" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WITH_MPI=ON \
    -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/mpi-build.log" 2>&1 ||
    { rm -rf "$BD" && command -v mpicc >/dev/null &&
      timeout -k 5 120 cmake -S . -B "$BD" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WITH_MPI=ON \
        -DMPI_C_COMPILER="$(command -v mpicc)" -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" \
        >>"$OUT/mpi-build.log" 2>&1; }
fi
if [ -z "${IMGSTAT_BIN:-}" ]; then
  timeout -k 5 360 cmake --build "$BD" -j"$CORES" --target imgstat >>"$OUT/mpi-build.log" 2>&1
  rc=$?
fi
BIN=${IMGSTAT_BIN:-$BD/imgstat}
say "build: rc=$rc ($(($(date +%s) - t)) s); $(grep -E 'imgstat: (MPI|nvJPEG)' "$OUT/mpi-build.log" | tr '\n' ' ')"
if [ $rc -ne 0 ] || [ ! -x "$BIN" ]; then
  grep -E "error|Error" "$OUT/mpi-build.log" | head -20 | tee -a "$SUMMARY"
  say "mpi_scaling | build | FAIL"
  exit 1
fi
say "$("$BIN" --version | tail -1)"
if timeout -k 5 60 mpirun -np 1 "$BIN" --mpi --dataset-only /nonexistent 2>&1 | grep -q "without MPI"; then
  say "mpi_scaling | $BIN was built without MPI | FAIL"
  exit 1
fi

# ---- the folder ------------------------------------------------------------------
t=$(date +%s)
timeout -k 5 120 bash -c ". bench/lib.sh; bench_jpegs '$DIR' '$N'" ||
  { say "mpi_scaling | making $N JPEGs | FAIL"; exit 1; }
cat "$DIR"/*.jpg >/dev/null
say "folder: $N JPEGs, $(du -sm "$DIR" | cut -f1) MB ($(($(date +%s) - t)) s)"

# timed NAME CMD...: RUNS runs (each under timeout), the median wall time in
# $T/NAME.t, the last run's stdout in $T/NAME.out, stderr in $T/NAME.err.
timed() {
  local name=$1 k s e
  shift
  : >"$T/$name.times"
  for k in $(seq "$RUNS"); do
    s=$(date +%s.%N)
    timeout -k 5 120 "$@" >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
    e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN{printf "%.3f\n", e - s}' >>"$T/$name.times"
  done
  median <"$T/$name.times" >"$T/$name.t"
}
rate() { awk -v n="$N" -v t="$1" 'BEGIN{printf "%.1f", n / t}'; }
fail=0
# compare NAME BASE WHAT GOAL: the table's line for run NAME against BASE
compare() {
  local name=$1 base=$2 what=$3 goal=$4 t tb ratio same ok
  t=$(cat "$T/$name.t")
  tb=$(cat "$T/$base.t")
  ratio=$(awk -v a="$tb" -v b="$t" 'BEGIN{printf "%.2f", a / b}')
  if cmp -s "$T/$base.out" "$T/$name.out" && [ -s "$T/$name.out" ]; then same=identical; else same=DIFFER; fi
  ok=PASS
  awk -v r="$ratio" -v g="$goal" 'BEGIN{exit !(r >= g)}' || ok=FAIL
  [ "$same" = identical ] && [ "$(cat "$T/$name.rc")" = "$(cat "$T/$base.rc")" ] || ok=FAIL
  [ $ok = PASS ] || fail=1
  say "$what: $t s, $(rate "$t") images/s, $ratio x (goal $goal), records $same, exit $(cat "$T/$name.rc")"
  row "$what | $(rate "$t") images/s | $ratio x (goal $goal) | records $same | $ok"
  grep -v '^$' "$T/$name.err" | head -3 | sed 's/^/  stderr: /' | tee -a "$SUMMARY"
}

# ---- CPU decoders: one process, then 2 and 4 ranks -------------------------------
timed one "$BIN" --dataset --json "$DIR"
t=$(cat "$T/one.t")
say "one process: $t s, $(rate "$t") images/s, exit $(cat "$T/one.rc") ($(tail -1 "$T/one.out" | head -c 80))"
row "one process (CPU decoders) | $(rate "$t") images/s | 1.00 x | reference | -"
for k in 2 4; do
  pe=$((CORES / k))
  timed "none$k" mpirun -np "$k" --bind-to none "$BIN" --mpi --dataset --json "$DIR"
  compare "none$k" one "mpirun -np $k --bind-to none" 0.9
  timed "pe$k" mpirun -np "$k" --map-by "ppr:$k:node:PE=$pe" "$BIN" --mpi --dataset --json "$DIR"
  compare "pe$k" one "mpirun -np $k --map-by ppr:$k:node:PE=$pe" 0.9
done
# Open MPI's default binding, for the record: once, over the first 100
# files (it is slow), the advice on its stderr.
ls "$DIR"/*.jpg | head -100 >"$T/first100"
s=$(date +%s.%N)
timeout -k 5 120 mpirun -np 2 "$BIN" --mpi --dataset --json --files-from "$T/first100" \
  >"$T/default2.out" 2>"$T/default2.err"
t=$(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.3f", e - s}')
r=$(awk -v n="$(wc -l <"$T/first100")" -v t="$t" 'BEGIN{printf "%.1f", n / t}')
advice=$(grep -c -- '--mpi: each rank runs on' "$T/default2.err")
say "mpirun -np 2, default binding (not a goal; 100 files, one run): $t s, $r images/s; advice given: $advice"
grep -- '--mpi: each rank runs on' "$T/default2.err" | head -1 | tee -a "$SUMMARY"
row "mpirun -np 2, default binding (100 files) | $r images/s | the advice given: $advice | - | -"

# ---- GPUs: one rank per GPU against one GPU ----------------------------------------
G="--jpeg-decoder gpu --jpeg-check markers"
if [ "$NGPU" -ge 2 ]; then
  timed gpu1 "$BIN" $G --dataset --json "$DIR"
  t=$(cat "$T/gpu1.t")
  say "one GPU: $t s, $(rate "$t") images/s, exit $(cat "$T/gpu1.rc")"
  row "one process, one GPU ($G) | $(rate "$t") images/s | 1.00 x | reference | -"
  timed gpu2 mpirun -np 2 --bind-to none "$BIN" --mpi $G --dataset --json "$DIR"
  compare gpu2 gpu1 "mpirun -np 2 --bind-to none, one GPU each" 1.8
else
  say "one rank per GPU: not run ($NGPU GPU on this host)"
  row "one rank per GPU | not run: $NGPU GPU | - | - | -"
fi

echo
say "== mpi_scaling summary ($N JPEGs of 12 MP, $CORES cores, median of $RUNS)"
say "run | rate | vs reference | records | verdict"
while IFS= read -r line; do say "$line"; done <"$ROWS"
say "mpi_scaling: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
