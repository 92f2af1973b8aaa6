/*
 * What the decoders share beyond the source (source.c) and the table
 * (load.c): the one check of an image's size against the caller's limits,
 * the wording of damaged data, the exact conversion of wide samples to
 * imgstat's 32-bit float, and a buffered byte reader for the formats parsed
 * here.
 */
#include "imgstat/imgstat.h"
#include "io.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Bytes as the user reads them: "3.0 GiB", "812.5 MiB", "4096 bytes". */
static void format_bytes(char *out, size_t n, uint64_t bytes) {
  if (bytes >= (UINT64_C(1) << 30))
    imgstat_number_snprintf(out, n, "%.1f GiB",
                            (double)bytes / (double)(UINT64_C(1) << 30));
  else if (bytes >= (UINT64_C(1) << 20))
    imgstat_number_snprintf(out, n, "%.1f MiB",
                            (double)bytes / (double)(UINT64_C(1) << 20));
  else
    snprintf(out, n, "%" PRIu64 " bytes", bytes);
}

imgstat_status ist_decode_check(const ist_limits *lim, uint32_t width,
                                uint32_t height, uint64_t peak_bytes,
                                uint64_t min_input, uint64_t input_size,
                                const char *format, imgstat_error *err) {
  if (width == 0 || height == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "Corrupt %s data: image is %" PRIu32 "x%" PRIu32,
                             format, width, height);
  imgstat_status s = ist_pixels_check(width, height, lim->max_pixels, err);
  if (s != IMGSTAT_OK)
    return s;
  /* A header the input is too small to back is a damaged or hostile file;
   * refusing it here keeps a 35-byte file from allocating a gigabyte. */
  if (min_input > input_size)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT,
                             "Corrupt %s data: header claims %" PRIu32
                             "x%" PRIu32 " pixels, which takes at "
                             "least %" PRIu64
                             " bytes of data, but the file has %" PRIu64
                             ": truncated or corrupt",
                             format, width, height, min_input, input_size);
  if (peak_bytes > lim->max_memory) {
    char need[32], have[32];
    format_bytes(need, sizeof need, peak_bytes);
    format_bytes(have, sizeof have, lim->max_memory);
    imgstat_status s =
        imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                          "decoding this %" PRIu32 "x%" PRIu32
                          " image takes %s, over the limit of %s (max_memory)",
                          width, height, need, have);
    imgstat_error_cause(err, IMGSTAT_CAUSE_MAX_MEMORY, lim->max_memory,
                        peak_bytes, NULL);
    return s;
  }
  return IMGSTAT_OK;
}

imgstat_status ist_corrupt(imgstat_error *err, const char *format,
                           const char *fmt, ...) {
  char why[IMGSTAT_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  imgstat_number_vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  char prefix[64];
  snprintf(prefix, sizeof prefix, "Corrupt %s data", format);
  if (strncmp(why, prefix, strlen(prefix)) == 0)
    return imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "%s", why);
  if (why[0] >= 'A' && why[0] <= 'Z' && why[1] >= 'a' && why[1] <= 'z')
    why[0] = (char)(why[0] - 'A' + 'a');
  return imgstat_error_set(err, IMGSTAT_ERR_FORMAT, "%s: %s", prefix,
                           why[0] ? why : "cannot decode the image");
}

int ist_f32_exact(double v, float *out) {
  if (isnan(v)) {
    *out = (float)v;
    return 1;
  }
  /* A finite double beyond the float range has no float (converting it
   * would be undefined behaviour). */
  if (isfinite(v) && fabs(v) > FLT_MAX)
    return 0;
  float f = (float)v;
  if ((double)f != v)
    return 0;
  *out = f;
  return 1;
}

imgstat_status ist_f32_refuse(imgstat_error *err, const char *format,
                              const char *type, double v, uint32_t x,
                              uint32_t y) {
  char text[32];
  imgstat_number_snprintf(text, sizeof text, "%.17g", v);
  return ist_f32_refuse_text(err, format, type, text, x, y);
}

imgstat_status ist_f32_refuse_text(imgstat_error *err, const char *format,
                                   const char *type, const char *v, uint32_t x,
                                   uint32_t y) {
  return imgstat_error_set(
      err, IMGSTAT_ERR_UNSUPPORTED,
      "%s %s sample %s at (%" PRIu32 ", %" PRIu32
      ") is not exactly a 32-bit float; imgstat computes on 8-bit, 16-bit "
      "and 32-bit float samples and never rounds them (convert the data to "
      "float32 first to accept the rounding)",
      format, type, v, x, y);
}

imgstat_status ist_truncated(const ist_source *src, const char *format,
                             imgstat_error *err) {
  if (src->read_errno)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s",
                             strerror(src->read_errno));
  return ist_corrupt(err, format, "file is truncated");
}

imgstat_status ist_bytes_start(ist_bytes *b, ist_source *src, size_t offset,
                               const char *format, imgstat_error *err) {
  int e = ist_source_rewind(src);
  if (e)
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "%s", strerror(e));
  b->src = src;
  b->len = b->at = 0;
  for (size_t k = 0; k < offset; k++)
    if (ist_bytes_next(b) < 0)
      return ist_truncated(src, format, err);
  return IMGSTAT_OK;
}

int ist_bytes_next(ist_bytes *b) {
  if (b->at == b->len) {
    b->len = ist_source_read(b->src, b->buf, sizeof b->buf);
    b->at = 0;
    if (b->len == 0)
      return -1;
  }
  return b->buf[b->at++];
}

size_t ist_bytes_read(ist_bytes *b, void *out, size_t n) {
  unsigned char *o = out;
  size_t done = 0;
  while (done < n) {
    if (b->at == b->len) {
      /* Large reads go straight to the caller's buffer. */
      if (n - done >= sizeof b->buf) {
        size_t got = ist_source_read(b->src, o + done, n - done);
        return done + got;
      }
      b->len = ist_source_read(b->src, b->buf, sizeof b->buf);
      b->at = 0;
      if (b->len == 0)
        return done;
    }
    size_t k = b->len - b->at < n - done ? b->len - b->at : n - done;
    memcpy(o + done, b->buf + b->at, k);
    b->at += k;
    done += k;
  }
  return done;
}

int ist_host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 1;
}

int ist_is_space(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}
