/*
 * Histograms, percentiles by the rank rule, and the figures imgstat
 * --histogram prints (median, percentiles, entropy, skewness, kurtosis).
 * The CPU reference: the GPU's histograms must equal these counts exactly,
 * and its percentiles come from imgstat_percentile_value below.
 */
#include "imgstat/hist.h"

#include "hist_range.h"
#include "image_rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

imgstat_status imgstat_histogram_alloc(imgstat_histogram *h,
                                       imgstat_sample sample, uint32_t bins,
                                       double lo, double hi,
                                       imgstat_error *err) {
  memset(h, 0, sizeof *h);
  if (sample == IMGSTAT_U8) {
    bins = 256;
    lo = 0;
    hi = 255;
  } else if (sample == IMGSTAT_U16) {
    bins = 65536;
    lo = 0;
    hi = 65535;
  } else if (sample == IMGSTAT_F32) {
    if (bins == 0)
      bins = IMGSTAT_FLOAT_BINS_DEFAULT;
    if (bins > IMGSTAT_FLOAT_BINS_MAX)
      return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                               "at most %u histogram bins",
                               IMGSTAT_FLOAT_BINS_MAX);
    if (!isfinite(lo) || !isfinite(hi) || hi < lo)
      return imgstat_error_set(err, IMGSTAT_ERR_ARG, "invalid histogram range");
  } else {
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "unknown sample type");
  }
  h->counts = calloc(bins, sizeof *h->counts);
  if (!h->counts)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory for a histogram of %u bins", bins);
  h->sample = sample;
  h->bins = bins;
  h->lo = lo;
  h->hi = hi;
  return IMGSTAT_OK;
}

void imgstat_histogram_free(imgstat_histogram *h) {
  if (!h)
    return;
  free(h->counts);
  memset(h, 0, sizeof *h);
}

/* The samples of one plane as rows: a dense plane is one row of
 * width * height samples (the fast paths' single loop). */
typedef struct plane_rows {
  const unsigned char *base;
  size_t stride;
  uint64_t width;
  uint32_t rows;
} plane_rows;

static plane_rows rows_of(const imgstat_image *img, int c) {
  plane_rows r = {img->planes[c], ist_image_stride(img), img->width,
                  img->height};
  if (ist_image_is_dense(img)) {
    r.width = (uint64_t)img->width * img->height;
    r.rows = r.width ? 1 : 0;
  }
  return r;
}

static plane_rows one_row(const void *plane, uint64_t n) {
  plane_rows r = {plane, 0, n, n ? 1 : 0};
  return r;
}

static const void *row_at(const plane_rows *r, uint32_t y) {
  return r->base + (size_t)y * r->stride;
}

static int finite_range(const plane_rows *r, double *lo, double *hi) {
  float mn = INFINITY, mx = -INFINITY;
  int any = 0;
  for (uint32_t y = 0; y < r->rows; y++) {
    const float *p = row_at(r, y);
    for (uint64_t i = 0; i < r->width; i++) {
      float x = p[i];
      if (!isfinite(x))
        continue;
      any = 1;
      mn = x < mn ? x : mn;
      mx = x > mx ? x : mx;
    }
  }
  *lo = any ? mn : 0.0;
  *hi = any ? mx : 0.0;
  return any;
}

int imgstat_plane_finite_range(const float *plane, uint64_t n, double *lo,
                               double *hi) {
  plane_rows r = one_row(plane, n);
  return finite_range(&r, lo, hi);
}

int imgstat_image_finite_range(const imgstat_image *img, int c, double *lo,
                               double *hi) {
  plane_rows r = rows_of(img, c);
  return finite_range(&r, lo, hi);
}

/* Four sub-histograms break the store-to-load dependency when neighbouring
 * samples are equal (flat regions), which otherwise serialises the loop.
 * They are flushed before a 32-bit sub-count could overflow. */
#define HIST_U8_FLUSH (UINT64_C(1) << 31)

static void hist_u8_flush(uint32_t sub[4][256], uint64_t *counts) {
  for (int v = 0; v < 256; v++) {
    counts[v] += (uint64_t)sub[0][v] + sub[1][v] + sub[2][v] + sub[3][v];
    sub[0][v] = sub[1][v] = sub[2][v] = sub[3][v] = 0;
  }
}

