"""The records of imgstat.stats, scan and dataset are the command line's
JSON records for the same files (samples, tests/data, the corpus)."""

import json
import math
import os
import subprocess

import numpy as np
import pytest

import imgstat
from conftest import ROOT

SKIP = {".txt", ".md", ".tsv", ".LICENSE", ".README"}


def images_in(folder):
    if not folder.is_dir():
        return []
    return sorted(str(p) for p in folder.iterdir()
                  if p.is_file() and p.suffix not in SKIP
                  and not p.name.startswith(("LICENSE", "README")))


def files():
    found = images_in(ROOT / "samples")
    found += images_in(ROOT / "tests" / "data" / "formats")
    corpus = os.environ.get("IMGSTAT_CORPUS",
                            str(ROOT.parent / "shared" / "corpus"))
    for sub in ("photos", "hdr"):
        found += images_in(__import__("pathlib").Path(corpus) / sub)[:20]
    return found


def cli_records(cli, args, backend=("--backend", "cpu")):
    run = subprocess.run([cli, *backend, "--json",
                          "--errors-as-records"] + args,
                         capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


@pytest.mark.parametrize("histogram", [False, True])
def test_stats_like_cli(cli, histogram):
    paths = files()
    assert len(paths) >= 5
    extra = ["--histogram"] if histogram else []
    records = cli_records(cli, extra + paths)
    assert len(records) == len(paths)
    for path, want in zip(paths, records):
        if "error" in want:
            with pytest.raises(imgstat.ImageError) as e:
                imgstat.stats(path, backend="cpu", histogram=histogram)
            assert e.value.path == path
            assert want["error"].startswith(e.value.message)
            continue
        got = imgstat.stats(path, backend="cpu", histogram=histogram).to_dict()
        assert list(got) == list(want)  # the keys, in order
        assert got == want


def test_scan_like_cli(cli):
    folder = ROOT / "samples"
    want = cli_records(cli, [str(folder)])
    got = [r.to_dict() for r in imgstat.scan([folder], backend="cpu",
                                             errors="record")]
    assert got == want


@pytest.mark.parametrize("args, kw", [
    ([], {}),
    (["--scale", "unit"], {"scale": "unit"}),
    (["--as", "gray"], {"as_": "gray"}),
    (["--ddof", "1", "--histogram"], {"ddof": 1, "histogram": True}),
])
def test_dataset_like_cli(cli, args, kw):
    folder = str(ROOT / "samples")
    want = cli_records(cli, ["--dataset-only"] + args + [folder])
    assert len(want) == 1
    got = imgstat.dataset(folder, backend="cpu", **kw).to_dict()
    assert got == want[0]


@pytest.mark.parametrize("decoder", ["cpu", "gpu"])
def test_scan_jpeg_decoder_like_cli(cli, decoder):
    """--jpeg-decoder: the same records (with gpu the "decoder" key; in a
    build without CUDA the same failures)."""
    folder = ROOT / "samples"
    want = cli_records(cli, ["--jpeg-decoder", decoder, str(folder)],
                       backend=())
    got = [r.to_dict() for r in imgstat.scan([folder], errors="record",
                                             jpeg_decoder=decoder)]
    # the GPU the decoder needs: named as each front end spells the setting
    for r in want:
        flag = "--jpeg-decoder gpu"
        if r.get("error", "").startswith(flag + " "):
            r["error"] = "jpeg_decoder=gpu" + r["error"][len(flag):]
    assert got == want
    for r in imgstat.scan([folder], errors="record", jpeg_decoder=decoder):
        if isinstance(r, imgstat.ImageError) and "usable GPU" in r.message:
            assert r.cause == "gpu_unusable"
    if decoder == "gpu" and not imgstat.cuda:
        assert all("decoder" in r or "error" in r for r in got)


def test_jpeg_decoder_refused():
    with pytest.raises(ValueError):
        imgstat.scan([ROOT / "samples"], jpeg_decoder="nvjpeg")
    with pytest.raises(ValueError):
        imgstat.dataset(ROOT / "samples", jpeg_decoder="gpu", backend="cpu")


def test_dataset_float_percentiles_exact(cli, tmp_path):
    """Float dataset percentiles are numpy's order statistic by the rank
    rule (k = max(1, ceil(p N / 100)) of the finite samples), as the
    command line gives them, even with most samples in one bin."""
    rng = np.random.default_rng(5)
    arrays = []
    for i in range(4):
        a = rng.normal(0, 1, (12, 9, 3)).astype(np.float32)
        a[:, :, 1] = np.round(a[:, :, 1] * 2) / 2  # ties
        a[0, 0, 0] = 1e7 if i == 0 else np.nan
        np.save(tmp_path / ("f%d.npy" % i), a)
        arrays.append(a.reshape(-1, 3))
    pcts = [0.5, 10, 50, 99.5]
    got = imgstat.dataset(tmp_path, backend="cpu", histogram=True,
                          percentiles=pcts).to_dict()
    want = cli_records(cli, ["--dataset-only", "--histogram",
                             "--percentiles", "0.5,10,50,99.5",
                             str(tmp_path)])
    assert got == want[0]
    pooled = np.concatenate(arrays)
    for c, st in enumerate(got["dataset"]["stats"]):
        x = np.sort(pooled[:, c][np.isfinite(pooled[:, c])])
        ranks = [max(1, math.ceil(p * x.size / 100)) for p in pcts]
        assert list(st["percentiles"].values()) == [
            float(x[k - 1]) for k in ranks]
        assert st["median"] == float(x[math.ceil(x.size / 2) - 1])
