/*
 * `imgstat normalize [MODE] [OPTIONS] INPUT... -o OUT`: stretches, clips or
 * standardizes images and writes them (PNG 8/16-bit, .npy, PFM). Part of the
 * program: it prints and decides exit statuses; the work is the library's
 * (imgstat_norm.h on the CPU, imgstat_cuda_norm.h on the GPU).
 *
 * A signal that ends the process (Ctrl-C, HUP, TERM, PIPE, ALRM, ...)
 * first removes the temporary file being written (cli_util.h), so nothing
 * half-written is left, then ends it as the signal does (Ctrl-C: exit status
 * 130 in the shell).
 */
#include "normalize_cmd.h"

#include "cli_util.h"
#include "imgstat.h"
#include "imgstat_cuda.h"
#include "imgstat_cuda_norm.h"
#include "imgstat_norm.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = IMGSTAT_EXIT_USAGE };

static const char help_text[] =
    "Usage: imgstat normalize [MODE] [OPTIONS] INPUT... -o OUT\n"
    "\n"
    "Normalizes each input and writes it to OUT (a file for one input; an\n"
    "existing folder for several, named after each input).\n"
    "\n"
    "Modes (default minmax):\n"
    "  minmax             each channel's [min, max] to the full range of the\n"
    "                     output depth (0..255, 0..65535, or 0..1 for float)\n"
    "  clip LOW,HIGH      percentiles LOW and HIGH (0..100) to the full "
    "range,\n"
    "                     saturating outside (e.g. clip 1,99)\n"
    "  zscore             (x - mean) / std of each channel, as float32\n"
    "  --mean M1,M2,.. --std S1,S2,..\n"
    "                     (x - mean) / std with given values (native units:\n"
    "                     0..255 for 8-bit), as float32; one value for all\n"
    "                     channels or one per channel\n"
    "  --stats-from FILE  the same with mean and std taken from a record of\n"
    "                     'imgstat --json' (its first line)\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT   output file or folder (required)\n"
    "  --per-channel      minmax/clip: a range per channel (default)\n"
    "  --linked           minmax/clip: one range over the colour channels\n"
    "                     (keeps hue)\n"
    "  --depth D          8, 16 or 32 (float); default: the input's for\n"
    "                     minmax/clip, 32 for zscore and --mean/--std\n"
    "  --format F         png, npy or pfm (default: from OUT's extension; "
    "for\n"
    "                     a folder png, or npy for float)\n"
    "  --alpha A          copy (default: unchanged but for the depth),\n"
    "                     normalize (like a colour channel, never linked) or\n"
    "                     drop\n"
    "  --bins N           float clip: histogram bins (default 65536); the\n"
    "                     percentiles are within (max - min) / N\n"
    "  --backend B        cpu, gpu or auto (default auto)\n"
    "  -j, --jobs N       CPU threads (default 0: one per core)\n"
    "  --max-pixels N     refuse inputs of more than N pixels (default 2^30)\n"
    "  --max-memory SIZE  refuse inputs whose decoding holds more than SIZE\n"
    "                     bytes at once; read at most SIZE bytes of a pipe or\n"
    "                     device (default 4G; SIZE: bytes, or with K, M, G or\n"
    "                     T: binary units, 1K = 1024)\n"
    "  -q, --quiet        no warnings\n"
    "  -h, --help         this help\n"
    "\n"
    "Outputs are written to a temporary file beside OUT and renamed when\n"
    "complete. OUT may not name an input, and only a regular file is\n"
    "replaced (not a link, FIFO or device). Rounding, percentiles and\n"
    "constant channels: see docs/normalize.md.\n"
    "Exit status: 0 all written, 1 an input failed, 2 usage error; ended\n"
    "by a signal (Ctrl-C: 130 in the shell), no temporary file is left.\n";

#define usage_error(...)                                                       \
  ist_cli_usage_error("normalize: ", "imgstat normalize", __VA_ARGS__)

