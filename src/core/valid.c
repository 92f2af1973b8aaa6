/*
 * Valid samples (imgstat.h): the one rule of which samples of a channel
 * enter its figures under a mask and a nodata value, the compaction of
 * those samples into a plane of their own, and the way back from their
 * order to raster positions.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"

#include <math.h>
#include <string.h>

int imgstat_valid_active(const imgstat_valid *v, int channels) {
  if (!v)
    return 0;
  if (v->mask || v->npixels)
    return 1;
  for (int c = 0; c < channels && c < IMGSTAT_MAX_CHANNELS; c++)
    if (v->has_nodata[c])
      return 1;
  return 0;
}

imgstat_status imgstat_valid_check_nodata(double value, imgstat_sample sample,
                                          imgstat_error *err) {
  switch (sample) {
  case IMGSTAT_U8:
  case IMGSTAT_U16: {
    double top = sample == IMGSTAT_U8 ? 255.0 : 65535.0;
    if (!(value >= 0.0 && value <= top && value == floor(value)))
      return imgstat_error_set(
          err, IMGSTAT_ERR_ARG,
          "nodata %.17g is not a %d-bit sample (an integer 0 to %.0f, compared "
          "exactly)",
          value, imgstat_sample_depth(sample), top);
    return IMGSTAT_OK;
  }
  case IMGSTAT_F32:
    if (!isnan(value) && (double)(float)value != value)
      return imgstat_error_set(
          err, IMGSTAT_ERR_ARG,
          "nodata %.17g is not a float32 value (float samples are compared "
          "exactly; NaN is always nodata)",
          value);
    return IMGSTAT_OK;
  }
  return imgstat_error_set(err, IMGSTAT_ERR_ARG, "unknown sample type %d",
                           (int)sample);
}

/* The valid samples of one row: calls take(ctx, x, value) for each, in
 * order; counts the nodata samples inside the mask. The one predicate of
 * validity. */
#define VALID_ROW(T, row, width, mask, has, nd, nodata, BODY)                  \
  do {                                                                         \
    const T *r_ = (const T *)(row);                                            \
    for (uint32_t x = 0; x < (width); x++) {                                   \
      if ((mask) && !(mask)[x])                                                \
        continue;                                                              \
      T s = r_[x];                                                             \
      if ((has) && s == (nd)) {                                                \
        (nodata)++;                                                            \
        continue;                                                              \
      }                                                                        \
      BODY                                                                     \
    }                                                                          \
  } while (0)

/* walk() over v's list of pixels. */
static uint64_t walk_pixels(const imgstat_image *img, int c,
                            const imgstat_valid *v, int has, double ndv,
                            void *dst, int scatter, uint8_t *flags,
                            uint64_t stop, uint64_t *nodata) {
  uint64_t k = 0, nd = 0;
  for (uint64_t i = 0; i < v->npixels; i++) {
    uint32_t at = v->pixels[i];
    /* the pixel as a row of one sample: the macro's x is 0 */
    const void *row = ist_image_row(img, c, at / img->width);
    uint32_t col = at % img->width;
    uint64_t base = at;
    switch (img->sample) {
    case IMGSTAT_U8: {
      uint8_t *d = dst;
      VALID_ROW(uint8_t, (const uint8_t *)row + col, 1, (const uint8_t *)NULL,
                has, (uint8_t)ndv, nd, {
                  if (k == stop)
                    return base + x;
                  if (d)
                    d[scatter ? base + x : k] = s;
                  if (flags)
                    flags[base + x] = 1;
                  k++;
                });
      break;
    }
    case IMGSTAT_U16: {
      uint16_t *d = dst;
      VALID_ROW(uint16_t, (const uint16_t *)row + col, 1, (const uint8_t *)NULL,
                has, (uint16_t)ndv, nd, {
                  if (k == stop)
                    return base + x;
                  if (d)
                    d[scatter ? base + x : k] = s;
                  if (flags)
                    flags[base + x] = 1;
                  k++;
                });
      break;
    }
    case IMGSTAT_F32: {
      float *d = dst;
      VALID_ROW(float, (const float *)row + col, 1, (const uint8_t *)NULL, has,
                (float)ndv, nd, {
                  if (k == stop)
                    return base + x;
                  if (d)
                    d[scatter ? base + x : k] = s;
                  if (flags)
                    flags[base + x] = 1;
                  k++;
                });
      break;
    }
    }
  }
  if (nodata)
    *nodata = nd;
  return k;
}

/* Walks the valid samples of channel c: with dst, copies them there (one
 * after the other, or with scatter at their raster indices), and with
 * flags sets flags[i] to 1 for each (raster index i); stops after
 * the sample numbered stop (from 0) and returns its raster index, or
 * returns the number of valid samples when stop is UINT64_MAX. */
