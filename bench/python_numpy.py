"""imgstat.stats(a) against the numpy one-liners for the same figures, on a
12 MP RGB uint8 array in memory (docs/benchmarks.md, "Python"). Run with the
venv that has the package: venv/bin/python bench/python_numpy.py [RUNS]
Prints the median of RUNS (default 7) of each, interleaved, and checks that
both give the same minimum and maximum, and that imgstat's mean and std are
the exact ones (from integer sums) to the last bit or two."""
import math
import statistics
import sys
import time

import numpy as np

import imgstat


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    rng = np.random.default_rng(12)
    a = rng.integers(0, 256, size=(3000, 4000, 3), dtype=np.uint8)

    def with_numpy():
        f = a.reshape(-1, 3)
        return f.min(0), f.max(0), f.mean(0), f.std(0)

    def with_imgstat():
        return imgstat.stats(a)

    tn, ti = [], []
    for _ in range(runs):
        t = time.perf_counter()
        mn, mx, mean, std = with_numpy()
        tn.append(time.perf_counter() - t)
        t = time.perf_counter()
        r = with_imgstat()
        ti.append(time.perf_counter() - t)
    assert list(r.min) == list(mn) and list(r.max) == list(mx)
    # imgstat's figures against exact ones from integer sums (numpy's own
    # std along axis 0 is a running sum: off by ~1e-13 here)
    f = a.reshape(-1, 3).astype(np.int64)
    cnt = f.shape[0]
    for c in range(3):
        s1, s2 = int(f[:, c].sum()), int((f[:, c] * f[:, c]).sum())
        assert r.mean[c] == s1 / cnt
        exact_std = math.sqrt((cnt * s2 - s1 * s1) / (cnt * cnt))
        assert abs(r.std[c] - exact_std) <= 2e-16 * exact_std
        assert abs(std[c] - exact_std) <= 1e-9 * exact_std
    n, i = statistics.median(tn), statistics.median(ti)
    print(f"12 MP RGB uint8, median of {runs}: numpy {n * 1e3:.1f} ms, "
          f"imgstat.stats {i * 1e3:.1f} ms ({r.backend}): {n / i:.1f} x")


if __name__ == "__main__":
    main()
