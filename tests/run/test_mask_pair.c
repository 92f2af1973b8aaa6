/*
 * The pairing of inputs with masks and label images (src/run/mask_pair.h):
 * 2,000 inputs against a folder of 2,000 masks (and a subfolder) read once
 * per folder, each input paired with the file of its stem (any extension,
 * less --mask-suffix), a stem held by two files and a missing one refused
 * with the messages of the rule, a file argument paired by its name, a
 * mask file for every input, and several threads asking at once.
 */
#include "mask_pair.h"
#include "test_util.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NMASKS 2000

static char dir[512];   /* the test's folder */
static char masks[600]; /* dir/masks */

static int touch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int touch(const char *fmt, ...) {
  char p[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p, sizeof p, fmt, ap);
  va_end(ap);
  FILE *f = fopen(p, "wb");
  return f && fclose(f) == 0 ? 0 : -1;
}

/* masks/case_K.png for K < NMASKS (case_7.tif besides: two of stem case_7),
 * masks/sub/deep.npy, masks/.hidden.png (never paired) */
static int make_folder(void) {
  if (!test_tmp_template(dir, sizeof dir, "test_mask_pair") || !mkdtemp(dir))
    return -1;
  snprintf(masks, sizeof masks, "%s/masks", dir);
  char sub[700];
  snprintf(sub, sizeof sub, "%s/sub", masks);
  if (mkdir(masks, 0700) != 0 || mkdir(sub, 0700) != 0)
    return -1;
  for (int k = 0; k < NMASKS; k++)
    if (touch("%s/case_%d.png", masks, k) != 0)
      return -1;
  if (touch("%s/case_7.tif", masks) != 0 ||
      touch("%s/sub/deep.npy", masks) != 0 ||
      touch("%s/.hidden.png", masks) != 0)
    return -1;
  return 0;
}

static void remove_tree(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
        continue;
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", path, e->d_name);
      struct stat st;
      if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
        remove_tree(p);
      else
        unlink(p);
    }
    closedir(d);
  }
  rmdir(path);
}

static int remove_folder(void) {
  remove_tree(dir);
  return 0;
}

/* An input at "ROOT/rel" walked from its folder argument ROOT. */
static imgstat_input walked(char *buf, size_t size, const char *rel) {
  imgstat_input in;
  memset(&in, 0, sizeof in);
  snprintf(buf, size, "/data/images/%s", rel);
  in.kind = IMGSTAT_INPUT_FILE;
  in.path = buf;
  in.root_len = strlen("/data/images/");
  return in;
}

static ist_pairs *make(const char *where, const char *suffix) {
  imgstat_run_options o;
  memset(&o, 0, sizeof o);
  o.mask_suffix = suffix;
  ist_pairs *p = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(ist_pairs_create(&o, where, "mask", &p, &err), IMGSTAT_OK);
  return p;
}

static void test_many_one_read(void) {
  ist_pairs *p = make(masks, "_0000");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char buf[256], want[2048];
  imgstat_error err;
  for (int k = 0; k < NMASKS; k++) {
    if (k == 7)
      continue;
    char rel[64];
    /* every other input named with the suffix */
    snprintf(rel, sizeof rel, k % 2 ? "case_%d_0000.nii" : "case_%d.png", k);
    imgstat_input in = walked(buf, sizeof buf, rel);
    char *got = NULL;
    memset(&err, 0, sizeof err);
    CU_ASSERT_EQUAL(ist_pair_path(p, &in, &got, &err), IMGSTAT_OK);
    snprintf(want, sizeof want, "%s/case_%d.png", masks, k);
    CU_ASSERT_PTR_NOT_NULL(got);
    if (got)
      CU_ASSERT_STRING_EQUAL(got, want);
    free(got);
  }
  /* the whole folder read once for 1,999 inputs */
  CU_ASSERT_EQUAL(ist_pairs_reads(p), 1);
  ist_pairs_destroy(p);
}

