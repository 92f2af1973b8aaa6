#!/bin/sh
# `cmake --install BUILD --prefix TMP` gives an installation whose --help and
# man page name only files that are there: every absolute path --help prints
# lies under TMP and exists; every document the man page names (NAME.md) is
# in TMP's share/doc/imgstat; the headers the README's install list names are
# the ones installed; the pkg-config file names no machine's CUDA folder
# outright.
# Usage: sh tests/cli/install_test.sh CMAKE BUILD_DIR SOURCE_DIR
set -u
CMAKE=${1:?usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR}
BUILD=${2:?}
SRC=${3:?}
. "$SRC/tests/support/lib.sh"
lib_tmpdir imgstat_test_install
P=$T/prefix

if ! "$CMAKE" --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1; then
  fail "cmake --install --prefix: $(tail -3 "$T/install.log")"
  exit 1
fi
[ -x "$P/bin/imgstat" ] && pass || fail "bin/imgstat not installed"

# --help and normalize --help: every absolute path named exists under $P.
for cmd in "" normalize; do
  # shellcheck disable=SC2086 # "" is no argument
  "$P/bin/imgstat" $cmd --help >"$T/help" 2>&1 || fail "imgstat $cmd --help failed"
  # a path: a word that starts with / (after a space or a parenthesis)
  grep -oE '(^|[ (])/[A-Za-z0-9_.+/-]+' "$T/help" | sed 's/^[ (]//; s/[.]$//' |
    sort -u >"$T/paths"
  [ -s "$T/paths" ] && pass || fail "imgstat $cmd --help names no document"
  while IFS= read -r p; do
    case $p in
    "$P"/*) [ -e "$p" ] && pass || fail "imgstat $cmd --help names $p, not installed" ;;
    *) fail "imgstat $cmd --help names $p, outside the prefix $P" ;;
    esac
  done <"$T/paths"
done

# The man page: every NAME.md it names is installed beside the README.
docdir=$P/share/doc/imgstat
[ -f "$P/share/man/man1/imgstat.1" ] && pass || fail "man page not installed"
grep -o '[A-Za-z_-]*\.md' "$SRC/docs/imgstat.1" | sort -u >"$T/mandocs"
[ -s "$T/mandocs" ] && pass || fail "the man page names no document"
while IFS= read -r d; do
  [ -f "$docdir/$d" ] && pass || fail "the man page names $d, not installed in $docdir"
done <"$T/mandocs"

# The README's install list: exactly the headers installed.
(cd "$P/include" && find . -type f | sed 's|^\./||' | sort) >"$T/headers"
sed -n '/^## Installing/,/^## /p' "$SRC/README.md" |
  grep -o 'include/imgstat/[a-z_]*\.h' | sed 's|include/||' | sort -u >"$T/readme_headers"
if cmp -s "$T/headers" "$T/readme_headers"; then pass; else
  fail "README's install list and the installed headers differ:"
  diff "$T/readme_headers" "$T/headers" | sed 's/^/  | /'
fi

# pkg-config: no CUDA folder written out (a variable a user can override).
pc=$P/lib/pkgconfig/imgstat.pc
[ -f "$pc" ] || pc=$(find "$P" -name imgstat.pc | head -n 1)
if [ -n "$pc" ] && [ -f "$pc" ]; then
  if grep '^Libs' "$pc" | grep -q -- '-L/'; then
    fail "imgstat.pc's Libs name a folder outright: $(grep '^Libs' "$pc")"
  else pass; fi
else
  fail "imgstat.pc not installed"
fi

echo "install_test: $checks checks, $failures failures"
[ "$failures" -eq 0 ]
