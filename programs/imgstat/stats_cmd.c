/*
 * `imgstat [OPTIONS] FILE...`: per-channel statistics of each input.
 * Parse (the option table, options.c), run (one job per input through the
 * library's engine, imgstat/engine.h), print (the records, the histogram PNG,
 * the --verify verdicts, the messages and warnings of each job, the exit
 * status).
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

enum {
  EXIT_OK = 0,
  EXIT_INPUT_FAILED = 1,
  EXIT_USAGE = IMGSTAT_EXIT_USAGE,
  EXIT_MISMATCH = 3
};

#ifdef IMGSTAT_HAVE_TURBOJPEG
#define JPEG_DECODER "TurboJPEG"
#else
#define JPEG_DECODER "stb_image"
#endif

#define DEFAULT_DISPLAY_BINS 256u

/* ---- --help
 * ------------------------------------------------------------------ The option
 * lines are the table's (options.c). */

static const char *const help_titles[] = {
    "Inputs (a folder is walked for images, in byte order; - is standard "
    "input):",
    "Output (default: a table per image):",
    "Computation:",
    "Histograms (" IST_OPT_DOCS "/normalize.md, Histograms):",
    "Dataset (" IST_OPT_DOCS "/dataset.md):",
    "Other:",
};

static const ist_opt_help help = {
    "Usage: imgstat [OPTIONS] FILE|DIR|-...\n"
    "       imgstat normalize [OPTIONS] INPUT... -o OUT   (see its --help)\n"
    "       imgstat bench [ARGS...]          (GPU benchmark; see its --help)\n"
    "\n"
    "Per-channel statistics of images: count, min, max and the position of\n"
    "the first of each, sum, mean and standard deviation.\n",
    help_titles, 6,
    "\n"
    "Exit status: 0 every input processed, 1 an input failed (the others are\n"
    "still reported) or output could not be written, 2 usage error, 3 "
    "--verify\n"
    "found a mismatch. A file named like a subcommand (bench, normalize):\n"
    "use ./bench.\n"};

/* Prints a list "A (x), B (y), ..." on stdout in lines of at most width
 * columns, breaking between its items (a longer item alone), each line
 * starting with indent: --help's list of formats. */
static void print_wrapped(const char *text, const char *indent, size_t width) {
  size_t col = 0;
  while (*text) {
    const char *comma = strstr(text, ", ");
    size_t n = comma ? (size_t)(comma - text) + 1 : strlen(text);
    if (col && col + 1 + n > width) {
      putchar('\n');
      col = 0;
    }
    if (!col) {
      fputs(indent, stdout);
      col = strlen(indent);
    } else {
      putchar(' ');
      col++;
    }
    fwrite(text, 1, n, stdout);
    col += n;
    text += comma ? n + 1 : n;
  }
  if (col)
    putchar('\n');
}

/* ---- options ------------------------------------------------------------- */

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
  int ds_given; /* --as, --scale, --outlier-z or --range given */
  int mpi;      /* --mpi */
} stats_options;

#define usage(...) ist_cli_usage_error("", "imgstat", __VA_ARGS__)

/* Reports whether stdout got everything written so far. */
static int flush_or_complain(void) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "imgstat: cannot write to standard output: %s\n",
            strerror(errno));
    return EXIT_INPUT_FAILED;
  }
  return EXIT_OK;
}

/* Where each on/off option of the command is kept (NULL: not one). */
static int *flag_of(stats_options *o, int id) {
  switch (id) {
  case IST_OPT_NULL:
    return &o->null_lists;
  case IST_OPT_FOLLOW:
    return &o->follow;
  case IST_OPT_ERRORS_AS_RECORDS:
    return &o->errors_as_records;
  case IST_OPT_PROGRESS:
    return &o->progress;
  case IST_OPT_HISTOGRAM:
    return &o->hist.fields;
  case IST_OPT_HISTOGRAM_LOG:
    return &o->hist.png_log;
  case IST_OPT_QUIET:
    return &o->quiet;
  case IST_OPT_MPI:
    return &o->mpi;
  default:
    return NULL;
  }
}

