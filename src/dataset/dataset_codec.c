/*
 * The dataset accumulator's serialized form (imgstat_dataset_serialize,
 * imgstat_dataset_deserialize): little-endian, checked by its FNV-1a sum.
 */
#include "byte_buf.h"
#include "checksum.h"
#include "dataset_state.h"
#include "imgstat/dataset.h"

#include <stdlib.h>
#include <string.h>

/* ---- the serialized form ---------------------------------------------------
 */

#define DS_MAGIC "IMGSDSET"
#define DS_VERSION 3u /* 2: the labels' pools; 3: the groups made only */

imgstat_status imgstat_dataset_serialize(const imgstat_dataset *d, void **buf,
                                         size_t *size, imgstat_error *err) {
  if (!d || !buf || !size)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_serialize: no accumulator");
  ist_wbuf w = {NULL, 0, 0, 0};
  ist_w_bytes(&w, DS_MAGIC, 8);
  ist_w_u64(&w, DS_VERSION);
  ist_w_u64(&w, (uint64_t)d->o.as);
  ist_w_u64(&w, (uint64_t)d->o.scale_unit);
  ist_w_f64(&w, d->o.outlier_z);
  ist_w_u64(&w, (uint64_t)d->o.histograms);
  ist_w_u64(&w, (uint64_t)d->o.have_range);
  ist_w_f64(&w, d->o.lo);
  ist_w_f64(&w, d->o.hi);
  ist_w_u64(&w, d->o.float_bins);
  ist_w_u64(&w, d->failed);
  uint8_t pool[IMGSTAT_POOL_SERIALIZED_MAX];
  uint64_t ngroups = 0;
  for (int i = 0; i < d->nlayout * NDEPTH; i++)
    ngroups += d->g[i] != NULL;
  ist_w_u64(&w, ngroups);
  for (int i = 0; i < d->nlayout * NDEPTH; i++) {
    const group *g = d->g[i];
    if (!g)
      continue;
    ist_w_u64(&w, (uint64_t)g->layout);
    ist_w_u64(&w, (uint64_t)(i % NDEPTH));
    for (int j = 0; j < g->npools; j++) {
      size_t used = 0;
      imgstat_status st =
          imgstat_pool_serialize(&g->pool[j], pool, sizeof pool, &used, err);
      if (st != IMGSTAT_OK) {
        free(w.p);
        return st;
      }
      ist_w_u64(&w, used);
      ist_w_bytes(&w, pool, used);
    }
    ist_w_u64(&w, g->first);
    ist_w_u64(&w, g->images);
    ist_w_u64(&w, g->hist_images);
    for (int c = 0; c < g->layout; c++) {
      const imgstat_histogram *h = &g->hist[c];
      ist_w_u64(&w, h->counts ? h->bins : 0);
      if (!h->counts)
        continue;
      ist_w_u64(&w, h->total);
      ist_w_u64(&w, h->nan_count);
      ist_w_u64(&w, h->inf_count);
      for (uint32_t b = 0; b < h->bins; b++)
        ist_w_u64(&w, h->counts[b]);
    }
  }
  ist_w_u64(&w, d->s.n);
  summary_reader rd;
  summary sum;
  const summary *s = &sum;
  int got;
  ist_summary_reader_start(&rd, &d->s);
  while ((got = ist_summary_next(&rd, &sum)) > 0) {
    size_t len = strlen(s->name);
    ist_w_u64(&w, s->ordinal);
    ist_w_u64(&w, len);
    ist_w_bytes(&w, s->name, len);
    ist_w_u64(&w, (uint64_t)s->width << 32 | s->height);
    ist_w_u64(&w, (uint64_t)s->channels);
    ist_w_u64(&w, (uint64_t)s->pooled);
    ist_w_u64(&w, (uint64_t)s->depth | (uint64_t)s->constant << 8);
    ist_w_f64(&w, s->const_value);
    for (int c = 0; c < s->pooled; c++) {
      ist_w_f64(&w, s->mean[c]);
      ist_w_f64(&w, s->std[c]);
    }
  }
  ist_summary_reader_end(&rd);
  if (got < 0)
    w.failed = 1;
  /* the labels' accumulators, each in its own serialized form */
  ist_w_u64(&w, d->nlabels);
  for (size_t k = 0; k < d->nlabels; k++) {
    void *lb = NULL;
    size_t ln = 0;
    imgstat_status st =
        imgstat_dataset_serialize(d->labels[k].d, &lb, &ln, err);
    if (st != IMGSTAT_OK) {
      free(w.p);
      return st;
    }
    ist_w_u64(&w, d->labels[k].label);
    ist_w_u64(&w, ln);
    ist_w_bytes(&w, lb, ln);
    free(lb);
  }
  return ist_w_seal(&w, buf, size, err);
}

