/*
 * The GPU JPEG path's pieces that need no GPU: the strictness check that
 * runs before nvJPEG (ist_jpeg_check_entropy) refuses exactly the files
 * that the CPU decoder refuses, with its words; which files nvJPEG may take
 * (ist_jpeg_gpu_input); the loading of libnvjpeg (a library that is not
 * there is a reason, not a crash); the engine's policy without a GPU.
 */
#include "gpu_jpeg.h"
#include "imgstat/engine.h"
#include "io.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char sample_path[4096], png_path[4096];

static const char *sample(void) { return sample_path; }

/* The outcome of both checks on one file: 1 when they agree. Counts the
 * files refused by both in *refused and those that open fails (the same
 * check on both paths) in *unopened. */
static int same_verdict(const unsigned char *data, size_t size, int *refused,
                        int *unopened) {
  const char *path = test_temp_file(data, size);
  if (!path)
    return 0;
  imgstat_decoder *d = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_status os = imgstat_decoder_open(path, NULL, &d, &err);
  unlink(path); /* the open decoder keeps the file */
  if (os != IMGSTAT_OK) {
    (*unopened)++;
    return 1;
  }
  const unsigned char *bytes;
  size_t n;
  int ok = ist_jpeg_gpu_input(d, &bytes, &n) == 1;
  imgstat_error gpu_err, cpu_err;
  memset(&gpu_err, 0, sizeof gpu_err);
  memset(&cpu_err, 0, sizeof cpu_err);
  imgstat_status gs = ist_jpeg_check_entropy(d, &gpu_err);
  const imgstat_header *h = imgstat_decoder_header(d);
  imgstat_image img;
  imgstat_status cs = imgstat_image_alloc(&img, h->width, h->height,
                                          h->channels, h->sample, 0, &cpu_err);
  if (cs == IMGSTAT_OK)
    cs = imgstat_decoder_read(d, &img, &cpu_err);
  imgstat_image_free(&img);
  imgstat_decoder_close(d);
  ok = ok && gs == cs;
  if (gs != IMGSTAT_OK && cs != IMGSTAT_OK) {
    ok = ok && strcmp(gpu_err.message, cpu_err.message) == 0;
    (*refused)++;
  }
  if (!ok)
    fprintf(stderr, "  differ: check %d '%s', decode %d '%s'\n", gs,
            gpu_err.message, cs, cpu_err.message);
  return ok;
}

/* The sample cut at every length from its first scan to its end, and with
 * bytes of its entropy-coded data changed: the check before nvJPEG and the
 * CPU decoder refuse the same files with the same message. */
static void test_strictness_matches_cpu(void) {
  size_t size = 0;
  unsigned char *jpeg = test_read_file(sample(), &size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(jpeg);
  size_t sos = 0;
  for (size_t i = 0; i + 1 < size && !sos; i++)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xDA)
      sos = i;
  CU_ASSERT_TRUE_FATAL(sos > 0);
  int refused = 0, unopened = 0, differ = 0;
  CU_ASSERT_TRUE(same_verdict(jpeg, size, &refused, &unopened));
  CU_ASSERT_EQUAL(refused, 0); /* the whole file is fine */
  size_t step = (size - sos) / 97 + 1;
  for (size_t cut = sos; cut < size; cut += step)
    differ += !same_verdict(jpeg, cut, &refused, &unopened);
  differ += !same_verdict(jpeg, size - 2, &refused, &unopened); /* no EOI */
  unsigned char *bad = malloc(size);
  CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
  uint64_t seed = 12345;
  for (int k = 0; k < 150; k++) {
    memcpy(bad, jpeg, size);
    size_t at = sos + 20 + (size_t)(test_rand(&seed) % (size - sos - 22));
    bad[at] = (unsigned char)test_rand(&seed);
    if (k % 3 == 0) /* a marker in the middle of the data */
      bad[at] = 0xFF, bad[at + 1] = (unsigned char)(0xC0 + k % 48);
    differ += !same_verdict(bad, size, &refused, &unopened);
  }
  free(bad);
  free(jpeg);
  CU_ASSERT_EQUAL(differ, 0);
  /* the test tested something: most cuts and many corruptions refused */
  CU_ASSERT_TRUE(refused >= 100);
}

/* What nvJPEG may take: TurboJPEG's YCbCr and gray JPEGs; not another
 * format. */
static void test_gpu_input(void) {
  imgstat_decoder *d = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  const unsigned char *bytes = NULL;
  size_t n = 0;
  CU_ASSERT_EQUAL_FATAL(imgstat_decoder_open(sample(), NULL, &d, &err),
                        IMGSTAT_OK);
  CU_ASSERT_EQUAL(ist_jpeg_gpu_input(d, &bytes, &n), 1);
  CU_ASSERT_TRUE(bytes && n > 1000 && bytes[0] == 0xFF && bytes[1] == 0xD8);
  imgstat_decoder_close(d);
  CU_ASSERT_EQUAL_FATAL(imgstat_decoder_open(png_path, NULL, &d, &err),
                        IMGSTAT_OK);
  CU_ASSERT_EQUAL(ist_jpeg_gpu_input(d, &bytes, &n), 0);
  imgstat_decoder_close(d);
}

