/*
 * The items (imgstat/engine.h, engine.h): one result value per item, for an
 * image on the host (decoded by path, or given) and for one on the device
 * (a JPEG decoded by nvJPEG, a caller's device image): statistics,
 * histograms with their figures, verify, normalization, each by the
 * policy.
 */
#include "engine.h"
#include "image_rows.h"
#include "io_engine.h"
#include "masks.h"
#include "stats_stream.h"

#include "imgstat/cuda_norm.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static imgstat_status gpu_stats(imgstat_gpu *gpu, const imgstat_image *img,
                                int kernel, imgstat_partial *out,
                                imgstat_error *err) {
  return imgstat_gpu_stats(gpu, img, kernel, out, err);
}

/* The histogram of channel c and its values at the np percentiles p. */
static imgstat_status gpu_histogram(imgstat_gpu *gpu, const imgstat_image *img,
                                    int c, const double *p, int np,
                                    double *values, imgstat_histogram *h,
                                    imgstat_error *err) {
  return imgstat_gpu_histogram(gpu, img, c, NULL, p, np, values, h, err);
}

/* The statistics and the histograms of one item share one upload: a device
 * image (d); without one (d NULL) each call uploads the host image. */
static imgstat_status gpu_stats_on(imgstat_gpu *gpu, imgstat_gpu_image *d,
                                   const imgstat_image *img, int kernel,
                                   imgstat_partial *out, imgstat_error *err) {
  return d ? imgstat_gpu_image_stats(gpu, d, kernel, out, err)
           : gpu_stats(gpu, img, kernel, out, err);
}

static imgstat_status gpu_histogram_on(imgstat_gpu *gpu, imgstat_gpu_image *d,
                                       const imgstat_image *img, int c,
                                       const double *p, int np, double *values,
                                       imgstat_histogram *h,
                                       imgstat_error *err) {
  return d ? imgstat_gpu_image_histogram(gpu, d, c, NULL, p, np, values, h, err)
           : gpu_histogram(gpu, img, c, p, np, values, h, err);
}

static imgstat_status gpu_normalize(imgstat_gpu *gpu, const imgstat_image *img,
                                    const imgstat_norm_options *opts,
                                    imgstat_image *out, imgstat_error *err) {
  return imgstat_gpu_normalize(gpu, img, opts, NULL, NULL, out, err);
}

/* ---- results ---------------------------------------------------------------
 */

imgstat_status imgstat_job_wide_alloc(imgstat_job_wide **wide, int channels,
                                      imgstat_error *err) {
  if (channels <= IMGSTAT_INLINE_CHANNELS)
    return IMGSTAT_OK;
  size_t n = (size_t)channels;
  imgstat_job_wide *w = calloc(1, sizeof *w);
  void *block = calloc(n, 2 * sizeof(imgstat_partial) + sizeof(double) +
                              sizeof(uint64_t) + sizeof(imgstat_histogram) +
                              sizeof(imgstat_hist_figures));
  if (!w || !block) {
    free(w);
    free(block);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory for %d channels", channels);
  }
  /* the arrays in decreasing order of alignment need: all 8 bytes */
  w->channels = channels;
  w->partial = block;
  w->gpu_partial = w->partial + n;
  w->hist = (imgstat_histogram *)(w->gpu_partial + n);
  w->hist_figures = (imgstat_hist_figures *)(w->hist + n);
  w->nodata = (double *)(w->hist_figures + n);
  w->nodata_count = (uint64_t *)(w->nodata + n);
  *wide = w;
  return IMGSTAT_OK;
}

void imgstat_job_wide_free(imgstat_job_wide *wide) {
  if (!wide)
    return;
  for (int c = 0; c < wide->channels; c++)
    imgstat_histogram_free(&wide->hist[c]);
  free(wide->partial);
  free(wide);
}

void imgstat_job_result_free(imgstat_job_result *res) {
  if (!res)
    return;
  for (int c = 0; c < IMGSTAT_INLINE_CHANNELS; c++)
    imgstat_histogram_free(&res->hist[c]);
  imgstat_job_wide_free(res->wide);
  free(res->band_names);
  for (uint32_t k = 0; k < res->nlabels; k++) {
    for (int c = 0; c < IMGSTAT_INLINE_CHANNELS; c++)
      imgstat_histogram_free(&res->labels[k].hist[c]);
    imgstat_job_wide_free(res->labels[k].wide);
  }
  free(res->labels);
  imgstat_image_free(&res->output);
  memset(res, 0, sizeof *res);
}

const char *ist_reason(const imgstat_error *err) {
  return err->message[0] ? err->message : "unknown error";
}

void ist_add_warning(imgstat_job_result *res, int about_input, const char *fmt,
                     ...) {
  if (res->nwarnings == IMGSTAT_JOB_MAX_WARNINGS)
    return;
  imgstat_job_warning *w = &res->warning[res->nwarnings++];
  w->about_input = about_input;
  va_list ap;
  va_start(ap, fmt);
  imgstat_number_vsnprintf(w->text, sizeof w->text, fmt, ap);
  va_end(ap);
}

/* The decoder's warning about the input (none when text is ""), once. */
void ist_decoder_warning(imgstat_job_result *res, const char *text) {
  if (!text[0] || res->nwarnings == IMGSTAT_JOB_MAX_WARNINGS)
    return;
  for (int k = 0; k < res->nwarnings; k++)
    if (res->warning[k].from_decoder && strcmp(res->warning[k].text, text) == 0)
      return;
  ist_add_warning(res, 1, "%s", text);
  res->warning[res->nwarnings - 1].from_decoder = 1;
}

void ist_result_geometry(imgstat_job_result *res, uint32_t width,
                         uint32_t height, int channels, imgstat_colour colour,
                         imgstat_sample sample, const char *format,
                         uint32_t pages, uint32_t page) {
  res->width = width;
  res->height = height;
  res->channels = channels;
  res->colour = colour;
  res->sample = sample;
  res->format = format;
  res->pages = pages;
  res->page = page;
}

/* The item failed at stage: the reason goes to res->error. */
imgstat_status ist_fail(imgstat_job_result *res, imgstat_job_stage stage,
                        imgstat_status status, const char *fmt, ...) {
  res->status = status;
  res->failed_stage = stage;
  res->error.status = status;
  va_list ap;
  va_start(ap, fmt);
  imgstat_number_vsnprintf(res->error.message, sizeof res->error.message, fmt,
                           ap);
  va_end(ap);
  imgstat_error_cause(&res->error, IMGSTAT_CAUSE_NONE, 0, 0, NULL);
  return status;
}

/* The item failed at stage for err's reason: its message and its cause. */
imgstat_status ist_fail_err(imgstat_job_result *res, imgstat_job_stage stage,
                            imgstat_status status, const imgstat_error *err) {
  ist_fail(res, stage, status, "%s", ist_reason(err));
  return imgstat_error_cause(&res->error, err->cause, err->limit, err->value,
                             err->what);
}

imgstat_status imgstat_job_result_fail(imgstat_job_result *res,
                                       imgstat_job_stage stage,
                                       imgstat_status status,
                                       const imgstat_error *why) {
  memset(res, 0, sizeof *res);
  return ist_fail_err(res, stage, status, why);
}

