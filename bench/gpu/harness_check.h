/*
 * CHECK for the stand-alone GPU programs of bench/gpu (fast_timing.cu,
 * call_cost.cu): a CUDA call that fails ends the program with its place and
 * CUDA's words (they are tools run by hand, not the library).
 */
#ifndef IMGSTAT_TESTS_GPU_HARNESS_CHECK_H
#define IMGSTAT_TESTS_GPU_HARNESS_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                \
              cudaGetErrorString(e_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#endif
