/*
 * Loading: opens the input, sniffs its signature (never the file name) and
 * hands it to the decoder of that format.
 */
#include "imgstat.h"
#include "load_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* stdio's default buffer is a few KB; decoders ask for many small pieces. */
#define IMGSTAT_FILE_BUFFER (1u << 18)

size_t imgstat_source_read(imgstat_source *src, void *buf, size_t n) {
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

int imgstat_source_rewind(imgstat_source *src) {
  src->pos = 0;
  src->short_read = 0;
  if (src->file) {
    clearerr(src->file);
    if (fseek(src->file, 0, SEEK_SET) != 0)
      return errno ? errno : EIO;
  }
  return 0;
}

imgstat_status imgstat_source_slurp(imgstat_source *src,
                                    const unsigned char **data, int *owned,
                                    imgstat_error *err) {
  *data = NULL;
  *owned = 0;
  if (!src->file) {
    *data = src->data;
    return IMGSTAT_OK;
  }
  int e = imgstat_source_rewind(src);
  if (e)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  unsigned char *buf = malloc(src->size ? src->size : 1);
  if (!buf)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory reading %zu bytes", src->size);
  if (imgstat_source_read(src, buf, src->size) != src->size) {
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

imgstat_kind imgstat_kind_sniff(const unsigned char *h, size_t n) {
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

static imgstat_status decode(imgstat_source *src,
                             const imgstat_load_options *opts,
                             imgstat_image *img, imgstat_error *err) {
  imgstat_limits lim = {IMGSTAT_DEFAULT_MAX_PIXELS, IMGSTAT_DEFAULT_MAX_MEMORY};
  if (opts && opts->max_pixels)
    lim.max_pixels = opts->max_pixels;
  if (opts && opts->max_memory)
    lim.max_memory = opts->max_memory;
  unsigned char head[16];
  size_t n = imgstat_source_read(src, head, sizeof head);
  if (src->read_errno)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                             strerror(src->read_errno));
  int e = imgstat_source_rewind(src);
  if (e)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));

  imgstat_kind kind = imgstat_kind_sniff(head, n);
  if (kind == IMGSTAT_KIND_PNG)
    return imgstat_png_decode(src, &lim, img, err);
  if (kind == IMGSTAT_KIND_JPEG) {
    imgstat_status s = imgstat_jpeg_decode(src, &lim, img, err);
    if (s != IMGSTAT_ERR_UNSUPPORTED)
      return s;
    /* Built without TurboJPEG: stb_image. */
    e = imgstat_source_rewind(src);
    if (e)
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  }
  return imgstat_stb_decode(src, kind, &lim, img, err);
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
  imgstat_source src = {0};
  src.data = data;
  src.size = size;
  imgstat_status s = decode(&src, opts, img, err);
  if (s != IMGSTAT_OK)
    imgstat_image_free(img);
  return s;
}

/* A pipe or device has no size to stream against: read it all first. */
static imgstat_status load_unsized(FILE *f, const imgstat_load_options *opts,
                                   imgstat_image *img, imgstat_error *err) {
  size_t cap = 1u << 20, len = 0;
  unsigned char *buf = malloc(cap);
  for (;;) {
    if (!buf)
      return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                               "out of memory reading the input");
    len += fread(buf + len, 1, cap - len, f);
    if (ferror(f)) {
      int e = errno ? errno : EIO;
      free(buf);
      return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
    }
    if (len < cap)
      break;
    unsigned char *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
    if (!bigger)
      free(buf);
    buf = bigger;
    cap *= 2;
  }
  imgstat_status s = imgstat_image_load_memory(buf, len, opts, img, err);
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
    imgstat_source src = {0};
    src.file = f;
    src.size = (size_t)st.st_size;
    s = decode(&src, opts, img, err);
  }
  fclose(f);
  if (s != IMGSTAT_OK)
    imgstat_image_free(img);
  return s;
}
