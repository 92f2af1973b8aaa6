#!/usr/bin/env python3
"""TIFF statistics reduced as the strips or tiles are read: the same record
as the decoded image's, every exact figure against numpy, and a peak memory
well under the image's.

Usage: tiff_stream_check.py IMGSTAT TMPDIR

GDAL writes the files: tiled (tiles crossing the right and bottom edges)
and striped, pixel- and band-interleaved, 8- and 16-bit unsigned, int16,
4-bit, MinIsWhite and palette, of 1, 2, 3, 5 and 13 bands, odd sizes
(widths under a vector of samples too), big-endian, with a nodata value
(GDAL_NODATA) or none, or one a band given (some bands holding theirs);
extremes tied, the largest first in the last pixel. For each, `--json --backend cpu` (and
`--nodata` given, and -j 1) must print byte for byte the record of the same
command with IMGSTAT_TIFF_STREAM=0 (the image decoded whole, then reduced),
each of the ways an uncompressed chunk is read (IMGSTAT_TIFF_MMAP unset:
reduced in the file mapped; 0: read with pread; populate,groups: the
mapping's other advice and spans);
for the unsigned ones each band's count, nodata_count, min, max, the raster
position of the first of each, sum and sum of squares equal numpy's. A deflated
copy cut short inside its tiles fails with the same words either way (a
tile's read error), and so does an uncompressed one. A
13-band 16-bit image of about 200 MB is read with a peak resident memory
under half its size (and over it with IMGSTAT_TIFF_STREAM=0: the check
sees the difference), mapped or not. 16-bit strips at odd offsets (written
here: reduced through a read, never at an odd address) give numpy's
figures either way. Skips (77) without GDAL's Python module.
"""
import json
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np

gdal = checklib.gdal_or_skip()
fail = checklib.fail
IMGSTAT, TMP = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(11)
OLD = dict(os.environ, IMGSTAT_TIFF_STREAM="0")
# the ways the streamed path reads an uncompressed chunk: the file mapped
# (the default), pread, the mapping with its other advice
WAYS = [None] + [dict(os.environ, IMGSTAT_TIFF_MMAP=m)
                 for m in ("0", "populate,groups,sequential")]


def write(name, a, gdal_type, nodata, opts, palette=False):
    """a: (bands, h, w); returns the path."""
    path = os.path.join(TMP, name)
    b, h, w = a.shape
    ds = gdal.GetDriverByName("GTiff").Create(path, w, h, b, gdal_type,
                                              options=opts)
    for i in range(b):
        band = ds.GetRasterBand(i + 1)
        band.WriteArray(a[i])
        if nodata is not None:
            band.SetNoDataValue(nodata)
        if palette:
            ct = gdal.ColorTable()
            for k in range(256):
                ct.SetColorEntry(k, (k, 255 - k, (k * 7) % 256, 255))
            band.SetRasterColorTable(ct)
        band = None
    ds = None
    return path


def run(args, env=None):
    return subprocess.run([IMGSTAT] + args, capture_output=True, text=True,
                          env=env)


