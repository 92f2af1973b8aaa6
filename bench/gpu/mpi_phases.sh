#!/bin/bash
# Where MPI ranks on one host lose against one process on the same cores:
# `imgstat --dataset --json DIR` as one process (-j CORES) against
# `mpirun -np 2` and `-np 4 --bind-to none --mpi`, with the CPU decoders and
# with nvJPEG (--jpeg-decoder gpu: every rank of the host shares the GPUs,
# rank r on GPU r mod GPUs), medians of RUNS, on N generated 12 MP JPEGs
# from the page cache; records byte-identical to one process's. Each MPI
# run's phases come from IMGSTAT_STAGE_TIMES (docs/scaling.md): MPI's
# start-up, the list's walk and broadcast, each rank's workers, the moment
# its work ended (the spread between ranks is their imbalance), the reduce
# and the gather; each -np K twice, side by side: the inputs dealt in chunks
# as the ranks ask (the default) and the contiguous shares
# (IMGSTAT_MPI_DEAL=static), each against one process (the ratio column); and mpirun's own cost (`mpirun -np K
# /bin/true`). A row per run with -j CORES per rank (the host's cores
# oversubscribed K times: does a rank that finished early leave cores idle?)
# tells the default's choice. Goal: every rate >= 0.95 x one process's.
# Then, with M (default 1,800) photos too, one process against -np 2 past
# the start-up ((M - N) / (t(M) - t(N))): a rate lost per image, or a fixed
# cost (mpirun's launch, MPI's start-up) that a longer run repays?
# On two GPUs or more, one rank a GPU (mpirun -np 2 --jpeg-decoder gpu)
# against one rank on one GPU (mpirun -np 1) past the start-up on N and M
# photos (goal >= 1.8 x).
# Prints lines as they come, the table last.
#
# Usage (top of the tree, .deps carried; about 6 min on one H200 with the
# build):
#   bench/gpu/mpi_phases.sh [N] [RUNS] [M]      (default 600 3 1800; M 0:
#                                                no past-start-up rows)
# IMGSTAT_BIN=PATH skips the build (a binary built with MPI);
# MPI_PHASES_DEALT_ONLY=1 runs the default deal alone (no static shares, no
# oversubscribed rows: about half the time);
# bench/gpu/mpi_scaling.sh builds the same build-mpi.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
. bench/lib.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
N=${1:-600}
RUNS=${2:-3}
M=${3:-1800}
BD=$ROOT/build-mpi
DIR=${BENCH_DIR:-/tmp/imgstat-bench-jpeg}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ROWS=$T/rows
: >"$ROWS"
CORES=$(nproc)
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
say "== mpi_phases $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) x$NGPU, $CORES cores, $(mpirun --version 2>/dev/null | head -1); $N JPEGs of 12 MP, median of $RUNS"