/* --version's second line: nvJPEG compiled in, its library, and the
 * backend the current device offers (CUDA is started for that). */
static void print_nvjpeg_version(void) {
  imgstat_gpu_jpeg_info j;
  imgstat_gpu_jpeg_info_get(&j);
  if (!j.compiled)
    printf("nvJPEG: not compiled in\n");
  else if (!j.loaded)
    printf("nvJPEG: compiled in; not loaded (%s)\n", j.err.message);
  else if (j.device)
    printf("nvJPEG: %s; device %s: %s\n", j.version, j.device_name, j.backend);
  else
    printf("nvJPEG: %s; no device (%s)\n", j.version, j.err.message);
}

/* --version's last line: the cores -j 0 uses, and what limits them. */
static void print_cores(void) {
  imgstat_cpu_info cpu;
  imgstat_cpu_info_get(&cpu);
  char quota[32] = "no CPU quota";
  if (cpu.quota)
    snprintf(quota, sizeof quota, "a CPU quota of %d", cpu.quota);
  printf("cores: %d in use (affinity mask %d of %d online; %d offered; %s)\n",
         cpu.cores, cpu.affinity, cpu.online, cpu.offered, quota);
}

static int apply(void *ctx, const ist_opt *row, const ist_opt_value *v) {
  stats_options *o = ctx;
  int *flag = flag_of(o, row->id);
  if (flag) {
    *flag = 1;
    return -1;
  }
  if (row->id == IST_OPT_JOBS) { /* workers here, not CPU threads */
    o->jobs = (int)v->u;
    o->jobs_given = 1;
    return -1;
  }
  if (ist_opt_apply_engine(&o->engine, row, v))
    return -1;
  switch (row->id) {
  case IST_OPT_FILES_FROM:
    o->sources[o->nsources].is_list = 1;
    o->sources[o->nsources++].text = v->text;
    break;
  case IST_OPT_MAX_INFLIGHT:
    o->max_inflight = v->u;
    break;
  case IST_OPT_JSON:
  case IST_OPT_CSV:
  case IST_OPT_BRIEF: {
    imgstat_record_format f = row->id == IST_OPT_JSON  ? IMGSTAT_RECORD_JSON
                              : row->id == IST_OPT_CSV ? IMGSTAT_RECORD_CSV
                                                       : IMGSTAT_RECORD_BRIEF;
    if (o->format != IMGSTAT_RECORD_TEXT && o->format != f)
      return usage("--json, --csv and --brief cannot be used together");
    o->format = f;
    break;
  }
  case IST_OPT_DDOF:
    o->ddof = (int)v->u;
    break;
  case IST_OPT_PERCENTILES:
    memcpy(o->hist.percentiles, v->list, sizeof(double) * (size_t)v->n);
    o->hist.npercentiles = v->n;
    o->hist.fields = 1;
    break;
  case IST_OPT_BINS:
    o->hist.bins = (uint32_t)v->u;
    break;
  case IST_OPT_HISTOGRAM_PNG:
    o->hist.png_path = v->text;
    break;
  case IST_OPT_DATASET:
    o->dataset = o->dataset ? o->dataset : 1;
    break;
  case IST_OPT_DATASET_ONLY:
    o->dataset = 2;
    break;
  case IST_OPT_AS:
    o->ds.as = (imgstat_dataset_as)v->u;
    break;
  case IST_OPT_SCALE:
    o->ds.scale_unit = (int)v->u;
    break;
  case IST_OPT_OUTLIER_Z:
    o->ds.outlier_z = v->list[0];
    break;
  case IST_OPT_RANGE:
    o->ds.have_range = 1;
    o->ds.lo = v->list[0];
    o->ds.hi = v->list[1];
    break;
  case IST_OPT_HELP:
    ist_opt_print_help(stdout, IST_CMD_STATS, &help);
    /* the formats of --version's list (the decoder table), never a copy */
    printf("\nFormats read by this build (and the library of each):\n");
    print_wrapped(imgstat_formats_description(), "  ", 76);
    return flush_or_complain();
  case IST_OPT_VERSION:
    printf("imgstat %s (CUDA backend: %s; JPEG: %s)\nformats: %s\n",
           IMGSTAT_VERSION, imgstat_gpu_compiled() ? "yes" : "no", JPEG_DECODER,
           imgstat_formats_description());
    print_nvjpeg_version();
    print_cores();
    return flush_or_complain();
  default:
    break;
  }
  return -1;
}

