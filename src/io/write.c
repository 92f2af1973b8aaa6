/*
 * Writing images: PNG (8/16-bit, libpng), .npy (numpy's format, version
 * 1.0) and PFM. Every format goes through the same safe path: a temporary
 * file beside the destination, written, flushed and synced, then renamed over
 * it. A failure or a cancel removes the temporary, so nobody ever sees a
 * half-written output under the real name. Only a regular file (or nothing)
 * is replaced: never a symbolic link, FIFO, device or folder.
 */
#include "imgstat/imgstat.h"

#include "image_rows.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <png.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef IMGSTAT_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#ifndef NAME_MAX
#define NAME_MAX 255
#endif

imgstat_file_format imgstat_file_format_from_path(const char *path) {
  const char *dot = path ? strrchr(path, '.') : NULL;
  const char *slash = path ? strrchr(path, '/') : NULL;
  if (!dot || (slash && dot < slash))
    return IMGSTAT_FILE_AUTO;
  if (strcasecmp(dot, ".png") == 0)
    return IMGSTAT_FILE_PNG;
  if (strcasecmp(dot, ".npy") == 0)
    return IMGSTAT_FILE_NPY;
  if (strcasecmp(dot, ".pfm") == 0)
    return IMGSTAT_FILE_PFM;
  return IMGSTAT_FILE_AUTO;
}

static int host_is_little_endian(void) {
  const uint16_t one = 1;
  uint8_t b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static int cancelled(const imgstat_write_options *opts) {
  return opts && opts->cancel && *opts->cancel;
}

/* Every channel of row y into every ch-th sample of buf, as type T. */
#define INTERLEAVE_ROW(T)                                                      \
  for (int c = 0; c < ch; c++) {                                               \
    const T *src = ist_image_row(img, c, y);                                   \
    T *dst = (T *)buf + c;                                                     \
    for (size_t x = 0; x < w; x++)                                             \
      dst[x * ch] = src[x];                                                    \
  }

/* One row of the image interleaved into buf (width * channels samples). */
static void interleave_row(const imgstat_image *img, uint32_t y, void *buf) {
  size_t w = img->width;
  int ch = img->channels;
  switch (img->sample) {
  case IMGSTAT_U8:
    INTERLEAVE_ROW(uint8_t);
    break;
  case IMGSTAT_U16:
    INTERLEAVE_ROW(uint16_t);
    break;
  case IMGSTAT_F32:
    INTERLEAVE_ROW(float);
    break;
  }
}

static imgstat_status write_failed(imgstat_error *err, int e) {
  return imgstat_error_set(err, IMGSTAT_ERR_IO, "write failed: %s",
                           strerror(e ? e : EIO));
}

/* ---- PNG -------------------------------------------------------------------
 */

typedef struct png_state {
  imgstat_error *err;
  FILE *file;
  int write_errno; /* set when our write callback failed */
  jmp_buf jump;
} png_state;

static void png_on_error(png_structp png, png_const_charp msg) {
  png_state *s = png_get_error_ptr(png);
  if (s->write_errno)
    write_failed(s->err, s->write_errno);
  else
    imgstat_error_set(s->err, IMGSTAT_ERR_IO, "libpng: %s", msg);
  longjmp(s->jump, 1);
}

/* Our own write callback keeps errno (libpng's says only "Write Error"). */
static void png_on_write(png_structp png, png_bytep data, size_t len) {
  png_state *s = png_get_io_ptr(png);
  if (fwrite(data, 1, len, s->file) != len) {
    s->write_errno = errno ? errno : EIO;
    png_error(png, "write failed");
  }
}

static void png_on_flush(png_structp png) { (void)png; }

static void png_on_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg; /* the library never prints */
}

