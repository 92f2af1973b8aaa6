"""The formats of issue 13 against numpy: each file written by a second,
independent writer (numpy.save for .npy, PIL for TIFF and WebP, headers
written here for PFM, plain PNM, FITS and the TIFF layouts PIL cannot
write), imgstat's --json record compared with numpy over the pixels the
writer was given: exact sums for integer data, float figures within 1e-12
relative. Damaged files must be refused with a message naming the file.

usage: formats_check.py IMGSTAT TMPDIR
Formats the build lacks (imgstat --version) are skipped, said so."""
import io
import json
import os
import struct
import subprocess
import sys
import zlib

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
        write(f"cut{int(frac * 100)}-{name}", data[:n])
        expect_refused(f"cut{int(frac * 100)}-{name}", words)


rng = np.random.default_rng(13)
rc, version, _ = run("--version")
print(version.strip())

# ---- .npy: numpy.save is the writer -------------------------------------
for dt in ["u1", "<u2", ">u2", "<i2", "<i4", "<f4", ">f4", "|i1", "|b1"]:
    for shape in [(7, 9), (6, 5, 3), (4, 8, 4), (3, 6, 7)]:
        a = rng.integers(-200, 60000, shape)
        if dt in ("u1",):
            a = a % 256
        elif dt.endswith("i1"):
            a = a % 256 - 128
        elif dt.endswith("b1"):
            a = a % 2
        elif dt.endswith("i2"):
            a = a - 30000
        elif dt.endswith("f4"):
            a = rng.standard_normal(shape) * 1000
        a = a.astype(dt)
        name = f"a-{dt.replace('<', 'le').replace('>', 'be').replace('|', '')}-{'x'.join(map(str, shape))}.npy"
        np.save(path(name), a)
        # (3, 6, 7): channels first; the others channels last
        chw = shape == (3, 6, 7)
        ref = a.astype(np.float32) if dt[-2:] in ("i1", "i2", "i4") else a
        if dt.endswith("b1"):
            ref = a.astype(np.uint8)
        depth = 8 if dt[-2:] in ("u1", "b1") else 16 if dt[-2:] == "u2" else 32
        expect_stats(name, ref, depth, channels_last=not chw)
# float64 and int32 whose values are floats exactly; others refused
f = (rng.integers(-2**20, 2**20, (5, 6, 3)) / 64.0).astype("<f8")
f[0, 0, 0] = np.nan
f[1, 1, 1] = np.inf
np.save(path("f8-exact.npy"), f)
expect_stats("f8-exact.npy", f.astype(np.float32), 32)
np.save(path("f8-round.npy"), np.full((3, 3), 0.1))
expect_refused("f8-round.npy", "not exactly a 32-bit float")
np.save(path("i4-big.npy"), np.array([[1, 2**24 + 1]], dtype="<i4"))
expect_refused("i4-big.npy", "not exactly a 32-bit float")
np.save(path("i8.npy"), np.zeros((3, 3), dtype="<i8"))
expect_refused("i8.npy", "not supported")
np.save(path("fortran.npy"), np.asfortranarray(np.zeros((3, 4), "u1")))
expect_refused("fortran.npy", "Fortran")
np.save(path("shape4.npy"), np.zeros((2, 3, 4, 5), "u1"))
expect_refused("shape4.npy", "no image")
np.save(path("shape5.npy"), np.zeros((5, 6, 7), "u1"))
expect_refused("shape5.npy", "no image")
buf = io.BytesIO()
np.save(buf, rng.integers(0, 255, (40, 50, 3)).astype("u1"))
truncations("a.npy", buf.getvalue(), "Corrupt NPY data")
bad = buf.getvalue().replace(b"'shape'", b"'shapo'")
write("dict.npy", bad)
expect_refused("dict.npy", "Corrupt NPY data")

