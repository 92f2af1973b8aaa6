#!/usr/bin/env python3
"""--emit: the dataset's constants in each framework's units and order.

Usage: emit_check.py IMGSTAT TMPDIR

Writes a folder (subfolders; RGB, gray, RGBA, palette, 16-bit gray) and
runs `imgstat --dataset-only --emit FORM` for every form. The torchvision
line's numbers are checked against numpy (Pillow's convert('RGB') / 255 for
the 8-bit files, v / 65535 gray replicated for the 16-bit one, as
docs/dataset.md states) and against the JSON record's doubles (read back
exactly: round-trip digits). Every other form is checked against those
numbers converted here by hand: the same order (timm, hf, albumentations,
mmcv, keras), times 255 (mmcv, detectron2, keras), reversed for BGR
(detectron2), squared for keras's variance. Then: every --emit at once gives
the same lines; the JSON "emit" object holds the same texts; one-channel
tuples; the refusals (--scale native, --as gray with a BGR form, a pool that
is not RGB under --as keep).
"""
import json
import os
import re
import subprocess
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib

import checklib
import numpy as np
import png
from PIL import Image

imgstat, tmp = sys.argv[1], sys.argv[2]
d = os.path.join(tmp, "ds")
for sub in ("cats", "dogs/small"):
    os.makedirs(os.path.join(d, sub))
rng = np.random.default_rng(37)


def u8(*shape):
    return rng.integers(0, 256, shape, dtype=np.uint8)


files8 = []
for i in range(3):
    Image.fromarray(u8(9, 14, 3), "RGB").save(f"{d}/cats/rgb{i}.png")
    files8.append(f"cats/rgb{i}.png")
Image.fromarray(u8(11, 7), "L").save(f"{d}/dogs/gray.png")
Image.fromarray(u8(6, 10, 4), "RGBA").save(f"{d}/dogs/small/rgba.png")
pal = Image.fromarray(rng.integers(0, 5, (8, 9), dtype=np.uint8), "P")
pal.putpalette([int(v) for v in u8(15)])
pal.save(f"{d}/dogs/small/palette.png")
files8 += ["dogs/gray.png", "dogs/small/rgba.png", "dogs/small/palette.png"]
g16 = rng.integers(0, 65536, (5, 6), dtype=np.uint16)
png.Writer(6, 5, greyscale=True, bitdepth=16).write(
    open(f"{d}/dogs/gray16.png", "wb"), g16.tolist())

parts = []
for f in files8:
    with Image.open(os.path.join(d, f)) as im:
        parts.append(np.asarray(im.convert("RGB"),
                                dtype=np.float64).reshape(-1, 3) / 255.0)
parts.append(np.repeat(g16.astype(np.float64).reshape(-1, 1) / 65535.0, 3,
                       axis=1))
x = np.concatenate(parts)
np_mean, np_std = x.mean(axis=0), x.std(axis=0)

FORMS = ["torchvision", "timm", "hf", "mmcv", "detectron2", "keras",
         "albumentations"]


def run(*args):
    return subprocess.run([imgstat, "--dataset-only"] + list(args),
                          capture_output=True, text=True)


def emitted(out):
    """The FORM: TEXT lines of a text output: {form: text}."""
    lines = {}
    for line in out.split("\n"):
        form, sep, text = line.partition(": ")
        if sep and form in FORMS:
            lines[form] = text
    return lines


def call(**kw):
    return kw


def parse(form, text):
    """The form's numbers as the framework reads the text (Python / JSON)."""
    if form == "hf":
        return json.loads(text)
    if form == "detectron2":
        cfg = types.SimpleNamespace(MODEL=types.SimpleNamespace())
        exec(text, {"__builtins__": {}, "cfg": cfg})
        return vars(cfg.MODEL)
    if form in ("timm", "mmcv"):
        text = "call(" + text + ")"
    return eval(text, {"__builtins__": {}, "call": call, "Normalize": call,
                       "Normalization": call})


def shortest_ok(text, values):
    """Each number of text reads back as its double, with no more
    significant digits than max(15, Python's shortest repr) needs."""
    text = text.split("  #")[0]  # keras's comment: the units
    toks = re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text)
    if [float(t) for t in toks] != values:
        return "numbers %s, expected %s" % (toks, values)
    for t, v in zip(toks, values):
        def digits(s):
            m = s.split("e")[0].replace("-", "").replace(".", "").lstrip("0")
            return len(m.rstrip("0")) if m else 1
        if digits(t) > max(15, digits(repr(v))):
            return "%s: more digits than %r needs" % (t, v)
    return None


# every form alone
texts = {}
for form in FORMS:
    r = run("--emit", form, d)
    if r.returncode != 0:
        checklib.fail("--emit %s: exit %d: %s" % (form, r.returncode, r.stderr))
        continue
    e = emitted(r.stdout)
    if list(e) != [form]:
        checklib.fail("--emit %s: lines %s in\n%s" % (form, list(e), r.stdout))
        continue
    if "\nNormalize(" in "\n" + r.stdout:
        checklib.fail("--emit %s: the bare Normalize line is still printed"
                      % form)
    texts[form] = e[form]
