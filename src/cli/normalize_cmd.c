/*
 * `imgstat normalize [MODE] [OPTIONS] INPUT... -o OUT`: stretches, clips or
 * standardizes images and writes them (PNG 8/16-bit, .npy, PFM). Parse (the
 * option table, options.c), plan the outputs (the pipeline's naming rule,
 * imgstat_pipeline.h: every input walked, collisions and inputs named as
 * outputs refused before any work), run (the batch runner: each worker
 * decodes, normalizes through the library's engine -- the same backend
 * policy as the statistics -- and writes one input at a time), and report in
 * input order. Part of the program: it prints and decides exit statuses.
 *
 * SIGINT and SIGTERM stop the run (cli_util.h): writes in progress remove
 * their temporaries, finished outputs stay, and the exit status is 130 or
 * 143. Other signals that end the process remove every temporary first.
 */
#include "normalize_cmd.h"

#include "cli_util.h"
#include "dataset_pass.h"
#include "imgstat.h"
#include "imgstat_dataset.h"
#include "imgstat_job.h"
#include "imgstat_norm.h"
#include "imgstat_pipeline.h"
#include "options.h"
#include "progress.h"
#include "stats_from.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
  struct source {
    int is_list;
    const char *text;
  } * sources;
  int nsources;
  int null_lists, follow, progress, skip_existing;
  int jobs, jobs_given; /* -j: workers (0: one per core) */
  uint64_t max_inflight;
  int png_level; /* IMGSTAT_PNG_LEVEL(n), 0: the default */
  imgstat_npy_layout layout;
  int dataset; /* --dataset: one plan from the figures of every input */
  imgstat_dataset_as as; /* --as: each input's layout first (keep) */
} norm_cli;

#define usage(...)                                                             \
  ist_cli_usage_error("normalize: ", "imgstat normalize", __VA_ARGS__)

static const char *ext_of(imgstat_file_format f) {
  return f == IMGSTAT_FILE_PNG   ? ".png"
         : f == IMGSTAT_FILE_NPY ? ".npy"
                                 : ".pfm";
}

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
    memcpy(c->mean, v->list, sizeof c->mean);
    c->have_mean = 1;
    break;
  case IST_OPT_STD:
    c->nstd = v->n;
    memcpy(c->sd, v->list, sizeof c->sd);
    for (int k = 0; k < c->nstd; k++)
      if (!(c->sd[k] > 0))
        return usage("--std: every value must be > 0");
    c->have_std = 1;
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

/* ---- the outputs --------------------------------------------------------- */

/* The run: the options, the inputs (all walked before any work) and what
 * the workers and the delivery share. */
typedef struct run_state {
  const norm_cli *c;
  int folder; /* OUT is a folder */
  imgstat_input **items;
  size_t nitems;
  size_t next;
  imgstat_engine *engine;
  const volatile sig_atomic_t *cancel;
  ist_progress progress;
  uint64_t failed, skipped;
  int warned_units;
  /* the options every input is normalized with: the command line's, and
   * with --dataset the pooled figures (norm.measured) */
  imgstat_norm_options norm;
  imgstat_norm_measure measure;
  size_t next_pooled; /* --dataset: the first pass's place in items */
} run_state;

/* Whether OUT names a folder: for a folder argument, a list or several
 * inputs; for one file, when OUT is a folder, ends in '/', or has no
 * extension (and --format does not say what file to write). */
static int out_is_folder(const norm_cli *c) {
  struct stat sb;
  if (c->nsources > 1 || c->sources[0].is_list)
    return 1;
  if (strcmp(c->sources[0].text, "-") != 0 &&
      stat(c->sources[0].text, &sb) == 0 && S_ISDIR(sb.st_mode))
    return 1;
  if (stat(c->out, &sb) == 0)
    return S_ISDIR(sb.st_mode);
  size_t len = strlen(c->out);
  if (c->out[len - 1] == '/')
    return 1;
  const char *slash = strrchr(c->out, '/');
  const char *last = slash ? slash + 1 : c->out;
  const char *dot = strrchr(last, '.');
  return !c->format && (!dot || dot == last);
}

