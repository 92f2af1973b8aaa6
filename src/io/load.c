/*
 * Loading: opens the input, sniffs its signature (never the file name) and
 * hands it to the decoder of that format (the table below). A decoder opens
 * (header and checks), the caller provides the planes, the decoder reads
 * into them; imgstat_image_load is those steps in a row.
 */
#include "dlib.h"
#include "imgstat/imgstat.h"
#include "io.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* stdio's default buffer is a few KB; decoders ask for many small pieces. */
#define IMGSTAT_FILE_BUFFER (1u << 18)

/* ---- signatures and the decoder table ------------------------------------ */

/* Anything that looks like a damaged PNG signature still goes to libpng,
 * whose reason ("PNG file corrupted by ASCII conversion") is the useful
 * one. */
static int sniff_png(const unsigned char *h, size_t n) {
  return (n >= 1 && h[0] == 0x89) || (n >= 4 && memcmp(h + 1, "PNG", 3) == 0) ||
         (n >= 16 && memcmp(h + 12, "IHDR", 4) == 0);
}

/* SOI; what follows may be junk before the first segment, which the JPEG
 * decoder skips with a warning (jpeg.c). */
static int sniff_jpeg(const unsigned char *h, size_t n) {
  return n >= 2 && h[0] == 0xFF && h[1] == 0xD8;
}

static int sniff_bmp(const unsigned char *h, size_t n) {
  return (n >= 2 && h[0] == 'B' && h[1] == 'M') || ist_dib_sniff(h, n);
}

static int sniff_gif(const unsigned char *h, size_t n) {
  return n >= 6 && (memcmp(h, "GIF87a", 6) == 0 || memcmp(h, "GIF89a", 6) == 0);
}

static int sniff_psd(const unsigned char *h, size_t n) {
  return n >= 4 && memcmp(h, "8BPS", 4) == 0;
}

static int sniff_hdr(const unsigned char *h, size_t n) {
  return (n >= 10 && memcmp(h, "#?RADIANCE", 10) == 0) ||
         (n >= 6 && memcmp(h, "#?RGBE", 6) == 0);
}

/* P1 to P6 and a separator (or a comment: the next token), so that a text
 * file starting "P1" and a word is not taken for one. */
static int sniff_pnm(const unsigned char *h, size_t n) {
  return n >= 3 && h[0] == 'P' && h[1] >= '1' && h[1] <= '6' &&
         (ist_is_space(h[2]) || h[2] == '#');
}

static int sniff_tiff(const unsigned char *h, size_t n) {
  return n >= 4 && ((h[0] == 'I' && h[1] == 'I' && (h[2] == 42 || h[2] == 43) &&
                     h[3] == 0) ||
                    (h[0] == 'M' && h[1] == 'M' && h[2] == 0 &&
                     (h[3] == 42 || h[3] == 43)));
}

static int sniff_webp(const unsigned char *h, size_t n) {
  return n >= 12 && memcmp(h, "RIFF", 4) == 0 && memcmp(h + 8, "WEBP", 4) == 0;
}

/* Every FITS file starts with the card SIMPLE = T (column 10 the '='). */
static int sniff_fits(const unsigned char *h, size_t n) {
  return n >= 10 && memcmp(h, "SIMPLE  = ", 10) == 0;
}

static int sniff_npy(const unsigned char *h, size_t n) {
  return n >= 6 && memcmp(h, "\x93NUMPY", 6) == 0;
}

static int sniff_pfm(const unsigned char *h, size_t n) {
  return n >= 3 && h[0] == 'P' && (h[1] == 'F' || h[1] == 'f') &&
         ist_is_space(h[2]);
}

/* A decoder's three entry points, named after it: NAME_open, NAME_read
 * and NAME_close; LOADED_DECODER's libraries are loaded when it needs them
 * (NAME_dlibs, dlib.h: --version lists them), DECODER's are linked in. */
#define DECODER(NAME) NAME##_open, NAME##_read, NAME##_close, NULL
#define LOADED_DECODER(NAME)                                                   \
  NAME##_open, NAME##_read, NAME##_close, NAME##_dlibs

