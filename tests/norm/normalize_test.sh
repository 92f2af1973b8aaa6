#!/bin/sh
# Command-line tests of `imgstat normalize`: exit codes, messages, outputs
# re-measured with `imgstat --json`, percentiles computed here with python3,
# .npy read by numpy (skipped visibly without it), CPU against GPU files
# (skipped visibly without a GPU), Ctrl-C and failing writes leaving no file.
# Usage: normalize_test.sh IMGSTAT [DATA_DIR]
set -u
IMGSTAT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${2:-$HERE/../data}
PNGS=$DATA/pngsuite

if ! "$IMGSTAT" normalize --help >/dev/null 2>&1; then
  echo "skipped: 'imgstat normalize' is not wired into this imgstat"
  exit 77
fi
if [ ! -f "$PNGS/basn2c08.png" ]; then
  echo "skipped: test images $PNGS are missing"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "skipped: python3 is needed to check JSON and percentiles"
  exit 77
fi

# The checks below want numpy and pypng: take the first python3 that has them
# (a python3 earlier on PATH may not see Debian's python3-numpy).
. "$HERE/../support/lib.sh"
lib_python 'numpy, png' || PY=python3
lib_tmpdir imgstat-normtest

# No file other than the expected ones (a temporary .NAME.XXXXXX would show).
no_leftovers() {
  left=$(find "$T/$1" -name '.*' -type f | head -1)
  if [ -z "$left" ]; then pass "no temporary left in $1"; else
    fail "temporary left: $left"; fi
}

mkdir "$T/out"
RGB8=$PNGS/basn2c08.png
RGB16=$PNGS/basn2c16.png
RGBA8=$PNGS/basn6a08.png
GRAY8=$PNGS/basn0g08.png

# ---- usage errors: exit 2, nothing written --------------------------------
expect 0 "--help" "$IMGSTAT" normalize --help
expect 2 "no -o" "$IMGSTAT" normalize "$RGB8"
expect 2 "no input" "$IMGSTAT" normalize -o "$T/out/x.png"
expect 2 "bad clip" "$IMGSTAT" normalize clip 99,1 "$RGB8" -o "$T/out/x.png"
expect 2 "unknown option" "$IMGSTAT" normalize --frobnicate "$RGB8" -o "$T/out/x.png"
expect 2 "zscore to PNG" "$IMGSTAT" normalize zscore "$RGB8" -o "$T/out/x.png"
expect 2 "--std 0" "$IMGSTAT" normalize --mean 1 --std 0 "$RGB8" -o "$T/out/x.npy"
# numbers: strict (no spaces, hex, inf/nan), tiny values accepted
expect 2 "--std 0x1" "$IMGSTAT" normalize --mean 1 --std 0x1 "$RGB8" -o "$T/out/x.npy"
expect 2 "--mean ' 1'" "$IMGSTAT" normalize --mean " 1" --std 1 "$RGB8" -o "$T/out/x.npy"
expect 2 "--std inf" "$IMGSTAT" normalize --mean 1 --std inf "$RGB8" -o "$T/out/x.npy"
expect 2 "clip 0x1,99" "$IMGSTAT" normalize clip 0x1,99 "$RGB8" -o "$T/out/x.png"
expect 2 "clip ' 1,99'" "$IMGSTAT" normalize clip " 1,99" "$RGB8" -o "$T/out/x.png"
expect 2 "--std 1e400" "$IMGSTAT" normalize --mean 1 --std 1e400 "$RGB8" -o "$T/out/x.npy"
grep -q "too large" "$T/stderr" && pass "--std 1e400: says too large" || fail "--std 1e400 message"
expect 2 "unknown extension" "$IMGSTAT" normalize "$RGB8" -o "$T/out/x.tiff"
expect 2 "two inputs, OUT not a folder" "$IMGSTAT" normalize "$RGB8" "$RGB16" -o "$T/out/x.png"
cp "$RGB8" "$T/in.png"
cp "$T/in.png" "$T/in.orig"
expect 2 "OUT names the input" "$IMGSTAT" normalize "$T/in.png" -o "$T/in.png"
expect 2 "OUT names the input by another path" "$IMGSTAT" normalize "$T/in.png" -o "$T/../$(basename "$T")/in.png"
ln -s in.png "$T/link.png"
expect 2 "OUT is a link to the input" "$IMGSTAT" normalize "$T/in.png" -o "$T/link.png"
if cmp -s "$T/in.png" "$T/in.orig"; then pass "input untouched"; else fail "input changed"; fi
if [ -z "$(ls "$T/out")" ]; then pass "usage errors wrote nothing"; else fail "files after usage errors: $(ls "$T/out")"; fi