static int operand(void *ctx, int argc, char **argv, int *i, int after_dashes) {
  stats_options *o = ctx;
  (void)argc;
  (void)after_dashes;
  o->sources[o->nsources].is_list = 0;
  o->sources[o->nsources++].text = argv[*i];
  return -1;
}

static int histograms_wanted(const imgstat_record_hist *h) {
  return h->fields || h->png_path;
}

/* The options that do nothing in the combination given. */
static const char *no_effect(const void *ctx, ist_opt_id id) {
  const stats_options *o = ctx;
  const imgstat_engine_options *e = &o->engine;
  switch (id) {
  case IST_OPT_KERNEL:
    return e->backend == IMGSTAT_BACKEND_CPU && !e->verify
               ? "with --backend cpu"
               : NULL;
  case IST_OPT_JPEG_CHECK:
    return e->jpeg_decoder == IMGSTAT_JPEG_DECODER_CPU ||
                   e->backend == IMGSTAT_BACKEND_CPU
               ? "when JPEGs are decoded on the CPU"
               : NULL;
  case IST_OPT_NULL:
    for (int k = 0; k < o->nsources; k++)
      if (o->sources[k].is_list)
        return NULL;
    return "without --files-from";
  case IST_OPT_ERRORS_AS_RECORDS:
    return o->format == IMGSTAT_RECORD_TEXT || o->format == IMGSTAT_RECORD_BRIEF
               ? "without --json or --csv"
               : NULL;
  case IST_OPT_AS:
  case IST_OPT_SCALE:
  case IST_OPT_OUTLIER_Z:
    return o->dataset ? NULL : "without --dataset";
  case IST_OPT_RANGE: /* the pooled histograms, or the images' plots */
    return (o->dataset && o->hist.fields) || o->hist.png_path
               ? NULL
               : "without --histogram-png, or --dataset and --histogram";
  case IST_OPT_BINS:
    if (!histograms_wanted(&o->hist))
      return "without --histogram";
    return !o->hist.png_path && o->format != IMGSTAT_RECORD_JSON
               ? "without --json or --histogram-png"
               : NULL;
  default:
    return NULL;
  }
}

static const ist_opt_syntax syntax = {
    IST_CMD_STATS,
    1,
    "unknown option '%s'",
    "option '%s' needs a value",
    "option '%.*s' takes no value",
    "",
    "imgstat",
    NULL,
    apply,
    operand,
    no_effect,
};

/* Whether the run draws one plot, named OUT itself (one input and no
 * dataset, or the dataset only); else each is named after its input
 * (ist_hist_plot_path). several: the run may have several inputs. */
static int one_plot(const stats_options *o, int several) {
  return o->dataset == 2 || (!o->dataset && !several);
}

/* After parsing: the histogram options fit together (that no PNG replaces
 * an input is checked once the inputs are walked: check_plots). Returns -1,
 * or the exit status of the error it printed. */
static int check_histogram_options(const stats_options *o) {
  const imgstat_record_hist *h = &o->hist;
  if (h->png_log && !h->png_path)
    return usage("--histogram-log needs --histogram-png");
  if (h->png_path && !ist_hist_plot_name_ok(h->png_path))
    return usage("--histogram-png: '%s' is not a name ending in .png",
                 h->png_path);
  return -1;
}

/* Fills o from the command line. Returns -1 to run, or the exit status when
 * the program is done (--help, --version, usage error). */
