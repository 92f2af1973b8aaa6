/*
 * GPU backend tests: every kernel (fast and the ladder 1..7) and sample type
 * against an independent reference computed here (a plain sequential scan,
 * float moments in long double with two passes) and against the CPU backend.
 * Against the CPU backend every partial must be bit-identical, f32 mean and
 * M2 included (both follow the canonical float order, docs/float-order.md);
 * against the long-double reference f32 mean / M2 must be within the
 * accuracy bound stated in docs/gpu.md.
 *
 * The context's own behaviour too (test_gpu_context.c): submit / wait with
 * several images in flight from two threads, images with a row stride (pageable
 * and pinned, whole and by ranges), device planes wrapped in place or pitched,
 * dense interleaved images reduced without gathering, and the context's device
 * honoured from a thread whose current device differs (with two GPUs).
 *
 * Without a device (or without a CUDA build) the program prints
 * "skipped: ..." and returns 77, which ctest reports as skipped.
 * IMGSTAT_TEST_QUICK=1 runs a reduced set (for compute-sanitizer).
 */
#include "test_gpu.h"
#include "imgstat/cuda.h"
#include "imgstat/imgstat.h"
#include "test_gpu_util.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The f32 tolerance (docs/gpu.md), with K the plane's shift (its first finite
 * sample among the first 16, else 0) and n the finite count:
 *   |mean - ref| <= TOL * (|mean| + std)
 *   |m2 - ref|   <= TOL * m2 + 8 eps |mean - K| sqrt(m2 n log2(n + 2)) */
#define TOL 1e-12

static double test_shift(const float *x, uint64_t n) {
  for (uint64_t i = 0; i < n && i < 16; ++i)
    if (isfinite(x[i]))
      return x[i];
  return 0.0;
}

imgstat_gpu *g_gpu;
int g_quick;
uint64_t g_rng = 0x1234567887654321u;
int g_kernels[NKERNELS] = {0, 1, 2, 3, 4, 5, 6, 7};

/* ---- images ----------------------------------------------------------- */

uint64_t npix(const imgstat_image *img) {
  return (uint64_t)img->width * img->height;
}

/* Random full-range samples; floats over many magnitudes and signs. */
void fill_random(imgstat_image *img) {
  uint64_t n = npix(img);
  for (int c = 0; c < img->channels; ++c) {
    if (img->sample == IMGSTAT_U8) {
      uint8_t *p = img->planes[c];
      for (uint64_t i = 0; i < n; ++i)
        p[i] = (uint8_t)(test_rand(&g_rng) >> 56);
    } else if (img->sample == IMGSTAT_U16) {
      uint16_t *p = img->planes[c];
      for (uint64_t i = 0; i < n; ++i)
        p[i] = (uint16_t)(test_rand(&g_rng) >> 48);
    } else {
      float *p = img->planes[c];
      /* One scale per plane, so that M2 is dominated by many samples. */
      double scale = pow(10.0, (double)(c * 3) - 2.0);
      for (uint64_t i = 0; i < n; ++i) {
        double u = (double)(test_rand(&g_rng) >> 11) / 9007199254740992.0;
        p[i] = (float)((u * 2.0 - 1.0) * scale + scale * 0.25);
      }
    }
  }
}

/* ---- the independent reference ---------------------------------------- */

void ref_scan(const void *plane, imgstat_sample sample, uint64_t n,
              imgstat_partial *r) {
  memset(r, 0, sizeof *r);
  r->min = INFINITY;
  r->max = -INFINITY;
  r->min_index = UINT64_MAX;
  r->max_index = UINT64_MAX;
  if (sample == IMGSTAT_F32) {
    const float *x = plane;
    long double sum = 0;
    for (uint64_t i = 0; i < n; ++i) {
      float v = x[i];
      if (!isfinite(v)) { /* counted apart, in no other figure */
        if (isnan(v))
          r->nan_count++;
        else
          r->inf_count++;
        continue;
      }
      r->count++;
      sum += v;
      if (v < r->min) {
        r->min = v;
        r->min_index = i;
      }
      if (v > r->max) {
        r->max = v;
        r->max_index = i;
      }
    }
    if (r->count == 0)
      return;
    long double mean = sum / (long double)r->count, m2 = 0;
    for (uint64_t i = 0; i < n; ++i)
      if (isfinite(x[i])) {
        long double d = (long double)x[i] - mean;
        m2 += d * d;
      }
    r->mean = (double)mean;
    r->m2 = (double)m2;
    return;
  }
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t v = sample == IMGSTAT_U8 ? ((const uint8_t *)plane)[i]
                                      : ((const uint16_t *)plane)[i];
    r->count++;
    r->sum += v;
    r->sumsq += v * v;
    if ((double)v < r->min) {
      r->min = (double)v;
      r->min_index = i;
    }
    if ((double)v > r->max) {
      r->max = (double)v;
      r->max_index = i;
    }
  }
}

