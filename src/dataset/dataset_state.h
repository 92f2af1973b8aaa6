/*
 * The dataset accumulator's state, shared by its files (internal to the
 * library): dataset.c (options, conversions, adding and merging),
 * dataset_codec.c (the serialized form) and dataset_figures.c (the figures,
 * the images left out and the outliers at the end).
 */
#ifndef IMGSTAT_DATASET_STATE_H
#define IMGSTAT_DATASET_STATE_H

#include "imgstat/dataset.h"

#include <stdint.h>

#define NLAYOUT (IMGSTAT_POOL_MAX_CHANNELS + 1) /* pooled channels 1..max */
#define NDEPTH 3                                /* u8, u16, f32 */

typedef struct group {
  imgstat_pool pool;
  uint64_t first; /* smallest ordinal pooled here; UINT64_MAX: none */
  uint64_t images;
  uint64_t hist_images; /* images that brought histograms */
  imgstat_histogram
      hist[IMGSTAT_POOL_MAX_CHANNELS]; /* counts NULL until used */
} group;

/* One image as the outlier rule and the notes need it. */
typedef struct summary {
  uint64_t ordinal;
  char *name;
  uint32_t width, height;
  int channels; /* the image's own */
  int depth;    /* depth index 0..2 */
  int pooled;   /* pooled channels */
  int constant; /* every colour channel holds one value */
  double const_value;
  double mean[IMGSTAT_POOL_MAX_CHANNELS]; /* unit scale (÷255, ÷65535) */
  double std[IMGSTAT_POOL_MAX_CHANNELS];
} summary;

struct imgstat_dataset {
  imgstat_dataset_options o;
  group g[NLAYOUT][NDEPTH];
  summary *s;
  size_t n, cap;
  uint64_t failed;
  /* exact float ranks found by a second read (imgstat_dataset_set_exact)
   * and why they were not (set_exact_note); not merged nor serialized:
   * set on the accumulator that gives the result */
  int nexact[IMGSTAT_POOL_MAX_CHANNELS];
  uint64_t exact_rank[IMGSTAT_POOL_MAX_CHANNELS][IMGSTAT_DATASET_EXACT_MAX];
  double exact_value[IMGSTAT_POOL_MAX_CHANNELS][IMGSTAT_DATASET_EXACT_MAX];
  char exact_note[160];
};

/* The sample of each depth index and its top (unit scale: ÷255, ÷65535). */
static const imgstat_sample ist_dataset_depth_sample[NDEPTH] = {
    IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};
static const double ist_dataset_depth_top[NDEPTH] = {255.0, 65535.0, 1.0};

/* Allocates h for samples s under the options o, unless it has counts. */
imgstat_status ist_dataset_hist_ready(imgstat_histogram *h, imgstat_sample s,
                                      const imgstat_dataset_options *o,
                                      imgstat_error *err);

/* Adds histogram b (NULL: an opaque alpha plane of n samples) to a. */
void ist_dataset_hist_add(imgstat_histogram *a, const imgstat_histogram *b,
                          uint64_t n);

#endif
