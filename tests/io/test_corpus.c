/*
 * Loader tests over the shared corpus (../shared/corpus or $IMGSTAT_CORPUS):
 * photos and Radiance files against statistics computed in Python by
 * tests/tools/make_reference.py (tests/data/corpus_reference.tsv). Reports
 * a skip (exit 77) when the corpus is absent.
 */
#include "imgstat/imgstat.h"
#include "load_ref.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *corpus;

static void test_corpus_reference(void) {
  int valid, rejected;
  ref_check_files(test_path(test_data_dir(), "corpus_reference.tsv"), corpus,
                  &valid, &rejected);
  CU_ASSERT_EQUAL(valid, 18);
  CU_ASSERT_EQUAL(rejected, 0);
}

/* The contract's specifics: 16-bit stays 16-bit, HDR is float RGB, the
 * old-style RLE Radiance file is refused with a reason. */
static void test_corpus_specifics(void) {
  char path[4096];
  const char *sixteen[] = {"photos/monkey16.png", "photos/monkey16.pgm"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", corpus, sixteen[i]);
    imgstat_image img;
    imgstat_error err = {0};
    CU_ASSERT_EQUAL(imgstat_image_load(path, NULL, &img, &err), IMGSTAT_OK);
    CU_ASSERT_EQUAL(img.sample, IMGSTAT_U16);
    imgstat_image_free(&img);
  }
  snprintf(path, sizeof path, "%s/hdr/image1.hdr", corpus);
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL(imgstat_image_load(path, NULL, &img, &err), IMGSTAT_OK);
  CU_ASSERT_EQUAL(img.sample, IMGSTAT_F32);
  CU_ASSERT_EQUAL(img.channels, 3);
  CU_ASSERT_STRING_EQUAL(img.format, "HDR");
  imgstat_image_free(&img);
  /* the old (pre-1991) run-length coding: read (its figures are in the
   * reference, from tools/make_reference.py's own decoder) */
  snprintf(path, sizeof path, "%s/hdr/old-rle.hdr", corpus);
  CU_ASSERT_EQUAL(imgstat_image_load(path, NULL, &img, &err), IMGSTAT_OK);
  CU_ASSERT_EQUAL(img.sample, IMGSTAT_F32);
  CU_ASSERT_EQUAL(img.width, 551);
  CU_ASSERT_EQUAL(img.height, 276);
  imgstat_image_free(&img);
}

/* The licence texts beside the images are not images. */
static void test_corpus_text_files_rejected(void) {
  const char *dirs[] = {"photos", "hdr"};
  for (int d = 0; d < 2; d++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", corpus, dirs[d]);
    DIR *dh = opendir(dir);
    CU_ASSERT_FATAL(dh != NULL);
    struct dirent *de;
    while ((de = readdir(dh))) {
      if (!test_ends_with(de->d_name, ".txt"))
        continue;
      char path[8192];
      snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
      imgstat_image img;
      imgstat_error err = {0};
      CU_ASSERT_EQUAL(imgstat_image_load(path, NULL, &img, &err),
                      IMGSTAT_ERR_FORMAT);
      CU_ASSERT_STRING_EQUAL(err.message, "not a recognised image format");
    }
    closedir(dh);
  }
}

static const test_case tests[] = {
    {"corpus", NULL},
    {"photos and HDR match Python", test_corpus_reference},
    {"16-bit, float, old RLE", test_corpus_specifics},
    {"text files rejected", test_corpus_text_files_rejected},
    {NULL, NULL}};

int main(void) {
  corpus = test_corpus_dir();
  if (!corpus)
    return test_skip("corpus not found (set IMGSTAT_CORPUS)");
  return test_main(tests);
}
