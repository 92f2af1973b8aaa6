/*
 * Throughput of the CPU backend against memcpy of the same bytes.
 *
 *   bench_cpu [RUNS]      (default 21; the median is reported)
 *
 * 12 MP (4000x3000) RGB images of random samples, u8, u16 and f32, planes in
 * one allocation as the loader makes them. Prints a Markdown table of GB/s of
 * decoded pixel bytes. Not a ctest test: timings need a quiet machine.
 */
#include "imgstat/imgstat.h"
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_W 4000u
#define BENCH_H 3000u
#define MAX_RUNS 1001

typedef struct copy_arg {
  void *dst;
  const void *src;
  size_t n;
} copy_arg;

static void *copy_thread(void *p) {
  copy_arg *a = p;
  memcpy(a->dst, a->src, a->n);
  return NULL;
}

/* memcpy split in two halves on two threads, to compare with -j 2. */
static void memcpy2(void *dst, const void *src, size_t n) {
  size_t half = n / 2;
  copy_arg a = {(char *)dst + half, (const char *)src + half, n - half};
  pthread_t t;
  if (pthread_create(&t, NULL, copy_thread, &a) != 0) {
    memcpy(dst, src, n);
    return;
  }
  memcpy(dst, src, half);
  pthread_join(t, NULL);
}

typedef enum { KIND_STATS, KIND_MEMCPY, KIND_MEMCPY2 } kind;

static double median_time(kind k, const imgstat_image *img, void *dst,
                          size_t bytes, int threads, int runs) {
  double t[MAX_RUNS];
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  for (int r = -2; r < runs; r++) { /* two warm-up runs */
    double t0 = test_now();
    if (k == KIND_STATS) {
      if (imgstat_cpu_stats(img, threads, out, &err) != IMGSTAT_OK) {
        fprintf(stderr, "bench_cpu: %s\n", err.message);
        exit(1);
      }
    } else if (k == KIND_MEMCPY) {
      memcpy(dst, img->data, bytes);
    } else {
      memcpy2(dst, img->data, bytes);
    }
    double t1 = test_now();
    if (r >= 0)
      t[r] = t1 - t0;
  }
  qsort(t, (size_t)runs, sizeof t[0], test_cmp_double);
  return t[runs / 2];
}

static void bench_image(imgstat_sample sample, const char *name, int runs) {
  imgstat_image img;
  memset(&img, 0, sizeof img);
  img.width = BENCH_W;
  img.height = BENCH_H;
  img.channels = 3;
  img.sample = sample;
  size_t plane = (size_t)BENCH_W * BENCH_H * (size_t)sample;
  size_t bytes = plane * 3;
  img.data = malloc(bytes);
  void *dst = malloc(bytes);
  if (!img.data || !dst) {
    fprintf(stderr, "bench_cpu: out of memory\n");
    exit(1);
  }
  for (int c = 0; c < 3; c++)
    img.planes[c] = (char *)img.data + (size_t)c * plane;
  uint64_t seed = 0x1234567u + (uint64_t)sample;
  size_t n = bytes / (size_t)sample;
  for (size_t i = 0; i < n; i++) {
    uint64_t r = test_rand(&seed);
    if (sample == IMGSTAT_U8)
      ((uint8_t *)img.data)[i] = (uint8_t)(r >> 56);
    else if (sample == IMGSTAT_U16)
      ((uint16_t *)img.data)[i] = (uint16_t)(r >> 48);
    else
      ((float *)img.data)[i] = (float)(r >> 40) / 16777216.0f;
  }
  memset(dst, 1, bytes); /* fault the destination in before timing */

  struct {
    const char *label;
    kind k;
    int threads;
  } rows[] = {{"imgstat_cpu_stats -j 1", KIND_STATS, 1},
              {"imgstat_cpu_stats -j 2", KIND_STATS, 2},
              {"memcpy, 1 thread", KIND_MEMCPY, 1},
              {"memcpy, 2 threads", KIND_MEMCPY2, 2}};
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    double t = median_time(rows[r].k, &img, dst, bytes, rows[r].threads, runs);
    printf("| %-6s | %-24s | %7.2f | %6.2f |\n", name, rows[r].label, t * 1e3,
           (double)bytes / t * 1e-9);
  }
  free(img.data);
  free(dst);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 21;
  if (runs < 1 || runs > MAX_RUNS) {
    fprintf(stderr, "usage: bench_cpu [RUNS 1..%d]\n", MAX_RUNS);
    return 2;
  }
  printf("12 MP (%ux%u) RGB, random samples, median of %d runs\n\n", BENCH_W,
         BENCH_H, runs);
  printf("| image  | what                     | ms      | GB/s   |\n");
  printf("|--------|--------------------------|---------|--------|\n");
  bench_image(IMGSTAT_U8, "RGB8", runs);
  bench_image(IMGSTAT_U16, "RGB16", runs);
  bench_image(IMGSTAT_F32, "RGBf32", runs);
  return 0;
}
