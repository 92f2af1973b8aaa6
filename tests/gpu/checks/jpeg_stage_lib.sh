# The checks' helpers of the JPEG stage's GPU scripts
# (tests/gpu/checks/jpeg_stage.sh, bench/gpu/jpeg_stage_costs.sh's check
# steps): CUnit runs, records compared, verdicts, compute-sanitizer. On the
# benchmarks' harness (bench/lib.sh: log, row, the sets, hung runs, the
# build), which it sources; the same variables set first (L, ROWS, STEPS,
# BD, BIN, after lib_gpu_prelude).
# shellcheck shell=bash
. bench/lib.sh

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
verdict() { # NAME RESULT-LINE
  log "check $1: $2"
  case "$2" in *" OK") row "check $1 | PASS" ;; *) row "check $1 | FAIL: $(echo "$2" | head -c 120)" ;; esac
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
