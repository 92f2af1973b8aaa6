/*
 * The dataset accumulator (imgstat_dataset.h): exact pooled sums past 2^32
 * samples a channel (synthesized partials), the same result for every order
 * and grouping of adds, merges and serialized round trips, the layout rule
 * (the smallest ordinal decides), --as conversions of partials, --scale
 * unit, the outlier rule and refused serialized forms.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgstat/batch.h"
#include "imgstat/dataset.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "imgstat/inputs.h"
#include "imgstat/outputs.h"
#include "imgstat/run.h"
#include "test_util.h"

__extension__ typedef unsigned __int128 u128;

static void u128_text(u128 v, char *buf) {
  char rev[48];
  int n = 0;
  do {
    rev[n++] = (char)('0' + (int)(v % 10));
    v /= 10;
  } while (v);
  for (int i = 0; i < n; i++)
    buf[i] = rev[n - 1 - i];
  buf[n] = '\0';
}

/* The partial of a constant u16 plane of n samples (v everywhere). */
static imgstat_partial constant_u16(uint64_t n, uint16_t v) {
  imgstat_partial p;
  imgstat_partial_init(&p);
  p.count = n;
  p.min = p.max = v;
  p.min_index = p.max_index = 0;
  p.sum = n * v;
  p.sumsq = n * v * (uint64_t)v;
  return p;
}

/* Overflow: three 65536 x 65536 16-bit images of 65535 (each exactly 2^32
 * samples, their sums of squares just under 2^64) and one of 1: the pooled
 * sums are 128-bit and exact. */
static void test_past_2_32(void) {
  imgstat_dataset *d = NULL;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_dataset_create(NULL, &d, &err) == IMGSTAT_OK);
  uint64_t n = UINT64_C(1) << 32;
  imgstat_partial big = constant_u16(n, 65535), small = constant_u16(n, 1);
  imgstat_dataset_image im = {"big",       65536, 65536, 1,
                              IMGSTAT_U16, &big,  NULL,  IMGSTAT_COLOUR_DEFAULT,
                              0,           NULL,  0};
  for (int k = 0; k < 3; k++)
    CU_ASSERT(imgstat_dataset_add(d, (uint64_t)k, &im, &err) == IMGSTAT_OK);
  im.name = "small";
  im.partial = &small;
  CU_ASSERT(imgstat_dataset_add(d, 3, &im, &err) == IMGSTAT_OK);
  imgstat_dataset_result r;
  CU_ASSERT_FATAL(imgstat_dataset_finish(d, 0, &r, &err) == IMGSTAT_OK);
  u128 sum = (u128)3 * n * 65535 + n;
  u128 sq = (u128)3 * n * 65535 * 65535 + n;
  char want[48];
  CU_ASSERT(r.ch[0].count == 4 * n);
  CU_ASSERT(r.ch[0].sums_exact);
  u128_text(sum, want);
  CU_ASSERT_STRING_EQUAL(r.ch[0].sum_text, want);
  u128_text(sq, want);
  CU_ASSERT_STRING_EQUAL(r.ch[0].sum_sq_text, want);
  /* mean (3 * 65535 + 1) / 4 exactly; std from the exact moments */
  CU_ASSERT(r.ch[0].mean == (3.0 * 65535 + 1) / 4);
  double m = (3.0 * 65535 + 1) / 4;
  double var = (3 * (65535 - m) * (65535 - m) + (1 - m) * (1 - m)) / 4;
  CU_ASSERT(fabs(r.ch[0].std - sqrt(var)) <= 1e-12 * sqrt(var));
  CU_ASSERT_STRING_EQUAL(r.ch[0].min_at.file, "small");
  CU_ASSERT_STRING_EQUAL(r.ch[0].max_at.file, "big");
  /* 2^32 samples of 65535^2: a 64-bit sum of squares would have wrapped */
  CU_ASSERT(sq > (u128)UINT64_MAX);
  imgstat_dataset_result_free(&r);
  imgstat_dataset_destroy(d);
}

/* A few small images of mixed layouts (RGB mostly, two gray, an RGBA one,
 * a 16-bit one; the last one gray so that adding in reverse starts there),
 * their partials scanned from pixels made here. */
#define NIMG 9
static imgstat_image imgs[NIMG];
static imgstat_partial parts[NIMG][IMGSTAT_MAX_CHANNELS];
static char names[NIMG][16];

