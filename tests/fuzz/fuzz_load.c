/*
 * libFuzzer targets over loading and statistics: whatever the bytes, decoding
 * must fail cleanly or give an image whose statistics can be computed, with no
 * memory error or undefined behaviour (the build adds ASan and UBSan).
 *
 * One source, several targets (tests/CMakeLists.txt):
 *  - fuzz_load: every format, as imgstat_image_load_memory sniffs it;
 *  - fuzz_png, fuzz_jpeg, fuzz_bmp (src/io/bmp.c), fuzz_gif, fuzz_psd,
 *    fuzz_hdr, fuzz_pnm:
 *    compiled with -DFUZZ_KIND=IMGSTAT_KIND_..., they only decode inputs whose
 *    signature the loader sniffs as that format (the library's own
 *    ist_kind_sniff decides) and refuse the others (return -1: not kept
 *    in the corpus), so every input they keep reaches that decoder;
 *  - fuzz_tiff, fuzz_fits, fuzz_npy: the same for TIFF (libtiff), FITS
 *    (cfitsio) and .npy (ours); fuzz_pnm covers the plain PNM parser too
 *    (P1-P4 are IMGSTAT_KIND_PNM); WebP and PFM are fuzz_load's;
 *  - fuzz_tga: the same for TGA (src/io/tga.c), which has no signature:
 *    inputs whose 18-byte header ist_tga_sniff takes for a TGA's.
 * An input whose decoder reduces its image as it reads it (a TIFF page of
 * 8- or 16-bit samples: ist_decoder_streams) is also read that way
 * (ist_decoder_stats, as the statistics item of the run reads it) on a
 * decoder of its own: the two reads must agree on the verdict, and where
 * both succeed on every figure of every channel (count, sum, sum of
 * squares, min and max and their positions, nodata samples) under the
 * file's nodata value, or one taken from the image. It is read twice:
 * with the library's sizes, then with tiny ones
 * (ist_decoder_stream_test_sizes): strips or tiles on threads from 1 byte
 * of samples, a chunk's rows put into planes 1 to 4096 bytes at a time
 * (a hash of the input picks the size). A TIFF is
 * also decoded again with its chunks on threads from 1 byte: the same
 * verdict and samples as the decode on one thread. (On small pages the
 * helper threads take chunks only when they start before the calling
 * thread has read them all: some inputs, not all.)
 * A JPEG that the GPU path may take also goes through the checks before
 * nvJPEG (src/io/jpeg_scan.c, both levels): when the full scan finds it
 * sound, the CPU decoder must decode it (a refusal as corrupt traps).
 * Each input is capped at FUZZ_MAX_PIXELS pixels and FUZZ_MAX_MEMORY decoded
 * bytes, so a lying header cannot exhaust the fuzzer's memory limit.
 *
 * Build: cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DIMGSTAT_FUZZ=ON
 *        -DIMGSTAT_ENABLE_CUDA=OFF && cmake --build build-fuzz --target
 *        fuzz_all
 * Run:   tests/fuzz/fuzz_ci.sh build-fuzz SECONDS (every target as CI does,
 *        reproducibly), or build-fuzz/tests/fuzz_png -max_total_time=600
 *        NEW_DIR tests/data/pngsuite (a random seed); docs/fuzzing.md.
 * Without -DIMGSTAT_FUZZ=ON the same source is linked with
 * tests/fuzz/fuzz_replay.c into replay_load, which runs given files through it
 * (ctest, and tests/tools/valgrind.sh under valgrind).
 */
#include "imgstat/imgstat.h"
#include "io.h"
#include "io_engine.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef FUZZ_MAX_PIXELS
#define FUZZ_MAX_PIXELS (UINT64_C(1) << 24)
#endif
#ifndef FUZZ_MAX_MEMORY
#define FUZZ_MAX_MEMORY (UINT64_C(512) << 20)
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The scanner of --jpeg-check on the bytes nvJPEG would get, and the CPU
 * decoder's verdict on a file it finds sound. */
static void jpeg_check(const uint8_t *data, size_t size,
                       const imgstat_load_options *opts) {
  imgstat_decoder *d = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_decoder_open_memory(data, size, opts, &d, &err) != IMGSTAT_OK)
    return;
  const unsigned char *bytes;
  size_t n = 0;
  int sound = 0;
  if (ist_jpeg_gpu_input(d, &bytes, &n)) {
    (void)ist_jpeg_scan(bytes, n, 0); /* markers: only memory safety */
    sound = ist_jpeg_scan(bytes, n, 1);
  }
  if (sound) {
    const imgstat_header *h = imgstat_decoder_header(d);
    imgstat_image img;
    imgstat_status s = imgstat_image_alloc(&img, h->width, h->height,
                                           h->channels, h->sample, 0, &err);
    if (s == IMGSTAT_OK) {
      s = imgstat_decoder_read(d, &img, &err);
      imgstat_image_free(&img);
    }
    if (s == IMGSTAT_ERR_FORMAT)
      __builtin_trap(); /* the scanner accepted what libjpeg refuses */
  }
  imgstat_decoder_close(d);
}

