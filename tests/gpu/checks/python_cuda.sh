#!/bin/bash
# On the GPU host: the Python package's CUDA arrays (HWC on the
# device, histograms, normalize CUDA in / CUDA out) checked (their timings:
# bench/gpu/python_cuda.sh), in one call of at most
# ~8 minutes. Every step runs under a hard limit (cut to the time left),
# logs to $OUT/python_cuda.log as it goes and goes on after a failure; the
# figures go to $OUT/python_cuda.rows and a summary table is printed last.
#   build     `pip install --no-build-isolation --target build-pycuda/site
#             ./python` with CUDA by the host's python3 (its torch, numpy,
#             CuPy, nanobind and scikit-build-core), .deps for stb and the
#             rest
#   pytest    the whole python/tests suite (the CUDA-array tests run here;
#             without pytest on the host, test_cuda_arrays.py alone through
#             tests/gpu/checks/run_cuda_tests.py and its stand-in for pytest)
#   hostcopy  no host copy: imgstat.stats of a 64 MP CUDA tensor against
#             t.cpu(); a CUDA tensor of tens of GiB and the process's peak
#             host memory before and after
#   sanitize  compute-sanitizer memcheck over a python run of the
#             CUDA-array stats / histogram / normalize paths (0 errors;
#             last, with the time that is left, at most 150 s)
#   libtest   (not in the default steps: run it alone) the library's
#             test_norm_gpu (interleaved and strided device arrays, the
#             plan and output left on the device) and test_gpu, built
#             with CUnit from .deps in build-pycuda/lib
# Usage (top of the tree, .deps carried; .corpus for the corpus tests):
#   tests/gpu/checks/python_cuda.sh [STEPS]     e.g. build,pytest (default all)
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
STEPS=${1:-build,pytest,hostcopy,sanitize}
L=$OUT/python_cuda.log
: >"$L"
ROWS=$OUT/python_cuda.rows
: >"$ROWS"
BD=$ROOT/build-pycuda
BUDGET=${PYCUDA_BUDGET:-460} # seconds for the whole call
T0=$(date +%s)
. bench/lib.sh # log, has, row; py_setup, py_build, pystep, limit
py_setup
log "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores, $(python3 --version 2>&1)"

has build && py_build
py_package

if has pytest; then
  t=$(date +%s)
  lim=$(limit 200)
  rm -rf /tmp/pycuda-pytest
  if "$PY" -c 'import pytest' 2>/dev/null; then
    (cd python/tests && IMGSTAT_CLI=$BIN timeout -k 5 "$lim" "$PY" -m pytest -q -rs \
      -p no:cacheprovider --basetemp=/tmp/pycuda-pytest . >"$OUT/pycuda-pytest.log" 2>&1)
    rc=$?
  else
    # no pytest on this host: test_cuda_arrays.py alone, by the stand-in
    log "pytest: not installed here; python/tests/test_cuda_arrays.py through tests/gpu/checks/run_cuda_tests.py"
    (cd python/tests && timeout -k 5 "$lim" "$PY" "$ROOT/tests/gpu/checks/run_cuda_tests.py" \
      >"$OUT/pycuda-pytest.log" 2>&1)
    rc=$?
  fi
  last=$(tail -1 "$OUT/pycuda-pytest.log")
  cuda_skips=$(grep -c "SKIPPED.*test_cuda_arrays" "$OUT/pycuda-pytest.log")
  log "pytest: rc=$rc ($(($(date +%s) - t)) s): $last; test_cuda_arrays skips: $cuda_skips"
  grep -E "^FAILED|^ERROR|SKIPPED" "$OUT/pycuda-pytest.log" | head -30 | tee -a "$L"
  if [ $rc -eq 0 ] && [ "$cuda_skips" -eq 0 ]; then
    row "pytest python/tests | PASS ($last)"
  elif [ $rc -eq 0 ]; then
    row "pytest python/tests | PASS, but CUDA-array tests skipped ($cuda_skips reasons, see the log): $last"
  else
    row "pytest python/tests | FAIL rc $rc ($last; CUDA-array skips $cuda_skips)"
  fi
fi
has hostcopy && pystep hostcopy 90 tests/gpu/checks/python_cuda.py hostcopy

if has sanitize; then
  t=$(date +%s)
  lim=$(limit 150)
  if [ "$lim" -gt 0 ]; then
    timeout -k 5 "$lim" compute-sanitizer --tool memcheck --error-exitcode 99 \
      "$PY" tests/gpu/checks/python_cuda.py paths >"$OUT/pycuda-memcheck.log" 2>&1
    rc=$?
    truncate -s "<8M" "$OUT/pycuda-memcheck.log"
    summary=$(grep -m1 "ERROR SUMMARY" "$OUT/pycuda-memcheck.log")
    log "compute-sanitizer memcheck python_cuda.py paths: rc=$rc ($(($(date +%s) - t)) s): $summary"
    grep -E "paths:|Invalid|Uninitialized|Program hit" "$OUT/pycuda-memcheck.log" | sort | uniq -c | head -8 | tee -a "$L"
    rows_of "$OUT/pycuda-memcheck.log"
    case "$rc:$summary" in
      "0:"*"0 errors"*) row "memcheck CUDA-array paths | PASS ($summary)" ;;
      *) row "memcheck CUDA-array paths | FAIL rc $rc ($summary)" ;;
    esac
  else
    row "memcheck CUDA-array paths | not run (no time left)"
  fi
fi

if has libtest; then
  t=$(date +%s)
  LB=$BD/lib
  lim=$(limit 300)
  { [ -f "$LB/CMakeCache.txt" ] || timeout -k 5 120 cmake -S . -B "$LB" -DIMGSTAT_ENABLE_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr"; } >"$OUT/pycuda-lib-build.log" 2>&1
  timeout -k 5 "$lim" cmake --build "$LB" -j"$(nproc)" --target test_norm_gpu test_gpu \
    >>"$OUT/pycuda-lib-build.log" 2>&1
  log "libtest build: rc=$? ($(($(date +%s) - t)) s)"
  for tst in test_norm_gpu test_gpu; do
    t=$(date +%s)
    timeout -k 5 "$(limit 180)" "$LB/tests/$tst" >"$OUT/pycuda-$tst.log" 2>&1
    rc=$?
    log "$tst: rc=$rc ($(($(date +%s) - t)) s)"
    grep -E "Test:.*FAILED|differs|asserts|tests |skipped" "$OUT/pycuda-$tst.log" | head -12 | tee -a "$L"
    case $rc in 0) row "$tst | PASS" ;; 77) row "$tst | SKIPPED" ;; *) row "$tst | FAIL (rc $rc)" ;; esac
  done
fi
py_summary python_cuda
