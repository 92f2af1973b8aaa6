#!/usr/bin/env python3
"""The dataset record's text on a real-looking folder, and a FITS input's
header line.

Usage: dataset_text_check.py IMGSTAT TMPDIR

Writes a folder in subfolders: RGB photos-to-be of one size, gray ones, an
RGBA one, a 16-bit gray one, a constant one and two of another size. The
expected counts of each kind (converted, layout, depth, size, constant) are
counted here from what was written. Checks that the text says each kind once
with its count, lists at most 10 images by name and then how many more, puts
the pooled table and the Normalize line after them (the Normalize line last,
a 16-bit note just before it) and that --json still lists every one. Then a
FITS file written here by hand: its text header says the rows are as stored,
a PNG's does not, and the JSON has no new key.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np
import png
from PIL import Image

imgstat, tmp = sys.argv[1], sys.argv[2]
LISTED = 10  # the most images the text names in each list
rng = np.random.default_rng(37)
ds = os.path.join(tmp, "ds")
files = []  # (path, layout, depth, size, constant)


def put(sub, name, a, layout, depth=8, constant=False):
    os.makedirs(os.path.join(ds, sub), exist_ok=True)
    path = os.path.join(ds, sub, name)
    if a.dtype == np.uint16:
        png.Writer(a.shape[1], a.shape[0], greyscale=True, bitdepth=16).write(
            open(path, "wb"), a.tolist())
    else:
        Image.fromarray(a).save(path)
    files.append((path, layout, depth, a.shape[:2], constant))


def noise(*shape):
    return rng.integers(40, 216, shape, dtype=np.uint8)


for i in range(40):
    put("a_rgb", "r%02d.png" % i, noise(16, 16, 3), "RGB")
for i in range(14):
    put("b_gray", "g%02d.png" % i, noise(16, 16), "Y")
put("c_other", "rgba.png", noise(16, 16, 4), "RGBA")
put("c_other", "deep.png", noise(16, 16).astype(np.uint16) * 257, "Y", depth=16)
put("c_other", "flat.png", np.full((16, 16, 3), 128, np.uint8), "RGB", constant=True)
for i in range(2):
    put("d_small", "s%d.png" % i, noise(8, 8, 3), "RGB")

n = len(files)
converted = [f for f in files if f[1] != "RGB"]
layout_odd = converted  # most images are RGB
depth_odd = [f for f in files if f[2] != 8]
size_odd = [f for f in files if f[3] != (16, 16)]
const = [f for f in files if f[4]]
flagged = {f[0] for f in layout_odd + depth_odd + size_odd + const}


def plural(k, what):
    return "%d %s%s" % (k, what, "" if k == 1 else "s")


# --outlier-z 1000: no z-score outliers among these noise images
r = checklib.run(imgstat, "--dataset-only", "--scale", "unit", "--outlier-z", "1000", ds)
lines = r.stdout.splitlines()
if r.returncode != 0:
    checklib.fail("--dataset-only --scale unit: exit %d: %s" % (r.returncode, r.stderr))
want = [
    "%s converted from Y/RGBA to RGB (as=rgb)" % plural(len(converted), "image"),
    "%s: layout differs from most images'" % plural(len(layout_odd), "outlier"),
    "%s: depth differs from most images'" % plural(len(depth_odd), "outlier"),
    "%s: size differs from most images'" % plural(len(size_odd), "outlier"),
    "%s: constant" % plural(len(const), "outlier"),
    "... and %d more outliers; --json lists all" % (len(flagged) - LISTED),
]
for w in want:
    if lines.count(w) != 1:
        checklib.fail("want the line %r once in:\n%s" % (w, r.stdout))
named = [l for l in lines if l.startswith("outlier: ")]
if len(named) != LISTED:
    checklib.fail("%d outliers named in the text, want %d" % (len(named), LISTED))
# the images flagged for more than their layout are named first
for f in depth_odd + size_odd + const:
    if not any(l.startswith("outlier: " + f[0] + ": ") for l in named):
        checklib.fail("%s is not among the outliers named" % f[0])
head = [i for i, l in enumerate(lines) if l.startswith("channel ")]
last_note = max([i for i, l in enumerate(lines)
                 if l.startswith(("outlier", "left out", "... and"))] or [-1])
if not head or head[0] < last_note:
    checklib.fail("the pooled table does not follow the outliers:\n" + r.stdout)
if not lines or not lines[-1].startswith("Normalize(mean=["):
    checklib.fail("the Normalize line is not the last line:\n" + r.stdout)
elif not lines[-2].startswith("note: %s pooled, scaled by 65535"
                              % plural(len(depth_odd), "16-bit image")):
    checklib.fail("no 16-bit note before the Normalize line:\n" + r.stdout)

# --json lists them all
r = checklib.run(imgstat, "--dataset-only", "--json", "--scale", "unit", "--outlier-z", "1000", ds)
rec = json.loads(r.stdout)["dataset"] if r.returncode == 0 else {}
if sorted(o["file"] for o in rec.get("outliers", [])) != sorted(flagged):
    checklib.fail("--json: outliers %r, want %r" % (rec.get("outliers"), sorted(flagged)))
if rec.get("depths") != [8, 16]:
    checklib.fail("--json: depths %r, want [8, 16]" % rec.get("depths"))
if not rec.get("depth_note", "").startswith(
        "%s pooled, scaled by 65535" % plural(len(depth_odd), "16-bit image")):
    checklib.fail("--json: depth_note %r" % rec.get("depth_note"))

# the images left out: --as keep, no --scale: the RGB 8-bit pool
r = checklib.run(imgstat, "--dataset-only", "--as", "keep", "--outlier-z", "1000", ds)
lines = r.stdout.splitlines()
left = [f for f in files if f[1] != "RGB" or f[2] != 8]
want = [
    "%s left out: layout differs from the pool's" % plural(len(left), "image"),
    "%s left out: depth differs from the pool's" % plural(len(depth_odd), "image"),
    "... and %d more images left out; --json lists all" % (len(left) - LISTED),
]
for w in want:
    if lines.count(w) != 1:
        checklib.fail("--as keep: want the line %r once in:\n%s" % (w, r.stdout))
if len([l for l in lines if l.startswith("left out: ")]) != LISTED:
    checklib.fail("--as keep: not %d images left out named:\n%s" % (LISTED, r.stdout))
if any(l.startswith("note: ") for l in lines):
    checklib.fail("--as keep: a 16-bit note though no 16-bit image was pooled")
r = checklib.run(imgstat, "--dataset-only", "--json", "--as", "keep", "--outlier-z", "1000", ds)
rec = json.loads(r.stdout)["dataset"] if r.returncode == 0 else {}
if "depth_note" in rec:
    checklib.fail("--as keep --json: a depth_note though no 16-bit image was pooled")
if sorted(o["file"] for o in rec.get("excluded", [])) != sorted(f[0] for f in left):
    checklib.fail("--as keep --json: excluded %r" % rec.get("excluded"))

# ---- FITS: the rows as stored -----------------------------------------------
w, h = 5, 3
data = np.full((h, w), 100, np.uint8)
data[0, 2] = 7  # the first row stored: FITS j = 1, imgstat's y = 0
cards = ["SIMPLE  = %20s" % "T", "BITPIX  = %20d" % 8, "NAXIS   = %20d" % 2,
         "NAXIS1  = %20d" % w, "NAXIS2  = %20d" % h, "END"]
hdr = "".join(c.ljust(80) for c in cards).ljust(2880).encode("ascii")
body = data.tobytes()
fits = os.path.join(tmp, "rows.fits")
with open(fits, "wb") as f:
    f.write(hdr + body + b"\0" * (-len(body) % 2880))
Image.fromarray(data).save(os.path.join(tmp, "rows.png"))
keys = {}
for name, noted in (("rows.fits", True), ("rows.png", False)):
    path = os.path.join(tmp, name)
    r = checklib.run(imgstat, path)
    first = r.stdout.splitlines()[0] if r.stdout else ""
    has = first.endswith("(FITS: rows as stored, row 0 first; DS9 shows y flipped)")
    if r.returncode != 0 or has != noted:
        checklib.fail("%s: header line %r (exit %d)" % (name, first, r.returncode))
    if not re.search(r"(^|\s)2,0(\s|$)", r.stdout, re.M):
        checklib.fail("%s: min not at (2, 0), the first row stored:\n%s" % (name, r.stdout))
    r = checklib.run(imgstat, "--json", path)
    keys[name] = sorted(json.loads(r.stdout)) if r.returncode == 0 else None
if keys["rows.fits"] != keys["rows.png"]:
    checklib.fail("JSON keys: FITS %r, PNG %r" % (keys["rows.fits"], keys["rows.png"]))

checklib.finish("dataset_text_check")
