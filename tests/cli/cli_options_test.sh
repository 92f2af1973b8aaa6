#!/bin/sh
# The option table's warnings: an option that has no effect in the
# combination given is said on stderr ("imgstat: warning: NAME has no
# effect ..."), unless -q, and changes nothing else (exit status, records);
# an option that has an effect is not warned about. Also: --help names the
# installed documentation, not the source tree's docs/.
# Usage: sh tests/cli/cli_options_test.sh PATH/TO/imgstat
set -u

IMGSTAT=${1:?usage: cli_options_test.sh IMGSTAT}
case $IMGSTAT in /*) ;; *) IMGSTAT=$(pwd)/$IMGSTAT ;; esac

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
cd "$tmp" || exit 1

failures=0
checks=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
pass() { checks=$((checks + 1)); }

# run ARGS...: stdout in out, stderr in err, exit status in $rc.
run() {
  "$IMGSTAT" "$@" >out 2>err
  rc=$?
}

# warns WHAT RC "LINE" ARGS...: exits RC and stderr holds exactly the line
# "imgstat: warning: LINE" (among others, which are not warnings).
warns() {
  what=$1 want_rc=$2 line="imgstat: warning: $3"
  shift 3
  run "$@"
  [ "$rc" -eq "$want_rc" ] && pass || fail "$what: exit $rc, expected $want_rc; stderr: $(cat err)"
  if [ "$(grep -c -x -F -e "$line" err)" -eq 1 ]; then pass; else
    fail "$what: '$line' not once in stderr: $(cat err)"
  fi
  if [ "$(grep -c '^imgstat: warning: ' err)" -eq 1 ]; then pass; else
    fail "$what: more than one warning: $(cat err)"
  fi
}

# quiet WHAT RC ARGS...: exits RC with no warning on stderr.
quiet() {
  what=$1 want_rc=$2
  shift 2
  run "$@"
  [ "$rc" -eq "$want_rc" ] && pass || fail "$what: exit $rc, expected $want_rc; stderr: $(cat err)"
  if grep -q '^imgstat: warning: ' err; then fail "$what: warned: $(cat err)"; else pass; fi
}

# A 4x3 gray image (PGM).
printf 'P5\n4 3\n255\n' >g.pgm
printf '\000\020\040\060\100\120\140\160\200\220\240\377' >>g.pgm

# ---- the statistics command -------------------------------------------------
warns "--bins alone" 0 "--bins has no effect without --histogram" \
  --backend cpu --bins 64 g.pgm
grep -q '^Y ' out && pass || fail "--bins alone: no record: $(cat out)"
warns "--bins with --histogram, text" 0 \
  "--bins has no effect without --json or --histogram-png" \
  --backend cpu --histogram --bins 64 g.pgm
warns "--bins with --percentiles, CSV" 0 \
  "--bins has no effect without --json or --histogram-png" \
  --backend cpu --csv --percentiles 5 --bins=64 g.pgm
quiet "--bins with --histogram --json" 0 --backend cpu --json --histogram --bins 64 g.pgm
grep -q '"histogram":{"bins":64,' out && pass || fail "--bins 64 not in the JSON: $(cat out)"
quiet "--bins with --histogram-png" 0 --backend cpu --histogram-png h.png --bins 64 g.pgm
warns "--kernel with --backend cpu" 0 "--kernel has no effect with --backend cpu" \
  --backend cpu --kernel 3 g.pgm
quiet "--kernel with --backend auto" 0 --kernel 3 g.pgm
# -j sets the workers: it has an effect with every backend.
quiet "-j with --backend gpu" 1 --backend gpu -j 2 /nonexistent.png
quiet "--jobs with --backend gpu" 1 --jobs=2 --backend gpu /nonexistent.png
warns "-0 without --files-from" 0 "-0 has no effect without --files-from" \
  --backend cpu -0 g.pgm
quiet "-0 with --files-from" 0 --backend cpu -0 --files-from /dev/null g.pgm
warns "--errors-as-records as text" 0 \
  "--errors-as-records has no effect without --json or --csv" \
  --backend cpu --errors-as-records g.pgm
quiet "--errors-as-records with --csv" 0 --backend cpu --csv --errors-as-records g.pgm
quiet "-j with --backend cpu" 0 --backend cpu -j 2 g.pgm
quiet "-q silences the warnings" 0 -q --backend cpu --kernel 2 --bins 64 g.pgm
[ -s err ] && fail "-q: stderr not empty: $(cat err)" || pass
# in the order given, once each
run --backend cpu --bins 8 --kernel 2 --bins 9 g.pgm
if [ "$(grep '^imgstat: warning: ' err | cut -c19-25 | tr '\n' ' ')" = "--bins  --kerne " ]; then pass; else
  fail "warnings not in the order given, once each: $(cat err)"
fi
# usage errors come first, and alone
run --bins 64
[ "$rc" -eq 2 ] && pass || fail "no input: exit $rc"
grep -q warning err && fail "a usage error also warned: $(cat err)" || pass

# ---- normalize ---------------------------------------------------------------
warns "normalize zscore --per-channel" 0 "--per-channel has no effect with zscore" \
  normalize --backend cpu zscore --per-channel g.pgm -o z.npy
warns "normalize --bins with minmax" 0 "--bins has no effect with minmax" \
  normalize --backend cpu --bins 100 g.pgm -o m.png
warns "normalize --bins with --mean/--std" 0 "--bins has no effect with --mean/--std" \
  normalize --backend cpu --mean 1 --std 2 --bins 5 g.pgm -o s.npy
"$IMGSTAT" --json g.pgm >stats.json
warns "normalize --per-channel with --stats-from" 0 \
  "--per-channel has no effect with --stats-from" \
  normalize --backend cpu --stats-from stats.json --per-channel g.pgm -o f.npy
quiet "normalize clip --bins" 0 normalize --backend cpu clip 1,99 --bins 100 g.pgm -o c.png
quiet "normalize minmax --per-channel" 0 normalize --backend cpu --per-channel g.pgm -o p.png
# -j sets the workers of normalize too: an effect with every backend
quiet "normalize -j with --backend gpu" 1 normalize --backend gpu -j 2 /nonexistent.png -o n.png
quiet "normalize -q" 0 normalize -q --backend cpu --bins 100 g.pgm -o q.png
[ -s q.png ] && pass || fail "normalize -q --bins: no output"

# ---- bench -------------------------------------------------------------------
# --startup on a missing file ends at once (and a build without CUDA ends
# before measuring anything): exit 1 after the warning.
warns "bench --quick with --startup" 1 "--quick has no effect with --startup" \
  bench --startup /nonexistent.png --quick
if "$IMGSTAT" --version | grep -q "CUDA backend: no"; then
  warns "bench --parallel without --startup" 1 \
    "--parallel has no effect without --startup" bench --parallel
else
  echo "skipped: bench --parallel without --startup (would run the benchmark)"
fi

# ---- --help names the documentation by a full path ----------------------------
# (from the build folder: the source's docs/; installed: tests/cli/install_test.sh)
run --help
grep -q 'Histograms (/.*/normalize\.md' out && pass || fail "--help: $(grep Histograms out)"
grep -q '(docs/normalize\.md)' out && fail "--help names the source tree's docs/" || pass
run normalize --help
grep -q 'constant channels: see /.*/normalize\.md\.' out && pass || fail "normalize --help: $(grep -i 'constant channels' out)"

