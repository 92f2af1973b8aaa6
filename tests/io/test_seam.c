/*
 * The loader seam and the row stride: a decoder's header (read before any
 * pixel) against the reference tables written in Python
 * (tests/tools/make_reference.py), decoding into caller-owned planes with a
 * stride against the dense decode, statistics, histograms, normalization
 * and the writers of a strided image against those of its dense copy, bit
 * for bit, and the refusals of the seam.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "imgstat/norm.h"
#include "load_ref.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Padding after each row of a strided copy, in samples, and the byte it is
 * filled with: 0xFF is the largest u8 and u16 value and a NaN as f32, so a
 * consumer that reads it changes its result. */
#define PAD 5
#define CANARY 0xFF

static char msg[1024];

#define ASSERT_MSG(cond, text)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      printf("\n    %s\n", (text));                                            \
    CU_ASSERT(cond);                                                           \
  } while (0)

/* The format a file's first bytes announce, read here by hand. */
static const char *format_by_signature(const unsigned char *h, size_t n) {
  if (n >= 8 && memcmp(h, "\x89PNG", 4) == 0)
    return "PNG";
  if (n >= 2 && h[0] == 0xFF && h[1] == 0xD8)
    return "JPEG";
  if (n >= 2 && memcmp(h, "BM", 2) == 0)
    return "BMP";
  if (n >= 3 && memcmp(h, "GIF", 3) == 0)
    return "GIF";
  if (n >= 4 && memcmp(h, "8BPS", 4) == 0)
    return "PSD";
  if (n >= 2 && memcmp(h, "#?", 2) == 0)
    return "HDR";
  if (n >= 2 && h[0] == 'P' && (h[1] == '5' || h[1] == '6'))
    return "PNM";
  return "TGA";
}

/* ---- strided copies -------------------------------------------------------
 */

/* Caller-owned planes, each its own allocation, rows PAD samples apart and
 * filled with CANARY; *img describes them (imgstat_image_wrap). */
typedef struct strided {
  imgstat_image img;
  void *planes[IMGSTAT_MAX_CHANNELS];
  size_t plane_size;
} strided;

static int strided_make(strided *s, uint32_t w, uint32_t h, int channels,
                        imgstat_sample sample) {
  memset(s, 0, sizeof *s);
  size_t stride = ((size_t)w + PAD) * (size_t)sample;
  s->plane_size = stride * h;
  for (int c = 0; c < channels; c++) {
    s->planes[c] = malloc(s->plane_size);
    if (!s->planes[c])
      return 0;
    memset(s->planes[c], CANARY, s->plane_size);
  }
  imgstat_error err = {0};
  return imgstat_image_wrap(&s->img, w, h, channels, sample, s->planes, stride,
                            &err) == IMGSTAT_OK;
}

static void strided_free(strided *s) {
  imgstat_image_free(&s->img); /* borrowed: frees nothing */
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++)
    free(s->planes[c]);
  memset(s, 0, sizeof *s);
}

/* A strided copy of a dense image. */
static int strided_copy(strided *s, const imgstat_image *dense) {
  if (!strided_make(s, dense->width, dense->height, dense->channels,
                    dense->sample))
    return 0;
  size_t row = (size_t)dense->width * (size_t)dense->sample;
  for (int c = 0; c < dense->channels; c++)
    for (uint32_t y = 0; y < dense->height; y++)
      memcpy(ist_image_row(&s->img, c, y),
             (const unsigned char *)dense->planes[c] + y * row, row);
  s->img.format = dense->format;
  return 1;
}

/* Whether a strided image holds the dense one's samples, its padding
 * untouched. */
static int strided_equals(const strided *s, const imgstat_image *dense) {
  const imgstat_image *a = &s->img;
  if (a->width != dense->width || a->height != dense->height ||
      a->channels != dense->channels || a->sample != dense->sample)
    return 0;
  size_t row = (size_t)a->width * (size_t)a->sample;
  size_t pad = PAD * (size_t)a->sample;
  for (int c = 0; c < a->channels; c++)
    for (uint32_t y = 0; y < a->height; y++) {
      const unsigned char *r = ist_image_row(a, c, y);
      if (memcmp(r, (const unsigned char *)dense->planes[c] + y * row, row))
        return 0;
      for (size_t k = 0; k < pad; k++)
        if (r[row + k] != CANARY)
          return 0;
    }
  return 1;
}

