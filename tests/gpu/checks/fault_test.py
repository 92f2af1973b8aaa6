#!/usr/bin/env python3
"""The body of tests/gpu/checks/fault_test.sh: read that script's header first.

    fault_test.py ROOT IMGSTAT QUICK(0|1)

Every expectation is checked against runs of the program without a fault:
--backend cpu and --backend gpu, each required to succeed silently first.
"""
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(sys.argv[1])
BIN = os.path.abspath(sys.argv[2])
QUICK = sys.argv[3] == "1"
# Relative to ROOT (the working folder of every run), as messages show them:
# 8-bit grey, 8-bit RGB (the largest: the device buffers grow), 16-bit grey,
# float RGB.
INPUTS = ["samples/camera.png", "samples/kodim23.png", "samples/monkey16.pgm",
          "samples/image1.hdr"]
STREAK = 4      # this many N in a row without a fault end a sweep
MAX_N = 5000    # a sweep that has not ended by then fails
JOBS = int(os.environ.get("FAULT_TEST_JOBS") or
           max(1, min(8, (os.cpu_count() or 2) // 2)))
# The device tool's $OUT, else a folder of its own (runs may overlap),
# removed at the end unless something failed (its logs say what).
LOG_OWNED = not os.environ.get("OUT")
LOG = (tempfile.mkdtemp(prefix="imgstat-fault-test-") if LOG_OWNED
       else os.path.join(os.environ["OUT"], "fault_test"))
TMP = None  # scratch folder for normalize outputs, made in main()

# name, arguments for (backend, output folder), what it writes
# Every run on one worker (-j 1): the N-th device event then belongs to the
# same input in every run; with several workers, which image reaches the GPU
# first depends on the scheduling.
MODES = [
    ("statistics",
     lambda b, d: ["--json", "-j", "1", "--backend", b] + INPUTS, "json"),
    ("histogram",
     lambda b, d: ["--json", "-j", "1", "--histogram", "--backend", b] +
     INPUTS, "json"),
    ("normalize",
     lambda b, d: ["normalize", "-j", "1", "--backend", b] + INPUTS +
     ["-o", d], "dir"),
    ("normalize-clip",
     lambda b, d: ["normalize", "clip", "1,99", "-j", "1", "--backend", b] +
     INPUTS +
     ["-o", d], "dir"),
]
if QUICK:  # the two command lines, with their smallest runs
    MODES = [MODES[0], MODES[2]]

# The run's closing lines: failed inputs counted, normalize's summary.
FAILED_SUMMARY = re.compile(r"^imgstat: (\d+ of \d+ inputs failed|"
                            r"\d+ written to .*, \d+ failed, [0-9.]+ s)$")
AUTO_START = re.compile(r"^imgstat: GPU unusable \((.*)\); using the CPU$")
AUTO_FILE = re.compile(r"^imgstat: (.+?): GPU failed \((.*)\); using the CPU$")
GPU_START = re.compile(r"^imgstat: (.+?): --backend gpu needs a usable GPU: "
                       r"(.*)$")
GPU_FILE = re.compile(r"^imgstat: (.+?): GPU failed: (.*)$")
# normalize decides before its first input: one line, no input named
GPU_START_RUN = re.compile(r"^imgstat: --backend gpu needs a usable GPU: "
                           r"(.*)$")
START = "start-up"  # the stage of a fault in imgstat_gpu_create
# memcheck's words for a leak ("Leaked 4096 bytes at 0x...", "LEAK SUMMARY:
# 4096 bytes leaked in 1 allocations"), not its all-clear summary
LEAK = re.compile(r"Leaked [0-9]+ bytes|LEAK SUMMARY: [1-9][0-9]* bytes",
                  re.IGNORECASE)

passed = 0
failed = 0
summary = None


def say(text):
    print(text, flush=True)
    summary.write(text + "\n")
    summary.flush()


def check(ok, name, problems=()):
    global passed, failed
    if ok:
        passed += 1
        return True
    failed += 1
    say(f"FAIL {name}: " + "; ".join(problems))
    return False


def finish(skip_reason=None):
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)
    if skip_reason:
        say(f"skipped: {skip_reason}")
    say(f"fault_test: {passed} passed, {failed} failed" +
        (f" (skipped: {skip_reason})" if skip_reason else ""))
    summary.close()
    if LOG_OWNED and not failed:
        shutil.rmtree(LOG, ignore_errors=True)
    if failed:
        sys.exit(1)
    sys.exit(77 if skip_reason else 0)


class Result:
    """One run: exit status, stderr lines, and the output of each input
    (json: (backend, record without "backend") by input; dir: bytes by
    input), plus whatever did not fit that shape."""

    def __init__(self, rc, err, out, problems):
        self.rc, self.err, self.out, self.problems = rc, err, out, problems


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def execute(mode, backend, fault=None, wrap=()):
    name, args_of, kind = mode
    env = dict(os.environ)
    env["IMGSTAT_AUTO"] = "gpu"  # auto uses the GPU from the first item
    env.pop("IMGSTAT_GPU_FAULT", None)
    if fault is not None:
        env["IMGSTAT_GPU_FAULT"] = str(fault)
    outdir = tempfile.mkdtemp(dir=TMP) if kind == "dir" else ""
    cmd = list(wrap) + [BIN] + args_of(backend, outdir)
    timeout = 900 if wrap else 180
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=timeout)
        rc, stdout = p.returncode, p.stdout.decode("utf-8", "replace")
        # The run's last line counting failed inputs is not about one input.
        err = [l for l in p.stderr.decode("utf-8", "replace").splitlines()
               if l.strip() and not FAILED_SUMMARY.match(l)]
    except subprocess.TimeoutExpired:
        rc, stdout, err = None, "", [f"(killed after {timeout} s)"]
    out, problems = {}, []
    if kind == "json":
        for line in stdout.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                problems.append(f"not JSON on stdout: {line[:80]!r}")
                continue
            f = rec.get("file")
            if f not in INPUTS or f in out:
                problems.append(f"unexpected record for {f!r}")
                continue
            b = rec.pop("backend", None)
            out[f] = (b, json.dumps(rec, sort_keys=True))
    else:
        by_stem = {stem(i): i for i in INPUTS}
        for f in sorted(os.listdir(outdir)):
            i = by_stem.get(stem(f))
            if i is None or i in out:
                problems.append(f"unexpected file {f!r} in the output folder")
                continue
            with open(os.path.join(outdir, f), "rb") as fh:
                out[i] = (f, fh.read())
        shutil.rmtree(outdir, ignore_errors=True)
    return Result(rc, err, out, problems)


def injected(reason, n):
    """The kind of the injected fault the message names ('alloc' or
    'launch'), or None when it does not name fault n."""
    if not re.search(rf"injected by IMGSTAT_GPU_FAULT={n}\)", reason):
        return None
    if "cudaErrorMemoryAllocation" in reason:
        return "alloc"
    if "cudaErrorLaunchOutOfResources" in reason:
        return "launch"
    return None


def same(kind, got, want):
    """json: the records without "backend"; dir: file name and bytes."""
    return got[1] == want[1] if kind == "json" else got == want


def check_auto(mode, n, r, base):
    """Returns (stage, fault kind, problems): stage None when no fault
    showed, START, or the input that fell back to the CPU."""
    kind = mode[2]
    probs = list(r.problems)
    stage, fkind = None, None
    if r.rc != 0:
        probs.append(f"exit {r.rc}, expected 0")
    if len(r.err) > 1:
        probs.append(f"{len(r.err)} lines on stderr, expected one at most: "
                     + " | ".join(r.err[:3]))
    elif len(r.err) == 1:
        line = r.err[0]
        m, f = AUTO_START.match(line), AUTO_FILE.match(line)
        if m:
            stage, reason = START, m.group(1)
        elif f and f.group(1) in INPUTS:
            stage, reason = f.group(1), f.group(2)
        else:
            stage, reason = "?", ""
            probs.append(f"unexpected stderr: {line}")
        if stage != "?":
            fkind = injected(reason, n)
            if not fkind:
                probs.append(f"the warning does not name the injected fault: "
                             f"{line}")
    for i in INPUTS:
        got = r.out.get(i)
        if got is None:
            probs.append(f"no output for {i}")
            continue
        on_cpu = stage in (START, i)
        if kind == "json":
            b = got[0]
            if stage == i and mode[0] != "statistics":
                # a histogram that failed after GPU statistics: the record
                # keeps the GPU's statistics and says so
                ok_b = b in ("cpu", "gpu")
            else:
                ok_b = b == ("cpu" if on_cpu else "gpu")
            if not ok_b:
                probs.append(f"{i}: backend {b}, expected "
                             f"{'cpu' if on_cpu else 'gpu'}"
                             + ("" if on_cpu else
                                " (the context should serve it)"))
                continue
            if b not in base or not same(kind, got, base[b][i]):
                probs.append(f"{i}: record differs from the fault-free {b} "
                             f"run")
        else:
            b = "cpu" if on_cpu else "gpu"
            if not same(kind, got, base[b][i]):
                probs.append(f"{i}: {got[0]} differs from the fault-free {b} "
                             f"run's")
    return stage, fkind, probs


def check_gpu(mode, n, r, base):
    kind = mode[2]
    probs = list(r.problems)
    stage, fkind = None, None
    starts = [GPU_START.match(l) for l in r.err]
    if not r.err:
        if r.rc != 0:
            probs.append(f"exit {r.rc} with nothing on stderr")
    elif kind == "dir" and len(r.err) == 1 and GPU_START_RUN.match(r.err[0]):
        stage = START
        fkind = injected(GPU_START_RUN.match(r.err[0]).group(1), n)
        if not fkind:
            probs.append("the message does not name the injected fault: "
                         + r.err[0])
    elif all(starts):
        stage = START
        names = [m.group(1) for m in starts]
        if names != INPUTS:
            probs.append(f"start-up failure reported for {names}, expected "
                         f"each input once, in order")
        kinds = {injected(m.group(2), n) for m in starts}
        fkind = kinds.pop() if len(kinds) == 1 else None
        if not fkind:
            probs.append("the messages do not name the injected fault: "
                         + r.err[0])
    elif len(r.err) == 1 and GPU_FILE.match(r.err[0]) and \
            GPU_FILE.match(r.err[0]).group(1) in INPUTS:
        m = GPU_FILE.match(r.err[0])
        stage = m.group(1)
        fkind = injected(m.group(2), n)
        if not fkind:
            probs.append("the message does not name the injected fault: "
                         + r.err[0])
    else:
        stage = "?"
        probs.append("unexpected stderr: " + " | ".join(r.err[:3]))
    if stage is not None and r.rc != 1:
        probs.append(f"exit {r.rc}, expected 1")
    for i in INPUTS:
        got = r.out.get(i)
        if stage in (START, i):
            if got is not None:
                probs.append(f"{i} failed but has output")
            continue
        if got is None:
            probs.append(f"no output for {i}"
                         + (" (only the input hit should fail)"
                            if stage else ""))
            continue
        if kind == "json" and got[0] != "gpu":
            probs.append(f"{i}: backend {got[0]} under --backend gpu")
        elif not same(kind, got, base["gpu"][i]):
            probs.append(f"{i}: differs from the fault-free GPU run")
    return stage, fkind, probs


def baselines(mode):
    base, ok = {}, True
    for b in ("cpu", "gpu"):
        r = execute(mode, b)
        probs = list(r.problems)
        if r.rc != 0 or r.err:
            probs.append(f"exit {r.rc}, stderr: {' | '.join(r.err[:3])}")
        missing = [i for i in INPUTS if i not in r.out]
        if missing:
            probs.append(f"no output for {missing}")
        if mode[2] == "json":
            wrong = [i for i, v in r.out.items() if v[0] != b]
            if wrong:
                probs.append(f"backend is not {b} for {wrong}")
        ok &= check(not probs, f"{mode[0]} --backend {b} without a fault",
                    probs)
        base[b] = r.out
    if ok:
        # Not about faults, but every check below leans on it: the backends
        # agree (float mean, std, sum and sum_sq within 1e-9, as
        # verify_all.sh).
        diff = [i for i in INPUTS if not agree(mode[2], base["cpu"][i],
                                               base["gpu"][i])]
        check(not diff, f"{mode[0]}: the fault-free CPU and GPU runs agree",
              [f"they differ for {diff}: a backend discrepancy, not a fault "
               f"handling problem"])
    return base if ok else None


def agree(kind, a, b):
    if kind != "json":
        return a == b
    ra, rb = json.loads(a[1]), json.loads(b[1])
    if ra.get("depth") != 32:
        return ra == rb
    sa, sb = ra.pop("stats", []), rb.pop("stats", [])
    if ra != rb or len(sa) != len(sb):
        return False
    for x, y in zip(sa, sb):
        for k in set(x) | set(y):
            u, v = x.get(k), y.get(k)
            if k in ("mean", "std", "sum", "sum_sq") and \
                    isinstance(u, float) and \
                    isinstance(v, (int, float)):
                if abs(u - v) > 1e-9 * max(1.0, abs(u)):
                    return False
            elif u != v:
                return False
    return True


def describe(stages):
    """'start-up 1-12, a.png 13-17, ...' from {n: stage}."""
    parts, cur, first, prev = [], None, None, None
    for n in sorted(stages):
        s = stages[n] or "(none)"
        if s != cur:
            if cur is not None:
                parts.append(f"{cur} {first}" +
                             (f"-{prev}" if prev != first else ""))
            cur, first = s, n
        prev = n
    if cur is not None:
        parts.append(f"{cur} {first}" + (f"-{prev}" if prev != first else ""))
    return ", ".join(parts)


def sweep(mode, base, pool, detail):
    """Runs every N until STREAK quiet ones in a row; returns {n: stage}."""
    name = mode[0]
    stages, kinds = {}, {}
    last_hit, ahead, k, stop = 0, 1, 1, False
    pending = {}  # N -> its two runs, started in order, at most 2 * JOBS
    while True:
        while not stop and len(pending) < 2 * JOBS:
            pending[ahead] = (pool.submit(execute, mode, "auto", ahead),
                              pool.submit(execute, mode, "gpu", ahead))
            ahead += 1
        if k not in pending:
            break
        fa, fg = pending.pop(k)
        ra, rg = fa.result(), fg.result()
        sa, ka, pa = check_auto(mode, k, ra, base)
        sg, kg, pg = check_gpu(mode, k, rg, base)
        check(not pa, f"{name} auto IMGSTAT_GPU_FAULT={k}", pa)
        agree = []
        if sa != sg or ka != kg:
            agree = [f"auto hit {sa} ({ka}), gpu hit {sg} ({kg})"]
        check(not pg and not agree, f"{name} gpu IMGSTAT_GPU_FAULT={k}",
              pg + agree)
        detail.write(f"{name}\t{k}\tauto: {sa or '-'} {ka or ''}\t"
                     f"gpu: {sg or '-'} {kg or ''}\t"
                     f"{' | '.join(ra.err + rg.err)[:400]}\n")
        stages[k], kinds[k] = sg, kg
        if sg is not None or sa is not None:
            last_hit = k
        if k - last_hit >= STREAK:
            stop = True  # what is already running is still checked
        elif k >= MAX_N:
            check(False, f"{name} sweep",
                  [f"faults still showing at N = {MAX_N}"])
            stop = True
        k += 1
    hits = [k for k in stages if k <= last_hit]
    quiet = [k for k in hits if stages[k] is None]
    say(f"{name}: {last_hit} allocations and launches: "
        + describe({k: stages[k] for k in hits}))
    # Coverage: the start-up, every input, both kinds of fault.
    seen = set(stages.values())
    missing = [s for s in [START] + INPUTS if s not in seen]
    check(not missing, f"{name}: every stage hit by some N",
          [f"never hit: {missing}"])
    fk = set(kinds.values())
    check({"alloc", "launch"} <= fk, f"{name}: both kinds of fault hit",
          [f"hit only {sorted(k for k in fk if k)}"])
    # An allocation fault the statistics absorb (the whole image does not
    # fit: ranges instead) shows nothing; at most one per input, and none
    # in normalize, where every fault must show.
    allowed = len(INPUTS) if name in ("statistics", "histogram") else 0
    if quiet:
        say(f"{name}: no fault shown at N = {quiet} (absorbed: the image "
            f"went by ranges; output still checked)")
    check(len(quiet) <= allowed, f"{name}: faults absorbed",
          [f"{len(quiet)} N without a visible fault inside the run "
           f"({quiet}), at most {allowed} expected"])
    return stages


def sanitize(mode, base, n):
    """compute-sanitizer memcheck --leak-check full under --backend auto."""
    name = mode[0]
    san = shutil.which("compute-sanitizer")
    log = os.path.join(LOG, f"sanitizer-{name}-{n if n else 'none'}.log")
    wrap = [san, "--tool", "memcheck", "--leak-check", "full",
            "--error-exitcode", "99", "--log-file", log]
    r = execute(mode, "auto", n, wrap=wrap)
    stage, fkind, probs = check_auto(mode, n or 0, r, base)
    if n is None and (stage is not None or r.err):
        probs.append("a warning without a fault")
    text = ""
    try:
        with open(log, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        probs.append(f"no sanitizer log {log}")
    summ = re.findall(r"ERROR SUMMARY: (\d+) error", text)
    if not summ or summ[-1] != "0":
        probs.append(f"sanitizer: {summ[-1] if summ else 'no'} error summary "
                     f"(see {log})")
    leaks = [l for l in text.splitlines() if LEAK.search(l)]
    if leaks:
        probs.append(f"{len(leaks)} leaks: {leaks[0].strip()}")
    return (f"{name} compute-sanitizer memcheck --leak-check full "
            f"IMGSTAT_GPU_FAULT={n if n else 'unset'} (hit {stage or 'nothing'})",
            probs, summ[-1] if summ else "?")


def leak_probe():
    """compute-sanitizer must see tests/gpu/checks/leak_probe.cu's leak, which
    exits holding an allocation as imgstat would; else the checks above
    could not fail."""
    label = "compute-sanitizer reports a deliberate leak (leak_probe.cu)"
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return label, ["nvcc not found: the probe could not be built"]
    exe = os.path.join(LOG, "leak_probe")
    try:
        b = subprocess.run([nvcc, "-o", exe,
                            os.path.join(ROOT, "tests/gpu/checks/leak_probe.cu")],
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return label, ["nvcc took more than 300 s"]
    if b.returncode != 0:
        return label, [f"nvcc failed: {b.stderr.strip()[:300]}"]
    log = os.path.join(LOG, "sanitizer-leak_probe.log")
    try:
        r = subprocess.run([shutil.which("compute-sanitizer"), "--tool",
                            "memcheck", "--leak-check", "full",
                            "--error-exitcode", "99", "--log-file", log, exe],
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return label, ["compute-sanitizer took more than 300 s"]
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    if r.returncode != 99 or not LEAK.search(text):
        return label, [f"exit {r.returncode} and no leak in {log}: the "
                       f"leak check does not see what a program holds at "
                       f"exit, so its verdicts on imgstat prove nothing"]
    return label, []


def main():
    global summary, TMP, JOBS
    os.makedirs(LOG, exist_ok=True)
    summary = open(os.path.join(LOG, "summary.txt"), "w")
    TMP = tempfile.mkdtemp(prefix="imgstat-fault-")
    say(f"== fault_test: {BIN}, {'quick' if QUICK else 'full'}, "
        f"{JOBS} runs at a time, logs in {LOG}")
    try:
        ver = subprocess.run([BIN, "--version"], capture_output=True,
                             text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        check(False, "imgstat --version", [str(e)])
        finish()
    if "CUDA backend: yes" not in ver:
        finish("no CUDA device: this imgstat was built without CUDA")

    # A malformed switch is refused, with or without a device.
    stats = MODES[0]
    r = execute(stats, "gpu", "bogus")
    probs = []
    if r.rc != 1 or len(r.err) != len(INPUTS) or not all(
            "IMGSTAT_GPU_FAULT='bogus' is not N, alloc:N or launch:N" in l
            and GPU_START.match(l) for l in r.err):
        probs.append(f"exit {r.rc}, stderr: {' | '.join(r.err[:2])}")
    check(not probs, "IMGSTAT_GPU_FAULT=bogus --backend gpu refused", probs)
    r = execute(stats, "auto", "alloc:x")
    probs = []
    if r.rc != 0 or len(r.err) != 1 or not AUTO_START.match(r.err[0]) or \
            "IMGSTAT_GPU_FAULT='alloc:x' is not" not in r.err[0]:
        probs.append(f"exit {r.rc}, stderr: {' | '.join(r.err[:2])}")
    if any(v[0] != "cpu" for v in r.out.values()) or len(r.out) != len(INPUTS):
        probs.append("expected every record from the CPU")
    check(not probs, "IMGSTAT_GPU_FAULT=alloc:x under auto: one warning, CPU",
          probs)

    # A device?
    r = execute(stats, "gpu")
    if r.rc != 0 and any("needs a usable GPU" in l for l in r.err):
        why = r.err[0].split("needs a usable GPU: ", 1)[-1]
        finish(f"no CUDA device ({why})")

    # Several runs at a time need several contexts on the device at once.
    try:
        cmode = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_mode", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        cmode = ""
    if cmode and "Default" not in cmode.splitlines()[0] and JOBS > 1:
        say(f"compute mode {cmode.splitlines()[0]}: one run at a time")
        JOBS = 1

    detail = open(os.path.join(LOG, "runs.tsv"), "w")
    results = {}
    with cf.ThreadPoolExecutor(JOBS) as pool:
        for mode in MODES:
            base = baselines(mode)
            if base is None:
                say(f"{mode[0]}: the fault-free runs failed; its sweep is "
                    f"not run")
                continue
            t0 = time.time()
            results[mode[0]] = (mode, base, sweep(mode, base, pool, detail))
            say(f"{mode[0]}: swept in {time.time() - t0:.0f} s")
        detail.close()

        if not QUICK:
            if not shutil.which("compute-sanitizer"):
                check(False, "compute-sanitizer",
                      ["not found (PATH, /usr/local/cuda/bin): the leak "
                       "check did not run"])
            else:
                jobs = []
                for name, (mode, base, stages) in results.items():
                    hit = {}
                    for k in sorted(stages):
                        hit.setdefault(stages[k], k)
                    last = max((k for k in stages if stages[k]), default=None)
                    picks = {hit.get(INPUTS[1]), last}
                    if name == "statistics":
                        picks |= {hit.get(START), None}
                    if name == "histogram":
                        picks.add(hit.get(INPUTS[3]))
                    for k in sorted((p for p in picks if p), key=int):
                        jobs.append(pool.submit(sanitize, mode, base, k))
                    if name == "statistics":
                        jobs.append(pool.submit(sanitize, mode, base, None))
                probe = pool.submit(leak_probe)
                for j in jobs:
                    label, probs, errors = j.result()
                    if check(not probs, label, probs):
                        say(f"{label}: {errors} errors, no leaks")
                label, probs = probe.result()
                if check(not probs, label, probs):
                    say(f"{label}: yes")
    finish()


if __name__ == "__main__":
    main()
