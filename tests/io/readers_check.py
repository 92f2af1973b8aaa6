"""The GIF, HDR and PNG tRNS readers against numpy over pixels written
here: GIF (giflib) by the rules of docs/formats.md, files built byte by byte with an
LZW coder of this file (a deferred clear, interlacing, a small first frame,
transparency) and the frame's pixels checked against Pillow's decode too;
gray and RGB PNG with tRNS (8 and 16 bits) written with zlib here, alpha
from the tRNS value; Radiance HDR in the old (pre-1991) run-length coding,
mixed with new-style scanlines, against tools/make_reference.py's decoder;
JPEG with junk between header segments: the record of the clean file (and
Pillow's pixels), with a warning, while junk after a scan stays refused.
Damaged files must be refused with a message naming the file.

usage: readers_check.py IMGSTAT TMPDIR
Formats the build lacks (imgstat --version) are skipped, said so."""
import json
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "tools"))
from make_reference import hdr_planes  # noqa: E402
from imgcheck import (expect_refused, expect_stats, fail, finish, ok, path, run,
                      truncations, write)

rng = np.random.default_rng(20)
rc, version, _ = run("--version")
print(version.strip())


# ---- GIF -------------------------------------------------------------------
def lzw(indices, mcs, deferred=False):
    """GIF's variable-width LZW of indices (code size mcs): a clear code
    first; with a full table, a clear code (or, deferred, none: the codes
    go on at 12 bits with the table as it is)."""
    clear, eoi = 1 << mcs, (1 << mcs) + 1
    out = []

    def reset():
        return {(i,): i for i in range(clear)}, eoi + 1, mcs + 1

    table, nxt, width = reset()
    out.append((clear, width))
    w = ()
    for k in indices:
        wk = w + (int(k),)
        if wk in table:
            w = wk
            continue
        out.append((table[w], width))
        if nxt < 4096:
            table[wk] = nxt
            nxt += 1
            if nxt > (1 << width) and width < 12:
                width += 1
        elif not deferred:
            out.append((clear, width))
            table, nxt, width = reset()
        w = (int(k),)
    out.append((table[w], width))
    out.append((eoi, width))
    bits = nbits = 0
    data = bytearray()
    for code, wd in out:
        bits |= code << nbits
        nbits += wd
        while nbits >= 8:
            data.append(bits & 255)
            bits >>= 8
            nbits -= 8
    if nbits:
        data.append(bits & 255)
    blocks = bytearray([mcs])
    for i in range(0, len(data), 255):
        chunk = data[i:i + 255]
        blocks += bytes([len(chunk)]) + chunk
    return bytes(blocks + b"\x00")


def gif(screen, frame, palette, bg=0, transparent=None, at=(0, 0),
        interlace=False, local=None, deferred=False, mcs=None):
    """A GIF89a file: a screen of screen=(w, h), a global palette (None:
    none), one frame (an array of indices, rows top to bottom) at at."""
    sw, sh = screen
    fh, fw = frame.shape

    def table(pal):
        n = max(2, 1 << (len(pal) - 1).bit_length())
        pal = list(pal) + [(0, 0, 0)] * (n - len(pal))
        return n.bit_length() - 2, b"".join(bytes(c) for c in pal)

    flags, gpal = 0, b""
    if palette is not None:
        size, gpal = table(palette)
        flags = 0x80 | 0x70 | size
    out = b"GIF89a" + struct.pack("<HHBBB", sw, sh, flags, bg, 0) + gpal
    if transparent is not None:
        out += b"\x21\xf9\x04" + bytes([1, 0, 0, transparent]) + b"\x00"
    iflags, lpal = (0x40 if interlace else 0), b""
    if local is not None:
        size, lpal = table(local)
        iflags |= 0x80 | size
    out += b"\x2c" + struct.pack("<HHHHB", at[0], at[1], fw, fh, iflags) + lpal
    rows = frame
    if interlace:
        order = [y for s, d in ((0, 8), (4, 8), (2, 4), (1, 2))
                 for y in range(s, fh, d)]
        rows = frame[order]
    if mcs is None:
        mcs = max(2, int(frame.max()).bit_length())
    return out + lzw(rows.reshape(-1), mcs, deferred) + b"\x3b"