/* ---- the consumers: a strided image against its dense copy ---------------
 */

static int partials_equal(const imgstat_partial *a, const imgstat_partial *b,
                          int channels) {
  /* all fields are 8 bytes: no padding, so memcmp compares the bits */
  return memcmp(a, b, sizeof *a * (size_t)channels) == 0;
}

static int histograms_equal(const imgstat_histogram *a,
                            const imgstat_histogram *b) {
  return a->sample == b->sample && a->bins == b->bins &&
         memcmp(&a->lo, &b->lo, sizeof a->lo) == 0 &&
         memcmp(&a->hi, &b->hi, sizeof a->hi) == 0 && a->total == b->total &&
         a->nan_count == b->nan_count && a->inf_count == b->inf_count &&
         memcmp(a->counts, b->counts, a->bins * sizeof *a->counts) == 0;
}

static int images_equal(const imgstat_image *a, const imgstat_image *b) {
  if (a->width != b->width || a->height != b->height ||
      a->channels != b->channels || a->sample != b->sample)
    return 0;
  for (int c = 0; c < a->channels; c++)
    for (uint32_t y = 0; y < a->height; y++)
      if (memcmp(ist_image_row(a, c, y), ist_image_row(b, c, y),
                 ist_row_bytes(a)))
        return 0;
  return 1;
}

static int files_equal(const char *p, const char *q) {
  size_t n, m;
  unsigned char *a = test_read_file(p, &n), *b = test_read_file(q, &m);
  int same = a && b && n == m && n > 0 && memcmp(a, b, n) == 0;
  free(a);
  free(b);
  return same;
}

/* Statistics (several thread counts), histograms, the f32 range and
 * moments, normalize in three modes, the writers and the dense copy of
 * `str` (strided) and `dense` agree bit for bit; `what` names the image. */
