#!/bin/bash
# The fused statistics kernels at the memory roof, against CUB (about 5-7
# minutes on the GPU machine, the build included):
#   1. the CUDA build (-Werror; sm_90 + PTX as the project builds): the
#      library, test_gpu, test_gpu_batch and the CLI;
#   2. identity of the tree's kernels: test_gpu (GPU partials = the CPU's,
#      integers exact, floats to the bit, 637 float planes, the interleaved
#      images), test_gpu_batch, and, with the corpus carried (.corpus), the
#      records of --backend gpu = --backend cpu and `imgstat --verify`;
#   3. meanwhile, bench/gpu/kernel_roof.cu linked against variants of
#      cuda/fast.cu (timing-only objects built with -D flags; the library's
#      own fast.cu object is left out of the link), each variant one
#      process, timed in turns with CUB (cub::DeviceReduce::Sum of the
#      same bytes as uint32 words; cub::DeviceSegmentedReduce::Sum of the
#      same segments), variants interleaved, ROOF_ROUNDS rounds (default
#      5); after the second round every variant's --check (every partial
#      of 64 MP images and of small awkward ones, planar, interleaved and
#      batched, equal to the CPU's);
#   4. a table of fused / CUB per type x layout and the batches, each
#      variant's median over the rounds (range in brackets), against the
#      goal (<= 1.03).
# Variants (ROOF_VARIANTS to pick some; each is a set of -D flags, every
# macro at most once):
#   main   main's kernels: every switch below off (interleaved float32 is
#          read in place by every variant: the row
#          "RGBf32-interleaved-gathered" is main's path for it);
#   tree   the tree's defaults (no flags): the integer planes' block merge
#          on integers (IMGSTAT_FAST_INT_MERGE), programmatic dependent
#          launch of the folds and of f32 pass 1 (IMGSTAT_FAST_PDL), the
#          folds of integer partials on integers (IMGSTAT_FOLD_INT), u16
#          interleaved merge on integers with first positions once a block
#          (IMGSTAT_HWC_BLOCK_FIRST), grids of whole rounds
#          (IMGSTAT_FAST_BALANCE), f32 first positions once a block
#          (IMGSTAT_F32_BLOCK_FIRST), batched planes at least 16 tiles a
#          block (IMGSTAT_SEG_TILES=64; 16 before), the one-image integer
#          plane kernel at 4 blocks a multiprocessor
#          (IMGSTAT_FAST_PLANE_BLOCKS_PER_SM; 3 before, the batch's still
#          IMGSTAT_FAST_BLOCKS_PER_SM=3), the u8 interleaved kernel for C = 3
#          at 3 (IMGSTAT_HWC3_BLOCKS_PER_SM; 2 before, C = 2 and 4 at 2),
#          batched planes of one block each written as the planes' partials
#          without the fold's launch (IMGSTAT_SEG_DIRECT),
#          planar f32 on the lean kernel
#          (IMGSTAT_F32_LEAN) at 4 blocks a multiprocessor
#          (IMGSTAT_F32_BLOCKS_PER_SM=4: 64 registers; the unaligned
#          planes' kernel, four 4-byte loads a vector, 16 bytes of spill),
#          interleaved f32's strided kernel not lean, at 3 blocks a
#          multiprocessor (IMGSTAT_F32_STRIDED_LEAN=0,
#          IMGSTAT_F32_STRIDED_BLOCKS_PER_SM=3: 80 registers), u8 / u16
#          extremes of a tile from its vectors' (units') lanes first, a
#          vector's own decoded only when the tile betters the running
#          extreme (IMGSTAT_FAST_LAZY_FIRST=1: the planes and u8 by
#          units), u8 extremes in the lanes' high bytes, one shift a word
#          (IMGSTAT_U8_HIGH_EXTREMES);
#   prevx  tree with the last two off (every vector decoded every tile,
#          u8 extremes by mask and permute: 02c9fa9's kernels);
#   Zl, Zh  tree with only the lazy decode / only the high bytes;
#   Z4     tree with four-channel u8 at 4 units a thread a tile
#          (IMGSTAT_HWC4_UNITS; three channels keep 2);
#   Z3b4   tree with three-channel u8 at 4 blocks a multiprocessor;
#   L2     tree with the lazy decode in the u16 kernel by units too;
#   Dco    a timing diagnostic, its checks fail by design: the interleaved
#          kernel by units with coalesced loads (a warp's 512 bytes in a
#          row, IMGSTAT_HWC_COALESCED_DIAG), channels and first positions
#          wrong: how much the loads' pattern costs;
#   Dns    the same kind of diagnostic: the unit kernel without its split
#          into channels (IMGSTAT_HWC_NOSPLIT_DIAG): what the permutes cost;
#   Dcn    both diagnostics;
#   prev   the defaults before the last three (a0f65d8's kernels);
#   prevf32  tree with planar f32 as before the lean kernel at 4 blocks a
#          multiprocessor (not lean, at 3: 80 registers); interleaved f32
#          is the same in both;
#   K      tree + each integer thread keeps its first extremes' vectors in
#          registers (no load at a block's end);
#   B      tree + grids of whole rounds (every block the same tiles);
#   KB     tree + K + B;
#   F      tree + f32 first positions from one re-read vector a block;
#   CV     tree + f32 widened to double by integer operations (the lean
#          planar kernel spills at 4 blocks a multiprocessor);
#   f2     tree + the planar f32 kernel at 2 blocks a multiprocessor (not 4);
#   CVf2   tree + CV + f2;
#   S8     tree with batched planes at least 8 tiles a block;
#   S4, S16  tree with batched planes at least 4 / 16 tiles a block (16: the default);
#   U16    tree with the u16 interleaved kernel sample by sample (the
#          packed one off: the default before it);
#   P16    the packed interleaved u16 kernel (IMGSTAT_HWC16_PACK, the default:
#          two samples a 32-bit word, 16x2 min / max by the word's channel
#          pair, 32-bit sums flushed before they can overflow; the same
#          tiles and first positions once a block) for RGB16 / RGBA16;
#          here at 2 blocks a multiprocessor;
#   P16b3  P16 at 3 blocks a multiprocessor (the default, = tree);
#   P16g2  P16 with tiles of 6 (RGB16) / 8 (RGBA16) vectors a thread, not 3 / 4;
#   P16g2b3  P16 + g2 + b3;
#   P16f1  P16 flushing its 32-bit sums every tile (a check of the flush,
#          which 64 MP images never reach otherwise; timed as any variant).
#   L      both f32 kernels holding less across their chunk loop (the
#          block's first chunk stored at once, the plane's last partial
#          vector's extremes re-read by one thread at the end), at 3 blocks
#          a multiprocessor: the planar one tree's at 3
#          (IMGSTAT_F32_BLOCKS_PER_SM=3), the strided one lean
#          (IMGSTAT_F32_STRIDED_LEAN): 79 / 78 registers, not 80. L, LW,
#          Lp2, LWp2 and LWH build the same kernels as before the lean
#          planar kernel at 4 blocks a multiprocessor became the default;
#          Lb4 and LWb4 are gone (their planar kernel is tree's, resp.
#          tree + IMGSTAT_F32_INT_WIDEN=2; their strided one, lean at 4
#          blocks a multiprocessor, ran 2 x slower);
#   LW     L + whole tiles of normal floats widened to double by integer
#          operations, told by one integer minimum (IMGSTAT_F32_INT_WIDEN=2);
#   Lp2    L + every f32 tile loaded while the one before it is reduced
#          (IMGSTAT_F32_PREFETCH=2), the next chunk's first one too;
#   LWp2   LW + Lp2;
#   H      tree + interleaved float32 read whole in one grid for every
#          channel (IMGSTAT_F32_HWC_ALL: thread t lane t of each channel,
#          the 4 pixels' C vectors loaded coalesced and split in
#          registers), 2 vectors a tile, 2 blocks a multiprocessor;
#   H4     H at 4 vectors a tile;
#   H1b3   H at 1 vector a tile, 3 blocks a multiprocessor;
#   LWH    LW + H, its normal vectors widened by integers too.
#   prevint  tree with the integer shapes before the sweep below (planes at
#          3 blocks a multiprocessor, batched planes 16 tiles a block, u8
#          interleaved C = 3 at 2 blocks, the batch's fold always launched);
#   Sfold  tree with the batch's fold launched even where every plane is
#          one block (IMGSTAT_SEG_DIRECT=0);
#   S32, S64  tree with batched planes at least 32 / 64 tiles a block (a
#          0.5 MP u8 plane is 32 tiles of 16 KiB: one block a plane; 64: the
#          default);
#   Sb4, Sb2  the batch kernel at 4 / 2 blocks a multiprocessor (not 3);
#   P16b4  the packed interleaved u16 kernel at 4 blocks a multiprocessor;
#   Hb3, Hb4  the interleaved u8 (and sample-by-sample u16) kernels at 3 / 4
#          blocks a multiprocessor, every C (tree: C = 3 at 3, others at 2);
#   HU1, HU4  the interleaved u8 kernel with 1 / 4 units a thread a tile (not 2);
#   Fb4, Fb2  the integer plane kernels and the batch at 4 / 2 blocks a
#          multiprocessor, interleaved f32 kept at 3;
#   fs2    interleaved float32's strided kernel at 2 blocks a multiprocessor;
#   U16u   interleaved u16 by units (IMGSTAT_HWC16_UNIT, the u8 kernel's
#          design: a thread's C vectors in a row, 8 pixels, split by byte
#          permutes into C vectors of one channel each, reduced as the u16
#          plane kernel reduces its vectors, first positions by unit) for
#          RGB16 / RGBA16 (and 2 channels) (the tree: C = 3 alone,
#          IMGSTAT_HWC16_UNIT=3; RGBA16 lost by units); C = 3 at 3 blocks a
#          multiprocessor (IMGSTAT_HWC16_UNIT_BLOCKS_PER_SM, its default:
#          80 registers), C = 2 and 4 at 2 (as u8's; RGBA16 at 3 spills);
#   U16ub2 U16u with C = 3 at 2 blocks a multiprocessor (94 registers);
#   U16p   the packed u16 kernel for every C (the default before RGB16 by
#          units).
# Usage, from the top of the tree, .deps carried: bash tests/gpu/checks/kernel_roof.sh
# In $OUT: summary.txt, roof.txt (the table) and logs.tgz (every log).
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
B=${ROOF_BUILD:-$ROOT/build-roof}
V=$B/roof
# At most a few files come back from $OUT: the logs go to $L, packed into
# $OUT/logs.tgz at the end; summary.txt and roof.txt stay beside it.
L=$B/logs
rm -rf "$L"
mkdir -p "$L" "$V"
trap 'tar -czf "$OUT/logs.tgz" -C "$B" logs 2>/dev/null' EXIT
T0=$(date +%s)
declare -a RESULTS=()
result() { RESULTS+=("$(printf '%-52s %s' "$1" "$2")"); }
el() { echo "$(($(date +%s) - T0)) s"; }

