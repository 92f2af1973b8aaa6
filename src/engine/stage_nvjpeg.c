/*
 * JPEGs offered to nvJPEG (imgstat/engine.h, engine.h) and the device stage's
 * nvJPEG lanes: the files streamed to the stage (gpu_stage.c), decoded in
 * batches by pixels, with one batched reduction and one batched histogram
 * launch per batch; what nvJPEG refuses goes to the CPU decoder.
 */
#include "engine.h"
#include "io_engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
      ist_decoder_warning(res, tmp.warning[k].text);
    else
      res->warning[res->nwarnings++] = tmp.warning[k];
  }
}

/* The CPU decoder for d (an input the GPU did not decode), then the item by
 * the policy. */
int ist_jpeg_on_cpu(imgstat_engine *e, imgstat_decoder *d, const char *path,
                    const imgstat_stats_request *req,
                    int (*reserve)(void *, uint64_t), void *ctx, int reserved,
                    imgstat_job_result *res) {
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
    ist_fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
  else
    imgstat_engine_stats(e, path, &img, req, res);
  imgstat_image_free(&img);
  keep_warnings(&before, res);
  res->decoder = IMGSTAT_DECODER_TURBOJPEG;
  return 1;
}

/* A JPEG offered to the GPU decoder: res zeroed; when the policy may
 * decode it there and nvJPEG may take the file, its bytes, its size and
 * format in res, and its header; else NULL (not taken). */
