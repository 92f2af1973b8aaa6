#!/bin/bash
# On the GPU host, the stage's fixed costs and batched histograms,
# in one call of at most ~8.5 minutes (every step under a hard limit, the
# later ones left out when time runs short), lines appended to
# $OUT/jpeg_stage_costs.log as they come, a summary table last.
#   build    imgstat, test_stage, test_gpu_batch, test_gpu (build-jstage, shared with
#            tests/gpu/checks/jpeg_stage.sh) and bench/gpu/nvjpeg_startup.cu
#   test     test_stage (fake decoder: the input's end, lanes closing by
#            themselves), test_gpu_batch (batched statistics and histograms
#            against the one-image kernels and the CPU on the same pixels),
#            test_gpu (every GPU partial against the CPU's, to the bit)
#   check    on the check set (20 x 12 MP, 200 x 0.5 MP, the corpus's
#            JPEGs, one damaged): records identical to --verify's (the
#            CPU's figures of the same nvJPEG pixels), with --histogram too
#            (batched counts and figures); identical across -j 1,
#            --devices all, 1 and 3 lanes, 7-file batches, lanes with
#            handles of their own (IMGSTAT_JPEG_OWN_HANDLES=1) and nvJPEG's
#            device memory from the stream-ordered pool
#            (IMGSTAT_JPEG_ASYNC_ALLOC=1)
#   startup  nvjpeg_startup (each phase of a bare program, the states made
#            one after another and two at once, stream-ordered memory, their
#            destruction), then with a decode of 220 x 12 MP and 2,560 x
#            0.5 MP on one state, two states of one handle on two threads,
#            two handles; imgstat on one small JPEG with the stage times
#   bench    whole process, files in the page cache, median of 3: 500 and
#            1,500 x 12 MP, 2,000 and 6,000 x 0.5 MP (--jpeg-check
#            markers); the rates past start-up; the stage-times line of
#            each (with the run's wall time: the process's exit is the
#            difference from "shutdown"); variants on 500 and 6,000: own
#            handles, stream-ordered nvJPEG memory, 1 and 3 lanes,
#            --histogram, 256-file batches (6,000 only); the CPU decoders
#            once
#   sweep    -j 4/8/16/32 against the default workers, the exit without
#            the device teardown against IMGSTAT_FULL_TEARDOWN=1
#   anchor   torchvision + torch on both folders, once each
#   sanitize compute-sanitizer memcheck (leaks too) and racecheck on
#            test_gpu_batch (quick set), memcheck on imgstat --histogram
#            over 24 photos
# Usage (top of the tree, .deps carried; .corpus for the corpus tests):
#   bench/gpu/jpeg_stage_costs.sh [STEPS]     e.g. build,test,check (default all)
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
STEPS=${1:-build,test,check,startup,bench,sanitize}
L=$OUT/jpeg_stage_costs.log
: >"$L"
ROWS=$OUT/jpeg_stage_costs.rows
: >"$ROWS"
BD=$ROOT/build-jstage
BIN=$BD/imgstat
. tests/gpu/checks/jpeg_stage_lib.sh
rm -f "$OUT/jstage-hung"
JSTAGE_LIMIT=60 # a check run on the check set takes seconds
[ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
log "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) x$(nvidia-smi -L 2>/dev/null | wc -l), $(nproc) cores"

STARTUP=$BD/nvjpeg_startup
if has build; then
  # the start-up probe meanwhile (nvJPEG from the toolkit, else the one
  # carried in .deps)
  NJ=${NVJPEG_ROOT:-/opt/imgstat-deps/nvjpeg}
  (timeout -k 5 200 nvcc -O2 -std=c++17 -o "$STARTUP" bench/gpu/nvjpeg_startup.cu \
    -lnvjpeg -lpthread >"$OUT/costs-startup-build.log" 2>&1 ||
    timeout -k 5 200 nvcc -O2 -std=c++17 -o "$STARTUP" bench/gpu/nvjpeg_startup.cu \
      -I"$NJ/include" -L"$NJ/lib" -l:libnvjpeg.so.13 -Xlinker -rpath="$NJ/lib" -lpthread \
      >>"$OUT/costs-startup-build.log" 2>&1) &
  probe=$!
  jstage_build "$OUT/costs-build.log" 330 imgstat test_stage test_gpu_batch test_gpu test_norm_gpu test_jpeg_gpu
  wait $probe
  log "start-up probe: $([ -x "$STARTUP" ] && echo built || tail -3 "$OUT/costs-startup-build.log")"
fi
jstage_binary

if has test; then
  run_test test_stage 60
  run_test test_gpu_batch 90
  run_test test_gpu 120 # every GPU partial = the CPU's, float order included
  run_test test_norm_gpu 120 # normalize and histograms on the device (wrapped and strided arrays too)
  run_test test_jpeg_gpu 120
fi

G="--json --jpeg-decoder gpu --jpeg-check markers"
if has check; then
  make_sets
  C=/tmp/jstage-check
  check_run gpu "$BIN" $G $C
  check_run verify "$BIN" --json --verify --jpeg-decoder gpu --jpeg-check markers $C
  check_run hist "$BIN" $G --histogram $C
  check_run histverify "$BIN" --json --verify --jpeg-decoder gpu --jpeg-check markers --histogram $C
  check_run histj1 "$BIN" $G --histogram -j 1 $C
  check_run histdev "$BIN" $G --histogram --devices all $C
  check_run own env IMGSTAT_JPEG_OWN_HANDLES=1 "$BIN" $G --histogram $C
  check_run lanes1 env IMGSTAT_JPEG_LANES=1 "$BIN" $G --histogram $C
  check_run lanes3 env IMGSTAT_JPEG_LANES=3 "$BIN" $G --histogram $C
  check_run batch7 env IMGSTAT_JPEG_BATCH=7 "$BIN" $G --histogram $C
  check_run asyncalloc env IMGSTAT_JPEG_ASYNC_ALLOC=1 "$BIN" $G --histogram $C
  # the flags before 2026-11-27 (strict, interpolated, pipelined)
  check_run oldflags env IMGSTAT_JPEG_FLAGS=36 "$BIN" $G --histogram $C
  verdict "stats vs --verify (same pixels, CPU figures)" "$(cmp_records x $OUT/jstage-verify.json $OUT/jstage-gpu.json exact)"
  verdict "--histogram (batched) vs --verify --histogram (CPU)" "$(cmp_records x $OUT/jstage-histverify.json $OUT/jstage-hist.json exact)"
  verdict "--histogram -j 1 vs default" "$(cmp_records x $OUT/jstage-hist.json $OUT/jstage-histj1.json exact)"
  verdict "--histogram --devices all vs one" "$(cmp_records x $OUT/jstage-hist.json $OUT/jstage-histdev.json exact)"
  verdict "own handles per lane vs shared" "$(cmp_records x $OUT/jstage-hist.json $OUT/jstage-own.json exact)"
  verdict "1 lane vs 2" "$(cmp_records x $OUT/jstage-hist.json $OUT/jstage-lanes1.json exact)"
  verdict "3 lanes vs 2" "$(cmp_records x $OUT/jstage-hist.json $OUT/jstage-lanes3.json exact)"
  verdict "7-file batches vs default" "$(cmp_records x $OUT/jstage-hist.json $OUT/jstage-batch7.json exact)"
  verdict "nvJPEG's memory stream-ordered vs default" "$(cmp_records x $OUT/jstage-hist.json $OUT/jstage-asyncalloc.json exact)"
  verdict "nvJPEG's flags now vs strict+pipelined (intact files: same pixels)" "$(cmp_records x $OUT/jstage-hist.json $OUT/jstage-oldflags.json exact)"
  n=$(grep -c zz_truncated $OUT/jstage-gpu.err)
  [ "$n" -ge 1 ] && [ "$(grep -c zz_truncated $OUT/jstage-gpu.json)" -eq 0 ] && r=OK || r="not named ($n)"
  verdict "damaged file named on stderr, no record" "$(grep zz_truncated $OUT/jstage-gpu.err | head -1 | head -c 150); $r"
  grep -q '"histogram"\|"median"' $OUT/jstage-hist.json && r=OK || r="no histogram fields"
  verdict "--histogram records carry the histogram figures" "$(head -c 300 $OUT/jstage-hist.json | tr '\n' ' ') ... $r"
fi

# stage_line NAME CMD...: one run with IMGSTAT_STAGE_TIMES=1, its wall time
# and its stage-times line
stage_line() {
  local name=$1
  shift
  hung && return
  local s=$(date +%s%N)
  IMGSTAT_STAGE_TIMES=1 timeout -k 5 60 "$@" >/dev/null 2>/tmp/costs-stage.err
  local rc=$?
  note_hang $rc "$*"
  local ms=$((($(date +%s%N) - s) / 1000000))
  log "stage $name: exit $rc, wall $ms ms; $(grep 'stage times' /tmp/costs-stage.err | sed 's/^imgstat: stage times: //')"
}

if has startup; then
  make_sets
  if [ -x "$STARTUP" ]; then
    # the phases alone, then with a decode of 220 x 12 MP in batches of 22
    # and of 2,560 x 0.5 MP in batches of 128 (one state; two states of one
    # handle on two threads; two handles)
    # 4-7: the handles with imgstat's flags (BITSTREAM_STRICT |
    # UPSAMPLING_WITH_INTERPOLATION), and 0.5 MP batches of 64 and 256
    for k in 1 2 3 4 5 6 7; do
      fl=0
      case $k in
        1) args="" ;;
        2) args="22 $(ls $BIG/*.jpg | head -220 | tr '\n' ' ')" ;;
        3) args="128 $(ls $SMALL/*.jpg | head -2560 | tr '\n' ' ')" ;;
        4) fl=36 args="22 $(ls $BIG/*.jpg | head -220 | tr '\n' ' ')" ;;
        5) fl=36 args="128 $(ls $SMALL/*.jpg | head -2560 | tr '\n' ' ')" ;;
        6) args="64 $(ls $SMALL/*.jpg | head -2560 | tr '\n' ' ')" ;;
        7) args="256 $(ls $SMALL/*.jpg | head -2560 | tr '\n' ' ')" ;;
      esac
      s=$(date +%s%N)
      # shellcheck disable=SC2086
      NVJPEG_PROBE_FLAGS=$fl timeout -k 5 40 "$STARTUP" $args >"$OUT/costs-startup-$k.log" 2>&1
      rc=$?
      ms=$((($(date +%s%N) - s) / 1000000))
      sed "s/^/startup $k: /" "$OUT/costs-startup-$k.log" | tee -a "$L"
      log "startup $k: exit $rc, whole process $ms ms"
      if [ $rc = 124 ] || [ $rc = 137 ]; then
        row "startup probe $k | HUNG (killed at 40 s): the probes after it left out"
        break
      fi
    done
  else
    log "startup: no probe"
  fi
  mkdir -p /tmp/costs-one && cp "$(ls $SMALL/*.jpg | head -1)" /tmp/costs-one/
  for k in 1 2 3; do stage_line "one 0.5 MP photo ($k)" "$BIN" $G /tmp/costs-one; done
