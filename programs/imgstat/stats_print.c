/*
 * `imgstat`'s output during and after the run: the run's callbacks (each
 * input's record, plot, verdict and progress line), the stage times and the
 * dataset's record and plot.
 */
#include "stats_cmd_private.h"

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

/* What comes before the first record (the CSV header), once: after the
 * range pass, before the first input's record. */
void ist_stats_begin_output(run_state *st) {
  const stats_options *o = st->opt;
  if (st->begun)
    return;
  st->begun = 1;
  if (st->rank == 0)
    imgstat_record_begin(stdout, o->format, &o->hist,
                         o->errors_as_records &&
                             o->format == IMGSTAT_RECORD_CSV);
}

/* Draws the progress line (progress.h) with the walk's total so far. */
void ist_stats_draw_progress(run_state *st, int final) {
  ist_progress_draw(&st->progress, st->total, st->total_known, final);
}

/* Flushes stdout after every record, so that records and messages on stderr
 * keep their order, and a full disk is noticed at the record it hit. */
void ist_stats_flush_stdout(run_state *st) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    if (!st->write_failed)
      fprintf(stderr, "imgstat: cannot write to standard output: %s\n",
              strerror(errno));
    st->write_failed = 1;
  }
}

/* "imgstat: PATH: reason" for an input that produced no record (and its
 * record with --errors-as-records). */
static void input_failed(run_state *st, const char *path,
                         const imgstat_job_result *res) {
  char text[IMGSTAT_CLI_WORDS_MAX];
  ist_cli_failure_words(res, text);
  ist_cli_path_error(path, "%s", text);
  if (st->opt->errors_as_records)
    imgstat_record_write_error(stdout, st->opt->format, path, text,
                               &st->opt->hist);
  st->any_failed = 1;
}

/* Draws a plot named after input (NULL: OUT itself) unless a plot of this
 * run has that name already (then "-2", "-3", ... before .png). Returns 1
 * after printing an error. */
static int write_plot(run_state *st, const char *input,
                      const ist_plot_info *info,
                      const imgstat_histogram *hist) {
  const imgstat_record_hist *h = &st->opt->hist;
  char png[IMGSTAT_HIST_PNG_PATH_MAX] = "";
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status s = IMGSTAT_OK;
  if (!ist_hist_plot_path(h, st->one_plot ? NULL : input, png, sizeof png))
    s = imgstat_error_set(&err, IMGSTAT_ERR_ARG, "the name is too long");
  size_t len = strlen(png);
  for (int k = 2; s == IMGSTAT_OK; k++) {
    size_t i = 0;
    while (i < st->nplots && strcmp(st->plots[i], png) != 0)
      i++;
    if (i == st->nplots)
      break;
    if (len + 16 >= sizeof png)
      s = imgstat_error_set(&err, IMGSTAT_ERR_ARG, "the name is too long");
    else
      snprintf(png + len - 4, sizeof png - len + 4, "-%d.png", k);
  }
  if (s == IMGSTAT_OK && st->nplots == st->cap_plots) {
    size_t cap = st->cap_plots ? 2 * st->cap_plots : 16;
    char **p = realloc(st->plots, cap * sizeof *p);
    if (p) {
      st->plots = p;
      st->cap_plots = cap;
    }
  }
  /* a name made unique here was not in check_plots' list */
  if (s == IMGSTAT_OK && st->guard)
    s = imgstat_output_guard_check(st->guard, png, &err);
  char *copy = st->nplots < st->cap_plots ? strdup(png) : NULL;
  if (s == IMGSTAT_OK && !copy)
    s = imgstat_error_set(&err, IMGSTAT_ERR_NOMEM, "out of memory");
  if (copy)
    st->plots[st->nplots++] = copy;
  if (s == IMGSTAT_OK)
    s = ist_hist_plot_write(h, info, hist, png, &err);
  if (s == IMGSTAT_OK)
    return 0;
  fflush(stdout);
  ist_cli_path_error(png[0]  ? png
                     : input ? input
                             : "dataset",
                     "%s", err.message[0] ? err.message : "unknown error");
  return 1;
}

