#!/bin/bash
# The short form of session_bench.sh for a small device budget: every step
# with its own time limit, each line appended to $OUT/s.log as it comes.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
L=${OUT:-/tmp}/s.log
say() { echo "$*" >>"$L"; }
export LD_LIBRARY_PATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PATH:/usr/local/cuda/bin
[ -f .deps/nvjpeg/include/nvjpeg.h ] && export NVJPEG_ROOT=$ROOT/.deps/nvjpeg
BD=build-nvjpeg
[ -d $BD ] || cmake -S . -B $BD -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WITH_NVJPEG=ON -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >/dev/null
timeout 200 cmake --build $BD -j16 >/dev/null 2>&1 || { say "build failed"; exit 1; }
BIN=$ROOT/$BD/imgstat
say "$("$BIN" --version | tr '\n' ' ')"
. tests/gpu/bench_lib.sh
BIG=/tmp/imgstat-bench-jpeg
timeout 90 bash -c ". tests/gpu/bench_lib.sh; bench_jpegs $BIG 200"
cat $BIG/* >/dev/null
say "$(ls $BIG | wc -l) JPEGs of 12 MP, $(du -sm $BIG | cut -f1) MB; $(nproc) cores"
mkdir -p /tmp/v20 && cp $BIG/img001*.jpg /tmp/v20/
s=$(date +%s%N)
timeout 30 "$BIN" --verify --jpeg-decoder gpu -q --json /tmp/v20 >/dev/null 2>/tmp/v20.err
rc=$?
say "--verify --jpeg-decoder gpu, 10 photos: exit $rc in $((($(date +%s%N) - s) / 1000000)) ms, $(grep -c 'verify ok' /tmp/v20.err) ok, $(grep -c MISMATCH /tmp/v20.err) mismatch; $(head -c 300 /tmp/v20.err | tr '\n' ' ')"
one() { # LABEL ARGS...: one whole-process run, limit 40 s
  local label=$1
  shift
  local s=$(date +%s%N)
  timeout 40 "$BIN" "$@" >/dev/null 2>/tmp/one.err
  local rc=$? ms=$((($(date +%s%N) - s) / 1000000))
  say "$label: exit $rc, $ms ms, $(awk -v ms=$ms 'BEGIN{printf "%.1f", 200000/ms}') images/s $(head -c 200 /tmp/one.err | tr '\n' ' ')"
}
for r in 1 2 3; do
  one "run $r auto" --json $BIG
  one "run $r --jpeg-decoder gpu" --json --jpeg-decoder gpu $BIG
  one "run $r --jpeg-decoder gpu --jpeg-check markers" --json --jpeg-decoder gpu --jpeg-check markers $BIG
  one "run $r --backend cpu" --json --backend cpu $BIG
  one "run $r --backend cpu --dataset" --json --backend cpu --dataset $BIG
  one "run $r --jpeg-decoder gpu --dataset" --json --jpeg-decoder gpu --dataset $BIG
done
f=$(ls $BIG/*.jpg | head -1)
for r in $(seq 11); do
  for a in cpu auto; do
    s=$(date +%s%N); "$BIN" --backend $a "$f" >/dev/null; e=$(date +%s%N)
    echo "$a $(((e - s) / 100000))"
  done
done | awk '{v[$1]=v[$1]" "$2} END{for (k in v) print k, v[k]}' >>"$L"
say "(one photo: tenths of ms per run, cpu and auto interleaved)"
say done
