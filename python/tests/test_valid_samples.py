"""nodata=, mask= and labels=: the statistics of the valid samples of an
array, a path or bytes, against numpy."""
import math
import os

import numpy as np
import pytest

import imgstat


def _close(a, b):
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1e-300)


def _check(st, v):
    assert st["count"] == v.size
    assert st["min"] == v.min() and st["max"] == v.max()
    assert _close(st["mean"], float(v.astype(np.float64).mean()))
    assert _close(st["std"], float(v.astype(np.float64).std()))


def test_nodata_array():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 6, (17, 19, 3)).astype(np.uint8)
    d = imgstat.stats(a, nodata=[0, 1, 2]).to_dict()
    for c, st in enumerate(d["stats"]):
        ch = a[:, :, c]
        _check(st, ch[ch != c])
        assert st["nodata_count"] == int((ch == c).sum())
    with pytest.raises(imgstat.ImageError, match="not a 8-bit sample"):
        imgstat.stats(a, nodata=300)
    with pytest.raises(ValueError):
        imgstat.stats(a, nodata="all")


def test_mask_and_labels_arrays(tmp_path):
    rng = np.random.default_rng(2)
    a = rng.normal(10, 3, (23, 21)).astype(np.float32)
    mask = rng.random(a.shape) < 0.5
    labels = rng.choice(np.array([0, 3, 70000 // 1000], np.int64), a.shape)
    d = imgstat.stats(a, mask=mask, labels=labels, percentiles=[50]).to_dict()
    _check(d["stats"][0], a[mask])
    assert d["mask_pixels"] == int(mask.sum())
    got = [e["label"] for e in d["labels"]]
    assert got == [int(v) for v in np.unique(labels[mask]) if v]
    for e in d["labels"]:
        region = mask & (labels == e["label"])
        assert e["pixels"] == int(region.sum())
        _check(e["stats"][0], a[region])
    # the same from files: a path for the image and the mask
    p = tmp_path / "a.npy"
    m = tmp_path / "m.npy"
    np.save(p, a)
    np.save(m, mask.astype(np.uint8))
    d0 = imgstat.stats(a, mask=mask).to_dict()
    d2 = imgstat.stats(str(p), mask=m).to_dict()
    assert d2["stats"][0] == d0["stats"][0]
    with open(p, "rb") as f:
        d3 = imgstat.stats(f.read(), mask=str(m)).to_dict()
    assert d3["stats"][0] == d0["stats"][0]
    # no temporary file is left behind
    assert not [n for n in os.listdir(tmp_path) if n not in ("a.npy", "m.npy")]


def test_mask_of_another_size():
    a = np.zeros((5, 6), np.uint8)
    with pytest.raises(imgstat.ImageError, match="is 7x5, the image is 6x5"):
        imgstat.stats(a, mask=np.ones((5, 7), np.uint8))


def test_scan_and_dataset_with_masks(tmp_path):
    """A folder of images and one of masks (nnU-Net's names): scan's
    records and the dataset's pool of the foreground."""
    rng = np.random.default_rng(3)
    (tmp_path / "img").mkdir()
    (tmp_path / "lab").mkdir()
    fg = []
    for i in range(3):
        a = rng.integers(0, 4000, (9 + i, 8)).astype(np.uint16)
        m = (rng.random(a.shape) < 0.5).astype(np.uint8)
        np.save(tmp_path / "img" / ("c%d_0000.npy" % i), a)
        np.save(tmp_path / "lab" / ("c%d.npy" % i), m)
        fg.append(a[m > 0].astype(np.int64))
    recs = [s.to_dict() for s in imgstat.scan(
        tmp_path / "img", mask=tmp_path / "lab", mask_suffix="_0000")]
    assert [r["stats"][0]["count"] for r in recs] == [v.size for v in fg]
    for r, v in zip(recs, fg):
        _check(r["stats"][0], v)
    d = imgstat.dataset(tmp_path / "img", mask=tmp_path / "lab",
                        mask_suffix="_0000", percentiles=[0.5, 99.5])
    st = d.to_dict()["dataset"]["stats"][0]
    v = np.sort(np.concatenate(fg))
    _check(st, v)
    for p in (0.5, 99.5):
        k = max(1, math.ceil(p * v.size / 100))
        assert st["percentiles"][str(p)] == v[k - 1]
    # no mask for an input: a failure naming it
    (tmp_path / "lab" / "c2.npy").unlink()
    with pytest.raises(imgstat.RunFailed) as e:
        imgstat.dataset(tmp_path / "img", mask=tmp_path / "lab",
                        mask_suffix="_0000")
    assert "no mask" in e.value.failures[0].message


def test_dataset_labels(tmp_path):
    """dataset(labels=): each label's figures pooled over the images that
    have it (label 3 in some images only), against numpy."""
    rng = np.random.default_rng(4)
    (tmp_path / "img").mkdir()
    (tmp_path / "lab").mkdir()
    imgs, labs = [], []
    for i in range(4):
        a = rng.integers(0, 4000, (10 + i, 7)).astype(np.uint16)
        lab = rng.choice([0, 1, 2] + ([3] if i % 2 else []),
                         a.shape).astype(np.uint8)
        np.save(tmp_path / "img" / ("c%d.npy" % i), a)
        np.save(tmp_path / "lab" / ("c%d.npy" % i), lab)
        imgs.append(a)
        labs.append(lab)
    d = imgstat.dataset(tmp_path / "img", labels=tmp_path / "lab",
                        percentiles=[0.5, 99.5])
    assert sorted(d.labels) == [1, 2, 3]
    for label, e in d.labels.items():
        assert e["images"] == sum((l == label).any() for l in labs)
        v = np.sort(np.concatenate(
            [a[l == label].astype(np.int64) for a, l in zip(imgs, labs)]))
        st = e["stats"][0]
        _check(st, v)
        assert st["sum"] == int(v.sum())
        for p in (0.5, 99.5):
            k = max(1, math.ceil(p * v.size / 100))
            assert st["percentiles"][str(p)] == v[k - 1]
    # without label images: none
    assert imgstat.dataset(tmp_path / "img").labels == {}


def test_nodata_one_value_per_band(tmp_path):
    """200 bands, each with a nodata value of its own (and its neighbour's
    value, which counts): an array and a .npy path, against numpy."""
    rng = np.random.default_rng(200)
    bands = 200
    nodata = [1000 + 3 * b for b in range(bands)]
    a = rng.integers(0, 1000, (9, 7, bands), dtype=np.uint16)
    for b in range(bands):
        a[0:3, 0, b] = nodata[b]
        a[-1, -1, b] = nodata[(b + 1) % bands]
    d = imgstat.stats(a, layout="hwc", nodata=nodata).to_dict()
    assert d["channels"] == bands and len(d["stats"]) == bands
    for b, st in enumerate(d["stats"]):
        ch = a[:, :, b]
        _check(st, ch[ch != nodata[b]])
        assert st["nodata_count"] == 3
    # a file (C, H, W) through the engine's items, as scan reads it
    f = np.ascontiguousarray(np.repeat(np.repeat(a.transpose(2, 0, 1), 23,
                                                 axis=1), 31, axis=2))
    path = tmp_path / "bands.npy"
    np.save(path, f)
    (r,) = list(imgstat.scan([str(path)], nodata=nodata))
    assert not isinstance(r, imgstat.ImageError), r
    for b, st in enumerate(r.to_dict()["stats"]):
        ch = f[b]
        _check(st, ch[ch != nodata[b]])
        assert st["nodata_count"] == 3 * 23 * 31
    with pytest.raises(ValueError, match="nodata"):
        imgstat.stats(a, layout="hwc", nodata=[1] * 1025)
    with pytest.raises(imgstat.ImageError, match="199 nodata values"):
        imgstat.stats(a, layout="hwc", nodata=nodata[1:])
