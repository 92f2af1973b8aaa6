/*
 * The engine's insides (imgstat/engine.h), private to src/engine/: the GPUs
 * and their start-up (gpu_start.c), the policy (policy.c), the items
 * (item.c), the nvJPEG lanes of the device stage (stage_nvjpeg.c), the
 * convoy batcher of the one-image JPEG path (jpeg_convoy.c) and that of the
 * valid samples' reductions (valid_convoy.c).
 */
#ifndef IMGSTAT_ENGINE_PRIVATE_H
#define IMGSTAT_ENGINE_PRIVATE_H

#include "imgstat/engine.h"

#include "gpu_jpeg.h"
#include "imgstat/cuda.h"
#include "stage.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* ---- the GPUs and their start-up (gpu_start.c) -------------------------- */

typedef struct jpeg_waiter jpeg_waiter;

/* The JPEGs of one GPU's decoder on the one-image path (jpeg_convoy.c):
 * workers queue theirs; one of them (the leader) takes the queue, up to a
 * batch, decodes it while the next batch gathers, and wakes the others. */
typedef struct jpeg_batcher {
  pthread_mutex_t lock;
  pthread_cond_t arrived;  /* a waiter was queued */
  pthread_cond_t finished; /* a batch was decoded */
  jpeg_waiter *head, **tail;
  int queued;
  int busy; /* a leader is decoding */
} jpeg_batcher;

typedef struct valid_waiter valid_waiter;

/* The valid samples' reductions of one GPU (valid_convoy.c): workers queue
 * their images (regions_on_gpu); a leader takes the queue, up to `max`
 * images and a bound of bytes, reduces them in one batched call
 * (imgstat_gpu_valid_regions_batch) while the next batch gathers, and wakes
 * their workers. max 0 (IMGSTAT_GPU_VALID_BATCH=0): no batches, each
 * image on its own (imgstat_gpu_valid_regions_hist). */
typedef struct valid_batcher {
  pthread_mutex_t lock;
  pthread_cond_t finished; /* a batch was reduced */
  valid_waiter *head, **tail;
  int queued;
  int leaders; /* batches running now */
  int leaders_max;
  int max;
  /* the batched call (imgstat_gpu_valid_regions_batch; a test's own) */
  imgstat_status (*run)(imgstat_gpu *gpu, int kernel,
                        imgstat_gpu_valid_item *items, size_t n,
                        imgstat_error *err);
} valid_batcher;

/* One GPU: its context (thread-safe: workers use it at once, each device
 * image on a slot of its own; no lock here, since a thread that held one
 * while waiting for a slot would stop the holders of every slot from
 * giving theirs back), its JPEG decoder (NULL: none) with its batches. */
typedef struct gpu_slot {
  imgstat_gpu *gpu;
  imgstat_gpu_jpeg *jpeg;
  jpeg_batcher batch;
  valid_batcher vbatch;
} gpu_slot;

/* The GPUs' start-up. CUDA's takes hundreds of milliseconds: it runs on a
 * thread of its own, which starts every device at once (a thread each:
 * its context, its nvJPEG handles) while items are decoded (and, under
 * auto, computed on the CPU). */
typedef struct gpu_start {
  pthread_t thread;
  int running;  /* the thread was started and is not joined yet */
  int done;     /* joined (or run here): the fields below are final */
  int ndevices; /* the request: > 0 a list, -1 every device, 0 default */
  int devices[IMGSTAT_MAX_DEVICES];
  int jpeg; /* 1: a JPEG decoder per GPU where nvJPEG is; 2: needed */
  imgstat_status status;
  imgstat_error err;
  int ngpus;
  gpu_slot gpus[IMGSTAT_MAX_DEVICES];
  /* The thread's end, told without a join (which one thread does, under
   * the engine's lock): fin under *fin_lock, *fin_cv broadcast. */
  pthread_mutex_t *fin_lock;
  pthread_cond_t *fin_cv;
  int fin;
  int launched; /* the thread was started (set once, never cleared) */
  int prepare;  /* make the decoders' states now (the one-image path's) */
  int strict;   /* nvJPEG's strict mode (jpeg_check none) */
  /* the start-up's phases, from t0 (the engine's creation), for the
   * per-stage table: the first context ready, its JPEG decoder ready */
  struct timespec t0;
  double context_s, jpeg_s;
  imgstat_gpu_jpeg_times jpeg_times;   /* the first decoder's start-up */
  double ready_s[IMGSTAT_MAX_DEVICES]; /* each device's start-up done */
  /* the devices started and their numbers, kept for the stage times after
   * the slots are destroyed (ngpus is 0 then) */
  int started;
  int started_device[IMGSTAT_MAX_DEVICES];
} gpu_start;

