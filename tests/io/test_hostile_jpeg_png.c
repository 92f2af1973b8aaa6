/*
 * Regression tests for the JPEG and PNG decoders' defects found by
 * a hostile-input review: a JPEG without a frame, a progressive JPEG of
 * thousands of scans, a tiny JPEG (CMYK too) claiming a huge size or missing
 * a component's scans, CMYK and YCCK made RGB as stb_image does, and PNG
 * ancillary chunks that declare 2 GB. Every input is built here.
 */
#include "imgstat/imgstat.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#ifdef IMGSTAT_HAVE_TURBOJPEG
#include <turbojpeg.h>
/* stb_image's own conversion code is the reference for CMYK and YCCK. */
#define STBI_ONLY_JPEG
#include "stb_ref.h"
#endif

/* ---- helpers ------------------------------------------------------------ */

/* Loads from memory; returns the status, the message in msg. */
static imgstat_status load(const test_buf *b, const imgstat_load_options *opts,
                           char *msg, size_t size) {
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s = imgstat_image_load_memory(b->p, b->n, opts, &img, &err);
  snprintf(msg, size, "%s", err.message);
  if (s == IMGSTAT_OK)
    imgstat_image_free(&img);
  return s;
}

/* ---- PNG ---------------------------------------------------------------- */

static void png_chunk(test_buf *b, const char *type, const void *data,
                      uint32_t len) {
  test_put_be32(b, len);
  size_t at = b->n;
  test_put(b, type, 4);
  test_put(b, data, len);
  test_put_be32(b, (uint32_t)crc32(0, b->p + at, (uInt)(len + 4)));
}

static void png_start(test_buf *b, uint32_t width, uint32_t height) {
  static const unsigned char sig[8] = {0x89, 'P',  'N',  'G',
                                       0x0D, 0x0A, 0x1A, 0x0A};
  test_put(b, sig, sizeof sig);
  unsigned char ihdr[13] = {0};
  for (int i = 0; i < 4; i++) {
    ihdr[i] = (unsigned char)(width >> (24 - 8 * i));
    ihdr[4 + i] = (unsigned char)(height >> (24 - 8 * i));
  }
  ihdr[8] = 8; /* 8-bit gray */
  png_chunk(b, "IHDR", ihdr, sizeof ihdr);
}

/* The rows of a width x height 8-bit gray image (filter byte 0, then
 * samples: zeros, or a pattern) compressed into one IDAT, and IEND. */
static void png_finish(test_buf *b, uint32_t width, uint32_t height,
                       int zeros) {
  size_t raw_size = (size_t)height * (1 + width);
  unsigned char *raw = calloc(raw_size, 1);
  uLongf zsize = compressBound((uLong)raw_size);
  unsigned char *z = malloc(zsize);
  CU_ASSERT_FATAL(raw && z);
  for (size_t i = 0; i < raw_size; i++)
    raw[i] = i % (1 + width) && !zeros ? (unsigned char)(i * 7) : 0;
  CU_ASSERT_FATAL(compress2(z, &zsize, raw, (uLong)raw_size, 9) == Z_OK);
  png_chunk(b, "IDAT", z, (uint32_t)zsize);
  png_chunk(b, "IEND", NULL, 0);
  free(raw);
  free(z);
}

/* An 81-byte PNG whose ancillary chunk declares 2^31 - 1 bytes made libpng
 * allocate and zero that much (2 GB) before it found the data missing.
 * Every such chunk is now skipped unread: the decode fails at once, on the
 * truncation, in little memory. The bound (256 MiB) is far below the 2 GB, far
 * above what the decode takes (2 MB; 50 MB under valgrind). */
static void test_png_huge_ancillary_chunks(void) {
  static const char *types[] = {"tEXt", "zTXt", "iTXt", "sPLT",
                                "pCAL", "sCAL", "eXIf"};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    test_buf b = {0};
    png_start(&b, 1, 1);
    test_put_be32(&b, 0x7FFFFFFFu);
    test_put(&b, types[t], 4);
    while (b.n < 81)
      test_put_byte(&b, b.n & 1 ? 'a' : 0, 1);
    CU_ASSERT_EQUAL(b.n, 81);
    test_child_load r = test_load_in_child(NULL, b.p, b.n, NULL, 60, 0);
    char what[IMGSTAT_ERROR_MAX + 128];
    snprintf(what, sizeof what, "%s: status %d, %.2f s, peak %ld KiB: %s",
             types[t], r.status, r.seconds, r.maxrss_kib, r.message);
    CU_ASSERT(r.finished);
    CU_ASSERT_EQUAL(r.status, IMGSTAT_ERR_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.message, "truncated"));
    if (r.maxrss_kib >= 256 * 1024 || r.seconds > 20)
      printf("\n  %s\n", what);
    CU_ASSERT(r.maxrss_kib > 0 && r.maxrss_kib < 256 * 1024);
    free(b.p);
  }
}

