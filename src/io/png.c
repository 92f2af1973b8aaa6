/*
 * PNG through libpng's low-level API, rows decoded straight into the planes:
 * one row buffer, never a whole interleaved copy, so peak memory stays near
 * the size of the decoded planes.
 *
 * Sample values are kept as stored: no gamma, sBIT, bKGD or colour-profile
 * transform. Gray at 1/2/4 bits is scaled to 0..255 (bit replication), palette
 * images become RGB, or RGBA when they carry tRNS. A tRNS chunk on a gray or
 * RGB image adds an alpha channel too (libpng's tRNS-to-alpha, as libvips and
 * Pillow read it): gray becomes YA, RGB becomes RGBA, at the image's depth,
 * alpha 0 where the pixel equals the tRNS value and the maximum elsewhere.
 *
 * With libdeflate in the build, png_fast.c decodes the files it is sure of
 * (non-interlaced, sound) to the same samples, inflating the whole image data
 * at once; whatever it declines, at open or at read, libpng decodes from the
 * first byte, so every refusal is libpng's.
 */
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"
#ifdef IMGSTAT_HAVE_LIBDEFLATE
#include "png_fast.h"
#endif

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* Everything the decode touches lives here, on the heap (the decoder's
 * state), never in the frame of a function that calls setjmp, so a longjmp
 * cannot leave any of it indeterminate (C11 7.13.2.1). */
typedef struct png_state {
  ist_source *src;
  const ist_limits *lim;
  imgstat_error *err; /* the current call's */
  png_structp png;
  png_infop info;
  unsigned char *row;
  int interlace;
#ifdef IMGSTAT_HAVE_LIBDEFLATE
  ist_png_fast *fast; /* the fast decoder took the file at open */
#endif
  int decoded_fast;           /* the read was the fast decoder's */
  imgstat_status fail_status; /* status reported after a longjmp */
  char message[IMGSTAT_ERROR_MAX];
} png_state;

static void on_png_error(png_structp png, png_const_charp msg) {
  png_state *st = png_get_error_ptr(png);
  snprintf(st->message, sizeof st->message, "%s",
           msg && *msg ? msg : "libpng error");
  png_longjmp(png, 1);
}

/* The error a longjmp brought: damaged data in the one wording
 * (ist_corrupt), a read error as it is. */
static imgstat_status png_failure(png_state *st) {
  if (st->fail_status == IMGSTAT_ERR_FORMAT)
    return ist_corrupt(st->err, "PNG", "%s", st->message);
  return imgstat_error_set(st->err, st->fail_status, "%s", st->message);
}

/* The library never prints: libpng's warnings (a bad CRC on an ancillary
 * chunk, unknown chunks, ...) do not stop the decode and are dropped. */
static void on_png_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

static void on_png_read(png_structp png, png_bytep out, size_t n) {
  png_state *st = png_get_io_ptr(png);
  if (ist_source_read(st->src, out, n) == n)
    return;
  if (st->src->read_errno) {
    st->fail_status = IMGSTAT_ERR_IO;
    png_error(png, strerror(st->src->read_errno));
  }
  png_error(png, "file is truncated");
}

static int host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 1;
}

/* Sets up the transforms and returns the channel count they produce. */
static int png_choose_layout(png_structp png, png_infop info, int color_type,
                             int bit_depth) {
  int channels = 0;
  switch (color_type) {
  case PNG_COLOR_TYPE_GRAY:
    if (bit_depth < 8)
      png_set_expand_gray_1_2_4_to_8(png); /* scales to 0..255 */
    channels = 1;
    break;
  case PNG_COLOR_TYPE_GRAY_ALPHA:
    channels = 2;
    break;
  case PNG_COLOR_TYPE_RGB:
    channels = 3;
    break;
  case PNG_COLOR_TYPE_RGB_ALPHA:
    channels = 4;
    break;
  case PNG_COLOR_TYPE_PALETTE:
    /* Also turns tRNS into alpha, which is what we want for palettes. */
    png_set_palette_to_rgb(png);
    channels = png_get_valid(png, info, PNG_INFO_tRNS) ? 4 : 3;
    break;
  }
  /* Gray or RGB with a transparent value: an alpha channel, as above. */
  if ((channels == 1 || channels == 3) &&
      color_type != PNG_COLOR_TYPE_PALETTE &&
      png_get_valid(png, info, PNG_INFO_tRNS)) {
    png_set_tRNS_to_alpha(png);
    channels++;
  }
  if (bit_depth == 16 && host_is_little_endian())
    png_set_swap(png);
  return channels;
}

