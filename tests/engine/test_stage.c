/*
 * The streaming device stage (src/engine/gpu_stage.c) and the batch
 * runner's deferred items (imgstat_task_defer), with a fake decoder in
 * place of nvJPEG: workers "read and check" an item (a value) and hand it
 * to the stage; lanes on 1..3 fake devices take batches by pixels and
 * "decode" each item into a result that depends on the item only. Checked:
 *  - delivery in input order with each item's own result, whatever the
 *    devices, lanes, workers and batch bounds (the results of 1 device x 1
 *    lane equal those of 3 x 2); each item finished exactly once;
 *  - batches within their bounds (pixels, items; an oversized item alone),
 *    and batching actually happens (a batch of more than one item);
 *  - the lanes open on their own threads while items queue (a slow open);
 *    a device's further lanes only when more waits than the open ones take
 *    (a whole batch, or items while a lane is busy);
 *  - device start-up failures end the stage: a lane that fails to open
 *    (the first or a further one, on any device) finishes every item queued
 *    or submitted later with its failure, at once, without the input's end
 *    (no lane left waiting for work); a device open reports as not there
 *    fails nothing; no device there at all: every item fails;
 *  - a batch that fails gives its failure to its items only;
 *  - cancel: queued items finish as cancelled; a cancelled batch run
 *    delivers every item fed, exactly once;
 *  - the end of the input (the runner's drained callback, once, when no
 *    work runs): lanes close by themselves; a later item is refused.
 */
#include "imgstat/batch.h"
#include "imgstat/inputs.h"
#include "imgstat/outputs.h"
#include "stage.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_us(int us) {
  struct timespec t = {us / 1000000, (long)(us % 1000000) * 1000};
  nanosleep(&t, NULL);
}

static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15u;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
  return x ^ (x >> 31);
}

/* The fake decoder's answer for an item: its own, whatever the batch. */
static uint64_t decode_of(uint64_t v) { return mix(v) ^ 0x5a5a; }

/* ---- the fake device ---------------------------------------------------- */

typedef struct fake {
  int open_delay_us;    /* each lane's open takes this long */
  int fail_lanes_below; /* lanes with index < this fail to open (all: 99) */
  int fail_lanes_from;  /* lanes with index >= this fail (0: none) */
  int fail_device;      /* lanes of device fail_device - 1 fail (0: none) */
  int absent_from;      /* devices >= this are not there (-1: all are) */
  uint64_t poison;      /* a batch holding this value fails (0: none) */
  int run_us;           /* each batch's time (0: 200 to 500 us) */
  uint64_t batch_pixels;
  int batch_max;
  atomic_int opened, closed;
  atomic_int batches, max_n, bound_errors, multi;
  atomic_int in_run, overlap; /* batches running at once */
} fake;

typedef struct lane_ctx {
  fake *f;
  int device, lane;
} lane_ctx;

/* What a worker hands the stage, and what the stage hands back. */
typedef struct fake_item {
  imgstat_stage_item si;
  uint64_t value;
  uint64_t result;
  imgstat_status status;
  int cancelled;
  atomic_int finished; /* times done was called */
  imgstat_task_pending *pending;
} fake_item;

static imgstat_status fake_open(void *ctx, int device, int lane, void **out,
                                imgstat_error *err) {
  fake *f = ctx;
  if (device == f->fail_device - 1) /* at once, before the others open */
    return imgstat_error_set(err, IMGSTAT_ERR_DEVICE,
                             "fake device %d: no memory", device);
  sleep_us(f->open_delay_us);
  if (f->absent_from >= 0 && device >= f->absent_from)
    return IMGSTAT_OK; /* not there: no lane context */
  if (lane < f->fail_lanes_below ||
      (f->fail_lanes_from > 0 && lane >= f->fail_lanes_from))
    return imgstat_error_set(err, IMGSTAT_ERR_NODEVICE,
                             "fake device %d lane %d: no engines", device,
                             lane);
  lane_ctx *l = calloc(1, sizeof *l);
  if (!l)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  l->f = f;
  l->device = device;
  l->lane = lane;
  *out = l;
  atomic_fetch_add(&f->opened, 1);
  return IMGSTAT_OK;
}