def expected_gif(screen, frame, palette, bg=0, transparent=None, at=(0, 0),
                 local=None):
    """The picture by the rules: background colour (alpha 0 when it is the
    transparent index) outside the frame; the frame's colours, alpha 0 on
    the transparent index."""
    pal = np.array(local if local is not None else palette, dtype=np.uint8)
    gpal = np.array(palette if palette is not None else [(0, 0, 0)], np.uint8)
    fh, fw = frame.shape
    sw = max(screen[0], at[0] + fw)
    sh = max(screen[1], at[1] + fh)
    ch = 4 if transparent is not None else 3
    img = np.zeros((sh, sw, ch), np.uint8)
    img[:, :, :3] = gpal[bg] if bg < len(gpal) else 0
    if ch == 4:
        img[:, :, 3] = 0 if bg == transparent else 255
    region = img[at[1]:at[1] + fh, at[0]:at[0] + fw]
    region[:, :, :3] = pal[frame]
    if ch == 4:
        region[:, :, 3] = np.where(frame == transparent, 0, 255)
    return img


def pillow_frame_agrees(name, frame, at, want):
    """Pillow's decode of the frame's own pixels (where its rules and ours
    meet) against the expected picture."""
    with Image.open(path(name)) as im:
        got = np.asarray(im.convert("RGB"))
    fh, fw = frame.shape
    region = got[at[1]:at[1] + fh, at[0]:at[0] + fw]
    mine = want[at[1]:at[1] + fh, at[0]:at[0] + fw, :3]
    if np.array_equal(region, mine):
        ok(f"{name}: Pillow decodes the frame to the same colours")
    else:
        fail(f"{name}: Pillow decodes the frame differently")


def gif_case(name, screen, frame, palette, **kw):
    keys = ("bg", "transparent", "at", "local")
    want = expected_gif(screen, frame, palette,
                        **{k: v for k, v in kw.items() if k in keys})
    write(name, gif(screen, frame, palette, **kw))
    expect_stats(name, want, 8)
    pillow_frame_agrees(name, frame, kw.get("at", (0, 0)), want)


if "GIF (giflib)" not in version:
    print("skipped: GIF (this imgstat has no giflib)")
