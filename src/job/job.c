/*
 * The job layer (imgstat_job.h): the one backend policy, the asynchronous
 * GPU start-up and the per-item jobs (statistics with histograms and
 * verify; normalization), each returning a result value.
 *
 * Every call of the GPU C API is in the section "the GPU" below, so that
 * switching to device-resident images touches that section only.
 */
#include "imgstat/job.h"

#include "gpu_jpeg.h"
#include "imgstat/cuda.h"
#include "imgstat/cuda_norm.h"
#include "io.h"
#include "stage.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the GPU: the only calls of the GPU C API ------------------------------
 */

/* A JPEG waiting for the GPU decoder, on its worker's stack. */
typedef struct jpeg_waiter {
  imgstat_gpu_jpeg_item item;
  imgstat_status status; /* the decoder's own failure (err), else OK */
  imgstat_error err;
  int done;
  struct jpeg_waiter *next;
} jpeg_waiter;

/* The JPEGs of one GPU's decoder: workers queue theirs; one of them (the
 * leader) takes the queue, up to a batch, decodes it while the next batch
 * gathers, and wakes the others. */
typedef struct jpeg_batcher {
  pthread_mutex_t lock;
  pthread_cond_t arrived;  /* a waiter was queued */
  pthread_cond_t finished; /* a batch was decoded */
  jpeg_waiter *head, **tail;
  int queued;
  int busy; /* a leader is decoding */
} jpeg_batcher;

/* One GPU: its context (thread-safe: workers use it at once, each device
 * image on a slot of its own; no lock here, since a thread that held one
 * while waiting for a slot would stop the holders of every slot from
 * giving theirs back), its JPEG decoder (NULL: none) with its batches. */
typedef struct gpu_slot {
  imgstat_gpu *gpu;
  imgstat_gpu_jpeg *jpeg;
  jpeg_batcher batch;
} gpu_slot;

/* The GPUs' start-up. CUDA's takes hundreds of milliseconds: it runs on a
 * thread of its own, which creates one context per device, while items are
 * decoded (and, under auto, computed on the CPU). */
typedef struct gpu_start {
  pthread_t thread;
  int running;  /* the thread was started and is not joined yet */
  int done;     /* joined (or run here): the fields below are final */
  int ndevices; /* the request: > 0 a list, -1 every device, 0 default */
  int devices[IMGSTAT_MAX_DEVICES];
  int jpeg; /* 1: a JPEG decoder per GPU where nvJPEG is; 2: needed */
  imgstat_status status;
  imgstat_error err;
  int ngpus;
  gpu_slot gpus[IMGSTAT_MAX_DEVICES];
  /* The thread's end, told without a join (which one thread does, under
   * the engine's lock): fin under *fin_lock, *fin_cv broadcast. */
  pthread_mutex_t *fin_lock;
  pthread_cond_t *fin_cv;
  int fin;
  int launched; /* the thread was started (set once, never cleared) */
  int prepare;  /* make the decoders' states now (the one-image path's) */
  int strict;   /* nvJPEG's strict mode (--jpeg-check none) */
  /* the start-up's phases, from t0 (the engine's creation), for the
   * per-stage table: the first context ready, its JPEG decoder ready */
  struct timespec t0;
  double context_s, jpeg_s;
  imgstat_gpu_jpeg_times jpeg_times; /* the first decoder's start-up */
} gpu_start;

static double since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) +
         1e-9 * (double)(b.tv_nsec - a->tv_nsec);
}

static void gpus_destroy(gpu_start *s) {
  for (int k = 0; k < s->ngpus; k++) {
    gpu_slot *g = &s->gpus[k];
    imgstat_gpu_jpeg_destroy(g->jpeg);
    pthread_cond_destroy(&g->batch.finished);
    pthread_cond_destroy(&g->batch.arrived);
    pthread_mutex_destroy(&g->batch.lock);
    imgstat_gpu_destroy(g->gpu);
  }
  s->ngpus = 0;
}

/* A device's JPEG decoder made on a thread of its own while the start-up
 * thread makes the device's context: both wait for the CUDA context's
 * creation, then nvJPEG's handles (the long part of its start-up) overlap
 * the context's own set-up (slot, staging, warm-up kernels). */
typedef struct jpeg_early {
  pthread_t thread;
  int device; /* as given to imgstat_gpu_create (-1: the current one) */
  int prepare, strict;
  imgstat_gpu_jpeg *dec;
  imgstat_status status;
  imgstat_error err;
  struct timespec t0;
  double done_s; /* from t0 */
} jpeg_early;

static void *jpeg_early_main(void *arg) {
  jpeg_early *j = arg;
  j->status =
      imgstat_gpu_jpeg_create_on(j->device, j->strict, &j->dec, &j->err);
  if (j->status == IMGSTAT_OK && j->prepare)
    j->status = imgstat_gpu_jpeg_prepare(j->dec, &j->err);
  if (j->status != IMGSTAT_OK) {
    imgstat_gpu_jpeg_destroy(j->dec);
    j->dec = NULL;
  }
  j->done_s = since(&j->t0);
  return NULL;
}

/* A GPU's JPEG decoder and its batches; a decoder that cannot start fails
 * the GPU only when it is needed (--jpeg-decoder gpu). The decoder comes
 * from early (made beside the context) when it was started and is on the
 * context's device, else it is made here. Its state is made only for the
 * one-image path (prepare): the device stage's lanes make decoders of their
 * own, sharing its handles, each on its own thread and all at once. */
static imgstat_status jpeg_start(gpu_start *s, gpu_slot *g, jpeg_early *early,
                                 imgstat_error *err) {
  jpeg_batcher *b = &g->batch;
  memset(b, 0, sizeof *b);
  b->tail = &b->head;
  int ok = pthread_mutex_init(&b->lock, NULL) == 0;
  ok = ok && pthread_cond_init(&b->arrived, NULL) == 0;
  ok = ok && pthread_cond_init(&b->finished, NULL) == 0;
  g->jpeg = NULL;
  if (early && early->dec &&
      imgstat_gpu_jpeg_device(early->dec) != imgstat_gpu_device(g->gpu)) {
    imgstat_gpu_jpeg_destroy(early->dec); /* not the context's device */
    early = NULL;
  }
  if (!ok || !s->jpeg) {
    if (early)
      imgstat_gpu_jpeg_destroy(early->dec);
    return ok ? IMGSTAT_OK
              : imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "cannot make a lock");
  }
  imgstat_error why;
  memset(&why, 0, sizeof why);
  imgstat_status st;
  if (early) {
    st = early->status;
    g->jpeg = early->dec;
    why = early->err;
    if (s->jpeg_s == 0) {
      s->jpeg_s = early->done_s;
      imgstat_gpu_jpeg_times_get(early->dec, &s->jpeg_times);
    }
  } else {
    st = imgstat_gpu_jpeg_create_on(imgstat_gpu_device(g->gpu), s->strict,
                                    &g->jpeg, &why);
    if (st == IMGSTAT_OK && s->prepare)
      st = imgstat_gpu_jpeg_prepare(g->jpeg, &why);
    if (st != IMGSTAT_OK) {
      imgstat_gpu_jpeg_destroy(g->jpeg);
      g->jpeg = NULL;
    }
    if (s->jpeg_s == 0) {
      s->jpeg_s = since(&s->t0);
      imgstat_gpu_jpeg_times_get(g->jpeg, &s->jpeg_times);
    }
  }
  if (st != IMGSTAT_OK && s->jpeg == 2)
    return imgstat_error_set(err, st, "nvJPEG: %s", why.message);
  return IMGSTAT_OK;
}

