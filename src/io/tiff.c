/*
 * TIFF through libtiff (4.5, Debian 12): the
 * page (directory) --page names, the first by default; the header says how
 * many there are.
 *
 * Samples are read as stored with TIFFReadEncodedStrip/Tile (strips and
 * tiles, contiguous and planar, every compression libtiff has: none, LZW,
 * deflate, PackBits, JPEG, ...), never through TIFFRGBAImage, which would
 * make them 8-bit:
 *  - unsigned 1/2/4 bits: widened to 8 bits by bit replication (v * 255,
 *    85 or 17: 0..255), as every format's samples of fewer than 8 bits;
 *    unsigned 8 bits: 8-bit; unsigned 16 bits: 16-bit; MinIsWhite gray is
 *    inverted (white is 255, 65535), so a picture reads the same in any
 *    container;
 *  - 32-bit float: float; signed 16 bits: int16 (16-bit planes of the value
 *    + 32768, imgstat.h IMGSTAT_INT16_OFFSET); signed 8-bit: floats
 *    (exact); signed and
 *    unsigned 32-bit integers and 64-bit floats: floats when every value is
 *    exactly one, else refused;
 *  - palette: RGB of the colour map, 8-bit v when every entry is v * 257 or
 *    v * 256 (the two ways 8-bit maps are stored: libtiff's tools, PIL) or
 *    every entry is under 256 (as stored), else the 16-bit entries;
 *  - gray (+ one extra sample: alpha), RGB (+ alpha); YCbCr only when JPEG
 *    compressed with its samples together (libjpeg then gives RGB; planar
 *    YCbCr is refused); CMYK (4 samples, InkSet CMYK) and CIE Lab (3) of
 *    8 or 16 unsigned bits as stored, Lab's signed a, b offset by +128 or
 *    +32768 (their top bit flipped); others refused.
 * The file is read where libtiff asks (client procedures over the source),
 * never copied whole. Warnings that say the strip or tile arrays are not
 * the data refuse the file (on_warning), as does an uncompressed strip or
 * tile whose byte count is too small for its pixels.
 * Errors and warnings go to our handlers, never to stderr.
 */
#define _DEFAULT_SOURCE /* madvise */
#include "dlib.h"
#include "image_rows.h"
#include "imgstat/imgstat.h"
#include "io.h"

#ifdef IMGSTAT_HAVE_TIFF

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>

/* libtiff, loaded when the first TIFF file is opened (dlib.h): the
 * functions called below, through the loaded table. */
/* clang-format off */
#define TIFF_SYMBOLS(X) \
  X(TIFFClientOpenExt) \
  X(TIFFClose) \
  X(TIFFComputeStrip) \
  X(TIFFComputeTile) \
  X(TIFFFieldDataType) \
  X(TIFFFieldPassCount) \
  X(TIFFFieldReadCount) \
  X(TIFFFieldWithTag) \
  X(TIFFGetField) \
  X(TIFFGetFieldDefaulted) \
  X(TIFFGetStrileByteCount) \
  X(TIFFGetStrileOffset) \
  X(TIFFIsByteSwapped) \
  X(TIFFIsTiled) \
  X(TIFFNumberOfDirectories) \
  X(TIFFOpenOptionsAlloc) \
  X(TIFFOpenOptionsFree) \
  X(TIFFOpenOptionsSetErrorHandlerExtR) \
  X(TIFFOpenOptionsSetMaxSingleMemAlloc) \
  X(TIFFOpenOptionsSetWarningHandlerExtR) \
  X(TIFFReadEncodedStrip) \
  X(TIFFReadEncodedTile) \
  X(TIFFSetDirectory) \
  X(TIFFSetField) \
  X(TIFFStripSize) \
  X(TIFFStripSize64) \
  X(TIFFTileSize) \
  X(TIFFTileSize64)
/* clang-format on */
IST_DLIB_TABLE(tiff, TIFF_SYMBOLS);
#define TIFFClientOpenExt IST_DLIB_FN(tiff, TIFFClientOpenExt)
#define TIFFClose IST_DLIB_FN(tiff, TIFFClose)
#define TIFFComputeStrip IST_DLIB_FN(tiff, TIFFComputeStrip)
#define TIFFComputeTile IST_DLIB_FN(tiff, TIFFComputeTile)
#define TIFFFieldDataType IST_DLIB_FN(tiff, TIFFFieldDataType)
#define TIFFFieldPassCount IST_DLIB_FN(tiff, TIFFFieldPassCount)
#define TIFFFieldReadCount IST_DLIB_FN(tiff, TIFFFieldReadCount)
#define TIFFFieldWithTag IST_DLIB_FN(tiff, TIFFFieldWithTag)
#define TIFFGetField IST_DLIB_FN(tiff, TIFFGetField)
#define TIFFGetFieldDefaulted IST_DLIB_FN(tiff, TIFFGetFieldDefaulted)
#define TIFFGetStrileByteCount IST_DLIB_FN(tiff, TIFFGetStrileByteCount)
#define TIFFGetStrileOffset IST_DLIB_FN(tiff, TIFFGetStrileOffset)
#define TIFFIsByteSwapped IST_DLIB_FN(tiff, TIFFIsByteSwapped)
#define TIFFIsTiled IST_DLIB_FN(tiff, TIFFIsTiled)
#define TIFFNumberOfDirectories IST_DLIB_FN(tiff, TIFFNumberOfDirectories)
#define TIFFOpenOptionsAlloc IST_DLIB_FN(tiff, TIFFOpenOptionsAlloc)
#define TIFFOpenOptionsFree IST_DLIB_FN(tiff, TIFFOpenOptionsFree)
#define TIFFOpenOptionsSetErrorHandlerExtR                                     \
  IST_DLIB_FN(tiff, TIFFOpenOptionsSetErrorHandlerExtR)
#define TIFFOpenOptionsSetMaxSingleMemAlloc                                    \
  IST_DLIB_FN(tiff, TIFFOpenOptionsSetMaxSingleMemAlloc)
#define TIFFOpenOptionsSetWarningHandlerExtR                                   \
  IST_DLIB_FN(tiff, TIFFOpenOptionsSetWarningHandlerExtR)
#define TIFFReadEncodedStrip IST_DLIB_FN(tiff, TIFFReadEncodedStrip)
#define TIFFReadEncodedTile IST_DLIB_FN(tiff, TIFFReadEncodedTile)
#define TIFFSetDirectory IST_DLIB_FN(tiff, TIFFSetDirectory)
#define TIFFSetField IST_DLIB_FN(tiff, TIFFSetField)
#define TIFFStripSize IST_DLIB_FN(tiff, TIFFStripSize)
#define TIFFStripSize64 IST_DLIB_FN(tiff, TIFFStripSize64)
#define TIFFTileSize IST_DLIB_FN(tiff, TIFFTileSize)
#define TIFFTileSize64 IST_DLIB_FN(tiff, TIFFTileSize64)
static const char *const tiff_files[] = {IMGSTAT_SONAME_TIFF, IMGSTAT_PATH_TIFF,
                                         NULL};
static ist_dlib tiff_dlib =
    IST_DLIB_ROW(tiff, "TIFF", "libtiff", tiff_files, 0);
ist_dlib *const ist_tiff_dlibs[] = {&tiff_dlib, NULL};

typedef struct tiff_state {
  ist_source *src;  /* read where libtiff asks: never copied whole */
  char *band_names; /* the header's (tiff_band_names) */
  toff_t pos;
  TIFF *tif;
  char message[IMGSTAT_ERROR_MAX];
  char damage[IMGSTAT_ERROR_MAX]; /* a warning that refuses the file */
  /* the page's layout */
  uint32_t width, height;
  uint16_t bps, spp, format, photometric, planar, compression;
  /* CIE Lab: a and b (channels 1, 2) are signed; flipping their top bit
   * (0x80 or 0x8000) reports them offset by half the range */
  unsigned lab_flip;
  int int16; /* signed 16-bit: stored with the top bit flipped */
  imgstat_colour colour;
  int tiled;
  uint32_t tile_w, tile_h, rows_per_strip;
  int palette8;          /* palette: 8-bit entries: 1 as stored, 256: e >> 8 */
  uint16_t *map[3];      /* palette: libtiff's colour map */
  const char *type_name; /* of samples made floats, for a refusal */
  unsigned widen;        /* 1/2/4-bit: 255, 85, 17 (bit replication); else 1 */
  unsigned invert;       /* MinIsWhite unsigned: 255 or 65535 (white), else 0 */
  unsigned char *chunk;  /* one strip or tile */
  /* statistics as read: the input's bytes where they lie (memory input, or
   * the file mapped: tiff_map_open), else NULL; and what is done with a
   * mapped chunk's pages (TIFF_MAP_*) */
  const unsigned char *base;
  unsigned map_flags;
} tiff_state;

