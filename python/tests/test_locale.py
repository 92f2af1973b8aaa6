"""The package after locale.setlocale(LC_ALL, ...) with a locale whose
decimal point is a comma (de_DE, made with localedef in a private folder
when the system has none): FITS cards and the PFM scale read as in the C
locale, records that json.loads reads (scan, dataset), percentile keys with
a point; the values worked out by hand. Skips, saying why, when no such
locale can be made."""

import locale
import os
import shutil
import struct
import subprocess

import pytest

import imgstat


def _fits(path, bitpix, cards, data):
    """A FITS file of 2 x 2 samples with the extra cards given."""
    head = ["SIMPLE  =                    T",
            "BITPIX  = %20d" % bitpix,
            "NAXIS   =                    2",
            "NAXIS1  =                    2",
            "NAXIS2  =                    2"] + cards + ["END"]
    text = "".join("%-80s" % c for c in head).encode("ascii")
    text += b" " * (-len(text) % 2880)
    data += b"\0" * (-len(data) % 2880)
    path.write_bytes(text + data)
    return str(path)


def _set_comma_locale(folder):
    """Sets a locale whose decimal point is a comma; returns its name, or
    None (the locale given back to C) when none can be set."""
    names = ("de_DE.UTF-8", "de_DE.utf8")
    for attempt in range(2):
        for name in names:
            try:
                locale.setlocale(locale.LC_ALL, name)
            except locale.Error:
                continue
            if locale.localeconv()["decimal_point"] == ",":
                return name
        if attempt == 0:  # make one, once
            folder.mkdir()
            try:
                subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8",
                                str(folder / names[0])],
                               capture_output=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired):
                break
            os.environ["LOCPATH"] = str(folder)
    locale.setlocale(locale.LC_ALL, "C")
    return None


@pytest.fixture
def comma_locale(tmp_path):
    saved = locale.setlocale(locale.LC_ALL)
    saved_locpath = os.environ.get("LOCPATH")
    folder = tmp_path / "locale"
    name = _set_comma_locale(folder)
    try:
        if name is None:
            pytest.skip("no locale with a decimal comma (localedef -i de_DE "
                        "failed: the Debian package locales provides it)")
        yield name
    finally:
        # LOCPATH first: the saved locale's parts (en_US.UTF-8, say) are not
        # in the private folder, and setlocale looks there while it is set.
        if saved_locpath is None:
            os.environ.pop("LOCPATH", None)
        else:
            os.environ["LOCPATH"] = saved_locpath
        locale.setlocale(locale.LC_ALL, saved)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def files(tmp_path):
    """(path, min, max, mean) of a FITS with BSCALE 2.5 / BZERO 10.5, one
    with BSCALE 0.5 / BZERO 1.05D1 and a PFM, in one folder."""
    d = tmp_path / "images"
    d.mkdir()
    scaled = _fits(d / "a.fits", 8, ["BSCALE  =                  2.5",
                                     "BZERO   =                 10.5"],
                   bytes([0, 1, 2, 3]))  # 10.5, 13, 15.5, 18
    half = _fits(d / "b.fits", 16, ["BSCALE  =                  0.5",
                                    "BZERO   =               1.05D1"],
                 struct.pack(">4h", 1, 2, 3, 4))  # 11, 11.5, 12, 12.5
    pfm = d / "c.pfm"  # gray, little-endian: 1.5, 2.25
    pfm.write_bytes(b"Pf\n2 1\n-1.0\n" + struct.pack("<2f", 1.5, 2.25))
    return d, [(scaled, 10.5, 18, 14.25), (half, 11, 12.5, 11.75),
               (str(pfm), 1.5, 2.25, 1.875)]


def test_stats(comma_locale, files):
    _, want = files
    for path, lo, hi, mean in want:
        s = imgstat.stats(path, histogram=True, percentiles=[12.5, 50])
        assert (s.min, s.max, s.mean) == ((lo,), (hi,), (mean,)), path
        assert list(s.to_dict()["stats"][0]["percentiles"]) == ["12.5", "50"]
    with open(want[0][0], "rb") as f:
        assert imgstat.stats(f.read()).mean == (14.25,)
    assert locale.localeconv()["decimal_point"] == ","  # left as it was


def test_scan_and_dataset(comma_locale, files):
    folder, want = files
    got = list(imgstat.scan([folder], percentiles=[12.5]))
    assert [(r.file, r.min, r.max, r.mean) for r in got] == [
        (p, (lo,), (hi,), (m,)) for p, lo, hi, m in want]
    for r in got:
        assert list(r.to_dict()["stats"][0]["percentiles"]) == ["12.5"]
    d = imgstat.dataset(folder, histogram=True, percentiles=[12.5])
    assert d.count == (10,)
    assert d.mean == (pytest.approx((57 + 47 + 3.75) / 10, rel=1e-12),)
    assert list(d.to_dict()["dataset"]["stats"][0]["percentiles"]) == ["12.5"]