# ---- the collision checks are O(n): 5000 inputs into a folder holding their
# outputs, the last input's output colliding with the first's (so found only
# after every other check). Quadratic, this took a minute here; now 0.1 s.
mkdir "$T/n5k" "$T/n5k/in" "$T/n5k/in2" "$T/n5k/out"
"$PY" -c '
import os, sys
d = sys.argv[1]
names = []
for k in range(5000):
    for sub in ("in", "out"):
        open(os.path.join(d, sub, "i%d.png" % k), "w").close()
    names.append(os.path.join(d, "in", "i%d.png" % k))
open(os.path.join(d, "in2", "i0.png"), "w").close()
names.append(os.path.join(d, "in2", "i0.png"))
open(os.path.join(d, "list"), "w").write("\n".join(names) + "\n")
' "$T/n5k"
t0=$(date +%s%N)
(
  IFS='
'
  set -f
  # shellcheck disable=SC2046 # one name a line, no spaces in them
  set -- $(cat "$T/n5k/list")
  exec "$IMGSTAT" normalize "$@" -o "$T/n5k/out"
) >"$T/stdout" 2>"$T/stderr"
rc=$?
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
if [ "$rc" -eq 2 ] && grep -q "i0.png' would both be written" "$T/stderr"; then
  pass "5000 inputs: the collision found"
else fail "5000 inputs: exit $rc: $(cat "$T/stderr")"; fi
if [ "$ms" -lt 3000 ]; then pass "5000 inputs checked in $ms ms"; else
  fail "5000 inputs: the checks took $ms ms (quadratic?)"; fi
rm -rf "$T/n5k"

# ---- minmax re-measured: 0 and full range in every non-constant channel ---
# check_range FILE FULL: every channel with max > min reaches 0 and FULL.
check_range() {
  "$IMGSTAT" --backend cpu --json "$1" >"$T/m.json" 2>"$T/stderr" || { fail "measure $1"; return; }
  if "$PY" - "$T/m.json" "$2" <<'EOF'
import json, sys
rec = json.loads(open(sys.argv[1]).readline())
full = float(sys.argv[2])
for s in rec["stats"]:
    if s["channel"] == "A":
        continue
    assert s["min"] == 0 and s["max"] == full, s
EOF
  then pass "range of $(basename "$1") is 0..$2"; else fail "range of $1"; fi
}
expect 0 "minmax RGB8" "$IMGSTAT" normalize --backend cpu "$RGB8" -o "$T/out/a.png"
check_range "$T/out/a.png" 255
expect 0 "minmax RGB16" "$IMGSTAT" normalize --backend cpu minmax "$RGB16" -o "$T/out/b.png"
check_range "$T/out/b.png" 65535
expect 0 "minmax RGB16 to 8 bits" "$IMGSTAT" normalize --backend cpu "$RGB16" --depth 8 -o "$T/out/c.png"
check_range "$T/out/c.png" 255
expect 0 "minmax gray to 16 bits" "$IMGSTAT" normalize --backend cpu "$GRAY8" --depth 16 -o "$T/out/d.png"
check_range "$T/out/d.png" 65535

# alpha copied unchanged
expect 0 "minmax RGBA8" "$IMGSTAT" normalize --backend cpu "$RGBA8" -o "$T/out/e.png"
"$IMGSTAT" --backend cpu --json "$RGBA8" "$T/out/e.png" >"$T/e.json"
if "$PY" - "$T/e.json" <<'EOF'
import json, sys
a, b = [json.loads(l) for l in open(sys.argv[1])]
assert a["stats"][3] == b["stats"][3] or \
    {k: v for k, v in a["stats"][3].items()} == b["stats"][3], (a, b)
