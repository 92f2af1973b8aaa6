/*
 * Loader tests that run from a plain clone: every file of PngSuite against
 * statistics computed by pypng (tests/data/pngsuite/reference.tsv), the
 * synthetic files of tests/data/formats against the arrays they were made
 * from, corrupt and truncated inputs, and the error messages.
 */
#include "imgstat/imgstat.h"
#include "load_ref.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char pngsuite_dir[4096];
static char formats_dir[4096];

/* ---- helpers --------------------------------------------------------------
 */

static void join(char *out, size_t size, const char *dir, const char *name) {
  if (snprintf(out, size, "%s/%s", dir, name) >= (int)size)
    out[0] = 0; /* too long: the load then fails visibly */
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* Appends a PNG chunk with a correct CRC; returns the new length. */
static size_t put_chunk(unsigned char *buf, size_t at, const char *type,
                        const unsigned char *data, uint32_t len) {
  put32(buf + at, len);
  memcpy(buf + at + 4, type, 4);
  if (len)
    memcpy(buf + at + 8, data, len);
  uLong crc = crc32(0L, buf + at + 4, 4 + len);
  put32(buf + at + 8 + len, (uint32_t)crc);
  return at + 12 + len;
}

/* A PNG whose IHDR claims width x height RGB8, with a token IDAT. */
static size_t make_png_header(unsigned char *buf, uint32_t width,
                              uint32_t height) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', 13, 10, 26, 10};
  unsigned char ihdr[13] = {0};
  memcpy(buf, sig, 8);
  put32(ihdr, width);
  put32(ihdr + 4, height);
  ihdr[8] = 8;
  ihdr[9] = 2;
  size_t n = put_chunk(buf, 8, "IHDR", ihdr, 13);
  static const unsigned char idat[] = {0x78, 0x9c, 0x03, 0x00,
                                       0x00, 0x00, 0x00, 0x01};
  n = put_chunk(buf, n, "IDAT", idat, sizeof idat);
  return put_chunk(buf, n, "IEND", NULL, 0);
}

/* Loads and expects a failure of the given status whose message contains
 * want (when not NULL); checks that the image is left empty. */
static void expect_reject_file(const char *path, imgstat_status status,
                               const char *want) {
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s = imgstat_image_load(path, NULL, &img, &err);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s: status %d message '%s' (want %d '%s')", path,
           (int)s, err.message, (int)status, want ? want : "");
  REF_ASSERT_MSG(s == status, msg);
  REF_ASSERT_MSG(err.message[0] != 0, msg);
  REF_ASSERT_MSG(!want || strstr(err.message, want), msg);
  REF_ASSERT_MSG(image_is_empty(&img), msg);
  imgstat_image_free(&img);
}

static void expect_reject_memory(const void *data, size_t size,
                                 const char *what) {
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s = imgstat_image_load_memory(data, size, NULL, &img, &err);
  char msg[1024];
  snprintf(msg, sizeof msg, "%.400s (%zu bytes): status %d, message '%s'", what,
           size, (int)s, err.message);
  REF_ASSERT_MSG(s != IMGSTAT_OK && err.message[0] != 0, msg);
  REF_ASSERT_MSG(image_is_empty(&img), msg);
  imgstat_image_free(&img);
}

/* ---- PngSuite ---------------------------------------------------------------
 */

static void test_pngsuite_reference(void) {
  int valid, rejected;
  ref_check_files(test_path(pngsuite_dir, "reference.tsv"), pngsuite_dir,
                  &valid, &rejected);
  CU_ASSERT_EQUAL(valid, 161);
  CU_ASSERT_EQUAL(rejected, 14);
}

/* Every PNG in the folder has a reference line, so none goes untested. */
static void test_pngsuite_every_file_listed(void) {
  char path[4096];
  ref_entry *refs;
  join(path, sizeof path, pngsuite_dir, "reference.tsv");
  long n = ref_read(path, &refs);
  CU_ASSERT_FATAL(n > 0);
  DIR *d = opendir(pngsuite_dir);
  CU_ASSERT_FATAL(d != NULL);
  int files = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!test_ends_with(de->d_name, ".png"))
      continue;
    files++;
    int found = 0;
    for (long i = 0; i < n; i++)
      found |= strcmp(refs[i].name, de->d_name) == 0;
    REF_ASSERT_MSG(found, de->d_name);
  }
  closedir(d);
  CU_ASSERT_EQUAL(files, 175);
  free(refs);
}

