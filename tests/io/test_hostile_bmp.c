/*
 * Hardening of the BMP reader (src/io/bmp.c, which replaced
 * stb_image's BMP path) and of stb's JPEG path: pixel
 * indices beyond the palette, OS/2 palettes, unknown compression,
 * top-down rows, the least input and the peak memory of a BMP, and the scan
 * limit of a progressive JPEG. Every BMP is written here, from arrays the
 * expected pixels are computed from.
 */
#include "imgstat/imgstat.h"
#include "io.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing BMPs ------------------------------------------------------- */

typedef struct bmp_spec {
  uint32_t header_size;     /* 40, or 12 (OS/2) */
  uint32_t width;           /* pixels */
  uint32_t height;          /* rows */
  int top_down;             /* rows stored top first (negative height) */
  unsigned bits;            /* 1, 4, 8 (palette) or 24, 32 (B, G, R[, X]) */
  uint32_t compression;     /* 40-byte header only */
  uint32_t clr_used;        /* 40-byte header only */
  uint32_t entries;         /* palette entries written */
  const unsigned char *rgb; /* palette: entries x (R, G, B) */
  int drop_last_pad;        /* leave out the last row's padding */
} bmp_spec;

static void le16(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}

static void le32(unsigned char *p, uint32_t v) {
  le16(p, v);
  le16(p + 2, v >> 16);
}

/* Writes a BMP of sp's pixels (raster order, top row first: one index a
 * pixel for palettes, else R, G, B bytes) into a malloc'd buffer. The bits
 * past a row's last pixel and the padding bytes are all ones, which no
 * reader may take for pixels. */
static unsigned char *make_bmp(const bmp_spec *sp, const unsigned char *pixels,
                               size_t *size) {
  int os2 = sp->header_size == 12;
  size_t entry = os2 ? 3 : 4;
  size_t offset = 14 + sp->header_size + sp->entries * entry;
  size_t row = ((size_t)sp->width * sp->bits + 7) / 8;
  size_t stride = (row + 3) & ~(size_t)3;
  size_t total = offset + stride * sp->height;
  if (sp->drop_last_pad)
    total -= stride - row;
  unsigned char *b = calloc(1, total + stride);
  CU_ASSERT_FATAL(b != NULL);
  b[0] = 'B';
  b[1] = 'M';
  le32(b + 2, (uint32_t)total);
  le32(b + 10, (uint32_t)offset);
  le32(b + 14, sp->header_size);
  if (os2) {
    le16(b + 18, sp->width);
    le16(b + 20, sp->height);
    le16(b + 22, 1);
    le16(b + 24, sp->bits);
  } else {
    le32(b + 18, sp->width);
    le32(b + 22, sp->top_down ? (uint32_t) - (int32_t)sp->height : sp->height);
    le16(b + 26, 1);
    le16(b + 28, sp->bits);
    le32(b + 30, sp->compression);
    le32(b + 38, 2835);
    le32(b + 42, 2835);
    le32(b + 46, sp->clr_used);
  }
  for (uint32_t i = 0; i < sp->entries; i++) {
    unsigned char *e = b + 14 + sp->header_size + i * entry;
    e[0] = sp->rgb[3 * i + 2];
    e[1] = sp->rgb[3 * i + 1];
    e[2] = sp->rgb[3 * i + 0];
  }
  for (uint32_t r = 0; r < sp->height; r++) {
    uint32_t y = sp->top_down ? r : sp->height - 1 - r;
    unsigned char *out = b + offset + (size_t)r * stride;
    memset(out, 0xFF, stride);
    const unsigned char *in =
        pixels + (size_t)y * sp->width * (sp->bits <= 8 ? 1 : 3);
    for (uint32_t x = 0; x < sp->width; x++) {
      if (sp->bits <= 8) {
        size_t bit = (size_t)x * sp->bits;
        unsigned shift = 8 - sp->bits - (unsigned)(bit % 8);
        unsigned char m = (unsigned char)(((1u << sp->bits) - 1) << shift);
        out[bit / 8] = (unsigned char)((out[bit / 8] & ~m) | in[x] << shift);
      } else {
        size_t at = (size_t)x * (sp->bits / 8);
        out[at + 0] = in[3 * x + 2];
        out[at + 1] = in[3 * x + 1];
        out[at + 2] = in[3 * x + 0];
        if (sp->bits == 32)
          out[at + 3] = 0x5A;
      }
    }
  }
  *size = total;
  return b;
}