/* The size check, before libpng or we allocate any row: a header that
 * claims 100000x100000 is refused, not allocated. Deflate makes at most 1032
 * bytes of 2 bits (a 258-byte match in two 1-bit codes), so the filtered
 * rows (a filter byte and the stored row each; file_row: the file's row
 * bytes) need at least 1/1032 of their size in IDAT data, besides the
 * signature, IHDR, one IDAT and IEND chunk (8 + 25 + 12 + 12 bytes) and
 * zlib's header and checksum (6). The peak on libpng's path: the planes and
 * one row. Both decoders make this check with the same figures, so its
 * verdict does not depend on which decodes. */
static imgstat_status png_size_check(const ist_limits *lim, uint32_t width,
                                     uint32_t height, int channels,
                                     imgstat_sample sample, uint64_t file_row,
                                     uint64_t input_size, imgstat_error *err) {
  uint64_t filtered = (uint64_t)height * (1 + file_row);
  uint64_t plane = (uint64_t)width * height * (uint64_t)sample;
  return ist_decode_check(
      lim, width, height, plane * (uint64_t)channels + plane / height,
      8 + 25 + 12 + 12 + 6 + (filtered + 1031) / 1032, input_size, "PNG", err);
}

/* Up to the header and its checks; the body that calls setjmp, all state
 * reached through st. */
