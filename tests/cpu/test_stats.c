/*
 * Partials, figures and the CPU backend against independent computation:
 * closed forms where the image has one, otherwise a naive reference written
 * here (one sample at a time, 128-bit integers and long double).
 */
#include "imgstat/imgstat.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

/* ---- images built by hand (independent of the loader's image.c) ---------- */

static imgstat_image make_image(uint32_t w, uint32_t h, int channels,
                                imgstat_sample sample) {
  imgstat_image img;
  CU_ASSERT_FATAL(test_image_make(&img, w, h, channels, sample));
  return img;
}

static uint64_t npix(const imgstat_image *img) {
  return (uint64_t)img->width * img->height;
}

static void fill_random(imgstat_image *img, uint64_t seed) {
  uint64_t n = npix(img) * (uint64_t)img->channels;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = test_rand(&seed);
    switch (img->sample) {
    case IMGSTAT_U8:
      ((uint8_t *)img->data)[i] = (uint8_t)(r >> 56);
      break;
    case IMGSTAT_U16:
      ((uint16_t *)img->data)[i] = (uint16_t)(r >> 48);
      break;
    case IMGSTAT_F32:
      ((float *)img->data)[i] =
          (float)((double)(r >> 11) / 9007199254740992.0 * 200.0 - 100.0);
      break;
    }
  }
}

static double sample_at(const void *plane, imgstat_sample s, uint64_t i) {
  switch (s) {
  case IMGSTAT_U8:
    return ((const uint8_t *)plane)[i];
  case IMGSTAT_U16:
    return ((const uint16_t *)plane)[i];
  default:
    return ((const float *)plane)[i];
  }
}

/* ---- the naive reference ------------------------------------------------- */

typedef struct ref_stats {
  uint64_t count, nan_count, inf_count;
  double min, max;
  uint64_t min_index, max_index;
  uint64_t sum; /* integers only */
  u128 sumsq;   /* integers only */
  long double mean;
  long double m2;
} ref_stats;

/* Kahan-compensated long double sums, two passes. */
static ref_stats ref_compute(const void *plane, imgstat_sample s, uint64_t n) {
  ref_stats r;
  memset(&r, 0, sizeof r);
  r.min_index = r.max_index = UINT64_MAX;
  long double acc = 0, comp = 0;
  for (uint64_t i = 0; i < n; i++) {
    double v = sample_at(plane, s, i);
    if (isnan(v)) {
      r.nan_count++;
      continue;
    }
    if (isinf(v)) {
      r.inf_count++;
      continue;
    }
    if (r.count == 0 || v < r.min) {
      r.min = v;
      r.min_index = i;
    }
    if (r.count == 0 || v > r.max) {
      r.max = v;
      r.max_index = i;
    }
    r.count++;
    if (s != IMGSTAT_F32) {
      uint64_t u = (uint64_t)v;
      r.sum += u;
      r.sumsq += (u128)u * u;
    }
    long double y = (long double)v - comp;
    long double t = acc + y;
    comp = (t - acc) - y;
    acc = t;
  }
  if (r.count == 0)
    return r;
  r.mean = acc / r.count;
  acc = comp = 0;
  for (uint64_t i = 0; i < n; i++) {
    double v = sample_at(plane, s, i);
    if (!isfinite(v))
      continue;
    long double d = (long double)v - r.mean;
    long double y = d * d - comp;
    long double t = acc + y;
    comp = (t - acc) - y;
    acc = t;
  }
  r.m2 = acc;
  return r;
}

static int rel_close(long double got, long double want, long double tol) {
  long double diff = fabsl(got - want);
  if (diff == 0)
    return 1;
  return diff <= tol * fabsl(want);
}

/* Checks one channel's partial and figures (ddof 0 and 1) against the
 * reference; tol is the relative tolerance on mean and std. */
