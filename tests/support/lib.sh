# Helpers shared by the shell tests (tests/cli/cli_test.sh, tests/norm/normalize_test.sh,
# the wrappers that run a Python check such as tests/support/pycheck.sh) and the
# GPU machine's scripts (tests/gpu/checks/run_gpu.sh, verify_all.sh); sourced,
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

# ---- Python -------------------------------------------------------------------

# lib_python MODULES: PY is the first of python3 and /usr/bin/python3 (one
# earlier on PATH may not see Debian's python3-* packages) that can import
# MODULES (as written after import: "numpy, PIL"); status 1, PY empty, when
# neither can.
lib_python() {
  PY=
  for p in python3 /usr/bin/python3; do
    if "$p" -c "import $1" 2>/dev/null; then
      PY=$p
      return 0
    fi
  done
  return 1
}

# lib_skip WHY: says "skipped: WHY" and ends the script with 77 (ctest's
# SKIP_RETURN_CODE).
lib_skip() {
  echo "skipped: $*"
  exit 77
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

# lib_fast_timing BUILD LOG: builds bench/gpu/fast_timing.cu against BUILD's
# library (its build.log in $OUT tells whether TurboJPEG is linked) and runs
# it (the fused kernel against CUB's Sum), appending to LOG.
lib_fast_timing() {
  nvcc -std=c++17 -O2 -arch=sm_90 -Iinclude -Isrc -Isrc/core -Icuda --expt-relaxed-constexpr \
    bench/gpu/fast_timing.cu "$1/libimgstat.a" -L"$ROOT/.deps/usr/lib/x86_64-linux-gnu" -lpng -lm \
    $(grep -q "TurboJPEG: ON" "$OUT/build.log" && echo -lturbojpeg) \
    -o "$1/fast_timing" >>"$2" 2>&1 &&
    timeout 120 "$1/fast_timing" >>"$2" 2>&1
}

# ---- a GPU that cannot start ------------------------------------------------

# lib_gone_setup: in $T, dir/ (three copies of $jpg) and mixed/ (a JPEG and
# $png), for lib_gone_all.
lib_gone_setup() {
  mkdir "$T/dir" "$T/mixed"
  for k in 1 2 3; do cp "$jpg" "$T/dir/p$k.jpg"; done
  cp "$jpg" "$T/mixed/a.jpg"
  cp "$png" "$T/mixed/b.png"
}

# lib_gone WHAT N OPTION WHY COMMAND...: the command, under timeout ($limit
# seconds), exits 1 with N lines "OPTION needs a usable GPU: ..." on
# stderr, each containing WHY ("": any reason), and no record on stdout. A
# run still going at the limit is a hang.
lib_gone() {
  what=$1 n=$2 opt=$3 why=$4
  shift 4
  timeout -k 5 "$limit" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
  got=$?
  if [ "$got" -eq 124 ] || [ "$got" -eq 137 ]; then
    fail "$what: still running after ${limit}s (a hang)"
    sed 's/^/  | /' "$T/stderr"
    return
  fi
  if [ "$got" -ne 1 ]; then
    fail "$what: exit $got, expected 1"
    sed 's/^/  | /' "$T/stderr"
    return
  fi
  lines=$(grep -F -- "$opt needs a usable GPU: " "$T/stderr" | grep -cF -- "$why")
  if [ "$lines" -ne "$n" ]; then
    fail "$what: $lines lines '$opt needs a usable GPU: ...$why...', expected $n"
    sed 's/^/  | /' "$T/stderr"
    return
  fi
  if grep -q '"file"' "$T/stdout"; then
    fail "$what: a record for an input that failed"
    return
  fi
  pass "$what"
}

# lib_gone_all LABEL WHY VAR=VALUE...: every GPU option's run that must end
# with the start-up's failure (IMGSTAT, jpg, T with lib_gone_setup's
# folders), under the environment given: --jpeg-decoder gpu (the device
# stage) on one JPEG, two, folders, --dataset, standard input; --backend gpu
# for the statistics and normalize.
lib_gone_all() {
  label=$1
  why=$2
  shift 2
  lib_gone "$label: one JPEG" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --jpeg-decoder gpu "$jpg"
  lib_gone "$label: one JPEG, --json, -j 1" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --json -j 1 --jpeg-decoder gpu "$jpg"
  lib_gone "$label: one JPEG, --histogram" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --histogram --jpeg-decoder gpu "$jpg"
  lib_gone "$label: one JPEG, --devices all" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --devices all --jpeg-decoder gpu "$jpg"
  lib_gone "$label: two JPEGs" 2 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --json --jpeg-decoder gpu "$jpg" "$T/dir/p1.jpg"
  lib_gone "$label: a folder of JPEGs" 3 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --json --jpeg-decoder gpu "$T/dir"
  lib_gone "$label: a folder of JPEGs, -j 1" 3 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" -j 1 --jpeg-decoder gpu "$T/dir"
  # A decoder's state fails in a lane of the device stage, after the device
  # has started: only what enters the stage fails there. The PNG does not,
  # nor a JPEG on standard input (read once: decoded on the CPU, never
  # offered to nvJPEG), so both are read.
  mixed_n=2
  case $why in *start:state*) mixed_n=1 ;; esac
  lib_gone "$label: a JPEG and a PNG" "$mixed_n" "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --jpeg-decoder gpu "$T/mixed"
  lib_gone "$label: --dataset, a folder of JPEGs" 3 "--jpeg-decoder gpu" \
    "$why" env "$@" "$IMGSTAT" --json --dataset --jpeg-decoder gpu "$T/dir"
  lib_gone "$label: --dataset, one JPEG" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --dataset --jpeg-decoder gpu "$jpg"
  case $why in *start:state*) return ;; esac
  lib_gone "$label: a JPEG on standard input" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" sh -c '"$0" --jpeg-decoder gpu - <"$1"' "$IMGSTAT" "$jpg"
  case $why in *start:handles* | *start:decoder* | *start:state*) return ;; esac
  lib_gone "$label: --backend gpu, one JPEG" 1 "--backend gpu" "$why" \
    env "$@" "$IMGSTAT" --backend gpu "$jpg"
  lib_gone "$label: normalize --backend gpu, one JPEG" 1 "--backend gpu" \
    "$why" env "$@" "$IMGSTAT" normalize --backend gpu "$jpg" -o "$T/one.png"
  lib_gone "$label: normalize --backend gpu, a folder" 1 "--backend gpu" \
    "$why" env "$@" "$IMGSTAT" normalize --backend gpu "$T/dir" -o "$T/out"
  if [ -e "$T/one.png" ] || [ -n "$(ls -A "$T/out" 2>/dev/null)" ]; then
    fail "$label: normalize wrote an output without a GPU"
  fi
  rm -rf "$T/out" "$T/one.png"
}
