/*
 * The GPUs' start-up (engine.h): one context per device on a thread of its
 * own, each device's nvJPEG decoder made beside its context; a failure of
 * any device ends the start-up (the policy then fails or falls back for
 * every item, and the device stage's lanes never open). Also the facts of
 * nvJPEG that the program's version line shows.
 */
#include "engine.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double ist_since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) +
         1e-9 * (double)(b.tv_nsec - a->tv_nsec);
}

static void gpus_destroy(gpu_start *s) {
  for (int k = 0; k < s->ngpus; k++) {
    gpu_slot *g = &s->gpus[k];
    imgstat_gpu_jpeg_destroy(g->jpeg);
    ist_jpeg_batcher_destroy(&g->batch);
    ist_valid_batcher_destroy(&g->vbatch);
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
  j->done_s = ist_since(&j->t0);
  return NULL;
}

/* One device's start-up, on a thread of its own (all devices at once):
 * its context, its JPEG decoder beside it (jpeg_early) and their moments
 * from t0. Its failure is a value here, named by the device once joined. */
typedef struct device_start {
  pthread_t thread;
  const gpu_start *s;
  gpu_slot *g;
  int device;   /* as given to imgstat_gpu_create (-1: the current one) */
  int batch_ok; /* g->batch and g->vbatch were made */
  imgstat_status status;
  imgstat_error err;
  double context_s, jpeg_s, ready_s; /* from s->t0; 0: not reached */
  imgstat_gpu_jpeg_times jpeg_times;
} device_start;

/* A GPU's JPEG decoder and its batches; a decoder that cannot start fails
 * the GPU only when it is needed (--jpeg-decoder gpu). The decoder comes
 * from early (made beside the context) when it was started and is on the
 * context's device, else it is made here. Its state is made only for the
 * one-image path (prepare): the device stage's lanes make decoders of their
 * own, sharing its handles, each on its own thread and all at once. */
static imgstat_status jpeg_start(device_start *d, jpeg_early *early,
                                 imgstat_error *err) {
  const gpu_start *s = d->s;
  gpu_slot *g = d->g;
  int ok = ist_jpeg_batcher_init(&g->batch);
  if (ok && !ist_valid_batcher_init(&g->vbatch)) {
    ist_jpeg_batcher_destroy(&g->batch);
    ok = 0;
  }
  d->batch_ok = ok;
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
    d->jpeg_s = early->done_s;
  } else {
    st = imgstat_gpu_jpeg_create_on(imgstat_gpu_device(g->gpu), s->strict,
                                    &g->jpeg, &why);
    if (st == IMGSTAT_OK && s->prepare)
      st = imgstat_gpu_jpeg_prepare(g->jpeg, &why);
    if (st != IMGSTAT_OK) {
      imgstat_gpu_jpeg_destroy(g->jpeg);
      g->jpeg = NULL;
    }
    d->jpeg_s = ist_since(&s->t0);
  }
  imgstat_gpu_jpeg_times_get(g->jpeg, &d->jpeg_times);
  if (st != IMGSTAT_OK && s->jpeg == 2)
    return imgstat_error_set(err, st, "nvJPEG: %s", why.message);
  return IMGSTAT_OK;
}

/* A device's slot, whatever of it was made. */
static void slot_destroy(gpu_slot *g, int batch_ok) {
  imgstat_gpu_jpeg_destroy(g->jpeg);
  if (batch_ok) {
    ist_jpeg_batcher_destroy(&g->batch);
    ist_valid_batcher_destroy(&g->vbatch);
  }
  imgstat_gpu_destroy(g->gpu);
  memset(g, 0, sizeof *g);
}

static void *device_start_main(void *arg) {
  device_start *d = arg;
  const gpu_start *s = d->s;
  gpu_slot *g = d->g;
  memset(&d->err, 0, sizeof d->err);
  /* the JPEG decoder beside the context (see jpeg_early) */
  jpeg_early early;
  memset(&early, 0, sizeof early);
  early.device = d->device;
  early.prepare = s->prepare;
  early.strict = s->strict;
  early.t0 = s->t0;
  /* IMGSTAT_JPEG_SERIAL=1: the decoder after the context, not beside it
   * (a measurement's knob: does the overlap slow nvJPEG's start?) */
  int beside =
      s->jpeg && !getenv("IMGSTAT_JPEG_SERIAL") &&
      pthread_create(&early.thread, NULL, jpeg_early_main, &early) == 0;
  imgstat_status st = imgstat_gpu_create(d->device, &g->gpu, &d->err);
  if (st == IMGSTAT_OK && !g->gpu)
    st = imgstat_error_set(&d->err, IMGSTAT_ERR_DEVICE,
                           "the GPU backend returned no context");
  if (st == IMGSTAT_OK)
    d->context_s = ist_since(&s->t0);
  if (beside)
    pthread_join(early.thread, NULL);
  if (st == IMGSTAT_OK)
    st = jpeg_start(d, beside ? &early : NULL, &d->err);
  else if (beside)
    imgstat_gpu_jpeg_destroy(early.dec);
  if (st != IMGSTAT_OK)
    slot_destroy(g, d->batch_ok);
  else
    d->ready_s = ist_since(&s->t0);
  d->status = st;
  return NULL;
}

