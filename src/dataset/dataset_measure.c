/*
 * The one normalization plan of a pooled dataset (imgstat/dataset.h,
 * imgstat_dataset_norm_measure): the measurements a normalize mode takes
 * from a dataset's result, the clip measure through src/norm's one home.
 */
#include "clip.h"
#include "imgstat/dataset.h"

#include <math.h>
#include <string.h>

/* ---- the one plan ---------------------------------------------------------
 */

static imgstat_status measure_pooled(const imgstat_dataset_result *r,
                                     const imgstat_norm_options *opts,
                                     imgstat_norm_measure *m,
                                     imgstat_error *err) {
  memset(m, 0, sizeof *m);
  int n = r->channels;
  if (n < 1)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image was pooled");
  int linked = opts->linked && (opts->mode == IMGSTAT_NORM_MINMAX ||
                                opts->mode == IMGSTAT_NORM_CLIP);
  if (opts->mode == IMGSTAT_NORM_CLIP) {
    for (int c = 0; c < n; c++)
      if (!r->ch[c].has_histogram && r->ch[c].has_values)
        return imgstat_error_set(
            err, IMGSTAT_ERR_ARG, "clip: no pooled histogram (%s)",
            r->histogram_note[0] ? r->histogram_note : "none made");
    imgstat_histogram sum;
    memset(&sum, 0, sizeof sum);
    imgstat_status s = IMGSTAT_OK;
    for (int c = 0; c < n && s == IMGSTAT_OK; c++) {
      const imgstat_histogram *h = &r->ch[c].hist;
      if (!r->ch[c].has_histogram)
        continue;
      if (linked && !imgstat_channel_is_alpha(n, c)) {
        if (!sum.counts)
          s = imgstat_histogram_alloc(&sum, h->sample, h->bins, h->lo, h->hi,
                                      err);
        if (s == IMGSTAT_OK)
          s = imgstat_histogram_add(&sum, h, err);
        continue;
      }
      /* clip's two percentiles (ist_norm_clip_range's), exact where a
       * second read found a float pool's (imgstat_dataset_float_exact) */
      m->has_values[c] = imgstat_dataset_channel_percentile(
                             &r->ch[c], opts->clip_low, &m->lo[c]) &&
                         imgstat_dataset_channel_percentile(
                             &r->ch[c], opts->clip_high, &m->hi[c]);
    }
    double lo = 0, hi = 0;
    int any = s == IMGSTAT_OK && sum.counts &&
              ist_norm_clip_range(&sum, opts, &lo, &hi);
    uint64_t ltotal = sum.total;
    imgstat_histogram_free(&sum);
    if (s != IMGSTAT_OK)
      return s;
    double cmin = 0, cmax = 0; /* the linked channels' extrema */
    for (int c = 0, first = 1; c < n; c++)
      if (!imgstat_channel_is_alpha(n, c) && r->ch[c].has_values) {
        cmin = first ? r->ch[c].min : fmin(cmin, r->ch[c].min);
        cmax = first ? r->ch[c].max : fmax(cmax, r->ch[c].max);
        first = 0;
      }
    for (int c = 0; c < n; c++) {
      int link = linked && !imgstat_channel_is_alpha(n, c);
      if (link) {
        m->has_values[c] = any;
        m->lo[c] = lo;
        m->hi[c] = hi;
      }
      m->lo[c] *= r->hist_scale;
      m->hi[c] *= r->hist_scale;
      /* float bins span the common range of every channel: a channel's
       * percentiles lie within its own extrema, which ranks 1 and N are */
      if (r->ch[c].hist.sample == IMGSTAT_F32 && m->has_values[c]) {
        double a = link ? cmin : r->ch[c].min, b = link ? cmax : r->ch[c].max;
        uint64_t total = link ? ltotal : r->ch[c].hist.total;
        m->lo[c] = fmin(fmax(m->lo[c], a), b);
        m->hi[c] = fmin(fmax(m->hi[c], a), b);
        if (imgstat_percentile_rank(total, opts->clip_low) == 1)
          m->lo[c] = a;
        if (imgstat_percentile_rank(total, opts->clip_high) == total)
          m->hi[c] = b;
      }
    }
    return IMGSTAT_OK;
  }
  for (int c = 0; c < n; c++) {
    const imgstat_dataset_channel *ch = &r->ch[c];
    m->has_values[c] = ch->has_values;
    m->lo[c] = ch->has_values ? ch->min : 0;
    m->hi[c] = ch->has_values ? ch->max : 0;
    m->mean[c] = ch->has_values ? ch->mean : 0;
    m->std[c] = ch->has_std ? ch->std : 0;
  }
  if (linked)
    imgstat_norm_measure_link(n, m);
  return IMGSTAT_OK;
}

imgstat_status imgstat_dataset_norm_measure(const imgstat_dataset_result *r,
                                            const imgstat_norm_options *opts,
                                            imgstat_norm_measure *m, int *unit,
                                            imgstat_error *err) {
  imgstat_status s = measure_pooled(r, opts, m, err);
  *unit = r->scale_unit;
  if (s != IMGSTAT_OK || !r->scale_unit || (r->depths != 1 && r->depths != 2))
    return s;
  /* one integer depth: back to its units, where the extrema and the
   * percentiles are integers (so the exact integer rule applies) */
  double full = r->depths == 1 ? 255.0 : 65535.0;
  for (int c = 0; c < r->channels; c++) {
    m->lo[c] = rint(m->lo[c] * full);
    m->hi[c] = rint(m->hi[c] * full);
    m->mean[c] *= full;
    m->std[c] *= full;
  }
  *unit = 0;
  return IMGSTAT_OK;
}
