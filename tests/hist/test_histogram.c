/*
 * Histograms and percentiles on the CPU, checked against independent
 * computations: counts by a plain loop, percentiles by sorting the samples
 * and taking the nearest rank computed with integer arithmetic, moments
 * directly from the samples.
 */
#include "imgstat/norm.h"
#include "test_util.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t seed = 12345;

/* A one-channel image of the library's own layout; returns its plane. */
static void *gray_image(imgstat_image *img, uint32_t w, uint32_t h,
                        imgstat_sample s) {
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_image_alloc(img, w, h, 1, s, 0, &err) == IMGSTAT_OK);
  return img->planes[0];
}

/* The histogram of channel 0, which must be computed. */
static imgstat_histogram histogram_of(const imgstat_image *img,
                                      const imgstat_hist_options *o) {
  imgstat_histogram h;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_histogram_compute(img, 0, o, &h, &err) == IMGSTAT_OK);
  return h;
}

static void fill_random(imgstat_image *img, int c, uint32_t modulo) {
  uint64_t n = (uint64_t)img->width * img->height;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = test_rand(&seed);
    if (img->sample == IMGSTAT_U8)
      ((uint8_t *)img->planes[c])[i] = (uint8_t)(r % modulo);
    else if (img->sample == IMGSTAT_U16)
      ((uint16_t *)img->planes[c])[i] = (uint16_t)(r % modulo);
    else
      ((float *)img->planes[c])[i] =
          (float)((double)(r >> 11) / 9007199254740992.0 * 200.0 - 50.0);
  }
}

/* The nearest rank for an integer percentile pi over n samples, by integer
 * arithmetic only: the smallest k >= 1 with 100 * k >= pi * n. */
static uint64_t ref_rank(uint64_t n, uint64_t pi) {
  uint64_t k = (pi * n + 99) / 100;
  return k < 1 ? 1 : k;
}

static double *sorted_samples(const imgstat_image *img, int c, uint64_t *n) {
  uint64_t total = (uint64_t)img->width * img->height, m = 0;
  double *v = malloc(total * sizeof *v + 1);
  for (uint64_t i = 0; i < total; i++) {
    double x = img->sample == IMGSTAT_U8 ? ((const uint8_t *)img->planes[c])[i]
               : img->sample == IMGSTAT_U16
                   ? ((const uint16_t *)img->planes[c])[i]
                   : ((const float *)img->planes[c])[i];
    if (isfinite(x))
      v[m++] = x;
  }
  qsort(v, m, sizeof *v, test_cmp_double);
  *n = m;
  return v;
}

