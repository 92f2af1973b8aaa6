/*
 * The batch runner: an ordered pool of worker threads (imgstat/batch.h).
 *
 * The items fed and not yet delivered live in a ring of `window` slots,
 * indexed by their place in the order. Under one mutex:
 *  - the caller's thread feeds items (next) while the ring has room, and
 *    delivers the slot at `head` as soon as its work is done;
 *  - workers start the queued items in order (next_start), one each;
 *  - admission to the budget goes in order too: `admit` is the first item
 *    that has neither reserved nor finished its work, and only it may be
 *    granted a reservation. So an item waiting for budget never waits on a
 *    later one (which could only release at its delivery, after this one's):
 *    whatever holds the budget comes earlier and is delivered first.
 * With one worker everything runs in the calling thread, one item at a
 * time, through the same slots.
 *
 * Cancelling (the caller's flag, a nonzero deliver) stops the feeding and
 * marks the queued items skipped; running items finish (their reservations
 * are refused) and everything fed is delivered in order.
 *
 * A deferred item (imgstat_task_defer) leaves its worker when its work
 * returns and waits, in state SLOT_DEFERRED, for imgstat_task_complete
 * from whatever thread finishes it (the GPU stage's); it keeps its slot and
 * its reservation until it is delivered, so the window and the budget bound
 * the deferred items too.
 */
#include "imgstat/batch.h"
#include "imgstat/inputs.h"
#include "imgstat/outputs.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How often waits look at the caller's cancel flag. */
#define POLL_NS (10 * 1000 * 1000)
/* How often the caller's loop calls its idle callback while it waits. */
#define IDLE_NS (1000 * 1000)
/* More threads than this are refused: a mistake, not a machine. */
#define MAX_WORKERS 4096

enum {
  SLOT_EMPTY,
  SLOT_QUEUED,
  SLOT_RUNNING,
  SLOT_DEFERRED, /* the work returned; the result comes later */
  SLOT_DONE,
  SLOT_SKIPPED
};

typedef struct engine engine;

typedef struct slot {
  engine *e;
  int state;
  int deferred;  /* imgstat_task_defer was called */
  int completed; /* and imgstat_task_complete since */
  int admitted;  /* has reserved, or is done: the turn has passed it */
  int reserved;  /* imgstat_task_reserve was called */
  uint64_t held;
  void *item;
  unsigned char *result;
} slot;

struct engine {
  const imgstat_batch_config *cfg;
  pthread_mutex_t m;
  pthread_cond_t work_cv;  /* workers: an item is queued, or shut down */
  pthread_cond_t main_cv;  /* the caller: an item is done */
  pthread_cond_t admit_cv; /* reservations: the turn moved, bytes freed */
  slot *slots;
  size_t window;
  size_t result_stride;
  unsigned char *results;
  uint64_t head, fed, next_start, admit;
  uint64_t budget, in_flight, peak, ran;
  uint64_t wakes; /* wake_main's calls */
  int eof, shutdown, inline_mode;
  int running; /* works running now */
  int drained; /* cfg->drained was called */
  atomic_int cancelled;
};

struct imgstat_task {
  engine *e;
  uint64_t index;
  slot *slot;
};

static slot *slot_of(engine *e, uint64_t index) {
  return &e->slots[index % e->window];
}

static int flag_set(const engine *e) {
  return e->cfg->cancel && *e->cfg->cancel;
}

/* Waits on cv, for ns at most (0: until signalled). */
static void wait_for(engine *e, pthread_cond_t *cv, long ns) {
  if (ns == 0) {
    pthread_cond_wait(cv, &e->m);
    return;
  }
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_nsec += ns;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_nsec -= 1000000000L;
    t.tv_sec++;
  }
  pthread_cond_timedwait(cv, &e->m, &t);
}

/* Waits on cv, for POLL_NS at most when there is a cancel flag to watch. */
static void wait_on(engine *e, pthread_cond_t *cv) {
  wait_for(e, cv, e->cfg->cancel ? POLL_NS : 0);
}

