"""Images of more than four bands against numpy and GDAL.

13-band uint16 arrays (random, seeded) saved as .npy channels last (H, W,
13) and channels first (13, H, W), as TIFF by GDAL (INTERLEAVE=PIXEL: 13
samples a pixel; INTERLEAVE=BAND: planar), and as a FITS cube (NAXIS3 = 13,
int16, by astropy when present). Each record's per-band count, min, max,
sum, sum_sq, mean and std are compared with numpy's over the same array,
and the TIFFs' min, max, mean and std with GDAL's ComputeStatistics. A
200- and 1024-band arrays (uint8, uint16, float32) and a 300-band planar
TIFF are read, per band against numpy, and their text tables keep one line
a band; a 1025-band array is refused naming the file and the count, and a
17-band one is pooled as it is (numpy's figures). An (8, 6, 8) array is refused, and read both ways with
--npy-layout hwc and chw. The dataset record of three 13-band images is numpy's over
their concatenation; --as rgb refuses them; zscore normalize of a 13-band
.npy writes (H, W, 13) float32 equal to numpy's (x - mean) / std, and PNG
output refuses 13 bands.

usage: bands_check.py IMGSTAT TMPDIR"""
import json
import os
import subprocess
import sys

import numpy as np
from osgeo import gdal

IMGSTAT, T = sys.argv[1:3]
gdal.UseExceptions()
checks = failures = 0


def report(good, what):
    global checks, failures
    checks += 1
    failures += not good
    if not good:
        print("FAIL:", what)


def run(*args):
    return subprocess.run([IMGSTAT, *args], capture_output=True, text=True)


def records(*args):
    p = run("--json", *args)
    if p.returncode != 0:
        report(False, "imgstat %s: %s" % (args, p.stderr))
        return []
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def check_bands(name, stats, bands):
    """stats: the record's per-band objects; bands: numpy arrays."""
    report(len(stats) == len(bands),
           "%s: %d bands, not %d" % (name, len(stats), len(bands)))
    for i, (s, b) in enumerate(zip(stats, bands)):
        x = b.astype(np.float64).ravel()
        xi = b.astype(np.int64).ravel()
        want = {"count": x.size, "min": x.min(), "max": x.max()}
        for k, v in want.items():
            report(s[k] == v,
                   "%s band %d %s %r != %r" % (name, i + 1, k, s[k], v))
        report(s["channel"] == str(i + 1),
               "%s band %d named %r" % (name, i + 1, s["channel"]))
        if b.dtype == np.uint16:
            report(s["sum"] == int(xi.sum())
                   and s["sum_sq"] == int((xi * xi).sum()),
                   "%s band %d sums" % (name, i + 1))
        report(close(s["mean"], x.mean()),
               "%s band %d mean %r != %r" % (name, i + 1, s["mean"], x.mean()))
        report(close(s["std"], x.std()),
               "%s band %d std %r != %r" % (name, i + 1, s["std"], x.std()))


rng = np.random.default_rng(13)
H, W, N = 21, 34, 13
a = rng.integers(0, 65536, size=(H, W, N), dtype=np.uint16)
bands = [a[:, :, i] for i in range(N)]

# .npy, channels last and first
np.save(os.path.join(T, "hwc.npy"), a)
np.save(os.path.join(T, "chw.npy"), np.ascontiguousarray(a.transpose(2, 0, 1)))
for f in ("hwc.npy", "chw.npy"):
    r = records(os.path.join(T, f))
    if r:
        report(r[0]["channels"] == N, f + ": channels")
        check_bands(f, r[0]["stats"], bands)

# TIFF by GDAL, contiguous and planar; GDAL's statistics as the reference
for il in ("PIXEL", "BAND"):
    f = os.path.join(T, il.lower() + ".tif")
    d = gdal.GetDriverByName("GTiff").Create(f, W, H, N, gdal.GDT_UInt16,
                                             ["INTERLEAVE=" + il])
    for i in range(N):
        d.GetRasterBand(i + 1).WriteArray(bands[i])
    d = None
    r = records(f)
    if not r:
        continue
    check_bands(f, r[0]["stats"], bands)
    g = gdal.Open(f)
    for i, s in enumerate(r[0]["stats"]):
        mn, mx, mean, sd = g.GetRasterBand(i + 1).ComputeStatistics(False)
        report(s["min"] == mn and s["max"] == mx and close(s["mean"], mean)
               and abs(s["std"] - sd) <= 1e-6 * sd,
               "%s band %d vs GDAL (%r, %r, %r, %r)" % (f, i + 1, mn, mx,
                                                        mean, sd))
    g = None
    os.remove(f + ".aux.xml") if os.path.exists(f + ".aux.xml") else None

# FITS cube: NAXIS3 planes are the bands
try:
    from astropy.io import fits
