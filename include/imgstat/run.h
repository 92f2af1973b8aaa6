/*
 * imgstat: the run over many inputs (src/run/).
 *
 * The run is what the command line's `stats` and `normalize` commands do
 * between parsing and printing, for any front end (the program, the Python
 * module): inputs (paths, folders, lists of paths) are walked in order,
 * decoded by the library's workers (the engine's backend policy, the GPU
 * offer of JPEGs to nvJPEG, the memory budget) and each image gets what the
 * run does to it: its statistics, optionally pooled into a dataset
 * accumulator, or (opts->normalize) normalized and written. Each input is
 * handed back on the caller's thread, in input order, with the run's
 * progress figures. Under MPI each rank runs its share of the one input
 * list that rank 0 walked, and the ranks' accumulators are merged on rank
 * 0 in rank order.
 *
 * A normalize run walks the inputs whole, checks the output plan before any
 * work (imgstat_output_plan: one file or a folder, the format, no two
 * inputs with one output, no output naming an input), takes the engine's
 * backend decision, with normalize->dataset runs a first pass pooling every
 * input into one plan (the float range pass first for clip), then decodes
 * each input, converts it (normalize->as), normalizes it through the engine
 * and writes it atomically on the workers.
 *
 * Threads: imgstat_run_create, imgstat_run_execute and the other functions
 * are called from one thread (the caller's); every callback but `image`
 * runs on that thread, inside imgstat_run_execute. `image` runs on the
 * workers, several at once.
 *
 * Ownership: the options' strings and sources are borrowed until
 * imgstat_run_destroy; what a callback is handed is valid during the call
 * only.
 *
 * Errors: nothing here prints, exits or aborts. A function that can fail
 * returns an imgstat_status and fills a caller-owned imgstat_error whose
 * message is worded for "imgstat: MESSAGE" (a file's name inside when the
 * error is about one). An input that cannot be read is not an error of the
 * run: it is an item whose result has a status other than IMGSTAT_OK.
 */
#ifndef IMGSTAT_RUN_H
#define IMGSTAT_RUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "imgstat/batch.h"
#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "imgstat/inputs.h"
#include "imgstat/mpi.h"
#include "imgstat/norm.h"
#include "imgstat/outputs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One source of inputs, in the order given (imgstat/inputs.h says how
 * each is expanded). */
typedef struct imgstat_run_source {
  int is_list;      /* 0: a file, a folder or "-"; 1: a list of paths */
  const char *text; /* its path (borrowed) */
} imgstat_run_source;

/* What a normalize run does to each image (imgstat_run_options.normalize):
 * normalized by norm and written to out. */
typedef struct imgstat_run_normalize {
  imgstat_norm_options norm; /* the mode and its figures */
  /* One plan for every input from their pooled figures (minmax, clip and
   * zscore), each input converted to the layout `as` first (both passes). */
  int dataset;
  imgstat_dataset_as as;
  const char *out; /* the output file, or folder (borrowed) */
  /* The output format: 0 from out's name (one file), else by the output's
   * sample type (float32 .npy, else PNG) */
  imgstat_file_format format;
  int png_level;             /* IMGSTAT_PNG_LEVEL(n), 0: the default */
  imgstat_npy_layout layout; /* of .npy outputs */
  int skip_existing;         /* an input whose output is there is skipped */
  /* With the run's mask or its request's nodata values (or a file's own):
   * each input normalized by imgstat_engine_normalize_valid, the samples
   * left out written as they are or, with has_fill, as fill. */
  int has_fill;
  double fill;
  /* Optional: a slot that publishes each write's temporary name while it
   * exists (imgstat_write_options.temp_path), claimed on a worker before
   * the write and given back after (thread-safe; NULL: none). */
  const char *volatile *(*temp_claim)(void);
  void (*temp_release)(const char *volatile *slot);
  /* Where imgstat_run_create puts the problem of an output plan it refused
   * (IMGSTAT_ERR_ARG); the caller frees its names with
   * imgstat_output_problem_clear. NULL: not wanted. */
  imgstat_output_problem *problem;
} imgstat_run_normalize;

