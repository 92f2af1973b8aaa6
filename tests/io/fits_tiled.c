/*
 * Writes a tile-compressed FITS image with cfitsio, the reference writer of
 * the tiled image convention, for tests/io/fits_check.py and the fuzzers'
 * seeds (tests/data/seeds/README.md):
 *
 *   fits_tiled OUT ALGORITHM BITPIX WIDTH HEIGHT TILE_W TILE_H RAW [QLEVEL]
 *
 * ALGORITHM: RICE_1, GZIP_1, GZIP_2, HCOMPRESS_1 or PLIO_1; BITPIX: 8, 16,
 * 32, -32 or -64; RAW: WIDTH x HEIGHT samples of that type, native byte
 * order, row after row (numpy's tobytes()). QLEVEL (floats): cfitsio's
 * quantization level (0: lossless, the default). Exit 0 or 1 with cfitsio's
 * message.
 */
#include <fitsio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 9) {
    fprintf(stderr, "usage: fits_tiled OUT ALGORITHM BITPIX WIDTH HEIGHT "
                    "TILE_W TILE_H RAW [QLEVEL]\n");
    return 2;
  }
  static const struct {
    const char *name;
    int type;
  } algos[] = {{"RICE_1", RICE_1},
               {"GZIP_1", GZIP_1},
               {"GZIP_2", GZIP_2},
               {"HCOMPRESS_1", HCOMPRESS_1},
               {"PLIO_1", PLIO_1}};
  int algo = -1;
  for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++)
    if (!strcmp(argv[2], algos[i].name))
      algo = algos[i].type;
  int bitpix = atoi(argv[3]);
  long axes[2] = {atol(argv[4]), atol(argv[5])};
  long tile[2] = {atol(argv[6]), atol(argv[7])};
  int type = bitpix == 8     ? TBYTE
             : bitpix == 16  ? TSHORT
             : bitpix == 32  ? TINT
             : bitpix == -32 ? TFLOAT
             : bitpix == -64 ? TDOUBLE
                             : 0;
  size_t size = (size_t)(bitpix < 0 ? -bitpix : bitpix) / 8;
  if (algo < 0 || !type || axes[0] < 1 || axes[1] < 1) {
    fprintf(stderr, "fits_tiled: bad arguments\n");
    return 2;
  }
  size_t n = (size_t)axes[0] * (size_t)axes[1];
  void *data = malloc(n * size);
  FILE *raw = fopen(argv[8], "rb");
  if (!data || !raw || fread(data, size, n, raw) != n) {
    fprintf(stderr, "fits_tiled: cannot read %s\n", argv[8]);
    return 1;
  }
  fclose(raw);
  char path[4096];
  snprintf(path, sizeof path, "!%s", argv[1]);
  fitsfile *f;
  int status = 0;
  fits_create_file(&f, path, &status);
  fits_set_compression_type(f, algo, &status);
  fits_set_tile_dim(f, 2, tile, &status);
  if (argc > 9)
    fits_set_quantize_level(f, (float)atof(argv[9]), &status);
  else if (bitpix < 0)
    fits_set_quantize_level(f, 0.0f, &status);
  fits_create_img(f, bitpix, 2, axes, &status);
  fits_write_img(f, type, 1, (LONGLONG)n, data, &status);
  fits_close_file(f, &status);
  free(data);
  if (status) {
    char text[FLEN_STATUS];
    fits_get_errstatus(status, text);
    fprintf(stderr, "fits_tiled: %s (status %d)\n", text, status);
    return 1;
  }
  return 0;
}