except ImportError:
    fits = None
    print("note: no astropy, the FITS cube is not checked")
if fits is not None:
    cube = (a.transpose(2, 0, 1).astype(np.int32) - 32768).astype(np.int16)
    f = os.path.join(T, "cube.fits")
    fits.PrimaryHDU(cube).writeto(f)
    r = records(f)
    if r:
        check_bands(f, r[0]["stats"], [cube[i] for i in range(N)])

# many bands: 200 and 1024 of each sample type (channels last, said by
# --npy-layout: the bands axis is the largest), a 300-band planar TIFF by
# GDAL; per band against numpy
for nb, dt in ((200, np.uint8), (200, np.uint16), (200, np.float32),
               (1024, np.uint8), (1024, np.uint16), (1024, np.float32)):
    hw = 24 if nb == 200 else 64
    if dt == np.float32:
        m = rng.standard_normal((hw, hw, nb)).astype(np.float32)
    else:
        m = rng.integers(0, np.iinfo(dt).max + 1, size=(hw, hw, nb), dtype=dt)
    f = os.path.join(T, "many%d_%s.npy" % (nb, np.dtype(dt).name))
    np.save(f, m)
    r = records("--npy-layout", "hwc", f)
    if r:
        report(r[0]["channels"] == nb, f + ": channels")
        check_bands(f, r[0]["stats"], [m[:, :, i] for i in range(nb)])
    p = run("--npy-layout", "hwc", f)
    lines = p.stdout.splitlines()
    report(p.returncode == 0 and len(lines) == nb + 2
           and lines[-1].split()[0] == str(nb),
           "%s: the text table, one line a band" % f)
    os.remove(f)
f = os.path.join(T, "planar300.tif")
m = rng.integers(0, 65536, size=(300, 9, 11), dtype=np.uint16)
d = gdal.GetDriverByName("GTiff").Create(f, 11, 9, 300, gdal.GDT_UInt16,
                                         ["INTERLEAVE=BAND"])
for i in range(300):
    d.GetRasterBand(i + 1).WriteArray(m[i])
d = None
r = records(f)
if r:
    check_bands(f, r[0]["stats"], [m[i] for i in range(300)])
os.remove(f)
# a label image beside a 300-band image: each label's per-band figures
f = os.path.join(T, "lab300.npy")
fl = os.path.join(T, "lab300_labels.npy")
m = rng.integers(0, 65536, size=(12, 10, 300), dtype=np.uint16)
m[::3, ::2, ::5] = 7
lab = (np.arange(120).reshape(12, 10) % 3).astype(np.uint8)
np.save(f, m)
np.save(fl, lab)
r = records("--npy-layout", "hwc", "--labels", fl, f)
if r:
    labs = r[0].get("labels", [])
    report([x["label"] for x in labs] == [1, 2], "labels of 300 bands")
    for x in labs:
        check_bands("label %d" % x["label"], x["stats"],
                    [m[:, :, i][lab == x["label"]] for i in range(300)])
# over 16 bands the nodata counts are the text table's last column
p = run("--npy-layout", "hwc", "--nodata", "7", f)
rows = p.stdout.splitlines()[2:]
report(p.returncode == 0 and p.stdout.splitlines()[1].split()[-1] == "nodata"
       and len(rows) == 300
       and all(int(rows[i].split()[-1]) == int((m[:, :, i] == 7).sum())
               for i in range(300)),
       "the nodata column of 300 bands: %r" % p.stdout[:300])
os.remove(f)
os.remove(fl)

# more bands than the limit: refused with the file and the count
f = os.path.join(T, "b1025.npy")
np.save(f, np.zeros((4, 4, 1025), np.uint8))
p = run("--npy-layout", "hwc", f)
report(p.returncode != 0 and f in p.stderr and "1025 bands" in p.stderr,
       "1025 bands refused: %r" % p.stderr)
os.remove(f)
# band names: a 13-band GeoTIFF whose bands GDAL describes (some, with
# characters XML escapes), with nodata 0; names and figures of the valid
# samples against numpy
f = os.path.join(T, "named.tif")
m = rng.integers(0, 4000, size=(N, H, W), dtype=np.uint16)
m[:, :, :3] = 0
d = gdal.GetDriverByName("GTiff").Create(f, W, H, N, gdal.GDT_UInt16,
                                         ["INTERLEAVE=PIXEL"])
names = ["B%02d" % (i + 1) if i % 4 else "B%02d <nir> & \"x\"" % (i + 1)
         for i in range(N)]
for i in range(N):
    b = d.GetRasterBand(i + 1)
    b.WriteArray(m[i])
    b.SetNoDataValue(0)
    if i != 5:
        b.SetDescription(names[i])
