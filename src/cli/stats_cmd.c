/*
 * `imgstat [OPTIONS] FILE...`: per-channel statistics of each input.
 * Parse (the option table, options.c), run (one job per input through the
 * library's engine, imgstat_job.h), print (the records, the histogram PNG,
 * the --verify verdicts, the messages and warnings of each job, the exit
 * status).
 */
#include "stats_cmd.h"

#include "cli_util.h"
#include "hist_plot.h"
#include "imgstat.h"
#include "imgstat_cuda.h"
#include "imgstat_job.h"
#include "options.h"
#include "output.h"
#include "verify.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "Output (default: a table per image):",
    "Computation:",
    "Histograms (" IMGSTAT_DOCDIR "/normalize.md):",
    "Other:",
};

static const ist_opt_help help = {
    "Usage: imgstat [OPTIONS] FILE...\n"
    "       imgstat normalize [OPTIONS] INPUT... -o OUT   (see its --help)\n"
    "       imgstat bench [ARGS...]          (GPU benchmark; see its --help)\n"
    "\n"
    "Per-channel statistics of images: count, min, max and the position of\n"
    "the first of each, sum, mean and standard deviation. Reads PNG, JPEG,\n"
    "BMP, TGA, GIF (first frame), PSD, HDR and PNM (P5/P6).\n",
    help_titles, 4,
    "\n"
    "Exit status: 0 every input processed, 1 an input failed (the others are\n"
    "still reported) or output could not be written, 2 usage error, 3 "
    "--verify\n"
    "found a mismatch. A file named like a subcommand (bench, normalize):\n"
    "use ./bench.\n"};

/* ---- options ----------------------------------------------------------------
 */

