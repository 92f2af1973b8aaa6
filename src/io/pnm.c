/*
 * The PNM formats stb_image does not read: plain (ASCII) P1, P2, P3 and the
 * binary bitmap P4. (Binary P5/P6 are stb_image's, src/io/stb.c.)
 *
 * Values are kept as stored, as for every format: a P2/P3 sample is its
 * number (never rescaled by maxval), 8-bit when maxval is 1..255 and 16-bit
 * when it is 256..65535; a bitmap (P1, P4) is 8-bit 0/1 as stored, where 1
 * is black (not inverted, not scaled to 255). A sample over maxval, a byte
 * that is no number, and a file that ends before the last sample are
 * damaged data. '#' comments may stand between samples too.
 */
#include "image_rows.h"
#include "imgstat.h"
#include "io.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct pnm_state {
  int type; /* 1..4: P1..P4 */
  uint32_t width, height, maxval;
  int channels;
  size_t data_offset;
  ist_bytes in;
} pnm_state;

imgstat_status ist_pnm_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  pnm_state *ps = calloc(1, sizeof *ps);
  if (!ps)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = ps;
  unsigned char h[4096];
  size_t n;
  imgstat_status s = ist_source_head(src, h, sizeof h, &n, err);
  if (s != IMGSTAT_OK)
    return s;
  ps->type = h[1] - '0';
  int bitmap = ps->type == 1 || ps->type == 4;
  size_t i = 2;
  ps->maxval = 1;
  if (!ist_pnm_next_number(h, n, &i, &ps->width) ||
      !ist_pnm_next_number(h, n, &i, &ps->height) ||
      (!bitmap && !ist_pnm_next_number(h, n, &i, &ps->maxval)) || i >= n ||
      !ist_is_space(h[i]))
    return ist_corrupt(err, "PNM", "header is malformed or truncated");
  /* P4's rows follow one whitespace byte; the plain formats' samples
   * follow any whitespace. */
  ps->data_offset = ps->type == 4 ? i + 1 : i;
  ps->channels = ps->type == 3 ? 3 : 1;
  if (ps->width == 0 || ps->height == 0)
    return ist_corrupt(err, "PNM", "image is %" PRIu32 "x%" PRIu32, ps->width,
                       ps->height);
  if (ps->maxval == 0 || ps->maxval > 65535)
    return ist_corrupt(err, "PNM", "maxval %" PRIu32 " is not in 1..65535",
                       ps->maxval);
  imgstat_sample sample = ps->maxval > 255 ? IMGSTAT_U16 : IMGSTAT_U8;
  /* The least input: P4 stores every row (a byte per 8 pixels); P1 needs a
   * digit a sample (separators are optional); P2/P3 a digit a sample and a
   * separator between two. */
  uint64_t samples = (uint64_t)ps->width * ps->height * (uint64_t)ps->channels;
  uint64_t data = ps->type == 4   ? ((uint64_t)ps->width + 7) / 8 * ps->height
                  : ps->type == 1 ? samples
                                  : 2 * samples - 1;
  uint64_t plane = (uint64_t)ps->width * ps->height * (uint64_t)sample;
  s = ist_decode_check(&d->lim, ps->width, ps->height,
                       plane * (uint64_t)ps->channels,
                       (uint64_t)ps->data_offset + data, src->size, "PNM", err);
  if (s != IMGSTAT_OK)
    return s;
  d->header.width = ps->width;
  d->header.height = ps->height;
  d->header.channels = ps->channels;
  d->header.sample = sample;
  d->header.format = "PNM";
  return IMGSTAT_OK;
}

/* The next byte that is no whitespace and no comment, or -1 at the end. */
static int next_token_byte(ist_bytes *in) {
  int c = ist_bytes_next(in);
  for (;;) {
    while (ist_is_space(c))
      c = ist_bytes_next(in);
    if (c != '#')
      return c;
    while (c >= 0 && c != '\n' && c != '\r')
      c = ist_bytes_next(in);
  }
}