static void hist_u8(const plane_rows *r, uint64_t *counts) {
  uint32_t sub[4][256];
  memset(sub, 0, sizeof sub);
  uint64_t pending = 0; /* samples in sub since the last flush */
  for (uint32_t y = 0; y < r->rows; y++) {
    const uint8_t *p = row_at(r, y);
    uint64_t i = 0, n = r->width;
    while (i < n) {
      uint64_t end =
          n - i > HIST_U8_FLUSH - pending ? i + (HIST_U8_FLUSH - pending) : n;
      pending += end - i;
      for (; i + 4 <= end; i += 4) {
        sub[0][p[i]]++;
        sub[1][p[i + 1]]++;
        sub[2][p[i + 2]]++;
        sub[3][p[i + 3]]++;
      }
      for (; i < end; i++)
        sub[0][p[i]]++;
      if (pending == HIST_U8_FLUSH) {
        hist_u8_flush(sub, counts);
        pending = 0;
      }
    }
  }
  hist_u8_flush(sub, counts);
}

static void hist_u16(const plane_rows *r, uint64_t *counts) {
  for (uint32_t y = 0; y < r->rows; y++) {
    const uint16_t *p = row_at(r, y);
    for (uint64_t i = 0; i < r->width; i++)
      counts[p[i]]++;
  }
}

/* The bin rule of imgstat_histogram (see the header); the GPU kernel
 * evaluates the same expression. */
static void hist_f32(const plane_rows *r, imgstat_histogram *h) {
  double lo = h->lo;
  double scale = h->hi > h->lo ? (double)h->bins / (h->hi - h->lo) : 0.0;
  uint32_t last = h->bins - 1;
  for (uint32_t y = 0; y < r->rows; y++) {
    const float *p = row_at(r, y);
    for (uint64_t i = 0; i < r->width; i++) {
      float x = p[i];
      if (isnan(x)) {
        h->nan_count++;
        continue;
      }
      if (isinf(x)) {
        h->inf_count++;
        continue;
      }
      h->counts[imgstat_histogram_f32_bin(lo, scale, last, x)]++;
      h->total++;
    }
  }
}

imgstat_status imgstat_histogram_compute(const imgstat_image *img, int c,
                                         const imgstat_hist_options *opts,
                                         imgstat_histogram *h,
                                         imgstat_error *err) {
  memset(h, 0, sizeof *h);
  if (!img || c < 0 || c >= img->channels)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no channel %d", c);
  uint64_t n = (uint64_t)img->width * img->height;
  plane_rows rows = rows_of(img, c);
  double lo, hi;
  uint32_t bins;
  if (ist_hist_range(opts, img->sample, &bins, &lo, &hi))
    finite_range(&rows, &lo, &hi);
  imgstat_status st =
      imgstat_histogram_alloc(h, img->sample, bins, lo, hi, err);
  if (st != IMGSTAT_OK)
    return st;
  switch (img->sample) {
  case IMGSTAT_U8:
    hist_u8(&rows, h->counts);
    h->total = n;
    break;
  case IMGSTAT_U16:
    hist_u16(&rows, h->counts);
    h->total = n;
    break;
  case IMGSTAT_F32:
    hist_f32(&rows, h);
    break;
  }
  imgstat_histogram_find_used(h);
  return IMGSTAT_OK;
}

imgstat_status imgstat_histogram_add(imgstat_histogram *a,
                                     const imgstat_histogram *b,
                                     imgstat_error *err) {
  if (a->sample != b->sample || a->bins != b->bins || a->lo != b->lo ||
      a->hi != b->hi)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "histograms of different bins cannot be added");
  ist_histogram_add_counts(a, b);
  return IMGSTAT_OK;
}

void ist_histogram_add_counts(imgstat_histogram *a,
                              const imgstat_histogram *b) {
  uint32_t lo, end;
  imgstat_histogram_used(b, &lo, &end);
  for (uint32_t i = lo; i < end; i++)
    a->counts[i] += b->counts[i];
  a->total += b->total;
  a->nan_count += b->nan_count;
  a->inf_count += b->inf_count;
  if (!a->used_end)
    return; /* a's hint: none, and none after */
  if (!b->used_end) {
    a->used_end = 0;
    return;
  }
  a->used_lo = b->used_lo < a->used_lo ? b->used_lo : a->used_lo;
  a->used_end = b->used_end > a->used_end ? b->used_end : a->used_end;
}

