/*
 * Loading: opens the input, sniffs its signature (never the file name) and
 * hands it to the decoder of that format.
 */
#include "imgstat.h"
#include "io.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* stdio's default buffer is a few KB; decoders ask for many small pieces. */
#define IMGSTAT_FILE_BUFFER (1u << 18)

size_t ist_source_read(ist_source *src, void *buf, size_t n) {
  size_t got;
  if (src->file) {
    got = fread(buf, 1, n, src->file);
    if (got < n && ferror(src->file) && !src->read_errno)
      src->read_errno = errno ? errno : EIO;
  } else {
    size_t left = src->pos < src->size ? src->size - src->pos : 0;
    got = n < left ? n : left;
    if (got)
      memcpy(buf, src->data + src->pos, got);
  }
  src->pos += got;
  if (got < n)
    src->short_read = 1;
  return got;
}

int ist_source_rewind(ist_source *src) {
  src->pos = 0;
  src->short_read = 0;
  if (src->file) {
    clearerr(src->file);
    if (fseek(src->file, 0, SEEK_SET) != 0)
      return errno ? errno : EIO;
  }
  return 0;
}

imgstat_status ist_source_slurp(ist_source *src, const unsigned char **data,
                                int *owned, imgstat_error *err) {
  *data = NULL;
  *owned = 0;
  if (!src->file) {
    *data = src->data;
    return IMGSTAT_OK;
  }
  int e = ist_source_rewind(src);
  if (e)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  unsigned char *buf = malloc(src->size ? src->size : 1);
  if (!buf)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory reading %zu bytes", src->size);
  if (ist_source_read(src, buf, src->size) != src->size) {
    free(buf);
    if (src->read_errno)
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                               strerror(src->read_errno));
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "file shrank while being read");
  }
  *data = buf;
  *owned = 1;
  return IMGSTAT_OK;
}

ist_kind ist_kind_sniff(const unsigned char *h, size_t n) {
  /* Anything that looks like a damaged PNG signature still goes to libpng,
   * whose reason ("PNG file corrupted by ASCII conversion") is the useful
   * one. */
  if ((n >= 1 && h[0] == 0x89) || (n >= 4 && memcmp(h + 1, "PNG", 3) == 0) ||
      (n >= 16 && memcmp(h + 12, "IHDR", 4) == 0))
    return IMGSTAT_KIND_PNG;
  if (n >= 3 && h[0] == 0xFF && h[1] == 0xD8 && h[2] == 0xFF)
    return IMGSTAT_KIND_JPEG;
  if (n >= 2 && h[0] == 'B' && h[1] == 'M')
    return IMGSTAT_KIND_BMP;
  if (n >= 6 && (memcmp(h, "GIF87a", 6) == 0 || memcmp(h, "GIF89a", 6) == 0))
    return IMGSTAT_KIND_GIF;
  if (n >= 4 && memcmp(h, "8BPS", 4) == 0)
    return IMGSTAT_KIND_PSD;
  if ((n >= 10 && memcmp(h, "#?RADIANCE", 10) == 0) ||
      (n >= 6 && memcmp(h, "#?RGBE", 6) == 0))
    return IMGSTAT_KIND_HDR;
  if (n >= 2 && h[0] == 'P' && (h[1] == '5' || h[1] == '6'))
    return IMGSTAT_KIND_PNM;
  /* TGA has no signature: stb_image tries it last. */
  return IMGSTAT_KIND_UNKNOWN;
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

static imgstat_status decode(ist_source *src, const imgstat_load_options *opts,
                             imgstat_image *img, imgstat_error *err) {
  ist_limits lim = limits_of(opts);
  unsigned char head[16];
  size_t n = ist_source_read(src, head, sizeof head);
  if (src->read_errno)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                             strerror(src->read_errno));
  int e = ist_source_rewind(src);
  if (e)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));

  ist_kind kind = ist_kind_sniff(head, n);
  if (kind == IMGSTAT_KIND_PNG)
    return ist_png_decode(src, &lim, img, err);
  if (kind == IMGSTAT_KIND_JPEG) {
    imgstat_status s = ist_jpeg_decode(src, &lim, img, err);
    if (s != IMGSTAT_ERR_UNSUPPORTED)
      return s;
    /* Built without TurboJPEG: stb_image. */
    e = ist_source_rewind(src);
    if (e)
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  }
  return ist_stb_decode(src, kind, &lim, img, err);
}

