/*
 * imgstat: normalization (CPU reference); the histograms and percentiles it
 * measures with are in imgstat/hist.h.
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

#include "imgstat/hist.h"
#include "imgstat/imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_NORM_H */
