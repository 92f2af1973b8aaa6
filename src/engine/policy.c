/*
 * The engine's policy (imgstat/engine.h, engine.h): the backends' and JPEG
 * decoders' names, auto's cost rule with its measured figures, the one
 * worker policy, the engine's life (made, shut down, destroyed) and the
 * backend policy applied to each item (auto / cpu / gpu, the fallback and
 * when it warns).
 */
#include "engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

const char *imgstat_jpeg_decoder_name(imgstat_jpeg_decoder d) {
  return d == IMGSTAT_JPEG_DECODER_CPU   ? "cpu"
         : d == IMGSTAT_JPEG_DECODER_GPU ? "gpu"
                                         : "auto";
}

int imgstat_jpeg_decoder_from_name(const char *name,
                                   imgstat_jpeg_decoder *out) {
  /* the spelling of the backends' names */
  imgstat_backend b;
  if (!imgstat_backend_from_name(name, &b))
    return 0;
  *out = b == IMGSTAT_BACKEND_CPU   ? IMGSTAT_JPEG_DECODER_CPU
         : b == IMGSTAT_BACKEND_GPU ? IMGSTAT_JPEG_DECODER_GPU
                                    : IMGSTAT_JPEG_DECODER_AUTO;
  return 1;
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
int ist_needs_gpu(const imgstat_engine *e) {
  return e->opt.verify || e->opt.backend == IMGSTAT_BACKEND_GPU ||
         e->opt.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU;
}

/* The option that needs the GPU, in the library's words (the `what` of
 * IMGSTAT_CAUSE_GPU_UNUSABLE). */
const char *ist_gpu_option(const imgstat_engine *e) {
  return e->opt.verify                                     ? "verify"
         : e->opt.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU ? "jpeg_decoder=gpu"
                                                           : "backend=gpu";
}

/* ---- auto's cost rule
 * -------------------------------------------------------- The figures
 * (docs/benchmarks.md, "auto's rule"): `imgstat bench --rates` on the 2 x H200
 * host (32 cores), 2026-11-23, RGB 4000 x 3000 with noise, median of 5: the CPU
 * on one thread; the GPU through imgstat_gpu_* from pageable host memory, one
 * item at a time. fixed_s: CUDA's start-up there (imgstat_gpu_create, 339 ms)
 * plus the driver's tear-down at process exit (110-140 ms measured on the H100
 * host: docs/benchmarks.md). */
static const imgstat_cost_model measured = {
    .fixed_s = 0.46,
    /* u8, u16, f32 */
    .cpu_s_per_gb = {{0.085, 0.160, 0.354}, /* statistics */
                     {0.473, 0.667, 1.292}, /* statistics + histograms */
                     {0.557, 0.594, 0.982}, /* normalization (minmax) */
                     {3.00, 3.00, 3.00}},   /* JPEG decode + statistics */
    .gpu_s_per_gb = {{0.077, 0.096, 0.093}, /* upload and kernels */
                     {0.084, 0.109, 0.106}, /* one upload, both */
                     {0.331, 0.362, 0.375}, /* upload, kernels, download */
                     {0.10, 0.10, 0.10}}};  /* nvJPEG + kernels, no upload */

const imgstat_cost_model *imgstat_cost_model_measured(void) {
  return &measured;
}

static int sample_index(imgstat_sample sample) {
  return sample == IMGSTAT_U8 ? 0 : sample == IMGSTAT_U16 ? 1 : 2;
}

int imgstat_cost_gpu_pays(const imgstat_cost_model *m, imgstat_work_kind kind,
                          imgstat_sample sample, double gb, int workers,
                          int devices) {
  if (!m)
    m = &measured;
  if ((int)kind < 0 || kind >= IMGSTAT_WORK_KINDS || !(gb > 0))
    return 0;
  int t = sample_index(sample);
  double w = workers > 0 ? workers : 1;
  double lanes = devices > 0 && devices < w ? devices : w;
  double cpu = gb * m->cpu_s_per_gb[kind][t] / w;
  double gpu = m->fixed_s + gb * m->gpu_s_per_gb[kind][t] / lanes;
  return gpu < cpu;
}

int imgstat_engine_plan_workers(int jobs, int several, int cores,
                                imgstat_engine_options *engine) {
  int workers = jobs >= 0 ? jobs : several ? 0 : 1;
  if (workers == 0)
    workers = cores;
  engine->threads = workers == 1 && jobs < 0 ? 0 : 1;
  engine->workers = workers > 0 && workers < cores ? workers : cores;
  return workers;
}

/* The devices the rule counts on: the list, else one (all: not known
 * before CUDA is asked, and one is the cautious guess). */
static int planned_devices(const imgstat_engine *e) {
  return e->opt.ndevices > 0 ? e->opt.ndevices : 1;
}

/* The engine's locks; 0 when one cannot be made (then none is left). */
static int engine_locks_init(imgstat_engine *e) {
  int m1 = pthread_mutex_init(&e->lock, NULL) == 0;
  int c1 = m1 && pthread_cond_init(&e->settled, NULL) == 0;
  int m2 = c1 && pthread_mutex_init(&e->stage_lock, NULL) == 0;
  int c2 = m2 && pthread_cond_init(&e->start_fin, NULL) == 0;
  int m3 = c2 && pthread_mutex_init(&e->mask_lock, NULL) == 0;
  if (m3)
    return 1;
  if (c2)
    pthread_cond_destroy(&e->start_fin);
  if (m2)
    pthread_mutex_destroy(&e->stage_lock);
  if (c1)
    pthread_cond_destroy(&e->settled);
  if (m1)
    pthread_mutex_destroy(&e->lock);
  return 0;
}

/* Frees an engine whose locks were made (and whose GPUs are gone). */
static void engine_free(imgstat_engine *e) {
  free(e->mask);
  free(e->mask_path);
  pthread_mutex_destroy(&e->mask_lock);
  pthread_cond_destroy(&e->start_fin);
  pthread_mutex_destroy(&e->stage_lock);
  pthread_cond_destroy(&e->settled);
  pthread_mutex_destroy(&e->lock);
  free(e);
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
  if (!engine_locks_init(e)) {
    free(e);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "cannot make the engine's lock");
  }
  e->start.fin_lock = &e->stage_lock;
  e->start.fin_cv = &e->start_fin;
  clock_gettime(CLOCK_MONOTONIC, &e->created);
  e->start.t0 = e->created;
  /* --verify decodes on the one-image path (not the stage): its decoder's
   * state is made with the rest of the start-up */
  e->start.prepare = e->opt.verify;
  /* nvJPEG's own strict mode only where no check read the entropy-coded
   * data before it (imgstat_gpu_jpeg_create_on says why) */
  e->start.strict = e->opt.jpeg_check == IMGSTAT_JPEG_CHECK_NONE;
  e->start.ndevices = e->opt.ndevices;
  if (e->opt.ndevices > 0)
    memcpy(e->start.devices, e->opt.devices, sizeof e->opt.devices);
  if (e->opt.ndevices > IMGSTAT_MAX_DEVICES || e->opt.ndevices < -1) {
    int n = e->opt.ndevices;
    engine_free(e);
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "%d devices (at most %d)", n,
                             IMGSTAT_MAX_DEVICES);
  }
  if (e->opt.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU &&
      e->opt.backend == IMGSTAT_BACKEND_CPU) {
    engine_free(e);
    imgstat_error_set(err, IMGSTAT_ERR_ARG,
                      "jpeg_decoder=gpu cannot be used with backend=cpu");
    return imgstat_error_cause(err, IMGSTAT_CAUSE_CONFLICT, 0, 0,
                               "jpeg_decoder=gpu");
  }
  /* a JPEG decoder per GPU only when asked for (--jpeg-decoder gpu; nvJPEG
   * not in the build: gpu fails at the start with the reason). auto keeps
   * the CPU decoders: nvJPEG's start-up repays itself only on large folders
   * of large photos, and a decoder picked by the run's size would change a
   * photo's record with the files beside it (docs/gpu.md). */
  if (e->opt.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU)
    e->start.jpeg = 2;
  atomic_init(&e->workload, 0);
  atomic_init(&e->next_gpu, 0);
  /* gpu or verify: started now, behind the first decode; auto: when the
   * rule says */
  if (ist_needs_gpu(e)) {
    ist_gpu_start_begin(&e->start);
    e->started = 1;
  }
  *out = e;
  return IMGSTAT_OK;
}

