/*
 * TGA (Truevision Targa), read here. The format has no signature: an input
 * whose 18-byte header holds values that only a TGA has is taken for one
 * (ist_tga_sniff).
 *
 * Image types 1 (colour-mapped), 2 (true colour), 3 (gray) and their
 * run-length versions 9, 10, 11. Colour-map entries of 15/16, 24 or 32 bits;
 * indices of 8 or 16 bits into a map that may start at a nonzero entry (a
 * pixel index i is entry i of the whole map, of which the file stores
 * entries first .. first + length - 1: an index outside them is damaged
 * data). True colour of 15/16 (5-5-5), 24 (B, G, R) or 32 bits (B, G, R, A);
 * gray of 8 bits, or 16 (gray, alpha). A true-colour or gray file may carry
 * a colour map it does not use: it is skipped. Run-length packets may go on
 * from one row into the next (TGA 1.0 allowed it), not past the last pixel.
 * Rows are stored bottom-up unless bit 5 of the descriptor says top-down, and
 * right to left when bit 4 says so: both are turned, so that positions count
 * from the top left as everywhere.
 *
 * What the image gets: colour-mapped and true-colour files are RGB, RGBA
 * with 32-bit entries or pixels; gray is one channel, or gray and alpha for
 * 16-bit pixels. The alpha byte is read whatever the descriptor's count of
 * attribute bits says (as stb_image and Pillow read it), unless the TGA 2.0
 * extension area's attributes type is 0, "no alpha data": then the channel
 * is left out. The attribute bit of a 15/16-bit pixel or entry is never
 * alpha (writers disagree on what it means). 5-bit fields are widened to 8
 * bits by bit replication (v << 3 | v >> 2).
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct tga_state {
  uint32_t width, height;
  int type;      /* 1 colour-mapped, 2 true colour, 3 gray */
  int rle;       /* types 9, 10, 11 */
  unsigned bits; /* per pixel */
  size_t pixel;  /* bytes a pixel */
  int top_down, right_to_left;
  int channels;   /* of the image */
  int file_alpha; /* the pixels (or entries) hold an alpha byte */
  uint32_t map_first, map_length;
  unsigned map_bits;
  uint64_t data_at;   /* the first byte of the colour map, or of the pixels */
  unsigned char *map; /* map_length entries of 4 bytes: R, G, B, A */
  unsigned char *raw; /* up to 128 stored pixels */
  unsigned char *out; /* a row of interleaved samples */
  ist_bytes in;
} tga_state;

