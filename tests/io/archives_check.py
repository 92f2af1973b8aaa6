"""Archives read in place (docs/archives.md): tar (plain, gzip, xz), zip and
a shard without extension (found by its signature) given like folders, as
arguments and in --files-from lists, written here by Python's tarfile and
zipfile in the WebDataset form (key.png / key.jpg beside key.cls and
key.json).

- Each member's record against numpy over PIL's pixels, named
  ARCHIVE/MEMBER; the other members skipped.
- The per-image records and the pooled --dataset record over the shards are
  byte for byte those of the folder the shards extract to (tarfile,
  zipfile), but for the names; the same through a list of the shards, and
  under `mpirun -np 2 --mpi` when MPIRUN is set.
- Bad members and archives: a name that leads out ("../x.png",
  "/x.png"), a symbolic and a hard link, a directory, a duplicate name, a
  header that says 1 TB, a zip bomb (its header honest, and lying), a
  damaged zip member, a truncated tar, a missing shard in a list: each refused or read with a
  message naming the archive and member, the rest of the run kept, and
  nothing written anywhere.
- normalize from archives into OUT/<archive stem>/<member path>.
- A build without libarchive refuses an archive with that reason.

usage: archives_check.py IMGSTAT TMPDIR (ctest: tests/io/formats_test.sh)"""
import io
import json
import os
import shutil
import subprocess
import tarfile
import zipfile

import numpy as np
from PIL import Image

from imgcheck import IMGSTAT, T, fail, finish, ok, path, run

rng = np.random.default_rng(38)
_, version, _ = run("--version")
if "archives: not built in" in version:
    with tarfile.open(path("a.tar"), "w") as t:
        t.addfile(tarfile.TarInfo("empty.png"), io.BytesIO(b""))
    rc, out, err = run(path("a.tar"))
    if rc != 0 and path("a.tar") in err and "without libarchive" in err:
        ok("without libarchive: an archive refused with that reason")
    else:
        fail(f"without libarchive: exit {rc}, {err.strip()!r}")
    finish()


def png_bytes(a):
    b = io.BytesIO()
    Image.fromarray(a).save(b, format="PNG")
    return b.getvalue()


def jpg_bytes(a):
    b = io.BytesIO()
    Image.fromarray(a).save(b, format="JPEG", quality=90)
    return b.getvalue()


# 18 samples, WebDataset's naming: key.png or key.jpg, key.cls, key.json;
# shard a holds 000000-000005, b 000006-000011, c 000012-000017, each in
# the byte order of the names (the extracted folder's walk order).
samples = []
for k in range(18):
    h, w = int(rng.integers(5, 40)), int(rng.integers(5, 40))
    if k % 5 == 3:
        a = rng.integers(0, 256, (h, w), dtype=np.uint8)
    else:
        a = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    key = f"{k:06d}"
    if k % 4 == 1:
        data = jpg_bytes(a)
        name = key + ".jpg"
    else:
        data = png_bytes(a)
        name = key + ".png"
    samples.append((key, name, data))


def members(lo, hi):
    out = []
    for key, name, data in samples[lo:hi]:
        out += [(key + ".cls", str(int(key) % 7).encode()), (name, data),
                (key + ".json", b'{"caption": "x"}')]
    return sorted(out)


def write_tar(name, items, mode="w"):
    with tarfile.open(path(name), mode) as t:
        for n, data in items:
            ti = tarfile.TarInfo(n)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))


write_tar("a.tar", members(0, 6))
write_tar("b.tar.gz", members(6, 12), "w:gz")
with zipfile.ZipFile(path("c.zip"), "w", zipfile.ZIP_DEFLATED) as z:
    for n, data in members(12, 18):
        z.writestr(n, data)
shards = [path("a.tar"), path("b.tar.gz"), path("c.zip")]

# the extracted folder
ex = path("ex")
os.mkdir(ex)
for s in shards[:2]:
    with tarfile.open(s) as t:
        t.extractall(ex, filter="data") if hasattr(tarfile, "data_filter") \
            else t.extractall(ex)
with zipfile.ZipFile(shards[2]) as z:
    z.extractall(ex)


def records(*args, prog=None, env=None):
    r = subprocess.run([*(prog or [IMGSTAT]), *args], capture_output=True,
                       text=True, env=env)
    return r.returncode, r.stdout, r.stderr


def strip_names(text, prefixes):
    for p in prefixes:
        text = text.replace(p, "NAME/")
    return text


