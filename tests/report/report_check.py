#!/usr/bin/env python3
"""The report page (--report FILE.html) read without a browser: a mixed
folder (RGB, gray, RGBA and 16-bit images, a corrupt file, a black and a
bright image, a name with HTML's special characters) pooled with
--scale unit --as keep; the page parsed with html.parser:

  * nothing on it can fetch anything: a Content Security Policy of
    default-src 'none', no <link>, no script or image from a URL, no
    http(s) address in an href, src or style;
  * every section is there, the plots are SVG with a <title> and <desc>,
    the tables have <th scope>;
  * the pooled mean, std, min and max per channel equal numpy's over the
    pooled images' samples (/255); the constants' numbers too;
  * the outliers (the black and the bright image) have thumbnails whose
    pixels are theirs (PIL decodes the data: URIs), at most 128 px;
  * the images left out and the corrupt file are listed by reason;
  * the table's data has one row per input, the odd name as it is and its
    link leading to the file;
  * the records printed are the same with and without --report, a run
    without --report writes no page, a page that cannot be written fails
    naming it and leaves nothing, the page's folder holds nothing else
    (the temporary was renamed), and a statistics run (no --dataset) gets a
    page too;
  * a folder of 13- and 20-band images (and an RGB one): the page says that
    the images' means and stds are those of their first 4 bands, names the
    table's columns by band, and those numbers are numpy's.

Usage: report_check.py IMGSTAT TMPDIR
"""
import base64
import html.parser
import io
import json
import os
import re
import subprocess
import sys
import urllib.parse

import numpy as np
from PIL import Image

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)


ODD = 'odd <&"name>.png'