static imgstat_status fake_run(void *ctx, imgstat_stage_item *const *items,
                               int n, imgstat_error *err) {
  lane_ctx *l = ctx;
  fake *f = l->f;
  if (atomic_fetch_add(&f->in_run, 1) > 0)
    atomic_store(&f->overlap, 1);
  atomic_fetch_add(&f->batches, 1);
  int cur = atomic_load(&f->max_n);
  while (n > cur && !atomic_compare_exchange_weak(&f->max_n, &cur, n))
    ;
  if (n > 1)
    atomic_store(&f->multi, 1);
  uint64_t pixels = 0;
  int poisoned = 0;
  for (int k = 0; k < n; k++) {
    fake_item *it = items[k]->user;
    pixels += items[k]->pixels;
    if (items[k]->device != l->device)
      atomic_fetch_add(&f->bound_errors, 1);
    poisoned |= f->poison && it->value == f->poison;
  }
  if (n > f->batch_max || (n > 1 && pixels > f->batch_pixels))
    atomic_fetch_add(&f->bound_errors, 1);
  sleep_us(f->run_us ? f->run_us : 200 + (int)(pixels % 300));
  atomic_fetch_sub(&f->in_run, 1);
  if (poisoned)
    return imgstat_error_set(err, IMGSTAT_ERR_DEVICE, "fake decode failed");
  for (int k = 0; k < n; k++) {
    fake_item *it = items[k]->user;
    it->result = decode_of(it->value);
  }
  return IMGSTAT_OK;
}

static void fake_close(void *ctx) {
  lane_ctx *l = ctx;
  atomic_fetch_add(&l->f->closed, 1);
  free(l);
}

static void fake_done(void *ctx, imgstat_stage_item *si, imgstat_status st,
                      int cancelled, const imgstat_error *err) {
  (void)ctx;
  (void)err;
  fake_item *it = si->user;
  it->status = st;
  it->cancelled = cancelled;
  atomic_fetch_add(&it->finished, 1);
  imgstat_task_complete(it->pending); /* NULL outside a batch run */
}

static imgstat_stage_ops ops_of(fake *f, int devices, int lanes) {
  imgstat_stage_ops o;
  memset(&o, 0, sizeof o);
  o.ctx = f;
  o.devices = devices;
  o.lanes = lanes;
  o.batch_pixels = f->batch_pixels;
  o.batch_max = f->batch_max;
  o.linger_us = 500;
  o.open = fake_open;
  o.run = fake_run;
  o.close = fake_close;
  o.done = fake_done;
  return o;
}

/* ---- a batch run through the stage -------------------------------------- */

typedef struct run {
  imgstat_stage *stage;
  uint64_t n, fed, delivered;
  uint64_t *results;
  imgstat_status *statuses;
  int order_errors, finish_errors, skipped;
  volatile sig_atomic_t cancel;
  uint64_t cancel_at; /* deliver sets the flag there (UINT64_MAX: never) */
  int end;            /* the runner's drained callback ends the stage */
  atomic_int drained; /* times it was called */
  int works_left;     /* works not yet returned when it was called */
  atomic_int working;
  int closed_before_destroy; /* lanes closed before the stage's destroy */
} run;

static imgstat_status next_of(void *ctx, void **out, imgstat_error *err) {
  run *r = ctx;
  (void)err;
  *out = NULL;
  if (r->fed == r->n)
    return IMGSTAT_OK;
  fake_item *it = calloc(1, sizeof *it);
  if (!it)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  it->value = r->fed + 1;
  it->si.pixels = 1 + mix(r->fed) % 1000; /* 0.5 MP to 12 MP, scaled */
  it->si.user = it;
  r->fed++;
  *out = it;
  return IMGSTAT_OK;
}