#if !defined(IMGSTAT_HAVE_TIFF) || !defined(IMGSTAT_HAVE_WEBP) ||              \
    !defined(IMGSTAT_HAVE_CFITSIO) || !defined(IMGSTAT_HAVE_GIF)
/* The row of a format whose library this build lacks (library NULL): its
 * files are named for what they are, not "not a recognised image format",
 * and walks still take them (each is reported, not skipped unseen). */
static imgstat_status missing_open(imgstat_decoder *d, imgstat_error *err) {
  const char *what = d->format->kind == IMGSTAT_KIND_TIFF
                         ? "TIFF file: this imgstat was built without libtiff "
                           "(libtiff-dev)"
                     : d->format->kind == IMGSTAT_KIND_WEBP
                         ? "WebP file: this imgstat was built without libwebp "
                           "(libwebp-dev)"
                     : d->format->kind == IMGSTAT_KIND_GIF
                         ? "GIF file: this imgstat was built without giflib "
                           "(libgif-dev)"
                         : "FITS file: this imgstat was built without cfitsio "
                           "(libcfitsio-dev)";
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED, "%s", what);
}
static imgstat_status missing_read(imgstat_decoder *d, imgstat_image *img,
                                   imgstat_error *err) {
  (void)d;
  (void)img;
  return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED, "not built in");
}
static void missing_close(imgstat_decoder *d) { (void)d; }
#endif

/* The row of a format whose library the build may lack (HAVE: its
 * IMGSTAT_HAVE_ suffix): its decoder, its library loaded when needed, or
 * `missing` (the format recognised and refused for want of the library). */
#define ROW_WITH(kind, lib, exts, sniff, name)                                 \
  { kind, lib, exts, sniff, LOADED_DECODER(name) }
#define ROW_WITHOUT(kind, lib, exts, sniff, name)                              \
  { kind, NULL, exts, sniff, DECODER(missing) }
#ifdef IMGSTAT_HAVE_GIF
#define ROW_GIF ROW_WITH
#else
#define ROW_GIF ROW_WITHOUT
#endif
#ifdef IMGSTAT_HAVE_TIFF
#define ROW_TIFF ROW_WITH
#else
#define ROW_TIFF ROW_WITHOUT
#endif
#ifdef IMGSTAT_HAVE_WEBP
#define ROW_WEBP ROW_WITH
#else
#define ROW_WEBP ROW_WITHOUT
#endif
#ifdef IMGSTAT_HAVE_CFITSIO
#define ROW_CFITSIO ROW_WITH
#else
#define ROW_CFITSIO ROW_WITHOUT
#endif
#define OPTIONAL_ROW(have, ...) ROW_##have(__VA_ARGS__)

/* One row per format, tried in this order; the first whose signature
 * matches decodes the input. */
