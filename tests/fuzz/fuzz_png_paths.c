/*
 * libFuzzer target over the libdeflate PNG decoder (src/io/png_fast.c): each
 * input that sniffs as PNG is decoded by it (libpng taking what it declines)
 * and by libpng alone; the two must give the same verdict and message and,
 * when they decode, the same samples. So an input the fast decoder accepts
 * where libpng would refuse, or decodes differently, traps, as does any
 * memory error or undefined behaviour (the build adds ASan and UBSan).
 * Limits as fuzz_png's (tests/CMakeLists.txt).
 *
 * Build and run: as tests/fuzz/fuzz_load.c says (fuzz_all builds it; it is
 * tests/fuzz/fuzz_ci.sh's fuzz_png_paths); without -DIMGSTAT_FUZZ=ON it is
 * linked with tests/fuzz/fuzz_replay.c into replay_png_paths (ctest).
 */
#include "imgstat/imgstat.h"
#include "io.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_MAX_PIXELS
#define FUZZ_MAX_PIXELS (UINT64_C(1) << 16)
#endif
#ifndef FUZZ_MAX_MEMORY
#define FUZZ_MAX_MEMORY (UINT64_C(512) << 20)
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct decoded {
  imgstat_status status;
  imgstat_error err;
  imgstat_image img;
} decoded;

static void decode(const uint8_t *data, size_t size, int libpng, decoded *out) {
  imgstat_load_options opts;
  memset(&opts, 0, sizeof opts);
  opts.max_pixels = FUZZ_MAX_PIXELS;
  opts.max_memory = FUZZ_MAX_MEMORY;
  memset(out, 0, sizeof *out);
  ist_png_reader_libpng = libpng;
  out->status =
      imgstat_image_load_memory(data, size, &opts, &out->img, &out->err);
  ist_png_reader_libpng = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (ist_kind_sniff(data, size < IST_SNIFF_BYTES ? size : IST_SNIFF_BYTES) !=
      IMGSTAT_KIND_PNG)
    return -1;
  decoded a, b;
  decode(data, size, 0, &a);
  decode(data, size, 1, &b);
  if (a.status != b.status || strcmp(a.err.message, b.err.message) != 0)
    __builtin_trap(); /* the two decoders' verdicts differ */
  if (a.status == IMGSTAT_OK) {
    if (a.img.width != b.img.width || a.img.height != b.img.height ||
        a.img.channels != b.img.channels || a.img.sample != b.img.sample)
      __builtin_trap(); /* their layouts differ */
    size_t plane = imgstat_image_plane_bytes(&a.img);
    for (int c = 0; c < a.img.channels; c++)
      if (memcmp(a.img.planes[c], b.img.planes[c], plane) != 0)
        __builtin_trap(); /* their samples differ */
  }
  imgstat_image_free(&a.img);
  imgstat_image_free(&b.img);
  return 0;
}
