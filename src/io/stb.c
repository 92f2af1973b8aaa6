/*
 * Everything but PNG (and JPEG when TurboJPEG is built in) through stb_image:
 * BMP, TGA and PSD. GIF is giflib's (gif.c), Radiance HDR our own (hdr.c),
 * PNM our own (pnm.c).
 *
 * stb_image decodes to one interleaved buffer that we split into planes, so
 * peak memory is about twice the decoded pixels. It reads through our
 * callbacks, which stream a file (no whole-file copy) and tell a truncated
 * input from a complete one.
 *
 * Before stb allocates anything, our own reading of each header (below,
 * "what a header asks for") gives ist_decode_check the memory decoding
 * will hold and the least input the image takes. Reads past the end are
 * reported by our callbacks, and stb allocates zero-filled memory, so no pixel
 * comes from anything but the file.
 *
 * Other stb choices we keep: a PSD composite with partial alpha is
 * un-matted from white; BMP palettes become RGB (except the gray ramp,
 * below).
 */
#include "imgstat.h"
#include "io.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* libpng decodes PNG, giflib GIF, our hdr.c Radiance HDR, and Softimage PIC
 * is not a format we promise: keep stb away from all four. The library must
 * never abort, so stb's internal asserts (invariants, not input checks) are
 * compiled out. stb_image's allocations come back zero-filled: should a decoder
 * ever return pixels it did not write (a short read it missed), they are zeros,
 * never bytes of an earlier image. (Only its GIF and PNG readers, compiled
 * out, reallocate.) */
#define STBI_NO_PNG
#define STBI_NO_PIC
#define STBI_NO_GIF
#define STBI_NO_HDR
#define STBI_NO_PNM /* ours: src/io/pnm.c */
#define STBI_FAILURE_USERMSG
#define STBI_ASSERT(x) ((void)0)
#define STBI_MALLOC(sz) calloc(1, sz)
#define STBI_REALLOC_SIZED(p, oldsz, newsz) realloc(p, newsz)
#define STBI_FREE(p) free(p)
#define STB_IMAGE_IMPLEMENTATION
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

typedef struct stb_reader {
  ist_source *src;
  const char *refill; /* stb's own read buffer (below), NULL before a call */
  int past_end;       /* the decoder wanted bytes the input does not have */
} stb_reader;

/* Every stb call starts a context whose first read fills its 128-byte
 * buffer (stbi__start_callbacks), and it refills only that buffer; any
 * other read is stbi__getn reading straight into the pixels. A short refill
 * is just the end of the input (an empty one makes stb go on with a zero it
 * makes up); a short direct read means data is missing. Either way the
 * decoder is told (past_end) instead of reading memory it never wrote. */
static int on_stb_read(void *user, char *data, int size) {
  stb_reader *r = user;
  if (size <= 0)
    return 0;
  if (!r->refill)
    r->refill = data;
  size_t got = ist_source_read(r->src, data, (size_t)size);
  if (got == 0 || (got < (size_t)size && data != r->refill))
    r->past_end = 1;
  return (int)got;
}

static void on_stb_skip(void *user, int n) {
  stb_reader *r = user;
  ist_source *src = r->src;
  if (n <= 0)
    return;
  size_t left = src->pos < src->size ? src->size - src->pos : 0;
  size_t step = (size_t)n < left ? (size_t)n : left;
  if (src->file && step > 0 && fseek(src->file, (long)step, SEEK_CUR) != 0) {
    src->read_errno = errno ? errno : EIO;
    step = 0;
  }
  src->pos += step;
  /* Skipping past the end is not an error by itself (some BMP writers drop
   * the last row's padding); a later read there is. */
  if ((size_t)n > step)
    src->pos = src->size;
}

static int on_stb_eof(void *user) {
  stb_reader *r = user;
  return r->src->pos >= r->src->size;
}

static const stbi_io_callbacks stb_callbacks = {on_stb_read, on_stb_skip,
                                                on_stb_eof};

static const char *kind_format(ist_kind kind) {
  switch (kind) {
  case IMGSTAT_KIND_JPEG:
    return "JPEG";
  case IMGSTAT_KIND_BMP:
    return "BMP";
  case IMGSTAT_KIND_PSD:
    return "PSD";
  default:
    return "TGA"; /* the only format stb takes without a signature */
  }
}

