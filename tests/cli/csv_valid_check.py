#!/usr/bin/env python3
"""The valid samples' counts in CSV and --brief: nodata_count, mask_pixels
and the label rows, against numpy.

Usage: csv_valid_check.py IMGSTAT TMPDIR

An 8-bit RGB .npy with a nodata value, a mask and a label image (labels
1, 2 and 7). CSV: the header's columns (the old ones in their order, then
nodata_count, mask_pixels, label; "error" still last with
--errors-as-records), every row as long as the header; a channel's
nodata_count and the mask's pixels as numpy counts them; with --labels one
row per channel of each label after the image's, its label number, its
pixels in mask_pixels and its count, sum and min/max over the label's
samples less the nodata ones (numpy); the columns empty where there is
nothing to count. --brief: "nodata N N N", "mask P/W*H", "labels K".
"""
import csv
import io
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np

fail = checklib.fail
IMGSTAT, TMP = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(2)
OLD = ("file,width,height,channels,depth,backend,ddof,channel,count,min,max,"
       "min_x,min_y,max_x,max_y,sum,sum_sq,mean,std,nan_count,inf_count"
       ).split(",")
NEW = ["nodata_count", "mask_pixels", "label"]

img = rng.integers(0, 256, (23, 31, 3)).astype(np.uint8)
img[rng.random(img.shape) < 0.2] = 9  # the nodata value
p_img = os.path.join(TMP, "img.npy")
np.save(p_img, img)
mask = (rng.random(img.shape[:2]) < 0.4).astype(np.uint8)
p_mask = os.path.join(TMP, "mask.npy")
np.save(p_mask, mask)
lab = rng.choice(np.array([0, 1, 2, 7], np.uint8), img.shape[:2])
p_lab = os.path.join(TMP, "lab.npy")
np.save(p_lab, lab)


def csv_rows(*args):
    r = checklib.run(IMGSTAT, "--csv", *args)
    rows = list(csv.reader(io.StringIO(r.stdout)))
    if not rows:
        fail("--csv %s: no output (%s)" % (" ".join(args), r.stderr))
        return [], []
    head = rows[0]
    for row in rows[1:]:
        if len(row) != len(head):
            fail("--csv %s: a row of %d columns, the header %d" %
                 (" ".join(args), len(row), len(head)))
    return head, [dict(zip(head, row)) for row in rows[1:]]


# the header: the old columns in their order, the new ones after them
head, rows = csv_rows(p_img)
if head != OLD + NEW:
    fail("header %r" % head)
for row in rows:
    if row.get("nodata_count") or row.get("mask_pixels") or row.get("label"):
        fail("plain run: non-empty valid columns %r" % row)
head, _ = csv_rows("--errors-as-records", p_img,
                   os.path.join(TMP, "missing.png"))
if head[-1] != "error" or head[-4:-1] != NEW:
    fail("header with --errors-as-records %r" % head)

# nodata and a mask
head, rows = csv_rows("--nodata", "9", "--mask", p_mask, p_img)
inside = mask != 0
if len(rows) != 3:
    fail("nodata + mask: %d rows" % len(rows))
for c, row in enumerate(rows):
    plane = img[:, :, c]
    nod = int((inside & (plane == 9)).sum())
    if row["nodata_count"] != str(nod):
        fail("ch %d: nodata_count %r, numpy %d" % (c, row["nodata_count"], nod))
    if row["mask_pixels"] != str(int(inside.sum())):
        fail("ch %d: mask_pixels %r, numpy %d" % (c, row["mask_pixels"],
                                                 inside.sum()))
    if row["label"] != "":
        fail("ch %d: label %r on the image's row" % (c, row["label"]))
    if row["count"] != str(int((inside & (plane != 9)).sum())):
        fail("ch %d: count %r" % (c, row["count"]))

# labels: the image's rows, then each label's
head, rows = csv_rows("--nodata", "9", "--labels", p_lab, p_img)
want = [None] + [1, 2, 7]
if len(rows) != 3 * len(want):
    fail("labels: %d rows, want %d" % (len(rows), 3 * len(want)))
else:
    for k, label in enumerate(want):
        region = np.ones(lab.shape, bool) if label is None else lab == label
        for c in range(3):
            row = rows[3 * k + c]
            plane = img[:, :, c]
            vals = plane[region & (plane != 9)].astype(np.int64)
            got = (row["label"], row["mask_pixels"], row["nodata_count"],
                   row["count"], row["sum"], row["min"], row["max"])
            exp = ("" if label is None else str(label),
                   "" if label is None else str(int(region.sum())),
                   str(int((region & (plane == 9)).sum())), str(vals.size),
                   str(int(vals.sum())), str(int(vals.min())),
                   str(int(vals.max())))
            if got != exp:
                fail("label %r ch %d: %r, numpy %r" % (label, c, got, exp))

# --brief: the counts on the line
r = checklib.run(IMGSTAT, "--brief", "--nodata", "9", "--mask", p_mask, p_img)
nods = " ".join(str(int((inside & (img[:, :, c] == 9)).sum()))
                for c in range(3))
want = "nodata %s  mask %d/%d" % (nods, inside.sum(), mask.size)
if want not in r.stdout:
    fail("--brief: %r lacks %r" % (r.stdout, want))
r = checklib.run(IMGSTAT, "--brief", "--labels", p_lab, p_img)
if "labels 3" not in r.stdout:
    fail("--brief --labels: %r" % r.stdout)
r = checklib.run(IMGSTAT, "--brief", p_img)
if "nodata" in r.stdout or "mask" in r.stdout or "labels" in r.stdout:
    fail("--brief plain: %r" % r.stdout)

checklib.finish("csv_valid")
