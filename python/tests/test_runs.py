"""imgstat.scan and imgstat.dataset over folders of .npy files written by
numpy, against numpy; errors; python -m imgstat."""

import os
import subprocess
import sys

import numpy as np
import pytest

import imgstat
from conftest import ROOT, check_channel, reference


@pytest.fixture
def folder(tmp_path):
    """A folder tree of RGB uint8 .npy images (some in a subfolder), and
    their arrays by path in the walk's order (byte order of the paths)."""
    rng = np.random.default_rng(42)
    (tmp_path / "sub").mkdir()
    images = {}
    for k in range(9):
        name = f"img{k}.npy" if k % 3 else f"sub/img{k}.npy"
        a = rng.integers(0, 256, (20 + k, 30 + 2 * k, 3), dtype=np.uint8)
        np.save(tmp_path / name, a)
        images[str(tmp_path / name)] = a
    (tmp_path / "notes.txt").write_text("not an image")
    order = sorted(images, key=os.fsencode)
    return tmp_path, {p: images[p] for p in order}


@pytest.mark.parametrize("jobs", [0, 1, 3])
def test_scan_order_and_figures(folder, jobs):
    root, images = folder
    results = list(imgstat.scan([root], jobs=jobs))
    assert [r.file for r in results] == list(images)
    for r in results:
        a = images[r.file]
        for c, got in enumerate(r.to_dict()["stats"]):
            check_channel(got, reference(a[:, :, c]), False)


def test_scan_errors(folder):
    root, images = folder
    bad = root / "broken.npy"  # a truncated .npy file
    np.save(bad, np.zeros((10, 10, 3), dtype=np.uint8))
    bad.write_bytes(bad.read_bytes()[:-7])
    missing = root / "missing.png"
    inputs = [root, missing]
    with pytest.raises(imgstat.RunFailed) as e:
        list(imgstat.scan(inputs))
    assert e.value.path == str(bad)
    assert e.value.status == "format"
    # the run went past both: each failure, in input order
    assert [f.path for f in e.value.failures] == [str(bad), str(missing)]
    skipped = list(imgstat.scan(inputs, errors="skip"))
    assert [r.file for r in skipped] == list(images)
    recorded = list(imgstat.scan(inputs, errors="record"))
    assert len(recorded) == len(images) + 2
    errors = [r for r in recorded if isinstance(r, imgstat.ImageError)]
    assert [e.path for e in errors] == [str(bad), str(missing)]
    assert errors[1].status == "io"
    assert errors[1].to_dict() == {"file": str(missing),
                                   "error": errors[1].message}


def _stats_in_worker(path):
    return imgstat.stats(path)


def test_results_cross_processes(folder):
    """Stats, ImageError and Dataset survive pickling (a process pool hands
    results and errors back that way), with the same figures."""
    import concurrent.futures
    import copy
    import multiprocessing
    import pickle

    root, images = folder
    path = next(iter(images))
    s = imgstat.stats(path)
    for t in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert t.to_dict() == s.to_dict()
        assert (t.mean, t.std, t.sum) == (s.mean, s.std, s.sum)
    e = imgstat.ImageError(str(root / "x.png"), "format", "bad header")
    f = pickle.loads(pickle.dumps(e))
    assert (f.path, f.status, f.message, str(f)) == \
        (e.path, e.status, e.message, str(e))
    d = imgstat.dataset([root])
    assert pickle.loads(pickle.dumps(d)).to_dict() == d.to_dict()
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        got = pool.submit(_stats_in_worker, path).result()
        assert got.to_dict() == s.to_dict()
        with pytest.raises(imgstat.ImageError) as err:
            pool.submit(_stats_in_worker, str(root / "notes.txt")).result()
    assert err.value.path == str(root / "notes.txt")
    assert err.value.status in ("format", "unsupported")


def test_scan_stops_early(folder):
    root, images = folder
    it = imgstat.scan([root], jobs=2)
    first = next(it)
    assert first.file == next(iter(images))
    it.close()
    with pytest.raises(StopIteration):
        next(it)


def test_scan_files_from(folder, tmp_path):
    root, images = folder
    chosen = list(images)[::2]
    listing = tmp_path / "list.txt"
    listing.write_text("".join(p + "\n" for p in chosen))
    got = [r.file for r in imgstat.scan([], files_from=listing)]
    assert got == chosen


