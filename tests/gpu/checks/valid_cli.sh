#!/bin/bash
# Masks and nodata values on the GPU, end to end: `imgstat --backend gpu`
# with --mask and --nodata must print the records `--backend cpu` prints,
# byte for byte once the "backend" key is set aside (and that key must say
# gpu), and --verify must find the GPU's figures equal to the CPU's. The
# inputs are written here (python3's standard library: .npy files): 8- and
# 16-bit images of 1 to 3 channels, float32 ones with NaN, infinities and
# -0, a random mask, an empty one and a full one; nodata values per
# channel, at the positions of the extrema, a channel of nodata alone; a
# label image (labels of many pixels, of one pixel, and one whose pixels
# are all nodata under --nodata), alone, under the mask and with nodata
# values (the labels on the device: the records' "labels" the same bytes;
# --verify leaves an item with labels to the CPU, so only its exit status
# is checked there). Histograms (--histogram, --percentiles) of the valid
# samples and of each label on the device: 8-, 16-bit and int16 images of
# 3, 13 and 200 bands (--npy-layout hwc: 200 bands of 23 x 37 pixels)
# under a mask, nodata values and a label image, the
# records (their bins, percentiles and figures) the same bytes, the GPU's
# saying gpu (float images' histograms are the CPU's: not in these cases;
# --verify leaves items with histograms to the CPU, so only its exit status
# is checked there). 8- and 16-bit images (int16 too) take the device's
# fused pass (every label and channel in one launch): 300 labels in runs
# (one of nodata alone), int16 images of 3 bands with a nodata value per
# band (negative ones too), 13 bands with 13 nodata values, odd sizes
# (331 x 29), and --dataset runs whose dataset records (the pooled labels,
# their percentiles) must be the same bytes too. Each GPU run is made again
# on the compaction path (IMGSTAT_GPU_VALID_COMPACT=1), whose records must
# be the fused pass's byte for byte, and batched (IMGSTAT_GPU_VALID_BATCH=64:
# the images the workers queued together in one upload, launch and copy
# back; the default is each image on its own), the same bytes too;
# runs of 32 and 40 inputs give the workers' batches many images.
# Usage: valid_cli.sh IMGSTAT. Skips (77) without a usable GPU.
set -u
IMGSTAT=${1:?usage: valid_cli.sh IMGSTAT}
T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat_valid_cli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT

python3 - "$T" <<'PY' || exit 1
import random, struct, sys, os
T = sys.argv[1]
rnd = random.Random(5)

def npy(name, shape, dtype, values):
    code = {"u1": "B", "u2": "H", "i2": "h", "f4": "f"}[dtype]
    head = "{'descr': '<%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % s for s in shape))
    head += " " * (63 - (len(head) + 10) % 64) + "\n"
    with open(os.path.join(T, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)))
        f.write(head.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))

H, W = 61, 97
n = H * W
def ints(top, c):
    v = []
    for i in range(n * c):
        v.append(rnd.randrange(7) if rnd.random() < 0.3 else rnd.randrange(top))
    return v
def floats(c):
    v = []
    for i in range(n * c):
        r = rnd.random()
        v.append(float("nan") if r < 0.04 else float("inf") if r < 0.06 else
                 -0.0 if r < 0.08 else 0.0 if r < 0.1 else
                 rnd.choice([1.5, 2.5]) if r < 0.3 else rnd.uniform(-100, 100))
    return v
