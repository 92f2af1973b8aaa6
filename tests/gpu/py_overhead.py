#!/usr/bin/env python3
"""Where imgstat.stats of a CUDA tensor spends its time beyond the kernel
(issue 19's "within 1.2 x the kernel"): the whole call on a 3-sample tensor
(the fixed cost), the raw binding call (no record parsing), the record's
parsing alone, and the whole call on 64 MP CHW; median of 200 (20 for 64 MP)
after warm-up, the device synchronized before each timing.
Usage (GPU host, the package on PYTHONPATH): python3 py_overhead.py"""
import statistics
import time

import torch

import imgstat
from imgstat import _imgstat


def med(fn, n):
    for _ in range(5):
        fn()
    ts = []
    for _ in range(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


tiny = torch.randint(0, 256, (3, 1, 1), dtype=torch.uint8, device="cuda")
big = torch.randint(0, 256, (3, 8192, 8192), dtype=torch.uint8, device="cuda")
raw = lambda t: _imgstat.stats_array(t, "chw", 0, False, None, "auto")
res = raw(tiny)
rows = [
    ("imgstat.stats, 3 samples (CHW)", med(lambda: imgstat.stats(tiny, layout="chw"), 200)),
    ("binding call alone, 3 samples", med(lambda: raw(tiny), 200)),
    ("record parsing alone (_parse)", med(lambda: imgstat._parse(res, None), 200)),
    ("torch DLPack export alone", med(lambda: tiny.__dlpack__(), 200)),
    ("imgstat.stats, 64 MP CHW", med(lambda: imgstat.stats(big, layout="chw"), 20)),
    ("binding call alone, 64 MP CHW", med(lambda: raw(big), 20)),
]
for name, ms in rows:
    print(f"overhead | {name} | {ms:.3f} ms")
