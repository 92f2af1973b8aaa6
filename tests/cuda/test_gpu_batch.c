/*
 * The batched statistics of nvJPEG's decoded planes (imgstat_gpu_jpeg_stats:
 * one launch for the planes of a whole batch) against the one-image kernel
 * (imgstat_gpu_image_stats with the fast kernel on the same device planes):
 * the same bits, image by image, and both equal to the CPU's partials of the
 * same pixels (integer samples: exact). The batched histograms
 * (imgstat_gpu_jpeg_reduce) likewise: every count equal to the per-image
 * histogram kernel's (imgstat_gpu_image_histogram) and the CPU's
 * (imgstat_histogram_compute). Two decoders sharing nvJPEG's handles
 * (imgstat_gpu_jpeg_create_sibling), each on its own thread, decode and
 * reduce the same files alike. Images of awkward sizes (1 x 1,
 * 7 x 3, 4097 x 3, a plane off the 16-byte grid, 12 MP), patterns (constant
 * 0 and 255, ties at the ends) and random ones in one batch, gray and RGB;
 * then JPEGs of the corpus decoded by nvJPEG, whose planes the batch and the
 * one-image kernel reduce alike. Needs a CUDA device and libnvjpeg: without
 * them it is skipped (77).
 */
#include "gpu_jpeg.h"
#include "imgstat/cuda.h"
#include "imgstat/cuda_norm.h"
#include "imgstat/norm.h"
#include "io.h"
#include "test_gpu_util.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static imgstat_gpu *g_gpu;
static int g_quick; /* IMGSTAT_TEST_QUICK: no 12 MP plane (sanitizers) */
static imgstat_gpu_jpeg *g_dec;
static uint64_t g_rng = 0x9e3779b97f4a7c15u;

static int same_partials(const imgstat_partial *a, const imgstat_partial *b,
                         int channels) {
  return memcmp(a, b, (size_t)channels * sizeof *a) == 0;
}

/* The one-image kernel's partials of device planes. */
static imgstat_status one_image(const imgstat_gpu_jpeg_item *it,
                                imgstat_partial *out) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_gpu_image *d = NULL;
  imgstat_status st = imgstat_gpu_image_wrap(
      g_gpu, it->width, it->height, it->channels, IMGSTAT_U8,
      (void *const *)it->planes, 0, &d, &err);
  if (st == IMGSTAT_OK)
    st = imgstat_gpu_image_stats(g_gpu, d, 0, out, &err);
  imgstat_gpu_image_release(g_gpu, d);
  if (st != IMGSTAT_OK)
    printf("\n  one-image kernel: %s\n", err.message);
  return st;
}

/* The batch's counts of item it (counts: its IMGSTAT_INLINE_CHANNELS x 256)
 * against the per-image histogram kernel's on the same device planes and
 * the CPU's of host (the same pixels); 1 when all agree. */
static int same_histograms(const imgstat_gpu_jpeg_item *it,
                           const uint64_t *counts, const imgstat_image *host) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_gpu_image *d = NULL;
  if (imgstat_gpu_image_wrap(g_gpu, it->width, it->height, it->channels,
                             IMGSTAT_U8, (void *const *)it->planes, 0, &d,
                             &err) != IMGSTAT_OK) {
    printf("\n  wrap: %s\n", err.message);
    return 0;
  }
  int same = 1;
  for (int c = 0; c < it->channels; c++) {
    imgstat_histogram one, cpu;
    memset(&one, 0, sizeof one);
    memset(&cpu, 0, sizeof cpu);
    if (imgstat_gpu_image_histogram(g_gpu, d, c, NULL, NULL, 0, NULL, &one,
                                    &err) != IMGSTAT_OK ||
        imgstat_histogram_compute(host, c, NULL, &cpu, &err) != IMGSTAT_OK ||
        one.bins != 256 || cpu.bins != 256) {
      printf("\n  histogram: %s\n", err.message);
      same = 0;
    } else {
      const uint64_t *b = counts + (size_t)256 * c;
      int eq_one = memcmp(b, one.counts, 256 * sizeof *b) == 0;
      int eq_cpu = memcmp(b, cpu.counts, 256 * sizeof *b) == 0;
      if (!eq_one || !eq_cpu)
        printf("\n  %ux%u channel %d: batched counts %s the per-image "
               "kernel's, %s the CPU's\n",
               it->width, it->height, c, eq_one ? "equal" : "DIFFER FROM",
               eq_cpu ? "equal" : "DIFFER FROM");
      same = same && eq_one && eq_cpu;
    }
    imgstat_histogram_free(&one);
    imgstat_histogram_free(&cpu);
  }
  imgstat_gpu_image_release(g_gpu, d);
  return same;
}