static void expect_same_results(const imgstat_image *dense,
                                const imgstat_image *str, const char *what) {
  imgstat_error err = {0};
  int ch = dense->channels;
  const int threads[] = {1, 3, 0};
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
    imgstat_partial a[IMGSTAT_MAX_CHANNELS], b[IMGSTAT_MAX_CHANNELS];
    CU_ASSERT_EQUAL_FATAL(imgstat_cpu_stats(dense, threads[t], a, &err),
                          IMGSTAT_OK);
    CU_ASSERT_EQUAL_FATAL(imgstat_cpu_stats(str, threads[t], b, &err),
                          IMGSTAT_OK);
    snprintf(msg, sizeof msg, "%s: statistics differ (%d threads)", what,
             threads[t]);
    ASSERT_MSG(partials_equal(a, b, ch), msg);
  }

  for (int c = 0; c < ch; c++) {
    imgstat_histogram ha, hb;
    CU_ASSERT_EQUAL_FATAL(imgstat_histogram_compute(dense, c, NULL, &ha, &err),
                          IMGSTAT_OK);
    CU_ASSERT_EQUAL_FATAL(imgstat_histogram_compute(str, c, NULL, &hb, &err),
                          IMGSTAT_OK);
    snprintf(msg, sizeof msg, "%s: histogram of channel %d differs", what, c);
    ASSERT_MSG(histograms_equal(&ha, &hb), msg);
    imgstat_histogram_free(&ha);
    imgstat_histogram_free(&hb);
    if (dense->sample == IMGSTAT_F32) {
      double la, ua, lb, ub;
      int ka = imgstat_image_finite_range(dense, c, &la, &ua);
      int kb = imgstat_image_finite_range(str, c, &lb, &ub);
      snprintf(msg, sizeof msg, "%s: f32 range of channel %d differs", what, c);
      ASSERT_MSG(ka == kb && memcmp(&la, &lb, sizeof la) == 0 &&
                     memcmp(&ua, &ub, sizeof ua) == 0,
                 msg);
      imgstat_moments ma, mb;
      imgstat_image_moments_f32(dense, c, &ma);
      imgstat_image_moments_f32(str, c, &mb);
      snprintf(msg, sizeof msg, "%s: f32 moments of channel %d differ", what,
               c);
      ASSERT_MSG(memcmp(&ma, &mb, sizeof ma) == 0, msg);
    }
  }

  imgstat_norm_options modes[3];
  memset(modes, 0, sizeof modes);
  modes[0].mode = IMGSTAT_NORM_MINMAX;
  modes[1].mode = IMGSTAT_NORM_CLIP;
  modes[1].linked = 1;
  modes[1].clip_low = 1;
  modes[1].clip_high = 99;
  modes[2].mode = IMGSTAT_NORM_ZSCORE;
  for (int m = 0; m < 3; m++) {
    imgstat_norm_measure ma, mb;
    imgstat_norm_plan pa, pb;
    imgstat_image oa, ob;
    CU_ASSERT_EQUAL_FATAL(
        imgstat_norm_measure_cpu(dense, &modes[m], 2, &ma, &err), IMGSTAT_OK);
    CU_ASSERT_EQUAL_FATAL(
        imgstat_norm_measure_cpu(str, &modes[m], 2, &mb, &err), IMGSTAT_OK);
    snprintf(msg, sizeof msg, "%s: normalize mode %d measures differ", what, m);
    ASSERT_MSG(memcmp(&ma, &mb, sizeof ma) == 0, msg);
    CU_ASSERT_EQUAL_FATAL(
        imgstat_norm_plan_make(dense, &modes[m], &ma, &pa, &err), IMGSTAT_OK);
    CU_ASSERT_EQUAL_FATAL(
        imgstat_norm_plan_make(str, &modes[m], &mb, &pb, &err), IMGSTAT_OK);
    CU_ASSERT_EQUAL_FATAL(imgstat_norm_apply_cpu(dense, &pa, 3, &oa, &err),
                          IMGSTAT_OK);
    CU_ASSERT_EQUAL_FATAL(imgstat_norm_apply_cpu(str, &pb, 3, &ob, &err),
                          IMGSTAT_OK);
    snprintf(msg, sizeof msg, "%s: normalize mode %d output differs", what, m);
    ASSERT_MSG(images_equal(&oa, &ob), msg);
    CU_ASSERT(ist_image_is_dense(&ob));
    imgstat_image_free(&oa);
    imgstat_image_free(&ob);
  }

  char dir[4096];
  CU_ASSERT_FATAL(test_tmp_template(dir, sizeof dir, "imgstat_test_seam_") &&
                  mkdtemp(dir) != NULL);
  char pa[4200], pb[4200];
  const char *ext[] = {"npy", "png"};
  for (int k = 0; k < (dense->sample == IMGSTAT_F32 ? 1 : 2); k++) {
    snprintf(pa, sizeof pa, "%s/a.%s", dir, ext[k]);
    snprintf(pb, sizeof pb, "%s/b.%s", dir, ext[k]);
    CU_ASSERT_EQUAL(imgstat_image_write(pa, dense, NULL, &err), IMGSTAT_OK);
    CU_ASSERT_EQUAL(imgstat_image_write(pb, str, NULL, &err), IMGSTAT_OK);
    snprintf(msg, sizeof msg, "%s: written .%s differs", what, ext[k]);
    ASSERT_MSG(files_equal(pa, pb), msg);
    unlink(pa);
    unlink(pb);
  }
  rmdir(dir);

  imgstat_image tmp;
  const imgstat_image *flat;
  CU_ASSERT_EQUAL_FATAL(ist_image_dense(str, &tmp, &flat, &err), IMGSTAT_OK);
  CU_ASSERT(flat == &tmp && ist_image_is_dense(flat) &&
            images_equal(flat, dense));
  imgstat_image_free(&tmp);
  CU_ASSERT_EQUAL(ist_image_dense(dense, &tmp, &flat, &err), IMGSTAT_OK);
  CU_ASSERT(flat == dense && tmp.data == NULL);
}

/* Samples of every kind: for f32 NaN, infinities, -0 and +0, repeated
 * extremes (first positions matter); more than two scan chunks, rows that
 * cut chunks mid-row. */