static const ist_format formats[] = {
    {IMGSTAT_KIND_PNG, "libpng", "png", sniff_png, DECODER(ist_png)},
#ifdef IMGSTAT_HAVE_TURBOJPEG
    {IMGSTAT_KIND_JPEG, "TurboJPEG", "jpg jpeg jpe jfif", sniff_jpeg,
     DECODER(ist_jpeg)},
#else
    {IMGSTAT_KIND_JPEG, "stb_image", "jpg jpeg jpe jfif", sniff_jpeg,
     DECODER(ist_stb)},
#endif
    {IMGSTAT_KIND_BMP, "imgstat", "bmp dib", sniff_bmp, DECODER(ist_bmp)},
    OPTIONAL_ROW(GIF, IMGSTAT_KIND_GIF, "giflib", "gif", sniff_gif, ist_gif),
    {IMGSTAT_KIND_PSD, "stb_image", "psd", sniff_psd, DECODER(ist_stb)},
    {IMGSTAT_KIND_HDR, "imgstat", "hdr", sniff_hdr, DECODER(ist_hdr)},
    {IMGSTAT_KIND_PNM, "imgstat", "pbm pgm ppm pnm", sniff_pnm,
     DECODER(ist_pnm)},
    OPTIONAL_ROW(TIFF, IMGSTAT_KIND_TIFF, "libtiff", "tif tiff", sniff_tiff,
                 ist_tiff),
    OPTIONAL_ROW(WEBP, IMGSTAT_KIND_WEBP, "libwebp", "webp", sniff_webp,
                 ist_webp),
    OPTIONAL_ROW(CFITSIO, IMGSTAT_KIND_FITS, "cfitsio", "fits fit fts",
                 sniff_fits, ist_fits),
    {IMGSTAT_KIND_NPY, "imgstat", "npy", sniff_npy, DECODER(ist_npy)},
    {IMGSTAT_KIND_PFM, "imgstat", "pfm", sniff_pfm, DECODER(ist_pfm)},
    /* TGA has no signature: a header whose values only a TGA has, after
     * every format that has one. */
    {IMGSTAT_KIND_TGA, "imgstat", "tga", ist_tga_sniff, DECODER(ist_tga)},
    /* Anything else: stb_image takes a JPEG after fill bytes, and refuses
     * the rest. */
    {IMGSTAT_KIND_UNKNOWN, "stb_image", NULL, NULL, DECODER(ist_stb)},
};

static const ist_format *format_sniff(const unsigned char *h, size_t n) {
  size_t i = 0;
  while (formats[i].sniff && !formats[i].sniff(h, n))
    i++;
  return &formats[i];
}

ist_kind ist_kind_sniff(const unsigned char *h, size_t n) {
  return format_sniff(h, n)->kind;
}

/* The format names of the table's kinds, for --version. */
static const char *kind_name(ist_kind kind) {
  static const char *const names[] = {"?",    "PNG", "JPEG", "BMP",  "GIF",
                                      "PSD",  "HDR", "PNM",  "TIFF", "WebP",
                                      "FITS", "NPY", "PFM",  "TGA"};
  return (size_t)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

static char formats_text[512];

static void formats_describe(void) {
  char *text = formats_text;
  size_t at = 0;
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    const ist_format *f = &formats[i];
    if (!f->library || f->kind == IMGSTAT_KIND_UNKNOWN)
      continue;
    /* one entry per format */
    int seen = 0;
    for (size_t j = 0; j < i; j++)
      seen |= formats[j].kind == f->kind && formats[j].library;
    const char *name =
        f->kind == IMGSTAT_KIND_NPY ? ".npy" : kind_name(f->kind);
    if (seen)
      continue;
    const char *lib = f->library;
    int n = snprintf(text + at, sizeof formats_text - at, "%s%s (%s)",
                     at ? ", " : "", name, lib);
    if (n < 0 || (size_t)n >= sizeof formats_text - at)
      break;
    at += (size_t)n;
  }
  /* the formats whose library this build lacks (their files are refused
   * with the package to install) */
  const char *sep = "; not built in: ";
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    if (formats[i].library)
      continue;
    int n = snprintf(text + at, sizeof formats_text - at, "%s%s", sep,
                     kind_name(formats[i].kind));
    if (n < 0 || (size_t)n >= sizeof formats_text - at)
      break;
    at += (size_t)n;
    sep = ", ";
  }
}

const char *imgstat_formats_description(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, formats_describe);
  return formats_text;
}

static char loaded_text[1024];

/* Each library once (WebP's two in one row; a library in two rows once). */
static void loaded_describe(void) {
  ist_dlib *seen[16];
  size_t nseen = 0, at = 0;
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    for (size_t j = 0; formats[i].dlibs && formats[i].dlibs[j]; j++) {
      ist_dlib *lib = formats[i].dlibs[j];
      size_t k = 0;
      while (k < nseen && seen[k] != lib)
        k++;
      if (k < nseen || nseen == sizeof seen / sizeof seen[0])
        continue;
      seen[nseen++] = lib;
      if (!ist_dlib_describe(lib, loaded_text, sizeof loaded_text, &at))
        return;
    }
}

const char *imgstat_libraries_description(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, loaded_describe);
  return loaded_text;
}

