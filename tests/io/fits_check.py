"""FITS hardening against numpy.

- Tile-compressed images written by cfitsio (fits_tiled, tests/io/fits_tiled.c)
  from numpy's pixels: RICE_1, GZIP_1, GZIP_2, PLIO_1, lossless and quantized
  floats; imgstat's record against numpy over those pixels (quantized floats:
  within the quantization step). HCOMPRESS_1 is refused by name.
- The same files with one compression card or tile descriptor broken (the
  crashes cfitsio had: ZTILE1 = 0, block size 0, ZBITPIX inconsistent,
  BYTEPIX 8, ...): each refused, exit 1, and the good input after it still
  printed.
- BITPIX 64 and scaled BITPIX 32 samples: exact ones against numpy, inexact
  ones refused naming the first, written exactly (Python's integers).

usage: fits_check.py IMGSTAT FITS_TILED GOOD_PNG TMPDIR"""
import json
import os
import subprocess
import sys

import numpy as np

IMGSTAT, TILED, GOOD, T = sys.argv[1:5]
checks = failures = 0


def report(good, what):
    global checks, failures
    checks += 1
    failures += not good
    print("ok:" if good else "FAIL:", what)


def path(name):
    return os.path.join(T, name)


def imgstat(*args):
    r = subprocess.run([IMGSTAT, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def card(key, value):
    return f"{key:<8}= {value:>20}".ljust(80).encode()


def primary(a, cards=()):
    """An uncompressed primary HDU of a (numpy, big-endian as stored)."""
    bitpix = {"i2": 16, "i4": 32, "i8": 64, "u1": 8}[a.dtype.str[1:]]
    head = [card("SIMPLE", "T"), card("BITPIX", str(bitpix)),
            card("NAXIS", "2"), card("NAXIS1", str(a.shape[1])),
            card("NAXIS2", str(a.shape[0]))]
    head += [card(k, v) for k, v in cards] + [b"END".ljust(80)]
    h = b"".join(head)
    h += b" " * (-len(h) % 2880)
    d = a.astype(a.dtype.newbyteorder(">")).tobytes()
    return h + d + b"\0" * (-len(d) % 2880)


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


def tiled(name, a, algo, tile=(4, 3), qlevel=None):
    """a written by cfitsio, tile-compressed; its bytes."""
    bitpix = {"u1": 8, "i2": 16, "i4": 32, "f4": -32, "f8": -64}[a.dtype.str[1:]]
    raw = path(name + ".raw")
    a.astype(a.dtype.newbyteorder("=")).tofile(raw)
    args = [TILED, path(name), algo, str(bitpix), str(a.shape[1]),
            str(a.shape[0]), str(tile[0]), str(tile[1]), raw]
    if qlevel is not None:
        args.append(str(qlevel))
    r = subprocess.run(args, capture_output=True, text=True)
    os.remove(raw)
    if r.returncode != 0:
        report(False, f"{name}: fits_tiled: {r.stderr.strip()}")
        return None
    with open(path(name), "rb") as f:
        return f.read()


def record(name):
    rc, out, err = imgstat("--json", path(name))
    if rc != 0:
        report(False, f"{name}: exit {rc}: {err.strip()}")
        return None
    return json.loads(out.splitlines()[0])


def expect(name, ref, depth, tol=0.0):
    """imgstat's record of name against numpy over ref (H, W): exact for
    integer depths, within tol for floats."""
    rec = record(name)
    if rec is None:
        return
    st = rec["stats"][0]
    h, w = ref.shape
    bad = []
    if (rec["width"], rec["height"], rec["depth"]) != (w, h, depth):
        bad.append(f"{rec['width']}x{rec['height']} depth {rec['depth']}, "
                   f"want {w}x{h} depth {depth}")
    if depth != 32:
        v = ref.astype(np.int64)
        want = {"min": int(v.min()), "max": int(v.max()), "sum": int(v.sum()),
                "sum_sq": int((v * v).sum())}
    else:
        f = ref.astype(np.float64)
        nan = int(np.isnan(f).sum())
        if st.get("nan_count", 0) != nan:
            bad.append(f"nan_count {st.get('nan_count', 0)}, want {nan}")
        f = f[~np.isnan(f)]
        want = {"min": f.min(), "max": f.max(), "mean": f.mean()}
    for k, v in want.items():
        # A float mean follows imgstat's canonical order (docs/float-order.md),
        # numpy's its pairwise sum: the two may round a few ulps apart, of
        # |mean| + std (the shifted sums' scale).
        scale = max(1.0, abs(v))
        if k == "mean" and depth == 32:
            scale = max(1.0, abs(v) + float(f.std()))
        t = max(tol, 1e-14) if k == "mean" else tol
        if abs(st[k] - v) > t * scale:
            bad.append(f"{k} {st[k]}, want {v}")
    report(not bad, f"{name} against numpy" + (": " + "; ".join(bad) if bad else ""))


def expect_refused(name, words):
    """name refused with words, exit 1, naming it; GOOD after it printed."""
    rc, out, err = imgstat("--json", path(name), GOOD)
    recs = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    good = rc == 1 and path(name) in err and words in err and \
        any(r.get("path", r.get("file", "")) == GOOD for r in recs)
    report(good, f"{name} refused ({err.strip().splitlines()[0][:110] if err.strip() else ''})"
           if good else f"{name}: exit {rc}, {len(recs)} records, stderr {err.strip()!r}, want {words!r}")


rng = np.random.default_rng(24)

# ---- tile-compressed images, each algorithm, against numpy ---------------
u8 = rng.integers(0, 256, (12, 16)).astype("u1")
i16 = rng.integers(-3000, 3000, (12, 16)).astype("i2")
i32 = rng.integers(-2**23, 2**23, (12, 16)).astype("i4")
plio = rng.integers(0, 4000, (12, 16)).astype("i4")  # cfitsio 4.2's PLIO writer breaks on larger values
f32 = (rng.standard_normal((12, 16)) * 100).astype("f4")
f32[3, 5] = np.nan
f64 = (rng.integers(-2**20, 2**20, (12, 16)) / 8.0).astype("f8")
good = {}
for algo in ("RICE_1", "GZIP_1", "GZIP_2"):
    for name, a, depth in (("u8", u8, 8), ("i16", i16, 32), ("i32", i32, 32)):
        n = f"{algo.lower()}-{name}.fits"
        good[n] = tiled(n, a, algo)
        if good[n]:
            expect(n, a, depth)
for algo in ("GZIP_1", "GZIP_2"):
    for name, a in (("f32", f32), ("f64", f64)):
        n = f"{algo.lower()}-{name}.fits"
        if tiled(n, a, algo):
            expect(n, a, 32)
if tiled("plio-i32.fits", plio, "PLIO_1", tile=(16, 1)):
    expect("plio-i32.fits", plio, 32)
# quantized floats (lossy, dithered at random): within a quantization step
q = (rng.standard_normal((12, 16)) * 100).astype("f4")
good["rice-f32q.fits"] = tiled("rice-f32q.fits", q, "RICE_1", qlevel=-0.01)
if good["rice-f32q.fits"]:  # steps of 0.01
    expect("rice-f32q.fits", q, 32, tol=0.01)
# rows as tiles (cfitsio's default shape)
if tiled("rice-rows.fits", i16, "RICE_1", tile=(16, 1)):
    expect("rice-rows.fits", i16, 32)
if tiled("hcompress.fits", i16, "HCOMPRESS_1", tile=(16, 12)):
    expect_refused("hcompress.fits", "HCOMPRESS_1")


# ---- one card or descriptor broken: refused, the next input printed ------
def broken(src, name, old, new, words):
    data = good.get(src)
    if not data:
        return
    old = old.encode() if isinstance(old, str) else old
    new = new.encode() if isinstance(new, str) else new
    i = data.find(old, 2880)
    if i < 0:
        report(False, f"{name}: {old!r} not in {src}")
        return
    write(name, data[:i] + new.ljust(len(old)) + data[i + len(old):])
    expect_refused(name, words)


def patched(src, key, value):
    """The card key of src's compressed HDU, given value."""
    data = good[src]
    i = data.find(f"{key:<8}=".encode(), 2880)
    return data[i:i + 80], card(key, value)


R = "rice_1-i16.fits"
for name, key, value, words in (
        ("ztile0.fits", "ZTILE1", "0", "ZTILE1"),
        ("ztile-big.fits", "ZTILE1", "17", "ZTILE1 = 17"),
        ("blocksize0.fits", "ZVAL1", "0", "ZVAL1"),
        ("bytepix8.fits", "ZVAL2", "8", "ZVAL2"),
        ("zbitpix-64.fits", "ZBITPIX", "-64", "without ZSCALE and ZZERO"),
        ("zbitpix-9.fits", "ZBITPIX", "9", "ZBITPIX 9"),
        ("znaxis1.fits", "ZNAXIS1", "99999", "rows for"),
        ("naxis2.fits", "NAXIS2", "13", "rows for"),
        ("zcmptype.fits", "ZCMPTYPE", "'BZIP2_1'", "ZCMPTYPE"),
        ("zblank-long.fits", "ZBLANK",
         "-99333333333333333333333333333333333333333333333", "ZBLANK")):
    if good.get(R):
        old, new = patched(R, key, value) if key != "ZBLANK" else \
            (b"END".ljust(80), card("ZBLANK", value) + b"END".ljust(80))
        data = good[R]
        i = data.find(old, 2880)
        if key == "ZBLANK":
            # one more card: into the header's blank space
            blank = data.find(b" " * 80, i + 80)
            data = data[:i] + new + data[i + 80:blank] + data[blank + 80:]
            write(name, data)
        else:
            write(name, data[:i] + new + data[i + 80:])
        expect_refused(name, words)
# ZBITPIX -64 over GZIP 16-bit data (cfitsio read past its buffer)
if good.get("gzip_1-i16.fits"):
    old, new = patched("gzip_1-i16.fits", "ZBITPIX", "-64")
    d = good["gzip_1-i16.fits"]
    i = d.find(old, 2880)
    write("gzip-zbitpix-64.fits", d[:i] + new + d[i + 80:])
    expect_refused("gzip-zbitpix-64.fits", "does not inflate to its float pixels")
# quantized Rice tiles marked ZQUANTIZ 'NONE': cfitsio reads them as
# unquantized floats (with BYTEPIX 2, past its buffer)
if good.get("rice-f32q.fits"):
    old, new = patched("rice-f32q.fits", "ZQUANTIZ", "'NONE'")
    d = good["rice-f32q.fits"]
    i = d.find(old, 2880)
    write("rice-quantiz-none.fits", d[:i] + new + d[i + 80:])
    expect_refused("rice-quantiz-none.fits", "unquantized floats are GZIP's")
# a tile descriptor pointing past the heap
if good.get(R):
    d = bytearray(good[R])
    end = d.find(b"END".ljust(80), 2880)
    table = (end // 2880 + 1) * 2880
    d[table + 4:table + 8] = (10**9).to_bytes(4, "big")  # first tile's offset
    write("descriptor.fits", bytes(d))
    expect_refused("descriptor.fits", "outside the heap")

# ---- the long BLANK (53 digits; 0xFF bytes) ---------------------------------
a = np.arange(12, dtype="i2").reshape(3, 4)
write("blank-digits.fits", primary(a, [("BLANK", "-9" + "3" * 52)]))
expect_refused("blank-digits.fits", "card BLANK")
write("blank-ff.fits", primary(a, [("BLANK", "\xff" * 35)]).replace(
    "\xff".encode() * 35, b"\xff" * 35))
expect_refused("blank-ff.fits", "card BLANK")
write("bzero-text.fits", primary(a, [("BZERO", "'32768'")]))
expect_refused("bzero-text.fits", "card BZERO")

# ---- 64-bit and scaled integers: exact, or refused naming the first ------
exact = np.array([[2**60, 5, -2**40], [7, 2**62, -3]], dtype="i8")
write("i64.fits", primary(exact))
expect("i64.fits", exact.astype(np.float32), 32)
assert (exact.astype(np.float32).astype(np.int64) == exact).all()
inexact = exact.copy()
inexact[1, 1] = 2**60 + 1
write("i64-inexact.fits", primary(inexact))
expect_refused("i64-inexact.fits", f"sample {2**60 + 1} at (1, 1)")
# unsigned 64-bit (BZERO 2^63): 2^64 - 2^40 is a float, 2^63 + 1 is not
u = np.array([[2**63 - 2**40, -2**63]], dtype="i8")  # stored: value - 2^63
write("u64.fits", primary(u, [("BZERO", "9223372036854775808")]))
phys = np.array([[2**64 - 2**40, 0]], dtype=np.float64)
expect("u64.fits", phys.astype(np.float32), 32)
u[0, 1] = 1  # 2^63 + 1
write("u64-inexact.fits", primary(u, [("BZERO", "9223372036854775808")]))
expect_refused("u64-inexact.fits", f"sample {2**63 + 1} at (1, 0)")
# scaled BITPIX 32 whose values need more than 53 bits
s32 = np.array([[2**30 + 1, 3]], dtype="i4")
write("s32.fits", primary(s32, [("BSCALE", "8"), ("BZERO", "4294967296")]))
want = 4294967296 + 8 * (2**30 + 1)  # Python's exact integers
expect_refused("s32.fits", f"sample {want} at (0, 0)")
s32ok = np.array([[2**24, 3]], dtype="i4")
write("s32ok.fits", primary(s32ok, [("BSCALE", "0.5"), ("BZERO", "1D3")]))
expect("s32ok.fits", np.array([[1000 + 2**23, 1001.5]], np.float32), 32)

print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
