/* The image model: allocation limits, overflow checks, names. */
#include "imgstat/imgstat.h"
#include "io.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <string.h>

static int is_empty(const imgstat_image *img) {
  imgstat_image zero;
  memset(&zero, 0, sizeof zero);
  return memcmp(img, &zero, sizeof zero) == 0;
}

static void test_alloc_planes(void) {
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_alloc(&img, 7, 5, 3, IMGSTAT_U16, 0, &err), IMGSTAT_OK);
  CU_ASSERT_EQUAL(img.width, 7);
  CU_ASSERT_EQUAL(img.height, 5);
  CU_ASSERT_EQUAL(img.channels, 3);
  CU_ASSERT_EQUAL(imgstat_image_plane_bytes(&img), 7 * 5 * 2);
  CU_ASSERT_PTR_EQUAL(img.planes[0], img.data);
  CU_ASSERT_PTR_EQUAL(img.planes[1], (char *)img.data + 70);
  CU_ASSERT_PTR_EQUAL(img.planes[2], (char *)img.data + 140);
  CU_ASSERT_PTR_NULL(img.planes[3]);
  memset(img.data, 0xAB, 3 * 70); /* the whole allocation is writable */
  imgstat_image_free(&img);
  CU_ASSERT(is_empty(&img));
  imgstat_image_free(&img); /* twice is safe */
  imgstat_image_free(NULL);
  CU_ASSERT_EQUAL(imgstat_image_plane_bytes(&img), 0);
  CU_ASSERT_EQUAL(imgstat_image_plane_bytes(NULL), 0);
}

static void test_alloc_limits(void) {
  imgstat_image img;
  imgstat_error err = {0};
  /* Over the default limit (2^30): refused with a message naming the
   * option, before any allocation. */
  CU_ASSERT_EQUAL(
      imgstat_image_alloc(&img, 100000, 100000, 3, IMGSTAT_U8, 0, &err),
      IMGSTAT_ERR_LIMIT);
  CU_ASSERT_STRING_EQUAL(err.message,
                         "image is 100000x100000 = 10000000000 pixels, over "
                         "the limit of 1073741824 (max_pixels)");
  /* the cause, for a front end to word (no option names in the message) */
  CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_MAX_PIXELS);
  CU_ASSERT_EQUAL(err.limit, UINT64_C(1073741824));
  CU_ASSERT_EQUAL(err.value, UINT64_C(10000000000));
  CU_ASSERT_STRING_EQUAL(imgstat_cause_name(err.cause), "max_pixels");
  CU_ASSERT_PTR_NULL(strstr(err.message, "--"));
  CU_ASSERT(is_empty(&img));

  /* An explicit limit: exactly at it is fine, one more pixel is not. */
  CU_ASSERT_EQUAL(imgstat_image_alloc(&img, 10, 10, 1, IMGSTAT_U8, 100, &err),
                  IMGSTAT_OK);
  imgstat_image_free(&img);
  CU_ASSERT_EQUAL(imgstat_image_alloc(&img, 101, 1, 1, IMGSTAT_U8, 100, &err),
                  IMGSTAT_ERR_LIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "limit of 100 (max_pixels)"));
  CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_MAX_PIXELS);
  CU_ASSERT_EQUAL(err.limit, 100);
  CU_ASSERT_EQUAL(err.value, 101);
  /* a later error without a cause clears it */
  imgstat_error_set(&err, IMGSTAT_ERR_ARG, "x");
  CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_NONE);
  CU_ASSERT_EQUAL(err.limit, 0);

  /* 65536x65536x4 float is 2^32 pixels, 64 GiB: over the default. */
  CU_ASSERT_EQUAL(
      imgstat_image_alloc(&img, 65536, 65536, 4, IMGSTAT_F32, 0, &err),
      IMGSTAT_ERR_LIMIT);
  /* Over the hard limit of 2^32 pixels even when --max-pixels allows it;
   * the largest sizes do not overflow the pixel count. */
  CU_ASSERT_EQUAL(
      imgstat_image_alloc(&img, 65536, 65537, 1, IMGSTAT_U8, UINT64_MAX, &err),
      IMGSTAT_ERR_LIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "largest supported size"));
  CU_ASSERT_EQUAL(imgstat_image_alloc(&img, UINT32_MAX, UINT32_MAX, 4,
                                      IMGSTAT_F32, UINT64_MAX, &err),
                  IMGSTAT_ERR_LIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "4294967295x4294967295"));
  CU_ASSERT(is_empty(&img));
}

