#!/bin/sh
# Command-line tests of `imgstat normalize` over folders: mirrored
# output trees, outputs byte-identical to single-file runs, collisions refused
# with nothing written, --skip-existing (mtimes kept, inputs not read),
# .npy --layout chw read by numpy, --range and --scale unit against numpy,
# the 0..1 --mean/--std warning, options and the mode word anywhere, PNG
# --compression, SIGINT / SIGTERM mid-run leaving only complete files.
# Pixel values are checked against numpy and PIL, never against imgstat.
# Usage: normalize_batch_test.sh IMGSTAT [DATA_DIR]
set -u
IMGSTAT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${2:-$HERE/../data}
PNGS=$DATA/pngsuite

. "$HERE/../support/lib.sh"
lib_python 'numpy, PIL' || lib_skip "python3 with numpy and PIL is needed"
lib_tmpdir imgstat-normbatch


# ---- a tree with alike names in different folders ----------------------------
mkdir -p "$T/in/a" "$T/in/b/c" "$T/loose"
cp "$PNGS/basn2c08.png" "$T/in/a/img.png"
cp "$PNGS/basn0g08.png" "$T/in/b/img.png"
cp "$PNGS/basn2c16.png" "$T/in/b/c/img.png"
cp "$PNGS/basn6a08.png" "$T/in/b/c/other.png"
echo "not an image" >"$T/in/b/README.txt"
cp "$PNGS/basn2c08.png" "$T/loose/solo.png"

expect 0 "a folder and a loose file into a missing folder" \
  "$IMGSTAT" normalize --backend cpu "$T/in" "$T/loose/solo.png" -o "$T/out/deep"
want="a/img.png b/c/img.png b/c/other.png b/img.png solo.png"
got=$(cd "$T/out/deep" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] && pass "mirrored tree: $got" || fail "tree: '$got', want '$want'"

# every output byte-identical to a run of its input alone
mkdir "$T/single"
for rel in a/img b/img b/c/img b/c/other; do
  "$IMGSTAT" normalize --backend cpu "$T/in/$rel.png" -o "$T/single/x.png" 2>/dev/null
  if cmp -s "$T/single/x.png" "$T/out/deep/$rel.png"; then pass "$rel: same bytes as alone"; else
    fail "$rel: differs from a single-file run"; fi
done
cmp -s "$T/out/deep/solo.png" "$T/out/deep/a/img.png" && pass "loose file: OUT/<basename>" || fail "loose solo.png"

# minmax values against numpy: (x - min) * 255 / (max - min), half to even
check_minmax() { # INPUT OUTPUT
  "$PY" - "$1" "$2" <<'EOF'
import sys, numpy as np
from PIL import Image
x = np.asarray(Image.open(sys.argv[1])).astype(np.int64)
y = np.asarray(Image.open(sys.argv[2])).astype(np.int64)
x = x.reshape(x.shape[0], x.shape[1], -1)
y = y.reshape(y.shape[0], y.shape[1], -1)
for c in range(x.shape[2]):
    lo, hi = x[:, :, c].min(), x[:, :, c].max()
    num, den = (x[:, :, c] - lo) * 255, hi - lo
    q, r = num // den, num % den
    q = q + ((2 * r > den) | ((2 * r == den) & (q % 2 == 1)))
    assert (q == y[:, :, c]).all(), c
EOF
}
check_minmax "$T/in/a/img.png" "$T/out/deep/a/img.png" && pass "a/img.png values = numpy" || fail "a/img.png values"
check_minmax "$T/in/b/img.png" "$T/out/deep/b/img.png" && pass "b/img.png values = numpy" || fail "b/img.png values"

# ---- -j 1 and -j 2 write the same bytes --------------------------------------
expect 0 "-j 1" "$IMGSTAT" normalize --backend cpu -j 1 "$T/in" -o "$T/j1"
expect 0 "-j 2" "$IMGSTAT" normalize --backend cpu -j 2 "$T/in" -o "$T/j2"
diff -r "$T/j1" "$T/j2" >/dev/null && pass "-j 1 and -j 2 identical" || fail "-j 1 and -j 2 differ"

