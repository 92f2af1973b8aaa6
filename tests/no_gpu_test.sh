#!/bin/sh
# The GPU options in a CUDA build on a machine where the GPU cannot start
# (the toolkit without a driver, no device, CUDA_VISIBLE_DEVICES empty,
# nvJPEG missing): every input fails with the start-up's reason, "OPTION
# needs a usable GPU: REASON" (the reason --backend gpu gives), exit 1, and
# the run ends: a start-up failure never leaves the run waiting for a
# device lane that will not open. JPEGs under --jpeg-decoder gpu take the
# device stage (one file, several, a folder, -j 1, --dataset, --histogram,
# --devices all, standard input); normalize has no --jpeg-decoder and is
# run with --backend gpu. Every run is under `timeout`, so that a hang
# fails the test rather than the CI job.
# Skips (77) in a build without CUDA or where a GPU is usable (the GPU
# host's check is tests/gpu/startup_failure.sh).
# Usage: sh tests/no_gpu_test.sh PATH/TO/imgstat SAMPLES_DIR
set -u

IMGSTAT=${1:?usage: no_gpu_test.sh IMGSTAT SAMPLES}
SAMPLES=${2:?usage: no_gpu_test.sh IMGSTAT SAMPLES}
. "$(dirname "$0")/lib.sh"
# seconds a run may take (start-up without a driver: well under one)
limit=${NO_GPU_TEST_TIMEOUT:-60}

if ! "$IMGSTAT" --version 2>/dev/null | grep -q 'CUDA backend: yes'; then
  echo "no_gpu_test: skipped: not a CUDA build"
  exit 77
fi
lib_tmpdir no_gpu_test
jpg=$SAMPLES/testorig.jpg
png=$SAMPLES/camera.png

# the reason --backend gpu gives here; none (exit 0): a usable GPU
timeout -k 5 "$limit" "$IMGSTAT" --backend gpu "$png" >"$T/stdout" 2>"$T/stderr"
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "no_gpu_test: skipped: a GPU is usable here (tests/gpu/startup_failure.sh)"
  exit 77
fi
reason=$(sed -n 's/.*--backend gpu needs a usable GPU: //p' "$T/stderr" | head -1)
if [ "$rc" -ne 1 ] || [ -z "$reason" ]; then
  fail "--backend gpu without a usable GPU: exit $rc, expected 1 and the reason"
  sed 's/^/  | /' "$T/stderr"
  echo "no_gpu_test: $checks checks, $failures failed"
  exit 1
fi
echo "no usable GPU: $reason"

mkdir "$T/dir" "$T/mixed"
for k in 1 2 3; do cp "$jpg" "$T/dir/p$k.jpg"; done
cp "$jpg" "$T/mixed/a.jpg"
cp "$png" "$T/mixed/b.png"

# gone WHAT N OPTION REASON COMMAND...: the command, under timeout, exits 1
# with N lines "OPTION needs a usable GPU: REASON" on stderr (REASON "":
# any reason) and no record on stdout.
gone() {
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
  lines=$(grep -cF -- "$opt needs a usable GPU: $why" "$T/stderr")
  if [ "$lines" -ne "$n" ]; then
    fail "$what: $lines lines '$opt needs a usable GPU: $why', expected $n"
    sed 's/^/  | /' "$T/stderr"
    return
  fi
  if grep -q '"file"' "$T/stdout"; then
    fail "$what: a record for an input that failed"
    return
  fi
  pass "$what"
}

# gone_all ENV...: the cases under the environment given (VAR=VALUE ...)
gone_all() {
  label=$1
  why=$2
  shift 2
  gone "$label: one JPEG" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --jpeg-decoder gpu "$jpg"
  gone "$label: one JPEG, --json, -j 1" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --json -j 1 --jpeg-decoder gpu "$jpg"
  gone "$label: one JPEG, --histogram" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --histogram --jpeg-decoder gpu "$jpg"
  gone "$label: one JPEG, --devices all" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --devices all --jpeg-decoder gpu "$jpg"
  gone "$label: two JPEGs" 2 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --json --jpeg-decoder gpu "$jpg" "$T/dir/p1.jpg"
  gone "$label: a folder of JPEGs" 3 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --json --jpeg-decoder gpu "$T/dir"
  gone "$label: a folder of JPEGs, -j 1" 3 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" -j 1 --jpeg-decoder gpu "$T/dir"
  gone "$label: a JPEG and a PNG" 2 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --jpeg-decoder gpu "$T/mixed"
  gone "$label: --dataset, a folder of JPEGs" 3 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --json --dataset --jpeg-decoder gpu "$T/dir"
  gone "$label: --dataset, one JPEG" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" "$IMGSTAT" --dataset --jpeg-decoder gpu "$jpg"
  gone "$label: a JPEG on standard input" 1 "--jpeg-decoder gpu" "$why" \
    env "$@" sh -c '"$0" --jpeg-decoder gpu - <"$1"' "$IMGSTAT" "$jpg"
  gone "$label: --backend gpu, one JPEG" 1 "--backend gpu" "$why" \
    env "$@" "$IMGSTAT" --backend gpu "$jpg"
  gone "$label: normalize --backend gpu, one JPEG" 1 "--backend gpu" "$why" \
    env "$@" "$IMGSTAT" normalize --backend gpu "$jpg" -o "$T/one.png"
  gone "$label: normalize --backend gpu, a folder" 1 "--backend gpu" "$why" \
    env "$@" "$IMGSTAT" normalize --backend gpu "$T/dir" -o "$T/out"
  if [ -e "$T/one.png" ] || [ -n "$(ls -A "$T/out" 2>/dev/null)" ]; then
    fail "$label: normalize wrote an output without a GPU"
  fi
  rm -rf "$T/out" "$T/one.png"
}

gone_all "no usable GPU" "$reason" IMGSTAT_NO_GPU_TEST=1
# no device visible: the reason may differ (no driver comes first)
gone_all "CUDA_VISIBLE_DEVICES empty" "" CUDA_VISIBLE_DEVICES=
# nvJPEG missing as well
gone_all "no libnvjpeg" "" IMGSTAT_NVJPEG_LIBRARY=/nonexistent/libnvjpeg.so.13

echo "no_gpu_test: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