static void fill_synthetic(imgstat_image *img, uint64_t seed) {
  uint64_t st = seed;
  size_t n = (size_t)img->width * img->height;
  for (int c = 0; c < img->channels; c++)
    for (size_t i = 0; i < n; i++) {
      uint64_t r = test_rand(&st);
      if (img->sample == IMGSTAT_U8) {
        ((uint8_t *)img->planes[c])[i] = (uint8_t)(r % 7 == 0 ? 3 : r >> 56);
      } else if (img->sample == IMGSTAT_U16) {
        ((uint16_t *)img->planes[c])[i] = (uint16_t)(r >> 48);
      } else {
        float v = (float)((double)(int64_t)r / 9.2e18 * 1e3);
        switch (r % 97) {
        case 0:
          v = NAN;
          break;
        case 1:
          v = INFINITY;
          break;
        case 2:
          v = -INFINITY;
          break;
        case 3:
          v = -0.0f;
          break;
        case 4:
          v = 0.0f;
          break;
        }
        ((float *)img->planes[c])[i] = v;
      }
    }
}

static void test_consumers_synthetic(void) {
  const imgstat_sample samples[] = {IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};
  for (int k = 0; k < 3; k++)
    for (int ch = 1; ch <= 4; ch += 3) {
      imgstat_image dense;
      imgstat_error err = {0};
      CU_ASSERT_EQUAL_FATAL(
          imgstat_image_alloc(&dense, 301, 457, ch, samples[k], 0, &err),
          IMGSTAT_OK);
      fill_synthetic(&dense, 17 + (uint64_t)k * 5 + (uint64_t)ch);
      strided s;
      CU_ASSERT_FATAL(strided_copy(&s, &dense));
      char what[64];
      snprintf(what, sizeof what, "synthetic %d-bit, %d channels",
               imgstat_sample_depth(samples[k]), ch);
      expect_same_results(&dense, &s.img, what);
      strided_free(&s);
      imgstat_image_free(&dense);
    }
}

/* ---- decoding into caller-owned, strided planes --------------------------
 */

/* For one file: the header from open equals what the dense load gives, and
 * the decode into strided planes (from the file and from memory) equals the
 * dense decode; so do statistics (real images: more than synthetic). */
static void check_file(const char *path, const char *name, int consumers) {
  imgstat_image dense;
  imgstat_error err = {0};
  if (imgstat_image_load(path, NULL, &dense, &err) != IMGSTAT_OK)
    return; /* a file every decoder refuses (the tables say which) */
  size_t size;
  unsigned char *bytes = test_read_file(path, &size);
  CU_ASSERT_FATAL(bytes != NULL);
  for (int from_memory = 0; from_memory < 2; from_memory++) {
    imgstat_decoder *d = NULL;
    imgstat_status s =
        from_memory ? imgstat_decoder_open_memory(bytes, size, NULL, &d, &err)
                    : imgstat_decoder_open(path, NULL, &d, &err);
    snprintf(msg, sizeof msg, "%s: open: %s", name, err.message);
    ASSERT_MSG(s == IMGSTAT_OK, msg);
    if (s != IMGSTAT_OK)
      continue;
    const imgstat_header *h = imgstat_decoder_header(d);
    snprintf(msg, sizeof msg, "%s: header %ux%u %d channels %d bits %s", name,
             h->width, h->height, h->channels, imgstat_sample_depth(h->sample),
             h->format);
    ASSERT_MSG(h->width == dense.width && h->height == dense.height &&
                   h->channels == dense.channels && h->sample == dense.sample &&
                   strcmp(h->format, dense.format) == 0,
               msg);
    strided st;
    CU_ASSERT_FATAL(
        strided_make(&st, h->width, h->height, h->channels, h->sample));
    s = imgstat_decoder_read(d, &st.img, &err);
    snprintf(msg, sizeof msg, "%s: strided read: %s", name, err.message);
    ASSERT_MSG(s == IMGSTAT_OK, msg);
    imgstat_decoder_close(d);
    if (s == IMGSTAT_OK) {
      snprintf(msg, sizeof msg, "%s: strided decode differs from the dense",
               name);
      ASSERT_MSG(strided_equals(&st, &dense), msg);
      CU_ASSERT_STRING_EQUAL(st.img.format, dense.format);
      if (consumers && !from_memory)
        expect_same_results(&dense, &st.img, name);
    }
    strided_free(&st);
  }
  free(bytes);
  imgstat_image_free(&dense);
}

