/*
 * `imgstat`'s command line: --help, --version and the options (the table is
 * options.c's): what ist_stats_parse_args fills stats_options with.
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

#ifdef IMGSTAT_HAVE_TURBOJPEG
#define JPEG_DECODER "TurboJPEG"
#else
#define JPEG_DECODER "stb_image"
#endif

/* ---- --help
 * ------------------------------------------------------------------ The option
 * lines are the table's (options.c). */

static const char *const help_titles[] = {
    "Inputs (folders' images in byte order, tar and zip files' in theirs; - "
    "is standard input):",
    "Output (default: a table per image):",
    "Computation:",
    "Histograms (" IST_OPT_DOCS "/normalize.md, Histograms):",
    "Dataset (" IST_OPT_DOCS "/dataset.md):",
    "Other:",
};

static const ist_opt_help help = {
    IST_STATS_USAGE_LINE
    "\n"
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
  case IST_OPT_NODATA:
    o->no_file_nodata = v->u == 1;
    o->nnodata = v->n;
    memcpy(o->nodata, v->list, sizeof(double) * (size_t)v->n);
    break;
  case IST_OPT_MASK:
    o->mask = v->text;
    break;
  case IST_OPT_MASK_SUFFIX:
    o->mask_suffix = v->text;
    break;
  case IST_OPT_LABELS:
    o->labels = v->text;
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
  case IST_OPT_REPORT:
    o->report_path = v->text;
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
    o->ds.scale_unit = v->u == 1; /* native, unit, none */
    break;
  case IST_OPT_OUTLIER_Z:
    o->ds.outlier_z = v->list[0];
    break;
  case IST_OPT_SAMPLE:
    o->sample = v->u;
    break;
  case IST_OPT_SEED:
    o->seed = v->u;
    break;
  case IST_OPT_EMIT:
    o->hist.dataset_emit |= 1u << v->u;
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
    printf("Channels: 1 to 4 (Y, YA, RGB, RGBA), or 5 to %d bands named 1..N "
           "(TIFF,\n  .npy, FITS; docs/bands-masks.md)\n",
           IMGSTAT_MAX_CHANNELS);
    return flush_or_complain();
  case IST_OPT_VERSION:
    printf("imgstat %s (CUDA backend: %s; JPEG: %s)\nformats: %s\n",
           IMGSTAT_VERSION, imgstat_gpu_compiled() ? "yes" : "no", JPEG_DECODER,
           imgstat_formats_description());
    printf("archives: %s\n", imgstat_inputs_archives());
    /* the libraries a run loads only when it needs them, each tried now */
    if (*imgstat_libraries_description() || *imgstat_mpi_library_description())
      printf("loaded when needed: %s%s%s\n", imgstat_libraries_description(),
             *imgstat_libraries_description() &&
                     *imgstat_mpi_library_description()
                 ? "; "
                 : "",
             imgstat_mpi_library_description());
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

int ist_stats_histograms_wanted(const imgstat_record_hist *h) {
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
  case IST_OPT_SAMPLE:
    return o->dataset ? NULL : "without --dataset";
  case IST_OPT_SEED:
    return !o->dataset  ? "without --dataset"
           : !o->sample ? "without --sample"
                        : NULL;
  case IST_OPT_EMIT:
    return !o->dataset                       ? "without --dataset"
           : o->format == IMGSTAT_RECORD_CSV ? "with --csv"
                                             : NULL;
  case IST_OPT_RANGE: /* the pooled histograms, or the images' plots */
    return (o->dataset && o->hist.fields) || o->hist.png_path
               ? NULL
               : "without --histogram-png, or --dataset and --histogram";
  case IST_OPT_BINS:
    if (!ist_stats_histograms_wanted(&o->hist))
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
int ist_stats_one_plot(const stats_options *o, int several) {
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
int ist_stats_parse_args(int argc, char **argv, stats_options *o) {
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
  /* --emit's forms are the 0..1 figures converted: --scale unit */
  if (o->hist.dataset_emit) {
    if (seen.spelled[IST_OPT_SCALE] && !o->ds.scale_unit)
      return usage("--emit needs --scale unit (its forms are the 0..1 "
                   "figures converted), not --scale native");
    o->ds.scale_unit = 1;
    if (seen.spelled[IST_OPT_AS] && o->ds.as != IMGSTAT_AS_RGB &&
        o->ds.as != IMGSTAT_AS_KEEP &&
        (o->hist.dataset_emit &
         (1u << IMGSTAT_EMIT_MMCV | 1u << IMGSTAT_EMIT_DETECTRON2)))
      return usage("--emit mmcv and detectron2 need an RGB pool (their BGR "
                   "order): --as rgb, not --as %s",
                   imgstat_dataset_as_name(o->ds.as));
  }
  /* --scale unit is torchvision's ToTensor: without --as, the layouts of
   * its default loader too (Pillow's convert("RGB"): gray replicated, alpha
   * dropped), so that the Normalize line is what ImageFolder gives */
  o->ds.as = imgstat_dataset_as_default(seen.spelled[IST_OPT_AS] != NULL,
                                        o->ds.as, o->ds.scale_unit);
  ist_opt_warn_no_effect(&syntax, o, &seen, o->quiet);
  return -1;
}
