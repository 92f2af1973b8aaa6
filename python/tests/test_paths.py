"""Paths and messages across the boundary: names that are not UTF-8 and
header bytes quoted in messages come back to Python as os.fsdecode gives
them (surrogateescape), so os.fsencode gives back the same bytes, errors
stay ImageError and one bad file does not stop a run; a path with a NUL is
refused with ValueError (as open() does) instead of being cut at it. str,
bytes and os.PathLike paths are taken alike (stats: bytes are an image's
bytes, a PathLike is a path)."""

import os

import numpy as np
import pytest

import imgstat

# An 11-byte PGM whose width is the byte 0xEA: the message quotes it.
BAD_WIDTH = b"P5\n\xea 1\n255\n"


class BytesPath:
    """An os.PathLike whose path is bytes."""

    def __init__(self, path):
        self.path = path

    def __fspath__(self):
        return self.path


def pgm(a):
    """A binary PGM of a 2-D uint8 array, written by hand."""
    h, w = a.shape
    return b"P5\n%d %d\n255\n" % (w, h) + a.tobytes()


def ppm(a):
    """A binary PPM of an HxWx3 uint8 array, written by hand."""
    h, w, _ = a.shape
    return b"P6\n%d %d\n255\n" % (w, h) + a.tobytes()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


@pytest.fixture
def folder(tmp_path):
    """A folder (its path as bytes) holding, in the walk's byte order, a
    PGM whose header quotes a non-UTF-8 byte under a non-UTF-8 name, a
    valid gray PGM and a valid RGB PPM, both under non-UTF-8 names; and the
    gray image's array."""
    root = os.fsencode(tmp_path) + b"/d"
    os.mkdir(root)
    gray = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    write(root + b"/bad\xff.pgm", BAD_WIDTH)
    write(root + b"/good\xfe.pgm", pgm(gray))
    rgb = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    write(root + b"/rgb\xfd.ppm", ppm(rgb))
    return root, gray


def test_header_byte_quoted_in_an_image_error(tmp_path):
    path = tmp_path / "w.pgm"
    path.write_bytes(BAD_WIDTH)
    assert len(BAD_WIDTH) == 11
    with pytest.raises(imgstat.ImageError) as e:
        imgstat.stats(path)
    assert e.value.status == "format"
    assert e.value.path == str(path)
    assert b'"\xea"' in os.fsencode(e.value.message)
    assert "\udcea" in str(e.value)
    with pytest.raises(imgstat.ImageError) as e:
        imgstat.stats(path.read_bytes())
    assert e.value.path == "<bytes>"
    assert b'"\xea"' in os.fsencode(e.value.message)


def test_failing_file_named_in_bytes_round_trips(tmp_path):
    name = os.fsencode(tmp_path) + b"/bad\xff.pgm"
    write(name, BAD_WIDTH)
    for given in (os.fsdecode(name), BytesPath(name)):
        with pytest.raises(imgstat.ImageError) as e:
            imgstat.stats(given)
        assert os.fsencode(e.value.path) == name
        assert b"\xea" in os.fsencode(e.value.message)
        assert e.value.to_dict()["file"] == e.value.path
    missing = os.fsencode(tmp_path) + b"/missing\xff.png"
    with pytest.raises(imgstat.ImageError) as e:
        imgstat.stats(os.fsdecode(missing))
    assert e.value.status == "io"
    assert os.fsencode(e.value.path) == missing


def test_valid_image_with_a_non_utf8_name(folder):
    root, gray = folder
    name = root + b"/good\xfe.pgm"
    for given in (os.fsdecode(name), BytesPath(name)):
        s = imgstat.stats(given)
        assert os.fsencode(s.file) == name
        assert os.fsencode(s.to_dict()["file"]) == name
        assert s.mean == (gray.mean(),)
        assert s.sum == (int(gray.sum()),)
    good = [r for r in imgstat.scan(name)]
    assert [os.fsencode(r.file) for r in good] == [name]
    assert good[0].mean == (gray.mean(),)


def test_scan_goes_past_such_files(folder):
    root, gray = folder
    names = [root + b"/bad\xff.pgm", root + b"/good\xfe.pgm",
             root + b"/rgb\xfd.ppm"]
    for given in (os.fsdecode(root), root, BytesPath(root), [root]):
        got = list(imgstat.scan(given, errors="skip"))
        assert [os.fsencode(r.file) for r in got] == names[1:]
        assert got[0].mean == (gray.mean(),)
        got = list(imgstat.scan(given, errors="record"))
        assert [os.fsencode(r.path if isinstance(r, imgstat.ImageError)
                            else r.file) for r in got] == names
        assert isinstance(got[0], imgstat.ImageError)
        assert got[0].status == "format"
        assert b'"\xea"' in os.fsencode(got[0].message)
    with pytest.raises(imgstat.ImageError) as e:
        list(imgstat.scan(root))
    assert os.fsencode(e.value.path) == names[0]


