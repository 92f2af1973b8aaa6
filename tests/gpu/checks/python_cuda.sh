#!/bin/bash
# On the GPU host: the Python package's CUDA arrays (HWC on the
# device, histograms, normalize CUDA in / CUDA out), in one call of at most
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
#   bench1    imgstat.stats of a 64 MP RGB8 CUDA tensor (CHW, HWC) against
#             torch's one-liners (aminmax, float64 mean and std); the ratio
#             to the CLI's kernel time (imgstat bench) for the same size in
#             PYCUDA_ROUNDS rounds (default 5), each timing both
#   overhead  (not in the default steps) tests/gpu/bench/py_overhead.py: where
#             a CUDA tensor's call spends its time beyond the kernel
#   bench2    imgstat.dataset(jpeg_decoder="gpu", scale="unit") on 500 x
#             12 MP JPEGs against the DataLoader recipe (ImageFolder +
#             ToTensor, 16 workers, batch 32, float64 sums on the GPU),
#             median of 3; the CPU decoders once; the means checked
#   sanitize  compute-sanitizer memcheck over a python run of the
#             CUDA-array stats / histogram / normalize paths (0 errors;
#             last, with the time that is left, at most 150 s)
#   callcost  (not in the default steps) tests/gpu/bench/call_cost.cu against
#             the libtest build's library: the library's synchronous call
#             on a device image step by step, against CUDA's own floors
#   libtest   (not in the default steps: run it alone) the library's
#             test_norm_gpu (interleaved and strided device arrays, the
#             plan and output left on the device) and test_gpu, built
#             with CUnit from .deps in build-pycuda/lib
# Usage (top of the tree, .deps carried; .corpus for the corpus tests):
#   tests/gpu/checks/python_cuda.sh [STEPS]     e.g. build,pytest (default all)
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/lib.sh
lib_gpu_prelude
STEPS=${1:-build,pytest,hostcopy,bench1,bench2,sanitize}
L=$OUT/python_cuda.log
: >"$L"
ROWS=$OUT/python_cuda.rows
: >"$ROWS"
BD=$ROOT/build-pycuda
# The host's python3 (the one with torch, numpy, CuPy, nanobind and
# scikit-build-core: itself a venv, so a venv made from it would not see
# them); the package goes into a folder of its own on PYTHONPATH.
PY=$(command -v python3)
SITE=$BD/site
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
BUDGET=${PYCUDA_BUDGET:-460} # seconds for the whole call
T0=$(date +%s)
. tests/gpu/jpeg_stage_lib.sh # log, has, row; BIG, the 500 x 12 MP folder
elapsed() { echo $(($(date +%s) - T0)); }
# limit WANT: WANT seconds, or what is left of the budget (0: skip)
limit() {
  local left=$((BUDGET - $(elapsed)))
  if [ "$left" -lt 15 ]; then echo 0; elif [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}
# rows of a python_cuda.py step: its "ROW a | b" lines
rows_of() { grep '^ROW ' "$1" | sed 's/^ROW //' >>"$ROWS"; }
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
# Make where there is no ninja, as tests/python_test.sh
command -v ninja >/dev/null 2>&1 || export CMAKE_GENERATOR="Unix Makefiles"
[ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
log "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores, $(python3 --version 2>&1)"

if has build; then
  t=$(date +%s)
  mkdir -p "$BD"
  rm -rf "$SITE"
  lim=$(limit 330)
  CMAKE_ARGS="-DIMGSTAT_ENABLE_CUDA=ON -DCMAKE_PREFIX_PATH=$ROOT/.deps/usr" \
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout -k 5 "$lim" \
    "$PY" -m pip install --no-build-isolation --no-deps --force-reinstall \
    --target "$SITE" --config-settings=build-dir="$BD/python-build" ./python \
    >"$OUT/pycuda-pip.log" 2>&1
  rc=$?
  log "build: pip install ./python rc=$rc ($(($(date +%s) - t)) s)"
  if [ $rc -ne 0 ]; then
    grep -E "error|Error" "$OUT/pycuda-pip.log" | head -20 | tee -a "$L"
    row "build | FAIL (rc $rc): see pycuda-pip.log"
  fi
fi
INFO=$(cd /tmp && "$PY" -c 'import imgstat; print(imgstat.__version__, "cuda", imgstat.cuda)' 2>&1 | tail -1)
log "package: $INFO; $(cd /tmp && "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -1)"
BIN=$(cd /tmp && "$PY" -c 'import imgstat; print(imgstat.program())' 2>/dev/null)
case "$INFO" in
  *"cuda True"*) row "build | PASS ($INFO)" ;;
  *) row "build | FAIL: $INFO" ;;
esac

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