/* ---- input: libtiff's client procedures over the source ------------------
 * A file is read with pread where libtiff asks (its directories, then one
 * strip or tile at a time), memory input (a pipe's bounded copy) is read in
 * place: what decoding holds follows the image, not the file's size. */

static tmsize_t on_read(thandle_t h, void *buf, tmsize_t n) {
  tiff_state *ts = h;
  if (n <= 0)
    return 0;
  size_t k = ist_source_read_at(ts->src, ts->pos, buf, (size_t)n);
  ts->pos += k;
  return (tmsize_t)k;
}

static tmsize_t on_write(thandle_t h, void *buf, tmsize_t n) {
  (void)h;
  (void)buf;
  (void)n;
  return -1;
}

static toff_t on_seek(thandle_t h, toff_t off, int whence) {
  tiff_state *ts = h;
  toff_t base = whence == SEEK_CUR   ? ts->pos
                : whence == SEEK_END ? ts->src->size
                                     : 0;
  if (off > UINT64_MAX - base)
    return (toff_t)-1;
  ts->pos = base + off;
  return ts->pos;
}

static int on_close(thandle_t h) {
  (void)h;
  return 0;
}

static toff_t on_size(thandle_t h) { return ((tiff_state *)h)->src->size; }

static int on_map(thandle_t h, void **base, toff_t *size) {
  (void)h;
  (void)base;
  (void)size;
  return 0;
}

static void on_unmap(thandle_t h, void *base, toff_t size) {
  (void)h;
  (void)base;
  (void)size;
}

/* libtiff's errors: the first is kept (the later ones follow from it). */
static int on_error(TIFF *tif, void *user, const char *module, const char *fmt,
                    va_list ap) {
  (void)tif;
  (void)module;
  tiff_state *ts = user;
  if (!ts->message[0])
    imgstat_number_vsnprintf(ts->message, sizeof ts->message, fmt, ap);
  return 1;
}

/* libtiff's warnings are dropped (the library never prints), but for those
 * that say the strip or tile arrays do not describe the data: libtiff then
 * ignores an array or re-estimates the byte counts from the image size and
 * reads bytes that are not the image's. The first of those refuses the
 * file, in libtiff's words. */
static int warning_means_damage(const char *text) {
  static const char *const words[] = {"StripOffsets", "StripByteCounts",
                                      "TileOffsets", "TileByteCounts",
                                      "calculating from imagelength"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strstr(text, words[i]))
      return 1;
  return 0;
}

static int on_warning(TIFF *tif, void *user, const char *module,
                      const char *fmt, va_list ap) {
  (void)tif;
  (void)module;
  tiff_state *ts = user;
  char text[IMGSTAT_ERROR_MAX];
  imgstat_number_vsnprintf(text, sizeof text, fmt, ap);
  if (!ts->damage[0] && warning_means_damage(text))
    snprintf(ts->damage, sizeof ts->damage, "%s", text);
  return 1;
}

static imgstat_status tiff_failure(tiff_state *ts, const char *what,
                                   imgstat_error *err) {
  const char *m = ts->message;
  /* libtiff starts some messages with the file's name, ours "input" */
  if (strncmp(m, "input: ", 7) == 0)
    m += 7;
  return ist_corrupt(err, "TIFF", "%s", *m ? m : what);
}

/* ---- the page's layout --------------------------------------------------
 */

static imgstat_status unsupported(imgstat_error *err, const char *what,
                                  unsigned v) {
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                           "TIFF with %s %u is not supported", what, v);
}

/* The channels and sample type of the page, or a refusal. */
static imgstat_status tiff_layout(tiff_state *ts, int *channels,
                                  imgstat_sample *sample, imgstat_error *err) {
  TIFF *tif = ts->tif;
  uint16_t compression = COMPRESSION_NONE;
  ts->colour = IMGSTAT_COLOUR_DEFAULT;
  ts->lab_flip = 0;
  ts->int16 = 0;
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &ts->bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &ts->compression);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &ts->spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &ts->format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &ts->planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &ts->photometric))
    ts->photometric = ts->spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &ts->width) ||
      !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &ts->height))
    return tiff_failure(ts, "no image size", err);
  if (ts->spp > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "TIFF has %u bands (samples per pixel): more "
                             "than %d are not supported",
                             (unsigned)ts->spp, IMGSTAT_MAX_CHANNELS);
  if (ts->spp < 1)
    return unsupported(err, "samples per pixel", ts->spp);
  int b = ts->bps, f = ts->format;
  if (f == SAMPLEFORMAT_VOID)
    f = ts->format = SAMPLEFORMAT_UINT;
  int ok = (f == SAMPLEFORMAT_UINT &&
            (b == 1 || b == 2 || b == 4 || b == 8 || b == 16 || b == 32)) ||
           (f == SAMPLEFORMAT_INT && (b == 8 || b == 16 || b == 32)) ||
           (f == SAMPLEFORMAT_IEEEFP && (b == 32 || b == 64));
  if (!ok)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "TIFF of %d-bit %s samples is not supported", b,
                             f == SAMPLEFORMAT_INT      ? "signed"
                             : f == SAMPLEFORMAT_IEEEFP ? "float"
                             : f == SAMPLEFORMAT_UINT   ? "unsigned"
                                                        : "complex");
  *channels = ts->spp;
  switch (ts->photometric) {
  case PHOTOMETRIC_MINISBLACK:
  case PHOTOMETRIC_MINISWHITE:
    /* more than 2 samples a pixel: bands 1..N (as GDAL writes them, the
     * extra samples unspecified), whatever ExtraSamples says; 3 or 4 of
     * them named as bands too, not RGB (IMGSTAT_COLOUR_BANDS) */
    if (ts->spp > 2 && ts->spp <= 4)
      ts->colour = IMGSTAT_COLOUR_BANDS;
    break;
  case PHOTOMETRIC_RGB: /* more than 4 samples a pixel: bands 1..N */
    if (ts->spp < 3)
      return unsupported(err, "RGB samples per pixel", ts->spp);
    break;
  case PHOTOMETRIC_YCBCR:
    if (compression != COMPRESSION_JPEG)
      return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                               "TIFF YCbCr is supported only JPEG-compressed");
    /* libjpeg converts to RGB only pixels whose samples are together */
    if (ts->planar == PLANARCONFIG_SEPARATE)
      return imgstat_error_set(
          err, IMGSTAT_ERR_UNSUPPORTED,
          "TIFF YCbCr in separate planes (PlanarConfiguration 2) is not "
          "supported");
    /* libjpeg makes it RGB: 3 samples of 8 bits */
    if (!TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB) ||
        ts->spp != 3 || b != 8)
      return unsupported(err, "YCbCr samples per pixel", ts->spp);
    break;
  case PHOTOMETRIC_SEPARATED: {
    uint16_t inks = INKSET_CMYK, extras = 0, *extra = NULL;
    TIFFGetField(tif, TIFFTAG_INKSET, &inks);
    /* an extra sample (alpha) leaves 3 inks */
    TIFFGetField(tif, TIFFTAG_EXTRASAMPLES, &extras, &extra);
    if (inks != INKSET_CMYK || ts->spp != 4 || extras != 0)
      return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                               "TIFF separated (photometric 5) other than "
                               "CMYK of 4 inks is not supported");
    if (f != SAMPLEFORMAT_UINT || (b != 8 && b != 16))
      return unsupported(err, "CMYK bits per sample", (unsigned)b);
    ts->colour = IMGSTAT_COLOUR_CMYK;
    break;
  }
  case PHOTOMETRIC_CIELAB:
    if (ts->spp != 3) /* an extra sample (alpha) included */
      return unsupported(err, "CIE Lab samples per pixel", ts->spp);
    if (f != SAMPLEFORMAT_UINT || (b != 8 && b != 16))
      return unsupported(err, "CIE Lab bits per sample", (unsigned)b);
    ts->colour = IMGSTAT_COLOUR_LAB;
    ts->lab_flip = b == 8 ? 0x80u : 0x8000u;
    break;
  case PHOTOMETRIC_PALETTE:
    if (ts->spp != 1 || f != SAMPLEFORMAT_UINT || b > 16)
      return unsupported(err, "palette bits per sample", (unsigned)b);
    if (!TIFFGetField(tif, TIFFTAG_COLORMAP, &ts->map[0], &ts->map[1],
                      &ts->map[2]))
      return ist_corrupt(err, "TIFF", "palette image without a colour map");
    *channels = 3;
    break;
  default:
    return unsupported(err, "photometric interpretation", ts->photometric);
  }
  if (ts->photometric == PHOTOMETRIC_PALETTE) {
    size_t entries = (size_t)1 << b;
    int small = 1, scaled = 1;
    for (int c = 0; c < 3; c++)
      for (size_t i = 0; i < entries; i++) {
        unsigned e = ts->map[c][i], lo = e & 255;
        small &= e < 256;
        scaled &= lo == 0 || lo == e >> 8;
      }
    ts->palette8 = small ? 1 : scaled ? 256 : 0;
    *sample = ts->palette8 ? IMGSTAT_U8 : IMGSTAT_U16;
  } else if (f == SAMPLEFORMAT_UINT && b <= 8) {
    *sample = IMGSTAT_U8;
    ts->widen = 255u / ((1u << b) - 1);
  } else if (f == SAMPLEFORMAT_UINT && b == 16) {
    *sample = IMGSTAT_U16;
    ts->widen = 1;
  } else if (f == SAMPLEFORMAT_INT && b == 16) {
    *sample = IMGSTAT_U16; /* int16: the value + 32768 */
    ts->int16 = 1;
    ts->widen = 1;
  } else {
    *sample = IMGSTAT_F32;
    ts->type_name = f == SAMPLEFORMAT_IEEEFP ? (b == 32 ? "float32" : "float64")
                    : f == SAMPLEFORMAT_INT  ? (b == 32 ? "int32" : "int")
                                             : "uint32";
  }
  if (ts->photometric == PHOTOMETRIC_MINISWHITE && f == SAMPLEFORMAT_UINT &&
      b <= 16)
    ts->invert = b <= 8 ? 255 : 65535;
  ts->tiled = TIFFIsTiled(tif);
  if (ts->tiled) {
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &ts->tile_w);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &ts->tile_h);
    if (ts->tile_w == 0 || ts->tile_h == 0)
      return ist_corrupt(err, "TIFF", "tile of %" PRIu32 "x%" PRIu32,
                         ts->tile_w, ts->tile_h);
  } else {
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &ts->rows_per_strip);
    if (ts->rows_per_strip == 0 || ts->rows_per_strip > ts->height)
      ts->rows_per_strip = ts->height;
  }
  return IMGSTAT_OK;
}