static uint64_t walk(const imgstat_image *img, int c, const imgstat_valid *v,
                     void *dst, int scatter, uint8_t *flags, uint64_t stop,
                     uint64_t *nodata) {
  int has = v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c];
  double ndv = has ? v->nodata[c] : 0.0;
  uint64_t k = 0, nd = 0;
  if (v && v->npixels) /* a list of pixels: one row of its own each */
    return walk_pixels(img, c, v, has, ndv, dst, scatter, flags, stop, nodata);
  for (uint32_t y = 0; y < img->height; y++) {
    const void *row = ist_image_row(img, c, y);
    const uint8_t *m = v && v->mask ? v->mask + (uint64_t)y * img->width : NULL;
    uint64_t base = (uint64_t)y * img->width;
    switch (img->sample) {
    case IMGSTAT_U8: {
      uint8_t nodv = has ? (uint8_t)ndv : 0;
      uint8_t *d = dst;
      VALID_ROW(uint8_t, row, img->width, m, has, nodv, nd, {
        if (k == stop)
          return base + x;
        if (d)
          d[scatter ? base + x : k] = s;
        if (flags)
          flags[base + x] = 1;
        k++;
      });
      break;
    }
    case IMGSTAT_U16: {
      uint16_t nodv = has ? (uint16_t)ndv : 0;
      uint16_t *d = dst;
      VALID_ROW(uint16_t, row, img->width, m, has, nodv, nd, {
        if (k == stop)
          return base + x;
        if (d)
          d[scatter ? base + x : k] = s;
        if (flags)
          flags[base + x] = 1;
        k++;
      });
      break;
    }
    case IMGSTAT_F32: {
      /* NaN never equals: it stays a sample, counted as NaN */
      float nodv = has ? (float)ndv : 0.0f;
      float *d = dst;
      VALID_ROW(float, row, img->width, m, has, nodv, nd, {
        if (k == stop)
          return base + x;
        if (d)
          d[scatter ? base + x : k] = s;
        if (flags)
          flags[base + x] = 1;
        k++;
      });
      break;
    }
    }
  }
  if (nodata)
    *nodata = nd;
  return k;
}

imgstat_status imgstat_valid_compact(const imgstat_image *img, int c,
                                     const imgstat_valid *v, imgstat_image *out,
                                     uint64_t *nodata, imgstat_error *err) {
  memset(out, 0, sizeof *out);
  *nodata = 0;
  if (!img || c < 0 || c >= img->channels)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no channel %d", c);
  if (v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c]) {
    imgstat_status st =
        imgstat_valid_check_nodata(v->nodata[c], img->sample, err);
    if (st != IMGSTAT_OK)
      return st;
  }
  uint64_t n = walk(img, c, v, NULL, 0, NULL, UINT64_MAX, nodata);
  out->sample = img->sample;
  out->channels = 1;
  out->format = img->format;
  if (n == 0)
    return IMGSTAT_OK;
  if (n > UINT32_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "%llu valid samples in one channel (at most %u)",
                             (unsigned long long)n, UINT32_MAX);
  imgstat_status st = imgstat_image_alloc(out, (uint32_t)n, 1, 1, img->sample,
                                          IMGSTAT_MAX_PIXELS_LIMIT, err);
  if (st != IMGSTAT_OK)
    return st;
  out->format = img->format;
  walk(img, c, v, out->planes[0], 0, NULL, UINT64_MAX, NULL);
  return IMGSTAT_OK;
}

imgstat_status imgstat_valid_nan_copy(const imgstat_image *img,
                                      const imgstat_valid *v,
                                      imgstat_image *out, imgstat_error *err) {
  memset(out, 0, sizeof *out);
  if (!img || img->sample != IMGSTAT_F32)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "not a float image");
  imgstat_status st =
      imgstat_image_alloc(out, img->width, img->height, img->channels,
                          IMGSTAT_F32, IMGSTAT_MAX_PIXELS_LIMIT, err);
  if (st != IMGSTAT_OK)
    return st;
  out->format = img->format;
  for (int c = 0; c < img->channels; c++) {
    if (v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c] &&
        (st = imgstat_valid_check_nodata(v->nodata[c], IMGSTAT_F32, err)) !=
            IMGSTAT_OK) {
      imgstat_image_free(out);
      return st;
    }
    float *d = out->planes[c];
    for (uint64_t i = 0; i < (uint64_t)img->width * img->height; i++)
      d[i] = NAN;
    /* the valid samples back in their places, by the one walk */
    walk(img, c, v, d, 1, NULL, UINT64_MAX, NULL);
  }
  return IMGSTAT_OK;
}

uint64_t imgstat_valid_raster_index(const imgstat_image *img, int c,
                                    const imgstat_valid *v, uint64_t k) {
  if (k == UINT64_MAX)
    return UINT64_MAX;
  return walk(img, c, v, NULL, 0, NULL, k, NULL);
}

imgstat_status imgstat_valid_flags(const imgstat_image *img, int c,
                                   const imgstat_valid *v, uint8_t *flags,
                                   imgstat_error *err) {
  if (!img || c < 0 || c >= img->channels)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no channel %d", c);
  if (v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c]) {
    imgstat_status st =
        imgstat_valid_check_nodata(v->nodata[c], img->sample, err);
    if (st != IMGSTAT_OK)
      return st;
  }
  memset(flags, 0, (size_t)img->width * img->height);
  walk(img, c, v, NULL, 0, flags, UINT64_MAX, NULL);
  return IMGSTAT_OK;
}