static imgstat_status write_png(FILE *f, const imgstat_image *img,
                                const imgstat_write_options *opts,
                                imgstat_error *err) {
  static const int colour_type[5] = {0, PNG_COLOR_TYPE_GRAY,
                                     PNG_COLOR_TYPE_GRAY_ALPHA,
                                     PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGBA};
  size_t sample = (size_t)img->sample;
  size_t row_samples = (size_t)img->width * img->channels;
  void *row = malloc(row_samples * sample);
  uint8_t *bytes = malloc(row_samples * sample);
  if (!row || !bytes) {
    free(row);
    free(bytes);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  }
  png_state s;
  s.err = err;
  s.file = f;
  s.write_errno = 0;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &s,
                                            png_on_error, png_on_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!png || !info) {
    png_destroy_write_struct(&png, &info);
    free(row);
    free(bytes);
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "libpng: cannot create its write structures");
  }
  /* After the jump only the status matters; nothing set below is read. */
  if (setjmp(s.jump)) {
    png_destroy_write_struct(&png, &info);
    free(row);
    free(bytes);
    return err ? err->status : IMGSTAT_ERR_IO;
  }
  png_set_write_fn(png, &s, png_on_write, png_on_flush);
  png_set_IHDR(png, info, img->width, img->height, (int)sample * 8,
               colour_type[img->channels], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  /* Measured on a 768x512 photo: libpng's defaults (zlib level 6, all five
   * filters tried per row) took 0.22 s; level 3 with the Up filter 0.04 s
   * for a file 6% larger. Normalizing is a batch job: speed wins. */
  png_set_compression_level(png, opts && opts->png_level
                                     ? opts->png_level - 1
                                     : IMGSTAT_PNG_DEFAULT_LEVEL);
  png_set_filter(png, 0, PNG_FILTER_UP);
  png_write_info(png, info);
  imgstat_status st = IMGSTAT_OK;
  for (uint32_t y = 0; y < img->height; y++) {
    if (cancelled(opts)) {
      st = imgstat_error_set(err, IMGSTAT_ERR_IO, "interrupted");
      break;
    }
    interleave_row(img, y, row);
    if (sample == 2) {
      /* PNG stores 16-bit samples big-endian */
      const uint16_t *r16 = row;
      for (size_t i = 0; i < row_samples; i++) {
        bytes[2 * i] = (uint8_t)(r16[i] >> 8);
        bytes[2 * i + 1] = (uint8_t)(r16[i] & 0xff);
      }
      png_write_row(png, bytes);
    } else {
      png_write_row(png, row);
    }
  }
  if (st == IMGSTAT_OK)
    png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  free(row);
  free(bytes);
  return st;
}

/* ---- PNG through libdeflate ------------------------------------------------
 * libpng hands zlib one filtered row at a time; libdeflate compresses a whole
 * buffer at once, 2 to 3 times faster than zlib at the same level for output
 * no larger (docs/benchmarks.md, "PNG encoding"). So this writer filters
 * every row itself (Up: each byte minus the byte above it; the first row
 * None), compresses the whole filtered image into one zlib stream and
 * writes it as IDAT chunks between the IHDR and IEND that it writes too.
 * Memory: the filtered image and the compressed one beside the image. */

int ist_png_writer_libpng;

int ist_png_have_libdeflate(void) {
#ifdef IMGSTAT_HAVE_LIBDEFLATE
  return 1;
#else
  return 0;
#endif
}

#ifdef IMGSTAT_HAVE_LIBDEFLATE
static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* One chunk: length, type, data, CRC of type and data. */
static int write_chunk(FILE *f, const char *type, const unsigned char *data,
                       size_t len) {
  unsigned char head[8], tail[4];
  put_be32(head, (uint32_t)len);
  memcpy(head + 4, type, 4);
  uint32_t crc = libdeflate_crc32(0, head + 4, 4);
  if (len) /* (a NULL buffer restarts the CRC) */
    crc = libdeflate_crc32(crc, data, len);
  put_be32(tail, crc);
  /* (IEND has no data: fwrite must not be given its NULL buffer) */
  return fwrite(head, 1, 8, f) == 8 &&
         (len == 0 || fwrite(data, 1, len, f) == len) &&
         fwrite(tail, 1, 4, f) == 4;
}