static void check_int_image(uint32_t w, uint32_t h, imgstat_sample s,
                            uint32_t modulo) {
  imgstat_image img;
  gray_image(&img, w, h, s);
  fill_random(&img, 0, modulo);
  imgstat_histogram hist = histogram_of(&img, NULL);
  uint64_t n = (uint64_t)w * h;
  CU_ASSERT_EQUAL(hist.total, n);
  CU_ASSERT_EQUAL(hist.bins, s == IMGSTAT_U8 ? 256u : 65536u);
  /* counts by a plain loop */
  uint64_t *ref = calloc(65536, sizeof *ref);
  for (uint64_t i = 0; i < n; i++)
    ref[s == IMGSTAT_U8 ? ((uint8_t *)img.planes[0])[i]
                        : ((uint16_t *)img.planes[0])[i]]++;
  CU_ASSERT(memcmp(ref, hist.counts, hist.bins * sizeof *ref) == 0);
  /* percentiles: integer p by sorting */
  uint64_t m;
  double *v = sorted_samples(&img, 0, &m);
  for (uint64_t pi = 0; pi <= 100; pi++) {
    double got = -1;
    CU_ASSERT(imgstat_histogram_percentile(&hist, (double)pi, &got));
    CU_ASSERT_EQUAL(got, v[ref_rank(m, pi) - 1]);
  }
  /* fractional p: 99.9 -> the smallest k with 1000 k >= 999 n */
  uint64_t k = (999 * m + 999) / 1000;
  double got = -1;
  imgstat_histogram_percentile(&hist, 99.9, &got);
  CU_ASSERT_EQUAL(got, v[(k ? k : 1) - 1]);
  /* moments straight from the samples */
  double mean = 0;
  for (uint64_t i = 0; i < m; i++)
    mean += v[i];
  mean /= (double)m;
  double s2 = 0, s3 = 0, s4 = 0;
  for (uint64_t i = 0; i < m; i++) {
    double d = v[i] - mean;
    s2 += d * d;
    s3 += d * d * d;
    s4 += d * d * d * d;
  }
  imgstat_moments mo;
  imgstat_moments_from_histogram(&hist, &mo);
  imgstat_hist_figures f;
  double ps[2] = {5, 95};
  imgstat_hist_figures_compute(&hist, &mo, ps, 2, &f);
  CU_ASSERT(f.has_values);
  CU_ASSERT_EQUAL(f.median, v[ref_rank(m, 50) - 1]);
  CU_ASSERT_EQUAL(f.percentile[0], v[ref_rank(m, 5) - 1]);
  CU_ASSERT_EQUAL(f.percentile[1], v[ref_rank(m, 95) - 1]);
  if (s2 > 0) {
    double m2 = s2 / m, skew = s3 / m / pow(m2, 1.5),
           kurt = s4 / m / (m2 * m2) - 3;
    CU_ASSERT(f.has_shape);
    CU_ASSERT_DOUBLE_EQUAL(f.skewness, skew, 1e-9 * (1 + fabs(skew)));
    CU_ASSERT_DOUBLE_EQUAL(f.kurtosis, kurt, 1e-9 * (1 + fabs(kurt)));
  } else {
    CU_ASSERT(!f.has_shape);
  }
  free(v);
  free(ref);
  imgstat_histogram_free(&hist);
  imgstat_image_free(&img);
}

static void test_u8_odd_sizes(void) {
  check_int_image(37, 23, IMGSTAT_U8, 256);
  check_int_image(1, 1, IMGSTAT_U8, 256);
  check_int_image(1, 1000, IMGSTAT_U8, 7);
  check_int_image(4097, 3, IMGSTAT_U8, 256);
  check_int_image(2, 2, IMGSTAT_U8, 1); /* constant 0 */
}

static void test_u16(void) {
  check_int_image(129, 65, IMGSTAT_U16, 65536);
  check_int_image(3, 5, IMGSTAT_U16, 65536);
  check_int_image(1, 1, IMGSTAT_U16, 65536);
}

static void test_u16_extremes(void) {
  imgstat_image img;
  uint16_t *p = gray_image(&img, 3, 1, IMGSTAT_U16);
  p[0] = 65535;
  p[1] = 0;
  p[2] = 65535;
  imgstat_histogram h = histogram_of(&img, NULL);
  CU_ASSERT_EQUAL(h.counts[0], 1);
  CU_ASSERT_EQUAL(h.counts[65535], 2);
  double v;
  imgstat_histogram_percentile(&h, 0, &v);
  CU_ASSERT_EQUAL(v, 0);
  imgstat_histogram_percentile(&h, 33.3, &v); /* k = ceil(0.999) = 1 */
  CU_ASSERT_EQUAL(v, 0);
  imgstat_histogram_percentile(&h, 33.34, &v); /* k = 2 */
  CU_ASSERT_EQUAL(v, 65535);
  imgstat_histogram_percentile(&h, 100, &v);
  CU_ASSERT_EQUAL(v, 65535);
  imgstat_hist_figures f;
  imgstat_moments mo;
  imgstat_moments_from_histogram(&h, &mo);
  imgstat_hist_figures_compute(&h, &mo, NULL, 0, &f);
  /* p = 1/3, 2/3: entropy by hand */
  double e = -(1.0 / 3) * log2(1.0 / 3) - (2.0 / 3) * log2(2.0 / 3);
  CU_ASSERT_DOUBLE_EQUAL(f.entropy, e, 1e-12);
  imgstat_histogram_free(&h);
  imgstat_image_free(&img);
}

