# The benchmarks' harness on the GPU host, sourced from the top of the tree
# by bench/gpu/*.sh and by the GPU checks that share its set-up
# (tests/gpu/checks/): the build, the generated JPEG folders, the log and
# summary rows, hung runs, wall-clock timings and their medians.
# shellcheck shell=bash

# bench_build [IMGSTAT]: the carried .deps and CUDA's tools found; BIN is
# IMGSTAT, else build-verify/imgstat, built (with CUDA) when missing.
bench_build() {
  ROOT=$PWD
  export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$PATH:/usr/local/cuda/bin
  BIN=${1:-$ROOT/build-verify/imgstat}
  if [ ! -x "$BIN" ]; then
    cmake -S . -B build-verify -DIMGSTAT_ENABLE_CUDA=ON -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >/dev/null &&
      cmake --build build-verify -j"$(nproc)" >/dev/null || exit 1
    BIN=$ROOT/build-verify/imgstat
  fi
}

# bench_jpegs DIR N makes DIR hold N generated 12 MP JPEGs at q90 (smooth
# content plus sensor noise), unless it holds N files already.
bench_jpegs() {
  if [ "$(ls "$1" 2>/dev/null | wc -l)" -ne "$2" ]; then
    rm -rf "$1" && mkdir -p "$1"
    python3 - "$1" "$2" <<'PY'
import sys, numpy as np, cv2
from concurrent.futures import ProcessPoolExecutor
d, n = sys.argv[1], int(sys.argv[2])
def make(i):
    rng = np.random.default_rng(i)
    # smooth content (a photo's low frequencies) plus sensor noise
    small = rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    img = cv2.resize(small, (4000, 3000), interpolation=cv2.INTER_CUBIC)
    img = np.clip(img.astype(np.int16) + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
    cv2.imwrite(f"{d}/img{i:04d}.jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
with ProcessPoolExecutor() as ex:
    list(ex.map(make, range(n)))
PY
  fi
}

# bench_small_jpegs DIR N makes DIR hold N generated 0.5 MP (816 x 612)
# JPEGs at q90, unless it holds N files already.
bench_small_jpegs() {
  if [ "$(ls "$1" 2>/dev/null | wc -l)" -ne "$2" ]; then
    rm -rf "$1" && mkdir -p "$1"
    python3 - "$1" "$2" <<'PY'
import sys, numpy as np, cv2
from concurrent.futures import ProcessPoolExecutor
d, n = sys.argv[1], int(sys.argv[2])
def make(i):
    rng = np.random.default_rng(i)
    img = cv2.resize(rng.integers(0, 256, (15, 20, 3), dtype=np.uint8), (816, 612), interpolation=cv2.INTER_CUBIC)
    img = np.clip(img.astype(np.int16) + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
    cv2.imwrite(f"{d}/s{i:04d}.jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])
with ProcessPoolExecutor() as ex:
    list(ex.map(make, range(n)))
PY
  fi
}

# ---- the log, the summary and the timings of the scripts that source this
# after lib_gpu_prelude (tests/support/lib.sh) with L (the log), ROWS (the
# summary's lines), STEPS, BD (the build folder) and BIN set.
log() { echo "$*" | tee -a "$L"; }
has() { case ",$STEPS," in *",$1,"*) return 0 ;; esac; return 1; }
row() { echo "$*" >>"$ROWS"; } # the summary table's lines

# the folders: 500 x 12 MP and 6,000 x 0.5 MP, generated once; the 1,500
# and 2,000 sets are links (the 1,500 cycle over the 500: same decode work)
BIG=/tmp/imgstat-jstage-big
SMALL=/tmp/imgstat-jstage-small
make_sets() {
  [ -d $BIG ] && [ -d $SMALL ] && [ -d /tmp/jstage-2000 ] && return 0
  local t=$(date +%s)
  timeout -k 5 150 bash -c ". bench/lib.sh; bench_jpegs $BIG 500" || log "making $BIG failed"
  timeout -k 5 120 bash -c ". bench/lib.sh; bench_small_jpegs $SMALL 6000" || log "making $SMALL failed"
  rm -rf /tmp/jstage-1500 /tmp/jstage-2000 /tmp/jstage-check && mkdir -p /tmp/jstage-1500 /tmp/jstage-2000 /tmp/jstage-check
  for r in a b c; do for f in $BIG/*.jpg; do ln -s "$f" /tmp/jstage-1500/$r$(basename "$f"); done; done
  ls $SMALL/*.jpg | head -2000 | xargs -I{} ln -s {} /tmp/jstage-2000/
  # the check set: 20 large, 200 small, the corpus's JPEGs, one damaged
  ls $BIG/*.jpg | head -20 | xargs -I{} cp {} /tmp/jstage-check/
  ls $SMALL/*.jpg | head -200 | xargs -I{} cp {} /tmp/jstage-check/
  [ -d .corpus/photos ] && cp .corpus/photos/*.jpg /tmp/jstage-check/ 2>/dev/null
  head -c 60000 $BIG/img0000.jpg >/tmp/jstage-check/zz_truncated.jpg
  cat $BIG/* $SMALL/* >/dev/null
  log "sets: $(ls $BIG | wc -l) x 12 MP ($(du -sm $BIG | cut -f1) MB), $(ls $SMALL | wc -l) x 0.5 MP ($(du -sm $SMALL | cut -f1) MB), check set $(ls /tmp/jstage-check | wc -l) files ($(($(date +%s) - t)) s)"
}

# A run killed by its time limit (exit 124 or 137) marks the script hung:
# the runs after it are left out (hung), so that one hang cannot spend the
# whole device call; the mark is a file, seen from subshells too.
note_hang() {
  case $1 in 124 | 137)
    echo "$2" >"$OUT/jstage-hung"
    log "HUNG (killed at its time limit): $2" ;;
  esac
}
hung() { [ -f "$OUT/jstage-hung" ]; }

median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
# ms_of LIMIT CMD...: the wall milliseconds of one run ("fail" when it
# failed: its stderr goes to the log)
ms_of() {
  local limit=$1
  shift
  if hung; then
    echo fail
    return
  fi
  local s=$(date +%s%N)
  timeout -k 5 "$limit" "$@" >/dev/null 2>/tmp/jstage-run.err
  local rc=$?
  local ms=$((($(date +%s%N) - s) / 1000000))
  note_hang $rc "$*" >/dev/null
  if [ $rc -ne 0 ]; then
    echo "run failed (exit $rc): $* :: $(head -c 300 /tmp/jstage-run.err | tr '\n' ' ')" >>"$L"
    echo fail
  else
    echo $ms
  fi
}
med3() { # stops at the first failure
  local r=$(for _ in 1 2 3; do
    x=$(ms_of "$@")
    echo "$x"
    [ "$x" = fail ] && break
  done)
  if echo "$r" | grep -q fail; then echo fail; else echo "$r" | median; fi
}
rate() { awk -v n=$1 -v t=$2 'BEGIN{ if (t == "fail") print "-"; else printf "%.0f", n*1000/t }'; }

# jstage_build LOG LIMIT TARGET...: configures $BD once and builds the targets
# (BUILD_RC: the build's exit status); a failure's errors go to the log.
jstage_build() {
  local blog=$1 limit=$2
  shift 2
  local t=$(date +%s)
  [ -f "$BD/CMakeCache.txt" ] || timeout -k 5 120 cmake -S . -B "$BD" -DIMGSTAT_ENABLE_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$blog" 2>&1
  timeout -k 5 "$limit" cmake --build "$BD" -j"$(nproc)" --target "$@" >>"$blog" 2>&1
  BUILD_RC=$?
  log "build: rc=$BUILD_RC ($(($(date +%s) - t)) s); $(grep -E 'nvJPEG|TurboJPEG|MPI' "$blog" | tr '\n' ' ' | head -c 300)"
  if [ $BUILD_RC -ne 0 ]; then
    grep -E "error|Error" "$blog" | head -20 | tee -a "$L"
    row "build | FAILED (rc $BUILD_RC): nothing else can run"
  fi
}

# jstage_binary: stops the script when $BIN is not there, else names it.
jstage_binary() {
  if [ ! -x "$BIN" ]; then
    log "no $BIN: stop"
    exit 1
  fi
  log "binary: $("$BIN" --version 2>&1 | tr '\n' ' ' | head -c 300)"
}

# jstage_past_startup: from the medians MS[gpuN] (ms), the rate between the
# 500- and 1,500-file runs and between the 2,000- and 6,000-file runs, and
# the fixed cost (start-up and teardown) that rate leaves in the smaller run.
jstage_past_startup() {
  local p a b goal r f
  for p in "500 1500 >=400" "2000 6000 >=10000"; do
    read -r a b goal <<<"$p"
    if [ -n "${MS[gpu$a]:-}" ] && [ -n "${MS[gpu$b]:-}" ] && [ "${MS[gpu$a]}" != fail ] && [ "${MS[gpu$b]}" != fail ]; then
      r=$(awk -v a=$a -v b=$b -v ta=${MS[gpu$a]} -v tb=${MS[gpu$b]} 'BEGIN{ if (tb > ta) printf "%.0f", (b-a)*1000/(tb-ta); else print "-" }')
      f=$(awk -v a=$a -v r=$r -v ta=${MS[gpu$a]} 'BEGIN{ if (r > 0) printf "%.0f", ta - a*1000/r; else print "-" }')
      log "bench past start-up ($a -> $b files): $r images/s (goal $goal); fixed cost $f ms"
      row "bench past start-up $a->$b | $r /s | goal $goal | fixed cost $f ms"
    fi
  done
}

# ---- the Python package on the GPU host (tests/gpu/checks/python_cuda.sh,
# bench/gpu/python_cuda.sh: both use the package built into $BD/site), with
# the variables above, BUDGET (seconds for the whole call) and T0 set.

# py_setup: the host's python3 as PY (the one with torch, numpy, CuPy,
# nanobind and scikit-build-core: itself a venv, so a venv made from it
# would not see them); the package goes into a folder of its own, SITE, on
# PYTHONPATH.
py_setup() {
  PY=$(command -v python3)
  SITE=$BD/site
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
  export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
  # Make where there is no ninja, as tests/python/python_test.sh
  command -v ninja >/dev/null 2>&1 || export CMAKE_GENERATOR="Unix Makefiles"
  [ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
  return 0
}
elapsed() { echo $(($(date +%s) - T0)); }
# limit WANT: WANT seconds, or what is left of the budget (0: skip)
limit() {
  local left=$((BUDGET - $(elapsed)))
  if [ "$left" -lt 15 ]; then echo 0; elif [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}
# rows of a Python step: its "ROW a | b" lines
rows_of() { grep '^ROW ' "$1" | sed 's/^ROW //' >>"$ROWS"; }

# py_build: `pip install ./python` with CUDA into $SITE
py_build() {
  local t rc lim
  t=$(date +%s)
  mkdir -p "$BD"
  rm -rf "$SITE"
  lim=$(limit 330)
  CMAKE_ARGS="-DIMGSTAT_ENABLE_CUDA=ON -DCMAKE_PREFIX_PATH=$ROOT/.deps/usr" \
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout -k 5 "$lim" \
    "$PY" -m pip install --no-build-isolation --no-deps --force-reinstall \
    --target "$SITE" --config-settings=build-dir="$BD/python-build" ./python \
    >"$OUT/pycuda-pip.log" 2>&1
  rc=$?
  log "build: pip install ./python rc=$rc ($(($(date +%s) - t)) s)"
  if [ $rc -ne 0 ]; then
    grep -E "error|Error" "$OUT/pycuda-pip.log" | head -20 | tee -a "$L"
    row "build | FAIL (rc $rc): see pycuda-pip.log"
  fi
}

# py_package: the package's version line (INFO), its program (BIN) and the
# build's row
py_package() {
  INFO=$(cd /tmp && "$PY" -c 'import imgstat; print(imgstat.__version__, "cuda", imgstat.cuda)' 2>&1 | tail -1)
  log "package: $INFO; $(cd /tmp && "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -1)"
  BIN=$(cd /tmp && "$PY" -c 'import imgstat; print(imgstat.program())' 2>/dev/null)
  case "$INFO" in
    *"cuda True"*) row "build | PASS ($INFO)" ;;
    *) row "build | FAIL: $INFO" ;;
  esac
}

# pystep NAME WANT SCRIPT ARGS...: a step of a Python script (one step a
# call, "ROW" lines for the summary), its log and rows
pystep() {
  local name=$1 want=$2 script=$3
  shift 3
  local t lim
  t=$(date +%s)
  lim=$(limit "$want")
  if [ "$lim" -eq 0 ]; then
    row "$name | not run (no time left)"
    return
  fi
  timeout -k 5 "$lim" "$PY" "$script" "$@" >"$OUT/pycuda-$name.log" 2>&1
  local rc=$?
  log "$name: rc=$rc ($(($(date +%s) - t)) s)"
  grep -v '^ROW ' "$OUT/pycuda-$name.log" | tail -25 | tee -a "$L"
  rows_of "$OUT/pycuda-$name.log"
  [ $rc -eq 0 ] || row "$name | rc $rc (see pycuda-$name.log)"
}

# py_summary TITLE: the rows as a table, last
py_summary() {
  log "== done in $(elapsed) s"
  {
    echo
    echo "== $1 summary ($(elapsed) s)"
    column -t -s'|' "$ROWS" 2>/dev/null || cat "$ROWS"
  } | tee -a "$L"
}