/* The output format when the options fix it (0: it depends on the input's
 * sample type: float32 to .npy, else PNG). */
static imgstat_file_format fixed_format(const run_state *st) {
  const norm_cli *c = st->c;
  if (c->format)
    return c->format;
  if (!st->folder)
    return imgstat_file_format_from_path(c->out);
  if (float_mode(c) || c->norm.out_sample == IMGSTAT_F32)
    return IMGSTAT_FILE_NPY;
  if (c->norm.out_sample)
    return IMGSTAT_FILE_PNG;
  return IMGSTAT_FILE_AUTO;
}

static imgstat_file_format format_for(const run_state *st,
                                      imgstat_sample out_sample) {
  imgstat_file_format f = fixed_format(st);
  if (f)
    return f;
  return out_sample == IMGSTAT_F32 ? IMGSTAT_FILE_NPY : IMGSTAT_FILE_PNG;
}

/* The output path of an input in format f (a new string, or NULL with err
 * set). */
static char *output_path(const run_state *st, const imgstat_input *in,
                         imgstat_file_format f, imgstat_error *err) {
  char *p = NULL;
  if (!st->folder) {
    p = strdup(st->c->out);
    if (!p)
      imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    return p;
  }
  imgstat_output_name(st->c->out, in, f ? ext_of(f) : "", &p, err);
  return p;
}

/* Walks every input into st->items. Returns -1, or an exit status. */
static int walk_inputs(run_state *st) {
  const norm_cli *c = st->c;
  imgstat_inputs_options io = {c->follow};
  imgstat_inputs *inputs = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status s = imgstat_inputs_create(&io, &inputs, &err);
  /* an OUT folder inside an input folder holds no inputs (earlier runs'
   * outputs) */
  if (s == IMGSTAT_OK && st->folder)
    s = imgstat_inputs_exclude_dir(inputs, c->out, &err);
  for (int k = 0; k < c->nsources && s == IMGSTAT_OK; k++)
    s = c->sources[k].is_list
            ? imgstat_inputs_add_list(inputs, c->sources[k].text,
                                      c->null_lists ? '\0' : '\n', &err)
            : imgstat_inputs_add_path(inputs, c->sources[k].text, &err);
  imgstat_input_list list = {NULL, 0};
  if (s == IMGSTAT_OK)
    s = imgstat_inputs_collect(inputs, &list, &err);
  st->items = list.items;
  st->nitems = list.count;
  imgstat_inputs_destroy(inputs);
  if (s == IMGSTAT_ERR_ARG)
    return usage("%s", err.message);
  if (s != IMGSTAT_OK) {
    ist_cli_error("%s", err.message[0] ? err.message : "out of memory");
    return EXIT_FAILED;
  }
  return -1;
}

/* Checks the outputs before any work: OUT's format, no two inputs with one
 * output, no output naming an input. Returns -1, or the exit status of the
 * error it printed. */