/* Memory input decodes to the same planes (or the same error) as a file. */
static void memory_same_as_file(const char *dir) {
  DIR *d = opendir(dir);
  CU_ASSERT_FATAL(d != NULL);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strlen(de->d_name) < 4 || test_ends_with(de->d_name, ".tsv") ||
        de->d_name[0] == '.')
      continue;
    char path[4096];
    join(path, sizeof path, dir, de->d_name);
    size_t size = 0;
    unsigned char *buf = test_read_file(path, &size);
    CU_ASSERT_FATAL(buf != NULL);
    imgstat_image a, b;
    imgstat_error ea = {0}, eb = {0};
    imgstat_status sa = imgstat_image_load(path, NULL, &a, &ea);
    imgstat_status sb = imgstat_image_load_memory(buf, size, NULL, &b, &eb);
    REF_ASSERT_MSG(sa == sb, de->d_name);
    REF_ASSERT_MSG(strcmp(ea.message, eb.message) == 0, de->d_name);
    if (sa == IMGSTAT_OK && sb == IMGSTAT_OK) {
      REF_ASSERT_MSG(a.width == b.width && a.height == b.height &&
                         a.channels == b.channels && a.sample == b.sample,
                     de->d_name);
      REF_ASSERT_MSG(memcmp(a.data, b.data,
                            imgstat_image_plane_bytes(&a) * a.channels) == 0,
                     de->d_name);
    }
    imgstat_image_free(&a);
    imgstat_image_free(&b);
    free(buf);
  }
  closedir(d);
}

static void test_memory_same_as_file(void) {
  memory_same_as_file(pngsuite_dir);
  memory_same_as_file(formats_dir);
}

/* Every valid file cut short anywhere is rejected, from memory and file. */
static void test_pngsuite_truncated(void) {
  DIR *d = opendir(pngsuite_dir);
  CU_ASSERT_FATAL(d != NULL);
  struct dirent *de;
  int tried = 0;
  while ((de = readdir(d))) {
    if (!test_ends_with(de->d_name, ".png") || de->d_name[0] == 'x')
      continue;
    char path[4096];
    join(path, sizeof path, pngsuite_dir, de->d_name);
    size_t size = 0;
    unsigned char *buf = test_read_file(path, &size);
    CU_ASSERT_FATAL(buf != NULL && size > 60);
    size_t cuts[] = {1,         7,         8,        20,
                     33,        40,        size / 3, size / 2,
                     size - 13, size - 12, size - 5, size - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
      char what[300];
      snprintf(what, sizeof what, "%s cut to %zu", de->d_name, cuts[k]);
      expect_reject_memory(buf, cuts[k], what);
      tried++;
    }
    /* And once through a real file, the streaming path. */
    const char *tmp = test_temp_file(buf, size / 2);
    CU_ASSERT_FATAL(tmp != NULL);
    expect_reject_file(tmp, IMGSTAT_ERR_FORMAT, NULL);
    unlink(tmp);
    free(buf);
  }
  closedir(d);
  CU_ASSERT(tried > 1000);
}

/* A damaged CRC anywhere, including the chunks after the image data, is an
 * error: libpng's CRC checks stay on and png_read_end runs. */
static void test_png_bad_crc(void) {
  char path[4096];
  join(path, sizeof path, pngsuite_dir, "basn2c08.png");
  size_t size = 0;
  unsigned char *buf = test_read_file(path, &size);
  CU_ASSERT_FATAL(buf != NULL);
  buf[size - 1] ^= 1; /* IEND's CRC */
  expect_reject_memory(buf, size, "IEND CRC");
  buf[size - 1] ^= 1;
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL(imgstat_image_load_memory(buf, size, NULL, &img, &err),
                  IMGSTAT_OK);
  imgstat_image_free(&img);
  buf[60] ^= 0x10; /* inside IDAT */
  expect_reject_memory(buf, size, "IDAT byte");
  free(buf);
}

