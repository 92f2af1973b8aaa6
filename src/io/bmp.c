/*
 * BMP (Windows and OS/2 bitmaps), read here.
 *
 * A headerless BMP (a DIB: .dib files, the clipboard's CF_DIB) is read
 * too: the info header at byte 0, without the 14-byte file header, the bit
 * masks and palette after it as in a file, the pixels right after the
 * palette (the header's count of entries; when it gives none, 2^bits for
 * a palette image and none for colour). It is read as the file it would be
 * with a file header.
 *
 * Headers: OS/2 1.x (BITMAPCOREHEADER, 12 bytes: 16-bit sizes, 3-byte
 * palette entries), OS/2 2.x (16 to 64 bytes; fields past the header's size
 * are 0), BITMAPINFOHEADER (40), Adobe's 52 and 56-byte bit-field headers
 * (V2, V3), V4 (108) and V5 (124). Pixels: 1, 2, 4 and 8-bit palette
 * indices, uncompressed or RLE8/RLE4; 16, 24 and 32-bit colour, BI_RGB
 * (16: 5-5-5; 32: B, G, R and an unused byte) or bit fields (BI_BITFIELDS,
 * BI_ALPHABITFIELDS: masks after a 40-byte header, in the header itself from
 * 52 bytes on). Rows are bottom-up, or top-down when the height is negative;
 * the pixel data starts at the file header's offset, wherever that is past
 * the headers and the palette (a 16/24/32-bit file may carry a palette,
 * which is not used).
 *
 * What the image gets:
 *  - a palette becomes RGB, or one gray channel when entry i is gray level i
 *    (black and white for 2 entries): the way gray images are stored;
 *  - colour is RGB, RGBA when bit fields give an alpha mask; a 32-bit BI_RGB
 *    pixel's fourth byte is documented as unused: no alpha. An alpha channel
 *    that is 0 in every pixel is taken as unused too and reads 255 (as
 *    stb_image did and browsers do);
 *  - bit fields are widened by bit replication, as every sample of fewer
 *    bits than its type: to 8 bits when no field is wider than 8 (5 bits:
 *    v << 3 | v >> 2), else every field to 16 (1 bit: 0 or 65535; 10 bits:
 *    v << 6 | v >> 4; 16 bits as stored); a field of 17 to 32 bits keeps
 *    its top 16 (bit replication's inverse: a 16-bit field widened to n
 *    bits and read back is itself).
 *
 * RLE: runs, absolute runs (padded to 16 bits), end of line, end of bitmap
 * and deltas. Pixels the data skips (a delta, an early end of line or of the
 * bitmap) are palette entry 0, as Pillow and ImageMagick read them. The
 * format defines RLE for bottom-up rows only; a top-down RLE file (some
 * writers make them) is read top-down, as its height says. A run or an
 * absolute run that goes past the end of its row, a delta that leaves the
 * image, data after the last row other than the end of the bitmap, and a
 * pixel index beyond the palette are damaged data and refused; so is a
 * file that ends before its last row. Since RLE data may skip any part of
 * the image, a small RLE file can describe a large one: --max-pixels and
 * --max-memory bound it, as they do every image.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum { BMP_RGB, BMP_RLE8, BMP_RLE4, BMP_FIELDS };

/* The bytes the header, bit masks and palette take at most (124-byte
 * header, 256 entries of 4 bytes). */
#define BMP_HEAD_BYTES (14 + 124 + 16 + 4 * 256)

typedef struct bmp_state {
  uint32_t width, height;
  int top_down;
  unsigned bits;
  int coding;      /* BMP_RGB, BMP_RLE8, ... */
  uint32_t offset; /* of the pixels, as in a file with its file header */
  unsigned skip;   /* 14: a file; 0: a DIB, whose file header is missing */
  /* colour: each channel's mask, its lowest bit and its width in bits */
  uint32_t mask[4];
  unsigned shift[4], count[4];
  unsigned depth; /* 8, or 16 when a field is wider than 8 bits */
  /* palette */
  uint32_t colors;
  unsigned char pal[256][3];
  int channels;
  size_t stride; /* bytes of a stored row, padded to 4 */
  unsigned char *row, *out, *idx;
  ist_bytes in;
} bmp_state;

