/*
 * Passes over a whole list of inputs that pool it before anything else is
 * done with it (imgstat/run.h, "passes over the inputs"): the float range
 * of pooled histograms and the pool itself, on the batch runner and the
 * engine; what the dataset takes of an image beside the engine's result
 * (dataset_extra.h). The plan of a pooled dataset is the dataset's
 * (src/dataset/dataset_measure.c).
 */
#include "dataset_extra.h"
#include "imgstat/batch.h"
#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/inputs.h"
#include "imgstat/outputs.h"
#include "imgstat/run.h"
#include "run_inputs.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- feeding the batch runner from the pass's source ----------------------
 */

typedef struct pass_run {
  const imgstat_dataset_pass *p;
  imgstat_dataset *d; /* the pool pass */
  void (*failed)(void *ctx, const imgstat_input *in, const imgstat_error *why);
  int found; /* the range pass */
  double lo, hi;
} pass_run;

static imgstat_status pass_next(void *ctx, void **item, imgstat_error *err) {
  pass_run *r = ctx;
  const imgstat_input *in = NULL;
  imgstat_status s = r->p->next(r->p->ctx, &in, err);
  *item = (void *)in;
  return s;
}

static void pass_release(pass_run *r, const imgstat_input *in) {
  if (r->p->release)
    r->p->release(r->p->ctx, in);
}

static imgstat_status
pass_batch(pass_run *r, size_t result_size,
           void (*work)(void *, imgstat_task *, void *, void *),
           int (*deliver)(void *, uint64_t, void *, void *, int),
           int *cancelled, imgstat_error *err) {
  return ist_run_batch(r->p->workers, r->p->budget, result_size, r->p->cancel,
                       r, pass_next, work, deliver, cancelled, err);
}

/* ---- the float range ------------------------------------------------------
 */

/* Opens in for a pass that decodes float images only and reserves its
 * decoded bytes: 1 with *d open and *bytes reserved. 0 when there is
 * nothing to decode (an input read only once, which is left for the pass
 * that reads it; one that does not open; an integer image: the task's
 * reservation settled at 0) or the reservation was not granted. */
static int open_float(imgstat_task *task, const imgstat_input *in,
                      const imgstat_load_options *load, imgstat_decoder **d,
                      uint64_t *bytes) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int cancelled;
  *d = NULL;
  if (in->read_once ||
      imgstat_task_open(task, in, load, d, &cancelled, &err) != IMGSTAT_OK) {
    imgstat_task_reserve(task, 0);
    return 0;
  }
  const imgstat_header *h = imgstat_decoder_header(*d);
  if (h->sample != IMGSTAT_F32) { /* integer: nothing to decode */
    imgstat_decoder_close(*d);
    imgstat_task_reserve(task, 0);
    return 0;
  }
  *bytes = (uint64_t)h->width * h->height * (uint64_t)h->channels * 4;
  if (!imgstat_task_reserve(task, *bytes)) {
    imgstat_decoder_close(*d);
    return 0;
  }
  return 1;
}

/* The request of in's valid samples (imgstat_dataset_pass.request and
 * mask_of) into *req, its mask's path into *mask (free it). */
static imgstat_status pass_request(const imgstat_dataset_pass *p,
                                   const imgstat_input *in,
                                   imgstat_stats_request *req, char **mask,
                                   imgstat_error *err) {
  *mask = NULL;
  memset(req, 0, sizeof *req);
  if (p->request) {
    req->nnodata = p->request->nnodata;
    req->nodata = p->request->nodata;
    req->no_file_nodata = p->request->no_file_nodata;
  }
  if (!p->mask_of)
    return IMGSTAT_OK;
  int shared = 0;
  imgstat_status s = p->mask_of(p->ctx, in, mask, &shared, err);
  req->mask_path = *mask;
  req->mask_shared = shared;
  return s;
}

/* What the pool takes of a decoded image (imgstat_dataset_pass.valid):
 * *out empty (width 0) when every sample counts. */
