/*
 * FITS through cfitsio, from the file held in memory (fits_open_memfile):
 * the first HDU holding an image of 2 axes, or 3 with 1, 3 or 4 planes (the
 * planes are the channels: Y, RGB, RGBA). Tile-compressed images are read
 * as cfitsio presents them.
 *
 * Values are the physical ones, BZERO and BSCALE applied the standard way
 * (cfitsio's): BITPIX 8 is 8-bit; BITPIX 16 with BZERO 32768 (unsigned
 * 16-bit) is 16-bit; BITPIX -32 unscaled is float as stored; everything
 * else (signed 16-bit, 32-bit integers, -64, any other scaling) becomes
 * 32-bit floats when every value is exactly one, else is refused. Integer
 * images with a BLANK keyword become floats with NaN for the blank pixels,
 * which the float path counts (nan_count), as it counts NaN in float data.
 * Rows are not flipped: FITS pixel (i, j) (from 1) is imgstat's
 * (x, y) = (i - 1, j - 1), numpy's data[j - 1, i - 1].
 */
#include "image_rows.h"
#include "imgstat.h"
#include "io.h"

#ifdef IMGSTAT_HAVE_CFITSIO

#include <fitsio.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct fits_state {
  const unsigned char *data;
  int owned;
  size_t size;
  void *mem;      /* cfitsio's view of data */
  size_t memsize; /* and its size */
  fitsfile *f;
  uint32_t width, height;
  int channels;
  int type;   /* cfitsio datatype read: TBYTE, TUSHORT, TFLOAT, TDOUBLE */
  int blank;  /* an integer image with BLANK: NaN for its blank pixels */
  int bitpix; /* as stored */
  double *row;
} fits_state;

static imgstat_status fits_failure(int status, imgstat_error *err) {
  char text[FLEN_STATUS];
  fits_get_errstatus(status, text);
  if (status == MEMORY_ALLOCATION)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  return ist_corrupt(err, "FITS", "%s (cfitsio status %d)", text, status);
}

/* Whether HDU hdu (from 1) holds an image we take; its size if so. */
static int fits_image_at(fits_state *fs, int hdu, long naxes[3], int *status) {
  int type = 0, naxis = 0, bitpix = 0;
  if (fits_movabs_hdu(fs->f, hdu, &type, status) || type != IMAGE_HDU)
    return 0;
  naxes[0] = naxes[1] = naxes[2] = 0;
  if (fits_get_img_param(fs->f, 3, &bitpix, &naxis, naxes, status))
    return 0;
  fs->bitpix = bitpix;
  if (naxis == 2)
    naxes[2] = 1;
  return (naxis == 2 ||
          (naxis == 3 && (naxes[2] == 1 || naxes[2] == 3 || naxes[2] == 4))) &&
         naxes[0] > 0 && naxes[1] > 0;
}

