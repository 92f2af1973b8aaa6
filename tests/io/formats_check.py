"""The optional formats against numpy: each file written by a second,
independent writer (numpy.save for .npy, PIL for TIFF and WebP, headers
written here for PFM, plain PNM, FITS and the TIFF layouts PIL cannot
write), imgstat's --json record compared with numpy over the pixels the
writer was given: exact sums for integer data, float figures within 1e-12
relative. Damaged files must be refused with a message naming the file.

usage: formats_check.py IMGSTAT TMPDIR
Formats the build lacks (imgstat --version) are skipped, said so."""
import io
import json
import os
import subprocess
import sys
import struct
import zlib

import numpy as np

from imgcheck import (IMGSTAT, expect_refused, expect_stats, fail, finish, ok,
                      path, run, truncations, write)

rng = np.random.default_rng(13)
rc, version, _ = run("--version")
print(version.strip())

# ---- .npy: numpy.save is the writer -------------------------------------
for dt in ["u1", "<u2", ">u2", "<i2", "<i4", "<f4", ">f4", "|i1", "|b1"]:
    for shape in [(7, 9), (6, 5, 3), (4, 8, 4), (3, 6, 7)]:
        a = rng.integers(-200, 60000, shape)
        if dt in ("u1",):
            a = a % 256
        elif dt.endswith("i1"):
            a = a % 256 - 128
        elif dt.endswith("b1"):
            a = a % 2
        elif dt.endswith("i2"):
            a = a - 30000
        elif dt.endswith("f4"):
            a = rng.standard_normal(shape) * 1000
        a = a.astype(dt)
        name = f"a-{dt.replace('<', 'le').replace('>', 'be').replace('|', '')}-{'x'.join(map(str, shape))}.npy"
        np.save(path(name), a)
        # (3, 6, 7): channels first; the others channels last
        chw = shape == (3, 6, 7)
        # int16: an exact integer type (depth 16, signed values)
        ref = a.astype(np.float32) if dt[-2:] in ("i1", "i4") else a
        if dt.endswith("b1"):
            ref = a.astype(np.uint8)
        depth = 8 if dt[-2:] in ("u1", "b1") else 16 if dt[-2:] in ("u2", "i2") else 32
        expect_stats(name, ref, depth, channels_last=not chw)
# float64 and int32 whose values are floats exactly; others refused
f = (rng.integers(-2**20, 2**20, (5, 6, 3)) / 64.0).astype("<f8")
f[0, 0, 0] = np.nan
f[1, 1, 1] = np.inf
np.save(path("f8-exact.npy"), f)
expect_stats("f8-exact.npy", f.astype(np.float32), 32)
np.save(path("f8-round.npy"), np.full((3, 3), 0.1))
expect_refused("f8-round.npy", "not exactly a 32-bit float")
np.save(path("i4-big.npy"), np.array([[1, 2**24 + 1]], dtype="<i4"))
expect_refused("i4-big.npy", "not exactly a 32-bit float")
np.save(path("i8.npy"), np.zeros((3, 3), dtype="<i8"))
expect_refused("i8.npy", "not supported")
np.save(path("fortran.npy"), np.asfortranarray(np.zeros((3, 4), "u1")))
expect_refused("fortran.npy", "Fortran")
np.save(path("shape4.npy"), np.zeros((2, 3, 4, 5), "u1"))
expect_refused("shape4.npy", "no image")
# beyond 4 channels the bands axis is the smaller end one: (7, 6, 7) has
# none, (1025, 1100, 1200) more than the limit (refused from its header:
# no samples written)
np.save(path("shape5.npy"), np.zeros((7, 6, 7), "u1"))
expect_refused("shape5.npy", "no image")
with open(path("shape1025.npy"), "wb") as f:
    np.lib.format.write_array_header_1_0(
        f, {"descr": "|u1", "fortran_order": False,
            "shape": (1025, 1100, 1200)})
expect_refused("shape1025.npy", "1025 bands")
buf = io.BytesIO()
np.save(buf, rng.integers(0, 255, (40, 50, 3)).astype("u1"))
truncations("a.npy", buf.getvalue(), "Corrupt NPY data")
bad = buf.getvalue().replace(b"'shape'", b"'shapo'")
write("dict.npy", bad)
expect_refused("dict.npy", "Corrupt NPY data")

# ---- PFM: the header written here ----------------------------------------
for ch, magic in ((3, b"PF"), (1, b"Pf")):
    for order in ("<", ">"):
        a = (rng.standard_normal((5, 8, ch)) * 100).astype(order + "f4")
        a[2, 3, 0] = np.nan
        a[4, 1, 0] = -np.inf
        scale = b"-1.0" if order == "<" else b"1.0"
        # rows bottom to top
        data = magic + b"\n8 5\n" + scale + b"\n" + a[::-1].tobytes()
        name = f"f{ch}{'le' if order == '<' else 'be'}.pfm"
        write(name, data)
        expect_stats(name, a if ch == 3 else a[:, :, 0], 32)
truncations("f.pfm", data, "Corrupt PFM data")
write("scale0.pfm", b"Pf\n2 2\n0\n" + bytes(16))
expect_refused("scale0.pfm", "Corrupt PFM data")

# ---- plain PNM and P4: the text written here ------------------------------
def pnm_plain(magic, a, maxval):
    h, w = a.shape[:2]
    head = f"{magic}\n# written by formats_check.py\n{w} {h}\n"
    if maxval:
        head += f"{maxval}\n"
    vals = a.reshape(h, -1)
    sep = "" if magic == "P1" and h % 2 else " "
    return (head + "\n".join(sep.join(str(int(v)) for v in row)
                             for row in vals) + "\n").encode()