/* A libnvjpeg that cannot be loaded is a reason (IMGSTAT_ERR_NODEVICE),
 * given again to every later call. */
static void test_load_failure(void) {
  setenv("IMGSTAT_NVJPEG_LIBRARY", "/nonexistent/libnvjpeg.so.13", 1);
  for (int k = 0; k < 2; k++) {
    imgstat_error err;
    memset(&err, 0, sizeof err);
    const char *version = NULL;
    CU_ASSERT_EQUAL(imgstat_gpu_jpeg_load(&version, &err),
                    IMGSTAT_ERR_NODEVICE);
    CU_ASSERT_STRING_EQUAL(version, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, imgstat_gpu_jpeg_compiled()
                                                   ? "/nonexistent"
                                                   : "built without"));
  }
}

/* The engine's policy without nvJPEG (the library not loaded, or no GPU):
 * auto decodes JPEGs on the CPU (the engine does not take them); gpu
 * fails the item with the option's words; gpu with backend cpu is
 * refused. */
static int reserve_any(void *ctx, uint64_t bytes) {
  (void)ctx;
  (void)bytes;
  return 1;
}

static void test_engine_policy(void) {
  setenv("IMGSTAT_NVJPEG_LIBRARY", "/nonexistent/libnvjpeg.so.13", 1);
  imgstat_engine_options o;
  memset(&o, 0, sizeof o);
  o.threads = 1;
  imgstat_engine *e = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  o.jpeg_decoder = IMGSTAT_JPEG_DECODER_GPU;
  o.backend = IMGSTAT_BACKEND_CPU;
  CU_ASSERT_EQUAL(imgstat_engine_create(&o, &e, &err), IMGSTAT_ERR_ARG);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "backend=cpu"));
  CU_ASSERT_PTR_NULL(strstr(err.message, "--"));
  CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_CONFLICT);
  for (int mode = 0; mode < 2; mode++) {
    o.backend = IMGSTAT_BACKEND_AUTO;
    o.jpeg_decoder =
        mode ? IMGSTAT_JPEG_DECODER_GPU : IMGSTAT_JPEG_DECODER_AUTO;
    CU_ASSERT_EQUAL_FATAL(imgstat_engine_create(&o, &e, &err), IMGSTAT_OK);
    imgstat_decoder *d = NULL;
    CU_ASSERT_EQUAL_FATAL(imgstat_decoder_open(sample(), NULL, &d, &err),
                          IMGSTAT_OK);
    imgstat_job_result res;
    int taken = imgstat_engine_stats_decoder(e, d, sample(), NULL, reserve_any,
                                             NULL, &res);
    if (mode == 0) {
      /* auto: JPEGs stay with the CPU decoders (docs/gpu.md): the engine
       * does not take the file, and says so beforehand */
      CU_ASSERT_EQUAL(taken, 0);
      CU_ASSERT_FALSE(imgstat_engine_may_decode_jpeg(e));
    } else {
      CU_ASSERT_EQUAL(taken, 1);
      CU_ASSERT_NOT_EQUAL(res.status, IMGSTAT_OK);
      CU_ASSERT_PTR_NOT_NULL(
          strstr(res.error.message, "jpeg_decoder=gpu needs a usable GPU"));
      CU_ASSERT_EQUAL(res.error.cause, IMGSTAT_CAUSE_GPU_UNUSABLE);
    }
    imgstat_job_result_free(&res);
    imgstat_decoder_close(d);
    imgstat_engine_destroy(e);
  }
}

static const test_case tests[] = {
    {"strictness before nvJPEG", NULL},
    {"the check refuses what the CPU decoder refuses, in its words",
     test_strictness_matches_cpu},
    {"nvJPEG's inputs", test_gpu_input},
    {"without nvJPEG", NULL},
    {"libnvjpeg that cannot be loaded", test_load_failure},
    {"the engine's JPEG policy", test_engine_policy},
    {NULL, NULL}};

int main(void) {
  snprintf(sample_path, sizeof sample_path, "%s/../../samples/testorig.jpg",
           test_data_dir());
  snprintf(png_path, sizeof png_path, "%s/../../samples/camera.png",
           test_data_dir());
  imgstat_decoder *d = NULL;
  imgstat_error err;
  const unsigned char *bytes;
  size_t n;
  int turbo = imgstat_decoder_open(sample_path, NULL, &d, &err) == IMGSTAT_OK &&
              ist_jpeg_gpu_input(d, &bytes, &n);
  imgstat_decoder_close(d);
  if (!turbo)
    return test_skip("JPEG is stb_image's in this build (no TurboJPEG)");
  return test_main(tests);
}