static imgstat_status write_png_deflate(FILE *f, const imgstat_image *img,
                                        const imgstat_write_options *opts,
                                        imgstat_error *err) {
  static const unsigned char colour_type[5] = {0, 0, 4, 2, 6};
  size_t sample = (size_t)img->sample;
  size_t bpp = sample * (size_t)img->channels; /* bytes per pixel */
  size_t row_bytes = (size_t)img->width * bpp;
  size_t stride = row_bytes + 1; /* the filter byte */
  size_t total;
  if (!ist_size_mul(stride, img->height, &total))
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "image too large for PNG");
  int level =
      opts && opts->png_level ? opts->png_level - 1 : IMGSTAT_PNG_DEFAULT_LEVEL;
  struct libdeflate_compressor *z = libdeflate_alloc_compressor(level);
  unsigned char *filtered = malloc(total);
  unsigned char *rows = malloc(2 * row_bytes);
  size_t bound = z ? libdeflate_zlib_compress_bound(z, total) : 0;
  unsigned char *packed = z ? malloc(bound) : NULL;
  imgstat_status st = IMGSTAT_OK;
  if (!z || !filtered || !rows || !packed) {
    st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
    goto done;
  }
  /* the row above (zeros above the first, so Up there is None) and this
   * one, swapped as the rows go */
  unsigned char *prev = rows, *cur = rows + row_bytes;
  memset(prev, 0, row_bytes);
  for (uint32_t y = 0; y < img->height; y++) {
    if (cancelled(opts)) {
      st = imgstat_error_set(err, IMGSTAT_ERR_IO, "interrupted");
      goto done;
    }
    interleave_row(img, y, cur);
    if (sample == 2) /* PNG's samples are big-endian */
      for (size_t i = 0; i < row_bytes; i += 2) {
        uint16_t v;
        memcpy(&v, cur + i, 2);
        cur[i] = (unsigned char)(v >> 8);
        cur[i + 1] = (unsigned char)(v & 0xff);
      }
    unsigned char *out = filtered + (size_t)y * stride;
    out[0] = y == 0 ? 0 : 2; /* None, then Up */
    for (size_t i = 0; i < row_bytes; i++)
      out[1 + i] = (unsigned char)(cur[i] - prev[i]);
    unsigned char *t = prev;
    prev = cur;
    cur = t;
  }
  size_t n = libdeflate_zlib_compress(z, filtered, total, packed, bound);
  if (n == 0) {
    st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "libdeflate failed");
    goto done;
  }
  static const unsigned char signature[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  unsigned char ihdr[13];
  put_be32(ihdr, img->width);
  put_be32(ihdr + 4, img->height);
  ihdr[8] = (unsigned char)(sample * 8);
  ihdr[9] = colour_type[img->channels];
  ihdr[10] = ihdr[11] = ihdr[12] = 0; /* deflate, adaptive filters, none */
  int ok = fwrite(signature, 1, 8, f) == 8 && write_chunk(f, "IHDR", ihdr, 13);
  /* IDAT chunks of at most 1 GiB (a chunk's length is below 2^31) */
  for (size_t at = 0; ok && at < n; at += (size_t)1 << 30) {
    size_t len = n - at < ((size_t)1 << 30) ? n - at : (size_t)1 << 30;
    if (cancelled(opts)) {
      st = imgstat_error_set(err, IMGSTAT_ERR_IO, "interrupted");
      goto done;
    }
    ok = write_chunk(f, "IDAT", packed + at, len);
  }
  if (ok)
    ok = write_chunk(f, "IEND", NULL, 0);
  if (!ok)
    st = write_failed(err, errno);
done:
  libdeflate_free_compressor(z);
  free(filtered);
  free(rows);
  free(packed);
  return st;
}
#endif

/* ---- numpy .npy ------------------------------------------------------------
 */

