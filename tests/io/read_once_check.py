"""Inputs that can be read only once (a pipe through /dev/stdin or /dev/fd/N,
a FIFO, standard input) in the passes that would read an input twice, and a
run stopped by SIGTERM or SIGINT while it waits for a FIFO's writer.

 - imgstat --dataset --histogram: the float range pass leaves such an input
   alone (docs/dataset.md): the image is read once, pooled with the others,
   and the record says histogram_note instead of float histograms; the
   pooled figures are numpy's. Standard input redirected from a regular
   file can be read again: the pass runs, the histograms equal those of the
   same file given by its path.
 - imgstat normalize clip --dataset (two passes over every input) refuses
   such an input before reading anything, naming it; with standard input
   from a regular file it writes numpy's clip.
 - A FIFO that no writer opens: SIGTERM / SIGINT end stats and normalize
   with 143 / 130 within seconds, nothing written.
Every run has a time limit, so a hang fails.
Usage: read_once_check.py IMGSTAT TMP
"""
import json, os, signal, subprocess, sys, threading, time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))  # checklib
import checklib  # noqa: E402

IMGSTAT, TMP = sys.argv[1:3]
IMGSTAT = os.path.abspath(IMGSTAT)
LIMIT = 60  # seconds for any one run (sanitizer and valgrind builds too)
check = checklib.check


def p(*parts):
    return os.path.join(TMP, *parts)


