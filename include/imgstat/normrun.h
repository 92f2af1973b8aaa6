/*
 * imgstat: a normalize run over many inputs (src/pipeline/normrun.c).
 *
 * What the command line's `normalize` does between parsing and printing,
 * for any front end (the program, the Python module): the inputs (paths,
 * folders, lists) walked whole, the output plan checked before any work
 * (imgstat_output_plan: one file or a folder, the format, no two inputs
 * with one output, no output naming an input), the engine's backend
 * decision, with --dataset a first pass pooling every input into one plan
 * (the float range pass first for clip), then each input decoded,
 * converted (--as), normalized by the engine and written atomically by the
 * library's workers, and handed back in input order on the caller's
 * thread.
 *
 * Threads: every function is called from one thread (the caller's); every
 * callback runs on that thread, inside imgstat_normrun_execute.
 *
 * Ownership: the options' strings and sources are borrowed until
 * imgstat_normrun_destroy; what a callback is handed is valid during the
 * call only. The strings of an imgstat_normrun_error are its own (freed by
 * imgstat_normrun_error_clear).
 *
 * Errors: nothing here prints, exits or aborts. A function that can fail
 * returns an imgstat_status and fills a caller-owned imgstat_normrun_error:
 * its cause (which a front end words in its own terms: option names), and
 * an imgstat_error whose message is worded for "imgstat: MESSAGE" without
 * naming options. An input that cannot be read, normalized or written is
 * not an error of the run: it is an item with a status other than
 * IMGSTAT_OK.
 */
#ifndef IMGSTAT_NORMRUN_H
#define IMGSTAT_NORMRUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "imgstat/dataset.h"
#include "imgstat/imgstat.h"
#include "imgstat/job.h"
#include "imgstat/norm.h"
#include "imgstat/pipeline.h"
#include "imgstat/run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct imgstat_normrun_options {
  const imgstat_run_source *sources; /* nsources of them (borrowed) */
  int nsources;
  int null_lists; /* lists hold NUL-terminated paths (else one per line) */
  int follow;     /* walk symbolic links to folders met in walks */
  /* Worker threads, each decoding, normalizing and writing one input: -1
   * the default (one input alone runs on the caller's thread with the CPU
   * backend's threads on every core; several: one worker per core); 0 one
   * per core; N. */
  int jobs;
  uint64_t max_inflight;         /* decoded bytes held at once; 0: default */
  imgstat_engine_options engine; /* threads set by the run from jobs */
  imgstat_norm_options norm;     /* the mode and its figures */
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
  /* Cancels the run when it becomes nonzero (a SIGINT handler may set
   * it): writes in progress remove their temporaries. NULL: none. */
  const volatile sig_atomic_t *cancel;
  /* Optional: a slot that publishes each write's temporary name while it
   * exists (imgstat_write_options.temp_path), claimed on a worker before
   * the write and given back after (thread-safe; NULL: none). */
  const char *volatile *(*temp_claim)(void);
  void (*temp_release)(const char *volatile *slot);
} imgstat_normrun_options;

typedef struct imgstat_normrun imgstat_normrun;

/* Why a run was refused or stopped (imgstat_normrun_error.cause). */
typedef enum imgstat_normrun_cause {
  IMGSTAT_NORMRUN_NONE = 0,
  IMGSTAT_NORMRUN_NOMEM, /* out of memory */
  /* options that do not go together (IMGSTAT_ERR_ARG): dataset with given
   * figures or a range, float32 output (zscore, given mean and std) in
   * another depth or in PNG, linked with another mode than minmax or clip */
  IMGSTAT_NORMRUN_OPTIONS,
  IMGSTAT_NORMRUN_INPUTS, /* the walk: err (IMGSTAT_ERR_ARG: the inputs do
                             not go together, e.g. standard input twice) */
  /* The output plan (imgstat_output_plan_check's problems; IMGSTAT_ERR_ARG):
   * the kind and its names are in problem. */
  IMGSTAT_NORMRUN_OUTPUTS,
  IMGSTAT_NORMRUN_ENGINE,  /* the engine or its backend decision: err */
  IMGSTAT_NORMRUN_DATASET, /* the pooling pass (or its float range pass) */
  /* inputs refused by the pool (one plan needs one layout and depth):
   * imgstat_normrun_dataset's excluded list */
  IMGSTAT_NORMRUN_DATASET_REFUSED,
  IMGSTAT_NORMRUN_DATASET_MEASURE, /* the pool cannot give the plan: err */
  IMGSTAT_NORMRUN_OUT_FOLDER,      /* the output folder: err */
  IMGSTAT_NORMRUN_WORKERS          /* the batch runner: err */
} imgstat_normrun_cause;

typedef struct imgstat_normrun_error {
  imgstat_normrun_cause cause;
  imgstat_output_problem problem; /* IMGSTAT_NORMRUN_OUTPUTS */
  imgstat_error err;
} imgstat_normrun_error;

/* Frees the strings of an error (its problem's names); the error may be
 * filled again. */
