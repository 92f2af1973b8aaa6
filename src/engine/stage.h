/*
 * imgstat's streaming device stage: items handed over by any thread (the
 * batch runner's workers, once they have read and checked a file), taken in
 * batches by "lanes" -- threads of their own, `lanes` per device -- and
 * finished through a callback. It knows nothing of JPEG or CUDA: what a
 * lane opens, what a batch run does and what finishing an item means are
 * the caller's operations (the engine's nvJPEG decode (stage_nvjpeg.c) and
 * batched reductions; a fake decoder in tests/engine/test_stage.c).
 *
 *  - Batches are sized by pixels: a lane takes queued items in order until
 *    their pixels reach batch_pixels or batch_max items (an item larger than
 *    batch_pixels rides alone), so that 12 MP and 0.5 MP photos both fill
 *    the engines. A lane that finds fewer waits up to linger_us for more,
 *    unless imgstat_stage_flush was called (the end of the input).
 *  - Several lanes per device keep batches in flight: while one lane's batch
 *    decodes, the next lane parses and copies its own.
 *  - A device's first lane is opened on its thread when the stage is
 *    created, so that a slow start (CUDA, nvJPEG) overlaps the submitters'
 *    reading; items queue meanwhile. Its further lanes open when they first
 *    find more queued than the lanes open take: a whole batch, or items
 *    while a lane runs a batch (a run of less than a batch neither waits for
 *    their start nor for their end).
 *  - Device start-up failures end the stage: a lane that fails to open
 *    (any device, any lane) ends it at once, and so do all lanes settled
 *    with none open (no device there). Every item queued, and every one
 *    submitted later, is then finished with that failure; the lanes not
 *    open close without waiting for work, the open ones take nothing more.
 *    A failure of a device's start reaches the caller as an item's cause,
 *    never as a lane waiting for work. A device that open reports as not
 *    there (IMGSTAT_OK, no lane context) is no failure: its lanes close.
 *  - The results never depend on which items share a batch or which lane
 *    ran them: the run must give each item what it would give it alone (the
 *    operations' promise; the tests hold the stage to its part: every item
 *    finished exactly once, batches within their bounds, no item lost on
 *    cancel or failure).
 *
 * Threads: submit, flush and cancel from any thread; the operations are
 * called on the lanes' threads (done also on a submitter's thread when the
 * stage is known dead, or on the cancelling thread for queued items).
 * Errors are values; nothing here prints.
 */
#ifndef IMGSTAT_STAGE_H
#define IMGSTAT_STAGE_H

#include "imgstat/imgstat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One item. The submitter owns it (and what user points to) until done is
 * called for it; the stage only links it into its queue. */
typedef struct imgstat_stage_item {
  uint64_t pixels; /* its share of a batch */
  void *user;      /* the caller's */
  int device;      /* set by the stage: the device index of its lane */
  struct imgstat_stage_item *next_; /* the stage's */
} imgstat_stage_item;

typedef struct imgstat_stage_ops {
  void *ctx;             /* given to open and done */
  int devices;           /* >= 1 */
  int lanes;             /* per device; 0: 2 */
  uint64_t batch_pixels; /* 0: 64 Mpx */
  int batch_max;         /* items per batch at most; 0: 128 */
  int linger_us;         /* 0: 2000; < 0: none */
  /* A lane's context on device (0..devices-1); err says why it failed.
   * IMGSTAT_OK with *lane_ctx left NULL: the device is not there (a stage
   * sized before the devices were counted); its lanes close, nothing
   * fails. */
  imgstat_status (*open)(void *ctx, int device, int lane, void **lane_ctx,
                         imgstat_error *err);
  /* One batch of n items, in their queue order. Returns IMGSTAT_OK or a
   * failure of the lane that touches every item of the batch (err). */
  imgstat_status (*run)(void *lane_ctx, imgstat_stage_item *const *items, int n,
                        imgstat_error *err);
  void (*close)(void *lane_ctx); /* may be NULL */
  /* An item is finished: status IMGSTAT_OK when run ran it without a lane
   * failure; else the lane's failure, the open failure (the stage ended), or
   * IMGSTAT_ERR_ARG with cancelled 1 (never run). The item may be freed
   * here. */
  void (*done)(void *ctx, imgstat_stage_item *item, imgstat_status status,
               int cancelled, const imgstat_error *err);
} imgstat_stage_ops;

typedef struct imgstat_stage imgstat_stage;

/* Starts the lanes (each opens on its thread). IMGSTAT_ERR_ARG: ops
 * incomplete; IMGSTAT_ERR_NOMEM: no memory or no thread. ops is copied. */
imgstat_status imgstat_stage_create(const imgstat_stage_ops *ops,
                                    imgstat_stage **out, imgstat_error *err);

/* Queues an item (never blocks: the caller bounds what it submits, e.g.
 * by the batch runner's budget and window). */
void imgstat_stage_submit(imgstat_stage *stage, imgstat_stage_item *item);

/* No more items for a while: lanes stop lingering for full batches until
 * the next submit. */
void imgstat_stage_flush(imgstat_stage *stage);

/* No item will be submitted any more: lanes take what is queued without
 * lingering, then close (close called on each lane's thread, at once)
 * without waiting for imgstat_stage_destroy. An item submitted after it is
 * finished at once with IMGSTAT_ERR_ARG (the caller's mistake). */
void imgstat_stage_end(imgstat_stage *stage);

/* Finishes every queued item as cancelled (batches running finish). */
void imgstat_stage_cancel(imgstat_stage *stage);

/* Figures of a stage, for the per-stage time table. */
typedef struct imgstat_stage_report {
  uint64_t items, batches;
  int lanes_open; /* lanes that opened */
  double open_s;  /* the first lane's open, from the stage's creation */
  double run_s;   /* lanes' time in run, summed */
  double idle_s;  /* lanes' time waiting for items, summed */
  int max_batch;  /* the largest batch run */
} imgstat_stage_report;

/* Runs what is queued, closes the lanes and joins their threads, then frees
 * the stage (NULL: no-op). report may be NULL. */
void imgstat_stage_destroy(imgstat_stage *stage, imgstat_stage_report *report);

#ifdef __cplusplus
}
#endif

#endif /* IMGSTAT_STAGE_H */