static void test_rank_rule(void) {
  CU_ASSERT_EQUAL(imgstat_percentile_rank(0, 50), 0);
  CU_ASSERT_EQUAL(imgstat_percentile_rank(1, 0), 1);
  CU_ASSERT_EQUAL(imgstat_percentile_rank(1, 100), 1);
  CU_ASSERT_EQUAL(imgstat_percentile_rank(4, 50), 2); /* lower median */
  CU_ASSERT_EQUAL(imgstat_percentile_rank(5, 50), 3);
  CU_ASSERT_EQUAL(imgstat_percentile_rank(10, 10), 1); /* exact: no + 1 */
  CU_ASSERT_EQUAL(imgstat_percentile_rank(10, 10.000001), 2);
  CU_ASSERT_EQUAL(imgstat_percentile_rank(3, 100.0 / 3), 1); /* exactly 1 */
  CU_ASSERT_EQUAL(imgstat_percentile_rank(3, 33.34), 2);
  CU_ASSERT_EQUAL(imgstat_percentile_rank(UINT64_C(1) << 40, 50), UINT64_C(1)
                                                                      << 39);
  for (uint64_t n = 1; n < 300; n += 7)
    for (uint64_t p = 0; p <= 100; p++)
      CU_ASSERT_EQUAL(imgstat_percentile_rank(n, (double)p), ref_rank(n, p));
}

static void test_float(void) {
  imgstat_image img;
  uint32_t w = 101, h = 31;
  gray_image(&img, w, h, IMGSTAT_F32);
  fill_random(&img, 0, 0);
  float *p = img.planes[0];
  p[5] = NAN;
  p[17] = INFINITY;
  p[18] = -INFINITY;
  p[40] = NAN;
  uint32_t bins = 1000;
  imgstat_hist_options o = {bins, 0, 0, 0};
  imgstat_histogram hist = histogram_of(&img, &o);
  uint64_t m;
  double *v = sorted_samples(&img, 0, &m);
  CU_ASSERT_EQUAL(hist.total, m);
  CU_ASSERT_EQUAL(hist.nan_count, 2);
  CU_ASSERT_EQUAL(hist.inf_count, 2);
  CU_ASSERT_EQUAL(hist.lo, v[0]);
  CU_ASSERT_EQUAL(hist.hi, v[m - 1]);
  /* counts below each bin edge, up to samples within rounding of it */
  double width = (hist.hi - hist.lo) / bins;
  uint64_t cum = 0, i = 0;
  for (uint32_t b = 0; b < bins; b++) {
    double edge = hist.lo + (b + 1) * width;
    cum += hist.counts[b];
    while (i < m && v[i] < edge - 1e-9 * width)
      i++;
    uint64_t j = i;
    while (j < m && v[j] <= edge + 1e-9 * width)
      j++;
    if (b + 1 < bins)
      CU_ASSERT(cum >= i && cum <= j);
  }
  CU_ASSERT_EQUAL(cum, m);
  /* interpolated percentiles within one bin width of the nearest rank */
  for (int pi = 0; pi <= 100; pi += 3) {
    double got;
    CU_ASSERT(imgstat_histogram_percentile(&hist, pi, &got));
    double want = v[ref_rank(m, (uint64_t)pi) - 1];
    CU_ASSERT(fabs(got - want) <= width * (1 + 1e-9));
  }
  double got;
  imgstat_histogram_percentile(&hist, 0, &got);
  CU_ASSERT_EQUAL(got, v[0]);
  imgstat_histogram_percentile(&hist, 100, &got);
  CU_ASSERT_EQUAL(got, v[m - 1]);
  /* moments of the finite samples */
  imgstat_moments mo;
  imgstat_moments_f32(p, (uint64_t)w * h, &mo);
  double mean = 0;
  for (uint64_t k = 0; k < m; k++)
    mean += v[k];
  mean /= m;
  CU_ASSERT_EQUAL(mo.count, m);
  CU_ASSERT_DOUBLE_EQUAL(mo.mean, mean, 1e-9);
  free(v);
  imgstat_histogram_free(&hist);
  imgstat_image_free(&img);
}

