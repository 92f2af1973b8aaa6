#!/bin/bash
# one device call: verify_all quick, then the Python CUDA suite
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu PATH=$PATH:/usr/local/cuda/bin
start=$(date +%s)
VERIFY_QUICK=1 IMGSTAT_COMMIT=${COMMIT:-?} timeout 380 bash tests/gpu/checks/verify_all.sh > $OUT/verify.txt 2>&1
echo "verify rc=$? $(( $(date +%s) - start )) s"
tail -30 $OUT/summary.txt 2>/dev/null || tail -30 $OUT/verify.txt
left=$(( 560 - ($(date +%s) - start) ))
[ $left -gt 120 ] && PYCUDA_BUDGET=$((left-20)) timeout $left bash tests/gpu/checks/python_cuda.sh build,pytest > $OUT/pycuda.txt 2>&1
echo "pycuda rc=$? $(( $(date +%s) - start )) s"
tail -15 $OUT/pycuda.txt