# Each member against numpy over PIL's pixels.
rc, out, err = records("--json", *shards)
recs = [json.loads(x) for x in out.splitlines() if x.strip()]
want_names = []
for i, s in enumerate(shards):
    want_names += [f"{s}/{n}" for _, n, _ in samples[6 * i:6 * i + 6]]
if rc != 0 or err or [r["file"] for r in recs] != want_names:
    fail(f"shards: exit {rc}, {err.strip()!r}, names "
         f"{[r['file'] for r in recs][:4]}..., want {want_names[:4]}...")
else:
    ok("shards: one record per image member, in archive order, named "
       "ARCHIVE/MEMBER, the .cls/.json members skipped")
bad = []
for rec, (key, name, data) in zip(recs, samples):
    a = np.asarray(Image.open(io.BytesIO(data))).astype(np.int64)
    planes = [a] if a.ndim == 2 else [a[:, :, c] for c in range(a.shape[2])]
    if (rec["width"], rec["height"], rec["channels"]) != \
            (a.shape[1], a.shape[0], len(planes)):
        bad.append(f"{name}: size")
        continue
    for st, pl in zip(rec["stats"], planes):
        if (st["sum"], st["sum_sq"], st["min"], st["max"]) != \
                (int(pl.sum()), int((pl * pl).sum()), int(pl.min()),
                 int(pl.max())):
            bad.append(f"{name}: channel {st['channel']}")
if bad or len(recs) != len(samples):
    fail("members against numpy: " + ", ".join(bad[:5]))
else:
    ok(f"{len(recs)} members' sums, sums of squares, min and max match numpy "
       "over PIL's pixels")

# The records and the pooled dataset: the extracted folder's, but the names.
prefixes = [s + "/" for s in shards] + [ex + "/"]
for form in (["--json"], ["--csv"], []):
    rc1, out1, err1 = records("--dataset", *form, *shards)
    rc2, out2, err2 = records("--dataset", *form, ex)
    if (rc1, strip_names(out1, prefixes), err1) != \
            (rc2, strip_names(out2, prefixes), err2) or rc1 != 0 or \
            "dataset" not in out1:
        fail(f"--dataset {form}: shards and extracted folder differ "
             f"(exit {rc1}/{rc2}, {err1.strip()!r} {err2.strip()!r})")
    else:
        ok(f"--dataset {' '.join(form) or 'text'}: the shards' records = the "
           "extracted folder's, byte for byte but the names")
    if form == ["--json"]:
        json_out = out1

# A list of shards, and a shard without extension (its signature).
with open(path("list.txt"), "w") as f:
    f.write("\n".join(shards) + "\n")
rc, out, err = records("--dataset", "--json", "--files-from", path("list.txt"))
if rc != 0 or out != json_out:
    fail(f"--files-from a list of shards: exit {rc}, {err.strip()!r}")
else:
    ok("--files-from a list of shards: the same records")
shutil.copy(shards[0], path("shard-0"))
rc, out, err = records("--json", path("shard-0"))
n = len([x for x in out.splitlines() if x.strip()])
if rc != 0 or n != 6 or f'"{path("shard-0")}/000000.png"' not in out:
    fail(f"a tar without extension: exit {rc}, {n} records, {err.strip()!r}")
else:
    ok("a tar without extension: found by its signature, read as an archive")

# Under MPI: two ranks share the members; the records are one process's.
mpirun = os.environ.get("MPIRUN")
if mpirun and "--mpi" in run("--help")[1]:
    # (a sanitizer build: Open MPI's own start-up allocations are left to
    # LeakSanitizer, none of them ours; its access checks stay on)
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(
        x for x in (env.get("ASAN_OPTIONS"), "detect_leaks=0") if x)
    rc, out, err = records("--mpi", "--dataset", "--json", *shards,
                           prog=[mpirun, "--oversubscribe", "-np", "2",
                                 IMGSTAT], env=env)
    if rc != 0 or out != json_out:
        fail(f"mpirun -np 2 --mpi: exit {rc}, {err.strip()[:300]!r}")
    else:
        ok("mpirun -np 2 --mpi over the shards: the records of one process")

# ---- bad members and archives ----------------------------------------------
good = samples[0][2]
other = samples[2][2]


def tar_with(name, entries, fmt=tarfile.GNU_FORMAT):
    with tarfile.open(path(name), "w", format=fmt) as t:
        for n, kind, data in entries:
            ti = tarfile.TarInfo(n)
            if kind == "file":
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
                continue
            ti.type = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE,
                       "dir": tarfile.DIRTYPE}[kind]
            if kind != "dir":
                ti.linkname = "ok.png"
            t.addfile(ti)


