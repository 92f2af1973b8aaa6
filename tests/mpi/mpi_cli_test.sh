#!/bin/sh
# imgstat --mpi: under `mpirun --oversubscribe -np K` for K = 1, 2
# and 3, stdout and stderr equal a plain run's byte for byte, and every rank
# exits with the plain run's status. The folder mixes gray and RGB, 8- and
# 16-bit, RGBA, an all-black frame (an outlier), a truncated JPEG and a file
# that is no image; a folder of fewer images than ranks leaves ranks with no
# share (rank 0 among them: its records' blank line is the next rank's). The
# plain run is the reference: its figures are checked against numpy by
# tests/dataset/dataset_test.sh. Registered only in a build with MPI.
# Usage: sh tests/mpi/mpi_cli_test.sh IMGSTAT SAMPLES_DIR
set -u
IMGSTAT=${1:?usage: mpi_cli_test.sh IMGSTAT SAMPLES}
SAMPLES=${2:?usage: mpi_cli_test.sh IMGSTAT SAMPLES}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../support/lib.sh"
lib_tmpdir imgstat-mpi
MPIRUN=${MPIRUN:-mpirun}
if ! command -v "$MPIRUN" >/dev/null 2>&1; then
  echo "skipped: no $MPIRUN"
  exit 77
fi
PY=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import PIL' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "skipped: no python3 with PIL"
  exit 77
fi

# The mixed folder.
D=$T/mixed
mkdir -p "$D/sub"
cp "$SAMPLES/camera.png" "$SAMPLES/kodim23.png" "$SAMPLES/monkey16.pgm" \
  "$SAMPLES/testorig.jpg" "$D/"
cp "$SAMPLES/monkey16.png" "$D/sub/"
head -c 3000 "$SAMPLES/testorig.jpg" >"$D/sub/cut.jpg"
printf 'not an image at all\n' >"$D/broken.png"
"$PY" - "$D" <<'EOF' || exit 1
import sys
from PIL import Image
d = sys.argv[1]
Image.new("RGB", (48, 32), (0, 0, 0)).save(d + "/black.png")
im = Image.new("RGBA", (40, 30))
im.putdata([(x * 6 % 256, y * 8 % 256, (x + y) % 256, 200) for y in range(30) for x in range(40)])
im.save(d + "/sub/alpha.png")
for k in range(3):
    g = Image.new("RGB", (32, 24))
    g.putdata([((x * 7 + k * 31) % 256, (y * 9 + k) % 256, (x * y + k) % 256) for y in range(24) for x in range(32)])
    g.save("%s/sub/rgb%d.png" % (d, k))
EOF
# Fewer images than ranks.
S1=$T/one
S2=$T/two
mkdir -p "$S1" "$S2"
cp "$SAMPLES/kodim23.png" "$S1/"
cp "$SAMPLES/kodim23.png" "$SAMPLES/camera.png" "$S2/"

# same K WHAT ARGS...: imgstat --mpi ARGS under K ranks against imgstat ARGS.
same() {
  k=$1 what=$2
  shift 2
  "$IMGSTAT" "$@" >"$T/plain.out" 2>"$T/plain.err"
  want=$?
  rm -f "$T"/rc.*
  "$MPIRUN" --oversubscribe --bind-to none -np "$k" sh -c \
    '"$0" --mpi "$@"; echo $? >"'"$T"'/rc.${OMPI_COMM_WORLD_RANK:-0}"' \
    "$IMGSTAT" "$@" >"$T/mpi.out" 2>"$T/mpi.err"
  if ! cmp -s "$T/plain.out" "$T/mpi.out"; then
    fail "$what, -np $k: stdout differs"
    diff "$T/plain.out" "$T/mpi.out" | head -20 | sed 's/^/  | /'
  elif ! cmp -s "$T/plain.err" "$T/mpi.err"; then
    fail "$what, -np $k: stderr differs"
    diff "$T/plain.err" "$T/mpi.err" | head -20 | sed 's/^/  | /'
  else
    bad=0 r=0
    while [ "$r" -lt "$k" ]; do
      [ "$(cat "$T/rc.$r" 2>/dev/null)" = "$want" ] || bad=1
      r=$((r + 1))
    done
    if [ "$bad" -eq 0 ]; then pass "$what, -np $k"; else
      fail "$what, -np $k: ranks' exit statuses $(cat "$T"/rc.* | tr '\n' ' '), plain $want"
    fi
  fi
}