void imgstat_histogram_find_used(imgstat_histogram *h) {
  h->used_lo = h->used_end = 0;
  if (!h->counts)
    return;
  uint32_t lo = 0, end = h->bins;
  while (lo < end && !h->counts[lo])
    lo++;
  while (end > lo && !h->counts[end - 1])
    end--;
  if (lo < end) {
    h->used_lo = lo;
    h->used_end = end;
  }
}

uint64_t imgstat_percentile_rank(uint64_t total, double p) {
  if (total == 0)
    return 0;
  if (!(p > 0.0)) /* also NaN */
    return 1;
  if (p >= 100.0)
    return total;
  /* p in millionths of a percent: k = ceil(pm * total / 1e8), exact in 128
   * bits (pm <= 1e8, total < 2^64). */
  uint64_t pm = (uint64_t)llround(p * 1e6);
  unsigned __int128 num = (unsigned __int128)pm * total;
  unsigned __int128 k = (num + 99999999u) / 100000000u;
  if (k < 1)
    k = 1;
  if (k > total)
    k = total;
  return (uint64_t)k;
}

double imgstat_percentile_value(const imgstat_histogram *h, uint64_t k,
                                uint32_t b, uint64_t cum_before,
                                uint64_t count_b) {
  if (h->sample != IMGSTAT_F32)
    return h->lo + (double)b; /* integer bins are values from lo (0, or
                                 -32768 for a pool of int16 samples) */
  if (k <= 1)
    return h->lo;
  if (k >= h->total)
    return h->hi;
  double width = (h->hi - h->lo) / (double)h->bins;
  double left = h->lo + (double)b * width;
  double right = b + 1 == h->bins ? h->hi : h->lo + (double)(b + 1) * width;
  double frac =
      count_b ? ((double)(k - cum_before) - 0.5) / (double)count_b : 0.5;
  double v = left + frac * (right - left);
  if (v < left)
    v = left;
  if (v > right)
    v = right;
  if (v < h->lo)
    v = h->lo;
  if (v > h->hi)
    v = h->hi;
  return v;
}

int imgstat_histogram_percentile(const imgstat_histogram *h, double p,
                                 double *value) {
  if (!h->counts || h->total == 0)
    return 0;
  uint64_t k = imgstat_percentile_rank(h->total, p);
  uint64_t cum = 0;
  uint32_t lo, end; /* the bins before lo hold nothing: cum stays 0 */
  imgstat_histogram_used(h, &lo, &end);
  for (uint32_t b = lo; b < end; b++) {
    uint64_t next = cum + h->counts[b];
    if (next >= k) {
      *value = imgstat_percentile_value(h, k, b, cum, h->counts[b]);
      return 1;
    }
    cum = next;
  }
  /* unreachable when total equals the sum of the counts */
  *value = h->hi;
  return 1;
}

static void moments_f32(const plane_rows *r, imgstat_moments *m) {
  memset(m, 0, sizeof *m);
  double sum = 0;
  uint64_t count = 0;
  for (uint32_t y = 0; y < r->rows; y++) {
    const float *p = row_at(r, y);
    for (uint64_t i = 0; i < r->width; i++) {
      if (isfinite(p[i])) {
        sum += p[i];
        count++;
      }
    }
  }
  if (count == 0)
    return;
  double mean = sum / (double)count;
  double s2 = 0, s3 = 0, s4 = 0;
  for (uint32_t y = 0; y < r->rows; y++) {
    const float *p = row_at(r, y);
    for (uint64_t i = 0; i < r->width; i++) {
      if (!isfinite(p[i]))
        continue;
      double d = (double)p[i] - mean;
      double d2 = d * d;
      s2 += d2;
      s3 += d2 * d;
      s4 += d2 * d2;
    }
  }
  m->count = count;
  m->mean = mean;
  m->m2 = s2 / (double)count;
  m->m3 = s3 / (double)count;
  m->m4 = s4 / (double)count;
}

void imgstat_moments_f32(const float *plane, uint64_t n, imgstat_moments *m) {
  plane_rows r = one_row(plane, n);
  moments_f32(&r, m);
}

