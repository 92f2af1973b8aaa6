/*
 * The pairing of inputs with masks and label images (src/engine/masks.h,
 * through the run's src/run/mask_pair.h):
 * 2,000 inputs against a folder of 2,000 masks (and a subfolder) read once
 * per folder, each input paired with the file of its stem (any extension,
 * less --mask-suffix), a stem held by two files and a missing one refused
 * with the messages of the rule, a file argument paired by its name, a
 * mask file for every input, and several threads asking at once. The
 * loading: a mask's bytes and pixels inside, a label image's pixels by
 * label (inside a mask and not), and the refusals with their messages (a
 * mask of another size, a label image of several channels).
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

/* dir/NAME: a PNM of width x height, channels 1 (P5) or 3 (P6), 8-bit,
 * its samples v. */
static void write_pnm(char *path, size_t size, const char *name, int width,
                      int height, int channels, const unsigned char *v) {
  snprintf(path, size, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CU_ASSERT_PTR_NOT_NULL_FATAL(f);
  fprintf(f, "P%d\n%d %d\n255\n", channels == 1 ? 5 : 6, width, height);
  fwrite(v, 1, (size_t)width * height * channels, f);
  CU_ASSERT_EQUAL(fclose(f), 0);
}

static void test_loading(void) {
  static const unsigned char gray[12] = {0};
  static const unsigned char mask[12] = {255, 255, 0, 255, 255, 255,
                                         255, 255, 0, 255, 255, 255};
  static const unsigned char labels[12] = {0, 1, 1, 2, 2, 2, 0, 3, 1, 0, 0, 0};
  static const unsigned char rgb[24] = {1};
  char p_img[700], p_mask[700], p_lab[700], p_small[700], p_rgb[700];
  write_pnm(p_img, sizeof p_img, "img.pgm", 4, 3, 1, gray);
  write_pnm(p_mask, sizeof p_mask, "mask.pgm", 4, 3, 1, mask);
  write_pnm(p_lab, sizeof p_lab, "labels.pgm", 4, 3, 1, labels);
  write_pnm(p_small, sizeof p_small, "small.pgm", 4, 2, 1, mask);
  write_pnm(p_rgb, sizeof p_rgb, "rgb.ppm", 4, 2, 3, rgb);
  imgstat_load_options lo;
  memset(&lo, 0, sizeof lo);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_image img;
  CU_ASSERT_EQUAL_FATAL(imgstat_image_load(p_img, &lo, &img, &err), IMGSTAT_OK);

  /* the mask: 1 inside, its size and its pixels inside */
  uint8_t *m = NULL;
  uint32_t w = 0, h = 0;
  uint64_t inside = 0;
  CU_ASSERT_EQUAL_FATAL(
      ist_mask_load(&lo, p_mask, &img, &m, &w, &h, &inside, &err), IMGSTAT_OK);
  CU_ASSERT(w == 4 && h == 3 && inside == 10);
  for (int i = 0; i < 12; i++)
    CU_ASSERT_EQUAL(m[i], mask[i] != 0);
  CU_ASSERT_EQUAL(ist_mask_size(p_mask, w, h, &img, &err), IMGSTAT_OK);

  /* the labels by label, raster order within each: inside the mask, then
   * all; the pixels of label 0 first */
  static const uint64_t start_in[4] = {5, 6, 9, 10},
                        start_all[4] = {5, 8, 11, 12};
  static const uint32_t pix_in[10] = {0, 6, 9, 10, 11, 1, 3, 4, 5, 7};
  static const uint32_t pix_all[12] = {0, 6, 9, 10, 11, 1, 2, 8, 3, 4, 5, 7};
  for (int all = 0; all < 2; all++) {
    ist_label_pixels l;
    CU_ASSERT_EQUAL_FATAL(
        ist_labels_load(&lo, p_lab, &img, all ? NULL : m, &l, &err),
        IMGSTAT_OK);
    CU_ASSERT_EQUAL_FATAL(l.count, 3);
    const uint64_t *start = all ? start_all : start_in;
    const uint32_t *pix = all ? pix_all : pix_in;
    for (uint32_t k = 0; k < 3; k++) {
      CU_ASSERT_EQUAL(l.label[k], k + 1);
      CU_ASSERT_EQUAL(l.start[k], start[k]);
    }
    CU_ASSERT_EQUAL(l.start[3], start[3]);
    for (uint64_t i = 0; i < start[3]; i++)
      CU_ASSERT_EQUAL(l.pixels[i], pix[i]);
    ist_label_pixels_free(&l);
    CU_ASSERT_PTR_NULL(l.pixels);
  }
  free(m);

  /* refusals, naming the file */
  char want[1024];
  m = NULL;
  CU_ASSERT_EQUAL(ist_mask_load(&lo, p_small, &img, &m, &w, &h, &inside, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_PTR_NULL(m);
  snprintf(want, sizeof want, "mask %s is 4x2, the image is 4x3", p_small);
  CU_ASSERT_STRING_EQUAL(err.message, want);
  CU_ASSERT_EQUAL(ist_mask_size(p_small, 4, 2, &img, &err), IMGSTAT_ERR_ARG);
  CU_ASSERT_STRING_EQUAL(err.message, want);
  ist_label_pixels l;
  CU_ASSERT_EQUAL(ist_labels_load(&lo, p_small, &img, NULL, &l, &err),
                  IMGSTAT_ERR_ARG);
  snprintf(want, sizeof want, "labels %s is 4x2, the image is 4x3", p_small);
  CU_ASSERT_STRING_EQUAL(err.message, want);
  CU_ASSERT_EQUAL(ist_labels_load(&lo, p_rgb, NULL, NULL, &l, &err),
                  IMGSTAT_ERR_ARG);
  snprintf(want, sizeof want,
           "labels %s: several channels, not one channel of 8- or 16-bit "
           "integers",
           p_rgb);
  CU_ASSERT_STRING_EQUAL(err.message, want);
  CU_ASSERT_PTR_NULL(l.pixels);
  imgstat_image_free(&img);
}

static const test_case tests[] = {
    {"mask pairing", NULL},
    {"2,000 inputs, one read of the folder", test_many_one_read},
    {"two files of a stem, none, a subfolder", test_refusals},
    {"one file for every input", test_one_file},
    {"threads pairing at once", test_threads},
    {"loading masks and label images", test_loading},
    {NULL, NULL}};

int main(void) { return test_main_init(tests, make_folder, remove_folder); }
