#!/bin/bash
# The valid samples on the GPU in one device call: build the CUDA
# configuration (as verify_all.sh does), run the tests of the valid samples
# (test_valid, test_valid_acc, test_gpu_valid: the fused pass of 8/16-bit
# images against the CPU and the compaction path, 1 to 200 channels, up to
# 700 labels, batches of images against each image's own call and the CPU,
# failing items alone; valid_cli.sh: the records of --backend gpu image by
# image (the default) and batched (IMGSTAT_GPU_VALID_BATCH=64), on its compaction path and of
# --backend cpu byte for byte, its cases' lines in the log),
# then test_gpu_valid under compute-sanitizer's memcheck and racecheck
# (IMGSTAT_TEST_QUICK: the fused pass without the compaction beside it), and
# with BENCH_N > 0 the labelled dataset benchmark
# (bench/gpu/labels_dataset.sh; a call of its own at full size). A summary
# goes to $OUT/summary.txt, the logs beside it.
#
# Expects .deps (CUnit, stb) carried to the GPU machine. Usage (from the top
# of the tree): bash tests/gpu/checks/valid_gpu.sh
#   BENCH_N=0 BENCH_RUNS=3   the benchmark's slices (0: not run) and runs
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
B=$ROOT/build-verify
failed=0

say "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1) commit ${IMGSTAT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo ?)}"
cmake -S . -B "$B" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WERROR=ON \
  -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/build.log" 2>&1 &&
  cmake --build "$B" -j"$(nproc)" >>"$OUT/build.log" 2>&1
rc=$?
say "== build rc=$rc"
[ $rc -eq 0 ] || {
  grep -E "error" "$OUT/build.log" | head -20 | tee -a "$SUMMARY"
  exit 1
}

timeout 240 ctest --test-dir "$B" --output-on-failure \
  -R '^(test_valid|test_valid_acc|test_gpu_valid)$' >"$OUT/ctest.log" 2>&1
rc=$?
say "== ctest rc=$rc"
grep -E "Test +#|tests passed|Skipped|Failed" "$OUT/ctest.log" | tee -a "$SUMMARY"
[ $rc -eq 0 ] || failed=1
timeout 300 bash tests/gpu/checks/valid_cli.sh "$B/imgstat" >"$OUT/valid_cli.log" 2>&1
rc=$?
say "== valid_cli rc=$rc: $(grep -c '^ok ' "$OUT/valid_cli.log") cases ok, $(grep -c '^FAIL ' "$OUT/valid_cli.log") failed"
grep -E "^FAIL " -A3 "$OUT/valid_cli.log" | head -20 | tee -a "$SUMMARY"
[ $rc -eq 0 ] || failed=1

for tool in memcheck racecheck; do
  extra=""
  [ $tool = memcheck ] && extra="--leak-check full"
  # shellcheck disable=SC2086
  IMGSTAT_TEST_QUICK=1 timeout 200 compute-sanitizer --tool $tool $extra --error-exitcode 99 \
    "$B/tests/test_gpu_valid" >"$OUT/san-test_gpu_valid-$tool.log" 2>&1
  rc=$?
  say "== test_gpu_valid $tool rc=$rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/san-test_gpu_valid-$tool.log" | tail -1)"
  [ $rc -eq 0 ] || failed=1
done

if [ "${BENCH_N:-0}" -gt 0 ]; then
  N=${BENCH_N} RUNS=${BENCH_RUNS:-3} IMGSTAT=$B/imgstat \
    timeout 420 bash bench/gpu/labels_dataset.sh >"$OUT/bench.log" 2>&1
  rc=$?
  say "== labels_dataset rc=$rc"
  tee -a "$SUMMARY" <"$OUT/bench.log"
  [ $rc -eq 0 ] || failed=1
fi
say "== valid_gpu: $([ $failed -eq 0 ] && echo PASS || echo FAIL)"
exit $failed