enum { RANDOM, ZERO, FULL, ENDS };

static void fill(imgstat_image *img, int pattern) {
  uint64_t n = (uint64_t)img->width * img->height;
  for (int c = 0; c < img->channels; c++) {
    uint8_t *p = img->planes[c];
    for (uint64_t i = 0; i < n; i++)
      p[i] = pattern == ZERO   ? 0
             : pattern == FULL ? 255
             : pattern == ENDS ? (uint8_t)(i % 7 == 0 ? (i % 2 ? 0 : 255) : 77)
                               : (uint8_t)(test_rand(&g_rng) >> 56);
  }
}

static void test_synthetic_batch(void) {
  static const struct {
    uint32_t w, h;
    int ch, pattern;
    size_t offset; /* bytes before each plane: off the 16-byte grid */
  } shapes[] = {
      {1, 1, 1, RANDOM, 0},       {7, 3, 3, RANDOM, 5},
      {4097, 3, 3, RANDOM, 0},    {4097, 3, 1, ENDS, 3},
      {64, 64, 3, ZERO, 0},       {63, 65, 3, FULL, 1},
      {1000, 999, 3, ENDS, 0},    {640, 480, 1, RANDOM, 7},
      {4000, 3000, 3, RANDOM, 0}, {800, 600, 3, RANDOM, 9},
  };
  enum { N = sizeof shapes / sizeof *shapes };
  imgstat_image host[N];
  void *blocks[N];
  imgstat_gpu_jpeg_item items[N];
  imgstat_partial got[N * IMGSTAT_INLINE_CHANNELS];
  memset(items, 0, sizeof items);
  memset(blocks, 0, sizeof blocks);
  for (int k = 0; k < N; k++) {
    uint32_t w = shapes[k].w, h = shapes[k].h;
    if (g_quick && w * h > 1000000) {
      w = 1000;
      h = 750;
    }
    CU_ASSERT_FATAL(test_image_make(&host[k], w, h, shapes[k].ch, IMGSTAT_U8));
    fill(&host[k], shapes[k].pattern);
    /* through a full-size array: an item holds the planes of a JPEG (at
     * most 3), the helper's array is IMGSTAT_MAX_CHANNELS long */
    void *planes[IMGSTAT_MAX_CHANNELS] = {0};
    CU_ASSERT_FATAL(test_gpu_device_copy(&host[k], shapes[k].offset, 0,
                                         &blocks[k], planes));
    for (int c = 0; c < shapes[k].ch; c++)
      items[k].planes[c] = planes[c];
    items[k].width = w;
    items[k].height = h;
    items[k].channels = shapes[k].ch;
    items[k].status = IMGSTAT_OK;
  }
  /* one item not decoded: left out, its output untouched */
  items[3].status = IMGSTAT_ERR_FORMAT;
  memset(got, 0xAB, sizeof got);
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status st = imgstat_gpu_jpeg_stats(g_dec, items, N, got, &err);
  if (st != IMGSTAT_OK)
    printf("\n  batched: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(st, IMGSTAT_OK);
  for (int k = 0; k < N; k++) {
    const imgstat_partial *b = &got[(size_t)k * IMGSTAT_INLINE_CHANNELS];
    if (k == 3) {
      unsigned char ab[sizeof(imgstat_partial)];
      memset(ab, 0xAB, sizeof ab);
      CU_ASSERT(memcmp(b, ab, sizeof ab) == 0);
      continue;
    }
    imgstat_partial one[IMGSTAT_INLINE_CHANNELS], cpu[IMGSTAT_INLINE_CHANNELS];
    CU_ASSERT_EQUAL(one_image(&items[k], one), IMGSTAT_OK);
    CU_ASSERT_EQUAL(imgstat_cpu_stats(&host[k], 1, cpu, &err), IMGSTAT_OK);
    int same_one = same_partials(b, one, shapes[k].ch);
    int same_cpu = same_partials(b, cpu, shapes[k].ch);
    if (!same_one || !same_cpu)
      printf("\n  %ux%u x%d: batched %s the one-image kernel, %s the CPU\n",
             items[k].width, items[k].height, shapes[k].ch,
             same_one ? "equals" : "DIFFERS FROM",
             same_cpu ? "equals" : "DIFFERS FROM");
    CU_ASSERT(same_one);
    CU_ASSERT(same_cpu);
  }
  /* the same batch again, in another order: the same partials */
  imgstat_gpu_jpeg_item rev[N];
  imgstat_partial got2[N * IMGSTAT_INLINE_CHANNELS];
  for (int k = 0; k < N; k++)
    rev[k] = items[N - 1 - k];
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_stats(g_dec, rev, N, got2, &err),
                  IMGSTAT_OK);
  for (int k = 0; k < N; k++)
    if (k != 3)
      CU_ASSERT(same_partials(
          &got[(size_t)k * IMGSTAT_INLINE_CHANNELS],
          &got2[(size_t)(N - 1 - k) * IMGSTAT_INLINE_CHANNELS], shapes[k].ch));
  /* the histograms of the batch: alone, and with the statistics (one
   * synchronisation for both), whose partials stay the same */
  enum { COUNTS = N * IMGSTAT_INLINE_CHANNELS * 256 };
  uint64_t *counts = malloc(sizeof *counts * COUNTS);
  uint64_t *counts2 = malloc(sizeof *counts2 * COUNTS);
  CU_ASSERT_FATAL(counts && counts2);
  memset(counts, 0xAB, sizeof *counts * COUNTS);
  memset(counts2, 0xCD, sizeof *counts2 * COUNTS);
  st = imgstat_gpu_jpeg_reduce(g_dec, items, N, NULL, counts, &err);
  if (st != IMGSTAT_OK)
    printf("\n  batched histograms: %s\n", err.message);
  CU_ASSERT_EQUAL_FATAL(st, IMGSTAT_OK);
  imgstat_partial got3[N * IMGSTAT_INLINE_CHANNELS];
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_reduce(g_dec, items, N, got3, counts2, &err),
                  IMGSTAT_OK);
  for (int k = 0; k < N; k++) {
    const uint64_t *b = counts + (size_t)k * IMGSTAT_INLINE_CHANNELS * 256;
    const uint64_t *b2 = counts2 + (size_t)k * IMGSTAT_INLINE_CHANNELS * 256;
    if (k == 3) { /* not decoded: untouched */
      unsigned char ab[256 * sizeof *b];
      memset(ab, 0xAB, sizeof ab);
      CU_ASSERT(memcmp(b, ab, sizeof ab) == 0);
      continue;
    }
    CU_ASSERT(same_histograms(&items[k], b, &host[k]));
    CU_ASSERT(memcmp(b, b2, 256 * sizeof *b * (size_t)shapes[k].ch) == 0);
    CU_ASSERT(same_partials(&got[(size_t)k * IMGSTAT_INLINE_CHANNELS],
                            &got3[(size_t)k * IMGSTAT_INLINE_CHANNELS],
                            shapes[k].ch));
    /* every sample counted once */
    for (int c = 0; c < shapes[k].ch; c++) {
      uint64_t total = 0;
      for (int v = 0; v < 256; v++)
        total += b[256 * c + v];
      CU_ASSERT_EQUAL(total, (uint64_t)items[k].width * items[k].height);
    }
  }
  free(counts);
  free(counts2);
  for (int k = 0; k < N; k++) {
    test_gpu_free(blocks[k]);
    test_image_free(&host[k]);
  }
}