def test_dataset_pooled(folder):
    root, images = folder
    d = imgstat.dataset(root)
    pooled = np.concatenate([a.reshape(-1, 3) for a in images.values()])
    assert d.images == d.pooled == len(images)
    assert d.count == (pooled.shape[0],) * 3
    assert d.mean == pytest.approx(tuple(pooled.mean(axis=0, dtype=np.float64)),
                                   rel=1e-14)
    assert d.std == pytest.approx(tuple(pooled.std(axis=0, dtype=np.float64)),
                                  rel=1e-12)
    stats = d.to_dict()["dataset"]["stats"]
    sums = [sum(int(v) for v in pooled[:, c].tolist()) for c in range(3)]
    assert [s["sum"] for s in stats] == sums
    assert d.failures == []


def test_dataset_unit_scale(folder):
    root, images = folder
    d = imgstat.dataset(root, scale="unit")
    pooled = np.concatenate([a.reshape(-1, 3) for a in images.values()])
    unit = pooled.astype(np.float64) / 255
    assert d.mean == pytest.approx(tuple(unit.mean(axis=0)), rel=1e-12)
    assert d.std == pytest.approx(tuple(unit.std(axis=0)), rel=1e-12)


def test_dataset_layouts_and_failures(tmp_path):
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (8, 9, 3), dtype=np.uint8)
    gray = rng.integers(0, 256, (8, 9), dtype=np.uint8)
    np.save(tmp_path / "a.npy", rgb)
    np.save(tmp_path / "b.npy", gray)
    (tmp_path / "c.npy").write_bytes(b"nope")
    with pytest.raises(imgstat.RunFailed) as e:
        imgstat.dataset(tmp_path)
    assert e.value.result.pooled == 1
    keep = imgstat.dataset(tmp_path, errors="record")
    assert keep.pooled == 1 and len(keep.excluded) == 1
    assert [f.path for f in keep.failures] == [str(tmp_path / "c.npy")]
    as_rgb = imgstat.dataset(tmp_path, as_="rgb", errors="record")
    assert as_rgb.pooled == 2
    pooled = np.concatenate([rgb.reshape(-1, 3),
                             np.repeat(gray.reshape(-1, 1), 3, axis=1)])
    assert as_rgb.mean == pytest.approx(
        tuple(pooled.mean(axis=0, dtype=np.float64)), rel=1e-14)
    with pytest.raises(ValueError):
        imgstat.dataset(tmp_path, as_="cmyk")
    with pytest.raises(ValueError):
        imgstat.dataset(tmp_path, scale="percent")


