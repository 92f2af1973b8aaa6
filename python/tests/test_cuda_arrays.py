"""CUDA arrays: imgstat.stats (HW, HWC, CHW and strided views; histograms)
and imgstat.normalize on the device, against the CPU's record and bytes for
the same numpy array and against numpy's own figures.

The GPU tests need a build with CUDA, a CUDA device and torch (CuPy is
tried too); elsewhere they are reported as skipped, saying why. The
argument checks at the end run everywhere."""

import json

import numpy as np
import pytest

import imgstat
from conftest import check_channel, reference


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    if not torch.cuda.is_available():
        return None, "torch sees no CUDA device"
    return torch, None


def _cupy_cuda():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "CuPy sees no CUDA device"
    except Exception as e:  # ImportError, or CUDA's own error
        return None, f"CuPy is not usable ({type(e).__name__})"
    return cupy, None


torch, TORCH_WHY = _torch_cuda()
cupy, CUPY_WHY = _cupy_cuda()

needs_torch = pytest.mark.skipif(
    torch is None or not imgstat.cuda,
    reason="GPU test: " + ("imgstat built without CUDA" if not imgstat.cuda
                           else str(TORCH_WHY)))


class CudaInterfaceOnly:
    """A Numba-style object: only __cuda_array_interface__ (no DLPack),
    over a torch tensor's memory (kept alive here)."""

    TYPES = {1: "|u1", 2: "<u2", 4: "<f4"}

    def __init__(self, t, strides=True):
        self._t = t
        item = t.element_size()
        typestr = "<f4" if t.dtype == torch.float32 else self.TYPES[item]
        self.__cuda_array_interface__ = {
            "shape": tuple(t.shape),
            "strides": (tuple(s * item for s in t.stride()) if strides
                        else None),
            "typestr": typestr,
            "data": (t.data_ptr(), False),
            "version": 3,
        }


DTYPES = [np.uint8, np.uint16, np.float32]
LAYOUTS = ["hw", "hwc", "chw"]
KINDS = ["torch", "cupy", "interface"]


def random_image(rng, dtype, shape):
    if dtype == np.float32:
        a = (rng.standard_normal(shape) * 100).astype(np.float32)
        flat = a.reshape(-1)
        flat[rng.integers(0, flat.size, 5)] = np.nan
        flat[rng.integers(0, flat.size, 3)] = np.inf
        flat[rng.integers(0, flat.size, 2)] = -np.inf
        flat[rng.integers(0, flat.size, 2)] = -0.0
        return a
    top = np.iinfo(dtype).max
    return rng.integers(0, top + 1, shape, dtype=dtype)


def shape_of(layout, h=61, w=97, c=3):
    return {"hw": (h, w), "hwc": (h, w, c), "chw": (c, h, w)}[layout]


def on_device(a, kind):
    """The numpy array a as a CUDA array of the given kind (same bytes)."""
    if kind == "cupy":
        if cupy is None:
            pytest.skip(f"GPU test: {CUPY_WHY}")
        return cupy.asarray(a)
    t = torch.from_numpy(np.ascontiguousarray(a)).cuda()
    torch.cuda.synchronize()
    if kind == "interface":
        return CudaInterfaceOnly(t)
    try:
        t[:1].__dlpack__()
    except Exception as e:  # an old torch without uint16 in DLPack
        pytest.skip(f"torch cannot export {t.dtype} by DLPack: {e}")
    return t


def to_host(x):
    """A CUDA result (torch, CuPy or a DLPack array) as numpy."""
    if torch is not None and isinstance(x, torch.Tensor):
        return x.cpu().numpy()
    if cupy is not None and isinstance(x, cupy.ndarray):
        return cupy.asnumpy(x)
    try:
        t = torch.from_dlpack(x)
    except TypeError:  # a nanobind whose __dlpack__ takes no stream=
        t = torch.from_dlpack(x.__dlpack__())
    return t.cpu().numpy()


def same_record(gpu, cpu):
    """Every key of the CPU's record, bit for bit (floats compared by their
    exact JSON text), but "file" and "backend"."""
    assert gpu["backend"] == "gpu" and cpu["backend"] == "cpu"
    assert set(gpu) == set(cpu)
    for key in cpu:
        if key in ("file", "backend"):
            continue
        assert json.dumps(gpu[key]) == json.dumps(cpu[key]), key


def layout_arg(layout):
    return "chw" if layout == "chw" else "hwc"


def planes_of(a, layout):
    if layout == "hw":
        return [a]
    if layout == "hwc":
        return [a[:, :, c] for c in range(a.shape[2])]
    return [a[c] for c in range(a.shape[0])]


