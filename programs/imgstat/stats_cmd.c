/*
 * `imgstat [OPTIONS] FILE...`: per-channel statistics of each input.
 * Parse (the option table, options.c), run (one job per input through the
 * library's engine, imgstat/engine.h), print (the records, the histogram PNG,
 * the --verify verdicts, the messages and warnings of each job, the exit
 * status). This file is the run from start to end; stats_args.c parses the
 * command line, stats_print.c prints during and after the run, stats_mpi.c
 * is --mpi (stats_cmd_private.h is what they share).
 */
#include "stats_cmd.h"

#include "cli_util.h"
#include "hist_plot.h"
#include "imgstat/batch.h"
#include "imgstat/cuda.h"
#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "imgstat/inputs.h"
#include "imgstat/mpi.h"
#include "imgstat/outputs.h"
#include "imgstat/record.h"
#include "imgstat/run.h"
#include "options.h"
#include "progress.h"
#include "stats_cmd_private.h"
#include "verify.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Seconds from a to now (CLOCK_MONOTONIC). */
static double cli_since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) +
         1e-9 * (double)(b.tv_nsec - a->tv_nsec);
}

/* --histogram-png: no plot replaces an input. Every name the run's plots
 * take (OUT itself, or OUT-NAME.png per input and the dataset's) is looked
 * up in the whole list (after walks and lists); st->guard keeps the list
 * for the names write_plot makes unique. Returns -1, or the exit status of
 * the error it printed (under --mpi every rank the same). */
static int check_plots(run_state *st, const mpi_run *run,
                       const imgstat_input_list *list) {
  const mpi_run *mr = st->opt->mpi ? run : NULL;
  const imgstat_record_hist *h = &st->opt->hist;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int status = -1;
  if (imgstat_output_guard_create(list, &st->guard, &err) != IMGSTAT_OK) {
    ist_cli_error("%s", err.message);
    status = EXIT_INPUT_FAILED;
  }
  char path[IMGSTAT_HIST_PNG_PATH_MAX];
  size_t n = st->one_plot ? 0 : list->count;
  for (size_t k = 0; k <= n && status < 0; k++) {
    const char *input = st->one_plot ? NULL
                        : k < n      ? list->items[k]->path
                                     : "dataset";
    if (k < n && list->items[k]->kind == IMGSTAT_INPUT_ERROR)
      continue; /* no plot */
    if (!ist_hist_plot_path(h, input, path, sizeof path))
      status = usage("--histogram-png: the name is too long");
    else if (imgstat_output_guard_check(st->guard, path, &err) != IMGSTAT_OK)
      status = usage("%s", err.message);
  }
  if (ist_stats_any_rank(mr, status >= 0) && status < 0)
    status = IMGSTAT_EXIT_USAGE;
  return status;
}

/* The end of a run that used the GPU, every record and message out: the
 * last flush of stdout checked, then the process leaves without the CUDA
 * runtime's atexit handlers, its devices freed by the process's end. */
static void leave_now(run_state *st, int status) {
  ist_stats_flush_stdout(st);
  if (st->write_failed)
    status = EXIT_INPUT_FAILED;
  fflush(stderr);
  _exit(status);
}

