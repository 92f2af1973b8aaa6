#!/bin/sh
# The Python package (python/): `pip install` of it (scikit-build-core on
# the project's CMake, nanobind) into a venv in the build folder, then its
# pytest suite: numpy arrays of every dtype and layout against numpy, scan
# and dataset over folders against numpy, and the records against this
# build's program (--json) on the samples, tests/data and the corpus.
# Usage: sh tests/python/python_test.sh SOURCE_DIR BUILD_DIR IMGSTAT CORPUS CUDA
# (CUDA: ON or OFF, as this build). Skips (exit 77) saying why when Python's
# build prerequisites are missing: python3-dev, python3-venv, numpy and
# pytest (tests/deps-debian.sh --tests installs them), or nanobind and
# scikit-build-core, which come from PyPI into the venv.
set -u
src=$1 build=$2 cli=$3 corpus=$4 cuda=$5
venv=$build/python-venv
skip() {
  echo "skipped: $*"
  exit 77
}
# The first Python with what the build and the tests need: IMGSTAT_PYTHON,
# python3, Debian's own.
python=
why="no python3"
for p in ${IMGSTAT_PYTHON:-} python3 /usr/bin/python3; do
  command -v "$p" >/dev/null 2>&1 || continue
  if ! "$p" - <<'EOPY'; then
import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))
EOPY
    why="no Python.h for $p (apt-get install python3-dev)"
  elif ! "$p" -c 'import numpy, pytest, venv, ensurepip' 2>/dev/null; then
    why="no numpy, pytest or venv for $p (apt-get install python3-numpy python3-pytest python3-venv)"
  else
    python=$p
    break
  fi
done
[ -n "$python" ] || skip "$why"
if [ ! -x "$venv/bin/python" ]; then
  # Debian's numpy and pytest, seen from the venv
  "$python" -m venv --system-site-packages "$venv" >/dev/null 2>&1 || {
    rm -rf "$venv"
    skip "python3 -m venv failed (apt-get install python3-venv)"
  }
fi
py=$venv/bin/python
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
if ! "$py" -c 'import nanobind, scikit_build_core' 2>/dev/null; then
  "$py" -m pip install --quiet "nanobind>=2.0" "scikit-build-core>=0.10" \
    >"$build/python-pip.log" 2>&1 ||
    skip "cannot install nanobind and scikit-build-core from PyPI (no network?): $build/python-pip.log"
fi
# The package as a user builds it, its CMake build kept here (a second run
# rebuilds what changed); CUDA as in this build.
start=$(date +%s)
# Make where there is no ninja (Debian's cmake comes without it)
command -v ninja >/dev/null 2>&1 || export CMAKE_GENERATOR="Unix Makefiles"
CMAKE_ARGS="-DIMGSTAT_ENABLE_CUDA=$cuda" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  "$py" -m pip install --quiet --no-build-isolation --force-reinstall --no-deps \
  --config-settings=build-dir="$build/python-build" "$src/python" || {
  echo "FAILED: pip install $src/python"
  exit 1
}
echo "python: pip install ./python took $(($(date +%s) - start)) s"
tmp=$build/python-tmp
rm -rf "$tmp"
cd "$src/python/tests" || exit 1
IMGSTAT_CLI=$cli IMGSTAT_CORPUS=$corpus "$py" -m pytest -q -p no:cacheprovider \
  --basetemp="$tmp" .
status=$?
rm -rf "$tmp"
# pytest's own exit status 5 is "no tests ran": a failure here
exit $status