/* stb's reason for the last failure, copied at once (it is per thread). */
static imgstat_status stb_failure(ist_kind kind, imgstat_error *err) {
  const char *why = stbi_failure_reason();
  if (why && strcmp(why, "Out of memory") == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "%s", why);
  if (kind == IMGSTAT_KIND_UNKNOWN &&
      (!why || strcmp(why, "Image not of any known type, or corrupt") == 0))
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "not a recognised image format");
  return ist_corrupt(err, kind_format(kind), "%s",
                     why && *why ? why : "cannot decode the image");
}

static imgstat_status rewind_or_fail(ist_source *src, imgstat_error *err) {
  int e = ist_source_rewind(src);
  return e ? imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e))
           : IMGSTAT_OK;
}

/* ---- reading ahead of stb ------------------------------------------------ */

typedef struct byte_reader {
  ist_source *src;
  size_t len, at;
  unsigned char buf[1 << 16];
} byte_reader;

static int next_byte(byte_reader *br) {
  if (br->at == br->len) {
    br->len = ist_source_read(br->src, br->buf, sizeof br->buf);
    br->at = 0;
    if (br->len == 0)
      return -1;
  }
  return br->buf[br->at++];
}

/* What stb reads where our pre-checks follow it: past the end, a zero. */
static int byte_or_zero(byte_reader *br) {
  int c = next_byte(br);
  return c < 0 ? 0 : c;
}

/* stb tries JPEG first on a file we did not recognise, and its start-of-image
 * test skips any number of 0xFF fill bytes before the SOI marker. */
static int stb_sees_jpeg(ist_source *src) {
  unsigned char h[256];
  size_t n = ist_source_read(src, h, sizeof h), i = 1;
  ist_source_rewind(src);
  if (n == 0 || h[0] != 0xFF)
    return 0;
  while (i < n && h[i] == 0xFF)
    i++;
  return i == n || h[i] == 0xD8; /* a long run of fills: check to be safe */
}

/* Two things in a JPEG make stb_image 2.27 read or write outside its tables,
 * both found by our fuzzer:
 *  - a Huffman table whose 16 code counts add up to more than 256: stb writes
 *    past its 257-entry size table (stbi__build_huffman);
 *  - a scan that selects a Huffman table no DHT segment defined: stb decodes
 *    with the uninitialised table, and a missing end sentinel makes its code
 *    search (stbi__jpeg_huff_decode) index past maxcode[17].
 * So before stb runs, walk the marker segments in file order, the
 * entropy-coded data between them included, remember which tables have been
 * defined, and check each scan's selectors the way stb uses them: a
 * sequential scan decodes with the DC and the AC table of each component, a
 * progressive DC scan only its first pass with the DC table, a progressive
 * AC scan with the AC table.
 * The same walk counts the scans: stb decodes every scan over the whole
 * image, so a progressive JPEG of thousands of tiny scans costs time
 * without bound (a 434 KB file took 25 s). We refuse more scans than
 * TurboJPEG's TJFLAG_LIMITSCANS allows (500 in libjpeg-turbo 2.1; a
 * sequential JPEG has one scan per component at most).
 * Returns the message for a refusal, or NULL; anything else wrong is left
 * to stb, which rejects it. */
