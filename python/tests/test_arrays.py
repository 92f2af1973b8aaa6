"""imgstat.stats on numpy arrays of every dtype and layout, against numpy."""

import numpy as np
import pytest

import imgstat
from conftest import check_channel, reference

DTYPES = [np.uint8, np.uint16, np.float32]
SHAPES = [(1, 1), (1, 7), (7, 1), (33, 65), (64, 129)]


def random_image(rng, dtype, shape):
    if dtype == np.float32:
        return (rng.standard_normal(shape) * 100).astype(np.float32)
    top = np.iinfo(dtype).max
    return rng.integers(0, top + 1, shape, dtype=dtype)


def planes_of(a, layout):
    """The channels of a as 2-D arrays."""
    if a.ndim == 2:
        return [a]
    if layout == "hwc":
        return [a[:, :, c] for c in range(a.shape[2])]
    return [a[c] for c in range(a.shape[0])]


COLUMNS = ("count", "min", "max", "sum", "sum_sq", "mean", "std")


def same_columns(s, record):
    """Stats' per-channel properties (read from the binding's record
    directly, not from the dict) hold the dict's values, types included."""
    for key in COLUMNS:
        want = tuple(c.get(key) for c in record["stats"])
        got = getattr(s, key)
        assert got == want, key
        assert [type(v) for v in got] == [type(v) for v in want], key


def check(a, layout="hwc", ddof=0):
    s = imgstat.stats(a, layout=layout, ddof=ddof)
    record = s.to_dict()
    same_columns(s, record)
    planes = planes_of(a, layout)
    assert record["height"], record["width"] == planes[0].shape
    assert record["channels"] == len(planes)
    assert record["depth"] == {1: 8, 2: 16, 4: 32}[a.dtype.itemsize]
    assert record["ddof"] == ddof
    for got, plane in zip(record["stats"], planes):
        check_channel(got, reference(plane, ddof), a.dtype.kind == "f")
    return record


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_gray(dtype, shape):
    rng = np.random.default_rng(hash((str(dtype), shape)) % 2**32)
    check(random_image(rng, dtype, shape))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("layout", ["hwc", "chw"])
def test_layouts(dtype, channels, layout):
    rng = np.random.default_rng(channels * 7 + len(layout))
    shape = (37, 53, channels) if layout == "hwc" else (channels, 37, 53)
    record = check(random_image(rng, dtype, shape), layout)
    names = [c["channel"] for c in record["stats"]]
    assert names == {1: ["Y"], 2: ["Y", "A"], 3: ["R", "G", "B"],
                     4: ["R", "G", "B", "A"]}[channels]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("channels", [5, 13, 16, 300, 1024])
