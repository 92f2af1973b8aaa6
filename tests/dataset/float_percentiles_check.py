#!/usr/bin/env python3
"""Exact dataset percentiles of float images (imgstat --dataset --histogram
and normalize clip --dataset) against numpy's order statistic by the rank
rule of docs/normalize.md: over the N finite samples of a pooled channel,
percentile p is the k-th smallest, k = max(1, ceil(p N / 100)).

Usage: float_percentiles_check.py IMGSTAT TMPDIR

Writes float folders here (.npy by numpy, PFM byte by byte, one-channel
float TIFF by PIL): ties, negative values, NaN and +-inf (counted apart),
three channels, and most samples clustered in one bin of the common range
(one huge value stretches it), so that the bin alone cannot give the value.
Then: --as rgb of gray and RGB images; --range narrower than the samples
(clamped into the end bins); an input read only once (a pipe) and a memory
limit too small for the bins' samples, where the percentiles stay within
one bin and histogram_note says why; normalize clip --dataset on floats.
"""
import glob
import json
import math
import os
import subprocess
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib
import checklib  # noqa: E402

IMGSTAT, TMP = sys.argv[1:3]
IMGSTAT = os.path.abspath(IMGSTAT)
PCTS = [0, 0.5, 1, 25, 100 / 3, 75, 99, 99.5, 100]
PCT_ARG = "0,0.5,1,25,33.333333,75,99,99.5,100"

check = checklib.check


def p(*parts):
    return os.path.join(TMP, *parts)


def run(*args, rc=0, stdin=None):
    r = subprocess.run([IMGSTAT, *args], capture_output=True, stdin=stdin)
    check(r.returncode == rc, "%s: exit %d, want %d; stderr %s"
          % (" ".join(args), r.returncode, rc, r.stderr.decode()))
    return r


def write_pfm(path, a):
    """a: (H, W) or (H, W, 3) float32; rows stored bottom to top."""
    a = np.asarray(a, np.float32)
    tag = b"Pf" if a.ndim == 2 else b"PF"
    with open(path, "wb") as f:
        f.write(b"%s\n%d %d\n-1.0\n" % (tag, a.shape[1], a.shape[0]))
        f.write(a[::-1].astype("<f4").tobytes())


rank_value = checklib.rank_value


def dataset(folder, *extra, stdin=None, rc=0):
    r = run("--dataset-only", "--histogram", "--json", "--percentiles",
            PCT_ARG, *extra, *folder, stdin=stdin, rc=rc)
    return json.loads(r.stdout)["dataset"]


def exact(js, pooled, what):
    """Every channel's median and percentiles equal numpy's."""
    check(js.get("channels") == pooled.shape[1], "%s: channels %r"
          % (what, js.get("channels")))
    check("histogram_note" not in js, "%s: note %r"
          % (what, js.get("histogram_note")))
    for c in range(pooled.shape[1]):
        st = js["stats"][c]
        x = pooled[:, c]
        check(st.get("median") == rank_value(x, 50),
              "%s channel %d: median %r, numpy %r"
              % (what, c, st.get("median"), rank_value(x, 50)))
        got = st.get("percentiles", {})
        want = [rank_value(x, q) for q in PCTS]
        check(all(math.copysign(1, v) > 0 for v in got.values() if v == 0),
              "%s channel %d: a zero percentile is 0, not -0" % (what, c))
        check(list(got.values()) == want,
              "%s channel %d: percentiles %r, numpy %r"
              % (what, c, list(got.values()), want))
        check(st.get("nan_count") == int(np.isnan(x).sum()) and
              st.get("inf_count") == int(np.isinf(x).sum()),
              "%s channel %d: NaN and inf counted apart" % (what, c))


rng = np.random.default_rng(36)

# ---- three channels, .npy and PFM: ties, negatives, NaN/inf, clustered
os.makedirs(p("rgb", "sub"))
images = []
for i in range(7):
    h, w = 20 + i, 17 + 2 * i
    a = rng.normal(0, 1, (h, w, 3)).astype(np.float32)
    a[:, :, 1] = np.round(a[:, :, 1] * 4) / 4  # many ties
    a[:, :, 2] = -np.abs(a[:, :, 2]) * 1e-3  # negative, close together
    if i == 0:
        a[0, 0, 0] = 1e7  # the common range is huge: the rest in a bin or two
    a[1, 2, 2] = np.nan
    a[3, 1, 0] = np.inf
    a[2, 3, 1] = -np.inf
    if i % 2:
        np.save(p("rgb", "sub", "f%d.npy" % i), a)
    else:
        write_pfm(p("rgb", "f%d.pfm" % i), a)
    images.append(a.reshape(-1, 3))
pooled = np.concatenate(images)
exact(dataset([p("rgb")]), pooled, "RGB npy+pfm")
check(np.unique(pooled[:, 0][np.isfinite(pooled[:, 0])]).size > 100 and
      (np.abs(pooled[:, 0]) < 10).mean() > 0.99,
      "the test's premise: channel R's samples clustered in the range")
# the same through several workers and one
exact(dataset([p("rgb")], "-j", "1"), pooled, "RGB -j 1")
exact(dataset([p("rgb")], "-j", "3"), pooled, "RGB -j 3")