# ---- build (with MPI), as bench/gpu/mpi_scaling.sh ---------------------------------
t=$(date +%s)
rc=0
if [ -z "${IMGSTAT_BIN:-}" ]; then
  if [ ! -f "$BD/CMakeCache.txt" ]; then
    timeout -k 5 120 cmake -S . -B "$BD" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WITH_MPI=ON \
      -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/mpi-build.log" 2>&1 ||
      { rm -rf "$BD" && command -v mpicc >/dev/null &&
        timeout -k 5 120 cmake -S . -B "$BD" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WITH_MPI=ON \
          -DMPI_C_COMPILER="$(command -v mpicc)" -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" \
          >>"$OUT/mpi-build.log" 2>&1; }
  fi
  timeout -k 5 420 cmake --build "$BD" -j"$CORES" --target imgstat >>"$OUT/mpi-build.log" 2>&1
  rc=$?
fi
BIN=${IMGSTAT_BIN:-$BD/imgstat}
say "build: rc=$rc ($(($(date +%s) - t)) s)"
if [ $rc -ne 0 ] || [ ! -x "$BIN" ]; then
  grep -E "error|Error" "$OUT/mpi-build.log" | head -20 | tee -a "$SUMMARY"
  say "mpi_phases | build | FAIL"
  exit 1
fi
say "$("$BIN" --version | sed -n 2p)"

# ---- the folder --------------------------------------------------------------------
t=$(date +%s)
timeout -k 5 300 bash -c ". bench/lib.sh; bench_jpegs '$DIR' '$N'" ||
  { say "mpi_phases | making $N JPEGs | FAIL"; exit 1; }
cat "$DIR"/*.jpg >/dev/null
say "folder: $N JPEGs, $(du -sm "$DIR" | cut -f1) MB ($(($(date +%s) - t)) s)"

# timed NAME CMD...: RUNS runs, the median wall time in $T/NAME.t, the last
# run's stdout and stderr in $T/NAME.out and .err
timed() {
  local name=$1 k s
  shift
  : >"$T/$name.times"
  for k in $(seq "$RUNS"); do
    s=$(date +%s.%N)
    IMGSTAT_STAGE_TIMES=1 timeout -k 5 180 "$@" >"$T/$name.out" 2>"$T/$name.err"
    echo $? >"$T/$name.rc"
    awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.3f\n", e - s}' >>"$T/$name.times"
  done
  median <"$T/$name.times" >"$T/$name.t"
}
rate() { awk -v n="$N" -v t="$1" 'BEGIN{printf "%.1f", n / t}'; }
fail=0
# phases NAME: the ranks' lines of the last run, summed up: the slowest
# MPI start-up, the broadcast, the first and last rank's end of work, the
# longest reduce, the gather, the workers a rank
phases() {
  grep -h '^imgstat: mpi times: \|^imgstat: mpi gather: ' "$T/$1.err" | sed 's/^/    /' >>"$OUT/mpi_phases.log"
  awk '
    /^imgstat: mpi times: / {
      for (i = 1; i <= NF; i++) {
        if ($i == "workers") w = w (w == "" ? "" : ",") $(i + 1)
        if ($i == "init" && $(i + 1) > init) init = $(i + 1)
        if ($i == "bcast" && $(i + 1) > bc) bc = $(i + 1)
        if ($i == "work-end") { e = $(i + 1); if (lo == "" || e < lo) lo = e; if (e > hi) hi = e }
        if ($i == "reduce" && $(i + 1) > red) red = $(i + 1)
      }
    }
    /^imgstat: mpi gather: / { g = $4 }
    END { printf "phases: workers a rank %s; MPI start-up %.3f s, list broadcast %.3f s, work ends %.3f..%.3f s (imbalance %.3f s), reduce %.3f s, gather %.3f s\n",
          w, init, bc, lo, hi, hi - lo, red, g }' "$T/$1.err"
}
# compare NAME BASE WHAT GOAL: a line and a row for run NAME against BASE
compare() {
  local name=$1 base=$2 what=$3 goal=$4 t tb ratio same ok
  t=$(cat "$T/$name.t")
  tb=$(cat "$T/$base.t")
  ratio=$(awk -v a="$tb" -v b="$t" 'BEGIN{printf "%.2f", a / b}')
  if cmp -s "$T/$base.out" "$T/$name.out" && [ -s "$T/$name.out" ]; then same=identical; else same=DIFFER; fi
  ok=PASS
  [ "$goal" = - ] || awk -v r="$ratio" -v g="$goal" 'BEGIN{exit !(r >= g)}' || ok=FAIL
  [ "$same" = identical ] && [ "$(cat "$T/$name.rc")" = "$(cat "$T/$base.rc")" ] || ok=FAIL
  [ $ok = PASS ] || fail=1
  say "$what: $t s, $(rate "$t") images/s, $ratio x (goal $goal), records $same, exit $(cat "$T/$name.rc")"
  say "  $(phases "$name")"
  row "$what | $(rate "$t") images/s | $ratio x (goal $goal) | records $same | $ok"
}
row() { echo "$*" >>"$ROWS"; }
: >"$OUT/mpi_phases.log"

# mpirun's own cost: launching K processes that do nothing
for k in 2 4; do
  timed "true$k" mpirun -np "$k" --bind-to none /bin/true
  say "mpirun -np $k --bind-to none /bin/true: $(cat "$T/true$k.t") s (mpirun's launch and exit)"
  row "mpirun -np $k /bin/true | $(cat "$T/true$k.t") s | - | - | -"
done

for dec in cpu gpu; do
  if [ $dec = gpu ]; then
    [ "$NGPU" -ge 1 ] || { say "nvJPEG: no GPU, not run"; continue; }
    D="--jpeg-decoder gpu --jpeg-check markers"
    what="nvJPEG ($NGPU GPU)"
  else
    D=""
    what="CPU decoders"
  fi
  timed "one-$dec" "$BIN" $D -j "$CORES" --dataset --json "$DIR"
  t=$(cat "$T/one-$dec.t")
  say "$what, one process -j $CORES: $t s, $(rate "$t") images/s, exit $(cat "$T/one-$dec.rc")"
  row "$what, one process -j $CORES | $(rate "$t") images/s | 1.00 x | reference | -"
  for k in 2 4; do
    timed "np$k-$dec" mpirun -np "$k" --bind-to none "$BIN" --mpi $D --dataset --json "$DIR"
    compare "np$k-$dec" "one-$dec" "$what, mpirun -np $k --bind-to none (dealt in chunks)" 0.95
    [ "${MPI_PHASES_DEALT_ONLY:-0}" = 1 ] && continue
    timed "np$k-static-$dec" mpirun -np "$k" --bind-to none -x IMGSTAT_MPI_DEAL=static \
      "$BIN" --mpi $D --dataset --json "$DIR"
    compare "np$k-static-$dec" "one-$dec" "$what, mpirun -np $k --bind-to none, IMGSTAT_MPI_DEAL=static (contiguous shares, not a goal)" -
    timed "np$k-j-$dec" mpirun -np "$k" --bind-to none "$BIN" --mpi $D -j "$CORES" --dataset --json "$DIR"
    compare "np$k-j-$dec" "one-$dec" "$what, mpirun -np $k --bind-to none, -j $CORES a rank (oversubscribed, not a goal)" -
  done
done

# past the start-up: M photos (the first N of them the folder above's
# files: bench_jpegs makes image i the same whatever the count)
if [ "$M" -gt "$N" ]; then
  DIRM=${BENCH_DIR_M:-/tmp/imgstat-bench-jpeg-$M}
  t=$(date +%s)
  timeout -k 5 400 bash -c ". bench/lib.sh; bench_jpegs '$DIRM' '$M'" ||
    { say "mpi_phases | making $M JPEGs | FAIL"; exit 1; }
  cat "$DIRM"/*.jpg >/dev/null
  say "folder: $M JPEGs ($(($(date +%s) - t)) s)"
  timed "oneM" "$BIN" -j "$CORES" --dataset --json "$DIRM"
  timed "np2M" mpirun -np 2 --bind-to none "$BIN" --mpi --dataset --json "$DIRM"
  say "  $(phases np2M)"
  [ "${MPI_PHASES_DEALT_ONLY:-0}" = 1 ] || timed "np2M-static" mpirun -np 2 --bind-to none -x IMGSTAT_MPI_DEAL=static \
    "$BIN" --mpi --dataset --json "$DIRM"
  [ "${MPI_PHASES_DEALT_ONLY:-0}" = 1 ] || say "  static: $(phases np2M-static)"
  past() { awk -v n="$N" -v m="$M" -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", (m - n) / (a - b)}'; }
  r1=$(past "$(cat "$T/oneM.t")" "$(cat "$T/one-cpu.t")")
  r2=$(past "$(cat "$T/np2M.t")" "$(cat "$T/np2-cpu.t")")
  ratio=$(awk -v a="$r2" -v b="$r1" 'BEGIN{printf "%.2f", a / b}')
  same=DIFFER
  cmp -s "$T/oneM.out" "$T/np2M.out" && [ -s "$T/oneM.out" ] && same=identical
  ok=PASS
  awk -v r="$ratio" 'BEGIN{exit !(r >= 0.95)}' && [ $same = identical ] || { ok=FAIL; fail=1; }
  say "CPU decoders past start-up ($M - $N): one process $r1 images/s, mpirun -np 2 $r2 images/s: $ratio x (goal 0.95), records $same; whole $M: $(cat "$T/oneM.t") s against $(cat "$T/np2M.t") s"
  row "CPU decoders past start-up ($M - $N), mpirun -np 2 --bind-to none (dealt) | $r2 images/s | $ratio x (goal 0.95) | records $same | $ok"
  [ "${MPI_PHASES_DEALT_ONLY:-0}" = 1 ] || {
  r3=$(past "$(cat "$T/np2M-static.t")" "$(cat "$T/np2-static-cpu.t")")
  ratio=$(awk -v a="$r3" -v b="$r1" 'BEGIN{printf "%.2f", a / b}')
  same=DIFFER
  cmp -s "$T/oneM.out" "$T/np2M-static.out" && [ -s "$T/oneM.out" ] && same=identical
  say "CPU decoders past start-up ($M - $N), IMGSTAT_MPI_DEAL=static: mpirun -np 2 $r3 images/s: $ratio x, records $same; whole $M: $(cat "$T/np2M-static.t") s"
  row "CPU decoders past start-up ($M - $N), mpirun -np 2 --bind-to none, static | $r3 images/s | $ratio x (not a goal) | records $same | -"
  }
fi

# one rank per GPU (two GPUs or more): mpirun -np 2 --jpeg-decoder gpu
# (rank r on GPU r) against one rank on one GPU (mpirun -np 1), past the
# start-up on N and M photos; goal >= 1.8 x
if [ "$M" -gt "$N" ] && [ "$NGPU" -ge 2 ]; then
  D="--jpeg-decoder gpu --jpeg-check markers"
  DIRM=${BENCH_DIR_M:-/tmp/imgstat-bench-jpeg-$M}
  timed "g1N" mpirun -np 1 --bind-to none "$BIN" --mpi $D --dataset --json "$DIR"
  timed "g1M" mpirun -np 1 --bind-to none "$BIN" --mpi $D --dataset --json "$DIRM"
  timed "g2N" mpirun -np 2 --bind-to none "$BIN" --mpi $D --dataset --json "$DIR"
  timed "g2M" mpirun -np 2 --bind-to none "$BIN" --mpi $D --dataset --json "$DIRM"
  say "  one rank, one GPU, $M: $(phases g1M)"
  say "  two ranks, a GPU each, $M: $(phases g2M)"
  past() { awk -v n="$N" -v m="$M" -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", (m - n) / (a - b)}'; }
  r1=$(past "$(cat "$T/g1M.t")" "$(cat "$T/g1N.t")")
  r2=$(past "$(cat "$T/g2M.t")" "$(cat "$T/g2N.t")")
  ratio=$(awk -v a="$r2" -v b="$r1" 'BEGIN{printf "%.2f", a / b}')
  whole=$(awk -v a="$(cat "$T/g1M.t")" -v b="$(cat "$T/g2M.t")" 'BEGIN{printf "%.2f", a / b}')
  same=DIFFER
  cmp -s "$T/g1M.out" "$T/g2M.out" && cmp -s "$T/g1N.out" "$T/g2N.out" && [ -s "$T/g1M.out" ] && same=identical
  ok=PASS
  awk -v r="$ratio" 'BEGIN{exit !(r >= 1.8)}' && [ $same = identical ] || { ok=FAIL; fail=1; }
  say "nvJPEG, a rank a GPU, past start-up ($M - $N): one rank on one GPU $r1 images/s, mpirun -np 2 $r2 images/s: $ratio x (goal 1.8), records $same; whole $M: $(cat "$T/g1M.t") s against $(cat "$T/g2M.t") s ($whole x); $N: $(cat "$T/g1N.t") s against $(cat "$T/g2N.t") s"
  row "nvJPEG past start-up ($M - $N), mpirun -np 2 (a GPU a rank) / -np 1 (one GPU) | $r2 images/s | $ratio x (goal 1.8) | records $same | $ok"
fi

echo
say "== mpi_phases summary ($N JPEGs of 12 MP, $CORES cores, median of $RUNS; the ranks' lines in $OUT/mpi_phases.log)"
say "run | rate | vs one process | records | verdict"
while IFS= read -r line; do say "$line"; done <"$ROWS"
say "mpi_phases: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
