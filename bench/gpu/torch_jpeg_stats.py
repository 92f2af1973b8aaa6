#!/usr/bin/env python3
"""The strongest alternative for the folder timings:
torchvision's decode_jpeg on the GPU, batched (64 files a call), the files
read by 16 threads ahead of the decode, plus torch reductions on the GPU
(per-channel min, max, sum and sum of squares in 64-bit integers), every
file of DIR. Whole process when timed from outside; prints one line per
file.
Usage: torch_jpeg_stats.py DIR [BATCH]"""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import torch
import torchvision
from torchvision.io import decode_jpeg, read_file

d = sys.argv[1]
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 64
files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".jpg"))
chunks = [files[k:k + batch] for k in range(0, len(files), batch)]
stats = []
with ThreadPoolExecutor(16) as pool:
    # every chunk's bytes read by the pool while earlier chunks decode
    pending = [pool.map(read_file, c) for c in chunks]
    for chunk, data in zip(chunks, pending):
        imgs = decode_jpeg(list(data), device="cuda")
        for img in imgs:
            x = img.reshape(img.shape[0], -1).to(torch.int64)
            stats.append(torch.stack([x.min(1).values, x.max(1).values,
                                      x.sum(1), (x * x).sum(1)]))
out = [f"{f} {s}" for f, s in zip(files, torch.stack(stats).cpu().tolist())]
print("\n".join(out))
print(f"torchvision {torchvision.__version__}", file=sys.stderr)