/* ---- limits -----------------------------------------------------------------
 */

static void test_png_huge_header_refused(void) {
  unsigned char buf[128];
  size_t n = make_png_header(buf, 100000, 100000);
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL(imgstat_image_load_memory(buf, n, NULL, &img, &err),
                  IMGSTAT_ERR_LIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "(max_pixels)"));
  CU_ASSERT_PTR_NULL(strstr(err.message, "--"));
  CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_MAX_PIXELS);
  CU_ASSERT_EQUAL(err.value, UINT64_C(10000000000));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "100000x100000"));
  CU_ASSERT(image_is_empty(&img));
  /* The same header at 16x16 is accepted as far as the limit goes and then
   * fails on its token image data, which shows the check above was the
   * size limit and not a malformed file. */
  n = make_png_header(buf, 16, 16);
  CU_ASSERT_EQUAL(imgstat_image_load_memory(buf, n, NULL, &img, &err),
                  IMGSTAT_ERR_FORMAT);
  const char *tmp = test_temp_file(buf, make_png_header(buf, 100000, 100000));
  CU_ASSERT_FATAL(tmp != NULL);
  expect_reject_file(tmp, IMGSTAT_ERR_LIMIT, "(max_pixels)");
  unlink(tmp);
}

static void test_max_pixels_option(void) {
  char path[4096];
  join(path, sizeof path, pngsuite_dir, "basn0g08.png"); /* 32x32 */
  imgstat_load_options opts = {.max_pixels = 1023};
  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL(imgstat_image_load(path, &opts, &img, &err),
                  IMGSTAT_ERR_LIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "1024 pixels"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "limit of 1023 (max_pixels)"));
  CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_MAX_PIXELS);
  CU_ASSERT_EQUAL(err.limit, 1023);
  CU_ASSERT_EQUAL(err.value, 1024);
  opts.max_pixels = 1024;
  CU_ASSERT_EQUAL(imgstat_image_load(path, &opts, &img, &err), IMGSTAT_OK);
  imgstat_image_free(&img);

  /* The stb_image and JPEG paths check before decoding too. */
  const char *names[] = {"rgb.bmp",  "rgb.ppm", "q90.jpg", "gray.tga",
                         "rgbe.hdr", "pal.gif", "rgb8.psd"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strstr(names[i], ".gif") && !test_format_built("GIF"))
      continue; /* built without giflib */
    join(path, sizeof path, formats_dir, names[i]);
    opts.max_pixels = 10;
    imgstat_status s = imgstat_image_load(path, &opts, &img, &err);
    REF_ASSERT_MSG(s == IMGSTAT_ERR_LIMIT, names[i]);
    REF_ASSERT_MSG(strstr(err.message, "(max_pixels)") != NULL, names[i]);
    REF_ASSERT_MSG(err.cause == IMGSTAT_CAUSE_MAX_PIXELS && err.limit == 10,
                   names[i]);
    REF_ASSERT_MSG(image_is_empty(&img), names[i]);
  }
}

/* ---- errors
 * ------------------------------------------------------------------ */

static void test_error_messages(void) {
  expect_reject_file("/nonexistent/imgstat/none.png", IMGSTAT_ERR_IO,
                     "No such file or directory");
  expect_reject_file(pngsuite_dir, IMGSTAT_ERR_IO, "is a directory");

  const char *tmp = test_temp_file("", 0);
  CU_ASSERT_FATAL(tmp != NULL);
  expect_reject_file(tmp, IMGSTAT_ERR_FORMAT, "empty file");
  unlink(tmp);

  static const char text[] = "hello, this is not an image\nat all\n";
  tmp = test_temp_file(text, sizeof text - 1);
  CU_ASSERT_FATAL(tmp != NULL);
  expect_reject_file(tmp, IMGSTAT_ERR_FORMAT, "not a recognised image format");
  unlink(tmp);

  /* libpng's own reasons reach the message. */
  char path[4096];
  join(path, sizeof path, pngsuite_dir, "xcrn0g04.png");
  expect_reject_file(path, IMGSTAT_ERR_FORMAT,
                     "PNG file corrupted by ASCII conversion");
  join(path, sizeof path, pngsuite_dir, "xcsn0g01.png");
  expect_reject_file(path, IMGSTAT_ERR_FORMAT, "CRC error");

  imgstat_image img;
  imgstat_error err = {0};
  CU_ASSERT_EQUAL(imgstat_image_load_memory(NULL, 0, NULL, &img, &err),
                  IMGSTAT_ERR_FORMAT);
  CU_ASSERT_STRING_EQUAL(err.message, "empty file");
  CU_ASSERT_EQUAL(imgstat_image_load(NULL, NULL, &img, &err), IMGSTAT_ERR_ARG);
}

