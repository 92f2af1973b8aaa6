#!/usr/bin/env python3
"""--sample N --seed S: a reproducible uniform sample of the inputs.

Usage: sample_check.py IMGSTAT TMPDIR

Writes a mixed folder (subfolders; RGB of several sizes, gray, RGBA,
16-bit gray, a corrupt file, a file with no image extension) and checks
`imgstat --dataset --sample N --seed S` against the rule of docs/dataset.md
reimplemented here (Knuth's selection sampling over the sorted input list
with a splitmix64 generator): the files read (the per-image records, -j 1
and -j 2) are the rule's, the dataset record is the same for -j 1 and -j 2,
its pooled mean and std are numpy's over the rule's files, the record says
the sample (text and JSON), N >= M reads everything and says so, the default
seed is 0, over many seeds the sample is not the first N files and every
file is drawn about N/M of the time, the usage errors, and `imgstat
normalize zscore --dataset --sample` (its plan from the sample's mean and
std, checked with numpy, every input written).
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
d = os.path.join(tmp, "ds")
for sub in ("cats", "dogs/small", "zebra"):
    os.makedirs(os.path.join(d, sub))
rng = np.random.default_rng(2026)
names = []
for i in range(24):
    sub = ("cats", "dogs", "dogs/small", "zebra")[i % 4]
    h, w = 5 + i % 3, 6 + i % 4
    name = f"{sub}/img{i:02d}.png"
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
                    "RGB").save(os.path.join(d, name))
    names.append(name)
Image.fromarray(rng.integers(0, 256, (7, 9), dtype=np.uint8),
                "L").save(os.path.join(d, "dogs/gray.png"))
Image.fromarray(rng.integers(0, 256, (6, 4, 4), dtype=np.uint8),
                "RGBA").save(os.path.join(d, "cats/alpha.png"))
g16 = rng.integers(0, 65536, (5, 6), dtype=np.uint16)
with open(os.path.join(d, "zebra/deep.png"), "wb") as f:
    png.Writer(6, 5, greyscale=True, bitdepth=16).write(f, g16.tolist())
with open(os.path.join(d, "dogs/corrupt.png"), "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n not really")
with open(os.path.join(d, "notes.txt"), "w") as f:
    f.write("not an input: no image extension\n")
names += ["dogs/gray.png", "cats/alpha.png", "zebra/deep.png",
          "dogs/corrupt.png"]
# the walk's order: the byte order of the whole paths
inputs = sorted((os.path.join(d, n) for n in names),
                key=lambda p: p.encode())
M = len(inputs)

MASK = (1 << 64) - 1


def rule(paths, n, seed):
    """docs/dataset.md's sample: the paths taken, in list order."""
    m = len(paths)
    if n >= m:
        return list(paths)
    state, taken = seed, []
    for i, p in enumerate(paths):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        u = (z >> 11) * 2.0 ** -53
        if float(m - i) * u < float(n - len(taken)):
            taken.append(p)
    return taken


def run(*args):
    return subprocess.run([imgstat] + list(args), capture_output=True,
                          text=True)


def records(out):
    """The per-image records' files and the dataset record of --json
    --errors-as-records output."""
    files, ds = [], None
    for line in out.splitlines():
        r = json.loads(line)
        if "dataset" in r:
            ds = r["dataset"]
        else:
            files.append(r["file"])
    return files, ds


def unit_rgb(path):
    """The pixels as --scale unit --as rgb pools them (N, 3), or None for a
    file that cannot be read."""
    if path.endswith("deep.png"):
        return np.repeat(g16.astype(np.float64).reshape(-1, 1) / 65535.0, 3,
                         axis=1)
    try:
        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"),
                              dtype=np.float64).reshape(-1, 3) / 255.0
    except Exception:
        return None


def close(a, b):
    return np.allclose(np.asarray(a, dtype=np.float64),
                       np.asarray(b, dtype=np.float64), rtol=1e-12, atol=0)


