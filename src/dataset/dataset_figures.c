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

static int cmp_ordinal(const void *a, const void *b) {
  uint64_t x = (*(summary *const *)a)->ordinal,
           y = (*(summary *const *)b)->ordinal;
  return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The name of the image of that ordinal (sorted summaries). */
static const char *name_of(summary *const *s, size_t n, char **names,
                           uint64_t ordinal) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s[mid]->ordinal < ordinal)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && s[lo]->ordinal == ordinal ? names[lo] : "";
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
  return k == 0 ? "8-bit" : k == 1 ? "16-bit" : "32-bit float";
}

/* The pooled figures of channel c over the depths in mask. */
static void channel_figures(const imgstat_dataset *d, int layout, int mask,
                            int c, int ddof, summary *const *s, size_t n,
                            char **names, imgstat_dataset_channel *out) {
  imgstat_pool_figures f[NDEPTH], f0[NDEPTH];
  int used[NDEPTH] = {0};
  int kinds = 0, only = -1;
  for (int k = 0; k < NDEPTH; k++) {
    const imgstat_pool *p = &d->g[layout][k].pool;
    if (!(mask & (1 << k)) || p->channels == 0)
      continue;
    imgstat_pool_figures_compute(p, c, ddof, &f[k], NULL);
    imgstat_pool_figures_compute(p, c, 0, &f0[k], NULL);
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
    long double mn = f[k].min * s_k, mx = f[k].max * s_k;
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
    if (k < 2) {
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
    out->sums_exact = only < 2 && !scale;
    return;
  }
  out->min = (double)best_min;
  out->max = (double)best_max;
  out->min_at.file = name_of(s, n, names, kmin.ordinal);
  out->min_at.x = kmin.x;
  out->min_at.y = kmin.y;
  out->max_at.file = name_of(s, n, names, kmax.ordinal);
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
  const group *g8 = &d->g[layout][0], *g16 = &d->g[layout][1],
              *gf = &d->g[layout][2];
  int m8 = (mask & 1) && g8->images, m16 = (mask & 2) && g16->images,
      mf = (mask & 4) && gf->images;
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
    out->nexact = d->nexact[c];
    memcpy(out->exact_rank, d->exact_rank[c], sizeof out->exact_rank);
    memcpy(out->exact_value, d->exact_value[c], sizeof out->exact_value);
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
  memset(want, 0, sizeof(*want) * IMGSTAT_POOL_MAX_CHANNELS);
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
  if (!d || c < 0 || c >= IMGSTAT_POOL_MAX_CHANNELS ||
      d->nexact[c] >= IMGSTAT_DATASET_EXACT_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_set_exact: no room");
  d->exact_rank[c][d->nexact[c]] = rank;
  d->exact_value[c][d->nexact[c]++] = value;
  return IMGSTAT_OK;
}

void imgstat_dataset_set_exact_note(imgstat_dataset *d, const char *note) {
  if (d)
    snprintf(d->exact_note, sizeof d->exact_note, "%s", note ? note : "");
}

/* Robust z-scores of x[0..n) (median and MAD; the mean absolute deviation
 * when the MAD is 0); returns 0 when every value is the same. */
static int robust_z(const double *x, size_t n, double *z, double *work) {
  memcpy(work, x, n * sizeof *work);
  qsort(work, n, sizeof *work, cmp_double);
  double med = n % 2 ? work[n / 2] : (work[n / 2 - 1] + work[n / 2]) / 2;
  double mean_ad = 0;
  for (size_t i = 0; i < n; i++) {
    work[i] = fabs(x[i] - med);
    mean_ad += work[i];
  }
  mean_ad /= (double)n;
  qsort(work, n, sizeof *work, cmp_double);
  double mad = n % 2 ? work[n / 2] : (work[n / 2 - 1] + work[n / 2]) / 2;
  double unit = mad > 0 ? 1.4826 * mad : 1.2533 * mean_ad;
  if (!(unit > 0))
    return 0;
  for (size_t i = 0; i < n; i++)
    z[i] = (x[i] - med) / unit;
  return 1;
}

/* The most frequent key among n (keys sorted copy in work); returns its
 * count and sets *mode. */
static size_t mode_of(const uint64_t *key, size_t n, uint64_t *work,
                      uint64_t *mode) {
  memcpy(work, key, n * sizeof *work);
  /* Shell sort */
  for (size_t gap = n / 2; gap > 0; gap /= 2)
    for (size_t i = gap; i < n; i++)
      for (size_t j = i; j >= gap && work[j - gap] > work[j]; j -= gap) {
        uint64_t t = work[j];
        work[j] = work[j - gap];
        work[j - gap] = t;
      }
  size_t best = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && work[j] == work[i])
      j++;
    if (j - i > best) {
      best = j - i;
      *mode = work[i];
    }
    i = j;
  }
  return best;
}