say "== $(date -u '+%F %T') $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1) commit ${IMGSTAT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo ?)}"
timeout 120 cmake -S . -B "$B" -DIMGSTAT_ENABLE_CUDA=ON -DIMGSTAT_WERROR=ON \
  -DCMAKE_PREFIX_PATH="$ROOT/.deps/usr" >"$L/build.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -20 "$L/build.log"; echo "FAIL configure"; exit 1; }

# ---- 3a. the variants' objects and the harness, beside the build ----------
# planar f32 before the lean kernel at 4 blocks a multiprocessor; and the
# lean planar and strided kernels at 3 (the L variants)
F32_OLD="-DIMGSTAT_F32_LEAN=0 -DIMGSTAT_F32_BLOCKS_PER_SM=3"
F32_L3="-DIMGSTAT_F32_BLOCKS_PER_SM=3 -DIMGSTAT_F32_STRIDED_LEAN=1"
O="-DIMGSTAT_FAST_INT_MERGE=0 -DIMGSTAT_F32_BLOCK_FIRST=0 -DIMGSTAT_FAST_PDL=0 -DIMGSTAT_HWC_BLOCK_FIRST=0 -DIMGSTAT_SEG_TILES=1 -DIMGSTAT_FOLD_INT=0 -DIMGSTAT_FAST_BALANCE=0 -DIMGSTAT_FAST_KEEP_VEC=0 -DIMGSTAT_F32_INT_WIDEN=0 -DIMGSTAT_HWC16_PACK=0 -DIMGSTAT_FAST_PLANE_BLOCKS_PER_SM=3 -DIMGSTAT_HWC3_BLOCKS_PER_SM=2 -DIMGSTAT_SEG_DIRECT=0 -DIMGSTAT_HWC16_UNIT=0 -DIMGSTAT_FAST_LAZY_FIRST=0 -DIMGSTAT_U8_HIGH_EXTREMES=0 $F32_OLD"
declare -A FLAGS=(
  [main]="$O"
  [tree]=""
  [K]="-DIMGSTAT_FAST_KEEP_VEC=1"
  [B]="-DIMGSTAT_FAST_BALANCE=1"
  [KB]="-DIMGSTAT_FAST_KEEP_VEC=1 -DIMGSTAT_FAST_BALANCE=1"
  [F]="-DIMGSTAT_F32_BLOCK_FIRST=1"
  [CV]="-DIMGSTAT_F32_INT_WIDEN=1"
  [f2]="-DIMGSTAT_F32_BLOCKS_PER_SM=2"
  [CVf2]="-DIMGSTAT_F32_INT_WIDEN=1 -DIMGSTAT_F32_BLOCKS_PER_SM=2"
  [S8]="-DIMGSTAT_SEG_TILES=8"
  [S16]="-DIMGSTAT_SEG_TILES=16"
  [S4]="-DIMGSTAT_SEG_TILES=4"
  [prev]="-DIMGSTAT_F32_BLOCK_FIRST=0 -DIMGSTAT_FAST_BALANCE=0 -DIMGSTAT_SEG_TILES=4 -DIMGSTAT_HWC16_PACK=0 -DIMGSTAT_FAST_PLANE_BLOCKS_PER_SM=3 -DIMGSTAT_HWC3_BLOCKS_PER_SM=2 -DIMGSTAT_SEG_DIRECT=0 -DIMGSTAT_HWC16_UNIT=0 -DIMGSTAT_FAST_LAZY_FIRST=0 -DIMGSTAT_U8_HIGH_EXTREMES=0 $F32_OLD"
  [prevint]="-DIMGSTAT_FAST_PLANE_BLOCKS_PER_SM=3 -DIMGSTAT_SEG_TILES=16 -DIMGSTAT_HWC3_BLOCKS_PER_SM=2 -DIMGSTAT_SEG_DIRECT=0 -DIMGSTAT_HWC16_UNIT=0"
  [Sfold]="-DIMGSTAT_SEG_DIRECT=0"
  [Sb4]="-DIMGSTAT_FAST_BLOCKS_PER_SM=4 -DIMGSTAT_F32_STRIDED_BLOCKS_PER_SM=3"
  [Sb2]="-DIMGSTAT_FAST_BLOCKS_PER_SM=2 -DIMGSTAT_F32_STRIDED_BLOCKS_PER_SM=3"
  [prevf32]="$F32_OLD"
  [P16]="-DIMGSTAT_HWC16_PACK=1 -DIMGSTAT_HWC16_BLOCKS_PER_SM=2"
  [U16]="-DIMGSTAT_HWC16_PACK=0"
  [P16b3]="-DIMGSTAT_HWC16_PACK=1 -DIMGSTAT_HWC16_BLOCKS_PER_SM=3"
  [P16g2]="-DIMGSTAT_HWC16_PACK=1 -DIMGSTAT_HWC16_GROUPS=2 -DIMGSTAT_HWC16_BLOCKS_PER_SM=2"
  [P16g2b3]="-DIMGSTAT_HWC16_PACK=1 -DIMGSTAT_HWC16_GROUPS=2 -DIMGSTAT_HWC16_BLOCKS_PER_SM=3"
  [P16f1]="-DIMGSTAT_HWC16_PACK=1 -DIMGSTAT_HWC16_FLUSH_TILES=1"
  [L]="$F32_L3"
  [LW]="$F32_L3 -DIMGSTAT_F32_INT_WIDEN=2"
  [Lp2]="$F32_L3 -DIMGSTAT_F32_PREFETCH=2"
  [LWp2]="$F32_L3 -DIMGSTAT_F32_INT_WIDEN=2 -DIMGSTAT_F32_PREFETCH=2"
  [H]="-DIMGSTAT_F32_HWC_ALL=1"
  [H4]="-DIMGSTAT_F32_HWC_ALL=1 -DIMGSTAT_F32_HWC_ITEMS=4"
  [H1b3]="-DIMGSTAT_F32_HWC_ALL=1 -DIMGSTAT_F32_HWC_ITEMS=1 -DIMGSTAT_F32_HWC_BLOCKS_PER_SM=3"
  [LWH]="$F32_L3 -DIMGSTAT_F32_INT_WIDEN=2 -DIMGSTAT_F32_HWC_ALL=1"
  [S32]="-DIMGSTAT_SEG_TILES=32"
  [S64]="-DIMGSTAT_SEG_TILES=64"
  [P16b4]="-DIMGSTAT_HWC16_BLOCKS_PER_SM=4"
  [Hb3]="-DIMGSTAT_HWC_BLOCKS_PER_SM=3 -DIMGSTAT_HWC3_BLOCKS_PER_SM=3"
  [Hb4]="-DIMGSTAT_HWC_BLOCKS_PER_SM=4 -DIMGSTAT_HWC3_BLOCKS_PER_SM=4"
  [HU1]="-DIMGSTAT_HWC_UNITS=1"
  [HU4]="-DIMGSTAT_HWC_UNITS=4"
  [Fb4]="-DIMGSTAT_FAST_BLOCKS_PER_SM=4 -DIMGSTAT_FAST_PLANE_BLOCKS_PER_SM=4 -DIMGSTAT_F32_STRIDED_BLOCKS_PER_SM=3"
  [Fb2]="-DIMGSTAT_FAST_BLOCKS_PER_SM=2 -DIMGSTAT_FAST_PLANE_BLOCKS_PER_SM=2 -DIMGSTAT_F32_STRIDED_BLOCKS_PER_SM=3"
  [fs2]="-DIMGSTAT_F32_STRIDED_BLOCKS_PER_SM=2"
  [U16u]="-DIMGSTAT_HWC16_UNIT=1"
  [U16p]="-DIMGSTAT_HWC16_UNIT=0"
  [U16ub2]="-DIMGSTAT_HWC16_UNIT=1 -DIMGSTAT_HWC16_UNIT_BLOCKS_PER_SM=2"
  [prevx]="-DIMGSTAT_FAST_LAZY_FIRST=0 -DIMGSTAT_U8_HIGH_EXTREMES=0"
  [Z3b4]="-DIMGSTAT_HWC3_BLOCKS_PER_SM=4"
  [L2]="-DIMGSTAT_FAST_LAZY_FIRST=2"
  [Dco]="-DIMGSTAT_HWC_COALESCED_DIAG=1"
  [Dns]="-DIMGSTAT_HWC_NOSPLIT_DIAG=1"
  [Dcn]="-DIMGSTAT_HWC_COALESCED_DIAG=1 -DIMGSTAT_HWC_NOSPLIT_DIAG=1"
  [Zl]="-DIMGSTAT_U8_HIGH_EXTREMES=0"
  [Zh]="-DIMGSTAT_FAST_LAZY_FIRST=0"
  [Z4]="-DIMGSTAT_HWC4_UNITS=4"
)
read -r -a VARS <<<"${ROOF_VARIANTS:-main tree K B KB F CV f2 CVf2 S8}"
mkdir -p "$V"
nv() {
  nvcc -std=c++17 -O3 -DNDEBUG "--generate-code=arch=compute_90,code=[sm_90]" \
    "--generate-code=arch=compute_90,code=[compute_90]" -Xcompiler=-ffp-contract=off \
    -Xcompiler=-Wall,-Wextra --expt-relaxed-constexpr -DIMGSTAT_HAVE_CUDA=1 \
    -Iinclude -Isrc/core -Icuda -Ibench/gpu "$@"
}
(
  nv -c bench/gpu/kernel_roof.cu -o "$V/harness.o" &
  for v in "${VARS[@]}"; do
    # shellcheck disable=SC2086
    nv ${FLAGS[$v]} -Xptxas -v -c cuda/fast.cu -o "$V/fast-$v.o" >"$V/ptxas-$v.log" 2>&1 &
  done
  wait
) >"$L/variants.log" 2>&1 &
vpid=$!

