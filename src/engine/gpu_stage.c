/*
 * The streaming device stage (stage.h): one queue, lanes that take
 * batches from it by pixels, on threads of their own.
 *
 * Under one mutex: the queue (a list in submission order, with its item and
 * pixel counts), the lanes' state and the report's figures. A lane holds
 * the lock only to take a batch; open, run, close and done are called
 * without it, so that done may call back into whatever completes the items
 * (the batch runner's imgstat_task_complete).
 */
#include "stage.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_LANES 2
#define DEFAULT_BATCH_PIXELS (UINT64_C(64) << 20)
#define DEFAULT_BATCH_MAX 128
#define DEFAULT_LINGER_US 2000
#define MAX_LANES 256

typedef struct lane {
  imgstat_stage *s;
  int device, index;
  void *ctx;
  pthread_t thread;
  int started;
} lane;

struct imgstat_stage {
  imgstat_stage_ops ops;
  pthread_mutex_t m;
  pthread_cond_t cv; /* an item was queued, flushed, closing */
  imgstat_stage_item *head, **tail;
  uint64_t queued, queued_pixels;
  int flushed, closing, cancelled;
  int ended;   /* imgstat_stage_end: lanes close once the queue is empty */
  int pending; /* lanes not opened yet */
  int busy;    /* lanes running a batch */
  /* the stage has ended: a lane failed to open, or no device is there;
   * every item finishes with open_err (see stage_over) */
  int dead;
  imgstat_status open_status;
  imgstat_error open_err;
  int nlanes;
  lane *lanes;
  unsigned char *absent; /* per device: its open said it is not there */
  struct timespec t0;
  imgstat_stage_report report;
};

static double seconds_since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) +
         1e-9 * (double)(b.tv_nsec - a->tv_nsec);
}

/* Detaches the whole queue (under the lock). */
static imgstat_stage_item *take_all(imgstat_stage *s) {
  imgstat_stage_item *list = s->head;
  s->head = NULL;
  s->tail = &s->head;
  s->queued = 0;
  s->queued_pixels = 0;
  return list;
}

/* Finishes a detached list with one status (without the lock). */
static void finish_list(imgstat_stage *s, imgstat_stage_item *list,
                        imgstat_status st, int cancelled,
                        const imgstat_error *err) {
  while (list) {
    imgstat_stage_item *next = list->next_;
    list->next_ = NULL;
    s->ops.done(s->ops.ctx, list, st, cancelled, err);
    list = next;
  }
}

/* Whether the queue's head makes a full batch. */
static int batch_full(const imgstat_stage *s) {
  return s->queued >= (uint64_t)s->ops.batch_max ||
         s->queued_pixels >= s->ops.batch_pixels;
}

/* Whether work waits that the lanes running cannot take at once: a whole
 * batch, or items while a lane is running one (under the lock). */
static int more_than_taken(const imgstat_stage *s) {
  return s->head && (batch_full(s) || s->busy > 0);
}

/* Takes a batch off the queue's head into items (under the lock). */
static int take_batch(imgstat_stage *s, imgstat_stage_item **items, int cap) {
  int n = 0;
  uint64_t pixels = 0;
  while (s->head && n < cap) {
    imgstat_stage_item *it = s->head;
    if (n > 0 && pixels + it->pixels > s->ops.batch_pixels)
      break;
    s->head = it->next_;
    it->next_ = NULL;
    pixels += it->pixels;
    items[n++] = it;
  }
  if (!s->head)
    s->tail = &s->head;
  s->queued -= (uint64_t)n;
  s->queued_pixels -= pixels;
  return n;
}

static void wait_until(imgstat_stage *s, const struct timespec *until) {
  pthread_cond_timedwait(&s->cv, &s->m, until);
}

/* The stage's end by its start (under the lock): a lane failed to open,
 * or every lane has settled and none is open (no device was there). One
 * rule for every way a device's start-up fails: the failure becomes the
 * stage's (open_err), every item queued and every one submitted later
 * finishes with it, the lanes not open close without waiting for work and
 * the open ones take nothing more. Nothing waits for a lane that will never
 * come. Returns the queued items, to finish outside the lock (NULL when the
 * stage had ended already). */
static imgstat_stage_item *stage_over(imgstat_stage *s) {
  if (s->dead)
    return NULL;
  s->dead = 1;
  if (s->open_status == IMGSTAT_OK)
    s->open_status = imgstat_error_set(&s->open_err, IMGSTAT_ERR_NODEVICE,
                                       "no device for the device stage");
  pthread_cond_broadcast(&s->cv);
  return take_all(s);
}

/* A lane's open has settled (under the lock): st and ctx are open's
 * answer. Returns the items stage_over hands back, if it ended the stage. */
