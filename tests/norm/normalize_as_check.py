#!/usr/bin/env python3
"""normalize checks the numbers it is given, converts layouts with --as and
says what happened.

Usage: normalize_as_check.py IMGSTAT TMPDIR

  * --mean/--std counts that do not match an image's channels are an error
    naming the file (gray with 3 values under --as keep, RGB with 4),
    nothing written;
  * --as rgb --scale unit --mean/--std --layout chw gives, for gray, gray +
    alpha, palette and RGBA PNGs, torchvision's tensor: (3, H, W) of
    (Pillow convert('RGB') / 255 - mean) / std, computed here with numpy;
  * normalize --dataset --as keep on a mixed folder pools the layout most
    images have, names the refused files (at most 5) and their count,
    suggests --as, writes nothing; with --as rgb it runs;
  * a run prints one summary line "N written to OUT, F failed, T s" on
    stderr, and nothing with -q.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np
from PIL import Image

imgstat, tmp = sys.argv[1], sys.argv[2]
d = os.path.join(tmp, "in")
os.makedirs(d)
rng = np.random.default_rng(7)
def run(*args):
    return checklib.run(imgstat, *args)


def u8(*shape):
    return rng.integers(0, 256, shape, dtype=np.uint8)


Image.fromarray(u8(9, 11), "L").save(f"{d}/gray.png")
Image.fromarray(u8(10, 8, 2), "LA").save(f"{d}/gray_alpha.png")
Image.fromarray(u8(7, 13, 4), "RGBA").save(f"{d}/rgba.png")
Image.fromarray(u8(6, 5, 3), "RGB").save(f"{d}/rgb.png")
for k in range(6):  # more RGB files than gray ones, more gray than named
    Image.fromarray(u8(4, 4, 3), "RGB").save(f"{d}/rgb_more{k}.png")
    Image.fromarray(u8(5, 4), "L").save(f"{d}/gray_more{k}.png")
pal = Image.fromarray(rng.integers(0, 6, (11, 9), dtype=np.uint8), "P")
pal.putpalette([int(v) for v in u8(18)])
pal.save(f"{d}/palette.png")
names = sorted(os.listdir(d))

mean = [0.485, 0.456, 0.406]
std = [0.229, 0.224, 0.225]
ms = ["--scale", "unit", "--mean", ",".join(map(str, mean)),
      "--std", ",".join(map(str, std))]

# counts that do not match
for f, m, s in (("gray.png", "0.5,0.5,0.5", "0.2,0.2,0.2"),
                ("rgb.png", "0.5,0.5,0.5,0.5", "0.2,0.2,0.2,0.2")):
    out = os.path.join(tmp, "bad.npy")
    r = run("normalize", "--as", "keep", "--scale", "unit", "--mean", m,
            "--std", s, os.path.join(d, f), "-o", out)
    if r.returncode != 1 or os.path.join(d, f) not in r.stderr or \
            "--mean/--std values" not in r.stderr or os.path.exists(out):
        checklib.fail("%s with %s: exit %d, stderr %r, written %s"
             % (f, m, r.returncode, r.stderr, os.path.exists(out)))

# --as rgb: torchvision's tensors
o = os.path.join(tmp, "tensors")
r = run("normalize", "--as", "rgb", "--layout", "chw", *ms, d, "-o", o)
if r.returncode != 0:
    checklib.fail("--as rgb: exit %d: %s" % (r.returncode, r.stderr))
for f in names:
    with Image.open(os.path.join(d, f)) as im:
        x = np.asarray(im.convert("RGB"), dtype=np.float64) / 255.0
    want = ((x - mean) / std).transpose(2, 0, 1)
    p = os.path.join(o, f[:-4] + ".npy")
    got = np.load(p) if os.path.exists(p) else None
    if got is None or got.shape != want.shape or \
            not np.allclose(got, want, rtol=0, atol=2e-6):
        checklib.fail("--as rgb %s: %s, torchvision %s" % (
            f, None if got is None else got.shape, want.shape))

# the summary line, and -q
m = re.search(r"^imgstat: (\d+) written to (.*), (\d+) failed, [0-9.]+ s$",
              r.stderr, re.M)
if not m or int(m.group(1)) != len(names) or m.group(2) != o or \
        m.group(3) != "0":
    checklib.fail("no summary line '%d written to %s, 0 failed, T s': %r"
         % (len(names), o, r.stderr))
r = run("normalize", "-q", "--as", "rgb", *ms, d, "-o",
        os.path.join(tmp, "quiet"))
if r.returncode != 0 or r.stderr:
    checklib.fail("-q: exit %d, stderr %r" % (r.returncode, r.stderr))

# --dataset on a mixed folder: the layout most images have (RGB, the
# palette one too) pools; the refused files named, --as suggested
o2 = os.path.join(tmp, "ds")
r = run("normalize", "zscore", "--dataset", "--scale", "unit", "--as",
        "keep", d, "-o", o2)
named = [f for f in names if os.path.join(d, f) + ":" in r.stderr]
if r.returncode != 1 or not 1 <= len(named) <= 5 or "--as" not in r.stderr \
        or not re.search(r"\b%d of %d inputs refused" % (
        len([f for f in names if f.startswith("gray") or f == "rgba.png"]),
        len(names)),
                         r.stderr) or os.path.exists(o2):
    checklib.fail("--dataset mixed: exit %d, named %s, stderr %r"
         % (r.returncode, named, r.stderr))
r = run("normalize", "zscore", "--dataset", "--as", "rgb", "--scale", "unit",
        d, "-o", o2)
if r.returncode != 0:
    checklib.fail("--dataset --as rgb: exit %d: %s" % (r.returncode, r.stderr))

checklib.finish("normalize_as_check")
