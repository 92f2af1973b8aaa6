#!/bin/bash
# JPEG decoded on the GPU with nvJPEG, checked and timed on the
# GPU host in one run (~5 minutes). From the top of the tree, .deps carried
# (and .corpus for the corpus's JPEGs):
#   bash tests/gpu/checks/nvjpeg_test.sh [OUT_DIR]
# Builds build-nvjpeg (CUDA, IMGSTAT_WITH_NVJPEG=ON: nvjpeg.h from the
# toolkit, or NVJPEG_ROOT, or an unpacked wheel in .deps/nvjpeg), then:
#  1. --version (nvJPEG's library and the device's backend) and the ctest
#     suites test_gpu, test_jpeg_gpu, test_jpeg_decoder_cli (GPU present);
#  2. the largest |delta mean| and |delta std| per channel between
#     `--jpeg-decoder gpu` and `--jpeg-decoder cpu` records over the corpus's
#     JPEGs and ~200 generated photos (4:2:0, 4:2:2, 4:4:4, gray,
#     progressive, restart markers, q50..q100);
#  3. exactly decodable JPEGs (block-constant, q100, 4:4:4; gray and
#     neutral colours): identical records required; arbitrary colours:
#     reported;
#  4. truncated and corrupt JPEGs: the same exit status and messages on both
#     decoders (--jpeg-check full), and what nvJPEG itself does with them
#     (--jpeg-check none: the documentation's table);
#  5. a mixed folder (progressive, CMYK, gray, PNG): the same files, the
#     same order, nvJPEG's fallbacks; --verify --jpeg-decoder gpu exact;
#  6. timings, whole process, page cache warm, medians of 3: `imgstat DIR`
#     on 200 x 12 MP q90 and 1000 x 0.5 MP q90 with auto, gpu (full and
#     markers checks) and cpu;
#  7. compute-sanitizer (memcheck) on a small folder, if present.
# Prints a compact summary at the end (also in OUT_DIR/summary.txt).
set -u
cd "$(dirname "$0")/../../.."
ROOT=$PWD
OUT=${1:-/tmp/imgstat-nvjpeg}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PATH:/usr/local/cuda/bin
[ -n "${NVJPEG_ROOT:-}" ] || { [ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg; }
say "== nvjpeg_test $(date -u '+%F %T') commit $(git rev-parse --short HEAD 2>/dev/null) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores"

# ---- build ------------------------------------------------------------------
if ! { cmake -S . -B build-nvjpeg -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WITH_NVJPEG=ON \
  -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/cmake.log" 2>&1 &&
  cmake --build build-nvjpeg -j"$(nproc)" >>"$OUT/cmake.log" 2>&1; }; then
  tail -30 "$OUT/cmake.log"
  say "BUILD FAILED (see $OUT/cmake.log)"
  exit 1
fi
BIN=$ROOT/build-nvjpeg/imgstat
"$BIN" --version | tee -a "$SUMMARY"

# ---- 1. the suites ----------------------------------------------------------
IMGSTAT_HAVE_GPU=1 ctest --test-dir build-nvjpeg -R 'test_gpu$|test_jpeg_gpu|test_jpeg_decoder_cli|test_job' \
  --output-on-failure >"$OUT/ctest.log" 2>&1
say "ctest (gpu, jpeg, job): $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"

# ---- inputs -------------------------------------------------------------------
G=$OUT/gen
if [ ! -f "$G/.done" ]; then
  rm -rf "$G" && mkdir -p "$G/photos" "$G/exact" "$G/exactc" "$G/bad" "$G/mixed"
  python3 - "$G" <<'PY' || { say "GENERATION FAILED"; exit 1; }
import io, os, sys, numpy as np, cv2
from PIL import Image
from concurrent.futures import ProcessPoolExecutor
g = sys.argv[1]
def photo(i):
    rng = np.random.default_rng(1000 + i)
    w = int(rng.integers(300, 2000)); h = int(rng.integers(300, 1500))
    small = rng.integers(0, 256, (max(2, h // 40), max(2, w // 40), 3), dtype=np.uint8)
    img = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    img = np.clip(img.astype(np.int16) + rng.normal(0, 3 + i % 9, img.shape), 0, 255).astype(np.uint8)
    q = [50, 75, 90, 95, 100][i % 5]
    kind = i % 8
    p = f"{g}/photos/p{i:03d}.jpg"
    if kind == 0:    # gray
        cv2.imwrite(p, cv2.cvtColor(img, cv2.COLOR_RGB2GRAY), [cv2.IMWRITE_JPEG_QUALITY, q])
    elif kind == 1:  # progressive
        cv2.imwrite(p, img, [cv2.IMWRITE_JPEG_QUALITY, q, cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    elif kind == 2:  # restart markers
        cv2.imwrite(p, img, [cv2.IMWRITE_JPEG_QUALITY, q, cv2.IMWRITE_JPEG_RST_INTERVAL, 4])
    elif kind in (3, 4):  # 4:4:4, 4:2:2 (PIL)
        Image.fromarray(img).save(p, quality=q, subsampling=0 if kind == 3 else 1)
    else:            # 4:2:0
        cv2.imwrite(p, img, [cv2.IMWRITE_JPEG_QUALITY, q])
def exact(i):
    rng = np.random.default_rng(5000 + i)
    w, h = 8 * int(rng.integers(8, 80)), 8 * int(rng.integers(8, 80))
    bw, bh = w // 8, h // 8
    gray = rng.integers(0, 256, (bh, bw), dtype=np.uint8)
    if i % 2 == 0:   # gray
        img = np.kron(gray, np.ones((8, 8), np.uint8))
        Image.fromarray(img, "L").save(f"{g}/exact/g{i:03d}.jpg", quality=100)
    else:            # neutral colours: R = G = B
        img = np.repeat(np.kron(gray, np.ones((8, 8), np.uint8))[:, :, None], 3, 2)
        Image.fromarray(img).save(f"{g}/exact/n{i:03d}.jpg", quality=100, subsampling=0)
    col = rng.integers(0, 256, (bh, bw, 3), dtype=np.uint8)
    img = np.kron(col, np.ones((8, 8, 1), np.uint8))
    Image.fromarray(img).save(f"{g}/exactc/c{i:03d}.jpg", quality=100, subsampling=0)
with ProcessPoolExecutor() as ex:
    list(ex.map(photo, range(200)))
    list(ex.map(exact, range(40)))
src = open(f"{g}/photos/p005.jpg", "rb").read()   # 4:2:0, q100
prog = open(f"{g}/photos/p001.jpg", "rb").read()
rst = open(f"{g}/photos/p002.jpg", "rb").read()
bad = {}
for name, data in (("seq", src), ("prog", prog), ("rst", rst)):
    n = len(data)
    for f in (0.3, 0.6, 0.9, 0.99):
        bad[f"{name}_cut{int(f*100)}"] = data[: int(n * f)]
    bad[f"{name}_noeoi"] = data[:-2]
    rng = np.random.default_rng(len(data))
    for k in range(4):
        b = bytearray(data); at = int(rng.integers(n // 3, n - 10))
        b[at] ^= 0x5A
        bad[f"{name}_flip{k}"] = bytes(b)
    b = bytearray(data); at = n // 2
    b[at:at + 2] = b"\xff\xd9"                     # EOI in mid-scan
    bad[f"{name}_eoimid"] = bytes(b)
    bad[f"{name}_spliced"] = data[: n // 2] + data[n // 2 + 1000:]
for k, v in bad.items():
    open(f"{g}/bad/{k}.jpg", "wb").write(v)
# mixed: fallbacks beside nvJPEG's files
rng = np.random.default_rng(7)
img = cv2.resize(rng.integers(0, 256, (30, 40, 3), dtype=np.uint8), (800, 600))
Image.fromarray(img).convert("CMYK").save(f"{g}/mixed/a_cmyk.jpg", quality=90)
Image.fromarray(img).save(f"{g}/mixed/b_prog.jpg", quality=90, progressive=True)
Image.fromarray(img).convert("L").save(f"{g}/mixed/c_gray.jpg", quality=90)
Image.fromarray(img).save(f"{g}/mixed/d.png")
Image.fromarray(img).save(f"{g}/mixed/e_420.jpg", quality=90)
open(f"{g}/mixed/f_cut.jpg", "wb").write(open(f"{g}/mixed/e_420.jpg", "rb").read()[:20000])
PY
  touch "$G/.done"
fi
CORPUS=$OUT/corpus
rm -rf "$CORPUS" && mkdir -p "$CORPUS"
find .corpus ../shared/corpus -type f \( -iname '*.jpg' -o -iname '*.jpeg' \) 2>/dev/null |
  head -500 | while read -r f; do ln -sf "$ROOT/$f" "$CORPUS/$(echo "$f" | tr '/' '_')"; done

# ---- 2. the decoders' differences -------------------------------------------
deltas() { # DIR LABEL
  "$BIN" --json -q --jpeg-decoder gpu "$1" >"$OUT/$2.gpu.json" 2>"$OUT/$2.gpu.err"
  "$BIN" --json -q --jpeg-decoder cpu "$1" >"$OUT/$2.cpu.json" 2>"$OUT/$2.cpu.err"
  python3 - "$OUT/$2.gpu.json" "$OUT/$2.cpu.json" "$2" <<'PY' | tee -a "$SUMMARY"
import json, sys
g = [json.loads(l) for l in open(sys.argv[1])]
c = [json.loads(l) for l in open(sys.argv[2])]
assert [r["file"] for r in g] == [r["file"] for r in c], "different files or order"
dm, ds, worst, exact, n = {}, {}, {}, 0, 0
for a, b in zip(g, c):
    n += 1
    same = True
    for sa, sb in zip(a["stats"], b["stats"]):
        ch = sa["channel"]
        m, s = abs(sa["mean"] - sb["mean"]), abs(sa["std"] - sb["std"])
        same = same and sa == sb
        if m > dm.get(ch, -1): dm[ch], worst[ch] = m, a["file"]
        ds[ch] = max(ds.get(ch, 0), s)
    exact += same
gpu = sum(r["backend"] == "gpu" for r in g)
print(f"{sys.argv[3]}: {n} JPEGs ({gpu} on the GPU), identical {exact}; max |dmean| " +
      " ".join(f"{k}={v:.4f}" for k, v in dm.items()) + "; max |dstd| " +
      " ".join(f"{k}={v:.4f}" for k, v in ds.items()))
PY
}
[ -n "$(ls "$CORPUS")" ] && deltas "$CORPUS" corpus
deltas "$G/photos" photos

# ---- 3. exactly decodable ------------------------------------------------------
"$BIN" --json -q --jpeg-decoder gpu "$G/exact" >"$OUT/exact.gpu.json" 2>&1
"$BIN" --json -q --jpeg-decoder cpu "$G/exact" >"$OUT/exact.cpu.json" 2>&1
if cmp -s <(sed 's/"backend":"[a-z]*"//' "$OUT/exact.gpu.json") <(sed 's/"backend":"[a-z]*"//' "$OUT/exact.cpu.json"); then
  say "exact (gray, neutral, q100, block-constant): identical ($(grep -c '"gpu"' "$OUT/exact.gpu.json") of $(wc -l <"$OUT/exact.gpu.json") on the GPU) PASS"
else say "exact (gray, neutral): records differ FAIL"; fi
deltas "$G/exactc" "exact-colour"

# ---- 4. damaged files ---------------------------------------------------------
same=0 differ=0
: >"$OUT/bad.txt"
for f in "$G"/bad/*.jpg; do
  "$BIN" --json --jpeg-decoder gpu --jpeg-check full "$f" >"$OUT/b.gpu" 2>&1; rg=$?
  "$BIN" --json --jpeg-decoder cpu "$f" >"$OUT/b.cpu" 2>&1; rc=$?
  "$BIN" --json --jpeg-decoder gpu --jpeg-check none "$f" >"$OUT/b.mk" 2>&1; rm=$?
  g=$(sed 's/"backend":"[a-z]*"//' "$OUT/b.gpu"); c=$(sed 's/"backend":"[a-z]*"//' "$OUT/b.cpu")
  if [ "$rg" = "$rc" ] && [ "$g" = "$c" ]; then same=$((same + 1)); else
    differ=$((differ + 1)); echo "DIFFER $f: gpu $rg: $g | cpu $rc: $c" >>"$OUT/bad.txt"; fi
  printf '%s\tcpu %s %s\tnvJPEG (none) %s %s\n' "$(basename "$f")" "$rc" \
    "$(head -c 120 "$OUT/b.cpu" | tr '\n' ' ')" "$rm" "$(grep -o '"backend":"[a-z]*"' "$OUT/b.mk" | head -1)$(grep -v '^{' "$OUT/b.mk" | head -c 120 | tr '\n' ' ')" >>"$OUT/bad.txt"
done
say "damaged JPEGs, --jpeg-check full: $same same outcome and message, $differ differ $([ $differ = 0 ] && echo PASS || echo FAIL)"
say "  what nvJPEG itself does with them (--jpeg-check none): $OUT/bad.txt"
grep -c 'nvJPEG (none) 0 "backend":"gpu"' "$OUT/bad.txt" | sed 's/^/  decoded by nvJPEG without complaint (--jpeg-check none): /' | tee -a "$SUMMARY"

# ---- 5. mixed folder, verify ------------------------------------------------------
"$BIN" --json --jpeg-decoder gpu "$G/mixed" >"$OUT/mixed.gpu" 2>"$OUT/mixed.gpu.err"; rg=$?
"$BIN" --json --jpeg-decoder cpu "$G/mixed" >"$OUT/mixed.cpu" 2>"$OUT/mixed.cpu.err"; rc=$?
ok=$(python3 - "$OUT/mixed.gpu" "$OUT/mixed.cpu" <<'PY'
import json, sys
g = [json.loads(l) for l in open(sys.argv[1])]; c = [json.loads(l) for l in open(sys.argv[2])]
print("PASS" if [(r["file"], r["channels"]) for r in g] == [(r["file"], r["channels"]) for r in c] else "FAIL",
      " ".join(f'{r["file"].split("/")[-1]}:{r["backend"]}' for r in g))
PY
)
say "mixed folder (exit gpu $rg cpu $rc, messages $(cmp -s "$OUT/mixed.gpu.err" "$OUT/mixed.cpu.err" && echo same || echo DIFFER)): $ok"
"$BIN" --verify --jpeg-decoder gpu "$G/photos" "$G/mixed" >"$OUT/verify.txt" 2>&1; rv=$?
say "--verify --jpeg-decoder gpu: exit $rv (1: mixed/f_cut.jpg refused), $(grep -c 'verify ok' "$OUT/verify.txt") ok, $(grep -c MISMATCH "$OUT/verify.txt") MISMATCH"

# ---- 6. timings -----------------------------------------------------------------
. bench/lib.sh # bench_jpegs, bench_small_jpegs, median
BIG=${BENCH_DIR:-/tmp/imgstat-bench-jpeg}
bench_jpegs "$BIG" 200
SMALL=/tmp/imgstat-bench-jpeg-small
bench_small_jpegs "$SMALL" 1000
timeit() { local TIMEFORMAT=%R; for _ in 1 2 3; do { time "$@" >/dev/null 2>&1; } 2>&1; done | median; }
for set in "$BIG 200 12MP" "$SMALL 1000 0.5MP"; do
  read -r dir n label <<<"$set"
  cat "$dir"/* >/dev/null
  for args in "" "--jpeg-decoder gpu --jpeg-check full" "--jpeg-decoder gpu" "--jpeg-decoder cpu"; do
    t=$(timeit "$BIN" --json $args "$dir")
    say "$(printf '%-6s %-42s %6.2f s %8.1f images/s' "$label" "imgstat --json ${args:-(auto)}" "$t" "$(awk -v n="$n" -v t="$t" 'BEGIN{print n/t}')")"
  done
done

# ---- 7. compute-sanitizer ------------------------------------------------------------
if command -v compute-sanitizer >/dev/null 2>&1; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN" --json --jpeg-decoder gpu "$G/mixed" "$G/exact" \
    >"$OUT/memcheck.txt" 2>&1
  say "compute-sanitizer memcheck: exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/memcheck.txt") clean summary)"
else say "compute-sanitizer: not found"; fi
echo
echo "==== summary ($SUMMARY)"
cat "$SUMMARY"
