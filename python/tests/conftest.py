"""Shared helpers of the Python package's tests: the reference figures of a
channel computed with numpy, independently of imgstat."""

import math
import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def reference(plane, ddof=0):
    """The figures of one channel (a 2-D array, rows y, columns x) as
    imgstat defines them: finite samples counted, NaN and +-Inf apart; the
    first minimum and maximum in raster order; exact integer sums."""
    plane = np.asarray(plane)
    flat = plane.reshape(-1)
    ref = {}
    if plane.dtype.kind == "f":
        finite = np.isfinite(flat)
        ref["nan_count"] = int(np.isnan(flat).sum())
        ref["inf_count"] = int(np.isinf(flat).sum())
        values = flat[finite].astype(np.float64)
        index = np.flatnonzero(finite)
    else:
        values = flat.astype(np.int64)
        index = np.arange(flat.size)
    n = values.size
    ref["count"] = n
    if n == 0:
        return ref
    width = plane.shape[1]
    k_min = index[int(np.argmin(values))]
    k_max = index[int(np.argmax(values))]
    ref["min"] = values.min().item()
    ref["max"] = values.max().item()
    ref["min_x"], ref["min_y"] = int(k_min % width), int(k_min // width)
    ref["max_x"], ref["max_y"] = int(k_max % width), int(k_max // width)
    if plane.dtype.kind == "f":
        ref["sum"] = float(math.fsum(values.tolist()))
        ref["mean"] = ref["sum"] / n
    else:
        s = sum(int(v) for v in values.tolist())
        ss = sum(int(v) * int(v) for v in values.tolist())
        ref["sum"], ref["sum_sq"] = s, ss
        ref["mean"] = s / n
    dev = values - values.mean()
    ref["std"] = (math.sqrt(math.fsum((dev * dev).tolist()) / (n - ddof))
                  if n - ddof > 0 else None)
    return ref


def check_channel(got, ref, float_samples):
    """Compares imgstat's record of a channel with the reference."""
    for key in ("count", "min_x", "min_y", "max_x", "max_y"):
        assert got[key] == ref[key], key
    if float_samples:
        assert got["nan_count"] == ref["nan_count"]
        assert got["inf_count"] == ref["inf_count"]
        assert got["min"] == ref["min"] and got["max"] == ref["max"]
        assert got["sum"] == pytest.approx(ref["sum"], rel=1e-9, abs=1e-9)
        assert got["mean"] == pytest.approx(ref["mean"], rel=1e-9, abs=1e-12)
    else:
        # exact integers, as Python ints
        for key in ("min", "max", "sum", "sum_sq"):
            assert type(got[key]) is int, key
            assert got[key] == ref[key], key
        assert got["mean"] == pytest.approx(ref["mean"], rel=1e-14)
    if ref["std"] is None:
        assert got["std"] is None
    else:
        assert got["std"] == pytest.approx(ref["std"], rel=1e-9, abs=1e-9)


@pytest.fixture
def cli():
    """The imgstat program the ctest run built (IMGSTAT_CLI), else the one
    that came with the package."""
    import imgstat

    path = os.environ.get("IMGSTAT_CLI") or imgstat.program()
    if not os.access(path, os.X_OK):
        pytest.skip(f"no imgstat program at {path}")
    return path