static uint32_t le16(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const unsigned char *p) {
  return le16(p) | le16(p + 2) << 16;
}

static const char *compression_name(uint32_t c) {
  return c == 4 ? "JPEG" : c == 5 ? "PNG" : "CMYK";
}

/* A bit-field mask: one run of bits inside the pixel (0: the channel is
 * 0). */
static imgstat_status mask_check(bmp_state *bs, int c, imgstat_error *err) {
  static const char *const names[4] = {"red", "green", "blue", "alpha"};
  uint32_t m = bs->mask[c];
  bs->shift[c] = bs->count[c] = 0;
  if (m == 0)
    return IMGSTAT_OK;
  if (bs->bits < 32 && (m >> bs->bits) != 0)
    return ist_corrupt(err, "BMP",
                       "%s bit mask 0x%08" PRIx32 " has bits outside the "
                       "%u-bit pixel",
                       names[c], m, bs->bits);
  unsigned shift = 0;
  while (!(m >> shift & 1))
    shift++;
  uint64_t run = (uint64_t)m >> shift;
  if ((run & (run + 1)) != 0)
    return ist_corrupt(err, "BMP",
                       "%s bit mask 0x%08" PRIx32 " is not one run of bits",
                       names[c], m);
  unsigned count = 0;
  while (run >> count & 1)
    count++;
  bs->shift[c] = shift;
  bs->count[c] = count;
  return IMGSTAT_OK;
}

/* A field of count bits (1..32) as a depth-bit sample (8 or 16) by bit
 * replication: its bits at the top, repeated below; a field wider than the
 * sample keeps its top depth bits. */
static unsigned widen(uint32_t v, unsigned count, unsigned depth) {
  uint32_t out = 0;
  int s = (int)depth - (int)count;
  for (; s > -(int)count; s -= (int)count)
    out |= s >= 0 ? v << s : v >> -s;
  return (unsigned)(out & ((1u << depth) - 1));
}

int ist_dib_sniff(const unsigned char *h, size_t n) {
  if (n < 18)
    return 0;
  uint32_t hsz = le32(h), planes = le16(h + 12), bits = le16(h + 14);
  int32_t width = (int32_t)le32(h + 4), height = (int32_t)le32(h + 8);
  uint32_t compression = le16(h + 16); /* its low half: 18 bytes sniffed */
  return (hsz == 40 || hsz == 52 || hsz == 56 || hsz == 108 || hsz == 124) &&
         width > 0 && height != 0 && planes == 1 &&
         (bits == 1 || bits == 2 || bits == 4 || bits == 8 || bits == 16 ||
          bits == 24 || bits == 32) &&
         compression <= 6;
}

