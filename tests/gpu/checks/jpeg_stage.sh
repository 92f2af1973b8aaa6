#!/bin/bash
# On the GPU host: the streaming JPEG stage (--jpeg-decoder gpu),
# in one call of at most ~8 minutes, every step under a hard limit, lines
# appended to $OUT/jpeg_stage.log as they come, a summary table last.
#   build     the tree with CUDA and nvJPEG (build-jstage)
#   test      test_stage (the stage, fake decoder), test_gpu_batch (batched
#             statistics bit-identical to the one-image kernel and to the
#             CPU on the same pixels, nvJPEG's planes included), test_jpeg_gpu
#   check     records of the new path against the CPU decoders (means within
#             0.01, the documented nvJPEG difference being <= 0.003), against
#             --verify (the CPU's statistics of the same nvJPEG pixels: every
#             integer field identical), --histogram likewise, --devices all
#             and --dataset identical to one device, --mpi (when mpirun is
#             there) identical to one rank, a damaged file named and skipped
#   bench     whole process, median of 3, files in the page cache, in one
#             run: 500 and 1,500 x 12 MP, 2,000 and 6,000 x 0.5 MP (q90):
#             --jpeg-decoder gpu --jpeg-check markers, the CPU decoders,
#             torchvision (tests/gpu/bench/torch_jpeg_stats.py); then the
#             per-stage times (IMGSTAT_STAGE_TIMES=1) of both 500/6,000 runs
#             and the stage's shape (IMGSTAT_JPEG_LANES=3, IMGSTAT_JPEG_BATCH=64)
#   sanitize  compute-sanitizer memcheck and racecheck on test_gpu_batch
#             (quick set), memcheck on imgstat's new path over 24 photos
#             (last: what a long run leaves out)
# Usage (top of the tree, .deps carried; .corpus for the corpus tests):
#   tests/gpu/checks/jpeg_stage.sh [STEPS]     e.g. build,test,check (default all)
# A failing step prints its error and the others still run.
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/lib.sh
lib_gpu_prelude
STEPS=${1:-build,test,check,bench,sanitize}
L=$OUT/jpeg_stage.log
: >"$L"
ROWS=$OUT/jpeg_stage.rows
: >"$ROWS"
. tests/gpu/jpeg_stage_lib.sh
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

if has bench; then
  make_sets
  have_torch=0
  python3 -c "import torch, torchvision; assert torch.cuda.is_available()" 2>/dev/null && have_torch=1
  declare -A MS
  for set in "$BIG 500 12MP" "/tmp/jstage-1500 1500 12MP" "/tmp/jstage-2000 2000 0.5MP" "$SMALL 6000 0.5MP"; do
    read -r dir n label <<<"$set"
    cat $dir/* >/dev/null
    t=$(med3 120 "$BIN" --json --jpeg-decoder gpu --jpeg-check markers $dir)
    MS[gpu$n]=$t
    log "bench $label x $n: --jpeg-decoder gpu --jpeg-check markers: $t ms, $(rate $n $t) images/s"
    [ $n = 1500 ] && continue # for the rate past start-up only
    t=$(med3 120 "$BIN" --json --jpeg-decoder cpu $dir)
    MS[cpu$n]=$t
    log "bench $label x $n: CPU decoders: $t ms, $(rate $n $t) images/s"
    if [ $have_torch = 1 ]; then
      t=$(med3 120 python3 tests/gpu/bench/torch_jpeg_stats.py $dir)
      MS[torch$n]=$t
      log "bench $label x $n: torchvision decode_jpeg(cuda) + torch stats: $t ms, $(rate $n $t) images/s"
    fi
    if [ "$(($(date +%s) - T0))" -gt 420 ]; then
      log "bench: past 7 minutes, the remaining sets are left out"
      break
    fi
  done
  # the stage's shape: three lanes a device, and 64-file batches
  for v in "IMGSTAT_JPEG_LANES=3" "IMGSTAT_JPEG_BATCH=64"; do
    for set in "$BIG 500 12MP" "$SMALL 6000 0.5MP"; do
      read -r dir n label <<<"$set"
      [ "$(($(date +%s) - T0))" -gt 380 ] && continue
      t=$(med3 120 env $v "$BIN" --json --jpeg-decoder gpu --jpeg-check markers $dir)
      log "bench $label x $n: $v --jpeg-decoder gpu --jpeg-check markers: $t ms, $(rate $n $t) images/s"
      row "bench x $n $v | $t ms | $(rate $n $t) /s"
    done
  done
  t=$(ms_of 120 "$BIN" --json --jpeg-decoder gpu $BIG)
  log "bench 12MP x 500: --jpeg-decoder gpu (full check), one run: $t ms, $(rate 500 $t) images/s"
  row "bench 12MP x 500 full check | $t ms | $(rate 500 $t) /s"
  for set in "$BIG 500" "$SMALL 6000"; do
    read -r dir n <<<"$set"
    IMGSTAT_STAGE_TIMES=1 timeout -k 5 120 "$BIN" --json --jpeg-decoder gpu --jpeg-check markers $dir \
      2>&1 >/dev/null | grep 'stage times' | sed "s|^|stage table $n: |" | tee -a "$L"
  done
  for n in 500 1500 2000 6000; do
    [ -n "${MS[gpu$n]:-}" ] || continue
    goal="-"
    [ $n = 500 ] && goal=">= 220/s"
    [ $n = 6000 ] && goal=">= 3500/s"
    row "bench x $n gpu markers | ${MS[gpu$n]} ms | $(rate $n ${MS[gpu$n]}) /s | goal $goal | CPU decoders $(rate $n ${MS[cpu$n]:-fail}) /s | torchvision $(rate $n ${MS[torch$n]:-fail}) /s"
  done
  # past start-up: the rate between the 500- and the 1,500-file runs, and
  # between the 2,000- and the 6,000-file runs
  jstage_past_startup
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