EOF
then pass "alpha unchanged"; else fail "alpha changed"; fi
expect 0 "--alpha drop" "$IMGSTAT" normalize --backend cpu --alpha drop "$RGBA8" -o "$T/out/f.png"
"$IMGSTAT" --json "$T/out/f.png" | grep -q '"channels":3' && pass "alpha dropped" || fail "alpha not dropped"

# ---- clip against percentiles computed here ---------------------------------
expect 0 "clip 2,98 to npy (u8 values)" "$IMGSTAT" normalize --backend cpu clip 2,98 "$RGB8" -o "$T/out/clip.png"
# Decode both with imgstat's own PNG reader into .npy through normalize
# --depth keeping values (minmax of an image already 0..255 is identity only
# when it spans 0..255), so read the PNGs with pypng when present, else skip.
if "$PY" -c 'import png, numpy' 2>/dev/null; then
  if "$PY" - "$RGB8" "$T/out/clip.png" <<'EOF'
import sys, math, numpy as np, png
def load(p):
    w, h, rows, info = png.Reader(filename=p).asDirect()
    return np.vstack([np.asarray(r, dtype=np.int64) for r in rows]).reshape(h, w, info["planes"])
x, y = load(sys.argv[1]), load(sys.argv[2])
for c in range(3):
    v = np.sort(x[:, :, c].ravel()); n = v.size
    rank = lambda p: max(1, -(-p * n // 100))   # ceil(p n / 100), integers
    lo, hi = int(v[rank(2) - 1]), int(v[rank(98) - 1])
    xc = x[:, :, c]
    want = np.where(xc <= lo, 0, np.where(xc >= hi, 255, 0))
    mid = (xc > lo) & (xc < hi)
    # round half to even of (x - lo) * 255 / (hi - lo), exactly
    num, den = (xc - lo) * 255, hi - lo
    q, r = num // den, num % den
    q = q + ((2 * r > den) | ((2 * r == den) & (q % 2 == 1)))
    want = np.where(mid, q, want)
    assert (want == y[:, :, c]).all(), (c, lo, hi)
EOF
  then pass "clip matches percentiles computed independently"; else fail "clip values"; fi
else
  echo "skipped: clip value check ($PY has no numpy or pypng)"
fi

# ---- float outputs ---------------------------------------------------------
expect 0 "zscore to npy" "$IMGSTAT" normalize --backend cpu zscore "$RGB8" -o "$T/out/z.npy"
expect 0 "zscore to pfm" "$IMGSTAT" normalize --backend cpu zscore "$RGB8" -o "$T/out/z.pfm"
expect 1 "zscore of RGBA to PFM (4 channels)" "$IMGSTAT" normalize zscore "$RGBA8" -o "$T/out/za.pfm"
grep -q "PFM holds 1 or 3 channels" "$T/stderr" && pass "PFM refusal says why" || fail "PFM refusal message"
if "$PY" -c 'import numpy' 2>/dev/null; then
  if "$PY" - "$T/out/z.npy" "$T/out/z.pfm" <<'EOF'
import sys, numpy as np
a = np.load(sys.argv[1])
assert a.shape == (32, 32, 3) and a.dtype == np.float32, (a.shape, a.dtype)
m, s = a.mean(axis=(0, 1)), a.std(axis=(0, 1))
assert np.all(np.abs(m) < 1e-5) and np.all(np.abs(s - 1) < 1e-5), (m, s)
# the PFM holds the same floats, bottom row first
with open(sys.argv[2], "rb") as f:
    assert f.readline() == b"PF\n" and f.readline() == b"32 32\n"
    assert float(f.readline()) < 0
    b = np.frombuffer(f.read(), dtype="<f4").reshape(32, 32, 3)[::-1]
assert (a == b).all()
EOF
  then pass ".npy loads in numpy (shape, dtype, mean 0, std 1); PFM equal"; else fail ".npy/.pfm content"; fi
else
  echo "skipped: numpy check of .npy (numpy absent)"
fi

# --stats-from a record of imgstat --json equals zscore (ddof 0) bit for bit
"$IMGSTAT" --backend cpu --json "$RGB8" >"$T/stats.json"
expect 0 "--stats-from" "$IMGSTAT" normalize --backend cpu --stats-from "$T/stats.json" "$RGB8" -o "$T/out/g.npy"
if cmp -s "$T/out/g.npy" "$T/out/z.npy"; then pass "--stats-from equals zscore"; else fail "--stats-from differs from zscore"; fi
echo '{"file":"x","stats":[{"channel":"R","mean":null,"std":1}]}' >"$T/bad.json"
expect 2 "--stats-from with a null mean" "$IMGSTAT" normalize --stats-from "$T/bad.json" "$RGB8" -o "$T/out/h.npy"
expect 2 "--mean/--std count mismatch" "$IMGSTAT" normalize --mean 1,2,3 --std 1,2 "$RGB8" -o "$T/out/h.npy"
expect 0 "--mean/--std" "$IMGSTAT" normalize --mean 127.5 --std 127.5 "$RGB8" -o "$T/out/h.npy"
expect 0 "--std 1e-308 (a subnormal) is a number" "$IMGSTAT" normalize --mean 0 --std 1e-308 "$RGB8" -o "$T/out/h.npy"

# ---- several inputs to a folder, one missing: exit 1, the others written ----
mkdir "$T/many"
expect 1 "a missing input among several" "$IMGSTAT" normalize --backend cpu "$RGB8" "$T/missing.png" "$RGB16" -o "$T/many"
grep -q "missing.png" "$T/stderr" && pass "the missing input is named" || fail "no message naming the missing input"
[ -f "$T/many/basn2c08.png" ] && [ -f "$T/many/basn2c16.png" ] && pass "the others were written" || fail "outputs missing: $(ls "$T/many")"
no_leftovers many

# ---- only a regular file is replaced: never a FIFO, a symbolic link, ... -----
mkdir "$T/special"
mkfifo "$T/special/fifo.png"
echo "keep" >"$T/special/target.png"
ln -s target.png "$T/special/link.png"
ln -s nowhere.png "$T/special/dangling.png"
for name in fifo.png link.png dangling.png; do
  expect 1 "-o $name (not a regular file)" "$IMGSTAT" normalize --backend cpu "$RGB8" -o "$T/special/$name"
  grep -q "exists and is not a regular file" "$T/stderr" && pass "$name: says why" || fail "$name: message: $(cat "$T/stderr")"
done
[ -p "$T/special/fifo.png" ] && pass "FIFO still a FIFO" || fail "FIFO replaced"
[ -L "$T/special/link.png" ] && [ -L "$T/special/dangling.png" ] && pass "links still links" || fail "a link replaced"
[ "$(cat "$T/special/target.png")" = keep ] && pass "link target untouched" || fail "link target changed"
expect 1 "--histogram-png to a FIFO" "$IMGSTAT" --backend cpu --histogram-png "$T/special/fifo.png" "$RGB8"
[ -p "$T/special/fifo.png" ] && pass "--histogram-png: FIFO still a FIFO" || fail "--histogram-png replaced the FIFO"
expect 1 "--histogram-png to a symbolic link" "$IMGSTAT" --backend cpu --histogram-png "$T/special/link.png" "$RGB8"
[ -L "$T/special/link.png" ] && pass "--histogram-png: link still a link" || fail "--histogram-png replaced the link"
[ -z "$(find "$T/special" -name '.*' -type f)" ] && pass "no temporary left in special" || fail "temporary left in special"

# ---- modes: a replaced file keeps its mode; a new one gets 0666 - umask ------
mkdir "$T/mode"
(umask 022; exec "$IMGSTAT" normalize --backend cpu "$RGB8" -o "$T/mode/new.png") 2>"$T/stderr"
[ "$(stat -c %a "$T/mode/new.png")" = 644 ] && pass "new file, umask 022: 644" || fail "new file mode $(stat -c %a "$T/mode/new.png"), want 644"
(umask 077; exec "$IMGSTAT" normalize --backend cpu "$RGB8" -o "$T/mode/private.png") 2>"$T/stderr"
[ "$(stat -c %a "$T/mode/private.png")" = 600 ] && pass "new file, umask 077: 600" || fail "new file mode $(stat -c %a "$T/mode/private.png"), want 600"
: >"$T/mode/secret.png"
chmod 600 "$T/mode/secret.png"
(umask 022; exec "$IMGSTAT" normalize --backend cpu "$RGB8" -o "$T/mode/secret.png") 2>"$T/stderr"
[ "$(stat -c %a "$T/mode/secret.png")" = 600 ] && pass "replaced 0600 file stays 600" || fail "replaced 0600 file became $(stat -c %a "$T/mode/secret.png")"
[ -s "$T/mode/secret.png" ] && pass "replaced 0600 file written" || fail "replaced 0600 file empty"
: >"$T/mode/shared.npy"
chmod 664 "$T/mode/shared.npy"
(umask 077; exec "$IMGSTAT" normalize --backend cpu zscore "$RGB8" -o "$T/mode/shared.npy") 2>"$T/stderr"
[ "$(stat -c %a "$T/mode/shared.npy")" = 664 ] && pass "replaced 0664 file stays 664 under umask 077" || fail "replaced 0664 file became $(stat -c %a "$T/mode/shared.npy")"
: >"$T/mode/hist.png"
chmod 640 "$T/mode/hist.png"
(umask 022; exec "$IMGSTAT" --backend cpu --histogram-png "$T/mode/hist.png" "$RGB8") >/dev/null 2>"$T/stderr"
[ "$(stat -c %a "$T/mode/hist.png")" = 640 ] && pass "--histogram-png keeps 640" || fail "--histogram-png: mode $(stat -c %a "$T/mode/hist.png")"
no_leftovers mode

# ---- long output names: the temporary's name must fit too (NAME_MAX 255) -----
mkdir "$T/long"
for n in 246 251; do
  name=$("$PY" -c "print('a' * $n + '.png')")
  expect 0 "an output name of $((n + 4)) bytes" "$IMGSTAT" normalize --backend cpu "$RGB8" -o "$T/long/$name"
  [ -s "$T/long/$name" ] && pass "$((n + 4)) bytes: written" || fail "$((n + 4)) bytes: no file"
done
name=$("$PY" -c "print('h' * 251 + '.png')")
expect 0 "--histogram-png with a 255-byte name" "$IMGSTAT" --backend cpu --histogram-png "$T/long/$name" "$RGB8"
[ -s "$T/long/$name" ] && pass "255-byte histogram PNG written" || fail "255-byte histogram PNG missing"
no_leftovers long

# ---- failing writes leave no file ---------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$T/ro" && chmod 555 "$T/ro"
  expect 1 "read-only folder" "$IMGSTAT" normalize "$RGB8" -o "$T/ro/x.png"
  [ -z "$(ls -A "$T/ro")" ] && pass "nothing in the read-only folder" || fail "files in read-only folder"
else
  echo "skipped: read-only folder (running as root)"
fi
# a file size limit makes the write fail part-way (the disk-full case)
mkdir "$T/full"
"$PY" -c "import sys; w=h=600; sys.stdout.buffer.write(b'P6\n%d %d\n255\n' % (w, h) + bytes((i * 7919) % 251 for i in range(w * h * 3)))" >"$T/big.ppm"
(ulimit -f 40; trap '' XFSZ; exec "$IMGSTAT" normalize --backend cpu "$T/big.ppm" -o "$T/full/x.npy") >"$T/stdout" 2>"$T/stderr"
rc=$?
if [ "$rc" -eq 1 ] && [ -z "$(ls -A "$T/full")" ]; then pass "disk full: exit 1, no file"; else
  fail "disk full: exit $rc, files: $(ls -A "$T/full")"; sed 's/^/  | /' "$T/stderr"; fi

# ---- signals during the write: the temporary removed, death by the signal ----
# Each signal is sent once the temporary file exists (polled), so that it
# lands during the write; the exit status must name the signal and the
# folder must be empty. imgstat leaves ignored signals alone (nohup), and a
# script's background job has INT and QUIT ignored: the command starts
# through python, which sets them all back to their default.
mkdir "$T/int"
# wait_for_temporary PID: until something is in $T/int or PID has ended (at
# most about 15 s).
wait_for_temporary() {
  n=0
  while [ $n -lt 3000 ] && [ -z "$(ls -A "$T/int")" ] && kill -0 "$1" 2>/dev/null; do
    sleep 0.005
    n=$((n + 1))
  done
}
"$PY" -c "import os, sys; w=h=3000; sys.stdout.buffer.write(b'P6\n%d %d\n255\n' % (w, h) + os.urandom(w * h * 3))" >"$T/huge.ppm"
cat >"$T/dfl.py" <<'EOF'
import os, resource, signal, sys
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGQUIT: no core file
for name in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGPIPE", "SIGALRM", "SIGTERM",
             "SIGUSR1", "SIGUSR2", "SIGXFSZ", "SIGXCPU"):
    signal.signal(getattr(signal, name), signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])