# ---- mistakes get a hint ------------------------------------------------------
# hint WHAT "TEXT" ARGS...: a usage error (exit 2) whose stderr holds TEXT.
hint() {
  what=$1 text=$2
  shift 2
  run "$@"
  [ "$rc" -eq 2 ] && pass || fail "$what: exit $rc, expected 2"
  grep -q -F -e "$text" err && pass || fail "$what: no '$text' in: $(cat err)"
}
hint "--jsno" "unknown option '--jsno' (did you mean --json?)" --jsno g.pgm
hint "--dataset-onyl" "(did you mean --dataset-only?)" --dataset-onyl g.pgm
hint "normalize --outptu" "(did you mean --output?)" normalize g.pgm --outptu o.png
hint "-o on statistics" "use 'imgstat normalize" -o out.png g.pgm
hint "normalize -o out.jpg" "JPEG output is not supported" normalize g.pgm -o out.jpg
run --frobnicate g.pgm
grep -q "did you mean" err && fail "--frobnicate got a hint: $(cat err)" || pass
# a bad word value gets the nearest word, as an unknown option does
hint "--scale units" "--scale: 'units' is not native (or none, its synonym) or unit (did you mean unit?)" --dataset-only --scale units g.pgm
hint "normalize --scale units" "(did you mean unit?)" normalize --scale units g.pgm -o o.png
hint "--as rgbb" "(did you mean rgb?)" --dataset-only --as rgbb g.pgm
# the scale word the records print (scale=none, "scale":"none") is taken
# back as input, by both commands, as a synonym of native
run --dataset-only --json g.pgm
word=$(sed -n 's/.*"scale":"\([a-z]*\)".*/\1/p' out)
[ "$word" = none ] && pass || fail "the dataset record's scale: '$word'"
run --dataset-only --json --scale "$word" g.pgm
[ "$rc" -eq 0 ] && grep -q '"scale":"none"' out && pass ||
  fail "--scale $word: exit $rc: $(cat err)"
