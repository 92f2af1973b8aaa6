#!/usr/bin/env python3
"""The report page under --mpi: the mixed folder of report_check.py (RGB,
gray, RGBA and 16-bit images, a corrupt file, outliers, an odd name) and
the folder of 13- and 20-band images, each run by one process and under
`mpirun -np K --mpi` for K = 1, 2 and 3 (and 3 ranks gathering in rounds
of 7 bytes): every rank exits as the plain run, the records printed are
the same, and the page equals the plain run's once the run's own facts
(command line, start, duration, the MPI ranks) are taken out; the
numbers on the pages are numpy's (pooled mean, std, min, max per channel;
the images' means and stds in the table). Skips (77) without mpirun.

Usage: report_mpi_check.py IMGSTAT TMPDIR (MPIRUN: the mpirun to use)
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_check import (RUN, check, failures, make_bands,  # noqa: E402
                          make_folder, parse)

RUN_FACTS = re.compile(r'<tr><th scope="row">(command line|started|duration|'
                       r'MPI ranks)</th><td>.*?</td></tr>')


def masked(path):
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    facts = RUN_FACTS.findall(raw)
    return RUN_FACTS.sub("", raw), facts


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def numpy_check(what, page, pixels):
    """The table's means and stds (ddof 0) against numpy's, per image."""
    p = parse(page)
    rows = {os.path.basename(r[1]): r for r in p.rows}
    for name, a in pixels.items():
        row = rows.get(name)
        if row is None:
            check(False, "%s: no row for %s" % (what, name))
            continue
        a = a.reshape(a.shape[0] * a.shape[1], -1).astype(np.float64)
        nc = min(4, a.shape[1])
        want = list(a[:, :nc].mean(0)) + list(a[:, :nc].std(0))
        got = row[8:8 + nc] + row[12:12 + nc]
        check(all(g is not None and abs(g - w) <= 1e-5 * max(1, abs(w))
                  for g, w in zip(got, want)),
              "%s: %s, page %s, numpy %s" % (what, name, got, want))
    return p


def main():
    imgstat, tmp = sys.argv[1], sys.argv[2]
    mpirun = os.environ.get("MPIRUN", "mpirun")
    if not shutil.which(mpirun):
        print("skipped: no %s" % mpirun)
        return 77
    mixed = os.path.join(tmp, "imgs")
    pooled = make_folder(mixed)
    bands = os.path.join(tmp, "bands")
    band_px = make_bands(bands)
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    cases = (("mixed folder", RUN, mixed), ("bands", [], bands))
    for what, args, d in cases:
        plain_page = os.path.join(out, "plain.html")
        plain = run([imgstat] + args + ["--report", plain_page, d])
        want, facts = masked(plain_page)
        check(facts == ["command line", "started", "duration"],
              "%s: the plain run's facts: %s" % (what, facts))
        if what == "mixed folder":
            # the plain page's numbers: numpy's
            p = numpy_check(what, plain_page,
                            {n: a for n, a in pooled.items()})
            allpx = np.concatenate([pooled[n].reshape(-1, 3)
                                    for n in sorted(pooled)]) / 255.0
            for c in range(3):
                got = {k: float(v) for ch, k, v in p.cells if ch == c and v}
                for k, v in (("mean", allpx[:, c].mean()),
                             ("std", allpx[:, c].std()),
                             ("min", allpx[:, c].min()),
                             ("max", allpx[:, c].max())):
                    check(k in got and abs(got[k] - v) <= 1e-12,
                          "%s: channel %d %s, page %s, numpy %r"
                          % (what, c, k, got.get(k), v))
        else:
            numpy_check(what, plain_page, band_px)
        for k, chunk in ((1, None), (2, None), (3, None), (3, "7")):
            label = "%s, -np %d%s" % (what, k,
                                      ", rounds of 7 bytes" if chunk else "")
            page = os.path.join(out, "np%d.html" % k)
            env = dict(os.environ)
            if chunk:
                env["IMGSTAT_TEST_MPI_CHUNK"] = chunk
            for r in range(k):
                rc = os.path.join(tmp, "rc.%d" % r)
                if os.path.exists(rc):
                    os.remove(rc)
            m = run([mpirun, "--oversubscribe", "--bind-to", "none", "-np",
                     str(k), "sh", "-c",
                     '"$0" --mpi "$@"; echo $? >"%s/rc.${OMPI_COMM_WORLD_RANK'
                     ':-0}"' % tmp, imgstat] + args + ["--report", page, d],
                    env=env)
            rcs = []
            for r in range(k):
                rc = os.path.join(tmp, "rc.%d" % r)
                rcs.append(open(rc).read().strip() if os.path.exists(rc)
                           else None)
                if os.path.exists(rc):
                    os.remove(rc)
            check(rcs == [str(plain.returncode)] * k,
                  "%s: every rank exits %d: %s (%s)"
                  % (label, plain.returncode, rcs, m.stderr[-300:]))
            check(m.stdout == plain.stdout, "%s: the same records" % label)
            if not os.path.exists(page):
                check(False, "%s: no page" % label)
                continue
            got, facts = masked(page)
            check(facts == ["command line", "started", "duration",
                            "MPI ranks"],
                  "%s: the run's facts: %s" % (label, facts))
            check(">%d (each read its share" % k in open(page).read(),
                  "%s: the page names the ranks" % label)
            if got != want:
                a = got.replace("><", ">\n<").splitlines()
                b = want.replace("><", ">\n<").splitlines()
                diff = [(x, y) for x, y in zip(a, b) if x != y][:3]
                check(False, "%s: the page differs from one process's: %s"
                      % (label, diff))
            else:
                check(True, label)
            os.remove(page)
        os.remove(plain_page)
    check(os.listdir(out) == [], "no page left over: %s" % os.listdir(out))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