# ---- 1. the build ---------------------------------------------------------
timeout 300 cmake --build "$B" -j16 --target imgstat test_gpu test_gpu_batch \
  >>"$L/build.log" 2>&1
rc=$?
say "== build rc=$rc ($(el))"
if [ $rc -ne 0 ]; then
  grep -E "error|warning" "$L/build.log" | head -20 | tee -a "$SUMMARY"
  echo "FAIL build"
  exit 1
fi
result build PASS

# ---- 2. identity of the tree's kernels ------------------------------------
timeout 150 "$B/tests/test_gpu" >"$L/test_gpu.log" 2>&1
rc=$?
grep -E "Test:.*(FAILED)|MISMATCH|asserts|tests |skipped" "$L/test_gpu.log" |
  head -20 | tee -a "$SUMMARY"
result "test_gpu (GPU partials = CPU's, bits)" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")"
timeout 100 "$B/tests/test_gpu_batch" >"$L/test_gpu_batch.log" 2>&1
rc=$?
grep -E "Test:.*(FAILED)|asserts|tests " "$L/test_gpu_batch.log" | head -10 | tee -a "$SUMMARY"
result "test_gpu_batch" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")"
imgs=()
[ -d "$ROOT/.corpus" ] && imgs=("$ROOT"/.corpus/photos/*.{png,jpg,ppm,pgm,bmp} "$ROOT"/.corpus/hdr/*.hdr "$ROOT"/tests/data/pngsuite/*.png)
imgs+=("$ROOT"/samples/*.{png,jpg,bmp,pgm,hdr})
ex=()
for f in "${imgs[@]}"; do [ -f "$f" ] && ex+=("$f"); done
if [ ${#ex[@]} -gt 0 ]; then
  timeout 120 "$B/imgstat" --json --backend cpu "${ex[@]}" >"$L/cpu.jsonl" 2>/dev/null
  timeout 120 "$B/imgstat" --json --backend gpu "${ex[@]}" >"$L/gpu.jsonl" 2>/dev/null
  same=$(python3 -c "
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
print(sum(1 for x, y in zip(a, b) if x['stats'] == y['stats']), len(a), len(b))" \
    "$L/cpu.jsonl" "$L/gpu.jsonl")
  read -r n_same n_cpu n_gpu <<<"$same"
  result "records gpu = cpu (${#ex[@]} inputs)" \
    "$([ "$n_same" = "$n_cpu" ] && [ "$n_cpu" = "$n_gpu" ] && [ "$n_cpu" -gt 0 ] && echo PASS || echo FAIL) ($n_same of $n_cpu, gpu $n_gpu)"
  timeout 120 "$B/imgstat" --verify -q --json "${ex[@]}" >/dev/null 2>"$L/verify.err"
  result "imgstat --verify" "$(grep -c 'verify ok' "$L/verify.err") ok, $(grep -c MISMATCH "$L/verify.err") mismatches"
fi

# ---- 3b. link the variants, check, time ------------------------------------
timeout 300 tail --pid=$vpid -f /dev/null
built=()
for v in "${VARS[@]}"; do
  if [ ! -f "$V/fast-$v.o" ] || [ ! -f "$V/harness.o" ]; then
    tail -5 "$V/ptxas-$v.log" >>"$L/variants.log"
    continue
  fi
  # the variant's fast.cu first: libimgstat.a's is then not pulled in
  (cd "$B/tests" && g++ "$V/harness.o" "$V/fast-$v.o" \
    @CMakeFiles/test_gpu.dir/linkLibs.rsp \
    -L/usr/local/cuda/targets/x86_64-linux/lib -o "$V/roof-$v") \
    >>"$L/variants.log" 2>&1 && built+=("$v")
done
say "== variants built: ${built[*]:-none} ($(el))"
[ ${#built[@]} -gt 0 ] || { tail -30 "$L/variants.log" | tee -a "$SUMMARY"; }
grep -E "warning|error" "$L/variants.log" "$V"/ptxas-*.log | head -10 | tee -a "$SUMMARY"
for v in "${built[@]}"; do # registers and spills of the pass-1 kernels
  grep -E "Compiling entry|registers|spill stores" "$V/ptxas-$v.log" | paste - - - |
    sed -E "s/.*entry function '([^']*)'.* ([0-9]+ bytes spill stores).*Used ([0-9]+) registers.*/$v \3 regs, \2: \1/" |
    c++filt | grep -E "fast_stats|fast_f32|hwc_|hwc16_|segments_kernel" >>"$L/registers.txt"
done
: >"$L/rows.txt"
ROUNDS=${ROOF_ROUNDS:-5}
# rounds of timing (variants in turns, about 3-5 s each), the checks after
# the second round (about 10-20 s a variant); a round after ROOF_BUDGET
# seconds is left out, so the script ends in time
timing_round() {
  for v in "${built[@]}"; do
    timeout 60 "$V/roof-$v" "$v" >"$L/t_$v.$1.log" 2>&1
    grep '^ROW' "$L/t_$v.$1.log" | sed "s/^ROW/ROW $1/" >>"$L/rows.txt"
  done
  say "== round $1 done ($(el))"
}
checks() {
  for v in "${built[@]}"; do
    timeout 120 "$V/roof-$v" "$v" --check --runs 0 >"$L/check_$v.log" 2>&1
    rc=$?
    nok=$(grep -c '^CHECK.* ok$' "$L/check_$v.log")
    nfail=$(grep -c '^CHECK.*FAIL' "$L/check_$v.log")
    grep '^CHECK.*FAIL' "$L/check_$v.log" | head -5 | tee -a "$SUMMARY"
    result "variant $v: partials = CPU's" \
      "$([ "$rc" -eq 0 ] && [ "$nfail" -eq 0 ] && [ "$nok" -gt 0 ] && echo PASS || echo "FAIL rc=$rc") ($nok checks ok, $nfail failed)"
  done
  say "== checks done ($(el))"
}
checked=
for round in $(seq 1 "$ROUNDS"); do
  if [ "$round" -gt 1 ] && [ $(($(date +%s) - T0)) -gt "${ROOF_BUDGET:-400}" ]; then
    say "== round $round and later left out: $(el) spent"
    break
  fi
  timing_round "$round"
  if [ "$round" = 2 ]; then
    checks
    checked=1
  fi
done
[ -n "${checked:-}" ] || checks
# the tree's kernels under compute-sanitizer (memcheck, racecheck) on the
# small images' checks
if [ -x "$V/roof-tree" ]; then
  for tool in memcheck racecheck; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 \
      "$V/roof-tree" tree --small >"$L/san-$tool.log" 2>&1
    rc=$?
    result "compute-sanitizer $tool (tree, small images)" \
      "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/san-$tool.log" | tail -1)"
  done
  say "== sanitizers done ($(el))"
