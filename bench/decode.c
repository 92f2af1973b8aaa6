/*
 * Decoding benchmark: times imgstat_image_load on each file given (median
 * of N runs), then a naive per-channel sum pass, and for JPEG also the
 * stb_image path, so TurboJPEG and stb can be compared on the same file.
 *
 *   bench_load [-n RUNS] FILE...
 */
#include "imgstat/imgstat.h"
#include "io.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, test_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A naive statistics pass, to see decode against a full scan. */
static double naive_sum(const imgstat_image *img) {
  size_t n = (size_t)img->width * img->height;
  double total = 0;
  for (int c = 0; c < img->channels; c++) {
    uint64_t s = 0;
    if (img->sample == IMGSTAT_U8)
      for (size_t i = 0; i < n; i++)
        s += ((const uint8_t *)img->planes[c])[i];
    else if (img->sample == IMGSTAT_U16)
      for (size_t i = 0; i < n; i++)
        s += ((const uint16_t *)img->planes[c])[i];
    else
      for (size_t i = 0; i < n; i++)
        total += ((const float *)img->planes[c])[i];
    total += (double)s;
  }
  return total;
}

/* The stb_image path on a file in memory (for JPEG against TurboJPEG). */
static imgstat_status load_stb(const unsigned char *data, size_t size,
                               imgstat_image *img, imgstat_error *err) {
  ist_source src = {0};
  src.data = data;
  src.size = size;
  ist_kind kind =
      ist_kind_sniff(data, size < IST_SNIFF_BYTES ? size : IST_SNIFF_BYTES);
  const ist_limits lim = {IMGSTAT_DEFAULT_MAX_PIXELS,
                          IMGSTAT_DEFAULT_MAX_MEMORY};
  return ist_stb_decode(&src, kind, &lim, img, err);
}

int main(int argc, char **argv) {
  int runs = 7, first = 1;
  if (argc > 2 && strcmp(argv[1], "-n") == 0) {
    runs = atoi(argv[2]);
    first = 3;
  }
  if (runs < 1 || runs > 100 || first >= argc) {
    fprintf(stderr, "usage: bench_load [-n RUNS] FILE...\n");
    return 2;
  }
  double *t = malloc(sizeof(double) * (size_t)runs);
  double *u = malloc(sizeof(double) * (size_t)runs);
  for (int a = first; a < argc; a++) {
    imgstat_image img;
    imgstat_error err = {0};
    double check = 0;
    for (int r = 0; r < runs; r++) {
      double t0 = test_now();
      if (imgstat_image_load(argv[a], NULL, &img, &err) != IMGSTAT_OK) {
        fprintf(stderr, "bench_load: %s: %s\n", argv[a], err.message);
        return 1;
      }
      double t1 = test_now();
      check += naive_sum(&img);
      u[r] = test_now() - t1;
      t[r] = t1 - t0;
      if (r + 1 < runs)
        imgstat_image_free(&img);
    }
    double mb = (double)imgstat_image_plane_bytes(&img) * img.channels / 1e6;
    printf("%s\t%s %ux%u %s %d-bit\tdecode %.4f s (%.0f MB/s)\tnaive sum "
           "%.4f s\t(check %.0f)\n",
           argv[a], img.format, img.width, img.height,
           imgstat_layout_name(img.channels), imgstat_sample_depth(img.sample),
           median(t, runs), mb / median(t, runs), median(u, runs), check);
    int is_jpeg = strcmp(img.format, "JPEG") == 0;
    imgstat_image_free(&img);

    if (is_jpeg) {
      FILE *f = fopen(argv[a], "rb");
      if (!f)
        continue;
      fseek(f, 0, SEEK_END);
      size_t size = (size_t)ftell(f);
      fseek(f, 0, SEEK_SET);
      unsigned char *buf = malloc(size);
      if (fread(buf, 1, size, f) != size) {
        fclose(f);
        free(buf);
        continue;
      }
      fclose(f);
      for (int r = 0; r < runs; r++) {
        double t0 = test_now();
        if (load_stb(buf, size, &img, &err) != IMGSTAT_OK) {
          fprintf(stderr, "bench_load: %s (stb): %s\n", argv[a], err.message);
          break;
        }
        t[r] = test_now() - t0;
        imgstat_image_free(&img);
      }
      printf("%s\tstb_image decode %.4f s (file already in memory)\n", argv[a],
             median(t, runs));
      free(buf);
    }
  }
  free(t);
  free(u);
  return 0;
}