static void work_of(void *ctx, imgstat_task *task, void *item, void *result) {
  run *r = ctx;
  fake_item *it = item;
  (void)result;
  atomic_fetch_add(&r->working, 1);
  /* "read and check": some work of its own before the hand-over */
  sleep_us((int)(mix(it->value) % 50));
  if (!imgstat_task_reserve(task, 1)) {
    it->cancelled = 1;
    atomic_store(&it->finished, 1);
  } else {
    it->pending = imgstat_task_defer(task);
    imgstat_stage_submit(r->stage, &it->si);
  }
  atomic_fetch_sub(&r->working, 1);
}

static void drained_of(void *ctx) {
  run *r = ctx;
  atomic_fetch_add(&r->drained, 1);
  r->works_left = atomic_load(&r->working);
  imgstat_stage_end(r->stage);
}

static int deliver_of(void *ctx, uint64_t index, void *item, void *result,
                      int ran) {
  run *r = ctx;
  fake_item *it = item;
  (void)result;
  if (index != r->delivered)
    r->order_errors++;
  r->delivered++;
  if (!ran) {
    r->skipped++;
  } else {
    if (atomic_load(&it->finished) != 1)
      r->finish_errors++;
    r->results[index] = it->cancelled ? 0 : it->result;
    r->statuses[index] = it->status;
  }
  free(it);
  if (index == r->cancel_at)
    r->cancel = 1;
  return 0;
}

static imgstat_status run_with(fake *f, int devices, int lanes, int workers,
                               uint64_t n, uint64_t cancel_at, int end, run *r,
                               imgstat_batch_report *rep) {
  memset(r, 0, sizeof *r);
  r->n = n;
  r->cancel_at = cancel_at;
  r->end = end;
  r->results = calloc(n ? n : 1, sizeof *r->results);
  r->statuses = calloc(n ? n : 1, sizeof *r->statuses);
  imgstat_stage_ops o = ops_of(f, devices, lanes);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st = imgstat_stage_create(&o, &r->stage, &err);
  if (st != IMGSTAT_OK)
    return st;
  imgstat_batch_config c;
  memset(&c, 0, sizeof c);
  c.workers = workers;
  c.budget = UINT64_MAX;
  c.window = 64;
  c.ctx = r;
  c.cancel = &r->cancel;
  c.next = next_of;
  c.work = work_of;
  c.deliver = deliver_of;
  c.drained = end ? drained_of : NULL;
  st = imgstat_batch_run(&c, rep, &err);
  if (end) /* the lanes close by themselves: up to 5 s for them */
    for (int k = 0;
         k < 5000 && atomic_load(&f->closed) < atomic_load(&f->opened); k++)
      sleep_us(1000);
  r->closed_before_destroy = atomic_load(&f->closed);
  imgstat_stage_destroy(r->stage, NULL);
  return st;
}

static imgstat_status run_through(fake *f, int devices, int lanes, int workers,
                                  uint64_t n, uint64_t cancel_at, run *r,
                                  imgstat_batch_report *rep) {
  return run_with(f, devices, lanes, workers, n, cancel_at, 0, r, rep);
}

static void run_free(run *r) {
  free(r->results);
  free(r->statuses);
}

static void fake_init(fake *f) {
  memset(f, 0, sizeof *f);
  f->absent_from = -1;
  f->batch_pixels = 2000;
  f->batch_max = 8;
}

