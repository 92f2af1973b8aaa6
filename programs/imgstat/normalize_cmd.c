/*
 * `imgstat normalize [MODE] [OPTIONS] INPUT... -o OUT`: stretches, clips or
 * standardizes images and writes them (PNG 8/16-bit, .npy, PFM). Parses (the
 * option table, options.c), then hands the run to the library
 * (imgstat/run.h, a normalize run: every input walked, the output plan
 * checked before any work, the --dataset pass, each input decoded,
 * normalized by the engine and written by the workers) and prints what it hands
 * back in input order: the messages, the progress line, the summary. Part of
 * the program: it words the library's structured refusals, prints and decides
 * exit statuses.
 *
 * SIGINT and SIGTERM stop the run (cli_util.h): writes in progress remove
 * their temporaries, finished outputs stay, and the exit status is 130 or
 * 143. Other signals that end the process remove every temporary first.
 */
#include "normalize_cmd.h"

#include "cli_util.h"
#include "imgstat/batch.h"
#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "imgstat/inputs.h"
#include "imgstat/norm.h"
#include "imgstat/outputs.h"
#include "imgstat/run.h"
#include "options.h"
#include "progress.h"
#include "stats_from.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = IMGSTAT_EXIT_USAGE };

/* ---- --help
 * ------------------------------------------------------------------ The mode
 * and option lines are the table's (options.c). */

static const char *const help_titles[] = {
    "Modes (default minmax; the mode word may stand anywhere):", "Inputs:",
    "Output:", "Options:"};

static const ist_opt_help help = {
    "Usage: imgstat normalize [MODE] [OPTIONS] INPUT|DIR... -o OUT\n"
    "\n"
    "Normalizes each input and writes it to OUT: a file for one input, else\n"
    "a folder mirroring the input folders. An INPUT is a file, or a folder\n"
    "walked for images (in byte order). Options may come before or after\n"
    "the inputs.\n",
    help_titles, 4,
    "\n"
    "Outputs are written to a temporary file beside each output and renamed\n"
    "when complete. No output may name an input, and two inputs may not\n"
    "share an output (refused before any work). Only a regular file is\n"
    "replaced (not a link, FIFO or device). Rounding, percentiles and\n"
    "constant channels: see " IST_OPT_DOCS "/normalize.md.\n"
    "Exit status: 0 all written, 1 an input failed, 2 usage error; Ctrl-C\n"
    "(SIGINT) or SIGTERM stops the run leaving only complete files: 130 or\n"
    "143.\n"};

/* ---- options ----------------------------------------------------------------
 */

typedef struct norm_cli {
  imgstat_norm_options norm;
  int mode_set;
  int have_mean, have_std, have_range;
  double mean[IMGSTAT_MAX_CHANNELS], sd[IMGSTAT_MAX_CHANNELS];
  int nmean, nstd;
  const char *stats_from;
  const char *out;
  imgstat_file_format format;
  imgstat_engine_options engine; /* backend, load */
  int quiet;
  /* the sources in the order given: path arguments and --files-from lists
   * (the texts point into argv) */
  imgstat_run_source *sources;
  int nsources;
  int null_lists, follow, progress, skip_existing;
  int jobs, jobs_given; /* -j: workers (0: one per core) */
  uint64_t max_inflight;
  int png_level; /* IMGSTAT_PNG_LEVEL(n), 0: the default */
  imgstat_npy_layout layout;
  int dataset; /* --dataset: one plan from the figures of every input */
  imgstat_dataset_as as; /* --as: each input's layout first (keep) */
  uint64_t sample, seed; /* --sample N (0: every input), --seed S */
  /* --nodata (nnodata values, or none), --mask, --mask-suffix, --fill */
  int nnodata, no_file_nodata;
  double nodata[IMGSTAT_MAX_CHANNELS];
  const char *mask, *mask_suffix;
  int has_fill;
  double fill;
} norm_cli;

#define usage(...)                                                             \
  ist_cli_usage_error("normalize: ", "imgstat normalize", __VA_ARGS__)

