/*
 * The batch runner (src/engine/batch.c): delivery in input order with random
 * work times under 1, 2 and 8 workers (and one per core), on the caller's
 * thread, with the same results whatever the number; the budget never
 * exceeded (the test keeps its own count of the bytes held), an item larger
 * than the whole budget run alone, no deadlock when later items reach their
 * reservation first; cancelling by a signal (as Ctrl-C would) stops promptly,
 * also an item waiting for budget, and every item fed is still delivered
 * exactly once; a sink that stops the run; a producer that fails; the
 * feeding bounded by the queue and the idle callback while the loop waits.
 */
#include "imgstat/batch.h"
#include "imgstat/inputs.h"
#include "imgstat/outputs.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- a job the tests configure
 * ------------------------------------------------ */

typedef struct item {
  uint64_t value;
  uint64_t bytes;    /* to reserve (0: none) */
  int delay_us;      /* before the reservation */
  int hold_us;       /* after it */
  int release_early; /* give back half before delivery */
} item;

typedef struct result {
  uint64_t index;
  uint64_t value;
  uint64_t held;      /* bytes still reserved at the end of the work */
  int on_caller;      /* the work ran on the caller's thread */
  int refused;        /* the reservation was refused */
  int second_refused; /* a second reservation was refused */
  int saw_cancel;     /* the work saw imgstat_task_cancelled */
  int zero_seen; /* item 0 had asked for its reservation before this grant */
} result;

typedef struct job {
  /* the configuration */
  uint64_t n;
  uint64_t seed;
  int max_delay_us, max_hold_us;
  uint64_t max_bytes;         /* reservations of 1..max_bytes (0: none) */
  uint64_t budget;            /* what the test holds against */
  uint64_t big_at, big_bytes; /* item big_at reserves big_bytes */
  uint64_t fail_at;           /* next fails there (UINT64_MAX: never) */
  uint64_t stop_at;           /* deliver asks to stop there */
  int reserve_twice;
  int wait_for_cancel_at0; /* item 0 works until the run is cancelled */
  int first_delay_us;      /* item 0's delay before its reservation */
  /* what happened */
  uint64_t fed, delivered, skipped;
  uint64_t second_refused; /* items whose second reservation was refused */
  int order_errors, value_errors, thread_errors, zero_errors;
  pthread_t caller;
  atomic_int live_items;
  atomic_ullong held;
  atomic_ullong max_held;
  atomic_int violations;
  atomic_int running, max_running;
  atomic_int holders, max_holders;
  atomic_int refused;
  atomic_int zero_asked; /* item 0 has called imgstat_task_reserve */
  atomic_int asking;     /* works that have called imgstat_task_reserve */
  int zero_seen[8];      /* of the first items, at delivery */
  uint64_t *values;      /* the delivered results, by index (n of them) */
  atomic_ullong started; /* works started */
  uint64_t max_ahead;    /* fed and not started, the most at a next */
  int idle_calls, idle_thread_errors;
} job;

static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15u;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
  return x ^ (x >> 31);
}

/* What the work computes from an item's value (checked at delivery). */
static uint64_t work_of(uint64_t v) { return v * 3 + 1; }

static void sleep_us(int us) {
  struct timespec t = {us / 1000000, (long)(us % 1000000) * 1000};
  nanosleep(&t, NULL);
}

static void atomic_max(atomic_ullong *m, unsigned long long v) {
  unsigned long long cur = atomic_load(m);
  while (v > cur && !atomic_compare_exchange_weak(m, &cur, v))
    ;
}