@needs_torch
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_stats_equal_cpu(kind, layout, dtype):
    rng = np.random.default_rng(DTYPES.index(dtype) * 10 + len(layout))
    a = random_image(rng, dtype, shape_of(layout))
    x = on_device(a, kind)
    s = imgstat.stats(x, layout=layout_arg(layout))
    got = s.to_dict()
    want = imgstat.stats(a, layout=layout_arg(layout), backend="cpu").to_dict()
    same_record(got, want)
    for key in ("count", "min", "max", "sum", "sum_sq", "mean", "std"):
        assert getattr(s, key) == tuple(c.get(key) for c in want["stats"]), key
    for ch, plane in zip(got["stats"], planes_of(a, layout)):
        check_channel(ch, reference(plane), a.dtype.kind == "f")


@needs_torch
@pytest.mark.parametrize("kind", ["torch", "interface"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_histograms_equal_cpu(kind, layout, dtype):
    rng = np.random.default_rng(7 + DTYPES.index(dtype))
    a = random_image(rng, dtype, shape_of(layout, 45, 77))
    x = on_device(a, kind)
    kw = dict(layout=layout_arg(layout), percentiles=[1, 25, 99.5], ddof=1)
    got = imgstat.stats(x, **kw).to_dict()
    want = imgstat.stats(a, backend="cpu", **kw).to_dict()
    assert "median" in json.dumps(want)
    same_record(got, want)
    got = imgstat.stats(x, histogram=True, layout=layout_arg(layout)).to_dict()
    want = imgstat.stats(a, histogram=True, backend="cpu",
                         layout=layout_arg(layout)).to_dict()
    same_record(got, want)


@needs_torch
@pytest.mark.parametrize("channels", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("shape", [(1, 1), (61, 97), (517, 1031)])
def test_hwc_in_place(channels, dtype, shape):
    """Dense HWC of 8 / 16 bits and 2 to 4 channels: read as stored by the
    interleaved kernel (no gathering), samples in a narrow range so that
    the extremes are searched to the end, a unique minimum at the last
    pixel and maximum at the first: the CPU's record."""
    rng = np.random.default_rng(channels * 100 + shape[0])
    a = rng.integers(10, 200, shape + (channels,), dtype=dtype)
    a[-1, -1, channels - 1] = 3
    a[0, 0, 0] = 250 if a.size > channels else 3
    t = on_device(a, "torch")
    got = imgstat.stats(t).to_dict()
    want = imgstat.stats(a, backend="cpu").to_dict()
    same_record(got, want)
    for ch, plane in zip(got["stats"], planes_of(a, "hwc")):
        check_channel(ch, reference(plane), False)


@needs_torch
@pytest.mark.parametrize("layout", ["hwc", "chw"])
def test_pending_producer_work(layout):
    """A tensor whose kernels are still queued when imgstat is called (torch
    runs them on its stream after a 20 ms spin, and on a side stream): the
    figures are those of the finished tensor, for the statistics read in
    place, a view the device gathers, histograms and normalize (imgstat's
    work queued after the producer's on its stream)."""
    base = torch.randint(0, 200, (3, 1024, 1024), dtype=torch.uint8,
                         device="cuda")
    want = base.view(3, -1).sum(dim=1, dtype=torch.int64)
    torch.cuda.synchronize()

    def pending(k):
        torch.cuda._sleep(40_000_000)  # about 20 ms of GPU cycles
        x = base + k
        return x.permute(1, 2, 0).contiguous() if layout == "hwc" else x

    for k in (1, 2, 3):
        got = imgstat.stats(pending(k), layout=layout)
        assert list(got.sum) == (want + k * 1024 * 1024).tolist(), k
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        got = imgstat.stats(pending(4), layout=layout)
    torch.cuda.synchronize()
    assert list(got.sum) == (want + 4 * 1024 * 1024).tolist()
    # the other paths on the producer's stream: a view the device gathers,
    # histograms, normalize, each on a tensor of its own values (memory a
    # read out of order could find holds other values), against the CPU on
    # the finished tensor
    for k, on_side in ((5, False), (8, True)):
        with torch.cuda.stream(side if on_side else
                               torch.cuda.current_stream()):
            xv = pending(k)
            view = xv[:, ::2, :] if layout == "hwc" else xv[:, :, ::2]
            got_view = imgstat.stats(view, layout=layout).to_dict()
            xh = pending(k + 1)
            got_hist = imgstat.stats(xh, layout=layout,
                                     percentiles=[5]).to_dict()
            xn = pending(k + 2)
            got_norm = imgstat.normalize(xn, "clip", layout=layout)
        torch.cuda.synchronize()
        a = xv.cpu().numpy()
        ref = a[:, ::2, :] if layout == "hwc" else a[:, :, ::2]
        same_record(got_view, imgstat.stats(
            np.ascontiguousarray(ref), layout=layout, backend="cpu").to_dict())
        same_record(got_hist, imgstat.stats(
            xh.cpu().numpy(), layout=layout, percentiles=[5],
            backend="cpu").to_dict())
        want_norm = imgstat.normalize(xn.cpu().numpy(), "clip", layout=layout,
                                      backend="cpu")
        assert got_norm.cpu().numpy().tobytes() == want_norm.tobytes(), k


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_views(dtype):
    """Views the device gathers: every other column of HWC, the first three
    channels of RGBA, a crop, CHW with every other column, a transposed
    HW."""
    rng = np.random.default_rng(3)
    a = random_image(rng, dtype, (40, 66, 4))
    t = torch.from_numpy(a).cuda()
    torch.cuda.synchronize()
    views = [
        (t[:, ::2, :], a[:, ::2, :], "hwc"),
        (t[:, :, :3], a[:, :, :3], "hwc"),
        (t[5:31, 7:50], a[5:31, 7:50], "hwc"),
        (t.permute(2, 0, 1)[:, :, ::3], a.transpose(2, 0, 1)[:, :, ::3], "chw"),
        (t[:, :, 1].t(), a[:, :, 1].T, "hwc"),
        (t.permute(2, 0, 1), a.transpose(2, 0, 1), "chw"),
    ]
    for x, ref, layout in views:
        got = imgstat.stats(x, layout=layout, percentiles=[5]).to_dict()
        want = imgstat.stats(np.ascontiguousarray(ref), layout=layout,
                             percentiles=[5], backend="cpu").to_dict()
        same_record(got, want)


@needs_torch
def test_refusals():
    t = torch.zeros((8, 8, 3), dtype=torch.uint8, device="cuda")
    with pytest.raises(TypeError):
        imgstat.stats(t.to(torch.int32))
    with pytest.raises(TypeError):
        imgstat.normalize(t.to(torch.float64))
    with pytest.raises(ValueError, match="backend='cpu'"):
        imgstat.stats(t, backend="cpu")
    with pytest.raises(ValueError, match="1 to 1024 channels"):
        imgstat.stats(torch.zeros((8, 8, 1025), dtype=torch.uint8, device="cuda"))
    # a reversed view, as Numba or CuPy may offer: refused clearly
    rev = CudaInterfaceOnly(t)
    cai = rev.__cuda_array_interface__
    cai["data"] = (t.data_ptr() + 7 * 24, False)
    cai["strides"] = (-24, 3, 1)
    with pytest.raises(ValueError, match="negative strides"):
        imgstat.stats(rev)
    with pytest.raises(ValueError, match="negative strides"):
        imgstat.normalize(rev)


NORMALIZE_CASES = [
    dict(mode="minmax"),
    dict(mode="clip", clip=(2, 97)),
    dict(mode="zscore"),
    dict(mode="minmax", linked=True),
    dict(mode="minmax", dtype="float32"),
    dict(mode="clip", dtype="uint16"),
    dict(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), scale="unit"),
    dict(range=(10, 200)),
]


@needs_torch
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(NORMALIZE_CASES)))
def test_normalize_equal_host(kind, layout, dtype, case):
    kw = dict(NORMALIZE_CASES[case])
    if layout == "hw" and "mean" in kw:
        kw["mean"], kw["std"] = kw["mean"][:1], kw["std"][:1]
    rng = np.random.default_rng(case * 31 + DTYPES.index(dtype))
    a = random_image(rng, dtype, shape_of(layout, 33, 57))
    x = on_device(a, kind)
    try:
        want = imgstat.normalize(a, layout=layout_arg(layout),
                                 backend="cpu", **kw)
    except (ValueError, imgstat.ImageError) as e:
        with pytest.raises(type(e)):
            imgstat.normalize(x, layout=layout_arg(layout), **kw)
        return
    out = imgstat.normalize(x, layout=layout_arg(layout), **kw)
    if kind == "torch":
        assert isinstance(out, torch.Tensor) and out.is_cuda
    if kind == "cupy":
        assert isinstance(out, cupy.ndarray)
    got = to_host(out)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@needs_torch