# the files read and the record, against the rule and numpy
for n, seed in ((1, 0), (5, 7), (12, 3), (13, 2 ** 64 - 1), (27, 11)):
    want = rule(inputs, n, seed)
    outs = {}
    for jobs in ("1", "2"):
        r = run("--dataset", "--json", "--errors-as-records", "--scale",
                "unit", "--sample", str(n), "--seed", str(seed), "-j", jobs,
                d)
        files, ds = records(r.stdout)
        outs[jobs] = r.stdout.splitlines()[-1] if r.stdout else ""
        if files != want:
            checklib.fail("--sample %d --seed %d -j %s: read %s, the rule "
                          "takes %s" % (n, seed, jobs, files, want))
        failed = sum(p.endswith("corrupt.png") for p in want)
        if r.returncode != (1 if failed else 0):
            checklib.fail("--sample %d --seed %d: exit %d" %
                          (n, seed, r.returncode))
    if outs["1"] != outs["2"]:
        checklib.fail("--sample %d --seed %d: -j 1 and -j 2 records differ"
                      % (n, seed))
    if ds is None:
        checklib.fail("--sample %d: no dataset record" % n)
        continue
    if ds.get("sample") != {"asked": n, "taken": n, "of": M, "seed": seed}:
        checklib.fail("--sample %d --seed %d: \"sample\" %r" %
                      (n, seed, ds.get("sample")))
    if ds["images"] + ds["failed"] != n:
        checklib.fail("--sample %d: images %d + failed %d" %
                      (n, ds["images"], ds["failed"]))
    x = np.concatenate([a for a in map(unit_rgb, want) if a is not None])
    mean = [c["mean"] for c in ds["stats"]]
    std = [c["std"] for c in ds["stats"]]
    if not (close(mean, x.mean(axis=0)) and close(std, x.std(axis=0))):
        checklib.fail("--sample %d --seed %d: mean %s std %s, numpy %s %s" %
                      (n, seed, mean, std, x.mean(axis=0), x.std(axis=0)))

# the text says it, under the header line
r = run("--dataset-only", "--sample", "5", "--seed", "7", d)
lines = r.stdout.splitlines()
if len(lines) < 2 or lines[1] != "sampled: 5 of %d inputs (--sample 5 "\
        "--seed 7)" % M:
    checklib.fail("text: %r" % lines[:2])
# N >= M: every input, said so
r = run("--dataset-only", "--json", "--sample", str(M + 10), d)
ds = json.loads(r.stdout)["dataset"] if r.stdout else {}
if ds.get("sample") != {"asked": M + 10, "taken": M, "of": M, "seed": 0} or \
        ds.get("images", 0) + ds.get("failed", 0) != M:
    checklib.fail("--sample %d: %r" % (M + 10, ds.get("sample")))
r = run("--dataset-only", "--sample", str(M), "--seed", "4", d)
if ("sampled: all %d inputs (--sample %d is not fewer; --seed 4)" % (M, M)
        not in r.stdout.splitlines()):
    checklib.fail("--sample M text: %r" % r.stdout.splitlines()[:2])
# without --sample: no "sample" key, no line
r = run("--dataset-only", "--json", d)
if "sample" in json.loads(r.stdout)["dataset"]:
    checklib.fail("no --sample: the record has \"sample\"")
if "sampled" in run("--dataset-only", d).stdout:
    checklib.fail("no --sample: the text says sampled")
# the default seed is 0
a = run("--dataset-only", "--json", "--sample", "6", d).stdout
b = run("--dataset-only", "--json", "--sample", "6", "--seed", "0", d).stdout
if a != b or '"seed":0' not in a:
    checklib.fail("default seed: %r vs %r" % (a[:200], b[:200]))

# Uniform and not the first N: the rule over many seeds (every file about
# N/M of the time, within 5 sigma), and the program agreeing with it on 25
# seeds whose samples differ.
n, trials = 6, 4000
counts = dict.fromkeys(inputs, 0)
first = 0
for seed in range(trials):
    s = rule(inputs, n, seed)
    first += s == inputs[:n]
    for p in s:
        counts[p] += 1
p = n / M
sigma = (trials * p * (1 - p)) ** 0.5
worst = max(abs(c - trials * p) for c in counts.values())
if worst > 5 * sigma or first > 2:
    checklib.fail("the rule: inclusion counts off by %.1f (5 sigma %.1f), "
                  "first %d files %d times" % (worst, 5 * sigma, n, first))
