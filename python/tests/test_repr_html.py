"""The HTML a notebook shows for imgstat.Stats and imgstat.Dataset
(_repr_html_), read back with html.parser: the figures shown against numpy
on the arrays given, the histograms' text alternative against numpy's
histogram, names escaped, nothing fetched from anywhere, the size bounded
for many channels, and what accessibility and a dark theme need."""

import math
import os
import re
from html.parser import HTMLParser

import numpy as np
import pytest

import imgstat

# A name with every character HTML treats specially.
NASTY = "a<b>&amp;\"q\"'s <script>x"

# Everything the output may be made of: a tag outside this set (a script,
# a link, an image, an iframe) would be a way to fetch or run something.
TAGS = {"div", "style", "table", "caption", "thead", "tbody", "tr", "th",
        "td", "p", "ul", "li", "code", "figure", "figcaption", "svg",
        "title", "desc", "path", "line"}


class Page(HTMLParser):
    """The parts of the output the tests read: each table (caption, header
    texts, rows of cells with their attributes), each svg (attributes,
    title, desc), the text of every element, every tag and attribute."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tables, self.svgs, self.tags, self.ids = [], [], [], []
        self.texts = []  # (tag, text) of every p, li, figcaption, caption
        self._stack, self._cell, self._buf = [], None, None
        self.feed(text)
        self.close()
        assert not self._stack, f"unclosed: {self._stack}"

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.append(a["id"])
        if tag not in ("path", "line"):  # void-like in the output
            self._stack.append(tag)
        if tag == "table":
            self.tables.append({"caption": "", "head": [], "rows": []})
        elif tag == "tr":
            self._row = []
        elif tag in ("th", "td"):
            self._cell = {"tag": tag, "attrs": a, "text": ""}
        elif tag == "svg":
            self.svgs.append({"attrs": a, "title": "", "desc": "",
                              "paths": [], "title_id": None,
                              "desc_id": None})
        elif tag in ("path", "line") and self.svgs:
            self.svgs[-1]["paths"].append(a)
        if tag in ("title", "desc") and self.svgs:
            self.svgs[-1][f"{tag}_id"] = a.get("id")
        if tag in ("p", "li", "figcaption", "caption", "title", "desc"):
            self._buf = ""

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("path", "line") and self.svgs:
            self.svgs[-1]["paths"].append(dict(attrs))

    def handle_endtag(self, tag):
        if tag in ("path", "line"):
            return
        assert self._stack and self._stack[-1] == tag, (self._stack, tag)
        self._stack.pop()
        if tag in ("th", "td"):
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr":
            t = self.tables[-1]
            if "thead" in self._stack:
                t["head"] = [c["text"] for c in self._row]
            else:
                t["rows"].append(self._row)
        if tag in ("p", "li", "figcaption", "caption", "title", "desc"):
            if tag == "caption":
                self.tables[-1]["caption"] = self._buf
            elif tag in ("title", "desc") and "svg" in self._stack:
                self.svgs[-1][tag] = self._buf
            self.texts.append((tag, self._buf))
            self._buf = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data
        if self._buf is not None:
            self._buf += data


def rank(values, p):
    """Percentile p of values by the rank rule (docs/dataset.md): the k-th
    smallest, k = max(1, ceil(p N / 100))."""
    v = np.sort(np.asarray(values).reshape(-1))
    k = max(1, math.ceil(p * v.size / 100))
    return v[k - 1].item()


def by_channel(table):
    """{channel name: {column header: cell}} of a channels table."""
    head = table["head"]
    assert head[0] == "channel"
    return {row[0]["text"]: dict(zip(head[1:], row[1:]))
            for row in table["rows"]}


def shown(cell):
    """The number a cell shows, and the one its title holds (every digit)."""
    return float(cell["text"]), float(cell["attrs"]["title"].split()[0])


def check_figure(cell, want, exact=False):
    text, full = shown(cell)
    if exact:
        assert text == want and full == want, (cell, want)
    else:
        # the table shows 6 significant digits, the title every one
        assert text == pytest.approx(want, rel=6e-6, abs=1e-12), (cell, want)
        assert full == pytest.approx(want, rel=1e-12, abs=1e-12), (cell, want)


def check_safe(text):
    """Nothing in the output fetches or runs anything, and it draws no
    background of its own (a dark theme's stays)."""
    assert not re.search(r"https?:|//[a-z]", text, re.I)
    assert "url(" not in text and "@import" not in text
    page = Page(text)
    for tag, attrs in page.tags:
        assert tag in TAGS, tag
        for name in attrs:
            assert not name.startswith("on"), name  # no event handlers
            assert name not in ("href", "src", "xlink:href"), name
    low = text.lower()
    for value in re.findall(r"background[-a-z]*\s*:\s*([^;}\"]*)", low):
        assert value == "transparent", value
    assert not re.search(r"(fill|stroke|color)\s*[:=]\s*\"?\s*"
                         r"(#f|white|rgb\(255)", low)
    return page


def check_accessible(page):
    """Each table has a caption and scoped headers; each plot is an image
    named by its <title> and described by its <desc>; ids are unique."""
    for t in page.tables:
        assert t["caption"].strip()
    for tag, attrs in page.tags:
        if tag == "th":
            assert attrs.get("scope") in ("col", "row"), attrs
    for svg in page.svgs:
        a = svg["attrs"]
        assert a.get("role") == "img"
        assert a.get("aria-labelledby") == f"{svg['title_id']} {svg['desc_id']}"
        assert svg["title"].strip() and svg["desc"].strip()
        for shape in svg["paths"]:  # drawn in the text's colour
            for key in ("fill", "stroke"):
                assert shape.get(key, "currentColor") == "currentColor"
    assert len(page.ids) == len(set(page.ids))


def check_histogram(svg, plane, channel):
    """The plot's text alternative against numpy's histogram of an 8-bit
    channel: its samples, its tallest bin and that bin's value."""
    counts = np.bincount(np.asarray(plane).reshape(-1), minlength=256)
    m = re.search(r"channel (\S+): 256 bins from 0 to 255 holding (\d+) "
                  r"samples; the tallest bin holds (\d+) samples, values "
                  r"(\d+)\.", svg["desc"])
    assert m, svg["desc"]
    assert m.group(1) == channel
    assert int(m.group(2)) == counts.sum()
    assert int(m.group(3)) == counts.max()
    assert int(m.group(4)) == int(np.argmax(counts))
    assert svg["title"] == f"Histogram of channel {channel}"


def test_stats_figures_against_numpy():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    a[5, 9, 1] = 0  # a sure minimum
    s = imgstat.stats(a, histogram=True, percentiles=[1, 12.5, 99])
    page = check_safe(s._repr_html_())
    check_accessible(page)
    assert len(page.tables) == 1
    assert "<array>" in page.tables[0]["caption"]
    assert "53\u00d737" in page.tables[0]["caption"]
    rows = by_channel(page.tables[0])
    assert list(rows) == ["R", "G", "B"]
    for c, name in enumerate(rows):
        plane = a[:, :, c].astype(np.int64)
        row = rows[name]
        check_figure(row["count"], plane.size, exact=True)
        check_figure(row["min"], plane.min(), exact=True)
        check_figure(row["max"], plane.max(), exact=True)
        check_figure(row["mean"], plane.mean())
        check_figure(row["std"], plane.std())
        check_figure(row["median"], rank(plane, 50), exact=True)
        for p in (1, 12.5, 99):
            check_figure(row[f"p{p}"], rank(plane, p), exact=True)
        # where the extrema are: the first in raster order
        y, x = np.unravel_index(np.argmin(plane), plane.shape)
        assert row["min"]["attrs"]["title"].endswith(f"at ({x}, {y})")
    assert len(page.svgs) == 3
    for c, (svg, name) in enumerate(zip(page.svgs, "RGB")):
        check_histogram(svg, a[:, :, c], name)


def test_stats_float_figures_every_digit():
    rng = np.random.default_rng(8)
    a = (rng.standard_normal((19, 23)) * 1000).astype(np.float32)
    a[3, 4] = np.nan
    s = imgstat.stats(a)
    rows = by_channel(check_safe(s._repr_html_()).tables[0])
    (row,) = rows.values()
    finite = a[np.isfinite(a)].astype(np.float64)
    check_figure(row["count"], finite.size, exact=True)
    check_figure(row["NaN"], 1, exact=True)
    # a float32 minimum is a double exactly: every digit in the title
    assert float(row["min"]["attrs"]["title"].split()[0]) == finite.min()
    assert float(row["max"]["attrs"]["title"].split()[0]) == finite.max()
    check_figure(row["min"], finite.min())
    check_figure(row["mean"], finite.mean())
    check_figure(row["std"], finite.std())


def test_stats_without_histogram_says_so():
    a = np.arange(60, dtype=np.uint16).reshape(6, 10)
    text = imgstat.stats(a)._repr_html_()
    page = check_safe(text)
    assert not page.svgs
    assert any("No histogram" in t for _, t in page.texts)
    rows = by_channel(page.tables[0])
    check_figure(rows["Y"]["max"], 59, exact=True)
    check_figure(rows["Y"]["mean"], 29.5)


def test_stats_nodata_and_labels_against_numpy():
    rng = np.random.default_rng(9)
    a = rng.integers(0, 256, (24, 32), dtype=np.uint8)
    a[:, :3] = 0
    s = imgstat.stats(a, nodata=0)
    row = by_channel(check_safe(s._repr_html_()).tables[0])["Y"]
    check_figure(row["nodata"], int((a == 0).sum()), exact=True)
    valid = a[a != 0].astype(np.int64)
    check_figure(row["count"], valid.size, exact=True)
    check_figure(row["mean"], valid.mean())

    labels = np.zeros(a.shape, dtype=np.uint16)
    labels[2:10, 4:20] = 1
    labels[12:20, 1:30] = 7
    page = check_safe(imgstat.stats(a, labels=labels)._repr_html_())
    check_accessible(page)
    (table,) = [t for t in page.tables if t["caption"] == "Labels"]
    assert table["head"][:3] == ["label", "pixels", "channel"]
    got = {r[0]["text"]: dict(zip(table["head"], r)) for r in table["rows"]}
    assert list(got) == ["1", "7"]
    for lab, row in got.items():
        inside = a[labels == int(lab)].astype(np.int64)
        assert int(row["pixels"]["text"]) == inside.size
        check_figure(row["count"], inside.size, exact=True)
        check_figure(row["min"], inside.min(), exact=True)
        check_figure(row["max"], inside.max(), exact=True)
        check_figure(row["mean"], inside.mean())
        check_figure(row["std"], inside.std())


def test_nasty_file_name_escaped(tmp_path):
    a = np.arange(12, dtype=np.uint8).reshape(3, 4)
    path = tmp_path / (NASTY + ".npy")
    np.save(path, a)
    text = imgstat.stats(str(path))._repr_html_()
    assert "<script" not in text and "<b>" not in text
    page = check_safe(text)
    caption = page.tables[0]["caption"]
    assert caption.startswith(f"imgstat.Stats: {path} \u2014 4\u00d73")
    # and a name that is not UTF-8 (os.fsdecode's surrogates) still makes
    # text a page can hold
    record = imgstat.stats(a).to_dict()
    record["file"] = "bad\udcff<name>"
    text = imgstat.Stats(record)._repr_html_()
    text.encode("utf-8")
    assert "bad\ufffd&lt;name&gt;" in text


def test_dataset_figures_against_numpy(tmp_path):
    rng = np.random.default_rng(10)
    arrays = {}
    for k in range(3):
        a = rng.integers(0, 250, (10 + k, 14, 3), dtype=np.uint8)
        arrays[f"img{k}.npy"] = a
    arrays[NASTY + ".npy"] = np.full((4, 5, 3), 255, dtype=np.uint8)
    for name, a in arrays.items():
        np.save(tmp_path / name, a)
    np.save(tmp_path / "gray.npy", np.zeros((5, 5), dtype=np.uint8))
    (tmp_path / ("broken " + NASTY + ".npy")).write_bytes(b"\x93NUMPY nope")
    d = imgstat.dataset(tmp_path, histogram=True, errors="record")
    text = d._repr_html_()
    assert "<script" not in text and "<b>" not in text
    page = check_safe(text)
    check_accessible(page)
    (table,) = page.tables
    assert table["caption"].startswith("imgstat.Dataset: 5 images, 4 pooled")
    rows = by_channel(table)
    assert list(rows) == ["R", "G", "B"]
    for c, name in enumerate(rows):
        pooled = np.concatenate([a[:, :, c].reshape(-1)
                                 for a in arrays.values()]).astype(np.int64)
        row = rows[name]
        check_figure(row["count"], pooled.size, exact=True)
        check_figure(row["min"], pooled.min(), exact=True)
        check_figure(row["max"], pooled.max(), exact=True)
        check_figure(row["mean"], pooled.mean())
        check_figure(row["std"], pooled.std())
        check_figure(row["median"], rank(pooled, 50), exact=True)
        # the one file holding 255, named escaped in the maximum's title
        assert row["max"]["attrs"]["title"] == (
            f"255 in {tmp_path / (NASTY + '.npy')} at (0, 0)")
        check_histogram(page.svgs[c], pooled, name)
    # the constants with every digit, to copy
    consts = [t for _, t in page.texts if t.startswith("Constants:")]
    assert consts == [f"Constants: mean={d.mean!r}, std={d.std!r}"]
    items = [t for tag, t in page.texts if tag == "li"]
    assert f"{tmp_path / 'gray.npy'}: " in " ".join(items)
    broken = str(tmp_path / ("broken " + NASTY + ".npy"))
    assert any(t.startswith(broken + ": ") for t in items), items


def test_dataset_without_histogram_says_so(tmp_path):
    np.save(tmp_path / "a.npy", np.ones((3, 3), dtype=np.uint8))
    page = check_safe(imgstat.dataset(tmp_path)._repr_html_())
    assert not page.svgs
    assert any("No histogram" in t for _, t in page.texts)


def many_bands(n=200, bins=256):
    """A Stats record of n 16-bit bands (numpy's figures of random planes,
    each with its histogram), as imgstat.Stats takes a record; the
    planes."""
    rng = np.random.default_rng(11)
    planes = rng.integers(0, 65536, (n, 6, 7), dtype=np.uint16)
    stats = []
    for b, p in enumerate(planes):
        v = p.reshape(-1).astype(np.int64)
        counts = np.bincount(v * bins // 65536, minlength=bins)
        stats.append({"channel": f"B{b + 1}", "count": v.size,
                      "min": int(v.min()), "max": int(v.max()),
                      "sum": int(v.sum()), "sum_sq": int((v * v).sum()),
                      "mean": float(v.mean()), "std": float(v.std()),
                      "histogram": {"bins": bins, "lo": 0, "hi": 65535,
                                    "counts": counts.tolist()}})
    record = {"file": "bands.tif", "width": 7, "height": 6, "channels": n,
              "depth": 16, "backend": "cpu", "ddof": 0, "stats": stats}
    return record, planes


def test_many_bands_bounded():
    from imgstat import _html

    record, planes = many_bands(200, 65536)
    text = imgstat.Stats(record)._repr_html_()
    page = check_safe(text)
    check_accessible(page)
    rows = by_channel(page.tables[0])
    assert len(rows) == 200  # the table has every band
    for b, p in enumerate(planes):
        row = rows[f"B{b + 1}"]
        check_figure(row["max"], int(p.max()), exact=True)
        check_figure(row["mean"], p.astype(np.int64).mean())
    # histograms of the first few only, saying so
    assert len(page.svgs) == _html.MAX_PLOTS < 200
    assert [s["title"] for s in page.svgs] == [
        f"Histogram of channel B{b + 1}" for b in range(_html.MAX_PLOTS)]
    assert any(f"first {_html.MAX_PLOTS} of 200 channels" in t
               for _, t in page.texts)
    # 65536 bins drawn in a bounded number of bars
    for svg in page.svgs:
        assert svg["paths"][0]["d"].count("H") <= _html.COLUMNS
    assert len(text) < 100_000, len(text)

    dataset = imgstat.Dataset({"dataset": {
        "images": 3, "pooled": 3, "failed": 0, "channels": 200,
        "stats": record["stats"],
        "excluded": [{"file": f"x{k}.tif", "reason": "other bands"}
                     for k in range(5000)]}}, [])
    text = dataset._repr_html_()
    page = check_safe(text)
    assert len(page.tables[0]["rows"]) == 200
    assert len(page.svgs) == _html.MAX_PLOTS
    assert len([t for tag, t in page.texts if tag == "li"]) == _html.MAX_LIST
    assert any(f"{5000 - _html.MAX_LIST} more in d.excluded" in t
               for _, t in page.texts)
    assert not page.tables[0]["caption"].count("Constants")
    assert len(text) < 100_000, len(text)


def test_many_labels_bounded():
    from imgstat import _html

    record, _ = many_bands(3)
    record["labels"] = [{"label": k + 1, "pixels": 1,
                         "stats": record["stats"]} for k in range(1000)]
    text = imgstat.Stats(record)._repr_html_()
    page = check_safe(text)
    (table,) = [t for t in page.tables if t["caption"] == "Labels"]
    assert len(table["rows"]) <= _html.MAX_LABEL_ROWS
    shown = len(table["rows"]) // 3
    assert any(f"first {shown} of 1000 labels" in t for _, t in page.texts)
    assert len(text) < 100_000, len(text)


# ---- Dataset.report: the command line's --report page


def normalized_page(text):
    """A report page without what differs from run to run: the command line
    (the program's words, or the Python call), when it started and how
    long it took."""
    text = re.sub(r'<code id="command-line">.*?</code>',
                  '<code id="command-line"></code>', text, flags=re.S)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "TIME", text)
    return re.sub(r"\d+\.\d{3} s<", "SECONDS<", text)


def test_dataset_report_is_the_command_line_page(tmp_path, cli):
    import subprocess

    rng = np.random.default_rng(12)
    folder = tmp_path / "in"
    folder.mkdir()
    for k in range(6):
        np.save(folder / f"img{k}.npy",
                rng.integers(0, 256, (8 + k, 9, 3), dtype=np.uint8))
    np.save(folder / "black.npy", np.zeros((8, 9, 3), dtype=np.uint8))
    np.save(folder / (NASTY + ".npy"), np.zeros((4, 4), dtype=np.uint8))
    (folder / "broken.npy").write_bytes(b"\x93NUMPY nope")
    d = imgstat.dataset(str(folder), errors="record", percentiles=[5, 95])
    page = tmp_path / "page.html"
    assert d.report(page) is None
    cli_page = tmp_path / "cli.html"
    run = subprocess.run([cli, "--dataset-only", "--percentiles", "5,95",
                          "--report", str(cli_page), str(folder)],
                         capture_output=True, text=True)
    assert run.returncode == 1, run.stderr  # the broken file failed
    got, want = page.read_text(), cli_page.read_text()
    assert normalized_page(got) == normalized_page(want)
    # the page names the Python call, escaped as the page escapes
    m = re.search(r'<code id="command-line">(.*?)</code>', got, re.S)
    assert m and m.group(1).startswith("imgstat.dataset(")
    assert "errors=&#39;record&#39;" in m.group(1) or \
        "errors=&#x27;record&#x27;" in m.group(1), m.group(1)
    assert sorted(os.listdir(tmp_path)) == ["cli.html", "in", "page.html"]


def test_dataset_report_refusals(tmp_path):
    np.save(tmp_path / "a.npy", np.ones((3, 3), dtype=np.uint8))
    d = imgstat.dataset(tmp_path / "a.npy")
    with pytest.raises(ValueError, match="input"):
        d.report(tmp_path / "a.npy")  # the page would replace an input
    assert np.load(tmp_path / "a.npy").sum() == 9
    with pytest.raises(OSError, match="nowhere"):
        d.report(tmp_path / "nowhere" / "page.html")
    with pytest.raises(ValueError, match="imgstat.dataset"):
        imgstat.Dataset(d.to_dict(), []).report(tmp_path / "page.html")
    assert os.listdir(tmp_path) == ["a.npy"]