for magic, maxval, shape in (("P2", 255, (6, 7)), ("P2", 1000, (5, 4)),
                             ("P2", 65535, (3, 9)), ("P2", 7, (4, 4)),
                             ("P3", 255, (5, 6, 3)), ("P3", 4095, (4, 3, 3)),
                             ("P1", 0, (5, 11)), ("P1", 0, (4, 3))):
    a = rng.integers(0, (maxval or 1) + 1, shape)
    name = f"{magic}-{maxval}-{shape[0]}.pnm"
    write(name, pnm_plain(magic, a, maxval))
    # bitmaps are widened to 8 bits, white 255: the file's 1 (black) is 0
    ref = (1 - a) * 255 if magic == "P1" else a
    expect_stats(name, ref.astype(np.uint16 if maxval > 255 else np.uint8),
                 16 if maxval > 255 else 8)
bits = rng.integers(0, 2, (6, 13))
rows = b"".join(np.packbits(r).tobytes() for r in bits.astype(np.uint8))
write("p4.pbm", b"P4\n13 6\n" + rows)
expect_stats("p4.pbm", ((1 - bits) * 255).astype(np.uint8), 8)
truncations("p4.pbm", b"P4\n13 6\n" + rows, "Corrupt PNM data", (0.8,))
plain = pnm_plain("P3", rng.integers(0, 256, (20, 20, 3)), 255)
truncations("p3.ppm", plain, "Corrupt PNM data")
write("over.pgm", b"P2 2 2 100 1 2 3 101\n")
expect_refused("over.pgm", "Corrupt PNM data")
write("junk.pgm", b"P2 2 2 100 1 2 x 3\n")
expect_refused("junk.pgm", "Corrupt PNM data")


# ---- the Netpbm family: headers of
# any length up to 1 MiB, one rule for samples over maxval, PFM is its
# header and its data (CRLF line ends too), bitmaps widened to 0/255 -------
from PIL import Image


def pnm_binary(magic, a, maxval, comment=b""):
    h, w = a.shape[:2]
    head = magic + b"\n" + comment + b"%d %d\n%d\n" % (w, h, maxval)
    return head + a.astype(">u2" if maxval > 255 else "u1").tobytes()


for magic, shape, maxval in ((b"P5", (9, 11), 255), (b"P6", (7, 5, 3), 255),
                             (b"P5", (4, 6), 4000), (b"P2", (6, 5), 255)):
    a = rng.integers(0, maxval + 1, shape)
    note = b"#" + b"x" * 5000 + b"\n# and a second line\n"
    if magic == b"P2":
        data = b"P2\n" + note + pnm_plain("P2", a, maxval).split(b"\n", 1)[1]
    else:
        data = pnm_binary(magic, a, maxval, note)
    name = f"long-comment-{magic.decode()}-{maxval}.pnm"
    write(name, data)
    # Pillow reads these too (it rescales maxval, so 8 bits only)
    ref = np.asarray(Image.open(path(name))) if maxval == 255 else a
    if not np.array_equal(ref.astype(np.int64), a):
        fail(f"{name}: Pillow does not read the pixels written")
    expect_stats(name, a.astype(np.uint16 if maxval > 255 else np.uint8))
a = rng.integers(0, 256, (3, 4))
write("comment-1mib.pgm", pnm_binary(b"P5", a, 255, b"#" + b"c" * 1000000 + b"\n"))
expect_stats("comment-1mib.pgm", a.astype(np.uint8), 8)
write("comment-2mib.pgm", pnm_binary(b"P5", a, 255, b"#" + b"c" * (2 << 20) + b"\n"))
expect_refused("comment-2mib.pgm", "header is longer than 1 MiB")
write("comment-pfm.pfm", b"Pf\n#" + b"c" * 5000 + b"\n2 1\n-1.0\n"
      + np.array([1.5, -2.5], "<f4").tobytes())
expect_stats("comment-pfm.pfm", np.array([[1.5, -2.5]], np.float32), 32)

# a sample over maxval: refused naming its pixel, plain or binary, 8 or 16
# bits (and the same pixels under a larger maxval load)
for magic, shape, maxval in (("P5", (5, 7), 10), ("P5", (4, 6), 1000),
                             ("P6", (3, 5, 3), 200), ("P6", (3, 4, 3), 40000),
                             ("P2", (5, 7), 10), ("P3", (3, 5, 3), 1000)):
    a = rng.integers(0, maxval + 1, shape)
    y, x = int(rng.integers(0, shape[0])), int(rng.integers(0, shape[1]))
    over = maxval + 1 + int(rng.integers(0, 255 if maxval < 255 else 20000))
    a[y, x] = over if len(shape) == 2 else a[y, x]
    if len(shape) == 3:
        a[y, x, int(rng.integers(0, 3))] = over
    big = 255 if over <= 255 else 65535
    for m in (maxval, big):
        data = (pnm_binary(magic.encode(), a, m) if magic in ("P5", "P6")
                else pnm_plain(magic, a, m))
        name = f"over-{magic}-{maxval}-{m}.pnm"
        write(name, data)
        if m == maxval:
            expect_refused(name, f"sample {over} of pixel ({x}, {y}) is over "
                                 f"the maxval {maxval}")
        else:
            expect_stats(name, a.astype(np.uint16 if m > 255 else np.uint8))

