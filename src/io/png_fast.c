/*
 * PNG through libdeflate: the whole IDAT stream inflated at once (libdeflate
 * inflates 2 to 2.4 times faster than zlib, and inflating is most of a PNG
 * decode), then each row unfiltered in place and split into the planes.
 *
 * This path is an accelerator of libpng's (png.c), never a second judge: it
 * takes a file only when it is sure libpng would decode it to the same
 * samples, and declines everything else, at open or at read, so that libpng
 * decodes it and words any refusal. It takes non-interlaced images of every
 * colour type and depth whose chunks before the image data are IHDR, PLTE
 * (palette images only), tRNS (with values in range) and ancillary chunks,
 * with valid critical-chunk CRCs, one run of IDAT chunks holding exactly one
 * zlib stream (Adler-32 included) of exactly height * (1 + rowbytes) bytes,
 * filter types 0-4 and then only ancillary chunks up to IEND. libpng's own
 * limits on chunk lengths (8000000 bytes for a chunk other than IDAT) make
 * it decline too. The samples are those png.c documents: no gamma or other
 * transform, gray at 1/2/4 bits scaled to 0..255, palettes to RGB (RGBA with
 * tRNS), tRNS on gray or RGB as an alpha channel.
 */
#include "png_fast.h"

#include "image_rows.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK(a, b, c, d)                                                      \
  ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 |            \
   (uint32_t)(d))
#define CHUNK_IHDR CHUNK('I', 'H', 'D', 'R')
#define CHUNK_PLTE CHUNK('P', 'L', 'T', 'E')
#define CHUNK_IDAT CHUNK('I', 'D', 'A', 'T')
#define CHUNK_IEND CHUNK('I', 'E', 'N', 'D')
#define CHUNK_tRNS CHUNK('t', 'R', 'N', 'S')
/* libpng's limit on the length of a chunk other than IDAT
 * (PNG_USER_CHUNK_MALLOC_MAX): longer ones are an error there. */
#define LIBPNG_CHUNK_MAX 8000000u

struct ist_png_fast {
  uint32_t width, height;
  int depth, color_type;
  int file_channels; /* samples a pixel in the file */
  size_t rowbytes;   /* bytes of a filtered row, without its filter byte */
  int bpp;           /* bytes a pixel for the filters (at least 1) */
  uint64_t idat_at;  /* the offset of the first IDAT chunk's length */
  int has_trns;
  int num_trans;
  uint16_t trns[3]; /* gray or RGB transparent value */
  unsigned char palette[256][4];
};

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* libpng's png_check_chunk_name: four ASCII letters. */
static int name_ok(const unsigned char *p) {
  for (int i = 0; i < 4; i++) {
    int c = p[i];
    if (c < 65 || c > 122 || (c > 90 && c < 97))
      return 0;
  }
  return 1;
}

/* The CRC of a chunk's type and data against the 4 bytes stored after. */
static int crc_ok(const unsigned char *type, const unsigned char *data,
                  size_t len, const unsigned char *stored) {
  uint32_t crc = libdeflate_crc32(0, type, 4);
  if (len)
    crc = libdeflate_crc32(crc, data, len);
  return crc == be32(stored);
}

/* Reads a chunk's length and type (8 bytes) into head; 0 when the input
 * ends first or the length or type is one libpng refuses. */
static int chunk_head(ist_source *src, unsigned char head[8], uint32_t *len,
                      uint32_t *type) {
  if (ist_source_read(src, head, 8) != 8)
    return 0;
  *len = be32(head);
  *type = be32(head + 4);
  return *len <= 0x7fffffffu && name_ok(head + 4);
}

/* Reads a small chunk's data and CRC (len <= 768) and checks the CRC. */
static int chunk_small(ist_source *src, const unsigned char head[8],
                       uint32_t len, unsigned char *data) {
  unsigned char crc[4];
  return ist_source_read(src, data, len) == len &&
         ist_source_read(src, crc, 4) == 4 && crc_ok(head + 4, data, len, crc);
}

/* Skips an ancillary chunk's data and CRC; 0 when the input is shorter. */
static int chunk_skip(ist_source *src, uint32_t len) {
  uint64_t to = (uint64_t)src->pos + len + 4;
  return to <= src->size && ist_source_seek(src, to) == 0;
}

static int ancillary(uint32_t type) { return (type >> 24) & 0x20; }

