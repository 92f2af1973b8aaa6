/* The image model: one plane per channel, rows `stride` bytes apart;
 * allocated images are dense, in one allocation. */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE */
#include "image_rows.h"
#include "imgstat/imgstat.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int ist_size_mul(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a)
    return 0;
  *out = a * b;
  return 1;
}

size_t imgstat_image_plane_bytes(const imgstat_image *img) {
  if (!img || img->width == 0 || img->height == 0)
    return 0;
  /* imgstat_image_alloc checked that every plane fits in size_t. */
  return (size_t)img->width * img->height * (size_t)img->sample;
}

size_t imgstat_image_stride(const imgstat_image *img) {
  return img ? ist_image_stride(img) : 0;
}

static int sample_is_valid(imgstat_sample s) {
  return s == IMGSTAT_U8 || s == IMGSTAT_U16 || s == IMGSTAT_F32;
}

imgstat_status ist_pixels_check(uint32_t width, uint32_t height,
                                uint64_t max_pixels, imgstat_error *err) {
  /* Both factors are below 2^32, so the pixel count cannot overflow 64 bits. */
  uint64_t pixels = (uint64_t)width * height;
  uint64_t limit = max_pixels ? max_pixels : IMGSTAT_DEFAULT_MAX_PIXELS;
  if (pixels > limit) {
    imgstat_status s =
        imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                          "image is %" PRIu32 "x%" PRIu32 " = %" PRIu64
                          " pixels, over the limit of %" PRIu64 " (max_pixels)",
                          width, height, pixels, limit);
    imgstat_error_cause(err, IMGSTAT_CAUSE_MAX_PIXELS, limit, pixels, NULL);
    return s;
  }
  if (pixels > IMGSTAT_MAX_PIXELS_LIMIT)
    return imgstat_error_set(
        err, IMGSTAT_ERR_LIMIT,
        "image is %" PRIu32 "x%" PRIu32 " = %" PRIu64
        " pixels, over the largest supported size of %" PRIu64 " pixels",
        width, height, pixels, (uint64_t)IMGSTAT_MAX_PIXELS_LIMIT);
  return IMGSTAT_OK;
}

/* Large planes are written once, front to back, by a decoder: on 2 MB
 * pages that costs a few hundred page faults instead of thousands (a
 * measurable part of decoding a 12 MP image). */
#define IMGSTAT_HUGE_PAGE ((size_t)2 << 20)
static void *planes_alloc(size_t bytes) {
  if (bytes < 4 * IMGSTAT_HUGE_PAGE)
    return malloc(bytes);
  void *p = NULL;
  if (posix_memalign(&p, IMGSTAT_HUGE_PAGE, bytes) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes & ~(IMGSTAT_HUGE_PAGE - 1), MADV_HUGEPAGE);
#endif
  return p;
}

/* The checks imgstat_image_alloc and imgstat_image_wrap share: an image
 * to fill (zeroed here; `verb` names what is done with it), a channel
 * count, a sample type, at least one pixel and at most max_pixels. */
static imgstat_status image_check(imgstat_image *img, const char *verb,
                                  uint32_t width, uint32_t height, int channels,
                                  imgstat_sample sample, uint64_t max_pixels,
                                  imgstat_error *err) {
  if (!img)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no image to %s", verb);
  memset(img, 0, sizeof *img);
  if (channels < 1 || channels > IMGSTAT_MAX_CHANNELS)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "%d channels (1 to %d supported)", channels,
                             IMGSTAT_MAX_CHANNELS);
  if (!sample_is_valid(sample))
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "invalid sample type %d",
                             (int)sample);
  if (width == 0 || height == 0)
    return imgstat_error_set(
        err, IMGSTAT_ERR_ARG,
        "image is %" PRIu32 "x%" PRIu32 ": it has no pixels", width, height);
  return ist_pixels_check(width, height, max_pixels, err);
}

