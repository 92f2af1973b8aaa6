"""The workload for Nsight Compute's view of the two u8 statistics kernels
on the same pixels: imgstat.stats of a 64 MP RGB8 CUDA tensor (samples
1..254) as CHW planes (fast_stats_kernel) and as interleaved HWC
(hwc_unit_kernel), twice each. Usage (GPU host, the package on PYTHONPATH):
  ncu --target-processes all -k regex:"hwc_unit_kernel|fast_stats_kernel" \\
      --launch-skip 2 --launch-count 2 --section SpeedOfLight \\
      --section Occupancy --section WarpStateStats \\
      python3 bench/gpu/ncu_hwc.py
(docs/benchmarks.md, "The record kept, the interleaved kernel profiled")."""
import torch

import imgstat

torch.manual_seed(0)
chw = torch.randint(1, 255, (3, 8192, 8192), dtype=torch.uint8, device="cuda")
hwc = chw.permute(1, 2, 0).contiguous()
torch.cuda.synchronize()
for _ in range(2):
    imgstat.stats(chw, layout="chw")
    imgstat.stats(hwc)