imgstat_status ist_bmp_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  bmp_state *bs = calloc(1, sizeof *bs);
  if (!bs)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = bs;
  /* A DIB is read into h after room for the file header it lacks. */
  unsigned char h[BMP_HEAD_BYTES];
  size_t n;
  imgstat_status s = ist_source_head(src, h, sizeof h, &n, err);
  if (s != IMGSTAT_OK)
    return s;
  bs->skip = 14;
  if (!(n >= 2 && h[0] == 'B' && h[1] == 'M') && ist_dib_sniff(h, n)) {
    bs->skip = 0;
    memmove(h + 14, h, sizeof h - 14);
    memset(h, 0, 14);
    n = n + 14 < sizeof h ? n + 14 : sizeof h;
  }
  if (n < 18)
    return ist_corrupt(err, "BMP", "file is truncated");
  bs->offset = le32(h + 10);
  uint32_t hsz = le32(h + 14);
  int os2_v1 = hsz == 12;
  int os2_v2 = hsz >= 16 && hsz <= 64 && hsz != 40 && hsz != 52 && hsz != 56;
  if (!os2_v1 && !os2_v2 && hsz != 40 && hsz != 52 && hsz != 56 && hsz != 108 &&
      hsz != 124)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "BMP header of %" PRIu32 " bytes: imgstat reads "
                             "headers of 12, 16 to 64, 108 and 124 bytes",
                             hsz);
  if (n < 14 + hsz)
    return ist_corrupt(err, "BMP", "file is truncated");
  /* The header's fields; those past a short OS/2 2.x header are 0. */
  unsigned char f[14 + 124] = {0};
  memcpy(f, h, 14 + hsz);
  int64_t width, height;
  uint32_t planes, compression = 0, clr_used = 0;
  if (os2_v1) {
    width = le16(f + 18);
    height = le16(f + 20);
    planes = le16(f + 22);
    bs->bits = le16(f + 24);
  } else {
    width = (int32_t)le32(f + 18);
    height = (int32_t)le32(f + 22);
    planes = le16(f + 26);
    bs->bits = le16(f + 28);
    compression = le32(f + 30);
    clr_used = le32(f + 46);
  }
  if (width <= 0 || height == 0 || height == INT32_MIN)
    return ist_corrupt(err, "BMP", "image is %" PRId64 "x%" PRId64, width,
                       height);
  bs->top_down = height < 0;
  bs->width = (uint32_t)width;
  bs->height = (uint32_t)(height < 0 ? -height : height);
  if (planes != 1)
    return ist_corrupt(err, "BMP", "planes field is %" PRIu32 ", not 1",
                       planes);
  unsigned b = bs->bits;
  if (b == 64)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "64-bit BMP: imgstat reads 1, 2, 4, 8, 16, 24 "
                             "and 32 bits per pixel");
  if (b != 1 && b != 2 && b != 4 && b != 8 && b != 16 && b != 24 && b != 32)
    return ist_corrupt(err, "BMP", "%u bits per pixel", b);

  /* The compression, as the header's kind defines it. */
  size_t masks_at = 14 + 40, masks_end = 14 + (size_t)hsz;
  switch (compression) {
  case 0:
    bs->coding = BMP_RGB;
    break;
  case 1:
  case 2:
    bs->coding = compression == 1 ? BMP_RLE8 : BMP_RLE4;
    if (b != (compression == 1 ? 8u : 4u))
      return ist_corrupt(err, "BMP", "%s compression with %u bits per pixel",
                         compression == 1 ? "RLE8" : "RLE4", b);
    break;
  case 3:
  case 6:
    if (os2_v2 && compression == 3)
      return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                               "BMP compression 3 (OS/2 Huffman 1D) is not "
                               "supported");
    if (os2_v2 || (b != 16 && b != 32))
      return ist_corrupt(err, "BMP", "bit fields with %u bits per pixel", b);
    bs->coding = BMP_FIELDS;
    if (hsz == 40) { /* the masks follow the header */
      masks_end = masks_at + (compression == 6 ? 16 : 12);
      if (n < masks_end)
        return ist_corrupt(err, "BMP", "file is truncated");
    }
    /* in the header from 52 bytes on (alpha from 56) */
    const unsigned char *m = hsz == 40 ? h : f;
    bs->mask[0] = le32(m + masks_at);
    bs->mask[1] = le32(m + masks_at + 4);
    bs->mask[2] = le32(m + masks_at + 8);
    if (compression == 6 || hsz >= 56)
      bs->mask[3] = le32(m + masks_at + 12);
    break;
  default:
    if (compression == 4 || compression == 5 ||
        (compression >= 11 && compression <= 13))
      return imgstat_error_set(
          err, IMGSTAT_ERR_UNSUPPORTED,
          "BMP compression %" PRIu32 " (%s) is not supported: imgstat "
          "reads uncompressed, RLE8, RLE4 and bit-field BMPs",
          compression,
          os2_v2 && compression == 4 ? "OS/2 RLE24"
                                     : compression_name(compression));
    return ist_corrupt(err, "BMP",
                       "compression %" PRIu32 " is not a BMP compression",
                       compression);
  }
  if (bs->coding == BMP_RGB && b == 16) {
    bs->mask[0] = 0x7C00;
    bs->mask[1] = 0x03E0;
    bs->mask[2] = 0x001F;
  } else if (bs->coding == BMP_RGB && b == 32) {
    bs->mask[0] = 0xFF0000;
    bs->mask[1] = 0xFF00;
    bs->mask[2] = 0xFF;
  }
  bs->depth = 8;
  if (b == 16 || b == 32)
    for (int c = 0; c < 4; c++) {
      if ((s = mask_check(bs, c, err)) != IMGSTAT_OK)
        return s;
      if (bs->count[c] > 8)
        bs->depth = 16;
    }

  if (bs->skip == 0) { /* a DIB: the pixels follow the palette */
    uint64_t entries = clr_used ? clr_used : b <= 8 ? 1u << b : 0;
    uint64_t at = masks_end + entries * (os2_v1 ? 3 : 4);
    if (at > UINT32_MAX)
      return ist_corrupt(
          err, "BMP", "palette of %" PRIu32 " colours is too large", clr_used);
    bs->offset = (uint32_t)at;
  }
  if (bs->offset < masks_end)
    return ist_corrupt(err, "BMP",
                       "pixel data offset %" PRIu32 " lies inside its header",
                       bs->offset);
  /* The palette: the header's count (all 2^bits entries when it gives
   * none), as far as the pixel data's offset leaves room for it. */
  size_t entry = os2_v1 ? 3 : 4;
  if (b <= 8) {
    uint32_t all = 1u << b, declared = all;
    if (clr_used != 0 && clr_used < all)
      declared = clr_used;
    uint64_t room =
        bs->offset > masks_end ? ((uint64_t)bs->offset - masks_end) / entry : 0;
    bs->colors = room < declared ? (uint32_t)room : declared;
    if (bs->colors == 0)
      return ist_corrupt(err, "BMP",
                         "%u-bit image has no palette (pixel data at offset "
                         "%" PRIu32 ")",
                         b, bs->offset);
    if (n < masks_end + bs->colors * entry)
      return ist_corrupt(err, "BMP", "file is truncated");
    int gray = 1;
    for (uint32_t i = 0; i < bs->colors; i++) {
      const unsigned char *e = h + masks_end + i * entry; /* B, G, R */
      bs->pal[i][0] = e[2];
      bs->pal[i][1] = e[1];
      bs->pal[i][2] = e[0];
      unsigned want = bs->colors == 2 ? 255 * i : i;
      gray &= e[0] == want && e[1] == want && e[2] == want;
    }
    bs->channels = gray ? 1 : 3;
  } else {
    bs->channels = bs->mask[3] ? 4 : 3;
  }

  /* The least input: every row, padded to 4 bytes but the last (some
   * writers drop its padding); RLE data may end the bitmap at once. */
  uint64_t w = bs->width, rows = bs->height;
  uint64_t row = (w * b + 7) / 8;
  bs->stride = (size_t)((row + 3) & ~(uint64_t)3);
  uint64_t min_input = (uint64_t)bs->offset - 14 + bs->skip;
  if (bs->coding == BMP_RLE8 || bs->coding == BMP_RLE4)
    min_input += 2;
  else if (rows - 1 > 0 &&
           bs->stride > (UINT64_MAX - min_input - row) / (rows - 1))
    min_input = UINT64_MAX;
  else
    min_input += (rows - 1) * bs->stride + row;
  /* The planes, a stored row, a row of indices and one of samples. */
  uint64_t sample = bs->depth / 8;
  uint64_t peak = w * rows * (uint64_t)bs->channels * sample + bs->stride + w +
                  w * (uint64_t)bs->channels * sample;
  s = ist_decode_check(&d->lim, bs->width, bs->height, peak, min_input,
                       src->size, "BMP", err);
  if (s != IMGSTAT_OK)
    return s;
  ist_header_set(&d->header, bs->width, bs->height, bs->channels,
                 bs->depth == 16 ? IMGSTAT_U16 : IMGSTAT_U8, "BMP");
  return IMGSTAT_OK;
}

