#!/bin/bash
# Runs the libFuzzer targets as CI does, each for SECONDS (FUZZ_JOBS at once):
#
#   tests/fuzz/fuzz_ci.sh BUILD_DIR SECONDS [TARGET...]
#
# from the top of the repository, with BUILD_DIR configured with
# -DIMGSTAT_FUZZ=ON and its fuzz_all target built. The targets (all of them
# unless named) are fuzz_load (every format), fuzz_pipeline (histograms,
# normalization, writers), one per decoder (tests/fuzz/fuzz_load.c,
# tests/fuzz/fuzz_pipeline.c, docs/fuzzing.md) and fuzz_png_paths (the libdeflate
# PNG decoder against libpng, tests/fuzz/fuzz_png_paths.c), and fuzz_archive (archives
# read lazily and as a replayed list, tests/fuzz/fuzz_archive.c) where the build has
# libarchive. Every target gets the
# same seeds: tests/data (all of it: formats, pngsuite, the fuzzers'
# regression inputs, ...) and the files of samples/ under 64 KiB (fuzz_load:
# all of samples/); a decoder's target (fuzz_png_paths too) keeps only the
# files of its format. New inputs go to BUILD_DIR/fuzz-ci/TARGET/ (emptied
# first), a crashing input to
# BUILD_DIR/fuzz-ci/TARGET-crash-*. Every target runs even when one fails;
# the exit status is 1 if any failed.
#
# The runs are reproducible: with a fixed seed, no corpus reloads,
# address-space randomisation off and an empty environment, the same source
# makes the same inputs in the same order, wherever it is cloned. Comparison
# tracing is off (-use_cmp=0): it feeds compared values, addresses among
# them, into the mutations, and the addresses move with the clone's path,
# which ASan's metadata holds. So a CI failure can be replayed, and a run of
# N seconds covers every shorter one on a machine of the same speed: run it
# for several times CI's 20 seconds before a commit (docs/fuzzing.md).
# Exploratory fuzzing, with random seeds and comparison tracing, is done by
# hand.
set -euo pipefail
usage="usage: tests/fuzz/fuzz_ci.sh BUILD_DIR SECONDS [TARGET...]"
build=${1:?$usage}
seconds=${2:?$usage}
shift 2
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  targets=(fuzz_load fuzz_pipeline fuzz_png fuzz_jpeg fuzz_bmp fuzz_gif
    fuzz_psd fuzz_hdr fuzz_pnm fuzz_tga fuzz_tiff fuzz_fits fuzz_npy fuzz_pfm
    fuzz_webp fuzz_png_paths)
  # archives: where the build has libarchive
  if [ -x "$build/tests/fuzz_archive" ]; then targets+=(fuzz_archive); fi
fi
for t in "${targets[@]}"; do
  if [ ! -x "$build/tests/$t" ]; then
    echo "fuzz_ci.sh: $build/tests/$t not found: configure $build with -DIMGSTAT_FUZZ=ON and build the fuzz_all target" >&2
    exit 2
  fi
done

out="$build/fuzz-ci"
rm -rf "$out"
mkdir -p "$out/small-samples"
# The samples small enough to keep a target fast (the large photos make each
# of their mutations a large decode).
find samples -maxdepth 1 -type f -size -64k -exec cp {} "$out/small-samples/" \;

if setarch -R true 2>/dev/null; then
  norandom=(env -i PATH=/usr/bin:/bin setarch -R)
else
  echo "fuzz_ci.sh: setarch -R is not allowed here: these runs cannot be replayed exactly"
  norandom=()
fi
# FUZZ_JOBS targets at once (default 1; CI: 2, one a core); each writes its
# own log and status, printed in the targets' order when all are done.
run_one() {
  local t=$1 seeds=(tests/data "$out/small-samples") rc=0
  if [ "$t" = fuzz_load ]; then seeds=(samples tests/data); fi
  mkdir -p "$out/$t"
  "${norandom[@]}" "$build/tests/$t" -seed=20261122 -reload=0 -use_cmp=0 \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 \
    -print_final_stats=1 -artifact_prefix="$out/$t-" "$out/$t" "${seeds[@]}" \
    >"$out/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$out/$t.rc"
}
jobs_max=${FUZZ_JOBS:-1}
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  run_one "$t" &
done
wait
failed=()
for t in "${targets[@]}"; do
  printf '\n---- %s, %s s\n' "$t" "$seconds"
  cat "$out/$t.log"
  if [ "$(cat "$out/$t.rc" 2>/dev/null || echo 1)" -ne 0 ]; then failed+=("$t"); fi
done

# One line per target: how far it got (its last status line: inputs run,
# edges covered, corpus, executions per second).
printf '\n---- summary\n'
for t in "${targets[@]}"; do
  last=$(grep -E '^#[0-9]+' "$out/$t.log" | tail -n 1 | sed -E 's/[[:space:]]+/ /g') || true
  printf '%-14s %s\n' "$t" "${last:-no status line (see $out/$t.log)}"
done
if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz_ci.sh: failed: ${failed[*]} (inputs: $out/*-crash-*, $out/*-timeout-*, $out/*-oom-*)" >&2
  exit 1
fi
echo "fuzz_ci.sh: no finding (${targets[*]}: $seconds s each)"
