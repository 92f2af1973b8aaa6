#!/usr/bin/env python3
"""Nodata: samples equal to the nodata value enter no figure.

Usage: nodata_check.py IMGSTAT TMPDIR

GDAL writes GeoTIFFs with a nodata value (its GDAL_NODATA tag): 8-bit
gray, 16-bit RGB, int16 and float32 with NaN beside the nodata samples.
imgstat's per-channel count, min, max, mean and std (ddof 0) are checked
against GDAL's ComputeStatistics(False) (the reference over the valid
samples: min and max exactly, mean and std to 1e-12 relative), the count
and nodata_count and the first minimum's and maximum's positions against
numpy. Then: --nodata none counts every sample; --nodata V on a PNG (one
value, one per channel) against numpy; the median and percentiles of
--histogram over the valid samples (the rank rule, numpy); the refusals,
each naming its file while the others are still computed: a value that is
not a sample of the image's type, a list of another length than the
image's channels. Skips (77) without GDAL's Python module (python3-gdal).
"""
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
rng = np.random.default_rng(36)


def geotiff(name, bands, gdal_type, nodata):
    """Writes bands (2-D arrays) as a GeoTIFF with nodata; returns its path."""
    opts = ["PHOTOMETRIC=RGB"] if len(bands) == 3 else []
    return checklib.write_geotiff(os.path.join(TMP, name), bands, gdal_type,
                                  nodata, opts)


def gdal_stats(path):
    """[min, max, mean, std] of each band by GDAL over its valid samples."""
    ds = gdal.Open(path)
    out = [ds.GetRasterBand(i + 1).ComputeStatistics(False)
           for i in range(ds.RasterCount)]
    ds = None
    return out


def records(*args):
    return checklib.json_records(IMGSTAT, *args)


close = checklib.close


def check_against(path, bands, nodata, what):
    r, recs = records(path)
    if r.returncode != 0 or len(recs) != 1:
        fail("%s: exit %d, %s" % (what, r.returncode, r.stderr))
        return
    ref = gdal_stats(path)
    for c, (a, st) in enumerate(zip(bands, recs[0]["stats"])):
        a = a.astype(np.float64)
        nod = a == nodata
        valid = ~nod & ~np.isnan(a)
        gmin, gmax, gmean, gstd = ref[c]
        if st["count"] != int(valid.sum()):
            fail("%s ch %d: count %d, numpy %d" % (what, c, st["count"],
                                                  valid.sum()))
        if st.get("nodata_count") != int(nod.sum()):
            fail("%s ch %d: nodata_count %s, numpy %d" %
                 (what, c, st.get("nodata_count"), nod.sum()))
        if st["min"] != gmin or st["max"] != gmax:
            fail("%s ch %d: min/max %s %s, GDAL %r %r" %
                 (what, c, st["min"], st["max"], gmin, gmax))
        if not close(st["mean"], gmean) or not close(st["std"], gstd):
            fail("%s ch %d: mean/std %r %r, GDAL %r %r" %
                 (what, c, st["mean"], st["std"], gmean, gstd))
        for which in ("min", "max"):
            pos = (st[which + "_x"], st[which + "_y"])
            want = checklib.first_extreme(valid, a, which)
            if pos != want:
                fail("%s ch %d: %s at %s, numpy %s" % (what, c, which, pos,
                                                       want))
        if "nan_count" in st and st["nan_count"] != int(np.isnan(a).sum()):
            fail("%s ch %d: nan_count %d, numpy %d" %
                 (what, c, st["nan_count"], np.isnan(a).sum()))


# 8-bit gray, nodata 0, the first pixel nodata (no position may land there)
g8 = rng.integers(0, 256, (41, 53)).astype(np.uint8)
g8[rng.random(g8.shape) < 0.25] = 0
g8[0, 0] = 0
p_g8 = geotiff("g8.tif", [g8], gdal.GDT_Byte, 0)
check_against(p_g8, [g8], 0, "8-bit gray")

# 16-bit RGB, nodata 7; the minimum of the valid samples is above it
rgb = []
for _ in range(3):
    a = rng.integers(100, 60000, (37, 29)).astype(np.uint16)
    a[rng.random(a.shape) < 0.3] = 7
    rgb.append(a)
