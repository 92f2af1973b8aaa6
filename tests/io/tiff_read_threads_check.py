#!/usr/bin/env python3
"""TIFF pages read on several threads, reduced in one pass under nodata and
masks: every exact figure against numpy.

Usage: tiff_read_threads_check.py IMGSTAT TMPDIR

GDAL writes the files: tiled (tiles crossing the right and bottom edges)
and striped, pixel- and band-interleaved, 8- and 16-bit, of 1, 3 and 13
bands, with a nodata value (GDAL_NODATA) or none, most over 16 MiB of
samples (read on the cores; the others on one thread). Each band's count,
nodata_count, min and max and the raster position of the first of each,
sum and sum of squares (exact integers) are checked against numpy, with
--mask (a mask of 0/255) and without, and with -j 1 and -j 2 (the same
record, byte for byte). A copy cut short inside its last tiles fails,
naming the file, and says so the same way on every run. Skips (77)
without GDAL's Python module (python3-gdal).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np
import png

gdal = checklib.gdal_or_skip()
fail = checklib.fail
IMGSTAT, TMP = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(5)


def write(name, a, gdal_type, nodata, opts):
    """a: (bands, h, w); returns the path."""
    return checklib.write_geotiff(os.path.join(TMP, name), a, gdal_type,
                                  nodata, opts)


def expect(a, nodata, mask):
    """numpy's figures of each band over the valid samples."""
    out = []
    for band in a:
        inside = np.ones(band.shape, bool) if mask is None else mask != 0
        nd = inside & (band == nodata) if nodata is not None else \
            np.zeros(band.shape, bool)
        e = checklib.exact_figures(band, inside & ~nd)
        e["nodata_count"] = int(nd.sum())
        out.append(e)
    return out


def check(path, a, nodata, mask_path, mask):
    recs = []
    for j in ("1", "2"):
        args = ["--json", "--backend", "cpu", "-j", j]
        if mask_path:
            args += ["--mask", mask_path]
        r = checklib.run(IMGSTAT, *(args + [path]))
        if r.returncode != 0:
            fail("%s: exit %d: %s" % (path, r.returncode, r.stderr[-300:]))
            return
        recs.append(r.stdout)
    if recs[0] != recs[1]:
        fail("%s: -j 1 and -j 2 records differ" % path)
    checklib.compare_bands(path + (" --mask" if mask_path else ""),
                           json.loads(recs[0])["stats"],
                           expect(a, nodata, mask))


def field(bands, h, w, dtype):
    top = 255 if dtype == np.uint8 else 65535
    a = rng.integers(0, top + 1, (bands, h, w)).astype(dtype)
    a[:, :, : w // 9] = 0  # a nodata border
    a[:, h // 2, w // 3] = top  # the largest value more than once
    a[:, h - 1, w - 2] = top
    a[:, h // 3, w // 2] = 1
    return a


# (bands, h, w, sample, numpy type, creation options): the 16-bit 13-band
# and 3-band ones and the 8-bit 1-band one over 16 MiB of samples
cases = [
    (13, 701, 933, gdal.GDT_UInt16, np.uint16,
     ["TILED=YES", "BLOCKXSIZE=128", "BLOCKYSIZE=64", "INTERLEAVE=PIXEL"]),
    (13, 701, 933, gdal.GDT_UInt16, np.uint16,
     ["TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=256", "INTERLEAVE=BAND"]),
    (13, 701, 933, gdal.GDT_UInt16, np.uint16,
     ["BLOCKYSIZE=7", "INTERLEAVE=PIXEL"]),
    (3, 1601, 1777, gdal.GDT_UInt16, np.uint16,
     ["BLOCKYSIZE=16", "INTERLEAVE=BAND"]),
    (1, 4111, 4097, gdal.GDT_Byte, np.uint8,
     ["TILED=YES", "BLOCKXSIZE=512", "BLOCKYSIZE=512"]),
    (13, 67, 45, gdal.GDT_Byte, np.uint8,
     ["TILED=YES", "BLOCKXSIZE=16", "BLOCKYSIZE=16", "INTERLEAVE=PIXEL"]),
]
for n, (bands, h, w, gt, dt, opts) in enumerate(cases):
    a = field(bands, h, w, dt)
    mask = (rng.random((h, w)) < 0.7).astype(np.uint8) * 255
    mpath = os.path.join(TMP, "mask%d.png" % n)
    with open(mpath, "wb") as f:
        png.Writer(w, h, greyscale=True, bitdepth=8).write(f, mask.tolist())
    for nodata in (0, None):
        path = write("t%d_%s.tif" % (n, "nd" if nodata is not None else "all"),
                     a, gt, nodata, opts)
        check(path, a, nodata, None, None)
        if nodata is not None:
            check(path, a, nodata, mpath, mask)
        if nodata is None or n > 1:
            os.remove(path)
    os.remove(mpath)

# damaged: the 13-band tiled file cut inside its last tiles
for n in (0, 1):
    path = os.path.join(TMP, "t%d_nd.tif" % n)
    cut = os.path.join(TMP, "cut%d.tif" % n)
    with open(path, "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[: len(data) - len(data) // 20])
    errs = set()
    for _ in range(3):
        r = checklib.run(IMGSTAT, "--json", "--backend", "cpu", cut)
        if r.returncode == 0 or "cut%d.tif" % n not in r.stderr:
            fail("%s: exit %d, stderr %r: a failure naming the file expected"
                 % (cut, r.returncode, r.stderr[-300:]))
        errs.add(r.stderr)
    if len(errs) != 1:
        fail("%s: the failure differs between runs: %r" % (cut, errs))
    os.remove(cut)
    os.remove(path)

checklib.finish("tiff_read_threads_check")
