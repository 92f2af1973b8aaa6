#!/bin/bash
# Every device started at once (--devices, --jpeg-decoder gpu), on the GPU
# host. Prints a line a check, a PASS/FAIL table last; every run under
# timeout.
#  (a) any GPU count: the records of the samples and of a folder of JPEGs
#      from --devices 0 are the CPU's (--backend gpu: bit for bit, the
#      "backend" field dropped) and, with nvJPEG, byte-identical from
#      --devices 0, --devices all and the devices started one after the
#      other (IMGSTAT_DEVICES_SERIAL=1); IMGSTAT_STAGE_TIMES prints each
#      device's line; a device that is not there is named and nothing is
#      left half-made (the run ends with its status, not a crash).
#  (b) two GPUs or more: N (1,800) generated 12 MP JPEGs, one GPU against
#      --devices all side by side, medians of RUNS: the whole process on N,
#      past start-up ((N - 600) / (t(N) - t(600))), each device's ready time
#      and the spread of their first batches; the ratios against the goals
#      (whole >= 1.7 x, past start-up >= 1.9 x with 2 GPUs, >= 3.6 x with 4
#      or more; first batches within 0.1 s of each other). Skipped, with a
#      line, on one GPU.
# Usage (top of the tree, .deps and .corpus carried; about 4 min on one
# H200 with the build, (b) about 4 more):
#   tests/gpu/checks/devices_start.sh [IMGSTAT] [N] [RUNS]
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
. bench/lib.sh
N=${2:-1800}
RUNS=${3:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ROWS=$T/rows
: >"$ROWS"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
say "== devices_start $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) x$NGPU, $(nproc) cores"
if [ "$NGPU" -lt 1 ]; then
  say "devices_start: no GPU: skipped"
  exit 77
fi

# ---- the build: IMGSTAT, else build-verify/imgstat (with CUDA) ------------------
BIN=${1:-$ROOT/build-verify/imgstat}
if [ ! -x "$BIN" ]; then
  t=$(date +%s)
  { timeout -k 5 120 cmake -S . -B build-verify -DIMGSTAT_ENABLE_CUDA=ON \
      -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" &&
    timeout -k 5 420 cmake --build build-verify -j"$(nproc)" --target imgstat; } \
    >"$OUT/devices_start-build.log" 2>&1
  say "build: rc=$? ($(($(date +%s) - t)) s)"
  BIN=$ROOT/build-verify/imgstat
fi
[ -x "$BIN" ] || { say "devices_start | build | FAIL"; exit 1; }
say "$("$BIN" --version | sed -n 2p)"

fail=0
verdict() { # WHAT OK DETAIL: a PASS/FAIL line and row
  local ok=PASS
  [ "$2" = 1 ] || { ok=FAIL; fail=1; }
  say "$1: $ok ($3)"
  row "$1 | $3 | $ok"
}
row() { echo "$*" >>"$ROWS"; }
# records IN OUT: the JSON records of IN with the "backend" field dropped
records() {
  python3 - "$1" "$2" <<'PY'
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        r.pop("backend", None)
        out.write(json.dumps(r, sort_keys=True) + "\n")
PY
}

# ---- (a) one GPU is enough -------------------------------------------------------
SMALLDIR=$T/jpegs
timeout -k 5 120 bash -c ". bench/lib.sh; bench_small_jpegs '$SMALLDIR' 300" ||
  say "making $SMALLDIR failed"
cp -r "$ROOT/samples" "$T/samples"
for d in samples jpegs; do
  IN=$T/$d
  timeout -k 5 120 "$BIN" --json --backend cpu "$IN" >"$T/cpu-$d.json" 2>"$T/cpu-$d.err"
  timeout -k 5 120 "$BIN" --json --backend gpu --devices 0 "$IN" >"$T/gpu-$d.json" 2>"$T/gpu-$d.err"
  records "$T/cpu-$d.json" "$T/cpu-$d.rec"
  records "$T/gpu-$d.json" "$T/gpu-$d.rec"
  ok=0
  cmp -s "$T/cpu-$d.rec" "$T/gpu-$d.rec" && [ -s "$T/cpu-$d.rec" ] && ok=1
  verdict "(a) $d: --backend gpu --devices 0 = --backend cpu" $ok \
    "$(wc -l <"$T/cpu-$d.rec") records, backend dropped"
  G="--json --jpeg-decoder gpu --jpeg-check markers --dataset"
  IMGSTAT_STAGE_TIMES=1 timeout -k 5 120 "$BIN" $G --devices 0 "$IN" >"$T/j0-$d.json" 2>"$T/j0-$d.err"
  rc0=$?
  IMGSTAT_STAGE_TIMES=1 timeout -k 5 120 "$BIN" $G --devices all "$IN" >"$T/jall-$d.json" 2>"$T/jall-$d.err"
  rcall=$?
  IMGSTAT_DEVICES_SERIAL=1 timeout -k 5 120 "$BIN" $G --devices all "$IN" >"$T/jser-$d.json" 2>"$T/jser-$d.err"
  ok=0
  cmp -s "$T/j0-$d.json" "$T/jall-$d.json" && cmp -s "$T/j0-$d.json" "$T/jser-$d.json" &&
    [ -s "$T/j0-$d.json" ] && [ "$rc0" = "$rcall" ] && ok=1
  verdict "(a) $d: nvJPEG --devices 0 = --devices all = started one after the other" $ok \
    "$(wc -l <"$T/j0-$d.json") lines, exit $rc0/$rcall"
  lines=$(grep -c '^imgstat: device times: ' "$T/jall-$d.err")
  ok=0
  [ "$lines" -eq 1 ] && [ "$(grep '^imgstat: device times: ' "$T/jall-$d.err" | grep -o ' device [0-9]* start' | wc -l)" -eq "$NGPU" ] && ok=1
  verdict "(a) $d: the device times line, a device each" $ok \
    "$(grep '^imgstat: device times: ' "$T/jall-$d.err" | cut -c1-300)"
done
# a device that is not there: named, the run's status, no crash (the slots
# of the devices that started are destroyed; a sanitizer build would say
# more)
timeout -k 5 60 "$BIN" --jpeg-decoder gpu --devices "0,$NGPU" "$T/jpegs" >/dev/null 2>"$T/nodev.err"
rc=$?
ok=0
[ $rc -ge 1 ] && [ $rc -lt 124 ] && grep -q "device $NGPU: " "$T/nodev.err" && ok=1
verdict "(a) --devices 0,$NGPU (absent): named" $ok "exit $rc: $(grep -m1 "device $NGPU" "$T/nodev.err" | cut -c1-160)"

# ---- (b) two GPUs or more ------------------------------------------------------------
if [ "$NGPU" -lt 2 ]; then
  say "(b) one GPU against --devices all: skipped: $NGPU GPU on this host (needs 2 or more)"
  row "(b) one GPU against --devices all | skipped: $NGPU GPU | -"
else
  DIR=${BENCH_DIR:-/tmp/imgstat-bench-jpeg-$N}
  t=$(date +%s)
  timeout -k 5 300 bash -c ". bench/lib.sh; bench_jpegs '$DIR' '$N'" ||
    { say "(b) making $N JPEGs failed"; exit 1; }
  cat "$DIR"/*.jpg >/dev/null
  ls "$DIR"/*.jpg | head -600 >"$T/first600"
  ls "$DIR"/*.jpg >"$T/all"
  say "(b) folder: $N JPEGs of 12 MP, $(du -sm "$DIR" | cut -f1) MB ($(($(date +%s) - t)) s)"
  G="--json --jpeg-decoder gpu --jpeg-check markers"
  # timed NAME LIST ARGS...: RUNS runs over the list, one GPU and all of
  # them side by side (alternating), the medians in $T/NAME.t, the last
  # run's stdout and stderr kept
  timed() {
    local name=$1 list=$2 k s
    shift 2
    : >"$T/$name.times"
    for k in $(seq "$RUNS"); do
      s=$(date +%s.%N)
      IMGSTAT_STAGE_TIMES=1 timeout -k 5 300 "$BIN" $G "$@" --files-from "$list" \
        >"$T/$name.out" 2>"$T/$name.err"
      echo $? >"$T/$name.rc"
      awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.3f\n", e - s}' >>"$T/$name.times"
    done
    median <"$T/$name.times" >"$T/$name.t"
  }
  for k in $(seq "$RUNS"); do
    RUNS=1 timed "one600.$k" "$T/first600" --devices 0
    RUNS=1 timed "all600.$k" "$T/first600" --devices all
    RUNS=1 timed "one$N.$k" "$T/all" --devices 0
    RUNS=1 timed "all$N.$k" "$T/all" --devices all
  done
  for n in one600 all600 "one$N" "all$N"; do
    cat "$T/$n".*.t | median >"$T/$n.t"
    cp "$T/$n.$RUNS.out" "$T/$n.out"
    cp "$T/$n.$RUNS.err" "$T/$n.err"
  done
  t1=$(cat "$T/one$N.t") ta=$(cat "$T/all$N.t")
  t1s=$(cat "$T/one600.t") tas=$(cat "$T/all600.t")
  whole=$(awk -v a="$t1" -v b="$ta" 'BEGIN{printf "%.2f", a / b}')
  r1=$(awk -v n="$N" -v a="$t1" -v b="$t1s" 'BEGIN{printf "%.1f", (n - 600) / (a - b)}')
  ra=$(awk -v n="$N" -v a="$ta" -v b="$tas" 'BEGIN{printf "%.1f", (n - 600) / (a - b)}')
  past=$(awk -v a="$ra" -v b="$r1" 'BEGIN{printf "%.2f", a / b}')
  say "(b) one GPU: $t1s s (600), $t1 s ($N): $(awk -v n="$N" -v t="$t1" 'BEGIN{printf "%.1f", n / t}') images/s whole, $r1 images/s past start-up"
  say "(b) --devices all ($NGPU): $tas s (600), $ta s ($N): $(awk -v n="$N" -v t="$ta" 'BEGIN{printf "%.1f", n / t}') images/s whole, $ra images/s past start-up"
  ok=0
  cmp -s "$T/one$N.out" "$T/all$N.out" && [ -s "$T/one$N.out" ] && ok=1
  verdict "(b) records of $N, one GPU = --devices all" $ok "$(wc -l <"$T/one$N.out") records"
  ok=0
  awk -v r="$whole" 'BEGIN{exit !(r >= 1.7)}' && ok=1
  verdict "(b) whole process, $N photos, --devices all / one GPU" $ok "$whole x (goal 1.7)"
  goal=1.9
  [ "$NGPU" -ge 4 ] && goal=3.6
  ok=0
  awk -v r="$past" -v g="$goal" 'BEGIN{exit !(r >= g)}' && ok=1
  verdict "(b) past start-up ($N - 600), --devices all ($NGPU) / one GPU" $ok "$past x (goal $goal)"
  for n in "all$N" all600; do
    line=$(grep '^imgstat: device times: ' "$T/$n.err")
    say "  $n: $line"
    spread=$(echo "$line" | sed -n 's/.*first-submit spread \([0-9.]*\).*/\1/p')
    lspread=$(echo "$line" | sed -n 's/.*last-batch spread \([0-9.]*\).*/\1/p')
    ok=0
    [ -n "$spread" ] && awk -v s="$spread" 'BEGIN{exit !(s <= 0.1)}' && ok=1
    verdict "(b) $n: first batches of the devices within 0.1 s" $ok \
      "first-submit spread $spread s, last-batch spread $lspread s; ready: $(echo "$line" | grep -o 'device [0-9]* start [0-9.]* ready [0-9.]*' | tr '\n' ';')"
  done
  # the start-up as it was (one device after the other), for the record
  s=$(date +%s.%N)
  IMGSTAT_DEVICES_SERIAL=1 IMGSTAT_STAGE_TIMES=1 timeout -k 5 300 "$BIN" $G --devices all \
    --files-from "$T/first600" >"$T/serial.out" 2>"$T/serial.err"
  t=$(awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.3f", e - s}')
  say "(b) IMGSTAT_DEVICES_SERIAL=1 --devices all, 600 (one run, not a goal): $t s against $tas s; $(grep '^imgstat: device times: ' "$T/serial.err" | grep -o 'first-submit spread [0-9.]*')"
  row "(b) devices started one after the other, 600 | $t s against $tas s together | -"
fi

echo
say "== devices_start summary"
say "check | figures | verdict"
while IFS= read -r line; do say "$line"; done <"$ROWS"
say "devices_start: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
