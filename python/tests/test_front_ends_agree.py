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
        imgstat.normalize(np.zeros((4, 4, 1025), np.uint8))
    assert "imgstat.stats" not in str(e.value)
    with pytest.raises(ValueError) as e:
        imgstat.normalize(x, layout="whc")
    assert "imgstat.normalize" in str(e.value)


def _sample_rule(paths, n, seed):
    """docs/dataset.md's --sample rule, written here from its text: Knuth's
    selection sampling over the sorted inputs with a splitmix64 generator
    seeded with seed."""
    mask = (1 << 64) - 1
    m = len(paths)
    if n >= m:
        return list(paths)
    state, taken = seed, []
    for i, p in enumerate(paths):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        if float(m - i) * ((z >> 11) * 2.0 ** -53) < float(n - len(taken)):
            taken.append(p)
    return taken


@pytest.fixture
def many(tmp_path):
    """A folder of 17 RGB images in subfolders: (folder, {path: array})."""
    rng = np.random.default_rng(37)
    root = tmp_path / "many"
    images = {}
    for i in range(17):
        sub = root / ("a", "b", "b/c")[i % 3]
        sub.mkdir(parents=True, exist_ok=True)
        a = rng.integers(0, 256, (3 + i % 4, 5, 3), dtype=np.uint8)
        np.save(sub / f"x{i:02d}.npy", a)
        images[str(sub / f"x{i:02d}.npy")] = a
    return root, images


def test_dataset_sample_same_files_as_cli_and_rule(many, cli):
    root, images = many
    paths = sorted(images, key=os.fsencode)  # the walk's byte order
    for n, seed in ((5, 3), (1, 0), (9, 2 ** 64 - 1)):
        want = _sample_rule(paths, n, seed)
        pooled = np.concatenate([images[p].reshape(-1, 3) for p in want])
        d = imgstat.dataset(root, sample=n, seed=seed, jobs=1)
        rec = d.to_dict()["dataset"]
        assert rec["sample"] == {"asked": n, "taken": n, "of": len(paths),
                                 "seed": seed}
        assert d.images == n
        assert d.mean == pytest.approx(
            tuple(pooled.mean(axis=0, dtype=np.float64)), rel=1e-14)
        assert d.std == pytest.approx(tuple(pooled.std(axis=0)), rel=1e-12)
        # -j 2 and the command line: the same record
        assert imgstat.dataset(root, sample=n, seed=seed,
                               jobs=2).to_dict() == d.to_dict()
        run = subprocess.run([cli, "--dataset-only", "--json", "--sample",
                              str(n), "--seed", str(seed), str(root)],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout) == d.to_dict()
        # the files the command line read are the rule's
        run = subprocess.run([cli, "--dataset", "--json", "-j", "2",
                              "--sample", str(n), "--seed", str(seed),
                              str(root)], capture_output=True, text=True)
        files = [json.loads(line)["file"] for line in run.stdout.splitlines()
                 if "dataset" not in json.loads(line)]
        assert files == want
    # the default seed is 0; N >= M is every input, said so
    assert imgstat.dataset(root, sample=4).to_dict() == \
        imgstat.dataset(root, sample=4, seed=0).to_dict()
    rec = imgstat.dataset(root, sample=99).to_dict()["dataset"]
    assert rec["sample"] == {"asked": 99, "taken": 17, "of": 17, "seed": 0}
    assert rec["images"] == 17
    assert "sample" not in imgstat.dataset(root).to_dict()["dataset"]
    for bad in (0, -2, 2 ** 64):
        with pytest.raises(ValueError, match="sample"):
            imgstat.dataset(root, sample=bad)
    for bad in (-1, 2 ** 64):
        with pytest.raises(ValueError, match="seed"):
            imgstat.dataset(root, sample=3, seed=bad)
    with pytest.raises(TypeError, match="sample"):
        imgstat.dataset(root, sample=2.5)
    with pytest.raises(TypeError, match="seed"):
        imgstat.dataset(root, sample=2, seed="1")


def test_dataset_layout_rule_in_python_record(mixed):
    root, images, bad = mixed
    rec = imgstat.dataset(root, errors="record").to_dict()["dataset"]
    assert rec["layout_rule"] == "majority"
    assert rec["layout_counts"] == [{"layout": "RGB", "depth": 8,
                                     "images": len(images)}]


def test_normalize_files_sample_same_files_as_cli(many, cli, tmp_path):
    """normalize_files(dataset=True, sample=, seed=) writes every input
    with the plan of the rule's sample, byte for byte the command line's
    normalize --dataset --sample."""
    root, images = many
    paths = sorted(images, key=os.fsencode)
    want = _sample_rule(paths, 6, 21)
    pooled = np.concatenate([images[p].reshape(-1, 3) for p in want])
    mean, std = pooled.mean(axis=0), pooled.std(axis=0)
    done = imgstat.normalize_files(root, tmp_path / "py", mode="zscore",
                                   dataset=True, sample=6, seed=21)
    assert len(done) == len(paths)
    run = subprocess.run([cli, "normalize", "zscore", "--dataset", "--sample",
                          "6", "--seed", "21", str(root), "-o",
                          str(tmp_path / "cli")], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    for p in paths:
        rel = os.path.relpath(p, root)
        got = np.load(tmp_path / "py" / rel)
        assert (tmp_path / "cli" / rel).read_bytes() == \
            (tmp_path / "py" / rel).read_bytes()
        assert got == pytest.approx((images[p] - mean) / std, rel=1e-5,
                                    abs=1e-5)
    with pytest.raises(ValueError, match="dataset=True"):
        imgstat.normalize_files(root, tmp_path / "no", mode="zscore",
                                sample=3)


def test_dataset_16bit_note_warns_as_the_text_prints_it(tmp_path, cli):
    # two 8-bit and one 16-bit RGB image pooled by scale="unit": the
    # constants differ from a Pillow loader's (convert('RGB') clips 16-bit
    # gray to 0..255), which the command line's text says beside them
    rng = np.random.default_rng(16)
    root = tmp_path / "depths"
    root.mkdir()
    np.save(root / "a.npy", rng.integers(0, 256, (4, 5, 3), dtype=np.uint8))
    np.save(root / "b.npy", rng.integers(0, 256, (4, 5, 3), dtype=np.uint8))
    np.save(root / "c.npy",
            rng.integers(0, 65536, (4, 5, 3), dtype=np.uint16))
    with pytest.warns(UserWarning, match=r"^1 16-bit image pooled, scaled by "
                      r"65535; a loader using Pillow's convert\('RGB'\)"):
        d = imgstat.dataset(root, scale="unit")
    assert d.notes and d.notes[0].startswith("1 16-bit image pooled")
    text = subprocess.run([cli, "--dataset-only", "--scale", "unit",
                           str(root)], capture_output=True, text=True)
    assert text.returncode == 0
    assert "note: " + d.notes[0] in text.stdout.splitlines()
    # 8-bit only: no note and no warning
    (root / "c.npy").unlink()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert imgstat.dataset(root, scale="unit").notes == []