/* Every device started at once, a thread each (one device: on this
 * thread), all joined before any work is dealt to them; the first failure
 * in the list's order names its device and ends the start-up (every slot
 * made is destroyed). */
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
  device_start d[IMGSTAT_MAX_DEVICES];
  int threaded[IMGSTAT_MAX_DEVICES];
  memset(d, 0, sizeof d);
  for (int k = 0; k < n; k++) {
    d[k].s = s;
    d[k].g = &s->gpus[k];
    d[k].device = list[k];
    /* IMGSTAT_DEVICES_SERIAL=1: one device after the other (a measurement's
     * knob: the start-up as it was) */
    threaded[k] =
        n > 1 && !getenv("IMGSTAT_DEVICES_SERIAL") &&
        pthread_create(&d[k].thread, NULL, device_start_main, &d[k]) == 0;
    if (!threaded[k])
      device_start_main(&d[k]);
  }
  for (int k = 0; k < n; k++)
    if (threaded[k])
      pthread_join(d[k].thread, NULL);
  int failed = -1;
  for (int k = 0; k < n && failed < 0; k++)
    if (d[k].status != IMGSTAT_OK)
      failed = k;
  if (failed >= 0) {
    for (int k = 0; k < n; k++)
      if (d[k].status == IMGSTAT_OK)
        slot_destroy(&s->gpus[k], d[k].batch_ok);
    device_start *f = &d[failed];
    if (n > 1 || s->ndevices > 0)
      imgstat_error_set(&s->err, f->status, "device %d: %.400s", list[failed],
                        f->err.message);
    else
      s->err = f->err;
    return f->status;
  }
  /* the start-up's moments: the first context ready, the first device's
   * decoder and its phases; each device's ready time */
  for (int k = 0; k < n; k++) {
    if (s->context_s == 0 || d[k].context_s < s->context_s)
      s->context_s = d[k].context_s;
    s->ready_s[k] = d[k].ready_s;
  }
  s->jpeg_s = d[0].jpeg_s;
  s->jpeg_times = d[0].jpeg_times;
  s->ngpus = n;
  s->started = n;
  for (int k = 0; k < n; k++)
    s->started_device[k] = imgstat_gpu_device(s->gpus[k].gpu);
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

void ist_gpu_start_begin(gpu_start *s) {
  if (pthread_create(&s->thread, NULL, gpu_start_main, s) == 0)
    s->running = s->launched = 1;
}

void ist_gpu_start_finish(gpu_start *s) {
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

void ist_gpu_start_end(gpu_start *s) {
  if (s->running) {
    pthread_join(s->thread, NULL);
    s->running = 0;
  }
  gpus_destroy(s);
}

void imgstat_gpu_jpeg_info_get(imgstat_gpu_jpeg_info *out) {
  memset(out, 0, sizeof *out);
  out->compiled = imgstat_gpu_jpeg_compiled();
  if (!out->compiled)
    return;
  const char *version = "";
  if (imgstat_gpu_jpeg_load(&version, &out->err) != IMGSTAT_OK)
    return;
  out->loaded = 1;
  snprintf(out->version, sizeof out->version, "%s", version);
  imgstat_gpu *gpu = NULL;
  imgstat_gpu_jpeg *dec = NULL;
  if (imgstat_gpu_create(-1, &gpu, &out->err) == IMGSTAT_OK &&
      imgstat_gpu_jpeg_create(gpu, &dec, &out->err) == IMGSTAT_OK) {
    out->device = 1;
    snprintf(out->device_name, sizeof out->device_name, "%s",
             imgstat_gpu_device_name(gpu));
    snprintf(out->backend, sizeof out->backend, "%s",
             imgstat_gpu_jpeg_backend(dec));
  }
  imgstat_gpu_jpeg_destroy(dec);
  imgstat_gpu_destroy(gpu);
}
