#!/usr/bin/env python3
"""imgstat against `gdalinfo -stats` on one multi-band uint16 GeoTIFF with a
nodata value (a Sentinel-2 tile's shape by default: 13 bands of
10980 x 10980), side by side in one run, whole process.

  python3 bench/gdal_bands.py IMGSTAT [--size N] [--bands B] [--runs R]
                              [--dir DIR] [--keep] [--jobs J]

The file is written by GDAL (band-interleaved by pixel or by band:
--planar), uncompressed and tiled 512 x 512 so both readers stream it; its
samples are smooth fields with noise and a nodata border (0, as an
orthorectified tile's edge). Each command runs --runs times (default 5)
after one warm-up that puts the file in the page cache; the median wall
time and the peak resident memory (getrusage of the child) are printed.
Before timing, the per-band figures are compared: GDAL's
ComputeStatistics(False) (exact min and max; mean and std over valid
samples, GDAL's population std) against imgstat's --json record (count,
min, max, mean, std, nodata_count), to 1e-12 relative for mean and std.
gdalinfo runs with GDAL_PAM_ENABLED=NO so that it writes no .aux.xml.
Needs python3 with numpy and GDAL's module (python3-gdal). The file is
removed at the end unless --keep.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")  # no .aux.xml beside the file


def write_tile(path, size, bands, planar):
    drv = gdal.GetDriverByName("GTiff")
    opts = ["TILED=YES", "BLOCKXSIZE=512", "BLOCKYSIZE=512",
            "INTERLEAVE=%s" % ("BAND" if planar else "PIXEL"), "BIGTIFF=YES"]
    ds = drv.Create(path, size, size, bands, gdal.GDT_UInt16, opts)
    for b in range(1, bands + 1):
        ds.GetRasterBand(b).SetNoDataValue(0)
    rng = np.random.default_rng(2)
    step = 1024
    yy0 = np.arange(step, dtype=np.float64)
    for y0 in range(0, size, step):
        h = min(step, size - y0)
        yy = (yy0[:h] + y0)[:, None] / size
        xx = np.arange(size, dtype=np.float64)[None, :] / size
        # nodata: a slanted border, as a tile's edge
        edge = xx < 0.08 + 0.1 * yy
        for b in range(1, bands + 1):
            base = 800 + 400 * b + 1500 * np.sin(6 * xx + b) * np.cos(4 * yy)
            a = base + rng.normal(0, 60, (h, size))
            a = np.clip(np.rint(a), 1, 65535).astype(np.uint16)
            a[np.broadcast_to(edge, a.shape)] = 0
            ds.GetRasterBand(b).WriteArray(a, 0, y0)
    ds.FlushCache()
    ds = None


def gdal_figures(path):
    ds = gdal.Open(path)
    out = []
    for b in range(1, ds.RasterCount + 1):
        mn, mx, mean, std = ds.GetRasterBand(b).ComputeStatistics(False)
        out.append((mn, mx, mean, std))
    return out


def timed(cmd, env=None):
    """Wall seconds and the child's peak resident memory in MiB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit("FAIL: %s: exit %d: %s" % (" ".join(cmd), r.returncode,
                                            r.stderr.decode()[-400:]))
    # ru_maxrss of children is the largest of any child so far: measure a
    # command in a child of its own (below) for its own peak
    return wall, before, r.stdout


def peak_of(cmd, env=None):
    probe = ("import resource,subprocess,sys;"
             "subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,"
             "stderr=subprocess.DEVNULL,check=True);"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", probe] + cmd,
                       capture_output=True, text=True, env=env, check=True)
    return int(r.stdout) / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("imgstat")
    ap.add_argument("--size", type=int, default=10980)
    ap.add_argument("--bands", type=int, default=13)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--planar", action="store_true")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="imgstat_gdal_bands.")
    path = os.path.join(d, "tile_%d_%dx%d.tif" % (a.bands, a.size, a.size))
    if not os.path.exists(path):
        t = time.perf_counter()
        write_tile(path, a.size, a.bands, a.planar)
        print("wrote %s (%.1f GB) in %.0f s" %
              (path, os.path.getsize(path) / 1e9, time.perf_counter() - t))
    env = dict(os.environ, GDAL_PAM_ENABLED="NO")
    img = [a.imgstat, "--json", "--backend", "cpu"]
    if a.jobs:
        img += ["-j", str(a.jobs)]
    img.append(path)
    gcmd = ["gdalinfo", "-stats", path]

    # the figures first: GDAL's are the reference
    _, _, out = timed(img)
    rec = json.loads(out)
    ref = gdal_figures(path)
    bad = 0
    stats = rec.get("stats", [])
    if len(stats) != len(ref):
        sys.exit("FAIL: imgstat gives %d bands, GDAL %d" %
                 (len(stats), len(ref)))
    for b, (st, (mn, mx, mean, std)) in enumerate(zip(stats, ref), 1):
        ok = (st["min"] == mn and st["max"] == mx and
              abs(st["mean"] - mean) <= 1e-12 * abs(mean) and
              abs(st["std"] - std) <= 1e-9 * abs(std))
        if not ok:
            bad += 1
            print("FAIL band %d: imgstat %s %s %r %r, GDAL %s %s %r %r" %
                  (b, st["min"], st["max"], st["mean"], st["std"], mn, mx,
                   mean, std))
    print("figures: %d bands, %s; nodata samples per band %s" %
          (len(ref), "all agree with GDAL" if not bad else "%d differ" % bad,
           stats[0].get("nodata_count")))

    rows = []
    for name, cmd, e in (("imgstat", img, None), ("gdalinfo -stats", gcmd,
                                                  env)):
        timed(cmd, e)  # warm-up: the file in the page cache
        walls = sorted(timed(cmd, e)[0] for _ in range(a.runs))
        rows.append((name, walls[len(walls) // 2], peak_of(cmd, e)))
    gb = a.size * a.size * a.bands * 2 / 1e9
    print("%-16s %10s %10s %10s" % ("command", "median s", "GB/s", "peak MiB"))
    for name, w, peak in rows:
        print("%-16s %10.3f %10.2f %10.0f" % (name, w, gb / w, peak))
    print("imgstat / gdalinfo: %.2f x faster (samples %.2f GB, image %.0f "
          "MiB decoded)" % (rows[1][1] / rows[0][1], gb, gb * 1e9 / 2**20))
    if not a.keep:
        os.remove(path)
        if not a.dir:
            os.rmdir(d)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