/* The image row that stored row r is. */
static uint32_t image_row(const bmp_state *bs, uint32_t r) {
  return bs->top_down ? r : bs->height - 1 - r;
}

/* n palette indices into interleaved samples at bs->out; refuses an index
 * beyond the palette (the pixels past a row's end are not looked up). */
static imgstat_status indices_to_samples(bmp_state *bs, const unsigned char *v,
                                         imgstat_error *err) {
  unsigned char *o = bs->out;
  for (uint32_t x = 0; x < bs->width; x++) {
    unsigned i = v[x];
    if (i >= bs->colors)
      return ist_corrupt(err, "BMP",
                         "pixel index %u beyond its palette of %" PRIu32
                         " colours",
                         i, bs->colors);
    if (bs->channels == 1) {
      *o++ = bs->pal[i][0];
    } else {
      memcpy(o, bs->pal[i], 3);
      o += 3;
    }
  }
  return IMGSTAT_OK;
}

/* One stored row (bs->row) into interleaved samples (bs->out); *alpha
 * collects the alpha samples' bits. */
static imgstat_status row_to_samples(bmp_state *bs, unsigned *alpha,
                                     imgstat_error *err) {
  const unsigned char *p = bs->row;
  unsigned char *o = bs->out;
  uint32_t w = bs->width;
  unsigned b = bs->bits;
  if (b <= 8) {
    unsigned mask = (1u << b) - 1;
    for (uint32_t x = 0; x < w; x++) {
      size_t bit = (size_t)x * b;
      bs->idx[x] =
          (unsigned char)(p[bit / 8] >> (8 - b - (unsigned)(bit % 8)) & mask);
    }
    return indices_to_samples(bs, bs->idx, err);
  }
  if (b == 24) {
    for (uint32_t x = 0; x < w; x++, p += 3, o += 3) {
      o[0] = p[2];
      o[1] = p[1];
      o[2] = p[0];
    }
    return IMGSTAT_OK;
  }
  int ch = bs->channels;
  uint16_t *o16 = (uint16_t *)(void *)bs->out;
  for (uint32_t x = 0; x < w; x++) {
    uint32_t v = b == 16 ? le16(p) : le32(p);
    p += b / 8;
    for (int c = 0; c < ch; c++) {
      unsigned u = bs->count[c] ? widen((v & bs->mask[c]) >> bs->shift[c],
                                        bs->count[c], bs->depth)
                                : 0;
      if (bs->depth == 16)
        *o16++ = (uint16_t)u;
      else
        *o++ = (unsigned char)u;
      if (c == 3)
        *alpha |= u;
    }
  }
  return IMGSTAT_OK;
}

