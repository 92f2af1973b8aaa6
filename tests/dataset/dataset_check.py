"""imgstat --dataset against numpy over pixels decoded with PIL (pypng for
16-bit colour, which PIL cannot read). Usage: dataset_check.py IMGSTAT CORPUS TMP
"""
import csv, io, json, math, os, subprocess, sys
from fractions import Fraction

import numpy as np
import png
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib
import checklib  # noqa: E402

IMGSTAT, CORPUS, TMP = sys.argv[1:4]
check = checklib.check


def run(*args, rc=0):
    r = subprocess.run([IMGSTAT, "--backend", "cpu", "-q", *args],
                       capture_output=True, text=True)
    check(r.returncode == rc, "%s: exit %d, want %d; stderr %s"
          % (" ".join(args), r.returncode, rc, r.stderr))
    return r.stdout


def dataset_record(out):
    recs = [json.loads(l) for l in out.splitlines() if l.startswith('{"dataset"')]
    check(len(recs) == 1, "one dataset record, got %d" % len(recs))
    return recs[-1]["dataset"] if recs else {}


def photo(rng, w, h):
    """Photo content: a crop of a corpus photo, else smooth gradients with
    texture and noise."""
    srcs = [os.path.join(CORPUS, "photos", n) for n in
            ("kodim01.png", "kodim04.png", "kodim23.png")]
    srcs = [s for s in srcs if os.path.exists(s)]
    if srcs:
        im = np.asarray(Image.open(srcs[rng.integers(len(srcs))]).convert("RGB"))
        y = rng.integers(0, im.shape[0] - h + 1)
        x = rng.integers(0, im.shape[1] - w + 1)
        return im[y:y + h, x:x + w].copy()
    yy, xx = np.mgrid[0:h, 0:w]
    base = rng.uniform(80, 170, 3)  # little clipping: alike spreads
    out = np.empty((h, w, 3))
    for c in range(3):
        # periods of 19 to 50 pixels: whole cycles over a crop, so that
        # the photos' spread is alike, as real photos' is (the outlier check)
        out[..., c] = (base[c] + 30 * np.sin(xx / rng.uniform(3, 8) + c)
                       + 20 * np.cos(yy / rng.uniform(3, 8)))
    out += rng.normal(0, 10, out.shape)
    return np.clip(out, 0, 255).astype(np.uint8)


def save(path, a):
    """8-bit through PIL; 16-bit through pypng."""
    if a.dtype == np.uint8:
        Image.fromarray(a).save(path)
    else:
        planes = 1 if a.ndim == 2 else a.shape[2]
        w = png.Writer(a.shape[1], a.shape[0], greyscale=planes == 1,
                       alpha=planes in (2, 4), bitdepth=16)
        with open(path, "wb") as f:
            w.write(f, a.reshape(a.shape[0], -1).tolist())


def load(path):
    """The reference decoding: PIL, or pypng for 16-bit."""
    r = png.Reader(filename=path).asDirect() if path.endswith(".png") else None
    if r and r[3]["bitdepth"] == 16:
        planes = r[3]["planes"]
        a = np.vstack([np.asarray(row, dtype=np.uint16) for row in r[2]])
        return a.reshape(r[1], r[0], planes) if planes > 1 else a.reshape(r[1], r[0])
    return np.asarray(Image.open(path))


def planes_of(a):
    return [a] if a.ndim == 2 else [a[..., c] for c in range(a.shape[2])]


def reference(images, ddof=0, scale=False):
    """images: list of (name, list of channel planes, top). The pooled figures
    per channel, exactly (Fractions), min/max with the first (ordinal, y, x)."""
    nch = len(images[0][1])
    out = []
    for c in range(nch):
        n, s, q = 0, Fraction(0), Fraction(0)
        mn = mx = None
        for k, (name, planes, top) in enumerate(images):
            p = planes[c].astype(np.int64)
            f = Fraction(1, top) if scale else Fraction(1)
            n += p.size
            s += int(p.sum()) * f
            q += int((p * p).sum()) * f * f
            lo, hi = p.min(), p.max()
            ylo, xlo = np.argwhere(p == lo)[0]
            yhi, xhi = np.argwhere(p == hi)[0]
            vlo, vhi = Fraction(int(lo)) * f, Fraction(int(hi)) * f
            if mn is None or vlo < mn[0]:
                mn = (vlo, name, int(xlo), int(ylo))
            if mx is None or vhi > mx[0]:
                mx = (vhi, name, int(xhi), int(yhi))
        var = (n * q - s * s) / (n * (n - ddof))
        out.append(dict(count=n, sum=s, sum_sq=q, mean=s / n,
                        std=math.sqrt(var), min=mn, max=mx))
    return out


