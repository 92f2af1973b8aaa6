/*
 * The normalize run (imgstat/run.h, opts->normalize) and the output plan
 * (imgstat/outputs.h): outputs named and written in input order, each
 * against the minmax rule of docs/normalize.md computed here from the
 * samples written byte by byte (per image, and pooled with dataset),
 * failures as items, skip_existing, the item callback's stop, and the plan's
 * refusals (one output for two inputs, an output that is an input, a name of
 * another format, a folder named like a file, options that do not go
 * together) with nothing written.
 */
#include "imgstat/run.h"
#include "test_util.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NIMAGES 4

static char dir[512], out[600];
static char paths[NIMAGES][600];
static unsigned widths[NIMAGES], heights[NIMAGES];
static char junk[600];

/* Image k (in sub/ for k >= 2): (9 + k) x (6 + k) samples
 * 10 k + (7 i) % 50: per image [10 k, 10 k + 49], pooled [0, 79]. */
static unsigned sample(int k, unsigned i) {
  return 10u * (unsigned)k + (i * 7) % 50;
}

static int make_folder(void) {
  if (!test_tmp_template(dir, sizeof dir, "test_run_normalize") ||
      !mkdtemp(dir))
    return -1;
  char sub[600];
  snprintf(sub, sizeof sub, "%s/in/sub", dir);
  snprintf(out, sizeof out, "%s/in", dir);
  if (mkdir(out, 0777) != 0 || mkdir(sub, 0777) != 0)
    return -1;
  for (int k = 0; k < NIMAGES; k++) {
    widths[k] = 9 + (unsigned)k;
    heights[k] = 6 + (unsigned)k;
    snprintf(paths[k], sizeof paths[0], "%s/in/%simg%d.pgm", dir,
             k >= 2 ? "sub/" : "", k);
    FILE *f = fopen(paths[k], "wb");
    if (!f)
      return -1;
    fprintf(f, "P5\n%u %u\n255\n", widths[k], heights[k]);
    for (unsigned i = 0; i < widths[k] * heights[k]; i++)
      fputc((int)sample(k, i), f);
    fclose(f);
  }
  snprintf(junk, sizeof junk, "%s/in/sub/zz.pgm", dir);
  FILE *f = fopen(junk, "wb");
  if (!f)
    return -1;
  fputs("P5\n4 4\n255\nshort", f); /* truncated */
  fclose(f);
  snprintf(out, sizeof out, "%s/out", dir);
  return 0;
}

