#!/usr/bin/env python3
"""The numpy side of bench/nnunet_foreground.sh: a CT-like nnU-Net raw
folder, nnU-Net's sampled foreground intensity properties, and the exact
ones.

Usage:
  nnunet_foreground.py gen DIR N JOBS [SIZE]  DIR/imagesTr/case_XXXX_0000.npy
                                              (SIZE x SIZE int16, default
                                              512) and DIR/labelsTr/
                                              case_XXXX.npy (uint8 labels)
  nnunet_foreground.py sampled DIR JOBS [TOTAL]
                                              nnU-Net's recipe (below;
                                              TOTAL voxels drawn, 10e7)
  nnunet_foreground.py exact DIR JOBS         every foreground voxel
Both figure modes print one JSON object: count (voxels pooled), mean, std,
min, max, median, p0.5, p99.5.

sampled follows what nnU-Net's dataset fingerprint does for
"foreground_intensity_properties_per_channel" (nnunetv2's
DatasetFingerprintExtractor): the image is read as float32 (nnU-Net's
readers give float32), the foreground is label > 0, each case draws
int(1e8 // cases) of its foreground voxels with replacement from a
generator seeded 1234 afresh for each case (numpy's RandomState.choice),
computes its own percentiles 0.5/50/99.5 (linear interpolation), mean, min
and max over all its foreground voxels as nnU-Net does beside the draw;
the draws of all cases are pooled and give mean, std (ddof 0), min, max and
np.percentile's linearly interpolated 0.5, 50 and 99.5. Left out:
nnU-Net's crop to the non-zero bounding box (it keeps every foreground
voxel, so the figures are the same) and its spacing and shape bookkeeping,
so the time is a lower bound of nnU-Net's. Cases run on a process pool of
JOBS workers, as nnU-Net's (-np).

exact pools every foreground voxel: a 65536-bin histogram of the int16
values per case (np.bincount), added over the cases; count, min, max, the
exact integer sum and sum of squares, mean and std (ddof 0) from them, and
the percentiles by imgstat's rank rule (docs/normalize.md): the k-th
smallest value, k = max(1, ceil(p * N / 100)).
"""
import json
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction

import numpy as np


def case_names(d):
    return sorted(f[:-len("_0000.npy")] for f in os.listdir(os.path.join(d, "imagesTr"))
                  if f.endswith("_0000.npy"))


# ---- generation -------------------------------------------------------


def make_case(args):
    d, i, size = args
    rng = np.random.default_rng(1000 + i)
    s = size / 512.0
    y, x = np.mgrid[0:size, 0:size].astype(np.float32)
    cy, cx = size / 2 + rng.normal(0, 4 * s), size / 2 + rng.normal(0, 4 * s)

    def ellipse(oy, ox, ry, rx):
        return ((y - cy - oy * s) / (ry * s)) ** 2 + ((x - cx - ox * s) / (rx * s)) ** 2 <= 1

    # air, a body of soft tissue (40 HU) with a fat rim (-100 HU)
    img = np.full((size, size), -1024.0, np.float32)
    body = ellipse(0, 0, 170 + rng.normal(0, 5), 230 + rng.normal(0, 5))
    inner = ellipse(0, 0, 150, 205)
    img[body] = -100
    img[inner] = 40
    lab = np.zeros((size, size), np.uint8)
    # label 1: a liver-like organ (60 HU), label 2: a kidney (enhanced,
    # 150 HU), label 3: a vertebra (700..1500 HU)
    liver = ellipse(-20, -80, 70 + rng.normal(0, 4), 95 + rng.normal(0, 4))
    kidney = ellipse(40, 90, 30, 22)
    spine = ellipse(110, 0, 28, 30)
    img[liver] = 60
    img[kidney] = 150
    img[spine] = rng.uniform(700, 1500, int(spine.sum()))
    lab[liver], lab[kidney], lab[spine] = 1, 2, 3
    img[body] += rng.normal(0, 18, int(body.sum())).astype(np.float32)
    img[~body] += rng.normal(0, 6, int((~body).sum())).astype(np.float32)
    img = np.clip(np.rint(img), -1024, 3071).astype(np.int16)
    np.save(os.path.join(d, "imagesTr", f"case_{i:04d}_0000.npy"), img)
    np.save(os.path.join(d, "labelsTr", f"case_{i:04d}.npy"), lab)


