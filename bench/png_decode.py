"""PNG decoding throughput: imgstat's loader (the libdeflate decoder), the
same loader with libpng alone, and OpenCV's cv2.imdecode when it is there;
decode only, from memory, on THREADS threads (docs/benchmarks.md, "PNG
decoding").

    python3 bench/png_decode.py [--tool build/bench/bench_png_decode]
        [--threads T] [--rounds R] [--seconds S] [--sizes 0.5,12]
        [--mixed-only]
        [--dir /tmp/imgstat-png-bench]

Test images (made once into --dir, kept there; nothing else is written):
samples/kodim23.png upscaled with Pillow (bicubic) to 0.5 MP (816x612) and
12 MP (4000x3000), plus Gaussian noise (sigma 2, seed 1), as gray, RGB, RGBA
(alpha a smooth ramp), palette (Pillow's 256-colour quantization) at 8 bits
and gray, RGB, RGBA at 16 bits (values x257 plus 0..255 noise). They are
filtered here as libpng's writer does by default (each row's filter the one
of the five with the least sum of absolute differences; palette images
unfiltered) and deflated by zlib at level 6.

Each set of files (one per type, and "all": the types together, a folder)
is decoded REPEAT times a round (so that a round of libpng takes about S
seconds), ROUNDS rounds after a warm-up, the decoders in turns; the medians' rates are printed in files/s, with imgstat's ratio to
OpenCV and to libpng.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = {"0.5": (816, 612), "12": (4000, 3000)}
TYPES = ["gray8", "rgb8", "rgba8", "pal8", "gray16", "rgb16", "rgba16"]


def chunk(kind, data):
    import struct
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def filtered(rows, bpp, adaptive):
    """rows: (h, rowbytes) uint8. libpng's default heuristic: the filter of
    least sum of |signed byte| a row (none for palette images)."""
    h, n = rows.shape
    if not adaptive:
        return np.concatenate([np.zeros((h, 1), np.uint8), rows], axis=1)
    x = rows.astype(np.int16)
    a = np.zeros_like(x)
    a[:, bpp:] = x[:, :-bpp]
    b = np.zeros_like(x)
    b[1:] = x[:-1]
    c = np.zeros_like(x)
    c[1:, bpp:] = x[:-1, :-bpp]
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    cands = [x, x - a, x - b, x - (a + b) // 2, x - paeth]
    del p, pa, pb, pc, paeth
    out = np.empty((h, n + 1), np.uint8)
    best = np.full(h, np.iinfo(np.int64).max)
    for f, cand in enumerate(cands):
        u = (cand & 0xFF).astype(np.uint8)
        score = np.abs(u.view(np.int8).astype(np.int64)).sum(axis=1)
        take = score < best
        best = np.where(take, score, best)
        out[take, 0] = f
        out[take, 1:] = u[take]
    return out


def encode(arr, depth, ct, palette=None):
    import struct
    h, w = arr.shape[:2]
    channels = 1 if arr.ndim == 2 else arr.shape[2]
    raw = arr.astype(">u2" if depth == 16 else np.uint8).reshape(h, -1)
    rows = raw.view(np.uint8).reshape(h, -1)
    bpp = channels * depth // 8
    stream = filtered(rows, bpp, ct != 3).tobytes()
    png = b"\x89PNG\r\n\x1a\n" + chunk(
        b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ct, 0, 0, 0))
    if palette is not None:
        png += chunk(b"PLTE", palette)
    packed = zlib.compress(stream, 6)
    for at in range(0, len(packed), 1 << 16):  # 64 KiB IDAT chunks
        png += chunk(b"IDAT", packed[at:at + (1 << 16)])
    return png + chunk(b"IEND", b"")


def make_one(job):
    size, kind, path = job
    from PIL import Image
    w, h = SIZES[size]
    src = Image.open(os.path.join(ROOT, "samples", "kodim23.png")).convert("RGB")
    rng = np.random.default_rng(1)
    rgb = np.asarray(src.resize((w, h), Image.BICUBIC), dtype=np.float64)
    rgb = np.clip(rgb + rng.normal(0, 2, rgb.shape), 0, 255)
    alpha = (np.add.outer(np.arange(h), np.arange(w)) * 255.0 / (h + w))
    gray = rgb @ [0.299, 0.587, 0.114]
    if kind.endswith("16"):
        noise = lambda s: rng.integers(0, 256, s)
        rgb16 = rgb.astype(np.int64) * 257 + noise(rgb.shape)
        gray16 = np.clip(gray.astype(np.int64) * 257 + noise(gray.shape), 0,
                         65535)
        a16 = alpha.astype(np.int64) * 257
        rgb16 = np.clip(rgb16, 0, 65535)
        data = {"gray16": (gray16, 0),
                "rgb16": (rgb16, 2),
                "rgba16": (np.dstack([rgb16, a16]), 6)}[kind]
        png = encode(data[0], 16, data[1])
    elif kind == "pal8":
        q = Image.fromarray(rgb.astype(np.uint8)).quantize(256)
        pal = bytes(q.getpalette()[:768])
        png = encode(np.asarray(q), 8, 3, pal.ljust(768, b"\0"))
    else:
        data = {"gray8": (gray, 0), "rgb8": (rgb, 2),
                "rgba8": (np.dstack([rgb, alpha]), 6)}[kind]
        png = encode(np.rint(data[0]).astype(np.uint8), 8, data[1])
    with open(path + ".tmp", "wb") as f:
        f.write(png)
    os.replace(path + ".tmp", path)
    return path


def make_files(folder, sizes):
    os.makedirs(folder, exist_ok=True)
    jobs = [(s, k, os.path.join(folder, f"{s}mp-{k}.png"))
            for s in sizes for k in TYPES]
    todo = [j for j in jobs if not os.path.exists(j[2])]
    if todo:
        t0 = time.time()
        with ProcessPoolExecutor(min(len(todo), os.cpu_count() or 1)) as ex:
            list(ex.map(make_one, todo))
        print(f"made {len(todo)} PNGs in {time.time() - t0:.0f} s", flush=True)
    return {(s, k): p for s, k, p in jobs}


def imgstat_rates(tool, files, threads, rounds, seconds):
    out = subprocess.run([tool, "-t", str(threads), "-r", str(rounds), "-s",
                          str(seconds)] + files, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{tool}: {out.stderr}")
    rates = {}
    for line in out.stdout.splitlines():
        f = line.split("\t")
        if len(f) == 4 and f[0] in ("imgstat", "libpng"):
            rates[f[0]] = float(f[2])
        if len(f) == 2 and f[0] == "repeat":
            rates["repeat"] = int(f[1])
    return rates


def opencv_rate(files, threads, rounds, repeat):
    try:
        import cv2
    except ImportError:
        return None
    cv2.setNumThreads(1)
    blobs = []
    for p in files:
        with open(p, "rb") as f:
            blobs.append(np.frombuffer(f.read(), np.uint8))
    jobs = blobs * repeat

    def one(b):
        im = cv2.imdecode(b, cv2.IMREAD_UNCHANGED)
        assert im is not None
        return im.shape

    times = []
    with ThreadPoolExecutor(threads) as ex:
        for r in range(rounds + 1):
            t0 = time.perf_counter()
            list(ex.map(one, jobs))
            if r:
                times.append(time.perf_counter() - t0)
    return len(jobs) / statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", default=os.path.join(ROOT, "build", "bench",
                                                   "bench_png_decode"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="0.5,12")
    ap.add_argument("--seconds", type=float, default=0.5,
                    help="about how long a round of libpng takes")
    ap.add_argument("--mixed-only", action="store_true",
                    help="only the folder of all types, not each type")
    ap.add_argument("--dir", default=os.path.join(
        os.environ.get("TMPDIR", "/tmp"), "imgstat-png-bench"))
    args = ap.parse_args()
    sizes = args.sizes.split(",")
    files = make_files(args.dir, sizes)
    print(f"== {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, {args.threads} threads, median of "
          f"{args.rounds} rounds; rates in files/s", flush=True)
    print("set\timgstat\tlibpng\tOpenCV\timgstat/OpenCV\timgstat/libpng")
    for s in sizes:
        sets = [] if args.mixed_only else [(k, [files[(s, k)]]) for k in TYPES]
        sets.append(("all", [files[(s, k)] for k in TYPES]))
        for name, fs in sets:
            rates = imgstat_rates(args.tool, fs, args.threads, args.rounds,
                                  args.seconds)
            cv = opencv_rate(fs, args.threads, args.rounds, rates["repeat"])
            im, lp = rates.get("imgstat", 0), rates.get("libpng", 0)
            print(f"{s} MP {name}\t{im:.1f}\t{lp:.1f}\t"
                  f"{'%.1f' % cv if cv else '-'}\t"
                  f"{'%.2f' % (im / cv) if cv else '-'}\t{im / lp:.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