static imgstat_status gpus_create(gpu_start *s) {
  int list[IMGSTAT_MAX_DEVICES], n = s->ndevices;
  if (n > 0) {
    memcpy(list, s->devices, sizeof(int) * (size_t)n);
  } else if (n < 0) {
    int count = 0;
    imgstat_status st = imgstat_gpu_device_count(&count, &s->err);
    if (st != IMGSTAT_OK)
      return st;
    n = count < IMGSTAT_MAX_DEVICES ? count : IMGSTAT_MAX_DEVICES;
    for (int k = 0; k < n; k++)
      list[k] = k;
  } else {
    n = 1;
    list[0] = -1; /* the current device */
  }
  for (int k = 0; k < n; k++) {
    gpu_slot *g = &s->gpus[k];
    imgstat_error err;
    memset(&err, 0, sizeof err);
    /* the JPEG decoder beside the context (see jpeg_early) */
    jpeg_early early;
    memset(&early, 0, sizeof early);
    early.device = list[k];
    early.prepare = s->prepare;
    early.strict = s->strict;
    early.t0 = s->t0;
    /* IMGSTAT_JPEG_SERIAL=1: the decoder after the context, not beside it
     * (a measurement's knob: does the overlap slow nvJPEG's start?) */
    int beside =
        s->jpeg && !getenv("IMGSTAT_JPEG_SERIAL") &&
        pthread_create(&early.thread, NULL, jpeg_early_main, &early) == 0;
    imgstat_status st = imgstat_gpu_create(list[k], &g->gpu, &err);
    if (st == IMGSTAT_OK && !g->gpu)
      st = imgstat_error_set(&err, IMGSTAT_ERR_DEVICE,
                             "the GPU backend returned no context");
    if (st == IMGSTAT_OK && s->context_s == 0)
      s->context_s = since(&s->t0);
    if (beside)
      pthread_join(early.thread, NULL);
    if (st == IMGSTAT_OK) {
      s->ngpus = k + 1; /* gpus_destroy frees it from here on */
      st = jpeg_start(s, g, beside ? &early : NULL, &err);
    } else if (beside) {
      imgstat_gpu_jpeg_destroy(early.dec);
    }
    if (st != IMGSTAT_OK) {
      gpus_destroy(s);
      if (n > 1 || s->ndevices > 0)
        imgstat_error_set(&s->err, st, "device %d: %.400s", list[k],
                          err.message);
      else
        s->err = err;
      return st;
    }
    s->ngpus = k + 1;
  }
  return IMGSTAT_OK;
}

static void *gpu_start_main(void *arg) {
  gpu_start *s = arg;
  s->status = gpus_create(s);
  if (s->status != IMGSTAT_OK && s->err.message[0] == '\0')
    snprintf(s->err.message, sizeof s->err.message, "unknown error");
  if (s->fin_lock) {
    pthread_mutex_lock(s->fin_lock);
    s->fin = 1;
    pthread_cond_broadcast(s->fin_cv);
    pthread_mutex_unlock(s->fin_lock);
  }
  return NULL;
}

