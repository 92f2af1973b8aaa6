#!/bin/bash
# The GPU machine's run: build with CUDA, run test_gpu (full set), time the
# fused kernel against CUB, then test_gpu's quick set under each
# compute-sanitizer tool. Logs go to $OUT (the device tool brings them back).
#
#   tests/gpu/checks/run_gpu.sh [steps]     steps: any of build test timing sass
#                                    memcheck racecheck synccheck initcheck
#                                    (default: all of them)
#
# Expects .deps (CUnit, stb) in the checkout, and the corpus copied to
# .corpus when the corpus tests should run.
set -u
cd "$(dirname "$0")/../../.."
. tests/support/lib.sh
lib_gpu_prelude
BUILD=$ROOT/build-device
STEPS=${*:-build test timing sass memcheck racecheck synccheck initcheck}

has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

say "== $(date -u +%H:%M:%S) device: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader 2>&1)"

if has build; then
  t0=$(date +%s)
  cmake -S . -B "$BUILD" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WERROR=ON \
    -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" -j16 --target test_gpu imgstat >>"$OUT/build.log" 2>&1
  rc=$?
  say "== build rc=$rc ($(($(date +%s) - t0)) s)"
  if [ $rc -ne 0 ]; then
    grep -E "error|Error" "$OUT/build.log" | head -20 | tee -a "$SUMMARY"
    # test_gpu alone, in case another target is what broke
    cmake --build "$BUILD" -j16 --target test_gpu >>"$OUT/build.log" 2>&1 || exit 1
  fi
fi

if has test; then
  t0=$(date +%s)
  timeout 300 "$BUILD/tests/test_gpu" >"$OUT/test_gpu.log" 2>&1
  rc=$?
  say "== test_gpu (full) rc=$rc ($(($(date +%s) - t0)) s)"
  grep -E "^device|Suite|Test:.*(passed|FAILED)|MISMATCH|kernel [0-9]:|asserts|tests |worst|skipped" \
    "$OUT/test_gpu.log" | head -40 | tee -a "$SUMMARY"
fi

if has timing; then
  t0=$(date +%s)
  : >"$OUT/timing.log"
  lib_fast_timing "$BUILD" "$OUT/timing.log"
  say "== timing rc=$? ($(($(date +%s) - t0)) s)"
  tail -12 "$OUT/timing.log" | tee -a "$SUMMARY"
fi

if has sass; then
  obj=$(find "$BUILD" -name fast.cu.o | head -1)
  cuobjdump -sass "$obj" >"$BUILD/fast.sass" 2>&1
  say "== sass of fast.cu: loads per kernel (LDG.E.128 = 16-byte), local memory"
  awk '/Function :/{f=$3} /LDG/{match($0,/LDG[.A-Z0-9]*/); c[f" "substr($0,RSTART,RLENGTH)]++}
       /LDL|STL/{l[f]++} END{for(k in c) print "  " c[k], k; for(k in l) print "  LOCAL", l[k], k}' \
    "$BUILD/fast.sass" | sed 's/_ZN[0-9]*_GLOBAL__N__[0-9a-f_]*fast_cu_[0-9a-f]*//' | sort -k2 | tee -a "$SUMMARY"
fi

for tool in memcheck racecheck synccheck initcheck; do
  has $tool || continue
  t0=$(date +%s)
  extra=""
  [ $tool = memcheck ] && extra="--leak-check full"
  IMGSTAT_TEST_QUICK=1 timeout 170 compute-sanitizer --tool $tool $extra \
    --error-exitcode 99 "$BUILD/tests/test_gpu" >"$OUT/sanitizer-$tool.log" 2>&1
  rc=$?
  truncate -s "<8M" "$OUT/sanitizer-$tool.log"
  say "== compute-sanitizer $tool rc=$rc ($(($(date +%s) - t0)) s)"
  grep -E "ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|Test:.*FAILED|asserts|tests |Program hit|Invalid|Uninitialized" \
    "$OUT/sanitizer-$tool.log" | sort | uniq -c | head -12 | tee -a "$SUMMARY"
done
say "== done $(date -u +%H:%M:%S)"
