/*
 * The option table of every subcommand and the one parser (options.h).
 * Part of the program: usage errors print.
 */
#include "options.h"

#include "cli_util.h"
#include "imgstat/cuda.h"
#include "imgstat/engine.h"
#include "imgstat/record.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- value readers ---------------------------------------------------------
 * Each returns -1 with *out filled, or the exit status of the usage error it
 * printed (ist_opt_usage). */

typedef int (*reader)(const ist_opt *row, const ist_opt_syntax *syn,
                      const char *v, ist_opt_value *out);

/* A decimal number in [lo, hi] (ist_cli_parse_uint). */
static int read_uint(const ist_opt *row, const ist_opt_syntax *syn,
                     const char *v, ist_opt_value *out) {
  if (!ist_cli_parse_uint(v, row->lo, row->hi, &out->u))
    return ist_opt_usage(syn, row->bad, v);
  return -1;
}

/* A size in bytes with an optional binary unit (ist_cli_parse_size). */
static int read_size(const ist_opt *row, const ist_opt_syntax *syn,
                     const char *v, ist_opt_value *out) {
  if (!ist_cli_parse_size(v, row->lo, row->hi, &out->u))
    return ist_opt_usage(syn, row->bad, v);
  return -1;
}

/* One of the row's comma-separated words: its index. */
static int read_word(const ist_opt *row, const ist_opt_syntax *syn,
                     const char *v, ist_opt_value *out) {
  size_t len = strlen(v);
  uint64_t k = 0;
  for (const char *w = row->words; *w; k++) {
    size_t n = strcspn(w, ",");
    if (n == len && strncmp(w, v, n) == 0) {
      out->u = k;
      return -1;
    }
    w += n;
    if (*w == ',')
      w++;
  }
  size_t n;
  const char *near = ist_opt_nearest(v, len, row->words, &n);
  if (!near)
    return ist_opt_usage(syn, row->bad, v);
  char msg[256];
  snprintf(msg, sizeof msg, row->bad, v);
  return ist_opt_usage(syn, "%s (did you mean %.*s?)", msg, (int)n, near);
}

/* A backend name (imgstat_backend_from_name: the library's one spelling):
 * the imgstat_backend. */
static int read_backend(const ist_opt *row, const ist_opt_syntax *syn,
                        const char *v, ist_opt_value *out) {
  imgstat_backend b;
  if (!imgstat_backend_from_name(v, &b))
    return ist_opt_usage(syn, row->bad, v);
  out->u = (uint64_t)b;
  return -1;
}

/* "fast" (IMGSTAT_KERNEL_FAST) or a ladder kernel in [lo, hi]. */
static int read_kernel(const ist_opt *row, const ist_opt_syntax *syn,
                       const char *v, ist_opt_value *out) {
  if (strcmp(v, "fast") == 0) {
    out->u = IMGSTAT_KERNEL_FAST;
    return -1;
  }
  return read_uint(row, syn, v, out);
}

/* Text that is not empty. */
static int read_nonempty(const ist_opt *row, const ist_opt_syntax *syn,
                         const char *v, ist_opt_value *out) {
  (void)out;
  if (!*v)
    return ist_opt_usage(syn, "%s", row->bad);
  return -1;
}

/* Percentiles: up to IMGSTAT_MAX_PERCENTILES numbers in [0, 100]. */
static int read_percentiles(const ist_opt *row, const ist_opt_syntax *syn,
                            const char *v, ist_opt_value *out) {
  (void)row;
  if (!*v)
    return ist_opt_usage(syn, "--percentiles needs at least one value");
  int n =
      ist_cli_parse_double_list(v, 0, 100, out->list, IMGSTAT_MAX_PERCENTILES);
  if (n == IMGSTAT_CLI_NUM_RANGE)
    return ist_opt_usage(syn,
                         "--percentiles: '%s': every value must be from 0 "
                         "to 100",
                         v);
  if (n < 1)
    return ist_opt_usage(syn,
                         "--percentiles: '%s' is not up to %d numbers "
                         "from 0 to 100 separated by commas",
                         v, IMGSTAT_MAX_PERCENTILES);
  out->n = n;
  return -1;
}

/* A list of one value per band: its usage error when it has more than
 * IST_OPT_LIST_MAX values (the value itself left out: it is long), else
 * -1. */
static int per_band_count(const ist_opt *row, const ist_opt_syntax *syn,
                          const char *v) {
  size_t n = 1;
  for (const char *s = v; *s; s++)
    n += *s == ',';
  if (n <= IST_OPT_LIST_MAX)
    return -1;
  return ist_opt_usage(syn,
                       "%s: %zu values, more than the %d bands an image can "
                       "have (give one value for every band or one per band)",
                       row->name, n, IST_OPT_LIST_MAX);
}

/* --nodata: "none" (u = 1, n = 0), or one value for every channel or one
 * per channel, each a number or "nan", separated by commas. */
static int read_nodata(const ist_opt *row, const ist_opt_syntax *syn,
                       const char *v, ist_opt_value *out) {
  out->n = 0;
  out->u = 0;
  if (strcmp(v, "none") == 0) {
    out->u = 1;
    return -1;
  }
  int status = per_band_count(row, syn, v);
  if (status >= 0)
    return status;
  const char *s = v;
  for (;;) {
    double x = NAN;
    size_t len = strncmp(s, "nan", 3) == 0 ? 3 : imgstat_number_read(s, &x);
    if (len == 0 || (s[len] != ',' && s[len] != '\0') ||
        out->n == IST_OPT_LIST_MAX)
      return ist_opt_usage(syn,
                           "--nodata: '%s' is not 'none' or up to %d numbers "
                           "(or nan) separated by commas: one for every "
                           "channel or one per channel",
                           v, IST_OPT_LIST_MAX);
    out->list[out->n++] = x;
    if (s[len] == '\0')
      return -1;
    s += len + 1;
  }
}

/* --devices: "all" (n = -1), or a list of distinct device numbers. */
static int read_devices(const ist_opt *row, const ist_opt_syntax *syn,
                        const char *v, ist_opt_value *out) {
  (void)row;
  int all = strcmp(v, "all") == 0;
  int n = all ? 0
              : ist_cli_parse_double_list(v, 0, 1023, out->list,
                                          IMGSTAT_MAX_DEVICES);
  int ok = all || n >= 1;
  out->n = all ? -1 : n;
  for (int i = 0; i < out->n; i++) {
    ok &= out->list[i] == (int)out->list[i];
    for (int j = 0; j < i; j++)
      ok &= out->list[i] != out->list[j];
  }
  return ok ? -1
            : ist_opt_usage(syn,
                            "--devices: '%s' is not 'all' or up to %d "
                            "distinct device numbers separated by commas",
                            v, IMGSTAT_MAX_DEVICES);
}

