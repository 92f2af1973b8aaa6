/*
 * `imgstat bench`: the command line of the GPU benchmark. The library
 * measures (imgstat_bench_run, programs/bench/bench.cu) and this file prints: a
 * text table per measurement, or one JSON object with --json.
 *
 * `imgstat bench --startup FILE` instead times the steps of one image's
 * whole run inside one process (decode, CUDA start-up, CPU and GPU
 * statistics), to show where the time of `imgstat --backend gpu FILE` goes.
 */
#include "bench_cmd.h"

#include "bench.h"
#include "imgstat/cuda.h"
#include "imgstat/cuda_norm.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "imgstat/record.h"
#include "options.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char bench_usage[] =
    "usage: imgstat bench [--json] [--quick] [--runs N] [--warmup N]\n"
    "                     [--copy-mib N] [--small N] [--large N] [--size "
    "W[xH]]\n"
    "                     [--block N] [--device N] [--no-npp]\n"
    "       imgstat bench --startup FILE [--parallel] [--quick-exit] [--json]\n"
    "                     [--device N]\n"
    "       imgstat bench --rates [--size W[xH]] [--runs N] [--device N]\n"
    "\n"
    "Measures the device reductions on this GPU: the device-to-device copy\n"
    "bandwidth; the reduction ladder (kernels 1..7 and fast) on --small ints\n"
    "(default 2^22, block 128 as the original study), --large ints (2^26)\n"
    "and a u8 plane of the image size; the fused statistics of RGB8, RGBA8,\n"
    "RGB16 and RGB float images (--size, default 8192x8192) against\n"
    "cub::DeviceReduce::Sum over the same bytes; and NPP where it was built\n"
    "in. Every result is checked against the host. N may be written 2^K.\n"
    "--quick uses small sizes and 5 runs (a smoke test, not figures).\n"
    "\n"
    "--startup FILE times decode, CUDA start-up, CPU and GPU statistics of\n"
    "one image in this process (--parallel: decode and start-up on two\n"
    "threads at once, as the program does; --quick-exit: leave with _exit,\n"
    "skipping the CUDA runtime's teardown at exit).\n"
    "\n"
    "--rates measures the figures of auto's cost rule: seconds per GB of\n"
    "samples of statistics, statistics with histograms and normalization\n"
    "(minmax), on one CPU thread and on the GPU from pageable host memory\n"
    "one item at a time, for RGB images of 8, 16 bits and float with noise\n"
    "(--size, default 4000x3000; median of --runs, default 7), and CUDA's\n"
    "start-up and destroy times.\n"
    "\n"
    "Exit status: 0 when everything ran and every check passed, 1 when a\n"
    "check failed or the benchmark could not run (no device, a CUDA build\n"
    "is needed), 2 for a usage error.\n";

/* Its own usage errors: "imgstat bench: MESSAGE" and the usage text. */
static int bench_usage_error(const char *fmt, va_list ap) {
  fprintf(stderr, "imgstat bench: ");
  imgstat_number_vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n%s", bench_usage);
  return 2;
}

/* ---- options (the table's rows of bench: options.c) ------------------------
 */

typedef struct bench_cli {
  imgstat_bench_options opts;
  int json, parallel, quick_exit;
  const char *startup;
  int rates;
} bench_cli;

static int apply(void *ctx, const ist_opt *row, const ist_opt_value *v) {
  bench_cli *b = ctx;
  switch (row->id) {
  case IST_OPT_JSON:
    b->json = 1;
    break;
  case IST_OPT_QUICK:
    b->opts.quick = 1;
    break;
  case IST_OPT_NO_NPP:
    b->opts.skip_npp = 1;
    break;
  case IST_OPT_PARALLEL:
    b->parallel = 1;
    break;
  case IST_OPT_QUICK_EXIT:
    b->quick_exit = 1;
    break;
  case IST_OPT_HELP:
    fputs(bench_usage, stdout);
    return 0;
  case IST_OPT_RUNS:
    b->opts.runs = (int)v->u;
    break;
  case IST_OPT_WARMUP:
    b->opts.warmup = (int)v->u;
    break;
  case IST_OPT_COPY_MIB:
    b->opts.copy_bytes = v->u << 20;
    break;
  case IST_OPT_SMALL:
    b->opts.small_ints = v->u;
    break;
  case IST_OPT_LARGE:
    b->opts.large_ints = v->u;
    break;
  case IST_OPT_SIZE:
    b->opts.image_width = v->width;
    b->opts.image_height = v->height;
    break;
  case IST_OPT_BLOCK:
    b->opts.small_block = (int)v->u;
    break;
  case IST_OPT_DEVICE:
    b->opts.device = (int)v->u;
    break;
  case IST_OPT_STARTUP:
    b->startup = v->text;
    break;
  case IST_OPT_RATES:
    b->rates = 1;
    break;
  default:
    break;
  }
  return -1;
}

