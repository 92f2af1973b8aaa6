/*
 * imgstat's device reductions: the internal C++ interface of cuda/.
 *
 * Layers: kernels (ladder.cu: the classic ladder 1..7; fast.cu: the fused
 * bandwidth kernel) know nothing of allocation; the multi-pass driver
 * (driver.cu) sizes scratch and launches pass after pass until one block is
 * left; gpu_backend.cu turns images into calls of the driver.
 *
 * Everything returns a cudaError_t (cudaSuccess, the error of a failed CUDA
 * call or launch, or cudaErrorInvalidValue for bad arguments); nothing prints.
 * Results are identical run to run: every reduction runs in a fixed order and
 * no floating-point atomics are used; float planes follow the canonical order
 * of src/core/float_order.h, so their results equal the CPU backend's bits.
 *
 * Scratch follows CUB's habit: call with d_scratch == nullptr and only
 * *scratch_bytes is set (nothing is launched; the current device's
 * multiprocessor count is read); call again, on the same device, with at
 * least that many bytes of device memory (256-byte aligned, as cudaMalloc
 * returns). The scratch may be reused once the stream has finished.
 */
#ifndef IMGSTAT_REDUCE_CUH
#define IMGSTAT_REDUCE_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "imgstat/cuda.h"
#include "imgstat/imgstat.h"
#include "merge.h"

/* Ladder block sizes: a power of two in [64, 1024]; 0 picks the default. */
#define IMGSTAT_LADDER_BLOCK_MIN 64
#define IMGSTAT_LADDER_BLOCK_MAX 1024
#define IMGSTAT_LADDER_BLOCK_DEFAULT 256

/* ---- the interface the benchmark and the backend use --------------------- */

/*
 * Sum of n 32-bit ints into one 64-bit integer at d_out (device memory).
 * kernel: IMGSTAT_KERNEL_FAST (0) or 1..7 (the ladder). block_size: threads
 * per block for the ladder (0: default); the fast kernel uses its own policy
 * and ignores it. n may be 0 (the sum is then 0).
 */
cudaError_t ist_reduce_sum_i32(int kernel, const int *d_in, uint64_t n,
                               int block_size, void *d_scratch,
                               size_t *scratch_bytes, long long *d_out,
                               cudaStream_t stream);

/*
 * Fused statistics of `channels` planes of n samples each, laid one after
 * another from d_planes (plane c starts at d_planes + c * n * sample bytes;
 * any alignment). Writes one imgstat_partial per channel to d_out (device
 * memory), with the same meaning as imgstat_partial_scan's: indices reported
 * are first_index + offset in the plane. kernel and block_size as above.
 * n == 0 gives empty partials.
 */
cudaError_t ist_reduce_stats(int kernel, int block_size, const void *d_planes,
                             imgstat_sample sample, uint64_t n,
                             uint32_t channels, uint64_t first_index,
                             void *d_scratch, size_t *scratch_bytes,
                             imgstat_partial *d_out, cudaStream_t stream);

/*
 * ist_reduce_stats of `channels` planes of n samples each, plane c at
 * d_planes + c * plane_stride samples (plane_stride >= n; e.g. planes
 * padded to 256-byte boundaries): one launch per pass for all of them, the
 * same partials as one call per plane. first_index 0.
 */
cudaError_t ist_reduce_stats_pitched(
    int kernel, const void *d_planes, uint64_t plane_stride,
    imgstat_sample sample, uint64_t n, uint32_t channels, void *d_scratch,
    size_t *scratch_bytes, imgstat_partial *d_out, cudaStream_t stream);

/*
 * The fused statistics of an interleaved image (HWC, dense: sample c of
 * pixel i at d_data + (i * channels + c) * sample bytes) without gathering
 * it into planes: one partial per channel at d_out, equal to what
 * ist_reduce_stats gives for that channel's plane (integer partials merge
 * exactly in any order; indices are pixel indices). Only where
 * ist_hwc_kernel_fits: u8 or u16 samples, 2 to 4 channels, d_data at a
 * 16-byte boundary; or f32 samples, 2 to 4 channels: the canonical order's
 * plane walk over each channel in place (its samples read C floats apart),
 * the same bits as the gathered planes'. Scratch as for
 * ist_reduce_stats.
 */
