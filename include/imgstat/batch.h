/*
 * imgstat: the batch runner (src/engine/batch.c, decode.c): an ordered pool
 * of worker threads. Items are fed in order on the caller's thread, worked
 * on by any worker, and handed back on the caller's thread in the order
 * they were fed, each as soon as it is next in line; the memory the items
 * hold at once stays under a budget.
 *
 * Nothing here prints, exits or aborts: functions that can fail return an
 * imgstat_status and fill a caller-owned imgstat_error.
 */
#ifndef IMGSTAT_BATCH_H
#define IMGSTAT_BATCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "imgstat/imgstat.h"
#include "imgstat/inputs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the batch runner -----------------------------------------------------
 */

/* The budget when the configuration gives none: bytes reserved by the items
 * in flight at once (decoded images, mostly): IMGSTAT_ENGINE_BUDGET_PER_WORKER
 * for each worker, at least IMGSTAT_ENGINE_DEFAULT_BUDGET, and no more than a
 * quarter of the physical memory unless that is below the floor. */
#define IMGSTAT_ENGINE_DEFAULT_BUDGET (UINT64_C(1) << 30)
#define IMGSTAT_ENGINE_BUDGET_PER_WORKER (UINT64_C(256) << 20)
/* That default for a run of `workers` workers (0: one per core). */
uint64_t imgstat_batch_default_budget(int workers);

/* extra_per_sample of imgstat_task_decode: as many bytes as the input's
 * samples have (an output of the input's depth). */
#define IMGSTAT_TASK_EXTRA_AS_INPUT UINT32_MAX

/* The item a worker is working on, for the work callback. */
typedef struct imgstat_task imgstat_task;

/* The item's place in the order, from 0. */
uint64_t imgstat_task_index(const imgstat_task *task);

/*
 * Reserves bytes of the budget for the item, before its big allocation (a
 * decoded image, whose size its header gives); they are released when the
 * item has been delivered, or earlier by imgstat_task_release. Blocks until
 *  - every earlier item has reserved its share or finished its work
 *    (admission is in input order, so that an item holding the budget never
 *    waits for a later one: no deadlock), and
 *  - the bytes fit under the budget with everything in flight, or nothing
 *    is in flight: an item larger than the whole budget runs alone.
 * Returns 1 when granted; 0 when the run is cancelled (nothing reserved:
 * the work should give up) or when the item has reserved before (one
 * reservation per item).
 * Until an item reserves or its work returns, later items wait for their
 * turn: work that will hold nothing (e.g. an input that failed to open) may
 * reserve 0 bytes at once to let them through early. With no bound
 * (UINT64_MAX) there is no turn to wait for.
 */
int imgstat_task_reserve(imgstat_task *task, uint64_t bytes);

/*
 * Deferred results: work that hands its item to another stage (the GPU
 * stage, imgstat_stage.h) calls imgstat_task_defer before it returns; the
 * worker is then free for the next item, and the item is delivered (in its
 * place in the order) once imgstat_task_complete has been called, from any
 * thread, after the result has been written. The item keeps its slot of
 * the window and its reservation until its delivery, so both bound the
 * items waiting in the other stage. The handle is valid until
 * imgstat_task_complete, which must be called exactly once per defer, also
 * when the run is cancelled (the run waits for it). Completing before the
 * work returns is allowed. NULL task: NULL; complete(NULL): no-op.
 */
typedef struct imgstat_task_pending imgstat_task_pending;
imgstat_task_pending *imgstat_task_defer(imgstat_task *task);
void imgstat_task_complete(imgstat_task_pending *pending);

/* Gives back up to bytes of the item's reservation before its delivery
 * (e.g. when the work has freed the image and the result holds figures
 * only). */
void imgstat_task_release(imgstat_task *task, uint64_t bytes);

/* Whether the run is being cancelled: long work may poll it and give up. */
int imgstat_task_cancelled(const imgstat_task *task);

/*
 * Opens a decoder on one input for the task's work (its header read; nothing
 * reserved): standard input by /dev/stdin, a file by its path. Waiting for
 * the bytes of an input that can be read only once (a FIFO with no writer
 * yet, a pipe) ends when the run is cancelled: IMGSTAT_ERR_ARG with
 * *cancelled set to 1. An error item fails with its own status and message.
 */
imgstat_status imgstat_task_open(imgstat_task *task, const imgstat_input *in,
                                 const imgstat_load_options *load,
                                 imgstat_decoder **d, int *cancelled,
                                 imgstat_error *err);

