#!/usr/bin/env python3
"""int16 samples: an exact integer type, every figure against numpy.

Usage: int16_check.py IMGSTAT TMPDIR

Signed 16-bit samples (.npy int16, a GeoTIFF of GDAL's Int16 with 2
bands) holding both extremes, negative values and a nodata value. Checked
against numpy's exact integers (Python's fractions for the mean and the
variance): per channel count, min, max and their first positions, the sum
and the sum of squares (exact integers), the mean (the double nearest to
sum / count), std (within one rounding of the exact root), the record's
"sample":"int16"; the 65536-bin histogram shown in 65536 bins (--bins)
against numpy's counts; --nodata -1024 and a mask over int16, an int16
mask (non-zero where the value is) and an int16 label image refused;
--dataset over several files: the pooled figures exact and the percentiles numpy's
(method="inverted_cdf", the rank rule of docs/normalize.md), also with a
mask and nodata, and the same when every input comes through a FIFO,
which can be read only once: no second read happens (a float pool read
so says why its percentiles are left within their bins: the contrast is
checked too); normalize of an int16 input maps its values. Skips (77)
without GDAL's Python module (python3-gdal).
"""
import csv
import io
import math
import os
import sys
import threading
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np

gdal = checklib.gdal_or_skip()
fail = checklib.fail
IMGSTAT, TMP = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(16)


def records(*args):
    r, recs = checklib.json_records(IMGSTAT, *args)
    if r.returncode != 0:
        fail("imgstat %s: exit %d, %s" % (" ".join(args), r.returncode,
                                          r.stderr))
    return recs


def check_channel(what, st, a, valid, nodata_count=None):
    """st: a channel's record; a: its 2-D int16 plane; valid: the samples
    that enter the figures."""
    e = checklib.exact_figures(a, valid)
    n, s, q = e["count"], e["sum"], e["sum_sq"]
    if st["count"] != n:
        fail("%s: count %d, numpy %d" % (what, st["count"], n))
        return
    if st["min"] != e["min"] or st["max"] != e["max"]:
        fail("%s: min/max %r %r, numpy %d %d" % (what, st["min"], st["max"],
                                                 e["min"], e["max"]))
    if st["sum"] != s or st["sum_sq"] != q:
        fail("%s: sum/sum_sq %r %r, numpy %d %d" % (what, st["sum"],
                                                    st["sum_sq"], s, q))
    if st["mean"] != float(Fraction(s, n)):  # the nearest double
        fail("%s: mean %r, exactly %r" % (what, st["mean"],
                                           float(Fraction(s, n))))
    var = Fraction(q, n) - Fraction(s, n) ** 2
    exact = math.sqrt(var)  # within a rounding of the exact root
    if abs(st["std"] - exact) > 2 * math.ulp(exact):
        fail("%s: std %r, exactly %r" % (what, st["std"], exact))
    for which in ("min", "max"):
        pos = (st[which + "_x"], st[which + "_y"])
        want = (e[which + "_x"], e[which + "_y"])
        if pos != want:
            fail("%s: %s at %s, numpy %s" % (what, which, pos, want))
    if nodata_count is not None and st.get("nodata_count") != nodata_count:
        fail("%s: nodata_count %r, numpy %d" % (what, st.get("nodata_count"),
                                                nodata_count))


def plane(h, w):
    a = rng.integers(-3000, 4000, (h, w)).astype(np.int16)
    a[rng.random(a.shape) < 0.1] = -1024  # air
    return a


# ---- one image: .npy and a 2-band GeoTIFF ---------------------------------
a = plane(37, 29)
a[3, 5] = -32768
a[30, 2] = 32767
a[0, 0] = -1  # 0xFFFF as stored: no unsigned reading may pass
p_npy = os.path.join(TMP, "a.npy")
np.save(p_npy, a)
b = plane(37, 29)
b[10, 10] = 32767
b[11, 11] = -32768
p_tif = checklib.write_geotiff(os.path.join(TMP, "ab.tif"), [a, b],
                               gdal.GDT_Int16)