/* Skipping ancillary chunks keeps a valid file valid, a large chunk costs
 * no memory, and a bad CRC on an ancillary chunk is still only a warning
 * while one on IDAT is an error (the corpus contract). */
static void test_png_skipped_chunks_keep_crc_rules(void) {
  size_t big = 3u << 20;
  unsigned char *text = malloc(big);
  CU_ASSERT_FATAL(text != NULL);
  memset(text, 'x', big);
  memcpy(text, "Comment", 8);

  test_buf b = {0};
  png_start(&b, 5, 3);
  png_chunk(&b, "tEXt", text, (uint32_t)big);
  png_chunk(&b, "gAMA", "\0\0\xb1\x8f", 4);
  png_finish(&b, 5, 3, 0);
  char msg[IMGSTAT_ERROR_MAX];
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(imgstat_image_load_memory(b.p, b.n, NULL, &img, &err),
                        IMGSTAT_OK);
  CU_ASSERT(img.width == 5 && img.height == 3 && img.channels == 1);
  /* Row 1 (after the filter byte of rows 0 and 1), column 2. */
  CU_ASSERT_EQUAL(((unsigned char *)img.planes[0])[5 + 2],
                  (unsigned char)((6 + 1 + 2) * 7));
  imgstat_image_free(&img);

  /* The tEXt CRC is the last 4 bytes of its chunk. */
  size_t text_crc = 8 + 25 + 8 + big;
  b.p[text_crc] ^= 0x55;
  CU_ASSERT_EQUAL(load(&b, NULL, msg, sizeof msg), IMGSTAT_OK);
  b.p[text_crc] ^= 0x55;
  /* The IDAT CRC: 12 bytes before the end come IEND's 12. */
  b.p[b.n - 12 - 1] ^= 0x55;
  CU_ASSERT_EQUAL(load(&b, NULL, msg, sizeof msg), IMGSTAT_ERR_FORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "CRC"));
  free(b.p);
  free(text);
}

/* libpng checks that IHDR comes first in the handlers of the chunks it
 * reads: a tEXt chunk before IHDR was refused there, and still is now that
 * tEXt is skipped; so is an unknown one, which libpng lets pass. */
static void test_png_ihdr_first(void) {
  const char *types[] = {"tEXt", "abCd"};
  for (int t = 0; t < 2; t++) {
    test_buf b = {0};
    png_start(&b, 3, 2);
    test_buf moved = {0};
    test_put(&moved, b.p, 8);
    png_chunk(&moved, types[t], "k\0v", 3);
    test_put(&moved, b.p + 8, b.n - 8);
    png_finish(&moved, 3, 2, 0);
    png_finish(&b, 3, 2, 0);
    char msg[IMGSTAT_ERROR_MAX];
    CU_ASSERT_EQUAL(load(&b, NULL, msg, sizeof msg), IMGSTAT_OK);
    CU_ASSERT_EQUAL(load(&moved, NULL, msg, sizeof msg), IMGSTAT_ERR_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "IHDR"));
    free(b.p);
    free(moved.p);
  }
}

/* The PNG size bound (src/load_png.c: deflate makes at most 1032 bytes of
 * 2 bits): a header claiming 65535 x 65535 gray pixels in a file of a few
 * dozen bytes is refused as truncated before anything is allocated, even
 * where the size and memory limits would allow it. */
static void test_png_min_input(void) {
  test_buf b = {0};
  png_start(&b, 65535, 65535);
  png_finish(&b, 2, 2, 0); /* a token IDAT */
  imgstat_load_options opts = {.max_pixels = UINT64_C(1) << 32,
                               .max_memory = UINT64_MAX};
  char msg[IMGSTAT_ERROR_MAX];
  CU_ASSERT_EQUAL(load(&b, &opts, msg, sizeof msg), IMGSTAT_ERR_FORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "header claims 65535x65535"));
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "truncated or corrupt"));
  test_child_load r = test_load_in_child(NULL, b.p, b.n, &opts, 60, 0);
  CU_ASSERT_EQUAL(r.status, IMGSTAT_ERR_FORMAT);
  CU_ASSERT(r.maxrss_kib > 0 && r.maxrss_kib < 256 * 1024);
  free(b.p);

  /* Near the bound: zlib's best on 4096 x 4096 zeros is about 1030:1, and
   * the file loads. */
  b = (test_buf){0};
  png_start(&b, 4096, 4096);
  png_finish(&b, 4096, 4096, 1);
  CU_ASSERT(b.n < 8 + 25 + 12 + 12 + 6 + 4096u * 4097 / 1000);
  CU_ASSERT_EQUAL(load(&b, NULL, msg, sizeof msg), IMGSTAT_OK);
  free(b.p);
}

#ifdef IMGSTAT_HAVE_TURBOJPEG

/* ---- JPEG --------------------------------------------------------------- */

