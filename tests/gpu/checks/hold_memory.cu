/*
 * Holds a GPU's memory for tests/gpu/checks/startup_failure.sh: allocates
 * device memory until at most LEAVE_MIB MiB are free, writes "held H MiB, free
 * F MiB" to READY_FILE, then waits until its standard input ends (or it is
 * killed), so that another process starts on a GPU whose memory is taken.
 * Device 0 (as CUDA_VISIBLE_DEVICES shows them).
 *
 *   nvcc -o hold_memory tests/gpu/checks/hold_memory.cu
 *   hold_memory LEAVE_MIB READY_FILE </some/fifo
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: hold_memory LEAVE_MIB READY_FILE\n");
    return 2;
  }
  const size_t mib = (size_t)1 << 20;
  size_t leave = (size_t)strtoull(argv[1], nullptr, 10) * mib;
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
    fprintf(stderr, "hold_memory: no usable GPU\n");
    return 1;
  }
  std::vector<void *> held;
  size_t total_held = 0, free_b = 0, total_b = 0;
  /* chunks from 1 GiB down to 1 MiB, until no more than `leave` is free */
  for (size_t chunk = (size_t)1 << 30; chunk >= mib;) {
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
      break;
    if (free_b <= leave)
      break;
    size_t want = free_b - leave < chunk ? (free_b - leave) / mib * mib : chunk;
    if (want < mib)
      break;
    void *p = nullptr;
    if (cudaMalloc(&p, want) == cudaSuccess) {
      held.push_back(p);
      total_held += want;
    } else {
      (void)cudaGetLastError();
      chunk /= 2;
    }
  }
  cudaMemGetInfo(&free_b, &total_b);
  FILE *f = fopen(argv[2], "w");
  if (!f)
    return 1;
  fprintf(f, "held %zu MiB, free %zu MiB\n", total_held / mib, free_b / mib);
  fclose(f);
  char buf[64];
  while (fread(buf, 1, sizeof buf, stdin) > 0)
    ;
  for (void *p : held)
    cudaFree(p);
  return 0;
}