def default_signals():
    # a parent that ignores SIGINT (a shell's background job) would make
    # imgstat leave it ignored
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run(args, stdin=None, data=None, pass_fds=()):
    """imgstat with args: (exit status, stdout, stderr); a run past LIMIT
    is killed and fails."""
    pr = subprocess.Popen([IMGSTAT, *args], stdin=stdin, pass_fds=pass_fds,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          preexec_fn=default_signals)
    try:
        out, err = pr.communicate(input=data, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        pr.kill()
        out, err = pr.communicate()
        check(False, "%s: still running after %d s" % (" ".join(args), LIMIT))
        return None, out.decode(), err.decode()
    return pr.returncode, out.decode(), err.decode()


class FifoWriter:
    """A FIFO at path and a writer that opens it and writes data once a
    reader has opened it; stopped (and the FIFO removed) on exit."""

    def __init__(self, path, src):
        self.path = path
        os.mkfifo(path)
        self.proc = subprocess.Popen(
            ["sh", "-c", 'exec cat "$1" >"$2"', "sh", src, path],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        os.unlink(self.path)


rng = np.random.default_rng(34)
a = (rng.standard_normal((20, 30)) * 3 + 1).astype(np.float32)
b = (rng.standard_normal((17, 30)) * 5 - 2).astype(np.float32)
# a as PFM (grey, little-endian: a negative scale; rows bottom to top)
with open(p("a.pfm"), "wb") as f:
    f.write(b"Pf\n%d %d\n-1.0\n" % (a.shape[1], a.shape[0]))
    f.write(np.ascontiguousarray(a[::-1]).astype("<f4").tobytes())
np.save(p("a.npy"), a)
np.save(p("b.npy"), b)
pool = np.concatenate([a.ravel(), b.ravel()]).astype(np.float64)


def dataset(out, what):
    recs = [json.loads(l) for l in out.splitlines() if l.startswith('{"dataset"')]
    check(len(recs) == 1, "%s: one dataset record, got %d" % (what, len(recs)))
    return recs[0]["dataset"] if recs else {}


DS = ["--backend", "cpu", "--dataset-only", "--histogram", "--json"]

# the regular files: the range pass runs and the histograms span the pool
rc, out, err = run(DS + [p("a.pfm"), p("b.npy")])
check(rc == 0, "regular files: exit %r, %s" % (rc, err))
regular = dataset(out, "regular files")
reg_hist = regular.get("stats", [{}])[0].get("histogram", {})
check(reg_hist.get("lo") == pool.min() and reg_hist.get("hi") == pool.max(),
      "regular files: histogram range %r..%r, want numpy's %r..%r"
      % (reg_hist.get("lo"), reg_hist.get("hi"), pool.min(), pool.max()))


def read_once_record(rc, out, err, what):
    """A read-once float input pooled once, with the others, no float
    histogram, the note saying why."""
    check(rc == 0, "%s: exit %r, stderr %r" % (what, rc, err))
    check("empty file" not in err, "%s: read twice: %r" % (what, err))
    d = dataset(out, what)
    check(d.get("images") == 2 and d.get("pooled") == 2 and
          d.get("failed") == 0,
          "%s: images %r pooled %r failed %r, want 2 2 0"
          % (what, d.get("images"), d.get("pooled"), d.get("failed")))
    st = d.get("stats", [{}])[0]
    check(st.get("count") == pool.size, "%s: count %r" % (what, st.get("count")))
    check(st.get("min") == pool.min() and st.get("max") == pool.max(),
          "%s: min %r max %r, want numpy's %r %r"
          % (what, st.get("min"), st.get("max"), pool.min(), pool.max()))
    check(abs(st.get("mean", 1e300) - pool.mean()) <= 1e-9 * abs(pool.mean()) +
          1e-12 and abs(st.get("std", 1e300) - pool.std()) <= 1e-9 * pool.std(),
          "%s: mean %r std %r, want numpy's %r %r"
          % (what, st.get("mean"), st.get("std"), pool.mean(), pool.std()))
    check("histogram" not in st and "float images need --range" in
          d.get("histogram_note", ""),
          "%s: no float histogram and its note: %r"
          % (what, d.get("histogram_note")))


# a pipe read through /dev/stdin (`cat a.pfm | imgstat ... /dev/stdin`)
data = open(p("a.pfm"), "rb").read()
rc, out, err = run(DS + ["/dev/stdin", p("b.npy")], stdin=subprocess.PIPE,
                   data=data)
read_once_record(rc, out, err, "a pipe as /dev/stdin")
# ... and as "-"
rc, out, err = run(DS + ["-", p("b.npy")], stdin=subprocess.PIPE, data=data)
read_once_record(rc, out, err, "a pipe as -")

# a FIFO (its second open would wait for a writer that never comes)
with FifoWriter(p("fifo"), p("a.npy")):
    rc, out, err = run(DS + [p("fifo"), p("b.npy")])
    read_once_record(rc, out, err, "a FIFO")

# /dev/fd/N of a pipe (bash's <(...)); the bytes fit in the pipe's buffer
r, w = os.pipe()
os.write(w, open(p("a.npy"), "rb").read())
os.close(w)
rc, out, err = run(DS + ["/dev/fd/%d" % r, p("b.npy")], pass_fds=(r,))
os.close(r)
read_once_record(rc, out, err, "/dev/fd/N of a pipe")

# standard input from a regular file can be read again: the pass runs, and
# the pooled histogram is the one of the same file by its path
with open(p("a.pfm"), "rb") as f:
    rc, out, err = run(DS + ["-", p("b.npy")], stdin=f)
check(rc == 0, "- from a regular file: exit %r, %s" % (rc, err))
d = dataset(out, "- from a regular file")
check(d.get("stats", [{}])[0].get("histogram") == reg_hist and reg_hist,
      "- from a regular file: the histogram of the same file by its path")

# normalize clip --dataset: refused before anything is read, naming it
for name, kw in [("/dev/stdin", {"stdin": subprocess.PIPE, "data": data}),
                 ("-", {"stdin": subprocess.PIPE, "data": data})]:
    out_path = p("clip-out.npy")
    rc, out, err = run(["normalize", "clip", "1,99", "--dataset", name, "-o",
                        out_path], **kw)
    want = "standard input" if name == "-" else name
    check(rc == 2 and (want + " can be read only once") in err,
          "normalize clip --dataset %s: exit %r, stderr %r" % (name, rc, err))
    check(not os.path.exists(out_path),
          "normalize clip --dataset %s: nothing written" % name)
with FifoWriter(p("fifo"), p("a.npy")):
    rc, out, err = run(["normalize", "clip", "1,99", "--dataset", p("fifo"),
                        p("b.npy"), "-o", p("clip-dir")])
    check(rc == 2 and (p("fifo") + " can be read only once") in err,
          "normalize clip --dataset FIFO: exit %r, stderr %r" % (rc, err))
    check(not os.path.exists(p("clip-dir")),
          "normalize clip --dataset FIFO: nothing written")
# standard input from a regular file: the dataset's clip, numpy's values
with open(p("a.npy"), "rb") as f:
    rc, out, err = run(["normalize", "clip", "0,100", "--dataset", "-", "-o",
                        p("clip-reg.npy")], stdin=f)
check(rc == 0, "normalize clip --dataset - < file: exit %r, %s" % (rc, err))
if rc == 0:
    got = np.load(p("clip-reg.npy")).astype(np.float64).reshape(a.shape)
    x = a.astype(np.float64)
    want = (x - x.min()) / (x.max() - x.min())
    check(np.allclose(got, want, rtol=0, atol=1e-6),
          "normalize clip --dataset - < file: values")
    os.unlink(p("clip-reg.npy"))

# SIGTERM / SIGINT while the run waits for a FIFO that no writer opens
os.mkfifo(p("lonely"))
for what, args in [("stats", ["--backend", "cpu", p("lonely")]),
                   ("stats -j 2", ["--backend", "cpu", "-j", "2", p("lonely"),
                                   p("b.npy")]),
                   ("normalize", ["normalize", p("lonely"), "-o",
                                  p("sig-out")])]:
    for sig, want in [(signal.SIGTERM, 143), (signal.SIGINT, 130)]:
        pr = subprocess.Popen([IMGSTAT, *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              preexec_fn=default_signals)
        time.sleep(0.5)
        t0 = time.monotonic()
        pr.send_signal(sig)
        try:
            rc = pr.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pr.kill()
            pr.wait()
            rc = None
        check(rc == want, "%s, %s while waiting for a FIFO's writer: exit %r "
              "after %.1f s, want %d"
              % (what, signal.Signals(sig).name, rc, time.monotonic() - t0,
                 want))
        check(not os.path.exists(p("sig-out", "lonely.png")),
              "%s, %s: nothing written" % (what, signal.Signals(sig).name))
os.unlink(p("lonely"))

checklib.finish("read_once_check")
