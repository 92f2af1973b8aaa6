/*
 * A batch of images for the fused pass over integer valid samples
 * (valid_acc.h): where each image's bytes, accumulators and bins lie in the
 * batch's buffers, and how a block finds its image and channel. Compiles as
 * C and as CUDA (the readers are __host__ __device__): cuda/valid.cu lays a
 * batch out and its kernel reads through these functions; the host test
 * (tests/core/test_valid_acc.c) lays out and plays a batch of images of
 * different sizes, sample types, channels and labels with them against
 * each image's own figures.
 *
 * The batch's data buffer holds, image after image, each image's planes
 * (one after the other, plane_step bytes apart), its mask (one byte a
 * pixel; when it has one) and each pixel's label place + 1 (label_bytes a
 * pixel, 0: none; when it has labels), every part starting on a 256-byte
 * boundary. The accumulators of image k are at acc words
 * [acc, acc + channels * regions * IST_VACC_WORDS) of the batch's array,
 * [channel][region][word]; its bins at [hist, hist + channels * hregions *
 * bins) of the batch's bins, [channel][region - !whole][bin]. One pair
 * (image, channel) a row of blocks: pair p's image and channel, with the
 * channel's nodata word (bit 16: has one; the value as the planes store it
 * in the low 16 bits).
 */
#ifndef IST_VALID_BATCH_H
#define IST_VALID_BATCH_H

#include "valid_acc.h"

#include <stdint.h>

/* No such part (mask, labels). */
#define IST_VBATCH_NONE UINT64_MAX

/* One image of a batch. */
typedef struct ist_vbatch_image {
  uint64_t n;          /* pixels */
  uint64_t plane;      /* byte offset of its first plane in the data */
  uint64_t plane_step; /* bytes from one plane to the next */
  uint64_t mask;       /* byte offset of its mask, or IST_VBATCH_NONE */
  uint64_t labels;     /* byte offset of its label places, or NONE */
  uint64_t acc;        /* its first accumulator word */
  uint64_t hist;       /* its first bin (0 bins: none) */
  uint32_t channels;
  uint32_t regions; /* 1 + labels */
  uint32_t bins;    /* per histogram: 0 (none), 256 or 65536 */
  uint32_t sample;  /* bytes a sample: 1 or 2 */
  uint32_t label_bytes;
  uint32_t whole; /* region 0 (the image under its mask) wanted */
} ist_vbatch_image;

/* One row of blocks: image, channel and the channel's nodata word. */
typedef struct ist_vbatch_pair {
  uint32_t image, channel, nodata;
} ist_vbatch_pair;

/* The batch's sizes so far (all zero: empty). */
typedef struct ist_vbatch_totals {
  uint64_t data_bytes; /* of the data buffer */
  uint64_t acc_words;  /* accumulator words */
  uint64_t hist_bins;  /* bins */
  uint32_t images, pairs;
} ist_vbatch_totals;

static inline uint64_t ist_vbatch_align(uint64_t x) {
  return (x + 255u) & ~(uint64_t)255u;
}

/* The bytes, accumulator words and bins one image adds to a batch. */
static inline void ist_vbatch_need(uint64_t n, uint32_t channels,
                                   uint32_t sample, int has_mask,
                                   uint32_t label_bytes, uint32_t regions,
                                   int whole, uint32_t bins, uint64_t *bytes,
                                   uint64_t *words, uint64_t *nbins) {
  const uint64_t step = ist_vbatch_align(n * sample);
  *bytes = step * channels + (has_mask ? ist_vbatch_align(n) : 0) +
           (label_bytes ? ist_vbatch_align(n * label_bytes) : 0);
  *words = (uint64_t)channels * regions * IST_VACC_WORDS;
  *nbins = (uint64_t)channels * (regions - (whole ? 0u : 1u)) * bins;
}

/* Lays the next image out after those in *t: its entry im (every field
 * set) and the batch's new sizes; its pairs are t->pairs before the call
 * onwards, one a channel. label_bytes 0: no labels. */