/* Wakes the caller's loop (the lock held); wakes counts them, so that a
 * loop back from its idle callback does not wait for one it missed. */
static void wake_main(engine *e) {
  e->wakes++;
  pthread_cond_broadcast(&e->main_cv);
}

/* The turn of admission passes the items that have reserved or are done. */
static void advance_turn(engine *e) {
  while (e->admit < e->fed && slot_of(e, e->admit)->admitted)
    e->admit++;
  pthread_cond_broadcast(&e->admit_cv);
}

static void pass_turn(engine *e, slot *s) {
  s->admitted = 1;
  advance_turn(e);
}

static void cancel_locked(engine *e) {
  if (atomic_load(&e->cancelled))
    return;
  atomic_store(&e->cancelled, 1);
  for (uint64_t i = e->next_start; i < e->fed; i++) {
    slot *s = slot_of(e, i);
    s->state = SLOT_SKIPPED;
    s->admitted = 1;
  }
  e->next_start = e->fed;
  advance_turn(e);
  pthread_cond_broadcast(&e->work_cv);
  wake_main(e);
}

/* Tells the caller, once, that no work will start or run any more: the
 * feeding has ended (or the run was cancelled) and every work started has
 * returned (deferred items may still be pending). The lock is held on entry
 * and on return, not during the callback. */
static void tell_drained(engine *e) {
  if (!e->cfg->drained || e->drained || e->running > 0 ||
      e->next_start != e->fed || !(e->eof || atomic_load(&e->cancelled)))
    return;
  e->drained = 1;
  pthread_mutex_unlock(&e->m);
  e->cfg->drained(e->cfg->ctx);
  pthread_mutex_lock(&e->m);
}

/* Starts the next queued item and runs its work (the lock is held on entry
 * and on return, not during the work). */
static void run_one(engine *e) {
  uint64_t i = e->next_start++;
  slot *s = slot_of(e, i);
  s->state = SLOT_RUNNING;
  e->running++;
  if (e->cfg->queue) /* room to feed: the caller may be waiting for it */
    wake_main(e);
  pthread_mutex_unlock(&e->m);
  imgstat_task task = {e, i, s};
  e->cfg->work(e->cfg->ctx, &task, s->item, s->result);
  pthread_mutex_lock(&e->m);
  s->state = s->deferred && !s->completed ? SLOT_DEFERRED : SLOT_DONE;
  e->ran++;
  e->running--;
  pass_turn(e, s);
  wake_main(e);
  tell_drained(e);
}

static void *worker(void *arg) {
  engine *e = arg;
  pthread_mutex_lock(&e->m);
  for (;;) {
    while (!e->shutdown && e->next_start == e->fed)
      pthread_cond_wait(&e->work_cv, &e->m);
    if (e->shutdown)
      break;
    run_one(e);
  }
  pthread_mutex_unlock(&e->m);
  return NULL;
}

uint64_t imgstat_task_index(const imgstat_task *task) {
  return task ? task->index : 0;
}

int imgstat_task_cancelled(const imgstat_task *task) {
  return task && (atomic_load(&task->e->cancelled) || flag_set(task->e));
}

int imgstat_task_reserve(imgstat_task *task, uint64_t bytes) {
  if (!task)
    return 0;
  engine *e = task->e;
  slot *s = task->slot;
  int granted = 0;
  pthread_mutex_lock(&e->m);
  if (!s->reserved) {
    s->reserved = 1;
    while (!atomic_load(&e->cancelled)) {
      if (flag_set(e)) {
        cancel_locked(e);
        break;
      }
      /* no bound: nothing to wait for, in any order */
      if ((e->admit == task->index || e->budget == UINT64_MAX) &&
          (e->in_flight == 0 ||
           (e->in_flight <= e->budget && bytes <= e->budget - e->in_flight))) {
        e->in_flight += bytes;
        s->held += bytes;
        if (e->in_flight > e->peak)
          e->peak = e->in_flight;
        pass_turn(e, s);
        granted = 1;
        break;
      }
      wait_on(e, &e->admit_cv);
    }
  }
  pthread_mutex_unlock(&e->m);
  return granted;
}

