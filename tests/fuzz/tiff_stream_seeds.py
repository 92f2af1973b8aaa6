#!/usr/bin/env python3
"""Writes the seeds of the TIFF statistics read as the chunks come
(tests/data/seeds/stream-*.tif) into the folder given: small pages of
several strips or tiles whose samples take few distinct values, so that
equal extremes lie in many chunks and the smaller raster position must win
(tests/fuzz/fuzz_load.c compares the figures read that way with the
decoded image's). Standard library only; the same bytes every time.

    python3 tests/fuzz/tiff_stream_seeds.py tests/data/seeds
"""
import struct, zlib, random, sys
out = sys.argv[1]
rng = random.Random(5)
def tiff(name, w, h, spp, bps, fmt=1, tile=None, rps=None, planar=False,
         deflate=False, nodata=None, values=None):
    code = {8: "B", 16: "H"}[bps]
    if fmt == 2: code = code.lower()
    # samples [y][x][c]
    px = [[[values(x, y, c) for c in range(spp)] for x in range(w)] for y in range(h)]
    planes = range(spp) if planar else [None]
    chunks = []
    for p in planes:
        cs = [p] if planar else list(range(spp))
        def row(y, x0, x1):
            vals = []
            for x in range(x0, x1):
                for c in cs:
                    vals.append(px[y][x][c] if (y < h and x < w) else 0)
            return struct.pack("<%d%s" % (len(vals), code), *vals)
        if tile:
            tw, th = tile
            for ty in range(0, h, th):
                for tx in range(0, w, tw):
                    chunks.append(b"".join(row(y, tx, tx + tw) if y < h else row(h, tx, tx + tw) for y in range(ty, ty + th)))
        else:
            for y in range(0, h, rps):
                chunks.append(b"".join(row(yy, 0, w) for yy in range(y, min(h, y + rps))))
    if deflate:
        chunks = [zlib.compress(c) for c in chunks]
    tags = {256: (4, [w]), 257: (4, [h]), 258: (3, [bps] * spp),
            259: (3, [8 if deflate else 1]), 262: (3, [2 if spp == 3 else 1]),
            277: (3, [spp]), 284: (3, [2 if planar else 1]), 339: (3, [fmt] * spp)}
    if tile:
        tags[322] = (4, [tile[0]]); tags[323] = (4, [tile[1]]); ot, ct = 324, 325
    else:
        tags[278] = (4, [rps]); ot, ct = 273, 279
    data = b"".join(chunks)
    offs, at = [], 8
    for c in chunks:
        offs.append(at); at += len(c)
    tags[ot] = (4, offs); tags[ct] = (4, [len(c) for c in chunks])
    if nodata is not None:
        tags[42113] = (2, list((str(nodata) + "\0").encode()))
    ifd = 8 + len(data) + (len(data) & 1)
    extra_at = ifd + 2 + 12 * len(tags) + 4
    entries, extra = b"", b""
    for tag in sorted(tags):
        typ, vals = tags[tag]
        c = {2: "B", 3: "H", 4: "I"}[typ]
        raw = struct.pack("<" + c * len(vals), *vals)
        if len(raw) <= 4:
            entries += struct.pack("<HHI", tag, typ, len(vals)) + raw.ljust(4, b"\0")
        else:
            entries += struct.pack("<HHII", tag, typ, len(vals), extra_at + len(extra))
            extra += raw + b"\0" * (len(raw) & 1)
    blob = (b"II*\0" + struct.pack("<I", ifd) + data + b"\0" * (len(data) & 1)
            + struct.pack("<H", len(tags)) + entries + struct.pack("<I", 0) + extra)
    open(f"{out}/{name}", "wb").write(blob)
# few distinct values: equal extremes in many chunks (the smaller raster position wins)
tiff("stream-tiled-u16-nodata.tif", 40, 36, 1, 16, tile=(16, 16), deflate=True,
     nodata=7, values=lambda x, y, c: rng.choice([7, 7, 100, 65535, 3, 1000 + x]))
tiff("stream-strips-rgb8-nodata.tif", 30, 22, 3, 8, rps=2, nodata=0,
     values=lambda x, y, c: rng.choice([0, 0, 255, 1, 128, x + y + c]))
tiff("stream-planar-i16.tif", 21, 17, 3, 16, fmt=2, rps=3, planar=True,
     values=lambda x, y, c: rng.choice([-32768, 32767, -5, 0, x * y - 100]))
tiff("stream-tiled-planar-u8-bands.tif", 33, 20, 5, 8, tile=(16, 16), planar=True,
     deflate=True, values=lambda x, y, c: rng.choice([0, 255, 9, (x * 7 + y) & 255]))