static void atomic_max_int(atomic_int *m, int v) {
  int cur = atomic_load(m);
  while (v > cur && !atomic_compare_exchange_weak(m, &cur, v))
    ;
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A run that deadlocks fails the test instead of hanging it: every run must
 * end within WATCHDOG_S of its start (valgrind included). */
#define WATCHDOG_S 60
static _Atomic double deadline;
static atomic_int watchdog_stop;
static void *watchdog(void *arg) {
  (void)arg;
  while (!atomic_load(&watchdog_stop)) {
    sleep_us(100000);
    double d = atomic_load(&deadline);
    if (d > 0 && seconds() > d) {
      printf("\n    watchdog: a run went on for %d s: deadlock\n", WATCHDOG_S);
      fflush(stdout);
      _exit(1);
    }
  }
  return NULL;
}

static imgstat_status next_item(void *ctx, void **out, imgstat_error *err) {
  job *j = ctx;
  *out = NULL;
  if (j->fed == j->fail_at)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "the list broke at %d",
                             (int)j->fed);
  if (j->fed == j->n)
    return IMGSTAT_OK;
  uint64_t ahead = j->fed - atomic_load(&j->started);
  if (ahead > j->max_ahead)
    j->max_ahead = ahead;
  item *it = calloc(1, sizeof *it);
  if (!it)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  uint64_t r = mix(j->seed ^ (j->fed * 0x100000001B3u));
  it->value = r;
  if (j->max_delay_us)
    it->delay_us = (int)(mix(r) % (uint64_t)j->max_delay_us);
  if (j->max_hold_us)
    it->hold_us = (int)(mix(r + 1) % (uint64_t)j->max_hold_us);
  if (j->max_bytes)
    it->bytes = 1 + mix(r + 2) % j->max_bytes;
  it->release_early = (mix(r + 3) & 3) == 0;
  if (j->fed == j->big_at)
    it->bytes = j->big_bytes;
  if (j->fed == 0 && j->first_delay_us)
    it->delay_us = j->first_delay_us;
  j->fed++;
  atomic_fetch_add(&j->live_items, 1);
  *out = it;
  return IMGSTAT_OK;
}

static void work(void *ctx, imgstat_task *task, void *vitem, void *vres) {
  job *j = ctx;
  item *it = vitem;
  result *res = vres;
  atomic_fetch_add(&j->started, 1);
  int now = atomic_fetch_add(&j->running, 1) + 1;
  atomic_max_int(&j->max_running, now);
  res->index = imgstat_task_index(task);
  res->on_caller = pthread_equal(pthread_self(), j->caller);
  if (j->wait_for_cancel_at0 && res->index == 0) {
    CU_ASSERT(imgstat_task_reserve(task, it->bytes));
    res->held = it->bytes;
    atomic_fetch_add(&j->held, it->bytes);
    atomic_fetch_add(&j->holders, 1);
    for (int i = 0; i < 5000 && !imgstat_task_cancelled(task); i++)
      sleep_us(1000);
    res->saw_cancel = imgstat_task_cancelled(task);
  } else {
    sleep_us(it->delay_us);
    if (it->bytes) {
      atomic_fetch_add(&j->asking, 1);
      if (res->index == 0)
        atomic_store(&j->zero_asked, 1);
      if (imgstat_task_reserve(task, it->bytes)) {
        res->zero_seen = atomic_load(&j->zero_asked);
        /* The engine counted these bytes before this count does, and
         * uncounts them after delivery, where this count drops them: so
         * this count is never above the engine's. */
        unsigned long long before = atomic_fetch_add(&j->held, it->bytes);
        if (before != 0 && before + it->bytes > j->budget)
          atomic_fetch_add(&j->violations, 1);
        atomic_max(&j->max_held, before + it->bytes);
        int h = atomic_fetch_add(&j->holders, 1) + 1;
        atomic_max_int(&j->max_holders, h);
        res->held = it->bytes;
        sleep_us(it->hold_us);
        if (it->release_early) {
          uint64_t half = it->bytes / 2;
          atomic_fetch_sub(&j->held, half);
          res->held -= half;
          imgstat_task_release(task, half);
        }
        if (j->reserve_twice)
          res->second_refused = !imgstat_task_reserve(task, 1);
      } else {
        res->refused = 1;
        atomic_fetch_add(&j->refused, 1);
      }
    }
  }
  res->value = work_of(it->value);
  atomic_fetch_sub(&j->running, 1);
}

