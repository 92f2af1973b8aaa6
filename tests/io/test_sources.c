/*
 * Input sources: a non-regular input (pipe, FIFO, device) is
 * sniffed before it is read on and read at most --max-memory bytes; the
 * --max-memory value parser (programs/imgstat/cli_util.c).
 *
 * The streams come from a child process writing into a FIFO. It counts what
 * it could write: a loader that stops early makes its next write fail
 * (EPIPE), one that reads everything lets it finish. That is how these tests
 * see how much the loader read, whatever it answered.
 */
#include "cli_util.h"
#include "imgstat/imgstat.h"
#include "io.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The stream writer's exit statuses. */
enum { FEED_ALL_WRITTEN = 0, FEED_READER_LEFT = 3, FEED_FAILED = 4 };

#define MIB ((size_t)1 << 20)
#define UNKNOWN_MESSAGE "not a recognised image format"

/* ---- helpers --------------------------------------------------------------
 */

static const char *sample_path(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/../../samples/%s", test_data_dir(), name);
  return path;
}

/* The bytes of a stream: data, then filler up to total bytes (0: zeros,
 * else a xorshift stream from that seed). */
typedef struct stream {
  const unsigned char *data;
  size_t size;
  size_t total;
  uint64_t filler_seed;
} stream;

static void stream_fill(const stream *s, size_t at, unsigned char *out,
                        size_t n, uint64_t *state) {
  for (size_t i = 0; i < n; i++, at++) {
    if (at < s->size)
      out[i] = s->data[at];
    else if (s->filler_seed)
      out[i] = (unsigned char)(test_rand(state) >> 56);
    else
      out[i] = 0;
  }
}

/* The first n bytes of the stream, in a malloc'd buffer. */
static unsigned char *stream_head(const stream *s, size_t n) {
  unsigned char *buf = malloc(n ? n : 1);
  uint64_t state = s->filler_seed;
  if (buf)
    stream_fill(s, 0, buf, n, &state);
  return buf;
}

static void feed_child(const char *fifo, const stream *s) {
  signal(SIGPIPE, SIG_IGN);
  alarm(120); /* never outlive a loader that stopped reading */
  int fd = open(fifo, O_WRONLY);
  if (fd < 0)
    _exit(FEED_FAILED);
  unsigned char chunk[1 << 14];
  uint64_t state = s->filler_seed;
  size_t at = 0;
  while (at < s->total) {
    size_t n = s->total - at < sizeof chunk ? s->total - at : sizeof chunk;
    stream_fill(s, at, chunk, n, &state);
    size_t done = 0;
    while (done < n) {
      ssize_t w = write(fd, chunk + done, n - done);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        _exit(errno == EPIPE ? FEED_READER_LEFT : FEED_FAILED);
      done += (size_t)w;
    }
    at += n;
  }
  close(fd);
  _exit(FEED_ALL_WRITTEN);
}

/* Loads the stream through a FIFO; *fed gets the writer's exit status. */
static imgstat_status load_fifo(const stream *s,
                                const imgstat_load_options *opts,
                                imgstat_image *img, imgstat_error *err,
                                int *fed) {
  char dir[4096];
  char fifo[4200];
  *fed = -1;
  memset(err, 0, sizeof *err);
  if (!test_tmp_template(dir, sizeof dir, "imgstat_test_source_") ||
      !mkdtemp(dir))
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "mkdtemp failed");
  snprintf(fifo, sizeof fifo, "%s/in", dir);
  if (mkfifo(fifo, 0600) != 0) {
    rmdir(dir);
    return imgstat_error_set(err, IMGSTAT_ERR_IO, "mkfifo failed");
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0)
    feed_child(fifo, s);
  imgstat_status st =
      pid < 0 ? imgstat_error_set(err, IMGSTAT_ERR_IO, "fork failed")
              : imgstat_image_load(fifo, opts, img, err);
  int wstatus = 0;
  if (pid > 0 && waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus))
    *fed = WEXITSTATUS(wstatus);
  unlink(fifo);
  rmdir(dir);
  return st;
}

/* The same bytes through a FIFO, a regular file and memory give the same
 * status and message. */