bool ist_hwc_kernel_fits(const void *d_data, imgstat_sample sample,
                         uint32_t channels);
cudaError_t ist_reduce_stats_hwc(const void *d_data, imgstat_sample sample,
                                 uint64_t npix, uint32_t channels,
                                 void *d_scratch, size_t *scratch_bytes,
                                 imgstat_partial *d_out, cudaStream_t stream);

/* ---- batched statistics (fast.cu) -----------------------------------------
 * The planes of many images reduced in one launch and folded in a second:
 * segment k is one dense plane of n samples with its own nblocks blocks
 * (ist_fast_segment_blocks of its bytes), numbered from first_block (the
 * segments in order, without gaps: first_block of k + 1 = first_block +
 * nblocks of k). d_partials holds one partial per block (total_blocks);
 * d_out one per segment, equal to what ist_reduce_stats with the fast
 * kernel gives for that plane alone (first_index 0). Integer samples (u8,
 * u16) only. */
struct ist_segment {
  const void *plane;
  uint64_t n;
  uint64_t first_block;
  uint64_t nblocks;
};

uint32_t ist_fast_segment_blocks(uint64_t bytes, int sm_count);

/* The segment that block `block` of a batched launch belongs to: a binary
 * search over first_block (segments in order, without gaps). */
__device__ inline int ist_segment_of(const ist_segment *seg, int nseg,
                                     uint64_t block) {
  int lo = 0, hi = nseg - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (seg[mid].first_block <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

cudaError_t ist_fast_stats_segments(imgstat_sample sample,
                                    const ist_segment *d_seg, int nseg,
                                    uint64_t total_blocks,
                                    imgstat_partial *d_partials,
                                    imgstat_partial *d_out, cudaStream_t s);

/* ist_reduce_stats of one f32 range of a plane (one channel) whose shift K
 * (ist_fo_plane_shift of the whole plane) is given: the mean of *d_out stays
 * relative to K. The range must start at a multiple of 2^k chunks of the
 * float order and hold at most 2^k chunks; the caller merges the ranges'
 * results by the chunk tree (ist_fo_stack) and adds K (ist_fo_add_shift). */
cudaError_t ist_reduce_stats_f32_range(const float *d_plane, uint64_t n,
                                       uint64_t first_index, double k,
                                       void *d_scratch, size_t *scratch_bytes,
                                       imgstat_partial *d_out,
                                       cudaStream_t stream);

/* Bytes the fast kernel's policy keeps in flight per thread, and its block
 * size (for reports). */
int ist_fast_block_size(void);
int ist_fast_bytes_per_thread(void);

/* ---- partial merge, shared by host and device --------------------------- */

/* The merge rule and the empty partial (ist_partial_empty) live in
 * src/core/merge.h, shared with the CPU; the kernels pick the sample kind at
 * compile time. */
template <bool IsFloat>
__host__ __device__ inline void ist_partial_combine(imgstat_partial *a,
                                                    const imgstat_partial *b) {
  ist_partial_merge(a, b, IsFloat);
}

/* ---- internal: what the driver asks of the kernels --------------------- */

/* A pass reads `n` items of each of `channels` channels (channel c at item
 * offset c * in_stride) and writes `grid` results per channel (channel c at
 * out + c * out_stride). Items are samples (pass 1) or partials (later). */
struct ist_pass {
  const void *in;
  uint64_t n;
  uint64_t in_stride; /* in items */
  uint32_t channels;
  uint64_t first_index; /* pass 1 only: index of the plane's first sample */
  void *out;
  uint64_t out_stride; /* in results */
  unsigned grid;       /* blocks per channel */
  /* f32: the plane's shift K (float_order.h): given (k_given) or picked
   * from the original planes (planes, plane_stride samples apart, plane_n
   * samples each) into k_dev; the last pass adds it back when add_k. */
  double k;
  int k_given;
  int add_k;
  /* f32 without k_given: the planes' K, one per channel, in device memory
   * (ist_f32_shifts wrote them before pass 1) */
  const double *k_dev;
  int last; /* this pass writes the final results */
  const void *planes;
  uint64_t plane_stride;
  uint64_t plane_n;
  /* f32 pass 1 and shifts: the distance of a plane's samples in samples (0
   * or 1: dense planes; C: the channels of an interleaved image, plane c
   * from sample c, in_stride and plane_stride 1) */
  uint32_t sample_stride;
};

/* Ladder (ladder.cu). Blocks per channel that kernel k with `block` threads
 * uses for n items (sm_count sizes kernel 7's grid). */
unsigned ist_ladder_grid(int kernel, int block, uint64_t n, int sm_count);
/* Pass over ints (samples) or 64-bit partial sums. */
cudaError_t ist_ladder_sum_i32(int kernel, int block, const ist_pass *p,
                               cudaStream_t s);
cudaError_t ist_ladder_sum_i64(int kernel, int block, const ist_pass *p,
                               cudaStream_t s);
/* Pass over samples (partials == 0) or imgstat_partial items (1). */
cudaError_t ist_ladder_stats(int kernel, int block, imgstat_sample sample,
                             int partials, const ist_pass *p, cudaStream_t s);

/* Fast kernel (fast.cu): pass 1 over samples / ints, and the fold of partials
 * that every later pass uses. f32 planes, whatever the kernel asked for, go
 * through the canonical order (float_order.h): pass 1 over ist_f32_grid
 * blocks writes one partial per chunk (ist_f32_chunks of them, at least
 * 1), which the fold's tree reduces. */
unsigned ist_fast_grid(uint64_t bytes, uint32_t channels, int sm_count);
/* planes: f32 planes (sample stride 1), their kernel's blocks a
 * multiprocessor (IMGSTAT_F32_BLOCKS_PER_SM) in grids of whole rounds where
 * IMGSTAT_FAST_BALANCE has them; else an interleaved image's channels, read
 * C floats apart, the strided kernel's (IMGSTAT_F32_STRIDED_BLOCKS_PER_SM)
 * on the full wave (faster for it: 1.31 against 1.67 x CUB on the H200) */
unsigned ist_f32_grid(uint64_t n, uint32_t channels, int sm_count, bool planes);
uint64_t ist_f32_chunks(uint64_t n);
unsigned ist_fold_grid(uint64_t n);
cudaError_t ist_fast_stats(imgstat_sample sample, const ist_pass *p,
                           cudaStream_t s);
cudaError_t ist_fast_sum_i32(const ist_pass *p, cudaStream_t s);
/* The interleaved kernel's pass 1 (ist_reduce_stats_hwc): p->in the image,
 * p->n its pixels, p->channels its channels (2..4), p->grid blocks (each
 * over every channel), results channel c at p->out + c * p->out_stride. */
unsigned ist_hwc_grid(imgstat_sample sample, uint64_t bytes, uint32_t channels,
                      int sm_count);
cudaError_t ist_hwc_stats(imgstat_sample sample, const ist_pass *p,
                          cudaStream_t s);
cudaError_t ist_fold_stats(imgstat_sample sample, const ist_pass *p,
                           cudaStream_t s);
cudaError_t ist_fold_sum_i64(const ist_pass *p, cudaStream_t s);
/* f32: the K of each of p->channels planes (p->planes, plane_stride samples
 * apart, plane_n samples each) into d_k[channel], one warp a plane. */
cudaError_t ist_f32_shifts(const ist_pass *p, double *d_k, cudaStream_t s);

#endif /* IMGSTAT_REDUCE_CUH */
