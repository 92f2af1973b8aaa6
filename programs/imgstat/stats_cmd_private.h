/*
 * What the files of `imgstat`'s statistics command share (stats_cmd.c runs
 * it; stats_args.c parses its command line, stats_print.c prints during and
 * after the run, stats_mpi.c is --mpi): the options, the run's state and the
 * exit statuses. Private to programs/imgstat/.
 */
#ifndef IMGSTAT_STATS_CMD_PRIVATE_H
#define IMGSTAT_STATS_CMD_PRIVATE_H

#include "cli_util.h"
#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/mpi.h"
#include "imgstat/outputs.h"
#include "imgstat/record.h"
#include "imgstat/report.h"
#include "imgstat/run.h"
#include "progress.h"
#include "stats_cmd.h"

#include <stdint.h>
#include <stdio.h>

enum {
  EXIT_OK = 0,
  EXIT_INPUT_FAILED = 1,
  EXIT_USAGE = IMGSTAT_EXIT_USAGE,
  EXIT_MISMATCH = 3
};
#define DEFAULT_DISPLAY_BINS 256u
typedef struct stats_options {
  imgstat_record_format format;
  imgstat_engine_options engine; /* backend, verify, kernel, threads, load */
  int ddof;
  int quiet;
  imgstat_record_hist hist; /* --histogram and friends */
  /* The sources in the order given: path arguments and --files-from lists
   * (owned array; the texts point into argv). */
  imgstat_run_source *sources;
  int nsources;
  int null_lists; /* -0 */
  int follow;
  int jobs; /* -j (0: one worker per core) */
  int jobs_given;
  uint64_t max_inflight; /* 0: the runner's default */
  int errors_as_records;
  int progress; /* --progress */
  int dataset;  /* 1: --dataset, 2: --dataset-only */
  imgstat_dataset_options ds;
  int ds_given;          /* --as, --scale, --outlier-z or --range given */
  int mpi;               /* --mpi */
  uint64_t sample, seed; /* --sample N (0: every input), --seed S */
  /* --nodata: nnodata values (0: none given), or none (no_file_nodata) */
  int nnodata;
  double nodata[IMGSTAT_MAX_CHANNELS];
  int no_file_nodata;
  const char *mask;        /* --mask */
  const char *mask_suffix; /* --mask-suffix */
  const char *labels;      /* --labels */
  const char *report_path; /* --report */
  int argc;                /* the command line, for the report */
  char **argv;
} stats_options;

#define usage(...) ist_cli_usage_error("", "imgstat", __VA_ARGS__)
typedef struct run_state {
  const stats_options *opt;
  imgstat_run *run;
  int one_plot;                /* the run's one plot is OUT itself */
  imgstat_output_guard *guard; /* --histogram-png: the whole input list */
  char **plots;                /* the names of the plots written so far */
  size_t nplots, cap_plots;
  unsigned long records;
  int any_failed;
  int any_mismatch;
  int write_failed;
  /* the progress line (--progress, or stderr a terminal); its done and
   * failed count the inputs delivered and those that failed */
  ist_progress progress;
  int stdout_tty;         /* records would land on the progress line */
  int cancel_status;      /* the ranks' agreed ist_cli_cancel_status() */
  uint64_t total;         /* the inputs known so far (--mpi: this rank's) */
  int total_known;        /* whether that is all of them */
  int rank;               /* --mpi: this rank (0 prints the CSV header) */
  int begun;              /* the output's start (the CSV header) is out */
  imgstat_report *report; /* --report: what the page needs, else NULL */
  struct mpi_run *dealt;  /* --mpi with the inputs dealt: where each run of
                             consecutive inputs starts; else NULL */
} run_state;
/* ---- --mpi: every rank walks the inputs, runs its share, rank 0 prints
 * ----------------------------------------------------------------------
 * Ranks > 0 write their records and messages as one process would, into
 * temporary files that their standard output and error point to; at the
 * end rank 0 gathers them in rank order (input order) and prints them after
 * its own, then the dataset record of the ranks' accumulators merged in rank
 * order: stdout and stderr equal one process's byte for byte. */