everything = np.ones(a.shape, bool)
for path, bands in ((p_npy, [a]), (p_tif, [a, b])):
    recs = records("--histogram", "--bins", "65536", path)
    if len(recs) != 1:
        continue
    rec = recs[0]
    if rec.get("sample") != "int16" or rec.get("depth") != 16:
        fail("%s: sample %r depth %r, want int16 16" % (path, rec.get("sample"),
                                                       rec.get("depth")))
    for c, band in enumerate(bands):
        st = rec["stats"][c]
        check_channel("%s ch %d" % (path, c), st, band, everything)
        h = st["histogram"]
        want = np.bincount(band.astype(np.int64).ravel() + 32768,
                           minlength=65536)
        if h["lo"] != -32768 or h["hi"] != 32767 or h["counts"] != want.tolist():
            fail("%s ch %d: histogram lo %r hi %r or counts differ from numpy"
                 % (path, c, h["lo"], h["hi"]))
        for p in (1, 99):
            want_p = float(np.percentile(band, p, method="inverted_cdf"))
            if st["percentiles"][str(p)] != want_p:
                fail("%s ch %d: p%d %r, numpy %r" % (path, c, p,
                                                     st["percentiles"][str(p)],
                                                     want_p))

# ---- more bands than a record holds inline: 20 bands (the figures taken
# back to the values from each band's own partial, band 18's sum
# negative), alone, with their histograms, with a label image under a
# mask, and with a nodata value (its counts in JSON, CSV and --brief)
wide = np.stack([plane(23, 31) for _ in range(20)], axis=2)
wide[:, :, 18] -= 4000
wide[1, 2, 19] = -32768
wide[4, 7, 17] = 32767
p_wide = os.path.join(TMP, "wide.npy")
np.save(p_wide, wide)
wmask = rng.random(wide.shape[:2]) < 0.7
p_wmask = os.path.join(TMP, "wide_mask.npy")
np.save(p_wmask, wmask.astype(np.uint8))
wlab = rng.integers(0, 3, wide.shape[:2]).astype(np.uint16)
p_wlab = os.path.join(TMP, "wide_labels.npy")
np.save(p_wlab, wlab)
for args in ([], ["--percentiles", "1,50,99"],
             ["--percentiles", "1,99", "--mask", p_wmask, "--labels", p_wlab],
             ["--nodata", "-1024"]):
    recs = records("--npy-layout", "hwc", *args, p_wide)
    if len(recs) != 1:
        continue
    rec = recs[0]
    masked = "--mask" in args
    valid = wmask if masked else np.ones(wide.shape[:2], bool)
    if "--nodata" in args:
        for c in range(20):
            band = wide[:, :, c]
            check_channel("20 bands --nodata -1024 ch %d" % c, rec["stats"][c],
                          band, band != -1024, int((band == -1024).sum()))
        continue
    regions = [("", rec, valid)]
    if masked:
        labels = rec.get("labels", [])
        if [x["label"] for x in labels] != [1, 2]:
            fail("20 bands: labels %r, want [1, 2]" %
                 [x["label"] for x in labels])
        regions += [(" label %d" % x["label"], x, valid & (wlab == x["label"]))
                    for x in labels]
    for tag, region, where in regions:
        for c in range(20):
            what = "20 bands %s%s ch %d" % (" ".join(args), tag, c)
            st = region["stats"][c]
            check_channel(what, st, wide[:, :, c], where)
            if args:
                for p in args[1].split(","):
                    want_p = float(np.percentile(wide[:, :, c][where], float(p),
                                                 method="inverted_cdf"))
                    if st["percentiles"][p] != want_p:
                        fail("%s: p%s %r, numpy %r" %
                             (what, p, st["percentiles"][p], want_p))

want_nodata = [int((wide[:, :, c] == -1024).sum()) for c in range(20)]
r = checklib.run(IMGSTAT, "--csv", "--npy-layout", "hwc", "--nodata", "-1024",
                 p_wide)
rows = list(csv.DictReader(io.StringIO(r.stdout)))
got = [int(row["nodata_count"]) for row in rows] if rows else []
if r.returncode != 0 or got != want_nodata:
    fail("20 bands, CSV nodata_count %r, numpy %r" % (got, want_nodata))
r = checklib.run(IMGSTAT, "--brief", "--npy-layout", "hwc", "--nodata", "-1024",
                 p_wide)
if r.returncode != 0 or " ".join(map(str, want_nodata)) not in r.stdout:
    fail("20 bands, --brief: nodata counts %r not in %r" %
         (want_nodata, r.stdout[:300]))