static void test_order_and_results(void) {
  const int shapes[][3] = {{1, 1, 4}, {1, 2, 8}, {3, 2, 8}, {2, 3, 1}};
  uint64_t n = 400;
  uint64_t *first = NULL;
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    fake f;
    fake_init(&f);
    run r;
    imgstat_batch_report rep;
    CU_ASSERT_EQUAL_FATAL(run_through(&f, shapes[s][0], shapes[s][1],
                                      shapes[s][2], n, UINT64_MAX, &r, &rep),
                          IMGSTAT_OK);
    CU_ASSERT_EQUAL(r.delivered, n);
    CU_ASSERT_EQUAL(r.order_errors, 0);
    CU_ASSERT_EQUAL(r.finish_errors, 0);
    CU_ASSERT_EQUAL(r.skipped, 0);
    CU_ASSERT_EQUAL(atomic_load(&f.bound_errors), 0);
    CU_ASSERT(atomic_load(&f.max_n) <= f.batch_max);
    /* the first lane of every device; the others when they found work */
    CU_ASSERT(atomic_load(&f.opened) >= shapes[s][0]);
    CU_ASSERT(atomic_load(&f.opened) <= shapes[s][0] * shapes[s][1]);
    CU_ASSERT_EQUAL(atomic_load(&f.closed), atomic_load(&f.opened));
    for (uint64_t k = 0; k < n; k++) {
      CU_ASSERT_EQUAL(r.statuses[k], IMGSTAT_OK);
      CU_ASSERT_EQUAL(r.results[k], decode_of(k + 1));
    }
    if (!first)
      first = r.results;
    else {
      CU_ASSERT(memcmp(first, r.results, n * sizeof *first) == 0);
      free(r.results);
    }
    free(r.statuses);
  }
  free(first);
}

/* Items submitted straight to a stage, outside a batch run. */
static fake_item *submit_n(imgstat_stage *s, int n, uint64_t pixels) {
  fake_item *items = calloc((size_t)n, sizeof *items);
  for (int k = 0; items && k < n; k++) {
    items[k].value = (uint64_t)k + 1;
    items[k].si.pixels = pixels;
    items[k].si.user = &items[k];
    imgstat_stage_submit(s, &items[k].si);
  }
  return items;
}

static void test_batches(void) {
  fake f;
  fake_init(&f);
  f.open_delay_us = 50000; /* the items queue while the lanes open */
  f.batch_pixels = 1000;
  f.batch_max = 16;
  imgstat_stage_ops o = ops_of(&f, 1, 1);
  o.linger_us = -1;
  imgstat_stage *s = NULL;
  CU_ASSERT_EQUAL_FATAL(imgstat_stage_create(&o, &s, NULL), IMGSTAT_OK);
  /* 100 small items: queued before the lane is open, then 16 per batch */
  fake_item *small = submit_n(s, 100, 10);
  CU_ASSERT_EQUAL(atomic_load(&f.opened), 0);
  /* oversized items ride alone */
  fake_item *big = submit_n(s, 3, 5000);
  imgstat_stage_report rep;
  imgstat_stage_destroy(s, &rep);
  CU_ASSERT_EQUAL(rep.items, 103);
  CU_ASSERT_EQUAL(rep.lanes_open, 1);
  CU_ASSERT(rep.open_s >= 0.04);
  CU_ASSERT_EQUAL(rep.max_batch, 16);
  CU_ASSERT_EQUAL(rep.batches, 7 + 3); /* 6 x 16 + 4, then 3 alone */
  CU_ASSERT_EQUAL(atomic_load(&f.bound_errors), 0);
  for (int k = 0; k < 100; k++) {
    CU_ASSERT_EQUAL(atomic_load(&small[k].finished), 1);
    CU_ASSERT_EQUAL(small[k].result, decode_of((uint64_t)k + 1));
  }
  for (int k = 0; k < 3; k++)
    CU_ASSERT_EQUAL(atomic_load(&big[k].finished), 1);
  free(small);
  free(big);
}

static void test_two_lanes_overlap(void) {
  fake f;
  fake_init(&f);
  f.run_us = 3000;
  imgstat_stage_ops o = ops_of(&f, 1, 2);
  imgstat_stage *s = NULL;
  CU_ASSERT_EQUAL_FATAL(imgstat_stage_create(&o, &s, NULL), IMGSTAT_OK);
  fake_item *items = submit_n(s, 400, 250);
  imgstat_stage_destroy(s, NULL);
  /* two batches in flight at some point */
  CU_ASSERT_EQUAL(atomic_load(&f.overlap), 1);
  for (int k = 0; k < 400; k++)
    CU_ASSERT_EQUAL(atomic_load(&items[k].finished), 1);
  free(items);
}