static uint32_t le16(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

int ist_tga_sniff(const unsigned char *h, size_t n) {
  if (n < 18 || h[1] > 1)
    return 0;
  int type = h[2] & 7, bits = h[16];
  if ((h[2] & ~8) != type || type < 1 || type > 3)
    return 0;
  if (h[1] == 1 && h[7] != 15 && h[7] != 16 && h[7] != 24 && h[7] != 32)
    return 0;
  if (le16(h + 12) == 0 || le16(h + 14) == 0)
    return 0;
  switch (type) {
  case 1:
    return h[1] == 1 && (bits == 8 || bits == 16);
  case 2:
    return bits == 15 || bits == 16 || bits == 24 || bits == 32;
  default:
    return bits == 8 || bits == 16;
  }
}

/* Whether the TGA 2.0 extension area says the file holds no alpha data
 * (attributes type 0). */
static int extension_says_no_alpha(ist_source *src) {
  unsigned char foot[26], attr;
  if (src->size < 18 + sizeof foot ||
      ist_source_read_at(src, src->size - sizeof foot, foot, sizeof foot) !=
          sizeof foot ||
      memcmp(foot + 8, "TRUEVISION-XFILE.", 18) != 0)
    return 0;
  uint64_t ext = le16(foot) | (uint64_t)le16(foot + 2) << 16;
  if (ext < 18 || ext + 495 > src->size - sizeof foot)
    return 0;
  return ist_source_read_at(src, ext + 494, &attr, 1) == 1 && attr == 0;
}

imgstat_status ist_tga_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  tga_state *ts = calloc(1, sizeof *ts);
  if (!ts)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = ts;
  unsigned char h[18];
  size_t n;
  imgstat_status s = ist_source_head(src, h, sizeof h, &n, err);
  if (s != IMGSTAT_OK)
    return s;
  if (!ist_tga_sniff(h, n)) /* a caller that chose this row by hand */
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "not a recognised image format");
  ts->type = h[2] & 7;
  ts->rle = (h[2] & 8) != 0;
  ts->bits = h[16];
  ts->pixel = (ts->bits + 7) / 8;
  ts->width = le16(h + 12);
  ts->height = le16(h + 14);
  ts->right_to_left = (h[17] & 0x10) != 0;
  ts->top_down = (h[17] & 0x20) != 0;
  if (h[17] & 0xC0)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "TGA with interleaved rows (descriptor 0x%02x) "
                             "is not supported",
                             h[17]);
  uint64_t map_bytes = 0;
  if (h[1] == 1) {
    ts->map_first = le16(h + 3);
    ts->map_length = le16(h + 5);
    ts->map_bits = h[7];
    map_bytes = (uint64_t)ts->map_length * ((ts->map_bits + 7) / 8);
  }
  if (ts->type == 1 && ts->map_length == 0)
    return ist_corrupt(err, "TGA", "colour map has no entries");
  ts->data_at = 18 + (uint64_t)h[0];
  unsigned alpha_bits = ts->type == 1 ? ts->map_bits : ts->bits;
  ts->file_alpha = ts->type == 3 ? ts->bits == 16 : alpha_bits == 32;
  ts->channels = ts->type == 3 ? 1 : 3;
  if (ts->file_alpha && !extension_says_no_alpha(src))
    ts->channels++;

  /* The least input: the ID, the map and every pixel, or one run-length
   * packet per 128 pixels. */
  uint64_t pixels = (uint64_t)ts->width * ts->height;
  uint64_t min_input =
      ts->data_at + map_bytes +
      (ts->rle ? (pixels + 127) / 128 * (1 + ts->pixel) : pixels * ts->pixel);
  /* The planes, a row of samples, 128 stored pixels and the map. */
  uint64_t peak = pixels * (uint64_t)ts->channels +
                  (uint64_t)ts->width * (uint64_t)ts->channels +
                  128 * ts->pixel + 4 * (uint64_t)ts->map_length;
  s = ist_decode_check(&d->lim, ts->width, ts->height, peak, min_input,
                       src->size, "TGA", err);
  if (s != IMGSTAT_OK)
    return s;
  ist_header_set(&d->header, ts->width, ts->height, ts->channels, IMGSTAT_U8,
                 "TGA");
  return IMGSTAT_OK;
}

/* 5 bits widened to 8 by bit replication. */
static unsigned char widen5(unsigned v) {
  return (unsigned char)(v << 3 | v >> 2);
}

/* A stored colour of 15/16, 24 or 32 bits (B, G, R[, A]) as R, G, B, A. */
static void colour(const unsigned char *p, unsigned bits, unsigned char *o) {
  if (bits <= 16) {
    unsigned v = le16(p);
    o[0] = widen5(v >> 10 & 31);
    o[1] = widen5(v >> 5 & 31);
    o[2] = widen5(v & 31);
    o[3] = 255;
  } else {
    o[0] = p[2];
    o[1] = p[1];
    o[2] = p[0];
    o[3] = bits == 32 ? p[3] : 255;
  }
}

/* n stored pixels at p into samples at o (channels apart, step channels
 * forward or back). */
static imgstat_status to_samples(tga_state *ts, const unsigned char *p,
                                 size_t n, unsigned char *o, ptrdiff_t step,
                                 imgstat_error *err) {
  int ch = ts->channels;
  for (size_t i = 0; i < n; i++, p += ts->pixel, o += step) {
    unsigned char rgba[4];
    if (ts->type == 3) {
      o[0] = p[0];
      if (ch == 2)
        o[1] = p[1];
      continue;
    }
    if (ts->type == 1) {
      uint32_t v = ts->pixel == 1 ? p[0] : le16(p);
      if (v < ts->map_first || v - ts->map_first >= ts->map_length)
        return ist_corrupt(err, "TGA",
                           "pixel index %" PRIu32 " outside its colour map "
                           "(entries %" PRIu32 " to %" PRIu32 ")",
                           v, ts->map_first,
                           ts->map_first + ts->map_length - 1);
      memcpy(rgba, ts->map + 4 * (size_t)(v - ts->map_first), 4);
    } else {
      colour(p, ts->bits, rgba);
    }
    memcpy(o, rgba, (size_t)ch);
  }
  return IMGSTAT_OK;
}

