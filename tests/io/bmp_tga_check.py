"""BMP and TGA (src/io/bmp.c, src/io/tga.c) against the pixels
each file was written from: every variant is encoded here, byte by byte
with struct, from a numpy array; imgstat's samples (normalize --range 0,255
to .npy, the identity on 8-bit samples) must equal the array, sample for
sample. Where Pillow reads a variant right, its decode is compared too
(Pillow 9.4 widens 5-bit fields by v * 255 // 31, not by bit replication,
and mis-reads RLE deltas and odd RLE4 absolute runs: those are left out).
Damaged files must be refused with a message naming the file and the fault.

usage: bmp_tga_check.py IMGSTAT TMPDIR [SEEDS_DIR] (ctest: tests/support/pycheck.sh)
With SEEDS_DIR, the small valid variants are also written there (the fuzz
seeds of tests/data/seeds, made this way)."""
import io
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import numpy as np
from PIL import Image

import checklib

IMGSTAT, T = sys.argv[1], sys.argv[2]
SEEDS = sys.argv[3] if len(sys.argv) > 3 else None
fail = checklib.fail


def ok(what):
    print("ok:", what)


def run(*args):
    r = checklib.run(IMGSTAT, *args)
    return r.returncode, r.stdout, r.stderr


def path(name):
    return os.path.join(T, name)


rng = np.random.default_rng(20)


def samples(name):
    """imgstat's samples of file name as (H, W, C), or its error."""
    out = path(name + ".npy")
    rc, _, err = run("normalize", "--range", "0,255", "--depth", "8",
                     path(name), "-o", out)
    if rc != 0:
        return None, err.strip()
    a = np.load(out)
    os.remove(out)
    return (a if a.ndim == 3 else a[:, :, None]), None


def pillow(data):
    try:
        im = Image.open(io.BytesIO(data))
        im.load()
    except Exception:
        return None
    if im.mode == "P":
        im = im.convert("RGB")
    a = np.asarray(im.convert("L") if im.mode == "1" else im)
    return a if a.ndim == 3 else a[:, :, None]


def expect(name, data, want, pil=True, seed=False):
    """File name holds data; imgstat must read want ((H, W, C) uint8)."""
    with open(path(name), "wb") as f:
        f.write(data)
    if seed and SEEDS:
        with open(os.path.join(SEEDS, name), "wb") as f:
            f.write(data)
    got, err = samples(name)
    if got is None:
        fail(f"{name}: refused: {err}")
        return
    if got.shape != want.shape:
        fail(f"{name}: shape {got.shape}, want {want.shape}")
        return
    diff = np.argwhere(got != want)
    if len(diff):
        y, x, c = diff[0]
        fail(f"{name}: {len(diff)} samples differ, first ({x}, {y}) channel "
             f"{c}: {got[y, x, c]}, want {want[y, x, c]}")
        return
    if pil:
        p = pillow(data)
        if p is None and pil == "if it reads":
            ok(f"{name}: every sample (Pillow 9.4 refuses it)")
            return
        if p is None or p.shape != want.shape or (p != want).any():
            fail(f"{name}: Pillow's decode is not the array the file was "
                 f"written from (the test's encoder is wrong)")
            return
    ok(f"{name}: every sample{' (and Pillow)' if pil else ''}")


def refused(name, data, words, status_words=None):
    with open(path(name), "wb") as f:
        f.write(data)
    rc, out, err = run("--json", path(name))
    if rc != 0 and path(name) in err and words in err:
        ok(f"{name} refused: {err.strip().split(': ', 1)[-1][:100]}")
    else:
        fail(f"{name}: exit {rc}, stderr {err.strip()!r}, want {words!r}")


def widen(v, bits):
    """bits-bit values widened to 8 by bit replication."""
    v = np.asarray(v, dtype=np.uint32)
    out = np.zeros_like(v)
    s = 8 - bits
    while s > -bits:
        out |= (v << s) if s >= 0 else (v >> -s)
        s -= bits
    return (out & 255).astype(np.uint8)


# ---- BMP ------------------------------------------------------------------

def bmp_file(info, palette=b"", data=b"", gap=b"", masks=b""):
    """File header + info header + masks + palette + gap + data."""
    offset = 14 + len(info) + len(masks) + len(palette) + len(gap)
    body = info + masks + palette + gap + data
    return b"BM" + struct.pack("<IHHI", 14 + len(body), 0, 0, offset) + body


def info40(w, h, bits, compression=0, clr_used=0, size=40, extra=b""):
    head = struct.pack("<IiiHHIIiiII", size, w, h, 1, bits, compression, 0,
                       2835, 2835, clr_used, 0)
    head += extra
    return head + bytes(size - len(head))