static const char *jpeg_tables_problem(ist_source *src) {
  byte_reader *br = malloc(sizeof *br);
  if (!br)
    return NULL; /* stb will fail to allocate as well */
  br->src = src;
  br->len = br->at = 0;
  const char *problem = NULL;
  int defined[2][4] = {{0}}; /* [0 DC, 1 AC][table id] */
  int frame = 0;             /* 0 none yet, 1 sequential, 2 progressive */
  int scans = 0;
  int c;
  while (!problem && (c = next_byte(br)) >= 0) {
    if (c != 0xFF)
      continue; /* entropy-coded data or garbage between segments */
    int m;
    while ((m = next_byte(br)) == 0xFF) {
    }
    if (m < 0 || m == 0xD9)
      break;
    if (m == 0x00 || m == 0x01 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7))
      continue; /* stuffed byte, or a marker without a length */
    int hi = next_byte(br), lo = next_byte(br);
    if (lo < 0)
      break;
    long left = (long)(hi << 8 | lo) - 2;
    if (m == 0xDA && ++scans > IMGSTAT_JPEG_MAX_SCANS) {
      problem = "JPEG has more than 500 scans (the limit TurboJPEG applies "
                "too)";
      break;
    }
    if (m == 0xC0 || m == 0xC1 || m == 0xC2) {
      if (!frame)
        frame = m == 0xC2 ? 2 : 1;
    } else if (m == 0xC4) {
      /* As stb does: another table while any length is left, even when
       * less than a table's header is, reading on past the segment (and
       * zeros past the end of the input); it checks the length after
       * building the table. */
      while (left > 0) { /* one table: class/id, 16 counts, the symbols */
        int q = byte_or_zero(br), total = 0;
        for (int i = 0; i < 16; i++)
          total += byte_or_zero(br);
        if (total > 256) {
          problem = "Corrupt JPEG (a Huffman table has more than 256 codes)";
          break;
        }
        if ((q >> 4) <= 1 && (q & 15) <= 3)
          defined[q >> 4][q & 15] = 1;
        left -= 17 + total;
        for (int i = 0; i < total && next_byte(br) >= 0; i++) {
        }
      }
    } else if (m == 0xDA && frame && left >= 1) {
      /* Past the end of the input stb reads zeros, and so do we here. */
      int n = byte_or_zero(br);
      left--;
      if (n < 1 || n > 4 || left != 2 * n + 3)
        continue; /* stb refuses this header */
      int sel[4];
      for (int i = 0; i < n; i++) {
        byte_or_zero(br); /* component id */
        sel[i] = byte_or_zero(br);
      }
      int ss = byte_or_zero(br);
      byte_or_zero(br); /* spectral end */
      int ah = byte_or_zero(br) >> 4;
      left = 0;
      int dc = frame == 1 || (ss == 0 && ah == 0);
      int ac = frame == 1 || ss > 0;
      for (int i = 0; i < n; i++) {
        int hd = sel[i] >> 4, ha = sel[i] & 15;
        if (hd > 3 || ha > 3)
          continue; /* stb refuses these itself */
        if ((dc && !defined[0][hd]) || (ac && !defined[1][ha]))
          problem = "Corrupt JPEG (a scan uses a Huffman table that was "
                    "never defined)";
      }
    }
    while (left-- > 0 && next_byte(br) >= 0) {
    }
  }
  free(br);
  ist_source_rewind(src);
  return problem;
}

/* ---- what a header asks for ----------------------------------------------
 * Our own reading of each header, before stb allocates anything: the fewest
 * bytes a file of that size takes (ist_decode_check's min_input: the
 * format at its best compression) and what stb holds while decoding. Each
 * follows stb's reading of the header; what stb refuses is left to stb. */

/* Reads n bytes at offset off (then rewind); returns how many. */
static size_t source_read_at(ist_source *src, uint64_t off, void *buf,
                             size_t n) {
  if (off >= src->size ||
      (src->file && fseek(src->file, (long)off, SEEK_SET) != 0))
    return 0;
  src->pos = (size_t)off;
  return ist_source_read(src, buf, n);
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* TGA, as stbi__tga_load reads its 18-byte header: an ID field, a palette
 * when colour-mapped (entries of 15/16 bits take 2 bytes, others their
 * channels), then pixels of 1 or 2 index bytes, 2 bytes (15/16-bit RGB) or
 * one byte a channel. Uncompressed, every pixel is there; run-length
 * encoded, a packet of a count byte and one pixel makes at most 128 pixels
 * (packets may run across rows in stb). stb also skips "first entry index"
 * bytes before the palette; the bound leaves them out. */
typedef struct tga_layout {
  int comp;         /* channels stb returns, 0: stb refuses */
  uint64_t palette; /* bytes of stb's palette buffer */
  uint64_t min_input;
} tga_layout;

static void tga_scan(ist_source *src, tga_layout *tl) {
  unsigned char h[18];
  memset(tl, 0, sizeof *tl);
  size_t n = ist_source_read(src, h, sizeof h);
  ist_source_rewind(src);
  if (n < sizeof h)
    return;
  int indexed = h[1], rle = h[2] >= 8, bpp = h[16];
  int type = rle ? h[2] - 8 : h[2];
  uint64_t palette_len = (uint64_t)(h[5] | h[6] << 8);
  uint64_t pixels = (uint64_t)(h[12] | h[13] << 8) * (h[14] | h[15] << 8);
  /* stbi__tga_get_comp: palette entries, or pixels, of these bits */
  int bits = indexed ? h[7] : bpp, rgb16 = 0;
  switch (bits) {
  case 8:
    tl->comp = 1;
    break;
  case 16:
    if (!indexed && type == 3) {
      tl->comp = 2;
      break;
    }
    /* fallthrough */
  case 15:
    rgb16 = 1;
    tl->comp = 3;
    break;
  case 24:
  case 32:
    tl->comp = bits / 8;
    break;
  default:
    return;
  }
  uint64_t file_palette = 0, pixel_bytes = rgb16 ? 2 : (uint64_t)tl->comp;
  if (indexed) {
    tl->palette = palette_len * (uint64_t)tl->comp;
    file_palette = palette_len * (rgb16 ? 2 : (uint64_t)tl->comp);
    pixel_bytes = bpp == 8 ? 1 : 2;
  }
  tl->min_input =
      18 + h[0] + file_palette +
      (rle ? (pixels + 127) / 128 * (1 + pixel_bytes) : pixels * pixel_bytes);
}

/* PSD (version 1): a 26-byte header, three sections that stb skips by their
 * 4-byte lengths, a 2-byte compression, then every channel's samples:
 * uncompressed, all of them; PackBits, a 2-byte length for each row of
 * each channel, and each row at least one 2-byte packet per 128 bytes. */
typedef struct psd_layout {
  int channels, depth;  /* as the header says */
  int rle;              /* 1 also when the compression field is missing */
  uint64_t data_offset; /* past the compression field */
} psd_layout;

static imgstat_status psd_scan(ist_source *src, psd_layout *pl,
                               imgstat_error *err) {
  unsigned char h[26];
  pl->channels = 4;
  pl->depth = 8;
  pl->rle = 1;
  pl->data_offset = 0;
  imgstat_status s = IMGSTAT_OK;
  if (source_read_at(src, 0, h, sizeof h) < sizeof h)
    goto done; /* stb refuses it */
  pl->channels = h[12] << 8 | h[13];
  pl->depth = h[22] << 8 | h[23];
  if (pl->channels < 1 || pl->channels > 56) {
    s = imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                          "PSD header gives %d channels (the format allows "
                          "1 to 56)",
                          pl->channels);
    goto done;
  }
  uint64_t off = sizeof h;
  unsigned char b[4];
  for (int i = 0; i < 3; i++, off += 4 + be32(b))
    if (source_read_at(src, off, b, 4) != 4) {
      pl->data_offset = off + 4 + 2; /* the file ends in the sections */
      goto done;
    }
  pl->data_offset = off + 2;
  if (source_read_at(src, off, b, 2) != 2)
    goto done;
  int compression = b[0] << 8 | b[1];
  pl->rle = compression != 0;
  /* stb decodes 16-bit PackBits data as if it were 8-bit: garbage. */
  if (compression == 1 && pl->depth == 16)
    s = imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                          "PSD file has 16-bit run-length compressed data, "
                          "which stb_image does not read");