# ---- collisions: refused before any work, naming both, nothing written -------
mkdir "$T/coll"
cp "$PNGS/basn2c08.png" "$T/coll/pic.png"
"$PY" -c "
from PIL import Image; Image.open('$PNGS/basn2c08.png').convert('RGB').save('$T/coll/pic.ppm')"
expect 2 "x.png beside x.ppm" "$IMGSTAT" normalize "$T/coll" -o "$T/cout"
grep -q "coll/pic.png' and '.*coll/pic.ppm' would both be written to" "$T/stderr" && pass "both named" || fail "collision message: $(cat "$T/stderr")"
[ ! -e "$T/cout" ] && pass "collision: nothing written (no folder)" || fail "collision: $T/cout made"
mkdir -p "$T/x" "$T/y" "$T/cout2"
cp "$PNGS/basn2c08.png" "$T/x/p.png"
cp "$PNGS/basn0g08.png" "$T/y/p.png"
expect 2 "two loose files with one name" "$IMGSTAT" normalize "$T/x/p.png" "$T/y/p.png" -o "$T/cout2"
[ -z "$(ls -A "$T/cout2")" ] && pass "loose collision: nothing written" || fail "loose collision wrote $(ls -A "$T/cout2")"
expect 2 "the output folder is the input folder" "$IMGSTAT" normalize "$T/in" -o "$T/in"
grep -q "refusing to overwrite an input" "$T/stderr" && pass "says it would overwrite an input" || fail "in -o in: $(cat "$T/stderr")"
expect 2 "several inputs, OUT named like a file" "$IMGSTAT" normalize "$T/x/p.png" "$T/in" -o "$T/out.png"
[ ! -e "$T/out.png" ] && pass "no out.png made" || fail "out.png made"

# A folder with no image file in it (empty, or only other files): named,
# exit 1, nothing written into OUT.
mkdir -p "$T/noimg/deep" "$T/noimg2"
echo a >"$T/noimg/a.txt"
echo b >"$T/noimg/deep/b.md"
expect 1 "normalize of a folder of text files" "$IMGSTAT" normalize "$T/noimg" -o "$T/nout"
grep -q "^imgstat: $T/noimg: no image files (2 other files skipped by extension)\$" "$T/stderr" &&
  pass "the folder is named, with the files skipped" || fail "noimg: $(cat "$T/stderr")"
[ -z "$(find "$T/nout" -type f 2>/dev/null)" ] && pass "noimg: nothing written" || fail "noimg wrote files"
expect 1 "normalize of an empty folder" "$IMGSTAT" normalize "$T/noimg2" -o "$T/nout2"
grep -q "^imgstat: $T/noimg2: no image files (0 other files skipped by extension)\$" "$T/stderr" &&
  pass "the empty folder is named" || fail "noimg2: $(cat "$T/stderr")"

# ---- options and the mode word anywhere --------------------------------------
expect 0 "mode and options after the file" "$IMGSTAT" normalize "$T/in/a/img.png" -o "$T/m1.png" clip 2,98 --backend cpu
expect 0 "mode first" "$IMGSTAT" normalize clip 2,98 --backend cpu -o "$T/m2.png" "$T/in/a/img.png"
cmp -s "$T/m1.png" "$T/m2.png" && pass "same output either way" || fail "mode position changes the output"
expect 2 "two modes" "$IMGSTAT" normalize minmax "$T/in/a/img.png" zscore -o "$T/m3.npy"
expect 0 "no mode word: minmax" "$IMGSTAT" normalize "$T/in/a/img.png" -o "$T/m4.png" --backend cpu
cmp -s "$T/m4.png" "$T/out/deep/a/img.png" && pass "no mode = minmax" || fail "default mode"
expect 0 "one file, -o without extension: a folder" "$IMGSTAT" normalize --backend cpu "$T/in/a/img.png" -o "$T/newdir"
[ -f "$T/newdir/img.png" ] && pass "written as newdir/img.png" || fail "newdir: $(ls -A "$T/newdir" 2>&1)"