/* ---- a tiny JSON reader for one `imgstat --json` record --------------------
 * Enough JSON to walk that shape: objects, arrays, strings (escapes skipped,
 * not decoded), numbers, true/false/null. Reads "stats": [{"mean": M, "std":
 * S}, ...] in order. */

typedef struct json_in {
  const char *p;
  int depth;
} json_in;

static void json_ws(json_in *j) {
  while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
    j->p++;
}

/* Copies a string's raw contents (up to size-1 bytes) into buf. */
static int json_string(json_in *j, char *buf, size_t size) {
  if (*j->p != '"')
    return 0;
  j->p++;
  size_t n = 0;
  while (*j->p && *j->p != '"') {
    if (*j->p == '\\' && j->p[1])
      j->p++;
    if (buf && n + 1 < size)
      buf[n++] = *j->p;
    j->p++;
  }
  if (*j->p != '"')
    return 0;
  j->p++;
  if (buf)
    buf[n] = '\0';
  return 1;
}

static int json_skip(json_in *j);

static int json_number(json_in *j, double *v, int *is_null) {
  json_ws(j);
  *is_null = 0;
  if (strncmp(j->p, "null", 4) == 0) {
    j->p += 4;
    *is_null = 1;
    return 1;
  }
  /* the program's one number grammar (JSON's, but for a leading '+' or
   * zero, or a bare point, which are accepted) */
  size_t len = ist_cli_number_length(j->p);
  char *end;
  if (len == 0)
    return 0;
  *v = strtod(j->p, &end);
  if (end != j->p + len || !isfinite(*v))
    return 0;
  j->p = end;
  return 1;
}

static int json_skip(json_in *j) {
  json_ws(j);
  if (++j->depth > 64)
    return 0;
  int ok = 1;
  if (*j->p == '"') {
    ok = json_string(j, NULL, 0);
  } else if (*j->p == '{' || *j->p == '[') {
    char close = *j->p == '{' ? '}' : ']';
    int object = *j->p == '{';
    j->p++;
    json_ws(j);
    if (*j->p == close) {
      j->p++;
    } else {
      for (;;) {
        if (object) {
          json_ws(j);
          if (!json_string(j, NULL, 0))
            return 0;
          json_ws(j);
          if (*j->p++ != ':')
            return 0;
        }
        if (!json_skip(j))
          return 0;
        json_ws(j);
        if (*j->p == ',') {
          j->p++;
          continue;
        }
        if (*j->p++ != close)
          return 0;
        break;
      }
    }
  } else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "null", 4) == 0) {
    j->p += 4;
  } else if (strncmp(j->p, "false", 5) == 0) {
    j->p += 5;
  } else {
    double v;
    int is_null;
    ok = json_number(j, &v, &is_null);
  }
  j->depth--;
  return ok;
}

/* Reads the means and stds of the record in text. Returns the number of
 * channels, or -1 with a reason in why. */