static imgstat_status write_npy(FILE *f, const imgstat_image *img,
                                const imgstat_write_options *opts,
                                imgstat_error *err) {
  char endian = host_is_little_endian() ? '<' : '>';
  const char *descr = img->sample == IMGSTAT_U8 ? "|u1"
                      : img->sample == IMGSTAT_U16
                          ? (endian == '<' ? "<u2" : ">u2")
                          : (endian == '<' ? "<f4" : ">f4");
  char dict[160];
  int len;
  int chw = opts && opts->layout == IMGSTAT_LAYOUT_CHW;
  if (chw)
    len = snprintf(dict, sizeof dict,
                   "{'descr': '%s', 'fortran_order': False, 'shape': (%d, "
                   "%u, %u), }",
                   descr, img->channels, img->height, img->width);
  else if (img->channels == 1)
    len = snprintf(dict, sizeof dict,
                   "{'descr': '%s', 'fortran_order': False, 'shape': (%u, "
                   "%u), }",
                   descr, img->height, img->width);
  else
    len = snprintf(dict, sizeof dict,
                   "{'descr': '%s', 'fortran_order': False, 'shape': (%u, "
                   "%u, %d), }",
                   descr, img->height, img->width, img->channels);
  /* magic (6) + version (2) + length (2) + dict, padded with spaces and a
   * final newline to a multiple of 64 bytes so the data is aligned */
  size_t total = 10 + (size_t)len + 1;
  size_t padded = (total + 63) / 64 * 64;
  size_t header_len = padded - 10;
  unsigned char head[256];
  memcpy(head, "\x93NUMPY\x01\x00", 8);
  head[8] = (unsigned char)(header_len & 0xff);
  head[9] = (unsigned char)(header_len >> 8);
  memcpy(head + 10, dict, (size_t)len);
  memset(head + 10 + len, ' ', padded - 10 - (size_t)len);
  head[padded - 1] = '\n';
  if (fwrite(head, 1, padded, f) != padded)
    return write_failed(err, errno);
  if (chw) { /* the planes one after the other, rows as they are */
    size_t plane_row = (size_t)img->width * img->sample;
    for (int c = 0; c < img->channels; c++)
      for (uint32_t y = 0; y < img->height; y++) {
        if (cancelled(opts))
          return imgstat_error_set(err, IMGSTAT_ERR_IO, "interrupted");
        if (fwrite(ist_image_row(img, c, y), 1, plane_row, f) != plane_row)
          return write_failed(err, errno);
      }
    return IMGSTAT_OK;
  }
  size_t row_bytes = (size_t)img->width * img->channels * img->sample;
  void *row = malloc(row_bytes ? row_bytes : 1);
  if (!row)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_status st = IMGSTAT_OK;
  for (uint32_t y = 0; y < img->height && st == IMGSTAT_OK; y++) {
    if (cancelled(opts)) {
      st = imgstat_error_set(err, IMGSTAT_ERR_IO, "interrupted");
      break;
    }
    interleave_row(img, y, row);
    if (fwrite(row, 1, row_bytes, f) != row_bytes)
      st = write_failed(err, errno);
  }
  free(row);
  return st;
}

/* ---- PFM -------------------------------------------------------------------
 */

static imgstat_status write_pfm(FILE *f, const imgstat_image *img,
                                const imgstat_write_options *opts,
                                imgstat_error *err) {
  /* A negative scale says little-endian samples. Rows go bottom to top. */
  if (fprintf(f, "%s\n%u %u\n%s\n", img->channels == 3 ? "PF" : "Pf",
              img->width, img->height,
              host_is_little_endian() ? "-1.0" : "1.0") < 0)
    return write_failed(err, errno);
  size_t row_samples = (size_t)img->width * img->channels;
  void *row = malloc(row_samples * img->sample);
  float *frow = malloc(row_samples * sizeof *frow);
  imgstat_status st = IMGSTAT_OK;
  if (!row || !frow)
    st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  for (uint32_t i = 0; i < img->height && st == IMGSTAT_OK; i++) {
    if (cancelled(opts)) {
      st = imgstat_error_set(err, IMGSTAT_ERR_IO, "interrupted");
      break;
    }
    interleave_row(img, img->height - 1 - i, row);
    for (size_t k = 0; k < row_samples; k++)
      frow[k] = img->sample == IMGSTAT_U8    ? ((const uint8_t *)row)[k]
                : img->sample == IMGSTAT_U16 ? ((const uint16_t *)row)[k]
                                             : ((const float *)row)[k];
    if (fwrite(frow, sizeof *frow, row_samples, f) != row_samples)
      st = write_failed(err, errno);
  }
  free(row);
  free(frow);
  return st;
}