def test_dataset_of_no_images_raises(tmp_path):
    """A folder that does not exist, or holds no images, has no mean or std:
    ImageError naming it (the command line fails on it too), not an empty
    Dataset."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not an image")
    with pytest.raises(imgstat.ImageError) as e:
        imgstat.dataset(tmp_path / "nosuch")
    assert e.value.path == str(tmp_path / "nosuch")
    assert e.value.status == "io"
    with pytest.raises(imgstat.ImageError) as e:
        imgstat.dataset(str(empty) + "/", scale="unit")
    assert e.value.path.rstrip("/") == str(empty)
    assert "no image files" in e.value.message
    # every input failed: the first failure, in input order
    (tmp_path / "bad.npy").write_bytes(b"nope")
    with pytest.raises(imgstat.ImageError) as e:
        imgstat.dataset([tmp_path / "bad.npy", empty])
    assert e.value.path == str(tmp_path / "bad.npy")
    with pytest.raises(ValueError):
        imgstat.dataset([])


def test_namespace_exports_only_the_api():
    """dir(imgstat) and `from imgstat import *` give the package's API, not
    the modules and typing names it uses."""
    public = {n for n in dir(imgstat) if not n.startswith("_")}
    assert public <= set(imgstat.__all__) | {"_imgstat"}
    for name in ("json", "os", "sys", "Any", "Optional", "annotations"):
        assert name not in public, name
    scope = {}
    exec("from imgstat import *", scope)
    assert {"dataset", "cuda", "cuda_available", "program"} <= set(scope)
    assert not {"json", "os", "sys", "Any"} & set(scope)


def _nvidia_devices():
    """The GPUs nvidia-smi lists, an account independent of imgstat (0
    without nvidia-smi or a driver)."""
    import shutil
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    run = subprocess.run([smi, "-L"], capture_output=True, text=True)
    if run.returncode != 0:
        return 0
    return sum(line.startswith("GPU ") for line in run.stdout.splitlines())


def test_cuda_available_says_whether_a_gpu_is_usable():
    """imgstat.cuda describes the build; cuda_available() is True only with
    the CUDA backend and a device present."""
    assert isinstance(imgstat.cuda, bool)
    available = imgstat.cuda_available()
    assert isinstance(available, bool)
    assert available == (imgstat.cuda and _nvidia_devices() > 0)
    if not available:
        with pytest.raises(imgstat.ImageError):
            imgstat.stats(np.zeros((4, 4), dtype=np.uint8), backend="gpu")


def test_bad_scan_arguments(tmp_path):
    with pytest.raises(ValueError):
        imgstat.scan([tmp_path], errors="ignore")
    with pytest.raises(TypeError):
        imgstat.scan([3])
    with pytest.raises(ValueError):
        imgstat.scan([])


def test_python_m_imgstat():
    run = subprocess.run([sys.executable, "-m", "imgstat", "--version"],
                         capture_output=True, text=True)
    assert run.returncode == 0
    assert run.stdout.startswith("imgstat " + imgstat.__version__)
    run = subprocess.run([sys.executable, "-m", "imgstat", "--no-such"],
                         capture_output=True, text=True)
    assert run.returncode == 2


def test_ctrl_c_stops_scan(tmp_path):
    """SIGINT during a long scan raises KeyboardInterrupt promptly and the
    process ends (the run's threads stopped)."""
    import signal
    import time

    image = ROOT / "samples" / "kodim23.png"
    listing = tmp_path / "list.txt"
    listing.write_text(f"{image}\n" * 20000)
    code = ("import imgstat, sys\n"
            "print('started', flush=True)\n"
            f"for r in imgstat.scan([], files_from={str(listing)!r}, jobs=2):\n"
            "    pass\n"
            "print('finished', flush=True)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "started"
    time.sleep(1.0)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert time.monotonic() - sent < 10
    assert "finished" not in out
    assert "KeyboardInterrupt" in err


def test_scan_progress(folder):
    root, images = folder
    it = imgstat.scan([root, root / "none.png"], errors="record")
    first = next(it)
    p = it.progress
    assert p["done"] >= 1 and p["total"] == len(images) + 1
    rest = list(it)
    assert 1 + len(rest) == len(images) + 1
    assert it.progress == {"done": len(images) + 1, "failed": 1,
                           "total": len(images) + 1, "total_known": True}
    assert first.file == next(iter(images))


def test_dataset_bands(tmp_path):
    """A pool of 40-band images (bands on the smaller end axis): numpy's
    per-band figures and pooled percentiles, one a band."""
    B = 40
    rng = np.random.default_rng(200)
    arrays = [rng.integers(0, 65536, size=(50 + k, 45, B), dtype=np.uint16)
              for k in range(3)]
    for k, a in enumerate(arrays):
        np.save(tmp_path / ("b%d.npy" % k), a)
    d = imgstat.dataset(tmp_path, histogram=True, percentiles=[0.5, 99.5])
    pooled = np.concatenate([a.reshape(-1, B) for a in arrays])
    assert d.pooled == 3
    assert d.count == (pooled.shape[0],) * B
    assert d.mean == pytest.approx(tuple(pooled.mean(axis=0, dtype=np.float64)),
                                   rel=1e-14)
    assert d.std == pytest.approx(tuple(pooled.std(axis=0, dtype=np.float64)),
                                  rel=1e-12)
    stats = d.to_dict()["dataset"]["stats"]
    s = np.sort(pooled, axis=0)
    n = pooled.shape[0]
    for c in (0, 17, B - 1):
        want = {"0.5": int(s[max(1, -(-5 * n // 1000)) - 1, c]),
                "99.5": int(s[max(1, -(-995 * n // 1000)) - 1, c])}
        assert stats[c]["percentiles"] == want