/*
 * Decodes one input for the task's work, within the budget: reads its header
 * (imgstat_task_open), reserves the decoded size plus extra_per_sample bytes
 * for each of its samples (pixels x channels: what the work will allocate
 * beside the image, e.g. an output image) with imgstat_task_reserve, and
 * decodes
 * the pixels into *img (allocated here; free it with imgstat_image_free).
 * An input that fails before the reservation reserves 0 bytes, so that
 * later items go on. Returns IMGSTAT_OK, a failure of the input (err says
 * why), or IMGSTAT_ERR_ARG with *cancelled set to 1 when the run was
 * cancelled before the reservation (nothing decoded). *reserved receives
 * the bytes reserved (give them back with imgstat_task_release when done).
 */
imgstat_status imgstat_task_decode(imgstat_task *task, const imgstat_input *in,
                                   const imgstat_load_options *load,
                                   uint32_t extra_per_sample,
                                   imgstat_image *img, uint64_t *reserved,
                                   int *cancelled, imgstat_error *err);

typedef struct imgstat_batch_config {
  /* Worker threads: 0 is one per online core; 1 runs everything in the
   * calling thread (no thread is started). */
  int workers;
  /* Bytes that the items' reservations may hold at once; 0 is
   * the default above (IMGSTAT_ENGINE_DEFAULT_BUDGET), UINT64_MAX no bound. */
  uint64_t budget;
  /* Items fed and not yet delivered, at most (results waiting for an
   * earlier one included); 0 is 4 per worker. */
  size_t window;
  /* Bytes of one result; every result starts zeroed. */
  size_t result_size;
  /* Cancels the run when it becomes nonzero (a SIGINT handler may set it);
   * NULL: none. The runner looks at it at least every 20 ms while it
   * waits. */
  const volatile sig_atomic_t *cancel;
  /* Given to every callback. */
  void *ctx;
  /* Caller's thread: the next item in order, *item NULL at the end. A
   * failure stops the feeding; the run then returns it after the items fed
   * so far have been delivered. */
  imgstat_status (*next)(void *ctx, void **item, imgstat_error *err);
  /* Any worker: the work on one item, writing its result. */
  void (*work)(void *ctx, imgstat_task *task, void *item, void *result);
  /* Caller's thread, in input order, exactly once per item fed: ran is 1
   * when the work ran, 0 when a cancel came before it started (result is
   * then all zero). The callback owns item and what result holds; after it
   * returns, the result's memory is reused and the item's reservation
   * released. A nonzero return cancels the run (e.g. output failed). */
  int (*deliver)(void *ctx, uint64_t index, void *item, void *result, int ran);
  /* May be NULL. Called once, on whichever thread sees it first (not
   * under the runner's lock), when no work will run any more: next gave its
   * last item (or failed, or the run was cancelled) and every work started
   * has returned. Items deferred (imgstat_task_defer) may still be pending:
   * e.g. the moment to tell what completes them that no more will come. */
  void (*drained)(void *ctx);
  /* Items fed and not yet started by a worker, at most; 0: no bound but
   * the window. Names are cheap to feed and a window's worth of them can
   * be taken at once: a bound here makes the feeding follow the workers
   * (under MPI, a rank takes its inputs as it starts them, not a window's
   * worth ahead of the others). */
  size_t queue;
  /* May be NULL. Caller's thread, not under the runner's lock: called
   * whenever the loop would wait, and at least every millisecond while it
   * waits (under MPI, rank 0 answers the other ranks' requests there while
   * its own feeding is held back). */
  void (*idle)(void *ctx);
} imgstat_batch_config;

typedef struct imgstat_batch_report {
  int workers;         /* threads that worked (1: the calling thread) */
  uint64_t fed;        /* items fed = items delivered */
  uint64_t ran;        /* items whose work ran */
  uint64_t peak_bytes; /* largest total of reservations held at once */
  int cancelled;       /* 1 when the run was cancelled (flag or deliver) */
} imgstat_batch_report;

/*
 * Runs the items that next feeds through work and hands them to deliver,
 * as the configuration says. Returns when every item fed has been delivered:
 * IMGSTAT_OK (a cancelled run too: see report->cancelled), next's failure,
 * or IMGSTAT_ERR_ARG / IMGSTAT_ERR_NOMEM before anything is fed. report may
 * be NULL. Delivery order and results never depend on the number of workers
 * (when the work's results do not).
 */
imgstat_status imgstat_batch_run(const imgstat_batch_config *cfg,
                                 imgstat_batch_report *report,
                                 imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_BATCH_H */