static void test_float_constant_and_empty(void) {
  imgstat_image img;
  float *p = gray_image(&img, 5, 3, IMGSTAT_F32);
  for (int i = 0; i < 15; i++)
    p[i] = 2.5f;
  imgstat_histogram h = histogram_of(&img, NULL);
  CU_ASSERT_EQUAL(h.counts[0], 15);
  double v;
  CU_ASSERT(imgstat_histogram_percentile(&h, 37, &v));
  CU_ASSERT_EQUAL(v, 2.5);
  imgstat_moments mo;
  imgstat_moments_f32(p, 15, &mo);
  imgstat_hist_figures f;
  imgstat_hist_figures_compute(&h, &mo, NULL, 0, &f);
  CU_ASSERT(!f.has_shape);
  CU_ASSERT_EQUAL(f.entropy, 0);
  imgstat_histogram_free(&h);
  for (int i = 0; i < 15; i++)
    p[i] = NAN;
  h = histogram_of(&img, NULL);
  CU_ASSERT_EQUAL(h.total, 0);
  CU_ASSERT_EQUAL(h.nan_count, 15);
  CU_ASSERT(!imgstat_histogram_percentile(&h, 50, &v));
  imgstat_histogram_free(&h);
  imgstat_image_free(&img);
}

static void test_entropy_uniform_and_rebin(void) {
  imgstat_image img;
  uint16_t *p = gray_image(&img, 256, 256, IMGSTAT_U16);
  for (uint32_t i = 0; i < 65536; i++)
    p[i] = (uint16_t)(65535 - i);
  imgstat_histogram h = histogram_of(&img, NULL);
  imgstat_hist_figures f;
  imgstat_hist_figures_compute(&h, NULL, NULL, 0, &f);
  CU_ASSERT_DOUBLE_EQUAL(f.entropy, 16.0, 1e-9);
  uint64_t out[256];
  imgstat_histogram_rebin(&h, 256, out);
  for (int j = 0; j < 256; j++)
    CU_ASSERT_EQUAL(out[j], 256);
  uint64_t odd[7], sum = 0;
  imgstat_histogram_rebin(&h, 7, odd);
  for (int j = 0; j < 7; j++)
    sum += odd[j];
  CU_ASSERT_EQUAL(sum, 65536);
  imgstat_histogram_free(&h);
  imgstat_image_free(&img);
}

/* Rebinning puts input bin b in output bin floor(b * bins / input bins),
 * for any pair of sizes (more output bins than input ones too), each
 * input bin's count told apart by a weight of its own. */
static void test_rebin_mapping(void) {
  static const uint32_t ins[] = {1, 2, 3, 7, 100, 256, 1000, 65536};
  static const uint32_t outs[] = {1, 2, 3, 5, 7, 64, 255, 256, 300, 1024};
  for (size_t a = 0; a < sizeof ins / sizeof *ins; a++) {
    uint32_t nb = ins[a];
    uint64_t *counts = calloc(nb, sizeof *counts);
    CU_ASSERT_FATAL(counts != NULL);
    for (uint32_t b = 0; b < nb; b++)
      counts[b] = (uint64_t)b * b + 3 * b + 1;
    imgstat_histogram h = {0};
    h.bins = nb;
    h.counts = counts;
    for (size_t o = 0; o < sizeof outs / sizeof *outs; o++) {
      uint32_t bins = outs[o];
      uint64_t got[1024], want[1024] = {0};
      for (uint32_t b = 0; b < nb; b++)
        want[(uint64_t)b * bins / nb] += counts[b];
      imgstat_histogram_rebin(&h, bins, got);
      int same = 1;
      for (uint32_t j = 0; j < bins; j++)
        same &= got[j] == want[j];
      CU_ASSERT(same);
    }
    free(counts);
  }
}