void imgstat_image_moments_f32(const imgstat_image *img, int c,
                               imgstat_moments *m) {
  plane_rows r = rows_of(img, c);
  moments_f32(&r, m);
}

void imgstat_moments_from_histogram(const imgstat_histogram *h,
                                    imgstat_moments *m) {
  memset(m, 0, sizeof *m);
  if (!h->counts || h->total == 0 || h->sample == IMGSTAT_F32)
    return;
  /* The exact integer sum (< 2^16 * 2^48 fits in 128 bits) gives the mean
   * to the last bit of a double. */
  uint32_t lo, end; /* the occupied bins: the others add nothing */
  imgstat_histogram_used(h, &lo, &end);
  unsigned __int128 sum = 0;
  for (uint32_t v = lo; v < end; v++)
    sum += (unsigned __int128)h->counts[v] * v;
  double mean = (double)sum / (double)h->total;
  double s2 = 0, s3 = 0, s4 = 0;
  for (uint32_t v = lo; v < end; v++) {
    if (!h->counts[v])
      continue;
    double d = (double)v - mean;
    double d2 = d * d;
    double c = (double)h->counts[v];
    s2 += c * d2;
    s3 += c * d2 * d;
    s4 += c * d2 * d2;
  }
  m->count = h->total;
  m->mean = mean;
  m->m2 = s2 / (double)h->total;
  m->m3 = s3 / (double)h->total;
  m->m4 = s4 / (double)h->total;
}

void imgstat_hist_figures_compute(const imgstat_histogram *h,
                                  const imgstat_moments *m, const double *p,
                                  int np, imgstat_hist_figures *f) {
  memset(f, 0, sizeof *f);
  if (np > IMGSTAT_MAX_PERCENTILES)
    np = IMGSTAT_MAX_PERCENTILES;
  if (!h->counts || h->total == 0)
    return;
  f->has_values = 1;
  imgstat_histogram_percentile(h, 50.0, &f->median);
  f->npercentiles = np;
  for (int i = 0; i < np; i++) {
    f->percentile_p[i] = p[i];
    imgstat_histogram_percentile(h, p[i], &f->percentile[i]);
  }
  double e = 0, n = (double)h->total;
  uint32_t lo, end;
  imgstat_histogram_used(h, &lo, &end);
  for (uint32_t b = lo; b < end; b++) {
    if (h->counts[b]) {
      double q = (double)h->counts[b] / n;
      e -= q * log2(q);
    }
  }
  f->entropy = e > 0 ? e : 0.0; /* no -0 */
  /* A variance that is rounding noise relative to the mean is a constant
   * channel: skewness and kurtosis are then undefined (null), not huge. */
  if (m && m->count > 0 && m->m2 > 0 &&
      m->m2 > 1e-24 * (m->mean * m->mean + 1e-300)) {
    f->has_shape = 1;
    f->skewness = m->m3 / (m->m2 * sqrt(m->m2));
    f->kurtosis = m->m4 / (m->m2 * m->m2) - 3.0;
  }
}

void imgstat_histogram_rebin(const imgstat_histogram *h, uint32_t bins,
                             uint64_t *out) {
  memset(out, 0, (size_t)bins * sizeof *out);
  if (!h->counts || bins == 0 || h->bins == 0)
    return;
  /* Bin b goes to floor(b * bins / h->bins): output bin j takes the run
   * ceil(j * h->bins / bins) <= b < ceil((j + 1) * h->bins / bins), one
   * division an output bin rather than one an input bin (65,536 of them a
   * 16-bit channel, each record's histogram). */
  const uint64_t n = h->bins;
  /* Only the output bins of the occupied ones, from the one that takes
   * the first (bins outside the hint are zero, and so are theirs). */
  uint32_t lo, used_end;
  imgstat_histogram_used(h, &lo, &used_end);
  uint64_t b = lo;
  for (uint32_t j = (uint32_t)((uint64_t)lo * bins / n);
       j < bins && b < used_end; j++) {
    uint64_t end = ((uint64_t)(j + 1) * n + bins - 1) / bins;
    end = end < used_end ? end : used_end;
    uint64_t sum = 0;
    for (; b < end; b++)
      sum += h->counts[b];
    out[j] = sum;
  }
}