/* The corpus's JPEGs used here, read into items (their bytes in data[k],
 * the caller's to free); the number read. */
static const char *const jpeg_names[] = {"photos/testorig.jpg",
                                         "photos/hubble_deep_field.jpg",
                                         "photos/testimgint.jpg"};
enum { NJPEG = sizeof jpeg_names / sizeof *jpeg_names };

static int load_jpegs(imgstat_gpu_jpeg_item items[NJPEG],
                      unsigned char *data[NJPEG]) {
  const char *const *names = jpeg_names;
  enum { N = NJPEG };
  memset(items, 0, sizeof(imgstat_gpu_jpeg_item) * N);
  int n = 0;
  const char *dir = test_corpus_dir();
  for (int k = 0; dir && k < N; k++) {
    const char *path = test_path(dir, names[k]);
    imgstat_decoder *d = NULL;
    imgstat_error err;
    memset(&err, 0, sizeof err);
    if (!path || imgstat_decoder_open(path, NULL, &d, &err) != IMGSTAT_OK)
      continue;
    const imgstat_header *h = imgstat_decoder_header(d);
    size_t size = 0;
    data[n] = test_read_file(path, &size);
    items[n].data = data[n];
    items[n].size = size;
    items[n].width = h->width;
    items[n].height = h->height;
    items[n].channels = h->channels;
    imgstat_decoder_close(d);
    if (data[n])
      n++;
  }
  return n;
}

