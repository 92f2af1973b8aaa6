#!/bin/bash
# Runs the libFuzzer target (tests/fuzz_load.c) as CI does, for SECONDS:
#
#   tests/fuzz_ci.sh BUILD_DIR SECONDS
#
# from the top of the repository, with BUILD_DIR configured with
# -DIMGSTAT_FUZZ=ON. The seeds are samples/ and tests/data/{pngsuite,formats,
# fuzz}; new inputs go to BUILD_DIR/corpus (emptied first), a crashing input
# to BUILD_DIR/crash-*.
#
# The run is reproducible: with a fixed seed, no corpus reloads, address-space
# randomisation off and an empty environment, the same source makes the same
# inputs in the same order, wherever it is cloned. Comparison tracing is off
# (-use_cmp=0): it feeds compared values, addresses among them, into the
# mutations, and the addresses move with the clone's path, which ASan's
# metadata holds. So a CI failure can be replayed, and a run of N seconds
# covers every shorter one on a machine of the same speed: run it for several
# times CI's 60 seconds before a commit (docs/fuzzing.md). Exploratory
# fuzzing, with random seeds and comparison tracing, is done by hand.
set -euo pipefail
build=${1:?usage: tests/fuzz_ci.sh BUILD_DIR SECONDS}
seconds=${2:?usage: tests/fuzz_ci.sh BUILD_DIR SECONDS}
seeds=(samples)
for d in tests/data/pngsuite tests/data/formats tests/data/fuzz; do
  if [ -d "$d" ]; then seeds+=("$d"); fi
done
if [ ! -x "$build/tests/fuzz_load" ]; then
  echo "fuzz_ci.sh: $build/tests/fuzz_load not found: configure $build with -DIMGSTAT_FUZZ=ON and build the fuzz_load target" >&2
  exit 2
fi
rm -rf "$build/corpus"
mkdir -p "$build/corpus"
fuzz=("$build/tests/fuzz_load" -seed=20261122 -reload=0 -use_cmp=0
  -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30
  -print_final_stats=1 -artifact_prefix="$build/" "$build/corpus" "${seeds[@]}")
if setarch -R true 2>/dev/null; then
  exec env -i PATH=/usr/bin:/bin setarch -R "${fuzz[@]}"
fi
echo "fuzz_ci.sh: setarch -R is not allowed here: this run cannot be replayed exactly"
exec "${fuzz[@]}"
