/*
 * Valid samples (imgstat.h): the one rule of which samples of a channel
 * enter its figures under a mask and a nodata value, the compaction of
 * those samples into a plane of their own, and the way back from their
 * order to raster positions.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "simd_clones.h"

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

imgstat_status imgstat_valid_stored_nodata(double value,
                                           const imgstat_image *img,
                                           double *stored, imgstat_error *err) {
  if (img->sample == IMGSTAT_U16 && img->int16) {
    if (!(value >= -32768.0 && value <= 32767.0 && value == floor(value)))
      return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                               "nodata %.17g is not an int16 sample (an "
                               "integer -32768 to 32767, compared exactly)",
                               value);
    *stored = value + IMGSTAT_INT16_OFFSET;
    return IMGSTAT_OK;
  }
  *stored = value;
  return imgstat_valid_check_nodata(value, img->sample, err);
}

/* What a walk over a channel's valid samples does with them. */
typedef struct walk_to {
  void *dst;      /* NULL, or the samples copied here: one after the other, */
  int scatter;    /* or with scatter at their raster indices */
  uint8_t *flags; /* NULL, or flags[i] = 1 for each (raster index i) */
  /* sample number `first` (from 0) gives its raster index to *first_at;
   * the walk stops at sample number `stop` and returns its raster index
   * (UINT64_MAX: neither; the walk returns the number of samples) */
  uint64_t first, stop;
  uint64_t *first_at;
  uint64_t nodata; /* out: the nodata samples inside the region */
} walk_to;

/* A valid sample s at raster index idx: what w wants of it. */
#define TAKE(idx, s)                                                           \
  do {                                                                         \
    if (k == w->first)                                                         \
      *w->first_at = (idx);                                                    \
    if (k == w->stop)                                                          \
      return (idx);                                                            \
    if (d)                                                                     \
      d[w->scatter ? (idx) : k] = (s);                                         \
    if (w->flags)                                                              \
      w->flags[idx] = 1;                                                       \
    k++;                                                                       \
  } while (0)

/* The walk over the samples of type T: the one predicate of validity
 * (inside the region: the mask's pixel or the list's; not the nodata
 * value, which NaN never equals). Rows in turn under a mask (or none),
 * else the list's pixels in increasing order. */
#define WALK(T)                                                                \
  do {                                                                         \
    T nodv = has ? (T)ndv : (T)0;                                              \
    T *d = w->dst;                                                             \
    if (v && v->npixels) {                                                     \
      uint64_t row_base = 0;                                                   \
      const char *rowp = img->planes[c];                                       \
      for (uint64_t j = 0; j < v->npixels; j++) {                              \
        uint64_t i = v->pixels[j];                                             \
        while (i >= row_base + img->width) {                                   \
          row_base += img->width;                                              \
          rowp += stride;                                                      \
        }                                                                      \
        T s = ((const T *)(const void *)rowp)[i - row_base];                   \
        if (has && s == nodv) {                                                \
          w->nodata++;                                                         \
          continue;                                                            \
        }                                                                      \
        TAKE(i, s);                                                            \
      }                                                                        \
      break;                                                                   \
    }                                                                          \
    for (uint32_t y = 0; y < img->height; y++) {                               \
      const T *r = (const T *)(const void *)((const char *)img->planes[c] +    \
                                             (size_t)y * stride);              \
      const uint8_t *m =                                                       \
          v && v->mask ? v->mask + (uint64_t)y * img->width : NULL;            \
      uint64_t base = (uint64_t)y * img->width;                                \
      for (uint32_t x = 0; x < img->width; x++) {                              \
        if (m && !m[x])                                                        \
          continue;                                                            \
        T s = r[x];                                                            \
        if (has && s == nodv) {                                                \
          w->nodata++;                                                         \
          continue;                                                            \
        }                                                                      \
        TAKE(base + x, s);                                                     \
      }                                                                        \
    }                                                                          \
  } while (0)

/* Walks the valid samples of channel c as w says. */
static uint64_t walk(const imgstat_image *img, int c, const imgstat_valid *v,
                     walk_to *w) {
  int has = v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c];
  double ndv = has ? v->nodata[c] : 0.0;
  size_t stride = ist_image_stride(img);
  uint64_t k = 0;
  uint64_t unused;
  if (!w->first_at) {
    w->first = UINT64_MAX;
    w->first_at = &unused;
  }
  w->nodata = 0;
  switch (img->sample) {
  case IMGSTAT_U8:
    WALK(uint8_t);
    break;
  case IMGSTAT_U16:
    WALK(uint16_t);
    break;
  case IMGSTAT_F32:
    WALK(float);
    break;
  }
  return k;
}

