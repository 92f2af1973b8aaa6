/*
 * The convoy batcher of the valid samples' reductions (engine.h): the
 * workers of masked, labelled and nodata images (item.c, regions_on_gpu)
 * queue their image on their GPU; a leader takes what is queued, up to a
 * batch, and reduces it in one call (imgstat_gpu_valid_regions_batch: one
 * upload into one buffer, one launch, one copy back, one synchronization
 * for them all) while the next batch gathers; the others wait for theirs.
 * No leader waits for more to come: a batch is what queued while the last
 * one ran, so a lone image goes at once. At most kValidLeaders batches run
 * at once (one uploads while the other's kernel runs), each of at most
 * b->max images and kValidBatchBytes bytes of planes, masks and labels (an
 * image larger goes alone). The images are the workers' own, already held
 * (--max-inflight counts them): a batch holds no host memory of its own
 * but its table.
 *
 * IMGSTAT_GPU_VALID_BATCH: the most images a batch (at most 1024); 0, the
 * default: no batches, each image reduced on its own
 * (imgstat_gpu_valid_regions_hist). IMGSTAT_GPU_VALID_LEADERS:
 * the most batches at once (default kValidLeaders, 1 to 16), to measure.
 */
#include "engine.h"
#include "env.h"

#include <stdlib.h>
#include <string.h>

/* 0: each image on its own by default. Measured on an H200 host (16 cores,
 * 2,000 labelled 512 x 512 int16 slices, docs/benchmarks.md): one image a
 * call 0.82 s, batches of up to 64 at two at once 1.05 s (four at once
 * 0.93 s): the workers that wait for a leader's batch leave their cores
 * idle, and one slice's upload, launch and copy back are small beside
 * its read. */
#define kValidBatchDefault 0
#define kValidBatchMost 1024
#define kValidLeaders 2
#define kValidBatchBytes IST_VALID_BATCH_BYTES

/* An image waiting for its reduction, on its worker's stack. */
struct valid_waiter {
  imgstat_gpu_valid_item *item;
  uint64_t bytes; /* its planes, mask and labels */
  int done;
  struct valid_waiter *next;
};

int ist_valid_batcher_init(valid_batcher *b) {
  memset(b, 0, sizeof *b);
  b->tail = &b->head;
  b->max = (int)ist_env_count("IMGSTAT_GPU_VALID_BATCH", kValidBatchDefault, 0,
                              kValidBatchMost);
  b->leaders_max =
      (int)ist_env_count("IMGSTAT_GPU_VALID_LEADERS", kValidLeaders, 1, 16);
  b->run = imgstat_gpu_valid_regions_batch;
  if (pthread_mutex_init(&b->lock, NULL) != 0)
    return 0;
  if (pthread_cond_init(&b->finished, NULL) != 0) {
    pthread_mutex_destroy(&b->lock);
    return 0;
  }
  return 1;
}

void ist_valid_batcher_destroy(valid_batcher *b) {
  pthread_cond_destroy(&b->finished);
  pthread_mutex_destroy(&b->lock);
}

static uint64_t item_bytes(const imgstat_gpu_valid_item *it) {
  const imgstat_image *img = it->img;
  const uint64_t n = (uint64_t)img->width * img->height;
  uint64_t bytes = n * (uint64_t)img->sample * (uint64_t)img->channels;
  if (it->v && it->v->mask)
    bytes += n;
  if (it->nlabels)
    bytes += n * sizeof(uint32_t);
  return bytes;
}

/* Reduces the n waiters from first (their items copied into one array and
 * back), on the leader's thread, without the lock. */
static void run_batch(gpu_slot *g, int kernel, valid_waiter *first, int n) {
  imgstat_gpu_valid_item *items = calloc((size_t)n, sizeof *items);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st =
      items ? IMGSTAT_OK
            : imgstat_error_set(&err, IMGSTAT_ERR_NOMEM, "out of memory");
  valid_waiter *x = first;
  for (int k = 0; k < n && items; k++, x = x->next)
    items[k] = *x->item;
  if (items)
    st = g->vbatch.run(g->gpu, kernel, items, (size_t)n, &err);
  x = first;
  for (int k = 0; k < n; k++, x = x->next) {
    if (st == IMGSTAT_OK) {
      *x->item = items[k];
    } else { /* the call itself failed: the error of every item */
      x->item->status = st;
      x->item->err = err;
      x->item->batched = 0;
    }
  }
  free(items);
}

void ist_valid_regions(gpu_slot *g, int kernel, imgstat_gpu_valid_item *item) {
  valid_batcher *b = &g->vbatch;
  if (b->max == 0) {
    memset(&item->err, 0, sizeof item->err);
    item->batched = 0;
    item->status = imgstat_gpu_valid_regions_hist(
        g->gpu, item->img, item->v, kernel, item->out, item->nodata, item->hist,
        item->nlabels, item->pixels, item->start, item->count, item->lout,
        item->lnodata, item->lhist, &item->err);
    return;
  }
  valid_waiter w;
  memset(&w, 0, sizeof w);
  w.item = item;
  w.bytes = item_bytes(item);
  pthread_mutex_lock(&b->lock);
  *b->tail = &w;
  b->tail = &w.next;
  b->queued++;
  while (!w.done) {
    if (b->leaders >= b->leaders_max || b->queued == 0) {
      pthread_cond_wait(&b->finished, &b->lock);
      continue;
    }
    /* lead: the queue's first images within the bounds */
    b->leaders++;
    valid_waiter *first = b->head, *last = first;
    uint64_t bytes = first->bytes;
    int n = 1;
    while (n < b->max && last->next &&
           bytes + last->next->bytes <= kValidBatchBytes) {
      last = last->next;
      bytes += last->bytes;
      n++;
    }
    b->head = last->next;
    if (!b->head)
      b->tail = &b->head;
    b->queued -= n;
    pthread_mutex_unlock(&b->lock);

    run_batch(g, kernel, first, n);

    pthread_mutex_lock(&b->lock);
    valid_waiter *x = first;
    for (int k = 0; k < n; k++) {
      valid_waiter *next = x->next; /* x may leave once done */
      x->done = 1;
      x = next;
    }
    b->leaders--;
    pthread_cond_broadcast(&b->finished);
  }
  pthread_mutex_unlock(&b->lock);
}