/* The lanes a 1-device, 3-lane stage opens for n items submitted at once
 * while its first lane opens (20 ms); every item finished once, every
 * lane opened closed. */
static int lanes_opened_for(int n) {
  fake f;
  fake_init(&f);
  f.open_delay_us = 20000;
  f.run_us = 2000;
  imgstat_stage_ops o = ops_of(&f, 1, 3);
  imgstat_stage *s = NULL;
  CU_ASSERT_EQUAL_FATAL(imgstat_stage_create(&o, &s, NULL), IMGSTAT_OK);
  fake_item *items = submit_n(s, n, 10);
  imgstat_stage_destroy(s, NULL);
  CU_ASSERT_EQUAL(atomic_load(&f.closed), atomic_load(&f.opened));
  for (int k = 0; items && k < n; k++)
    CU_ASSERT_EQUAL(atomic_load(&items[k].finished), 1);
  free(items);
  return atomic_load(&f.opened);
}

static void test_lanes_by_queue(void) {
  /* less than a batch (8 items): the first lane alone */
  CU_ASSERT_EQUAL(lanes_opened_for(5), 1);
  /* several batches queued while the first lane opens: the others open */
  CU_ASSERT(lanes_opened_for(64) >= 2);
  /* items arriving while the first lane runs a batch: a second opens */
  fake f;
  fake_init(&f);
  f.run_us = 200000;
  imgstat_stage_ops o = ops_of(&f, 1, 2);
  imgstat_stage *s = NULL;
  CU_ASSERT_EQUAL_FATAL(imgstat_stage_create(&o, &s, NULL), IMGSTAT_OK);
  fake_item *first = submit_n(s, 3, 10);
  for (int k = 0; k < 2000 && atomic_load(&f.batches) == 0; k++)
    sleep_us(1000);
  fake_item *later = submit_n(s, 3, 10);
  imgstat_stage_destroy(s, NULL);
  CU_ASSERT_EQUAL(atomic_load(&f.opened), 2);
  for (int k = 0; first && later && k < 3; k++) {
    CU_ASSERT_EQUAL(atomic_load(&first[k].finished), 1);
    CU_ASSERT_EQUAL(atomic_load(&later[k].finished), 1);
  }
  free(first);
  free(later);
}

static void test_lazy_lanes(void) {
  /* nothing submitted: only the first lane of each device opens */
  fake f;
  fake_init(&f);
  imgstat_stage_ops o = ops_of(&f, 2, 3);
  imgstat_stage *s = NULL;
  CU_ASSERT_EQUAL_FATAL(imgstat_stage_create(&o, &s, NULL), IMGSTAT_OK);
  sleep_us(20000);
  imgstat_stage_report rep;
  imgstat_stage_destroy(s, &rep);
  CU_ASSERT_EQUAL(atomic_load(&f.opened), 2);
  CU_ASSERT_EQUAL(atomic_load(&f.closed), 2);
  CU_ASSERT_EQUAL(rep.lanes_open, 2);
}

/* Waits up to 5 s for every item to be finished; 1 when they all were. */
static int all_finished(const fake_item *items, int n) {
  for (int t = 0; t < 5000; t++) {
    int k = 0;
    while (k < n && atomic_load(&items[k].finished) == 1)
      k++;
    if (k == n)
      return 1;
    sleep_us(1000);
  }
  return 0;
}

/* A stage of devices x lanes given n small items (less than a batch when
 * n is small) and neither flush nor end: every item must be finished by
 * the start-up's failure alone, each once, with `want`. */
