/* Helpers shared by the test programs: the CUnit runner (test_runner.c) and
 * plain helpers (test_util.c, also linked into the benchmarks and the fuzz
 * targets, which have no CUnit). */
#ifndef IMGSTAT_TEST_UTIL_H
#define IMGSTAT_TEST_UTIL_H

#include "imgstat/imgstat.h"

#include <stddef.h>
#include <stdint.h>

/* 1 in a build with AddressSanitizer, whose shadow memory needs terabytes of
 * address space: tests then leave RLIMIT_AS alone. */
#if defined(__SANITIZE_ADDRESS__)
#define IMGSTAT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IMGSTAT_TEST_ASAN 1
#endif
#endif
#ifndef IMGSTAT_TEST_ASAN
#define IMGSTAT_TEST_ASAN 0
#endif

/* ---- the CUnit runner (test_runner.c) ------------------------------------ */

/* One test: its name and function. In a list of them, an entry with a name
 * and no function starts a suite of that name (the list starts with one),
 * and {NULL, NULL} ends the list. */
typedef struct test_case {
  const char *name;
  void (*run)(void);
} test_case;

/* Registers the suites and tests of the list, runs them with the basic
 * interface and returns the process exit status: 0 when everything ran and
 * passed, 1 otherwise (also when CUnit could not register them). */
int test_main(const test_case *tests);

/* test_main with a set-up and a clean-up that CUnit runs around every suite
 * (either may be NULL). */
int test_main_init(const test_case *tests, int (*init)(void),
                   int (*clean)(void));

/* Runs the suites already registered with CUnit and returns the exit status
 * as test_main does (for a program that registers them itself). */
int test_run_all(void);

/* Prints "skipped: REASON" in a way ctest shows and returns 77. */
int test_skip(const char *reason);

/* Whether this build decodes the format named ("GIF", "TIFF", ...: as
 * imgstat_formats_description names it); tests of a format whose library
 * the build lacks skip, saying so. */
int test_format_built(const char *name);

/* ---- files and folders (test_util.c) ------------------------------------- */

/* The shared corpus folder ($IMGSTAT_CORPUS, else ../shared/corpus beside the
 * checkout) when it exists, else NULL: tests over it then report a skip. */
const char *test_corpus_dir(void);

/* The project's own test data folder (tests/data). */
const char *test_data_dir(void);

/* Joins a folder and a name into a static buffer (one call at a time). */
const char *test_path(const char *dir, const char *name);

/* Whether the name s ends with suffix. */
int test_ends_with(const char *s, const char *suffix);

/* The whole file in a malloc'd buffer (one byte more than its size, so that
 * an empty file gives a buffer too), its size in *size; NULL (and 0) when it
 * cannot be read. */
unsigned char *test_read_file(const char *path, size_t *size);

/* The folder for temporary files: $TMPDIR, else /tmp. CI runs the suite
 * with a private TMPDIR and fails when anything is left in it, so every
 * test removes what it makes there. */
const char *test_tmp_dir(void);

/* buf = "TMPDIR/<name>XXXXXX", a template for mkstemp or mkdtemp; NULL when
 * it does not fit in size bytes. */
char *test_tmp_template(char *buf, size_t size, const char *name);

/* Writes data to a fresh temporary file under test_tmp_dir(); returns its
 * path (a static buffer, one call at a time), or NULL when it could not be
 * written. The caller unlinks it. */
const char *test_temp_file(const void *data, size_t size);

/* ---- building inputs byte by byte (test_util.c) ------------------------- */

/* A growing byte buffer; {0} is an empty one. The test_put functions append
 * (and abort the test program when memory runs out). */
typedef struct test_buf {
  unsigned char *p;
  size_t n, cap;
} test_buf;

void test_put(test_buf *b, const void *data, size_t n);
void test_put_str(test_buf *b, const char *s);
/* count copies of the byte v. */
void test_put_byte(test_buf *b, int v, size_t count);
void test_put_le16(test_buf *b, unsigned v);
void test_put_be16(test_buf *b, unsigned v);
void test_put_be32(test_buf *b, uint32_t v);

/* Frees the bytes and leaves an empty buffer. */
void test_buf_clear(test_buf *b);

/* ---- loading in a child process (test_util.c) ---------------------------- */

/* What a load in a child process gave. */
typedef struct test_child_load {
  int finished;    /* the child ran to its end (not killed, not timed out) */
  int status;      /* its imgstat_status; -1 when it did not finish */
  long maxrss_kib; /* its peak resident memory; -1 when unknown */
  double seconds;  /* wall time, fork to exit */
  char message[IMGSTAT_ERROR_MAX]; /* the error's message */
} test_child_load;

/* Loads path (when not NULL) or the size bytes at data in a child process,
 * so that a decoder that hangs or allocates gigabytes does not take the test
 * with it: alarm() ends the child after timeout_s seconds; with as_limit
 * above 0 (and not under AddressSanitizer) its address space is capped at
 * that many bytes. */
test_child_load test_load_in_child(const char *path, const void *data,
                                   size_t size,
                                   const imgstat_load_options *opts,
                                   unsigned timeout_s, size_t as_limit);

/* ---- images and numbers (test_util.c) ------------------------------------ */

/* An image built by hand, independent of the library's image.c: the planes
 * back to back in one malloc'd block (so that planes after the first are at
 * odd addresses for odd 8-bit sizes), dense rows, format "test". Returns 0
 * when the memory could not be had. Free it with test_image_free. */
int test_image_make(imgstat_image *img, uint32_t w, uint32_t h, int channels,
                    imgstat_sample sample);

/* Frees an image of test_image_make and zeroes it. */
void test_image_free(imgstat_image *img);

/* Sample i (in raster order) of channel c, as a double. */
double test_sample_at(const imgstat_image *img, int c, uint64_t i);

/* A deterministic pseudo-random generator (xorshift64*) for test inputs. */
uint64_t test_rand(uint64_t *state);

/* Seconds on a monotonic clock. */
double test_now(void);

/* qsort's comparison of doubles, ascending. */
int test_cmp_double(const void *a, const void *b);

#endif