/* ---- the safe path
 * ------------------------------------------------------------ */

/* Six characters for a temporary name: from the time, the process and the
 * buffer's address (different for concurrent calls), mixed (splitmix64). */
static void random_suffix(char *out, const void *salt, unsigned attempt) {
  static const char alphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
               ((uint64_t)getpid() << 17) ^ (uint64_t)(uintptr_t)salt ^
               ((uint64_t)attempt * 0x9e3779b97f4a7c15u);
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  x ^= x >> 31;
  for (int i = 0; i < 6; i++) {
    out[i] = alphabet[x % 62];
    x /= 62;
  }
}

/* Creates the temporary file beside path, ".NAME.XXXXXX", or the shorter
 * ".imgstat-XXXXXX.tmp" when that would be longer than a file name may be
 * (NAME_MAX, or the file system's own limit: ENAMETOOLONG), with open(O_CREAT
 * | O_EXCL) and mode (which the kernel reduces by the umask, as for any new
 * file): what mkstemp does, without its fixed mode 0600. tmp holds strlen
 * (path) + 32 bytes and receives the name. Returns the descriptor, or -1
 * with errno. */
static int create_temporary(const char *path, char *tmp, mode_t mode) {
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  size_t plen = strlen(path);
  int fd = -1;
  /* the long form (while it fits), then the short one */
  for (int form = strlen(path + dir_len) + 8 <= NAME_MAX ? 0 : 1; form < 2;
       form++) {
    char *x;
    memcpy(tmp, path, dir_len);
    if (form == 0) {
      snprintf(tmp + dir_len, plen + 32 - dir_len, ".%s.XXXXXX",
               path + dir_len);
      x = tmp + strlen(tmp) - 6;
    } else {
      snprintf(tmp + dir_len, plen + 32 - dir_len, ".imgstat-XXXXXX.tmp");
      x = tmp + dir_len + 9;
    }
    for (unsigned attempt = 0; attempt < 1000; attempt++) {
      random_suffix(x, tmp, attempt);
      fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
      if (fd >= 0 || errno != EEXIST)
        break;
    }
    if (fd >= 0 || errno != ENAMETOOLONG)
      break;
  }
  return fd;
}

/* The end of a file written through the safe path: flushed, synced (where
 * the file system can), closed; st the writing's status so far. */
static imgstat_status written_close(FILE *f, imgstat_status st,
                                    const imgstat_write_options *opts,
                                    imgstat_error *err) {
  if (st == IMGSTAT_OK && fflush(f) != 0)
    st = write_failed(err, errno);
  if (st == IMGSTAT_OK && fsync(fileno(f)) != 0 && errno != EINVAL &&
      errno != EROFS)
    st = write_failed(err, errno);
  if (fclose(f) != 0 && st == IMGSTAT_OK)
    st = write_failed(err, errno);
  if (st == IMGSTAT_OK && cancelled(opts))
    st = imgstat_error_set(err, IMGSTAT_ERR_IO, "interrupted");
  return st;
}

/* Writes img in fmt to f, flushes, syncs and closes it. */
static imgstat_status write_and_close(FILE *f, imgstat_file_format fmt,
                                      const imgstat_image *img,
                                      const imgstat_write_options *opts,
                                      imgstat_error *err) {
  imgstat_status st;
  if (fmt == IMGSTAT_FILE_PNG) {
#ifdef IMGSTAT_HAVE_LIBDEFLATE
    if (!ist_png_writer_libpng)
      st = write_png_deflate(f, img, opts, err);
    else
#endif
      st = write_png(f, img, opts, err);
  } else if (fmt == IMGSTAT_FILE_NPY)
    st = write_npy(f, img, opts, err);
  else
    st = write_pfm(f, img, opts, err);
  return written_close(f, st, opts, err);
}