static imgstat_status truncated(ist_source *src, uint64_t got, uint64_t want,
                                imgstat_error *err) {
  if (src->read_errno)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                             strerror(src->read_errno));
  return ist_corrupt(err, "PNM",
                     "file is truncated (%" PRIu64 " of %" PRIu64 " samples)",
                     got, want);
}

static imgstat_status read_bitmap_rows(pnm_state *ps, imgstat_image *img,
                                       ist_source *src, imgstat_error *err) {
  size_t row_bytes = ((size_t)ps->width + 7) / 8;
  unsigned char *row = malloc(row_bytes);
  if (!row)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status s = IMGSTAT_OK;
  for (uint32_t y = 0; y < ps->height; y++) {
    if (ist_bytes_read(&ps->in, row, row_bytes) != row_bytes) {
      s = truncated(src, (uint64_t)y * ps->width,
                    (uint64_t)ps->width * ps->height, err);
      break;
    }
    unsigned char *out = ist_image_row(img, 0, y);
    for (uint32_t x = 0; x < ps->width; x++)
      out[x] = (unsigned char)(row[x >> 3] >> (7 - (x & 7)) & 1);
  }
  free(row);
  return s;
}

imgstat_status ist_pnm_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  pnm_state *ps = d->state;
  ist_source *src = &d->src;
  imgstat_status s = ist_bytes_start(&ps->in, src, ps->data_offset, "PNM", err);
  if (s != IMGSTAT_OK)
    return s;
  if (ps->type == 4)
    return read_bitmap_rows(ps, img, src, err);

  const uint64_t want =
      (uint64_t)ps->width * ps->height * (uint64_t)ps->channels;
  uint64_t got = 0;
  int wide = img->sample == IMGSTAT_U16;
  for (uint32_t y = 0; y < ps->height; y++)
    for (uint32_t x = 0; x < ps->width; x++)
      for (int c = 0; c < ps->channels; c++, got++) {
        int b = next_token_byte(&ps->in);
        if (b < 0)
          return truncated(src, got, want, err);
        uint32_t v = 0;
        if (ps->type == 1) { /* one digit a sample, separators optional */
          if (b != '0' && b != '1')
            return ist_corrupt(err, "PNM",
                               "byte 0x%02x where a bit of pixel (%" PRIu32
                               ", %" PRIu32 ") belongs",
                               (unsigned)b, x, y);
          v = (uint32_t)(b - '0');
        } else {
          if (b < '0' || b > '9')
            return ist_corrupt(err, "PNM",
                               "byte 0x%02x where a sample of pixel (%" PRIu32
                               ", %" PRIu32 ") belongs",
                               (unsigned)b, x, y);
          while (b >= '0' && b <= '9') {
            v = v * 10 + (uint32_t)(b - '0');
            if (v > ps->maxval)
              return ist_corrupt(err, "PNM",
                                 "sample of pixel (%" PRIu32 ", %" PRIu32
                                 ") is over the maxval %" PRIu32,
                                 x, y, ps->maxval);
            b = ist_bytes_next(&ps->in);
          }
          if (b >= 0 && !ist_is_space(b) && b != '#')
            return ist_corrupt(err, "PNM",
                               "byte 0x%02x after a sample of pixel (%" PRIu32
                               ", %" PRIu32 ")",
                               (unsigned)b, x, y);
          if (b == '#') /* a comment right after the number */
            while (b >= 0 && b != '\n' && b != '\r')
              b = ist_bytes_next(&ps->in);
        }
        if (wide)
          ((uint16_t *)ist_image_row(img, c, y))[x] = (uint16_t)v;
        else
          ((unsigned char *)ist_image_row(img, c, y))[x] = (unsigned char)v;
      }
  if (src->read_errno)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                             strerror(src->read_errno));
  return IMGSTAT_OK;
}

void ist_pnm_close(imgstat_decoder *d) {
  free(d->state);
  d->state = NULL;
}