/* --outlier-z: one number > 0; --range: LOW,HIGH, finite, LOW < HIGH. */
static int read_positive(const ist_opt *row, const ist_opt_syntax *syn,
                         const char *v, ist_opt_value *out) {
  if (ist_cli_parse_double(v, 1e-9, 1e9, &out->list[0]) != IMGSTAT_CLI_NUM_OK)
    return ist_opt_usage(syn, row->bad, v);
  out->n = 1;
  return -1;
}

/* --fill: one finite number. */
static int read_number(const ist_opt *row, const ist_opt_syntax *syn,
                       const char *v, ist_opt_value *out) {
  if (ist_cli_parse_double(v, -DBL_MAX, DBL_MAX, &out->list[0]) !=
      IMGSTAT_CLI_NUM_OK)
    return ist_opt_usage(syn, row->bad, v);
  out->n = 1;
  return -1;
}

static int read_range(const ist_opt *row, const ist_opt_syntax *syn,
                      const char *v, ist_opt_value *out) {
  if (ist_cli_parse_double_list(v, -DBL_MAX, DBL_MAX, out->list, 2) != 2 ||
      !(out->list[0] < out->list[1]))
    return ist_opt_usage(syn, row->bad, v);
  out->n = 2;
  return -1;
}

/* --mean / --std: one number per channel (or one for all), finite. */
static int read_channel_values(const ist_opt *row, const ist_opt_syntax *syn,
                               const char *v, ist_opt_value *out) {
  int status = per_band_count(row, syn, v);
  if (status >= 0)
    return status;
  int n = ist_cli_parse_double_list(v, -DBL_MAX, DBL_MAX, out->list,
                                    IST_OPT_LIST_MAX);
  if (n == IMGSTAT_CLI_NUM_RANGE)
    return ist_opt_usage(syn, "%s: '%s': a value is too large", row->name, v);
  if (n < 1)
    return ist_opt_usage(syn,
                         "%s: '%s' is not 1 to %d numbers separated by commas",
                         row->name, v, IST_OPT_LIST_MAX);
  out->n = n;
  return -1;
}

/* A count of the benchmark: decimal, or 2^K. */
static int parse_count(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (s[0] == '2' && s[1] == '^') {
    unsigned long k = strtoul(s + 2, &end, 10);
    if (end == s + 2 || *end || errno || k > 62)
      return 0;
    *out = UINT64_C(1) << k;
    return 1;
  }
  if (s[0] < '0' || s[0] > '9')
    return 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end || errno)
    return 0;
  *out = v;
  return 1;
}

/* A count in [lo, hi]. */
static int read_count(const ist_opt *row, const ist_opt_syntax *syn,
                      const char *v, ist_opt_value *out) {
  uint64_t n;
  if (!parse_count(v, &n) || n < row->lo || n > row->hi)
    return ist_opt_usage(syn, row->bad, v);
  out->u = n;
  return -1;
}

/* A power of two in [lo, hi]. */
static int read_power_of_two(const ist_opt *row, const ist_opt_syntax *syn,
                             const char *v, ist_opt_value *out) {
  uint64_t n;
  if (!parse_count(v, &n) || n < row->lo || n > row->hi || (n & (n - 1)))
    return ist_opt_usage(syn, row->bad, v);
  out->u = n;
  return -1;
}

/* W or WxH, each a count from 1 to 2^32 - 1. */
static int read_wxh(const ist_opt *row, const ist_opt_syntax *syn,
                    const char *v, ist_opt_value *out) {
  char buf[64];
  uint64_t a, b;
  if (strlen(v) >= sizeof buf)
    return ist_opt_usage(syn, row->bad, v);
  strcpy(buf, v);
  char *x = strchr(buf, 'x');
  if (x)
    *x = '\0';
  if (!parse_count(buf, &a) || a == 0 || a > UINT32_MAX)
    return ist_opt_usage(syn, row->bad, v);
  b = a;
  if (x && (!parse_count(x + 1, &b) || b == 0 || b > UINT32_MAX))
    return ist_opt_usage(syn, row->bad, v);
  out->width = (uint32_t)a;
  out->height = (uint32_t)b;
  return -1;
}

/* ---- the table -------------------------------------------------------------
 * The rows of a subcommand, in the order of its --help. */

#define S IST_CMD_STATS
#define N IST_CMD_NORMALIZE
#define B IST_CMD_BENCH

/* --help sections of the statistics command and of normalize */
enum { S_INPUT, S_OUTPUT, S_COMPUTE, S_HIST, S_DATASET, S_OTHER };
enum { N_MODES, N_INPUT, N_OUTPUT, N_OPTIONS };

_Static_assert(IMGSTAT_FLOAT_BINS_MAX == 16777216u,
               "normalize --bins' message names the largest value");
_Static_assert(IMGSTAT_MAX_PIXELS_LIMIT == UINT64_C(4294967296),
               "--max-pixels' message names the largest value");

/* An option whose value is one of a list of words (read_word), up to its
 * --help section: its usage error names the option and the words it takes. */
#define WORD_OPT(name, cmd, id, words, expected)                               \
  name, NULL, cmd, id, 1, read_word, 0, 0, words, name ": '%s' is not " expected

/* The options the statistics command and normalize share: one reading rule
 * each (their --help lines differ). */
#define AS_OPT(cmd)                                                            \
  WORD_OPT("--as", cmd, IST_OPT_AS, "keep,gray,rgb,rgba",                      \
           "keep, gray, rgb or rgba")
#define SCALE_OPT(cmd)                                                         \
  WORD_OPT("--scale", cmd, IST_OPT_SCALE, "native,unit,none",                  \
           "native (or none, its synonym) or unit")
#define ROW_BACKEND(cmd, section, help)                                        \
  {                                                                            \
    "--backend", NULL, cmd, IST_OPT_BACKEND, 1, read_backend, 0, 0, NULL,      \
        "--backend: '%s' is not cpu, gpu or auto", section, help               \
  }
/* Lists of inputs and walks: the same rows for both. */
#define ROWS_INPUT_LISTS(cmd, section)                                         \
  {"--files-from",                                                             \
   NULL,                                                                       \
   cmd,                                                                        \
   IST_OPT_FILES_FROM,                                                         \
   1,                                                                          \
   read_nonempty,                                                              \
   0,                                                                          \
   0,                                                                          \
   NULL,                                                                       \
   "--files-from needs a file name",                                           \
   section,                                                                    \
   "  --files-from LIST  also the paths in the file LIST, one per line (-:\n"  \
   "                     standard input), in its place among the inputs\n"},   \
      {"--null",                                                               \
       "-0",                                                                   \
       cmd,                                                                    \
       IST_OPT_NULL,                                                           \
       0,                                                                      \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       NULL,                                                                   \
       section,                                                                \
       "  -0, --null         --files-from lists are NUL-separated (find "      \
       "-print0)\n"},                                                          \
  {                                                                            \
    "--follow", NULL, cmd, IST_OPT_FOLLOW, 0, NULL, 0, 0, NULL, NULL, section, \
        "  --follow           walk symbolic links to directories met in "      \
        "walks\n"                                                              \
  }