def test_normalize_alpha_and_views():
    rng = np.random.default_rng(12)
    a = rng.integers(0, 256, (30, 41, 4), dtype=np.uint8)
    t = torch.from_numpy(a).cuda()
    torch.cuda.synchronize()
    for alpha in ("copy", "normalize", "drop"):
        for x, ref, layout in ((t, a, "hwc"),
                               (t.permute(2, 0, 1), a.transpose(2, 0, 1),
                                "chw"),
                               (t[:, ::2], a[:, ::2], "hwc")):
            want = imgstat.normalize(np.ascontiguousarray(ref), "clip",
                                     alpha=alpha, layout=layout,
                                     backend="cpu")
            got = imgstat.normalize(x, "clip", alpha=alpha, layout=layout)
            assert got.device == t.device
            got = got.cpu().numpy()
            assert got.shape == want.shape
            assert got.tobytes() == want.tobytes()


@needs_torch
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layout", ["hwc", "chw"])
def test_normalize_out_layout_equal_host(kind, layout):
    """out_layout on a CUDA result: the bytes of the host path's result
    with the same out_layout (numpy's transpose), on the input's device; a
    DeviceArray result (an object with only __cuda_array_interface__) is
    refused for another layout, and kept as it is for its own."""
    rng = np.random.default_rng(44)
    a = rng.integers(0, 256, shape_of(layout, 21, 34), dtype=np.uint8)
    x = on_device(a, kind)
    other = "hwc" if layout == "chw" else "chw"
    for out_layout in (other, layout, None):
        want = imgstat.normalize(a, "zscore", layout=layout, backend="cpu",
                                 out_layout=out_layout)
        if kind == "interface" and out_layout == other:
            with pytest.raises(ValueError, match="out_layout"):
                imgstat.normalize(x, "zscore", layout=layout,
                                  out_layout=out_layout)
            continue
        got = to_host(imgstat.normalize(x, "zscore", layout=layout,
                                        out_layout=out_layout))
        assert got.shape == want.shape
        assert got.tobytes() == want.tobytes()