/* JPEGs decoded by nvJPEG: the batch's partials are the one-image kernel's
 * and the CPU's of the planes copied back. */
static void test_decoded_jpegs(void) {
  enum { N = NJPEG };
  unsigned char *data[N];
  imgstat_gpu_jpeg_item items[N];
  int n = load_jpegs(items, data);
  if (n == 0) {
    printf("(no corpus: not run) ");
    return;
  }
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL_FATAL(imgstat_gpu_jpeg_decode(g_dec, items, n, &err),
                        IMGSTAT_OK);
  imgstat_partial got[N * IMGSTAT_INLINE_CHANNELS];
  CU_ASSERT_EQUAL_FATAL(imgstat_gpu_jpeg_stats(g_dec, items, n, got, &err),
                        IMGSTAT_OK);
  static uint64_t counts[N * IMGSTAT_INLINE_CHANNELS * 256];
  CU_ASSERT_EQUAL_FATAL(
      imgstat_gpu_jpeg_reduce(g_dec, items, n, NULL, counts, &err), IMGSTAT_OK);
  int decoded = 0;
  for (int k = 0; k < n; k++) {
    if (items[k].status != IMGSTAT_OK)
      continue;
    decoded++;
    imgstat_partial one[IMGSTAT_INLINE_CHANNELS], cpu[IMGSTAT_INLINE_CHANNELS];
    CU_ASSERT_EQUAL(one_image(&items[k], one), IMGSTAT_OK);
    imgstat_image host;
    CU_ASSERT_FATAL(test_image_make(&host, items[k].width, items[k].height,
                                    items[k].channels, IMGSTAT_U8));
    CU_ASSERT_EQUAL(
        imgstat_gpu_jpeg_item_download(g_dec, &items[k], &host, &err),
        IMGSTAT_OK);
    CU_ASSERT_EQUAL(imgstat_cpu_stats(&host, 1, cpu, &err), IMGSTAT_OK);
    const imgstat_partial *b = &got[(size_t)k * IMGSTAT_INLINE_CHANNELS];
    CU_ASSERT(same_partials(b, one, items[k].channels));
    CU_ASSERT(same_partials(b, cpu, items[k].channels));
    CU_ASSERT(same_histograms(
        &items[k], &counts[(size_t)k * IMGSTAT_INLINE_CHANNELS * 256], &host));
    test_image_free(&host);
  }
  CU_ASSERT(decoded > 0);
  for (int k = 0; k < n; k++) {
    imgstat_gpu_jpeg_item_free(g_dec, &items[k]);
    free(data[k]);
  }
}

