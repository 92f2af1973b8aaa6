/*
 * imgstat: the command-line program. It parses the options, loads each input,
 * runs a backend, prints the records and turns every failure into a message
 * and an exit status. It is the only part of imgstat that prints or exits.
 */
#include "bench_cmd.h"
#include "cli_util.h"
#include "histogram_cli.h"
#include "imgstat.h"
#include "imgstat_cuda.h"
#include "normalize_cmd.h"
#include "output.h"
#include "verify.h"

#include <errno.h>
#include <pthread.h>
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

static const char help_text[] =
    "Usage: imgstat [OPTIONS] FILE...\n"
    "       imgstat normalize [OPTIONS] INPUT... -o OUT   (see its --help)\n"
    "       imgstat bench [ARGS...]          (GPU benchmark; see its --help)\n"
    "\n"
    "Per-channel statistics of images: count, min, max and the position of\n"
    "the first of each, sum, mean and standard deviation. Reads PNG, JPEG,\n"
    "BMP, TGA, GIF (first frame), PSD, HDR and PNM (P5/P6).\n"
    "\n"
    "Output (default: a table per image):\n"
    "  --json             one JSON object per image (JSON Lines)\n"
    "  --csv              a header line, then one row per channel\n"
    "\n"
    "Computation:\n"
    "  --backend B        cpu, gpu or auto (default auto: the GPU when one is\n"
    "                     usable, else the CPU)\n"
    "  --kernel K         GPU kernel: fast (default) or 1..7 (the reduction\n"
    "                     ladder)\n"
    "  --verify           run the CPU and the GPU on every input and compare\n"
    "                     every partial result: integer images exactly; float\n"
    "                     images: counts, NaN/Inf counts, min, max and their\n"
    "                     positions exactly, mean and M2 within 1e-9 "
    "relative.\n"
    "                     Prints 'FILE: verify ok' or 'FILE: verify MISMATCH "
    "...'\n"
    "                     (on stderr with --json/--csv); the records are the\n"
    "                     CPU's. Needs a usable GPU.\n"
    "  -j, --jobs N       CPU threads (default 0: one per core)\n"
    "  --max-pixels N     refuse images of more than N pixels (default "
    "2^30,\n"
    "                     at most 2^32)\n"
    "  --max-memory SIZE  refuse images whose decoding holds more than SIZE\n"
    "                     bytes at once; read at most SIZE bytes of a pipe or\n"
    "                     device (default 4G; SIZE: bytes, or with K, M, G or\n"
    "                     T: binary units, 1K = 1024)\n"
    "  --ddof D           0: population std (default); 1: sample std (N-1)\n"
    "\n"
    "Histograms (docs/normalize.md):\n"
    "  --histogram        add median, percentiles, entropy, skewness and\n"
    "                     kurtosis to each channel\n"
    "  --percentiles LIST which percentiles (default 1,99; implies "
    "--histogram)\n"
    "  --bins N           bins shown in JSON and the PNG (default 256)\n"
    "  --histogram-png OUT  draw the histograms as a PNG (several inputs:\n"
    "                     OUT-1.png, OUT-2.png, ...)\n"
    "  --histogram-log    logarithmic counts in the PNG\n"
    "\n"
    "Other:\n"
    "  -q, --quiet        no warnings (errors are still printed)\n"
    "  -h, --help         this help\n"
    "  --version          version and build features\n"
    "  --                 what follows is a file name, even if it starts "
    "with -\n"
    "\n"
    "Exit status: 0 every input processed, 1 an input failed (the others are\n"
    "still reported) or output could not be written, 2 usage error, 3 "
    "--verify\n"
    "found a mismatch. A file named like a subcommand (bench, normalize):\n"
    "use ./bench.\n";

/* ---- options ---------------------------------------------------------- */

typedef enum cli_backend {
  CLI_BACKEND_AUTO,
  CLI_BACKEND_CPU,
  CLI_BACKEND_GPU
} cli_backend;

