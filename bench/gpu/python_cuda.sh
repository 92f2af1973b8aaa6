#!/bin/bash
# On the GPU host: the timings of the Python package's CUDA arrays (their
# checks: tests/gpu/checks/python_cuda.sh), in one call of at most
# ~8 minutes. Every step runs under a hard limit (cut to the time left),
# logs to $OUT/python_cuda_bench.log as it goes and goes on after a failure;
# the figures go to $OUT/python_cuda_bench.rows and a summary table last.
#   build     `pip install --no-build-isolation --target build-pycuda/site
#             ./python` with CUDA by the host's python3 (its torch, numpy,
#             CuPy, nanobind and scikit-build-core), .deps for stb and the
#             rest
#   bench1    imgstat.stats of a 64 MP RGB8 CUDA tensor (CHW, HWC) against
#             torch's one-liners (aminmax, float64 mean and std); the ratio
#             to the CLI's kernel time (imgstat bench) for the same size in
#             PYCUDA_ROUNDS rounds (default 5), each timing both
#   overhead  (not in the default steps) bench/gpu/py_overhead.py: where
#             a CUDA tensor's call spends its time beyond the kernel
#   bench2    imgstat.dataset(jpeg_decoder="gpu", scale="unit") on 500 x
#             12 MP JPEGs against the DataLoader recipe (ImageFolder +
#             ToTensor, 16 workers, batch 32, float64 sums on the GPU),
#             median of 3; the CPU decoders once; the means checked
#   callcost  (not in the default steps) bench/gpu/call_cost.cu against
#             the libtest build's library: the library's synchronous call
#             on a device image step by step, against CUDA's own floors
# Usage (top of the tree, .deps carried; .corpus for the corpus tests):
#   bench/gpu/python_cuda.sh [STEPS]     e.g. bench1 (default bench1,bench2;
#   the build when the package is not built yet)
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
STEPS=${1:-bench1,bench2}
L=$OUT/python_cuda_bench.log
: >"$L"
ROWS=$OUT/python_cuda_bench.rows
: >"$ROWS"
BD=$ROOT/build-pycuda
BUDGET=${PYCUDA_BUDGET:-460} # seconds for the whole call
T0=$(date +%s)
. bench/lib.sh # log, has, row; BIG, the 500 x 12 MP folder; py_setup, pystep
py_setup
log "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores, $(python3 --version 2>&1)"

if has build || [ ! -d "$SITE/imgstat" ]; then py_build; fi
py_package

has bench1 && pystep bench1 200 bench/gpu/python_cuda.py bench1 "$BIN"
if has overhead; then
  t=$(date +%s)
  timeout -k 5 "$(limit 120)" "$PY" bench/gpu/py_overhead.py >"$OUT/pycuda-overhead.log" 2>&1
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
      timeout -k 5 "$lim" bash -c ". bench/lib.sh; bench_jpegs $BIG 500" >>"$L" 2>&1
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
  pystep bench2 300 bench/gpu/python_cuda.py bench2 "$F"
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
      bench/gpu/call_cost.cu "$LB/libimgstat.a" -o "$LB/call_cost" >>"$OUT/pycuda-callcost.log" 2>&1 &&
    timeout -k 5 "$(limit 90)" "$LB/call_cost" >>"$OUT/pycuda-callcost.log" 2>&1
  log "callcost: rc=$? ($(($(date +%s) - t)) s)"
  grep '^callcost' "$OUT/pycuda-callcost.log" | tee -a "$L" | sed 's/^callcost | //' >>"$ROWS"
fi
py_summary "python_cuda timings"