/* What one decoder does with the corpus's JPEGs on its own thread. */
typedef struct sibling_run {
  imgstat_gpu_jpeg *dec;
  imgstat_gpu_jpeg_item items[NJPEG];
  unsigned char *data[NJPEG];
  int n;
  imgstat_status st;
  imgstat_error err;
  imgstat_partial parts[NJPEG * IMGSTAT_INLINE_CHANNELS];
  uint64_t counts[NJPEG * IMGSTAT_INLINE_CHANNELS * 256];
} sibling_run;

static void *sibling_main(void *arg) {
  sibling_run *r = arg;
  memset(&r->err, 0, sizeof r->err);
  r->st = imgstat_gpu_jpeg_prepare(r->dec, &r->err);
  if (r->st == IMGSTAT_OK)
    r->st = imgstat_gpu_jpeg_decode(r->dec, r->items, r->n, &r->err);
  if (r->st == IMGSTAT_OK)
    r->st = imgstat_gpu_jpeg_reduce(r->dec, r->items, r->n, r->parts, r->counts,
                                    &r->err);
  return NULL;
}

/* Decoders sharing nvJPEG's handles (the stage's lanes), each on its own
 * thread at once: the same backend for each file, the same partials and
 * counts; the first decoder still works once its sibling is gone. */
static void test_siblings(void) {
  static sibling_run runs[2];
  CU_ASSERT_EQUAL_FATAL(
      imgstat_gpu_jpeg_create_sibling(g_dec, &runs[1].dec, NULL), IMGSTAT_OK);
  runs[0].dec = g_dec;
  for (int r = 0; r < 2; r++)
    runs[r].n = load_jpegs(runs[r].items, runs[r].data);
  if (runs[0].n == 0) {
    printf("(no corpus: not run) ");
    imgstat_gpu_jpeg_destroy(runs[1].dec);
    return;
  }
  pthread_t t[2];
  for (int r = 0; r < 2; r++)
    CU_ASSERT_FATAL(pthread_create(&t[r], NULL, sibling_main, &runs[r]) == 0);
  for (int r = 0; r < 2; r++)
    pthread_join(t[r], NULL);
  for (int r = 0; r < 2; r++) {
    if (runs[r].st != IMGSTAT_OK)
      printf("\n  decoder %d: %s\n", r, runs[r].err.message);
    CU_ASSERT_EQUAL(runs[r].st, IMGSTAT_OK);
  }
  int n = runs[0].n;
  CU_ASSERT_EQUAL(runs[1].n, n);
  for (int k = 0; k < n && runs[0].st == IMGSTAT_OK && runs[1].st == IMGSTAT_OK;
       k++) {
    const imgstat_gpu_jpeg_item *a = &runs[0].items[k], *b = &runs[1].items[k];
    CU_ASSERT_EQUAL(a->status, b->status);
    CU_ASSERT_EQUAL(a->hardware, b->hardware);
    if (a->status != IMGSTAT_OK || b->status != IMGSTAT_OK)
      continue;
    size_t at = (size_t)k * IMGSTAT_INLINE_CHANNELS;
    CU_ASSERT(
        same_partials(&runs[0].parts[at], &runs[1].parts[at], a->channels));
    CU_ASSERT(memcmp(&runs[0].counts[at * 256], &runs[1].counts[at * 256],
                     sizeof(uint64_t) * 256 * (size_t)a->channels) == 0);
  }
  for (int k = 0; k < n; k++)
    imgstat_gpu_jpeg_item_free(runs[1].dec, &runs[1].items[k]);
  imgstat_gpu_jpeg_destroy(runs[1].dec);
  /* the handles outlive the sibling: the first decoder decodes again */
  imgstat_error err;
  memset(&err, 0, sizeof err);
  for (int k = 0; k < n; k++)
    imgstat_gpu_jpeg_item_free(g_dec, &runs[0].items[k]);
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_decode(g_dec, runs[0].items, n, &err),
                  IMGSTAT_OK);
  for (int r = 0; r < 2; r++)
    for (int k = 0; k < runs[r].n; k++) {
      if (r == 0)
        imgstat_gpu_jpeg_item_free(g_dec, &runs[0].items[k]);
      free(runs[r].data[k]);
    }
}

