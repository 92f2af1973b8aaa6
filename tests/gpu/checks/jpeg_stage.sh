#!/bin/bash
# On the GPU host: the streaming JPEG stage (--jpeg-decoder gpu) checked
# (its timings: bench/gpu/jpeg_stage.sh),
# in one call of at most ~8 minutes, every step under a hard limit, lines
# appended to $OUT/jpeg_stage.log as they come, a summary table last.
#   build     the tree with CUDA and nvJPEG (build-jstage, shared with
#             bench/gpu/jpeg_stage.sh)
#   test      test_stage (the stage, fake decoder), test_gpu_batch (batched
#             statistics bit-identical to the one-image kernel and to the
#             CPU on the same pixels, nvJPEG's planes included), test_jpeg_gpu
#   check     records of the new path against the CPU decoders (means within
#             0.01, the documented nvJPEG difference being <= 0.003), against
#             --verify (the CPU's statistics of the same nvJPEG pixels: every
#             integer field identical), --histogram likewise, --devices all
#             and --dataset identical to one device, --mpi (when mpirun is
#             there) identical to one rank, a damaged file named and skipped
#   sanitize  compute-sanitizer memcheck and racecheck on test_gpu_batch
#             (quick set), memcheck on imgstat's new path over 24 photos
#             (last: what a long run leaves out)
# Usage (top of the tree, .deps carried; .corpus for the corpus tests):
#   tests/gpu/checks/jpeg_stage.sh [STEPS]     e.g. build,test,check (default all)
# A failing step prints its error and the others still run.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
STEPS=${1:-build,test,check,sanitize}
L=$OUT/jpeg_stage.log
: >"$L"
ROWS=$OUT/jpeg_stage.rows
: >"$ROWS"
. tests/gpu/checks/jpeg_stage_lib.sh
rm -f "$OUT/jstage-hung"
[ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
BD=$ROOT/build-jstage
BIN=$BD/imgstat
T0=$(date +%s)
log "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) x$(nvidia-smi -L 2>/dev/null | wc -l), $(nproc) cores, tree $(git rev-parse --short HEAD 2>/dev/null || echo "(no git)")"

if has build; then
  jstage_build "$OUT/jstage-build.log" 360 imgstat test_stage test_gpu_batch test_jpeg_gpu
fi
jstage_binary

if has test; then
  run_test test_stage 60
  run_test test_gpu_batch 120
  run_test test_jpeg_gpu 120
fi

if has check; then
  make_sets
  C=/tmp/jstage-check
  G="--json --jpeg-decoder gpu --jpeg-check markers"
  check_run cpu "$BIN" --json --backend cpu --jpeg-decoder cpu $C
  check_run gpu "$BIN" $G $C
  check_run gpufull "$BIN" --json --jpeg-decoder gpu $C
  check_run verify "$BIN" --json --verify --jpeg-decoder gpu --jpeg-check markers $C
  check_run devall "$BIN" $G --devices all $C
  check_run j1 "$BIN" $G -j 1 $C
  check_run hist "$BIN" $G --histogram $C
  check_run histverify "$BIN" --json --verify --jpeg-decoder gpu --jpeg-check markers --histogram $C
  check_run ds1 "$BIN" $G --dataset-only $C
  check_run dsall "$BIN" $G --dataset-only --devices all $C
  verdict "new path vs CPU decoders (means)" "$(cmp_records x $OUT/jstage-cpu.json $OUT/jstage-gpu.json mean)"
  verdict "full check vs CPU decoders (means)" "$(cmp_records x $OUT/jstage-cpu.json $OUT/jstage-gpufull.json mean)"
  verdict "new path vs --verify (same pixels, CPU stats)" "$(cmp_records x $OUT/jstage-verify.json $OUT/jstage-gpu.json exact)"
  verdict "--devices all vs one" "$(cmp_records x $OUT/jstage-gpu.json $OUT/jstage-devall.json exact)"
  verdict "-j 1 vs default" "$(cmp_records x $OUT/jstage-gpu.json $OUT/jstage-j1.json exact)"
  verdict "--histogram vs --verify --histogram" "$(cmp_records x $OUT/jstage-histverify.json $OUT/jstage-hist.json exact)"
  cmp -s $OUT/jstage-ds1.json $OUT/jstage-dsall.json && r=OK || r="DIFFERS"
  verdict "--dataset-only, --devices all vs one" "identical: $r"
  n=$(grep -c zz_truncated $OUT/jstage-gpu.err)
  [ "$n" -ge 1 ] && [ "$(grep -c zz_truncated $OUT/jstage-gpu.json)" -eq 0 ] && r=OK || r="not named ($n)"
  verdict "damaged file named on stderr, no record" "$(grep zz_truncated $OUT/jstage-gpu.err | head -1 | head -c 150); $r"
  # CSV and the decoder column
  timeout -k 5 60 "$BIN" --csv --jpeg-decoder gpu --jpeg-check markers $C 2>/dev/null | head -2 >"$OUT/jstage-csv.txt"
  log "check CSV: $(head -1 $OUT/jstage-csv.txt | grep -o 'decoder.*') / $(sed -n 2p $OUT/jstage-csv.txt | head -c 200)"
  if command -v mpirun >/dev/null; then
    timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -n 2 "$BIN" --mpi $G $C \
      >"$OUT/jstage-mpi.json" 2>"$OUT/jstage-mpi.err"
    rc=$?
    log "check run mpi (2 ranks): exit $rc; $(grep -v zz_truncated $OUT/jstage-mpi.err | head -c 200 | tr '\n' ' ')"
    if grep -q "without MPI" $OUT/jstage-mpi.err; then
      log "check --mpi: not run (this build has no MPI)"
    else
      verdict "--mpi 2 ranks vs one" "$(cmp_records x $OUT/jstage-gpu.json $OUT/jstage-mpi.json exact)"
    fi
  else
    log "check --mpi: not run (no mpirun)"
  fi
fi

if has sanitize; then
  # the new path first (the batched kernel's own run follows, time allowing)
  make_sets
  if [ "$(($(date +%s) - T0))" -gt 460 ]; then
    log "sanitize: past 7.7 minutes, the new path's memcheck left out"
    row "sanitizer memcheck imgstat new path | not run (time)"
  else
    jstage_sanitize_cli "new path" --json --jpeg-decoder gpu --jpeg-check markers
  fi
  for tool in memcheck racecheck; do
    if [ "$(($(date +%s) - T0))" -gt 480 ]; then
      log "sanitize: past 8 minutes, $tool of test_gpu_batch left out"
      row "sanitizer $tool test_gpu_batch | not run (time)"
      continue
    fi
    jstage_sanitize_test $tool 100
  done
fi

log "== summary ($(($(date +%s) - T0)) s)"
tee -a "$L" <"$ROWS"
log "== done $(date -u '+%T')"