ist_png_fast *ist_png_fast_open(ist_source *src) {
  static const unsigned char signature[8] = {0x89, 'P',  'N',  'G',
                                             0x0D, 0x0A, 0x1A, 0x0A};
  unsigned char head[8], ihdr[13], data[768];
  uint32_t len, type;
  if (ist_source_read(src, data, 8) != 8 || memcmp(data, signature, 8) != 0 ||
      !chunk_head(src, head, &len, &type) || type != CHUNK_IHDR || len != 13 ||
      !chunk_small(src, head, len, ihdr))
    return NULL;
  uint32_t width = be32(ihdr), height = be32(ihdr + 4);
  int depth = ihdr[8], ct = ihdr[9];
  if (width == 0 || height == 0 || width > 0x7fffffffu ||
      height > 0x7fffffffu || ihdr[10] != 0 || ihdr[11] != 0 || ihdr[12] != 0)
    return NULL; /* interlaced images too */
  int channels;
  switch (ct) {
  case 0:
    channels = 1;
    if (depth != 1 && depth != 2 && depth != 4 && depth != 8 && depth != 16)
      return NULL;
    break;
  case 3:
    channels = 1;
    if (depth != 1 && depth != 2 && depth != 4 && depth != 8)
      return NULL;
    break;
  case 2:
  case 4:
  case 6:
    channels = ct == 2 ? 3 : ct == 4 ? 2 : 4;
    if (depth != 8 && depth != 16)
      return NULL;
    break;
  default:
    return NULL;
  }
  ist_png_fast *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  f->width = width;
  f->height = height;
  f->depth = depth;
  f->color_type = ct;
  f->file_channels = channels;
  uint64_t bits = (uint64_t)width * (uint64_t)channels * (uint64_t)depth;
  f->rowbytes = (size_t)((bits + 7) / 8);
  f->bpp = (channels * depth + 7) / 8;
  for (int i = 0; i < 256; i++)
    f->palette[i][3] = 255; /* opaque past tRNS's entries */
  int num_palette = 0, have_plte = 0;
  uint16_t max = (uint16_t)((1u << depth) - 1);
  for (;;) {
    uint64_t at = src->pos;
    if (!chunk_head(src, head, &len, &type))
      goto decline;
    if (type == CHUNK_IDAT) {
      if (ct == 3 && !have_plte)
        goto decline;
      f->idat_at = at;
      return f;
    }
    if (len > LIBPNG_CHUNK_MAX)
      goto decline;
    if (type == CHUNK_PLTE) {
      if (ct != 3 || have_plte || len == 0 || len % 3 || len > 768 ||
          len / 3 > (1u << depth) || !chunk_small(src, head, len, data))
        goto decline;
      num_palette = (int)(len / 3);
      for (int i = 0; i < num_palette; i++)
        memcpy(f->palette[i], data + 3 * i, 3);
      have_plte = 1;
    } else if (type == CHUNK_tRNS) {
      if (f->has_trns || !chunk_small(src, head, len <= 768 ? len : 0, data))
        goto decline;
      if (ct == 3) {
        if (!have_plte || len == 0 || len > (uint32_t)num_palette)
          goto decline;
        for (uint32_t i = 0; i < len; i++)
          f->palette[i][3] = data[i];
        f->num_trans = (int)len;
      } else if (ct == 0 && len == 2) {
        f->trns[0] = (uint16_t)(data[0] << 8 | data[1]);
        if (f->trns[0] > max)
          goto decline;
      } else if (ct == 2 && len == 6) {
        for (int i = 0; i < 3; i++) {
          f->trns[i] = (uint16_t)(data[2 * i] << 8 | data[2 * i + 1]);
          if (f->trns[i] > max)
            goto decline;
        }
      } else {
        goto decline;
      }
      f->has_trns = 1;
    } else if (ancillary(type)) {
      if (!chunk_skip(src, len))
        goto decline;
    } else {
      goto decline; /* IHDR again, IEND, an unknown critical chunk */
    }
  }
decline:
  free(f);
  return NULL;
}

void ist_png_fast_layout(const ist_png_fast *f, uint32_t *width,
                         uint32_t *height, int *depth, int *color_type,
                         int *has_trns, size_t *file_rowbytes) {
  *width = f->width;
  *height = f->height;
  *depth = f->depth;
  *color_type = f->color_type;
  *has_trns = f->has_trns;
  *file_rowbytes = f->rowbytes;
}

uint64_t ist_png_fast_peak(const ist_png_fast *f, const ist_source *src) {
  /* the inflated rows, the compressed stream (at most the rest of the
   * input), a zero row and a row of palette indices */
  return (uint64_t)f->height * (1 + (uint64_t)f->rowbytes) +
         (src->size - f->idat_at) + f->rowbytes + f->width;
}

/* ---- unfiltering ------------------------------------------------------- */

/* The Paeth predictor in libpng's order of comparisons (the same choice as
 * the specification's: a, else b, else c on ties), without branches. */