#define ROW_MAX_PIXELS(cmd, section, help)                                     \
  {                                                                            \
    "--max-pixels", NULL, cmd, IST_OPT_MAX_PIXELS, 1, read_uint, 1,            \
        IMGSTAT_MAX_PIXELS_LIMIT, NULL,                                        \
        "--max-pixels: '%s' is not a number from 1 to 4294967296", section,    \
        help                                                                   \
  }
#define ROW_MAX_MEMORY(cmd, section, what)                                     \
  {                                                                            \
    "--max-memory", NULL, cmd, IST_OPT_MAX_MEMORY, 1, read_size, 1,            \
        UINT64_MAX, NULL,                                                      \
        "--max-memory: '%s' is not " IMGSTAT_CLI_SIZE_EXPECTED, section,       \
        "  --max-memory SIZE  refuse " what                                    \
        " whose decoding holds more than SIZE\n"                               \
        "                     bytes at once; read at most SIZE bytes of a "    \
        "pipe or\n"                                                            \
        "                     device (default 4G; SIZE: bytes, or with K, M, " \
        "G or\n"                                                               \
        "                     T: binary units, 1K = 1024)\n"                   \
  }

#define ROW_PAGE(cmd, section)                                                 \
  {                                                                            \
    "--page", NULL, cmd, IST_OPT_PAGE, 1, read_uint, 1, UINT32_MAX, NULL,      \
        "--page: '%s' is not a page number from 1", section,                   \
        "  --page N           the Nth page (image) of a multi-page TIFF "      \
        "(default\n"                                                           \
        "                     1; the record says how many there are)\n"        \
  }

/* --mask, --mask-suffix and --nodata: read alike by both commands, each
 * with its own help text. */
#define ROW_MASK(cmd, section, help)                                           \
  {                                                                            \
    "--mask", NULL, cmd, IST_OPT_MASK, 1, read_nonempty, 0, 0, NULL,           \
        "--mask needs a file or a folder", section, help                       \
  }
#define ROW_MASK_SUFFIX(cmd, section, help)                                    \
  {                                                                            \
    "--mask-suffix", NULL, cmd, IST_OPT_MASK_SUFFIX, 1, NULL, 0, 0, NULL,      \
        NULL, section, help                                                    \
  }
#define ROW_NODATA(cmd, section, help)                                         \
  {                                                                            \
    "--nodata", NULL, cmd, IST_OPT_NODATA, 1, read_nodata, 0, 0, NULL, NULL,   \
        section, help                                                          \
  }

#define ROW_NPY_LAYOUT(cmd, section)                                           \
  {                                                                            \
    WORD_OPT("--npy-layout", cmd, IST_OPT_NPY_LAYOUT, "hwc,chw",               \
             "hwc or chw"),                                                    \
        section,                                                               \
        "  --npy-layout L     the axes of 3-D .npy inputs: hwc (height, "      \
        "width,\n"                                                             \
        "                     channel) or chw; default by the shape\n"         \
  }