static void make_images(void) {
  uint32_t seed = 12345;
  for (int k = 0; k < NIMG; k++) {
    int ch = k == 4 || k == 8 ? 1 : k == 6 ? 4 : 3;
    imgstat_sample s = k == 7 ? IMGSTAT_U16 : IMGSTAT_U8;
    uint32_t w = 5 + (uint32_t)k, h = 4 + (uint32_t)(k % 3);
    imgstat_error err;
    CU_ASSERT_FATAL(imgstat_image_alloc(&imgs[k], w, h, ch, s, 0, &err) ==
                    IMGSTAT_OK);
    for (int c = 0; c < ch; c++) {
      for (uint32_t i = 0; i < w * h; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned v = (seed >> 16) & 0xff;
        v = k == 2 ? 77 : 40 + v / 2; /* image 2: constant */
        if (s == IMGSTAT_U16)
          ((uint16_t *)imgs[k].planes[c])[i] = (uint16_t)(v * 257);
        else
          ((uint8_t *)imgs[k].planes[c])[i] = (uint8_t)v;
      }
    }
    CU_ASSERT_FATAL(imgstat_cpu_stats(&imgs[k], 1, parts[k], &err) ==
                    IMGSTAT_OK);
    snprintf(names[k], sizeof names[k], "img%d.png", k);
  }
}

static void free_images(void) {
  for (int k = 0; k < NIMG; k++)
    imgstat_image_free(&imgs[k]);
}

static imgstat_dataset *accumulate(const imgstat_dataset_options *o,
                                   const int *order, int n) {
  imgstat_dataset *d = NULL;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_dataset_create(o, &d, &err) == IMGSTAT_OK);
  for (int i = 0; i < n; i++) {
    int k = order[i];
    imgstat_partial gray[IMGSTAT_MAX_CHANNELS];
    imgstat_dataset_image im = {names[k],
                                imgs[k].width,
                                imgs[k].height,
                                imgs[k].channels,
                                imgs[k].sample,
                                parts[k],
                                NULL,
                                IMGSTAT_COLOUR_DEFAULT,
                                0,
                                NULL,
                                0};
    if (imgstat_dataset_needs_gray(o, imgs[k].channels)) {
      imgstat_image g;
      CU_ASSERT_FATAL(imgstat_dataset_gray(&imgs[k], &g, &err) == IMGSTAT_OK);
      CU_ASSERT_FATAL(imgstat_cpu_stats(&g, 1, gray, &err) == IMGSTAT_OK);
      imgstat_image_free(&g);
      im.partial = gray;
    }
    CU_ASSERT(imgstat_dataset_add(d, (uint64_t)k, &im, &err) == IMGSTAT_OK);
  }
  return d;
}

/* Two results are the same: every figure's bits, every note. */
static int same_result(const imgstat_dataset_result *a,
                       const imgstat_dataset_result *b) {
  if (a->images != b->images || a->pooled != b->pooled ||
      a->channels != b->channels || a->depths != b->depths ||
      a->nexcluded != b->nexcluded || a->noutliers != b->noutliers)
    return 0;
  for (int c = 0; c < a->channels; c++) {
    const imgstat_dataset_channel *x = &a->ch[c], *y = &b->ch[c];
    if (x->count != y->count || memcmp(&x->mean, &y->mean, 8) ||
        memcmp(&x->std, &y->std, 8) || memcmp(&x->min, &y->min, 8) ||
        memcmp(&x->max, &y->max, 8) || strcmp(x->sum_text, y->sum_text) ||
        strcmp(x->sum_sq_text, y->sum_sq_text) ||
        memcmp(&x->sum_sq, &y->sum_sq, 8) ||
        strcmp(x->min_at.file, y->min_at.file) ||
        strcmp(x->max_at.file, y->max_at.file) || x->min_at.x != y->min_at.x ||
        x->max_at.y != y->max_at.y)
      return 0;
  }
  for (size_t i = 0; i < a->nexcluded; i++)
    if (strcmp(a->excluded[i].file, b->excluded[i].file) ||
        strcmp(a->excluded[i].reason, b->excluded[i].reason))
      return 0;
  for (size_t i = 0; i < a->noutliers; i++)
    if (strcmp(a->outliers[i].file, b->outliers[i].file) ||
        strcmp(a->outliers[i].reason, b->outliers[i].reason))
      return 0;
  return 1;
}

