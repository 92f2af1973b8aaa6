/*
 * The job layer (imgstat/engine.h): the backend policy's decisions for auto,
 * cpu and gpu (and verify) on this machine -- no device: auto is the CPU,
 * quietly; gpu and verify fail every item with the documented message, and
 * once that is known without decoding; a device that fails to start (CUDA
 * builds: a malformed IMGSTAT_GPU_FAULT) gives auto one warning -- and the
 * result values: partials equal to imgstat_cpu_stats' and to sums counted
 * here, histogram figures checked against the rank rule by hand, a
 * normalization equal to the CPU pipeline's, inputs by path (and their load
 * errors) or by image. With a usable GPU the GPU cases are checked instead.
 */
#include "cli_util.h"
#include "imgstat/cuda.h"
#include "imgstat/engine.h"
#include "imgstat/imgstat.h"
#include "imgstat/norm.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What imgstat_gpu_create says on this machine. */
static imgstat_status gpu_status;
static imgstat_error gpu_err;
static char tmpdir[256];
static char png_path[300];

/* A 10x10 RGB u8 image: R = 0..99 in raster order, G = 99 - R, B = 7, and
 * imgstat_cpu_stats' partials of it (threads: 3): made by the suite's
 * set-up (which writes the image to png_path too), read by the tests. */
static imgstat_image rgb;
static imgstat_partial rgb_ref[IMGSTAT_MAX_CHANNELS];

static int make_rgb(void) {
  imgstat_error err;
  if (imgstat_image_alloc(&rgb, 10, 10, 3, IMGSTAT_U8, 0, &err) != IMGSTAT_OK)
    return 0;
  for (int i = 0; i < 100; i++) {
    ((uint8_t *)rgb.planes[0])[i] = (uint8_t)i;
    ((uint8_t *)rgb.planes[1])[i] = (uint8_t)(99 - i);
    ((uint8_t *)rgb.planes[2])[i] = 7;
  }
  return imgstat_cpu_stats(&rgb, 3, rgb_ref, &err) == IMGSTAT_OK;
}

/* A model under which the GPU always repays: auto then uses the GPU from
 * the first item, as the tests of its fallbacks need. */
static const imgstat_cost_model gpu_free = {
    .cpu_s_per_gb = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}}};

static imgstat_engine *engine(imgstat_backend backend, int verify) {
  imgstat_engine_options o;
  memset(&o, 0, sizeof o);
  o.cost = &gpu_free;
  o.backend = backend;
  o.verify = verify;
  o.threads = 2;
  imgstat_engine *e = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(imgstat_engine_create(&o, &e, &err), IMGSTAT_OK);
  CU_ASSERT_PTR_NOT_NULL(e);
  return e;
}

static int partials_equal(const imgstat_partial *a, const imgstat_partial *b,
                          int channels) {
  return memcmp(a, b, sizeof *a * (size_t)channels) == 0;
}

/* The expected message of an item when the GPU is needed and missing. */
static void expect_gpu_unusable(const imgstat_job_result *res,
                                const char *option) {
  char want[IMGSTAT_ERROR_MAX + 64];
  snprintf(want, sizeof want, "%s needs a usable GPU: %s", option,
           gpu_err.message);
  CU_ASSERT_EQUAL(res->status, gpu_status);
  CU_ASSERT_EQUAL(res->failed_stage, IMGSTAT_STAGE_GPU);
  CU_ASSERT_STRING_EQUAL(res->error.message, want);
  CU_ASSERT_EQUAL(res->error.cause, IMGSTAT_CAUSE_GPU_UNUSABLE);
  CU_ASSERT_PTR_NOT_NULL_FATAL(res->error.what);
  CU_ASSERT_STRING_EQUAL(res->error.what, option);
  CU_ASSERT_PTR_NULL(strstr(res->error.message, "--"));
  CU_ASSERT_EQUAL(res->nwarnings, 0);
}

static void test_backend_names(void) {
  imgstat_backend b = IMGSTAT_BACKEND_AUTO;
  CU_ASSERT_TRUE(imgstat_backend_from_name("gpu", &b));
  CU_ASSERT_EQUAL(b, IMGSTAT_BACKEND_GPU);
  CU_ASSERT_TRUE(imgstat_backend_from_name("cpu", &b));
  CU_ASSERT_EQUAL(b, IMGSTAT_BACKEND_CPU);
  CU_ASSERT_TRUE(imgstat_backend_from_name("auto", &b));
  CU_ASSERT_EQUAL(b, IMGSTAT_BACKEND_AUTO);
  CU_ASSERT_FALSE(imgstat_backend_from_name("GPU", &b));
  CU_ASSERT_FALSE(imgstat_backend_from_name("", &b));
  CU_ASSERT_FALSE(imgstat_backend_from_name(NULL, &b));
  CU_ASSERT_STRING_EQUAL(imgstat_backend_name(IMGSTAT_BACKEND_CPU), "cpu");
  CU_ASSERT_STRING_EQUAL(imgstat_backend_name(IMGSTAT_BACKEND_GPU), "gpu");
  CU_ASSERT_STRING_EQUAL(imgstat_backend_name(IMGSTAT_BACKEND_AUTO), "auto");
}

