"""Tile-compressed FITS written by astropy (astropy.io.fits.CompImageHDU)
against astropy's own decoded pixels.

A matrix of files: every compression astropy writes (RICE_1, GZIP_1,
GZIP_2, PLIO_1, HCOMPRESS_1; NOCOMPRESS where astropy has it), the dtypes
uint8, int16, uint16, int32, uint32, float32 and float64 where the
compression takes them, floats quantized (the default level, a finer one,
SUBTRACTIVE_DITHER_1 and _2, NO_DITHER) and lossless (GZIP, quantize_level
0), tiles of odd shapes (cut at the image's edges), full-range and noisy
data and spikes (Rice codes with long runs of zero bits). imgstat's record
of each is compared with astropy's pixels as docs/formats.md reads them:
uint8 8-bit, uint16 (BZERO 32768) 16-bit, the rest 32-bit float when every
value is exactly one (count, min, max, sum, mean exact for integer data;
floats to the rounding of a float64 sum), else refused naming the first
value that is not. HCOMPRESS_1 is refused by name (docs/fuzzing.md).

Then files that other writers make and astropy's defaults do not: a 16-bit
image whose GZIP tiles hold 4-byte integers (m13_gzip.fits, made here from
int32 tiles by changing ZBITPIX), an 8-bit one whose tiles hold 2-byte
integers, and integer tiles of 8-byte values (doubles; refused).

usage: fits_astropy_check.py IMGSTAT TMPDIR"""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
from astropy.io import fits

IMGSTAT, T = sys.argv[1:3]
checks = failures = 0
warnings.simplefilter("ignore")  # astropy's notes on quantization


def report(good, what):
    global checks, failures
    checks += 1
    failures += not good
    if not good or os.environ.get("VERBOSE"):
        print("ok:" if good else "FAIL:", what)


def write(name, a, **kw):
    """a written by astropy as a tile-compressed HDU; its path, or None
    when astropy refuses the combination."""
    p = os.path.join(T, name)
    tile = kw.pop("tile", None)
    if tile is not None:
        try:  # numpy order since astropy 5.3; FITS order before
            fits.CompImageHDU(np.zeros((2, 2), "i2"), tile_shape=(1, 1))
            kw["tile_shape"] = tile
        except TypeError:
            kw["tile_size"] = tile[::-1]
    try:
        fits.HDUList([fits.PrimaryHDU(), fits.CompImageHDU(a, **kw)]) \
            .writeto(p, overwrite=True)
    except Exception as e:  # a combination astropy does not write
        if os.path.exists(p):
            os.remove(p)
        if os.environ.get("VERBOSE"):
            print(f"note: astropy does not write {name}: {e}")
        return None
    return p


def decoded(p):
    with fits.open(p) as h:
        return np.array(h[1].data)