# PFM: "\r\n" line ends (a file written in text mode) and nothing but the
# header and the data
for magic, ch in ((b"Pf", 1), (b"PF", 3)):
    a = (rng.standard_normal((4, 3, ch)) * 10).astype("<f4")
    data = magic + b"\r\n3 4\r\n-1.0\r\n" + a[::-1].tobytes()
    name = f"crlf-{ch}.pfm"
    write(name, data)
    expect_stats(name, a if ch == 3 else a[:, :, 0], 32)
    write(f"long-{ch}.pfm", data + b"\0")
    expect_refused(f"long-{ch}.pfm", "bytes of data it gives")
    write(f"short-{ch}.pfm", data[:-1])
    expect_refused(f"short-{ch}.pfm", "Corrupt PFM data")
write("crlf-text.pfm", b"Pf\r\n2 1\r\n-1.0\r\n" + np.array([0.5, 2.0], "<f4").tobytes())
expect_stats("crlf-text.pfm", np.array([[0.5, 2.0]], np.float32), 32)

# bitmaps (P1, P4) against Pillow's 8-bit reading of them
bits = rng.integers(0, 2, (5, 19)).astype(np.uint8)
write("pil-p4.pbm", b"P4\n19 5\n" + b"".join(np.packbits(r).tobytes() for r in bits))
write("pil-p1.pbm", pnm_plain("P1", bits, 0))
for name in ("pil-p4.pbm", "pil-p1.pbm"):
    expect_stats(name, np.asarray(Image.open(path(name)).convert("L")), 8)


# ---- TIFF: PIL (libtiff's writer inside PIL for the compressions) and a
# writer here for tiles, planar data and the sample types PIL cannot write --
def tiff_write(a, tile=None, planar=False, deflate=False, photometric=None,
               fmt=None, order="<", alpha=True):
    """A one-page TIFF of a (H, W) or (H, W, C) array as stored: strips of
    3 rows or tiles of tile=(w, h) (multiples of 16), chunky or planar,
    uncompressed or zlib-deflated (compression 8); the last of 2 or 4
    samples an alpha (ExtraSamples) unless alpha is False."""
    a = np.asarray(a)
    if a.ndim == 2:
        a = a[:, :, None]
    h, w, spp = a.shape
    a = a.astype(a.dtype.newbyteorder(order))
    bps = a.dtype.itemsize * 8
    fmt = fmt or {"u": 1, "i": 2, "f": 3}[a.dtype.kind]
    if photometric is None:
        photometric = 2 if spp >= 3 else 1
    planes = [a[:, :, c:c + 1] for c in range(spp)] if planar else [a]
    chunks = []
    for pl in planes:
        if tile:
            tw, th = tile
            for ty in range(0, h, th):
                for tx in range(0, w, tw):
                    t = np.zeros((th, tw, pl.shape[2]), pl.dtype)
                    part = pl[ty:ty + th, tx:tx + tw]
                    t[:part.shape[0], :part.shape[1]] = part
                    chunks.append(t.tobytes())
        else:
            for y in range(0, h, 3):
                chunks.append(pl[y:y + 3].tobytes())
    if deflate:
        chunks = [zlib.compress(c) for c in chunks]
    e = order
    tags = {256: (4, [w]), 257: (4, [h]), 258: (3, [bps] * spp),
            259: (3, [8 if deflate else 1]), 262: (3, [photometric]),
            277: (3, [spp]), 284: (3, [2 if planar else 1]),
            339: (3, [fmt] * spp)}
    if spp in (2, 4) and alpha:
        tags[338] = (3, [2])  # unassociated alpha
    if tile:
        tags[322] = (4, [tile[0]])
        tags[323] = (4, [tile[1]])
        off_tag, cnt_tag = 324, 325
    else:
        tags[278] = (4, [3])
        off_tag, cnt_tag = 273, 279
    data = b"".join(chunks)
    offs, at = [], 8
    for c in chunks:
        offs.append(at)
        at += len(c)
    tags[off_tag] = (4, offs)
    tags[cnt_tag] = (4, [len(c) for c in chunks])
    ifd_at = 8 + len(data) + (len(data) & 1)
    extra = b""
    n = len(tags)
    extra_at = ifd_at + 2 + 12 * n + 4
    entries = b""
    for tag in sorted(tags):
        typ, vals = tags[tag]
        code = "H" if typ == 3 else "I"
        raw = struct.pack(e + code * len(vals), *vals)
        if len(raw) <= 4:
            entries += struct.pack(e + "HHI", tag, typ, len(vals)) + raw.ljust(4, b"\0")
        else:
            entries += struct.pack(e + "HHII", tag, typ, len(vals), extra_at + len(extra))
            extra += raw
    head = (b"II*\0" if e == "<" else b"MM\0*") + struct.pack(e + "I", ifd_at)
    return (head + data + b"\0" * (len(data) & 1) + struct.pack(e + "H", n)
            + entries + struct.pack(e + "I", 0) + extra)