static imgstat_status bad_form(imgstat_dataset *d, imgstat_error *err) {
  imgstat_dataset_destroy(d);
  return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                           "not a serialized imgstat dataset (or damaged)");
}

imgstat_status imgstat_dataset_deserialize(const void *buf, size_t size,
                                           imgstat_dataset **out,
                                           imgstat_error *err) {
  if (!buf || !out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no buffer or output");
  *out = NULL;
  const uint8_t *p = buf;
  if (size < 16 || memcmp(p, DS_MAGIC, 8) != 0)
    return bad_form(NULL, err);
  ist_rbuf sum = {p + size - 8, 8, 0, 0};
  if (ist_r_u64(&sum) != ist_fnv1a(p, size - 8))
    return bad_form(NULL, err);
  ist_rbuf r = {p, size - 8, 8, 0};
  if (ist_r_u64(&r) != DS_VERSION)
    return bad_form(NULL, err);
  imgstat_dataset_options o;
  memset(&o, 0, sizeof o);
  o.as = (imgstat_dataset_as)ist_r_u64(&r);
  o.scale_unit = (int)ist_r_u64(&r);
  o.outlier_z = ist_r_f64(&r);
  o.histograms = (int)ist_r_u64(&r);
  o.have_range = (int)ist_r_u64(&r);
  o.lo = ist_r_f64(&r);
  o.hi = ist_r_f64(&r);
  o.float_bins = (uint32_t)ist_r_u64(&r);
  imgstat_dataset *d = NULL;
  if (r.failed || o.float_bins == 0 || o.float_bins > IMGSTAT_FLOAT_BINS_MAX ||
      imgstat_dataset_create(&o, &d, err) != IMGSTAT_OK)
    return bad_form(d, err);
  d->failed = ist_r_u64(&r);
  uint64_t ngroups = ist_r_u64(&r);
  if (r.failed || ngroups > size / 32)
    return bad_form(d, err);
  for (uint64_t i = 0; i < ngroups; i++) {
    uint64_t l = ist_r_u64(&r), k = ist_r_u64(&r);
    /* each layout and depth once, in increasing order */
    if (r.failed || l < 1 || l > IMGSTAT_MAX_CHANNELS || k >= NDEPTH ||
        (l < (uint64_t)d->nlayout && d->g[l * NDEPTH + k]) ||
        (d->nlayout > 0 &&
         l * NDEPTH + k < (uint64_t)(d->nlayout - 1) * NDEPTH))
      return bad_form(d, err);
    group *g = ist_dataset_group_make(d, (int)l, (int)k);
    if (!g)
      return bad_form(d, err);
    for (int j = 0; j < g->npools; j++) {
      uint64_t used = ist_r_u64(&r);
      const uint8_t *pb = ist_r_bytes(&r, used);
      int want = g->layout - j * GROUP_POOL_CHANNELS;
      if (want > GROUP_POOL_CHANNELS)
        want = GROUP_POOL_CHANNELS;
      /* every pool of the group empty, or each of its channels and the
       * group's sample */
      if (!pb ||
          imgstat_pool_deserialize(&g->pool[j], pb, used, err) != IMGSTAT_OK ||
          (g->pool[j].channels != 0 &&
           (g->pool[j].channels != want ||
            g->pool[j].sample != ist_dataset_depth_sample[k])) ||
          (g->pool[j].channels == 0) != (g->pool[0].channels == 0))
        return bad_form(d, err);
    }
    g->first = ist_r_u64(&r);
    g->images = ist_r_u64(&r);
    g->hist_images = ist_r_u64(&r);
    for (int c = 0; c < g->layout; c++) {
      uint64_t bins = ist_r_u64(&r);
      if (r.failed)
        return bad_form(d, err);
      if (bins == 0)
        continue;
      if (ist_dataset_hist_ready(&g->hist[c], ist_dataset_depth_sample[k],
                                 &d->o, err) != IMGSTAT_OK ||
          g->hist[c].bins != bins)
        return bad_form(d, err);
      g->hist[c].total = ist_r_u64(&r);
      g->hist[c].nan_count = ist_r_u64(&r);
      g->hist[c].inf_count = ist_r_u64(&r);
      for (uint64_t b = 0; b < bins; b++)
        g->hist[c].counts[b] = ist_r_u64(&r);
    }
  }
  uint64_t n = ist_r_u64(&r);
  if (r.failed || n > size / 64)
    return bad_form(d, err);
  float *ms = malloc(2 * IMGSTAT_MAX_CHANNELS * sizeof *ms);
  if (!ms)
    return bad_form(d, err);
  for (uint64_t i = 0; i < n; i++) {
    summary one;
    summary *s = &one;
    memset(s, 0, sizeof *s);
    s->ordinal = ist_r_u64(&r);
    uint64_t len = ist_r_u64(&r);
    const uint8_t *name = ist_r_bytes(&r, len);
    char *copy = name ? malloc(len + 1) : NULL;
    if (!copy) {
      free(ms);
      return bad_form(d, err);
    }
    memcpy(copy, name, len);
    copy[len] = '\0';
    uint64_t wh = ist_r_u64(&r), channels = ist_r_u64(&r),
             pooled = ist_r_u64(&r), bits = ist_r_u64(&r);
    s->width = (uint32_t)(wh >> 32);
    s->height = (uint32_t)wh;
    s->depth = (int)(bits & 0xff);
    s->constant = (int)(bits >> 8 & 0xff);
    s->const_value = ist_r_f64(&r);
    if (r.failed || channels < 1 || channels > IMGSTAT_MAX_CHANNELS ||
        s->depth > NDEPTH - 1 || pooled < 1 || pooled > IMGSTAT_MAX_CHANNELS) {
      free(copy);
      free(ms);
      return bad_form(d, err);
    }
    s->channels = (int)channels;
    s->pooled = (int)pooled;
    s->mean = ms;
    s->std = ms + pooled;
    for (int c = 0; c < s->pooled; c++) {
      s->mean[c] = (float)ist_r_f64(&r);
      s->std[c] = (float)ist_r_f64(&r);
    }
    imgstat_status st = ist_summaries_add(&d->s, s, copy);
    free(copy);
    if (st != IMGSTAT_OK) {
      free(ms);
      return bad_form(d, err);
    }
  }
  free(ms);
  uint64_t nlabels = ist_r_u64(&r);
  if (r.failed || nlabels > size / 16)
    return bad_form(d, err);
  for (uint64_t k = 0; k < nlabels; k++) {
    uint64_t label = ist_r_u64(&r), ln = ist_r_u64(&r);
    const uint8_t *lb = ist_r_bytes(&r, ln);
    imgstat_dataset *l = NULL;
    if (!lb || label == 0 || label > UINT32_MAX ||
        (d->nlabels && d->labels[d->nlabels - 1].label >= label) ||
        imgstat_dataset_deserialize(lb, ln, &l, err) != IMGSTAT_OK)
      return bad_form(d, err);
    imgstat_dataset *slot = NULL;
    if (ist_dataset_label_pool(d, (uint32_t)label, 1, &slot, err) !=
        IMGSTAT_OK) {
      imgstat_dataset_destroy(l);
      return bad_form(d, err);
    }
    /* the slot made empty with d's options: the form's own instead */
    imgstat_dataset_destroy(slot);
    d->labels[d->nlabels - 1].d = l;
  }
  if (r.failed || r.at != r.n)
    return bad_form(d, err);
  *out = d;
  return IMGSTAT_OK;
}