/* Fuzzer findings (tests/data/fuzz/README.md): each must be rejected with a
 * reason, from the file as found and from its JPEG part alone. */
static void test_fuzz_regressions(void) {
  static const char *jpegs[] = {"jpeg-huffman-overflow.bin",
                                "jpeg-huffman-short-table.bin"};
  char path[4096];
  for (size_t i = 0; i < sizeof jpegs / sizeof jpegs[0]; i++) {
    snprintf(path, sizeof path, "%s/fuzz/%s", test_data_dir(), jpegs[i]);
    expect_reject_file(path, IMGSTAT_ERR_FORMAT, "Huffman table");
    FILE *f = fopen(path, "rb");
    CU_ASSERT_FATAL(f != NULL);
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t soi = 0;
    while (soi + 2 < n && !(buf[soi] == 0xFF && buf[soi + 1] == 0xD8))
      soi++;
    while (soi + 2 < n && buf[soi + 1] == 0xFF)
      soi++; /* the last fill byte before the SOI marker */
    CU_ASSERT_FATAL(soi + 2 < n);
    imgstat_image img;
    imgstat_error err = {0};
    CU_ASSERT_NOT_EQUAL(
        imgstat_image_load_memory(buf + soi, n - soi, NULL, &img, &err),
        IMGSTAT_OK);
    CU_ASSERT(err.message[0] != '\0');
  }

  snprintf(path, sizeof path, "%s/fuzz/hdr-rle-endless.bin", test_data_dir());
  expect_reject_file(path, IMGSTAT_ERR_FORMAT, "truncated");

  /* stb decodes this corrupt CMYK JPEG into pixels, with undefined shifts
   * that CMakeLists.txt keeps out of UBSan for load_stb.c: what matters is
   * that the sanitizer builds report nothing. It must load as the 37x23
   * image it was cut from (tests/data/formats/cmyk.jpg), or be refused with
   * a reason. */
  snprintf(path, sizeof path, "%s/fuzz/jpeg-cmyk-bit-count.bin",
           test_data_dir());
  imgstat_image img;
  imgstat_error err = {0};
  if (imgstat_image_load(path, NULL, &img, &err) == IMGSTAT_OK) {
    CU_ASSERT(img.width == 37 && img.height == 23 && img.channels == 3);
    imgstat_image_free(&img);
  } else {
    CU_ASSERT(err.message[0] != '\0');
  }

  /* A 16x32 TIFF of two deflated 16x16 tiles: the first all 200, the
   * second a stream whose stored block holds 356 bytes for the tile's 256.
   * libtiff takes it (libdeflate's "insufficient space") without writing
   * the tile: its samples were the first tile's, 200, left in the buffer
   * (on threads, whichever tile the thread read before; fuzz_tiff found it
   * so, tiff-deflate-overlong-threads.tif). They are 0, as GDAL reads
   * them. */
  snprintf(path, sizeof path, "%s/fuzz/tiff-deflate-overlong-tile.tif",
           test_data_dir());
  memset(&err, 0, sizeof err);
  imgstat_status s = imgstat_image_load(path, NULL, &img, &err);
  if (s != IMGSTAT_ERR_UNSUPPORTED) { /* a build with libtiff */
    CU_ASSERT_FATAL(s == IMGSTAT_OK);
    CU_ASSERT_FATAL(img.width == 16 && img.height == 32 && img.channels == 1 &&
                    img.sample == IMGSTAT_U8);
    size_t stride = img.stride ? img.stride : img.width;
    int wrong = 0;
    for (uint32_t y = 0; y < img.height; y++)
      for (uint32_t x = 0; x < img.width; x++)
        wrong += ((const uint8_t *)img.planes[0])[y * stride + x] !=
                 (y < 16 ? 200 : 0);
    CU_ASSERT_EQUAL(wrong, 0);
    imgstat_image_free(&img);
  }
}