/* ---- comparison ---------------------------------------------------------- */

static int g_reported; /* details of the first failures only */

static int same_double(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

/* 1 when gpu matches want; prints what differs otherwise. tol_scale 0: f32
 * mean and M2 to the bit (want is the CPU backend's); else it scales the
 * accuracy bound against the long-double reference. */
int partial_matches(const imgstat_partial *gpu, const imgstat_partial *want,
                    imgstat_sample sample, double k, double tol_scale,
                    const char *what, int kernel, int c) {
  int ok =
      gpu->count == want->count && gpu->nan_count == want->nan_count &&
      gpu->inf_count == want->inf_count && same_double(gpu->min, want->min) &&
      same_double(gpu->max, want->max) && gpu->min_index == want->min_index &&
      gpu->max_index == want->max_index && gpu->sum == want->sum &&
      gpu->sumsq == want->sumsq;
  double dmean = 0, dm2 = 0, lim_mean = 0, lim_m2 = 0;
  if (sample == IMGSTAT_F32) {
    double sd = want->count ? sqrt(want->m2 / (double)want->count) : 0.0;
    dmean = fabs(gpu->mean - want->mean);
    dm2 = fabs(gpu->m2 - want->m2);
    lim_mean = TOL * tol_scale * (fabs(want->mean) + sd);
    double n = (double)want->count;
    lim_m2 =
        tol_scale * (TOL * want->m2 + 8 * DBL_EPSILON * fabs(want->mean - k) *
                                          sqrt(want->m2 * n * log2(n + 2)));
    if (tol_scale == 0)
      ok = ok && same_double(gpu->mean, want->mean) &&
           same_double(gpu->m2, want->m2);
    else
      ok = ok && dmean <= lim_mean && dm2 <= lim_m2;
  } else {
    ok = ok && same_double(gpu->mean, want->mean) &&
         same_double(gpu->m2, want->m2);
  }
  if (!ok && g_reported++ < 20) {
    printf("\n  MISMATCH %s kernel %d channel %d:\n"
           "    count %llu/%llu nan %llu/%llu inf %llu/%llu\n"
           "    min %.17g@%llu / %.17g@%llu\n"
           "    max %.17g@%llu / %.17g@%llu\n"
           "    sum %llu/%llu sumsq %llu/%llu\n"
           "    mean %.17g/%.17g (diff %.3g, limit %.3g)\n"
           "    m2 %.17g/%.17g (diff %.3g, limit %.3g)\n",
           what, kernel, c, (unsigned long long)gpu->count,
           (unsigned long long)want->count, (unsigned long long)gpu->nan_count,
           (unsigned long long)want->nan_count,
           (unsigned long long)gpu->inf_count,
           (unsigned long long)want->inf_count, gpu->min,
           (unsigned long long)gpu->min_index, want->min,
           (unsigned long long)want->min_index, gpu->max,
           (unsigned long long)gpu->max_index, want->max,
           (unsigned long long)want->max_index, (unsigned long long)gpu->sum,
           (unsigned long long)want->sum, (unsigned long long)gpu->sumsq,
           (unsigned long long)want->sumsq, gpu->mean, want->mean, dmean,
           lim_mean, gpu->m2, want->m2, dm2, lim_m2);
  }
  return ok;
}

/* Largest relative float errors seen (printed at the end: docs/gpu.md). */
static double g_worst_mean, g_worst_m2;

static void note_error(const imgstat_partial *gpu, const imgstat_partial *ref) {
  if (ref->count == 0)
    return;
  double sd = sqrt(ref->m2 / (double)ref->count);
  double scale = fabs(ref->mean) + sd;
  if (scale > 0) {
    double e = fabs(gpu->mean - ref->mean) / scale;
    if (e > g_worst_mean)
      g_worst_mean = e;
  }
  if (ref->m2 > 0) {
    double e = fabs(gpu->m2 - ref->m2) / ref->m2;
    if (e > g_worst_m2)
      g_worst_m2 = e;
  }
}

/* Runs kernels[0..nk) on img and checks every channel against the reference
 * and (when it runs) the CPU backend. Returns the number of mismatches. */
static int check_image_kernels(const imgstat_image *img, const int *kernels,
                               int nk, const char *what) {
  imgstat_partial ref[IMGSTAT_MAX_CHANNELS], cpu[IMGSTAT_MAX_CHANNELS];
  for (int c = 0; c < img->channels; ++c)
    ref_scan(img->planes[c], img->sample, npix(img), &ref[c]);
  imgstat_error err = {0};
  int have_cpu = imgstat_cpu_stats(img, 1, cpu, &err) == IMGSTAT_OK;
  CU_ASSERT(have_cpu);
  int bad = 0;
  for (int k = 0; k < nk; ++k) {
    imgstat_partial out[IMGSTAT_MAX_CHANNELS];
    memset(out, 0xA5, sizeof out); /* poison: every field must be written */
    imgstat_status st = imgstat_gpu_stats(g_gpu, img, kernels[k], out, &err);
    if (st != IMGSTAT_OK) {
      printf("\n  %s kernel %d: %s\n", what, kernels[k], err.message);
      bad++;
      continue;
    }
    for (int c = 0; c < img->channels; ++c) {
      double shift = img->sample == IMGSTAT_F32
                         ? test_shift(img->planes[c], npix(img))
                         : 0.0;
      if (img->sample == IMGSTAT_F32)
        note_error(&out[c], &ref[c]);
      if (!partial_matches(&out[c], &ref[c], img->sample, shift, 1.0, what,
                           kernels[k], c))
        bad++;
      if (have_cpu &&
          !partial_matches(&out[c], &cpu[c], img->sample, shift, 0.0,
                           "(vs CPU backend, to the bit)", kernels[k], c))
        bad++;
    }
  }
  return bad;
}

const imgstat_sample g_samples[3] = {IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};

/* ---- tests ----------------------------------------------------------------
 */

/* Awkward sizes around block, tile and vector boundaries, then random sizes
 * up to 2^26 + 3, every kernel, every sample type. */
static void test_sizes(void) {
  static const uint64_t fixed[] = {
      1,    2,    3,     15,    16,    17,    31,     33,      63,
      64,   65,   255,   256,   257,   511,   1023,   1024,    1025,
      4095, 4097, 16383, 16385, 65535, 65537, 262147, 1048573, (1u << 22) + 5};
  static const uint64_t quick[] = {1, 17, 33, 257, 1025, 16385};
  const uint64_t *sizes = g_quick ? quick : fixed;
  int nfixed = g_quick ? (int)(sizeof quick / sizeof *quick)
                       : (int)(sizeof fixed / sizeof *fixed);
  int nrandom = g_quick ? 1 : 8;
  int bad = 0;
  for (int s = 0; s < 3; ++s) {
    for (int i = 0; i < nfixed + nrandom + (g_quick ? 0 : 1); ++i) {
      uint64_t n;
      if (i < nfixed)
        n = sizes[i];
      else if (i < nfixed + nrandom) /* log-uniform */
        n = 1 + (uint64_t)exp((double)(test_rand(&g_rng) % 1000) / 1000.0 *
                              log(g_quick ? 5000.0 : 3.0e7));
      else
        n = ((uint64_t)1 << 26) + 3;
      int channels = n <= 100000 ? 3 : 1;
      imgstat_image img;
      if (!test_image_make(&img, (uint32_t)n, 1, channels, g_samples[s])) {
        CU_FAIL("out of host memory");
        return;
      }
      fill_random(&img);
      char what[64];
      snprintf(what, sizeof what, "size %llu depth %d", (unsigned long long)n,
               imgstat_sample_depth(g_samples[s]));
      bad += check_image_kernels(&img, g_kernels, NKERNELS, what);
      test_image_free(&img);
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
}

/* 1xN, Nx1 and odd shapes: indices are raster indices whatever the shape. */
static void test_shapes(void) {
  static const uint32_t shapes[][2] = {{1, 1},    {1, 1000}, {1000, 1},
                                       {4097, 3}, {3, 4097}, {77, 131},
                                       {1, 70001}};
  int n = g_quick ? 4 : (int)(sizeof shapes / sizeof *shapes);
  int bad = 0;
  for (int s = 0; s < 3; ++s)
    for (int i = 0; i < n; ++i) {
      imgstat_image img;
      CU_ASSERT_FATAL(
          test_image_make(&img, shapes[i][0], shapes[i][1], 4, g_samples[s]));
      fill_random(&img);
      char what[64];
      snprintf(what, sizeof what, "shape %ux%u depth %d", shapes[i][0],
               shapes[i][1], imgstat_sample_depth(g_samples[s]));
      bad += check_image_kernels(&img, g_kernels, NKERNELS, what);
      test_image_free(&img);
    }
  CU_ASSERT_EQUAL(bad, 0);
}

/* Constant planes (std 0 exactly), extremes, many ties, min/max at the ends. */
static void test_patterns(void) {
  const uint64_t n = g_quick ? 5003 : 300007;
  int bad = 0;
  for (int s = 0; s < 3; ++s) {
    imgstat_sample sample = g_samples[s];
    imgstat_image img;
    CU_ASSERT_FATAL(test_image_make(&img, (uint32_t)n, 1, 4, sample));
    for (int pattern = 0; pattern < 5; ++pattern) {
      for (int c = 0; c < 4; ++c) {
        for (uint64_t i = 0; i < n; ++i) {
          double v;
          double top = sample == IMGSTAT_U8    ? 255.0
                       : sample == IMGSTAT_U16 ? 65535.0
                                               : FLT_MAX;
          double low = sample == IMGSTAT_F32 ? -FLT_MAX : 0.0;
          switch (pattern) {
          case 0: /* constant: low, top, middle, 1 */
            v = c == 0 ? low : c == 1 ? top : c == 2 ? floor(top / 3) : 1;
            break;
          case 1: /* ties: a few values only */
            v = (double)(test_rand(&g_rng) % 4) + (c == 3 ? top - 3 : 0);
            break;
          case 2: /* min at the last sample, max at the first */
            v = i == n - 1 ? low : i == 0 ? top : 100.0 + (double)(i % 7);
            break;
          case 3: /* ramp up and down */
            v = c % 2 ? (double)(i % 256) : (double)((n - i) % 256);
            break;
          default: /* extremes alternating */
            v = (i + c) % 2 ? top : low;
            break;
          }
          if (sample == IMGSTAT_U8)
            ((uint8_t *)img.planes[c])[i] = (uint8_t)v;
          else if (sample == IMGSTAT_U16)
            ((uint16_t *)img.planes[c])[i] = (uint16_t)v;
          else
            ((float *)img.planes[c])[i] = (float)v;
        }
      }
      char what[64];
      snprintf(what, sizeof what, "pattern %d depth %d", pattern,
               imgstat_sample_depth(sample));
      bad += check_image_kernels(&img, g_kernels, NKERNELS, what);
    }
    test_image_free(&img);
  }
  CU_ASSERT_EQUAL(bad, 0);
}

/* Float specials: NaN and Inf counted and left out; an all-NaN plane; an
 * all-Inf plane; -0.0 and 0.0 ties; a large offset with small noise. */
static void test_float_specials(void) {
  const uint64_t n = g_quick ? 3001 : 200003;
  imgstat_image img;
  CU_ASSERT_FATAL(test_image_make(&img, (uint32_t)n, 1, 4, IMGSTAT_F32));
  int bad = 0;
  for (int variant = 0; variant < 3; ++variant) {
    float *p0 = img.planes[0], *p1 = img.planes[1], *p2 = img.planes[2],
          *p3 = img.planes[3];
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t r = test_rand(&g_rng);
      float u = (float)((double)(r >> 40) / 16777216.0);
      /* plane 0: random with NaN, +Inf, -Inf sprinkled */
      p0[i] = r % 17 == 0   ? NAN
              : r % 19 == 0 ? INFINITY
              : r % 23 == 0 ? -INFINITY
                            : u * 100.0f - 50.0f;
      /* plane 1: all NaN (variants 0, 2) or all +-Inf (variant 1) */
      p1[i] = variant != 1 ? NAN : (i % 2 ? INFINITY : -INFINITY);
      /* plane 2: signed zeros and ones: min/max ties across signs */
      p2[i] = (r >> 8) % 3 == 0 ? -0.0f : (r >> 8) % 3 == 1 ? 0.0f : 1.0f;
      /* plane 3: 1e6 + small noise (cancellation test); variant 1: NaN
       * first; variant 2: an outlier first, so K is far from the mean and the
       * looser term of the m2 tolerance applies */
      p3[i] = i == 0 && variant == 1   ? NAN
              : i == 0 && variant == 2 ? 0.0f
                                       : 1.0e6f + u;
    }
    static const char *names[] = {"float specials A", "float specials B",
                                  "float specials C (outlier first)"};
    bad += check_image_kernels(&img, g_kernels, NKERNELS, names[variant]);
  }
  test_image_free(&img);
  CU_ASSERT_EQUAL(bad, 0);
}

/* Float extremes in the plane's last, partial vector (its n % 4 samples,
 * taken after every whole vector by the block whose chunk holds them): a
 * unique min and max there, ties there with earlier samples (the earlier
 * wins), NaN, Inf and -0.0 there after a +0.0, a plane finite only there;
 * and the partial vector alone in the plane's last chunk (n = 2 chunks of
 * 65536 samples + 1). Against the plain scan and the CPU backend. */
static void test_float_tail(void) {
  static const uint64_t sizes[] = {2 * 65536 + 1, 3 * 65536 + 4002,
                                   3 * 65536 + 4003, 4097};
  static const uint64_t quick[] = {4097, 5003, 65537};
  int nsizes = g_quick ? (int)(sizeof quick / sizeof *quick)
                       : (int)(sizeof sizes / sizeof *sizes);
  int bad = 0;
  for (int s = 0; s < nsizes; ++s) {
    const uint64_t n = g_quick ? quick[s] : sizes[s];
    const uint64_t whole = n / 4 * 4; /* the partial vector: whole .. n - 1 */
    imgstat_image img;
    CU_ASSERT_FATAL(test_image_make(&img, (uint32_t)n, 1, 4, IMGSTAT_F32));
    float *p0 = img.planes[0], *p1 = img.planes[1], *p2 = img.planes[2],
          *p3 = img.planes[3];
    for (uint64_t i = 0; i < n; ++i) {
      p0[i] = p1[i] = (float)(10 + i % 5);
      p2[i] = (float)(1 + i % 3);
      p3[i] = NAN;
    }
    /* plane 0: the min at the last sample, the max at the partial vector's
     * first (when it has two or more) */
    p0[n - 1] = 5.0f;
    if (n - whole >= 2)
      p0[whole] = 20.0f;
    /* plane 1: the partial vector's min and max tie earlier samples' */
    p1[n / 2] = 5.0f;
    p1[100] = 20.0f;
    p1[n - 1] = 5.0f;
    if (n - whole >= 2)
      p1[whole] = 20.0f;
    /* plane 2: +0.0 at n / 3, then NaN, +Inf and -0.0 in the partial
     * vector: the min is the earlier +0.0 */
    p2[n / 3] = 0.0f;
    p2[n - 1] = -0.0f;
    if (n - whole >= 2)
      p2[whole] = INFINITY;
    if (n - whole >= 3)
      p2[whole + 1] = NAN;
    /* plane 3: NaN but in the partial vector */
    p3[n - 1] = -3.0f;
    if (n - whole >= 2)
      p3[whole] = 3.0f;
    char what[64];
    snprintf(what, sizeof what, "float tail n %llu", (unsigned long long)n);
    bad += check_image_kernels(&img, g_kernels, g_quick ? 2 : NKERNELS, what);
    test_image_free(&img);
  }
  CU_ASSERT_EQUAL(bad, 0);
}

/* ---- the float order: GPU = CPU to the bit ------------------------------ */

static double unit01(void) {
  return (double)(test_rand(&g_rng) >> 11) / 9007199254740992.0;
}

/* Sample i of n of a plane of the given kind (as tests/core/test_float_order.c:
 * normal-ish, NaN/Inf/-0/denormals, constant, 1e6 + noise, magnitudes over
 * the whole float range, all NaN, non-finite first half). */
static float fo_sample(int kind, uint64_t i, uint64_t n) {
  double g = (unit01() + unit01() + unit01() + unit01() - 2.0) * 173.2;
  switch (kind) {
  case 1: {
    uint64_t r = test_rand(&g_rng) % 24;
    return r == 0   ? NAN
           : r == 1 ? INFINITY
           : r == 2 ? -INFINITY
           : r == 3 ? -0.0f
           : r == 4 ? 0.0f
           : r == 5 ? (float)((unit01() - 0.5) * 1e-39) /* denormal */
                    : (float)g;
  }
  case 2:
    return 3.25f;
  case 3:
    return (float)(1e6 + g * 0.01);
  case 4: {
    double m = ldexp(unit01() + 0.5, (int)(test_rand(&g_rng) % 280) - 150);
    return (float)(test_rand(&g_rng) & 1 ? -m : m);
  }
  case 5:
    return NAN;
  case 6:
    return i < n / 2 + 3 ? (i % 2 ? INFINITY : NAN) : (float)g + 40.0f;
  default:
    return (float)g;
  }
}
#define FO_KINDS 7

/* Dense, strided (pageable rows with a gap), and uploaded once as a device
 * image (the path of --histogram): every float plane's partial equal to
 * the CPU backend's, bit for bit, whatever the kernel asked for. */
static void test_float_order(void) {
  static const uint32_t shapes[][2] = {
      {1, 1},      {3, 1},      {4, 1},      {5, 3},     {31, 33},
      {1025, 1},   {256, 256},  {257, 255},  {300, 219}, {4097, 3},
      {513, 1021}, {2049, 640}, {1024, 4096}};
  int nshapes = g_quick ? 6 : (int)(sizeof shapes / sizeof *shapes);
  static const int kernels[] = {0, 1, 7};
  int bad = 0, checked = 0;
  for (int s = 0; s < nshapes; ++s)
    for (int kind = 0; kind < FO_KINDS; ++kind) {
      uint32_t w = shapes[s][0], h = shapes[s][1];
      int channels = 1 + (s + kind) % 4;
      imgstat_image img;
      CU_ASSERT_FATAL(test_image_make(&img, w, h, channels, IMGSTAT_F32));
      uint64_t n = (uint64_t)w * h;
      for (int c = 0; c < channels; ++c)
        for (uint64_t i = 0; i < n; ++i)
          ((float *)img.planes[c])[i] = fo_sample((kind + c) % FO_KINDS, i, n);
      /* the same samples in rows with a 12-byte gap */
      size_t row = (size_t)w * 4, stride = row + 12;
      unsigned char *rows = malloc((size_t)channels * h * stride);
      CU_ASSERT_FATAL(rows != NULL);
      void *planes[IMGSTAT_MAX_CHANNELS];
      for (int c = 0; c < channels; ++c) {
        planes[c] = rows + (size_t)c * h * stride;
        for (uint32_t y = 0; y < h; ++y) {
          memcpy((unsigned char *)planes[c] + y * stride,
                 (const float *)img.planes[c] + (uint64_t)y * w, row);
          memset((unsigned char *)planes[c] + y * stride + row, 0xff, 12);
        }
      }
      imgstat_image strided;
      imgstat_error err;
      CU_ASSERT_FATAL(imgstat_image_wrap(&strided, w, h, channels, IMGSTAT_F32,
                                         planes, stride, &err) == IMGSTAT_OK);
      imgstat_partial cpu[IMGSTAT_MAX_CHANNELS], got[IMGSTAT_MAX_CHANNELS];
      CU_ASSERT_FATAL(imgstat_cpu_stats(&img, 0, cpu, &err) == IMGSTAT_OK);
      char what[96];
      for (int k = 0; k < (g_quick ? 1 : 3); ++k) {
        for (int layout = 0; layout < 2; ++layout) {
          memset(got, 0xA5, sizeof got);
          imgstat_status st = imgstat_gpu_stats(g_gpu, layout ? &strided : &img,
                                                kernels[k], got, &err);
          snprintf(what, sizeof what, "float order %ux%u kind %d %s", w, h,
                   kind, layout ? "strided" : "dense");
          checked++;
          if (st != IMGSTAT_OK) {
            printf("\n  %s: %s\n", what, err.message);
            bad++;
            continue;
          }
          for (int c = 0; c < channels; ++c)
            if (!partial_matches(&got[c], &cpu[c], IMGSTAT_F32, 0.0, 0.0, what,
                                 kernels[k], c))
              bad++;
        }
      }
      imgstat_gpu_image *d = NULL;
      if (imgstat_gpu_image_upload(g_gpu, &strided, &d, &err) == IMGSTAT_OK) {
        memset(got, 0xA5, sizeof got);
        checked++;
        snprintf(what, sizeof what, "float order %ux%u kind %d uploaded", w, h,
                 kind);
        if (imgstat_gpu_image_stats(g_gpu, d, 0, got, &err) != IMGSTAT_OK) {
          printf("\n  %s: %s\n", what, err.message);
          bad++;
        } else {
          for (int c = 0; c < channels; ++c)
            if (!partial_matches(&got[c], &cpu[c], IMGSTAT_F32, 0.0, 0.0, what,
                                 0, c))
              bad++;
        }
        imgstat_gpu_image_release(g_gpu, d);
      } else {
        printf("\n  upload: %s\n", err.message);
        bad++;
      }
      imgstat_image_free(&strided);
      free(rows);
      test_image_free(&img);
    }
  printf("(%d float runs compared to the bit) ", checked);
  CU_ASSERT_EQUAL(bad, 0);
}

/* Reduced in ranges through a small device buffer: the same answers. */
static void test_chunked(void) {
  const uint32_t n = g_quick ? 300001 : (1u << 20) + 12345;
  static const int kernels[] = {0, 4, 7};
  int bad = 0;
  imgstat_gpu_set_memory_limit(g_gpu, (size_t)256 << 10); /* 256 KiB */
  for (int s = 0; s < 3; ++s) {
    imgstat_image img;
    CU_ASSERT_FATAL(test_image_make(&img, n, 1, 3, g_samples[s]));
    fill_random(&img);
    char what[64];
    snprintf(what, sizeof what, "chunked depth %d",
             imgstat_sample_depth(g_samples[s]));
    bad += check_image_kernels(&img, kernels, 3, what);
    test_image_free(&img);
  }
  imgstat_gpu_set_memory_limit(g_gpu, 0);
  CU_ASSERT_EQUAL(bad, 0);
}

/* The same input twice gives the same bits (no atomics, fixed order). */
static void test_deterministic(void) {
  imgstat_image img;
  CU_ASSERT_FATAL(
      test_image_make(&img, g_quick ? 100003 : 5000011, 1, 1, IMGSTAT_F32));
  fill_random(&img);
  for (int k = 0; k < NKERNELS; ++k) {
    imgstat_partial a[IMGSTAT_MAX_CHANNELS], b[IMGSTAT_MAX_CHANNELS];
    imgstat_error err;
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    CU_ASSERT_EQUAL(imgstat_gpu_stats(g_gpu, &img, k, a, &err), IMGSTAT_OK);
    CU_ASSERT_EQUAL(imgstat_gpu_stats(g_gpu, &img, k, b, &err), IMGSTAT_OK);
    CU_ASSERT(memcmp(&a[0], &b[0], sizeof a[0]) == 0);
  }
  test_image_free(&img);
}

/* More than 2^32 samples in one plane: 64-bit indices all the way. The
 * answer is known by construction (no scan needed). */
static void test_huge_plane(void) {
  if (g_quick) {
    printf("(quick: not run) ");
    return;
  }
  const uint32_t w = 65536, h = 65537; /* 2^32 + 2^16 samples */
  const uint64_t n = (uint64_t)w * h, big = (uint64_t)1 << 32;
  imgstat_image img;
  if (!test_image_make(&img, w, h, 1, IMGSTAT_U8)) {
    printf("(no 4.3 GB of host memory: not run) ");
    return;
  }
  uint8_t *p = img.planes[0];
  memset(p, 100, n);
  p[big + 10] = 3;  /* the first min, past 2^32 */
  p[big + 20] = 3;  /* a later tie */
  p[big + 5] = 201; /* the first max, past 2^32 */
  p[n - 1] = 201;   /* a later tie */
  uint64_t sum = (n - 4) * 100 + 2 * 3 + 2 * 201;
  uint64_t sumsq = (n - 4) * 10000 + 2 * 9 + 2 * 201 * 201;
  static const int kernels[] = {0, 7};
  for (int k = 0; k < 2; ++k) {
    imgstat_partial out[IMGSTAT_MAX_CHANNELS];
    imgstat_error err;
    imgstat_status st = imgstat_gpu_stats(g_gpu, &img, kernels[k], out, &err);
    CU_ASSERT_EQUAL(st, IMGSTAT_OK);
    if (st != IMGSTAT_OK) {
      printf("\n  huge plane kernel %d: %s\n", kernels[k], err.message);
      continue;
    }
    CU_ASSERT_EQUAL(out[0].count, n);
    CU_ASSERT_EQUAL(out[0].sum, sum);
    CU_ASSERT_EQUAL(out[0].sumsq, sumsq);
    CU_ASSERT_EQUAL(out[0].min, 3.0);
    CU_ASSERT_EQUAL(out[0].min_index, big + 10);
    CU_ASSERT_EQUAL(out[0].max, 201.0);
    CU_ASSERT_EQUAL(out[0].max_index, big + 5);
  }
  test_image_free(&img);
}

static int corpus_file_wanted(const char *name) {
  size_t len = strlen(name);
  if (name[0] == '.' || name[0] == 'x') /* corrupt PngSuite files */
    return 0;
  static const char *ext[] = {".png", ".jpg", ".bmp", ".ppm", ".pgm", ".hdr"};
  for (size_t i = 0; i < sizeof ext / sizeof *ext; ++i)
    if (len > 4 && strcmp(name + len - 4, ext[i]) == 0)
      return 1;
  return 0;
}

/* Every decodable corpus image, every kernel. */
static void test_corpus(void) {
  const char *root = test_corpus_dir();
  if (!root) {
    printf("(skipped: no corpus) ");
    return;
  }
  static const char *subdirs[] = {"photos", "hdr", "pngsuite"};
  int files = 0, bad = 0;
  for (int d = 0; d < 3; ++d) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, subdirs[d]);
    DIR *dp = opendir(dir);
    if (!dp)
      continue;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
      if (!corpus_file_wanted(e->d_name))
        continue;
      char path[4400];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      imgstat_image img;
      imgstat_error err;
      memset(&img, 0, sizeof img);
      if (imgstat_image_load(path, NULL, &img, &err) != IMGSTAT_OK)
        continue; /* the loader's tests judge that */
      files++;
      bad += check_image_kernels(&img, g_kernels, g_quick ? 2 : NKERNELS,
                                 e->d_name);
      imgstat_image_free(&img);
      if (g_quick && files >= 5)
        break;
    }
    closedir(dp);
  }
  printf("(%d images) ", files);
  CU_ASSERT(files > 0);
  CU_ASSERT_EQUAL(bad, 0);
}

