#!/bin/sh
# The user documentation: the man page renders without a groff warning, and
# tests/cli/docs_check.py holds the man page and the README to the option table
# (tests/opt_dump) and finds no issue number or sibling-checkout path.
# Usage: sh tests/cli/docs_test.sh OPT_DUMP IMGSTAT SOURCE_DIR
set -u
DUMP=${1:?usage: docs_test.sh OPT_DUMP IMGSTAT SOURCE_DIR}
IMGSTAT=${2:?}
SRC=${3:?}
. "$SRC/tests/support/lib.sh"
lib_tmpdir imgstat_test_docs
if command -v groff >/dev/null 2>&1; then
  groff -man -ww -z "$SRC/docs/imgstat.1" 2>"$T/lint"
  if [ -s "$T/lint" ]; then fail "man page lint: $(cat "$T/lint")"; else pass; fi
else
  echo "skipped: man page lint (no groff; sh tests/deps-debian.sh --tests installs it)"
fi
# --help names no issue or sibling checkout either
"$IMGSTAT" --help >"$T/help" 2>&1
"$IMGSTAT" normalize --help >>"$T/help" 2>&1
if grep -n -E 'issues? #?[0-9]+|\.\./shared' "$T/help"; then fail "--help names an issue or ../shared"; else pass; fi
"$DUMP" >"$T/table" || fail "opt_dump failed"
if lib_python re; then
  "$PY" "$SRC/tests/cli/docs_check.py" "$T/table" "$SRC" && pass || fail "docs_check.py"
fi
echo "docs_test: $checks checks, $failures failures"
[ "$failures" -eq 0 ]