static int parse_args(int argc, char **argv, stats_options *o) {
  o->sources = calloc((size_t)argc, sizeof *o->sources);
  if (!o->sources) {
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_INPUT_FAILED;
  }
  ist_opt_seen seen;
  int status = ist_opt_parse(&syntax, argc, argv, o, &seen);
  if (status >= 0)
    return status;
  if (o->nsources == 0)
    return usage("no input files");
  if (o->engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU &&
      o->engine.backend == IMGSTAT_BACKEND_CPU)
    return usage("--jpeg-decoder gpu cannot be used with --backend cpu");
  status = check_histogram_options(o);
  if (status >= 0)
    return status;
  /* --scale unit is torchvision's ToTensor: without --as, the layouts of
   * its default loader too (Pillow's convert("RGB"): gray replicated, alpha
   * dropped), so that the Normalize line is what ImageFolder gives */
  if (o->ds.scale_unit && !seen.spelled[IST_OPT_AS])
    o->ds.as = IMGSTAT_AS_RGB;
  ist_opt_warn_no_effect(&syntax, o, &seen, o->quiet);
  return -1;
}

/* ---- the run over all inputs --------------------------------------------- */

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
  int stdout_tty;    /* records would land on the progress line */
  int cancel_status; /* the ranks' agreed ist_cli_cancel_status() */
  uint64_t total;    /* the inputs known so far (--mpi: this rank's) */
  int total_known;   /* whether that is all of them */
  int rank;          /* --mpi: this rank (0 prints the CSV header) */
  int begun;         /* the output's start (the CSV header) is out */
} run_state;

/* What comes before the first record (the CSV header), once: after the
 * range pass, before the first input's record. */
static void begin_output(run_state *st) {
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
static void draw_progress(run_state *st, int final) {
  ist_progress_draw(&st->progress, st->total, st->total_known, final);
}

/* Flushes stdout after every record, so that records and messages on stderr
 * keep their order, and a full disk is noticed at the record it hit. */
static void flush_stdout(run_state *st) {
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
      info.has_mean[c] = rec.figures[c].has_values;
      info.mean[c] = rec.figures[c].mean;
    }
    info.figures = res->hist_figures;
    if (plot && plot->have) { /* a float image: its own range */
      info.below = plot->below;
      info.above = plot->above;
    }
    if (write_plot(st, path, &info,
                   plot && plot->have ? plot->hist : res->hist)) {
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
                             res->partial, res->gpu_partial))
      st->any_mismatch = 1;
  }
  return failed;
}

/* ---- the run's callbacks (imgstat_run.h) --------------------------------- */

/* A worker's extra work on a decoded image: a float image's plot, over
 * --range (or the dataset's common range), else over its robust range. */
static void *plot_image(void *ctx, const imgstat_input *in,
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
  if (plot &&
      ist_hist_plot_float(img, res->hist, ds->have_range ? range : NULL,
                          o->hist.bins ? o->hist.bins : DEFAULT_DISPLAY_BINS,
                          plot, &err) != IMGSTAT_OK)
    ist_hist_plot_hists_free(plot); /* the job's histograms, then */
  return plot;
}

static void free_plot(void *ctx, void *extra) {
  (void)ctx;
  ist_hist_plot_hists_free(extra);
  free(extra);
}

/* An input delivered in order: its record (or its error), its plot, its
 * verdict, the progress line. */
static int print_item(void *ctx, const imgstat_run_item *item,
                      const imgstat_run_progress *progress) {
  run_state *st = ctx;
  const imgstat_input *in = item->input;
  const imgstat_job_result *res = item->result;
  begin_output(st);
  if (st->stdout_tty || res->status != IMGSTAT_OK || res->nwarnings > 0 ||
      res->verified || st->opt->hist.png_path)
    ist_progress_clear(&st->progress);
  st->progress.done++;
  if (in->size_known)
    st->progress.bytes_in += in->size;
  if (print_result(st, in->path, res, item->extra))
    st->progress.failed++;
  if (item->dataset_error[0]) {
    ist_cli_path_error(in->path, "--dataset: %s", item->dataset_error);
    st->any_failed = 1;
  }
  flush_stdout(st);
  st->total = progress->total;
  st->total_known = progress->total_known;
  draw_progress(st, 0);
  return st->write_failed;
}