# ---- --sample: the second read goes over the sampled inputs only (the
# files the per-image records name), so the values stay exact
r = run("--dataset", "--histogram", "--json", "--percentiles", PCT_ARG,
        "--sample", "4", "--seed", "3", p("rgb"))
lines = [json.loads(t) for t in r.stdout.splitlines() if t.strip()]
files = [d["file"] for d in lines if "file" in d]
ds = [d["dataset"] for d in lines if "dataset" in d]
check(len(files) == 4 and len(ds) == 1, "--sample 4: %d records" % len(files))
if len(files) == 4 and len(ds) == 1:
    by_name = {}
    for i in range(7):
        sub = ("sub", "f%d.npy" % i) if i % 2 else ("f%d.pfm" % i,)
        by_name[os.path.realpath(p("rgb", *sub))] = images[i]
    picked = np.concatenate([by_name[os.path.realpath(f)] for f in files])
    exact(ds[0], picked, "--sample 4 --seed 3")


# ---- gray: float TIFF (PIL), Pf and 2-D .npy; with --as rgb beside RGB
os.makedirs(p("gray"))
grays = []
for i in range(4):
    g = (rng.integers(-50, 50, (15, 12)) / 8).astype(np.float32)  # ties
    g[0, i] = 1e-30 * (i + 1)  # tiny distinct values near 0
    if i == 0:
        Image.fromarray(g, mode="F").save(p("gray", "g0.tif"))
    elif i == 1:
        write_pfm(p("gray", "g1.pfm"), g)
    else:
        np.save(p("gray", "g%d.npy" % i), g)
    grays.append(g.reshape(-1, 1))
exact(dataset([p("gray")]), np.concatenate(grays), "gray tif+pfm+npy")
mix = np.concatenate([np.repeat(g, 3, 1) for g in grays] + images)
exact(dataset([p("gray"), p("rgb")], "--as", "rgb"), mix, "--as rgb")

# ---- --range narrower than the samples: they are clamped into the end
# bins, and the order statistic is still the sample's
exact(dataset([p("rgb")], "--range", "-0.5,0.5"), pooled, "--range -0.5,0.5")

# ---- an input that can be read only once: within one bin, with a note
pipe_img = rng.normal(0, 1, (9, 8)).astype(np.float32)
write_pfm(p("pipe.pfm"), pipe_img)
with open(p("pipe.pfm"), "rb") as f:
    data = f.read()
r = subprocess.run([IMGSTAT, "--dataset-only", "--histogram", "--json",
                    "--range", "-8,8", "--percentiles", "10,90",
                    p("gray"), "/dev/stdin"],
                   input=data, capture_output=True)
check(r.returncode == 0, "pipe: exit %d %s" % (r.returncode, r.stderr))
js = json.loads(r.stdout)["dataset"]
note = js.get("histogram_note", "")
check("within one bin" in note and "read only once" in note,
      "pipe: histogram_note %r" % note)
allg = np.concatenate(grays + [pipe_img.reshape(-1, 1)])[:, 0]
width = 16 / 65536
for q, got in js["stats"][0].get("percentiles", {}).items():
    want = rank_value(allg, float(q))
    check(abs(got - want) <= width * 1.0000001,
          "pipe: p%s %r within one bin of %r" % (q, got, want))

# ---- the bins' samples over the memory limit: within one bin, a note
os.makedirs(p("many"))
many = []
for i in range(12):
    m = (1 + rng.random((40, 40)) * 1e-5).astype(np.float32)  # one bin
    m[0, 0] = 0 if i == 0 else 1
    m[0, 1] = 2 if i == 0 else 1
    np.save(p("many", "m%02d.npy" % i), m)
    many.append(m.reshape(-1, 1))
js = dataset([p("many")], "--max-memory", "32K")
note = js.get("histogram_note", "")
check("within one bin" in note and "memory limit" in note,
      "--max-memory 32K: histogram_note %r" % note)
exact(dataset([p("many")]), np.concatenate(many), "one bin, enough memory")

# ---- normalize clip --dataset: the plan's two percentiles are exact
os.makedirs(p("clip"))
cl = []
for i in range(3):
    a = rng.normal(0, 1, (10, 11)).astype(np.float32)
    a[0, 0] = 1e6 if i == 0 else a[0, 0]
    np.save(p("clip", "c%d.npy" % i), a)
    cl.append(a)
run("normalize", "clip", "5,95", "--dataset", p("clip"), "-o", p("clipo"))
allc = np.concatenate([a.ravel() for a in cl])
lo, hi = rank_value(allc, 5), rank_value(allc, 95)
for i, a in enumerate(cl):
    out = glob.glob(p("clipo", "c%d.*" % i))
    check(len(out) == 1, "clip: output of c%d: %r" % (i, out))
    if not out:
        continue
    got = np.load(out[0]).astype(np.float64).reshape(a.shape)
    want = np.clip((a.astype(np.float64) - lo) / (hi - lo), 0, 1)
    check(np.allclose(got, want, rtol=0, atol=1e-6),
          "clip 5,95 of c%d: max error %g" % (i, np.abs(got - want).max()))

checklib.finish("float_percentiles_check")