static int deliver(void *ctx, uint64_t index, void *vitem, void *vres,
                   int ran) {
  job *j = ctx;
  item *it = vitem;
  result *res = vres;
  if (index != j->delivered)
    j->order_errors++;
  if (!pthread_equal(pthread_self(), j->caller))
    j->thread_errors++;
  if (ran) {
    if (res->index != index || res->value != work_of(it->value))
      j->value_errors++;
    if (index < j->n && j->values)
      j->values[index] = res->value;
    if (res->second_refused)
      j->second_refused++;
    if (index < 8)
      j->zero_seen[index] = res->zero_seen;
    if (res->held) {
      atomic_fetch_sub(&j->holders, 1);
      atomic_fetch_sub(&j->held, res->held);
    }
  } else {
    j->skipped++;
    static const result zero;
    if (memcmp(res, &zero, sizeof zero) != 0)
      j->zero_errors++;
  }
  free(it);
  atomic_fetch_sub(&j->live_items, 1);
  j->delivered++;
  return index == j->stop_at;
}

static void job_init(job *j, uint64_t n, uint64_t seed) {
  memset(j, 0, sizeof *j);
  j->n = n;
  j->seed = seed;
  j->big_at = UINT64_MAX;
  j->fail_at = UINT64_MAX;
  j->stop_at = UINT64_MAX;
  j->caller = pthread_self();
  j->values = calloc(n ? n : 1, sizeof *j->values);
}

static imgstat_batch_config config_of(job *j, int workers, uint64_t budget,
                                      size_t window) {
  imgstat_batch_config c;
  memset(&c, 0, sizeof c);
  c.workers = workers;
  c.budget = budget;
  c.window = window;
  c.result_size = sizeof(result);
  c.ctx = j;
  c.next = next_item;
  c.work = work;
  c.deliver = deliver;
  j->budget = budget ? budget : imgstat_batch_default_budget(workers);
  atomic_store(&deadline, seconds() + WATCHDOG_S);
  return c;
}

/* The checks every run passes. */
static void check_common(job *j, const imgstat_batch_report *r) {
  CU_ASSERT(j->order_errors == 0);
  CU_ASSERT(j->value_errors == 0);
  CU_ASSERT(j->thread_errors == 0);
  CU_ASSERT(j->zero_errors == 0);
  CU_ASSERT(atomic_load(&j->live_items) == 0); /* each delivered once */
  CU_ASSERT(j->delivered == j->fed);
  CU_ASSERT(r->fed == j->fed);
  CU_ASSERT(r->ran + j->skipped == j->fed);
  CU_ASSERT(atomic_load(&j->violations) == 0);
  CU_ASSERT(atomic_load(&j->held) == 0);
}

/* Runs c, which must succeed, and makes the checks of every run. */
static imgstat_batch_report run_ok(job *j, const imgstat_batch_config *c) {
  imgstat_batch_report r;
  CU_ASSERT(imgstat_batch_run(c, &r, NULL) == IMGSTAT_OK);
  check_common(j, &r);
  return r;
}

/* ---- ordering
 * -------------------------------------------------------------------- */

static void test_order(void) {
  const uint64_t n = 300;
  uint64_t *first = NULL;
  const int workers[] = {1, 2, 8, 0};
  for (size_t w = 0; w < sizeof workers / sizeof *workers; w++) {
    job j;
    job_init(&j, n, 42);
    j.max_delay_us = 800;
    imgstat_batch_config c = config_of(&j, workers[w], 0, 0);
    imgstat_batch_report r;
    imgstat_error err;
    CU_ASSERT(imgstat_batch_run(&c, &r, &err) == IMGSTAT_OK);
    check_common(&j, &r);
    CU_ASSERT(j.delivered == n && r.ran == n && !r.cancelled);
    /* 0: the one core count (tests/cpu/test_cores.c holds it to the mask) */
    int want = workers[w] ? workers[w] : imgstat_cpu_cores();
    CU_ASSERT(r.workers == want);
    /* the values, computed here from the seed */
    for (uint64_t i = 0; i < n; i++)
      CU_ASSERT(j.values[i] == work_of(mix(42 ^ (i * 0x100000001B3u))));
    /* 1: all in the caller's thread; more: in parallel, elsewhere */
    if (workers[w] == 1) {
      CU_ASSERT(atomic_load(&j.max_running) == 1);
    } else if (workers[w] > 1) {
      CU_ASSERT(atomic_load(&j.max_running) > 1);
    }
    if (!first) {
      first = j.values;
    } else {
      CU_ASSERT(memcmp(first, j.values, n * sizeof *first) == 0);
      free(j.values);
    }
  }
  free(first);
}

