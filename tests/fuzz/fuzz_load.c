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

  if (imgstat_image_load_memory(data, size, &opts, &img, &err) != IMGSTAT_OK) {
    /* A rejection must say why, and leave nothing allocated. */
    if (err.message[0] == '\0' || img.data != NULL)
      __builtin_trap();
    return 0;
  }
  if (img.width == 0 || img.height == 0 || img.channels < 1 ||
      img.channels > IMGSTAT_MAX_CHANNELS ||
      (uint64_t)img.width * img.height > FUZZ_MAX_PIXELS || !img.format)
    __builtin_trap();

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
