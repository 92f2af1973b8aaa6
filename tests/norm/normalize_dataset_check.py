"""imgstat normalize --dataset and the float range pass of imgstat --dataset
--histogram, against numpy over pixels decoded with PIL (8-bit), pypng
(16-bit) and HDR files written byte by byte here (values m * 2^(e-136)).
Usage: normalize_dataset_check.py IMGSTAT TMP
"""
import glob, json, os, subprocess, sys

import numpy as np
import png
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib
import checklib  # noqa: E402

IMGSTAT, TMP = sys.argv[1:3]
IMGSTAT = os.path.abspath(IMGSTAT)
check = checklib.check


def run(*args, rc=0, cwd=None):
    r = subprocess.run([IMGSTAT, *args], capture_output=True, text=True,
                       cwd=cwd)
    check(r.returncode == rc, "%s: exit %d, want %d; stderr %s"
          % (" ".join(args), r.returncode, rc, r.stderr))
    return r


def p(*parts):
    return os.path.join(TMP, *parts)


rng = np.random.default_rng(11)

# ---- an 8-bit RGB folder, mixed sizes, nested, each image its own range
rgb = {}
for i, (lo, hi, h, w) in enumerate([(10, 100, 17, 23), (50, 200, 9, 31),
                                    (30, 250, 21, 8), (0, 120, 12, 12)]):
    name = ("sub/" if i % 2 else "") + "im%d.png" % i
    a = rng.integers(lo, hi + 1, (h, w, 3), dtype=np.uint8)
    os.makedirs(os.path.dirname(p("rgb", name)), exist_ok=True)
    Image.fromarray(a).save(p("rgb", name))
    rgb[name] = a
pooled = np.concatenate([a.reshape(-1, 3) for a in rgb.values()])


def outputs(folder, ext):
    return {os.path.relpath(f, folder)[:-4]: f for f in
            glob.glob(os.path.join(folder, "**", "*" + ext), recursive=True)}


def same_files(a, b, ext, what):
    fa, fb = outputs(a, ext), outputs(b, ext)
    check(sorted(fa) == sorted(fb) and len(fa) > 0,
          "%s: outputs %s vs %s" % (what, sorted(fa), sorted(fb)))
    for k in fa:
        if k in fb:
            check(open(fa[k], "rb").read() == open(fb[k], "rb").read(),
                  "%s: %s differs" % (what, k))


# zscore --dataset: pooled mean 0 and std 1 over every output
run("normalize", "zscore", "--dataset", "-j", "2", p("rgb"), "-o", p("z2"))
r = run("normalize", "zscore", "--dataset", "-j", "1", "--progress", p("rgb"),
        "-o", p("z1"))
# --progress: a labelled line for each pass, the first pass's reaching the
# total (the line is redrawn over itself with \r)
lines = r.stderr.replace("\r", "\n").splitlines()
n_rgb = len(outputs(p("z2"), ".npy"))
check(any("--dataset, pass 1 of 2: %d/%d" % (n_rgb, n_rgb) in l for l in lines),
      "--progress: the first pass's line: %r" % r.stderr[-300:])
check(any("--dataset, pass 2 of 2: %d/%d" % (n_rgb, n_rgb) in l for l in lines),
      "--progress: the second pass's line: %r" % r.stderr[-300:])
same_files(p("z1"), p("z2"), ".npy", "zscore --dataset -j 1 vs -j 2")
z = outputs(p("z2"), ".npy")
check(len(z) == 4, "zscore --dataset: %d outputs" % len(z))
allz = np.concatenate([np.load(f).reshape(-1, 3).astype(np.float64)
                       for f in z.values()])
check(np.all(np.abs(allz.mean(0)) < 1e-6), "pooled mean %r" % allz.mean(0))
check(np.all(np.abs(allz.std(0) - 1) < 1e-6), "pooled std %r" % allz.std(0))
# ... and every output is (x - pooled mean) / pooled std, not per image
m, s = pooled.astype(np.float64).mean(0), pooled.astype(np.float64).std(0)
far = 0
for name, a in rgb.items():
    got = np.load(z[name[:-4]]).astype(np.float64)
    want = (a.astype(np.float64) - m) / s
    check(np.allclose(got, want, rtol=0, atol=1e-6), "%s: zscore values" % name)
    far += np.any(np.abs(got.reshape(-1, 3).mean(0)) > 0.1)
check(far >= 2, "zscore --dataset: single images are not each mean 0")

