#!/usr/bin/env python3
"""The dataset pool of images of many bands, against numpy.

Usage: wide_pool_check.py IMGSTAT TMPDIR

Writes .npy files (random, seeded) and checks imgstat --dataset over them:
three 200-band uint16 images of different sizes (per band the pooled count,
min, max, mean, std, and the median and --percentiles from the pooled
histograms, equal to numpy's order statistic by the rank rule of
docs/normalize.md: the k-th smallest, k = max(1, ceil(p N / 100))); three
1024-band uint8 images (count, min, max, mean, std); three 200-band
float32 images with --range (the percentiles exact by the second read);
40-band images with label images (--labels DIR: each label's figures per
band over every image that has it); normalize zscore --dataset of 100-band
images (numpy's (x - pooled mean) / pooled std); the text table of a
200-band pool (one line a band); and, with mpirun, --mpi under two ranks
byte for byte the one-process record of the 200-band pool.
"""
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib
import checklib  # noqa: E402

IMGSTAT, T = sys.argv[1:3]
IMGSTAT = os.path.abspath(IMGSTAT)
rng = np.random.default_rng(20261129)
check = checklib.check


def run(*args):
    return subprocess.run([IMGSTAT, *args], capture_output=True, text=True)


def dataset(*args):
    p = run("--dataset-only", "--json", "--npy-layout", "hwc", *args)
    if p.returncode != 0:
        check(False, "imgstat %s: %s" % (args, p.stderr))
        return None
    return json.loads(p.stdout.splitlines()[-1])["dataset"]


rank_value = checklib.rank_value


def close(a, b, rel=1e-9):
    return a is not None and abs(a - b) <= rel * max(1.0, abs(b))


def check_stats(what, stats, bands, pcts=None):
    """stats: the record's per-band objects; bands: numpy's samples."""
    check(len(stats) == len(bands),
          "%s: %d bands, numpy %d" % (what, len(stats), len(bands)))
    bad = 0
    for c, (s, x) in enumerate(zip(stats, bands)):
        x = x.astype(np.float64)
        good = (s.get("count") == x.size and s.get("min") == x.min()
                and s.get("max") == x.max() and close(s.get("mean"), x.mean())
                and close(s.get("std"), x.std(), 1e-7))
        if pcts is not None:
            good = good and s.get("median") == rank_value(x, 50)
            got = s.get("percentiles", {})
            good = good and list(got.values()) == [rank_value(x, q)
                                                   for q in pcts]
        if not good and bad < 3:
            print("%s band %d: %r" % (what, c + 1, s))
        bad += not good
    check(bad == 0, "%s: %d bands differ from numpy" % (what, bad))


def folder(name, arrays):
    d = os.path.join(T, name)
    os.mkdir(d)
    for k, a in enumerate(arrays):
        np.save(os.path.join(d, "i%d.npy" % k), a)
    return d


def pooled_bands(arrays):
    n = arrays[0].shape[2]
    return [np.concatenate([a[:, :, c].ravel() for a in arrays])
            for c in range(n)]


# ---- 200-band uint16: figures and exact percentiles --------------------------
PCT_ARG = "0.5,25,99.5"
PCTS = [0.5, 25, 99.5]
u16 = [rng.integers(0, 65536, size=(5 + k, 4 + k, 200), dtype=np.uint16)
       for k in range(3)]
d16 = folder("u16", u16)
rec = dataset("--histogram", "--percentiles", PCT_ARG, d16)
if rec:
    check(rec.get("pooled") == 3 and rec.get("channels") == 200 and
          rec.get("layout") == "200-band",
          "200 bands: pooled %r, layout %r" % (rec.get("pooled"),
                                               rec.get("layout")))
    check_stats("200-band uint16", rec["stats"], pooled_bands(u16), PCTS)

# the text table: one line a band
p = run("--dataset-only", "--npy-layout", "hwc", d16)
lines = p.stdout.splitlines()
rows = [l.split()[0] for l in lines if l.split() and l.split()[0].isdigit()]
check(p.returncode == 0 and rows == [str(c + 1) for c in range(200)] and
      not any(": sum " in l for l in lines) and len(lines) < 210,
      "200-band text table, one line a band: %r" % p.stdout[-400:])