imgstat_status imgstat_image_load_memory(const void *data, size_t size,
                                         const imgstat_load_options *opts,
                                         imgstat_image *img,
                                         imgstat_error *err) {
  if (!img)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image to load into");
  memset(img, 0, sizeof *img);
  if (!data || size == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "empty file");
  ist_source src = {0};
  src.data = data;
  src.size = size;
  imgstat_status s = decode(&src, opts, img, err);
  if (s != IMGSTAT_OK)
    imgstat_image_free(img);
  return s;
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
 *    JPEG after fill bytes or as a TGA (its other formats have the
 *    signatures ist_kind_sniff knows); both are decided by the head. */
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
 */
static imgstat_status load_unsized(FILE *f, const imgstat_load_options *opts,
                                   imgstat_image *img, imgstat_error *err) {
  const uint64_t budget = limits_of(opts).max_memory;
  /* One byte past the budget is enough to tell an input that is over it. */
  const size_t stop = budget < SIZE_MAX ? (size_t)budget + 1 : SIZE_MAX;
  size_t cap = IMGSTAT_UNSIZED_HEAD, len = 0;
  int head_checked = 0;
  imgstat_status s = IMGSTAT_OK;
  unsigned char *buf = malloc(cap);
  if (!buf)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory reading the input");
  for (;;) {
    len += fread(buf + len, 1, cap - len, f);
    if (ferror(f)) {
      int e = errno ? errno : EIO;
      s = imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
      goto done;
    }
    if (len < cap)
      break; /* the end of the input */
    if (!head_checked) {
      head_checked = 1;
      if (!worth_reading_on(buf, len)) {
        s = imgstat_image_load_memory(buf, len, opts, img, err);
        if (s != IMGSTAT_OK)
          goto done;
        /* Not expected (the decoders refuse such a head): read on. */
        imgstat_image_free(img);
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
  if ((uint64_t)len > budget)
    s = imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                          "input is larger than %" PRIu64
                          " bytes without being a regular file "
                          "(--max-memory)",
                          budget);
  else
    s = imgstat_image_load_memory(buf, len, opts, img, err);
done:
  free(buf);
  return s;
}

imgstat_status imgstat_image_load(const char *path,
                                  const imgstat_load_options *opts,
                                  imgstat_image *img, imgstat_error *err) {
  if (!img)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image to load into");
  memset(img, 0, sizeof *img);
  if (!path)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no file name");

  FILE *f = fopen(path, "rb");
  if (!f)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    int e = errno;
    fclose(f);
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  }
  imgstat_status s;
  if (S_ISDIR(st.st_mode)) {
    s = imgstat_error_set(err, IMGSTAT_ERR_IO, "is a directory");
  } else if (!S_ISREG(st.st_mode)) {
    s = load_unsized(f, opts, img, err);
  } else if (st.st_size == 0) {
    s = imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "empty file");
  } else if ((uintmax_t)st.st_size > SIZE_MAX) {
    s = imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "file too large");
  } else {
    setvbuf(f, NULL, _IOFBF, IMGSTAT_FILE_BUFFER);
    ist_source src = {0};
    src.file = f;
    src.size = (size_t)st.st_size;
    s = decode(&src, opts, img, err);
  }
  fclose(f);
  if (s != IMGSTAT_OK)
    imgstat_image_free(img);
  return s;
}