/* Offset of the k-th (from 0) start-of-scan segment of a JPEG, found by
 * walking the segments and the entropy-coded data; 0 when there is none. */
static size_t jpeg_sos_offset(const unsigned char *p, size_t n, int k) {
  size_t i = 2;
  while (i + 4 <= n) {
    if (p[i] != 0xFF || p[i + 1] == 0x00 || p[i + 1] == 0xFF ||
        (p[i + 1] >= 0xD0 && p[i + 1] <= 0xD7)) {
      i++;
      continue;
    }
    if (p[i + 1] == 0xD9)
      return 0;
    if (p[i + 1] == 0xDA && k-- == 0)
      return i;
    i += 2 + ((size_t)p[i + 2] << 8 | p[i + 3]);
  }
  return 0;
}

/* Loads the JPEG with one Huffman table selector byte of scan k replaced,
 * behind a 0xFF fill byte (which sends it to stb_image, not TurboJPEG) or
 * not, and returns the status; the message goes to msg. */
static imgstat_status load_jpeg_selector(const unsigned char *jpeg, size_t n,
                                         int scan, int component, int selector,
                                         int fill, char *msg, size_t size) {
  unsigned char *buf = malloc(n + 1);
  CU_ASSERT_FATAL(buf != NULL);
  buf[0] = 0xFF;
  memcpy(buf + 1, jpeg, n);
  size_t sos = jpeg_sos_offset(jpeg, n, scan);
  CU_ASSERT_FATAL(sos != 0 && component < jpeg[sos + 4]);
  if (selector >= 0)
    buf[1 + sos + 6 + 2 * (size_t)component] = (unsigned char)selector;
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s = imgstat_image_load_memory(
      fill ? buf : buf + 1, fill ? n + 1 : n, NULL, &img, &err);
  snprintf(msg, size, "%s", err.message);
  if (s == IMGSTAT_OK)
    imgstat_image_free(&img);
  free(buf);
  return s;
}

/* stb_image decodes with whatever Huffman table a scan selects, defined or
 * not (the second fuzzer finding): such scans are refused, through stb and
 * through TurboJPEG, while a selector that the scan does not use (the DC
 * table of a progressive AC scan or of a DC refinement scan) is accepted as
 * stb accepts it. gray.jpg defines tables 0; progressive.jpg defines DC
 * tables 0 and 1, its scan 0 is the first DC scan, scan 1 an AC scan of
 * component 0 and scan 6 the DC refinement. */