/* Builds JPEGs whose blocks are all flat: each Huffman table has a single
 * 1-bit code, for symbol 0 (a DC difference of 0; an AC end of block), so a
 * sequential block costs 2 bits and a block of a progressive DC scan 1. */
typedef struct jpeg_frame {
  int marker; /* 0xC0 sequential, 0xC2 progressive */
  uint32_t width, height;
  int ncomp;
  int h[4], v[4];
} jpeg_frame;

static void jpeg_tables(test_buf *b, int adobe_transform) {
  test_put_be16(b, 0xFFD8);
  if (adobe_transform >= 0) {
    static const unsigned char adobe[12] = {'A', 'd', 'o', 'b', 'e', 0,
                                            100, 0,   0,   0,   0,   0};
    test_put_be16(b, 0xFFEE);
    test_put_be16(b, 2 + sizeof adobe);
    test_put(b, adobe, sizeof adobe - 1);
    test_put_byte(b, (unsigned)adobe_transform, 1);
  }
  test_put_be16(b, 0xFFDB); /* one quantisation table of ones */
  test_put_be16(b, 2 + 65);
  test_put_byte(b, 0, 1);
  for (int i = 0; i < 64; i++)
    test_put_byte(b, 1, 1);
  test_put_be16(
      b, 0xFFC4); /* DC table 0 and AC table 0: one 1-bit code, symbol 0 */
  test_put_be16(b, 2 + 2 * 18);
  for (int cls = 0; cls < 2; cls++) {
    test_put_byte(b, (unsigned)cls << 4, 1);
    test_put_byte(b, 1, 1);
    for (int i = 1; i < 16; i++)
      test_put_byte(b, 0, 1);
    test_put_byte(b, 0, 1);
  }
}

