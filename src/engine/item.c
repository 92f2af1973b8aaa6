/*
 * The items (imgstat/engine.h, engine.h): one result value per item, for an
 * image on the host (decoded by path, or given) and for one on the device
 * (a JPEG decoded by nvJPEG, a caller's device image): statistics,
 * histograms with their figures, verify, normalization, each by the
 * policy.
 */
#include "engine.h"

#include "imgstat/cuda_norm.h"

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

void imgstat_job_result_free(imgstat_job_result *res) {
  if (!res)
    return;
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    imgstat_histogram_free(&res->hist[c]);
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
    st = imgstat_cpu_stats(img, e->opt.threads, res->partial, &err);
    if (st != IMGSTAT_OK)
      return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
    memset(&err, 0, sizeof err);
    if (!g) /* verify: the GPU is known to be usable */
      return ist_gpu_needed(res, "verify", IMGSTAT_ERR_DEVICE, NULL);
    st = gpu_stats(g->gpu, img, e->opt.kernel, res->gpu_partial, &err);
    if (st != IMGSTAT_OK)
      return verify_failed(res, st, "GPU failed: ", &err);
    res->backend = IMGSTAT_BACKEND_CPU;
    res->verified = 1;
    return IMGSTAT_OK;
  }
  if (g) {
    st = gpu_stats_on(g->gpu, d, img, e->opt.kernel, res->partial, &err);
    if (st == IMGSTAT_OK) {
      res->backend = IMGSTAT_BACKEND_GPU;
      return IMGSTAT_OK;
    }
    if (!ist_gpu_failed(e, res, &err))
      return res->status;
    memset(&err, 0, sizeof err);
  }
  st = imgstat_cpu_stats(img, e->opt.threads, res->partial, &err);
  if (st != IMGSTAT_OK)
    return ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
  res->backend = IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

void ist_free_histograms(imgstat_job_result *res) {
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    imgstat_histogram_free(&res->hist[c]);
  memset(res->hist_figures, 0, sizeof res->hist_figures);
}

/* The figures of channel c of img from its histogram h, by the CPU's rule
 * (moments from the counts; a float image's from its samples): every path
 * that has a histogram ends here. */
void ist_hist_figures(const imgstat_image *img, int c,
                      const imgstat_histogram *h,
                      const imgstat_stats_request *req,
                      imgstat_hist_figures *f) {
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
    imgstat_histogram *h = &res->hist[c];
    double v[IMGSTAT_MAX_PERCENTILES + 1];
    if (gpu) {
      st = gpu_histogram_on(gpu, d, img, c, p, np, v, h, err);
    } else {
      st = imgstat_histogram_compute(img, c, NULL, h, err);
    }
    imgstat_hist_figures *f = &res->hist_figures[c];
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
      imgstat_gpu_image_stats(gpu, d, kernel, res->partial, err);
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

/* The statistics item's work on its decoded input. */
static imgstat_status stats_item(imgstat_engine *e, gpu_slot *g,
                                 const imgstat_image *in, const void *arg,
                                 imgstat_job_result *res) {
  const imgstat_stats_request *req = arg;
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
  imgstat_image own;
  const imgstat_image *in = NULL;
  imgstat_status st = item_begin(e, path, img, kind, &own, &in, res);
  if (st == IMGSTAT_OK)
    st = work(e, ist_gpu_for_item(e), in, arg, res);
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
    st = imgstat_gpu_image_stats(g->gpu, d, e->opt.kernel, res->gpu_partial,
                                 &err);
  }
  if (st == IMGSTAT_OK && e->opt.verify) {
    /* the CPU's statistics of the same pixels are the record; the slot is
     * given back first (the planes are the item's) */
    imgstat_gpu_image_release(g->gpu, d);
    d = NULL;
    st = jpeg_download(g, it, &host, &err);
    if (st != IMGSTAT_OK)
      verify_failed(res, st, "", &err);
    else if ((st = imgstat_cpu_stats(&host, e->opt.threads, res->partial,
                                     &err)) != IMGSTAT_OK)
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
