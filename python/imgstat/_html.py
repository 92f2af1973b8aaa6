"""The HTML a notebook shows for a Stats or a Dataset (their
``_repr_html_``): a table of the per-channel figures and a small inline SVG
histogram per channel where the record holds histograms.

Self-contained: no script, no external stylesheet, font or image, no URL.
The colours are the notebook's own (``currentColor``, JupyterLab's CSS
variables with neutral fallbacks), so light and dark themes both read it;
the table has a caption and scoped headers, each plot a <title> and a
<desc> saying what it shows. Every text from the record (file names,
channel names, reasons) is escaped. The size is bounded whatever the
record holds: at most MAX_ROWS channel rows, MAX_PLOTS plots, MAX_LABEL_ROWS
rows of label figures and MAX_LIST entries of each list (excluded,
outliers, failures), each cut saying what was left out and where it all is
(``to_dict()``).
"""

from __future__ import annotations

import html
import itertools
import math
from typing import Any, Iterable, List, Optional

MAX_ROWS = 256  # channel rows of a table
MAX_PLOTS = 8  # histograms drawn (the first channels')
MAX_LABEL_ROWS = 64  # rows (label, channel) of the labels' table
MAX_LIST = 10  # entries shown of excluded, outliers, failures
COLUMNS = 128  # a histogram's bars at most (adjacent bins summed)
PLOT_W, PLOT_H = 192, 48  # a plot's size in CSS pixels

_ids = itertools.count(1)

# Scoped to the output's own class; inherits the notebook's colours and
# font. JupyterLab's variables where they exist, else a grey that reads on
# a light and on a dark background alike.
_STYLE = (
    "<style>"
    ".imgstat-repr{color:inherit;background:transparent;"
    "font-size:var(--jp-content-font-size1,13px);line-height:1.35}"
    ".imgstat-repr table{border-collapse:collapse;margin:2px 0 6px 0;"
    "color:inherit;background:transparent}"
    ".imgstat-repr caption{text-align:left;font-weight:600;"
    "padding:0 0 3px 0}"
    ".imgstat-repr th,.imgstat-repr td{padding:1px 8px;text-align:right;"
    "white-space:nowrap;color:inherit;background:transparent;"
    "border-bottom:1px solid var(--jp-border-color2,rgba(128,128,128,.4))}"
    ".imgstat-repr thead th{border-bottom-width:2px}"
    ".imgstat-repr th[scope=row]{text-align:left}"
    ".imgstat-repr figure{display:inline-block;margin:0 12px 4px 0}"
    ".imgstat-repr figcaption{font-size:smaller;opacity:.85}"
    ".imgstat-repr svg{display:block;color:inherit}"
    ".imgstat-repr p{margin:2px 0}"
    ".imgstat-repr .imgstat-note{font-size:smaller;opacity:.85}"
    ".imgstat-repr code{color:inherit;background:transparent;"
    "white-space:pre-wrap}"
    "</style>")


def _text(value: Any) -> str:
    """value as HTML text: escaped (quotes too, so it also fits in an
    attribute), a name's undecodable bytes (os.fsdecode's surrogates)
    shown as U+FFFD."""
    s = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch
                for ch in str(value))
    return html.escape(s, quote=True)


def _full(v: Any) -> str:
    """A figure as the record has it (every digit: what to copy)."""
    if v is None:
        return "none"
    return repr(v) if isinstance(v, float) else str(v)


def _short(v: Any) -> str:
    """A figure for the table: integers whole, others to 6 significant
    digits."""
    if v is None:
        return "\u2014"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format(v, ".6g")
    return str(v)


def _cell(v: Any, where: str = "") -> str:
    """A <td> of a figure: the short form shown, every digit (and where
    it is, for an extremum) in its title."""
    title = _full(v) + (f" {where}" if where else "")
    return f'<td title="{_text(title)}">{_text(_short(v))}</td>'


def _note(text: str) -> str:
    return f'<p class="imgstat-note">{text}</p>'


def _pct_key(key: str) -> float:
    try:
        return float(key)
    except ValueError:
        return math.inf


