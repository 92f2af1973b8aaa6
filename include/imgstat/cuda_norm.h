/*
 * Histograms, percentiles and normalization on the GPU: the C API.
 * Implemented in cuda/histogram.cu and cuda/normalize.cu when imgstat is
 * built with CUDA, and by src/nocuda/norm_gpu_none.c (IMGSTAT_ERR_NODEVICE,
 * "built without CUDA support") otherwise. Never prints or exits.
 *
 * Every call takes the context made by imgstat_gpu_create (imgstat_cuda.h)
 * and runs on the context's device and a slot's stream and buffers. The
 * functions on a host image upload it (the histogram: channel c only), run
 * the operation and release it; the imgstat_gpu_image_ forms work on a
 * device image and upload nothing. The results are the CPU
 * reference's (imgstat_norm.h): the same histogram counts, the same
 * percentiles (the device scan finds the bin, imgstat_percentile_value turns
 * it into the value), and the same output bytes for 8/16-bit input (the same
 * lookup tables) or for float input the same formulas (norm_map.h).
 */
#ifndef IMGSTAT_CUDA_NORM_H
#define IMGSTAT_CUDA_NORM_H

#include "imgstat/cuda.h"
#include "imgstat/norm.h"

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

/* ---- on a device image (imgstat_cuda.h): no upload -------------------- */

/* imgstat_gpu_histogram on channel c of a device image. */
imgstat_status imgstat_gpu_image_histogram(imgstat_gpu *gpu,
                                           imgstat_gpu_image *dimg, int c,
                                           const imgstat_hist_options *opts,
                                           const double *p, int np,
                                           double *values, imgstat_histogram *h,
                                           imgstat_error *err);

/* imgstat_gpu_normalize on a device image; *out is a host image. */
imgstat_status
imgstat_gpu_image_normalize(imgstat_gpu *gpu, imgstat_gpu_image *dimg,
                            const imgstat_norm_options *opts,
                            imgstat_norm_measure *m, imgstat_norm_plan *plan,
                            imgstat_image *out, imgstat_error *err);

/* imgstat_gpu_norm_apply on a device image. */
imgstat_status imgstat_gpu_image_norm_apply(imgstat_gpu *gpu,
                                            imgstat_gpu_image *dimg,
                                            const imgstat_norm_plan *plan,
                                            imgstat_image *out,
                                            imgstat_error *err);

/* The measuring and planning of imgstat_gpu_image_normalize without the
 * pass: the plan (and measurements, when m is not NULL) it would apply. */
imgstat_status imgstat_gpu_image_norm_plan(
    imgstat_gpu *gpu, imgstat_gpu_image *dimg, const imgstat_norm_options *opts,
    imgstat_norm_measure *m, imgstat_norm_plan *plan, imgstat_error *err);

/* imgstat_gpu_image_norm_apply with the output left on the device, in
 * d_out (memory of the context's device, e.g. from imgstat_gpu_malloc, of
 * width * height * plan->channels_out output samples): planes back to
 * back (interleaved 0: HW or CHW) or interleaved pixels (1: HWC). The
 * bytes are those imgstat_gpu_image_norm_apply copies to the host. Returns
 * when the output is written (the slot's stream synchronized), so any
 * stream may read it then. */
imgstat_status
imgstat_gpu_image_norm_apply_device(imgstat_gpu *gpu, imgstat_gpu_image *dimg,
                                    const imgstat_norm_plan *plan, void *d_out,
                                    int interleaved, imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_CUDA_NORM_H */