/* Prints one input's result; returns 1 when the input failed. */
static int print_result(run_state *st, const char *path,
                        const imgstat_job_result *res,
                        const ist_plot_hists *plot) {
  const stats_options *o = st->opt;
  int failed = 0;
  ist_cli_job_warnings(res, path, o->quiet);
  if (res->status != IMGSTAT_OK) {
    input_failed(st, path, res);
    return 1;
  }
  imgstat_record rec;
  imgstat_record_from_job(&rec, path, res, o->ddof, &o->hist,
                          o->engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU);
  rec.decoder_column = o->hist.decoder_column;
  rec.error_column = o->errors_as_records && o->format == IMGSTAT_RECORD_CSV;
  rec.dataset_columns = o->hist.dataset_columns;
  if (o->dataset == 2)
    return 0;
  imgstat_record_write(stdout, o->format, &rec, st->records++);
  if (res->has_histograms && o->hist.png_path) {
    ist_plot_info info;
    memset(&info, 0, sizeof info);
    char kind[48];
    snprintf(kind, sizeof kind, "%s %d-bit%s",
             imgstat_colour_layout_name(res->colour, res->channels),
             imgstat_sample_depth(res->sample),
             res->sample == IMGSTAT_F32 ? " float" : "");
    info.title = path;
    info.kind = kind;
    info.channels = res->channels;
    info.colour = res->colour;
    info.sample = res->sample;
    info.scale = 1.0;
    for (int c = 0; c < res->channels; c++) {
      imgstat_figures f;
      imgstat_figures_compute(&IMGSTAT_JOB_CH(res, partial)[c], res->sample,
                              res->width, o->ddof, &f);
      info.has_mean[c] = f.has_values;
      info.mean[c] = f.mean;
    }
    info.figures = IMGSTAT_JOB_CH(res, hist_figures);
    if (plot && plot->have) { /* a float image: its own range */
      info.below = plot->below;
      info.above = plot->above;
    }
    if (write_plot(st, path, &info,
                   plot && plot->have ? plot->hist
                                      : IMGSTAT_JOB_CH(res, hist))) {
      st->any_failed = 1;
      failed = 1;
    }
  }
  if (res->verified) {
    /* The verdict follows the record; it stays out of the JSON / CSV
     * stream. */
    FILE *out =
        o->format == IMGSTAT_RECORD_TEXT || o->format == IMGSTAT_RECORD_BRIEF
            ? stdout
            : stderr;
    fflush(stdout);
    if (!ist_verify_partials(out, path, res->colour, res->channels, res->sample,
                             IMGSTAT_JOB_CH(res, partial),
                             IMGSTAT_JOB_CH(res, gpu_partial)))
      st->any_mismatch = 1;
  }
  return failed;
}

/* ---- the run's callbacks (imgstat_run.h) --------------------------------- */

/* A worker's extra work on a decoded image: a float image's plot, over
 * --range (or the dataset's common range), else over its robust range. */
void *ist_stats_plot_image(void *ctx, const imgstat_input *in,
                           const imgstat_image *img,
                           const imgstat_job_result *res) {
  run_state *st = ctx;
  const stats_options *o = st->opt;
  (void)in;
  if (res->status != IMGSTAT_OK || !res->has_histograms || !o->hist.png_path ||
      o->dataset == 2 || img->sample != IMGSTAT_F32)
    return NULL;
  const imgstat_dataset_options *ds = imgstat_run_dataset_options(st->run);
  double range[2] = {ds->lo, ds->hi};
  ist_plot_hists *plot = calloc(1, sizeof *plot);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (plot && ist_hist_plot_float(
                  img, IMGSTAT_JOB_CH(res, hist), ds->have_range ? range : NULL,
                  o->hist.bins ? o->hist.bins : DEFAULT_DISPLAY_BINS, plot,
                  &err) != IMGSTAT_OK)
    ist_hist_plot_hists_free(plot); /* the job's histograms, then */
  return plot;
}

void ist_stats_free_plot(void *ctx, void *extra) {
  (void)ctx;
  ist_hist_plot_hists_free(extra);
  free(extra);
}

/* An input delivered in order: its record (or its error), its plot, its
 * verdict, the progress line. */
