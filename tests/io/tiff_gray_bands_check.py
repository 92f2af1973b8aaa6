#!/usr/bin/env python3
"""TIFF gray (MinIsBlack) images of 3 or 4 samples a pixel, as GDAL writes
multi-band files of 16 bits (and of 8 with PHOTOMETRIC=MINISBLACK): read
as bands.

Usage: tiff_gray_bands_check.py IMGSTAT TMPDIR

Each band's figures against numpy (count, min, max, their first
positions, sum, mean; uint16, int16 and uint8, contiguous and planar),
the bands named "1".."N" and the layout "3-band" / "4-band" (not RGB or
RGBA) in the JSON record; GDAL's own reading of the file checked against
the arrays written (the file is what GDAL calls N bands). Such an image
converts to no Y/YA/RGB/RGBA layout: --dataset and normalize refuse it
naming the file. Skips (77) without GDAL's Python module (python3-gdal).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np

gdal = checklib.gdal_or_skip()
fail = checklib.fail
IMGSTAT, TMP = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(34)

cases = [(3, gdal.GDT_UInt16, np.uint16, "PIXEL"),
         (4, gdal.GDT_Int16, np.int16, "BAND"),
         (3, gdal.GDT_Byte, np.uint8, "PIXEL"),
         (4, gdal.GDT_UInt16, np.uint16, "BAND")]
paths = []
for n, gtype, dtype, interleave in cases:
    info = np.iinfo(dtype)
    bands = [rng.integers(info.min, info.max, (19, 23), endpoint=True,
                          dtype=dtype) for _ in range(n)]
    path = os.path.join(TMP, "gray%d-%s-%s.tif" % (n, np.dtype(dtype).name,
                                                   interleave.lower()))
    checklib.write_geotiff(
        path, bands, gtype,
        options=["PHOTOMETRIC=MINISBLACK", "INTERLEAVE=" + interleave])
    ds = gdal.Open(path)
    if ds.RasterCount != n or any(
            not np.array_equal(ds.GetRasterBand(i + 1).ReadAsArray(), a)
            for i, a in enumerate(bands)):
        fail("%s: GDAL reads other bands than written" % path)
    ds = None
    paths.append(path)
    r, recs = checklib.json_records(IMGSTAT, path)
    if r.returncode != 0:
        fail("%s: exit %d, %s" % (path, r.returncode, r.stderr))
        continue
    rec = recs[0]
    if rec["channels"] != n:
        fail("%s: %r channels" % (path, rec["channels"]))
        continue
    r = checklib.run(IMGSTAT, path)
    if ("%d-band" % n) not in r.stdout.splitlines()[0]:
        fail("%s: text header %r, want %d-band" % (path, r.stdout.splitlines()[0],
                                                   n))
    for c, (st, a) in enumerate(zip(rec["stats"], bands)):
        v = a.astype(np.int64)
        if st["channel"] != str(c + 1):
            fail("%s band %d: named %r" % (path, c + 1, st["channel"]))
        keys = ("count", "min", "max", "sum", "min_x", "min_y", "max_x",
                "max_y")
        e = checklib.exact_figures(a)
        got = tuple(st[k] for k in keys)
        want = tuple(e[k] for k in keys)
        if got != want:
            fail("%s band %d: %r, numpy %r" % (path, c + 1, got, want))
        if abs(st["mean"] - v.mean()) > 1e-9 * max(1.0, abs(v.mean())):
            fail("%s band %d: mean %r, numpy %r" % (path, c + 1, st["mean"],
                                                    v.mean()))

# no Y/YA/RGB/RGBA layout: refused by the dataset and normalize, by name
r = checklib.run(IMGSTAT, "--dataset", paths[0])
if r.returncode == 0 or paths[0] not in r.stderr or "3-band" not in r.stderr:
    fail("--dataset 3-band: exit %d, %r" % (r.returncode, r.stderr))
out = os.path.join(TMP, "out.npy")
r = checklib.run(IMGSTAT, "normalize", paths[0], "-o", out)
if r.returncode == 0 or paths[0] not in r.stderr or "3-band" not in r.stderr:
    fail("normalize 3-band: exit %d, %r" % (r.returncode, r.stderr))
if os.path.exists(out):
    os.unlink(out)

checklib.finish("tiff_gray_bands")