# Every case under 3 ranks; the formats under 2 and JSON under 1 (mpirun
# takes about 0.5 s a run here).
same 1 "--dataset --json" --dataset --json "$D"
for k in 2 3; do
  same "$k" "--dataset --json" --dataset --json "$D"
  same "$k" "--dataset (text)" --dataset "$D"
  same "$k" "--dataset --csv --histogram" --dataset --csv --histogram "$D"
done
same 3 "--dataset --as rgb --scale unit --json" --dataset --as rgb \
  --scale unit --json "$D"
same 3 "per-image records only" -j 1 "$D"
# --sample: the same files for any rank count (drawn before the split)
for k in 2 3; do
  same "$k" "--sample 4 --seed 9 --json" --dataset --json --sample 4 \
    --seed 9 "$D"
done
same 3 "one image (text)" --dataset "$S1"
same 3 "two images --dataset-only" --dataset-only "$S2"
# Float images: the exact percentiles' second read (rank 0 reads the whole
# list again) gives the plain run's values for any rank count.
F=$T/float
mkdir -p "$F"
"$PY" - "$F" <<'EOF' || exit 1
import struct, sys
d = sys.argv[1]
for k in range(5):
    w, h = 13 + k, 11
    v = [((x * 37 + y * 11 + k * 5) % 23 - 11) / 4.0 for y in range(h)
         for x in range(w) for c in range(3)]
    v[0] = 1e6 if k == 0 else v[0]  # the others clustered in one bin
    with open("%s/f%d.pfm" % (d, k), "wb") as f:
        f.write(b"PF\n%d %d\n-1.0\n" % (w, h))
        f.write(struct.pack("<%df" % len(v), *v))
EOF
for k in 1 2 3; do
  same "$k" "float --dataset-only --histogram --json" --dataset-only \
    --histogram --percentiles 1,30,70,99 --json "$F"
done

# Records gathered in rounds of 7 bytes a rank.
IMGSTAT_TEST_MPI_CHUNK=7 same 3 "rounds of 7 bytes" --dataset --json "$D"
# The plain run's message names the broken file: it was in the comparison.
grep -q 'broken.png' "$T/plain.err" && pass || fail "no message for broken.png"

# The input list is built once, by rank 0: a list on standard
# input, /dev/stdin or a FIFO is read by rank 0 alone and sent to the
# others, so every rank shares out the same list (before, rank 1 found
# /dev/stdin empty: half the images were missing, with exit 0).
find "$D" -type f | LC_ALL=C sort >"$T/list"
"$IMGSTAT" --dataset --json --files-from "$T/list" >"$T/plain.out" 2>"$T/plain.err"
want=$?
# mpi_list WHAT SOURCE [< input]: --files-from SOURCE under 2 ranks = plain.
mpi_list() {
  what=$1
  shift
  rm -f "$T"/rc.*
  timeout 60 "$MPIRUN" --oversubscribe --bind-to none -np 2 sh -c \
    '"$0" --mpi "$@"; echo $? >"'"$T"'/rc.${OMPI_COMM_WORLD_RANK:-0}"' \
    "$IMGSTAT" --dataset --json --files-from "$@" >"$T/mpi.out" 2>"$T/mpi.err"
  rcs="$(cat "$T/rc.0" "$T/rc.1" 2>/dev/null | tr '\n' ' ')"
  if [ "$rcs" != "$want $want " ]; then
    fail "$what: exit statuses '$rcs', plain $want: $(cat "$T/mpi.err")"
  elif cmp -s "$T/plain.out" "$T/mpi.out" && cmp -s "$T/plain.err" "$T/mpi.err"; then
    pass "$what"
  else
    fail "$what: differs from the plain run"
    diff "$T/plain.out" "$T/mpi.out" | head -6 | sed 's/^/  | /'
  fi
}
mpi_list "--files-from /dev/stdin, -np 2" /dev/stdin <"$T/list"
mpi_list "--files-from -, -np 2" - <"$T/list"
mkfifo "$T/fifo"
for round in 1 2 3; do
  timeout 60 sh -c 'cat "$1" >"$2"' sh "$T/list" "$T/fifo" &
  mpi_list "--files-from FIFO, -np 2 (round $round)" "$T/fifo"
  wait
done

