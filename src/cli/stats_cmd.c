/*
 * `imgstat [OPTIONS] FILE...`: per-channel statistics of each input.
 * Parse (the option table, options.c), run (one job per input through the
 * library's engine, imgstat_job.h), print (the records, the histogram PNG,
 * the --verify verdicts, the messages and warnings of each job, the exit
 * status).
 */
#include "stats_cmd.h"

#include "cli_util.h"
#include "dataset_pass.h"
#include "hist_plot.h"
#include "imgstat.h"
#include "imgstat_cuda.h"
#include "imgstat_cuda_jpeg.h"
#include "imgstat_dataset.h"
#include "imgstat_job.h"
#include "imgstat_mpi.h"
#include "imgstat_pipeline.h"
#include "options.h"
#include "output.h"
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

/* ---- options ----------------------------------------------------------------
 */

typedef struct stats_options {
  ist_output_format format;
  imgstat_engine_options engine; /* backend, verify, kernel, threads, load */
  int ddof;
  int quiet;
  ist_hist_cli hist; /* --histogram and friends */
  /* The sources in the order given: path arguments and --files-from lists
   * (owned array; the texts point into argv). */
  struct source {
    int is_list;
    const char *text;
  } * sources;
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
  if (!imgstat_gpu_jpeg_compiled()) {
    printf("nvJPEG: not compiled in\n");
    return;
  }
  const char *version = "";
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_gpu_jpeg_load(&version, &err) != IMGSTAT_OK) {
    printf("nvJPEG: compiled in; not loaded (%s)\n", err.message);
    return;
  }
  imgstat_gpu *gpu = NULL;
  imgstat_gpu_jpeg *dec = NULL;
  if (imgstat_gpu_create(-1, &gpu, &err) == IMGSTAT_OK &&
      imgstat_gpu_jpeg_create(gpu, &dec, &err) == IMGSTAT_OK)
    printf("nvJPEG: %s; device %s: %s\n", version, imgstat_gpu_device_name(gpu),
           imgstat_gpu_jpeg_backend(dec));
  else
    printf("nvJPEG: %s; no device (%s)\n", version, err.message);
  imgstat_gpu_jpeg_destroy(dec);
  imgstat_gpu_destroy(gpu);
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
    ist_output_format f = row->id == IST_OPT_JSON  ? IMGSTAT_OUTPUT_JSON
                          : row->id == IST_OPT_CSV ? IMGSTAT_OUTPUT_CSV
                                                   : IMGSTAT_OUTPUT_BRIEF;
    if (o->format != IMGSTAT_OUTPUT_TEXT && o->format != f)
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

