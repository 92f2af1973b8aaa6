/*
 * The memory roof of reading a file's sample bytes once: the byte range
 * [OFFSET, OFFSET + LENGTH) of FILE (a TIFF's tiles, stored one after the
 * other) read with pread in pieces of CHUNK bytes (a tile) on THREADS
 * threads, each piece into the thread's own buffer and every byte used (a
 * 64-bit sum of the 64-bit words, so the compiler cannot drop the read).
 * One warm-up pass (the file into the page cache), then RUNS timed passes;
 * prints the median and the fastest in seconds and GB/s, and the sum (the
 * same every pass). RUNS 0: one pass, no warm-up (the process timed whole
 * by its caller).
 *
 * MODE mmap: the file is mapped read-only in each pass (mmap, the pieces
 * summed where they lie in the page cache by the threads, munmap: page
 * faults, the mapping and its teardown inside the pass), no copy; pread
 * (the default): as above.
 *
 *   read_roof FILE OFFSET LENGTH CHUNK THREADS RUNS [MODE]
 *
 * Driven by bench/tile_roof.py; no library, POSIX only.
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

typedef struct job {
  int fd;
  int map;                    /* MODE mmap */
  const unsigned char *bytes; /* the mapped file (a pass's) */
  uint64_t offset, length, chunk, pieces;
  atomic_uint_fast64_t next;
  atomic_int failed;
} job;

typedef struct worker {
  job *j;
  unsigned char *buf;
  uint64_t sum;
} worker;

static void *run(void *arg) {
  worker *w = arg;
  job *j = w->j;
  uint64_t sum = 0;
  for (;;) {
    uint64_t k = atomic_fetch_add(&j->next, 1);
    if (k >= j->pieces)
      break;
    uint64_t at = k * j->chunk;
    size_t n = (size_t)(j->length - at < j->chunk ? j->length - at : j->chunk);
    size_t got = j->map ? n : 0;
    while (got < n) {
      ssize_t r =
          pread(j->fd, w->buf + got, n - got, (off_t)(j->offset + at + got));
      if (r <= 0) {
        atomic_store(&j->failed, 1);
        return NULL;
      }
      got += (size_t)r;
    }
    const unsigned char *b = j->map ? j->bytes + j->offset + at : w->buf;
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) {
      uint64_t v;
      memcpy(&v, b + 8 * i, 8);
      sum += v;
    }
    for (size_t i = words * 8; i < n; i++)
      sum += b[i];
  }
  w->sum = sum;
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One pass on n threads: seconds, and the sum into *sum; < 0 on a failure. */
static double pass(job *j, worker *w, int n, uint64_t *sum) {
  pthread_t t[MAX_THREADS];
  atomic_store(&j->next, 0);
  double t0 = now();
  size_t mapped = (size_t)(j->offset + j->length);
  if (j->map) {
    void *p = mmap(NULL, mapped, PROT_READ, MAP_SHARED, j->fd, 0);
    if (p == MAP_FAILED)
      return -1;
    j->bytes = p;
  }
  for (int i = 1; i < n; i++)
    if (pthread_create(&t[i], NULL, run, &w[i]) != 0)
      return -1;
  run(&w[0]);
  for (int i = 1; i < n; i++)
    pthread_join(t[i], NULL);
  if (j->map)
    munmap((void *)j->bytes, mapped);
  double s = now() - t0;
  if (atomic_load(&j->failed))
    return -1;
  *sum = 0;
  for (int i = 0; i < n; i++)
    *sum += w[i].sum;
  return s;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 7 && argc != 8) {
    fprintf(stderr, "usage: read_roof FILE OFFSET LENGTH CHUNK THREADS RUNS "
                    "[pread|mmap]\n");
    return 2;
  }
  job j;
  j.map = argc == 8 && strcmp(argv[7], "mmap") == 0;
  j.bytes = NULL;
  j.offset = strtoull(argv[2], NULL, 10);
  j.length = strtoull(argv[3], NULL, 10);
  j.chunk = strtoull(argv[4], NULL, 10);
  int threads = atoi(argv[5]), runs = atoi(argv[6]);
  if (j.chunk == 0 || j.length == 0 || threads < 1 || threads > MAX_THREADS ||
      runs < 0 || runs > 1000 ||
      (argc == 8 && !j.map && strcmp(argv[7], "pread") != 0)) {
    fprintf(stderr, "read_roof: bad arguments\n");
    return 2;
  }
  j.pieces = (j.length + j.chunk - 1) / j.chunk;
  atomic_init(&j.next, 0);
  atomic_init(&j.failed, 0);
  j.fd = open(argv[1], O_RDONLY);
  if (j.fd < 0) {
    perror(argv[1]);
    return 1;
  }
  worker w[MAX_THREADS];
  for (int i = 0; i < threads; i++) {
    w[i].j = &j;
    w[i].sum = 0;
    w[i].buf = malloc((size_t)j.chunk);
    if (!w[i].buf) {
      fprintf(stderr, "read_roof: out of memory\n");
      return 1;
    }
  }
  uint64_t sum = 0, first = 0;
  double once = pass(&j, w, threads, &first); /* the warm-up */
  if (once < 0) {
    fprintf(stderr, "read_roof: %s: a read failed\n", argv[1]);
    return 1;
  }
  if (runs == 0) { /* the one pass, the process timed by its caller */
    printf("median_s %.6f best_s %.6f median_gbs %.3f threads %d bytes %" PRIu64
           " sum %" PRIu64 "\n",
           once, once, (double)j.length / once * 1e-9, threads, j.length,
           first);
    return 0;
  }
  double *t = malloc((size_t)runs * sizeof *t);
  if (!t)
    return 1;
  for (int r = 0; r < runs; r++) {
    t[r] = pass(&j, w, threads, &sum);
    if (t[r] < 0 || sum != first) {
      fprintf(stderr, "read_roof: %s: a read failed or differs\n", argv[1]);
      return 1;
    }
  }
  qsort(t, (size_t)runs, sizeof *t, cmp);
  double med = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
  printf("median_s %.6f best_s %.6f median_gbs %.3f threads %d bytes %" PRIu64
         " sum %" PRIu64 "\n",
         med, t[0], (double)j.length / med * 1e-9, threads, j.length, sum);
  for (int i = 0; i < threads; i++)
    free(w[i].buf);
  free(t);
  close(j.fd);
  return 0;
}
