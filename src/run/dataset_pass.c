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

#include <math.h>
#include <stdio.h>
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
  imgstat_decoder *d = NULL;
  int cancelled;
  /* an input that can be read only once is left for the pass that reads it
   * (the caller decides whether that run still wants this range) */
  if (in->read_once || imgstat_task_open(task, in, r->p->load, &d, &cancelled,
                                         &err) != IMGSTAT_OK) {
    imgstat_task_reserve(task, 0);
    return;
  }
  const imgstat_header *h = imgstat_decoder_header(d);
  if (h->sample != IMGSTAT_F32) { /* integer: nothing to decode */
    imgstat_decoder_close(d);
    imgstat_task_reserve(task, 0);
    return;
  }
  uint64_t bytes = (uint64_t)h->width * h->height * (uint64_t)h->channels * 4;
  if (!imgstat_task_reserve(task, bytes)) {
    imgstat_decoder_close(d);
    return;
  }
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

imgstat_status ist_dataset_extra_compute(const imgstat_dataset_options *o,
                                         const imgstat_image *img,
                                         ist_dataset_extra *out,
                                         imgstat_error *err) {
  imgstat_hist_options ho = {o->float_bins, o->have_range, o->lo, o->hi};
  int hist = o->histograms && (img->sample != IMGSTAT_F32 || o->have_range);
  imgstat_status s = IMGSTAT_OK;
  if (imgstat_dataset_needs_gray(o, img->channels)) {
    imgstat_image gray;
    s = imgstat_dataset_gray(img, &gray, err);
    if (s != IMGSTAT_OK)
      return s;
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
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    imgstat_histogram_free(&x->hist[c]);
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
  imgstat_dataset_image im;
  memset(&im, 0, sizeof im);
  im.name = name;
  im.width = res->width;
  im.height = res->height;
  im.channels = res->channels;
  im.colour = res->colour;
  im.sample = res->sample;
  im.partial = gray ? x->partial : res->partial;
  if (x->hists)
    im.hist = x->hist;
  else if (!gray && res->has_histograms && res->sample != IMGSTAT_F32)
    im.hist = res->hist;
  return imgstat_dataset_add(d, index, &im, err);
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
  memset(&req, 0, sizeof req);
  req.histograms = o->histograms && img.sample != IMGSTAT_F32 &&
                   !imgstat_dataset_needs_gray(o, img.channels);
  if (imgstat_engine_stats(r->p->engine, in->path, &img, &req, &out->res) !=
      IMGSTAT_OK) {
    out->failed = 1;
    out->err = out->res.error;
  } else if (ist_dataset_extra_compute(o, &img, &out->x, &out->err) !=
             IMGSTAT_OK) {
    out->failed = 1;
  }
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
