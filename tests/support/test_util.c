/* Plain helpers of the test programs (no CUnit: the benchmarks and the fuzz
 * targets link them too). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- LeakSanitizer ---------------------------------------------------------
 * cfitsio 4.2 (Debian 12) does not free a tile's compressed bytes when
 * decoding that tile fails (imcomp_decompress_tile; later releases do): not
 * memory imgstat can free. The regression input is
 * tests/data/fuzz/fits-tile-leak.bin (docs/fuzzing.md). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:imcomp_decompress_tile\n";
}

/* ---- files and folders ----------------------------------------------------
 */

const char *test_corpus_dir(void) {
  const char *dir = getenv("IMGSTAT_CORPUS");
  if (!dir || !*dir)
    dir = IMGSTAT_CORPUS_DEFAULT;
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return NULL;
  return dir;
}

const char *test_data_dir(void) { return IMGSTAT_TEST_DATA; }

const char *test_path(const char *dir, const char *name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

int test_ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

unsigned char *test_read_file(const char *path, size_t *size) {
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  unsigned char *buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0)
    buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf)
    *size = (size_t)n;
  return buf;
}

int test_format_built(const char *name) {
  char want[64];
  snprintf(want, sizeof want, "%s (", name);
  return strstr(imgstat_formats_description(), want) != NULL;
}

const char *test_tmp_dir(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

char *test_tmp_template(char *buf, size_t size, const char *name) {
  int n = snprintf(buf, size, "%s/%sXXXXXX", test_tmp_dir(), name);
  return n > 0 && (size_t)n < size ? buf : NULL;
}

const char *test_temp_file(const void *data, size_t size) {
  static char path[4096];
  if (!test_tmp_template(path, sizeof path, "imgstat_test_"))
    return NULL;
  int fd = mkstemp(path);
  if (fd < 0)
    return NULL;
  if (size && write(fd, data, size) != (ssize_t)size) {
    close(fd);
    unlink(path);
    return NULL;
  }
  close(fd);
  return path;
}

/* ---- building inputs byte by byte ---------------------------------------- */

void test_put(test_buf *b, const void *data, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n)
      cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
      fprintf(stderr, "test_put: out of memory\n");
      abort();
    }
    b->p = p;
    b->cap = cap;
  }
  if (n)
    memcpy(b->p + b->n, data, n);
  b->n += n;
}

void test_put_str(test_buf *b, const char *s) { test_put(b, s, strlen(s)); }

void test_put_byte(test_buf *b, int v, size_t count) {
  unsigned char c = (unsigned char)v;
  while (count--)
    test_put(b, &c, 1);
}

void test_put_le16(test_buf *b, unsigned v) {
  unsigned char c[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  test_put(b, c, 2);
}

void test_put_be16(test_buf *b, unsigned v) {
  unsigned char c[2] = {(unsigned char)(v >> 8), (unsigned char)v};
  test_put(b, c, 2);
}

void test_put_be32(test_buf *b, uint32_t v) {
  unsigned char c[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 8), (unsigned char)v};
  test_put(b, c, 4);
}

void test_buf_clear(test_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* ---- loading in a child process ------------------------------------------ */

/* The child's exit status when it could not report. */
enum { CHILD_NO_REPORT = 100 };

static void load_child(int fd, const char *path, const void *data, size_t size,
                       const imgstat_load_options *opts, unsigned timeout_s,
                       size_t as_limit) {
#if !IMGSTAT_TEST_ASAN /* ASan reserves terabytes of address space */
  if (as_limit) {
    struct rlimit rl = {(rlim_t)as_limit, (rlim_t)as_limit};
    setrlimit(RLIMIT_AS, &rl);
  }
#else
  (void)as_limit;
#endif
  alarm(timeout_s);
  imgstat_image img;
  imgstat_error err = {0};
  imgstat_status s =
      path ? imgstat_image_load(path, opts, &img, &err)
           : imgstat_image_load_memory(data, size, opts, &img, &err);
  if (s == IMGSTAT_OK)
    imgstat_image_free(&img);
  struct rusage ru;
  long kib = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
  size_t len = strlen(err.message) + 1;
  if (write(fd, &kib, sizeof kib) != (ssize_t)sizeof kib ||
      write(fd, err.message, len) != (ssize_t)len)
    _exit(CHILD_NO_REPORT);
  _exit((int)s);
}

test_child_load test_load_in_child(const char *path, const void *data,
                                   size_t size,
                                   const imgstat_load_options *opts,
                                   unsigned timeout_s, size_t as_limit) {
  test_child_load r;
  memset(&r, 0, sizeof r);
  r.status = -1;
  r.maxrss_kib = -1;
  int fd[2];
  if (pipe(fd) != 0) {
    snprintf(r.message, sizeof r.message, "pipe failed");
    return r;
  }
  fflush(NULL);
  double t0 = test_now();
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    load_child(fd[1], path, data, size, opts, timeout_s, as_limit);
  }
  close(fd[1]);
  if (pid < 0) {
    close(fd[0]);
    snprintf(r.message, sizeof r.message, "fork failed");
    return r;
  }
  size_t got = 0;
  ssize_t k;
  if (read(fd[0], &r.maxrss_kib, sizeof r.maxrss_kib) !=
      (ssize_t)sizeof r.maxrss_kib)
    r.maxrss_kib = -1;
  while (got < sizeof r.message - 1 &&
         (k = read(fd[0], r.message + got, sizeof r.message - 1 - got)) > 0)
    got += (size_t)k;
  r.message[got] = 0;
  close(fd[0]);
  int st = 0;
  if (waitpid(pid, &st, 0) != pid)
    st = -1;
  r.seconds = test_now() - t0;
  r.finished = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != CHILD_NO_REPORT;
  if (r.finished)
    r.status = WEXITSTATUS(st);
  else
    snprintf(r.message, sizeof r.message, "did not finish in %u s", timeout_s);
  return r;
}

/* ---- images and numbers ---------------------------------------------------
 */

int test_image_make(imgstat_image *img, uint32_t w, uint32_t h, int channels,
                    imgstat_sample sample) {
  memset(img, 0, sizeof *img);
  size_t plane = (size_t)w * h * (size_t)sample;
  img->data = malloc(plane * (size_t)channels + 1);
  if (!img->data)
    return 0;
  img->width = w;
  img->height = h;
  img->channels = channels;
  img->sample = sample;
  img->format = "test";
  for (int c = 0; c < channels; c++)
    img->planes[c] = (unsigned char *)img->data + (size_t)c * plane;
  return 1;
}

void test_image_free(imgstat_image *img) {
  free(img->data);
  memset(img, 0, sizeof *img);
}

double test_sample_at(const imgstat_image *img, int c, uint64_t i) {
  switch (img->sample) {
  case IMGSTAT_U8:
    return ((const uint8_t *)img->planes[c])[i];
  case IMGSTAT_U16:
    return ((const uint16_t *)img->planes[c])[i];
  default:
    return ((const float *)img->planes[c])[i];
  }
}

uint64_t test_rand(uint64_t *state) {
  uint64_t x = *state ? *state : 0x9E3779B97F4A7C15u;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Du;
}

double test_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int test_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