void imgstat_normrun_error_clear(imgstat_normrun_error *e);

/* How the run is laid out, known after imgstat_normrun_create. */
typedef struct imgstat_normrun_info {
  size_t inputs;   /* the whole input list */
  int folder;      /* out is a folder */
  int workers;     /* the batch's workers (resolved: never 0) */
  int cores;       /* the cores the process may use */
  int float_range; /* with dataset: a float range pass (pass 0) runs */
} imgstat_normrun_info;

/* The progress figures of a pass. */
typedef struct imgstat_normrun_progress {
  int pass;          /* 0: the float range pass; 1: pooling; 2: writing */
  uint64_t done;     /* inputs done so far in this pass */
  uint64_t failed;   /* pass 2: of which failed (read, normalize or write) */
  uint64_t skipped;  /* pass 2: of which skipped (skip_existing) */
  uint64_t bytes_in; /* input bytes of those done (files of known size) */
  uint64_t total;    /* the inputs */
  int final;         /* passes 1 and 2: the pass is over (a last call) */
} imgstat_normrun_progress;

/* One input's outcome, in input order (pass 2). */
typedef struct imgstat_normrun_item {
  const imgstat_input *input; /* path, index in the whole list, size */
  int skipped;                /* skip_existing: its output is there */
  /* Not skipped: status IMGSTAT_OK when normalized (then write_error says
   * whether it was written), else failed_stage and error say why;
   * warnings either way. The output image itself is freed. */
  const imgstat_job_result *result;
  const char *output; /* the output path written or failed; NULL: none */
  /* status IMGSTAT_OK: written (or nothing to write); else why not */
  const imgstat_error *write_error;
} imgstat_normrun_item;

typedef struct imgstat_normrun_callbacks {
  void *ctx; /* given to every callback */
  /* The engine's backend decision, before any input is read (its warnings:
   * the GPU that auto could not use). NULL: none. */
  void (*decided)(void *ctx, const imgstat_job_result *decision);
  /* A pass starts (0: the float range pass, 1: pooling, 2: writing).
   * NULL: none. */
  void (*pass)(void *ctx, int pass);
  /* Passes 0 and 1: after each input, and once more when pass 1 is over
   * (final). NULL: none. */
  void (*progress)(void *ctx, const imgstat_normrun_progress *progress);
  /* Pass 2, once per input (not for inputs a cancel came before). A
   * nonzero return cancels the run. NULL: none. */
  int (*item)(void *ctx, const imgstat_normrun_item *item,
              const imgstat_normrun_progress *progress);
} imgstat_normrun_callbacks;

/* The outcome of imgstat_normrun_execute. */
typedef struct imgstat_normrun_report {
  int cancelled;   /* the cancel flag (or an item callback) stopped it */
  int pass;        /* the pass it stopped in (2: the writing, or done) */
  uint64_t done;   /* pass 2: inputs delivered (skipped ones included) */
  uint64_t failed; /* of which failed */
  uint64_t skipped;
} imgstat_normrun_report;

/*
 * Makes a run: the options checked (cause OPTIONS), the inputs walked whole (an
 * output folder inside an input folder is left out of the walk) and the output
 * plan checked against the whole list. Failures: cause NOMEM, OPTIONS,
 * INPUTS or OUTPUTS (with the problem). *out is NULL on failure.
 */
imgstat_status imgstat_normrun_create(const imgstat_normrun_options *opts,
                                      imgstat_normrun **out,
                                      imgstat_normrun_error *err);

/* Frees everything; NULL is a no-op. */
void imgstat_normrun_destroy(imgstat_normrun *run);

const imgstat_normrun_info *imgstat_normrun_get_info(const imgstat_normrun *r);

/* The whole input list. */
const imgstat_input_list *imgstat_normrun_input_list(const imgstat_normrun *r);

/*
 * Runs: the engine made and its decision taken (cb->decided), with dataset
 * the pooling pass (and the float range pass before it for clip) and the
 * plan from the pool, the output folder made, then every input normalized
 * and written, each delivered to cb->item in input order. Returns
 * IMGSTAT_OK when the run went through (report: cancelled, counts), else
 * the failure that stopped it (err->cause: ENGINE, DATASET,
 * DATASET_REFUSED, DATASET_MEASURE, OUT_FOLDER, WORKERS). Once per run.
 */
imgstat_status imgstat_normrun_execute(imgstat_normrun *run,
                                       const imgstat_normrun_callbacks *cb,
                                       imgstat_normrun_report *report,
                                       imgstat_normrun_error *err);

/* With dataset, after the pooling pass: its record (ddof 0), the excluded
 * inputs among it; NULL before or without. Valid until destroy. */
const imgstat_dataset_result *
imgstat_normrun_dataset(const imgstat_normrun *run);

/* The options every input is normalized with (with dataset: the pooled
 * plan's figures in measured), after the pooling pass. */
const imgstat_norm_options *imgstat_normrun_norm(const imgstat_normrun *run);

#ifdef __cplusplus
}
#endif

#endif