/* The fewest bytes of compressed data that can make raw bytes of samples:
 * none stores them; PackBits makes at most 128 bytes of 2; deflate at most
 * 1032 of 2 bits (see png.c); LZW at most 4096 bytes a code of at least 9
 * bits; JPEG at least a bit an 8x8 block, 6 blocks (16x16 pixels, 768
 * bytes of RGB) at 4:2:0 and at most 18 (32x32, 3072 bytes) at 4:1:1 with
 * 4-fold vertical subsampling. Other codecs: no bound (0). */
static uint64_t tiff_min_input(uint16_t compression, uint64_t raw) {
  switch (compression) {
  case COMPRESSION_NONE:
    return raw;
  case COMPRESSION_PACKBITS:
    return raw / 64;
  case COMPRESSION_DEFLATE:
  case COMPRESSION_ADOBE_DEFLATE:
    return raw / 4128;
  case COMPRESSION_LZW:
    return raw / 3641;
  case COMPRESSION_JPEG:
    return raw / 1366;
  default:
    return 0;
  }
}

/* GDAL's nodata tag: ASCII, the value as text. */
#define TIFFTAG_GDAL_NODATA 42113

/* The page's GDAL_NODATA value into *out: 1 when it has one that reads as
 * a number (or "nan", any case: NaN), else 0. libtiff keeps a tag it does
 * not know as an anonymous field (its count passed beside the value). */
/* The ASCII value of tag in tif (NULL: none), as libtiff hands it. */
static const char *tiff_text(TIFF *tif, uint32_t tag) {
  const TIFFField *f = TIFFFieldWithTag(tif, tag);
  if (!f || TIFFFieldDataType(f) != TIFF_ASCII)
    return NULL;
  const char *text = NULL;
  int ok;
  if (TIFFFieldPassCount(f)) {
    if (TIFFFieldReadCount(f) == TIFF_VARIABLE2) {
      uint32_t count = 0;
      ok = TIFFGetField(tif, tag, &count, &text);
    } else {
      uint16_t count = 0;
      ok = TIFFGetField(tif, tag, &count, &text);
    }
  } else {
    ok = TIFFGetField(tif, tag, &text);
  }
  return ok ? text : NULL;
}

static int tiff_nodata(TIFF *tif, double *out) {
  const char *text = tiff_text(tif, TIFFTAG_GDAL_NODATA);
  if (!text)
    return 0;
  while (*text == ' ')
    text++;
  if (strncasecmp(text, "nan", 3) == 0 || strncasecmp(text, "-nan", 4) == 0) {
    *out = NAN;
    return 1;
  }
  size_t n = imgstat_number_read(text, out);
  if (n == 0)
    return 0;
  while (text[n] == ' ')
    n++;
  return text[n] == '\0';
}

#define TIFFTAG_GDAL_METADATA 42112

/* XML text between text and end with its entities (amp, lt, gt, quot,
 * apos) replaced, into out (at most end - text bytes); returns its end. */
static char *xml_unescape(const char *text, const char *end, char *out) {
  static const struct {
    const char *entity;
    char c;
  } ents[] = {{"&amp;", '&'},
              {"&lt;", '<'},
              {"&gt;", '>'},
              {"&quot;", '"'},
              {"&apos;", '\''}};
  while (text < end) {
    size_t k = 0;
    for (; k < sizeof ents / sizeof *ents; k++) {
      size_t n = strlen(ents[k].entity);
      if ((size_t)(end - text) >= n && memcmp(text, ents[k].entity, n) == 0) {
        *out++ = ents[k].c;
        text += n;
        break;
      }
    }
    if (k == sizeof ents / sizeof *ents)
      *out++ = *text++;
  }
  return out;
}

/* The value of attribute name="..." in the tag from tag to tag_end, into
 * buf (size bytes); 0 when absent or too long. */
