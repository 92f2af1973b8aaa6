"""imgstat.normalize_files: the written files against the rules of
docs/normalize.md computed with numpy from the inputs, the output plan
(naming, collisions, inputs never replaced, nothing half-written), the
errors= convention, and the files of `imgstat normalize` for the same
arguments, byte for byte."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import imgstat
from conftest import ROOT


def full(dtype):
    return np.iinfo(dtype).max


def minmax_int(x, lo, hi, top):
    """Integer in, integer out: round_half_even((x - lo) * top / (hi - lo)),
    exact (np.rint of a float64 is half-even; these products fit)."""
    x = x.astype(np.int64)
    return np.rint((x - lo) * top / (hi - lo)).astype(np.int64)


def files_under(folder):
    """Every file below folder (relative paths), temporaries included."""
    out = []
    for dirpath, _, names in os.walk(folder):
        for n in names:
            out.append(os.path.relpath(os.path.join(dirpath, n), folder))
    return sorted(out)


@pytest.fixture
def arrays(tmp_path):
    """Random .npy inputs in a folder with a subfolder: uint8 HWC images."""
    rng = np.random.default_rng(19)
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    images = {}
    for name, shape in (("a.npy", (13, 17, 3)), ("b.npy", (9, 11, 3)),
                        ("sub/c.npy", (20, 7, 3))):
        a = rng.integers(20, 230, shape, dtype=np.uint8)
        np.save(src / name, a)
        images[name] = a
    return src, images


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_minmax_per_image(tmp_path, dtype):
    rng = np.random.default_rng(3)
    src = tmp_path / "in"
    src.mkdir()
    images = {}
    for k in range(3):
        a = rng.integers(full(dtype) // 7, full(dtype) // 2, (10 + k, 12, 3),
                         dtype=dtype)
        np.save(src / f"i{k}.npy", a)
        images[f"i{k}.npy"] = a
    out = tmp_path / "out"
    done = imgstat.normalize_files(src, out, format="npy")
    assert [os.path.basename(d.input) for d in done] == sorted(images)
    for d in done:
        assert not d.skipped
        assert d.output == str(out / os.path.basename(d.input))
        a = images[os.path.basename(d.input)]
        got = np.load(d.output)
        assert got.dtype == dtype and got.shape == a.shape
        for c in range(3):
            x = a[:, :, c]
            want = minmax_int(x, int(x.min()), int(x.max()), full(dtype))
            assert np.array_equal(got[:, :, c].astype(np.int64), want)


def test_folders_mirrored_chw_and_zscore(arrays, tmp_path):
    src, images = arrays
    out = tmp_path / "out"
    done = imgstat.normalize_files([src], out, mode="zscore", layout="chw")
    assert files_under(out) == sorted(images)  # .npy for float32
    assert len(done) == 3
    for d in done:
        rel = os.path.relpath(d.input, src)
        assert d.output == str(out / rel)
        a = images[rel]
        got = np.load(d.output)
        assert got.dtype == np.float32 and got.shape == (3,) + a.shape[:2]
        for c in range(3):
            x = a[:, :, c].astype(np.float64)
            want = (x - x.mean()) / x.std()
            np.testing.assert_allclose(got[c], want, rtol=1e-5, atol=1e-6)


def test_given_unit_scale_pfm(tmp_path):
    rng = np.random.default_rng(8)
    a = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
    np.save(tmp_path / "x.npy", a)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    out = tmp_path / "x.pfm"
    (d,) = imgstat.normalize_files(tmp_path / "x.npy", out, mean=mean,
                                   std=std, scale="unit")
    assert d.output == str(out)
    raw = out.read_bytes()
    # PF, width height, -1 (little-endian), then rows bottom first
    header = raw.split(b"\n", 3)
    assert header[0] == b"PF" and header[1] == b"5 6"
    assert float(header[2]) < 0
    got = np.frombuffer(header[3], dtype="<f4").reshape(6, 5, 3)[::-1]
    want = (a.astype(np.float64) / 255 - np.array(mean)) / np.array(std)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_dataset_minmax_and_zscore(arrays, tmp_path):
    src, images = arrays
    pooled = np.concatenate([a.reshape(-1, 3) for a in images.values()])
    lo, hi = pooled.min(axis=0), pooled.max(axis=0)
    done = imgstat.normalize_files(src, tmp_path / "mm", dataset=True,
                                   format="npy")
    for d in done:
        a = images[os.path.relpath(d.input, src)]
        got = np.load(d.output)
        for c in range(3):
            want = minmax_int(a[:, :, c], int(lo[c]), int(hi[c]), 255)
            assert np.array_equal(got[:, :, c].astype(np.int64), want)
    x = pooled.astype(np.float64)
    mean, std = x.mean(axis=0), x.std(axis=0)
    done = imgstat.normalize_files(src, tmp_path / "z", mode="zscore",
                                   dataset=True)
    outs = []
    for d in done:
        a = images[os.path.relpath(d.input, src)].astype(np.float64)
        got = np.load(d.output)
        np.testing.assert_allclose(got, (a - mean) / std, rtol=1e-5,
                                   atol=1e-6)
        outs.append(got.reshape(-1, 3).astype(np.float64))
    allz = np.concatenate(outs)  # the pool is standardized, not each image
    np.testing.assert_allclose(allz.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(allz.std(axis=0), 1, atol=1e-5)


def test_dataset_refused_writes_nothing(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    np.save(src / "rgb.npy", np.zeros((4, 4, 3), dtype=np.uint8) + 7)
    np.save(src / "gray.npy", np.arange(16, dtype=np.uint8).reshape(4, 4))
    with pytest.raises(ValueError, match="refused"):
        imgstat.normalize_files(src, tmp_path / "out", dataset=True)
    assert not (tmp_path / "out").exists()
    # converted to one layout first, it pools
    done = imgstat.normalize_files(src, tmp_path / "out", dataset=True,
                                   as_="rgb", format="npy")
    assert [np.load(d.output).shape for d in done] == [(4, 4, 3)] * 2


@pytest.mark.parametrize("errors", ["raise", "skip", "record"])
def test_dataset_of_no_images_raises(tmp_path, errors):
    """A dataset plan needs images: a folder that does not exist or holds
    none raises ImageError naming it, whatever errors= says (as the command
    line fails), and no file is written."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not an image")
    for folder in (tmp_path / "nosuch", empty):
        with pytest.raises(imgstat.ImageError) as e:
            imgstat.normalize_files(folder, tmp_path / "out", mode="zscore",
                                    dataset=True, errors=errors)
        assert e.value.path.rstrip("/") == str(folder)
        out = tmp_path / "out"
        assert not out.exists() or not any(out.iterdir())


