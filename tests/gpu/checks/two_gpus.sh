#!/bin/bash
# On a host of two GPUs: the JPEG stage's records (and the dataset
# record) are the same from one device, from both (--devices all, 0,1) and
# from two MPI ranks (one device each), with --histogram, and from three
# (two on one GPU: rank 0 says so once); then
# tests/gpu/checks/devices_test.sh (every kind of image, --devices). Prints a
# verdict a line. Usage (top of the tree, .deps and .corpus carried):
#   tests/gpu/checks/two_gpus.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
. tests/support/lib.sh
lib_gpu_prelude
OUT=${OUT:-/tmp/imgstat-gpu-out}
bash bench/gpu/jpeg_stage_costs.sh build,check >/dev/null 2>&1
sed -n '/== summary/,/== done/p' "$OUT/jpeg_stage_costs.log"
B=$ROOT/build-jstage/imgstat
C=/tmp/jstage-check
G="--json --jpeg-decoder gpu --jpeg-check markers"
echo "GPUs: $(nvidia-smi -L | wc -l)"
same() { # NAME A B: byte-identical outputs
  if cmp -s "$2" "$3" && [ -s "$2" ]; then echo "two-gpu $1: PASS ($(wc -l <"$2") lines)"; else echo "two-gpu $1: FAIL ($(wc -l <"$2") vs $(wc -l <"$3") lines)"; fi
}
for o in "--histogram" "--dataset-only"; do
  n=$(echo "$o" | tr -d -)
  timeout 120 "$B" $G $o $C >"$OUT/one-$n.json" 2>/dev/null
  timeout 120 "$B" $G $o --devices all $C >"$OUT/all-$n.json" 2>/dev/null
  timeout 120 "$B" $G $o --devices 1,0 $C >"$OUT/10-$n.json" 2>/dev/null
  timeout 180 mpirun --allow-run-as-root --oversubscribe -n 2 "$B" --mpi $G $o $C \
    >"$OUT/mpi-$n.json" 2>"$OUT/mpi-$n.err"
  same "$o --devices all vs one" "$OUT/one-$n.json" "$OUT/all-$n.json"
  same "$o --devices 1,0 vs one" "$OUT/one-$n.json" "$OUT/10-$n.json"
  same "$o mpirun -n 2 --mpi vs one process" "$OUT/one-$n.json" "$OUT/mpi-$n.json"
done
# more ranks than GPUs: the same records, and rank 0 says once that the
# ranks share the GPUs (not with one rank a GPU)
timeout 180 mpirun --allow-run-as-root --oversubscribe -n 3 "$B" --mpi $G --dataset-only $C \
  >"$OUT/mpi3-datasetonly.json" 2>"$OUT/mpi3-datasetonly.err"
same "--dataset-only mpirun -n 3 (3 ranks, 2 GPUs) vs one process" "$OUT/one-datasetonly.json" "$OUT/mpi3-datasetonly.json"
w3=$(grep -c 'ranks on this host share its 2 GPUs' "$OUT/mpi3-datasetonly.err")
w2=$(grep -c 'share its' "$OUT/mpi-datasetonly.err")
if [ "$w3" = 1 ] && [ "$w2" = 0 ]; then
  echo "two-gpu ranks sharing the GPUs said once (3 ranks), not with 2: PASS"
else
  echo "two-gpu ranks sharing the GPUs said once (3 ranks), not with 2: FAIL ($w3 / $w2 lines)"
fi
timeout 300 bash tests/gpu/checks/devices_test.sh "$B" 2>&1 | tail -12
