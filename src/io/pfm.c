/*
 * PFM (portable float map): "PF" (RGB) or "Pf" (gray), the width and the
 * height, a scale whose sign gives the byte order (negative: little-endian),
 * one whitespace byte (or "\r\n": files written in text mode), then 32-bit
 * floats, rows from the bottom up, and nothing after them. The header is
 * the Netpbm family's (src/io/netpbm.c).
 *
 * Samples are the stored floats: the scale's magnitude is not applied
 * (values raw, as everywhere; imgstat writes 1.0). Rows are turned the right
 * way up, so positions count from the top as in every other format.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pfm_state {
  uint32_t width, height;
  int channels;
  int swap;
  size_t data_offset;
  float *row;
  ist_bytes in;
} pfm_state;

imgstat_status ist_pfm_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  pfm_state *ps = calloc(1, sizeof *ps);
  if (!ps)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = ps;
  ist_netpbm_header h;
  imgstat_status s = ist_netpbm_header_read(src, "PFM", &h, err);
  if (s != IMGSTAT_OK)
    return s;
  if (h.type != 'F' && h.type != 'f')
    return ist_corrupt(err, "PFM", "no PFM signature");
  ps->channels = h.type == 'F' ? 3 : 1;
  ps->width = h.width;
  ps->height = h.height;
  double scale = 0;
  size_t len = imgstat_number_read(h.scale, &scale);
  if (len == 0 || h.scale[len] || scale == 0 || !isfinite(scale))
    return ist_corrupt(err, "PFM", "scale %s is not a non-zero number",
                       h.scale);
  ps->swap = (scale < 0) != ist_host_is_little_endian();
  ps->data_offset = h.data_offset;
  if (ps->width == 0 || ps->height == 0)
    return ist_corrupt(err, "PFM", "image is %" PRIu32 "x%" PRIu32, ps->width,
                       ps->height);
  uint64_t plane = (uint64_t)ps->width * ps->height * 4;
  s = ist_decode_check(
      &d->lim, ps->width, ps->height,
      plane * (uint64_t)ps->channels + 4 * (uint64_t)ps->width * ps->channels,
      (uint64_t)ps->data_offset + plane * (uint64_t)ps->channels, src->size,
      "PFM", err);
  if (s != IMGSTAT_OK)
    return s;
  /* The file is the header and the data, nothing else. A header ended by
   * "\r\n" was written in text mode: both bytes end it (a file whose
   * header ends in a lone '\r' and whose data starts with byte 0x0a is
   * taken for one, and is then a byte short). */
  uint64_t data = plane * (uint64_t)ps->channels;
  if (h.crlf)
    ps->data_offset++;
  if (src->size < ps->data_offset || src->size - ps->data_offset != data)
    return ist_corrupt(err, "PFM",
                       "file is %zu bytes, where its %zu-byte header and "
                       "the %" PRIu64 " bytes of data it gives make %" PRIu64,
                       src->size, ps->data_offset, data,
                       (uint64_t)ps->data_offset + data);
  ist_header_set(&d->header, ps->width, ps->height, ps->channels, IMGSTAT_F32,
                 "PFM");
  return IMGSTAT_OK;
}

imgstat_status ist_pfm_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  pfm_state *ps = d->state;
  ist_source *src = &d->src;
  imgstat_status s = ist_bytes_start(&ps->in, src, ps->data_offset, "PFM", err);
  if (s != IMGSTAT_OK)
    return s;
  size_t per_row = (size_t)ps->width * ps->channels;
  ps->row = malloc(per_row * sizeof *ps->row);
  if (!ps->row)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  for (uint32_t i = 0; i < ps->height; i++) {
    size_t bytes = per_row * sizeof *ps->row;
    if (ist_bytes_read(&ps->in, ps->row, bytes) != bytes)
      return ist_truncated(src, "PFM", err);
    if (ps->swap) {
      unsigned char *p = (unsigned char *)ps->row;
      for (size_t k = 0; k < per_row; k++, p += 4) {
        unsigned char t = p[0];
        p[0] = p[3];
        p[3] = t;
        t = p[1];
        p[1] = p[2];
        p[2] = t;
      }
    }
    ist_pixels_split(img, ps->row, ps->height - 1 - i, 0, ps->width, 1);
  }
  return IMGSTAT_OK;
}

void ist_pfm_close(imgstat_decoder *d) {
  pfm_state *ps = d->state;
  if (!ps)
    return;
  free(ps->row);
  free(ps);
  d->state = NULL;
}
