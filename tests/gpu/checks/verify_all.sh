#!/bin/bash
# The whole GPU check in one device call: build the CUDA configuration, run
# every ctest test (the GPU ones included), the GPU test programs under each
# compute-sanitizer tool, and the command line end to end on every image of
# the corpus: --backend gpu must print the same records as --backend cpu
# (every statistic exactly, float too: docs/float-order.md) and --verify must
# agree for every kernel; then GPU fault injection (tests/gpu/checks/fault_test.sh,
# its logs in $OUT/fault_test/). A summary goes to $OUT/summary.txt.
#
# Expects .deps (CUnit, stb; ../shared/gpu-host/bundle-deps.sh) and the corpus
# copied to .corpus, both carried to the GPU machine. The device tool sends no
# .git: name the commit in IMGSTAT_COMMIT for the summary.
set -u
cd "$(dirname "$0")/../../.."
. tests/support/lib.sh
lib_gpu_prelude
B=$ROOT/build-verify
S=$SUMMARY
failed=0

say "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1) commit ${IMGSTAT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo ?)}"
cmake -S . -B "$B" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WERROR=ON \
  -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/build.log" 2>&1 &&
  cmake --build "$B" -j16 >>"$OUT/build.log" 2>&1
rc=$?
say "== build rc=$rc"
[ $rc -eq 0 ] || { grep -E "error" "$OUT/build.log" | head -20 | tee -a "$S"; exit 1; }
"$B/imgstat" --version | tee -a "$S"

# VERIFY_QUICK=1 (a call of under 10 minutes): ctest 8 at a time,
# memcheck only, no fault injection sweep.
QUICK=${VERIFY_QUICK:-0}
TOOLS="memcheck racecheck synccheck initcheck"
[ "$QUICK" = 1 ] && TOOLS=memcheck
# test_gpu_fault_cli is fault_test.sh's quick set: the full one runs below.
timeout 400 ctest --test-dir "$B" --output-on-failure -E '^test_gpu_fault_cli$' \
  $([ "$QUICK" = 1 ] && echo -j8) >"$OUT/ctest.log" 2>&1
rc=$?
say "== ctest rc=$rc"
grep -E "Test +#|tests passed|did not run|Skipped|Failed" "$OUT/ctest.log" | tee -a "$S"
[ $rc -eq 0 ] || failed=1

for t in test_gpu test_norm_gpu; do
  for tool in $TOOLS; do
    extra=""
    [ $tool = memcheck ] && extra="--leak-check full"
    IMGSTAT_TEST_QUICK=1 timeout 170 compute-sanitizer --tool $tool $extra \
      --error-exitcode 99 "$B/tests/$t" >"$OUT/san-$t-$tool.log" 2>&1
    rc=$?
    say "== $t $tool rc=$rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/san-$t-$tool.log" | tail -1)"
    [ $rc -eq 0 ] || failed=1
  done
done