static void failed_start_finishes(fake *f, int devices, int lanes, int n,
                                  imgstat_status want) {
  imgstat_stage_ops o = ops_of(f, devices, lanes);
  imgstat_stage *s = NULL;
  CU_ASSERT_EQUAL_FATAL(imgstat_stage_create(&o, &s, NULL), IMGSTAT_OK);
  fake_item *items = submit_n(s, n, 10);
  CU_ASSERT_FATAL(items != NULL);
  CU_ASSERT(all_finished(items, n)); /* before any end: no lane waits */
  for (int k = 0; k < n; k++)
    CU_ASSERT_EQUAL(items[k].status, want);
  fake_item *late = submit_n(s, 1, 10); /* later: at once, the same */
  CU_ASSERT_EQUAL(atomic_load(&late[0].finished), 1);
  CU_ASSERT_EQUAL(late[0].status, want);
  imgstat_stage_destroy(s, NULL);
  for (int k = 0; k < n; k++)
    CU_ASSERT_EQUAL(atomic_load(&items[k].finished), 1);
  CU_ASSERT_EQUAL(atomic_load(&f->closed), atomic_load(&f->opened));
  free(items);
  free(late);
}

static void test_open_failures(void) {
  /* the first lane fails, one item (less than a batch) queued: the device's
   * further lanes do not wait for more work, the item fails now */
  fake f;
  fake_init(&f);
  f.fail_lanes_below = 1;
  failed_start_finishes(&f, 1, 2, 1, IMGSTAT_ERR_NODEVICE);
  CU_ASSERT_EQUAL(atomic_load(&f.opened), 0);
  /* the same with 2 devices x 3 lanes, the open slow */
  fake_init(&f);
  f.fail_lanes_below = 99;
  f.open_delay_us = 20000;
  failed_start_finishes(&f, 2, 3, 3, IMGSTAT_ERR_NODEVICE);
  /* one device of two fails, the other opens: the stage ends all the same
   * (the failure is the run's, not a device quietly left out) */
  fake_init(&f);
  f.fail_device = 2;
  f.open_delay_us = 20000;
  failed_start_finishes(&f, 2, 2, 1, IMGSTAT_ERR_DEVICE);
  /* devices not there are no failure: the others carry everything */
  fake_init(&f);
  f.absent_from = 1;
  run r;
  CU_ASSERT_EQUAL_FATAL(run_through(&f, 3, 2, 4, 100, UINT64_MAX, &r, NULL),
                        IMGSTAT_OK);
  CU_ASSERT(atomic_load(&f.opened) >= 1 && atomic_load(&f.opened) <= 2);
  for (uint64_t k = 0; k < 100; k++) {
    CU_ASSERT_EQUAL(r.statuses[k], IMGSTAT_OK);
    CU_ASSERT_EQUAL(r.results[k], decode_of(k + 1));
  }
  run_free(&r);
  /* no device there at all: every item fails */
  fake_init(&f);
  f.absent_from = 0;
  failed_start_finishes(&f, 2, 2, 2, IMGSTAT_ERR_NODEVICE);
  /* a further lane that fails (opened once work waits): the stage ends;
   * every item finished once, the ones before the failure with results */
  fake_init(&f);
  f.fail_lanes_from = 1;
  CU_ASSERT_EQUAL_FATAL(run_through(&f, 1, 2, 4, 200, UINT64_MAX, &r, NULL),
                        IMGSTAT_OK);
  CU_ASSERT_EQUAL(r.delivered, 200);
  CU_ASSERT_EQUAL(r.finish_errors, 0);
  int failed = 0;
  for (uint64_t k = 0; k < 200; k++) {
    if (r.statuses[k] == IMGSTAT_OK) {
      CU_ASSERT_EQUAL(r.results[k], decode_of(k + 1));
    } else {
      CU_ASSERT_EQUAL(r.statuses[k], IMGSTAT_ERR_NODEVICE);
    }
    failed += r.statuses[k] != IMGSTAT_OK;
  }
  CU_ASSERT(failed > 0);
  run_free(&r);
  /* none opens, the input run through the batch runner: every item
   * finishes with the open failure */
  fake_init(&f);
  f.fail_lanes_below = 99;
  f.open_delay_us = 20000;
  CU_ASSERT_EQUAL_FATAL(run_through(&f, 2, 2, 4, 100, UINT64_MAX, &r, NULL),
                        IMGSTAT_OK);
  CU_ASSERT_EQUAL(r.delivered, 100);
  CU_ASSERT_EQUAL(r.finish_errors, 0);
  for (uint64_t k = 0; k < 100; k++)
    CU_ASSERT_EQUAL(r.statuses[k], IMGSTAT_ERR_NODEVICE);
  run_free(&r);
}