/* Whether the n bytes at ext are one of the words of list (ASCII, any case
 * in ext). */
static int extension_in(const char *ext, size_t n, const char *list) {
  while (*list) {
    size_t w = strcspn(list, " ");
    if (w == n) {
      size_t i = 0;
      while (i < n) {
        char c = ext[i];
        if (c >= 'A' && c <= 'Z')
          c = (char)(c - 'A' + 'a');
        if (c != list[i])
          break;
        i++;
      }
      if (i == n)
        return 1;
    }
    list += w;
    while (*list == ' ')
      list++;
  }
  return 0;
}

int ist_extension_is_image(const char *name) {
  if (!name)
    return 0;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  const char *dot = strrchr(base, '.');
  if (!dot || dot == base || dot[1] == '\0')
    return 0;
  size_t n = strlen(dot + 1);
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (formats[i].extensions &&
        extension_in(dot + 1, n, formats[i].extensions))
      return 1;
  return 0;
}

/* The caller's limits, defaults where it gave none. */
static ist_limits limits_of(const imgstat_load_options *opts) {
  ist_limits lim = {IMGSTAT_DEFAULT_MAX_PIXELS, IMGSTAT_DEFAULT_MAX_MEMORY};
  if (opts && opts->max_pixels)
    lim.max_pixels = opts->max_pixels;
  if (opts && opts->max_memory)
    lim.max_memory = opts->max_memory;
  return lim;
}

/* ---- decoders ------------------------------------------------------------ */

/* A decoder over src, decoded by fmt (NULL: the row its signature picks);
 * the header is read. On failure *out is NULL and everything is freed
 * (src's file too when owns_file). */
static imgstat_status decoder_start(const ist_source *src, int owns_file,
                                    unsigned char *input, const ist_format *fmt,
                                    const imgstat_load_options *opts,
                                    imgstat_decoder **out, imgstat_error *err) {
  *out = NULL;
  imgstat_decoder *d = calloc(1, sizeof *d);
  if (!d) {
    if (owns_file)
      fclose(src->file);
    free(input);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory opening the input");
  }
  d->src = *src;
  d->owns_file = owns_file;
  d->input = input;
  d->lim = limits_of(opts);
  d->page = opts && opts->page ? opts->page : 1;
  d->npy_layout = opts ? opts->npy_layout : 0;
  imgstat_status s = IMGSTAT_OK;
  if (!fmt) {
    unsigned char head[IST_SNIFF_BYTES];
    size_t n = ist_source_read(&d->src, head, sizeof head);
    if (d->src.read_errno) {
      s = imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                            strerror(d->src.read_errno));
    } else {
      int e = ist_source_rewind(&d->src);
      if (e)
        s = imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
    }
    fmt = format_sniff(head, n);
  }
  if (s == IMGSTAT_OK) {
    d->format = fmt;
    s = fmt->open(d, err);
  }
  if (s == IMGSTAT_OK && d->header.pages == 0 && d->page > 1) {
    imgstat_error_set(err, IMGSTAT_ERR_ARG,
                      "page %" PRIu32 ": a %s file holds one image", d->page,
                      d->header.format);
    s = imgstat_error_cause(err, IMGSTAT_CAUSE_PAGE, 1, d->page, NULL);
  }
  if (s != IMGSTAT_OK) {
    imgstat_decoder_close(d);
    return s;
  }
  *out = d;
  return IMGSTAT_OK;
}

const imgstat_header *imgstat_decoder_header(const imgstat_decoder *d) {
  return d ? &d->header : NULL;
}

const char *ist_decoder_warning_text(const imgstat_decoder *d) {
  return d->warning;
}

