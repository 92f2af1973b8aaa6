/*
 * CUDA errors, the fault-injection gates and the one buffer helper: the
 * internal interface every file of cuda/ uses, implemented in
 * cuda/cuda_check.cu.
 *
 *  - ist_cuda_fail is the one place where a cudaError_t becomes an
 *    imgstat_error (status, message).
 *  - Every device or pinned allocation goes through ist_cuda_alloc (through
 *    the buffer helper ist_devbuf / ist_pinbuf below), and every kernel
 *    launch is preceded by ist_cuda_launch_gate. They count the events for
 *    IMGSTAT_GPU_FAULT (cuda/gpu_fault.h, docs/gpu.md): the chosen event
 *    fails with the error a real failure gives (cudaErrorMemoryAllocation
 *    for an allocation, cudaErrorLaunchOutOfResources for a launch) without
 *    calling CUDA, so the context stays as usable as after a real failure
 *    of that kind.
 */
#ifndef IMGSTAT_CUDA_CHECK_CUH
#define IMGSTAT_CUDA_CHECK_CUH

#include <cuda_runtime.h>
#include <stddef.h>

#include "imgstat/imgstat.h"

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

/* cudaMallocHost (pinned) or cudaMalloc, through the fault counter. *p is
 * nullptr on failure. Called by the buffer helper only. */
cudaError_t ist_cuda_alloc(bool pinned, void **p, size_t bytes);

/* Called right before each kernel launch (and before each library call
 * that launches, like CUB's): cudaSuccess, or the injected launch error, in
 * which case the caller returns it and launches nothing. */
cudaError_t ist_cuda_launch_gate(void);

/* Called at each point of a device's start-up (IST_GPU_START_*,
 * gpu_fault.h): cudaSuccess, or cudaErrorMemoryAllocation when
 * IMGSTAT_GPU_FAULT=start:POINT[:N] names this passage, in which case the
 * caller fails that step of the start-up through ist_cuda_fail (its message
 * then says the fault was injected) without calling CUDA or nvJPEG. */
cudaError_t ist_cuda_start_gate(int point);

/* NULL, or why IMGSTAT_GPU_FAULT is malformed (imgstat_gpu_create then
 * fails with this message rather than ignore the switch). */
const char *ist_cuda_fault_problem(void);

/* Evaluates a cudaError_t expression; on failure returns ist_cuda_fail's
 * status from the enclosing function (which has an imgstat_error *err). */
#define IST_CUDA_TRY(call, what)                                               \
  do {                                                                         \
    cudaError_t ist_e_ = (call);                                               \
    if (ist_e_ != cudaSuccess)                                                 \
      return ist_cuda_fail(err, ist_e_, what);                                 \
  } while (0)

/*
 * The buffer helper: device memory (ist_devbuf) or pinned host memory
 * (ist_pinbuf). reserve(n) makes it hold at least n bytes: it keeps the
 * buffer when it is large enough, else frees it and allocates n bytes
 * (contents are not kept), through the fault counter. It never shrinks;
 * the owner's destructor (or release()) frees it. The context keeps one per
 * purpose and slot, so an image reuses what the previous one grew.
 */
template <bool Pinned> struct ist_buffer {
  void *p = nullptr;
  size_t bytes = 0;
  ist_buffer() = default;
  ist_buffer(const ist_buffer &) = delete;
  ist_buffer &operator=(const ist_buffer &) = delete;
  ~ist_buffer() { (void)release(); }

  cudaError_t reserve(size_t n) {
    if (n == 0)
      n = 1;
    if (p && bytes >= n)
      return cudaSuccess;
    cudaError_t e = release();
    if (e == cudaSuccess)
      e = ist_cuda_alloc(Pinned, &p, n);
    if (e == cudaSuccess)
      bytes = n;
    return e;
  }
  cudaError_t release() {
    cudaError_t e = cudaSuccess;
    if (p)
      e = Pinned ? cudaFreeHost(p) : cudaFree(p);
    p = nullptr;
    bytes = 0;
    return e;
  }
  template <typename T> T *as(size_t byte_offset = 0) const {
    return reinterpret_cast<T *>(static_cast<unsigned char *>(p) + byte_offset);
  }
};
using ist_devbuf = ist_buffer<false>;
using ist_pinbuf = ist_buffer<true>;

/* Device planes start at 256-byte boundaries, so that the kernels can use
 * 16-byte vector loads and stores from their first sample. */
inline size_t ist_align256(size_t bytes) {
  return (bytes + 255) & ~(size_t)255;
}

#endif /* IMGSTAT_CUDA_CHECK_CUH */