tar_with("bad.tar", [("ok.png", "file", good),
                     ("../up.png", "file", good),
                     ("/abs.png", "file", good),
                     ("sym.png", "sym", None),
                     ("hard.png", "hard", None),
                     ("dir.png", "dir", None),
                     ("dup.png", "file", good),
                     ("dup.png", "file", other),
                     ("last.png", "file", good)])
before = sorted(os.listdir(T))  # (the folder above is shared: not listed)
rc, out, err = records("--json", "--errors-as-records", path("bad.tar"))
recs = [json.loads(x) for x in out.splitlines() if x.strip()]
bt = path("bad.tar")
got = [(r["file"], "error" in r) for r in recs]
want = [(bt + "/ok.png", False), (bt + "/../up.png", True),
        (bt + "//abs.png", True), (bt + "/sym.png", True),
        (bt + "/hard.png", True), (bt + "/dup.png", False),
        (bt + "/dup.png", False), (bt + "/last.png", False)]
msgs = {r["file"]: r.get("error", "") for r in recs}
if (rc != 1 or got != want or "leads out of the archive" not in
        msgs.get(bt + "/../up.png", "") or "leads out of the archive" not in
        msgs.get(bt + "//abs.png", "") or "symbolic link" not in
        msgs.get(bt + "/sym.png", "") or "hard link" not in
        msgs.get(bt + "/hard.png", "")):
    fail(f"bad.tar: exit {rc}, {got}, {msgs}")
else:
    ok("bad.tar: '../' and absolute names, symbolic and hard links refused "
       "with messages naming archive and member; the directory skipped; both "
       "duplicates read in archive order; the members after them kept")
d1, d2 = (recs[5], recs[6]) if len(recs) > 6 else ({}, {})
if not d1 or d1["stats"] == d2["stats"] or (d1["width"], d1["height"]) == \
        (d2["width"], d2["height"]) and d1["stats"] == d2["stats"]:
    fail("bad.tar: the duplicates' records are the same image's")
else:
    ok("bad.tar: the two members named dup.png are each read")
after = sorted(os.listdir(T))
if before != after or os.path.exists(os.path.join(T, "..", "up.png")) or \
        os.path.exists("/abs.png"):
    fail("bad.tar: something was written")
else:
    ok("bad.tar: nothing written anywhere")