/* verify's GPU side failed (its message after what, err's reason):
 * IMGSTAT_CAUSE_GPU_FAILED. */
static imgstat_status verify_failed(imgstat_job_result *res,
                                    imgstat_status status, const char *what,
                                    const imgstat_error *err) {
  ist_fail(res, IMGSTAT_STAGE_COMPUTE, status, "verify: %s%s", what,
           ist_reason(err));
  return imgstat_error_cause(&res->error, IMGSTAT_CAUSE_GPU_FAILED, 0, 0,
                             "verify");
}

/* The item failed because the GPU that option needs is not usable. */
imgstat_status ist_gpu_needed(imgstat_job_result *res, const char *option,
                              imgstat_status status, const char *why) {
  if (why)
    ist_fail(res, IMGSTAT_STAGE_GPU, status, "%s needs a usable GPU: %s",
             option, why);
  else
    ist_fail(res, IMGSTAT_STAGE_GPU, status, "%s needs a usable GPU", option);
  return imgstat_error_cause(&res->error, IMGSTAT_CAUSE_GPU_UNUSABLE, 0, 0,
                             option);
}

/* ---- the items -------------------------------------------------------------
 */

/* The start of every item: checks, the GPU already known to be missing (no
 * decode for nothing), the input decoded (into *own when given by path),
 * then the policy applied. Returns IMGSTAT_OK with *in set, or the
 * failure. */
static imgstat_status item_begin(imgstat_engine *e, const char *path,
                                 const imgstat_image *img,
                                 imgstat_work_kind kind, imgstat_image *own,
                                 const imgstat_image **in,
                                 imgstat_job_result *res) {
  memset(own, 0, sizeof *own);
  if (!e || (!path && !img))
    return ist_fail(res, IMGSTAT_STAGE_LOAD, IMGSTAT_ERR_ARG, "no input");
  if (ist_known_unusable(e))
    return ist_gpu_unusable(e, res);
  if (!img) {
    imgstat_error err;
    memset(&err, 0, sizeof err);
    imgstat_status st = imgstat_image_load(path, &e->opt.load, own, &err);
    if (st != IMGSTAT_OK)
      return ist_fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
    img = own;
  }
  ist_result_geometry(res, img->width, img->height, img->channels, img->colour,
                      img->sample, img->format, img->pages, img->page);
  res->int16 = img->sample == IMGSTAT_U16 && img->int16;
  if (img->band_names && !res->band_names)
    res->band_names = imgstat_band_names_dup(img->band_names, img->channels);
  if (!res->wide) {
    imgstat_error err;
    memset(&err, 0, sizeof err);
    imgstat_status st = imgstat_job_wide_alloc(&res->wide, img->channels, &err);
    if (st != IMGSTAT_OK)
      return ist_fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
  }
  ist_decoder_warning(res, img->warning);
  ist_decide_item(e, img, kind, res);
  if (ist_known_unusable(e))
    return ist_gpu_unusable(e, res);
  *in = img;
  return IMGSTAT_OK;
}

/* The GPU for one item when the policy uses one (the devices in turn),
 * else NULL. */
gpu_slot *ist_gpu_for_item(imgstat_engine *e) {
  pthread_mutex_lock(&e->lock);
  int usable = e->usable;
  pthread_mutex_unlock(&e->lock);
  if (!usable || e->start.ngpus == 0)
    return NULL;
  uint64_t k = atomic_fetch_add(&e->next_gpu, 1);
  return &e->start.gpus[k % (uint64_t)e->start.ngpus];
}

/* The partials of img by the policy (on the GPU from d when there is one). */
imgstat_status ist_item_stats(imgstat_engine *e, gpu_slot *g,
                              const imgstat_image *img, imgstat_gpu_image *d,
                              imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st;
  if (e->opt.verify) {
    st = imgstat_cpu_stats(img, e->opt.threads, IMGSTAT_JOB_CH(res, partial),
                           &err);
    if (st != IMGSTAT_OK)
      return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
    memset(&err, 0, sizeof err);
    if (!g) /* verify: the GPU is known to be usable */
      return ist_gpu_needed(res, "verify", IMGSTAT_ERR_DEVICE, NULL);
    st = gpu_stats(g->gpu, img, e->opt.kernel, IMGSTAT_JOB_CH(res, gpu_partial),
                   &err);
    if (st != IMGSTAT_OK)
      return verify_failed(res, st, "GPU failed: ", &err);
    res->backend = IMGSTAT_BACKEND_CPU;
    res->verified = 1;
    return IMGSTAT_OK;
  }
  if (g) {
    st = gpu_stats_on(g->gpu, d, img, e->opt.kernel,
                      IMGSTAT_JOB_CH(res, partial), &err);
    if (st == IMGSTAT_OK) {
      res->backend = IMGSTAT_BACKEND_GPU;
      return IMGSTAT_OK;
    }
    if (!ist_gpu_failed(e, res, &err))
      return res->status;
    memset(&err, 0, sizeof err);
  }
  st = imgstat_cpu_stats(img, e->opt.threads, IMGSTAT_JOB_CH(res, partial),
                         &err);
  if (st != IMGSTAT_OK)
    return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
  res->backend = IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

void ist_free_histograms(imgstat_job_result *res) {
  int n = res->wide ? res->wide->channels : IMGSTAT_INLINE_CHANNELS;
  imgstat_histogram *hist = IMGSTAT_JOB_CH(res, hist);
  for (int c = 0; c < n; c++)
    imgstat_histogram_free(&hist[c]);
  memset(IMGSTAT_JOB_CH(res, hist_figures), 0,
         (size_t)n * sizeof(imgstat_hist_figures));
}

/* The figures of channel c of img from its histogram h, by the CPU's rule
 * (moments from the counts; a float image's from its samples): every path
 * that has a histogram ends here, and h's hint on its occupied bins is set
 * here when its maker left none (the GPU's), on the worker: the figures,
 * the record's rebinned counts and the dataset's pooling then read those
 * bins alone. */
void ist_hist_figures(const imgstat_image *img, int c, imgstat_histogram *h,
                      const imgstat_stats_request *req,
                      imgstat_hist_figures *f) {
  if (!h->used_end)
    imgstat_histogram_find_used(h);
  imgstat_moments m;
  if (img->sample == IMGSTAT_F32)
    imgstat_image_moments_f32(img, c, &m);
  else
    imgstat_moments_from_histogram(h, &m);
  imgstat_hist_figures_compute(h, &m, req->percentiles, req->npercentiles, f);
}

/* The histograms of every channel and their figures, on the GPU (gpu's
 * context: from the device image d, else uploaded from img) or, gpu NULL,
 * on the CPU. A float image's moments come from its samples: img's planes,
 * or, when img has none (a device image alone), each plane copied from d.
 * A failure is returned with nothing kept: the caller applies the policy. */
static imgstat_status histograms_on(imgstat_gpu *gpu, imgstat_gpu_image *d,
                                    const imgstat_image *img,
                                    const imgstat_stats_request *req,
                                    imgstat_job_result *res,
                                    imgstat_error *err) {
  /* the median first, then the requested percentiles */
  double p[IMGSTAT_MAX_PERCENTILES + 1];
  int nreq = req->npercentiles;
  if (nreq < 0 || nreq > IMGSTAT_MAX_PERCENTILES)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "%d percentiles (at most %d)", nreq,
                             IMGSTAT_MAX_PERCENTILES);
  p[0] = 50;
  memcpy(p + 1, req->percentiles, sizeof(double) * (size_t)nreq);
  int np = nreq + 1;
  float *plane = NULL; /* a float plane copied from d (no host pixels) */
  imgstat_status st = IMGSTAT_OK;
  for (int c = 0; c < img->channels && st == IMGSTAT_OK; c++) {
    imgstat_histogram *h = &IMGSTAT_JOB_CH(res, hist)[c];
    double v[IMGSTAT_MAX_PERCENTILES + 1];
    if (gpu) {
      st = gpu_histogram_on(gpu, d, img, c, p, np, v, h, err);
    } else {
      st = imgstat_histogram_compute(img, c, NULL, h, err);
    }
    imgstat_hist_figures *f = &IMGSTAT_JOB_CH(res, hist_figures)[c];
    if (st == IMGSTAT_OK && gpu && d && img->sample == IMGSTAT_F32 &&
        !img->planes[c]) {
      uint64_t n = (uint64_t)img->width * img->height;
      if (!plane && !(plane = malloc((size_t)n * sizeof *plane)))
        st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
      if (st == IMGSTAT_OK)
        st = imgstat_gpu_image_download(gpu, d, c, plane, err);
      imgstat_moments m;
      if (st == IMGSTAT_OK) {
        imgstat_moments_f32(plane, n, &m);
        imgstat_hist_figures_compute(h, &m, req->percentiles, nreq, f);
      }
    } else if (st == IMGSTAT_OK) {
      ist_hist_figures(img, c, h, req, f);
    }
    if (st == IMGSTAT_OK && gpu && h->total) {
      /* the device scan's percentiles (equal to the CPU's by construction) */
      f->median = v[0];
      for (int i = 0; i < nreq; i++)
        f->percentile[i] = v[i + 1];
    }
  }
  free(plane);
  if (st != IMGSTAT_OK)
    ist_free_histograms(res);
  return st;
}

