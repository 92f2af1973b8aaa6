#!/usr/bin/env python3
"""Reference statistics for the loader tests, computed without imgstat.

    make_reference.py pngsuite DIR OUT.tsv   # PngSuite, decoded with pypng
    make_reference.py corpus DIR OUT.tsv     # ../shared/corpus photos + hdr

Every PNG is decoded with pypng's raw reader (png.Reader.read), and the
contract's rules are applied here, by hand: palette indices are looked up
(RGBA when the palette has tRNS alpha), gray at 1/2/4 bits is scaled to
0..255, 16-bit samples stay 16-bit, nothing else is touched (no sBIT, gAMA,
bKGD). tRNS on gray/RGB adds an alpha channel: 0 where the stored sample(s)
equal its value, the depth's maximum elsewhere (libpng's tRNS-to-alpha). PNM and Radiance HDR are parsed here
with numpy (HDR: new-style RLE and the old (pre-1991) coding, value
m * 2^(e - 136) as stb_image computes it); BMP and JPEG go through Pillow. Files pypng or the parsers reject, and
PngSuite's x*.png, are written as invalid.

One line per file, tab-separated:
    name  ok  width  height  channels  depth  check  then per channel
    min  max  sum  sumsq
or  name  invalid  reason
check is "exact" (integers must match; floats: min/max exact, sums to 1e-9
relative) or "jpeg" (decoders differ: mean within 1, min/max within 8).
"""
import os
import sys

import numpy as np
import png
from PIL import Image


def png_planes(path):
    reader = png.Reader(filename=path)
    width, height, rows, info = reader.read()
    data = np.array([np.asarray(r, dtype=np.int64) for r in rows],
                    dtype=np.int64).reshape(height, -1)
    bitdepth = info["bitdepth"]
    if reader.color_type == 3:  # PLTE on truecolor is only a suggestion
        pal = np.array(reader.palette(alpha="natural"), dtype=np.int64)
        if data.max(initial=0) >= len(pal):
            raise ValueError("palette index out of range")
        pix = pal[data.reshape(-1)]  # (n, 3 or 4)
        return width, height, pix.shape[1], 8, pix
    planes = info["planes"]
    pix = data.reshape(-1, planes)
    key = info.get("transparent")
    if info["greyscale"] and bitdepth < 8:
        pix = pix * 255 // ((1 << bitdepth) - 1)
        if key is not None:
            key = np.asarray(key) * 255 // ((1 << bitdepth) - 1)
    if key is not None and not info["alpha"]:
        top = 65535 if bitdepth == 16 else 255
        hit = np.all(pix == np.asarray(key).reshape(1, -1), axis=1)
        pix = np.concatenate([pix, np.where(hit, 0, top)[:, None]], axis=1)
        planes += 1
    return width, height, planes, 16 if bitdepth == 16 else 8, pix


def pnm_planes(path):
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:2] not in (b"P5", b"P6"):
        raise ValueError("not P5/P6")
    fields, i = [], 2
    while len(fields) < 3:
        while buf[i:i + 1].isspace():
            i += 1
        if buf[i:i + 1] == b"#":
            while buf[i:i + 1] not in (b"\n", b"\r"):
                i += 1
            continue
        j = i
        while buf[j:j + 1].isdigit():
            j += 1
        fields.append(int(buf[i:j]))
        i = j
    i += 1  # the single whitespace byte before the samples
    width, height, maxval = fields
    channels = 3 if buf[1:2] == b"6" else 1
    dtype = ">u2" if maxval > 255 else "u1"
    count = width * height * channels
    pix = np.frombuffer(buf, dtype=dtype, count=count, offset=i)
    return (width, height, channels, 16 if maxval > 255 else 8,
            pix.astype(np.int64).reshape(-1, channels))


