#!/bin/bash
# Several GPUs: the records of a whole folder are the same from the
# CPU, from one GPU and from every GPU (--devices), in the same order; auto
# (with IMGSTAT_AUTO=gpu, so that its rule takes the GPU) deals the folder
# to every device too; a device that is not there is named. On a machine
# with one GPU the two-GPU runs use the one. Usage (GPU machine, from the top
# of the tree): tests/gpu/checks/devices_test.sh IMGSTAT
set -u
BIN=${1:?usage: devices_test.sh IMGSTAT}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
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
# Compares two runs' records: "exact", or "float" (the statistics of every
# image exactly, float ones too: the canonical float order gives the GPU the
# CPU's bits, docs/float-order.md).
same_records() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
exact = sys.argv[3] == "exact"
bad = 0 if len(a) == len(b) else 1
for x, y in zip(a, b):
    if exact or x.get("depth") != 32 or "stats" not in x:
        bad += x != y
        continue
    xs, ys = x.pop("stats"), y.pop("stats", [])
    bad += x != y or len(xs) != len(ys)
    for p, q in zip(xs, ys):
        for k in p:
            u, v = p[k], q.get(k)
            bad += u != v
sys.exit(1 if bad else 0)
PY
}
lists=("0" "all")
[ "$ndev" -ge 2 ] && lists+=("1" "0,1" "1,0")
for l in "${lists[@]}"; do
  for b in gpu auto; do
    name="$b-${l//,/_}"
    got=$(IMGSTAT_AUTO=gpu run "$name" --backend $b --devices "$l")
    # as the CPU's (float to the bit too), as one GPU's exactly, the same
    # messages and status, every record by a GPU
    vs_cpu=no vs_one=no
    same_records "$T/cpu.jsonl" "$T/$name.jsonl" float && cmp -s "$T/cpu.err" "$T/$name.err" &&
      [ "$(cat "$T/$name.rc")" = "$(cat "$T/cpu.rc")" ] && vs_cpu=yes
    same_records "$T/gpu-0.jsonl" "$T/$name.jsonl" exact && vs_one=yes
    echo "--backend $b --devices $l: $got; as the CPU's: $vs_cpu; as one GPU's, bit for bit: $vs_one"
    [ $vs_cpu = yes ] && [ $vs_one = yes ] && [ "$got" = "gpu:$n" ] || {
      fail=1
      diff "$T/gpu-0.jsonl" "$T/$name.jsonl" | cut -c1-600 | head -4
    }
  done
done
# The same float image on each device, five times: the GPU's float figures
# do not depend on the device or the run.
hdr=$(ls "$ROOT"/samples/*.hdr | head -1)
for d in $(seq 0 $((ndev - 1))); do
  for r in 1 2 3 4 5; do
    "$BIN" --json --backend gpu --devices $d "$hdr"
  done
done | sort | uniq -c | sed 's/^ *\([0-9]*\) .*"stats":\[{[^}]*"std":\([^,]*\).*/\1 runs: R std \2/' >"$T/hdr.txt"
echo "$hdr on every device, 5 runs each: $(wc -l <"$T/hdr.txt") distinct record(s): $(tr '\n' ';' <"$T/hdr.txt")"
[ "$(wc -l <"$T/hdr.txt")" -eq 1 ] || fail=1
# a device that is not there
"$BIN" --backend gpu --devices "$ndev" "$ROOT/samples/camera.png" >/dev/null 2>"$T/nodev.err"
rc=$?
echo "--devices $ndev (absent): rc $rc: $(head -1 "$T/nodev.err")"
[ $rc -eq 1 ] && grep -q "device $ndev: no CUDA device $ndev ($ndev present)" "$T/nodev.err" || fail=1
echo "devices_test: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
