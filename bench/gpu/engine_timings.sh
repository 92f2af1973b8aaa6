#!/bin/bash
# Whole-process timings of the engine on the GPU host, in one call, every
# step with a hard time limit (timeout -k) and its lines appended to
# $OUT/engine_timings.log as they come (a cut-off call still brings them back):
#   photo:     one 12 MP photo, auto against --backend cpu, interleaved, 21
#              runs each;
#   dataset:   --dataset against the plain run, CPU and GPU backends,
#              200 x 12 MP; the dataset record of a mixed folder from the CPU
#              and the GPU(s);
#   normalize: bench/gpu/normalize.sh (N images);
#   nvjpeg:    nvJPEG folder timings, and --jpeg-decoder gpu on 10 photos
#              with a limit; on a hang, the threads' kernel wait channels
#              and, with gdb, their stacks.
# Usage (top of the tree, .deps and .corpus carried):
#   bench/gpu/engine_timings.sh [STEPS] [N_NORMALIZE]
#     STEPS: e.g. photo,dataset,normalize,nvjpeg (the default); also
#     verify (only --verify --jpeg-decoder gpu, watched for a hang), hist,
#     startup and folders (--dataset and normalize on the folders)
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
STEPS=${1:-photo,dataset,normalize,nvjpeg}
NN=${2:-100}
L=${OUT:-/tmp}/engine_timings.log
say() { echo "$*" | tee -a "$L"; }
export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PATH:/usr/local/cuda/bin
[ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
BD=build-verify
[ -f $BD/CMakeCache.txt ] || cmake -S . -B $BD -DIMGSTAT_ENABLE_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >/dev/null
timeout -k 5 300 cmake --build $BD -j"$(nproc)" >/dev/null 2>&1 || { say "build failed"; exit 1; }
BIN=$ROOT/$BD/imgstat
say "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x$(nvidia-smi -L | wc -l), $(nproc) cores; $("$BIN" --version | tr '\n' ' ')"
. bench/lib.sh
BIG=/tmp/imgstat-bench-jpeg
timeout -k 5 120 bash -c ". bench/lib.sh; bench_jpegs $BIG 200"
cat $BIG/* >/dev/null
ms_of() { # the wall milliseconds of one run, limit 60 s
  local s=$(date +%s%N)
  timeout -k 5 60 "$@" >/dev/null 2>&1
  echo $((($(date +%s%N) - s) / 1000000))
}
med3() { for _ in 1 2 3; do ms_of "$@"; done | median; }

if has photo; then
  f=$(ls $BIG/*.jpg | head -1)
  for r in $(seq 21); do
    for a in cpu auto; do echo "$a $(ms_of "$BIN" --backend $a "$f")"; done
  done >/tmp/one.txt
  c=$(awk '$1=="cpu"{print $2}' /tmp/one.txt | median)
  a=$(awk '$1=="auto"{print $2}' /tmp/one.txt | median)
  say "photo: one 12 MP photo, 21 interleaved runs: --backend cpu $c ms, auto $a ms: $(awk -v a=$a -v c=$c 'BEGIN{printf "%.3f", a/c}') x"
fi

if has dataset; then
  for b in cpu gpu; do
    p=$(med3 "$BIN" --json --backend $b $BIG)
    d=$(med3 "$BIN" --json --backend $b --dataset $BIG)
    say "dataset: --backend $b: plain $p ms, --dataset $d ms: $(awk -v d=$d -v p=$p 'BEGIN{printf "%.3f", d/p}') x; $(awk -v d=$d 'BEGIN{printf "%.1f", 200000/d}') images/s with --dataset"
  done
  T=$(mktemp -d)
  mkdir -p "$T/in"
  [ -d .corpus ] && cp -r .corpus/photos "$T/in/photos"
  cp $BIG/img000[0-9].jpg "$T/in/"
  for args in "--backend cpu" "--backend gpu" "--backend gpu --devices all"; do
    timeout -k 5 120 "$BIN" --json --dataset-only --as rgb $args "$T/in" 2>/dev/null >"$T/d.json"
    sed 's/"backend":"[a-z]*",\?//' "$T/d.json" >"$T/d-${args//[ -]/_}.json"
  done
  for f in "$T"/d-__backend_gpu*.json; do
    cmp -s "$T/d-__backend_cpu.json" "$f" && r=identical || r=DIFFERS
    say "dataset: dataset record $(basename "$f" .json) against the CPU's: $r ($(wc -c <"$f") bytes)"
  done
fi

# watched LIMIT NAME CMD...: runs CMD (stdout /tmp/NAME.out, stderr
# /tmp/NAME.err); past LIMIT seconds it is a hang: the threads' wait
# channels and kernel stacks and (with gdb) their user stacks go to the log,
# then SIGKILL. Returns CMD's status, or 124 on a hang.
watched() {
  local limit=$1 name=$2
  shift 2
  local s=$(date +%s%N)
  "$@" >/tmp/$name.out 2>/tmp/$name.err &
  local pid=$!
  for _ in $(seq $((limit * 5))); do kill -0 $pid 2>/dev/null || break; sleep 0.2; done
  if kill -0 $pid 2>/dev/null; then
    say "nvjpeg: $name: still running after $limit s: a hang; threads:"
    for t in /proc/$pid/task/*; do
      say "   $(basename $t) $(cat $t/comm) wchan=$(cat $t/wchan 2>/dev/null) $(head -3 $t/stack 2>/dev/null | awk '{print $2}' | tr '\n' ' ')"
    done
    if command -v gdb >/dev/null; then
      timeout 60 gdb -batch -ex "thread apply all bt" -p $pid 2>&1 | grep -E '^(Thread|#)' | head -300 >>"$L"
    else
      timeout 60 python3 tests/gpu/checks/stackscan.py $pid 2048 >>"$L" 2>&1
    fi
    say "   (so far: $(wc -l </tmp/$name.out) lines out; stderr: $(head -c 300 /tmp/$name.err | tr '\n' ' '))"
    kill -9 $pid
    wait $pid 2>/dev/null
    return 124
  fi
  wait $pid
  local rc=$?
  say "nvjpeg: $name: exit $rc in $((($(date +%s%N) - s) / 1000000)) ms, $(wc -l </tmp/$name.out) lines out, $(grep -c 'verify ok' /tmp/$name.out) 'verify ok', $(grep -c MISMATCH /tmp/$name.out) MISMATCH; stderr: $(head -c 300 /tmp/$name.err | tr '\n' ' ')"
  return $rc
}

if has verify; then # --verify with nvJPEG alone, watched for a hang
  mkdir -p /tmp/v10 && cp $BIG/img001*.jpg /tmp/v10/
  watched 45 verify10 "$BIN" --verify --jpeg-decoder gpu /tmp/v10
  watched 45 verify10j1 "$BIN" -j 1 --verify --jpeg-decoder gpu /tmp/v10
fi

if has hist; then # device images held across calls by many workers: no deadlock
  watched 90 hist_gpu "$BIN" --json --histogram --backend gpu -j 16 $BIG
  watched 90 hist_nvjpeg "$BIN" --json --histogram --jpeg-decoder gpu $BIG
  watched 90 hist_cpu "$BIN" --json --histogram --backend cpu $BIG
  for n in hist_gpu hist_nvjpeg; do
    python3 - /tmp/hist_cpu.out /tmp/$n.out <<'PY' | sed "s/^/hist: $n: /" | tee -a "$L"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
exact = sum(1 for x, y in zip(a, b) if x["stats"] == y["stats"])
dm = max((abs(p["mean"] - q["mean"]) for x, y in zip(a, b) for p, q in zip(x["stats"], y["stats"])), default=-1)
print(f"{len(b)} records (CPU {len(a)}); statistics and histograms identical to --backend cpu's: {exact}; largest |dmean| {dm:.4f}")
PY
  done
fi

if has startup; then # what a --jpeg-decoder gpu run pays before its first image
  nvcc -O2 -o /tmp/nvjpeg_startup bench/gpu/nvjpeg_startup.cu -lnvjpeg 2>&1 | tail -3
  for _ in 1 2; do /tmp/nvjpeg_startup | sed 's/^/startup: /' | tee -a "$L"; done
  python3 -c "import numpy as np, cv2; cv2.imwrite('/tmp/tiny.png', np.full((8, 8, 3), 7, np.uint8)); cv2.imwrite('/tmp/tiny.jpg', np.full((8, 8, 3), 7, np.uint8))"
  say "startup: imgstat --backend cpu tiny.png $(med3 "$BIN" --backend cpu /tmp/tiny.png) ms; --backend gpu tiny.png $(med3 "$BIN" --backend gpu /tmp/tiny.png) ms; --jpeg-decoder gpu tiny.jpg $(med3 "$BIN" --jpeg-decoder gpu /tmp/tiny.jpg) ms; --version $(med3 "$BIN" --version) ms"
fi

if has normalize; then
  rm -rf /tmp/imgstat-bench-jpeg-n && mkdir -p /tmp/imgstat-bench-jpeg-n
  ls $BIG/*.jpg | head -"$NN" | xargs -I{} ln -s {} /tmp/imgstat-bench-jpeg-n/
  BENCH_DIR=/tmp/imgstat-bench-jpeg-n timeout -k 5 300 bash bench/gpu/normalize.sh "$BIN" "$NN" 3 "${N_NPY:-20}" 2>&1 |
    grep -v '^ok' | sed 's/^/normalize: /' | tee -a "$L"
fi

# make_small: 1,000 generated 0.5 MP JPEGs (q90) in $SMALL
SMALL=/tmp/imgstat-bench-jpeg-small
make_small() {
  timeout -k 5 120 bash -c ". bench/lib.sh; bench_small_jpegs $SMALL 1000"
}

if has nvjpeg; then
  mkdir -p /tmp/v10 && cp $BIG/img001*.jpg /tmp/v10/
  watched 60 verify10 "$BIN" --verify --jpeg-decoder gpu /tmp/v10
  watched 120 verify200 "$BIN" --verify --jpeg-decoder gpu $BIG
  if watched 60 plain10 "$BIN" --json --jpeg-decoder gpu /tmp/v10; then
    make_small
    mkdir -p /tmp/s10 && cp $SMALL/s000*.jpg /tmp/s10/
    for set in "/tmp/v10 10 12MP" "$BIG 200 12MP" "/tmp/s10 10 0.5MP" "$SMALL 1000 0.5MP"; do
      read -r dir n label <<<"$set"
      cat $dir/* >/dev/null
      for args in "--jpeg-decoder cpu" "--jpeg-decoder gpu" "--jpeg-decoder gpu --jpeg-check markers"; do
        t=$(med3 "$BIN" --json $args $dir)
        say "nvjpeg: $label ($n) imgstat --json $args: $t ms, $(awk -v n=$n -v t=$t 'BEGIN{printf "%.1f", n*1000/t}') images/s"
      done
      t=$(med3 python3 bench/gpu/torch_jpeg_stats.py $dir)
      say "nvjpeg: $label ($n) torchvision decode_jpeg(cuda) + torch reductions: $t ms, $(awk -v n=$n -v t=$t 'BEGIN{printf "%.1f", n*1000/t}') images/s ($(python3 bench/gpu/torch_jpeg_stats.py $dir 2>&1 >/dev/null | tail -1))"
    done
  fi
fi
if has folders; then # --dataset and normalize on the folders, each decoder
  make_small
  for set in "$BIG 200 12MP" "$SMALL 1000 0.5MP"; do
    read -r dir n label <<<"$set"
    cat $dir/* >/dev/null
    for args in "--jpeg-decoder cpu" "--jpeg-decoder gpu"; do
      t=$(med3 "$BIN" --json --dataset-only $args $dir)
      say "folders: $label ($n) imgstat --dataset-only $args: $t ms, $(awk -v n=$n -v t=$t 'BEGIN{printf "%.1f", n*1000/t}') images/s"
    done
    t=$(for _ in 1 2 3; do rm -rf /tmp/npy-out; sync; ms_of "$BIN" normalize --depth 32 $dir -o /tmp/npy-out; done | median)
    say "folders: $label ($n) imgstat normalize --depth 32 (.npy, CPU decoders): $t ms, $(awk -v n=$n -v t=$t 'BEGIN{printf "%.1f", n*1000/t}') images/s, $(du -sm /tmp/npy-out | cut -f1) MB"
    rm -rf /tmp/npy-out
  done
fi
say "== done $(date -u '+%T')"