imgstat_status imgstat_decoder_read(imgstat_decoder *d, imgstat_image *img,
                                    imgstat_error *err) {
  if (!d || !img)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no decoder or no image");
  if (d->read_done)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "the decoder has read its image already");
  const imgstat_header *h = &d->header;
  if (img->width != h->width || img->height != h->height ||
      img->channels != h->channels || img->sample != h->sample)
    return imgstat_error_set(
        err, IMGSTAT_ERR_ARG,
        "the image is %" PRIu32 "x%" PRIu32 " with %d channels of %d bits; "
        "the input is %" PRIu32 "x%" PRIu32 " with %d of %d bits",
        img->width, img->height, img->channels,
        imgstat_sample_depth(img->sample), h->width, h->height, h->channels,
        imgstat_sample_depth(h->sample));
  for (int c = 0; c < img->channels; c++)
    if (!img->planes[c])
      return imgstat_error_set(err, IMGSTAT_ERR_ARG, "channel %d has no plane",
                               c);
  size_t row = (size_t)img->width * (size_t)img->sample;
  if (img->stride != 0 && img->stride < row)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "row stride of %zu bytes is less than a row of "
                             "%zu bytes",
                             img->stride, row);
  d->read_done = 1;
  imgstat_status s = d->format->read(d, img, err);
  if (s == IMGSTAT_OK) {
    img->format = h->format;
    img->pages = h->pages;
    img->page = h->page;
    img->colour = h->colour;
    img->int16 = h->int16;
    img->has_nodata = h->has_nodata;
    img->nodata = h->nodata;
    free(img->band_names);
    img->band_names = imgstat_band_names_dup(h->band_names, h->channels);
    memcpy(img->warning, d->warning, sizeof img->warning);
  }
  return s;
}

void imgstat_decoder_close(imgstat_decoder *d) {
  if (!d)
    return;
  if (d->format && d->format->close)
    d->format->close(d);
  if (d->owns_file && d->src.file)
    fclose(d->src.file);
  free(d->input);
  free(d);
}

int ist_decoder_streams(const imgstat_decoder *d) {
#ifdef IMGSTAT_HAVE_TIFF
  return d && !d->read_done && d->format->kind == IMGSTAT_KIND_TIFF &&
         ist_tiff_streams(d);
#else
  (void)d;
  return 0;
#endif
}

imgstat_status ist_decoder_stats(imgstat_decoder *d, const imgstat_valid *v,
                                 imgstat_partial *out, uint64_t *nodata,
                                 imgstat_error *err) {
  if (!ist_decoder_streams(d) || !out || !nodata)
    return imgstat_error_set(err, IMGSTAT_ERR_UNSUPPORTED,
                             "no statistics as the input is read");
  d->read_done = 1;
#ifdef IMGSTAT_HAVE_TIFF
  return ist_tiff_stats(d, v, out, nodata, err);
#else
  return IMGSTAT_ERR_UNSUPPORTED;
#endif
}

void ist_decoder_stream_test_sizes(uint64_t parallel_bytes,
                                   size_t group_bytes) {
#ifdef IMGSTAT_HAVE_TIFF
  ist_tiff_test_sizes(parallel_bytes, group_bytes);
#else
  (void)parallel_bytes;
  (void)group_bytes;
#endif
}

/* Open, allocate, read, close: *img holds the pixels, or is left empty. */
imgstat_status imgstat_decoder_load(imgstat_decoder *d, imgstat_image *img,
                                    imgstat_error *err) {
  const imgstat_header *h = &d->header;
  imgstat_status s = imgstat_image_alloc(img, h->width, h->height, h->channels,
                                         h->sample, d->lim.max_pixels, err);
  if (s == IMGSTAT_OK)
    s = imgstat_decoder_read(d, img, err);
  imgstat_decoder_close(d);
  if (s != IMGSTAT_OK)
    imgstat_image_free(img);
  return s;
}

static imgstat_status load_from(imgstat_decoder *d, imgstat_status s,
                                imgstat_image *img, imgstat_error *err) {
  if (s != IMGSTAT_OK) {
    imgstat_decoder_close(d);
    return s;
  }
  return imgstat_decoder_load(d, img, err);
}

