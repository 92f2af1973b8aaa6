/*
 * The convoy batcher of the one-image JPEG path (engine.h): the workers of
 * imgstat_engine_stats_decoder (--verify with the GPU JPEG decoder: the
 * streaming stage of stage_nvjpeg.c takes every other case) queue their
 * JPEGs on their GPU's decoder; one of them decodes a batch while the
 * others wait for theirs.
 */
#include "engine.h"
#include "io_engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A JPEG waiting for the GPU decoder, on its worker's stack. */
struct jpeg_waiter {
  imgstat_gpu_jpeg_item item;
  imgstat_status status; /* the decoder's own failure (err), else OK */
  imgstat_error err;
  int done;
  struct jpeg_waiter *next;
};

int ist_jpeg_batcher_init(jpeg_batcher *b) {
  memset(b, 0, sizeof *b);
  b->tail = &b->head;
  int ok = pthread_mutex_init(&b->lock, NULL) == 0;
  ok = ok && pthread_cond_init(&b->arrived, NULL) == 0;
  ok = ok && pthread_cond_init(&b->finished, NULL) == 0;
  return ok;
}

void ist_jpeg_batcher_destroy(jpeg_batcher *b) {
  pthread_cond_destroy(&b->finished);
  pthread_cond_destroy(&b->arrived);
  pthread_mutex_destroy(&b->lock);
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
      e && reserve ? ist_jpeg_offered(e, dec, res, &bytes, &size) : NULL;
  if (!h)
    return 0;
  imgstat_image shape =
      ist_image_shape(h->width, h->height, h->channels, h->sample, NULL);
  /* The CPU path's strictness, before nvJPEG sees the file. It runs before
   * the wait for the GPU's start-up (a second or so of CUDA and nvJPEG),
   * which it overlaps; its verdict counts only if the GPU decodes the file. */
  imgstat_error check_err;
  memset(&check_err, 0, sizeof check_err);
  imgstat_status check = IMGSTAT_OK;
  if (!ist_known_unusable(e)) {
    check = ist_jpeg_check(dec, (int)e->opt.jpeg_check, &check_err);
    ist_decide_item(e, &shape, IMGSTAT_WORK_JPEG_DECODE, res);
  }
  if (ist_known_unusable(e)) {
    reserve(ctx, 0);
    ist_gpu_unusable(e, res);
    return 1;
  }
  gpu_slot *g = ist_gpu_for_item(e);
  if (!g || !g->jpeg)
    return ist_jpeg_on_cpu(e, dec, path, req, reserve, ctx, 0, res);
  if (check != IMGSTAT_OK) {
    reserve(ctx, 0);
    ist_fail_err(res, IMGSTAT_STAGE_LOAD, check, &check_err);
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
    r = ist_jpeg_device_item(e, g, &w.item, req, res);
    res->decoder = ist_jpeg_decoder_of(&w.item);
  } else if (w.status != IMGSTAT_OK && !ist_gpu_failed(e, res, &w.err)) {
    r = 1; /* the decoder failed (not the file): the policy's error */
  }
  imgstat_gpu_jpeg_item_free(g->jpeg, &w.item);
  /* a file nvJPEG refused, or a GPU failure that the CPU takes over */
  return r ? 1 : ist_jpeg_on_cpu(e, dec, path, req, reserve, ctx, 1, res);
}