void imgstat_engine_shutdown(imgstat_engine *e) {
  if (!e || e->shut)
    return;
  e->shut = 1;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* the stage's lanes use the GPUs: they go first */
  imgstat_stage_destroy(e->stage, NULL);
  e->stage = NULL;
  double stage_s = ist_since(&t0);
  ist_gpu_start_end(&e->start);
  pthread_mutex_lock(&e->stage_lock);
  e->times.stage_end_s = stage_s;
  e->times.teardown_s = ist_since(&t0);
  e->times.shutdown_s = ist_since(&e->created);
  pthread_mutex_unlock(&e->stage_lock);
}

void imgstat_engine_destroy(imgstat_engine *e) {
  if (!e)
    return;
  imgstat_engine_shutdown(e);
  engine_free(e);
}

void imgstat_engine_input_end(imgstat_engine *e) {
  if (!e)
    return;
  pthread_mutex_lock(&e->stage_lock);
  imgstat_stage *s = e->stage;
  if (e->times.input_end_s == 0)
    e->times.input_end_s = ist_since(&e->created);
  pthread_mutex_unlock(&e->stage_lock);
  imgstat_stage_end(s);
}

void imgstat_engine_set_workload(imgstat_engine *e, uint64_t items) {
  if (e)
    atomic_store(&e->workload, items);
}

int imgstat_engine_gpu_started(imgstat_engine *e) {
  if (!e)
    return 0;
  pthread_mutex_lock(&e->lock);
  int r = e->started;
  pthread_mutex_unlock(&e->lock);
  return r;
}

/* ---- the policy ------------------------------------------------------------
 */

/* Ends the decision once the start-up is over (joined): the GPU is used
 * from now on, or never; the caller gets the warning, if any. Under
 * e->lock. */