static const ist_opt table[] = {
    /* ---- imgstat [OPTIONS] FILE... ---- */
    ROWS_INPUT_LISTS(S, S_INPUT),
    {"--errors-as-records", NULL, S, IST_OPT_ERRORS_AS_RECORDS, 0, NULL, 0, 0,
     NULL, NULL, S_OUTPUT,
     "  --errors-as-records  with --json / --csv, a record for each input "
     "that\n"
     "                     failed, in its place: {\"file\": ..., \"error\": "
     "...}\n"
     "                     (CSV: a last column, error)\n"},
    {"--json", NULL, S, IST_OPT_JSON, 0, NULL, 0, 0, NULL, NULL, S_OUTPUT,
     "  --json             one JSON object per image (JSON Lines)\n"},
    {"--csv", NULL, S, IST_OPT_CSV, 0, NULL, 0, 0, NULL, NULL, S_OUTPUT,
     "  --csv              a header line, then one row per channel\n"},
    {"--brief", NULL, S, IST_OPT_BRIEF, 0, NULL, 0, 0, NULL, NULL, S_OUTPUT,
     "  --brief            text, one line per image (long folders): the "
     "header,\n"
     "                     then each channel's mean, std, min and max\n"},
    {"--report", NULL, S, IST_OPT_REPORT, 1, read_nonempty, 0, 0, NULL,
     "--report needs a file name", S_OUTPUT,
     "  --report OUT.html  also write one self-contained HTML page of the "
     "run:\n"
     "                     the pooled record and constants, histograms, "
     "the\n"
     "                     outliers with thumbnails, the files left out and\n"
     "                     failed, a table of the images (" IST_OPT_DOCS
     "/report.md)\n"},
    ROW_BACKEND(
        S, S_COMPUTE,
        "  --backend B        cpu, gpu or auto (default auto: the CPU, and the "
        "GPU\n"
        "                     when the work in hand repays starting it)\n"),
    {"--kernel", NULL, S, IST_OPT_KERNEL, 1, read_kernel,
     IMGSTAT_KERNEL_LADDER_MIN, IMGSTAT_KERNEL_LADDER_MAX, NULL,
     "--kernel: '%s' is not fast or 1..7", S_COMPUTE,
     "  --kernel K         GPU kernel: fast (default) or 1..7 (the "
     "reduction\n"
     "                     ladder)\n"},
    {"--verify", NULL, S, IST_OPT_VERIFY, 0, NULL, 0, 0, NULL, NULL, S_COMPUTE,
     "  --verify           run the CPU and the GPU on every input and "
     "compare\n"
     "                     every partial result exactly, float mean and M2 "
     "included\n"
     "                     (both follow one float order: the same bits).\n"
     "                     Prints 'FILE: verify ok' or 'FILE: verify MISMATCH "
     "...'\n"
     "                     (on stderr with --json/--csv); the records are "
     "the\n"
     "                     CPU's. Needs a usable GPU.\n"},
    {"--jobs", "-j", S, IST_OPT_JOBS, 1, read_uint, 0, 1024, NULL,
     "-j: '%s' is not a number of threads (0..1024)", S_COMPUTE,
     "  -j, --jobs N       worker threads, each reading, decoding and "
     "computing\n"
     "                     one input at a time (default 0: one per core; 1: "
     "one\n"
     "                     thread for everything)\n"},
    {WORD_OPT("--jpeg-decoder", S, IST_OPT_JPEG_DECODER, "auto,cpu,gpu",
              "auto, cpu or gpu"),
     S_COMPUTE,
     "  --jpeg-decoder D   where JPEGs are decoded: gpu (nvJPEG, the pixels\n"
     "                     stay on the device), cpu (TurboJPEG) or auto "
     "(default:\n"
     "                     the CPU decoders, as cpu; nvJPEG's start-up repays\n"
     "                     itself only on very large runs)\n"},
    {WORD_OPT("--jpeg-check", S, IST_OPT_JPEG_CHECK, "markers,full,none",
              "markers, full or none"),
     S_COMPUTE,
     "  --jpeg-check C     before nvJPEG: markers (default: segments, tables,\n"
     "                     restart markers, EOI: catches truncation), full\n"
     "                     (also every Huffman code of every scan: damaged\n"
     "                     files refused as on the CPU) or none (headers "
     "only);\n"
     "                     doubtful files get libjpeg's verdict "
     "(docs/gpu.md)\n"},
    {"--devices", NULL, S, IST_OPT_DEVICES, 1, read_devices, 0, 0, NULL, NULL,
     S_COMPUTE,
     "  --devices LIST     the GPUs to use: device numbers (0,1) or all; "
     "inputs\n"
     "                     are dealt to one context per device (default: the\n"
     "                     current device)\n"},
    {"--max-inflight", NULL, S, IST_OPT_MAX_INFLIGHT, 1, read_size, 1,
     UINT64_MAX, NULL, "--max-inflight: '%s' is not " IMGSTAT_CLI_SIZE_EXPECTED,
     S_COMPUTE,
     "  --max-inflight SIZE  decoded image bytes held at once by the workers\n"
     "                     (default 256M a worker, 1G at least, a quarter\n"
     "                     of the memory at most; a larger image runs "
     "alone)\n"},
    ROW_MAX_PIXELS(
        S, S_COMPUTE,
        "  --max-pixels N     refuse images of more than N pixels (default "
        "2^30,\n"
        "                     at most 2^32)\n"),
    ROW_MAX_MEMORY(S, S_COMPUTE, "images"),
    ROW_PAGE(S, S_COMPUTE),
    ROW_NPY_LAYOUT(S, S_COMPUTE),
    ROW_NODATA(
        S, S_COMPUTE,
        "  --nodata V|V1,V2,..|none  leave samples equal to V out of every "
        "figure\n"
        "                     (one value, or one per channel; counted apart "
        "as\n"
        "                     nodata_count); default: the file's own (TIFF's\n"
        "                     GDAL_NODATA); none: not even the file's\n"),
    ROW_MASK(
        S, S_COMPUTE,
        "  --mask FILE|DIR    statistics of the pixels where the mask is "
        "non-zero:\n"
        "                     FILE for every input, or DIR holding each "
        "input's "
        "mask\n"
        "                     at its path below its folder, same stem, any "
        "extension\n"),
    {"--labels", NULL, S, IST_OPT_LABELS, 1, read_nonempty, 0, 0, NULL,
     "--labels needs a file or a folder", S_COMPUTE,
     "  --labels FILE|DIR  also the statistics of each non-zero label of an "
     "8- or\n"
     "                     16-bit label image (paired as --mask pairs)\n"},
    ROW_MASK_SUFFIX(
        S, S_COMPUTE,
        "  --mask-suffix S    with --mask/--labels DIR: an input's stem less S "
        "names\n"
        "                     its mask\n"
        "                     (case_0000.png pairs with case.png under "
        "_0000)\n"),
    {WORD_OPT("--ddof", S, IST_OPT_DDOF, "0,1", "0 or 1"), S_COMPUTE,
     "  --ddof D           0: population std (default); 1: sample std "
     "(N-1)\n"},
    {"--histogram", NULL, S, IST_OPT_HISTOGRAM, 0, NULL, 0, 0, NULL, NULL,
     S_HIST,
     "  --histogram        add median, percentiles, entropy, skewness and\n"
     "                     kurtosis to each channel\n"},
    {"--percentiles", NULL, S, IST_OPT_PERCENTILES, 1, read_percentiles, 0, 0,
     NULL, NULL, S_HIST,
     "  --percentiles LIST which percentiles (default 1,99; implies "
     "--histogram)\n"},
    {"--bins", NULL, S, IST_OPT_BINS, 1, read_uint, 1, 65536, NULL,
     "--bins: '%s' is not a number from 1 to 65536", S_HIST,
     "  --bins N           bins shown in JSON and the PNG (default 256)\n"},
    {"--histogram-png", NULL, S, IST_OPT_HISTOGRAM_PNG, 1, read_nonempty, 0, 0,
     NULL, "--histogram-png needs a file name", S_HIST,
     "  --histogram-png OUT.png  draw the histograms as a PNG: one input "
     "OUT.png;\n"
     "                     several: OUT-NAME.png after each input's name; "
     "the\n"
     "                     dataset's OUT-dataset.png\n"},
    {"--histogram-log", NULL, S, IST_OPT_HISTOGRAM_LOG, 0, NULL, 0, 0, NULL,
     NULL, S_HIST, "  --histogram-log    logarithmic counts in the PNG\n"},
    {"--dataset", NULL, S, IST_OPT_DATASET, 0, NULL, 0, 0, NULL, NULL,
     S_DATASET,
     "  --dataset          after the images' records, one record pooled over "
     "every\n"
     "                     sample of every image: count, min, max (file, x, "
     "y),\n"
     "                     sum, sum_sq, mean, std; the images left out and "
     "the\n"
     "                     outliers\n"},
    {"--dataset-only", NULL, S, IST_OPT_DATASET_ONLY, 0, NULL, 0, 0, NULL, NULL,
     S_DATASET, "  --dataset-only     only that record\n"},
    {AS_OPT(S), S_DATASET,
     "  --as L             pool as L: gray (Rec. 601 luma), rgb (gray "
     "replicated,\n"
     "                     alpha dropped: Pillow's convert('RGB')), rgba "
     "(opaque\n"
     "                     alpha added) or keep (the layout and depth "
     "most\n"
     "                     images have pool, ties to more channels, then "
     "more\n"
     "                     bits; the others are left out); default rgb "
     "with\n"
     "                     --scale unit, else keep\n"},
    {SCALE_OPT(S), S_DATASET,
     "  --scale unit       samples in 0..1 (8-bit / 255, 16-bit / 65535, "
     "float\n"
     "                     as is; default native, or none as the record "
     "says it):\n"
     "                     depths pool together, layouts as --as rgb; the "
     "text\n"
     "                     output adds torchvision's Normalize(mean=[...],\n"
     "                     std=[...]) line\n"},
    {WORD_OPT("--emit", S, IST_OPT_EMIT, IMGSTAT_EMIT_NAMES,
              "torchvision, timm, hf, mmcv, detectron2, keras or "
              "albumentations"),
     S_DATASET,
     "  --emit FORM        the mean and std as FORM takes them, a line\n"
     "                     'FORM: ...' in place of the Normalize line (JSON:\n"
     "                     \"emit\"), repeatable: torchvision, timm, hf "
     "(JSON\n"
     "                     keys), albumentations (0..1, RGB), mmcv (0..255,\n"
     "                     bgr_to_rgb=True), detectron2 (0..255, BGR), keras\n"
     "                     (0..255, variance); implies --scale unit\n"},
    {"--sample", NULL, S, IST_OPT_SAMPLE, 1, read_count, 1, UINT64_MAX, NULL,
     "--sample: '%s' is not a number of inputs (1 or more)", S_DATASET,
     "  --sample N         pool a reproducible uniform sample of N of the "
     "inputs\n"
     "                     (drawn from the sorted input list: the same files "
     "for\n"
     "                     any -j, devices and ranks; all when N is not "
     "fewer;\n"
     "                     " IST_OPT_DOCS "/dataset.md)\n"},
    {"--seed", NULL, S, IST_OPT_SEED, 1, read_count, 0, UINT64_MAX, NULL,
     "--seed: '%s' is not a number from 0 to 18446744073709551615", S_DATASET,
     "  --seed S           the sample's seed (default 0)\n"},
    {"--outlier-z", NULL, S, IST_OPT_OUTLIER_Z, 1, read_positive, 0, 0, NULL,
     "--outlier-z: '%s' is not a number > 0", S_DATASET,
     "  --outlier-z Z      robust z-score beyond which an image's mean or std "
     "is\n"
     "                     an outlier (default 5)\n"},
    {"--range", NULL, S, IST_OPT_RANGE, 1, read_range, 0, 0, NULL,
     "--range: '%s' is not LOW,HIGH (two numbers, LOW < HIGH)", S_DATASET,
     "  --range LOW,HIGH   float images: the histograms' range (the pooled\n"
     "                     one; each image's plot, which without it spans\n"
     "                     the 0.1..99.9 percentiles, the rest counted at "
     "its\n"
     "                     edges)\n"},
    {"--mpi", NULL, S, IST_OPT_MPI, 0, NULL, 0, 0, NULL, NULL, S_DATASET,
     "  --mpi              run as one of mpirun's ranks: each takes a share of "
     "the\n"
     "                     sorted inputs, rank 0 prints everything; on a\n"
     "                     cluster: srun --cpus-per-task=M imgstat --mpi ...\n"
     "                     (" IST_OPT_DOCS "/scaling.md)\n"},
    {"--progress", NULL, S, IST_OPT_PROGRESS, 0, NULL, 0, 0, NULL, NULL,
     S_OTHER,
     "  --progress         a progress line on stderr even when it is no "
     "terminal\n"},
    {"--quiet", "-q", S, IST_OPT_QUIET, 0, NULL, 0, 0, NULL, NULL, S_OTHER,
     "  -q, --quiet        no warnings, no progress line (errors are still\n"
     "                     printed)\n"},
    {"--help", "-h", S, IST_OPT_HELP, 0, NULL, 0, 0, NULL, NULL, S_OTHER,
     "  -h, --help         this help\n"},
    {"--version", NULL, S, IST_OPT_VERSION, 0, NULL, 0, 0, NULL, NULL, S_OTHER,
     "  --version          version and build features\n"},
    {NULL, NULL, S, IST_OPT_NONE, 0, NULL, 0, 0, NULL, NULL, S_OTHER,
     "  --                 what follows is a file name, even if it starts "
     "with -\n"},

    /* ---- imgstat normalize [MODE] [OPTIONS] INPUT... -o OUT ---- */
    {NULL, NULL, N, IST_OPT_NONE, 0, NULL, 0, 0, NULL, NULL, N_MODES,
     "  minmax             each channel's [min, max] to the full range of "
     "the\n"
     "                     output depth (0..255, 0..65535, or 0..1 for "
     "float)\n"
     "  clip LOW,HIGH      percentiles LOW and HIGH (0..100) to the full "
     "range,\n"
     "                     saturating outside (e.g. clip 1,99)\n"
     "  zscore             (x - mean) / std of each channel, as float32\n"},
    {"--mean", NULL, N, IST_OPT_MEAN, 1, read_channel_values, 0, 0, NULL, NULL,
     N_MODES,
     "  --mean M1,M2,.. --std S1,S2,..\n"
     "                     (x - mean) / std with given values (native "
     "units:\n"
     "                     0..255 for 8-bit), as float32; one value for all\n"
     "                     channels or one per channel\n"},
    {"--std", NULL, N, IST_OPT_STD, 1, read_channel_values, 0, 0, NULL, NULL,
     N_MODES, NULL},
    {"--stats-from", NULL, N, IST_OPT_STATS_FROM, 1, NULL, 0, 0, NULL, NULL,
     N_MODES,
     "  --stats-from FILE  the same with mean and std taken from 'imgstat "
     "--json'\n"
     "                     output: its last dataset record (--dataset), or "
     "its\n"
     "                     one image record\n"},
    ROW_MASK(
        N, N_MODES,
        "  --mask FILE|DIR    measure each channel over the pixels where the "
        "mask is\n"
        "                     non-zero (MONAI's nonzero) and map only those; "
        "paired\n"
        "                     as in the statistics (--mask-suffix S)\n"),
    ROW_MASK_SUFFIX(N, N_MODES,
                    "  --mask-suffix S    with --mask DIR: an input's stem "
                    "less S names its "
                    "mask\n"),
    ROW_NODATA(
        N, N_MODES,
        "  --nodata V|V1,..|none  samples equal to V are not measured and not "
        "mapped\n"
        "                     (default: the file's own GDAL_NODATA)\n"),
    {"--fill", NULL, N, IST_OPT_FILL, 1, read_number, 0, 0, NULL,
     "--fill: '%s' is not a number", N_MODES,
     "  --fill V           write V where --mask or --nodata leaves samples "
     "out\n"
     "                     (else they keep their values)\n"},
    {"--range", NULL, N, IST_OPT_RANGE, 1, read_range, 0, 0, NULL,
     "--range: '%s' is not LOW,HIGH with LOW < HIGH (e.g. --range 10,240)",
     N_MODES,
     "  --range LOW,HIGH   [LOW, HIGH] (input units) to the full range of the\n"
     "                     output depth, saturating outside (ImageMagick's\n"
     "                     -level); nothing measured\n"},
    {SCALE_OPT(N), N_MODES,
     "  --scale unit       --mean, --std and --range in 0..1 units of the\n"
     "                     input's full scale (x/255, x/65535: torchvision's\n"
     "                     ToTensor); default native (0..255 for 8-bit; "
     "none is\n"
     "                     its synonym, as the record says it)\n"},
    {"--dataset", NULL, N, IST_OPT_DATASET, 0, NULL, 0, 0, NULL, NULL, N_MODES,
     "  --dataset          one plan for every input: minmax, clip or zscore\n"
     "                     with the figures pooled over all of them (a first\n"
     "                     pass; " IST_OPT_DOCS "/dataset.md); one layout and\n"
     "                     depth, or\n"
     "                     8/16-bit and float together with --scale unit\n"},
    {"--sample", NULL, N, IST_OPT_SAMPLE, 1, read_count, 1, UINT64_MAX, NULL,
     "--sample: '%s' is not a number of inputs (1 or more)", N_MODES,
     "  --sample N --seed S\n"
     "                     with --dataset: pool a reproducible uniform sample "
     "of N\n"
     "                     inputs (as imgstat --sample; seed default 0); "
     "every\n"
     "                     input is still written\n"},
    {"--seed", NULL, N, IST_OPT_SEED, 1, read_count, 0, UINT64_MAX, NULL,
     "--seed: '%s' is not a number from 0 to 18446744073709551615", N_MODES,
     NULL},
    ROWS_INPUT_LISTS(N, N_INPUT),
    {"--output", "-o", N, IST_OPT_OUTPUT, 1, NULL, 0, 0, NULL, NULL, N_OUTPUT,
     "  -o, --output OUT   output file, or folder (created if missing) for a\n"
     "                     folder input, several inputs, a name ending in /\n"
     "                     or one without extension: OUT/<path below the\n"
     "                     folder argument, or the file's name> with the\n"
     "                     output format's extension (required)\n"},
    {"--skip-existing", NULL, N, IST_OPT_SKIP_EXISTING, 0, NULL, 0, 0, NULL,
     NULL, N_OUTPUT,
     "  --skip-existing    leave outputs that exist alone (their inputs are "
     "not\n"
     "                     read): an interrupted run resumes\n"},
    {"--compression", NULL, N, IST_OPT_COMPRESSION, 1, read_uint, 0, 9, NULL,
     "--compression: '%s' is not a level from 0 to 9", N_OUTPUT,
     "  --compression N    PNG deflate level, 0 (none, fastest) to 9 "
     "(smallest);\n"
     "                     default 1 (" IST_OPT_DOCS "/benchmarks.md)\n"},
    {WORD_OPT("--layout", N, IST_OPT_LAYOUT, "hwc,chw", "hwc or chw"), N_OUTPUT,
     "  --layout L         .npy axes: hwc (height, width, channel; default)\n"
     "                     or chw (channels first, PyTorch's order)\n"},
    {"--per-channel", NULL, N, IST_OPT_PER_CHANNEL, 0, NULL, 0, 0, NULL, NULL,
     N_OPTIONS,
     "  --per-channel      minmax/clip: a range per channel "
     "(default)\n"},
    {"--linked", NULL, N, IST_OPT_LINKED, 0, NULL, 0, 0, NULL, NULL, N_OPTIONS,
     "  --linked           minmax/clip: one range over the colour channels\n"
     "                     (keeps hue)\n"},
    {WORD_OPT("--depth", N, IST_OPT_DEPTH, "8,16,32", "8, 16 or 32"), N_OPTIONS,
     "  --depth D          8, 16 or 32 (float); default: the input's for\n"
     "                     minmax/clip, 32 for zscore and --mean/--std\n"},
    {WORD_OPT("--format", N, IST_OPT_FORMAT, "png,npy,pfm", "png, npy or pfm"),
     N_OPTIONS,
     "  --format F         png, npy or pfm (default: from OUT's extension; "
     "for\n"
     "                     a folder png, or npy for float)\n"},
    {WORD_OPT("--alpha", N, IST_OPT_ALPHA, "copy,normalize,drop",
              "copy, normalize or drop"),
     N_OPTIONS,
     "  --alpha A          copy (default: unchanged but for the depth),\n"
     "                     normalize (like a colour channel, never linked) "
     "or\n"
     "                     drop\n"},
    {AS_OPT(N), N_OPTIONS,
     "  --as L             convert each input first, as imgstat --dataset "
     "pools:\n"
     "                     gray (Rec. 601 luma), rgb (gray replicated, "
     "alpha\n"
     "                     dropped: torchvision's (3, H, W) for every "
     "image),\n"
     "                     rgba (opaque alpha added) or keep; default rgb "
     "with\n"
     "                     --scale unit, else keep\n"},
    {"--bins", NULL, N, IST_OPT_FLOAT_BINS, 1, read_uint, 1,
     IMGSTAT_FLOAT_BINS_MAX, NULL,
     "--bins: '%s' is not a number from 1 to 16777216", N_OPTIONS,
     "  --bins N           float clip: histogram bins (default 65536); the\n"
     "                     percentiles are within (max - min) / N\n"},
    ROW_BACKEND(N, N_OPTIONS,
                "  --backend B        cpu, gpu or auto (default auto)\n"),
    {"--jobs", "-j", N, IST_OPT_JOBS, 1, read_uint, 0, 1024, NULL,
     "-j: '%s' is not a number of threads (0..1024)", N_OPTIONS,
     "  -j, --jobs N       worker threads, each decoding, normalizing and\n"
     "                     writing one input at a time (default 0: one per "
     "core;\n"
     "                     1: one thread; one input alone: every core on "
     "it)\n"},
    {"--max-inflight", NULL, N, IST_OPT_MAX_INFLIGHT, 1, read_size, 1,
     UINT64_MAX, NULL, "--max-inflight: '%s' is not " IMGSTAT_CLI_SIZE_EXPECTED,
     N_OPTIONS,
     "  --max-inflight SIZE  image bytes (inputs and outputs) held at once "
     "by\n"
     "                     the workers (default 256M a worker, 1G at least,\n"
     "                     a quarter of the memory at most; a larger image\n"
     "                     runs alone)\n"},
    ROW_MAX_PIXELS(
        N, N_OPTIONS,
        "  --max-pixels N     refuse inputs of more than N pixels (default "
        "2^30)\n"),
    ROW_MAX_MEMORY(N, N_OPTIONS, "inputs"),
    ROW_PAGE(N, N_OPTIONS),
    ROW_NPY_LAYOUT(N, N_OPTIONS),
    {"--progress", NULL, N, IST_OPT_PROGRESS, 0, NULL, 0, 0, NULL, NULL,
     N_OPTIONS,
     "  --progress         a progress line on stderr even when it is no "
     "terminal\n"},
    {"--quiet", "-q", N, IST_OPT_QUIET, 0, NULL, 0, 0, NULL, NULL, N_OPTIONS,
     "  -q, --quiet        no warnings, no progress line\n"},
    {"--help", "-h", N, IST_OPT_HELP, 0, NULL, 0, 0, NULL, NULL, N_OPTIONS,
     "  -h, --help         this help\n"},

    /* ---- imgstat bench (its usage text is its own: bench_cmd.c) ---- */
    {"--json", NULL, B, IST_OPT_JSON, 0, NULL, 0, 0, NULL, NULL, 0, NULL},
    {"--quick", NULL, B, IST_OPT_QUICK, 0, NULL, 0, 0, NULL, NULL, 0, NULL},
    {"--no-npp", NULL, B, IST_OPT_NO_NPP, 0, NULL, 0, 0, NULL, NULL, 0, NULL},
    {"--parallel", NULL, B, IST_OPT_PARALLEL, 0, NULL, 0, 0, NULL, NULL, 0,
     NULL},
    {"--quick-exit", NULL, B, IST_OPT_QUICK_EXIT, 0, NULL, 0, 0, NULL, NULL, 0,
     NULL},
    {"--help", "-h", B, IST_OPT_HELP, 0, NULL, 0, 0, NULL, NULL, 0, NULL},
    {"--runs", NULL, B, IST_OPT_RUNS, 1, read_count, 1, 100000, NULL,
     "--runs: not a count from 1 to 100000: %s", 0, NULL},
    {"--warmup", NULL, B, IST_OPT_WARMUP, 1, read_count, 1, 1000, NULL,
     "--warmup: not a count from 1 to 1000: %s", 0, NULL},
    {"--copy-mib", NULL, B, IST_OPT_COPY_MIB, 1, read_count, 1,
     UINT64_C(1) << 20, NULL, "--copy-mib: not a size in MiB: %s", 0, NULL},
    {"--small", NULL, B, IST_OPT_SMALL, 1, read_count, 1, UINT64_C(1) << 34,
     NULL, "--small: not a count from 1 to 2^34: %s", 0, NULL},
    {"--large", NULL, B, IST_OPT_LARGE, 1, read_count, 1, UINT64_C(1) << 34,
     NULL, "--large: not a count from 1 to 2^34: %s", 0, NULL},
    {"--size", NULL, B, IST_OPT_SIZE, 1, read_wxh, 0, 0, NULL,
     "--size: not W or WxH: %s", 0, NULL},
    {"--block", NULL, B, IST_OPT_BLOCK, 1, read_power_of_two, 64, 1024, NULL,
     "--block: not a power of two in 64..1024: %s", 0, NULL},
    {"--device", NULL, B, IST_OPT_DEVICE, 1, read_count, 0, 1023, NULL,
     "--device: not a device number: %s", 0, NULL},
    {"--startup", NULL, B, IST_OPT_STARTUP, 1, NULL, 0, 0, NULL, NULL, 0, NULL},
    {"--rates", NULL, B, IST_OPT_RATES, 0, NULL, 0, 0, NULL, NULL, 0, NULL},
};

