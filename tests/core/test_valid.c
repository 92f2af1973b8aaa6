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

static const test_case tests[] = {
    {"valid samples", NULL},
    {"mask, pixel list and nodata: compaction, positions, flags",
     test_mask_and_nodata},
    {"float: -0, NaN, Inf; the NaN copy", test_float},
    {"nodata values a sample type can hold", test_check_nodata},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
