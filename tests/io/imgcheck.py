"""What the format checks share (formats_check.py, readers_check.py): the
imgstat under test and a scratch folder from the command line, counted
ok/fail lines, and imgstat's --json record compared with numpy over the
pixels an independent writer or decoder gave.

usage of a script that imports it: SCRIPT IMGSTAT TMPDIR"""
import json
import os
import subprocess
import sys

import numpy as np

IMGSTAT, T = sys.argv[1], sys.argv[2]
checks = failures = 0


def ok(what):
    global checks
    checks += 1
    print("ok:", what)


def fail(what):
    global checks, failures
    checks += 1
    failures += 1
    print("FAIL:", what)


def run(*args):
    r = subprocess.run([IMGSTAT, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def path(name):
    return os.path.join(T, name)


def close(a, b, rel=1e-12):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def expect_stats(name, arr, depth=None, extra=(), channels_last=True):
    """imgstat's record of file name against numpy over arr: (H, W) or
    (H, W, C) (channels_last), else (C, H, W)."""
    p = path(name)
    rc, out, err = run("--json", *extra, p)
    if rc != 0:
        fail(f"{name}: exit {rc}: {err.strip()}")
        return None
    rec = json.loads(out.splitlines()[0])
    a = np.asarray(arr)
    if a.ndim == 2:
        planes = [a]
    elif channels_last:
        planes = [a[:, :, c] for c in range(a.shape[2])]
    else:
        planes = [a[c] for c in range(a.shape[0])]
    h, w = planes[0].shape
    problems = []
    if (rec["width"], rec["height"], rec["channels"]) != (w, h, len(planes)):
        problems.append(
            f"size {rec['width']}x{rec['height']}x{rec['channels']}, want {w}x{h}x{len(planes)}")
    if depth is not None and rec["depth"] != depth:
        problems.append(f"depth {rec['depth']}, want {depth}")
    for c, (st, pl) in enumerate(zip(rec["stats"], planes)):
        if np.issubdtype(pl.dtype, np.integer) and rec["depth"] != 32:
            v = pl.astype(np.int64)
            exact = {"sum": int(v.sum()), "sum_sq": int((v * v).sum()),
                     "min": int(v.min()), "max": int(v.max()),
                     "count": int(v.size)}
            for k, want in exact.items():
                if st[k] != want:
                    problems.append(f"channel {c} {k} {st[k]}, want {want}")
            fin = v.astype(np.float64)
        else:
            fin = pl.astype(np.float64)
            nan = int(np.isnan(fin).sum())
            inf = int(np.isinf(fin).sum())
            if st.get("nan_count", 0) != nan or st.get("inf_count", 0) != inf:
                problems.append(f"channel {c} nan/inf {st.get('nan_count')}/"
                                f"{st.get('inf_count')}, want {nan}/{inf}")
            fin = fin[np.isfinite(fin)]
            if st["count"] != fin.size:
                problems.append(f"channel {c} count {st['count']}, want {fin.size}")
            if fin.size and (st["min"] != fin.min() or st["max"] != fin.max()):
                problems.append(f"channel {c} min/max {st['min']}/{st['max']}, "
                                f"want {fin.min()}/{fin.max()}")
            if fin.size and not close(st["sum"], fin.sum(), 1e-12 * max(1, fin.size)):
                problems.append(f"channel {c} sum {st['sum']}, want {fin.sum()}")
        if fin.size:
            mean = fin.mean()
            std = np.sqrt(((fin - mean) ** 2).mean())
            if not close(st["mean"], mean) and abs(st["mean"] - mean) > 1e-12:
                problems.append(f"channel {c} mean {st['mean']}, want {mean}")
            if not close(st["std"], std) and abs(st["std"] - std) > 1e-12:
                problems.append(f"channel {c} std {st['std']}, want {std}")
    if problems:
        fail(f"{name}: " + "; ".join(problems))
    else:
        ok(f"{name} matches numpy")
    return rec


def expect_refused(name, words):
    """imgstat refuses file name with a message naming it and saying words."""
    p = path(name)
    rc, out, err = run("--json", p)
    if rc != 0 and p in err and words in err:
        ok(f"{name} refused: {err.strip().split(': ', 1)[-1][:90]}")
    else:
        fail(f"{name}: exit {rc}, stderr {err.strip()!r}, want '{words}'")


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


def truncations(name, data, words, cuts=(0.5, 0.9)):
    for frac in cuts:
        n = int(len(data) * frac)
        write(f"cut{n}-{name}", data[:n])
        expect_refused(f"cut{n}-{name}", words)



def finish():
    """The summary line and the exit status."""
    print(f"{checks - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)
