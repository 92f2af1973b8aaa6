/*
 * Hardening of the stb_image formats: HDR headers read as stb
 * reads them and no endless run-length loop, short reads reported and no
 * stale memory handed back, the least input and the peak memory a header
 * asks for, PSD channel counts. Every input is built here, byte by byte.
 */
#include "imgstat/imgstat.h"
#include "io.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ASSERT_MSG(cond, msg)                                                  \
  CU_assertImplementation((cond) ? CU_TRUE : CU_FALSE, __LINE__, (msg),        \
                          __FILE__, "", CU_FALSE)

/* ---- building inputs ----------------------------------------------------- */

/* A TGA header: no ID, no palette, top-down. type 2 RGB, 3 gray, +8 RLE. */
static void tga_header(test_buf *b, int type, unsigned w, unsigned h,
                       int bits) {
  unsigned char head[12] = {0, 0, (unsigned char)type};
  test_put(b, head, sizeof head);
  test_put_le16(b, w);
  test_put_le16(b, h);
  test_put_byte(b, bits, 1);
  test_put_byte(b, 0x20, 1);
}

/* A PSD header (version 1, RGB mode), empty sections, the compression. */
static void psd_header(test_buf *b, unsigned channels, uint32_t w, uint32_t h,
                       unsigned depth, unsigned compression) {
  test_put_str(b, "8BPS");
  test_put_be16(b, 1);
  test_put_byte(b, 0, 6);
  test_put_be16(b, channels);
  test_put_be32(b, h);
  test_put_be32(b, w);
  test_put_be16(b, depth);
  test_put_be16(b, 3);
  test_put_be32(b, 0);
  test_put_be32(b, 0);
  test_put_be32(b, 0);
  test_put_be16(b, compression);
}

static void hdr_header(test_buf *b, int w, int h) {
  char line[64];
  test_put_str(b, "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n");
  snprintf(line, sizeof line, "-Y %d +X %d\n", h, w);
  test_put_str(b, line);
}

/* One new-style run-length scanline of a constant pixel (runs of 127). */
static void hdr_rle_line(test_buf *b, int w, const unsigned char rgbe[4]) {
  unsigned char head[4] = {2, 2, (unsigned char)(w >> 8), (unsigned char)w};
  test_put(b, head, 4);
  for (int k = 0; k < 4; k++)
    for (int x = 0; x < w;) {
      int run = w - x < 127 ? w - x : 127;
      unsigned char pkt[2] = {(unsigned char)(run > 1 ? 128 + run : 1),
                              rgbe[k]};
      test_put(b, pkt, 2);
      x += run;
    }
}

/* A GIF's header: a canvas of w x h, a global palette of 2 colours, and
 * the descriptor of a frame_w x frame_h frame at (0,0). */
static void gif_start(test_buf *b, unsigned w, unsigned h, unsigned frame_w,
                      unsigned frame_h) {
  test_put_str(b, "GIF89a");
  test_put_le16(b, w);
  test_put_le16(b, h);
  test_put_byte(b, 0x80, 1); /* a global palette of 2 << 0 entries */
  test_put_byte(b, 0, 2);
  static const unsigned char pal[6] = {10, 20, 30, 40, 50, 60};
  test_put(b, pal, sizeof pal);
  test_put_byte(b, 0x2C, 1);
  test_put_le16(b, 0);
  test_put_le16(b, 0);
  test_put_le16(b, frame_w);
  test_put_le16(b, frame_h);
  test_put_byte(b, 0, 1);
}

/* A GIF with a global palette of 2 colours whose first frame is the
 * frame_w x frame_h rectangle at (0,0), holding one pixel of colour 0 (LZW
 * minimum code size 2; codes clear, 0, end, of 3 bits each). */
static void gif_small_frame(test_buf *b, unsigned w, unsigned h,
                            unsigned frame_w, unsigned frame_h) {
  gif_start(b, w, h, frame_w, frame_h);
  static const unsigned char lzw[] = {2, 2, 0x44, 0x01, 0, 0x3B};
  test_put(b, lzw, sizeof lzw);
}

