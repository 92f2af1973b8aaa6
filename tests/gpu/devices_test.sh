#!/bin/bash
# Several GPUs (issue 9): the records of a whole folder are the same from the
# CPU, from one GPU and from every GPU (--devices), in the same order; auto
# (with IMGSTAT_AUTO=gpu, so that its rule takes the GPU) deals the folder
# to every device too; a device that is not there is named. On a machine
# with one GPU the two-GPU runs use the one. Usage (GPU machine, from the top
# of the tree): tests/gpu/devices_test.sh IMGSTAT
set -u
BIN=${1:?usage: devices_test.sh IMGSTAT}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ndev=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "devices_test: $ndev GPU(s)"
# The folder: the corpus and samples (8, 16 bits, float, broken files
# among them) and generated images of every depth, nested.
mkdir -p "$T/in/gen/deep"
[ -d "$ROOT/.corpus" ] && cp -r "$ROOT/.corpus" "$T/in/corpus"
cp -r "$ROOT/samples" "$T/in/samples"
python3 - "$T/in/gen" <<'PY'
import sys, numpy as np, cv2
d = sys.argv[1]
rng = np.random.default_rng(9)
for i in range(24):
    h, w = int(rng.integers(1, 900)), int(rng.integers(1, 1300))
    c = [1, 3, 4][i % 3]
    if i % 4 == 0:
        img = rng.integers(0, 65536, (h, w, c), dtype=np.uint16)
        cv2.imwrite(f"{d}/deep/g{i:02d}.png", img)
    else:
        img = rng.integers(0, 256, (h, w, c), dtype=np.uint8)
        cv2.imwrite(f"{d}/g{i:02d}.png", img)
PY
fail=0
run() { # NAME ARGS...: the records (backend dropped) into $T/NAME.jsonl
  local name=$1
  shift
  "$BIN" --json "$@" "$T/in" >"$T/$name.raw" 2>"$T/$name.err"
  echo $? >"$T/$name.rc"
  python3 - "$T/$name.raw" "$T/$name.jsonl" <<'PY'
import json, sys
out = open(sys.argv[2], "w")
backends = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    b = r.pop("backend", None)
    backends[b] = backends.get(b, 0) + 1
    out.write(json.dumps(r, sort_keys=True) + "\n")
print(" ".join(f"{k}:{v}" for k, v in sorted(backends.items(), key=str)))
PY
}
echo "cpu: $(run cpu --backend cpu)"
n=$(wc -l <"$T/cpu.jsonl")
echo "  $n records, rc $(cat "$T/cpu.rc")"
lists=("0" "all")
[ "$ndev" -ge 2 ] && lists+=("1" "0,1" "1,0")
for l in "${lists[@]}"; do
  for b in gpu auto; do
    name="$b-${l//,/_}"
    j=(); [ $b = auto ] && j=(-j 1) # other workers run on the CPU while CUDA starts
    got=$(IMGSTAT_AUTO=gpu run "$name" --backend $b --devices "$l" "${j[@]}")
    same=no
    cmp -s "$T/cpu.jsonl" "$T/$name.jsonl" && cmp -s "$T/cpu.err" "$T/$name.err" &&
      [ "$(cat "$T/$name.rc")" = "$(cat "$T/cpu.rc")" ] && same=yes
    # every record by a GPU (auto: the item that starts CUDA waits for it)
    gpu_only=no
    [ "$got" = "gpu:$n" ] && gpu_only=yes
    echo "--backend $b --devices $l: $got; records, messages and status as the CPU's: $same"
    [ $same = yes ] && [ $gpu_only = yes ] || { fail=1; diff "$T/cpu.jsonl" "$T/$name.jsonl" | head -5; diff "$T/cpu.err" "$T/$name.err" | head -5; }
  done
done
# a device that is not there
"$BIN" --backend gpu --devices "$ndev" "$ROOT/samples/camera.png" >/dev/null 2>"$T/nodev.err"
rc=$?
echo "--devices $ndev (absent): rc $rc: $(head -1 "$T/nodev.err")"
[ $rc -eq 1 ] && grep -q "device $ndev: no CUDA device $ndev ($ndev present)" "$T/nodev.err" || fail=1
echo "devices_test: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
