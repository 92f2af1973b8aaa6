/*
 * imgstat: histograms, percentiles and normalization (CPU reference).
 *
 * Public C API, same rules as imgstat.h: nothing here prints, exits or
 * aborts; every function that can fail returns an imgstat_status and fills a
 * caller-owned imgstat_error. The GPU versions live behind
 * cuda/imgstat_cuda_norm.h and produce the same results: integer histograms
 * and every 8/16-bit output byte-identical, float output within 1 ulp.
 *
 * The rules (rank rule, rounding, constant channels, float error bound) are
 * stated once, in docs/normalize.md, and implemented once, here and in the
 * private header norm_map.h that the CUDA code shares.
 */
#ifndef IMGSTAT_NORM_H
#define IMGSTAT_NORM_H

#include <signal.h>

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
} imgstat_histogram;

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
 * here; free with imgstat_histogram_free). opts may be NULL. */
imgstat_status imgstat_histogram_compute(const imgstat_image *img, int c,
                                         const imgstat_hist_options *opts,
                                         imgstat_histogram *h,
                                         imgstat_error *err);

/* Adds b's counts into a. Both must have the same sample type, bins and
 * range (IMGSTAT_ERR_ARG otherwise). */
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

/* ---- normalization --------------------------------------------------------
 */

typedef enum imgstat_norm_mode {
  IMGSTAT_NORM_MINMAX = 0, /* [min, max] -> full range of the output depth */
  IMGSTAT_NORM_CLIP,       /* [P_low, P_high] -> full range, saturating */
  IMGSTAT_NORM_ZSCORE,     /* (x - mean) / std, measured */
  IMGSTAT_NORM_GIVEN,      /* (x - mean) / std, given by the caller */
  IMGSTAT_NORM_RANGE       /* [low, high] given -> full range, saturating */
} imgstat_norm_mode;

typedef enum imgstat_alpha_mode {
  IMGSTAT_ALPHA_COPY = 0,  /* alpha depth-converted only (unchanged) */
  IMGSTAT_ALPHA_NORMALIZE, /* alpha treated like a colour channel (unlinked) */
  IMGSTAT_ALPHA_DROP       /* alpha left out of the output */
} imgstat_alpha_mode;

typedef struct imgstat_norm_options {
  imgstat_norm_mode mode;
  int linked;      /* minmax/clip: one range over the colour channels */
  double clip_low; /* clip: percentiles, 0 <= low <= high <= 100 */
  double clip_high;
  int nstats; /* given: 1 (for every channel) or one per channel */
  double mean[IMGSTAT_MAX_CHANNELS]; /* given: native units of the input */
  double std[IMGSTAT_MAX_CHANNELS];  /* given: > 0 */
  imgstat_sample out_sample; /* 0: the input's for minmax/clip, else F32 */
  imgstat_alpha_mode alpha;
  uint32_t float_bins; /* clip on f32: histogram bins (0: default) */
  /* range: [range_low, range_high] (range_low < range_high, finite) to the
   * full range of the output depth, saturating outside (ImageMagick's
   * -level); nothing is measured. */
  double range_low;
  double range_high;
  /* given and range: mean, std, range_low and range_high are in units of
   * the input's full scale (0..1 for 0..255 or 0..65535: torchvision's
   * ToTensor), so they are multiplied by 255 or 65535 for integer input;
   * float input is taken as it is. */
  int scale_unit;
  /* minmax, clip and zscore: when not NULL, every channel's figures come
   * from here (lo/hi, mean/std, has_values) and nothing is measured: one
   * plan for many images (normalize --dataset). In the input's units, or
   * in 0..1 of its full scale with scale_unit. Linking is the caller's. */
  const struct imgstat_norm_measure *measured;
} imgstat_norm_options;

/* What one output channel does with its input channel's samples. */
typedef enum imgstat_map_kind {
  IMGSTAT_MAP_CONVERT = 0, /* depth conversion only (see docs) */
  IMGSTAT_MAP_STRETCH,     /* [a, b] -> nominal range, saturating */
  IMGSTAT_MAP_STANDARDIZE  /* (x - a) / b; b == 0 gives 0 */
} imgstat_map_kind;

typedef struct imgstat_channel_map {
  imgstat_map_kind kind;
  double a;
  double b;
} imgstat_channel_map;

/* A normalization reduced to per-channel maps: what both backends apply. */
typedef struct imgstat_norm_plan {
  imgstat_sample in_sample;
  imgstat_sample out_sample;
  int channels_out;
  int source[IMGSTAT_MAX_CHANNELS]; /* input channel of each output channel */
  imgstat_channel_map map[IMGSTAT_MAX_CHANNELS];
} imgstat_norm_plan;

/* The statistics a plan is made from, per input channel. Which fields are
 * used depends on the mode: lo/hi (minmax: min/max; clip: the percentiles),
 * mean/std (zscore). has_values[c] is 0 for a channel with no finite sample. */