static imgstat_status outliers(const imgstat_dataset *d, summary *const *s,
                               size_t n, const int *pooled, int layout,
                               char **names, imgstat_dataset_result *res) {
  imgstat_dataset_note *notes = calloc(n ? n : 1, sizeof *notes);
  double *x = malloc((n ? n : 1) * 3 * sizeof *x);
  uint64_t *keys = malloc((n ? n : 1) * 2 * sizeof *keys);
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  if (!notes || !x || !keys || !idx) {
    free(notes);
    free(x);
    free(keys);
    free(idx);
    return IMGSTAT_ERR_NOMEM;
  }
  double thr = d->o.outlier_z;
  /* size, layout and depth against most images */
  for (int what = 0; what < 3 && n >= 3; what++) {
    for (size_t i = 0; i < n; i++)
      keys[i] = what == 0   ? (uint64_t)s[i]->width << 32 | s[i]->height
                : what == 1 ? (uint64_t)s[i]->channels
                            : (uint64_t)s[i]->depth;
    uint64_t mode = 0;
    size_t count = mode_of(keys, n, keys + n, &mode);
    if (2 * count <= n)
      continue;
    for (size_t i = 0; i < n; i++) {
      if (keys[i] == mode)
        continue;
      if (what == 0)
        note_add(&notes[i], IMGSTAT_DATASET_NOTE_SIZE,
                 "size %ux%u, most are %ux%u", s[i]->width, s[i]->height,
                 (unsigned)(mode >> 32), (unsigned)mode);
      else if (what == 1)
        note_add(&notes[i], IMGSTAT_DATASET_NOTE_LAYOUT,
                 "layout %s, most are %s", imgstat_layout_name(s[i]->channels),
                 imgstat_layout_name((int)mode));
      else
        note_add(&notes[i], IMGSTAT_DATASET_NOTE_DEPTH, "depth %s, most are %s",
                 depth_text(s[i]->depth), depth_text((int)mode));
    }
  }
  /* constant images */
  for (size_t i = 0; i < n; i++)
    if (pooled[i] && s[i]->constant)
      note_add(&notes[i], IMGSTAT_DATASET_NOTE_CONSTANT,
               "constant (every sample %.6g)",
               s[i]->const_value * (d->o.scale_unit
                                        ? 1.0
                                        : ist_dataset_depth_top[s[i]->depth]));
  /* means and stds far from the dataset's */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (pooled[i])
      idx[m++] = i;
  if (m >= IMGSTAT_DATASET_OUTLIER_MIN_IMAGES)
    for (int c = 0; c < layout; c++)
      for (int which = 0; which < 2; which++) {
        for (size_t j = 0; j < m; j++)
          x[j] = which ? s[idx[j]]->std[c] : s[idx[j]]->mean[c];
        if (!robust_z(x, m, x + m, x + 2 * m))
          continue;
        for (size_t j = 0; j < m; j++)
          if (fabs(x[m + j]) > thr)
            note_add(&notes[idx[j]], IMGSTAT_DATASET_NOTE_Z,
                     "%s of %s: robust z %+.1f", which ? "std" : "mean",
                     imgstat_channel_name(layout, c), x[m + j]);
      }
  /* an image left out is named once, among the left out */
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (notes[i].reason[0] && pooled[i]) {
      notes[k] = notes[i];
      notes[k].file = names[i];
      notes[k].ordinal = s[i]->ordinal;
      k++;
    }
  free(x);
  free(keys);
  free(idx);
  res->outliers = notes;
  res->noutliers = k;
  return IMGSTAT_OK;
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
  size_t n = d->n;
  summary **s = malloc((n ? n : 1) * sizeof *s);
  int *pooled = calloc(n ? n : 1, sizeof *pooled);
  res->names = calloc(n ? n : 1, sizeof *res->names);
  res->excluded = calloc(n ? n : 1, sizeof *res->excluded);
  if (!s || !pooled || !res->names || !res->excluded)
    goto nomem;
  for (size_t i = 0; i < n; i++)
    s[i] = &d->s[i];
  qsort(s, n, sizeof *s, cmp_ordinal);
  for (size_t i = 0; i < n; i++) {
    res->names[i] = strdup(s[i]->name);
    if (!res->names[i])
      goto nomem;
    res->nnames++;
  }
  res->images = n;
  /* the pool: the layout and depth most images have (every depth with
   * scale_unit), ties to more channels, then to the higher depth; from the
   * counts alone, so that no image's position decides */
  uint64_t count[NLAYOUT][NDEPTH];
  memset(count, 0, sizeof count);
  for (size_t i = 0; i < n; i++)
    count[s[i]->pooled][d->o.scale_unit ? 0 : s[i]->depth]++;
  int layout = 0, depth = 0, mask = 0;
  uint64_t most = 0;
  for (int l = 1; l < NLAYOUT; l++)
    for (int k = 0; k < NDEPTH; k++)
      if (count[l][k] > 0 && count[l][k] >= most) {
        most = count[l][k];
        layout = l;
        depth = k;
      }
  for (int l = 1; l < NLAYOUT; l++)
    for (int k = 0; k < NDEPTH; k++) {
      res->layout_count[l][k] = count[l][k];
      if (most > 0 && count[l][k] == most && (l != layout || k != depth))
        res->layout_tie = 1;
    }
  if (n > 0)
    mask = d->o.scale_unit ? 7 : 1 << depth;
  for (size_t i = 0; i < n; i++) {
    if (s[i]->pooled == layout && (mask & (1 << s[i]->depth))) {
      pooled[i] = 1;
      res->pooled++;
      res->depths |= 1 << s[i]->depth;
      res->pooled_depth[s[i]->depth]++;
      if (s[i]->channels != s[i]->pooled) {
        res->converted++;
        res->converted_from |= 1 << s[i]->channels;
      }
      continue;
    }
    imgstat_dataset_note *e = &res->excluded[res->nexcluded++];
    e->file = res->names[i];
    e->ordinal = s[i]->ordinal;
    e->kinds = (s[i]->pooled != layout ? IMGSTAT_DATASET_NOTE_LAYOUT : 0) |
               (mask & (1 << s[i]->depth) ? 0 : IMGSTAT_DATASET_NOTE_DEPTH);
    note_add(e, 0, "%s %s, the dataset is %s%s%s",
             imgstat_layout_name(s[i]->pooled), depth_text(s[i]->depth),
             imgstat_layout_name(layout), d->o.scale_unit ? "" : " ",
             d->o.scale_unit ? "" : depth_text(depth));
  }
  res->channels = layout;
  for (int c = 0; c < layout; c++) {
    channel_figures(d, layout, mask, c, ddof, s, n, res->names, &res->ch[c]);
    if (d->o.histograms)
      channel_histogram(d, layout, mask, c, res);
  }
  if (outliers(d, s, n, pooled, layout, res->names, res) != IMGSTAT_OK)
    goto nomem;
  free(s);
  free(pooled);
  return IMGSTAT_OK;
nomem:
  free(s);
  free(pooled);
  imgstat_dataset_result_free(res);
  return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
}

void imgstat_dataset_result_free(imgstat_dataset_result *res) {
  if (!res)
    return;
  for (int c = 0; c < IMGSTAT_POOL_MAX_CHANNELS; c++)
    imgstat_histogram_free(&res->ch[c].hist);
  for (size_t i = 0; i < res->nnames; i++)
    free(res->names[i]);
  free(res->names);
  free(res->excluded);
  free(res->outliers);
  memset(res, 0, sizeof *res);
}