static int check_outputs(run_state *st) {
  const norm_cli *c = st->c;
  if (!st->folder && !fixed_format(st)) {
    /* a name with an extension of another format: say it is not written */
    const char *base = strrchr(c->out, '/');
    const char *dot = strrchr(base ? base + 1 : c->out, '.');
    char ext[16] = "";
    for (size_t k = 0; dot && dot[1] && k < sizeof ext - 1 && dot[k + 1]; k++)
      ext[k] = (char)(dot[k + 1] >= 'a' && dot[k + 1] <= 'z' ? dot[k + 1] - 32
                                                             : dot[k + 1]);
    int jpeg = strcmp(ext, "JPG") == 0 || strcmp(ext, "JPEG") == 0 ||
               strcmp(ext, "JPE") == 0 || strcmp(ext, "JFIF") == 0;
    if (ext[0])
      return usage("'%s': %s output is not supported: normalize writes PNG "
                   "(.png), .npy and PFM (.pfm); name the output so, or "
                   "give --format",
                   c->out, jpeg ? "JPEG" : ext);
    return usage("cannot tell the format of '%s': name it .png, .npy "
                 "or .pfm, or give --format",
                 c->out);
  }
  struct stat sb;
  if (st->folder && imgstat_file_format_from_path(c->out) &&
      !(stat(c->out, &sb) == 0 && S_ISDIR(sb.st_mode)))
    return usage("several inputs (or a folder) are written into a folder, "
                 "but '%s' is named like a file: give a folder name",
                 c->out);
  size_t n = st->nitems;
  char **paths = calloc(n ? n : 1, sizeof *paths);
  char **keys = calloc(n ? n : 1, sizeof *keys);
  imgstat_output_guard *guard = NULL;
  int status = -1;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (!paths || !keys)
    goto nomem;
  /* paths: the inputs that will be read (the guard protects every one) */
  for (size_t k = 0; k < n; k++)
    if (st->items[k]->kind != IMGSTAT_INPUT_ERROR)
      paths[k] = (char *)st->items[k]->path;
  imgstat_input_list list = {st->items, n};
  if (imgstat_output_guard_create(&list, &guard, &err) != IMGSTAT_OK)
    goto nomem;
  /* Two inputs, one output: by the name without its extension (which may
   * depend on the input's depth), so that x.png and x.npy count as one. */
  for (size_t k = 0; k < n && st->folder; k++) {
    if (!paths[k])
      continue;
    keys[k] = output_path(st, st->items[k], IMGSTAT_FILE_AUTO, &err);
    if (!keys[k]) {
      if (err.status == IMGSTAT_ERR_NOMEM)
        goto nomem;
      status = usage("%s", err.message);
      goto done;
    }
  }
  size_t a, b;
  int found = st->folder ? imgstat_output_find_collision(keys, n, &a, &b) : 0;
  if (found < 0)
    goto nomem;
  if (found) {
    imgstat_file_format f = fixed_format(st);
    status =
        usage("inputs '%s' and '%s' would both be written to %s%s", paths[a],
              paths[b], keys[a], f ? ext_of(f) : ".png (or .npy)");
    goto done;
  }
  /* No output may be an input: every extension the output may take. */
  static const imgstat_file_format formats[3] = {
      IMGSTAT_FILE_PNG, IMGSTAT_FILE_NPY, IMGSTAT_FILE_PFM};
  imgstat_file_format f = fixed_format(st);
  for (size_t k = 0; k < n && status < 0; k++) {
    if (!paths[k])
      continue;
    for (int e = 0; e < 3 && status < 0; e++) {
      if (f && formats[e] != f)
        continue;
      char *p = output_path(st, st->items[k], formats[e], &err);
      if (!p)
        goto nomem;
      if (imgstat_output_guard_check(guard, p, &err) != IMGSTAT_OK)
        status = usage("%s", err.message);
      free(p);
    }
    if (!st->folder)
      break;
  }
  goto done;
nomem:
  fputs("imgstat: out of memory\n", stderr);
  status = EXIT_FAILED;
done:
  if (keys)
    for (size_t k = 0; k < n; k++)
      free(keys[k]);
  free(keys);
  free(paths);
  imgstat_output_guard_destroy(guard);
  return status;
}

/* ---- the batch: inputs fed in order, worked on by any worker, reported in
 * order */

/* What a worker hands back for one input. */
typedef struct item_result {
  imgstat_job_result res; /* status, warnings (the output already written
                             and freed) */
  int skipped;            /* --skip-existing: the output is there */
  int cancelled;          /* the run was cancelled before or during it */
  char *out_path;         /* the output a failed write names */
  imgstat_error write_err;
} item_result;

static imgstat_status next_input(void *ctx, void **item, imgstat_error *err) {
  run_state *st = ctx;
  (void)err;
  *item = st->next < st->nitems ? st->items[st->next] : NULL;
  if (*item)
    st->items[st->next++] = NULL; /* delivered items are freed there */
  return IMGSTAT_OK;
}