imgstat_status imgstat_image_alloc(imgstat_image *img, uint32_t width,
                                   uint32_t height, int channels,
                                   imgstat_sample sample, uint64_t max_pixels,
                                   imgstat_error *err) {
  imgstat_status s = image_check(img, "allocate", width, height, channels,
                                 sample, max_pixels, err);
  if (s != IMGSTAT_OK)
    return s;
  uint64_t pixels = (uint64_t)width * height;

  /* size_t may be 32 bits: check every product before allocating. */
  size_t plane_bytes, total;
#if SIZE_MAX < UINT64_MAX
  if (pixels > SIZE_MAX)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "image is %" PRIu32 "x%" PRIu32
                             ": too large for this machine",
                             width, height);
#endif
  if (!ist_size_mul((size_t)pixels, (size_t)sample, &plane_bytes) ||
      !ist_size_mul(plane_bytes, (size_t)channels, &total))
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "image is %" PRIu32 "x%" PRIu32
                             " with %d channels: too large for this machine",
                             width, height, channels);

  unsigned char *data = planes_alloc(total);
  if (!data)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM,
                             "out of memory allocating %zu bytes for a %" PRIu32
                             "x%" PRIu32 " image",
                             total, width, height);
  img->width = width;
  img->height = height;
  img->channels = channels;
  img->sample = sample;
  img->data = data;
  img->stride = (size_t)width * (size_t)sample;
  for (int c = 0; c < channels; c++)
    img->planes[c] = data + (size_t)c * plane_bytes;
  return IMGSTAT_OK;
}

imgstat_status imgstat_image_wrap(imgstat_image *img, uint32_t width,
                                  uint32_t height, int channels,
                                  imgstat_sample sample, void *const planes[],
                                  size_t stride, imgstat_error *err) {
  imgstat_status s = image_check(img, "describe", width, height, channels,
                                 sample, IMGSTAT_MAX_PIXELS_LIMIT, err);
  if (s != IMGSTAT_OK)
    return s;
  size_t row, last;
  if (!ist_size_mul(width, (size_t)sample, &row))
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "image is %" PRIu32 "x%" PRIu32
                             ": too large for this machine",
                             width, height);
  if (stride == 0)
    stride = row;
  if (stride < row)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG,
                             "row stride of %zu bytes is less than a row of "
                             "%zu bytes",
                             stride, row);
  if (!ist_size_mul(height - 1, stride, &last) || last > SIZE_MAX - row)
    return imgstat_error_set(err, IMGSTAT_ERR_LIMIT,
                             "image is %" PRIu32 "x%" PRIu32
                             " with rows of %zu bytes: too large for this "
                             "machine",
                             width, height, stride);
  if (!planes)
    return imgstat_error_set(err, IMGSTAT_ERR_ARG, "no planes");
  for (int c = 0; c < channels; c++)
    if (!planes[c])
      return imgstat_error_set(err, IMGSTAT_ERR_ARG, "channel %d has no plane",
                               c);
  img->width = width;
  img->height = height;
  img->channels = channels;
  img->sample = sample;
  img->stride = stride;
  img->borrowed = 1;
  img->data = planes[0];
  for (int c = 0; c < channels; c++)
    img->planes[c] = planes[c];
  return IMGSTAT_OK;
}

imgstat_status ist_image_dense(const imgstat_image *img, imgstat_image *tmp,
                               const imgstat_image **dense,
                               imgstat_error *err) {
  memset(tmp, 0, sizeof *tmp);
  *dense = img;
  if (!img || ist_image_is_dense(img))
    return IMGSTAT_OK;
  imgstat_status s =
      imgstat_image_alloc(tmp, img->width, img->height, img->channels,
                          img->sample, IMGSTAT_MAX_PIXELS_LIMIT, err);
  if (s != IMGSTAT_OK)
    return s;
  size_t row = ist_row_bytes(img);
  for (int c = 0; c < img->channels; c++)
    for (uint32_t y = 0; y < img->height; y++)
      memcpy(ist_image_row(tmp, c, y), ist_image_row(img, c, y), row);
  tmp->format = img->format;
  tmp->colour = img->colour;
  tmp->int16 = img->int16;
  *dense = tmp;
  return IMGSTAT_OK;
}