d = None
r = records(f)
if r:
    st = r[0]["stats"]
    report([s.get("name") for s in st] ==
           [None if i == 5 else names[i] for i in range(N)],
           "band names %r" % [s.get("name") for s in st])
    for i, s in enumerate(st):
        v = m[i][m[i] != 0].astype(np.float64)
        report(s["count"] == v.size and s["nodata_count"] == m[i].size - v.size
               and s["min"] == v.min() and s["max"] == v.max()
               and close(s["mean"], v.mean()) and close(s["std"], v.std()),
               "named.tif band %d figures" % (i + 1))
p = run(f)
report(p.returncode == 0 and "\n1 B01 <nir> & \"x\" " in p.stdout
       and "\n6 " in p.stdout and "\n2 B02 " in p.stdout,
       "band names in the text table: %r" % p.stdout)
os.remove(f)

# normalize zscore of a 200-band .npy
f = os.path.join(T, "many200.npy")
m = rng.integers(0, 65536, size=(20, 24, 200), dtype=np.uint16)
np.save(f, m)
out = os.path.join(T, "z200.npy")
p = run("normalize", "zscore", "--npy-layout", "hwc", f, "-o", out)
report(p.returncode == 0, "normalize 200 bands: %r" % p.stderr)
if p.returncode == 0:
    z = np.load(out)
    x = m.astype(np.float64)
    want = (x - x.mean(axis=(0, 1))) / x.std(axis=(0, 1))
    report(z.shape == m.shape and z.dtype == np.float32
           and np.abs(z - want).max() < 1e-5,
           "normalize zscore 200 bands: shape %r" % (z.shape,))
    os.remove(out)
os.remove(f)

# the dataset pool takes any band count: 17 pooled as they are
f = os.path.join(T, "b17.npy")
b17 = rng.integers(0, 65536, size=(H, W, 17), dtype=np.uint16)
np.save(f, b17)
r = records("--dataset-only", f)
if r:
    rec = r[-1]["dataset"]
    report(rec["pooled"] == 1 and rec["layout"] == "17-band",
           "17 bands pooled: layout %r" % rec.get("layout"))
    check_bands("dataset 17", rec["stats"], [b17[:, :, i] for i in range(17)])
os.remove(f)

# a shape that cannot tell: refused, then read as --npy-layout says
amb = rng.integers(0, 65536, size=(8, 6, 8), dtype=np.uint16)
famb = os.path.join(T, "amb.npy")
np.save(famb, amb)
p = run(famb)
report(p.returncode != 0 and "--npy-layout" in p.stderr,
       "(8, 6, 8) refused: %r" % p.stderr)
r = records("--npy-layout", "hwc", famb)
if r:
    check_bands("amb hwc", r[0]["stats"], [amb[:, :, i] for i in range(8)])
r = records("--npy-layout", "chw", famb)
if r:
    check_bands("amb chw", r[0]["stats"], [amb[i] for i in range(8)])

# the dataset pool of three 13-band images
ds = os.path.join(T, "ds")
os.mkdir(ds)
imgs = [rng.integers(0, 65536, size=(H + k, W, N), dtype=np.uint16)
        for k in range(3)]
for k, im in enumerate(imgs):
    np.save(os.path.join(ds, "i%d.npy" % k), im)
r = records("--dataset-only", ds)
if r:
    rec = r[-1]["dataset"]
    report(rec["pooled"] == 3 and rec["layout"] == "13-band",
           "dataset layout %r" % rec.get("layout"))
    report("depth_note" not in rec, "no Pillow note for bands")
    check_bands("dataset", rec["stats"],
                [np.concatenate([im[:, :, i].ravel() for im in imgs])
                 for i in range(N)])
p = run("--dataset-only", "--as", "rgb", ds)
report(": --dataset: a 13-band image is not pooled converted to rgb" in
       p.stderr and "pool as they are (--as keep)" in p.stderr,
       "--as rgb refuses bands: %r" % p.stderr)

# normalize zscore of a 13-band .npy
out = os.path.join(T, "z.npy")
p = run("normalize", "zscore", os.path.join(T, "hwc.npy"), "-o", out)
report(p.returncode == 0, "normalize: %r" % p.stderr)
if p.returncode == 0:
    z = np.load(out)
    x = a.astype(np.float64)
    want = (x - x.mean(axis=(0, 1))) / x.std(axis=(0, 1))
    report(z.shape == (H, W, N) and z.dtype == np.float32
           and np.abs(z - want).max() < 1e-5,
           "normalize zscore: shape %r" % (z.shape,))
p = run("normalize", os.path.join(T, "hwc.npy"), "-o",
        os.path.join(T, "o.png"))
report(p.returncode != 0 and "13 bands" in p.stderr,
       "PNG refuses 13 bands: %r" % p.stderr)

print("%d checks, %d failures" % (checks, failures))
sys.exit(1 if failures else 0)