static void jpeg_sof(test_buf *b, const jpeg_frame *f) {
  test_put_be16(b, 0xFF00 | (unsigned)f->marker);
  test_put_be16(b, 8 + 3 * (unsigned)f->ncomp);
  test_put_byte(b, 8, 1);
  test_put_be16(b, f->height);
  test_put_be16(b, f->width);
  test_put_byte(b, (unsigned)f->ncomp, 1);
  for (int c = 0; c < f->ncomp; c++) {
    test_put_byte(b, (unsigned)c + 1, 1);
    test_put_byte(b, (unsigned)(f->h[c] << 4 | f->v[c]), 1);
    test_put_byte(b, 0, 1);
  }
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* The blocks a scan of these components codes (T.81 A.2). */
static uint64_t scan_blocks(const jpeg_frame *f, const int *comps, int n) {
  int hmax = 1, vmax = 1;
  for (int c = 0; c < f->ncomp; c++) {
    hmax = f->h[c] > hmax ? f->h[c] : hmax;
    vmax = f->v[c] > vmax ? f->v[c] : vmax;
  }
  if (n == 1) {
    int c = comps[0];
    return ceil_div(ceil_div((uint64_t)f->width * f->h[c], hmax), 8) *
           ceil_div(ceil_div((uint64_t)f->height * f->v[c], vmax), 8);
  }
  uint64_t mcus = ceil_div(f->width, 8 * (uint64_t)hmax) *
                  ceil_div(f->height, 8 * (uint64_t)vmax);
  uint64_t per_mcu = 0;
  for (int k = 0; k < n; k++)
    per_mcu += (uint64_t)(f->h[comps[k]] * f->v[comps[k]]);
  return mcus * per_mcu;
}

/* A scan of components comps[0..n) (0-based) with spectral range ss..se and
 * successive approximation ahal, and its entropy-coded data: bits_per_block
 * zero bits for each block, padded with ones. A negative data_bytes writes
 * that data; otherwise data_bytes bytes of it (truncated, or padded with
 * zeros). */
static void jpeg_scan(test_buf *b, const jpeg_frame *f, const int *comps, int n,
                      int ss, int se, int ahal, int bits_per_block,
                      long data_bytes) {
  test_put_be16(b, 0xFFDA);
  test_put_be16(b, 6 + 2 * (unsigned)n);
  test_put_byte(b, (unsigned)n, 1);
  for (int k = 0; k < n; k++) {
    test_put_byte(b, (unsigned)comps[k] + 1, 1);
    test_put_byte(b, 0x00, 1);
  }
  test_put_byte(b, (unsigned)ss, 1);
  test_put_byte(b, (unsigned)se, 1);
  test_put_byte(b, (unsigned)ahal, 1);
  uint64_t bits = scan_blocks(f, comps, n) * (uint64_t)bits_per_block;
  uint64_t bytes = ceil_div(bits, 8);
  uint64_t write = data_bytes < 0 ? bytes : (uint64_t)data_bytes;
  for (uint64_t i = 0; i < write; i++) {
    unsigned byte = 0;
    if (i == bytes - 1 && bits % 8)
      byte = 0xFFu >> (bits % 8); /* the padding ones */
    test_put_byte(b, byte, 1);
  }
}

/* A whole flat JPEG: sequential frames get one interleaved scan, progressive
 * ones one interleaved DC scan (which is all a progressive file must code:
 * libjpeg's encoder checks no more either). */
static void jpeg_flat(test_buf *b, const jpeg_frame *f, int adobe_transform,
                      long data_bytes) {
  jpeg_tables(b, adobe_transform);
  jpeg_sof(b, f);
  int comps[4] = {0, 1, 2, 3};
  if (f->marker == 0xC2)
    jpeg_scan(b, f, comps, f->ncomp, 0, 0, 0, 1, data_bytes);
  else
    jpeg_scan(b, f, comps, f->ncomp, 0, 63, 0, 2, data_bytes);
  test_put_be16(b, 0xFFD9);
}

/* A JPEG of SOI, tables, EOI. TurboJPEG's header call succeeds on
 * such a file without setting the size or colour space, which were then
 * used uninitialised (valgrind shows it; the message showed garbage). */
static void test_jpeg_no_frame(void) {
  for (int with_eoi = 1; with_eoi >= 0; with_eoi--) {
    test_buf b = {0};
    jpeg_tables(&b, -1);
    if (with_eoi)
      test_put_be16(&b, 0xFFD9);
    char msg[IMGSTAT_ERROR_MAX];
    CU_ASSERT_EQUAL(load(&b, NULL, msg, sizeof msg), IMGSTAT_ERR_FORMAT);
    CU_ASSERT_STRING_EQUAL(msg, "Corrupt JPEG data: no frame header (SOF)");
    free(b.p);
  }
}

/* 4096 x 4096 gray, its DC coded in 32 KB, then ac_scans AC scans of 40
 * bytes each, each an end-of-band run of 16384 blocks 16 times over (symbol
 * 0xE0 and 14 zero bits), which costs a pass over 262144 blocks. */
static void jpeg_eob_run_scans(test_buf *b, int ac_scans) {
  const jpeg_frame f = {0xC2, 4096, 4096, 1, {1}, {1}};
  const int comp0 = 0;
  jpeg_tables(b, -1);
  test_put_be16(b, 0xFFC4); /* AC table 0: one 1-bit code, EOB14 */
  test_put_be16(b, 2 + 18);
  test_put_byte(b, 0x10, 1);
  test_put_byte(b, 1, 1);
  for (int i = 1; i < 16; i++)
    test_put_byte(b, 0, 1);
  test_put_byte(b, 0xE0, 1);
  jpeg_sof(b, &f);
  jpeg_scan(b, &f, &comp0, 1, 0, 0, 0, 1, -1);
  for (int k = 0; k < ac_scans; k++) {
    jpeg_scan(b, &f, &comp0, 1, 1, 63, 0, 0, 0);
    for (int i = 0; i < 16 * 15 / 8; i++)
      test_put_byte(b, 0, 1);
  }
  test_put_be16(b, 0xFFD9);
}

/* A progressive JPEG can repeat scans without bound and
 * each costs a pass over the image (434 KB took 25 s). After
 * progressive.jpg's own scans, add AC scans that code nothing new (an end
 * of block for every block of component 0; a first AC scan may follow the
 * last refinement without libjpeg warning): 400 more still load, 600 more
 * pass the limit of 500 scans (TurboJPEG's) and are refused, before
 * anything is decoded. */
static void test_jpeg_scan_limit(void) {
  size_t n;
  unsigned char *jpeg =
      test_read_file(test_path(test_data_dir(), "formats/progressive.jpg"), &n);
  CU_ASSERT_FATAL(jpeg != NULL && n > 4);
  CU_ASSERT_FATAL(jpeg[n - 2] == 0xFF && jpeg[n - 1] == 0xD9);
  const jpeg_frame f = {0xC2, 37, 23, 3, {2, 1, 1}, {2, 1, 1}};
  const int comp0 = 0;
  const int extra[] = {400, 600};
  for (int e = 0; e < 2; e++) {
    test_buf b = {0};
    test_put(&b, jpeg, n - 2);
    test_put_be16(&b, 0xFFC4); /* AC table 0: one 1-bit code, EOB */
    test_put_be16(&b, 2 + 18);
    test_put_byte(&b, 0x10, 1);
    test_put_byte(&b, 1, 1);
    for (int i = 1; i < 17; i++)
      test_put_byte(&b, 0, 1);
    for (int s = 0; s < extra[e]; s++)
      jpeg_scan(&b, &f, &comp0, 1, 1, 63, 0, 1, -1);
    test_put_be16(&b, 0xFFD9);
    char msg[IMGSTAT_ERROR_MAX];
    double t0 = test_now();
    imgstat_status s = load(&b, NULL, msg, sizeof msg);
    double seconds = test_now() - t0;
    if (e == 0) {
      CU_ASSERT_EQUAL(s, IMGSTAT_OK);
    } else {
      CU_ASSERT_EQUAL(s, IMGSTAT_ERR_LIMIT);
      CU_ASSERT_PTR_NOT_NULL(strstr(msg, "JPEG has 610 scans"));
      CU_ASSERT_PTR_NOT_NULL(strstr(msg, "more than 500 scans"));
    }
    CU_ASSERT(seconds < 10);
    free(b.p);
  }

  /* The expensive kind: seconds of work in 72 KB, refused at once; the
   * same with 3 AC scans is a valid file, and loads. */
  for (int e = 0; e < 2; e++) {
    test_buf b = {0};
    jpeg_eob_run_scans(&b, e == 0 ? 1000 : 3);
    char msg[IMGSTAT_ERROR_MAX];
    double t0 = test_now();
    imgstat_status s = load(&b, NULL, msg, sizeof msg);
    if (e == 0) {
      CU_ASSERT(test_now() - t0 < 1.0);
      CU_ASSERT_EQUAL(s, IMGSTAT_ERR_LIMIT);
      CU_ASSERT_PTR_NOT_NULL(strstr(msg, "JPEG has 1001 scans"));
    } else {
      CU_ASSERT_EQUAL(s, IMGSTAT_OK);
    }
    free(b.p);
  }
  free(jpeg);
}

/* A JPEG (CMYK went to stb_image, which accepted it as
 * 1.8 GB of garbage) of a few KB claiming 16384 x 16384 is refused before
 * anything is allocated: every block of every component costs at least a
 * bit, which needs 128 KB per component here. */
static void test_jpeg_min_input(void) {
  const jpeg_frame frames[] = {
      {0xC0, 16384, 16384, 4, {1, 1, 1, 1}, {1, 1, 1, 1}},
      {0xC0, 16384, 16384, 3, {2, 1, 1}, {2, 1, 1}},
      {0xC2, 16384, 16384, 1, {1}, {1}},
  };
  for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
    test_buf b = {0};
    jpeg_flat(&b, &frames[i], frames[i].ncomp == 4 ? 0 : -1, 2600);
    CU_ASSERT(b.n < 3000);
    char msg[IMGSTAT_ERROR_MAX];
    CU_ASSERT_EQUAL(load(&b, NULL, msg, sizeof msg), IMGSTAT_ERR_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "header claims 16384x16384"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "truncated or corrupt"));
    free(b.p);
  }
}