static imgstat_status png_open_jmp(png_state *st, imgstat_header *hd) {
  st->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, st, on_png_error,
                                   on_png_warning);
  if (!st->png)
    return imgstat_error_set(st->err, IMGSTAT_ERR_NOMEM,
                             "cannot create the libpng decoder");
  st->info = png_create_info_struct(st->png);
  if (!st->info)
    return imgstat_error_set(st->err, IMGSTAT_ERR_NOMEM,
                             "cannot create the libpng decoder");
  if (setjmp(png_jmpbuf(st->png)))
    return png_failure(st);

  png_set_read_fn(st->png, st, on_png_read);
  /* Our --max-pixels check below is the size gate; libpng's default
   * 1000000-pixel width/height limits would refuse valid long strips. */
  png_set_user_limits(st->png, 0x7fffffffu, 0x7fffffffu);
  /* Only IHDR, PLTE, tRNS, IDAT and IEND make the pixels: every other chunk
   * (a negative count means all of them) is streamed past, never held.
   * libpng would otherwise allocate and zero the length a tEXt, zTXt, iTXt,
   * sPLT, pCAL, sCAL or eXIf chunk declares, up to 2 GB for an 81-byte file,
   * before finding the data missing; its chunk size limit
   * (png_set_chunk_malloc_max) is only a warning when reading, and with
   * nothing held there is nothing left for it or the chunk cache limit to
   * bound. A skipped chunk's CRC is checked as a handled one's is: a bad
   * one is a warning on an ancillary chunk (we go on, as before) and an
   * error on a critical one (none is skipped). */
  png_set_keep_unknown_chunks(st->png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
#ifdef PNG_IGNORE_ADLER32
  /* zlib's Adler-32 re-checks bytes that the IDAT chunk CRCs, which libpng
   * still verifies, already cover; skipping it saves a pass over the
   * decoded data. CRC checking itself stays on. */
  png_set_option(st->png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
#endif
  png_read_info(st->png, st->info);

  png_uint_32 width, height;
  int bit_depth, color_type, interlace;
  png_get_IHDR(st->png, st->info, &width, &height, &bit_depth, &color_type,
               &interlace, NULL, NULL);
  int channels = png_choose_layout(st->png, st->info, color_type, bit_depth);
  if (channels == 0)
    return imgstat_error_set(st->err, IMGSTAT_ERR_UNSUPPORTED,
                             "PNG colour type %d is not supported", color_type);
  imgstat_sample sample = bit_depth == 16 ? IMGSTAT_U16 : IMGSTAT_U8;

  imgstat_status s = png_size_check(
      st->lim, width, height, channels, sample,
      (uint64_t)png_get_rowbytes(st->png, st->info), st->src->size, st->err);
  if (s != IMGSTAT_OK)
    return s;
  st->interlace = interlace;
  ist_header_set(hd, width, height, channels, sample, "PNG");
  return IMGSTAT_OK;
}

/* The pixels, into img's rows; the body that calls setjmp. */
static imgstat_status png_read_jmp(png_state *st, imgstat_image *img) {
  if (setjmp(png_jmpbuf(st->png)))
    return png_failure(st);

  png_read_update_info(st->png, st->info);
  size_t rowbytes = png_get_rowbytes(st->png, st->info);
  uint32_t width = img->width, height = img->height;
  if (png_get_channels(st->png, st->info) != img->channels ||
      png_get_bit_depth(st->png, st->info) !=
          (png_byte)(8 * (int)img->sample) ||
      rowbytes != (size_t)width * img->channels * (size_t)img->sample)
    return imgstat_error_set(st->err, IMGSTAT_ERR_UNSUPPORTED,
                             "libpng produced an unexpected row layout");

  if (st->interlace == PNG_INTERLACE_NONE && img->channels == 1) {
    /* One channel: libpng writes each row straight into the plane. */
    for (png_uint_32 y = 0; y < height; y++)
      png_read_row(st->png, ist_image_row(img, 0, y), NULL);
  } else {
    st->row = malloc(rowbytes);
    if (!st->row)
      return imgstat_error_set(st->err, IMGSTAT_ERR_NOMEM,
                               "out of memory for a PNG row");
    if (st->interlace == PNG_INTERLACE_NONE) {
      for (png_uint_32 y = 0; y < height; y++) {
        png_read_row(st->png, st->row, NULL);
        ist_pixels_split(img, st->row, y, 0, width, 1);
      }
    } else {
      /* Adam7 without png_set_interlace_handling: libpng hands us each
       * pass's reduced rows (skipping empty passes) and we scatter their
       * pixels to (x, y) ourselves, which needs no full-image buffer. */
      for (int pass = 0; pass < 7; pass++) {
        png_uint_32 cols = PNG_PASS_COLS(width, pass);
        png_uint_32 rows = PNG_PASS_ROWS(height, pass);
        if (cols == 0 || rows == 0)
          continue;
        size_t x0 = PNG_COL_FROM_PASS_COL(0, pass);
        size_t dx = (size_t)1 << PNG_PASS_COL_SHIFT(pass);
        for (png_uint_32 r = 0; r < rows; r++) {
          png_read_row(st->png, st->row, NULL);
          uint32_t y = PNG_ROW_FROM_PASS_ROW(r, pass);
          ist_pixels_split(img, st->row, y, x0, cols, dx);
        }
      }
    }
  }
  /* Reads the chunks after the image data, so a bad CRC or a missing IEND
   * there is still an error. */
  png_read_end(st->png, st->info);
  return IMGSTAT_OK;
}

int ist_png_reader_libpng;

#ifdef IMGSTAT_HAVE_LIBDEFLATE
/* The fast decoder's open (png_fast.c): 1 when it took the file, with *s
 * the size check's verdict (the one libpng's path would give: the fast
 * open takes only chunks that libpng's png_read_info reads without
 * complaint); 0 when it declined, or when its buffers would pass
 * --max-memory where libpng's path fits. */
static int png_fast_open(png_state *st, imgstat_header *hd, imgstat_status *s) {
  ist_png_fast *f = ist_png_fast_open(st->src);
  if (!f)
    return 0;
  uint32_t width, height;
  int depth, ct, trns;
  size_t file_row;
  ist_png_fast_layout(f, &width, &height, &depth, &ct, &trns, &file_row);
  /* png_choose_layout's channels */
  int channels = ct == 0 ? 1 : ct == 4 ? 2 : ct == 6 ? 4 : 3;
  if (trns && (channels == 1 || channels == 3))
    channels++;
  imgstat_sample sample = depth == 16 ? IMGSTAT_U16 : IMGSTAT_U8;
  *s = png_size_check(st->lim, width, height, channels, sample, file_row,
                      st->src->size, st->err);
  uint64_t planes = (uint64_t)width * height * (uint64_t)sample * channels;
  if (*s == IMGSTAT_OK &&
      planes + ist_png_fast_peak(f, st->src) > st->lim->max_memory) {
    ist_png_fast_free(f);
    return 0;
  }
  if (*s != IMGSTAT_OK) {
    ist_png_fast_free(f);
    return 1;
  }
  st->fast = f;
  ist_header_set(hd, width, height, channels, sample, "PNG");
  return 1;
}
#endif

imgstat_status ist_png_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  /* IHDR comes first. libpng checks that only in the handlers of the
   * chunks it reads, and we have it skip most (png_open_jmp); a damaged
   * signature is left to libpng, whose message says what is wrong. */
  static const unsigned char signature[8] = {0x89, 'P',  'N',  'G',
                                             0x0D, 0x0A, 0x1A, 0x0A};
  unsigned char head[16];
  size_t got = ist_source_read(src, head, sizeof head);
  if (src->read_errno)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                             strerror(src->read_errno));
  int e = ist_source_rewind(src);
  if (e)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  if (got == sizeof head && memcmp(head, signature, 8) == 0 &&
      memcmp(head + 12, "IHDR", 4) != 0)
    return ist_corrupt(err, "PNG", "does not start with its IHDR chunk");

  png_state *st = calloc(1, sizeof *st);
  if (!st)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "cannot create the libpng decoder");
  d->state = st;
  st->src = src;
  st->lim = &d->lim;
  st->err = err;
  st->fail_status = IMGSTAT_ERR_FORMAT;
