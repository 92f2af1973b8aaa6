#!/bin/sh
# Runs report_browser_test.py (the report page in headless Chromium) with a
# python3 that has Selenium, numpy and PIL, in a private temporary folder.
# Skips (77), saying why, without one or without Chromium and its driver
# (Debian: chromium, chromium-driver, python3-selenium; sh
# tests/deps-debian.sh --tests installs them).
# Usage: sh tests/report/browser_test.sh PATH/TO/imgstat ARTIFACT_DIR
set -u
IMGSTAT=${1:?usage: browser_test.sh IMGSTAT ARTIFACT_DIR}
ARTIFACTS=${2:?usage: browser_test.sh IMGSTAT ARTIFACT_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    browser=$(command -v "$b")
    break
  fi
done
if [ -z "$browser" ] || ! command -v chromedriver >/dev/null 2>&1; then
  echo "skipped: no Chromium or chromedriver (apt-get install chromium chromium-driver)"
  exit 77
fi
. "$HERE/../support/lib.sh"
lib_python 'selenium, numpy, PIL' || lib_skip "no python3 with selenium, numpy and PIL (apt-get install python3-selenium)"
lib_tmpdir imgstat_test_report_browser
"$PY" "$HERE/report_browser_test.py" "$IMGSTAT" "$ARTIFACTS" "$T" "$browser"
exit $?
