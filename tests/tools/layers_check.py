#!/usr/bin/env python3
"""The floors of docs/architecture.md ("Folders: what each owns, what it may
include"), checked on the code: every #include "..." of the library, the
CUDA backend, the programs and the Python binding is resolved to the folder
that owns the header, and the edge (including folder -> owning folder) must
be one the table allows, directly or through a floor below; the folders'
graph must have no circle; the front ends (programs/imgstat, python/src)
include only the public interface (include/imgstat/) and their own headers.

    python3 tests/tools/layers_check.py [ROOT]

Prints each edge the table does not allow, with the file and line, and a
circle when there is one; exits 1 then, 0 when the code follows the table.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))

# Who may include whom, directly (the "may include" column); a floor may
# include what its allowed floors may, so lower floors need not be listed.
ALLOWED = {
    "src/core": set(),
    "src/io": {"src/core"},
    "src/hist": {"src/core"},
    "src/norm": {"src/core", "src/hist"},
    "src/cpu": {"src/core", "src/hist", "src/norm"},
    "cuda": {"src/core", "src/hist", "src/norm"},
    # the GPU C API without CUDA: the same interface as cuda/
    "src/nocuda": {"src/core", "src/hist", "src/norm", "cuda"},
    "src/mpi": {"src/core"},
    "src/dataset": {"src/core", "src/hist", "src/norm"},
    # the records map the engine's result value to text, JSON and CSV
    "src/record": {"src/core", "src/hist", "src/dataset", "src/engine"},
    "src/engine": {"src/core", "src/io", "src/cpu", "src/hist", "src/norm",
                   "src/dataset", "cuda", "src/nocuda"},
    "src/run": {"src/engine", "src/dataset", "src/record", "src/mpi"},
    # the report page: the records' escaping, numbers and constants, the
    # dataset's result, the engine's result value, images read and written
    "src/report": {"src/core", "src/hist", "src/dataset", "src/record",
                   "src/engine"},
    # the front ends: the public interface only (programs/imgstat/ and
    # python/src/ include nothing private of the library)
    "programs/imgstat": {"include"},
    "programs/bench": {"include", "programs/imgstat", "cuda"},
    "python/src": {"include"},
}

# The folder whose code a public header describes (its floor).
PUBLIC_OWNER = {
    "imgstat.h": "src/core",
    "pool.h": "src/core",
    "hist.h": "src/hist",
    "norm.h": "src/norm",
    "dataset.h": "src/dataset",
    "record.h": "src/record",
    "engine.h": "src/engine",
    "inputs.h": "src/engine",
    "outputs.h": "src/engine",
    "batch.h": "src/engine",
    "run.h": "src/run",
    "report.h": "src/report",
    "mpi.h": "src/mpi",
    "cuda.h": "cuda",
    "cuda_norm.h": "cuda",
}

FOLDERS = sorted(ALLOWED, key=len, reverse=True)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(rel):
    for f in FOLDERS:
        if rel == f or rel.startswith(f + "/"):
            return f
    return None


def closure(f, seen=None):
    seen = set() if seen is None else seen
    for g in ALLOWED.get(f, ()):
        if g not in seen:
            seen.add(g)
            closure(g, seen)
    return seen


def main():
    files = {}
    for f in ALLOWED:
        top = os.path.join(ROOT, f)
        for dirpath, _, names in os.walk(top):
            for n in names:
                if n.endswith((".c", ".h", ".cu", ".cuh", ".cpp")):
                    rel = os.path.relpath(os.path.join(dirpath, n), ROOT)
                    files[rel] = folder_of(rel)
    # the public headers stand on their owners' floors
    pub_dir = os.path.join(ROOT, "include", "imgstat")
    for n in sorted(os.listdir(pub_dir)):
        if n.endswith(".h"):
            if n not in PUBLIC_OWNER:
                print(f"include/imgstat/{n}: a public header with no floor "
                      "in this check")
                return 1
            files[os.path.join("include", "imgstat", n)] = PUBLIC_OWNER[n]
    by_name = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
    public = set(os.listdir(os.path.join(ROOT, "include", "imgstat")))
    bad = []
    edges = {}
    for rel, f in sorted(files.items()):
        with open(os.path.join(ROOT, rel), encoding="utf-8",
                  errors="replace") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{rel}:{line}"
            if inc.startswith("imgstat/"):
                name = inc[len("imgstat/"):]
                if name not in public:
                    bad.append(f"{where}: {inc} is not a public header")
                    continue
                owner = PUBLIC_OWNER.get(name)
                if owner is None:
                    bad.append(f"{where}: {inc} has no floor in this check")
                    continue
                if rel.startswith("programs/imgstat/") or \
                        rel.startswith("python/src/") or \
                        "include" in ALLOWED[f]:
                    continue  # a front end on the public interface
                target = owner
            else:
                here = os.path.join(os.path.dirname(rel), inc)
                if os.path.normpath(here) in files:
                    target = files[os.path.normpath(here)]
                else:
                    cands = by_name.get(os.path.basename(inc), [])
                    if len(cands) != 1:
                        bad.append(f"{where}: \"{inc}\" found "
                                   f"{len(cands)} times: {cands}")
                        continue
                    target = files[cands[0]]
                if f.startswith("programs/") and \
                        target.startswith("programs/"):
                    continue  # the program and its bench: one binary
                if (rel.startswith("programs/imgstat/") or
                        rel.startswith("python/src/")) and target != f:
                    bad.append(f"{where}: the front end {f} includes the "
                               f"private \"{inc}\" of {target}")
                    continue
            if target == f:
                continue
            edges.setdefault(f, set()).add(target)
            if target not in closure(f):
                bad.append(f"{where}: {f} includes \"{inc}\" of {target}, "
                           f"a floor it may not include")
    # a circle among the folders
    state = {}

    def visit(f, path):
        state[f] = 1
        for g in sorted(edges.get(f, ())):
            if state.get(g) == 1:
                bad.append("circle: " + " -> ".join(path + [f, g]))
            elif g not in state:
                visit(g, path + [f])
        state[f] = 2

    for f in sorted(edges):
        if f not in state:
            visit(f, [])
    for b in bad:
        print(b)
    print(f"layers_check: {len(files)} files, "
          f"{sum(len(v) for v in edges.values())} folder edges, "
          f"{len(bad)} not allowed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
