/*
 * CUDA errors and the fault-injection gates: the internal interface every
 * file of cuda/ uses, implemented in cuda/gpu_backend.cu.
 *
 *  - ist_cuda_fail is the one place where a cudaError_t becomes an
 *    imgstat_error (status, message).
 *  - Every device or pinned allocation goes through ist_cuda_malloc /
 *    ist_cuda_malloc_host, and every kernel launch is preceded by
 *    ist_cuda_launch_gate. They count the events for IMGSTAT_GPU_FAULT
 *    (cuda/gpu_fault.h, docs/gpu.md): the chosen event fails with the error
 *    a real failure gives (cudaErrorMemoryAllocation for an allocation,
 *    cudaErrorLaunchOutOfResources for a launch) without calling CUDA, so
 *    the context stays as usable as after a real failure of that kind.
 */
#ifndef IMGSTAT_CUDA_CHECK_CUH
#define IMGSTAT_CUDA_CHECK_CUH

#include <cuda_runtime.h>
#include <stddef.h>

#include "imgstat.h"

/* Fills *err from a failed CUDA call: IMGSTAT_ERR_NODEVICE for no device or
 * a driver too old, IMGSTAT_ERR_DEVICE otherwise, with the message
 * "CUDA error in WHAT: cudaGetErrorString (cudaGetErrorName)" (plus a note
 * when the error was injected). Clears the thread's last non-sticky error,
 * so that it does not resurface at the next launch check. */
imgstat_status ist_cuda_fail(imgstat_error *err, cudaError_t e,
                             const char *what);

/* Clears the last non-sticky error after a failure the caller handles
 * itself (e.g. an allocation too large, retried smaller). */
void ist_cuda_clear_error(void);

/* cudaMalloc and cudaMallocHost, through the fault counter. *p is nullptr
 * on failure. */
cudaError_t ist_cuda_malloc(void **p, size_t bytes);
cudaError_t ist_cuda_malloc_host(void **p, size_t bytes);

/* Called right before each kernel launch (and before each library call
 * that launches, like CUB's): cudaSuccess, or the injected launch error, in
 * which case the caller returns it and launches nothing. */
cudaError_t ist_cuda_launch_gate(void);

/* NULL, or why IMGSTAT_GPU_FAULT is malformed (imgstat_gpu_create then
 * fails with this message rather than ignore the switch). */
const char *ist_cuda_fault_problem(void);

#endif /* IMGSTAT_CUDA_CHECK_CUH */