static int json_read_stats(const char *text, double *mean, double *sd,
                           char *why, size_t why_size) {
  json_in j = {text, 0};
  json_ws(&j);
  if (*j.p++ != '{') {
    snprintf(why, why_size, "not a JSON object");
    return -1;
  }
  int n = -1;
  for (;;) {
    char key[64];
    json_ws(&j);
    if (!json_string(&j, key, sizeof key))
      break;
    json_ws(&j);
    if (*j.p++ != ':')
      break;
    json_ws(&j);
    if (strcmp(key, "stats") == 0 && *j.p == '[') {
      j.p++;
      n = 0;
      json_ws(&j);
      while (*j.p == '{') {
        if (n == IMGSTAT_MAX_CHANNELS) {
          snprintf(why, why_size, "more than %d channels",
                   IMGSTAT_MAX_CHANNELS);
          return -1;
        }
        int have_mean = 0, have_std = 0;
        j.p++;
        for (;;) {
          char k2[64];
          json_ws(&j);
          if (*j.p == '}') {
            j.p++;
            break;
          }
          if (!json_string(&j, k2, sizeof k2))
            goto bad;
          json_ws(&j);
          if (*j.p++ != ':')
            goto bad;
          if (strcmp(k2, "mean") == 0 || strcmp(k2, "std") == 0) {
            double v;
            int is_null;
            if (!json_number(&j, &v, &is_null))
              goto bad;
            if (is_null) {
              snprintf(why, why_size, "channel %d has no %s (null)", n + 1, k2);
              return -1;
            }
            if (k2[0] == 'm') {
              mean[n] = v;
              have_mean = 1;
            } else {
              sd[n] = v;
              have_std = 1;
            }
          } else if (!json_skip(&j)) {
            goto bad;
          }
          json_ws(&j);
          if (*j.p == ',')
            j.p++;
        }
        if (!have_mean || !have_std) {
          snprintf(why, why_size, "channel %d lacks mean or std", n + 1);
          return -1;
        }
        n++;
        json_ws(&j);
        if (*j.p == ',') {
          j.p++;
          json_ws(&j);
        }
      }
      if (*j.p++ != ']')
        goto bad;
    } else if (!json_skip(&j)) {
      goto bad;
    }
    json_ws(&j);
    if (*j.p == ',') {
      j.p++;
      continue;
    }
    break;
  }
  if (n <= 0) {
    snprintf(why, why_size, "no \"stats\" array in the record");
    return -1;
  }
  return n;
bad:
  snprintf(why, why_size, "not a record of 'imgstat --json'");
  return -1;
}

static int load_stats_file(const char *path, imgstat_norm_options *o) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    ist_cli_path_error(path, "%s", strerror(errno));
    return EXIT_USAGE;
  }
  char *text = malloc(1 << 20);
  size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if (!text) {
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_FAILED;
  }
  text[n] = '\0';
  char *nl = strchr(text, '\n'); /* JSON Lines: the first record */
  if (nl)
    *nl = '\0';
  char why[128];
  int k = json_read_stats(text, o->mean, o->std, why, sizeof why);
  free(text);
  if (k < 0) {
    ist_cli_path_error(path, "%s", why);
    return EXIT_USAGE;
  }
  o->nstats = k;
  return EXIT_OK;
}

/* ---- options ----------------------------------------------------------------
 */

typedef enum backend { BACKEND_AUTO, BACKEND_CPU, BACKEND_GPU } backend;

typedef struct norm_cli {
  imgstat_norm_options norm;
  int mode_set;
  int have_mean, have_std;
  double mean[IMGSTAT_MAX_CHANNELS], sd[IMGSTAT_MAX_CHANNELS];
  int nmean, nstd;
  const char *stats_from;
  const char *out;
  imgstat_file_format format;
  backend backend;
  int threads;
  uint64_t max_pixels;
  uint64_t max_memory;
  int quiet;
  char **inputs;
  int ninputs;
} norm_cli;

static const char *ext_of(imgstat_file_format f) {
  return f == IMGSTAT_FILE_PNG   ? ".png"
         : f == IMGSTAT_FILE_NPY ? ".npy"
                                 : ".pfm";
}