static void settle(imgstat_engine *e, imgstat_job_result *res) {
  ist_gpu_start_finish(&e->start);
  e->decided = 1;
  pthread_cond_broadcast(&e->settled);
  if (e->start.status == IMGSTAT_OK)
    e->usable = 1;
  else if (!ist_needs_gpu(e) && e->start.status != IMGSTAT_ERR_NODEVICE)
    /* auto: no device means the CPU quietly; a broken one is worth a
     * line */
    ist_add_warning(res, 0, "GPU unusable (%s); using the CPU",
                    ist_reason(&e->start.err));
}

/* Applies the policy before an item that needs no input: gpu / verify wait
 * for the start-up; auto decides per item (ist_decide_item). */
void ist_decide(imgstat_engine *e, imgstat_job_result *res) {
  if (!ist_needs_gpu(e))
    return;
  pthread_mutex_lock(&e->lock);
  if (!e->decided)
    settle(e, res);
  pthread_mutex_unlock(&e->lock);
}

/* Applies the policy to an item whose input is decoded (img) and whose
 * work is of the given kind: gpu / verify as ist_decide(); auto counts the
 * item and, while the GPU is not started, asks the cost rule whether it
 * repays the work still to come. The item that gets a yes starts CUDA;
 * it and every item after it wait for the start-up (the rule counts it as
 * time of the whole run), then run on the GPU, or on the CPU with the
 * warning (given to the starting item) when it failed. */
void ist_decide_item(imgstat_engine *e, const imgstat_image *img,
                     imgstat_work_kind kind, imgstat_job_result *res) {
  /* JPEGs decoded on the device: their own figures (the decode's), but
   * only where the decoder can be */
  if (kind == IMGSTAT_WORK_JPEG_DECODE && !e->start.jpeg)
    kind = IMGSTAT_WORK_STATS;
  if (ist_needs_gpu(e)) {
    ist_decide(e, res);
    return;
  }
  if (e->opt.backend != IMGSTAT_BACKEND_AUTO)
    return;
  int mine = 0;
  pthread_mutex_lock(&e->lock);
  e->seen++;
  if (!e->started) {
    uint64_t total = atomic_load(&e->workload);
    /* the items to come, this one included; unknown: as many as seen */
    uint64_t left = total >= e->seen ? total - e->seen + 1 : e->seen;
    double gb = (double)img->width * img->height * img->channels *
                (double)img->sample * 1e-9 * (double)left;
    int workers = e->opt.workers > 0 ? e->opt.workers : imgstat_cpu_cores();
    if (imgstat_cost_gpu_pays(e->opt.cost, kind, img->sample, gb, workers,
                              planned_devices(e))) {
      e->started = 1;
      ist_gpu_start_begin(&e->start);
      mine = 1;
    }
  }
  while (!mine && e->started && !e->decided)
    pthread_cond_wait(&e->settled, &e->lock);
  pthread_mutex_unlock(&e->lock);
  if (mine) {
    /* the wait, without the lock: only this thread joins the start-up */
    ist_gpu_start_finish(&e->start);
    pthread_mutex_lock(&e->lock);
    settle(e, res);
    pthread_mutex_unlock(&e->lock);
  }
}

/* Whether the policy is known to be unable to run items: the GPU is needed
 * and did not start. */
int ist_known_unusable(imgstat_engine *e) {
  pthread_mutex_lock(&e->lock);
  int r = ist_needs_gpu(e) && e->decided && !e->usable;
  pthread_mutex_unlock(&e->lock);
  return r;
}

imgstat_status ist_gpu_unusable(const imgstat_engine *e,
                                imgstat_job_result *res) {
  return ist_gpu_needed(res, ist_gpu_option(e), e->start.status,
                        ist_reason(&e->start.err));
}

/* A GPU failure on one item: returns 1 when the item is to be computed
 * again on the CPU (auto: with a warning naming the reason), or 0 when the
 * item failed (res says why). */
int ist_gpu_failed(const imgstat_engine *e, imgstat_job_result *res,
                   const imgstat_error *err) {
  if (err->status == IMGSTAT_ERR_ARG) {
    /* the item's own fault: the CPU would refuse it too */
    ist_fail_err(res, IMGSTAT_STAGE_COMPUTE, err->status, err);
    return 0;
  }
  if (e->opt.backend == IMGSTAT_BACKEND_GPU) {
    ist_fail(res, IMGSTAT_STAGE_COMPUTE,
             err->status != IMGSTAT_OK ? err->status : IMGSTAT_ERR_DEVICE,
             "GPU failed: %s", ist_reason(err));
    return 0;
  }
  ist_add_warning(res, 1, "GPU failed (%s); using the CPU", ist_reason(err));
  return 1;
}

imgstat_status imgstat_engine_decide(imgstat_engine *e,
                                     imgstat_job_result *res) {
  if (!e || !res)
    return IMGSTAT_ERR_ARG;
  memset(res, 0, sizeof *res);
  ist_decide(e, res);
  if (ist_known_unusable(e))
    return ist_gpu_unusable(e, res);
  return IMGSTAT_OK;
}
