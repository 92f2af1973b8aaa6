/*
 * Internal interface between cuda/histogram.cu and cuda/normalize.cu:
 * device buffers and the histogram / percentile launches (errors are mapped
 * by ist_cuda_fail, cuda_check.cuh).
 * Kernels know nothing of allocation; the functions here take device
 * pointers and a stream and return cudaError_t; the C API functions turn
 * those into imgstat_error messages.
 */
#ifndef IMGSTAT_NORM_INTERNAL_CUH
#define IMGSTAT_NORM_INTERNAL_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_check.cuh"
#include "imgstat_cuda_norm.h"

namespace ist_norm_gpu {

/* A device allocation freed when it goes out of scope. */
struct DevBuf {
  void *p = nullptr;
  size_t bytes = 0;
  DevBuf() = default;
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  ~DevBuf() {
    if (p)
      (void)cudaFree(p);
  }
  cudaError_t alloc(size_t n) {
    if (p && bytes >= n)
      return cudaSuccess;
    if (p)
      (void)cudaFree(p);
    p = nullptr;
    bytes = 0;
    cudaError_t e = ist_cuda_malloc(&p, n ? n : 1);
    if (e == cudaSuccess)
      bytes = n;
    return e;
  }
  template <typename T> T *as() const { return static_cast<T *>(p); }
};

/* Planes on the device start at 256-byte boundaries so the kernels can use
 * 16-byte vector loads and stores from the first sample. */
inline size_t plane_slot(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

/* Where the bin holding one rank is: what imgstat_percentile_value needs. */
struct RankHit {
  unsigned long long cum_before;
  unsigned long long count;
  unsigned int bin;
  unsigned int pad;
};

/*
 * Adds the histogram of one plane of n samples into d_bins (bins entries,
 * 64-bit counters, not cleared here) and, for f32, its NaN / Inf counts into
 * d_special[0] / d_special[1]. f32 bins follow imgstat_histogram's rule with
 * lo and scale = bins / (hi - lo) (0 when hi == lo) computed by the caller
 * exactly as the CPU does. d_plane must be 16-byte aligned.
 */
cudaError_t hist_launch(const void *d_plane, imgstat_sample sample, uint64_t n,
                        uint32_t bins, double lo, double scale,
                        unsigned long long *d_bins,
                        unsigned long long *d_special, int sm_count,
                        cudaStream_t stream);

/* The alternative 8-bit histogram, timed against hist_launch's by the
 * benchmark: warp-aggregated global atomics (the 16-bit kernel's way)
 * instead of per-warp shared-memory bins. */
cudaError_t hist_launch_u8_atomics(const uint8_t *d_plane, uint64_t n,
                                   unsigned long long *d_bins, int sm_count,
                                   cudaStream_t stream);

/* Bytes of scratch hist_ranks needs for `bins` bins (CUB's scan storage plus
 * the cumulative counts). */
size_t hist_ranks_scratch(uint32_t bins);

/*
 * The inclusive scan of d_bins on the device (CUB DeviceScan) and, for each
 * of the nr ranks in d_ranks (1-based, <= total), the bin holding it found by
 * binary search, into d_hits. d_scratch holds hist_ranks_scratch(bins)
 * bytes.
 */
cudaError_t hist_ranks(const unsigned long long *d_bins, uint32_t bins,
                       const unsigned long long *d_ranks, int nr,
                       RankHit *d_hits, void *d_scratch, cudaStream_t stream);

/*
 * The histogram of channel c (or of several channels added, for --linked:
 * planes[0..nplanes-1]) with percentiles p[0..np-1]: the counts copied into
 * *h (allocated by the caller with imgstat_histogram_alloc) when want_counts,
 * the percentiles into values. Planes are device pointers of n samples.
 */
imgstat_status hist_percentiles(const void *const *d_planes, int nplanes,
                                uint64_t n, imgstat_histogram *h,
                                int want_counts, const double *p, int np,
                                double *values, int *has_values, int sm_count,
                                cudaStream_t stream, imgstat_error *err);

/* The statistics partial of one device plane (the fused reduction of
 * cuda/reduce.cuh, kernel fast), copied to the host. */
imgstat_status device_stats(const void *d_plane, imgstat_sample sample,
                            uint64_t n, imgstat_partial *out,
                            cudaStream_t stream, imgstat_error *err);

/* Multiprocessors of the current device (for grid sizes). */
int current_sm_count();

} // namespace ist_norm_gpu

#endif /* IMGSTAT_NORM_INTERNAL_CUH */
