#!/bin/bash
# On the GPU host: the streaming JPEG stage's timings (--jpeg-decoder gpu;
# its checks: tests/gpu/checks/jpeg_stage.sh), in one call of at most ~8
# minutes, every run under a hard limit, lines appended to
# $OUT/jpeg_stage_bench.log as they come, a summary table last.
#   build     imgstat with CUDA and nvJPEG (build-jstage, shared with
#             tests/gpu/checks/jpeg_stage.sh)
#   bench     whole process, median of 3, files in the page cache, in one
#             run: 500 and 1,500 x 12 MP, 2,000 and 6,000 x 0.5 MP (q90):
#             --jpeg-decoder gpu --jpeg-check markers, the CPU decoders,
#             torchvision (bench/gpu/torch_jpeg_stats.py); then the
#             per-stage times (IMGSTAT_STAGE_TIMES=1) of both 500/6,000 runs
#             and the stage's shape (IMGSTAT_JPEG_LANES=3, IMGSTAT_JPEG_BATCH=64)
# Usage (top of the tree, .deps carried):
#   bench/gpu/jpeg_stage.sh [STEPS]     e.g. bench (default build,bench)
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
STEPS=${1:-build,bench}
L=$OUT/jpeg_stage_bench.log
: >"$L"
ROWS=$OUT/jpeg_stage_bench.rows
: >"$ROWS"
. bench/lib.sh
rm -f "$OUT/jstage-hung"
[ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
BD=$ROOT/build-jstage
BIN=$BD/imgstat
T0=$(date +%s)
log "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) x$(nvidia-smi -L 2>/dev/null | wc -l), $(nproc) cores, tree $(git rev-parse --short HEAD 2>/dev/null || echo "(no git)")"

if has build; then
  jstage_build "$OUT/jstage-build.log" 360 imgstat
fi
jstage_binary

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
      t=$(med3 120 python3 bench/gpu/torch_jpeg_stats.py $dir)
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

log "== summary ($(($(date +%s) - T0)) s)"
tee -a "$L" <"$ROWS"
log "== done $(date -u '+%T')"