def info12(w, h, bits):
    return struct.pack("<IHHHH", 12, w, h, 1, bits)


def pack_rows(idx, bits, top_down):
    """Palette indices (H, W) as padded BMP rows; the bits past a row's last
    pixel are ones (no reader may take them for pixels)."""
    h, w = idx.shape
    rows = []
    for y in (range(h) if top_down else range(h - 1, -1, -1)):
        acc, n, row = 0, 0, bytearray()
        for x in range(w):
            acc = acc << bits | int(idx[y, x])
            n += bits
            if n == 8:
                row.append(acc)
                acc, n = 0, 0
        if n:
            row.append((acc << (8 - n) | ((1 << (8 - n)) - 1)) & 255)
        row += b"\xff" * (-len(row) % 4)
        rows.append(bytes(row))
    return b"".join(rows)


def pal_bytes(pal, entry=4):
    return b"".join(bytes([b, g, r]) + bytes(entry - 3) for r, g, b in pal)


def random_palette(n):
    return [tuple(int(v) for v in rng.integers(0, 256, 3)) for _ in range(n)]


def rgb_of(idx, pal):
    return np.array(pal, dtype=np.uint8)[idx]


# palette images, 40-byte header, both row orders, odd widths
for bits in (1, 2, 4, 8):
    for top_down in (0, 1):
        w, h = 13, 7
        n = min(1 << bits, 40)
        pal = random_palette(n)
        idx = rng.integers(0, n, (h, w))
        data = bmp_file(info40(w, -h if top_down else h, bits, clr_used=n),
                        pal_bytes(pal), pack_rows(idx, bits, top_down))
        expect(f"pal{bits}{'-td' if top_down else ''}.bmp", data,
               rgb_of(idx, pal), pil=bits != 2, seed=not top_down)
        bad = idx.copy()
        if n < (1 << bits):
            bad[h - 1, 5] = n
            refused(f"pal{bits}-index{n}.bmp",
                    bmp_file(info40(w, h, bits, clr_used=n), pal_bytes(pal),
                             pack_rows(bad, bits, 0)),
                    f"Corrupt BMP data: pixel index {n} beyond its palette "
                    f"of {n} colours")

# gray palettes are one channel: the ramp, and black and white
w, h = 11, 6
gray = rng.integers(0, 256, (h, w))
expect("gray8.bmp", bmp_file(info40(w, h, 8), pal_bytes([(i, i, i) for i in range(256)]),
                             pack_rows(gray, 8, 0)),
       gray.astype(np.uint8)[:, :, None], seed=True)
bw = rng.integers(0, 2, (h, w))
expect("bw1.bmp", bmp_file(info40(w, h, 1), pal_bytes([(0, 0, 0), (255, 255, 255)]),
                           pack_rows(bw, 1, 0)),
       (bw * 255).astype(np.uint8)[:, :, None])

# OS/2 1.x: 12-byte header, 3-byte entries, fewer than 2^bits of them
for bits, n in ((8, 100), (4, 5), (1, 2)):
    pal = random_palette(n)
    idx = rng.integers(0, n, (5, 9))
    expect(f"os2v1-{bits}bit-{n}colours.bmp",
           bmp_file(info12(9, 5, bits), pal_bytes(pal, 3), pack_rows(idx, bits, 0)),
           rgb_of(idx, pal), pil=False, seed=bits == 8)
rgb = rng.integers(0, 256, (5, 9, 3)).astype(np.uint8)


def rows24(a, top_down=0, pad=b"\x00"):
    h, w, _ = a.shape
    order = range(h) if top_down else range(h - 1, -1, -1)
    return b"".join(a[y, :, ::-1].tobytes() + pad * (-3 * w % 4) for y in order)


expect("os2v1-24bit.bmp", bmp_file(info12(9, 5, 24), data=rows24(rgb)), rgb)

# OS/2 2.x: 64-byte and 16-byte headers (fields past 16 bytes are 0)
pal = random_palette(256)
idx = rng.integers(0, 256, (6, 10))
os2v2 = info40(10, 6, 8, size=64)
expect("os2v2-64.bmp", bmp_file(os2v2, pal_bytes(pal), pack_rows(idx, 8, 0)),
       rgb_of(idx, pal), seed=True)
expect("os2v2-16.bmp", bmp_file(struct.pack("<IiiHH", 16, 10, 6, 1, 8),
                                pal_bytes(pal), pack_rows(idx, 8, 0)),
       rgb_of(idx, pal), pil=False)