def close(a, b, rel=1e-12):
    return abs(a - b) <= rel * max(1.0, abs(b))


def compare(what, rec, ref, exact_sums):
    stats = rec.get("stats", [])
    check(len(stats) == len(ref), "%s: %d channels, want %d" % (what, len(stats), len(ref)))
    for st, r in zip(stats, ref):
        ch = st["channel"]
        check(st["count"] == r["count"], "%s %s: count" % (what, ch))
        if exact_sums:
            check(st["sum"] == r["sum"] and st["sum_sq"] == r["sum_sq"],
                  "%s %s: sums %s %s, want %s %s" % (what, ch, st["sum"], st["sum_sq"], r["sum"], r["sum_sq"]))
            check(st["mean"] == float(r["mean"]),
                  "%s %s: mean %r, want %r (nearest double)" % (what, ch, st["mean"], float(r["mean"])))
        else:
            check(close(st["sum"], float(r["sum"])) and close(st["sum_sq"], float(r["sum_sq"])),
                  "%s %s: sums" % (what, ch))
            check(close(st["mean"], float(r["mean"])), "%s %s: mean %r, want %r" % (what, ch, st["mean"], float(r["mean"])))
        check(close(st["std"], r["std"]), "%s %s: std %r, want %r" % (what, ch, st["std"], r["std"]))
        for key in ("min", "max"):
            v, name, x, y = r[key]
            got = (st[key], st[key + "_file"], st[key + "_x"], st[key + "_y"])
            check(close(got[0], float(v)) and got[1:] == (name, x, y),
                  "%s %s: %s %r, want %r" % (what, ch, key, got, (float(v), name, x, y)))


rng = np.random.default_rng(10)

# ---- a folder of mixed sizes: RGB 8-bit, one gray, one RGBA ----------------
mixed = os.path.join(TMP, "mixed")
os.makedirs(mixed)
sizes = [(64, 48), (80, 60), (50, 70), (100, 30), (33, 17), (72, 72)]
for i, (w, h) in enumerate(sizes):
    save(os.path.join(mixed, "p%02d.png" % i), photo(rng, w, h))
save(os.path.join(mixed, "q_gray.png"), photo(rng, 40, 30)[..., 1].copy())
rgba = np.dstack([photo(rng, 30, 20), rng.integers(0, 256, (20, 30), dtype=np.uint8)])
save(os.path.join(mixed, "r_rgba.png"), rgba)
names = sorted(os.path.join(mixed, f) for f in os.listdir(mixed))
arrays = {n: load(n) for n in names}

out = run("--dataset", "--json", mixed)
rec = dataset_record(out)
rgb = [(n, planes_of(arrays[n]), 255) for n in names if arrays[n].ndim == 3 and arrays[n].shape[2] == 3]
compare("keep", rec, reference(rgb), True)
check(rec.get("images") == 8 and rec.get("pooled") == 6 and rec.get("failed") == 0,
      "keep: images/pooled/failed %r" % [rec.get(k) for k in ("images", "pooled", "failed")])
check(sorted(e["file"] for e in rec.get("excluded", [])) ==
      [os.path.join(mixed, "q_gray.png"), os.path.join(mixed, "r_rgba.png")],
      "keep: excluded %r" % rec.get("excluded"))
check(rec.get("layout") == "RGB" and rec.get("depth") == 8, "keep: layout/depth")
check(len([l for l in out.splitlines() if l.startswith('{"file"')]) == 8, "keep: 8 image records too")
for l in out.splitlines():
    if l.startswith('{"file"'):
        r = json.loads(l)
        planes = planes_of(arrays[r["file"]])
        check([s["sum_sq"] for s in r["stats"]] == [int((p.astype(np.int64) ** 2).sum()) for p in planes],
              "image record sum_sq of %s" % r["file"])