def imgstat(p):
    r = subprocess.run([IMGSTAT, "--json", p], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def depth_of(ref):
    return {np.dtype("u1"): 8, np.dtype("u2"): 16}.get(ref.dtype, 32)


def expect(name, p, ref):
    """imgstat's record of p against ref (astropy's pixels)."""
    rc, out, err = imgstat(p)
    depth = depth_of(ref)
    f = ref.astype(np.float64)
    ok = ~np.isnan(f)
    if depth == 32:
        # (float64 holds every value of the types written here)
        exact = (f.astype(np.float32).astype(np.float64) == f) | ~ok
        if not exact.all():
            y, x = np.argwhere(~exact)[0]
            good = rc == 1 and f"at ({x}, {y})" in err and \
                "is not exactly a 32-bit float" in err and p in err
            report(good, f"{name}: refused at ({x}, {y})" if good else
                   f"{name}: exit {rc}, {err.strip()!r}, want the sample at "
                   f"({x}, {y}) refused")
            return
    if rc != 0:
        report(False, f"{name}: exit {rc}: {err.strip()}")
        return
    rec = json.loads(out.splitlines()[0])
    st = rec["stats"][0]
    h, w = ref.shape
    bad = []
    if (rec["width"], rec["height"], rec["depth"]) != (w, h, depth):
        bad.append(f"{rec['width']}x{rec['height']} depth {rec['depth']}, "
                   f"want {w}x{h} depth {depth}")
    v = f[ok]
    nan = int((~ok).sum())
    if st.get("nan_count", 0) != nan:
        bad.append(f"nan_count {st.get('nan_count', 0)}, want {nan}")
    if st["count"] != v.size:
        bad.append(f"count {st['count']}, want {v.size}")
    if depth != 32:
        # exact: Python's integers
        total = int(ref.astype(np.int64).sum())
        want = {"min": int(ref.min()), "max": int(ref.max()), "sum": total,
                "mean": total / ref.size}
        for k, x in want.items():
            if st[k] != x:
                bad.append(f"{k} {st[k]}, want {x}")
    else:
        # float samples (integers among them): min, max exact; sum and mean
        # as float64 from astropy's pixels, to the rounding of a sum
        # (imgstat adds shifted values in its own order, docs/float-order.md)
        want = {"min": v.min(), "max": v.max(), "sum": v.sum(),
                "mean": v.mean()}
        for k, x in want.items():
            scale = 0.0 if k in ("min", "max") else \
                1e-13 * float(np.abs(v).sum() if k == "sum" else
                              np.abs(v).mean())
            if abs(st[k] - x) > scale:
                bad.append(f"{k} {st[k]!r}, want {x!r}")
    report(not bad, f"{name} against astropy" +
           (": " + "; ".join(bad) if bad else ""))


def expect_refused(name, p, words):
    rc, out, err = imgstat(p)
    good = rc == 1 and p in err and words in err
    report(good, f"{name} refused" if good else
           f"{name}: exit {rc}, {err.strip()!r}, want {words!r}")


rng = np.random.default_rng(34)
H, W = 50, 37  # tiles of (7, 5) and (16, 37) are cut at the far edges


def data(dtype, kind):
    """Pixels of a dtype: 'full' its whole range (or floats spread over
    many binades), 'noise' gaussian about an offset, 'spikes' mostly
    constant with rare extremes (long runs of zero bits in Rice codes)."""
    d = np.dtype(dtype)
    if d.kind == "f":
        if kind == "full":
            a = rng.standard_normal((H, W)) * 10.0 ** rng.integers(-6, 7, (H, W))
        elif kind == "noise":
            a = 1000 + rng.standard_normal((H, W)) * 5
        else:
            a = np.full((H, W), 3.25)
            a[rng.random((H, W)) < 0.02] = 1e6
        a = a.astype(d)
        a[4, 6] = np.nan
        return a
    lo, hi = np.iinfo(d).min, np.iinfo(d).max
    if kind == "full":
        a = rng.integers(lo, hi, (H, W), endpoint=True)
        a.flat[:2] = [lo, hi]
    elif kind == "noise":
        a = np.clip(np.rint((lo + hi) / 2 + rng.standard_normal((H, W)) *
                            min(hi - lo, 2**20) / 50), lo, hi)
    else:
        a = np.full((H, W), lo + 3)
        s = rng.random((H, W)) < 0.02
        a[s] = hi - rng.integers(0, 4, s.sum())
    return a.astype(d)


def exact_f32(dtype, kind):
    """Integers of a 32-bit type that are floats (within 2^24), spread
    over its range: multiples of 256 (Rice's high-entropy blocks)."""
    a = data(dtype, kind).astype(np.int64)
    return (a // 256 * 256).astype(dtype)


algos = list(getattr(fits.hdu.compressed, "COMPRESSION_TYPES",
                     ("RICE_1", "GZIP_1", "GZIP_2", "PLIO_1", "HCOMPRESS_1")))
if "NOCOMPRESS" not in algos:
    print(f"note: astropy {fits.__name__} does not write NOCOMPRESS")
tiles = (None, (7, 5), (16, W), (H, W))
int_types = ("u1", "i2", "u2", "i4", "u4")

# ---- integers: every compression, dtype, data and tile shape -------------
for algo in algos:
    for dt in int_types:
        for kind in ("full", "noise", "spikes"):
            a = data(dt, kind)
            if algo == "PLIO_1":
                # PLIO holds 0 to 2^24 - 1; astropy 5.2's writer (cfitsio's
                # pl_p2li) overruns its buffer (a double free) on noisy
                # values of more than about 12 bits
                bits = min(8 * np.dtype(dt).itemsize - 1, 12)
                a = (a.astype(np.int64) % 2**bits).astype(dt)
            # rows (the default), odd tiles cut at both edges; whole-image
            # and many-row tiles for one kind
            for tile in tiles if kind == "full" else tiles[:2]:
                n = f"{algo}-{dt}-{kind}-{tile[0] if tile else 'row'}.fits"
                p = write(n, a, compression_type=algo, tile=tile)
                if p is None:
                    continue
                if algo == "HCOMPRESS_1":
                    expect_refused(n, p, "HCOMPRESS_1 tiles are not taken")
                else:
                    expect(n, p, decoded(p))
                os.remove(p)
        # integers of 32 bits that are floats
        for kind in ("full", "spikes"):
            if dt in ("i4", "u4") and algo != "PLIO_1":
                a = exact_f32(dt, kind)
                n = f"{algo}-{dt}-{kind}-exact.fits"
                p = write(n, a, compression_type=algo, tile=(7, 5))
                if p is not None:
                    if algo == "HCOMPRESS_1":
                        expect_refused(n, p, "HCOMPRESS_1")
                    else:
                        expect(n, p, decoded(p))
                    os.remove(p)

# ---- floats: quantized (each dither, two levels), and lossless GZIP ------
quant = [("default", {}),
         ("q4-dither1", dict(quantize_level=4.0, quantize_method=1)),
         ("q64-dither2", dict(quantize_level=64.0, quantize_method=2)),
         ("q16-nodither", dict(quantize_level=16.0, quantize_method=-1)),
         ("step-0.5", dict(quantize_level=-0.5)),
         ("lossless", dict(quantize_level=0.0))]
for algo in algos:
    for dt in ("f4", "f8"):
        for kind in ("full", "noise", "spikes"):
            a = data(dt, kind)
            if algo == "PLIO_1":
                continue  # below
            for i, (qname, q) in enumerate(quant):
                for tile in ((None, (7, 5))[i % 2],):
                    n = f"{algo}-{dt}-{kind}-{qname}-" \
                        f"{tile[0] if tile else 'row'}.fits"
                    p = write(n, a, compression_type=algo, tile=tile, **q)
                    if p is None:
                        continue
                    if algo == "HCOMPRESS_1":
                        expect_refused(n, p, "HCOMPRESS_1")
                    else:
                        expect(n, p, decoded(p))
                    os.remove(p)

# PLIO_1 floats (quantized): astropy 5.2's PLIO writer crashes on most
# (see above); one it writes
if "PLIO_1" in algos:
    a = (np.random.default_rng(1).random((20, 30)) * 100).astype("f4")
    p = write("PLIO_1-f4.fits", a, compression_type="PLIO_1")
    if p is not None:
        expect("PLIO_1-f4.fits", p, decoded(p))
        os.remove(p)


# ---- tiles other writers make: integers narrower or wider than ZBITPIX --
def patched(p, key, value):
    """p with the card key of its compressed HDU given value (None: the
    card made a COMMENT)."""
    with open(p, "rb") as f:
        b = f.read()
    i = b.find(f"{key:<8}=".encode(), 2880)
    assert i > 0, key
    card = f"{key:<8}= {value:>20}" if value is not None else "COMMENT"
    with open(p, "wb") as f:
        f.write(b[:i] + card.ljust(80).encode() + b[i + 80:])
    return p


i16 = rng.integers(-32768, 32768, (H, W)).astype("i4")
u8 = rng.integers(0, 256, (H, W)).astype("i2")
for algo in ("GZIP_1", "GZIP_2"):
    for tile in (None, (7, 5)):
        t = tile[0] if tile else "row"
        # m13_gzip.fits: a 16-bit image, its tiles 4-byte integers
        n = f"{algo}-zbitpix16-of-i32-{t}.fits"
        p = write(n, i16, compression_type=algo, tile=tile)
        expect(n, patched(p, "ZBITPIX", "16"), i16.astype("i2"))
        os.remove(p)
        # an 8-bit image of 2-byte integers
        n = f"{algo}-zbitpix8-of-i16-{t}.fits"
        p = write(n, u8, compression_type=algo, tile=tile)
        expect(n, patched(p, "ZBITPIX", "8"), u8.astype("u1"))
        os.remove(p)
        # integer tiles of 8-byte values: cfitsio leaves them unconverted
        n = f"{algo}-zbitpix32-of-f64-{t}.fits"
        p = write(n, i16.astype("f8"), compression_type=algo, tile=tile,
                  quantize_level=0.0)
        patched(p, "ZQUANTIZ", None)
        expect_refused(n, patched(p, "ZBITPIX", "32"),
                       "does not inflate to its integer pixels")
        os.remove(p)

print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
