/*
 * The checks before nvJPEG (--jpeg-check) against the CPU decoder, file by
 * file, and their speed. Used by tests/io/jpeg_check_test.sh (the damaged
 * corpus of tests/io/jpeg_check_corpus.py) and
 * bench/gpu/jpeg_check.sh.
 *
 *   jpeg_check_tool table FILE...
 *     one line a file, tab-separated: the file; the scanner alone at the
 *     markers and full levels ("sound" or "doubt"); the verdicts of
 *     --jpeg-check none, markers and full ("ok" or "refused: MESSAGE"); the
 *     CPU decoder's full decode (the same). A file that the decoder's open
 *     refuses (the same for every level) has "open: MESSAGE" in all four.
 *   jpeg_check_tool bench [-j THREADS] [-r ROUNDS] LEVEL FILE...
 *     LEVEL none, markers, full or libjpeg (libjpeg's check alone, without
 *     the scanner): each round opens every file (reading it, as the
 *     pipeline does) and checks it, THREADS files at once; prints the
 *     median round's images a second. Exits 1 if any file is refused.
 */
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "io.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void verdict(imgstat_status s, const imgstat_error *e) {
  if (s == IMGSTAT_OK)
    printf("\tok");
  else
    printf("\trefused: %s", e->message);
}

static void table_line(const char *path) {
  imgstat_decoder *d = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  printf("%s", path);
  if (imgstat_decoder_open(path, NULL, &d, &err) != IMGSTAT_OK) {
    printf("\t-\t-");
    for (int k = 0; k < 4; k++)
      printf("\topen: %s", err.message);
    printf("\n");
    return;
  }
  const unsigned char *bytes;
  size_t size;
  if (!ist_jpeg_gpu_input(d, &bytes, &size)) {
    printf("\t-\t-\tnot for nvJPEG\t-\t-\t-\n");
    imgstat_decoder_close(d);
    return;
  }
  printf("\t%s", ist_jpeg_scan(bytes, size, 0) ? "sound" : "doubt");
  printf("\t%s", ist_jpeg_scan(bytes, size, 1) ? "sound" : "doubt");
  const int levels[3] = {IMGSTAT_JPEG_CHECK_NONE, IMGSTAT_JPEG_CHECK_MARKERS,
                         IMGSTAT_JPEG_CHECK_FULL};
  for (int k = 0; k < 3; k++) {
    memset(&err, 0, sizeof err);
    verdict(ist_jpeg_check(d, levels[k], &err), &err);
  }
  const imgstat_header *h = imgstat_decoder_header(d);
  imgstat_image img;
  memset(&err, 0, sizeof err);
  imgstat_status s = imgstat_image_alloc(&img, h->width, h->height, h->channels,
                                         h->sample, 0, &err);
  if (s == IMGSTAT_OK) {
    s = imgstat_decoder_read(d, &img, &err);
    imgstat_image_free(&img);
  }
  verdict(s, &err);
  printf("\n");
  imgstat_decoder_close(d);
}

typedef struct bench {
  char **files;
  int nfiles;
  int level; /* an imgstat_jpeg_check, or -1: libjpeg alone */
  int next;
  int refused;
  pthread_mutex_t lock;
} bench;

static void *bench_thread(void *arg) {
  bench *b = arg;
  for (;;) {
    pthread_mutex_lock(&b->lock);
    int k = b->next++;
    pthread_mutex_unlock(&b->lock);
    if (k >= b->nfiles)
      return NULL;
    imgstat_decoder *d = NULL;
    imgstat_error err;
    memset(&err, 0, sizeof err);
    imgstat_status s = imgstat_decoder_open(b->files[k], NULL, &d, &err);
    if (s == IMGSTAT_OK)
      s = b->level < 0 ? ist_jpeg_check_libjpeg(d, &err)
                       : ist_jpeg_check(d, b->level, &err);
    imgstat_decoder_close(d);
    if (s != IMGSTAT_OK) {
      pthread_mutex_lock(&b->lock);
      if (!b->refused++)
        fprintf(stderr, "%s: %s\n", b->files[k], err.message);
      pthread_mutex_unlock(&b->lock);
    }
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int run_bench(int argc, char **argv) {
  int threads = 1, rounds = 3, i = 0;
  while (i + 1 < argc && argv[i][0] == '-') {
    if (strcmp(argv[i], "-j") == 0)
      threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "-r") == 0)
      rounds = atoi(argv[i + 1]);
    else
      return 2;
    i += 2;
  }
  if (i + 1 >= argc || threads < 1 || threads > 1024 || rounds < 1 ||
      rounds > 100)
    return 2;
  bench b;
  memset(&b, 0, sizeof b);
  const char *name = argv[i];
  if (strcmp(name, "none") == 0)
    b.level = IMGSTAT_JPEG_CHECK_NONE;
  else if (strcmp(name, "markers") == 0)
    b.level = IMGSTAT_JPEG_CHECK_MARKERS;
  else if (strcmp(name, "full") == 0)
    b.level = IMGSTAT_JPEG_CHECK_FULL;
  else if (strcmp(name, "libjpeg") == 0)
    b.level = -1;
  else
    return 2;
  b.files = argv + i + 1;
  b.nfiles = argc - i - 1;
  pthread_mutex_init(&b.lock, NULL);
  double rates[100];
  pthread_t tid[1024];
  for (int r = 0; r < rounds; r++) {
    b.next = 0;
    double t0 = now();
    int started = 0;
    for (int t = 0; t < threads; t++)
      if (pthread_create(&tid[t], NULL, bench_thread, &b) == 0)
        started++;
    for (int t = 0; t < started; t++)
      pthread_join(tid[t], NULL);
    rates[r] = b.nfiles / (now() - t0);
  }
  qsort(rates, (size_t)rounds, sizeof rates[0], cmp_double);
  printf("%s: %d files, %d threads, median of %d rounds: %.1f images/s\n", name,
         b.nfiles, threads, rounds, rates[rounds / 2]);
  pthread_mutex_destroy(&b.lock);
  return b.refused ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "table") == 0) {
    for (int k = 2; k < argc; k++)
      table_line(argv[k]);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "bench") == 0) {
    int rc = run_bench(argc - 2, argv + 2);
    if (rc == 2)
      fprintf(stderr, "usage: jpeg_check_tool bench [-j N] [-r ROUNDS] "
                      "none|markers|full|libjpeg FILE...\n");
    return rc;
  }
  fprintf(stderr, "usage: jpeg_check_tool table FILE... | bench ...\n");
  return 2;
}