static int xml_attr(const char *tag, const char *tag_end, const char *name,
                    char *buf, size_t size) {
  size_t n = strlen(name);
  for (const char *p = tag + 1; p + n + 2 < tag_end; p++)
    if ((p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n') &&
        memcmp(p, name, n) == 0 && p[n] == '=' && p[n + 1] == '"') {
      const char *v = p + n + 2;
      const char *q = memchr(v, '"', (size_t)(tag_end - v));
      if (!q || (size_t)(q - v) >= size)
        return 0;
      memcpy(buf, v, (size_t)(q - v));
      buf[q - v] = '\0';
      return 1;
    }
  return 0;
}

/* The band descriptions GDAL writes in its GDAL_METADATA tag: each
 * <Item name="DESCRIPTION" sample="N" role="description">TEXT</Item>, N
 * from 0, TEXT escaped twice (GDAL escapes the value, then the XML writer
 * does), packed as imgstat_header.band_names; NULL when none (or out of
 * memory: the names are not needed). */
static char *tiff_band_names(TIFF *tif, int channels) {
  const char *xml = tiff_text(tif, TIFFTAG_GDAL_METADATA);
  if (!xml || channels < 1)
    return NULL;
  char **name = calloc((size_t)channels, sizeof *name);
  int any = 0;
  for (const char *p = xml; name && (p = strstr(p, "<Item")) != NULL;) {
    const char *tag_end = strchr(p, '>');
    if (!tag_end)
      break;
    const char *text = tag_end + 1;
    const char *close = strstr(text, "</Item>");
    if (!close)
      break;
    char v[32], sample[16], role[32];
    char *end;
    long c;
    if (tag_end[-1] != '/' && xml_attr(p, tag_end, "name", v, sizeof v) &&
        strcmp(v, "DESCRIPTION") == 0 &&
        xml_attr(p, tag_end, "role", role, sizeof role) &&
        strcmp(role, "description") == 0 &&
        xml_attr(p, tag_end, "sample", sample, sizeof sample) &&
        (c = strtol(sample, &end, 10), *end == '\0' && end != sample) &&
        c >= 0 && c < channels && !name[c]) {
      char *once = malloc((size_t)(close - text) + 1);
      if (once) {
        char *e = xml_unescape(text, close, once);
        char *twice = malloc((size_t)(e - once) + 1);
        if (twice) {
          *xml_unescape(once, e, twice) = '\0';
          name[c] = twice;
          any |= twice[0] != '\0';
        }
        free(once);
      }
    }
    p = close + 7;
  }
  char *packed = NULL;
  if (name && any) {
    size_t n = 0;
    for (int c = 0; c < channels; c++)
      n += (name[c] ? strlen(name[c]) : 0) + 1;
    if ((packed = malloc(n)) != NULL) {
      char *at = packed;
      for (int c = 0; c < channels; c++) {
        size_t k = name[c] ? strlen(name[c]) : 0;
        memcpy(at, name[c] ? name[c] : "", k + 1);
        at += k + 1;
      }
    }
  }
  for (int c = 0; name && c < channels; c++)
    free(name[c]);
  free(name);
  return packed;
}

/* No single libtiff allocation over the memory budget. */
static tmsize_t tiff_max_alloc(const imgstat_decoder *d) {
  return d->lim.max_memory > (uint64_t)INT64_MAX / 2
             ? (tmsize_t)(INT64_MAX / 2)
             : (tmsize_t)d->lim.max_memory;
}

imgstat_status ist_tiff_open(imgstat_decoder *d, imgstat_error *err) {
  imgstat_status loaded = ist_dlib_need(&tiff_dlib, err);
  if (loaded != IMGSTAT_OK)
    return loaded;
  ist_source *src = &d->src;
  tiff_state *ts = calloc(1, sizeof *ts);
  if (!ts)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  d->state = ts;
  ts->src = src;
  imgstat_status s;
  TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
  if (!opts)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, ts);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, ts);
  /* no single libtiff allocation over the memory budget */
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts, tiff_max_alloc(d));
  /* "m": no memory mapping (our procs read the bytes) */
  ts->tif = TIFFClientOpenExt("input", "rm", ts, on_read, on_write, on_seek,
                              on_close, on_size, on_map, on_unmap, opts);
  TIFFOpenOptionsFree(opts);
  if (!ts->tif)
    return tiff_failure(ts, "cannot read the header", err);
  tdir_t pages = TIFFNumberOfDirectories(ts->tif);
  if (pages == 0)
    return ist_corrupt(err, "TIFF", "no image directory");
  if (d->page > pages) {
    imgstat_error_set(err, IMGSTAT_ERR_ARG,
                      "page %" PRIu32 ": the TIFF file has %u page%s", d->page,
                      (unsigned)pages, pages == 1 ? "" : "s");
    return imgstat_error_cause(err, IMGSTAT_CAUSE_PAGE, pages, d->page, NULL);
  }
  if (d->page > 1) /* the first page's warnings are not this page's */
    ts->damage[0] = '\0';
  if (!TIFFSetDirectory(ts->tif, (tdir_t)(d->page - 1)))
    return tiff_failure(ts, "cannot read the page's directory", err);
  if (ts->damage[0])
    return ist_corrupt(err, "TIFF", "%s", ts->damage);
  int channels = 0;
  imgstat_sample sample = IMGSTAT_U8;
  if ((s = tiff_layout(ts, &channels, &sample, err)) != IMGSTAT_OK)
    return s;
  uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(ts->tif, TIFFTAG_COMPRESSION, &compression);
  uint64_t chunk = ts->tiled ? (uint64_t)TIFFTileSize64(ts->tif)
                             : (uint64_t)TIFFStripSize64(ts->tif);
  uint64_t raw = ((uint64_t)ts->width * ts->spp * ts->bps + 7) / 8 * ts->height;
  uint64_t plane = (uint64_t)ts->width * ts->height * (uint64_t)sample;
  s = ist_decode_check(
      &d->lim, ts->width, ts->height, plane * (uint64_t)channels + chunk,
      tiff_min_input(compression, raw), src->size, "TIFF", err);
  if (s != IMGSTAT_OK)
    return s;
  ist_header_set(&d->header, ts->width, ts->height, channels, sample, "TIFF");
  d->header.pages = pages;
  d->header.page = d->page;
  d->header.colour = ts->colour;
  d->header.int16 = ts->int16;
  d->header.has_nodata = tiff_nodata(ts->tif, &d->header.nodata);
  ts->band_names = tiff_band_names(ts->tif, channels);
  d->header.band_names = ts->band_names;
  return IMGSTAT_OK;
}

/* ---- samples ------------------------------------------------------------ */

/* Sample i of a row of bits-wide samples, as a double. */
static double sample_at(const tiff_state *ts, const unsigned char *row,
                        size_t i) {
  switch (ts->bps) {
  case 1:
  case 2:
  case 4: {
    size_t bit = i * ts->bps;
    unsigned v = row[bit >> 3] >> (8 - ts->bps - (bit & 7));
    return v & ((1u << ts->bps) - 1);
  }
  case 8:
    return ts->format == SAMPLEFORMAT_INT ? (double)(int8_t)row[i] : row[i];
  case 16: {
    uint16_t v;
    memcpy(&v, row + 2 * i, 2);
    return ts->format == SAMPLEFORMAT_INT ? (double)(int16_t)v : v;
  }
  case 32: {
    uint32_t v;
    memcpy(&v, row + 4 * i, 4);
    if (ts->format == SAMPLEFORMAT_IEEEFP) {
      float f;
      memcpy(&f, &v, 4);
      return f;
    }
    return ts->format == SAMPLEFORMAT_INT ? (double)(int32_t)v : v;
  }
  default: {
    double v;
    memcpy(&v, row + 8 * i, 8);
    return v;
  }
  }
}

/* Whether the page's samples are kept as stored (int16: but for the top
 * bit, flipped), neither widened nor mapped nor inverted. */
static int kept_as_stored(const tiff_state *ts) {
  return !ts->map[0] && !ts->invert && !ts->lab_flip &&
         ((ts->format == SAMPLEFORMAT_UINT &&
           (ts->bps == 8 || ts->bps == 16)) ||
          ts->int16 || (ts->format == SAMPLEFORMAT_IEEEFP && ts->bps == 32));
}

/* Puts n pixels of a decoded row (from its pixel x0 on, step samples apart,
 * channel c0 first: contiguous rows hold spp samples a pixel, planar ones
 * one) at (x, y) of img. */
static imgstat_status put_row(tiff_state *ts, imgstat_image *img,
                              const unsigned char *row, uint32_t x, uint32_t y,
                              uint32_t n, int c0, int nc, imgstat_error *err) {
  /* Samples imgstat keeps as they are: split or copied. */
  if (kept_as_stored(ts)) {
    if (nc == img->channels)
      ist_pixels_split(img, row, y, x, n, 1);
    else
      memcpy((unsigned char *)ist_image_row(img, c0, y) +
                 (size_t)x * (size_t)img->sample,
             row, (size_t)n * (size_t)img->sample);
    /* int16: the top bit flipped, the value + 32768 */
    for (int k = 0; ts->int16 && k < nc; k++) {
      uint16_t *o = (uint16_t *)ist_image_row(img, c0 + k, y) + x;
      for (uint32_t i = 0; i < n; i++)
        o[i] ^= 0x8000u;
    }
    return IMGSTAT_OK;
  }
  for (int k = 0; k < nc; k++) {
    int c = c0 + k;
    unsigned char *out = ist_image_row(img, ts->map[0] ? 0 : c, y);
    /* MinIsWhite: the gray sample, not an extra (alpha) one */
    unsigned invert = c == 0 ? ts->invert : 0;
    unsigned flip = c == 1 || c == 2 ? ts->lab_flip : 0;
    for (uint32_t i = 0; i < n; i++) {
      double v = sample_at(ts, row, (size_t)i * (size_t)nc + (size_t)k);
      if (ts->map[0]) { /* palette: the index's three entries */
        size_t idx = (size_t)v;
        for (int p = 0; p < 3; p++) {
          unsigned e = ts->map[p][idx];
          unsigned char *o = ist_image_row(img, p, y);
          if (ts->palette8)
            o[x + i] = (unsigned char)(ts->palette8 == 256 ? e >> 8 : e);
          else
            ((uint16_t *)o)[x + i] = (uint16_t)e;
        }
        continue;
      }
      switch (img->sample) {
      case IMGSTAT_U8: { /* widened to 8 bits, white 255 */
        unsigned u = ((unsigned)v ^ flip) * ts->widen;
        out[x + i] = (unsigned char)(invert ? invert - u : u);
        break;
      }
      case IMGSTAT_U16:
        ((uint16_t *)out)[x + i] =
            (uint16_t)(invert ? invert - (unsigned)v : (unsigned)v ^ flip);
        break;
      default:
        if (!ist_f32_exact(v, &((float *)out)[x + i]))
          return ist_f32_refuse(err, "TIFF", ts->type_name, v, x + i, y);
      }
    }
  }
  return IMGSTAT_OK;
}

/* The chunks (strips or tiles) of the page, numbered in the order they
 * are stored in: planes, then rows of chunks, then chunks in a row. */