imgstat_status ist_tga_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  tga_state *ts = d->state;
  ist_source *src = &d->src;
  imgstat_status s =
      ist_bytes_start(&ts->in, src, (size_t)ts->data_at, "TGA", err);
  if (s != IMGSTAT_OK)
    return s;
  const size_t ch = (size_t)ts->channels, w = ts->width;
  ts->out = malloc(w * ch);
  ts->raw = malloc(128 * ts->pixel);
  ts->map = malloc(4 * (size_t)ts->map_length + 1);
  if (!ts->out || !ts->raw || !ts->map)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  size_t entry = (ts->map_bits + 7) / 8;
  for (uint32_t i = 0; i < ts->map_length; i++) {
    unsigned char e[4];
    if (ist_bytes_read(&ts->in, e, entry) != entry)
      return ist_truncated(src, "TGA", err);
    colour(e, ts->map_bits, ts->map + 4 * (size_t)i);
  }
  /* Pixels go into the row from its left, or from its right end. */
  const ptrdiff_t step = ts->right_to_left ? -(ptrdiff_t)ch : (ptrdiff_t)ch;
  size_t left = 0; /* pixels left in the current packet */
  int run = 0;     /* the packet repeats the pixel in ts->raw */
  for (uint32_t r = 0; r < ts->height; r++) {
    unsigned char *o = ts->right_to_left ? ts->out + (w - 1) * ch : ts->out;
    size_t x = 0;
    while (x < w) {
      size_t k;
      if (!ts->rle) {
        k = w - x < 128 ? w - x : 128;
        if (ist_bytes_read(&ts->in, ts->raw, k * ts->pixel) != k * ts->pixel)
          return ist_truncated(src, "TGA", err);
        s = to_samples(ts, ts->raw, k, o, step, err);
      } else {
        if (left == 0) {
          int c = ist_bytes_next(&ts->in);
          if (c < 0)
            return ist_truncated(src, "TGA", err);
          left = (size_t)(c & 127) + 1;
          run = (c & 128) != 0;
          if (run && ist_bytes_read(&ts->in, ts->raw, ts->pixel) != ts->pixel)
            return ist_truncated(src, "TGA", err);
          uint64_t rest = (uint64_t)(ts->height - 1 - r) * w + (w - x);
          if (left > rest)
            return ist_corrupt(err, "TGA",
                               "run-length packet of %zu pixels at (%zu, "
                               "%" PRIu32 ") goes past the end of the image",
                               left, ts->right_to_left ? w - 1 - x : x,
                               ts->top_down ? r : ts->height - 1 - r);
        }
        k = w - x < left ? w - x : left;
        if (run) {
          s = to_samples(ts, ts->raw, 1, o, step, err);
          for (size_t i = 1; i < k && s == IMGSTAT_OK; i++)
            memcpy(o + (ptrdiff_t)i * step, o, ch);
        } else {
          if (ist_bytes_read(&ts->in, ts->raw, k * ts->pixel) != k * ts->pixel)
            return ist_truncated(src, "TGA", err);
          s = to_samples(ts, ts->raw, k, o, step, err);
        }
        left -= k;
      }
      if (s != IMGSTAT_OK)
        return s;
      o += (ptrdiff_t)k * step;
      x += k;
    }
    ist_pixels_split(img, ts->out, ts->top_down ? r : ts->height - 1 - r, 0, w,
                     1);
  }
  return IMGSTAT_OK;
}

void ist_tga_close(imgstat_decoder *d) {
  tga_state *ts = d->state;
  if (!ts)
    return;
  free(ts->map);
  free(ts->raw);
  free(ts->out);
  free(ts);
  d->state = NULL;
}