/* The options that do nothing in the combination given: --startup times
 * one image's run; the others shape the benchmark. */
static const char *no_effect(const void *ctx, ist_opt_id id) {
  const bench_cli *b = ctx;
  switch (id) {
  case IST_OPT_PARALLEL:
  case IST_OPT_QUICK_EXIT:
    return b->startup ? NULL : "without --startup";
  case IST_OPT_QUICK:
  case IST_OPT_NO_NPP:
  case IST_OPT_RUNS:
  case IST_OPT_WARMUP:
  case IST_OPT_COPY_MIB:
  case IST_OPT_SMALL:
  case IST_OPT_LARGE:
  case IST_OPT_SIZE:
  case IST_OPT_BLOCK:
    return b->startup ? "with --startup" : NULL;
  default:
    return NULL;
  }
}

/* Exact words only: no "--name=value", no operands. */
static const ist_opt_syntax syntax = {
    IST_CMD_BENCH,
    0,
    "unknown option %s",
    "%s needs a value",
    "option '%.*s' takes no value",
    NULL,
    NULL,
    bench_usage_error,
    apply,
    NULL,
    no_effect,
};

/* ---- text output ----------------------------------------------------------
 */

static const char *group_name(imgstat_bench_group g) {
  switch (g) {
  case IMGSTAT_BENCH_COPY:
    return "copy";
  case IMGSTAT_BENCH_LADDER:
    return "ladder";
  case IMGSTAT_BENCH_FUSED:
    return "fused";
  case IMGSTAT_BENCH_CUB:
    return "cub";
  case IMGSTAT_BENCH_NPP:
    return "npp";
  }
  return "other";
}

