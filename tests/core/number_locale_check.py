#!/usr/bin/env python3
"""The program's numbers under a locale whose decimal point is a comma.

Usage: number_locale_check.py IMGSTAT TMPDIR LOCALE   (LOCPATH set when the
locale was made in a private folder: tests/core/number_locale_test.sh)

The records (text, --json, --csv, --brief), with histograms and the
percentile 12.5, the --dataset record, a --histogram-png plot and normalize's
outputs (--range, clip and --mean/--std options with fractions; .npy and PFM
written) of a FITS with BSCALE = 2.5 and BZERO = 10.5, one with BSCALE = 0.5
and BZERO = 1.05D1, and a PFM: byte for byte the same under LC_ALL=LOCALE as
under LC_ALL=C, and the values worked out by hand (docs/formats.md,
"Numbers"). Needs only python3.
"""
import json
import os
import re
import struct
import subprocess
import sys

imgstat, tmp, comma = sys.argv[1], sys.argv[2], sys.argv[3]
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)


def fits(name, bitpix, cards, data):
    head = ["SIMPLE  =                    T",
            "BITPIX  = %20d" % bitpix,
            "NAXIS   =                    2",
            "NAXIS1  =                    2",
            "NAXIS2  =                    2"] + cards + ["END"]
    text = "".join("%-80s" % c for c in head).encode("ascii")
    text += b" " * (-len(text) % 2880)
    data += b"\0" * (-len(data) % 2880)
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(text + data)
    return path


# 0, 1, 2, 3 * 2.5 + 10.5: 10.5, 13, 15.5, 18
scaled = fits("scaled.fits", 8, ["BSCALE  =                  2.5",
                                 "BZERO   =                 10.5"],
              bytes([0, 1, 2, 3]))
# 1, 2, 3, 4 * 0.5 + 10.5: 11, 11.5, 12, 12.5
half = fits("half.fits", 16, ["BSCALE  =                  0.5",
                              "BZERO   =               1.05D1"],
            struct.pack(">4h", 1, 2, 3, 4))
pfm = os.path.join(tmp, "gray.pfm")
with open(pfm, "wb") as f:  # 1.5, 2.25 (scale -1: little-endian)
    f.write(b"Pf\n2 1\n-1.0\n" + struct.pack("<2f", 1.5, 2.25))
inputs = [scaled, half, pfm]
expect = {scaled: (10.5, 18, 14.25), half: (11, 12.5, 11.75),
          pfm: (1.5, 2.25, 1.875)}


def run(locale_name, *args):
    env = dict(os.environ, LC_ALL=locale_name)
    return subprocess.run([imgstat] + list(args), capture_output=True,
                          env=env)


def same(what, *args, files=()):
    """imgstat ARGS under C and under the comma locale: the same exit status,
    output, messages and files (ARGS and files name them with @, which is
    c, then comma);
    returns the C run's output."""
    got = {}
    for name, tag in (("C", "c"), (comma, "comma")):
        argv = [a.replace("@", tag) for a in args]
        r = run(name, *argv)
        blobs = []
        for f in files:
            p = f.replace("@", tag)
            with open(p, "rb") as fh:
                blobs.append(fh.read())
        # the names given, and normalize's seconds (with a point)
        err = r.stderr.replace(("-%s." % tag).encode(), b"-@.")
        err = re.sub(rb"\b[0-9]+\.[0-9]{2} s\n", b"S s\n", err)
        got[tag] = (r.returncode, r.stdout, err, blobs)
    if got["c"] != got["comma"]:
        fail("%s: LC_ALL=%s differs from LC_ALL=C:\n%r\n%r"
             % (what, comma, got["comma"][:3], got["c"][:3]))
    if got["c"][0] != 0:
        fail("%s: exit %d: %s" % (what, got["c"][0], got["c"][2]))
    return got["c"][1].decode()


hist = ["--histogram", "--percentiles", "12.5,50", "--bins", "4"]
records = same("--json", "--json", *hist, *inputs)
for line, path in zip(records.splitlines(), inputs):
    rec = json.loads(line)
    ch = rec["stats"][0]
    want = expect[path]
    if (ch["min"], ch["max"], ch["mean"]) != want:
        fail("%s: min, max, mean %r, expected %r"
             % (path, (ch["min"], ch["max"], ch["mean"]), want))
    if list(ch["percentiles"]) != ["12.5", "50"]:
        fail("%s: percentile keys %r" % (path, list(ch["percentiles"])))
csv = same("--csv", "--csv", *hist, *inputs)
if "p12.5,p50" not in csv.splitlines()[0]:
    fail("--csv header: %s" % csv.splitlines()[0])
text = same("text", *hist, *inputs)
if "14.2500" not in text or "p12.5" not in text:
    fail("text table: no mean 14.2500 or p12.5:\n" + text)
same("--brief", "--brief", *inputs)
dataset = same("--dataset --json", "--json", "--dataset-only", *hist, scaled,
               half)
d = json.loads(dataset)["dataset"]["stats"][0]
if (d["min"], d["max"], d["mean"]) != (10.5, 18, 13):
    fail("dataset: min, max, mean %r, expected (10.5, 18, 13)"
         % ((d["min"], d["max"], d["mean"]),))
same("--dataset text", "--dataset", *hist, scaled, half)
same("--dataset --csv", "--csv", "--dataset", *hist, scaled, half)
plot = os.path.join(tmp, "plot-@.png")
same("--histogram-png", "--histogram-png", plot, "--json", scaled,
     files=[plot])
for tag in ("c", "comma"):
    os.remove(plot.replace("@", tag))
# normalize: options with fractions, .npy and PFM written
for mode, ext in ((["--range", "10.5,18"], ".npy"),
                  (["--mean", "12.5", "--std", "2.5"], ".pfm"),
                  (["clip", "12.5,87.5"], ".npy")):
    out = os.path.join(tmp, "norm-@" + ext)
    same("normalize %s" % " ".join(mode), "normalize", *mode, scaled, "-o",
         out, files=[out])
    check = os.path.join(tmp, "norm-c" + ext)
    r = run("C", "--json", check)
    if r.returncode != 0:
        fail("normalize %s: its output does not read back: %s"
             % (mode, r.stderr))
    elif mode[0] == "--mean":
        ch = json.loads(r.stdout)["stats"][0]
        # (10.5, 13, 15.5, 18) - 12.5) / 2.5: -0.8, 0.2, 1.2, 2.2
        if abs(ch["mean"] - 0.7) > 1e-6 or abs(ch["min"] + 0.8) > 1e-6:
            fail("normalize --mean 12.5 --std 2.5: %r" % ch)
    for tag in ("c", "comma"):
        os.remove(os.path.join(tmp, "norm-%s%s" % (tag, ext)))
for p in inputs:
    os.remove(p)
print("number_locale_check: %d failures" % failures)
sys.exit(1 if failures else 0)