/* The on/off options: where each is kept. */
static const struct {
  ist_opt_id id;
  size_t offset;
} flags[] = {
    {IST_OPT_NULL, offsetof(norm_cli, null_lists)},
    {IST_OPT_FOLLOW, offsetof(norm_cli, follow)},
    {IST_OPT_PROGRESS, offsetof(norm_cli, progress)},
    {IST_OPT_SKIP_EXISTING, offsetof(norm_cli, skip_existing)},
    {IST_OPT_QUIET, offsetof(norm_cli, quiet)},
};

static int apply(void *ctx, const ist_opt *row, const ist_opt_value *v) {
  norm_cli *c = ctx;
  for (size_t k = 0; k < sizeof flags / sizeof *flags; k++)
    if (flags[k].id == row->id) {
      *(int *)((char *)c + flags[k].offset) = 1;
      return -1;
    }
  if (row->id == IST_OPT_JOBS) { /* workers here, as for the statistics */
    c->jobs = (int)v->u;
    c->jobs_given = 1;
    return -1;
  }
  if (ist_opt_apply_engine(&c->engine, row, v))
    return -1;
  switch (row->id) {
  case IST_OPT_HELP:
    ist_opt_print_help(stdout, IST_CMD_NORMALIZE, &help);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
  case IST_OPT_PER_CHANNEL:
    c->norm.linked = 0;
    break;
  case IST_OPT_LINKED:
    c->norm.linked = 1;
    break;
  case IST_OPT_OUTPUT:
    if (c->out)
      return usage("-o given twice");
    c->out = v->text;
    break;
  case IST_OPT_FILES_FROM:
    c->sources[c->nsources].is_list = 1;
    c->sources[c->nsources++].text = v->text;
    break;
  case IST_OPT_MAX_INFLIGHT:
    c->max_inflight = v->u;
    break;
  case IST_OPT_DEPTH: {
    static const imgstat_sample depth[] = {IMGSTAT_U8, IMGSTAT_U16,
                                           IMGSTAT_F32};
    c->norm.out_sample = depth[v->u];
    break;
  }
  case IST_OPT_FORMAT: {
    static const imgstat_file_format format[] = {
        IMGSTAT_FILE_PNG, IMGSTAT_FILE_NPY, IMGSTAT_FILE_PFM};
    c->format = format[v->u];
    break;
  }
  case IST_OPT_ALPHA: {
    static const imgstat_alpha_mode alpha[] = {
        IMGSTAT_ALPHA_COPY, IMGSTAT_ALPHA_NORMALIZE, IMGSTAT_ALPHA_DROP};
    c->norm.alpha = alpha[v->u];
    break;
  }
  case IST_OPT_AS:
    c->as = (imgstat_dataset_as)v->u;
    break;
  case IST_OPT_MEAN:
    c->nmean = v->n;
    memcpy(c->mean, v->list, sizeof(double) * (size_t)v->n);
    c->have_mean = 1;
    break;
  case IST_OPT_STD:
    c->nstd = v->n;
    memcpy(c->sd, v->list, sizeof(double) * (size_t)v->n);
    for (int k = 0; k < c->nstd; k++)
      if (!(c->sd[k] > 0))
        return usage("--std: every value must be > 0");
    c->have_std = 1;
    break;
  case IST_OPT_NODATA:
    c->no_file_nodata = v->u == 1;
    c->nnodata = v->n;
    memcpy(c->nodata, v->list, sizeof(double) * (size_t)v->n);
    break;
  case IST_OPT_MASK:
    c->mask = v->text;
    break;
  case IST_OPT_MASK_SUFFIX:
    c->mask_suffix = v->text;
    break;
  case IST_OPT_FILL:
    c->has_fill = 1;
    c->fill = v->list[0];
    break;
  case IST_OPT_RANGE:
    c->norm.range_low = v->list[0];
    c->norm.range_high = v->list[1];
    c->have_range = 1;
    break;
  case IST_OPT_SCALE:
    c->norm.scale_unit = v->u == 1;
    break;
  case IST_OPT_LAYOUT:
    c->layout = v->u == 1 ? IMGSTAT_LAYOUT_CHW : IMGSTAT_LAYOUT_HWC;
    break;
  case IST_OPT_COMPRESSION:
    c->png_level = IMGSTAT_PNG_LEVEL((int)v->u);
    break;
  case IST_OPT_STATS_FROM:
    c->stats_from = v->text;
    break;
  case IST_OPT_FLOAT_BINS:
    c->norm.float_bins = (uint32_t)v->u;
    break;
  case IST_OPT_DATASET:
    c->dataset = 1;
    break;
  case IST_OPT_SAMPLE:
    c->sample = v->u;
    break;
  case IST_OPT_SEED:
    c->seed = v->u;
    break;
  default:
    break;
  }
  return -1;
}