def _channel_columns(channels: List[dict]) -> list:
    """The columns a table of these channels' figures has: (key, header),
    the percentiles' as ("percentiles", p). Optional ones only when some
    channel has them."""
    cols = [("count", "count"), ("min", "min"), ("max", "max"),
            ("mean", "mean"), ("std", "std")]
    for key in ("nodata_count", "nan_count", "inf_count", "median"):
        if any(key in c for c in channels):
            cols.append((key, {"nodata_count": "nodata",
                               "nan_count": "NaN",
                               "inf_count": "\u00b1inf"}.get(key, key)))
    pcts: list = []
    for c in channels:
        for p in c.get("percentiles") or {}:
            if p not in pcts:
                pcts.append(p)
    for p in sorted(pcts, key=_pct_key):
        cols.append((("percentiles", p), f"p{p}"))
    return cols


def _where(c: dict, key: str) -> str:
    """Where a channel's minimum or maximum is ("at (x, y)", with the
    file's name in a pooled record)."""
    if f"{key}_x" not in c:
        return ""
    at = f"at ({c[f'{key}_x']}, {c[f'{key}_y']})"
    f = c.get(f"{key}_file")
    return f"in {f} {at}" if f is not None else at


def _value(c: dict, key: Any) -> Any:
    if isinstance(key, tuple):
        return (c.get(key[0]) or {}).get(key[1])
    return c.get(key)


def _channels_table(caption: str, channels: List[dict]) -> str:
    cols = _channel_columns(channels)
    out = ["<table>", f"<caption>{caption}</caption>", "<thead><tr>",
           '<th scope="col">channel</th>']
    out += [f'<th scope="col">{_text(h)}</th>' for _, h in cols]
    out.append("</tr></thead><tbody>")
    for i, c in enumerate(channels[:MAX_ROWS]):
        out.append(f'<tr><th scope="row">{_text(c.get("channel", i))}</th>')
        for key, _ in cols:
            where = _where(c, key) if key in ("min", "max") else ""
            out.append(_cell(_value(c, key), where))
        out.append("</tr>")
    out.append("</tbody></table>")
    if len(channels) > MAX_ROWS:
        out.append(_note(f"The first {MAX_ROWS} of {len(channels)} channels "
                         "are shown; to_dict() holds them all."))
    return "".join(out)


def _bars(counts: List[int]) -> tuple:
    """counts summed into at most COLUMNS bars of adjacent bins: (the
    bars, bins per bar)."""
    per = max(1, -(-len(counts) // COLUMNS))
    return [sum(counts[i:i + per]) for i in range(0, len(counts), per)], per


def _bin_range(h: dict, i: int) -> str:
    """The values bin i of histogram h holds, as text."""
    lo, hi, bins = h.get("lo"), h.get("hi"), h.get("bins")
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)) \
            or not bins:
        return f"bin {i}"
    if isinstance(lo, int) and isinstance(hi, int) and hi - lo + 1 == bins:
        return f"{lo + i}"  # one integer value a bin
    width = (hi - lo) / bins
    return f"{_short(lo + i * width)} to {_short(lo + (i + 1) * width)}"


