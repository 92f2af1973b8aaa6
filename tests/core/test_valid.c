/* Valid samples (imgstat_valid): the compaction of a channel's samples under
 * a mask, a pixel list and nodata values, the way back to raster positions,
 * the NaN copy and the flags, against loops written here; the nodata
 * check's refusals. */
#include "imgstat/imgstat.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 13
#define H 7
#define STRIDE 40 /* bytes: rows padded (W * 2 = 26) */

/* A 2-channel u16 image with padded rows, its mask and a pixel list. */
typedef struct fixture {
  unsigned char buf[2][H * STRIDE];
  imgstat_image img;
  uint8_t mask[W * H];
  uint32_t pixels[W * H];
  uint64_t npixels;
} fixture;

static void make(fixture *f) {
  memset(f, 0, sizeof *f);
  uint32_t seed = 7;
  for (int c = 0; c < 2; c++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        seed = seed * 1103515245u + 12345u;
        uint16_t v = (uint16_t)((seed >> 16) % 5); /* many repeats */
        memcpy(f->buf[c] + y * STRIDE + 2 * x, &v, 2);
      }
  void *planes[2] = {f->buf[0], f->buf[1]};
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_wrap(&f->img, W, H, 2, IMGSTAT_U16, planes, STRIDE, &err),
      IMGSTAT_OK);
  for (int i = 0; i < W * H; i++) {
    f->mask[i] = (uint8_t)((i * 7) % 3 != 0 ? 255 : 0);
    if (f->mask[i])
      f->pixels[f->npixels++] = (uint32_t)i;
  }
}

static uint16_t at(const fixture *f, int c, int i) {
  uint16_t v;
  memcpy(&v, f->buf[c] + (i / W) * STRIDE + 2 * (i % W), 2);
  return v;
}

/* The compaction of channel c under v against the loop: values, order,
 * positions, nodata count. */
static void check_compact(const fixture *f, const imgstat_valid *v, int c,
                          const uint8_t *inside) {
  imgstat_image part;
  uint64_t nodata = 99;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(
      imgstat_valid_compact(&f->img, c, v, &part, &nodata, &err), IMGSTAT_OK);
  uint64_t k = 0, nd = 0;
  for (int i = 0; i < W * H; i++) {
    if (!inside[i])
      continue;
    uint16_t s = at(f, c, i);
    if (v->has_nodata[c] && s == (uint16_t)v->nodata[c]) {
      nd++;
      continue;
    }
    CU_ASSERT_FATAL(k < part.width);
    CU_ASSERT_EQUAL(((const uint16_t *)part.planes[0])[k], s);
    CU_ASSERT_EQUAL(imgstat_valid_raster_index(&f->img, c, v, k), (uint64_t)i);
    k++;
  }
  CU_ASSERT_EQUAL(part.width, k);
  CU_ASSERT_EQUAL(part.height, k ? 1u : 0u);
  CU_ASSERT_EQUAL(nodata, nd);
  CU_ASSERT_EQUAL(imgstat_valid_raster_index(&f->img, c, v, UINT64_MAX),
                  UINT64_MAX);
  /* the flags: exactly the valid samples */
  uint8_t flags[W * H];
  CU_ASSERT_EQUAL(imgstat_valid_flags(&f->img, c, v, flags, &err), IMGSTAT_OK);
  for (int i = 0; i < W * H; i++) {
    int valid = inside[i] &&
                !(v->has_nodata[c] && at(f, c, i) == (uint16_t)v->nodata[c]);
    CU_ASSERT_EQUAL(flags[i], valid);
  }
  imgstat_image_free(&part);
}

static void test_mask_and_nodata(void) {
  fixture *f = malloc(sizeof *f);
  make(f);
  uint8_t all[W * H];
  memset(all, 1, sizeof all);
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  CU_ASSERT(!imgstat_valid_active(&v, 2));
  check_compact(f, &v, 0, all); /* nothing left out: every sample */
  v.has_nodata[1] = 1;
  v.nodata[1] = 3;
  CU_ASSERT(imgstat_valid_active(&v, 2));
  CU_ASSERT(!imgstat_valid_active(&v, 1)); /* channel 1 is not there */
  check_compact(f, &v, 0, all);
  check_compact(f, &v, 1, all);
  v.mask = f->mask;
  check_compact(f, &v, 0, f->mask);
  check_compact(f, &v, 1, f->mask);
  /* the same region as a pixel list */
  imgstat_valid l = v;
  l.mask = NULL;
  l.pixels = f->pixels;
  l.npixels = f->npixels;
  check_compact(f, &l, 0, f->mask);
  check_compact(f, &l, 1, f->mask);
  /* everything nodata: an empty plane */
  uint8_t none[W * H];
  memset(none, 0, sizeof none);
  v.mask = none;
  check_compact(f, &v, 0, none);
  free(f);
}

