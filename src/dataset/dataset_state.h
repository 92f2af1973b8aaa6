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

#define NDEPTH 4 /* u8, u16, f32, int16 (u16 planes of the value + 32768) */
/* Channels of each exact pool of a group: a layout of more channels is
 * pooled in several (channels 0..15, 16..31, ...). */
#define GROUP_POOL_CHANNELS IMGSTAT_POOL_MAX_CHANNELS

/* The images of one pooled layout (channels) and depth, made when the
 * first one comes. */
typedef struct group {
  int layout;         /* pooled channels */
  int npools;         /* ceil(layout / GROUP_POOL_CHANNELS) */
  imgstat_pool *pool; /* npools; channel c in pool[c / 16].ch[c % 16] */
  uint64_t first;     /* smallest ordinal pooled here; UINT64_MAX: none */
  uint64_t images;
  uint64_t hist_images;    /* images that brought histograms */
  imgstat_histogram *hist; /* layout entries; counts NULL until used */
} group;

/* The group of layout l and depth k of d: an empty one (no image, no
 * pool, no histogram) when d has none. */
const group *ist_dataset_group(const imgstat_dataset *d, int l, int k);
/* The same, made when d has none (NULL: out of memory). */
group *ist_dataset_group_make(imgstat_dataset *d, int l, int k);
/* Whether g has images pooled. */
static inline int ist_group_used(const group *g) {
  return g->npools > 0 && g->pool[0].channels != 0;
}
/* The pool figures of channel c of a group that has images. */
void ist_group_figures(const group *g, int c, int ddof,
                       imgstat_pool_figures *out);

/* One image as the outlier rule and the notes need it (decoded from the
 * packed summaries, dataset_summary.c). */
typedef struct summary {
  uint64_t ordinal;
  const char *name; /* the reader's copy: valid until its next summary */
  uint32_t width, height;
  int channels; /* the image's own */
  int depth;    /* depth index 0..3 */
  int pooled;   /* pooled channels */
  int constant; /* every colour channel holds one value */
  double const_value;
  float *mean; /* pooled entries, unit scale (÷255, ÷65535); read: the */
  float *std;  /* reader's copies, valid until its next summary */
} summary;

/* The summaries of the images added, packed one after the other. */
typedef struct summaries {
  uint8_t *p;
  size_t used, cap;
  size_t n;
  uint64_t last_ordinal; /* the last summary's ordinal and name */
  char *last_name;
  size_t last_len, last_cap;
} summaries;

/* Reads the summaries in the order they were added. */
typedef struct summary_reader {
  const summaries *from;
  size_t index, at;
  uint64_t ordinal;
  char *name;
  size_t cap;
  float *ms; /* the means and stds read */
  int ms_cap;
  int no_names; /* set after start: the names are skipped ("") */
} summary_reader;

/* Appends s with that name (IMGSTAT_ERR_NOMEM, nothing added). */
imgstat_status ist_summaries_add(summaries *S, const summary *s,
                                 const char *name);
void ist_summaries_free(summaries *S);
void ist_summary_reader_start(summary_reader *r, const summaries *S);
/* The next summary: 1, 0 at the end, -1 out of memory. */
int ist_summary_next(summary_reader *r, summary *s);
void ist_summary_reader_end(summary_reader *r);

/* One label's accumulator (imgstat_dataset_image's labels). */
typedef struct label_pool {
  uint32_t label;
  imgstat_dataset *d;
} label_pool;

struct imgstat_dataset {
  imgstat_dataset_options o;
  /* g[l * NDEPTH + k], l < nlayout: the group of pooled channels l and
   * depth k, NULL until an image of it comes */
  group **g;
  int nlayout;
  summaries s;
  uint64_t failed;
  /* exact float ranks found by a second read (imgstat_dataset_set_exact)
   * and why they were not (set_exact_note); not merged nor serialized:
   * set on the accumulator that gives the result */
  int nexact_channels; /* entries of the three (grown by set_exact) */
  int *nexact;
  uint64_t (*exact_rank)[IMGSTAT_DATASET_EXACT_MAX];
  double (*exact_value)[IMGSTAT_DATASET_EXACT_MAX];
  char exact_note[160];
  /* the labels' accumulators, by increasing label (dataset_labels.c) */
  label_pool *labels;
  size_t nlabels, labels_cap;
};

/* The sample of each depth index and its top (unit scale: ÷255, ÷65535;
 * int16 has no unit scale and is not pooled with scale=unit). */
static const imgstat_sample ist_dataset_depth_sample[NDEPTH] = {
    IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32, IMGSTAT_U16};
static const double ist_dataset_depth_top[NDEPTH] = {255.0, 65535.0, 1.0, 1.0};
/* The depth index of int16 images. */
#define IST_DEPTH_INT16 3

/* Allocates h for samples s under the options o, unless it has counts. */
imgstat_status ist_dataset_hist_ready(imgstat_histogram *h, imgstat_sample s,
                                      const imgstat_dataset_options *o,
                                      imgstat_error *err);

/* Adds histogram b (NULL: an opaque alpha plane of n samples) to a. */
void ist_dataset_hist_add(imgstat_histogram *a, const imgstat_histogram *b,
                          uint64_t n);

/* ---- labels (dataset_labels.c) ---- */

/* The accumulator of label in d (made, with d's options, when create and
 * d has none): *out, NULL when there is none. */
imgstat_status ist_dataset_label_pool(imgstat_dataset *d, uint32_t label,
                                      int create, imgstat_dataset **out,
                                      imgstat_error *err);
/* Adds each of im's labels to its accumulator at ordinal. */
imgstat_status ist_dataset_labels_add(imgstat_dataset *d, uint64_t ordinal,
                                      const imgstat_dataset_image *im,
                                      imgstat_error *err);
/* Merges b's labels into a's. */
imgstat_status ist_dataset_labels_merge(imgstat_dataset *a,
                                        const imgstat_dataset *b,
                                        imgstat_error *err);
void ist_dataset_labels_free(imgstat_dataset *d);
/* Each label's figures into res->labels. */
imgstat_status ist_dataset_labels_finish(const imgstat_dataset *d, int ddof,
                                         imgstat_dataset_result *res,
                                         imgstat_error *err);
void ist_dataset_labels_result_free(imgstat_dataset_result *res);

#endif