typedef struct imgstat_run_options {
  const imgstat_run_source *sources; /* nsources of them (borrowed) */
  int nsources;
  int null_lists; /* lists hold NUL-terminated paths (else one per line) */
  int follow;     /* walk symbolic links to folders met in walks */
  /* Worker threads, each reading, decoding and computing one input: -1
   * the default (one input alone runs on the caller's thread with the CPU
   * backend's threads on every core; several: one worker per core); 0 one
   * per core; N. */
  int jobs;
  uint64_t max_inflight; /* decoded bytes held at once; 0: the default */
  /* The engine (backend, kernel, devices, load limits, JPEG decoder, cost
   * model). threads and workers are set by the run from jobs. */
  imgstat_engine_options engine;
  imgstat_stats_request request; /* histograms, percentiles, nodata */
  /* Masks (NULL: none): a file, every input's mask, or a folder, where an
   * input's mask is the file at its path below its folder argument (a file
   * argument: its name) with the same stem, any extension, less
   * mask_suffix at the end of the input's stem when it is there (NULL:
   * none). An input without a mask there, or with several, fails. Its
   * request's mask_path is set for each input. */
  const char *mask;
  const char *mask_suffix;
  /* Label images (NULL: none), paired with the inputs as masks are (with
   * mask_suffix): each input's request's labels_path. */
  const char *labels;
  /* The dataset record: pool every image into an accumulator made with
   * these options (imgstat_run_dataset_finish gives the record). Float
   * images' pooled histograms without a range get one from a first pass
   * over the whole list (not over an image on standard input). */
  int dataset;
  imgstat_dataset_options ds;
  /* A reproducible uniform sample of the inputs for the dataset (0: all):
   * the whole list walked, then imgstat_input_list_sample(list, sample,
   * seed) decides which inputs the run reads (a normalize run with
   * normalize->dataset: which inputs its pooling pass pools; every input
   * is still written), the same for any jobs, devices and ranks. Needs
   * dataset (or normalize->dataset): else IMGSTAT_ERR_ARG, cause
   * IMGSTAT_CAUSE_CONFLICT. The record says it (imgstat_dataset_result's
   * sample fields). */
  uint64_t sample;
  uint64_t seed;
  /* Walk the whole input list before the first input is worked on
   * (imgstat_run_input_list), e.g. to check outputs against it. Always so
   * under MPI and for the float range pass. */
  int whole_list;
  /* MPI (NULL: one process): every rank calls the functions below with the
   * same options (they are collective); each runs its share. */
  imgstat_mpi *mpi;
  /* Under MPI: 1 keeps the contiguous shares (imgstat_mpi_share: rank r
   * runs items [r n / size, (r + 1) n / size)) where the dynamic deal is
   * the default (rank 0 hands out chunks as the ranks ask: each rank's
   * items are then not one run of the list, which a front end that merges
   * per-rank results in rank order cannot take). The environment variable
   * IMGSTAT_MPI_DEAL=static does the same. */
  int mpi_static_deal;
  /* Cancels the run when it becomes nonzero (a SIGINT handler may set
   * it); NULL: none. */
  const volatile sig_atomic_t *cancel;
  /* A normalize run (copied by imgstat_run_create, its strings borrowed
   * until imgstat_run_destroy; NULL: statistics): each input normalized
   * and written instead of its statistics computed. It takes the sources,
   * null_lists, follow, jobs, max_inflight, engine, cancel, mask,
   * mask_suffix and the request's nodata values above; not the request's
   * histograms, dataset, ds or mpi (refused: IMGSTAT_ERR_ARG). A cancel
   * stops the writes in progress, which remove their temporaries. */
  const imgstat_run_normalize *normalize;
} imgstat_run_options;

typedef struct imgstat_run imgstat_run;