imgstat_status ist_stb_decode(ist_source *src, ist_kind kind,
                              const ist_limits *lim, imgstat_image *img,
                              imgstat_error *err) {
  const ist_format stb = {kind, "stb_image", NULL, NULL, DECODER(ist_stb)};
  imgstat_load_options opts = {.max_pixels = lim->max_pixels,
                               .max_memory = lim->max_memory};
  imgstat_decoder *d;
  memset(img, 0, sizeof *img);
  imgstat_status s = decoder_start(src, 0, NULL, &stb, &opts, &d, err);
  return load_from(d, s, img, err);
}

imgstat_status imgstat_decoder_open_memory(const void *data, size_t size,
                                           const imgstat_load_options *opts,
                                           imgstat_decoder **out,
                                           imgstat_error *err) {
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no decoder to open");
  *out = NULL;
  if (!data || size == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "empty file");
  ist_source src = {0};
  src.data = data;
  src.size = size;
  return decoder_start(&src, 0, NULL, NULL, opts, out, err);
}

imgstat_status imgstat_image_load_memory(const void *data, size_t size,
                                         const imgstat_load_options *opts,
                                         imgstat_image *img,
                                         imgstat_error *err) {
  if (!img)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image to load into");
  memset(img, 0, sizeof *img);
  imgstat_decoder *d;
  imgstat_status s = imgstat_decoder_open_memory(data, size, opts, &d, err);
  return load_from(d, s, img, err);
}

/* Bytes of a non-regular input read before deciding whether to read on: at
 * least the 256 that stb_image's JPEG test may look at (see
 * ist_stb_may_take_unknown) and the 8 of a PNG signature. */
#define IMGSTAT_UNSIZED_HEAD ((size_t)64 << 10)

/* Whether an input whose first n bytes are head (and that goes on past them)
 * starts the way an image that a decoder could take starts. When it does not,
 * the decoder's refusal depends on these bytes only, so decoding them alone
 * gives the same answer as decoding the whole input:
 *  - a PNG sniff (a damaged signature included) goes to libpng, which reads
 *    the 8-byte signature first and stops at once when it differs
 *    (png_read_sig: "Not a PNG file" or "PNG file corrupted by ASCII
 *    conversion");
 *  - an unknown signature goes to stb_image, which can only take it as a
 *    JPEG after fill bytes (its other formats have the signatures
 *    ist_kind_sniff knows; a TGA's header is sniffed too), decided by the
 *    head. */
static int worth_reading_on(const unsigned char *head, size_t n) {
  static const unsigned char png_signature[8] = {0x89, 'P',  'N',  'G',
                                                 '\r', '\n', 0x1A, '\n'};
  switch (ist_kind_sniff(head, n)) {
  case IMGSTAT_KIND_PNG:
    return n >= sizeof png_signature &&
           memcmp(head, png_signature, sizeof png_signature) == 0;
  case IMGSTAT_KIND_UNKNOWN:
    return ist_stb_may_take_unknown(head, n);
  default:
    return 1;
  }
}

/*
 * A pipe, FIFO or device has no size to stream against: it is read into
 * memory and decoded from there. Two rules keep that bounded (/dev/zero never
 * ends):
 *  - the first IMGSTAT_UNSIZED_HEAD bytes are sniffed before anything more is
 *    read: when they are no image's start (worth_reading_on), they are decoded
 *    alone, which gives the refusal a regular file with these bytes gets;
 *  - at most max_memory bytes (--max-memory) are read: the input is held
 *    whole while it is decoded, so it is memory the budget covers (the
 *    decoded pixels are checked against the same budget on their own).
 * Its reads wait for bytes a slice at a time (ist_input_read), until says
 * when to give up. On success *data (malloc'd, *len bytes) is the whole input.
 */