def _plot(name: str, h: dict) -> str:
    """A figure: the histogram h of channel name as a small SVG, its
    <title> and <desc> (the text alternative) saying what it shows."""
    counts = [int(n) for n in h.get("counts") or []]
    total = sum(counts)
    bars, per = _bars(counts)
    top = max(bars) if bars else 0
    n = next(_ids)
    tid, did = f"imgstat-h{n}-t", f"imgstat-h{n}-d"
    lo, hi = h.get("lo"), h.get("hi")
    peak = counts.index(max(counts)) if counts and total else None
    desc = (f"Histogram of channel {name}: {len(counts)} bins from "
            f"{_short(lo)} to {_short(hi)} holding {total} samples")
    if peak is not None:
        desc += (f"; the tallest bin holds {counts[peak]} samples, "
                 f"values {_bin_range(h, peak)}")
    desc += (f". Drawn as {len(bars)} bars of {per} bin"
             f"{'s' if per != 1 else ''} each, heights linear in the count.")
    path = []  # the bars' outline, a step from the baseline and back
    if top:
        w = PLOT_W / len(bars)
        path.append(f"M0 {PLOT_H}")
        for i, b in enumerate(bars):
            y = PLOT_H - max(0.5, PLOT_H * b / top) if b else PLOT_H
            path.append(f"V{y:.1f}H{(i + 1) * w:.1f}".replace(".0H", "H"))
        path.append(f"V{PLOT_H}Z")
    svg = (f'<svg width="{PLOT_W}" height="{PLOT_H + 1}" '
           f'viewBox="0 0 {PLOT_W} {PLOT_H + 1}" role="img" '
           f'aria-labelledby="{tid} {did}">'
           f'<title id="{tid}">Histogram of channel {_text(name)}</title>'
           f'<desc id="{did}">{_text(desc)}</desc>'
           f'<path d="{"".join(path)}" fill="currentColor" '
           f'fill-opacity="0.75"/>'
           f'<line x1="0" y1="{PLOT_H + 0.5}" x2="{PLOT_W}" '
           f'y2="{PLOT_H + 0.5}" stroke="currentColor" stroke-opacity="0.5"'
           f' stroke-width="1"/></svg>')
    caption = f"{_text(name)}: {_text(_short(lo))} \u2013 {_text(_short(hi))}"
    return f"<figure>{svg}<figcaption>{caption}</figcaption></figure>"


def _plots(channels: List[dict], how: str) -> str:
    """The channels' histograms (the first MAX_PLOTS), or a line saying
    there are none and how to have them."""
    held = [(c.get("channel", i), c["histogram"])
            for i, c in enumerate(channels)
            if isinstance(c.get("histogram"), dict)]
    if not held:
        return _note(f"No histogram in this record: {how} adds one.")
    out = ["<div>"] + [_plot(str(name), h) for name, h in held[:MAX_PLOTS]]
    out.append("</div>")
    if len(held) > MAX_PLOTS:
        out.append(_note(f"Histograms of the first {MAX_PLOTS} of "
                         f"{len(held)} channels are drawn; to_dict() holds "
                         "them all."))
    return "".join(out)


def _labels_table(labels: List[dict]) -> str:
    """The figures of each label's samples: a row per (label, channel)."""
    out = ["<table>", "<caption>Labels</caption><thead><tr>",
           '<th scope="col">label</th><th scope="col">pixels</th>',
           '<th scope="col">channel</th>']
    cols = [("count", "count"), ("min", "min"), ("max", "max"),
            ("mean", "mean"), ("std", "std")]
    out += [f'<th scope="col">{h}</th>' for _, h in cols]
    out.append("</tr></thead><tbody>")
    rows = 0
    shown = 0
    for lab in labels:
        chans = lab.get("stats") or []
        if rows + max(1, len(chans)) > MAX_LABEL_ROWS and shown:
            break
        shown += 1
        for j, c in enumerate(chans[:MAX_LABEL_ROWS - rows] or [{}]):
            rows += 1
            head = (f'<th scope="row">{_text(lab.get("label"))}</th>'
                    f'<td>{_text(_short(lab.get("pixels")))}</td>'
                    if j == 0 else "<td></td><td></td>")
            out.append(f"<tr>{head}<td>{_text(c.get('channel', j))}</td>")
            out += [_cell(c.get(k)) for k, _ in cols]
            out.append("</tr>")
    out.append("</tbody></table>")
    if shown < len(labels):
        out.append(_note(f"The first {shown} of {len(labels)} labels are "
                         "shown; to_dict() holds them all."))
    return "".join(out)


def _list(title: str, items: Iterable[Any], total: int, text: Any,
          where: str) -> str:
    """A titled list of the first MAX_LIST items (text(item) -> escaped
    HTML each) and how many more there are (all of them in where)."""
    shown = list(itertools.islice(items, MAX_LIST))
    if not total:
        return ""
    out = [f"<p>{_text(title)}: {total}</p><ul>"]
    out += [f"<li>{text(item)}</li>" for item in shown]
    out.append("</ul>")
    if total > len(shown):
        out.append(_note(f"{total - len(shown)} more in {_text(where)}."))
    return "".join(out)


