/*
 * imgstat: histograms, percentiles and the figures of a histogram (CPU
 * reference; src/hist/).
 *
 * Public C API, same rules as imgstat.h: nothing here prints, exits or
 * aborts; every function that can fail returns an imgstat_status and fills a
 * caller-owned imgstat_error. The GPU's histograms (imgstat/cuda.h) give the
 * same counts. The rules (bins, the rank rule of percentiles) are stated
 * once, in docs/normalize.md.
 */
#ifndef IMGSTAT_HIST_H
#define IMGSTAT_HIST_H

#include "imgstat/imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- histograms ---------------------------------------------------------- */

/* Bins of a float histogram unless the caller asks otherwise. */
#define IMGSTAT_FLOAT_BINS_DEFAULT 65536u
#define IMGSTAT_FLOAT_BINS_MAX (1u << 24)

/*
 * The histogram of one channel (or of several, merged).
 *  - u8:  256 bins, bin v counts the samples equal to v (lo 0, hi 255).
 *  - u16: 65536 bins, one per value (lo 0, hi 65535).
 *  - f32: `bins` equal bins over [lo, hi] = [min, max] of the finite samples;
 *    a finite x goes to bin floor((x - lo) * (bins / (hi - lo))) evaluated
 *    in double, clamped to bins - 1 (so x == hi lands in the last bin); when
 *    hi == lo every finite sample is in bin 0. NaN and +-Inf are only counted.
 * `total` is the number of samples in the bins (every sample for integers,
 * the finite ones for f32). counts is owned by the histogram.
 * used_lo and used_end are a hint on the occupied bins: when used_end > 0,
 * every bin outside [used_lo, used_end) is zero (those inside may be zero
 * too); used_end 0, as allocated, says nothing. imgstat_histogram_find_used
 * sets it; the functions below that walk the bins (figures, percentiles,
 * rebinning, adding) read only those (a 16-bit CT slice occupies some
 * 2,600 of 65,536). Whoever changes counts otherwise keeps the hint true or
 * sets used_end to 0.
 */
typedef struct imgstat_histogram {
  imgstat_sample sample;
  uint32_t bins;
  double lo;
  double hi;
  uint64_t *counts;
  uint64_t total;
  uint64_t nan_count;
  uint64_t inf_count;
  uint32_t used_lo;
  uint32_t used_end;
} imgstat_histogram;

/* The bins of h to walk: [*lo, *end), its hint when it has a sound one
 * (used_lo < used_end <= bins), else every bin. */
static inline void imgstat_histogram_used(const imgstat_histogram *h,
                                          uint32_t *lo, uint32_t *end) {
  if (h->used_end > h->used_lo && h->used_end <= h->bins) {
    *lo = h->used_lo;
    *end = h->used_end;
  } else {
    *lo = 0;
    *end = h->bins;
  }
}

/* The bin of a finite f32 sample x by the rule above, with
 * scale = bins / (hi - lo) (0 when hi == lo) and last = bins - 1: the one
 * home of that rule for the CPU's histograms and the dataset's second read
 * of the samples in given bins (imgstat_dataset_float_exact). */
static inline uint32_t imgstat_histogram_f32_bin(double lo, double scale,
                                                 uint32_t last, float x) {
  double t = ((double)x - lo) * scale;
  return t <= 0.0 ? 0 : (t >= (double)last ? last : (uint32_t)t);
}

/* Options for computing a histogram. */
typedef struct imgstat_hist_options {
  uint32_t float_bins; /* f32 only; 0: IMGSTAT_FLOAT_BINS_DEFAULT */
  int have_range;      /* f32 only: use [lo, hi] instead of the channel's */
  double lo;           /* finite, lo <= hi; samples outside are clamped to */
  double hi;           /* the first / last bin */
} imgstat_hist_options;

/* Allocates an empty histogram for `sample` (bins ignored for u8/u16; 0 for
 * f32 means the default) over [lo, hi] (ignored for u8/u16). On failure h is
 * left empty. Free with imgstat_histogram_free. */
imgstat_status imgstat_histogram_alloc(imgstat_histogram *h,
                                       imgstat_sample sample, uint32_t bins,
                                       double lo, double hi,
                                       imgstat_error *err);

/* Frees the counts; safe on a zeroed or already freed histogram. */
void imgstat_histogram_free(imgstat_histogram *h);

/* The finite [min, max] of one f32 plane of n samples; returns 0 when the
 * plane has no finite sample (then *lo = *hi = 0). */
int imgstat_plane_finite_range(const float *plane, uint64_t n, double *lo,
                               double *hi);

/* The same over channel c of an f32 image (rows at its stride). */
int imgstat_image_finite_range(const imgstat_image *img, int c, double *lo,
                               double *hi);

