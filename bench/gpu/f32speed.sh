#!/bin/bash
# The f32 fused kernel's speed, without a result bit changed (about 2-3
# minutes on the GPU machine):
#   1. build test_gpu and test_float_order (CUDA configuration, -Werror);
#   2. test_gpu's float-order test (GPU = CPU to the bit, NaN/Inf, partial
#      tiles, many chunks), then the whole test_gpu, then test_float_order;
#   3. bench/gpu/fast_timing.cu linked against variants of cuda/fast.cu
#      (IMGSTAT_F32_PREFETCH, IMGSTAT_F32_FINITE_TILES), run interleaved,
#      two rounds; prints each variant's RGBf32 ratio (fused / CUB Sum):
#        P0F0  the kernel as before this change (loads then reduce, the
#              per-sample branches);
#        P0F1  + whole finite tiles reduced branch-free (the default: the
#              fastest on the H100, 1.077 against main's 1.183);
#        P1F1  + the next chunk's first tile loaded before the lane tree;
#        P2F1  + every tile loaded while the one before is reduced;
#        main  cuda/fast.cu of IMGSTAT_OLD_SRC when given (a checkout of
#              main carried along, e.g. `git archive main | tar -x -C .old`).
# Expects .deps (../shared/gpu-host/bundle-deps.sh). Ends with a PASS/FAIL
# table; logs in $OUT.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
B=$ROOT/build-f32speed
T0=$(date +%s)
declare -a RESULTS=()
result() { RESULTS+=("$(printf '%-44s %s' "$1" "$2")"); }

say "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
timeout 150 cmake -S . -B "$B" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WERROR=ON \
  -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/build.log" 2>&1 &&
  timeout 150 cmake --build "$B" -j16 --target test_gpu test_float_order \
    >>"$OUT/build.log" 2>&1
rc=$?
say "== build rc=$rc ($(($(date +%s) - T0)) s)"
if [ $rc -ne 0 ]; then
  grep -E "error" "$OUT/build.log" | head -20 | tee -a "$SUMMARY"
  echo "FAIL build"
  exit 1
fi
result build PASS

# ---- 3a. the timing variants, built in the background meanwhile ----
V=$B/f32var
mkdir -p "$V"
nv() { nvcc -std=c++17 -O3 -arch=sm_90 -Xcompiler=-ffp-contract=off \
  --expt-relaxed-constexpr -DIMGSTAT_HAVE_CUDA=1 "$@"; }
(
  nv -Iinclude -Isrc -Isrc/core -Icuda -c bench/gpu/fast_timing.cu -o "$V/timing.o" &
  for v in "0 0" "0 1" "1 1" "2 1"; do
    set -- $v
    nv -Iinclude -Isrc -Isrc/core -Icuda -DIMGSTAT_F32_PREFETCH=$1 \
      -DIMGSTAT_F32_FINITE_TILES=$2 -c cuda/fast.cu -o "$V/P$1F$2.o" &
  done
  if [ -n "${IMGSTAT_OLD_SRC:-}" ] && [ -f "$IMGSTAT_OLD_SRC/cuda/fast.cu" ]; then
    O=$IMGSTAT_OLD_SRC
    nv -I"$O/include" -I"$O/src" -I"$O/src/core" -I"$O/cuda" -c "$O/cuda/fast.cu" -o "$V/main.o" &
  fi
  wait
  for o in "$V"/P*.o "$V"/main.o; do
    [ -f "$o" ] || continue
    # the variant's fast.cu first: the library's is not pulled in
    nvcc -arch=sm_90 "$V/timing.o" "$o" "$B/libimgstat.a" \
      -L"$ROOT/.deps/usr/lib/x86_64-linux-gnu" -lpng -lm \
      $(grep -q "TurboJPEG: ON" "$OUT/build.log" && echo -lturbojpeg) \
      -o "${o%.o}"
  done
) >"$OUT/variants.log" 2>&1 &
vpid=$!

# ---- 2. the tests ----
IMGSTAT_TEST_ONLY="float order" timeout 60 "$B/tests/test_gpu" \
  >"$OUT/test_gpu_fo.log" 2>&1
rc=$?
grep -E "^device|FAILED|MISMATCH|asserts|tests " "$OUT/test_gpu_fo.log" | head -10 |
  tee -a "$SUMMARY"
result "test_gpu float order (GPU = CPU, bits)" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")"
timeout 150 "$B/tests/test_gpu" >"$OUT/test_gpu.log" 2>&1
rc=$?
grep -E "Test:.*(FAILED)|MISMATCH|asserts|tests |skipped" "$OUT/test_gpu.log" |
  head -20 | tee -a "$SUMMARY"
result "test_gpu (all)" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")"
timeout 60 "$B/tests/test_float_order" >"$OUT/test_float_order.log" 2>&1
rc=$?
grep -E "worst|asserts" "$OUT/test_float_order.log" | tee -a "$SUMMARY"
result "test_float_order (CPU = slow reference)" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")"

# ---- 3b. the timings, interleaved ----
timeout 200 tail --pid=$vpid -f /dev/null
vars=()
for v in main P0F0 P0F1 P1F1 P2F1; do
  [ -x "$V/$v" ] && vars+=("$v")
done
say "== variants built: ${vars[*]:-none} ($(($(date +%s) - T0)) s)"
[ ${#vars[@]} -gt 0 ] || tail -20 "$OUT/variants.log" | tee -a "$SUMMARY"
: >"$OUT/timing.log"
for round in 1 2; do
  for v in "${vars[@]}"; do
    timeout 60 "$V/$v" "$v" >"$OUT/t_$v.$round.log" 2>&1
    cat "$OUT/t_$v.$round.log" >>"$OUT/timing.log"
    r=$(awk '$1 == "RGBf32" {print $2, $4, $5}' "$OUT/t_$v.$round.log")
    say "   round $round $(printf '%-5s' "$v") RGBf32 fused / cub / ratio: ${r:-none}"
  done
done
for v in "${vars[@]}"; do
  best=$(awk '$1 == "RGBf32" {print $5}' "$OUT"/t_"$v".*.log | sort -n | head -1)
  result "RGBf32 ratio $v (best of 2; goal <= 1.10)" "${best:-none}"
done

say "== total $(($(date +%s) - T0)) s"
say ""
for r in "${RESULTS[@]}"; do say "$r"; done
case " ${RESULTS[*]} " in *FAIL*) exit 1 ;; esac
exit 0