/* How the run is laid out, known after imgstat_run_create. */
typedef struct imgstat_run_info {
  int workers;    /* worker threads */
  int cores;      /* the cores they may use (under MPI: this rank's) */
  int several;    /* the run may have several inputs (more than one source,
                     a list, or a folder) */
  int range_pass; /* a float range pass runs first (statistics: pass 1;
                     normalize with dataset: pass 0) */
  size_t inputs;  /* normalize: the whole input list */
  int folder;     /* normalize: out is a folder */
  /* Under MPI: this rank is bound to fewer cores than its share of what
   * its host offers (cores < share): a front end may say how to give each
   * rank its share ('mpirun --bind-to none'). */
  int cores_short;
  int cores_share;   /* that share */
  int cores_offered; /* the cores the host offers */
  int local_ranks;   /* the ranks on this host */
  /* Under MPI with --jpeg-decoder gpu: the GPUs this host's ranks take
   * turns on, when there are fewer than its ranks (0: a GPU a rank or
   * more): a GPU then switches between several processes' contexts
   * (measured much slower than one rank a GPU: docs/scaling.md), which a
   * front end may say. */
  int gpus_shared;
  /* Under MPI: the inputs are dealt in chunks as the ranks ask (1), or in
   * contiguous shares (0, mpi_static_deal). Dealt, a rank's inputs come to
   * its callbacks in input order but with gaps (other ranks' chunks): a
   * front end puts the ranks' outputs together by the inputs' index. */
  int mpi_dealt;
  imgstat_mpi_place at;
} imgstat_run_info;

/* The progress figures of a pass. */
typedef struct imgstat_run_progress {
  /* 2: the run; statistics: 1 the float range pass; normalize with
   * dataset: 0 the float range pass, 1 the pooling pass */
  int pass;
  uint64_t done;     /* inputs delivered so far */
  uint64_t failed;   /* of which could not be read, computed or written */
  uint64_t skipped;  /* normalize: of which skipped (skip_existing) */
  uint64_t bytes_in; /* input bytes of those done (files of known size) */
  uint64_t total;    /* inputs known so far (MPI: this rank's share) */
  int total_known;   /* whether total is final */
  int final;         /* the pass is over (a last call) */
} imgstat_run_progress;

/* One input's outcome, in input order. */
typedef struct imgstat_run_item {
  const imgstat_input *input; /* path, index in the whole list, size */
  /* status IMGSTAT_OK: the statistics (and histograms when asked for);
   * else failed_stage and error say why. Warnings either way. */
  const imgstat_job_result *result;
  void *extra; /* what the image callback returned for it, or NULL */
  /* Pooling it into the dataset failed (then the message, else "", and
   * its cause and the cause's setting, as imgstat_error has them). */
  char dataset_error[IMGSTAT_ERROR_MAX + 16];
  imgstat_cause dataset_cause;
  const char *dataset_what;
  /* normalize: its output is there (skip_existing; result says nothing) */
  int skipped;
  /* normalize: the output path written or failed (NULL: none); status
   * IMGSTAT_OK when written (or nothing to write), else why not. With
   * result IMGSTAT_OK the output image itself is freed. */
  const char *output;
  const imgstat_error *write_error;
} imgstat_run_item;

typedef struct imgstat_run_callbacks {
  void *ctx; /* given to every callback */
  /* Caller's thread, in input order, once per input (not for inputs a
   * cancel came before). A nonzero return cancels the run (e.g. its output
   * could not be written): no input is read after it, but the inputs the
   * workers had already finished are still delivered. */
  int (*item)(void *ctx, const imgstat_run_item *item,
              const imgstat_run_progress *progress);
  /* Caller's thread: the first passes' progress (the float range pass,
   * normalize's pooling pass), after each input and once more when the
   * pass is over (final). NULL: none. */
  void (*progress)(void *ctx, const imgstat_run_progress *progress);
  /* Any worker, with the decoded image (host pixels) and its result, after
   * the statistics: what the front end wants computed from the pixels (a
   * plot's histograms); the value comes back in the item. NULL: none. */
  void *(*image)(void *ctx, const imgstat_input *input,
                 const imgstat_image *img, const imgstat_job_result *result);
  /* Frees what image returned, after the item callback. */
  void (*free_extra)(void *ctx, void *extra);
  /* normalize: the engine's backend decision, before any input is read
   * (its warnings: the GPU that auto could not use). NULL: none. */
  void (*decided)(void *ctx, const imgstat_job_result *decision);
  /* normalize: a pass starts (imgstat_run_progress.pass). NULL: none. */
  void (*pass)(void *ctx, int pass);
} imgstat_run_callbacks;

/* The step of a run that a failure stopped (imgstat_run_report.failed_in):
 * the error's message says what, in the library's words, and this says
 * where, for a front end to word it. */