static imgstat_stage_item *lane_settled(imgstat_stage *s, lane *l,
                                        imgstat_status st,
                                        const imgstat_error *err) {
  s->pending--;
  if (st == IMGSTAT_OK && l->ctx) {
    if (s->report.lanes_open++ == 0)
      s->report.open_s = seconds_since(&s->t0);
  } else if (st == IMGSTAT_OK) {
    s->absent[l->device] = 1; /* its further lanes close unopened */
  } else if (s->open_status == IMGSTAT_OK) {
    s->open_status = st;
    s->open_err = *err;
    if (!s->open_err.message[0])
      imgstat_error_set(&s->open_err, st, "the device stage did not start");
  }
  pthread_cond_broadcast(&s->cv);
  if (st != IMGSTAT_OK || (s->pending == 0 && s->report.lanes_open == 0))
    return stage_over(s);
  return NULL;
}

static void *lane_main(void *arg) {
  lane *l = arg;
  imgstat_stage *s = l->s;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (l->index > 0) {
    /* a device's further lanes open once more waits than the lanes open
     * take: a whole batch, or items while a lane is busy. A run of less
     * than a batch neither waits for their start nor for their end. They
     * close unopened once the stage has ended or their device is not
     * there. */
    pthread_mutex_lock(&s->m);
    while (!more_than_taken(s) && !s->closing && !s->dead && !s->ended &&
           !s->absent[l->device])
      pthread_cond_wait(&s->cv, &s->m);
    int idle = !more_than_taken(s) || s->dead || s->absent[l->device];
    imgstat_stage_item *orphans = NULL;
    if (idle) {
      s->pending--;
      if (s->pending == 0 && s->report.lanes_open == 0)
        orphans = stage_over(s);
    }
    imgstat_status dead_st = s->open_status;
    imgstat_error dead_err = s->open_err;
    pthread_mutex_unlock(&s->m);
    finish_list(s, orphans, dead_st, 0, &dead_err);
    if (idle)
      return NULL;
  }
  l->ctx = NULL;
  imgstat_status st =
      s->ops.open(s->ops.ctx, l->device, l->index, &l->ctx, &err);
  if (st != IMGSTAT_OK)
    l->ctx = NULL;
  pthread_mutex_lock(&s->m);
  imgstat_stage_item *orphans = lane_settled(s, l, st, &err);
  imgstat_status dead_st = s->open_status;
  imgstat_error dead_err = s->open_err;
  pthread_mutex_unlock(&s->m);
  finish_list(s, orphans, dead_st, 0, &dead_err);
  if (st != IMGSTAT_OK || !l->ctx)
    return NULL;

  /* no memory for a batch: batches of one */
  imgstat_stage_item *one[1];
  imgstat_stage_item **items = malloc(sizeof *items * (size_t)s->ops.batch_max);
  int cap = items ? s->ops.batch_max : 1;
  imgstat_stage_item **own = items;
  if (!items)
    items = one;
  pthread_mutex_lock(&s->m);
  for (;;) {
    struct timespec idle0;
    clock_gettime(CLOCK_MONOTONIC, &idle0);
    while (!s->head && !s->closing && !s->ended && !s->dead)
      pthread_cond_wait(&s->cv, &s->m);
    if (!s->head && (s->closing || s->ended || s->dead))
      break;
    /* linger for a fuller batch, unless told the input has paused or
     * ended */
    if (s->ops.linger_us > 0 && !batch_full(s) && !s->flushed && !s->closing &&
        !s->ended) {
      struct timespec until;
      clock_gettime(CLOCK_MONOTONIC, &until);
      until.tv_nsec += (long)s->ops.linger_us * 1000L;
      while (until.tv_nsec >= 1000000000L) {
        until.tv_nsec -= 1000000000L;
        until.tv_sec++;
      }
      while (s->head && !batch_full(s) && !s->flushed && !s->closing &&
             !s->ended) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > until.tv_sec ||
            (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec))
          break;
        wait_until(s, &until);
      }
      if (!s->head)
        continue; /* another lane took them */
    }
    s->report.idle_s += seconds_since(&idle0);
    int n = take_batch(s, items, cap);
    if (n == 0)
      continue;
    s->busy++;
    if (s->head) /* what is left: a lane not open yet may take it */
      pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->m);
    for (int k = 0; k < n; k++)
      items[k]->device = l->device;
    struct timespec r0;
    clock_gettime(CLOCK_MONOTONIC, &r0);
    memset(&err, 0, sizeof err);
    st = s->ops.run(l->ctx, items, n, &err);
    double run_s = seconds_since(&r0);
    if (st != IMGSTAT_OK && !err.message[0])
      imgstat_error_set(&err, st, "the device stage failed");
    for (int k = 0; k < n; k++)
      s->ops.done(s->ops.ctx, items[k], st, 0, &err);
    pthread_mutex_lock(&s->m);
    s->busy--;
    s->report.run_s += run_s;
    s->report.items += (uint64_t)n;
    s->report.batches++;
    if (n > s->report.max_batch)
      s->report.max_batch = n;
  }
  pthread_mutex_unlock(&s->m);
  free(own);
  if (s->ops.close)
    s->ops.close(l->ctx);
  return NULL;
}