seen = set()
for seed in range(25):
    r = run("--json", "--errors-as-records", "--dataset", "--sample", str(n),
            "--seed", str(seed), d)
    files, _ = records(r.stdout)
    if files != rule(inputs, n, seed):
        checklib.fail("--seed %d: %s" % (seed, files))
    seen.add(tuple(files))
    if files == inputs[:n]:
        checklib.fail("--seed %d: the first %d files" % (seed, n))
if len(seen) < 20:
    checklib.fail("25 seeds gave %d samples" % len(seen))

# usage errors: exit 2, the option and the value named
for args, words in (
        (["--sample", "0"], "--sample: '0' is not a number of inputs"),
        (["--sample", "ten"], "--sample: 'ten' is not a number of inputs"),
        (["--sample", "-3"], "--sample: '-3' is not a number of inputs"),
        (["--sample", "4", "--seed", "x"],
         "--seed: 'x' is not a number from 0 to 18446744073709551615"),
        (["--sample", "4", "--seed", "-1"], "--seed: '-1' is not a number"),
        (["--sample", "4", "--seed", "18446744073709551616"],
         "--seed: '18446744073709551616' is not a number"),
):
    r = run("--dataset-only", *args, d)
    if r.returncode != 2 or words not in r.stderr or r.stdout:
        checklib.fail("%s: exit %d, %r" % (" ".join(args), r.returncode,
                                           r.stderr))
r = run("--sample", "3", inputs[0])
if "--sample has no effect without --dataset" not in r.stderr:
    checklib.fail("--sample without --dataset: %r" % r.stderr)
r = run("normalize", "--sample", "3", inputs[0], "-o",
        os.path.join(tmp, "one.png"))
if "--sample has no effect without --dataset" not in r.stderr:
    checklib.fail("normalize --sample without --dataset: %r" % r.stderr)

# --histogram-png never replaces an input, sampled or not
victim = next(p for p in inputs if p not in rule(inputs, 1, 0)
              and p.endswith(".png") and "corrupt" not in p)
before = open(victim, "rb").read()
r = run("--dataset-only", "--sample", "1", "--histogram-png", victim, d)
if r.returncode != 2 or "is the input" not in r.stderr or \
        open(victim, "rb").read() != before:
    checklib.fail("--histogram-png over an input left out of the sample: "
                  "exit %d, %r" % (r.returncode, r.stderr))

# normalize zscore --dataset --sample: the plan is the sample's, every input
# is written
out = os.path.join(tmp, "z")
want = rule(inputs, 7, 5)
r = run("normalize", "zscore", "--dataset", "--scale", "unit", "--sample",
        "7", "--seed", "5", d, "-o", out)
x = np.concatenate([a for a in map(unit_rgb, want) if a is not None])
mean, std = x.mean(axis=0), x.std(axis=0)
written = sorted(os.path.relpath(os.path.join(dp, f), out)
                 for dp, _, fs in os.walk(out) for f in fs)
readable = sorted(os.path.splitext(os.path.relpath(p, d))[0] + ".npy"
                  for p in inputs if not p.endswith("corrupt.png"))
if ("imgstat: the plan pooled a sample: 7 of %d inputs (--sample 7 --seed 5)"
        % M not in r.stderr.splitlines()):
    checklib.fail("normalize --sample: stderr %r" % r.stderr)
if written != readable or r.returncode != 1:
    checklib.fail("normalize --sample: exit %d, wrote %s; %s" %
                  (r.returncode, written, r.stderr))
else:
    for p in inputs[:3] + inputs[-3:]:
        if p.endswith("corrupt.png"):
            continue
        got = np.load(os.path.join(
            out, os.path.splitext(os.path.relpath(p, d))[0] + ".npy"))
        ref = ((unit_rgb(p) - mean) / std).reshape(got.shape)
        if not np.allclose(got, ref, rtol=1e-5, atol=1e-5):
            checklib.fail("normalize --sample: %s off by %g" %
                          (p, np.abs(got - ref).max()))

checklib.finish("sample_check")