#ifdef IMGSTAT_HAVE_LIBDEFLATE
  if (!ist_png_reader_libpng) {
    imgstat_status s;
    if (png_fast_open(st, &d->header, &s))
      return s;
    e = ist_source_rewind(src);
    if (e)
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  }
#endif
  return png_open_jmp(st, &d->header);
}

imgstat_status ist_png_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  png_state *st = d->state;
  st->err = err;
#ifdef IMGSTAT_HAVE_LIBDEFLATE
  if (st->fast) {
    int ok = ist_png_fast_read(st->fast, st->src, img);
    ist_png_fast_free(st->fast);
    st->fast = NULL;
    if (ok) {
      st->decoded_fast = 1;
      return IMGSTAT_OK;
    }
    /* Declined: libpng decodes the file from its first byte, and words any
     * refusal. Its open finds the layout the fast open found (that open
     * took only chunks libpng reads the same way). */
    int e = ist_source_rewind(st->src);
    if (e)
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
    imgstat_header h;
    imgstat_status s = png_open_jmp(st, &h);
    if (s != IMGSTAT_OK)
      return s;
    if (h.width != img->width || h.height != img->height ||
        h.channels != img->channels || h.sample != img->sample)
      return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                               "libpng found another PNG layout");
  }
#endif
  return png_read_jmp(st, img);
}

int ist_png_decoded_fast(const imgstat_decoder *d) {
  const png_state *st = d->state;
  return st && st->decoded_fast;
}

void ist_png_close(imgstat_decoder *d) {
  png_state *st = d->state;
  if (!st)
    return;
  png_destroy_read_struct(&st->png, &st->info, NULL);
#ifdef IMGSTAT_HAVE_LIBDEFLATE
  ist_png_fast_free(st->fast);
#endif
  free(st->row);
  free(st);
  d->state = NULL;
}