typedef struct stats_options {
  ist_output_format format;
  imgstat_engine_options engine; /* backend, verify, kernel, threads, load */
  int ddof;
  int quiet;
  ist_hist_cli hist; /* --histogram and friends */
  char **files;      /* owned: an array of pointers into argv */
  int nfiles;
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

static int apply(void *ctx, const ist_opt *row, const ist_opt_value *v) {
  stats_options *o = ctx;
  if (ist_opt_apply_engine(&o->engine, row, v))
    return -1;
  switch (row->id) {
  case IST_OPT_JSON:
  case IST_OPT_CSV: {
    ist_output_format f =
        row->id == IST_OPT_JSON ? IMGSTAT_OUTPUT_JSON : IMGSTAT_OUTPUT_CSV;
    if (o->format != IMGSTAT_OUTPUT_TEXT && o->format != f)
      return usage("--json and --csv cannot be used together");
    o->format = f;
    break;
  }
  case IST_OPT_DDOF:
    o->ddof = (int)v->u;
    break;
  case IST_OPT_HISTOGRAM:
    o->hist.fields = 1;
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
  case IST_OPT_HISTOGRAM_LOG:
    o->hist.png_log = 1;
    break;
  case IST_OPT_QUIET:
    o->quiet = 1;
    break;
  case IST_OPT_HELP:
    ist_opt_print_help(stdout, IST_CMD_STATS, &help);
    return flush_or_complain();
  case IST_OPT_VERSION:
    printf("imgstat %s (CUDA backend: %s; JPEG: %s)\n", IMGSTAT_VERSION,
           imgstat_gpu_compiled() ? "yes" : "no", JPEG_DECODER);
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
  o->files[o->nfiles++] = argv[*i];
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
  case IST_OPT_JOBS:
    return e->backend == IMGSTAT_BACKEND_GPU && !e->verify
               ? "with --backend gpu"
               : NULL;
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

/* After parsing: the histogram options fit together, and no PNG would
 * overwrite an input (cli_util.h's rule). Returns -1, or the exit status of
 * the error it printed. */
static int check_histogram_options(const stats_options *o) {
  const ist_hist_cli *h = &o->hist;
  if (h->png_log && !h->png_path)
    return usage("--histogram-log needs --histogram-png");
  if (!h->png_path)
    return -1;
  ist_cli_set *inputs = ist_cli_inputs_index(o->files, o->nfiles);
  if (!inputs) {
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_INPUT_FAILED;
  }
  int status = -1;
  char path[IMGSTAT_HIST_PNG_PATH_MAX];
  for (int k = 1; k <= o->nfiles && status < 0; k++) {
    if (!ist_hist_plot_path(h, k, o->nfiles, path, sizeof path))
      status = usage("--histogram-png: the name is too long");
    else
      status =
          ist_cli_refuse_input_output(inputs, o->files, path, "", "imgstat");
  }
  ist_cli_set_free(inputs);
  return status;
}

/* Fills o from the command line. Returns -1 to run, or the exit status when
 * the program is done (--help, --version, usage error). */
static int parse_args(int argc, char **argv, stats_options *o) {
  o->files = calloc((size_t)argc, sizeof *o->files);
  if (!o->files) {
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_INPUT_FAILED;
  }
  ist_opt_seen seen;
  int status = ist_opt_parse(&syntax, argc, argv, o, &seen);
  if (status >= 0)
    return status;
  if (o->nfiles == 0)
    return usage("no input files");
  status = check_histogram_options(o);
  if (status >= 0)
    return status;
  ist_opt_warn_no_effect(&syntax, o, &seen, o->quiet);
  return -1;
}

/* ---- the run over all inputs
 * --------------------------------------------------
 */

typedef struct run_state {
  const stats_options *opt;
  imgstat_engine *engine;
  imgstat_stats_request req;
  unsigned long records;
  int any_failed;
  int any_mismatch;
  int write_failed;
} run_state;

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

/* "imgstat: PATH: reason" for an input that produced no record. */
static void input_failed(run_state *st, const char *path,
                         const imgstat_job_result *res) {
  const char *why = res->error.message;
  if (res->failed_stage == IMGSTAT_STAGE_LOAD &&
      res->status == IMGSTAT_ERR_LIMIT && !strstr(why, "max-pixels") &&
      !strstr(why, "max-memory"))
    ist_cli_path_error(path, "%s (see --max-pixels)", why);
  else
    ist_cli_path_error(path, "%s", why);
  st->any_failed = 1;
}

static void process_file(run_state *st, const char *path, int index) {
  const stats_options *o = st->opt;
  imgstat_job_result res;
  imgstat_engine_stats(st->engine, path, NULL, &st->req, &res);
  ist_cli_job_warnings(&res, path, o->quiet);
  if (res.status != IMGSTAT_OK) {
    input_failed(st, path, &res);
  } else {
    ist_record rec;
    memset(&rec, 0, sizeof rec);
    rec.file = path;
    rec.width = res.width;
    rec.height = res.height;
    rec.channels = res.channels;
    rec.sample = res.sample;
    rec.backend = imgstat_backend_name(res.backend);
    rec.ddof = o->ddof;
    for (int c = 0; c < res.channels; c++)
      imgstat_figures_compute(&res.partial[c], res.sample, res.width, o->ddof,
                              &rec.figures[c]);
    if (res.has_histograms) {
      rec.hist = &o->hist;
      rec.histograms = res.hist;
      rec.hist_figures = res.hist_figures;
    }
    ist_output_record(stdout, o->format, &rec, st->records++);
    if (res.has_histograms && o->hist.png_path) {
      char png[IMGSTAT_HIST_PNG_PATH_MAX] = "";
      imgstat_error err;
      memset(&err, 0, sizeof err);
      if (ist_hist_plot_write(&o->hist, res.channels, res.sample, res.hist,
                              index + 1, o->nfiles, png, sizeof png,
                              &err) != IMGSTAT_OK) {
        ist_cli_path_error(png[0] ? png : path, "%s",
                           err.message[0] ? err.message : "unknown error");
        st->any_failed = 1;
      }
    }
    if (res.verified) {
      /* The verdict follows the record; it stays out of the JSON / CSV
       * stream. */
      FILE *out = o->format == IMGSTAT_OUTPUT_TEXT ? stdout : stderr;
      fflush(stdout);
      if (!ist_verify_partials(out, path, res.channels, res.sample, res.partial,
                               res.gpu_partial))
        st->any_mismatch = 1;
    }
  }
  flush_stdout(st);
  imgstat_job_result_free(&res);
}

int ist_stats_main(int argc, char **argv) {
  stats_options opt;
  run_state st;
  int status;

  memset(&opt, 0, sizeof opt);
  memset(&st, 0, sizeof st);
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

  status = parse_args(argc, argv, &opt);
  if (status >= 0)
    goto cleanup;

  if (opt.hist.png_path) /* no partial PNG left by a signal */
    ist_cli_cleanup_on_signals();
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_engine_create(&opt.engine, &st.engine, &err) != IMGSTAT_OK) {
    ist_cli_error("%s", err.message);
    status = EXIT_INPUT_FAILED;
    goto cleanup;
  }
  st.req.histograms = histograms_wanted(&opt.hist);
  st.req.npercentiles = opt.hist.npercentiles;
  memcpy(st.req.percentiles, opt.hist.percentiles, sizeof st.req.percentiles);

  ist_output_begin(stdout, opt.format, &opt.hist);
  for (int i = 0; i < opt.nfiles && !st.write_failed; i++)
    process_file(&st, opt.files[i], i);
  flush_stdout(&st);

  if (st.write_failed)
    status = EXIT_INPUT_FAILED;
  else if (st.any_mismatch)
    status = EXIT_MISMATCH;
  else if (st.any_failed)
    status = EXIT_INPUT_FAILED;
  else
    status = EXIT_OK;

cleanup:
  imgstat_engine_destroy(st.engine);
  free(opt.files);
  return status;
}