typedef struct imgstat_norm_measure {
  int has_values[IMGSTAT_MAX_CHANNELS];
  double lo[IMGSTAT_MAX_CHANNELS];
  double hi[IMGSTAT_MAX_CHANNELS];
  double mean[IMGSTAT_MAX_CHANNELS];
  double std[IMGSTAT_MAX_CHANNELS];
} imgstat_norm_measure;

/* 1 when channel c of an image of `channels` channels is alpha. */
int imgstat_channel_is_alpha(int channels, int c);

/* Checks opts against img (IMGSTAT_ERR_ARG with the reason). */
imgstat_status imgstat_norm_options_check(const imgstat_image *img,
                                          const imgstat_norm_options *opts,
                                          imgstat_error *err);

/* Measures what opts needs on the CPU (threads as for imgstat_cpu_stats).
 * With `linked`, every colour channel gets the linked range. */
imgstat_status imgstat_norm_measure_cpu(const imgstat_image *img,
                                        const imgstat_norm_options *opts,
                                        int threads, imgstat_norm_measure *m,
                                        imgstat_error *err);

/* Replaces lo/hi of every colour channel with values present by the [min of
 * the lo, max of the hi] over them (linked minmax). */
void imgstat_norm_measure_link(int channels, imgstat_norm_measure *m);

/* Turns options and measurements into a plan. m may be NULL for GIVEN. */
imgstat_status imgstat_norm_plan_make(const imgstat_image *img,
                                      const imgstat_norm_options *opts,
                                      const imgstat_norm_measure *m,
                                      imgstat_norm_plan *plan,
                                      imgstat_error *err);

/* Integer input only: the lookup table of output channel o, one entry per
 * input value (256 or 65536), holding the output sample as its bit pattern
 * (u8 / u16 / f32 bits) in a uint32. Both backends apply exactly this table,
 * which is why 8/16-bit input gives identical bytes. */
void imgstat_norm_plan_lut(const imgstat_norm_plan *plan, int o, uint32_t *lut);

/* Applies plan to in on the CPU; allocates *out (free with
 * imgstat_image_free): plan->channels_out planes of plan->out_sample. */
imgstat_status imgstat_norm_apply_cpu(const imgstat_image *in,
                                      const imgstat_norm_plan *plan,
                                      int threads, imgstat_image *out,
                                      imgstat_error *err);

/* ---- writing images --------------------------------------------------------
 */

typedef enum imgstat_file_format {
  IMGSTAT_FILE_AUTO = 0, /* from the name's extension */
  IMGSTAT_FILE_PNG,      /* u8 or u16, 1..4 channels */
  IMGSTAT_FILE_NPY,      /* any sample type: shape (H, W) or (H, W, C) */
  IMGSTAT_FILE_PFM       /* f32 (integers written as their values), 1 or 3 */
} imgstat_file_format;

/* The format named by path's extension (.png, .npy, .pfm; any case), or
 * IMGSTAT_FILE_AUTO when none matches. */
imgstat_file_format imgstat_file_format_from_path(const char *path);

/* The axes of a .npy file: (H, W, C) (a 1-channel image: (H, W)), or
 * channels first, (C, H, W) always (PyTorch's order). */
typedef enum imgstat_npy_layout {
  IMGSTAT_LAYOUT_HWC = 0,
  IMGSTAT_LAYOUT_CHW
} imgstat_npy_layout;

/* imgstat_write_options.png_level for the deflate level n (0..9). */
#define IMGSTAT_PNG_LEVEL(n) ((n) + 1)
/* The level when none is given (docs/benchmarks.md, "PNG levels"). */
#define IMGSTAT_PNG_DEFAULT_LEVEL 1

typedef struct imgstat_write_options {
  imgstat_file_format format; /* AUTO: from the extension */
  /* When not NULL and set non-zero (by a signal handler, say) the write
   * stops, removes its temporary file and fails with IMGSTAT_ERR_IO. */
  const volatile sig_atomic_t *cancel;
  /* When not NULL, *temp_path holds the path of the temporary file while it
   * exists (NULL otherwise), so that a signal handler can unlink() it before
   * the process dies. The writer blocks signals in its thread while it
   * creates, renames or removes the file, so the name and the file agree. */
  const char *volatile *temp_path;
  /* PNG: the deflate level plus one, IMGSTAT_PNG_LEVEL(0..9); 0 is the
   * default level (IMGSTAT_PNG_DEFAULT_LEVEL). */
  int png_level;
  /* .npy: the order of the axes. */
  imgstat_npy_layout layout;
} imgstat_write_options;

/*
 * Writes img to path: to a temporary file in the same folder, which is
 * renamed over path only when complete and flushed, so that a failure or a
 * cancel never leaves a partial file (the temporary is removed). opts may be
 * NULL. Refuses (IMGSTAT_ERR_ARG) a format that cannot hold the image, and
 * a path that exists and is not a regular file (lstat: a symbolic link, a
 * FIFO, a device, a folder), which renaming would replace.
 */
imgstat_status imgstat_image_write(const char *path, const imgstat_image *img,
                                   const imgstat_write_options *opts,
                                   imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_NORM_H */
