#!/usr/bin/env python3
"""Small test images in every format imgstat reads, with their reference.

    make_formats.py OUTDIR

Writes OUTDIR/*.{png,bmp,tga,gif,psd,hdr,ppm,pgm,jpg} (cmyk.jpg too) and OUTDIR/reference.tsv
(the columns of make_reference.py). The reference of a lossless file is the
array it was written from; PSD, HDR and PNM are written byte by byte here;
BMP, TGA, GIF and PNG by Pillow. JPEG references are Pillow's decode,
compared with a tolerance. Deterministic: same output on every run.
"""
import os
import struct
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_reference import stats_fields  # noqa: E402

W, H = 37, 23  # odd sizes: BMP rows need padding, no SIMD-friendly widths
rng = np.random.default_rng(20261122)


def image(channels, top=255, dtype=np.uint8):
    y, x = np.mgrid[0:H, 0:W]
    base = (x * 7 + y * 5)[..., None] + np.arange(channels) * 40
    noise = rng.integers(0, top // 4 + 1, size=(H, W, channels))
    a = (base * top // 300 + noise) % (top + 1)
    a[0, 0] = 0
    a[-1, -1] = top  # the extremes appear
    return a.astype(dtype)


def row(name, arr, depth, check="exact"):
    h, w = arr.shape[0], arr.shape[1]
    pix = arr.reshape(h * w, -1)
    ch = pix.shape[1]
    return "\t".join([name, "ok", str(w), str(h), str(ch), str(depth), check]
                     + stats_fields(pix.astype(np.float64 if depth == 32
                                               else np.int64), depth))


def write_pnm(path, arr, maxval):
    magic = b"P6" if arr.ndim == 3 else b"P5"
    dtype = ">u2" if maxval > 255 else "u1"
    with open(path, "wb") as f:
        f.write(b"%s\n# made by make_formats.py\n%d %d\n%d\n"
                % (magic, arr.shape[1], arr.shape[0], maxval))
        f.write(arr.astype(dtype).tobytes())


def packbits_literal(data):
    out = bytearray()
    for i in range(0, len(data), 128):
        chunk = data[i:i + 128]
        out.append(len(chunk) - 1)
        out += chunk
    return bytes(out)


def write_psd(path, arr, depth, rle=False):
    channels = arr.shape[2]
    with open(path, "wb") as f:
        f.write(b"8BPS" + struct.pack(">H6xHIIHH", 1, channels, H, W, depth, 3))
        f.write(struct.pack(">III", 0, 0, 0))  # mode data, resources, layers
        planes = [arr[:, :, c] for c in range(channels)]
        if not rle:
            f.write(struct.pack(">H", 0))
            dtype = ">u2" if depth == 16 else "u1"
            for p in planes:
                f.write(p.astype(dtype).tobytes())
        else:
            f.write(struct.pack(">H", 1))
            rows = [packbits_literal(p[y].astype("u1").tobytes())
                    for p in planes for y in range(H)]
            f.write(b"".join(struct.pack(">H", len(r)) for r in rows))
            f.write(b"".join(rows))


def rgbe_of(arr):
    """Exact RGBE bytes: mantissas with a shared exponent per pixel."""
    m = arr[..., :3]
    e = arr[..., 3]
    out = np.concatenate([m, e[..., None]], axis=2).astype(np.uint8)
    val = m.astype(np.float64) * np.ldexp(1.0, e.astype(np.int64) - 136)[..., None]
    val[e == 0] = 0
    return out, val.astype(np.float32)


def write_hdr(path, rgbe, rle):
    h, w = rgbe.shape[:2]
    with open(path, "wb") as f:
        f.write(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y %d +X %d\n" % (h, w))
        for y in range(h):
            if not rle:
                f.write(rgbe[y].tobytes())
                continue
            f.write(bytes([2, 2, w >> 8, w & 255]))
            for c in range(4):
                comp = rgbe[y, :, c].tobytes()
                x = 0
                while x < w:
                    # A run when 3+ equal bytes follow, else literals.
                    run = 1
                    while x + run < w and run < 127 and comp[x + run] == comp[x]:
                        run += 1
                    if run >= 3:
                        f.write(bytes([128 + run, comp[x]]))
                        x += run
                    else:
                        n = min(128, w - x)
                        f.write(bytes([n]) + comp[x:x + n])
                        x += n


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    lines = []

    def p(name):
        return os.path.join(out, name)

    rgb = image(3)
    rgba = image(4)
    gray = image(1)[..., 0]

    Image.fromarray(rgb).save(p("rgb.png"))
    lines.append(row("rgb.png", rgb, 8))
    Image.fromarray(gray).save(p("png_named.jpg"), format="PNG")
    lines.append(row("png_named.jpg", gray[..., None], 8))

    Image.fromarray(rgb).save(p("rgb.bmp"))
    lines.append(row("rgb.bmp", rgb, 8))
    # 32-bit BI_RGB: the fourth byte is unused, so this reads as RGB.
    Image.fromarray(rgba).save(p("rgbx.bmp"))
    lines.append(row("rgbx.bmp", rgba[..., :3], 8))
    Image.fromarray(gray).save(p("gray.bmp"))  # 8-bit, gray-ramp palette
    lines.append(row("gray.bmp", gray[..., None], 8))

    Image.fromarray(rgb).save(p("rgb.tga"))
    lines.append(row("rgb.tga", rgb, 8))
    Image.fromarray(rgb).save(p("rgb_rle.tga"), compression="tga_rle")
    lines.append(row("rgb_rle.tga", rgb, 8))
    Image.fromarray(gray).save(p("gray.tga"))
    lines.append(row("gray.tga", gray[..., None], 8))
    Image.fromarray(rgba).save(p("rgba.tga"))
    lines.append(row("rgba.tga", rgba, 8))

    # GIF: an opaque palette image (RGB) and one with a transparent index
    # that some pixels use (RGBA, alpha 0 there).
    pal = rng.integers(0, 256, size=(256, 3)).astype(np.uint8)
    idx = (image(1)[..., 0]).astype(np.uint8)
    im = Image.fromarray(idx, mode="L").convert("P")
    im.putpalette(pal.reshape(-1).tolist())
    im.save(p("pal.gif"))
    lines.append(row("pal.gif", pal[idx], 8))
    clear = int(idx[3, 3])
    im.save(p("trans.gif"), transparency=clear)
    # A transparent pixel keeps its palette colour, with alpha 0.
    expect = np.concatenate([pal[idx], np.full((H, W, 1), 255, np.uint8)],
                            axis=2)
    expect[idx == clear, 3] = 0
    lines.append(row("trans.gif", expect, 8))

    write_psd(p("rgb8.psd"), rgb, 8)
    lines.append(row("rgb8.psd", rgb, 8))
    write_psd(p("rle8.psd"), rgb, 8, rle=True)
    lines.append(row("rle8.psd", rgb, 8))
    rgba16 = image(4, 65535, np.uint16)
    # Partial alpha would make stb un-matte the colour from white (what
    # Photoshop's merged image needs); keep alpha at its extremes.
    rgba16[..., 3] = np.where(rgba16[..., 3] % 2 == 0, 65535, 0)
    write_psd(p("rgba16.psd"), rgba16, 16)
    lines.append(row("rgba16.psd", rgba16, 16))

    raw = image(4)
    raw[..., 3] = 100 + raw[..., 3] % 60  # exponents 100..159
    raw[1, 1, 3] = 0  # a zero pixel
    wide = np.concatenate([raw, raw[:, :3]], axis=1)  # width 40: RLE allowed
    rgbe, val = rgbe_of(wide)
    write_hdr(p("rgbe.hdr"), rgbe, rle=True)
    lines.append(row("rgbe.hdr", val, 32))
    rgbe, val = rgbe_of(raw[:, :5])
    write_hdr(p("rgbe_flat.hdr"), rgbe, rle=False)
    lines.append(row("rgbe_flat.hdr", val, 32))

    write_pnm(p("rgb.ppm"), rgb, 255)
    lines.append(row("rgb.ppm", rgb, 8))
    write_pnm(p("gray.pgm"), gray, 255)
    lines.append(row("gray.pgm", gray[..., None], 8))
    g16 = image(1, 65535, np.uint16)[..., 0]
    write_pnm(p("gray16.pgm"), g16, 65535)
    lines.append(row("gray16.pgm", g16[..., None], 16))
    r1000 = image(3, 1000, np.uint16)
    write_pnm(p("rgb1000.ppm"), r1000, 1000)
    lines.append(row("rgb1000.ppm", r1000, 16))

    for name, kw, src in (("q90.jpg", {"quality": 90}, rgb),
                          ("progressive.jpg",
                           {"quality": 85, "progressive": True}, rgb),
                          ("gray.jpg", {"quality": 90}, gray)):
        Image.fromarray(src).save(p(name), **kw)
        with Image.open(p(name)) as im:
            dec = np.asarray(im)
        if dec.ndim == 2:
            dec = dec[..., None]
        lines.append(row(name, dec, 8, "jpeg"))

    # CMYK (Adobe, inverted as Photoshop writes it): TurboJPEG cannot make
    # RGB of it, so imgstat decodes it with stb_image, which multiplies out
    # R = (255 - C)(255 - K) / 255, and so does Pillow's convert("RGB").
    cmyk = image(4)
    Image.fromarray(cmyk, mode="CMYK").save(p("cmyk.jpg"), quality=90)
    with Image.open(p("cmyk.jpg")) as im:
        dec = np.asarray(im.convert("RGB"))
    lines.append(row("cmyk.jpg", dec, 8, "jpeg"))

    with open(p("reference.tsv"), "w") as f:
        f.write("# generated by tests/tools/make_formats.py; columns as in "
                "make_reference.py\n")
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