#undef S
#undef N
#undef B

/* ---- the parser ------------------------------------------------------------
 */

int ist_opt_usage(const ist_opt_syntax *syn, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int status = syn->vusage
                   ? syn->vusage(fmt, ap)
                   : ist_cli_usage_verror(syn->prefix, syn->command, fmt, ap);
  va_end(ap);
  return status;
}

int ist_opt_apply_engine(imgstat_engine_options *engine, const ist_opt *row,
                         const ist_opt_value *v) {
  switch (row->id) {
  case IST_OPT_BACKEND:
    engine->backend = (imgstat_backend)v->u;
    return 1;
  case IST_OPT_KERNEL:
    engine->kernel = (int)v->u;
    return 1;
  case IST_OPT_VERIFY:
    engine->verify = 1;
    return 1;
  case IST_OPT_JOBS:
    engine->threads = (int)v->u;
    return 1;
  case IST_OPT_DEVICES:
    engine->ndevices = v->n;
    for (int k = 0; k < v->n; k++)
      engine->devices[k] = (int)v->list[k];
    return 1;
  case IST_OPT_JPEG_DECODER: /* the words in imgstat_jpeg_decoder's order */
    engine->jpeg_decoder = (imgstat_jpeg_decoder)v->u;
    return 1;
  case IST_OPT_JPEG_CHECK:
    engine->jpeg_check = (imgstat_jpeg_check)v->u; /* its words' order */
    return 1;
  case IST_OPT_MAX_PIXELS:
    engine->load.max_pixels = v->u;
    return 1;
  case IST_OPT_MAX_MEMORY:
    engine->load.max_memory = v->u;
    return 1;
  case IST_OPT_PAGE:
    engine->load.page = (uint32_t)v->u;
    return 1;
  case IST_OPT_NPY_LAYOUT:
    engine->load.npy_layout = (int)v->u + 1;
    return 1;
  default:
    return 0;
  }
}

