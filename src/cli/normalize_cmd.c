/*
 * `imgstat normalize [MODE] [OPTIONS] INPUT... -o OUT`: stretches, clips or
 * standardizes images and writes them (PNG 8/16-bit, .npy, PFM). Parse (the
 * option table, options.c), run (one job per input through the library's
 * engine, imgstat_job.h: the same backend policy as the statistics), write
 * and print. Part of the program: it prints and decides exit statuses.
 *
 * A signal that ends the process (Ctrl-C, HUP, TERM, PIPE, ALRM, ...)
 * first removes the temporary file being written (cli_util.h), so nothing
 * half-written is left, then ends it as the signal does (Ctrl-C: exit status
 * 130 in the shell).
 */
#include "normalize_cmd.h"

#include "cli_util.h"
#include "imgstat.h"
#include "imgstat_job.h"
#include "imgstat_norm.h"
#include "options.h"
#include "stats_from.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = IMGSTAT_EXIT_USAGE };

/* ---- --help
 * ------------------------------------------------------------------ The mode
 * and option lines are the table's (options.c). */

static const char *const help_titles[] = {"Modes (default minmax):",
                                          "Options:"};

static const ist_opt_help help = {
    "Usage: imgstat normalize [MODE] [OPTIONS] INPUT... -o OUT\n"
    "\n"
    "Normalizes each input and writes it to OUT (a file for one input; an\n"
    "existing folder for several, named after each input).\n",
    help_titles, 2,
    "\n"
    "Outputs are written to a temporary file beside OUT and renamed when\n"
    "complete. OUT may not name an input, and only a regular file is\n"
    "replaced (not a link, FIFO or device). Rounding, percentiles and\n"
    "constant channels: see " IMGSTAT_DOCDIR "/normalize.md.\n"
    "Exit status: 0 all written, 1 an input failed, 2 usage error; ended\n"
    "by a signal (Ctrl-C: 130 in the shell), no temporary file is left.\n"};

/* ---- options ----------------------------------------------------------------
 */

typedef struct norm_cli {
  imgstat_norm_options norm;
  int mode_set;
  int have_mean, have_std;
  double mean[IMGSTAT_MAX_CHANNELS], sd[IMGSTAT_MAX_CHANNELS];
  int nmean, nstd;
  const char *stats_from;
  const char *out;
  imgstat_file_format format;
  imgstat_engine_options engine; /* backend, threads, load */
  int quiet;
  char **inputs;
  int ninputs;
} norm_cli;

#define usage(...)                                                             \
  ist_cli_usage_error("normalize: ", "imgstat normalize", __VA_ARGS__)

static const char *ext_of(imgstat_file_format f) {
  return f == IMGSTAT_FILE_PNG   ? ".png"
         : f == IMGSTAT_FILE_NPY ? ".npy"
                                 : ".pfm";
}

static int apply(void *ctx, const ist_opt *row, const ist_opt_value *v) {
  norm_cli *c = ctx;
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
  case IST_OPT_QUIET:
    c->quiet = 1;
    break;
  case IST_OPT_OUTPUT:
    if (c->out)
      return usage("-o given twice");
    c->out = v->text;
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
  case IST_OPT_STATS_FROM:
    c->stats_from = v->text;
    break;
  case IST_OPT_FLOAT_BINS:
    c->norm.float_bins = (uint32_t)v->u;
    break;
  default:
    break;
  }
  return -1;
}

/* The mode word (the first word that is not an option, if it names a mode:
 * a file called so is ./minmax), then the inputs. */