/* A GIF (palette of 2 colours, LZW minimum code size 2) whose first frame
 * is frame_w x frame_h at (0,0), canvas the same, and whose LZW data is a
 * run of colour 0 at its best: clear, code 0, then k codes each naming the
 * code created just before (strings of 2, 3, ... k + 1 pixels), then end;
 * (k + 1)(k + 2) / 2 pixels in all. Code sizes grow as a GIF decoder
 * expects. */
static void gif_chain(test_buf *b, unsigned frame_w, unsigned frame_h, int k) {
  gif_start(b, frame_w, frame_h, frame_w, frame_h);
  test_put_byte(b, 2, 1);
  test_buf data = {0};
  uint32_t acc = 0;
  int nbits = 0, size = 3, avail = 6;
  int codes[3] = {4, 0, 0};
  for (int i = -2; i <= k; i++) {
    int code = i < 0 ? codes[i + 2] : i < k ? avail : 5;
    acc |= (uint32_t)code << nbits;
    nbits += i < 0 ? 3 : size;
    while (nbits >= 8) {
      test_put_byte(&data, (int)(acc & 255), 1);
      acc >>= 8;
      nbits -= 8;
    }
    if (i >= 0 && i < k && (++avail & ((1 << size) - 1)) == 0 && avail <= 0xFFF)
      size++;
  }
  if (nbits > 0)
    test_put_byte(&data, (int)acc, 1);
  for (size_t at = 0; at < data.n; at += 255) {
    size_t n = data.n - at < 255 ? data.n - at : 255;
    test_put_byte(b, (int)n, 1);
    test_put(b, data.p + at, n);
  }
  test_put_byte(b, 0, 1);
  test_put_byte(b, 0x3B, 1);
  free(data.p);
}

/* ---- loading --------------------------------------------------------------
 */

/* Loads data in a child process killed after 30 seconds, so that a decoder
 * that never returns fails the test instead of hanging it. Returns the
 * status, or -1 when the child did not finish; the message goes to msg. */
static int load_bounded(const void *data, size_t size, char *msg,
                        size_t msg_size) {
  test_child_load r = test_load_in_child(NULL, data, size, NULL, 30, 0);
  snprintf(msg, msg_size, "%s", r.message);
  return r.status;
}

static imgstat_status load(const test_buf *b, const imgstat_load_options *opts,
                           imgstat_image *img, imgstat_error *err) {
  memset(err, 0, sizeof *err);
  return imgstat_image_load_memory(b->p, b->n, opts, img, err);
}

/* Loading b (its first n bytes) fails with status and a message that
 * contains want. */
