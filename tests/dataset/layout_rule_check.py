#!/usr/bin/env python3
"""The JSON dataset record says why the pool has its layout.

Usage: layout_rule_check.py IMGSTAT TMPDIR

Writes mixed folders (subfolders; gray, RGB, RGBA, 16-bit gray, a corrupt
file) and checks the record's "layout_rule" and "layout_counts" against
the counts of each layout and depth computed here from what was written:
--as keep over a clear majority ("majority"), over a tie of two layouts
("tie": the pool has more channels), with --scale unit (depth null, every
depth one count), and --as rgb ("as": every image counted as RGB).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np
import png
from PIL import Image

imgstat, tmp = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(11)
ORDER = {"Y": 1, "YA": 2, "RGB": 3, "RGBA": 4}


def folder(name, kinds):
    """A folder of images of the kinds given (layout, depth), spread over
    two subfolders, and a corrupt file; the (layout, depth) of each."""
    d = os.path.join(tmp, name)
    for sub in ("a", "b/c"):
        os.makedirs(os.path.join(d, sub))
    for i, (layout, depth) in enumerate(kinds):
        path = os.path.join(d, ("a", "b/c")[i % 2], "im%02d.png" % i)
        if depth == 16:
            v = rng.integers(0, 65536, (4, 5), dtype=np.uint16)
            with open(path, "wb") as f:
                png.Writer(5, 4, greyscale=True, bitdepth=16).write(
                    f, v.tolist())
            continue
        shape = (4, 5) if layout == "Y" else (4, 5, ORDER[layout])
        mode = {"Y": "L", "RGB": "RGB", "RGBA": "RGBA"}[layout]
        Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8),
                        mode).save(path)
    with open(os.path.join(d, "b", "corrupt.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\nbroken")
    return d


def expected(kinds, unit):
    """layout_counts as docs/dataset.md orders them."""
    counts = {}
    for layout, depth in kinds:
        key = (ORDER[layout], None if unit else depth)
        counts[key] = counts.get(key, 0) + 1
    return [{"layout": layout, "depth": depth, "images": counts[(o, depth)]}
            for layout, o in sorted(ORDER.items(), key=lambda t: t[1])
            for depth in ((None,) if unit else (8, 16, 32))
            if (o, depth) in counts]


def record(*args):
    r = subprocess.run([imgstat, "--dataset-only", "--json"] + list(args),
                       capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["dataset"]
    except (ValueError, KeyError):
        checklib.fail("%s: exit %d, %r" % (" ".join(args), r.returncode,
                                           r.stderr))
        return {}


majority = [("RGB", 8)] * 4 + [("Y", 8)] * 2 + [("RGBA", 8), ("Y", 16)]
tie = [("Y", 8)] * 2 + [("RGB", 8)] * 2 + [("Y", 16)]
unit = [("Y", 8)] * 2 + [("Y", 16)] * 2 + [("RGB", 8)] * 3
for what, kinds, args, rule, layout, counts in (
        ("majority", majority, [], "majority", "RGB",
         expected(majority, False)),
        ("tie", tie, [], "tie", "RGB", expected(tie, False)),
        ("scale unit, keep", unit, ["--scale", "unit", "--as", "keep"],
         "majority", "Y", expected(unit, True)),
        ("as rgb", majority, ["--scale", "unit"], "as", "RGB",
         [{"layout": "RGB", "depth": None, "images": len(majority)}]),
        ("as gray", majority, ["--as", "gray"], "as", "Y",
         [{"layout": "Y", "depth": 8, "images": 7},
          {"layout": "Y", "depth": 16, "images": 1}]),
):
    d = folder(what.replace(" ", "_").replace(",", ""), kinds)
    ds = record(*(args + [d]))
    got = (ds.get("layout_rule"), ds.get("layout"), ds.get("layout_counts"))
    if got != (rule, layout, counts):
        checklib.fail("%s: %r, expected %r" % (what, got,
                                               (rule, layout, counts)))
    elif ds["failed"] != 1 or ds["images"] != len(kinds):
        checklib.fail("%s: images %d failed %d" % (what, ds["images"],
                                                   ds["failed"]))

checklib.finish("layout_rule_check")
