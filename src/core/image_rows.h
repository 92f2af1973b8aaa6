/*
 * Private to the library: the rows of an image's planes (its stride), for
 * every consumer that walks the samples, and the dense copy for code that
 * needs contiguous planes (the GPU wrappers); the size arithmetic, the pixel
 * limit and the copy of interleaved pixels into planes that the image's
 * allocation (image.c) and the decoders (src/io) share.
 */
#ifndef IST_IMAGE_ROWS_H
#define IST_IMAGE_ROWS_H

#include "imgstat/imgstat.h"

#include <stddef.h>
#include <stdint.h>

/* Bytes of one row's samples. */
static inline size_t ist_row_bytes(const imgstat_image *img) {
  return (size_t)img->width * (size_t)img->sample;
}

/* Bytes from one row to the next (stride 0 is a dense plane). */
static inline size_t ist_image_stride(const imgstat_image *img) {
  return img->stride ? img->stride : ist_row_bytes(img);
}

/* Whether each plane's rows follow each other with no gap, so that a plane
 * is width * height samples in a row (the fast paths). */
static inline int ist_image_is_dense(const imgstat_image *img) {
  return ist_image_stride(img) == ist_row_bytes(img);
}

/* The first sample of row y of plane c. */
static inline void *ist_image_row(const imgstat_image *img, int c, uint32_t y) {
  return (unsigned char *)img->planes[c] + (size_t)y * ist_image_stride(img);
}

/* *dense = img when its planes are dense; otherwise a dense copy made in
 * *tmp (free with imgstat_image_free), *dense = tmp. *tmp is zeroed first,
 * so freeing it is always right. */
imgstat_status ist_image_dense(const imgstat_image *img, imgstat_image *tmp,
                               const imgstat_image **dense, imgstat_error *err);

/* *out = a * b; returns 0 (and leaves *out alone) when that overflows. */
int ist_size_mul(size_t a, size_t b, size_t *out);

/* Refuses a width x height image over max_pixels (0: the default) or over
 * IMGSTAT_MAX_PIXELS_LIMIT with the same message as imgstat_image_alloc, so
 * decoders can check a header before they allocate anything. */
imgstat_status ist_pixels_check(uint32_t width, uint32_t height,
                                uint64_t max_pixels, imgstat_error *err);

/* The partial of the valid samples (imgstat_valid) of channel c of a u8 or
 * u16 image in rows y0 .. y1 - 1, under v's mask or none (not a pixel
 * list), with raster positions, and the nodata samples inside the region
 * into *nodata: the figures imgstat_valid_compact, a scan and
 * imgstat_valid_raster_pair give, in one pass (src/core/valid.c). */
void ist_valid_scan_rows(const imgstat_image *img, int c,
                         const imgstat_valid *v, uint32_t y0, uint32_t y1,
                         imgstat_partial *p, uint64_t *nodata);

/* The valid-sample figures of pixel-interleaved u8 or u16 samples, reduced
 * where they lie (src/core/interleaved.c): a thread's accumulator over runs
 * of pixels, each run starting at band 0. */
typedef struct ist_ilv ist_ilv;

/* Whether this CPU runs the vector pieces (AVX2). */
int ist_ilv_simd(void);

/* An accumulator of `channels` bands of sample (u8 or u16; int16: u16
 * samples stored with the top bit flipped, flipped here as the planes hold
 * them) under v's nodata values (its mask and pixel list are not for
 * here); simd 0 takes every sample one at a time (the same figures). NULL
 * when there is no memory. */
ist_ilv *ist_ilv_create(int channels, imgstat_sample sample, int int16,
                        const imgstat_valid *v, int simd);

/* Reduces n pixels at px (n * channels samples one after the other) into
 * a: pixel i at raster index first + i / cols * width + i % cols (rows of
 * cols pixels of an image width wide). */
void ist_ilv_scan(ist_ilv *a, const void *px, uint64_t n, uint64_t first,
                  uint32_t cols, uint32_t width);

/* Merges a's figures into part[c] (imgstat_partial_merge) and adds its
 * nodata samples to nodata[c], for each band c. */
void ist_ilv_finish(const ist_ilv *a, imgstat_partial *part, uint64_t *nodata);

void ist_ilv_free(ist_ilv *a);

/* Copies n interleaved pixels (img->channels samples of img->sample type
 * each) into img's planes: pixel i goes to row y, column x0 + i * step. In
 * a dense image, y = 0 and n up to width * height address the whole
 * plane. */
void ist_pixels_split(imgstat_image *img, const void *interleaved, uint32_t y,
                      size_t x0, size_t n, size_t step);

/* Copies a whole interleaved image (width * height pixels, row after row)
 * into img's planes, with its stride. */
void ist_pixels_split_image(imgstat_image *img, const void *interleaved);

/* Bytes of scratch ist_partial_scan_rows needs for a strided plane: one
 * scan chunk of the widest sample. */
#define IST_SCAN_SCRATCH_BYTES ((size_t)65536 * 4)

/* imgstat_partial_scan over raster samples first .. first + n - 1 of a plane
 * whose rows of width samples are stride bytes apart. A dense plane is
 * scanned in place; a strided one chunk by chunk, each chunk's samples
 * gathered into scratch (IST_SCAN_SCRATCH_BYTES) first, so that the chunks,
 * and so the bits, are those of the dense plane. k: NULL for a whole scan
 * (the plane's float shift K found and added back, float_order.h); else
 * float means stay relative to *k (the caller merges such partials by the
 * chunk tree and adds K: the CPU backend's chunks). */
void ist_partial_scan_rows(imgstat_partial *p, const void *plane, size_t stride,
                           uint32_t width, imgstat_sample sample,
                           uint64_t first, uint64_t n, void *scratch,
                           const double *k);

#endif