static int operand(void *ctx, int argc, char **argv, int *i, int after_dashes) {
  norm_cli *c = ctx;
  const char *a = argv[*i];
  if (!after_dashes && !c->mode_set && c->ninputs == 0 &&
      (strcmp(a, "minmax") == 0 || strcmp(a, "zscore") == 0 ||
       strcmp(a, "clip") == 0)) {
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
  c->inputs[c->ninputs++] = argv[*i];
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
  case IMGSTAT_NORM_GIVEN:
    break;
  }
  return c->stats_from ? "with --stats-from" : "with --mean/--std";
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
  case IST_OPT_JOBS:
    return c->engine.backend == IMGSTAT_BACKEND_GPU ? "with --backend gpu"
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

/* Returns -1 to go on, or an exit status. */
static int parse(int argc, char **argv, norm_cli *c, ist_opt_seen *seen) {
  c->inputs = calloc((size_t)argc + 1, sizeof *c->inputs);
  if (!c->inputs) {
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_FAILED;
  }
  int status = ist_opt_parse(&syntax, argc, argv, c, seen);
  if (status >= 0)
    return status;
  int given = c->have_mean || c->have_std || c->stats_from;
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
  if (c->norm.linked && c->norm.mode != IMGSTAT_NORM_MINMAX &&
      c->norm.mode != IMGSTAT_NORM_CLIP)
    return usage("--linked applies to minmax and clip");
  if ((c->norm.mode == IMGSTAT_NORM_ZSCORE ||
       c->norm.mode == IMGSTAT_NORM_GIVEN) &&
      c->norm.out_sample && c->norm.out_sample != IMGSTAT_F32)
    return usage("zscore and --mean/--std write float32: use --depth "
                 "32 (.npy or .pfm)");
  if ((c->norm.mode == IMGSTAT_NORM_ZSCORE ||
       c->norm.mode == IMGSTAT_NORM_GIVEN) &&
      (c->format == IMGSTAT_FILE_PNG ||
       (!c->format && c->out &&
        imgstat_file_format_from_path(c->out) == IMGSTAT_FILE_PNG)))
    return usage("zscore and --mean/--std write float32, which PNG "
                 "cannot hold: write .npy or .pfm");
  if (c->ninputs == 0)
    return usage("no input files");
  if (!c->out)
    return usage("no output: give -o OUT");
  return -1;
}

/* The output path of input k: OUT itself, or OUT/NAME.EXT for a folder. */
static char *output_path(const norm_cli *c, int is_dir, const char *input,
                         imgstat_file_format fmt) {
  if (!is_dir)
    return strdup(c->out);
  const char *base = strrchr(input, '/');
  base = base ? base + 1 : input;
  size_t blen = strlen(base);
  const char *dot = strrchr(base, '.');
  if (dot && dot != base)
    blen = (size_t)(dot - base);
  size_t olen = strlen(c->out);
  char *p = malloc(olen + blen + 8);
  if (p)
    snprintf(p, olen + blen + 8, "%s%s%.*s%s", c->out,
             olen && c->out[olen - 1] == '/' ? "" : "/", (int)blen, base,
             ext_of(fmt));
  return p;
}

/* The format of an output: --format, the extension, else by sample type. */
static imgstat_file_format choose_format(const norm_cli *c, int is_dir,
                                         imgstat_sample out_sample) {
  if (c->format)
    return c->format;
  if (!is_dir) {
    imgstat_file_format f = imgstat_file_format_from_path(c->out);
    if (f)
      return f;
  }
  return out_sample == IMGSTAT_F32 ? IMGSTAT_FILE_NPY : IMGSTAT_FILE_PNG;
}

/* Checks OUT against the inputs: returns -1, or the exit status of the
 * error it printed. */
static int check_outputs(const norm_cli *c, int *is_dir_out) {
  struct stat ost;
  int out_exists = stat(c->out, &ost) == 0;
  int is_dir = out_exists && S_ISDIR(ost.st_mode);
  *is_dir_out = is_dir;
  if (c->ninputs > 1 && !is_dir)
    return usage("%d inputs need OUT to be an existing folder", c->ninputs);
  if (!is_dir && !c->format && !imgstat_file_format_from_path(c->out))
    return usage("cannot tell the format of '%s': name it .png, .npy "
                 "or .pfm, or give --format",
                 c->out);
  /* OUT must never name an input, whatever the spelling of either path
   * (cli_util.h's rule); several inputs must not map to one output either.
   * Both in O(inputs): hash sets of the inputs and of the outputs. */
  ist_cli_set *inputs = ist_cli_inputs_index(c->inputs, c->ninputs);
  ist_cli_set *outs = is_dir ? ist_cli_set_new() : NULL;
  if (!inputs || (is_dir && !outs)) {
    ist_cli_set_free(inputs);
    ist_cli_set_free(outs);
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_FAILED;
  }
  int status = -1;
  for (int k = 0; k < c->ninputs && status < 0; k++) {
    /* the format can depend on the input's depth; check every extension */
    static const imgstat_file_format all[3] = {
        IMGSTAT_FILE_PNG, IMGSTAT_FILE_NPY, IMGSTAT_FILE_PFM};
    for (int f = 0; f < 3 && status < 0; f++) {
      char *p = output_path(c, is_dir, c->inputs[k], all[f]);
      if (!p) {
        status = EXIT_FAILED;
        break;
      }
      status = ist_cli_refuse_input_output(inputs, c->inputs, p,
                                           "normalize: ", "imgstat normalize");
      free(p);
      if (!is_dir)
        break;
    }
    if (is_dir && status < 0) {
      /* the same name with every extension: the PNG's stands for all */
      char *p = output_path(c, 1, c->inputs[k], IMGSTAT_FILE_PNG);
      long m = p ? ist_cli_set_add(outs, p, strlen(p), k) : -2;
      if (m == -2)
        status = EXIT_FAILED;
      else if (m >= 0)
        status = usage("inputs '%s' and '%s' would both be written to %s",
                       c->inputs[m], c->inputs[k], p);
      free(p);
    }
  }
  ist_cli_set_free(inputs);
  ist_cli_set_free(outs);
  if (status == EXIT_FAILED)
    fputs("imgstat: out of memory\n", stderr);
  return status;
}

int ist_normalize_main(int argc, char **argv) {
  norm_cli c;
  ist_opt_seen seen;
  memset(&c, 0, sizeof c);
  c.engine.backend = IMGSTAT_BACKEND_AUTO;
  c.engine.load.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  c.engine.load.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
  c.engine.cost = ist_cli_cost_model();
  int is_dir = 0;
  int status = parse(argc, argv, &c, &seen);
  if (status < 0)
    status = check_outputs(&c, &is_dir);
  if (status >= 0) {
    free(c.inputs);
    return status;
  }
  ist_opt_warn_no_effect(&syntax, &c, &seen, c.quiet);

  ist_cli_cleanup_on_signals();

  /* The GPU's start-up is waited for before the first input: its warning
   * (auto, a device that fails) comes first, and under --backend gpu no
   * input is decoded for nothing. */
  imgstat_engine *engine = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_engine_create(&c.engine, &engine, &err) != IMGSTAT_OK) {
    ist_cli_error("%s", err.message);
    free(c.inputs);
    return EXIT_FAILED;
  }
  imgstat_job_result res;
  imgstat_engine_decide(engine, &res);
  ist_cli_job_warnings(&res, NULL, c.quiet);
  imgstat_job_result_free(&res);

  int any_failed = 0;
  for (int k = 0; k < c.ninputs; k++) {
    const char *in_path = c.inputs[k];
    imgstat_engine_normalize(engine, in_path, NULL, &c.norm, &res);
    ist_cli_job_warnings(&res, in_path, c.quiet);
    if (res.status != IMGSTAT_OK) {
      ist_cli_path_error(in_path, "%s", res.error.message);
      any_failed = 1;
      imgstat_job_result_free(&res);
      continue;
    }
    imgstat_file_format fmt = choose_format(&c, is_dir, res.output.sample);
    char *path = output_path(&c, is_dir, in_path, fmt);
    imgstat_write_options wo = {fmt, NULL, ist_cli_temp_slot()};
    if (!path) {
      fputs("imgstat: out of memory\n", stderr);
      any_failed = 1;
    } else if (imgstat_image_write(path, &res.output, &wo, &err) !=
               IMGSTAT_OK) {
      ist_cli_path_error(path, "%s", err.message);
      any_failed = 1;
    }
    free(path);
    imgstat_job_result_free(&res);
  }
  imgstat_engine_destroy(engine);
  free(c.inputs);
  return any_failed ? EXIT_FAILED : EXIT_OK;
}
