#!/usr/bin/env python3
"""Masks and labels: statistics of the pixels where the mask is non-zero,
and of each label of a label image.

Usage: mask_check.py IMGSTAT TMPDIR

Writes images (8-bit gray PNG, 16-bit RGB PNG, float32 .npy with NaN) and
masks (8-bit PNG of 0/255, 16-bit PNG of 0/1, .npy, an RGB mask non-zero in
one channel only) and checks every figure of `imgstat --mask` against numpy
over the pixels inside: count, min, max and the first positions of each,
exact sums (integers), mean and std (1e-12 relative for floats), the
histogram's percentiles by the rank rule, mask_pixels, NaN counted inside
only, nodata together with a mask. --mask DIR pairs each input with the
mask at its path below its folder by stem, any extension (subfolders), and
--mask-suffix pairs case_0000 with case; the foreground pooled over a
folder (--dataset-only: count, exact sum, mean, std, the 0.5 and 99.5
percentiles against numpy over every image's foreground; int16 slices,
read as floats: the figures, and the exact percentiles of the pooled
float histogram). The refusals, each naming both
files while the others are still computed: a mask of another size, no mask
in DIR for an input. --labels (a 16-bit label image, alone and with a
mask): the labels present, each one's pixels and every figure of each
channel over its pixels, its median; a float label image and one of another
size are refused naming both files. --mask DIR over 2,000 inputs: each
paired with its own mask, the masked run within a bound of the plain one
(the folder read once, not once per input). normalize --mask: zscore over the
foreground (numpy), the background as it is or --fill; minmax --nodata: the
nodata samples kept as they are.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np
import png

fail = checklib.fail
IMGSTAT, TMP = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(3)


def path(*parts):
    return checklib.new_path(TMP, *parts)


write_png = checklib.write_png
close = checklib.close


def records(*args):
    return checklib.json_records(IMGSTAT, *args)


def check(what, st, a, inside, is_float=False, nodata=None):
    """st: imgstat's channel object; a: the channel; inside: the mask."""
    valid = inside.copy()
    if nodata is not None:
        valid &= a != nodata
        if st.get("nodata_count") != int((inside & (a == nodata)).sum()):
            fail("%s: nodata_count %s" % (what, st.get("nodata_count")))
    if is_float:
        if st["nan_count"] != int((inside & np.isnan(a)).sum()):
            fail("%s: nan_count %d, numpy %d" %
                 (what, st["nan_count"], (inside & np.isnan(a)).sum()))
        valid &= ~np.isnan(a)
    v = a[valid].astype(np.float64)
    if st["count"] != v.size:
        fail("%s: count %d, numpy %d" % (what, st["count"], v.size))
        return
    if v.size == 0:
        if st["min"] is not None or st["mean"] is not None:
            fail("%s: an empty region has %s" % (what, st))
        return
    if st["min"] != v.min() or st["max"] != v.max():
        fail("%s: min/max %s %s, numpy %s %s" % (what, st["min"], st["max"],
                                                v.min(), v.max()))
    for which, t in (("min", v.min()), ("max", v.max())):
        pos = (st[which + "_x"], st[which + "_y"])
        want = checklib.first_at(valid, a.astype(np.float64), t)
        if pos != want:
            fail("%s: %s at %s, numpy %s" % (what, which, pos, want))
    if not is_float:
        iv = a[valid].astype(np.int64)
        if st["sum"] != int(iv.sum()) or st["sum_sq"] != int((iv * iv).sum()):
            fail("%s: sums %s %s" % (what, st["sum"], st["sum_sq"]))
    if not close(st["mean"], v.mean()) or not close(st["std"], v.std()):
        fail("%s: mean/std %r %r, numpy %r %r" % (what, st["mean"], st["std"],
                                                  v.mean(), v.std()))


# 8-bit gray with an 8-bit mask of 0/255
g = rng.integers(0, 256, (31, 47)).astype(np.uint8)
m = (rng.random(g.shape) < 0.4).astype(np.uint8) * 255
p_g, p_m = write_png(path("g.png"), g), write_png(path("g_mask.png"), m)
r, recs = records("--mask", p_m, p_g)
if r.returncode != 0 or len(recs) != 1:
    fail("gray: exit %d %s" % (r.returncode, r.stderr))
else:
    check("gray", recs[0]["stats"][0], g, m > 0)
    if recs[0].get("mask_pixels") != int((m > 0).sum()):
        fail("gray: mask_pixels %s" % recs[0].get("mask_pixels"))