static imgstat_status pass_valid(const imgstat_dataset_pass *p,
                                 const imgstat_input *in,
                                 const imgstat_image *img, imgstat_image *out,
                                 imgstat_error *err) {
  memset(out, 0, sizeof *out);
  if (p->valid)
    return p->valid(p->ctx, in, img, out, err);
  if (!p->engine)
    return IMGSTAT_OK;
  imgstat_stats_request req;
  char *mask = NULL;
  imgstat_status s = pass_request(p, in, &req, &mask, err);
  if (s == IMGSTAT_OK)
    s = imgstat_engine_valid_copy(p->engine, img, &req, out, err);
  free(mask);
  return s;
}

typedef struct range_result {
  int found;
  double lo, hi;
} range_result;

static void range_work(void *ctx, imgstat_task *task, void *item,
                       void *result) {
  pass_run *r = ctx;
  const imgstat_input *in = item;
  range_result *out = result;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_decoder *d;
  uint64_t bytes;
  /* (the caller decides whether a run still wants this range when an
   * input is read only once) */
  if (!open_float(task, in, r->p->load, &d, &bytes))
    return;
  imgstat_image img;
  if (imgstat_decoder_load(d, &img, &err) == IMGSTAT_OK) {
    for (int c = 0; c < img.channels; c++) {
      double lo, hi;
      if (!imgstat_image_finite_range(&img, c, &lo, &hi))
        continue;
      out->lo = out->found ? fmin(out->lo, lo) : lo;
      out->hi = out->found ? fmax(out->hi, hi) : hi;
      out->found = 1;
    }
    imgstat_image_free(&img);
  }
  imgstat_task_release(task, bytes);
}

static int range_deliver(void *ctx, uint64_t index, void *item, void *result,
                         int ran) {
  pass_run *r = ctx;
  const range_result *out = result;
  (void)index;
  if (ran && out->found) {
    r->lo = r->found ? fmin(r->lo, out->lo) : out->lo;
    r->hi = r->found ? fmax(r->hi, out->hi) : out->hi;
    r->found = 1;
  }
  pass_release(r, item);
  return 0;
}

imgstat_status imgstat_dataset_float_range(const imgstat_dataset_pass *p,
                                           int *found, double *lo, double *hi,
                                           int *cancelled, imgstat_error *err) {
  *found = 0;
  *lo = *hi = 0;
  if (!p || !p->next || !p->load)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_float_range: no inputs");
  pass_run r;
  memset(&r, 0, sizeof r);
  r.p = p;
  imgstat_status s = pass_batch(&r, sizeof(range_result), range_work,
                                range_deliver, cancelled, err);
  if (s == IMGSTAT_OK && r.found) {
    *found = 1;
    *lo = r.lo;
    *hi = r.hi;
  }
  return s;
}

/* ---- the pool -------------------------------------------------------------
 */

typedef struct pool_result {
  imgstat_job_result res;
  imgstat_error err; /* a failure before the engine (decoding) */
  int failed;
  ist_dataset_extra x; /* the luma (--as gray), float histograms */
} pool_result;

/* The luma's figures under req's mask (the engine's valid samples) into
 * out: its partial, and with hist its histogram (a float luma's over ho,
 * from a copy in which the samples outside the mask are NaN). */