/* One loop per sample type and channel count, so the compiler sees constant
 * strides and can vectorize the common contiguous case. */
#define IMGSTAT_SPLIT(T, CH)                                                   \
  do {                                                                         \
    const T *restrict in = interleaved;                                        \
    T *restrict p[IMGSTAT_MAX_CHANNELS];                                       \
    for (int c = 0; c < (CH); c++)                                             \
      p[c] = (T *)ist_image_row(img, c, y) + x0;                               \
    if (step == 1) {                                                           \
      for (size_t i = 0; i < n; i++)                                           \
        for (int c = 0; c < (CH); c++)                                         \
          p[c][i] = in[i * (CH) + c];                                          \
    } else {                                                                   \
      for (size_t i = 0; i < n; i++)                                           \
        for (int c = 0; c < (CH); c++)                                         \
          p[c][i * step] = in[i * (CH) + c];                                   \
    }                                                                          \
  } while (0)

/* More than 4 channels: one channel at a time, its samples gathered from
 * the pixels (which stay in the cache for a decoder's row or tile) and
 * written in a run, rather than one pixel's samples to as many planes. */
#define IMGSTAT_SPLIT_BANDS(T)                                                 \
  do {                                                                         \
    const T *restrict in = interleaved;                                        \
    const size_t ch = (size_t)img->channels;                                   \
    for (int c = 0; c < img->channels; c++) {                                  \
      T *restrict o = (T *)ist_image_row(img, c, y) + x0;                      \
      const T *restrict s = in + c;                                            \
      if (step == 1)                                                           \
        for (size_t i = 0; i < n; i++)                                         \
          o[i] = s[i * ch];                                                    \
      else                                                                     \
        for (size_t i = 0; i < n; i++)                                         \
          o[i * step] = s[i * ch];                                             \
    }                                                                          \
  } while (0)

#define IMGSTAT_SPLIT_TYPE(T)                                                  \
  do {                                                                         \
    switch (img->channels) {                                                   \
    case 1:                                                                    \
      IMGSTAT_SPLIT(T, 1);                                                     \
      break;                                                                   \
    case 2:                                                                    \
      IMGSTAT_SPLIT(T, 2);                                                     \
      break;                                                                   \
    case 3:                                                                    \
      IMGSTAT_SPLIT(T, 3);                                                     \
      break;                                                                   \
    case 4:                                                                    \
      IMGSTAT_SPLIT(T, 4);                                                     \
      break;                                                                   \
    default: /* bands: any count up to IMGSTAT_MAX_CHANNELS */                 \
      IMGSTAT_SPLIT_BANDS(T);                                                  \
      break;                                                                   \
    }                                                                          \
  } while (0)

void ist_pixels_split(imgstat_image *img, const void *interleaved, uint32_t y,
                      size_t x0, size_t n, size_t step) {
  switch (img->sample) {
  case IMGSTAT_U8:
    IMGSTAT_SPLIT_TYPE(uint8_t);
    break;
  case IMGSTAT_U16:
    IMGSTAT_SPLIT_TYPE(uint16_t);
    break;
  case IMGSTAT_F32:
    IMGSTAT_SPLIT_TYPE(float);
    break;
  }
}

void ist_pixels_split_image(imgstat_image *img, const void *interleaved) {
  size_t w = img->width;
  if (ist_image_is_dense(img)) {
    /* The planes are rows of w * height samples. */
    ist_pixels_split(img, interleaved, 0, 0, w * img->height, 1);
    return;
  }
  size_t pixel = (size_t)img->channels * (size_t)img->sample;
  for (uint32_t y = 0; y < img->height; y++)
    ist_pixels_split(img, (const unsigned char *)interleaved + y * w * pixel, y,
                     0, w, 1);
}