static void check_channel(const imgstat_partial *p, const void *plane,
                          imgstat_sample s, uint32_t width, uint64_t n,
                          long double tol) {
  ref_stats r = ref_compute(plane, s, n);
  CU_ASSERT_EQUAL(p->count, r.count);
  CU_ASSERT_EQUAL(p->nan_count, r.nan_count);
  CU_ASSERT_EQUAL(p->inf_count, r.inf_count);
  for (int ddof = 0; ddof <= 1; ddof++) {
    imgstat_figures f;
    imgstat_figures_compute(p, s, width, ddof, &f);
    CU_ASSERT_EQUAL(f.count, r.count);
    CU_ASSERT_EQUAL(f.has_values, r.count > 0);
    CU_ASSERT_EQUAL(f.has_std, r.count > (uint64_t)ddof);
    if (r.count == 0)
      continue;
    CU_ASSERT_EQUAL(f.min, r.min);
    CU_ASSERT_EQUAL(f.max, r.max);
    CU_ASSERT_EQUAL(f.min_x, r.min_index % width);
    CU_ASSERT_EQUAL(f.min_y, r.min_index / width);
    CU_ASSERT_EQUAL(f.max_x, r.max_index % width);
    CU_ASSERT_EQUAL(f.max_y, r.max_index / width);
    if (s != IMGSTAT_F32) {
      CU_ASSERT(rel_close(f.mean, r.mean, tol));
      CU_ASSERT_TRUE(f.sum_is_exact);
      CU_ASSERT_EQUAL(f.exact_sum, r.sum);
      CU_ASSERT(p->sumsq == r.sumsq);
    } else {
      /* float: relative to |mean| + std (docs/gpu.md's measure), since a
       * mean that cancels to near 0 has no relative precision of its own */
      long double scale = fabsl(r.mean) + sqrtl(r.m2 / (long double)r.count);
      CU_ASSERT(fabsl(f.mean - r.mean) <= tol * scale);
      CU_ASSERT(fabsl(f.sum - r.mean * r.count) <= tol * scale * r.count);
    }
    if (f.has_std) {
      long double want = sqrtl(r.m2 / (long double)(r.count - (uint64_t)ddof));
      CU_ASSERT(rel_close(f.std, want, tol));
    }
  }
}

static void check_image(const imgstat_image *img, int threads,
                        long double tol) {
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  CU_ASSERT_EQUAL_FATAL(imgstat_cpu_stats(img, threads, out, &err), IMGSTAT_OK);
  for (int c = 0; c < img->channels; c++)
    check_channel(&out[c], img->planes[c], img->sample, img->width, npix(img),
                  tol);
}

static imgstat_figures cpu_figures(const imgstat_image *img, int c, int ddof) {
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_figures f;
  memset(&f, 0, sizeof f);
  imgstat_error err;
  CU_ASSERT_EQUAL(imgstat_cpu_stats(img, 0, out, &err), IMGSTAT_OK);
  imgstat_figures_compute(&out[c], img->sample, img->width, ddof, &f);
  return f;
}

/* ---- synthetic images with known answers --------------------------------- */

static void test_constant(void) {
  /* 1000x300 spans several chunks; the std must be exactly 0, not tiny. */
  imgstat_image a = make_image(1000, 300, 3, IMGSTAT_U8);
  imgstat_image b = make_image(1000, 300, 1, IMGSTAT_U16);
  imgstat_image c = make_image(1000, 300, 1, IMGSTAT_F32);
  uint64_t n = npix(&a);
  memset(a.planes[0], 7, n);
  memset(a.planes[1], 0, n);
  memset(a.planes[2], 255, n);
  for (uint64_t i = 0; i < n; i++) {
    ((uint16_t *)b.data)[i] = 65521;
    ((float *)c.data)[i] = 0.1f;
  }
  const uint8_t vals[3] = {7, 0, 255};
  for (int ch = 0; ch < 3; ch++) {
    imgstat_figures f = cpu_figures(&a, ch, 0);
    CU_ASSERT_EQUAL(f.count, n);
    CU_ASSERT_EQUAL(f.exact_sum, vals[ch] * n);
    CU_ASSERT_EQUAL(f.mean, (double)vals[ch]);
    CU_ASSERT_EQUAL(f.std, 0.0);
    CU_ASSERT_EQUAL(f.min, f.max);
    CU_ASSERT(f.min_x == 0 && f.min_y == 0 && f.max_x == 0 && f.max_y == 0);
  }
  for (int ddof = 0; ddof <= 1; ddof++) {
    imgstat_figures f = cpu_figures(&b, 0, ddof);
    CU_ASSERT_EQUAL(f.exact_sum, UINT64_C(65521) * n);
    CU_ASSERT_EQUAL(f.mean, 65521.0);
    CU_ASSERT_EQUAL(f.std, 0.0);
    f = cpu_figures(&c, 0, ddof);
    CU_ASSERT_EQUAL(f.mean, (double)0.1f);
    CU_ASSERT_EQUAL(f.std, 0.0);
    CU_ASSERT_EQUAL(f.min, (double)0.1f);
  }
  test_image_free(&a);
  test_image_free(&b);
  test_image_free(&c);
}

