#!/bin/bash
# GPU fault injection, end to end (docs/gpu.md, "Fault injection").
#
#   tests/gpu/checks/fault_test.sh [--quick] [PATH/TO/imgstat]
#
# For every N from 1 until past the last allocation or launch of the run, it
# runs imgstat with IMGSTAT_GPU_FAULT=N on a few sample images, for the
# statistics, --histogram, `normalize` (minmax) and `normalize clip 1,99`,
# under --backend auto and --backend gpu, and checks:
#   auto: exit 0, at most one line on stderr (none when N is past the run or
#         the fault was absorbed), naming the input (or the start-up) and the
#         injected error; every record equal to the fault-free run of the
#         backend it names, the input hit on the CPU, all others on the GPU;
#   gpu:  the input hit fails alone (exit 1, "imgstat: FILE: GPU failed: ...",
#         no record or file for it), every other input equal to the
#         fault-free GPU run; a fault in the start-up fails every input;
#   both: the same N hits the same input under auto and gpu; every input and
#         the start-up were hit by some N; both allocation and launch faults
#         were hit.
# Then compute-sanitizer memcheck --leak-check full on a few N: 0 errors
# (after it has shown that it reports tests/gpu/checks/leak_probe.cu's leak).
# --quick (ctest): the statistics and `normalize` only, without
# compute-sanitizer (verify_all.sh runs the full set: a few minutes).
# Prints what each N hit and "fault_test: N passed, M failed"; exit 0 when
# none failed, 77 (skip) without a CUDA build or device, 1 otherwise.
# Logs: $OUT/fault_test/ (without OUT: a new folder /tmp/imgstat-fault-test-*).
# FAULT_TEST_JOBS: parallel runs (default: up to 8, by CPU count).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
bin=${1:-}
if [ -z "$bin" ]; then
  for b in build-verify build-device build; do
    if [ -x "$root/$b/imgstat" ]; then
      bin=$root/$b/imgstat
      break
    fi
  done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "fault_test: no imgstat program found: give its path ($0 [--quick] PATH/imgstat)"
  echo "fault_test: 0 passed, 1 failed"
  exit 1
fi
if ! command -v python3 >/dev/null; then
  echo "fault_test: python3 is needed"
  echo "fault_test: 0 passed, 1 failed"
  exit 1
fi
export PATH=$PATH:/usr/local/cuda/bin
exec python3 "$here/fault_test.py" "$root" "$bin" "$quick"