def test_dataset_goes_past_such_files(folder, tmp_path):
    root, gray = folder
    # one gray, one RGB: the tie goes to more channels, whatever the order
    d = imgstat.dataset(os.fsdecode(root), as_="keep", errors="record")
    rgb = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    assert d.images == 2 and d.pooled == 1
    assert d.mean == tuple(rgb.reshape(-1, 3).mean(axis=0))
    assert [os.fsencode(f.path) for f in d.failures] == [
        root + b"/bad\xff.pgm"]
    assert b"\xea" in os.fsencode(d.failures[0].message)
    assert [os.fsencode(x["file"]) for x in d.excluded] == [
        root + b"/good\xfe.pgm"]
    ch = d.to_dict()["dataset"]["stats"][0]
    assert os.fsencode(ch["min_file"]) == root + b"/rgb\xfd.ppm"
    assert os.fsencode(ch["max_file"]) == root + b"/rgb\xfd.ppm"
    other = os.fsencode(tmp_path) + b"/e\xfc"
    os.rename(root, other)
    d = imgstat.dataset([other], as_="keep", errors="record")
    assert [os.fsencode(f.path) for f in d.failures] == [
        other + b"/bad\xff.pgm"]
    assert [os.fsencode(x["file"]) for x in d.excluded] == [
        other + b"/good\xfe.pgm"]


def test_normalize_files_goes_past_such_files(folder, tmp_path):
    root, gray = folder
    names = [root + b"/bad\xff.pgm", root + b"/good\xfe.pgm",
             root + b"/rgb\xfd.ppm"]
    base = os.fsencode(tmp_path)
    # str paths, then bytes and os.PathLike ones (a folder not UTF-8)
    for given, out in ((os.fsdecode(root), os.fsdecode(base + b"/out")),
                       (root, base + b"/out\xfb"),
                       (BytesPath(root), BytesPath(base + b"/out\xfa"))):
        outputs = [os.fsencode(out) + b"/good\xfe.png",
                   os.fsencode(out) + b"/rgb\xfd.png"]
        done = imgstat.normalize_files(given, out, errors="skip")
        assert [os.fsencode(f.input) for f in done] == names[1:]
        assert [os.fsencode(f.output) for f in done] == outputs
        assert all(os.path.isfile(p) for p in outputs)
        for p in outputs:
            os.remove(p)
        done = imgstat.normalize_files(given, out, errors="record")
        assert isinstance(done[0], imgstat.ImageError)
        assert os.fsencode(done[0].path) == names[0]
        assert b'"\xea"' in os.fsencode(done[0].message)
        assert [os.fsencode(f.output) for f in done[1:]] == outputs
        for p in outputs:
            os.remove(p)
        with pytest.raises(imgstat.ImageError) as e:
            imgstat.normalize_files(given, out)
        assert os.fsencode(e.value.path) == names[0]


def test_nul_in_a_path_is_refused(folder, tmp_path):
    root, gray = folder
    real = str(tmp_path / "real.pgm")
    write(real, pgm(gray))
    imgstat.stats(real)
    cut = real + "\x00-other.png"
    for bad in (cut, os.fsencode(cut), BytesPath(os.fsencode(cut))):
        if not isinstance(bad, bytes):  # bytes are an image's bytes
            with pytest.raises(ValueError, match="embedded null byte"):
                imgstat.stats(bad)
        with pytest.raises(ValueError, match="embedded null byte"):
            imgstat.scan(bad)
        with pytest.raises(ValueError, match="embedded null byte"):
            imgstat.scan([real, bad])
        with pytest.raises(ValueError, match="embedded null byte"):
            imgstat.scan([real], files_from=[bad])
        with pytest.raises(ValueError, match="embedded null byte"):
            imgstat.dataset([bad])
        out = os.fsencode(tmp_path) + b"/out"
        with pytest.raises(ValueError, match="embedded null byte"):
            imgstat.normalize_files([bad], out)
        with pytest.raises(ValueError, match="embedded null byte"):
            imgstat.normalize_files(real, out + b"/x.png\x00.npy")
        with pytest.raises(ValueError, match="embedded null byte"):
            imgstat.normalize_files(real, os.fsdecode(out) + "/x.png\x00.npy")
        assert not os.path.exists(out)


def test_path_types(folder):
    root, _ = folder
    with pytest.raises(TypeError):
        imgstat.scan([root, 3])
    with pytest.raises(TypeError):
        imgstat.normalize_files(root, 3)
    with pytest.raises(ValueError):
        imgstat.scan(b"-")