# pystep NAME WANT ARGS...: a python_cuda.py step, its log and rows
pystep() {
  local name=$1 want=$2
  shift 2
  local t lim
  t=$(date +%s)
  lim=$(limit "$want")
  if [ "$lim" -eq 0 ]; then
    row "$name | not run (no time left)"
    return
  fi
  timeout -k 5 "$lim" "$PY" tests/gpu/checks/python_cuda.py "$@" >"$OUT/pycuda-$name.log" 2>&1
  local rc=$?
  log "$name: rc=$rc ($(($(date +%s) - t)) s)"
  grep -v '^ROW ' "$OUT/pycuda-$name.log" | tail -25 | tee -a "$L"
  rows_of "$OUT/pycuda-$name.log"
  [ $rc -eq 0 ] || row "$name | rc $rc (see pycuda-$name.log)"
}

has hostcopy && pystep hostcopy 90 hostcopy
has bench1 && pystep bench1 200 bench1 "$BIN"
if has overhead; then
  t=$(date +%s)
  timeout -k 5 "$(limit 120)" "$PY" tests/gpu/bench/py_overhead.py >"$OUT/pycuda-overhead.log" 2>&1
  log "overhead: rc=$? ($(($(date +%s) - t)) s)"
  tee -a "$L" <"$OUT/pycuda-overhead.log" | grep '^overhead' | sed 's/^overhead | //' >>"$ROWS"
fi

if has bench2; then
  # 500 x 12 MP JPEGs at q90 (smooth content and noise, as the JPEG stage's
  # sets; the same folder when it is there), hard links under a class
  # folder for ImageFolder
  t=$(date +%s)
  if [ "$(ls $BIG 2>/dev/null | wc -l)" -ne 500 ]; then
    lim=$(limit 120)
    if "$PY" -c 'import cv2' 2>/dev/null; then
      timeout -k 5 "$lim" bash -c ". tests/gpu/bench_lib.sh; bench_jpegs $BIG 500" >>"$L" 2>&1
    else
      rm -rf $BIG && mkdir -p $BIG
      timeout -k 5 "$lim" "$PY" - "$BIG" <<'PY' >>"$L" 2>&1
import sys, torch, torch.nn.functional as F
from torchvision.io import encode_jpeg
d = sys.argv[1]
for i in range(500):
    g = torch.Generator().manual_seed(i)
    small = torch.randint(0, 256, (1, 3, 30, 40), generator=g).float()
    img = F.interpolate(small, size=(3000, 4000), mode="bicubic", align_corners=False)[0]
    img = (img + torch.randn(img.shape, generator=g) * 6).clamp(0, 255).to(torch.uint8)
    open(f"{d}/img{i:04d}.jpg", "wb").write(encode_jpeg(img, quality=90).numpy().tobytes())
PY
    fi
  fi
  F=/tmp/pycuda-folder
  rm -rf $F && mkdir -p $F/all
  cp -l $BIG/*.jpg $F/all/ 2>/dev/null || cp $BIG/*.jpg $F/all/
  cat $F/all/*.jpg >/dev/null
  log "bench2 set: $(ls $F/all | wc -l) JPEGs, $(du -smL $F | cut -f1) MB ($(($(date +%s) - t)) s); /dev/shm $(df -h /dev/shm 2>/dev/null | awk 'NR==2{print $2, "free", $4}')"
  pystep bench2 300 bench2 "$F"
fi

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

if has callcost; then
  # the library's calls one by one against CUDA's floors (below Python)
  t=$(date +%s)
  LB=$BD/lib
  { [ -f "$LB/CMakeCache.txt" ] || timeout -k 5 120 cmake -S . -B "$LB" -DIMGSTAT_ENABLE_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr"; } >"$OUT/pycuda-callcost.log" 2>&1
  timeout -k 5 "$(limit 200)" cmake --build "$LB" -j"$(nproc)" --target imgstat \
    >>"$OUT/pycuda-callcost.log" 2>&1 &&
    nvcc -std=c++17 -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/core -Icuda --expt-relaxed-constexpr \
      tests/gpu/bench/call_cost.cu "$LB/libimgstat.a" -o "$LB/call_cost" >>"$OUT/pycuda-callcost.log" 2>&1 &&
    timeout -k 5 "$(limit 90)" "$LB/call_cost" >>"$OUT/pycuda-callcost.log" 2>&1
  log "callcost: rc=$? ($(($(date +%s) - t)) s)"
  grep '^callcost' "$OUT/pycuda-callcost.log" | tee -a "$L" | sed 's/^callcost | //' >>"$ROWS"
fi

log "== done in $(elapsed) s"
{
  echo
  echo "== python_cuda summary ($(elapsed) s)"
  column -t -s'|' "$ROWS" 2>/dev/null || cat "$ROWS"
} | tee -a "$L"