static imgstat_status read_uncompressed(bmp_state *bs, ist_source *src,
                                        imgstat_image *img,
                                        imgstat_error *err) {
  unsigned alpha = 0;
  size_t row = ((size_t)bs->width * bs->bits + 7) / 8;
  for (uint32_t r = 0; r < bs->height; r++) {
    /* the last row's padding may be missing */
    size_t want = r + 1 == bs->height ? row : bs->stride;
    if (ist_bytes_read(&bs->in, bs->row, want) != want)
      return ist_truncated(src, "BMP", err);
    imgstat_status s = row_to_samples(bs, &alpha, err);
    if (s != IMGSTAT_OK)
      return s;
    ist_pixels_split(img, bs->out, image_row(bs, r), 0, bs->width, 1);
  }
  if (bs->channels == 4 && alpha == 0) /* an alpha channel left unused */
    for (uint32_t y = 0; y < bs->height; y++) {
      void *a = ist_image_row(img, 3, y);
      if (bs->depth == 16)
        for (uint32_t x = 0; x < bs->width; x++)
          ((uint16_t *)a)[x] = 65535;
      else
        memset(a, 255, bs->width);
    }
  return IMGSTAT_OK;
}

/* The RLE row in bs->idx is done: into the planes, and cleared (the pixels
 * a run does not set are entry 0). */
static imgstat_status rle_emit(bmp_state *bs, imgstat_image *img, uint32_t r,
                               imgstat_error *err) {
  imgstat_status s = indices_to_samples(bs, bs->idx, err);
  if (s != IMGSTAT_OK)
    return s;
  ist_pixels_split(img, bs->out, image_row(bs, r), 0, bs->width, 1);
  memset(bs->idx, 0, bs->width);
  return IMGSTAT_OK;
}

