# Sourced by the GPU host's benchmarks (bench_batch.sh, bench_normalize.sh),
# from the top of the tree.

# bench_build [IMGSTAT]: the carried .deps and CUDA's tools found; BIN is
# IMGSTAT, else build-verify/imgstat, built (with CUDA) when missing.
bench_build() {
  ROOT=$PWD
  export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$PATH:/usr/local/cuda/bin
  BIN=${1:-$ROOT/build-verify/imgstat}
  if [ ! -x "$BIN" ]; then
    cmake -S . -B build-verify -DIMGSTAT_ENABLE_CUDA=ON -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >/dev/null &&
      cmake --build build-verify -j"$(nproc)" >/dev/null || exit 1
    BIN=$ROOT/build-verify/imgstat
  fi
}

# bench_jpegs DIR N makes DIR hold N generated 12 MP JPEGs at q90 (smooth
# content plus sensor noise), unless it holds N files already.
bench_jpegs() {
  if [ "$(ls "$1" 2>/dev/null | wc -l)" -ne "$2" ]; then
    rm -rf "$1" && mkdir -p "$1"
    python3 - "$1" "$2" <<'PY'
import sys, numpy as np, cv2
from concurrent.futures import ProcessPoolExecutor
d, n = sys.argv[1], int(sys.argv[2])
def make(i):
    rng = np.random.default_rng(i)
    # smooth content (a photo's low frequencies) plus sensor noise
    small = rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    img = cv2.resize(small, (4000, 3000), interpolation=cv2.INTER_CUBIC)
    img = np.clip(img.astype(np.int16) + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
    cv2.imwrite(f"{d}/img{i:04d}.jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
with ProcessPoolExecutor() as ex:
    list(ex.map(make, range(n)))
PY
  fi
}

# bench_small_jpegs DIR N makes DIR hold N generated 0.5 MP (816 x 612)
# JPEGs at q90, unless it holds N files already.
bench_small_jpegs() {
  if [ "$(ls "$1" 2>/dev/null | wc -l)" -ne "$2" ]; then
    rm -rf "$1" && mkdir -p "$1"
    python3 - "$1" "$2" <<'PY'
import sys, numpy as np, cv2
from concurrent.futures import ProcessPoolExecutor
d, n = sys.argv[1], int(sys.argv[2])
def make(i):
    rng = np.random.default_rng(i)
    img = cv2.resize(rng.integers(0, 256, (15, 20, 3), dtype=np.uint8), (816, 612), interpolation=cv2.INTER_CUBIC)
    img = np.clip(img.astype(np.int16) + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
    cv2.imwrite(f"{d}/s{i:04d}.jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
with ProcessPoolExecutor() as ex:
    list(ex.map(make, range(n)))
PY
  fi
}