fi

# ---- 4. the table -----------------------------------------------------------
python3 - "$L/rows.txt" "${built[@]}" <<'PY' | tee "$OUT/roof.txt" | tee -a "$SUMMARY"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
variants = sys.argv[2:]
cases, data = [], {}
for _, rnd, v, case, fused, cub, ratio in rows:
    if case not in cases:
        cases.append(case)
    data.setdefault((case, v), []).append((float(fused), float(cub), float(ratio)))
print("fused / CUB (median over rounds [min-max]); goal <= 1.03")
print(f"{'case':<26}" + "".join(f"{v:>22}" for v in variants))
for c in cases:
    line = f"{c:<26}"
    for v in variants:
        r = [x[2] for x in data.get((c, v), [])]
        line += f"{statistics.median(r):>9.3f} [{min(r):.3f}-{max(r):.3f}]" if r else f"{'-':>22}"
    print(line)
print()
print("medians in ms: fused / CUB")
for c in cases:
    line = f"{c:<26}"
    for v in variants:
        r = data.get((c, v), [])
        if r:
            line += f"{statistics.median(x[0] for x in r):>11.4f}/{statistics.median(x[1] for x in r):.4f}"
    print(line)
PY

say "== total $(el)"
say ""
for r in "${RESULTS[@]}"; do say "$r"; done
case " ${RESULTS[*]} " in *FAIL*) exit 1 ;; esac
exit 0