static inline void ist_vbatch_place(ist_vbatch_totals *t, ist_vbatch_image *im,
                                    uint64_t n, uint32_t channels,
                                    uint32_t sample, int has_mask,
                                    uint32_t label_bytes, uint32_t regions,
                                    int whole, uint32_t bins) {
  uint64_t bytes = 0, words = 0, nbins = 0;
  ist_vbatch_need(n, channels, sample, has_mask, label_bytes, regions, whole,
                  bins, &bytes, &words, &nbins);
  im->n = n;
  im->plane = t->data_bytes;
  im->plane_step = ist_vbatch_align(n * sample);
  uint64_t at = t->data_bytes + im->plane_step * channels;
  im->mask = IST_VBATCH_NONE;
  if (has_mask) {
    im->mask = at;
    at += ist_vbatch_align(n);
  }
  im->labels = IST_VBATCH_NONE;
  if (label_bytes) {
    im->labels = at;
    at += ist_vbatch_align(n * label_bytes);
  }
  im->acc = t->acc_words;
  im->hist = t->hist_bins;
  im->channels = channels;
  im->regions = regions;
  im->bins = bins;
  im->sample = sample;
  im->label_bytes = label_bytes;
  im->whole = whole ? 1u : 0u;
  t->data_bytes = at;
  t->acc_words += words;
  t->hist_bins += nbins;
  t->images++;
  t->pairs += channels;
}

/* Channel c's plane in the data buffer. */
IST_HD static inline const unsigned char *
ist_vbatch_plane(const unsigned char *data, const ist_vbatch_image *im,
                 uint32_t c) {
  return data + im->plane + (uint64_t)c * im->plane_step;
}

/* Sample i of channel c (as the plane stores it). */
IST_HD static inline uint32_t ist_vbatch_sample(const unsigned char *data,
                                                const ist_vbatch_image *im,
                                                uint32_t c, uint64_t i) {
  const unsigned char *p = ist_vbatch_plane(data, im, c);
  return im->sample == 1 ? (uint32_t)p[i]
                         : (uint32_t)((const uint16_t *)(const void *)p)[i];
}

/* Pixel i is in region 0: region 0 wanted, and inside the mask (none:
 * every pixel). */
IST_HD static inline int ist_vbatch_inside(const unsigned char *data,
                                           const ist_vbatch_image *im,
                                           uint64_t i) {
  return im->whole && (im->mask == IST_VBATCH_NONE || data[im->mask + i]);
}

/* Pixel i's label place + 1 (0: none). */
IST_HD static inline uint32_t ist_vbatch_label(const unsigned char *data,
                                               const ist_vbatch_image *im,
                                               uint64_t i) {
  if (im->labels == IST_VBATCH_NONE)
    return 0;
  const void *l = data + im->labels;
  switch (im->label_bytes) {
  case 1:
    return ((const uint8_t *)l)[i];
  case 2:
    return ((const uint16_t *)l)[i];
  default:
    return ((const uint32_t *)l)[i];
  }
}

/* The first accumulator word of channel c's regions. */
IST_HD static inline uint64_t ist_vbatch_acc(const ist_vbatch_image *im,
                                             uint32_t c) {
  return im->acc + (uint64_t)c * im->regions * IST_VACC_WORDS;
}

/* The first bin of channel c's histograms (0 bins: none). */
IST_HD static inline uint64_t ist_vbatch_hist(const ist_vbatch_image *im,
                                              uint32_t c) {
  return im->hist +
         (uint64_t)c * (im->regions - (im->whole ? 0u : 1u)) * im->bins;
}

/* Region r of channel c's histogram (r >= !whole). */
IST_HD static inline uint64_t ist_vbatch_region_hist(const ist_vbatch_image *im,
                                                     uint32_t c, uint32_t r) {
  return ist_vbatch_hist(im, c) +
         (uint64_t)(r - (im->whole ? 0u : 1u)) * im->bins;
}

/* The nodata word of a channel: bit 16 when it has one, the value in the
 * low 16 bits. */
IST_HD static inline uint32_t ist_vbatch_nodata_word(int has, uint32_t value) {
  return has ? (1u << 16) | (value & 0xFFFFu) : 0u;
}

#endif /* IST_VALID_BATCH_H */