static imgstat_status load(const unsigned char *data, size_t size,
                           uint64_t max_memory, imgstat_image *img,
                           imgstat_error *err) {
  imgstat_load_options opts = {.max_memory = max_memory};
  memset(err, 0, sizeof *err);
  return imgstat_image_load_memory(data, size, &opts, img, err);
}

static void expect_refused(const unsigned char *data, size_t size,
                           imgstat_status want, const char *text,
                           const char *what) {
  imgstat_image img;
  imgstat_error err;
  imgstat_status s = load(data, size, 0, &img, &err);
  int ok = s == want && strstr(err.message, text) != NULL;
  if (!ok)
    printf("\n  %s: status %d, message \"%s\"; wanted \"%s\"\n", what, (int)s,
           err.message, text);
  CU_ASSERT(ok);
  if (s == IMGSTAT_OK && img.sample == IMGSTAT_U8) {
    /* Decoded after all: look at every sample, so that valgrind reports
     * the ones that come from uninitialised memory. */
    size_t bright = 0;
    for (int c = 0; c < img.channels; c++)
      for (size_t i = 0; i < (size_t)img.width * img.height; i++)
        if (((unsigned char *)img.planes[c])[i] > 127)
          bright++;
    printf("\n  %s decoded (%zu bright samples)\n", what, bright);
  }
  if (s == IMGSTAT_OK)
    imgstat_image_free(&img);
}

/* Loads and compares with the expected R, G, B of every pixel. */
static void expect_rgb(const unsigned char *data, size_t size, uint32_t w,
                       uint32_t h, const unsigned char *rgb, const char *what) {
  imgstat_image img;
  imgstat_error err;
  imgstat_status s = load(data, size, 0, &img, &err);
  if (s != IMGSTAT_OK)
    printf("\n  %s: %s\n", what, err.message);
  CU_ASSERT_EQUAL_FATAL(s, IMGSTAT_OK);
  CU_ASSERT(img.width == w && img.height == h && img.channels == 3 &&
            img.sample == IMGSTAT_U8);
  if (img.width == w && img.height == h && img.channels == 3) {
    size_t wrong = 0;
    for (size_t i = 0; i < (size_t)w * h; i++)
      for (int c = 0; c < 3; c++)
        wrong += ((unsigned char *)img.planes[c])[i] != rgb[3 * i + c];
    if (wrong)
      printf("\n  %s: %zu samples differ\n", what, wrong);
    CU_ASSERT_EQUAL(wrong, 0);
  }
  imgstat_image_free(&img);
}

/* Samples i * step + start (mod 256): RGB pixels of no special pattern. */
static void ramp(unsigned char *px, size_t n, int step, int start) {
  for (size_t i = 0; i < n; i++)
    px[i] = (unsigned char)((int)i * step + start);
}

/* ---- palettes ----------------------------------------------------------- */

static const unsigned char two_colours[] = {10, 20, 30, 200, 100, 50};

/* The RGB pixels of n palette indices. */
static void palette_rgb(const unsigned char *idx, int n,
                        const unsigned char *pal, unsigned char *rgb) {
  for (int i = 0; i < n; i++)
    memcpy(rgb + 3 * i, pal + 3 * idx[i], 3);
}

/* A pixel index beyond the palette made stb read its uninitialised stack
 * palette: refused, for 1, 4 and 8 bits and both row orders; an index
 * inside it loads as the palette's colour, and the ones in the bits past a
 * row's last pixel do not count. */