/* A copy of h whose bins outside its hint hold a poison count: a walk that
 * read them would show it. */
static imgstat_histogram poisoned(const imgstat_histogram *h) {
  imgstat_histogram p = *h;
  p.counts = malloc(h->bins * sizeof *p.counts);
  CU_ASSERT_FATAL(p.counts != NULL);
  for (uint32_t b = 0; b < h->bins; b++)
    p.counts[b] =
        b >= h->used_lo && b < h->used_end ? h->counts[b] : 1000000007ull;
  return p;
}

/* The hint on the occupied bins: set by the CPU's histograms to the
 * samples' [min, max + 1) (a plain loop's), and the walks that take it
 * (percentiles, moments, figures, rebinning, adding) read no bin outside
 * it: their results on a copy poisoned there equal the full walk's of the
 * clean histogram (no hint), and the rebinned counts a plain loop's over
 * the samples. */
static void test_used_bins(void) {
  static const uint32_t sizes[][2] = {{3000, 2600}, {0, 1},   {65535, 1},
                                      {0, 65536},   {255, 2}, {40000, 257}};
  imgstat_error err;
  for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
    imgstat_image img;
    uint16_t *px = gray_image(&img, 61, 37, IMGSTAT_U16);
    uint32_t n = 61 * 37, mn = 65535, mx = 0;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t v = sizes[t][0] + (uint32_t)(test_rand(&seed) % sizes[t][1]);
      px[i] = (uint16_t)v;
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
    }
    imgstat_histogram h = histogram_of(&img, NULL);
    CU_ASSERT_EQUAL(h.used_lo, mn);
    CU_ASSERT_EQUAL(h.used_end, mx + 1);
    imgstat_histogram full = h, p = poisoned(&h);
    full.used_lo = full.used_end = 0; /* no hint: every bin walked */
    static const double ps[] = {0, 0.5, 1, 25, 50, 99.5, 100};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
      double a = -1, b = -2;
      CU_ASSERT(imgstat_histogram_percentile(&full, ps[i], &a));
      CU_ASSERT(imgstat_histogram_percentile(&p, ps[i], &b));
      CU_ASSERT_EQUAL(a, b);
    }
    imgstat_moments ma, mb;
    imgstat_moments_from_histogram(&full, &ma);
    imgstat_moments_from_histogram(&p, &mb);
    CU_ASSERT(memcmp(&ma, &mb, sizeof ma) == 0);
    imgstat_hist_figures fa, fb;
    imgstat_hist_figures_compute(&full, &ma, ps, 7, &fa);
    imgstat_hist_figures_compute(&p, &mb, ps, 7, &fb);
    CU_ASSERT(memcmp(&fa, &fb, sizeof fa) == 0);
    static const uint32_t outs[] = {1, 3, 7, 255, 256, 1000, 65536, 70000};
    uint64_t *got = malloc(70000 * sizeof *got);
    uint64_t *want = malloc(70000 * sizeof *want);
    CU_ASSERT_FATAL(got && want);
    for (size_t o = 0; o < sizeof outs / sizeof *outs; o++) {
      uint32_t bins = outs[o];
      memset(want, 0, bins * sizeof *want);
      for (uint32_t i = 0; i < n; i++)
        want[(uint64_t)px[i] * bins / 65536]++;
      imgstat_histogram_rebin(&p, bins, got);
      CU_ASSERT(memcmp(got, want, bins * sizeof *got) == 0);
    }
    /* added into an empty histogram: the same counts, outside it none; the
     * sum's hint covers both, or is none when one has none */
    imgstat_histogram sum;
    CU_ASSERT_FATAL(imgstat_histogram_alloc(&sum, IMGSTAT_U16, 0, 0, 0, &err) ==
                    IMGSTAT_OK);
    CU_ASSERT_EQUAL(imgstat_histogram_add(&sum, &p, &err), IMGSTAT_OK);
    CU_ASSERT(memcmp(sum.counts, h.counts, 65536 * sizeof *h.counts) == 0);
    CU_ASSERT_EQUAL(sum.total, n);
    CU_ASSERT_EQUAL(sum.used_end, 0);
    sum.used_lo = 100;
    sum.used_end = 101;
    sum.counts[100] = 1;
    CU_ASSERT_EQUAL(imgstat_histogram_add(&sum, &h, &err), IMGSTAT_OK);
    CU_ASSERT_EQUAL(sum.used_lo, mn < 100 ? mn : 100);
    CU_ASSERT_EQUAL(sum.used_end, mx + 1 > 101 ? mx + 1 : 101);
    CU_ASSERT_EQUAL(imgstat_histogram_add(&sum, &full, &err), IMGSTAT_OK);
    CU_ASSERT_EQUAL(sum.used_end, 0);
    imgstat_histogram_free(&sum);
    free(got);
    free(want);
    free(p.counts);
    imgstat_histogram_free(&h);
    imgstat_image_free(&img);
  }
  /* none when every bin is zero; a hint past the bins is not taken */
  imgstat_histogram z;
  CU_ASSERT_FATAL(imgstat_histogram_alloc(&z, IMGSTAT_U8, 0, 0, 0, &err) ==
                  IMGSTAT_OK);
  z.used_end = 7;
  imgstat_histogram_find_used(&z);
  CU_ASSERT_EQUAL(z.used_end, 0);
  z.counts[255] = 4;
  z.total = 4;
  z.used_lo = 0;
  z.used_end = 300;
  double v = 0;
  CU_ASSERT(imgstat_histogram_percentile(&z, 50, &v));
  CU_ASSERT_EQUAL(v, 255);
  imgstat_histogram_free(&z);
}