/* The row of cmd named by the len bytes at name (long or short). */
static const ist_opt *find(ist_cmd cmd, const char *name, size_t len,
                           const char **spelled) {
  for (size_t k = 0; k < sizeof table / sizeof *table; k++) {
    const ist_opt *row = &table[k];
    if (!row->name || !(row->commands & cmd))
      continue;
    const char *names[2] = {row->name, row->short_name};
    for (int m = 0; m < 2; m++)
      if (names[m] && strlen(names[m]) == len &&
          strncmp(names[m], name, len) == 0) {
        *spelled = names[m];
        return row;
      }
  }
  return NULL;
}

/* The edit distance (insertions, deletions, substitutions, swaps of two
 * neighbours) between a[0..n) and b, at most 3 (more is said as 3). */
static size_t distance(const char *a, size_t n, const char *b) {
  size_t m = strlen(b);
  if (n > m + 3 || m > n + 3 || n >= 64 || m >= 64)
    return 3;
  size_t d[65][65];
  for (size_t i = 0; i <= n; i++)
    d[i][0] = i;
  for (size_t j = 0; j <= m; j++)
    d[0][j] = j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best)
        best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[n][m] < 3 ? d[n][m] : 3;
}

/* Whether a word len bytes long that is d edits from a name is a near miss
 * of it: at most two edits, and fewer than half its bytes ("units" is near
 * "unit", "2" not near "0", "12" not near "16"). */