fi

# variant_runs STEP VARIANT...: each variant ("default", "-j N", or
# VAR=VALUE in the environment) on both folders, median of 3, and one run's
# stage-times line
variant_runs() {
  local step=$1 set dir n v t
  shift
  make_sets
  for set in "$BIG 500" "$SMALL 6000"; do
    read -r dir n <<<"$set"
    cat $dir/* >/dev/null
    for v in "$@"; do
      [ "$(elapsed)" -gt 470 ] && { log "$step: past 470 s, $v on $n left out"; continue; }
      local cmd
      case $v in
        default) cmd=("$BIN" $G $dir) ;;
        -j*) cmd=("$BIN" $G $v $dir) ;;
        *) cmd=(env $v "$BIN" $G $dir) ;;
      esac
      t=$(med3 60 "${cmd[@]}")
      stage_line "$step $n $v" "${cmd[@]}"
      log "$step x $n $v: $t ms, $(rate $n $t) images/s"
      row "$step x $n $v | $t ms | $(rate $n $t) /s"
    done
  done
}

# anchor_runs STEP LIMIT: torchvision + torch (bench/gpu/torch_jpeg_stats.py,
# 16 reading threads) on both folders, one run each, while the call has run
# less than LIMIT seconds (the bench step times the CPU decoders)
anchor_runs() {
  local step=$1 limit=$2 set dir n t
  make_sets
  for set in "$BIG 500" "$SMALL 6000"; do
    read -r dir n <<<"$set"
    [ "$(elapsed)" -gt "$limit" ] && continue
    cat $dir/* >/dev/null
    t=$(ms_of 90 python3 bench/gpu/torch_jpeg_stats.py $dir)
    log "$step x $n torchvision + torch (one run): $t ms, $(rate $n $t) images/s; $(python3 -c 'import torchvision; print(torchvision.__version__)' 2>&1)"
    row "$step x $n torchvision+torch | $t ms | $(rate $n $t) /s"
  done
}

if has bench; then
  make_sets
  declare -A MS
  for set in "$BIG 500 12MP" "/tmp/jstage-1500 1500 12MP" "/tmp/jstage-2000 2000 0.5MP" "$SMALL 6000 0.5MP"; do
    read -r dir n label <<<"$set"
    cat $dir/* >/dev/null
    t=$(med3 60 "$BIN" $G $dir)
    MS[gpu$n]=$t
    log "bench $label x $n: --jpeg-decoder gpu --jpeg-check markers: $t ms, $(rate $n $t) images/s"
    stage_line "$label x $n" "$BIN" $G $dir
  done
  for n in 500 1500 2000 6000; do
    goal="-"
    [ $n = 500 ] && goal=">= 220/s"
    [ $n = 6000 ] && goal=">= 3500/s"
    row "bench x $n gpu markers | ${MS[gpu$n]} ms | $(rate $n ${MS[gpu$n]}) /s | goal $goal"
  done
  jstage_past_startup
  # variants: results identical (check), time only here
  for v in ${BENCH_VARIANTS:-"IMGSTAT_JPEG_OWN_HANDLES=1" "IMGSTAT_JPEG_ASYNC_ALLOC=1" "IMGSTAT_JPEG_LANES=3" \
    "IMGSTAT_JPEG_LANES=1" "--histogram" "IMGSTAT_JPEG_BATCH=256"} FULL; do
    for set in "$BIG 500" "$SMALL 6000"; do
      read -r dir n <<<"$set"
      # 12 MP batches are closed by pixels (22 files) before 128 files
      [ "$v" = IMGSTAT_JPEG_BATCH=256 ] && [ $n = 500 ] && continue
      if [ "$(elapsed)" -gt 340 ]; then
        log "bench: past 400 s, $v on $n left out"
        continue
      fi
      case $v in
        FULL) [ $n = 6000 ] && continue # the goal is on 12 MP
          t=$(med3 60 "$BIN" --json --jpeg-decoder gpu --jpeg-check full $dir) ;;
        --*) t=$(med3 60 "$BIN" $G $v $dir) ;;
        *) t=$(med3 60 env $v "$BIN" $G $dir) ;;
      esac
      log "bench x $n $v: $t ms, $(rate $n $t) images/s (default ${MS[gpu$n]} ms)"
      row "bench x $n $v | $t ms | $(rate $n $t) /s | default ${MS[gpu$n]} ms"
      case $v in
        --histogram) stage_line "x $n --histogram" "$BIN" $G --histogram $dir ;;
        IMGSTAT_JPEG_ASYNC_ALLOC=1 | IMGSTAT_JPEG_OWN_HANDLES=1)
          stage_line "x $n $v" env $v "$BIN" $G $dir ;;
      esac
    done
  done
  for set in "$BIG 500" "$SMALL 6000"; do
    read -r dir n <<<"$set"
    [ "$(elapsed)" -gt 380 ] && continue
    t=$(ms_of 60 "$BIN" --json --jpeg-decoder cpu $dir)
    log "bench x $n CPU decoders (one run): $t ms, $(rate $n $t) images/s"
    row "bench x $n CPU decoders | $t ms | $(rate $n $t) /s"
  done
fi

# sweep: the workers that read and check (-j) against the start-up and the
# rate, the exit without the device's teardown (the default) against the
# full teardown (IMGSTAT_FULL_TEARDOWN=1)
if has sweep; then
  variant_runs sweep default IMGSTAT_FULL_TEARDOWN=1 "-j 4" "-j 8" "-j 16" "-j 32"
fi

# anchor: torchvision + torch on both folders (one run each), the anchor of
# the bench step's figures in the same call
if has anchor; then
  anchor_runs anchor 480
fi

# split: nvJPEG's start-up phases (the stage-times line) with the decoder
# made beside the context (the default) and after it (IMGSTAT_JPEG_SERIAL=1)
if has split; then
  [ -d $SMALL ] || timeout -k 5 120 bash -c ". bench/lib.sh; bench_small_jpegs $SMALL 6000"
  cat $SMALL/* >/dev/null
  for k in 1 2 3; do
    stage_line "split default $k" "$BIN" $G $SMALL
    stage_line "split serial $k" env IMGSTAT_JPEG_SERIAL=1 "$BIN" $G $SMALL
  done
  for v in default IMGSTAT_JPEG_SERIAL=1; do
    t=$(med3 60 env $v "$BIN" $G $SMALL)
    log "split x 6000 $v: $t ms, $(rate 6000 $t) images/s"
    row "split x 6000 $v | $t ms | $(rate 6000 $t) /s"
  done
fi

# flags: imgstat's hardware handle with each flag set (IMGSTAT_JPEG_FLAGS,
# a measurement's knob) against the default, and -j 8 against the default
# workers (one per core)
if has flags; then
  variant_runs flags ${FLAG_SETS:-default IMGSTAT_JPEG_FLAGS=0 IMGSTAT_JPEG_FLAGS=4 IMGSTAT_JPEG_FLAGS=1 "-j 8"}
fi

# strict: what nvJPEG's own flags change on the damaged corpus
# (tests/io/jpeg_check_corpus.py, carried as .jcorpus): records and refusals
# with --jpeg-check none and markers, per flag set, against the default's
if has strict && [ -d .jcorpus ]; then
  for chk in none markers; do
    for v in default ${STRICT_SETS:-37 5 1}; do
      f=$OUT/jstage-strict-$chk-$v.json
      if [ $v = default ]; then
        timeout -k 5 60 "$BIN" --json --jpeg-decoder gpu --jpeg-check $chk .jcorpus >$f 2>/dev/null
      else
        IMGSTAT_JPEG_FLAGS=$v timeout -k 5 60 "$BIN" --json --jpeg-decoder gpu --jpeg-check $chk .jcorpus >$f 2>/dev/null
      fi
      r=$(python3 - $OUT/jstage-strict-$chk-default.json $f <<'PY'
import json, sys
def load(p):
    d = {}
    for line in open(p):
        if line.strip():
            r = json.loads(line)
            d[r["file"]] = r
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
only_a = sorted(set(a) - set(b)); only_b = sorted(set(b) - set(a))
same = [f for f in set(a) & set(b) if a[f]["stats"] == b[f]["stats"]]
dm = max([abs(p["mean"] - q["mean"]) for f in set(a) & set(b) for p, q in zip(a[f]["stats"], b[f]["stats"])] or [0])
print(f"{len(b)} records (default {len(a)}); only with default {len(only_a)} {[x.split('/')[-1] for x in only_a[:4]]}; "
      f"only with this {len(only_b)} {[x.split('/')[-1] for x in only_b[:4]]}; same figures {len(same)}; largest |dmean| {dm:.4f}")
PY
)
      log "strict $chk flags $v: $r"
      row "strict $chk flags $v | $r"
    done
  done
fi

if has sanitize; then
  make_sets
  if [ "$(elapsed)" -gt 400 ] || hung; then
    row "sanitizer memcheck imgstat --histogram | not run (time, or a run hung)"
  else
    jstage_sanitize_cli "--histogram" $G --histogram
  fi
  for tool in memcheck racecheck; do
    if [ "$(elapsed)" -gt 450 ]; then
      row "sanitizer $tool test_gpu_batch | not run (time)"
      continue
    fi
    jstage_sanitize_test $tool $((500 - $(elapsed)))
  done
fi

hung && row "HUNG: $(cat "$OUT/jstage-hung") (the runs after it were left out)"
log "== summary ($(elapsed) s)"
tee -a "$L" <"$ROWS"
log "== done $(date -u '+%T')"