/* Where the work ran: the caller's thread with 1 worker, never with more. */
static int ran_on_caller;
static int ran_elsewhere;
static void work_where(void *ctx, imgstat_task *task, void *it, void *res) {
  job *j = ctx;
  if (pthread_equal(pthread_self(), j->caller))
    ran_on_caller++; /* only ever the caller's thread writes here */
  else
    __atomic_fetch_add(&ran_elsewhere, 1, __ATOMIC_RELAXED);
  work(ctx, task, it, res);
}

static void test_threads(void) {
  for (int workers = 1; workers <= 3; workers++) {
    job j;
    job_init(&j, 50, 7);
    imgstat_batch_config c = config_of(&j, workers, 0, 0);
    c.work = work_where;
    ran_on_caller = ran_elsewhere = 0;
    run_ok(&j, &c);
    CU_ASSERT(ran_on_caller == (workers == 1 ? 50 : 0));
    CU_ASSERT(ran_elsewhere == (workers == 1 ? 0 : 50));
    free(j.values);
  }
}

static void test_windows(void) {
  const size_t windows[] = {1, 2, 3, 100};
  for (size_t k = 0; k < sizeof windows / sizeof *windows; k++) {
    job j;
    job_init(&j, 120, 9);
    j.max_delay_us = 300;
    j.max_bytes = 400;
    imgstat_batch_config c = config_of(&j, 4, 1000, windows[k]);
    run_ok(&j, &c);
    CU_ASSERT(j.delivered == 120);
    if (windows[k] == 1)
      CU_ASSERT(atomic_load(&j.max_running) == 1);
    free(j.values);
  }
}

/* The feeding bounded by the queue: names fed and not started stay within
 * the bound (plus the works started and not yet counted, at most one a
 * worker) where the window alone lets the whole window be fed at once. */
static void test_queue(void) {
  for (int bounded = 0; bounded < 2; bounded++) {
    job j;
    job_init(&j, 200, 21);
    j.max_delay_us = 500;
    imgstat_batch_config c = config_of(&j, 2, 0, 100);
    c.queue = bounded ? 2 : 0;
    run_ok(&j, &c);
    CU_ASSERT(j.delivered == 200);
    if (bounded) {
      CU_ASSERT(j.max_ahead <= 2 + 2);
    } else {
      CU_ASSERT(j.max_ahead > 50);
    }
    free(j.values);
  }
}

static void on_idle(void *ctx) {
  job *j = ctx;
  j->idle_calls++;
  if (!pthread_equal(pthread_self(), j->caller))
    j->idle_thread_errors++;
}

/* The idle callback: on the caller's thread, about every millisecond while
 * the loop waits (here 200 ms on the first item's work; at least one call
 * in 10 ms asked, for slow machines and valgrind). */
static void test_idle(void) {
  job j;
  job_init(&j, 20, 23);
  j.first_delay_us = 200000;
  j.max_bytes = 10;
  imgstat_batch_config c = config_of(&j, 2, 0, 4);
  c.idle = on_idle;
  run_ok(&j, &c);
  CU_ASSERT(j.delivered == 20);
  CU_ASSERT(j.idle_thread_errors == 0);
  CU_ASSERT(j.idle_calls >= 20);
  CU_ASSERT(j.idle_calls < 2000);
  free(j.values);
}

/* The default: 256 MiB a worker, at least 1 GiB, at most a quarter of the
 * memory (unless that is below the floor); 0 workers: one per core. */