/* Returns -1 to go on, or an exit status. */
static int parse(int argc, char **argv, norm_cli *c) {
  int only_files = 0;
  c->inputs = calloc((size_t)argc + 1, sizeof *c->inputs);
  if (!c->inputs) {
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_FAILED;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    /* the mode word: the first word that is not an option, if it names a
     * mode (a file called so: ./minmax) */
    if (!only_files && !c->mode_set && c->ninputs == 0 &&
        (strcmp(a, "minmax") == 0 || strcmp(a, "zscore") == 0 ||
         strcmp(a, "clip") == 0)) {
      c->mode_set = 1;
      if (a[0] == 'm') {
        c->norm.mode = IMGSTAT_NORM_MINMAX;
      } else if (a[0] == 'z') {
        c->norm.mode = IMGSTAT_NORM_ZSCORE;
      } else {
        double v[2];
        if (i + 1 >= argc ||
            ist_cli_parse_double_list(argv[i + 1], 0, 100, v, 2) != 2 ||
            v[0] > v[1])
          return usage_error("clip needs LOW,HIGH with 0 <= LOW <= HIGH <= "
                             "100 (e.g. clip 1,99)");
        c->norm.mode = IMGSTAT_NORM_CLIP;
        c->norm.clip_low = v[0];
        c->norm.clip_high = v[1];
        i++;
      }
      continue;
    }
    if (only_files || a[0] != '-' || a[1] == '\0') {
      c->inputs[c->ninputs++] = argv[i];
      continue;
    }
    if (strcmp(a, "--") == 0) {
      only_files = 1;
      continue;
    }
    const char *v = NULL;
    char name[32];
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    if (len >= sizeof name)
      return usage_error("unknown option '%s'", a);
    memcpy(name, a, len);
    name[len] = '\0';
    if (eq)
      v = eq + 1;
    if (a[1] != '-' && a[2] != '\0') { /* -oFILE, -j4 */
      name[2] = '\0';
      v = a + 2;
    }
    static const char *const flags[] = {"--per-channel", "--linked", "-q",
                                        "--quiet",       "-h",       "--help"};
    int is_flag = 0;
    for (size_t k = 0; k < sizeof flags / sizeof *flags; k++)
      is_flag |= strcmp(name, flags[k]) == 0;
    if (is_flag && v)
      return usage_error("option '%s' takes no value", name);
    if (!is_flag && !v) {
      if (i + 1 >= argc)
        return usage_error("option '%s' needs a value", name);
      v = argv[++i];
    }
    uint64_t n;
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
      fputs(help_text, stdout);
      return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
    } else if (strcmp(name, "--per-channel") == 0) {
      c->norm.linked = 0;
    } else if (strcmp(name, "--linked") == 0) {
      c->norm.linked = 1;
    } else if (strcmp(name, "-q") == 0 || strcmp(name, "--quiet") == 0) {
      c->quiet = 1;
    } else if (strcmp(name, "-o") == 0 || strcmp(name, "--output") == 0) {
      if (c->out)
        return usage_error("-o given twice");
      c->out = v;
    } else if (strcmp(name, "--depth") == 0) {
      if (strcmp(v, "8") == 0)
        c->norm.out_sample = IMGSTAT_U8;
      else if (strcmp(v, "16") == 0)
        c->norm.out_sample = IMGSTAT_U16;
      else if (strcmp(v, "32") == 0)
        c->norm.out_sample = IMGSTAT_F32;
      else
        return usage_error("--depth: '%s' is not 8, 16 or 32", v);
    } else if (strcmp(name, "--format") == 0) {
      if (strcmp(v, "png") == 0)
        c->format = IMGSTAT_FILE_PNG;
      else if (strcmp(v, "npy") == 0)
        c->format = IMGSTAT_FILE_NPY;
      else if (strcmp(v, "pfm") == 0)
        c->format = IMGSTAT_FILE_PFM;
      else
        return usage_error("--format: '%s' is not png, npy or pfm", v);
    } else if (strcmp(name, "--alpha") == 0) {
      if (strcmp(v, "copy") == 0)
        c->norm.alpha = IMGSTAT_ALPHA_COPY;
      else if (strcmp(v, "normalize") == 0)
        c->norm.alpha = IMGSTAT_ALPHA_NORMALIZE;
      else if (strcmp(v, "drop") == 0)
        c->norm.alpha = IMGSTAT_ALPHA_DROP;
      else
        return usage_error("--alpha: '%s' is not copy, normalize or drop", v);
    } else if (strcmp(name, "--mean") == 0) {
      c->nmean = ist_cli_parse_double_list(v, -DBL_MAX, DBL_MAX, c->mean,
                                           IMGSTAT_MAX_CHANNELS);
      if (c->nmean == IMGSTAT_CLI_NUM_RANGE)
        return usage_error("--mean: '%s': a value is too large", v);
      if (c->nmean < 1)
        return usage_error("--mean: '%s' is not 1 to 4 numbers separated by "
                           "commas",
                           v);
      c->have_mean = 1;
    } else if (strcmp(name, "--std") == 0) {
      c->nstd = ist_cli_parse_double_list(v, -DBL_MAX, DBL_MAX, c->sd,
                                          IMGSTAT_MAX_CHANNELS);
      if (c->nstd == IMGSTAT_CLI_NUM_RANGE)
        return usage_error("--std: '%s': a value is too large", v);
      if (c->nstd < 1)
        return usage_error("--std: '%s' is not 1 to 4 numbers separated by "
                           "commas",
                           v);
      for (int k = 0; k < c->nstd; k++)
        if (!(c->sd[k] > 0))
          return usage_error("--std: every value must be > 0");
      c->have_std = 1;
    } else if (strcmp(name, "--stats-from") == 0) {
      c->stats_from = v;
    } else if (strcmp(name, "--bins") == 0) {
      if (!ist_cli_parse_uint(v, 1, IMGSTAT_FLOAT_BINS_MAX, &n))
        return usage_error("--bins: '%s' is not a number from 1 to %u", v,
                           IMGSTAT_FLOAT_BINS_MAX);
      c->norm.float_bins = (uint32_t)n;
    } else if (strcmp(name, "--backend") == 0) {
      if (strcmp(v, "cpu") == 0)
        c->backend = BACKEND_CPU;
      else if (strcmp(v, "gpu") == 0)
        c->backend = BACKEND_GPU;
      else if (strcmp(v, "auto") == 0)
        c->backend = BACKEND_AUTO;
      else
        return usage_error("--backend: '%s' is not cpu, gpu or auto", v);
    } else if (strcmp(name, "-j") == 0 || strcmp(name, "--jobs") == 0) {
      if (!ist_cli_parse_uint(v, 0, 1024, &n))
        return usage_error("-j: '%s' is not a number of threads (0..1024)", v);
      c->threads = (int)n;
    } else if (strcmp(name, "--max-pixels") == 0) {
      if (!ist_cli_parse_uint(v, 1, IMGSTAT_MAX_PIXELS_LIMIT, &n))
        return usage_error("--max-pixels: '%s' is not a number from 1 to "
                           "4294967296",
                           v);
      c->max_pixels = n;
    } else if (strcmp(name, "--max-memory") == 0) {
      if (!ist_cli_parse_size(v, 1, UINT64_MAX, &n))
        return usage_error(
            "--max-memory: '%s' is not " IMGSTAT_CLI_SIZE_EXPECTED, v);
      c->max_memory = n;
    } else {
      return usage_error("unknown option '%s'", a);
    }
  }
  int given = c->have_mean || c->have_std || c->stats_from;
  if (given) {
    if (c->mode_set)
      return usage_error("--mean/--std/--stats-from replace the mode: give "
                         "one or the other");
    if (c->stats_from && (c->have_mean || c->have_std))
      return usage_error("--stats-from and --mean/--std cannot be used "
                         "together");
    c->norm.mode = IMGSTAT_NORM_GIVEN;
    if (c->stats_from) {
      int st = load_stats_file(c->stats_from, &c->norm);
      if (st != EXIT_OK)
        return st;
    } else {
      if (!c->have_mean || !c->have_std)
        return usage_error("--mean and --std go together");
      if (c->nmean != c->nstd)
        return usage_error("--mean has %d values but --std %d", c->nmean,
                           c->nstd);
      c->norm.nstats = c->nmean;
      memcpy(c->norm.mean, c->mean, sizeof c->mean);
      memcpy(c->norm.std, c->sd, sizeof c->sd);
    }
  }
  if (c->norm.linked && c->norm.mode != IMGSTAT_NORM_MINMAX &&
      c->norm.mode != IMGSTAT_NORM_CLIP)
    return usage_error("--linked applies to minmax and clip");
  if ((c->norm.mode == IMGSTAT_NORM_ZSCORE ||
       c->norm.mode == IMGSTAT_NORM_GIVEN) &&
      c->norm.out_sample && c->norm.out_sample != IMGSTAT_F32)
    return usage_error("zscore and --mean/--std write float32: use --depth "
                       "32 (.npy or .pfm)");
  if ((c->norm.mode == IMGSTAT_NORM_ZSCORE ||
       c->norm.mode == IMGSTAT_NORM_GIVEN) &&
      (c->format == IMGSTAT_FILE_PNG ||
       (!c->format && c->out &&
        imgstat_file_format_from_path(c->out) == IMGSTAT_FILE_PNG)))
    return usage_error("zscore and --mean/--std write float32, which PNG "
                       "cannot hold: write .npy or .pfm");
  if (c->ninputs == 0)
    return usage_error("no input files");
  if (!c->out)
    return usage_error("no output: give -o OUT");
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