static void check_same_everywhere(const stream *s, imgstat_status want,
                                  const char *message) {
  imgstat_image img;
  imgstat_error fifo_err, file_err, mem_err;
  int fed;
  memset(&img, 0, sizeof img);
  imgstat_status st = load_fifo(s, NULL, &img, &fifo_err, &fed);
  CU_ASSERT_EQUAL(st, want);
  CU_ASSERT_STRING_EQUAL(fifo_err.message, message);
  imgstat_image_free(&img);

  unsigned char *bytes = stream_head(s, s->total);
  CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
  const char *path = test_temp_file(bytes, s->total);
  CU_ASSERT_PTR_NOT_NULL_FATAL(path);
  memset(&file_err, 0, sizeof file_err);
  CU_ASSERT_EQUAL(imgstat_image_load(path, NULL, &img, &file_err), want);
  CU_ASSERT_STRING_EQUAL(file_err.message, message);
  imgstat_image_free(&img);
  unlink(path);
  memset(&mem_err, 0, sizeof mem_err);
  CU_ASSERT_EQUAL(
      imgstat_image_load_memory(bytes, s->total, NULL, &img, &mem_err), want);
  CU_ASSERT_STRING_EQUAL(mem_err.message, message);
  imgstat_image_free(&img);
  free(bytes);
}

/* The stream through a FIFO is refused as no image, with message, and the
 * loader stopped reading it early (its writer saw the reader leave). */
static void expect_refused_early(const stream *s, const char *message) {
  imgstat_image img;
  imgstat_error err;
  int fed;
  CU_ASSERT_EQUAL(load_fifo(s, NULL, &img, &err, &fed), IMGSTAT_ERR_FORMAT);
  CU_ASSERT_STRING_EQUAL(err.message, message);
  CU_ASSERT_EQUAL(fed, FEED_READER_LEFT);
}

/* ---- non-regular inputs ------------------------------------------------ */

/* /dev/zero itself, in a child whose address space is capped: a loader that
 * reads it whole fails there with "out of memory" instead of taking the
 * machine's memory. */
static void test_dev_zero(void) {
  test_child_load r =
      test_load_in_child("/dev/zero", NULL, 0, NULL, 60, (size_t)1 << 30);
  char got[IMGSTAT_ERROR_MAX + 8];
  snprintf(got, sizeof got, "%d %s", r.status, r.message);
  char want[64];
  snprintf(want, sizeof want, "%d %s", (int)IMGSTAT_ERR_FORMAT,
           UNKNOWN_MESSAGE);
  CU_ASSERT_STRING_EQUAL(got, want);
}

/* An endless stream of zeros (what /dev/zero is): refused from its first
 * bytes, long before its end. */
static void test_zero_stream_refused_early(void) {
  stream s = {NULL, 0, 256 * MIB, 0};
  expect_refused_early(&s, UNKNOWN_MESSAGE);
}

/* Random bytes (what /dev/urandom is), starting with no signature: the
 * same. The seed is one whose first bytes sniff as nothing. */
static void test_random_stream_refused_early(void) {
  uint64_t seed = 12345;
  stream s = {NULL, 0, 256 * MIB, seed};
  unsigned char *head = stream_head(&s, 16);
  CU_ASSERT_FATAL(head && head[0] != 0x89 && head[0] != 0xFF);
  free(head);
  expect_refused_early(&s, UNKNOWN_MESSAGE);
}

/* A first byte 0x89 sends an input to libpng (for its message about a
 * damaged signature); random bytes after it are refused from the signature
 * alone, with libpng's message, the same as from a file. */
static void test_damaged_png_signature_refused_early(void) {
  static const unsigned char start[] = {0x89, 'X', 'Y', 'Z'};
  stream s = {start, sizeof start, 256 * MIB, 777};
  expect_refused_early(&s, "Corrupt PNG data: not a PNG file");
  stream small = {start, sizeof start, 2 * MIB, 777};
  check_same_everywhere(&small, IMGSTAT_ERR_FORMAT,
                        "Corrupt PNG data: not a PNG file");
}

/* The message for an unknown signature is the same for every kind of input,
 * long or short. */
static void test_unknown_message_same_everywhere(void) {
  stream zeros = {NULL, 0, 2 * MIB, 0};
  check_same_everywhere(&zeros, IMGSTAT_ERR_FORMAT, UNKNOWN_MESSAGE);
  stream random = {NULL, 0, 2 * MIB, 12345};
  check_same_everywhere(&random, IMGSTAT_ERR_FORMAT, UNKNOWN_MESSAGE);
  stream short_random = {NULL, 0, 1000, 12345};
  check_same_everywhere(&short_random, IMGSTAT_ERR_FORMAT, UNKNOWN_MESSAGE);
  static const unsigned char text[] = "hello, world\n";
  stream short_text = {text, sizeof text - 1, sizeof text - 1, 0};
  check_same_everywhere(&short_text, IMGSTAT_ERR_FORMAT, UNKNOWN_MESSAGE);
}

