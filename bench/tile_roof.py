#!/usr/bin/env python3
"""imgstat on a multi-band uint16 GeoTIFF with nodata against the memory
roof of reading its samples once (a Sentinel-2 tile's shape by default: 13
bands of 10980 x 10980), whole process, numpy only (no GDAL, no tifffile:
for the GPU host).

  python3 bench/tile_roof.py IMGSTAT [--size N] [--bands B] [--runs R]
                             [--threads T] [--roof READ_ROOF] [--dir DIR]
                             [--keep] [--no-gpu] [--decoded]
                             [--other IMGSTAT2] [--env 'NAME=V ...']...

1. Writes the file itself: a BigTIFF, tiled 512 x 512, pixel-interleaved,
   uncompressed, the tiles stored one after the other in tile order (edge
   tiles padded), with the GDAL_NODATA tag (42113, "0"); samples are
   smooth fields with noise and a slanted nodata border (0), as
   bench/gdal_bands.py's. Before that, a small file of the same kind (odd
   size, partial edge tiles) is written and read by imgstat, and every
   band's count, nodata_count, min, max, their first raster positions, sum
   and sum of squares must equal numpy's over the same samples (asserted:
   FAIL and exit 1 otherwise).
2. The roofs: build/bench/read_roof (bench/read_roof.c) reads the tiles'
   bytes (one range: they follow each other) on T threads (default: the
   cores) after a warm-up pass, each byte summed, median of R passes: with
   pread in tile-sized pieces; the same in 256 KiB pieces; and the file
   mapped in each pass, the tile-sized pieces summed where they lie (page
   faults, mmap and munmap inside the pass). "The roof", the ratios'
   denominator, is the lowest of the three. Beside them: the fastest roof's
   whole process (one pass, warm page cache, the process timed from
   outside: its start and exit too), and imgstat's whole process on a 16 x
   16 file of the same kind (the start-up floor), so that the gap between
   in-process and whole-process figures shows.
3. `imgstat --json --backend cpu` (and `--backend gpu` when nvidia-smi
   lists a GPU, unless --no-gpu; with --decoded also the CPU run with
   IMGSTAT_TIFF_STREAM=0, the image decoded whole): median wall time of R runs after a
   warm-up, peak resident memory of one more run (getrusage of a child of
   its own), and imgstat / roof. --other IMGSTAT2: another build's
   `--backend cpu` run beside it (A/B of two builds in one run), the two
   builds' runs taking turns. --env 'NAME=V [NAME2=V2]' (repeatable): a
   row of this build's `--backend cpu` run under those variables (e.g.
   IMGSTAT_TIFF_MMAP=0, the pread path); this build's run, --other's and
   the --env rows take turns, each row the median of its R runs.

The file is removed at the end unless --keep (or --dir names a folder that
holds it already: then it is reused).
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

TILE = 512


def field_rows(y0, h, width, height, bands):
    """Rows y0 .. y0 + h - 1 of the image: (h, width, bands) uint16,
    deterministic for a given y0 (the generator is seeded by it)."""
    rng = np.random.default_rng(1000 + y0)
    yy = ((np.arange(h, dtype=np.float32) + y0) / height)[:, None]
    xx = (np.arange(width, dtype=np.float32) / width)[None, :]
    edge = xx < 0.08 + 0.1 * yy  # nodata: a slanted border
    out = np.empty((h, width, bands), np.uint16)
    cy = np.cos(4 * yy)
    for b in range(bands):
        base = (800 + 400 * (b + 1)) + 1500 * np.sin(6 * xx + (b + 1)) * cy
        noise = rng.integers(0, 240, (h, width), dtype=np.uint16)
        a = np.clip(base - 120 + noise, 1, 65535).astype(np.uint16)
        a[edge] = 0
        out[:, :, b] = a
    return out


def write_tiff(path, width, height, bands):
    """The BigTIFF described above; returns (offset, length, tile bytes) of
    the tiles' bytes."""
    across = (width + TILE - 1) // TILE
    down = (height + TILE - 1) // TILE
    ntiles = across * down
    tile_bytes = TILE * TILE * bands * 2
    # tag, type, values (type 3 SHORT, 4 LONG, 16 LONG8, 2 ASCII)
    shorts = lambda v: (3, v)
    entries = [
        (256, 4, [width]), (257, 4, [height]),
        (258,) + shorts([16] * bands), (259,) + shorts([1]),
        (262,) + shorts([1]), (277,) + shorts([bands]),
        (284,) + shorts([1]), (322, 4, [TILE]), (323, 4, [TILE]),
        (324, 16, None), (325, 16, [tile_bytes] * ntiles),
    ]
    if bands > 1:
        entries.append((338,) + shorts([0] * (bands - 1)))
    entries.append((339,) + shorts([1] * bands))
    entries.append((42113, 2, b"0\0"))
    size = {2: 1, 3: 2, 4: 4, 16: 8}
    fmt = {3: "H", 4: "I", 16: "Q"}
    ifd_at = 16
    ifd_len = 8 + 20 * len(entries) + 8
    extra_at = ifd_at + ifd_len
    # out-of-line values after the IFD; the tiles from a 4 KiB boundary
    blobs, at = [], extra_at
    layout = []
    for tag, typ, vals in entries:
        count = len(vals) if vals is not None else ntiles
        nbytes = count * size[typ]
        inline = nbytes <= 8
        layout.append((tag, typ, vals, count, nbytes, inline, at))
        if not inline:
            at += nbytes + (nbytes & 1)
    data_at = (at + 4095) // 4096 * 4096
    offsets = [data_at + k * tile_bytes for k in range(ntiles)]
    ifd = struct.pack("<Q", len(entries))
    for tag, typ, vals, count, nbytes, inline, vat in layout:
        if vals is None:
            vals = offsets
        raw = vals if typ == 2 else struct.pack("<%d%s" % (count, fmt[typ]),
                                                *vals)
        if inline:
            ifd += struct.pack("<HHQ", tag, typ, count) + raw.ljust(8, b"\0")
        else:
            ifd += struct.pack("<HHQQ", tag, typ, count, vat)
            blobs.append(raw + (b"\0" if nbytes & 1 else b""))
    ifd += struct.pack("<Q", 0)
    head = b"II" + struct.pack("<HHHQ", 43, 8, 0, ifd_at) + ifd + b"".join(
        blobs)
    with open(path, "wb") as f:
        f.write(head.ljust(data_at, b"\0"))
        for ty in range(down):
            y0 = ty * TILE
            h = min(TILE, height - y0)
            rows = np.zeros((TILE, across * TILE, bands), np.uint16)
            rows[:h, :width] = field_rows(y0, h, width, height, bands)
            # (TILE, across, TILE, bands) -> tiles in order
            f.write(rows.reshape(TILE, across, TILE, bands)
                    .transpose(1, 0, 2, 3).tobytes())
    return data_at, ntiles * tile_bytes, tile_bytes


