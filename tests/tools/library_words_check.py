#!/usr/bin/env python3
"""The library's messages name no command-line flag: every string literal
among the arguments of the library's message makers in src/ and cuda/
(imgstat_error_set, ist_fail, ist_corrupt, ist_add_warning) is free of
"--name". The library serves two front ends (the command line and Python):
it names a setting in its own words ("as=gray", "npy_layout") and the
command line puts its flag in their place (programs/imgstat/cli_util.c,
ist_cli_error_words).

    python3 tests/tools/library_words_check.py [ROOT]

Prints each message with its file and line; exits 1 then, 0 when none.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
CALL = re.compile(r"\b(imgstat_error_set|ist_fail|ist_corrupt|"
                  r"ist_add_warning)\s*\(")
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
FLAG = re.compile(r"(^|[^-\w])--[a-z]")


def call_arguments(text, start):
    """The text of a call's arguments from start (after its '(') to its
    closing ')', string literals skipped whole."""
    depth, i = 1, start
    while i < len(text) and depth:
        c = text[i]
        if c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    return text[start:i]


found = []
for top in ("src", "cuda"):
    for d, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".cu", ".cuh", ".cpp")):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for m in CALL.finditer(text):
                for lit in LITERAL.findall(call_arguments(text, m.end())):
                    if FLAG.search(lit):
                        found.append("%s:%d: %s(... \"%s\" ...)" % (
                            os.path.relpath(path, ROOT),
                            text.count("\n", 0, m.start()) + 1, m.group(1),
                            lit))
for line in found:
    print(line)
print("library_words_check: %d messages name a command-line flag" %
      len(found))
sys.exit(1 if found else 0)