static void version_text(char *buf, size_t size, int v) {
  snprintf(buf, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* A cell of the table: the value, or blank when it does not apply. */
static void cell(char *buf, size_t size, const char *fmt, double v, int show) {
  if (show)
    imgstat_number_snprintf(buf, size, fmt, v);
  else
    snprintf(buf, size, "%s", "");
}

static void print_row(FILE *out, const imgstat_bench_row *r) {
  char median[24], gbps[24], pct[24], step[24], cum[24], ratio[24], first[24],
      spread[32];
  int ladder = r->group == IMGSTAT_BENCH_LADDER;
  cell(median, sizeof median, "%.4f", r->median_ms, 1);
  imgstat_number_snprintf(spread, sizeof spread, "%.4f-%.4f", r->min_ms,
                          r->max_ms);
  cell(gbps, sizeof gbps, "%.1f", r->gbps, 1);
  cell(pct, sizeof pct, "%.1f", 100.0 * r->copy_fraction, r->copy_fraction > 0);
  cell(step, sizeof step, "%.2f", r->step_speedup, ladder);
  cell(cum, sizeof cum, "%.1f", r->cum_speedup, ladder);
  cell(ratio, sizeof ratio, "%.3f", r->ratio, r->ratio > 0);
  cell(first, sizeof first, "%.3f", r->first_ms, 1);
  fprintf(out, "  %-26s %9s %15s %7s %6s %6s %6s %6s %8s%s ", r->name, median,
          spread, gbps, pct, step, cum, ratio, first,
          r->host_bound ? "*" : " ");
  if (!r->checked)
    fprintf(out, "-\n");
  else if (r->ok)
    fprintf(out, "ok\n");
  else
    fprintf(out, "FAIL: %s\n", r->check);
}

static void print_text(FILE *out, const imgstat_bench_result *res) {
  char rt[16], drv[16];
  version_text(rt, sizeof rt, res->runtime_version);
  version_text(drv, sizeof drv, res->driver_version);
  imgstat_number_fprintf(
      out,
      "imgstat bench %s on %s: %d SMs, L2 %" PRIu64 " MiB, %.0f GiB; "
      "CUDA runtime %s, driver %s\n",
      IMGSTAT_VERSION, res->device, res->sm_count, res->l2_bytes >> 20,
      (double)res->memory_bytes / (1024.0 * 1024.0 * 1024.0), rt, drv);
  if (res->quick)
    fprintf(out, "QUICK RUN: small sizes, few runs; not figures to quote\n");
  imgstat_number_fprintf(
      out, "CUDA start-up (first CUDA call: context creation): %.1f ms\n",
      res->init_ms);
  imgstat_number_fprintf(
      out,
      "method: CUDA events; each row's first run is timed alone (column "
      "'first', kept out\nof the median), then %d untimed warm-up runs, "
      "then the median of %d timed runs\n(min-max beside it). GB/s = "
      "bytes the work must read (copy: read + written) /\nmedian; %% copy "
      "= GB/s / the measured copy bandwidth (%.1f GB/s).\n",
      res->warmup, res->runs, res->copy_gbps);

  const char *table = NULL;
  int any_host_bound = 0;
  for (int i = 0; i < res->row_count; i++) {
    const imgstat_bench_row *r = &res->rows[i];
    if (!table || strcmp(table, r->table) != 0) {
      table = r->table;
      fprintf(out, "\n%s\n", table);
      if (r->note[0])
        fprintf(out, "  (%s)\n", r->note);
      fprintf(out, "  %-26s %9s %15s %7s %6s %6s %6s %6s %8s  %s\n", "",
              "median ms", "min-max ms", "GB/s", "%copy", "step", "cumul",
              "ratio", "first ms", "check");
    }
    print_row(out, r);
    any_host_bound |= r->host_bound;
    /* A note that differs from the table's first row's says what a row
     * measures (what CUB sums, what NPP calls). */
    const imgstat_bench_row *head = r;
    while (head > res->rows && strcmp((head - 1)->table, r->table) == 0)
      head--;
    if (head != r && r->note[0] && strcmp(r->note, head->note) != 0)
      fprintf(out, "  %-26s  (%s)\n", "", r->note);
  }
  if (any_host_bound)
    fprintf(out, "\n* the host could not queue these runs as fast as the "
                 "device ran them: the\n  figures include launch gaps.\n");

  fprintf(out, "\nratio: fused rows, the fused time / the faster CUB row's; "
               "CUB rows, fused / that row;\nNPP, NPP's time / the fused "
               "RGB8 time.\n");
  fprintf(out, "\ngoals:\n");
  int goals = 0;
  for (int i = 0; i < res->row_count; i++) {
    const imgstat_bench_row *r = &res->rows[i];
    if (r->goal_met < 0)
      continue;
    goals++;
    double value =
        r->group == IMGSTAT_BENCH_LADDER ? 100.0 * r->copy_fraction : r->ratio;
    imgstat_number_fprintf(out, "  %s\n    %s -- %s: %.3f%s  %s\n", r->table,
                           r->name, r->goal_text, value,
                           r->group == IMGSTAT_BENCH_LADDER ? "%" : "",
                           r->goal_met ? "met" : "MISSED");
  }
  if (!goals)
    fprintf(out, "  (none measured)\n");
  int checked = 0;
  for (int i = 0; i < res->row_count; i++)
    checked += res->rows[i].checked;
  fprintf(out, "\nchecks against the host: %d ok, %d FAIL\n",
          checked - res->failures, res->failures);
}

/* ---- JSON -----------------------------------------------------------------
 */

static void json_number(FILE *out, double v) {
  char buf[40];
  if (!isfinite(v)) {
    fputs("null", out);
    return;
  }
  imgstat_record_format_double(buf, sizeof buf, v);
  fputs(buf, out);
}

/* "key":value, -- a member of an object that goes on after it. */
static void json_field_string(FILE *out, const char *key, const char *v) {
  fprintf(out, "\"%s\":", key);
  imgstat_record_json_string(out, v);
  fputc(',', out);
}

static void json_field_number(FILE *out, const char *key, double v) {
  fprintf(out, "\"%s\":", key);
  json_number(out, v);
  fputc(',', out);
}

/* The normalize and histogram rows: a 64 MP RGB8 -> RGB8 minmax stretch
 * (one fused read-transform-write pass; bytes read + written against the
 * copy's) and the per-channel 8-bit histograms (bytes read against the
 * fastest read rate this run measured: the fused statistics' best row). */
static void print_norm_text(FILE *out, const imgstat_bench_result *res,
                            const imgstat_gpu_norm_timing *t, uint64_t pixels) {
  double read_gbps = 0;
  for (int i = 0; i < res->row_count; i++)
    if (res->rows[i].gbps > read_gbps)
      read_gbps = res->rows[i].gbps;
  double copy_gbps = t->copy_bytes / (t->copy_ms * 1e6);
  double norm_gbps = t->normalize_bytes / (t->normalize_ms * 1e6);
  double hist_gbps = t->histogram_bytes / (t->histogram_ms * 1e6);
  fprintf(out,
          "\nnormalize and histogram, RGB8, %" PRIu64 " Mi pixels (median of "
          "%d runs, CUDA events, random data)\n",
          pixels >> 20, res->runs);
  imgstat_number_fprintf(
      out, "  copy of the image, device to device  %8.4f ms  %7.0f GB/s\n",
      t->copy_ms, copy_gbps);
  imgstat_number_fprintf(
      out,
      "  normalize minmax RGB8 -> RGB8       %8.4f ms  %7.0f GB/s  "
      "%3.0f%% of copy (goal >= 80%%: %s)  output %s the CPU's\n",
      t->normalize_ms, norm_gbps, 100 * norm_gbps / copy_gbps,
      norm_gbps >= 0.8 * copy_gbps ? "met" : "MISSED",
      t->checked_ok ? "equal to" : "DIFFERENT FROM");
  imgstat_number_fprintf(
      out,
      "  histogram, 3 x 256 bins             %8.4f ms  %7.0f GB/s  "
      "%3.0f%% of the best read rate above, %.0f GB/s (goal >= 50%%: "
      "%s)  counts %s the CPU's\n",
      t->histogram_ms, hist_gbps,
      read_gbps > 0 ? 100 * hist_gbps / read_gbps : 0, read_gbps,
      read_gbps > 0 && hist_gbps >= 0.5 * read_gbps ? "met" : "MISSED",
      t->histogram_ok ? "equal to" : "DIFFERENT FROM");
  imgstat_number_fprintf(
      out, "  scan + percentile search, 65536 bins %7.4f ms\n", t->scan_ms);
}

static void print_json(FILE *out, const imgstat_bench_result *res,
                       const imgstat_gpu_norm_timing *norm,
                       uint64_t norm_pixels) {
  fputc('{', out);
  json_field_string(out, "imgstat_bench", IMGSTAT_VERSION);
  json_field_string(out, "device", res->device);
  fprintf(out,
          "\"sm_count\":%d,\"l2_bytes\":%" PRIu64 ",\"memory_bytes\":%" PRIu64
          ",\"cuda_runtime\":%d,\"cuda_driver\":%d,",
          res->sm_count, res->l2_bytes, res->memory_bytes, res->runtime_version,
          res->driver_version);
  json_field_number(out, "init_ms", res->init_ms);
  json_field_number(out, "copy_gbps", res->copy_gbps);
  fprintf(out,
          "\"runs\":%d,\"warmup\":%d,\"quick\":%s,\"npp\":%s,\"failures\":%d,"
          "\"rows\":[",
          res->runs, res->warmup, res->quick ? "true" : "false",
          res->have_npp ? "true" : "false", res->failures);
  for (int i = 0; i < res->row_count; i++) {
    const imgstat_bench_row *r = &res->rows[i];
    fprintf(out, "%s{", i ? "," : "");
    json_field_string(out, "group", group_name(r->group));
    json_field_string(out, "table", r->table);
    json_field_string(out, "name", r->name);
    json_field_string(out, "note", r->note);
    fprintf(out,
            "\"kernel\":%d,\"block_size\":%d,\"elements\":%" PRIu64
            ",\"bytes\":%" PRIu64 ",\"buffers\":%d,\"runs\":%d,"
            "\"host_bound\":%s,",
            r->kernel, r->block_size, r->elements, r->bytes, r->buffers,
            r->runs, r->host_bound ? "true" : "false");
    json_field_number(out, "first_ms", r->first_ms);
    json_field_number(out, "median_ms", r->median_ms);
    json_field_number(out, "min_ms", r->min_ms);
    json_field_number(out, "max_ms", r->max_ms);
    json_field_number(out, "gbps", r->gbps);
    json_field_number(out, "copy_fraction", r->copy_fraction);
    json_field_number(out, "step_speedup", r->step_speedup);
    json_field_number(out, "cum_speedup", r->cum_speedup);
    json_field_number(out, "ratio", r->ratio);
    if (r->goal_met < 0) {
      fputs("\"goal\":null,\"goal_met\":null,", out);
    } else {
      json_field_number(out, "goal", r->goal);
      fprintf(out, "\"goal_met\":%s,", r->goal_met ? "true" : "false");
    }
    json_field_string(out, "goal_text", r->goal_text);
    fprintf(out, "\"checked\":%s,\"ok\":%s,\"check\":",
            r->checked ? "true" : "false", r->ok ? "true" : "false");
    imgstat_record_json_string(out, r->check);
    fputc('}', out);
  }
  fputc(']', out);
  if (norm) {
    fprintf(out, ",\"normalize\":{\"pixels\":%" PRIu64 ",", norm_pixels);
    json_field_number(out, "copy_ms", norm->copy_ms);
    json_field_number(out, "minmax_ms", norm->normalize_ms);
    fprintf(out, "\"minmax_bytes\":%" PRIu64 ",", norm->normalize_bytes);
    json_field_number(out, "histogram_ms", norm->histogram_ms);
    fprintf(out, "\"histogram_bytes\":%" PRIu64 ",", norm->histogram_bytes);
    json_field_number(out, "scan_ms", norm->scan_ms);
    fprintf(out, "\"output_equal_cpu\":%s,\"histogram_equal_cpu\":%s}",
            norm->checked_ok ? "true" : "false",
            norm->histogram_ok ? "true" : "false");
  }
  fputs("}\n", out);
}

/* ---- --startup FILE ---------------------------------------------------------
 */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct startup_create {
  int device;
  imgstat_gpu *gpu;
  imgstat_status status;
  imgstat_error err;
  double ms;
};

static void *startup_create_thread(void *arg) {
  struct startup_create *c = arg;
  double t0 = now_ms();
  c->status = imgstat_gpu_create(c->device, &c->gpu, &c->err);
  c->ms = now_ms() - t0;
  return NULL;
}

static int run_startup(const char *path, int device, int parallel, int json,
                       int quick_exit) {
  double t_start = now_ms();
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_image img;
  memset(&img, 0, sizeof img);
  struct startup_create create;
  memset(&create, 0, sizeof create);
  create.device = device;
  double decode_ms = 0, both_ms = 0;
  pthread_t thread;
  int threaded = 0;

  double t0 = now_ms();
  if (parallel) {
    if (pthread_create(&thread, NULL, startup_create_thread, &create) != 0) {
      fprintf(stderr, "imgstat bench: cannot start a thread\n");
      return 1;
    }
    threaded = 1;
  }
  imgstat_status st = imgstat_image_load(path, NULL, &img, &err);
  decode_ms = now_ms() - t0;
  if (threaded)
    pthread_join(thread, NULL);
  else if (st == IMGSTAT_OK)
    startup_create_thread(&create);
  both_ms = now_ms() - t0;
  if (st != IMGSTAT_OK) {
    fprintf(stderr, "imgstat: %s: %s\n", path, err.message);
    imgstat_gpu_destroy(create.gpu);
    return 1;
  }
  if (create.status != IMGSTAT_OK) {
    fprintf(stderr, "imgstat bench: %s\n", create.err.message);
    imgstat_image_free(&img);
    return 1;
  }

  imgstat_partial cpu[IMGSTAT_MAX_CHANNELS], gpu1[IMGSTAT_MAX_CHANNELS],
      gpu2[IMGSTAT_MAX_CHANNELS];
  double c0 = now_ms();
  st = imgstat_cpu_stats(&img, 0, cpu, &err);
  double cpu_ms = now_ms() - c0;
  double g0 = now_ms();
  if (st == IMGSTAT_OK)
    st = imgstat_gpu_stats(create.gpu, &img, IMGSTAT_KERNEL_FAST, gpu1, &err);
  double gpu1_ms = now_ms() - g0;
  double g1 = now_ms();
  if (st == IMGSTAT_OK)
    st = imgstat_gpu_stats(create.gpu, &img, IMGSTAT_KERNEL_FAST, gpu2, &err);
  double gpu2_ms = now_ms() - g1;
  double d0 = now_ms();
  imgstat_gpu_destroy(create.gpu);
  double destroy_ms = now_ms() - d0;
  if (st != IMGSTAT_OK) {
    fprintf(stderr, "imgstat: %s: %s\n", path, err.message);
    imgstat_image_free(&img);
    return 1;
  }
  int equal = 1;
  for (int c = 0; c < img.channels; c++)
    equal &= imgstat_partial_same(&gpu1[c], &cpu[c], img.sample) &&
             imgstat_partial_same(&gpu2[c], &cpu[c], img.sample);
  double total_ms = now_ms() - t_start;

  if (json) {
    fputc('{', stdout);
    json_field_string(stdout, "startup", path);
    printf("\"width\":%u,\"height\":%u,\"channels\":%d,\"depth\":%d,"
           "\"parallel\":%s,",
           img.width, img.height, img.channels,
           imgstat_sample_depth(img.sample), parallel ? "true" : "false");
    json_field_number(stdout, "decode_ms", decode_ms);
    json_field_number(stdout, "gpu_create_ms", create.ms);
    json_field_number(stdout, "decode_and_create_ms", both_ms);
    json_field_number(stdout, "cpu_stats_ms", cpu_ms);
    json_field_number(stdout, "gpu_stats_first_ms", gpu1_ms);
    json_field_number(stdout, "gpu_stats_second_ms", gpu2_ms);
    json_field_number(stdout, "gpu_destroy_ms", destroy_ms);
    json_field_number(stdout, "total_ms", total_ms);
    printf("\"gpu_equals_cpu\":%s}\n", equal ? "true" : "false");
  } else {
    printf("start-up of %s: %ux%u %s, %d-bit\n", path, img.width, img.height,
           imgstat_colour_layout_name(img.colour, img.channels),
           imgstat_sample_depth(img.sample));
    imgstat_number_fprintf(
        stdout, "  decode (imgstat_image_load)            %9.1f ms\n",
        decode_ms);
    imgstat_number_fprintf(
        stdout, "  CUDA start-up (imgstat_gpu_create)     %9.1f ms%s\n",
        create.ms, parallel ? "  (on its own thread, during decode)" : "");
    imgstat_number_fprintf(
        stdout, "  decode and start-up together           %9.1f ms\n", both_ms);
    imgstat_number_fprintf(
        stdout, "  CPU statistics (imgstat_cpu_stats)     %9.1f ms\n", cpu_ms);
    imgstat_number_fprintf(
        stdout, "  GPU statistics, first call             %9.1f ms\n", gpu1_ms);
    imgstat_number_fprintf(
        stdout, "  GPU statistics, second call            %9.1f ms\n", gpu2_ms);
    imgstat_number_fprintf(
        stdout, "  imgstat_gpu_destroy                    %9.1f ms\n",
        destroy_ms);
    imgstat_number_fprintf(
        stdout, "  all of the above                       %9.1f ms\n",
        total_ms);
    printf("  GPU partials %s the CPU's\n", equal ? "equal" : "DIFFER FROM");
  }
  imgstat_image_free(&img);
  if (quick_exit) {
    /* Leave without the atexit handlers (the CUDA runtime's teardown of the
     * context): the script compares the whole process with and without. */
    if (fflush(stdout) != 0)
      _exit(1);
    _exit(equal ? 0 : 1);
  }
  return equal ? 0 : 1;
}

/* ---- --rates: the figures of auto's cost rule
 * --------------------------------
 */

typedef struct rate_case {
  imgstat_image img;
  imgstat_norm_options norm;
  imgstat_stats_request req;
} rate_case;

/* One item of a kind on the CPU (one thread) or the GPU (gpu not NULL), as
 * the job layer runs it. */
static imgstat_status rate_item(imgstat_gpu *gpu, int kind,
                                const imgstat_image *img,
                                const imgstat_norm_options *norm,
                                imgstat_error *err) {
  imgstat_partial part[IMGSTAT_MAX_CHANNELS];
  imgstat_status st = IMGSTAT_OK;
  if (kind == IMGSTAT_WORK_NORMALIZE) {
    imgstat_image out;
    memset(&out, 0, sizeof out);
    if (gpu) {
      st = imgstat_gpu_normalize(gpu, img, norm, NULL, NULL, &out, err);
    } else {
      imgstat_norm_measure m;
      imgstat_norm_plan plan;
      st = imgstat_norm_measure_cpu(img, norm, 1, &m, err);
      if (st == IMGSTAT_OK)
        st = imgstat_norm_plan_make(img, norm, &m, &plan, err);
      if (st == IMGSTAT_OK)
        st = imgstat_norm_apply_cpu(img, &plan, 1, &out, err);
    }
    imgstat_image_free(&out);
    return st;
  }
  imgstat_gpu_image *d = NULL;
  if (gpu && kind == IMGSTAT_WORK_HISTOGRAMS) {
    st = imgstat_gpu_image_upload(gpu, img, &d, err);
    if (st == IMGSTAT_OK)
      st = imgstat_gpu_image_stats(gpu, d, IMGSTAT_KERNEL_FAST, part, err);
  } else if (gpu) {
    st = imgstat_gpu_stats(gpu, img, IMGSTAT_KERNEL_FAST, part, err);
  } else {
    st = imgstat_cpu_stats(img, 1, part, err);
  }
  for (int c = 0;
       st == IMGSTAT_OK && kind == IMGSTAT_WORK_HISTOGRAMS && c < img->channels;
       c++) {
    imgstat_histogram h;
    memset(&h, 0, sizeof h);
    double p = 50, v;
    st = d ? imgstat_gpu_image_histogram(gpu, d, c, NULL, &p, 1, &v, &h, err)
           : imgstat_histogram_compute(img, c, NULL, &h, err);
    imgstat_histogram_free(&h);
  }
  if (d)
    imgstat_gpu_image_release(gpu, d);
  return st;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int run_rates(int device, uint32_t width, uint32_t height, int runs) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  double t0 = now_ms();
  imgstat_gpu *gpu = NULL;
  if (imgstat_gpu_create(device, &gpu, &err) != IMGSTAT_OK) {
    fprintf(stderr, "imgstat bench: %s\n", err.message);
    return 1;
  }
  double create_ms = now_ms() - t0;
  static const imgstat_sample types[3] = {IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};
  /* the kinds of host images (not IMGSTAT_WORK_JPEG_DECODE) */
  enum { KINDS = IMGSTAT_WORK_NORMALIZE + 1 };
  static const char *const kinds[KINDS] = {
      "statistics", "statistics + histograms", "normalize (minmax)"};
  double rate[2][KINDS][3];
  uint64_t seed = 88172645463325252u;
  int ok = 1;
  printf("auto's rule: s/GB of samples, %ux%u RGB, median of %d (CPU: one "
         "thread; GPU: %s, from pageable memory)\n",
         width, height, runs, imgstat_gpu_device_name(gpu));
  for (int t = 0; t < 3 && ok; t++) {
    imgstat_image img;
    if (imgstat_image_alloc(&img, width, height, 3, types[t], 0, &err) !=
        IMGSTAT_OK) {
      fprintf(stderr, "imgstat bench: %s\n", err.message);
      ok = 0;
      break;
    }
    uint64_t n = (uint64_t)width * height;
    for (int c = 0; c < 3; c++)
      for (uint64_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        /* a smooth ramp with noise: not zeros, not one value */
        double v = (double)(i % width) / width * 0.8 + (seed % 1000) * 2e-4;
        if (types[t] == IMGSTAT_U8)
          ((uint8_t *)img.planes[c])[i] = (uint8_t)(v * 255);
        else if (types[t] == IMGSTAT_U16)
          ((uint16_t *)img.planes[c])[i] = (uint16_t)(v * 65535);
        else
          ((float *)img.planes[c])[i] = (float)v;
      }
    double gb = (double)n * 3 * (double)types[t] * 1e-9;
    imgstat_norm_options norm;
    memset(&norm, 0, sizeof norm);
    for (int k = 0; k < KINDS && ok; k++)
      for (int g = 0; g < 2 && ok; g++) {
        double ms[1000];
        for (int r = -1; r < runs; r++) { /* one untimed warm-up */
          double a = now_ms();
          if (rate_item(g ? gpu : NULL, k, &img, &norm, &err) != IMGSTAT_OK) {
            fprintf(stderr, "imgstat bench: %s\n", err.message);
            ok = 0;
            break;
          }
          if (r >= 0)
            ms[r] = now_ms() - a;
        }
        if (!ok)
          break;
        qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
        rate[g][k][t] = ms[runs / 2] * 1e-3 / gb;
      }
    imgstat_image_free(&img);
  }
  t0 = now_ms();
  imgstat_gpu_destroy(gpu);
  double destroy_ms = now_ms() - t0;
  if (!ok)
    return 1;
  for (int g = 0; g < 2; g++) {
    printf("%s s/GB (u8, u16, f32):\n", g ? "GPU" : "CPU, one thread");
    for (int k = 0; k < KINDS; k++)
      imgstat_number_fprintf(stdout, "  {%.3f, %.3f, %.3f}, /* %s */\n",
                             rate[g][k][0], rate[g][k][1], rate[g][k][2],
                             kinds[k]);
  }
  imgstat_number_fprintf(
      stdout,
      "CUDA start-up (imgstat_gpu_create) %.1f ms; imgstat_gpu_destroy "
      "%.1f ms\n",
      create_ms, destroy_ms);
  return 0;
}

/* ---- main -------------------------------------------------------------------
 */

int ist_bench_main(int argc, char **argv) {
  bench_cli b;
  memset(&b, 0, sizeof b);
  ist_opt_seen seen;
  int status = ist_opt_parse(&syntax, argc, argv, &b, &seen);
  if (status >= 0)
    return status;
  ist_opt_warn_no_effect(&syntax, &b, &seen, 0);
  imgstat_bench_options opts = b.opts;
  int json = b.json, parallel = b.parallel, quick_exit = b.quick_exit;
  const char *startup = b.startup;

  if (!imgstat_gpu_compiled()) {
    fprintf(stderr, "imgstat bench needs a CUDA build (this imgstat was built "
                    "without CUDA support)\n");
    return 1;
  }
  /* no driver or no device: the reason --backend gpu gives ("no CUDA
   * driver is installed"), not the runtime's first failing call's */
  int ndevices = 0;
  imgstat_error derr;
  memset(&derr, 0, sizeof derr);
  if (imgstat_gpu_device_count(&ndevices, &derr) != IMGSTAT_OK) {
    fprintf(stderr, "imgstat bench: %s\n", derr.message);
    return 1;
  }
  if (startup)
    return run_startup(startup, opts.device, parallel, json, quick_exit);
  if (b.rates)
    return run_rates(opts.device, opts.image_width ? opts.image_width : 4000,
                     opts.image_height ? opts.image_height : 3000,
                     opts.runs > 0 && opts.runs <= 1000 ? opts.runs : 7);

  imgstat_bench_result *res = calloc(1, sizeof *res);
  if (!res) {
    fprintf(stderr, "imgstat bench: out of memory\n");
    return 1;
  }
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st = imgstat_bench_run(&opts, res, &err);
  if (st != IMGSTAT_OK) {
    fprintf(stderr, "imgstat bench: %s\n", err.message);
    /* Rows measured before the failure are still worth showing. */
    if (res->row_count == 0) {
      free(res);
      return 1;
    }
  }
  /* The normalize and histogram rows, on a context of their own. */
  imgstat_gpu_norm_timing norm;
  int have_norm = 0;
  uint32_t side = opts.quick ? 2048 : 8192;
  if (st == IMGSTAT_OK) {
    imgstat_gpu *gpu = NULL;
    st = imgstat_gpu_create(opts.device, &gpu, &err);
    if (st == IMGSTAT_OK)
      st = imgstat_gpu_norm_bench(gpu, side, side, res->runs, &norm, &err);
    imgstat_gpu_destroy(gpu);
    if (st != IMGSTAT_OK)
      fprintf(stderr, "imgstat bench: normalize rows: %s\n", err.message);
    have_norm = st == IMGSTAT_OK;
  }
  if (json)
    print_json(stdout, res, have_norm ? &norm : NULL, (uint64_t)side * side);
  else {
    print_text(stdout, res);
    if (have_norm)
      print_norm_text(stdout, res, &norm, (uint64_t)side * side);
  }
  int failed = st != IMGSTAT_OK || res->failures > 0 ||
               (have_norm && (!norm.checked_ok || !norm.histogram_ok));
  free(res);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "imgstat bench: cannot write the output\n");
    return 1;
  }
  return failed ? 1 : 0;
}
