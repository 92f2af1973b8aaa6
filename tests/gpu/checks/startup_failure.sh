#!/bin/bash
# Device start-up failures on the GPU machine: every way a device's start
# fails ends the run with that cause (exit 1, "OPTION needs a usable GPU:
# REASON" once per input), promptly: no run waits for a device lane that
# will never open. Each run is under `timeout` (a hang fails the check).
#
#   bash tests/gpu/checks/startup_failure.sh BUILD_DIR
#
# from the top of a checkout, on a machine with a usable GPU and nvJPEG;
# BUILD_DIR holds a CUDA build's imgstat (-DIMGSTAT_ENABLE_CUDA=ON). Checks:
#  1. no device visible (CUDA_VISIBLE_DEVICES empty): tests/cli/no_gpu_test.sh,
#     the cases CI runs on its machine without a driver (one JPEG, a
#     folder, -j 1, --dataset, --histogram, --devices all, standard input,
#     --backend gpu, normalize), also without libnvjpeg;
#  2. each step of the start-up made to fail (IMGSTAT_GPU_FAULT=start:POINT,
#     docs/gpu.md): the context, nvJPEG's handles, the device's decoder, its
#     state, and the first allocation (alloc:1): the same cases, the message
#     naming the injected fault;
#  3. a further lane's start failing mid-run (start:decoder:3, start:state:2
#     with 4 lanes and batches of one over 64 JPEGs): exit 1, every input
#     either a record or the failure, no hang;
#  4. the GPU's memory held by another process (tests/gpu/checks/hold_memory.cu,
#     built here with nvcc), leaving 0, 256 and 2048 MiB: each run ends, exit
#     0 with every record or 1 with each failed input's GPU message.
# Prints ok/FAIL lines and "startup_failure: N checks, M failed"; exit 0
# when none failed, 77 without a CUDA build or a usable GPU and nvJPEG, 1
# otherwise. STARTUP_FAILURE_TIMEOUT: seconds a run may take (default 120).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=${1:?usage: startup_failure.sh BUILD_DIR}
IMGSTAT=$(cd "$build" && pwd)/imgstat
. "$root/tests/support/lib.sh"
export PATH=$PATH:/usr/local/cuda/bin
limit=${STARTUP_FAILURE_TIMEOUT:-120}
jpg=$root/samples/testorig.jpg
png=$root/samples/camera.png

if ! "$IMGSTAT" --version 2>/dev/null | grep -q 'CUDA backend: yes'; then
  echo "startup_failure: skipped: $IMGSTAT is not a CUDA build"
  exit 77
fi
lib_tmpdir startup_failure
holder=
stop_holder() {
  if [ -n "$holder" ]; then
    exec 3>&-
    kill "$holder" 2>/dev/null
    wait "$holder" 2>/dev/null
    holder=
  fi
}
trap 'stop_holder; chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT

if ! timeout -k 5 "$limit" "$IMGSTAT" --jpeg-decoder gpu "$jpg" \
  >"$T/stdout" 2>"$T/stderr"; then
  echo "startup_failure: skipped: no usable GPU with nvJPEG here:"
  sed 's/^/  | /' "$T/stderr"
  exit 77
fi
lib_gone_setup

# ---- 1. no device visible ------------------------------------------------------
echo "== no device visible (CUDA_VISIBLE_DEVICES empty)"
CUDA_VISIBLE_DEVICES= NO_GPU_TEST_TIMEOUT=$limit \
  sh "$root/tests/cli/no_gpu_test.sh" "$IMGSTAT" "$root/samples" >"$T/no_gpu.log" 2>&1
rc=$?
sed 's/^/  /' "$T/no_gpu.log"
if [ "$rc" -eq 0 ]; then pass "no device visible: tests/cli/no_gpu_test.sh"; else
  fail "no device visible: tests/cli/no_gpu_test.sh exit $rc"; fi

# ---- 2. each step of the start-up injected -------------------------------------
for f in start:context start:handles start:decoder start:state alloc:1; do
  echo "== IMGSTAT_GPU_FAULT=$f"
  lib_gone_all "$f" "injected by IMGSTAT_GPU_FAULT=$f" IMGSTAT_GPU_FAULT=$f
done