# What --mpi refuses (exit 2, one message): an image on standard input.
"$MPIRUN" --oversubscribe -np 2 "$IMGSTAT" --mpi --dataset - <"$S1/kodim23.png" \
  >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 2 ] && [ "$(grep -c 'standard input' "$T/err")" -eq 1 ] && pass ||
  fail "--mpi with -: exit $rc: $(cat "$T/err")"

# --histogram-png never replaces an input found by rank 0's walk.
cp "$S1/kodim23.png" "$T/one/plot.png"
cksum "$T/one/plot.png" >"$T/plot.sum"
rm -f "$T"/rc.*
"$MPIRUN" --oversubscribe -np 2 sh -c \
  '"$0" --mpi "$@"; echo $? >"'"$T"'/rc.${OMPI_COMM_WORLD_RANK:-0}"' \
  "$IMGSTAT" --dataset-only --histogram-png "$T/one/plot.png" "$T/one" >"$T/out" 2>"$T/err"
[ "$(cat "$T/rc.0" "$T/rc.1" | tr '\n' ' ')" = "2 2 " ] &&
  [ "$(grep -c "the output '$T/one/plot.png' is the input" "$T/err")" -eq 1 ] &&
  cksum "$T/one/plot.png" | cmp -s - "$T/plot.sum" && pass ||
  fail "--mpi --histogram-png over a walked input: $(cat "$T"/rc.* "$T/err")"
rm -f "$T/one/plot.png"

# A rank bound to fewer cores than its share of the host (Open MPI binds
# one rank to one core by default): rank 0 says so once, with the options
# that give each rank its share; not with them, nor with -q.
if [ "$(nproc)" -ge 2 ]; then
  "$MPIRUN" -np 1 "$IMGSTAT" --mpi --dataset-only "$S2" >"$T/out" 2>"$T/err"
  [ "$(grep -c "^imgstat: --mpi: each rank runs on 1 core of the $(nproc) this host offers to 1 rank .*'mpirun --bind-to none' or 'mpirun --map-by ppr:1:node:PE=$(nproc)'" "$T/err")" -eq 1 ] &&
    pass "-np 1, default binding: the advice" || fail "-np 1, default binding: $(cat "$T/err")"
  "$MPIRUN" -np 1 "$IMGSTAT" --mpi -q --dataset-only "$S2" >"$T/out" 2>"$T/err"
  [ -s "$T/err" ] && fail "-np 1 -q: $(cat "$T/err")" || pass
  for opts in "--bind-to none" "--map-by ppr:1:node:PE=$(nproc)"; do
    "$MPIRUN" -np 1 $opts "$IMGSTAT" --mpi --progress --dataset-only "$S2" >"$T/out" 2>"$T/err"
    grep -q 'core' "$T/err" && ! grep -q -- '--mpi: each rank' "$T/err" &&
      tr '\r' '\n' <"$T/err" | grep -q "$(nproc) workers on $(nproc) cores" &&
      pass "-np 1 $opts: no advice, every core" || fail "-np 1 $opts: $(cat "$T/err")"
  done
else
  echo "skipped: the binding advice (one core)"
fi

