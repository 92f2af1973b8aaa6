#!/usr/bin/env python3
"""Per-band value lists on the command line: one value per band at any band
count up to the limit.

Usage: band_lists_check.py IMGSTAT TMPDIR

A 200-band uint16 .npy (made by numpy) with --nodata V1,..,V200, a value of
its own for each band (each band also holds its neighbour's value, which
must be counted): count, nodata_count, min, max, sum, mean and std of every
band against numpy's masked statistics. normalize --mean/--std with 40 and
200 values (and with --nodata per band and --fill) against numpy's
(x - mean) / std. A list of 1,025 values (one more than the band limit) is
a usage error naming the option, for --nodata, --mean and --std; a list
whose length is neither 1 nor the image's band count fails that image,
naming its file.
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
rng = np.random.default_rng(200)
USAGE = 2


def csv(values):
    return ",".join(repr(float(v)) if v != int(v) else str(int(v))
                    for v in values)


def close(a, b, rel=1e-12):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def bands_image(name, h, w, bands, nodata):
    """An (h, w, bands) uint16 array saved as name: random samples, the
    first three of each band's first column its nodata value, one sample
    its neighbour's."""
    a = rng.integers(0, 1000, (h, w, bands), dtype=np.uint16)
    for b in range(bands):
        a[0:3, 0, b] = nodata[b]
        a[h - 1, w - 1, b] = nodata[(b + 1) % bands]
    path = os.path.join(TMP, name)
    np.save(path, a)
    return path, a


# ---- --nodata, one value per band, 200 bands ---------------------------
BANDS = 200
nodata = [1000 + 3 * b for b in range(BANDS)]  # above every random sample
path, a = bands_image("bands200.npy", 9, 7, BANDS, nodata)
r = checklib.run(IMGSTAT, "--json", "--npy-layout", "hwc", "--nodata",
                 csv(nodata), path)
if r.returncode != 0:
    fail("--nodata with %d values: exit %d: %s" %
         (BANDS, r.returncode, r.stderr.strip()[:300]))
else:
    rec = json.loads(r.stdout.splitlines()[0])
    st = rec.get("stats", [])
    if rec.get("channels") != BANDS or len(st) != BANDS:
        fail("--nodata with %d values: %s channels, %d stats" %
             (BANDS, rec.get("channels"), len(st)))
    for b, s in enumerate(st):
        band = a[:, :, b].astype(np.float64)
        m = np.ma.masked_equal(band, nodata[b])
        want = {"count": int(m.count()),
                "nodata_count": int(band.size - m.count()),
                "min": float(m.min()), "max": float(m.max()),
                "sum": float(m.sum())}
        for k, v in want.items():
            if s.get(k) != v:
                fail("band %d: %s %s, numpy %s" % (b + 1, k, s.get(k), v))
        for k, v in (("mean", float(m.mean())), ("std", float(m.std()))):
            if k not in s or not close(s[k], v):
                fail("band %d: %s %s, numpy %r" % (b + 1, k, s.get(k), v))

# a list of another length than the bands (neither 1 nor 200): the image
# fails, naming its file
r = checklib.run(IMGSTAT, "--json", "--npy-layout", "hwc", "--nodata",
                 csv(nodata[:BANDS - 1]), path)
if r.returncode == 0 or path not in r.stderr + r.stdout or \
        str(BANDS - 1) not in r.stderr + r.stdout:
    fail("--nodata with %d values for %d bands: exit %d, %r" %
         (BANDS - 1, BANDS, r.returncode, (r.stderr + r.stdout)[:300]))


# ---- normalize --mean/--std, one value per band --------------------------
def normalize_check(bands, with_nodata):
    nd = [2000 + b for b in range(bands)]
    src, x = bands_image("norm%d.npy" % bands, 8, 6, bands, nd)
    mean = [10.5 + 7 * b for b in range(bands)]
    std = [1.25 + b / 4 for b in range(bands)]
    out = os.path.join(TMP, "norm%d_out.npy" % bands)
    args = ["normalize", "--npy-layout", "hwc", "--mean", csv(mean),
            "--std", csv(std), src, "-o", out]
    if with_nodata:
        args[1:1] = ["--nodata", csv(nd), "--fill", "-9"]
    r = checklib.run(IMGSTAT, *args)
    what = "normalize --mean/--std with %d values%s" % (
        bands, " and --nodata per band" if with_nodata else "")
    if r.returncode != 0:
        fail("%s: exit %d: %s" % (what, r.returncode, r.stderr.strip()[:300]))
        return
    got = np.load(out)
    os.remove(out)
    want = ((x.astype(np.float64) - np.array(mean)) /
            np.array(std)).astype(np.float32)
    if with_nodata:
        want[x == np.array(nd, dtype=np.uint16)] = -9
    if got.shape != want.shape or got.dtype != np.float32:
        fail("%s: %s %s, numpy %s" % (what, got.shape, got.dtype, want.shape))
    elif np.abs(got.astype(np.float64) - want).max() > 1e-6 * np.abs(want).max():
        fail("%s: largest difference from numpy %g" %
             (what, np.abs(got.astype(np.float64) - want).max()))
    # one value short of the bands: that image fails, naming its file
    short = ["normalize", "--npy-layout", "hwc", "--mean", csv(mean[1:]),
             "--std", csv(std[1:]), src, "-o", out]
    r = checklib.run(IMGSTAT, *short)
    if r.returncode == 0 or src not in r.stderr or \
            str(bands - 1) not in r.stderr:
        fail("normalize with %d --mean/--std values for %d bands: exit %d, "
             "%r" % (bands - 1, bands, r.returncode, r.stderr[:300]))
    if os.path.exists(out):
        os.remove(out)


normalize_check(40, False)
normalize_check(200, False)
normalize_check(40, True)

# ---- the limit: 1,025 values are refused, naming the option --------------
many = csv([1] * 1025)
limit_cases = [
    ("--nodata", [IMGSTAT, "--nodata", many, path]),
    ("--nodata", [IMGSTAT, "normalize", "--nodata", many, path, "-o",
                  os.path.join(TMP, "x.npy")]),
    ("--mean", [IMGSTAT, "normalize", "--mean", many, "--std", "1", path,
                "-o", os.path.join(TMP, "x.npy")]),
    ("--std", [IMGSTAT, "normalize", "--mean", "1", "--std", many, path,
               "-o", os.path.join(TMP, "x.npy")]),
]
for option, argv in limit_cases:
    r = checklib.run(*argv)
    if r.returncode != USAGE or ("%s: 1025 values" % option) \
            not in r.stderr or "1024" not in r.stderr:
        fail("%s%s with 1025 values: exit %d, %r" %
             ("normalize " if argv[1] == "normalize" else "", option,
              r.returncode, r.stderr[:300]))
# 1,024 values are read (and fail the 200-band image for their count)
r = checklib.run(IMGSTAT, "--npy-layout", "hwc", "--nodata",
                 csv([1] * 1024), path)
if r.returncode in (0, USAGE) or "1024 nodata values" not in r.stderr:
    fail("--nodata with 1024 values: exit %d, %r" %
         (r.returncode, r.stderr[:300]))
# --percentiles keeps its own limit of 16
r = checklib.run(IMGSTAT, "--percentiles", csv(range(17)), path)
if r.returncode != USAGE or "--percentiles" not in r.stderr:
    fail("--percentiles with 17 values: exit %d, %r" %
         (r.returncode, r.stderr[:300]))

for f in os.listdir(TMP):
    os.remove(os.path.join(TMP, f))
checklib.finish("band_lists_check")