# 16-bit RGB with a 16-bit mask of 0/1, histograms and percentiles
rgb = rng.integers(0, 65536, (23, 29, 3)).astype(np.uint16)
m16 = (rng.random(rgb.shape[:2]) < 0.5).astype(np.uint16)
p_rgb = write_png(path("rgb16.png"), rgb, 16)
p_m16 = write_png(path("rgb16_mask.png"), m16, 16)
r, recs = records("--percentiles", "0.5,50,99.5", "--mask", p_m16, p_rgb)
for c, st in enumerate(recs[0]["stats"] if recs else []):
    check("rgb16 ch %d" % c, st, rgb[:, :, c], m16 > 0)
    v = np.sort(rgb[:, :, c][m16 > 0].astype(np.int64))
    for p in ("0.5", "50", "99.5"):
        pv = checklib.rank_percentile(v, p)
        if st["percentiles"][p] != pv:
            fail("rgb16 ch %d p%s: %s, numpy %d" % (c, p, st["percentiles"][p],
                                                    pv))
if not recs:
    fail("rgb16: exit %d %s" % (r.returncode, r.stderr))

# float32 with NaN, a .npy mask, and nodata inside and outside the mask
f = rng.normal(100.0, 20.0, (40, 33)).astype(np.float32)
f[rng.random(f.shape) < 0.1] = np.nan
f[rng.random(f.shape) < 0.1] = -1.0
mf = (rng.random(f.shape) < 0.6).astype(np.uint8)
p_f, p_mf = path("f.npy"), path("f_mask.npy")
np.save(p_f, f)
np.save(p_mf, mf)
r, recs = records("--mask", p_mf, "--nodata", "-1", p_f)
if r.returncode != 0 or len(recs) != 1:
    fail("float: exit %d %s" % (r.returncode, r.stderr))
else:
    check("float", recs[0]["stats"][0], f, mf > 0, True, -1.0)

# an RGB mask: a pixel is inside when any of its channels is non-zero
mrgb = np.zeros(g.shape + (3,), np.uint8)
mrgb[:, :, 2] = (rng.random(g.shape) < 0.3) * 9
mrgb[:, :, 0] = (rng.random(g.shape) < 0.1) * 1
p_mrgb = write_png(path("g_mask_rgb.png"), mrgb)
r, recs = records("--mask", p_mrgb, p_g)
if recs:
    check("rgb mask", recs[0]["stats"][0], g, mrgb.any(axis=2))
else:
    fail("rgb mask: exit %d %s" % (r.returncode, r.stderr))

# an empty mask: no values
r, recs = records("--mask", write_png(path("zero.png"), g * 0), p_g)
if recs:
    check("empty mask", recs[0]["stats"][0], g, g < 0)
else:
    fail("empty mask: exit %d %s" % (r.returncode, r.stderr))

# --mask DIR: by relative path and stem, any extension; --mask-suffix
imgs = {"a.png": None, "sub/b.png": None, "sub/deeper/c.png": None}
masks = {"a.png": "a.npy", "sub/b.png": "sub/b.png",
         "sub/deeper/c.png": "sub/deeper/c.tif.png"}
arrays = {}
for name in imgs:
    a = rng.integers(0, 256, (9 + len(name), 11)).astype(np.uint8)
    mk = (rng.random(a.shape) < 0.5).astype(np.uint8)
    write_png(path("imgs", name), a)
    mp = path("masks", masks[name])
    if mp.endswith(".npy"):
        np.save(mp, mk)
    else:
        write_png(mp, mk * 200)
    arrays[name] = (a, mk)
# c.png's mask is named c.tif.png: stem "c.tif", not "c": no pair
r, recs = records("--mask", path("masks"), path("imgs"))
got = {os.path.relpath(x["file"], path("imgs")): x for x in recs}
for name in ("a.png", "sub/b.png"):
    if name not in got:
        fail("mask DIR: no record for %s (%s)" % (name, r.stderr))
        continue
    a, mk = arrays[name]
    check("mask DIR " + name, got[name]["stats"][0], a, mk > 0)
want = "no mask %s" % path("masks", "sub", "deeper", "c.*")
if r.returncode == 0 or "sub/deeper/c.png" not in r.stderr or \
        want not in r.stderr or "sub/deeper/c.png" in got:
    fail("mask DIR: missing mask: exit %d, %r" % (r.returncode, r.stderr))