# Each rank's workers (IMGSTAT_STAGE_TIMES' line of MPI's phases, one per
# rank in rank order): ranks left unbound on one host (--bind-to none)
# share its cores out, max(1, cores / ranks) workers each, so that K ranks
# start as many workers as one process; an explicit -j is kept as given.
# Under IMGSTAT_MPI_DEAL=static each rank's share is
# [floor(r n / K), floor((r + 1) n / K)) of the n inputs; dealt (the
# default) the ranks' items add up to n, in chunks, and only rank 0 holds
# the input list (the others get the names with their chunks). Only where
# nothing
# narrows this process's cores (the host's online cores are all offered to
# it).
n_in=$(find "$D" -type f | wc -l)
if [ "$(nproc)" -eq "$(getconf _NPROCESSORS_ONLN)" ]; then
  for k in 2 3; do
    for j in "" "-j 3"; do
      for deal in static dealt; do
        IMGSTAT_MPI_DEAL=$deal IMGSTAT_STAGE_TIMES=1 timeout 60 "$MPIRUN" --oversubscribe --bind-to none -np "$k" \
          "$IMGSTAT" --mpi $j --dataset-only "$D" >"$T/out" 2>"$T/err"
        want=${j#-j }
        [ -n "$want" ] || want=$(($(nproc) / k > 0 ? $(nproc) / k : 1))
        grep '^imgstat: mpi times: ' "$T/err" >"$T/lines"
        bad=$(awk -v k="$k" -v want="$want" -v n="$n_in" -v deal="$deal" '
          { r = NR - 1
            if ($5 != r || $7 != k || $14 != want) { print "rank " r ": " $0; next }
            if (deal == "static") {
              lo = int(r * n / k); hi = int((r + 1) * n / k)
              if ($0 !~ ("items " (hi - lo) " \\[" lo ", " hi "\\)$")) print "share " r ": " $0
            } else if (match($0, /items [0-9]+ dealt in [0-9]+ chunks, list [0-9]+ held$/)) {
              split(substr($0, RSTART, RLENGTH), f, " "); items += f[2]
              if (f[8] != (r == 0 ? n : 0)) print "list " r ": " $0
            } else print "dealt " r ": " $0 }
          END { if (NR != k) print NR " lines for " k " ranks"
                if (deal != "static" && items != n) print "items " items " of " n }' "$T/lines")
        [ -z "$bad" ] && pass "-np $k --bind-to none ${j:-(no -j)} $deal: $want workers a rank, $n_in items" ||
          fail "-np $k --bind-to none $j $deal: want $want workers a rank: $bad $(cat "$T/err")"
      done
    done
  done
else
  echo "skipped: the workers a rank (this process is bound to fewer cores than the host's)"
fi

# The dynamic deal in chunks of one input (IMGSTAT_MPI_DEAL_CHUNK=1) and
# of two, so that every rank's inputs interleave with the others': 61 PNGs
# of sizes from 8 x 8 to 200 x 150 (gray, RGB, RGBA, 16-bit), a truncated
# one and a file that is no image among them: records, messages, the
# dataset record (outliers, percentiles) and the exit status are one
# process's under 1, 2 and 3 ranks, in every format.
M=$T/many
mkdir -p "$M"
"$PY" - "$M" <<'EOF' || exit 1
import sys
from PIL import Image
d = sys.argv[1]
for k in range(61):
    w, h = 8 + (k * 37) % 193, 8 + (k * 53) % 143
    mode = ("L", "RGB", "RGBA", "I;16")[k % 4]
    im = Image.new(mode, (w, h))
    top = 65535 if mode == "I;16" else 255
    if mode in ("L", "I;16"):
        im.putdata([(x * 7 + y * 3 + k) * (k + 1) % (top + 1) for y in range(h) for x in range(w)])
    else:
        n = len(mode)
        im.putdata([tuple((x * (c + 2) + y * (k + 1) + c) % 256 for c in range(n)) for y in range(h) for x in range(w)])
    im.save("%s/p%02d.png" % (d, k))
EOF
head -c 200 "$M/p10.png" >"$M/p10b.png"
printf 'nothing here\n' >"$M/p20b.png"
for c in 1 2; do
  for k in 1 2 3; do
    IMGSTAT_MPI_DEAL_CHUNK=$c same "$k" "dealt in chunks of $c, --dataset --json" -j 1 --dataset --json "$M"
  done
  for k in 2 3; do
    IMGSTAT_MPI_DEAL_CHUNK=$c same "$k" "dealt in chunks of $c, --dataset (text)" -j 1 --dataset "$M"
    IMGSTAT_MPI_DEAL_CHUNK=$c same "$k" "dealt in chunks of $c, --csv --histogram --errors-as-records" \
      -j 1 --dataset --csv --histogram --errors-as-records "$M"
  done
done
same 3 "dealt (guided), --dataset-only --json" --dataset-only --json "$M"
# --labels under the deal: each label's pool and its first files are one
# process's when the images come to the ranks one by one.
mkdir -p "$T/lab/img" "$T/lab/lab"
"$PY" - "$T/lab" <<'EOF' || exit 1
import sys
from PIL import Image
d = sys.argv[1]
for k in range(20):
    w, h = 20 + k, 16 + k % 7
    im = Image.new("L", (w, h))
    im.putdata([(x * 13 + y * 7 + k * 29) % 256 for y in range(h) for x in range(w)])
    im.save("%s/img/c%02d.png" % (d, k))
    lb = Image.new("L", (w, h))
    lb.putdata([(x * 3 + y + k) % 5 for y in range(h) for x in range(w)])
    lb.save("%s/lab/c%02d.png" % (d, k))
EOF
IMGSTAT_MPI_DEAL_CHUNK=1 same 3 "dealt in chunks of 1, --labels" -j 1 --dataset --json \
  --labels "$T/lab/lab" "$T/lab/img"

# ... and the deal did interleave: under 3 ranks in chunks of 1, at least
# two ranks took several chunks. The images are large enough (4 MP, 40
# names of one file) that one worker cannot finish them all before the
# other ranks start, on any host (the 61 small ones above took rank 0 12 ms
# on a 16-core host: it took every chunk before another rank asked).
mkdir -p "$T/big"
"$PY" - "$T/big/b00.png" <<'EOF' || exit 1
import sys
from PIL import Image
g = Image.radial_gradient("L").resize((2000, 2000))
Image.merge("RGB", (g, g.transpose(Image.Transpose.FLIP_LEFT_RIGHT), g.rotate(90))).save(sys.argv[1])
EOF
for k in $(seq 1 39); do ln "$T/big/b00.png" "$T/big/b$(printf %02d "$k").png" || exit 1; done
IMGSTAT_MPI_DEAL_CHUNK=1 IMGSTAT_STAGE_TIMES=1 timeout 60 "$MPIRUN" --oversubscribe --bind-to none -np 3 \
  "$IMGSTAT" --mpi -j 1 --dataset-only "$T/big" >"$T/out" 2>"$T/err"
busy=$(grep '^imgstat: mpi times: ' "$T/err" | awk '$(NF - 4) > 1 { n++ } END { print n + 0 }')
[ "$busy" -ge 2 ] && pass "chunks of 1: $busy ranks took several" ||
  fail "chunks of 1: $busy ranks took several chunks: $(grep 'mpi times' "$T/err")"
# The plain run's records name every image once, in order, and its
# dataset record pools them: the count of pooled images against PIL's.
"$IMGSTAT" -j 1 --json "$M" 2>/dev/null | "$PY" -c '
import json, os, sys
names = [json.loads(l)["file"] for l in sys.stdin]
d = sys.argv[1]
want = sorted(os.path.join(d, f) for f in os.listdir(d) if f not in ("p10b.png", "p20b.png"))
sys.exit(0 if names == want else 1)' "$M" && pass "the plain run's records, in order" ||
  fail "the plain run's records are not every image in order"

# Rank 0 deals while it walks: 120 folders of 0 to 3 small PNGs each
# (a file that is no image, other files, empty folders among them), a
# missing file and a folder with no image as arguments, walked only as
# the chunks need them (IMGSTAT_MPI_WALK_AHEAD=0), in chunks of one input
# and guided: records, messages, the dataset record and the exit status
# are one process's.
W=$T/walk
mkdir -p "$W" "$T/noimage"
printf 'text\n' >"$T/noimage/readme.txt"
"$PY" - "$W" <<'EOF' || exit 1
import os, sys
from PIL import Image
d = sys.argv[1]
for f in range(120):
    sub = "%s/d%03d" % (d, f)
    os.mkdir(sub)
    if f % 5 == 0:
        open(sub + "/notes.txt", "w").write("not an image\n")
    for k in range(f % 4):
        w, h = 5 + (f * 7 + k) % 29, 4 + (f * 3 + k) % 17
        mode = ("L", "RGB", "RGBA")[(f + k) % 3]
        im = Image.new(mode, (w, h))
        n = len(mode)
        im.putdata([tuple((x * (c + 3) + y * (f + 1) + k * 11 + c) % 256 for c in range(n))
                    if n > 1 else (x * 5 + y * (f + 2) + k) % 256 for y in range(h) for x in range(w)])
        im.save("%s/i%d.png" % (sub, k))
open(d + "/d037/broken.png", "w").write("nothing here\n")
EOF
for k in 2 3; do
  IMGSTAT_MPI_DEAL_CHUNK=1 IMGSTAT_MPI_WALK_AHEAD=0 same "$k" "dealt while walking, chunks of 1, --dataset --json" \
    -j 1 --dataset --json "$W" "$T/missing.png" "$T/noimage"
done
IMGSTAT_MPI_WALK_AHEAD=0 same 3 "dealt while walking (guided), --dataset --csv" -j 1 --dataset --csv "$W"
same 3 "dealt while walking (default walk ahead), --dataset (text)" -j 1 --dataset "$W" "$T/noimage"
IMGSTAT_MPI_DEAL=walk-first same 3 "walked first, then dealt" -j 1 --dataset --json "$W"

# ... and the ranks did work while rank 0 walked: a list fed through a
# FIFO a line every 10 ms keeps rank 0's walk going for about 2 s; rank 0
# says how many inputs it dealt to the other ranks before the walk ended
# (dealt-walking, IMGSTAT_STAGE_TIMES), which must be some (rank 0 walked
# the whole list before it dealt any, and ranks > 0 idled, before), and
# the records are the plain run's over the same list.
find "$W" -name '*.png' | LC_ALL=C sort >"$T/wlist"
"$IMGSTAT" -j 1 --dataset --json --files-from "$T/wlist" >"$T/plain.out" 2>/dev/null
mkfifo "$T/wfifo"
timeout 60 sh -c 'while IFS= read -r l; do printf "%s\n" "$l"; sleep 0.01; done <"$1" >"$2"' \
  sh "$T/wlist" "$T/wfifo" &
feeder=$!
IMGSTAT_MPI_DEAL_CHUNK=1 IMGSTAT_STAGE_TIMES=1 timeout 60 "$MPIRUN" --oversubscribe --bind-to none -np 3 \
  "$IMGSTAT" --mpi -j 1 --dataset --json --files-from "$T/wfifo" >"$T/mpi.out" 2>"$T/err"
wait "$feeder"
n_w=$(wc -l <"$T/wlist")
walked=$(grep '^imgstat: mpi times: rank 0 ' "$T/err" | sed -n 's/.* dealt-walking \([0-9]*\);.*/\1/p')
cmp -s "$T/plain.out" "$T/mpi.out" && pass "dealt while walking a FIFO's list: the plain run's records" ||
  fail "dealt while walking a FIFO's list: stdout differs from the plain run's"
[ "${walked:-0}" -gt 0 ] &&
  pass "dealt while walking: $walked of $n_w inputs went to ranks > 0 before the walk ended" ||
  fail "dealt while walking: '${walked}' of $n_w inputs went to ranks > 0 before the walk ended: $(grep 'mpi times' "$T/err")"
rm -f "$T/wfifo"

# Rank 0 lets go of the entries it has dealt: a --files-from list of
# 20,000 lines of about 2.5 KB (four tiny PGMs under ten folders of
# 250-character names, named again and again: 50 MB of names) under 2
# ranks in chunks of 64. Rank 0's peak resident memory (/usr/bin/time's)
# stays within a quarter of the list's size of rank 1's, which never holds
# the list (rank 0 held all of it, 100 KB of memory per 40 entries, before),
# its most entries held at once (IMGSTAT_STAGE_TIMES' "list L held") are
# under a quarter of the list, and the records (compared by checksum, 50 MB
# of them), the messages and the exit statuses are one process's.
L=$T/long
lp=$("$PY" - "$L" 20000 <<'EOF' || exit 1
import os, sys
d = sys.argv[1]
for k in range(10):
    d = os.path.join(d, chr(ord("a") + k) * 250)
os.makedirs(d)
for k in range(4):
    w, h = 3 + k, 2 + k
    with open(os.path.join(d, "f%d.pgm" % k), "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (w, h) + bytes((x * 37 + k * 11) % 256 for x in range(w * h)))
with open(sys.argv[1] + ".list", "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(os.path.join(d, "f%d.pgm" % (i * 7 % 4)) + "\n")
print(os.path.getsize(sys.argv[1] + ".list"))
EOF
)
n_l=20000
"$IMGSTAT" --files-from "$L.list" 2>"$T/plain.err" | cksum >"$T/plain.sum"
rm -f "$T"/rc.* "$T"/rss.*
# a sanitizer build: freed blocks reused at once, not kept in quarantine
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0" \
  IMGSTAT_MPI_DEAL_CHUNK=64 IMGSTAT_STAGE_TIMES=1 timeout 60 "$MPIRUN" --oversubscribe --bind-to none -np 2 sh -c \
  'r=${OMPI_COMM_WORLD_RANK:-0}
   if [ -x /usr/bin/time ]; then
     /usr/bin/time -f %M -o "'"$T"'/rss.$r" "$0" --mpi "$@"
   else "$0" --mpi "$@"; fi
   echo $? >"'"$T"'/rc.$r"' \
  "$IMGSTAT" --files-from "$L.list" 2>"$T/mpi.err" | cksum >"$T/mpi.sum"
grep -v '^imgstat: \(stage times\|mpi times\|mpi gather\): ' "$T/mpi.err" >"$T/mpi.msgs"
rcs="$(cat "$T/rc.0" "$T/rc.1" 2>/dev/null | tr '\n' ' ')"
[ "$rcs" = "0 0 " ] && cmp -s "$T/plain.sum" "$T/mpi.sum" && cmp -s "$T/plain.err" "$T/mpi.msgs" &&
  pass "a long list, dealt: the plain run's records ($(cut -d' ' -f2 "$T/plain.sum") bytes)" ||
  fail "a long list, dealt: exit statuses '$rcs', records $(cat "$T/mpi.sum") against $(cat "$T/plain.sum"): $(head -c 600 "$T/mpi.err")"
held=$(grep '^imgstat: mpi times: rank 0 ' "$T/mpi.err" | sed -n 's/.* list \([0-9]*\) held$/\1/p')
[ -n "$held" ] && [ "$held" -lt $((n_l / 4)) ] &&
  pass "a long list, dealt: rank 0 held at most $held of its $n_l entries at once" ||
  fail "a long list, dealt: rank 0 held '$held' of its $n_l entries at once"
if [ -s "$T/rss.0" ] && [ -s "$T/rss.1" ]; then
  rss0=$(tail -n 1 "$T/rss.0") rss1=$(tail -n 1 "$T/rss.1")
  [ "$rss0" -lt $((rss1 + lp / 4096)) ] &&
    pass "a long list, dealt: rank 0's peak ${rss0} KB, rank 1's ${rss1} KB, the list $((lp / 1024)) KB" ||
    fail "a long list, dealt: rank 0's peak ${rss0} KB against rank 1's ${rss1} KB: the list ($((lp / 1024)) KB) held"
else
  echo "skipped: the ranks' peak memory (no /usr/bin/time)"
fi
rm -rf "$L" "$L.list"

# Ranks on GPU nodes use their GPUs: rank r takes the (r mod n)-th device
# of --devices (else of all); the contiguous shares put input r on rank
# r. Devices 3 and 5 are absent here (and on a
# GPU host of fewer than 6), so each input's message names its rank's.
mkdir -p "$T/three"
cp "$SAMPLES/camera.png" "$T/three/a.png"
cp "$SAMPLES/kodim23.png" "$T/three/b.png"
cp "$SAMPLES/monkey16.pgm" "$T/three/c.pgm"
IMGSTAT_MPI_DEAL=static "$MPIRUN" --oversubscribe -np 3 "$IMGSTAT" --mpi --backend gpu --devices 3,5 \
  "$T/three" >"$T/out" 2>"$T/err"
got=$(grep -o '/three/[abc]\.p[ng][gm]: --backend gpu needs a usable GPU: device [0-9]*' "$T/err" |
  sed 's/: --backend gpu needs a usable GPU://' | sort | tr '\n' ' ')
want="/three/a.png device 3 /three/b.png device 5 /three/c.pgm device 3 "
[ "$got" = "$want" ] && pass || fail "ranks' devices: got '$got', want '$want'"

# On one host, no transport chosen: Open MPI's shared memory (every rank's
# line says "transport shm"); IMGSTAT_MPI_TRANSPORT=keep and a transport
# the user chose (mpirun --mca) leave Open MPI's ("transport mpi"); the
# records the same in all three.
for how in auto keep chosen; do
  mca=""
  [ $how = chosen ] && mca="--mca btl self,vader,tcp"
  want=shm
  [ $how = auto ] || want=mpi
  IMGSTAT_MPI_TRANSPORT=$how IMGSTAT_STAGE_TIMES=1 timeout 60 "$MPIRUN" --oversubscribe --bind-to none -np 2 \
    -x IMGSTAT_MPI_TRANSPORT -x IMGSTAT_STAGE_TIMES $mca "$IMGSTAT" --mpi --json "$SAMPLES" \
    >"$T/tr-$how.out" 2>"$T/tr-$how.err"
  got=$(grep '^imgstat: mpi times: ' "$T/tr-$how.err" | grep -o 'transport [a-z]*' | sort | uniq -c | tr -s ' ')
  [ "$got" = " 2 transport $want" ] && [ -s "$T/tr-$how.out" ] && cmp -s "$T/tr-auto.out" "$T/tr-$how.out" &&
    pass "transport ($how): $want on both ranks, records the same" ||
    fail "transport ($how): want 2 x '$want', got '$got': $(head -c 600 "$T/tr-$how.err")"
done

echo "mpi_cli_test: $checks checks passed, $failures failed"
[ "$failures" -eq 0 ]