if "TIFF (libtiff)" in version:
    from PIL import Image
    rgb = rng.integers(0, 256, (37, 45, 3)).astype(np.uint8)
    for comp in (None, "tiff_lzw", "tiff_deflate", "tiff_adobe_deflate",
                 "packbits"):
        for mode, arr in (("RGB", rgb), ("RGBA", np.dstack([rgb, rgb[:, :, :1]])),
                          ("L", rgb[:, :, 0]), ("LA", rgb[:, :, :2])):
            name = f"pil-{mode}-{comp}.tif"
            Image.fromarray(arr, mode).save(path(name), compression=comp)
            expect_stats(name, arr, 8)
    # JPEG: lossy, so the reference is PIL's own decoding of the file
    for mode, arr in (("RGB", rgb), ("L", rgb[:, :, 0])):
        name = f"pil-{mode}-jpeg.tif"
        Image.fromarray(arr, mode).save(path(name), compression="jpeg",
                                        quality=90)
        expect_stats(name, np.asarray(Image.open(path(name)).convert(mode)), 8)
    u16 = rng.integers(0, 65536, (33, 41)).astype(np.uint16)
    Image.fromarray(u16).save(path("pil-16.tif"), compression="tiff_lzw")
    expect_stats("pil-16.tif", u16, 16)
    fl = (rng.standard_normal((19, 23)) * 1e3).astype(np.float32)
    fl[3, 4] = np.nan
    Image.fromarray(fl).save(path("pil-f.tif"), compression="tiff_deflate")
    expect_stats("pil-f.tif", fl, 32)
    bits = rng.integers(0, 2, (21, 35)).astype(bool)
    for comp in (None, "packbits", "group4"):
        name = f"pil-1-{comp}.tif"
        Image.fromarray(bits).save(path(name), compression=comp)
        # 1-bit samples widened to 0/255, as PIL's 8-bit reading of them
        ref = np.asarray(Image.open(path(name)).convert("L"))
        expect_stats(name, ref, 8)
    pal = Image.fromarray(rgb).convert("P", palette=Image.ADAPTIVE, colors=50)
    pal.save(path("pil-p.tif"), compression="tiff_lzw")
    expect_stats("pil-p.tif", np.asarray(pal.convert("RGB")), 8)
    # pages: --page N and the record's count
    pages = [Image.fromarray(rgb[:, :, c]) for c in range(3)]
    pages[0].save(path("pages.tif"), save_all=True, append_images=pages[1:])
    for n in (1, 2, 3):
        rec = expect_stats("pages.tif", rgb[:, :, n - 1], 8,
                           extra=("--page", str(n)) if n > 1 else ())
        if rec is not None:
            good = rec.get("pages") == 3 and rec.get("page") == n
            (ok if good else fail)(f"pages.tif --page {n}: the record says page "
                                   f"{rec.get('page')} of {rec.get('pages')}")
    rc, _, err = run("--page", "4", path("pages.tif"))
    (ok if rc != 0 and "has 3 pages" in err else fail)(
        f"--page 4 of 3 refused: {err.strip()}")
    # the writer here: tiles, planar, deflate, both byte orders, types
    for dt in ("u1", "u2", "i2", "f4", "i1", "i4", "f8"):
        for tile, planar, deflate, order in ((None, False, False, "<"),
                                             ((16, 16), False, True, ">"),
                                             (None, True, True, ">"),
                                             ((32, 16), True, False, "<")):
            for spp in (1, 3, 4):
                if dt in ("i1", "i4", "f8") and spp != 3:
                    continue
                shape = (35, 50, spp) if spp > 1 else (35, 50)
                if dt[0] == "f":
                    a = (rng.integers(-2**20, 2**20, shape) / 8).astype(dt)
                else:
                    info = np.iinfo(dt)
                    a = rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)
                    if dt == "i4":
                        a = (a >> 8).astype(dt)  # exactly floats
                name = (f"own-{dt}-{spp}-{'tile' if tile else 'strip'}-"
                        f"{'planar' if planar else 'chunky'}-{'zip' if deflate else 'raw'}"
                        f"-{'le' if order == '<' else 'be'}.tif")
                write(name, tiff_write(a, tile, planar, deflate, order=order))
                depth = {"u1": 8, "u2": 16, "i2": 16}.get(dt, 32)
                ref = a if depth < 32 else a.astype(np.float32)
                expect_stats(name, ref, depth)
    write("own-i4-big.tif", tiff_write(np.array([[1, 2**24 + 1]], "i4")))
    expect_refused("own-i4-big.tif", "not exactly a 32-bit float")
    # separated with an alpha sample: 3 inks, not CMYK
    write("own-cmyk.tif", tiff_write(np.zeros((4, 4, 4), "u1"), photometric=5))
    expect_refused("own-cmyk.tif", "not supported")

    # CMYK (photometric 5) and CIE Lab (8): the samples as stored, channels
    # C, M, Y, K and L, a, b; Lab's signed a, b offset by +128 / +32768
    def channel_names(name, want):
        rc, out, err = run("--json", path(name))
        got = [s["channel"] for s in json.loads(out)["stats"]] if rc == 0 else err
        rc, csv, _ = run("--csv", path(name))
        got_csv = [r.split(",")[7] for r in csv.splitlines()[1:]]
        rc, text, _ = run(path(name))
        rows = text.splitlines()
        got_text = [r.split()[0] for r in rows[rows.index(next(
            r for r in rows if r.startswith("channel"))) + 1:] if r.strip()]
        if got == got_csv == got_text == want:
            ok(f"{name}: channels {' '.join(want)} in JSON, CSV and text")
        else:
            fail(f"{name}: channels {got} / {got_csv} / {got_text}, want {want}")

    for dt in ("u1", "u2"):
        top = np.iinfo(dt).max
        for planar, tile, deflate, order in ((False, None, False, "<"),
                                             (True, (16, 16), True, ">")):
            a = rng.integers(0, top, (19, 23, 4), endpoint=True).astype(dt)
            a[0, 0] = (0, top, 0, top)
            name = f"cmyk-{dt}-{'planar' if planar else 'chunky'}.tif"
            write(name, tiff_write(a, tile, planar, deflate, photometric=5,
                                   order=order, alpha=False))
            expect_stats(name, a, 8 if dt == "u1" else 16)
            channel_names(name, ["C", "M", "Y", "K"])
            # Lab: L unsigned, a and b signed (two's complement) as stored
            half = (top + 1) // 2
            lab = rng.integers(0, top, (17, 21, 3), endpoint=True).astype(dt)
            signed = lab[:, :, 1:].astype(np.int64) - half  # a*, b* stored
            stored = lab.copy()
            stored[:, :, 1:] = (signed % (top + 1)).astype(dt)
            ref = lab.copy()  # reported: the signed value + half
            name = f"lab-{dt}-{'planar' if planar else 'chunky'}.tif"
            write(name, tiff_write(stored, tile, planar, deflate, photometric=8,
                                   order=order))
            rec = expect_stats(name, ref, 8 if dt == "u1" else 16)
            if rec and dt == "u1":
                want = signed[:, :, 0].min() + 128
                if rec["stats"][1]["min"] == want:
                    ok(f"{name}: a's least {signed[:, :, 0].min()} reported as {want}")
                else:
                    fail(f"{name}: a's min {rec['stats'][1]['min']}, want {want}")
            channel_names(name, ["L", "a", "b"])
    # PIL's writer: CMYK (LZW, through libtiff) against PIL's reading; LAB
    # (one uncompressed strip) against the bytes in the file, a and b taken
    # as signed (PIL versions differ in what they make of a and b)
    cmyk = rng.integers(0, 256, (29, 31, 4)).astype(np.uint8)
    Image.fromarray(cmyk, "CMYK").save(path("pil-cmyk.tif"), compression="tiff_lzw")
    expect_stats("pil-cmyk.tif", np.asarray(Image.open(path("pil-cmyk.tif"))), 8)
    Image.fromarray(cmyk[:, :, :3], "LAB").save(path("pil-lab.tif"))
    with Image.open(path("pil-lab.tif")) as im:
        (_, box, at, _), = im.tile
        w, h = box[2], box[3]
    with open(path("pil-lab.tif"), "rb") as f:
        f.seek(at)
        raw = np.frombuffer(f.read(w * h * 3), np.uint8).reshape(h, w, 3)
    ref = raw.copy()
    ref[:, :, 1:] = (raw[:, :, 1:].view(np.int8).astype(np.int64) + 128).astype(np.uint8)
    expect_stats("pil-lab.tif", ref, 8)
    write("lab-alpha.tif", tiff_write(cmyk[:4, :4], photometric=8))
    expect_refused("lab-alpha.tif", "not supported")
    # --dataset: CMYK and Lab pool with no other layout (not as RGBA), and
    # --as rgb leaves them out with the reason
    rgba = rng.integers(0, 256, (19, 23, 4)).astype(np.uint8)
    Image.fromarray(rgba, "RGBA").save(path("ds-rgba.png"))
    for extra in ((), ("--as", "rgb")):
        rc, out, err = run("--dataset", "--json", *extra, path("ds-rgba.png"),
                           path("cmyk-u1-chunky.tif"), path("lab-u1-chunky.tif"))
        ds = json.loads(out.splitlines()[-1])["dataset"]
        v = rgba.astype(np.int64)
        nch = 3 if extra else 4
        sums = [s["sum"] for s in ds["stats"]]
        reason = all(f"{path(n)}: --dataset: a {k} image is not pooled" in err
                     for n, k in (("cmyk-u1-chunky.tif", "CMYK"),
                                  ("lab-u1-chunky.tif", "Lab")))
        if (rc != 0 and ds["pooled"] == 1 and ds["failed"] == 2 and reason and
                sums == [int(v[:, :, c].sum()) for c in range(nch)]):
            ok(f"--dataset {' '.join(extra)}: the RGBA image alone pooled, "
               "CMYK and Lab left out with the reason")
        else:
            fail(f"--dataset {' '.join(extra)}: exit {rc}, pooled "
                 f"{ds['pooled']}, failed {ds['failed']}, sums {sums}, {err!r}")
    # normalize: no output taking K for alpha
    out_png = path("norm-cmyk.png")
    rc, _, err = run("normalize", path("cmyk-u1-chunky.tif"), "-o", out_png)
    if rc != 0 and f"{path('cmyk-u1-chunky.tif')}: a CMYK image" in err and not os.path.exists(out_png):
        ok("normalize refuses a CMYK image, nothing written")
    else:
        fail(f"normalize of CMYK: exit {rc}, {err!r}")
    good = tiff_write(rgb, (16, 16), True, True)
    truncations("own.tif", good, "Corrupt TIFF data")
    bad = bytearray(good)
    bad[200:260] = bytes(60)  # inside the first tile's deflate data
    write("own-bad.tif", bytes(bad))
    expect_refused("own-bad.tif", "Corrupt TIFF data")
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "TIFF", compression="tiff_lzw")
    truncations("pil.tif", buf.getvalue(), "Corrupt TIFF data")