def gen(d, n, jobs, size):
    for sub in ("imagesTr", "labelsTr"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    work = [(d, i, size) for i in range(n)]
    if jobs <= 1:
        list(map(make_case, work))
    else:
        with ProcessPoolExecutor(jobs) as ex:
            list(ex.map(make_case, work, chunksize=16))


# ---- nnU-Net's sampled recipe ------------------------------------------


def sampled_case(args):
    d, c, num = args
    img = np.load(os.path.join(d, "imagesTr", c + "_0000.npy")).astype(np.float32)
    seg = np.load(os.path.join(d, "labelsTr", c + ".npy"))
    rs = np.random.RandomState(1234)
    fg = img[seg > 0]
    if len(fg) == 0:
        return np.empty(0, np.float32)
    draw = rs.choice(fg, num, replace=True)
    # the case's own figures, computed (and not used) as nnU-Net does
    np.percentile(fg, (0.5, 50.0, 99.5)), np.mean(fg), np.min(fg), np.max(fg)
    return draw


def sampled(d, jobs, total=10e7):
    cases = case_names(d)
    num = int(total // len(cases))
    work = [(d, c, num) for c in cases]
    if jobs <= 1:
        draws = list(map(sampled_case, work))
    else:
        with ProcessPoolExecutor(jobs) as ex:
            draws = list(ex.map(sampled_case, work, chunksize=8))
    v = np.concatenate(draws)
    p005, med, p995 = np.percentile(v, (0.5, 50.0, 99.5))
    return {"count": int(v.size), "mean": float(np.mean(v)), "std": float(np.std(v)),
            "min": float(np.min(v)), "max": float(np.max(v)), "median": float(med),
            "p0.5": float(p005), "p99.5": float(p995)}


# ---- exact ---------------------------------------------------------------


def exact_case(args):
    d, c = args
    img = np.load(os.path.join(d, "imagesTr", c + "_0000.npy"))
    seg = np.load(os.path.join(d, "labelsTr", c + ".npy"))
    fg = img[seg > 0].astype(np.int64) + 32768
    return np.bincount(fg, minlength=65536)


def rank_value(hist, p):
    n = int(hist.sum())
    k = max(1, math.ceil(Fraction(p) * n / 100))
    return int(np.searchsorted(np.cumsum(hist), k)) - 32768


def exact(d, jobs):
    work = [(d, c) for c in case_names(d)]
    if jobs <= 1:
        hists = map(exact_case, work)
    else:
        ex = ProcessPoolExecutor(jobs)
        hists = ex.map(exact_case, work, chunksize=8)
    h = np.zeros(65536, np.int64)
    for x in hists:
        h += x
    if jobs > 1:
        ex.shutdown()
    vals = np.arange(65536, dtype=np.int64) - 32768
    n = int(h.sum())
    s = int((h * vals).sum())  # exact in int64: |s| <= 32768 * n
    q = sum(int(c) * int(v) * int(v) for c, v in zip(h[h > 0], vals[h > 0]))
    nz = np.flatnonzero(h)
    var = Fraction(q * n - s * s, n * n)
    return {"count": n, "mean": float(Fraction(s, n)), "std": math.sqrt(var),
            "min": int(nz[0]) - 32768, "max": int(nz[-1]) - 32768,
            "median": rank_value(h, 50), "p0.5": rank_value(h, Fraction(1, 2)),
            "p99.5": rank_value(h, Fraction(199, 2))}


if __name__ == "__main__":
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "gen":
        gen(d, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) > 5 else 512)
    elif mode == "sampled":
        print(json.dumps(sampled(d, int(sys.argv[3]),
                                 float(sys.argv[4]) if len(sys.argv) > 4 else 10e7)))
    elif mode == "exact":
        print(json.dumps(exact(d, int(sys.argv[3]))))
    else:
        sys.exit("usage: nnunet_foreground.py gen|sampled|exact DIR ...")