static void test_default_budget(void) {
  const uint64_t mib = UINT64_C(1) << 20;
  uint64_t mem =
      (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t floor = IMGSTAT_ENGINE_DEFAULT_BUDGET;
  CU_ASSERT_EQUAL(imgstat_batch_default_budget(1), floor);
  CU_ASSERT_EQUAL(imgstat_batch_default_budget(4), floor);
  for (int w = 5; w <= 4096; w *= 3) {
    uint64_t want = (uint64_t)w * 256 * mib;
    if (want > mem / 4)
      want = mem / 4;
    if (want < floor)
      want = floor;
    CU_ASSERT_EQUAL(imgstat_batch_default_budget(w), want);
  }
  CU_ASSERT(imgstat_batch_default_budget(4096) <=
            (mem / 4 > floor ? mem / 4 : floor));
  CU_ASSERT_EQUAL(imgstat_batch_default_budget(0),
                  imgstat_batch_default_budget(imgstat_cpu_cores()));
}

/* ---- the budget
 * ------------------------------------------------------------------- */

static void test_budget(void) {
  const int workers[] = {1, 2, 8};
  for (size_t w = 0; w < sizeof workers / sizeof *workers; w++) {
    job j;
    job_init(&j, 400, 1234 + w);
    j.max_delay_us = 300; /* later items often reach their turn first */
    j.max_hold_us = 300;
    j.max_bytes = 1000;
    j.reserve_twice = 1;
    imgstat_batch_config c = config_of(&j, workers[w], 1000, 32);
    imgstat_batch_report r = run_ok(&j, &c);
    CU_ASSERT(j.delivered == 400 && r.ran == 400);
    CU_ASSERT(atomic_load(&j.max_held) <= 1000);
    CU_ASSERT(r.peak_bytes <= 1000 && r.peak_bytes > 0);
    CU_ASSERT(atomic_load(&j.refused) == 0);
    CU_ASSERT(j.second_refused == 400);
    if (workers[w] > 1) /* and still items held budget side by side */
      CU_ASSERT(atomic_load(&j.max_holders) > 1);
    free(j.values);
  }
}

/* Admission in input order: with a bound, item 0 (slow to reach its
 * reservation) is granted first all the same: every later item's grant sees
 * that item 0 had asked before it; without one, later items do not wait for
 * it. */
static void test_admission_order(void) {
  const uint64_t budgets[] = {1000, UINT64_MAX};
  for (size_t b = 0; b < 2; b++) {
    job j;
    job_init(&j, 8, 21);
    j.max_bytes = 10;
    j.first_delay_us = 300000;
    imgstat_batch_config c = config_of(&j, 4, budgets[b], 8);
    run_ok(&j, &c);
    CU_ASSERT(j.delivered == 8);
    if (b == 0) {
      for (int i = 0; i < 8; i++)
        CU_ASSERT(j.zero_seen[i] == 1);
    } else {
      CU_ASSERT(j.zero_seen[1] == 0);
    }
    free(j.values);
  }
}

static void test_budget_second_reservation(void) {
  job j;
  job_init(&j, 20, 5);
  j.max_bytes = 10;
  j.reserve_twice = 1;
  imgstat_batch_config c = config_of(&j, 2, 1000, 0);
  imgstat_batch_report r = run_ok(&j, &c);
  CU_ASSERT(j.second_refused == 20);
  CU_ASSERT(r.peak_bytes <= 1000);
  free(j.values);
}

static void test_oversized(void) {
  const uint64_t big[] = {5000, 1000, UINT64_MAX / 2};
  for (int workers = 1; workers <= 4; workers += 3)
    for (size_t b = 0; b < sizeof big / sizeof *big; b++) {
      job j;
      job_init(&j, 60, 77 + b);
      j.max_delay_us = 200;
      j.max_hold_us = 200;
      j.max_bytes = 300;
      j.big_at = 25;
      j.big_bytes = big[b];
      imgstat_batch_config c = config_of(&j, workers, 1000, 16);
      imgstat_batch_report r;
      CU_ASSERT(imgstat_batch_run(&c, &r, NULL) == IMGSTAT_OK);
      check_common(&j, &r); /* alone: nothing else held beside it */
      CU_ASSERT(j.delivered == 60 && r.ran == 60);
      CU_ASSERT(r.peak_bytes >= big[b]);
      CU_ASSERT(atomic_load(&j.refused) == 0);
      free(j.values);
    }
}

/* ---- cancelling
 * -------------------------------------------------------------------- */

static volatile sig_atomic_t cancel_flag;
static void on_signal(int sig) {
  (void)sig;
  int saved = errno;
  cancel_flag = 1;
  errno = saved;
}

/* A thread that sends SIGALRM to the process after ms, as a Ctrl-C would
 * come: any thread may take it. With a job to wait for, the ms count from
 * the moment one item holds a reservation and another has asked for one
 * (not from the start: under valgrind the workers may not have begun
 * 60 ms in). */
typedef struct alarm_arg {
  int ms;
  job *wait_for;
} alarm_arg;

static void *alarm_thread(void *arg) {
  alarm_arg *a = arg;
  for (int k = 0; a->wait_for && k < 20000 &&
                  !(atomic_load(&a->wait_for->holders) >= 1 &&
                    atomic_load(&a->wait_for->asking) >= 2);
       k++)
    sleep_us(1000);
  sleep_us(a->ms * 1000);
  kill(getpid(), SIGALRM);
  return NULL;
}

static pthread_t arm(alarm_arg *a) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  cancel_flag = 0;
  pthread_t t;
  CU_ASSERT_FATAL(pthread_create(&t, NULL, alarm_thread, a) == 0);
  return t;
}