typedef enum imgstat_run_step {
  IMGSTAT_RUN_STEP_NONE = 0,
  IMGSTAT_RUN_STEP_SET_UP,  /* the engine, its decision or the output folder */
  IMGSTAT_RUN_STEP_RANGE,   /* the dataset's float range pass */
  IMGSTAT_RUN_STEP_POOL,    /* normalize: the dataset's pooling pass */
  IMGSTAT_RUN_STEP_REFUSED, /* normalize: inputs refused by the pool (one
                               plan needs one layout and depth):
                               imgstat_run_pooled's excluded list */
  IMGSTAT_RUN_STEP_PLAN,    /* normalize: the pool cannot give the plan */
  IMGSTAT_RUN_STEP_WORKERS, /* the batch runner */
  IMGSTAT_RUN_STEP_MERGE    /* MPI: the accumulators' merge */
} imgstat_run_step;

/* The outcome of imgstat_run_execute. */
typedef struct imgstat_run_report {
  int set_up_failed; /* the engine or the accumulator could not be made */
  int cancelled;     /* the cancel flag (or an item callback) stopped it */
  int range_stopped; /* the range pass was cancelled: nothing else ran */
  int dataset_ok;    /* the dataset accumulator holds the run (under MPI:
                        rank 0 holds every rank's) */
  int merge_failed;  /* MPI: the accumulators could not be merged (the
                        status and message are the merge's unless the run
                        failed before) */
  imgstat_run_step failed_in; /* where a failure stopped it */
  /* normalize: the pass it stopped in (2: the writing, or done), the
   * inputs delivered (skipped ones included), of which failed, skipped */
  int pass;
  uint64_t done, failed, skipped;
} imgstat_run_report;

/*
 * Makes a run: the inputs (walked lazily; the whole list walked at once
 * when opts->whole_list, under MPI (rank 0 walks it and sends it to the
 * others) or for the range pass), the workers and the GPU of this rank.
 * IMGSTAT_ERR_ARG: the sources do not go together (standard input twice);
 * other failures: out of memory, or the list could not be sent (an empty
 * message: another rank failed). *out is NULL on failure. Collective under
 * MPI. A normalize run: its options checked (IMGSTAT_ERR_ARG: a dataset
 * with given figures or a range, float32 output (zscore, given mean and
 * std) in another depth or in PNG, linked with another mode than minmax or
 * clip), the inputs walked whole (an output folder inside an input folder
 * is left out of the walk) and the output plan checked against the whole
 * list (IMGSTAT_ERR_ARG with normalize->problem filled).
 */
imgstat_status imgstat_run_create(const imgstat_run_options *opts,
                                  imgstat_run **out, imgstat_error *err);

/* Frees everything; NULL is a no-op. */
void imgstat_run_destroy(imgstat_run *run);

/* The layout of the run. */
const imgstat_run_info *imgstat_run_get_info(const imgstat_run *run);

/* The whole input list, when it was walked whole; else NULL (also under
 * MPI when the names are dealt with the chunks: no rank holds the whole
 * list, rank 0 lets go of the entries it has dealt). */
const imgstat_input_list *imgstat_run_input_list(const imgstat_run *run);

/*
 * Runs: the range pass when it is needed, then every input (this rank's
 * share) through the engine, each delivered to cb->item in input order;
 * with opts->dataset each is pooled, and under MPI the accumulators are
 * merged on rank 0 at the end. Returns IMGSTAT_OK (report says whether
 * it was cancelled), or the run's own failure (out of memory, the range
 * pass, the engine that could not be made, the merge under MPI); under MPI
 * a rank that fails still takes part in the collectives. Once per run.
 * A normalize run: the engine made and its decision taken (cb->decided),
 * with dataset the pooling pass (and the float range pass before it for
 * clip) and the plan from the pool, the output folder made, then every
 * input normalized and written. report->failed_in says where a failure
 * stopped a run.
 */
imgstat_status imgstat_run_execute(imgstat_run *run,
                                   const imgstat_run_callbacks *cb,
                                   imgstat_run_report *report,
                                   imgstat_error *err);

/* The dataset record after imgstat_run_execute (under MPI on rank 0: every
 * rank's images), with standard deviations over N - ddof; free it with
 * imgstat_dataset_result_free. IMGSTAT_ERR_ARG: the run has no dataset. */
imgstat_status imgstat_run_dataset_finish(const imgstat_run *run, int ddof,
                                          imgstat_dataset_result *out,
                                          imgstat_error *err);

