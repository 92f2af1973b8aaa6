/*
 * Our Radiance HDR reader (src/io/hdr.c) against stb_image's, which read HDR
 * before it: on every .hdr file of the corpus, tests/data and samples that
 * stb_image reads, the two give the same floats, bit for bit. stb_image is
 * compiled into this test (HDR only) as the reference. The files it refuses
 * (the old run-length coding) are tests/io/readers_check.py's, against a
 * decoder written there.
 */
#include "imgstat/imgstat.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STBI_ONLY_HDR
#include "stb_ref.h"

static int compared, refused_by_stb;

/* stb_image reads zeros past the end of its input without failing: the
 * callbacks tell when it wanted bytes the file does not have (the old
 * run-length coding, read as flat pixels). */
typedef struct mem_reader {
  const unsigned char *p;
  size_t n, at;
  const char *refill; /* stb's buffer: its first read (a short one is fine) */
  int past_end;
} mem_reader;

static int on_read(void *user, char *data, int size) {
  mem_reader *r = user;
  size_t left = r->n - r->at, k = size > 0 ? (size_t)size : 0;
  if (!r->refill)
    r->refill = data;
  if (k > left) {
    k = left;
    if (k == 0 || data != r->refill)
      r->past_end = 1;
  }
  memcpy(data, r->p + r->at, k);
  r->at += k;
  return (int)k;
}

static void on_skip(void *user, int n) {
  mem_reader *r = user;
  size_t left = r->n - r->at;
  r->at += n > 0 && (size_t)n < left ? (size_t)n : left;
}

static int on_eof(void *user) {
  mem_reader *r = user;
  return r->at >= r->n;
}

/* One file: when stb reads it, ours must give the same floats. */
static void compare_file(const char *path) {
  int w = 0, h = 0, comp = 0;
  size_t size = 0;
  unsigned char *bytes = test_read_file(path, &size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
  static const stbi_io_callbacks cb = {on_read, on_skip, on_eof};
  mem_reader r = {bytes, size, 0, NULL, 0};
  float *ref = stbi_loadf_from_callbacks(&cb, &r, &w, &h, &comp, 0);
  free(bytes);
  if (!ref || r.past_end) {
    stbi_image_free(ref);
    refused_by_stb++;
    return;
  }
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s = imgstat_image_load(path, NULL, &img, &err);
  CU_ASSERT_EQUAL(comp, 3);
  if (s != IMGSTAT_OK || comp != 3) {
    fprintf(stderr, "  %s: %s\n", path, err.message);
    CU_FAIL("stb reads it, imgstat does not");
    stbi_image_free(ref);
    return;
  }
  CU_ASSERT_EQUAL(img.width, (uint32_t)w);
  CU_ASSERT_EQUAL(img.height, (uint32_t)h);
  CU_ASSERT_EQUAL(img.channels, 3);
  CU_ASSERT_EQUAL(img.sample, IMGSTAT_F32);
  size_t n = (size_t)w * (size_t)h, differ = 0;
  if (img.width == (uint32_t)w && img.height == (uint32_t)h)
    for (size_t i = 0; i < n; i++)
      for (int c = 0; c < 3; c++)
        differ += memcmp(&ref[3 * i + (size_t)c],
                         (const float *)img.planes[c] + i, sizeof(float)) != 0;
  if (differ)
    fprintf(stderr, "  %s: %zu samples differ\n", path, differ);
  CU_ASSERT_EQUAL(differ, 0);
  compared++;
  imgstat_image_free(&img);
  stbi_image_free(ref);
}

static void compare_folder(const char *dir) {
  DIR *d = dir ? opendir(dir) : NULL;
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 4 && strcmp(e->d_name + n - 4, ".hdr") == 0) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      compare_file(path);
    }
  }
  closedir(d);
}

static void test_same_as_stb(void) {
  char path[4096];
  const char *corpus = test_corpus_dir();
  if (corpus) {
    snprintf(path, sizeof path, "%s/hdr", corpus);
    compare_folder(path);
  }
  const char *sub[] = {"formats", "seeds", "fuzz"};
  for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", test_data_dir(), sub[i]);
    compare_folder(path);
  }
  snprintf(path, sizeof path, "%s/../../samples", test_data_dir());
  compare_folder(path);
  printf("\n  %d HDR files the same as stb_image's, %d it cannot read\n",
         compared, refused_by_stb);
  /* tests/data's two and the sample at least; the corpus's three more */
  CU_ASSERT(compared >= (corpus ? 6 : 3));
}

static const test_case tests[] = {
    {"hdr", NULL},
    {"every HDR stb_image reads: the same floats", test_same_as_stb},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