static void test_add_mismatch(void) {
  imgstat_histogram a, b;
  imgstat_error err;
  CU_ASSERT_FATAL(imgstat_histogram_alloc(&a, IMGSTAT_F32, 10, 0, 1, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT_FATAL(imgstat_histogram_alloc(&b, IMGSTAT_F32, 10, 0, 2, &err) ==
                  IMGSTAT_OK);
  CU_ASSERT_EQUAL(imgstat_histogram_add(&a, &b, &err), IMGSTAT_ERR_ARG);
  CU_ASSERT(err.message[0] != 0);
  imgstat_histogram_free(&a);
  imgstat_histogram_free(&b);
  CU_ASSERT_EQUAL(imgstat_histogram_alloc(&a, IMGSTAT_F32, 10, 1, 0, &err),
                  IMGSTAT_ERR_ARG);
}

static const test_case tests[] = {
    {"histogram", NULL},
    {"rank rule", test_rank_rule},
    {"u8 odd sizes, 1x1, constant", test_u8_odd_sizes},
    {"u16 random", test_u16},
    {"u16 extremes", test_u16_extremes},
    {"f32 with NaN and Inf", test_float},
    {"f32 constant and all-NaN", test_float_constant_and_empty},
    {"entropy and rebinning", test_entropy_uniform_and_rebin},
    {"rebinning maps bin b to floor(b * bins / input bins)",
     test_rebin_mapping},
    {"the occupied bins: set, and no bin outside them read", test_used_bins},
    {"mismatched histograms", test_add_mismatch},
    {NULL, NULL}};

int main(void) { return test_main(tests); }