# --mask-suffix: nnU-Net's names
s_img = rng.integers(0, 256, (13, 17)).astype(np.uint8)
s_mask = (rng.random(s_img.shape) < 0.5).astype(np.uint8)
write_png(path("nn", "images", "case_0000.png"), s_img)
write_png(path("nn", "labels", "case.png"), s_mask)
r, recs = records("--mask", path("nn", "labels"), "--mask-suffix", "_0000",
                  path("nn", "images"))
if len(recs) != 1:
    fail("--mask-suffix: exit %d %s" % (r.returncode, r.stderr))
else:
    check("--mask-suffix", recs[0]["stats"][0], s_img, s_mask > 0)

# the foreground pooled over a folder (--dataset-only): nnU-Net's
# intensity properties, exact
nn_imgs, nn_masks = [], []
for i in range(3):
    a = rng.normal(300, 80, (15 + i, 12)).clip(0, 65535).astype(np.uint16)
    mk = (rng.random(a.shape) < 0.4).astype(np.uint8) * (i + 1)
    write_png(path("nnds", "img", "c%d_0000.png" % i), a, 16)
    write_png(path("nnds", "lab", "c%d.png" % i), mk)
    nn_imgs.append(a)
    nn_masks.append(mk > 0)
fg = np.sort(np.concatenate([a[mk].astype(np.int64)
                             for a, mk in zip(nn_imgs, nn_masks)]))
r, recs = records("--dataset-only", "--percentiles", "0.5,99.5", "--mask",
                  path("nnds", "lab"), "--mask-suffix", "_0000",
                  path("nnds", "img"))
if r.returncode != 0 or len(recs) != 1:
    fail("dataset: exit %d %s" % (r.returncode, r.stderr))
else:
    st = recs[0]["dataset"]["stats"][0]
    if st["count"] != fg.size or st["sum"] != int(fg.sum()) or \
            not close(st["mean"], fg.mean()) or not close(st["std"], fg.std()):
        fail("dataset: %s, numpy %d %d %r %r" % (st, fg.size, fg.sum(),
                                                 fg.mean(), fg.std()))
    for p in ("0.5", "99.5"):
        pv = checklib.rank_percentile(fg, p)
        if st["percentiles"][p] != pv:
            fail("dataset p%s: %s, numpy %d" % (p, st["percentiles"][p],
                                                pv))

# int16 slices (read as exact floats) with .npy masks: the float pool's
# figures over the foreground, its percentiles exact (numpy's by the rank
# rule: the second read takes each image's foreground as the pool did)
f_vals = []
for i in range(3):
    a = rng.integers(-1000, 3000, (20 + i, 17)).astype(np.int16)
    mk = (rng.random(a.shape) < 0.5).astype(np.uint8)
    np.save(path("fds", "img", "c%d_0000.npy" % i), a)
    np.save(path("fds", "lab", "c%d.npy" % i), mk)
    f_vals.append(a[mk > 0].astype(np.int64))
fv = np.sort(np.concatenate(f_vals))
r, recs = records("--dataset-only", "--percentiles", "0.5,99.5", "--mask",
                  path("fds", "lab"), "--mask-suffix", "_0000",
                  path("fds", "img"))
if r.returncode != 0 or len(recs) != 1:
    fail("float dataset: exit %d %s" % (r.returncode, r.stderr))
else:
    st = recs[0]["dataset"]["stats"][0]
    if st["count"] != fv.size or st["min"] != fv.min() or \
            st["max"] != fv.max() or not close(st["mean"], fv.mean()) or \
            not close(st["std"], fv.std()):
        fail("float dataset: %s, numpy %d %r %r" % (st, fv.size, fv.mean(),
                                                    fv.std()))
    # exact: the second read takes the foreground as the pool did
    if "histogram_note" in recs[0]["dataset"]:
        fail("float dataset: %s" % recs[0]["dataset"]["histogram_note"])
    for p in ("0.5", "99.5"):
        pv = checklib.rank_percentile(fv, p)
        if st["percentiles"][p] != pv:
            fail("float dataset p%s: %s, numpy %d" %
                 (p, st["percentiles"][p], pv))