def test_plan_refused_before_any_work(arrays, tmp_path):
    src, images = arrays
    before = {p: (src / p).read_bytes() for p in images}
    # an output that is an input
    with pytest.raises(ValueError, match="overwrite an input"):
        imgstat.normalize_files(src, src, format="npy")
    # two inputs, one output (x.npy and x.png both give OUT/x.*)
    shutil.copy(ROOT / "samples" / "camera.png", src / "a.png")
    with pytest.raises(ValueError, match="both be written"):
        imgstat.normalize_files(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    # a name that says no format the run writes
    with pytest.raises(ValueError):
        imgstat.normalize_files(src / "a.npy", tmp_path / "x.jpg")
    # float32 output in PNG
    with pytest.raises(ValueError):
        imgstat.normalize_files(src / "a.npy", tmp_path / "x.png",
                                mode="zscore")
    with pytest.raises(ValueError):
        imgstat.normalize_files(src, tmp_path / "o", mean=[1], std=[2],
                                dataset=True)
    with pytest.raises(ValueError):
        imgstat.normalize_files(src, tmp_path / "o", mode="median")
    assert {p: (src / p).read_bytes() for p in images} == before
    assert not (tmp_path / "o").exists()


def test_errors_convention_and_no_temporaries(arrays, tmp_path):
    src, images = arrays
    whole = (src / "a.npy").read_bytes()  # a header, then too few samples
    (src / "broken.npy").write_bytes(whole[:len(whole) - 5])
    out = tmp_path / "out"
    with pytest.raises(imgstat.RunFailed) as e:
        imgstat.normalize_files(src, out, jobs=1, format="npy")
    assert e.value.path == str(src / "broken.npy")
    assert e.value.status in ("format", "io") and e.value.message
    # the run went on past it: every other file is written, whole
    assert files_under(out) == sorted(images)
    assert [os.path.relpath(d.input, src) for d in e.value.result] == \
        sorted(images)
    done = imgstat.normalize_files(src, out, errors="skip", format="npy")
    assert [os.path.relpath(d.input, src) for d in done] == sorted(images)
    got = imgstat.normalize_files(src, out, errors="record", format="npy")
    assert [type(g).__name__ for g in got] == [
        "NormalizedFile", "NormalizedFile", "ImageError", "NormalizedFile"]
    assert got[2].path == str(src / "broken.npy")
    # complete files only: no temporary beside them
    assert files_under(out) == sorted(images)
    with pytest.raises(ValueError):
        imgstat.normalize_files(src, out, errors="ignore")


def test_skip_existing(arrays, tmp_path):
    src, images = arrays
    out = tmp_path / "out"
    imgstat.normalize_files(src, out, format="npy")
    stamp = (out / "a.npy").read_bytes()
    (out / "a.npy").write_bytes(b"left alone")
    done = imgstat.normalize_files(src, out, format="npy", skip_existing=True)
    assert [d.skipped for d in done] == [True] * 3
    assert (out / "a.npy").read_bytes() == b"left alone"
    (out / "a.npy").unlink()
    done = imgstat.normalize_files(src, out, format="npy", skip_existing=True)
    assert [d.skipped for d in done] == [False, True, True]
    assert (out / "a.npy").read_bytes() == stamp


# ---- against the command line, byte for byte ---------------------------------

CASES = [
    ([], {}),
    (["clip", "1,99"], {"mode": "clip", "clip": (1, 99)}),
    (["clip", "2,98", "--linked"], {"mode": "clip", "clip": (2, 98),
                                    "linked": True}),
    (["--depth", "16", "--compression", "6"], {"dtype": "uint16",
                                               "compression": 6}),
    (["zscore"], {"mode": "zscore"}),
    (["zscore", "--layout", "chw"], {"mode": "zscore", "layout": "chw"}),
    (["--mean", "120,110,100", "--std", "60,50,40", "--format", "pfm"],
     {"mean": (120, 110, 100), "std": (60, 50, 40), "format": "pfm"}),
    (["--range", "0.1,0.9", "--scale", "unit"], {"range": (0.1, 0.9),
                                                 "scale": "unit"}),
    (["--alpha", "drop", "--format", "npy"], {"alpha": "drop",
                                              "format": "npy"}),
    (["--dataset", "--as", "rgb"], {"dataset": True, "as_": "rgb"}),
    (["zscore", "--dataset", "--as", "rgb", "--scale", "unit"],
     {"mode": "zscore", "dataset": True, "as_": "rgb", "scale": "unit"}),
    (["clip", "1,99", "--dataset", "--as", "gray"],  # refused: depths
     {"mode": "clip", "clip": (1, 99), "dataset": True, "as_": "gray"}),
    (["clip", "1,99", "--dataset", "--as", "gray", "--scale", "unit"],
     {"mode": "clip", "clip": (1, 99), "dataset": True, "as_": "gray",
      "scale": "unit"}),
    (["--dataset", "--linked", "--as", "rgba", "--scale", "unit", "-j", "3"],
     {"dataset": True, "linked": True, "as_": "rgba", "scale": "unit",
      "jobs": 3}),
]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Images of every depth and layout (8/16-bit, float, gray, RGB, RGBA,
    palette) in a folder with a subfolder, and a damaged PNG."""
    src = tmp_path_factory.mktemp("mixed")
    (src / "sub").mkdir()
    for name in ("camera.png", "kodim23.png", "monkey16.png", "testorig.jpg",
                 "vgl_6434_0018a.bmp", "image1.hdr"):
        shutil.copy(ROOT / "samples" / name, src / name)
    for name in ("rgba.tga", "gray16.pgm", "pal.gif", "rgb.ppm"):
        shutil.copy(ROOT / "tests" / "data" / "formats" / name,
                    src / "sub" / name)
    whole = (ROOT / "samples" / "camera.png").read_bytes()
    (src / "sub" / "broken.png").write_bytes(whole[:len(whole) // 2])
    return src


@pytest.mark.parametrize("args,kwargs", CASES)
def test_like_cli(cli, mixed, tmp_path, args, kwargs):
    src = mixed
    a, b = tmp_path / "cli", tmp_path / "py"
    run = subprocess.run([cli, "normalize", "--backend", "cpu", *args,
                          str(src), "-o", str(a)], capture_output=True,
                         text=True)
    try:
        done = imgstat.normalize_files(src, b, backend="cpu",
                                       errors="record", **kwargs)
    except ValueError as e:  # refused: by the command line too, no file
        assert run.returncode != 0 and not a.exists() and not b.exists()
        assert str(e).split(":")[0] in run.stderr
        return
    assert run.returncode in (0, 1), run.stderr
    names = files_under(a)
    assert names == files_under(b)
    for n in names:
        assert (a / n).read_bytes() == (b / n).read_bytes(), n
    failed = [d for d in done if isinstance(d, imgstat.ImageError)]
    assert (run.returncode != 0) == bool(failed), run.stderr
    for f in failed:  # the command line names the same files (an output
        # that could not be written: in its folder); a setting's failure in
        # its own words (its flags), Python's in the library's
        path = f.path.replace(str(b), str(a), 1)
        said = f"imgstat: {path}: " + ("" if f.cause else f.message)
        assert said in run.stderr
        if f.cause == "mean_std":  # a count that does not fit the image
            assert f.value == len(kwargs["mean"]) and "--" not in f.message
    assert len(names) + len(failed) == len(done)


def test_one_file_like_cli(cli, tmp_path):
    src = ROOT / "samples" / "camera.png"
    for name in ("o.png", "o.npy", "o.pfm"):
        subprocess.run([cli, "normalize", "--backend", "cpu", "clip", "1,99",
                        str(src), "-o", str(tmp_path / ("cli-" + name))],
                       check=True, capture_output=True)
        (d,) = imgstat.normalize_files(src, tmp_path / name, mode="clip",
                                       backend="cpu")
        assert d.output == str(tmp_path / name)
        assert ((tmp_path / name).read_bytes() ==
                (tmp_path / ("cli-" + name)).read_bytes())


def test_scale_unit_converts_as_the_dataset_pools(tmp_path):
    """scale="unit" without as_ converts to RGB, as imgstat.dataset and the
    command line do: a gray first file neither picks the pool's layout nor
    fails; as_="keep" pools the layout most images have."""
    from PIL import Image
    src = tmp_path / "in"
    src.mkdir()
    rng = np.random.default_rng(5)
    gray = rng.integers(0, 256, (4, 5), dtype=np.uint8)
    Image.fromarray(gray).save(src / "a.png")
    rgbs = [rng.integers(0, 256, (3, 2, 3), dtype=np.uint8) for _ in range(2)]
    for k, a in enumerate(rgbs):
        Image.fromarray(a).save(src / ("b%d.png" % k))
    px = np.concatenate([np.stack([gray] * 3, -1).reshape(-1, 3)] +
                        [a.reshape(-1, 3) for a in rgbs]) / 255.0
    d = imgstat.dataset(str(src), scale="unit")
    assert np.allclose(d.mean, px.mean(axis=0), rtol=1e-12)
    keep = imgstat.dataset(str(src), as_="keep")
    rgb_px = np.concatenate([a.reshape(-1, 3) for a in rgbs])
    assert keep.pooled == 2 and len(keep.mean) == 3
    assert np.allclose(keep.mean, rgb_px.mean(axis=0), rtol=1e-12)
    imgstat.normalize_files(str(src), str(tmp_path / "z"), mode="zscore",
                            dataset=True, scale="unit")
    z = np.load(tmp_path / "z" / "a.npy")
    want = (np.stack([gray] * 3, -1) / 255.0 - px.mean(axis=0)) / \
        px.std(axis=0)
    assert z.shape == (4, 5, 3) and np.allclose(z, want, atol=1e-5)