static void test_batch_failure(void) {
  fake f;
  fake_init(&f);
  f.poison = 37;
  run r;
  CU_ASSERT_EQUAL_FATAL(run_through(&f, 1, 2, 4, 200, UINT64_MAX, &r, NULL),
                        IMGSTAT_OK);
  CU_ASSERT_EQUAL(r.statuses[36], IMGSTAT_ERR_DEVICE);
  int failed = 0;
  for (uint64_t k = 0; k < 200; k++) {
    if (r.statuses[k] != IMGSTAT_OK) {
      failed++;
      CU_ASSERT_EQUAL(r.statuses[k], IMGSTAT_ERR_DEVICE);
    } else {
      CU_ASSERT_EQUAL(r.results[k], decode_of(k + 1));
    }
  }
  /* only the poisoned item's batch */
  CU_ASSERT(failed >= 1 && failed <= f.batch_max);
  CU_ASSERT_EQUAL(r.finish_errors, 0);
  run_free(&r);
}

static void test_cancel(void) {
  /* stage.cancel: queued items finish as cancelled, at once */
  fake f;
  fake_init(&f);
  f.open_delay_us = 100000;
  imgstat_stage_ops o = ops_of(&f, 1, 1);
  imgstat_stage *s = NULL;
  CU_ASSERT_EQUAL_FATAL(imgstat_stage_create(&o, &s, NULL), IMGSTAT_OK);
  fake_item *items = submit_n(s, 50, 10);
  imgstat_stage_cancel(s);
  for (int k = 0; k < 50; k++) {
    CU_ASSERT_EQUAL(atomic_load(&items[k].finished), 1);
    CU_ASSERT_EQUAL(items[k].cancelled, 1);
  }
  fake_item *late = submit_n(s, 1, 10); /* after cancel: cancelled too */
  CU_ASSERT_EQUAL(atomic_load(&late[0].finished), 1);
  CU_ASSERT_EQUAL(late[0].cancelled, 1);
  imgstat_stage_destroy(s, NULL);
  free(items);
  free(late);
  /* the batch runner cancelled mid-run: every item fed delivered once */
  fake_init(&f);
  run r;
  imgstat_batch_report rep;
  CU_ASSERT_EQUAL_FATAL(run_through(&f, 1, 2, 8, 5000, 100, &r, &rep),
                        IMGSTAT_OK);
  CU_ASSERT_EQUAL(rep.cancelled, 1);
  CU_ASSERT(r.delivered < 5000);
  CU_ASSERT_EQUAL(r.delivered, rep.fed);
  CU_ASSERT_EQUAL(r.order_errors, 0);
  CU_ASSERT_EQUAL(r.finish_errors, 0);
  run_free(&r);
}

/* The runner's drained callback (once, when no work runs any more) ends
 * the stage: the lanes run what is queued and close before the stage's
 * destroy; an item submitted after the end is refused, not lost. */