static imgstat_status masked_luma(imgstat_engine *e,
                                  const imgstat_stats_request *req,
                                  const imgstat_image *gray, int hist,
                                  const imgstat_hist_options *ho,
                                  ist_dataset_extra *out, imgstat_error *err) {
  imgstat_stats_request mr;
  memset(&mr, 0, sizeof mr);
  mr.mask_path = req->mask_path;
  mr.mask_shared = req->mask_shared;
  mr.no_file_nodata = 1; /* a luma has no nodata value of its own */
  mr.histograms = hist && gray->sample != IMGSTAT_F32;
  imgstat_job_result *res = calloc(1, sizeof *res);
  if (!res)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status s = imgstat_engine_stats(e, NULL, gray, &mr, res);
  if (s != IMGSTAT_OK) {
    *err = res->error;
  } else {
    out->partial[0] = res->partial[0];
    out->gray = 1;
    out->masked = 1;
    if (mr.histograms) {
      out->hist[0] = res->hist[0]; /* taken from the result */
      memset(&res->hist[0], 0, sizeof res->hist[0]);
      out->hists = 1;
    } else if (hist) {
      imgstat_image valid;
      s = imgstat_engine_valid_copy(e, gray, &mr, &valid, err);
      if (s == IMGSTAT_OK)
        s = imgstat_histogram_compute(valid.width ? &valid : gray, 0, ho,
                                      &out->hist[0], err);
      imgstat_image_free(&valid);
      out->hists = s == IMGSTAT_OK;
    }
  }
  imgstat_job_result_free(res);
  free(res);
  return s;
}

imgstat_status ist_dataset_extra_compute(const imgstat_dataset_options *o,
                                         const imgstat_image *img,
                                         imgstat_engine *e,
                                         const imgstat_stats_request *req,
                                         ist_dataset_extra *out,
                                         imgstat_error *err) {
  imgstat_hist_options ho = {o->float_bins, o->have_range, o->lo, o->hi};
  int hist = o->histograms && (img->sample != IMGSTAT_F32 || o->have_range);
  imgstat_status s = IMGSTAT_OK;
  int luma = imgstat_dataset_needs_gray(o, img->channels);
  if (hist && (luma || img->sample == IMGSTAT_F32)) { /* made here */
    out->nhist = luma ? 1 : img->channels;
    out->hist = calloc((size_t)out->nhist, sizeof *out->hist);
    if (!out->hist) {
      out->nhist = 0;
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    }
  }
  if (luma) {
    imgstat_image gray;
    s = imgstat_dataset_gray(img, &gray, err);
    if (s != IMGSTAT_OK)
      return s;
    if (e && req && req->mask_path) {
      s = masked_luma(e, req, &gray, hist, &ho, out, err);
      imgstat_image_free(&gray);
      return s;
    }
    s = imgstat_cpu_stats(&gray, 1, out->partial, err);
    out->gray = s == IMGSTAT_OK;
    if (s == IMGSTAT_OK && hist) {
      s = imgstat_histogram_compute(&gray, 0, &ho, &out->hist[0], err);
      out->hists = s == IMGSTAT_OK;
    }
    imgstat_image_free(&gray);
  } else if (hist && img->sample == IMGSTAT_F32) {
    for (int c = 0; c < img->channels && s == IMGSTAT_OK; c++)
      s = imgstat_histogram_compute(img, c, &ho, &out->hist[c], err);
    out->hists = s == IMGSTAT_OK;
  }
  return s;
}

void ist_dataset_extra_free(ist_dataset_extra *x) {
  for (int c = 0; c < x->nhist; c++)
    imgstat_histogram_free(&x->hist[c]);
  free(x->hist);
  x->hist = NULL;
  x->nhist = 0;
}

