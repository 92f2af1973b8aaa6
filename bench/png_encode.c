/*
 * PNG encoding benchmark (docs/benchmarks.md, "PNG encoding"): decodes an
 * image, then writes it as PNG at each deflate level with each writer the
 * build has (libpng + zlib; libdeflate), RUNS times each, and prints the
 * median time and the size. Usage: bench_png IMAGE [RUNS] [OUT_DIR]
 * Each level's outputs are kept in OUT_DIR (default /tmp) as
 * bench-<writer>-<level>.png for the decode checks.
 */
#include "imgstat/imgstat.h"
#include "imgstat/norm.h"
#include "io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_png IMAGE [RUNS] [OUT_DIR]\n");
    return 2;
  }
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  const char *dir = argc > 3 ? argv[3] : "/tmp";
  if (runs < 1 || runs > 99)
    runs = 5;
  imgstat_image img;
  imgstat_error err;
  if (imgstat_image_load(argv[1], NULL, &img, &err) != IMGSTAT_OK) {
    fprintf(stderr, "bench_png: %s: %s\n", argv[1], err.message);
    return 1;
  }
  printf("%s: %ux%u, %d channels, %d-bit; median of %d\n", argv[1], img.width,
         img.height, img.channels, imgstat_sample_depth(img.sample), runs);
  printf("writer\tlevel\tseconds\tMB\n");
  for (int w = 0; w < 2; w++) {
    if (w == 0 && !ist_png_have_libdeflate())
      continue;
    ist_png_writer_libpng = w;
    for (int level = 0; level <= 9; level++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/bench-%s-%d.png", dir,
               w ? "libpng" : "libdeflate", level);
      imgstat_write_options wo;
      memset(&wo, 0, sizeof wo);
      wo.png_level = IMGSTAT_PNG_LEVEL(level);
      double t[99];
      for (int r = 0; r < runs; r++) {
        double t0 = now();
        if (imgstat_image_write(path, &img, &wo, &err) != IMGSTAT_OK) {
          fprintf(stderr, "bench_png: %s\n", err.message);
          return 1;
        }
        t[r] = now() - t0;
      }
      qsort(t, (size_t)runs, sizeof *t, by_value);
      struct stat sb;
      stat(path, &sb);
      printf("%s\t%d\t%.4f\t%.3f\n", w ? "libpng" : "libdeflate", level,
             t[runs / 2], sb.st_size / 1e6);
      fflush(stdout);
    }
  }
  imgstat_image_free(&img);
  return 0;
}