/* normalize with dataset, after the pooling pass: its record (ddof 0),
 * the excluded inputs among it; NULL before, or without. Valid until
 * imgstat_run_destroy. */
const imgstat_dataset_result *imgstat_run_pooled(const imgstat_run *run);

/* normalize: the options every input is normalized with (with dataset: the
 * pooled plan's figures in measured, after the pooling pass); NULL for a
 * statistics run. */
const imgstat_norm_options *imgstat_run_norm(const imgstat_run *run);

/* The dataset options as the run uses them: after the range pass, with the
 * common float range it found (have_range, lo, hi). Any thread. */
const imgstat_dataset_options *
imgstat_run_dataset_options(const imgstat_run *run);

/* Ends the engine's GPU side now (the device stage's lanes joined, the
 * decoders and contexts destroyed), so that imgstat_run_times has the
 * teardown's figures; the run's results stay readable and
 * imgstat_run_destroy frees the rest. Once the run has returned. */
void imgstat_run_shutdown(imgstat_run *run);

/* Whether the run started a GPU (a CUDA context, nvJPEG): a program about to
 * exit may then leave the teardown of the device (the decoders' states, the
 * contexts: 0.3-0.4 s on an H100) to the process's end. Once the run has
 * returned. */
int imgstat_run_gpu_started(imgstat_run *run);

/* The time spent by stage (IMGSTAT_STAGE_TIMES): the engine's, and the
 * seconds summed over the workers reading the inputs that were offered to
 * nvJPEG and spent in the item callbacks. */
void imgstat_run_times(const imgstat_run *run, imgstat_engine_times *engine,
                       double *read_s, double *deliver_s);

/* Under MPI, where this rank's time went (IMGSTAT_STAGE_TIMES), in
 * seconds: the input list walked by rank 0 (and packed), its broadcast
 * (on ranks > 0 the wait for rank 0's walk too) and unpacking, the share
 * taken (the list's names walked to its first item), the workers over the
 * share, and the dataset's reduce (on every rank the wait for the slowest
 * rank's share too); work_end_s is the moment, from the run's creation, the
 * workers ended. share_first and share_end bound the share. All zero
 * without MPI. */
typedef struct imgstat_run_mpi_times {
  double list_s, bcast_s, share_s, work_s, work_end_s, reduce_s;
  uint64_t share_first, share_end;
  /* dealt (imgstat_run_info.mpi_dealt): the items this rank ran and the
   * chunks they came in (share_first and share_end 0) */
  uint64_t items, chunks;
  /* the most entries of the input list this rank held at once: all of
   * them where the list is sent whole or walked first; none on ranks > 0
   * when the names come with the chunks; on rank 0 dealing the names,
   * about what it walked and had not yet dealt (it lets go of the
   * entries it has dealt, but for the pooled histograms' second read) */
  uint64_t list_held;
  /* dealt with the names, on rank 0: the inputs it dealt to the other
   * ranks before its walk ended (the ranks work while it walks; 0 under
   * IMGSTAT_MPI_DEAL=walk-first and on the other ranks) */
  uint64_t walk_dealt;
} imgstat_run_mpi_times;

void imgstat_run_mpi_times_get(const imgstat_run *run,
                               imgstat_run_mpi_times *out);

/* The seconds the thread that feeds the inputs spent walking them
 * (IMGSTAT_STAGE_TIMES): reading lists, waiting for folders read ahead,
 * listing archives; 0 without IMGSTAT_STAGE_TIMES. */
double imgstat_run_walk_seconds(const imgstat_run *run);

/* ---- passes over the inputs (src/run/dataset_pass.c) ----------------------
 * The runs that pool a whole list of inputs before anything else is done
 * with them: the batch runner (imgstat/batch.h) decodes them on its
 * workers within its memory budget, the engine (imgstat/engine.h) computes
 * their statistics, and the accumulator above pools them. Used by
 * `imgstat normalize --dataset` (the first pass) and by the float range
 * pass of `imgstat --dataset --histogram`. */

struct imgstat_engine;
struct imgstat_input;