/* The serialized form buf with one byte changed at a time (every one of
 * its first 256, then 100 spread over the rest) and its checksum made good
 * again (FNV-1a 64 of the bytes before it, little-endian): each is read
 * back or refused with IMGSTAT_ERR_FORMAT, never past its end (ASan,
 * valgrind); one read back gives a result. */
static void damaged_forms(const unsigned char *buf, size_t size) {
  unsigned char *copy = malloc(size);
  CU_ASSERT_FATAL(copy != NULL);
  imgstat_error err;
  for (size_t i = 8; i + 8 < size; i += i < 256 ? 1 : size / 100 + 1) {
    memcpy(copy, buf, size);
    copy[i] ^= (unsigned char)(1u << (i % 8));
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t k = 0; k + 8 < size; k++)
      h = (h ^ copy[k]) * UINT64_C(0x100000001b3);
    for (int b = 0; b < 8; b++)
      copy[size - 8 + (size_t)b] = (unsigned char)(h >> (8 * b));
    imgstat_dataset *d = NULL;
    imgstat_status st = imgstat_dataset_deserialize(copy, size, &d, &err);
    CU_ASSERT(st == IMGSTAT_OK || st == IMGSTAT_ERR_FORMAT);
    CU_ASSERT((st == IMGSTAT_OK) == (d != NULL));
    imgstat_dataset_result r;
    if (d && imgstat_dataset_finish(d, 0, &r, &err) == IMGSTAT_OK)
      imgstat_dataset_result_free(&r);
    imgstat_dataset_destroy(d);
  }
  free(copy);
}

/* nb-band images pool together, and through the serialized form (one
 * mean and std per band kept for the outlier rule) to the same result; a
 * damaged or cut serialized form is refused; the last band's count, min
 * and max are the samples' own. */