/* check_file on every file of the reference table, the files in dir. */
static void check_table(const char *table, const char *dir, int consumers) {
  ref_entry *v;
  long n = ref_read(table, &v);
  CU_ASSERT_FATAL(n > 0);
  for (long i = 0; i < n; i++)
    check_file(test_path(dir, v[i].name), v[i].name, consumers);
  free(v);
}

/* check_table on tests/data/SUBDIR and its reference.tsv. */
static void check_data_dir(const char *subdir, int consumers) {
  char dir[4096], table[4096];
  snprintf(dir, sizeof dir, "%s/%s", test_data_dir(), subdir);
  snprintf(table, sizeof table, "%s/%s/reference.tsv", test_data_dir(), subdir);
  check_table(table, dir, consumers);
}

static void test_strided_formats(void) { check_data_dir("formats", 1); }

static void test_strided_pngsuite(void) { check_data_dir("pngsuite", 0); }

static void test_strided_corpus(void) {
  const char *corpus = test_corpus_dir();
  if (!corpus) {
    printf("\n    skipped: no corpus\n");
    return;
  }
  char table[4096];
  snprintf(table, sizeof table, "%s/corpus_reference.tsv", test_data_dir());
  check_table(table, corpus, 1);
}

/* ---- headers: before any pixel ------------------------------------------
 */

/* The header of every file of a reference table (written in Python from
 * the arrays or by other decoders) is what open gives, and the format is
 * the one its signature names. */
static void headers_of_table(const char *dir, const char *table) {
  ref_entry *v;
  long n = ref_read(table, &v);
  CU_ASSERT_FATAL(n > 0);
  for (long i = 0; i < n; i++) {
    if (!v[i].ok)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
    imgstat_decoder *d = NULL;
    imgstat_error err = {0};
    imgstat_status s = imgstat_decoder_open(path, NULL, &d, &err);
    if (s == IMGSTAT_ERR_UNSUPPORTED &&
        strstr(err.message, "this imgstat was built without"))
      continue; /* a format whose library the build lacks */
    snprintf(msg, sizeof msg, "%s: %s", v[i].name, err.message);
    ASSERT_MSG(s == IMGSTAT_OK, msg);
    if (s != IMGSTAT_OK)
      continue;
    size_t size;
    unsigned char *bytes = test_read_file(path, &size);
    const imgstat_header *h = imgstat_decoder_header(d);
    snprintf(msg, sizeof msg,
             "%s: header %ux%u %d channels %d bits %s, want %ux%u %d %d %s",
             v[i].name, h->width, h->height, h->channels,
             imgstat_sample_depth(h->sample), h->format, v[i].width,
             v[i].height, v[i].channels, v[i].depth,
             format_by_signature(bytes, size));
    ASSERT_MSG(h->width == v[i].width && h->height == v[i].height &&
                   h->channels == v[i].channels &&
                   imgstat_sample_depth(h->sample) == v[i].depth &&
                   strcmp(h->format, format_by_signature(bytes, size)) == 0,
               msg);
    free(bytes);
    imgstat_decoder_close(d); /* never read: nothing leaks */
  }
  free(v);
}

static void test_headers(void) {
  char dir[2048], table[4096];
  const char *sub[] = {"formats", "pngsuite"};
  for (int i = 0; i < 2; i++) {
    snprintf(dir, sizeof dir, "%s/%s", test_data_dir(), sub[i]);
    snprintf(table, sizeof table, "%s/reference.tsv", dir);
    headers_of_table(dir, table);
  }
  const char *corpus = test_corpus_dir();
  snprintf(table, sizeof table, "%s/corpus_reference.tsv", test_data_dir());
  if (corpus)
    headers_of_table(corpus, table);
}

/* Open reads the header only: a file whose pixel data is damaged opens with
 * the intact file's header, and only reading fails. */