static int near_miss(size_t d, size_t len) { return d <= 2 && 2 * d < len; }

const char *ist_opt_nearest(const char *word, size_t len, const char *words,
                            size_t *n) {
  const char *best = NULL;
  size_t best_d = 3;
  for (const char *w = words; *w;) {
    size_t m = strcspn(w, ",");
    char one[64];
    if (m < sizeof one) {
      memcpy(one, w, m);
      one[m] = '\0';
      size_t d = distance(word, len, one);
      if (near_miss(d, len) && d < best_d) {
        best_d = d;
        best = w;
        *n = m;
      }
    }
    w += m;
    if (*w == ',')
      w++;
  }
  return best;
}

/* The usage error of an unknown option, with a hint: -o on the statistics
 * command points to normalize; else the nearest option of the command (a
 * near miss, or the one the word starts), when there is one. */
static int unknown_option(const ist_opt_syntax *syn, const char *arg,
                          size_t len) {
  char msg[512];
  snprintf(msg, sizeof msg, syn->unknown_fmt, arg);
  if (syn->cmd == IST_CMD_STATS &&
      ((len == 2 && strncmp(arg, "-o", 2) == 0) ||
       (len == 8 && strncmp(arg, "--output", 8) == 0)))
    return ist_opt_usage(syn,
                         "%s: the statistics command writes no images; to "
                         "write normalized images use 'imgstat normalize "
                         "INPUT... -o OUT'",
                         msg);
  const char *best = NULL;
  size_t best_d = 3, prefixed = 0;
  const char *prefix_of = NULL;
  for (size_t k = 0; k < sizeof table / sizeof *table; k++) {
    const ist_opt *row = &table[k];
    if (!row->name || !(row->commands & syn->cmd))
      continue;
    size_t d = distance(arg, len, row->name);
    if (near_miss(d, len) && d < best_d) {
      best_d = d;
      best = row->name;
    }
    if (len >= 3 && strncmp(row->name, arg, len) == 0 &&
        (!prefix_of || strcmp(prefix_of, row->name) != 0)) {
      prefix_of = row->name;
      prefixed++;
    }
  }
  if (!best && prefixed == 1)
    best = prefix_of;
  if (best)
    return ist_opt_usage(syn, "%s (did you mean %s?)", msg, best);
  return ist_opt_usage(syn, "%s", msg);
}

