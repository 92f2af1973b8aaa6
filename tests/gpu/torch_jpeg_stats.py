#!/usr/bin/env python3
"""The strongest alternative for issue 12's folder timings: torchvision's
decode_jpeg on the GPU (batched, 64 files a call) plus torch reductions
(per-channel min, max, sum, sum of squares in 64-bit), every file of DIR.
Whole process when timed from outside; prints one line per file.
Usage: torch_jpeg_stats.py DIR"""
import os
import sys

import torch
import torchvision
from torchvision.io import decode_jpeg, read_file

d = sys.argv[1]
files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".jpg"))
out = []
for k in range(0, len(files), 64):
    chunk = files[k:k + 64]
    imgs = decode_jpeg([read_file(f) for f in chunk], device="cuda")
    for f, img in zip(chunk, imgs):
        x = img.reshape(img.shape[0], -1).to(torch.int64)
        s = torch.stack([x.min(1).values, x.max(1).values, x.sum(1),
                         (x * x).sum(1)]).cpu().tolist()
        out.append(f"{f} {s}")
print("\n".join(out))
print(f"torchvision {torchvision.__version__}", file=sys.stderr)
