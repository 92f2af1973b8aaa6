/*
 * The job layer (imgstat_job.h): the one backend policy, the asynchronous
 * GPU start-up and the per-item jobs (statistics with histograms and
 * verify; normalization), each returning a result value.
 *
 * Every call of the GPU C API is in the section "the GPU" below, so that
 * switching to device-resident images touches that section only.
 */
#include "imgstat_job.h"

#include "imgstat_cuda.h"
#include "imgstat_cuda_norm.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the GPU: the only calls of the GPU C API ------------------------------
 */

/* CUDA's start-up takes hundreds of milliseconds; creating the context on a
 * thread while the first image decodes hides most of it. */
typedef struct gpu_start {
  pthread_t thread;
  int running; /* the thread was started and is not joined yet */
  int done;    /* status, err and gpu are final */
  imgstat_status status;
  imgstat_error err;
  imgstat_gpu *gpu;
} gpu_start;

static void *gpu_start_main(void *arg) {
  gpu_start *s = arg;
  s->status = imgstat_gpu_create(-1, &s->gpu, &s->err);
  if (s->status == IMGSTAT_OK && !s->gpu)
    s->status = imgstat_error_set(&s->err, IMGSTAT_ERR_DEVICE,
                                  "the GPU backend returned no context");
  if (s->status != IMGSTAT_OK && s->err.message[0] == '\0')
    snprintf(s->err.message, sizeof s->err.message, "unknown error");
  return NULL;
}

static void gpu_start_begin(gpu_start *s) {
  if (pthread_create(&s->thread, NULL, gpu_start_main, s) == 0)
    s->running = 1;
}

/* Waits for the start-up (or does it here if no thread could be started). */
static void gpu_start_finish(gpu_start *s) {
  if (s->done)
    return;
  if (s->running) {
    pthread_join(s->thread, NULL);
    s->running = 0;
  } else {
    gpu_start_main(s);
  }
  s->done = 1;
}

/* Joins a start-up still running and destroys the context. */
static void gpu_start_end(gpu_start *s) {
  if (s->running) {
    pthread_join(s->thread, NULL);
    s->running = 0;
  }
  if (s->gpu)
    imgstat_gpu_destroy(s->gpu);
  s->gpu = NULL;
}

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

/* ---- the engine ------------------------------------------------------------
 */

struct imgstat_engine {
  imgstat_engine_options opt;
  /* The decision and every GPU call: one caller at a time (an imgstat_gpu
   * is used by one thread at a time). */
  pthread_mutex_t lock;
  gpu_start start;
  int decided; /* the policy has been applied: usable is final */
  int usable;  /* the GPU is used */
};

const char *imgstat_backend_name(imgstat_backend backend) {
  switch (backend) {
  case IMGSTAT_BACKEND_CPU:
    return "cpu";
  case IMGSTAT_BACKEND_GPU:
    return "gpu";
  case IMGSTAT_BACKEND_AUTO:
    break;
  }
  return "auto";
}

int imgstat_backend_from_name(const char *name, imgstat_backend *out) {
  static const imgstat_backend all[] = {
      IMGSTAT_BACKEND_AUTO, IMGSTAT_BACKEND_CPU, IMGSTAT_BACKEND_GPU};
  for (size_t k = 0; name && k < sizeof all / sizeof *all; k++)
    if (strcmp(name, imgstat_backend_name(all[k])) == 0) {
      *out = all[k];
      return 1;
    }
  return 0;
}

/* The policy needs the GPU: a failure to start it fails the items. */
static int needs_gpu(const imgstat_engine *e) {
  return e->opt.verify || e->opt.backend == IMGSTAT_BACKEND_GPU;
}

/* The policy may use the GPU: it is started. */
static int may_use_gpu(const imgstat_engine *e) {
  return e->opt.verify || e->opt.backend != IMGSTAT_BACKEND_CPU;
}

imgstat_status imgstat_engine_create(const imgstat_engine_options *opts,
                                     imgstat_engine **out, imgstat_error *err) {
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no output pointer");
  *out = NULL;
  imgstat_engine *e = calloc(1, sizeof *e);
  if (!e)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  if (opts)
    e->opt = *opts;
  if (pthread_mutex_init(&e->lock, NULL) != 0) {
    free(e);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "cannot make the engine's lock");
  }
  if (may_use_gpu(e))
    gpu_start_begin(&e->start);
  *out = e;
  return IMGSTAT_OK;
}