def run(cmd, env=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")


def check_small(imgstat, d, bands):
    """The small file's figures against numpy's (asserted)."""
    w, h = 1337, 1029  # partial edge tiles both ways
    path = os.path.join(d, "small.tif")
    write_tiff(path, w, h, bands)
    a = np.concatenate([field_rows(y0, min(TILE, h - y0), w, h, bands)
                        for y0 in range(0, h, TILE)])
    bad = 0
    for backend in ("cpu",):
        rc, out, err = run([imgstat, "--json", "--backend", backend, path])
        if rc != 0:
            sys.exit("FAIL: imgstat %s: exit %d: %s" % (path, rc, err[-400:]))
        stats = json.loads(out)["stats"]
        assert len(stats) == bands, "FAIL: %d bands, want %d" % (len(stats),
                                                                  bands)
        for b, st in enumerate(stats):
            flat = a[:, :, b].reshape(-1).astype(np.int64)
            ok = flat != 0
            v = flat[ok]
            idx = np.nonzero(ok)[0]
            lo, hi = int(idx[np.argmin(v)]), int(idx[np.argmax(v)])
            want = {"count": int(v.size), "nodata_count": int((~ok).sum()),
                    "min": int(v.min()), "max": int(v.max()),
                    "min_x": lo % w, "min_y": lo // w, "max_x": hi % w,
                    "max_y": hi // w, "sum": int(v.sum()),
                    "sum_sq": int((v * v).sum())}
            for k, e in want.items():
                if st.get(k) != e:
                    bad += 1
                    print("FAIL band %d: %s %r, numpy %r" %
                          (b + 1, k, st.get(k), e))
    os.remove(path)
    if bad:
        sys.exit(1)
    print("figures: %d bands of a %dx%d file, all equal numpy's" %
          (bands, w, h))


def peak_of(cmd, env=None):
    """Peak resident MiB of cmd, in a child of its own."""
    probe = ("import resource,subprocess,sys;"
             "subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,"
             "stderr=subprocess.DEVNULL,check=True);"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", probe] + cmd,
                       capture_output=True, text=True, check=True, env=env)
    return int(r.stdout) / 1024.0


def timed_median(cmd, runs, env=None):
    rc, _, err = run(cmd, env)  # warm-up
    if rc != 0:
        return None, err
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        rc, _, err = run(cmd, env)
        times.append(time.perf_counter() - t)
        if rc != 0:
            return None, err
    return float(np.median(times)), ""


def has_gpu():
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                           text=True)
        return r.returncode == 0 and "GPU" in r.stdout
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("imgstat")
    ap.add_argument("--size", type=int, default=10980)
    ap.add_argument("--bands", type=int, default=13)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--roof", default=None,
                    help="read_roof (default: bench/read_roof beside IMGSTAT)")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--decoded", action="store_true",
                    help="also IMGSTAT_TIFF_STREAM=0 (the image decoded "
                    "whole, then reduced)")
    ap.add_argument("--other", default=None,
                    help="another build's imgstat, its --backend cpu run "
                    "beside (A/B)")
    ap.add_argument("--env", action="append", default=[],
                    help="'NAME=V [NAME2=V2]': a row of this build's "
                    "--backend cpu run under these variables, the rows' "
                    "runs taking turns (repeatable)")
    a = ap.parse_args()
    imgstat = os.path.abspath(a.imgstat)
    roof = a.roof or os.path.join(os.path.dirname(imgstat), "bench",
                                  "read_roof")
    if not os.access(roof, os.X_OK):
        sys.exit("FAIL: no %s (cmake --build BUILD --target read_roof)" % roof)
    made = a.dir is None
    if a.dir:
        os.makedirs(a.dir, exist_ok=True)
    d = a.dir or tempfile.mkdtemp(prefix="imgstat_tile_roof.")
    check_small(imgstat, d, a.bands)
    path = os.path.join(d, "roof_%d_%dx%d.tif" % (a.bands, a.size, a.size))
    t = time.perf_counter()
    off, length, tile = write_tiff(path, a.size, a.size, a.bands)
    print("wrote %s (%.2f GB, tiles from byte %d) in %.0f s" %
          (path, os.path.getsize(path) / 1e9, off, time.perf_counter() - t))
    samples = a.size * a.size * a.bands * 2
    image_mib = samples / 2**20
    def roof_run(piece, mode, runs):
        cmd = [roof, path, str(off), str(length), str(piece), str(a.threads),
               str(runs), mode]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("FAIL: read_roof: %s" % r.stderr)
        f = dict(zip(r.stdout.split()[0::2], r.stdout.split()[1::2]))
        return float(f["median_s"]), r.stdout.strip(), cmd

    # the roofs: pread in tile-sized pieces; the same in pieces a core's
    # cache holds (256 KiB, as imgstat read an uncompressed tile's rows:
    # the buffer written by the copy is read back from the cache); the file
    # mapped and summed where it lies (no copy; the page faults, the
    # mapping and its teardown inside each pass). "The roof" is the lowest.
    roofs = []
    for piece, mode, what in (
            (tile, "pread", "pread of tile-sized pieces + a byte sum"),
            (256 << 10, "pread", "pread of 256 KiB pieces"),
            (tile, "mmap", "the file mapped, tile-sized pieces summed")):
        sec, line, cmd = roof_run(piece, mode, a.runs)
        print("roof, %s: %s" % (what, line))
        roofs.append(("read_roof (%d threads, %s)" % (a.threads, what), sec,
                      None, cmd))
    roof_s = min(sec for _, sec, _, _ in roofs)
    rows = [r[:3] for r in roofs]
    # the fastest roof's whole process (one pass, no warm-up inside: the
    # page cache is warm), beside its in-process figure: the start, the
    # threads, the exit
    best = min(roofs, key=lambda r: r[1])
    med, err = timed_median(best[3][:6] + ["0"] + best[3][7:], a.runs)
    if med is None:
        sys.exit("FAIL: read_roof: %s" % err)
    rows.append(("read_roof whole process, one pass (%s)" % best[3][7], med,
                 None))
    # imgstat's floor: its whole process on a tiny file of the same kind
    tiny = os.path.join(d, "tiny.tif")
    write_tiff(tiny, 16, 16, a.bands)
    med, err = timed_median([imgstat, "--json", "--backend", "cpu", tiny],
                            a.runs)
    os.remove(tiny)
    if med is None:
        sys.exit("FAIL: imgstat %s: %s" % (tiny, err[-300:]))
    rows.append(("imgstat --json --backend cpu, a 16 x 16 file (start-up "
                 "floor)", med, None, "tiny"))
    backends = [("cpu", None)]
    if a.decoded:
        backends.append(("cpu", "0"))
    if not a.no_gpu and has_gpu():
        backends.append(("gpu", None))
        backends.append(("auto", None))
    if a.other or a.env:
        # this build's CPU run, --other's and each --env variant's take
        # turns, so that the machine's mood falls on all alike
        cpu = [imgstat, "--json", "--backend", "cpu", path]
        turns = [("this imgstat --json --backend cpu", cpu, None)]
        if a.other:
            turns.append(("--other imgstat --json --backend cpu",
                          [os.path.abspath(a.other)] + cpu[1:], None))
        for e in a.env:
            env = dict(os.environ)
            for kv in e.split():
                name, _, val = kv.partition("=")
                env[name] = val
            turns.append(("%s imgstat --json --backend cpu" % e, cpu, env))
        times = [[] for _ in turns]
        for k in range(a.runs + 1):
            for i, (_, cmd, env) in enumerate(turns):
                t = time.perf_counter()
                rc, _, err = run(cmd, env)
                if rc != 0:
                    sys.exit("FAIL: %s: %s" % (turns[i][0], err[-300:]))
                if k:  # the first turn warms up
                    times[i].append(time.perf_counter() - t)
        for i, (name, cmd, env) in enumerate(turns):
            rows.append(("%s (taking turns)" % name,
                         float(np.median(times[i])), peak_of(cmd, env)))
        backends = backends[1:]  # this build's CPU row is among the turns
    for be, stream in backends:
        cmd = [imgstat, "--json", "--backend", be, path]
        env = None if stream is None else dict(os.environ,
                                                IMGSTAT_TIFF_STREAM=stream)
        med, err = timed_median(cmd, a.runs, env)
        if med is None:
            print("imgstat --backend %s failed: %s" % (be, err[-300:]))
            continue
        name = "imgstat --json --backend %s" % be
        if stream is not None:
            name = "IMGSTAT_TIFF_STREAM=%s %s" % (stream, name)
        rows.append((name, med, peak_of(cmd, env)))
    print()
    print("%d bands of %d x %d uint16 (%.0f MiB of samples, %.0f MiB on "
          "disk with the edge tiles' padding), median of %d runs" %
          (a.bands, a.size, a.size, image_mib, length / 2**20, a.runs))
    print("the roof: %.3f s, the lowest read_roof row (in-process)" % roof_s)
    print("| command | median s | GB/s of samples | / roof | peak MiB |")
    print("|---|---|---|---|---|")
    for row in rows:
        name, s, peak = row[:3]
        tiny = len(row) > 3  # not the tile's samples
        print("| `%s` | %.3f | %s | %.2f | %s |" %
              (name, s, "-" if tiny else "%.2f" % (samples / s * 1e-9),
               s / roof_s, "-" if peak is None else "%.0f" % peak))
    if not a.keep:
        os.remove(path)
        if made:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