static void bands_serialized(int nb) {
  enum { NI = 3 };
  imgstat_image im[NI];
  imgstat_partial(*part)[IMGSTAT_MAX_CHANNELS] = calloc(NI, sizeof *part);
  CU_ASSERT_FATAL(part != NULL);
  imgstat_error err;
  uint32_t seed = 7;
  uint16_t lo = 65535, hi = 0;
  uint64_t count = 0;
  imgstat_dataset_options o;
  memset(&o, 0, sizeof o);
  imgstat_dataset *a = NULL, *half = NULL, *rest = NULL;
  CU_ASSERT_FATAL(imgstat_dataset_create(&o, &a, &err) == IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_dataset_create(&o, &half, &err) == IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_dataset_create(&o, &rest, &err) == IMGSTAT_OK);
  for (int k = 0; k < NI; k++) {
    CU_ASSERT_FATAL(imgstat_image_alloc(&im[k], 6 + (uint32_t)k, 5, nb,
                                        IMGSTAT_U16, 0, &err) == IMGSTAT_OK);
    for (int c = 0; c < nb; c++)
      for (uint32_t i = 0; i < im[k].width * im[k].height; i++) {
        seed = seed * 1103515245u + 12345u;
        uint16_t v = (uint16_t)(seed >> 16);
        ((uint16_t *)im[k].planes[c])[i] = v;
        if (c == nb - 1) {
          lo = v < lo ? v : lo;
          hi = v > hi ? v : hi;
          count++;
        }
      }
    CU_ASSERT_FATAL(imgstat_cpu_stats(&im[k], 1, part[k], &err) == IMGSTAT_OK);
    imgstat_dataset_image di = {"bands.npy",
                                im[k].width,
                                im[k].height,
                                nb,
                                IMGSTAT_U16,
                                part[k],
                                NULL,
                                IMGSTAT_COLOUR_DEFAULT,
                                0,
                                NULL,
                                0};
    CU_ASSERT(imgstat_dataset_add(a, (uint64_t)k, &di, &err) == IMGSTAT_OK);
    CU_ASSERT(imgstat_dataset_add(k == 0 ? half : rest, (uint64_t)k, &di,
                                  &err) == IMGSTAT_OK);
  }
  void *buf = NULL;
  size_t size = 0;
  imgstat_dataset *back = NULL, *bad = NULL;
  CU_ASSERT_FATAL(imgstat_dataset_serialize(rest, &buf, &size, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_dataset_deserialize(buf, size, &back, &err) ==
                  IMGSTAT_OK);
  if (nb == 200)
    damaged_forms(buf, size);
  CU_ASSERT(imgstat_dataset_deserialize(buf, size - 8, &bad, &err) ==
            IMGSTAT_ERR_FORMAT);
  ((unsigned char *)buf)[size / 3] ^= 4;
  CU_ASSERT(imgstat_dataset_deserialize(buf, size, &bad, &err) ==
            IMGSTAT_ERR_FORMAT);
  CU_ASSERT(bad == NULL);
  free(buf);
  CU_ASSERT(imgstat_dataset_merge(half, back, &err) == IMGSTAT_OK);
  imgstat_dataset_result ra, rh;
  CU_ASSERT_FATAL(imgstat_dataset_finish(a, 1, &ra, &err) == IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_dataset_finish(half, 1, &rh, &err) == IMGSTAT_OK);
  CU_ASSERT_FATAL(ra.channels == nb);
  CU_ASSERT(same_result(&ra, &rh));
  CU_ASSERT(ra.ch[nb - 1].count == count && ra.ch[nb - 1].min == lo &&
            ra.ch[nb - 1].max == hi);
  CU_ASSERT(rh.ch[nb - 1].count == count && rh.ch[nb - 1].min == lo &&
            rh.ch[nb - 1].max == hi);
  imgstat_dataset_result_free(&ra);
  imgstat_dataset_result_free(&rh);
  imgstat_dataset_destroy(a);
  imgstat_dataset_destroy(half);
  imgstat_dataset_destroy(rest);
  imgstat_dataset_destroy(back);
  for (int k = 0; k < NI; k++)
    imgstat_image_free(&im[k]);
  free(part);
}

static void test_bands_serialized(void) { bands_serialized(13); }
static void test_wide_serialized(void) {
  bands_serialized(200);
  bands_serialized(IMGSTAT_MAX_CHANNELS);
}

/* In order, reversed, and split in three merged accumulators (one of them
 * through the serialized form): the same result, for each --as and with
 * --scale unit. */
static void test_groupings(void) {
  make_images();
  static const int fwd[NIMG] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  static const int rev[NIMG] = {8, 7, 6, 5, 4, 3, 2, 1, 0};
  for (int as = 0; as < 4; as++)
    for (int scale = 0; scale < 2; scale++) {
      imgstat_dataset_options o;
      memset(&o, 0, sizeof o);
      o.as = (imgstat_dataset_as)as;
      o.scale_unit = scale;
      imgstat_error err;
      imgstat_dataset *a = accumulate(&o, fwd, NIMG);
      imgstat_dataset *b = accumulate(&o, rev, NIMG);
      static const int p1[] = {5, 0, 8}, p2[] = {3, 7}, p3[] = {1, 2, 4, 6};
      imgstat_dataset *x = accumulate(&o, p1, 3), *y = accumulate(&o, p2, 2),
                      *z = accumulate(&o, p3, 4);
      void *buf = NULL;
      size_t size = 0;
      imgstat_dataset *zz = NULL;
      CU_ASSERT_FATAL(imgstat_dataset_serialize(z, &buf, &size, &err) ==
                      IMGSTAT_OK);
      CU_ASSERT_FATAL(imgstat_dataset_deserialize(buf, size, &zz, &err) ==
                      IMGSTAT_OK);
      /* a damaged byte is refused */
      ((unsigned char *)buf)[size / 2] ^= 1;
      imgstat_dataset *bad = NULL;
      CU_ASSERT(imgstat_dataset_deserialize(buf, size, &bad, &err) ==
                IMGSTAT_ERR_FORMAT);
      CU_ASSERT(bad == NULL);
      free(buf);
      CU_ASSERT(imgstat_dataset_merge(y, zz, &err) == IMGSTAT_OK);
      CU_ASSERT(imgstat_dataset_merge(y, x, &err) == IMGSTAT_OK);
      imgstat_dataset_result ra, rb, ry;
      CU_ASSERT_FATAL(imgstat_dataset_finish(a, 1, &ra, &err) == IMGSTAT_OK);
      CU_ASSERT_FATAL(imgstat_dataset_finish(b, 1, &rb, &err) == IMGSTAT_OK);
      CU_ASSERT_FATAL(imgstat_dataset_finish(y, 1, &ry, &err) == IMGSTAT_OK);
      CU_ASSERT(same_result(&ra, &rb));
      CU_ASSERT(same_result(&ra, &ry));
      /* the layout rule: the first image (ordinal 0) is RGB 8-bit */
      int want_ch = as == 0 ? 3 : as == 1 ? 1 : as == 2 ? 3 : 4;
      CU_ASSERT(ra.channels == want_ch);
      size_t excluded = as == 0 ? (scale ? 3u : 4u) : (scale ? 0u : 1u);
      CU_ASSERT(ra.nexcluded == excluded);
      /* the constant image (2) is an outlier */
      int constant = 0;
      for (size_t i = 0; i < ra.noutliers; i++)
        if (strcmp(ra.outliers[i].file, "img2.png") == 0 &&
            strstr(ra.outliers[i].reason, "constant"))
          constant = 1;
      CU_ASSERT(constant);
      imgstat_dataset_result_free(&ra);
      imgstat_dataset_result_free(&rb);
      imgstat_dataset_result_free(&ry);
      imgstat_dataset_destroy(a);
      imgstat_dataset_destroy(b);
      imgstat_dataset_destroy(x);
      imgstat_dataset_destroy(y);
      imgstat_dataset_destroy(z);
      imgstat_dataset_destroy(zz);
    }
  free_images();
}

/* --as rgb of a gray image replicates its partial; the sums are the gray
 * plane's three times over. */
static void test_as_rgb_replicates(void) {
  make_images();
  imgstat_dataset_options o;
  memset(&o, 0, sizeof o);
  o.as = IMGSTAT_AS_RGB;
  static const int only_gray[] = {4};
  imgstat_dataset *d = accumulate(&o, only_gray, 1);
  imgstat_dataset_result r;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_dataset_finish(d, 0, &r, &err) == IMGSTAT_OK);
  CU_ASSERT(r.channels == 3);
  char want[48];
  u128_text(parts[4][0].sum, want);
  for (int c = 0; c < 3; c++)
    CU_ASSERT_STRING_EQUAL(r.ch[c].sum_text, want);
  imgstat_dataset_result_free(&r);
  imgstat_dataset_destroy(d);
  free_images();
}

