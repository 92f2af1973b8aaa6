# Helpers of the JPEG stage's GPU scripts (tests/gpu/checks/jpeg_stage.sh,
# tests/gpu/bench/jpeg_stage_costs.sh), sourced after lib_gpu_prelude with L (the log),
# ROWS (the summary's lines), STEPS, BD (the build folder) and BIN set.
# shellcheck shell=bash
log() { echo "$*" | tee -a "$L"; }
has() { case ",$STEPS," in *",$1,"*) return 0 ;; esac; return 1; }
row() { echo "$*" >>"$ROWS"; } # the summary table's lines

# run_test NAME LIMIT: a CUnit executable, its summary lines
run_test() {
  local t=$(date +%s)
  timeout -k 5 "$2" "$BD/tests/$1" >"$OUT/jstage-$1.log" 2>&1
  local rc=$?
  log "test $1: rc=$rc ($(($(date +%s) - t)) s)"
  grep -E "^device|Test:.*FAILED|DIFFERS|DIFFER FROM|asserts|tests |skipped|not run|batched:|kernel:" "$OUT/jstage-$1.log" | head -20 | tee -a "$L"
  case $rc in
    0) row "test $1 | PASS" ;;
    77) row "test $1 | SKIPPED ($(grep -m1 skipped "$OUT/jstage-$1.log"))" ;;
    *) row "test $1 | FAIL (rc $rc)" ;;
  esac
}
# the folders: 500 x 12 MP and 6,000 x 0.5 MP, generated once; the 1,500
# and 2,000 sets are links (the 1,500 cycle over the 500: same decode work)
BIG=/tmp/imgstat-jstage-big
SMALL=/tmp/imgstat-jstage-small
make_sets() {
  [ -d $BIG ] && [ -d $SMALL ] && [ -d /tmp/jstage-2000 ] && return 0
  local t=$(date +%s)
  timeout -k 5 150 bash -c ". tests/gpu/bench_lib.sh; bench_jpegs $BIG 500" || log "making $BIG failed"
  timeout -k 5 120 bash -c ". tests/gpu/bench_lib.sh; bench_small_jpegs $SMALL 6000" || log "making $SMALL failed"
  rm -rf /tmp/jstage-1500 /tmp/jstage-2000 /tmp/jstage-check && mkdir -p /tmp/jstage-1500 /tmp/jstage-2000 /tmp/jstage-check
  for r in a b c; do for f in $BIG/*.jpg; do ln -s "$f" /tmp/jstage-1500/$r$(basename "$f"); done; done
  ls $SMALL/*.jpg | head -2000 | xargs -I{} ln -s {} /tmp/jstage-2000/
  # the check set: 20 large, 200 small, the corpus's JPEGs, one damaged
  ls $BIG/*.jpg | head -20 | xargs -I{} cp {} /tmp/jstage-check/
  ls $SMALL/*.jpg | head -200 | xargs -I{} cp {} /tmp/jstage-check/
  [ -d .corpus/photos ] && cp .corpus/photos/*.jpg /tmp/jstage-check/ 2>/dev/null
  head -c 60000 $BIG/img0000.jpg >/tmp/jstage-check/zz_truncated.jpg
  cat $BIG/* $SMALL/* >/dev/null
  log "sets: $(ls $BIG | wc -l) x 12 MP ($(du -sm $BIG | cut -f1) MB), $(ls $SMALL | wc -l) x 0.5 MP ($(du -sm $SMALL | cut -f1) MB), check set $(ls /tmp/jstage-check | wc -l) files ($(($(date +%s) - t)) s)"
}

# cmp_records NAME A B MODE: compares two JSON-lines outputs (python)
#   MODE mean: same files in order, |dmean| <= 0.01, decoder keys listed
#   MODE exact: identical records but for the keys backend and decoder
cmp_records() {
  python3 - "$2" "$3" "$4" <<'PY' 2>&1
import json, sys
def load(p):
    out = []
    for line in open(p):
        line = line.strip()
        if line:
            out.append(json.loads(line))
    return out
a, b, mode = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
bad = []
if [r.get("file") for r in a] != [r.get("file") for r in b]:
    bad.append(f"files differ: {len(a)} vs {len(b)} records")
dec = {}
worst = 0.0
for x, y in zip(a, b):
    dec[y.get("decoder", "-")] = dec.get(y.get("decoder", "-"), 0) + 1
    if ("error" in x) != ("error" in y):
        bad.append(f"{x.get('file')}: error on one side only")
        continue
    if "error" in x:
        continue
    if mode == "exact":
        xx = {k: v for k, v in x.items() if k not in ("backend", "decoder")}
        yy = {k: v for k, v in y.items() if k not in ("backend", "decoder")}
        if xx != yy:
            bad.append(f"{x['file']}: records differ")
    else:
        for p, q in zip(x["stats"], y["stats"]):
            if p["count"] != q["count"]:
                bad.append(f"{x['file']}: counts differ")
            d = abs(p["mean"] - q["mean"])
            worst = max(worst, d)
            if d > 0.01:
                bad.append(f"{x['file']} {p['channel']}: |dmean| {d:.4f}")
if not any("error" not in y for y in b):
    bad.append("no record with figures")
print(f"{len(b)} records, decoders {dec}, largest |dmean| {worst:.4f}; "
      + ("OK" if not bad else f"{len(bad)} problems: " + "; ".join(bad[:5])))
PY
}

# check NAME CMD...: runs an imgstat command on the check set
# (JSTAGE_LIMIT seconds, default 120); a run that hangs marks the script hung
check_run() {
  local name=$1
  shift
  : >"$OUT/jstage-$name.json"
  if hung; then
    log "check run $name: not run (an earlier run hung)"
    return
  fi
  timeout -k 5 "${JSTAGE_LIMIT:-120}" "$@" >"$OUT/jstage-$name.json" 2>"$OUT/jstage-$name.err"
  local rc=$?
  note_hang $rc "$*"
  log "check run $name: exit $rc, $(wc -l <"$OUT/jstage-$name.json") records; stderr: $(grep -v 'stage times' "$OUT/jstage-$name.err" | head -c 300 | tr '\n' ' ')"
}

# A run killed by its time limit (exit 124 or 137) marks the script hung:
# the runs after it are left out (hung), so that one hang cannot spend the
# whole device call; the mark is a file, seen from subshells too.
note_hang() {
  case $1 in 124 | 137)
    echo "$2" >"$OUT/jstage-hung"
    log "HUNG (killed at its time limit): $2" ;;
  esac
}
hung() { [ -f "$OUT/jstage-hung" ]; }
verdict() { # NAME RESULT-LINE
  log "check $1: $2"
  case "$2" in *" OK") row "check $1 | PASS" ;; *) row "check $1 | FAIL: $(echo "$2" | head -c 120)" ;; esac
}

median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
# ms_of LIMIT CMD...: the wall milliseconds of one run ("fail" when it
# failed: its stderr goes to the log)
ms_of() {
  local limit=$1
  shift
  if hung; then
    echo fail
    return
  fi
  local s=$(date +%s%N)
  timeout -k 5 "$limit" "$@" >/dev/null 2>/tmp/jstage-run.err
  local rc=$?
  local ms=$((($(date +%s%N) - s) / 1000000))
  note_hang $rc "$*" >/dev/null
  if [ $rc -ne 0 ]; then
    echo "run failed (exit $rc): $* :: $(head -c 300 /tmp/jstage-run.err | tr '\n' ' ')" >>"$L"
    echo fail
  else
    echo $ms
  fi
}
med3() { # stops at the first failure
  local r=$(for _ in 1 2 3; do
    x=$(ms_of "$@")
    echo "$x"
    [ "$x" = fail ] && break
  done)
  if echo "$r" | grep -q fail; then echo fail; else echo "$r" | median; fi
}
rate() { awk -v n=$1 -v t=$2 'BEGIN{ if (t == "fail") print "-"; else printf "%.0f", n*1000/t }'; }


# jstage_build LOG LIMIT TARGET...: configures $BD once and builds the targets
# (BUILD_RC: the build's exit status); a failure's errors go to the log.
jstage_build() {
  local blog=$1 limit=$2
  shift 2
  local t=$(date +%s)
  [ -f "$BD/CMakeCache.txt" ] || timeout -k 5 120 cmake -S . -B "$BD" -DIMGSTAT_ENABLE_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$blog" 2>&1
  timeout -k 5 "$limit" cmake --build "$BD" -j"$(nproc)" --target "$@" >>"$blog" 2>&1
  BUILD_RC=$?
  log "build: rc=$BUILD_RC ($(($(date +%s) - t)) s); $(grep -E 'nvJPEG|TurboJPEG|MPI' "$blog" | tr '\n' ' ' | head -c 300)"
  if [ $BUILD_RC -ne 0 ]; then
    grep -E "error|Error" "$blog" | head -20 | tee -a "$L"
    row "build | FAILED (rc $BUILD_RC): nothing else can run"
  fi
}

# jstage_binary: stops the script when $BIN is not there, else names it.
jstage_binary() {
  if [ ! -x "$BIN" ]; then
    log "no $BIN: stop"
    exit 1
  fi
  log "binary: $("$BIN" --version 2>&1 | tr '\n' ' ' | head -c 300)"
}

# jstage_sanitize_test TOOL LIMIT: compute-sanitizer TOOL (memcheck with the
# leak check) on test_gpu_batch's quick set, its summary lines.
jstage_sanitize_test() {
  local tool=$1 t=$(date +%s) extra=""
  [ "$tool" = memcheck ] && extra="--leak-check full"
  IMGSTAT_TEST_QUICK=1 timeout -k 5 "$2" compute-sanitizer --tool "$tool" $extra \
    --error-exitcode 99 "$BD/tests/test_gpu_batch" >"$OUT/jstage-sanitizer-$tool.log" 2>&1
  local rc=$?
  truncate -s "<8M" "$OUT/jstage-sanitizer-$tool.log"
  log "compute-sanitizer $tool test_gpu_batch: rc=$rc ($(($(date +%s) - t)) s)"
  grep -E "ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|Test:.*FAILED|Invalid|Uninitialized" \
    "$OUT/jstage-sanitizer-$tool.log" | sort | uniq -c | head -8 | tee -a "$L"
  if [ $rc -eq 0 ]; then row "sanitizer $tool test_gpu_batch | PASS"; else row "sanitizer $tool test_gpu_batch | FAIL (rc $rc)"; fi
}

# jstage_past_startup: from the medians MS[gpuN] (ms), the rate between the
# 500- and 1,500-file runs and between the 2,000- and 6,000-file runs, and
# the fixed cost (start-up and teardown) that rate leaves in the smaller run.
jstage_past_startup() {
  local p a b goal r f
  for p in "500 1500 >=400" "2000 6000 >=10000"; do
    read -r a b goal <<<"$p"
    if [ -n "${MS[gpu$a]:-}" ] && [ -n "${MS[gpu$b]:-}" ] && [ "${MS[gpu$a]}" != fail ] && [ "${MS[gpu$b]}" != fail ]; then
      r=$(awk -v a=$a -v b=$b -v ta=${MS[gpu$a]} -v tb=${MS[gpu$b]} 'BEGIN{ if (tb > ta) printf "%.0f", (b-a)*1000/(tb-ta); else print "-" }')
      f=$(awk -v a=$a -v r=$r -v ta=${MS[gpu$a]} 'BEGIN{ if (r > 0) printf "%.0f", ta - a*1000/r; else print "-" }')
      log "bench past start-up ($a -> $b files): $r images/s (goal $goal); fixed cost $f ms"
      row "bench past start-up $a->$b | $r /s | goal $goal | fixed cost $f ms"
    fi
  done
}

# jstage_sanitize_cli NAME ARG...: compute-sanitizer memcheck on imgstat ARG...
# over 24 photos (4 x 12 MP, 20 x 0.5 MP), its summary lines.
jstage_sanitize_cli() {
  local name=$1 t=$(date +%s)
  shift
  mkdir -p /tmp/jstage-san && ls $BIG/*.jpg | head -4 | xargs -I{} cp {} /tmp/jstage-san/ &&
    ls $SMALL/*.jpg | head -20 | xargs -I{} cp {} /tmp/jstage-san/
  timeout -k 5 120 compute-sanitizer --tool memcheck --error-exitcode 99 \
    "$BIN" "$@" /tmp/jstage-san >"$OUT/jstage-san-cli.out" 2>"$OUT/jstage-sanitizer-cli.log"
  local rc=$?
  truncate -s "<8M" "$OUT/jstage-sanitizer-cli.log"
  log "compute-sanitizer memcheck imgstat $* (24 photos): rc=$rc ($(($(date +%s) - t)) s), $(wc -l <"$OUT/jstage-san-cli.out") records"
  grep -E "ERROR SUMMARY|Invalid|Uninitialized" "$OUT/jstage-sanitizer-cli.log" | sort | uniq -c | head -6 | tee -a "$L"
  if [ $rc -eq 0 ]; then row "sanitizer memcheck imgstat $name | PASS"; else row "sanitizer memcheck imgstat $name | FAIL (rc $rc)"; fi
}
