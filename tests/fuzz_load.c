/*
 * libFuzzer target over loading and statistics: whatever the bytes, decoding
 * must fail cleanly or give an image whose statistics can be computed, with no
 * memory error or undefined behaviour (the build adds ASan and UBSan).
 *
 * Build: cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DIMGSTAT_FUZZ=ON
 *        -DIMGSTAT_ENABLE_CUDA=OFF && cmake --build build-fuzz --target
 *        fuzz_load
 * Run:   tests/fuzz_ci.sh build-fuzz SECONDS (as CI does, reproducibly), or
 *        build-fuzz/tests/fuzz_load -max_total_time=600 NEW_DIR samples
 *        tests/data/pngsuite tests/data/formats (a random seed)
 */
#include "imgstat.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* 2^24 pixels keeps one input under ~256 MB even as 4-channel float, so
   * a lying header cannot exhaust the fuzzer's memory limit. */
  imgstat_load_options opts = {UINT64_C(1) << 24};
  imgstat_image img;
  imgstat_error err;
  memset(&img, 0, sizeof img);
  memset(&err, 0, sizeof err);

  if (imgstat_image_load_memory(data, size, &opts, &img, &err) != IMGSTAT_OK) {
    /* A rejection must say why. */
    if (err.message[0] == '\0')
      __builtin_trap();
    return 0;
  }

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