static void test_bmp_index_beyond_palette(void) {
  enum { W = 7, H = 5 };
  static const unsigned bits[] = {1, 4, 8};
  for (int k = 0; k < 3; k++)
    for (int top_down = 0; top_down < 2; top_down++) {
      uint32_t colours = bits[k] == 1 ? 1 : 2;
      unsigned char idx[W * H], rgb[3 * W * H];
      for (int i = 0; i < W * H; i++) {
        idx[i] = (unsigned char)((i * 7 + i / 3) % colours);
        memcpy(rgb + 3 * i, two_colours + 3 * idx[i], 3);
      }
      bmp_spec sp = {40, W,       H,       top_down,    bits[k],
                     0,  colours, colours, two_colours, 0};
      char what[100];
      snprintf(what, sizeof what, "%u-bit %s", bits[k],
               top_down ? "top-down" : "bottom-up");
      size_t n;
      unsigned char *b = make_bmp(&sp, idx, &n);
      expect_rgb(b, n, W, H, rgb, what);
      free(b);

      unsigned bad = bits[k] == 1 ? 1 : bits[k] == 4 ? 9 : 200;
      idx[(H - 1) * W + 3] = (unsigned char)bad; /* bottom row */
      b = make_bmp(&sp, idx, &n);
      char want[100];
      snprintf(want, sizeof want,
               "Corrupt BMP data: pixel index %u beyond its palette of %u "
               "colours",
               bad, colours);
      expect_refused(b, n, IMGSTAT_ERR_FORMAT, want, what);
      free(b);
    }
}

/* An OS/2 (12-byte header) palette: stb missed its last 4 entries and
 * refused one of fewer than 5; every entry reads now, and a palette shorter
 * than 2^bits (the pixel data's offset leaves room for fewer) is refused
 * only for a pixel that uses an entry it lacks. */
static void test_bmp_os2_palette(void) {
  enum { W = 4, H = 2 };
  unsigned char pal[3 * 256];
  for (int i = 0; i < 256; i++) {
    pal[3 * i + 0] = (unsigned char)i;
    pal[3 * i + 1] = (unsigned char)(255 - i);
    pal[3 * i + 2] = (unsigned char)(i / 2);
  }
  unsigned char idx[W * H] = {0, 1, 7, 100, 200, 253, 255, 3};
  unsigned char rgb[3 * W * H];
  palette_rgb(idx, W * H, pal, rgb);
  bmp_spec sp = {12, W, H, 0, 8, 0, 0, 256, pal, 0};
  size_t n;
  unsigned char *b = make_bmp(&sp, idx, &n);
  expect_rgb(b, n, W, H, rgb, "OS/2 8-bit, index 253 and 255");
  free(b);
  sp.entries = 120; /* the offset leaves room for 120 */
  idx[4] = 50;
  idx[5] = 119;
  idx[6] = 3;
  palette_rgb(idx, W * H, pal, rgb);
  b = make_bmp(&sp, idx, &n);
  expect_rgb(b, n, W, H, rgb, "OS/2 8-bit, 120 colours");
  free(b);
  idx[5] = 120;
  b = make_bmp(&sp, idx, &n);
  expect_refused(b, n, IMGSTAT_ERR_FORMAT,
                 "Corrupt BMP data: pixel index 120 beyond its palette of 120 "
                 "colours",
                 "OS/2 index 120 of 120");
  free(b);

  unsigned char bits1[W * H] = {0, 1, 1, 0, 1, 0, 0, 1};
  unsigned char rgb1[3 * W * H];
  palette_rgb(bits1, W * H, two_colours, rgb1);
  bmp_spec sp1 = {12, W, H, 0, 1, 0, 0, 2, two_colours, 0};
  b = make_bmp(&sp1, bits1, &n);
  expect_rgb(b, n, W, H, rgb1, "OS/2 1-bit, 2 colours");
  free(b);
}

/* ---- compression -------------------------------------------------------- */

/* stb read the compression field as an int: 0xffffffff passed as 0. A
 * value that is no BMP compression is damaged data; JPEG, PNG and CMYK are
 * BMP compressions imgstat does not read (unsupported, not corrupt); RLE
 * with the wrong depth is damaged. */