/* Runs c, cancelled by a signal 60 ms in (wait: 60 ms after an item holds
 * its reservation and another has asked); returns the seconds the run took
 * (the checks of every run and of the cancel made). */
static double run_cancelled(job *j, imgstat_batch_config *c, int wait) {
  c->cancel = &cancel_flag;
  alarm_arg a = {60, wait ? j : NULL};
  double t0 = seconds();
  pthread_t t = arm(&a);
  imgstat_batch_report r;
  CU_ASSERT(imgstat_batch_run(c, &r, NULL) == IMGSTAT_OK);
  double took = seconds() - t0;
  pthread_join(t, NULL);
  check_common(j, &r);
  CU_ASSERT(r.cancelled == 1);
  return took;
}

static void test_cancel(void) {
  const int workers[] = {1, 4};
  for (size_t w = 0; w < 2; w++) {
    job j;
    job_init(&j, 100000, 3); /* 2 ms each: 50 s or more to the end */
    j.max_delay_us = 1;
    j.max_hold_us = 2000;
    j.max_bytes = 100;
    imgstat_batch_config c = config_of(&j, workers[w], 1000, 16);
    double took = run_cancelled(&j, &c, 0);
    CU_ASSERT(j.fed < 100000);
    if (took > 2.0)
      printf("\n    cancel took %.3f s\n", took);
    CU_ASSERT(took < 2.0);
    free(j.values);
  }
}

static void test_cancel_while_waiting(void) {
  job j;
  job_init(&j, 1000, 11);
  j.max_bytes = 50;
  j.big_at = 0;
  j.big_bytes = 100;         /* item 0 takes the whole budget ... */
  j.wait_for_cancel_at0 = 1; /* ... and works until the cancel */
  imgstat_batch_config c = config_of(&j, 4, 100, 8);
  double took = run_cancelled(&j, &c, 1);
  CU_ASSERT(atomic_load(&j.refused) >= 1); /* items 1.. waited, refused */
  CU_ASSERT(j.values[0] != 0);             /* item 0 finished its work */
  CU_ASSERT(took < 2.0);
  free(j.values);
}

/* A run of n items (random delays up to 200 us) on 1 and then 4 workers
 * that ends early: the sink stops at item stop_at, or the producer fails at
 * item fail_at (-1: neither). */
