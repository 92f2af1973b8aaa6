#!/bin/bash
# Runs the tests under valgrind's memcheck, which sees what ASan cannot:
# reads of uninitialised memory (a decoder that leaves pixels unwritten, a
# table entry nobody set):
#
#   tests/tools/valgrind.sh BUILD_DIR [PART...]
#
# from the top of the repository, with BUILD_DIR a default build (no
# sanitizer, no -DIMGSTAT_FUZZ) with its tests built. The parts (all unless
# named):
#   unit    every CUnit executable BUILD_DIR/tests/test_* (77: skipped;
#           test_mpi skips here: it runs only under mpirun, and Open MPI's
#           start-up is noise under valgrind);
#   replay  replay_load, replay_pipeline and replay_png_paths
#           (tests/fuzz/fuzz_replay.c) over
#           samples/ and all of tests/data: the fuzzers' seeds and
#           regression inputs, through every decoder, the statistics,
#           histograms, normalization and the writers;
#   cli     tests/cli/cli_test.sh and tests/norm/normalize_test.sh with imgstat run
#           under valgrind.
# Any valgrind report fails the run (exit status 1); its log is printed and
# kept in BUILD_DIR/valgrind/. Extra valgrind options come from the
# environment, e.g. VALGRIND_OPTS=--track-origins=yes to see where an
# uninitialised value came from (slower; CI leaves it off).
set -euo pipefail
usage="usage: tests/tools/valgrind.sh BUILD_DIR [unit|replay|cli...]"
build=${1:?$usage}
shift
parts=("$@")
if [ "${#parts[@]}" -eq 0 ]; then parts=(unit replay cli); fi
if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind.sh: valgrind is not installed (sh tests/deps-debian.sh)" >&2
  exit 2
fi
if [ ! -x "$build/tests/replay_load" ] || [ ! -x "$build/imgstat" ]; then
  echo "valgrind.sh: $build has no imgstat or tests/replay_load: build it without -DIMGSTAT_FUZZ" >&2
  exit 2
fi
build=$(cd "$build" && pwd)
top=$(pwd)
# one folder per set of parts, so that two runs (CI runs unit+replay beside
# cli) keep apart
logs="$build/valgrind/$(
  IFS=-
  echo "${parts[*]}"
)"
rm -rf "$logs"
mkdir -p "$logs"

# Every process gets its own log (%p: its pid), where -q leaves only
# reports. --error-exitcode makes a process with a report fail too, but the
# logs are what decides: a shell test may not look at every exit status.
vg=(valgrind -q --error-exitcode=99 --leak-check=no --num-callers=30)
failed=()

# check_logs PART: prints the valgrind reports in PART's logs (PART-*.log;
# a replay's log names each input before its reports) and counts PART as
# failed if there is one.
check_logs() {
  local bad=0 f
  for f in "$logs/$1"-*.log; do
    if ! grep -q -E '^==[0-9]+== ' "$f" 2>/dev/null; then continue; fi
    echo "---- valgrind report ($f)"
    awk '/^replay: /{last=$0; shown=0; next}
      /^==[0-9]+== /{if (!shown && last != "") {print last; shown=1}; print}' "$f"
    bad=1
  done
  if [ "$bad" -ne 0 ]; then failed+=("$1"); fi
}

step() { printf '\n---- %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

for part in "${parts[@]}"; do
  case $part in
  unit)
    for t in "$build"/tests/test_*; do
      if [ ! -f "$t" ] || [ ! -x "$t" ]; then continue; fi
      name=$(basename "$t")
      step "$name"
      rc=0
      "${vg[@]}" --log-file="$logs/unit-$name.%p.log" "$t" >"$logs/$name.out" 2>&1 || rc=$?
      if [ "$rc" -eq 77 ]; then
        echo "skipped"
      elif [ "$rc" -ne 0 ]; then
        tail -n 20 "$logs/$name.out"
        echo "$name: exit status $rc"
        failed+=("$name")
      else
        grep -E 'asserts|tests ' "$logs/$name.out" | tail -n 2 || true
      fi
    done
    check_logs unit
    ;;
  replay)
    for r in load pipeline png_paths archive; do
      # replay_archive: where the build has libarchive
      [ "$r" != archive ] || [ -x "$build/tests/replay_$r" ] || continue
      step "replay_$r"
      rc=0
      # valgrind's reports and the names of the inputs in one log
      "${vg[@]}" --log-fd=2 "$build/tests/replay_$r" -v "$top/samples" \
        "$top/tests/data" 2>"$logs/replay-$r.log" || rc=$?
      tail -n 1 "$logs/replay-$r.log"
      if [ "$rc" -ne 0 ] && [ "$rc" -ne 99 ]; then
        # not valgrind's status: the target itself failed on an input
        grep -v -E '^==[0-9]+== ' "$logs/replay-$r.log" | tail -n 5
        echo "replay_$r: exit status $rc"
        failed+=("replay_$r")
      fi
    done
    check_logs replay
    ;;
  cli)
    # imgstat under valgrind, as the shell tests call it.
    wrapper="$logs/imgstat"
    printf '#!/bin/bash\nexec %s --log-file=%q %q "$@"\n' "${vg[*]}" \
      "$logs/cli-imgstat.%p.log" "$build/imgstat" >"$wrapper"
    chmod +x "$wrapper"
    for s in cli/cli_test norm/normalize_test; do
      t=${s#*/}
      step "$t.sh"
      rc=0
      sh "$top/tests/$s.sh" "$wrapper" "$top/tests/data" >"$logs/$t.out" 2>&1 || rc=$?
      tail -n 3 "$logs/$t.out"
      if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
        grep -E '^FAIL' "$logs/$t.out" | head -n 20 || true
        failed+=("$t")
      fi
    done
    check_logs cli
    ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
  esac
done

if [ "${#failed[@]}" -ne 0 ]; then
  echo "valgrind.sh: failed: ${failed[*]} (logs in $logs)" >&2
  exit 1
fi
echo "valgrind.sh: ${parts[*]}: no report"
