/*
 * Radiance HDR (RGBE), our own reader: float R, G, B, each sample
 * m * 2^(e - 136) (0 when e is 0), as stb_image computed it before, bit for
 * bit (tests/io/readers_check.py compares the two on every HDR file of the
 * corpus and tests/data).
 *
 * The header is read as stb_image read it: lines up to '\n' (1023 bytes
 * kept), compared as C strings, the first "#?RADIANCE" or "#?RGBE", the
 * header ending at an empty line (or one that starts with NUL); FORMAT,
 * when given, must be 32-bit_rle_rgbe; EXPOSURE and every other line are
 * ignored (values are the stored ones). The size line must be "-Y H +X W"
 * (rows top to bottom); the other orientations are refused.
 *
 * Each scanline is read as Radiance's freadcolrs reads it:
 *  - widths 8 to 32767 may be run-length coded (new style, 1991): a
 *    2, 2, W >> 8, W & 255 header, then each of the four components in runs
 *    (a count over 128: count - 128 copies of the next byte) and literals
 *    (a count up to 128: that many bytes);
 *  - any other scanline is flat RGBE pixels in the old (pre-1991)
 *    run-length coding: a pixel (1, 1, 1, n) repeats the pixel before it
 *    n times, n << 8 when it follows another such pixel, n << 16 after two,
 *    and so on.
 * A run past the end of its scanline, a run before any pixel and a
 * scanline header with another width are refused, as is a file that ends
 * before its last pixel.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* stb_image's header line buffer (STBI__HDR_BUFLEN). */
#define HDR_LINE 1024

typedef struct hdr_state {
  ist_bytes bytes;
  size_t data_offset;
  unsigned char *line; /* one scanline of RGBE, 4 * width bytes */
} hdr_state;

/* One header line as stb_image's stbi__hdr_gettoken reads it. */
static void hdr_line(ist_bytes *b, char *line) {
  size_t len = 0;
  int c;
  while ((c = ist_bytes_next(b)) >= 0 && c != '\n') {
    if (len < HDR_LINE - 1)
      line[len++] = (char)c;
  }
  line[len] = 0;
}

/* A positive decimal number of the size line at *t, past it. */
static int hdr_size(char **t, uint32_t *out) {
  errno = 0;
  char *end;
  long v = strtol(*t, &end, 10);
  if (end == *t || errno || v <= 0 || v > INT_MAX)
    return 0;
  *t = end;
  *out = (uint32_t)v;
  return 1;
}

imgstat_status ist_hdr_open(imgstat_decoder *d, imgstat_error *err) {
  hdr_state *hs = calloc(1, sizeof *hs);
  char *line = malloc(HDR_LINE);
  if (!hs || !line) {
    free(hs);
    free(line);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  d->state = hs;
  ist_bytes *b = &hs->bytes;
  imgstat_status s = ist_bytes_start(b, &d->src, 0, "HDR", err);
  if (s != IMGSTAT_OK)
    goto done;
  hdr_line(b, line);
  if (strcmp(line, "#?RADIANCE") != 0 && strcmp(line, "#?RGBE") != 0) {
    s = ist_corrupt(err, "HDR", "first line is not #?RADIANCE or #?RGBE");
    goto done;
  }
  for (;;) {
    hdr_line(b, line);
    if (line[0] == 0)
      break;
    if (strncmp(line, "FORMAT=", 7) == 0 &&
        strcmp(line + 7, "32-bit_rle_rgbe") != 0) {
      s = imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                            "HDR file of FORMAT=%.64s (imgstat reads "
                            "32-bit_rle_rgbe)",
                            line + 7);
      goto done;
    }
  }
  if (b->src->read_errno || ist_bytes_next(b) < 0) {
    s = ist_truncated(&d->src, "HDR", err); /* no size line, no data */
    goto done;
  }
  b->at--; /* that byte starts the size line */
  hdr_line(b, line);
  uint32_t w = 0, h = 0;
  char *t = line + 3;
  if (strncmp(line, "-Y ", 3) != 0 || !hdr_size(&t, &h) ||
      strncmp(t, " +X ", 4) != 0 || (t += 4, !hdr_size(&t, &w))) {
    s = imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                          "HDR size line '%.64s' is not '-Y HEIGHT +X WIDTH' "
                          "(the one orientation imgstat reads)",
                          line);
    goto done;
  }
  hs->data_offset = d->src.pos - (b->len - b->at);
  /* The peak: 3 float planes and a scanline. At least 4 bytes a scanline
   * (an old-style run repeating the pixel before it). */
  uint64_t plane = (uint64_t)w * h * 4;
  s = ist_decode_check(&d->lim, w, h, 3 * plane + 4 * (uint64_t)w,
                       hs->data_offset + 4 * (uint64_t)h, d->src.size, "HDR",
                       err);
  if (s != IMGSTAT_OK)
    goto done;
  ist_header_set(&d->header, w, h, 3, IMGSTAT_F32, "HDR");
done:
  free(line);
  return s;
}