# a short palette (the header's count) and pixel data past a gap
pal = random_palette(20)
idx = rng.integers(0, 20, (6, 10))
expect("pal8-20colours-gap.bmp",
       bmp_file(info40(10, 6, 8, clr_used=20), pal_bytes(pal),
                pack_rows(idx, 8, 0), gap=b"\xee" * 37),
       rgb_of(idx, pal), pil=False)

# 24-bit: top-down, with a palette that is not used, data past a gap
rgb = rng.integers(0, 256, (7, 13, 3)).astype(np.uint8)
expect("rgb24-td.bmp", bmp_file(info40(13, -7, 24), data=rows24(rgb, 1)), rgb)
expect("rgb24-palette.bmp",
       bmp_file(info40(13, 7, 24, clr_used=16), pal_bytes(random_palette(16)),
                rows24(rgb), gap=b"\x55" * 6), rgb, seed=True)
# the last row's padding left out (some writers drop it)
expect("rgb24-short-pad.bmp", bmp_file(info40(13, 7, 24), data=rows24(rgb)[:-1]), rgb,
       pil=False)


def fields(a, masks, bits, top_down=0):
    """(H, W, C) field values (already at each mask's width) packed."""
    h, w, c = a.shape
    v = np.zeros((h, w), dtype=np.uint64)
    for k, m in enumerate(masks):
        if m:
            shift = (m & -m).bit_length() - 1
            v |= a[:, :, k].astype(np.uint64) << np.uint64(shift)
    dt = "<u2" if bits == 16 else "<u4"
    order = range(h) if top_down else range(h - 1, -1, -1)
    return b"".join(v[y].astype(dt).tobytes() + b"\x00" * (-w * bits // 8 % 4)
                    for y in order)


def field_bits(m):
    return bin(m).count("1")


def field_case(name, w, h, bits, masks, compression, hsz, pil=False,
               palette=0, alpha_zero=False, seed=False):
    widths = [field_bits(m) for m in masks]
    ch = 4 if len(masks) == 4 and masks[3] else 3
    raw = np.stack([rng.integers(0, 1 << max(b, 1), (h, w)) if b else np.zeros((h, w), int)
                    for b in widths[:ch]] + [np.zeros((h, w), int)] * (len(masks) - ch), axis=2)
    if alpha_zero:
        raw[:, :, 3] = 0
    want = np.stack([widen(raw[:, :, k], widths[k]) if widths[k] else
                     np.zeros((h, w), np.uint8) for k in range(ch)], axis=2)
    if alpha_zero:
        want[:, :, 3] = 255  # an alpha channel 0 everywhere is unused
    if hsz == 40:
        info = info40(w, h, bits, compression, clr_used=palette)
        extra = b"".join(struct.pack("<I", m) for m in masks)
    else:
        info = info40(w, h, bits, compression, clr_used=palette, size=hsz,
                      extra=b"".join(struct.pack("<I", m) for m in masks)[:hsz - 40])
        extra = b""
    data = bmp_file(info, pal_bytes(random_palette(palette)),
                    fields(raw, masks, bits), masks=extra)
    expect(name, data, want, pil=pil, seed=seed)
    return data


field_case("rgb16-555.bmp", 9, 5, 16, [0x7C00, 0x3E0, 0x1F], 0, 40)
field_case("rgb16-565-palette.bmp", 9, 5, 16, [0xF800, 0x7E0, 0x1F], 3, 40,
           palette=16, seed=True)
field_case("rgba16-4444-v3.bmp", 9, 5, 16, [0xF00, 0xF0, 0xF, 0xF000], 3, 56,
           seed=True)
field_case("rgb16-231.bmp", 9, 5, 16, [0x30, 0xE, 0x1], 3, 40)
d = field_case("rgb32-rgb.bmp", 9, 5, 32, [0xFF0000, 0xFF00, 0xFF], 0, 40,
               pil=True)
field_case("rgb32-v2-52.bmp", 9, 5, 32, [0xFF, 0xFF00, 0xFF0000], 3, 52)
field_case("rgba32-v4.bmp", 9, 5, 32, [0xFF00, 0xFF0000, 0xFF000000, 0xFF], 3,
           108, seed=True)
field_case("rgba32-v5-alpha0.bmp", 9, 5, 32,
           [0xFF0000, 0xFF00, 0xFF, 0xFF000000], 3, 124, alpha_zero=True)
field_case("rgba32-abf.bmp", 9, 5, 32, [0xFF0000, 0xFF00, 0xFF, 0xFF000000], 6,
           40)
field_case("rgb32-zero-green.bmp", 9, 5, 32, [0xFF0000, 0, 0xFF], 3, 40)


# Fields wider than 8 bits (bmpsuite's rgb32-111110, rgba16-1924,
# rgba32-61754 layouts and others): every field to 16 bits by bit
# replication, the field's bits repeated and the first 16 taken (a field
# of 17 bits or more keeps its top 16). Computed here from the binary digits,
# not by shifts. Pillow 9.4 refuses these layouts.
def replicate16(v, bits):
    """One bits-bit value as 16 bits: its binary digits repeated, the first
    16 of them (a field of no bits is 0)."""
    if bits == 0:
        return 0
    digits = format(int(v), f"0{bits}b")
    return int((digits * (16 // bits + 1))[:16], 2)


def samples16(name):
    """imgstat's 16-bit samples of file name as (H, W, C), or its error."""
    out = path(name + ".npy")
    rc, _, err = run("normalize", "--range", "0,65535", "--depth", "16",
                     path(name), "-o", out)
    if rc != 0:
        return None, err.strip()
    a = np.load(out)
    os.remove(out)
    return a, None


def wide_case(name, w, h, bits, masks, hsz, alpha_zero=False):
    widths = [field_bits(m) for m in masks]
    ch = 4 if len(masks) == 4 and masks[3] else 3
    raw = np.stack([rng.integers(0, 1 << b, (h, w), dtype=np.uint64)
                    for b in widths[:ch]] +
                   [np.zeros((h, w), np.uint64)] * (len(masks) - ch), axis=2)
    raw[0, 0, :ch] = [(1 << b) - 1 for b in widths[:ch]]  # each field's top
    raw[0, 1, :ch] = 0
    if alpha_zero:
        raw[:, :, 3] = 0
    want = np.zeros((h, w, ch), np.uint16)
    for k in range(ch):
        want[:, :, k] = np.vectorize(lambda v, b=widths[k]: replicate16(v, b),
                                     otypes=[np.uint16])(raw[:, :, k])
    if alpha_zero:
        want[:, :, 3] = 65535  # an alpha channel 0 everywhere is unused
    if hsz == 40:
        info = info40(w, h, bits, 3)
        extra = b"".join(struct.pack("<I", m) for m in masks[:3])
    else:
        info = info40(w, h, bits, 3, size=hsz,
                      extra=b"".join(struct.pack("<I", m) for m in masks))
        extra = b""
    data = bmp_file(info, data=fields(raw.astype(np.int64), masks, bits),
                    masks=extra)
    with open(path(name), "wb") as f:
        f.write(data)
    got, err = samples16(name)
    if got is None:
        fail(f"{name}: refused: {err}")
    elif got.shape != want.shape or (got != want).any():
        fail(f"{name}: 16-bit samples differ from bit replication "
             f"(got {got.reshape(-1, ch)[:2].tolist()}, want "
             f"{want.reshape(-1, ch)[:2].tolist()})")
    else:
        ok(f"{name}: every field widened to 16 bits by bit replication")


wide_case("rgb32-111110.bmp", 9, 5, 32, [0xFFE00000, 0x1FFC00, 0x3FF], 40)
wide_case("rgba16-1924.bmp", 9, 5, 16, [0x8000, 0x7FC0, 0x30, 0xF], 108)
wide_case("rgba32-61754.bmp", 9, 5, 32,
          [0xFC000000, 0x3FFFE00, 0x1F0, 0xF], 124)
wide_case("rgba32-1010102.bmp", 9, 5, 32,
          [0x3FF00000, 0xFFC00, 0x3FF, 0xC0000000], 56)
wide_case("rgb32-16-8-8.bmp", 9, 5, 32, [0xFFFF0000, 0xFF00, 0xFF], 52)
wide_case("rgb32-32bit-red.bmp", 9, 5, 32, [0xFFFFFFFF, 0, 0], 40)
wide_case("rgba32-12-alpha0.bmp", 9, 5, 32, [0xFFF00000, 0xFFC00, 0x3FF,
                                             0], 108)
wide_case("rgba32-9-alpha-unused.bmp", 9, 5, 32,
          [0xFF800000, 0x7FC000, 0x3FE0, 0xF], 124, alpha_zero=True)


# Headerless BMPs (a DIB: .dib files, the clipboard's CF_DIB): a file's
# bytes after its 14-byte file header, the pixels right after the palette
# (the header's count of entries, else 2^bits for palette images). They
# must read as the file does; Pillow's DIB reader agrees.
def dib_case(name, info, palette, rows, want, pil=True):
    expect(name, info + palette + rows, want, pil=pil)


pal = random_palette(256)
idx = rng.integers(0, 256, (6, 11))
dib_case("pal8.dib", info40(11, 6, 8), pal_bytes(pal), pack_rows(idx, 8, 0),
         rgb_of(idx, pal))
pal = random_palette(12)
idx = rng.integers(0, 12, (7, 13))
dib_case("pal4-12colours-td.dib", info40(13, -7, 4, clr_used=12),
         pal_bytes(pal), pack_rows(idx, 4, 1), rgb_of(idx, pal))
rgb = rng.integers(0, 256, (5, 9, 3)).astype(np.uint8)
dib_case("rgb24.dib", info40(9, 5, 24), b"", rows24(rgb), rgb)
# 32-bit BI_BITFIELDS: the three masks after the 40-byte header
raw = rng.integers(0, 256, (5, 9, 3))
dib_case("bitfields32.dib", info40(9, 5, 32, 3),
         struct.pack("<III", 0xFF0000, 0xFF00, 0xFF),
         fields(raw, [0xFF0000, 0xFF00, 0xFF], 32), raw.astype(np.uint8))
# a V5 header with an alpha mask
raw = rng.integers(0, 256, (5, 9, 4))
masks = [0xFF0000, 0xFF00, 0xFF, 0xFF000000]
dib_case("rgba32-v5.dib",
         info40(9, 5, 32, 3, size=124,
                extra=b"".join(struct.pack("<I", m) for m in masks)),
         b"", fields(raw, masks, 32), raw.astype(np.uint8), pil="if it reads")
# damaged DIBs are refused as BMPs
refused("cut.dib", (info40(11, 6, 8) + pal_bytes(random_palette(256))
                    + bytes(20)), "Corrupt BMP data")
refused("huge-palette.dib", info40(11, 6, 8, clr_used=0x7FFFFFFF) + bytes(99),
        "Corrupt BMP data")


# RLE: a writer of the commands, and the indices they make (entry 0 where
# nothing is written)
def rle(cmds, w, h, rle4, top_down=0):
    """cmds: ('run', n, v) | ('abs', [v...]) | ('eol',) | ('eob',) |
    ('delta', dx, dy). Returns (bytes, indices (H, W))."""
    idx = np.zeros((h, w), dtype=int)
    out = bytearray()
    x = r = 0

    def put(v):
        nonlocal x
        if x < w and r < h:  # damaged data runs off the image
            idx[r if top_down else h - 1 - r, x] = v
        x += 1
    for c in cmds:
        if c[0] == "run":
            n, v = c[1], c[2]
            out += bytes([n, v])
            for k in range(n):
                put((v >> 4 if k % 2 == 0 else v & 15) if rle4 else v)
        elif c[0] == "abs":
            vs = c[1]
            out += bytes([0, len(vs)])
            if rle4:
                packed = bytes((vs[k] << 4 | (vs[k + 1] if k + 1 < len(vs) else 0))
                               for k in range(0, len(vs), 2))
            else:
                packed = bytes(vs)
            out += packed + b"\x00" * (len(packed) % 2)
            for v in vs:
                put(v)
        elif c[0] == "eol":
            out += b"\x00\x00"
            x, r = 0, r + 1
        elif c[0] == "eob":
            out += b"\x00\x01"
        elif c[0] == "delta":
            out += bytes([0, 2, c[1], c[2]])
            x, r = x + c[1], r + c[2]
    return bytes(out), idx


def rle_file(name, cmds, w, h, rle4, ncol, top_down=0, pil=False, seed=False):
    bits = 4 if rle4 else 8
    pal = random_palette(ncol)
    data, idx = rle(cmds, w, h, rle4, top_down)
    f = bmp_file(info40(w, -h if top_down else h, bits, 2 if rle4 else 1,
                        clr_used=ncol), pal_bytes(pal), data)
    expect(name, f, rgb_of(idx, pal), pil=pil, seed=seed)
    return pal, f


w, h = 12, 6
cmds8 = [("run", 5, 3), ("abs", [1, 2, 7]), ("run", 4, 9), ("eol",),
         ("abs", [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]), ("eol",),
         ("delta", 3, 1), ("run", 2, 17), ("eol",), ("run", 12, 1), ("eol",),
         ("run", 3, 2), ("eob",)]
rle_file("rle8.bmp", cmds8, w, h, False, 20, seed=True)
rle_file("rle8-td.bmp", cmds8, w, h, False, 20, top_down=1)
simple8 = [("run", 12, k) for k in range(6) for _ in [0]]
simple8 = [c for k in range(6) for c in (("run", 7, k), ("abs", [k, 1, 2, 3, k]), ("eol",))]
rle_file("rle8-simple.bmp", simple8 + [("eob",)], w, h, False, 8, pil=True)
cmds4 = [("run", 5, 0x31), ("abs", [1, 2, 7]), ("run", 4, 0x9A), ("eol",),
         ("abs", [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]), ("eol",),
         ("delta", 2, 2), ("run", 3, 0x12), ("eol",), ("run", 12, 0x45), ("eob",)]
rle_file("rle4.bmp", cmds4, w, h, True, 16, seed=True)
rle_file("rle4-td.bmp", cmds4, w, h, True, 16, top_down=1)

# damaged RLE, each refused naming its fault
bad = {
    "rle8-run-past-row.bmp": ([("run", 13, 1)], "RLE8 run of 13 pixels at (0, 5) goes past the end of its row"),
    "rle8-abs-past-row.bmp": ([("run", 10, 1), ("abs", [1, 2, 3])], "RLE8 absolute run of 3 pixels at (10, 5) goes past the end of its row"),
    "rle8-delta-right.bmp": ([("run", 10, 1), ("delta", 3, 0)], "RLE8 delta of (3, 0) at (10, 5) leaves the image"),
    "rle8-delta-down.bmp": ([("eol",), ("delta", 0, 5)], "RLE8 delta of (0, 5) at (0, 4) leaves the image"),
    "rle8-past-last-row.bmp": ([("eol",)] * 6 + [("run", 1, 1)], "RLE8 data goes on past the last row"),
    "rle8-no-end.bmp": ([("run", 12, 1), ("eol",)], "Corrupt BMP data: file is truncated"),
    "rle8-index.bmp": ([("run", 2, 30), ("eob",)], "pixel index 30 beyond its palette of 20 colours"),
}
for name, (cmds, words) in bad.items():
    data, _ = rle(cmds, w, h, False)
    refused(name, bmp_file(info40(w, h, 8, 1, clr_used=20),
                           pal_bytes(random_palette(20)), data), words)
data, _ = rle([("run", 5, 0x1F), ("eob",)], w, h, True)
refused("rle4-index.bmp", bmp_file(info40(w, h, 4, 2, clr_used=10),
                                   pal_bytes(random_palette(10)), data),
        "pixel index 15 beyond its palette of 10 colours")

# other damage, and what is valid but not read
pal = random_palette(4)
good = bmp_file(info40(10, 6, 8, clr_used=4), pal_bytes(pal),
                pack_rows(rng.integers(0, 4, (6, 10)), 8, 0))
refused("no-palette.bmp", bmp_file(info40(10, 6, 8), b"", pack_rows(np.zeros((6, 10), int), 8, 0)),
        "Corrupt BMP data: 8-bit image has no palette")
refused("offset-in-header.bmp", good[:10] + struct.pack("<I", 30) + good[14:],
        "Corrupt BMP data: pixel data offset 30 lies inside its header")
refused("planes0.bmp", good[:26] + b"\x00\x00" + good[28:],
        "Corrupt BMP data: planes field is 0, not 1")
refused("truncated.bmp", good[:-20], "Corrupt BMP data: header claims 10x6 pixels")
refused("huge.bmp", good[:18] + struct.pack("<ii", 30000, 30000) + good[26:],
        "Corrupt BMP data: header claims 30000x30000 pixels")
refused("rle-bits.bmp", bmp_file(info40(4, 4, 4, 1, clr_used=2), pal_bytes(pal[:2]), b"\x00\x01"),
        "Corrupt BMP data: RLE8 compression with 4 bits per pixel")
refused("mask-holes.bmp", bmp_file(info40(4, 4, 16, 3), data=bytes(32),
                                   masks=struct.pack("<III", 0xF00F, 0xF0, 0xF00)),
        "Corrupt BMP data: red bit mask 0x0000f00f is not one run of bits")
refused("mask-outside.bmp", bmp_file(info40(4, 4, 16, 3), data=bytes(32),
                                     masks=struct.pack("<III", 0x1F0000, 0x7E0, 0x1F)),
        "has bits outside the 16-bit pixel")
refused("jpeg.bmp", bmp_file(info40(4, 4, 24, 4), data=b"\xff\xd8\xff\xd9"),
        "BMP compression 4 (JPEG) is not supported")
refused("compression9.bmp", bmp_file(info40(4, 4, 24, 9), data=bytes(48)),
        "Corrupt BMP data: compression 9 is not a BMP compression")
refused("header70.bmp", good[:14] + struct.pack("<I", 70) + good[18:],
        "BMP header of 70 bytes")
rc, _, err = run("--max-pixels", "59", path("pal4-index4.bmp").replace("pal4-index4", "pal8"))
(ok if rc != 0 and "(--max-pixels)" in err else fail)(f"--max-pixels 59 refuses a 13x7 BMP: {err.strip()}")
rc, _, err = run("--max-memory", "100", path("rle8.bmp"))
(ok if rc != 0 and "(--max-memory)" in err else fail)(f"--max-memory 100 refuses an RLE BMP: {err.strip()}")
whole = open(path("rle8.bmp"), "rb").read()
for n in (60, len(whole) - 20, len(whole) - 3):
    refused(f"rle8-cut{n}.bmp", whole[:n], "Corrupt BMP data")

# ---- TGA --------------------------------------------------------------------


def tga(img_type, w, h, bits, data, desc=0, cmap=None, ident=b"", footer=b""):
    """cmap: (first, length, entry_bits, bytes) or None."""
    first, length, ebits, cbytes = cmap if cmap else (0, 0, 0, b"")
    head = struct.pack("<BBBHHBHHHHBB", len(ident), 1 if cmap else 0, img_type,
                       first, length, ebits, 0, 0, w, h, bits, desc)
    return head + ident + cbytes + data + footer


def tga_rows(a, desc):
    """(H, W, k) stored bytes in the order the descriptor gives."""
    if not desc & 0x20:
        a = a[::-1]
    if desc & 0x10:
        a = a[:, ::-1]
    return a


def tga_rle(pix, pixel_bytes):
    """Pixels (N, pixel_bytes) in packets of runs and raw stretches that go
    on across rows."""
    out, i, n = bytearray(), 0, len(pix)
    while i < n:
        j = i
        while j + 1 < n and j - i < 127 and (pix[j + 1] == pix[i]).all():
            j += 1
        if j > i:
            out.append(0x80 | (j - i))
            out += pix[i].tobytes()
            i = j + 1
            continue
        j = i
        while j + 1 < n and j - i < 127 and not (pix[j + 1] == pix[j]).all():
            j += 1
        out.append(j - i)
        out += pix[i:j + 1].tobytes()
        i = j + 1
    return bytes(out)


def runny(h, w, k, levels=4):
    """Values with runs in them (so run packets happen)."""
    a = rng.integers(0, levels, (h, w, k)) * 60
    a[:, : w // 2] = a[:, :1]
    return a.astype(np.uint8)


w, h = 21, 7
for desc in (0x00, 0x10, 0x20, 0x30):
    tag = {0: "bl", 0x10: "br", 0x20: "tl", 0x30: "tr"}[desc]
    for rle_on in (0, 8):
        kind = "rle" if rle_on else "raw"
        # true colour 24 and 32 bits (B, G, R[, A])
        for bits in (24, 32):
            px = runny(h, w, bits // 8)
            stored = tga_rows(px, desc)
            body = stored.reshape(-1, bits // 8)
            data = tga_rle(body, bits // 8) if rle_on else body.tobytes()
            want = px[:, :, [2, 1, 0, 3][: bits // 8]]
            expect(f"rgb{bits}-{tag}-{kind}.tga", tga(2 + rle_on, w, h, bits, data, desc),
                   want, pil="if it reads" if rle_on else True,
                   seed=tag == "tr" and bits == 32)
        # gray 8 and gray + alpha 16
        for bits in (8, 16):
            px = runny(h, w, bits // 8)
            body = tga_rows(px, desc).reshape(-1, bits // 8)
            data = tga_rle(body, bits // 8) if rle_on else body.tobytes()
            # Pillow 9.4 refuses some RLE rows read right to left
            expect(f"gray{bits}-{tag}-{kind}.tga", tga(3 + rle_on, w, h, bits, data, desc), px,
                   pil="if it reads" if rle_on else True,
                   seed=tag == "bl" and bits == 16)
        # colour-mapped, a map starting at entry 10
        pal = np.array(random_palette(40), dtype=np.uint8)
        idx = rng.integers(10, 50, (h, w))
        idx[:, :6] = 10
        body = tga_rows(idx.astype(np.uint8)[:, :, None], desc).reshape(-1, 1)
        data = tga_rle(body, 1) if rle_on else body.tobytes()
        expect(f"map-first10-{tag}-{kind}.tga",
               tga(1 + rle_on, w, h, 8, data, desc, (10, 40, 24, pal[:, ::-1].tobytes())),
               pal[idx - 10], pil=False, seed=tag == "br")

# 15/16-bit colour (5-5-5, attribute bit not alpha), widened by replication
px5 = rng.integers(0, 32, (h, w, 3))
v = (px5[:, :, 0] << 10 | px5[:, :, 1] << 5 | px5[:, :, 2] | rng.integers(0, 2, (h, w)) << 15)
for bits in (15, 16):
    data = tga_rows(v.astype("<u2")[:, :, None], 0).tobytes()
    f = tga(2, w, h, bits, data)
    expect(f"rgb{bits}.tga", f, widen(px5, 5), pil=False, seed=bits == 16)
    if bits == 16:  # Pillow 9.4: v * 255 // 31, and no alpha
        p = pillow(f)
        good = p is not None and (p[:, :, :3] == (px5 * 255 // 31)).all()
        (ok if good else fail)("rgb16.tga: Pillow reads the same 5-bit fields")
# 16-bit colour-map entries, 16-bit indices, 32-bit entries (RGBA)
pal5 = rng.integers(0, 32, (30, 3))
e16 = (pal5[:, 0] << 10 | pal5[:, 1] << 5 | pal5[:, 2]).astype("<u2").tobytes()
idx = rng.integers(5, 35, (h, w))
expect("map16-index16.tga",
       tga(1, w, h, 16, tga_rows(idx.astype("<u2")[:, :, None], 0).tobytes(), 0,
           (5, 30, 16, e16)), widen(pal5, 5)[idx - 5], pil=False)
pal4 = np.array([random_palette(1)[0] + (int(a),) for a in rng.integers(0, 256, 12)],
                dtype=np.uint8)
idx = rng.integers(0, 12, (h, w))
expect("map32.tga", tga(9, w, h, 8, tga_rle(tga_rows(idx.astype(np.uint8)[:, :, None], 0).reshape(-1, 1), 1),
                        0, (0, 12, 32, pal4[:, [2, 1, 0, 3]].tobytes())), pal4[idx], pil=False)
# true colour with a colour map it does not use, and an ID field
rgb = rng.integers(0, 256, (h, w, 3)).astype(np.uint8)
expect("rgb24-unused-map.tga",
       tga(2, w, h, 24, tga_rows(rgb[:, :, ::-1], 0).tobytes(), 0,
           (0, 7, 24, bytes(21)), ident=b"made by bmp_tga_check.py"), rgb,
       pil=False, seed=True)  # Pillow 9.4 applies the unused map
# TGA 2.0 extension area: attributes type 0 ("no alpha data") drops alpha;
# 3 ("useful alpha") keeps it
px = rng.integers(0, 256, (h, w, 4)).astype(np.uint8)
body = tga_rows(px[:, :, [2, 1, 0, 3]], 0).tobytes()
for attr, want in ((0, px[:, :, :3]), (3, px)):
    base = tga(2, w, h, 32, body, 0x08)
    ext = bytearray(495)
    ext[0:2] = struct.pack("<H", 495)
    ext[494] = attr
    foot = struct.pack("<II", len(base), 0) + b"TRUEVISION-XFILE.\x00"
    expect(f"rgba32-attributes{attr}.tga", base + bytes(ext) + foot, want, pil=False)

# damaged TGAs
pal = np.array(random_palette(40), dtype=np.uint8)
idx = rng.integers(10, 50, (h, w))
idx[3, 4] = 9
refused("map-index-below.tga",
        tga(1, w, h, 8, tga_rows(idx.astype(np.uint8)[:, :, None], 0).tobytes(), 0,
            (10, 40, 24, pal.tobytes())),
        "Corrupt TGA data: pixel index 9 outside its colour map (entries 10 to 49)")
idx[3, 4] = 50
refused("map-index-above.tga",
        tga(1, w, h, 8, tga_rows(idx.astype(np.uint8)[:, :, None], 0).tobytes(), 0,
            (10, 40, 24, pal.tobytes())),
        "Corrupt TGA data: pixel index 50 outside its colour map")
refused("rle-past-end.tga", tga(11, 4, 2, 8, b"\x86\x10\x81\x20"),
        "Corrupt TGA data: run-length packet of 2 pixels at (3, 0) goes past the end of the image")
refused("raw-cut.tga", tga(2, w, h, 24, bytes(3 * w * h - 1)),
        "Corrupt TGA data: header claims 21x7 pixels")
full = tga(10, w, h, 24, tga_rle(rng.integers(0, 256, (w * h, 3)).astype(np.uint8), 3))
refused("rle-cut.tga", full[: len(full) * 3 // 4], "Corrupt TGA data: file is truncated")
refused("huge.tga", tga(10, 30000, 30000, 24, b"\xff\x01\x02\x03" * 10),
        "Corrupt TGA data: header claims 30000x30000 pixels")
rc, _, err = run("--max-pixels", "146", path("rgb15.tga"))
(ok if rc != 0 and "(--max-pixels)" in err else fail)(f"--max-pixels 146 refuses a 21x7 TGA: {err.strip()}")
refused("interleaved.tga", tga(3, 4, 2, 8, bytes(8), 0x40),
        "TGA with interleaved rows")
refused("empty-map.tga", tga(1, 4, 2, 8, bytes(8), 0, (0, 0, 24, b"")),
        "Corrupt TGA data: colour map has no entries")
# no TGA header: not an image
refused("text.txt", b"just some text, not an image at all\n", "not a recognised image format")

checklib.finish("bmp_tga_check")