/* The bound never refuses a valid file: flat JPEGs coded in the fewest bits
 * possible (1 bit a block in a progressive DC scan, 2 in a sequential scan),
 * subsampled and odd-sized ones too, load; cut short, they are refused. */
static void test_jpeg_min_input_is_a_lower_bound(void) {
  const jpeg_frame frames[] = {
      {0xC2, 2048, 2048, 1, {1}, {1}},
      {0xC2, 1001, 999, 3, {2, 1, 1}, {2, 1, 1}},
      {0xC2, 777, 555, 4, {1, 1, 1, 1}, {1, 1, 1, 1}},
      {0xC2, 9, 1000, 3, {1, 1, 1}, {2, 1, 1}},
      {0xC0, 1003, 997, 3, {2, 1, 1}, {1, 1, 1}},
      {0xC0, 1, 1, 1, {1}, {1}},
  };
  for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) {
    const jpeg_frame *f = &frames[i];
    test_buf b = {0};
    jpeg_flat(&b, f, f->ncomp == 4 ? 0 : -1, -1);
    char msg[IMGSTAT_ERROR_MAX], what[IMGSTAT_ERROR_MAX + 64];
    imgstat_status s = load(&b, NULL, msg, sizeof msg);
    snprintf(what, sizeof what, "frame %zu: %s", i, msg);
    if (s != IMGSTAT_OK)
      printf("\n  %s\n", what);
    CU_ASSERT_EQUAL(s, IMGSTAT_OK);
    free(b.p);

    /* One byte of entropy-coded data fewer. */
    b = (test_buf){0};
    int comps[4] = {0, 1, 2, 3};
    uint64_t bits =
        scan_blocks(f, comps, f->ncomp) * (f->marker == 0xC2 ? 1 : 2);
    jpeg_flat(&b, f, f->ncomp == 4 ? 0 : -1, (long)ceil_div(bits, 8) - 1);
    CU_ASSERT_EQUAL(load(&b, NULL, msg, sizeof msg), IMGSTAT_ERR_FORMAT);
    free(b.p);
  }
}

/* Flat images are the most compressible: made by TurboJPEG's encoder at
 * every subsampling, baseline and progressive, gray, YCbCr and CMYK (which
 * it writes as YCCK), they all load. */