int ist_stats_print_item(void *ctx, const imgstat_run_item *item,
                         const imgstat_run_progress *progress) {
  run_state *st = ctx;
  const imgstat_input *in = item->input;
  const imgstat_job_result *res = item->result;
  if (st->dealt)
    ist_stats_mpi_mark(st, in->index);
  ist_stats_begin_output(st);
  if (st->stdout_tty || res->status != IMGSTAT_OK || res->nwarnings > 0 ||
      res->verified || st->opt->hist.png_path)
    ist_progress_clear(&st->progress);
  st->progress.done++;
  if (in->size_known)
    st->progress.bytes_in += in->size;
  if (print_result(st, in->path, res, item->extra))
    st->progress.failed++;
  if (item->dataset_error[0] && st->opt->dataset) {
    imgstat_error e;
    memset(&e, 0, sizeof e);
    snprintf(e.message, sizeof e.message, "%.*s", (int)sizeof e.message - 1,
             item->dataset_error);
    e.cause = item->dataset_cause;
    e.what = item->dataset_what;
    char words[IMGSTAT_CLI_WORDS_MAX];
    ist_cli_path_error(in->path, "--dataset: %s",
                       ist_cli_error_words(&e, words));
    st->any_failed = 1;
  }
  if (st->report) {
    imgstat_error err;
    memset(&err, 0, sizeof err);
    if (imgstat_report_add(st->report, in->index, in->path, res, st->opt->ddof,
                           &err) != IMGSTAT_OK) {
      ist_cli_error("--report: %s", err.message);
      st->write_failed = 1; /* stops the run */
    }
  }
  ist_stats_flush_stdout(st);
  st->total = progress->total;
  st->total_known = progress->total_known;
  ist_stats_draw_progress(st, 0);
  return st->write_failed;
}

/* The float range pass's progress (--dataset --histogram): its own line,
 * labelled; the run's starts from zero after it. */
void ist_stats_print_range_progress(void *ctx, const imgstat_run_progress *p) {
  run_state *st = ctx;
  st->progress.done = p->done;
  st->progress.bytes_in = p->bytes_in;
  ist_progress_draw(&st->progress, p->total, p->total_known, p->final);
  if (p->final) {
    int workers = st->progress.workers, cores = st->progress.cores;
    ist_progress_start(&st->progress, st->progress.on);
    st->progress.workers = workers;
    st->progress.cores = cores;
  }
}

/* IMGSTAT_STAGE_TIMES: one line on stderr, where the JPEGs' time went
 * (durations summed over the threads of each stage, then moments from the
 * engine's creation; tests/gpu/checks/jpeg_stage.sh reads it). */
void ist_stats_print_stage_times(run_state *st) {
  imgstat_engine_times t;
  double read_s, output_s;
  imgstat_run_times(st->run, &t, &read_s, &output_s);
  imgstat_number_fprintf(
      stderr,
      "imgstat: stage times: walk %.3f read %.3f check %.3f decode %.3f (parse "
      "%.3f alloc %.3f nvjpeg %.3f wait %.3f) reduce %.3f histogram "
      "%.3f cpu %.3f output %.3f close %.3f (s, summed over threads); "
      "context %.3f nvjpeg %.3f (load %.3f device %.3f handles %.3f [create "
      "%.3f info %.3f] decoder %.3f) ready %.3f ready-last %.3f first-submit "
      "%.3f first-batch %.3f last-batch %.3f input-end %.3f closed %.3f "
      "shutdown %.3f (s from start); stage-join %.3f teardown %.3f (s); "
      "items %" PRIu64 " batches %" PRIu64 " max-batch %d hardware %" PRIu64
      " hybrid %" PRIu64 " cpu %" PRIu64 "\n",
      imgstat_run_walk_seconds(st->run), read_s, t.check_s, t.decode_s,
      t.parse_s, t.alloc_s, t.nvjpeg_host_s, t.nvjpeg_wait_s, t.reduce_s,
      t.histogram_s, t.cpu_s, output_s, t.close_s, t.context_s, t.nvjpeg_s,
      t.jpeg_load_s, t.jpeg_device_s, t.jpeg_handles_s, t.jpeg_create_s,
      t.jpeg_info_s, t.jpeg_decoder_s, t.ready_s, t.ready_last_s,
      t.first_submit_s, t.first_batch_s, t.last_batch_s, t.input_end_s,
      t.closed_s, t.shutdown_s, t.stage_end_s, t.teardown_s, t.items, t.batches,
      t.max_batch, t.hardware, t.hybrid, t.cpu);
  if (t.ndevices < 1)
    return;
  /* a second line, per device: when each started and was ready, the
   * spread of the first batches handed to nvJPEG and of the last ones
   * finished (the devices start together and finish together) */
  double first_lo = 0, first_hi = 0, last_lo = 0, last_hi = 0;
  fputs("imgstat: device times:", stderr);
  for (int k = 0; k < t.ndevices; k++) {
    imgstat_number_fprintf(stderr,
                           "%s device %d start %.3f ready %.3f first-submit "
                           "%.3f last-batch %.3f items %" PRIu64,
                           k ? ";" : "", t.device[k], t.device_start_s[k],
                           t.device_ready_s[k], t.device_first_submit_s[k],
                           t.device_last_batch_s[k], t.device_items[k]);
    double f = t.device_first_submit_s[k], l = t.device_last_batch_s[k];
    if (k == 0 || f < first_lo)
      first_lo = f;
    if (k == 0 || f > first_hi)
      first_hi = f;
    if (k == 0 || l < last_lo)
      last_lo = l;
    if (k == 0 || l > last_hi)
      last_hi = l;
  }
  imgstat_number_fprintf(stderr,
                         " (s from start); first-submit spread %.3f "
                         "last-batch spread %.3f (s)\n",
                         first_hi - first_lo, last_hi - last_lo);
}