/* A result that says the input failed at stage with the reason in err. */
static void result_failed(imgstat_job_result *res, imgstat_job_stage stage,
                          const imgstat_error *err) {
  memset(res, 0, sizeof *res);
  res->status = err->status ? err->status : IMGSTAT_ERR_IO;
  res->failed_stage = stage;
  res->error = *err;
  res->error.status = res->status;
  if (!res->error.message[0])
    snprintf(res->error.message, sizeof res->error.message, "unknown error");
}

/* Whether the output of in is there already (--skip-existing), the input
 * left unread: when the format depends on the input's sample type, an
 * output in either format it may take (PNG, or .npy for float) counts. */
static int output_present(const run_state *st, const imgstat_input *in) {
  static const imgstat_file_format either[2] = {IMGSTAT_FILE_PNG,
                                                IMGSTAT_FILE_NPY};
  imgstat_file_format f = fixed_format(st);
  int present = 0;
  for (int k = 0; k < 2 && !present; k++) {
    if (f && k > 0)
      break;
    imgstat_error err;
    char *p = output_path(st, in, f ? f : either[k], &err);
    struct stat sb;
    present = p && lstat(p, &sb) == 0 && S_ISREG(sb.st_mode);
    free(p);
  }
  return present;
}

/* Writes a normalized image to its output (folders made as needed). */
static imgstat_status write_output(const run_state *st, const imgstat_input *in,
                                   const imgstat_image *img, char **path,
                                   imgstat_error *err) {
  imgstat_file_format f = format_for(st, img->sample);
  *path = output_path(st, in, f, err);
  if (!*path)
    return err->status;
  imgstat_status s = imgstat_output_make_parents(*path, err);
  if (s != IMGSTAT_OK)
    return s;
  imgstat_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.format = f;
  wo.cancel = st->cancel;
  wo.temp_path = ist_cli_temp_slot_claim();
  wo.png_level = st->c->png_level;
  wo.layout = st->c->layout;
  s = imgstat_image_write(*path, img, &wo, err);
  ist_cli_temp_slot_release(wo.temp_path);
  return s;
}

/* One input on a worker: skipped when its output is there, else decoded
 * within the budget, normalized by the engine and written. */
static void work_input(void *ctx, imgstat_task *task, void *item,
                       void *result) {
  run_state *st = ctx;
  const imgstat_input *in = item;
  item_result *r = result;
  const norm_cli *c = st->c;
  if (c->skip_existing && in->kind == IMGSTAT_INPUT_FILE &&
      output_present(st, in)) {
    imgstat_task_reserve(task, 0);
    r->skipped = 1;
    return;
  }
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_image img;
  uint64_t reserved;
  int cancelled;
  /* beside the input: the output image (--depth's samples, else minmax and
   * clip the input's, the others float32) */
  int as_input =
      c->norm.mode == IMGSTAT_NORM_MINMAX || c->norm.mode == IMGSTAT_NORM_CLIP;
  uint32_t out = c->norm.out_sample
                     ? (uint32_t)imgstat_sample_depth(c->norm.out_sample) / 8
                 : as_input ? IMGSTAT_TASK_EXTRA_AS_INPUT
                            : 4;
  imgstat_status s = imgstat_task_decode(task, in, &c->engine.load, out, &img,
                                         &reserved, &cancelled, &err);
  if (cancelled) {
    r->cancelled = 1;
    return;
  }
  if (s != IMGSTAT_OK) {
    result_failed(&r->res, IMGSTAT_STAGE_LOAD, &err);
    return;
  }
  /* --as: the dataset's conversion (a view of img's planes where it can) */
  imgstat_image conv;
  if (imgstat_dataset_convert(&img, c->as, &conv, &err) != IMGSTAT_OK) {
    imgstat_image_free(&img);
    imgstat_task_release(task, reserved);
    result_failed(&r->res, IMGSTAT_STAGE_COMPUTE, &err);
    return;
  }
  /* with --dataset, st->norm carries the pooled figures (first_pass) */
  imgstat_engine_normalize(st->engine, in->path, &conv, &st->norm, &r->res);
  imgstat_image_free(&conv);
  imgstat_image_free(&img);
  if (r->res.status == IMGSTAT_OK) {
    s = write_output(st, in, &r->res.output, &r->out_path, &r->write_err);
    if (s != IMGSTAT_OK && st->cancel && *st->cancel)
      r->cancelled = 1;
    else if (s != IMGSTAT_OK && !r->write_err.message[0])
      imgstat_error_set(&r->write_err, s, "out of memory");
  }
  imgstat_image_free(&r->res.output);
  imgstat_task_release(task, reserved);
}