static void test_end(void) {
  const int shapes[][3] = {{1, 2, 4}, {2, 2, 8}, {1, 1, 1}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    fake f;
    fake_init(&f);
    run r;
    CU_ASSERT_EQUAL_FATAL(run_with(&f, shapes[s][0], shapes[s][1], shapes[s][2],
                                   300, UINT64_MAX, 1, &r, NULL),
                          IMGSTAT_OK);
    CU_ASSERT_EQUAL(atomic_load(&r.drained), 1);
    CU_ASSERT_EQUAL(r.works_left, 0);
    CU_ASSERT_EQUAL(r.delivered, 300);
    CU_ASSERT_EQUAL(r.order_errors, 0);
    CU_ASSERT_EQUAL(r.finish_errors, 0);
    for (uint64_t k = 0; k < 300; k++) {
      CU_ASSERT_EQUAL(r.statuses[k], IMGSTAT_OK);
      CU_ASSERT_EQUAL(r.results[k], decode_of(k + 1));
    }
    CU_ASSERT(atomic_load(&f.opened) >= 1);
    CU_ASSERT_EQUAL(r.closed_before_destroy, atomic_load(&f.opened));
    run_free(&r);
  }
  /* cancelled half-way: still told once */
  fake f;
  fake_init(&f);
  run r;
  CU_ASSERT_EQUAL_FATAL(run_with(&f, 1, 2, 4, 300, 100, 1, &r, NULL),
                        IMGSTAT_OK);
  CU_ASSERT_EQUAL(atomic_load(&r.drained), 1);
  CU_ASSERT_EQUAL(r.delivered, r.fed);
  CU_ASSERT_EQUAL(r.finish_errors, 0);
  run_free(&r);
  /* straight to a stage: end, then a late item */
  fake_init(&f);
  imgstat_stage_ops o = ops_of(&f, 1, 2);
  imgstat_stage *st = NULL;
  CU_ASSERT_EQUAL_FATAL(imgstat_stage_create(&o, &st, NULL), IMGSTAT_OK);
  fake_item *items = submit_n(st, 50, 100);
  imgstat_stage_end(st);
  fake_item *late = submit_n(st, 1, 100);
  imgstat_stage_destroy(st, NULL);
  for (int k = 0; items && k < 50; k++) {
    CU_ASSERT_EQUAL(atomic_load(&items[k].finished), 1);
    CU_ASSERT_EQUAL(items[k].status, IMGSTAT_OK);
  }
  CU_ASSERT_FATAL(late != NULL);
  CU_ASSERT_EQUAL(atomic_load(&late[0].finished), 1);
  CU_ASSERT_EQUAL(late[0].status, IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(late[0].cancelled, 0);
  free(items);
  free(late);
}

static void test_arguments(void) {
  fake f;
  fake_init(&f);
  imgstat_stage_ops o = ops_of(&f, 1, 1);
  imgstat_stage *s = NULL;
  imgstat_error err;
  o.run = NULL;
  CU_ASSERT_EQUAL(imgstat_stage_create(&o, &s, &err), IMGSTAT_ERR_ARG);
  CU_ASSERT_PTR_NULL(s);
  o = ops_of(&f, 0, 1);
  CU_ASSERT_EQUAL(imgstat_stage_create(&o, &s, &err), IMGSTAT_ERR_ARG);
  o = ops_of(&f, 100, 100);
  CU_ASSERT_EQUAL(imgstat_stage_create(&o, &s, &err), IMGSTAT_ERR_ARG);
  imgstat_stage_submit(NULL, NULL);
  imgstat_stage_flush(NULL);
  imgstat_stage_cancel(NULL);
  imgstat_stage_destroy(NULL, NULL);
  CU_ASSERT_PTR_NULL(imgstat_task_defer(NULL));
  imgstat_task_complete(NULL);
}

static const test_case tests[] = {
    {"device stage", NULL},
    {"input order and each item's own result, any devices and lanes",
     test_order_and_results},
    {"batches by pixels and items; lanes open while items queue", test_batches},
    {"two lanes keep two batches in flight", test_two_lanes_overlap},
    {"further lanes open when there is work", test_lazy_lanes},
    {"further lanes open when more waits than the open lanes take",
     test_lanes_by_queue},
    {"device start-up failures end the stage", test_open_failures},
    {"a failed batch fails its items only", test_batch_failure},
    {"cancel", test_cancel},
    {"the input's end: lanes close by themselves, late items refused",
     test_end},
    {"arguments refused", test_arguments},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