npy("u8.npy", (H, W), "u1", ints(256, 1))
npy("u8x3.npy", (H, W, 3), "u1", ints(256, 3))
npy("u16x2.npy", (H, W, 2), "u2", ints(65536, 2))
npy("f32.npy", (H, W), "f4", floats(1))
npy("f32x3.npy", (H, W, 3), "f4", floats(3))
# extrema that are nodata: the first sample the min, a later one the max
e = [5 + (i % 13) for i in range(n)]
e[0], e[40], e[n - 1] = 1, 250, 1
npy("extrema.npy", (H, W), "u1", e)
npy("mask.npy", (H, W), "u1", [rnd.randrange(2) * 255 for i in range(n)])
npy("empty.npy", (H, W), "u1", [0] * n)
npy("full.npy", (H, W), "u1", [1] * n)
# labels 1..4 at random, 9 at one pixel, 7 on the pixels equal to 1 in
# extrema.npy (all nodata under --nodata 1), 0 the background
lab = [rnd.choice([0, 0, 1, 2, 3, 4]) for i in range(n)]
lab[n // 2] = 9
for i in range(n):
    if e[i] == 1:
        lab[i] = 7
npy("labels.npy", (H, W), "u2", lab)
# many bands, a smaller raster: 3, 13 and 200 bands of uint8, uint16 and
# int16 (many samples of a few values, so that nodata and the
# percentiles' bins hit often), its own mask and labels (1, 2 and 3 at one
# pixel)
H2, W2 = 23, 37
n2 = H2 * W2
for b in (3, 13, 200):
    for dtype, lo, hi in (("u1", 0, 255), ("u2", 0, 65535),
                          ("i2", -32768, 32767)):
        v = [rnd.randrange(-3, 7) if rnd.random() < 0.3 else
             rnd.randrange(lo, hi + 1) for i in range(n2 * b)]
        if dtype != "i2":
            v = [x if x >= 0 else -x for x in v]
        npy("w%d_%s.npy" % (b, dtype), (H2, W2, b), dtype, v)
npy("mask2.npy", (H2, W2), "u1", [rnd.randrange(3) for i in range(n2)])
lab2 = [rnd.choice([0, 1, 2]) for i in range(n2)]
lab2[n2 // 3] = 3
npy("labels2.npy", (H2, W2), "u2", lab2)
# 300 labels in runs, label 300 on the pixels equal to 1 in extrema.npy
# (all nodata under --nodata 1); int16 images of 3 bands (negative values,
# nodata per band); an odd size with its own 300 labels
lab300, cur = [], 0
for i in range(n):
    if rnd.random() < 0.05:
        cur = rnd.randrange(300)
    lab300.append(300 if e[i] == 1 else cur)
npy("labels300.npy", (H, W), "u2", lab300)
for name in ("i2x3.npy", "i2x3b.npy"):
    npy(name, (H, W, 3), "i2",
        [rnd.randrange(-6, 8) if rnd.random() < 0.5 else
         rnd.randrange(-32768, 32768) for i in range(n * 3)])
H3, W3 = 29, 331
n3 = H3 * W3
npy("odd_u2.npy", (H3, W3), "u2",
    [rnd.randrange(9) if rnd.random() < 0.5 else rnd.randrange(65536)
     for i in range(n3)])
npy("odd_u1.npy", (H3, W3), "u1", [rnd.randrange(256) for i in range(n3)])
lab3, cur = [], 0
for i in range(n3):
    if rnd.random() < 0.03:
        cur = rnd.randrange(301)
    lab3.append(cur)
npy("labels_odd.npy", (H3, W3), "u2", lab3)
PY

# each case: its options, then its inputs
cases=(
  "--nodata 0|u8.npy u8x3.npy u16x2.npy"
  "--nodata 3|u8.npy u8x3.npy u16x2.npy"
  "--nodata 1.5|f32.npy f32x3.npy"
  "--nodata 0|f32.npy f32x3.npy"
  "--nodata nan|f32.npy"
  "--nodata 1,2,3|u8x3.npy f32x3.npy"
  "--nodata 1|extrema.npy"
  "--nodata 250|extrema.npy"
  "--mask $T/mask.npy|u8.npy u8x3.npy u16x2.npy f32.npy f32x3.npy extrema.npy"
  "--mask $T/mask.npy --nodata 2|u8.npy u8x3.npy u16x2.npy extrema.npy"
  "--mask $T/mask.npy --nodata 2.5|f32.npy f32x3.npy"
  "--mask $T/empty.npy|u8.npy u16x2.npy f32x3.npy"
  "--mask $T/empty.npy --nodata 1|u8.npy u16x2.npy"
  "--mask $T/full.npy --nodata 1|u8.npy u16x2.npy extrema.npy"
  "--labels $T/labels.npy|u8.npy u8x3.npy u16x2.npy f32.npy f32x3.npy extrema.npy"
  "--labels $T/labels.npy --nodata 1|u8.npy u16x2.npy extrema.npy"
  "--labels $T/labels.npy --mask $T/mask.npy --nodata 2|u8.npy u8x3.npy u16x2.npy extrema.npy"
  "--labels $T/labels.npy --mask $T/mask.npy --nodata 2.5|f32.npy f32x3.npy"
  "--labels $T/labels.npy --mask $T/empty.npy|u8.npy f32x3.npy"
  "--histogram --mask $T/mask.npy|u8.npy u8x3.npy u16x2.npy extrema.npy"
  "--histogram --labels $T/labels.npy --nodata 1|u8.npy u16x2.npy extrema.npy"
  "--histogram --mask $T/empty.npy --labels $T/labels.npy|u8.npy u16x2.npy"
)
wide=""
for b in 3 13 200; do
  for t in u1 u2 i2; do wide="$wide w${b}_$t.npy"; done
done
cases+=(
  "--npy-layout hwc --histogram --nodata 2|$wide"
  "--npy-layout hwc --histogram --mask $T/mask2.npy|$wide"
  "--npy-layout hwc --percentiles 0.5,50,99.5 --mask $T/mask2.npy --nodata 2|$wide"
  "--npy-layout hwc --percentiles 1,99 --labels $T/labels2.npy|$wide"
  "--npy-layout hwc --percentiles 0.5,99.5 --labels $T/labels2.npy --mask $T/mask2.npy --nodata 2|$wide"
  "--npy-layout hwc --percentiles 1,99 --nodata 0,1,2,3,4,5,6,0,1,2,3,4,5 --labels $T/labels2.npy|w13_u1.npy w13_u2.npy w13_i2.npy"
  "--labels $T/labels300.npy --nodata 1|u8.npy u16x2.npy extrema.npy"
  "--histogram --labels $T/labels300.npy --mask $T/mask.npy --nodata 2|u8.npy u8x3.npy extrema.npy"
  "--nodata -5,0,7 --mask $T/mask.npy|i2x3.npy i2x3b.npy"
  "--percentiles 0.5,99.5 --labels $T/labels300.npy --nodata -5,0,7|i2x3.npy i2x3b.npy"
  "--percentiles 0.5,50,99.5 --labels $T/labels_odd.npy --nodata 3|odd_u2.npy odd_u1.npy"
  "--dataset --percentiles 0.5,99.5 --labels $T/labels.npy --nodata 1|u8.npy extrema.npy"
  "--dataset --percentiles 0.5,99.5 --labels $T/labels300.npy --mask $T/mask.npy --nodata -5,0,7|i2x3.npy i2x3b.npy"
  "--dataset-only --percentiles 0.5,99.5 --labels $T/labels300.npy|i2x3.npy i2x3b.npy"
)
many=""
for _ in $(seq 16); do many="$many i2x3.npy i2x3b.npy"; done
cases+=("--dataset --percentiles 0.5,99.5 --labels $T/labels300.npy --nodata -5,0,7|$many")
many=""
for _ in $(seq 10); do many="$many u8.npy u8x3.npy u16x2.npy extrema.npy"; done
cases+=("--histogram --labels $T/labels.npy --mask $T/mask.npy --nodata 2|$many")

# a usable GPU?
"$IMGSTAT" --json --backend gpu --nodata 0 "$T/u8.npy" >"$T/probe" 2>"$T/probe.err"
if grep -q -e "without CUDA" -e "needs a usable GPU" "$T/probe.err"; then
  echo "skipped: $(head -1 "$T/probe.err")"
  exit 77
fi

failed=0
k=0
for c in "${cases[@]}"; do
  opts=${c%%|*}
  files=()
  for f in ${c#*|}; do files+=("$T/$f"); done
  k=$((k + 1))
  # shellcheck disable=SC2086
  "$IMGSTAT" --json --backend cpu $opts "${files[@]}" >"$T/cpu$k" 2>"$T/cpu$k.err"
  rc_cpu=$?
  # shellcheck disable=SC2086
  "$IMGSTAT" --json --backend gpu $opts "${files[@]}" >"$T/gpu$k" 2>"$T/gpu$k.err"
  rc_gpu=$?
  # shellcheck disable=SC2086
  IMGSTAT_GPU_VALID_COMPACT=1 "$IMGSTAT" --json --backend gpu $opts "${files[@]}" >"$T/compact$k" 2>"$T/compact$k.err"
  rc_compact=$?
  # shellcheck disable=SC2086
  IMGSTAT_GPU_VALID_BATCH=64 "$IMGSTAT" --json --backend gpu $opts "${files[@]}" >"$T/batch$k" 2>"$T/batch$k.err"
  rc_batch=$?
  # (--verify: the items' records; not run with --dataset)
  rc_verify=0
  : >"$T/verify$k.err"
  case " $opts " in
  *" --dataset"*) ;;
  *)
    # shellcheck disable=SC2086
    "$IMGSTAT" --json --verify $opts "${files[@]}" >/dev/null 2>"$T/verify$k.err"
    rc_verify=$?
    ;;
  esac
  why=$(python3 - "$T/cpu$k" "$T/gpu$k" "$T/verify$k.err" "${#files[@]}" "$opts" "$T/compact$k" "$T/batch$k" <<'PY'
import json, re, sys
cpu = open(sys.argv[1]).read().splitlines()
gpu = open(sys.argv[2]).read().splitlines()
verify = open(sys.argv[3]).read()
n = int(sys.argv[4])
labels = "--labels" in sys.argv[5]
hist = "--histogram" in sys.argv[5] or "--percentiles" in sys.argv[5]
compact = open(sys.argv[6]).read().splitlines()
batch = open(sys.argv[7]).read().splitlines()
# --dataset: a record per input and the dataset's; --dataset-only: its alone
want = 1 if "--dataset-only" in sys.argv[5] else n + ("--dataset" in sys.argv[5])
if len(cpu) != want or len(gpu) != want:
    print("records: cpu %d gpu %d, %d wanted" % (len(cpu), len(gpu), want))
    sys.exit()
if compact != gpu:
    print("the compaction path's records differ from the fused pass's")
    sys.exit()
if batch != gpu:
    print("the batched pass's records differ from the one-image pass's")
    sys.exit()
for a, b in zip(cpu, gpu):
    ja, jb = json.loads(a), json.loads(b)
    if "dataset" in ja:
        if a != b:
            print("dataset records differ:\n  cpu %s\n  gpu %s" % (a, b))
            sys.exit()
        if labels and "labels" not in ja["dataset"]:
            print("no labels in the dataset record: %s" % a[:200])
            sys.exit()
        continue
    if ja.get("backend") != "cpu" or jb.get("backend") != "gpu":
        print("backend: cpu's record says %s, gpu's %s" % (ja.get("backend"), jb.get("backend")))
        sys.exit()
    if a.replace('"backend":"cpu"', "") != b.replace('"backend":"gpu"', ""):
        print("records differ:\n  cpu %s\n  gpu %s" % (a, b))
        sys.exit()
    if labels and "labels" not in ja:
        print("no labels in the record: %s" % a[:200])
        sys.exit()
    if hist and "median" not in a:
        print("no histogram figures in the record: %s" % a[:200])
        sys.exit()
ok = len(re.findall("verify ok", verify))
if not labels and not hist and "--dataset" not in sys.argv[5] and (ok != n or "MISMATCH" in verify):
    print("verify: %d ok of %d: %s" % (ok, n, verify.strip()[:400]))
PY
)
  if [ $rc_cpu -ne 0 ] || [ $rc_gpu -ne 0 ] || [ $rc_compact -ne 0 ] || [ $rc_batch -ne 0 ] || [ $rc_verify -ne 0 ] || [ -n "$why" ]; then
    echo "FAIL [$opts] rc cpu=$rc_cpu gpu=$rc_gpu compact=$rc_compact batch=$rc_batch verify=$rc_verify: $why"
    cat "$T/gpu$k.err" "$T/compact$k.err" "$T/batch$k.err" "$T/verify$k.err" | head -5
    failed=1
  else
    echo "ok   [$opts] ${#files[@]} inputs"
  fi
done
exit $failed