typedef struct cli_options {
  ist_output_format format;
  cli_backend backend;
  int kernel;
  int verify;
  int threads;
  uint64_t max_pixels;
  uint64_t max_memory;
  int ddof;
  int quiet;
  ist_hist_cli hist; /* --histogram and friends (histogram_cli.h) */
  char **files;      /* owned: an array of pointers into argv */
  int nfiles;
} cli_options;

typedef enum cli_option_id {
  OPT_JSON,
  OPT_CSV,
  OPT_BACKEND,
  OPT_KERNEL,
  OPT_VERIFY,
  OPT_JOBS,
  OPT_MAX_PIXELS,
  OPT_MAX_MEMORY,
  OPT_DDOF,
  OPT_QUIET,
  OPT_HELP,
  OPT_VERSION
} cli_option_id;

static const struct cli_option {
  const char *name;
  const char *short_name; /* NULL: none */
  int takes_value;
  cli_option_id id;
} cli_option_table[] = {
    {"--json", NULL, 0, OPT_JSON},
    {"--csv", NULL, 0, OPT_CSV},
    {"--backend", NULL, 1, OPT_BACKEND},
    {"--kernel", NULL, 1, OPT_KERNEL},
    {"--verify", NULL, 0, OPT_VERIFY},
    {"--jobs", "-j", 1, OPT_JOBS},
    {"--max-pixels", NULL, 1, OPT_MAX_PIXELS},
    {"--max-memory", NULL, 1, OPT_MAX_MEMORY},
    {"--ddof", NULL, 1, OPT_DDOF},
    {"--quiet", "-q", 0, OPT_QUIET},
    {"--help", "-h", 0, OPT_HELP},
    {"--version", NULL, 0, OPT_VERSION},
};

/* What parse_args tells main to do next. */
enum { PARSE_RUN = -1 };

#define usage_error(...) ist_cli_usage_error("", "imgstat", __VA_ARGS__)

/* Writes text to stdout and reports whether it all got there. */
static int print_and_flush(const char *text) {
  fputs(text, stdout);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "imgstat: cannot write to standard output: %s\n",
            strerror(errno));
    return EXIT_INPUT_FAILED;
  }
  return EXIT_OK;
}

static int apply_option(cli_options *o, const struct cli_option *def,
                        const char *value) {
  uint64_t n;
  switch (def->id) {
  case OPT_JSON:
  case OPT_CSV: {
    ist_output_format f =
        def->id == OPT_JSON ? IMGSTAT_OUTPUT_JSON : IMGSTAT_OUTPUT_CSV;
    if (o->format != IMGSTAT_OUTPUT_TEXT && o->format != f)
      return usage_error("--json and --csv cannot be used together");
    o->format = f;
    break;
  }
  case OPT_BACKEND:
    if (strcmp(value, "cpu") == 0)
      o->backend = CLI_BACKEND_CPU;
    else if (strcmp(value, "gpu") == 0)
      o->backend = CLI_BACKEND_GPU;
    else if (strcmp(value, "auto") == 0)
      o->backend = CLI_BACKEND_AUTO;
    else
      return usage_error("--backend: '%s' is not cpu, gpu or auto", value);
    break;
  case OPT_KERNEL:
    if (strcmp(value, "fast") == 0)
      o->kernel = IMGSTAT_KERNEL_FAST;
    else if (ist_cli_parse_uint(value, IMGSTAT_KERNEL_LADDER_MIN,
                                IMGSTAT_KERNEL_LADDER_MAX, &n))
      o->kernel = (int)n;
    else
      return usage_error("--kernel: '%s' is not fast or 1..7", value);
    break;
  case OPT_VERIFY:
    o->verify = 1;
    break;
  case OPT_JOBS:
    if (!ist_cli_parse_uint(value, 0, 1024, &n))
      return usage_error("-j: '%s' is not a number of threads (0..1024)",
                         value);
    o->threads = (int)n;
    break;
  case OPT_MAX_PIXELS:
    if (!ist_cli_parse_uint(value, 1, IMGSTAT_MAX_PIXELS_LIMIT, &n))
      return usage_error("--max-pixels: '%s' is not a number from 1 to "
                         "4294967296",
                         value);
    o->max_pixels = n;
    break;
  case OPT_MAX_MEMORY:
    if (!ist_cli_parse_size(value, 1, UINT64_MAX, &n))
      return usage_error("--max-memory: '%s' is not " IMGSTAT_CLI_SIZE_EXPECTED,
                         value);
    o->max_memory = n;
    break;
  case OPT_DDOF:
    if (strcmp(value, "0") == 0)
      o->ddof = 0;
    else if (strcmp(value, "1") == 0)
      o->ddof = 1;
    else
      return usage_error("--ddof: '%s' is not 0 or 1", value);
    break;
  case OPT_QUIET:
    o->quiet = 1;
    break;
  case OPT_HELP:
    return print_and_flush(help_text);
  case OPT_VERSION: {
    char text[128];
    snprintf(text, sizeof text, "imgstat %s (CUDA backend: %s; JPEG: %s)\n",
             IMGSTAT_VERSION, imgstat_gpu_compiled() ? "yes" : "no",
             JPEG_DECODER);
    return print_and_flush(text);
  }
  }
  return PARSE_RUN;
}