/* An input over --max-memory that is not a regular file: refused once the
 * budget is read, with a message that names the option. The image in it is
 * within the budget (the same bytes from memory load). */
static void test_stream_over_budget(void) {
  size_t size;
  unsigned char *png = test_read_file(sample_path("camera.png"), &size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(png);
  /* camera.png, then zeros after its IEND chunk, which decoders ignore. */
  stream s = {png, size, 64 * MIB, 0};
  imgstat_load_options opts = {.max_memory = MIB};
  imgstat_image img;
  imgstat_error err;
  int fed;
  CU_ASSERT_EQUAL(load_fifo(&s, &opts, &img, &err, &fed), IMGSTAT_ERR_LIMIT);
  CU_ASSERT_STRING_EQUAL(err.message,
                         "input is larger than 1048576 bytes without being a "
                         "regular file (max_memory)");
  CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_MAX_MEMORY);
  CU_ASSERT_EQUAL(err.limit, 1048576);
  CU_ASSERT_EQUAL(fed, FEED_READER_LEFT);

  unsigned char *bytes = stream_head(&s, 3 * MIB);
  CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(imgstat_image_load_memory(bytes, 3 * MIB, &opts, &img, &err),
                  IMGSTAT_OK);
  imgstat_image_free(&img);
  free(bytes);

  /* Exactly the budget is allowed. */
  stream exact = {png, size, MIB, 0};
  CU_ASSERT_EQUAL(load_fifo(&exact, &opts, &img, &err, &fed), IMGSTAT_OK);
  CU_ASSERT_EQUAL(fed, FEED_ALL_WRITTEN);
  imgstat_image_free(&img);
  stream one_more = {png, size, MIB + 1, 0};
  CU_ASSERT_EQUAL(load_fifo(&one_more, &opts, &img, &err, &fed),
                  IMGSTAT_ERR_LIMIT);
  free(png);
}

/* A PNG through a FIFO decodes to the statistics of the reference
 * (tests/data/corpus_reference.tsv, photos/camera.png: 512x512 gray, sum
 * 33832495), in a stream longer than the first piece the loader sniffs. */