/* What imgstat_image_write writes through the safe path. */
typedef struct write_job {
  imgstat_file_format fmt;
  const imgstat_image *img;
} write_job;

static imgstat_status write_job_run(FILE *f, void *ctx,
                                    const imgstat_write_options *opts,
                                    imgstat_error *err) {
  const write_job *job = ctx;
  return write_and_close(f, job->fmt, job->img, opts, err);
}

/* The safe path: body writes the content to f and closes it (flushed and
 * synced: write_and_close, bytes_job_run); the temporary it wrote is renamed
 * over path, or removed on failure. */
static imgstat_status
safe_write(const char *path, const imgstat_write_options *opts,
           imgstat_status (*body)(FILE *f, void *ctx,
                                  const imgstat_write_options *opts,
                                  imgstat_error *err),
           void *ctx, imgstat_error *err) {
  /* Only a regular file is replaced: rename would put a regular file in the
   * place of a symbolic link (not its target), a FIFO or a device node
   * (/dev/null, as root). */
  struct stat old;
  int replacing = lstat(path, &old) == 0;
  if (replacing && !S_ISREG(old.st_mode))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "exists and is not a regular file (%s): refusing "
                             "to replace it",
                             S_ISLNK(old.st_mode)    ? "a symbolic link"
                             : S_ISDIR(old.st_mode)  ? "a folder"
                             : S_ISFIFO(old.st_mode) ? "a FIFO"
                             : S_ISCHR(old.st_mode) || S_ISBLK(old.st_mode)
                                 ? "a device"
                                 : "a socket or other special file");

  /* The temporary lives in the destination's folder so rename is atomic. It
   * gets the mode the file will have: the replaced file's permissions, or
   * for a new file 0666 less the umask, as open() gives (so the umask is
   * never read or changed here: umask() acts on the whole process). */
  mode_t mode = replacing ? (old.st_mode & 0777) : 0666;
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 32);
  if (!tmp)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  /* With opts->temp_path, the temporary's name is published for a signal
   * handler; every signal is blocked in this thread while the file and its
   * publication change together, so that the handler never misses a file
   * nor unlinks a name that is not ours. */
  const char *volatile *published = opts ? opts->temp_path : NULL;
  sigset_t all, saved;
  sigfillset(&all);
  if (published)
    pthread_sigmask(SIG_BLOCK, &all, &saved);
  int fd = create_temporary(path, tmp, mode);
  int create_errno = errno;
  if (published) {
    if (fd >= 0)
      *published = tmp;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
  }
  if (fd < 0) {
    free(tmp);
    return imgstat_error_set(err, IMGSTAT_ERR_IO,
                             "cannot create a file in its folder: %s",
                             strerror(create_errno));
  }
  /* open() took the umask off; a replaced file keeps exactly its bits */
  if (replacing)
    (void)fchmod(fd, mode);
  imgstat_status st = IMGSTAT_OK;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    st = imgstat_error_set(err, IMGSTAT_ERR_IO, "cannot write: %s",
                           strerror(errno));
    close(fd);
  } else {
    st = body(f, ctx, opts, err);
  }
  if (published)
    pthread_sigmask(SIG_BLOCK, &all, &saved);
  if (st == IMGSTAT_OK && rename(tmp, path) != 0) {
    int e = errno;
    st = imgstat_error_set(err, IMGSTAT_ERR_IO, "cannot rename into place: %s",
                           strerror(e));
  }
  if (st != IMGSTAT_OK)
    unlink(tmp);
  if (published) {
    *published = NULL;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
  }
  free(tmp);
  return st;
}