/* --as keep pools the layout and depth most images have, a tie to more
 * channels then more bits, whatever image comes first and however the
 * accumulators merge: of a gray 8-bit image (ordinal 4, the first), an RGB
 * 8-bit one and an RGB 16-bit one, one each, the RGB 16-bit one pools (more
 * channels, then more bits); with scale unit the two RGB ones. */
static void test_layout_most_images(void) {
  make_images();
  static const int all[] = {4, 5, 7}, first[] = {4}, rest[] = {7, 5};
  for (int scale = 0; scale < 2; scale++) {
    imgstat_dataset_options o;
    memset(&o, 0, sizeof o);
    o.scale_unit = scale;
    imgstat_error err;
    imgstat_dataset *a = accumulate(&o, all, 3);
    imgstat_dataset *x = accumulate(&o, first, 1), *y = accumulate(&o, rest, 2);
    CU_ASSERT(imgstat_dataset_merge(y, x, &err) == IMGSTAT_OK);
    imgstat_dataset_result ra, ry;
    CU_ASSERT_FATAL(imgstat_dataset_finish(a, 0, &ra, &err) == IMGSTAT_OK);
    CU_ASSERT_FATAL(imgstat_dataset_finish(y, 0, &ry, &err) == IMGSTAT_OK);
    CU_ASSERT(ra.channels == 3);
    CU_ASSERT(ra.pooled == (scale ? 2u : 1u));
    CU_ASSERT(ra.depths == (scale ? 3 : 2));
    CU_ASSERT(same_result(&ra, &ry));
    imgstat_dataset_result_free(&ra);
    imgstat_dataset_result_free(&ry);
    imgstat_dataset_destroy(a);
    imgstat_dataset_destroy(x);
    imgstat_dataset_destroy(y);
  }
  free_images();
}