done:
  ist_source_rewind(src);
  return s;
}

static uint64_t psd_min_input(const psd_layout *pl, uint64_t w, uint64_t h) {
  uint64_t rows = (uint64_t)pl->channels * h;
  uint64_t row_bytes = w * (uint64_t)(pl->depth > 8 ? 2 : 1);
  if (!pl->rle)
    return pl->data_offset + rows * row_bytes;
  return pl->data_offset + rows * 2 + rows * 2 * ((row_bytes + 127) / 128);
}

/* ---- decoding ------------------------------------------------------------ */

/* What a decode holds at its peak: the caller's planes, which exist before
 * stb runs (imgstat_decoder_read), beside stb's result and its scratch
 * buffers. */
static uint64_t stb_peak(uint64_t result, uint64_t scratch, uint64_t planes) {
  return result + scratch + planes;
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* ---- BMP -----------------------------------------------------------------
 *
 * What stb_image 2.27's BMP loader (stbi__bmp_parse_header, stbi__bmp_load)
 * does, read in its source, and what we do about it:
 *  - compression: it decodes BI_RGB (0) and BI_BITFIELDS (3, 16 and 32 bits)
 *    and refuses 1, 2 and 4..0x7fffffff, but it reads the field as an int:
 *    0x80000000 and above pass as if 0. We refuse every value but 0 and 3.
 *  - a negative height (rows stored top-down, as Windows tools and Pillow
 *    may write them): stb decodes it, but stbi_info reports the height
 *    negative, as stored.
 *  - the palette: stb reads psize entries into an uninitialised
 *    pal[256][4], psize being derived from the pixel-data offset, not from
 *    the header's colour count; a 12-byte (OS/2) header is counted as 24
 *    bytes there, so stb misses that palette's last 4 entries (stb PR
 *    #1494), and a palette smaller than 5 entries is not read at all. A
 *    pixel index past what stb read takes stack memory as its colour, which
 *    changes from run to run. Such an index is outside the format (a pixel
 *    indexes the colour table; browsers show it black): we refuse the file,
 *    with the index and the palette's size, the palette being the entries
 *    that the header declares and stb reads both.
 *  - pixel data: rows of 1, 4, 8, 16, 24 or 32 bits per pixel padded to 4
 *    bytes, from the header's offset on (stb starts reading there, or later
 *    where the offset points into what it has read already).
 *
 * What stb's output needs changed to read the file as Pillow and the
 * format's documentation do: stb expands every palette to RGB, and a palette
 * of at most 8 bits whose entry i is gray level i (or black and white for 2
 * colours) is how gray images are stored, so it becomes one channel again.
 * stb also treats the fourth byte of 32-bit BI_RGB pixels as alpha, but that
 * byte is documented as unused: those files are RGB. */