static void test_jpeg_undefined_huffman_table(void) {
  static const char *never = "Huffman table that was never defined";
  const struct {
    const char *file;
    int scan, component, selector, ok;
  } cases[] = {
      {"gray.jpg", 0, 0, -1, 1},          {"gray.jpg", 0, 0, 0x30, 0},
      {"gray.jpg", 0, 0, 0x03, 0},        {"gray.jpg", 0, 0, 0x11, 0},
      {"progressive.jpg", 0, 0, -1, 1},   {"progressive.jpg", 0, 0, 0x30, 0},
      {"progressive.jpg", 0, 2, 0x20, 0}, {"progressive.jpg", 0, 1, 0x13, 1},
      {"progressive.jpg", 1, 0, 0x03, 0}, {"progressive.jpg", 1, 0, 0x30, 1},
      {"progressive.jpg", 6, 0, 0x33, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[4096], msg[1024], what[1200];
    join(path, sizeof path, formats_dir, cases[i].file);
    size_t n;
    unsigned char *jpeg = test_read_file(path, &n);
    CU_ASSERT_FATAL(jpeg != NULL && n > 4);
    for (int fill = 1; fill >= 0; fill--) {
      imgstat_status s =
          load_jpeg_selector(jpeg, n, cases[i].scan, cases[i].component,
                             cases[i].selector, fill, msg, sizeof msg);
      snprintf(what, sizeof what, "%s scan %d component %d selector %#x %s: %s",
               cases[i].file, cases[i].scan, cases[i].component,
               (unsigned)cases[i].selector, fill ? "stb" : "TurboJPEG", msg);
      if (cases[i].ok && fill) {
        REF_ASSERT_MSG(s == IMGSTAT_OK, what);
      } else if (!cases[i].ok) {
        REF_ASSERT_MSG(s == IMGSTAT_ERR_FORMAT && msg[0] != 0, what);
        /* The message is ours only where stb would have decoded it. */
        REF_ASSERT_MSG(!fill || strstr(msg, never), what);
      }
    }
    free(jpeg);
  }
}

/* ---- other formats
 * ------------------------------------------------------------ */

static void test_formats_reference(void) {
  int valid, rejected;
  ref_check_files(test_path(formats_dir, "reference.tsv"), formats_dir, &valid,
                  &rejected);
  CU_ASSERT(valid >= 20);
}

static void expect_format(const char *name, const char *format) {
  char path[4096];
  join(path, sizeof path, formats_dir, name);
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s = imgstat_image_load(path, NULL, &img, &err);
  REF_ASSERT_MSG(s == IMGSTAT_OK, name);
  REF_ASSERT_MSG(s == IMGSTAT_OK && strcmp(img.format, format) == 0, name);
  imgstat_image_free(&img);
}

static void test_format_names(void) {
  expect_format("rgb.bmp", "BMP");
  expect_format("gray.tga", "TGA");
  if (test_format_built("GIF"))
    expect_format("pal.gif", "GIF");
  expect_format("rgb8.psd", "PSD");
  expect_format("rgbe.hdr", "HDR");
  expect_format("rgb.ppm", "PNM");
  expect_format("q90.jpg", "JPEG");
  expect_format("rgb.png", "PNG");
  /* The signature decides, not the name. */
  expect_format("png_named.jpg", "PNG");
}

/* Truncated files of every other format are rejected, not zero-filled. */
static void test_formats_truncated(void) {
  const char *names[] = {"rgb.bmp",    "rgb.tga",       "rgb_rle.tga",
                         "pal.gif",    "rgb8.psd",      "rgba16.psd",
                         "rgbe.hdr",   "rgbe_flat.hdr", "rgb.ppm",
                         "gray16.pgm", "q90.jpg",       "progressive.jpg"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strstr(names[i], ".gif") && !test_format_built("GIF"))
      continue; /* built without giflib */
    char path[4096];
    join(path, sizeof path, formats_dir, names[i]);
    size_t size = 0;
    unsigned char *buf = test_read_file(path, &size);
    CU_ASSERT_FATAL(buf != NULL);
    /* BMP row padding, the TGA footer and the GIF trailer hold no pixels,
     * so those may lose their last bytes; the others end with samples (or
     * the JPEG end marker). */
    int tail_is_data = i >= 4;
    size_t cuts[] = {1, 5, size / 2, size - 3, size - 1};
    size_t ncuts = tail_is_data ? 5 : 3;
    for (size_t k = 0; k < ncuts; k++) {
      char what[300];
      snprintf(what, sizeof what, "%s cut to %zu", names[i], cuts[k]);
      expect_reject_memory(buf, cuts[k], what);
    }
    const char *tmp = test_temp_file(buf, tail_is_data ? size - 1 : size / 2);
    CU_ASSERT_FATAL(tmp != NULL);
    expect_reject_file(tmp, IMGSTAT_ERR_FORMAT, NULL);
    unlink(tmp);
    free(buf);
  }
}

/* Loads from memory, which must work and give samples of the given type;
 * returns whether they are. */
static int load_mem_ok(const char *data, size_t size, imgstat_image *img,
                       imgstat_sample sample) {
  imgstat_error err = {0};
  imgstat_status s = imgstat_image_load_memory(data, size, NULL, img, &err);
  REF_ASSERT_MSG(s == IMGSTAT_OK, err.message);
  CU_ASSERT_EQUAL(img->sample, sample);
  return img->sample == sample;
}

/* 16-bit PNM is big-endian in the file and native in the planes; maxval is
 * not rescaled; bad headers are refused. */