const imgstat_header *ist_jpeg_offered(imgstat_engine *e, imgstat_decoder *dec,
                                       imgstat_job_result *res,
                                       const unsigned char **bytes,
                                       size_t *size) {
  memset(res, 0, sizeof *res);
  if (!dec || !jpeg_wanted(e) || !ist_jpeg_gpu_input(dec, bytes, size))
    return NULL;
  const imgstat_header *h = imgstat_decoder_header(dec);
  ist_result_geometry(res, h->width, h->height, h->channels, h->colour,
                      h->sample, h->format, 0, 0);
  ist_decoder_warning(res, ist_decoder_warning_text(dec));
  return h;
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
  int device; /* the slot's index in e->start.gpus */
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
  ist_decide(e, &tmp); /* the join: the policy applied once, for every lane */
  if (ist_known_unusable(e))
    return imgstat_error_set(err, e->start.status, "%s",
                             ist_reason(&e->start.err));
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
  l->device = device;
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
  double t = ist_since(&e->created);
  if (e->times.ready_s == 0)
    e->times.ready_s = t;
  if (t > e->times.ready_last_s)
    e->times.ready_last_s = t;
  if (e->times.device_ready_s[device] == 0)
    e->times.device_ready_s[device] = t;
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
  if (!e->opt.leave_to_exit) /* else the process's end frees it */
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
  t->close_s += ist_since(&t0);
  double end = ist_since(&e->created);
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
 * item's IMGSTAT_INLINE_CHANNELS x 256), with their figures by the CPU's rule
 * (its statistics are in res already). 0: failed, nothing kept (the caller
 * takes the one-image path, which applies the policy). */
static int jpeg_batch_histograms(const imgstat_gpu_jpeg_item *it,
                                 const uint64_t *counts,
                                 const imgstat_stats_request *req,
                                 imgstat_job_result *res) {
  if (req->npercentiles < 0 || req->npercentiles > IMGSTAT_MAX_PERCENTILES)
    return 0;
  imgstat_image shape =
      ist_image_shape(it->width, it->height, it->channels, IMGSTAT_U8, NULL);
  for (int c = 0; c < it->channels; c++) {
    imgstat_histogram *h = &res->hist[c];
    imgstat_error err;
    memset(&err, 0, sizeof err);
    if (imgstat_histogram_alloc(h, IMGSTAT_U8, 0, 0, 0, &err) != IMGSTAT_OK) {
      ist_free_histograms(res);
      return 0;
    }
    memcpy(h->counts, counts + (size_t)256 * c, 256 * sizeof *h->counts);
    h->total = (uint64_t)it->width * it->height;
    ist_hist_figures(&shape, c, h, req, &res->hist_figures[c]);
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
    ist_fail_err(res, IMGSTAT_STAGE_LOAD, st, &err);
  else
    ist_jpeg_on_cpu(e, d, j->path, j->req, reserve_none, NULL, 1, res);
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
    l->parts = calloc((size_t)n * IMGSTAT_INLINE_CHANNELS, sizeof *l->parts);
    l->counts =
        calloc((size_t)n * IMGSTAT_INLINE_CHANNELS * 256, sizeof *l->counts);
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
    e->times.first_submit_s = ist_since(&e->created);
  if (e->times.device_first_submit_s[l->device] == 0)
    e->times.device_first_submit_s[l->device] = ist_since(&e->created);
  pthread_mutex_unlock(&e->stage_lock);
  if (l->cap >= n) {
    for (int k = 0; k < n; k++)
      l->items[k] = ((stage_job *)items[k]->user)->item;
    dst = imgstat_gpu_jpeg_decode(l->jpeg, l->items, n, &derr);
  } else {
    imgstat_error_set(&derr, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  double decode_s = ist_since(&t0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  imgstat_error serr;
  memset(&serr, 0, sizeof serr);
  if (dst == IMGSTAT_OK)
    sst = imgstat_gpu_jpeg_reduce(l->jpeg, l->items, n, l->parts,
                                  any_hist ? l->counts : NULL, &serr);
  double reduce_s = ist_since(&t0);
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
      finished = !ist_gpu_failed(e, res, &derr);
    } else if (it->status == IMGSTAT_OK) {
      int with_hist = j->req && j->req->histograms;
      if (sst == IMGSTAT_OK) {
        memcpy(res->partial, &l->parts[(size_t)k * IMGSTAT_INLINE_CHANNELS],
               sizeof(imgstat_partial) * (size_t)it->channels);
        res->backend = IMGSTAT_BACKEND_GPU;
        finished =
            !with_hist ||
            jpeg_batch_histograms(
                it, &l->counts[(size_t)k * IMGSTAT_INLINE_CHANNELS * 256],
                j->req, res);
      }
      if (!finished) /* the one-image path, with the policy's fallback */
        finished = ist_jpeg_device_item(e, l->g, it, j->req, res);
      if (finished && res->status == IMGSTAT_OK)
        res->decoder = ist_jpeg_decoder_of(it);
      hw += res->decoder && it->hardware;
      hy += res->decoder && !it->hardware;
    }
    imgstat_gpu_jpeg_item_free(l->jpeg, it);
    hist_s += ist_since(&t0);
    if (!finished) {
      /* a file nvJPEG refused, or a GPU failure the CPU takes over: the
       * file opened again for the CPU decoder */
      clock_gettime(CLOCK_MONOTONIC, &t0);
      jpeg_reopened_on_cpu(e, j, res);
      cpu_s += ist_since(&t0);
      cpu++;
    }
  }
  pthread_mutex_lock(&e->stage_lock);
  imgstat_engine_times *t = &e->times;
  double end = ist_since(&e->created);
  if (t->first_batch_s == 0)
    t->first_batch_s = end;
  if (end > t->last_batch_s)
    t->last_batch_s = end;
  if (end > t->device_last_batch_s[l->device])
    t->device_last_batch_s[l->device] = end;
  t->device_items[l->device] += (uint64_t)n;
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
    if (ist_known_unusable(e))
      ist_gpu_unusable(e, j->res);
    else
      ist_gpu_needed(j->res, ist_gpu_option(e), st, ist_reason(err));
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
                                ? ist_jpeg_offered(e, dec, res, &bytes, &size)
                                : NULL;
  if (!h) {
    memset(res, 0, sizeof *res);
    return 0;
  }
  if (ist_known_unusable(e)) {
    reserve(ctx, 0);
    ist_gpu_unusable(e, res);
    return 1;
  }
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status check = IMGSTAT_OK;
  check = ist_jpeg_check(dec, (int)e->opt.jpeg_check, &err);
  add_time(e, &e->times.check_s, ist_since(&t0));
  if (check != IMGSTAT_OK) {
    reserve(ctx, 0);
    ist_fail_err(res, IMGSTAT_STAGE_LOAD, check, &err);
    return 1;
  }
  memset(&err, 0, sizeof err);
  imgstat_stage *s = stage_get(e, &err);
  if (!s) {
    reserve(ctx, 0);
    ist_fail(res, IMGSTAT_STAGE_GPU,
             err.status ? err.status : IMGSTAT_ERR_NOMEM, "%s",
             ist_reason(&err));
    return 1;
  }
  if (!reserve(ctx, size))
    return -1;
  stage_job *j = calloc(1, sizeof *j);
  unsigned char *copy = j ? malloc(size ? size : 1) : NULL;
  if (!copy) {
    free(j);
    ist_fail(res, IMGSTAT_STAGE_LOAD, IMGSTAT_ERR_NOMEM, "out of memory");
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
    out->ndevices = e->start.started;
    for (int k = 0; k < e->start.started; k++) {
      out->device[k] = e->start.started_device[k];
      out->device_start_s[k] = e->start.ready_s[k];
    }
  }
}
