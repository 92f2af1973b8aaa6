#!/bin/bash
# The canonical float order on the GPU host (docs/float-order.md), in one
# device call of about 4 minutes:
#   1. build the CUDA configuration (-Werror);
#   2. test_gpu (every GPU partial = the CPU backend's, to the bit, float
#      included) and test_float_order (the CPU against the slow reference);
#   3. compute-sanitizer memcheck of test_gpu's float-order test;
#   4. the command line: --backend gpu against --backend cpu, with and
#      without --histogram (and --devices all when there are 2+ GPUs, and
#      two MPI ranks on the GPU against one process on the CPU), on
#      every float image of the corpus, tests/data and samples, and on
#      generated .npy float32 RGBA images (n = 1024, 4096, 8192, NaN and Inf
#      sprinkled): JSON records compared byte for byte apart from the
#      backend fields; prints the counts of identical records;
#   5. the fused kernel against CUB's Sum (bench/gpu/fast_timing.cu: CUDA
#      events after warm-up, 64 MP planes; the RGBf32 row is the goal's,
#      <= 1.10);
#   6. the CPU float path: bench_cpu's RGBf32 rows (12 MP), and, when
#      IMGSTAT_OLD_SRC names a checkout of the tree before this change
#      (carried along: e.g. `git archive main | tar -x -C .old`), the same
#      benchmark built from it, run interleaved: old / new per thread count.
# Expects .deps (CUnit, stb; ../shared/gpu-host/bundle-deps.sh) and, for the
# corpus, .corpus, both carried to the GPU machine. Ends with a PASS/FAIL
# table; logs and $OUT/summary.txt in $OUT.
set -u
cd "$(dirname "$0")/../../.."
. tests/support/lib.sh
lib_gpu_prelude
B=$ROOT/build-floatorder
T0=$(date +%s)
declare -a RESULTS=()
result() { RESULTS+=("$(printf '%-44s %s' "$1" "$2")"); }

say "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
timeout 240 cmake -S . -B "$B" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WERROR=ON \
  -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/build.log" 2>&1 &&
  timeout 240 cmake --build "$B" -j16 --target imgstat test_gpu test_float_order bench_cpu \
    >>"$OUT/build.log" 2>&1
rc=$?
say "== build rc=$rc ($(($(date +%s) - T0)) s)"
if [ $rc -ne 0 ]; then
  grep -E "error" "$OUT/build.log" | head -20 | tee -a "$SUMMARY"
  echo "FAIL build"
  exit 1
fi
result build PASS

# ---- 2. the tests ----
timeout 200 "$B/tests/test_gpu" >"$OUT/test_gpu.log" 2>&1
rc=$?
grep -E "^device|Test:.*(FAILED)|MISMATCH|float runs|asserts|tests |worst|skipped" \
  "$OUT/test_gpu.log" | head -30 | tee -a "$SUMMARY"
result "test_gpu (GPU = CPU to the bit)" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")"
timeout 60 "$B/tests/test_float_order" >"$OUT/test_float_order.log" 2>&1
rc=$?
grep -E "worst|asserts" "$OUT/test_float_order.log" | tee -a "$SUMMARY"
result "test_float_order (CPU = slow reference)" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")"

# ---- 3. memcheck of the float-order test ----
IMGSTAT_TEST_QUICK=1 IMGSTAT_TEST_ONLY="float order" timeout 150 \
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 \
  "$B/tests/test_gpu" >"$OUT/memcheck.log" 2>&1
rc=$?
say "== memcheck rc=$rc: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
result "memcheck (float order, quick)" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")"

