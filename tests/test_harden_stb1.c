/*
 * Hardening of the stb_image formats (issue 7): short reads reported and no
 * stale memory handed back. Every input is built here, byte by byte.
 */
#include "imgstat.h"
#include "load_internal.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASSERT_MSG(cond, msg)                                                  \
  CU_assertImplementation((cond) ? CU_TRUE : CU_FALSE, __LINE__, (msg),        \
                          __FILE__, "", CU_FALSE)

/* ---- building inputs ----------------------------------------------------- */

typedef struct buf {
  unsigned char *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *data, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    CU_ASSERT_FATAL(b->p != NULL);
  }
  memcpy(b->p + b->n, data, n);
  b->n += n;
}

static void put_byte(buf *b, int v, size_t count) {
  unsigned char c = (unsigned char)v;
  while (count--)
    put(b, &c, 1);
}

static void put_le16(buf *b, unsigned v) {
  unsigned char c[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  put(b, c, 2);
}

/* A TGA header: no ID, no palette, top-down. type 2 RGB, 3 gray, +8 RLE. */
static void tga_header(buf *b, int type, unsigned w, unsigned h, int bits) {
  unsigned char head[12] = {0, 0, (unsigned char)type};
  put(b, head, sizeof head);
  put_le16(b, w);
  put_le16(b, h);
  put_byte(b, bits, 1);
  put_byte(b, 0x20, 1);
}

/* ---- loading --------------------------------------------------------------
 */

static imgstat_status load(const buf *b, const imgstat_load_options *opts,
                           imgstat_image *img, imgstat_error *err) {
  memset(err, 0, sizeof *err);
  return imgstat_image_load_memory(b->p, b->n, opts, img, err);
}

/* Loading b (its first n bytes) fails with status and a message that
 * contains want. */
static void expect_refused(const buf *b, size_t n, imgstat_status status,
                           const char *want, const char *what) {
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s = imgstat_image_load_memory(b->p, n, NULL, &img, &err);
  char msg[1400];
  snprintf(msg, sizeof msg, "%s: status %d, message '%s' (want %d '%s')", what,
           (int)s, err.message, (int)status, want);
  ASSERT_MSG(s == status && strstr(err.message, want), msg);
  ASSERT_MSG(img.data == NULL && img.width == 0, msg);
  imgstat_image_free(&img);
}

static void expect_loads(const buf *b, const imgstat_load_options *opts,
                         uint32_t w, uint32_t h, int channels,
                         const char *what) {
  imgstat_image img;
  imgstat_error err;
  imgstat_status s = load(b, opts, &img, &err);
  char msg[1400];
  snprintf(msg, sizeof msg, "%s: status %d, message '%s'", what, (int)s,
           err.message);
  ASSERT_MSG(s == IMGSTAT_OK, msg);
  if (s == IMGSTAT_OK)
    ASSERT_MSG(img.width == w && img.height == h && img.channels == channels,
               msg);
  imgstat_image_free(&img);
}

/* ---- short reads and stale memory ---------------------------------------- */

/* A 128x2 gray uncompressed TGA: stb reads each row of 128 bytes with
 * stbi__getn, and the second row straight from the input (its buffer is
 * empty by then), a read of exactly 128 bytes. Cut 64 bytes into that row,
 * the short read was taken for the end of a buffer refill, and the missing
 * half row came back as whatever the heap held: here, the pixels of the
 * image decoded just before. */
static void tga_128x2(buf *b, size_t data_bytes, int value) {
  tga_header(b, 3, 128, 2, 8);
  put_byte(b, value, data_bytes);
}

static void test_tga_truncated_no_stale_bytes(void) {
  buf full = {0}, cut = {0};
  tga_128x2(&full, 256, 0xAB);
  tga_128x2(&cut, 128 + 64, 0x07);
  for (int round = 0; round < 3; round++) {
    imgstat_image img;
    imgstat_error err;
    CU_ASSERT_EQUAL_FATAL(load(&full, NULL, &img, &err), IMGSTAT_OK);
    CU_ASSERT_EQUAL(((const uint8_t *)img.planes[0])[255], 0xAB);
    imgstat_image_free(&img);
    expect_refused(&cut, cut.n, IMGSTAT_ERR_FORMAT, "truncated",
                   "TGA cut 64 bytes into its last row");
  }
  /* Every cut of uncompressed, run-length and 16-bit TGAs is refused. */
  buf rle = {0}, rgb16 = {0};
  tga_header(&rle, 10, 200, 3, 24);
  for (int i = 0; i < 20; i++) {
    put_byte(&rle, 0x1D, 1); /* a raw packet of 30 pixels */
    for (int k = 0; k < 90; k++)
      put_byte(&rle, i + k, 1);
  }
  tga_header(&rgb16, 2, 30, 3, 16);
  put_byte(&rgb16, 0x5A, 30 * 3 * 2);
  const buf *all[] = {&full, &rle, &rgb16};
  for (size_t i = 0; i < 3; i++) {
    expect_loads(all[i], NULL, all[i]->p[12], all[i]->p[14],
                 all[i] == &full ? 1 : 3, "complete TGA");
    for (size_t n = 18; n < all[i]->n; n++) {
      char what[64];
      snprintf(what, sizeof what, "TGA %zu cut to %zu bytes", i, n);
      expect_refused(all[i], n, IMGSTAT_ERR_FORMAT, "truncated", what);
    }
  }
  free(full.p);
  free(cut.p);
  free(rle.p);
  free(rgb16.p);
}

/* The callbacks alone: a file that is shorter than the size the loader was
 * given (one that shrank after it was measured) passes every check on the
 * size, and the short 128-byte read must still be caught. */
static void test_short_read_reported(void) {
  buf cut = {0};
  tga_128x2(&cut, 128 + 64, 0x07);
  FILE *f = tmpfile();
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT_FATAL(fwrite(cut.p, 1, cut.n, f) == cut.n);
  rewind(f);
  imgstat_source src = {0};
  src.file = f;
  src.size = 18 + 256; /* what the header needs */
  imgstat_limits lim = {IMGSTAT_DEFAULT_MAX_PIXELS, IMGSTAT_DEFAULT_MAX_MEMORY};
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s =
      imgstat_stb_decode(&src, IMGSTAT_KIND_UNKNOWN, &lim, &img, &err);
  ASSERT_MSG(s == IMGSTAT_ERR_FORMAT &&
                 strcmp(err.message, "file is truncated") == 0,
             err.message);
  if (s == IMGSTAT_OK)
    imgstat_image_free(&img);
  fclose(f);
  free(cut.p);
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("harden_stb1", NULL, NULL);
  CU_add_test(s, "TGA: truncated files refused, no stale bytes",
              test_tga_truncated_no_stale_bytes);
  CU_add_test(s, "a short read of exactly 128 bytes is reported",
              test_short_read_reported);
  return test_run_all();
}