static void test_arguments(void) {
  imgstat_dataset *d = NULL, *e = NULL;
  imgstat_error err;
  imgstat_dataset_options o;
  memset(&o, 0, sizeof o);
  CU_ASSERT_FATAL(imgstat_dataset_create(&o, &d, &err) == IMGSTAT_OK);
  o.scale_unit = 1;
  CU_ASSERT_FATAL(imgstat_dataset_create(&o, &e, &err) == IMGSTAT_OK);
  CU_ASSERT(imgstat_dataset_merge(d, e, &err) == IMGSTAT_ERR_ARG);
  CU_ASSERT(imgstat_dataset_merge(d, d, &err) == IMGSTAT_ERR_ARG);
  imgstat_dataset_image im = {
      "x", 0, 1, 1, IMGSTAT_U8, NULL, NULL, IMGSTAT_COLOUR_DEFAULT, 0, NULL, 0};
  CU_ASSERT(imgstat_dataset_add(d, 0, &im, &err) == IMGSTAT_ERR_ARG);
  /* a CMYK image converts to no pool layout: refused, d unchanged */
  imgstat_partial cmyk[4];
  memset(cmyk, 0, sizeof cmyk);
  imgstat_dataset_image k = {
      "cmyk", 1, 1, 4, IMGSTAT_U8, cmyk, NULL, IMGSTAT_COLOUR_CMYK, 0, NULL, 0};
  CU_ASSERT(imgstat_dataset_add(d, 0, &k, &err) == IMGSTAT_ERR_UNSUPPORTED);
  CU_ASSERT(strstr(err.message, "CMYK") != NULL);
  imgstat_image img, out;
  CU_ASSERT_FATAL(imgstat_image_alloc(&img, 1, 1, 4, IMGSTAT_U8, 0, &err) ==
                  IMGSTAT_OK);
  img.colour = IMGSTAT_COLOUR_CMYK;
  CU_ASSERT(imgstat_dataset_convert(&img, IMGSTAT_AS_RGB, &out, &err) ==
            IMGSTAT_ERR_UNSUPPORTED);
  CU_ASSERT(imgstat_dataset_gray(&img, &out, &err) == IMGSTAT_ERR_ARG);
  img.colour = IMGSTAT_COLOUR_DEFAULT; /* as RGBA: converted */
  CU_ASSERT(imgstat_dataset_convert(&img, IMGSTAT_AS_RGB, &out, &err) ==
            IMGSTAT_OK);
  imgstat_image_free(&out);
  imgstat_image_free(&img);
  imgstat_dataset *f = NULL;
  CU_ASSERT(imgstat_dataset_deserialize("IMGSDSETxxxxxxxx", 16, &f, &err) ==
            IMGSTAT_ERR_FORMAT);
  CU_ASSERT(f == NULL);
  imgstat_dataset_result r;
  CU_ASSERT(imgstat_dataset_finish(d, 0, &r, &err) == IMGSTAT_OK);
  CU_ASSERT(r.channels == 0 && r.images == 0);
  imgstat_dataset_result_free(&r);
  imgstat_dataset_destroy(d);
  imgstat_dataset_destroy(e);
}

/* The pooling pass over one input that can be read only once. */
typedef struct one_input {
  const imgstat_input *in;
  int given;
  imgstat_error why;
  int failures;
} one_input;

static imgstat_status one_next(void *ctx, const imgstat_input **item,
                               imgstat_error *err) {
  (void)err;
  one_input *o = ctx;
  *item = o->given++ ? NULL : o->in;
  return IMGSTAT_OK;
}

static void one_failed(void *ctx, const imgstat_input *in,
                       const imgstat_error *why) {
  (void)in;
  one_input *o = ctx;
  o->why = *why;
  o->failures++;
}

static void test_read_once_cause(void) {
  /* in the library's words, with a cause a front end words (no flag) */
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_engine_options eo;
  memset(&eo, 0, sizeof eo);
  eo.backend = IMGSTAT_BACKEND_CPU;
  eo.threads = 1;
  imgstat_engine *engine = NULL;
  CU_ASSERT_FATAL(imgstat_engine_create(&eo, &engine, &err) == IMGSTAT_OK);
  imgstat_dataset_options o;
  memset(&o, 0, sizeof o);
  imgstat_dataset *d = NULL;
  CU_ASSERT_FATAL(imgstat_dataset_create(&o, &d, &err) == IMGSTAT_OK);
  imgstat_input in;
  memset(&in, 0, sizeof in);
  in.path = "/dev/stdin";
  in.read_once = 1;
  one_input one;
  memset(&one, 0, sizeof one);
  one.in = &in;
  imgstat_load_options load;
  memset(&load, 0, sizeof load);
  imgstat_dataset_pass p;
  memset(&p, 0, sizeof p);
  p.ctx = &one;
  p.next = one_next;
  p.load = &load;
  p.engine = engine;
  p.workers = 1;
  int cancelled = 0;
  CU_ASSERT(imgstat_dataset_pool_inputs(&p, d, one_failed, &cancelled, &err) ==
            IMGSTAT_OK);
  CU_ASSERT_EQUAL(one.failures, 1);
  CU_ASSERT_EQUAL(one.why.cause, IMGSTAT_CAUSE_DATASET);
  CU_ASSERT_STRING_EQUAL(imgstat_cause_name(one.why.cause), "dataset");
  CU_ASSERT_STRING_EQUAL(one.why.message, "can be read only once, and a "
                                          "dataset's plan reads every input "
                                          "twice");
  imgstat_dataset_destroy(d);
  imgstat_engine_destroy(engine);
}