else:
    print("skipped: TIFF (this imgstat has no libtiff)")


# ---- WebP: PIL's libwebp writer; lossy files against PIL's decoding --------
if "WebP (libwebp)" in version:
    from PIL import Image
    rgb = rng.integers(0, 256, (31, 47, 3)).astype(np.uint8)
    rgba = np.dstack([rgb, rng.integers(0, 256, (31, 47), dtype=np.uint8)])
    for name, arr, kw in (("l-rgb.webp", rgb, {"lossless": True}),
                          ("l-rgba.webp", rgba, {"lossless": True, "exact": True}),
                          ("q-rgb.webp", rgb, {"quality": 80}),
                          ("q-rgba.webp", rgba, {"quality": 80})):
        Image.fromarray(arr).save(path(name), **kw)
        # lossless: the pixels given; lossy: libwebp's decoding through PIL
        ref = arr if kw.get("lossless") else np.asarray(Image.open(path(name)))
        expect_stats(name, ref, 8)
    frames = [Image.fromarray(rgb), Image.fromarray(255 - rgb)]
    frames[0].save(path("anim.webp"), save_all=True, append_images=frames[1:],
                   lossless=True, duration=50)
    expect_stats("anim.webp", rgb, 8)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "WEBP", lossless=True)
    truncations("l.webp", buf.getvalue(), "Corrupt WebP data")
    bad = bytearray(buf.getvalue())
    for k in range(30, len(bad), 7):
        bad[k] ^= 0x5A
    write("bad.webp", bytes(bad))
    expect_refused("bad.webp", "Corrupt WebP data")
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "WEBP", quality=80)
    truncations("q.webp", buf.getvalue(), "Corrupt WebP data")