imgstat_status imgstat_device_stats(imgstat_gpu *gpu, imgstat_gpu_image *d,
                                    const imgstat_image *img, int kernel,
                                    const imgstat_stats_request *req,
                                    imgstat_job_result *res,
                                    imgstat_error *err) {
  if (!gpu || !d || !img || !res)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no device image");
  imgstat_status st =
      res->wide ? IMGSTAT_OK
                : imgstat_job_wide_alloc(&res->wide, img->channels, err);
  if (st == IMGSTAT_OK)
    st = imgstat_gpu_image_stats(gpu, d, kernel, IMGSTAT_JOB_CH(res, partial),
                                 err);
  if (st != IMGSTAT_OK)
    return st;
  res->backend = IMGSTAT_BACKEND_GPU;
  if (!req || !req->histograms)
    return IMGSTAT_OK;
  st = histograms_on(gpu, d, img, req, res, err);
  if (st == IMGSTAT_OK) {
    res->has_histograms = 1;
    res->hist_backend = IMGSTAT_BACKEND_GPU;
  }
  return st;
}

/* Histograms where the statistics were computed; a GPU failure follows the
 * same policy as the statistics'. */
imgstat_status ist_item_histograms(imgstat_engine *e, gpu_slot *g,
                                   const imgstat_image *img,
                                   imgstat_gpu_image *d,
                                   const imgstat_stats_request *req,
                                   imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (res->backend != IMGSTAT_BACKEND_GPU)
    g = NULL;
  imgstat_status st = histograms_on(g ? g->gpu : NULL, d, img, req, res, &err);
  if (st != IMGSTAT_OK && g) {
    if (!ist_gpu_failed(e, res, &err))
      return res->status;
    memset(&err, 0, sizeof err);
    g = NULL;
    st = histograms_on(NULL, NULL, img, req, res, &err);
  }
  if (st != IMGSTAT_OK)
    return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
  res->has_histograms = 1;
  res->hist_backend = g ? IMGSTAT_BACKEND_GPU : IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

/* ---- valid samples: nodata and masks ---------------------------------------
 * One reduction for every image with a nodata value or a mask: each
 * channel's valid samples compacted (imgstat_valid_compact), reduced and
 * binned as a plane of their own, the positions found again in the image.
 * The statistics of an image without labels or histograms go to the GPU
 * when the policy picks it (valid_on_gpu), by the same reduction; the rest
 * on the CPU. */

/* Whether the item has valid samples to pick: a nodata value given or the
 * file's own, or a mask. */
static int wants_valid(const imgstat_stats_request *req,
                       const imgstat_image *in) {
  if (req && (req->nnodata > 0 || req->mask_path || req->labels_path))
    return 1;
  return in->has_nodata && !(req && req->no_file_nodata);
}

/* The mask at path (of img's size when img is not NULL) as ist_mask_load
 * gives it; a failure in res. */
static imgstat_status decode_mask(imgstat_engine *e, const char *path,
                                  const imgstat_image *img, uint8_t **out,
                                  uint32_t *width, uint32_t *height,
                                  uint64_t *inside, imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st =
      ist_mask_load(&e->opt.load, path, img, out, width, height, inside, &err);
  return st == IMGSTAT_OK ? st
                          : ist_fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
}

/* The mask of req for img (decode_mask's bytes) into *out, read only;
 * *own, when not NULL, is the item's own copy to free. A mask every item
 * shares (req->mask_shared) is decoded once, by the first item that
 * asks, and kept by the engine; a decoding that fails is tried again by
 * the next item (each fails with its own message). */
static imgstat_status load_mask(imgstat_engine *e,
                                const imgstat_stats_request *req,
                                const imgstat_image *img, const uint8_t **out,
                                uint8_t **own, uint64_t *inside,
                                imgstat_job_result *res) {
  *out = NULL;
  *own = NULL;
  uint32_t w, h;
  pthread_mutex_lock(&e->mask_lock);
  /* the engine keeps one mask, the first shared one (another stays the
   * item's) */
  int keep = req->mask_shared &&
             (!e->mask_path || strcmp(e->mask_path, req->mask_path) == 0);
  if (!keep) {
    pthread_mutex_unlock(&e->mask_lock);
    imgstat_status st =
        decode_mask(e, req->mask_path, img, own, &w, &h, inside, res);
    *out = *own;
    return st;
  }
  imgstat_status st = IMGSTAT_OK;
  if (!e->mask_path) {
    uint8_t *m = NULL;
    st = decode_mask(e, req->mask_path, NULL, &m, &w, &h, inside, res);
    if (st == IMGSTAT_OK && !(e->mask_path = strdup(req->mask_path))) {
      free(m);
      st =
          ist_fail(res, IMGSTAT_STAGE_LOAD, IMGSTAT_ERR_NOMEM, "out of memory");
    }
    if (st == IMGSTAT_OK) {
      e->mask = m;
      e->mask_width = w;
      e->mask_height = h;
      e->mask_inside = *inside;
    }
  }
  const uint8_t *m = e->mask;
  w = e->mask_width;
  h = e->mask_height;
  uint64_t k = e->mask_inside;
  pthread_mutex_unlock(&e->mask_lock);
  if (st == IMGSTAT_OK) {
    imgstat_error err;
    memset(&err, 0, sizeof err);
    st = ist_mask_size(req->mask_path, w, h, img, &err);
    if (st != IMGSTAT_OK)
      ist_fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
  }
  if (st == IMGSTAT_OK) {
    *out = m;
    *inside = k;
  }
  return st;
}

/* The nodata value of each channel of in under req (given, or the file's
 * own) into v and res; a given value that is not a sample of the image's
 * type, or a list of another length than its channels, fails the item. */
static imgstat_status pick_nodata(const imgstat_stats_request *req,
                                  const imgstat_image *in, imgstat_valid *v,
                                  imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (req && req->nnodata > 1 && req->nnodata != in->channels)
    return ist_fail(res, IMGSTAT_STAGE_COMPUTE, IMGSTAT_ERR_ARG,
                    "%d nodata values for an image of %d channel%s",
                    req->nnodata, in->channels, in->channels == 1 ? "" : "s");
  for (int c = 0; c < in->channels; c++) {
    double value, stored;
    if (req && req->nnodata > 0) {
      value = req->nodata[req->nnodata == 1 ? 0 : c];
      imgstat_status st = imgstat_valid_stored_nodata(value, in, &stored, &err);
      if (st != IMGSTAT_OK)
        return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
    } else if (in->has_nodata && !(req && req->no_file_nodata)) {
      value = in->nodata;
      if (imgstat_valid_stored_nodata(value, in, &stored, &err) != IMGSTAT_OK) {
        /* the file's own value, not a sample of its type: none */
        if (c == 0)
          ist_add_warning(res, 1,
                          "its nodata value %.17g is not a sample of the "
                          "image: not applied",
                          value);
        continue;
      }
    } else {
      continue;
    }
    v->has_nodata[c] = 1;
    v->nodata[c] = stored; /* as the planes hold it */
    res->has_nodata = 1;
    IMGSTAT_JOB_CH(res, nodata)[c] = value;
  }
  return IMGSTAT_OK;
}

/* The partials (and with histograms, the histograms and their figures)
 * of the valid samples under v of each channel of in, on the CPU. */
static imgstat_status valid_channels(imgstat_engine *e, const imgstat_image *in,
                                     const imgstat_valid *v,
                                     const imgstat_stats_request *req,
                                     imgstat_partial *partial, uint64_t *nodata,
                                     imgstat_histogram *hist,
                                     imgstat_hist_figures *figures,
                                     imgstat_error *err) {
  imgstat_status st = IMGSTAT_OK;
  /* integer samples under a nodata value or a mask, no histograms: one
   * pass over the planes on the cores (the same figures) */
  if (in->sample != IMGSTAT_F32 && !v->npixels && !(req && req->histograms))
    return imgstat_cpu_valid_stats(in, v, e->opt.threads, partial, nodata, err);
  for (int c = 0; c < in->channels && st == IMGSTAT_OK; c++) {
    imgstat_image part;
    st = imgstat_valid_compact(in, c, v, &part, &nodata[c], err);
    imgstat_partial p[1]; /* part: one channel */
    if (st == IMGSTAT_OK)
      st = imgstat_cpu_stats(&part, e->opt.threads, p, err);
    if (st == IMGSTAT_OK) {
      imgstat_valid_raster_pair(in, c, v, &p[0].min_index, &p[0].max_index);
      partial[c] = p[0];
    }
    if (st == IMGSTAT_OK && req && req->histograms) {
      st = imgstat_histogram_compute(&part, 0, NULL, &hist[c], err);
      if (st == IMGSTAT_OK)
        ist_hist_figures(&part, 0, &hist[c], req, &figures[c]);
    }
    imgstat_image_free(&part);
  }
  return st;
}

/* The label image at path for in (ist_labels_load): each distinct
 * non-zero label's pixels (inside mask, when not NULL) into res->labels,
 * their pixel lists into *pixels (free it), res->labels[k]'s list at
 * (*pixels)[start[k]] (start: free it). */
static imgstat_status load_labels(imgstat_engine *e, const char *path,
                                  const imgstat_image *in, const uint8_t *mask,
                                  uint32_t **pixels, uint64_t **start,
                                  imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  ist_label_pixels l;
  imgstat_status st = ist_labels_load(&e->opt.load, path, in, mask, &l, &err);
  if (st != IMGSTAT_OK)
    return ist_fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
  res->labels = calloc(l.count ? l.count : 1, sizeof *res->labels);
  if (!res->labels) {
    ist_label_pixels_free(&l);
    return ist_fail(res, IMGSTAT_STAGE_LOAD, IMGSTAT_ERR_NOMEM,
                    "out of memory");
  }
  for (uint32_t k = 0; k < l.count; k++) {
    res->labels[k].label = l.label[k];
    res->labels[k].pixels = l.start[k + 1] - l.start[k];
    if (imgstat_job_wide_alloc(&res->labels[k].wide, in->channels, &err) !=
        IMGSTAT_OK) {
      res->nlabels = k + 1; /* freed with the result */
      ist_label_pixels_free(&l);
      return ist_fail_err(res, IMGSTAT_STAGE_LOAD, IMGSTAT_ERR_NOMEM, &err);
    }
  }
  res->nlabels = l.count;
  res->has_labels = 1;
  *pixels = l.pixels;
  *start = l.start;
  free(l.label);
  return IMGSTAT_OK;
}

/* The statistics of in's valid samples under v and of its labels (none
 * when res->nlabels is 0) on the GPU of g, from one upload
 * (imgstat_gpu_valid_regions_hist; in a batch with the images of other
 * workers, ist_valid_regions), into res and res->labels, with their
 * histograms when with_hist: each label k's pixels at pixels[start[k]];
 * the device's figures for nlabels x channels, not more. */
static imgstat_status
regions_on_gpu(imgstat_engine *e, gpu_slot *g, const imgstat_image *in,
               const imgstat_valid *v, const uint32_t *pixels,
               const uint64_t *start, int with_hist, imgstat_job_result *res,
               imgstat_error *err) {
  uint32_t nl = res->nlabels;
  const size_t nc = (size_t)in->channels;
  const size_t nlc = nl ? (size_t)nl * nc : 1;
  imgstat_partial *lp = calloc(nlc, sizeof *lp);
  uint64_t *ln = calloc(nlc, sizeof *ln);
  imgstat_histogram *lh = with_hist ? calloc(nlc, sizeof *lh) : NULL;
  uint64_t *count = malloc((nl ? nl : 1) * sizeof *count);
  imgstat_status st = IMGSTAT_OK;
  if (!lp || !ln || !count || (with_hist && !lh))
    st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  for (uint32_t k = 0; st == IMGSTAT_OK && k < nl; k++)
    count[k] = res->labels[k].pixels;
  if (st == IMGSTAT_OK) {
    imgstat_gpu_valid_item item;
    memset(&item, 0, sizeof item);
    item.img = in;
    item.v = v;
    item.out = IMGSTAT_JOB_CH(res, partial);
    item.nodata = IMGSTAT_JOB_CH(res, nodata_count);
    item.hist = with_hist ? IMGSTAT_JOB_CH(res, hist) : NULL;
    item.nlabels = nl;
    item.pixels = pixels;
    item.start = start;
    item.count = count;
    item.lout = lp;
    item.lnodata = ln;
    item.lhist = lh;
    ist_valid_regions(g, e->opt.kernel, &item);
    st = item.status;
    if (st != IMGSTAT_OK)
      *err = item.err;
  }
  for (uint32_t k = 0; st == IMGSTAT_OK && k < nl; k++)
    for (size_t c = 0; c < nc; c++) {
      imgstat_job_label *l = &res->labels[k];
      IMGSTAT_JOB_CH(l, partial)[c] = lp[k * nc + c];
      IMGSTAT_JOB_CH(l, nodata_count)[c] = ln[k * nc + c];
      if (lh) /* the histogram handed over to the label */
        IMGSTAT_JOB_CH(l, hist)[c] = lh[k * nc + c];
    }
  free(lp);
  free(ln);
  free(lh);
  free(count);
  return st;
}

/* The figures of every histogram made on the GPU (the item's and its
 * labels'), by the CPU's rule from their counts. */
static void gpu_valid_figures(const imgstat_image *in,
                              const imgstat_stats_request *req,
                              imgstat_job_result *res) {
  for (int c = 0; c < in->channels; c++)
    ist_hist_figures(in, c, &IMGSTAT_JOB_CH(res, hist)[c], req,
                     &IMGSTAT_JOB_CH(res, hist_figures)[c]);
  for (uint32_t k = 0; k < res->nlabels; k++)
    for (int c = 0; c < in->channels; c++)
      ist_hist_figures(in, c, &IMGSTAT_JOB_CH(&res->labels[k], hist)[c], req,
                       &IMGSTAT_JOB_CH(&res->labels[k], hist_figures)[c]);
  res->has_histograms = 1;
  res->hist_backend = IMGSTAT_BACKEND_GPU;
}

/* Frees the histograms of the item's labels (a GPU run's, given up). */
static void free_label_histograms(const imgstat_image *in,
                                  imgstat_job_result *res) {
  for (uint32_t k = 0; k < res->nlabels; k++)
    for (int c = 0; c < in->channels; c++)
      imgstat_histogram_free(&IMGSTAT_JOB_CH(&res->labels[k], hist)[c]);
}

/* The valid samples' statistics of in under v on the GPU of g (the device
 * reduction of the image's and its labels' valid samples at once,
 * imgstat_gpu_valid_regions_hist), when the policy gives the item one;
 * histograms of 8- and 16-bit samples there too, their figures from the
 * counts by the CPU's rule (a float image's histograms stay on the CPU,
 * its bins and moments being the CPU's; with verify, histograms and labels
 * too): 1 when done (verify: the CPU's record, the GPU's partials beside
 * it), -1 when the item failed, 0 for the CPU (no GPU, or auto's
 * fallback). */
static int valid_on_gpu(imgstat_engine *e, gpu_slot *g, const imgstat_image *in,
                        const imgstat_valid *v,
                        const imgstat_stats_request *req,
                        const uint32_t *pixels, const uint64_t *start,
                        imgstat_job_result *res) {
  const int with_hist = req && req->histograms;
  if (!g || (with_hist && (in->sample == IMGSTAT_F32 || e->opt.verify)) ||
      (req && req->labels_path && e->opt.verify))
    return 0;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st;
  if (e->opt.verify) {
    st = valid_channels(e, in, v, req, IMGSTAT_JOB_CH(res, partial),
                        IMGSTAT_JOB_CH(res, nodata_count), NULL, NULL, &err);
    if (st != IMGSTAT_OK) {
      ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
      return -1;
    }
    uint64_t *nodata = malloc((size_t)in->channels * sizeof *nodata);
    if (!nodata) {
      ist_fail(res, IMGSTAT_STAGE_COMPUTE, IMGSTAT_ERR_NOMEM, "out of memory");
      return -1;
    }
    st =
        imgstat_gpu_valid_stats(g->gpu, in, v, e->opt.kernel,
                                IMGSTAT_JOB_CH(res, gpu_partial), nodata, &err);
    if (st != IMGSTAT_OK) {
      free(nodata);
      verify_failed(res, st, "GPU failed: ", &err);
      return -1;
    }
    for (int c = 0; c < in->channels; c++)
      if (nodata[c] != IMGSTAT_JOB_CH(res, nodata_count)[c]) {
        ist_fail(res, IMGSTAT_STAGE_COMPUTE, IMGSTAT_ERR_DEVICE,
                 "verify: channel %d: GPU nodata_count %" PRIu64
                 " != CPU %" PRIu64,
                 c, nodata[c], IMGSTAT_JOB_CH(res, nodata_count)[c]);
        imgstat_error_cause(&res->error, IMGSTAT_CAUSE_GPU_FAILED, 0, 0,
                            "verify");
        free(nodata);
        return -1;
      }
    free(nodata);
    res->backend = IMGSTAT_BACKEND_CPU;
    res->verified = 1;
    return 1;
  }
  st = regions_on_gpu(e, g, in, v, pixels, start, with_hist, res, &err);
  if (st == IMGSTAT_OK) {
    if (with_hist)
      gpu_valid_figures(in, req, res);
    res->backend = IMGSTAT_BACKEND_GPU;
    return 1;
  }
  ist_free_histograms(res);
  free_label_histograms(in, res);
  int n = res->wide ? res->wide->channels : IMGSTAT_INLINE_CHANNELS;
  memset(IMGSTAT_JOB_CH(res, partial), 0, (size_t)n * sizeof(imgstat_partial));
  memset(IMGSTAT_JOB_CH(res, nodata_count), 0, (size_t)n * sizeof(uint64_t));
  return ist_gpu_failed(e, res, &err) ? 0 : -1;
}

/* The statistics (and histograms) of in's valid samples, on the CPU, and
 * those of each label; the statistics alone on the GPU by valid_on_gpu. */
static imgstat_status valid_item(imgstat_engine *e, gpu_slot *g,
                                 const imgstat_image *in,
                                 const imgstat_stats_request *req,
                                 imgstat_job_result *res) {
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  const uint8_t *mask = NULL;
  uint8_t *own = NULL;
  uint32_t *pixels = NULL;
  uint64_t *start = NULL;
  imgstat_status st = pick_nodata(req, in, &v, res);
  if (st == IMGSTAT_OK && req && req->mask_path) {
    st = load_mask(e, req, in, &mask, &own, &res->mask_pixels, res);
    v.mask = mask;
    res->masked = st == IMGSTAT_OK;
  }
  if (st == IMGSTAT_OK && req && req->labels_path)
    st = load_labels(e, req->labels_path, in, mask, &pixels, &start, res);
  int with_hist = req && req->histograms;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int on_gpu = st == IMGSTAT_OK
                   ? valid_on_gpu(e, g, in, &v, req, pixels, start, res)
                   : 0;
  if (on_gpu != 0) {
    free(own);
    free(pixels);
    free(start);
    return on_gpu > 0 ? IMGSTAT_OK : res->status;
  }
  if (st == IMGSTAT_OK) {
    st = valid_channels(e, in, &v, req, IMGSTAT_JOB_CH(res, partial),
                        IMGSTAT_JOB_CH(res, nodata_count),
                        IMGSTAT_JOB_CH(res, hist),
                        IMGSTAT_JOB_CH(res, hist_figures), &err);
    for (uint32_t k = 0; k < res->nlabels && st == IMGSTAT_OK; k++) {
      imgstat_job_label *l = &res->labels[k];
      imgstat_valid lv = v;
      lv.mask = NULL;
      lv.pixels = pixels + start[k];
      lv.npixels = l->pixels;
      st = valid_channels(e, in, &lv, req, IMGSTAT_JOB_CH(l, partial),
                          IMGSTAT_JOB_CH(l, nodata_count),
                          IMGSTAT_JOB_CH(l, hist),
                          IMGSTAT_JOB_CH(l, hist_figures), &err);
    }
    if (st != IMGSTAT_OK)
      ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
  }
  free(own);
  free(pixels);
  free(start);
  if (st != IMGSTAT_OK) {
    ist_free_histograms(res);
    return res->status;
  }
  res->backend = IMGSTAT_BACKEND_CPU;
  if (with_hist) {
    res->has_histograms = 1;
    res->hist_backend = IMGSTAT_BACKEND_CPU;
  }
  return IMGSTAT_OK;
}

imgstat_status imgstat_engine_valid_copy(imgstat_engine *e,
                                         const imgstat_image *img,
                                         const imgstat_stats_request *req,
                                         imgstat_image *out,
                                         imgstat_error *err) {
  memset(out, 0, sizeof *out);
  if (!e || !img || img->sample != IMGSTAT_F32 || !wants_valid(req, img))
    return IMGSTAT_OK;
  imgstat_job_result *tmp = calloc(1, sizeof *tmp);
  if (!tmp)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  const uint8_t *mask = NULL;
  uint8_t *own = NULL;
  uint64_t inside = 0;
  imgstat_status st = pick_nodata(req, img, &v, tmp);
  if (st == IMGSTAT_OK && req && req->mask_path) {
    st = load_mask(e, req, img, &mask, &own, &inside, tmp);
    v.mask = mask;
  }
  if (st != IMGSTAT_OK) {
    imgstat_error_set(err, st, "%s", ist_reason(&tmp->error));
  } else if (imgstat_valid_active(&v, img->channels)) {
    st = imgstat_valid_nan_copy(img, &v, out, err);
  }
  free(own);
  imgstat_job_result_free(tmp);
  free(tmp);
  return st;
}

/* The statistics item's work on its decoded input. */
static imgstat_status stats_item(imgstat_engine *e, gpu_slot *g,
                                 const imgstat_image *in, const void *arg,
                                 imgstat_job_result *res) {
  const imgstat_stats_request *req = arg;
  if (wants_valid(req, in))
    return valid_item(e, g, in, req, res);
  int with_hist = req && req->histograms;
  /* Statistics and histograms on the GPU: one upload for both. When the
   * upload fails (an image larger than the device's free memory, say), each
   * call uploads on its own: the statistics then go by ranges. */
  imgstat_gpu_image *d = NULL;
  if (with_hist && !e->opt.verify && g) {
    imgstat_error err;
    memset(&err, 0, sizeof err);
    if (imgstat_gpu_image_upload(g->gpu, in, &d, &err) != IMGSTAT_OK)
      d = NULL;
  }
  imgstat_status st = ist_item_stats(e, g, in, d, res);
  if (st == IMGSTAT_OK && with_hist)
    st = ist_item_histograms(e, g, in, d, req, res);
  imgstat_gpu_image_release(g ? g->gpu : NULL, d);
  return st;
}

int ist_engine_streams(const imgstat_engine *e, const imgstat_decoder *d,
                       const imgstat_stats_request *req) {
  /* the CPU's item: asked for, or auto (the GPU would take the image only
   * once it is decoded whole, after the reading that is the most of the
   * time here: on the H200 host a 13-band 10980 x 10980 uint16 tile took
   * 0.34 s streamed, 0.58 s decoded on the CPU, 1.04 s on the GPU) */
  int cpu = e && (e->opt.backend == IMGSTAT_BACKEND_CPU ||
                  e->opt.backend == IMGSTAT_BACKEND_AUTO);
  return cpu && d && !e->opt.verify &&
         !(req && (req->mask_path || req->labels_path || req->histograms)) &&
         ist_decoder_streams(d);
}

imgstat_status ist_engine_stats_streamed(imgstat_engine *e, imgstat_decoder *d,
                                         const imgstat_stats_request *req,
                                         imgstat_job_result *res) {
  if (!res)
    return IMGSTAT_ERR_ARG;
  memset(res, 0, sizeof *res);
  if (!ist_engine_streams(e, d, req))
    return ist_fail(res, IMGSTAT_STAGE_LOAD, IMGSTAT_ERR_ARG,
                    "no statistics as the input is read");
  const imgstat_header *h = imgstat_decoder_header(d);
  imgstat_image shape =
      ist_image_shape(h->width, h->height, h->channels, h->sample, h->format);
  shape.has_nodata = h->has_nodata;
  shape.nodata = h->nodata;
  shape.int16 = h->int16;
  shape.colour = h->colour;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  /* what item_begin sets from the decoded image, in its order (a nodata
   * value the image cannot hold then fails the item as it does there,
   * before the pixels are read) */
  ist_result_geometry(res, h->width, h->height, h->channels, h->colour,
                      h->sample, h->format, h->pages, h->page);
  res->int16 = h->sample == IMGSTAT_U16 && h->int16;
  if (h->band_names)
    res->band_names = imgstat_band_names_dup(h->band_names, h->channels);
  imgstat_status st = imgstat_job_wide_alloc(&res->wide, h->channels, &err);
  if (st != IMGSTAT_OK)
    return ist_fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
  ist_decoder_warning(res, ist_decoder_warning_text(d));
  ist_decide_item(e, &shape, IMGSTAT_WORK_STATS, res);
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  int valid = wants_valid(req, &shape);
  if (valid && (st = pick_nodata(req, &shape, &v, res)) != IMGSTAT_OK)
    return st;
  st = ist_decoder_stats(d, valid ? &v : NULL, IMGSTAT_JOB_CH(res, partial),
                         IMGSTAT_JOB_CH(res, nodata_count), &err);
  if (st != IMGSTAT_OK) { /* the read's failure: the decode's result */
    imgstat_job_result_free(res);
    return ist_fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
  }
  res->backend = IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

/* The normalization item's work: on the GPU by the policy (a failure
 * there: the policy's fallback), else on the CPU. */
static imgstat_status normalize_item(imgstat_engine *e, gpu_slot *g,
                                     const imgstat_image *in, const void *arg,
                                     imgstat_job_result *res) {
  const imgstat_norm_options *opts = arg;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st;
  if (g) {
    imgstat_norm_plan given; /* figures given: no measuring on the device */
    st = opts->measured ? imgstat_norm_plan_make(in, opts, NULL, &given, &err)
                        : IMGSTAT_OK;
    if (st != IMGSTAT_OK)
      return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
    st = opts->measured
             ? imgstat_gpu_norm_apply(g->gpu, in, &given, &res->output, &err)
             : gpu_normalize(g->gpu, in, opts, &res->output, &err);
    if (st == IMGSTAT_OK) {
      res->backend = IMGSTAT_BACKEND_GPU;
      return IMGSTAT_OK;
    }
    imgstat_image_free(&res->output);
    if (!ist_gpu_failed(e, res, &err))
      return res->status;
    memset(&err, 0, sizeof err);
  }
  imgstat_norm_measure m;
  imgstat_norm_plan plan;
  st = imgstat_norm_measure_cpu(in, opts, e->opt.threads, &m, &err);
  if (st == IMGSTAT_OK)
    st = imgstat_norm_plan_make(in, opts, &m, &plan, &err);
  if (st == IMGSTAT_OK)
    st = imgstat_norm_apply_cpu(in, &plan, e->opt.threads, &res->output, &err);
  if (st != IMGSTAT_OK) {
    imgstat_image_free(&res->output);
    return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
  }
  res->backend = IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

/* What imgstat_engine_normalize_valid's item takes. */
typedef struct valid_norm_arg {
  const imgstat_norm_options *opts;
  const imgstat_stats_request *req;
  int has_fill;
  double fill;
} valid_norm_arg;

/* Sample i of channel k of out set to v, saturated to its type's range. */
static void put_sample(imgstat_image *out, int k, uint64_t i, double v) {
  size_t stride = imgstat_image_stride(out);
  uint32_t y = (uint32_t)(i / out->width), x = (uint32_t)(i % out->width);
  char *row = (char *)out->planes[k] + (size_t)y * stride;
  if (out->sample == IMGSTAT_F32) {
    ((float *)(void *)row)[x] = (float)v;
    return;
  }
  double top = out->sample == IMGSTAT_U8 ? 255.0 : 65535.0;
  double r = v != v ? 0.0 : v < 0.0 ? 0.0 : v > top ? top : floor(v + 0.5);
  if (out->sample == IMGSTAT_U8)
    ((uint8_t *)row)[x] = (uint8_t)r;
  else
    ((uint16_t *)(void *)row)[x] = (uint16_t)r;
}

/* Sample i of channel c of img as a double. */
static double get_sample(const imgstat_image *img, int c, uint64_t i) {
  size_t stride = imgstat_image_stride(img);
  uint32_t y = (uint32_t)(i / img->width), x = (uint32_t)(i % img->width);
  const char *row = (const char *)img->planes[c] + (size_t)y * stride;
  switch (img->sample) {
  case IMGSTAT_U8:
    return ((const uint8_t *)row)[x];
  case IMGSTAT_U16:
    return ((const uint16_t *)(const void *)row)[x];
  default:
    return ((const float *)(const void *)row)[x];
  }
}

static imgstat_status normalize_valid_item(imgstat_engine *e, gpu_slot *g,
                                           const imgstat_image *in,
                                           const void *arg,
                                           imgstat_job_result *res) {
  const valid_norm_arg *a = arg;
  const imgstat_norm_options *opts = a->opts;
  if (!wants_valid(a->req, in))
    return normalize_item(e, g, in, opts, res);
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  const uint8_t *mask = NULL;
  uint8_t *own = NULL, *flags = NULL;
  uint64_t inside = 0;
  imgstat_status st = pick_nodata(a->req, in, &v, res);
  if (st == IMGSTAT_OK && a->req->mask_path) {
    st = load_mask(e, a->req, in, &mask, &own, &inside, res);
    v.mask = mask;
  }
  if (st != IMGSTAT_OK) {
    free(own);
    return res->status;
  }
  imgstat_error err;
  memset(&err, 0, sizeof err);
  /* each channel measured over its valid samples */
  imgstat_norm_measure m;
  memset(&m, 0, sizeof m);
  int measures = !opts->measured && (opts->mode == IMGSTAT_NORM_MINMAX ||
                                     opts->mode == IMGSTAT_NORM_CLIP ||
                                     opts->mode == IMGSTAT_NORM_ZSCORE);
  for (int c = 0; c < in->channels && st == IMGSTAT_OK && measures; c++) {
    imgstat_image part;
    uint64_t nodata;
    st = imgstat_valid_compact(in, c, &v, &part, &nodata, &err);
    if (st == IMGSTAT_OK && part.width > 0) {
      imgstat_norm_options one = *opts;
      one.linked = 0;
      one.nstats = 0;
      imgstat_norm_measure m1;
      st = imgstat_norm_measure_cpu(&part, &one, e->opt.threads, &m1, &err);
      if (st == IMGSTAT_OK) {
        m.has_values[c] = m1.has_values[0];
        m.lo[c] = m1.lo[0];
        m.hi[c] = m1.hi[0];
        m.mean[c] = m1.mean[0];
        m.std[c] = m1.std[0];
      }
    }
    imgstat_image_free(&part);
  }
  if (st == IMGSTAT_OK && measures && opts->linked)
    imgstat_norm_measure_link(in->channels, &m);
  imgstat_norm_measure given;
  if (st == IMGSTAT_OK && !measures)
    st = imgstat_norm_measure_cpu(in, opts, e->opt.threads, &given, &err);
  imgstat_norm_plan plan;
  if (st == IMGSTAT_OK)
    st = imgstat_norm_plan_make(in, opts, measures ? &m : &given, &plan, &err);
  if (st == IMGSTAT_OK)
    st = imgstat_norm_apply_cpu(in, &plan, e->opt.threads, &res->output, &err);
  /* the samples left out: as they were, or the fill value */
  uint64_t n = (uint64_t)in->width * in->height;
  if (st == IMGSTAT_OK && n && !(flags = malloc((size_t)n)))
    st = imgstat_error_set(&err, IMGSTAT_ERR_NOMEM, "out of memory");
  for (int k = 0;
       st == IMGSTAT_OK && n && k < res->output.channels && k < in->channels;
       k++) {
    st = imgstat_valid_flags(in, k, &v, flags, &err);
    for (uint64_t i = 0; st == IMGSTAT_OK && i < n; i++)
      if (!flags[i])
        put_sample(&res->output, k, i,
                   a->has_fill ? a->fill : get_sample(in, k, i));
  }
  free(flags);
  free(own);
  if (st != IMGSTAT_OK) {
    imgstat_image_free(&res->output);
    return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
  }
  res->has_nodata =
      v.has_nodata[0] || v.has_nodata[1] || v.has_nodata[2] || v.has_nodata[3];
  res->masked = mask != NULL;
  res->mask_pixels = inside;
  res->backend = IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

/* An int16 image (the value + 32768 in 16-bit planes) as the float image
 * of its values, each exact: what normalize reads an int16 input as (its
 * maps and given constants are in the values' units); res says float. */
static imgstat_status int16_values(const imgstat_image *in, imgstat_image *out,
                                   imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st =
      imgstat_image_alloc(out, in->width, in->height, in->channels, IMGSTAT_F32,
                          IMGSTAT_MAX_PIXELS_LIMIT, &err);
  if (st != IMGSTAT_OK)
    return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
  for (int c = 0; c < in->channels; c++)
    for (uint32_t y = 0; y < in->height; y++) {
      const uint16_t *src = ist_image_row(in, c, y);
      float *dst = ist_image_row(out, c, y);
      for (uint32_t x = 0; x < in->width; x++)
        dst[x] = (float)((int32_t)src[x] - IMGSTAT_INT16_OFFSET);
    }
  out->format = in->format;
  out->pages = in->pages;
  out->page = in->page;
  out->has_nodata = in->has_nodata;
  out->nodata = in->nodata;
  res->sample = IMGSTAT_F32;
  res->int16 = 0;
  return IMGSTAT_OK;
}

/* One item: its start (item_begin), then work on the decoded input. */
static imgstat_status run_item(
    imgstat_engine *e, const char *path, const imgstat_image *img,
    imgstat_work_kind kind,
    imgstat_status (*work)(imgstat_engine *, gpu_slot *, const imgstat_image *,
                           const void *, imgstat_job_result *),
    const void *arg, imgstat_job_result *res) {
  if (!res)
    return IMGSTAT_ERR_ARG;
  memset(res, 0, sizeof *res);
  imgstat_image own, values;
  memset(&values, 0, sizeof values);
  const imgstat_image *in = NULL;
  imgstat_status st = item_begin(e, path, img, kind, &own, &in, res);
  if (st == IMGSTAT_OK && kind == IMGSTAT_WORK_NORMALIZE &&
      in->sample == IMGSTAT_U16 && in->int16) {
    st = int16_values(in, &values, res);
    in = &values;
  }
  if (st == IMGSTAT_OK)
    st = work(e, ist_gpu_for_item(e), in, arg, res);
  imgstat_image_free(&values);
  imgstat_image_free(&own);
  return st;
}

imgstat_status imgstat_engine_stats(imgstat_engine *e, const char *path,
                                    const imgstat_image *img,
                                    const imgstat_stats_request *req,
                                    imgstat_job_result *res) {
  imgstat_work_kind kind =
      req && req->histograms ? IMGSTAT_WORK_HISTOGRAMS : IMGSTAT_WORK_STATS;
  return run_item(e, path, img, kind, stats_item, req, res);
}

imgstat_status imgstat_engine_normalize(imgstat_engine *e, const char *path,
                                        const imgstat_image *img,
                                        const imgstat_norm_options *opts,
                                        imgstat_job_result *res) {
  if (!opts) {
    if (res)
      memset(res, 0, sizeof *res);
    return res ? ist_fail(res, IMGSTAT_STAGE_COMPUTE, IMGSTAT_ERR_ARG,
                          "no normalization options")
               : IMGSTAT_ERR_ARG;
  }
  return run_item(e, path, img, IMGSTAT_WORK_NORMALIZE, normalize_item, opts,
                  res);
}

imgstat_status imgstat_engine_normalize_valid(
    imgstat_engine *e, const char *path, const imgstat_image *img,
    const imgstat_norm_options *opts, const imgstat_stats_request *req,
    int has_fill, double fill, imgstat_job_result *res) {
  if (!opts || !req)
    return imgstat_engine_normalize(e, path, img, opts, res);
  valid_norm_arg a = {opts, req, has_fill, fill};
  return run_item(e, path, img, IMGSTAT_WORK_NORMALIZE, normalize_valid_item,
                  &a, res);
}

/* The name of the decoder that made an item's pixels. */
const char *ist_jpeg_decoder_of(const imgstat_gpu_jpeg_item *it) {
  return it->hardware ? IMGSTAT_DECODER_NVJPEG_HARDWARE
                      : IMGSTAT_DECODER_NVJPEG_HYBRID;
}

/* The planes of a decoded item copied to the host (for the CPU's share). */
static imgstat_status jpeg_download(gpu_slot *g,
                                    const imgstat_gpu_jpeg_item *it,
                                    imgstat_image *host, imgstat_error *err) {
  imgstat_status st = imgstat_image_alloc(host, it->width, it->height,
                                          it->channels, IMGSTAT_U8, 0, err);
  if (st == IMGSTAT_OK)
    st = imgstat_gpu_jpeg_item_download(g->jpeg, it, host, err);
  if (st != IMGSTAT_OK)
    imgstat_image_free(host);
  else
    host->format = "JPEG";
  return st;
}

imgstat_image ist_image_shape(uint32_t width, uint32_t height, int channels,
                              imgstat_sample sample, const char *format) {
  imgstat_image shape = {.width = width,
                         .height = height,
                         .channels = channels,
                         .sample = sample,
                         .format = format};
  return shape;
}

/* A decoded item's shape (no pixels) and its planes wrapped as a device
 * image of g's context (*d; release it). */
static imgstat_status jpeg_wrap(gpu_slot *g, const imgstat_gpu_jpeg_item *it,
                                imgstat_image *shape, imgstat_gpu_image **d,
                                imgstat_error *err) {
  *shape =
      ist_image_shape(it->width, it->height, it->channels, IMGSTAT_U8, "JPEG");
  return imgstat_gpu_image_wrap(g->gpu, it->width, it->height, it->channels,
                                IMGSTAT_U8, (void *const *)it->planes, 0, d,
                                err);
}

/* The statistics (and histograms) of a decoded item from its device planes;
 * with verify, the CPU's of the same pixels beside them. A GPU failure
 * follows the policy (ist_gpu_failed): the CPU then computes from the planes
 * copied to the host; returns 0 when that copy fails too (the caller then
 * decodes on the CPU). */
int ist_jpeg_device_item(imgstat_engine *e, gpu_slot *g,
                         const imgstat_gpu_jpeg_item *it,
                         const imgstat_stats_request *req,
                         imgstat_job_result *res) {
  imgstat_image shape;
  imgstat_image host;
  memset(&host, 0, sizeof host);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_gpu_image *d = NULL;
  int with_hist = req && req->histograms;
  imgstat_status st = jpeg_wrap(g, it, &shape, &d, &err);
  if (st == IMGSTAT_OK && !e->opt.verify) {
    st = imgstat_device_stats(g->gpu, d, &shape, e->opt.kernel, req, res, &err);
    if (st == IMGSTAT_OK)
      goto done;
  } else if (st == IMGSTAT_OK) {
    st = imgstat_gpu_image_stats(g->gpu, d, e->opt.kernel,
                                 IMGSTAT_JOB_CH(res, gpu_partial), &err);
  }
  if (st == IMGSTAT_OK && e->opt.verify) {
    /* the CPU's statistics of the same pixels are the record; the slot is
     * given back first (the planes are the item's) */
    imgstat_gpu_image_release(g->gpu, d);
    d = NULL;
    st = jpeg_download(g, it, &host, &err);
    if (st != IMGSTAT_OK)
      verify_failed(res, st, "", &err);
    else if ((st = imgstat_cpu_stats(&host, e->opt.threads,
                                     IMGSTAT_JOB_CH(res, partial), &err)) !=
             IMGSTAT_OK)
      ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
    else {
      res->backend = IMGSTAT_BACKEND_CPU;
      res->verified = 1;
      if (with_hist)
        ist_item_histograms(e, NULL, &host, NULL, req, res);
    }
    goto done;
  }
  /* a GPU failure: by the policy, an error or the CPU */
  if (!ist_gpu_failed(e, res, &err))
    goto done;
  memset(&err, 0, sizeof err);
  if (jpeg_download(g, it, &host, &err) != IMGSTAT_OK) {
    imgstat_gpu_image_release(g->gpu, d);
    return 0;
  }
  if (ist_item_stats(e, NULL, &host, NULL, res) == IMGSTAT_OK && with_hist)
    ist_item_histograms(e, NULL, &host, NULL, req, res);
done:
  imgstat_image_free(&host);
  imgstat_gpu_image_release(g->gpu, d);
  return 1;
}