/* cpu: the partials are imgstat_cpu_stats', and the sums counted here. */
static void test_cpu(void) {
  imgstat_engine *e = engine(IMGSTAT_BACKEND_CPU, 0);
  imgstat_job_result res;
  CU_ASSERT_EQUAL(imgstat_engine_stats(e, "mem", &rgb, NULL, &res), IMGSTAT_OK);
  CU_ASSERT_EQUAL(res.status, IMGSTAT_OK);
  CU_ASSERT_EQUAL(res.failed_stage, IMGSTAT_STAGE_NONE);
  CU_ASSERT_STRING_EQUAL(res.error.message, "");
  CU_ASSERT_EQUAL(res.nwarnings, 0);
  CU_ASSERT_EQUAL(res.backend, IMGSTAT_BACKEND_CPU);
  CU_ASSERT_FALSE(res.verified);
  CU_ASSERT_FALSE(res.has_histograms);
  CU_ASSERT_EQUAL(res.width, 10);
  CU_ASSERT_EQUAL(res.height, 10);
  CU_ASSERT_EQUAL(res.channels, 3);
  CU_ASSERT_EQUAL(res.sample, IMGSTAT_U8);
  CU_ASSERT_TRUE(partials_equal(res.partial, rgb_ref, 3));
  /* independent: 0 + 1 + ... + 99 = 4950, squares 328350; B = 7 * 100 */
  CU_ASSERT_EQUAL(res.partial[0].count, 100);
  CU_ASSERT_EQUAL(res.partial[0].sum, 4950);
  CU_ASSERT_EQUAL(res.partial[0].sumsq, 328350);
  CU_ASSERT_EQUAL(res.partial[0].min_index, 0);
  CU_ASSERT_EQUAL(res.partial[0].max_index, 99);
  CU_ASSERT_EQUAL(res.partial[1].sum, 4950);
  CU_ASSERT_EQUAL(res.partial[1].min_index, 99);
  CU_ASSERT_EQUAL(res.partial[2].sum, 700);
  CU_ASSERT_EQUAL(res.partial[2].max, 7);
  imgstat_job_result_free(&res);
  imgstat_engine_destroy(e);
}

/* auto: the GPU when it starts; without a device the CPU, quietly; with a
 * device that fails to start, the CPU with one warning. */
static void test_auto(void) {
  imgstat_engine *e = engine(IMGSTAT_BACKEND_AUTO, 0);
  imgstat_job_result res;
  for (int item = 0; item < 2; item++) {
    CU_ASSERT_EQUAL(imgstat_engine_stats(e, NULL, &rgb, NULL, &res),
                    IMGSTAT_OK);
    CU_ASSERT_TRUE(partials_equal(res.partial, rgb_ref, 3));
    if (gpu_status == IMGSTAT_OK) {
      CU_ASSERT_EQUAL(res.backend, IMGSTAT_BACKEND_GPU);
      CU_ASSERT_EQUAL(res.nwarnings, 0);
    } else if (gpu_status == IMGSTAT_ERR_NODEVICE) {
      CU_ASSERT_EQUAL(res.backend, IMGSTAT_BACKEND_CPU);
      CU_ASSERT_EQUAL(res.nwarnings, 0); /* quietly */
    } else {
      CU_ASSERT_EQUAL(res.backend, IMGSTAT_BACKEND_CPU);
      /* the engine's warning goes to the first item only */
      CU_ASSERT_EQUAL(res.nwarnings, item == 0 ? 1 : 0);
    }
    imgstat_job_result_free(&res);
  }
  imgstat_engine_destroy(e);
}

/* gpu and verify: without a usable GPU every item fails with the
 * documented message; the first decodes its input (overlapping the
 * start-up), the next ones are refused without decoding. */