# ---- 4. records: --backend gpu = --backend cpu ----
gen=$B/npy_gen
cat >"$gen.c" <<'C'
/* n x n x 4 float32 .npy: normal-ish x 100, NaN / +Inf / -Inf sprinkled. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  unsigned long n = strtoul(argv[1], 0, 10);
  FILE *f = fopen(argv[2], "wb");
  char h[128];
  int len = snprintf(h, sizeof h,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (%lu, %lu, 4), }",
                     n, n);
  int total = 10 + len + 1, pad = (64 - total % 64) % 64;
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  uint16_t hl = (uint16_t)(len + pad + 1);
  fwrite(&hl, 2, 1, f);
  fwrite(h, 1, (size_t)len, f);
  for (int i = 0; i < pad; i++)
    fputc(' ', f);
  fputc('\n', f);
  uint64_t s = 88172645463325252ull ^ n;
  float row[4096];
  for (unsigned long i = 0; i < n * n * 4; i += 4096) {
    for (int k = 0; k < 4096; k++) {
      double g = 0;
      for (int j = 0; j < 4; j++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        g += (double)(s >> 11) / 9007199254740992.0;
      }
      row[k] = (float)((g - 2.0) * 173.2);
      if (s % 100003 == 0)
        row[k] = (s >> 20) % 3 == 0 ? NAN : (s >> 20) % 3 == 1 ? INFINITY : -INFINITY;
    }
    fwrite(row, 4, 4096, f);
  }
  return fclose(f) != 0;
}
C
sed -i '1i #include <math.h>' "$gen.c"
cc -O2 -o "$gen" "$gen.c" -lm >>"$OUT/build.log" 2>&1 || say "npy generator: build failed"
gendir=$B/npy
mkdir -p "$gendir"
for n in 1024 4096 8192; do
  [ -s "$gendir/rgba_$n.npy" ] || timeout 60 "$gen" $n "$gendir/rgba_$n.npy"
done
cands=()
for f in "$ROOT"/.corpus/hdr/* "$ROOT"/tests/data/*/*.{hdr,pfm,fits,fit,npy,tif,tiff} \
  "$ROOT"/samples/*.hdr "$gendir"/*.npy; do
  [ -f "$f" ] && cands+=("$f")
done
# the float ones: depth 32 in the CPU's records
floats=()
while IFS= read -r f; do floats+=("$f"); done < <(
  "$B/imgstat" --json --backend cpu "${cands[@]}" 2>/dev/null |
    python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r.get("depth") == 32:
        print(r["file"])')
say "== ${#floats[@]} float images (of ${#cands[@]} candidates)"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
variants=("" "--histogram")
[ "$ngpu" -gt 1 ] && variants+=("--devices all" "--devices all --histogram")
# --mpi: two ranks on the GPU against one process on the CPU (when the build
# has MPI and mpirun is here)
if command -v mpirun >/dev/null 2>&1 &&
  ! timeout 60 mpirun --allow-run-as-root -np 1 "$B/imgstat" --mpi --json \
    /nonexistent 2>&1 | grep -q "without MPI"; then
  variants+=("mpi2" "mpi2 --histogram")
else
  say "== --mpi not compared: no mpirun, or a build without MPI"
fi
all_same=1
for v in "${variants[@]}"; do
  run=("$B/imgstat")
  case $v in mpi2*)
    run=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$B/imgstat" --mpi)
    v=${v#mpi2} ;;
  esac
  # shellcheck disable=SC2086
  timeout 120 "$B/imgstat" --json --backend cpu $v "${floats[@]}" >"$OUT/cpu.jsonl" 2>"$OUT/cpu.err"
  # shellcheck disable=SC2086
  timeout 120 "${run[@]}" --json --backend gpu $v "${floats[@]}" >"$OUT/gpu.jsonl" 2>"$OUT/gpu.err"
  [ "${run[0]}" = mpirun ] && v="--mpi (2 ranks)${v:+ $v}"
  line=$(python3 - "$OUT/cpu.jsonl" "$OUT/gpu.jsonl" <<'PY'
import json, re, sys
def norm(l):
    # the backend fields name the backend; everything else must match
    return re.sub(r'"(hist_)?backend":"[a-z]+"', '"backend":""', l.rstrip("\n"))
cpu = open(sys.argv[1]).readlines()
gpu = open(sys.argv[2]).readlines()
same = sum(1 for a, b in zip(cpu, gpu) if norm(a) == norm(b))
gpu_ran = sum(1 for b in gpu if '"backend":"gpu"' in b)
diff = [(json.loads(a)["file"], a, b) for a, b in zip(cpu, gpu) if norm(a) != norm(b)]
for f, a, b in diff[:3]:
    print("DIFF", f, file=sys.stderr)
print(f"{same} of {len(cpu)} records identical (gpu records {len(gpu)}, on the GPU {gpu_ran})")
sys.exit(0 if same == len(cpu) == len(gpu) and gpu_ran == len(gpu) else 1)
PY
  )
  rc=$?
  say "== records ${v:-(plain)}: $line"
  [ $rc -eq 0 ] || all_same=0
  result "records gpu = cpu ${v:-(plain)}" "$([ $rc -eq 0 ] && echo PASS || echo FAIL) $line"
done

# ---- 5. the fused kernel against CUB ----
t0=$(date +%s)
: >"$OUT/timing.log"
lib_fast_timing "$B" "$OUT/timing.log"
say "== timing rc=$? ($(($(date +%s) - t0)) s)"
tail -6 "$OUT/timing.log" | tee -a "$SUMMARY"
ratio=$(awk '$1 == "RGBf32" {print $5}' "$OUT/timing.log" | tail -1)
if [ -n "$ratio" ] && awk -v r="$ratio" 'BEGIN {exit !(r <= 1.10)}'; then
  result "fused RGBf32 / CUB Sum <= 1.10" "PASS $ratio"
else
  result "fused RGBf32 / CUB Sum <= 1.10" "FAIL ${ratio:-none}"
fi

# ---- 6. the CPU float path, old against new ----
cpu_rows() { grep -E "RGBf32" | sed 's/^/    /'; }
old_bench=""
if [ -n "${IMGSTAT_OLD_SRC:-}" ] && [ -d "$IMGSTAT_OLD_SRC" ]; then
  timeout 200 cmake -S "$IMGSTAT_OLD_SRC" -B "$B-old" -DIMGSTAT_ENABLE_CUDA=OFF \
    -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$OUT/build-old.log" 2>&1 &&
    timeout 200 cmake --build "$B-old" -j16 --target bench_cpu >>"$OUT/build-old.log" 2>&1 &&
    old_bench=$B-old/bench/bench_cpu
# (a tree from before bench/ built it under tests/)
[ -n "$old_bench" ] && [ ! -x "$old_bench" ] && old_bench=$B-old/tests/bench_cpu
fi
for round in 1 2 3; do
  if [ -n "$old_bench" ]; then
    say "   round $round old:"
    timeout 60 "$old_bench" 7 2>&1 | cpu_rows | tee -a "$SUMMARY"
  fi
  say "   round $round new:"
  timeout 60 "$B/bench/bench_cpu" 7 2>&1 | cpu_rows | tee -a "$SUMMARY"
  [ -n "$old_bench" ] || break
done
result "CPU float timing (compare rows above)" "$([ -n "$old_bench" ] && echo "old vs new" || echo "new only")"

say "== total $(($(date +%s) - T0)) s"
say ""
for r in "${RESULTS[@]}"; do say "$r"; done
case " ${RESULTS[*]} " in *FAIL*) exit 1 ;; esac
exit 0
