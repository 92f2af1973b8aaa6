/*
 * The run over many inputs (imgstat_run.h): order, figures, failures,
 * progress figures, workers, the dataset record, cancellation, the whole
 * list, the worker hook and the arguments refused. The inputs are binary
 * PGM files written here byte by byte, and every figure is checked against
 * sums taken from those bytes.
 */
#include "imgstat/run.h"
#include "test_util.h"

#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NIMAGES 7

static char dir[512];
static char paths[NIMAGES][600];
static uint64_t sums[NIMAGES], counts[NIMAGES];
static char missing[600], junk[600];

/* Image k: (5 + k) x (3 + 2k) samples (k * 37 + i * 11) % 256. */
static int make_folder(void) {
  if (!test_tmp_template(dir, sizeof dir, "test_run") || !mkdtemp(dir))
    return -1;
  for (int k = 0; k < NIMAGES; k++) {
    unsigned w = 5 + (unsigned)k, h = 3 + 2 * (unsigned)k;
    /* names whose byte order is not the order made: 6, 5, ... */
    snprintf(paths[NIMAGES - 1 - k], sizeof paths[0], "%s/img%c.pgm", dir,
             'a' + (NIMAGES - 1 - k));
    const char *path = paths[NIMAGES - 1 - k];
    FILE *f = fopen(path, "wb");
    if (!f)
      return -1;
    fprintf(f, "P5\n%u %u\n255\n", w, h);
    uint64_t s = 0;
    for (unsigned i = 0; i < w * h; i++) {
      unsigned v = ((unsigned)k * 37 + i * 11) % 256;
      fputc((int)v, f);
      s += v;
    }
    fclose(f);
    sums[NIMAGES - 1 - k] = s;
    counts[NIMAGES - 1 - k] = (uint64_t)w * h;
  }
  snprintf(junk, sizeof junk, "%s/zz.pgm", dir);
  FILE *f = fopen(junk, "wb");
  if (!f)
    return -1;
  fputs("P5\n4 4\n255\nshort", f); /* truncated */
  fclose(f);
  snprintf(missing, sizeof missing, "%s/none/missing.png", dir);
  return 0;
}

static int remove_folder(void) {
  for (int k = 0; k < NIMAGES; k++)
    unlink(paths[k]);
  unlink(junk);
  rmdir(dir);
  return 0;
}

/* What the callbacks saw. */
typedef struct seen {
  int n;
  char path[NIMAGES + 4][600];
  imgstat_status status[NIMAGES + 4];
  uint64_t sum[NIMAGES + 4], count[NIMAGES + 4];
  imgstat_run_progress last;
  int stop_after; /* the item callback cancels after this many (0: never) */
  int extras, freed;
} seen;

static int on_item(void *ctx, const imgstat_run_item *it,
                   const imgstat_run_progress *p) {
  seen *s = ctx;
  if (s->n < NIMAGES + 4) {
    snprintf(s->path[s->n], sizeof s->path[0], "%s", it->input->path);
    s->status[s->n] = it->result->status;
    s->sum[s->n] = it->result->status == IMGSTAT_OK ? it->result->partial[0].sum
                                                    : UINT64_MAX;
    s->count[s->n] = it->result->partial[0].count;
    if (it->extra)
      s->extras += *(int *)it->extra == 42;
  }
  s->n++;
  s->last = *p;
  return s->stop_after && s->n >= s->stop_after;
}

static void *on_image(void *ctx, const imgstat_input *in,
                      const imgstat_image *img, const imgstat_job_result *res) {
  (void)ctx;
  (void)in;
  (void)img;
  (void)res;
  int *v = malloc(sizeof *v);
  if (v)
    *v = 42;
  return v;
}

static void on_free(void *ctx, void *extra) {
  ((seen *)ctx)->freed++;
  free(extra);
}

static void options(imgstat_run_options *o, imgstat_run_source *src, int n) {
  memset(o, 0, sizeof *o);
  o->sources = src;
  o->nsources = n;
  o->jobs = -1;
  o->engine.backend = IMGSTAT_BACKEND_CPU;
  o->engine.load.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  o->engine.load.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
}

static imgstat_status run_once(imgstat_run_options *o, seen *s,
                               imgstat_run_report *rep, imgstat_run **keep) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_run *run = NULL;
  imgstat_status st = imgstat_run_create(o, &run, &err);
  if (st != IMGSTAT_OK)
    return st;
  imgstat_run_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.ctx = s;
  cb.item = on_item;
  cb.image = on_image;
  cb.free_extra = on_free;
  st = imgstat_run_execute(run, &cb, rep, &err);
  if (keep)
    *keep = run;
  else
    imgstat_run_destroy(run);
  return st;
}

/* A folder, then a missing file: every image in byte order with its exact
 * sum, the truncated one and the missing one failed in their places. */