/* A mode word (anywhere; a file called so is ./minmax, or follows --),
 * else an input. */
static int operand(void *ctx, int argc, char **argv, int *i, int after_dashes) {
  norm_cli *c = ctx;
  const char *a = argv[*i];
  if (!after_dashes && (strcmp(a, "minmax") == 0 || strcmp(a, "zscore") == 0 ||
                        strcmp(a, "clip") == 0)) {
    if (c->mode_set)
      return usage("two modes given ('%s' after another): give one, or "
                   "write a file named so as ./%s",
                   a, a);
    c->mode_set = 1;
    if (a[0] == 'm') {
      c->norm.mode = IMGSTAT_NORM_MINMAX;
    } else if (a[0] == 'z') {
      c->norm.mode = IMGSTAT_NORM_ZSCORE;
    } else {
      double v[2];
      if (*i + 1 >= argc ||
          ist_cli_parse_double_list(argv[*i + 1], 0, 100, v, 2) != 2 ||
          v[0] > v[1])
        return usage("clip needs LOW,HIGH with 0 <= LOW <= HIGH <= 100 "
                     "(e.g. clip 1,99)");
      c->norm.mode = IMGSTAT_NORM_CLIP;
      c->norm.clip_low = v[0];
      c->norm.clip_high = v[1];
      (*i)++;
    }
    return -1;
  }
  c->sources[c->nsources].is_list = 0;
  c->sources[c->nsources++].text = a;
  return -1;
}

/* "with MODE", for the warnings of options the mode ignores. */
static const char *with_mode(const norm_cli *c) {
  switch (c->norm.mode) {
  case IMGSTAT_NORM_MINMAX:
    return "with minmax";
  case IMGSTAT_NORM_CLIP:
    return "with clip";
  case IMGSTAT_NORM_ZSCORE:
    return "with zscore";
  case IMGSTAT_NORM_RANGE:
    return "with --range";
  case IMGSTAT_NORM_GIVEN:
    break;
  }
  return c->stats_from ? "with --stats-from" : "with --mean/--std";
}

static int has_list(const norm_cli *c) {
  for (int k = 0; k < c->nsources; k++)
    if (c->sources[k].is_list)
      return 1;
  return 0;
}

/* The options that do nothing in the combination given. */
static const char *no_effect(const void *ctx, ist_opt_id id) {
  const norm_cli *c = ctx;
  imgstat_norm_mode mode = c->norm.mode;
  switch (id) {
  case IST_OPT_PER_CHANNEL:
    return mode != IMGSTAT_NORM_MINMAX && mode != IMGSTAT_NORM_CLIP
               ? with_mode(c)
               : NULL;
  case IST_OPT_FLOAT_BINS:
    return mode != IMGSTAT_NORM_CLIP ? with_mode(c) : NULL;
  case IST_OPT_SCALE:
    return mode != IMGSTAT_NORM_GIVEN && mode != IMGSTAT_NORM_RANGE &&
                   !c->dataset
               ? with_mode(c)
               : NULL;
  case IST_OPT_SAMPLE:
    return c->dataset ? NULL : "without --dataset";
  case IST_OPT_SEED:
    return !c->dataset  ? "without --dataset"
           : !c->sample ? "without --sample"
                        : NULL;
  case IST_OPT_NULL:
    return has_list(c) ? NULL : "without --files-from";
  case IST_OPT_COMPRESSION:
    return c->format && c->format != IMGSTAT_FILE_PNG ? "without PNG output"
                                                      : NULL;
  case IST_OPT_LAYOUT:
    return c->format && c->format != IMGSTAT_FILE_NPY ? "without .npy output"
                                                      : NULL;
  default:
    return NULL;
  }
}