# ---- --skip-existing ------------------------------------------------------------
expect 0 "first run" "$IMGSTAT" normalize --backend cpu "$T/in" -o "$T/sk"
mt() { stat -c %Y.%y "$1"; }
before_a=$(mt "$T/sk/a/img.png")
before_b=$(mt "$T/sk/b/img.png")
rm "$T/sk/b/c/img.png"
sleep 1.1
# an input whose output is there may even be broken now: it is not read
cp "$T/in/a/img.png" "$T/a-img.keep"
echo garbage >"$T/in/a/img.png"
expect 0 "--skip-existing re-run" "$IMGSTAT" normalize --backend cpu --skip-existing "$T/in" -o "$T/sk"
[ "$(mt "$T/sk/a/img.png")" = "$before_a" ] && [ "$(mt "$T/sk/b/img.png")" = "$before_b" ] && pass "present outputs untouched (mtime)" || fail "an output present was rewritten"
[ -f "$T/sk/b/c/img.png" ] && pass "the missing output written" || fail "missing output not written"
grep -q "3 of 4 outputs were there already" "$T/stderr" && pass "summary counts the skipped" || fail "summary: $(cat "$T/stderr")"
expect 1 "without --skip-existing the broken input fails" "$IMGSTAT" normalize --backend cpu "$T/in" -o "$T/sk"
grep -q "1 of 4 inputs failed" "$T/stderr" && pass "N of M inputs failed" || fail "failed summary: $(cat "$T/stderr")"
cp "$T/a-img.keep" "$T/in/a/img.png"

# ---- .npy layouts ------------------------------------------------------------------
expect 0 "zscore hwc" "$IMGSTAT" normalize --backend cpu zscore "$T/in" -o "$T/hwc"
expect 0 "zscore chw" "$IMGSTAT" normalize --backend cpu zscore --layout chw "$T/in" -o "$T/chw"
if "$PY" - "$T/hwc" "$T/chw" <<'EOF'
import sys, numpy as np
h, c = sys.argv[1], sys.argv[2]
for rel, shape in (("a/img.npy", (3, 32, 32)), ("b/img.npy", (1, 32, 32)),
                   ("b/c/other.npy", (4, 32, 32))):
    a, b = np.load(f"{h}/{rel}"), np.load(f"{c}/{rel}")
    assert b.shape == shape, (rel, b.shape)
    a = a.reshape(a.shape[0], a.shape[1], -1)
    assert (np.transpose(a, (2, 0, 1)) == b).all(), rel
EOF
then pass "chw: (C, H, W), the hwc arrays transposed"; else fail "chw shapes or values"; fi

# ---- --range and --scale unit against numpy -----------------------------------
RGB8=$T/in/a/img.png
check_range() { # OUTPUT LOW HIGH
  "$PY" - "$RGB8" "$@" <<'EOF'
import sys, numpy as np
from PIL import Image
x = np.asarray(Image.open(sys.argv[1])).astype(np.float64)
y = np.asarray(Image.open(sys.argv[2])).astype(np.int64)
lo, hi = eval(sys.argv[3]), eval(sys.argv[4])   # "0.2*255" as Python floats
t = (x - lo) / (hi - lo)
want = np.where(t <= 0, 0, np.where(t >= 1, 255, np.rint(t * 255))).astype(np.int64)
assert (want == y).all(), np.argwhere(want != y)[:3]
EOF
}
expect 0 "--range 50,200" "$IMGSTAT" normalize --backend cpu --range 50,200 "$RGB8" -o "$T/r1.png"
check_range "$T/r1.png" 50 200 && pass "--range 50,200 = numpy" || fail "--range 50,200 values"
expect 0 "--range -10.5,300.25" "$IMGSTAT" normalize --backend cpu --range -10.5,300.25 "$RGB8" -o "$T/r2.png"
check_range "$T/r2.png" -10.5 300.25 && pass "--range -10.5,300.25 = numpy" || fail "--range fractional values"
expect 0 "--scale unit --range 0.2,0.8" "$IMGSTAT" normalize --backend cpu --scale unit --range 0.2,0.8 "$RGB8" -o "$T/r3.png"
check_range "$T/r3.png" "0.2*255" "0.8*255" && pass "--scale unit --range = numpy" || fail "--scale unit --range values"
expect 2 "--range 5,5" "$IMGSTAT" normalize --range 5,5 "$RGB8" -o "$T/r4.png"
expect 2 "--range with a mode" "$IMGSTAT" normalize minmax --range 5,9 "$RGB8" -o "$T/r4.png"