/* FNV-1a of the input: its choices of sizes and nodata. */
static uint64_t input_hash(const uint8_t *data, size_t size) {
  uint64_t h = UINT64_C(14695981039346656037);
  for (size_t i = 0; i < size; i++)
    h = (h ^ data[i]) * UINT64_C(1099511628211);
  return h;
}

/* The statistics of the input as it is read (with the library's sizes, or
 * tiny ones: tiny_group bytes of rows a group, threads from 1 byte) under
 * vp against want and want_nodata, the figures of the decoded image (NULL:
 * the decode failed with status decoded). */
static void streamed_read(const uint8_t *data, size_t size,
                          const imgstat_load_options *opts,
                          const imgstat_valid *vp, size_t tiny_group,
                          int channels, const imgstat_partial *want,
                          const uint64_t *want_nodata, imgstat_status decoded) {
  imgstat_decoder *d = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_decoder_open_memory(data, size, opts, &d, &err) != IMGSTAT_OK)
    return;
  if (!ist_decoder_streams(d)) {
    imgstat_decoder_close(d);
    return;
  }
  if (tiny_group)
    ist_decoder_stream_test_sizes(1, tiny_group);
  imgstat_partial got[IMGSTAT_MAX_CHANNELS];
  uint64_t got_nodata[IMGSTAT_MAX_CHANNELS];
  imgstat_status s = ist_decoder_stats(d, vp, got, got_nodata, &err);
  ist_decoder_stream_test_sizes(0, 0);
  imgstat_decoder_close(d);
  if (s != IMGSTAT_OK && err.message[0] == '\0')
    __builtin_trap(); /* a refusal says why */
  if (s == IMGSTAT_ERR_NOMEM || decoded == IMGSTAT_ERR_NOMEM)
    return;
  if ((s == IMGSTAT_OK) != (want != NULL))
    __builtin_trap(); /* one read takes what the other refuses */
  for (int c = 0; want && c < channels; c++) {
    const imgstat_partial *a = &got[c], *b = &want[c];
    if (a->count != b->count || a->nan_count != b->nan_count ||
        a->inf_count != b->inf_count || a->sum != b->sum ||
        a->sumsq != b->sumsq || got_nodata[c] != want_nodata[c] ||
        (a->count &&
         (a->min != b->min || a->max != b->max ||
          a->min_index != b->min_index || a->max_index != b->max_index)))
      __builtin_trap(); /* the figures differ */
  }
}

/* A TIFF decoded again with its chunks on threads from 1 byte of samples
 * (ist_decoder_stream_test_sizes): the verdict and samples of img, the
 * decode on the calling thread alone (NULL: it failed with status
 * decoded). */
static void threaded_decode(const uint8_t *data, size_t size,
                            const imgstat_load_options *opts, size_t tiny,
                            const imgstat_image *img, imgstat_status decoded) {
  imgstat_decoder *d = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (imgstat_decoder_open_memory(data, size, opts, &d, &err) != IMGSTAT_OK)
    return;
  imgstat_image again;
  memset(&again, 0, sizeof again);
  ist_decoder_stream_test_sizes(1, tiny);
  imgstat_status s = imgstat_decoder_load(d, &again, &err);
  ist_decoder_stream_test_sizes(0, 0);
  if (s == IMGSTAT_ERR_NOMEM || decoded == IMGSTAT_ERR_NOMEM) {
    imgstat_image_free(&again);
    return;
  }
  if ((s == IMGSTAT_OK) != (img != NULL))
    __builtin_trap(); /* the threads take what one thread refuses */
  if (img) {
    if (again.width != img->width || again.height != img->height ||
        again.channels != img->channels || again.sample != img->sample)
      __builtin_trap();
    size_t row = (size_t)img->width * (size_t)img->sample;
    size_t sa = img->stride ? img->stride : row;
    size_t sb = again.stride ? again.stride : row;
    for (int c = 0; c < img->channels; c++)
      for (uint32_t y = 0; y < img->height; y++)
        if (memcmp((const uint8_t *)img->planes[c] + y * sa,
                   (const uint8_t *)again.planes[c] + y * sb, row) != 0)
          __builtin_trap(); /* the samples differ */
  }
  imgstat_image_free(&again);
}