# ---- --mpi under two ranks: byte for byte one process's record ---------------
mpirun = shutil.which("mpirun")
if mpirun and "--mpi" in run("--help").stdout:
    args = ["--dataset-only", "--json", "--npy-layout", "hwc", "--histogram",
            "--percentiles", PCT_ARG, d16]
    one = run(*args)
    # (a sanitizer build: Open MPI's own start-up allocations are left to
    # LeakSanitizer, none of them ours; its access checks stay on)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env["ASAN_OPTIONS"] = ":".join(
        x for x in (env.get("ASAN_OPTIONS"), "detect_leaks=0") if x)
    many = subprocess.run([mpirun, "--oversubscribe", "-np", "2", IMGSTAT,
                           "--mpi", *args], capture_output=True, text=True,
                          env=env)
    check(one.returncode == 0 and many.returncode == 0 and
          one.stdout == many.stdout,
          "--mpi -np 2 of 200 bands differs: %r" % many.stderr[-400:])
else:
    print("skipped: --mpi under two ranks (no mpirun or no MPI build)")

# ---- 1024-band uint8 ---------------------------------------------------------
u8 = [rng.integers(0, 256, size=(3, 2 + k, 1024), dtype=np.uint8)
      for k in range(3)]
rec = dataset(folder("u8", u8))
if rec:
    check(rec.get("channels") == 1024, "1024 bands: %r" % rec.get("layout"))
    check_stats("1024-band uint8", rec["stats"], pooled_bands(u8))

# ---- 200-band float32: exact percentiles by the second read ------------------
f32 = [rng.normal(0, 1, size=(6, 5 + k, 200)).astype(np.float32)
       for k in range(3)]
rec = dataset("--histogram", "--range", "-8,8", "--percentiles", PCT_ARG,
              folder("f32", f32))
if rec:
    check("histogram_note" not in rec, "float note %r"
          % rec.get("histogram_note"))
    bands = pooled_bands(f32)
    check_stats("200-band float32", rec["stats"], bands, PCTS)

# ---- 40-band images with label images ----------------------------------------
li = [rng.integers(0, 65536, size=(7, 6 + k, 40), dtype=np.uint16)
      for k in range(3)]
ll = [rng.choice([0, 1, 2] + ([5] if k != 1 else []),
                 size=(7, 6 + k)).astype(np.uint8) for k in range(3)]
dl = folder("limg", li)
dlab = folder("llab", ll)
rec = dataset("--labels", dlab, dl)
if rec:
    got = rec.get("labels", [])
    check([e["label"] for e in got] == [1, 2, 5],
          "labels %r" % [e["label"] for e in got])
    for e in got:
        L = e["label"]
        have = [k for k in range(3) if (ll[k] == L).any()]
        check(e.get("images") == len(have), "label %d: images %r"
              % (L, e.get("images")))
        check_stats("40-band label %d" % L, e["stats"],
                    [np.concatenate([li[k][:, :, c][ll[k] == L]
                                     for k in have]) for c in range(40)])

# ---- normalize zscore --dataset of 100-band images ---------------------------
nz = [rng.integers(0, 65536, size=(4 + k, 5, 100), dtype=np.uint16)
      for k in range(3)]
dn = folder("nz", nz)
out = os.path.join(T, "nz_out")
p = run("normalize", "zscore", "--dataset", "--npy-layout", "hwc", dn, "-o",
        out)
check(p.returncode == 0, "normalize --dataset 100 bands: %r" % p.stderr)
if p.returncode == 0:
    bands = pooled_bands(nz)
    mean = np.array([b.astype(np.float64).mean() for b in bands])
    std = np.array([b.astype(np.float64).std() for b in bands])
    for k, a in enumerate(nz):
        f = os.path.join(out, "i%d.npy" % k)
        if not os.path.exists(f):
            check(False, "normalize --dataset: no %s (%r)"
                  % (f, os.listdir(out)))
            continue
        z = np.load(f)
        want = (a.astype(np.float64) - mean) / std
        check(z.shape == a.shape and np.abs(z - want).max() < 1e-5,
              "normalize --dataset zscore %d: shape %r" % (k, z.shape))

checklib.finish("wide_pool_check")
