#!/bin/sh
# The README's dataset recipe (imgstat --dataset-only --scale unit DIR) on a
# folder of mixed layouts and depths against torchvision's ImageFolder
# numbers computed with Pillow and numpy (tests/torchvision_check.py).
# Usage: sh tests/torchvision_test.sh PATH/TO/imgstat
set -u
IMGSTAT=${1:?usage: torchvision_test.sh IMGSTAT}
HERE=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy, PIL, png' 2>/dev/null; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/imgstat_test_torchvision.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    "$p" "$HERE/torchvision_check.py" "$IMGSTAT" "$T"
    exit $?
  fi
done
echo "skipped: no python3 with numpy, PIL and pypng (sh tests/deps-debian.sh --tests installs them)"
exit 77