def expect(a, nodata):
    """numpy's figures of each band over the valid samples (nodata: one
    value, a list of one a band, or None)."""
    out = []
    for i, band in enumerate(a):
        flat = band.reshape(-1).astype(np.int64)
        ndv = nodata[i] if isinstance(nodata, list) else nodata
        nd = flat == ndv if ndv is not None else np.zeros(flat.shape, bool)
        ok = ~nd
        v = flat[ok]
        idx = np.nonzero(ok)[0]
        e = {"count": int(v.size), "nodata_count": int(nd.sum()),
             "sum": int(v.sum()), "sum_sq": int((v * v).sum())}
        if v.size:
            w = band.shape[1]
            lo, hi = int(idx[np.argmin(v)]), int(idx[np.argmax(v)])
            e.update(min=int(v.min()), max=int(v.max()), min_x=lo % w,
                     min_y=lo // w, max_x=hi % w, max_y=hi // w)
        out.append(e)
    return out


def same_as_decoded(path, extra, backend="cpu"):
    """The streamed record against the decoded image's; returns it."""
    args = ["--json", "--backend", backend] + extra + [path]
    old = run(args, OLD)
    for env in WAYS:
        new = run(args, env)
        way = env["IMGSTAT_TIFF_MMAP"] if env else "unset"
        if new.returncode != 0 or old.returncode != 0:
            fail("%s %s IMGSTAT_TIFF_MMAP %s: exit %d / %d: %s %s" %
                 (path, extra, way, new.returncode, old.returncode,
                  new.stderr[-200:], old.stderr[-200:]))
            return None
        if new.stdout != old.stdout:
            fail("%s %s IMGSTAT_TIFF_MMAP %s: the streamed record differs "
                 "from the decoded image's:\n  %s\n  %s" %
                 (path, extra, way, new.stdout[:400], old.stdout[:400]))
    return new.stdout


def check(path, a, nodata, numpy_figures):
    recs = [same_as_decoded(path, j) for j in ([], ["-j", "1"])]
    same_as_decoded(path, [], "auto")  # streamed in a build without CUDA
    if nodata is None and a.dtype != np.int16:
        recs.append(same_as_decoded(path, ["--nodata", "7"]))
    if recs[0] is None or not numpy_figures:
        return
    checklib.compare_bands(path, json.loads(recs[0])["stats"],
                           expect(a, nodata))


def field(bands, h, w, dtype, top):
    lo = -300 if dtype == np.int16 else 0
    a = rng.integers(lo, top + 1, (bands, h, w)).astype(dtype)
    a[:, :, : w // 7] = 0  # a nodata border
    a[:, h // 2, w // 3] = top  # the largest value more than once
    a[:, h - 1, w - 2] = top
    a[:, h // 3, w // 2] = 1
    return a


T = ["TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=48"]
# (bands, h, w, gdal type, numpy type, top, creation options, numpy figures)
cases = [
    (13, 181, 233, gdal.GDT_UInt16, np.uint16, 65535,
     T + ["INTERLEAVE=PIXEL"], True),
    (13, 181, 233, gdal.GDT_UInt16, np.uint16, 65535,
     T + ["INTERLEAVE=BAND"], True),
    (13, 181, 233, gdal.GDT_UInt16, np.uint16, 65535,
     ["BLOCKYSIZE=5", "INTERLEAVE=PIXEL"], True),
    (3, 203, 117, gdal.GDT_Byte, np.uint8, 255,
     ["BLOCKYSIZE=3", "INTERLEAVE=BAND"], True),
    (3, 203, 117, gdal.GDT_Byte, np.uint8, 255,
     T + ["INTERLEAVE=PIXEL"], True),
    (1, 299, 301, gdal.GDT_Byte, np.uint8, 255, T, True),
    (1, 299, 301, gdal.GDT_UInt16, np.uint16, 65535, ["BLOCKYSIZE=9"], True),
    (1, 97, 131, gdal.GDT_Int16, np.int16, 32767, T, False),
    (13, 97, 131, gdal.GDT_Int16, np.int16, 32767,
     ["BLOCKYSIZE=4", "INTERLEAVE=BAND"], False),
    (1, 97, 131, gdal.GDT_Byte, np.uint8, 15, T + ["NBITS=4"], False),
    (1, 97, 131, gdal.GDT_Byte, np.uint8, 255,
     ["BLOCKYSIZE=6", "PHOTOMETRIC=MINISWHITE"], False),
]
for n, (bands, h, w, gt, dt, top, opts, figs) in enumerate(cases):
    a = field(bands, h, w, dt, top)
    for nodata in (0, None):
        path = write("s%d_%s.tif" % (n, "nd" if nodata is not None else "all"),
                     a, gt, nodata, opts)
        check(path, a, nodata, figs)
        os.remove(path)
# pixel-interleaved chunks reduced where they lie: odd periods (5 and 13
# bands of 16-bit vectors), 3 bands, u8, int16, strips as wide as the
# image, big-endian 16-bit (read through libtiff), widths under a vector;
# the largest value first in the last pixel, the smallest in the one
# before, each also elsewhere in other bands; a nodata value a band
P = ["INTERLEAVE=PIXEL"]
ilv_cases = [
    (5, 67, 301, gdal.GDT_UInt16, np.uint16, 65535, T + P, True),
    (5, 67, 301, gdal.GDT_UInt16, np.uint16, 65535,
     T + P + ["ENDIANNESS=BIG"], True),
    (13, 59, 7, gdal.GDT_UInt16, np.uint16, 65535, ["BLOCKYSIZE=3"] + P,
     True),
    (13, 97, 131, gdal.GDT_Byte, np.uint8, 255, T + P, True),
    (13, 97, 131, gdal.GDT_Int16, np.int16, 32767, T + P, False),
    (3, 97, 131, gdal.GDT_Int16, np.int16, 32767, ["BLOCKYSIZE=7"] + P,
     False),
    (3, 203, 117, gdal.GDT_UInt16, np.uint16, 65535, ["BLOCKYSIZE=11"] + P,
     True),
    (2, 77, 133, gdal.GDT_Byte, np.uint8, 255, ["BLOCKYSIZE=2"] + P, True),
]
for n, (bands, h, w, gt, dt, top, opts, figs) in enumerate(ilv_cases):
    a = field(bands, h, w, dt, top)
    lo = -300 if dt == np.int16 else 2
    a[:, :, w // 7:] = np.clip(a[:, :, w // 7:], lo, top - 1)
    a[:, h - 1, w - 1] = top  # the maximum first in the last pixel
    a[:, h - 1, w - 2] = lo - 1  # the minimum in the one before
    a[::2, h // 2, w // 3] = top  # and earlier in some bands
    a[1::3, 0, w - 1] = lo - 1
    for nodata in (0, None):
        path = write("i%d_%s.tif" % (n, "nd" if nodata is not None else "all"),
                     a, gt, nodata, opts)
        check(path, a, nodata, figs)
        if nodata is None and figs:
            # a nodata value a band: one it holds (every third band), else
            # one it does not hold where there is one
            nds = []
            for b in range(bands):
                missing = np.setdiff1d(np.arange(top + 1), a[b])
                nds.append(int(a[b, 5, 5]) if b % 3 == 1 or not missing.size
                           else int(missing[0]))
            arg = ",".join(str(v) for v in nds)
            rec = same_as_decoded(path, ["--nodata", arg])
            if rec is not None:
                stats = json.loads(rec)["stats"]
                for b, (st, e) in enumerate(zip(stats, expect(a, nds)), 1):
                    for key, val in e.items():
                        got = st.get(key, 0 if key == "nodata_count" else None)
                        if got != val:
                            fail("%s --nodata %s band %d: %s %r, numpy %r" %
                                 (path, arg, b, key, got, val))
        os.remove(path)

# a palette (RGB of the colour map)
a = field(1, 77, 91, np.uint8, 255)
path = write("palette.tif", a, gdal.GDT_Byte, None, T, palette=True)
check(path, a, None, False)
os.remove(path)

# damaged: a deflated tiled file of 23 MB (read on the cores) cut inside
# its tiles: the same failure, a tile's, either way
# libtiff's words name the row and column of the tile its handle read
# before (whichever thread's handle that was): not compared
def words(r):
    return r.returncode, r.stdout, re.sub(r"at row \d+, col \d+, ", "",
                                          r.stderr)


a = field(13, 900, 1000, np.uint16, 65535)
# and an uncompressed one (its tiles read without libtiff where they are
# whole): the same failure
for z in (["COMPRESS=DEFLATE"], []):
    path = write("cut_src.tif", a, gdal.GDT_UInt16, 0,
                 ["TILED=YES", "BLOCKXSIZE=128", "BLOCKYSIZE=128",
                  "INTERLEAVE=PIXEL"] + z)
    cut = os.path.join(TMP, "cut.tif")
    with open(path, "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[: len(data) * 3 // 4])
    args = ["--json", "--backend", "cpu", cut]
    old = run(args, OLD)
    for env in WAYS:
        new = run(args, env)
        # (uncompressed, the open finds the file too short for its pixels)
        if new.returncode == 0 or "cut.tif" not in new.stderr or \
                ("tile" if z else "truncated") not in new.stderr:
            fail("%s %s: exit %d, stderr %r: a failure naming the file "
                 "expected" % (cut, z, new.returncode, new.stderr[-300:]))
        if words(new) != words(old):
            fail("%s %s: streamed %r %r, decoded %r %r" %
                 (cut, z, new.stdout, new.stderr, old.stdout, old.stderr))
    os.remove(cut)
    os.remove(path)


def odd_strips(path, a):
    """a: (bands, h, w) uint16 written as a little-endian TIFF of
    uncompressed pixel-interleaved strips of 2 rows, each at an odd offset
    (the IFD after them)."""
    bands, h, w = a.shape
    rows = 2
    strips = [a[:, y:y + rows].transpose(1, 2, 0).astype("<u2").tobytes()
              for y in range(0, h, rows)]
    data, offsets, at = b"", [], 9  # after the header and one pad byte
    for st in strips:
        offsets.append(at + len(data))
        data += st
    extra_at = 9 + len(data)
    extra_at += extra_at & 1
    extra = b""

    def out_of_line(fmt, vals):
        nonlocal extra
        raw = struct.pack("<%d%s" % (len(vals), fmt), *vals)
        at = extra_at + len(extra)
        extra += raw + (b"\0" if len(raw) & 1 else b"")
        return at

    entries = [(256, 4, 1, w), (257, 4, 1, h),
               (258, 3, bands, out_of_line("H", [16] * bands)),
               (259, 3, 1, 1), (262, 3, 1, 2),
               (273, 4, len(offsets), out_of_line("I", offsets)),
               (277, 3, 1, bands), (278, 4, 1, rows),
               (279, 4, len(strips),
                out_of_line("I", [len(st) for st in strips])),
               (284, 3, 1, 1),
               (339, 3, bands, out_of_line("H", [1] * bands))]
    ifd_at = extra_at + len(extra)
    ifd = struct.pack("<H", len(entries))
    for tag, typ, count, val in entries:
        ifd += struct.pack("<HHII", tag, typ, count, val)
    ifd += struct.pack("<I", 0)
    with open(path, "wb") as f:
        f.write(b"II" + struct.pack("<HI", 42, ifd_at) + b"\0" + data +
                b"\0" * (extra_at - 9 - len(data)) + extra + ifd)


# 16-bit samples at odd offsets: never reduced at an odd address (a read
# into a buffer instead), numpy's figures each way
a = field(3, 23, 37, np.uint16, 65535)
path = os.path.join(TMP, "odd.tif")
odd_strips(path, a)
rec = same_as_decoded(path, [])
if rec is not None:
    checklib.compare_bands(path, json.loads(rec)["stats"], expect(a, None))
os.remove(path)


def peak_mib(args, env):
    """Peak resident MiB of imgstat ARGS, in a child of its own."""
    probe = ("import resource,subprocess,sys;"
             "subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,"
             "stderr=subprocess.DEVNULL,check=True);"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", probe, IMGSTAT] + args,
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        fail("imgstat %s: %s" % (args, r.stderr[-300:]))
        return None
    return int(r.stdout) / 1024.0


# memory: 13 bands of 2600 x 3000 uint16 (about 193 MiB of samples);
# tiles of 256 x 256 (1.7 MB): the mapped file holds a tile a thread
# resident, under half the image on 16 cores and more
bands, h, w = 13, 2600, 3000
path = os.path.join(TMP, "large.tif")
ds = gdal.GetDriverByName("GTiff").Create(
    path, w, h, bands, gdal.GDT_UInt16,
    options=["TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=256",
             "INTERLEAVE=PIXEL"])
row = rng.integers(1, 65536, (h, w), dtype=np.uint16)
for i in range(bands):
    band = ds.GetRasterBand(i + 1)
    band.WriteArray(np.roll(row, 37 * i, axis=1))
    band.SetNoDataValue(0)
    band = None
ds = None
image_mib = bands * h * w * 2 / 2**20
args = ["--json", "--backend", "cpu", path]
for env in WAYS:
    streamed = peak_mib(args, env)
    way = env["IMGSTAT_TIFF_MMAP"] if env else "unset"
    print("large.tif: %.0f MiB of samples; peak %s MiB streamed "
          "(IMGSTAT_TIFF_MMAP %s)" % (image_mib, streamed, way))
    if streamed is not None and streamed >= 0.5 * image_mib:
        fail("streamed peak %.0f MiB (IMGSTAT_TIFF_MMAP %s), not under half "
             "the image's %.0f MiB" % (streamed, way, image_mib))
decoded = peak_mib(args, OLD)
print("large.tif: peak %s MiB decoded" % decoded)
if decoded is not None and decoded < image_mib:
    fail("decoded peak %.0f MiB under the image's %.0f MiB: the check cannot "
         "tell the paths apart" % (decoded, image_mib))
same_as_decoded(path, [])
os.remove(path)

checklib.finish("tiff_stream_check")