if len(texts) != len(FORMS):
    checklib.finish("emit_check")

rec = json.loads(run("--emit", "torchvision", "--json", d).stdout)["dataset"]
js_mean = [c["mean"] for c in rec["stats"]]
js_std = [c["std"] for c in rec["stats"]]
if rec["scale"] != "unit" or rec["as"] != "rgb" or rec["images"] != 7:
    checklib.fail("--emit did not imply --scale unit (as rgb): %s"
                  % {k: rec[k] for k in ("scale", "as", "images")})

tv = parse("torchvision", texts["torchvision"])
m, s = tv["mean"], tv["std"]
if m != js_mean or s != js_std:
    checklib.fail("torchvision %s / %s, the JSON's doubles %s / %s"
                  % (m, s, js_mean, js_std))
if not (np.allclose(m, np_mean, rtol=1e-12, atol=0) and
        np.allclose(s, np_std, rtol=1e-12, atol=0)):
    checklib.fail("torchvision %s / %s, numpy %s / %s"
                  % (m, s, np_mean.tolist(), np_std.tolist()))

m255 = [v * 255 for v in m]
s255 = [v * 255 for v in s]
expected = {
    "torchvision": ({"mean": m, "std": s}, m + s),
    "timm": ({"mean": tuple(m), "std": tuple(s)}, m + s),
    "hf": ({"image_mean": m, "image_std": s, "rescale_factor": 1 / 255,
            "do_rescale": True, "do_normalize": True}, m + s + [1 / 255]),
    "mmcv": ({"mean": m255, "std": s255, "bgr_to_rgb": True}, m255 + s255),
    "detectron2": ({"PIXEL_MEAN": m255[::-1], "PIXEL_STD": s255[::-1]},
                   m255[::-1] + s255[::-1]),
    "keras": ({"mean": m255, "variance": [v * v for v in s255]},
              m255 + [v * v for v in s255]),
    "albumentations": ({"mean": tuple(m), "std": tuple(s),
                        "max_pixel_value": 255.0}, m + s + [255.0]),
}
for form in FORMS:
    want, numbers = expected[form]
    try:
        got = parse(form, texts[form])
    except Exception as exc:  # a line the framework could not read
        checklib.fail("%s: %r does not parse: %s" % (form, texts[form], exc))
        continue
    if got != want:
        checklib.fail("%s: %r, expected %r" % (form, got, want))
    why = shortest_ok(texts[form], numbers)
    if why:
        checklib.fail("%s: %s" % (form, why))
if "0..255" not in texts["keras"]:
    checklib.fail("keras: the units are not stated: %r" % texts["keras"])

# every form at once: the same lines, in the documented order
many = ["--emit", "keras", "--emit", "hf"]
for form in FORMS:
    many += ["--emit", form]
r = run(*many, d)
e = emitted(r.stdout)
if r.returncode != 0 or list(e) != FORMS or e != texts:
    checklib.fail("all --emit at once: exit %d, %s" % (r.returncode, e))

# the JSON record: "emit" of the same texts
r = run("--json", "--emit", "mmcv", "--emit", "timm", d)
got = json.loads(r.stdout)["dataset"].get("emit")
if got != {"timm": texts["timm"], "mmcv": texts["mmcv"]}:
    checklib.fail("JSON emit %r" % got)
if "emit" in json.loads(run("--json", "--scale", "unit", d).stdout)["dataset"]:
    checklib.fail("JSON emit without --emit")

# one channel: a one-value tuple, one-value lists
r = run("--as", "gray", "--emit", "timm", "--emit", "keras", d)
e = emitted(r.stdout)
if r.returncode != 0 or not re.fullmatch(r"mean=\([^,]+,\), std=\([^,]+,\)",
                                         e.get("timm", "")):
    checklib.fail("--as gray timm: exit %d %r" % (r.returncode, e))
else:
    g = parse("timm", e["timm"])
    k = parse("keras", e["keras"])
    if k != {"mean": [g["mean"][0] * 255],
             "variance": [(g["std"][0] * 255) * (g["std"][0] * 255)]}:
        checklib.fail("--as gray keras %r from timm %r" % (k, g))

# refusals
for args, status, words in (
        (["--emit", "timm", "--scale", "native"], 2, "--scale unit"),
        (["--emit", "mmcv", "--as", "gray"], 2, "RGB"),
        (["--emit", "tim"], 2, "did you mean timm"),
        (["--emit", "detectron2", "--emit", "timm", "--as", "keep",
          os.path.join(d, "dogs", "gray.png")], 1, "--emit detectron2"),
):
    inputs = [] if args[-1].endswith(".png") else [d]
    r = run(*(args + inputs))
    if r.returncode != status or words not in r.stderr:
        checklib.fail("%s: exit %d (expected %d), stderr %r"
                      % (" ".join(args), r.returncode, status, r.stderr))
    if status == 1 and list(emitted(r.stdout)) != ["timm"]:
        checklib.fail("%s: lines %s" % (" ".join(args), emitted(r.stdout)))

print("torchvision: " + texts["torchvision"])
print("numpy:       mean %s std %s" % (np_mean.tolist(), np_std.tolist()))
checklib.finish("emit_check")