static void test_bmp_unknown_compression(void) {
  enum { W = 3, H = 2 };
  unsigned char idx[W * H] = {0, 1, 1, 0, 0, 1}, rgb[3 * W * H];
  palette_rgb(idx, W * H, two_colours, rgb);
  bmp_spec sp = {40, W, H, 0, 8, 0, 2, 2, two_colours, 0};
  size_t n;
  unsigned char *b = make_bmp(&sp, idx, &n);
  expect_rgb(b, n, W, H, rgb, "compression 0");
  static const struct {
    uint32_t compression;
    imgstat_status status;
    const char *text;
  } refused[] = {
      {0xffffffffu, IMGSTAT_ERR_FORMAT,
       "Corrupt BMP data: compression 4294967295 is not a BMP compression"},
      {0x80000000u, IMGSTAT_ERR_FORMAT,
       "Corrupt BMP data: compression 2147483648 is not a BMP compression"},
      {7, IMGSTAT_ERR_FORMAT,
       "Corrupt BMP data: compression 7 is not a BMP compression"},
      {2, IMGSTAT_ERR_FORMAT,
       "Corrupt BMP data: RLE4 compression with 8 bits per pixel"},
      {3, IMGSTAT_ERR_FORMAT,
       "Corrupt BMP data: bit fields with 8 bits per pixel"},
      {4, IMGSTAT_ERR_UNSUPPORTED, "BMP compression 4 (JPEG) is not supported"},
      {5, IMGSTAT_ERR_UNSUPPORTED, "BMP compression 5 (PNG) is not supported"},
      {11, IMGSTAT_ERR_UNSUPPORTED,
       "BMP compression 11 (CMYK) is not supported"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    le32(b + 30, refused[i].compression);
    expect_refused(b, n, refused[i].status, refused[i].text, refused[i].text);
  }
  free(b);

  /* BI_BITFIELDS: 32-bit pixels X, R, G, B from the high byte down. */
  unsigned char px[3 * W * H];
  ramp(px, sizeof px, 37, 5);
  bmp_spec sp32 = {40, W, H, 0, 32, 0, 0, 0, NULL, 0};
  b = make_bmp(&sp32, px, &n);
  /* Room for the 3 masks after the 40-byte header. */
  unsigned char *bf = malloc(n + 12);
  CU_ASSERT_FATAL(bf != NULL);
  memcpy(bf, b, 54);
  le32(bf + 2, (uint32_t)n + 12);
  le32(bf + 10, 66);
  le32(bf + 30, 3);
  le32(bf + 54, 0x00ff0000u);
  le32(bf + 58, 0x0000ff00u);
  le32(bf + 62, 0x000000ffu);
  memcpy(bf + 66, b + 54, n - 54);
  expect_rgb(bf, n + 12, W, H, px, "BI_BITFIELDS");
  free(bf);
  free(b);
}

/* ---- top-down rows ------------------------------------------------------ */

/* A negative height means rows stored top first (Windows tools, Pillow):
 * it was refused as "image is 7x-5"; it must read as the same pixels as
 * the bottom-up file. */
static void test_bmp_top_down(void) {
  enum { W = 7, H = 5 };
  unsigned char px[3 * W * H];
  ramp(px, sizeof px, 11, 3);
  static const unsigned bits[] = {24, 32};
  for (int k = 0; k < 2; k++)
    for (int top_down = 0; top_down < 2; top_down++) {
      bmp_spec sp = {40, W, H, top_down, bits[k], 0, 0, 0, NULL, 0};
      size_t n;
      unsigned char *b = make_bmp(&sp, px, &n);
      char what[64];
      snprintf(what, sizeof what, "%u-bit %s", bits[k],
               top_down ? "top-down" : "bottom-up");
      expect_rgb(b, n, W, H, px, what);
      free(b);
    }
}

/* ---- least input and peak memory ---------------------------------------- */

/* The least input is the header, every row padded, but the last row's
 * padding (some writers drop it): such a file loads, one byte less is
 * refused before anything is allocated, and so is a large header in a small
 * file. */
static void test_bmp_min_input(void) {
  enum { W = 7, H = 5 };
  unsigned char px[3 * W * H];
  ramp(px, sizeof px, 5, 1);
  bmp_spec sp = {40, W, H, 0, 24, 0, 0, 0, NULL, 1};
  size_t n;
  unsigned char *b = make_bmp(&sp, px, &n);
  CU_ASSERT_EQUAL(n, 54 + 4 * 24 + 21); /* rows of 21 bytes padded to 24 */
  expect_rgb(b, n, W, H, px, "last row unpadded");
  expect_refused(
      b, n - 1, IMGSTAT_ERR_FORMAT,
      "Corrupt BMP data: header claims 7x5 pixels, which takes at least 171 "
      "bytes of data, but the file has 170",
      "one byte short");
  /* 8-bit: offset 54 + 8 bytes of palette, rows of 7 bytes padded to 8. */
  unsigned char idx[W * H] = {0};
  bmp_spec sp8 = {40, W, H, 1, 8, 0, 2, 2, two_colours, 1};
  free(b);
  b = make_bmp(&sp8, idx, &n);
  CU_ASSERT_EQUAL(n, 62 + 4 * 8 + 7);
  expect_refused(b, n - 1, IMGSTAT_ERR_FORMAT, "takes at least 101 bytes",
                 "8-bit one byte short");
  /* 10000 x 10000 RGB (300 MB) claimed by a 1 KB file. */
  le32(b + 18, 10000);
  le32(b + 22, 10000);
  le16(b + 28, 24);
  le32(b + 10, 54);
  expect_refused(b, n, IMGSTAT_ERR_FORMAT,
                 "Corrupt BMP data: header claims 10000x10000", "10000x10000");
  free(b);
}

/* --max-memory gets the decoded bytes a BMP holds at once: the planes (one
 * for a gray palette, 3 when a 32-bit BI_RGB file's unused byte is
 * dropped), one stored row, a row of indices and a row of samples. */
static void test_bmp_peak_bytes(void) {
  enum { W = 7, H = 5, P = W * H };
  unsigned char px[3 * P];
  ramp(px, sizeof px, 3, 0);
  unsigned char gray[3 * 256];
  for (int i = 0; i < 256; i++)
    gray[3 * i] = gray[3 * i + 1] = gray[3 * i + 2] = (unsigned char)i;
  unsigned char idx[P];
  for (int i = 0; i < P; i++)
    idx[i] = (unsigned char)(i % 2);
  struct {
    bmp_spec sp;
    const unsigned char *pixels;
    uint64_t peak;
    int channels;
  } cases[] = {
      {{40, W, H, 0, 24, 0, 0, 0, NULL, 0}, px, 3 * P + 24 + W + 3 * W, 3},
      {{40, W, H, 0, 32, 0, 0, 0, NULL, 0}, px, 3 * P + 28 + W + 3 * W, 3},
      {{40, W, H, 0, 8, 0, 2, 2, two_colours, 0},
       idx,
       3 * P + 8 + W + 3 * W,
       3},
      {{40, W, H, 0, 8, 0, 0, 256, gray, 0}, idx, P + 8 + W + W, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n;
    unsigned char *b = make_bmp(&cases[i].sp, cases[i].pixels, &n);
    imgstat_image img;
    imgstat_error err;
    imgstat_status s = load(b, n, cases[i].peak, &img, &err);
    if (s != IMGSTAT_OK)
      printf("\n  case %zu: %s\n", i, err.message);
    CU_ASSERT_EQUAL(s, IMGSTAT_OK);
    if (s == IMGSTAT_OK) {
      CU_ASSERT_EQUAL(img.channels, cases[i].channels);
      imgstat_image_free(&img);
    }
    s = load(b, n, cases[i].peak - 1, &img, &err);
    CU_ASSERT_EQUAL(s, IMGSTAT_ERR_LIMIT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "(max_memory)"));
    CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_MAX_MEMORY);
    CU_ASSERT_EQUAL(err.limit, cases[i].peak - 1);
    CU_ASSERT_EQUAL(err.value, cases[i].peak);
    free(b);
  }
}