static void gpu_start_begin(gpu_start *s) {
  if (pthread_create(&s->thread, NULL, gpu_start_main, s) == 0)
    s->running = s->launched = 1;
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

/* Joins a start-up still running and destroys the contexts. */
static void gpu_start_end(gpu_start *s) {
  if (s->running) {
    pthread_join(s->thread, NULL);
    s->running = 0;
  }
  gpus_destroy(s);
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

/* Decodes w's JPEG on g's decoder with the others queued there (at most
 * max at once). The first to find no batch running leads: it waits a
 * moment (1 ms) for more to queue unless the batch is full, takes the
 * queue and decodes it; the others wait for their item. */
static void jpeg_decode_batched(gpu_slot *g, int max, jpeg_waiter *w) {
  jpeg_batcher *b = &g->batch;
  pthread_mutex_lock(&b->lock);
  w->done = 0;
  w->next = NULL;
  *b->tail = w;
  b->tail = &w->next;
  b->queued++;
  pthread_cond_broadcast(&b->arrived);
  while (!w->done) {
    if (b->busy) {
      pthread_cond_wait(&b->finished, &b->lock);
      continue;
    }
    b->busy = 1;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 1000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    while (b->queued < max &&
           pthread_cond_timedwait(&b->arrived, &b->lock, &until) != ETIMEDOUT)
      ;
    int n = b->queued < max ? b->queued : max;
    jpeg_waiter *first = b->head, *last = first;
    for (int k = 1; k < n; k++)
      last = last->next;
    b->head = last->next;
    if (!b->head)
      b->tail = &b->head;
    b->queued -= n;
    pthread_mutex_unlock(&b->lock);

    imgstat_gpu_jpeg_item *items = calloc((size_t)n, sizeof *items);
    imgstat_error err;
    memset(&err, 0, sizeof err);
    imgstat_status st =
        items ? IMGSTAT_OK
              : imgstat_error_set(&err, IMGSTAT_ERR_NOMEM, "out of memory");
    jpeg_waiter *x = first;
    for (int k = 0; k < n && items; k++, x = x->next)
      items[k] = x->item;
    if (items)
      st = imgstat_gpu_jpeg_decode(g->jpeg, items, n, &err);
    x = first;
    for (int k = 0; k < n; k++, x = x->next) {
      if (items)
        x->item = items[k];
      else
        x->item.status = st;
      x->status = st;
      x->err = err;
    }
    free(items);

    pthread_mutex_lock(&b->lock);
    x = first;
    for (int k = 0; k < n; k++, x = x->next)
      x->done = 1;
    b->busy = 0;
    pthread_cond_broadcast(&b->finished);
  }
  pthread_mutex_unlock(&b->lock);
}

/* ---- the engine ------------------------------------------------------------
 */

struct imgstat_engine {
  imgstat_engine_options opt;
  /* The decision (lock): under auto, whether and when to start the GPU. */
  pthread_mutex_t lock;
  pthread_cond_t settled; /* decided became 1 */
  gpu_start start;
  int started; /* the start-up has begun (start.thread or start.done) */
  int decided; /* the policy has been applied: usable is final */
  int usable;  /* the GPU is used */
  atomic_uint_fast64_t workload; /* items expected in all; 0: unknown */
  uint64_t seen;                 /* items decoded so far (under lock) */
  atomic_uint_fast64_t next_gpu; /* items dealt to the GPUs in turn */
  /* The device stage of JPEGs (--jpeg-decoder gpu): made at the first
   * JPEG handed over (stage_lock), destroyed before the GPUs. */
  pthread_mutex_t stage_lock;
  pthread_cond_t start_fin; /* start.fin became 1 (stage_lock) */
  imgstat_stage *stage;
  imgstat_status stage_status;
  imgstat_error stage_err;
  struct timespec created;
  imgstat_engine_times times; /* under stage_lock */
  int shut;                   /* imgstat_engine_shutdown ran */
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
static int needs_gpu(const imgstat_engine *e) {
  return e->opt.verify || e->opt.backend == IMGSTAT_BACKEND_GPU ||
         e->opt.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU;
}

/* The option that needs the GPU, in the library's words (the `what` of
 * IMGSTAT_CAUSE_GPU_UNUSABLE). */
static const char *gpu_option(const imgstat_engine *e) {
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
  if (c2)
    return 1;
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
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "--jpeg-decoder gpu cannot be used with "
                             "--backend cpu");
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
  if (needs_gpu(e)) {
    gpu_start_begin(&e->start);
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
  double stage_s = since(&t0);
  gpu_start_end(&e->start);
  pthread_mutex_lock(&e->stage_lock);
  e->times.stage_end_s = stage_s;
  e->times.teardown_s = since(&t0);
  e->times.shutdown_s = since(&e->created);
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
    e->times.input_end_s = since(&e->created);
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
  imgstat_number_vsnprintf(w->text, sizeof w->text, fmt, ap);
  va_end(ap);
}

/* The decoder's warning about the input (none when text is ""), once. */
static void decoder_warning(imgstat_job_result *res, const char *text) {
  if (!text[0] || res->nwarnings == IMGSTAT_JOB_MAX_WARNINGS)
    return;
  for (int k = 0; k < res->nwarnings; k++)
    if (res->warning[k].from_decoder && strcmp(res->warning[k].text, text) == 0)
      return;
  add_warning(res, 1, "%s", text);
  res->warning[res->nwarnings - 1].from_decoder = 1;
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
  imgstat_number_vsnprintf(res->error.message, sizeof res->error.message, fmt,
                           ap);
  va_end(ap);
  imgstat_error_cause(&res->error, IMGSTAT_CAUSE_NONE, 0, 0, NULL);
  return status;
}

/* The item failed at stage for err's reason: its message and its cause. */
static imgstat_status fail_err(imgstat_job_result *res, imgstat_job_stage stage,
                               imgstat_status status,
                               const imgstat_error *err) {
  fail(res, stage, status, "%s", reason(err));
  return imgstat_error_cause(&res->error, err->cause, err->limit, err->value,
                             err->what);
}

/* The item failed because the GPU that option needs is not usable. */
static imgstat_status gpu_needed(imgstat_job_result *res, const char *option,
                                 imgstat_status status, const char *why) {
  if (why)
    fail(res, IMGSTAT_STAGE_GPU, status, "%s needs a usable GPU: %s", option,
         why);
  else
    fail(res, IMGSTAT_STAGE_GPU, status, "%s needs a usable GPU", option);
  return imgstat_error_cause(&res->error, IMGSTAT_CAUSE_GPU_UNUSABLE, 0, 0,
                             option);
}

/* ---- the policy ------------------------------------------------------------
 */

/* Ends the decision once the start-up is over (joined): the GPU is used
 * from now on, or never; the caller gets the warning, if any. Under
 * e->lock. */
static void settle(imgstat_engine *e, imgstat_job_result *res) {
  gpu_start_finish(&e->start);
  e->decided = 1;
  pthread_cond_broadcast(&e->settled);
  if (e->start.status == IMGSTAT_OK)
    e->usable = 1;
  else if (!needs_gpu(e) && e->start.status != IMGSTAT_ERR_NODEVICE)
    /* auto: no device means the CPU quietly; a broken one is worth a
     * line */
    add_warning(res, 0, "GPU unusable (%s); using the CPU",
                reason(&e->start.err));
}

/* Applies the policy before an item that needs no input: gpu / verify wait
 * for the start-up; auto decides per item (decide_item). */
static void decide(imgstat_engine *e, imgstat_job_result *res) {
  if (!needs_gpu(e))
    return;
  pthread_mutex_lock(&e->lock);
  if (!e->decided)
    settle(e, res);
  pthread_mutex_unlock(&e->lock);
}

/* Applies the policy to an item whose input is decoded (img) and whose
 * work is of the given kind: gpu / verify as decide(); auto counts the
 * item and, while the GPU is not started, asks the cost rule whether it
 * repays the work still to come. The item that gets a yes starts CUDA;
 * it and every item after it wait for the start-up (the rule counts it as
 * time of the whole run), then run on the GPU, or on the CPU with the
 * warning (given to the starting item) when it failed. */
static void decide_item(imgstat_engine *e, const imgstat_image *img,
                        imgstat_work_kind kind, imgstat_job_result *res) {
  /* JPEGs decoded on the device: their own figures (the decode's), but
   * only where the decoder can be */
  if (kind == IMGSTAT_WORK_JPEG_DECODE && !e->start.jpeg)
    kind = IMGSTAT_WORK_STATS;
  if (needs_gpu(e)) {
    decide(e, res);
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
      gpu_start_begin(&e->start);
      mine = 1;
    }
  }
  while (!mine && e->started && !e->decided)
    pthread_cond_wait(&e->settled, &e->lock);
  pthread_mutex_unlock(&e->lock);
  if (mine) {
    /* the wait, without the lock: only this thread joins the start-up */
    gpu_start_finish(&e->start);
    pthread_mutex_lock(&e->lock);
    settle(e, res);
    pthread_mutex_unlock(&e->lock);
  }
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
  return gpu_needed(res, gpu_option(e), e->start.status, reason(&e->start.err));
}

/* A GPU failure on one item: returns 1 when the item is to be computed
 * again on the CPU (auto: with a warning naming the reason), or 0 when the
 * item failed (res says why). */
static int gpu_failed(const imgstat_engine *e, imgstat_job_result *res,
                      const imgstat_error *err) {
  if (err->status == IMGSTAT_ERR_ARG) {
    /* the item's own fault: the CPU would refuse it too */
    fail_err(res, IMGSTAT_STAGE_COMPUTE, err->status, err);
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
                                 const imgstat_image *img,
                                 imgstat_work_kind kind, imgstat_image *own,
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
      return fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
    img = own;
  }
  res->width = img->width;
  res->height = img->height;
  res->channels = img->channels;
  res->colour = img->colour;
  res->sample = img->sample;
  res->format = img->format;
  res->pages = img->pages;
  res->page = img->page;
  decoder_warning(res, img->warning);
  decide_item(e, img, kind, res);
  if (known_unusable(e))
    return gpu_unusable(e, res);
  *in = img;
  return IMGSTAT_OK;
}

/* The GPU for one item when the policy uses one (the devices in turn),
 * else NULL. */
static gpu_slot *gpu_for_item(imgstat_engine *e) {
  pthread_mutex_lock(&e->lock);
  int usable = e->usable;
  pthread_mutex_unlock(&e->lock);
  if (!usable || e->start.ngpus == 0)
    return NULL;
  uint64_t k = atomic_fetch_add(&e->next_gpu, 1);
  return &e->start.gpus[k % (uint64_t)e->start.ngpus];
}

/* The partials of img by the policy (on the GPU from d when there is one). */
static imgstat_status stats(imgstat_engine *e, gpu_slot *g,
                            const imgstat_image *img, imgstat_gpu_image *d,
                            imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st;
  if (e->opt.verify) {
    st = imgstat_cpu_stats(img, e->opt.threads, res->partial, &err);
    if (st != IMGSTAT_OK)
      return fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
    memset(&err, 0, sizeof err);
    if (!g) /* verify: the GPU is known to be usable */
      return gpu_needed(res, "verify", IMGSTAT_ERR_DEVICE, NULL);
    st = gpu_stats(g->gpu, img, e->opt.kernel, res->gpu_partial, &err);
    if (st != IMGSTAT_OK)
      return fail(res, IMGSTAT_STAGE_COMPUTE, st, "--verify: GPU failed: %s",
                  reason(&err));
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
    if (!gpu_failed(e, res, &err))
      return res->status;
    memset(&err, 0, sizeof err);
  }
  st = imgstat_cpu_stats(img, e->opt.threads, res->partial, &err);
  if (st != IMGSTAT_OK)
    return fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
  res->backend = IMGSTAT_BACKEND_CPU;
  return IMGSTAT_OK;
}

static void free_histograms(imgstat_job_result *res) {
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    imgstat_histogram_free(&res->hist[c]);
  memset(res->hist_figures, 0, sizeof res->hist_figures);
}

/* The figures of channel c of img from its histogram h, by the CPU's rule
 * (moments from the counts; a float image's from its samples): every path
 * that has a histogram ends here. */
static void hist_figures(const imgstat_image *img, int c,
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

/* The histograms of every channel and their figures, on the GPU (e's
 * context) or on the CPU. A failure is returned with nothing kept: the
 * caller applies the policy. */
static imgstat_status histograms_on(gpu_slot *g, imgstat_gpu_image *d,
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
  for (int c = 0; c < img->channels; c++) {
    imgstat_histogram *h = &res->hist[c];
    double v[IMGSTAT_MAX_PERCENTILES + 1];
    imgstat_status st;
    if (g) {
      st = gpu_histogram_on(g->gpu, d, img, c, p, np, v, h, err);
    } else {
      st = imgstat_histogram_compute(img, c, NULL, h, err);
    }
    if (st != IMGSTAT_OK) {
      free_histograms(res);
      return st;
    }
    imgstat_hist_figures *f = &res->hist_figures[c];
    hist_figures(img, c, h, req, f);
    if (g && h->total) {
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
static imgstat_status histograms(imgstat_engine *e, gpu_slot *g,
                                 const imgstat_image *img, imgstat_gpu_image *d,
                                 const imgstat_stats_request *req,
                                 imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (res->backend != IMGSTAT_BACKEND_GPU)
    g = NULL;
  imgstat_status st = histograms_on(g, d, img, req, res, &err);
  if (st != IMGSTAT_OK && g) {
    if (!gpu_failed(e, res, &err))
      return res->status;
    memset(&err, 0, sizeof err);
    g = NULL;
    st = histograms_on(NULL, NULL, img, req, res, &err);
  }
  if (st != IMGSTAT_OK)
    return fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
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
  imgstat_status st = stats(e, g, in, d, res);
  if (st == IMGSTAT_OK && with_hist)
    st = histograms(e, g, in, d, req, res);
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
      return fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
    st = opts->measured
             ? imgstat_gpu_norm_apply(g->gpu, in, &given, &res->output, &err)
             : gpu_normalize(g->gpu, in, opts, &res->output, &err);
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
    return fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
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
    st = work(e, gpu_for_item(e), in, arg, res);
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
    return res ? fail(res, IMGSTAT_STAGE_COMPUTE, IMGSTAT_ERR_ARG,
                      "no normalization options")
               : IMGSTAT_ERR_ARG;
  }
  return run_item(e, path, img, IMGSTAT_WORK_NORMALIZE, normalize_item, opts,
                  res);
}

/* ---- JPEGs decoded on the GPU ----------------------------------------------
 */

/* Whether the policy may decode JPEGs on the GPU at all. */
static int jpeg_wanted(imgstat_engine *e) {
  if (!e->start.jpeg)
    return 0;
  pthread_mutex_lock(&e->lock);
  int no = e->decided &&
           (!e->usable || e->start.ngpus == 0 || !e->start.gpus[0].jpeg);
  pthread_mutex_unlock(&e->lock);
  return !no;
}

int imgstat_engine_may_decode_jpeg(imgstat_engine *e) {
  return e && jpeg_wanted(e);
}

/* The item's warnings go before those of the result that replaces it (the
 * decoder's once: both results have it). */
static void keep_warnings(const imgstat_job_result *old,
                          imgstat_job_result *res) {
  imgstat_job_result tmp = *res;
  int n = old->nwarnings;
  memcpy(res->warning, old->warning, sizeof(imgstat_job_warning) * (size_t)n);
  res->nwarnings = n;
  for (int k = 0;
       k < tmp.nwarnings && res->nwarnings < IMGSTAT_JOB_MAX_WARNINGS; k++) {
    if (tmp.warning[k].from_decoder)
      decoder_warning(res, tmp.warning[k].text);
    else
      res->warning[res->nwarnings++] = tmp.warning[k];
  }
}

/* The CPU decoder for d (an input the GPU did not decode), then the item by
 * the policy. */
static int jpeg_on_cpu(imgstat_engine *e, imgstat_decoder *d, const char *path,
                       const imgstat_stats_request *req,
                       int (*reserve)(void *, uint64_t), void *ctx,
                       int reserved, imgstat_job_result *res) {
  imgstat_job_result before = *res;
  const imgstat_header *h = imgstat_decoder_header(d);
  uint64_t bytes = (uint64_t)h->width * h->height * (uint64_t)h->channels *
                   (uint64_t)(imgstat_sample_depth(h->sample) / 8);
  if (!reserved && !reserve(ctx, bytes))
    return -1;
  imgstat_image img;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st =
      imgstat_image_alloc(&img, h->width, h->height, h->channels, h->sample,
                          e->opt.load.max_pixels, &err);
  if (st == IMGSTAT_OK)
    st = imgstat_decoder_read(d, &img, &err);
  if (st != IMGSTAT_OK)
    fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
  else
    imgstat_engine_stats(e, path, &img, req, res);
  imgstat_image_free(&img);
  keep_warnings(&before, res);
  res->decoder = IMGSTAT_DECODER_TURBOJPEG;
  return 1;
}

/* The name of the decoder that made an item's pixels. */
static const char *jpeg_decoder_of(const imgstat_gpu_jpeg_item *it) {
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

/* A decoded item's shape (no pixels) and its planes wrapped as a device
 * image of g's context (*d; release it). */
static imgstat_status jpeg_wrap(gpu_slot *g, const imgstat_gpu_jpeg_item *it,
                                imgstat_image *shape, imgstat_gpu_image **d,
                                imgstat_error *err) {
  memset(shape, 0, sizeof *shape);
  shape->width = it->width;
  shape->height = it->height;
  shape->channels = it->channels;
  shape->sample = IMGSTAT_U8;
  shape->format = "JPEG";
  return imgstat_gpu_image_wrap(g->gpu, it->width, it->height, it->channels,
                                IMGSTAT_U8, (void *const *)it->planes, 0, d,
                                err);
}

/* The statistics (and histograms) of a decoded item from its device planes;
 * with verify, the CPU's of the same pixels beside them. A GPU failure
 * follows the policy (gpu_failed): the CPU then computes from the planes
 * copied to the host; returns 0 when that copy fails too (the caller then
 * decodes on the CPU). */
static int jpeg_device_item(imgstat_engine *e, gpu_slot *g,
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
  if (st == IMGSTAT_OK)
    st = imgstat_gpu_image_stats(
        g->gpu, d, e->opt.kernel,
        e->opt.verify ? res->gpu_partial : res->partial, &err);
  if (st == IMGSTAT_OK && e->opt.verify) {
    /* the CPU's statistics of the same pixels are the record; the slot is
     * given back first (the planes are the item's) */
    imgstat_gpu_image_release(g->gpu, d);
    d = NULL;
    st = jpeg_download(g, it, &host, &err);
    if (st != IMGSTAT_OK)
      fail(res, IMGSTAT_STAGE_COMPUTE, st, "--verify: %s", reason(&err));
    else if ((st = imgstat_cpu_stats(&host, e->opt.threads, res->partial,
                                     &err)) != IMGSTAT_OK)
      fail_err(res, IMGSTAT_STAGE_COMPUTE, st, &err);
    else {
      res->backend = IMGSTAT_BACKEND_CPU;
      res->verified = 1;
      if (with_hist)
        histograms(e, NULL, &host, NULL, req, res);
    }
    goto done;
  }
  if (st == IMGSTAT_OK) {
    res->backend = IMGSTAT_BACKEND_GPU;
    if (with_hist) {
      st = histograms_on(g, d, &shape, req, res, &err);
      if (st == IMGSTAT_OK) {
        res->has_histograms = 1;
        res->hist_backend = IMGSTAT_BACKEND_GPU;
        goto done;
      }
    } else {
      goto done;
    }
  }
  /* a GPU failure: by the policy, an error or the CPU */
  if (!gpu_failed(e, res, &err))
    goto done;
  memset(&err, 0, sizeof err);
  if (jpeg_download(g, it, &host, &err) != IMGSTAT_OK) {
    imgstat_gpu_image_release(g->gpu, d);
    return 0;
  }
  if (stats(e, NULL, &host, NULL, res) == IMGSTAT_OK && with_hist)
    histograms(e, NULL, &host, NULL, req, res);
done:
  imgstat_image_free(&host);
  imgstat_gpu_image_release(g->gpu, d);
  return 1;
}

/* A JPEG offered to the GPU decoder: res zeroed; when the policy may
 * decode it there and nvJPEG may take the file, its bytes, its size and
 * format in res, and its header; else NULL (not taken). */
static const imgstat_header *
jpeg_offered(imgstat_engine *e, imgstat_decoder *dec, imgstat_job_result *res,
             const unsigned char **bytes, size_t *size) {
  memset(res, 0, sizeof *res);
  if (!dec || !jpeg_wanted(e) || !ist_jpeg_gpu_input(dec, bytes, size))
    return NULL;
  const imgstat_header *h = imgstat_decoder_header(dec);
  res->width = h->width;
  res->height = h->height;
  res->channels = h->channels;
  res->colour = h->colour;
  res->sample = h->sample;
  res->format = h->format;
  decoder_warning(res, dec->warning);
  return h;
}

int imgstat_engine_stats_decoder(imgstat_engine *e, imgstat_decoder *dec,
                                 const char *path,
                                 const imgstat_stats_request *req,
                                 int (*reserve)(void *ctx, uint64_t bytes),
                                 void *ctx, imgstat_job_result *res) {
  if (!res)
    return 0;
  memset(res, 0, sizeof *res);
  const unsigned char *bytes = NULL;
  size_t size = 0;
  const imgstat_header *h =
      e && reserve ? jpeg_offered(e, dec, res, &bytes, &size) : NULL;
  if (!h)
    return 0;
  imgstat_image shape;
  memset(&shape, 0, sizeof shape);
  shape.width = h->width;
  shape.height = h->height;
  shape.channels = h->channels;
  shape.sample = h->sample;
  /* The CPU path's strictness, before nvJPEG sees the file. It runs before
   * the wait for the GPU's start-up (a second or so of CUDA and nvJPEG),
   * which it overlaps; its verdict counts only if the GPU decodes the file. */
  imgstat_error check_err;
  memset(&check_err, 0, sizeof check_err);
  imgstat_status check = IMGSTAT_OK;
  if (!known_unusable(e)) {
    check = ist_jpeg_check(dec, (int)e->opt.jpeg_check, &check_err);
    decide_item(e, &shape, IMGSTAT_WORK_JPEG_DECODE, res);
  }
  if (known_unusable(e)) {
    reserve(ctx, 0);
    gpu_unusable(e, res);
    return 1;
  }
  gpu_slot *g = gpu_for_item(e);
  if (!g || !g->jpeg)
    return jpeg_on_cpu(e, dec, path, req, reserve, ctx, 0, res);
  if (check != IMGSTAT_OK) {
    reserve(ctx, 0);
    fail_err(res, IMGSTAT_STAGE_LOAD, check, &check_err);
    return 1;
  }
  if (!reserve(ctx, size))
    return -1;
  jpeg_waiter w;
  memset(&w, 0, sizeof w);
  w.item.data = bytes;
  w.item.size = size;
  w.item.width = h->width;
  w.item.height = h->height;
  w.item.channels = h->channels;
  jpeg_decode_batched(g, e->opt.jpeg_batch > 0 ? e->opt.jpeg_batch : 64, &w);
  int r = 0;
  if (w.item.status == IMGSTAT_OK) {
    r = jpeg_device_item(e, g, &w.item, req, res);
    res->decoder = jpeg_decoder_of(&w.item);
  } else if (w.status != IMGSTAT_OK && !gpu_failed(e, res, &w.err)) {
    r = 1; /* the decoder failed (not the file): the policy's error */
  }
  imgstat_gpu_jpeg_item_free(g->jpeg, &w.item);
  /* a file nvJPEG refused, or a GPU failure that the CPU takes over */
  return r ? 1 : jpeg_on_cpu(e, dec, path, req, reserve, ctx, 1, res);
}

const char *imgstat_engine_jpeg_backend(imgstat_engine *e) {
  if (!e || !e->start.jpeg)
    return NULL;
  pthread_mutex_lock(&e->lock);
  const char *name =
      e->decided && e->usable && e->start.ngpus > 0 && e->start.gpus[0].jpeg
          ? imgstat_gpu_jpeg_backend(e->start.gpus[0].jpeg)
          : NULL;
  pthread_mutex_unlock(&e->lock);
  return name;
}

/* ---- the device stage: JPEGs streamed to nvJPEG ----------------------------
 */

/* A JPEG handed to the stage: a copy of the file's bytes, not its open
 * decoder (which holds the file open: a thousand of them in flight would
 * run out of descriptors). */
typedef struct stage_job {
  imgstat_stage_item si;
  imgstat_engine *e;
  unsigned char *bytes; /* owned */
  const char *path;
  const imgstat_stats_request *req;
  imgstat_job_result *res;
  imgstat_gpu_jpeg_item item;
  void (*done)(void *, int);
  void *done_ctx;
} stage_job;

/* One lane: a decoder of its own (sharing the nvJPEG handles of its GPU's,
 * made at the start), its batch's items, partials and counts. */
typedef struct stage_lane {
  imgstat_engine *e;
  gpu_slot *g;
  imgstat_gpu_jpeg *jpeg;
  int cap;
  imgstat_gpu_jpeg_item *items;
  imgstat_partial *parts;
  uint64_t *counts; /* the batch's histograms, 256 per channel */
} stage_lane;

static void add_time(imgstat_engine *e, double *field, double s) {
  pthread_mutex_lock(&e->stage_lock);
  *field += s;
  pthread_mutex_unlock(&e->stage_lock);
}

static imgstat_status lane_open(void *ctx, int device, int lane, void **out,
                                imgstat_error *err) {
  imgstat_engine *e = ctx;
  /* libnvjpeg loaded here, while the start-up thread makes the CUDA
   * context (the start-up's handles then find it loaded; the outcome is
   * the same whichever thread loads it) */
  if (e->start.jpeg)
    (void)imgstat_gpu_jpeg_load(NULL, NULL);
  /* The start-up's end, waited for without the engine's lock: the join
   * (decide) would hold it for a second, and the workers that read and
   * check the next files take it. */
  pthread_mutex_lock(&e->stage_lock);
  while (e->start.launched && !e->start.fin)
    pthread_cond_wait(&e->start_fin, &e->stage_lock);
  pthread_mutex_unlock(&e->stage_lock);
  imgstat_job_result tmp;
  memset(&tmp, 0, sizeof tmp);
  decide(e, &tmp); /* the join: the policy applied once, for every lane */
  if (known_unusable(e))
    return imgstat_error_set(err, e->start.status, "%s", reason(&e->start.err));
  if (device >= e->start.ngpus)
    return IMGSTAT_OK; /* not there (every device: more lanes than GPUs) */
  gpu_slot *g = &e->start.gpus[device];
  if (!g->jpeg)
    return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE, "nvJPEG did not start");
  stage_lane *l = calloc(1, sizeof *l);
  if (!l)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  l->e = e;
  l->g = g;
  /* Every lane's decoder state is made here, on the lane's thread, the
   * lanes of a device at once; they share the GPU's handles (made once, at
   * the start) unless told to make their own (IMGSTAT_JPEG_OWN_HANDLES, to
   * measure the difference). */
  (void)lane;
  imgstat_status st =
      e->opt.jpeg_own_handles
          ? imgstat_gpu_jpeg_create_on(imgstat_gpu_device(g->gpu),
                                       e->start.strict, &l->jpeg, err)
          : imgstat_gpu_jpeg_create_sibling(g->jpeg, &l->jpeg, err);
  if (st == IMGSTAT_OK)
    st = imgstat_gpu_jpeg_prepare(l->jpeg, err);
  if (st != IMGSTAT_OK) {
    imgstat_gpu_jpeg_destroy(l->jpeg);
    free(l);
    return st;
  }
  pthread_mutex_lock(&e->stage_lock);
  double t = since(&e->created);
  if (e->times.ready_s == 0)
    e->times.ready_s = t;
  if (t > e->times.ready_last_s)
    e->times.ready_last_s = t;
  pthread_mutex_unlock(&e->stage_lock);
  *out = l;
  return IMGSTAT_OK;
}

/* A lane's end (once the input has ended, or at the stage's destruction):
 * its decoder goes on its own thread, beside the other lanes' and the
 * output of the last records. */
static void lane_close(void *ctx) {
  stage_lane *l = ctx;
  imgstat_engine *e = l->e;
  imgstat_gpu_jpeg_times jt;
  imgstat_gpu_jpeg_times_get(l->jpeg, &jt);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  imgstat_gpu_jpeg_destroy(l->jpeg);
  free(l->items);
  free(l->parts);
  free(l->counts);
  free(l);
  pthread_mutex_lock(&e->stage_lock);
  imgstat_engine_times *t = &e->times;
  t->parse_s += jt.parse_s;
  t->alloc_s += jt.alloc_s;
  t->nvjpeg_host_s += jt.host_s;
  t->nvjpeg_wait_s += jt.wait_s;
  t->close_s += since(&t0);
  double end = since(&e->created);
  if (end > t->closed_s)
    t->closed_s = end;
  pthread_mutex_unlock(&e->stage_lock);
}

static int reserve_none(void *ctx, uint64_t bytes) {
  (void)ctx;
  (void)bytes;
  return 1;
}

/* The histograms of a decoded item from its batch's counts (counts: the
 * item's IMGSTAT_MAX_CHANNELS x 256), with their figures by the CPU's rule
 * (its statistics are in res already). 0: failed, nothing kept (the caller
 * takes the one-image path, which applies the policy). */
static int jpeg_batch_histograms(const imgstat_gpu_jpeg_item *it,
                                 const uint64_t *counts,
                                 const imgstat_stats_request *req,
                                 imgstat_job_result *res) {
  if (req->npercentiles < 0 || req->npercentiles > IMGSTAT_MAX_PERCENTILES)
    return 0;
  imgstat_image shape;
  memset(&shape, 0, sizeof shape);
  shape.width = it->width;
  shape.height = it->height;
  shape.channels = it->channels;
  shape.sample = IMGSTAT_U8;
  for (int c = 0; c < it->channels; c++) {
    imgstat_histogram *h = &res->hist[c];
    imgstat_error err;
    memset(&err, 0, sizeof err);
    if (imgstat_histogram_alloc(h, IMGSTAT_U8, 0, 0, 0, &err) != IMGSTAT_OK) {
      free_histograms(res);
      return 0;
    }
    memcpy(h->counts, counts + (size_t)256 * c, 256 * sizeof *h->counts);
    h->total = (uint64_t)it->width * it->height;
    hist_figures(&shape, c, h, req, &res->hist_figures[c]);
  }
  res->has_histograms = 1;
  res->hist_backend = IMGSTAT_BACKEND_GPU;
  return 1;
}

/* The CPU decoder for a file of the stage that nvJPEG did not decode. */
static void jpeg_reopened_on_cpu(imgstat_engine *e, stage_job *j,
                                 imgstat_job_result *res) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_decoder *d = NULL;
  imgstat_status st = imgstat_decoder_open(j->path, &e->opt.load, &d, &err);
  if (st != IMGSTAT_OK)
    fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
  else
    jpeg_on_cpu(e, d, j->path, j->req, reserve_none, NULL, 1, res);
  imgstat_decoder_close(d);
}

/* One batch: decode, the batch's statistics and histograms in one launch
 * each (one synchronisation); the files nvJPEG refused on the CPU decoder;
 * a GPU failure by the policy (per item, as the one-image path). */
static imgstat_status lane_run(void *ctx, imgstat_stage_item *const *items,
                               int n, imgstat_error *err) {
  stage_lane *l = ctx;
  imgstat_engine *e = l->e;
  (void)err;
  if (n > l->cap) {
    free(l->items);
    free(l->parts);
    free(l->counts);
    l->items = calloc((size_t)n, sizeof *l->items);
    l->parts = calloc((size_t)n * IMGSTAT_MAX_CHANNELS, sizeof *l->parts);
    l->counts =
        calloc((size_t)n * IMGSTAT_MAX_CHANNELS * 256, sizeof *l->counts);
    l->cap = l->items && l->parts && l->counts ? n : 0;
  }
  int any_hist = 0;
  for (int k = 0; k < n; k++) {
    const imgstat_stats_request *req = ((stage_job *)items[k]->user)->req;
    any_hist |= req && req->histograms;
  }
  imgstat_error derr;
  memset(&derr, 0, sizeof derr);
  imgstat_status dst = IMGSTAT_ERR_NOMEM;
  imgstat_status sst = IMGSTAT_ERR_NOMEM;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pthread_mutex_lock(&e->stage_lock);
  if (e->times.first_submit_s == 0)
    e->times.first_submit_s = since(&e->created);
  pthread_mutex_unlock(&e->stage_lock);
  if (l->cap >= n) {
    for (int k = 0; k < n; k++)
      l->items[k] = ((stage_job *)items[k]->user)->item;
    dst = imgstat_gpu_jpeg_decode(l->jpeg, l->items, n, &derr);
  } else {
    imgstat_error_set(&derr, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  double decode_s = since(&t0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  imgstat_error serr;
  memset(&serr, 0, sizeof serr);
  if (dst == IMGSTAT_OK)
    sst = imgstat_gpu_jpeg_reduce(l->jpeg, l->items, n, l->parts,
                                  any_hist ? l->counts : NULL, &serr);
  double reduce_s = since(&t0);
  double hist_s = 0, cpu_s = 0;
  uint64_t hw = 0, hy = 0, cpu = 0;
  for (int k = 0; k < n; k++) {
    stage_job *j = items[k]->user;
    imgstat_job_result *res = j->res;
    imgstat_gpu_jpeg_item *it = dst == IMGSTAT_OK ? &l->items[k] : &j->item;
    int finished = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (dst != IMGSTAT_OK) {
      /* the decoder failed (not the file): the policy's error, or the CPU */
      finished = !gpu_failed(e, res, &derr);
    } else if (it->status == IMGSTAT_OK) {
      int with_hist = j->req && j->req->histograms;
      if (sst == IMGSTAT_OK) {
        memcpy(res->partial, &l->parts[(size_t)k * IMGSTAT_MAX_CHANNELS],
               sizeof(imgstat_partial) * (size_t)it->channels);
        res->backend = IMGSTAT_BACKEND_GPU;
        finished = !with_hist ||
                   jpeg_batch_histograms(
                       it, &l->counts[(size_t)k * IMGSTAT_MAX_CHANNELS * 256],
                       j->req, res);
      }
      if (!finished) /* the one-image path, with the policy's fallback */
        finished = jpeg_device_item(e, l->g, it, j->req, res);
      if (finished && res->status == IMGSTAT_OK)
        res->decoder = jpeg_decoder_of(it);
      hw += res->decoder && it->hardware;
      hy += res->decoder && !it->hardware;
    }
    imgstat_gpu_jpeg_item_free(l->jpeg, it);
    hist_s += since(&t0);
    if (!finished) {
      /* a file nvJPEG refused, or a GPU failure the CPU takes over: the
       * file opened again for the CPU decoder */
      clock_gettime(CLOCK_MONOTONIC, &t0);
      jpeg_reopened_on_cpu(e, j, res);
      cpu_s += since(&t0);
      cpu++;
    }
  }
  pthread_mutex_lock(&e->stage_lock);
  imgstat_engine_times *t = &e->times;
  double end = since(&e->created);
  if (t->first_batch_s == 0)
    t->first_batch_s = end;
  if (end > t->last_batch_s)
    t->last_batch_s = end;
  t->decode_s += decode_s;
  t->reduce_s += reduce_s;
  t->histogram_s += hist_s;
  t->cpu_s += cpu_s;
  t->items += (uint64_t)n;
  t->batches++;
  t->hardware += hw;
  t->hybrid += hy;
  t->cpu += cpu;
  if (n > t->max_batch)
    t->max_batch = n;
  pthread_mutex_unlock(&e->stage_lock);
  return IMGSTAT_OK;
}

/* An item is finished: a failure of the stage itself (no lane opened:
 * the GPU the policy needs is not usable) becomes the item's. */
static void stage_done(void *ctx, imgstat_stage_item *si, imgstat_status st,
                       int cancelled, const imgstat_error *err) {
  imgstat_engine *e = ctx;
  stage_job *j = si->user;
  if (st != IMGSTAT_OK && !cancelled) {
    if (known_unusable(e))
      gpu_unusable(e, j->res);
    else
      gpu_needed(j->res, gpu_option(e), st, reason(err));
  }
  free(j->bytes);
  j->done(j->done_ctx, cancelled);
  free(j);
}

/* The stage, made at the first JPEG handed over. */
static imgstat_stage *stage_get(imgstat_engine *e, imgstat_error *err) {
  pthread_mutex_lock(&e->stage_lock);
  if (!e->stage && e->stage_status == IMGSTAT_OK) {
    imgstat_stage_ops o;
    memset(&o, 0, sizeof o);
    o.ctx = e;
    o.devices = e->opt.ndevices > 0   ? e->opt.ndevices
                : e->opt.ndevices < 0 ? IMGSTAT_MAX_DEVICES
                                      : 1;
    o.lanes = e->opt.jpeg_lanes <= 0  ? 2
              : e->opt.jpeg_lanes > 8 ? 8
                                      : e->opt.jpeg_lanes;
    /* 12 MP photos: 22 a batch (the engines want many at once; 0.8 GB of
     * planes a lane); 0.5 MP ones: batch_max */
    o.batch_pixels = UINT64_C(256) << 20;
    o.batch_max = e->opt.jpeg_batch > 0 ? e->opt.jpeg_batch : 128;
    o.open = lane_open;
    o.run = lane_run;
    o.close = lane_close;
    o.done = stage_done;
    e->stage_status = imgstat_stage_create(&o, &e->stage, &e->stage_err);
  }
  imgstat_stage *s = e->stage;
  if (!s)
    *err = e->stage_err;
  pthread_mutex_unlock(&e->stage_lock);
  return s;
}

int imgstat_engine_stats_decoder_async(
    imgstat_engine *e, imgstat_decoder *dec, const char *path,
    const imgstat_stats_request *req, int (*reserve)(void *ctx, uint64_t bytes),
    void *ctx, imgstat_job_result *res, void (*done)(void *, int),
    void *done_ctx) {
  if (!res)
    return 0;
  const unsigned char *bytes = NULL;
  size_t size = 0;
  const imgstat_header *h = e && reserve && done && !e->opt.verify
                                ? jpeg_offered(e, dec, res, &bytes, &size)
                                : NULL;
  if (!h) {
    memset(res, 0, sizeof *res);
    return 0;
  }
  if (known_unusable(e)) {
    reserve(ctx, 0);
    gpu_unusable(e, res);
    return 1;
  }
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status check = IMGSTAT_OK;
  check = ist_jpeg_check(dec, (int)e->opt.jpeg_check, &err);
  add_time(e, &e->times.check_s, since(&t0));
  if (check != IMGSTAT_OK) {
    reserve(ctx, 0);
    fail_err(res, IMGSTAT_STAGE_LOAD, check, &err);
    return 1;
  }
  memset(&err, 0, sizeof err);
  imgstat_stage *s = stage_get(e, &err);
  if (!s) {
    reserve(ctx, 0);
    fail(res, IMGSTAT_STAGE_GPU, err.status ? err.status : IMGSTAT_ERR_NOMEM,
         "%s", reason(&err));
    return 1;
  }
  if (!reserve(ctx, size))
    return -1;
  stage_job *j = calloc(1, sizeof *j);
  unsigned char *copy = j ? malloc(size ? size : 1) : NULL;
  if (!copy) {
    free(j);
    fail(res, IMGSTAT_STAGE_LOAD, IMGSTAT_ERR_NOMEM, "out of memory");
    return 1;
  }
  memcpy(copy, bytes, size);
  j->e = e;
  j->bytes = copy;
  j->path = path;
  j->req = req;
  j->res = res;
  j->item.data = copy;
  j->item.size = size;
  j->item.width = h->width;
  j->item.height = h->height;
  j->item.channels = h->channels;
  j->done = done;
  j->done_ctx = done_ctx;
  j->si.pixels = (uint64_t)h->width * h->height;
  j->si.user = j;
  imgstat_stage_submit(s, &j->si);
  return 2;
}

void imgstat_engine_times_get(imgstat_engine *e, imgstat_engine_times *out) {
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  if (!e)
    return;
  pthread_mutex_lock(&e->stage_lock);
  *out = e->times;
  pthread_mutex_unlock(&e->stage_lock);
  /* the start-up's phases: final once the start-up is over (a lane opened
   * after it, or the engine shut down) */
  if (out->ready_s > 0 || e->shut) {
    out->context_s = e->start.context_s;
    out->nvjpeg_s = e->start.jpeg_s;
    out->jpeg_load_s = e->start.jpeg_times.load_s;
    out->jpeg_device_s = e->start.jpeg_times.device_s;
    out->jpeg_handles_s = e->start.jpeg_times.handles_s;
    out->jpeg_decoder_s = e->start.jpeg_times.decoder_s;
    out->jpeg_create_s = e->start.jpeg_times.create_s;
    out->jpeg_info_s = e->start.jpeg_times.info_s;
  }
}