/* The warning for torchvision's 0..1 values on 0..255 input: once. */
static void warn_units(run_state *st, const imgstat_job_result *res) {
  const norm_cli *c = st->c;
  if (st->warned_units || c->quiet || c->norm.mode != IMGSTAT_NORM_GIVEN ||
      c->norm.scale_unit || res->sample == IMGSTAT_F32)
    return;
  for (int k = 0; k < c->norm.nstats; k++)
    if (!(c->norm.mean[k] <= 1 && c->norm.std[k] <= 1))
      return;
  st->warned_units = 1;
  ist_progress_clear(&st->progress);
  ist_cli_warning("every --mean and --std value is at most 1, but the input "
                  "is %d-bit (0..%u): if they are in 0..1 units, give "
                  "--scale unit",
                  imgstat_sample_depth(res->sample),
                  res->sample == IMGSTAT_U8 ? 255u : 65535u);
}

static int deliver_input(void *ctx, uint64_t index, void *item, void *result,
                         int ran) {
  run_state *st = ctx;
  imgstat_input *in = item;
  item_result *r = result;
  const norm_cli *c = st->c;
  (void)index;
  if (ran && !r->cancelled) {
    ist_progress *p = &st->progress;
    p->done++;
    if (r->skipped) {
      p->skipped++;
      st->skipped++;
    } else {
      if (in->size_known)
        p->bytes_in += in->size;
      const imgstat_job_result *res = &r->res;
      if (res->nwarnings > 0 || res->status != IMGSTAT_OK || r->out_path)
        ist_progress_clear(p);
      ist_cli_job_warnings(res, in->path, c->quiet);
      if (res->status != IMGSTAT_OK) {
        const char *why = res->error.message;
        if (res->failed_stage == IMGSTAT_STAGE_LOAD &&
            res->status == IMGSTAT_ERR_LIMIT && !strstr(why, "max-pixels") &&
            !strstr(why, "max-memory"))
          ist_cli_path_error(in->path, "%s (see --max-pixels)", why);
        else
          ist_cli_path_error(in->path, "%s", why);
        p->failed++;
      } else if (r->write_err.message[0]) {
        ist_cli_path_error(r->out_path ? r->out_path : in->path, "%s",
                           r->write_err.message);
        p->failed++;
      } else {
        warn_units(st, res);
      }
    }
    ist_progress_draw(p, st->nitems, 1, 0);
  }
  free(r->out_path);
  imgstat_job_result_free(&r->res);
  imgstat_input_free(in);
  return 0;
}

/* ---- --dataset: the first pass ----------------------------------------- */

static imgstat_status pooled_next(void *ctx, const imgstat_input **item,
                                  imgstat_error *err) {
  run_state *st = ctx;
  (void)err;
  *item = st->next_pooled < st->nitems ? st->items[st->next_pooled++] : NULL;
  return IMGSTAT_OK;
}

/* An input of the first pass done: the progress line. */
static void pooled_release(void *ctx, const imgstat_input *item) {
  run_state *st = ctx;
  st->progress.done++;
  if (item->size_known)
    st->progress.bytes_in += item->size;
  ist_progress_draw(&st->progress, st->nitems, 1, 0);
}

/* Starts the first pass's progress line, labelled. */
static void pass_progress(run_state *st, const char *label) {
  const norm_cli *c = st->c;
  ist_progress_clear(&st->progress);
  ist_progress_start(&st->progress,
                     !c->quiet && (c->progress || isatty(STDERR_FILENO)));
  st->progress.label = label;
}

/* Pools every input (the library's pass: the batch runner, the engine, the
 * dataset accumulator) and sets st->norm to one plan for all of them.
 * Inputs that fail here are reported by the second pass. Returns -1 to go
 * on, or the exit status of the error it printed. */
