/*
 * PNG decoding benchmark (docs/benchmarks.md, "PNG decoding"): the files
 * given are read into memory once, then decoded from memory
 * (imgstat_image_load_memory: decode only, no statistics) by the libdeflate
 * decoder (src/io/png_fast.c) and by libpng alone, in turns, ROUNDS times
 * each; every round decodes every file REPEAT times on THREADS threads, each
 * thread taking the next file. With -s, REPEAT is chosen so that a round of
 * libpng takes about SECONDS (one round of each file first). Prints REPEAT
 * and, per decoder, the median round's rate in files/s and decoded MB/s.
 *
 *   bench_png_decode [-t THREADS] [-r ROUNDS] [-n REPEAT | -s SECONDS]
 *                    FILE...
 */
#include "imgstat/imgstat.h"
#include "io.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct input {
  unsigned char *data;
  size_t size;
} input;

static input *inputs;
static size_t n_inputs, n_jobs;
static atomic_size_t next_job;
static atomic_int failures;
static atomic_ullong decoded_bytes;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    size_t j = atomic_fetch_add(&next_job, 1);
    if (j >= n_jobs)
      return NULL;
    const input *in = &inputs[j % n_inputs];
    imgstat_image img;
    imgstat_error err;
    if (imgstat_image_load_memory(in->data, in->size, NULL, &img, &err) !=
        IMGSTAT_OK) {
      if (atomic_fetch_add(&failures, 1) == 0)
        fprintf(stderr, "bench_png_decode: %s\n", err.message);
      continue;
    }
    atomic_fetch_add(&decoded_bytes,
                     (unsigned long long)imgstat_image_plane_bytes(&img) *
                         (unsigned long long)img.channels);
    imgstat_image_free(&img);
  }
}

/* One round on threads threads: its seconds. */
static double round_time(int threads) {
  pthread_t tid[256];
  atomic_store(&next_job, 0);
  double t0 = now();
  for (int i = 0; i < threads; i++)
    pthread_create(&tid[i], NULL, worker, NULL);
  for (int i = 0; i < threads; i++)
    pthread_join(tid[i], NULL);
  return now() - t0;
}

int main(int argc, char **argv) {
  int threads = 1, rounds = 5, repeat = 1, i = 1;
  double seconds = 0;
  for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
    if (strcmp(argv[i], "-t") == 0)
      threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-r") == 0)
      rounds = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-n") == 0)
      repeat = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-s") == 0)
      seconds = atof(argv[i + 1]);
    else
      break;
  }
  if (i >= argc || threads < 1 || threads > 256 || rounds < 1 || rounds > 99 ||
      repeat < 1) {
    fprintf(stderr, "usage: bench_png_decode [-t THREADS] [-r ROUNDS] "
                    "[-n REPEAT | -s SECONDS] FILE...\n");
    return 2;
  }
  n_inputs = (size_t)(argc - i);
  inputs = calloc(n_inputs, sizeof *inputs);
  size_t total = 0;
  for (size_t k = 0; k < n_inputs; k++) {
    FILE *f = fopen(argv[i + k], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) {
      fprintf(stderr, "bench_png_decode: cannot read %s\n", argv[i + k]);
      return 1;
    }
    long size = ftell(f);
    rewind(f);
    inputs[k].size = (size_t)size;
    inputs[k].data = malloc(inputs[k].size ? inputs[k].size : 1);
    if (fread(inputs[k].data, 1, inputs[k].size, f) != inputs[k].size) {
      fprintf(stderr, "bench_png_decode: cannot read %s\n", argv[i + k]);
      return 1;
    }
    fclose(f);
    total += inputs[k].size;
  }
  if (seconds > 0) {
    n_jobs = n_inputs;
    ist_png_reader_libpng = 1;
    double once = round_time(threads);
    repeat = once > 0 && seconds / once < 1e6 ? (int)(seconds / once + 0.5) : 1;
    if (repeat < 1)
      repeat = 1;
  }
  n_jobs = n_inputs * (size_t)repeat;
  printf("repeat\t%d\n", repeat);
  printf("%zu files (%.1f MB), each decoded %d times a round, %d threads, "
         "median of %d rounds\n",
         n_inputs, total / 1e6, repeat, threads, rounds);
  printf("decoder\tseconds\tfiles/s\tMB/s\n");
  double t[2][99];
  unsigned long long bytes = 0;
  /* one warm-up round each, then the decoders in turns, so that both see
   * the same load from the rest of the machine */
  for (int r = -1; r < rounds; r++)
    for (int dec = 0; dec < 2; dec++) {
      if (dec == 0 && !ist_png_have_libdeflate())
        continue;
      ist_png_reader_libpng = dec;
      atomic_store(&decoded_bytes, 0);
      double s = round_time(threads);
      if (r >= 0)
        t[dec][r] = s;
      bytes = atomic_load(&decoded_bytes);
    }
  if (atomic_load(&failures)) {
    fprintf(stderr, "bench_png_decode: %d decodes failed\n",
            atomic_load(&failures));
    return 1;
  }
  double med[2] = {0, 0};
  for (int dec = 0; dec < 2; dec++) {
    if (dec == 0 && !ist_png_have_libdeflate())
      continue;
    qsort(t[dec], (size_t)rounds, sizeof(double), by_value);
    med[dec] = t[dec][rounds / 2];
    printf("%s\t%.4f\t%.2f\t%.1f\n", dec ? "libpng" : "imgstat", med[dec],
           n_jobs / med[dec], bytes / med[dec] / 1e6);
  }
  if (med[0] > 0)
    printf("imgstat/libpng speed: %.2f\n", med[1] / med[0]);
  for (size_t k = 0; k < n_inputs; k++)
    free(inputs[k].data);
  free(inputs);
  return 0;
}
