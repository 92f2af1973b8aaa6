#!/bin/sh
# After a ctest run: ctest shows a skipped test as "***Skipped" and hides
# its output, so this lists every "skipped: why" line the tests printed,
# under the test's name, from the run's log. (Not a CTEST_CUSTOM_POST_TEST:
# ctest runs that before it writes the log, and not with --test-dir.)
# Usage: sh tests/tools/skipped_summary.sh BUILD_DIR
log=${1:?usage: skipped_summary.sh BUILD_DIR}/Testing/Temporary/LastTest.log
[ -f "$log" ] || exit 0
awk '
  / Test: / { name = $NF }
  /^skipped: / { lines[++n] = name ": " $0 }
  END {
    if (n) {
      print ""
      print "Skipped tests and parts of tests, and why:"
      for (i = 1; i <= n; i++) print "  " lines[i]
    }
  }' "$log"
exit 0