# text: the header says what the samples are, values printed signed
r = checklib.run(IMGSTAT, p_npy)
if "16-bit signed" not in r.stdout or "-32768" not in r.stdout:
    fail("text record: %r" % r.stdout)

# ---- nodata and a mask ----------------------------------------------------
mask = (rng.random(a.shape) < 0.6).astype(np.uint8)
p_mask = os.path.join(TMP, "a_mask.npy")
np.save(p_mask, mask)
for args, valid, nod in (
        (["--nodata", "-1024"], a != -1024, int((a == -1024).sum())),
        (["--mask", p_mask], mask != 0, None),
        (["--nodata", "-1024", "--mask", p_mask], (mask != 0) & (a != -1024),
         int(((mask != 0) & (a == -1024)).sum()))):
    recs = records(*args, p_npy)
    if recs:
        check_channel("%s %s" % (" ".join(args), p_npy), recs[0]["stats"][0], a,
                      valid, nod)
# an int16 mask: non-zero where the value is (not where the stored form is)
p_mask16 = os.path.join(TMP, "a_mask16.npy")
np.save(p_mask16, (mask.astype(np.int16) * -3))
recs = records("--mask", p_mask16, p_npy)
if recs:
    check_channel("--mask int16 %s" % p_npy, recs[0]["stats"][0], a, mask != 0)
    if recs[0].get("mask_pixels") != int(mask.sum()):
        fail("int16 mask: mask_pixels %r, numpy %d" %
             (recs[0].get("mask_pixels"), mask.sum()))
# an int16 label image is refused (labels are unsigned integers), naming it
r = checklib.run(IMGSTAT, "--labels", p_mask16, p_npy)
if r.returncode == 0 or "a_mask16.npy" not in r.stderr:
    fail("--labels int16: exit %d, %r" % (r.returncode, r.stderr))
# a nodata value that is no int16 sample is refused, naming the file
r = checklib.run(IMGSTAT, "--nodata", "40000", p_npy)
if r.returncode == 0 or "a.npy" not in r.stderr or "int16" not in r.stderr:
    fail("--nodata 40000 on int16: exit %d, %r" % (r.returncode, r.stderr))

# ---- the dataset: exact pooled figures and percentiles --------------------
slices = []
for k in range(5):
    s = plane(20 + k, 17)
    if k == 2:
        s[0, 1] = -32768
        s[4, 4] = 32767
    p = os.path.join(TMP, "slice_%d.npy" % k)
    np.save(p, s)
    slices.append((p, s))
PCT = [0.5, 50, 99.5]
pct_arg = ",".join("%g" % p for p in PCT)


def dataset(*args):
    recs = records("--dataset", "--percentiles", pct_arg, *args)
    ds_recs = [x["dataset"] for x in recs if "dataset" in x]
    if len(ds_recs) != 1:
        fail("--dataset %s: %d dataset records" % (" ".join(args), len(ds_recs)))
        return None
    return ds_recs[0]


d = dataset(*[p for p, _ in slices])
if d:
    # positions: the pooled minimum and maximum are in slice 2
    st = d["stats"][0]
    if (st["min_file"], st["min_x"], st["min_y"]) != (slices[2][0], 1, 0) or \
            (st["max_file"], st["max_x"], st["max_y"]) != (slices[2][0], 4, 4):
        fail("dataset extrema at %r" % ((st["min_file"], st["min_x"],
                                         st["min_y"], st["max_file"],
                                         st["max_x"], st["max_y"]),))
    v = np.concatenate([s.ravel() for _, s in slices]).astype(np.int64)
    if st["count"] != v.size or st["sum"] != int(v.sum()) or \
            st["sum_sq"] != int((v * v).sum()) or st["min"] != -32768 or \
            st["max"] != 32767 or st["mean"] != float(Fraction(int(v.sum()),
                                                                v.size)):
        fail("dataset figures %r" % st)
    for p in PCT:
        want = float(np.percentile(v, p, method="inverted_cdf"))
        if st["percentiles"].get("%g" % p) != want:
            fail("dataset p%g %r, numpy %r" % (p, st["percentiles"].get("%g" % p),
                                               want))
    if d.get("sample") != "int16" or "histogram_note" in d:
        fail("dataset: sample %r, note %r" % (d.get("sample"),
                                              d.get("histogram_note")))