# minmax --dataset: the pooled min maps to 0 and the pooled max to 255
run("normalize", "minmax", "--dataset", "-j", "2", p("rgb"), "-o", p("m2"))
run("normalize", "minmax", "--dataset", "-j", "1", p("rgb"), "-o", p("m1"))
same_files(p("m1"), p("m2"), ".png", "minmax --dataset -j 1 vs -j 2")
lo, hi = pooled.min(0).astype(np.int64), pooled.max(0).astype(np.int64)


def stretch(a, lo, hi, full=255):
    """round_half_even((x - lo) * full / (hi - lo)), exact, saturating."""
    x = np.clip(a.astype(np.int64), lo, hi) - lo
    num, den = x * full, hi - lo
    q, r = num // den, num % den
    return q + ((2 * r > den) | ((2 * r == den) & (q % 2 == 1)))


mm = outputs(p("m2"), ".png")
outs = []
for name, a in rgb.items():
    got = np.asarray(Image.open(mm[name[:-4]]))
    outs.append(got.reshape(-1, 3))
    check(np.array_equal(got, stretch(a, lo, hi)), "%s: minmax values" % name)
allm = np.concatenate(outs)
check(list(allm.min(0)) == [0, 0, 0] and list(allm.max(0)) == [255] * 3,
      "minmax --dataset: pooled range %r..%r" % (allm.min(0), allm.max(0)))
check(sum(int(o.min()) > 0 or int(o.max()) < 255 for o in outs) >= 2,
      "minmax --dataset: single images are not each stretched")

# --linked: one range over the colour channels
run("normalize", "minmax", "--dataset", "--linked", p("rgb"), "-o", p("ml"))
ml = outputs(p("ml"), ".png")
for name, a in rgb.items():
    got = np.asarray(Image.open(ml[name[:-4]]))
    check(np.array_equal(got, stretch(a, int(pooled.min()), int(pooled.max()))),
          "%s: minmax --linked values" % name)


rank_value = checklib.rank_percentile


# clip --dataset 2,97: the pooled percentiles by the rank rule
run("normalize", "clip", "2,97", "--dataset", "-j", "2", p("rgb"), "-o",
    p("c2"))
run("normalize", "clip", "2,97", "--dataset", "-j", "1", p("rgb"), "-o",
    p("c1"))
same_files(p("c1"), p("c2"), ".png", "clip --dataset -j 1 vs -j 2")
cl = np.array([rank_value(np.sort(pooled[:, c]), 2) for c in range(3)],
              dtype=np.int64)
ch = np.array([rank_value(np.sort(pooled[:, c]), 97) for c in range(3)],
              dtype=np.int64)
cc = outputs(p("c2"), ".png")
for name, a in rgb.items():
    got = np.asarray(Image.open(cc[name[:-4]]))
    check(np.array_equal(got, stretch(a, cl, ch)), "%s: clip values" % name)

# --stats-from a dataset record gives what --dataset gives
rec = run("--dataset", "--json", "--backend", "cpu", p("rgb")).stdout
with open(p("stats.jsonl"), "w") as f:
    f.write(rec)
run("normalize", "--stats-from", p("stats.jsonl"), p("rgb"), "-o", p("sf"))
same_files(p("z2"), p("sf"), ".npy", "--stats-from vs --dataset zscore")

# ---- --scale unit: 8- and 16-bit pooled in 0..1 (torchvision's workflow)
mixed = {}
os.makedirs(p("mixed"), exist_ok=True)
for i, a in enumerate(list(rgb.values())[:2]):
    Image.fromarray(a).save(p("mixed", "a%d.png" % i))
    mixed["a%d" % i] = a.astype(np.float64) / 255
for i in range(2):
    b = rng.integers(1000 * (i + 1), 60000, (7 + i, 11, 3), dtype=np.uint16)
    with open(p("mixed", "b%d.png" % i), "wb") as f:
        png.Writer(11, 7 + i, greyscale=False, bitdepth=16).write(
            f, b.reshape(7 + i, -1).tolist())
    mixed["b%d" % i] = b.astype(np.float64) / 65535
run("normalize", "zscore", "--dataset", p("mixed"), "-o", p("mx"), rc=1)
check(not os.path.exists(p("mx")), "mixed depths: nothing written, not even OUT")
run("normalize", "zscore", "--dataset", "--scale", "unit", p("mixed"), "-o",
    p("u"))
pu = np.concatenate([v.reshape(-1, 3) for v in mixed.values()])
mu, su = pu.mean(0), pu.std(0)
u = outputs(p("u"), ".npy")
for k, v in mixed.items():
    got = np.load(u[k]).astype(np.float64)
    check(np.allclose(got, (v - mu) / su, rtol=0, atol=1e-5),
          "--scale unit %s: values" % k)
