#!/bin/sh
# Numbers in the C locale whatever the process's locale is (docs/formats.md,
# "Numbers"): tests/core/number_calls_check.py finds no call that reads or prints
# a float outside src/core/number.c; then a locale whose decimal point is a
# comma is made here with localedef (de_DE, in a private folder through
# LOCPATH), and
#   * tests/test_number_locale (a program that links the library and sets
#     that locale) reads FITS cards and the PFM scale and writes records as
#     in the C locale, with the values worked out by hand;
#   * tests/core/number_locale_check.py runs the program's records, histograms,
#     plots and --dataset under LC_ALL=C and the comma locale: byte for
#     byte the same, and the values worked out by hand.
# Skips (77), saying why, when no comma locale can be made (and the calls
# check passed).
# Usage: sh tests/core/number_locale_test.sh TEST_NUMBER_LOCALE IMGSTAT SOURCE_DIR
set -u
PROGRAM=${1:?usage: number_locale_test.sh TEST_NUMBER_LOCALE IMGSTAT SOURCE_DIR}
IMGSTAT=${2:?}
SRC=${3:?}
. "$SRC/tests/support/lib.sh"
lib_tmpdir imgstat_test_number_locale
NAME=de_DE.UTF-8
if command -v python3 >/dev/null 2>&1; then
  python3 "$SRC/tests/core/number_calls_check.py" "$SRC" && pass || fail "number_calls_check.py"
else
  echo "skipped: the calls check (no python3)"
fi
skip() {
  echo "skipped: $*"
  echo "number_locale_test: $checks checks, $failures failures"
  [ "$failures" -eq 0 ] || exit 1
  exit 77
}
if ! command -v localedef >/dev/null 2>&1; then
  skip "no localedef to make a locale with a decimal comma (sh tests/deps-debian.sh --tests installs locales)"
fi
mkdir "$T/loc"
localedef -i de_DE -f UTF-8 "$T/loc/$NAME" >"$T/localedef.log" 2>&1
if [ "$(LOCPATH=$T/loc LC_ALL=$NAME locale decimal_point 2>/dev/null)" != "," ]; then
  sed 's/^/  | /' "$T/localedef.log"
  skip "localedef made no locale with a decimal comma (de_DE; sh tests/deps-debian.sh --tests installs locales)"
fi
export LOCPATH="$T/loc" IMGSTAT_TEST_COMMA_LOCALE="$NAME"
# In a sanitized build: glibc's own LOCPATH list is no leak of ours.
LSAN_OPTIONS="suppressions=$SRC/tests/support/lsan-locale.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS
TMPDIR=$T "$PROGRAM" >"$T/unit.log" 2>&1
got=$?
if [ "$got" -eq 0 ]; then pass "the library under $NAME"; else
  fail "test_number_locale: exit $got"; cat "$T/unit.log"; fi
if command -v python3 >/dev/null 2>&1; then
  mkdir "$T/cli"
  python3 "$SRC/tests/core/number_locale_check.py" "$IMGSTAT" "$T/cli" "$NAME" &&
    pass "the program under LC_ALL=$NAME" || fail "number_locale_check.py"
else
  echo "skipped: the program's part (no python3)"
fi
echo "number_locale_test: $checks checks, $failures failures"
[ "$failures" -eq 0 ]