static int histograms_wanted(const ist_hist_cli *h) {
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
    return o->format == IMGSTAT_OUTPUT_TEXT || o->format == IMGSTAT_OUTPUT_BRIEF
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
    return !o->hist.png_path && o->format != IMGSTAT_OUTPUT_JSON
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

/* Whether the run may have several inputs: more than one source, a list,
 * or a directory. */
static int several_inputs(const stats_options *o) {
  if (o->nsources != 1 || o->sources[0].is_list)
    return 1;
  struct stat sb;
  return strcmp(o->sources[0].text, "-") != 0 &&
         stat(o->sources[0].text, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Whether the run draws one plot, named OUT itself (one input and no
 * dataset, or the dataset only); else each is named after its input
 * (ist_hist_plot_path). */
static int one_plot(const stats_options *o) {
  return o->dataset == 2 || (!o->dataset && !several_inputs(o));
}

/* After parsing: the histogram options fit together (that no PNG replaces
 * an input is checked once the inputs are walked: check_plots). Returns -1,
 * or the exit status of the error it printed. */
static int check_histogram_options(const stats_options *o) {
  const ist_hist_cli *h = &o->hist;
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

/* ---- the run over all inputs
 * --------------------------------------------------
 */

typedef struct run_state {
  const stats_options *opt;
  imgstat_engine *engine;
  imgstat_inputs *inputs;
  imgstat_stats_request req;
  int needs_gpu; /* --backend gpu or --verify: decided before decoding */
  int one_plot;  /* the run's one plot is OUT itself */
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
  int stdout_tty; /* records would land on the progress line */
  /* --mpi: this rank's share of the inputs, [share_first, share_end) */
  int mpi;
  uint64_t share_first, share_end, fed;
  int cancel_status;   /* the ranks' agreed ist_cli_cancel_status() */
  imgstat_dataset *ds; /* --dataset: the accumulator */
  int ds_failed;       /* adding to it failed (reported once) */
  /* IMGSTAT_STAGE_TIMES: the reading (open: file and header) and output
   * times of the per-stage table, in ns */
  int stage_times;
  atomic_uint_fast64_t read_ns, output_ns;
} run_state;

/* What a worker hands back for one input. */
typedef struct item_result {
  imgstat_job_result res;
  int cancelled; /* the run was cancelled before the input was decoded */
  /* --dataset: what the pool takes beside the job's result (--as gray of a
   * colour image: the luma's partial and histogram; float images with
   * --histogram --range: histograms over the common range). */
  int ds_gray;
  imgstat_partial ds_partial[IMGSTAT_MAX_CHANNELS];
  int ds_hists;
  imgstat_histogram ds_hist[IMGSTAT_MAX_CHANNELS];
  /* --histogram-png of a float image: what its plot shows (hist_plot.h) */
  ist_plot_hists plot;
  /* handed to the engine's device stage: completed from its thread */
  imgstat_task_pending *pending;
} item_result;

/* The pool's extra work on a decoded image (in the worker). */
static void dataset_work(run_state *st, const imgstat_image *img,
                         item_result *r) {
  const imgstat_dataset_options *o = &st->opt->ds;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_hist_options ho = {o->float_bins, o->have_range, o->lo, o->hi};
  int hist = o->histograms && (img->sample != IMGSTAT_F32 || o->have_range);
  if (imgstat_dataset_needs_gray(o, img->channels)) {
    imgstat_image gray;
    if (imgstat_dataset_gray(img, &gray, &err) != IMGSTAT_OK)
      return;
    if (imgstat_cpu_stats(&gray, 1, r->ds_partial, &err) == IMGSTAT_OK) {
      r->ds_gray = 1;
      if (hist && imgstat_histogram_compute(&gray, 0, &ho, &r->ds_hist[0],
                                            &err) == IMGSTAT_OK)
        r->ds_hists = 1;
    }
    imgstat_image_free(&gray);
  } else if (hist && img->sample == IMGSTAT_F32) {
    int ok = 1;
    for (int c = 0; c < img->channels && ok; c++)
      ok = imgstat_histogram_compute(img, c, &ho, &r->ds_hist[c], &err) ==
           IMGSTAT_OK;
    r->ds_hists = ok;
  }
}

static void dataset_free(item_result *r) {
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    imgstat_histogram_free(&r->ds_hist[c]);
  ist_hist_plot_hists_free(&r->plot);
}

/* Adds a delivered input to the pool, in input order. */
static void dataset_add(run_state *st, const char *path, uint64_t index,
                        const item_result *r) {
  const imgstat_job_result *res = &r->res;
  if (res->status != IMGSTAT_OK) {
    imgstat_dataset_add_failed(st->ds, index);
    return;
  }
  const imgstat_dataset_options *o = &st->opt->ds;
  int gray = imgstat_dataset_needs_gray(o, res->channels);
  imgstat_dataset_image im;
  memset(&im, 0, sizeof im);
  im.name = path;
  im.width = res->width;
  im.height = res->height;
  im.channels = res->channels;
  im.colour = res->colour;
  im.sample = res->sample;
  im.partial = gray ? r->ds_partial : res->partial;
  if (r->ds_hists)
    im.hist = r->ds_hist;
  else if (!gray && res->has_histograms && res->sample != IMGSTAT_F32)
    im.hist = res->hist;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if ((gray && !r->ds_gray) ||
      imgstat_dataset_add(st->ds, index, &im, &err) != IMGSTAT_OK) {
    ist_cli_path_error(path, "--dataset: %s",
                       err.message[0] ? err.message : "out of memory");
    imgstat_dataset_add_failed(st->ds, index);
    st->any_failed = 1;
  }
}

/* The inputs of this run so far (with --mpi: this rank's share) and
 * whether that is all of them. */
static int inputs_total(const run_state *st, uint64_t *total) {
  if (st->mpi) {
    *total = st->share_end - st->share_first;
    return 1;
  }
  return imgstat_inputs_total(st->inputs, total);
}

/* Draws the progress line (progress.h) with the walk's total so far. */
static void draw_progress(run_state *st, int final) {
  uint64_t total = 0;
  int known = inputs_total(st, &total);
  ist_progress_draw(&st->progress, total, known, final);
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
  const char *why = res->error.message;
  char text[IMGSTAT_ERROR_MAX + 32];
  if (res->failed_stage == IMGSTAT_STAGE_LOAD &&
      res->status == IMGSTAT_ERR_LIMIT && !strstr(why, "max-pixels") &&
      !strstr(why, "max-memory"))
    snprintf(text, sizeof text, "%s (see --max-pixels)", why);
  else
    snprintf(text, sizeof text, "%s", why);
  ist_cli_path_error(path, "%s", text);
  if (st->opt->errors_as_records)
    ist_output_error_record(stdout, st->opt->format, path, text,
                            &st->opt->hist);
  st->any_failed = 1;
}

/* Draws a plot named after input (NULL: OUT itself) unless a plot of this
 * run has that name already (then "-2", "-3", ... before .png). Returns 1
 * after printing an error. */
static int write_plot(run_state *st, const char *input,
                      const ist_plot_info *info,
                      const imgstat_histogram *hist) {
  const ist_hist_cli *h = &st->opt->hist;
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
  ist_record rec;
  memset(&rec, 0, sizeof rec);
  rec.file = path;
  rec.width = res->width;
  rec.height = res->height;
  rec.channels = res->channels;
  rec.colour = res->colour;
  rec.sample = res->sample;
  rec.pages = res->pages;
  rec.page = res->page;
  rec.backend = imgstat_backend_name(res->backend);
  if (o->engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU)
    rec.decoder = res->decoder ? res->decoder
                  : res->format && strcmp(res->format, "JPEG") == 0
                      ? IMGSTAT_DECODER_TURBOJPEG
                      : NULL;
  rec.decoder_column = o->hist.decoder_column;
  rec.ddof = o->ddof;
  rec.error_column = o->errors_as_records && o->format == IMGSTAT_OUTPUT_CSV;
  rec.dataset_columns = o->hist.dataset_columns;
  for (int k = 0; k < res->nwarnings; k++)
    if (res->warning[k].from_decoder && rec.nwarnings < IST_RECORD_MAX_WARNINGS)
      rec.warnings[rec.nwarnings++] = res->warning[k].text;
  for (int c = 0; c < res->channels; c++) {
    const imgstat_partial *p = &res->partial[c];
    imgstat_figures_compute(p, res->sample, res->width, o->ddof,
                            &rec.figures[c]);
    /* exact for u8 / u16; f32: from the partial's m2 and mean */
    rec.exact_sum_sq[c] = p->sumsq;
    rec.sum_sq[c] = res->sample == IMGSTAT_F32
                        ? (double)((long double)p->m2 +
                                   (long double)p->count * p->mean * p->mean)
                        : (double)p->sumsq;
  }
  if (res->has_histograms) {
    rec.hist = &o->hist;
    rec.histograms = res->hist;
    rec.hist_figures = res->hist_figures;
  }
  if (o->dataset == 2)
    return 0;
  ist_output_record(stdout, o->format, &rec, st->records++);
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
        o->format == IMGSTAT_OUTPUT_TEXT || o->format == IMGSTAT_OUTPUT_BRIEF
            ? stdout
            : stderr;
    fflush(stdout);
    if (!ist_verify_partials(out, path, res->colour, res->channels, res->sample,
                             res->partial, res->gpu_partial))
      st->any_mismatch = 1;
  }
  return failed;
}

/* A result that says the input failed at stage with the reason in err. */
static void result_failed(imgstat_job_result *res, imgstat_job_stage stage,
                          imgstat_status status, const char *why) {
  memset(res, 0, sizeof *res);
  res->status = status;
  res->failed_stage = stage;
  res->error.status = status;
  snprintf(res->error.message, sizeof res->error.message, "%s",
           why && *why ? why : "unknown error");
}

/* ---- the batch: inputs fed in order, worked on by any worker, printed in
 * order */

static imgstat_status next_input(void *ctx, void **item, imgstat_error *err) {
  run_state *st = ctx;
  imgstat_input *in = NULL;
  imgstat_status s = IMGSTAT_OK;
  if (!st->mpi || st->fed++ < st->share_end - st->share_first)
    s = imgstat_inputs_next(st->inputs, &in, err);
  /* the walk runs ahead: the progress line's total, auto's rule */
  if (s == IMGSTAT_OK)
    s = imgstat_inputs_prefetch(st->inputs, 4096, err);
  uint64_t total = 0;
  inputs_total(st, &total);
  imgstat_engine_set_workload(st->engine, total);
  *item = in;
  return s;
}

/* The reservation of an input that the engine decodes on the GPU. */
typedef struct gpu_reserve {
  imgstat_task *task;
  uint64_t bytes;
} gpu_reserve;

static int reserve_for_gpu(void *ctx, uint64_t bytes) {
  gpu_reserve *r = ctx;
  r->bytes = bytes;
  return imgstat_task_reserve(r->task, bytes);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int reserve_task(void *ctx, uint64_t bytes) {
  return imgstat_task_reserve(ctx, bytes);
}

/* The engine's device stage finished an item handed to it. */
static void stage_finished(void *ctx, int cancelled) {
  item_result *r = ctx;
  if (cancelled)
    r->cancelled = 1;
  imgstat_task_complete(r->pending);
}

/* A JPEG file the engine may decode on the GPU (nvJPEG): its decoder
 * opened and offered. Returns 1 when the item is done or handed to the
 * engine's device stage (then delivered once the stage completes it), 0
 * when the caller decodes it on the CPU as usual. */
static int offer_to_gpu(run_state *st, imgstat_task *task,
                        const imgstat_input *in, item_result *r) {
  imgstat_job_result *res = &r->res;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_decoder *d = NULL;
  uint64_t t0 = st->stage_times ? now_ns() : 0;
  imgstat_status s =
      imgstat_decoder_open(in->path, &st->opt->engine.load, &d, &err);
  if (st->stage_times)
    atomic_fetch_add(&st->read_ns, now_ns() - t0);
  if (s != IMGSTAT_OK) {
    imgstat_task_reserve(task, 0);
    result_failed(res, IMGSTAT_STAGE_LOAD, s, err.message);
    return 1;
  }
  const imgstat_header *h = imgstat_decoder_header(d);
  int taken = 0;
  /* --dataset --as gray: the CPU makes the luma from host pixels */
  int gray = st->ds && imgstat_dataset_needs_gray(&st->opt->ds, h->channels);
  if (!gray && !st->opt->engine.verify) {
    /* the streaming stage: this worker goes on with the next file */
    r->pending = imgstat_task_defer(task);
    taken = imgstat_engine_stats_decoder_async(st->engine, d, in->path,
                                               &st->req, reserve_task, task,
                                               res, stage_finished, r);
    if (taken != 2) { /* else the engine's stage completes the item */
      imgstat_task_complete(r->pending);
      r->pending = NULL;
    }
    if (taken < 0)
      r->cancelled = 1;
    /* 1, 2: the file's bytes held until the delivery */
  } else if (!gray) {
    gpu_reserve gr = {task, 0};
    taken = imgstat_engine_stats_decoder(st->engine, d, in->path, &st->req,
                                         reserve_for_gpu, &gr, res);
    if (taken < 0)
      r->cancelled = 1;
    else if (taken)
      imgstat_task_release(task, gr.bytes);
  }
  imgstat_decoder_close(d);
  return taken != 0;
}

/* One input on a worker: the header read, the decoded size reserved from
 * the budget, the pixels decoded, then the statistics by the engine (a JPEG
 * that the engine decodes on the GPU: all of it there). */
static void work_input(void *ctx, imgstat_task *task, void *item,
                       void *result) {
  run_state *st = ctx;
  const imgstat_input *in = item;
  item_result *r = result;
  imgstat_job_result *res = &r->res;
  if (st->needs_gpu && in->kind != IMGSTAT_INPUT_ERROR &&
      !(in->kind == IMGSTAT_INPUT_FILE &&
        imgstat_engine_may_decode_jpeg(st->engine))) {
    /* no decoding for an item that cannot run (a JPEG offered to the GPU
     * decoder waits for the decision in the engine, after the checks that
     * overlap the GPU's start-up) */
    if (imgstat_engine_decide(st->engine, res) != IMGSTAT_OK) {
      imgstat_task_reserve(task, 0);
      return;
    }
    imgstat_job_result_free(res);
  }
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (in->kind == IMGSTAT_INPUT_FILE &&
      imgstat_engine_may_decode_jpeg(st->engine) &&
      offer_to_gpu(st, task, in, r))
    return;
  imgstat_image img;
  uint64_t reserved;
  int cancelled;
  imgstat_status s = imgstat_task_decode(task, in, &st->opt->engine.load, 0,
                                         &img, &reserved, &cancelled, &err);
  if (cancelled) {
    r->cancelled = 1;
    return;
  }
  if (s != IMGSTAT_OK) {
    result_failed(res, IMGSTAT_STAGE_LOAD, s, err.message);
    return;
  }
  if (imgstat_engine_stats(st->engine, in->path, &img, &st->req, res) ==
          IMGSTAT_OK &&
      st->ds)
    dataset_work(st, &img, r);
  /* a float image's plot: over --range, else over its robust range */
  const stats_options *o = st->opt;
  if (res->status == IMGSTAT_OK && res->has_histograms && o->hist.png_path &&
      o->dataset != 2 && img.sample == IMGSTAT_F32) {
    double range[2] = {o->ds.lo, o->ds.hi};
    if (ist_hist_plot_float(&img, res->hist, o->ds.have_range ? range : NULL,
                            o->hist.bins ? o->hist.bins : DEFAULT_DISPLAY_BINS,
                            &r->plot, &err) != IMGSTAT_OK)
      ist_hist_plot_hists_free(&r->plot); /* the job's histograms, then */
  }
  imgstat_image_free(&img);
  imgstat_task_release(task, reserved);
}

static int deliver_input(void *ctx, uint64_t index, void *item, void *result,
                         int ran) {
  run_state *st = ctx;
  imgstat_input *in = item;
  item_result *r = result;
  (void)index;
  uint64_t t0 = st->stage_times ? now_ns() : 0;
  if (ran && !r->cancelled) {
    if (st->stdout_tty || r->res.status != IMGSTAT_OK || r->res.nwarnings > 0 ||
        r->res.verified || st->opt->hist.png_path)
      ist_progress_clear(&st->progress);
    st->progress.done++;
    if (in->size_known)
      st->progress.bytes_in += in->size;
    if (print_result(st, in->path, &r->res, &r->plot))
      st->progress.failed++;
    if (st->ds) /* the input's place in the whole list (--mpi: not index) */
      dataset_add(st, in->path, in->index, r);
    flush_stdout(st);
    draw_progress(st, 0);
  }
  imgstat_job_result_free(&r->res);
  dataset_free(r);
  imgstat_input_free(in);
  if (st->stage_times)
    atomic_fetch_add(&st->output_ns, now_ns() - t0);
  return st->write_failed;
}

/* IMGSTAT_STAGE_TIMES: one line on stderr, where the JPEGs' time went
 * (durations summed over the threads of each stage, then moments from the
 * engine's creation; tests/gpu/pipeline18.sh reads it). */
static void print_stage_times(run_state *st) {
  imgstat_engine_times t;
  imgstat_engine_times_get(st->engine, &t);
  fprintf(stderr,
          "imgstat: stage times: read %.3f check %.3f decode %.3f (parse "
          "%.3f alloc %.3f nvjpeg %.3f wait %.3f) reduce %.3f histogram "
          "%.3f cpu %.3f output %.3f close %.3f (s, summed over threads); "
          "context %.3f nvjpeg %.3f ready %.3f ready-last %.3f first-submit "
          "%.3f first-batch %.3f last-batch %.3f input-end %.3f closed %.3f "
          "shutdown %.3f (s from start); stage-join %.3f teardown %.3f (s); "
          "items %" PRIu64 " batches %" PRIu64 " max-batch %d hardware %" PRIu64
          " hybrid %" PRIu64 " cpu %" PRIu64 "\n",
          1e-9 * (double)atomic_load(&st->read_ns), t.check_s, t.decode_s,
          t.parse_s, t.alloc_s, t.nvjpeg_host_s, t.nvjpeg_wait_s, t.reduce_s,
          t.histogram_s, t.cpu_s, 1e-9 * (double)atomic_load(&st->output_ns),
          t.close_s, t.context_s, t.nvjpeg_s, t.ready_s, t.ready_last_s,
          t.first_submit_s, t.first_batch_s, t.last_batch_s, t.input_end_s,
          t.closed_s, t.shutdown_s, t.stage_end_s, t.teardown_s, t.items,
          t.batches, t.max_batch, t.hardware, t.hybrid, t.cpu);
}

/* The batch runner's word that no work will run any more: the engine's
 * device stage stops waiting for fuller batches and closes its lanes as
 * they run dry. */
static void input_drained(void *ctx) {
  run_state *st = ctx;
  imgstat_engine_input_end(st->engine);
}

/* The dataset record after the images' (--dataset), and its PNG. */
static void print_dataset(run_state *st) {
  const stats_options *o = st->opt;
  imgstat_dataset_result r;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_dataset_finish(st->ds, o->ddof, &r, &err) != IMGSTAT_OK) {
    ist_cli_error("--dataset: %s", err.message);
    st->any_failed = 1;
    return;
  }
  imgstat_hist_figures hf[IMGSTAT_MAX_CHANNELS];
  memset(hf, 0, sizeof hf);
  for (int c = 0; c < r.channels; c++) {
    if (!r.ch[c].has_histogram)
      continue;
    imgstat_moments m;
    imgstat_moments_from_histogram(&r.ch[c].hist, &m);
    imgstat_hist_figures_compute(&r.ch[c].hist, &m, o->hist.percentiles,
                                 o->hist.npercentiles, &hf[c]);
  }
  ist_output_dataset(stdout, o->format, &r, &o->hist,
                     o->hist.fields ? hf : NULL, st->records++,
                     o->errors_as_records && o->format == IMGSTAT_OUTPUT_CSV);
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

/* The dataset accumulator as imgstat_mpi_reduce's codec (ctx: the
 * options). Its accumulator is a holder of an imgstat_dataset, so that
 * deserialize can replace what it holds. */
typedef struct ds_holder {
  imgstat_dataset *d;
} ds_holder;

static imgstat_status ds_create(void *ctx, void **acc, imgstat_error *err) {
  ds_holder *h = calloc(1, sizeof *h);
  *acc = h;
  if (!h)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  return imgstat_dataset_create(ctx, &h->d, err);
}

static void ds_destroy(void *ctx, void *acc) {
  (void)ctx;
  ds_holder *h = acc;
  if (h)
    imgstat_dataset_destroy(h->d);
  free(h);
}

static size_t ds_size(void *ctx, const void *acc) {
  (void)ctx;
  void *buf = NULL;
  size_t n = 0;
  imgstat_error err;
  if (imgstat_dataset_serialize(((const ds_holder *)acc)->d, &buf, &n, &err) !=
      IMGSTAT_OK)
    n = 0;
  free(buf);
  return n;
}

static imgstat_status ds_serialize(void *ctx, const void *acc, void *out,
                                   size_t size, size_t *used,
                                   imgstat_error *err) {
  (void)ctx;
  void *buf = NULL;
  size_t n = 0;
  imgstat_status s =
      imgstat_dataset_serialize(((const ds_holder *)acc)->d, &buf, &n, err);
  if (s == IMGSTAT_OK && n > size)
    s = imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                          "the dataset's serialized form grew");
  if (s == IMGSTAT_OK) {
    memcpy(out, buf, n);
    *used = n;
  }
  free(buf);
  return s;
}

static imgstat_status ds_deserialize(void *ctx, void *acc, const void *buf,
                                     size_t size, imgstat_error *err) {
  (void)ctx;
  ds_holder *h = acc;
  imgstat_dataset *d = NULL;
  imgstat_status s = imgstat_dataset_deserialize(buf, size, &d, err);
  if (s == IMGSTAT_OK) {
    imgstat_dataset_destroy(h->d);
    h->d = d;
  }
  return s;
}

static imgstat_status ds_merge(void *ctx, void *a, const void *b,
                               imgstat_error *err) {
  (void)ctx;
  return imgstat_dataset_merge(((ds_holder *)a)->d, ((const ds_holder *)b)->d,
                               err);
}

/* A GPU for this rank, when the backend may use one: the local rank's turn
 * among the devices listed (--devices), else among the host's. */
static void mpi_pick_device(imgstat_engine_options *e, int local_rank) {
  if (e->backend == IMGSTAT_BACKEND_CPU && !e->verify)
    return;
  int n = e->ndevices, list[IMGSTAT_MAX_DEVICES];
  if (n > 0) {
    memcpy(list, e->devices, sizeof(int) * (size_t)n);
  } else {
    imgstat_error err;
    if (imgstat_gpu_device_count(&n, &err) != IMGSTAT_OK || n <= 0)
      return; /* the engine says what it makes of no GPU */
    n = n < IMGSTAT_MAX_DEVICES ? n : IMGSTAT_MAX_DEVICES;
    for (int k = 0; k < n; k++)
      list[k] = k;
  }
  e->ndevices = 1;
  e->devices[0] = list[local_rank % n];
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

/* --mpi: walks the whole list (names only) and takes this rank's share:
 * the items before it are dropped, next_input stops at its end. */
static imgstat_status mpi_take_share(run_state *st, const mpi_run *mr,
                                     imgstat_error *err) {
  imgstat_status s = imgstat_inputs_prefetch(st->inputs, SIZE_MAX, err);
  uint64_t total = 0;
  imgstat_inputs_total(st->inputs, &total);
  imgstat_mpi_share(total, mr->at.rank, mr->at.size, &st->share_first,
                    &st->share_end);
  for (uint64_t k = 0; k < st->share_first && s == IMGSTAT_OK; k++) {
    imgstat_input *in = NULL;
    s = imgstat_inputs_next(st->inputs, &in, err);
    imgstat_input_free(in);
  }
  st->mpi = 1;
  return s;
}

/* --mpi, after this rank's batch: the ranks agree on the outcome, rank 0
 * gets the merged dataset accumulator and prints the others' records and
 * messages. Returns whether the dataset record is to be printed (rank 0). */
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
  /* every rank takes part in the reduce, one whose accumulator could not
   * be made with an empty one (else the others would wait for it) */
  if (s == IMGSTAT_OK && o->dataset && !st->ds &&
      imgstat_dataset_create(&o->ds, &st->ds, &err) != IMGSTAT_OK)
    st->ds = NULL;
  if (s == IMGSTAT_OK && st->ds) {
    imgstat_mpi_codec codec = {
        (void *)&o->ds, ds_create,      ds_destroy, ds_size,
        ds_serialize,   ds_deserialize, ds_merge,   0};
    ds_holder h = {st->ds};
    s = imgstat_mpi_reduce(mr->m, &codec, &h, &err);
    st->ds = h.d; /* rank 0: the merged accumulator */
  }
  unsigned long mine = st->records;
  capture_end(mr);
  int strip = o->format == IMGSTAT_OUTPUT_TEXT && mine == 0;
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

/* The inputs of the command line, in the order given. Returns -1, or the
 * exit status of the error it printed. */
static int make_inputs(run_state *st) {
  const stats_options *o = st->opt;
  imgstat_inputs_options io = {o->follow};
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status s = imgstat_inputs_create(&io, &st->inputs, &err);
  for (int k = 0; k < o->nsources && s == IMGSTAT_OK; k++)
    s = o->sources[k].is_list
            ? imgstat_inputs_add_list(st->inputs, o->sources[k].text,
                                      o->null_lists ? '\0' : '\n', &err)
            : imgstat_inputs_add_path(st->inputs, o->sources[k].text, &err);
  if (s == IMGSTAT_ERR_ARG)
    return usage("%s", err.message);
  if (s != IMGSTAT_OK) {
    ist_cli_error("%s", err.message[0] ? err.message : "out of memory");
    return EXIT_INPUT_FAILED;
  }
  return -1;
}

/* The cores this process may use (imgstat_cpu_cores). Under --mpi, rank 0
 * says once when its rank is bound to fewer cores than its share of what
 * the host offers (Open MPI binds each rank to one core for up to 2 ranks),
 * with the mpirun options that give each rank its share; ranks left unbound
 * on one host (--bind-to none) take their share of its cores. */
static int rank_cores(const stats_options *o, const mpi_run *mr) {
  imgstat_cpu_info cpu;
  imgstat_cpu_info_get(&cpu);
  int ranks = mr->at.local_size > 0 ? mr->at.local_size : 1;
  if (!o->mpi)
    return cpu.cores;
  int share = cpu.offered / ranks > 0 ? cpu.offered / ranks : 1;
  if (cpu.cores < share && mr->at.rank == 0 && !o->quiet)
    ist_cli_error(
        "--mpi: each rank runs on %d core%s of the %d this host offers to "
        "%d rank%s (mpirun binds each rank to a core by default): give each "
        "rank its share with 'mpirun --bind-to none' or 'mpirun --map-by "
        "ppr:%d:node:PE=%d' (docs/scaling.md)",
        cpu.cores, cpu.cores == 1 ? "" : "s", cpu.offered, ranks,
        ranks == 1 ? "" : "s", ranks, share);
  if (cpu.affinity >= cpu.offered && ranks > 1 && cpu.cores > share)
    return share; /* unbound: the host's cores shared out */
  return cpu.cores;
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

/* The whole input list, walked once into *list: under --mpi by rank 0
 * alone (it reads the lists and walks the folders: a FIFO or standard input
 * is read once), and its bytes sent to the other ranks, so that every rank
 * shares out the same list. st->inputs becomes an iterator over it. Returns
 * -1, or the exit status of the error it printed (every rank the same). */
static int whole_list(run_state *st, const mpi_run *run,
                      imgstat_input_list *list) {
  const mpi_run *mr = st->opt->mpi ? run : NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status s = IMGSTAT_OK;
  if (!mr || mr->at.rank == 0)
    s = imgstat_inputs_collect(st->inputs, list, &err);
  if (mr && mr->m) {
    unsigned char *bytes = NULL;
    size_t size = 0;
    if (s == IMGSTAT_OK && mr->at.rank == 0)
      s = imgstat_input_list_pack(list, &bytes, &size, &err);
    if (!any_rank(mr, s != IMGSTAT_OK)) {
      void *data = bytes;
      s = imgstat_mpi_bcast(mr->m, &data, &size, &err);
      if (s == IMGSTAT_OK && mr->at.rank > 0)
        s = imgstat_input_list_unpack(data, size, list, &err);
      if (mr->at.rank > 0)
        free(data);
    } else if (s == IMGSTAT_OK) {
      s = imgstat_error_set(&err, IMGSTAT_ERR_IO,
                            "rank 0 could not send the input list");
    }
    free(bytes);
  }
  imgstat_inputs_destroy(st->inputs);
  st->inputs = NULL;
  if (s == IMGSTAT_OK)
    s = imgstat_inputs_from_list(list, &st->inputs, &err);
  if (!any_rank(mr, s != IMGSTAT_OK))
    return -1;
  if (s != IMGSTAT_OK)
    ist_cli_error("%s", err.message[0] ? err.message : "out of memory");
  return EXIT_INPUT_FAILED;
}

/* --histogram-png: no plot replaces an input. Every name the run's plots
 * take (OUT itself, or OUT-NAME.png per input and the dataset's) is looked
 * up in the whole list (after walks and lists); st->guard keeps the list
 * for the names write_plot makes unique. Returns -1, or the exit status of
 * the error it printed (under --mpi every rank the same). */
static int check_plots(run_state *st, const mpi_run *run,
                       const imgstat_input_list *list) {
  const mpi_run *mr = st->opt->mpi ? run : NULL;
  const ist_hist_cli *h = &st->opt->hist;
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
  imgstat_input_list list = {NULL, 0}; /* the whole list, when walked whole */
  int status;

  memset(&opt, 0, sizeof opt);
  memset(&st, 0, sizeof st);
  memset(&mr, 0, sizeof mr);
  mr.saved[0] = mr.saved[1] = -1;
  opt.format = IMGSTAT_OUTPUT_TEXT;
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
  status = make_inputs(&st);
  if (status >= 0)
    goto cleanup;
  /* float images' pooled histograms without --range: a first pass finds
   * their common range (dataset_pass.h; not over an image on standard
   * input, which is read once) */
  int stdin_image = 0;
  for (int k = 0; k < opt.nsources; k++)
    stdin_image |=
        !opt.sources[k].is_list && strcmp(opt.sources[k].text, "-") == 0;
  int range_pass = opt.dataset && histograms_wanted(&opt.hist) &&
                   !opt.ds.have_range && !stdin_image;
  /* Whatever needs every input first gets them from one walk. */
  st.one_plot = one_plot(&opt);
  if (opt.mpi || opt.hist.png_path || range_pass) {
    status = whole_list(&st, &mr, &list);
    if (status < 0 && opt.hist.png_path)
      status = check_plots(&st, &mr, &list);
    if (status >= 0)
      goto cleanup;
  }

  /* Workers: -j (0: one per core this rank may use). One input alone (no
   * -j) runs in this thread with the CPU backend's threads on every core;
   * with several workers, each computes on one thread (the figures are
   * bit-identical for any thread count). */
  int cores = rank_cores(&opt, &mr);
  int several = several_inputs(&opt);
  int workers = opt.jobs_given ? opt.jobs : several ? 0 : 1;
  /* JPEGs sent to nvJPEG (--jpeg-decoder gpu): their workers mostly wait
   * for a batch decode, so there are more of them (a batch is the JPEGs
   * queued at once; the budget still bounds the memory). Under auto the
   * workers stay one per core: most runs never start the GPU. */
  int jpeg_stage = imgstat_gpu_jpeg_compiled() &&
                   opt.engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU &&
                   !opt.engine.verify;
  if (workers == 0 && jpeg_stage)
    workers = 4 * cores;
  if (workers == 0)
    workers = cores;
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
  opt.engine.threads = workers == 1 && !opt.jobs_given ? 0 : 1;
  /* the CPU's lanes for auto's rule: the workers, at most one per core */
  opt.engine.workers = workers > 0 && workers < cores ? workers : cores;
  opt.engine.cost = ist_cli_cost_model();
  if (opt.mpi)
    mpi_pick_device(&opt.engine, mr.at.local_rank);
  st.needs_gpu = opt.engine.backend == IMGSTAT_BACKEND_GPU ||
                 opt.engine.verify ||
                 opt.engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU;
  /* --mpi: only rank 0 draws the line, for its share */
  ist_progress_start(&st.progress, !opt.quiet && mr.at.rank == 0 &&
                                       (opt.progress || isatty(STDERR_FILENO)));
  st.progress.workers = workers;
  st.progress.cores = cores;
  st.stdout_tty = isatty(STDOUT_FILENO);

  if (opt.hist.png_path) /* no partial PNG left by a signal */
    ist_cli_cleanup_on_signals();
  /* With --mpi, a rank whose set-up fails still takes part in the
   * collectives (mpi_finish), with nothing to add. */
  imgstat_status s = IMGSTAT_OK;
  if (imgstat_engine_create(&opt.engine, &st.engine, &err) != IMGSTAT_OK) {
    ist_cli_error("%s", err.message);
    s = IMGSTAT_ERR_ARG;
  }
  st.req.histograms = histograms_wanted(&opt.hist);
  st.req.npercentiles = opt.hist.npercentiles;
  memcpy(st.req.percentiles, opt.hist.percentiles, sizeof st.req.percentiles);

  if (range_pass) { /* over a copy of the whole list */
    imgstat_inputs *later = st.inputs;
    status = imgstat_inputs_from_list(&list, &st.inputs, &err) == IMGSTAT_OK
                 ? -1
                 : EXIT_INPUT_FAILED;
    if (status < 0) {
      st.progress.label = "--dataset, float range: ";
      status = ist_dataset_range_pass(st.inputs, &opt.engine.load, workers,
                                      opt.max_inflight, &opt.ds, &st.progress);
      /* the run's own line, from zero */
      ist_progress_start(&st.progress, st.progress.on);
      st.progress.workers = workers;
      st.progress.cores = cores;
    }
    imgstat_inputs_destroy(st.inputs);
    st.inputs = later;
    if (status >= 0)
      goto cleanup;
  }
  if (opt.dataset) {
    opt.ds.histograms = opt.hist.fields || opt.hist.png_path;
    opt.hist.dataset_columns = opt.format == IMGSTAT_OUTPUT_CSV;
    if (imgstat_dataset_create(&opt.ds, &st.ds, &err) != IMGSTAT_OK) {
      ist_cli_error("%s", err.message);
      s = IMGSTAT_ERR_NOMEM;
    }
  }
  if (!opt.mpi && s != IMGSTAT_OK) {
    status = EXIT_INPUT_FAILED;
    goto cleanup;
  }
  opt.hist.decoder_column = opt.format == IMGSTAT_OUTPUT_CSV &&
                            opt.engine.jpeg_decoder == IMGSTAT_JPEG_DECODER_GPU;
  st.stage_times = getenv("IMGSTAT_STAGE_TIMES") != NULL;
  atomic_init(&st.read_ns, 0);
  atomic_init(&st.output_ns, 0);
  if (mr.at.rank == 0)
    ist_output_begin(stdout, opt.format, &opt.hist,
                     opt.errors_as_records && opt.format == IMGSTAT_OUTPUT_CSV);
  else
    st.records = 1; /* every text record opens with its blank line */
  if (opt.mpi && s == IMGSTAT_OK)
    s = mpi_take_share(&st, &mr, &err);
  if (s == IMGSTAT_OK) {
    imgstat_batch_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.workers = workers;
    cfg.budget = opt.max_inflight;
    /* JPEGs handed to the device stage wait there in their slots: room for
     * several batches (the budget still bounds their bytes) */
    if (jpeg_stage && workers != 1)
      cfg.window = 4 * (size_t)workers < 1024 ? 1024 : 4 * (size_t)workers;
    cfg.result_size = sizeof(item_result);
    cfg.ctx = &st;
    cfg.next = next_input;
    cfg.work = work_input;
    cfg.deliver = deliver_input;
    cfg.drained = input_drained;
    cfg.cancel = ist_cli_cancel_on_signals(); /* Ctrl-C: stop, exit 130 */
    s = imgstat_batch_run(&cfg, NULL, &err);
    flush_stdout(&st);
    if (s != IMGSTAT_OK) {
      ist_progress_clear(&st.progress);
      ist_cli_error("%s", err.message[0] ? err.message : "out of memory");
      st.any_failed = 1;
    }
  } else {
    st.any_failed = 1;
  }
  draw_progress(&st, 1);
  if (st.stage_times) {
    /* the teardown timed too: the GPU side of the engine goes now */
    imgstat_engine_shutdown(st.engine);
    print_stage_times(&st);
  }
  int print_ds = st.ds && s == IMGSTAT_OK && !st.write_failed;
  st.cancel_status = ist_cli_cancel_status();
  if (opt.mpi)
    print_ds =
        mpi_finish(&st, &mr, s == IMGSTAT_OK, &opt) && st.ds && mr.at.rank == 0;
  if (print_ds)
    print_dataset(&st);
  /* a text run of several inputs ends with what happened, after the tables
   * (the failures' line stays on stderr) */
  if (mr.at.rank == 0 && st.progress.done > 1 && st.cancel_status < 0 &&
      opt.dataset != 2 && !st.write_failed &&
      (opt.format == IMGSTAT_OUTPUT_TEXT || opt.format == IMGSTAT_OUTPUT_BRIEF))
    printf("%s%" PRIu64 " inputs: %" PRIu64 " read, %" PRIu64 " failed\n",
           opt.format == IMGSTAT_OUTPUT_TEXT ? "\n" : "", st.progress.done,
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

cleanup:
  for (size_t k = 0; k < st.nplots; k++)
    free(st.plots[k]);
  free(st.plots);
  imgstat_dataset_destroy(st.ds);
  imgstat_engine_destroy(st.engine);
  imgstat_inputs_destroy(st.inputs);
  imgstat_input_list_free(&list);
  imgstat_output_guard_destroy(st.guard);
  free(opt.sources);
  capture_free(&mr);
  if (mr.m && imgstat_mpi_finalize(mr.m, &err) != IMGSTAT_OK) {
    ist_cli_error("--mpi: %s", err.message);
    status = status ? status : EXIT_INPUT_FAILED;
  }
  return status;
}
