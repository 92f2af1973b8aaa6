/*
 * imgstat: statistics pooled over many images (a dataset).
 *
 * A pool gathers the per-channel partials (imgstat_partial) of any number of
 * images of one layout and sample type, and gives the figures of every
 * channel over all their samples: counts, min and max with the image and
 * pixel of their first occurrence, the exact sum, the mean and the standard
 * deviation.
 *
 * Everything a pool keeps is exact, so its bits depend only on the images'
 * partials, never on the order or the grouping in which they were added and
 * merged: threads, devices or ranks may each pool a run of the images, and
 * merging their pools, in any grouping, gives the same bits as adding the
 * images one by one.
 *  - u8 / u16: 128-bit sums and sums of squares (no overflow before the
 *    64-bit sample count would overflow).
 *  - f32: the exact sums of count * mean and of m2 + count * mean^2 of the
 *    images' partials, in wide fixed-point integers (words of 64 bits,
 *    least significant first); within one image the partial's mean and m2
 *    are those of its backend (Chan's merges in a fixed order).
 *  - min / max: the smaller (larger) value; on equal values the first by
 *    (image ordinal, y, x).
 * The figures round once from the exact values: the mean is the double
 * nearest to sum / count; the deviation is computed from the exact
 * count * sumsq - sum^2 (u8 / u16) or count * m2 (f32), as the per-image
 * figures are (imgstat_figures_compute).
 *
 * The library never prints, exits or aborts: functions that can fail return
 * an imgstat_status and fill a caller-owned imgstat_error. A function that
 * fails leaves its output pool unchanged.
 */
#ifndef IMGSTAT_POOL_H
#define IMGSTAT_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "imgstat/imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An unsigned 128-bit integer: hi * 2^64 + lo. */
typedef struct imgstat_u128 {
  uint64_t lo;
  uint64_t hi;
} imgstat_u128;

/* Characters of the decimal text of an imgstat_u128, with its NUL (2^128 - 1
 * has 39 digits). */
#define IMGSTAT_U128_TEXT 40

/* Writes v in decimal to text. */
void imgstat_u128_format(imgstat_u128 v, char text[IMGSTAT_U128_TEXT]);

/* Where an extremum was first seen: the image's ordinal (the caller's number
 * for it, e.g. its place in the input list) and the pixel. */
typedef struct imgstat_pool_key {
  uint64_t ordinal;
  uint32_t x;
  uint32_t y;
} imgstat_pool_key;

/* Words of the f32 fixed-point sums: sum of count * mean in units of
 * 2^-1074, two's complement; sum of m2 + count * mean^2 in units of
 * 2^-2148, unsigned. */
#define IMGSTAT_POOL_FSUM_WORDS 35
#define IMGSTAT_POOL_FSQ_WORDS 67

/* One channel of a pool. Read it through imgstat_pool_figures_compute. */
typedef struct imgstat_pool_channel {
  uint64_t count; /* samples in min/max/sums (finite ones for f32) */
  uint64_t nan_count;
  uint64_t inf_count;
  double min; /* +inf while count is 0 */
  double max; /* -inf while count is 0 */
  imgstat_pool_key min_key;
  imgstat_pool_key max_key;
  imgstat_u128 sum;                       /* u8 / u16 */
  imgstat_u128 sumsq;                     /* u8 / u16 */
  uint64_t fsum[IMGSTAT_POOL_FSUM_WORDS]; /* f32 */
  uint64_t fsq[IMGSTAT_POOL_FSQ_WORDS];   /* f32 */
} imgstat_pool_channel;

/* Channels a pool takes (the dataset accumulator, dataset.h, pools images
 * of more bands, up to IMGSTAT_MAX_CHANNELS, in several pools). */
#define IMGSTAT_POOL_MAX_CHANNELS IMGSTAT_INLINE_CHANNELS

