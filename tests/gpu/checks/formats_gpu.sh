#!/bin/bash
# The optional formats on the GPU host: their libraries from the dependency
# bundle (../shared/gpu-host/bundle-deps.sh: libtiff, libwebp, cfitsio,
# libdeflate) found and linked, every ctest test (the format tests with
# them), then the folder normalization benchmark with this build's PNG
# writer. Lines go to $OUT/formats_gpu.log as they come.
# Usage (top of the tree, .deps and .corpus carried): tests/gpu/checks/formats_gpu.sh [N]
set -u
cd "$(dirname "$0")/../../.."
ROOT=$PWD
L=${OUT:-/tmp}/formats_gpu.log
say() { echo "$*" | tee -a "$L"; }
export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PATH:/usr/local/cuda/bin
[ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
say "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores"
say "system: $(ls /usr/include/libdeflate.h /usr/include/tiffio.h /usr/include/webp/decode.h /usr/include/fitsio.h 2>&1 | tr '\n' ' ')"
say "system: $(ldconfig -p | grep -oE 'lib(curl-gnutls|deflate|tiff|webp|cfitsio)[^ ]*' | sort -u | tr '\n' ' ')"
B=build-fmt
cmake -S . -B $B -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WERROR=ON -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" 2>&1 |
  grep "imgstat:" | tee -a "$L"
timeout -k 5 300 cmake --build $B -j"$(nproc)" >"$OUT/build-fmt.log" 2>&1
say "build rc=$?: $(grep -E 'error|warning' "$OUT/build-fmt.log" | head -5)"
say "$($B/imgstat --version | tr '\n' ' ')"
say "ldd: $(ldd $B/imgstat | grep -E 'not found|tiff|webp|cfitsio|deflate|jpeg' | tr -s ' \t' ' ' | tr '\n' ';')"
(cd $B && timeout -k 5 400 ctest -j8 --timeout 300 >"$OUT/ctest-fmt.log" 2>&1)
say "ctest: $(grep -E 'tests passed|tests failed' "$OUT/ctest-fmt.log")"
grep -E '\*\*\*|Failed|Skipped' "$OUT/ctest-fmt.log" | head -20 | tee -a "$L"
N=${1:-200}
. bench/lib.sh
timeout -k 5 200 bash -c ". bench/lib.sh; bench_jpegs /tmp/imgstat-bench-jpeg $N"
BENCH_DIR=/tmp/imgstat-bench-jpeg timeout -k 5 400 bash bench/gpu/normalize.sh "$ROOT/$B/imgstat" "$N" 3 20 2>&1 |
  grep -v '^ok' | sed 's/^/normalize: /' | tee -a "$L"
say "== done $(date -u '+%T')"