static void run_ending_early(uint64_t n, unsigned seed, int stop_at,
                             int fail_at, size_t window) {
  for (int workers = 1; workers <= 4; workers += 3) {
    job j;
    job_init(&j, n, seed);
    j.max_delay_us = 200;
    if (stop_at >= 0)
      j.stop_at = (uint64_t)stop_at;
    if (fail_at >= 0)
      j.fail_at = (uint64_t)fail_at;
    imgstat_batch_config c = config_of(&j, workers, 0, window);
    imgstat_batch_report r;
    imgstat_error err;
    imgstat_status st = imgstat_batch_run(&c, &r, &err);
    check_common(&j, &r);
    if (fail_at >= 0) {
      CU_ASSERT(st == IMGSTAT_ERR_IO);
      char want[64];
      snprintf(want, sizeof want, "the list broke at %d", fail_at);
      CU_ASSERT(strcmp(err.message, want) == 0);
      CU_ASSERT(j.delivered == (uint64_t)fail_at &&
                r.ran == (uint64_t)fail_at && !r.cancelled);
    } else {
      CU_ASSERT(st == IMGSTAT_OK);
      CU_ASSERT(r.cancelled == 1);
      CU_ASSERT(j.fed >= (uint64_t)stop_at + 1 &&
                j.fed <= (uint64_t)stop_at + 1 + window);
    }
    free(j.values);
  }
}

static void test_deliver_stops(void) { run_ending_early(1000, 13, 20, -1, 8); }

static void test_next_fails(void) { run_ending_early(100, 17, -1, 37, 0); }

static void test_empty_run(void) {
  job j;
  job_init(&j, 0, 1);
  imgstat_batch_config c = config_of(&j, 3, 0, 0);
  imgstat_batch_report r;
  CU_ASSERT(imgstat_batch_run(&c, &r, NULL) == IMGSTAT_OK);
  CU_ASSERT(r.fed == 0 && r.ran == 0 && j.delivered == 0);
  c.result_size = 0; /* no result at all */
  CU_ASSERT(imgstat_batch_run(&c, &r, NULL) == IMGSTAT_OK);
  free(j.values);
}

static void test_arguments(void) {
  job j;
  job_init(&j, 1, 1);
  imgstat_batch_config c = config_of(&j, 2, 0, 0);
  imgstat_error err;
  imgstat_batch_report r;
  CU_ASSERT(imgstat_batch_run(NULL, &r, &err) == IMGSTAT_ERR_ARG);
  c.workers = -1;
  CU_ASSERT(imgstat_batch_run(&c, &r, &err) == IMGSTAT_ERR_ARG);
  c.workers = 100000;
  CU_ASSERT(imgstat_batch_run(&c, &r, &err) == IMGSTAT_ERR_ARG);
  c.workers = 2;
  c.deliver = NULL;
  CU_ASSERT(imgstat_batch_run(&c, &r, &err) == IMGSTAT_ERR_ARG);
  c.deliver = deliver;
  c.window = SIZE_MAX;
  CU_ASSERT(imgstat_batch_run(&c, &r, &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(j.fed == 0); /* nothing was fed */
  CU_ASSERT(imgstat_task_reserve(NULL, 1) == 0);
  CU_ASSERT(imgstat_task_cancelled(NULL) == 0);
  imgstat_task_release(NULL, 1);
  free(j.values);
}

static const test_case tests[] = {
    {"engine", NULL},
    {"order and results under 1, 2, 8 workers and one per core", test_order},
    {"where the work runs", test_threads},
    {"windows", test_windows},
    {"the feeding follows the workers (queue)", test_queue},
    {"the idle callback while the loop waits", test_idle},
    {"the default budget's rule", test_default_budget},
    {"the budget is never exceeded", test_budget},
    {"admission in input order", test_admission_order},
    {"one reservation per item", test_budget_second_reservation},
    {"an item larger than the budget runs alone", test_oversized},
    {"a signal cancels promptly", test_cancel},
    {"a cancel frees an item waiting for budget", test_cancel_while_waiting},
    {"the sink stops the run", test_deliver_stops},
    {"the producer fails", test_next_fails},
    {"no items", test_empty_run},
    {"arguments refused", test_arguments},
    {NULL, NULL}};

int main(void) {
  pthread_t dog;
  if (pthread_create(&dog, NULL, watchdog, NULL) != 0)
    return 1;
  int status = test_main(tests);
  atomic_store(&watchdog_stop, 1);
  pthread_join(dog, NULL);
  return status;
}