allu = np.concatenate([np.load(f).reshape(-1, 3).astype(np.float64)
                       for f in u.values()])
check(np.all(np.abs(allu.mean(0)) < 1e-6) and
      np.all(np.abs(allu.std(0) - 1) < 1e-6),
      "--scale unit: pooled mean %r std %r" % (allu.mean(0), allu.std(0)))

# ---- mixed layouts are refused, naming the odd file; nothing written
os.makedirs(p("lay"), exist_ok=True)
Image.fromarray(list(rgb.values())[0]).save(p("lay", "a.png"))
Image.fromarray(list(rgb.values())[1][:, :, 0]).save(p("lay", "b.png"))
r = run("normalize", "--dataset", p("lay"), "-o", p("layo"), rc=1)
check("b.png" in r.stderr and "layout" in r.stderr,
      "mixed layouts: message %r" % r.stderr)
check(not os.path.exists(p("layo")), "mixed layouts: nothing written, not even OUT")
run("normalize", "--dataset", "--mean", "1", "--std", "2", p("rgb"), "-o",
    p("x"), rc=2)

# ---- float: pooled histograms without --range (the first pass)
hdr = {}
os.makedirs(p("hdr"), exist_ok=True)
for i in range(3):
    h, w = 5 + i, 9 + 2 * i
    mant = rng.integers(1, 256, (h, w, 3)).astype(np.uint8)
    e = np.full((h, w, 1), 126 + 2 * i, np.uint8)
    with open(p("hdr", "h%d.hdr" % i), "wb") as f:
        f.write(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y %d +X %d\n"
                % (h, w))
        f.write(np.concatenate([mant, e], 2).tobytes())
    hdr["h%d" % i] = mant.astype(np.float64) * 2.0 ** (126 + 2 * i - 136)
ph = np.concatenate([v.reshape(-1, 3) for v in hdr.values()])
flo, fhi = ph.min(), ph.max()
bins = 65536
r = run("--dataset-only", "--histogram", "--json", "--bins", str(bins),
        "--progress", p("hdr"))
js = json.loads(r.stdout)["dataset"]
nh = len(hdr)
check(("--dataset, float range: %d/%d" % (nh, nh)) in r.stderr.replace("\r", "\n"),
      "--progress: the float range pass's line: %r" % r.stderr[-300:])
for c in range(3):
    st = js["stats"][c]
    hh = st.get("histogram", {})
    check(hh.get("lo") == flo and hh.get("hi") == fhi,
          "float pooled histogram range %r..%r, want %r..%r"
          % (hh.get("lo"), hh.get("hi"), flo, fhi))
    x = ph[:, c]
    idx = np.clip(np.floor((x - flo) * (bins / (fhi - flo))), 0, bins - 1)
    want = np.bincount(idx.astype(np.int64), minlength=bins)
    check(hh.get("counts") == want.tolist(),
          "channel %d: float pooled histogram counts" % c)
    npc, _ = np.histogram(x, bins=bins, range=(flo, fhi))
    check(np.abs(np.array(hh.get("counts", [0] * bins)) - npc).sum() <= 2,
          "channel %d: against np.histogram" % c)

# clip --dataset on float: the pooled percentiles map to 0 and 1
run("normalize", "clip", "0,100", "--dataset", p("hdr"), "-o", p("fc"))
fc = outputs(p("fc"), ".npy")
for k, v in hdr.items():
    check(k in fc, "float clip: no output for %s" % k)
    if k not in fc:
        continue
    got = np.load(fc[k]).astype(np.float64)
    want = (v - ph.min(0)) / (ph.max(0) - ph.min(0))
    check(np.allclose(got, want, rtol=0, atol=1e-6), "float clip %s" % k)

# ---- the output folder inside the input folder is no input
os.makedirs(p("walk"), exist_ok=True)
for name, a in list(rgb.items())[:2]:
    Image.fromarray(a).save(p("walk", os.path.basename(name)))
run("normalize", ".", "-o", "out", cwd=p("walk"))
run("normalize", ".", "-o", "out", cwd=p("walk"))
got = sorted(os.path.relpath(f, p("walk")) for f in
             glob.glob(p("walk", "**", "*.png"), recursive=True))
check(got == ["im0.png", "im1.png", "out/im0.png", "out/im1.png"],
      "normalize . -o out twice: %r" % got)

checklib.finish("normalize_dataset_check")
