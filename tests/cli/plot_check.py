#!/usr/bin/env python3
"""--histogram-png plots a user can read.

Usage: plot_check.py IMGSTAT TMPDIR

  * a float image with one hot pixel: the default plot spans the robust
    range (0.1..99.9 percentiles), so the bars fill most of the panel's
    width (before: one bar at the left edge); the pixels beyond are counted
    at the edges;
  * --range applies to a single image (no "has no effect" warning, and the
    plot differs from the default one);
  * the title keeps the file name's case (abc.npy and ABC.npy draw
    different titles; before, every letter was a capital).
The bars are found in the PNG with Pillow: in the panel's bottom row, the
columns that are not background white.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np
from PIL import Image

imgstat, tmp = sys.argv[1], sys.argv[2]
MARGIN_L, PLOT_W, TOP, PLOT_H = 64, 768, 20 + 22, 160  # hist_plot.c


def run(*args):
    return checklib.run(imgstat, *args)


def bar_columns(png):
    a = np.asarray(Image.open(png).convert("RGB"))
    row = a[TOP + PLOT_H - 3, MARGIN_L + 2:MARGIN_L + PLOT_W - 2]
    return int((row.sum(axis=1) < 3 * 250).sum())


rng = np.random.default_rng(10)
img = rng.random((60, 80)).astype("<f4")
img[5, 7] = 1e6  # the hot pixel
hot = os.path.join(tmp, "hot.npy")
np.save(hot, img)

p = os.path.join(tmp, "p.png")
r = run("--histogram-png", p, hot)
cols = bar_columns(p) if r.returncode == 0 and os.path.exists(p) else 0
if cols < PLOT_W // 2:
    checklib.fail("hot pixel: bars over %d of %d columns (exit %d, %s)"
         % (cols, PLOT_W, r.returncode, r.stderr))

q = os.path.join(tmp, "q.png")
r = run("--histogram-png", q, "--range", "0,0.5", hot)
if r.returncode != 0 or "no effect" in r.stderr:
    checklib.fail("--range on one image: exit %d, %s" % (r.returncode, r.stderr))
elif np.array_equal(np.asarray(Image.open(p)), np.asarray(Image.open(q))):
    checklib.fail("--range 0,0.5 drew the same plot as the default")
elif bar_columns(q) < PLOT_W // 2:
    checklib.fail("--range 0,0.5: bars over %d columns" % bar_columns(q))

titles = []
for name in ("abc.npy", "ABC.npy"):
    f = os.path.join(tmp, name)
    np.save(f, img[:10, :10])
    out = os.path.join(tmp, "t-" + name + ".png")
    r = run("--histogram-png", out, f)
    if r.returncode != 0:
        checklib.fail("%s: exit %d %s" % (name, r.returncode, r.stderr))
        continue
    a = np.asarray(Image.open(out).convert("L"))
    # the title's first characters: the folder is the same, the name's case
    # is not; compare the whole title strip
    titles.append(a[:20, :])
if len(titles) == 2 and np.array_equal(titles[0], titles[1]):
    checklib.fail("abc.npy and ABC.npy draw the same title (letters as capitals)")

checklib.finish("plot_check")