typedef struct imgstat_dataset_pass {
  /* The inputs, in order, on the caller's thread: *item NULL at the end.
   * An item must stay valid until release is called for it (NULL: the
   * caller keeps them all until the pass returns). Inputs that can be read
   * only once (imgstat_input.read_once: a pipe, a FIFO, a device) are not
   * read: the range pass skips them, the pool counts them as failed. */
  void *ctx;
  imgstat_status (*next)(void *ctx, const struct imgstat_input **item,
                         imgstat_error *err);
  void (*release)(void *ctx, const struct imgstat_input *item);
  const imgstat_load_options *load;
  /* The statistics (imgstat_dataset_pool_inputs only): the engine's
   * backend policy; its histograms when the accumulator wants them. */
  struct imgstat_engine *engine;
  int workers;     /* batch workers: 0 one per core */
  uint64_t budget; /* bytes in flight: 0 the runner's default */
  const volatile sig_atomic_t *cancel;
  /* The samples of a decoded image that the pool takes (a float image's
   * nodata values and mask as NaN: imgstat_engine_valid_copy) into *out,
   * left empty (width 0) when every sample counts; what the pooling pass
   * took is what the second read of imgstat_dataset_float_exact must take.
   * NULL: with an engine, the image's own nodata value alone. */
  imgstat_status (*valid)(void *ctx, const struct imgstat_input *in,
                          const imgstat_image *img, imgstat_image *out,
                          imgstat_error *err);
  /* The valid samples the pool takes of each input (the pool's
   * statistics, and the copy above when valid is NULL): request's nodata
   * values and no_file_nodata (NULL: the file's own nodata value alone),
   * and the input's mask as mask_of gives it (NULL: none): a new path in
   * *path (NULL: none), *shared when every input has that one; a failure
   * fails the input. */
  const imgstat_stats_request *request;
  imgstat_status (*mask_of)(void *ctx, const struct imgstat_input *in,
                            char **path, int *shared, imgstat_error *err);
} imgstat_dataset_pass;

/* The common range of pooled float histograms: the finite [min, max] over
 * every channel of every float image among the inputs (the others are not
 * decoded: their header says what they hold). *found is 0 (and *lo = *hi =
 * 0) when no float image has a finite sample; inputs that cannot be read
 * are skipped (the run that follows reports them). *cancelled is set when
 * p->cancel stopped the pass. */
imgstat_status imgstat_dataset_float_range(const imgstat_dataset_pass *p,
                                           int *found, double *lo, double *hi,
                                           int *cancelled, imgstat_error *err);

/* Exact float percentiles of a pool (docs/dataset.md, "Histograms"): after
 * d has pooled every input with float histograms over a common range, a
 * second read of the inputs finds the exact value of the median's rank and
 * of each percentile's in percentiles[0..np) (by the rank rule) for each
 * pooled channel: the samples of the bins that hold those ranks are kept
 * (those bins' counts are known: at most max_bytes of them, 4 bytes a
 * sample), then the order statistic is selected among them. Only float
 * images of the pool's layout are read (integer inputs: their header).
 * Stored in d (imgstat_dataset_set_exact): imgstat_dataset_finish then
 * gives them (imgstat_dataset_channel_percentile). When the samples would
 * take more than max_bytes, or the second read finds other counts than
 * the first (an input changed), d gets a note instead and the percentiles
 * stay within one bin. Does nothing for a pool without a float histogram.
 * Every input must be one that can be read again (not read_once). */
imgstat_status imgstat_dataset_float_exact(const imgstat_dataset_pass *p,
                                           imgstat_dataset *d,
                                           const double *percentiles, int np,
                                           uint64_t max_bytes, int *cancelled,
                                           imgstat_error *err);

/* Pools every input into d (created with the options the pass needs; with
 * histograms over a float range when float images are to have them): each
 * decoded, its statistics (and histograms) computed by p->engine, --as gray
 * and float histograms as imgstat --dataset makes them, and added at its
 * ordinal in the list. Inputs that fail are counted (add_failed); when
 * failed is not NULL it is called for each, in order, on the caller's
 * thread, with the reason. */
imgstat_status imgstat_dataset_pool_inputs(
    const imgstat_dataset_pass *p, imgstat_dataset *d,
    void (*failed)(void *ctx, const struct imgstat_input *in,
                   const imgstat_error *why),
    int *cancelled, imgstat_error *err);

#ifdef __cplusplus
}
#endif

#endif