else:
    print("skipped: WebP (this imgstat has no libwebp)")


# ---- TIFF and WebP:
# samples of fewer than 8 bits widened to 0..255 (MinIsWhite inverted) as
# Pillow reads them; strip arrays that are not the data refused; planar
# YCbCr refused by name; memory that follows the image, not the file -----
def peak_kib(*args):
    """imgstat's exit status and peak resident memory (KiB) running args."""
    code = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
            "print(r.returncode, resource.getrusage("
            "resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", code, IMGSTAT, *args],
                       capture_output=True, text=True)
    rc, kib = r.stdout.split()
    return int(rc), int(kib)


def padded(name, data, size=1 << 30):
    """data, then a hole up to size bytes (a sparse file: no disk used)."""
    write(name, data)
    with open(path(name), "r+b") as f:
        f.truncate(size)


def tiff_patch(data, tag, value):
    """The one-page little-endian TIFF data with tag's (short or long) value
    replaced."""
    d = bytearray(data)
    ifd = struct.unpack("<I", d[4:8])[0]
    for k in range(struct.unpack("<H", d[ifd:ifd + 2])[0]):
        at = ifd + 2 + 12 * k
        t, typ = struct.unpack("<HH", d[at:at + 4])
        if t == tag:
            d[at + 8:at + 12] = struct.pack("<I" if typ == 4 else "<Hxx", value)
    return bytes(d)