static inline int paeth(int a, int b, int c) {
  int pa = b - c, pb = a - c, pc = pa + pb;
  pa = pa < 0 ? -pa : pa;
  pb = pb < 0 ? -pb : pb;
  pc = pc < 0 ? -pc : pc;
  int r = pb < pa ? b : a, m = pb < pa ? pb : pa;
  return pc < m ? c : r;
}

/* Average and Paeth for a pixel of B bytes: the B bytes of a pixel are
 * independent, so with B fixed the compiler keeps them in registers and
 * lanes. n is a multiple of B. */
#define AVG_LOOP(B)                                                            \
  for (; i < n; i += B)                                                        \
    for (size_t k = 0; k < B; k++)                                             \
      row[i + k] =                                                             \
          (unsigned char)(row[i + k] + ((row[i + k - B] + prev[i + k]) >> 1));
#define PAETH_LOOP(B)                                                          \
  for (; i < n; i += B)                                                        \
    for (size_t k = 0; k < B; k++)                                             \
      row[i + k] =                                                             \
          (unsigned char)(row[i + k] + paeth(row[i + k - B], prev[i + k],      \
                                             prev[i + k - B]));

/* Unfilters row (n bytes, n a multiple of bpp) in place against prev, the
 * row above (unfiltered; zeros above the first row); 0 for an unknown
 * filter. */
static int unfilter(int filter, unsigned char *row, const unsigned char *prev,
                    size_t n, size_t bpp) {
  size_t i;
  switch (filter) {
  case 0:
    return 1;
  case 1:
    for (i = bpp; i < n; i++)
      row[i] = (unsigned char)(row[i] + row[i - bpp]);
    return 1;
  case 2:
    for (i = 0; i < n; i++)
      row[i] = (unsigned char)(row[i] + prev[i]);
    return 1;
  case 3:
    for (i = 0; i < bpp && i < n; i++)
      row[i] = (unsigned char)(row[i] + (prev[i] >> 1));
    switch (bpp) {
    case 1:
      AVG_LOOP(1) break;
    case 2:
      AVG_LOOP(2) break;
    case 3:
      AVG_LOOP(3) break;
    case 4:
      AVG_LOOP(4) break;
    case 6:
      AVG_LOOP(6) break;
    default:
      AVG_LOOP(8) break;
    }
    return 1;
  case 4:
    for (i = 0; i < bpp && i < n; i++)
      row[i] = (unsigned char)(row[i] + prev[i]); /* a = c = 0: b */
    switch (bpp) {
    case 1:
      PAETH_LOOP(1) break;
    case 2:
      PAETH_LOOP(2) break;
    case 3:
      PAETH_LOOP(3) break;
    case 4:
      PAETH_LOOP(4) break;
    case 6:
      PAETH_LOOP(6) break;
    default:
      PAETH_LOOP(8) break;
    }
    return 1;
  }
  return 0;
}

/* ---- one unfiltered row into the planes -------------------------------- */

/* Sample x of a row of depth-bit samples (depth < 8, most significant bits
 * first). */
static unsigned packed(const unsigned char *row, size_t x, int depth) {
  size_t bit = x * (size_t)depth;
  return (unsigned)(row[bit >> 3] >> (8 - depth - (int)(bit & 7))) &
         ((1u << depth) - 1);
}

/* Big-endian 16-bit samples of pixels of C channels into the planes p. */
#define SPLIT16(C)                                                             \
  for (size_t x = 0; x < w; x++)                                               \
    for (int k = 0; k < C; k++)                                                \
      p16[k][x] =                                                              \
          (uint16_t)(row[2 * (x * C + k)] << 8 | row[2 * (x * C + k) + 1]);