static void expect_refused(const test_buf *b, size_t n, imgstat_status status,
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

/* Loads b, which must work and give a w x h image of that many channels;
 * returns whether it did. The image is the caller's to free. */
static int load_ok(const test_buf *b, const imgstat_load_options *opts,
                   uint32_t w, uint32_t h, int channels, const char *what,
                   imgstat_image *img) {
  imgstat_error err;
  imgstat_status s = load(b, opts, img, &err);
  char msg[1400];
  snprintf(msg, sizeof msg, "%s: status %d, message '%s'", what, (int)s,
           err.message);
  ASSERT_MSG(s == IMGSTAT_OK, msg);
  int shape = s == IMGSTAT_OK && img->width == w && img->height == h &&
              img->channels == channels;
  if (s == IMGSTAT_OK)
    ASSERT_MSG(shape, msg);
  return shape;
}

static void expect_loads(const test_buf *b, const imgstat_load_options *opts,
                         uint32_t w, uint32_t h, int channels,
                         const char *what) {
  imgstat_image img;
  load_ok(b, opts, w, h, channels, what, &img);
  imgstat_image_free(&img);
}

/* b loads, and its first b->n - 1 bytes are refused with a message that
 * contains want; then b is cleared. */
static void expect_exact_bound(test_buf *b, uint32_t w, uint32_t h,
                               int channels, const char *want, const char *what,
                               const char *what_short) {
  expect_loads(b, NULL, w, h, channels, what);
  expect_refused(b, b->n - 1, IMGSTAT_ERR_FORMAT, want, what_short);
  test_buf_clear(b);
}

/* ---- HDR ----------------------------------------------------------------- */

/* A header line that starts with NUL is the end of the header (an empty
 * line, as stb_image, which read HDR before src/io/hdr.c, took it). Here
 * the header ends there, its size line is "-Y 1 +X 16", and its run-length
 * data runs to the end of the file with a zero count on which stb's loop
 * used to spin for ever (a rebuild of the attack's 56-byte file): refused
 * as truncated, from its size or when the data runs out. */
static void test_hdr_nul_line_no_hang(void) {
  static const char hang[] = "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n"
                             "\0\n"
                             "-Y 1 +X 16\n"
                             "\x02\x02\x00\x10"
                             "\n"
                             "\n-Y 1 +X 2";
  char msg[1024];
  int s = load_bounded(hang, sizeof hang - 1, msg, sizeof msg);
  ASSERT_MSG(s == IMGSTAT_ERR_FORMAT && strstr(msg, "truncated") != NULL, msg);

  /* The same end reached without NUL: run-length data that stops after a
   * run, a literal, and zero counts. */
  const char *tails[] = {"\x02\x02\x00\x10\x90\x01",
                         "\x02\x02\x00\x10\x03\x01\x02\x03",
                         "\x02\x02\x00\x10\x00\x00\x00", "\x02\x02\x00", ""};
  size_t tail_len[] = {6, 8, 7, 3, 0};
  for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
    test_buf b = {0};
    hdr_header(&b, 16, 2);
    test_put(&b, tails[i], tail_len[i]);
    s = load_bounded(b.p, b.n, msg, sizeof msg);
    ASSERT_MSG(s == IMGSTAT_ERR_FORMAT && strstr(msg, "truncated") != NULL,
               msg);
    free(b.p);
  }
}

/* A complete file whose header has a NUL line is read as stb reads it
 * (it was refused as "truncated"): stb's header ends at that line. */
static void test_hdr_nul_line_read(void) {
  static const char two[] = "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n"
                            "\0 anything\n"
                            "-Y 1 +X 2\n"
                            "\x80\x40\x20\x81"  /* 1, .5, .25 */
                            "\x01\x00\x00\x00"; /* e 0: zero */
  test_buf b = {0};
  test_put(&b, two, sizeof two - 1);
  imgstat_image img;
  if (load_ok(&b, NULL, 2, 1, 3, "a NUL header line", &img)) {
    CU_ASSERT_EQUAL(img.sample, IMGSTAT_F32);
    const float want[3][2] = {{1.0f, 0}, {0.5f, 0}, {0.25f, 0}};
    for (int c = 0; c < 3; c++)
      for (int x = 0; x < 2; x++)
        CU_ASSERT_EQUAL(((const float *)img.planes[c])[x], want[c][x]);
  }
  imgstat_image_free(&img);
  test_buf_clear(&b);

  /* stb compares the FORMAT line as a C string: what follows a NUL in it
   * does not count. */
  static const char fmt[] = "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\0junk\n\n"
                            "-Y 1 +X 1\n\x80\x80\x80\x81";
  test_put(&b, fmt, sizeof fmt - 1);
  expect_loads(&b, NULL, 1, 1, 3, "FORMAT line with a NUL");
  free(b.p);
}

/* A flat (or run-length-width) file too short for its pixels is truncated,
 * and said so; one in the old run-length encoding, which marks runs with a
 * (1,1,1,n) pixel repeating the pixel before, is read. */