static void remove_tree(const char *path) {
  char cmd[1300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", path);
}

static int remove_folder(void) {
  remove_tree(dir);
  return 0;
}

/* round_half_even((x - lo) * 255 / (hi - lo)), in integers. */
static unsigned minmax(unsigned x, unsigned lo, unsigned hi) {
  unsigned long n = (unsigned long)(x - lo) * 255, d = hi - lo;
  unsigned long q = n / d, r = n % d;
  if (2 * r > d || (2 * r == d && (q & 1)))
    q++;
  return (unsigned)q;
}

/* Whether the n bytes at b hold the string t. */
static int holds(const unsigned char *b, size_t n, const char *t) {
  size_t len = strlen(t);
  for (size_t i = 0; i + len <= n; i++)
    if (memcmp(b + i, t, len) == 0)
      return 1;
  return 0;
}

/* Checks the .npy output of image k (uint8, shape (h, w)) against minmax
 * over [lo, hi] (per image when lo > hi). */
static void check_output(const char *path, int k, unsigned lo, unsigned hi) {
  size_t size = 0;
  unsigned char *b = test_read_file(path, &size);
  CU_ASSERT_FATAL(b != NULL);
  CU_ASSERT_FATAL(size > 10 && memcmp(b, "\x93NUMPY\x01\x00", 8) == 0);
  size_t hlen = (size_t)b[8] | (size_t)b[9] << 8;
  char shape[64];
  snprintf(shape, sizeof shape, "'shape': (%u, %u)", heights[k], widths[k]);
  CU_ASSERT(holds(b + 10, hlen, shape));
  CU_ASSERT(holds(b + 10, hlen, "|u1"));
  size_t n = (size_t)widths[k] * heights[k];
  CU_ASSERT_FATAL(size == 10 + hlen + n);
  if (lo > hi) {
    lo = 10u * (unsigned)k;
    hi = lo + 49;
  }
  int bad = 0;
  for (unsigned i = 0; i < n; i++)
    bad += b[10 + hlen + i] != minmax(sample(k, i), lo, hi);
  CU_ASSERT(bad == 0);
  free(b);
}

/* What the callbacks saw. */
typedef struct seen {
  int n, passes[4], npasses, decided, stop_after;
  char input[NIMAGES + 2][600], output[NIMAGES + 2][700];
  int ok[NIMAGES + 2], skipped[NIMAGES + 2];
  imgstat_run_progress last;
} seen;

static void on_decided(void *ctx, const imgstat_job_result *res) {
  (void)res;
  ((seen *)ctx)->decided++;
}

static void on_pass(void *ctx, int pass) {
  seen *s = ctx;
  if (s->npasses < 4)
    s->passes[s->npasses++] = pass;
}

static int on_item(void *ctx, const imgstat_run_item *it,
                   const imgstat_run_progress *p) {
  seen *s = ctx;
  if (s->n < NIMAGES + 2) {
    snprintf(s->input[s->n], sizeof s->input[0], "%s", it->input->path);
    snprintf(s->output[s->n], sizeof s->output[0], "%s",
             it->output ? it->output : "");
    s->ok[s->n] = it->result->status == IMGSTAT_OK &&
                  it->write_error->status == IMGSTAT_OK;
    s->skipped[s->n] = it->skipped;
  }
  s->n++;
  s->last = *p;
  return s->stop_after && s->n >= s->stop_after;
}

/* A normalize run's options: the run's, what it does to each image, and
 * where a refused plan's problem goes. */
typedef struct norm_opts {
  imgstat_run_options run;
  imgstat_run_normalize n;
  imgstat_output_problem why;
} norm_opts;

/* The first item's cause and message. */
typedef struct cause_seen {
  int n;
  imgstat_cause cause;
  char message[IMGSTAT_ERROR_MAX];
} cause_seen;

static int on_cause(void *ctx, const imgstat_run_item *it,
                    const imgstat_run_progress *p) {
  cause_seen *cs = ctx;
  (void)p;
  if (cs->n++ == 0) {
    cs->cause = it->result->error.cause;
    snprintf(cs->message, sizeof cs->message, "%s", it->result->error.message);
  }
  return 0;
}

static void options(norm_opts *o, imgstat_run_source *src, const char *input,
                    const char *to) {
  memset(o, 0, sizeof *o);
  src->is_list = 0;
  src->text = input;
  o->run.sources = src;
  o->run.nsources = 1;
  o->run.jobs = 2;
  o->run.engine.backend = IMGSTAT_BACKEND_CPU;
  o->run.engine.load.max_pixels = IMGSTAT_DEFAULT_MAX_PIXELS;
  o->run.engine.load.max_memory = IMGSTAT_DEFAULT_MAX_MEMORY;
  o->run.normalize = &o->n;
  o->n.norm.mode = IMGSTAT_NORM_MINMAX;
  o->n.out = to;
  o->n.format = IMGSTAT_FILE_NPY;
  o->n.problem = &o->why;
}

static imgstat_status run_once(norm_opts *o, seen *s, imgstat_run_report *rep,
                               imgstat_error *e) {
  imgstat_run *run = NULL;
  memset(e, 0, sizeof *e);
  imgstat_status st = imgstat_run_create(&o->run, &run, e);
  if (st != IMGSTAT_OK) {
    CU_ASSERT(run == NULL);
    return st;
  }
  CU_ASSERT(imgstat_run_get_info(run)->inputs > 0);
  imgstat_run_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.ctx = s;
  cb.decided = on_decided;
  cb.pass = on_pass;
  cb.item = on_item;
  st = imgstat_run_execute(run, &cb, rep, e);
  imgstat_run_destroy(run);
  return st;
}

static int exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

static void check_folder_run(int dataset) {
  char in[600], want[700];
  snprintf(in, sizeof in, "%s/in", dir);
  imgstat_run_source src;
  norm_opts o;
  options(&o, &src, in, out);
  o.n.dataset = dataset;
  seen s;
  memset(&s, 0, sizeof s);
  imgstat_run_report rep;
  imgstat_error e;
  CU_ASSERT_FATAL(run_once(&o, &s, &rep, &e) == IMGSTAT_OK);
  CU_ASSERT(s.decided == 1);
  CU_ASSERT(s.npasses == (dataset ? 2 : 1));
  CU_ASSERT(s.passes[s.npasses - 1] == 2);
  CU_ASSERT_FATAL(s.n == NIMAGES + 1);
  CU_ASSERT(rep.done == NIMAGES + 1 && rep.failed == 1 && !rep.cancelled);
  CU_ASSERT(s.last.done == NIMAGES + 1 && s.last.total == NIMAGES + 1);
  /* in the byte order of the paths: img0, img1, sub/img2, sub/img3, zz */
  for (int k = 0; k < NIMAGES; k++) {
    CU_ASSERT(strcmp(s.input[k], paths[k]) == 0);
    CU_ASSERT(s.ok[k] && !s.skipped[k]);
    snprintf(want, sizeof want, "%s/%simg%d.npy", out, k >= 2 ? "sub/" : "", k);
    CU_ASSERT(strcmp(s.output[k], want) == 0);
    check_output(want, k, dataset ? 0 : 1, dataset ? 79 : 0);
  }
  CU_ASSERT(strcmp(s.input[NIMAGES], junk) == 0 && !s.ok[NIMAGES]);
  snprintf(want, sizeof want, "%s/sub/zz.npy", out);
  CU_ASSERT(!exists(want));
  remove_tree(out);
}

static void test_per_image(void) { check_folder_run(0); }
static void test_dataset(void) { check_folder_run(1); }

static void test_skip_and_stop(void) {
  char in[600], first[700];
  snprintf(in, sizeof in, "%s/in", dir);
  snprintf(first, sizeof first, "%s/img0.npy", out);
  imgstat_run_source src;
  norm_opts o;
  options(&o, &src, in, out);
  o.run.jobs = 1;
  seen s;
  memset(&s, 0, sizeof s);
  s.stop_after = 1;
  imgstat_run_report rep;
  imgstat_error e;
  CU_ASSERT(run_once(&o, &s, &rep, &e) == IMGSTAT_OK);
  CU_ASSERT(rep.cancelled && s.n >= 1 && s.n < NIMAGES + 1 && exists(first));
  memset(&s, 0, sizeof s);
  o.n.skip_existing = 1;
  CU_ASSERT(run_once(&o, &s, &rep, &e) == IMGSTAT_OK);
  CU_ASSERT(s.n == NIMAGES + 1 && rep.skipped == 1 && s.skipped[0]);
  CU_ASSERT(!s.skipped[1] && s.ok[1]);
  remove_tree(out);
}

/* The plan refused: cause, problem, and nothing made. */
/* The plan refused (by the output plan, with its problem, or by the
 * options, with none), and nothing made. */
static void refused(norm_opts *o, int by_plan,
                    imgstat_output_problem_kind kind) {
  seen s;
  memset(&s, 0, sizeof s);
  imgstat_run_report rep;
  imgstat_error e;
  CU_ASSERT(run_once(o, &s, &rep, &e) == IMGSTAT_ERR_ARG);
  CU_ASSERT((o->why.kind != IMGSTAT_OUTPUT_FINE) == by_plan);
  CU_ASSERT(o->why.kind == kind);
  CU_ASSERT(e.message[0] != '\0');
  if (kind == IMGSTAT_OUTPUT_COLLISION) {
    CU_ASSERT(o->why.first && strstr(o->why.first, "/twin.p"));
    CU_ASSERT(o->why.second && strstr(o->why.second, "/twin.p"));
    CU_ASSERT(o->why.output && strstr(o->why.output, "/twin"));
  }
  if (kind == IMGSTAT_OUTPUT_UNKNOWN_FORMAT)
    CU_ASSERT(strcmp(o->why.ext, "JPEG") == 0);
  imgstat_output_problem_clear(&o->why);
  CU_ASSERT(s.n == 0 && !exists(out));
}

static void test_refused(void) {
  char in[600], name[700], twin[2][700];
  snprintf(in, sizeof in, "%s/in", dir);
  imgstat_run_source src;
  norm_opts o;
  /* an output that is the input */
  options(&o, &src, paths[0], paths[0]);
  o.n.format = IMGSTAT_FILE_PNG;
  refused(&o, 1, IMGSTAT_OUTPUT_IS_INPUT);
  /* a name of a format not written */
  snprintf(name, sizeof name, "%s/x.jpg", out);
  options(&o, &src, paths[0], name);
  o.n.format = 0;
  refused(&o, 1, IMGSTAT_OUTPUT_UNKNOWN_FORMAT);
  /* a folder named like a file */
  snprintf(name, sizeof name, "%s/x.png", out);
  options(&o, &src, in, name);
  refused(&o, 1, IMGSTAT_OUTPUT_FOLDER_LIKE_FILE);
  /* two inputs, one output */
  for (int k = 0; k < 2; k++) {
    snprintf(twin[k], sizeof twin[0], "%s/in/twin.p%cm", dir, k ? 'g' : 'p');
    FILE *f = fopen(twin[k], "wb");
    CU_ASSERT_FATAL(f != NULL);
    fputs(k ? "P5\n1 1\n255\n\x01" : "P6\n1 1\n255\n\x01\x02\x03", f);
    fclose(f);
  }
  options(&o, &src, in, out);
  o.n.format = 0;
  refused(&o, 1, IMGSTAT_OUTPUT_COLLISION);
  unlink(twin[0]);
  unlink(twin[1]);
  /* options that do not go together */
  options(&o, &src, in, out);
  o.n.norm.mode = IMGSTAT_NORM_ZSCORE;
  o.n.format = IMGSTAT_FILE_PNG;
  refused(&o, 0, IMGSTAT_OUTPUT_FINE);
  options(&o, &src, in, out);
  o.n.norm.mode = IMGSTAT_NORM_RANGE;
  o.n.dataset = 1;
  refused(&o, 0, IMGSTAT_OUTPUT_FINE);
}

/* The settings' causes: a range that is not LOW < HIGH fails each input
 * with IMGSTAT_CAUSE_RANGE, a float32 image refused by PNG says
 * IMGSTAT_CAUSE_DEPTH, and neither message names a program's option. */
static void test_setting_causes(void) {
  imgstat_run_source src;
  norm_opts o;
  char one[700];
  snprintf(one, sizeof one, "%s/one.npy", dir);
  options(&o, &src, paths[0], one);
  o.n.norm.mode = IMGSTAT_NORM_RANGE;
  o.n.norm.range_low = 5;
  o.n.norm.range_high = 1;
  imgstat_run *run = NULL;
  imgstat_error e;
  memset(&e, 0, sizeof e);
  CU_ASSERT_FATAL(imgstat_run_create(&o.run, &run, &e) == IMGSTAT_OK);
  cause_seen cs;
  memset(&cs, 0, sizeof cs);
  imgstat_run_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.ctx = &cs;
  cb.item = on_cause;
  imgstat_run_report rep;
  CU_ASSERT(imgstat_run_execute(run, &cb, &rep, &e) == IMGSTAT_OK);
  imgstat_run_destroy(run);
  CU_ASSERT(cs.n == 1 && cs.cause == IMGSTAT_CAUSE_RANGE);
  CU_ASSERT(strncmp(cs.message, "range ", 6) == 0);
  CU_ASSERT(!exists(one));
  CU_ASSERT(strcmp(imgstat_cause_name(IMGSTAT_CAUSE_RANGE), "range") == 0);
  CU_ASSERT(strcmp(imgstat_cause_name(IMGSTAT_CAUSE_PAGE), "page") == 0);

  imgstat_image img;
  CU_ASSERT_FATAL(imgstat_image_alloc(&img, 2, 2, 1, IMGSTAT_F32, 0, &e) ==
                  IMGSTAT_OK);
  memset(img.planes[0], 0, 16);
  imgstat_write_options wo;
  memset(&wo, 0, sizeof wo);
  wo.format = IMGSTAT_FILE_PNG;
  snprintf(one, sizeof one, "%s/one.png", dir);
  memset(&e, 0, sizeof e);
  CU_ASSERT(imgstat_image_write(one, &img, &wo, &e) == IMGSTAT_ERR_ARG);
  CU_ASSERT(e.cause == IMGSTAT_CAUSE_DEPTH);
  CU_ASSERT(strstr(e.message, "--") == NULL);
  CU_ASSERT(!exists(one));
  imgstat_image_free(&img);
}

static void test_plan(void) {
  imgstat_output_plan p = {"o", 1, IMGSTAT_FILE_AUTO};
  CU_ASSERT(imgstat_output_plan_folder("o.png", 1, 0) == 1);
  CU_ASSERT(imgstat_output_plan_folder("o.png", 0, 0) == 0);
  CU_ASSERT(imgstat_output_plan_folder("o", 0, 0) == 1);
  CU_ASSERT(imgstat_output_plan_folder("o", 0, IMGSTAT_FILE_NPY) == 0);
  CU_ASSERT(imgstat_output_plan_folder("o.d/", 0, 0) == 1);
  CU_ASSERT(imgstat_output_plan_folder(dir, 0, IMGSTAT_FILE_NPY) == 1);
  CU_ASSERT(imgstat_output_plan_format(&p, IMGSTAT_F32) == IMGSTAT_FILE_NPY);
  CU_ASSERT(imgstat_output_plan_format(&p, IMGSTAT_U16) == IMGSTAT_FILE_PNG);
  p.format = IMGSTAT_FILE_PFM;
  CU_ASSERT(imgstat_output_plan_format(&p, IMGSTAT_U8) == IMGSTAT_FILE_PFM);
  CU_ASSERT(strcmp(imgstat_file_format_ext(IMGSTAT_FILE_NPY), ".npy") == 0);
  CU_ASSERT(strcmp(imgstat_file_format_ext(IMGSTAT_FILE_AUTO), "") == 0);
}

static const test_case tests[] = {
    {"normalize run", NULL},
    {"a folder, each image's own minmax, in order", test_per_image},
    {"a folder, one pooled minmax (dataset)", test_dataset},
    {"the item callback stops it; skip_existing", test_skip_and_stop},
    {"refused before any work, nothing written", test_refused},
    {"the output plan: folder, format, extension", test_plan},
    {"a setting's failure carries its cause", test_setting_causes},
    {NULL, NULL}};

int main(void) { return test_main_init(tests, make_folder, remove_folder); }
