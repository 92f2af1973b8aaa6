#!/usr/bin/env python3
"""The packed interleaved u16 kernel's accumulator on the CPU: cuts the
source of Hwc, HwcAcc and HwcPack16 out of cuda/fast.cu, compiles
tests/tools/hwc16_pack_model.cpp around it with the host's C++ compiler
(once a shape of the kernel: 3 or 4 vectors a thread a tile and 6 or 8,
the 32-bit sums flushed at their bound, every tile or every 3, with and
without the saturated skip); and the kernel by units (hwc_unit_kernel
<WordU16, C>, IMGSTAT_HWC16_UNIT, and hwc_unit_kernel<WordU8, C>: the word
types, find_in_vector and hwc_split_group .. hwc_unit_first cut too; 1, 2
or 4 units a thread a tile, with and without the lazy decode of a tile's
extremes and u8's extremes in the lanes' high bytes) and runs it: every channel's partial equal to a
plain scan's (see the .cpp).

    python3 tests/tools/hwc16_pack_model.py [ROOT]

Exit status 0 when every case agrees, 1 when one differs or the source
could not be cut, 77 (skipped) without a C++ compiler.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))

# (what, start marker, end marker) of the pieces of cuda/fast.cu
PIECES = [
    ("Hwc, HwcAcc", "template <typename Sample, int C> struct Hwc {",
     "/* The first sample of relative channel q equal"),
    ("HwcPack16", "template <int C> struct HwcPack16 {",
     "template <int C>\n__global__ void __launch_bounds__(FastPolicy::kBlock, "
     "kHwc16BlocksPerSm)"),
]
# the interleaved kernel by units (hwc_unit_kernel, IMGSTAT_HWC16_UNIT)
UNIT_PIECES = [
    ("PackedLanes, WordU8, WordU16", "template <int kShift> struct PackedLanes {",
     "/* u8 / u16 (Word: WordU8, WordU16)"),
    ("Found, find_in_vector", "template <typename Sample> struct Found {",
     "/* The first of the tile's valid vectors"),
    ("hwc_split_group .. hwc_unit_first", "/* C words of whole pixels",
     "template <typename Word, int C>\n__global__"),
]
# (-D flags, largest image in pixels)
SHAPES = [
    ("-DGROUPS=1 -DFLUSH=0 -DSKIP=1", 262147),
    ("-DGROUPS=2 -DFLUSH=3 -DSKIP=1", 65537),
    ("-DGROUPS=1 -DFLUSH=1 -DSKIP=0", 12289),
    ("-DUNIT=1 -DUNITS=2 -DSKIP=1", 262147),
    ("-DUNIT=1 -DUNITS=1 -DSKIP=0", 12289),
    ("-DUNIT=1 -DUNITS=2 -DSKIP=1 -DLAZY=0", 65537),
    # the u8 kernel by units (hwc_unit_kernel<WordU8, C>): extremes in the
    # lanes' high bytes (IMGSTAT_U8_HIGH_EXTREMES) or not, a tile's vectors
    # decoded lazily (IMGSTAT_FAST_LAZY_FIRST) or not
    ("-DUNIT=1 -DU8=1 -DUNITS=2 -DSKIP=1", 262147),
    ("-DUNIT=1 -DU8=1 -DUNITS=4 -DSKIP=0", 65537),
    ("-DUNIT=1 -DU8=1 -DUNITS=1 -DSKIP=1 -DHIGH=0", 65537),
    ("-DUNIT=1 -DU8=1 -DUNITS=2 -DSKIP=0 -DLAZY=0 -DHIGH=0", 12289),
    ("-DUNIT=1 -DUNITS=2 -DSKIP=1 -DLAZY=2", 12289),
]


def main():
    cxx = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    if not cxx:
        print("no C++ compiler: skipped")
        return 77
    src = open(os.path.join(ROOT, "cuda", "fast.cu")).read()
    cuts = []
    for pieces in (PIECES, UNIT_PIECES):
        cut = []
        for what, start, end in pieces:
            a = src.find(start)
            b = src.find(end, a + 1) if a >= 0 else -1
            if a < 0 or b < 0:
                print(f"cuda/fast.cu: {what} not found (markers changed?)")
                return 1
            cut.append(src[a:b])
        cuts.append(cut)
    model = os.path.join(ROOT, "tests", "tools", "hwc16_pack_model.cpp")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, cut in zip(("hwc16_pack.inc", "hwc_unit.inc"), cuts):
            with open(os.path.join(tmp, name), "w") as f:
                f.write("\n".join(cut))
        for flags, largest in SHAPES:
            exe = os.path.join(tmp, "model")
            cc = subprocess.run([cxx, "-std=c++17", "-O2", "-Wall", "-Wextra",
                                 "-Wno-unknown-pragmas", "-I", tmp,
                                 *flags.split(), model, "-o", exe],
                                capture_output=True, text=True)
            if cc.returncode != 0:
                print(cc.stdout + cc.stderr)
                print(f"FAIL compile {flags}")
                failed = 1
                continue
            run = subprocess.run([exe, str(largest)], capture_output=True,
                                 text=True)
            out = run.stdout.strip().splitlines()
            for line in out[:10]:
                if line.startswith(("FAIL", "BUG")):
                    print(line)
            print(f"{flags}: {out[-1] if out else '(no output)'}")
            if run.returncode != 0:
                failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