int ist_stats_main(int argc, char **argv) {
  stats_options opt;
  run_state st;
  mpi_run mr;
  int status;

  memset(&opt, 0, sizeof opt);
  memset(&st, 0, sizeof st);
  memset(&mr, 0, sizeof mr);
  mr.saved[0] = mr.saved[1] = -1;
  opt.format = IMGSTAT_RECORD_TEXT;
  opt.engine.backend = IMGSTAT_BACKEND_AUTO;
  opt.engine.kernel = IMGSTAT_KERNEL_FAST;
  opt.engine.load.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  opt.engine.load.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
  opt.hist.npercentiles = 2;
  opt.hist.percentiles[0] = 1;
  opt.hist.percentiles[1] = 99;
  opt.hist.bins = DEFAULT_DISPLAY_BINS;
  st.opt = &opt;

  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (ist_stats_mpi_asked(argc, argv) && imgstat_mpi_built()) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mr.shm = ist_stats_mpi_transport();
    imgstat_status ms = imgstat_mpi_init(&argc, &argv, &mr.m, &err);
    mr.init_s = cli_since(&t0);
    if (ms != IMGSTAT_OK) {
      ist_cli_error("--mpi: %s", err.message);
      return EXIT_INPUT_FAILED;
    }
    mr.at = imgstat_mpi_where(mr.m);
    if (mr.at.rank > 0)
      ist_stats_capture_start(&mr);
  }
  struct timespec t0;
  clock_gettime(CLOCK_REALTIME, &t0);
  double started = (double)t0.tv_sec + t0.tv_nsec / 1e9;
  opt.argc = argc;
  opt.argv = argv;
  status = ist_stats_parse_args(argc, argv, &opt);
  if (status < 0)
    status = ist_stats_check_mpi_options(&opt);
  if (status < 0 && mr.m && !opt.mpi) /* "--mpi" was an option's value */
    ist_stats_capture_end(&mr);
  if (status < 0 && mr.m && opt.mpi)
    ist_stats_capture_reset(&mr); /* rank 0 printed the same warnings */
  if (status >= 0)
    goto cleanup;
  /* the run: its inputs (the whole list walked first when something needs
   * it: the ranks' shares, the plots' check, the float range pass) */
  imgstat_run_options ro;
  memset(&ro, 0, sizeof ro);
  ro.sources = opt.sources;
  ro.nsources = opt.nsources;
  ro.null_lists = opt.null_lists;
  ro.follow = opt.follow;
  ro.jobs = opt.jobs_given ? opt.jobs : -1;
  ro.max_inflight = opt.max_inflight;
  /* --jpeg-decoder gpu's tuning knobs, for measurements (docs/gpu.md):
   * the stage's lanes per device and the most files in a batch */
  const char *knob = getenv("IMGSTAT_JPEG_LANES");
  if (knob && atoi(knob) > 0)
    opt.engine.jpeg_lanes = atoi(knob);
  knob = getenv("IMGSTAT_JPEG_BATCH");
  if (knob && atoi(knob) > 0)
    opt.engine.jpeg_batch = atoi(knob);
  knob = getenv("IMGSTAT_JPEG_OWN_HANDLES");
  opt.engine.jpeg_own_handles = knob && atoi(knob) > 0;
  /* the process ends with _exit after a GPU run (below), so the lanes'
   * decoders are left to it (IMGSTAT_LANES_TEARDOWN=1: destroyed in the
   * run, as before, to measure the difference) */
  knob = getenv("IMGSTAT_LANES_TEARDOWN");
  opt.engine.leave_to_exit =
      !getenv("IMGSTAT_FULL_TEARDOWN") && !(knob && atoi(knob) > 0);
  opt.engine.cost = ist_cli_cost_model();
  ro.engine = opt.engine;
  ro.request.histograms = ist_stats_histograms_wanted(&opt.hist);
  ro.request.npercentiles = opt.hist.npercentiles;
  memcpy(ro.request.percentiles, opt.hist.percentiles,
         sizeof ro.request.percentiles);
  ro.request.nnodata = opt.nnodata;
  ro.request.nodata = opt.nodata; /* opt outlives the run */
  ro.request.no_file_nodata = opt.no_file_nodata;
  ro.mask = opt.mask;
  ro.mask_suffix = opt.mask_suffix;
  ro.labels = opt.labels;
  /* --report: the page's pooled record and histograms (nothing of it is
   * gathered without --report) */
  ro.dataset = opt.dataset != 0 || opt.report_path != NULL;
  if (opt.report_path)
    ro.request.histograms = 1;
  ro.ds = opt.ds;
  ro.sample = opt.dataset ? opt.sample : 0;
  ro.seed = opt.seed;
  ro.whole_list = opt.hist.png_path != NULL;
  ro.mpi = opt.mpi ? mr.m : NULL;
  /* --report's per-rank pages merge in rank order: the contiguous shares */
  ro.mpi_static_deal = opt.report_path != NULL;
  ro.cancel = ist_cli_cancel_on_signals(); /* Ctrl-C: stop, exit 130 */
  imgstat_status s = imgstat_run_create(&ro, &st.run, &err);
  if (s == IMGSTAT_ERR_ARG) {
    char words[IMGSTAT_CLI_WORDS_MAX];
    status = usage("%s", ist_cli_error_words(&err, words));
    goto cleanup;
  }
  if (s != IMGSTAT_OK) {
    if (err.message[0])
      ist_cli_error("%s", err.message);
    status = EXIT_INPUT_FAILED;
    goto cleanup;
  }
  const imgstat_run_info *info = imgstat_run_get_info(st.run);
  st.one_plot = ist_stats_one_plot(&opt, info->several);
  if (opt.hist.png_path) {
    status = check_plots(&st, &mr, imgstat_run_input_list(st.run));
    if (status >= 0)
      goto cleanup;
  }
  if (opt.report_path) {
    /* the page replaces no input (the whole list: walked for the pooled
     * histograms) */
    const imgstat_input_list *list = imgstat_run_input_list(st.run);
    imgstat_output_guard *g = st.guard;
    if (list && !g &&
        imgstat_output_guard_create(list, &g, &err) != IMGSTAT_OK) {
      ist_cli_error("%s", err.message);
      status = EXIT_INPUT_FAILED;
      goto cleanup;
    }
    st.guard = g;
    if (g &&
        imgstat_output_guard_check(g, opt.report_path, &err) != IMGSTAT_OK) {
      status = usage("--report: %s", err.message);
      goto cleanup;
    }
    imgstat_report_options rpo;
    memset(&rpo, 0, sizeof rpo);
    rpo.load = opt.engine.load;
    int made = imgstat_report_create(&rpo, &st.report, &err) == IMGSTAT_OK;
    if (!made)
      ist_cli_error("--report: %s", err.message);
    /* under --mpi every rank stops when one cannot make its report */
    if (ist_stats_any_rank(opt.mpi ? &mr : NULL, !made)) {
      status = EXIT_INPUT_FAILED;
      goto cleanup;
    }
  }
  /* Under --mpi, rank 0 says once when its rank is bound to fewer cores
   * than its share of what the host offers (Open MPI binds each rank to one
   * core for up to 2 ranks), with the mpirun options that give each rank
   * its share. */
  if (opt.mpi && info->cores_short && info->at.rank == 0 && !opt.quiet)
    ist_cli_error(
        "--mpi: each rank runs on %d core%s of the %d this host offers to "
        "%d rank%s (mpirun binds each rank to a core by default): give each "
        "rank its share with 'mpirun --bind-to none' or 'mpirun --map-by "
        "ppr:%d:node:PE=%d' (docs/scaling.md)",
        info->cores, info->cores == 1 ? "" : "s", info->cores_offered,
        info->local_ranks, info->local_ranks == 1 ? "" : "s", info->local_ranks,
        info->cores_share);

  /* ... and when the host's ranks take turns on fewer GPUs (nvJPEG) */
  if (opt.mpi && info->gpus_shared && info->at.rank == 0 && !opt.quiet)
    ist_cli_error("--mpi: the %d ranks on this host share its %d GPU%s, "
                  "each GPU switching between several ranks' contexts: one "
                  "rank a GPU (mpirun -np %d) is faster (docs/scaling.md)",
                  info->local_ranks, info->gpus_shared,
                  info->gpus_shared == 1 ? "" : "s", info->gpus_shared);

  /* --mpi: only rank 0 draws the line, for its share */
  ist_progress_start(&st.progress, !opt.quiet && mr.at.rank == 0 &&
                                       (opt.progress || isatty(STDERR_FILENO)));
  st.progress.workers = info->workers;
  st.progress.cores = info->cores;
  if (info->range_pass)
    st.progress.label = "--dataset, float range: ";
  st.stdout_tty = isatty(STDOUT_FILENO);

  if (opt.hist.png_path || opt.report_path) /* no partial file left */
    ist_cli_cleanup_on_signals();
  if (opt.dataset)
    opt.hist.dataset_columns = opt.format == IMGSTAT_RECORD_CSV;
  opt.hist.decoder_column = opt.format == IMGSTAT_RECORD_CSV &&
                            opt.engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU;
  st.rank = mr.at.rank;
  if (opt.mpi && info->mpi_dealt)
    ist_stats_mpi_deal_start(&st, &mr);
  else if (mr.at.rank > 0)
    st.records = 1; /* every text record opens with its blank line */
  imgstat_run_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.ctx = &st;
  cb.item = ist_stats_print_item;
  cb.progress = ist_stats_print_range_progress;
  /* the pixels of each image only for a plot of its histograms */
  cb.image = opt.hist.png_path ? ist_stats_plot_image : NULL;
  cb.free_extra = ist_stats_free_plot;
  imgstat_run_report rep;
  s = imgstat_run_execute(st.run, &cb, &rep, &err);
  if (!rep.range_stopped && !(s != IMGSTAT_OK && !opt.mpi && rep.set_up_failed))
    ist_stats_begin_output(&st);
  ist_stats_flush_stdout(&st);
  if (st.dealt)
    ist_stats_mpi_mark_end(&mr);
  if (rep.range_stopped) { /* the range pass failed or was cancelled */
    if (s != IMGSTAT_OK)
      ist_cli_error("--dataset: %s", err.message);
    status = rep.cancelled && ist_cli_cancel_status() >= 0
                 ? ist_cli_cancel_status()
                 : EXIT_INPUT_FAILED;
    goto cleanup;
  }
  if (s != IMGSTAT_OK && !opt.mpi && rep.set_up_failed) {
    ist_cli_error("%s", err.message);
    status = EXIT_INPUT_FAILED;
    goto cleanup;
  }
  if (s != IMGSTAT_OK) {
    ist_progress_clear(&st.progress);
    if (rep.merge_failed)
      ist_cli_error("--mpi: %s", err.message);
    else
      ist_cli_error("%s", err.message[0] ? err.message : "out of memory");
    st.any_failed = 1;
  }
  ist_stats_draw_progress(&st, 1);
  if (getenv("IMGSTAT_STAGE_TIMES")) {
    /* the teardown timed too: the GPU side of the engine goes now */
    imgstat_run_shutdown(st.run);
    ist_stats_print_stage_times(&st);
    if (opt.mpi)
      ist_stats_print_mpi_times(&st, &mr);
  }
  int print_ds = rep.dataset_ok && !st.write_failed && opt.dataset;
  st.cancel_status = ist_cli_cancel_status();
  if (opt.mpi) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    print_ds = ist_stats_mpi_finish(
                   &st, &mr, s == IMGSTAT_OK || rep.merge_failed, &opt) &&
               rep.dataset_ok && mr.at.rank == 0 && opt.dataset;
    /* the records and messages of ranks > 0 brought to rank 0 */
    if (getenv("IMGSTAT_STAGE_TIMES") && mr.at.rank == 0)
      imgstat_number_fprintf(stderr, "imgstat: mpi gather: %.3f s\n",
                             cli_since(&t0));
  }
  if (print_ds)
    ist_stats_print_dataset(&st);
  /* --report: under --mpi the ranks' reports merged on rank 0, which
   * writes the page (the ranks agree on whether it was written) */
  if (st.report && !st.write_failed && st.cancel_status < 0) {
    int failed = opt.mpi && ist_stats_mpi_gather_report(&st, &mr);
    if (!failed && mr.at.rank == 0)
      failed = ist_stats_write_report(&st, started, opt.mpi ? mr.at.size : 0);
    if (ist_stats_any_rank(opt.mpi ? &mr : NULL, failed))
      st.any_failed = 1;
  }
  /* a text run of several inputs ends with what happened, after the tables
   * (the failures' line stays on stderr) */
  if (mr.at.rank == 0 && st.progress.done > 1 && st.cancel_status < 0 &&
      opt.dataset != 2 && !st.write_failed &&
      (opt.format == IMGSTAT_RECORD_TEXT || opt.format == IMGSTAT_RECORD_BRIEF))
    printf("%s%" PRIu64 " inputs: %" PRIu64 " read, %" PRIu64 " failed\n",
           opt.format == IMGSTAT_RECORD_TEXT ? "\n" : "", st.progress.done,
           st.progress.done - st.progress.failed, st.progress.failed);
  if (mr.at.rank == 0 && st.progress.done > 1 && st.progress.failed > 0)
    ist_cli_error("%" PRIu64 " of %" PRIu64 " inputs failed",
                  st.progress.failed, st.progress.done);

  if (st.write_failed)
    status = EXIT_INPUT_FAILED;
  else if (st.any_mismatch)
    status = EXIT_MISMATCH;
  else if (st.any_failed)
    status = EXIT_INPUT_FAILED;
  else
    status = EXIT_OK;
  if (st.cancel_status >= 0)
    status = st.cancel_status;
  if (!opt.mpi && imgstat_run_gpu_started(st.run) &&
      !getenv("IMGSTAT_FULL_TEARDOWN")) {
    /* Every record and message is out; what is left is the device's
     * teardown (the nvJPEG states, the contexts: 0.3-0.4 s on the H100
     * host), which the process's end does as well. Leave now, without the
     * CUDA runtime's atexit handlers. IMGSTAT_FULL_TEARDOWN=1 tears down
     * in order (for compute-sanitizer's leak check). */
    leave_now(&st, status);
  }

cleanup:
  ist_stats_mpi_spill(&mr);
  for (size_t k = 0; k < st.nplots; k++)
    free(st.plots[k]);
  free(st.plots);
  /* a rank that used a GPU leaves its devices to the process's end, as one
   * process does above, once MPI is finalized */
  int leave = opt.mpi && opt.engine.leave_to_exit &&
              imgstat_run_gpu_started(st.run); /* 0 for no run */
  if (!leave)
    imgstat_run_destroy(st.run);
  imgstat_report_destroy(st.report);
  imgstat_output_guard_destroy(st.guard);
  free(opt.sources);
  ist_stats_capture_free(&mr);
  if (mr.m && imgstat_mpi_finalize(mr.m, &err) != IMGSTAT_OK) {
    ist_cli_error("--mpi: %s", err.message);
    status = status ? status : EXIT_INPUT_FAILED;
  }
  if (leave)
    leave_now(&st, status);
  return status;
}
