#!/usr/bin/env python3
"""The README's dataset and normalize commands, run as typed on a mixed
folder, and the layout a pool takes without --scale unit.

Usage: readme_examples_check.py IMGSTAT TMPDIR

Writes train/ in subfolders, in byte order: gray images first, then RGB
ones (most of them), RGBA ones, a 16-bit gray PNG and a corrupt JPEG. Checks
that README.md still has each command below, then runs it in TMPDIR:

- `imgstat --dataset-only --scale unit train/`: the Normalize line is the
  0..1 mean and std (N) of every image converted as Pillow's
  convert('RGB') (16-bit gray scaled by 65535), computed here with numpy;
  one input failed (exit 1);
- `imgstat normalize --scale unit --mean ... --std ... --layout chw train/
  -o tensors/`: every image is written, as a (3, H, W) float32 .npy of
  (x / top - mean) / std, the gray and RGBA ones too;
- `imgstat normalize zscore --dataset --scale unit train/ -o z/`: every
  image is written with the pooled mean and std of the first command.

Then, without --scale unit (--as keep), the pool is the layout and depth most
images have, whatever comes first in byte order, for any -j; a tie goes to
more channels, then to more bits.
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

imgstat, tmp = os.path.abspath(sys.argv[1]), sys.argv[2]
README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "README.md")
COMMANDS = [
    "imgstat --dataset-only --scale unit train/",
    "imgstat normalize --scale unit --mean 0.485,0.456,0.406 --std "
    "0.229,0.224,0.225 --layout chw train/ -o tensors/",
    "imgstat normalize zscore --dataset --scale unit train/ -o z/",
]
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def check(ok, msg):
    if not ok:
        checklib.fail(msg)


# ---- the commands are the README's ------------------------------------------
text = open(README, encoding="utf-8").read().replace("\\\n", " ")
typed = set()
for line in text.splitlines():
    line = re.sub(r"\s+#.*$", "", line).strip()
    typed.add(" ".join(line.split()))
for c in COMMANDS:
    check(c in typed, "README.md no longer has the command: %s" % c)

# ---- the folder --------------------------------------------------------------
rng = np.random.default_rng(11)
train = os.path.join(tmp, "train")
images = {}  # relative path without extension -> RGB float64 in 0..1


def put(rel, a, top):
    path = os.path.join(train, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if a.dtype == np.uint16:
        png.Writer(a.shape[1], a.shape[0], greyscale=True, bitdepth=16).write(
            open(path, "wb"), a.tolist())
    else:
        Image.fromarray(a).save(path)
    f = a.astype(np.float64) / top
    if f.ndim == 2:
        f = np.stack([f] * 3, axis=-1)
    images[os.path.splitext(rel)[0]] = f[..., :3]


for i in range(3):
    put("a_gray/g%d.png" % i, rng.integers(0, 256, (9, 7), dtype=np.uint8), 255)
for i in range(8):
    put("b_rgb/r%d.png" % i, rng.integers(0, 256, (9, 7, 3), dtype=np.uint8), 255)
for i in range(2):
    put("c_more/rgba%d.png" % i, rng.integers(0, 256, (5, 6, 4), dtype=np.uint8), 255)
put("c_more/deep/d.png", rng.integers(0, 65536, (6, 5), dtype=np.uint16), 65535)
with open(os.path.join(train, "c_more", "broken.jpg"), "wb") as f:
    f.write(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(40))

allpx = np.concatenate([a.reshape(-1, 3) for a in images.values()])
want_mean = allpx.mean(axis=0)
want_std = allpx.std(axis=0)


def run(*args):
    return checklib.subprocess.run([imgstat] + list(args), capture_output=True,
                                   text=True, cwd=tmp)


def numbers(line):
    return [float(v) for v in re.findall(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?", line)]


# ---- imgstat --dataset-only --scale unit train/ ------------------------------
p = run(*COMMANDS[0].split()[1:])
check(p.returncode == 1, "dataset: exit %d, want 1 (one corrupt input)" % p.returncode)
check("broken.jpg" in p.stderr, "dataset: the corrupt JPEG named: %r" % p.stderr)
norm = [l for l in p.stdout.splitlines() if l.startswith("Normalize(mean=[")]
check(len(norm) == 1, "dataset: one Normalize line in %r" % p.stdout)
if norm:
    got = numbers(norm[0])
    want = list(want_mean) + list(want_std)
    check(len(got) == 6 and np.allclose(got, want, rtol=1e-6, atol=1e-9),
          "dataset: %s, want %r" % (norm[0], want))
check(re.search(r"\b%d images, %d pooled, 1 failed\b" % (len(images), len(images)),
                p.stdout) is not None, "dataset: every image pooled: %r" % p.stdout)

# ---- imgstat normalize --scale unit --mean ... --layout chw ------------------
p = run(*COMMANDS[1].split()[1:])
check(p.returncode == 1, "normalize --mean: exit %d, want 1: %s" % (p.returncode, p.stderr))
for rel, a in sorted(images.items()):
    out = os.path.join(tmp, "tensors", rel + ".npy")
    if not os.path.exists(out):
        checklib.fail("normalize --mean: no %s" % out)
        continue
    t = np.load(out)
    want = ((a - MEAN) / STD).transpose(2, 0, 1)
    check(t.dtype == np.float32 and t.shape == want.shape and
          np.allclose(t, want, atol=1e-5),
          "normalize --mean: %s is %s %s, want float32 %s" % (rel, t.dtype, t.shape, want.shape))

# ---- imgstat normalize zscore --dataset --scale unit -------------------------
p = run(*COMMANDS[2].split()[1:])
check(p.returncode == 1, "normalize zscore --dataset: exit %d, want 1: %s" % (p.returncode, p.stderr))
for rel, a in sorted(images.items()):
    out = os.path.join(tmp, "z", rel + ".npy")
    if not os.path.exists(out):
        checklib.fail("normalize zscore --dataset: no %s" % out)
        continue
    t = np.load(out)
    want = (a - want_mean) / want_std
    check(t.dtype == np.float32 and t.shape == want.shape and
          np.allclose(t, want, atol=1e-5),
          "normalize zscore --dataset: %s is %s %s, want float32 %s" % (rel, t.dtype, t.shape, want.shape))

# ---- without --scale unit: the layout and depth most images have -------------
native = {}
for rel in images:
    path = os.path.join(train, rel + (".png"))
    native[rel] = np.asarray(Image.open(path)) if "deep" not in rel else None
rgb = [rel for rel in images if rel.startswith("b_rgb/")]
px = np.concatenate([native[r].reshape(-1, 3).astype(np.float64) for r in rgb])
recs = []
for j in ("1", "2"):
    p = run("--dataset-only", "--json", "-j", j, "train/")
    recs.append(p.stdout)
    rec = json.loads(p.stdout.strip().splitlines()[-1])["dataset"]
    check(rec["layout"] == "RGB" and rec["depth"] == 8 and rec["pooled"] == len(rgb),
          "--as keep -j %s: pooled %s %s-bit, %d images; want RGB 8-bit, %d"
          % (j, rec["layout"], rec["depth"], rec["pooled"], len(rgb)))
    got = [float(s["mean"]) for s in rec["stats"]]
    check(len(got) == 3 and np.allclose(got, px.mean(axis=0), rtol=1e-12),
          "--as keep: means %r, want %r" % (got, px.mean(axis=0)))
check(recs[0] == recs[1], "--as keep: the same record for -j 1 and 2")
p = run("--dataset-only", "train/")
check("pooled: the layout and depth most images have" in p.stdout,
      "--as keep: the text says why the layout: %r" % p.stdout)


def tie(name, files, layout, depth):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    for f, a in files:
        if a.dtype == np.uint16:
            png.Writer(a.shape[1], a.shape[0], greyscale=True, bitdepth=16).write(
                open(os.path.join(d, f), "wb"), a.tolist())
        else:
            Image.fromarray(a).save(os.path.join(d, f))
    p = run("--dataset-only", "--json", name)
    rec = json.loads(p.stdout.strip().splitlines()[-1])["dataset"]
    check(rec["layout"] == layout and rec["depth"] == depth and rec["pooled"] == 1,
          "tie %s: pooled %s %s-bit, want %s %d-bit" % (name, rec["layout"], rec["depth"], layout, depth))


g8 = np.full((3, 3), 7, np.uint8)
tie("tie_layout", [("a.png", g8), ("b.png", np.full((3, 3, 3), 9, np.uint8))], "RGB", 8)
tie("tie_depth", [("a.png", g8), ("b.png", np.full((3, 3), 900, np.uint16))], "Y", 16)

checklib.finish("readme_examples_check")