imgstat_status ist_dataset_extra_add(imgstat_dataset *d, uint64_t index,
                                     const char *name,
                                     const imgstat_job_result *res,
                                     const ist_dataset_extra *x,
                                     imgstat_error *err) {
  int gray =
      imgstat_dataset_needs_gray(imgstat_dataset_options_of(d), res->channels);
  if (gray && !x->gray)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  /* the luma is made from the pixels, then masked: a nodata value (of a
   * colour sample) is not one of the luma's */
  if (gray && (res->has_nodata || (res->masked && !x->masked))) {
    imgstat_error_set(err, IMGSTAT_ERR_ARG,
                      "%s not applied to a conversion to gray%s (as=gray)",
                      res->has_nodata ? "nodata values are" : "masks are",
                      res->has_nodata
                          ? ": a luma is not nodata where a colour sample is"
                          : "");
    return imgstat_error_cause(err, IMGSTAT_CAUSE_SETTING, 0, 0, "as=gray");
  }
  imgstat_dataset_image im;
  memset(&im, 0, sizeof im);
  im.name = name;
  im.width = res->width;
  im.height = res->height;
  im.channels = res->channels;
  im.colour = res->colour;
  im.sample = res->sample;
  im.int16 = res->int16;
  im.partial = gray ? x->partial : IMGSTAT_JOB_CH(res, partial);
  int int_hist = !gray && res->has_histograms && res->sample != IMGSTAT_F32;
  if (x->hists)
    im.hist = x->hist;
  else if (int_hist)
    im.hist = IMGSTAT_JOB_CH(res, hist);
  /* its labels' figures, each pooled per label (integer histograms as the
   * image's; a float label's histograms have a range of their own) */
  imgstat_dataset_label_image *labels = NULL;
  if (res->has_labels && res->nlabels > 0) {
    if (gray) {
      imgstat_error_set(err, IMGSTAT_ERR_ARG,
                        "label images are not applied to a conversion to "
                        "gray (as=gray)");
      return imgstat_error_cause(err, IMGSTAT_CAUSE_SETTING, 0, 0, "as=gray");
    }
    labels = calloc(res->nlabels, sizeof *labels);
    if (!labels)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < res->nlabels; k++) {
      labels[k].label = res->labels[k].label;
      labels[k].partial = IMGSTAT_JOB_CH(&res->labels[k], partial);
      labels[k].hist = int_hist ? IMGSTAT_JOB_CH(&res->labels[k], hist) : NULL;
    }
    im.nlabels = res->nlabels;
    im.labels = labels;
  }
  imgstat_status st = imgstat_dataset_add(d, index, &im, err);
  free(labels);
  return st;
}

static void pool_work(void *ctx, imgstat_task *task, void *item, void *result) {
  pass_run *r = ctx;
  const imgstat_input *in = item;
  pool_result *out = result;
  const imgstat_dataset_options *o = imgstat_dataset_options_of(r->d);
  if (in->read_once) { /* the pass after the pool would find it read */
    imgstat_task_reserve(task, 0);
    out->failed = 1;
    imgstat_error_set(&out->err, IMGSTAT_ERR_ARG,
                      "can be read only once, and a dataset's plan reads "
                      "every input twice");
    imgstat_error_cause(&out->err, IMGSTAT_CAUSE_DATASET, 0, 0, NULL);
    return;
  }
  imgstat_image img;
  uint64_t reserved;
  int cancelled;
  imgstat_status s = imgstat_task_decode(task, in, r->p->load, 0, &img,
                                         &reserved, &cancelled, &out->err);
  if (cancelled)
    return;
  if (s != IMGSTAT_OK) {
    out->failed = 1;
    return;
  }
  imgstat_stats_request req;
  char *mask = NULL;
  if (pass_request(r->p, in, &req, &mask, &out->err) != IMGSTAT_OK) {
    imgstat_image_free(&img);
    imgstat_task_release(task, reserved);
    out->failed = 1;
    return;
  }
  req.histograms = o->histograms && img.sample != IMGSTAT_F32 &&
                   !imgstat_dataset_needs_gray(o, img.channels);
  imgstat_status st =
      imgstat_engine_stats(r->p->engine, in->path, &img, &req, &out->res);
  if (st != IMGSTAT_OK) {
    out->failed = 1;
    out->err = out->res.error;
  } else {
    /* a float image's pooled histograms: of its valid samples alone */
    imgstat_image valid;
    memset(&valid, 0, sizeof valid);
    if ((img.sample == IMGSTAT_F32 && o->histograms &&
         pass_valid(r->p, in, &img, &valid, &out->err) != IMGSTAT_OK) ||
        ist_dataset_extra_compute(o, valid.width ? &valid : &img, r->p->engine,
                                  &req, &out->x, &out->err) != IMGSTAT_OK)
      out->failed = 1;
    imgstat_image_free(&valid);
  }
  free(mask);
  imgstat_image_free(&img);
  imgstat_task_release(task, reserved);
}

