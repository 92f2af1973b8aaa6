"""imgstat: exact per-channel image statistics, for one image, a folder or a
whole dataset.

    >>> import imgstat
    >>> imgstat.stats("photo.png").to_dict()["stats"][0]["mean"]
    >>> for r in imgstat.scan(["train/"], errors="skip"): print(r.file, r.mean)
    >>> d = imgstat.dataset(["train/"], scale="unit"); d.mean, d.std

Records are the command line's JSON records (``imgstat --json``): the same
keys in the same order, integers exact (8- and 16-bit sums and sums of
squares are Python ints), a figure that does not exist is None. The work
runs on the library's threads with the GIL released.
"""

from __future__ import annotations

# the modules and names the code uses, bound under private names: the
# package's namespace (dir(imgstat)) holds only what it exports
import json as _json
import os as _os
import sys as _sys
import warnings as _warnings
from typing import Any as _Any
from typing import Iterable as _Iterable
from typing import Iterator as _Iterator
from typing import Optional as _Optional
from typing import Sequence as _Sequence
from typing import Tuple as _Tuple
from typing import Union as _Union

from . import _imgstat

del annotations  # the __future__ feature, not a name of the package

__all__ = [
    "ImageError",
    "RunFailed",
    "Stats",
    "Dataset",
    "stats",
    "scan",
    "dataset",
    "normalize",
    "DeviceArray",
    "normalize_files",
    "NormalizedFile",
    "cuda",
    "cuda_available",
    "program",
    "__version__",
]

__version__: str = _imgstat.version
#: Whether this build has the CUDA backend (CUDA arrays, backend="gpu"):
#: it describes the build, not the machine; cuda_available() says whether
#: a GPU can be used here.
cuda: bool = _imgstat.cuda


def cuda_available() -> bool:
    """True when this build has the CUDA backend and a CUDA device is
    usable here (a driver that serves the build, at least one device);
    False otherwise, as on a machine without a GPU."""
    return cuda and _imgstat.cuda_devices() > 0


class ImageError(Exception):
    """An input that could not be read or computed.

    ``path`` names it (``"<array>"``, ``"<bytes>"`` for those), ``status``
    says what kind of failure it is (``"io"``, ``"format"``,
    ``"unsupported"``, ``"limit"``, ``"nomem"``, ``"arg"``, ``"nodevice"``,
    ``"device"``) and ``message`` says why, as the command line does after
    the file's name. Both are str as os.fsdecode makes them: os.fsencode
    gives back the bytes of a name (or of a header byte quoted) that is not
    UTF-8.

    ``cause`` names the setting the failure came from, when it came from
    one: ``"max_pixels"`` or ``"max_memory"`` (an image over the limit
    passed, ``limit``, wanting ``value`` pixels or bytes; either is None
    when not known), ``"gpu_unusable"`` (the GPU a backend or verify asked
    for cannot be used), ``"gpu_failed"`` (the GPU failed the work verify
    gave it), ``"conflict"`` (a setting that cannot be used with another),
    ``"range"`` or ``"mean_std"`` (normalize's range,
    or its mean and std: ``value`` their count when it does not fit the
    image), ``"depth"`` or ``"alpha"`` (an output its format cannot hold),
    ``"page"`` (a page past the file's: ``value`` the page, ``limit`` the
    pages), ``"dataset"`` (an input read only once where a dataset reads
    every input twice), ``"emit"`` (a framework's form the pool cannot
    give), ``"setting"`` (an image a setting does not apply to, or that
    needs one: the message ends with the setting in parentheses, as
    ``(as=gray)`` or ``(npy_layout)``); None otherwise."""

    def __init__(self, path: str, status: str, message: str,
                 cause: _Optional[str] = None, limit: _Optional[int] = None,
                 value: _Optional[int] = None) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.status = status
        self.message = message
        self.cause = cause
        self.limit = limit
        self.value = value

    def to_dict(self) -> dict:
        """The command line's error record (``--errors-as-records``)."""
        return {"file": self.path, "error": self.message}

    def __reduce__(self) -> tuple:
        # pickled with its three fields (a worker process's error reaches
        # the parent whole)
        return (ImageError, (self.path, self.status, self.message,
                             self.cause, self.limit, self.value))


class RunFailed(ImageError):
    """A run over files (scan, dataset, normalize_files) that finished with
    inputs that failed, raised after the run with its default
    ``errors="raise"``: every other input was read (and written), as the
    command line goes on and then exits 1. ``failures``: every input that
    failed, as ImageError values in input order; ``result``: what the run
    gave (dataset's Dataset, normalize_files' list of NormalizedFile; None
    for scan, whose Stats were yielded). ``path``, ``status``, ``message``
    and ``cause`` are the first failure's, so ``except ImageError`` and
    ``e.path`` keep working. errors="record" (or "skip") returns the result
    instead, the failures in it."""

    def __init__(self, failures: list, result: _Any = None) -> None:
        first = failures[0]
        super().__init__(first.path, first.status, first.message,
                         first.cause, first.limit, first.value)
        n = len(failures)
        self.args = (f"{n} input{'s' if n != 1 else ''} failed, the first "
                     f"{first.path}: {first.message}",)
        self.failures = failures
        self.result = result

    def __reduce__(self) -> tuple:
        return (RunFailed, (self.failures, self.result))