typedef struct bmp_info {
  uint32_t header_size; /* 12 (OS/2), 40, 56, 108 or 124 */
  uint32_t offset;      /* of the pixel data */
  unsigned bits;        /* per pixel */
  uint32_t colors;      /* palette entries a pixel may use; 0: no check */
  uint32_t os2_colors;  /* entries an OS/2 palette really has */
  int gray_palette;
  int drop_alpha;
} bmp_info;

static const char *bmp_compression_name(uint32_t c) {
  switch (c) {
  case 1:
    return "RLE8";
  case 2:
    return "RLE4";
  case 4:
    return "JPEG";
  case 5:
    return "PNG";
  case 6:
    return "alpha bit fields";
  default:
    return "unknown";
  }
}

/* Reads the header and the palette before stb runs; refuses a compression
 * stb does not decode and a palette stb cannot read. Anything else wrong is
 * left to stb, which refuses it. Rewinds. */
static imgstat_status bmp_inspect(ist_source *src, bmp_info *bi,
                                  imgstat_error *err) {
  memset(bi, 0, sizeof *bi);
  unsigned char h[14 + 124 + 4 * 256];
  size_t n = ist_source_read(src, h, sizeof h);
  imgstat_status s = rewind_or_fail(src, err);
  if (s != IMGSTAT_OK || n < 26)
    return s;
  bi->offset = le32(h + 10);
  bi->header_size = le32(h + 14);
  uint32_t hsz = bi->header_size, compression = 0;
  if (hsz == 12) {
    bi->bits = (unsigned)(h[24] | h[25] << 8);
  } else if (hsz == 40 || hsz == 56 || hsz == 108 || hsz == 124) {
    if (n < 54)
      return IMGSTAT_OK;
    bi->bits = (unsigned)(h[28] | h[29] << 8);
    compression = le32(h + 30);
  } else {
    return IMGSTAT_OK;
  }
  if (compression != 0 && compression != 3)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "BMP compression %" PRIu32
                             " (%s) is not supported: only uncompressed and "
                             "bit-field BMPs are read",
                             compression, bmp_compression_name(compression));
  bi->drop_alpha = hsz >= 40 && bi->bits == 32 && compression == 0;
  if (bi->bits != 1 && bi->bits != 4 && bi->bits != 8)
    return IMGSTAT_OK;
  if (bi->offset > INT_MAX)
    return IMGSTAT_OK; /* stb: "bad BMP" */

  /* stb's psize, in its arithmetic; below 1 or above 256 it refuses the
   * file, except below 0, which it decodes with no palette at all. */
  uint32_t all = 1u << bi->bits, declared = all;
  int64_t psize;
  if (hsz == 12) {
    if (bi->offset >= 26 && bi->offset <= 40)
      return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                               "an OS/2 BMP palette of fewer than 5 colours "
                               "is not read by stb_image");
    psize = ((int64_t)bi->offset - 38) / 3;
    bi->os2_colors = (bi->offset - 26) / 3 < all ? (bi->offset - 26) / 3 : all;
    declared = bi->os2_colors;
  } else {
    int64_t gap = (int64_t)bi->offset - 14 - hsz;
    psize = gap < 0 ? -1 : gap / 4;
    uint32_t used = le32(h + 46);
    if (used != 0 && used < all)
      declared = used;
  }
  if (psize < 0)
    return imgstat_error_set(
        err, IMGSTAT_ERR_FORMAT,
        "BMP pixel data offset %" PRIu32 " lies inside its header", bi->offset);
  if (psize == 0 || psize > 256)
    return IMGSTAT_OK;
  bi->colors = (uint64_t)psize < declared ? (uint32_t)psize : declared;

  size_t at = 14 + hsz;
  if (hsz < 40 || at + 4 * (size_t)bi->colors > n)
    return IMGSTAT_OK;
  for (uint32_t i = 0; i < bi->colors; i++) {
    unsigned want = bi->colors == 2 ? 255 * i : i;
    const unsigned char *e = h + at + 4 * i; /* B, G, R, reserved */
    if (e[0] != want || e[1] != want || e[2] != want)
      return IMGSTAT_OK;
  }
  bi->gray_palette = 1;
  return IMGSTAT_OK;
}