/* Errors are values: a bad kernel number or image is refused, not run. */
static void test_errors(void) {
  imgstat_image img;
  CU_ASSERT_FATAL(test_image_make(&img, 10, 10, 1, IMGSTAT_U8));
  fill_random(&img);
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_error err = {0};
  CU_ASSERT_EQUAL(imgstat_gpu_stats(g_gpu, &img, 8, out, &err),
                  IMGSTAT_ERR_ARG);
  CU_ASSERT(err.message[0] != '\0');
  CU_ASSERT_EQUAL(imgstat_gpu_stats(g_gpu, &img, -1, out, &err),
                  IMGSTAT_ERR_ARG);
  img.channels = IMGSTAT_MAX_CHANNELS + 1;
  CU_ASSERT_EQUAL(imgstat_gpu_stats(g_gpu, &img, 0, out, &err),
                  IMGSTAT_ERR_ARG);
  img.channels = 1;
  /* An empty image gives empty partials. */
  img.width = 0;
  CU_ASSERT_EQUAL(imgstat_gpu_stats(g_gpu, &img, 0, out, &err), IMGSTAT_OK);
  CU_ASSERT_EQUAL(out[0].count, 0);
  CU_ASSERT_EQUAL(out[0].min_index, UINT64_MAX);
  test_image_free(&img);
  CU_ASSERT(strlen(imgstat_gpu_device_name(g_gpu)) > 0);
}