static void test_ramp(void) {
  /* v = raster index, N = 300*200 = 60000 < 65536: closed forms
   * sum = N(N-1)/2, sumsq = (N-1)N(2N-1)/6, var = (N^2-1)/12. */
  const uint64_t w = 300, h = 200, n = w * h;
  imgstat_image img = make_image(w, h, 1, IMGSTAT_U16);
  for (uint64_t i = 0; i < n; i++)
    ((uint16_t *)img.data)[i] = (uint16_t)i;
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  CU_ASSERT_EQUAL_FATAL(imgstat_cpu_stats(&img, 2, out, &err), IMGSTAT_OK);
  CU_ASSERT_EQUAL(out[0].sum, n * (n - 1) / 2);
  CU_ASSERT_EQUAL(out[0].sumsq, (n - 1) * n * (2 * n - 1) / 6);
  imgstat_figures f;
  imgstat_figures_compute(&out[0], img.sample, img.width, 0, &f);
  CU_ASSERT_EQUAL(f.min, 0.0);
  CU_ASSERT_EQUAL(f.max, (double)(n - 1));
  CU_ASSERT(f.min_x == 0 && f.min_y == 0);
  CU_ASSERT(f.max_x == w - 1 && f.max_y == h - 1);
  CU_ASSERT_EQUAL(f.mean, (n - 1) / 2.0);
  CU_ASSERT_DOUBLE_EQUAL(f.std, sqrt(((double)n * n - 1) / 12.0), 1e-9);
  imgstat_figures_compute(&out[0], img.sample, img.width, 1, &f);
  /* sample variance of 0..N-1 is N(N+1)/12 */
  CU_ASSERT_DOUBLE_EQUAL(f.std, sqrt((double)n * (n + 1) / 12.0), 1e-9);
  test_image_free(&img);

  /* u8 ramp by x over a 256-wide image: every value h times. */
  img = make_image(256, 513, 1, IMGSTAT_U8);
  for (uint32_t y = 0; y < 513; y++)
    for (uint32_t x = 0; x < 256; x++)
      ((uint8_t *)img.data)[y * 256 + x] = (uint8_t)x;
  f = cpu_figures(&img, 0, 0);
  CU_ASSERT_EQUAL(f.exact_sum, UINT64_C(513) * 255 * 256 / 2);
  CU_ASSERT_EQUAL(f.mean, 127.5);
  CU_ASSERT_DOUBLE_EQUAL(f.std, sqrt((256.0 * 256 - 1) / 12.0), 1e-12);
  CU_ASSERT(f.max_x == 255 && f.max_y == 0);
  test_image_free(&img);
}

static void test_checkerboard(void) {
  /* 0/255 alternating on a 64x64 board: half and half, so mean and
   * population std are both exactly 127.5. */
  imgstat_image img = make_image(64, 64, 1, IMGSTAT_U8);
  for (uint32_t y = 0; y < 64; y++)
    for (uint32_t x = 0; x < 64; x++)
      ((uint8_t *)img.data)[y * 64 + x] = ((x + y) & 1) ? 255 : 0;
  imgstat_figures f = cpu_figures(&img, 0, 0);
  CU_ASSERT_EQUAL(f.mean, 127.5);
  CU_ASSERT_EQUAL(f.std, 127.5);
  CU_ASSERT(f.min_x == 0 && f.min_y == 0 && f.max_x == 1 && f.max_y == 0);
  CU_ASSERT_EQUAL(f.exact_sum, 255u * 2048u);
  test_image_free(&img);

  /* Odd 5x3 board: 8 zeros, 7 of 255. */
  img = make_image(5, 3, 1, IMGSTAT_U8);
  for (uint32_t i = 0; i < 15; i++)
    ((uint8_t *)img.data)[i] = (((i % 5) + (i / 5)) & 1) ? 255 : 0;
  f = cpu_figures(&img, 0, 1);
  CU_ASSERT_EQUAL(f.exact_sum, 7u * 255u);
  /* sample variance: (sumsq - sum^2/N)/(N-1) = 255^2 * (7 - 49/15) / 14 */
  CU_ASSERT_DOUBLE_EQUAL(f.std, 255.0 * sqrt((7.0 - 49.0 / 15.0) / 14.0),
                         1e-12);
  check_image(&img, 1, 1e-13L);
  test_image_free(&img);
}

