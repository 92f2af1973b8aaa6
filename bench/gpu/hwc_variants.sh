#!/bin/bash
# The interleaved u8 kernel's shape on the GPU host: for each variant
# "UNITS BLOCKS [FLAGS]" (units a thread a tile, blocks a multiprocessor,
# more -D flags such as -DIMGSTAT_HWC_TMA=1; env VARIANTS, default
# "2 2;4 2"), the package built with -DIMGSTAT_HWC_UNITS
# / -DIMGSTAT_HWC_BLOCKS_PER_SM and the flags, then imgstat.stats of a
# 64 MP RGB8 HWC CUDA tensor (samples 1..254) timed, median of 50, its
# record checked against the CHW tensor's and its sums against torch's.
# Usage (top of the tree, .deps carried): bench/gpu/hwc_variants.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
OUT=${OUT:-/tmp}
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
command -v ninja >/dev/null 2>&1 || export CMAKE_GENERATOR="Unix Makefiles"
[ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
IFS=';' read -r -a VS <<<"${VARIANTS:-2 2;4 2}"
for v in "${VS[@]}"; do
  read -r units blocks extra <<<"$v"
  site=$ROOT/build-hwc-variant
  rm -rf "$site"
  flags="-DIMGSTAT_HWC_UNITS=$units -DIMGSTAT_HWC_BLOCKS_PER_SM=$blocks${extra:+ $extra}"
  CMAKE_ARGS="-DIMGSTAT_ENABLE_CUDA=ON -DCMAKE_PREFIX_PATH=$ROOT/.deps/usr -DCMAKE_CUDA_FLAGS=${flags// /\\ }" \
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout 200 python3 -m pip install \
    --no-build-isolation --no-deps --target "$site" \
    --config-settings=build-dir="$site-build" ./python >"$OUT/hwc-pip.log" 2>&1 ||
    { echo "variant $v: build failed"; tail -5 "$OUT/hwc-pip.log"; continue; }
  (cd /tmp && PYTHONPATH=$site python3 - "$v" <<'PY')
import statistics, sys, time
import torch
import imgstat
torch.manual_seed(0)
chw = torch.randint(1, 255, (3, 8192, 8192), dtype=torch.uint8, device="cuda")
hwc = chw.permute(1, 2, 0).contiguous()
torch.cuda.synchronize()
a = imgstat.stats(hwc).to_dict()["stats"]
ok = a == imgstat.stats(chw, layout="chw").to_dict()["stats"] and \
    [c["sum"] for c in a] == chw.view(3, -1).sum(dim=1, dtype=torch.int64).tolist()
# full range, and one planted min and max a channel (their first positions)
full = torch.randint(0, 256, (3, 1000, 1234), dtype=torch.uint8, device="cuda")
plant = torch.full((3, 999, 1237), 128, dtype=torch.uint8, device="cuda")
for c, (y, x) in enumerate(((0, 0), (500, 611), (998, 1236))):
    plant[c, y, x] = 3 + c
    plant[c, 998 - y, 1236 - x] = 200 + c
    plant[c, 998, 1236] = 3 + c  # a later equal min: the first one counts
# and 2 and 4 channels (their kernels), whole tiles and a tail
two = torch.randint(0, 256, (2, 777, 1001), dtype=torch.uint8, device="cuda")
four = torch.randint(1, 255, (4, 777, 1001), dtype=torch.uint8, device="cuda")
for t in (full, plant, two, four):
    ok = ok and imgstat.stats(t.permute(1, 2, 0).contiguous()).to_dict()["stats"] == \
        imgstat.stats(t, layout="chw").to_dict()["stats"]
for _ in range(5):
    imgstat.stats(hwc)
ts = []
for _ in range(50):
    torch.cuda.synchronize()
    t = time.perf_counter()
    imgstat.stats(hwc)
    ts.append((time.perf_counter() - t) * 1e3)
# the reduction phase alone (launches, kernels, wait: host clock)
from imgstat import _imgstat
def reduction(t, layout):
    return statistics.median(
        dict(_imgstat._cuda_stats_phases(t, layout))[
            "reduction (launches, copy, wait)"] for _ in range(50))
red = reduction(hwc, "hwc")
red_chw = reduction(chw, "chw")
print(f"variant {sys.argv[1]} (units blocks): HWC call {statistics.median(ts):.4f} ms, "
      f"reduction phase {red / 1e3:.4f} ms (CHW planes {red_chw / 1e3:.4f}), "
      f"record {'equal to CHW, sums = torch' if ok else 'DIFFERS'}", flush=True)
PY
  rm -rf "$site" "$site-build"
done