/* The input read as statistics alone, twice (the library's sizes, then
 * tiny ones), against the decoded image img (NULL: the decode failed with
 * status decoded). */
static void streamed_check(const uint8_t *data, size_t size,
                           const imgstat_load_options *opts,
                           const imgstat_image *img, imgstat_status decoded) {
  uint64_t hash = input_hash(data, size);
  /* the file's nodata value, as the run applies it, or else (half the
   * inputs) each channel's first sample */
  imgstat_valid v;
  memset(&v, 0, sizeof v);
  const imgstat_valid *vp = NULL;
  int streams =
      img && (img->sample == IMGSTAT_U8 || img->sample == IMGSTAT_U16);
  for (int c = 0; streams && c < img->channels; c++) {
    double stored;
    imgstat_error e2;
    if (img->has_nodata) {
      if (imgstat_valid_stored_nodata(img->nodata, img, &stored, &e2) !=
          IMGSTAT_OK)
        continue;
    } else if (hash & 1) {
      stored = img->sample == IMGSTAT_U8
                   ? ((const uint8_t *)img->planes[c])[0]
                   : ((const uint16_t *)img->planes[c])[0];
    } else {
      continue;
    }
    v.has_nodata[c] = 1;
    v.nodata[c] = stored;
    vp = &v;
  }
  imgstat_partial want[IMGSTAT_MAX_CHANNELS];
  uint64_t want_nodata[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  memset(&err, 0, sizeof err);
  if (streams && imgstat_cpu_valid_stats(img, vp, 1, want, want_nodata, &err) !=
                     IMGSTAT_OK)
    __builtin_trap();
  /* groups of 1 to 4096 bytes of rows */
  size_t tiny = 1 + (size_t)((hash >> 8) % 4096);
  if (ist_kind_sniff(data, size < IST_SNIFF_BYTES ? size : IST_SNIFF_BYTES) ==
      IMGSTAT_KIND_TIFF)
    threaded_decode(data, size, opts, tiny, img, decoded);
  for (int pass = 0; pass < 2; pass++)
    streamed_read(data, size, opts, vp, pass ? tiny : 0,
                  img ? img->channels : 0, streams ? want : NULL,
                  streams ? want_nodata : NULL, decoded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
#ifdef FUZZ_KIND
  /* As decoder_start in src/io/load.c sniffs: its first bytes. */
  if (ist_kind_sniff(data, size < IST_SNIFF_BYTES ? size : IST_SNIFF_BYTES) !=
      FUZZ_KIND)
    return -1;
#endif
  imgstat_load_options opts;
  memset(&opts, 0, sizeof opts);
  opts.max_pixels = FUZZ_MAX_PIXELS;
  opts.max_memory = FUZZ_MAX_MEMORY;
  imgstat_image img;
  imgstat_error err;
  memset(&img, 0, sizeof img);
  memset(&err, 0, sizeof err);
  if (ist_kind_sniff(data, size < 16 ? size : 16) == IMGSTAT_KIND_JPEG)
    jpeg_check(data, size, &opts);

  imgstat_status decoded =
      imgstat_image_load_memory(data, size, &opts, &img, &err);
  if (decoded != IMGSTAT_OK) {
    /* A rejection must say why, and leave nothing allocated. */
    if (err.message[0] == '\0' || img.data != NULL)
      __builtin_trap();
    streamed_check(data, size, &opts, NULL, decoded);
    return 0;
  }
  if (img.width == 0 || img.height == 0 || img.channels < 1 ||
      img.channels > IMGSTAT_MAX_CHANNELS ||
      (uint64_t)img.width * img.height > FUZZ_MAX_PIXELS || !img.format)
    __builtin_trap();

  streamed_check(data, size, &opts, &img, decoded);

  imgstat_partial partial[IMGSTAT_MAX_CHANNELS];
  if (imgstat_cpu_stats(&img, 1, partial, &err) == IMGSTAT_OK) {
    for (int c = 0; c < img.channels; c++) {
      imgstat_figures f;
      for (int ddof = 0; ddof <= 1; ddof++)
        imgstat_figures_compute(&partial[c], img.sample, img.width, ddof, &f);
      /* Positions must lie inside the image. */
      if (f.has_values && (f.min_x >= img.width || f.min_y >= img.height ||
                           f.max_x >= img.width || f.max_y >= img.height))
        __builtin_trap();
    }
  }
  imgstat_image_free(&img);
  return 0;
}