static int pool_deliver(void *ctx, uint64_t index, void *item, void *result,
                        int ran) {
  pass_run *r = ctx;
  const imgstat_input *in = item;
  pool_result *out = result;
  int stop = 0;
  if (ran && out->failed) {
    imgstat_dataset_add_failed(r->d, index);
    if (!out->err.message[0])
      imgstat_error_set(&out->err, IMGSTAT_ERR_IO, "cannot be read");
    if (r->failed)
      r->failed(r->p->ctx, in, &out->err);
  } else if (ran && out->res.status == IMGSTAT_OK && out->res.width) {
    imgstat_error err;
    memset(&err, 0, sizeof err);
    if (ist_dataset_extra_add(r->d, index, in->path, &out->res, &out->x,
                              &err) != IMGSTAT_OK) {
      imgstat_dataset_add_failed(r->d, index);
      if (r->failed)
        r->failed(r->p->ctx, in, &err);
      stop = err.status == IMGSTAT_ERR_NOMEM;
    }
  }
  imgstat_job_result_free(&out->res);
  ist_dataset_extra_free(&out->x);
  pass_release(r, in);
  return stop;
}

imgstat_status
imgstat_dataset_pool_inputs(const imgstat_dataset_pass *p, imgstat_dataset *d,
                            void (*failed)(void *ctx, const imgstat_input *in,
                                           const imgstat_error *why),
                            int *cancelled, imgstat_error *err) {
  if (!p || !p->next || !p->load || !p->engine || !d)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_pool_inputs: no inputs");
  pass_run r;
  memset(&r, 0, sizeof r);
  r.p = p;
  r.d = d;
  r.failed = failed;
  return pass_batch(&r, sizeof(pool_result), pool_work, pool_deliver, cancelled,
                    err);
}

/* ---- exact float percentiles: the second read ------------------------------
 */

/* What one image brings: its samples in the wanted bins, per pooled
 * channel and bin (want's order). */
typedef struct exact_result {
  int taken; /* a float image of the pool's layout */
  float *(*got)[IMGSTAT_DATASET_EXACT_MAX]; /* per pooled channel */
  uint64_t (*n)[IMGSTAT_DATASET_EXACT_MAX];
  int nomem;
} exact_result;

typedef struct exact_run {
  pass_run r;
  const imgstat_dataset_exact_want *want; /* per pooled channel */
  int channels;                           /* the pool's layout */
  double lo, scale;
  uint32_t last;
  /* every image's samples of each bin, gathered in order */
  float *(*all)[IMGSTAT_DATASET_EXACT_MAX]; /* per pooled channel */
  uint64_t (*have)[IMGSTAT_DATASET_EXACT_MAX];
  int mismatch, nomem;
} exact_run;

/* Channel c of img: its finite samples in the wanted bins, appended to
 * out's arrays (grown as needed). */
static int exact_collect(const exact_run *x, const imgstat_image *img, int c,
                         exact_result *out) {
  const imgstat_dataset_exact_want *w = &x->want[c];
  if (w->nbins == 0)
    return 1;
  uint64_t cap[IMGSTAT_DATASET_EXACT_MAX] = {0};
  uint32_t first = w->bins[0], final = w->bins[w->nbins - 1];
  size_t stride = imgstat_image_stride(img);
  for (uint32_t y = 0; y < img->height; y++) {
    const float *p = (const float *)((const char *)img->planes[c] + y * stride);
    for (uint32_t i = 0; i < img->width; i++) {
      float v = p[i];
      if (!isfinite(v))
        continue;
      uint32_t b = imgstat_histogram_f32_bin(x->lo, x->scale, x->last, v);
      if (b < first || b > final)
        continue;
      int j = 0;
      while (j < w->nbins && w->bins[j] != b)
        j++;
      if (j == w->nbins)
        continue;
      if (out->n[c][j] == cap[j]) {
        uint64_t grow = cap[j] ? 2 * cap[j] : 256;
        float *g = realloc(out->got[c][j], grow * sizeof *g);
        if (!g)
          return 0;
        out->got[c][j] = g;
        cap[j] = grow;
      }
      out->got[c][j][out->n[c][j]++] = v;
    }
  }
  return 1;
}