static void test_gpu_needed(void) {
  for (int verify = 0; verify < 2; verify++) {
    const char *option = verify ? "verify" : "backend=gpu";
    imgstat_engine *e =
        engine(verify ? IMGSTAT_BACKEND_AUTO : IMGSTAT_BACKEND_GPU, verify);
    imgstat_job_result res;
    /* before the decision a missing input is a load error */
    imgstat_engine_stats(e, "/nonexistent/x.png", NULL, NULL, &res);
    CU_ASSERT_EQUAL(res.failed_stage, IMGSTAT_STAGE_LOAD);
    CU_ASSERT_EQUAL(res.status, IMGSTAT_ERR_IO);
    imgstat_job_result_free(&res);
    imgstat_status st = imgstat_engine_stats(e, png_path, NULL, NULL, &res);
    if (gpu_status != IMGSTAT_OK) {
      CU_ASSERT_EQUAL(st, gpu_status);
      expect_gpu_unusable(&res, option);
      CU_ASSERT_EQUAL(res.width, 10); /* it was decoded */
      imgstat_job_result_free(&res);
      /* known now: no decoding (no load error for a missing file) */
      imgstat_engine_stats(e, "/nonexistent/x.png", NULL, NULL, &res);
      expect_gpu_unusable(&res, option);
      CU_ASSERT_EQUAL(res.width, 0);
    } else {
      CU_ASSERT_EQUAL(st, IMGSTAT_OK);
      CU_ASSERT_TRUE(partials_equal(res.partial, rgb_ref, 3));
      CU_ASSERT_EQUAL(res.backend,
                      verify ? IMGSTAT_BACKEND_CPU : IMGSTAT_BACKEND_GPU);
      CU_ASSERT_EQUAL(res.verified, verify);
      if (verify)
        CU_ASSERT_TRUE(partials_equal(res.gpu_partial, rgb_ref, 3));
    }
    imgstat_job_result_free(&res);
    imgstat_engine_destroy(e);
  }
}

/* imgstat_engine_decide: the policy applied before any item (normalize's
 * order): under gpu with no GPU, the first item is refused undecoded. */
static void test_decide_first(void) {
  imgstat_engine *e = engine(IMGSTAT_BACKEND_GPU, 0);
  imgstat_job_result res;
  imgstat_status st = imgstat_engine_decide(e, &res);
  CU_ASSERT_EQUAL(res.nwarnings, 0);
  if (gpu_status != IMGSTAT_OK) {
    CU_ASSERT_EQUAL(st, gpu_status);
    expect_gpu_unusable(&res, "backend=gpu");
    imgstat_job_result_free(&res);
    imgstat_norm_options no;
    memset(&no, 0, sizeof no);
    imgstat_engine_normalize(e, "/nonexistent/x.png", NULL, &no, &res);
    expect_gpu_unusable(&res, "backend=gpu");
  } else {
    CU_ASSERT_EQUAL(st, IMGSTAT_OK);
  }
  imgstat_job_result_free(&res);
  imgstat_engine_destroy(e);
  /* cpu: nothing to decide, nothing to say */
  e = engine(IMGSTAT_BACKEND_CPU, 0);
  CU_ASSERT_EQUAL(imgstat_engine_decide(e, &res), IMGSTAT_OK);
  CU_ASSERT_EQUAL(res.nwarnings, 0);
  imgstat_job_result_free(&res);
  imgstat_engine_destroy(e);
}

/* Inputs by path: decoded with the engine's options; load errors are the
 * item's, at the load stage. */
static void test_paths(void) {
  imgstat_engine *e = engine(IMGSTAT_BACKEND_CPU, 0);
  imgstat_job_result res;
  CU_ASSERT_EQUAL(imgstat_engine_stats(e, png_path, NULL, NULL, &res),
                  IMGSTAT_OK);
  CU_ASSERT_STRING_EQUAL(res.format, "PNG");
  CU_ASSERT_TRUE(partials_equal(res.partial, rgb_ref, 3));
  imgstat_job_result_free(&res);
  CU_ASSERT_EQUAL(
      imgstat_engine_stats(e, "/nonexistent/x.png", NULL, NULL, &res),
      IMGSTAT_ERR_IO);
  CU_ASSERT_EQUAL(res.failed_stage, IMGSTAT_STAGE_LOAD);
  CU_ASSERT(res.error.message[0] != '\0');
  imgstat_job_result_free(&res);
  CU_ASSERT_EQUAL(imgstat_engine_stats(e, NULL, NULL, NULL, &res),
                  IMGSTAT_ERR_ARG);
  imgstat_job_result_free(&res);
  imgstat_engine_destroy(e);

  /* the engine's load options apply: 100 pixels over a limit of 99 */
  imgstat_engine_options o;
  imgstat_error err;
  memset(&o, 0, sizeof o);
  o.backend = IMGSTAT_BACKEND_CPU;
  o.load.max_pixels = 99;
  CU_ASSERT_FATAL(imgstat_engine_create(&o, &e, &err) == IMGSTAT_OK);
  CU_ASSERT_EQUAL(imgstat_engine_stats(e, png_path, NULL, NULL, &res),
                  IMGSTAT_ERR_LIMIT);
  CU_ASSERT_EQUAL(res.failed_stage, IMGSTAT_STAGE_LOAD);
  imgstat_job_result_free(&res);
  imgstat_engine_destroy(e);
}