static int first_pass(run_state *st, int workers) {
  const norm_cli *c = st->c;
  imgstat_dataset_pass p;
  memset(&p, 0, sizeof p);
  p.ctx = st;
  p.next = pooled_next;
  p.release = pooled_release;
  p.load = &c->engine.load;
  p.engine = st->engine;
  p.workers = workers;
  p.budget = c->max_inflight;
  p.cancel = st->cancel;
  imgstat_dataset_options o;
  memset(&o, 0, sizeof o);
  o.as = c->as; /* the layout the second pass converts to */
  o.scale_unit = c->norm.scale_unit;
  o.histograms = c->norm.mode == IMGSTAT_NORM_CLIP;
  o.float_bins = c->norm.float_bins;
  int status = -1;
  if (o.histograms) { /* float images: the histograms' common range */
    pass_progress(st, "--dataset, float range: ");
    status = ist_dataset_range_run(&p, &o);
    st->next_pooled = 0;
    if (status >= 0)
      return status;
  }
  imgstat_dataset *d = NULL;
  imgstat_dataset_result r;
  memset(&r, 0, sizeof r);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  int cancelled = 0, unit = 0;
  imgstat_status s = imgstat_dataset_create(&o, &d, &err);
  pass_progress(st, "--dataset, pass 1 of 2: ");
  if (s == IMGSTAT_OK)
    s = imgstat_dataset_pool_inputs(&p, d, NULL, &cancelled, &err);
  ist_progress_draw(&st->progress, st->nitems, 1, 1); /* the pass's total */
  if (s == IMGSTAT_OK && cancelled && ist_cli_cancel_status() >= 0) {
    status = ist_cli_cancel_status();
    goto done;
  }
  if (s == IMGSTAT_OK)
    s = imgstat_dataset_finish(d, 0, &r, &err);
  if (s != IMGSTAT_OK) {
    ist_cli_error("--dataset: %s",
                  err.message[0] ? err.message : "out of memory");
    status = EXIT_FAILED;
    goto done;
  }
  if (r.nexcluded > 0) { /* one plan needs one layout and depth */
    enum { SHOWN = 5 };
    for (size_t k = 0; k < r.nexcluded && k < SHOWN; k++)
      ist_cli_path_error(r.excluded[k].file, "normalize --dataset: %s",
                         r.excluded[k].reason);
    ist_cli_error("normalize --dataset: %zu of %" PRIu64 " inputs refused%s: "
                  "one plan needs one layout and depth; --as rgb (or gray, "
                  "rgba) converts every input to one layout, and --scale "
                  "unit pools 8/16-bit and float",
                  r.nexcluded, (uint64_t)r.images,
                  r.nexcluded > SHOWN ? " (the first 5 named above)" : "");
    status = EXIT_FAILED;
    goto done;
  }
  if (r.pooled == 0) { /* nothing could be read: the second pass says why */
    st->norm.measured = NULL;
    goto done;
  }
  if (imgstat_dataset_norm_measure(&r, &c->norm, &st->measure, &unit, &err) !=
      IMGSTAT_OK) {
    ist_cli_error("normalize --dataset: %s", err.message);
    status = EXIT_FAILED;
    goto done;
  }
  st->norm.measured = &st->measure;
  st->norm.scale_unit = unit;
done:
  imgstat_dataset_result_free(&r);
  imgstat_dataset_destroy(d);
  return status;
}