/* What the accumulator holds per image: at most 64 bytes for an RGB image
 * named like a shard's member (imgstat_dataset_footprint), and the names
 * it gives back (the minimum's, an outlier's, an image left out) are the
 * ones added, whatever the order of the adds. */
#define FOOT_IMAGES 20000
static void test_footprint(void) {
  imgstat_dataset *d = NULL;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_dataset_create(NULL, &d, &err) == IMGSTAT_OK);
  char name[128];
  for (int i = 0; i < FOOT_IMAGES; i++) {
    /* added out of order in pairs, as workers deliver them */
    int k = i ^ 1;
    uint8_t plane[3][16];
    for (int c = 0; c < 3; c++)
      for (int j = 0; j < 16; j++)
        plane[c][j] = (uint8_t)(100 + (k * 7 + c * 3 + j * 5) % 40);
    if (k == 777) /* far brighter than every other: an outlier */
      memset(plane, 250, sizeof plane);
    if (k == 4242) /* the darkest sample of the dataset */
      plane[1][5] = 3;
    imgstat_partial part[3];
    for (int c = 0; c < 3; c++) {
      imgstat_partial_init(&part[c]);
      imgstat_partial_scan(&part[c], plane[c], IMGSTAT_U8, 0, 16);
    }
    snprintf(name, sizeof name, "/data/shards/s%03d/img_%07d.png", k / 1000, k);
    imgstat_dataset_image im = {name,       4,    4,    k == 999 ? 1 : 3,
                                IMGSTAT_U8, part, NULL, IMGSTAT_COLOUR_DEFAULT,
                                0,          NULL, 0};
    CU_ASSERT_FATAL(imgstat_dataset_add(d, (uint64_t)k, &im, &err) ==
                    IMGSTAT_OK);
  }
  size_t bytes = imgstat_dataset_footprint(d);
  printf("\n    %zu bytes for %d images: %.1f per image\n", bytes, FOOT_IMAGES,
         (double)bytes / FOOT_IMAGES);
  CU_ASSERT(bytes > 0 && bytes <= (size_t)64 * FOOT_IMAGES);
  imgstat_dataset_result r;
  CU_ASSERT_FATAL(imgstat_dataset_finish(d, 0, &r, &err) == IMGSTAT_OK);
  CU_ASSERT(r.images == FOOT_IMAGES && r.pooled == FOOT_IMAGES - 1);
  CU_ASSERT(r.channels == 3);
  CU_ASSERT(r.ch[1].min == 3);
  CU_ASSERT_STRING_EQUAL(r.ch[1].min_at.file,
                         "/data/shards/s004/img_0004242.png");
  CU_ASSERT(r.ch[0].max == 250);
  CU_ASSERT_STRING_EQUAL(r.ch[0].max_at.file,
                         "/data/shards/s000/img_0000777.png");
  CU_ASSERT_FATAL(r.nexcluded == 1);
  CU_ASSERT_STRING_EQUAL(r.excluded[0].file,
                         "/data/shards/s000/img_0000999.png");
  int found = 0;
  for (size_t i = 0; i < r.noutliers; i++) {
    CU_ASSERT(i == 0 || r.outliers[i - 1].ordinal < r.outliers[i].ordinal);
    if (r.outliers[i].ordinal == 777) {
      found = 1;
      CU_ASSERT_STRING_EQUAL(r.outliers[i].file,
                             "/data/shards/s000/img_0000777.png");
      CU_ASSERT(strstr(r.outliers[i].reason, "constant (every sample 250)") !=
                NULL);
      CU_ASSERT(strstr(r.outliers[i].reason, "mean of R: robust z") != NULL);
    }
  }
  CU_ASSERT(found);
  imgstat_dataset_result_free(&r);
  imgstat_dataset_destroy(d);
}

/* Label images: each label pooled apart (label 2 in two images of four),
 * float samples, added in order to one accumulator and split over two
 * whose second goes through the serialized form (as under MPI) and is
 * merged: the same labels and the same bits of every figure. */