def _errors(errors: str, words: tuple = ("raise", "skip", "record")) -> str:
    """errors= checked: one of words (the message lists them all)."""
    if errors not in words:
        listed = ", ".join(f"'{w}'" for w in words[:-1])
        raise ValueError(f"errors must be {listed} or '{words[-1]}'")
    return errors


#: scale= words: "native" (the samples as they are) or "unit" (0..1), with
#: "none", the word of the records' "scale" key, a synonym of "native"
_SCALES = ("native", "none", "unit")


def _scale(scale: str) -> str:
    if scale not in _SCALES:
        raise ValueError("scale must be 'native' (or 'none', its synonym) "
                         "or 'unit'")
    return scale


class Stats:
    """One image's statistics: the command line's JSON record."""

    __slots__ = ("_dict", "_native")

    def __init__(self, record: _Any) -> None:
        # a dict, or the binding's record, whose dict is built when first
        # read (a per-channel column comes from it directly)
        if isinstance(record, dict):
            self._dict, self._native = record, None
        else:
            self._dict, self._native = None, record

    @property
    def _record(self) -> dict:
        if self._dict is None:
            self._dict = self._native.dict()
        return self._dict

    def to_dict(self) -> dict:
        """The record as ``imgstat --json`` prints it (a new dict)."""
        if self._native is not None:
            return self._native.dict()
        return _json.loads(_json.dumps(self._record))

    def __reduce__(self) -> tuple:
        # pickled (and copied) as its dict: the binding's record is not
        return (Stats, (self._record,))

    def _repr_html_(self) -> str:
        """A notebook's view: the figures as a table, each channel's
        histogram drawn when the record has them (imgstat/_html.py)."""
        from ._html import stats_html
        return stats_html(self)

    @property
    def file(self) -> str:
        return self._record["file"]

    @property
    def width(self) -> int:
        return self._record["width"]

    @property
    def height(self) -> int:
        return self._record["height"]

    @property
    def channels(self) -> int:
        return self._record["channels"]

    @property
    def depth(self) -> int:
        return self._record["depth"]

    @property
    def backend(self) -> str:
        return self._record["backend"]

    def _column(self, key: str) -> tuple:
        if self._native is not None:
            return self._native.column(key)
        return tuple(c.get(key) for c in self._record["stats"])

    @property
    def count(self) -> tuple:
        return self._column("count")

    @property
    def min(self) -> tuple:
        return self._column("min")

    @property
    def max(self) -> tuple:
        return self._column("max")

    @property
    def sum(self) -> tuple:
        return self._column("sum")

    @property
    def sum_sq(self) -> tuple:
        return self._column("sum_sq")

    @property
    def mean(self) -> tuple:
        return self._column("mean")

    @property
    def std(self) -> tuple:
        return self._column("std")

    def __repr__(self) -> str:
        return (f"imgstat.Stats({self.file!r}, {self.width}x{self.height}, "
                f"mean={self.mean}, std={self.std})")


class Dataset:
    """The record pooled over every sample of every image (``imgstat
    --dataset-only --json``'s ``"dataset"`` object), with ``failures``: the
    inputs that could not be read, as ImageError values."""

    __slots__ = ("_record", "failures", "_call")

    def __init__(self, record: dict, failures: list) -> None:
        self._record = record
        self.failures = failures
        self._call = None  # imgstat.dataset's: the run again, for report()

    def to_dict(self) -> dict:
        """The record as ``imgstat --dataset-only --json`` prints it."""
        return _json.loads(_json.dumps(self._record))

    def _repr_html_(self) -> str:
        """A notebook's view: the pooled figures as a table, the pooled
        histograms drawn when the record has them, what was left out, the
        outliers and the failures (imgstat/_html.py)."""
        from ._html import dataset_html
        return dataset_html(self)

    def report(self, path: _Path) -> None:
        """Writes the HTML report page of this dataset's run to path: the
        page ``imgstat --dataset-only --report FILE.html`` writes of the
        same inputs and options (docs/report.md). The inputs are read
        again, with the pooled histograms the page shows: the page needs
        each image's figures and the outliers' pixels, which a Dataset
        does not keep. The page is written whole or not at all; ValueError
        when path is one of the inputs, OSError when it cannot be
        written."""
        if self._call is None:
            raise ValueError("report: this Dataset was not made by "
                             "imgstat.dataset (there is no run to report)")
        if not isinstance(path, _PATH):
            raise TypeError("report: the path of the page to write")
        args, command = self._call
        _imgstat.dataset(*args, report=path, report_command=command)

    @property
    def _stats(self) -> list:
        return self._record["dataset"].get("stats", [])

    @property
    def mean(self) -> tuple:
        """The pooled mean per channel (with scale="unit" what
        torchvision.transforms.Normalize takes)."""
        return tuple(c.get("mean") for c in self._stats)

    @property
    def std(self) -> tuple:
        """The pooled standard deviation per channel."""
        return tuple(c.get("std") for c in self._stats)

    @property
    def count(self) -> tuple:
        return tuple(c.get("count") for c in self._stats)

    @property
    def images(self) -> int:
        return self._record["dataset"].get("images", 0)

    @property
    def pooled(self) -> int:
        return self._record["dataset"].get("pooled", 0)

    @property
    def excluded(self) -> list:
        """The images left out of the pool, with the reason."""
        return list(self._record["dataset"].get("excluded", []))

    @property
    def notes(self) -> list:
        """What the command line's text prints as notes beside the
        constants: the record's ``depth_note`` (16-bit images were pooled,
        so a Pillow-based loader's constants differ) and ``histogram_note``;
        ``imgstat.dataset`` also warns (``UserWarning``) with the first."""
        d = self._record["dataset"]
        return [d[k] for k in ("depth_note", "histogram_note") if d.get(k)]

    @property
    def labels(self) -> dict:
        """With label images: each label's pooled figures over the images
        that have it, {label: {"images": N, "stats": [per channel, as the
        record's "stats"]}}, by increasing label; {} without."""
        return {e["label"]: {"images": e["images"], "stats": e["stats"]}
                for e in self._record["dataset"].get("labels", [])}

    @property
    def outliers(self) -> list:
        """The images whose channel mean or std is an outlier."""
        return list(self._record["dataset"].get("outliers", []))

    def emit(self, form: str) -> str:
        """The mean and std as a framework's config takes them: the line of
        ``imgstat --dataset-only --emit FORM`` after its ``FORM: `` (the
        same C code, docs/dataset.md), form one of "torchvision", "timm",
        "hf", "mmcv", "detectron2", "keras", "albumentations". Needs a
        dataset of scale="unit"; mmcv and detectron2 (BGR order) an RGB
        one. ValueError saying why otherwise."""
        if not isinstance(form, str):
            raise TypeError("form: a string such as 'torchvision'")
        return _imgstat.dataset_emit(
            form, self._record["dataset"].get("scale") == "unit",
            list(self.mean), list(self.std))

    def __repr__(self) -> str:
        return (f"imgstat.Dataset(images={self.images}, mean={self.mean}, "
                f"std={self.std})")


