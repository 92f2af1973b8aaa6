/*
 * A deliberate leak, for tests/gpu/checks/fault_test.sh: a device allocation
 * still held when the program exits, without cudaDeviceReset, as imgstat exits.
 * compute-sanitizer --leak-check full must report it; otherwise its "no
 * leaks" on imgstat would prove nothing.
 */
#include <cuda_runtime.h>
#include <stdio.h>

int main(void) {
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, 4096);
  if (e != cudaSuccess) {
    fprintf(stderr, "leak_probe: cudaMalloc: %s\n", cudaGetErrorString(e));
    return 2;
  }
  return 0; /* p is never freed */
}
