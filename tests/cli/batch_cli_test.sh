#!/bin/sh
# The statistics command over many inputs: folders walked in the
# byte order of their paths, --files-from lists (-0, standard input), "-",
# the worker pool (-j) and its memory budget (--max-inflight), the summary
# line, --errors-as-records, the progress line.
# The expected records are those of single-file runs of the same files, in
# the order that find | LC_ALL=C sort gives (computed here, independently of
# the walk); the single-file figures are checked against awk in cli_test.sh.
# Usage: sh tests/cli/batch_cli_test.sh PATH/TO/imgstat SAMPLES_DIR
set -u

IMGSTAT=${1:?usage: batch_cli_test.sh IMGSTAT SAMPLES_DIR}
SAMPLES=${2:?usage: batch_cli_test.sh IMGSTAT SAMPLES_DIR}
case $IMGSTAT in /*) ;; *) IMGSTAT=$(pwd)/$IMGSTAT ;; esac
case $SAMPLES in /*) ;; *) SAMPLES=$(pwd)/$SAMPLES ;; esac

. "$(dirname "$0")/../support/lib.sh"
lib_tmpdir imgstat-batchtest
cd "$T" || exit 1

# run ARGS...: stdout in out, stderr in err, exit status in $rc.
run() {
  "$IMGSTAT" --backend cpu "$@" >out 2>err
  rc=$?
}
expect_rc() {
  if [ "$rc" -ne "$1" ]; then fail "$2: exit $rc, expected $1; stderr: $(cat err)"; else pass; fi
}
# same FILE1 FILE2 WHAT
same() {
  if cmp -s "$1" "$2"; then pass; else
    fail "$3: $(diff "$1" "$2" | head -20)"
  fi
}

# ---- the tree ----------------------------------------------------------------
# d/a.png comes before d/a/b.png ('.' < '/'); an empty folder, text files,
# a name with spaces, one with a newline, an upper-case extension, and a
# junk file named like an image (an error, not skipped).
mkdir -p d/a d/sub/deeper d/empty "d/sp ace" d/zz/empty2
cp "$SAMPLES/camera.png" d/a.png
cp "$SAMPLES/kodim23.png" d/a/b.png
cp "$SAMPLES/testorig.jpg" d/sub/deeper/x.jpg
cp "$SAMPLES/monkey16.png" "d/sp ace/y y.png"
cp "$SAMPLES/monkey16.pgm" d/Z.PGM
cp "$SAMPLES/vgl_6434_0018a.bmp" d/sub/v.bmp
cp "$SAMPLES/image1.hdr" d/sub/h.hdr
nl=$(printf 'd/n\nl.png')
cp "$SAMPLES/camera.png" "$nl"
echo "not an image" >d/README.txt
echo "notes" >d/sub/notes.md
echo "junk" >d/sub/bad.png

IMAGE_EXT='\.(png|jpg|jpeg|jpe|jfif|bmp|dib|gif|psd|hdr|pgm|ppm|pnm|tga)$'

# walk_order DIR: the image files under DIR, NUL-terminated, in byte order.
walk_order() {
  find "$1" -type f -print0 | LC_ALL=C sort -z | grep -z -i -E "$IMAGE_EXT"
}

# singles ARGS...: the records (stdout: single.out) and messages
# (single.err) of one run per file of the NUL list on stdin.
singles() {
  xargs -0 -n 1 "$IMGSTAT" --backend cpu "$@" >single.out 2>single.err
}

walk_order d >order
n_inputs=$(tr -cd '\0' <order | wc -c | tr -d ' ')
[ "$n_inputs" -eq 9 ] && pass || fail "the tree should hold 9 image-named files, has $n_inputs"
singles --json <order

# ---- a folder, for -j 1, 2, 4 and the default ---------------------------------
printf 'imgstat: 1 of %s inputs failed\n' "$n_inputs" >summary
cat single.err summary >want.err
for j in 1 2 4 default; do
  if [ "$j" = default ]; then run --json d; else run --json -j "$j" d; fi
  expect_rc 1 "folder -j $j (one junk .png)"
  same single.out out "folder -j $j: records as single-file runs, in walk order"
  same want.err err "folder -j $j: messages in place, then the summary"
done
grep -F -q '"file":"d/n\nl.png"' out && pass || fail "the newline in a name is escaped in JSON"
grep -F -q '"file":"d/sp ace/y y.png"' out && pass || fail "a name with spaces"
grep -F -q 'README' out err && fail "README.txt should be skipped silently" || pass
grep -F -q 'notes.md' out err && fail "notes.md should be skipped silently" || pass

# A budget smaller than any image: every item runs alone; same records.
run --json -j 4 --max-inflight 1 d
same single.out out "--max-inflight 1: the same records"
run --json --max-inflight 0 d
expect_rc 2 "--max-inflight 0 is a usage error"
run --json --max-inflight 12X d
expect_rc 2 "--max-inflight 12X is a usage error"

# CSV: one header for the whole run; the rows as the single runs'.
singles --csv <order
grep -v '^file,' single.out >single.rows
run --csv -j 3 d
[ "$(grep -c '^file,' out)" -eq 1 ] && pass || fail "CSV header more than once: $(grep -c '^file,' out)"
head -n 1 out >header
grep -v '^file,' out >rows
same single.rows rows "CSV rows as single-file runs"

# The text table: one image alone as before; a folder, blank lines between.
run d/a.png
head -n 2 out | tail -n 1 | grep -E -q '^channel +min +max +mean +std \(N\) +min at +max at$' && pass ||
  fail "text header (ddof 0): $(head -n 2 out)"
run --ddof 1 d/a.png
head -n 2 out | tail -n 1 | grep -E -q '^channel +min +max +mean +std \(N-1\) +min at +max at$' && pass ||
  fail "text header (ddof 1): $(head -n 2 out)"

# The text run's last line says what happened; --brief: one line per image
# with the JSON record's figures (mean, std, min, max per channel).
run d
last=$(tail -n 1 out)
n_ok=$(grep -c 'backend=' out)
case $last in
"$((n_ok + 1)) inputs: $n_ok read, 1 failed") pass ;;
*) fail "text summary line: '$last' ($n_ok read, d/sub/bad.png failed)" ;;
esac
run --brief d/a.png d/a/b.png d/sub/h.hdr
[ "$(grep -c 'backend=' out)" -eq 3 ] && [ "$(wc -l <out)" -eq 4 ] && pass ||
  fail "--brief: one line per image and the summary: $(cat out)"
"$IMGSTAT" --json d/a.png d/a/b.png d/sub/h.hdr >brief.json 2>/dev/null
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import json' 2>/dev/null; then
    if "$py" - out brief.json <<'EOPY'; then pass; else fail "--brief figures differ from --json's"; fi
import json, sys
lines = [l for l in open(sys.argv[1]) if "backend=" in l]
recs = [json.loads(l) for l in open(sys.argv[2])]
for line, rec in zip(lines, recs):
    words = line.split()
    assert words[0] == rec["file"], (words[0], rec["file"])
    for key in ("mean", "std", "min", "max"):
        at = words.index(key)
        got = [float(w) for w in words[at + 1:at + 1 + rec["channels"]]]
        want = [c[key] for c in rec["stats"]]
        # the table's rounding: four decimals, or six significant digits
        for g, w in zip(got, want):
            assert abs(g - w) <= max(5e-5, 5e-6 * abs(w)), (key, got, want)
EOPY
    break
  fi
done

# ---- clean runs, empty folders -----------------------------------------------
mkdir -p clean/one clean/two
cp "$SAMPLES/camera.png" clean/one/c.png
cp "$SAMPLES/kodim23.png" clean/two/k.png
run --json clean
expect_rc 0 "a clean folder"
[ -s err ] && fail "a clean run writes nothing to stderr: $(cat err)" || pass
[ "$(wc -l <out)" -eq 2 ] && pass || fail "clean: 2 records expected: $(cat out)"
# A folder named as an input with no image file in it (empty, or only
# other files, at any depth) is an error in its place: named,
# with the files it skipped, and exit 1; with --dataset too.
mkdir -p textonly/deep
echo a >textonly/a.txt
echo b >textonly/deep/b.md
run --json d/empty d/zz textonly
expect_rc 1 "empty folders"
[ -s out ] && fail "empty folders: no record: $(cat out)" || pass
want_err=$(printf '%s\n' \
  "imgstat: d/empty: no image files (0 other files skipped by extension)" \
  "imgstat: d/zz: no image files (0 other files skipped by extension)" \
  "imgstat: textonly: no image files (2 other files skipped by extension)" \
  "imgstat: 3 of 3 inputs failed")
[ "$(cat err)" = "$want_err" ] && pass || fail "empty folders: stderr: $(cat err)"
run textonly
expect_rc 1 "a folder of text files (text records)"
[ "$(cat err)" = "imgstat: textonly: no image files (2 other files skipped by extension)" ] &&
  pass || fail "a folder of text files: stderr: $(cat err)"
for ds in --dataset --dataset-only; do
  run "$ds" --json textonly
  expect_rc 1 "$ds of a folder of text files"
  grep -q "^imgstat: textonly: no image files (2 other files skipped by extension)\$" err &&
    pass || fail "$ds of a folder of text files: stderr: $(cat err)"
done
# A folder with images beside an empty one: no message for the empty one.
run --json d/a d/empty
expect_rc 1 "an empty folder beside a full one"
[ "$(grep -c 'no image files' err)" -eq 1 ] && grep -q '^imgstat: d/empty: no image' err &&
  pass || fail "an empty folder beside a full one: $(cat err)"
# One failing input alone: its message, no summary.
run --json d/sub/bad.png
expect_rc 1 "one bad input"
[ "$(wc -l <err)" -eq 1 ] && pass || fail "one bad input: one line, no summary: $(cat err)"

# ---- lists ---------------------------------------------------------------------
# From standard input, NUL-separated: every name is an input (README.txt too:
# a listed file is sniffed, whatever its name).
find d -type f -print0 | LC_ALL=C sort -z >all
singles --json <all
find d -type f -print0 | LC_ALL=C sort -z | "$IMGSTAT" --backend cpu --json -0 --files-from - -j 2 >out 2>err
rc=$?
expect_rc 1 "-0 --files-from -"
same single.out out "-0 --files-from -: records in list order"
n_all=$(tr -cd '\0' <all | wc -c | tr -d ' ')
tail -n 1 err | grep -F -x -q "imgstat: 3 of $n_all inputs failed" && pass ||
  fail "-0 list: summary: $(tail -n 1 err)"
# A line list from a file, mixed with arguments: the order given.
printf 'd/a.png\nclean\n' >list.txt
run --json "$SAMPLES/camera.png" --files-from list.txt d/Z.PGM
expect_rc 0 "arguments and a list"
printf '%s\0' "$SAMPLES/camera.png" d/a.png clean/one/c.png clean/two/k.png d/Z.PGM | singles --json
same single.out out "arguments and a list, in the order given"
run --files-from missing.txt d/a.png
expect_rc 1 "a list that does not exist"
grep -q '^imgstat: missing.txt: ' err && pass || fail "missing list named: $(cat err)"

# "-": one image from standard input, named "-".
"$IMGSTAT" --backend cpu --json - <"$SAMPLES/camera.png" >out 2>err
rc=$?
expect_rc 0 "- reads standard input"
printf '%s\0' "$SAMPLES/camera.png" | singles --json
sed 's|"file":"[^"]*"|"file":"-"|' single.out >want
same want out "- : the record of the image on standard input"

# ---- --errors-as-records ------------------------------------------------------
run --json --errors-as-records -j 2 d
expect_rc 1 "--errors-as-records"
# the expected: the single records with the error's record in its place
bad=$(awk 'BEGIN { RS = "\0" } $0 == "d/sub/bad.png" { print NR }' order)
singles --json <order
awk -v k="$bad" 'NR == k { print "{\"file\":\"d/sub/bad.png\",\"error\":\"not a recognised image format\"}" } { print }' single.out >want
same want out "--errors-as-records: {file, error} in its place"
same want.err err "--errors-as-records: the messages on stderr too"
run --csv --errors-as-records d
head -n 1 out | grep -q ',error$' && pass || fail "CSV: a last column error: $(head -n 1 out)"
grep -F -q 'd/sub/bad.png,,,,' out && pass || fail "CSV: the error row: $(grep bad out)"
if command -v python3 >/dev/null; then
  python3 -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert len(set(map(len, rows))) == 1, set(map(len, rows))
bad = [r for r in rows if r[0] == "d/sub/bad.png"]
assert bad and bad[0][-1] == "not a recognised image format", bad
assert all(r[-1] == "" for r in rows[1:] if r[0] != "d/sub/bad.png")' out && pass ||
    fail "CSV with errors: not one width of rows"
fi

# ---- symbolic links ------------------------------------------------------------
mkdir -p links/real
cp "$SAMPLES/camera.png" links/real/c.png
ln -s ../real links/real/loop
ln -s real links/alias
run --json links
expect_rc 0 "links without --follow"
[ "$(wc -l <out)" -eq 1 ] && pass || fail "links without --follow: one record: $(cat out)"
if command -v timeout >/dev/null; then
  timeout 20 "$IMGSTAT" --backend cpu --json --follow links >out 2>err
  rc=$?
  [ "$rc" -ne 124 ] && pass || fail "--follow over a loop hangs"
  grep -q 'links/alias/c.png' out && pass || fail "--follow walks the link: $(cat out)"
fi

# ---- the progress line ---------------------------------------------------------
run --json clean
grep -q 'images/s' err && fail "no progress line without a terminal" || pass
run --json --progress clean
grep -q '2/2 .*images/s' err && pass || fail "--progress: $(cat err)"
run --json --progress -q clean
[ -s err ] && fail "-q: no progress line: $(cat err)" || pass
if command -v script >/dev/null && script -qc true /dev/null >/dev/null 2>&1; then
  script -qc "'$IMGSTAT' --backend cpu --json clean >/dev/null" /dev/null >tty.txt 2>&1
  grep -q 'images/s' tty.txt && pass || fail "a terminal: progress line: $(cat tty.txt)"
  script -qc "'$IMGSTAT' --backend cpu -q --json clean >/dev/null" /dev/null >tty.txt 2>&1
  grep -q 'images/s' tty.txt && fail "a terminal with -q: $(cat tty.txt)" || pass
fi

# ---- the cores: -j 0 counts the CPUs the process may run on ------
# Under taskset -c 0 one worker on one core, whatever the machine has; the
# count is the affinity mask's, as nproc (coreutils) counts it, never more.
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
  taskset -c 0 "$IMGSTAT" --backend cpu --json -j 0 --progress clean >out 2>err
  tr '\r' '\n' <err | grep -q '2/2 .* 1 worker on 1 core' && pass ||
    fail "taskset -c 0, -j 0: $(tr '\r' '\n' <err)"
  taskset -c 0 "$IMGSTAT" --version >out 2>&1
  grep -q '^cores: 1 in use (affinity mask 1 of ' out && pass ||
    fail "taskset -c 0, --version: $(cat out)"
  n=$(nproc)
  run --json -j 0 --progress clean
  got=$(tr '\r' '\n' <err | sed -n 's/.* \([0-9]*\) workers\{0,1\} on \([0-9]*\) cores\{0,1\}.*/\1 \2/p' | tail -1)
  set -- $got
  [ "${1:-0}" -ge 1 ] && [ "$1" = "${2:-}" ] && [ "$1" -le "$n" ] && pass ||
    fail "-j 0: '$got' workers and cores, nproc $n"