/* The float range pass's progress (--dataset --histogram): its own line,
 * labelled; the run's starts from zero after it. */
static void print_range_progress(void *ctx, const imgstat_run_progress *p) {
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
static void print_stage_times(run_state *st) {
  imgstat_engine_times t;
  double read_s, output_s;
  imgstat_run_times(st->run, &t, &read_s, &output_s);
  imgstat_number_fprintf(
      stderr,
      "imgstat: stage times: read %.3f check %.3f decode %.3f (parse "
      "%.3f alloc %.3f nvjpeg %.3f wait %.3f) reduce %.3f histogram "
      "%.3f cpu %.3f output %.3f close %.3f (s, summed over threads); "
      "context %.3f nvjpeg %.3f (load %.3f device %.3f handles %.3f [create "
      "%.3f info %.3f] decoder %.3f) ready %.3f ready-last %.3f first-submit "
      "%.3f first-batch %.3f last-batch %.3f input-end %.3f closed %.3f "
      "shutdown %.3f (s from start); stage-join %.3f teardown %.3f (s); "
      "items %" PRIu64 " batches %" PRIu64 " max-batch %d hardware %" PRIu64
      " hybrid %" PRIu64 " cpu %" PRIu64 "\n",
      read_s, t.check_s, t.decode_s, t.parse_s, t.alloc_s, t.nvjpeg_host_s,
      t.nvjpeg_wait_s, t.reduce_s, t.histogram_s, t.cpu_s, output_s, t.close_s,
      t.context_s, t.nvjpeg_s, t.jpeg_load_s, t.jpeg_device_s, t.jpeg_handles_s,
      t.jpeg_create_s, t.jpeg_info_s, t.jpeg_decoder_s, t.ready_s,
      t.ready_last_s, t.first_submit_s, t.first_batch_s, t.last_batch_s,
      t.input_end_s, t.closed_s, t.shutdown_s, t.stage_end_s, t.teardown_s,
      t.items, t.batches, t.max_batch, t.hardware, t.hybrid, t.cpu);
}

/* The dataset record after the images' (--dataset), and its PNG. */
static void print_dataset(run_state *st) {
  const stats_options *o = st->opt;
  imgstat_dataset_result r;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_run_dataset_finish(st->run, o->ddof, &r, &err) != IMGSTAT_OK) {
    ist_cli_error("--dataset: %s", err.message);
    st->any_failed = 1;
    return;
  }
  imgstat_hist_figures hf[IMGSTAT_MAX_CHANNELS];
  imgstat_dataset_hist_figures(&r, o->hist.percentiles, o->hist.npercentiles,
                               hf);
  imgstat_record_write_dataset(
      stdout, o->format, &r, &o->hist, o->hist.fields ? hf : NULL,
      st->records++, o->errors_as_records && o->format == IMGSTAT_RECORD_CSV);
  flush_stdout(st);
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
  imgstat_dataset_result_free(&r);
}

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
  FILE *cap[2];   /* ranks > 0: what fds 1 and 2 write to */
  int saved[2];   /* the fds 1 and 2 to restore, else -1 */
  int cap_failed; /* the capture could not be set up */
} mpi_run;

/* Whether --mpi is among the arguments (before "--"): MPI starts before the
 * options are parsed, so that ranks > 0 can keep quiet the messages every
 * rank would print alike (usage errors, warnings). The parse decides. */
static int mpi_asked(int argc, char **argv) {
  for (int k = 1; k < argc && strcmp(argv[k], "--") != 0; k++)
    if (strcmp(argv[k], "--mpi") == 0)
      return 1;
  return 0;
}