def make_folder(d, rgb=8):
    """The mixed folder; returns the RGB 8-bit images pooled (by name)."""
    os.makedirs(d)
    rng = np.random.default_rng(7)
    pooled = {}

    def save(name, arr):
        Image.fromarray(arr).save(os.path.join(d, name))
        return arr

    for i in range(rgb):
        name = "rgb8_%02d.png" % i
        pooled[name] = save(name, rng.integers(60, 190, (16, 24, 3),
                                               dtype=np.uint8))
    pooled[ODD] = save(ODD, rng.integers(60, 190, (16, 24, 3), dtype=np.uint8))
    pooled["black.png"] = save("black.png", np.zeros((16, 24, 3), np.uint8))
    pooled["bright.png"] = save("bright.png",
                                rng.integers(245, 256, (16, 24, 3),
                                             dtype=np.uint8))
    save("gray8.png", rng.integers(0, 256, (20, 20), dtype=np.uint8))
    save("rgba8.png", rng.integers(0, 256, (16, 16, 4), dtype=np.uint8))
    save("gray16.png", rng.integers(0, 65536, (12, 20), dtype=np.uint16))
    with open(os.path.join(d, "broken.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n this is no image")
    return pooled


RUN = ["--dataset", "--scale", "unit", "--as", "keep", "--emit",
       "torchvision", "--emit", "timm"]


class Page(html.parser.HTMLParser):
    """Ids, tags with attributes, and the text under chosen elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.tags = []  # (tag, attrs)
        self.stack = []
        self.text = {}  # id or marker -> text
        self.cells = []  # pooled table: (channel, key, text)
        self.rows = []  # image table rows: list of cell texts
        self.links = []  # (href, text)
        self.outliers = []  # (img src, link text)
        self.groups = {}  # section id -> [(reason, count, [files])]
        self.section = None
        self.svg_titles = 0
        self.svgs = 0
        self._cur = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "section":
            self.section = a.get("id")
        if tag == "svg":
            self.svgs += 1
        self.stack.append((tag, a, []))

    def handle_endtag(self, tag):
        while self.stack:
            t, a, parts = self.stack.pop()
            text = "".join(parts)
            if self.stack:
                self.stack[-1][2].append(text)
            self.finish(t, a, text)
            if t == tag:
                break

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_data(self, data):
        if self.stack:
            self.stack[-1][2].append(data)

    def parent(self, tag):
        for t, a, _ in reversed(self.stack):
            if t == tag:
                return a
        return None

    def finish(self, tag, a, text):
        if "id" in a:
            self.text[a["id"]] = text
        if tag == "title" and self.parent("svg") is not None:
            self.svg_titles += 1
        if tag == "td" and "data-key" in a:
            tr = self.parent("tr")
            self.cells.append((int(tr["data-channel"]), a["data-key"], text))
        if tag == "code" and "data-form" in a:
            self.text["emit-" + a["data-form"]] = text
        if tag == "a":
            self.links.append((a.get("href", ""), text, self.section))
        if tag == "script" and a.get("id") == "image-data":
            self.rows = json.loads(text)
        if tag == "summary":
            self._summary = text
        if tag == "li" and self.parent("details") is not None:
            self._files = getattr(self, "_files", []) + [text]
        if tag == "details":
            m = re.match(r"(.*): (\d+) files?$", self._summary)
            self.groups.setdefault(self.section, []).append(
                (m.group(1), int(m.group(2)), getattr(self, "_files", [])))
            self._files = []
        if tag == "li" and "outlier" in a.get("class", ""):
            self.outliers.append(text)


def parse(path):
    p = Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.close()
    return p


def numbers(text):
    return [float(x) for x in
            re.findall(r"-?\d+\.\d*(?:e-?\d+)?|-?\d+(?:e-?\d+)?", text)]


def main():
    imgstat, tmp = sys.argv[1], sys.argv[2]
    d = os.path.join(tmp, "imgs")
    pooled = make_folder(d)
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    page = os.path.join(out, "report.html")
    run = subprocess.run([imgstat] + RUN + ["--report", page, d],
                         capture_output=True, text=True, cwd=tmp)
    check(run.returncode == 1, "one input failed: exit 1, got %d (%s)"
          % (run.returncode, run.stderr))
    check(os.listdir(out) == ["report.html"],
          "the page's folder holds the page alone: %s" % os.listdir(out))
    plain = subprocess.run([imgstat] + RUN + [d], capture_output=True,
                           text=True, cwd=tmp)
    check(plain.stdout == run.stdout,
          "the records printed are the same with and without --report")
    check(os.listdir(out) == ["report.html"], "no page without --report")
    p = parse(page)

    # nothing fetched
    tags = p.tags
    csp = [a for t, a in tags if t == "meta" and
           a.get("http-equiv", "").lower() == "content-security-policy"]
    check(csp and "default-src 'none'" in csp[0].get("content", ""),
          "a Content Security Policy of default-src 'none'")
    check(not any(t == "link" for t, _ in tags), "no <link>")
    for t, a in tags:
        if t in ("script", "img", "iframe", "object", "embed", "source"):
            src = a.get("src")
            check(src is None or src.startswith("data:image/png;base64,"),
                  "<%s src=%r> fetches nothing" % (t, (src or "")[:40]))
        for k in ("href", "src", "style", "xlink:href", "action"):
            v = a.get(k, "")
            check(not re.match(r"\s*(https?:|//|ftp:|ws)", v, re.I) and
                  "url(" not in v,
                  "<%s %s=%r> is no network address" % (t, k, v[:40]))
    raw = open(page, encoding="utf-8").read()
    check(not re.search(r"(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", raw) and
          "@import" not in raw and "url(http" not in raw,
          "no network address anywhere in the page")

    # sections, plots, tables
    for sid in ("run", "pooled", "constants", "histograms", "distributions",
                "outliers", "left-out", "failed", "images"):
        check(sid in p.ids, "section %s" % sid)
    check(p.svgs >= 6 + 6 and p.svg_titles == p.svgs,
          "pooled histograms (3 x 2) and distributions (3 x 2) as SVG, each "
          "with a <title>: %d svgs, %d titles" % (p.svgs, p.svg_titles))
    check(raw.count("<desc") == p.svgs, "each plot has a <desc>")
    ths = [a for t, a in tags if t == "th"]
    check(ths and all("scope" in a for a in ths), "every <th> has a scope")

    # the pooled record against numpy
    names = sorted(pooled)
    allpx = np.concatenate([pooled[n].reshape(-1, 3) for n in names]) / 255.0
    for c in range(3):
        got = {k: float(v) for ch, k, v in p.cells if ch == c and v}
        want = {"mean": allpx[:, c].mean(), "std": allpx[:, c].std(),
                "min": allpx[:, c].min(), "max": allpx[:, c].max()}
        for k, v in want.items():
            check(k in got and abs(got[k] - v) <= 1e-12 * max(1, abs(v)),
                  "channel %d %s: page %s, numpy %r" % (c, k, got.get(k), v))
        check(int(got.get("count", 0)) == allpx.shape[0],
              "channel %d count" % c)
        # the percentiles by the rank rule: within a sample step of numpy's
        for k, q in (("median", 50), ("p1", 1), ("p99", 99)):
            v = np.percentile(allpx[:, c], q)
            check(k in got and abs(got[k] - v) <= 2 / 255 + 1e-12,
                  "channel %d %s: page %s, numpy %r" % (c, k, got.get(k), v))
    # the constants: their numbers are the pooled figures
    tv = numbers(p.text.get("emit-torchvision", ""))
    want = list(allpx.mean(0)) + list(allpx.std(0))
    check(len(tv) == 6 and all(abs(a - b) <= 1e-12 for a, b in zip(tv, want)),
          "torchvision's constants: %s, numpy %s" % (tv, want))
    check("emit-timm" in p.text, "timm's constants too")
    counts = {k: p.text.get("count-" + k) for k in
              ("inputs", "read", "pooled", "left-out", "failed")}
    check(counts == {"inputs": "15", "read": "14", "pooled": "11",
                     "left-out": "3", "failed": "1"},
          "the run's counts: %s" % counts)

    # outliers with thumbnails of their own pixels
    imgs = [a for t, a in tags if t == "img"]
    thumbs = {}
    for a in imgs:
        name = a.get("alt", "").replace("thumbnail of ", "")
        data = base64.b64decode(a["src"].split(",", 1)[1])
        thumbs[os.path.basename(name)] = np.asarray(
            Image.open(io.BytesIO(data)).convert("RGB"))
    check(set(thumbs) == {"black.png", "bright.png"},
          "the outliers' thumbnails: %s" % sorted(thumbs))
    if "black.png" in thumbs:
        check(thumbs["black.png"].max() == 0, "the black image's thumbnail")
    if "bright.png" in thumbs:
        check(thumbs["bright.png"].min() >= 240,
              "the bright image's thumbnail: min %d" %
              thumbs["bright.png"].min())
    check(all(max(t.shape[:2]) <= 128 for t in thumbs.values()),
          "thumbnails at most 128 px")

    # left out and failed, by reason
    left = p.groups.get("left-out", [])
    files = sorted(os.path.basename(f) for _, _, fs in left for f in fs)
    check(files == ["gray16.png", "gray8.png", "rgba8.png"],
          "left out: %s" % files)
    check(sum(n for _, n, _ in left) == 3, "left out: counted by reason")
    failed = p.groups.get("failed", [])
    check(len(failed) == 1 and failed[0][1] == 1 and
          failed[0][2][0].endswith("broken.png") and failed[0][0],
          "failed: broken.png with its reason: %s" % failed)

    # the table
    check(len(p.rows) == 15, "one row per input: %d" % len(p.rows))
    check("All 15 inputs" in p.text.get("table-says", ""),
          "the page says what the table shows")
    odd = [(r[2], r[1]) for r in p.rows if r[1].endswith(ODD)]
    check(len(odd) == 1, "the odd name shown as it is")
    check("</script" not in raw[raw.index('id="image-data"'):].split(
        "</script>")[0], "no name can end the table's data")
    if odd:
        target = os.path.normpath(os.path.join(
            out, urllib.parse.unquote(odd[0][0])))
        check(target == os.path.join(d, ODD),
              "its link leads to the file: %s" % target)

    # failures leave nothing; a statistics run gets a page
    bad = os.path.join(tmp, "missing", "report.html")
    r = subprocess.run([imgstat] + RUN + ["--report", bad, d],
                       capture_output=True, text=True, cwd=tmp)
    check(r.returncode != 0 and bad in r.stderr and
          not os.path.exists(os.path.dirname(bad)),
          "a page that cannot be written: exit %d, %r" % (r.returncode,
                                                          r.stderr[-200:]))
    stats_page = os.path.join(out, "stats.html")
    r = subprocess.run([imgstat, "--json", "--report", stats_page,
                        os.path.join(d, "rgb8_00.png"),
                        os.path.join(d, "gray8.png")],
                       capture_output=True, text=True, cwd=tmp)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    check(r.returncode == 0 and len(lines) == 2 and
          not any("dataset" in x for x in lines),
          "a statistics run prints its records alone")
    sp = parse(stats_page) if os.path.exists(stats_page) else Page()
    check({"run", "pooled", "images"} <= sp.ids and len(sp.rows) == 2,
          "a statistics run's page")
    bands_check(imgstat, tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


def make_bands(d):
    """A folder of .npy images of 13 and 20 bands (H, W, C) and an RGB PNG;
    returns each file's pixels by name."""
    os.makedirs(d)
    rng = np.random.default_rng(11)
    px = {}
    for name, shape in (("b13.npy", (20, 30, 13)), ("b20.npy", (24, 30, 20))):
        px[name] = rng.integers(0, 4000, shape, dtype=np.uint16)
        np.save(os.path.join(d, name), px[name])
    px["rgb.png"] = rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)
    Image.fromarray(px["rgb.png"]).save(os.path.join(d, "rgb.png"))
    return px