/* Fills o from the command line. Options and file names may be mixed; "--"
 * ends the options. Returns PARSE_RUN, or the exit status when the program
 * is done (--help, --version, usage error). */
static int parse_args(int argc, char **argv, cli_options *o) {
  int only_files = 0;
  o->files = calloc((size_t)argc, sizeof *o->files);
  if (!o->files) {
    fputs("imgstat: out of memory\n", stderr);
    return EXIT_INPUT_FAILED;
  }
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (only_files || arg[0] != '-' || arg[1] == '\0') {
      o->files[o->nfiles++] = argv[i];
      continue;
    }
    if (strcmp(arg, "--") == 0) {
      only_files = 1;
      continue;
    }
    /* Split "--name=value" and "-jN". */
    size_t name_len = strlen(arg);
    const char *value = NULL;
    if (arg[1] == '-') {
      const char *eq = strchr(arg, '=');
      if (eq) {
        name_len = (size_t)(eq - arg);
        value = eq + 1;
      }
    } else if (arg[2] != '\0') {
      name_len = 2;
      value = arg + 2;
    }
    const struct cli_option *def = NULL;
    for (size_t k = 0; k < sizeof cli_option_table / sizeof *cli_option_table;
         k++) {
      const struct cli_option *c = &cli_option_table[k];
      const char *names[2] = {c->name, c->short_name};
      for (int m = 0; m < 2; m++)
        if (names[m] && strlen(names[m]) == name_len &&
            strncmp(names[m], arg, name_len) == 0)
          def = c;
    }
    if (!def) {
      /* The histogram options live in histogram_cli.c. */
      char name[64];
      int kind = -1;
      if (name_len < sizeof name) {
        memcpy(name, arg, name_len);
        name[name_len] = '\0';
        kind = ist_hist_cli_takes_value(name);
      }
      if (kind < 0)
        return usage_error("unknown option '%s'", arg);
      if (kind == 0 && value)
        return usage_error("option '%s' takes no value", name);
      if (kind > 0 && !value) {
        if (i + 1 >= argc)
          return usage_error("option '%s' needs a value", arg);
        value = argv[++i];
      }
      if (ist_hist_cli_set(&o->hist, name, value) != 0)
        return EXIT_USAGE; /* the message is printed */
      continue;
    }
    if (!def->takes_value && value)
      return usage_error("option '%.*s' takes no value", (int)name_len, arg);
    if (def->takes_value && !value) {
      if (i + 1 >= argc)
        return usage_error("option '%s' needs a value", arg);
      value = argv[++i];
    }
    int status = apply_option(o, def, value);
    if (status != PARSE_RUN)
      return status;
  }
  if (o->nfiles == 0)
    return usage_error("no input files");
  if (ist_hist_cli_check(&o->hist, o->files, o->nfiles) != 0)
    return EXIT_USAGE;
  return PARSE_RUN;
}