static void test_refusals(void) {
  ist_pairs *p = make(masks, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  char buf[256], want[2048];
  imgstat_error err;
  char *got = NULL;
  /* two files of stem case_7 */
  imgstat_input in = walked(buf, sizeof buf, "case_7.png");
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(ist_pair_path(p, &in, &got, &err), IMGSTAT_ERR_IO);
  CU_ASSERT_PTR_NULL(got);
  snprintf(want, sizeof want, "more than one mask %s/case_7.* in %s", masks,
           masks);
  CU_ASSERT_STRING_EQUAL(err.message, want);
  /* none of stem case_2000, none of a stem that is only a prefix, none
   * for a hidden file */
  const char *none[] = {"case_2000.png", "case_1.png.gz", "case_",
                        ".hidden.png"};
  const char *stem[] = {"case_2000", "case_1.png", "case_", ".hidden"};
  for (int k = 0; k < 4; k++) {
    in = walked(buf, sizeof buf, none[k]);
    memset(&err, 0, sizeof err);
    CU_ASSERT_EQUAL(ist_pair_path(p, &in, &got, &err), IMGSTAT_ERR_IO);
    snprintf(want, sizeof want, "no mask %s/%s.* in %s", masks, stem[k], masks);
    CU_ASSERT_STRING_EQUAL(err.message, want);
  }
  /* a subfolder: read once, on its first input; a missing one: no mask */
  in = walked(buf, sizeof buf, "sub/deep.png");
  for (int k = 0; k < 3; k++) {
    memset(&err, 0, sizeof err);
    CU_ASSERT_EQUAL(ist_pair_path(p, &in, &got, &err), IMGSTAT_OK);
    snprintf(want, sizeof want, "%s/sub/deep.npy", masks);
    if (got)
      CU_ASSERT_STRING_EQUAL(got, want);
    free(got);
  }
  in = walked(buf, sizeof buf, "nowhere/deep.png");
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(ist_pair_path(p, &in, &got, &err), IMGSTAT_ERR_IO);
  snprintf(want, sizeof want, "no mask %s/nowhere/deep.* in %s", masks, masks);
  CU_ASSERT_STRING_EQUAL(err.message, want);
  CU_ASSERT_EQUAL(ist_pairs_reads(p), 3);
  /* a file argument (root_len 0): paired by its name */
  imgstat_input arg;
  memset(&arg, 0, sizeof arg);
  arg.kind = IMGSTAT_INPUT_FILE;
  arg.path = "/elsewhere/case_12.jpg";
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(ist_pair_path(p, &arg, &got, &err), IMGSTAT_OK);
  snprintf(want, sizeof want, "%s/case_12.png", masks);
  if (got)
    CU_ASSERT_STRING_EQUAL(got, want);
  free(got);
  ist_pairs_destroy(p);
}

static void test_one_file(void) {
  char file[700];
  snprintf(file, sizeof file, "%s/case_3.png", masks);
  ist_pairs *p = make(file, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(ist_pairs_one_file(p));
  char buf[256];
  imgstat_input in = walked(buf, sizeof buf, "x/y.png");
  char *got = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(ist_pair_path(p, &in, &got, &err), IMGSTAT_OK);
  if (got)
    CU_ASSERT_STRING_EQUAL(got, file);
  free(got);
  CU_ASSERT_EQUAL(ist_pairs_reads(p), 0);
  ist_pairs_destroy(p);
  /* none asked: no index, no pair */
  p = make(NULL, NULL);
  CU_ASSERT_PTR_NULL(p);
  CU_ASSERT_FALSE(ist_pairs_one_file(p));
  got = (char *)1;
  CU_ASSERT_EQUAL(ist_pair_path(NULL, &in, &got, &err), IMGSTAT_OK);
  CU_ASSERT_PTR_NULL(got);
}

/* Four threads pairing every input at once. */
typedef struct job {
  ist_pairs *p;
  int first, wrong;
} job;

static void *pair_all(void *arg) {
  job *j = arg;
  char buf[256], rel[64], want[2048];
  imgstat_error err;
  for (int n = 0; n < NMASKS; n++) {
    int k = (n + j->first) % NMASKS;
    if (k == 7)
      continue;
    snprintf(rel, sizeof rel, "case_%d.bmp", k);
    imgstat_input in = walked(buf, sizeof buf, rel);
    char *got = NULL;
    memset(&err, 0, sizeof err);
    snprintf(want, sizeof want, "%s/case_%d.png", masks, k);
    if (ist_pair_path(j->p, &in, &got, &err) != IMGSTAT_OK || !got ||
        strcmp(got, want) != 0)
      j->wrong++;
    free(got);
  }
  return NULL;
}

static void test_threads(void) {
  ist_pairs *p = make(masks, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  pthread_t t[4];
  job j[4];
  for (int k = 0; k < 4; k++) {
    j[k] = (job){p, k * 500, 0};
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t[k], NULL, pair_all, &j[k]), 0);
  }
  for (int k = 0; k < 4; k++) {
    pthread_join(t[k], NULL);
    CU_ASSERT_EQUAL(j[k].wrong, 0);
  }
  CU_ASSERT_EQUAL(ist_pairs_reads(p), 1);
  ist_pairs_destroy(p);
}

static const test_case tests[] = {
    {"mask pairing", NULL},
    {"2,000 inputs, one read of the folder", test_many_one_read},
    {"two files of a stem, none, a subfolder", test_refusals},
    {"one file for every input", test_one_file},
    {"threads pairing at once", test_threads},
    {NULL, NULL}};

int main(void) { return test_main_init(tests, make_folder, remove_folder); }
