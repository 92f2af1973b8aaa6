/*
 * The valid samples' convoy (src/engine/valid_convoy.c) with a batched call
 * of its own in place of the GPU's: 8 workers queue 40 images each on one
 * GPU's batcher at once. Every image must be reduced exactly once and get
 * its own outcome (the call sets each item's figures from the item's own
 * image, and fails every seventh image alone with a message naming it);
 * batches must hold more than one image (the workers queue while a batch
 * runs), at most the batcher's maximum, and within the bytes' bound
 * (an image larger than the bound alone); at most two batches at once.
 */
#include "engine.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORKERS 8
#define PER 40
#define MAX 5

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_running, g_most_running, g_calls, g_items, g_most, g_bad;
static gpu_slot g_slot;

/* The batched call: each item's count set to its image's height (the
 * image's id), every image of width 13 failing alone. */
static imgstat_status fake_batch(imgstat_gpu *gpu, int kernel,
                                 imgstat_gpu_valid_item *items, size_t n,
                                 imgstat_error *err) {
  (void)gpu;
  (void)kernel;
  (void)err;
  uint64_t bytes = 0;
  for (size_t k = 0; k < n; k++)
    bytes += (uint64_t)items[k].img->width * items[k].img->height;
  pthread_mutex_lock(&g_lock);
  g_calls++;
  g_items += (int)n;
  if ((int)n > g_most)
    g_most = (int)n;
  if (n > MAX || (n > 1 && bytes > IST_VALID_BATCH_BYTES))
    g_bad++;
  g_running++;
  if (g_running > g_most_running)
    g_most_running = g_running;
  pthread_mutex_unlock(&g_lock);
  struct timespec t = {0, 2000000}; /* a batch's time: the others queue */
  nanosleep(&t, NULL);
  for (size_t k = 0; k < n; k++) {
    imgstat_gpu_valid_item *it = &items[k];
    if (it->img->width == 13) {
      it->status = imgstat_error_set(&it->err, IMGSTAT_ERR_DEVICE, "image %u",
                                     it->img->height);
      continue;
    }
    it->out[0].count = it->img->height;
    it->nodata[0] = it->img->height + 1;
    it->status = IMGSTAT_OK;
  }
  pthread_mutex_lock(&g_lock);
  g_running--;
  pthread_mutex_unlock(&g_lock);
  return IMGSTAT_OK;
}

static void *worker(void *arg) {
  const int w = (int)(intptr_t)arg;
  int *wrong = calloc(1, sizeof *wrong);
  for (int i = 0; i < PER; i++) {
    const uint32_t id = (uint32_t)(w * PER + i + 1);
    imgstat_image img;
    memset(&img, 0, sizeof img);
    /* every seventh image fails; one image of each worker larger than the
     * bytes' bound (goes alone) */
    img.width = id % 7 == 0 ? 13 : i == 3 ? 300u << 20 : 10;
    img.height = id;
    img.channels = 1;
    img.sample = IMGSTAT_U8;
    imgstat_partial out;
    uint64_t nodata = 0;
    memset(&out, 0, sizeof out);
    imgstat_gpu_valid_item item;
    memset(&item, 0, sizeof item);
    item.img = &img;
    item.out = &out;
    item.nodata = &nodata;
    ist_valid_regions(&g_slot, 0, &item);
    char want[64];
    snprintf(want, sizeof want, "image %u", id);
    if (id % 7 == 0) {
      if (item.status != IMGSTAT_ERR_DEVICE ||
          strcmp(item.err.message, want) != 0 || out.count != 0)
        (*wrong)++;
    } else if (item.status != IMGSTAT_OK || out.count != id ||
               nodata != (uint64_t)id + 1 || item.err.message[0]) {
      (*wrong)++;
    }
  }
  return wrong;
}

static void test_convoy(void) {
  memset(&g_slot, 0, sizeof g_slot);
  CU_ASSERT_FATAL(ist_valid_batcher_init(&g_slot.vbatch));
  g_slot.vbatch.run = fake_batch;
  g_slot.vbatch.max = MAX;
  pthread_t t[WORKERS];
  for (int w = 0; w < WORKERS; w++)
    CU_ASSERT_FATAL(pthread_create(&t[w], NULL, worker, (void *)(intptr_t)w) ==
                    0);
  int wrong = 0;
  for (int w = 0; w < WORKERS; w++) {
    void *r = NULL;
    pthread_join(t[w], &r);
    wrong += r ? *(int *)r : 1;
    free(r);
  }
  ist_valid_batcher_destroy(&g_slot.vbatch);
  printf("\n  %d images in %d batches, at most %d a batch, %d at once\n",
         g_items, g_calls, g_most, g_most_running);
  CU_ASSERT_EQUAL(wrong, 0);
  CU_ASSERT_EQUAL(g_items, WORKERS * PER);
  CU_ASSERT(g_most > 1);
  CU_ASSERT(g_most <= MAX);
  CU_ASSERT_EQUAL(g_bad, 0);
  CU_ASSERT(g_most_running <= 2);
}

static const test_case tests[] = {
    {"the valid samples' convoy", NULL},
    {"workers' images in batches, each its own outcome", test_convoy},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
