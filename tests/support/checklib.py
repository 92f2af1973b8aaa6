"""What the Python checks of tests/ share (those run by tests/support/pycheck.sh
and the others): the count of checks and failures, the way they run imgstat and
read its JSON records, the images they write (PNG by pypng, GeoTIFF by GDAL)
and the figures they expect (numpy). Needs numpy; pypng and GDAL only where
used."""
import json
import os
import subprocess
import sys

import numpy as np

checks = failures = 0


def fail(msg):
    """One failed check, said as FAIL: msg."""
    global failures
    failures += 1
    print("FAIL: " + msg)


def check(ok, what):
    """One check, counted: a failure (FAIL: what) when not ok."""
    global checks
    checks += 1
    if not ok:
        fail(what)


def run(imgstat, *args):
    """imgstat ARGS: the completed process, its output as text."""
    return subprocess.run([imgstat] + list(args), capture_output=True,
                          text=True)


def json_records(imgstat, *args):
    """imgstat --json ARGS: the completed process and its records, one a
    line of its output."""
    r = run(imgstat, "--json", *args)
    return r, [json.loads(line) for line in r.stdout.splitlines() if line]


def finish(name):
    """Says how many checks failed (of how many, when counted by check) and
    exits accordingly."""
    if checks:
        print("%s: %d checks, %d failed" % (name, checks, failures))
    else:
        print("%s: %d failures" % (name, failures))
    sys.exit(1 if failures else 0)


# ---- writing images ---------------------------------------------------------

def new_path(tmp, *parts):
    """tmp/parts..., its folder made."""
    p = os.path.join(tmp, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def write_png(p, a, depth=8):
    """Writes a: (H, W) or (H, W, C) integers, as a PNG (pypng) of the given
    bit depth; returns p."""
    h = a.shape[0]
    mode = {2: "L", 3: ["L", "LA", "RGB", "RGBA"][a.shape[-1] - 1]
            if a.ndim == 3 else "L"}[a.ndim]
    if depth == 16:
        mode += ";16"
    import png
    png.from_array(a.reshape(h, -1).tolist(), mode).save(p)
    return p


def gdal_or_skip():
    """GDAL's Python module (exceptions on, no .aux.xml side files), or the
    check skipped (77) without it."""
    try:
        from osgeo import gdal
    except ImportError:
        print("skipped: no GDAL Python module (python3-gdal; "
              "sh tests/deps-debian.sh --tests installs it)")
        sys.exit(77)
    gdal.UseExceptions()
    gdal.SetConfigOption("GDAL_PAM_ENABLED", "NO")
    return gdal


def write_geotiff(p, bands, gdal_type, nodata=None, options=()):
    """Writes bands (2-D arrays, or a (bands, H, W) array) as a TIFF by GDAL
    with the creation options given and, when nodata is not None, that
    nodata value (GDAL_NODATA) on each band; returns p."""
    from osgeo import gdal
    h, w = bands[0].shape
    ds = gdal.GetDriverByName("GTiff").Create(p, w, h, len(bands), gdal_type,
                                              options=list(options))
    for i, a in enumerate(bands):
        band = ds.GetRasterBand(i + 1)
        band.WriteArray(a)
        if nodata is not None:
            band.SetNoDataValue(nodata)
        band = None
    ds = None
    return p


# ---- figures by numpy -------------------------------------------------------


def compare_bands(what, stats, want):
    """Each band's record (stats: the JSON record's "stats") against the
    expected figures (want: a dict a band); a band without a nodata_count
    counts 0. Fails once per differing figure, or once for a band count."""
    if len(stats) != len(want):
        fail("%s: %d bands, want %d" % (what, len(stats), len(want)))
        return
    for b, (st, e) in enumerate(zip(stats, want), 1):
        for k, v in e.items():
            got = st.get(k, 0 if k == "nodata_count" else None)
            if got != v:
                fail("%s band %d: %s %r, numpy %r" % (what, b, k, got, v))

def close(a, b, rel=1e-12):
    """a and b within rel of the larger."""
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def first_at(valid, a, target):
    """(x, y) of the first of a's valid samples (raster order) equal to
    target."""
    ys, xs = np.nonzero(valid & (a == target))
    k = np.lexsort((xs, ys))[0]
    return int(xs[k]), int(ys[k])


def first_extreme(valid, a, which):
    """(x, y) of the first minimum ("min") or maximum ("max") of a's valid
    samples."""
    vals = a[valid]
    return first_at(valid, a, vals.min() if which == "min" else vals.max())


def exact_figures(a, valid=None):
    """The exact integer figures of a 2-D integer plane over its valid
    samples (all without valid): count, sum, sum_sq and, when any, min, max
    and the positions of the first of each (min_x, min_y, max_x, max_y)."""
    if valid is None:
        valid = np.ones(a.shape, bool)
    v = a[valid].astype(np.int64)
    e = {"count": int(v.size), "sum": int(v.sum()),
         "sum_sq": int((v * v).sum())}
    if v.size:
        lo, hi = int(v.min()), int(v.max())
        (e["min_x"], e["min_y"]), (e["max_x"], e["max_y"]) = \
            first_at(valid, a, lo), first_at(valid, a, hi)
        e.update(min=lo, max=hi)
    return e


def rank_index(n, p):
    """The rank rule (docs/normalize.md): the p-th percentile of n values
    is the k-th smallest, k = ceil(p n / 100) with p to a millionth of a
    percent, at least 1."""
    pm = round(float(p) * 1e6)
    return max(1, -(-pm * n // 100000000))


def rank_percentile(sorted_values, p):
    """The p-th percentile of sorted_values by the rank rule."""
    return sorted_values[rank_index(len(sorted_values), p) - 1]


def rank_value(x, p):
    """The p-th percentile of x's finite values by the rank rule, as a
    float."""
    x = np.sort(x[np.isfinite(x)])
    return float(x[min(rank_index(len(x), p), len(x)) - 1])