def _parse(result: tuple) -> Stats:
    ok, value = result
    if not ok:
        raise ImageError(*value)
    # the binding's record (or its dict), or the record's JSON text
    return Stats(_json.loads(value) if isinstance(value, str) else value)


def _percentiles(percentiles: _Optional[_Sequence[float]]) -> _Optional[list]:
    if percentiles is None:
        return None
    if isinstance(percentiles, (str, bytes)):
        raise TypeError("percentiles: a sequence of numbers")
    return [float(p) for p in percentiles]


def _check_ddof(ddof: int) -> int:
    if isinstance(ddof, bool) or not isinstance(ddof, int):
        raise TypeError("ddof: 0 or 1")
    return ddof


_TORCH = None  # (torch, its dtypes imgstat takes, its raw-stream query)


def _torch_fast(torch: _Any) -> tuple:
    """(torch's uint8, uint16 and float32 dtypes, None for one it lacks;
    torch's query of a CUDA device's current raw stream, None in a torch
    without it), looked up once: what the binding's fast path for a torch
    CUDA tensor (stats_torch) reads it with."""
    global _TORCH
    if _TORCH is None or _TORCH[0] is not torch:
        _TORCH = (torch, tuple(getattr(torch, n, None)
                               for n in ("uint8", "uint16", "float32")),
                  getattr(torch._C, "_cuda_getCurrentRawStream", None))
    return _TORCH[1], _TORCH[2]


def _torch_stream(torch: _Any, dev: int) -> _Optional[int]:
    """torch's current stream on CUDA device dev (1 for the legacy default
    stream, which torch reports as 0), or None for a torch without the
    query."""
    raw = _torch_fast(torch)[1]
    return None if raw is None else raw(dev) or 1


def _cuda_source(x: _Any) -> tuple:
    """(what to hand to the binding, the CUDA stream the producer's work is
    queued on, where imgstat queues its own after it: 1 the legacy default
    stream). A CUDA DLPack producer asked for no stream (nanobind asks for
    none) orders nothing, so the stream is found here: a torch CUDA tensor
    goes as it is, with torch's current stream on its device (torch's own
    raw-stream query; its __dlpack__(stream=...) costs more than reducing a
    small tensor); another CUDA DLPack array goes as the capsule of
    __dlpack__(stream=1), its producer ordering its work before the legacy
    default stream; anything else as it is (a host array: no stream)."""
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if not x.is_cuda:
            return x, 1
        stream = _torch_stream(torch, x.get_device())
        if stream is not None:
            return x, stream
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None or not hasattr(x, "__dlpack__"):
        return x, 1
    try:
        if dev()[0] != 2:  # not kDLCUDA
            return x, 1
        return x.__dlpack__(stream=1), 1
    except (TypeError, BufferError, ValueError):  # a producer without stream=
        return x, 1


def _cuda_interface(x: _Any) -> _Optional[dict]:
    """The __cuda_array_interface__ of an object that offers no DLPack."""
    if hasattr(x, "__dlpack__"):
        return None
    return getattr(x, "__cuda_array_interface__", None)


_CAI_TYPES = {"|u1": ("uint8", 1), "<u2": ("uint16", 2), "<f4": ("float32", 4)}