/* Ranks > 0: points fds 1 and 2 to temporary files. */
static void capture_start(mpi_run *mr) {
  fflush(stdout);
  fflush(stderr);
  for (int k = 0; k < 2; k++) {
    mr->saved[k] = -1;
    mr->cap[k] = tmpfile();
    if (mr->cap[k])
      mr->saved[k] = dup(k + 1);
    if (mr->saved[k] < 0 || dup2(fileno(mr->cap[k]), k + 1) < 0)
      mr->cap_failed = 1;
  }
}

/* Drops what was captured so far (what rank 0 printed alike). */
static void capture_reset(mpi_run *mr) {
  fflush(stdout);
  fflush(stderr);
  for (int k = 0; k < 2; k++)
    if (mr->cap[k] && (ftruncate(k + 1, 0) != 0 || lseek(k + 1, 0, 0) < 0))
      mr->cap_failed = 1;
}

/* Gives fds 1 and 2 back; the captures stay to be read. */
static void capture_end(mpi_run *mr) {
  fflush(stdout);
  fflush(stderr);
  for (int k = 0; k < 2; k++)
    if (mr->saved[k] >= 0) {
      dup2(mr->saved[k], k + 1);
      close(mr->saved[k]);
      mr->saved[k] = -1;
    }
}

static void capture_free(mpi_run *mr) {
  capture_end(mr);
  for (int k = 0; k < 2; k++)
    if (mr->cap[k])
      fclose(mr->cap[k]);
}

/* The most bytes a rank sends in one gather (a round); the environment
 * variable IMGSTAT_TEST_MPI_CHUNK makes it smaller (tests). */
static size_t gather_chunk(void) {
  size_t chunk = (size_t)16 << 20;
  const char *t = getenv("IMGSTAT_TEST_MPI_CHUNK");
  uint64_t v;
  if (t && ist_cli_parse_uint(t, 1, chunk, &v))
    chunk = (size_t)v;
  return chunk;
}

/* Brings the capture of stream k (0 stdout, 1 stderr) of every rank > 0 to
 * rank 0, rank after rank, each in rounds of at most gather_chunk bytes
 * (every rank learns every rank's length first, so all take part in the
 * same rounds), and writes it to dest there. *strip: a text record's
 * leading blank line (ranks > 0 number their records from 1) is dropped
 * when nothing was printed before it. Collective. */