int ist_normalize_main(int argc, char **argv) {
  norm_cli c;
  memset(&c, 0, sizeof c);
  c.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  c.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
  int status = parse(argc, argv, &c);
  if (status >= 0) {
    free(c.inputs);
    return status;
  }

  struct stat ost;
  int out_exists = stat(c.out, &ost) == 0;
  int is_dir = out_exists && S_ISDIR(ost.st_mode);
  if (c.ninputs > 1 && !is_dir) {
    free(c.inputs);
    return usage_error("%d inputs need OUT to be an existing folder",
                       c.ninputs);
  }
  if (!is_dir && !c.format && !imgstat_file_format_from_path(c.out)) {
    free(c.inputs);
    return usage_error("cannot tell the format of '%s': name it .png, .npy "
                       "or .pfm, or give --format",
                       c.out);
  }
  /* OUT must never name an input, whatever the spelling of either path
   * (cli_util.h's rule); several inputs must not map to one output either.
   * Both in O(inputs): hash sets of the inputs and of the outputs. */
  ist_cli_set *inputs = ist_cli_inputs_index(c.inputs, c.ninputs);
  ist_cli_set *outs = is_dir ? ist_cli_set_new() : NULL;
  if (!inputs || (is_dir && !outs)) {
    ist_cli_set_free(inputs);
    ist_cli_set_free(outs);
    free(c.inputs);
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_FAILED;
  }
  status = -1;
  for (int k = 0; k < c.ninputs && status < 0; k++) {
    /* the format can depend on the input's depth; check every extension */
    static const imgstat_file_format all[3] = {
        IMGSTAT_FILE_PNG, IMGSTAT_FILE_NPY, IMGSTAT_FILE_PFM};
    for (int f = 0; f < 3 && status < 0; f++) {
      char *p = output_path(&c, is_dir, c.inputs[k], all[f]);
      if (!p) {
        status = EXIT_FAILED;
        break;
      }
      status = ist_cli_refuse_input_output(inputs, c.inputs, p,
                                           "normalize: ", "imgstat normalize");
      free(p);
      if (!is_dir)
        break;
    }
    if (is_dir && status < 0) {
      /* the same name with every extension: the PNG's stands for all */
      char *p = output_path(&c, 1, c.inputs[k], IMGSTAT_FILE_PNG);
      long m = p ? ist_cli_set_add(outs, p, strlen(p), k) : -2;
      if (m == -2)
        status = EXIT_FAILED;
      else if (m >= 0)
        status = usage_error("inputs '%s' and '%s' would both be written "
                             "to %s",
                             c.inputs[m], c.inputs[k], p);
      free(p);
    }
  }
  ist_cli_set_free(inputs);
  ist_cli_set_free(outs);
  if (status == EXIT_FAILED)
    fputs("imgstat: out of memory\n", stderr);
  if (status >= 0) {
    free(c.inputs);
    return status;
  }

  ist_cli_cleanup_on_signals();

  imgstat_gpu *gpu = NULL;
  imgstat_error gerr = {0};
  imgstat_status gst = IMGSTAT_ERR_NODEVICE;
  if (c.backend != BACKEND_CPU) {
    gst = imgstat_gpu_create(-1, &gpu, &gerr);
    if (gst != IMGSTAT_OK) {
      gpu = NULL;
      if (c.backend == BACKEND_AUTO && gst != IMGSTAT_ERR_NODEVICE && !c.quiet)
        ist_cli_error("GPU unusable (%s); using the CPU", gerr.message);
    }
  }

  int any_failed = 0;
  for (int k = 0; k < c.ninputs; k++) {
    const char *in_path = c.inputs[k];
    if (c.backend == BACKEND_GPU && !gpu) {
      ist_cli_path_error(in_path, "--backend gpu needs a usable GPU: %s",
                         gerr.message[0] ? gerr.message : "unknown error");
      any_failed = 1;
      continue;
    }
    imgstat_image img, out;
    memset(&out, 0, sizeof out);
    imgstat_error err = {0};
    imgstat_load_options lo = {c.max_pixels, c.max_memory};
    if (imgstat_image_load(in_path, &lo, &img, &err) != IMGSTAT_OK) {
      ist_cli_path_error(in_path, "%s", err.message);
      any_failed = 1;
      continue;
    }
    imgstat_status st = IMGSTAT_OK;
    int use_cpu = !gpu;
    const char *failed = ""; /* what failed, before the reason */
    if (gpu) {
      /* A GPU failure: auto warns once and redoes the input on the CPU;
       * --backend gpu fails this input only (the context stays). */
      st = imgstat_gpu_normalize(gpu, &img, &c.norm, NULL, NULL, &out, &err);
      if (st != IMGSTAT_OK && st != IMGSTAT_ERR_ARG) {
        if (c.backend == BACKEND_AUTO) {
          if (!c.quiet)
            ist_cli_path_error(in_path, "GPU failed (%s); using the CPU",
                               err.message);
          use_cpu = 1;
        } else {
          failed = "GPU failed: ";
        }
      }
    }
    if (use_cpu) {
      imgstat_norm_measure m;
      imgstat_norm_plan plan;
      st = imgstat_norm_measure_cpu(&img, &c.norm, c.threads, &m, &err);
      if (st == IMGSTAT_OK)
        st = imgstat_norm_plan_make(&img, &c.norm, &m, &plan, &err);
      if (st == IMGSTAT_OK)
        st = imgstat_norm_apply_cpu(&img, &plan, c.threads, &out, &err);
    }
    imgstat_image_free(&img);
    if (st != IMGSTAT_OK) {
      ist_cli_path_error(in_path, "%s%s", failed, err.message);
      any_failed = 1;
      imgstat_image_free(&out);
      continue;
    }
    imgstat_file_format fmt = choose_format(&c, is_dir, out.sample);
    char *path = output_path(&c, is_dir, in_path, fmt);
    imgstat_write_options wo = {fmt, NULL, ist_cli_temp_slot()};
    if (!path) {
      fputs("imgstat: out of memory\n", stderr);
      any_failed = 1;
    } else if (imgstat_image_write(path, &out, &wo, &err) != IMGSTAT_OK) {
      ist_cli_path_error(path, "%s", err.message);
      any_failed = 1;
    }
    free(path);
    imgstat_image_free(&out);
  }
  if (gpu)
    imgstat_gpu_destroy(gpu);
  free(c.inputs);
  return any_failed ? EXIT_FAILED : EXIT_OK;
}
