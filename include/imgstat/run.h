/*
 * imgstat: a run over many inputs (src/pipeline/run.c).
 *
 * The run is what the command line's statistics command does between
 * parsing and printing, for any front end (the program, the Python module):
 * inputs (paths, folders, lists of paths) are walked in order, decoded and
 * computed by the library's workers (the engine's backend policy, the GPU
 * offer of JPEGs to nvJPEG, the memory budget), optionally pooled into a
 * dataset accumulator, and handed back one by one on the caller's thread,
 * in input order, with the run's progress figures. Under MPI each rank runs
 * its share of the one input list that rank 0 walked, and the ranks'
 * accumulators are merged on rank 0 in rank order.
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

#include "imgstat/dataset.h"
#include "imgstat/imgstat.h"
#include "imgstat/job.h"
#include "imgstat/mpi.h"
#include "imgstat/pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One source of inputs, in the order given (imgstat_pipeline.h says how
 * each is expanded). */
typedef struct imgstat_run_source {
  int is_list;      /* 0: a file, a folder or "-"; 1: a list of paths */
  const char *text; /* its path (borrowed) */
} imgstat_run_source;

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
  imgstat_stats_request request; /* histograms and percentiles */
  /* The dataset record: pool every image into an accumulator made with
   * these options (imgstat_run_dataset_finish gives the record). Float
   * images' pooled histograms without a range get one from a first pass
   * over the whole list (not over an image on standard input). */
  int dataset;
  imgstat_dataset_options ds;
  /* Walk the whole input list before the first input is worked on
   * (imgstat_run_input_list), e.g. to check outputs against it. Always so
   * under MPI and for the float range pass. */
  int whole_list;
  /* MPI (NULL: one process): every rank calls the functions below with the
   * same options (they are collective); each runs its share. */
  imgstat_mpi *mpi;
  /* Cancels the run when it becomes nonzero (a SIGINT handler may set
   * it); NULL: none. */
  const volatile sig_atomic_t *cancel;
} imgstat_run_options;

typedef struct imgstat_run imgstat_run;

/* How the run is laid out, known after imgstat_run_create. */
typedef struct imgstat_run_info {
  int workers;    /* worker threads */
  int cores;      /* the cores they may use (under MPI: this rank's) */
  int several;    /* the run may have several inputs (more than one source,
                     a list, or a folder) */
  int range_pass; /* a float range pass runs first (pass 1) */
  /* Under MPI: this rank is bound to fewer cores than its share of what
   * its host offers (cores < share): a front end may say how to give each
   * rank its share ('mpirun --bind-to none'). */
  int cores_short;
  int cores_share;   /* that share */
  int cores_offered; /* the cores the host offers */
  int local_ranks;   /* the ranks on this host */
  imgstat_mpi_place at;
} imgstat_run_info;

/* The progress figures of a pass. */
typedef struct imgstat_run_progress {
  int pass;          /* 1: the float range pass; 2: the run */
  uint64_t done;     /* inputs delivered so far */
  uint64_t failed;   /* of which could not be read or computed */
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
  /* Pooling it into the dataset failed (then the message, else ""). */
  char dataset_error[IMGSTAT_ERROR_MAX + 16];
} imgstat_run_item;

typedef struct imgstat_run_callbacks {
  void *ctx; /* given to every callback */
  /* Caller's thread, in input order, once per input (not for inputs a
   * cancel came before). A nonzero return cancels the run (e.g. its output
   * could not be written): no input is read after it, but the inputs the
   * workers had already finished are still delivered. */
  int (*item)(void *ctx, const imgstat_run_item *item,
              const imgstat_run_progress *progress);
  /* Caller's thread: the float range pass's progress (pass 1), after each
   * input and once more when the pass is over (final). NULL: none. */
  void (*progress)(void *ctx, const imgstat_run_progress *progress);
  /* Any worker, with the decoded image (host pixels) and its result, after
   * the statistics: what the front end wants computed from the pixels (a
   * plot's histograms); the value comes back in the item. NULL: none. */
  void *(*image)(void *ctx, const imgstat_input *input,
                 const imgstat_image *img, const imgstat_job_result *result);
  /* Frees what image returned, after the item callback. */
  void (*free_extra)(void *ctx, void *extra);
} imgstat_run_callbacks;

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
} imgstat_run_report;

/*
 * Makes a run: the inputs (walked lazily; the whole list walked at once
 * when opts->whole_list, under MPI (rank 0 walks it and sends it to the
 * others) or for the range pass), the workers and the GPU of this rank.
 * IMGSTAT_ERR_ARG: the sources do not go together (standard input twice);
 * other failures: out of memory, or the list could not be sent (an empty
 * message: another rank failed). *out is NULL on failure. Collective under
 * MPI.
 */
imgstat_status imgstat_run_create(const imgstat_run_options *opts,
                                  imgstat_run **out, imgstat_error *err);

/* Frees everything; NULL is a no-op. */
void imgstat_run_destroy(imgstat_run *run);

/* The layout of the run. */
const imgstat_run_info *imgstat_run_get_info(const imgstat_run *run);

/* The whole input list, when it was walked whole; else NULL. */
const imgstat_input_list *imgstat_run_input_list(const imgstat_run *run);

/*
 * Runs: the range pass when it is needed, then every input (this rank's
 * share) through the engine, each delivered to cb->item in input order;
 * with opts->dataset each is pooled, and under MPI the accumulators are
 * merged on rank 0 at the end. Returns IMGSTAT_OK (report says whether
 * it was cancelled), or the run's own failure (out of memory, the range
 * pass, the engine that could not be made, the merge under MPI); under MPI
 * a rank that fails still takes part in the collectives. Once per run.
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

#ifdef __cplusplus
}
#endif

#endif