def hdr_planes(path):
    with open(path, "rb") as f:
        buf = f.read()
    pos = buf.index(b"\n\n") + 2
    end = buf.index(b"\n", pos)
    dims = buf[pos:end].split()
    if dims[0] != b"-Y" or dims[2] != b"+X":
        raise ValueError("unsupported HDR orientation")
    height, width = int(dims[1]), int(dims[3])
    pos = end + 1
    rgbe = np.zeros((height, width, 4), dtype=np.uint8)
    # Each scanline as Radiance's freadcolrs reads it: run-length coded
    # (1991) when its width allows and it starts 2, 2, W; else flat pixels
    # in the old coding, where (1, 1, 1, n) repeats the pixel before it n
    # times (n << 8 after one such pixel, n << 16 after two, ...).
    rle_width = 8 <= width < 32768
    for y in range(height):
        if pos + 4 > len(buf):
            raise ValueError("truncated")
        if rle_width and buf[pos] == 2 and buf[pos + 1] == 2 \
                and not buf[pos + 2] & 0x80:
            if (buf[pos + 2] << 8 | buf[pos + 3]) != width:
                raise ValueError("bad scanline width")
            pos += 4
            for c in range(4):
                x = 0
                while x < width:
                    count = buf[pos]
                    pos += 1
                    run = count > 128
                    if run:
                        count -= 128
                    if count > width - x:
                        raise ValueError("bad RLE data")
                    if run:
                        rgbe[y, x:x + count, c] = buf[pos]
                        pos += 1
                    else:
                        if pos + count > len(buf):
                            raise ValueError("truncated")
                        rgbe[y, x:x + count, c] = np.frombuffer(
                            buf, dtype=np.uint8, count=count, offset=pos)
                        pos += count
                    x += count
            continue
        x = shift = 0
        while x < width:
            if pos + 4 > len(buf):
                raise ValueError("truncated")
            px = buf[pos:pos + 4]
            pos += 4
            if px[:3] == b"\x01\x01\x01":
                if x == 0 and y == 0:
                    raise ValueError("run before any pixel")
                prev = rgbe[y, x - 1] if x else rgbe[y - 1, width - 1]
                n = px[3] << shift
                if n > width - x:
                    raise ValueError("run past the scanline")
                rgbe[y, x:x + n] = prev
                x += n
                shift += 8
            else:
                rgbe[y, x] = np.frombuffer(px, dtype=np.uint8)
                x += 1
                shift = 0
    m = rgbe[..., :3].astype(np.float64)
    e = rgbe[..., 3].astype(np.int64)
    scale = np.where(e == 0, 0.0, np.ldexp(1.0, e - 136))
    pix = (m * scale[..., None]).astype(np.float32).reshape(-1, 3)
    return width, height, 3, 32, pix


def pil_planes(path):
    with Image.open(path) as im:
        im.load()
        if im.mode not in ("L", "RGB", "RGBA"):
            raise ValueError("unexpected PIL mode " + im.mode)
        pix = np.asarray(im, dtype=np.int64)
        channels = {"L": 1, "RGB": 3, "RGBA": 4}[im.mode]
        return im.width, im.height, channels, 8, pix.reshape(-1, channels)


def stats_fields(pix, depth):
    out = []
    for c in range(pix.shape[1]):
        v = pix[:, c]
        if depth == 32:
            v = v.astype(np.float64)
            out += [repr(float(v.min())), repr(float(v.max())),
                    repr(float(np.sum(v))), repr(float(np.sum(v * v)))]
        else:
            v = [int(x) for x in v]
            out += [str(min(v)), str(max(v)), str(sum(v)),
                    str(sum(x * x for x in v))]
    return out


def line(name, decode, check="exact"):
    try:
        width, height, channels, depth, pix = decode()
    except Exception as e:  # noqa: BLE001 -- any rejection is "invalid"
        return "\t".join([name, "invalid", str(e).replace("\t", " ")])
    head = [name, "ok", str(width), str(height), str(channels), str(depth),
            check]
    return "\t".join(head + stats_fields(pix, depth))


def pngsuite(folder):
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".png"):
            continue
        path = os.path.join(folder, name)
        if name.startswith("x"):  # corrupt by the suite's own naming
            yield "\t".join([name, "invalid", "corrupt by PngSuite naming"])
        else:
            yield line(name, lambda p=path: png_planes(p))


def corpus(folder):
    for sub in ("photos", "hdr"):
        d = os.path.join(folder, sub)
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            ext = name.rsplit(".", 1)[-1].lower()
            rel = sub + "/" + name
            if ext == "png":
                yield line(rel, lambda p=path: png_planes(p))
            elif ext in ("ppm", "pgm"):
                yield line(rel, lambda p=path: pnm_planes(p))
            elif ext == "hdr":
                yield line(rel, lambda p=path: hdr_planes(p))
            elif ext == "bmp":
                yield line(rel, lambda p=path: pil_planes(p))
            elif ext in ("jpg", "jpeg"):
                yield line(rel, lambda p=path: pil_planes(p), "jpeg")


def main():
    kind, folder, out = sys.argv[1:4]
    lines = list({"pngsuite": pngsuite, "corpus": corpus}[kind](folder))
    with open(out, "w") as f:
        f.write("# generated by tests/tools/make_reference.py %s; "
                "see that script for the columns\n" % kind)
        for entry in lines:
            f.write(entry + "\n")


if __name__ == "__main__":
    main()