@needs_torch
def test_normalize_owner_frees():
    """The result owns its device memory: many results, dropped, do not
    grow the device's use."""
    t = torch.randint(0, 256, (512, 512, 3), dtype=torch.uint8, device="cuda")
    free0 = torch.cuda.mem_get_info()[0]
    for _ in range(50):
        out = imgstat.normalize(t, dtype="float32")
        del out
    torch.cuda.synchronize()
    assert torch.cuda.mem_get_info()[0] >= free0 - 64 * 2**20


# ---- without a GPU: the checks before any device work -------------------


class FakeInterface:
    """__cuda_array_interface__ only, at an address that is no device
    memory."""

    def __init__(self, shape, typestr="|u1", strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (4096, False),
            "strides": strides, "version": 3}


def test_interface_dtype_refused():
    with pytest.raises(TypeError, match="uint8, uint16 or float32"):
        imgstat.stats(FakeInterface((4, 4), "<i4"))
    with pytest.raises(TypeError, match="uint8, uint16 or float32"):
        imgstat.normalize(FakeInterface((4, 4), "<f8"))


def test_interface_refusals_before_the_device():
    # negative strides (a reversed view), and backend="cpu": ValueError
    # with or without CUDA, before any device work
    rev = FakeInterface((4, 5, 3), strides=(-15, 3, 1))
    with pytest.raises(ValueError):
        imgstat.stats(rev)
    with pytest.raises(ValueError):
        imgstat.normalize(rev)
    with pytest.raises(ValueError):
        imgstat.stats(FakeInterface((4, 4)), backend="cpu")
    with pytest.raises(ValueError, match="strides that are not whole"):
        imgstat.stats(FakeInterface((4, 4), "<u2", strides=(9, 2)))
    if imgstat.cuda:
        with pytest.raises(ValueError, match="negative strides"):
            imgstat.stats(rev)
    else:
        with pytest.raises(ValueError, match="built with CUDA"):
            imgstat.stats(FakeInterface((4, 4)))
        with pytest.raises(ValueError, match="built with CUDA"):
            imgstat.normalize(FakeInterface((4, 4, 3)))


@pytest.mark.skipif(not imgstat.cuda, reason="imgstat built without CUDA")
def test_interface_not_device_memory():
    """An address that is no memory of a CUDA device: an ImageError (no
    device here: "nodevice"; a device: "arg", not its memory), never a
    crash."""
    for x in (FakeInterface((4, 4)), FakeInterface((4, 4, 3))):
        with pytest.raises(imgstat.ImageError) as e:
            imgstat.stats(x, histogram=True)
        assert e.value.status in ("nodevice", "arg", "device")
        with pytest.raises(imgstat.ImageError) as e:
            imgstat.normalize(x)
        assert e.value.status in ("nodevice", "arg", "device")