static imgstat_status read_unsized(int fd, const ist_stop *until,
                                   const imgstat_load_options *opts,
                                   unsigned char **data, size_t *len_out,
                                   imgstat_error *err) {
  const uint64_t budget = limits_of(opts).max_memory;
  /* One byte past the budget is enough to tell an input that is over it. */
  const size_t stop = budget < SIZE_MAX ? (size_t)budget + 1 : SIZE_MAX;
  size_t cap = IMGSTAT_UNSIZED_HEAD, len = 0;
  int head_checked = 0;
  imgstat_status s = IMGSTAT_OK;
  *data = NULL;
  unsigned char *buf = malloc(cap);
  if (!buf)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory reading the input");
  for (;;) {
    ssize_t got = 0;
    while (len < cap &&
           (got = ist_input_read(fd, buf + len, cap - len, until)) > 0)
      len += (size_t)got;
    if (got < 0) {
      int e = errno ? errno : EIO;
      s = e == ECANCELED
              ? imgstat_error_set(err, IMGSTAT_ERR_IO,
                                  "cancelled while waiting for the input")
              : imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
      goto done;
    }
    if (len < cap)
      break; /* the end of the input */
    if (!head_checked) {
      head_checked = 1;
      if (!worth_reading_on(buf, len)) {
        imgstat_image img;
        s = imgstat_image_load_memory(buf, len, opts, &img, err);
        if (s != IMGSTAT_OK)
          goto done;
        /* Not expected (the decoders refuse such a head): read on. */
        imgstat_image_free(&img);
      }
    }
    if ((uint64_t)len > budget)
      break;
    size_t bigger = cap <= SIZE_MAX / 2 ? cap * 2 : SIZE_MAX;
    if (bigger > stop)
      bigger = stop;
    unsigned char *p = realloc(buf, bigger);
    if (!p) {
      s = imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                            "out of memory reading the input");
      goto done;
    }
    buf = p;
    cap = bigger;
  }
  if ((uint64_t)len > budget) {
    s = imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                          "input is larger than %" PRIu64
                          " bytes without being a regular file "
                          "(max_memory)",
                          budget);
    imgstat_error_cause(err, IMGSTAT_CAUSE_MAX_MEMORY, budget, 0, NULL);
  } else if (len == 0)
    s = imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "empty file");
done:
  if (s != IMGSTAT_OK) {
    free(buf);
    return s;
  }
  *data = buf;
  *len_out = len;
  return IMGSTAT_OK;
}

imgstat_status imgstat_decoder_open(const char *path,
                                    const imgstat_load_options *opts,
                                    imgstat_decoder **out, imgstat_error *err) {
  return ist_decoder_open_until(path, opts, NULL, out, err);
}

imgstat_status ist_decoder_open_until(const char *path,
                                      const imgstat_load_options *opts,
                                      const ist_stop *stop,
                                      imgstat_decoder **out,
                                      imgstat_error *err) {
  if (!out)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no decoder to open");
  *out = NULL;
  if (!path)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no file name");

  /* opened without waiting for a FIFO's writer (source.c) */
  int fd;
  struct stat st;
  imgstat_status s = ist_input_open(path, &fd, &st, err);
  if (s != IMGSTAT_OK)
    return s;
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "is a directory");
  }
  ist_source src = {0};
  if (!S_ISREG(st.st_mode)) {
    unsigned char *data = NULL;
    size_t len = 0;
    s = read_unsized(fd, stop, opts, &data, &len, err);
    close(fd);
    if (s != IMGSTAT_OK)
      return s;
    src.data = data;
    src.size = len;
    return decoder_start(&src, 0, data, NULL, opts, out, err);
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    close(fd);
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  }
  if (st.st_size == 0) {
    s = imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "empty file");
  } else if ((uintmax_t)st.st_size > SIZE_MAX) {
    s = imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "file too large");
  } else {
    setvbuf(f, NULL, _IOFBF, IMGSTAT_FILE_BUFFER);
    src.file = f;
    src.size = (size_t)st.st_size;
    return decoder_start(&src, 1, NULL, NULL, opts, out, err);
  }
  fclose(f);
  return s;
}

imgstat_status imgstat_image_load(const char *path,
                                  const imgstat_load_options *opts,
                                  imgstat_image *img, imgstat_error *err) {
  if (!img)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image to load into");
  memset(img, 0, sizeof *img);
  imgstat_decoder *d;
  imgstat_status s = imgstat_decoder_open(path, opts, &d, err);
  return load_from(d, s, img, err);
}
