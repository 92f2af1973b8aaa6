# Helpers shared by the shell tests (tests/cli_test.sh, tests/normalize_test.sh)
# and the GPU machine's scripts (tests/gpu/run_gpu.sh, verify_all.sh); sourced,
# POSIX sh.

# ---- counting checks --------------------------------------------------------

# pass [WHAT]: one check passed (said as "ok: WHAT" when WHAT is given).
# fail WHAT: one check failed, said as "FAIL: WHAT".
# checks and failures count them.
checks=0
failures=0
pass() {
  checks=$((checks + 1))
  [ $# -eq 0 ] || echo "ok: $*"
}
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect CODE DESCRIPTION COMMAND...: runs the command (stdout and stderr to
# $T/stdout and $T/stderr), checks its exit status; the stderr of a failure
# is shown.
expect() {
  want=$1 what=$2
  shift 2
  "$@" >"$T/stdout" 2>"$T/stderr"
  got=$?
  if [ "$got" -eq "$want" ]; then pass "$what"; else
    fail "$what: exit $got, expected $want"; sed 's/^/  | /' "$T/stderr"; fi
}

# ---- a private folder -------------------------------------------------------

# lib_tmpdir NAME: T is a new folder under $TMPDIR (or /tmp), removed when the
# script exits (made writable first, in case a test took the permission
# away); an interrupt ends the script with status 1.
lib_tmpdir() {
  T=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
  trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
  trap 'exit 1' INT TERM
}

# ---- the GPU machine ----------------------------------------------------------

# lib_gpu_prelude: for the scripts run on the GPU machine, from the top of the
# checkout: ROOT is it; OUT (default /tmp/imgstat-gpu-out) is made; the
# carried .deps (CUnit, stb: ../shared/gpu-host/bundle-deps.sh) and CUDA's
# tools are found; the corpus, when carried as .corpus, is the tests'.
# SUMMARY ($OUT/summary.txt) is emptied, and say appends a line to it (and
# prints it).
lib_gpu_prelude() {
  ROOT=$PWD
  OUT=${OUT:-/tmp/imgstat-gpu-out}
  mkdir -p "$OUT"
  export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$PATH:/usr/local/cuda/bin
  if [ -d "$ROOT/.corpus" ]; then export IMGSTAT_CORPUS=$ROOT/.corpus; fi
  SUMMARY=$OUT/summary.txt
  : >"$SUMMARY"
}
say() { echo "$*" | tee -a "$SUMMARY"; }

# lib_fast_timing BUILD LOG: builds tests/gpu/fast_timing.cu against BUILD's
# library (its build.log in $OUT tells whether TurboJPEG is linked) and runs
# it (the fused kernel against CUB's Sum), appending to LOG.
lib_fast_timing() {
  nvcc -std=c++17 -O2 -arch=sm_90 -Isrc -Isrc/core -Icuda --expt-relaxed-constexpr \
    tests/gpu/fast_timing.cu "$1/libimgstat.a" -L"$ROOT/.deps/usr/lib/x86_64-linux-gnu" -lpng -lm \
    $(grep -q "TurboJPEG: ON" "$OUT/build.log" && echo -lturbojpeg) \
    -o "$1/fast_timing" >>"$2" 2>&1 &&
    timeout 120 "$1/fast_timing" >>"$2" 2>&1
}