static void test_pnm_details(void) {
  imgstat_image img;
  static const char p16[] = "P5\n2 1\n65535\n\x01\x02\xfe\xff";
  if (load_mem_ok(p16, sizeof p16 - 1, &img, IMGSTAT_U16)) {
    CU_ASSERT_EQUAL(((uint16_t *)img.planes[0])[0], 0x0102);
    CU_ASSERT_EQUAL(((uint16_t *)img.planes[0])[1], 0xfeff);
  }
  imgstat_image_free(&img);

  static const char p1000[] = "P6 1 1 1000 \x03\xe8\x00\x01\x01\x00";
  int u16 = load_mem_ok(p1000, sizeof p1000 - 1, &img, IMGSTAT_U16);
  CU_ASSERT_EQUAL(img.channels, 3);
  if (u16) {
    CU_ASSERT_EQUAL(((uint16_t *)img.planes[0])[0], 1000);
    CU_ASSERT_EQUAL(((uint16_t *)img.planes[1])[0], 1);
    CU_ASSERT_EQUAL(((uint16_t *)img.planes[2])[0], 256);
  }
  imgstat_image_free(&img);

  static const char p15[] = "P5\n# a comment\n3 1\n15\n\x00\x07\x0f";
  if (load_mem_ok(p15, sizeof p15 - 1, &img, IMGSTAT_U8))
    CU_ASSERT_EQUAL(((uint8_t *)img.planes[0])[2], 15);
  imgstat_image_free(&img);

  static const char *bad[] = {"P5\n2 1\n255\n\x01",
                              "P5\n0 1\n255\n",
                              "P5\n2 1\n0\n\x01\x02",
                              "P5\n99999999999 1\n255\n\x01",
                              "P5\n2 1\n70000\n\x01\x02\x03\x04",
                              "P6\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_reject_memory(bad[i], strlen(bad[i]) + (i == 1 ? 0 : 0), bad[i]);
}

/* A Radiance file decodes to float RGB, value = m * 2^(e - 136). */
static void test_hdr_values(void) {
  static const char hdr[] = "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n"
                            "-Y 1 +X 2\n"
                            "\x80\x40\x20\x81"  /* 0.5 .25 .125 x2 */
                            "\x01\x00\x00\x00"; /* e 0: zero */
  imgstat_image img;
  int f32 = load_mem_ok(hdr, sizeof hdr - 1, &img, IMGSTAT_F32);
  CU_ASSERT_EQUAL(img.channels, 3);
  if (f32 && img.channels == 3) {
    CU_ASSERT_EQUAL(((float *)img.planes[0])[0], 1.0f);
    CU_ASSERT_EQUAL(((float *)img.planes[1])[0], 0.5f);
    CU_ASSERT_EQUAL(((float *)img.planes[2])[0], 0.25f);
    CU_ASSERT_EQUAL(((float *)img.planes[0])[1], 0.0f);
  }
  CU_ASSERT_STRING_EQUAL(img.format, "HDR");
  imgstat_image_free(&img);
}

static const test_case tests[] = {
    {"png", NULL},
    {"PngSuite matches pypng", test_pngsuite_reference},
    {"every PngSuite file listed", test_pngsuite_every_file_listed},
    {"memory same as file", test_memory_same_as_file},
    {"truncated files rejected", test_pngsuite_truncated},
    {"bad CRC rejected", test_png_bad_crc},
    {"limits", NULL},
    {"100000x100000 PNG header refused", test_png_huge_header_refused},
    {"--max-pixels", test_max_pixels_option},
    {"errors", NULL},
    {"messages", test_error_messages},
    {"fuzzer findings rejected", test_fuzz_regressions},
    {"JPEG scans with undefined Huffman tables",
     test_jpeg_undefined_huffman_table},
    {"formats", NULL},
    {"formats match their source arrays", test_formats_reference},
    {"format names", test_format_names},
    {"truncated files rejected", test_formats_truncated},
    {"PNM details", test_pnm_details},
    {"HDR values", test_hdr_values},
    {NULL, NULL}};

int main(void) {
  snprintf(pngsuite_dir, sizeof pngsuite_dir, "%s/pngsuite", test_data_dir());
  snprintf(formats_dir, sizeof formats_dir, "%s/formats", test_data_dir());
  return test_main(tests);
}