else
  echo "skipped: no taskset"
fi

# ---- Ctrl-C and kill: the run stops soon, exit 130 / 143, the records
# printed are the first ones in order ------------------------------------------
mkdir many
for i in $(seq -w 1 400); do ln "$SAMPLES/kodim23.png" "many/k$i.png"; done
for sig in INT TERM; do
  python3 - "$IMGSTAT" "$sig" <<'PY' >sig.txt 2>&1
import signal, subprocess, sys, time
sig = getattr(signal, "SIG" + sys.argv[2])
p = subprocess.Popen([sys.argv[1], "--backend", "cpu", "--json", "-j", "1", "many"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
time.sleep(0.3)
t = time.monotonic()
p.send_signal(sig)
out, err = p.communicate()
late = time.monotonic() - t
names = [l.split('"file":"')[1].split('"')[0] for l in out.decode().splitlines()]
want = [f"many/k{i:03d}.png" for i in range(1, len(names) + 1)]
print(p.returncode, len(names), names == want, f"{late:.2f}")
PY
  read -r rc n inorder late <sig.txt
  want_rc=$([ $sig = INT ] && echo 130 || echo 143)
  [ "$rc" = "$want_rc" ] && [ "$inorder" = True ] && [ "$n" -lt 400 ] &&
    awk -v l="$late" 'BEGIN{exit !(l < 2)}' && pass ||
    fail "SIG$sig: exit, records, order, seconds to stop: $(cat sig.txt)"
done

echo "batch_cli_test: $checks checks passed, $failures failed"
[ "$failures" -eq 0 ]