/* Histograms and their figures: the rank rule by hand on R = 0..99 (the
 * value at rank ceil(p * 100 / 100)), and equal to the library's CPU
 * histogram. */
static void test_histograms(void) {
  imgstat_engine *e = engine(IMGSTAT_BACKEND_AUTO, 0);
  imgstat_stats_request req;
  memset(&req, 0, sizeof req);
  req.histograms = 1;
  req.npercentiles = 3;
  req.percentiles[0] = 1;
  req.percentiles[1] = 90;
  req.percentiles[2] = 100;
  imgstat_job_result res;
  CU_ASSERT_EQUAL(imgstat_engine_stats(e, NULL, &rgb, &req, &res), IMGSTAT_OK);
  CU_ASSERT_TRUE(res.has_histograms);
  CU_ASSERT_EQUAL(res.hist_backend, res.backend);
  const imgstat_hist_figures *r = &res.hist_figures[0];
  CU_ASSERT_TRUE(r->has_values);
  CU_ASSERT_DOUBLE_EQUAL(r->median, 49, 0);
  CU_ASSERT_DOUBLE_EQUAL(r->percentile[0], 0, 0);
  CU_ASSERT_DOUBLE_EQUAL(r->percentile[1], 89, 0);
  CU_ASSERT_DOUBLE_EQUAL(r->percentile[2], 99, 0);
  CU_ASSERT_DOUBLE_EQUAL(res.hist_figures[2].median, 7, 0);
  CU_ASSERT_FALSE(res.hist_figures[2].has_shape); /* constant */
  for (int c = 0; c < 3; c++) {
    imgstat_histogram h;
    imgstat_error err;
    CU_ASSERT_FATAL(imgstat_histogram_compute(&rgb, c, NULL, &h, &err) ==
                    IMGSTAT_OK);
    CU_ASSERT_EQUAL(res.hist[c].bins, h.bins);
    CU_ASSERT_EQUAL(res.hist[c].total, 100);
    CU_ASSERT_EQUAL(
        memcmp(res.hist[c].counts, h.counts, sizeof *h.counts * h.bins), 0);
    imgstat_histogram_free(&h);
  }
  imgstat_job_result_free(&res);
  CU_ASSERT_PTR_NULL(res.hist[0].counts); /* freed and zeroed */
  imgstat_engine_destroy(e);
}

/* Normalization: minmax through the engine equals the CPU pipeline's
 * output, and stretches R to 0..255 (checked by hand: 99 -> 255). */