static void test_one_pixel(void) {
  imgstat_image img = make_image(1, 1, 2, IMGSTAT_U16);
  ((uint16_t *)img.planes[0])[0] = 1234;
  ((uint16_t *)img.planes[1])[0] = 65535;
  imgstat_figures f = cpu_figures(&img, 0, 0);
  CU_ASSERT_EQUAL(f.count, 1);
  CU_ASSERT_EQUAL(f.min, 1234.0);
  CU_ASSERT_EQUAL(f.max, 1234.0);
  CU_ASSERT_EQUAL(f.mean, 1234.0);
  CU_ASSERT_TRUE(f.has_std);
  CU_ASSERT_EQUAL(f.std, 0.0);
  f = cpu_figures(&img, 1, 1);
  CU_ASSERT_EQUAL(f.exact_sum, 65535);
  CU_ASSERT_FALSE(f.has_std); /* N - 1 = 0 */
  test_image_free(&img);

  img = make_image(1, 1, 1, IMGSTAT_F32);
  ((float *)img.data)[0] = -2.5f;
  f = cpu_figures(&img, 0, 0);
  CU_ASSERT(f.has_values && f.count == 1 && f.mean == -2.5 && f.std == 0.0);
  CU_ASSERT(f.sum == -2.5 && f.min == -2.5 && f.max == -2.5);
  test_image_free(&img);
}

static void test_lines_and_odd_sizes(void) {
  /* 1xN and Nx1 across chunk boundaries, and 4097x3, for every type. */
  const uint32_t dims[][2] = {{1, 70001}, {70001, 1}, {4097, 3},  {1, 7},
                              {7, 1},     {65536, 1}, {65537, 2}, {131071, 1}};
  const imgstat_sample types[] = {IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};
  uint64_t seed = 42;
  for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
    for (size_t t = 0; t < 3; t++) {
      imgstat_image img = make_image(dims[d][0], dims[d][1], 3, types[t]);
      fill_random(&img, seed++);
      check_image(&img, 2, 1e-13L);
      test_image_free(&img);
    }
}

static void test_extremes(void) {
  /* 0 and the type's maximum, each exactly once, in a mid-grey image. */
  imgstat_image a = make_image(401, 333, 1, IMGSTAT_U8);
  imgstat_image b = make_image(401, 333, 1, IMGSTAT_U16);
  uint64_t n = npix(&a);
  memset(a.data, 128, n);
  for (uint64_t i = 0; i < n; i++)
    ((uint16_t *)b.data)[i] = 30000;
  ((uint8_t *)a.data)[100000] = 0;
  ((uint8_t *)a.data)[5] = 255;
  ((uint16_t *)b.data)[100000] = 0;
  ((uint16_t *)b.data)[5] = 65535;
  imgstat_figures f = cpu_figures(&a, 0, 0);
  CU_ASSERT(f.min == 0 && f.max == 255);
  CU_ASSERT(f.min_x == 100000 % 401 && f.min_y == 100000 / 401);
  CU_ASSERT(f.max_x == 5 && f.max_y == 0);
  CU_ASSERT_EQUAL(f.exact_sum, 128 * (n - 2) + 255);
  f = cpu_figures(&b, 0, 0);
  CU_ASSERT(f.min == 0 && f.max == 65535);
  CU_ASSERT_EQUAL(f.exact_sum, 30000 * (n - 2) + 65535);
  check_image(&a, 3, 1e-13L);
  check_image(&b, 3, 1e-13L);

  /* Every u16 sample at 65535: sumsq near its 64-bit limit per chunk merge. */
  for (uint64_t i = 0; i < n; i++)
    ((uint16_t *)b.data)[i] = 65535;
  f = cpu_figures(&b, 0, 0);
  CU_ASSERT_EQUAL(f.std, 0.0);
  CU_ASSERT_EQUAL(f.mean, 65535.0);
  test_image_free(&a);
  test_image_free(&b);
}

static void test_huge_counts(void) {
  /* Partials of 2^32 samples (IMGSTAT_MAX_PIXELS_LIMIT) built from their
   * closed forms, not allocated: all 65535, then half 0 and half 65535. */
  const uint64_t n = IMGSTAT_MAX_PIXELS_LIMIT;
  imgstat_partial p;
  imgstat_partial_init(&p);
  p.count = n;
  p.min = p.max = 65535;
  p.min_index = p.max_index = 0;
  p.sum = 65535 * n;
  p.sumsq = 65535ull * 65535ull * n;
  imgstat_figures f;
  imgstat_figures_compute(&p, IMGSTAT_U16, 65536, 0, &f);
  CU_ASSERT_EQUAL(f.mean, 65535.0);
  CU_ASSERT_EQUAL(f.std, 0.0);
  imgstat_figures_compute(&p, IMGSTAT_U16, 65536, 1, &f);
  CU_ASSERT_EQUAL(f.std, 0.0);

  p.min = 0;
  p.sum = 65535 * (n / 2);
  p.sumsq = 65535ull * 65535ull * (n / 2);
  imgstat_figures_compute(&p, IMGSTAT_U16, 65536, 0, &f);
  CU_ASSERT_EQUAL(f.mean, 32767.5);
  CU_ASSERT_EQUAL(f.std, 32767.5);
  imgstat_figures_compute(&p, IMGSTAT_U16, 65536, 1, &f);
  /* sample std = 32767.5 * sqrt(N / (N - 1)) */
  CU_ASSERT(
      rel_close(f.std, 32767.5L * sqrtl((long double)n / (n - 1)), 1e-15L));

  /* A case where sum^2/N cancels: values 2^16-1 and 2^16-2, one apart. */
  p.sum = 65535 * (n / 2) + 65534 * (n / 2);
  p.sumsq = 65535ull * 65535ull * (n / 2) + 65534ull * 65534ull * (n / 2);
  imgstat_figures_compute(&p, IMGSTAT_U16, 65536, 0, &f);
  CU_ASSERT_EQUAL(f.std, 0.5);
  CU_ASSERT_EQUAL(f.mean, 65534.5);
}