typedef struct tiff_chunks {
  int planar, nc;
  uint64_t planes, down, across, total;
  uint32_t cw, ch;
  size_t row_bytes;
  tmsize_t size;
} tiff_chunks;

/* Where chunk g of the page lies: its plane (planar) or 0, its first
 * pixel and its rows and columns inside the image. */
typedef struct tiff_place {
  int p;
  uint32_t x0, y0, rows, cols;
} tiff_place;

/* Reads chunk g of the page into ts->chunk (k->size bytes) through ts's
 * handle; *at: where it lies. */
/* Where chunk g lies (*at), its number in the file's arrays (*n) and the
 * bytes its pixels take decoded (a strip: its rows whole; a tile: always its
 * full size). */
static tmsize_t chunk_place(const tiff_state *ts, const tiff_chunks *k,
                            uint64_t g, tiff_place *at, uint32_t *n) {
  uint64_t per_plane = k->down * k->across;
  at->p = (int)(g / per_plane);
  at->y0 = (uint32_t)((g % per_plane) / k->across * k->ch);
  at->x0 = (uint32_t)((g % per_plane) % k->across * k->cw);
  at->rows = ts->height - at->y0 < k->ch ? ts->height - at->y0 : k->ch;
  at->cols = ts->width - at->x0 < k->cw ? ts->width - at->x0 : k->cw;
  *n = ts->tiled ? TIFFComputeTile(ts->tif, at->x0, at->y0, 0, (uint16_t)at->p)
                 : TIFFComputeStrip(ts->tif, at->y0, (uint16_t)at->p);
  return ts->tiled ? k->size : (tmsize_t)(k->row_bytes * at->rows);
}

static imgstat_status fetch_chunk(tiff_state *ts, const tiff_chunks *k,
                                  uint64_t g, tiff_place *at,
                                  imgstat_error *err) {
  TIFF *tif = ts->tif;
  tiff_place place;
  uint32_t n;
  tmsize_t want = chunk_place(ts, k, g, &place, &n);
  tmsize_t got;
  ts->message[0] = '\0';
  /* Uncompressed, libtiff reads a whole strip from its offset whatever its
   * byte count says: a count too small for the rows (RowsPerStrip or the
   * tile size disagreeing with the arrays) would give another strip's
   * bytes. */
  uint64_t count = TIFFGetStrileByteCount(tif, n);
  if (ts->compression == COMPRESSION_NONE && count < (uint64_t)want)
    return ist_corrupt(err, "TIFF",
                       "%s %" PRIu32 " holds %" PRIu64
                       " bytes where its pixels take %" PRIu64
                       " (RowsPerStrip or the tile size disagrees with "
                       "the byte counts)",
                       ts->tiled ? "tile" : "strip", n, count, (uint64_t)want);
  /* A deflated chunk whose stream holds more than the chunk is taken by
   * libtiff (libdeflate's "insufficient space") with the buffer's end
   * left unwritten: it would keep the previous chunk's samples (another
   * thread's order, another result) or uninitialised memory. Samples a
   * compressed chunk does not give are 0, as GDAL reads them. */
  if (ts->compression != COMPRESSION_NONE)
    memset(ts->chunk, 0, (size_t)k->size);
  if (ts->tiled)
    got = TIFFReadEncodedTile(tif, n, ts->chunk, k->size);
  else
    got = TIFFReadEncodedStrip(tif, n, ts->chunk, k->size);
  if (ts->damage[0])
    return ist_corrupt(err, "TIFF", "%s", ts->damage);
  if (got < want || ts->message[0])
    return tiff_failure(ts, "a strip or tile is truncated", err);
  *at = place;
  return IMGSTAT_OK;
}

/* Reads chunk g of the page into img through ts's handle (its buffer
 * ts->chunk of k->size bytes). */
static imgstat_status read_chunk(tiff_state *ts, const tiff_chunks *k,
                                 imgstat_image *img, uint64_t g,
                                 imgstat_error *err) {
  tiff_place at;
  imgstat_status s = fetch_chunk(ts, k, g, &at, err);
  for (uint32_t r = 0; r < at.rows && s == IMGSTAT_OK; r++)
    s = put_row(ts, img, ts->chunk + (size_t)r * k->row_bytes, at.x0, at.y0 + r,
                at.cols, at.p, k->nc, err);
  return s;
}

/* ---- statistics as the chunks come ---------------------------------------
 * For statistics alone (ist_tiff_stats), each chunk is reduced as it is
 * read, while it is in the cache (ist_valid_scan_rows: the figures of the
 * valid-sample reduction over the image's planes), and merged into the
 * thread's figures, its positions made the image's raster positions: a
 * chunk of one sample a pixel kept as stored is its own plane; the rows of
 * another are put into planes a few rows at a time (TIFF_STREAM_GROUP
 * bytes, as read_chunk would put them into the image's) and reduced there.
 * Pixel-interleaved samples kept as stored are reduced where they lie
 * instead (ist_ilv_scan: no planes), and uncompressed ones without libtiff:
 * where they lie in memory input or in the file mapped (tiff_map_open),
 * else read a group of rows at a time (TIFF_STREAM_GROUP bytes) into a
 * buffer the cache holds, not a whole tile at once.
 * The figures of 8- and 16-bit samples are integers, and merging keeps the
 * smaller raster position of equal extremes: any order of chunks, rows and
 * threads gives the figures of the whole image's reduction. What is held is
 * a chunk and a few rows of planes a thread, never the image. */

#define TIFF_STREAM_GROUP ((size_t)256 << 10)

/* The group's bytes and the threads' threshold below (TIFF_PARALLEL_BYTES):
 * lowered by the fuzzers alone (ist_tiff_test_sizes), whose images are too
 * small to reach either otherwise. */
static size_t tiff_stream_group = TIFF_STREAM_GROUP;
static uint64_t tiff_parallel_bytes;

typedef struct tiff_sink {
  imgstat_image rows;    /* a group of a chunk's rows as planes (planar: one,
                            at its channel) */
  unsigned char *buf;    /* their samples (direct: a group of rows as read) */
  uint32_t group;        /* rows in a group */
  size_t stride;         /* of a group's planes */
  imgstat_partial *part; /* a channel's figures */
  uint64_t *nodata;      /* a channel's nodata samples */
  ist_ilv *ilv;          /* pixel-interleaved samples kept as stored: reduced
                            where they lie (then no rows as planes) */
  int direct;            /* ilv, uncompressed, a file: a chunk's rows read
                            a group at a time into buf, not through libtiff */
} tiff_sink;

static void tiff_sink_close(tiff_sink *s) {
  ist_ilv_free(s->ilv);
  s->ilv = NULL;
  free(s->buf);
  free(s->part);
  free(s->nodata);
  s->buf = NULL;
  s->part = NULL;
  s->nodata = NULL;
}

/* Whether the chunks of ts's page are reduced where they lie
 * (ist_ilv_scan): every sample of a pixel together, kept as stored, but a
 * single plane of unsigned samples, which is its own plane. */
static int tiff_in_place(const tiff_state *ts, const tiff_chunks *k,
                         int channels) {
  return k->nc == channels && kept_as_stored(ts) &&
         (channels > 1 || ts->int16) && ts->bps <= 16;
}

/* Whether ts's uncompressed chunks are reduced where they lie without
 * libtiff (tiff_in_place, samples in the file's byte order as stored): in
 * the input's bytes (ts->base: memory input, or the file mapped), else
 * read from a file a group of rows at a time (stream_direct). */
static int tiff_direct(const tiff_state *ts, const tiff_chunks *k,
                       int channels) {
  uint16_t fill = FILLORDER_MSB2LSB;
  TIFFGetFieldDefaulted(ts->tif, TIFFTAG_FILLORDER, &fill);
  return tiff_in_place(ts, k, channels) && (ts->src->file || ts->src->data) &&
         ts->compression == COMPRESSION_NONE && fill == FILLORDER_MSB2LSB &&
         (ts->bps == 8 || !TIFFIsByteSwapped(ts->tif));
}

/* IMGSTAT_TIFF_MMAP: how a file's chunks that tiff_direct takes are read.
 * "0": with pread, a group of rows at a time into a buffer the cache holds
 * (stream_direct). Unset, "1" or a list of words: the file (a regular
 * file only, never a pipe or a device) is mapped read-only once for the
 * page, the threads sharing the mapping, and each chunk is reduced where it
 * lies in the page cache, without a copy, 8 MiB of rows at a time at most
 * (TIFF_MAP_SPAN: a tile of 13 bands of 512 x 512 is one span), whose pages
 * are unmapped from the process after them (MADV_DONTNEED: the page cache
 * keeps them), so that the resident memory stays a span a thread. Words:
 * "populate" (a span's page table filled in one call, MADV_POPULATE_READ,
 * before it is read, instead of a fault every few pages), "keep" (the
 * pages stay mapped until the end: the resident memory grows to the file's
 * size), "groups" (spans of 256 KiB of rows, the pread path's groups: less
 * resident, more calls), "sequential" (MADV_SEQUENTIAL: readahead from a
 * disk). A file cut
 * shorter while it is mapped would end the process (SIGBUS) where a read
 * fails with an error: the file's size is checked against the one it was
 * opened with before mapping, and every chunk's range against it. */