imgstat_task_pending *imgstat_task_defer(imgstat_task *task) {
  if (!task)
    return NULL;
  pthread_mutex_lock(&task->e->m);
  task->slot->deferred = 1;
  pthread_mutex_unlock(&task->e->m);
  return (imgstat_task_pending *)task->slot;
}

void imgstat_task_complete(imgstat_task_pending *pending) {
  slot *s = (slot *)pending;
  if (!s)
    return;
  engine *e = s->e;
  pthread_mutex_lock(&e->m);
  s->completed = 1;
  if (s->state == SLOT_DEFERRED) {
    s->state = SLOT_DONE;
    wake_main(e);
  }
  pthread_mutex_unlock(&e->m);
}

void imgstat_task_release(imgstat_task *task, uint64_t bytes) {
  if (!task)
    return;
  engine *e = task->e;
  pthread_mutex_lock(&e->m);
  uint64_t b = bytes < task->slot->held ? bytes : task->slot->held;
  task->slot->held -= b;
  e->in_flight -= b;
  pthread_cond_broadcast(&e->admit_cv);
  pthread_mutex_unlock(&e->m);
}

static int online_cores(void) {
  int n = imgstat_cpu_cores();
  return n > MAX_WORKERS ? MAX_WORKERS : n;
}

uint64_t imgstat_batch_default_budget(int workers) {
  if (workers <= 0)
    workers = online_cores();
  uint64_t b = IMGSTAT_ENGINE_BUDGET_PER_WORKER * (uint64_t)workers;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && b > (uint64_t)pages * (uint64_t)page / 4)
    b = (uint64_t)pages * (uint64_t)page / 4;
  return b > IMGSTAT_ENGINE_DEFAULT_BUDGET ? b : IMGSTAT_ENGINE_DEFAULT_BUDGET;
}

/* The caller's loop: feed, deliver, and (inline) work. */
static imgstat_status main_loop(engine *e, imgstat_error *err) {
  const imgstat_batch_config *cfg = e->cfg;
  imgstat_status status = IMGSTAT_OK;
  size_t limit = e->inline_mode ? 1 : e->window;
  pthread_mutex_lock(&e->m);
  for (;;) {
    if (flag_set(e))
      cancel_locked(e);
    tell_drained(e);
    if (e->head < e->fed) {
      slot *s = slot_of(e, e->head);
      if (s->state == SLOT_DONE || s->state == SLOT_SKIPPED) {
        int ran = s->state == SLOT_DONE;
        uint64_t index = e->head;
        pthread_mutex_unlock(&e->m);
        int stop = cfg->deliver(cfg->ctx, index, s->item, s->result, ran);
        pthread_mutex_lock(&e->m);
        e->in_flight -= s->held;
        s->held = 0;
        s->item = NULL;
        s->state = SLOT_EMPTY;
        e->head++;
        pthread_cond_broadcast(&e->admit_cv);
        if (stop)
          cancel_locked(e);
        continue;
      }
    }
    if (!e->eof && !atomic_load(&e->cancelled) && e->fed - e->head < limit &&
        (!cfg->queue || e->inline_mode ||
         e->fed - e->next_start < cfg->queue)) {
      void *item = NULL;
      pthread_mutex_unlock(&e->m);
      imgstat_status s = cfg->next(cfg->ctx, &item, err);
      pthread_mutex_lock(&e->m);
      if (s != IMGSTAT_OK) {
        status = s;
        e->eof = 1;
      } else if (!item) {
        e->eof = 1;
      } else {
        slot *sl = slot_of(e, e->fed);
        sl->state = SLOT_QUEUED;
        sl->deferred = 0;
        sl->completed = 0;
        sl->admitted = 0;
        sl->reserved = 0;
        sl->held = 0;
        sl->item = item;
        if (e->result_stride)
          memset(sl->result, 0, cfg->result_size);
        e->fed++;
        pthread_cond_signal(&e->work_cv);
      }
      continue;
    }
    if (e->inline_mode && e->next_start < e->fed) {
      run_one(e);
      continue;
    }
    if ((e->eof || atomic_load(&e->cancelled)) && e->head == e->fed)
      break;
    if (cfg->idle) {
      uint64_t wakes = e->wakes;
      pthread_mutex_unlock(&e->m);
      cfg->idle(cfg->ctx);
      pthread_mutex_lock(&e->m);
      if (e->wakes == wakes)
        wait_for(e, &e->main_cv, IDLE_NS);
    } else {
      wait_on(e, &e->main_cv);
    }
  }
  e->shutdown = 1;
  pthread_cond_broadcast(&e->work_cv);
  pthread_mutex_unlock(&e->m);
  return status;
}