static void exact_work(void *ctx, imgstat_task *task, void *item,
                       void *result) {
  exact_run *x = ctx;
  const imgstat_input *in = item;
  exact_result *out = result;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_decoder *d;
  uint64_t bytes;
  /* (the caller runs this pass only when every input can be read again;
   * an integer image is not in a float pool) */
  if (!open_float(task, in, x->r.p->load, &d, &bytes))
    return;
  const imgstat_dataset_options *o = imgstat_dataset_options_of(x->r.d);
  imgstat_image img, valid, pooled;
  memset(&valid, 0, sizeof valid);
  if (imgstat_decoder_load(d, &img, &err) == IMGSTAT_OK) {
    /* the samples the pool took, in the pooled layout, by the pool's own
     * conversion (an image that fails here is not taken: the counts then
     * differ and the values stay within one bin) */
    out->got = calloc((size_t)x->channels, sizeof *out->got);
    out->n = calloc((size_t)x->channels, sizeof *out->n);
    out->nomem = !out->got || !out->n;
    if (!out->nomem &&
        imgstat_dataset_pooled_channels(o, img.channels) == x->channels &&
        pass_valid(x->r.p, in, &img, &valid, &err) == IMGSTAT_OK &&
        imgstat_dataset_convert(valid.width ? &valid : &img, o->as, &pooled,
                                &err) == IMGSTAT_OK) {
      out->taken = 1;
      for (int c = 0; c < pooled.channels && !out->nomem; c++)
        out->nomem = !exact_collect(x, &pooled, c, out);
      imgstat_image_free(&pooled);
    }
    imgstat_image_free(&valid);
    imgstat_image_free(&img);
  }
  imgstat_task_release(task, bytes);
}

static int exact_deliver(void *ctx, uint64_t index, void *item, void *result,
                         int ran) {
  exact_run *x = ctx;
  exact_result *out = result;
  (void)index;
  if (ran && out->nomem)
    x->nomem = 1;
  for (int c = 0; out->got && out->n && c < x->channels; c++)
    for (int j = 0; j < x->want[c].nbins; j++) {
      uint64_t n = out->n[c][j];
      if (ran && n && !x->nomem) {
        if (x->have[c][j] + n > x->want[c].bin_count[j])
          x->mismatch = 1; /* the input changed since it was pooled */
        else
          memcpy(x->all[c][j] + x->have[c][j], out->got[c][j],
                 n * sizeof(float));
        x->have[c][j] += n;
      }
      free(out->got[c][j]);
    }
  free(out->got);
  free(out->n);
  pass_release(&x->r, item);
  return x->nomem;
}

/* The k-th smallest (from 0) of a[0..n), a reordered: quickselect with
 * Hoare's partition (ties split on both sides, so many equal values stay
 * linear). */
static float select_kth(float *a, uint64_t n, uint64_t k) {
  int64_t lo = 0, hi = (int64_t)n - 1, want = (int64_t)k;
  while (lo < hi) {
    float x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi];
    float pivot = x < y ? (y < z   ? y
                           : x < z ? z
                                   : x)
                        : (x < z   ? x
                           : y < z ? z
                                   : y);
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot)
        i++;
      while (a[j] > pivot)
        j--;
      if (i <= j) {
        float t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (want <= j)
      hi = j;
    else if (want >= i)
      lo = i;
    else
      return a[want];
  }
  return a[want];
}