# ---- torchvision's values: the warning, and --scale unit -----------------------
TV="--mean 0.485,0.456,0.406 --std 0.229,0.224,0.225"
# shellcheck disable=SC2086
expect 0 "0..1 mean/std on 8-bit" "$IMGSTAT" normalize --backend cpu $TV "$RGB8" -o "$T/tv1.npy"
grep -q "warning: every --mean and --std value is at most 1.*--scale unit" "$T/stderr" && pass "warns: give --scale unit" || fail "no units warning: $(cat "$T/stderr")"
# shellcheck disable=SC2086
expect 0 "the same with --scale unit" "$IMGSTAT" normalize --backend cpu $TV --scale unit "$RGB8" -o "$T/tv2.npy"
# (stderr holds the run's summary line, no warning)
grep -q "warning" "$T/stderr" && fail "--scale unit still warns: $(cat "$T/stderr")" || pass "--scale unit: no warning"
expect 0 "native units: no warning" "$IMGSTAT" normalize --backend cpu --mean 124,116,104 --std 58,57,57 "$RGB8" -o "$T/tv3.npy"
grep -q "warning" "$T/stderr" && fail "native units warn: $(cat "$T/stderr")" || pass "native units: no warning"
if "$PY" - "$RGB8" "$T/tv2.npy" <<'EOF'
import sys, numpy as np
from PIL import Image
x = np.asarray(Image.open(sys.argv[1])).astype(np.float64)
m, s = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
want = (x - m * 255) / (s * 255)
y = np.load(sys.argv[2])
assert y.dtype == np.float32 and np.allclose(y, want, rtol=0, atol=1e-5)
assert abs(y).max() < 3, abs(y).max()   # torchvision's scale, not 1111
EOF
then pass "--scale unit values = numpy (x/255 - mean)/std"; else fail "--scale unit values"; fi

# ---- PNG --compression: the same pixels at every level ---------------------------
expect 0 "--compression 0" "$IMGSTAT" normalize --backend cpu --compression 0 "$RGB8" -o "$T/c0.png"
expect 0 "--compression 9" "$IMGSTAT" normalize --backend cpu --compression 9 "$RGB8" -o "$T/c9.png"
expect 2 "--compression 10" "$IMGSTAT" normalize --compression 10 "$RGB8" -o "$T/c10.png"
if "$PY" - "$T/c0.png" "$T/c9.png" "$T/out/deep/a/img.png" <<'EOF'
import os, sys, numpy as np
from PIL import Image
a, b, c = (np.asarray(Image.open(p)) for p in sys.argv[1:])
assert (a == b).all() and (a == c).all()
assert os.path.getsize(sys.argv[1]) > os.path.getsize(sys.argv[2])
EOF
then pass "levels 0 and 9: same pixels (PIL), level 0 larger"; else fail "--compression outputs"; fi
# libpng (imgstat's reader, which checks every CRC) decodes them to PIL's
# pixels too: --range 0,FULL is the identity, written as .npy
for f in c0 c9 out/deep/b/c/img; do
  full=255
  [ "$f" = out/deep/b/c/img ] && full=65535
  if [ $full = 65535 ] && ! "$PY" -c 'import png' 2>/dev/null; then
    echo "skipped: $f.png: no pypng to read 16-bit RGB independently"
    continue
  fi
  "$IMGSTAT" normalize --backend cpu --range 0,$full "$T/$f.png" -o "$T/libpng.npy" 2>"$T/stderr" || fail "libpng cannot read $f.png: $(cat "$T/stderr")"
  # (PIL reads 16-bit RGB as 8-bit: pypng, another independent decoder, then)
  if "$PY" -c "