static void expect_open_then_fail(const char *name, unsigned char *bytes,
                                  size_t size) {
  imgstat_error err = {0};
  imgstat_decoder *d = NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/formats/%s", test_data_dir(), name);
  imgstat_image whole;
  CU_ASSERT_EQUAL_FATAL(imgstat_image_load(path, NULL, &whole, &err),
                        IMGSTAT_OK);
  imgstat_status s = imgstat_decoder_open_memory(bytes, size, NULL, &d, &err);
  snprintf(msg, sizeof msg, "%s damaged: open: %s", name, err.message);
  ASSERT_MSG(s == IMGSTAT_OK, msg);
  if (s == IMGSTAT_OK) {
    const imgstat_header *h = imgstat_decoder_header(d);
    CU_ASSERT(h->width == whole.width && h->height == whole.height &&
              h->channels == whole.channels && h->sample == whole.sample);
    imgstat_image img;
    CU_ASSERT_EQUAL_FATAL(imgstat_image_alloc(&img, h->width, h->height,
                                              h->channels, h->sample, 0, &err),
                          IMGSTAT_OK);
    s = imgstat_decoder_read(d, &img, &err);
    snprintf(msg, sizeof msg, "%s damaged: read gave %d '%s'", name, (int)s,
             err.message);
    ASSERT_MSG(s == IMGSTAT_ERR_FORMAT && err.message[0], msg);
    imgstat_image_free(&img);
    imgstat_decoder_close(d);
  }
  imgstat_image_free(&whole);
}

static void test_open_reads_no_pixels(void) {
  const char *dir = test_path(test_data_dir(), "formats");
  char path[4096];
  size_t size;
  unsigned char *b;

  /* PNG: a byte of the first IDAT chunk's data flipped (its CRC fails) */
  snprintf(path, sizeof path, "%s/rgb.png", dir);
  b = test_read_file(path, &size);
  CU_ASSERT_FATAL(b != NULL);
  unsigned char *idat = NULL;
  for (size_t i = 0; i + 4 <= size && !idat; i++)
    if (memcmp(b + i, "IDAT", 4) == 0)
      idat = b + i;
  CU_ASSERT_FATAL(idat != NULL && idat + 20 < b + size);
  idat[12] ^= 0x55;
  expect_open_then_fail("rgb.png", b, size);
  free(b);

  /* JPEG (sequential, progressive, gray), RLE TGA and PSD: cut short in
   * their compressed data */
  const char *cut[] = {"q90.jpg", "progressive.jpg", "gray.jpg", "rgb_rle.tga",
                       "rle8.psd"};
  for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, cut[i]);
    b = test_read_file(path, &size);
    CU_ASSERT_FATAL(b != NULL && size > 200);
    expect_open_then_fail(cut[i], b, size * 3 / 4);
    free(b);
  }
}

/* ---- refusals -------------------------------------------------------------
 */

static void expect_open_error(imgstat_status s, imgstat_decoder *d,
                              const imgstat_error *err, imgstat_status want,
                              const char *text) {
  snprintf(msg, sizeof msg, "want %d '%s', got %d '%s'", (int)want, text,
           (int)s, err->message);
  ASSERT_MSG(s == want && strstr(err->message, text) != NULL, msg);
  CU_ASSERT(d == NULL);
}