def _cai_geometry(cai: dict) -> tuple:
    """(pointer, stream, shape, strides in samples, dtype name) of a
    __cuda_array_interface__ dict; stream 0 when it names none (version 3:
    None, no synchronization needed)."""
    typestr = cai["typestr"]
    if typestr not in _CAI_TYPES:
        raise TypeError("the array's dtype must be uint8, uint16 or float32")
    dtype, item = _CAI_TYPES[typestr]
    shape = list(cai["shape"])
    strides = cai.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], 1
        for d in reversed(shape):
            strides.insert(0, step)
            step *= d
    else:
        if any(s % item for s in strides):
            raise ValueError("strides that are not whole samples")
        strides = [s // item for s in strides]
    stream = cai.get("stream")
    if stream is not None and (isinstance(stream, bool) or
                               not isinstance(stream, int) or stream == 0):
        raise ValueError("__cuda_array_interface__: a stream is a non-zero "
                         "integer or None")
    return cai["data"][0], stream or 0, shape, strides, dtype


class DeviceArray:
    """A CUDA array made by imgstat (normalize of a CUDA input that is
    neither torch nor CuPy): hand it to any DLPack consumer
    (``torch.from_dlpack``, ``cupy.from_dlpack``, ``jax.dlpack``), once."""

    def __init__(self, capsule: _Any, device: int) -> None:
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, *, stream: _Any = None, **_: _Any) -> _Any:
        # the result is complete (the call synchronized): no stream to order
        if self._capsule is None:
            raise BufferError("this DeviceArray was consumed already")
        capsule, self._capsule = self._capsule, None
        return capsule

    def __dlpack_device__(self) -> _Tuple[int, int]:
        return (2, self._device)  # kDLCUDA


def _like_input(x: _Any, out: _Any, device: int) -> _Any:
    """A CUDA result (a DLPack capsule) as the input's kind of array: a
    torch tensor for a torch tensor, a CuPy array for a CuPy array; else a
    DeviceArray."""
    out = DeviceArray(out, device)
    kind = type(x).__module__.split(".")[0]
    try:
        if kind == "torch":
            import torch
            convert = torch.from_dlpack
        elif kind == "cupy":
            import cupy
            convert = cupy.from_dlpack
        else:
            return out
    except ImportError:
        return out
    try:
        return convert(out)
    except TypeError:
        # a consumer that passes arguments (stream=...) this nanobind's
        # __dlpack__ does not take: the capsule itself (the result is
        # complete, there is no stream to wait for)
        return convert(out.__dlpack__())


def _nodata(nodata: _Any) -> _Tuple[_Optional[list], bool]:
    """stats()'s nodata as the binding takes it: (values or None, none)."""
    if nodata is None:
        return None, False
    if isinstance(nodata, str):
        if nodata != "none":
            raise ValueError("imgstat.stats: nodata must be a number, one "
                             "per channel, or 'none'")
        return None, True
    if isinstance(nodata, (int, float)):
        return [float(nodata)], False
    return [float(v) for v in nodata], False


class _ValidFiles:
    """stats()'s mask and labels as paths: a path as it is, an array
    written to a temporary .npy file (removed on exit)."""

    def __init__(self, mask: _Any, labels: _Any):
        self.given = (mask, labels)
        self.tmp = None

    def _path(self, a: _Any, name: str, is_labels: bool) -> _Any:
        if a is None or isinstance(a, (str, bytes, _os.PathLike)):
            return a
        import numpy as np
        import tempfile
        arr = np.asarray(a)
        if arr.dtype == np.bool_:
            arr = arr.astype(np.uint8)
        if is_labels and arr.dtype.kind in "iu" and arr.dtype.itemsize > 2:
            if arr.size and (arr.min() < 0 or arr.max() > 65535):
                raise ValueError("imgstat.stats: labels must be from 0 to "
                                 "65535")
            arr = arr.astype(np.uint16)
        if self.tmp is None:
            self.tmp = tempfile.TemporaryDirectory(prefix="imgstat_")
        path = _os.path.join(self.tmp.name, name + ".npy")
        np.save(path, np.ascontiguousarray(arr))
        return path

    def __enter__(self) -> _Tuple[_Any, _Any]:
        return (self._path(self.given[0], "mask", False),
                self._path(self.given[1], "labels", True))

    def __exit__(self, *exc: _Any) -> None:
        if self.tmp is not None:
            self.tmp.cleanup()


def stats(x: _Any, *, ddof: int = 0, histogram: bool = False,
          percentiles: _Optional[_Sequence[float]] = None,
          backend: str = "auto", layout: str = "hwc", nodata: _Any = None,
          mask: _Any = None, labels: _Any = None) -> Stats:
    """The per-channel statistics of one image.

    x as for the statistics below; nodata: a value left out of every figure
    (one, or one per channel; counted as "nodata_count"), None for the
    file's own (a TIFF's GDAL_NODATA), "none" for no nodata at all; mask: a
    path or an array of the image's size, the statistics of the pixels where
    it is non-zero; labels: a path or an integer array of the image's size,
    each non-zero label's statistics in the record's "labels"
    (docs/bands-masks.md). Not with CUDA arrays."""
    if nodata is None and mask is None and labels is None:
        return _stats(x, ddof=ddof, histogram=histogram,
                      percentiles=percentiles, backend=backend, layout=layout)
    values, none = _nodata(nodata)
    ddof = _check_ddof(ddof)
    pct = _percentiles(percentiles)
    if layout not in ("hwc", "chw"):
        raise ValueError("imgstat.stats: layout must be 'hwc' or 'chw'")
    with _ValidFiles(mask, labels) as (mask_path, labels_path):
        valid = (values, none, mask_path, labels_path)
        if isinstance(x, (str, _os.PathLike)):
            return _parse(_imgstat.stats_path(x, ddof, histogram, pct, backend,
                                              *valid))
        if isinstance(x, (bytes, bytearray, memoryview)):
            return _parse(_imgstat.stats_bytes(bytes(x), ddof, histogram, pct,
                                               backend, *valid))
        if _cuda_interface(x) is not None:
            raise ValueError("imgstat.stats: nodata, mask and labels take "
                             "host arrays, paths and bytes (not CUDA arrays)")
        src, stream = _cuda_source(x)
        return _parse(_imgstat.stats_array(src, layout, ddof, histogram, pct,
                                           backend, stream, *valid))


