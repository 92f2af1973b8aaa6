/*
 * CUDA errors and the fault-injection gates (cuda_check.cuh): the one place
 * where a cudaError_t becomes an imgstat_error, and the counter of
 * IMGSTAT_GPU_FAULT (gpu_fault.h, docs/gpu.md) that every allocation and
 * launch of cuda/ passes.
 */
#include "cuda_check.cuh"
#include "gpu_fault.h"

#include <atomic>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace {

/* IMGSTAT_GPU_FAULT, read once: C++ makes the initialisation of a local
 * static thread-safe, and the first reader may be the thread that creates
 * the context while another decodes. */
struct FaultSwitch {
  ist_gpu_fault spec;
  bool valid;
  char value[40];    /* the variable's value, shortened, for messages */
  char problem[160]; /* why it is malformed */
};

const FaultSwitch &fault_switch() {
  static const FaultSwitch sw = [] {
    FaultSwitch f;
    memset(&f, 0, sizeof f);
    const char *s = getenv("IMGSTAT_GPU_FAULT");
    f.valid = ist_gpu_fault_parse(s, &f.spec) != 0;
    snprintf(f.value, sizeof f.value, "%.32s", s ? s : "");
    if (!f.valid)
      snprintf(f.problem, sizeof f.problem,
               "IMGSTAT_GPU_FAULT='%.32s' is not N, alloc:N or launch:N, "
               "nor start:POINT[:N] (docs/gpu.md)",
               f.value);
    return f;
  }();
  return sw;
}

std::atomic<unsigned long long> g_fault_events{0}; /* events counted */
std::atomic<bool> g_fault_unreported{false}; /* injected, not yet mapped */

/* An event of `kind` is about to happen: cudaSuccess, or `injected` when it
 * is the one IMGSTAT_GPU_FAULT names. */
cudaError_t fault_gate(unsigned kind, cudaError_t injected) {
  const FaultSwitch &f = fault_switch();
  if (!(f.spec.kinds & kind))
    return cudaSuccess;
  if (g_fault_events.fetch_add(1) + 1 != f.spec.n)
    return cudaSuccess;
  g_fault_unreported.store(true);
  return injected;
}

std::atomic<unsigned long long> g_start_events{0}; /* the point reached */

} // namespace

cudaError_t ist_cuda_start_gate(int point) {
  const FaultSwitch &f = fault_switch();
  if (!(f.spec.kinds & IMGSTAT_GPU_FAULT_START) || f.spec.point != point)
    return cudaSuccess;
  if (g_start_events.fetch_add(1) + 1 != f.spec.n)
    return cudaSuccess;
  g_fault_unreported.store(true);
  return cudaErrorMemoryAllocation;
}

imgstat_status ist_cuda_fail(imgstat_error *err, cudaError_t e,
                             const char *what) {
  const bool injected =
      g_fault_unreported.exchange(false) &&
      (e == cudaErrorMemoryAllocation || e == cudaErrorLaunchOutOfResources);
  ist_cuda_clear_error();
  return imgstat_error_set(
      err,
      e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver
          ? IMGSTAT_ERR_NODEVICE
          : IMGSTAT_ERR_DEVICE,
      "CUDA error in %s: %s (%s%s%s)", what, cudaGetErrorString(e),
      cudaGetErrorName(e), injected ? "; injected by IMGSTAT_GPU_FAULT=" : "",
      injected ? fault_switch().value : "");
}

void ist_cuda_clear_error(void) {
  (void)cudaGetLastError();
  g_fault_unreported.store(false); /* handled: no note on a later error */
}

cudaError_t ist_cuda_alloc(bool pinned, void **p, size_t bytes) {
  *p = nullptr;
  cudaError_t e =
      fault_gate(IMGSTAT_GPU_FAULT_ALLOC, cudaErrorMemoryAllocation);
  if (e == cudaSuccess)
    e = pinned ? cudaMallocHost(p, bytes) : cudaMalloc(p, bytes);
  if (e != cudaSuccess)
    *p = nullptr;
  return e;
}

cudaError_t ist_cuda_launch_gate(void) {
  return fault_gate(IMGSTAT_GPU_FAULT_LAUNCH, cudaErrorLaunchOutOfResources);
}

const char *ist_cuda_fault_problem(void) {
  const FaultSwitch &f = fault_switch();
  return f.valid ? nullptr : f.problem;
}