imgstat_status ist_fits_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  fits_state *fs = calloc(1, sizeof *fs);
  if (!fs)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = fs;
  imgstat_status s = ist_source_slurp(src, &fs->data, &fs->owned, err);
  if (s != IMGSTAT_OK)
    return s;
  fs->size = src->size;
  /* cfitsio reads whole 2880-byte blocks, also the last, partial one of a
   * file whose padding is missing, past the end of its memory buffer (the
   * fuzzer found it): it gets a copy whose allocation ends on a block,
   * zero-filled; a truncated image is refused below, before any read. */
  size_t padded = (fs->size + 2879) / 2880 * 2880;
  unsigned char *copy = calloc(1, padded);
  if (!copy)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  memcpy(copy, fs->data, fs->size);
  if (fs->owned)
    free((void *)fs->data);
  fs->data = copy;
  fs->owned = 1;
  fs->mem = copy;
  fs->memsize = fs->size;
  int status = 0;
  if (fits_open_memfile(&fs->f, "input.fits", READONLY, &fs->mem, &fs->memsize,
                        0, NULL, &status))
    return fits_failure(status, err);
  int hdus = 0;
  if (fits_get_num_hdus(fs->f, &hdus, &status))
    return fits_failure(status, err);
  long naxes[3] = {0};
  int hdu = 1;
  for (; hdu <= hdus; hdu++) {
    if (fits_image_at(fs, hdu, naxes, &status))
      break;
    if (status)
      return fits_failure(status, err);
  }
  if (hdu > hdus)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "FITS file has no image HDU of 2 axes (or 3 "
                             "with 1, 3 or 4 planes)");
  if (naxes[0] > (long)UINT32_MAX || naxes[1] > (long)UINT32_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "FITS image too large");
  fs->width = (uint32_t)naxes[0];
  fs->height = (uint32_t)naxes[1];
  fs->channels = (int)naxes[2];

  int equiv = 0;
  if (fits_get_img_equivtype(fs->f, &equiv, &status))
    return fits_failure(status, err);
  double bscale = 1, bzero = 0;
  LONGLONG blank = 0;
  int st = 0;
  fits_read_key(fs->f, TDOUBLE, "BSCALE", &bscale, NULL, &st);
  st = 0;
  fits_read_key(fs->f, TDOUBLE, "BZERO", &bzero, NULL, &st);
  st = 0;
  fs->blank = fs->bitpix > 0 &&
              fits_read_key(fs->f, TLONGLONG, "BLANK", &blank, NULL, &st) == 0;
  imgstat_sample sample = IMGSTAT_F32;
  fs->type = TDOUBLE;
  if (!fs->blank && equiv == BYTE_IMG) {
    sample = IMGSTAT_U8;
    fs->type = TBYTE;
  } else if (!fs->blank && equiv == USHORT_IMG) {
    sample = IMGSTAT_U16;
    fs->type = TUSHORT;
  } else if (fs->bitpix == FLOAT_IMG && bscale == 1 && bzero == 0) {
    fs->type = TFLOAT;
  }
  /* The least input: a header block and the data as stored, unless the
   * image is tile-compressed. The peak: the file, the planes, a row of
   * doubles. */
  int compressed = fits_is_compressed_image(fs->f, &status);
  LONGLONG head_at = 0, data_at = 0, data_end = 0;
  if (fits_get_hduaddrll(fs->f, &head_at, &data_at, &data_end, &status))
    return fits_failure(status, err);
  uint64_t data_bytes = (uint64_t)fs->width * fs->height *
                        (uint64_t)fs->channels *
                        (uint64_t)(abs(fs->bitpix) / 8);
  if (!compressed && (uint64_t)data_at + data_bytes > fs->size)
    return ist_corrupt(err, "FITS",
                       "file is truncated (its image ends at byte %" PRIu64
                       ", the file has %zu)",
                       (uint64_t)data_at + data_bytes, fs->size);
  uint64_t plane = (uint64_t)fs->width * fs->height;
  uint64_t min_input = compressed ? 0
                                  : 2880 + plane * (uint64_t)fs->channels *
                                               (uint64_t)(abs(fs->bitpix) / 8);
  uint64_t peak = fs->size + plane * (uint64_t)sample * (uint64_t)fs->channels +
                  8 * (uint64_t)fs->width;
  s = ist_decode_check(&d->lim, fs->width, fs->height, peak, min_input,
                       fs->size, "FITS", err);
  if (s != IMGSTAT_OK)
    return s;
  d->header.width = fs->width;
  d->header.height = fs->height;
  d->header.channels = fs->channels;
  d->header.sample = sample;
  d->header.format = "FITS";
  return IMGSTAT_OK;
}

imgstat_status ist_fits_read(imgstat_decoder *d, imgstat_image *img,
                             imgstat_error *err) {
  fits_state *fs = d->state;
  if (fs->type == TDOUBLE) {
    fs->row = malloc((size_t)fs->width * sizeof *fs->row);
    if (!fs->row)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  int status = 0;
  double nan_value = NAN;
  for (int c = 0; c < fs->channels; c++)
    for (uint32_t y = 0; y < fs->height; y++) {
      LONGLONG first = 1 + ((LONGLONG)c * fs->height + y) * fs->width;
      void *out = ist_image_row(img, c, y);
      void *into = fs->type == TDOUBLE ? (void *)fs->row : out;
      int anynul = 0;
      /* no null value (NULL): cfitsio does not look for blanks; BLANK
       * integers: NaN for them */
      if (fits_read_img(fs->f, fs->type, first, (LONGLONG)fs->width,
                        fs->blank ? &nan_value : NULL, into, &anynul, &status))
        return fits_failure(status, err);
      if (fs->type != TDOUBLE)
        continue;
      float *o = out;
      for (uint32_t x = 0; x < fs->width; x++)
        if (!ist_f32_exact(fs->row[x], &o[x]))
          return ist_f32_refuse(err, "FITS",
                                fs->bitpix < 0 ? "float" : "scaled integer",
                                fs->row[x], x, y);
    }
  return IMGSTAT_OK;
}

void ist_fits_close(imgstat_decoder *d) {
  fits_state *fs = d->state;
  if (!fs)
    return;
  int status = 0;
  if (fs->f)
    fits_close_file(fs->f, &status);
  if (fs->owned)
    free((void *)fs->data);
  free(fs->row);
  free(fs);
  d->state = NULL;
}

#endif