static void test_u16_random_large(void) {
  imgstat_image img = make_image(2011, 1503, 1, IMGSTAT_U16);
  fill_random(&img, 7);
  check_image(&img, 0, 1e-14L);
  test_image_free(&img);
}

static void test_float_nan_inf(void) {
  imgstat_image img = make_image(300, 500, 1, IMGSTAT_F32);
  fill_random(&img, 99);
  float *x = img.data;
  uint64_t n = npix(&img);
  /* Non-finite values everywhere, including where min and max would be. */
  for (uint64_t i = 0; i < n; i += 97)
    x[i] = NAN;
  for (uint64_t i = 3; i < n; i += 1013)
    x[i] = (i & 1) ? INFINITY : -INFINITY;
  x[70000] = -1000.0f;
  x[70001] = 1000.0f;
  x[n - 1] = -NAN;
  uint64_t nans = 0, infs = 0;
  for (uint64_t i = 0; i < n; i++) {
    nans += isnan(x[i]) != 0;
    infs += isinf(x[i]) != 0;
  }
  CU_ASSERT(nans > 1000 && infs > 100);
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  CU_ASSERT_EQUAL_FATAL(imgstat_cpu_stats(&img, 2, out, &err), IMGSTAT_OK);
  CU_ASSERT_EQUAL(out[0].nan_count, nans);
  CU_ASSERT_EQUAL(out[0].inf_count, infs);
  CU_ASSERT_EQUAL(out[0].count, n - nans - infs);
  CU_ASSERT_EQUAL(out[0].min, -1000.0);
  CU_ASSERT_EQUAL(out[0].max, 1000.0);
  CU_ASSERT_EQUAL(out[0].min_index, 70000);
  CU_ASSERT_EQUAL(out[0].max_index, 70001);
  CU_ASSERT(isfinite(out[0].mean) && isfinite(out[0].m2));
  check_channel(&out[0], x, IMGSTAT_F32, img.width, n, 1e-12L);
  test_image_free(&img);
}

static void test_float_all_nan(void) {
  imgstat_image img = make_image(1000, 100, 2, IMGSTAT_F32);
  uint64_t n = npix(&img);
  for (uint64_t i = 0; i < n; i++) {
    ((float *)img.planes[0])[i] = NAN;
    ((float *)img.planes[1])[i] = (i % 3) ? INFINITY : NAN;
  }
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  CU_ASSERT_EQUAL_FATAL(imgstat_cpu_stats(&img, 3, out, &err), IMGSTAT_OK);
  CU_ASSERT_EQUAL(out[0].nan_count, n);
  CU_ASSERT_EQUAL(out[0].count, 0);
  CU_ASSERT_EQUAL(out[1].nan_count, (n + 2) / 3);
  CU_ASSERT_EQUAL(out[1].inf_count, n - (n + 2) / 3);
  for (int c = 0; c < 2; c++) {
    imgstat_figures f;
    imgstat_figures_compute(&out[c], IMGSTAT_F32, img.width, 0, &f);
    CU_ASSERT_FALSE(f.has_values);
    CU_ASSERT_FALSE(f.has_std);
    CU_ASSERT_EQUAL(f.count, 0);
  }
  test_image_free(&img);
}

static void test_float_accuracy(void) {
  /* A large offset and small noise: the naive sum-of-squares formula loses
   * every digit of the std here; the reference is compensated long double. */
  imgstat_image img = make_image(2003, 1500, 1, IMGSTAT_F32);
  uint64_t seed = 5, n = npix(&img);
  for (uint64_t i = 0; i < n; i++) {
    double u = (double)(test_rand(&seed) >> 11) / 9007199254740992.0;
    ((float *)img.data)[i] = (float)(1e6 + 4.0 * (u - 0.5));
  }
  check_image(&img, 0, 1e-12L);

  /* Mixed magnitudes and signs. */
  for (uint64_t i = 0; i < n; i++) {
    double u = (double)(test_rand(&seed) >> 11) / 9007199254740992.0;
    double e = (double)(test_rand(&seed) % 40) - 20.0;
    ((float *)img.data)[i] = (float)((u - 0.3) * pow(2.0, e));
  }
  check_image(&img, 0, 1e-12L);
  test_image_free(&img);
}