imgstat_status imgstat_stage_create(const imgstat_stage_ops *ops,
                                    imgstat_stage **out, imgstat_error *err) {
  if (out)
    *out = NULL;
  if (!out || !ops || !ops->open || !ops->run || !ops->done ||
      ops->devices < 1 || ops->lanes < 0 || ops->batch_max < 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "the stage needs open, run, done and devices");
  imgstat_stage *s = calloc(1, sizeof *s);
  if (!s)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  s->ops = *ops;
  if (s->ops.lanes == 0)
    s->ops.lanes = DEFAULT_LANES;
  if (s->ops.batch_pixels == 0)
    s->ops.batch_pixels = DEFAULT_BATCH_PIXELS;
  if (s->ops.batch_max == 0)
    s->ops.batch_max = DEFAULT_BATCH_MAX;
  if (s->ops.linger_us == 0)
    s->ops.linger_us = DEFAULT_LINGER_US;
  if ((long)s->ops.devices * s->ops.lanes > MAX_LANES) {
    long n = (long)s->ops.devices * s->ops.lanes;
    free(s);
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "%ld lanes (at most %d)", n,
                             MAX_LANES);
  }
  s->nlanes = s->ops.devices * s->ops.lanes;
  s->lanes = calloc((size_t)s->nlanes, sizeof *s->lanes);
  s->absent = calloc((size_t)s->ops.devices, 1);
  pthread_condattr_t ca;
  int ok =
      s->lanes != NULL && s->absent != NULL && pthread_condattr_init(&ca) == 0;
  if (ok) {
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    ok = pthread_cond_init(&s->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (ok && pthread_mutex_init(&s->m, NULL) != 0) {
      pthread_cond_destroy(&s->cv);
      ok = 0;
    }
  }
  if (!ok) {
    free(s->absent);
    free(s->lanes);
    free(s);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  s->tail = &s->head;
  clock_gettime(CLOCK_MONOTONIC, &s->t0);
  s->pending = s->nlanes;
  /* device-major: the first lane of every device first */
  int started = 0;
  pthread_mutex_lock(&s->m);
  for (int k = 0; k < s->nlanes; k++) {
    lane *l = &s->lanes[k];
    l->s = s;
    l->device = k % s->ops.devices;
    l->index = k / s->ops.devices;
    if (pthread_create(&l->thread, NULL, lane_main, l) == 0) {
      l->started = 1;
      started++;
    } else {
      s->pending--;
    }
  }
  pthread_mutex_unlock(&s->m);
  if (started == 0) {
    pthread_mutex_destroy(&s->m);
    pthread_cond_destroy(&s->cv);
    free(s->absent);
    free(s->lanes);
    free(s);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "cannot start the device stage's threads");
  }
  *out = s;
  return IMGSTAT_OK;
}

void imgstat_stage_submit(imgstat_stage *s, imgstat_stage_item *item) {
  if (!s || !item)
    return;
  item->next_ = NULL;
  pthread_mutex_lock(&s->m);
  if (s->dead || s->cancelled || s->ended) {
    int cancelled = s->cancelled;
    int late = !cancelled && !s->dead;
    imgstat_status st = cancelled || late ? IMGSTAT_ERR_ARG : s->open_status;
    imgstat_error e = s->open_err;
    pthread_mutex_unlock(&s->m);
    if (cancelled)
      imgstat_error_set(&e, IMGSTAT_ERR_ARG, "cancelled");
    else if (late) /* the caller's mistake: its lanes may be gone */
      imgstat_error_set(&e, IMGSTAT_ERR_ARG,
                        "an item handed to the device stage after its end");
    s->ops.done(s->ops.ctx, item, st, cancelled, &e);
    return;
  }
  *s->tail = item;
  s->tail = &item->next_;
  s->queued++;
  s->queued_pixels += item->pixels;
  s->flushed = 0;
  if (batch_full(s) || s->queued == 1)
    pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->m);
}

void imgstat_stage_flush(imgstat_stage *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->m);
  s->flushed = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->m);
}

void imgstat_stage_end(imgstat_stage *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->m);
  s->ended = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->m);
}

void imgstat_stage_cancel(imgstat_stage *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->m);
  s->cancelled = 1;
  imgstat_stage_item *list = take_all(s);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->m);
  imgstat_error e;
  memset(&e, 0, sizeof e);
  imgstat_error_set(&e, IMGSTAT_ERR_ARG, "cancelled");
  finish_list(s, list, IMGSTAT_ERR_ARG, 1, &e);
}

void imgstat_stage_destroy(imgstat_stage *s, imgstat_stage_report *report) {
  if (!s) {
    if (report)
      memset(report, 0, sizeof *report);
    return;
  }
  pthread_mutex_lock(&s->m);
  s->closing = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->m);
  for (int k = 0; k < s->nlanes; k++)
    if (s->lanes[k].started)
      pthread_join(s->lanes[k].thread, NULL);
  /* the lanes ran everything (or, all dead, finished it): nothing is left,
   * but nothing may be lost either */
  imgstat_stage_item *left = take_all(s);
  finish_list(s, left, s->open_status, 0, &s->open_err);
  if (report)
    *report = s->report;
  pthread_mutex_destroy(&s->m);
  pthread_cond_destroy(&s->cv);
  free(s->absent);
  free(s->lanes);
  free(s);
}