static imgstat_status gather_capture(mpi_run *mr, int k, FILE *dest, int *strip,
                                     imgstat_error *err) {
  int ranks = mr->at.size, me = mr->at.rank;
  FILE *f = mr->cap[k];
  uint64_t *len = calloc((size_t)ranks, sizeof *len);
  size_t chunk = gather_chunk();
  unsigned char *buf = malloc(chunk);
  if (!len || !buf) {
    free(len);
    free(buf);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  if (f && fseek(f, 0, SEEK_END) == 0) {
    long end = ftell(f);
    len[me] = end > 0 ? (uint64_t)end : 0;
    rewind(f);
  }
  imgstat_status s =
      imgstat_mpi_allreduce_u64(mr->m, len, ranks, IMGSTAT_MPI_SUM, err);
  for (int r = 1; r < ranks && s == IMGSTAT_OK; r++) {
    for (uint64_t done = 0; done < len[r] && s == IMGSTAT_OK;) {
      size_t n = len[r] - done < chunk ? (size_t)(len[r] - done) : chunk;
      done += n;
      if (r == me) { /* a short read (no such thing): zeros, same length */
        size_t got = fread(buf, 1, n, f);
        memset(buf + got, 0, n - got);
      }
      imgstat_mpi_blobs blobs;
      s = imgstat_mpi_gather(mr->m, buf, r == me ? n : 0, &blobs, err);
      if (s != IMGSTAT_OK || me != 0) {
        imgstat_mpi_blobs_free(&blobs);
        continue;
      }
      const unsigned char *at = blobs.data + blobs.offsets[r];
      size_t m = blobs.offsets[r + 1] - blobs.offsets[r];
      if (*strip && m > 0) {
        if (*at == '\n') {
          at++;
          m--;
        }
        *strip = 0;
      }
      fwrite(at, 1, m, dest);
      imgstat_mpi_blobs_free(&blobs);
    }
  }
  free(len);
  free(buf);
  return s;
}

/* After parsing: what --mpi cannot do. Returns -1, or the exit status of
 * the error it printed. */
static int check_mpi_options(const stats_options *o) {
  if (!o->mpi)
    return -1;
  if (!imgstat_mpi_built())
    return usage("--mpi: this imgstat was built without MPI (configure "
                 "with -DIMGSTAT_WITH_MPI=ON and libopenmpi-dev)");
  for (int k = 0; k < o->nsources; k++)
    if (!o->sources[k].is_list && strcmp(o->sources[k].text, "-") == 0)
      return usage("--mpi: an image on standard input cannot be shared by "
                   "the ranks (a list of paths there can: --files-from -)");
  if (o->hist.png_path && o->dataset != 2)
    return usage("--mpi: --histogram-png needs --dataset-only (the "
                 "per-image plots would be named by each rank alone)");
  return -1;
}

/* --mpi, after this rank's run (which merged the dataset accumulators on
 * rank 0): the ranks agree on the outcome and rank 0 prints the others'
 * records and messages. Returns whether the dataset record is to be
 * printed (rank 0). */
static int mpi_finish(run_state *st, mpi_run *mr, int batch_ok,
                      const stats_options *o) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int cancel = ist_cli_cancel_status();
  uint64_t any[5] = {(uint64_t)st->write_failed, (uint64_t)st->any_mismatch,
                     (uint64_t)(st->any_failed || mr->cap_failed),
                     (uint64_t)!batch_ok,
                     cancel >= 0 ? (uint64_t)cancel + 1 : 0};
  uint64_t counts[3] = {st->progress.done, st->progress.failed,
                        st->records - (mr->at.rank > 0)};
  imgstat_status s =
      imgstat_mpi_allreduce_u64(mr->m, any, 5, IMGSTAT_MPI_MAX, &err);
  if (s == IMGSTAT_OK)
    s = imgstat_mpi_allreduce_u64(mr->m, counts, 3, IMGSTAT_MPI_SUM, &err);
  unsigned long mine = st->records;
  capture_end(mr);
  int strip = o->format == IMGSTAT_RECORD_TEXT && mine == 0;
  if (s == IMGSTAT_OK)
    s = gather_capture(mr, 0, stdout, &strip, &err);
  int no_strip = 0;
  if (s == IMGSTAT_OK)
    s = gather_capture(mr, 1, stderr, &no_strip, &err);
  if (s == IMGSTAT_OK) {
    st->write_failed = (int)any[0];
    st->any_mismatch = (int)any[1];
    st->any_failed = (int)any[2];
    st->progress.done = counts[0];
    st->progress.failed = counts[1];
    st->records = (unsigned long)counts[2];
    st->cancel_status = (int)any[4] - 1;
    flush_stdout(st);
    return !any[3] && !any[0] && !st->write_failed;
  }
  ist_cli_error("--mpi: %s", err.message);
  st->any_failed = 1;
  return 0;
}

/* Under --mpi (mr not NULL): whether any rank has a nonzero flag (every
 * rank learns it); else the flag. A failed collective counts as one. */