static int run(run_state *st) {
  const norm_cli *c = st->c;
  double t0 = ist_progress_now(); /* the summary line's seconds */
  imgstat_error err;
  memset(&err, 0, sizeof err);
  /* Workers: -j (0: one per core). One input alone (no -j) runs in this
   * thread with the CPU backend's threads on every core; with several
   * workers, each normalizes on one thread. */
  int workers = c->jobs_given ? c->jobs : st->nitems > 1 ? 0 : 1;
  imgstat_engine_options eo = c->engine;
  eo.threads = workers == 1 && !c->jobs_given ? 0 : 1;

  /* The GPU's start-up is waited for before the first input: its warning
   * (auto, a device that fails) comes first, and under --backend gpu no
   * input is decoded for nothing. */
  if (imgstat_engine_create(&eo, &st->engine, &err) != IMGSTAT_OK) {
    ist_cli_error("%s", err.message);
    return EXIT_FAILED;
  }
  imgstat_job_result res;
  if (imgstat_engine_decide(st->engine, &res) != IMGSTAT_OK) {
    ist_cli_error("%s", res.error.message);
    imgstat_job_result_free(&res);
    return EXIT_FAILED;
  }
  ist_cli_job_warnings(&res, NULL, c->quiet);
  imgstat_job_result_free(&res);
  st->norm = c->norm;
  if (c->dataset) {
    int status = first_pass(st, workers);
    if (status >= 0)
      return status;
  }
  /* a missing output folder is made now (its subfolders as outputs need
   * them), after --dataset's first pass, which may refuse the run */
  if (st->folder) {
    size_t len = strlen(c->out);
    char *probe = malloc(len + 3);
    imgstat_status s =
        probe ? IMGSTAT_OK
              : imgstat_error_set(&err, IMGSTAT_ERR_NOMEM, "out of memory");
    if (probe) {
      snprintf(probe, len + 3, "%s/.", c->out);
      s = imgstat_output_make_parents(probe, &err);
      free(probe);
    }
    if (s != IMGSTAT_OK) {
      ist_cli_error("%s", err.message);
      return EXIT_FAILED;
    }
  }

  ist_progress_start(&st->progress,
                     !c->quiet && (c->progress || isatty(STDERR_FILENO)));
  st->progress.cores = imgstat_cpu_cores();
  st->progress.workers = workers ? workers : st->progress.cores;
  if (c->dataset)
    st->progress.label = "--dataset, pass 2 of 2: ";
  imgstat_batch_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.workers = workers;
  cfg.budget = c->max_inflight;
  cfg.result_size = sizeof(item_result);
  cfg.cancel = st->cancel;
  cfg.ctx = st;
  cfg.next = next_input;
  cfg.work = work_input;
  cfg.deliver = deliver_input;
  imgstat_status s = imgstat_batch_run(&cfg, NULL, &err);
  if (s != IMGSTAT_OK) {
    ist_progress_clear(&st->progress);
    ist_cli_error("%s", err.message[0] ? err.message : "out of memory");
    return EXIT_FAILED;
  }
  ist_progress_draw(&st->progress, st->nitems, 1, 1);
  const ist_progress *p = &st->progress;
  if (p->done > 1 && p->failed > 0)
    ist_cli_error("%" PRIu64 " of %" PRIu64 " inputs failed", p->failed,
                  p->done);
  /* what happened, in one line (a run that writes prints no record) */
  if (!c->quiet && ist_cli_cancel_status() < 0)
    ist_cli_error("%" PRIu64 " written to %s, %" PRIu64 " failed, %.2f s",
                  p->done - p->failed - p->skipped, c->out, p->failed,
                  ist_progress_now() - t0);
  if (p->skipped > 0 && !c->quiet)
    ist_cli_error("%" PRIu64 " of %" PRIu64 " outputs were there already: "
                  "skipped (--skip-existing)",
                  p->skipped, p->done);
  int cancel = ist_cli_cancel_status();
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
  run_state st;
  memset(&st, 0, sizeof st);
  st.c = &c;
  int status = parse(argc, argv, &c, &seen);
  if (status < 0) {
    st.folder = out_is_folder(&c);
    status = walk_inputs(&st);
  }
  if (status < 0)
    status = check_outputs(&st);
  if (status < 0) {
    ist_opt_warn_no_effect(&syntax, &c, &seen, c.quiet);
    st.cancel = ist_cli_cancel_on_signals();
    ist_cli_cleanup_on_signals();
    status = run(&st);
  }
  imgstat_engine_destroy(st.engine);
  for (size_t k = 0; k < st.nitems; k++)
    imgstat_input_free(st.items[k]);
  free(st.items);
  free(c.sources);
  return status;
}
