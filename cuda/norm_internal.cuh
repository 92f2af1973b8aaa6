/*
 * Internal interface of cuda/histogram.cu and cuda/normalize.cu, for each
 * other and for the benchmark (programs/bench/): the histogram, percentile and
 * normalize launches on device pointers and a stream (cudaError_t), and the
 * histogram with percentiles on a slot of the context (imgstat_error).
 * Kernels know nothing of allocation; the slot's buffers (context.cuh) are
 * what the C API functions use.
 */
#ifndef IMGSTAT_NORM_INTERNAL_CUH
#define IMGSTAT_NORM_INTERNAL_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "context.cuh"
#include "imgstat/cuda_norm.h"
#include "reduce.cuh"

namespace ist_norm_gpu {

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
 * exactly as the CPU does. u8 planes at 16-byte boundaries are read 16 bytes
 * at a time, others sample by sample.
 */
cudaError_t hist_launch(const void *d_plane, imgstat_sample sample, uint64_t n,
                        uint32_t bins, double lo, double scale,
                        unsigned long long *d_bins,
                        unsigned long long *d_special, int sm_count,
                        cudaStream_t stream);

/*
 * Batched u8 histograms: the planes of many images (segments, reduce.cuh,
 * with nblocks = hist_u8_segment_blocks of their samples) in one launch;
 * segment k's 256 counts are added into d_bins + 256 k (64-bit, not
 * cleared here). Each equals hist_launch's counts of that plane alone
 * (integer counts: exact, whatever the blocks).
 */
uint64_t hist_u8_segment_blocks(uint64_t n, int sm_count);
cudaError_t hist_u8_segments_launch(const ist_segment *d_seg, int nseg,
                                    uint64_t total_blocks,
                                    unsigned long long *d_bins,
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
 * The histogram of one device plane (or of several added, for --linked:
 * planes[0..nplanes-1], each of n samples) with percentiles p[0..np-1], on
 * the slot's stream and buffers: the counts copied into *h (allocated by
 * the caller with imgstat_histogram_alloc) when want_counts, the
 * percentiles into values (*has_values: the planes had a finite sample).
 */
imgstat_status hist_percentiles(ist_slot *s, int sm_count,
                                const void *const *d_planes, int nplanes,
                                uint64_t n, imgstat_histogram *h,
                                int want_counts, const double *p, int np,
                                double *values, int *has_values,
                                imgstat_error *err);

/* What the fused normalize pass needs: per output channel its input plane,
 * output plane, lookup table (integer input) or map (float input). N: the
 * channels it holds (every channel on the host; one launch's on the
 * device, a kernel's parameters being small). */
template <int N> struct ApplyParamsN {
  const void *in[N];
  void *out[N];
  const void *lut[N];
  int kind[N];
  double a[N];
  double b[N];
  uint64_t n;
  uint32_t out_max;
  int vectors; /* set by apply_launch: every plane at a 16-byte boundary */
};
/* Channels one launch of the pass takes; more take several launches. */
#define IST_APPLY_GROUP IMGSTAT_INLINE_CHANNELS
using ApplyParams = ApplyParamsN<IMGSTAT_MAX_CHANNELS>;
using ApplyGroup = ApplyParamsN<IST_APPLY_GROUP>;

/* Launches the fused pass over `channels` output channels (blockIdx.y),
 * from `in` samples to `out` samples; 16-byte loads and stores when every
 * plane allows them, sample by sample otherwise. */
cudaError_t apply_launch(const ApplyParams &p, imgstat_sample in,
                         imgstat_sample out, int channels, int sm_count,
                         cudaStream_t stream);

} // namespace ist_norm_gpu

#endif /* IMGSTAT_NORM_INTERNAL_CUH */