/* The least input stb needs for a width x height BMP: the pixel data starts
 * at the header's offset, or later (never inside the header), and holds
 * every row padded to 4 bytes, but the last row's padding, which some
 * writers drop (see on_stb_skip). stb refuses a shorter file as truncated
 * once it has decoded what is there. 0 for a depth stb refuses. */
static uint64_t bmp_min_input(const bmp_info *bi, uint32_t width,
                              uint32_t height) {
  unsigned b = bi->bits;
  if (b != 1 && b != 4 && b != 8 && b != 16 && b != 24 && b != 32)
    return 0;
  uint64_t row = ((uint64_t)width * b + 7) / 8, stride = (row + 3) & ~3u;
  uint64_t start = (uint64_t)bi->offset > 14 + (uint64_t)bi->header_size
                       ? bi->offset
                       : 14 + (uint64_t)bi->header_size;
  uint64_t rows = height - 1;
  if (rows > 0 && stride > (UINT64_MAX - start - row) / rows)
    return UINT64_MAX;
  return start + rows * stride + row;
}

/* The bytes held at once decoding a width x height BMP that stbi_info gives
 * comp channels: stb's interleaved buffer of comp bytes a pixel (palettes
 * expanded to RGB) beside the planes, one for a gray palette and 3 where
 * alpha is dropped. */
static uint64_t bmp_peak_bytes(const bmp_info *bi, uint32_t width,
                               uint32_t height, int comp) {
  uint64_t pixels = (uint64_t)width * height;
  int planes = bi->gray_palette && comp == 3 ? 1
               : bi->drop_alpha && comp == 4 ? 3
                                             : comp;
  if (pixels > UINT64_MAX / 8)
    return UINT64_MAX;
  return pixels * (uint64_t)(comp + planes);
}

/* Refuses a palette BMP with a pixel index beyond its palette (see above),
 * reading the pixel data as stb will, in file order (either row order is
 * the same check). A file that ends early is left to stb, which refuses it
 * as truncated. */
static imgstat_status bmp_indices_check(ist_source *src, const bmp_info *bi,
                                        uint32_t width, uint32_t height,
                                        imgstat_error *err) {
  if (bi->colors == 0 || bi->colors >= 1u << bi->bits)
    return IMGSTAT_OK; /* no palette, or every index has an entry */
  byte_reader *br = malloc(sizeof *br);
  if (!br)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "Out of memory");
  br->src = src;
  br->len = br->at = 0;
  unsigned b = bi->bits, mask = (1u << b) - 1;
  size_t row = ((size_t)width * b + 7) / 8, stride = (row + 3) & ~(size_t)3;
  long bad = -1;
  for (uint32_t i = 0; i < bi->offset; i++)
    if (next_byte(br) < 0)
      goto done;
  for (uint32_t y = 0; y < height && bad < 0; y++) {
    uint32_t x = 0;
    for (size_t i = 0; i < stride; i++) {
      int c = next_byte(br);
      if (c < 0)
        goto done;
      /* Pixels from the high bits down; the bits past the last pixel of a
       * row are padding, which stb does not look up. */
      for (int shift = 8 - (int)b; shift >= 0 && x < width; shift -= (int)b) {
        unsigned v = ((unsigned)c >> shift) & mask;
        x++;
        if (v >= bi->colors && bad < 0)
          bad = (long)v;
      }
    }
  }
done:
  free(br);
  imgstat_status s = rewind_or_fail(src, err);
  if (s != IMGSTAT_OK || bad < 0)
    return s;
  if (bi->header_size == 12 && (uint32_t)bad < bi->os2_colors)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "BMP pixel index %ld is one of the last 4 "
                             "colours of an OS/2 palette, which stb_image "
                             "does not read",
                             bad);
  return ist_corrupt(
      err, "BMP", "pixel index %ld beyond its palette of %" PRIu32 " colours",
      bad, bi->colors);
}

/* What one input's decode needs between open and read. */
typedef struct stb_state {
  ist_kind kind;
  psd_layout psd;
  bmp_info bmp;
  stb_reader reader;
  int w, h; /* the header's size, as stbi_info gives it (BMP: rows) */
  int comp; /* the channels stb returns */
  imgstat_sample sample;
  void *pixels; /* stb's result */
} stb_state;

/* stb's decode into ss->pixels; it must give the header's size and
 * channels. */