/* ist_opt_parse with list, the values' list of IST_OPT_LIST_MAX numbers. */
static int parse(const ist_opt_syntax *syn, int argc, char **argv, void *ctx,
                 ist_opt_seen *seen, double *list) {
  int after_dashes = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    int status;
    if (syn->operand) {
      if (after_dashes || arg[0] != '-' || arg[1] == '\0') {
        status = syn->operand(ctx, argc, argv, &i, after_dashes);
        if (status >= 0)
          return status;
        continue;
      }
      if (strcmp(arg, "--") == 0) {
        after_dashes = 1;
        continue;
      }
    }
    /* Split "--name=value" and "-jVALUE". */
    size_t name_len = strlen(arg);
    const char *value = NULL;
    if (syn->inline_values && arg[0] == '-') {
      if (arg[1] == '-') {
        const char *eq = strchr(arg, '=');
        if (eq) {
          name_len = (size_t)(eq - arg);
          value = eq + 1;
        }
      } else if (arg[1] != '\0' && arg[2] != '\0') {
        name_len = 2;
        value = arg + 2;
      }
    }
    const char *spelled = NULL;
    const ist_opt *row = find(syn->cmd, arg, name_len, &spelled);
    if (!row)
      return unknown_option(syn, arg, name_len);
    if (!row->takes_value && value)
      return ist_opt_usage(syn, syn->no_value_fmt, (int)name_len, arg);
    if (row->takes_value && !value) {
      if (i + 1 >= argc)
        return ist_opt_usage(syn, syn->needs_value_fmt, arg);
      value = argv[++i];
    }
    ist_opt_value v;
    memset(&v, 0, sizeof v);
    v.text = value;
    v.list = list;
    if (row->takes_value && row->read) {
      status = row->read(row, syn, value, &v);
      if (status >= 0)
        return status;
    }
    if (!seen->spelled[row->id]) {
      seen->spelled[row->id] = spelled;
      seen->order[seen->count++] = row->id;
    }
    status = syn->apply(ctx, row, &v);
    if (status >= 0)
      return status;
  }
  return -1;
}

int ist_opt_parse(const ist_opt_syntax *syn, int argc, char **argv, void *ctx,
                  ist_opt_seen *seen) {
  _Static_assert(IST_OPT_LIST_MAX >= IMGSTAT_MAX_PERCENTILES &&
                     IST_OPT_LIST_MAX >= IMGSTAT_MAX_DEVICES &&
                     IST_OPT_LIST_MAX >= 2,
                 "a value's list holds every option's");
  memset(seen, 0, sizeof *seen);
  double *list = calloc(IST_OPT_LIST_MAX, sizeof *list);
  if (!list) {
    ist_cli_error("out of memory");
    return EXIT_FAILURE;
  }
  int status = parse(syn, argc, argv, ctx, seen, list);
  free(list);
  return status;
}

void ist_opt_warn_no_effect(const ist_opt_syntax *syn, const void *ctx,
                            const ist_opt_seen *seen, int quiet) {
  if (quiet || !syn->no_effect)
    return;
  for (int k = 0; k < seen->count; k++) {
    ist_opt_id id = seen->order[k];
    const char *why = syn->no_effect(ctx, id);
    if (why)
      ist_cli_warning("%s has no effect %s", seen->spelled[id], why);
  }
}

const ist_opt *ist_opt_table(size_t *count) {
  *count = sizeof table / sizeof *table;
  return table;
}

/* Whether dir holds the documentation (its dataset.md). */
static int docs_in(const char *dir) {
  char path[PATH_MAX];
  struct stat st;
  return (size_t)snprintf(path, sizeof path, "%s/dataset.md", dir) <
             sizeof path &&
         stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const char *ist_opt_docdir(void) {
  static char found[PATH_MAX];
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
#ifdef IMGSTAT_DOCDIR_FROM_BIN
  if (slash) {
    /* the program's folder, less one folder per leading "../" */
    const char *rel = IMGSTAT_DOCDIR_FROM_BIN;
    *slash = '\0';
    while (strncmp(rel, "../", 3) == 0 && (slash = strrchr(exe, '/'))) {
      *slash = '\0';
      rel += 3;
    }
    if ((size_t)snprintf(found, sizeof found, "%s/%s", exe, rel) <
            sizeof found &&
        docs_in(found))
      return found;
  }
#else
  (void)slash;
#endif
#ifdef IMGSTAT_SOURCE_DOCDIR
  if (docs_in(IMGSTAT_SOURCE_DOCDIR))
    return IMGSTAT_SOURCE_DOCDIR;
#endif
  return IMGSTAT_DOCDIR;
}

/* fputs, with IST_OPT_DOCS replaced by the documentation folder. */
static void put_help(FILE *out, const char *text) {
  const char *at;
  while ((at = strstr(text, IST_OPT_DOCS)) != NULL) {
    fwrite(text, 1, (size_t)(at - text), out);
    fputs(ist_opt_docdir(), out);
    text = at + strlen(IST_OPT_DOCS);
  }
  fputs(text, out);
}

void ist_opt_print_help(FILE *out, ist_cmd cmd, const ist_opt_help *help) {
  put_help(out, help->head);
  for (int s = 0; s < help->sections; s++) {
    fputc('\n', out);
    put_help(out, help->titles[s]);
    fputc('\n', out);
    for (size_t k = 0; k < sizeof table / sizeof *table; k++)
      if ((table[k].commands & cmd) && table[k].section == s && table[k].help)
        put_help(out, table[k].help);
  }
  put_help(out, help->tail);
}