# A truncated tar: the members before the damage kept; the error names it.
whole = open(path("bad.tar"), "rb").read()
at = whole.rfind(b"last.png\0")  # its header; its bytes follow
open(path("cut.tar"), "wb").write(whole[:at + 512 + len(good) // 2])
rc, out, err = records("--brief", path("cut.tar"))
ct = path("cut.tar")
kept = [x.split()[0] for x in out.splitlines() if x.startswith(ct)]
if rc != 1 or kept != [ct + "/ok.png", ct + "/dup.png", ct + "/dup.png"] or \
        "damaged archive" not in err or f"{ct}/last.png: damaged" not in err:
    fail(f"a truncated tar: exit {rc}, kept {kept}, {err.strip()!r}")
else:
    ok("a truncated tar: the members before the damage read, the damage "
       "reported naming the archive")

# A header that says 1 TB (base-256 size field): refused before any
# allocation, by --max-memory's bound.
def ustar_header(name, size):
    b = bytearray(512)
    b[0:len(name)] = name.encode()
    b[100:108] = b"0000644\0"
    b[108:116] = b"0000000\0"
    b[116:124] = b"0000000\0"
    b[124:136] = b"\x80" + size.to_bytes(11, "big")
    b[136:148] = b"00000000000\0"
    b[156:157] = b"0"
    b[257:265] = b"ustar\x0000"
    b[148:156] = b" " * 8
    b[148:156] = ("%06o\0 " % sum(b)).encode()
    return bytes(b)


pad = b"\0" * (-len(good) % 512)
with open(path("huge.tar"), "wb") as f:
    f.write(ustar_header("first.png", len(good)) + good + pad)
    f.write(ustar_header("huge.png", 1 << 40) + good + pad)
ht = path("huge.tar")
# (under a 2 GB address-space limit, unless the build cannot start in one:
# ASan reserves terabytes of shadow memory)
limited = ["sh", "-c", 'ulimit -v 2000000; exec "$0" "$@"', IMGSTAT]
if subprocess.run([*limited, "--version"], capture_output=True).returncode:
    limited = [IMGSTAT]
r = subprocess.run([*limited, "--brief", ht], capture_output=True, text=True)
if r.returncode != 1 or not r.stdout.startswith(ht + "/first.png") or \
        f"{ht}/huge.png: the member's header says 1099511627776 bytes, over " \
        "the limit of" not in r.stderr or "(--max-memory)" not in r.stderr:
    fail(f"a 1 TB member: exit {r.returncode}, {r.stderr.strip()!r}")
else:
    ok("a member whose header says 1 TB: refused by --max-memory's bound "
       "before allocation" + (" (under a 2 GB address-space limit)"
                              if len(limited) > 1 else ""))

# Zip bombs: 64 MiB of zeros deflated to ~64 KiB, its header honest or
# lying (100 bytes): either way never more than --max-memory is held. The
# peak resident memory against a run over the zip without the bomb.
def peak_run(*args):
    """exit status, stdout, stderr and the peak resident KiB of a run
    (/usr/bin/time's, which forks it from a small process: a child forked
    from this Python would count Python's pages; 0 without it)."""
    if not os.path.exists("/usr/bin/time"):
        rc, out, err = run(*args)
        return rc, out, err, 0
    r = subprocess.run(["/usr/bin/time", "-f", "peak %M", "-o",
                        path("peak.txt"), IMGSTAT, *args],
                       capture_output=True, text=True)
    peak = open(path("peak.txt")).read().split("peak ")[-1].strip()
    return r.returncode, r.stdout, r.stderr, int(peak) if peak.isdigit() \
        else 0


zero = b"\0" * (64 << 20)
with zipfile.ZipFile(path("plain.zip"), "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("a.png", good)
    z.writestr("b.png", good)
base = peak_run("--brief", "--max-memory", "8M", path("plain.zip"))[3]
# what the bomb may add: the member's buffer grows by doubling up to the
# limit (8 MiB), about 16 MiB of blocks with the copies; a sanitizer build
# (one that cannot start under the address-space limit above) keeps freed
# blocks in quarantine, resident, so it may hold them all at once (seen: 25
# MiB). The bomb is 64 MiB: reading it whole fails either bound.
bound = (24 if len(limited) > 1 else 48) << 10
for name, lie in (("bomb.zip", False), ("liar.zip", True)):
    with zipfile.ZipFile(path(name), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.png", good)
        z.writestr("bomb.png", zero)
        z.writestr("b.png", good)
    b = bytearray(open(path(name), "rb").read())
    if lie:
        import struct
        for sig, at, name_at, len_at in ((b"PK\x03\x04", 22, 30, 26),
                                         (b"PK\x01\x02", 24, 46, 28)):
            i = b.find(sig)
            while i >= 0:
                n = struct.unpack("<H", b[i + len_at:i + len_at + 2])[0]
                if b[i + name_at:i + name_at + n] == b"bomb.png":
                    b[i + at:i + at + 4] = struct.pack("<I", 100)
                i = b.find(sig, i + 4)
        open(path(name), "wb").write(b)
    p = path(name)
    rc, out, err, peak = peak_run("--brief", "--max-memory", "8M", p)
    read = [x.split()[0] for x in out.splitlines() if x.startswith(p)]
    if rc != 1 or read != [p + "/a.png", p + "/b.png"] or \
            f"{p}/bomb.png: the member" not in err or \
            "(--max-memory)" not in err or peak - base > bound:
        fail(f"{name}: exit {rc}, read {read}, peak {peak} KiB (without the "
             f"bomb {base}), {err.strip()!r}")
    else:
        ok(f"{name} ({'lying' if lie else 'honest'} header): the bomb refused "
           f"by --max-memory 8M (peak {peak} KiB, {peak - base:+} against the "
           "zip without it), the others read")

# A zip member whose deflated data is damaged fails alone: the members
# after it are read (the zip is opened again at the next one).
with zipfile.ZipFile(path("dmg.zip"), "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("a.png", good)
    z.writestr("b.png", other)
    z.writestr("c.png", good)
b = bytearray(open(path("dmg.zip"), "rb").read())
i = b.find(b"b.png") + 5 + 20  # inside b.png's deflated data
for k in range(i, i + 40):
    b[k] ^= 0x5A
open(path("dmg.zip"), "wb").write(b)
p = path("dmg.zip")
rc, out, err = records("--brief", p)
read = [x.split()[0] for x in out.splitlines() if x.startswith(p)]
if rc != 1 or read != [p + "/a.png", p + "/c.png"] or \
        f"{p}/b.png: damaged member" not in err:
    fail(f"a damaged zip member: exit {rc}, read {read}, {err.strip()!r}")
else:
    ok("a damaged zip member fails alone, named; the members after it read")

# --max-memory holds in a collected list too (normalize lists every input
# before it reads one; so do --mpi and the float range pass): a member over
# it is refused by its header, not read and then refused by its decoder.
big = png_bytes(rng.integers(0, 256, (300, 300, 3), dtype=np.uint8))
write_tar("big.tar", [("big.png", big), ("small.png", good)])
rc, out, err = records("normalize", "--max-memory", "200K", path("big.tar"),
                       "-o", path("bigout"))
shutil.rmtree(path("bigout"), ignore_errors=True)
if rc != 1 or f"{path('big.tar')}/big.png: the member's header says" \
        not in err or "(--max-memory)" not in err or "1 failed" not in err:
    fail(f"normalize --max-memory over an archive: exit {rc}, "
         f"{err.strip()!r}")
else:
    ok("normalize --max-memory 200K: a member over it refused by its header "
       "in a collected list too")

# A list with a missing shard: named, the others read.
with open(path("holes.txt"), "w") as f:
    f.write(f"{shards[0]}\n{path('gone.tar')}\n{shards[2]}\n")
rc, out, err = records("--brief", "--files-from", path("holes.txt"))
n = len([x for x in out.splitlines() if x.startswith(T)])
if rc != 1 or n != 12 or f"{path('gone.tar')}: No such file" not in err:
    fail(f"a missing shard: exit {rc}, {n} read, {err.strip()!r}")
else:
    ok("a list with a missing shard: the error names it, the 12 members of "
       "the others read")

# normalize: OUT/<archive stem>/<member path>, nothing outside OUT.
out_dir = path("out")
rc, out, err = records("normalize", shards[0], shards[1], bt, "-o", out_dir)
written = sorted(os.path.relpath(os.path.join(d, f), out_dir)
                 for d, _, fs in os.walk(out_dir) for f in fs)
want = sorted([f"a/{k}.png" for k, _, _ in samples[0:6]] +
              [f"b/{k}.png" for k, _, _ in samples[6:12]] +
              ["bad/ok.png", "bad/last.png"])
if "would both be written" not in err or written:
    fail(f"normalize with duplicate members: exit {rc}, {err.strip()!r}, "
         f"wrote {written[:3]}")
else:
    ok("normalize: two members of one name refused before anything is "
       "written")
tar_with("bad2.tar", [("ok.png", "file", good), ("../up.png", "file", good),
                      ("/abs.png", "file", good), ("last.png", "file", good)])
rc, out, err = records("normalize", shards[0], shards[1], path("bad2.tar"),
                       "-o", out_dir)
written = sorted(os.path.relpath(os.path.join(d, f), out_dir)
                 for d, _, fs in os.walk(out_dir) for f in fs)
want = sorted([f"a/{k}.png" for k, _, _ in samples[0:6]] +
              [f"b/{k}.png" for k, _, _ in samples[6:12]] +
              ["bad2/ok.png", "bad2/last.png"])
bad = []
for key, name, data in samples[0:12]:
    shard = "a" if int(key) < 6 else "b"
    f = os.path.join(out_dir, shard, key + ".png")
    if not os.path.exists(f):
        continue
    a = np.asarray(Image.open(io.BytesIO(data))).astype(np.int64)
    o = np.asarray(Image.open(f)).astype(np.int64)
    if a.shape != o.shape:
        bad.append(name)
if rc != 1 or written != want or bad or os.path.exists(path("up.png")):
    fail(f"normalize from archives: exit {rc}, wrote {written}, {bad}, "
         f"{err.strip()!r}")
else:
    ok("normalize from archives: OUT/<stem>/<member>, escaping members "
       "refused, nothing outside OUT")
# --skip-existing: the members whose outputs are there are skipped.
os.remove(os.path.join(out_dir, "a", samples[1][0] + ".png"))
rc, out, err = records("normalize", "--skip-existing", shards[0], "-o",
                       out_dir)
if rc != 0 or "1 written" not in err or "5 of 6 outputs were there" not in err:
    fail(f"normalize --skip-existing over an archive: exit {rc}, "
         f"{err.strip()!r}")
else:
    ok("normalize --skip-existing: the members whose outputs are there "
       "skipped, the missing one written")
shutil.rmtree(out_dir, ignore_errors=True)
finish()
