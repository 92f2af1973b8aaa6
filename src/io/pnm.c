/*
 * PNM: plain (ASCII) P1, P2, P3 and binary P4, P5, P6; the header is the
 * Netpbm family's (src/io/netpbm.c).
 *
 * Graymap and pixmap samples (P2, P3, P5, P6) are kept as stored, as for
 * every format: never rescaled by maxval, 8-bit when maxval is 1..255 and
 * 16-bit (big-endian in P5/P6) when it is 256..65535. A bitmap (P1, P4) is
 * a 1-bit image and is widened like every sample of fewer than 8 bits: to
 * 8 bits by bit replication, white 255 and black 0 (the file's 1 is black).
 * A sample over maxval (plain or binary, 8 or 16 bits) is refused, naming
 * its pixel, as are a byte that is no number in a plain file and a file
 * that ends before its last sample. '#' comments may stand between plain
 * samples too. Bytes after the last sample (a second image) are not read.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pnm_state {
  int type; /* 1..6: P1..P6 */
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
  ist_netpbm_header h;
  imgstat_status s = ist_netpbm_header_read(src, "PNM", &h, err);
  if (s != IMGSTAT_OK)
    return s;
  if (h.type < '1' || h.type > '6')
    return ist_corrupt(err, "PNM", "no PNM signature");
  ps->type = h.type - '0';
  ps->width = h.width;
  ps->height = h.height;
  ps->maxval = h.maxval;
  /* The plain formats' samples follow any whitespace; the binary ones the
   * header's one byte. */
  ps->data_offset = h.data_offset;
  ps->channels = ps->type == 3 || ps->type == 6 ? 3 : 1;
  if (ps->width == 0 || ps->height == 0)
    return ist_corrupt(err, "PNM", "image is %" PRIu32 "x%" PRIu32, ps->width,
                       ps->height);
  if (ps->maxval == 0 || ps->maxval > 65535)
    return ist_corrupt(err, "PNM", "maxval %" PRIu32 " is not in 1..65535",
                       ps->maxval);
  imgstat_sample sample = ps->maxval > 255 ? IMGSTAT_U16 : IMGSTAT_U8;
  /* The least input: P4 stores every row (a byte per 8 pixels), P5/P6
   * every sample; P1 needs a digit a sample (separators are optional);
   * P2/P3 a digit a sample and a separator between two. */
  uint64_t samples = (uint64_t)ps->width * ps->height * (uint64_t)ps->channels;
  uint64_t data = ps->type == 4   ? ((uint64_t)ps->width + 7) / 8 * ps->height
                  : ps->type >= 5 ? samples * (uint64_t)sample
                  : ps->type == 1 ? samples
                                  : 2 * samples - 1;
  /* the planes and, for the binary formats, one row of the file */
  uint64_t plane = (uint64_t)ps->width * ps->height * (uint64_t)sample;
  uint64_t row = ps->type >= 4 ? (uint64_t)ps->width * (uint64_t)ps->channels *
                                     (uint64_t)sample
                               : 0;
  s = ist_decode_check(&d->lim, ps->width, ps->height,
                       plane * (uint64_t)ps->channels + row,
                       (uint64_t)ps->data_offset + data, src->size, "PNM", err);
  if (s != IMGSTAT_OK)
    return s;
  ist_header_set(&d->header, ps->width, ps->height, ps->channels, sample,
                 "PNM");
  return IMGSTAT_OK;
}

/* Plain samples are read up to this value, a bound no maxval reaches. */
#define PNM_SAMPLE_CAP 1000000000000ull

/* The one refusal of a sample over maxval, plain or binary. */
static imgstat_status over_maxval(const pnm_state *ps, uint64_t v, uint32_t x,
                                  uint32_t y, imgstat_error *err) {
  char value[32];
  snprintf(value, sizeof value,
           v >= PNM_SAMPLE_CAP ? "of 13 digits or more" : "%" PRIu64, v);
  return ist_corrupt(err, "PNM",
                     "sample %s of pixel (%" PRIu32 ", %" PRIu32
                     ") is over the maxval %" PRIu32,
                     value, x, y, ps->maxval);
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

/* P4: rows of 8 pixels a byte, 1 black. */
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
      out[x] = row[x >> 3] >> (7 - (x & 7)) & 1 ? 0 : 255;
  }
  free(row);
  return s;
}

/* P5, P6: rows of 1- or 2-byte (big-endian) samples, each checked against
 * maxval. */
static imgstat_status read_binary_rows(pnm_state *ps, imgstat_image *img,
                                       ist_source *src, imgstat_error *err) {
  size_t n = (size_t)ps->width * (size_t)ps->channels;
  int wide = img->sample == IMGSTAT_U16;
  size_t row_bytes = n * (wide ? 2 : 1);
  unsigned char *row = malloc(row_bytes);
  if (!row)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status s = IMGSTAT_OK;
  for (uint32_t y = 0; y < ps->height && s == IMGSTAT_OK; y++) {
    if (ist_bytes_read(&ps->in, row, row_bytes) != row_bytes) {
      s = truncated(src, (uint64_t)y * n, (uint64_t)n * ps->height, err);
      break;
    }
    if (wide) { /* to host order, in place */
      uint16_t *v = (uint16_t *)(void *)row;
      for (size_t i = 0; i < n; i++)
        v[i] = (uint16_t)(row[2 * i] << 8 | row[2 * i + 1]);
      for (size_t i = 0; i < n && s == IMGSTAT_OK; i++)
        if (v[i] > ps->maxval)
          s = over_maxval(ps, v[i], (uint32_t)(i / (size_t)ps->channels), y,
                          err);
    } else {
      for (size_t i = 0; i < n && s == IMGSTAT_OK; i++)
        if (row[i] > ps->maxval)
          s = over_maxval(ps, row[i], (uint32_t)(i / (size_t)ps->channels), y,
                          err);
    }
    if (s == IMGSTAT_OK)
      ist_pixels_split(img, row, y, 0, ps->width, 1);
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
  if (ps->type >= 5)
    return read_binary_rows(ps, img, src, err);

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
        uint64_t v = 0;
        if (ps->type == 1) { /* one digit a sample, separators optional */
          if (b != '0' && b != '1')
            return ist_corrupt(err, "PNM",
                               "byte 0x%02x where a bit of pixel (%" PRIu32
                               ", %" PRIu32 ") belongs",
                               (unsigned)b, x, y);
          v = b == '1' ? 0 : 255; /* 1 is black */
        } else {
          if (b < '0' || b > '9')
            return ist_corrupt(err, "PNM",
                               "byte 0x%02x where a sample of pixel (%" PRIu32
                               ", %" PRIu32 ") belongs",
                               (unsigned)b, x, y);
          while (b >= '0' && b <= '9') {
            v = v < PNM_SAMPLE_CAP ? v * 10 + (uint64_t)(b - '0') : v;
            b = ist_bytes_next(&ps->in);
          }
          if (v > ps->maxval)
            return over_maxval(ps, v, x, y, err);
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