typedef struct imgstat_pool {
  int channels; /* 0 until the first image; then fixed */
  imgstat_sample sample;
  uint64_t images; /* images added (through every pool merged in) */
  imgstat_pool_channel ch[IMGSTAT_POOL_MAX_CHANNELS];
} imgstat_pool;

/* The empty pool: no image, no layout yet. */
void imgstat_pool_init(imgstat_pool *pool);

/*
 * Adds one image: parts[0..channels-1], its channels' partials over the
 * whole image (raster indices y * width + x). The first image fixes the
 * pool's channels and sample type; an image of another one is refused with
 * IMGSTAT_ERR_ARG, as is a partial that cannot come from an image (width 0
 * or a row past 2^32 - 1 for its extrema; f32: a mean or m2 that is not
 * finite, a negative m2). Counts that would overflow 64 bits give
 * IMGSTAT_ERR_LIMIT.
 */
imgstat_status imgstat_pool_add(imgstat_pool *pool, uint64_t ordinal,
                                const imgstat_partial *parts, int channels,
                                imgstat_sample sample, uint32_t width,
                                imgstat_error *err);

/* Merges b into a (a != b). An empty pool takes b's layout; otherwise the
 * layouts must agree (IMGSTAT_ERR_ARG). */
imgstat_status imgstat_pool_merge(imgstat_pool *a, const imgstat_pool *b,
                                  imgstat_error *err);

/* The figures of one channel of a pool. */
typedef struct imgstat_pool_figures {
  uint64_t count; /* samples in min/max/mean/std (finite ones for f32) */
  uint64_t nan_count;
  uint64_t inf_count;
  int has_values; /* count > 0: min/max/keys/mean are defined */
  double min;
  double max;
  imgstat_pool_key min_key;
  imgstat_pool_key max_key;
  int sum_is_exact;         /* u8/u16: the exact_ fields hold the sums */
  imgstat_u128 exact_sum;   /* sum of the samples */
  imgstat_u128 exact_sumsq; /* sum of their squares */
  char exact_sum_text[IMGSTAT_U128_TEXT]; /* exact_sum in decimal */
  double sum; /* the double nearest to the (f32: pooled) sum */
  double mean;
  int has_std; /* count > ddof */
  double std;
} imgstat_pool_figures;

/* Figures of channel 0..channels-1; ddof is 0 (population) or 1 (sample).
 * IMGSTAT_ERR_ARG for a channel the pool does not have. */
imgstat_status imgstat_pool_figures_compute(const imgstat_pool *pool,
                                            int channel, int ddof,
                                            imgstat_pool_figures *out,
                                            imgstat_error *err);

/*
 * The serialized form (for sending a pool between processes or hosts):
 * version 1, little-endian, fixed layout: the magic "IMGSPOOL", the version,
 * channels, sample, images, one record per channel, and an FNV-1a 64-bit
 * checksum of everything before it. Its size depends on the layout; at most
 * IMGSTAT_POOL_SERIALIZED_MAX bytes.
 */
#define IMGSTAT_POOL_SERIALIZED_MAX                                            \
  (32 +                                                                        \
   IMGSTAT_POOL_MAX_CHANNELS *                                                 \
       (72 + 8 * (IMGSTAT_POOL_FSUM_WORDS + IMGSTAT_POOL_FSQ_WORDS)) +         \
   8)

/* Bytes of pool's serialized form. */
size_t imgstat_pool_serialized_size(const imgstat_pool *pool);

/* Writes the serialized form to buf (size bytes); *used (if not NULL) gets
 * its size. A buffer too small is IMGSTAT_ERR_ARG (nothing written). */
imgstat_status imgstat_pool_serialize(const imgstat_pool *pool, void *buf,
                                      size_t size, size_t *used,
                                      imgstat_error *err);

/* Reads a pool from its serialized form (exactly size bytes). A wrong magic,
 * version, size or checksum, or contents no pool can have, give
 * IMGSTAT_ERR_FORMAT. */
imgstat_status imgstat_pool_deserialize(imgstat_pool *pool, const void *buf,
                                        size_t size, imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_POOL_H */
