#!/usr/bin/env python3
"""Label images pooled per label over a dataset: imgstat --dataset-only
--labels DIR, each label's figures over every image that has it, against
numpy.

Usage: labels_check.py IMGSTAT TMPDIR

Writes 8-bit RGB PNGs and 16-bit gray PNGs with 16-bit label PNGs (labels
1, 2, 3 and 700; label 3 missing from some images, label 700 in one image
only, 0 the background), and float32 .npy images (NaN among them) with
8-bit label PNGs. Checks the record's "labels": the labels present in
increasing order, the images that have each, and every channel's count,
min, max, exact sum and sum of squares (integers), mean and std (1e-12
relative for floats), the median and the percentiles by the rank rule
(integers: exact by pooled histograms), nan_count; the same record with
one worker and several (the pool's order does not depend on them).
Python's dataset(labels=): python/tests/test_valid_samples.py.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np

fail = checklib.fail
IMGSTAT, TMP = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(11)


def path(*parts):
    return checklib.new_path(TMP, *parts)


write_png = checklib.write_png
close = checklib.close


def dataset(*args):
    r = checklib.run(IMGSTAT, "--json", "--dataset-only", *args)
    if r.returncode != 0:
        fail("%s: exit %d %s" % (args, r.returncode, r.stderr))
        return None
    return json.loads(r.stdout)["dataset"]


def check(what, got, vals, is_float=False):
    """got: the record's channel object; vals: the label's samples."""
    nan = np.isnan(vals) if is_float else np.zeros(vals.shape, bool)
    v = np.sort(vals[~nan])
    if got["count"] != v.size:
        fail("%s: count %s, numpy %d" % (what, got["count"], v.size))
        return
    if is_float:
        if got.get("nan_count") != int(nan.sum()):
            fail("%s: nan_count %s, numpy %d" % (what, got.get("nan_count"),
                                                 nan.sum()))
        w = v.astype(np.float64)
        if got["min"] != w[0] or got["max"] != w[-1] or \
                not close(got["mean"], w.mean()) or \
                not close(got["std"], w.std()):
            fail("%s: %s, numpy min %r max %r mean %r std %r" %
                 (what, got, w[0], w[-1], w.mean(), w.std()))
        return
    w = v.astype(np.int64)
    if got["min"] != w[0] or got["max"] != w[-1] or \
            got["sum"] != int(w.sum()) or \
            got["sum_sq"] != int((w * w).sum()) or \
            not close(got["mean"], w.mean()) or not close(got["std"], w.std()):
        fail("%s: %s, numpy min %d max %d sum %d mean %r std %r" %
             (what, {k: got[k] for k in ("min", "max", "sum", "mean", "std")},
              w[0], w[-1], w.sum(), w.mean(), w.std()))
    for p in (0.5, 50, 99.5):
        pv = checklib.rank_percentile(w, p)
        have = got["median"] if p == 50 else got["percentiles"]["%g" % p]
        if have != pv:
            fail("%s: p%g %s, numpy %d" % (what, p, have, pv))


def check_labels(what, rec, images, labs, chans, is_float=False):
    """images, labs: the arrays pooled; chans: channels per image."""
    present = sorted({int(x) for l in labs for x in np.unique(l) if x != 0})
    got = rec.get("labels", [])
    if [e["label"] for e in got] != present:
        fail("%s: labels %s, numpy %s" % (what, [e["label"] for e in got],
                                          present))
        return
    for e in got:
        L = e["label"]
        have = sum(1 for l in labs if (l == L).any())
        if e["images"] != have:
            fail("%s label %d: images %s, numpy %d" % (what, L, e["images"],
                                                       have))
        if len(e["stats"]) != chans:
            fail("%s label %d: %d channels" % (what, L, len(e["stats"])))
            continue
        for c in range(chans):
            vals = np.concatenate([
                (a if a.ndim == 2 else a[:, :, c])[l == L]
                for a, l in zip(images, labs)])
            check("%s label %d ch %d" % (what, L, c), e["stats"][c], vals,
                  is_float)


# 8-bit RGB and (apart) 16-bit gray, 16-bit label images
for depth, chans, name in ((8, 3, "rgb"), (16, 1, "gray")):
    imgs, labs = [], []
    for i in range(6):
        h, w = 9 + i, 7 + (i % 3)
        top = 255 if depth == 8 else 65535
        a = rng.integers(0, top + 1, (h, w, chans) if chans == 3 else (h, w))
        choices = [0, 1, 2] + ([3] if i % 2 == 0 else []) + \
            ([700] if i == 4 else [])
        lab = rng.choice(choices, (h, w)).astype(np.uint16)
        write_png(path(name, "img", "case%d_0000.png" % i), a, depth)
        write_png(path(name, "lab", "case%d.png" % i), lab, 16)
        imgs.append(a)
        labs.append(lab)
    args = ["--percentiles", "0.5,99.5", "--labels", path(name, "lab"),
            "--mask-suffix", "_0000", path(name, "img")]
    one = dataset("--jobs", "1", *args)
    several = dataset("--jobs", "3", *args)
    if one is not None:
        check_labels(name, one, imgs, labs, chans)
        if several is not None and several.get("labels") != one.get("labels"):
            fail("%s: the labels differ between 1 and 3 workers" % name)

# float32 images (NaN among the samples), 8-bit labels
imgs, labs = [], []
for i in range(5):
    a = (rng.standard_normal((11, 6 + i)) * 1e3).astype(np.float32)
    a[rng.random(a.shape) < 0.05] = np.nan
    lab = rng.choice([0, 1, 2] if i != 2 else [0, 2], a.shape).astype(np.uint8)
    np.save(path("f", "img", "s%d.npy" % i), a)
    write_png(path("f", "lab", "s%d.png" % i), lab)
    imgs.append(a)
    labs.append(lab)
one = dataset("--jobs", "1", "--labels", path("f", "lab"), path("f", "img"))
several = dataset("--jobs", "3", "--labels", path("f", "lab"),
                  path("f", "img"))
if one is not None:
    check_labels("float", one, imgs, labs, 1, True)
    if several is not None and several.get("labels") != one.get("labels"):
        fail("float: the labels differ between 1 and 3 workers (the "
             "canonical order)")

checklib.finish("labels_check")