# float32 slices whose range one foreground sample stretches, so that the
# bins holding the 0.5 and 99.5 percentiles hold many distinct values of
# the foreground and of the background: exact only when the second read
# takes each image's foreground as the pool did
f_vals = []
for i in range(3):
    a = rng.normal(0, 1, (16, 19 + i)).astype(np.float32)
    mk = (rng.random(a.shape) < 0.5).astype(np.uint8)
    mk[0, 0] = 1
    if i == 0:
        a[0, 0] = 1e6
    np.save(path("wide", "img", "w%d.npy" % i), a)
    np.save(path("wide", "lab", "w%d.npy" % i), mk)
    f_vals.append(a[mk > 0].astype(np.float64))
fv = np.sort(np.concatenate(f_vals))
r, recs = records("--dataset-only", "--percentiles", "0.5,99.5", "--mask",
                  path("wide", "lab"), path("wide", "img"))
if r.returncode != 0 or len(recs) != 1:
    fail("wide float dataset: exit %d %s" % (r.returncode, r.stderr))
else:
    ds = recs[0]["dataset"]
    if "histogram_note" in ds:
        fail("wide float dataset: %s" % ds["histogram_note"])
    st = ds["stats"][0]
    for p in ("0.5", "99.5"):
        pv = checklib.rank_percentile(fv, p)
        if st["percentiles"][p] != pv:
            fail("wide float dataset p%s: %r, numpy %r" %
                 (p, st["percentiles"][p], pv))

# normalize with a mask (MONAI's nonzero): zscore measured over the
# foreground, the background as it is or --fill; minmax with --nodata
nz = rng.normal(100.0, 10.0, (12, 15)).astype(np.float32)
nz[:, :3] = 0
nz_mask = (nz != 0).astype(np.uint8)
p_nz, p_nzm = path("norm", "img.npy"), path("norm", "mask.npy")
np.save(p_nz, nz)
np.save(p_nzm, nz_mask)
fg = nz[nz_mask > 0].astype(np.float64)
want = (nz.astype(np.float64) - fg.mean()) / fg.std()
for extra, bg in (([], nz), (["--fill", "-5"], np.full(nz.shape, -5.0))):
    out = path("norm", "z%d.npy" % len(extra))
    r = checklib.run(IMGSTAT, "normalize", "zscore", "--mask", p_nzm, *extra,
                     p_nz, "-o", out)
    if r.returncode != 0:
        fail("normalize --mask %s: exit %d %s" % (extra, r.returncode,
                                                  r.stderr))
        continue
    o = np.load(out)
    inside = nz_mask > 0
    if np.abs(o[inside] - want[inside]).max() > 1e-5 or \
            not (o[~inside] == bg[~inside]).all():
        fail("normalize --mask %s: %s" % (extra, o[:2]))
g16 = rng.integers(100, 4000, (9, 11)).astype(np.uint16)
g16[0, :] = 7
p_g16 = write_png(path("norm", "g16.png"), g16, 16)
out = path("norm", "g16_out.png")
r = checklib.run(IMGSTAT, "normalize", "minmax", "--nodata", "7", p_g16, "-o",
                 out)
if r.returncode != 0:
    fail("normalize --nodata: exit %d %s" % (r.returncode, r.stderr))
else:
    rd = png.Reader(out).read()
    o = np.vstack([np.asarray(row, np.int64) for row in rd[2]])
    v = g16[g16 != 7].astype(np.float64)
    valid = g16 != 7
    lin = np.round((g16[valid] - v.min()) / (v.max() - v.min()) * 65535)
    if np.abs(o[valid] - lin).max() > 1 or not (o[~valid] == 7).all():
        fail("normalize --nodata: %s" % o[:2])

# a mask of another size: an error naming both files, the others computed
r, recs = records("--mask", p_m, p_rgb, p_g)
if r.returncode == 0 or len(recs) != 1 or recs[0]["file"] != p_g or \
        "rgb16.png" not in r.stderr or "g_mask.png" not in r.stderr or \
        "47x31" not in r.stderr:
    fail("size mismatch: exit %d, %r, %d records" % (r.returncode, r.stderr,
                                                     len(recs)))
# a mask that cannot be read
r, recs = records("--mask", path("nothing.png"), p_g)
if r.returncode == 0 or len(recs) != 0 or "nothing.png" not in r.stderr:
    fail("unreadable mask: exit %d, %r" % (r.returncode, r.stderr))