/* ---- JPEG scans --------------------------------------------------------- */

/* progressive.jpg with `extra` more copies of its first DC refinement scan
 * (SOS 0xFFDA with Ss = 0, Ah = 1) before the end marker. */
static unsigned char *jpeg_with_scans(const unsigned char *jpeg, size_t n,
                                      int extra, int *scans, size_t *size) {
  size_t seg = 0, seg_len = 0, eoi = 0;
  *scans = 0;
  for (size_t i = 2; i + 1 < n;) {
    if (jpeg[i] != 0xFF) {
      i++;
      continue;
    }
    unsigned m = jpeg[i + 1];
    if (m == 0x00 || m == 0xFF || (m >= 0xD0 && m <= 0xD7)) {
      i++;
      continue;
    }
    if (m == 0xD9) {
      eoi = i;
      break;
    }
    size_t len = (size_t)jpeg[i + 2] << 8 | jpeg[i + 3];
    if (m == 0xDA) {
      ++*scans;
      unsigned ncomp = jpeg[i + 4];
      unsigned ss = jpeg[i + 5 + 2 * ncomp], ah = jpeg[i + 7 + 2 * ncomp] >> 4;
      if (!seg && ss == 0 && ah == 1) {
        seg = i; /* the segment and its entropy-coded data, to the next */
        size_t j = i + 2 + len;
        while (j + 1 < n && !(jpeg[j] == 0xFF && jpeg[j + 1] != 0 &&
                              (jpeg[j + 1] < 0xD0 || jpeg[j + 1] > 0xD7)))
          j++;
        seg_len = j - i;
      }
    }
    i += 2 + len;
  }
  CU_ASSERT_FATAL(seg != 0 && eoi != 0);
  *size = n + (size_t)extra * seg_len;
  unsigned char *out = malloc(*size);
  CU_ASSERT_FATAL(out != NULL);
  memcpy(out, jpeg, eoi);
  for (int k = 0; k < extra; k++)
    memcpy(out + eoi + (size_t)k * seg_len, jpeg + seg, seg_len);
  memcpy(out + eoi + (size_t)extra * seg_len, jpeg + eoi, n - eoi);
  *scans += extra;
  return out;
}

