/*
 * Histograms, percentiles and normalization on the GPU: the C API.
 * Implemented in cuda/histogram.cu and cuda/normalize.cu when imgstat is
 * built with CUDA, and by src/norm_gpu_none.c (IMGSTAT_ERR_NODEVICE, "built
 * without CUDA support") otherwise. Never prints or exits.
 *
 * Every call takes the context made by imgstat_gpu_create (imgstat_cuda.h)
 * and runs on that context's current device. The results are the CPU
 * reference's (imgstat_norm.h): the same histogram counts, the same
 * percentiles (the device scan finds the bin, imgstat_percentile_value turns
 * it into the value), and the same output bytes for 8/16-bit input (the same
 * lookup tables) or for float input the same formulas (norm_map.h).
 */
#ifndef IMGSTAT_CUDA_NORM_H
#define IMGSTAT_CUDA_NORM_H

#include "imgstat_cuda.h"
#include "imgstat_norm.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The histogram of channel c of img, computed on the device (per-block
 * shared-memory bins merged with integer atomics for u8; warp-aggregated
 * 64-bit atomics for u16 and f32, whose bins do not fit shared memory), into
 * *h (allocated here, free with imgstat_histogram_free); counts identical to
 * imgstat_histogram_compute with the same opts (may be NULL). When np > 0,
 * also the percentiles p[0..np-1] by the rank rule, found by an inclusive
 * scan of the counts on the device, into values[0..np-1] (left alone when the
 * channel has no finite sample; *h->total says so).
 */
imgstat_status imgstat_gpu_histogram(imgstat_gpu *gpu, const imgstat_image *img,
                                     int c, const imgstat_hist_options *opts,
                                     const double *p, int np, double *values,
                                     imgstat_histogram *h, imgstat_error *err);

/*
 * The whole normalization on the device: uploads img once, measures what
 * opts needs (integer images: everything from device histograms, so min,
 * max, mean and std are exact and equal to the CPU's; float images: finite
 * range and histograms here, mean/std from imgstat_gpu_stats), makes the plan
 * with imgstat_norm_plan_make, applies it in one fused pass and copies the
 * result into *out (allocated here; free with imgstat_image_free). When m or
 * plan are not NULL they receive the measurements and the plan used.
 */
imgstat_status imgstat_gpu_normalize(imgstat_gpu *gpu, const imgstat_image *img,
                                     const imgstat_norm_options *opts,
                                     imgstat_norm_measure *m,
                                     imgstat_norm_plan *plan,
                                     imgstat_image *out, imgstat_error *err);

/* Applies a given plan (made by either backend) on the device: for tests,
 * which check byte identity with imgstat_norm_apply_cpu on the same plan. */
imgstat_status imgstat_gpu_norm_apply(imgstat_gpu *gpu, const imgstat_image *in,
                                      const imgstat_norm_plan *plan,
                                      imgstat_image *out, imgstat_error *err);

/* Kernel timings of a synthetic 8-bit RGB image of width x height (random
 * values), for `imgstat bench`: the fused minmax pass (RGB8 -> RGB8) and
 * the histogram of all three planes, each the median of `runs` runs by CUDA
 * events after a warm-up, with the bytes each must move, and the
 * device-to-device copy of the same image as the bandwidth reference. */
typedef struct imgstat_gpu_norm_timing {
  double normalize_ms;
  uint64_t normalize_bytes; /* read + written */
  double histogram_ms;
  uint64_t histogram_bytes; /* read */
  int histogram_ok;         /* counts equal to the CPU's */
  double histogram_alt_ms;  /* the same with warp-aggregated global atomics */
  int histogram_alt_ok;
  double scan_ms;      /* scan + percentile search, 65536 bins */
  double copy_ms;      /* cudaMemcpy device to device of the image */
  uint64_t copy_bytes; /* read + written */
  int checked_ok;      /* output equal to the CPU's on the same plan */
} imgstat_gpu_norm_timing;

imgstat_status imgstat_gpu_norm_bench(imgstat_gpu *gpu, uint32_t width,
                                      uint32_t height, int runs,
                                      imgstat_gpu_norm_timing *t,
                                      imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_CUDA_NORM_H */