# --labels: one entry per distinct non-zero label of a 16-bit label image
lab_img = rng.integers(0, 256, (21, 26, 3)).astype(np.uint8)
lab = rng.choice(np.array([0, 1, 7, 300], np.uint16), lab_img.shape[:2])
p_li = write_png(path("lab", "img.png"), lab_img)
p_lab = write_png(path("lab", "img_labels.png"), lab, 16)
lm = (rng.random(lab.shape) < 0.7).astype(np.uint8)
p_lm = write_png(path("lab", "img_mask.png"), lm)
for extra, inside in (([], np.ones(lab.shape, bool)), (["--mask", p_lm],
                                                        lm > 0)):
    r, recs = records("--percentiles", "50", "--labels", p_lab, *extra, p_li)
    if r.returncode != 0 or len(recs) != 1:
        fail("labels %s: exit %d %s" % (extra, r.returncode, r.stderr))
        continue
    got = recs[0]["labels"]
    want = [int(x) for x in np.unique(lab[inside]) if x != 0]
    if [e["label"] for e in got] != want:
        fail("labels %s: %s, numpy %s" % (extra, [e["label"] for e in got],
                                          want))
        continue
    for e in got:
        region = inside & (lab == e["label"])
        if e["pixels"] != int(region.sum()):
            fail("label %d: pixels %d" % (e["label"], e["pixels"]))
        for c, st in enumerate(e["stats"]):
            check("label %d ch %d %s" % (e["label"], c, extra), st,
                  lab_img[:, :, c], region)
            v = np.sort(lab_img[:, :, c][region].astype(np.int64))
            pv = checklib.rank_percentile(v, 50)
            if st["median"] != pv:
                fail("label %d ch %d: median %s, numpy %d" %
                     (e["label"], c, st["median"], pv))
    # the image's own figures: the whole region
    for c, st in enumerate(recs[0]["stats"]):
        check("labels' image ch %d %s" % (c, extra), st, lab_img[:, :, c],
              inside)

# --mask DIR over 2,000 inputs and 2,000 masks: each input paired with its
# own mask (the count and sum of each record against numpy), and the
# folder read once, not once per input: the masked run within a loose
# bound of the same run without masks.
N = 2000
many_img, many_mask = path("many", "img", "x"), path("many", "mask", "x")
for d in (os.path.dirname(many_img), os.path.dirname(many_mask)):
    os.makedirs(d, exist_ok=True)
want = {}
for k in range(N):
    a = rng.integers(0, 256, (4, 4), dtype=np.uint8)
    m = np.zeros((4, 4), np.uint8)
    m.flat[:k % 16 + 1] = 1
    name = "im_%04d" % k
    for p, arr in ((os.path.join(os.path.dirname(many_img), name + ".pgm"), a),
                   (os.path.join(os.path.dirname(many_mask), name + ".pgm"),
                    m)):
        with open(p, "wb") as f:
            f.write(b"P5\n4 4\n255\n" + arr.tobytes())
    want[name] = (int(m.sum()), int(a[m > 0].astype(np.int64).sum()))
t0 = time.monotonic()
r0, recs0 = records(os.path.dirname(many_img))
plain = time.monotonic() - t0
t0 = time.monotonic()
r, recs = records("--mask", os.path.dirname(many_mask),
                  os.path.dirname(many_img))
masked = time.monotonic() - t0
if r.returncode != 0 or len(recs) != N or r0.returncode != 0:
    fail("2,000 masks: exit %d, %d records %s" % (r.returncode, len(recs),
                                                  r.stderr[:300]))
for rec in recs:
    name = os.path.splitext(os.path.basename(rec["file"]))[0]
    st = rec["stats"][0]
    if (st["count"], st["sum"]) != want[name]:
        fail("2,000 masks: %s count %s sum %s, numpy %s" %
             (name, st["count"], st["sum"], want[name]))
        break
if masked > 4 * plain + 2:
    fail("2,000 masks: %.1f s, without masks %.1f s" % (masked, plain))

# a float label image, one of another size: errors naming both files
p_flab = path("lab", "float_labels.npy")
np.save(p_flab, lab.astype(np.float32))
r, recs = records("--labels", p_flab, p_li)
if r.returncode == 0 or len(recs) != 0 or "float_labels.npy" not in r.stderr \
        or "img.png" not in r.stderr or "float" not in r.stderr:
    fail("float labels: exit %d, %r" % (r.returncode, r.stderr))
r, recs = records("--labels", p_lab, p_g, p_li)
if r.returncode == 0 or len(recs) != 1 or "g.png" not in r.stderr or \
        "img_labels.png" not in r.stderr:
    fail("labels of another size: exit %d, %r" % (r.returncode, r.stderr))

checklib.finish("mask_check")