imgstat_status imgstat_dataset_float_exact(const imgstat_dataset_pass *p,
                                           imgstat_dataset *d,
                                           const double *percentiles, int np,
                                           uint64_t max_bytes, int *cancelled,
                                           imgstat_error *err) {
  *cancelled = 0;
  if (!p || !p->next || !p->load || !d)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "imgstat_dataset_float_exact: no inputs");
  imgstat_dataset_result r;
  imgstat_status s = imgstat_dataset_finish(d, 0, &r, err);
  if (s != IMGSTAT_OK)
    return s;
  size_t nc = r.channels > 0 ? (size_t)r.channels : 1;
  imgstat_dataset_exact_want *want = malloc(nc * sizeof *want);
  exact_run x;
  memset(&x, 0, sizeof x);
  x.all = calloc(nc, sizeof *x.all);
  x.have = calloc(nc, sizeof *x.have);
  if (!want || !x.all || !x.have) {
    free(want);
    free(x.all);
    free(x.have);
    imgstat_dataset_result_free(&r);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  if (!imgstat_dataset_exact_plan(&r, percentiles, np, want)) {
    imgstat_dataset_result_free(&r);
    free(want);
    free(x.all);
    free(x.have);
    return IMGSTAT_OK; /* no float pooled histogram: nothing to refine */
  }
  const imgstat_histogram *h = &r.ch[0].hist;
  x.r.p = p;
  x.r.d = d;
  x.want = want;
  x.channels = r.channels;
  x.lo = h->lo;
  x.scale = h->hi > h->lo ? (double)h->bins / (h->hi - h->lo) : 0.0;
  x.last = h->bins - 1;
  uint64_t samples = 0;
  for (int c = 0; c < r.channels; c++)
    samples += want[c].samples;
  imgstat_dataset_result_free(&r);
  if (samples > max_bytes / sizeof(float)) {
    char note[160];
    imgstat_number_snprintf(
        note, sizeof note,
        "float percentiles within one bin: their bins hold %" PRIu64
        " samples, more than the memory limit (%" PRIu64 " bytes) holds",
        samples, max_bytes);
    imgstat_dataset_set_exact_note(d, note);
    free(want);
    free(x.all);
    free(x.have);
    return IMGSTAT_OK;
  }
  for (int c = 0; c < x.channels && s == IMGSTAT_OK; c++)
    for (int j = 0; j < want[c].nbins && s == IMGSTAT_OK; j++) {
      x.all[c][j] = malloc((want[c].bin_count[j] ? want[c].bin_count[j] : 1) *
                           sizeof(float));
      if (!x.all[c][j])
        s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                              "out of memory for the samples of the "
                              "percentiles' bins");
    }
  if (s == IMGSTAT_OK)
    s = pass_batch(&x.r, sizeof(exact_result), exact_work, exact_deliver,
                   cancelled, err);
  if (s == IMGSTAT_OK && x.nomem)
    s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                          "out of memory for the samples of the percentiles' "
                          "bins");
  for (int c = 0; c < x.channels; c++)
    for (int j = 0; j < want[c].nbins; j++)
      x.mismatch |= x.have[c][j] != want[c].bin_count[j];
  if (s == IMGSTAT_OK && !*cancelled && x.mismatch)
    imgstat_dataset_set_exact_note(
        d, "float percentiles within one bin: the second read of the inputs "
           "found other samples than the first (an input changed)");
  else if (s == IMGSTAT_OK && !*cancelled)
    for (int c = 0; c < x.channels && s == IMGSTAT_OK; c++) {
      const imgstat_dataset_exact_want *w = &want[c];
      for (int i = 0; i < w->n && s == IMGSTAT_OK; i++) {
        int j = 0;
        while (w->bins[j] != w->bin[i])
          j++;
        float v = select_kth(x.all[c][j], w->bin_count[j],
                             w->rank[i] - w->before[i] - 1);
        /* -0 and +0 are one value: a zero is 0, whichever came first */
        s = imgstat_dataset_set_exact(d, c, w->rank[i], v == 0 ? 0.0 : v, err);
      }
    }
  for (int c = 0; c < x.channels; c++)
    for (int j = 0; j < want[c].nbins; j++)
      free(x.all[c][j]);
  free(want);
  free(x.all);
  free(x.have);
  return s;
}