EOF
for sig in INT HUP PIPE ALRM TERM USR1 QUIT XFSZ; do
  "$PY" "$T/dfl.py" "$IMGSTAT" normalize --backend cpu "$T/huge.ppm" -o "$T/int/x.png" >"$T/stdout" 2>"$T/stderr" &
  pid=$!
  wait_for_temporary $pid
  seen=$(ls -A "$T/int")
  kill -s "$sig" $pid 2>/dev/null
  wait $pid
  rc=$?
  case $seen in
  .x.png.*) ;;
  *) fail "SIG$sig: no temporary seen before the signal (saw '$seen', exit $rc)"; rm -f "$T/int/x.png"; continue ;;
  esac
  got=none
  [ "$rc" -gt 128 ] && got=$(kill -l $((rc - 128)))
  if [ "$got" = "$sig" ] && [ -z "$(ls -A "$T/int")" ]; then pass "SIG$sig during the write: died of it, no file left"
  else fail "SIG$sig during the write: exit $rc ($got), files: $(ls -A "$T/int")"; sed 's/^/  | /' "$T/stderr"; rm -f "$T/int/".x.png.* "$T/int/x.png"; fi
done
# an ignored signal stays ignored (nohup): the output is completed
(trap '' HUP; exec "$IMGSTAT" normalize --backend cpu "$T/huge.ppm" -o "$T/int/y.png") >"$T/stdout" 2>"$T/stderr" &
pid=$!
wait_for_temporary $pid
kill -s HUP $pid 2>/dev/null
wait $pid
rc=$?
[ "$rc" -eq 0 ] && [ "$(ls -A "$T/int")" = y.png ] && pass "ignored SIGHUP: output completed" || fail "ignored SIGHUP: exit $rc, files: $(ls -A "$T/int")"
rm -f "$T/huge.ppm"