def bands_check(imgstat, tmp):
    """Images of more than 4 channels: the page says that the images'
    means and stds are their first 4 bands', names the table's columns by
    band, and those numbers are numpy's over bands 1-4."""
    d = os.path.join(tmp, "bands")
    px = make_bands(d)
    page = os.path.join(tmp, "bands.html")
    # (a statistics run: what the dataset pools of 20 bands is not the
    # point here)
    r = subprocess.run([imgstat, "--report", page, d],
                       capture_output=True, text=True, cwd=tmp)
    check(r.returncode == 0, "bands: exit %d (%s)" % (r.returncode,
                                                     r.stderr[-300:]))
    if not os.path.exists(page):
        check(False, "bands: no page")
        return
    p = parse(page)
    raw = open(page, encoding="utf-8").read()
    for sid in ("run", "pooled", "distributions", "images",
                "bands-note-distributions", "bands-note-table"):
        check(sid in p.ids, "bands: %s on the page" % sid)
    for key in ("bands-note-distributions", "bands-note-table"):
        note = p.text.get(key, "")
        check("2 images have more than 4 channels (up to 20 bands)" in note
              and "first 4 bands" in note and "bands 1 to 4 only" in note,
              "bands: the note says what is shown: %r" % note)
    heads = re.findall(r">(mean|std) ([^<]*)</button>", raw)
    check(heads == [("mean", str(c)) for c in range(1, 5)] +
          [("std", str(c)) for c in range(1, 5)],
          "bands: the table's columns named by band: %s" % heads)
    dist = re.findall(r"<title[^>]*>Images' (means|stds) of channel "
                      r"([^<]*)</title>", html.unescape(raw))
    check(sorted(dist) == sorted((k, str(c)) for k in ("means", "stds")
                                 for c in range(1, 5)) and
          p.svg_titles == p.svgs,
          "bands: the images' means and stds of bands 1-4: %s" % dist)
    rows = {os.path.basename(row[1]): row for row in p.rows}
    check(sorted(rows) == sorted(px), "bands: one row per image: %s"
          % sorted(rows))
    for name, a in px.items():
        if name not in rows:
            continue
        a = a.reshape(-1, a.shape[-1]).astype(np.float64)
        nc = min(4, a.shape[1])
        got = rows[name][8:16]
        want = list(a[:, :nc].mean(0)) + [None] * (4 - nc) + \
            list(a[:, :nc].std(0)) + [None] * (4 - nc)
        check(all((g is None and w is None) or
                  (g is not None and w is not None and
                   abs(g - w) <= 1e-5 * max(1, abs(w)))
                  for g, w in zip(got, want)),
              "bands: %s's means and stds, page %s, numpy %s"
              % (name, got, want))


if __name__ == "__main__":
    sys.exit(main())