static void test_normalize(void) {
  imgstat_norm_options no;
  memset(&no, 0, sizeof no);
  no.mode = IMGSTAT_NORM_MINMAX;
  imgstat_norm_measure m;
  imgstat_norm_plan plan;
  imgstat_image ref;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_norm_measure_cpu(&rgb, &no, 1, &m, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_norm_plan_make(&rgb, &no, &m, &plan, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_norm_apply_cpu(&rgb, &plan, 1, &ref, &err) ==
                  IMGSTAT_OK);
  for (int b = 0; b < 2; b++) {
    imgstat_engine *e =
        engine(b ? IMGSTAT_BACKEND_AUTO : IMGSTAT_BACKEND_CPU, 0);
    imgstat_job_result res;
    CU_ASSERT_EQUAL(imgstat_engine_normalize(e, "mem", &rgb, &no, &res),
                    IMGSTAT_OK);
    CU_ASSERT_EQUAL(res.output.channels, 3);
    CU_ASSERT_EQUAL(res.output.sample, IMGSTAT_U8);
    size_t bytes = imgstat_image_plane_bytes(&ref) * 3;
    CU_ASSERT_EQUAL(memcmp(res.output.data, ref.data, bytes), 0);
    CU_ASSERT_EQUAL(((uint8_t *)res.output.planes[0])[0], 0);
    CU_ASSERT_EQUAL(((uint8_t *)res.output.planes[0])[99], 255);
    if (b == 0 || gpu_status != IMGSTAT_OK)
      CU_ASSERT_EQUAL(res.backend, IMGSTAT_BACKEND_CPU);
    imgstat_job_result_free(&res);
    /* options the image cannot take: the item's error, no fallback */
    imgstat_norm_options bad = no;
    bad.mode = IMGSTAT_NORM_GIVEN;
    bad.nstats = 2; /* two values for three channels */
    bad.mean[0] = bad.mean[1] = 1;
    bad.std[0] = bad.std[1] = 1;
    CU_ASSERT_EQUAL(imgstat_engine_normalize(e, "mem", &rgb, &bad, &res),
                    IMGSTAT_ERR_ARG);
    CU_ASSERT_EQUAL(res.failed_stage, IMGSTAT_STAGE_COMPUTE);
    CU_ASSERT_EQUAL(res.nwarnings, 0);
    CU_ASSERT_PTR_NULL(res.output.data);
    imgstat_job_result_free(&res);
    imgstat_engine_destroy(e);
  }
  imgstat_image_free(&ref);
}

/* auto's cost rule: the formula, on a model made for the test. CPU 1 s/GB
 * per core; GPU 0.25 s/GB per device plus 2 s fixed. 8 GB on 1 worker:
 * CPU 8 s, GPU 4 s: the GPU. On 4 workers: CPU 2 s, GPU 4 s (2 devices:
 * 3 s): the CPU. */
static void test_cost_formula(void) {
  imgstat_cost_model m;
  memset(&m, 0, sizeof m);
  m.fixed_s = 2;
  for (int k = 0; k < IMGSTAT_WORK_KINDS; k++)
    for (int t = 0; t < 3; t++) {
      m.cpu_s_per_gb[k][t] = 1;
      m.gpu_s_per_gb[k][t] = 0.25;
    }
  CU_ASSERT_TRUE(
      imgstat_cost_gpu_pays(&m, IMGSTAT_WORK_STATS, IMGSTAT_U8, 8, 1, 1));
  CU_ASSERT_FALSE(
      imgstat_cost_gpu_pays(&m, IMGSTAT_WORK_STATS, IMGSTAT_U8, 8, 4, 1));
  CU_ASSERT_FALSE(
      imgstat_cost_gpu_pays(&m, IMGSTAT_WORK_STATS, IMGSTAT_U8, 8, 4, 2));
  /* the break-even of 1 worker: 2 + g/4 < g from g = 8/3 GB on */
  CU_ASSERT_FALSE(imgstat_cost_gpu_pays(&m, IMGSTAT_WORK_NORMALIZE, IMGSTAT_F32,
                                        2.6, 1, 1));
  CU_ASSERT_TRUE(imgstat_cost_gpu_pays(&m, IMGSTAT_WORK_NORMALIZE, IMGSTAT_F32,
                                       2.7, 1, 1));
  /* one kind and type at a time */
  m.cpu_s_per_gb[IMGSTAT_WORK_HISTOGRAMS][1] = 0.1;
  CU_ASSERT_FALSE(imgstat_cost_gpu_pays(&m, IMGSTAT_WORK_HISTOGRAMS,
                                        IMGSTAT_U16, 100, 1, 1));
  CU_ASSERT_TRUE(imgstat_cost_gpu_pays(&m, IMGSTAT_WORK_HISTOGRAMS, IMGSTAT_U8,
                                       100, 1, 1));
  /* nothing to do, or a kind out of range: never */
  CU_ASSERT_FALSE(
      imgstat_cost_gpu_pays(&m, IMGSTAT_WORK_STATS, IMGSTAT_U8, 0, 1, 1));
  CU_ASSERT_FALSE(
      imgstat_cost_gpu_pays(&m, IMGSTAT_WORK_KINDS, IMGSTAT_U8, 100, 1, 1));
}

/* The measured model: a single photo or a handful (1 to 8 RGB photos of
 * 12 MP at 8 bits; one at 16 bits) never repays CUDA, whatever the work
 * and the number of workers; and the figures are sane (positive, the
 * fixed cost at least the start-up measured, 0.2 s). */
static void test_cost_measured(void) {
  const imgstat_cost_model *m = imgstat_cost_model_measured();
  CU_ASSERT_TRUE(m->fixed_s >= 0.2);
  for (int k = 0; k < IMGSTAT_WORK_KINDS; k++) {
    for (int t = 0; t < 3; t++)
      CU_ASSERT_TRUE(m->cpu_s_per_gb[k][t] > 0 && m->gpu_s_per_gb[k][t] > 0);
    for (int w = 1; w <= 64; w *= 2) {
      /* JPEGs decoded on the device: a handful on one core may repay (8
       * photos: 0.9 s of TurboJPEG against 0.4 s), a single one never */
      for (int n = 1; n <= (k == IMGSTAT_WORK_JPEG_DECODE ? 1 : 8); n++)
        CU_ASSERT_FALSE(imgstat_cost_gpu_pays(
            NULL, (imgstat_work_kind)k, IMGSTAT_U8, 36e6 * n * 1e-9, w, 1));
      CU_ASSERT_FALSE(imgstat_cost_gpu_pays(NULL, (imgstat_work_kind)k,
                                            IMGSTAT_U16, 72e6 * 1e-9, w, 1));
    }
  }
}

/* The measured rule for a folder of JPEGs (200 photos of 12 MP, 16
 * workers): decoded on the device they repay CUDA; their statistics alone
 * (decoded on the CPU, uploaded) do not. */
static void test_cost_jpeg(void) {
  double gb = 200 * 36e6 * 1e-9;
  CU_ASSERT_TRUE(imgstat_cost_gpu_pays(NULL, IMGSTAT_WORK_JPEG_DECODE,
                                       IMGSTAT_U8, gb, 16, 1));
  CU_ASSERT_FALSE(
      imgstat_cost_gpu_pays(NULL, IMGSTAT_WORK_STATS, IMGSTAT_U8, gb, 16, 1));
}

/* auto with the measured rule: one small image never starts CUDA, however
 * many items are announced when each is tiny; a rule that says the GPU
 * repays starts it (in a build without CUDA the items then run on the CPU,
 * quietly). */
static void test_auto_rule_engine(void) {
  for (int free_gpu = 0; free_gpu < 2; free_gpu++) {
    imgstat_engine_options o;
    memset(&o, 0, sizeof o);
    o.cost = free_gpu ? &gpu_free : NULL;
    o.workers = 2;
    imgstat_engine *e = NULL;
    imgstat_error err;
    memset(&err, 0, sizeof err);
    CU_ASSERT_FATAL(imgstat_engine_create(&o, &e, &err) == IMGSTAT_OK);
    CU_ASSERT_FALSE(imgstat_engine_gpu_started(e)); /* nothing yet */
    imgstat_engine_set_workload(e, 1000);
    imgstat_job_result res;
    CU_ASSERT_EQUAL(imgstat_engine_stats(e, NULL, &rgb, NULL, &res),
                    IMGSTAT_OK);
    CU_ASSERT_TRUE(partials_equal(res.partial, rgb_ref, 3));
    CU_ASSERT_EQUAL(imgstat_engine_gpu_started(e), free_gpu);
    if (!free_gpu || gpu_status == IMGSTAT_ERR_NODEVICE) {
      CU_ASSERT_EQUAL(res.backend, IMGSTAT_BACKEND_CPU);
      CU_ASSERT_EQUAL(res.nwarnings, 0);
    } else if (gpu_status == IMGSTAT_OK) {
      CU_ASSERT_EQUAL(res.backend, IMGSTAT_BACKEND_GPU);
    }
    imgstat_job_result_free(&res);
    imgstat_engine_destroy(e);
  }
}

/* The child of test_auto_broken_gpu, a fresh process (the switch is read
 * once per process) with IMGSTAT_GPU_FAULT=bogus: exits 0 when auto used
 * the CPU with the one engine warning, on the first item only. */
static int broken_gpu_child(void) {
  imgstat_image img;
  imgstat_error err;
  if (imgstat_image_alloc(&img, 2, 2, 1, IMGSTAT_U8, 0, &err) != IMGSTAT_OK)
    return 10;
  memset(img.data, 3, 4);
  imgstat_engine_options o;
  memset(&o, 0, sizeof o);
  o.cost = &gpu_free;
  imgstat_engine *e;
  if (imgstat_engine_create(&o, &e, &err) != IMGSTAT_OK)
    return 11;
  imgstat_job_result res;
  if (imgstat_engine_stats(e, NULL, &img, NULL, &res) != IMGSTAT_OK)
    return 12;
  if (res.backend != IMGSTAT_BACKEND_CPU || res.nwarnings != 1 ||
      res.warning[0].about_input)
    return 13;
  printf("%s\n", res.warning[0].text);
  if (strncmp(res.warning[0].text, "GPU unusable (IMGSTAT_GPU_FAULT=", 32) ||
      !strstr(res.warning[0].text, "); using the CPU"))
    return 14;
  imgstat_job_result_free(&res);
  if (imgstat_engine_stats(e, NULL, &img, NULL, &res) != IMGSTAT_OK ||
      res.nwarnings != 0)
    return 15;
  imgstat_engine_destroy(e);
  imgstat_image_free(&img);
  return 0;
}

/* A GPU that is there but fails to start (CUDA builds: a malformed
 * IMGSTAT_GPU_FAULT): auto warns once, "GPU unusable (REASON); using the
 * CPU", and uses the CPU. */
static void test_auto_broken_gpu(void) {
  if (!imgstat_gpu_compiled()) {
    printf("(no CUDA in this build: the broken-GPU warning is not "
           "reachable) ");
    return;
  }
  fflush(NULL);
  pid_t pid = fork();
  CU_ASSERT_FATAL(pid >= 0);
  if (pid == 0) {
    setenv("IMGSTAT_GPU_FAULT", "bogus", 1);
    execl("/proc/self/exe", "test_job", "--broken-gpu-child", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  CU_ASSERT_FATAL(waitpid(pid, &status, 0) == pid);
  CU_ASSERT_TRUE(WIFEXITED(status));
  CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
}

static int suite_init(void) {
  imgstat_gpu *gpu = NULL;
  memset(&gpu_err, 0, sizeof gpu_err);
  gpu_status = imgstat_gpu_create(-1, &gpu, &gpu_err);
  if (gpu_status == IMGSTAT_OK)
    imgstat_gpu_destroy(gpu);
  printf("\nGPU here: %s\n",
         gpu_status == IMGSTAT_OK ? "usable" : gpu_err.message);
  if (!test_tmp_template(tmpdir, sizeof tmpdir, "imgstat-job-") ||
      !mkdtemp(tmpdir))
    return 1;
  snprintf(png_path, sizeof png_path, "%s/rgb.png", tmpdir);
  imgstat_error err;
  if (!make_rgb())
    return 1;
  return imgstat_image_write(png_path, &rgb, NULL, &err) != IMGSTAT_OK;
}

static int suite_clean(void) {
  imgstat_image_free(&rgb);
  unlink(png_path);
  rmdir(tmpdir);
  return 0;
}

/* Settings that cannot go together: the library's words and a cause, which
 * the command line words in its own flags. */
static void test_conflict_cause(void) {
  imgstat_engine_options o;
  memset(&o, 0, sizeof o);
  o.backend = IMGSTAT_BACKEND_CPU;
  o.jpeg_decoder = IMGSTAT_JPEG_DECODER_GPU;
  imgstat_engine *e = NULL;
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(imgstat_engine_create(&o, &e, &err), IMGSTAT_ERR_ARG);
  CU_ASSERT_PTR_NULL(e);
  CU_ASSERT_STRING_EQUAL(err.message,
                         "jpeg_decoder=gpu cannot be used with backend=cpu");
  CU_ASSERT_EQUAL(err.cause, IMGSTAT_CAUSE_CONFLICT);
  CU_ASSERT_STRING_EQUAL(imgstat_cause_name(err.cause), "conflict");
  CU_ASSERT_PTR_NOT_NULL_FATAL(err.what);
  CU_ASSERT_STRING_EQUAL(err.what, "jpeg_decoder=gpu");
  char words[IMGSTAT_CLI_WORDS_MAX];
  CU_ASSERT_STRING_EQUAL(
      ist_cli_error_words(&err, words),
      "--jpeg-decoder gpu cannot be used with --backend cpu");
}

/* verify's GPU side failing: the library's words, the command line's flag. */
static void test_gpu_failed_words(void) {
  imgstat_error err;
  memset(&err, 0, sizeof err);
  imgstat_error_set(&err, IMGSTAT_ERR_DEVICE, "verify: GPU failed: %s",
                    "out of memory");
  imgstat_error_cause(&err, IMGSTAT_CAUSE_GPU_FAILED, 0, 0, "verify");
  CU_ASSERT_STRING_EQUAL(imgstat_cause_name(err.cause), "gpu_failed");
  char words[IMGSTAT_CLI_WORDS_MAX];
  CU_ASSERT_STRING_EQUAL(ist_cli_error_words(&err, words),
                         "--verify: GPU failed: out of memory");
}

/* The one worker policy. */
static void test_plan_workers(void) {
  imgstat_engine_options o;
  memset(&o, 0, sizeof o);
  /* one input alone, no jobs: the caller's thread, every core's threads */
  CU_ASSERT_EQUAL(imgstat_engine_plan_workers(-1, 0, 8, &o), 1);
  CU_ASSERT_EQUAL(o.threads, 0);
  CU_ASSERT_EQUAL(o.workers, 1);
  /* several, no jobs: one per core, each on one thread */
  CU_ASSERT_EQUAL(imgstat_engine_plan_workers(-1, 1, 8, &o), 8);
  CU_ASSERT_EQUAL(o.threads, 1);
  CU_ASSERT_EQUAL(o.workers, 8);
  CU_ASSERT_EQUAL(imgstat_engine_plan_workers(0, 0, 8, &o), 8);
  /* -j 1 asked for: one worker on one thread */
  CU_ASSERT_EQUAL(imgstat_engine_plan_workers(1, 1, 8, &o), 1);
  CU_ASSERT_EQUAL(o.threads, 1);
  /* more workers than cores: auto's rule counts the cores */
  CU_ASSERT_EQUAL(imgstat_engine_plan_workers(20, 1, 8, &o), 20);
  CU_ASSERT_EQUAL(o.workers, 8);
  CU_ASSERT_EQUAL(imgstat_engine_plan_workers(3, 1, 8, &o), 3);
  CU_ASSERT_EQUAL(o.workers, 3);
}

/* A failed item's result: zeroed, the message (or "unknown error") and the
 * cause kept; a device item refuses no device image. */
static void test_result_fail(void) {
  imgstat_job_result res;
  memset(&res, 0xff, sizeof res);
  imgstat_error why;
  memset(&why, 0, sizeof why);
  imgstat_error_set(&why, IMGSTAT_ERR_LIMIT,
                    "over the limit of 4 (max_pixels)");
  imgstat_error_cause(&why, IMGSTAT_CAUSE_MAX_PIXELS, 4, 9, NULL);
  CU_ASSERT_EQUAL(imgstat_job_result_fail(&res, IMGSTAT_STAGE_LOAD,
                                          IMGSTAT_ERR_LIMIT, &why),
                  IMGSTAT_ERR_LIMIT);
  CU_ASSERT_EQUAL(res.status, IMGSTAT_ERR_LIMIT);
  CU_ASSERT_EQUAL(res.failed_stage, IMGSTAT_STAGE_LOAD);
  CU_ASSERT_STRING_EQUAL(res.error.message, why.message);
  CU_ASSERT_EQUAL(res.error.cause, IMGSTAT_CAUSE_MAX_PIXELS);
  CU_ASSERT_EQUAL(res.error.limit, 4);
  CU_ASSERT_EQUAL(res.error.value, 9);
  CU_ASSERT_EQUAL(res.nwarnings, 0);
  CU_ASSERT_EQUAL(res.has_histograms, 0);
  memset(&why, 0, sizeof why);
  imgstat_job_result_fail(&res, IMGSTAT_STAGE_LOAD, IMGSTAT_ERR_IO, &why);
  CU_ASSERT_STRING_EQUAL(res.error.message, "unknown error");
  CU_ASSERT_EQUAL(res.error.cause, IMGSTAT_CAUSE_NONE);
  imgstat_image shape;
  memset(&shape, 0, sizeof shape);
  memset(&res, 0, sizeof res);
  CU_ASSERT_EQUAL(imgstat_device_stats(NULL, NULL, &shape, 0, NULL, &res, &why),
                  IMGSTAT_ERR_ARG);
}

static const test_case tests[] = {
    {"job", NULL},
    {"backend names", test_backend_names},
    {"cpu: partials", test_cpu},
    {"auto: GPU, or the CPU quietly", test_auto},
    {"gpu and verify need a usable GPU", test_gpu_needed},
    {"decide before the first item", test_decide_first},
    {"inputs by path", test_paths},
    {"histograms", test_histograms},
    {"normalize", test_normalize},
    {"auto with a GPU that fails to start", test_auto_broken_gpu},
    {"auto's cost rule: the formula", test_cost_formula},
    {"auto's cost rule: a handful of photos stays on the CPU",
     test_cost_measured},
    {"auto's cost rule: a folder of JPEGs decoded on the device",
     test_cost_jpeg},
    {"auto's cost rule in the engine", test_auto_rule_engine},
    {"settings in conflict: a cause, no flag", test_conflict_cause},
    {"verify's GPU failing: a cause, no flag", test_gpu_failed_words},
    {"the one worker policy", test_plan_workers},
    {"a failed item's result", test_result_fail},
    {NULL, NULL}};

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--broken-gpu-child") == 0)
    return broken_gpu_child();
  return test_main_init(tests, suite_init, suite_clean);
}