/* Reads 4 bytes; 0 at the end of the input. */
static int hdr_pixel(ist_bytes *b, unsigned char px[4]) {
  return ist_bytes_read(b, px, 4) == 4;
}

/* One scanline, new-style run-length coded, after its 4-byte header. */
static imgstat_status hdr_rle_line(ist_bytes *b, unsigned char *line,
                                   uint32_t w, imgstat_error *err) {
  for (int k = 0; k < 4; k++) {
    uint32_t x = 0;
    while (x < w) {
      int count = ist_bytes_next(b);
      if (count < 0)
        return ist_truncated(b->src, "HDR", err);
      int run = count > 128;
      if (run)
        count -= 128;
      if ((uint32_t)count > w - x)
        return ist_corrupt(err, "HDR",
                           "run-length data past the end of a scanline");
      int v = run ? ist_bytes_next(b) : 0;
      for (int i = 0; i < count; i++, x++) {
        if (!run)
          v = ist_bytes_next(b);
        if (v < 0)
          return ist_truncated(b->src, "HDR", err);
        line[4 * x + (uint32_t)k] = (unsigned char)v;
      }
    }
  }
  return IMGSTAT_OK;
}

/* One scanline of flat pixels in the old run-length coding; first: its
 * first pixel when already read, else NULL; prev: the image's pixel before
 * this scanline (NULL for the first). */
static imgstat_status hdr_old_line(ist_bytes *b, unsigned char *line,
                                   uint32_t w, const unsigned char *first,
                                   const unsigned char *prev,
                                   imgstat_error *err) {
  unsigned shift = 0;
  uint32_t x = 0;
  while (x < w) {
    unsigned char px[4];
    if (first) {
      memcpy(px, first, 4);
      first = NULL;
    } else if (!hdr_pixel(b, px)) {
      return ist_truncated(b->src, "HDR", err);
    }
    if (px[0] == 1 && px[1] == 1 && px[2] == 1) {
      const unsigned char *from = x ? line + 4 * (x - 1) : prev;
      if (!from)
        return ist_corrupt(err, "HDR", "run-length run before any pixel");
      uint64_t count = (uint64_t)px[3] << shift;
      if (count > w - x)
        return ist_corrupt(err, "HDR",
                           "run-length run past the end of a scanline");
      unsigned char rep[4];
      memcpy(rep, from, 4);
      for (uint64_t i = 0; i < count; i++, x++)
        memcpy(line + 4 * x, rep, 4);
      if (shift < 32)
        shift += 8;
    } else {
      memcpy(line + 4 * x++, px, 4);
      shift = 0;
    }
  }
  return IMGSTAT_OK;
}

/* m * 2^(e - 136), exactly stb_image's (float)m * (float)ldexp(1, e - 136):
 * both are exact (m has 8 bits, the smallest scale 2^-135 is a float). */
static float rgbe_value(unsigned m, unsigned e) {
  return e ? ldexpf((float)m, (int)e - 136) : 0.0f;
}

imgstat_status ist_hdr_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  hdr_state *hs = d->state;
  ist_bytes *b = &hs->bytes;
  uint32_t w = img->width;
  imgstat_status s = ist_bytes_start(b, &d->src, hs->data_offset, "HDR", err);
  if (s != IMGSTAT_OK)
    return s;
  hs->line = malloc(4 * (size_t)w);
  if (!hs->line)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  unsigned char *line = hs->line, last[4];
  for (uint32_t y = 0; y < img->height; y++) {
    const unsigned char *prev = y ? last : NULL;
    if (w < 8 || w > 0x7fff) {
      s = hdr_old_line(b, line, w, NULL, prev, err);
    } else {
      unsigned char px[4];
      if (!hdr_pixel(b, px))
        return ist_truncated(&d->src, "HDR", err);
      if (px[0] != 2 || px[1] != 2 || (px[2] & 0x80))
        s = hdr_old_line(b, line, w, px, prev, err);
      else if ((uint32_t)(px[2] << 8 | px[3]) != w)
        s = ist_corrupt(err, "HDR", "scanline of %u pixels in an image %u wide",
                        (unsigned)(px[2] << 8 | px[3]), (unsigned)w);
      else
        s = hdr_rle_line(b, line, w, err);
    }
    if (s != IMGSTAT_OK)
      return s;
    float *r = ist_image_row(img, 0, y), *g = ist_image_row(img, 1, y),
          *bl = ist_image_row(img, 2, y);
    for (uint32_t x = 0; x < w; x++) {
      const unsigned char *p = line + 4 * x;
      r[x] = rgbe_value(p[0], p[3]);
      g[x] = rgbe_value(p[1], p[3]);
      bl[x] = rgbe_value(p[2], p[3]);
    }
    memcpy(last, line + 4 * (w - 1), 4);
  }
  return IMGSTAT_OK;
}

void ist_hdr_close(imgstat_decoder *d) {
  hdr_state *hs = d->state;
  if (!hs)
    return;
  free(hs->line);
  free(hs);
  d->state = NULL;
}