static void test_ddof(void) {
  /* {1, 2, 3, 4}: population var 1.25, sample var 5/3. */
  imgstat_image img = make_image(2, 2, 1, IMGSTAT_U8);
  const uint8_t v[4] = {1, 2, 3, 4};
  memcpy(img.data, v, 4);
  imgstat_figures f = cpu_figures(&img, 0, 0);
  CU_ASSERT_EQUAL(f.std, sqrt(1.25));
  f = cpu_figures(&img, 0, 1);
  CU_ASSERT_EQUAL(f.std, sqrt(5.0 / 3.0));
  test_image_free(&img);

  img = make_image(2, 2, 1, IMGSTAT_F32);
  const float fv[4] = {1, 2, 3, 4};
  memcpy(img.data, fv, sizeof fv);
  f = cpu_figures(&img, 0, 0);
  CU_ASSERT_DOUBLE_EQUAL(f.std, sqrt(1.25), 1e-15);
  f = cpu_figures(&img, 0, 1);
  CU_ASSERT_DOUBLE_EQUAL(f.std, sqrt(5.0 / 3.0), 1e-15);
  CU_ASSERT_EQUAL(f.mean, 2.5);
  CU_ASSERT_EQUAL(f.sum, 10.0);
  test_image_free(&img);
}

static void test_first_position(void) {
  /* The extreme value appears several times, in several chunks; the earliest
   * raster position must win for every thread count. */
  const imgstat_sample types[] = {IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};
  const uint64_t min_at[] = {199999, 150000, 70000, 131071, 70001};
  const uint64_t max_at[] = {190000, 65536, 65535, 65537, 140000};
  const int threads[] = {1, 2, 3, 7};
  for (size_t t = 0; t < 3; t++) {
    imgstat_image img = make_image(1000, 200, 1, types[t]);
    for (uint64_t i = 0; i < npix(&img); i++)
      switch (types[t]) {
      case IMGSTAT_U8:
        ((uint8_t *)img.data)[i] = (uint8_t)(100 + i % 7);
        break;
      case IMGSTAT_U16:
        ((uint16_t *)img.data)[i] = (uint16_t)(1000 + i % 7);
        break;
      case IMGSTAT_F32:
        ((float *)img.data)[i] = (float)(i % 7);
        break;
      }
    for (size_t k = 0; k < 5; k++)
      switch (types[t]) {
      case IMGSTAT_U8:
        ((uint8_t *)img.data)[min_at[k]] = 5;
        ((uint8_t *)img.data)[max_at[k]] = 250;
        break;
      case IMGSTAT_U16:
        ((uint16_t *)img.data)[min_at[k]] = 5;
        ((uint16_t *)img.data)[max_at[k]] = 60000;
        break;
      case IMGSTAT_F32:
        ((float *)img.data)[min_at[k]] = -5;
        ((float *)img.data)[max_at[k]] = 60000;
        break;
      }
    for (size_t j = 0; j < 4; j++) {
      imgstat_partial out[IMGSTAT_MAX_CHANNELS];
      imgstat_error err;
      CU_ASSERT_EQUAL(imgstat_cpu_stats(&img, threads[j], out, &err),
                      IMGSTAT_OK);
      CU_ASSERT_EQUAL(out[0].min_index, 70000);
      CU_ASSERT_EQUAL(out[0].max_index, 65535);
    }
    test_image_free(&img);
  }

  /* Merge ties: the smaller index wins whichever side it comes from. */
  imgstat_partial a, b, m;
  imgstat_partial_init(&a);
  imgstat_partial_init(&b);
  a.count = b.count = 1;
  a.min = b.min = 3;
  a.max = b.max = 9;
  a.min_index = 10;
  b.min_index = 3;
  a.max_index = 2;
  b.max_index = 8;
  m = a;
  imgstat_partial_merge(&m, &b, IMGSTAT_U8);
  CU_ASSERT(m.min_index == 3 && m.max_index == 2);
  m = b;
  imgstat_partial_merge(&m, &a, IMGSTAT_U8);
  CU_ASSERT(m.min_index == 3 && m.max_index == 2);
}

