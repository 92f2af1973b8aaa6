/*
 * PFM (portable float map): "PF" (RGB) or "Pf" (gray), the width and the
 * height, a scale whose sign gives the byte order (negative: little-endian),
 * one whitespace byte, then 32-bit floats, rows from the bottom up.
 *
 * Samples are the stored floats: the scale's magnitude is not applied
 * (values raw, as everywhere; imgstat writes 1.0). Rows are turned the right
 * way up, so positions count from the top as in every other format.
 */
#include "image_rows.h"
#include "imgstat.h"
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
  unsigned char h[1024];
  size_t n;
  imgstat_status s = ist_source_head(src, h, sizeof h, &n, err);
  if (s != IMGSTAT_OK)
    return s;
  ps->channels = h[1] == 'F' ? 3 : 1;
  size_t i = 2;
  if (!ist_pnm_next_number(h, n, &i, &ps->width) ||
      !ist_pnm_next_number(h, n, &i, &ps->height))
    return ist_corrupt(err, "PFM", "header is malformed or truncated");
  while (i < n && ist_is_space(h[i]))
    i++;
  /* The scale: a decimal number, up to the one whitespace byte before the
   * data. */
  char num[64];
  size_t k = 0;
  while (i < n && !ist_is_space(h[i]) && k + 1 < sizeof num)
    num[k++] = (char)h[i++];
  num[k] = '\0';
  char *end = NULL;
  double scale = k ? strtod(num, &end) : 0;
  if (!k || *end || i >= n || !ist_is_space(h[i]))
    return ist_corrupt(err, "PFM", "header is malformed or truncated");
  if (scale == 0 || !isfinite(scale))
    return ist_corrupt(err, "PFM", "scale %s is not a non-zero number", num);
  ps->swap = (scale < 0) != ist_host_is_little_endian();
  ps->data_offset = i + 1;
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
  d->header.width = ps->width;
  d->header.height = ps->height;
  d->header.channels = ps->channels;
  d->header.sample = IMGSTAT_F32;
  d->header.format = "PFM";
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