static void test_arguments(void) {
  imgstat_error err;
  imgstat_partial out[IMGSTAT_INLINE_CHANNELS];
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_stats(NULL, NULL, 0, out, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_stats(g_dec, NULL, 1, out, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_stats(g_dec, NULL, 0, NULL, &err),
                  IMGSTAT_OK);
  uint64_t counts[IMGSTAT_INLINE_CHANNELS * 256];
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_reduce(NULL, NULL, 0, NULL, counts, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_reduce(g_dec, NULL, 1, NULL, counts, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_reduce(g_dec, NULL, 0, NULL, NULL, &err),
                  IMGSTAT_OK);
  imgstat_gpu_jpeg *none = NULL;
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_create_sibling(NULL, &none, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_PTR_NULL(none);
  CU_ASSERT_EQUAL(imgstat_gpu_jpeg_prepare(NULL, &err), IMGSTAT_ERR_ARG);
}

static const test_case tests[] = {
    {"batched statistics", NULL},
    {"a batch of awkward sizes: the one-image kernel's bits and histograms, "
     "the CPU's",
     test_synthetic_batch},
    {"JPEGs decoded by nvJPEG", test_decoded_jpegs},
    {"decoders sharing nvJPEG's handles, on two threads at once",
     test_siblings},
    {"arguments", test_arguments},
    {NULL, NULL}};

int main(void) {
  const char *q = getenv("IMGSTAT_TEST_QUICK");
  g_quick = q && *q && strcmp(q, "0") != 0;
  if (!imgstat_gpu_compiled() || !imgstat_gpu_jpeg_compiled())
    return test_skip("built without CUDA or nvJPEG");
  imgstat_error err = {0};
  imgstat_status st = imgstat_gpu_create(-1, &g_gpu, &err);
  if (st == IMGSTAT_ERR_NODEVICE)
    return test_skip("no CUDA device");
  if (st != IMGSTAT_OK) {
    printf("CUDA device present but unusable: %s\n", err.message);
    return 1;
  }
  st = imgstat_gpu_jpeg_create(g_gpu, &g_dec, &err);
  if (st == IMGSTAT_ERR_NODEVICE) {
    imgstat_gpu_destroy(g_gpu);
    return test_skip(err.message);
  }
  if (st != IMGSTAT_OK) {
    printf("nvJPEG present but unusable: %s\n", err.message);
    imgstat_gpu_destroy(g_gpu);
    return 1;
  }
  printf("device: %s, nvJPEG %s\n", imgstat_gpu_device_name(g_gpu),
         imgstat_gpu_jpeg_backend(g_dec));
  int rc = test_main(tests);
  imgstat_gpu_jpeg_destroy(g_dec);
  imgstat_gpu_destroy(g_gpu);
  return rc;
}