def _wrap(parts: List[str]) -> str:
    return ('<div class="imgstat-repr">' + _STYLE + "".join(parts) +
            "</div>")


def stats_html(s: Any) -> str:
    """The HTML of a Stats (its _repr_html_)."""
    r = s._record
    chans = r.get("stats") or []
    head = (f"imgstat.Stats: {_text(r.get('file'))} \u2014 "
            f"{_text(r.get('width'))}\u00d7{_text(r.get('height'))}, "
            f"{_text(r.get('channels'))} channel"
            f"{'s' if r.get('channels') != 1 else ''}, "
            f"{_text(r.get('depth'))}-bit")
    extra = []
    if r.get("pages", 1) != 1:
        extra.append(f"page {_text(r.get('page'))} of {_text(r['pages'])}")
    for key in ("backend", "decoder"):
        if r.get(key):
            extra.append(f"{key} {_text(r[key])}")
    if "mask_pixels" in r:
        extra.append(f"mask {_text(r['mask_pixels'])} pixels")
    if extra:
        head += " (" + ", ".join(extra) + ")"
    parts = [_channels_table(head, chans)]
    if r.get("labels"):
        parts.append(_labels_table(r["labels"]))
    parts.append(_plots(chans, "histogram=True (or percentiles=)"))
    warnings = r.get("warnings") or []
    if warnings:
        parts.append(_list("Decoder warnings", iter(warnings), len(warnings),
                           _text, "to_dict()['warnings']"))
    return _wrap(parts)


def _mean_std_line(mean: tuple, std: tuple) -> str:
    """The pooled mean and std with every digit, to copy."""
    if len(mean) > 16:
        return ""
    return ("<p>Constants: <code>mean=" + _text(repr(tuple(mean))) +
            ", std=" + _text(repr(tuple(std))) + "</code></p>")


def dataset_html(d: Any) -> str:
    """The HTML of a Dataset (its _repr_html_)."""
    rec = d._record.get("dataset", {})
    chans = rec.get("stats") or []
    failures = list(d.failures)
    n = rec.get("images", 0)
    head = (f"imgstat.Dataset: {_text(n)} image{'s' if n != 1 else ''}, "
            f"{_text(rec.get('pooled', 0))} pooled, "
            f"{_text(rec.get('failed', len(failures)))} failed")
    desc = [f"{_text(rec[k])}" for k in ("layout",) if rec.get(k)]
    if rec.get("depth"):
        desc.append(f"{_text(rec['depth'])}-bit")
    if rec.get("scale"):
        desc.append(f"scale {_text(rec['scale'])}")
    if rec.get("sample"):
        desc.append(f"sample {_text(rec['sample'])}")
    if desc:
        head += " (" + ", ".join(desc) + ")"
    parts = [_channels_table(head, chans)]
    parts.append(_mean_std_line(d.mean, d.std))
    parts.append(_plots(chans, "histogram=True (or percentiles=)"))
    for key in ("depth_note", "histogram_note"):
        if rec.get(key):
            parts.append(_note(f"Note: {_text(rec[key])}"))

    def file_reason(e: dict) -> str:
        return (f"<code>{_text(e.get('file'))}</code>: "
                f"{_text(e.get('reason', ''))}")

    excluded = rec.get("excluded") or []
    outliers = rec.get("outliers") or []
    parts.append(_list("Left out", iter(excluded), len(excluded),
                       file_reason, "d.excluded"))
    parts.append(_list("Outliers", iter(outliers), len(outliers),
                       file_reason, "d.outliers"))
    parts.append(_list("Failed", iter(failures), len(failures),
                       lambda e: (f"<code>{_text(e.path)}</code>: "
                                  f"{_text(e.message)}"), "d.failures"))
    return _wrap(parts)
