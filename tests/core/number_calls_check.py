#!/usr/bin/env python3
"""Every number read or printed in the C locale, through one place.

Usage: number_calls_check.py SOURCE_DIR

In the library, the program and the Python module (src/, cuda/,
python/src/), outside src/core/number.c: no strtod, strtof, strtold, atof,
std::stod or std::stof (imgstat_number_read reads numbers), no scanf-family
call with a float conversion, and no printf-family call whose format holds a
float conversion (%f, %e, %g, %a), and no vprintf-family call (a format
handed on may hold one): imgstat_number_snprintf and its kin print them in the C
locale whatever locale the process has set (docs/formats.md, "Numbers").
"""
import os
import re
import sys

src = sys.argv[1]
HOME = os.path.join("src", "core", "number.c")
READ = re.compile(r"\b(strto(?:d|f|ld)|atof|std::sto(?:d|f|ld))\s*\(")
CALL = re.compile(r"(?<![\w.>])(v?(?:sn|s|f|d|as)?printf|v?(?:s|f)?scanf)"
                  r"\s*\(")
FLOAT = re.compile(r"%[-+ #0']*(?:\*|\d+)?(?:\.(?:\*|\d*))?(?:L|l|ll)?"
                   r"[fFeEgGaA]")
PIECE = re.compile(r'"(?:[^"\\\n]|\\.)*"|\b(?:PRI|SCN)(\w)\w*\b')


def strip_comments(text):
    """The text with comments blanked (strings kept, lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def arguments(text, i):
    """The arguments of the call whose '(' is at i, split at top-level
    commas."""
    depth, args, start, j = 0, [], i + 1, i
    while j < len(text):
        c = text[j]
        if c in "\"'":
            k = j + 1
            while k < len(text) and text[k] != c:
                k += 2 if text[k] == "\\" else 1
            j = k
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:j])
                return [a.strip() for a in args]
        elif c == "," and depth == 1:
            args.append(text[start:j])
            start = j + 1
        j += 1
    return args


# where the format is among the arguments, by the function's name
FORMAT_AT = {"printf": 0, "vprintf": 0, "scanf": 0, "vscanf": 0,
             "sprintf": 1, "vsprintf": 1, "fprintf": 1, "vfprintf": 1,
             "dprintf": 1, "vdprintf": 1, "asprintf": 1, "vasprintf": 1,
             "sscanf": 1, "vsscanf": 1, "fscanf": 1, "vfscanf": 1,
             "snprintf": 2, "vsnprintf": 2}

found = []
for top in ("src", "cuda", os.path.join("python", "src")):
    for folder, _, names in os.walk(os.path.join(src, top)):
        for name in sorted(names):
            if not name.endswith((".c", ".h", ".cu", ".cuh", ".cpp", ".hpp")):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, src)
            if rel == HOME:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = strip_comments(f.read())

            def where(i):
                return "%s:%d" % (rel, text.count("\n", 0, i) + 1)

            for m in READ.finditer(text):
                found.append("%s: %s (imgstat_number_read reads numbers)"
                             % (where(m.start()), m.group(1)))
            for m in CALL.finditer(text):
                fn = m.group(1)
                if fn not in FORMAT_AT:
                    continue
                args = arguments(text, m.end() - 1)
                if len(args) <= FORMAT_AT[fn]:
                    continue  # a declaration or a macro's name
                fmt = args[FORMAT_AT[fn]]
                if fn.startswith("v"):
                    if not fn.endswith("scanf"):
                        found.append("%s: %s hands on a format, which may "
                                     "hold a float (imgstat_number_%s)"
                                     % (where(m.start()), fn, fn))
                    continue
                # the literals of the format (both of a ?: too), with
                # <inttypes.h>'s macros as their conversion letter
                body = "".join(t.group(1) if t.group(1) is not None
                               else t.group(0)[1:-1]
                               for t in PIECE.finditer(fmt))
                if FLOAT.search(body.replace("%%", "")):
                    found.append("%s: %s(%s) prints or reads a float in the "
                                 "process's locale" % (where(m.start()), fn,
                                                       fmt))
for line in found:
    print("FAIL: " + line)
print("number_calls_check: %d calls outside src/core/number.c"
      % len(found))
sys.exit(1 if found else 0)