static const ist_opt_syntax syntax = {
    IST_CMD_NORMALIZE,
    1,
    "unknown option '%s'",
    "option '%s' needs a value",
    "option '%.*s' takes no value",
    "normalize: ",
    "imgstat normalize",
    NULL,
    apply,
    operand,
    no_effect,
};

/* Whether the options make float32 output (zscore, --mean/--std). */
static int float_mode(const norm_cli *c) {
  return c->norm.mode == IMGSTAT_NORM_ZSCORE ||
         c->norm.mode == IMGSTAT_NORM_GIVEN;
}

/* Returns -1 to go on, or an exit status. */
static int parse(int argc, char **argv, norm_cli *c, ist_opt_seen *seen) {
  c->sources = calloc((size_t)argc + 1, sizeof *c->sources);
  if (!c->sources) {
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_FAILED;
  }
  int status = ist_opt_parse(&syntax, argc, argv, c, seen);
  if (status >= 0)
    return status;
  /* --scale unit converts as imgstat --dataset --scale unit pools */
  c->as = imgstat_dataset_as_default(seen->spelled[IST_OPT_AS] != NULL, c->as,
                                     c->norm.scale_unit);
  int given = c->have_mean || c->have_std || c->stats_from;
  if (c->have_range && (c->mode_set || given))
    return usage("--range replaces the mode and --mean/--std: give one");
  if (c->have_range)
    c->norm.mode = IMGSTAT_NORM_RANGE;
  if (given) {
    if (c->mode_set)
      return usage("--mean/--std/--stats-from replace the mode: give "
                   "one or the other");
    if (c->stats_from && (c->have_mean || c->have_std))
      return usage("--stats-from and --mean/--std cannot be used "
                   "together");
    c->norm.mode = IMGSTAT_NORM_GIVEN;
    if (c->stats_from) {
      int st = ist_stats_from_read(c->stats_from, &c->norm);
      if (st != EXIT_OK)
        return st;
    } else {
      if (!c->have_mean || !c->have_std)
        return usage("--mean and --std go together");
      if (c->nmean != c->nstd)
        return usage("--mean has %d values but --std %d", c->nmean, c->nstd);
      c->norm.nstats = c->nmean;
      memcpy(c->norm.mean, c->mean, sizeof c->mean);
      memcpy(c->norm.std, c->sd, sizeof c->sd);
    }
  }
  if (c->dataset && (c->norm.mode == IMGSTAT_NORM_GIVEN ||
                     c->norm.mode == IMGSTAT_NORM_RANGE))
    return usage("--dataset pools the figures of minmax, clip or zscore: it "
                 "cannot be used with %s",
                 c->have_range ? "--range" : with_mode(c) + 5);
  if (c->norm.linked && c->norm.mode != IMGSTAT_NORM_MINMAX &&
      c->norm.mode != IMGSTAT_NORM_CLIP)
    return usage("--linked applies to minmax and clip");
  if (float_mode(c) && c->norm.out_sample && c->norm.out_sample != IMGSTAT_F32)
    return usage("zscore and --mean/--std write float32: use --depth "
                 "32 (.npy or .pfm)");
  if (float_mode(c) &&
      (c->format == IMGSTAT_FILE_PNG ||
       (!c->format && c->out &&
        imgstat_file_format_from_path(c->out) == IMGSTAT_FILE_PNG)))
    return usage("zscore and --mean/--std write float32, which PNG "
                 "cannot hold: write .npy or .pfm");
  if (c->nsources == 0)
    return usage("no input files");
  if (!c->out)
    return usage("no output: give -o OUT");
  if (!*c->out)
    return usage("-o needs a file or folder name");
  return -1;
}

/* ---- the run: the library's (imgstat/run.h), its results printed ------- */