/* Seconds from a to now (CLOCK_MONOTONIC). */
double ist_since(const struct timespec *a);

/* Starts the start-up on its thread. */
void ist_gpu_start_begin(gpu_start *s);

/* Waits for the start-up (or does it here if no thread could be started). */
void ist_gpu_start_finish(gpu_start *s);

/* Joins a start-up still running and destroys the contexts. */
void ist_gpu_start_end(gpu_start *s);

/* The convoy batcher's locks (jpeg_convoy.c): 0 when one cannot be made. */
int ist_jpeg_batcher_init(jpeg_batcher *b);
void ist_jpeg_batcher_destroy(jpeg_batcher *b);

/* ---- the valid samples' batches (valid_convoy.c) ------------------------- */

/* Bytes of planes, masks and labels a batch takes (an image larger goes
 * alone). */
#define IST_VALID_BATCH_BYTES ((uint64_t)256 << 20)

int ist_valid_batcher_init(valid_batcher *b);
void ist_valid_batcher_destroy(valid_batcher *b);
/* item's reduction on g (imgstat_gpu_valid_regions_hist's work, its outcome
 * in item->status and item->err): in a batch with the images other workers
 * queue at the same time, or alone when batches are off. */
void ist_valid_regions(gpu_slot *g, int kernel, imgstat_gpu_valid_item *item);

/* ---- the engine (policy.c) ---------------------------------------------- */

struct imgstat_engine {
  imgstat_engine_options opt;
  /* The decision (lock): under auto, whether and when to start the GPU. */
  pthread_mutex_t lock;
  pthread_cond_t settled; /* decided became 1 */
  gpu_start start;
  int started; /* the start-up has begun (start.thread or start.done) */
  int decided; /* the policy has been applied: usable is final */
  int usable;  /* the GPU is used */
  atomic_uint_fast64_t workload; /* items expected in all; 0: unknown */
  uint64_t seen;                 /* items decoded so far (under lock) */
  atomic_uint_fast64_t next_gpu; /* items dealt to the GPUs in turn */
  /* The device stage of JPEGs (jpeg_decoder gpu): made at the first
   * JPEG handed over (stage_lock), destroyed before the GPUs. */
  pthread_mutex_t stage_lock;
  pthread_cond_t start_fin; /* start.fin became 1 (stage_lock) */
  imgstat_stage *stage;
  imgstat_status stage_status;
  imgstat_error stage_err;
  struct timespec created;
  imgstat_engine_times times; /* under stage_lock */
  int shut;                   /* imgstat_engine_shutdown ran */
  /* The mask every item shares (imgstat_stats_request's mask_shared):
   * decoded once, by the first item that asks (mask_lock), then only
   * read; its path, its bytes (1 inside), size and pixels inside. */
  pthread_mutex_t mask_lock;
  char *mask_path;
  uint8_t *mask;
  uint32_t mask_width, mask_height;
  uint64_t mask_inside;
};

/* The policy needs the GPU: a failure to start it fails the items. */
int ist_needs_gpu(const imgstat_engine *e);

/* The option that needs the GPU, in the library's words (the `what` of
 * IMGSTAT_CAUSE_GPU_UNUSABLE). */
const char *ist_gpu_option(const imgstat_engine *e);

/* Applies the policy before an item that needs no input. */
void ist_decide(imgstat_engine *e, imgstat_job_result *res);

/* The shape of an image whose pixels are elsewhere (a header read, a
 * decoded item on the GPU): zeroed but for its size, channels, sample type
 * and format (NULL: none), as the policy and the device reductions read it. */
imgstat_image ist_image_shape(uint32_t width, uint32_t height, int channels,
                              imgstat_sample sample, const char *format);

/* Applies the policy to an item whose input is decoded (img) and whose
 * work is of the given kind. */
void ist_decide_item(imgstat_engine *e, const imgstat_image *img,
                     imgstat_work_kind kind, imgstat_job_result *res);