static void test_open_errors(void) {
  imgstat_error err = {0};
  imgstat_decoder *d = (imgstat_decoder *)&err; /* must become NULL */
  imgstat_status s =
      imgstat_decoder_open("/nonexistent/imgstat/file.png", NULL, &d, &err);
  expect_open_error(s, d, &err, IMGSTAT_ERR_IO, "No such file or directory");

  d = (imgstat_decoder *)&err;
  s = imgstat_decoder_open(test_data_dir(), NULL, &d, &err);
  expect_open_error(s, d, &err, IMGSTAT_ERR_IO, "is a directory");

  static const char text[] = "hello, this is not an image at all\n";
  d = (imgstat_decoder *)&err;
  s = imgstat_decoder_open_memory(text, sizeof text - 1, NULL, &d, &err);
  expect_open_error(s, d, &err, IMGSTAT_ERR_FORMAT,
                    "not a recognised image format");

  s = imgstat_decoder_open_memory(text, 0, NULL, &d, &err);
  expect_open_error(s, d, &err, IMGSTAT_ERR_FORMAT, "empty file");

  /* A PNG signature followed by something else than IHDR. */
  static const unsigned char no_ihdr[] = {
      0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0, 'I',
      'D',  'A', 'T', 0,   0,    0,    0,    0,    0, 0, 0, 0, 0};
  s = imgstat_decoder_open_memory(no_ihdr, sizeof no_ihdr, NULL, &d, &err);
  expect_open_error(s, d, &err, IMGSTAT_ERR_FORMAT,
                    "Corrupt PNG data: does not start with its IHDR chunk");

  /* Over the caller's pixel limit: refused at open, before any pixel. */
  char path[4096];
  snprintf(path, sizeof path, "%s/formats/rgb.png", test_data_dir());
  imgstat_load_options opts = {.max_pixels = 100};
  s = imgstat_decoder_open(path, &opts, &d, &err);
  expect_open_error(s, d, &err, IMGSTAT_ERR_LIMIT, "(max_pixels)");

  /* A BMP cut short: its header claims more than the file holds. */
  size_t size;
  snprintf(path, sizeof path, "%s/formats/rgb.bmp", test_data_dir());
  unsigned char *b = test_read_file(path, &size);
  CU_ASSERT_FATAL(b != NULL);
  s = imgstat_decoder_open_memory(b, size / 2, NULL, &d, &err);
  expect_open_error(s, d, &err, IMGSTAT_ERR_FORMAT, "takes at least");
  /* ... with the message imgstat_image_load gives */
  imgstat_image img;
  imgstat_error err2;
  CU_ASSERT_EQUAL(imgstat_image_load_memory(b, size / 2, NULL, &img, &err2),
                  IMGSTAT_ERR_FORMAT);
  CU_ASSERT_STRING_EQUAL(err.message, err2.message);
  free(b);
}

/* Reading into an image that is not the header's is refused
 * (IMGSTAT_ERR_ARG) and leaves the decoder ready for a right one. */
static void test_buffer_refused(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/formats/rgb.png", test_data_dir());
  imgstat_error err = {0};
  imgstat_decoder *d;
  CU_ASSERT_EQUAL_FATAL(imgstat_decoder_open(path, NULL, &d, &err), IMGSTAT_OK);
  const imgstat_header *h = imgstat_decoder_header(d);
  CU_ASSERT_FATAL(h->width == 37 && h->height == 23 && h->channels == 3 &&
                  h->sample == IMGSTAT_U8);
  struct {
    uint32_t w, h;
    int ch;
    imgstat_sample s;
  } wrong[] = {{36, 23, 3, IMGSTAT_U8},
               {37, 22, 3, IMGSTAT_U8},
               {37, 23, 1, IMGSTAT_U8},
               {37, 23, 3, IMGSTAT_U16}};
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    imgstat_image img;
    CU_ASSERT_EQUAL_FATAL(imgstat_image_alloc(&img, wrong[i].w, wrong[i].h,
                                              wrong[i].ch, wrong[i].s, 0, &err),
                          IMGSTAT_OK);
    CU_ASSERT_EQUAL(imgstat_decoder_read(d, &img, &err), IMGSTAT_ERR_ARG);
    imgstat_image_free(&img);
  }
  /* rows closer than a row's bytes */
  imgstat_image img;
  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_alloc(&img, 37, 23, 3, IMGSTAT_U8, 0, &err), IMGSTAT_OK);
  img.stride = 36;
  CU_ASSERT_EQUAL(imgstat_decoder_read(d, &img, &err), IMGSTAT_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "less than a row"));
  img.stride = 0; /* dense */
  void *keep = img.planes[2];
  img.planes[2] = NULL;
  CU_ASSERT_EQUAL(imgstat_decoder_read(d, &img, &err), IMGSTAT_ERR_ARG);
  img.planes[2] = keep;
  CU_ASSERT_EQUAL(imgstat_decoder_read(d, NULL, &err), IMGSTAT_ERR_ARG);
  /* the right image still reads, once */
  CU_ASSERT_EQUAL(imgstat_decoder_read(d, &img, &err), IMGSTAT_OK);
  CU_ASSERT_STRING_EQUAL(img.format, "PNG");
  CU_ASSERT_EQUAL(imgstat_decoder_read(d, &img, &err), IMGSTAT_ERR_ARG);
  imgstat_decoder_close(d);
  imgstat_image dense;
  CU_ASSERT_EQUAL_FATAL(imgstat_image_load(path, NULL, &dense, &err),
                        IMGSTAT_OK);
  CU_ASSERT(images_equal(&img, &dense));
  imgstat_image_free(&dense);
  imgstat_image_free(&img);
  imgstat_decoder_close(NULL);
}