imgstat_status imgstat_image_write(const char *path, const imgstat_image *img,
                                   const imgstat_write_options *opts,
                                   imgstat_error *err) {
  if (!path || !*path || !img || !img->data || img->channels < 1 ||
      img->channels > IMGSTAT_MAX_CHANNELS || img->width == 0 ||
      img->height == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "nothing to write");
  imgstat_file_format fmt = opts ? opts->format : IMGSTAT_FILE_AUTO;
  if (fmt == IMGSTAT_FILE_AUTO)
    fmt = imgstat_file_format_from_path(path);
  switch (fmt) {
  case IMGSTAT_FILE_AUTO:
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "unknown output format: name it .png, .npy or "
                             ".pfm");
  case IMGSTAT_FILE_PNG:
    if (img->sample == IMGSTAT_F32) {
      imgstat_error_set(err, IMGSTAT_ERR_ARG,
                        "PNG holds 8 or 16-bit samples, not float32: "
                        "write .npy or .pfm, or choose a depth of 8 or 16");
      return imgstat_error_cause(err, IMGSTAT_CAUSE_DEPTH, 0, 0, NULL);
    }
    if (img->channels > 4)
      return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                               "PNG holds 1 to 4 channels, not %d bands: "
                               "write .npy",
                               img->channels);
    if ((uint64_t)img->width * img->channels * img->sample > 0x7fffffffu)
      return imgstat_error_set(err, IMGSTAT_ERR_LIMIT, "rows too long for PNG");
    break;
  case IMGSTAT_FILE_PFM:
    if (img->channels != 1 && img->channels != 3) {
      imgstat_error_set(err, IMGSTAT_ERR_ARG,
                        "PFM holds 1 or 3 channels, not %d: write .npy "
                        "or drop alpha",
                        img->channels);
      return imgstat_error_cause(err, IMGSTAT_CAUSE_ALPHA, 0,
                                 (uint64_t)img->channels, NULL);
    }
    break;
  case IMGSTAT_FILE_NPY:
    break;
  }
  write_job job = {fmt, img};
  return safe_write(path, opts, write_job_run, &job, err);
}

/* ---- bytes through the safe path, PNG into memory
 * -------------------------------------------- */

typedef struct bytes_job {
  const void *data;
  size_t size;
} bytes_job;

static imgstat_status bytes_job_run(FILE *f, void *ctx,
                                    const imgstat_write_options *opts,
                                    imgstat_error *err) {
  const bytes_job *job = ctx;
  imgstat_status st = IMGSTAT_OK;
  if (job->size && fwrite(job->data, 1, job->size, f) != job->size)
    st = write_failed(err, errno);
  return written_close(f, st, opts, err);
}

imgstat_status imgstat_bytes_write(const char *path, const void *data,
                                   size_t size,
                                   const imgstat_write_options *opts,
                                   imgstat_error *err) {
  if (!path || !*path || (!data && size))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "nothing to write");
  bytes_job job = {data, size};
  return safe_write(path, opts, bytes_job_run, &job, err);
}

imgstat_status imgstat_image_png_encode(const imgstat_image *img, int level,
                                        unsigned char **out, size_t *size,
                                        imgstat_error *err) {
  *out = NULL;
  *size = 0;
  if (!img || !img->data || img->channels < 1 || img->channels > 4 ||
      img->width == 0 || img->height == 0 || img->sample == IMGSTAT_F32)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "PNG holds 1 to 4 channels of 8 or 16 bits");
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  imgstat_write_options o;
  memset(&o, 0, sizeof o);
  o.format = IMGSTAT_FILE_PNG;
  o.png_level = level;
  imgstat_status st;
#ifdef IMGSTAT_HAVE_LIBDEFLATE
  if (!ist_png_writer_libpng)
    st = write_png_deflate(f, img, &o, err);
  else
#endif
    st = write_png(f, img, &o, err);
  if (fclose(f) != 0 && st == IMGSTAT_OK)
    st = imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "out of memory");
  if (st != IMGSTAT_OK) {
    free(buf);
    return st;
  }
  *out = (unsigned char *)buf;
  *size = len;
  return IMGSTAT_OK;
}