/* IMGSTAT_STAGE_TIMES under --mpi: one line per rank (ranks > 0's come
 * to rank 0 with the rest of their stderr, in rank order): the workers and
 * the cores it took of what the host offers its ranks, then where its time
 * went (imgstat_run_mpi_times), the transport (shm: the one-host choice
 * of ist_stats_mpi_transport; mpi: MPI's own); tests/mpi/mpi_cli_test.sh and
 * bench/gpu/mpi_phases.sh read it. */
void ist_stats_print_mpi_times(run_state *st, const mpi_run *mr) {
  const imgstat_run_info *info = imgstat_run_get_info(st->run);
  imgstat_run_mpi_times t;
  imgstat_run_mpi_times_get(st->run, &t);
  imgstat_number_fprintf(
      stderr,
      "imgstat: mpi times: rank %d of %d (host rank %d of %d): workers %d "
      "cores %d offered %d; init %.3f list %.3f bcast %.3f share %.3f work "
      "%.3f work-end %.3f reduce %.3f (s); transport %s; ",
      mr->at.rank, mr->at.size, mr->at.local_rank, mr->at.local_size,
      info->workers, info->cores, info->cores_offered, mr->init_s, t.list_s,
      t.bcast_s, t.share_s, t.work_s, t.work_end_s, t.reduce_s,
      mr->shm ? "shm" : "mpi");
  if (info->mpi_dealt) /* "dealt": chunks as the ranks asked */
    fprintf(stderr,
            "dealt-walking %" PRIu64 "; items %" PRIu64 " dealt in %" PRIu64
            " chunks, list %" PRIu64 " held\n",
            t.walk_dealt, t.items, t.chunks, t.list_held);
  else /* the contiguous share */
    fprintf(stderr, "items %" PRIu64 " [%" PRIu64 ", %" PRIu64 ")\n",
            t.share_end - t.share_first, t.share_first, t.share_end);
}