typedef struct cli_run {
  const norm_cli *c;
  const imgstat_run_info *info;
  ist_progress progress;
  int warned_units;
} cli_run;

static int progress_on(const norm_cli *c) {
  return !c->quiet && (c->progress || isatty(STDERR_FILENO));
}

/* The backend decision's warnings (auto, a device that fails): first. */
static void on_decided(void *ctx, const imgstat_job_result *res) {
  const cli_run *cr = ctx;
  ist_cli_job_warnings(res, NULL, cr->c->quiet);
}

/* A pass starts: its progress line, labelled. */
static void on_pass(void *ctx, int pass) {
  static const char *const labels[2] = {"--dataset, float range: ",
                                        "--dataset, pass 1 of 2: "};
  cli_run *cr = ctx;
  ist_progress *p = &cr->progress;
  if (pass < 2)
    ist_progress_clear(p);
  ist_progress_start(p, progress_on(cr->c));
  if (pass < 2) {
    p->label = labels[pass];
    return;
  }
  p->cores = cr->info->cores;
  p->workers = cr->info->workers;
  if (cr->c->dataset)
    p->label = "--dataset, pass 2 of 2: ";
}

/* The pooling passes' progress. */
static void on_progress(void *ctx, const imgstat_run_progress *pr) {
  cli_run *cr = ctx;
  cr->progress.done = pr->done;
  cr->progress.bytes_in = pr->bytes_in;
  ist_progress_draw(&cr->progress, pr->total, 1, pr->final);
}

/* The warning for torchvision's 0..1 values on 0..255 input: once. */
static void warn_units(cli_run *cr, const imgstat_job_result *res) {
  const norm_cli *c = cr->c;
  if (cr->warned_units || c->quiet || c->norm.mode != IMGSTAT_NORM_GIVEN ||
      c->norm.scale_unit || res->sample == IMGSTAT_F32)
    return;
  for (int k = 0; k < c->norm.nstats; k++)
    if (!(c->norm.mean[k] <= 1 && c->norm.std[k] <= 1))
      return;
  cr->warned_units = 1;
  ist_progress_clear(&cr->progress);
  ist_cli_warning("every --mean and --std value is at most 1, but the input "
                  "is %d-bit (0..%u): if they are in 0..1 units, give "
                  "--scale unit",
                  imgstat_sample_depth(res->sample),
                  res->sample == IMGSTAT_U8 ? 255u : 65535u);
}

/* An input done, in input order: its warnings and errors. */
static int on_item(void *ctx, const imgstat_run_item *it,
                   const imgstat_run_progress *pr) {
  cli_run *cr = ctx;
  const norm_cli *c = cr->c;
  ist_progress *p = &cr->progress;
  const imgstat_input *in = it->input;
  p->done = pr->done;
  p->skipped = pr->skipped;
  p->bytes_in = pr->bytes_in;
  if (!it->skipped) {
    const imgstat_job_result *res = it->result;
    if (res->nwarnings > 0 || res->status != IMGSTAT_OK || it->output)
      ist_progress_clear(p);
    ist_cli_job_warnings(res, in->path, c->quiet);
    if (res->status != IMGSTAT_OK) {
      char why[IMGSTAT_CLI_WORDS_MAX];
      ist_cli_path_error(in->path, "%s", ist_cli_failure_words(res, why));
    } else if (it->write_error->message[0]) {
      char why[IMGSTAT_CLI_WORDS_MAX];
      ist_cli_path_error(it->output ? it->output : in->path, "%s",
                         ist_cli_error_words(it->write_error, why));
    } else {
      warn_units(cr, res);
    }
  }
  p->failed = pr->failed;
  ist_progress_draw(p, pr->total, 1, 0);
  return 0;
}

/* The words of a refused run (imgstat_run_create): the options, the inputs
 * (parse() said most of it first) or the output plan (its problem). */