@pytest.mark.parametrize("layout", ["hwc", "chw"])
def test_bands(dtype, channels, layout):
    """More than four channels are bands "1".."N", any layout."""
    rng = np.random.default_rng(channels * 11 + len(layout))
    shape = (29, 41, channels) if layout == "hwc" else (channels, 29, 41)
    record = check(random_image(rng, dtype, shape), layout)
    assert [c["channel"] for c in record["stats"]] == [
        str(c + 1) for c in range(channels)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_ddof(dtype):
    rng = np.random.default_rng(5)
    check(random_image(rng, dtype, (19, 23, 3)), ddof=1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_views(dtype):
    """Strided views: a crop, every other column, reversed rows, a channel
    order reversed: copied or borrowed, the figures are the view's."""
    rng = np.random.default_rng(11)
    a = random_image(rng, dtype, (50, 60, 3))
    check(a[5:40, 7:51])
    check(a[:, ::2])
    check(a[::-1])
    check(a[:, :, ::-1])
    check(np.transpose(a, (2, 0, 1)), layout="chw")  # a CHW view of HWC
    check(np.ascontiguousarray(np.transpose(a, (2, 0, 1)))[:, 3:, 1:],
          layout="chw")


def test_float_specials():
    a = np.arange(60, dtype=np.float32).reshape(6, 10) - 30
    a[0, 0] = np.nan
    a[1, 1] = np.inf
    a[2, 2] = -np.inf
    a[5, 9] = np.nan
    check(a)
    allnan = np.full((3, 4), np.nan, dtype=np.float32)
    s = imgstat.stats(allnan)
    assert s.mean == (None,) and s.min == (None,)
    record = s.to_dict()
    same_columns(s, record)
    assert record["stats"][0]["count"] == 0
    assert record["stats"][0]["nan_count"] == 12
    assert record["stats"][0]["mean"] is None


def test_exact_large_sums():
    """Sums of squares beyond 2**53 stay exact Python ints."""
    a = np.full((2048, 2048), 65535, dtype=np.uint16)
    a[0, 0] = 65534
    s = imgstat.stats(a)
    record = s.to_dict()["stats"][0]
    n = 2048 * 2048
    assert s.sum_sq == (65535**2 * (n - 1) + 65534**2,)
    assert record["sum"] == 65535 * n - 1
    assert record["sum_sq"] == 65535**2 * (n - 1) + 65534**2
    assert record["sum_sq"] > 2**53


def test_same_as_file(tmp_path):
    """An array and the .npy file of the same samples give the same record
    but for its name."""
    rng = np.random.default_rng(3)
    a = random_image(rng, np.uint16, (31, 17, 3))
    path = tmp_path / "a.npy"
    np.save(path, a)
    from_file = imgstat.stats(path).to_dict()
    from_array = imgstat.stats(a).to_dict()
    from_bytes = imgstat.stats(path.read_bytes()).to_dict()
    for d in (from_file, from_array, from_bytes):
        d.pop("file")
    assert from_file == from_array == from_bytes


def test_same_bytes_animated_webp(tmp_path):
    """An animated WebP whose second frame is cut off is read from its file
    and from the same bytes alike: the first frame (what imgstat reads of an
    animation), equal to numpy's figures over the pixels Pillow was given;
    a cut inside the first frame is refused alike."""
    Image = pytest.importorskip("PIL.Image")
    import io
    import struct

    rng = np.random.default_rng(7)
    frames = [random_image(rng, np.uint8, (16, 20, 3)) for _ in range(3)]
    buf = io.BytesIO()
    Image.fromarray(frames[0]).save(
        buf, "WEBP", save_all=True, lossless=True, duration=100,
        append_images=[Image.fromarray(f) for f in frames[1:]])
    good = buf.getvalue()
    anmf, at = [], 12
    while at + 8 <= len(good):
        size = struct.unpack("<I", good[at + 4:at + 8])[0]
        if good[at:at + 4] == b"ANMF":
            anmf.append(at)
        at += 8 + size + (size & 1)
    assert len(anmf) == 3
    path = tmp_path / "anim.webp"
    path.write_bytes(good[:anmf[1] + 300])
    try:
        from_file = imgstat.stats(path).to_dict()
    except imgstat.ImageError as e:
        if "built without" in str(e):
            pytest.skip(str(e))
        raise
    from_bytes = imgstat.stats(path.read_bytes()).to_dict()
    from_file.pop("file")
    from_bytes.pop("file")
    assert from_file == from_bytes
    assert (from_file["width"], from_file["height"]) == (20, 16)
    for c, got in enumerate(from_file["stats"]):
        check_channel(got, reference(frames[0][:, :, c]), False)
    path.write_bytes(good[:anmf[0] + 200])
    errors = []
    for source in (path, path.read_bytes()):
        with pytest.raises(imgstat.ImageError) as e:
            imgstat.stats(source)
        errors.append(str(e.value).split(": ", 1)[-1])
    assert errors[0] == errors[1]


@pytest.mark.parametrize("bad, error", [
    (np.zeros((4, 4), dtype=np.int32), TypeError),
    (np.zeros((4, 4), dtype=np.float64), TypeError),
    (np.zeros((4, 4, 1025), dtype=np.uint8), ValueError),
    (np.zeros((2, 2, 2, 2), dtype=np.uint8), ValueError),
    (np.zeros((0, 4), dtype=np.uint8), ValueError),
    (12, TypeError),
    ([1, 2, 3], TypeError),
])
def test_bad_arrays(bad, error):
    with pytest.raises(error):
        imgstat.stats(bad)


def test_bad_arguments():
    a = np.zeros((4, 4), dtype=np.uint8)
    with pytest.raises(ValueError):
        imgstat.stats(a, ddof=2)
    with pytest.raises(TypeError):
        imgstat.stats(a, ddof="1")
    with pytest.raises(ValueError):
        imgstat.stats(a, backend="tpu")
    with pytest.raises(ValueError):
        imgstat.stats(a, layout="whc")
    with pytest.raises(ValueError):
        imgstat.stats(a, percentiles=[101])


def test_histogram_figures():
    """The median and percentiles of an 8-bit image and its histogram
    counts, against numpy: the nearest rank (ceil(p / 100 * N), from 1)."""
    rng = np.random.default_rng(8)
    a = rng.integers(0, 256, (40, 30), dtype=np.uint8)
    ch = imgstat.stats(a, percentiles=[10, 50, 90]).to_dict()["stats"][0]
    flat = np.sort(a.reshape(-1))
    n = flat.size

    def nearest_rank(p):
        return int(flat[max(1, -(-p * n // 100)) - 1])

    assert ch["median"] == nearest_rank(50)
    assert ch["percentiles"] == {str(p): nearest_rank(p) for p in (10, 50, 90)}
    assert ch["histogram"]["counts"] == np.bincount(
        a.reshape(-1), minlength=256).tolist()


def test_limit_error_carries_its_cause():
    """An image over the pixel limit: the ImageError says which setting
    (cause, limit, value) and its message names no command-line flag."""
    import pickle
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data)))

    width = height = 100000
    png = (b"\x89PNG\r\n\x1a\n" +
           chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0,
                                      0)) +
           chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b""))
    with pytest.raises(imgstat.ImageError) as e:
        imgstat.stats(png)
    err = e.value
    assert err.status == "limit"
    assert err.cause == "max_pixels"
    assert err.limit == 1 << 30  # the documented default
    assert err.value == width * height
    assert "--" not in err.message
    again = pickle.loads(pickle.dumps(err))
    assert (again.cause, again.limit, again.value) == ("max_pixels", 1 << 30,
                                                       width * height)
    # an error without a cause has none
    with pytest.raises(imgstat.ImageError) as e:
        imgstat.stats(b"not an image at all")
    assert (e.value.cause, e.value.limit, e.value.value) == (None, None, None)


