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
# host's check is tests/gpu/checks/startup_failure.sh).
# Usage: sh tests/cli/no_gpu_test.sh PATH/TO/imgstat SAMPLES_DIR
set -u

IMGSTAT=${1:?usage: no_gpu_test.sh IMGSTAT SAMPLES}
SAMPLES=${2:?usage: no_gpu_test.sh IMGSTAT SAMPLES}
. "$(dirname "$0")/../support/lib.sh"
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
  echo "no_gpu_test: skipped: a GPU is usable here (tests/gpu/checks/startup_failure.sh)"
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

lib_gone_setup

lib_gone_all "no usable GPU" "$reason" IMGSTAT_NO_GPU_TEST=1
# no device visible: the reason may differ (no driver comes first)
lib_gone_all "CUDA_VISIBLE_DEVICES empty" "" CUDA_VISIBLE_DEVICES=
# nvJPEG missing as well
lib_gone_all "no libnvjpeg" "" IMGSTAT_NVJPEG_LIBRARY=/nonexistent/libnvjpeg.so.13

echo "no_gpu_test: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