static int plan_refused(const norm_cli *c, const imgstat_output_problem *why,
                        const imgstat_error *e) {
  if (e->status != IMGSTAT_ERR_ARG) {
    ist_cli_error("%s", e->message);
    return EXIT_FAILED;
  }
  switch (why->kind) {
  case IMGSTAT_OUTPUT_UNKNOWN_FORMAT:
    if (why->ext[0])
      return usage("'%s': %s output is not supported: normalize writes PNG "
                   "(.png), .npy and PFM (.pfm); name the output so, or "
                   "give --format",
                   c->out, why->ext);
    return usage("cannot tell the format of '%s': name it .png, .npy "
                 "or .pfm, or give --format",
                 c->out);
  case IMGSTAT_OUTPUT_FOLDER_LIKE_FILE:
    return usage("several inputs (or a folder) are written into a folder, "
                 "but '%s' is named like a file: give a folder name",
                 c->out);
  case IMGSTAT_OUTPUT_COLLISION:
    return usage("inputs '%s' and '%s' would both be written to %s%s",
                 why->first, why->second, why->output,
                 why->format ? imgstat_file_format_ext(why->format)
                             : ".png (or .npy)");
  default: { /* no name, an output that is an input, the options and
                inputs: the library's words */
    char words[IMGSTAT_CLI_WORDS_MAX];
    return usage("%s", ist_cli_error_words(e, words));
  }
  }
}

/* The words of a run that stopped (imgstat_run_execute). */
static int run_failed(cli_run *cr, const imgstat_run *run,
                      const imgstat_run_report *rep, const imgstat_error *e) {
  char words[IMGSTAT_CLI_WORDS_MAX];
  const char *why = ist_cli_error_words(e, words);
  switch (rep->failed_in) {
  case IMGSTAT_RUN_STEP_RANGE:
  case IMGSTAT_RUN_STEP_POOL:
    ist_cli_error("--dataset: %s", why);
    break;
  case IMGSTAT_RUN_STEP_REFUSED: { /* one layout and depth */
    enum { SHOWN = 5 };
    const imgstat_dataset_result *r = imgstat_run_pooled(run);
    for (size_t k = 0; k < r->nexcluded && k < SHOWN; k++)
      ist_cli_path_error(r->excluded[k].file, "normalize --dataset: %s",
                         r->excluded[k].reason);
    ist_cli_error("normalize --dataset: %zu of %" PRIu64 " inputs refused%s: "
                  "one plan needs one layout and depth; --as rgb (or gray, "
                  "rgba) converts every input to one layout, and --scale "
                  "unit pools 8/16-bit and float",
                  r->nexcluded, (uint64_t)r->images,
                  r->nexcluded > SHOWN ? " (the first 5 named above)" : "");
    break;
  }
  case IMGSTAT_RUN_STEP_PLAN:
    ist_cli_error("normalize --dataset: %s", why);
    break;
  case IMGSTAT_RUN_STEP_WORKERS:
    ist_progress_clear(&cr->progress);
    ist_cli_error("%s", why);
    break;
  default: /* the engine, the output folder */
    ist_cli_error("%s", why);
    break;
  }
  return EXIT_FAILED;
}

