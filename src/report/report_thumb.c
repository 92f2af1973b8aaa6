/*
 * The report's thumbnails: an image read again, its pixels averaged over
 * boxes down to at most `size` pixels on the long side, 8-bit (16-bit
 * samples by their high byte, float ones stretched from their finite
 * minimum to maximum), PNG-encoded by the project's writer and written as
 * a data: URI (base64).
 */
#include "report_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sample_at(const imgstat_image *img, int c, uint32_t x,
                        uint32_t y) {
  size_t stride = img->stride ? img->stride : (size_t)img->width * img->sample;
  const unsigned char *row = (const unsigned char *)img->planes[c] + y * stride;
  switch (img->sample) {
  case IMGSTAT_U8:
    return row[x];
  case IMGSTAT_U16: {
    uint16_t v;
    memcpy(&v, row + 2 * (size_t)x, 2);
    return v / 257.0;
  }
  default: {
    float v;
    memcpy(&v, row + 4 * (size_t)x, 4);
    return v;
  }
  }
}

static char *base64_uri(const unsigned char *p, size_t n) {
  static const char prefix[] = "data:image/png;base64,";
  static const char b64[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t out_len = sizeof prefix - 1 + 4 * ((n + 2) / 3);
  char *out = malloc(out_len + 1);
  if (!out)
    return NULL;
  memcpy(out, prefix, sizeof prefix - 1);
  char *o = out + sizeof prefix - 1;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n)
      v |= p[i + 2];
    *o++ = b64[(v >> 18) & 63];
    *o++ = b64[(v >> 12) & 63];
    *o++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
    *o++ = i + 2 < n ? b64[v & 63] : '=';
  }
  *o = '\0';
  return out;
}

imgstat_status ist_report_thumbnail(const char *path,
                                    const imgstat_load_options *load,
                                    uint32_t size, char **uri,
                                    imgstat_error *err) {
  *uri = NULL;
  imgstat_image img, th;
  memset(&img, 0, sizeof img);
  memset(&th, 0, sizeof th);
  imgstat_status st = imgstat_image_load(path, load, &img, err);
  if (st != IMGSTAT_OK)
    return st;
  int nc = img.channels > 4 ? 3 : img.channels;
  uint32_t longest = img.width > img.height ? img.width : img.height;
  uint32_t step = (longest + size - 1) / size;
  if (step < 1)
    step = 1;
  uint32_t tw = (img.width + step - 1) / step;
  uint32_t th_h = (img.height + step - 1) / step;
  /* float: the finite range of each channel */
  double lo[IMGSTAT_MAX_CHANNELS], hi[IMGSTAT_MAX_CHANNELS];
  for (int c = 0; c < nc; c++) {
    lo[c] = 0;
    hi[c] = 255;
    if (img.sample != IMGSTAT_F32)
      continue;
    lo[c] = INFINITY;
    hi[c] = -INFINITY;
    for (uint32_t y = 0; y < img.height; y++)
      for (uint32_t x = 0; x < img.width; x++) {
        double v = sample_at(&img, c, x, y);
        if (isfinite(v)) {
          lo[c] = v < lo[c] ? v : lo[c];
          hi[c] = v > hi[c] ? v : hi[c];
        }
      }
    if (!(lo[c] < hi[c])) {
      lo[c] = isfinite(lo[c]) ? lo[c] - 1 : 0;
      hi[c] = lo[c] + 2;
    }
  }
  st = imgstat_image_alloc(&th, tw, th_h, nc, IMGSTAT_U8, 0, err);
  if (st != IMGSTAT_OK) {
    imgstat_image_free(&img);
    return st;
  }
  for (int c = 0; c < nc; c++) {
    unsigned char *out = th.planes[c];
    size_t ostride = th.stride ? th.stride : tw;
    double scale = 255.0 / (hi[c] - lo[c]);
    for (uint32_t ty = 0; ty < th_h; ty++)
      for (uint32_t tx = 0; tx < tw; tx++) {
        double sum = 0;
        unsigned n = 0;
        for (uint32_t y = ty * step; y < (ty + 1) * step && y < img.height; y++)
          for (uint32_t x = tx * step; x < (tx + 1) * step && x < img.width;
               x++) {
            double v = sample_at(&img, c, x, y);
            if (isfinite(v)) {
              sum += (v - lo[c]) * scale;
              n++;
            }
          }
        double v = n ? sum / n : 0;
        v = v < 0 ? 0 : v > 255 ? 255 : v;
        out[ty * ostride + tx] = (unsigned char)(v + 0.5);
      }
  }
  imgstat_image_free(&img);
  unsigned char *png = NULL;
  size_t n = 0;
  st = imgstat_image_png_encode(&th, 0, &png, &n, err);
  imgstat_image_free(&th);
  if (st != IMGSTAT_OK)
    return st;
  *uri = base64_uri(png, n);
  free(png);
  if (!*uri)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  return IMGSTAT_OK;
}
