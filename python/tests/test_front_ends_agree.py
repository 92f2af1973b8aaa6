"""One failure policy and one vocabulary in every front end: a run over
files goes past an input that fails and reports it after the run (the
command line by exit 1, Python by RunFailed carrying the partial result);
the word a record says (scale "none") is taken as input everywhere, with
"native"; Python's normalize can give CHW output as ``imgstat normalize
--layout chw`` writes it."""

import json
import os
import subprocess

import numpy as np
import pytest

import imgstat


@pytest.fixture
def mixed(tmp_path):
    """A folder with RGB images in a subfolder and a corrupt JPEG between
    them: (folder, the arrays by relative path, the corrupt file)."""
    rng = np.random.default_rng(7)
    root = tmp_path / "ds"
    (root / "sub").mkdir(parents=True)
    images = {}
    for name in ("a.npy", "sub/c.npy", "sub/d.npy"):
        a = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
        np.save(root / name, a)
        images[name] = a
    bad = root / "b.jpg"  # a JPEG's start, then nothing
    bad.write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00")
    return root, images, bad


def test_dataset_finishes_then_raises_with_the_result(mixed, cli):
    root, images, bad = mixed
    pooled = np.concatenate([a.reshape(-1, 3) for a in images.values()])
    with pytest.raises(imgstat.RunFailed) as e:
        imgstat.dataset(root)
    assert isinstance(e.value, imgstat.ImageError)
    assert [f.path for f in e.value.failures] == [str(bad)]
    assert e.value.path == str(bad)
    d = e.value.result
    assert d.images == d.pooled == len(images)
    assert d.mean == pytest.approx(
        tuple(pooled.mean(axis=0, dtype=np.float64)), rel=1e-14)
    # the opt-out: the Dataset, the failure in it
    d = imgstat.dataset(root, errors="record")
    assert [f.path for f in d.failures] == [str(bad)]
    assert d.mean == pytest.approx(
        tuple(pooled.mean(axis=0, dtype=np.float64)), rel=1e-14)
    with pytest.raises(ValueError, match="'raise' or 'record'"):
        imgstat.dataset(root, errors="ignore")
    # the command line: the same record, exit 1
    run = subprocess.run([cli, "--dataset-only", "--json", str(root)],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert str(bad) in run.stderr
    assert run.stdout.strip()


def test_normalize_files_writes_every_other_input_then_raises(mixed,
                                                              tmp_path):
    root, images, bad = mixed
    out = tmp_path / "out"
    with pytest.raises(imgstat.RunFailed) as e:
        imgstat.normalize_files(root, out, jobs=1, format="npy")
    assert [f.path for f in e.value.failures] == [str(bad)]
    # the inputs after the corrupt one were written too
    done = e.value.result
    assert sorted(os.path.relpath(d.input, root) for d in done) == \
        sorted(images)
    for name, a in images.items():
        got = np.load(out / name)
        lo = a.min(axis=(0, 1))
        hi = a.max(axis=(0, 1))
        want = np.rint((a.astype(np.float64) - lo) * 255 / (hi - lo))
        assert np.array_equal(got, want.astype(np.uint8))
    got = imgstat.normalize_files(root, tmp_path / "o2", errors="skip",
                                  format="npy")
    assert len(got) == len(images)


def test_scan_yields_every_image_then_raises(mixed):
    root, images, bad = mixed
    seen = []
    with pytest.raises(imgstat.RunFailed) as e:
        for r in imgstat.scan(root, jobs=1):
            seen.append(os.path.relpath(r.file, root))
    assert seen == sorted(images)
    assert [f.path for f in e.value.failures] == [str(bad)]
    assert e.value.result is None


def test_scale_words_of_the_record_are_taken_everywhere(mixed, cli):
    root, images, bad = mixed
    os.remove(bad)
    a = imgstat.dataset(root)
    assert a.to_dict()["dataset"]["scale"] == "none"
    for word in ("none", "native"):
        d = imgstat.dataset(root, scale=word)
        assert d.mean == a.mean
        run = subprocess.run([cli, "--dataset-only", "--json", "--scale",
                              word, str(root)], capture_output=True,
                             text=True)
        assert run.returncode == 0, run.stderr
        rec = json.loads(run.stdout.strip().splitlines()[-1])
        assert rec["dataset"]["scale"] == "none"
        assert tuple(c["mean"] for c in rec["dataset"]["stats"]) == a.mean
        run = subprocess.run([cli, "normalize", "--scale", word, "--mean",
                              "100", "--std", "50", str(root / "a.npy"),
                              "-o", str(root / "z.npy")],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        os.remove(root / "z.npy")
    x = images["a.npy"]
    same = imgstat.normalize(x, mean=[100], std=[50], scale="native")
    assert np.array_equal(imgstat.normalize(x, mean=[100], std=[50],
                                            scale="none"), same)
    # every refusal lists the same words
    for call in (lambda: imgstat.dataset(root, scale="units"),
                 lambda: imgstat.normalize(x, mean=[1], std=[1],
                                           scale="units")):
        with pytest.raises(ValueError) as e:
            call()
        for word in ("native", "none", "unit"):
            assert f"'{word}'" in str(e.value)
    run = subprocess.run([cli, "--dataset-only", "--scale", "percent",
                          str(root)], capture_output=True, text=True)
    assert run.returncode == 2
    for word in ("native", "none", "unit"):
        assert word in run.stderr


def test_normalize_gives_chw_output_and_names_itself(mixed):
    _, images, _ = mixed
    x = images["a.npy"]
    hwc = imgstat.normalize(x)
    chw = imgstat.normalize(x, out_layout="chw")
    assert chw.shape == (3, 6, 5) and chw.flags.c_contiguous
    assert np.array_equal(chw, np.transpose(hwc, (2, 0, 1)))
    back = imgstat.normalize(np.ascontiguousarray(np.transpose(x, (2, 0, 1))),
                             layout="chw", out_layout="hwc")
    assert np.array_equal(back, hwc)
    with pytest.raises(ValueError) as e:
        imgstat.normalize(np.zeros((4, 4, 5), np.uint8))
    assert "imgstat.stats" not in str(e.value)
    with pytest.raises(ValueError) as e:
        imgstat.normalize(x, layout="whc")
    assert "imgstat.normalize" in str(e.value)