static void check_folder_run(int jobs) {
  imgstat_run_source src[2] = {{0, dir}, {0, missing}};
  imgstat_run_options o;
  options(&o, src, 2);
  o.jobs = jobs;
  seen *s = calloc(1, sizeof *s);
  imgstat_run_report rep;
  CU_ASSERT_FATAL(run_once(&o, s, &rep, NULL) == IMGSTAT_OK);
  CU_ASSERT(!rep.cancelled && !rep.set_up_failed);
  CU_ASSERT_FATAL(s->n == NIMAGES + 2);
  for (int k = 0; k < NIMAGES; k++) {
    CU_ASSERT_STRING_EQUAL(s->path[k], paths[k]);
    CU_ASSERT(s->status[k] == IMGSTAT_OK);
    CU_ASSERT(s->sum[k] == sums[k]);
    CU_ASSERT(s->count[k] == counts[k]);
  }
  CU_ASSERT_STRING_EQUAL(s->path[NIMAGES], junk);
  CU_ASSERT(s->status[NIMAGES] == IMGSTAT_ERR_FORMAT);
  CU_ASSERT_STRING_EQUAL(s->path[NIMAGES + 1], missing);
  CU_ASSERT(s->status[NIMAGES + 1] == IMGSTAT_ERR_IO);
  /* the worker hook's value came back with each decoded image, and was
   * freed once each */
  CU_ASSERT(s->extras == NIMAGES);
  CU_ASSERT(s->freed == NIMAGES);
  CU_ASSERT(s->last.pass == 2);
  CU_ASSERT(s->last.done == NIMAGES + 2);
  CU_ASSERT(s->last.failed == 2);
  CU_ASSERT(s->last.total == NIMAGES + 2 && s->last.total_known);
  free(s);
}

static void test_order_one_worker(void) { check_folder_run(1); }
static void test_order_workers(void) { check_folder_run(4); }
static void test_order_default(void) { check_folder_run(-1); }

/* The dataset record pools every sample: its exact sum and count are those
 * of all the bytes; the failures are counted. */
static void test_dataset(void) {
  imgstat_run_source src[1] = {{0, dir}};
  imgstat_run_options o;
  options(&o, src, 1);
  o.jobs = 3;
  o.dataset = 1;
  seen *s = calloc(1, sizeof *s);
  imgstat_run_report rep;
  imgstat_run *run = NULL;
  CU_ASSERT_FATAL(run_once(&o, s, &rep, &run) == IMGSTAT_OK);
  CU_ASSERT(rep.dataset_ok);
  imgstat_dataset_result r;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_FATAL(imgstat_run_dataset_finish(run, 0, &r, &err) == IMGSTAT_OK);
  uint64_t sum = 0, count = 0;
  for (int k = 0; k < NIMAGES; k++) {
    sum += sums[k];
    count += counts[k];
  }
  char text[32];
  snprintf(text, sizeof text, "%" PRIu64, sum);
  CU_ASSERT(r.channels == 1);
  CU_ASSERT(r.pooled == NIMAGES);
  CU_ASSERT(r.failed == 1);
  CU_ASSERT(r.ch[0].count == count);
  CU_ASSERT(r.ch[0].sums_exact);
  CU_ASSERT_STRING_EQUAL(r.ch[0].sum_text, text);
  CU_ASSERT_DOUBLE_EQUAL(r.ch[0].mean, (double)sum / (double)count, 1e-12);
  CU_ASSERT(r.sample == 0 && r.sample_of == 0); /* every input */
  uint64_t inputs = r.images + r.failed;
  imgstat_dataset_result_free(&r);
  imgstat_run_destroy(run);
  /* a sample of 2: two inputs read, the record says of how many */
  memset(s, 0, sizeof *s);
  o.sample = 2;
  o.seed = 5;
  CU_ASSERT_FATAL(run_once(&o, s, &rep, &run) == IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_run_dataset_finish(run, 0, &r, &err) == IMGSTAT_OK);
  CU_ASSERT(r.images + r.failed == 2);
  CU_ASSERT(r.sample == 2 && r.sample_of == inputs && r.sample_seed == 5);
  imgstat_dataset_result_free(&r);
  imgstat_run_destroy(run);
  free(s);
}

/* A run without a dataset has none to finish. */
static void test_no_dataset(void) {
  imgstat_run_source src[1] = {{0, paths[0]}};
  imgstat_run_options o;
  options(&o, src, 1);
  seen *s = calloc(1, sizeof *s);
  imgstat_run_report rep;
  imgstat_run *run = NULL;
  CU_ASSERT_FATAL(run_once(&o, s, &rep, &run) == IMGSTAT_OK);
  CU_ASSERT(s->n == 1 && s->sum[0] == sums[0]);
  CU_ASSERT(!rep.dataset_ok);
  CU_ASSERT(imgstat_run_input_list(run) == NULL); /* walked lazily */
  imgstat_dataset_result r;
  imgstat_error err;
  CU_ASSERT(imgstat_run_dataset_finish(run, 0, &r, &err) == IMGSTAT_ERR_ARG);
  /* once per run */
  CU_ASSERT(imgstat_run_execute(run, NULL, &rep, &err) == IMGSTAT_ERR_ARG);
  imgstat_run_destroy(run);
  free(s);
}