static int any_rank(const mpi_run *mr, int flag) {
  if (!mr || !mr->m)
    return flag;
  uint64_t v = flag != 0;
  imgstat_error err;
  if (imgstat_mpi_allreduce_u64(mr->m, &v, 1, IMGSTAT_MPI_MAX, &err) !=
      IMGSTAT_OK)
    return 1;
  return v != 0;
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
  if (any_rank(mr, status >= 0) && status < 0)
    status = IMGSTAT_EXIT_USAGE;
  return status;
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
  if (mpi_asked(argc, argv) && imgstat_mpi_built()) {
    if (imgstat_mpi_init(&argc, &argv, &mr.m, &err) != IMGSTAT_OK) {
      ist_cli_error("--mpi: %s", err.message);
      return EXIT_INPUT_FAILED;
    }
    mr.at = imgstat_mpi_where(mr.m);
    if (mr.at.rank > 0)
      capture_start(&mr);
  }
  status = parse_args(argc, argv, &opt);
  if (status < 0)
    status = check_mpi_options(&opt);
  if (status < 0 && mr.m && !opt.mpi) /* "--mpi" was an option's value */
    capture_end(&mr);
  if (status < 0 && mr.m && opt.mpi)
    capture_reset(&mr); /* rank 0 printed the same warnings */
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
  opt.engine.cost = ist_cli_cost_model();
  ro.engine = opt.engine;
  ro.request.histograms = histograms_wanted(&opt.hist);
  ro.request.npercentiles = opt.hist.npercentiles;
  memcpy(ro.request.percentiles, opt.hist.percentiles,
         sizeof ro.request.percentiles);
  ro.dataset = opt.dataset != 0;
  ro.ds = opt.ds;
  ro.whole_list = opt.hist.png_path != NULL;
  ro.mpi = opt.mpi ? mr.m : NULL;
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
  st.one_plot = one_plot(&opt, info->several);
  if (opt.hist.png_path) {
    status = check_plots(&st, &mr, imgstat_run_input_list(st.run));
    if (status >= 0)
      goto cleanup;
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

  /* --mpi: only rank 0 draws the line, for its share */
  ist_progress_start(&st.progress, !opt.quiet && mr.at.rank == 0 &&
                                       (opt.progress || isatty(STDERR_FILENO)));
  st.progress.workers = info->workers;
  st.progress.cores = info->cores;
  if (info->range_pass)
    st.progress.label = "--dataset, float range: ";
  st.stdout_tty = isatty(STDOUT_FILENO);

  if (opt.hist.png_path) /* no partial PNG left by a signal */
    ist_cli_cleanup_on_signals();
  if (opt.dataset)
    opt.hist.dataset_columns = opt.format == IMGSTAT_RECORD_CSV;
  opt.hist.decoder_column = opt.format == IMGSTAT_RECORD_CSV &&
                            opt.engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU;
  st.rank = mr.at.rank;
  if (mr.at.rank > 0)
    st.records = 1; /* every text record opens with its blank line */
  imgstat_run_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.ctx = &st;
  cb.item = print_item;
  cb.progress = print_range_progress;
  cb.image = plot_image;
  cb.free_extra = free_plot;
  imgstat_run_report rep;
  s = imgstat_run_execute(st.run, &cb, &rep, &err);
  if (!rep.range_stopped && !(s != IMGSTAT_OK && !opt.mpi && rep.set_up_failed))
    begin_output(&st);
  flush_stdout(&st);
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
  draw_progress(&st, 1);
  if (getenv("IMGSTAT_STAGE_TIMES")) {
    /* the teardown timed too: the GPU side of the engine goes now */
    imgstat_run_shutdown(st.run);
    print_stage_times(&st);
  }
  int print_ds = rep.dataset_ok && !st.write_failed;
  st.cancel_status = ist_cli_cancel_status();
  if (opt.mpi)
    print_ds =
        mpi_finish(&st, &mr, s == IMGSTAT_OK || rep.merge_failed, &opt) &&
        rep.dataset_ok && mr.at.rank == 0;
  if (print_ds)
    print_dataset(&st);
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
    flush_stdout(&st);
    if (st.write_failed)
      status = EXIT_INPUT_FAILED;
    fflush(stderr);
    _exit(status);
  }

cleanup:
  for (size_t k = 0; k < st.nplots; k++)
    free(st.plots[k]);
  free(st.plots);
  imgstat_run_destroy(st.run);
  imgstat_output_guard_destroy(st.guard);
  free(opt.sources);
  capture_free(&mr);
  if (mr.m && imgstat_mpi_finalize(mr.m, &err) != IMGSTAT_OK) {
    ist_cli_error("--mpi: %s", err.message);
    status = status ? status : EXIT_INPUT_FAILED;
  }
  return status;
}