def _stats(x: _Any, *, ddof: int = 0, histogram: bool = False,
           percentiles: _Optional[_Sequence[float]] = None,
           backend: str = "auto", layout: str = "hwc") -> Stats:
    """The per-channel statistics of one image.

    x: a path (str or os.PathLike; a NUL in it: ValueError), the bytes of
    an image file, or an array of uint8, uint16, int16 (host arrays) or
    float32 samples shaped HW, HWC or CHW (layout says which for 3
    dimensions): numpy, or any DLPack object (torch, CuPy, JAX).
    A CUDA array is reduced on its device with no copy to the host (HW,
    HWC, CHW or other views with non-negative strides; a build with CUDA),
    with the CPU's record of the same pixels but for "backend". ddof: 0 or 1;
    histogram / percentiles: the histogram figures (median, percentiles,
    entropy, skewness, kurtosis); backend: "auto", "cpu" or "gpu".

    Raises ImageError when the image cannot be read or computed, TypeError /
    ValueError for bad arguments."""
    ddof = _check_ddof(ddof)
    pct = _percentiles(percentiles)
    if layout not in ("hwc", "chw"):
        raise ValueError("imgstat.stats: layout must be 'hwc' or 'chw'")
    torch = _sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        # a CUDA tensor's fast path: read from the tensor, no DLPack export
        dtypes, raw = _torch_fast(torch)
        if raw is not None:
            result = _imgstat.stats_torch(x, dtypes, raw, layout == "chw",
                                          ddof, histogram, pct, backend)
            if result is not None:
                return _parse(result)
    if isinstance(x, (str, _os.PathLike)):
        return _parse(_imgstat.stats_path(x, ddof, histogram, pct, backend))
    if isinstance(x, (bytes, bytearray, memoryview)):
        return _parse(_imgstat.stats_bytes(bytes(x), ddof, histogram, pct,
                                           backend))
    cai = _cuda_interface(x)
    if cai is not None:
        ptr, stream, shape, strides, dtype = _cai_geometry(cai)
        return _parse(_imgstat.stats_cuda_interface(
            ptr, -1, stream, shape, strides, dtype, layout, ddof, histogram, pct,
            backend))
    try:
        src, stream = _cuda_source(x)
        result = _imgstat.stats_array(src, layout, ddof, histogram, pct,
                                      backend, stream)
    except TypeError as e:
        if "incompatible function arguments" in str(e):
            raise TypeError(
                "imgstat.stats: x must be a path, bytes, or an array "
                "(numpy, DLPack, __cuda_array_interface__)") from None
        raise
    return _parse(result)


#: A path as scan, dataset and normalize_files take it (os.fsencode's).
_Path = _Union[str, bytes, _os.PathLike]
_PATH = (str, bytes, _os.PathLike)


def _sources(inputs: _Union[_Path, _Iterable]) -> list:
    """One path or an iterable of them as a list; the binding takes each as
    os.fsencode does (a NUL in one: ValueError)."""
    if isinstance(inputs, _PATH):
        inputs = [inputs]
    out = []
    for p in inputs:
        if not isinstance(p, _PATH):
            raise TypeError("inputs: paths of files or folders")
        out.append(p)
    return out


def _floats(v: _Any) -> _Optional[list]:
    """One number or a sequence of them as a list of floats (None stays)."""
    if v is None:
        return None
    return [float(t) for t in (v if isinstance(v, (list, tuple)) else [v])]


def _lists(files_from: _Union[None, _Path, _Iterable]) -> list:
    if files_from is None:
        return []
    return _sources(files_from)