#define TIFF_MAP 1u
#define TIFF_MAP_DROP 2u
#define TIFF_MAP_POPULATE 4u
#define TIFF_MAP_SEQUENTIAL 8u
#define TIFF_MAP_GROUPS 16u
#define TIFF_MAP_DEFAULT (TIFF_MAP | TIFF_MAP_DROP)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; an older kernel ignores it */
#endif

static unsigned tiff_map_flags(void) {
  const char *e = getenv("IMGSTAT_TIFF_MMAP");
  if (!e || !*e)
    return TIFF_MAP_DEFAULT;
  if (strcmp(e, "0") == 0)
    return 0;
  unsigned f = TIFF_MAP | TIFF_MAP_DROP;
  if (strstr(e, "populate"))
    f |= TIFF_MAP_POPULATE;
  if (strstr(e, "keep"))
    f &= ~TIFF_MAP_DROP;
  if (strstr(e, "sequential"))
    f |= TIFF_MAP_SEQUENTIAL;
  if (strstr(e, "groups"))
    f |= TIFF_MAP_GROUPS;
  return f;
}

/* ts->base for ts's page (chunks k of `channels` bands): memory input's
 * bytes, or the file mapped (*len bytes at the result, which the caller
 * unmaps; NULL when not mapped), or none (NULL) where tiff_direct does not
 * take the chunks, IMGSTAT_TIFF_MMAP says 0 or the file cannot be mapped
 * (then read as before). */