static void test_jpeg_encoder_flat_files_load(void) {
  const int samps[] = {TJSAMP_444,  TJSAMP_422, TJSAMP_420,
                       TJSAMP_GRAY, TJSAMP_440, TJSAMP_411};
  const int sizes[][2] = {{1, 1}, {17, 9}, {1000, 999}, {3000, 8}};
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
    int w = sizes[z][0], h = sizes[z][1];
    unsigned char *px = malloc((size_t)w * h * 4);
    CU_ASSERT_FATAL(px != NULL);
    memset(px, 128, (size_t)w * h * 4);
    for (size_t i = 0; i < sizeof samps / sizeof samps[0]; i++)
      for (int cmyk = 0; cmyk < 2; cmyk++)
        for (int progressive = 0; progressive < 2; progressive++) {
          if (cmyk && samps[i] == TJSAMP_GRAY)
            continue;
          /* A fresh encoder each time: TurboJPEG 2.1.5's, used again after
           * a progressive file, writes corrupt baseline data. */
          tjhandle tj = tjInitCompress();
          CU_ASSERT_FATAL(tj != NULL);
          unsigned char *jpeg = NULL;
          unsigned long size = 0;
          int fmt = cmyk ? TJPF_CMYK : TJPF_RGB;
          CU_ASSERT_FATAL(
              tjCompress2(tj, px, w, 0, h, fmt, &jpeg, &size, samps[i], 90,
                          progressive ? TJFLAG_PROGRESSIVE : 0) == 0);
          test_buf b = {jpeg, size, size};
          char msg[IMGSTAT_ERROR_MAX];
          imgstat_status s = load(&b, NULL, msg, sizeof msg);
          if (s != IMGSTAT_OK)
            printf("\n  %dx%d subsampling %d cmyk %d progressive %d: %s\n", w,
                   h, samps[i], cmyk, progressive, msg);
          CU_ASSERT_EQUAL(s, IMGSTAT_OK);
          tjFree(jpeg);
          tjDestroy(tj);
        }
    free(px);
  }
}

/* b loads, or with a component's scan missing (missing is 1) is refused
 * for it; then b is cleared. */
static void expect_component_scans(test_buf *b, int missing) {
  char msg[IMGSTAT_ERROR_MAX];
  imgstat_status s = load(b, NULL, msg, sizeof msg);
  if (missing) {
    CU_ASSERT_EQUAL(s, IMGSTAT_ERR_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "no scan data for component 3"));
  } else {
    CU_ASSERT_EQUAL(s, IMGSTAT_OK);
  }
  test_buf_clear(b);
}

/* libjpeg decodes a component that no scan codes as flat gray, without a
 * warning: a sequential file that lost a component's scan, or a progressive
 * one that never codes a component's DC, is refused. */
static void test_jpeg_missing_component_scan(void) {
  const jpeg_frame seq = {0xC0, 40, 24, 3, {1, 1, 1}, {1, 1, 1}};
  const jpeg_frame prog = {0xC2, 40, 24, 3, {1, 1, 1}, {1, 1, 1}};
  for (int missing = 0; missing < 2; missing++) {
    test_buf b = {0};
    /* Sequential, one scan a component (non-interleaved). */
    jpeg_tables(&b, -1);
    jpeg_sof(&b, &seq);
    for (int c = 0; c < 3 - missing; c++)
      jpeg_scan(&b, &seq, &c, 1, 0, 63, 0, 2, -1);
    test_put_be16(&b, 0xFFD9);
    expect_component_scans(&b, missing);

    /* Progressive: a DC scan of the first two components, then one of the
     * third or, where it is missing, an AC scan of the first. */
    jpeg_tables(&b, -1);
    jpeg_sof(&b, &prog);
    const int first[2] = {0, 1}, third = 2, comp0 = 0;
    jpeg_scan(&b, &prog, first, 2, 0, 0, 0, 1, -1);
    if (missing)
      jpeg_scan(&b, &prog, &comp0, 1, 1, 63, 0, 1, -1);
    else
      jpeg_scan(&b, &prog, &third, 1, 0, 0, 0, 1, -1);
    test_put_be16(&b, 0xFFD9);
    expect_component_scans(&b, missing);
  }
}

/* A scan header with no data after it: libjpeg warns (refused). */
static void test_jpeg_scan_without_data(void) {
  const jpeg_frame f = {0xC0, 16, 16, 1, {1}, {1}};
  test_buf b = {0};
  jpeg_flat(&b, &f, -1, 0);
  char msg[IMGSTAT_ERROR_MAX];
  CU_ASSERT_EQUAL(load(&b, NULL, msg, sizeof msg), IMGSTAT_ERR_FORMAT);
  free(b.p);
}

/* Offset of the transform byte of the APP14 "Adobe" segment, or 0. */
static size_t adobe_transform_offset(const unsigned char *p, size_t n) {
  for (size_t i = 2; i + 4 <= n && p[i] == 0xFF;) {
    size_t len = (size_t)p[i + 2] << 8 | p[i + 3];
    if (p[i + 1] == 0xEE && len >= 14 && memcmp(p + i + 4, "Adobe", 5) == 0)
      return i + 4 + 11;
    if (p[i + 1] == 0xDA)
      break;
    i += 2 + len;
  }
  return 0;
}