p_rgb = geotiff("rgb16.tif", rgb, gdal.GDT_UInt16, 7)
check_against(p_rgb, rgb, 7, "16-bit RGB")

# int16 (read as exact floats), nodata -32768
i16 = rng.integers(-2000, 3000, (33, 31)).astype(np.int16)
i16[rng.random(i16.shape) < 0.2] = -32768
p_i16 = geotiff("i16.tif", [i16], gdal.GDT_Int16, -32768)
check_against(p_i16, [i16], -32768, "int16")

# float32, nodata -9999 and NaN samples beside it
f32 = (rng.normal(5.0, 3.0, (45, 38))).astype(np.float32)
f32[rng.random(f32.shape) < 0.2] = -9999
f32[rng.random(f32.shape) < 0.05] = np.nan
p_f32 = geotiff("f32.tif", [f32], gdal.GDT_Float32, -9999)
check_against(p_f32, [f32], -9999, "float32")

# --nodata none: every sample, no nodata_count
r, recs = records("--nodata", "none", p_g8)
st = recs[0]["stats"][0] if recs else {}
if st.get("count") != g8.size or "nodata_count" in st or \
        not close(st.get("mean", 0), float(g8.astype(np.float64).mean())):
    fail("--nodata none: %s" % st)

# --nodata given on a PNG: one value for every channel, one per channel
png_rgb = rng.integers(0, 4, (19, 23, 3)).astype(np.uint8)
p_png = os.path.join(TMP, "rgb.png")
png.from_array(png_rgb.reshape(19, -1), "RGB").save(p_png)
for arg, nd in (("2", [2, 2, 2]), ("0,1,3", [0, 1, 3])):
    r, recs = records("--nodata", arg, p_png)
    if r.returncode != 0 or len(recs) != 1:
        fail("--nodata %s: exit %d %s" % (arg, r.returncode, r.stderr))
        continue
    for c, st in enumerate(recs[0]["stats"]):
        a = png_rgb[:, :, c].astype(np.int64)
        v = a[a != nd[c]]
        if (st["count"], st["nodata_count"], st["sum"]) != \
                (v.size, int((a == nd[c]).sum()), int(v.sum())):
            fail("--nodata %s ch %d: %s" % (arg, c, st))
        if st["min"] != v.min() or st["max"] != v.max():
            fail("--nodata %s ch %d: min/max %s" % (arg, c, st))

# histograms and percentiles over the valid samples (the rank rule)
r, recs = records("--percentiles", "10,50,90", p_rgb)
for c, st in enumerate(recs[0]["stats"] if recs else []):
    v = np.sort(rgb[c][rgb[c] != 7].astype(np.int64))
    for p in (10, 50, 90):
        want = checklib.rank_percentile(v, p)
        if st["percentiles"][str(p)] != want:
            fail("p%d ch %d: %s, numpy %d" % (p, c, st["percentiles"][str(p)],
                                              want))
    if sum(st["histogram"]["counts"]) != v.size:
        fail("histogram ch %d: %d samples, %d valid" %
             (c, sum(st["histogram"]["counts"]), v.size))

# refusals: each names its file, the others are still computed
r, recs = records("--nodata", "300", p_png, p_rgb)
if r.returncode == 0 or "rgb.png" not in r.stderr or \
        "not a 8-bit sample" not in r.stderr or len(recs) != 1 or \
        recs[0]["file"] != p_rgb:
    fail("--nodata 300: exit %d, %r, %d records" % (r.returncode, r.stderr,
                                                    len(recs)))
r, recs = records("--nodata", "0.5", p_f32, p_g8)
if r.returncode == 0 or "g8.tif" not in r.stderr or len(recs) != 1:
    fail("--nodata 0.5: exit %d, %r" % (r.returncode, r.stderr))
r, recs = records("--nodata", "1,2", p_png, p_g8)
if r.returncode == 0 or "2 nodata values" not in r.stderr or len(recs) != 0:
    fail("--nodata 1,2: exit %d, %r, %d records" % (r.returncode, r.stderr,
                                                    len(recs)))

checklib.finish("nodata_check")