/* ---- the GPU, started in the background ---------------------------------- */

/* CUDA's start-up takes hundreds of milliseconds; creating the context on a
 * thread while the first image decodes hides most of it. */
typedef struct gpu_starter {
  pthread_t thread;
  int running; /* the thread was started and is not joined yet */
  int done;    /* status, err and gpu are final */
  imgstat_status status;
  imgstat_error err;
  imgstat_gpu *gpu;
} gpu_starter;

static void *gpu_starter_main(void *arg) {
  gpu_starter *s = arg;
  s->status = imgstat_gpu_create(-1, &s->gpu, &s->err);
  if (s->status == IMGSTAT_OK && !s->gpu)
    s->status = imgstat_error_set(&s->err, IMGSTAT_ERR_DEVICE,
                                  "the GPU backend returned no context");
  if (s->status != IMGSTAT_OK && s->err.message[0] == '\0')
    snprintf(s->err.message, sizeof s->err.message, "unknown error");
  return NULL;
}

static void gpu_starter_begin(gpu_starter *s) {
  if (pthread_create(&s->thread, NULL, gpu_starter_main, s) == 0)
    s->running = 1;
}

/* Waits for the start-up (or does it here if no thread could be started). */
static void gpu_starter_finish(gpu_starter *s) {
  if (s->done)
    return;
  if (s->running) {
    pthread_join(s->thread, NULL);
    s->running = 0;
  } else {
    gpu_starter_main(s);
  }
  s->done = 1;
}

/* ---- the run over all inputs ----------------------------------------------
 */

typedef struct run_state {
  const cli_options *opt;
  gpu_starter starter;
  int gpu_decided; /* the start-up has been waited for */
  int gpu_usable;
  unsigned long records;
  int any_failed;
  int any_mismatch;
  int write_failed;
} run_state;