/* What stb_image makes of four stored samples, with its own code. */
static void stb_convert(const unsigned char *k, int transform,
                        unsigned char rgb[3]) {
  if (transform == 0) {
    for (int c = 0; c < 3; c++)
      rgb[c] = stbi__blinn_8x8(k[c], k[3]);
    return;
  }
  unsigned char out[4];
  stbi__YCbCr_to_RGB_row(out, &k[0], &k[1], &k[2], 1, 4);
  for (int c = 0; c < 3; c++)
    rgb[c] = transform == 2 ? stbi__blinn_8x8(255 - out[c], k[3]) : out[c];
}

/* CMYK and YCCK JPEGs are decoded by TurboJPEG (so
 * corrupt data is refused) and made RGB with stb_image's arithmetic. The
 * stored samples of tests/data/formats/cmyk.jpg (Adobe transform 0) are read
 * here straight from TurboJPEG; the same file as YCCK (transform 2) and
 * without its Adobe segment must give exactly what stb_image's conversion
 * code, compiled into this test, makes of them. The whole decode is also
 * compared with stb_image's own: only the IDCTs differ, by a little. */
static void test_jpeg_cmyk_as_stb(void) {
  size_t n;
  unsigned char *jpeg =
      test_read_file(test_path(test_data_dir(), "formats/cmyk.jpg"), &n);
  CU_ASSERT_FATAL(jpeg != NULL && n > 4);
  size_t at = adobe_transform_offset(jpeg, n);
  CU_ASSERT_FATAL(at != 0 && jpeg[at] == 0);

  tjhandle tj = tjInitDecompress();
  CU_ASSERT_FATAL(tj != NULL);
  const int w = 37, h = 23;
  unsigned char *stored = malloc((size_t)w * h * 4);
  CU_ASSERT_FATAL(stored != NULL);
  CU_ASSERT_FATAL(tjDecompress2(tj, jpeg, (unsigned long)n, stored, w, 4 * w, h,
                                TJPF_CMYK, TJFLAG_STOPONWARNING) == 0);
  tjDestroy(tj);

  const int transforms[] = {0, 2, -1};
  const int stb_tolerance[] = {1, 1, 2};
  for (int t = 0; t < 3; t++) {
    unsigned char *variant = malloc(n);
    CU_ASSERT_FATAL(variant != NULL);
    memcpy(variant, jpeg, n);
    if (transforms[t] >= 0)
      variant[at] = (unsigned char)transforms[t];
    else
      variant[at - 11] = 'a'; /* "adobe": not an Adobe segment any more */

    for (int from_file = 0; from_file < 2; from_file++) {
      imgstat_image img;
      imgstat_error err = {0};
      imgstat_status s;
      if (from_file) {
        char path[4096];
        CU_ASSERT_FATAL(test_tmp_template(path, sizeof path,
                                          "imgstat_hostile_jpeg_") != NULL);
        int fd = mkstemp(path);
        CU_ASSERT_FATAL(fd >= 0);
        CU_ASSERT_FATAL(write(fd, variant, n) == (ssize_t)n);
        close(fd);
        s = imgstat_image_load(path, NULL, &img, &err);
        unlink(path);
      } else {
        s = imgstat_image_load_memory(variant, n, NULL, &img, &err);
        /* The caller's bytes are not edited. */
        CU_ASSERT_EQUAL(variant[at],
                        transforms[t] >= 0 ? transforms[t] : jpeg[at]);
      }
      CU_ASSERT_EQUAL_FATAL(s, IMGSTAT_OK);
      CU_ASSERT_FATAL(img.width == (uint32_t)w && img.height == (uint32_t)h &&
                      img.channels == 3 && img.sample == IMGSTAT_U8);
      long differ = 0;
      for (size_t i = 0; i < (size_t)w * h; i++) {
        unsigned char rgb[3];
        stb_convert(stored + 4 * i, transforms[t], rgb);
        for (int c = 0; c < 3; c++)
          differ += ((unsigned char *)img.planes[c])[i] != rgb[c];
      }
      CU_ASSERT_EQUAL(differ, 0);

      int sw, sh, sc;
      unsigned char *stb =
          stbi_load_from_memory(variant, (int)n, &sw, &sh, &sc, 3);
      CU_ASSERT_FATAL(stb != NULL && sw == w && sh == h);
      int worst = 0;
      for (size_t i = 0; i < (size_t)w * h; i++)
        for (int c = 0; c < 3; c++) {
          int d = abs(((unsigned char *)img.planes[c])[i] - stb[3 * i + c]);
          worst = d > worst ? d : worst;
        }
      CU_ASSERT(worst <= stb_tolerance[t]);
      stbi_image_free(stb);
      imgstat_image_free(&img);
    }
    free(variant);
  }
  free(stored);
  free(jpeg);
}

