#!/usr/bin/env python3
"""A poor man's stack of every thread of a hung process, for hosts without
gdb: each thread's stack pointer and program counter (/proc/PID/task/TID/
syscall), then the words of its stack (/proc/PID/mem, from the stack pointer
up) that point into executable mappings, named by module and, where nm
knows the module's symbols, by function. A scan, not an unwind: a word left
over from an earlier call shows up too, so read the innermost frames first.

Usage: stackscan.py PID [WORDS]  (needs the right to ptrace PID: root)
"""
import bisect
import os
import subprocess
import sys

pid = int(sys.argv[1])
words = int(sys.argv[2]) if len(sys.argv) > 2 else 4096

maps = []  # (start, end, offset, path)
with open(f"/proc/{pid}/maps") as f:
    for line in f:
        parts = line.split()
        if len(parts) < 6 or "x" not in parts[1]:
            continue
        a, b = (int(x, 16) for x in parts[0].split("-"))
        maps.append((a, b, int(parts[2], 16), parts[5]))
maps.sort()
starts = [m[0] for m in maps]

symbols = {}


def symtab(path):
    """Sorted (address, name) of path's functions (static ones too)."""
    if path in symbols:
        return symbols[path]
    table = []
    for flags in (["--defined-only"], ["-D", "--defined-only"]):
        try:
            out = subprocess.run(["nm", "-C", *flags, path], capture_output=True,
                                 text=True, timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        for line in out.splitlines():
            p = line.split(None, 2)
            if len(p) == 3 and p[1] in "tTwW":
                table.append((int(p[0], 16), p[2]))
        if table:
            break
    table.sort()
    symbols[path] = ([t[0] for t in table], [t[1] for t in table])
    return symbols[path]


def name(addr):
    k = bisect.bisect_right(starts, addr) - 1
    if k < 0 or addr >= maps[k][1]:
        return None
    a, _, off, path = maps[k]
    rel = addr - a + off  # the file's address (text: p_vaddr == p_offset)
    addrs, names = symtab(path)
    j = bisect.bisect_right(addrs, rel) - 1
    fn = f"{names[j]}+{rel - addrs[j]:#x}" if j >= 0 else f"{rel:#x}"
    return f"{os.path.basename(path)}:{fn}"


mem = open(f"/proc/{pid}/mem", "rb")
for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
    base = f"/proc/{pid}/task/{tid}"
    comm = open(f"{base}/comm").read().strip()
    sc = open(f"{base}/syscall").read().split()
    print(f"thread {tid} {comm}: syscall {' '.join(sc[:2])}")
    if len(sc) < 9:
        continue
    sp, pc = int(sc[-2], 16), int(sc[-1], 16)
    print(f"  pc {name(pc)}")
    try:
        mem.seek(sp)
        data = mem.read(8 * words)
    except OSError as e:
        print(f"  stack unreadable: {e}")
        continue
    seen = 0
    for i in range(0, len(data) - 7, 8):
        v = int.from_bytes(data[i:i + 8], "little")
        n = name(v)
        if n:
            print(f"  sp+{i:#06x} {n}")
            seen += 1
            if seen >= 40:
                break