static void test_alloc_bad_arguments(void) {
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL(imgstat_image_alloc(&img, 0, 5, 1, IMGSTAT_U8, 0, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_image_alloc(&img, 5, 0, 1, IMGSTAT_U8, 0, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_image_alloc(&img, 5, 5, 0, IMGSTAT_U8, 0, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(imgstat_image_alloc(&img, 5, 5, IMGSTAT_MAX_CHANNELS + 1,
                                      IMGSTAT_U8, 0, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT_EQUAL(
      imgstat_image_alloc(&img, 5, 5, 1, (imgstat_sample)3, 0, &err),
      IMGSTAT_ERR_ARG);
  CU_ASSERT(is_empty(&img));
  CU_ASSERT_EQUAL(imgstat_image_alloc(NULL, 5, 5, 1, IMGSTAT_U8, 0, NULL),
                  IMGSTAT_ERR_ARG);
}

static void test_size_mul(void) {
  size_t out = 7;
  CU_ASSERT(ist_size_mul(0, SIZE_MAX, &out) && out == 0);
  CU_ASSERT(ist_size_mul(SIZE_MAX, 1, &out) && out == SIZE_MAX);
  CU_ASSERT(ist_size_mul(SIZE_MAX / 4, 4, &out));
  out = 7;
  CU_ASSERT(!ist_size_mul(SIZE_MAX / 4 + 1, 4, &out));
  CU_ASSERT(!ist_size_mul(SIZE_MAX / 2 + 1, 2, &out));
  CU_ASSERT(!ist_size_mul((size_t)1 << (sizeof(size_t) * 4),
                          (size_t)1 << (sizeof(size_t) * 4), &out));
  CU_ASSERT_EQUAL(out, 7); /* untouched on overflow */
}

static void test_split(void) {
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(imgstat_image_alloc(&img, 4, 2, 3, IMGSTAT_U8, 0, &err),
                        IMGSTAT_OK);
  memset(img.data, 0, 24);
  const uint8_t row[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  ist_pixels_split(&img, row, 1, 0, 4, 1); /* second row */
  const uint8_t *r = img.planes[0], *g = img.planes[1], *b = img.planes[2];
  CU_ASSERT(r[4] == 1 && g[4] == 2 && b[4] == 3 && r[7] == 10 && b[7] == 12);
  CU_ASSERT(r[0] == 0 && r[3] == 0);
  const uint8_t two[6] = {21, 22, 23, 31, 32, 33};
  ist_pixels_split(&img, two, 0, 1, 2, 2); /* x = 1 and 3 of row 0 */
  CU_ASSERT(r[1] == 21 && g[1] == 22 && b[3] == 33 && r[2] == 0);
  imgstat_image_free(&img);

  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_alloc(&img, 2, 1, 2, IMGSTAT_F32, 0, &err), IMGSTAT_OK);
  const float fv[4] = {1.5f, -2.0f, 3.25f, 4.0f};
  ist_pixels_split(&img, fv, 0, 0, 2, 1);
  CU_ASSERT(((float *)img.planes[0])[1] == 3.25f);
  CU_ASSERT(((float *)img.planes[1])[0] == -2.0f);
  imgstat_image_free(&img);
}

static void test_names(void) {
  CU_ASSERT_STRING_EQUAL(imgstat_layout_name(1), "Y");
  CU_ASSERT_STRING_EQUAL(imgstat_layout_name(2), "YA");
  CU_ASSERT_STRING_EQUAL(imgstat_layout_name(3), "RGB");
  CU_ASSERT_STRING_EQUAL(imgstat_layout_name(4), "RGBA");
  CU_ASSERT_STRING_EQUAL(imgstat_layout_name(0), "?");
  CU_ASSERT_STRING_EQUAL(imgstat_layout_name(5), "5-band");
  CU_ASSERT_STRING_EQUAL(imgstat_layout_name(13), "13-band");
  CU_ASSERT_STRING_EQUAL(imgstat_layout_name(IMGSTAT_MAX_CHANNELS + 1), "?");
  CU_ASSERT_STRING_EQUAL(imgstat_channel_name(13, 0), "1");
  CU_ASSERT_STRING_EQUAL(imgstat_channel_name(13, 12), "13");
  CU_ASSERT_STRING_EQUAL(imgstat_channel_name(13, 13), "?");
  const char *want[4][4] = {
      {"Y"}, {"Y", "A"}, {"R", "G", "B"}, {"R", "G", "B", "A"}};
  for (int n = 1; n <= 4; n++)
    for (int c = 0; c < n; c++)
      CU_ASSERT_STRING_EQUAL(imgstat_channel_name(n, c), want[n - 1][c]);
  CU_ASSERT_STRING_EQUAL(imgstat_channel_name(3, 3), "?");
  CU_ASSERT_STRING_EQUAL(imgstat_channel_name(3, -1), "?");
  CU_ASSERT_EQUAL(imgstat_sample_depth(IMGSTAT_U8), 8);
  CU_ASSERT_EQUAL(imgstat_sample_depth(IMGSTAT_U16), 16);
  CU_ASSERT_EQUAL(imgstat_sample_depth(IMGSTAT_F32), 32);
}

static const test_case tests[] = {
    {"image", NULL},
    {"alloc lays out planes; free twice", test_alloc_planes},
    {"alloc limits and their messages", test_alloc_limits},
    {"alloc refuses bad arguments", test_alloc_bad_arguments},
    {"overflow-checked multiply", test_size_mul},
    {"interleaved to planes", test_split},
    {"channel and layout names", test_names},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
