/*
 * PSD through stb_image, and JPEG when TurboJPEG is not built in (or after
 * fill bytes). GIF is giflib's (gif.c); Radiance HDR (hdr.c), PNM (pnm.c),
 * BMP (bmp.c) and TGA (tga.c) are our own.
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
 * un-matted from white.
 */
#include "imgstat/imgstat.h"
#include "io.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* libpng decodes PNG, giflib GIF, our hdr.c Radiance HDR, bmp.c BMP and
 * tga.c TGA, and Softimage PIC is not a format we promise: keep stb away from
 * all six. The library must
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
#define STBI_NO_BMP /* ours: src/io/bmp.c */
#define STBI_NO_TGA /* ours: src/io/tga.c */
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
  /* Skipping past the end is not an error by itself; a later read there
   * is. */
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
  case IMGSTAT_KIND_PSD:
    return "PSD";
  default:
    return "JPEG"; /* the only format stb takes without a signature */
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

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
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
  if (ist_source_read_at(src, 0, h, sizeof h) < sizeof h)
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
    if (ist_source_read_at(src, off, b, 4) != 4) {
      pl->data_offset = off + 4 + 2; /* the file ends in the sections */
      goto done;
    }
  pl->data_offset = off + 2;
  if (ist_source_read_at(src, off, b, 2) != 2)
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

/* What one input's decode needs between open and read. */
typedef struct stb_state {
  ist_kind kind;
  psd_layout psd;
  stb_reader reader;
  int w, h; /* the header's size, as stbi_info gives it */
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
 *  - PSD with fewer than 4 channels: stb's RGBA is RGB.
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
  if (kind == IMGSTAT_KIND_UNKNOWN && !jpeg) /* no signature we know */
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "not a recognised image format");
  if (jpeg) {
    const char *problem = jpeg_tables_problem(src);
    if (problem)
      return ist_corrupt(err, "JPEG", "%s", problem);
  }
  psd_layout *psd = &ss->psd;
  *psd = (psd_layout){4, 8, 1, 0};
  if (kind == IMGSTAT_KIND_PSD && (s = psd_scan(src, psd, err)) != IMGSTAT_OK)
    return s;

  ss->reader = (stb_reader){src, NULL, 0};
  int w = 0, h = 0, comp = 0;
  /* Dimensions first, so an oversized header is refused before decoding. */
  if (!stbi_info_from_callbacks(&stb_callbacks, &ss->reader, &w, &h, &comp))
    return stb_failure(kind, err);
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
  ist_header_set(&d->header, (uint32_t)w, (uint32_t)h, out, ss->sample, format);
  return IMGSTAT_OK;
}

/* The pixels: stb's result made the header's layout in place, then split
 * into the caller's planes. */
imgstat_status ist_stb_read(imgstat_decoder *d, imgstat_image *img,
                            imgstat_error *err) {
  stb_state *ss = d->state;
  imgstat_status s;
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

/* What ist_stb_open does with such an input: stb_sees_jpeg looks at the
 * first 256 bytes and takes a JPEG after fill bytes; anything else is
 * refused (stb's other format, PSD, has a signature ist_kind_sniff knows;
 * PNG, PIC, GIF, HDR, PNM, BMP and TGA are compiled out). */
int ist_stb_may_take_unknown(const unsigned char *head, size_t n) {
  ist_source src = {0};
  src.data = head;
  src.size = n;
  return stb_sees_jpeg(&src);
}