rec1 = dataset_record(run("--dataset", "--json", "--ddof", "1", mixed))
compare("ddof 1", rec1, reference(rgb, ddof=1), True)

# determinism: the record's bytes for -j 1, 2, 3
outs = [run("--dataset-only", "--json", "-j", j, mixed) for j in ("1", "2", "3")]
check(outs[0] == outs[1] == outs[2] and outs[0].count("\n") == 1,
      "--dataset-only: the same bytes for -j 1, 2, 3")

# --as rgb: gray replicated, alpha dropped
rec = dataset_record(run("--dataset-only", "--json", "--as", "rgb", mixed))
conv = []
for n in names:
    a = arrays[n]
    conv.append((n, [a, a, a] if a.ndim == 2 else planes_of(a)[:3], 255))
compare("--as rgb", rec, reference(conv), True)
check(rec.get("excluded") == [] and rec.get("pooled") == 8, "--as rgb: nothing left out")

# --as gray: Rec. 601 luma as PIL's convert("L")
rec = dataset_record(run("--dataset-only", "--json", "--as", "gray", mixed))
conv = []
for n in names:
    a = arrays[n]
    if a.ndim == 2:
        g = a
    else:
        g = np.asarray(Image.fromarray(a[..., :3]).convert("L"))
        p = [a[..., c].astype(np.int64) for c in range(3)]
        check(np.array_equal(g, (19595 * p[0] + 38470 * p[1] + 7471 * p[2] + 0x8000) >> 16),
              "the luma formula is PIL's convert('L')")
    conv.append((n, [g], 255))
compare("--as gray", rec, reference(conv), True)

# --as rgba: opaque alpha added
rec = dataset_record(run("--dataset-only", "--json", "--as", "rgba", mixed))
conv = []
for n in names:
    a = arrays[n]
    if a.ndim == 2:
        conv.append((n, [a, a, a, np.full_like(a, 255)], 255))
    elif a.shape[2] == 3:
        conv.append((n, planes_of(a) + [np.full_like(a[..., 0], 255)], 255))
    else:
        conv.append((n, planes_of(a), 255))
compare("--as rgba", rec, reference(conv), True)

# ---- 8- and 16-bit with --scale unit ---------------------------------------
deep = os.path.join(TMP, "deep")
os.makedirs(deep)
for i in range(3):
    save(os.path.join(deep, "a%d.png" % i), photo(rng, 40 + 8 * i, 30))
    a16 = photo(rng, 36, 28 + 4 * i).astype(np.uint16) * 257 + rng.integers(0, 257, (28 + 4 * i, 36, 3)).astype(np.uint16)
    save(os.path.join(deep, "b%d.png" % i), a16)
dnames = sorted(os.path.join(deep, f) for f in os.listdir(deep))
darr = {n: load(n) for n in dnames}
check(all(darr[n].dtype == (np.uint16 if "/b" in n else np.uint8) for n in dnames), "16-bit PNGs decoded as 16-bit")
out = run("--dataset", "--json", "--scale", "unit", deep)
rec = dataset_record(out)
ref = reference([(n, planes_of(darr[n]), 65535 if "/b" in n else 255) for n in dnames], scale=True)
compare("--scale unit", rec, ref, False)
check(rec.get("depths") == [8, 16] and rec.get("excluded") == [], "--scale unit: depths [8, 16], nothing left out")
rec_keep = dataset_record(run("--dataset-only", "--json", deep))
check(rec_keep.get("pooled") == 3 and len(rec_keep.get("excluded", [])) == 3,
      "without --scale the 16-bit images are left out")
text = run("--dataset-only", "--scale", "unit", deep)
line = [l for l in text.splitlines() if l.startswith("Normalize(mean=[")]
check(len(line) == 1, "text: one Normalize line")
if line:
    nums = line[0].replace("Normalize(mean=[", "").replace("], std=[", ",").replace("])", "").split(",")
    got = [float(v) for v in nums]
    want = [float(r["mean"]) for r in ref] + [r["std"] for r in ref]
    check(all(close(g, w) for g, w in zip(got, want)) and len(got) == 6,
          "Normalize line %s, want %r" % (line[0], want))