/* A YCCK file as TurboJPEG's encoder writes CMYK (4:2:0, a gradient): the
 * same comparison, its stored samples read by TurboJPEG from a copy whose
 * Adobe transform says CMYK. */
static void test_jpeg_ycck_encoder_file(void) {
  const int w = 61, h = 43;
  unsigned char *px = malloc((size_t)w * h * 4);
  CU_ASSERT_FATAL(px != NULL);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int c = 0; c < 4; c++)
        px[4 * ((size_t)y * w + x) + c] =
            (unsigned char)(x * (c + 3) + y * (5 - c) + 40 * c);
  tjhandle tj = tjInitCompress();
  CU_ASSERT_FATAL(tj != NULL);
  unsigned char *jpeg = NULL;
  unsigned long n = 0;
  CU_ASSERT_FATAL(tjCompress2(tj, px, w, 0, h, TJPF_CMYK, &jpeg, &n, TJSAMP_420,
                              85, 0) == 0);
  tjDestroy(tj);
  size_t at = adobe_transform_offset(jpeg, n);
  CU_ASSERT_FATAL(at != 0 && jpeg[at] == 2);

  jpeg[at] = 0;
  tj = tjInitDecompress();
  CU_ASSERT_FATAL(tj != NULL);
  CU_ASSERT_FATAL(tjDecompress2(tj, jpeg, n, px, w, 4 * w, h, TJPF_CMYK,
                                TJFLAG_STOPONWARNING) == 0);
  tjDestroy(tj);
  jpeg[at] = 2;

  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL_FATAL(imgstat_image_load_memory(jpeg, n, NULL, &img, &err),
                        IMGSTAT_OK);
  CU_ASSERT_FATAL(img.width == (uint32_t)w && img.height == (uint32_t)h &&
                  img.channels == 3);
  long differ = 0;
  for (size_t i = 0; i < (size_t)w * h; i++) {
    unsigned char rgb[3];
    stb_convert(px + 4 * i, 2, rgb);
    for (int c = 0; c < 3; c++)
      differ += ((unsigned char *)img.planes[c])[i] != rgb[c];
  }
  CU_ASSERT_EQUAL(differ, 0);

  int sw, sh, sc, worst = 0;
  unsigned char *stb = stbi_load_from_memory(jpeg, (int)n, &sw, &sh, &sc, 3);
  CU_ASSERT_FATAL(stb != NULL && sw == w && sh == h);
  for (size_t i = 0; i < (size_t)w * h; i++)
    for (int c = 0; c < 3; c++) {
      int d = abs(((unsigned char *)img.planes[c])[i] - stb[3 * i + c]);
      worst = d > worst ? d : worst;
    }
  CU_ASSERT(worst <= 2);
  stbi_image_free(stb);
  imgstat_image_free(&img);
  tjFree(jpeg);
  free(px);
}

/* The corrupt CMYK file the fuzzer found (stb decoded it into garbage) is
 * now refused, as TurboJPEG refuses every JPEG with corrupt data. */
static void test_jpeg_cmyk_corrupt_refused(void) {
  size_t n;
  unsigned char *jpeg = test_read_file(
      test_path(test_data_dir(), "fuzz/jpeg-cmyk-bit-count.bin"), &n);
  CU_ASSERT_FATAL(jpeg != NULL);
  test_buf b = {jpeg, n, n};
  char msg[IMGSTAT_ERROR_MAX];
  CU_ASSERT_EQUAL(load(&b, NULL, msg, sizeof msg), IMGSTAT_ERR_FORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(msg, "Corrupt JPEG data"));
  free(jpeg);
}

#endif /* IMGSTAT_HAVE_TURBOJPEG */

static const test_case tests[] = {
    {"png", NULL},
    {"huge ancillary chunks cost no memory", test_png_huge_ancillary_chunks},
    {"skipped chunks keep the CRC rules",
     test_png_skipped_chunks_keep_crc_rules},
    {"IHDR first", test_png_ihdr_first},
    {"size bound", test_png_min_input},
#ifdef IMGSTAT_HAVE_TURBOJPEG
    {"jpeg", NULL},
    {"no frame header", test_jpeg_no_frame},
    {"scan limit", test_jpeg_scan_limit},
    {"size bound refuses tiny files", test_jpeg_min_input},
    {"size bound accepts the smallest valid files",
     test_jpeg_min_input_is_a_lower_bound},
    {"flat files of TurboJPEG's encoder load",
     test_jpeg_encoder_flat_files_load},
    {"missing component scans", test_jpeg_missing_component_scan},
    {"scan without data", test_jpeg_scan_without_data},
    {"CMYK and YCCK as stb_image", test_jpeg_cmyk_as_stb},
    {"YCCK from TurboJPEG's encoder as stb_image", test_jpeg_ycck_encoder_file},
    {"corrupt CMYK refused", test_jpeg_cmyk_corrupt_refused},
#endif
    {NULL, NULL}};

int main(void) { return test_main(tests); }