/* Channel c of img exists and its nodata value (if any) is one of its
 * sample type. */
static imgstat_status check_channel(const imgstat_image *img, int c,
                                    const imgstat_valid *v,
                                    imgstat_error *err) {
  if (!img || c < 0 || c >= img->channels)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no channel %d", c);
  if (v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c])
    return imgstat_valid_check_nodata(v->nodata[c], img->sample, err);
  return IMGSTAT_OK;
}

imgstat_status imgstat_valid_compact(const imgstat_image *img, int c,
                                     const imgstat_valid *v, imgstat_image *out,
                                     uint64_t *nodata, imgstat_error *err) {
  memset(out, 0, sizeof *out);
  *nodata = 0;
  imgstat_status st = check_channel(img, c, v, err);
  if (st != IMGSTAT_OK)
    return st;
  /* one walk into a buffer as large as the region can be */
  uint64_t n =
      v && v->npixels ? v->npixels : (uint64_t)img->width * img->height;
  out->sample = img->sample;
  out->channels = 1;
  out->format = img->format;
  if (n == 0)
    return IMGSTAT_OK;
  if (n > UINT32_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "%llu samples in one channel (at most %u)",
                             (unsigned long long)n, UINT32_MAX);
  st = imgstat_image_alloc(out, (uint32_t)n, 1, 1, img->sample,
                           IMGSTAT_MAX_PIXELS_LIMIT, err);
  if (st != IMGSTAT_OK)
    return st;
  out->format = img->format;
  walk_to w = {out->planes[0], 0, NULL, UINT64_MAX, UINT64_MAX, NULL, 0};
  uint64_t k = walk(img, c, v, &w);
  *nodata = w.nodata;
  if (k == 0)
    imgstat_image_free(out); /* empty: width 0, no planes */
  out->sample = img->sample;
  out->channels = 1;
  out->format = img->format;
  out->width = (uint32_t)k;
  out->height = k ? 1 : 0;
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
    walk_to w = {d, 1, NULL, UINT64_MAX, UINT64_MAX, NULL, 0};
    walk(img, c, v, &w);
  }
  return IMGSTAT_OK;
}

uint64_t imgstat_valid_raster_index(const imgstat_image *img, int c,
                                    const imgstat_valid *v, uint64_t k) {
  if (k == UINT64_MAX)
    return UINT64_MAX;
  walk_to w = {NULL, 0, NULL, UINT64_MAX, k, NULL, 0};
  return walk(img, c, v, &w);
}

imgstat_status imgstat_valid_flags(const imgstat_image *img, int c,
                                   const imgstat_valid *v, uint8_t *flags,
                                   imgstat_error *err) {
  imgstat_status st = check_channel(img, c, v, err);
  if (st != IMGSTAT_OK)
    return st;
  memset(flags, 0, (size_t)img->width * img->height);
  walk_to w = {NULL, 0, flags, UINT64_MAX, UINT64_MAX, NULL, 0};
  walk(img, c, v, &w);
  return IMGSTAT_OK;
}

void imgstat_valid_raster_pair(const imgstat_image *img, int c,
                               const imgstat_valid *v, uint64_t *a,
                               uint64_t *b) {
  uint64_t *lo = *a <= *b ? a : b, *hi = *a <= *b ? b : a;
  if (*hi == UINT64_MAX) { /* none, or one of them */
    *lo = imgstat_valid_raster_index(img, c, v, *lo);
    return;
  }
  uint64_t first_at = UINT64_MAX;
  walk_to w = {NULL, 0, NULL, *lo, *hi, &first_at, 0};
  uint64_t last_at = walk(img, c, v, &w);
  *lo = first_at;
  *hi = last_at;
}

/* ---- one pass over an integer channel ------------------------------------
 * What imgstat_valid_compact, a scan of the compacted samples and
 * imgstat_valid_raster_pair give together, for u8 and u16 samples under a
 * mask (or none) and a nodata value, in one pass over the rows and with
 * raster positions from the start: the same predicate as walk(), the
 * integer sums exact, the extrema's first positions in raster order. Rows
 * are taken a block at a time, with no branch on each sample (the compiler
 * vectorizes the block); the first position of a block's minimum or
 * maximum is searched only when it beats the figures so far. */
#define VSCAN_BLOCK 4096u

/* One block's figures: valid samples, their sum and sum of squares, their
 * min and max (when cnt > 0), the nodata samples inside the region. */
typedef struct vscan_block {
  uint32_t cnt, nd, sum, lo, hi;
  uint64_t sq;
} vscan_block;

/* The loop over a block of n samples x (mask bytes m, or none), for the
 * sample type T: IN is whether sample i is inside the region. */