outs = [run("--dataset-only", "--json", "--scale", "unit", "-j", j, deep) for j in ("1", "3")]
check(outs[0] == outs[1], "--scale unit: the same bytes for -j 1 and 3")

# ties across depths: the first image in order wins, whatever its depth
tie = os.path.join(TMP, "tie")
os.makedirs(tie)
t0 = np.full((4, 4, 3), 100, np.uint8)
t0[1, 1] = 0
t0[2, 2] = 255
t1 = np.full((4, 4, 3), 30000, np.uint16)
t1[0, 0] = 0
t1[0, 1] = 65535
save(os.path.join(tie, "t0.png"), t0)
save(os.path.join(tie, "t1.png"), t1)
rec = dataset_record(run("--dataset-only", "--json", "--scale", "unit", tie))
tnames = sorted(os.path.join(tie, f) for f in os.listdir(tie))
compare("ties across depths", rec, reference([(n, planes_of(load(n)), 65535 if n.endswith("t1.png") else 255) for n in tnames], scale=True), False)

# ---- pooled histograms: median and percentiles by the rank rule -------------
rec = dataset_record(run("--dataset-only", "--json", "--histogram", "--percentiles", "1,25,99", mixed))
for c, st in enumerate(rec.get("stats", [])):
    allv = np.sort(np.concatenate([planes_of(arrays[n])[c].ravel() for n, _, _ in rgb]))
    def rank(p):
        return int(checklib.rank_percentile(allv, p))
    check(st.get("median") == rank(50) and st.get("percentiles") == {"1": rank(1), "25": rank(25), "99": rank(99)},
          "pooled percentiles of %s: %r %r" % (st["channel"], st.get("median"), st.get("percentiles")))
rec = dataset_record(run("--dataset-only", "--json", "--histogram", "--scale", "unit", deep))
for c, st in enumerate(rec.get("stats", [])):
    allv = np.sort(np.concatenate([planes_of(darr[n])[c].ravel().astype(np.float64) / (65535 if "/b" in n else 255)
                                   for n in dnames]))
    check(close(st.get("median", -1), checklib.rank_percentile(allv, 50)), "--scale unit median of %s" % st["channel"])

# ---- CSV: every row has the header's columns; the figures are the JSON's -----
out = run("--dataset", "--csv", mixed)
rows = list(csv.reader(io.StringIO(out)))
check(all(len(r) == len(rows[0]) for r in rows), "CSV: every row has %d columns" % len(rows[0]))
ds = [r for r in rows if r[5] == "dataset"]
rec = dataset_record(run("--dataset-only", "--json", mixed))
head = rows[0]
check([int(r[head.index("sum_sq")]) for r in ds] == [s["sum_sq"] for s in rec["stats"]], "CSV: dataset sum_sq")
check(sorted(r[0] for r in rows if r[5] == "excluded") == sorted(e["file"] for e in rec["excluded"]), "CSV: excluded rows")

# ---- outliers: an all-black frame among photos -----------------------------
outl = os.path.join(TMP, "outl")
os.makedirs(outl)
for i in range(14):
    save(os.path.join(outl, "f%02d.png" % i), photo(rng, 96, 64))