else:
    pal4 = [(10, 20, 30), (255, 0, 0), (0, 200, 0), (0, 0, 250)]
    small = rng.integers(0, 4, (30, 40))
    # (a) a first frame smaller than the screen, background red: red, not
    # blue (stb swapped R and B there)
    gif_case("small-frame.gif", (100, 100), small, pal4, bg=1, at=(10, 20))
    # (b) a transparent index that pixels use: their colour kept, alpha 0
    gif_case("trans-used.gif", (40, 30), small, pal4, transparent=2)
    # a transparent index that no pixel uses: RGBA all the same
    no2 = np.where(small == 2, 3, small)
    gif_case("trans-unused.gif", (40, 30), no2, pal4, transparent=2)
    # the background is the transparent index: outside the frame alpha 0
    gif_case("trans-bg.gif", (64, 50), small, pal4, bg=2, transparent=2,
             at=(5, 7))
    # interlaced, with a local colour map
    tall = rng.integers(0, 4, (37, 23))
    gif_case("interlaced.gif", (23, 37), tall, pal4, interlace=True,
             local=[(1, 2, 3), (4, 5, 6), (7, 8, 9), (250, 251, 252)])
    # (c) LZW that goes on with a full table and no clear code
    big = rng.integers(0, 256, (90, 110))
    pal256 = [tuple(int(v) for v in rng.integers(0, 256, 3)) for _ in range(256)]
    gif_case("deferred-clear.gif", (110, 90), big, pal256, deferred=True)
    # a first frame that reaches past the screen: the screen grows
    gif_case("past-screen.gif", (20, 10), small, pal4, at=(3, 4))
    # no global map: the background is black
    gif_case("no-global.gif", (50, 40), small, None, at=(2, 2), local=pal4)

    # refusals
    write("index-beyond.gif", gif((8, 8), np.full((8, 8), 5), pal4[:2],
                                  mcs=3))
    expect_refused("index-beyond.gif", "beyond its colour map of 2 colours")
    write("no-map.gif", gif((8, 8), np.zeros((8, 8), int), None))
    expect_refused("no-map.gif", "no colour map")
    ok_bytes = gif((40, 30), small, pal4)
    truncations("t.gif", ok_bytes, "Corrupt GIF data")
    write("no-image.gif", ok_bytes[:13 + 12] + b"\x3b")
    expect_refused("no-image.gif", "has no image")
    # a huge screen in a few bytes is refused before anything is allocated
    huge = bytearray(gif((8, 8), np.zeros((8, 8), int), pal4))
    huge[6:10] = struct.pack("<HH", 65535, 65535)
    write("huge.gif", bytes(huge))
    expect_refused("huge.gif", "(--max-pixels)")
    # a frame whose data stops early
    cut = gif((40, 30), small, pal4)
    lz = cut.index(b"\x2c") + 10
    write("short-data.gif", cut[:lz] + lzw(small.reshape(-1)[:100], 2)[:-1]
          + b"\x00\x3b")
    expect_refused("short-data.gif", "Corrupt GIF data")
    # an LZW minimum code size over 8 (Pillow's issue_2811.gif has 11):
    # valid LZW that Pillow decodes, which giflib refuses as a failed read;
    # the refusal names the cause
    write("lzw-11.gif", gif((40, 30), small, pal4, mcs=11))
    pillow_frame_agrees("lzw-11.gif", small, (0, 0),
                        expected_gif((40, 30), small, pal4))
    expect_refused("lzw-11.gif", "LZW minimum code size 11 is more than 8")