/* Computes the histogram of channel c of img on the CPU into *h (allocated
 * here, with its hint on the occupied bins; free with
 * imgstat_histogram_free). opts may be NULL. */
imgstat_status imgstat_histogram_compute(const imgstat_image *img, int c,
                                         const imgstat_hist_options *opts,
                                         imgstat_histogram *h,
                                         imgstat_error *err);

/* Sets h's hint on its occupied bins (used_lo, used_end) from its counts:
 * the first and one past the last non-zero bin; none (used_end 0) when
 * every bin is zero. */
void imgstat_histogram_find_used(imgstat_histogram *h);

/* Adds b's counts into a. Both must have the same sample type, bins and
 * range (IMGSTAT_ERR_ARG otherwise). a's hint on its occupied bins covers
 * b's after (none when either has none). */
imgstat_status imgstat_histogram_add(imgstat_histogram *a,
                                     const imgstat_histogram *b,
                                     imgstat_error *err);

/* ---- percentiles ----------------------------------------------------------
 */

/*
 * The rank rule: for p in [0, 100] over N samples, the value reported is the
 * smallest sample value v whose cumulative count reaches
 * k = max(1, ceil(p * N / 100)) (nearest rank; p = 0 gives the minimum,
 * p = 100 the maximum, p = 50 the lower median). p is taken to a millionth of
 * a percent (rounded to nearest) so that k is exact integer arithmetic.
 * Returns 0 when N == 0.
 */
uint64_t imgstat_percentile_rank(uint64_t total, double p);

/* The value at rank k (1 <= k <= total) given the bin b that holds it
 * (cum_before < k <= cum_before + count_b). Exact for integer histograms (the
 * bin's value); for f32 linearly interpolated inside the bin:
 * lo + (b + (k - cum_before - 0.5) / count_b) * width, clamped to the bin and
 * to [lo, hi], with k == 1 giving lo and k == total giving hi exactly. The
 * GPU uses this same function on what its device scan found. */
double imgstat_percentile_value(const imgstat_histogram *h, uint64_t k,
                                uint32_t b, uint64_t cum_before,
                                uint64_t count_b);

/* The value at percentile p (0..100) of h by the rank rule, from its
 * cumulative sum. Returns 0 and leaves *value alone when h is empty, 1
 * otherwise. */
int imgstat_histogram_percentile(const imgstat_histogram *h, double p,
                                 double *value);

/* ---- figures from a histogram (for imgstat --histogram) ---------------------
 */

#define IMGSTAT_MAX_PERCENTILES 16

typedef struct imgstat_hist_figures {
  int has_values; /* total > 0 */
  double median;  /* percentile 50 by the rank rule */
  int npercentiles;
  double percentile_p[IMGSTAT_MAX_PERCENTILES];
  double percentile[IMGSTAT_MAX_PERCENTILES];
  double entropy;  /* bits, -sum p_i log2 p_i over the histogram's bins */
  int has_shape;   /* variance > 0: skewness and kurtosis are defined */
  double skewness; /* m3 / m2^1.5 (population, as scipy.stats.skew) */
  double kurtosis; /* m4 / m2^2 - 3 (excess, as scipy.stats.kurtosis) */
} imgstat_hist_figures;

/* Central moments of a channel, for skewness and kurtosis. For u8/u16 they
 * are computed from the histogram (exact integer mean, then double sums over
 * the bins); for f32 from the samples (two passes, finite samples only). */
typedef struct imgstat_moments {
  uint64_t count;
  double mean;
  double m2, m3, m4; /* sums of (x - mean)^k / count */
} imgstat_moments;

/* Moments of channel c of an f32 image (finite samples). */
void imgstat_moments_f32(const float *plane, uint64_t n, imgstat_moments *m);

/* The same over channel c of an f32 image (rows at its stride; the sums in
 * raster order, so a strided image has its dense copy's bits). */
void imgstat_image_moments_f32(const imgstat_image *img, int c,
                               imgstat_moments *m);

/* Moments from an integer histogram (u8/u16). */
void imgstat_moments_from_histogram(const imgstat_histogram *h,
                                    imgstat_moments *m);

/* Fills f from a histogram, the moments of the same channel, and the
 * requested percentiles (np <= IMGSTAT_MAX_PERCENTILES). */
void imgstat_hist_figures_compute(const imgstat_histogram *h,
                                  const imgstat_moments *m, const double *p,
                                  int np, imgstat_hist_figures *f);

/* Re-bins a histogram into `bins` display bins (bins >= 1): display bin j
 * holds source bins [j * src / bins, (j + 1) * src / bins). out must hold bins
 * entries. */
void imgstat_histogram_rebin(const imgstat_histogram *h, uint32_t bins,
                             uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_HIST_H */