run --dataset-only --scale "$word" g.pgm
grep -q 'scale=none' out && pass || fail "--scale $word text: $(cat out)"
run normalize --scale "$word" --mean 100 --std 50 g.pgm -o z.npy
[ "$rc" -eq 0 ] && [ -s z.npy ] && pass ||
  fail "normalize --scale $word: exit $rc: $(cat err)"
rm -f z.npy
# ... and no hint where no word is near: a number is not a misspelt one
for bad in "--as xyzzy" "--ddof 2" "--layout jpg"; do
  case $bad in --layout*) run normalize $bad g.pgm -o o.npy ;; *) run --dataset-only $bad g.pgm ;; esac
  [ "$rc" -eq 2 ] && pass || fail "$bad: exit $rc, expected 2"
  grep -q "did you mean" err && fail "$bad got a hint: $(cat err)" || pass
done
run normalize --depth 12 g.pgm -o o.png
grep -q "did you mean" err && fail "--depth 12 got a hint: $(cat err)" || pass
# a first word that names no file and is a near-miss of a subcommand is a
# usage error found before any input is read (g.pgm's table is not printed)
hint "normalise" "imgstat: normalise: no such file or command (did you mean 'normalize'?)" normalise g.pgm
[ -s out ] && fail "normalise ran: $(cat out)" || pass
hint "bnech" "(did you mean 'bench'?)" bnech g.pgm
# ... but a file of that name is read, and a word far from every command is
# only a missing file (exit 1)
cp g.pgm normalise
run normalise
[ "$rc" -eq 0 ] && pass || fail "a file named normalise: exit $rc: $(cat err)"
rm -f normalise
run nosuch.pgm g.pgm
[ "$rc" -eq 1 ] && pass || fail "nosuch.pgm: exit $rc, expected 1"
grep -q "did you mean" err && fail "nosuch.pgm got a hint: $(cat err)" || pass
# no arguments: the usage line of --help (its first line) and exit 2
run
[ "$rc" -eq 2 ] && pass || fail "no arguments: exit $rc, expected 2"
"$IMGSTAT" --help | head -n 1 >usage
grep -q -x -F -f usage err && pass || fail "no arguments: no '$(cat usage)' in: $(cat err)"
# imgstat bench without a driver says what --backend gpu says
if "$IMGSTAT" --version | grep -q "CUDA backend: yes"; then
  run --backend gpu g.pgm
  if grep -q "no CUDA driver is installed" err; then
    run bench --quick
    grep -q "no CUDA driver is installed" err && pass ||
      fail "bench without a driver: $(cat err)"
  fi
fi

# --devices: all, or distinct whole device numbers; anything else is a usage
# error that quotes the value.
for v in all 0 0,1 3,1,2; do
  quiet "--devices $v" 0 --backend cpu --devices "$v" g.pgm
done
for v in "" 1.5 -1 1024 0,0 1,,2 x all,0; do
  run --backend cpu --devices "$v" g.pgm
  [ "$rc" -eq 2 ] && grep -qF "imgstat: --devices: '$v' is not 'all' or up to 16 distinct device numbers" err &&
    pass || fail "--devices '$v': exit $rc, stderr: $(cat err)"
done

echo "cli_options_test: $checks checks passed, $failures failed"
[ "$failures" -eq 0 ]