# End to end over the corpus: the same records from both backends.
imgs=()
[ -d "$ROOT/.corpus" ] && imgs=("$ROOT"/.corpus/photos/*.{png,jpg,ppm,pgm,bmp} "$ROOT"/.corpus/hdr/*.hdr "$ROOT"/tests/data/pngsuite/*.png)
imgs+=("$ROOT"/samples/*.{png,jpg,bmp,pgm,hdr})
"$B/imgstat" --json --backend cpu "${imgs[@]}" >"$OUT/cpu.jsonl" 2>"$OUT/cpu.err"
rc_cpu=$?
"$B/imgstat" --json --backend gpu "${imgs[@]}" >"$OUT/gpu.jsonl" 2>"$OUT/gpu.err"
rc_gpu=$?
say "== corpus: ${#imgs[@]} inputs, cpu rc=$rc_cpu gpu rc=$rc_gpu, records cpu $(wc -l <"$OUT/cpu.jsonl") gpu $(wc -l <"$OUT/gpu.jsonl")"
python3 - "$OUT/cpu.jsonl" "$OUT/gpu.jsonl" <<'PY' 2>&1 | tee -a "$S"
import json, sys
cpu = [json.loads(l) for l in open(sys.argv[1])]
gpu = [json.loads(l) for l in open(sys.argv[2])]
assert len(cpu) == len(gpu), "record counts differ"
bad = 0
for a, b in zip(cpu, gpu):
    assert a["file"] == b["file"] and b["backend"] == "gpu", (a["file"], b["backend"])
    for sa, sb in zip(a["stats"], b["stats"]):
        for k in sa:
            x, y = sa[k], sb[k]
            ok = x == y
            if not ok:
                bad += 1
                print("MISMATCH", a["file"], sa["channel"], k, x, y)
print(f"compared {len(cpu)} records: {bad} mismatches")
sys.exit(1 if bad else 0)
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
cmp -s "$OUT/cpu.err" "$OUT/gpu.err" && say "== the same inputs rejected with the same messages" ||
  { say "== stderr differs"; failed=1; }
# Many workers holding device images at once, for statistics and
# histograms (an engine lock held while waiting for a slot once hung this):
# must finish, with the CPU's histograms.
"$B/imgstat" --json --histogram --backend cpu "${imgs[@]}" >"$OUT/hist-cpu.jsonl" 2>/dev/null
timeout -k 5 120 "$B/imgstat" --json --histogram --backend gpu -j 32 "${imgs[@]}" \
  >"$OUT/hist-gpu.jsonl" 2>/dev/null
rc=$?
same=$(python3 -c "import json,sys; a=[json.loads(l)['stats'] for l in open(sys.argv[1])]; b=[json.loads(l)['stats'] for l in open(sys.argv[2])]; print(sum(1 for x, y in zip(a, b) if [s.get('histogram') for s in x] == [s.get('histogram') for s in y]), len(a), len(b))" "$OUT/hist-cpu.jsonl" "$OUT/hist-gpu.jsonl")
say "== --histogram --backend gpu -j 32: rc=$rc (124/137: a hang); histograms as the CPU's, records cpu, gpu: $same"
[ $rc -eq 124 ] || [ $rc -eq 137 ] && failed=1
read -r n_same n_cpu n_gpu <<<"$same"
[ "$n_same" = "$n_cpu" ] && [ "$n_cpu" = "$n_gpu" ] || failed=1
for k in fast 1 2 3 4 5 6 7; do
  "$B/imgstat" --verify --kernel $k -q --json "${imgs[@]}" >/dev/null 2>"$OUT/verify-$k.err"
  rc=$?
  say "== --verify --kernel $k rc=$rc: $(grep -c 'verify ok' "$OUT/verify-$k.err") ok, $(grep -c MISMATCH "$OUT/verify-$k.err") mismatches"
  [ $rc -eq 1 ] || [ $rc -eq 0 ] || failed=1 # 1: the corrupt PngSuite files
  grep -q MISMATCH "$OUT/verify-$k.err" && failed=1
done
# Every allocation and launch of a run made to fail in turn
# (IMGSTAT_GPU_FAULT), then compute-sanitizer's leak check on a few.
if [ "$QUICK" = 1 ]; then
  say "== fault_test: not run (VERIFY_QUICK)"
else
  OUT="$OUT" timeout 420 bash tests/gpu/checks/fault_test.sh "$B/imgstat" >"$OUT/fault_test.log" 2>&1
  rc=$?
  say "== fault_test rc=$rc: $(grep -E '^fault_test:' "$OUT/fault_test.log" | tail -1)"
  grep -E "^FAIL|^skipped|allocations and launches|no fault shown|swept in|sanitizer" \
    "$OUT/fault_test.log" | head -30 | tee -a "$S"
  [ $rc -eq 0 ] || failed=1
fi
say "== overall: $([ $failed -eq 0 ] && echo PASS || echo FAIL)"
exit $failed