static void test_hdr_reasons(void) {
  test_buf b = {0};
  hdr_header(&b, 4, 3);
  test_put_byte(&b, 0x80, 4 * 12 - 1);
  expect_refused(&b, b.n, IMGSTAT_ERR_FORMAT, "file is truncated",
                 "flat HDR one byte short");
  test_put_byte(&b, 0x81, 1);
  expect_loads(&b, NULL, 4, 3, 3, "flat HDR complete");
  test_buf_clear(&b);

  hdr_header(&b, 64, 4);
  static const unsigned char first[4] = {64, 128, 192, 127};
  static const unsigned char run[4] = {1, 1, 1, 63};
  for (int y = 0; y < 4; y++) {
    test_put(&b, first, 4);
    test_put(&b, run, 4);
  }
  imgstat_image img;
  if (load_ok(&b, NULL, 64, 4, 3, "old run-length encoding", &img)) {
    /* every pixel (64, 128, 192) * 2^(127 - 136) */
    size_t wrong = 0;
    for (int c = 0; c < 3; c++)
      for (size_t i = 0; i < 64 * 4; i++)
        wrong +=
            ((const float *)img.planes[c])[i] != (float)(64 * (c + 1)) / 512;
    CU_ASSERT_EQUAL(wrong, 0);
  }
  imgstat_image_free(&img);
  free(b.p);
}

/* ---- short reads and stale memory ---------------------------------------- */

/* A 128x2 gray uncompressed TGA: stb reads each row of 128 bytes with
 * stbi__getn, and the second row straight from the input (its buffer is
 * empty by then), a read of exactly 128 bytes. Cut 64 bytes into that row,
 * the short read was taken for the end of a buffer refill, and the missing
 * half row came back as whatever the heap held: here, the pixels of the
 * image decoded just before. */
static void tga_128x2(test_buf *b, size_t data_bytes, int value) {
  tga_header(b, 3, 128, 2, 8);
  test_put_byte(b, value, data_bytes);
}