static void *tiff_map_open(tiff_state *ts, const tiff_chunks *k, int channels,
                           size_t *len) {
  ts->base = NULL;
  ts->map_flags = 0;
  *len = 0;
  if (!tiff_direct(ts, k, channels))
    return NULL;
  if (!ts->src->file) {
    ts->base = ts->src->data;
    return NULL;
  }
  unsigned f = tiff_map_flags();
  int fd = fileno(ts->src->file);
  struct stat st;
  if (!(f & TIFF_MAP) || ts->src->size == 0 || fd < 0 || fstat(fd, &st) != 0 ||
      !S_ISREG(st.st_mode) || (uint64_t)st.st_size < (uint64_t)ts->src->size)
    return NULL;
  void *p = mmap(NULL, ts->src->size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return NULL;
  if (f & TIFF_MAP_SEQUENTIAL)
    madvise(p, ts->src->size, MADV_SEQUENTIAL);
  ts->base = p;
  ts->map_flags = f;
  *len = ts->src->size;
  return p;
}

/* The sink's buffers for a page of ts's chunks k under v, `channels`
 * channels of `sample`; 0 when there is no memory. */
static int tiff_sink_open(tiff_sink *s, const tiff_state *ts,
                          const tiff_chunks *k, const imgstat_valid *v,
                          int channels, imgstat_sample sample) {
  memset(&s->rows, 0, sizeof s->rows);
  s->ilv = NULL;
  if (tiff_in_place(ts, k, channels)) {
    s->direct = tiff_direct(ts, k, channels);
    s->group = k->row_bytes < TIFF_STREAM_GROUP
                   ? (uint32_t)(TIFF_STREAM_GROUP / k->row_bytes)
                   : 1;
    if (s->group > k->ch)
      s->group = k->ch;
    /* (a file's chunk that cannot be reduced in the mapping is read) */
    int buf = s->direct && ts->src->file;
    s->buf = buf ? malloc(k->row_bytes * (size_t)s->group) : NULL;
    s->part = malloc((size_t)channels * sizeof *s->part);
    s->nodata = calloc((size_t)channels, sizeof *s->nodata);
    s->ilv = ist_ilv_create(channels, sample, ts->int16, v, 1);
    if (!s->part || !s->nodata || !s->ilv || (buf && !s->buf)) {
      tiff_sink_close(s);
      return 0;
    }
    for (int c = 0; c < channels; c++)
      imgstat_partial_init(&s->part[c]);
    return 1;
  }
  s->rows.channels = channels;
  s->rows.sample = sample;
  s->rows.borrowed = 1;
  s->stride = (size_t)k->cw * (size_t)sample;
  int planes = k->planar ? 1 : channels;
  size_t row = s->stride * (size_t)planes;
  s->group = row < tiff_stream_group ? (uint32_t)(tiff_stream_group / row) : 1;
  if (s->group > k->ch)
    s->group = k->ch;
  size_t plane = s->stride * s->group;
  s->buf = malloc(plane * (size_t)planes);
  s->part = malloc((size_t)channels * sizeof *s->part);
  s->nodata = calloc((size_t)channels, sizeof *s->nodata);
  if (!s->buf || !s->part || !s->nodata) {
    tiff_sink_close(s);
    return 0;
  }
  for (int c = 0; c < channels; c++) {
    imgstat_partial_init(&s->part[c]);
    s->rows.planes[c] = k->planar ? s->buf : s->buf + plane * (size_t)c;
  }
  return 1;
}

/* A raster position of planes of at's cols whose first row is row r0 of
 * the chunk at, as the image's. */
static uint64_t tiff_raster_index(uint64_t i, const tiff_place *at, uint32_t r0,
                                  uint32_t width) {
  return (uint64_t)(at->y0 + r0 + i / at->cols) * width + at->x0 + i % at->cols;
}

/* Reduces channels c0 .. c1 - 1 of t (rows r0 .. of the chunk at) under v
 * into s. */
static void stream_rows(const imgstat_image *t, int c0, int c1,
                        const imgstat_valid *v, const tiff_place *at,
                        uint32_t r0, uint32_t width, tiff_sink *s) {
  for (int c = c0; c < c1; c++) {
    imgstat_partial part;
    uint64_t nodata;
    ist_valid_scan_rows(t, c, v, 0, t->height, &part, &nodata);
    if (part.count) {
      part.min_index = tiff_raster_index(part.min_index, at, r0, width);
      part.max_index = tiff_raster_index(part.max_index, at, r0, width);
    }
    imgstat_partial_merge(&s->part[c], &part, t->sample);
    s->nodata[c] += nodata;
  }
}

/* Rows r0 .. r0 + rows - 1 of the chunk at (px: the first's samples, rows
 * row_bytes apart) into s->ilv: rows as wide as the chunk's are one run. */
static void stream_ilv(const tiff_state *ts, const tiff_chunks *k,
                       const tiff_place *at, tiff_sink *s,
                       const unsigned char *px, uint32_t r0, uint32_t rows) {
  uint64_t first = (uint64_t)(at->y0 + r0) * ts->width + at->x0;
  size_t run = (size_t)at->cols * (size_t)k->nc * (ts->bps / 8);
  if (run == k->row_bytes)
    ist_ilv_scan(s->ilv, px, (uint64_t)rows * at->cols, first, at->cols,
                 ts->width);
  else
    for (uint32_t r = 0; r < rows; r++)
      ist_ilv_scan(s->ilv, px + (size_t)r * k->row_bytes, at->cols,
                   first + (uint64_t)r * ts->width, at->cols, ts->width);
}

/* An uncompressed chunk at (its pixels from byte off of the file, all
 * there) into s->ilv a group of rows at a time, read into s->buf, which the
 * cache holds while they are reduced (a tile of 13 bands is larger than a
 * core's cache). */
static imgstat_status stream_direct(tiff_state *ts, const tiff_chunks *k,
                                    const tiff_place *at, tiff_sink *s,
                                    uint64_t off, imgstat_error *err) {
  for (uint32_t r0 = 0; r0 < at->rows; r0 += s->group) {
    uint32_t rows = at->rows - r0 < s->group ? at->rows - r0 : s->group;
    size_t bytes = k->row_bytes * (size_t)rows;
    uint64_t at_byte = off + (uint64_t)r0 * k->row_bytes;
    if (ist_source_read_at(ts->src, at_byte, s->buf, bytes) < bytes) {
      ts->message[0] = '\0';
      return tiff_failure(ts, "a strip or tile is truncated", err);
    }
    stream_ilv(ts, k, at, s, s->buf, r0, rows);
  }
  return IMGSTAT_OK;
}

/* The rows of a mapped chunk reduced between dropping their pages (at
 * least one): the resident memory stays a span a thread whatever the
 * chunk's size (one strip of a whole image). */
#define TIFF_MAP_SPAN ((size_t)8 << 20)

/* An uncompressed chunk at (its pixels from byte off of the input, all
 * there) into s->ilv where it lies in ts->base, a span of rows at a time
 * (TIFF_MAP_SPAN, or a group: "groups"), a mapped file's pages filled
 * before a span and dropped after it as ts->map_flags say. */
static void stream_in_place(const tiff_state *ts, const tiff_chunks *k,
                            const tiff_place *at, tiff_sink *s, uint64_t off) {
  uint32_t step = ts->map_flags & TIFF_MAP_GROUPS ? s->group
                  : k->row_bytes < TIFF_MAP_SPAN
                      ? (uint32_t)(TIFF_MAP_SPAN / k->row_bytes)
                      : 1;
  if (!(ts->map_flags & (TIFF_MAP_DROP | TIFF_MAP_POPULATE)) || step > at->rows)
    step = at->rows;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  for (uint32_t r0 = 0; r0 < at->rows; r0 += step) {
    uint32_t rows = at->rows - r0 < step ? at->rows - r0 : step;
    const unsigned char *px = ts->base + off + (size_t)r0 * k->row_bytes;
    uintptr_t lo = (uintptr_t)px & ~(page - 1);
    uintptr_t hi =
        ((uintptr_t)px + (size_t)rows * k->row_bytes + page - 1) & ~(page - 1);
    if (ts->map_flags & TIFF_MAP_POPULATE)
      madvise((void *)lo, hi - lo, MADV_POPULATE_READ);
    stream_ilv(ts, k, at, s, px, r0, rows);
    if (ts->map_flags & TIFF_MAP_DROP)
      madvise((void *)lo, hi - lo, MADV_DONTNEED);
  }
}

/* Reads chunk g of the page through ts's handle and merges its figures
 * under v into s. */
static imgstat_status stream_chunk(tiff_state *ts, const tiff_chunks *k,
                                   const imgstat_valid *v, tiff_sink *s,
                                   uint64_t g, imgstat_error *err) {
  tiff_place at;
  if (s->direct) {
    uint32_t n;
    tmsize_t want = chunk_place(ts, k, g, &at, &n);
    uint64_t off = TIFFGetStrileOffset(ts->tif, n);
    /* else libtiff's read says what is wrong */
    if (TIFFGetStrileByteCount(ts->tif, n) >= (uint64_t)want &&
        off <= ts->src->size && (uint64_t)want <= ts->src->size - off) {
      /* 16-bit samples where they lie: at an even address only */
      if (ts->base &&
          (ts->bps == 8 || (((uintptr_t)ts->base + off) & 1) == 0)) {
        stream_in_place(ts, k, &at, s, off);
        return IMGSTAT_OK;
      }
      if (ts->src->file)
        return stream_direct(ts, k, &at, s, off, err);
    }
  }
  imgstat_status st = fetch_chunk(ts, k, g, &at, err);
  if (st != IMGSTAT_OK)
    return st;
  if (s->ilv) {
    stream_ilv(ts, k, &at, s, ts->chunk, 0, at.rows);
    return IMGSTAT_OK;
  }
  imgstat_image *t = &s->rows;
  int c0 = k->planar ? at.p : 0, c1 = k->planar ? at.p + 1 : t->channels;
  t->width = at.cols;
  if (k->nc == 1 && kept_as_stored(ts) && !ts->int16) {
    /* the chunk's rows are the plane */
    void *own = t->planes[c0];
    t->planes[c0] = ts->chunk;
    t->stride = k->row_bytes;
    t->height = at.rows;
    stream_rows(t, c0, c1, v, &at, 0, ts->width, s);
    t->planes[c0] = own;
    return IMGSTAT_OK;
  }
  t->stride = s->stride;
  for (uint32_t r0 = 0; r0 < at.rows && st == IMGSTAT_OK; r0 += s->group) {
    t->height = at.rows - r0 < s->group ? at.rows - r0 : s->group;
    for (uint32_t r = 0; r < t->height && st == IMGSTAT_OK; r++)
      st = put_row(ts, t, ts->chunk + (size_t)(r0 + r) * k->row_bytes, 0, r,
                   at.cols, at.p, k->nc, err);
    if (st == IMGSTAT_OK)
      stream_rows(t, c0, c1, v, &at, r0, ts->width, s);
  }
  return st;
}

/* ---- chunks on several threads ------------------------------------------
 * A large page's chunks are read on the cores, each thread through a
 * libtiff handle of its own over the same source (a handle is not shared
 * between threads; the source is read with pread or from memory), into
 * their own places in the image. The first failing chunk in the stored
 * order is the one reported, as a read on one thread would: a thread
 * takes no chunk after one known to fail. */

/* Pages under this many bytes of samples, or of fewer chunks than twice the
 * threads, are read on the calling thread. */
#define TIFF_PARALLEL_BYTES ((uint64_t)16 << 20)
#define TIFF_MAX_THREADS 64

void ist_tiff_test_sizes(uint64_t parallel_bytes, size_t group_bytes) {
  tiff_parallel_bytes = parallel_bytes;
  tiff_stream_group = group_bytes ? group_bytes : TIFF_STREAM_GROUP;
}

typedef struct tiff_job {
  const tiff_chunks *k;
  imgstat_image *img;     /* the image to read into, or NULL: */
  const imgstat_valid *v; /* each chunk reduced under v into a sink */
  atomic_uint_fast64_t next;
  atomic_uint_fast64_t fail_at; /* the first chunk known to fail */
} tiff_job;

typedef struct tiff_worker {
  tiff_job *job;
  tiff_state ts;            /* a copy of the page's state with its own handle */
  const imgstat_decoder *d; /* the handle opened in the worker's thread */
  tmsize_t size;            /* of its chunk buffer */
  tiff_sink sink;
  uint64_t fail_at;
  imgstat_status status;
  imgstat_error err;
} tiff_worker;

static void tiff_job_run(tiff_job *job, tiff_state *ts, tiff_worker *w) {
  for (;;) {
    uint64_t g = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
    if (g >= job->k->total ||
        g > atomic_load_explicit(&job->fail_at, memory_order_relaxed))
      return;
    imgstat_status s =
        job->img ? read_chunk(ts, job->k, job->img, g, &w->err)
                 : stream_chunk(ts, job->k, job->v, &w->sink, g, &w->err);
    if (s != IMGSTAT_OK) {
      w->status = s;
      w->fail_at = g;
      uint64_t cur = atomic_load_explicit(&job->fail_at, memory_order_relaxed);
      while (g < cur && !atomic_compare_exchange_weak_explicit(
                            &job->fail_at, &cur, g, memory_order_relaxed,
                            memory_order_relaxed))
        ;
      return;
    }
  }
}

/* Worker w's copy of ts, the page's state (in the calling thread, before
 * it reads), for a handle of its own over the same source and a chunk
 * buffer of size bytes (tiff_worker_open, in the worker's thread). */
static void tiff_worker_copy(tiff_worker *w, const tiff_state *ts,
                             const imgstat_decoder *d, tmsize_t size) {
  w->ts = *ts;
  w->ts.pos = 0;
  w->ts.message[0] = w->ts.damage[0] = '\0';
  w->ts.band_names = NULL;
  w->ts.tif = NULL;
  w->ts.chunk = NULL;
  w->d = d;
  w->size = size;
}

/* Worker w's handle at the page and its chunk buffer (the threads open
 * theirs at once, not one after the other before the first starts); 0
 * when it cannot have them (the other threads do its share). */
static int tiff_worker_open(tiff_worker *w) {
  const imgstat_decoder *d = w->d;
  w->ts.chunk = malloc((size_t)w->size);
  if (!w->ts.chunk)
    return 0;
  TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
  if (!opts)
    return 0;
  TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, &w->ts);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, &w->ts);
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts, tiff_max_alloc(d));
  w->ts.tif =
      TIFFClientOpenExt("input", "rm", &w->ts, on_read, on_write, on_seek,
                        on_close, on_size, on_map, on_unmap, opts);
  TIFFOpenOptionsFree(opts);
  /* the open reads the first page's directory: read again only another */
  if (!w->ts.tif ||
      (d->page > 1 && !TIFFSetDirectory(w->ts.tif, (tdir_t)(d->page - 1))))
    return 0;
  /* the page's warnings were the open's to refuse it */
  w->ts.damage[0] = w->ts.message[0] = '\0';
  return 1;
}

static void *tiff_worker_thread(void *arg) {
  tiff_worker *w = arg;
  if (tiff_worker_open(w))
    tiff_job_run(w->job, &w->ts, w);
  return NULL;
}