static void test_signed_zero(void) {
  /* -0.0 and +0.0 compare equal: the reported min is the sample at the first
   * position, sign included. */
  imgstat_image img = make_image(100, 1, 1, IMGSTAT_F32);
  float *x = img.data;
  for (int order = 0; order < 2; order++) {
    for (int i = 0; i < 100; i++)
      x[i] = 1.0f;
    x[3] = order ? -0.0f : 0.0f;
    x[37] = order ? 0.0f : -0.0f;
    imgstat_figures f = cpu_figures(&img, 0, 0);
    CU_ASSERT_EQUAL(f.min_x, 3);
    CU_ASSERT_EQUAL(f.min, 0.0);
    CU_ASSERT_EQUAL(signbit(f.min) != 0, order);
  }
  test_image_free(&img);
}

static int same_int_partial(const imgstat_partial *a,
                            const imgstat_partial *b) {
  return a->count == b->count && a->min == b->min && a->max == b->max &&
         a->min_index == b->min_index && a->max_index == b->max_index &&
         a->sum == b->sum && a->sumsq == b->sumsq &&
         a->nan_count == b->nan_count && a->inf_count == b->inf_count;
}

static void test_merge_associative(void) {
  /* Integer partials of random pieces merged in any grouping and order equal
   * one scan of the whole plane. */
  const imgstat_sample types[] = {IMGSTAT_U8, IMGSTAT_U16};
  uint64_t seed = 1234;
  for (size_t t = 0; t < 2; t++) {
    imgstat_image img = make_image(700, 700, 1, types[t]);
    fill_random(&img, seed++);
    uint64_t n = npix(&img);
    imgstat_partial whole;
    imgstat_partial_init(&whole);
    imgstat_partial_scan(&whole, img.data, img.sample, 0, n);
    for (int round = 0; round < 20; round++) {
      enum { PIECES = 6 };
      uint64_t cut[PIECES + 1];
      cut[0] = 0;
      cut[PIECES] = n;
      for (int k = 1; k < PIECES; k++)
        cut[k] = test_rand(&seed) % n;
      for (int i = 1; i < PIECES; i++) /* sort the cuts */
        for (int j = i; j > 1 && cut[j] < cut[j - 1]; j--) {
          uint64_t s = cut[j];
          cut[j] = cut[j - 1];
          cut[j - 1] = s;
        }
      imgstat_partial part[PIECES];
      for (int k = 0; k < PIECES; k++) {
        imgstat_partial_init(&part[k]);
        imgstat_partial_scan(&part[k], img.data, img.sample, cut[k],
                             cut[k + 1] - cut[k]);
      }
      /* reverse order */
      imgstat_partial r;
      imgstat_partial_init(&r);
      for (int k = PIECES - 1; k >= 0; k--)
        imgstat_partial_merge(&r, &part[k], img.sample);
      CU_ASSERT(same_int_partial(&r, &whole));
      /* pairs, then the pairs: ((0 1)(2 3))(4 5) */
      imgstat_partial p01 = part[0], p23 = part[2], p45 = part[4];
      imgstat_partial_merge(&p01, &part[1], img.sample);
      imgstat_partial_merge(&p23, &part[3], img.sample);
      imgstat_partial_merge(&p45, &part[5], img.sample);
      imgstat_partial_merge(&p23, &p01, img.sample);
      imgstat_partial_merge(&p45, &p23, img.sample);
      CU_ASSERT(same_int_partial(&p45, &whole));
    }
    check_channel(&whole, img.data, img.sample, img.width, n, 1e-13L);
    test_image_free(&img);
  }
}

static void test_threads_identical(void) {
  /* Same bits for any thread count, and the same as one reference scan of
   * each plane (so the backend's chunks are the scan's chunks). */
  const imgstat_sample types[] = {IMGSTAT_U8, IMGSTAT_U16, IMGSTAT_F32};
  const uint32_t dims[][2] = {{1001, 999}, {4097, 3}, {3, 65537}};
  const int threads[] = {1, 2, 3, 7, 0, 1000};
  uint64_t seed = 77;
  for (size_t t = 0; t < 3; t++)
    for (size_t d = 0; d < 3; d++) {
      imgstat_image img = make_image(dims[d][0], dims[d][1], 4, types[t]);
      fill_random(&img, seed++);
      if (types[t] == IMGSTAT_F32) /* offset so the f32 merge rounds */
        for (uint64_t i = 0; i < npix(&img); i++)
          ((float *)img.planes[1])[i] += 12345.0f;
      imgstat_partial ref[IMGSTAT_MAX_CHANNELS];
      for (int c = 0; c < 4; c++) {
        imgstat_partial_init(&ref[c]);
        imgstat_partial_scan(&ref[c], img.planes[c], img.sample, 0, npix(&img));
      }
      for (size_t j = 0; j < 6; j++) {
        imgstat_partial out[IMGSTAT_MAX_CHANNELS];
        imgstat_error err;
        CU_ASSERT_EQUAL(imgstat_cpu_stats(&img, threads[j], out, &err),
                        IMGSTAT_OK);
        CU_ASSERT(memcmp(out, ref, 4 * sizeof ref[0]) == 0);
      }
      test_image_free(&img);
    }
}