typedef struct mpi_run {
  imgstat_mpi *m; /* NULL: no --mpi */
  imgstat_mpi_place at;
  FILE *cap[2];   /* ranks > 0 (dealt: every rank): what fds 1 and 2 write
                     to */
  int saved[2];   /* the fds 1 and 2 to restore, else -1 */
  int cap_failed; /* the capture could not be set up */
  double init_s;  /* MPI's start-up (imgstat_mpi_init), seconds */
  int shm;        /* ist_stats_mpi_transport chose shared memory */
  /* The inputs dealt in chunks (imgstat_run_info.mpi_dealt): each rank's
   * captures hold runs of consecutive inputs ("segments"); seg holds 3
   * numbers a segment: its first input's index and where it starts in the
   * captures of stdout and stderr. What comes before a rank's first
   * segment, and after `end` (the run's deliveries over), is printed
   * before, and after, every segment. */
  uint64_t *seg;
  size_t nseg, cap_seg;
  uint64_t next_index; /* the index after the last input delivered */
  uint64_t end[2];
  int seg_failed; /* out of memory for a segment */
  FILE *progress; /* rank 0: the progress line's stream (real stderr) */
  int seg_spill;  /* rank 0: its captures not printed yet */
} mpi_run;

/* ---- stats_args.c -------------------------------------------------------- */

/* Fills o from the command line. Returns -1 to run, or the exit status when
 * the command is done (--help, --version, a usage error). */
int ist_stats_parse_args(int argc, char **argv, stats_options *o);
/* Whether the run draws one plot, named OUT itself. */
int ist_stats_one_plot(const stats_options *o, int several);
/* Whether the records want the histograms computed. */
int ist_stats_histograms_wanted(const imgstat_record_hist *h);

/* ---- stats_print.c ------------------------------------------------------- */

void ist_stats_begin_output(run_state *st);
void ist_stats_draw_progress(run_state *st, int final);
void ist_stats_flush_stdout(run_state *st);
/* The run's callbacks (imgstat/run.h); ctx is the run_state. */
void *ist_stats_plot_image(void *ctx, const imgstat_input *in,
                           const imgstat_image *img,
                           const imgstat_job_result *res);
void ist_stats_free_plot(void *ctx, void *extra);
int ist_stats_print_item(void *ctx, const imgstat_run_item *item,
                         const imgstat_run_progress *progress);
void ist_stats_print_range_progress(void *ctx, const imgstat_run_progress *p);
void ist_stats_print_stage_times(run_state *st);
/* Under --mpi with IMGSTAT_STAGE_TIMES: this rank's line (its workers and
 * cores, MPI's phases). */
void ist_stats_print_mpi_times(run_state *st, const mpi_run *mr);
void ist_stats_print_dataset(run_state *st);
/* --report: the page, at the end of the run (started: its start, epoch
 * seconds; ranks: the MPI ranks, 0 without --mpi). Returns 0, or 1 after
 * printing why it was not written. */
int ist_stats_write_report(run_state *st, double started, int ranks);

/* ---- stats_mpi.c --------------------------------------------------------- */

int ist_stats_mpi_asked(int argc, char **argv);
int ist_stats_mpi_transport(void);
void ist_stats_capture_start(mpi_run *mr);
void ist_stats_capture_reset(mpi_run *mr);
void ist_stats_capture_end(mpi_run *mr);
void ist_stats_capture_free(mpi_run *mr);
int ist_stats_check_mpi_options(const stats_options *o);
int ist_stats_mpi_finish(run_state *st, mpi_run *mr, int batch_ok,
                         const stats_options *o);
int ist_stats_any_rank(const mpi_run *mr, int flag);
/* --report: every rank's report merged into rank 0's, in rank order.
 * Collective; returns 0, or 1 on every rank when it failed (said why). */
int ist_stats_mpi_gather_report(run_state *st, mpi_run *mr);
/* Dealt: the captures start on rank 0 too, before the run (its progress
 * line kept on the real stderr). */
void ist_stats_mpi_deal_start(run_state *st, mpi_run *mr);
/* Dealt: an input about to be printed; a new segment when it does not
 * follow the last one. */
void ist_stats_mpi_mark(run_state *st, uint64_t index);
/* Dealt: the run's deliveries are over (what is printed now comes after
 * every segment). */
void ist_stats_mpi_mark_end(mpi_run *mr);
/* Dealt, rank 0, a run that stopped before the gather: its own captures
 * printed as they are. */
void ist_stats_mpi_spill(mpi_run *mr);

#endif /* IMGSTAT_STATS_CMD_PRIVATE_H */