/* The dataset record after the images' (--dataset), and its PNG. */
void ist_stats_print_dataset(run_state *st) {
  const stats_options *o = st->opt;
  imgstat_dataset_result r;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_run_dataset_finish(st->run, o->ddof, &r, &err) != IMGSTAT_OK) {
    ist_cli_error("--dataset: %s", err.message);
    st->any_failed = 1;
    return;
  }
  imgstat_hist_figures *hf =
      calloc(r.channels ? (size_t)r.channels : 1, sizeof *hf);
  if (!hf) {
    ist_cli_error("--dataset: out of memory");
    st->any_failed = 1;
    imgstat_dataset_result_free(&r);
    return;
  }
  imgstat_dataset_hist_figures(&r, o->hist.percentiles, o->hist.npercentiles,
                               hf);
  imgstat_record_write_dataset(
      stdout, o->format, &r, &o->hist, o->hist.fields ? hf : NULL,
      st->records++, o->errors_as_records && o->format == IMGSTAT_RECORD_CSV);
  ist_stats_flush_stdout(st);
  for (int k = 0; k < IMGSTAT_EMIT_COUNT; k++) /* the forms left out */
    if (o->format != IMGSTAT_RECORD_CSV && (o->hist.dataset_emit & (1u << k))) {
      char line[IMGSTAT_EMIT_MAX];
      if (imgstat_dataset_emit(&r, (imgstat_emit)k, line, sizeof line, &err) !=
          IMGSTAT_OK) {
        char words[IMGSTAT_CLI_WORDS_MAX];
        ist_cli_error("%s", ist_cli_error_words(&err, words));
        st->any_failed = 1;
      }
    }
  int plotted = 1;
  for (int c = 0; c < r.channels; c++)
    plotted = plotted && r.ch[c].has_histogram;
  if (o->hist.png_path && r.channels && plotted) {
    ist_plot_info info;
    memset(&info, 0, sizeof info);
    char title[64], kind[64];
    snprintf(title, sizeof title, "dataset (%" PRIu64 " images)", r.pooled);
    snprintf(kind, sizeof kind, "%s %s-bit%s", imgstat_layout_name(r.channels),
             r.depths == 3   ? "8+16"
             : r.depths == 2 ? "16"
             : r.depths == 4 ? "32"
             : r.depths == 8 ? "16 signed"
                             : "8",
             r.scale_unit ? " unit" : "");
    info.title = title;
    info.kind = kind;
    info.channels = r.channels;
    info.sample = r.ch[0].hist.sample;
    info.scale = r.hist_scale;
    imgstat_histogram hists[IMGSTAT_MAX_CHANNELS];
    for (int c = 0; c < r.channels; c++) {
      info.has_mean[c] = r.ch[c].has_values;
      info.mean[c] = r.ch[c].mean;
      hists[c] = r.ch[c].hist;
    }
    info.figures = hf;
    if (write_plot(st, "dataset", &info, hists))
      st->any_failed = 1;
  } else if (o->hist.png_path && r.channels) {
    ist_cli_error("--histogram-png: no pooled histogram for the dataset: %s",
                  r.histogram_note[0] ? r.histogram_note : "none made");
    st->any_failed = 1;
  }
  free(hf);
  imgstat_dataset_result_free(&r);
}

/* A word of the command line as a POSIX shell reads it back: as it is
 * when it holds only safe characters, else in single quotes. */
static void shell_word(FILE *out, const char *w) {
  int safe = *w != '\0';
  for (const char *p = w; *p && safe; p++)
    safe = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789-_./=:,+@%",
                  *p) != NULL;
  if (safe) {
    fputs(w, out);
    return;
  }
  putc('\'', out);
  for (const char *p = w; *p; p++)
    if (*p == '\'')
      fputs("'\\''", out);
    else
      putc(*p, out);
  putc('\'', out);
}

int ist_stats_write_report(run_state *st, double started, int ranks) {
  const stats_options *o = st->opt;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_dataset_result r;
  int have_ds =
      imgstat_run_dataset_finish(st->run, o->ddof, &r, &err) == IMGSTAT_OK;
  char *line = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&line, &len);
  if (f) {
    for (int k = 0; k < o->argc; k++) {
      if (k)
        putc(' ', f);
      shell_word(f, k == 0 ? "imgstat" : o->argv[k]);
    }
    fclose(f);
  }
  const char **inputs = calloc((size_t)o->nsources + 1, sizeof *inputs);
  for (int k = 0; inputs && k < o->nsources; k++)
    inputs[k] = o->sources[k].text;
  imgstat_report_run run;
  memset(&run, 0, sizeof run);
  run.command_line = line;
  run.backend = imgstat_backend_name(o->engine.backend);
  run.decoder = imgstat_jpeg_decoder_name(o->engine.jpeg_decoder);
  run.ninputs = inputs ? o->nsources : 0;
  run.inputs = inputs;
  run.started = started;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  run.seconds = (double)now.tv_sec + now.tv_nsec / 1e9 - started;
  run.emit = o->dataset ? o->hist.dataset_emit : 0;
  run.npercentiles = o->hist.npercentiles;
  memcpy(run.percentiles, o->hist.percentiles, sizeof run.percentiles);
  run.ranks = ranks;
  imgstat_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.temp_path = ist_cli_temp_slot();
  imgstat_status s = imgstat_report_write(st->report, o->report_path, &run,
                                          have_ds ? &r : NULL, &wo, &err);
  if (have_ds)
    imgstat_dataset_result_free(&r);
  free(inputs);
  free(line);
  if (s != IMGSTAT_OK) {
    ist_cli_error("--report: %s", err.message);
    return 1;
  }
  return 0;
}