void imgstat_image_free(imgstat_image *img) {
  if (!img)
    return;
  if (!img->borrowed)
    free(img->data);
  free(img->band_names);
  memset(img, 0, sizeof *img);
}

char *imgstat_band_names_dup(const char *names, int channels) {
  if (!names)
    return NULL;
  size_t n = 0;
  for (int c = 0; c < channels; c++)
    n += strlen(names + n) + 1;
  char *copy = malloc(n ? n : 1);
  if (copy)
    memcpy(copy, names, n);
  return copy;
}

const char *imgstat_band_name(const char *names, int channels, int c) {
  if (!names || c < 0 || c >= channels)
    return "";
  for (int k = 0; k < c; k++)
    names += strlen(names) + 1;
  return names;
}

/* "1".."IMGSTAT_MAX_CHANNELS" and "5-band".."N-band": written once, on
 * first use, then read only. */
static char band_names[IMGSTAT_MAX_CHANNELS][8];
static char layout_names[IMGSTAT_MAX_CHANNELS][16];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_init(void) {
  static const char *const small[4] = {"Y", "YA", "RGB", "RGBA"};
  for (int c = 0; c < IMGSTAT_MAX_CHANNELS; c++) {
    snprintf(band_names[c], sizeof band_names[c], "%d", c + 1);
    if (c < 4)
      snprintf(layout_names[c], sizeof layout_names[c], "%s", small[c]);
    else
      snprintf(layout_names[c], sizeof layout_names[c], "%d-band", c + 1);
  }
}

const char *imgstat_channel_name(int channels, int c) {
  static const char *const names[4][4] = {
      {"Y"}, {"Y", "A"}, {"R", "G", "B"}, {"R", "G", "B", "A"}};
  if (channels < 1 || channels > IMGSTAT_MAX_CHANNELS || c < 0 || c >= channels)
    return "?";
  if (channels <= 4)
    return names[channels - 1][c];
  pthread_once(&names_once, names_init);
  return band_names[c];
}

const char *imgstat_layout_name(int channels) {
  if (channels < 1 || channels > IMGSTAT_MAX_CHANNELS)
    return "?";
  pthread_once(&names_once, names_init);
  return layout_names[channels - 1];
}

const char *imgstat_colour_channel_name(imgstat_colour colour, int channels,
                                        int c) {
  static const char *const cmyk[4] = {"C", "M", "Y", "K"};
  static const char *const lab[3] = {"L", "a", "b"};
  if (colour == IMGSTAT_COLOUR_CMYK)
    return channels == 4 && c >= 0 && c < 4 ? cmyk[c] : "?";
  if (colour == IMGSTAT_COLOUR_LAB)
    return channels == 3 && c >= 0 && c < 3 ? lab[c] : "?";
  if (colour == IMGSTAT_COLOUR_BANDS) /* the names of 5 and more bands */
    return c >= 0 && c < channels
               ? imgstat_channel_name(IMGSTAT_MAX_CHANNELS, c)
               : "?";
  return imgstat_channel_name(channels, c);
}

const char *imgstat_colour_layout_name(imgstat_colour colour, int channels) {
  if (colour == IMGSTAT_COLOUR_CMYK)
    return channels == 4 ? "CMYK" : "?";
  if (colour == IMGSTAT_COLOUR_LAB)
    return channels == 3 ? "Lab" : "?";
  if (colour == IMGSTAT_COLOUR_BANDS)
    return channels == 3 ? "3-band" : channels == 4 ? "4-band" : "?";
  return imgstat_layout_name(channels);
}

int imgstat_sample_depth(imgstat_sample s) { return (int)s * 8; }