static imgstat_status read_rle(bmp_state *bs, ist_source *src,
                               imgstat_image *img, imgstat_error *err) {
  const int rle4 = bs->coding == BMP_RLE4;
  const char *name = rle4 ? "RLE4" : "RLE8";
  uint32_t w = bs->width, x = 0, r = 0;
  imgstat_status s = IMGSTAT_OK;
  memset(bs->idx, 0, w);
  for (;;) {
    int c1 = ist_bytes_next(&bs->in), c2 = ist_bytes_next(&bs->in);
    if (c2 < 0) {
      if (r >= bs->height) /* every row done, no end-of-bitmap mark */
        return IMGSTAT_OK;
      return ist_truncated(src, "BMP", err);
    }
    if (r >= bs->height) {
      if (c1 == 0 && c2 == 1)
        return IMGSTAT_OK;
      return ist_corrupt(err, "BMP", "%s data goes on past the last row", name);
    }
    if (c1 > 0) { /* a run of c1 pixels */
      if ((uint32_t)c1 > w - x)
        return ist_corrupt(err, "BMP",
                           "%s run of %d pixels at (%" PRIu32 ", %" PRIu32
                           ") goes past the end of its row",
                           name, c1, x, image_row(bs, r));
      for (int k = 0; k < c1; k++)
        bs->idx[x++] = (unsigned char)(rle4 ? (k & 1 ? c2 & 15 : c2 >> 4) : c2);
    } else if (c2 == 0) { /* end of line */
      if ((s = rle_emit(bs, img, r++, err)) != IMGSTAT_OK)
        return s;
      x = 0;
    } else if (c2 == 1) { /* end of bitmap: the rest is entry 0 */
      while (r < bs->height)
        if ((s = rle_emit(bs, img, r++, err)) != IMGSTAT_OK)
          return s;
      return IMGSTAT_OK;
    } else if (c2 == 2) { /* delta: dx right, dy rows on */
      int dx = ist_bytes_next(&bs->in), dy = ist_bytes_next(&bs->in);
      if (dy < 0)
        return ist_truncated(src, "BMP", err);
      if ((uint32_t)dx > w - x || (uint32_t)dy >= bs->height - r)
        return ist_corrupt(err, "BMP",
                           "%s delta of (%d, %d) at (%" PRIu32 ", %" PRIu32
                           ") leaves the image",
                           name, dx, dy, x, image_row(bs, r));
      for (int k = 0; k < dy; k++)
        if ((s = rle_emit(bs, img, r++, err)) != IMGSTAT_OK)
          return s;
      x += (uint32_t)dx;
    } else { /* an absolute run of c2 pixels, padded to 16 bits */
      if ((uint32_t)c2 > w - x)
        return ist_corrupt(err, "BMP",
                           "%s absolute run of %d pixels at (%" PRIu32
                           ", %" PRIu32 ") goes past the end of its row",
                           name, c2, x, image_row(bs, r));
      size_t bytes = rle4 ? ((size_t)c2 + 1) / 2 : (size_t)c2;
      unsigned char v[256];
      if (ist_bytes_read(&bs->in, v, bytes + (bytes & 1)) <
          bytes) /* the padding byte may be the file's last missing */
        return ist_truncated(src, "BMP", err);
      for (int k = 0; k < c2; k++)
        bs->idx[x++] =
            rle4 ? (unsigned char)(k & 1 ? v[k / 2] & 15 : v[k / 2] >> 4)
                 : v[k];
    }
  }
}

imgstat_status ist_bmp_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  bmp_state *bs = d->state;
  ist_source *src = &d->src;
  imgstat_status s =
      ist_bytes_start(&bs->in, src, bs->offset - 14 + bs->skip, "BMP", err);
  if (s != IMGSTAT_OK)
    return s;
  bs->row = malloc(bs->stride);
  bs->out = malloc((size_t)bs->width * (size_t)bs->channels * (bs->depth / 8));
  bs->idx = malloc(bs->width);
  if (!bs->row || !bs->out || !bs->idx)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  if (bs->coding == BMP_RLE8 || bs->coding == BMP_RLE4)
    return read_rle(bs, src, img, err);
  return read_uncompressed(bs, src, img, err);
}

void ist_bmp_close(imgstat_decoder *d) {
  bmp_state *bs = d->state;
  if (!bs)
    return;
  free(bs->row);
  free(bs->out);
  free(bs->idx);
  free(bs);
  d->state = NULL;
}
