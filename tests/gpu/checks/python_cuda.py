"""The GPU-host checks of the Python package's CUDA arrays (run by
tests/gpu/checks/python_cuda.sh, one step per call, each printing "ROW name | value"
lines for the summary table; the timings are bench/gpu/python_cuda.py's,
which imports row and timed from here).

    python_cuda.py paths      CUDA-array stats / histograms / normalize, small
                           (for compute-sanitizer)
    python_cuda.py hostcopy   no host copy: imgstat.stats on a CUDA tensor
                           against t.cpu() of it
"""

import json
import statistics
import sys
import time

import numpy as np
import torch

import imgstat

W = H = 8192  # imgstat bench's default --size: 64 Mi pixels


def row(name, value):
    print(f"ROW {name} | {value}", flush=True)


def timed(fn, runs=10, warm=3):
    """Median wall ms of fn(), which returns with its results on the host
    (imgstat.stats; torch_figures' .cpu()): the device idle before each."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def paths():
    """Every CUDA-array path once, small, with a check: for the sanitizer."""
    g = torch.Generator(device="cuda").manual_seed(1)
    bad = 0
    for dtype in (torch.uint8, torch.float32):
        if dtype == torch.uint8:
            t = torch.randint(0, 256, (97, 131, 4), dtype=dtype, device="cuda",
                              generator=g)
        else:
            t = torch.randn((97, 131, 4), device="cuda", generator=g)
        a = t.cpu().numpy()
        for x, ref, layout in ((t, a, "hwc"), (t[:, ::2, :3], a[:, ::2, :3],
                                                "hwc"),
                               (t.permute(2, 0, 1), a.transpose(2, 0, 1),
                                "chw")):
            ref = np.ascontiguousarray(ref)
            got = imgstat.stats(x, layout=layout, percentiles=[1, 99])
            want = imgstat.stats(ref, layout=layout, percentiles=[1, 99],
                                 backend="cpu")
            g_, w_ = got.to_dict(), want.to_dict()
            for k in ("file", "backend"):
                g_.pop(k), w_.pop(k)
            bad += json.dumps(g_) != json.dumps(w_)
            for mode in ("minmax", "clip", "zscore"):
                o = imgstat.normalize(x, mode, layout=layout)
                h = imgstat.normalize(ref, mode, layout=layout, backend="cpu")
                bad += o.cpu().numpy().tobytes() != h.tobytes()
    print(f"paths: {bad} mismatches")
    row("sanitizer run's own checks", "PASS" if bad == 0 else f"FAIL ({bad})")
    return 1 if bad else 0


def hostcopy():
    """The pixels do not travel to the host: imgstat.stats of a 64 MP RGB8
    CUDA tensor takes a fraction of the time of copying it to the host, and
    of a tensor of tens of GiB it leaves the process's peak host memory
    where it was."""
    import resource
    t = torch.randint(0, 256, (3, H, W), dtype=torch.uint8, device="cuda")
    ms_stats = timed(lambda: imgstat.stats(t, layout="chw"))
    ms_copy = timed(lambda: t.cpu(), runs=5, warm=1)
    print(f"64 MP RGB8 (192 MiB): imgstat.stats {ms_stats:.3f} ms, "
          f"t.cpu() {ms_copy:.3f} ms (pageable copy to the host)")
    row("no host copy: stats vs t.cpu() (64 MP RGB8)",
        f"{ms_stats:.2f} ms vs {ms_copy:.2f} ms "
        f"({'PASS' if ms_stats * 2 < ms_copy else 'CHECK'})")
    # a CUDA tensor of tens of GiB: the process's peak host memory
    # (ru_maxrss) must not grow by anything like its size
    free, _ = torch.cuda.mem_get_info()
    big_n = min(int(free * 0.5), 40 << 30)
    big = torch.empty(big_n, dtype=torch.uint8, device="cuda")
    big.random_(0, 256)
    h = 16384
    w = big_n // h
    x = big[: h * w].view(h, w)
    torch.cuda.synchronize()
    peak0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    s = imgstat.stats(x)
    peak1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # the check: exact sums against torch's int64 sums on the device
    # (in slices of 1 GiB: one int64 copy of the whole would not fit)
    flat = x.reshape(-1)
    want = sum(int(c.sum(dtype=torch.int64).item())
               for c in flat.split(1 << 30))
    grew = (peak1 - peak0) / 2**20
    ok = s.sum[0] == want and s.count[0] == h * w and grew < 256
    print(f"{h * w / 2**30:.1f} GiB CUDA tensor: sum {s.sum[0]} (torch "
          f"{want}); the process's peak host memory {peak0 / 2**30:.2f} GiB "
          f"before, grew by {grew:.0f} MiB: {'OK' if ok else 'CHECK'}")
    row("no host copy: 40 GiB-class tensor, peak RSS growth",
        f"{h * w / 2**30:.1f} GiB tensor, +{grew:.0f} MiB: "
        f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    step = sys.argv[1]
    if step == "paths":
        sys.exit(paths())
    if step == "hostcopy":
        sys.exit(hostcopy())
    sys.exit(f"unknown step {step}")