#define VSCAN_LOOP(T, T_MAX, IN)                                               \
  do {                                                                         \
    uint32_t sum = 0, cnt = 0, nd = 0;                                         \
    uint64_t sq = 0;                                                           \
    T lo = T_MAX, hi = 0;                                                      \
    for (uint32_t i = 0; i < n; i++) {                                         \
      T t = x[i];                                                              \
      uint32_t in = (IN);                                                      \
      uint32_t isnd = has & (uint32_t)(t == nodv);                             \
      uint32_t ok = in & (isnd ^ 1u);                                          \
      nd += in & isnd;                                                         \
      cnt += ok;                                                               \
      T s = ok ? t : (T)0;                                                     \
      T l = ok ? t : (T)T_MAX;                                                 \
      sum += s;                                                                \
      sq += (uint32_t)s * (uint32_t)s;                                         \
      lo = l < lo ? l : lo;                                                    \
      hi = s > hi ? s : hi;                                                    \
    }                                                                          \
    out->cnt = cnt;                                                            \
    out->nd = nd;                                                              \
    out->sum = sum;                                                            \
    out->sq = sq;                                                              \
    out->lo = lo;                                                              \
    out->hi = hi;                                                              \
  } while (0)

#define VSCAN_KERNEL(NAME, T, T_MAX)                                           \
  IMGSTAT_SIMD_CLONES                                                          \
  static void NAME(const T *restrict x, const uint8_t *restrict m, uint32_t n, \
                   uint32_t has, T nodv, vscan_block *out) {                   \
    if (m)                                                                     \
      VSCAN_LOOP(T, T_MAX, (uint32_t)(m[i] != 0));                             \
    else                                                                       \
      VSCAN_LOOP(T, T_MAX, 1u);                                                \
  }

VSCAN_KERNEL(vscan_u8, uint8_t, UINT8_MAX)
VSCAN_KERNEL(vscan_u16, uint16_t, UINT16_MAX)

#define VSCAN(T, KERNEL)                                                       \
  do {                                                                         \
    const T nodv = has ? (T)ndv : (T)0;                                        \
    for (uint32_t y = y0; y < y1; y++) {                                       \
      const T *r = (const T *)(const void *)((const char *)img->planes[c] +    \
                                             (size_t)y * stride);              \
      const uint8_t *m =                                                       \
          v && v->mask ? v->mask + (uint64_t)y * img->width : NULL;            \
      uint64_t base = (uint64_t)y * img->width;                                \
      for (uint32_t x0 = 0; x0 < img->width; x0 += VSCAN_BLOCK) {              \
        uint32_t n =                                                           \
            img->width - x0 < VSCAN_BLOCK ? img->width - x0 : VSCAN_BLOCK;     \
        const T *b = r + x0;                                                   \
        const uint8_t *mb = m ? m + x0 : NULL;                                 \
        vscan_block k;                                                         \
        KERNEL(b, mb, n, (uint32_t)has, nodv, &k);                             \
        *nodata += k.nd;                                                       \
        if (k.cnt == 0)                                                        \
          continue;                                                            \
        p->count += k.cnt;                                                     \
        p->sum += k.sum;                                                       \
        p->sumsq += k.sq;                                                      \
        /* the first valid sample of the value, when it beats the figure       \
         * so far (an equal one came earlier in raster order) */               \
        if ((double)k.lo < p->min)                                             \
          for (uint32_t i = 0; i < n; i++)                                     \
            if (b[i] == k.lo && (!mb || mb[i]) && !(has && b[i] == nodv)) {    \
              p->min = k.lo;                                                   \
              p->min_index = base + x0 + i;                                    \
              break;                                                           \
            }                                                                  \
        if ((double)k.hi > p->max)                                             \
          for (uint32_t i = 0; i < n; i++)                                     \
            if (b[i] == k.hi && (!mb || mb[i]) && !(has && b[i] == nodv)) {    \
              p->max = k.hi;                                                   \
              p->max_index = base + x0 + i;                                    \
              break;                                                           \
            }                                                                  \
      }                                                                        \
    }                                                                          \
  } while (0)

void ist_valid_scan_rows(const imgstat_image *img, int c,
                         const imgstat_valid *v, uint32_t y0, uint32_t y1,
                         imgstat_partial *p, uint64_t *nodata) {
  imgstat_partial_init(p);
  *nodata = 0;
  int has = v && c < IMGSTAT_MAX_CHANNELS && v->has_nodata[c];
  double ndv = has ? v->nodata[c] : 0.0;
  size_t stride = ist_image_stride(img);
  if (img->sample == IMGSTAT_U8)
    VSCAN(uint8_t, vscan_u8);
  else if (img->sample == IMGSTAT_U16)
    VSCAN(uint16_t, vscan_u16);
}