static imgstat_status stb_load(ist_source *src, stb_state *ss,
                               imgstat_error *err) {
  imgstat_status s;
  if ((s = rewind_or_fail(src, err)) != IMGSTAT_OK)
    return s;
  ss->reader.refill = NULL; /* a new stb context */
  ss->reader.past_end = 0;
  stb_reader *reader = &ss->reader;
  int w = 0, h = 0, comp = 0;
  void *pixels;
  if (ss->sample == IMGSTAT_U16)
    pixels =
        stbi_load_16_from_callbacks(&stb_callbacks, reader, &w, &h, &comp, 0);
  else
    pixels = stbi_load_from_callbacks(&stb_callbacks, reader, &w, &h, &comp, 0);
  if (src->read_errno || reader->past_end || !pixels || w <= 0 || h <= 0 ||
      comp < 1 || comp > IMGSTAT_MAX_CHANNELS) {
    stbi_image_free(pixels);
    if (src->read_errno)
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                               strerror(src->read_errno));
    if (reader->past_end) /* stb read bytes the file does not have */
      return ist_corrupt(err, kind_format(ss->kind), "file is truncated");
    if (!pixels)
      return stb_failure(ss->kind, err);
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "decoder returned a %dx%d image of %d channels", w,
                             h, comp);
  }
  /* The header was checked and the caller's planes were made for it. */
  if (w != ss->w || h != ss->h || comp != ss->comp) {
    stbi_image_free(pixels);
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "decoder returned a %dx%d image of %d channels, "
                             "not the %dx%d of %d its header gives",
                             w, h, comp, ss->w, ss->h, ss->comp);
  }
  ss->pixels = pixels;
  return IMGSTAT_OK;
}

/*
 * Everything up to the pixels: our pre-checks of each format (which stb
 * needs, see above), stb's header (stbi_info) and ist_decode_check; then
 * the layout the image gets, which the header decides:
 *  - PSD with fewer than 4 channels, 32-bit BI_RGB BMP: stb's RGBA is RGB;
 *  - a BMP gray palette: stb's RGB is one gray channel.
 */
imgstat_status ist_stb_open(imgstat_decoder *d, imgstat_error *err) {
  ist_source *src = &d->src;
  const ist_limits *lim = &d->lim;
  ist_kind kind = d->format->kind;
  stb_state *ss = calloc(1, sizeof *ss);
  if (!ss)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "Out of memory");
  d->state = ss;
  ss->kind = kind;
  imgstat_status s;
  int jpeg = kind == IMGSTAT_KIND_JPEG ||
             (kind == IMGSTAT_KIND_UNKNOWN && stb_sees_jpeg(src));
  int tga = kind == IMGSTAT_KIND_UNKNOWN && !jpeg; /* no signature */
  if (jpeg) {
    const char *problem = jpeg_tables_problem(src);
    if (problem)
      return ist_corrupt(err, "JPEG", "%s", problem);
  }
  psd_layout *psd = &ss->psd;
  *psd = (psd_layout){4, 8, 1, 0};
  if (kind == IMGSTAT_KIND_PSD && (s = psd_scan(src, psd, err)) != IMGSTAT_OK)
    return s;

  bmp_info *bmp = &ss->bmp;
  if (kind == IMGSTAT_KIND_BMP &&
      (s = bmp_inspect(src, bmp, err)) != IMGSTAT_OK)
    return s;
  ss->reader = (stb_reader){src, NULL, 0};
  int w = 0, h = 0, comp = 0;
  /* Dimensions first, so an oversized header is refused before decoding. */
  if (!stbi_info_from_callbacks(&stb_callbacks, &ss->reader, &w, &h, &comp))
    return stb_failure(kind, err);
  if (kind == IMGSTAT_KIND_BMP && h < 0 && h != INT_MIN)
    h = -h; /* rows stored top-down: stb reads them */
  if (w <= 0 || h <= 0)
    return ist_corrupt(err, kind_format(kind), "image is %dx%d", w, h);
  if ((s = rewind_or_fail(src, err)) != IMGSTAT_OK)
    return s;
  int is_16 = kind == IMGSTAT_KIND_PSD && psd->depth == 16;
  ss->sample = is_16 ? IMGSTAT_U16 : IMGSTAT_U8;

  /* The channels the image gets (see above). */
  int out = comp;
  if (comp == 4 && kind == IMGSTAT_KIND_PSD && psd->channels < 4 &&
      ss->sample != IMGSTAT_F32)
    out = 3;
  else if (comp == 4 && ss->sample == IMGSTAT_U8 && bmp->drop_alpha)
    out = 3;
  if (bmp->gray_palette && out == 3 && ss->sample == IMGSTAT_U8)
    out = 1;

  /* The memory decoding holds at its peak, and the least input the
   * header's size takes. */
  uint64_t area = (uint64_t)w * (uint64_t)h, peak = 0, min_input = 0;
  uint64_t bytes = is_16 ? 2 : 1, one = area * bytes;
  uint64_t own = (uint64_t)out * one; /* the caller's planes */
  if (area > IMGSTAT_MAX_PIXELS_LIMIT) {
    /* refused for its size, before anything here could overflow */
  } else if (kind == IMGSTAT_KIND_PSD) { /* RGBA; RGB(A) planes */
    peak = stb_peak(4 * one, 0, own);
    min_input = psd_min_input(psd, (uint64_t)w, (uint64_t)h);
  } else if (tga) { /* and a palette while stb decodes */
    tga_layout tl;
    tga_scan(src, &tl);
    peak = stb_peak((uint64_t)comp * one, tl.palette, own);
    min_input = tl.min_input;
  } else if (kind == IMGSTAT_KIND_BMP) { /* exact, from the header */
    peak = bmp_peak_bytes(bmp, (uint32_t)w, (uint32_t)h, comp);
    min_input = bmp_min_input(bmp, (uint32_t)w, (uint32_t)h);
  } else { /* JPEG: a rough guess, twice 2 bytes a sample */
    peak = 4 * area * (uint64_t)(comp >= 1 && comp <= 4 ? comp : 4);
  }
  const char *format = jpeg ? "JPEG" : kind_format(kind);
  s = ist_decode_check(lim, (uint32_t)w, (uint32_t)h, peak, min_input,
                       src->size, format, err);
  if (s != IMGSTAT_OK)
    return s;
  ss->w = w;
  ss->h = h;
  ss->comp = comp;
  if (comp < 1 || comp > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "decoder returned a %dx%d image of %d channels", w,
                             h, comp);
  d->header.width = (uint32_t)w;
  d->header.height = (uint32_t)h;
  d->header.channels = out;
  d->header.sample = ss->sample;
  d->header.format = format;
  return IMGSTAT_OK;
}

