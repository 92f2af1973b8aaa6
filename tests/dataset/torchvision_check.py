#!/usr/bin/env python3
"""The README's dataset recipe against torchvision's numbers.

Usage: torchvision_check.py IMGSTAT TMPDIR

Writes a folder that mixes RGB, gray, gray+alpha, palette, palette with
transparency, RGBA, 16-bit gray and 16-bit RGB PNGs, runs
`imgstat --dataset-only --scale unit --json DIR` (no --as: the default) and
compares the pooled mean and std with what torchvision's ImageFolder gives:
Pillow's convert('RGB') of each image, ToTensor's x / 255, computed here in
float64 with numpy. Where Pillow cannot give torchvision's numbers exactly
(16-bit files: Pillow reads them as 8-bit or clips them), the expected
figure is imgstat's documented rule -- the 16-bit samples / 65535, gray
replicated -- over the samples read by pypng, an independent decoder; the
difference to Pillow's figures is printed. Also: the text output's
Normalize line carries the JSON's numbers, and with --as keep a left-out
file is named once.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np
import png
from PIL import Image

imgstat, tmp = sys.argv[1], sys.argv[2]
d = os.path.join(tmp, "mixed")
os.makedirs(d)
rng = np.random.default_rng(25)
def u8(*shape):
    return rng.integers(0, 256, shape, dtype=np.uint8)


files8 = []
for i in range(3):
    Image.fromarray(u8(12, 17, 3), "RGB").save(f"{d}/rgb{i}.png")
    files8.append(f"rgb{i}.png")
Image.fromarray(u8(9, 11), "L").save(f"{d}/gray.png")
Image.fromarray(u8(10, 8, 2), "LA").save(f"{d}/gray_alpha.png")
Image.fromarray(u8(7, 13, 4), "RGBA").save(f"{d}/rgba.png")
pal = Image.fromarray(rng.integers(0, 6, (11, 9), dtype=np.uint8), "P")
pal.putpalette([int(v) for v in u8(18)])
pal.save(f"{d}/palette.png")
palt = Image.fromarray(rng.integers(0, 4, (8, 8), dtype=np.uint8), "P")
palt.putpalette([int(v) for v in u8(12)])
palt.save(f"{d}/palette_trns.png", transparency=bytes([0, 128, 255, 7]))
files8 += ["gray.png", "gray_alpha.png", "rgba.png", "palette.png",
           "palette_trns.png"]
g16 = rng.integers(0, 65536, (6, 10), dtype=np.uint16)
png.Writer(10, 6, greyscale=True, bitdepth=16).write(
    open(f"{d}/gray16.png", "wb"), g16.tolist())
c16 = rng.integers(0, 65536, (5, 7 * 3), dtype=np.uint16)
png.Writer(7, 5, greyscale=False, bitdepth=16).write(
    open(f"{d}/rgb16.png", "wb"), c16.tolist())
files16 = ["gray16.png", "rgb16.png"]


def torchvision_pixels(name):
    """ImageFolder's default loader, then ToTensor, in float64: (N, 3)."""
    with Image.open(os.path.join(d, name)) as im:
        a = np.asarray(im.convert("RGB"), dtype=np.float64) / 255.0
    return a.reshape(-1, 3)


def imgstat_rule_16(name):
    """16-bit: samples / 65535, gray replicated (pypng's decoding)."""
    w, h, rows, info = png.Reader(os.path.join(d, name)).read()
    a = np.array([list(r) for r in rows], dtype=np.float64) / 65535.0
    planes = info["planes"]
    a = a.reshape(h, w, planes)
    if planes == 1:
        a = np.repeat(a, 3, axis=2)
    return a.reshape(-1, 3)


def pooled(parts):
    x = np.concatenate(parts)
    return x.shape[0], x.mean(axis=0), x.std(axis=0)


out = subprocess.run([imgstat, "--dataset-only", "--scale", "unit", "--json",
                      d], capture_output=True, text=True)
if out.returncode != 0:
    checklib.fail("imgstat exit %d: %s" % (out.returncode, out.stderr))
    sys.exit(1)
rec = json.loads(out.stdout.strip().split("\n")[-1])["dataset"]
n_all = len(files8) + len(files16)
if rec["images"] != n_all or rec["pooled"] != n_all or rec["excluded"]:
    checklib.fail("not every image pooled: %s of %s, excluded %s"
         % (rec["pooled"], rec["images"], rec["excluded"]))
if rec["as"] != "rgb" or rec["channels"] != 3:
    checklib.fail("--scale unit's default is not --as rgb: as=%s channels=%s"
         % (rec["as"], rec["channels"]))

tv = [torchvision_pixels(f) for f in files8]
exp_count, exp_mean, exp_std = pooled(tv + [imgstat_rule_16(f)
                                            for f in files16])
_, tv_mean, tv_std = pooled(tv + [torchvision_pixels(f) for f in files16])
got_mean = np.array([c["mean"] for c in rec["stats"]])
got_std = np.array([c["std"] for c in rec["stats"]])
if any(c["count"] != exp_count for c in rec["stats"]):
    checklib.fail("counts %s, expected %d" % ([c["count"] for c in rec["stats"]],
                                     exp_count))
for what, got, exp in (("mean", got_mean, exp_mean),
                       ("std", got_std, exp_std)):
    if not np.allclose(got, exp, rtol=1e-12, atol=0):
        checklib.fail("%s %s, expected %s" % (what, got.tolist(), exp.tolist()))

# only the 8-bit files: exactly torchvision's numbers
out8 = subprocess.run([imgstat, "--dataset-only", "--scale", "unit", "--json"]
                      + [os.path.join(d, f) for f in files8],
                      capture_output=True, text=True)
rec8 = json.loads(out8.stdout.strip().split("\n")[-1])["dataset"]
_, m8, s8 = pooled(tv)
if not (np.allclose([c["mean"] for c in rec8["stats"]], m8, rtol=1e-12) and
        np.allclose([c["std"] for c in rec8["stats"]], s8, rtol=1e-12)):
    checklib.fail("8-bit files: %s / %s, torchvision %s / %s"
         % ([c["mean"] for c in rec8["stats"]],
            [c["std"] for c in rec8["stats"]], m8.tolist(), s8.tolist()))

# the text output's Normalize line: the same numbers
txt = subprocess.run([imgstat, "--dataset-only", "--scale", "unit", d],
                     capture_output=True, text=True).stdout
m = re.search(r"Normalize\(mean=\[([^]]*)\], std=\[([^]]*)\]\)", txt)
if not m:
    checklib.fail("no Normalize line in the text output:\n" + txt)
elif not (np.allclose([float(v) for v in m.group(1).split(",")], got_mean,
                      rtol=1e-15) and
          np.allclose([float(v) for v in m.group(2).split(",")], got_std,
                      rtol=1e-15)):
    checklib.fail("Normalize line %s differs from the JSON" % m.group(0))

# --as keep: each left-out file named once in everything printed
keep = subprocess.run([imgstat, "--dataset-only", "--scale", "unit", "--as",
                       "keep", d], capture_output=True, text=True)
both = keep.stdout + keep.stderr
for f in files8 + files16:
    k = both.count(os.path.join(d, f) + ":")
    if k > 1:
        checklib.fail("--as keep: %s named %d times:\n%s" % (f, k, both))

print("imgstat  (--scale unit): mean %s std %s"
      % (np.round(got_mean, 6).tolist(), np.round(got_std, 6).tolist()))
print("torchvision (Pillow RGB): mean %s std %s"
      % (np.round(tv_mean, 6).tolist(), np.round(tv_std, 6).tolist()))
checklib.finish("torchvision_check")