static void input_error(run_state *st, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* "imgstat: PATH: reason" for an input that produced no record. */
static void input_error(run_state *st, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ist_cli_path_verror(path, fmt, ap);
  va_end(ap);
  st->any_failed = 1;
}

static const char *reason(const imgstat_error *err) {
  return err->message[0] ? err->message : "unknown error";
}

static int needs_gpu(const cli_options *o) {
  return o->verify || o->backend == CLI_BACKEND_GPU;
}

/* Called before the first statistics: waits for the GPU start-up and
 * decides whether the GPU is used from now on. */
static void gpu_decide(run_state *st) {
  if (st->gpu_decided)
    return;
  st->gpu_decided = 1;
  if (st->opt->backend == CLI_BACKEND_CPU && !st->opt->verify)
    return;
  gpu_starter_finish(&st->starter);
  if (st->starter.status == IMGSTAT_OK) {
    st->gpu_usable = 1;
    return;
  }
  /* auto: no device means the CPU quietly; a broken one is worth a line. */
  if (!needs_gpu(st->opt) && st->starter.status != IMGSTAT_ERR_NODEVICE &&
      !st->opt->quiet)
    ist_cli_error("GPU unusable (%s); using the CPU", reason(&st->starter.err));
}

static void gpu_unusable_error(run_state *st, const char *path) {
  input_error(st, path, "%s needs a usable GPU: %s",
              st->opt->verify ? "--verify" : "--backend gpu",
              reason(&st->starter.err));
}

/* The backend policy for a GPU failure on one input (statistics or
 * histograms): --backend gpu fails the input (the message is printed; returns
 * 0); auto warns once, naming the file and the reason, and returns 1: the
 * caller computes the same on the CPU. The context stays for the next input. */
static int gpu_failed(run_state *st, const char *path,
                      const imgstat_error *err) {
  if (st->opt->backend == CLI_BACKEND_GPU) {
    input_error(st, path, "GPU failed: %s", reason(err));
    return 0;
  }
  if (!st->opt->quiet)
    ist_cli_path_error(path, "GPU failed (%s); using the CPU", reason(err));
  return 1;
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

/* Computes the partials of img with the chosen backend (with --verify: the
 * CPU's in partial and the GPU's in gpu); returns 0 when the input failed
 * (the message is printed). */
static int compute(run_state *st, const char *path, const imgstat_image *img,
                   imgstat_partial partial[IMGSTAT_MAX_CHANNELS],
                   imgstat_partial gpu[IMGSTAT_MAX_CHANNELS],
                   const char **backend) {
  const cli_options *o = st->opt;
  imgstat_error err;
  memset(&err, 0, sizeof err);

  if (o->verify) {
    if (imgstat_cpu_stats(img, o->threads, partial, &err) != IMGSTAT_OK) {
      input_error(st, path, "%s", reason(&err));
      return 0;
    }
    memset(&err, 0, sizeof err);
    if (imgstat_gpu_stats(st->starter.gpu, img, o->kernel, gpu, &err) !=
        IMGSTAT_OK) {
      input_error(st, path, "--verify: GPU failed: %s", reason(&err));
      return 0;
    }
    *backend = "cpu";
    return 1;
  }

  if (st->gpu_usable) {
    if (imgstat_gpu_stats(st->starter.gpu, img, o->kernel, partial, &err) ==
        IMGSTAT_OK) {
      *backend = "gpu";
      return 1;
    }
    if (!gpu_failed(st, path, &err))
      return 0;
    memset(&err, 0, sizeof err);
  }

  if (imgstat_cpu_stats(img, o->threads, partial, &err) != IMGSTAT_OK) {
    input_error(st, path, "%s", reason(&err));
    return 0;
  }
  *backend = "cpu";
  return 1;
}

/* The histograms of img for --histogram / --histogram-png; returns 0 when
 * the input failed (the message is printed). */
static int histograms(run_state *st, const char *path, const imgstat_image *img,
                      const char *backend, ist_hist_result *res) {
  const cli_options *o = st->opt;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  /* Histograms where the statistics were computed; a GPU failure follows
   * the same policy as the statistics'. */
  imgstat_gpu *gpu = strcmp(backend, "gpu") == 0 ? st->starter.gpu : NULL;
  imgstat_status status =
      ist_hist_cli_compute(&o->hist, img, gpu, o->threads, res, &err);
  if (status != IMGSTAT_OK && gpu) {
    if (!gpu_failed(st, path, &err))
      return 0;
    memset(&err, 0, sizeof err);
    status = ist_hist_cli_compute(&o->hist, img, NULL, o->threads, res, &err);
  }
  if (status != IMGSTAT_OK) {
    input_error(st, path, "%s", reason(&err));
    return 0;
  }
  return 1;
}

static void histogram_png(run_state *st, const char *path, int index,
                          const ist_hist_result *res) {
  const cli_options *o = st->opt;
  char png[IMGSTAT_HIST_PNG_PATH_MAX] = "";
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (ist_hist_cli_write_png(&o->hist, res, index + 1, o->nfiles, png,
                             sizeof png, &err) != IMGSTAT_OK)
    input_error(st, png[0] ? png : path, "%s", reason(&err));
}

static void process_file(run_state *st, const char *path, int index) {
  const cli_options *o = st->opt;
  imgstat_image img;
  imgstat_error err;
  imgstat_partial partial[IMGSTAT_MAX_CHANNELS];
  imgstat_partial gpu[IMGSTAT_MAX_CHANNELS];
  const char *backend = "cpu";
  memset(&img, 0, sizeof img);
  memset(&err, 0, sizeof err);

  /* Once the GPU is known to be missing, do not decode for nothing. */
  if (needs_gpu(o) && st->gpu_decided && !st->gpu_usable) {
    gpu_unusable_error(st, path);
    return;
  }

  imgstat_load_options load = {o->max_pixels, o->max_memory};
  if (imgstat_image_load(path, &load, &img, &err) != IMGSTAT_OK) {
    if (err.status == IMGSTAT_ERR_LIMIT && !strstr(err.message, "max-pixels") &&
        !strstr(err.message, "max-memory"))
      input_error(st, path, "%s (see --max-pixels)", reason(&err));
    else
      input_error(st, path, "%s", reason(&err));
    return;
  }

  gpu_decide(st);
  if (needs_gpu(o) && !st->gpu_usable) {
    gpu_unusable_error(st, path);
  } else if (compute(st, path, &img, partial, gpu, &backend)) {
    ist_record rec;
    ist_hist_result hist;
    int with_hist = ist_hist_cli_active(&o->hist);
    memset(&rec, 0, sizeof rec);
    memset(&hist, 0, sizeof hist);
    if (with_hist && !histograms(st, path, &img, backend, &hist)) {
      ist_hist_result_free(&hist);
      goto done;
    }
    rec.file = path;
    rec.width = img.width;
    rec.height = img.height;
    rec.channels = img.channels;
    rec.sample = img.sample;
    rec.backend = backend;
    rec.ddof = o->ddof;
    for (int c = 0; c < img.channels; c++)
      imgstat_figures_compute(&partial[c], img.sample, img.width, o->ddof,
                              &rec.figures[c]);
    if (with_hist) {
      rec.hist = &o->hist;
      rec.hist_res = &hist;
    }
    ist_output_record(stdout, o->format, &rec, st->records++);
    if (with_hist && o->hist.png_path)
      histogram_png(st, path, index, &hist);
    ist_hist_result_free(&hist);
    if (o->verify) {
      /* The verdict follows the record; it stays out of the JSON / CSV
       * stream. */
      FILE *out = o->format == IMGSTAT_OUTPUT_TEXT ? stdout : stderr;
      fflush(stdout);
      if (!ist_verify_partials(out, path, img.channels, img.sample, partial,
                               gpu))
        st->any_mismatch = 1;
    }
  }
done:
  flush_stdout(st);
  imgstat_image_free(&img);
}

/* ---- subcommands ------------------------------------------------------------
 */

/* `imgstat NAME ARGS...` runs NAME's main with argv[0] == NAME. The one
 * place where subcommands are added. */
static const struct subcommand {
  const char *name;
  int (*main)(int argc, char **argv);
} subcommands[] = {
    {"bench", ist_bench_main},
    {"normalize", ist_normalize_main},
};

int main(int argc, char **argv) {
  cli_options opt;
  run_state st;
  int status;

  if (argc >= 2)
    for (size_t k = 0; k < sizeof subcommands / sizeof *subcommands; k++)
      if (strcmp(argv[1], subcommands[k].name) == 0)
        return subcommands[k].main(argc - 1, argv + 1);

  memset(&opt, 0, sizeof opt);
  memset(&st, 0, sizeof st);
  opt.format = IMGSTAT_OUTPUT_TEXT;
  opt.backend = CLI_BACKEND_AUTO;
  opt.kernel = IMGSTAT_KERNEL_FAST;
  opt.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  opt.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
  ist_hist_cli_init(&opt.hist);
  st.opt = &opt;

  status = parse_args(argc, argv, &opt);
  if (status != PARSE_RUN)
    goto cleanup;

  if (opt.hist.png_path) /* no partial PNG left by a signal */
    ist_cli_cleanup_on_signals();
  if (opt.verify || opt.backend != CLI_BACKEND_CPU)
    gpu_starter_begin(&st.starter);

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
  /* Every input failed before any statistics: the start-up still runs. */
  if (st.starter.running)
    gpu_starter_finish(&st.starter);
  if (st.starter.gpu)
    imgstat_gpu_destroy(st.starter.gpu);
  free(opt.files);
  return status;
}