static void tiff_worker_close(tiff_worker *w) {
  if (w->ts.tif)
    TIFFClose(w->ts.tif);
  free(w->ts.chunk);
  w->ts.tif = NULL;
  w->ts.chunk = NULL;
}

/* How many threads read the page's chunks: 1 for a small page (bytes of
 * samples), a JPEG one (its colour mode is a setting of the handle) or a
 * palette; no more than the memory budget (--max-memory) has room for,
 * each thread holding `each` bytes of its own beside `held` bytes (the
 * image and the calling thread's chunk: what the open checked). */
static int tiff_threads(const imgstat_decoder *d, const tiff_state *ts,
                        const tiff_chunks *k, uint64_t bytes, uint64_t held,
                        uint64_t each) {
  if (bytes <
          (tiff_parallel_bytes ? tiff_parallel_bytes : TIFF_PARALLEL_BYTES) ||
      ts->compression == COMPRESSION_JPEG ||
      ts->compression == COMPRESSION_OJPEG || ts->map[0])
    return 1;
  int n = imgstat_cpu_cores();
  if (n > TIFF_MAX_THREADS)
    n = TIFF_MAX_THREADS;
  if ((uint64_t)n * 2 > k->total)
    n = (int)(k->total / 2);
  if (n < 2)
    return 1;
  uint64_t room = d->lim.max_memory > held ? d->lim.max_memory - held : 0;
  if ((uint64_t)n - 1 > room / each)
    n = (int)(room / each) + 1;
  return n < 1 ? 1 : n;
}

/* The chunks of ts's page into *k, and ts->chunk, the calling thread's
 * buffer of one (the caller frees it). */
static imgstat_status tiff_chunks_of(tiff_state *ts, tiff_chunks *k,
                                     imgstat_error *err) {
  k->planar = ts->planar == PLANARCONFIG_SEPARATE && ts->spp > 1;
  k->nc = k->planar ? 1 : ts->spp; /* samples a pixel in one chunk */
  k->planes = k->planar ? ts->spp : 1;
  k->size = ts->tiled ? TIFFTileSize(ts->tif) : TIFFStripSize(ts->tif);
  if (k->size <= 0)
    return tiff_failure(ts, "no strip or tile size", err);
  k->cw = ts->tiled ? ts->tile_w : ts->width;
  k->ch = ts->tiled ? ts->tile_h : ts->rows_per_strip;
  k->row_bytes = ((size_t)k->cw * (size_t)k->nc * ts->bps + 7) / 8;
  k->down = ((uint64_t)ts->height + k->ch - 1) / k->ch;
  k->across = ((uint64_t)ts->width + k->cw - 1) / k->cw;
  k->total = k->planes * k->down * k->across;
  ts->chunk = malloc((size_t)k->size);
  if (!ts->chunk)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  return IMGSTAT_OK;
}

/* Runs job (into job->img, or into the sinks under job->v) over the page's
 * chunks on `threads` threads: w[0], the calling thread on the page's own
 * handle, and helpers with handles of their own. The sinks of the workers
 * that ran are open (their figures to merge); *used: how many. */
static imgstat_status tiff_run(imgstat_decoder *d, tiff_state *ts,
                               tiff_job *job, tiff_worker *w, int threads,
                               imgstat_sample sample, int *used,
                               imgstat_error *err) {
  const tiff_chunks *k = job->k;
  atomic_init(&job->next, 0);
  atomic_init(&job->fail_at, UINT64_MAX);
  pthread_t helper[TIFF_MAX_THREADS];
  int started[TIFF_MAX_THREADS] = {0};
  *used = 0;
  for (int t = 0; t < threads; t++) {
    w[t].job = job;
    w[t].status = IMGSTAT_OK;
    w[t].fail_at = UINT64_MAX;
    int sink = job->img || tiff_sink_open(&w[t].sink, ts, k, job->v,
                                          d->header.channels, sample);
    if (t == 0 && !sink)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    if (t > 0 && sink) {
      tiff_worker_copy(&w[t], ts, d, k->size);
      if (pthread_create(&helper[t], NULL, tiff_worker_thread, &w[t]) == 0)
        started[t] = 1;
    }
  }
  *used = threads;
  tiff_job_run(job, ts, &w[0]);
  int first = 0;
  for (int t = 0; t < threads; t++) {
    if (started[t])
      pthread_join(helper[t], NULL);
    if (t > 0)
      tiff_worker_close(&w[t]);
    if (w[t].fail_at < w[first].fail_at)
      first = t;
  }
  if (w[first].status != IMGSTAT_OK) {
    if (err)
      *err = w[first].err;
    return w[first].status;
  }
  return IMGSTAT_OK;
}

imgstat_status ist_tiff_read(imgstat_decoder *d, imgstat_image *img,
                             imgstat_error *err) {
  tiff_state *ts = d->state;
  tiff_chunks k;
  imgstat_status s = tiff_chunks_of(ts, &k, err);
  if (s != IMGSTAT_OK)
    return s;
  uint64_t bytes = (uint64_t)img->width * img->height *
                   (uint64_t)img->channels * (uint64_t)img->sample;
  int threads = tiff_threads(d, ts, &k, bytes, bytes + (uint64_t)k.size,
                             (uint64_t)k.size);
  tiff_worker *w = threads > 1 ? calloc((size_t)threads, sizeof *w) : NULL;
  if (!w) {
    for (uint64_t g = 0; g < k.total && s == IMGSTAT_OK; g++)
      s = read_chunk(ts, &k, img, g, err);
  } else {
    tiff_job job;
    job.k = &k;
    job.img = img;
    job.v = NULL;
    int used;
    s = tiff_run(d, ts, &job, w, threads, img->sample, &used, err);
  }
  free(w);
  free(ts->chunk);
  ts->chunk = NULL;
  return s;
}

int ist_tiff_streams(const imgstat_decoder *d) {
  return d->header.sample == IMGSTAT_U8 || d->header.sample == IMGSTAT_U16;
}

imgstat_status ist_tiff_stats(imgstat_decoder *d, const imgstat_valid *v,
                              imgstat_partial *out, uint64_t *nodata,
                              imgstat_error *err) {
  tiff_state *ts = d->state;
  const imgstat_header *h = &d->header;
  if (!ist_tiff_streams(d) || (v && (v->mask || v->npixels)))
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "statistics as the chunks come: 8- or 16-bit "
                             "samples without a mask");
  for (int c = 0; c < h->channels; c++) {
    imgstat_partial_init(&out[c]);
    nodata[c] = 0;
  }
  tiff_chunks k;
  imgstat_status s = tiff_chunks_of(ts, &k, err);
  if (s != IMGSTAT_OK)
    return s;
  uint64_t bytes = (uint64_t)h->width * h->height * (uint64_t)h->channels *
                   (uint64_t)h->sample;
  /* a thread holds a chunk and a group of rows as planes */
  uint64_t each = (uint64_t)k.size + tiff_stream_group +
                  (uint64_t)k.cw * h->sample * (uint64_t)h->channels;
  int threads = tiff_threads(d, ts, &k, bytes, each, each);
  tiff_worker *w = calloc((size_t)threads, sizeof *w);
  if (!w) {
    free(ts->chunk);
    ts->chunk = NULL;
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  size_t mapped_len;
  void *mapped = tiff_map_open(ts, &k, h->channels, &mapped_len);
  tiff_job job;
  job.k = &k;
  job.img = NULL;
  job.v = v;
  int used = 0;
  s = tiff_run(d, ts, &job, w, threads, h->sample, &used, err);
  for (int t = 0; t < used; t++) {
    if (s == IMGSTAT_OK && w[t].sink.ilv)
      ist_ilv_finish(w[t].sink.ilv, w[t].sink.part, w[t].sink.nodata);
    for (int c = 0; s == IMGSTAT_OK && w[t].sink.part && c < h->channels; c++) {
      imgstat_partial_merge(&out[c], &w[t].sink.part[c], h->sample);
      nodata[c] += w[t].sink.nodata[c];
    }
    tiff_sink_close(&w[t].sink);
  }
  if (used == 0) /* the calling thread's sink failed */
    tiff_sink_close(&w[0].sink);
  if (mapped)
    munmap(mapped, mapped_len);
  ts->base = NULL;
  free(w);
  free(ts->chunk);
  ts->chunk = NULL;
  return s;
}

void ist_tiff_close(imgstat_decoder *d) {
  tiff_state *ts = d->state;
  if (!ts)
    return;
  if (ts->tif)
    TIFFClose(ts->tif);
  free(ts->chunk);
  free(ts->band_names);
  free(ts);
  d->state = NULL;
}

#endif
