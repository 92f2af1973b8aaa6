/*
 * The per-sample normalization formulas, written once and compiled both by
 * the C compiler (src/normalize.c) and by nvcc (cuda/normalize.cu), so that
 * the two backends evaluate literally the same expressions.
 *
 * Why these are identical on both sides: every step is one IEEE double
 * operation (subtract, divide, multiply) correctly rounded on the CPU (SSE2,
 * C11 mode: no contraction) and on the GPU (no a*b+c pattern appears, so nvcc
 * cannot fuse into an FMA; double division is IEEE-rounded by default), and
 * rint() rounds half to even on both. Integer inputs never come here per
 * sample: they go through a lookup table built on the host with exact integer
 * arithmetic (imgstat_norm_plan_lut), which both backends apply.
 *
 * Private header: not installed.
 */
#ifndef IMGSTAT_NORM_MAP_H
#define IMGSTAT_NORM_MAP_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define IMGSTAT_MAP_FN __host__ __device__ static inline
#else
#define IMGSTAT_MAP_FN static inline
#endif

/* Same values as imgstat_map_kind in imgstat_norm.h. */
#define IMGSTAT_MAPK_CONVERT 0
#define IMGSTAT_MAPK_STRETCH 1
#define IMGSTAT_MAPK_STANDARDIZE 2

/* f32 input, f32 output. NaN and +-Inf pass through unchanged. */
IMGSTAT_MAP_FN float ist_map_f32_f32(float x, int kind, double a, double b) {
  if (!isfinite(x))
    return x;
  if (kind == IMGSTAT_MAPK_STRETCH) {
    /* x at or below lo gives +0 (as ist_map_f32_int's 0): -0 at lo = +0
     * would otherwise give -0 / (hi - lo) = -0 */
    if (x < a || (x <= a && b > a))
      return 0.0f;
    if (x > b)
      return 1.0f;
    if (b > a) {
      double t = ((double)x - a) / (b - a);
      return (float)t;
    }
    return x; /* constant range: depth conversion, the identity here */
  }
  if (kind == IMGSTAT_MAPK_STANDARDIZE) {
    if (b > 0.0)
      return (float)(((double)x - a) / b);
    return 0.0f;
  }
  return x;
}

/* f32 input, integer output of full scale m (255 or 65535). Float's nominal
 * range is [0, 1]: CONVERT clamps to it and scales. NaN gives 0, +Inf m,
 * -Inf 0. The result is rint(t * m), t in [0, 1], half to even. */
IMGSTAT_MAP_FN uint32_t ist_map_f32_int(float x, int kind, double a, double b,
                                        uint32_t m) {
  if (isnan(x))
    return 0;
  if (isinf(x))
    return x > 0 ? m : 0;
  double t;
  if (kind == IMGSTAT_MAPK_STRETCH && b > a) {
    if (x <= a)
      return 0;
    if (x >= b)
      return m;
    t = ((double)x - a) / (b - a);
  } else if (kind == IMGSTAT_MAPK_STRETCH && x < a) {
    return 0;
  } else if (kind == IMGSTAT_MAPK_STRETCH && x > b) {
    return m;
  } else {
    /* CONVERT, or a constant range (a == b == x) */
    t = x < 0.0f ? 0.0 : (x > 1.0f ? 1.0 : (double)x);
  }
  return (uint32_t)rint(t * (double)m);
}

#include "imgstat/norm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The measurements of minmax and zscore from the partials of every channel,
 * whichever backend computed them (src/norm/normalize.c): range, mean and
 * population std, linked across channels when o asks. */
void ist_norm_measure_from_partials(const imgstat_partial *p, int channels,
                                    imgstat_sample sample, uint32_t width,
                                    const imgstat_norm_options *o,
                                    imgstat_norm_measure *m);

/* Allocates the output image of a plan for a width x height input (dense,
 * the plan's channels and sample type, the input's format name). */
imgstat_status ist_norm_out_alloc(const imgstat_norm_plan *plan, uint32_t width,
                                  uint32_t height, const char *format,
                                  imgstat_image *out, imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_NORM_MAP_H */