import sys, numpy as np
if $full == 255:
    from PIL import Image
    a = np.asarray(Image.open('$T/$f.png'))
else:
    import png
    w, h, rows, info = png.Reader(filename='$T/$f.png').asDirect()
    a = np.vstack([np.asarray(r, dtype=np.uint16) for r in rows]).reshape(h, w, info['planes'])
b = np.load('$T/libpng.npy')
sys.exit(0 if a.shape == b.shape and (a == b).all() else 1)"; then pass "$f.png: libpng and PIL/pypng decode the same"; else fail "$f.png: libpng and PIL/pypng differ"; fi
done

# ---- SIGINT and SIGTERM mid-run: only complete files, 130 / 143 ------------------
# Enough noisy images that the run takes a few seconds; the signal is sent
# once the first output is complete. Started through python, which sets INT
# back to its default (a script's background job has it ignored).
mkdir "$T/big"
"$PY" - "$T/big" <<'EOF'
import sys, numpy as np
from PIL import Image
rng = np.random.default_rng(1)
for i in range(24):
    Image.fromarray(rng.integers(0, 256, (700, 700, 3), dtype=np.uint8)).save(
        f"{sys.argv[1]}/n{i:02d}.ppm")
EOF
cat >"$T/dfl.py" <<'EOF'
import os, signal, sys
for name in ("SIGINT", "SIGTERM"):
    signal.signal(getattr(signal, name), signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])
EOF
for sig in INT TERM; do
  rm -rf "$T/sig"
  "$PY" "$T/dfl.py" "$IMGSTAT" normalize --backend cpu -j 2 --compression 9 "$T/big" -o "$T/sig" >"$T/stdout" 2>"$T/stderr" &
  pid=$!
  n=0
  while [ $n -lt 3000 ] && [ -z "$(ls "$T/sig" 2>/dev/null)" ] && kill -0 $pid 2>/dev/null; do
    sleep 0.01
    n=$((n + 1))
  done
  kill -s $sig $pid
  wait $pid
  rc=$?
  want=130
  [ $sig = TERM ] && want=143
  [ $rc -eq $want ] && pass "SIG$sig: exit $rc" || fail "SIG$sig: exit $rc, want $want"
  left=$(ls "$T/sig" | wc -l)
  if [ "$left" -ge 1 ] && [ "$left" -lt 24 ]; then pass "SIG$sig landed mid-run: $left of 24 written"; else
    fail "SIG$sig: $left of 24 outputs (not mid-run)"; fi
  [ -z "$(find "$T/sig" -name '.*' -type f)" ] && pass "SIG$sig: no temporary left" || fail "SIG$sig: temporaries: $(ls -A "$T/sig")"
  if "$PY" - "$T/big" "$T/sig" <<'EOF'
import os, sys, numpy as np
from PIL import Image
for name in os.listdir(sys.argv[2]):
    y = np.asarray(Image.open(os.path.join(sys.argv[2], name)))
    x = np.asarray(Image.open(os.path.join(sys.argv[1], name[:-4] + ".ppm")))
    assert y.shape == x.shape, name   # complete: PIL decodes every row
EOF
  then pass "SIG$sig: every file left decodes whole"; else fail "SIG$sig: a broken file left"; fi
done

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all $checks normalize batch checks passed"
exit 0