static int run(const norm_cli *c, imgstat_run *nr) {
  cli_run cr;
  memset(&cr, 0, sizeof cr);
  cr.c = c;
  cr.info = imgstat_run_get_info(nr);
  double t0 = ist_progress_now(); /* the summary line's seconds */
  imgstat_run_callbacks cb = {.ctx = &cr,
                              .item = on_item,
                              .progress = on_progress,
                              .decided = on_decided,
                              .pass = on_pass};
  imgstat_run_report rep;
  imgstat_error e;
  memset(&e, 0, sizeof e);
  imgstat_status s = imgstat_run_execute(nr, &cb, &rep, &e);
  int cancel = ist_cli_cancel_status();
  if (s != IMGSTAT_OK)
    return run_failed(&cr, nr, &rep, &e);
  if (rep.pass < 2) /* cancelled in the pooling pass */
    return cancel >= 0 ? cancel : EXIT_FAILED;
  ist_progress_draw(&cr.progress, cr.info->inputs, 1, 1);
  const ist_progress *p = &cr.progress;
  if (p->done > 1 && p->failed > 0)
    ist_cli_error("%" PRIu64 " of %" PRIu64 " inputs failed", p->failed,
                  p->done);
  /* what happened, in one line (a run that writes prints no record) */
  if (!c->quiet && cancel < 0)
    ist_cli_error("%" PRIu64 " written to %s, %" PRIu64 " failed, %.2f s",
                  p->done - p->failed - p->skipped, c->out, p->failed,
                  ist_progress_now() - t0);
  /* --sample: the plan is the sample's, as the dataset record says it */
  const imgstat_dataset_result *pooled = imgstat_run_pooled(nr);
  if (pooled && pooled->sample && !c->quiet && cancel < 0) {
    if (pooled->sample < pooled->sample_of)
      ist_cli_error("the plan pooled a sample: %" PRIu64 " of %" PRIu64
                    " inputs (--sample %" PRIu64 " --seed %" PRIu64 ")",
                    pooled->sample, pooled->sample_of, pooled->sample,
                    pooled->sample_seed);
    else
      ist_cli_error("the plan pooled all %" PRIu64 " inputs (--sample %" PRIu64
                    " is not fewer; --seed %" PRIu64 ")",
                    pooled->sample_of, pooled->sample, pooled->sample_seed);
  }
  if (p->skipped > 0 && !c->quiet)
    ist_cli_error("%" PRIu64 " of %" PRIu64 " outputs were there already: "
                  "skipped (--skip-existing)",
                  p->skipped, p->done);
  if (cancel >= 0)
    return cancel;
  return p->failed ? EXIT_FAILED : EXIT_OK;
}

int ist_normalize_main(int argc, char **argv) {
  norm_cli c;
  ist_opt_seen seen;
  memset(&c, 0, sizeof c);
  c.engine.backend = IMGSTAT_BACKEND_AUTO;
  c.engine.load.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  c.engine.load.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
  c.engine.cost = ist_cli_cost_model();
  imgstat_run *nr = NULL;
  int status = parse(argc, argv, &c, &seen);
  if (status < 0) {
    imgstat_output_problem why;
    memset(&why, 0, sizeof why);
    /* what the run does to each input: normalized and written */
    const imgstat_run_normalize o = {.norm = c.norm,
                                     .dataset = c.dataset,
                                     .as = c.as,
                                     .out = c.out,
                                     .format = c.format,
                                     .png_level = c.png_level,
                                     .layout = c.layout,
                                     .skip_existing = c.skip_existing,
                                     .has_fill = c.has_fill,
                                     .fill = c.fill,
                                     .temp_claim = ist_cli_temp_slot_claim,
                                     .temp_release = ist_cli_temp_slot_release,
                                     .problem = &why};
    imgstat_stats_request valid;
    memset(&valid, 0, sizeof valid);
    valid.nnodata = c.nnodata;
    valid.nodata = c.nodata; /* c outlives the run */
    valid.no_file_nodata = c.no_file_nodata;
    const imgstat_run_options ro = {.sources = c.sources,
                                    .nsources = c.nsources,
                                    .null_lists = c.null_lists,
                                    .follow = c.follow,
                                    .jobs = c.jobs_given ? c.jobs : -1,
                                    .max_inflight = c.max_inflight,
                                    .engine = c.engine,
                                    .sample = c.dataset ? c.sample : 0,
                                    .seed = c.seed,
                                    .request = valid,
                                    .mask = c.mask,
                                    .mask_suffix = c.mask_suffix,
                                    .cancel = ist_cli_cancel_flag(),
                                    .normalize = &o};
    imgstat_error e;
    memset(&e, 0, sizeof e);
    if (imgstat_run_create(&ro, &nr, &e) != IMGSTAT_OK)
      status = plan_refused(&c, &why, &e);
    imgstat_output_problem_clear(&why);
  }
  if (status < 0) {
    ist_opt_warn_no_effect(&syntax, &c, &seen, c.quiet);
    ist_cli_cancel_on_signals();
    ist_cli_cleanup_on_signals();
    status = run(&c, nr);
  }
  imgstat_run_destroy(nr);
  free(c.sources);
  return status;
}