rec = dataset_record(run("--dataset-only", "--json", outl))
check(rec.get("outliers") == [], "ordinary photos are not flagged: %r" % rec.get("outliers"))
save(os.path.join(outl, "f07b.png"), np.zeros((64, 96, 3), np.uint8))
rec = dataset_record(run("--dataset-only", "--json", outl))
flagged = [o["file"] for o in rec.get("outliers", [])]
check(flagged == [os.path.join(outl, "f07b.png")], "the black frame is named, and only it: %r" % rec.get("outliers"))
check(any("constant" in o["reason"] for o in rec.get("outliers", [])), "the black frame's reason: constant")
# a far-off std: salt-and-pepper noise (not constant)
save(os.path.join(outl, "f08w.png"), (rng.integers(0, 2, (64, 96, 3)) * 255).astype(np.uint8))
rec = dataset_record(run("--dataset-only", "--json", outl))
noisy = [o for o in rec.get("outliers", []) if o["file"].endswith("f08w.png")]
check(len(noisy) == 1 and "std of " in noisy[0]["reason"], "a noise frame's std is flagged: %r" % rec.get("outliers"))
check(len(rec.get("outliers", [])) == 2, "only the black and the noise frame: %r" % rec.get("outliers"))
# threshold settable: a huge one flags no z-score outlier
rec = dataset_record(run("--dataset-only", "--json", "--outlier-z", "1000", outl))
check(not any("robust z" in o["reason"] for o in rec.get("outliers", [])), "--outlier-z 1000: no z-score outlier")
# another size
save(os.path.join(outl, "f09s.png"), photo(rng, 50, 64))
rec = dataset_record(run("--dataset-only", "--json", outl))
small = [o for o in rec.get("outliers", []) if o["file"].endswith("f09s.png")]
check(len(small) == 1 and "size 50x64, most are 96x64" in small[0]["reason"], "another size is flagged: %r" % small)
# every reason of every image, against numpy's per-image means and stds
# (float64, 0..1 units), their median and MAD and the z-scores printed
# to one decimal (--outlier-z 3.5 flags more of them)
for z_thr in (5.0, 3.5):
    args = ["--dataset-only", "--json", outl] + (["--outlier-z", "3.5"] if z_thr == 3.5 else [])
    rec = dataset_record(run(*args))
    names = sorted(os.listdir(outl))
    ims = [np.asarray(Image.open(os.path.join(outl, n))).astype(np.float64) for n in names]
    sizes = ["%dx%d" % (a.shape[1], a.shape[0]) for a in ims]
    most = max(set(sizes), key=sizes.count)
    want = []
    zs = {}
    for c in range(3):
        for which in (0, 1):
            x = np.array([(a[..., c].std() if which else a[..., c].mean()) / 255 for a in ims])
            med = np.median(x)
            dev = np.abs(x - med)
            mad = np.median(dev)
            unit = 1.4826 * mad if mad > 0 else 1.2533 * dev.mean()
            zs[c, which] = (x - med) / unit
    for i, (n, a) in enumerate(zip(names, ims)):
        parts = []
        if sizes[i] != most:
            parts.append("size %s, most are %s" % (sizes[i], most))
        if a.min() == a.max():
            parts.append("constant (every sample %g)" % a.min())
        for c in range(3):
            for which in (0, 1):
                z = zs[c, which][i]
                if abs(z) > z_thr:
                    parts.append("%s of %s: robust z %+.1f" % ("std" if which else "mean", "RGB"[c], z))
        if parts:
            want.append({"file": os.path.join(outl, n), "reason": "; ".join(parts)})
    check(rec.get("outliers") == want, "outliers at z %g against numpy:\n  got  %r\n  want %r" % (z_thr, rec.get("outliers"), want))

# ---- normalize --stats-from --------------------------------------------------
stats = os.path.join(TMP, "stats.jsonl")
with open(stats, "w") as f:
    f.write(run("--dataset", "--json", mixed))
src = os.path.join(mixed, "p00.png")
outnpy = os.path.join(TMP, "n.npy")
r = subprocess.run([IMGSTAT, "normalize", "--backend", "cpu", "--stats-from", stats, src, "-o", outnpy],
                   capture_output=True, text=True)
check(r.returncode == 0, "normalize --stats-from a dataset record: %s" % r.stderr)
if r.returncode == 0:
    got = np.load(outnpy)
    rec = dataset_record(open(stats).read())
    a = arrays[src].astype(np.float64)
    mean = np.array([s["mean"] for s in rec["stats"]])
    sd = np.array([s["std"] for s in rec["stats"]])
    want = (a - mean) / sd
    got = got if got.shape == want.shape else np.moveaxis(got, 0, -1)
    check(got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-5),
          "normalize --stats-from: the dataset's mean and std were used")
images_only = os.path.join(TMP, "images.jsonl")
with open(images_only, "w") as f:
    f.write(run("--json", mixed))
r = subprocess.run([IMGSTAT, "normalize", "--stats-from", images_only, src, "-o", outnpy],
                   capture_output=True, text=True)
check(r.returncode == 2 and "8 image records and no dataset record" in r.stderr,
      "normalize --stats-from several image records: %d %s" % (r.returncode, r.stderr))

checklib.finish("dataset_check")
