"""Dataset.emit: each framework's form of the constants, the same text as
the command line's --emit (one C function makes both), and its refusals."""
import json
import pathlib
import re
import subprocess

import pytest

import imgstat

ROOT = pathlib.Path(__file__).resolve().parents[2]
FORMS = ["torchvision", "timm", "hf", "mmcv", "detectron2", "keras",
         "albumentations"]


def cli_lines(cli, args):
    """The FORM: TEXT lines of imgstat --dataset-only ARGS: {form: text}."""
    out = subprocess.run([cli, "--dataset-only", "--backend", "cpu"] + args,
                         capture_output=True, text=True).stdout
    lines = {}
    for line in out.split("\n"):
        form, sep, text = line.partition(": ")
        if sep and form in FORMS:
            lines[form] = text
    return lines


@pytest.mark.parametrize("args, kw, forms", [
    ([], {}, FORMS),
    (["--ddof", "1"], {"ddof": 1}, FORMS),
    (["--as", "gray"], {"as_": "gray"},
     ["torchvision", "timm", "hf", "keras", "albumentations"]),
])
def test_emit_like_cli(cli, args, kw, forms):
    folder = str(ROOT / "samples")
    emit = [a for f in forms for a in ("--emit", f)]
    want = cli_lines(cli, args + emit + [folder])
    assert list(want) == forms
    d = imgstat.dataset(folder, scale="unit", backend="cpu", **kw)
    assert {f: d.emit(f) for f in forms} == want
    # the JSON record carries the same texts
    out = subprocess.run([cli, "--dataset-only", "--json", "--backend", "cpu"]
                         + args + emit + [folder], capture_output=True,
                         text=True).stdout
    assert json.loads(out)["dataset"]["emit"] == want


def test_emit_numbers():
    """The forms from the mean and std by hand: x255, BGR, variance."""
    d = imgstat.dataset(str(ROOT / "samples"), scale="unit", backend="cpu")
    m, s = list(d.mean), list(d.std)
    assert json.loads(d.emit("hf"))["image_mean"] == m
    assert json.loads(d.emit("hf"))["image_std"] == s

    def numbers(text):
        return [float(t) for t in re.findall(r"\d+(?:\.\d+)?(?:e-\d+)?",
                                             text.split("#")[0])]

    assert numbers(d.emit("timm")) == m + s
    assert numbers(d.emit("mmcv")) == [v * 255 for v in m + s]
    assert numbers(d.emit("detectron2")) == [
        v * 255 for v in m[::-1] + s[::-1]]
    assert numbers(d.emit("keras")) == [v * 255 for v in m] + [
        (v * 255) * (v * 255) for v in s]


def test_emit_refusals():
    folder = str(ROOT / "samples")
    with pytest.raises(ValueError, match="scale"):
        imgstat.dataset(folder, backend="cpu").emit("torchvision")
    gray = imgstat.dataset(folder, scale="unit", as_="gray", backend="cpu")
    with pytest.raises(ValueError, match="RGB"):
        gray.emit("mmcv")
    assert gray.emit("timm").count(",)") == 2  # one-value tuples
    with pytest.raises(ValueError, match="is not one of"):
        gray.emit("pytorch")
    with pytest.raises(TypeError):
        gray.emit(3)