void imgstat_engine_destroy(imgstat_engine *e) {
  if (!e)
    return;
  gpu_start_end(&e->start);
  pthread_mutex_destroy(&e->lock);
  free(e);
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

static const char *reason(const imgstat_error *err) {
  return err->message[0] ? err->message : "unknown error";
}

static void add_warning(imgstat_job_result *res, int about_input,
                        const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void add_warning(imgstat_job_result *res, int about_input,
                        const char *fmt, ...) {
  if (res->nwarnings == IMGSTAT_JOB_MAX_WARNINGS)
    return;
  imgstat_job_warning *w = &res->warning[res->nwarnings++];
  w->about_input = about_input;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->text, sizeof w->text, fmt, ap);
  va_end(ap);
}

static imgstat_status fail(imgstat_job_result *res, imgstat_job_stage stage,
                           imgstat_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The item failed at stage: the reason goes to res->error. */
static imgstat_status fail(imgstat_job_result *res, imgstat_job_stage stage,
                           imgstat_status status, const char *fmt, ...) {
  res->status = status;
  res->failed_stage = stage;
  res->error.status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(res->error.message, sizeof res->error.message, fmt, ap);
  va_end(ap);
  return status;
}

/* ---- the policy ------------------------------------------------------------
 */

/* Applies the policy once: waits for the start-up and decides whether the
 * GPU is used from now on; the first caller gets the warning, if any. */
static void decide(imgstat_engine *e, imgstat_job_result *res) {
  pthread_mutex_lock(&e->lock);
  if (!e->decided) {
    e->decided = 1;
    if (may_use_gpu(e)) {
      gpu_start_finish(&e->start);
      if (e->start.status == IMGSTAT_OK)
        e->usable = 1;
      else if (!needs_gpu(e) && e->start.status != IMGSTAT_ERR_NODEVICE)
        /* auto: no device means the CPU quietly; a broken one is worth a
         * line */
        add_warning(res, 0, "GPU unusable (%s); using the CPU",
                    reason(&e->start.err));
    }
  }
  pthread_mutex_unlock(&e->lock);
}

/* Whether the policy is known to be unable to run items: the GPU is needed
 * and did not start. */
static int known_unusable(imgstat_engine *e) {
  pthread_mutex_lock(&e->lock);
  int r = needs_gpu(e) && e->decided && !e->usable;
  pthread_mutex_unlock(&e->lock);
  return r;
}

static imgstat_status gpu_unusable(const imgstat_engine *e,
                                   imgstat_job_result *res) {
  return fail(
      res, IMGSTAT_STAGE_GPU, e->start.status, "%s needs a usable GPU: %s",
      e->opt.verify ? "--verify" : "--backend gpu", reason(&e->start.err));
}

/* A GPU failure on one item: returns 1 when the item is to be computed
 * again on the CPU (auto: with a warning naming the reason), or 0 when the
 * item failed (res says why). */
static int gpu_failed(const imgstat_engine *e, imgstat_job_result *res,
                      const imgstat_error *err) {
  if (err->status == IMGSTAT_ERR_ARG) {
    /* the item's own fault: the CPU would refuse it too */
    fail(res, IMGSTAT_STAGE_COMPUTE, err->status, "%s", reason(err));
    return 0;
  }
  if (e->opt.backend == IMGSTAT_BACKEND_GPU) {
    fail(res, IMGSTAT_STAGE_COMPUTE,
         err->status != IMGSTAT_OK ? err->status : IMGSTAT_ERR_DEVICE,
         "GPU failed: %s", reason(err));
    return 0;
  }
  add_warning(res, 1, "GPU failed (%s); using the CPU", reason(err));
  return 1;
}

imgstat_status imgstat_engine_decide(imgstat_engine *e,
                                     imgstat_job_result *res) {
  if (!e || !res)
    return IMGSTAT_ERR_ARG;
  memset(res, 0, sizeof *res);
  decide(e, res);
  if (known_unusable(e))
    return gpu_unusable(e, res);
  return IMGSTAT_OK;
}

/* ---- the items -------------------------------------------------------------
 */

/* The start of every item: checks, the GPU already known to be missing (no
 * decode for nothing), the input decoded (into *own when given by path),
 * then the policy applied. Returns IMGSTAT_OK with *in set, or the
 * failure. */
static imgstat_status item_begin(imgstat_engine *e, const char *path,
                                 const imgstat_image *img, imgstat_image *own,
                                 const imgstat_image **in,
                                 imgstat_job_result *res) {
  memset(own, 0, sizeof *own);
  if (!e || (!path && !img))
    return fail(res, IMGSTAT_STAGE_LOAD, IMGSTAT_ERR_ARG, "no input");
  if (known_unusable(e))
    return gpu_unusable(e, res);
  if (!img) {
    imgstat_error err;
    memset(&err, 0, sizeof err);
    imgstat_status st = imgstat_image_load(path, &e->opt.load, own, &err);
    if (st != IMGSTAT_OK)
      return fail(res, IMGSTAT_STAGE_LOAD, st, "%s", reason(&err));
    img = own;
  }
  res->width = img->width;
  res->height = img->height;
  res->channels = img->channels;
  res->sample = img->sample;
  res->format = img->format;
  decide(e, res);
  if (known_unusable(e))
    return gpu_unusable(e, res);
  *in = img;
  return IMGSTAT_OK;
}

static int gpu_in_use(imgstat_engine *e) {
  pthread_mutex_lock(&e->lock);
  int r = e->usable;
  pthread_mutex_unlock(&e->lock);
  return r;
}

/* The partials of img by the policy (on the GPU from d when there is one). */
static imgstat_status stats(imgstat_engine *e, const imgstat_image *img,
                            imgstat_gpu_image *d, imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st;
  if (e->opt.verify) {
    st = imgstat_cpu_stats(img, e->opt.threads, res->partial, &err);
    if (st != IMGSTAT_OK)
      return fail(res, IMGSTAT_STAGE_COMPUTE, st, "%s", reason(&err));
    memset(&err, 0, sizeof err);
    pthread_mutex_lock(&e->lock);
    st = gpu_stats(e->start.gpu, img, e->opt.kernel, res->gpu_partial, &err);
    pthread_mutex_unlock(&e->lock);
    if (st != IMGSTAT_OK)
      return fail(res, IMGSTAT_STAGE_COMPUTE, st, "--verify: GPU failed: %s",
                  reason(&err));
    res->backend = IMGSTAT_BACKEND_CPU;
    res->verified = 1;
    return IMGSTAT_OK;
  }
  if (gpu_in_use(e)) {
    pthread_mutex_lock(&e->lock);
    st = gpu_stats_on(e->start.gpu, d, img, e->opt.kernel, res->partial, &err);
    pthread_mutex_unlock(&e->lock);
    if (st == IMGSTAT_OK) {
      res->backend = IMGSTAT_BACKEND_GPU;
      return IMGSTAT_OK;
    }
    if (!gpu_failed(e, res, &err))
      return res->status;
    memset(&err, 0, sizeof err);
  }
  st = imgstat_cpu_stats(img, e->opt.threads, res->partial, &err);
  if (st != IMGSTAT_OK)
    return fail(res, IMGSTAT_STAGE_COMPUTE, st, "%s", reason(&err));
  res->backend = IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

static void free_histograms(imgstat_job_result *res) {
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    imgstat_histogram_free(&res->hist[c]);
  memset(res->hist_figures, 0, sizeof res->hist_figures);
}

/* The histograms of every channel and their figures, on the GPU (e's
 * context) or on the CPU. A failure is returned with nothing kept: the
 * caller applies the policy. */
static imgstat_status
histograms_on(imgstat_engine *e, int on_gpu, imgstat_gpu_image *d,
              const imgstat_image *img, const imgstat_stats_request *req,
              imgstat_job_result *res, imgstat_error *err) {
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
  for (int c = 0; c < img->channels; c++) {
    imgstat_histogram *h = &res->hist[c];
    double v[IMGSTAT_MAX_PERCENTILES + 1];
    imgstat_status st;
    if (on_gpu) {
      pthread_mutex_lock(&e->lock);
      st = gpu_histogram_on(e->start.gpu, d, img, c, p, np, v, h, err);
      pthread_mutex_unlock(&e->lock);
    } else {
      st = imgstat_histogram_compute(img, c, NULL, h, err);
    }
    if (st != IMGSTAT_OK) {
      free_histograms(res);
      return st;
    }
    imgstat_moments m;
    if (img->sample == IMGSTAT_F32)
      imgstat_image_moments_f32(img, c, &m);
    else
      imgstat_moments_from_histogram(h, &m);
    imgstat_hist_figures *f = &res->hist_figures[c];
    imgstat_hist_figures_compute(h, &m, req->percentiles, nreq, f);
    if (on_gpu && h->total) {
      /* the device scan's percentiles (equal to the CPU's by construction) */
      f->median = v[0];
      for (int i = 0; i < nreq; i++)
        f->percentile[i] = v[i + 1];
    }
  }
  return IMGSTAT_OK;
}

/* Histograms where the statistics were computed; a GPU failure follows the
 * same policy as the statistics'. */
static imgstat_status histograms(imgstat_engine *e, const imgstat_image *img,
                                 imgstat_gpu_image *d,
                                 const imgstat_stats_request *req,
                                 imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int on_gpu = res->backend == IMGSTAT_BACKEND_GPU;
  imgstat_status st = histograms_on(e, on_gpu, d, img, req, res, &err);
  if (st != IMGSTAT_OK && on_gpu) {
    if (!gpu_failed(e, res, &err))
      return res->status;
    memset(&err, 0, sizeof err);
    on_gpu = 0;
    st = histograms_on(e, 0, NULL, img, req, res, &err);
  }
  if (st != IMGSTAT_OK)
    return fail(res, IMGSTAT_STAGE_COMPUTE, st, "%s", reason(&err));
  res->has_histograms = 1;
  res->hist_backend = on_gpu ? IMGSTAT_BACKEND_GPU : IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

/* The statistics item's work on its decoded input. */
static imgstat_status stats_item(imgstat_engine *e, const imgstat_image *in,
                                 const void *arg, imgstat_job_result *res) {
  const imgstat_stats_request *req = arg;
  int with_hist = req && req->histograms;
  /* Statistics and histograms on the GPU: one upload for both. When the
   * upload fails (an image larger than the device's free memory, say), each
   * call uploads on its own: the statistics then go by ranges. */
  imgstat_gpu_image *d = NULL;
  if (with_hist && !e->opt.verify && gpu_in_use(e)) {
    imgstat_error err;
    memset(&err, 0, sizeof err);
    pthread_mutex_lock(&e->lock);
    if (imgstat_gpu_image_upload(e->start.gpu, in, &d, &err) != IMGSTAT_OK)
      d = NULL;
    pthread_mutex_unlock(&e->lock);
  }
  imgstat_status st = stats(e, in, d, res);
  if (st == IMGSTAT_OK && with_hist)
    st = histograms(e, in, d, req, res);
  if (d) {
    pthread_mutex_lock(&e->lock);
    imgstat_gpu_image_release(e->start.gpu, d);
    pthread_mutex_unlock(&e->lock);
  }
  return st;
}

/* The normalization item's work: on the GPU by the policy (a failure
 * there: the policy's fallback), else on the CPU. */
static imgstat_status normalize_item(imgstat_engine *e, const imgstat_image *in,
                                     const void *arg, imgstat_job_result *res) {
  const imgstat_norm_options *opts = arg;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st;
  if (gpu_in_use(e)) {
    pthread_mutex_lock(&e->lock);
    st = gpu_normalize(e->start.gpu, in, opts, &res->output, &err);
    pthread_mutex_unlock(&e->lock);
    if (st == IMGSTAT_OK) {
      res->backend = IMGSTAT_BACKEND_GPU;
      return IMGSTAT_OK;
    }
    imgstat_image_free(&res->output);
    if (!gpu_failed(e, res, &err))
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
    return fail(res, IMGSTAT_STAGE_COMPUTE, st, "%s", reason(&err));
  }
  res->backend = IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

/* One item: its start (item_begin), then work on the decoded input. */
static imgstat_status
run_item(imgstat_engine *e, const char *path, const imgstat_image *img,
         imgstat_status (*work)(imgstat_engine *, const imgstat_image *,
                                const void *, imgstat_job_result *),
         const void *arg, imgstat_job_result *res) {
  if (!res)
    return IMGSTAT_ERR_ARG;
  memset(res, 0, sizeof *res);
  imgstat_image own;
  const imgstat_image *in = NULL;
  imgstat_status st = item_begin(e, path, img, &own, &in, res);
  if (st == IMGSTAT_OK)
    st = work(e, in, arg, res);
  imgstat_image_free(&own);
  return st;
}

imgstat_status imgstat_engine_stats(imgstat_engine *e, const char *path,
                                    const imgstat_image *img,
                                    const imgstat_stats_request *req,
                                    imgstat_job_result *res) {
  return run_item(e, path, img, stats_item, req, res);
}

imgstat_status imgstat_engine_normalize(imgstat_engine *e, const char *path,
                                        const imgstat_image *img,
                                        const imgstat_norm_options *opts,
                                        imgstat_job_result *res) {
  if (!opts) {
    if (res)
      memset(res, 0, sizeof *res);
    return res ? fail(res, IMGSTAT_STAGE_COMPUTE, IMGSTAT_ERR_ARG,
                      "no normalization options")
               : IMGSTAT_ERR_ARG;
  }
  return run_item(e, path, img, normalize_item, opts, res);
}