# ---- CPU and GPU write identical files ------------------------------------------
if "$IMGSTAT" normalize --backend gpu "$RGB8" -o "$T/out/gpu-probe.png" >/dev/null 2>&1; then
  mkdir "$T/cpu" "$T/gpu"
  i=0
  for args in "minmax" "minmax --linked" "clip 1,99" "clip 5,95 --linked" \
              "minmax --depth 16" "minmax --depth 32" "zscore"; do
    for f in "$RGB8" "$RGB16" "$RGBA8" "$GRAY8" "$PNGS/s01n3p01.png" "$PNGS/s37i3p04.png"; do
      i=$((i + 1))
      case "$args" in *zscore*|*32*) ext=npy ;; *) ext=png ;; esac
      # shellcheck disable=SC2086
      "$IMGSTAT" normalize --backend cpu $args "$f" -o "$T/cpu/$i.$ext" 2>/dev/null
      # shellcheck disable=SC2086
      "$IMGSTAT" normalize --backend gpu $args "$f" -o "$T/gpu/$i.$ext" 2>/dev/null
      if ! cmp -s "$T/cpu/$i.$ext" "$T/gpu/$i.$ext"; then
        # zscore: the float mean/std may differ in the last bits (the GPU
        # contract), so compare within a tight tolerance
        if [ "$ext" = npy ] && "$PY" -c 'import numpy' 2>/dev/null && "$PY" -c "
import numpy as np, sys
a, b = np.load('$T/cpu/$i.$ext'), np.load('$T/gpu/$i.$ext')
sys.exit(0 if a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-6) else 1)"; then :; else
          fail "CPU and GPU differ: $args $(basename "$f")"
        fi
      fi
    done
  done
  pass "CPU and GPU files compared ($i cases)"
else
  echo "skipped: CPU against GPU files (no usable GPU)"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all normalize checks passed"
exit 0