# ---- PFM: the header written here ----------------------------------------
for ch, magic in ((3, b"PF"), (1, b"Pf")):
    for order in ("<", ">"):
        a = (rng.standard_normal((5, 8, ch)) * 100).astype(order + "f4")
        a[2, 3, 0] = np.nan
        a[4, 1, 0] = -np.inf
        scale = b"-1.0" if order == "<" else b"1.0"
        # rows bottom to top
        data = magic + b"\n8 5\n" + scale + b"\n" + a[::-1].tobytes()
        name = f"f{ch}{'le' if order == '<' else 'be'}.pfm"
        write(name, data)
        expect_stats(name, a if ch == 3 else a[:, :, 0], 32)
truncations("f.pfm", data, "Corrupt PFM data")
write("scale0.pfm", b"Pf\n2 2\n0\n" + bytes(16))
expect_refused("scale0.pfm", "Corrupt PFM data")

# ---- plain PNM and P4: the text written here ------------------------------
def pnm_plain(magic, a, maxval):
    h, w = a.shape[:2]
    head = f"{magic}\n# written by formats_check.py\n{w} {h}\n"
    if maxval:
        head += f"{maxval}\n"
    vals = a.reshape(h, -1)
    sep = "" if magic == "P1" and h % 2 else " "
    return (head + "\n".join(sep.join(str(int(v)) for v in row)
                             for row in vals) + "\n").encode()


for magic, maxval, shape in (("P2", 255, (6, 7)), ("P2", 1000, (5, 4)),
                             ("P2", 65535, (3, 9)), ("P2", 7, (4, 4)),
                             ("P3", 255, (5, 6, 3)), ("P3", 4095, (4, 3, 3)),
                             ("P1", 0, (5, 11)), ("P1", 0, (4, 3))):
    a = rng.integers(0, (maxval or 1) + 1, shape)
    name = f"{magic}-{maxval}-{shape[0]}.pnm"
    write(name, pnm_plain(magic, a, maxval))
    expect_stats(name, a.astype(np.uint16 if maxval > 255 else np.uint8),
                 16 if maxval > 255 else 8)
bits = rng.integers(0, 2, (6, 13))
rows = b"".join(np.packbits(r).tobytes() for r in bits.astype(np.uint8))
write("p4.pbm", b"P4\n13 6\n" + rows)
expect_stats("p4.pbm", bits.astype(np.uint8), 8)
truncations("p4.pbm", b"P4\n13 6\n" + rows, "Corrupt PNM data", (0.8,))
plain = pnm_plain("P3", rng.integers(0, 256, (20, 20, 3)), 255)
truncations("p3.ppm", plain, "Corrupt PNM data")
write("over.pgm", b"P2 2 2 100 1 2 3 101\n")
expect_refused("over.pgm", "Corrupt PNM data")
write("junk.pgm", b"P2 2 2 100 1 2 x 3\n")
expect_refused("junk.pgm", "Corrupt PNM data")

# ---- normalize -> .npy / .pfm -> imgstat: mean 0, std 1 -------------------
src = rng.integers(0, 65536, (32, 48, 3)).astype(np.uint16)
np.save(path("src.npy"), src)
for out, extra in (("z.npy", ()), ("z-chw.npy", ("--layout", "chw")),
                   ("z.pfm", ())):
    rc, _, err = run("normalize", "zscore", *extra, path("src.npy"), "-o",
                     path(out))
    if rc != 0:
        fail(f"normalize -> {out}: exit {rc}: {err.strip()}")
        continue
    rc, o, err = run("--json", path(out))
    if rc != 0:
        fail(f"{out}: exit {rc}: {err.strip()}")
        continue
    rec = json.loads(o)
    good = rec["channels"] == 3 and rec["width"] == 48 and all(
        abs(s["mean"]) < 1e-6 and abs(s["std"] - 1) < 1e-6 for s in rec["stats"])
    (ok if good else fail)(f"normalize zscore -> {out} -> imgstat: mean 0, std 1"
                           + ("" if good else f": {o}"))

print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