# ---- 3. a further lane's start failing mid-run ---------------------------------
mkdir "$T/many"
for k in $(seq 1 64); do cp "$jpg" "$T/many/p$k.jpg"; done
# ended WHAT N COMMAND...: ends within the limit, exit 0 or 1; each of the
# N inputs is a record or a GPU failure, and exit 1 only with a failure.
ended() {
  what=$1 n=$2
  shift 2
  timeout -k 5 "$limit" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
  got=$?
  if [ "$got" -eq 124 ] || [ "$got" -eq 137 ]; then
    fail "$what: still running after ${limit}s (a hang)"
    sed 's/^/  | /' "$T/stderr"
    return 1
  fi
  records=$(grep -c '"file"' "$T/stdout")
  failed=$(grep -cE 'needs a usable GPU: |GPU failed: ' "$T/stderr")
  if { [ "$got" -ne 0 ] && [ "$got" -ne 1 ]; } ||
    [ $((records + failed)) -ne "$n" ] ||
    { [ "$got" -eq 1 ] && [ "$failed" -eq 0 ]; } ||
    { [ "$got" -eq 0 ] && [ "$failed" -ne 0 ]; }; then
    fail "$what: exit $got, $records records, $failed GPU failures of $n inputs"
    sed 's/^/  | /' "$T/stderr" | head -20
    return 1
  fi
  pass "$what: exit $got, $records records, $failed GPU failures"
  return 0
}
for f in start:decoder:3 start:state:2; do
  echo "== IMGSTAT_GPU_FAULT=$f, 4 lanes, batches of one"
  if ended "$f: a further lane" 64 env IMGSTAT_GPU_FAULT=$f \
    IMGSTAT_JPEG_LANES=4 IMGSTAT_JPEG_BATCH=1 \
    "$IMGSTAT" --json --jpeg-decoder gpu "$T/many"; then
    if grep -q "injected by IMGSTAT_GPU_FAULT=$f" "$T/stderr"; then
      pass "$f: the injected fault is the failure's cause"
    else
      fail "$f: no input failed with the injected fault (did a second lane open?)"
    fi
  fi
done

# ---- 4. memory held by another process -----------------------------------------
echo "== memory held elsewhere"
if ! command -v nvcc >/dev/null; then
  fail "memory held elsewhere: nvcc not found (PATH, /usr/local/cuda/bin)"
elif ! nvcc -o "$T/hold_memory" "$here/hold_memory.cu" >"$T/nvcc.log" 2>&1; then
  fail "memory held elsewhere: hold_memory.cu does not build"
  sed 's/^/  | /' "$T/nvcc.log"
else
  for leave in 0 256 2048; do
    rm -f "$T/hold.in" "$T/held"
    mkfifo "$T/hold.in"
    "$T/hold_memory" "$leave" "$T/held" <"$T/hold.in" &
    holder=$!
    exec 3>"$T/hold.in"
    for k in $(seq 1 600); do
      [ -s "$T/held" ] && break
      kill -0 "$holder" 2>/dev/null || break
      sleep 0.1
    done
    if [ ! -s "$T/held" ]; then
      fail "memory held, $leave MiB left: the holder did not start"
      stop_holder
      continue
    fi
    echo "  holder: $(cat "$T/held")"
    ended "held, $leave MiB left: --jpeg-decoder gpu, one JPEG" 1 \
      "$IMGSTAT" --json --jpeg-decoder gpu "$jpg"
    ended "held, $leave MiB left: --jpeg-decoder gpu, a folder" 64 \
      "$IMGSTAT" --json --jpeg-decoder gpu "$T/many"
    ended "held, $leave MiB left: --jpeg-decoder gpu, --dataset" 3 \
      "$IMGSTAT" --json --dataset --jpeg-decoder gpu "$T/dir"
    ended "held, $leave MiB left: --backend gpu, one JPEG" 1 \
      "$IMGSTAT" --json --backend gpu "$jpg"
    timeout -k 5 "$limit" "$IMGSTAT" normalize --backend gpu "$T/dir" \
      -o "$T/out" >"$T/stdout" 2>"$T/stderr" </dev/null
    got=$?
    if [ "$got" -eq 0 ] || { [ "$got" -eq 1 ] &&
      grep -qE 'needs a usable GPU: |GPU failed: ' "$T/stderr"; }; then
      pass "held, $leave MiB left: normalize --backend gpu: exit $got"
    else
      fail "held, $leave MiB left: normalize --backend gpu: exit $got"
      sed 's/^/  | /' "$T/stderr" | head -5
    fi
    rm -rf "$T/out"
    stop_holder
  done
fi

echo "startup_failure: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