# ---- PNG with tRNS: gray and RGB, 8 and 16 bits ----------------------------
def png_raw(w, h, depth, color_type, trns, raw):
    """A PNG written here: IHDR, a tRNS chunk of the bytes trns, the
    filtered rows raw in one IDAT."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type,
                                       0, 0, 0)) +
            chunk(b"tRNS", trns) + chunk(b"IDAT", zlib.compress(raw)) +
            chunk(b"IEND", b""))


def png(a, color_type, depth, trns):
    """Array a, (H, W) gray or (H, W, 3) RGB, with the transparent value
    trns (a gray level or an (r, g, b))."""
    dt = ">u2" if depth == 16 else "u1"
    raw = b"".join(b"\x00" + row.astype(dt).tobytes() for row in a)
    return png_raw(a.shape[1], a.shape[0], depth, color_type,
                   struct.pack(">" + "H" * len(trns), *trns), raw)


for depth in (8, 16):
    top = (1 << depth) - 1
    g = rng.integers(0, 4, (21, 17)) * (top // 3)
    key = top // 3
    name = f"gray{depth}-trns.png"
    write(name, png(g, 0, depth, (key,)))
    expect_stats(name, np.dstack([g, np.where(g == key, 0, top)]), depth)
    rgb = rng.integers(0, 3, (19, 23, 3)) * (top // 2)
    keyc = (top // 2, 0, top)
    hit = np.all(rgb == keyc, axis=2)
    name = f"rgb{depth}-trns.png"
    write(name, png(rgb, 2, depth, keyc))
    expect_stats(name, np.dstack([rgb, np.where(hit, 0, top)]), depth)
# Pillow's reading of the 8-bit files agrees
for name, mode in (("gray8-trns.png", "LA"), ("rgb8-trns.png", "RGBA")):
    with Image.open(path(name)) as im:
        expect_stats(name, np.asarray(im.convert(mode)), 8)
# 2-bit gray: widened to 8 bits, alpha 0 where the stored value is the key
g2 = rng.integers(0, 4, (9, 13))
packed = b"".join(b"\x00" + bytes(
    sum(int(v) << (6 - 2 * i) for i, v in enumerate(row[x:x + 4]))
    for x in range(0, len(row), 4)) for row in g2)
write("gray2-trns.png", png_raw(13, 9, 2, 0, struct.pack(">H", 1), packed))
expect_stats("gray2-trns.png", np.dstack([g2 * 85, np.where(g2 == 1, 0, 255)]),
             8)

# ---- Radiance HDR: the old run-length coding -------------------------------
def hdr_file(w, h, body):
    return (b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\nEXPOSURE=2\n\n" +
            f"-Y {h} +X {w}\n".encode() + body)


def pix(*v):
    return bytes(v)


def rle_scanline(w, rgbe):
    """A new-style scanline of the (w, 4) array rgbe: literals of up to 128."""
    out = bytearray([2, 2, w >> 8, w & 255])
    for c in range(4):
        for x in range(0, w, 128):
            chunk = rgbe[x:x + 128, c]
            out += bytes([len(chunk)]) + bytes(chunk.astype(np.uint8))
    return bytes(out)


def expect_hdr(name, data):
    write(name, data)
    w, h, _, _, px = hdr_planes(path(name))
    expect_stats(name, px.reshape(h, w, 3), 32)


W = 300
rows = []
# row 0: a pixel, then runs of 255 and 255 << 8 would pass the end: a run
# of 44 (300 = 1 + 255 + 44)
rows.append(pix(128, 64, 32, 130) + pix(1, 1, 1, 255) + pix(200, 1, 9, 120) +
            pix(1, 1, 1, 42) + pix(7, 200, 7, 140))
# row 1: new-style run-length coded
rows.append(rle_scanline(W, rng.integers(0, 256, (W, 4))))
# row 2: starts with a run of the pixel before it (row 1's last), then two
# markers in a row: 1 + (1 << 8) = 257 more, then literal pixels
rows.append(pix(1, 1, 1, 2) + pix(3, 150, 3, 129) + pix(1, 1, 1, 1) +
            pix(1, 1, 1, 1) + b"".join(pix(129, x & 255, 5, 131)
                                       for x in range(W - 260)))
expect_hdr("old-rle-mixed.hdr", hdr_file(W, 3, b"".join(rows)))
# a narrow image (no new-style coding possible): old runs only
expect_hdr("old-rle-narrow.hdr",
           hdr_file(5, 2, pix(10, 20, 200, 128) + pix(1, 1, 1, 4) +
                    pix(1, 1, 1, 5)))
# the corpus file (its figures are test_corpus's too)
corpus = os.environ.get("IMGSTAT_CORPUS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
    "corpus")
old = os.path.join(corpus, "hdr", "old-rle.hdr")
if os.path.exists(old):
    with open(old, "rb") as f:
        expect_hdr("corpus-old-rle.hdr", f.read())
else:
    print("skipped: the corpus's old-rle.hdr (no corpus)")
# refusals
write("run-first.hdr", hdr_file(4, 1, pix(1, 1, 1, 4)))
expect_refused("run-first.hdr", "run-length run before any pixel")
write("run-past.hdr", hdr_file(4, 2, pix(9, 9, 200, 128) + pix(1, 1, 1, 4)))
expect_refused("run-past.hdr", "past the end of a scanline")
write("rle-width.hdr", hdr_file(16, 1, bytes([2, 2, 0, 15]) + bytes(100)))
expect_refused("rle-width.hdr", "scanline of 15 pixels in an image 16 wide")
truncations("old.hdr", hdr_file(W, 3, b"".join(rows)), "truncated")
write("xyze.hdr", hdr_file(1, 1, pix(128, 128, 128, 128)).replace(
    b"rle_rgbe", b"rle_xyze"))
expect_refused("xyze.hdr", "FORMAT=32-bit_rle_xyze")
write("plus-y.hdr", hdr_file(1, 1, pix(128, 128, 128, 128)).replace(
    b"-Y 1", b"+Y 1"))
expect_refused("plus-y.hdr", "-Y HEIGHT +X WIDTH")

# ---- JPEG: junk between header segments -------------------------------------
def jpeg_segments(data):
    """(marker, offset, length) of each segment up to the first SOS."""
    i, out = 2, []
    while True:
        m, n = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        out.append((m, i, n))
        if m == 0xDA:
            return out
        i += 2 + n


def record(name, *extra):
    rc, out, err = run("--json", *extra, path(name))
    return rc, (json.loads(out) if rc == 0 else None), err


here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "..", "samples", "testorig.jpg"), "rb") as f:
    clean = f.read()
write("clean.jpg", clean)
_, want, _ = record("clean.jpg")
seg = jpeg_segments(clean)
dqt = next(o for m, o, n in seg if m == 0xDB)
sof = next(o for m, o, n in seg if m == 0xC0)
app0 = next((o, n) for m, o, n in seg if m == 0xE0)
# an APP1 EXIF block whose length field says 10 bytes fewer than it holds
exif_body = b"Exif\x00\x00" + bytes(range(40))
exif = b"\xff\xe1" + struct.pack(">H", 2 + len(exif_body) - 10) + exif_body
cases = {
    "junk-dqt.jpg": (clean[:dqt] + b"\x12\x34\x00" + clean[dqt:],
                     "3 extraneous bytes before marker 0xdb"),
    "junk-two.jpg": (clean[:dqt] + b"\x01" + clean[dqt:sof] + b"\xff\x00\x55"
                     + clean[sof:], "1 extraneous bytes before marker 0xdb, "
                     "3 extraneous bytes before marker 0xc0"),
    "junk-app.jpg": (clean[:dqt] + bytes(5) + b"\xff\xe2\x00\x04ab" +
                     clean[dqt:], "5 extraneous bytes before marker 0xe2"),
    "junk-soi.jpg": (clean[:2] + b"\x00\x01" + clean[2:],
                     "2 extraneous bytes before marker 0xe0"),
    "broken-exif.jpg": (clean[:app0[0] + 2 + app0[1]] + exif +
                        clean[app0[0] + 2 + app0[1]:],
                        "10 extraneous bytes before marker 0xdb"),
}
for name, (data, words) in cases.items():
    write(name, data)
    rc, rec, err = record(name)
    if rc != 0:
        fail(f"{name}: exit {rc}: {err.strip()}")
        continue
    problems = []
    if rec["stats"] != want["stats"]:
        problems.append("statistics differ from the clean file's")
    if not any(words in w for w in rec.get("warnings", [])):
        problems.append(f"warnings {rec.get('warnings')}, want '{words}'")
    if f"{path(name)}: warning: {words}" not in err:
        problems.append(f"stderr {err.strip()!r}")
    if name != "junk-soi.jpg":  # Pillow wants FF D8 FF
        with Image.open(path(name)) as im, \
                Image.open(path("clean.jpg")) as ref:
            if not np.array_equal(np.asarray(im.convert("RGB")),
                                  np.asarray(ref.convert("RGB"))):
                problems.append("Pillow reads other pixels")
    (fail if problems else ok)(f"{name}: " + ("; ".join(problems) or
                                              "the clean file's record, warned"))
with Image.open(path("junk-dqt.jpg")) as im:
    expect_stats("junk-dqt.jpg", np.asarray(im), 8)
# the text record says it on a line of its own; --quiet keeps it there
rc, out, err = run("--quiet", path("junk-dqt.jpg"))
good = rc == 0 and "\nwarning: 3 extraneous bytes before marker 0xdb" in out \
    and err == ""
(ok if good else fail)("text record with --quiet: a warning line, stderr empty")
# what stays refused: damage inside the scan, a file cut short
mid = seg[-1][1] + 2 + seg[-1][2] + 200
write("scan-damage.jpg", clean[:mid] + b"\xff\xd4" + clean[mid + 2:])
expect_refused("scan-damage.jpg", "Corrupt JPEG data")
write("junk-then-cut.jpg", cases["junk-dqt.jpg"][0][:len(clean) // 2])
expect_refused("junk-then-cut.jpg", "Corrupt JPEG data")

finish()