/* Whether the policy is known to be unable to run items: the GPU is needed
 * and did not start. */
int ist_known_unusable(imgstat_engine *e);

/* The item failed: the GPU the policy needs is not usable. */
imgstat_status ist_gpu_unusable(const imgstat_engine *e,
                                imgstat_job_result *res);

/* A GPU failure on one item: 1 when the item is to be computed again on
 * the CPU (auto: with a warning), 0 when the item failed (res says why). */
int ist_gpu_failed(const imgstat_engine *e, imgstat_job_result *res,
                   const imgstat_error *err);

/* ---- results and items (item.c) ----------------------------------------- */

/* err's message, or "unknown error". */
const char *ist_reason(const imgstat_error *err);

void ist_add_warning(imgstat_job_result *res, int about_input, const char *fmt,
                     ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The decoder's warning about the input (none when text is ""), once. */
void ist_decoder_warning(imgstat_job_result *res, const char *text);

/* The input's geometry in res (its width, height, channels, colour model,
 * sample, format, pages and page), from a decoded image or a header: the one
 * place a result takes them. */
void ist_result_geometry(imgstat_job_result *res, uint32_t width,
                         uint32_t height, int channels, imgstat_colour colour,
                         imgstat_sample sample, const char *format,
                         uint32_t pages, uint32_t page);

/* The item failed at stage: the reason goes to res->error. */
imgstat_status ist_fail(imgstat_job_result *res, imgstat_job_stage stage,
                        imgstat_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The item failed at stage for err's reason: its message and its cause. */
imgstat_status ist_fail_err(imgstat_job_result *res, imgstat_job_stage stage,
                            imgstat_status status, const imgstat_error *err);

/* The item failed because the GPU that option needs is not usable. */
imgstat_status ist_gpu_needed(imgstat_job_result *res, const char *option,
                              imgstat_status status, const char *why);

/* The GPU for one item when the policy uses one (the devices in turn),
 * else NULL. */
gpu_slot *ist_gpu_for_item(imgstat_engine *e);

/* The partials of img by the policy (on the GPU from d when there is one). */
imgstat_status ist_item_stats(imgstat_engine *e, gpu_slot *g,
                              const imgstat_image *img, imgstat_gpu_image *d,
                              imgstat_job_result *res);

/* Histograms where the statistics were computed, by the policy. */
imgstat_status ist_item_histograms(imgstat_engine *e, gpu_slot *g,
                                   const imgstat_image *img,
                                   imgstat_gpu_image *d,
                                   const imgstat_stats_request *req,
                                   imgstat_job_result *res);

void ist_free_histograms(imgstat_job_result *res);

/* The figures of channel c of img from its histogram h, by the CPU's rule;
 * h's hint on its occupied bins set when it has none. */
void ist_hist_figures(const imgstat_image *img, int c, imgstat_histogram *h,
                      const imgstat_stats_request *req,
                      imgstat_hist_figures *f);

/* The statistics (and histograms) of a JPEG decoded on g's nvJPEG decoder
 * from its device planes, by the policy; 0 when the CPU decoder is to take
 * it (item.c). */
int ist_jpeg_device_item(imgstat_engine *e, gpu_slot *g,
                         const imgstat_gpu_jpeg_item *it,
                         const imgstat_stats_request *req,
                         imgstat_job_result *res);

/* The name of the decoder that made an item's pixels. */
const char *ist_jpeg_decoder_of(const imgstat_gpu_jpeg_item *it);

/* ---- JPEGs offered to the GPU (stage_nvjpeg.c) --------------------------- */

/* A JPEG offered to the GPU decoder: its header when taken, else NULL. */
const imgstat_header *ist_jpeg_offered(imgstat_engine *e, imgstat_decoder *dec,
                                       imgstat_job_result *res,
                                       const unsigned char **bytes,
                                       size_t *size);

/* The CPU decoder for d (an input the GPU did not decode), then the item by
 * the policy; -1 when the reservation was cancelled. */
int ist_jpeg_on_cpu(imgstat_engine *e, imgstat_decoder *d, const char *path,
                    const imgstat_stats_request *req,
                    int (*reserve)(void *, uint64_t), void *ctx, int reserved,
                    imgstat_job_result *res);

#endif