if "TIFF (libtiff)" in version:
    import ctypes
    import ctypes.util
    lt = ctypes.CDLL(ctypes.util.find_library("tiff") or "libtiff.so.6")
    lt.TIFFOpen.restype = ctypes.c_void_p
    lt.TIFFOpen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]

    def libtiff_write(name, fields, strips):
        """A TIFF written by libtiff itself: fields (tag, value...) and the
        strips' raw bytes, encoded by the file's compression; a value that
        is a ctypes array goes as a pointer (ExtraSamples)."""
        t = ctypes.c_void_p(lt.TIFFOpen(path(name).encode(), b"w"))
        for tag, *vals in fields:
            lt.TIFFSetField(t, ctypes.c_uint(tag), *[
                v if isinstance(v, ctypes.Array) else ctypes.c_int(v)
                for v in vals])
        for i, raw in enumerate(strips):
            lt.TIFFWriteEncodedStrip(t, ctypes.c_uint(i), raw, len(raw))
        lt.TIFFClose(t)

    def packed(a, bits):
        """Rows of a (H, W) array of bits-wide samples, packed MSB first."""
        u = np.unpackbits(a.astype(np.uint8)[:, :, None], axis=2)[:, :, 8 - bits:]
        return b"".join(np.packbits(r.reshape(-1)).tobytes() for r in u)

    for bits in (1, 2, 4, 8, 16):
        for photometric in (0, 1):  # MinIsWhite, MinIsBlack
            a = rng.integers(0, 1 << bits, (7, 13))
            name = f"gray{bits}-{'white' if photometric == 0 else 'black'}.tif"
            raw = (packed(a, bits) if bits < 8 else
                   a.astype("<u2" if bits == 16 else "u1").tobytes())
            libtiff_write(name, [(256, 13), (257, 7), (258, bits), (277, 1),
                                 (262, photometric), (278, 7)], [raw])
            top = 255 if bits <= 8 else 65535
            ref = a * (top // ((1 << bits) - 1)) if bits < 8 else a
            ref = (top - ref if photometric == 0 else ref).astype(
                np.uint16 if bits == 16 else np.uint8)
            if bits <= 8:  # Pillow reads these as 8-bit gray
                pil = np.asarray(Image.open(path(name)).convert("L"))
                if not np.array_equal(pil, ref):
                    fail(f"{name}: Pillow reads other pixels than numpy's rule")
            expect_stats(name, ref, 16 if bits == 16 else 8)
    # gray + alpha, MinIsWhite: the alpha is not inverted
    a = rng.integers(0, 16, (5, 6, 2))
    flat = a.reshape(5, -1)
    libtiff_write("gray4a-white.tif",
                  [(256, 6), (257, 5), (258, 4), (277, 2), (262, 0),
                   (338, 1, (ctypes.c_uint16 * 1)(2)), (278, 5)],
                  [packed(flat, 4)])
    expect_stats("gray4a-white.tif",
                 np.dstack([255 - a[:, :, 0] * 17, a[:, :, 1] * 17]).astype(np.uint8), 8)

    # strip arrays that RowsPerStrip (or a missing byte count) contradicts
    planar = tiff_write(rng.integers(0, 256, (12, 10, 3)).astype(np.uint8),
                        planar=True)
    write("rps-1.tif", tiff_patch(planar, 278, 1))  # libtiff: tag ignored
    expect_refused("rps-1.tif", 'incorrect count for "StripOffsets"')
    write("rps-4.tif", tiff_patch(planar, 278, 4))  # strips of 3 rows read as 4
    expect_refused("rps-4.tif", "strip 0 holds 30 bytes where its pixels take 40")
    zplanar = tiff_write(rng.integers(0, 256, (12, 10, 3)).astype(np.uint8),
                         planar=True, deflate=True)
    write("rps-4-zip.tif", tiff_patch(zplanar, 278, 4))
    expect_refused("rps-4-zip.tif", "Corrupt TIFF data")
    write("no-counts.tif", tiff_patch(planar, 279, 0).replace(
        struct.pack("<HHI", 279, 4, 12), struct.pack("<HHI", 999, 4, 12)))
    expect_refused("no-counts.tif", "StripByteCounts")

    # YCbCr in separate planes, JPEG-compressed: refused by name (the
    # contiguous case is read, pil-RGB-jpeg.tif above)
    ycc = [rng.integers(0, 256, (16, 16)).astype(np.uint8).tobytes()
           for _ in range(3)]
    libtiff_write("ycbcr-planar.tif",
                  [(256, 16), (257, 16), (258, 8), (277, 3), (262, 6),
                   (284, 2), (259, 7), (530, 1, 1), (278, 16)], ycc)
    rc, _, err = run("--json", path("ycbcr-planar.tif"))
    (ok if rc != 0 and "YCbCr in separate planes (PlanarConfiguration 2)"
     in err else fail)(
        f"planar YCbCr JPEG TIFF refused by name: exit {rc}, {err.strip()}")

    # memory: a 3x2 first page in a file of 1 GiB (a hole) is read with
    # --max-memory 16M and without holding the file
    padded("big.tif", tiff_write(np.arange(6, dtype=np.uint8).reshape(2, 3)))
    rc, kib = peak_kib("--max-memory", "16M", path("big.tif"))
    (ok if rc == 0 and kib < 200 * 1024 else fail)(
        f"3x2 TIFF in a 1 GiB file, --max-memory 16M: exit {rc}, peak {kib} KiB")
    os.remove(path("big.tif"))

if "WebP (libwebp)" in version:
    buf = io.BytesIO()
    small = rng.integers(0, 256, (2, 3, 3)).astype(np.uint8)
    Image.fromarray(small).save(buf, "WEBP", lossless=True)
    # the RIFF says 1 GiB: ICCP/EXIF-like junk chunks fill it (a hole)
    body = buf.getvalue()
    junk = (1 << 30) - len(body) - 8
    data = (b"RIFF" + struct.pack("<I", (1 << 30) - 8) + body[8:]
            + b"EXIF" + struct.pack("<I", junk))
    padded("big.webp", data)
    expect_stats("big.webp", small, 8, extra=("--max-memory", "16M"))
    rc, kib = peak_kib("--max-memory", "16M", path("big.webp"))
    (ok if rc == 0 and kib < 200 * 1024 else fail)(
        f"3x2 WebP in a 1 GiB file, --max-memory 16M: exit {rc}, peak {kib} KiB")
    os.remove(path("big.webp"))


# ---- FITS: headers and big-endian data written here (astropy's writer is
# not in the Debian set the tests install) ----------------------------------
def fits_hdu(a, cards=(), primary=True, bitpix=None):
    """One HDU of array a (numpy (H, W) or (C, H, W): NAXIS1 = W) stored as
    its dtype in big-endian, with extra (key, value) cards."""
    a = np.asarray(a)
    if bitpix is None:
        bitpix = {"u1": 8, "i2": 16, "i4": 32, "f4": -32, "f8": -64}[a.dtype.str[1:]]
    head = [("SIMPLE", "T") if primary else ("XTENSION", "'IMAGE   '"),
            ("BITPIX", str(bitpix)), ("NAXIS", str(a.ndim))]
    head += [(f"NAXIS{i + 1}", str(n)) for i, n in enumerate(a.shape[::-1])]
    if not primary:
        head += [("PCOUNT", "0"), ("GCOUNT", "1")]
    head += list(cards)
    text = "".join(f"{k:<8}= {v:>20}".ljust(80) for k, v in head)
    text += "END".ljust(80)
    text = text.ljust((len(text) + 2879) // 2880 * 2880)
    data = a.astype(a.dtype.newbyteorder(">")).tobytes() if a.size else b""
    data += b"\0" * (-len(data) % 2880)
    return text.encode() + data


if "FITS (cfitsio)" in version:
    u8 = rng.integers(0, 256, (17, 23)).astype("u1")
    write("u8.fits", fits_hdu(u8))
    expect_stats("u8.fits", u8, 8)
    i16 = rng.integers(-32768, 32768, (17, 23)).astype("i2")
    write("i16.fits", fits_hdu(i16))
    expect_stats("i16.fits", i16.astype(np.float32), 32)
    # BITPIX 16, BZERO 32768: unsigned 16-bit, stored as value - 32768
    u16 = rng.integers(0, 65536, (17, 23)).astype(np.uint16)
    write("u16.fits", fits_hdu((u16.astype(np.int32) - 32768).astype("i2"),
                               [("BZERO", "32768"), ("BSCALE", "1")]))
    expect_stats("u16.fits", u16, 16)
    i32 = rng.integers(-2**24, 2**24, (9, 11)).astype("i4")
    write("i32.fits", fits_hdu(i32))
    expect_stats("i32.fits", i32.astype(np.float32), 32)
    f32 = (rng.standard_normal((13, 19)) * 50).astype("f4")
    f32[2, 3] = np.nan
    f32[5, 7] = np.nan
    write("f32.fits", fits_hdu(f32))
    expect_stats("f32.fits", f32, 32)
    f64 = (rng.integers(-2**20, 2**20, (13, 19)) / 16.0).astype("f8")
    f64[1, 1] = np.nan
    write("f64.fits", fits_hdu(f64))
    expect_stats("f64.fits", f64.astype(np.float32), 32)
    # scaled: physical = BZERO + BSCALE * stored, exactly floats here
    st = rng.integers(-1000, 1000, (8, 9)).astype("i2")
    write("scaled.fits", fits_hdu(st, [("BSCALE", "0.25"), ("BZERO", "10.5")]))
    expect_stats("scaled.fits", (st * 0.25 + 10.5).astype(np.float32), 32)
    write("scaled-round.fits", fits_hdu(st, [("BSCALE", "0.1")]))
    expect_refused("scaled-round.fits", "not exactly a 32-bit float")
    # BLANK: those pixels are NaN
    bl = st.copy()
    bl[0, :4] = -32768
    write("blank.fits", fits_hdu(bl, [("BLANK", "-32768")]))
    ref = bl.astype(np.float32)
    ref[0, :4] = np.nan
    expect_stats("blank.fits", ref, 32)
    # a cube of 3 planes: RGB; an empty primary HDU, then the image
    cube = rng.integers(0, 256, (3, 12, 14)).astype("u1")
    write("cube.fits", fits_hdu(cube))
    expect_stats("cube.fits", cube, 8, channels_last=False)
    write("ext.fits", fits_hdu(np.zeros((0,), "u1"), bitpix=8)[:2880].replace(
        b"NAXIS   =                    1", b"NAXIS   =                    0")
        .replace(b"NAXIS1  =                    0", b"EXTEND  =                    T")
        + fits_hdu(i16, primary=False))
    expect_stats("ext.fits", i16.astype(np.float32), 32)
    write("cube5.fits", fits_hdu(np.zeros((1025, 2, 2), "u1")))
    expect_refused("cube5.fits", "no image HDU")
    good = fits_hdu(f32)
    # cut in the header, in the data, one byte short of the data (the
    # padding to 2880 bytes after the data may be missing: cfitsio, and
    # imgstat, read such a file)
    data_end = 2880 + f32.size * 4
    truncations("f.fits", good, "Corrupt FITS data",
                (0.3, 3000 / len(good), (data_end - 1) / len(good)))
    write("bitpix.fits", good.replace(b"BITPIX  =                  -32",
                                      b"BITPIX  =                  -33"))
    expect_refused("bitpix.fits", "Corrupt FITS data")
else:
    print("skipped: FITS (this imgstat has no cfitsio)")


# ---- the one wording of damaged data, on the older decoders too -----------
from PIL import Image
buf = io.BytesIO()
Image.fromarray(rng.integers(0, 256, (16, 16, 3)).astype(np.uint8)).save(buf, "JPEG")
jpg = buf.getvalue()
write("marker.jpg", jpg[:2] + b"\xff\x3b" + jpg[2:])
expect_refused("marker.jpg", "Corrupt JPEG data: unsupported marker type 0x3b")
buf = io.BytesIO()
Image.fromarray(rng.integers(0, 256, (16, 16, 3)).astype(np.uint8)).save(buf, "PNG")
write("cut.png", buf.getvalue()[:-30])
expect_refused("cut.png", "Corrupt PNG data")
write("cut.gif", b"GIF89a\x10\x00\x10\x00\x00\x00\x00")
if "GIF (giflib)" in version:
    expect_refused("cut.gif", "Corrupt GIF data")
else:  # a build without giflib names the missing library
    expect_refused("cut.gif", "built without giflib")

# ---- normalize -> .npy / .pfm -> imgstat: mean 0, std 1 -------------------
src = rng.integers(0, 65536, (32, 48, 3)).astype(np.uint16)
np.save(path("src.npy"), src)
for out, extra in (("z.npy", ()), ("z-chw.npy", ("--layout", "chw")),
                   ("z.pfm", ())):
    rc, _, err = run("normalize", "zscore", *extra, path("src.npy"), "-o",
                     path(out))
    if rc != 0:
        fail(f"normalize -> {out}: exit {rc}: {err.strip()}")
        continue
    rc, o, err = run("--json", path(out))
    if rc != 0:
        fail(f"{out}: exit {rc}: {err.strip()}")
        continue
    rec = json.loads(o)
    good = rec["channels"] == 3 and rec["width"] == 48 and all(
        abs(s["mean"]) < 1e-6 and abs(s["std"] - 1) < 1e-6 for s in rec["stats"])
    (ok if good else fail)(f"normalize zscore -> {out} -> imgstat: mean 0, std 1"
                           + ("" if good else f": {o}"))

finish()