class _Scan:
    """The iterator of scan(): closing it (or leaving a for loop early)
    stops the run."""

    def __init__(self, native: _Any, errors: str) -> None:
        self._native = native
        self._errors = errors
        self._failures: list = []  # errors="raise": raised at the end
        self._last = {"done": 0, "failed": 0, "total": 0,
                      "total_known": False}

    def __iter__(self) -> "_Scan":
        return self

    def __next__(self) -> _Union[Stats, ImageError]:
        while True:
            if self._native is None:
                raise StopIteration
            item = self._native.next()
            if item is None:
                self.progress  # the last figures stay readable
                self._native = None
                if self._failures:
                    failures, self._failures = self._failures, []
                    raise RunFailed(failures)
                raise StopIteration
            ok, value = item
            if ok:
                return Stats(value)
            if self._errors == "skip":
                continue
            error = ImageError(*value)
            if self._errors == "record":
                return error
            self._failures.append(error)  # the run goes on

    @property
    def progress(self) -> dict:
        """The run's figures so far: inputs delivered (done), of which
        failed, the inputs known (total) and whether that is final."""
        if self._native is None:
            return dict(self._last)
        done, failed, total, known = self._native.progress()
        self._last = {"done": done, "failed": failed, "total": total,
                      "total_known": known}
        return dict(self._last)

    def close(self) -> None:
        if self._native is not None:
            self.progress  # the last figures stay readable
            self._native.close()
            self._native = None

    def __enter__(self) -> "_Scan":
        return self

    def __exit__(self, *exc: _Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def scan(inputs: _Union[_Path, _Iterable], *, jobs: int = 0,
         errors: str = "raise", ddof: int = 0, histogram: bool = False,
         percentiles: _Optional[_Sequence[float]] = None,
         backend: str = "auto",
         follow: bool = False,
         files_from: _Union[None, _Path, _Iterable] = None,
         jpeg_decoder: str = "auto", nodata: _Any = None,
         mask: _Optional[_Path] = None, mask_suffix: _Optional[str] = None,
         labels: _Optional[_Path] = None) -> _Scan:
    """Statistics of every image among inputs (files, and folders walked in
    the byte order of their paths, as the command line does; paths str,
    bytes or os.PathLike, a NUL in one: ValueError), one Stats per
    image, in input order. jobs: worker threads (0: one per core); errors:
    "raise" (the run goes on past an input that fails; once every other
    image was yielded, RunFailed is raised with every failure), "skip", or
    "record" (the ImageError is yielded in the input's place); files_from: lists of paths,
    one per line; jpeg_decoder: "auto", "cpu" or "gpu" (nvJPEG, in a build
    with CUDA: the records then name the decoder, as --jpeg-decoder gpu
    does). Ctrl-C stops the run cleanly; the iterator's progress says how
    far the run is (done, failed, total). nodata, mask, mask_suffix and
    labels: the command line's --nodata, --mask, --mask-suffix and --labels
    (a mask or label file for every input, or a folder paired with them)."""
    _errors(errors)
    ddof = _check_ddof(ddof)
    values, none = _nodata(nodata)
    native = _imgstat.scan(_sources(inputs), _lists(files_from), int(jobs),
                           bool(follow), ddof, bool(histogram),
                           _percentiles(percentiles), backend, jpeg_decoder,
                           values, none, mask, labels, mask_suffix)
    return _Scan(native, errors)


def _sample(sample: _Optional[int], seed: int) -> tuple:
    """sample= and seed= as the run takes them (sample 0: every input), or
    ValueError/TypeError as --sample and --seed refuse them."""
    if sample is None:
        n = 0
    elif isinstance(sample, bool) or not isinstance(sample, int):
        raise TypeError("sample must be a number of inputs (an int >= 1)")
    elif not 1 <= sample < 2 ** 64:
        raise ValueError(f"sample: {sample} is not a number of inputs "
                         "(1 or more)")
    else:
        n = sample
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError("seed must be an int from 0 to 2**64 - 1")
    if not 0 <= seed < 2 ** 64:
        raise ValueError(f"seed: {seed} is not a number from 0 to 2**64 - 1")
    return n, seed


def dataset(inputs: _Union[_Path, _Iterable], *,
            as_: _Optional[str] = None, scale: str = "native",
            outlier_z: float = 5.0, histogram: bool = False,
            percentiles: _Optional[_Sequence[float]] = None,
            range: _Optional[_Sequence[float]] = None, ddof: int = 0,
            jobs: int = 0, backend: str = "auto", follow: bool = False,
            files_from: _Union[None, _Path, _Iterable] = None,
            jpeg_decoder: str = "auto", errors: str = "raise",
            sample: _Optional[int] = None, seed: int = 0,
            nodata: _Any = None, mask: _Optional[_Path] = None,
            mask_suffix: _Optional[str] = None,
            labels: _Optional[_Path] = None) -> Dataset:
    """The record pooled over every sample of every image among inputs
    (``imgstat --dataset-only``): counts, extrema with their file and place,
    exact sums, mean, std, images left out and why, outliers.

    as_: "keep", "gray", "rgb" or "rgba" (default "rgb" with scale="unit",
    as torchvision's loader, else "keep"); scale: "native" (the samples as
    they are; "none", the record's word for it, is a synonym) or "unit"
    (0..1: the mean and std torchvision.transforms.Normalize takes);
    outlier_z: the robust z-score of the outlier rule; range: (low, high)
    of float images' pooled histograms; jpeg_decoder as for scan();
    sample: pool a reproducible uniform sample of that many inputs (the
    command line's --sample, the same files for any jobs), drawn with seed
    (--seed, default 0) by the rule of docs/dataset.md; all of them when
    sample is not fewer; the record's "sample" says so.

    Raises ImageError (the first input that failed: its path, status and
    message, as the command line says them) when no image could be read,
    as for a folder that does not exist or holds no images: there is no
    mean or std to return. When some inputs failed among images that were
    read, the run pools every other image and then, with errors="raise"
    (the default), raises RunFailed: its ``result`` the Dataset, its
    ``failures`` the inputs that failed (as the command line prints the
    record and exits 1); errors="record" returns the Dataset, the failures
    in its ``failures``. nodata, mask and mask_suffix: the command line's
    --nodata, --mask (a file, or a folder paired with the inputs) and
    --mask-suffix: the pool of the valid samples (nnU-Net's foreground);
    labels: --labels (a label image, or a folder of them paired as masks
    are): each label's figures pooled over the images that have it, in
    the Dataset's ``labels``."""
    given = dict(locals())  # the call as made, for Dataset.report's page
    _errors(errors, ("raise", "record"))
    _scale(scale)
    ddof = _check_ddof(ddof)
    sample, seed = _sample(sample, seed)
    values, none = _nodata(nodata)
    args = (
        _sources(inputs), _lists(files_from), int(jobs), bool(follow),
        "" if as_ is None else as_, scale, float(outlier_z),
        None if range is None else [float(v) for v in range], ddof,
        bool(histogram), _percentiles(percentiles), backend, jpeg_decoder,
        sample, seed, values, none, mask, labels, mask_suffix)
    record, failures = _imgstat.dataset(*args)
    failures = [ImageError(*f) for f in failures]
    result = Dataset(record, failures)
    # the run again for Dataset.report, and the call as its page shows it
    inputs = given.pop("inputs")
    words = [repr(inputs if isinstance(inputs, (str, list)) else args[0])]
    defaults = dataset.__kwdefaults__
    words += [f"{k}={v!r}" for k, v in given.items()
              if repr(v) != repr(defaults[k])]
    result._call = (args, f"imgstat.dataset({', '.join(words)})")
    if result.images == 0 and failures:
        raise failures[0]
    depth_note = record["dataset"].get("depth_note")
    if depth_note:
        _warnings.warn(depth_note, UserWarning, stacklevel=2)
    if failures and errors == "raise":
        raise RunFailed(failures, result)
    return result


def normalize(x: _Any, mode: str = "minmax", *,
              mean: _Optional[_Sequence[float]] = None,
              std: _Optional[_Sequence[float]] = None,
              clip: _Sequence[float] = (1, 99),
              range: _Optional[_Sequence[float]] = None, linked: bool = False,
              dtype: _Optional[str] = None, alpha: str = "copy",
              scale: str = "native", layout: str = "hwc",
              backend: str = "auto",
              out_layout: _Optional[str] = None) -> _Any:
    """A normalized copy of a host array, with the rules of ``imgstat
    normalize`` (docs/normalize.md): mode "minmax" ([min, max] to the output
    depth's full range), "clip" (the clip=(low, high) percentiles to the
    full range, saturating) or "zscore" ((x - mean) / std, measured, as
    float32); mean= and std= given (one value, or one per channel; with
    scale="unit" in 0..1 of the input's full scale, as torchvision's
    Normalize) or range=(low, high) replace the mode. dtype: "uint8",
    "uint16" or "float32" (default: the input's for minmax and clip, float32
    otherwise); alpha: "copy", "normalize" or "drop"; linked: one range over
    the colour channels; scale: "native" (mean=, std=, range= in the
    input's units; "none" is a synonym) or "unit"; layout: the input
    array's axes ("hwc" or "chw", for 3 dimensions); out_layout: the
    result's axes, "hwc" or "chw" (as ``imgstat normalize --layout``, which
    sets the axes of the .npy written; default: the input's layout; for a
    CUDA array, when the result is a torch tensor or a CuPy array).
    Returns a numpy array for a
    host array; for a CUDA array (a build with CUDA) the work is done on its
    device and the result is a new array on that device, with the same bytes
    as the host path's: a torch tensor for a torch tensor, a CuPy array for
    a CuPy array, else an imgstat.DeviceArray (``__dlpack__``)."""
    if layout not in ("hwc", "chw"):
        raise ValueError("imgstat.normalize: layout (the input's axes) must "
                         "be 'hwc' or 'chw'")
    if out_layout not in (None, "hwc", "chw"):
        raise ValueError("imgstat.normalize: out_layout (the result's axes) "
                         "must be 'hwc' or 'chw'")
    _scale(scale)
    args = (layout, mode, _floats(mean), _floats(std),
            [float(t) for t in clip], _floats(range), bool(linked),
            dtype or "", alpha, scale, backend)
    cai = _cuda_interface(x)
    if cai is not None:
        ptr, stream, shape, strides, cai_dtype = _cai_geometry(cai)
        ok, value = _imgstat.normalize_cuda_interface(
            ptr, -1, stream, shape, strides, cai_dtype, *args)
    else:
        src, stream = _cuda_source(x)
        ok, value = _imgstat.normalize_array(src, *args, stream)
    if not ok:
        raise ImageError(*value)
    if isinstance(value, tuple):  # (a DLPack capsule, its CUDA device)
        value = _like_input(x, *value)
        # the input's dimensions (the result has as many)
        nd = len(shape) if cai is not None else getattr(x, "ndim", 3)
        if out_layout in (None, layout) or nd != 3:
            return value
        # the other axes' order, its samples contiguous, on the device
        order = (2, 0, 1) if out_layout == "chw" else (1, 2, 0)
        kind = type(value).__module__.split(".")[0]
        if kind == "torch":
            return value.permute(*order).contiguous()
        if kind == "cupy":
            import cupy
            return cupy.ascontiguousarray(value.transpose(order))
        raise ValueError("imgstat.normalize: out_layout of a CUDA result "
                         "needs a torch tensor or a CuPy array (a "
                         "DeviceArray keeps the input's layout)")
    if out_layout not in (None, layout) and value.ndim == 3:
        import numpy  # a dependency of the package
        # the other axes' order, its samples contiguous
        order = (2, 0, 1) if out_layout == "chw" else (1, 2, 0)
        value = numpy.ascontiguousarray(value.transpose(order))
    return value


class NormalizedFile:
    """An input of normalize_files() and what became of it: ``input`` (its
    path), ``output`` (the file written, or that was there already with
    ``skipped``)."""

    __slots__ = ("input", "output", "skipped")

    def __init__(self, input: str, output: _Optional[str],
                 skipped: bool) -> None:
        self.input = input
        self.output = output
        self.skipped = skipped

    def __repr__(self) -> str:
        state = " (skipped: there already)" if self.skipped else ""
        return f"NormalizedFile({self.input!r} -> {self.output!r}{state})"


def normalize_files(inputs: _Union[_Path, _Iterable],
                    out: _Path, *, mode: str = "minmax",
                    mean: _Optional[_Sequence[float]] = None,
                    std: _Optional[_Sequence[float]] = None,
                    clip: _Sequence[float] = (1, 99),
                    range: _Optional[_Sequence[float]] = None,
                    linked: bool = False, dtype: _Optional[str] = None,
                    alpha: str = "copy", scale: str = "native",
                    dataset: bool = False, as_: _Optional[str] = None,
                    format: _Optional[str] = None, layout: str = "hwc",
                    compression: _Optional[int] = None,
                    skip_existing: bool = False, errors: str = "raise",
                    jobs: int = 0, follow: bool = False,
                    files_from: _Union[None, _Path, _Iterable] = None,
                    backend: str = "auto", sample: _Optional[int] = None,
                    seed: int = 0) -> list:
    """Normalizes every image among inputs (files, folders walked in byte
    order, lists of paths in files_from) and writes each to out, as
    ``imgstat normalize`` does (docs/normalize.md): out is a file for one
    input, else a folder mirroring the input folders (OUT/sub/x.png); the
    modes and options are normalize()'s, and

    dataset: one plan for every input from their pooled figures (minmax,
    clip, zscore), each converted to the layout as_ ("keep", "gray", "rgb",
    "rgba"; default "rgb" with scale="unit", as torchvision's loader, else
    "keep") first; format: "png", "npy" or "pfm" (default: from out's name
    for one file, else PNG, and .npy for float32); layout: the axes of the
    .npy files written, "hwc" or "chw" (``--layout``; normalize()'s
    out_layout); compression: PNG's deflate level 0..9; skip_existing: an
    input whose output is there is not read; sample, seed: with dataset,
    the plan is pooled over a reproducible uniform sample of that many
    inputs, as dataset(sample=, seed=) and ``imgstat normalize --dataset
    --sample`` draw it (every input is still written).

    Before any work, the run is refused (ValueError) when two inputs would
    write one output, an output would replace an input, or out's name says
    another format. Each file is written to a temporary beside it and
    renamed when complete: nothing is half-written, even when Ctrl-C stops
    the run.

    Returns a list, in input order, of NormalizedFile. An input that fails
    does not stop the run (as ``imgstat normalize`` goes on and exits 1);
    errors says how its failure is reported: "raise" (every other input is
    written, then RunFailed is raised: its ``result`` the list of
    NormalizedFile, its ``failures`` the ImageError of each input that
    failed), "skip" (failed inputs are left out) or "record" (an ImageError
    in the input's place: ``path`` the input, or the output when writing it
    failed). With dataset=True a run that could
    read no image (a folder that does not exist or holds no images: every
    input failed) raises the first failure's ImageError whatever errors
    says: there is no plan to normalize with."""
    _errors(errors)
    _scale(scale)
    if layout not in ("hwc", "chw"):
        raise ValueError("layout must be 'hwc' or 'chw'")
    if not isinstance(out, _PATH):
        raise TypeError("out: the path of a file or a folder")
    sample, seed = _sample(sample, seed)
    if sample and not dataset:
        raise ValueError("sample= draws the inputs a dataset=True plan "
                         "pools: it needs dataset=True")
    result = _imgstat.normalize_files(
        _sources(inputs), _lists(files_from), out, int(jobs),
        bool(follow), mode, _floats(mean), _floats(std),
        [float(t) for t in clip], _floats(range), bool(linked), dtype or "",
        alpha, scale, bool(dataset), "" if as_ is None else as_,
        format or "", layout,
        -1 if compression is None else int(compression), bool(skip_existing),
        False, backend, sample, seed)
    if not result[0]:
        _, kind, message = result
        raise (ValueError if kind == "arg" else RuntimeError)(message)
    _, items, _counts, _cancelled = result
    if dataset and items and all(f is not None for *_, f in items):
        raise ImageError(*items[0][3])
    done, failures = [], []
    for path, output, skipped, failure in items:
        if failure is None:
            done.append(NormalizedFile(path, output, skipped))
        elif errors == "raise":
            failures.append(ImageError(*failure))
        elif errors == "record":
            done.append(ImageError(*failure))
    if failures:
        raise RunFailed(failures, done)
    return done


def program() -> str:
    """The path of the imgstat program that came with this package."""
    return _os.path.join(_os.path.dirname(__file__), "bin", "imgstat")