/* An item callback that returns nonzero stops the run: with one worker (on
 * the caller's thread) no input is read after it. */
static void test_stop(void) {
  imgstat_run_source src[1] = {{0, dir}};
  imgstat_run_options o;
  options(&o, src, 1);
  o.jobs = 1;
  seen *s = calloc(1, sizeof *s);
  s->stop_after = 3;
  imgstat_run_report rep;
  CU_ASSERT(run_once(&o, s, &rep, NULL) == IMGSTAT_OK);
  CU_ASSERT(rep.cancelled);
  CU_ASSERT(s->n == 3);
  CU_ASSERT(s->freed == s->extras); /* nothing leaked past the stop */
  free(s);
}

/* A cancel flag set before the run: nothing is delivered. */
static void test_cancel_flag(void) {
  static volatile sig_atomic_t flag = 1;
  imgstat_run_source src[1] = {{0, dir}};
  imgstat_run_options o;
  options(&o, src, 1);
  o.jobs = 2;
  o.cancel = &flag;
  seen *s = calloc(1, sizeof *s);
  imgstat_run_report rep;
  CU_ASSERT(run_once(&o, s, &rep, NULL) == IMGSTAT_OK);
  CU_ASSERT(rep.cancelled);
  CU_ASSERT(s->n < NIMAGES + 1);
  free(s);
}

/* whole_list: the list is walked before the run, in the run's order; the
 * layout says several inputs. */
static void test_whole_list(void) {
  imgstat_run_source src[2] = {{0, dir}, {0, missing}};
  imgstat_run_options o;
  options(&o, src, 2);
  o.whole_list = 1;
  imgstat_run *run = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_FATAL(imgstat_run_create(&o, &run, &err) == IMGSTAT_OK);
  const imgstat_input_list *list = imgstat_run_input_list(run);
  CU_ASSERT_FATAL(list != NULL);
  CU_ASSERT(list->count == NIMAGES + 2);
  for (int k = 0; k < NIMAGES; k++)
    CU_ASSERT_STRING_EQUAL(list->items[k]->path, paths[k]);
  const imgstat_run_info *info = imgstat_run_get_info(run);
  CU_ASSERT(info->several && info->workers >= 1 && info->cores >= 1);
  CU_ASSERT(!info->range_pass);
  imgstat_run_destroy(run);
}

/* The default workers are one per core with --jpeg-decoder gpu too: they
 * read and check the JPEGs and hand them to the device stage without
 * waiting for the decode (four per core took the cores nvJPEG's start-up
 * needs: docs/benchmarks.md). Without a GPU the run is still made (the
 * start-up fails later, on its thread). */
static void test_workers_jpeg_gpu(void) {
  imgstat_run_source src[2] = {{0, dir}, {0, missing}};
  imgstat_run_options o;
  options(&o, src, 2);
  o.engine.backend = IMGSTAT_BACKEND_AUTO;
  o.engine.jpeg_decoder = IMGSTAT_JPEG_DECODER_GPU;
  imgstat_run *run = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_FATAL(imgstat_run_create(&o, &run, &err) == IMGSTAT_OK);
  const imgstat_run_info *info = imgstat_run_get_info(run);
  CU_ASSERT(info->several);
  CU_ASSERT(info->cores >= 1);
  CU_ASSERT_EQUAL(info->workers, info->cores);
  imgstat_run_destroy(run);
}

static void test_arguments(void) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_run *run = (imgstat_run *)&err;
  CU_ASSERT(imgstat_run_create(NULL, &run, &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(run == NULL);
  imgstat_run_options o;
  options(&o, NULL, 0);
  CU_ASSERT(imgstat_run_create(&o, NULL, &err) == IMGSTAT_ERR_ARG);
  /* standard input twice */
  imgstat_run_source src[2] = {{0, "-"}, {1, "-"}};
  options(&o, src, 2);
  CU_ASSERT(imgstat_run_create(&o, &run, &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(run == NULL);
  CU_ASSERT(err.message[0] != '\0');
  /* a sample of no dataset */
  imgstat_run_source one[1] = {{0, paths[0]}};
  options(&o, one, 1);
  o.sample = 3;
  CU_ASSERT(imgstat_run_create(&o, &run, &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(run == NULL && err.cause == IMGSTAT_CAUSE_CONFLICT);
  imgstat_run_destroy(NULL);
}

static const test_case tests[] = {
    {"run", NULL},
    {"a folder and a missing file, one worker", test_order_one_worker},
    {"a folder and a missing file, four workers", test_order_workers},
    {"a folder and a missing file, the default workers", test_order_default},
    {"--jpeg-decoder gpu: one worker per core", test_workers_jpeg_gpu},
    {"the dataset record pools every sample", test_dataset},
    {"no dataset, lazily walked, once per run", test_no_dataset},
    {"the item callback stops the run", test_stop},
    {"the cancel flag stops the run", test_cancel_flag},
    {"the whole list walked first", test_whole_list},
    {"arguments refused", test_arguments},
    {NULL, NULL}};

int main(void) { return test_main_init(tests, make_folder, remove_folder); }