static void test_tga_truncated_no_stale_bytes(void) {
  test_buf full = {0}, cut = {0};
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
  test_buf rle = {0}, rgb16 = {0};
  tga_header(&rle, 10, 200, 3, 24);
  for (int i = 0; i < 20; i++) {
    test_put_byte(&rle, 0x1D, 1); /* a raw packet of 30 pixels */
    for (int k = 0; k < 90; k++)
      test_put_byte(&rle, i + k, 1);
  }
  tga_header(&rgb16, 2, 30, 3, 16);
  test_put_byte(&rgb16, 0x5A, 30 * 3 * 2);
  const test_buf *all[] = {&full, &rle, &rgb16};
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
 * size, and the missing bytes must still be caught (stb's empty refill),
 * never read as zeros. A raw 8-bit RGB PSD of 100x2 (40 header bytes, 600
 * samples) cut 300 bytes into its samples. stb's remaining loaders (PSD,
 * JPEG) read only through their 128-byte buffer; the direct-read branch of
 * on_stb_read served TGA and PNM, which are ours now. */
static void test_short_read_reported(void) {
  test_buf cut = {0};
  psd_header(&cut, 3, 100, 2, 8, 0);
  test_put_byte(&cut, 0x07, 300);
  FILE *f = tmpfile();
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT_FATAL(fwrite(cut.p, 1, cut.n, f) == cut.n);
  rewind(f);
  ist_source src = {0};
  src.file = f;
  src.size = 40 + 600; /* what the header needs */
  ist_limits lim = {IMGSTAT_DEFAULT_MAX_PIXELS, IMGSTAT_DEFAULT_MAX_MEMORY};
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s = ist_stb_decode(&src, IMGSTAT_KIND_PSD, &lim, &img, &err);
  ASSERT_MSG(s == IMGSTAT_ERR_FORMAT &&
                 strstr(err.message, "data: file is truncated") != NULL,
             err.message);
  if (s == IMGSTAT_OK)
    imgstat_image_free(&img);
  fclose(f);
  free(cut.p);
}

/* ---- small files, huge headers; exact bounds ----------------------------- */

/* Files of a few dozen bytes whose headers claim images of up to a
 * gigabyte are refused from the header, before anything is allocated. */
static void test_small_files_huge_headers(void) {
  test_buf b = {0};
  if (test_format_built("GIF")) {
    gif_small_frame(&b, 16384, 16384, 16384, 16384);
    CU_ASSERT_EQUAL(b.n, 35);
    expect_refused(&b, b.n, IMGSTAT_ERR_FORMAT, "header claims", "35-byte GIF");
    test_buf_clear(&b);
  }

  tga_header(&b, 11, 32768, 32768, 8);
  for (int i = 0; i < 32; i++)
    test_put_byte(&b, i == 31 ? 0 : 0xFF, 2); /* packets of 128 */
  CU_ASSERT_EQUAL(b.n, 82);
  expect_refused(&b, b.n, IMGSTAT_ERR_FORMAT, "header claims", "82-byte TGA");
  test_buf_clear(&b);

  for (unsigned compression = 0; compression <= 1; compression++) {
    psd_header(&b, 3, 16000, 16000, 8, compression);
    test_put_byte(&b, 0x81, 104 - b.n);
    expect_refused(&b, b.n, IMGSTAT_ERR_FORMAT, "header claims",
                   "104-byte PSD");
    test_buf_clear(&b);
  }

  int widths[] = {4, 30000};
  for (int i = 0; i < 2; i++) {
    hdr_header(&b, widths[i], 30000);
    test_put_byte(&b, 0x80, 8);
    expect_refused(&b, b.n, IMGSTAT_ERR_FORMAT, "header claims", "small HDR");
    test_buf_clear(&b);
  }

  test_put_str(&b, "P6 20000 20000 255\n");
  test_put_byte(&b, 1, 20);
  expect_refused(&b, b.n, IMGSTAT_ERR_FORMAT, "header claims", "small PNM");
  free(b.p);
}

/* Files at each format's best compression load, and a byte less is
 * refused: the bounds are exact where the coding allows it. */
static void test_exact_bounds(void) {
  /* Uncompressed TGA: header + every pixel. */
  test_buf b = {0};
  tga_header(&b, 2, 5, 3, 24);
  test_put_byte(&b, 9, 45);
  expect_exact_bound(&b, 5, 3, 3, "header claims", "TGA raw", "TGA raw short");

  /* Run-length TGA: a 128-pixel run packet each, across rows. */
  tga_header(&b, 10, 100, 64, 24);
  for (int i = 0; i < 50; i++) {
    test_put_byte(&b, 0xFF, 1);
    test_put_byte(&b, i, 3);
  }
  expect_exact_bound(&b, 100, 64, 3, "header claims",
                     "TGA RLE at 128 pixels a packet", "TGA RLE short");

  /* PSD raw: every sample; PackBits: row lengths and a run per 128. */
  psd_header(&b, 3, 7, 5, 16, 0);
  test_put_byte(&b, 0x12, 3 * 7 * 5 * 2);
  expect_exact_bound(&b, 7, 5, 3, "header claims", "PSD raw 16-bit",
                     "PSD raw short");
  psd_header(&b, 3, 256, 4, 8, 1);
  for (int r = 0; r < 3 * 4; r++)
    test_put_be16(&b, 4);
  for (int r = 0; r < 3 * 4; r++) {
    test_put_byte(&b, 0x81, 1); /* 128 copies */
    test_put_byte(&b, r, 1);
    test_put_byte(&b, 0x81, 1);
    test_put_byte(&b, r, 1);
  }
  expect_exact_bound(&b, 256, 4, 3, "header claims",
                     "PSD PackBits at 128 bytes a run", "PSD PackBits short");

  /* HDR run-length: a 2-byte run per 127 pixels and component. */
  hdr_header(&b, 254, 3);
  static const unsigned char px[4] = {0x80, 0x40, 0x20, 0x81};
  for (int y = 0; y < 3; y++)
    hdr_rle_line(&b, 254, px);
  expect_exact_bound(&b, 254, 3, 3, "truncated", "HDR at 127 pixels a run",
                     "HDR short");

  /* PNM: header + every sample. */
  test_put_str(&b, "P5 3 2 65535\n");
  test_put_byte(&b, 0x42, 12);
  expect_exact_bound(&b, 3, 2, 1, "header claims", "PGM 16-bit", "PGM short");

  /* GIF: the canvas can be far larger than the first frame, which alone
   * the LZW data must fill. */
  if (test_format_built("GIF")) {
    gif_small_frame(&b, 3000, 1000, 1, 1);
    expect_loads(&b, NULL, 3000, 1000, 3, "GIF, a 1x1 frame on a large canvas");
    test_buf_clear(&b);
    gif_small_frame(&b, 3000, 1000, 3000, 1000);
    expect_refused(&b, b.n, IMGSTAT_ERR_FORMAT, "header claims",
                   "GIF, a large frame in 2 bytes of LZW data");
  }
  free(b.p);
}

/* LZW data that fills its frame exactly loads; the same data behind a 1x1
 * frame loads too, and at once: giflib decodes a frame's pixels and skips
 * the data blocks after them unread (stb_image, which read GIFs before,
 * walked every code's chain and took seconds for such a file). */
static void test_gif_lzw_work(void) {
  if (!test_format_built("GIF")) {
    printf("skipped: built without giflib ");
    return;
  }
  test_buf b = {0};
  gif_chain(&b, 2001, 1001, 2000); /* 2001 * 2002 / 2 pixels */
  imgstat_image img;
  if (load_ok(&b, NULL, 2001, 1001, 3, "LZW data that fills its frame", &img)) {
    size_t n = (size_t)img.width * img.height, wrong = 0;
    for (size_t i = 0; i < n; i++)
      wrong += ((const uint8_t *)img.planes[0])[i] != 10 ||
               ((const uint8_t *)img.planes[2])[i] != 30;
    CU_ASSERT_EQUAL(wrong, 0);
  }
  imgstat_image_free(&img);
  test_buf_clear(&b);

  gif_chain(&b, 1, 1, 2000);
  double t0 = test_now();
  if (load_ok(&b, NULL, 1, 1, 3, "GIF: 2 million pixels of data for 1", &img))
    CU_ASSERT_EQUAL(((const uint8_t *)img.planes[1])[0], 20);
  imgstat_image_free(&img);
  CU_ASSERT(test_now() - t0 < 0.5);
  free(b.p);
}

/* The memory a decode holds at its peak is counted exactly: --max-memory
 * equal to it loads, a byte less is refused. The planes are allocated
 * before stb decodes (the loader seam: header, planes, pixels), so they are
 * held beside stb's buffers. */
static void expect_peak(const test_buf *b, uint64_t peak, uint32_t w,
                        uint32_t h, int channels, const char *what) {
  imgstat_load_options opts = {.max_memory = peak};
  expect_loads(b, &opts, w, h, channels, what);
  opts.max_memory = peak - 1;
  imgstat_image img;
  imgstat_error err;
  imgstat_status s = load(b, &opts, &img, &err);
  char msg[1400];
  snprintf(msg, sizeof msg, "%s with a byte less: status %d '%s'", what, (int)s,
           err.message);
  ASSERT_MSG(s == IMGSTAT_ERR_LIMIT, msg);
  imgstat_image_free(&img);
}

static void test_peak_memory(void) {
  uint64_t p = 40 * 30;
  test_buf b = {0};
  tga_header(&b, 3, 40, 30, 8);
  test_put_byte(&b, 3, p);
  /* tga.c: the planes, a row of samples, 128 stored pixels */
  expect_peak(&b, p + 40 + 128, 40, 30, 1, "gray TGA: the plane and buffers");
  test_buf_clear(&b);

  tga_header(&b, 2, 40, 30, 24);
  test_put_byte(&b, 3, 3 * p);
  expect_peak(&b, 3 * p + 3 * 40 + 3 * 128, 40, 30, 3,
              "RGB TGA: 3 planes and buffers");
  test_buf_clear(&b);

  if (test_format_built("GIF")) {
    gif_small_frame(&b, 40, 30, 1, 1);
    expect_peak(&b, 3 * p + 1, 40, 30, 3, "GIF: 3 planes and a frame's row");
    test_buf_clear(&b);
  }

  psd_header(&b, 3, 40, 30, 8, 0);
  test_put_byte(&b, 3, 3 * p);
  expect_peak(&b, 7 * p, 40, 30, 3, "RGB PSD: stb's RGBA and 3 planes");
  test_buf_clear(&b);

  hdr_header(&b, 40, 30);
  static const unsigned char px[4] = {0x80, 0x40, 0x20, 0x81};
  for (int y = 0; y < 30; y++)
    hdr_rle_line(&b, 40, px);
  expect_peak(&b, 12 * p + 4 * 40, 40, 30, 3,
              "HDR: 3 float planes and a scanline");
  test_buf_clear(&b);

  test_put_str(&b, "P5 40 30 1000\n");
  test_put_byte(&b, 1, 2 * p);
  expect_peak(&b, 2 * p + 2 * 40, 40, 30, 1,
              "16-bit PGM: the plane and one row of the file");
  free(b.p);
}

/* ---- PSD channels -------------------------------------------------------- */

static void test_psd_channel_count(void) {
  unsigned counts[] = {0, 57, 65535};
  for (size_t i = 0; i < 3; i++) {
    test_buf b = {0};
    psd_header(&b, counts[i], 2, 2, 8, 0);
    test_put_byte(&b, 7, 16);
    expect_refused(&b, b.n, IMGSTAT_ERR_FORMAT, "channels", "PSD channels");
    free(b.p);
  }
  for (unsigned ch = 1; ch <= 4; ch++) {
    test_buf b = {0};
    psd_header(&b, ch, 2, 2, 8, 0);
    test_put_byte(&b, 7, 4 * ch);
    expect_loads(&b, NULL, 2, 2, ch < 4 ? 3 : 4, "PSD of 1 to 4 channels");
    free(b.p);
  }
  /* stb reads 16-bit PackBits data as 8-bit samples. */
  test_buf b = {0};
  psd_header(&b, 3, 2, 1, 16, 1);
  for (int r = 0; r < 3; r++)
    test_put_be16(&b, 5);
  for (int r = 0; r < 3; r++) {
    static const unsigned char row[5] = {3, 0x12, 0x34, 0x56, 0x78};
    test_put(&b, row, 5);
  }
  expect_refused(&b, b.n, IMGSTAT_ERR_UNSUPPORTED, "16-bit run-length",
                 "16-bit PackBits PSD");
  free(b.p);
}

static const test_case tests[] = {
    {"hostile_stb", NULL},
    {"HDR: a NUL header line cannot make the reader spin",
     test_hdr_nul_line_no_hang},
    {"HDR: a NUL header line is read as stb reads it", test_hdr_nul_line_read},
    {"HDR: truncated and old run-length files, their reasons",
     test_hdr_reasons},
    {"TGA: truncated files refused, no stale bytes",
     test_tga_truncated_no_stale_bytes},
    {"a file that shrank is reported truncated", test_short_read_reported},
    {"small files with huge headers refused up front",
     test_small_files_huge_headers},
    {"least input: exact where the coding allows", test_exact_bounds},
    {"GIF: LZW data past the frame skipped", test_gif_lzw_work},
    {"peak memory counted exactly", test_peak_memory},
    {"PSD channel counts", test_psd_channel_count},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