/* The pixels: stb's result made the header's layout in place, then split
 * into the caller's planes. */
imgstat_status ist_stb_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  stb_state *ss = d->state;
  imgstat_status s;
  if (ss->kind == IMGSTAT_KIND_BMP &&
      (s = bmp_indices_check(&d->src, &ss->bmp, (uint32_t)ss->w,
                             (uint32_t)ss->h, err)) != IMGSTAT_OK)
    return s;
  if ((s = stb_load(&d->src, ss, err)) != IMGSTAT_OK)
    return s;
  size_t count = (size_t)ss->w * (size_t)ss->h;
  if (ss->comp == 4 && img->channels == 3 && ss->sample == IMGSTAT_U8) {
    unsigned char *v = ss->pixels;
    for (size_t i = 0; i < count; i++)
      for (int c = 0; c < 3; c++)
        v[3 * i + c] = v[4 * i + c];
  } else if (ss->comp == 4 && img->channels == 3 && ss->sample == IMGSTAT_U16) {
    uint16_t *v = ss->pixels;
    for (size_t i = 0; i < count; i++)
      for (int c = 0; c < 3; c++)
        v[3 * i + c] = v[4 * i + c];
  } else if (ss->comp == 3 && img->channels == 1) {
    unsigned char *v = ss->pixels; /* a gray palette: R = G = B */
    for (size_t i = 0; i < count; i++)
      v[i] = v[3 * i];
  }
  ist_pixels_split_image(img, ss->pixels);
  stbi_image_free(ss->pixels);
  ss->pixels = NULL;
  return IMGSTAT_OK;
}

void ist_stb_close(imgstat_decoder *d) {
  stb_state *ss = d->state;
  if (!ss)
    return;
  stbi_image_free(ss->pixels);
  free(ss);
  d->state = NULL;
}

/* ---- inputs without a known signature ------------------------------------ */

/* What ist_stb_open does with such an input before stb's own
 * stbi_info, which tries every format it has: stb_sees_jpeg looks at the
 * first 256 bytes; GIF, BMP, PSD and HDR need the signatures that
 * ist_kind_sniff knows (PNG and PIC are compiled out); what is left is
 * TGA, whose stbi__tga_info reads the 18-byte header and nothing else. */
int ist_stb_may_take_unknown(const unsigned char *head, size_t n) {
  ist_source src = {0};
  src.data = head;
  src.size = n;
  if (stb_sees_jpeg(&src))
    return 1;
  stbi__context ctx;
  stbi__start_mem(&ctx, head, n > INT_MAX ? INT_MAX : (int)n);
  return stbi__tga_info(&ctx, NULL, NULL, NULL);
}