static void test_partial_same(void) {
  /* The backends' agreement rule: every field, f32 mean and m2 to the bit. */
  imgstat_image img = make_image(64, 32, 1, IMGSTAT_F32);
  fill_random(&img, 9);
  imgstat_partial a, b;
  imgstat_partial_init(&a);
  imgstat_partial_scan(&a, img.planes[0], img.sample, 0, npix(&img));
  b = a;
  CU_ASSERT_TRUE(imgstat_partial_same(&a, &b, IMGSTAT_F32));
  b.mean = nextafter(a.mean, INFINITY); /* one ulp: not the same */
  CU_ASSERT_FALSE(imgstat_partial_same(&a, &b, IMGSTAT_F32));
  b = a;
  b.m2 = nextafter(a.m2, 0.0);
  CU_ASSERT_FALSE(imgstat_partial_same(&a, &b, IMGSTAT_F32));
  b = a;
  b.min_index++;
  CU_ASSERT_FALSE(imgstat_partial_same(&a, &b, IMGSTAT_F32));
  test_image_free(&img);
  imgstat_partial u = {0}, v;
  u.count = v.count = 3;
  u.sum = 6;
  u.sumsq = 14;
  v = u;
  CU_ASSERT_TRUE(imgstat_partial_same(&u, &v, IMGSTAT_U8));
  v.sumsq++;
  CU_ASSERT_FALSE(imgstat_partial_same(&u, &v, IMGSTAT_U16));
}

static void test_arguments(void) {
  imgstat_partial out[IMGSTAT_MAX_CHANNELS];
  imgstat_error err;
  memset(&err, 0, sizeof err);
  CU_ASSERT_EQUAL(imgstat_cpu_stats(NULL, 1, out, &err), IMGSTAT_ERR_ARG);
  CU_ASSERT(err.message[0] != '\0');
  imgstat_image img = make_image(4, 4, 1, IMGSTAT_U8);
  img.channels = 0;
  CU_ASSERT_EQUAL(imgstat_cpu_stats(&img, 1, out, &err), IMGSTAT_ERR_ARG);
  img.channels = IMGSTAT_MAX_CHANNELS + 1;
  CU_ASSERT_EQUAL(imgstat_cpu_stats(&img, 1, out, &err), IMGSTAT_ERR_ARG);
  img.channels = 2;
  img.planes[1] = NULL;
  CU_ASSERT_EQUAL(imgstat_cpu_stats(&img, 1, out, &err), IMGSTAT_ERR_ARG);
  test_image_free(&img);

  /* An empty image is not an error: no values. */
  imgstat_image empty;
  memset(&empty, 0, sizeof empty);
  empty.channels = 3;
  empty.sample = IMGSTAT_U8;
  CU_ASSERT_EQUAL(imgstat_cpu_stats(&empty, 2, out, &err), IMGSTAT_OK);
  imgstat_figures f;
  imgstat_figures_compute(&out[2], IMGSTAT_U8, 0, 0, &f);
  CU_ASSERT(f.count == 0 && !f.has_values && !f.has_std);
}

static const test_case tests[] = {
    {"stats", NULL},
    {"constant image: std exactly 0", test_constant},
    {"ramp: closed-form sums", test_ramp},
    {"checkerboard", test_checkerboard},
    {"1x1", test_one_pixel},
    {"1xN, Nx1, 4097x3, chunk edges", test_lines_and_odd_sizes},
    {"extremes 0/255/65535", test_extremes},
    {"2^32 samples from closed forms", test_huge_counts},
    {"u16 random large plane", test_u16_random_large},
    {"float NaN and Inf", test_float_nan_inf},
    {"float all NaN / non-finite", test_float_all_nan},
    {"float accuracy vs long double", test_float_accuracy},
    {"ddof 0 and 1", test_ddof},
    {"first position ties", test_first_position},
    {"float signed zeros", test_signed_zero},
    {"integer merge associativity", test_merge_associative},
    {"same bits for -j 1, 2, 3, 7", test_threads_identical},
    {"partials the same by the backends' rule", test_partial_same},
    {"argument errors, empty image", test_arguments},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
