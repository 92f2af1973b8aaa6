"""One answer for the same bytes: a file, and the same bytes through a pipe
(`cat FILE | imgstat -`, which the library reads into memory, as it does
Python bytes), must get the same verdict and, when read, the same record
but for the name, and the same message when refused.

The case that differed: an animated WebP whose later frame is damaged. Only
the first frame is read (docs/formats.md), so such a file is read from
either source, and its record is the first frame's (Pillow's decoding of the
undamaged animation's first frame, compared here with numpy); a damaged
first frame is refused from either. The other formats whose decoders read
where they like (TIFF pages, GIF frames, FITS HDUs, PNG, BMP, .npy) are
checked the same way over damaged and truncated files written here.

usage: same_bytes_check.py IMGSTAT TMPDIR (ctest: tests/io/formats_test.sh)"""
import io
import json
import struct
import subprocess

import numpy as np
from PIL import Image

from imgcheck import IMGSTAT, expect_stats, fail, finish, ok, path, run, write

rng = np.random.default_rng(34)
rc, version, _ = run("--version")


def from_pipe(data):
    """imgstat --json - fed data through a pipe."""
    r = subprocess.run(f'cat | "{IMGSTAT}" --json -', shell=True, input=data,
                       capture_output=True)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def same_answer(name, data):
    """File name (written with data) and the same bytes through a pipe give
    the same exit status, record and message; returns the file's record or
    None."""
    write(name, data)
    p = path(name)
    frc, fout, ferr = run("--json", p)
    prc, pout, perr = from_pipe(data)
    fwhy = ferr.replace(p, "INPUT")
    pwhy = perr.replace("imgstat: -: ", "imgstat: INPUT: ")
    frec = [json.loads(x) for x in fout.splitlines() if x.strip()]
    prec = [json.loads(x) for x in pout.splitlines() if x.strip()]
    for r in frec + prec:
        r.pop("file", None)
    if frc != prc or frec != prec or fwhy != pwhy:
        fail(f"{name}: file: exit {frc} {ferr.strip()!r}; pipe: exit {prc} "
             f"{perr.strip()!r}" + ("" if frec == prec else "; records differ"))
        return None
    verdict = "read" if frc == 0 else "refused: " + ferr.strip().split(": ", 2)[-1][:70]
    ok(f"{name}: file and pipe agree ({verdict})")
    return frec[0] if frc == 0 and frec else None


def chunks(data):
    """A RIFF's chunks as (tag, offset, size)."""
    out, at = [], 12
    while at + 8 <= len(data):
        tag, size = data[at:at + 4], struct.unpack("<I", data[at + 4:at + 8])[0]
        out.append((tag, at, size))
        at += 8 + size + (size & 1)
    return out


# ---- animated WebP: a damaged later frame ---------------------------------
if "WebP (libwebp)" in version:
    frames = [rng.integers(0, 256, (16, 20, 3), dtype=np.uint8) for _ in range(3)]
    buf = io.BytesIO()
    Image.fromarray(frames[0]).save(
        buf, "WEBP", save_all=True, lossless=True, duration=100,
        append_images=[Image.fromarray(f) for f in frames[1:]])
    good = buf.getvalue()
    anmf = [(at, size) for tag, at, size in chunks(good) if tag == b"ANMF"]
    if len(anmf) != 3:
        fail(f"Pillow's animation has {len(anmf)} ANMF chunks, not 3")
    else:
        (a0, s0), (a1, s1), (a2, _) = anmf
        # the second frame's VP8L bitstream: its chunk starts 16 bytes into
        # the ANMF payload
        bits1 = a1 + 8 + 16 + 8
        cases = {
            # cut inside the second frame: libwebpdemux refuses the whole
            # container for it
            "anim-cut-frame2.webp": good[:a1 + 300],
            "anim-cut-frame2-header.webp": good[:a1 + 12],
            # the second frame's bitstream zeroed, then garbled
            "anim-zero-frame2.webp": good[:bits1 + 5] + bytes(40) + good[bits1 + 45:],
            "anim-garbled-frame2.webp": good[:bits1] + bytes(
                b ^ 0x5A for b in good[bits1:bits1 + 200]) + good[bits1 + 200:],
            # the third frame's chunk size runs past the file
            "anim-frame3-size.webp": good[:a2 + 4] + struct.pack("<I", 1 << 20)
            + good[a2 + 8:],
        }
        for name, data in cases.items():
            rec = same_answer(name, data)
            if rec is None:
                fail(f"{name}: not read, but its first frame is whole")
            else:
                expect_stats(name, frames[0], 8)
        # the first frame damaged: refused from either source
        bits0 = a0 + 8 + 16 + 8
        for name, data in {
                "anim-cut-frame1.webp": good[:a0 + 200],
                "anim-garbled-frame1.webp": good[:bits0] + bytes(
                    b ^ 0x5A for b in good[bits0:bits0 + 300]) + good[bits0 + 300:],
        }.items():
            if same_answer(name, data) is not None:
                fail(f"{name}: read, but its first frame is damaged")
        same_answer("anim.webp", good)
else:
    print("skipped: WebP (this imgstat has no libwebp)")


# ---- the other formats: damaged and truncated files ------------------------
def variants(name, data, flips=4):
    """data, cut at a few places, and with bytes past the first tenth
    garbled."""
    yield name, data
    n = len(data)
    for k in (n // 3, n // 2, n - 7):
        yield f"cut{k}-{name}", data[:k]
    for j in range(flips):
        d = bytearray(data)
        for i in rng.integers(n // 10, n, 6):
            d[i] ^= int(rng.integers(1, 256))
        yield f"flip{j}-{name}", bytes(d)


img = rng.integers(0, 256, (24, 30, 3), dtype=np.uint8)
samples = {}
buf = io.BytesIO()
Image.fromarray(img).save(buf, "PNG")
samples["a.png"] = buf.getvalue()
buf = io.BytesIO()
Image.fromarray(img).save(buf, "BMP")
samples["a.bmp"] = buf.getvalue()
buf = io.BytesIO()
np.save(buf, img)
samples["a.npy"] = buf.getvalue()
if "GIF (giflib)" in version:
    buf = io.BytesIO()
    pal = [Image.fromarray(f).quantize(16) for f in (img, 255 - img)]
    pal[0].save(buf, "GIF", save_all=True, append_images=pal[1:], duration=50)
    samples["anim.gif"] = buf.getvalue()
if "TIFF (libtiff)" in version:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "TIFF", save_all=True, compression="tiff_lzw",
                              append_images=[Image.fromarray(255 - img)])
    samples["pages.tif"] = buf.getvalue()
if "FITS (cfitsio)" in version:
    a = rng.integers(-3000, 3000, (12, 17)).astype(">i2")
    head = "".join(f"{k:<8}= {v:>20}".ljust(80) for k, v in (
        ("SIMPLE", "T"), ("BITPIX", "16"), ("NAXIS", "2"), ("NAXIS1", "17"),
        ("NAXIS2", "12"))) + "END".ljust(80)
    body = a.tobytes()
    samples["a.fits"] = (head.ljust(2880).encode() + body
                         + bytes(-len(body) % 2880))
for base, data in samples.items():
    for name, v in variants(base, data):
        same_answer(name, v)

finish()
