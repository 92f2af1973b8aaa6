"""A stand-in for the few pytest features python/tests/test_cuda_arrays.py
and its conftest use, for a GPU host without pytest (tests/gpu/checks/python_cuda.sh
falls back to it, saying so): mark.parametrize, mark.skipif, skip,
raises(match=), approx, fixture. Run by tests/gpu/checks/run_cuda_tests.py."""

import math
import re


class Skipped(Exception):
    pass


def skip(reason=""):
    raise Skipped(reason)


def fixture(fn=None, **_):
    return fn if fn is not None else (lambda f: f)


class _Mark:
    @staticmethod
    def parametrize(names, values):
        def deco(fn):
            fn.__dict__.setdefault("_params", []).insert(
                0, ([n.strip() for n in names.split(",")], list(values)))
            return fn
        return deco

    @staticmethod
    def skipif(cond, reason=""):
        def deco(fn):
            if cond:
                fn._skip = reason
            return fn
        return deco

    def __call__(self, *a, **k):
        return self.skipif(False)


mark = _Mark()


class _Raises:
    def __init__(self, kinds, match):
        self.kinds, self.match, self.value = kinds, match, None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            raise AssertionError(f"DID NOT RAISE {self.kinds}")
        if not issubclass(kind, self.kinds):
            return False
        if self.match and not re.search(self.match, str(value)):
            raise AssertionError(f"{value!r} does not match {self.match!r}")
        self.value = value
        return True


def raises(kinds, match=None):
    return _Raises(kinds, match)


class approx:
    def __init__(self, expected, rel=1e-6, abs=1e-12):
        self.expected, self.rel, self.abs = expected, rel, abs

    def __eq__(self, got):
        return math.isclose(got, self.expected, rel_tol=self.rel,
                            abs_tol=self.abs)
