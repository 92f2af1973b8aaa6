"""The libdeflate PNG decoder (src/io/png_fast.c) against libpng and numpy.

Usage: python3 png_paths_test.py PNG_PATHS [CORPUS]

1. PngSuite, tests/data, samples/ and the corpus's photos (when CORPUS is
   there): png_paths decodes each file with both decoders; verdicts and
   samples must be the same.
2. Generated PNGs, written here with zlib: every colour type and bit depth at
   odd sizes, every row's filter type drawn from 0-4 (the filtering done
   here), palettes with and without tRNS (shorter than the palette, indices
   past the palette's end), tRNS on gray and RGB, the image data split into
   many IDAT chunks, ancillary chunks before and after it. Each must take the
   fast path, and its planes must be the samples numpy expects (gray scaled
   to 0..255 by bit replication, palette entries, alpha from tRNS).
3. Damaged and unusual files (bad CRCs, truncation, no IEND, a wrong
   Adler-32, data past the zlib stream, too little or too much data, filter
   type 5, unknown critical chunks, interlace): both decoders must give the
   same verdict, and the ones libpng takes must be libpng's to decode.
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = sys.argv[1]
CORPUS = sys.argv[2] if len(sys.argv) > 2 else ""
failures = []
checks = 0


def chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def filter_rows(raw_rows, bpp, rng):
    """Each row (bytes) filtered with a random filter type; returns the
    filtered stream (filter byte + row each)."""
    out = bytearray()
    prev = bytes(len(raw_rows[0]))
    for y, row in enumerate(raw_rows):
        f = int(rng.integers(0, 5)) if y > 0 else y % 5
        out.append(f)
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][f]
            out.append((x - pred) & 0xFF)
        prev = row
    return bytes(out)


def pack_rows(samples, depth):
    """samples: (h, w*channels) integers -> list of PNG row bytes."""
    rows = []
    for r in samples:
        if depth == 16:
            rows.append(r.astype(">u2").tobytes())
        elif depth == 8:
            rows.append(r.astype(np.uint8).tobytes())
        else:
            per = 8 // depth
            n = len(r)
            padded = np.zeros(((n + per - 1) // per) * per, dtype=np.uint32)
            padded[:n] = r
            padded = padded.reshape(-1, per)
            shifts = np.array([8 - depth * (k + 1) for k in range(per)])
            rows.append((padded << shifts).sum(axis=1).astype(np.uint8).tobytes())
    return rows


def make_png(w, h, depth, ct, samples, rng, plte=None, trns=None,
             idat_parts=3, extra=True, interlace=0):
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ct]
    bpp = max(1, channels * depth // 8)
    stream = filter_rows(pack_rows(samples.reshape(h, w * channels), depth),
                         bpp, rng)
    packed = zlib.compress(stream, 6)
    png = b"\x89PNG\r\n\x1a\n" + chunk(
        b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ct, 0, 0, interlace))
    if extra:
        png += chunk(b"gAMA", struct.pack(">I", 45455))
        png += chunk(b"tEXt", b"Comment\0made for the decoder test")
    if plte is not None:
        png += chunk(b"PLTE", plte.astype(np.uint8).tobytes())
    if trns is not None:
        png += chunk(b"tRNS", trns)
    cut = sorted(rng.integers(0, len(packed) + 1, size=idat_parts - 1))
    bounds = [0] + list(cut) + [len(packed)]
    for a, b in zip(bounds, bounds[1:]):
        png += chunk(b"IDAT", packed[a:b])
    if extra:
        png += chunk(b"tIME", bytes(7))
    return png + chunk(b"IEND", b"")


def run(args):
    p = subprocess.run([TOOL] + args, capture_output=True, text=True)
    return p.returncode, p.stdout


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def main():
    # 1. the files on disk
    dirs = [os.path.join(HERE, "..", "data", "pngsuite"),
            os.path.join(HERE, "..", "data", "formats"),
            os.path.join(HERE, "..", "..", "samples")]
    photos = os.path.join(CORPUS, "photos") if CORPUS else ""
    if photos and os.path.isdir(photos):
        dirs.append(photos)
    rc, out = run([d for d in dirs if os.path.isdir(d)])
    print(out.splitlines()[-1])
    if "has no libdeflate" in out:
        print("skipped: the build has no libdeflate, so no second decoder")
        sys.exit(77)
    check(rc == 0, "files on disk: " + "; ".join(
        l for l in out.splitlines() if l.startswith("DIFFER")))
    suite = [l for l in out.splitlines() if "pngsuite/" in l]
    fast = [l for l in suite if l.startswith("fast ")]
    # every non-interlaced PngSuite image the fast path takes (all but the
    # two with a PLTE in a true-colour image), and every x*.png refused
    check(len(fast) >= 120, f"only {len(fast)} PngSuite files took the fast path")
    for l in suite:
        name = l.rsplit("/", 1)[1]
        if name.startswith("x"):
            check(l.startswith("refused"), "accepted " + name)
        if name[4] == "n" and name[:2] != "pp" and not name.startswith("x") \
                and name[0] != "P":
            check(l.startswith("fast "), "not fast: " + l)

    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for w, h in [(1, 1), (7, 5), (33, 17), (13, 1), (1, 9), (64, 31)]:
            for ct, depths in [(0, [1, 2, 4, 8, 16]), (2, [8, 16]),
                               (3, [1, 2, 4, 8]), (4, [8, 16]), (6, [8, 16])]:
                for depth in depths:
                    cases.append((w, h, ct, depth, False))
                    if ct in (0, 2, 3):
                        cases.append((w, h, ct, depth, True))
        n_fast = 0
        for k, (w, h, ct, depth, with_trns) in enumerate(cases):
            channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ct]
            top = (1 << depth) - 1
            samples = rng.integers(0, top + 1, size=(h, w, channels),
                                   dtype=np.int64)
            # smooth parts too, so that every filter meets small differences
            samples[: h // 2] = (np.arange(w)[None, :, None] * 3 +
                                 np.arange(h // 2)[:, None, None]) % (top + 1)
            plte = trns = None
            if ct == 3:
                n = min(top + 1, 1 + int(rng.integers(0, top + 1)))
                plte = rng.integers(0, 256, size=(n, 3))
                if n < top + 1:  # some indices past the palette's end
                    samples[-1, :, 0] = top
            if with_trns:
                if ct == 3:
                    nt = 1 + int(rng.integers(0, len(plte)))
                    alpha = rng.integers(0, 256, size=nt)
                    trns = alpha.astype(np.uint8).tobytes()
                else:
                    value = samples[-1, 0] if h > 1 else samples[0, 0]
                    trns = struct.pack(">" + "H" * channels, *value)
            png = make_png(w, h, depth, ct, samples, rng, plte, trns,
                           idat_parts=1 + k % 5, extra=k % 2 == 0)
            path = os.path.join(tmp, f"g{k:03d}.png")
            raw = os.path.join(tmp, "out.raw")
            with open(path, "wb") as f:
                f.write(png)
            # what libpng's transforms make of the samples
            if ct == 0 and depth < 8:
                vals = samples * (255 // top)
            else:
                vals = samples
            if ct == 3:
                full = np.zeros((256, 4), dtype=np.int64)
                full[:, 3] = 255
                full[: len(plte), :3] = plte
                if trns is not None:
                    full[: len(trns), 3] = np.frombuffer(trns, np.uint8)
                vals = full[samples[..., 0]]
                if trns is None:
                    vals = vals[..., :3]
            elif trns is not None:
                tv = np.array(struct.unpack(">" + "H" * channels, trns))
                hit = (samples == tv).all(axis=-1)
                alpha = np.where(hit, 0, 255 if depth <= 8 else 65535)
                vals = np.concatenate([vals, alpha[..., None]], axis=-1)
            dtype = np.uint16 if depth == 16 else np.uint8
            expect = np.moveaxis(vals, -1, 0).astype(dtype)
            rc, out = run(["--dump", raw, path])
            what = f"{path}: {w}x{h} type {ct} depth {depth} tRNS {with_trns}"
            check(rc == 0 and out.startswith("fast "), what + ": " + out)
            n_fast += out.startswith("fast ")
            if os.path.exists(raw):
                got = np.fromfile(raw, dtype=dtype)
                os.unlink(raw)
                check(got.size == expect.size and
                      np.array_equal(got, expect.ravel()),
                      what + ": samples differ from numpy's")
            os.unlink(path)
        print(f"generated: {len(cases)} PNGs, {n_fast} on the fast path")

        # 3. damaged and unusual files: the same verdicts; the expected ones
        def variant(name, png, want):
            path = os.path.join(tmp, name + ".png")
            with open(path, "wb") as f:
                f.write(png)
            rc, out = run([path])
            check(rc == 0, name + ": " + out)
            check(out.startswith(want), f"{name}: wanted '{want}': {out}")
            os.unlink(path)

        w, h = 21, 11
        s = rng.integers(0, 256, size=(h, w, 3))
        good = make_png(w, h, 8, 2, s, np.random.default_rng(1), idat_parts=2,
                        extra=False)
        variant("good", good, "fast ")
        sig, ihdr_end = 8, 8 + 25
        stream = filter_rows(pack_rows(s.reshape(h, -1), 8), 3,
                             np.random.default_rng(2))
        head = good[:ihdr_end]
        iend = chunk(b"IEND", b"")

        def with_idat(data, tail=iend):
            return head + chunk(b"IDAT", data) + tail

        z = zlib.compress(stream)
        variant("plain", with_idat(z), "fast ")
        bad = bytearray(with_idat(z))
        bad[ihdr_end + 8 + 5] ^= 1  # inside IDAT: its CRC fails
        variant("idat-crc", bytes(bad), "refused")
        bad = bytearray(with_idat(z))
        bad[-1] ^= 1
        variant("iend-crc", bytes(bad), "refused")
        variant("no-iend", with_idat(z, b""), "refused")
        variant("cut", with_idat(z)[:ihdr_end + 40], "refused")
        # libpng checks the Adler-32 or not by its build and version: the fast
        # decoder declines and libpng gives its own verdict either way.
        variant("adler", with_idat(z[:-4] + bytes(4)), ("libpng ", "refused: "))
        variant("after-stream", with_idat(z + b"junk"), "fast ")
        variant("short-data", with_idat(zlib.compress(stream[:-1])), "refused")
        variant("long-data", with_idat(zlib.compress(stream + b"\0")),
                "libpng ")
        bad = bytearray(stream)
        bad[0] = 5
        variant("filter-5", with_idat(zlib.compress(bytes(bad))), "refused")
        variant("critical-unknown",
                head + chunk(b"QQQQ", b"x") + chunk(b"IDAT", z) + iend,
                "refused")
        ancillary_bad = bytearray(chunk(b"teXt", b"abc"))
        ancillary_bad[-1] ^= 1
        variant("ancillary-crc",
                head + bytes(ancillary_bad) + chunk(b"IDAT", z) + iend,
                "fast ")
        variant("idat-after-chunk",
                head + chunk(b"IDAT", z[:10]) + chunk(b"teXt", b"a") +
                chunk(b"IDAT", z[10:]) + iend, "refused")
        variant("chunk-after-iend", with_idat(z) + b"trailing", "fast ")
        # tRNS with a bad CRC, and gray tRNS values past the depth's range:
        # libpng's to judge
        g = rng.integers(0, 4, size=(h, w, 1))
        bad = bytearray(chunk(b"tRNS", b"\0\1"))
        bad[-1] ^= 1
        p = make_png(w, h, 2, 0, g, np.random.default_rng(3), extra=False)
        variant("trns-crc", p[:ihdr_end] + bytes(bad) + p[ihdr_end:], "libpng ")
        variant("trns-range", p[:ihdr_end] + chunk(b"tRNS", b"\0\7") +
                p[ihdr_end:], "libpng ")
        variant("interlaced",
                make_png(w, h, 8, 2, s, np.random.default_rng(1), interlace=0,
                         extra=False)[:8] +
                chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 1)) +
                chunk(b"IDAT", zlib.compress(b"\0abc")) + iend, "libpng ")
        # --max-memory: a limit the planes fit but not the fast path's buffers
        big = make_png(200, 150, 8, 2, rng.integers(0, 256, size=(150, 200, 3)),
                       np.random.default_rng(4), extra=False)
        path = os.path.join(tmp, "big.png")
        with open(path, "wb") as f:
            f.write(big)
        # (libpng's path holds the planes and one row of a plane's width)
        planes = 200 * 150 * 3
        rc, out = run(["--max-memory", str(planes + 200), path])
        check(rc == 0 and out.startswith("libpng "), "max-memory: " + out)
        rc, out = run(["--max-memory", str(planes + 199), path])
        check(rc == 0 and out.startswith("refused"), "max-memory: " + out)
        rc, out = run(["--max-memory", str(planes * 4), path])
        check(rc == 0 and out.startswith("fast "), "max-memory: " + out)
        os.unlink(path)

    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