static void test_png_through_fifo(void) {
  size_t size;
  unsigned char *png = test_read_file(sample_path("camera.png"), &size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(png);
  CU_ASSERT_FATAL(size > 65536);
  stream s = {png, size, size, 0};
  imgstat_image img;
  imgstat_error err;
  int fed;
  CU_ASSERT_EQUAL_FATAL(load_fifo(&s, NULL, &img, &err, &fed), IMGSTAT_OK);
  CU_ASSERT_EQUAL(fed, FEED_ALL_WRITTEN);
  CU_ASSERT_EQUAL(img.width, 512);
  CU_ASSERT_EQUAL(img.height, 512);
  CU_ASSERT_EQUAL(img.channels, 1);
  CU_ASSERT_EQUAL(img.sample, IMGSTAT_U8);
  uint64_t sum = 0;
  const unsigned char *p = img.planes[0];
  for (size_t i = 0; i < (size_t)512 * 512; i++)
    sum += p[i];
  CU_ASSERT_EQUAL(sum, 33832495);
  imgstat_image_free(&img);
  free(png);
}

/* TGA has no signature: a TGA header is still worth reading on, and the
 * pixels come out as written. 200x150 RGB is longer than the first piece. */
static void test_tga_through_fifo(void) {
  const uint32_t w = 200, h = 150;
  size_t size = 18 + (size_t)w * h * 3;
  unsigned char *tga = calloc(size, 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(tga);
  tga[2] = 2; /* uncompressed true colour */
  tga[12] = (unsigned char)(w & 0xFF);
  tga[13] = (unsigned char)(w >> 8);
  tga[14] = (unsigned char)(h & 0xFF);
  tga[15] = (unsigned char)(h >> 8);
  tga[16] = 24;   /* bits per pixel */
  tga[17] = 0x20; /* top-left origin */
  for (size_t i = 0; i < (size_t)w * h; i++) {
    tga[18 + 3 * i + 0] = (unsigned char)(i * 7);  /* B */
    tga[18 + 3 * i + 1] = (unsigned char)(i / 3);  /* G */
    tga[18 + 3 * i + 2] = (unsigned char)(i * 13); /* R */
  }
  stream s = {tga, size, size, 0};
  imgstat_image img;
  imgstat_error err;
  int fed;
  CU_ASSERT_EQUAL_FATAL(load_fifo(&s, NULL, &img, &err, &fed), IMGSTAT_OK);
  CU_ASSERT_STRING_EQUAL(img.format, "TGA");
  CU_ASSERT_EQUAL(img.width, w);
  CU_ASSERT_EQUAL(img.height, h);
  CU_ASSERT_EQUAL_FATAL(img.channels, 3);
  const unsigned char *r = img.planes[0], *g = img.planes[1],
                      *b = img.planes[2];
  int same = 1;
  for (size_t i = 0; i < (size_t)w * h; i++)
    same &= r[i] == (unsigned char)(i * 13) && g[i] == (unsigned char)(i / 3) &&
            b[i] == (unsigned char)(i * 7);
  CU_ASSERT(same);
  imgstat_image_free(&img);
  free(tga);
}

/* A JPEG whose start marker follows a fill byte (FF FF D8 ...) has no
 * signature ist_kind_sniff knows, yet stb_image reads it: through a
 * FIFO it decodes as from memory. Zeros after it make it longer than the
 * first piece. */
static void test_jpeg_after_fill_byte_through_fifo(void) {
  size_t size;
  unsigned char *jpeg = test_read_file(sample_path("testorig.jpg"), &size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(jpeg);
  unsigned char *filled = malloc(size + 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(filled);
  filled[0] = 0xFF;
  memcpy(filled + 1, jpeg, size);
  stream s = {filled, size + 1, 200000, 0};
  unsigned char *bytes = stream_head(&s, s.total);
  CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
  imgstat_image a, b;
  imgstat_error ea, eb;
  int fed;
  memset(&eb, 0, sizeof eb);
  CU_ASSERT_EQUAL_FATAL(
      imgstat_image_load_memory(bytes, s.total, NULL, &b, &eb), IMGSTAT_OK);
  CU_ASSERT_EQUAL_FATAL(load_fifo(&s, NULL, &a, &ea, &fed), IMGSTAT_OK);
  CU_ASSERT_EQUAL(a.width, 227);
  CU_ASSERT_EQUAL(a.height, 149);
  CU_ASSERT_EQUAL(a.width, b.width);
  CU_ASSERT_EQUAL(a.height, b.height);
  CU_ASSERT_EQUAL_FATAL(a.channels, b.channels);
  CU_ASSERT_EQUAL(a.sample, b.sample);
  CU_ASSERT(memcmp(a.data, b.data,
                   imgstat_image_plane_bytes(&a) * (size_t)a.channels) == 0);
  imgstat_image_free(&a);
  imgstat_image_free(&b);
  free(bytes);
  free(filled);
  free(jpeg);
}

/* ---- the decoded-memory budget ------------------------------------------ */

/* kodim23.png (768x512 RGB) decodes to 1.1 MiB: over 100 KiB, within
 * 10 MiB. */
static void test_max_memory_option(void) {
  const char *path = sample_path("kodim23.png");
  imgstat_image img;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_load_options small = {.max_memory = 100 << 10};
  CU_ASSERT_EQUAL(imgstat_image_load(path, &small, &img, &err),
                  IMGSTAT_ERR_LIMIT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "(max_memory)"));
  CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_MAX_MEMORY);
  CU_ASSERT_EQUAL(err.limit, 100 << 10);
  imgstat_load_options enough = {.max_memory = 10 << 20};
  CU_ASSERT_EQUAL(imgstat_image_load(path, &enough, &img, &err), IMGSTAT_OK);
  CU_ASSERT_EQUAL(img.width, 768);
  CU_ASSERT_EQUAL(img.height, 512);
  imgstat_image_free(&img);
}

/* ---- --max-memory values (ist_cli_parse_size) ----------------------- */

static void test_parse_size(void) {
  static const struct {
    const char *text;
    uint64_t value;
  } good[] = {
      {"1", 1},
      {"102400", 102400},
      {"1K", 1024},
      {"1k", 1024},
      {"100K", 102400},
      {"10M", 10485760},
      {"10m", 10485760},
      {"3G", UINT64_C(3) << 30},
      {"2T", UINT64_C(2) << 40},
      {"5KiB", 5120},
      {"5MiB", 5242880},
      {"4GiB", UINT64_C(4) << 30},
      {"16777215T", UINT64_C(16777215) << 40},
      {"18446744073709551615", UINT64_MAX},
      {"007K", 7168},
  };
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    uint64_t v = 0;
    CU_ASSERT_TRUE(ist_cli_parse_size(good[i].text, 1, UINT64_MAX, &v));
    CU_ASSERT_EQUAL(v, good[i].value);
  }
  static const char *const bad[] = {
      "",
      "K",
      "0",
      "0K",
      "-1",
      "+1",
      " 1",
      "1 ",
      "1 K",
      "1.5M",
      "1e6",
      "0x10",
      "10MB",
      "10Mi",
      "10mib",
      "10KiBs",
      "1KK",
      "1P",
      "1B",
      "16777216T",
      "18446744073709551616",
      "99999999999999999999999K",
      "17179869184G",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint64_t v = 42;
    int ok = ist_cli_parse_size(bad[i], 1, UINT64_MAX, &v);
    if (ok)
      printf("\naccepted: '%s'\n", bad[i]);
    CU_ASSERT_FALSE(ok);
    CU_ASSERT_EQUAL(v, 42);
  }
  uint64_t v = 42;
  CU_ASSERT_FALSE(ist_cli_parse_size(NULL, 1, UINT64_MAX, &v));
  CU_ASSERT_FALSE(ist_cli_parse_size("2K", 1, 2047, &v));
  CU_ASSERT_FALSE(ist_cli_parse_size("1K", 1025, UINT64_MAX, &v));
  CU_ASSERT_EQUAL(v, 42);
  CU_ASSERT_TRUE(ist_cli_parse_size("2K", 1, 2048, &v));
  CU_ASSERT_EQUAL(v, 2048);
}

/* Counts the times it is asked; says stop at the third. */
static int stop_at_third(void *ctx) {
  int *asked = ctx;
  return ++*asked >= 3;
}

/* A FIFO that no writer opens: the open does not wait for one, and the wait
 * for its bytes ends when the stop callback says so; without a writer the
 * FIFO is not taken for an empty input. Then a writer that opens it and
 * leaves without writing: an empty input. */
static void test_fifo_wait_stops(void) {
  char dir[4096], fifo[4200];
  CU_ASSERT_FATAL(test_tmp_template(dir, sizeof dir, "imgstat_test_wait_") &&
                  mkdtemp(dir));
  snprintf(fifo, sizeof fifo, "%s/in", dir);
  CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
  int asked = 0;
  ist_stop stop = {stop_at_third, &asked};
  imgstat_decoder *d = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status s = ist_decoder_open_until(fifo, NULL, &stop, &d, &err);
  CU_ASSERT(s == IMGSTAT_ERR_IO && d == NULL);
  CU_ASSERT(strstr(err.message, "cancelled") != NULL);
  CU_ASSERT(asked == 3);
  /* the read-once rule */
  struct stat st;
  CU_ASSERT(stat(fifo, &st) == 0 && ist_read_once_mode(st.st_mode));
  CU_ASSERT(stat("/dev/null", &st) == 0 && ist_read_once_mode(st.st_mode));
  CU_ASSERT(stat(sample_path("camera.png"), &st) == 0 &&
            !ist_read_once_mode(st.st_mode));
  /* a writer that comes and goes: the end of an empty input */
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(fifo, O_WRONLY);
    _exit(fd < 0 ? 1 : 0);
  }
  asked = -1000000; /* no stop: the writer's end ends the wait */
  memset(&err, 0, sizeof err);
  s = ist_decoder_open_until(fifo, NULL, &stop, &d, &err);
  CU_ASSERT(s == IMGSTAT_ERR_FORMAT && strcmp(err.message, "empty file") == 0);
  int wstatus = 0;
  CU_ASSERT(pid > 0 && waitpid(pid, &wstatus, 0) == pid && WIFEXITED(wstatus) &&
            WEXITSTATUS(wstatus) == 0);
  unlink(fifo);
  rmdir(dir);
}

static const test_case tests[] = {
    {"non-regular inputs", NULL},
    {"/dev/zero refused at once", test_dev_zero},
    {"zero stream refused early", test_zero_stream_refused_early},
    {"random stream refused early", test_random_stream_refused_early},
    {"damaged PNG signature refused early",
     test_damaged_png_signature_refused_early},
    {"unknown-format message the same everywhere",
     test_unknown_message_same_everywhere},
    {"stream over --max-memory refused", test_stream_over_budget},
    {"PNG through a FIFO", test_png_through_fifo},
    {"TGA through a FIFO", test_tga_through_fifo},
    {"JPEG after a fill byte through a FIFO",
     test_jpeg_after_fill_byte_through_fifo},
    {"a FIFO's wait for a writer ends on stop", test_fifo_wait_stops},
    {"max-memory", NULL},
    {"decoded-memory budget", test_max_memory_option},
    {"--max-memory values", test_parse_size},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