static void test_float(void) {
  float px[6] = {1.5f, -0.0f, NAN, 0.0f, 2.5f, INFINITY};
  imgstat_image img;
  void *planes[1] = {px};
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_wrap(&img, 3, 2, 1, IMGSTAT_F32, planes, 0, &err),
      IMGSTAT_OK);
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  v.has_nodata[0] = 1;
  v.nodata[0] = 0.0; /* -0 equals +0; NaN and Inf stay samples */
  imgstat_image part;
  uint64_t nd = 0;
  CU_ASSERT_EQUAL_FATAL(imgstat_valid_compact(&img, 0, &v, &part, &nd, &err),
                        IMGSTAT_OK);
  CU_ASSERT_EQUAL(nd, 2);
  CU_ASSERT_EQUAL_FATAL(part.width, 4);
  const float *p = part.planes[0];
  CU_ASSERT(p[0] == 1.5f && isnan(p[1]) && p[2] == 2.5f && isinf(p[3]));
  CU_ASSERT_EQUAL(imgstat_valid_raster_index(&img, 0, &v, 1), 2);
  CU_ASSERT_EQUAL(imgstat_valid_raster_index(&img, 0, &v, 3), 5);
  imgstat_image_free(&part);
  /* the NaN copy: the valid samples in place, NaN elsewhere */
  imgstat_image copy;
  CU_ASSERT_EQUAL_FATAL(imgstat_valid_nan_copy(&img, &v, &copy, &err),
                        IMGSTAT_OK);
  const float *q = copy.planes[0];
  CU_ASSERT(q[0] == 1.5f && isnan(q[1]) && isnan(q[2]) && isnan(q[3]) &&
            q[4] == 2.5f && isinf(q[5]));
  imgstat_image_free(&copy);
  /* a nodata value that is not a float: refused */
  v.nodata[0] = 0.1;
  CU_ASSERT_EQUAL(imgstat_valid_compact(&img, 0, &v, &part, &nd, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT(strstr(err.message, "not a float32 value") != NULL);
}

static void test_check_nodata(void) {
  imgstat_error err = {0};
  CU_ASSERT_EQUAL(imgstat_valid_check_nodata(255, IMGSTAT_U8, &err),
                  IMGSTAT_OK);
  CU_ASSERT_EQUAL(imgstat_valid_check_nodata(65535, IMGSTAT_U16, &err),
                  IMGSTAT_OK);
  CU_ASSERT_EQUAL(imgstat_valid_check_nodata(NAN, IMGSTAT_F32, &err),
                  IMGSTAT_OK);
  CU_ASSERT_EQUAL(imgstat_valid_check_nodata(-9999, IMGSTAT_F32, &err),
                  IMGSTAT_OK);
  CU_ASSERT_EQUAL(imgstat_valid_check_nodata(300, IMGSTAT_U8, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_STRING_EQUAL(err.message, "nodata 300 is not a 8-bit sample (an "
                                      "integer 0 to 255, compared exactly)");
  CU_ASSERT_EQUAL(imgstat_valid_check_nodata(1.5, IMGSTAT_U16, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_valid_check_nodata(-1, IMGSTAT_U16, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_valid_check_nodata(NAN, IMGSTAT_U8, &err),
                  IMGSTAT_ERR_ARG);
}

/* The one-pass CPU reduction (imgstat_cpu_valid_stats) against loops
 * written here: count, sums, the extrema and the first raster position of
 * each, the nodata samples inside the mask; on u8 and u16 planes with
 * padded rows, rows wider than the scan's block (4096) and of one sample,
 * nodata at the smallest or largest value, masks, no valid sample at all;
 * the same on 1 and 3 threads. */
static void one_pass_case(uint32_t w, uint32_t h, imgstat_sample sample,
                          int channels, int with_mask, uint32_t seed) {
  size_t stride = (size_t)w * sample + 6;
  unsigned char *buf = calloc((size_t)channels, stride * h);
  uint8_t *mask = malloc((size_t)w * h);
  CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
  CU_ASSERT_PTR_NOT_NULL_FATAL(mask);
  void *planes[4];
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  for (int c = 0; c < channels; c++) {
    planes[c] = buf + (size_t)c * stride * h;
    /* channel 0: few values, nodata the smallest; 1: nodata the largest;
     * 2: every sample nodata; 3: no nodata value */
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = seed >> 8;
        unsigned val = c == 2 ? 9 : sample == IMGSTAT_U8 ? r % 256 : r % 65536;
        if (c == 0)
          val %= 6;
        unsigned char *row = (unsigned char *)planes[c] + y * stride;
        if (sample == IMGSTAT_U8)
          row[x] = (unsigned char)val;
        else {
          uint16_t u = (uint16_t)val;
          memcpy(row + 2 * x, &u, 2);
        }
      }
    v.has_nodata[c] = c < 3;
    v.nodata[c] = c == 0   ? 0
                  : c == 1 ? (sample == IMGSTAT_U8 ? 255 : 65535)
                           : 9;
  }
  for (uint32_t i = 0; i < w * h; i++) {
    seed = seed * 1103515245u + 12345u;
    mask[i] = (seed >> 16) % 3 != 0 ? (uint8_t)(1 + (seed >> 20) % 200) : 0;
  }
  v.mask = with_mask ? mask : NULL;
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_wrap(&img, w, h, channels, sample, planes, stride, &err),
      IMGSTAT_OK);
  for (int threads = 1; threads <= 3; threads += 2) {
    imgstat_partial p[4];
    uint64_t nodata[4];
    CU_ASSERT_EQUAL_FATAL(
        imgstat_cpu_valid_stats(&img, &v, threads, p, nodata, &err),
        IMGSTAT_OK);
    for (int c = 0; c < channels; c++) {
      uint64_t count = 0, sum = 0, sumsq = 0, nd = 0;
      uint64_t lo_at = UINT64_MAX, hi_at = UINT64_MAX;
      unsigned lo = 0, hi = 0;
      for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
          uint64_t i = (uint64_t)y * w + x;
          if (with_mask && !mask[i])
            continue;
          const unsigned char *row =
              (const unsigned char *)planes[c] + y * stride;
          unsigned s;
          if (sample == IMGSTAT_U8)
            s = row[x];
          else {
            uint16_t u;
            memcpy(&u, row + 2 * x, 2);
            s = u;
          }
          if (v.has_nodata[c] && s == (unsigned)v.nodata[c]) {
            nd++;
            continue;
          }
          if (count == 0 || s < lo) {
            lo = s;
            lo_at = i;
          }
          if (count == 0 || s > hi) {
            hi = s;
            hi_at = i;
          }
          count++;
          sum += s;
          sumsq += (uint64_t)s * s;
        }
      CU_ASSERT_EQUAL(p[c].count, count);
      CU_ASSERT_EQUAL(p[c].sum, sum);
      CU_ASSERT_EQUAL(p[c].sumsq, sumsq);
      CU_ASSERT_EQUAL(nodata[c], nd);
      CU_ASSERT_EQUAL(p[c].min_index, lo_at);
      CU_ASSERT_EQUAL(p[c].max_index, hi_at);
      if (count) {
        CU_ASSERT_EQUAL(p[c].min, (double)lo);
        CU_ASSERT_EQUAL(p[c].max, (double)hi);
      } else {
        CU_ASSERT(isinf(p[c].min) && p[c].min > 0);
        CU_ASSERT(isinf(p[c].max) && p[c].max < 0);
      }
      CU_ASSERT_EQUAL(p[c].nan_count, 0);
    }
  }
  free(buf);
  free(mask);
}

static void test_one_pass(void) {
  static const uint32_t sizes[][2] = {{1, 1},    {1, 37},   {13, 7},
                                      {4097, 3}, {9000, 2}, {300, 301}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (int m = 0; m < 2; m++) {
      one_pass_case(sizes[k][0], sizes[k][1], IMGSTAT_U8, 4, m,
                    11u + (uint32_t)k);
      one_pass_case(sizes[k][0], sizes[k][1], IMGSTAT_U16, 4, m,
                    5u + (uint32_t)k);
    }
  /* float images and pixel lists are not its to take */
  float f[4] = {1, 2, 3, 4};
  void *planes[1] = {f};
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_wrap(&img, 2, 2, 1, IMGSTAT_F32, planes, 0, &err),
      IMGSTAT_OK);
  imgstat_partial p[1];
  uint64_t nd[1];
  CU_ASSERT_EQUAL(imgstat_cpu_valid_stats(&img, NULL, 1, p, nd, &err),
                  IMGSTAT_ERR_UNSUPPORTED);
  fixture *fx = malloc(sizeof *fx);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fx);
  make(fx);
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  v.pixels = fx->pixels;
  v.npixels = fx->npixels;
  imgstat_partial q[2];
  uint64_t nq[2];
  CU_ASSERT_EQUAL(imgstat_cpu_valid_stats(&fx->img, &v, 1, q, nq, &err),
                  IMGSTAT_ERR_UNSUPPORTED);
  free(fx);
}

static const test_case tests[] = {
    {"valid samples", NULL},
    {"mask, pixel list and nodata: compaction, positions, flags",
     test_mask_and_nodata},
    {"float: -0, NaN, Inf; the NaN copy", test_float},
    {"nodata values a sample type can hold", test_check_nodata},
    {"one pass over 8- and 16-bit planes on threads", test_one_pass},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
