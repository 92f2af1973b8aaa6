"""imgstat.normalize on numpy arrays, against the rules of docs/normalize.md
computed with numpy."""

import numpy as np
import pytest

import imgstat


def channels(a, layout):
    if a.ndim == 2:
        return [a]
    return ([a[:, :, c] for c in range(a.shape[2])] if layout == "hwc"
            else [a[c] for c in range(a.shape[0])])


@pytest.mark.parametrize("layout", ["hwc", "chw"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_minmax_integer_exact(layout, dtype):
    rng = np.random.default_rng(4)
    shape = (21, 34, 3) if layout == "hwc" else (3, 21, 34)
    top = np.iinfo(dtype).max
    a = rng.integers(top // 5, top // 2, shape, dtype=dtype)
    out = imgstat.normalize(a, "minmax", layout=layout)
    assert out.dtype == dtype and out.shape == a.shape
    for got, ch in zip(channels(out, layout), channels(a, layout)):
        x = ch.astype(np.int64)
        lo, hi = x.min(), x.max()
        want = np.rint((x - lo) * top / (hi - lo)).astype(dtype)  # half even
        assert np.array_equal(got, want)


def test_minmax_float_out():
    rng = np.random.default_rng(6)
    a = rng.integers(0, 256, (17, 9), dtype=np.uint8)
    out = imgstat.normalize(a, dtype="float32")
    x = a.astype(np.float64)
    want = ((x - x.min()) / (x.max() - x.min())).astype(np.float32)
    assert out.dtype == np.float32 and np.array_equal(out, want)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_zscore(dtype):
    rng = np.random.default_rng(9)
    if dtype == np.float32:
        a = rng.standard_normal((30, 40, 3)).astype(np.float32) * 7 + 3
    else:
        a = rng.integers(0, np.iinfo(dtype).max, (30, 40, 3), dtype=dtype)
    out = imgstat.normalize(a, "zscore")
    assert out.dtype == np.float32 and out.shape == a.shape
    for c in range(3):
        x = a[:, :, c].astype(np.float64)
        want = (x - x.mean()) / x.std()
        np.testing.assert_allclose(out[:, :, c], want, rtol=1e-5, atol=1e-6)


def test_given_unit_scale():
    """torchvision's Normalize after ToTensor: (x / 255 - mean) / std."""
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    out = imgstat.normalize(a, mean=mean, std=std, scale="unit")
    want = (a.astype(np.float64) / 255 - np.array(mean)) / np.array(std)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_clip_saturates():
    a = np.arange(100, dtype=np.uint8).reshape(10, 10)
    out = imgstat.normalize(a, "clip", clip=(10, 90))
    assert out.min() == 0 and out.max() == 255
    assert (out[a <= 9] == 0).all() and (out[a >= 90] == 255).all()


def test_bad_arguments():
    a = np.zeros((4, 4), dtype=np.uint8)
    with pytest.raises(ValueError):
        imgstat.normalize(a, "median")
    with pytest.raises(ValueError):
        imgstat.normalize(a, mean=[1])
    with pytest.raises(ValueError):
        imgstat.normalize(a, "zscore", dtype="uint8")
    with pytest.raises(ValueError):
        imgstat.normalize(a, "zscore", linked=True)
    with pytest.raises(ValueError):
        imgstat.normalize(a, clip=(90, 10), mode="clip")
    with pytest.raises(TypeError):
        imgstat.normalize(np.zeros((4, 4), dtype=np.int8))


@pytest.mark.parametrize("bands", [40, 200])
def test_given_one_value_per_band(bands):
    """mean= and std= of one value per band beyond four bands."""
    rng = np.random.default_rng(bands)
    a = rng.integers(0, 1000, (8, 6, bands), dtype=np.uint16)
    mean = [10.5 + 7 * b for b in range(bands)]
    std = [1.25 + b / 4 for b in range(bands)]
    out = imgstat.normalize(a, mean=mean, std=std, layout="hwc")
    want = (a.astype(np.float64) - np.array(mean)) / np.array(std)
    assert out.shape == a.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="mean and std"):
        imgstat.normalize(a, mean=mean[1:], std=std[1:], layout="hwc")
    with pytest.raises(ValueError, match="mean and std"):
        imgstat.normalize(a, mean=[1.0] * 1025, std=[1.0] * 1025,
                          layout="hwc")