static const test_case tests[] = {
    {"gpu", NULL},
    {"errors", test_errors},
    {"sizes x kernels x samples", test_sizes},
    {"shapes", test_shapes},
    {"patterns: constant, ties, ends, extremes", test_patterns},
    {"float NaN/Inf, all-NaN, signed zeros", test_float_specials},
    {"float extremes in the plane's last, partial vector", test_float_tail},
    {"float order: every shape and kind, GPU = CPU to the bit",
     test_float_order},
    {"chunked through a small device buffer", test_chunked},
    {"deterministic", test_deterministic},
    {"plane of more than 2^32 samples", test_huge_plane},
    {"corpus images", test_corpus},
    {"submit / wait: two threads, images in flight", test_submit_threads},
    {"submit / wait: every slot in flight", test_submit_all_slots},
    {"row stride: pageable, pinned, by ranges", test_strided},
    {"device planes wrapped: in place, pitched", test_wrap},
    {"interleaved device images: no gathering, the reference's partials",
     test_hwc},
    {"the context's device from a thread on another", test_other_device},
    {NULL, NULL}};

int main(void) {
  if (!imgstat_gpu_compiled())
    return test_skip("no CUDA device (built without CUDA)");
  const char *q = getenv("IMGSTAT_TEST_QUICK");
  g_quick = q && *q && strcmp(q, "0") != 0;
  imgstat_error err = {0};
  imgstat_status st = imgstat_gpu_create(-1, &g_gpu, &err);
  if (st == IMGSTAT_ERR_NODEVICE)
    return test_skip("no CUDA device");
  if (st != IMGSTAT_OK) {
    printf("CUDA device present but unusable: %s\n", err.message);
    return 1;
  }
  printf("device: %s%s\n", imgstat_gpu_device_name(g_gpu),
         g_quick ? " (quick set)" : "");

  int rc = test_main(tests);
  printf("worst f32 error vs long double reference: mean %.3g (of |mean|+std), "
         "m2 %.3g (relative)\n",
         g_worst_mean, g_worst_m2);
  imgstat_gpu_destroy(g_gpu);
  return rc;
}