# nodata and masks pooled: the foreground's figures and percentiles
masks = []
for k, (p, s) in enumerate(slices):
    m = (rng.random(s.shape) < 0.5).astype(np.uint8)
    mp = os.path.join(TMP, "masks")
    os.makedirs(mp, exist_ok=True)
    np.save(os.path.join(mp, "slice_%d.npy" % k), m)
    masks.append(m)
d = dataset("--nodata", "-1024", "--mask", os.path.join(TMP, "masks"),
            *[p for p, _ in slices])
if d:
    fg = np.concatenate([s[(m != 0) & (s != -1024)]
                         for (_, s), m in zip(slices, masks)]).astype(np.int64)
    st = d["stats"][0]
    want = (fg.size, int(fg.sum()), int((fg * fg).sum()), int(fg.min()),
            int(fg.max()), float(Fraction(int(fg.sum()), fg.size)))
    got = (st["count"], st["sum"], st["sum_sq"], st["min"], st["max"],
           st["mean"])
    if got != want:
        fail("masked dataset: %r, numpy %r" % (got, want))
    for p in PCT:
        w = float(np.percentile(fg, p, method="inverted_cdf"))
        if st["percentiles"].get("%g" % p) != w:
            fail("masked dataset p%g %r, numpy %r" %
                 (p, st["percentiles"].get("%g" % p), w))


# ---- read once: every input through a FIFO --------------------------------
def through_fifos(arrays, tag):
    """FIFOs each fed one array's .npy bytes by a thread; returns the
    paths and the threads."""
    paths, threads = [], []
    for k, arr in enumerate(arrays):
        src = os.path.join(TMP, "%s_src_%d.npy" % (tag, k))
        np.save(src, arr)
        with open(src, "rb") as f:
            data = f.read()
        os.unlink(src)
        fifo = os.path.join(TMP, "%s_fifo_%d.npy" % (tag, k))
        os.mkfifo(fifo)

        def feed(fifo=fifo, data=data):
            with open(fifo, "wb") as f:
                f.write(data)

        t = threading.Thread(target=feed, daemon=True)
        t.start()
        paths.append(fifo)
        threads.append(t)
    return paths, threads


arrays = [s for _, s in slices]
paths, threads = through_fifos(arrays, "i16")
d = dataset(*paths)
for t in threads:
    t.join(10)
if d:
    flat = np.concatenate([s.ravel() for s in arrays]).astype(np.int64)
    st = d["stats"][0]
    for p in PCT:
        want = float(np.percentile(flat, p, method="inverted_cdf"))
        if st["percentiles"].get("%g" % p) != want:
            fail("FIFO dataset p%g %r, numpy %r" % (p, st["percentiles"].get(
                "%g" % p), want))
    if "histogram_note" in d:
        fail("FIFO int16 dataset: %r (a second read?)" % d["histogram_note"])
# the contrast: the same values as float32 need the second read, which a
# FIFO cannot give: the record says so
paths, threads = through_fifos([s.astype(np.float32) for s in arrays], "f32")
d = dataset("--range", "-32768,32767", *paths)
for t in threads:
    t.join(10)
if d and "histogram_note" not in d:
    fail("FIFO float32 dataset: no histogram_note (the contrast)")
for k in range(len(arrays)):
    for tag in ("i16", "f32"):
        f = os.path.join(TMP, "%s_fifo_%d.npy" % (tag, k))
        if os.path.exists(f):
            os.unlink(f)

# ---- normalize: an int16 input's values, as float32 -----------------------
out = os.path.join(TMP, "z.npy")
r = checklib.run(IMGSTAT, "normalize", "--mean", "-100", "--std", "2", p_npy,
                 "-o", out)
if r.returncode != 0:
    fail("normalize int16: exit %d, %s" % (r.returncode, r.stderr))
else:
    z = np.load(out)
    want = ((a.astype(np.float64) + 100) / 2).astype(np.float32)
    if z.dtype != np.float32 or not np.array_equal(z, want):
        fail("normalize int16: output differs from numpy's (x + 100) / 2")
    os.unlink(out)

checklib.finish("int16")
