#!/usr/bin/env python3
"""Writes a corpus of valid and damaged JPEGs into DIR (for
--jpeg-check): python3 tests/io/jpeg_check_corpus.py DIR [SAMPLE.jpg ...]

Seeds made with Pillow (baseline 4:2:0, 4:2:2 and 4:4:4 at quality 90,
grayscale, optimized Huffman tables, progressive), restart-interval versions
of the baseline seeds made here (every scan's Huffman codes decoded and
written again with RSTn markers every N MCUs and the DC predictions reset
there: a second, independent Huffman decoder), and the JPEGs named. Each file
is named KIND-SEED-N.jpg, KIND being one of: ok (a seed), cut (cut at a
point), flip (one bit of the entropy-coded data flipped), badcode (16 one
bits put into the data: no code of any table), noeoi, rst-order (two
restart markers swapped), rst-missing (one removed), rst-extra (one
repeated), junk (bytes between segments), seglen (a segment's length off by
one). Deterministic (fixed seeds)."""

import io
import os
import random
import sys

from PIL import Image


def picture(w, h, mode, seed):
    """Gradients, edges and noise: codes of many lengths."""
    rnd = random.Random(seed)
    img = Image.new("RGB", (w, h))
    px = img.load()
    for y in range(h):
        for x in range(w):
            n = rnd.randint(-40, 40)
            r = (x * 255 // w + n) & 255
            g = (y * 255 // h + (60 if (x // 9 + y // 7) % 2 else 0)) & 255
            b = ((x * y) // 5 + rnd.randint(0, 30)) & 255
            px[x, y] = (r, g, b)
    return img.convert(mode)


def encode(img, **kw):
    out = io.BytesIO()
    img.save(out, "JPEG", **kw)
    return out.getvalue()


def segments(data):
    """(marker, start, end) of each marker segment up to the first SOS's
    header end, and the SOS positions: header walk of a clean file."""
    out = []
    i = 2
    while i + 4 <= len(data) and data[i] == 0xFF:
        m = data[i + 1]
        if m == 0xD9:
            break
        ln = data[i + 2] << 8 | data[i + 3]
        out.append((m, i, i + 2 + ln))
        i += 2 + ln
        if m == 0xDA:
            # skip entropy-coded data to the next non-RST marker
            while i + 1 < len(data):
                if data[i] == 0xFF and data[i + 1] != 0 and not (0xD0 <= data[i + 1] <= 0xD7):
                    break
                i += 1
    return out


# ---- restart markers: a small baseline Huffman transcoder -----------------

class BitReader:
    def __init__(self, data, pos):
        self.d, self.i, self.acc, self.n = data, pos, 0, 0

    def bit(self):
        if self.n == 0:
            c = self.d[self.i]
            if c == 0xFF:
                assert self.d[self.i + 1] == 0, "marker inside the data"
                self.i += 2
            else:
                self.i += 1
            self.acc, self.n = c, 8
        self.n -= 1
        return (self.acc >> self.n) & 1

    def bits(self, k):
        v = 0
        for _ in range(k):
            v = v << 1 | self.bit()
        return v


class BitWriter:
    def __init__(self):
        self.out, self.acc, self.n = bytearray(), 0, 0

    def put(self, v, k):
        for j in range(k - 1, -1, -1):
            self.acc = self.acc << 1 | ((v >> j) & 1)
            self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                if self.acc == 0xFF:
                    self.out.append(0)
                self.acc, self.n = 0, 0

    def flush(self):
        if self.n:
            self.put((1 << (8 - self.n)) - 1, 8 - self.n)


def huff_table(counts, syms):
    dec, enc, code, k = {}, {}, 0, 0
    for ln in range(1, 17):
        for _ in range(counts[ln - 1]):
            dec[(ln, code)] = syms[k]
            enc[syms[k]] = (code, ln)
            code += 1
            k += 1
        code <<= 1
    return dec, enc


def read_sym(br, dec):
    code = 0
    for ln in range(1, 17):
        code = code << 1 | br.bit()
        if (ln, code) in dec:
            return dec[(ln, code)]
    raise ValueError("bad Huffman code")


def category(v):
    return 0 if v == 0 else abs(v).bit_length()


def with_restarts(data, interval):
    """The baseline single-scan JPEG data again with DRI = interval."""
    segs = segments(data)
    dc, ac, comps = {}, {}, []
    hmax = vmax = 1
    for m, s, e in segs:
        body = data[s + 4:e]
        if m == 0xC4:
            j = 0
            while j < len(body):
                tc, th = body[j] >> 4, body[j] & 15
                counts = list(body[j + 1:j + 17])
                syms = list(body[j + 17:j + 17 + sum(counts)])
                (ac if tc else dc)[th] = huff_table(counts, syms)
                j += 17 + sum(counts)
        elif m == 0xC0:
            h, w, nc = body[1] << 8 | body[2], body[3] << 8 | body[4], body[5]
            for k in range(nc):
                comps.append([body[6 + 3 * k], body[7 + 3 * k] >> 4, body[7 + 3 * k] & 15])
            hmax = max(c[1] for c in comps)
            vmax = max(c[2] for c in comps)
        elif m == 0xDA:
            sos_s, sos_e, ns = s, e, body[0]
            sel = [(body[1 + 2 * k], body[2 + 2 * k] >> 4, body[2 + 2 * k] & 15) for k in range(ns)]
    order = []
    for cid, td, ta in sel:
        c = next(c for c in comps if c[0] == cid)
        nb = c[1] * c[2] if ns > 1 else 1
        order.append((nb, dc[td], ac[ta]))
    if ns > 1:
        mcus = -(-w // (8 * hmax)) * -(-h // (8 * vmax))
    else:
        c = next(c for c in comps if c[0] == sel[0][0])
        mcus = -(-w * c[1] // (8 * hmax)) * -(-h * c[2] // (8 * vmax))
    br = BitReader(data, sos_e)
    bw = BitWriter()
    pred_in = [0] * ns
    pred_out = [0] * ns
    for m in range(mcus):
        if m and m % interval == 0:
            bw.flush()
            bw.out += bytes([0xFF, 0xD0 + (m // interval - 1) % 8])
            pred_out = [0] * ns
        for k, (nb, (ddec, denc), (adec, aenc)) in enumerate(order):
            for _ in range(nb):
                s = read_sym(br, ddec)
                v = br.bits(s)
                if s and v < 1 << (s - 1):
                    v -= (1 << s) - 1
                pred_in[k] += v
                diff = pred_in[k] - pred_out[k]
                pred_out[k] = pred_in[k]
                cat = category(diff)
                code, ln = denc[cat]
                bw.put(code, ln)
                bw.put(diff if diff >= 0 else diff + (1 << cat) - 1, cat)
                kk = 1
                while kk < 64:
                    rs = read_sym(br, adec)
                    code, ln = aenc[rs]
                    bw.put(code, ln)
                    r, s = rs >> 4, rs & 15
                    if s:
                        bw.put(br.bits(s), s)
                        kk += r + 1
                    elif r == 15:
                        kk += 16
                    else:
                        break
    bw.flush()
    dri = bytes([0xFF, 0xDD, 0, 4, interval >> 8, interval & 255])
    return data[:sos_s] + dri + data[sos_s:sos_e] + bytes(bw.out) + b"\xff\xd9"


# ---- damage ---------------------------------------------------------------

def entropy_ranges(data):
    """(start, end) of each scan's entropy-coded data."""
    out = []
    segs = segments(data)
    for k, (m, s, e) in enumerate(segs):
        if m == 0xDA:
            end = segs[k + 1][1] if k + 1 < len(segs) else len(data) - 2
            out.append((e, end))
    return out


def damaged(name, data, rnd):
    """(kind, bytes) pairs."""
    out = []
    n = len(data)
    ranges = entropy_ranges(data)
    first_sos = ranges[0][0]
    cuts = sorted(set([2, 4, 20, first_sos - 3, first_sos, first_sos + 1, n - 1, n - 3]
                      + [rnd.randrange(first_sos, n) for _ in range(24)]
                      + [rnd.randrange(2, first_sos) for _ in range(4)]))
    for c in cuts:
        out.append(("cut", data[:c]))
    out.append(("noeoi", data[:-2]))
    for _ in range(30):
        s, e = ranges[rnd.randrange(len(ranges))]
        at = rnd.randrange(s, e)
        b = bytearray(data)
        b[at] ^= 1 << rnd.randrange(8)
        out.append(("flip", bytes(b)))
    for _ in range(8):
        s, e = ranges[rnd.randrange(len(ranges))]
        at = rnd.randrange(s, max(s + 1, e - 4))
        while data[at] == 0xFF or data[at - 1] == 0xFF:
            at += 1
        out.append(("badcode", data[:at] + b"\xff\x00\xff\x00" + data[at + 2:]))
    rst = [i for i in range(len(data) - 1) if data[i] == 0xFF and 0xD0 <= data[i + 1] <= 0xD7]
    if len(rst) >= 2:
        for _ in range(4):
            a, b_ = sorted(rnd.sample(rst, 2))
            b = bytearray(data)
            b[a + 1], b[b_ + 1] = data[b_ + 1], data[a + 1]
            if b != bytearray(data):
                out.append(("rst-order", bytes(b)))
        for _ in range(3):
            a = rnd.choice(rst)
            out.append(("rst-missing", data[:a] + data[a + 2:]))
            out.append(("rst-extra", data[:a + 2] + data[a:]))
    segs = segments(data)
    for m, s, e in segs:
        out.append(("junk", data[:s] + b"\x00\x11" + data[s:]))
        if m not in (0xDA,):
            b = bytearray(data)
            ln = (data[s + 2] << 8 | data[s + 3]) + rnd.choice((-1, 1))
            b[s + 2], b[s + 3] = ln >> 8, ln & 255
            out.append(("seglen", bytes(b)))
    out.append(("junk", data[:-2] + b"\x00\x11\xff\xd9"))
    return out


def summarize(table_path):
    """Reads jpeg_check_tool's table; prints what each level catches per
    kind of damage; returns the number of rule violations (printed)."""
    rows = [l.rstrip("\n").split("\t") for l in open(table_path) if l.strip()]
    bad = 0
    kinds = {}
    for r in rows:
        if len(r) != 7:
            print("malformed line: %r" % r)
            bad += 1
            continue
        path, scan_m, scan_f, none, markers, full, cpu = r
        name = os.path.basename(path)
        kind = name.split("-")[0] if not name.startswith("rst-") else "-".join(name.split("-")[:2])
        k = kinds.setdefault(kind, dict(files=0, cpu=0, open=0, none=0, markers=0, full=0,
                                        alone=0, accepted=0))
        k["files"] += 1
        if none == "not for nvJPEG":
            continue
        refused = lambda v: v != "ok"
        k["cpu"] += refused(cpu)
        k["open"] += cpu.startswith("open:")
        k["none"] += refused(none)
        k["markers"] += refused(markers)
        k["full"] += refused(full)
        k["accepted"] += not refused(cpu)
        k["alone"] += scan_f == "sound"
        def fail(why):
            nonlocal bad
            bad += 1
            print("FAIL %s: %s (markers %s, full %s, cpu %s)" % (name, why, markers, full, cpu))
        if full != cpu:
            fail("--jpeg-check full differs from the CPU decoder")
        if scan_f == "sound" and refused(cpu):
            fail("the full scanner accepts a file libjpeg refuses")
        if scan_m == "sound" and cpu.startswith("open:"):
            fail("the marker walk accepts a file open refuses")
        if refused(markers) and markers != cpu:
            fail("markers refuses with other words than the CPU decoder")
        if refused(none) and none != cpu:
            fail("none refuses what open does not")
        if kind == "ok" and (refused(cpu) or scan_m != "sound" or
                             (scan_f != "sound" and "-prog-" not in name)):
            fail("a seed is refused or doubted")
    print("| damage | files | libjpeg refuses | refused at open | none | markers | full "
          "| full decided without libjpeg |")
    print("|---|---|---|---|---|---|---|---|")
    tot = dict(files=0, cpu=0, open=0, none=0, markers=0, full=0, alone=0)
    for kind in sorted(kinds):
        k = kinds[kind]
        for f in tot:
            tot[f] += k[f]
        print("| %s | %d | %d | %d | %d | %d | %d | %d |" % (
            kind, k["files"], k["cpu"], k["open"], k["none"], k["markers"], k["full"], k["alone"]))
    print("| all | %d | %d | %d | %d | %d | %d | %d |" % (
        tot["files"], tot["cpu"], tot["open"], tot["none"], tot["markers"], tot["full"],
        tot["alone"]))
    return bad


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summarize":
        sys.exit(1 if summarize(sys.argv[2]) else 0)
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    seeds = {}
    rgb = picture(97, 61, "RGB", 1)
    seeds["b420"] = encode(rgb, quality=90, subsampling=2)
    seeds["b422"] = encode(picture(64, 40, "RGB", 2), quality=90, subsampling=1)
    seeds["b444"] = encode(picture(45, 33, "RGB", 3), quality=90, subsampling=0)
    seeds["gray"] = encode(picture(70, 50, "L", 4), quality=90)
    seeds["opt"] = encode(picture(80, 48, "RGB", 5), quality=75, optimize=True)
    seeds["prog"] = encode(picture(72, 56, "RGB", 6), quality=90, progressive=True)
    seeds["r420"] = with_restarts(seeds["b420"], 3)
    seeds["r444"] = with_restarts(seeds["b444"], 2)
    seeds["rgray"] = with_restarts(seeds["gray"], 5)
    seeds["r422x1"] = with_restarts(seeds["b422"], 1)
    for path in sys.argv[2:]:
        with open(path, "rb") as f:
            seeds[os.path.splitext(os.path.basename(path))[0]] = f.read()
    rnd = random.Random(18)
    count = 0
    for name, data in seeds.items():
        with open(os.path.join(folder, "ok-%s-0.jpg" % name), "wb") as f:
            f.write(data)
        for k, (kind, bad) in enumerate(damaged(name, data, rnd)):
            with open(os.path.join(folder, "%s-%s-%d.jpg" % (kind, name, k)), "wb") as f:
                f.write(bad)
            count += 1
    print("%d seeds, %d damaged files in %s" % (len(seeds), count, folder))


if __name__ == "__main__":
    main()