static imgstat_status stb_jpeg(const unsigned char *data, size_t size,
                               imgstat_error *err) {
  ist_source src = {0};
  src.data = data;
  src.size = size;
  ist_limits lim = {IMGSTAT_DEFAULT_MAX_PIXELS, IMGSTAT_DEFAULT_MAX_MEMORY};
  imgstat_image img;
  memset(err, 0, sizeof *err);
  imgstat_status s = ist_stb_decode(&src, IMGSTAT_KIND_JPEG, &lim, &img, err);
  if (s == IMGSTAT_OK) {
    CU_ASSERT(img.width == 37 && img.height == 23);
    imgstat_image_free(&img);
  }
  return s;
}

/* Each scan is a pass over the whole image for stb: thousands of them cost
 * time without bound. Up to TurboJPEG's limit of 500 they decode, one more
 * is refused, on stb's path (CMYK JPEGs, builds without TurboJPEG). */
static void test_jpeg_scan_limit(void) {
  size_t n;
  unsigned char *jpeg =
      test_read_file(test_path(test_data_dir(), "formats/progressive.jpg"), &n);
  CU_ASSERT_FATAL(jpeg != NULL);
  int base = 0;
  size_t size;
  free(jpeg_with_scans(jpeg, n, 0, &base, &size));
  CU_ASSERT_FATAL(base > 1 && base < 500);
  imgstat_error err;
  int scans;
  unsigned char *many = jpeg_with_scans(jpeg, n, 500 - base, &scans, &size);
  CU_ASSERT_EQUAL(scans, 500);
  imgstat_status s = stb_jpeg(many, size, &err);
  if (s != IMGSTAT_OK)
    printf("\n  500 scans: %s\n", err.message);
  CU_ASSERT_EQUAL(s, IMGSTAT_OK);
  free(many);

  static const int over[] = {501, 5000};
  for (int k = 0; k < 2; k++) {
    many = jpeg_with_scans(jpeg, n, over[k] - base, &scans, &size);
    CU_ASSERT_EQUAL(scans, over[k]);
    s = stb_jpeg(many, size, &err);
    CU_ASSERT_EQUAL(s, IMGSTAT_ERR_FORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "more than 500 scans"));
    free(many);
  }
  free(jpeg);
}

static const test_case tests[] = {
    {"bmp", NULL},
    {"pixel index beyond the palette", test_bmp_index_beyond_palette},
    {"OS/2 palette", test_bmp_os2_palette},
    {"unknown compression", test_bmp_unknown_compression},
    {"top-down rows", test_bmp_top_down},
    {"least input", test_bmp_min_input},
    {"peak bytes", test_bmp_peak_bytes},
    {"jpeg", NULL},
    {"scan limit on stb's path", test_jpeg_scan_limit},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