static void put_row(const ist_png_fast *f, imgstat_image *img, uint32_t y,
                    const unsigned char *row, void *tmp) {
  size_t w = f->width;
  unsigned char *p8[IMGSTAT_MAX_CHANNELS];
  uint16_t *p16[IMGSTAT_MAX_CHANNELS];
  for (int c = 0; c < img->channels; c++) {
    p8[c] = ist_image_row(img, c, y);
    p16[c] = ist_image_row(img, c, y);
  }
  if (f->color_type == 3) {
    if (f->depth < 8) { /* the indices, one a byte, first */
      unsigned char *t = tmp;
      for (size_t x = 0; x < w; x++)
        t[x] = (unsigned char)packed(row, x, f->depth);
      row = t;
    }
    if (img->channels == 4)
      for (size_t x = 0; x < w; x++) {
        const unsigned char *e = f->palette[row[x]];
        p8[0][x] = e[0];
        p8[1][x] = e[1];
        p8[2][x] = e[2];
        p8[3][x] = e[3];
      }
    else
      for (size_t x = 0; x < w; x++) {
        const unsigned char *e = f->palette[row[x]];
        p8[0][x] = e[0];
        p8[1][x] = e[1];
        p8[2][x] = e[2];
      }
    return;
  }
  if (f->depth < 8) { /* gray */
    static const unsigned char scale[5] = {0, 0xff, 0x55, 0, 0x11};
    unsigned s = scale[f->depth];
    for (size_t x = 0; x < w; x++) {
      unsigned v = packed(row, x, f->depth);
      p8[0][x] = (unsigned char)(v * s);
      if (f->has_trns)
        p8[1][x] = v == f->trns[0] ? 0 : 255;
    }
    return;
  }
  int c = f->file_channels;
  if (!f->has_trns) {
    if (f->depth == 8) {
      if (c == 1)
        memcpy(p8[0], row, w);
      else
        ist_pixels_split(img, row, y, 0, w, 1);
    } else {
      switch (c) {
      case 1:
        SPLIT16(1) break;
      case 2:
        SPLIT16(2) break;
      case 3:
        SPLIT16(3) break;
      default:
        SPLIT16(4) break;
      }
    }
    return;
  }
  /* gray or RGB with a transparent value: an alpha plane after them */
  for (size_t x = 0; x < w; x++) {
    int hit = 1;
    for (int k = 0; k < c; k++) {
      uint16_t v;
      if (f->depth == 8) {
        v = row[x * c + k];
        p8[k][x] = (unsigned char)v;
      } else {
        v = (uint16_t)(row[2 * (x * c + k)] << 8 | row[2 * (x * c + k) + 1]);
        p16[k][x] = v;
      }
      hit &= v == f->trns[k];
    }
    if (f->depth == 8)
      p8[c][x] = hit ? 0 : 255;
    else
      p16[c][x] = hit ? 0 : 65535;
  }
}

/* ---- the image data ------------------------------------------------------ */

int ist_png_fast_read(const ist_png_fast *f, ist_source *src,
                      imgstat_image *img) {
  int ok = 0;
  unsigned char head[8], crc[4];
  uint32_t len, type;
  size_t cap = (size_t)(src->size - f->idat_at), got = 0;
  size_t stride = f->rowbytes + 1;
  size_t total = (size_t)f->height * stride;
  unsigned char *packed_data = malloc(cap ? cap : 1);
  unsigned char *rows = malloc(total);
  unsigned char *zero = calloc(f->rowbytes ? f->rowbytes : 1, 1);
  void *tmp = malloc(f->width); /* a row of palette indices */
  struct libdeflate_decompressor *z = libdeflate_alloc_decompressor();
  if (!packed_data || !rows || !zero || !tmp || !z ||
      ist_source_seek(src, f->idat_at) != 0)
    goto done;
  /* libpng's limit on an IDAT chunk's length (png_check_chunk_length):
   * the filtered image (its row factor counting whole samples) and
   * deflate's overhead, at least LIBPNG_CHUNK_MAX; a chunk no longer than
   * the filtered image always passes. */
  uint64_t idat_max = total > LIBPNG_CHUNK_MAX ? total : LIBPNG_CHUNK_MAX;
  for (;;) {
    if (!chunk_head(src, head, &len, &type))
      goto done;
    if (type != CHUNK_IDAT)
      break;
    if (len > idat_max || len > cap - got ||
        ist_source_read(src, packed_data + got, len) != len ||
        ist_source_read(src, crc, 4) != 4 ||
        !crc_ok(head + 4, packed_data + got, len, crc))
      goto done;
    got += len;
  }
  /* then ancillary chunks up to IEND, as libpng's png_read_end reads them */
  for (;;) {
    if (type == CHUNK_IEND) {
      if (len != 0 || ist_source_read(src, crc, 4) != 4 ||
          !crc_ok(head + 4, NULL, 0, crc))
        goto done;
      break;
    }
    if (!ancillary(type) || len > LIBPNG_CHUNK_MAX || !chunk_skip(src, len) ||
        !chunk_head(src, head, &len, &type))
      goto done;
  }
  if (libdeflate_zlib_decompress(z, packed_data, got, rows, total, NULL) !=
      LIBDEFLATE_SUCCESS)
    goto done;
  free(packed_data); /* the peak: the rows and the planes */
  packed_data = NULL;
  const unsigned char *prev = zero;
  for (uint32_t y = 0; y < f->height; y++) {
    unsigned char *row = rows + (size_t)y * stride;
    if (!unfilter(row[0], row + 1, prev, f->rowbytes, (size_t)f->bpp))
      goto done;
    put_row(f, img, y, row + 1, tmp);
    prev = row + 1;
  }
  ok = 1;
done:
  libdeflate_free_decompressor(z);
  free(packed_data);
  free(rows);
  free(zero);
  free(tmp);
  return ok;
}

void ist_png_fast_free(ist_png_fast *f) { free(f); }
