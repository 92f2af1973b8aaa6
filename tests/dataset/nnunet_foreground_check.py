#!/usr/bin/env python3
"""nnU-Net's foreground intensity properties pooled exactly over a raw
folder (imagesTr/case_XXXX_0000.npy int16 slices, labelsTr/case_XXXX.npy
uint8 labels), as bench/nnunet_foreground.sh times them, at a tiny size.

Usage: nnunet_foreground_check.py IMGSTAT TMPDIR

The folder is made by bench/nnunet_foreground.py (12 CT-like slices of
64 x 64). `imgstat --dataset-only --mask labelsTr --mask-suffix _0000
--percentiles 0.5,99.5 imagesTr` must give numpy's figures over every
foreground voxel (label > 0) of every case, concatenated and sorted: count,
min, max, the median and the 0.5 / 99.5 percentiles by the rank rule
(the k-th smallest, k = max(1, ceil(p N / 100))) exactly, mean and std
(ddof 0, float64) to 1e-12 relative; the figures of the whole images (no
mask) differ from them (a run that ignored the masks fails). The bench's
own reference (its exact mode, from pooled histograms) must give the same
figures, and its sampled mode (nnU-Net's recipe, here with 12,000 draws)
draws int(total // cases) voxels per case from the foreground.
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np

fail = checklib.fail
IMGSTAT, TMP = sys.argv[1], sys.argv[2]
BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                     "nnunet_foreground.py")
N, SIZE = 12, 64
D = os.path.join(TMP, "raw")


def bench(*args):
    p = subprocess.run([sys.executable, BENCH] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        fail("nnunet_foreground.py %s: exit %d: %s" % (args[0], p.returncode, p.stderr[-500:]))
        return None
    return json.loads(p.stdout) if p.stdout.strip() else {}


bench("gen", D, str(N), "1", str(SIZE))

# numpy: every foreground voxel of every case
cases = sorted(f[:-len("_0000.npy")] for f in os.listdir(os.path.join(D, "imagesTr")))
fg, every = [], []
for c in cases:
    img = np.load(os.path.join(D, "imagesTr", c + "_0000.npy"))
    seg = np.load(os.path.join(D, "labelsTr", c + ".npy"))
    if img.dtype != np.int16 or img.shape != (SIZE, SIZE) or seg.shape != img.shape:
        fail("%s: %s %s, labels %s" % (c, img.dtype, img.shape, seg.shape))
    fg.append(img[seg > 0])
    every.append(img.ravel())
if len(cases) != N:
    fail("%d cases made, %d wanted" % (len(cases), N))


def figures(parts):
    v = np.sort(np.concatenate(parts).astype(np.float64))
    n = v.size

    def rank(p_num, p_den):  # p = p_num / p_den percent, exactly
        return float(v[max(1, -(-p_num * n // (100 * p_den))) - 1])
    return {"count": n, "min": float(v[0]), "max": float(v[-1]),
            "mean": float(np.mean(v)), "std": float(np.std(v)),
            "median": rank(50, 1), "p0.5": rank(1, 2), "p99.5": rank(199, 2)}


want = figures(fg)
whole = figures(every)
if not 0 < want["count"] < whole["count"]:
    fail("foreground of %d voxels out of %d: the generator made no region" %
         (want["count"], whole["count"]))
if not (want["min"] < 200 and want["max"] > 700):
    fail("foreground range %g..%g: the labels should hold soft tissue and bone" %
         (want["min"], want["max"]))


def imgstat(*extra):
    p = checklib.run(IMGSTAT, "--dataset-only", "--json", "-j", "2", *extra,
                     "--percentiles", "0.5,99.5", os.path.join(D, "imagesTr"))
    if p.returncode != 0:
        fail("imgstat %s: exit %d: %s" % (" ".join(extra), p.returncode, p.stderr))
        return None
    s = json.loads(p.stdout)["dataset"]["stats"][0]
    return {"count": s["count"], "min": s["min"], "max": s["max"], "mean": s["mean"],
            "std": s["std"], "median": s["median"], "p0.5": s["percentiles"]["0.5"],
            "p99.5": s["percentiles"]["99.5"]}


def compare(name, got, ref):
    if got is None:
        return
    for k, v in ref.items():
        if k in ("mean", "std"):
            ok = abs(got[k] - v) <= 1e-12 * abs(v)
        else:
            ok = got[k] == v
        if not ok:
            fail("%s: %s %r, numpy %r" % (name, k, got[k], v))


compare("imgstat --mask", imgstat("--mask", os.path.join(D, "labelsTr"), "--mask-suffix",
                                  "_0000"), want)
compare("imgstat without a mask", imgstat(), whole)
compare("bench exact", bench("exact", D, "1"), want)

s = bench("sampled", D, "1", "12000")
if s is not None:
    if s.get("count") != N * (12000 // N):
        fail("bench sampled: %r draws, %d wanted" % (s.get("count"), N * (12000 // N)))
    elif not (want["min"] <= s["min"] <= s["max"] <= want["max"]):
        fail("bench sampled: range %g..%g outside the foreground's" % (s["min"], s["max"]))

checklib.finish("nnunet_foreground_check")