imgstat_status imgstat_batch_run(const imgstat_batch_config *cfg,
                                 imgstat_batch_report *report,
                                 imgstat_error *err) {
  if (report)
    memset(report, 0, sizeof *report);
  if (!cfg || !cfg->next || !cfg->work || !cfg->deliver)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "the engine needs next, work and deliver");
  if (cfg->workers < 0 || cfg->workers > MAX_WORKERS)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "%d worker threads: give 0 (one per core) to %d",
                             cfg->workers, MAX_WORKERS);
  int workers = cfg->workers ? cfg->workers : online_cores();

  engine *e = calloc(1, sizeof *e);
  if (!e)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory starting the engine");
  e->cfg = cfg;
  e->budget = cfg->budget ? cfg->budget : imgstat_batch_default_budget(workers);
  e->inline_mode = workers == 1;
  e->window = cfg->window ? cfg->window : (size_t)4 * (size_t)workers;
  if (e->inline_mode)
    e->window = 1;
  const size_t align = alignof(max_align_t);
  e->result_stride = (cfg->result_size + align - 1) / align * align;
  if (e->result_stride < cfg->result_size ||
      (e->result_stride && e->window > SIZE_MAX / e->result_stride) ||
      e->window > SIZE_MAX / sizeof(slot)) {
    size_t window = e->window;
    free(e);
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "window of %zu results of %zu bytes is too large",
                             window, cfg->result_size);
  }
  e->slots = calloc(e->window, sizeof(slot));
  e->results = calloc(e->result_stride ? e->window : 1,
                      e->result_stride ? e->result_stride : 1);
  pthread_t *threads = NULL;
  if (!e->inline_mode)
    threads = calloc((size_t)workers, sizeof *threads);
  if (!e->slots || !e->results || (!e->inline_mode && !threads)) {
    free(e->slots);
    free(e->results);
    free(threads);
    free(e);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory starting the engine");
  }
  for (size_t i = 0; i < e->window; i++) {
    e->slots[i].e = e;
    e->slots[i].result = e->results + i * e->result_stride;
  }

  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&e->m, NULL);
  pthread_cond_init(&e->work_cv, &ca);
  pthread_cond_init(&e->main_cv, &ca);
  pthread_cond_init(&e->admit_cv, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&e->cancelled, 0);

  int started = 0;
  if (!e->inline_mode) {
    while (started < workers &&
           pthread_create(&threads[started], NULL, worker, e) == 0)
      started++;
    /* Fewer threads than asked is still a run; none: the calling thread. */
    if (started == 0)
      e->inline_mode = 1;
  }
  imgstat_status s = main_loop(e, err);
  for (int i = 0; i < started; i++)
    pthread_join(threads[i], NULL);

  if (report) {
    report->workers = e->inline_mode ? 1 : started;
    report->fed = e->fed;
    report->ran = e->ran;
    report->peak_bytes = e->peak;
    report->cancelled = atomic_load(&e->cancelled);
  }
  pthread_cond_destroy(&e->work_cv);
  pthread_cond_destroy(&e->main_cv);
  pthread_cond_destroy(&e->admit_cv);
  pthread_mutex_destroy(&e->m);
  free(threads);
  free(e->slots);
  free(e->results);
  free(e);
  return s;
}