static void test_labels_merged(void) {
  enum { NI = 4, NL = 2 };
  imgstat_image im[NI][NL];
  imgstat_partial part[NI][NL][IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  uint32_t seed = 9;
  imgstat_dataset_options o;
  memset(&o, 0, sizeof o);
  imgstat_dataset *a = NULL, *half = NULL, *rest = NULL;
  CU_ASSERT_FATAL(imgstat_dataset_create(&o, &a, &err) == IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_dataset_create(&o, &half, &err) == IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_dataset_create(&o, &rest, &err) == IMGSTAT_OK);
  uint64_t count[NL] = {0, 0};
  for (int k = 0; k < NI; k++) {
    imgstat_dataset_label_image li[NL];
    uint32_t nl = 0;
    for (int l = 0; l < NL; l++) {
      /* the label's pixels, as the engine compacts them */
      CU_ASSERT_FATAL(imgstat_image_alloc(&im[k][l], 3 + (uint32_t)(k + l), 1,
                                          1, IMGSTAT_F32, 0,
                                          &err) == IMGSTAT_OK);
      for (uint32_t i = 0; i < im[k][l].width; i++) {
        seed = seed * 1103515245u + 12345u;
        ((float *)im[k][l].planes[0])[i] = (float)(seed >> 8) * 1e-3f;
      }
      CU_ASSERT_FATAL(imgstat_cpu_stats(&im[k][l], 1, part[k][l], &err) ==
                      IMGSTAT_OK);
      if (l == 1 && k % 2)
        continue; /* label 2 in images 0 and 2 only */
      li[nl].label = (uint32_t)l + 1;
      li[nl].partial = part[k][l];
      li[nl].hist = NULL;
      nl++;
      count[l] += im[k][l].width;
    }
    imgstat_dataset_image di = {
        "f.npy",     8,          1,    1,
        IMGSTAT_F32, part[k][0], NULL, IMGSTAT_COLOUR_DEFAULT,
        nl,          li,         0};
    CU_ASSERT(imgstat_dataset_add(a, (uint64_t)k, &di, &err) == IMGSTAT_OK);
    CU_ASSERT(imgstat_dataset_add(k % 2 ? half : rest, (uint64_t)k, &di,
                                  &err) == IMGSTAT_OK);
  }
  void *buf = NULL;
  size_t size = 0;
  imgstat_dataset *back = NULL;
  CU_ASSERT_FATAL(imgstat_dataset_serialize(rest, &buf, &size, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_dataset_deserialize(buf, size, &back, &err) ==
                  IMGSTAT_OK);
  free(buf);
  CU_ASSERT(imgstat_dataset_merge(half, back, &err) == IMGSTAT_OK);
  imgstat_dataset_result ra, rh;
  CU_ASSERT_FATAL(imgstat_dataset_finish(a, 0, &ra, &err) == IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_dataset_finish(half, 0, &rh, &err) == IMGSTAT_OK);
  CU_ASSERT_FATAL(ra.nlabels == NL && rh.nlabels == NL);
  for (int l = 0; l < NL; l++) {
    CU_ASSERT(ra.labels[l].label == (uint32_t)l + 1);
    CU_ASSERT(rh.labels[l].label == (uint32_t)l + 1);
    CU_ASSERT(ra.labels[l].pool->pooled == (l ? 2u : 4u));
    CU_ASSERT(ra.labels[l].pool->ch[0].count == count[l]);
    CU_ASSERT(same_result(ra.labels[l].pool, rh.labels[l].pool));
  }
  imgstat_dataset_result_free(&ra);
  imgstat_dataset_result_free(&rh);
  imgstat_dataset_destroy(a);
  imgstat_dataset_destroy(half);
  imgstat_dataset_destroy(rest);
  imgstat_dataset_destroy(back);
  for (int k = 0; k < NI; k++)
    for (int l = 0; l < NL; l++)
      imgstat_image_free(&im[k][l]);
}

static const test_case tests[] = {
    {"dataset", NULL},
    {"u16 past 2^32 samples a channel: exact sums", test_past_2_32},
    {"every order and grouping: the same result", test_groupings},
    {"13-band images, through the serialized form", test_bands_serialized},
    {"200 and 1024 bands, through the serialized form (damaged forms "
     "refused)",
     test_wide_serialized},
    {"labels pooled apart, merged and serialized", test_labels_merged},
    {"--as rgb replicates gray", test_as_rgb_replicates},
    {"--as keep: the layout most images have", test_layout_most_images},
    {"arguments", test_arguments},
    {"a read-once input: the pool's cause", test_read_once_cause},
    {"at most 64 bytes an RGB image, the names given back", test_footprint},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
