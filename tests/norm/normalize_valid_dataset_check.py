#!/usr/bin/env python3
"""normalize --dataset with masks and nodata values, and --as gray with
masks, against numpy.

Usage: normalize_valid_dataset_check.py IMGSTAT TMPDIR

zscore --dataset --mask DIR over float32 .npy images of several sizes: one
mean and std pooled over every image's foreground (numpy over the
concatenated foregrounds), each output's foreground (x - mean) / std, the
background as it is, or --fill. zscore --dataset --nodata over 16-bit PNGs:
pooled over the samples that are not nodata, the nodata samples kept (or
--fill). --as gray with --mask DIR over 8-bit RGB PNGs: the luma (PIL's
convert("L")) then the mask, for the dataset record (--dataset-only: count,
exact sum, mean, std) and for normalize --dataset; --as gray with --nodata
refused.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np
import png
from PIL import Image

fail = checklib.fail
IMGSTAT, TMP = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(21)


def path(*parts):
    return checklib.new_path(TMP, *parts)


def near(got, want):
    return np.abs(got - want).max() <= 1e-5 * max(1.0, np.abs(want).max())


def normalize(*args):
    r = checklib.run(IMGSTAT, "normalize", *args)
    if r.returncode != 0:
        fail("normalize %s: exit %d %s" % (args, r.returncode, r.stderr))
    return r.returncode == 0


# zscore --dataset --mask DIR: float32, several sizes
imgs, masks = [], []
for i in range(4):
    a = rng.normal(50.0 * (i + 1), 10.0 + i, (8 + i, 9)).astype(np.float32)
    m = (rng.random(a.shape) < 0.6).astype(np.uint8)
    np.save(path("f", "img", "c%d.npy" % i), a)
    np.save(path("f", "mask", "c%d.npy" % i), m)
    imgs.append(a)
    masks.append(m > 0)
fg = np.concatenate([a[m].astype(np.float64) for a, m in zip(imgs, masks)])
mu, sd = fg.mean(), fg.std()
for extra, fill in (([], None), (["--fill", "-5"], -5.0)):
    out = path("f", "out%d" % len(extra), "x")[:-2]
    if not normalize("zscore", "--dataset", "--mask", path("f", "mask", "x")[:-2],
                     *extra, path("f", "img", "x")[:-2], "-o", out):
        continue
    for i, (a, m) in enumerate(zip(imgs, masks)):
        o = np.load(os.path.join(out, "c%d.npy" % i))
        want = (a.astype(np.float64) - mu) / sd
        if not near(o[m], want[m]):
            fail("mask %s c%d: foreground %s, numpy %s" % (extra, i, o[m][:3],
                                                         want[m][:3]))
        bg = a[~m] if fill is None else np.full((~m).sum(), fill, np.float32)
        if not (o[~m] == bg).all():
            fail("mask %s c%d: background %s, want %s" % (extra, i,
                                                        o[~m][:3], bg[:3]))

# zscore --dataset --nodata: 16-bit PNGs
imgs = []
for i in range(3):
    a = rng.integers(100, 60000, (7, 6 + i)).astype(np.uint16)
    a[rng.random(a.shape) < 0.2] = 7
    png.from_array(a.tolist(), "L;16").save(path("n", "img", "g%d.png" % i))
    imgs.append(a)
v = np.concatenate([a[a != 7].astype(np.float64) for a in imgs])
mu, sd = v.mean(), v.std()
for extra, fill in (([], None), (["--fill", "0"], 0.0)):
    out = path("n", "out%d" % len(extra), "x")[:-2]
    if not normalize("zscore", "--dataset", "--nodata", "7", *extra,
                     path("n", "img", "x")[:-2], "-o", out):
        continue
    for i, a in enumerate(imgs):
        o = np.load(os.path.join(out, "g%d.npy" % i))
        ok = a != 7
        want = (a.astype(np.float64) - mu) / sd
        if not near(o[ok], want[ok]):
            fail("nodata %s g%d: %s, numpy %s" % (extra, i, o[ok][:3],
                                                want[ok][:3]))
        nd = 7.0 if fill is None else fill
        if not (o[~ok] == nd).all():
            fail("nodata %s g%d: nodata samples %s" % (extra, i, o[~ok][:3]))

# --as gray with --mask DIR: the luma, then the mask
lumas, masks = [], []
for i in range(3):
    a = rng.integers(0, 256, (9 + i, 7, 3)).astype(np.uint8)
    m = (rng.random(a.shape[:2]) < 0.5).astype(np.uint8) * 255
    Image.fromarray(a, "RGB").save(path("g", "img", "c%d.png" % i))
    Image.fromarray(m, "L").save(path("g", "mask", "c%d.png" % i))
    lumas.append(np.asarray(Image.fromarray(a, "RGB").convert("L")))
    masks.append(m > 0)
fg = np.concatenate([l[m].astype(np.int64) for l, m in zip(lumas, masks)])
r = checklib.run(IMGSTAT, "--json", "--dataset-only", "--as", "gray",
                 "--mask", path("g", "mask", "x")[:-2],
                 path("g", "img", "x")[:-2])
if r.returncode != 0:
    fail("--as gray --mask: exit %d %s" % (r.returncode, r.stderr))
else:
    st = json.loads(r.stdout)["dataset"]["stats"][0]
    if st["count"] != fg.size or st["sum"] != int(fg.sum()) or \
            abs(st["mean"] - fg.mean()) > 1e-12 * fg.mean() or \
            abs(st["std"] - fg.std()) > 1e-12 * fg.std():
        fail("--as gray --mask: %s, numpy %d %d %r %r" %
             (st, fg.size, fg.sum(), fg.mean(), fg.std()))
mu, sd = fg.astype(np.float64).mean(), fg.astype(np.float64).std()
out = path("g", "out", "x")[:-2]
if normalize("zscore", "--dataset", "--as", "gray", "--mask",
             path("g", "mask", "x")[:-2], path("g", "img", "x")[:-2], "-o",
             out):
    for i, (l, m) in enumerate(zip(lumas, masks)):
        o = np.load(os.path.join(out, "c%d.npy" % i))
        want = (l.astype(np.float64) - mu) / sd
        if o.shape != l.shape or not near(o[m], want[m]) or \
                not (o[~m] == l[~m]).all():
            fail("normalize --as gray --mask c%d: %s" % (i, o.ravel()[:4]))
r = checklib.run(IMGSTAT, "normalize", "zscore", "--dataset", "--as", "gray",
                 "--nodata", "0", path("g", "img", "x")[:-2], "-o",
                 path("g", "refused", "x")[:-2])
if r.returncode == 0 or "gray" not in r.stderr:
    fail("--as gray --nodata: exit %d %r" % (r.returncode, r.stderr))

checklib.finish("normalize_valid_dataset_check")
