/*
 * The dataset accumulator's result (imgstat_dataset_finish): the pooled
 * figures and histograms per channel, the images left out and the outliers.
 */
#include "dataset_state.h"
#include "imgstat/dataset.h"
#include "merge.h"
#include "pool_key.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the result ------------------------------------------------------------
 */

static long double u128_ld(imgstat_u128 v) {
  return ldexpl((long double)v.hi, 64) + (long double)v.lo;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int cmp_note(const void *a, const void *b) {
  uint64_t x = ((const imgstat_dataset_note *)a)->ordinal,
           y = ((const imgstat_dataset_note *)b)->ordinal;
  return x < y ? -1 : x > y;
}

/* Appends a note to a growing array (0 when out of memory). */
static int note_push(imgstat_dataset_note **notes, size_t *n, size_t *cap,
                     const imgstat_dataset_note *note) {
  if (*n == *cap) {
    size_t ncap = *cap ? 2 * *cap : 16;
    imgstat_dataset_note *p = realloc(*notes, ncap * sizeof *p);
    if (!p)
      return 0;
    *notes = p;
    *cap = ncap;
  }
  (*notes)[(*n)++] = *note;
  return 1;
}

/* Appends reason text to note (joined with "; "). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
note_add(imgstat_dataset_note *note, unsigned kind, const char *fmt, ...) {
  note->kinds |= kind;
  size_t len = strlen(note->reason);
  if (len && len + 2 < sizeof note->reason) {
    memcpy(note->reason + len, "; ", 3);
    len += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  imgstat_number_vsnprintf(note->reason + len, sizeof note->reason - len, fmt,
                           ap);
  va_end(ap);
}

static const char *depth_text(int k) {
  return k == 0   ? "8-bit"
         : k == 1 ? "16-bit"
         : k == 2 ? "32-bit float"
                  : "16-bit signed";
}

/* An int16 pool's exact sums, taken back from the stored samples (the
 * value + 32768) to the values: sum - 32768 n (signed) and
 * sumsq - 65536 sum + 2^30 n (never negative), both in 128 bits. */
static void int16_sums(const imgstat_pool_figures *f, __int128 *sum,
                       unsigned __int128 *sumsq) {
  unsigned __int128 s = (unsigned __int128)f->exact_sum.hi << 64 |
                        f->exact_sum.lo,
                    q = (unsigned __int128)f->exact_sumsq.hi << 64 |
                        f->exact_sumsq.lo,
                    n = f->count, off = IMGSTAT_INT16_OFFSET;
  *sum = (__int128)s - (__int128)(off * n);
  *sumsq = q - 2 * off * s + off * off * n;
}

/* The decimal text of a signed 128-bit integer. */
static void i128_format(__int128 v, char text[IMGSTAT_U128_TEXT]) {
  unsigned __int128 m = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
  imgstat_u128 u = {(uint64_t)m, (uint64_t)(m >> 64)};
  char digits[IMGSTAT_U128_TEXT];
  imgstat_u128_format(u, digits);
  /* an int16 pool's sums: |v| < 2^15 * 2^64, 24 digits */
  size_t len = strlen(digits), at = v < 0;
  if (len + at >= IMGSTAT_U128_TEXT)
    len = IMGSTAT_U128_TEXT - 1 - at;
  text[0] = '-';
  memcpy(text + at, digits, len);
  text[at + len] = '\0';
}

/* The pooled figures of channel c over the depths in mask; *at: the
 * ordinals of the images of the minimum and the maximum (their names are
 * filled in at the end). */
static void channel_figures(const imgstat_dataset *d, int layout, int mask,
                            int c, int ddof, uint64_t at[2],
                            imgstat_dataset_channel *out) {
  imgstat_pool_figures f[NDEPTH], f0[NDEPTH];
  int used[NDEPTH] = {0};
  int kinds = 0, only = -1;
  for (int k = 0; k < NDEPTH; k++) {
    const group *g = ist_dataset_group(d, layout, k);
    if (!(mask & (1 << k)) || !ist_group_used(g))
      continue;
    ist_group_figures(g, c, ddof, &f[k]);
    ist_group_figures(g, c, 0, &f0[k]);
    used[k] = 1;
    kinds++;
    only = k;
  }
  if (kinds == 0)
    return;
  int scale = d->o.scale_unit;
  /* extrema: scaled values compared exactly enough (distinct scaled
   * integer values differ by far more than long double's resolution) */
  long double best_min = INFINITY, best_max = -INFINITY;
  imgstat_pool_key kmin = {UINT64_MAX, 0, 0}, kmax = kmin;
  long double sum = 0, sum_sq = 0, mean = 0;
  uint64_t count = 0;
  for (int k = 0; k < NDEPTH; k++) {
    if (!used[k])
      continue;
    long double s_k = scale ? 1.0L / ist_dataset_depth_top[k] : 1.0L;
    out->nan_count += f[k].nan_count;
    out->inf_count += f[k].inf_count;
    if (!f[k].has_values)
      continue;
    long double shift = k == IST_DEPTH_INT16 ? IMGSTAT_INT16_OFFSET : 0;
    long double mn = (f[k].min - shift) * s_k, mx = (f[k].max - shift) * s_k;
    if (mn < best_min ||
        (mn == best_min && ist_pool_key_before(f[k].min_key, kmin))) {
      best_min = mn;
      kmin = f[k].min_key;
    }
    if (mx > best_max ||
        (mx == best_max && ist_pool_key_before(f[k].max_key, kmax))) {
      best_max = mx;
      kmax = f[k].max_key;
    }
    count += f[k].count;
    if (k == IST_DEPTH_INT16) {
      __int128 is;
      unsigned __int128 iq;
      int16_sums(&f[k], &is, &iq);
      sum += (long double)is;
      sum_sq += (long double)iq;
    } else if (k < 2) {
      sum += u128_ld(f[k].exact_sum) * s_k;
      sum_sq += u128_ld(f[k].exact_sumsq) * s_k * s_k;
    } else {
      long double m = f0[k].mean, sd = f0[k].std;
      sum += (long double)f[k].count * m * s_k;
      sum_sq += (long double)f[k].count * (sd * sd + m * m) * s_k * s_k;
    }
  }
  out->count = count;
  out->has_values = count > 0;
  if (!out->has_values) {
    out->sum = 0;
    snprintf(out->sum_text, sizeof out->sum_text, "0");
    snprintf(out->sum_sq_text, sizeof out->sum_sq_text, "0");
    out->sums_exact = (only < 2 || only == IST_DEPTH_INT16) && !scale;
    return;
  }
  out->min = (double)best_min;
  out->max = (double)best_max;
  at[0] = kmin.ordinal;
  out->min_at.x = kmin.x;
  out->min_at.y = kmin.y;
  at[1] = kmax.ordinal;
  out->max_at.x = kmax.x;
  out->max_at.y = kmax.y;
  out->has_std = count > (uint64_t)ddof;
  if (kinds == 1 && !scale) {
    /* one exact pool: its figures, rounded once */
    out->mean = f[only].mean;
    out->std = f[only].std;
    out->sum = (double)sum;
    out->sum_sq = (double)sum_sq;
    if (only < 2) {
      out->sums_exact = 1;
      imgstat_u128_format(f[only].exact_sum, out->sum_text);
      imgstat_u128_format(f[only].exact_sumsq, out->sum_sq_text);
    } else if (only == IST_DEPTH_INT16) {
      __int128 is;
      unsigned __int128 iq;
      int16_sums(&f[only], &is, &iq);
      out->sums_exact = 1;
      i128_format(is, out->sum_text);
      i128_format((__int128)iq, out->sum_sq_text);
      /* the double nearest to the signed sum over the count: both exact in
       * a double up to 2^38 samples, so one correctly rounded division */
      out->mean = (double)((long double)is / (long double)count);
      if (is > -((__int128)1 << 53) && is < ((__int128)1 << 53) &&
          count < (UINT64_C(1) << 53))
        out->mean = (double)is / (double)count;
    }
    return;
  }
  mean = sum / (long double)count;
  long double m2 = 0;
  for (int k = 0; k < NDEPTH; k++) {
    if (!used[k] || !f[k].has_values)
      continue;
    long double s_k = scale ? 1.0L / ist_dataset_depth_top[k] : 1.0L;
    long double nk = (long double)f[k].count;
    long double mk, m2k;
    if (k < 2) {
      long double sk = u128_ld(f[k].exact_sum);
      mk = sk / nk;
      /* N q - s^2 as the pool computes it exactly: from its std */
      long double sd = f0[k].std;
      m2k = sd * sd * nk;
    } else {
      mk = f0[k].mean;
      m2k = (long double)f0[k].std * f0[k].std * nk;
    }
    ist_pooled_m2_add(&m2, nk, mk * s_k, m2k * s_k * s_k, mean);
  }
  out->mean = (double)mean;
  out->sum = (double)sum;
  out->sum_sq = (double)sum_sq;
  if (out->has_std)
    out->std = (double)ist_pooled_std(m2, count, ddof);
}

/* The pooled histograms of channel c (see imgstat_dataset_result). */
static void channel_histogram(const imgstat_dataset *d, int layout, int mask,
                              int c, imgstat_dataset_result *res) {
  imgstat_dataset_channel *out = &res->ch[c];
  const group *g8 = ist_dataset_group(d, layout, 0),
              *g16 = ist_dataset_group(d, layout, 1),
              *gf = ist_dataset_group(d, layout, 2),
              *gi = ist_dataset_group(d, layout, IST_DEPTH_INT16);
  int m8 = (mask & 1) && g8->images, m16 = (mask & 2) && g16->images,
      mf = (mask & 4) && gf->images,
      mi = (mask & (1 << IST_DEPTH_INT16)) && gi->images;
  if (mi) { /* pooled alone: the stored bins, the values from -32768 */
    if (gi->hist_images != gi->images || !gi->hist[c].counts) {
      snprintf(res->histogram_note, sizeof res->histogram_note,
               "some images brought no histogram");
      return;
    }
    imgstat_histogram *h = &out->hist;
    if (imgstat_histogram_alloc(h, IMGSTAT_U16, 0, 0, 0, NULL) != IMGSTAT_OK)
      return;
    ist_dataset_hist_add(h, &gi->hist[c], 0);
    h->lo = -(double)IMGSTAT_INT16_OFFSET;
    h->hi = 65535.0 - IMGSTAT_INT16_OFFSET;
    res->hist_scale = 1.0;
    imgstat_moments m;
    imgstat_moments_from_histogram(h, &m);
    imgstat_hist_figures_compute(h, &m, NULL, 0, &out->hist_figures);
    out->has_histogram = 1;
    return;
  }
  if (mf && (m8 || m16)) {
    snprintf(res->histogram_note, sizeof res->histogram_note,
             "float and integer images cannot share a pooled histogram");
    return;
  }
  const group *gs[3] = {m8 ? g8 : NULL, m16 ? g16 : NULL, mf ? gf : NULL};
  for (int k = 0; k < 3; k++)
    if (gs[k] &&
        (gs[k]->hist_images != gs[k]->images || !gs[k]->hist[c].counts)) {
      snprintf(res->histogram_note, sizeof res->histogram_note, "%s",
               k == 2 ? "float images need --range LOW,HIGH for a pooled "
                        "histogram"
                      : "some images brought no histogram");
      return;
    }
  imgstat_histogram *h = &out->hist;
  if (mf) {
    if (imgstat_histogram_alloc(h, IMGSTAT_F32, gf->hist[c].bins,
                                gf->hist[c].lo, gf->hist[c].hi,
                                NULL) != IMGSTAT_OK)
      return;
    ist_dataset_hist_add(h, &gf->hist[c], 0);
    res->hist_scale = 1.0;
  } else if (m16) {
    if (imgstat_histogram_alloc(h, IMGSTAT_U16, 0, 0, 0, NULL) != IMGSTAT_OK)
      return;
    ist_dataset_hist_add(h, &g16->hist[c], 0);
    if (m8) /* v / 255 = 257 v / 65535: exact */
      for (uint32_t v = 0; v < 256; v++)
        h->counts[257 * v] += g8->hist[c].counts[v];
    if (m8)
      h->total += g8->hist[c].total;
    res->hist_scale = d->o.scale_unit ? 1.0 / 65535.0 : 1.0;
  } else if (m8) {
    if (imgstat_histogram_alloc(h, IMGSTAT_U8, 0, 0, 0, NULL) != IMGSTAT_OK)
      return;
    ist_dataset_hist_add(h, &g8->hist[c], 0);
    res->hist_scale = d->o.scale_unit ? 1.0 / 255.0 : 1.0;
  } else {
    return;
  }
  imgstat_moments m;
  imgstat_moments_from_histogram(h, &m);
  imgstat_hist_figures_compute(h, mf ? NULL : &m, NULL, 0, &out->hist_figures);
  out->has_histogram = 1;
  if (mf) {
    if (c < d->nexact_channels) {
      out->nexact = d->nexact[c];
      memcpy(out->exact_rank, d->exact_rank[c], sizeof out->exact_rank);
      memcpy(out->exact_value, d->exact_value[c], sizeof out->exact_value);
    }
    double v;
    if (imgstat_dataset_channel_percentile(out, 50.0, &v))
      out->hist_figures.median = v;
    if (d->exact_note[0] && !res->histogram_note[0])
      snprintf(res->histogram_note, sizeof res->histogram_note, "%s",
               d->exact_note);
  }
}

/* ---- exact float percentiles ----------------------------------------------
 */

int imgstat_dataset_channel_percentile(const imgstat_dataset_channel *ch,
                                       double p, double *value) {
  if (!ch->has_histogram || !ch->hist.counts || ch->hist.total == 0)
    return 0;
  uint64_t k = imgstat_percentile_rank(ch->hist.total, p);
  for (int i = 0; i < ch->nexact; i++)
    if (ch->exact_rank[i] == k) {
      *value = ch->exact_value[i];
      return 1;
    }
  return imgstat_histogram_percentile(&ch->hist, p, value);
}

int imgstat_dataset_exact_plan(const imgstat_dataset_result *r, const double *p,
                               int np, imgstat_dataset_exact_want *want) {
  memset(want, 0, sizeof(*want) * (size_t)r->channels);
  int any = 0;
  for (int c = 0; c < r->channels; c++) {
    const imgstat_histogram *h = &r->ch[c].hist;
    imgstat_dataset_exact_want *w = &want[c];
    if (!r->ch[c].has_histogram || h->sample != IMGSTAT_F32 || !h->total)
      continue;
    for (int i = -1; i < np && i + 1 < IMGSTAT_DATASET_EXACT_MAX; i++) {
      uint64_t k = imgstat_percentile_rank(h->total, i < 0 ? 50.0 : p[i]);
      int seen = 0;
      for (int j = 0; j < w->n; j++)
        seen |= w->rank[j] == k;
      if (!seen)
        w->rank[w->n++] = k;
    }
    /* each rank's bin, from the cumulative counts */
    uint64_t cum = 0;
    for (uint32_t b = 0; b < h->bins; b++) {
      uint64_t next = cum + h->counts[b];
      int here = 0;
      for (int j = 0; j < w->n; j++)
        if (w->rank[j] > cum && w->rank[j] <= next) {
          w->bin[j] = b;
          w->before[j] = cum;
          here = 1;
        }
      if (here) {
        w->bins[w->nbins] = b;
        w->bin_count[w->nbins++] = h->counts[b];
        w->samples += h->counts[b];
      }
      cum = next;
    }
    any = 1;
  }
  return any;
}

imgstat_status imgstat_dataset_set_exact(imgstat_dataset *d, int c,
                                         uint64_t rank, double value,
                                         imgstat_error *err) {
  if (!d || c < 0 || c >= IMGSTAT_MAX_CHANNELS ||
      (c < d->nexact_channels && d->nexact[c] >= IMGSTAT_DATASET_EXACT_MAX))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_set_exact: no room");
  if (c >= d->nexact_channels) { /* room for channels 0..c */
    size_t n = (size_t)c + 1, was = (size_t)d->nexact_channels;
    int *ne = realloc(d->nexact, n * sizeof *ne);
    if (ne)
      d->nexact = ne;
    uint64_t(*rank)[IMGSTAT_DATASET_EXACT_MAX] =
        realloc(d->exact_rank, n * sizeof *rank);
    if (rank)
      d->exact_rank = rank;
    double(*value)[IMGSTAT_DATASET_EXACT_MAX] =
        realloc(d->exact_value, n * sizeof *value);
    if (value)
      d->exact_value = value;
    if (!ne || !rank || !value)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    memset(d->nexact + was, 0, (n - was) * sizeof *ne);
    d->nexact_channels = (int)n;
  }
  d->exact_rank[c][d->nexact[c]] = rank;
  d->exact_value[c][d->nexact[c]++] = value;
  return IMGSTAT_OK;
}

void imgstat_dataset_set_exact_note(imgstat_dataset *d, const char *note) {
  if (d)
    snprintf(d->exact_note, sizeof d->exact_note, "%s", note ? note : "");
}

/* The k-th smallest of a[0..n) (n > 0), a's order changed so that what
 * comes after it is not smaller (a three-way quickselect: linear on
 * average, where a sort was n log n). */
static double kth(double *a, size_t n, size_t k) {
  size_t lo = 0, hi = n - 1;
  while (lo < hi) {
    double p = a[lo + (hi - lo) / 2], t;
    size_t lt = lo, i = lo, gt = hi + 1;
    while (i < gt) {
      if (a[i] < p) {
        t = a[lt];
        a[lt++] = a[i];
        a[i++] = t;
      } else if (a[i] > p) {
        t = a[--gt];
        a[gt] = a[i];
        a[i] = t;
      } else {
        i++;
      }
    }
    if (k < lt)
      hi = lt - 1;
    else if (k >= gt)
      lo = gt;
    else
      return p;
  }
  return a[k];
}

/* The median of a[0..n) (n > 0; a's order changed): the middle value, or
 * the mean of the two middle ones. */
static double median_of(double *a, size_t n) {
  double low = kth(a, n, n % 2 ? n / 2 : n / 2 - 1);
  if (n % 2)
    return low;
  double high = a[n / 2];
  for (size_t i = n / 2 + 1; i < n; i++)
    if (a[i] < high)
      high = a[i];
  return (low + high) / 2;
}

/* Whether summary s is pooled: pool holds the pool's layout and its mask
 * of depths. */
static int pooled_in(const int pool[2], const summary *s) {
  return s->pooled == pool[0] && (pool[1] >> s->depth & 1);
}

/* The robust z-scores' centre and unit of a channel's means or stds over
 * the pooled images (median and MAD; the mean absolute deviation when the
 * MAD is 0): off when every value is the same. */
typedef struct zrule {
  int on;
  double med, unit;
} zrule;

/* Channel c's means (which 0) or stds (1) of the pooled images into w (m
 * of them, in the order added); 0 when out of memory. */
static int z_values(const imgstat_dataset *d, const int *pooled_of, int c,
                    int which, double *w) {
  summary_reader r;
  summary s;
  size_t j = 0;
  int got;
  ist_summary_reader_start(&r, &d->s);
  r.no_names = 1;
  while ((got = ist_summary_next(&r, &s)) > 0)
    if (pooled_in(pooled_of, &s))
      w[j++] = which ? s.std[c] : s.mean[c];
  ist_summary_reader_end(&r);
  return got == 0;
}

static imgstat_status z_rule(const imgstat_dataset *d, const int *pooled_of,
                             size_t m, int c, int which, zrule *z) {
  z->on = 0;
  double *w = malloc(m * sizeof *w);
  if (!w || !z_values(d, pooled_of, c, which, w)) {
    free(w);
    return IMGSTAT_ERR_NOMEM;
  }
  double med = median_of(w, m);
  if (!z_values(d, pooled_of, c, which, w)) {
    free(w);
    return IMGSTAT_ERR_NOMEM;
  }
  double mean_ad = 0;
  for (size_t j = 0; j < m; j++) {
    w[j] = fabs(w[j] - med);
    mean_ad += w[j];
  }
  mean_ad /= (double)m;
  double mad = median_of(w, m);
  free(w);
  double unit = mad > 0 ? 1.4826 * mad : 1.2533 * mean_ad;
  if (unit > 0) {
    z->on = 1;
    z->med = med;
    z->unit = unit;
  }
  return IMGSTAT_OK;
}

/* The key of the images' sizes (0), layouts (1) and depths (2) that more
 * than half of them share, each (Boyer and Moore's majority vote: one pass
 * for the candidates, one to count them): against[what] 1 when there is
 * one, in mode[what]. 0, or -1 when out of memory. */
static int majorities(const imgstat_dataset *d, int against[3],
                      uint64_t mode[3]) {
  uint64_t key[3];
  size_t votes[3] = {0, 0, 0}, count[3] = {0, 0, 0};
  summary_reader r;
  summary s;
  int got = 0;
  for (int pass = 0; pass < 2 && got == 0; pass++) {
    ist_summary_reader_start(&r, &d->s);
    r.no_names = 1;
    while ((got = ist_summary_next(&r, &s)) > 0) {
      key[0] = (uint64_t)s.width << 32 | s.height;
      key[1] = (uint64_t)s.channels;
      key[2] = (uint64_t)s.depth;
      for (int w = 0; w < 3; w++) {
        if (pass == 1)
          count[w] += key[w] == mode[w];
        else if (votes[w] == 0)
          mode[w] = key[w], votes[w] = 1;
        else
          votes[w] += key[w] == mode[w] ? 1 : (size_t)-1;
      }
    }
    ist_summary_reader_end(&r);
  }
  for (int w = 0; w < 3; w++)
    against[w] = 2 * count[w] > d->s.n;
  return got < 0 ? -1 : 0;
}

/* The outliers among the pooled images (pooled_of: the pool's layout and
 * depth mask, as pooled_in takes them; m of them), in ordinal order. */
static imgstat_status outliers(const imgstat_dataset *d, const int *pooled_of,
                               size_t m, int layout,
                               imgstat_dataset_result *res) {
  size_t n = d->s.n;
  double thr = d->o.outlier_z;
  /* size, layout and depth against most images */
  int against[3] = {0, 0, 0};
  uint64_t mode[3] = {0, 0, 0};
  if (n >= 3 && majorities(d, against, mode) < 0)
    return IMGSTAT_ERR_NOMEM;
  /* means and stds far from the dataset's */
  zrule(*z)[2] = calloc(layout > 0 ? (size_t)layout : 1, sizeof *z);
  if (!z)
    return IMGSTAT_ERR_NOMEM;
  if (m >= IMGSTAT_DATASET_OUTLIER_MIN_IMAGES)
    for (int c = 0; c < layout; c++)
      for (int which = 0; which < 2; which++)
        if (z_rule(d, pooled_of, m, c, which, &z[c][which]) != IMGSTAT_OK) {
          free(z);
          return IMGSTAT_ERR_NOMEM;
        }
  imgstat_dataset_note *notes = NULL;
  size_t k = 0, cap = 0;
  summary_reader r;
  summary s;
  int got;
  ist_summary_reader_start(&r, &d->s);
  r.no_names = 1;
  while ((got = ist_summary_next(&r, &s)) > 0) {
    if (!pooled_in(pooled_of, &s))
      continue; /* an image left out is named once, among the left out */
    imgstat_dataset_note note;
    memset(&note, 0, sizeof note);
    if (against[0] && ((uint64_t)s.width << 32 | s.height) != mode[0])
      note_add(&note, IMGSTAT_DATASET_NOTE_SIZE, "size %ux%u, most are %ux%u",
               s.width, s.height, (unsigned)(mode[0] >> 32), (unsigned)mode[0]);
    if (against[1] && (uint64_t)s.channels != mode[1])
      note_add(&note, IMGSTAT_DATASET_NOTE_LAYOUT, "layout %s, most are %s",
               imgstat_layout_name(s.channels),
               imgstat_layout_name((int)mode[1]));
    if (against[2] && (uint64_t)s.depth != mode[2])
      note_add(&note, IMGSTAT_DATASET_NOTE_DEPTH, "depth %s, most are %s",
               depth_text(s.depth), depth_text((int)mode[2]));
    if (s.constant)
      note_add(&note, IMGSTAT_DATASET_NOTE_CONSTANT,
               "constant (every sample %.6g)",
               s.const_value *
                   (d->o.scale_unit ? 1.0 : ist_dataset_depth_top[s.depth]));
    for (int c = 0; c < layout; c++)
      for (int which = 0; which < 2; which++) {
        if (!z[c][which].on)
          continue;
        double x = which ? s.std[c] : s.mean[c];
        double zs = (x - z[c][which].med) / z[c][which].unit;
        if (fabs(zs) > thr)
          note_add(&note, IMGSTAT_DATASET_NOTE_Z, "%s of %s: robust z %+.1f",
                   which ? "std" : "mean", imgstat_channel_name(layout, c), zs);
      }
    if (!note.reason[0])
      continue;
    note.ordinal = s.ordinal;
    if (!note_push(&notes, &k, &cap, &note)) {
      got = -1;
      break;
    }
  }
  ist_summary_reader_end(&r);
  free(z);
  if (got < 0) {
    free(notes);
    return IMGSTAT_ERR_NOMEM;
  }
  if (k > 1)
    qsort(notes, k, sizeof *notes, cmp_note);
  res->outliers = notes;
  res->noutliers = k;
  return IMGSTAT_OK;
}

/* The names the result points to, copied from the summaries in one pass:
 * those of the ordinals in want (n, sorted, distinct; "" for one that no
 * summary has). */
static imgstat_status copy_names(const imgstat_dataset *d, const uint64_t *want,
                                 size_t n, imgstat_dataset_result *res) {
  res->names = calloc(n ? n : 1, sizeof *res->names);
  if (!res->names)
    return IMGSTAT_ERR_NOMEM;
  res->nnames = n;
  summary_reader r;
  summary s;
  int got;
  ist_summary_reader_start(&r, &d->s);
  while ((got = ist_summary_next(&r, &s)) > 0) {
    const uint64_t *at = bsearch(&s.ordinal, want, n, sizeof *want, cmp_u64);
    if (at && !res->names[at - want]) {
      res->names[at - want] = strdup(s.name);
      if (!res->names[at - want]) {
        got = -1;
        break;
      }
    }
  }
  ist_summary_reader_end(&r);
  for (size_t i = 0; got >= 0 && i < n; i++)
    if (!res->names[i] && !(res->names[i] = strdup("")))
      got = -1;
  return got < 0 ? IMGSTAT_ERR_NOMEM : IMGSTAT_OK;
}

static const char *name_at(const imgstat_dataset_result *res,
                           const uint64_t *want, size_t n, uint64_t ordinal) {
  const uint64_t *at = bsearch(&ordinal, want, n, sizeof *want, cmp_u64);
  return at ? res->names[at - want] : "";
}

imgstat_status imgstat_dataset_finish(const imgstat_dataset *d, int ddof,
                                      imgstat_dataset_result *res,
                                      imgstat_error *err) {
  if (!d || !res)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_finish: no accumulator");
  memset(res, 0, sizeof *res);
  res->failed = d->failed;
  res->scale_unit = d->o.scale_unit;
  res->as = d->o.as;
  res->ddof = ddof;
  res->outlier_z = d->o.outlier_z;
  res->hist_scale = 1.0;
  size_t n = d->s.n;
  uint64_t *want = NULL;
  uint64_t(*at)[2] = NULL;
  summary_reader r;
  summary s;
  int got;
  res->images = n;
  /* the pool: the layout and depth most images have (every depth with
   * scale_unit), ties to more channels, then to the higher depth; from the
   * counts alone, so that no image's position decides */
  /* count[l][k]: images of pooled channels l and depth k, l < nl */
  int nl = d->nlayout > 1 ? d->nlayout : 1;
  uint64_t(*count)[NDEPTH] = calloc((size_t)nl, sizeof *count);
  res->layout_count = calloc((size_t)nl, sizeof *res->layout_count);
  res->nlayout_count = nl;
  if (!count || !res->layout_count) {
    free(count);
    goto nomem;
  }
  ist_summary_reader_start(&r, &d->s);
  r.no_names = 1;
  while ((got = ist_summary_next(&r, &s)) > 0)
    if (s.pooled < nl) /* (always: every one made its group) */
      count[s.pooled][d->o.scale_unit ? 0 : s.depth]++;
  ist_summary_reader_end(&r);
  if (got < 0) {
    free(count);
    goto nomem;
  }
  int layout = 0, depth = 0, mask = 0;
  uint64_t most = 0;
  for (int l = 1; l < nl; l++)
    for (int k = 0; k < NDEPTH; k++)
      if (count[l][k] > 0 && count[l][k] >= most) {
        most = count[l][k];
        layout = l;
        depth = k;
      }
  for (int l = 1; l < nl; l++)
    for (int k = 0; k < NDEPTH; k++) {
      res->layout_count[l][k] = count[l][k];
      if (most > 0 && count[l][k] == most && (l != layout || k != depth))
        res->layout_tie = 1;
    }
  free(count);
  if (n > 0)
    mask = d->o.scale_unit ? 7 : 1 << depth;
  int pooled_of[2] = {layout, mask};
  size_t excluded_cap = 0;
  ist_summary_reader_start(&r, &d->s);
  r.no_names = 1;
  while ((got = ist_summary_next(&r, &s)) > 0) {
    if (pooled_in(pooled_of, &s)) {
      res->pooled++;
      res->depths |= 1 << s.depth;
      res->pooled_depth[s.depth]++;
      if (s.channels != s.pooled) {
        res->converted++;
        res->converted_from |= 1 << s.channels;
      }
      continue;
    }
    imgstat_dataset_note e;
    memset(&e, 0, sizeof e);
    e.ordinal = s.ordinal;
    e.kinds = (s.pooled != layout ? IMGSTAT_DATASET_NOTE_LAYOUT : 0) |
              (mask & (1 << s.depth) ? 0 : IMGSTAT_DATASET_NOTE_DEPTH);
    note_add(&e, 0, "%s %s, the dataset is %s%s%s",
             imgstat_layout_name(s.pooled), depth_text(s.depth),
             imgstat_layout_name(layout), d->o.scale_unit ? "" : " ",
             d->o.scale_unit ? "" : depth_text(depth));
    if (!note_push(&res->excluded, &res->nexcluded, &excluded_cap, &e)) {
      got = -1;
      break;
    }
  }
  ist_summary_reader_end(&r);
  if (got < 0)
    goto nomem;
  if (res->nexcluded > 1)
    qsort(res->excluded, res->nexcluded, sizeof *res->excluded, cmp_note);
  res->channels = layout;
  res->ch = calloc(layout > 0 ? (size_t)layout : 1, sizeof *res->ch);
  at = malloc((layout > 0 ? (size_t)layout : 1) * sizeof *at);
  if (!res->ch || !at)
    goto nomem;
  for (int c = 0; c < layout; c++) {
    channel_figures(d, layout, mask, c, ddof, at[c], &res->ch[c]);
    if (d->o.histograms)
      channel_histogram(d, layout, mask, c, res);
  }
  if (outliers(d, pooled_of, res->pooled, layout, res) != IMGSTAT_OK)
    goto nomem;
  /* the names the result names */
  size_t nwant = 0;
  want = malloc((2 * (size_t)layout + res->nexcluded + res->noutliers + 1) *
                sizeof *want);
  if (!want)
    goto nomem;
  for (int c = 0; c < layout; c++)
    if (res->ch[c].has_values) {
      want[nwant++] = at[c][0];
      want[nwant++] = at[c][1];
    }
  for (size_t i = 0; i < res->nexcluded; i++)
    want[nwant++] = res->excluded[i].ordinal;
  for (size_t i = 0; i < res->noutliers; i++)
    want[nwant++] = res->outliers[i].ordinal;
  qsort(want, nwant, sizeof *want, cmp_u64);
  size_t distinct = 0;
  for (size_t i = 0; i < nwant; i++)
    if (distinct == 0 || want[distinct - 1] != want[i])
      want[distinct++] = want[i];
  if (copy_names(d, want, distinct, res) != IMGSTAT_OK)
    goto nomem;
  for (int c = 0; c < layout; c++)
    if (res->ch[c].has_values) {
      res->ch[c].min_at.file = name_at(res, want, distinct, at[c][0]);
      res->ch[c].max_at.file = name_at(res, want, distinct, at[c][1]);
    }
  for (size_t i = 0; i < res->nexcluded; i++)
    res->excluded[i].file =
        name_at(res, want, distinct, res->excluded[i].ordinal);
  for (size_t i = 0; i < res->noutliers; i++)
    res->outliers[i].file =
        name_at(res, want, distinct, res->outliers[i].ordinal);
  free(want);
  free(at);
  imgstat_status st = ist_dataset_labels_finish(d, ddof, res, err);
  if (st != IMGSTAT_OK)
    imgstat_dataset_result_free(res);
  return st;
nomem:
  free(want);
  free(at);
  imgstat_dataset_result_free(res);
  return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
}

void imgstat_dataset_result_free(imgstat_dataset_result *res) {
  if (!res)
    return;
  for (int c = 0; res->ch && c < res->channels; c++)
    imgstat_histogram_free(&res->ch[c].hist);
  free(res->ch);
  free(res->layout_count);
  for (size_t i = 0; i < res->nnames; i++)
    free(res->names[i]);
  free(res->names);
  free(res->excluded);
  free(res->outliers);
  ist_dataset_labels_result_free(res);
  memset(res, 0, sizeof *res);
}