/* imgstat_image_wrap: its refusals, and free leaves borrowed planes alone
 * (free() of these stack arrays would abort). */
static void test_wrap(void) {
  uint16_t a[4 * 3], b[4 * 3];
  void *planes[2] = {a, b};
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL(
      imgstat_image_wrap(&img, 3, 3, 2, IMGSTAT_U16, planes, 5, &err),
      IMGSTAT_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "less than a row"));
  CU_ASSERT(img.planes[0] == NULL && img.width == 0);
  void *missing[2] = {a, NULL};
  CU_ASSERT_EQUAL(
      imgstat_image_wrap(&img, 3, 3, 2, IMGSTAT_U16, missing, 8, &err),
      IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(
      imgstat_image_wrap(&img, 0, 3, 2, IMGSTAT_U16, planes, 8, &err),
      IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_image_wrap(&img, 3, 3, IMGSTAT_MAX_CHANNELS + 1,
                                     IMGSTAT_U16, planes, 8, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_image_wrap(&img, 1u << 17, 1u << 16, 2, IMGSTAT_U16,
                                     planes, 0, &err),
                  IMGSTAT_ERR_LIMIT);

  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_wrap(&img, 3, 3, 2, IMGSTAT_U16, planes, 8, &err),
      IMGSTAT_OK);
  CU_ASSERT(img.borrowed && img.stride == 8 && imgstat_image_stride(&img) == 8);
  CU_ASSERT(img.planes[1] == b && img.data == a);
  for (int i = 0; i < 12; i++) {
    a[i] = (uint16_t)(i % 4 == 3 ? 60000 : i); /* the 4th of a row: padding */
    b[i] = 7;
  }
  imgstat_partial p[IMGSTAT_MAX_CHANNELS];
  CU_ASSERT_EQUAL_FATAL(imgstat_cpu_stats(&img, 1, p, &err), IMGSTAT_OK);
  /* rows 0 1 2 | 4 5 6 | 8 9 10: the padding's 60000 is not a sample */
  CU_ASSERT(p[0].count == 9 && p[0].sum == 45 && p[0].max == 10 &&
            p[0].max_index == 8 && p[0].min_index == 0);
  CU_ASSERT(p[1].count == 9 && p[1].sum == 63);
  imgstat_image_free(&img);
  CU_ASSERT(img.planes[0] == NULL && !img.borrowed);

  /* stride 0: dense */
  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_wrap(&img, 4, 3, 1, IMGSTAT_U16, planes, 0, &err),
      IMGSTAT_OK);
  CU_ASSERT(img.stride == 8 && ist_image_is_dense(&img));
  imgstat_image_free(&img);

  /* an allocated image is dense, and a hand-made one with stride 0 too */
  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_alloc(&img, 5, 2, 1, IMGSTAT_F32, 0, &err), IMGSTAT_OK);
  CU_ASSERT(img.stride == 20 && !img.borrowed);
  img.stride = 0;
  CU_ASSERT(imgstat_image_stride(&img) == 20);
  imgstat_image_free(&img);
}

static const test_case tests[] = {
    {"seam", NULL},
    {"headers against the reference tables", test_headers},
    {"open reads no pixels", test_open_reads_no_pixels},
    {"open errors name the reason", test_open_errors},
    {"a buffer that is not the header's is refused", test_buffer_refused},
    {"wrap", test_wrap},
    {"stride", NULL},
    {"strided decode and results: formats", test_strided_formats},
    {"strided decode: PngSuite", test_strided_pngsuite},
    {"strided decode and results: corpus", test_strided_corpus},
    {"strided results: synthetic, every depth", test_consumers_synthetic},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