def test_int16_exact():
    """int16 arrays are int16 images: every figure exact against numpy
    (negative values, both extremes), the percentiles numpy's by the rank
    rule, nodata compared as the signed value."""
    from fractions import Fraction
    rng = np.random.default_rng(16)
    a = rng.integers(-32768, 32768, (45, 37, 2), dtype=np.int16)
    a[0, 0, 0], a[1, 1, 0], a[2, 2, 1] = -32768, 32767, -1
    s = imgstat.stats(a, histogram=True, percentiles=[0.5, 99.5])
    record = s.to_dict()
    same_columns(s, record)
    assert record["sample"] == "int16" and record["depth"] == 16
    for c in range(2):
        v = a[:, :, c].astype(np.int64).ravel()
        st = record["stats"][c]
        assert (st["min"], st["max"]) == (v.min(), v.max())
        assert (st["sum"], st["sum_sq"]) == (v.sum(), (v * v).sum())
        assert st["mean"] == float(Fraction(int(v.sum()), v.size))
        for p in (0.5, 99.5):
            assert st["percentiles"][str(p)] == np.percentile(
                v, p, method="inverted_cdf")
    v = a[:, :, 0].astype(np.int64)
    st = imgstat.stats(a[:, :, 0], nodata=int(v[5, 5])).to_dict()["stats"][0]
    kept = v[v != v[5, 5]]
    assert st["nodata_count"] == int((v == v[5, 5]).sum())
    assert (st["count"], st["sum"]) == (kept.size, kept.sum())


def test_setting_error_in_library_words(tmp_path):
    """A .npy whose shape cannot tell its axes: the ImageError names the
    file and the setting that would tell (cause "setting", the library's
    npy_layout), no command-line flag."""
    path = tmp_path / "amb.npy"
    np.save(path, np.zeros((8, 6, 8), dtype=np.uint16))
    with pytest.raises(imgstat.ImageError) as e:
        imgstat.stats(str(path))
    err = e.value
    assert err.path == str(path) and str(path) in str(err)
    assert "(8, 6, 8) is no image" in err.message
    assert err.message.endswith("(npy_layout)")
    assert err.cause == "setting"
    assert "--" not in err.message
